"""float64 regularized incomplete gamma functions ``gammainc`` (P) and
``gammaincc`` (Q), as ``scipy.special`` computes them: Cephes ``igam``/
``igamc`` with SciPy's 2016 additions (xsf ``cephes/igam.h``), the branch
chosen per element:

* ``igam_series``, DLMF 8.11.4: ``P = x^a e^-x / Gamma(a+1) sum x^n / (a+1)_n``;
* ``igamc_continued_fraction``, DLMF 8.9.2 (Legendre's continued fraction for Q);
* ``igamc_series``, DLMF 8.7.3: ``Q = -expm1(a log x - lgamma(1+a)) -
  x^a / Gamma(a) sum_{n>=1} (-x)^n / (n! (a+n))`` for small a and x;
* the prefactor ``x^a e^-x / Gamma(a)`` through the Lanczos sum (Boost's
  N=13, g=6.0247 approximation; Maddock et al., "Incomplete Gamma
  Functions", Boost.Math) where a and x are close, so that the large
  ``a log x - x`` and ``lgamma(a)`` do not cancel;
* Temme's uniform asymptotic expansion (DLMF 8.12.3/8.12.4,
  ``incgamma_temme_f64``) for a > 20 with |x - a| < 0.3 a: SciPy's region for
  a < 200; above it SciPy keeps the expansion to |x - a| < 4.5 sqrt(a) and
  runs its series and continued fraction in the rest of the band, which need
  ~9 sqrt(a) of their 2,000 steps (SciPy's values are truncated sums past
  a ~ 1e5, 1.0 relative error at a >= 1e8), so this superset is used instead.

Outside that band each element takes SciPy's method. An element whose series
has not converged within ``MAX_STEPS`` is NaN, never a truncated sum.
Special values as SciPy: NaN for NaN, a < 0 or x < 0; P(0, x>0) = 1, P(a, 0) = 0, P(inf, finite) = 0, P(inf, inf) = NaN, P(finite, inf) = 1 (and
Q = 1 - P at these points).

Bounds measured against mpmath (``tests/numerics/test_incomplete_gamma.py``)
are stated in ``ir/ops/special.py``.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sp

from backends.onnx.rules.common import F64
from backends.onnx.rules.iterative_f64 import converge, flat_args, on_subset
from backends.onnx.rules.mathfn import expm1
from backends.onnx.rules.incgamma_temme_f64 import asymptotic_series, temme_region
from backends.onnx.rules.special_f64 import add, div, k, lgamma_positive, log1pmx, lt, mul, poly, sub, where

MACHEP = 1.11022302462515654042e-16  # Cephes MACHEP (2^-53)
MAXLOG = 7.09782712893383996843e2
MAX_STEPS = 2000  # Cephes/SciPy igam_MAXITER
BIG, BIGINV = 4.503599627370496e15, 2.22044604925031308085e-16

# Lanczos approximation N=13, g=6.024680040776729583740234375 (Boost.Math lanczos13m53):
# sum_expg_scaled(a) = NUM(a) / DEN(a), DEN(a) = a (a+1) ... (a+11); ascending coefficients.
LANCZOS_G = 6.024680040776729583740234375
LANCZOS_NUM = (56906521.91347156388090791033559122686859, 103794043.1163445451906271053616070238554,
               86363131.28813859145546927288977868422342, 43338889.32467613834773723740590533316085,
               14605578.08768506808414169982791359218571, 3481712.15498064590882071018964774556468,
               601859.6171681098786670226533699352302507, 75999.29304014542649875303443598909137092,
               6955.999602515376140356310115515198987526, 449.9445569063168119446858607650988409623,
               19.51992788247617482847860966235652136208, 0.5098416655656676188125178644804694509993,
               0.006061842346248906525783753964555936883222)
LANCZOS_DEN = (0.0, 39916800.0, 120543840.0, 150917976.0, 105258076.0, 45995730.0, 13339535.0, 2637558.0,
               357423.0, 32670.0, 1925.0, 66.0, 1.0)

# lgamma(1 + e) = -euler e + sum_{j>=2} (-1)^j zeta(j) / j e^j  (DLMF 5.7.3), |e| <= 1/2: 60 terms
# leave a remainder below 2^-60 relative
LGAM1P = (0.0, -np.euler_gamma, *((-1.0) ** j * float(sp.zeta(j)) / j for j in range(2, 62)))


def lanczos_sum_expg_scaled(c, a):
    """Boost's ``lanczos_sum_expg_scaled(a)`` for a > 0: the rational sum in
    a (a <= 1) or in 1/a with reversed coefficients (a > 1, no overflow)."""
    small = div(c, poly(c, a, LANCZOS_NUM), poly(c, a, LANCZOS_DEN))
    inv = div(c, k(c, 1.0), c.op("Max", a, k(c, 1.0)))
    large = div(c, poly(c, inv, LANCZOS_NUM[::-1]), poly(c, inv, LANCZOS_DEN[::-1]))
    return where(c, c.op("LessOrEqual", a, k(c, 1.0)), small, large)


def lgam1p(c, a):
    """``lgamma(1 + a)`` for 0 < a (Cephes ``lgam1p``): the Taylor series of
    DLMF 5.7.3 for a <= 1/2, ``log(a) + `` the series at a - 1 for a < 3/2,
    else ``lgamma(1 + a)``."""
    near1 = poly(c, c.op("Min", a, k(c, 0.5)), LGAM1P)
    e = c.op("Min", c.op("Max", sub(c, a, k(c, 1.0)), k(c, -0.5)), k(c, 0.5))
    near2 = add(c, c.op("Log", a), poly(c, e, LGAM1P))
    far = lgamma_positive(c, add(c, a, k(c, 1.0)))
    return where(c, c.op("LessOrEqual", a, k(c, 0.5)), near1, where(c, lt(c, a, 1.5), near2, far))


def igam_fac(c, a, x):
    """``x^a e^-x / Gamma(a)`` (xsf ``igam_fac``): ``exp(a log x - x -
    lgamma(a))`` (0 below e^-MAXLOG) where |a - x| > 0.4 a, else the Lanczos
    form (its ``exp(a - x) (x/fac)^a`` for a, x < 200, its ``log1pmx`` form
    beyond)."""
    direct = sub(c, sub(c, mul(c, a, c.op("Log", x)), x), lgamma_positive(c, a))
    direct = where(c, lt(c, direct, -MAXLOG), k(c, 0.0), c.op("Exp", direct))
    fac = add(c, a, k(c, LANCZOS_G - 0.5))
    res = div(c, c.op("Sqrt", div(c, fac, k(c, math.e))), lanczos_sum_expg_scaled(c, a))
    small = mul(c, c.op("Exp", sub(c, a, x)), c.op("Pow", div(c, x, fac), a))
    num = sub(c, sub(c, x, a), k(c, LANCZOS_G - 0.5))
    large = c.op("Exp", add(c, mul(c, a, log1pmx(c, div(c, num, fac))),
                          div(c, mul(c, x, k(c, 0.5 - LANCZOS_G)), fac)))
    both_small = c.op("And", lt(c, a, 200.0), lt(c, x, 200.0))
    lanczos = mul(c, res, where(c, both_small, small, large))
    far = c.op("Greater", c.op("Abs", sub(c, a, x)), mul(c, k(c, 0.4), c.op("Abs", a)))
    return where(c, far, direct, lanczos)


def igam_series(c, a, x):
    """P(a, x) by DLMF 8.11.4 (xsf ``igam_series``)."""
    def step(c, r, term, total):
        r = add(c, r, k(c, 1.0))
        term = mul(c, term, div(c, x, r))
        total = add(c, total, term)
        return [r, term, total], c.op("LessOrEqual", term, mul(c, k(c, MACHEP), total))
    one = c.op("Expand", k(c, 1.0), c.op("Shape", a))
    fac = igam_fac(c, a, x)
    vanishes = c.op("Equal", fac, k(c, 0.0))  # SciPy returns 0 before summing
    _, _, total = converge(c, [a, one, one], step, MAX_STEPS, "igam_series", skip=vanishes)
    return where(c, vanishes, k(c, 0.0), div(c, mul(c, total, fac), a))


def igamc_continued_fraction(c, a, x):
    """Q(a, x) by DLMF 8.9.2 (xsf ``igamc_continued_fraction``: the
    convergents p/q renormalized by 2^-52 when |p| exceeds 2^52)."""
    def step(c, y, z, n, pkm2, pkm1, qkm2, qkm1, ans):
        n = add(c, n, k(c, 1.0))
        y = add(c, y, k(c, 1.0))
        z = add(c, z, k(c, 2.0))
        yc = mul(c, y, n)
        pk = sub(c, mul(c, pkm1, z), mul(c, pkm2, yc))
        qk = sub(c, mul(c, qkm1, z), mul(c, qkm2, yc))
        nonzero = c.op("Not", c.op("Equal", qk, k(c, 0.0)))
        r = div(c, pk, where(c, nonzero, qk, k(c, 1.0)))
        t = where(c, nonzero, c.op("Abs", div(c, sub(c, ans, r), r)), k(c, 1.0))
        ans = where(c, nonzero, r, ans)
        scale = where(c, c.op("Greater", c.op("Abs", pk), k(c, BIG)), k(c, BIGINV), k(c, 1.0))
        state = [y, z, n, mul(c, pkm1, scale), mul(c, pk, scale), mul(c, qkm1, scale), mul(c, qk, scale), ans]
        return state, c.op("LessOrEqual", t, k(c, MACHEP))
    y = sub(c, k(c, 1.0), a)
    z = add(c, add(c, x, y), k(c, 1.0))
    zero = mul(c, a, k(c, 0.0))
    one = add(c, zero, k(c, 1.0))
    pkm1 = add(c, x, k(c, 1.0))
    qkm1 = mul(c, z, x)
    init = [y, z, zero, one, pkm1, x, qkm1, div(c, pkm1, qkm1)]
    fac = igam_fac(c, a, x)
    vanishes = c.op("Equal", fac, k(c, 0.0))  # SciPy returns 0 before the fraction (x ~ 1e300 overflows it)
    ans = converge(c, init, step, MAX_STEPS, "igamc_fraction", skip=vanishes)[-1]
    return where(c, vanishes, k(c, 0.0), mul(c, ans, fac))


def igamc_series(c, a, x):
    """Q(a, x) by DLMF 8.7.3 (xsf ``igamc_series``), for small a and x."""
    def step(c, n, fac, total):
        n = add(c, n, k(c, 1.0))
        fac = mul(c, fac, div(c, c.op("Neg", x), n))
        term = div(c, fac, add(c, a, n))
        total = add(c, total, term)
        return [n, fac, total], c.op("LessOrEqual", c.op("Abs", term), mul(c, k(c, MACHEP), c.op("Abs", total)))
    zero = mul(c, a, k(c, 0.0))
    _, _, total = converge(c, [zero, add(c, zero, k(c, 1.0)), zero], step, MAX_STEPS, "igamc_series")
    logx = c.op("Log", x)
    head = c.op("Neg", expm1(c, sub(c, mul(c, a, logx), lgam1p(c, a)), F64))
    return sub(c, head, mul(c, c.op("Exp", sub(c, mul(c, a, logx), lgamma_positive(c, a))), total))


def _special(c, a, x, complement: bool):
    """``(value, regular)``: SciPy's values at NaN, negative, zero and
    infinite arguments (as P; Q when ``complement``), and where none applies."""
    nan = k(c, np.nan)
    zero, one = (k(c, 1.0), k(c, 0.0)) if complement else (k(c, 0.0), k(c, 1.0))
    a_inf, x_inf = c.op("IsInf", a), c.op("IsInf", x)
    x_pos = c.op("Greater", x, k(c, 0.0))
    value = where(c, x_inf, one, nan)
    value = where(c, a_inf, where(c, x_inf, nan, zero), value)
    value = where(c, c.op("Equal", x, k(c, 0.0)), zero, value)
    value = where(c, c.op("Equal", a, k(c, 0.0)), where(c, x_pos, one, nan), value)
    bad = c.op("Or", c.op("Or", lt(c, a, 0.0), lt(c, x, 0.0)), c.op("Or", c.op("IsNaN", a), c.op("IsNaN", x)))
    value = where(c, bad, nan, value)
    special = c.op("Or", c.op("Or", bad, c.op("Or", a_inf, x_inf)),
                   c.op("Or", c.op("Equal", a, k(c, 0.0)), c.op("Equal", x, k(c, 0.0))))
    return value, c.op("Not", special)


def _pick(c, complement, q_form, p_form):
    """``q_form`` where ``complement`` (a Python bool, or a bool value per element), else ``p_form``."""
    if isinstance(complement, bool):
        return q_form if complement else p_form
    return c.op("Where", complement, q_form, p_form)


def _methods(c, a, x, complement: bool):
    """SciPy's choice of method for P (Q when ``complement``): the masks
    ``(cf, q_series)`` of the continued fraction and of ``igamc_series``
    (both give Q); ``igam_series`` (P) takes the rest."""
    if complement:
        cf = c.op("And", c.op("Greater", x, k(c, 1.1)), c.op("GreaterOrEqual", x, a))
        lo = c.op("LessOrEqual", x, k(c, 0.5))
        safe_x = where(c, lo, x, k(c, 0.25))
        # Where has no bool kernel in onnxruntime: the threshold on a is selected instead
        a_max = where(c, lo, div(c, k(c, -0.4), c.op("Log", safe_x)), mul(c, x, k(c, 1.1)))
        return cf, c.op("Not", c.op("Or", c.op("Greater", x, k(c, 1.1)), c.op("Less", a_max, a)))
    upper = c.op("And", c.op("Greater", x, k(c, 1.0)), c.op("Greater", x, a))
    cf = c.op("And", upper, c.op("Greater", x, k(c, 1.1)))
    return cf, c.op("And", upper, c.op("Not", cf))


def _incomplete_gamma(c, a, x, complement):
    """P(a, x), or Q(a, x) where ``complement`` (a bool, or a 1-D bool value
    beside 1-D ``a`` and ``x``), each by SciPy's choice of method for it."""
    shape = None
    if isinstance(complement, bool):
        shape, (a, x) = flat_args(c, a, x)
    asked = [complement] if isinstance(complement, bool) else [False, True]
    forms = {}
    for q in asked:
        forms[q] = (*_special(c, a, x, q), *_methods(c, a, x, q))
    if isinstance(complement, bool):
        value, regular, cf, q_series = forms[complement]
    else:  # bool masks by And/Or: Where has no bool kernel in onnxruntime
        value = c.op("Where", complement, forms[True][0], forms[False][0])
        regular, cf, q_series = (c.op("Or", c.op("And", complement, qf), c.op("And", c.op("Not", complement), pf))
                                 for qf, pf in zip(forms[True][1:], forms[False][1:]))
    temme = c.op("And", regular, temme_region(c, a, x))
    regular = c.op("And", regular, c.op("Not", temme))
    cf = c.op("And", regular, cf)
    q_series = c.op("And", regular, q_series)
    p_series = c.op("And", regular, c.op("Not", c.op("Or", cf, q_series)))
    # every value computed as the function asked for: P from Q and Q from P by 1 - v
    args = [a, x] if isinstance(complement, bool) else [a, x, complement]

    def as_asked(method, gives_q: bool):
        def run(c, a, x, *flag):
            v = method(c, a, x)
            asked_q = complement if not flag else flag[0]
            return _pick(c, asked_q, v, sub(c, k(c, 1.0), v)) if gives_q else _pick(c, asked_q, sub(c, k(c, 1.0), v), v)
        return run
    def temme_as_asked(c, a, x, *flag):
        sign = k(c, 1.0 if complement else -1.0) if not flag else where(c, flag[0], k(c, 1.0), k(c, -1.0))
        return asymptotic_series(c, a, x, sign)
    value = on_subset(c, temme, args, temme_as_asked, value)
    value = on_subset(c, p_series, args, as_asked(igam_series, False), value)
    value = on_subset(c, cf, args, as_asked(igamc_continued_fraction, True), value)
    value = on_subset(c, q_series, args, as_asked(igamc_series, True), value)
    return value if shape is None else c.op("Reshape", value, shape, allowzero=1)


def gamma_tail(c, a, x, upper):
    """Q(a, x) where ``upper``, else P(a, x), each as ``gammaincc``/``gammainc``
    computes it: 1-D float64 ``a``, ``x`` and bool ``upper`` of one length."""
    return _incomplete_gamma(c, a, x, upper)


def gammainc(c, a, x):
    """``scipy.special.gammainc(a, x)``: the regularized lower incomplete
    gamma function P(a, x) (see the module docstring)."""
    return _incomplete_gamma(c, a, x, complement=False)


def gammaincc(c, a, x):
    """``scipy.special.gammaincc(a, x)``: the regularized upper incomplete
    gamma function Q(a, x) = 1 - P(a, x) (see the module docstring)."""
    return _incomplete_gamma(c, a, x, complement=True)


FORMULAS = {"gammainc": gammainc, "gammaincc": gammaincc}
