"""``polygamma(n, x)`` with the order n a run-time tensor (the IR op
``polygamma_order``, inputs n and x of one float dtype, broadcasting), one
model-local function ``PolygammaOrder`` per dtype. A constant order keeps
its own function (``polygamma_f64.py``); this one builds nothing per order.

SciPy's definition (``scipy.special.polygamma``, which PyTensor's
``PolyGamma.impl`` calls): ``psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x)`` for
n >= 1 (Cephes ``zeta``), ``psi`` at n = 0, NaN for a negative, NaN or
non-integer n. With s = n + 1 and F = n! (a float64 table for n <= 170,
gathered per element and applied as two halves ``F_hi F_lo``, each next to
half of the power, so no intermediate overflows or underflows unless the
result does):

* ``F zeta(s, y)``, y > 0: the terms ``F (y+j)^-s`` for the j < 64 with
  ``y + j < B(s)`` (one last axis of 64 steps, masked per element), then at
  ``a = y + m`` (m the terms taken) the Euler-Maclaurin tail (DLMF 25.11.43;
  Cephes ``zeta`` and ``polygamma_f64.scaled_zeta`` use it the same way)::

      F a^(1-s)/(s-1) + F a^-s/2 + sum_{j=1..10} B_2j/(2j)! (s)_(2j-1) F a^(-s-2j+1)

  whose rising factorials ``(s)_(2j-1)`` are formed at run time. ``B(s)`` is
  ``polygamma_f64.shift_bound`` as a formula of s: the smallest a >= 10 with
  the first omitted term, ``|B_22|/22! (s)_21 (s-1) a^-22``, below 2^-56 of
  the leading one (equal to ``shift_bound(n)`` for n = 1..170: 11 at n = 2,
  58 at n = 50, 173 at n = 170). From n = 57, B(s) > 64 and a small y stops
  at a = y + 64 < B(s); the tail, about ``a^(1-s)/(s-1)``, is then below
  ``a (y/a)^s/(s-1)`` of the first term y^-s, under e^-79 for those s.
* x < 0, not an integer: the reflection formula (DLMF 5.15.6) written with
  the two-sided sum ``pi^(n+1) Q_n(cot(pi x)) = (-1)^n n! W(x)``,
  ``W(x) = sum_{k in Z} (x+k)^-s`` (the n-th derivative of
  ``pi cot(pi x) = sum_k 1/(x+k)``, DLMF 4.22.3), which is periodic:
  ``psi^(n)(x) = (-1)^(n+1) F W(r) - F zeta(s, 1-x)`` with
  ``r = x - round(x)`` (exact), ``u = |r|`` in (0, 1/2]:

  - s even: ``W = zeta(s, u) + zeta(s, 1-u)``, positive terms;
  - s odd: ``W = sign(r) sum_{k>=0} [(k+u)^-s - (k+1-u)^-s]``, each pair
    formed as ``(k+1-u)^-s expm1(s log1p(h/(k+u)))`` with ``h = 1 - 2u``
    (exact for u >= 1/4) where that exponent z is <= 1 (exp(z) carries z
    ulp), as ``(k+u)^-s (1 - e^-z)`` above (e^-z < 1/e: its error is below
    an ulp of 1/e), and the tail's Euler-Maclaurin terms as the same
    differences ``(a)^-p - (a+h)^-p``: every term has one sign and W is 0
    exactly at the half-integers (Q_n(0) = 0 for even n). This replaces the
    constant order's polynomial Q_n, whose coefficients depend on n.

  The two terms cancel near the zeros of psi^(n) (even n), where the error is
  relative to the larger term, as for the constant order.
* Poles and limits as SciPy: ``(-1)^(n+1) inf`` at +-0, the negative
  integers and -inf (n >= 1); ``(-1)^(n+1) 0`` at +inf; NaN for NaN x.
  For n > 170, n! overflows float64: SciPy's ``gamma(n+1) * zeta(n+1, x)``,
  ``(-1)^(n+1) inf`` times the sign of zeta (at a negative non-integer that
  of its largest term), NaN where zeta underflows to 0 (x^-(n+1) below
  e^-744.44, and x = +inf); not mpmath's finite value at x >~ n/e.

Measured against mpmath: ``tests/numerics/test_polygamma_order.py``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from backends.onnx.registry import emits
from backends.onnx.rules.common import F64, I64
from backends.onnx.rules.mathfn import expm1, log1p
from backends.onnx.rules.polygamma_f64 import TERMS, _bernoulli
from backends.onnx.rules.special import float64_body
from backends.onnx.rules.special_f64 import (add, div, if_all_positive, is_integer, k, last_axis, mul, psi, steps,
                                             sub, where)

STEPS = 64  # direct terms at most (the last axis)
LARGEST = 170  # the largest n with a finite n! in float64


def factorial_halves() -> tuple[np.ndarray, np.ndarray]:
    """``(hi, lo)``, float64 arrays of length 172: ``hi[n] lo[n] = n!`` to
    about 1 ulp with ``hi ~ lo ~ sqrt(n!)`` (hi the rounded integer square
    root, lo the rounded exact quotient) for n <= 170; inf at 171."""
    hi, lo = [], []
    for n in range(LARGEST + 1):
        f = math.factorial(n)
        h = float(math.isqrt(f))
        hi.append(h)
        lo.append(float(Fraction(f) / Fraction(h)))
    return np.array(hi + [np.inf]), np.array(lo + [np.inf])


def _unsq(c, x):
    return c.op("Unsqueeze", x, c.const([-1], I64))


class _Order:
    """The per-element quantities of the order: s = n + 1, the factorial
    halves, the shift bound B(s) and the tail coefficients c_j (float64
    tensors shaped like the broadcast n)."""

    def __init__(self, c, n):
        self.s = add(c, n, k(c, 1.0))
        index = c.cast(n, I64)
        hi, lo = factorial_halves()
        self.hi = c.op("Gather", c.const(hi, F64), index)
        self.lo = c.op("Gather", c.const(lo, F64), index)
        b = _bernoulli(TERMS + 1)
        log_k = math.log(abs(b[-1]) / math.factorial(2 * TERMS + 2)) + 56 * math.log(2.0)
        logs = last_axis(c, "ReduceSum", c.op("Log", steps(c, self.s, 2 * TERMS + 1)))
        log_bound = div(c, add(c, k(c, log_k), logs, c.op("Log", n)), k(c, 2.0 * TERMS + 2))
        self.bound = c.op("Max", c.op("Ceil", c.op("Exp", log_bound)), k(c, 10.0))
        self.coeffs, rising = [], self.s
        for j in range(1, TERMS + 1):
            self.coeffs.append(mul(c, k(c, b[j - 1] / math.factorial(2 * j)), rising))
            rising = mul(c, rising, add(c, self.s, k(c, 2.0 * j - 1)), add(c, self.s, k(c, 2.0 * j)))


def _scaled_power(c, hi, lo, t, p):
    """``n! t^-p`` as ``(hi t^-h1)(lo t^-h2)``, h1 = floor(p/2), h2 = p - h1."""
    h1 = c.op("Floor", mul(c, p, k(c, 0.5)))
    h2 = sub(c, p, h1)
    neg = lambda e: c.op("Neg", e)  # noqa: E731
    return mul(c, mul(c, hi, c.op("Pow", t, neg(h1))), mul(c, lo, c.op("Pow", t, neg(h2))))


def _power(c, t, p, hi, lo, h):
    """``n! t^-p`` (h None) or ``n! (t^-p - (t+h)^-p)`` (h >= 0, one sign): as
    ``n! (t+h)^-p expm1(z)``, ``z = p log1p(h/t)``, for z <= 1, else
    ``-n! t^-p expm1(-z)`` (the module doc)."""
    if h is None:
        return _scaled_power(c, hi, lo, t, p)
    far = _scaled_power(c, hi, lo, add(c, t, h), p)
    z = mul(c, p, log1p(c, div(c, h, t), F64))
    # exp(z) carries z ulp: above z = 1, n! t^-p (1 - e^-z), where e^-z < 1/e has an absolute error below ulp/e
    near = mul(c, _scaled_power(c, hi, lo, t, p), c.op("Neg", expm1(c, c.op("Neg", c.op("Max", z, k(c, 1.0))), F64)))
    value = where(c, c.op("Greater", z, k(c, 1.0)), near, mul(c, far, expm1(c, c.op("Min", z, k(c, 1.0)), F64)))
    return where(c, c.op("Equal", h, k(c, 0.0)), k(c, 0.0), value)  # exactly 0 at the half-integers


def _euler_maclaurin(c, order: _Order, base, h=None):
    """``sum_{j>=0} g(base + j)`` for ``g(t) = _power(t, s)`` (n! t^-s, or the
    difference ``n! (t^-s - (t+h)^-s)``): the direct terms below B(s) (at
    most STEPS) and the Euler-Maclaurin tail at a = base + m, whose integral
    and derivative terms are ``_power`` at the exponents s - 1 and
    s + 2j - 1 (a difference of powers stays a difference)."""
    t = steps(c, base, STEPS)
    low = c.op("Less", t, _unsq(c, order.bound))
    terms = _power(c, t, _unsq(c, order.s), _unsq(c, order.hi), _unsq(c, order.lo), None if h is None else _unsq(c, h))
    total = last_axis(c, "ReduceSum", where(c, low, terms, k(c, 0.0)))
    a = add(c, base, last_axis(c, "ReduceSum", c.cast(low, F64)))
    s, hi, lo = order.s, order.hi, order.lo
    sm1 = sub(c, s, k(c, 1.0))
    tail = [div(c, _power(c, a, sm1, hi, lo, h), sm1), mul(c, k(c, 0.5), _power(c, a, s, hi, lo, h))]
    for j, cj in enumerate(order.coeffs, start=1):
        tail.append(mul(c, cj, _power(c, a, add(c, s, k(c, 2.0 * j - 1)), hi, lo, h)))
    return add(c, total, add(c, *reversed(tail)))  # smallest first


def _sign_of_order(c, n):
    """(-1)^(n+1) for an integer-valued n."""
    odd = sub(c, n, mul(c, k(c, 2.0), c.op("Floor", mul(c, n, k(c, 0.5)))))
    return sub(c, mul(c, k(c, 2.0), odd), k(c, 1.0))


def _positive(c, order: _Order, sign, x):
    """``(-1)^(n+1) n! zeta(n+1, x)`` for x > 0."""
    return mul(c, sign, _euler_maclaurin(c, order, x))


def _any(c, order: _Order, sign, x):
    """Every x: the reflection through the periodic W for x < 0 (module doc), poles, NaN."""
    pos = _euler_maclaurin(c, order, c.op("Max", x, k(c, 5e-324)))  # +-0 at +inf
    upper = _euler_maclaurin(c, order, c.op("Max", sub(c, k(c, 1.0), x), k(c, 1.0)))  # zeta(s, 1-x)
    r = sub(c, x, c.op("Round", x))
    u = c.op("Max", c.op("Abs", r), k(c, 5e-324))  # r = 0: a pole, replaced below
    even = _euler_maclaurin(c, order, u)
    even = add(c, even, _euler_maclaurin(c, order, sub(c, k(c, 1.0), u)))
    h = sub(c, k(c, 1.0), mul(c, k(c, 2.0), u))
    odd = mul(c, c.op("Sign", r), _euler_maclaurin(c, order, u, h))
    w = where(c, c.op("Greater", sign, k(c, 0.0)), even, odd)  # n odd: s even
    neg = sub(c, mul(c, sign, w), upper)
    y = where(c, c.op("Greater", x, k(c, 0.0)), mul(c, sign, pos), neg)
    pole = c.op("And", c.op("LessOrEqual", x, k(c, 0.0)), is_integer(c, x))  # +-0, negative integers, -inf
    y = where(c, pole, mul(c, sign, k(c, np.inf)), y)
    return where(c, c.op("IsNaN", x), x, y)


def _beyond_largest(c, sign, s, x):
    """n > 170, where n! is inf in float64: SciPy's ``(-1)^(n+1) inf`` times the
    sign of zeta(n+1, x), NaN where zeta underflows to 0 (x > 0 with
    ``x^-s`` below the least subnormal, e^-744.44, and x = +inf). At a negative
    non-integer the sign is that of zeta's largest term, ``(x - round(x))^-s``."""
    r = sub(c, x, c.op("Round", x))
    odd_s = c.op("Less", sign, k(c, 0.0))
    term_sign = where(c, c.op("And", odd_s, c.op("Less", x, k(c, 0.0))), c.op("Sign", r), k(c, 1.0))
    underflow = c.op("Not", c.op("Less", mul(c, s, c.op("Log", x)), k(c, 744.44)))
    y = where(c, c.op("And", c.op("Greater", x, k(c, 0.0)), underflow), k(c, np.nan), mul(c, term_sign, k(c, np.inf)))
    y = where(c, is_integer(c, x), k(c, np.inf), y)  # the poles (and 0 < x integer, where zeta > 0)
    y = where(c, c.op("And", c.op("Greater", x, k(c, 0.0)), underflow), k(c, np.nan), y)
    return where(c, c.op("IsNaN", x), x, mul(c, sign, y))


def polygamma_order(c, n, x):
    """``scipy.special.polygamma(n, x)`` for float64 n, x of broadcastable
    shapes (see the module doc): NaN where n is negative, NaN or not an
    integer; ``psi(x)`` where n = 0. The reflection half runs only when some
    x is <= 0 or NaN (``if_all_positive``)."""
    shape = c.op("Shape", c.op("Add", n, x))
    n, x = c.op("Expand", n, shape), c.op("Expand", x, shape)
    n = where(c, c.op("IsInf", n), k(c, np.nan), n)
    valid = c.op("And", c.op("GreaterOrEqual", n, k(c, 1.0)), is_integer(c, n))
    order_n = where(c, valid, c.op("Min", n, k(c, float(LARGEST + 1))), k(c, 1.0))
    order = _Order(c, order_n)
    whole = where(c, valid, n, k(c, 1.0))
    sign = _sign_of_order(c, whole)
    y = if_all_positive(c, x, lambda c, v: _positive(c, order, sign, v), lambda c, v: _any(c, order, sign, v))
    y = where(c, c.op("Greater", n, k(c, float(LARGEST))), _beyond_largest(c, sign, add(c, whole, k(c, 1.0)), x), y)
    y = where(c, valid, y, k(c, np.nan))
    return where(c, c.op("Equal", n, k(c, 0.0)), psi(c, x), y)


@emits("polygamma_order")
def polygamma_order_function(ctx, node, n, x):
    """A call of the model-local function ``PolygammaOrder`` for the input
    dtype (float32/float16 computed in float64 and rounded once)."""
    dtype = node.inputs[1].dtype
    return ctx.call_function("PolygammaOrder", str(dtype), [n, x], float64_body(polygamma_order, dtype))
