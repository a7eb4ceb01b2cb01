"""``polygamma(n, x)`` for a constant order n >= 2 in float64 (the IR op
``polygamma``; orders 0 and 1 are ``psi`` and ``trigamma``), one
model-local function ``Polygamma<n>`` per order and dtype.

SciPy's definition (``scipy.special.polygamma``, which PyTensor's
``PolyGamma.impl`` calls): ``psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x)``, the
Hurwitz zeta function of Cephes ``zeta``.

* x > 0: ``zeta(s, x) = sum_{k<m} (x+k)^-s + zeta(s, x+m)``, where m is the
  number of unit steps that bring x to at least ``shift_bound(n)`` (all of
  them on one last axis, one ReduceSum), and for ``a = x + m`` the
  Euler-Maclaurin expansion (DLMF 25.11.43; Cephes ``zeta`` uses it the same
  way)::

      zeta(s, a) = a^(1-s) (1/(s-1) + 1/(2a) + sum_{j=1..10} B_2j/(2j)! (s)_(2j-1) a^-2j)

  ``shift_bound(n)`` is the smallest a >= 10 at which the first omitted term
  is below 2^-56 of the leading one (11 at n = 2, 19 at n = 10, 58 at
  n = 50). Every term is positive, so the sum is within a few ulp.
* x < 0, not an integer: the reflection formula (DLMF 5.15.6)
  ``psi^(n)(x) = (-1)^n psi^(n)(1-x) - pi^(n+1) Q_n(cot(pi x))``, where
  ``d^n/dx^n cot(pi x) = pi^n Q_n(cot(pi x))``, ``Q_0(t) = t`` and
  ``Q_(k+1)(t) = -(1 + t^2) Q_k'(t)`` (the polynomial is built when the
  function is emitted; its coefficients share one sign, so Horner's rule
  does not cancel). cot comes from ``sincospi`` (exact argument
  reduction). The two terms cancel near the zeros of psi^(n) on the
  negative axis (even n), where the error is relative to the larger term.
* Poles and limits as SciPy: ``(-1)^(n+1) inf`` at +-0, at the negative
  integers and at -inf; ``(-1)^(n+1) 0`` at +inf; NaN for NaN.

Measured against mpmath (``tests/numerics/test_polygamma.py``): see the
bounds asserted there.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

from backends.onnx.registry import emits
from backends.onnx.rules.common import F64
from backends.onnx.rules.special import float64_body
from backends.onnx.rules.special_f64 import (PI, add, div, if_all_positive, is_integer, k, last_axis, lt, mul, poly,
                                             sincospi, steps, sub, where)
from ir.ops.special import cot_derivative

TERMS = 10  # Bernoulli terms of the Euler-Maclaurin tail


def _bernoulli(count: int) -> list[float]:
    """B_2, B_4, ..., B_2count as floats (the Akiyama-Tanigawa algorithm on fractions: exact)."""
    size = 2 * count + 1
    a = [Fraction(0)] * (size + 1)
    numbers = []
    for m in range(size + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        numbers.append(a[0])  # B_m (with B_1 = +1/2)
    return [float(numbers[2 * j]) for j in range(1, count + 1)]


@lru_cache(maxsize=None)
def tail_coefficients(n: int) -> tuple[float, ...]:
    """``c_j = B_2j/(2j)! (s)_(2j-1)`` for j = 1..TERMS, s = n + 1."""
    s = n + 1
    out = []
    for j, b in enumerate(_bernoulli(TERMS + 1)[:TERMS], start=1):
        rising = math.prod(range(s, s + 2 * j - 1))
        out.append(b / math.factorial(2 * j) * rising)
    return tuple(out)


@lru_cache(maxsize=None)
def shift_bound(n: int) -> int:
    """The smallest a >= 10 where the first omitted tail term, relative to
    the leading ``1/(s-1)``, is below 2^-56."""
    s = n + 1
    j = TERMS + 1
    b = _bernoulli(j)[-1]
    omitted = abs(b / math.factorial(2 * j) * math.prod(range(s, s + 2 * j - 1))) * (s - 1)
    a = 10
    while omitted * float(a) ** (-2 * j) > 2.0 ** -56:
        a += 1
    return a


def scaled_zeta(c, x, n: int, factor: float):
    """``factor * zeta(n+1, x)`` for x > 0 (see the module doc). The tail's
    ``a^(1-s)`` is applied as two powers around the scaled bracket, so that
    no intermediate is subnormal unless the result is."""
    s = n + 1
    bound = shift_bound(n)
    cur = steps(c, x, bound)
    low = lt(c, cur, float(bound))
    power = c.op("Pow", cur, k(c, float(-s)))
    total = last_axis(c, "ReduceSum", where(c, low, power, k(c, 0.0)))
    a = add(c, x, last_axis(c, "ReduceSum", c.cast(low, F64)))
    r = div(c, k(c, 1.0), a)
    w = mul(c, r, r)
    bracket = add(c, k(c, 1.0 / (s - 1)), mul(c, k(c, 0.5), r), mul(c, w, poly(c, w, tail_coefficients(n))))
    half = (s - 1) // 2
    tail = mul(c, c.op("Pow", a, k(c, float(half - (s - 1)))), mul(c, k(c, factor), bracket))
    tail = mul(c, c.op("Pow", a, k(c, float(-half))), tail)
    return add(c, mul(c, k(c, factor), total), tail)


def polygamma(c, x, n: int):
    """``scipy.special.polygamma(n, x)`` for n >= 2 (see the module doc).
    Only the x > 0 half runs when every x is > 0 (``if_all_positive``)."""
    factor = (-1.0) ** (n + 1) * math.factorial(n)
    return if_all_positive(c, x, lambda c, v: scaled_zeta(c, v, n, factor), lambda c, v: _polygamma_any(c, v, n))


def _polygamma_any(c, x, n: int):
    factor = (-1.0) ** (n + 1) * math.factorial(n)
    pos = scaled_zeta(c, c.op("Max", x, k(c, 5e-324)), n, factor)  # +-0 at +inf
    reflected = c.op("Max", sub(c, k(c, 1.0), x), k(c, 1.0))
    s, co = sincospi(c, x)
    t = div(c, co, s)
    q = cot_derivative(n)
    parity = 1 if n % 2 == 0 else 0  # Q_n has the parity of n + 1: only odd or only even powers
    qt = poly(c, mul(c, t, t), [float(v) for v in q[parity::2]])
    if parity:
        qt = mul(c, t, qt)
    neg = sub(c, scaled_zeta(c, reflected, n, -float(math.factorial(n))), mul(c, k(c, PI ** (n + 1)), qt))
    y = where(c, c.op("Greater", x, k(c, 0.0)), pos, neg)
    pole = c.op("And", c.op("LessOrEqual", x, k(c, 0.0)), is_integer(c, x))  # +-0, negative integers, -inf
    y = where(c, pole, k(c, math.copysign(np.inf, factor)), y)
    return where(c, c.op("IsNaN", x), x, y)


@emits("polygamma")
def polygamma_function(ctx, node, x):
    """A call of the model-local function ``Polygamma<n>`` for the input
    dtype (float32/float16 computed in float64 and rounded once)."""
    n, dtype = node.attrs["n"], node.inputs[0].dtype
    return ctx.call_function(f"Polygamma{n}", str(dtype), [x],
                             float64_body(lambda c, v: polygamma(c, v, n), dtype))
