"""Temme's uniform asymptotic expansion of the regularized incomplete gamma
functions for large a (DLMF 8.12.3/8.12.4; N. M. Temme, "The asymptotic
expansion of the incomplete gamma functions", SIAM J. Math. Anal. 10 (1979);
DiDonato & Morris, ACM TOMS 12 (1986)), as SciPy's ``asymptotic_series`` in
xsf ``cephes/igam.h`` evaluates it:

    Q(a, x) = erfc(eta sqrt(a/2)) / 2 + e^(-a eta^2 / 2) / sqrt(2 pi a) sum_k c_k(eta) a^-k,
    P(a, x) = erfc(-eta sqrt(a/2)) / 2 - (the same sum),

eta = sign(x - a) sqrt(-2 log1pmx((x - a) / a)), ``c_k`` the degree-24
Taylor polynomials of ``incgamma_temme_coeffs.D`` (k < 25). The sum stops
where SciPy's does: before the first term larger than the one before it
(the series starts to diverge) and after the first one below 2^-53 of the
sum, here by masks over the 25 unrolled terms (no Loop).
"""

from __future__ import annotations

import math

from backends.onnx.rules.incgamma_temme_coeffs import D
from backends.onnx.rules.special_f64 import add, div, erfc, k, log1pmx, mul, poly, sub, where

SMALL = 20.0  # SciPy's igam_SMALL: the expansion is used for a > 20 ...
RATIO = 0.3  # ... with |x - a| < 0.3 a (igam_SMALLRATIO)
MACHEP = 2.0 ** -53


def temme_region(c, a, x):
    """Where the expansion is used: a > 20 and |x - a| < 0.3 a. This is
    SciPy's region for 20 < a < 200; above it SciPy narrows the band to
    |x - a| < 4.5 sqrt(a) and runs its series and continued fraction (up to
    2,000 steps, not enough past a ~ 1e5) outside it; the expansion is at
    least as accurate there as at a = 20 (every term has a smaller a^-k)."""
    band = c.op("Less", c.op("Abs", sub(c, x, a)), mul(c, k(c, RATIO), a))
    return c.op("And", c.op("Greater", a, k(c, SMALL)), band)


def asymptotic_series(c, a, x, sign):
    """Q(a, x) where ``sign`` is +1, P(a, x) where it is -1 (1-D float64
    ``a``, ``x``, ``sign`` of one length, elements of ``temme_region``)."""
    sigma = div(c, sub(c, x, a), a)
    root = c.op("Sqrt", mul(c, k(c, -2.0), log1pmx(c, sigma)))
    eta = where(c, c.op("Greater", x, a), root, where(c, c.op("Less", x, a), c.op("Neg", root), k(c, 0.0)))
    res = mul(c, k(c, 0.5), erfc(c, mul(c, mul(c, sign, eta), c.op("Sqrt", div(c, a, k(c, 2.0))))))
    total = mul(c, a, k(c, 0.0))
    previous = add(c, total, k(c, math.inf))
    stopped = c.op("Less", a, k(c, 0.0))  # all False (a > 20)
    afac = add(c, total, k(c, 1.0))
    for row in D:
        term = mul(c, poly(c, eta, row), afac)
        size = c.op("Abs", term)
        stopped = c.op("Or", stopped, c.op("Greater", size, previous))
        total = where(c, stopped, total, add(c, total, term))
        stopped = c.op("Or", stopped, c.op("Less", size, mul(c, k(c, MACHEP), c.op("Abs", total))))
        previous = size
        afac = div(c, afac, a)
    weight = div(c, c.op("Exp", mul(c, k(c, -0.5), mul(c, a, mul(c, eta, eta)))),
                 c.op("Sqrt", mul(c, k(c, 2 * math.pi), a)))
    return add(c, res, mul(c, sign, mul(c, weight, total)))
