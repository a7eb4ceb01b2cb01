"""float64 inverse of the regularized incomplete beta function,
``betaincinv(a, b, y)``: the x in [0, 1] with I_x(a, b) = y, as
``scipy.special`` defines it (Boost's ``ibeta_inv``, which SciPy 1.17 calls).

The root is found by Halley's method (Newton's where Halley's correction
factor is outside [1/2, 2]) on ``t = logit x`` for ``g(t) = log(F / y')``,
where y' is the smaller of y and 1 - y and F the matching one of I_x(a, b)
and 1 - I_x(a, b), both from one evaluation of Cephes ``incbet``
(``incbeta_f64.betainc_pair``: the branch computes one of them directly, the
other is 1 minus it), with ``g' = +-x^a (1-x)^b / (B(a, b) F)`` and
``g'' = g' (a (1-x) - b x) - g'^2``. ``log I`` and ``log(1 - I)`` are concave
in t (the distribution and survival function of the logit of a beta
variate, whose density ``e^(a t) / (1 + e^t)^(a+b) / B(a, b)`` is
log-concave), so Newton's iteration converges from any start; a bracket
[lo, hi] of the root (from TINY and 3/4, narrowed by the sign of g at each
iterate) guards it: a step leaving it (or not finite, where F or its
derivative underflows) is replaced by the bracket's geometric midpoint.
It stops when logit x moved by at most 2^-52 or when the step no longer
shrinks (below 1e-7 and at least a quarter of the previous one: the
rounding of F is reached).

The root is kept in (0, 1/2], where x has a full relative accuracy: where
y > I_(1/2)(a, b) (one more evaluation) the problem is mirrored by
``I_x(a, b) = 1 - I_(1-x)(b, a)`` and the result is 1 minus the root.

Where I_(1/2) itself is NaN (betainc's continued fractions do not converge,
large unequal shapes) the mirror is decided by Temme's leading order for it.

Starts: for min(a, b) >= 100 Temme's uniform asymptotic inversion to
leading order (``_temme_start``), and where x's standard deviation is below
1e-14 x (the variance of x over x^2, ~ (1 - mu)/a, below 1e-28: shapes
beyond ~1e28, where I_x jumps between neighbouring floats and no step can
improve on it) that start is the root; else (Cephes ``incbi``) for a, b > 1
Abramowitz & Stegun 26.5.22 (a normal approximation: ``x = a / (a + b
e^(2 d))``), else the leading term of the series, ``I_x(a, b) ~ x^a /
(a B(a, b))`` (DLMF 8.17.8), giving ``t_left = (log y + log a + log B(a,
b)) / a``, at most 1/2. Where ``e^t_left (a + b
+ 1) / a < 1e-17`` the next term is below double precision and ``e^t_left``
is the root, with no step (every root below ~1e-300, and subnormal y).

Special values as SciPy: NaN for NaN, a <= 0, b <= 0, y outside [0, 1];
0 at y = 0, 1 at y = 1; at a = inf 1 for b = 1, at b = inf 0 for a = 1, else NaN.
Subnormal y where the root is not below e^-700 / (a + b) (large a) is NaN
(the forward function's prefactor is 0 below e^-708; SciPy returns a
number there, NaN at 5e-324). Bounds (``tests/numerics/test_betaincinv.py``)
are stated in ``ir/ops/special.py``.
"""

from __future__ import annotations

import math

import numpy as np

from backends.onnx.rules.common import F64
from backends.onnx.rules.incbeta_asym_f64 import stirling_correction
from backends.onnx.rules.incbeta_f64 import betainc_pair, lbeta
from backends.onnx.rules.iterative_f64 import converge, flat_args, on_subset
from backends.onnx.rules.mathfn import expm1, log1p
from backends.onnx.rules.special_f64 import add, div, erfcinv, k, log1pmx, lt, mul, sub, where

MAX_STEPS = 60
MAX_DT = 100.0
TINY = float(np.finfo(np.float64).tiny)
LOWEST_ROOT = 1e-300  # the bracket's start: smaller roots are e^t_left (no step)
TEMME_SHAPES = 100.0  # min(a, b) from which Temme's start replaces Cephes'
NEWTON_STEPS = 8
NARROW_VARIANCE = 1e-28  # (sd(x) / x)^2 below which the start is the root


def _normal_quantile(c, p, q, upper):
    """Phi^-1(p) from the smaller of p and q = 1 - p (``upper``: q < p)."""
    z = mul(c, k(c, -math.sqrt(2.0)), erfcinv(c, mul(c, k(c, 2.0), c.op("Min", p, q))))
    return where(c, upper, c.op("Neg", z), z)


def _mean(c, a, b):
    """``(ratio, mu_c, mu)``: a/b, b/(a + b) and a/(a + b), without forming
    a + b (it may overflow)."""
    ratio = div(c, a, b)
    mu_c = div(c, k(c, 1.0), add(c, k(c, 1.0), ratio))
    return ratio, mu_c, mul(c, ratio, mu_c)


def _log_density_large(c, a, b):
    """For a, b >= 20: ``(ratio, mu, peak)`` with ratio = a/b, mu = a/(a + b)
    and ``peak = a log mu + b log(1 - mu) - log B(a, b) = log(a b / (2 pi
    (a + b))) / 2 + del(a + b) - del(a) - del(b)`` (Stirling's series,
    DLMF 5.11.1, del = ``stirling_correction``): the logit-space density
    ``x^a (1-x)^b / B(a, b)`` is then ``exp(peak + a L(w) + b L(-ratio w))``,
    w = x/mu - 1, L(u) = log(1 + u) - u, with no term of size a log x to
    cancel (those lose eps a |log x| absolutely: 1e3 at a = 1e16, x = 1e-252)."""
    ratio, mu_c, mu = _mean(c, a, b)
    peak = mul(c, k(c, 0.5), sub(c, add(c, c.op("Log", a), c.op("Log", mu_c)), k(c, math.log(2 * math.pi))))
    dels = sub(c, stirling_correction(c, add(c, a, b)), add(c, stirling_correction(c, a), stirling_correction(c, b)))
    return ratio, mu, add(c, peak, dels)


def _halley(c, a, b, y, upper, lb, large, x0):
    """The root x of F(x) = y (F = 1 - I_x(a, b) where ``upper``, else
    I_x(a, b)) by Halley's method in logit x from ``x0``; ``lb = log B(a, b)``;
    where ``large`` (min(a, b) >= 100) the density in the form of
    ``_log_density_large`` (all 1-D, float64 and bool, of one length)."""
    sign = where(c, upper, k(c, -1.0), k(c, 1.0))
    one = k(c, 1.0)
    ratio, mu, peak = _log_density_large(c, where(c, large, a, k(c, 100.0)), where(c, large, b, k(c, 100.0)))

    def step(c, x, prev, lo, hi):
        i, ic = betainc_pair(c, a, b, x)
        f = where(c, upper, ic, i)
        g = c.op("Log", div(c, f, y))
        xc = sub(c, one, x)
        # the bracket [lo, hi] of the root: x is past it where sign g > 0 (F = 0 gives g = -inf)
        past = c.op("Greater", mul(c, sign, g), k(c, 0.0))
        hi = where(c, past, c.op("Min", hi, x), hi)
        lo = where(c, past, lo, c.op("Max", lo, x))
        log_xc = log1p(c, c.op("Neg", x), F64)  # b log(1 - x): 1 - x rounds to 1 where b x is still large
        log_density = sub(c, add(c, mul(c, a, c.op("Log", x)), mul(c, b, log_xc)), lb)
        w = sub(c, div(c, x, mu), one)
        stable = add(c, peak, mul(c, a, log1pmx(c, w)), mul(c, b, log1pmx(c, c.op("Neg", mul(c, ratio, w)))))
        log_r = sub(c, where(c, large, stable, log_density), c.op("Log", f))
        slope = mul(c, sign, c.op("Exp", log_r))
        newton = c.op("Neg", div(c, g, slope))
        curvature = mul(c, slope, sub(c, sub(c, mul(c, a, xc), mul(c, b, x)), slope))
        factor = sub(c, one, div(c, mul(c, g, curvature), mul(c, k(c, 2.0), slope, slope)))
        halley_ok = c.op("And", c.op("GreaterOrEqual", factor, k(c, 0.5)), c.op("LessOrEqual", factor, k(c, 2.0)))
        dt = c.op("Clip", where(c, halley_ok, div(c, newton, factor), newton), k(c, -MAX_DT), k(c, MAX_DT))
        # logit x + dt, from x itself (no rounding through 1 / (1 + e^-t)); outside the bracket
        # (or not finite: F or its derivative underflowed) the bracket's geometric midpoint instead
        stepped = div(c, x, add(c, x, mul(c, xc, c.op("Exp", c.op("Neg", dt)))))
        inside = c.op("And", c.op("GreaterOrEqual", stepped, lo), c.op("LessOrEqual", stepped, hi))
        x_new = where(c, inside, stepped, mul(c, c.op("Sqrt", lo), c.op("Sqrt", hi)))  # lo hi: subnormal, flushed
        moved = sub(c, c.op("Log", div(c, x_new, x)), c.op("Log", div(c, sub(c, one, x_new), xc)))
        size = c.op("Abs", moved)
        stalled = c.op("And", lt(c, size, 1e-7), c.op("GreaterOrEqual", size, mul(c, k(c, 0.25), c.op("Abs", prev))))
        done = c.op("Or", c.op("LessOrEqual", size, k(c, 2.0 ** -52)), c.op("And", stalled, inside))
        # I itself NaN (betainc's continued fractions did not converge): no bracket step can be trusted, NaN
        unknown = c.op("IsNaN", f)
        x_new = where(c, unknown, k(c, np.nan), x_new)
        return [x_new, moved, lo, hi], c.op("Or", done, unknown)
    inf, lo, hi = (c.op("Expand", k(c, v), c.op("Shape", a)) for v in (np.inf, LOWEST_ROOT, 0.75))
    return converge(c, [x0, inf, lo, hi], step, MAX_STEPS, "betaincinv_halley")[0]


def _normal_start(c, a, b, p, q, upper):
    """Abramowitz & Stegun 26.5.22 (Cephes ``incbi`` for a, b > 1): the root
    of I_x(a, b) = p (= 1 - q) from a normal approximation; NaN where it fails."""
    one, two = k(c, 1.0), k(c, 2.0)
    yp = c.op("Neg", _normal_quantile(c, p, q, upper))  # Phi^-1(1 - p)
    lgm = div(c, sub(c, mul(c, yp, yp), k(c, 3.0)), k(c, 6.0))
    ia, ib = div(c, one, sub(c, mul(c, two, a), one)), div(c, one, sub(c, mul(c, two, b), one))
    h = div(c, two, add(c, ia, ib))
    d = sub(c, div(c, mul(c, yp, c.op("Sqrt", add(c, h, lgm))), h),
            mul(c, sub(c, ib, ia), sub(c, add(c, lgm, k(c, 5.0 / 6.0)), div(c, two, mul(c, k(c, 3.0), h)))))
    return div(c, one, add(c, one, mul(c, div(c, b, a), c.op("Exp", mul(c, two, d)))))


def _temme_start(c, a, b, p, q, upper):
    """The root of I_x(a, b) = p (= 1 - q) to leading order in Temme's uniform
    asymptotic expansion (N. M. Temme, "Asymptotic inversion of the
    incomplete beta function", J. Comput. Appl. Math. 41 (1992) 145-157,
    section 3; Boost's ``temme_method_2_ibeta_inverse`` without its 1/r
    terms): ``I_x(a, b) ~ Phi(eta sqrt(r))`` with r = a + b, mu = a / r and

        -eta^2 / 2 = mu log(x / mu) + (1 - mu) log((1 - x) / (1 - mu)),   sign eta = sign(x - mu),

    so eta = z / sqrt(r), z the normal quantile of p. x = mu e^v is solved from
    ``G(v) = a L(w) + b L(-(a/b) w) + z^2/2 = 0`` (r times the relation,
    w = e^v - 1, L(u) = log(1 + u) - u, no cancellation however close x is to
    mu) by NEWTON_STEPS Newton steps from v = z sqrt((1 - mu) / a), where
    ``G' = -a w (1 + a/b) / (1 - (a/b) w)``; G is concave in v, so past the
    first step the iterates approach the root monotonically. Its error is
    O(1/sqrt(r)) standard deviations of x, whatever the tail: measured at most
    0.07 of one for min(a, b) >= 100, where the normal start below (Cephes')
    is off by up to 80% of x."""
    one = k(c, 1.0)
    z = _normal_quantile(c, p, q, upper)
    ratio, mu_c, mu = _mean(c, a, b)
    half_z2 = mul(c, k(c, 0.5), z, z)
    v_max = log1p(c, div(c, b, a), F64)  # x = 1
    v = mul(c, z, c.op("Sqrt", div(c, mu_c, a)))
    for _ in range(NEWTON_STEPS):
        w = expm1(c, v, F64)
        rw = mul(c, ratio, w)
        g = add(c, mul(c, a, log1pmx(c, w)), mul(c, b, log1pmx(c, c.op("Neg", rw))), half_z2)
        slope = div(c, mul(c, c.op("Neg", mul(c, a, w)), add(c, one, ratio)), sub(c, one, rw))
        stepped = sub(c, v, div(c, g, slope))
        stepped = where(c, c.op("IsNaN", stepped), v, stepped)  # G' = 0 at z = 0: the start is the root
        v = where(c, c.op("Less", stepped, v_max), stepped, mul(c, k(c, 0.5), add(c, v, v_max)))
    return mul(c, mu, c.op("Exp", v))


def _root(c, a, b, p, q):
    """The x in (0, 1/2] with I_x(a, b) = p = 1 - q (a, b > 0 finite,
    0 < p, q < 1, the root at most 1/2)."""
    upper = c.op("Less", q, p)
    lb = lbeta(c, a, b)
    log_p = where(c, upper, log1p(c, c.op("Neg", q), F64), c.op("Log", p))  # 1 - q rounds
    t_left = div(c, add(c, log_p, c.op("Log", a), lb), a)
    tail = lt(c, sub(c, add(c, t_left, c.op("Log", add(c, a, add(c, b, k(c, 1.0))))), c.op("Log", a)),
              math.log(1e-17))
    y = c.op("Min", p, q)
    normal = _normal_start(c, a, b, p, q, upper)
    normal_ok = c.op("And", c.op("And", c.op("Greater", a, k(c, 1.0)), c.op("Greater", b, k(c, 1.0))),
                     c.op("And", c.op("Greater", normal, k(c, 0.0)), c.op("LessOrEqual", normal, k(c, 0.5))))
    x0 = where(c, normal_ok, normal, c.op("Min", c.op("Exp", t_left), k(c, 0.5)))
    large = c.op("GreaterOrEqual", c.op("Min", a, b), k(c, TEMME_SHAPES))
    temme = c.op("Min", _temme_start(c, a, b, p, q, upper), k(c, 0.75))
    x0 = where(c, large, temme, x0)
    # x's standard deviation below 1e-14 x (its variance over x^2 ~ (1 - mu) / a): Temme's start is
    # within 0.07 of it, so within 1e-15 x, and I_x jumps between neighbouring floats: no step
    narrow = c.op("And", large, lt(c, div(c, div(c, b, add(c, a, b)), a), NARROW_VARIANCE))
    regular = c.op("Not", c.op("Or", c.op("Or", tail, narrow), lt(c, y, TINY)))  # subnormal y off the tail: NaN
    x = where(c, tail, c.op("Exp", t_left), where(c, narrow, temme, k(c, np.nan)))
    return on_subset(c, regular, [a, b, y, upper, lb, large, x0], _halley, x)


def betaincinv(c, a, b, y):
    """``scipy.special.betaincinv(a, b, y)``: the x in [0, 1] with
    I_x(a, b) = y (module docstring); float64 of any broadcastable shapes
    in, their broadcast shape out."""
    shape, (a, b, y) = flat_args(c, a, b, y)
    nan = k(c, np.nan)
    bad = c.op("Or", c.op("Or", c.op("IsNaN", a), c.op("IsNaN", b)), c.op("IsNaN", y))
    bad = c.op("Or", bad, c.op("Or", c.op("LessOrEqual", a, k(c, 0.0)), c.op("LessOrEqual", b, k(c, 0.0))))
    bad = c.op("Or", bad, c.op("Or", lt(c, y, 0.0), c.op("Greater", y, k(c, 1.0))))
    y0, y1 = c.op("Equal", y, k(c, 0.0)), c.op("Equal", y, k(c, 1.0))
    a_inf, b_inf = c.op("IsInf", a), c.op("IsInf", b)
    # a = inf: 1 where b = 1 (the root y^(1/a)), b = inf: 0 where a = 1 (1 - (1-y)^(1/b)), else NaN, as SciPy
    value = where(c, c.op("And", a_inf, c.op("Equal", b, k(c, 1.0))), k(c, 1.0), nan)
    value = where(c, c.op("And", b_inf, c.op("Equal", a, k(c, 1.0))), k(c, 0.0), value)
    value = where(c, y0, k(c, 0.0), where(c, y1, k(c, 1.0), value))
    value = where(c, bad, nan, value)
    inner = c.op("Not", c.op("Or", c.op("Or", bad, c.op("Or", y0, y1)), c.op("Or", a_inf, b_inf)))
    return c.op("Reshape", on_subset(c, inner, [a, b, y], _mirrored_root, value), shape, allowzero=1)


def _mirrored_root(c, a, b, y):
    """The root for 0 < y < 1, a, b > 0 finite: solved in (0, 1/2] (module docstring)."""
    half = add(c, mul(c, a, k(c, 0.0)), k(c, 0.5))
    i_half = betainc_pair(c, a, b, half)[0]
    # where I_(1/2) is NaN (betainc's continued fractions do not converge: large, unequal shapes), Temme's
    # leading order, I_(1/2) ~ Phi(z_half) (``_temme_start``): wrong only for roots within ~0.1 standard
    # deviation of 1/2, which the solve in (0, 3/4) still finds
    one = k(c, 1.0)
    z_half = c.op("Sqrt", mul(c, k(c, -2.0), add(c, mul(c, a, log1p(c, mul(c, k(c, 0.5), sub(c, div(c, b, a), one)), F64)),
                                                 mul(c, b, log1p(c, mul(c, k(c, 0.5), sub(c, div(c, a, b), one)), F64)))))
    z_half = where(c, c.op("Less", a, b), z_half, c.op("Neg", z_half))
    p, q = y, sub(c, one, y)
    z_y = _normal_quantile(c, p, q, c.op("Less", q, p))
    mirror = c.op("Or", c.op("And", c.op("IsNaN", i_half), c.op("Greater", z_y, z_half)), c.op("Greater", y, i_half))
    root = _root(c, where(c, mirror, b, a), where(c, mirror, a, b), where(c, mirror, q, p), where(c, mirror, p, q))
    return where(c, mirror, sub(c, k(c, 1.0), root), root)


FORMULAS = {"betaincinv": betaincinv}
