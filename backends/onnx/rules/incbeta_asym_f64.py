"""The asymptotic expansion of I_x(a, b) for large a and b near the mean
(A. R. DiDonato & A. H. Morris, "Algorithm 708: Significant digit
computation of the incomplete beta function ratios", ACM TOMS 18 (1992),
procedure BASYM; Temme's uniform expansion in the error function, N. M.
Temme, J. Comput. Appl. Math. 41 (1992)), used by ``incbeta_f64`` where its
continued fractions converge slowly: min(a, b) > 100 and
``lambda = a - (a + b) x`` with 0 <= lambda <= 0.03 min(a, b), TOMS 708
``bratio``'s region for BASYM (x at or below the mean a / (a + b); above it
the expansion gives I_{1-x}(b, a)).

With h = min(a, b) / max(a, b), f = a rlog1(-lambda/a) + b rlog1(lambda/b)
(rlog1(u) = u - log(1 + u)) and z0 = sqrt(f),

    I_x(a, b) = (2/sqrt(pi)) e^-f e^-bcorr(a, b) sum_n d_n w0^n J_n(z0),

J_0 = erfcx(z0) sqrt(pi)/4, J_1 = 2^-3/2, J_n = 2^-3/2 (2f)^((n-1)/2) z + (n-1) J_(n-2)
(the recurrence of BASYM's j0, j1), the coefficients d_n from the series of
BASYM's a0/b0/c/d, all unrolled to its 20 terms; the sum stops, as BASYM's,
once a pair of terms is below eps of it (masked here), so terms that
overflow past that point are never added. ``bcorr`` = del(a) + del(b) -
del(a + b), del the Stirling correction of lgamma (DLMF 5.11.1).
"""

from __future__ import annotations

import math

from backends.onnx.rules.common import F64
from backends.onnx.rules.mathfn import log1p
from backends.onnx.rules.special_f64 import add, div, erfcx, k, lgamma_positive, log1pmx, mul, poly, sub, where

TERMS = 12  # BASYM runs to 20: for min(a, b) > 100 the pairs of terms fall by ~1e-2 each (measured)
EPS = 2.0 ** -52
STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360)  # B_2k / (2k (2k-1))


def stirling_correction(c, x):
    """``lgamma(x) - ((x - 1/2) log x - x + log(2 pi) / 2)`` for x >= 20 (DLMF 5.11.1)."""
    r = div(c, k(c, 1.0), x)
    return mul(c, r, poly(c, mul(c, r, r), STIRLING))


STIRLING_FROM = 20.0  # lgamma's Stirling series below, to 1e-17 absolute from here
def algdiv(c, s, l):
    """``log(Gamma(l) / Gamma(l + s))`` for s > 0 and l >= s: where l >= 20
    Stirling's series for the difference, ``-(l - 1/2) log1p(s/l) - s log(l + s)
    + s + corr(l) - corr(l + s)`` (TOMS 708 ``algdiv``'s form), so that a tiny s
    next to a large l keeps its few-eps relative accuracy (the lgamma difference
    loses |lgamma l| eps: 8e4 eps at l = 1e4); plain lgamma below."""
    stirling = c.op("GreaterOrEqual", l, k(c, STIRLING_FROM))
    safe_l = c.op("Max", l, k(c, STIRLING_FROM))
    safe_ls = add(c, safe_l, s)
    difference = add(c, c.op("Neg", mul(c, sub(c, safe_l, k(c, 0.5)), log1p(c, div(c, s, safe_l), F64))),
                     sub(c, s, mul(c, s, c.op("Log", safe_ls))),
                     sub(c, stirling_correction(c, safe_l), stirling_correction(c, safe_ls)))
    plain = sub(c, lgamma_positive(c, l), lgamma_positive(c, add(c, l, s)))
    return where(c, stirling, difference, plain)


def asymptotic_region(c, a, b, x):
    """min(a, b) > 100 and |a - (a + b) x| <= 0.03 min(a, b) (TOMS 708 ``bratio``)."""
    small = c.op("Min", a, b)
    lam = c.op("Abs", sub(c, a, mul(c, add(c, a, b), x)))
    return c.op("And", c.op("Greater", small, k(c, 100.0)), c.op("LessOrEqual", lam, mul(c, k(c, 0.03), small)))


def basym(c, a, b, x, y):
    """I_x(a, b) for 1-D float64 ``a``, ``b``, ``x`` with x <= a / (a + b) in
    ``asymptotic_region`` and ``y = 1 - x`` (the smaller of x, y exact, the
    other its rounded complement): TOMS 708 BASYM with lambda as ``bratio``
    forms it, ``a - (a + b) x`` where a <= b and ``(a + b) y - b`` where
    a > b, so its rounding is eps min(a, b), not eps max(a, b)."""
    e0, e1 = 2.0 / math.sqrt(math.pi), 2.0 ** -1.5
    lam = where(c, c.op("LessOrEqual", a, b), sub(c, a, mul(c, add(c, a, b), x)), sub(c, mul(c, add(c, a, b), y), b))
    lam = c.op("Max", lam, k(c, 0.0))
    a_small = c.op("Less", a, b)
    h = where(c, a_small, div(c, a, b), div(c, b, a))
    r0 = div(c, k(c, 1.0), add(c, h, k(c, 1.0)))
    r1 = div(c, sub(c, b, a), where(c, a_small, b, a))
    w0 = div(c, k(c, 1.0), c.op("Sqrt", mul(c, where(c, a_small, a, b), add(c, h, k(c, 1.0)))))
    f = c.op("Neg", add(c, mul(c, a, log1pmx(c, c.op("Neg", div(c, lam, a)))), mul(c, b, log1pmx(c, div(c, lam, b)))))
    f = c.op("Max", f, k(c, 0.0))
    t = c.op("Exp", c.op("Neg", f))
    z0 = c.op("Sqrt", f)
    z = mul(c, k(c, 0.5 / e1), z0)
    z2 = add(c, f, f)
    a0 = {1: mul(c, k(c, 2.0 / 3.0), r1)}
    cc = {1: mul(c, k(c, -0.5), a0[1])}
    d = {1: c.op("Neg", cc[1])}
    j0 = mul(c, k(c, 0.5 / e0), erfcx(c, z0))
    j1 = add(c, mul(c, z0, k(c, 0.0)), k(c, e1))
    total = add(c, j0, mul(c, d[1], w0, j1))
    s, h2, hn, w = k(c, 1.0), mul(c, h, h), k(c, 1.0), w0
    znm1, zn = z, z2
    stopped = c.op("Less", a, k(c, 0.0))  # all False
    for n in range(2, TERMS + 1, 2):
        hn = mul(c, h2, hn)
        a0[n] = div(c, mul(c, k(c, 2.0), r0, add(c, k(c, 1.0), mul(c, h, hn))), k(c, n + 2.0))
        s = add(c, s, hn)
        a0[n + 1] = div(c, mul(c, k(c, 2.0), r1, s), k(c, n + 3.0))
        for i in (n, n + 1):
            r = -0.5 * (i + 1)
            b0 = {1: mul(c, k(c, r), a0[1])}
            for m in range(2, i + 1):
                bsum = add(c, *(mul(c, k(c, j * r - (m - j)), a0[j], b0[m - j]) for j in range(1, m)))
                b0[m] = add(c, mul(c, k(c, r), a0[m]), div(c, bsum, k(c, float(m))))
            cc[i] = div(c, b0[i], k(c, i + 1.0))
            dsum = add(c, cc[i], *(mul(c, d[i - j], cc[j]) for j in range(1, i)))
            d[i] = c.op("Neg", dsum)
        j0 = add(c, mul(c, k(c, e1), znm1), mul(c, k(c, n - 1.0), j0))
        j1 = add(c, mul(c, k(c, e1), zn), mul(c, k(c, float(n)), j1))
        znm1, zn = mul(c, z2, znm1), mul(c, z2, zn)
        w = mul(c, w0, w)
        t0 = mul(c, d[n], w, j0)
        w = mul(c, w0, w)
        t1 = mul(c, d[n + 1], w, j1)
        total = where(c, stopped, total, add(c, total, add(c, t0, t1)))
        small = c.op("LessOrEqual", add(c, c.op("Abs", t0), c.op("Abs", t1)), mul(c, k(c, EPS), total))
        stopped = c.op("Or", stopped, small)
    bcorr = sub(c, add(c, stirling_correction(c, a), stirling_correction(c, b)),
                stirling_correction(c, add(c, a, b)))
    value = mul(c, k(c, e0), t, c.op("Exp", c.op("Neg", bcorr)), total)
    return where(c, c.op("Equal", t, k(c, 0.0)), k(c, 0.0), value)
