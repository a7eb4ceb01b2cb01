"""float64 inverses of the regularized incomplete gamma functions,
``gammaincinv(a, p)`` (the x with P(a, x) = p) and ``gammainccinv(a, q)``
(the x with Q(a, x) = q), as ``scipy.special`` defines them (xsf
``cephes/igami.h``: ``igami``/``igamci``).

SciPy starts from DiDonato & Morris's initial approximation (ACM TOMS 12,
1986, ``find_inverse_gamma``) and takes three Halley steps on P or Q. Here
the root is found by Halley's method (Newton's where Halley's correction
factor is outside [1/2, 2]) on ``t = log x`` for ``g(t) = log(F(a, e^t) / y)``,
where y is the smaller of p and q (the other is 1 - y, exact) and F the
matching one of P and Q (``incgamma_f64.gamma_tail``: P or Q per element, by
the method ``gammainc``/``gammaincc`` choose), with ``g'(t) = +-x^a e^-x /
(Gamma(a) F)`` (``igam_fac``) and ``g'' = g' (a - x) - g'^2``.
``log F(a, e^t)`` is concave in t (F is the distribution or survival
function of the log of a gamma variate, whose density ``e^(a t - e^t) /
Gamma(a)`` is log-concave), so the iteration converges from any start; it
needs 2-7 steps from the starts below (``MAX_STEPS`` bounds it, NaN past it).
The state is x itself (``x e^dt``), so the root is not rounded through
``exp(log x)``. Starts:

* P side (y = p <= 1/2): the larger of ``t_left = (log p + lgamma(a+1)) / a``
  (``P(a, x) <= x^a / Gamma(a+1)``, so ``e^t_left`` is at or left of the
  root, and is the root to double precision where it is below 1e-304, where
  no step is taken) and the Wilson-Hilferty approximation
  ``a (1 - 1/(9a) + z / (3 sqrt a))^3``, ``z = Phi^-1(p)`` (DiDonato &
  Morris eq. 31; z from Abramowitz & Stegun 26.2.23, 4.5e-4);
* Q side (y = q < 1/2): ``t_left`` (with ``log p = log1p(-q)``) where
  ``e^t_left < 0.01`` (tiny a), for a < 1 the solution of ``x = -log q -
  lgamma(a) + (a - 1) log x`` (the leading term of Q's asymptotic
  expansion; three fixed-point steps), else Wilson-Hilferty.

A step is clipped to |dt| <= 5; where F underflows to 0 or the derivative
does (the target next to the end of the float range), the step goes back
toward the root by half the last step. The iteration stops when |dt| <=
2^-52 (x changed by at most one ulp) or when the step no longer shrinks
(|dt| < 1e-7 and |dt| >= |previous dt| / 4: the rounding of F is reached).

A subnormal y (no normal root F(a, x) exists in float64's forward
functions, whose prefactor is 0 below e^-708) takes fixed-point steps on the
leading terms of the tail expansions instead (``_subnormal_root``).

Special values as SciPy: NaN for NaN, a < 0, y outside [0, 1], and for
0 < y < 1 at a = 0, subnormal a and a = inf; ``gammaincinv(a, 0) = 0``,
``gammaincinv(a, 1) = inf``, ``gammainccinv(a, 0) = inf``,
``gammainccinv(a, 1) = 0``. Bounds (``tests/numerics/test_incomplete_inverse.py``)
are stated in ``ir/ops/special.py``.
"""

from __future__ import annotations

import math

import numpy as np

from backends.onnx.rules.common import F64
from backends.onnx.rules.incgamma_f64 import gamma_tail, igam_fac
from backends.onnx.rules.iterative_f64 import converge, flat_args, on_subset
from backends.onnx.rules.mathfn import log1p
from backends.onnx.rules.special_f64 import add, div, k, lgamma_positive, lt, mul, poly, sub, where

MAX_STEPS = 60
MAX_DT = 100.0
TINY = float(np.finfo(np.float64).tiny)
LOG_TINY_ROOT = -700.0  # e^-700 = 1e-304: below it x^a / Gamma(a+1) = p is the root to double precision


def _halley(c, a, y, x0, upper):
    """The root x of F(a, x) = y (F = Q where ``upper``, else P) by Halley's
    method in log x from ``x0`` (all 1-D, float64 and bool, of one length)."""
    sign = where(c, upper, k(c, -1.0), k(c, 1.0))

    def step(c, x, prev):
        f = gamma_tail(c, a, x, upper)
        g = c.op("Log", div(c, f, y))
        r = div(c, igam_fac(c, a, x), f)
        slope = mul(c, sign, r)
        newton = c.op("Neg", div(c, g, slope))
        # Halley: g'' = r (a - x - r) for P, -r (a - x + r) for Q; the factor 1 - g g'' / (2 g'^2)
        # where it lies in [1/2, 2] (near the root), else Newton
        curvature = mul(c, sign, r, sub(c, sub(c, a, x), mul(c, sign, r)))
        factor = sub(c, k(c, 1.0), div(c, mul(c, g, curvature), mul(c, k(c, 2.0), slope, slope)))
        halley_ok = c.op("And", c.op("GreaterOrEqual", factor, k(c, 0.5)), c.op("LessOrEqual", factor, k(c, 2.0)))
        newton = where(c, halley_ok, div(c, newton, factor), newton)
        # F or its derivative underflowed: back toward the root by half the last step
        back = mul(c, c.op("Neg", sign), c.op("Sign", g), where(c, c.op("IsInf", prev), k(c, 1.0),
                                                                   mul(c, k(c, 0.5), c.op("Abs", prev))))
        finite = c.op("Not", c.op("Or", c.op("IsInf", newton), c.op("IsNaN", newton)))
        dt = c.op("Clip", where(c, finite, newton, back), k(c, -MAX_DT), k(c, MAX_DT))
        size = c.op("Abs", dt)
        stalled = c.op("And", lt(c, size, 1e-7), c.op("GreaterOrEqual", size, mul(c, k(c, 0.25), c.op("Abs", prev))))
        # (a back step never ends it: where the forward values jump from 0 to 1, that is NaN)
        done = c.op("Or", c.op("LessOrEqual", size, k(c, 2.0 ** -52)), c.op("And", stalled, finite))
        return [mul(c, x, c.op("Exp", dt)), dt], done
    inf = add(c, mul(c, a, k(c, 0.0)), k(c, np.inf))
    return converge(c, [x0, inf], step, MAX_STEPS, "gammaincinv_halley")[0]


def _normal_quantile(c, y):
    """``Phi^-1(y)`` for 0 < y <= 1/2 to 4.5e-4 (Abramowitz & Stegun 26.2.23): a start only."""
    t = c.op("Sqrt", mul(c, k(c, -2.0), c.op("Log", y)))
    rational = div(c, poly(c, t, (2.515517, 0.802853, 0.010328)), poly(c, t, (1.0, 1.432788, 0.189269, 0.001308)))
    return sub(c, rational, t)


def _start(c, a, p, q, upper):
    """``(x0, t_left)``: the start of the iteration and the lower bound
    ``log`` of the root (module docstring); ``upper`` (bool) picks the Q side."""
    lgamma_a1 = lgamma_positive(c, add(c, a, k(c, 1.0)))
    log_p = where(c, upper, log1p(c, c.op("Neg", q), F64), c.op("Log", p))  # 1 - q rounds
    t_left = div(c, add(c, log_p, lgamma_a1), a)
    # Phi^-1(p) = -Phi^-1(q) from the smaller of p and q (1 - q may round to 1)
    z = mul(c, where(c, upper, k(c, -1.0), k(c, 1.0)), _normal_quantile(c, c.op("Min", p, q)))
    w = add(c, sub(c, k(c, 1.0), div(c, k(c, 1.0 / 9.0), a)), div(c, z, mul(c, k(c, 3.0), c.op("Sqrt", a))))
    w_pos = c.op("Greater", w, k(c, 0.0))
    t_wh = c.op("Log", mul(c, a, c.op("Pow", where(c, w_pos, w, k(c, 1.0)), k(c, 3.0))))
    t_lower = where(c, w_pos, c.op("Max", t_left, t_wh), t_left)
    tail = sub(c, c.op("Neg", c.op("Log", q)), sub(c, lgamma_a1, c.op("Log", a)))  # -log q - lgamma(a)
    xb = c.op("Max", tail, k(c, 1.0))
    for _ in range(3):
        xb = c.op("Max", add(c, tail, mul(c, sub(c, a, k(c, 1.0)), c.op("Log", xb))), k(c, 1e-300))
    t_upper = where(c, c.op("And", lt(c, a, 1.0), c.op("Greater", tail, k(c, 1.0))), c.op("Log", xb),
                    where(c, w_pos, t_wh, c.op("Log", a)))
    t_upper = where(c, lt(c, t_left, math.log(0.01)), t_left, t_upper)
    return c.op("Exp", where(c, upper, t_upper, t_lower)), t_left


def _subnormal_root(c, a, y, x0, upper):
    """The root for a subnormal target y, where the forward functions are 0
    (their prefactor is 0 below e^-708): fixed-point steps on the leading
    terms of the tail expansions, ``P = x^a e^-x / Gamma(a+1) (1 + x/(a+1) +
    x^2/((a+1)(a+2)) + ...)`` (DLMF 8.7.1) and ``Q = x^(a-1) e^-x / Gamma(a)
    (1 + (a-1)/x + (a-1)(a-2)/x^2 + ...)`` (DLMF 8.11.2), six terms each."""
    one = k(c, 1.0)
    log_y = c.op("Log", y)
    lgamma_a1 = lgamma_positive(c, add(c, a, one))
    x = x0
    for _ in range(8):
        q_series = add(c, one, *(mul(c, *(div(c, sub(c, a, k(c, float(j))), x) for j in range(1, n + 1)))
                                 for n in range(1, 6)))
        q_x = add(c, sub(c, c.op("Neg", log_y), sub(c, lgamma_a1, c.op("Log", a))),
                  mul(c, sub(c, a, one), c.op("Log", x)), c.op("Log", c.op("Max", q_series, k(c, 1e-300))))
        p_series = add(c, one, *(mul(c, *(div(c, x, add(c, a, k(c, float(j)))) for j in range(1, n + 1)))
                                 for n in range(1, 6)))
        p_x = c.op("Exp", div(c, add(c, sub(c, add(c, log_y, lgamma_a1), c.op("Log", p_series)), x), a))
        x = where(c, upper, q_x, p_x)
    return x


def _root(c, a, p, q, upper):
    """The x > 0 with P(a, x) = p and Q(a, x) = q = 1 - p, solving for Q
    where ``upper`` (q < p) else for P; a > 0 finite, 0 < p, q < 1."""
    x0, t_left = _start(c, a, p, q, upper)
    tiny_root = lt(c, t_left, LOG_TINY_ROOT)
    y = c.op("Min", p, q)
    subnormal = c.op("And", c.op("Not", tiny_root), lt(c, y, TINY))
    regular = c.op("Not", c.op("Or", tiny_root, subnormal))
    x = c.op("Exp", t_left)
    x = on_subset(c, regular, [a, y, x0, upper], _halley, x)
    return on_subset(c, subnormal, [a, y, x0, upper], _subnormal_root, x)


def _inverse(c, a, y, complement: bool):
    shape, (a, y) = flat_args(c, a, y)
    p, q = (sub(c, k(c, 1.0), y), y) if complement else (y, sub(c, k(c, 1.0), y))
    nan = k(c, np.nan)
    bad = c.op("Or", c.op("Or", c.op("IsNaN", a), c.op("IsNaN", y)),
               c.op("Or", lt(c, a, 0.0), c.op("Or", lt(c, y, 0.0), c.op("Greater", y, k(c, 1.0)))))
    p0, q0 = c.op("Equal", p, k(c, 0.0)), c.op("Equal", q, k(c, 0.0))
    value = where(c, p0, k(c, 0.0), where(c, q0, k(c, np.inf), nan))
    value = where(c, bad, nan, value)
    inner = c.op("Not", c.op("Or", c.op("Or", bad, c.op("Or", p0, q0)),
                             c.op("Or", lt(c, a, TINY), c.op("IsInf", a))))
    value = on_subset(c, inner, [a, p, q], lambda c, a, p, q: _root(c, a, p, q, c.op("Less", q, p)), value)
    return c.op("Reshape", value, shape, allowzero=1)


def gammaincinv(c, a, p):
    """``scipy.special.gammaincinv(a, p)``: the x >= 0 with P(a, x) = p
    (module docstring); float64 of any broadcastable shapes in, their
    broadcast shape out."""
    return _inverse(c, a, p, complement=False)


def gammainccinv(c, a, q):
    """``scipy.special.gammainccinv(a, q)``: the x >= 0 with Q(a, x) = q
    (module docstring); float64 of any broadcastable shapes in, their
    broadcast shape out."""
    return _inverse(c, a, q, complement=True)


FORMULAS = {"gammaincinv": gammaincinv, "gammainccinv": gammainccinv}
