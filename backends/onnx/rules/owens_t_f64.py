"""Owen's T function ``T(h, a)`` in float64 (the IR op ``owens_t``, SciPy's
``scipy.special.owens_t``), one model-local function ``OwensT`` per dtype.

The algorithm is Patefield & Tandy, "Fast and accurate calculation of
Owen's T function", J. Stat. Softw. 5(5), 2000, as SciPy's Cephes
``owens_t.c`` (after Boost's ``owens_t``) implements it:

* ``T(-h, a) = T(h, a)``, ``T(h, -a) = -T(h, a)``; for |a| > 1 their
  equation (2) maps to ``T(ah, 1/a)``: with ``Q`` the upper normal tail,
  ``T(h, a) = (Q(h) + Q(ah))/2 - Q(h) Q(ah) - T(ah, 1/a)`` when ah > 0.67,
  ``1/4 - P0(h) P0(ah) - T(ah, 1/a)`` (``P0(x) = erf(x/sqrt 2)/2``) else.
* For 0 <= a <= 1 the (h, a) cell of their table (breakpoints ``HRANGE``,
  ``ARANGE``) picks one of six fixed-length methods and its order:
  T1 (the series in a of ``exp(-h^2/2) h^2j/j!``, up to 18 terms),
  T2 and T3 (the series in h^-2 of ``Q``-moments, up to 31 terms; T3 with
  Chebyshev-economized coefficients), T4 (the series in a^2, up to 21
  terms), T5 (13-point Gauss quadrature of the defining integral) and T6
  (a near 1). One change to the table: where it picks T3 for h < 3.6 (its
  cells start at 3.36), T5 runs instead (T3 there is accurate to ~1e-17
  absolute, 1.2e-13 relative to T ~ 1e-4, as in SciPy; T5 to 1e-15).
  Each method runs on its own elements only
  (``iterative_f64.on_subset``); a method's order varies per element, and
  the terms past an element's order are masked, so every element gets the
  sum Cephes stops at.
* ``T(0, a) = atan(a)/(2 pi)``, ``T(h, 1) = Q(h) (1 - Q(h))/2``,
  ``T(h, 0) = 0``; ``T(+-inf, a) = 0``; ``T(h, +-inf) = +-Q(|h|)/2`` (the
  limit, as SciPy 1.17's xsf); NaN in either gives NaN.

Unlike Cephes, which computes ``exp(-h^2/2)`` and ``erfc(h/sqrt 2)`` from
the rounded ``h^2`` and ``h/sqrt 2`` (a relative error of ``h^2 eps``,
2e-13 at h = 38, where T is ~1e-300), the Gaussian factors here take
``h^2`` exactly (``special_f64.exp_square``) and ``Q(h)`` is
``exp(-h^2/2) erfcx(h/sqrt 2)/2`` (erfcx is flat, so rounding its argument
costs an ulp). The bounds measured against mpmath are in
``tests/numerics/test_owens_t.py``.
"""

from __future__ import annotations

import math

import numpy as np

from backends.onnx.rules.common import F64, I64
from backends.onnx.rules.iterative_f64 import flat_args, on_subset
from backends.onnx.rules.special_f64 import (PI, add, div, erf_small, erfc, erfcx_ratio, exp_square, k, lt, mul,
                                             sub, where)
from backends.onnx.rules.transcendental import atan_magnitude

SQRT_HALF = math.sqrt(0.5)
INV_2PI = 1 / (2 * PI)
INV_SQRT_2PI = 1 / math.sqrt(2 * PI)

# Patefield & Tandy's method table (Cephes owens_t.c): SELECT_METHOD[iaint * 15 + ihint]
# indexes ORD (the order) and METHODS (T1..T6), where ihint/iaint count the breakpoints below h/a.
HRANGE = (0.02, 0.06, 0.09, 0.125, 0.26, 0.4, 0.6, 1.6, 1.7, 2.33, 2.4, 3.36, 3.4, 4.8)
ARANGE = (0.025, 0.09, 0.15, 0.36, 0.5, 0.9, 0.99999)
SELECT_METHOD = (
    0, 0, 1, 12, 12, 12, 12, 12, 12, 12, 12, 15, 15, 15, 8,
    0, 1, 1, 2, 2, 4, 4, 13, 13, 14, 14, 15, 15, 15, 8,
    1, 1, 2, 2, 2, 4, 4, 14, 14, 14, 14, 15, 15, 15, 9,
    1, 1, 2, 4, 4, 4, 4, 6, 6, 15, 15, 15, 15, 15, 9,
    1, 2, 2, 4, 4, 5, 5, 7, 7, 16, 16, 16, 11, 11, 10,
    1, 2, 4, 4, 4, 5, 5, 7, 7, 16, 16, 16, 11, 11, 11,
    1, 2, 3, 3, 5, 5, 7, 7, 16, 16, 16, 16, 16, 11, 11,
    1, 2, 3, 3, 5, 5, 17, 17, 17, 17, 16, 16, 16, 11, 11)
ORD = (2, 3, 4, 5, 7, 10, 12, 18, 10, 20, 30, 0, 4, 7, 8, 20, 0, 0)
METHODS = (1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 4, 4, 4, 4, 5, 6)
# T3's economized coefficients (Cephes C[], Patefield & Tandy's c2)
T3_C = (
    0.99999999999999999999999729978162447266851932041876728736094298092917625009873,
    -0.99999999999999999999467056379678391810626533251885323416799874878563998732905968,
    0.99999999999999999824849349313270659391127814689133077036298754586814091034842536,
    -0.9999999999999997703859616213643405880166422891953033591551179153879839440241685,
    0.99999999999998394883415238173334565554173013941245103172035286759201504179038147,
    -0.9999999999993063616095509371081203145247992197457263066869044528823599399470977,
    0.9999999999797336340409464429599229870590160411238245275855903767652432017766116267,
    -0.999999999574958412069046680119051639753412378037565521359444170241346845522403274,
    0.9999999933226234193375324943920160947158239076786103108097456617750134812033362048,
    -0.9999999188923242461073033481053037468263536806742737922476636768006622772762168467,
    0.9999992195143483674402853783549420883055129680082932629160081128947764415749728967,
    -0.999993935137206712830997921913316971472227199741857386575097250553105958772041501,
    0.99996135597690552745362392866517133091672395614263398912807169603795088421057688716,
    -0.99979556366513946026406788969630293820987757758641211293079784585126692672425362469,
    0.999092789629617100153486251423850590051366661947344315423226082520411961968929483,
    -0.996593837411918202119308620432614600338157335862888580671450938858935084316004769854,
    0.98910017138386127038463510314625339359073956513420458166238478926511821146316469589567,
    -0.970078558040693314521331982203762771512160168582494513347846407314584943870399016019,
    0.92911438683263187495758525500033707204091967947532160289872782771388170647150321633673,
    -0.8542058695956156057286980736842905011429254735181323743367879525470479126968822863,
    0.73796526033030091233118357742803709382964420335559408722681794195743240930748630755,
    -0.58523469882837394570128599003785154144164680587615878645171632791404210655891158,
    0.415997776145676306165661663581868460503874205343014196580122174949645271353372263,
    -0.2588210875241943574388730510317252236407805082485246378222935376279663808416534365,
    0.1375535825163892648504646951500265585055789019410617565727090346559210218472356689,
    -0.0607952766325955730493900985022020434830339794955745989150270485056436844239206648,
    0.0216337683299871528059836483840390514275488679530797294557060229266785853764115,
    -0.00593405693455186729876995814181203900550014220428843483927218267309209471516256,
    0.0011743414818332946510474576182739210553333860106811865963485870668929503649964142,
    -1.489155613350368934073453260689881330166342484405529981510694514036264969925132E-4,
    9.072354320794357587710929507988814669454281514268844884841547607134260303118208E-6)
# T5's 13-point Gauss rule on the integral in a^2 (Cephes PTS, WTS)
T5_PTS = (0.35082039676451715489E-02, 0.31279042338030753740E-01, 0.85266826283219451090E-01,
          0.16245071730812277011E+00, 0.25851196049125434828E+00, 0.36807553840697533536E+00,
          0.48501092905604697475E+00, 0.60277514152618576821E+00, 0.71477884217753226516E+00,
          0.81475510988760098605E+00, 0.89711029755948965867E+00, 0.95723808085944261843E+00,
          0.99178832974629703586E+00)
T5_WTS = (0.18831438115323502887E-01, 0.18567086243977649478E-01, 0.18042093461223385584E-01,
          0.17263829606398753364E-01, 0.16243219975989856730E-01, 0.14994592034116704829E-01,
          0.13535474469662088392E-01, 0.11886351605820165233E-01, 0.10070377242777431897E-01,
          0.81130545742299586629E-02, 0.60419009528470238773E-02, 0.38862217010742057883E-02,
          0.16793031084546090448E-02)
T3_LOW_EDGE = 3.6  # below it T5 replaces T3 (see dispatch)
H_CLAMP = 45.0  # T(h, a) < 1e-430 past it: every Gaussian factor is 0 there


def upper_tail(c, x):
    """``Q(x) = erfc(x/sqrt 2)/2`` for x >= 0: ``exp(-x^2/2) erfcx(x/sqrt 2)/2``
    (x^2 exact) past x = sqrt 2, Cephes ``erfc`` below."""
    t = mul(c, x, k(c, SQRT_HALF))
    tail = mul(c, exp_square(c, x, -0.5), erfcx_ratio(c, c.op("Max", t, k(c, 1.0))), k(c, 0.5))
    return where(c, lt(c, t, 1.0), mul(c, erfc(c, t), k(c, 0.5)), tail)


def half_erf(c, x):
    """``erf(x/sqrt 2)/2`` for x >= 0 (Cephes ``owens_t_norm1``): Cephes'
    erf series below x/sqrt 2 = 1, ``1/2 - Q(x)`` above."""
    t = mul(c, x, k(c, SQRT_HALF))
    small = mul(c, erf_small(c, c.op("Min", t, k(c, 1.0))), k(c, 0.5))
    return where(c, lt(c, t, 1.0), small, sub(c, k(c, 0.5), upper_tail(c, x)))


def _upto(c, order, i: int):
    """Elements whose order (float64) includes step i."""
    return c.op("LessOrEqual", k(c, float(i)), order)


def t1(c, h, a, ah, m):
    """Patefield & Tandy T1 (Cephes ``owensT1``): the first m terms of
    ``atan(a)/(2pi) + sum_j (-1)^j a^(2j+1)/(2j+1) (1 - e^(-h^2/2) sum_{i<=j} (h^2/2)^i/i!)/(2pi)``."""
    hs = mul(c, k(c, -0.5), h, h)
    dhs = exp_square(c, h, -0.5)
    aa = mul(c, a, a)
    aj = mul(c, a, k(c, INV_2PI))
    dj = sub(c, dhs, k(c, 1.0))  # expm1(hs): h <= 1.6 here, |hs| <= 1.28, so no cancellation past 1 ulp of dhs
    dj = where(c, lt(c, h, 0.5), mul(c, hs, _exp_series(c, hs)), dj)
    gj = mul(c, hs, dhs)
    val = mul(c, atan_magnitude(c, a), k(c, INV_2PI))
    for j in range(1, 19):
        term = div(c, mul(c, dj, aj), k(c, 2.0 * j - 1))
        val = add(c, val, where(c, _upto(c, m, j), term, k(c, 0.0)))
        aj = mul(c, aj, aa)
        dj = sub(c, gj, dj)
        gj = mul(c, gj, div(c, hs, k(c, float(j + 1))))
    return val


def _exp_series(c, x):
    """``expm1(x)/x`` for |x| <= 1/8 (Taylor, 14 terms: the first omitted is below 2^-60)."""
    out = k(c, 1.0 / math.factorial(15))
    for n in range(14, 0, -1):
        out = add(c, k(c, 1.0 / math.factorial(n)), mul(c, x, out))
    return out


def t2(c, h, a, ah, m):
    """Patefield & Tandy T2 (Cephes ``owensT2``): the series in 1/h^2 of
    ``z_i``, ``z_1 = P0(ah)/h``, ``z_(i+2) = (v_i - i z_i)/h^2``, to 2m+1."""
    y = div(c, k(c, 1.0), mul(c, h, h))
    vi = mul(c, a, exp_square(c, ah, -0.5), k(c, INV_SQRT_2PI))
    z = div(c, half_erf(c, ah), h)
    naa = c.op("Neg", mul(c, a, a))
    maxi = add(c, mul(c, k(c, 2.0), m), k(c, 1.0))
    val = z
    for i in range(1, 61, 2):
        z = mul(c, y, sub(c, vi, mul(c, k(c, float(i)), z)))
        val = add(c, val, where(c, _upto(c, maxi, i + 2), z, k(c, 0.0)))
        vi = mul(c, vi, naa)
    return mul(c, val, exp_square(c, h, -0.5), k(c, INV_SQRT_2PI))


def t3(c, h, a, ah, m):
    """Patefield & Tandy T3 (Cephes ``owensT3``): T2's series with the 31
    economized coefficients ``T3_C``."""
    y = div(c, k(c, 1.0), mul(c, h, h))
    aa = mul(c, a, a)
    vi = mul(c, a, exp_square(c, ah, -0.5), k(c, INV_SQRT_2PI))
    zi = div(c, half_erf(c, ah), h)
    axis = c.const([-1], I64)
    zs = [c.op("Unsqueeze", zi, axis)]
    for i in range(1, 31):
        zi = mul(c, y, sub(c, mul(c, k(c, 2.0 * i - 1), zi), vi))
        vi = mul(c, vi, aa)
        zs.append(c.op("Unsqueeze", zi, axis))
    # one coefficient tensor, not 31 scalar Mul constants: onnxruntime 1.32's NoopElimination drops a
    # Mul by a function-body Constant that is 1 in float32 (C_6 = 1 - 2e-11, C_8 = 1 - 7e-9: 1.6e-12 off)
    terms = mul(c, c.op("Concat", *zs, axis=-1), c.const(np.array(T3_C), F64))
    result = c.op("ReduceSum", terms, axis, keepdims=0)
    return mul(c, result, exp_square(c, h, -0.5), k(c, INV_SQRT_2PI))


def t4(c, h, a, ah, m):
    """Patefield & Tandy T4 (Cephes ``owensT4``): ``sum a_i y_i`` over odd
    i <= 2m+1, ``a_1 = a exp(-h^2 (1+a^2)/2)/(2pi)``, ``y_(i+2) = (1 - h^2 y_i)/(i+2)``."""
    hh = mul(c, h, h)
    naa = c.op("Neg", mul(c, a, a))
    ai = mul(c, a, exp_square(c, h, -0.5), exp_square(c, ah, -0.5), k(c, INV_2PI))
    yi = k(c, 1.0)
    maxi = add(c, mul(c, k(c, 2.0), m), k(c, 1.0))
    result = ai
    for i in range(3, 42, 2):
        yi = div(c, sub(c, k(c, 1.0), mul(c, hh, yi)), k(c, float(i)))
        ai = mul(c, ai, naa)
        result = add(c, result, where(c, _upto(c, maxi, i), mul(c, ai, yi), k(c, 0.0)))
    return result


def t5(c, h, a, ah, m):
    """Patefield & Tandy T5 (Cephes ``owensT5``): 13-point Gauss quadrature
    ``a sum w_i exp(-h^2 (1 + a^2 x_i)/2)/(1 + a^2 x_i)`` (h <= 4.8 here),
    with ``exp(-h^2/2)`` from the exact h^2 taken out of the sum."""
    last = c.op("Unsqueeze", mul(c, a, a), c.const([-1], I64))
    ax = mul(c, last, c.const(np.array(T5_PTS), F64))
    nhh = c.op("Unsqueeze", mul(c, k(c, -0.5), h, h), c.const([-1], I64))
    terms = div(c, mul(c, c.const(np.array(T5_WTS), F64), c.op("Exp", mul(c, nhh, ax))), add(c, k(c, 1.0), ax))
    return mul(c, a, exp_square(c, h, -0.5), c.op("ReduceSum", terms, c.const([-1], I64), keepdims=0))


def t6(c, h, a, ah, m):
    """Patefield & Tandy T6 (Cephes ``owensT6``), a near 1:
    ``Q(h)(1 - Q(h))/2 - r exp(-(1-a) h^2/(2r))/(2pi)``, ``r = atan((1-a)/(1+a))``."""
    q = upper_tail(c, h)
    y = sub(c, k(c, 1.0), a)
    r = atan_magnitude(c, div(c, y, add(c, k(c, 1.0), a)))
    result = mul(c, q, sub(c, k(c, 1.0), q), k(c, 0.5))
    safe_r = where(c, c.op("Equal", r, k(c, 0.0)), k(c, 1.0), r)
    corr = mul(c, r, c.op("Exp", div(c, mul(c, c.op("Neg", y), h, h), mul(c, k(c, 2.0), safe_r))), k(c, INV_2PI))
    return sub(c, result, corr)


METHOD_BODIES = (t1, t2, t3, t4, t5, t6)


def _count_below(c, x, bounds):
    """The number of ``bounds`` (ascending) below x, as int64."""
    col = c.op("Unsqueeze", x, c.const([-1], I64))
    below = c.cast(c.op("Less", c.const(np.array(bounds), F64), col), I64)
    return c.op("ReduceSum", below, c.const([-1], I64), keepdims=0)


def dispatch(c, h, a, ah):
    """``T(h, a)`` for 0 <= h <= H_CLAMP, 0 <= a <= 1, ``ah = a h`` (Cephes
    ``owens_t_dispatch``): the closed forms at h = 0, a = 0, a = 1, else the
    method of the (h, a) cell."""
    cell = add(c, mul(c, _count_below(c, a, ARANGE), c.const(15, I64)), _count_below(c, h, HRANGE))
    index = c.op("Gather", c.const(np.array(SELECT_METHOD), I64), cell)
    # T3 at the low edge of its cells (3.36 < h < 3.6, a > 0.36) is accurate to ~1e-17 absolute only,
    # 1.2e-13 relative to T there (SciPy's error too); T5's quadrature of positive terms is to 1e-15
    seam = c.op("And", c.op("Equal", index, c.const(11, I64)), lt(c, h, T3_LOW_EDGE))
    index = where(c, seam, c.const(16, I64), index)
    order = c.op("Gather", c.const(np.array(ORD, dtype=np.float64), F64), index)
    method = c.op("Gather", c.const(np.array(METHODS), I64), index)
    value = c.op("Mul", h, k(c, 0.0))
    for code, body in enumerate(METHOD_BODIES, start=1):
        value = on_subset(c, c.op("Equal", method, c.const(code, I64)), [h, a, ah, order], body, value)
    q = upper_tail(c, h)
    value = where(c, c.op("Equal", a, k(c, 1.0)), mul(c, q, sub(c, k(c, 1.0), q), k(c, 0.5)), value)
    value = where(c, c.op("Equal", a, k(c, 0.0)), k(c, 0.0), value)
    return where(c, c.op("Equal", h, k(c, 0.0)), mul(c, atan_magnitude(c, a), k(c, INV_2PI)), value)


def owens_t(c, h, a):
    """``scipy.special.owens_t(h, a)`` for float64 h, a of broadcastable
    shapes (see the module doc)."""
    shape, (h, a) = flat_args(c, h, a)
    nan = c.op("Or", c.op("IsNaN", h), c.op("IsNaN", a))
    habs = c.op("Abs", h)
    aabs = c.op("Abs", a)
    h_inf, a_inf = c.op("IsInf", habs), c.op("IsInf", aabs)
    hc = c.op("Min", where(c, c.op("Or", nan, h_inf), k(c, 0.0), habs), k(c, H_CLAMP))
    ac = where(c, c.op("Or", nan, a_inf), k(c, 0.0), aabs)
    big = c.op("Greater", ac, k(c, 1.0))
    inv = div(c, k(c, 1.0), c.op("Max", ac, k(c, 1.0)))
    ahc = c.op("Min", mul(c, ac, hc), k(c, H_CLAMP))
    t = dispatch(c, where(c, big, ahc, hc), where(c, big, inv, ac), where(c, big, hc, ahc))
    qh, qah = upper_tail(c, hc), upper_tail(c, ahc)
    near = sub(c, sub(c, k(c, 0.25), mul(c, half_erf(c, hc), half_erf(c, ahc))), t)
    far = sub(c, sub(c, mul(c, add(c, qh, qah), k(c, 0.5)), mul(c, qh, qah)), t)
    value = where(c, big, where(c, c.op("LessOrEqual", ahc, k(c, 0.67)), near, far), t)
    value = where(c, a_inf, mul(c, qh, k(c, 0.5)), value)
    value = where(c, h_inf, k(c, 0.0), value)  # T(inf, inf) = Q(inf) = 0 too
    value = where(c, c.op("Less", a, k(c, 0.0)), c.op("Neg", value), value)
    value = where(c, nan, k(c, np.nan), value)
    return c.op("Reshape", value, shape, allowzero=1)


FORMULAS = {"owens_t": owens_t}
