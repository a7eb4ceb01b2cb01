"""float64 regularized incomplete beta function ``betainc`` (I_x(a, b)) by
Cephes ``incbet`` (Moshier, Cephes Math Library 2.8; the algorithm of
PyTensor's C ``BetaInc``, ``pytensor/scalar/c_code/incbet.c``), the branch
chosen per element as there:

* ``pseries``: the power series (DLMF 8.17.8 as a series in x, Cephes
  ``pseries``) where ``b x <= 1`` and ``x <= 0.95``;
* otherwise the symmetry ``I_x(a, b) = 1 - I_{1-x}(b, a)`` when x > a / (a+b),
  then the series again if it now applies, else one of Cephes' two continued
  fractions (``incbcf``, DLMF 8.17.22, where ``x (a+b-2) < a - 1``, and
  ``incbd``, its form in ``x / (1 - x)``), two terms per step, 1000 steps at
  most (Cephes: 300), stopping at 3 ulp of relative change; each times the prefactor
  ``x^a (1-x)^b / (a B(a, b))``, formed by ``pow`` and ``Gamma`` where
  ``a + b < 171.6`` and by logarithms beyond (``log B`` by ``lbeta``:
  Stirling differences for the larger shape, as TOMS 708's ``algdiv``).

* TOMS 708's asymptotic expansion (``incbeta_asym_f64.basym``) where both
  shapes exceed 100 and |a - (a + b) x| <= 0.03 min(a, b) (TOMS 708
  ``bratio``'s region for it), instead of the fractions, whose step count
  grows with the shapes there (over 1,000 steps, so NaN, at a, b ~ 1e300);
  in (b, a, 1 - x) above the mean, as the fractions.

``betainc_pair`` returns I and 1 - I from one evaluation, each computed by
the branch of its own side (``betaincinv`` needs both to full relative
accuracy).

Each method runs on its own elements (``iterative_f64.on_subset``) in a
Loop that stops when they have all converged; an element that has not
converged within the step limit is NaN (no silently truncated sum).

Special values as SciPy (Boost's ``ibeta``, which SciPy 1.17 calls): NaN for
NaN, a < 0, b < 0, x outside [0, 1], a = b = 0 and a = b = inf; I = 0 at
x = 0, 1 at x = 1, 1 for a = 0 or b = inf, 0 for b = 0 or a = inf.

Bound measured against mpmath (``tests/numerics/test_incomplete_beta.py``):
``(1e-13 + 16 eps E) |I|`` with ``E = |a log x| + |b log(1-x)| + |log B(a,b)|``
where the prefactor is formed by logarithms (a + b >= 171.6) and E = 0
elsewhere, as Cephes; ``(1e-14 + 2 eps sqrt(a + b)) |I|`` in the asymptotic
expansion's region; ``docs/numerics.md`` states them.
"""

from __future__ import annotations

import numpy as np

from backends.onnx.rules.common import F64
from backends.onnx.rules.incbeta_asym_f64 import algdiv, asymptotic_region, basym
from backends.onnx.rules.incbeta_toms_f64 import TOMS_FROM, toms708
from backends.onnx.rules.iterative_f64 import converge, flat_args, on_subset
from backends.onnx.rules.mathfn import log1p
from backends.onnx.rules.special_f64 import add, div, gamma_positive, k, lgamma_positive, lt, mul, sub, where

MACHEP = 1.11022302462515654042e-16  # Cephes MACHEP (2^-53)
MAXGAM = 171.624376956302725
MINLOG = -7.08396418532264106224e2
MAXLOG = 7.09782712893383996843e2
BIG, BIGINV = 4.503599627370496e15, 2.22044604925031308085e-16
MAX_CF_STEPS = 1000  # Cephes stops at 300 (two terms each) with the truncated value: x near a/(a+b) with tiny b needs more
TOMS_MIN_SHAPE = 1e-15  # below, TOMS 708 takes its FPSER/APSER (not carried): Cephes keeps them
MAX_SERIES_STEPS = 2000  # b x <= 1, x <= 0.95: terms shrink at least as 0.95^n


def lbeta(c, a, b):
    """``log B(a, b)`` for a, b > 0: ``lgamma(s) + algdiv(s, l)`` (s, l the
    smaller and larger shape)."""
    s, l = c.op("Min", a, b), c.op("Max", a, b)
    return add(c, lgamma_positive(c, s), algdiv(c, s, l))


def _prefactor(c, a, b, x, xc, w, series=False):
    """``x^a xc^b w / (a B(a, b))`` (Cephes ``incbet``'s ``done`` factor; 0
    below e^MINLOG); the power series' factor ``x^a w / (a B(a, b))`` where
    ``series``. ``x + xc = 1``, the smaller one exact (the caller's input, or
    1 minus an input >= 1/2, exact by Sterbenz) and the larger its rounded
    complement: the larger one's log is ``log1p(-smaller)``, so a tiny x keeps
    ``b log(1 - x)`` to a few ulp where ``log`` of the rounded ``1 - x`` would
    be off by ``eps / x`` relative (4e-8 at x = 3e-9, and then times b)."""
    x_smaller = c.op("LessOrEqual", x, xc)
    log_xa = mul(c, a, where(c, x_smaller, c.op("Log", x), log1p(c, c.op("Neg", xc), F64)))
    log_xcb = k(c, 0.0)
    if not series:
        log_xcb = mul(c, b, where(c, x_smaller, log1p(c, c.op("Neg", x), F64), c.op("Log", xc)))
    direct = lt(c, add(c, a, b), MAXGAM)
    safe_a = where(c, direct, a, k(c, 1.0))
    safe_b = where(c, direct, b, k(c, 1.0))
    inv_beta = div(c, gamma_positive(c, add(c, safe_a, safe_b)),
                   mul(c, gamma_positive(c, safe_a), gamma_positive(c, safe_b)))
    # the powers where a + b < 171.6: pow of the exact smaller one, the larger's through its log1p
    power_x = where(c, x_smaller, c.op("Pow", x, a), c.op("Exp", log_xa))
    power_xc = where(c, x_smaller, c.op("Exp", log_xcb), c.op("Pow", xc, b)) if not series else k(c, 1.0)
    small = mul(c, power_xc, power_x, div(c, w, a), inv_beta)
    logs = add(c, log_xa, log_xcb, c.op("Neg", lbeta(c, a, b)),
               c.op("Log", div(c, w, a)))
    large = where(c, lt(c, logs, MINLOG), k(c, 0.0), c.op("Exp", logs))
    # Cephes: the powers only where neither leaves the normal range (nor their product, nor the
    # result: tiny a or b), else logarithms
    in_range = c.op("And", c.op("Greater", add(c, log_xa, log_xcb), k(c, -MAXLOG)),
                    c.op("And", lt(c, c.op("Abs", log_xa), MAXLOG), lt(c, c.op("Abs", log_xcb), MAXLOG)))
    ok = c.op("And", c.op("And", direct, in_range),
              c.op("And", c.op("Greater", small, k(c, 1e-300)), lt(c, small, 1e300)))
    return where(c, ok, small, large)


def pseries(c, a, b, x, xc):
    """I_x(a, b) by the power series (Cephes ``pseries``), for b x <= 1, x <= 0.95
    (xc = 1 - x as ``_prefactor`` takes them)."""
    def step(c, n, t, s):
        t = mul(c, t, div(c, mul(c, sub(c, n, b), x), n))
        v = div(c, t, add(c, a, n))
        s = add(c, s, v)
        return [add(c, n, k(c, 1.0)), t, s], c.op("LessOrEqual", c.op("Abs", v), div(c, k(c, MACHEP), a))
    u = mul(c, sub(c, k(c, 1.0), b), x)
    t1 = div(c, u, add(c, a, k(c, 1.0)))
    two = add(c, mul(c, a, k(c, 0.0)), k(c, 2.0))
    running = c.op("Greater", c.op("Abs", t1), div(c, k(c, MACHEP), a))
    _, _, s = converge(c, [two, u, mul(c, a, k(c, 0.0))], step, MAX_SERIES_STEPS, "incbet_series",
                       skip=c.op("Not", running))
    s = add(c, s, t1, div(c, k(c, 1.0), a))
    return _prefactor(c, a, b, x, xc, mul(c, s, a), series=True)


def _fraction(c, z, ks, name):
    """Cephes' ``incbcf``/``incbd`` continued fraction in ``z`` with the eight
    running ``ks`` (k1..k8), two terms per step."""
    def step(c, k1, k2, k3, k4, k5, k6, k7, k8, pkm2, pkm1, qkm2, qkm1, ans):
        xk = c.op("Neg", div(c, mul(c, z, k1, k2), mul(c, k3, k4)))
        pk, qk = add(c, pkm1, mul(c, pkm2, xk)), add(c, qkm1, mul(c, qkm2, xk))
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        xk = div(c, mul(c, z, k5, k6), mul(c, k7, k8))
        pk, qk = add(c, pkm1, mul(c, pkm2, xk)), add(c, qkm1, mul(c, qkm2, xk))
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        nonzero_q = c.op("Not", c.op("Equal", qk, k(c, 0.0)))
        r = where(c, nonzero_q, div(c, pk, where(c, nonzero_q, qk, k(c, 1.0))), ans)
        nonzero_r = c.op("Not", c.op("Equal", r, k(c, 0.0)))
        t = where(c, nonzero_r, c.op("Abs", div(c, sub(c, ans, r), where(c, nonzero_r, r, k(c, 1.0)))), k(c, 1.0))
        ans = where(c, nonzero_r, r, ans)
        one, two = k(c, 1.0), k(c, 2.0)
        ks = [add(c, k1, one), add(c, k2, one) if name == "incbcf" else sub(c, k2, one), add(c, k3, two),
              add(c, k4, two), add(c, k5, one), sub(c, k6, one) if name == "incbcf" else add(c, k6, one),
              add(c, k7, two), add(c, k8, two)]
        size = add(c, c.op("Abs", qk), c.op("Abs", pk))
        down = where(c, c.op("Greater", size, k(c, BIG)), k(c, BIGINV), k(c, 1.0))
        up = where(c, c.op("Or", lt(c, c.op("Abs", qk), BIGINV), lt(c, c.op("Abs", pk), BIGINV)), k(c, BIG), k(c, 1.0))
        scale = mul(c, down, up)
        conv = [pkm2, pkm1, qkm2, qkm1]
        return [*ks, *(mul(c, v, scale) for v in conv), ans], lt(c, t, 3.0 * MACHEP)
    zero = mul(c, z, k(c, 0.0))
    one = add(c, zero, k(c, 1.0))
    return converge(c, [*ks, zero, one, one, one, one], step, MAX_CF_STEPS, name)[-1]


def incbcf(c, a, b, x):
    """Cephes ``incbcf``: the continued fraction for x (a+b-2) < a - 1."""
    one = k(c, 1.0)
    return _fraction(c, x, [a, add(c, a, b), a, add(c, a, one), add(c, mul(c, a, k(c, 0.0)), one),
                            sub(c, b, one), add(c, a, one), add(c, a, k(c, 2.0))], "incbcf")


def incbd(c, a, b, x, xc):
    """Cephes ``incbd``: the continued fraction in x / (1 - x), divided by 1 - x
    (xc, given: after the symmetry, 1 - x recomputed would not be the input)."""
    one = k(c, 1.0)
    w = _fraction(c, div(c, x, xc), [a, sub(c, b, one), a, add(c, a, one), add(c, mul(c, a, k(c, 0.0)), one),
                                     add(c, a, b), add(c, a, one), add(c, a, k(c, 2.0))], "incbd")
    return div(c, w, xc)


def _fraction_method(c, a, b, x, xc):
    """I_x(a, b) by a continued fraction, for x <= a / (a+b) (after the swap;
    xc = 1 - x as ``_prefactor`` takes them)."""
    use_cf = lt(c, sub(c, mul(c, x, sub(c, add(c, a, b), k(c, 2.0))), sub(c, a, k(c, 1.0))), 0.0)
    w = c.op("Expand", k(c, np.nan), c.op("Shape", a))
    w = on_subset(c, use_cf, [a, b, x], incbcf, w)
    w = on_subset(c, c.op("Not", use_cf), [a, b, x, xc], incbd, w)
    return _prefactor(c, a, b, x, xc, w)


def _special(c, a, b, x):
    """``(value, regular)``: SciPy's values at NaN, zero, infinite and
    out-of-domain arguments, and where none applies."""
    nan = k(c, np.nan)
    a0, b0 = c.op("Equal", a, k(c, 0.0)), c.op("Equal", b, k(c, 0.0))
    a_inf, b_inf = c.op("IsInf", a), c.op("IsInf", b)
    x0, x1 = c.op("Equal", x, k(c, 0.0)), c.op("Equal", x, k(c, 1.0))
    value = where(c, c.op("Or", b0, a_inf), k(c, 0.0), nan)
    value = where(c, c.op("Or", a0, b_inf), k(c, 1.0), value)
    value = where(c, x1, k(c, 1.0), value)
    value = where(c, x0, k(c, 0.0), value)
    bad = c.op("Or", c.op("Or", lt(c, a, 0.0), lt(c, b, 0.0)), c.op("Or", lt(c, x, 0.0), c.op("Greater", x, k(c, 1.0))))
    bad = c.op("Or", bad, c.op("Or", c.op("Or", c.op("IsNaN", a), c.op("IsNaN", b)), c.op("IsNaN", x)))
    bad = c.op("Or", bad, c.op("Or", c.op("And", a0, b0), c.op("And", a_inf, b_inf)))
    value = where(c, bad, nan, value)
    special = c.op("Or", c.op("Or", bad, c.op("Or", a0, b0)), c.op("Or", c.op("Or", a_inf, b_inf), c.op("Or", x0, x1)))
    return value, c.op("Not", special)


def _unit_interval(c, v):
    """v taken into [0, 1], NaN kept: the prefactor's rounding (lgamma(1e-300) + lgamma(1e4) -
    lgamma(1e4 + 1e-300) cancels to 8e4 eps) can carry a value just past 1."""
    return where(c, lt(c, v, 0.0), k(c, 0.0), where(c, c.op("Greater", v, k(c, 1.0)), k(c, 1.0), v))


def _direct(c, a, b, x, regular, into, split_at_mean=False):
    """``(d, flip)``: Cephes ``incbet``'s branch per element where ``regular``
    (``into`` elsewhere), ``d`` the value the branch computes, I_x(a, b) or,
    where ``flip`` (the symmetry was applied: x > a / (a+b)), 1 - I_x(a, b)
    = I_{1-x}(b, a), each to its own relative accuracy. With
    ``split_at_mean``, above the mean the series for the complement (in
    (b, a, 1 - x)) is taken wherever it applies, also where Cephes takes
    the series for I (b x <= 1: the complement, the smaller one there, is
    then computed directly; the continued fractions are not, which converge
    slowly near the mean)."""
    above_mean = c.op("Greater", x, div(c, a, add(c, a, b)))
    series = c.op("And", c.op("LessOrEqual", mul(c, b, x), k(c, 1.0)), c.op("LessOrEqual", x, k(c, 0.95)))
    xc = sub(c, k(c, 1.0), x)
    # after the swap (b, a, 1 - x): the series again where b' x' <= 1, x' <= 0.95
    flip_series_applies = c.op("And", c.op("LessOrEqual", mul(c, a, xc), k(c, 1.0)), c.op("LessOrEqual", xc, k(c, 0.95)))
    if split_at_mean:
        series = c.op("And", series, c.op("Not", c.op("And", above_mean, flip_series_applies)))
    series = c.op("And", regular, series)
    rest = c.op("And", regular, c.op("Not", series))
    # very unequal shapes: TOMS 708 bratio's choice (incbeta_toms_f64) instead of Cephes' below
    toms = c.op("And", rest, c.op("And", c.op("GreaterOrEqual", c.op("Max", a, b), k(c, TOMS_FROM)),
                                  c.op("GreaterOrEqual", c.op("Min", a, b), k(c, TOMS_MIN_SHAPE))))
    rest = c.op("And", rest, c.op("Not", toms))
    flip = c.op("And", rest, above_mean)
    flip_series = c.op("And", flip, flip_series_applies)
    asym = c.op("And", rest, asymptotic_region(c, a, b, x))
    flip_cf = c.op("And", flip, c.op("Not", c.op("Or", flip_series, asym)))
    plain_cf = c.op("And", rest, c.op("Not", c.op("Or", flip, asym)))
    d = on_subset(c, series, [a, b, x, xc], pseries, into)
    d = on_subset(c, flip_series, [b, a, xc, x], pseries, d)
    d = on_subset(c, plain_cf, [a, b, x, xc], _fraction_method, d)
    d = on_subset(c, flip_cf, [b, a, xc, x], _fraction_method, d)
    # one subset for both sides: (b, a, 1 - x) above the mean, as for the fractions
    swapped = [where(c, flip, b, a), where(c, flip, a, b), where(c, flip, xc, x), where(c, flip, x, xc)]
    d = on_subset(c, asym, swapped, basym, d)
    d, toms_flip = toms708(c, a, b, x, xc, toms, d, pseries, _prefactor)
    return d, c.op("Or", flip, toms_flip)


def betainc(c, a, b, x):
    """``scipy.special.betainc(a, b, x)``: the regularized incomplete beta
    function I_x(a, b) (see the module docstring); float64 of any
    broadcastable shapes in, their broadcast shape out."""
    shape, (a, b, x) = flat_args(c, a, b, x)
    value, regular = _special(c, a, b, x)
    d, flip = _direct(c, a, b, x, regular, value)
    # the complement as Cephes forms it (it clamps 1 - t at 1 - MACHEP; the rounded 1 - t is closer)
    value = where(c, flip, sub(c, k(c, 1.0), d), d)
    return c.op("Reshape", _unit_interval(c, value), shape, allowzero=1)


def betainc_pair(c, a, b, x):
    """``(I, 1 - I)``: I_x(a, b) and its complement I_{1-x}(b, a) from one
    evaluation (1-D float64 of one length in and out): one of them by
    Cephes' branches (``_direct`` with ``split_at_mean``: the complement
    wherever its series applies above the mean), to its own relative
    accuracy, the other as 1 minus it; SciPy's values at special arguments."""
    value, regular = _special(c, a, b, x)
    d, flip = _direct(c, a, b, x, regular, value, split_at_mean=True)
    one = k(c, 1.0)
    rest = sub(c, one, d)
    special = c.op("Not", regular)
    i = _unit_interval(c, where(c, flip, rest, d))
    ic = _unit_interval(c, where(c, flip, d, where(c, special, sub(c, one, value), rest)))
    return i, ic


FORMULAS = {"betainc": betainc}
