"""I_x(a, b) for very unequal shapes by TOMS 708 (A. R. DiDonato & A. H.
Morris, "Algorithm 708: Significant digit computation of the incomplete beta
function ratios", ACM TOMS 18 (1992), 360-373; the procedures ``bratio``,
``bfrac``, ``bgrat``, ``bup``, ``brcomp``, ``bcorr`` as SciPy's ``cdflib``
and R's ``toms708.c`` carry them), used by ``incbeta_f64`` where the larger
shape is at least ``TOMS_FROM``: there Cephes' continued fractions need more
than their 1,000 steps near the mean (NaN) and lose up to 1.7e-10 where they
converge.

``bratio``'s choice per element (after its swap to (b, a, 1 - x): for
min(a, b) > 1 where ``lambda = a - (a + b) x < 0``, else where x > 1/2):

* min(a, b) > 1: ``b0 < 40`` and ``b0 x0 <= 0.7``: the power series (BPSER;
  ``incbeta_f64.pseries``, the same series); ``b0 < 40`` otherwise: BUP
  (``I_x(a, b) - I_x(a + n, b)``, n = the integer part of b0, DLMF 8.17.20)
  plus BGRAT for the fractional part (x0 > 0.7) or the power series (x0 <=
  0.7); ``b0 >= 40``: BASYM (``incbeta_asym_f64``) where min(a, b) > 100 and
  lambda <= 0.03 min(a, b), BFRAC (TOMS 708's own continued fraction,
  lambda formed without cancellation) elsewhere;
* min(a, b) <= 1 < max(a, b): the power series for I (b0 <= 1, or x0 < 0.1
  with (x0 b0)^a0 <= 0.7) or for its complement (x0 >= 0.3), else BGRAT for
  the complement I_{y0}(b0, a0) (b0 > 15, which ``TOMS_FROM`` ensures).

BGRAT is the asymptotic expansion for a large and b <= 1 (Temme; TOMS 708
section 5), its incomplete gamma ratio Q(b, z) (TOMS 708's GRAT1) by this
project's ``gammaincc`` (``incgamma_f64``). BFRAC and BUP run in ONNX Loops
(``iterative_f64.converge``): an element that has not converged within the
step limit is NaN.
"""

from __future__ import annotations

import math

from backends.onnx.rules.common import F64
from backends.onnx.rules.incbeta_asym_f64 import algdiv, basym
from backends.onnx.rules.incgamma_f64 import gammaincc
from backends.onnx.rules.iterative_f64 import converge, on_subset
from backends.onnx.rules.mathfn import log1p
from backends.onnx.rules.special_f64 import add, div, k, lgamma_positive, log1pmx, lt, mul, sub, where

TOMS_FROM = 1e5  # max(a, b) from which bratio's choice replaces Cephes' continued fractions
EPS = 2.0 ** -52  # TOMS 708's eps (spmpar(1)) for double
MAX_BFRAC_STEPS = 10_000  # R's toms708.c stops BFRAC there
BGRAT_TERMS = 30  # TOMS 708 BGRAT's array size
BCORR = (0.833333333333333e-01, -0.277777777760991e-02, 0.793650666825390e-03,
         -0.595202931351870e-03, 0.837308034031215e-03, -0.165322962780713e-02)  # TOMS 708 BCORR c0..c5


def bcorr(c, a, b):
    """``del(a) + del(b) - del(a + b)`` for a, b >= 8, del(x) = lgamma(x) -
    ((x - 1/2) log x - x + log(2 pi)/2) (TOMS 708 BCORR: del(b) - del(a + b)
    as one series in h = min/max, no cancellation when a << b)."""
    s, l = c.op("Min", a, b), c.op("Max", a, b)
    h = div(c, s, l)
    cc = div(c, h, add(c, h, k(c, 1.0)))
    x = div(c, k(c, 1.0), add(c, h, k(c, 1.0)))
    x2 = mul(c, x, x)
    sums = [k(c, 1.0)]
    for _ in range(5):  # s3, s5, ..., s11
        sums.append(add(c, k(c, 1.0), add(c, x, mul(c, x2, sums[-1]))))
    t = div(c, k(c, 1.0), mul(c, l, l))
    w = mul(c, k(c, BCORR[5]), sums[5])
    for i in range(4, -1, -1):
        w = add(c, mul(c, w, t), mul(c, k(c, BCORR[i]), sums[i]))
    w = mul(c, w, div(c, cc, l))
    t = div(c, k(c, 1.0), mul(c, s, s))
    ws = k(c, BCORR[5])
    for i in range(4, -1, -1):
        ws = add(c, mul(c, ws, t), k(c, BCORR[i]))
    return add(c, div(c, ws, s), w)


def brcomp(c, a, b, x, y, prefactor):
    """``x^a y^b / B(a, b)`` (TOMS 708 BRCOMP) for 1-D float64 a, b > 0, x + y = 1
    (the smaller exact): for a, b >= 8 ``exp(-(a rlog1(-lambda/a) + b
    rlog1(lambda/b))) sqrt(b x0 / (2 pi)) exp(-bcorr(a, b))`` (x0 = a / (a + b),
    lambda = a - (a + b) x formed on the side of the smaller shape), no large
    logarithms to cancel; else ``prefactor(c, a, b, x, y, a)`` (exp of
    ``a log x + b log y - log B(a, b)``, log B by ``algdiv``), as BRCOMP's
    a0 < 8 branches (``prefactor`` is ``incbeta_f64._prefactor``, passed in:
    that module builds on this one)."""
    a_le_b = c.op("LessOrEqual", a, b)
    h = where(c, a_le_b, div(c, a, b), div(c, b, a))
    x0 = where(c, a_le_b, div(c, h, add(c, h, k(c, 1.0))), div(c, k(c, 1.0), add(c, h, k(c, 1.0))))
    y0 = where(c, a_le_b, div(c, k(c, 1.0), add(c, h, k(c, 1.0))), div(c, h, add(c, h, k(c, 1.0))))
    lam = where(c, a_le_b, sub(c, a, mul(c, add(c, a, b), x)), sub(c, mul(c, add(c, a, b), y), b))

    def rlog1_or_log(e, v, v0):  # e - log(1 + e), log(1 + e) as log(v / v0) where |e| > 0.6
        far = c.op("Greater", c.op("Abs", e), k(c, 0.6))
        return where(c, far, sub(c, e, c.op("Log", div(c, v, v0))), c.op("Neg", log1pmx(c, e)))
    u = rlog1_or_log(c.op("Neg", div(c, lam, a)), x, x0)
    v = rlog1_or_log(div(c, lam, b), y, y0)
    z = c.op("Exp", c.op("Neg", add(c, mul(c, a, u), mul(c, b, v))))
    large = mul(c, k(c, 1.0 / math.sqrt(2.0 * math.pi)), c.op("Sqrt", mul(c, b, x0)), z,
                c.op("Exp", c.op("Neg", bcorr(c, a, b))))
    both_large = c.op("GreaterOrEqual", c.op("Min", a, b), k(c, 8.0))
    return where(c, both_large, large, prefactor(c, a, b, x, y, a))


def bfrac(c, a, b, x, y, lam, prefactor):
    """I_x(a, b) for a, b > 1 by TOMS 708 BFRAC: ``brcomp`` times its continued
    fraction in lambda = a - (a + b) x >= 0 (given, formed without
    cancellation), to 15 eps of relative change, at most ``MAX_BFRAC_STEPS``."""
    one = k(c, 1.0)
    cl = add(c, lam, one)
    c0 = div(c, b, a)
    c1 = add(c, div(c, one, a), one)
    yp1 = add(c, y, one)

    def step(c, n, p, s, an, bn, anp1, bnp1, r):
        n = add(c, n, one)
        t = div(c, n, a)
        w = mul(c, n, sub(c, b, n), x)
        e = div(c, a, s)
        alpha = mul(c, mul(c, p, add(c, p, c0), e, e), mul(c, w, x))
        e = div(c, add(c, t, one), add(c, c1, add(c, t, t)))
        beta = add(c, n, div(c, w, s), mul(c, e, add(c, cl, mul(c, n, yp1))))
        p = add(c, t, one)
        s = add(c, s, k(c, 2.0))
        anp1, an = add(c, mul(c, alpha, an), mul(c, beta, anp1)), anp1
        bnp1, bn = add(c, mul(c, alpha, bn), mul(c, beta, bnp1)), bnp1
        r0, r = r, div(c, anp1, bnp1)
        done = c.op("LessOrEqual", c.op("Abs", sub(c, r, r0)), mul(c, k(c, 15 * EPS), r))
        # rescaled by bnp1 (BFRAC's an /= bnp1, ...) for the next step
        return [n, p, s, div(c, an, bnp1), div(c, bn, bnp1), r, add(c, mul(c, r, k(c, 0.0)), one), r], done
    zero = mul(c, a, k(c, 0.0))
    init = [zero, add(c, zero, one), add(c, a, one), zero, add(c, zero, one), add(c, zero, one),
            div(c, cl, c1), div(c, c1, cl)]
    r = converge(c, init, step, MAX_BFRAC_STEPS, "bfrac")[-1]
    return mul(c, brcomp(c, a, b, x, y, prefactor), r)


def bup(c, a, b, x, y, n, prefactor):
    """``I_x(a, b) - I_x(a + n, b)`` (TOMS 708 BUP; DLMF 8.17.20: ``x^a y^b /
    (a B(a, b)) sum_{i<n} (a+b)_i / (a+1)_i x^i``) for 1-D float64 a, b > 0 and
    integer-valued n >= 1: the increasing terms (up to BUP's index of the
    largest) all summed, the rest until one is below eps of the sum."""
    one = k(c, 1.0)
    nm1 = sub(c, n, one)
    # BUP's k: (b - 1) x / y - a, clamped to [0, n - 1] (n - 1 where y <= 1e-4), for b > 1
    r = sub(c, div(c, mul(c, sub(c, b, one), x), y), a)
    kmax = where(c, c.op("Greater", y, k(c, 1e-4)), where(c, lt(c, r, 1.0), k(c, 0.0), c.op("Floor", r)), nm1)
    kmax = c.op("Min", where(c, c.op("Greater", b, one), kmax, k(c, 0.0)), nm1)
    apb, ap1 = add(c, a, b), add(c, a, one)

    def step(c, i, d, w):
        d = mul(c, d, div(c, add(c, apb, i), add(c, ap1, i)), x)
        w = add(c, w, d)
        i = add(c, i, one)
        small = c.op("And", c.op("Greater", i, kmax), c.op("LessOrEqual", d, mul(c, k(c, EPS), w)))
        return [i, d, w], c.op("Or", c.op("GreaterOrEqual", i, nm1), small)
    zero = mul(c, a, k(c, 0.0))
    _, _, w = converge(c, [zero, add(c, zero, one), add(c, zero, one)], step, 64, "bup",
                       skip=c.op("LessOrEqual", nm1, k(c, 0.0)))
    return mul(c, prefactor(c, a, b, x, y, one), w)


def bgrat(c, a, b, x, y, w):
    """``w + I_x(a, b)`` for a >= 15, 0 < b <= 1 (TOMS 708 BGRAT: the expansion
    ``I_x(a, b) ~ Gamma(a+b)/(Gamma(a) nu^b) sum_n d_n J_n`` in nu = a + (b-1)/2
    and z = -nu log x, J_0 = Q(b, z)/r, r = e^-z z^b / Gamma(b)), summed until a
    term is below 15 eps of ``sum + w / u``, at most 30 terms (masked)."""
    one = k(c, 1.0)
    bm1 = sub(c, b, one)
    nu = add(c, a, mul(c, k(c, 0.5), bm1))
    lnx = where(c, c.op("Greater", y, k(c, 0.375)), c.op("Log", x), log1p(c, c.op("Neg", y), F64))
    z = c.op("Neg", mul(c, nu, lnx))
    r = c.op("Exp", sub(c, sub(c, mul(c, b, c.op("Log", z)), z), lgamma_positive(c, b)))
    u = mul(c, r, c.op("Exp", c.op("Neg", add(c, algdiv(c, b, a), mul(c, b, c.op("Log", nu))))))
    vanishes = c.op("Equal", u, k(c, 0.0))
    safe_r = where(c, vanishes, one, r)
    safe_u = where(c, vanishes, one, u)
    q = gammaincc(c, b, z)
    v = div(c, k(c, 0.25), mul(c, nu, nu))
    t2 = mul(c, k(c, 0.25), lnx, lnx)
    ell = div(c, w, safe_u)
    j = div(c, q, safe_r)
    total, t, cn, n2 = j, k(c, 1.0), 1.0, 0.0
    cs, ds = [], []
    stopped = c.op("Less", a, k(c, 0.0))  # all False
    for n in range(1, BGRAT_TERMS + 1):
        bp2n = add(c, b, k(c, n2))
        j = mul(c, add(c, mul(c, bp2n, add(c, bp2n, one), j), mul(c, add(c, z, bp2n, one), t)), v)
        n2 += 2.0
        t = mul(c, t, t2)
        cn /= n2 * (n2 + 1.0)
        cs.append(cn)
        s = k(c, 0.0)
        for i in range(1, n):
            coef = sub(c, mul(c, b, k(c, float(i))), k(c, float(n)))  # b - n + (i - 1) b
            s = add(c, s, mul(c, coef, k(c, cs[i - 1]), ds[n - i - 1]))
        ds.append(add(c, mul(c, bm1, k(c, cn)), div(c, s, k(c, float(n)))))
        dj = mul(c, ds[-1], j)
        total = where(c, stopped, total, add(c, total, dj))
        stopped = c.op("Or", stopped, c.op("LessOrEqual", c.op("Abs", dj), mul(c, k(c, 15 * EPS), add(c, total, ell))))
    return where(c, vanishes, w, add(c, w, mul(c, u, total)))


def _grat_140(c, a0, b0, x0, y0, series, prefactor):
    """I_{x0}(a0, b0) for 1 < b0 < 40 < a0 (TOMS 708 ``bratio`` label 140): BUP
    down to the fractional part f of b0 (in (0, 1]), then the power series
    (x0 <= 0.7) or BGRAT (a0 > 15 here) for I_{x0}(a0, f)."""
    n = c.op("Floor", b0)
    f = sub(c, b0, n)
    whole = c.op("Equal", f, k(c, 0.0))
    n = where(c, whole, sub(c, n, k(c, 1.0)), n)
    f = where(c, whole, k(c, 1.0), f)
    w = bup(c, f, a0, y0, x0, n, prefactor)
    near = c.op("LessOrEqual", x0, k(c, 0.7))
    d = c.op("Expand", k(c, float("nan")), c.op("Shape", a0))
    d = on_subset(c, near, [a0, f, x0, y0, w], lambda c, a, f, x, y, w: add(c, w, series(c, a, f, x, y)), d)
    return on_subset(c, c.op("Not", near), [a0, f, x0, y0, w], bgrat, d)


def toms708(c, a, b, x, y, mask, into, series, prefactor):
    """``(d, flip)`` for 1-D float64 a, b, x, y = 1 - x (as ``incbeta_f64``
    takes them) where ``mask`` (regular elements with max(a, b) >= TOMS_FROM
    outside Cephes' power series): ``d`` = I_x(a, b), or 1 - I_x(a, b) =
    I_{1-x}(b, a) where ``flip``, by the method ``bratio`` picks (see the
    module docstring), each to its own relative accuracy; ``into`` elsewhere
    (``flip`` False there). ``series`` and ``prefactor`` are ``incbeta_f64``'s
    ``pseries`` and ``_prefactor`` (passed in: that module calls this one)."""
    one = k(c, 1.0)
    big = c.op("Greater", c.op("Min", a, b), one)
    lam = where(c, c.op("Greater", a, b), sub(c, mul(c, add(c, a, b), y), b), sub(c, a, mul(c, add(c, a, b), x)))
    swap = c.op("Or", c.op("And", big, lt(c, lam, 0.0)),
                c.op("And", c.op("Not", big), c.op("Greater", x, k(c, 0.5))))
    a0, b0 = where(c, swap, b, a), where(c, swap, a, b)
    x0, y0 = where(c, swap, y, x), where(c, swap, x, y)
    lam0 = c.op("Abs", lam)

    def on(m):
        return c.op("And", mask, m)
    b0_small = lt(c, b0, 40.0)
    series_1 = c.op("And", b0_small, c.op("LessOrEqual", mul(c, b0, x0), k(c, 0.7)))
    small = c.op("Min", a0, b0)
    fraction = c.op("Or", c.op("LessOrEqual", small, k(c, 100.0)), c.op("Greater", lam0, mul(c, k(c, 0.03), small)))
    big_series = on(c.op("And", big, series_1))
    big_140 = on(c.op("And", big, c.op("And", b0_small, c.op("Not", series_1))))
    big_frac = on(c.op("And", big, c.op("And", c.op("Not", b0_small), fraction)))
    big_asym = on(c.op("And", big, c.op("And", c.op("Not", b0_small), c.op("Not", fraction))))
    # min(a, b) <= 1 < max(a, b) (bratio label 20)
    series_i = c.op("Or", c.op("LessOrEqual", b0, one),
                    c.op("And", lt(c, x0, 0.1), c.op("LessOrEqual", c.op("Pow", mul(c, x0, b0), a0), k(c, 0.7))))
    series_c = c.op("And", c.op("Not", series_i), c.op("GreaterOrEqual", x0, k(c, 0.3)))
    small_i = on(c.op("And", c.op("Not", big), series_i))
    small_c = on(c.op("And", c.op("Not", big), series_c))
    small_grat = on(c.op("And", c.op("Not", big), c.op("Not", c.op("Or", series_i, series_c))))
    args = [a0, b0, x0, y0]
    d = on_subset(c, c.op("Or", big_series, small_i), args, series, into)
    d = on_subset(c, small_c, [b0, a0, y0, x0], series, d)
    d = on_subset(c, big_140, args, lambda c, *v: _grat_140(c, *v, series, prefactor), d)
    d = on_subset(c, big_frac, [*args, lam0], lambda c, *v: bfrac(c, *v, prefactor), d)
    d = on_subset(c, big_asym, args, basym, d)
    d = on_subset(c, small_grat, [b0, a0, y0, x0], lambda c, b, a, y, x: bgrat(c, b, a, y, x, mul(c, b, k(c, 0.0))), d)
    complement = c.op("Or", small_c, small_grat)
    flip = c.op("And", mask, c.op("Or", c.op("And", swap, c.op("Not", complement)),
                                 c.op("And", c.op("Not", swap), complement)))
    return d, flip
