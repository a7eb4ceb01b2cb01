"""The Airy functions and their derivatives, ``(Ai(x), Ai'(x))`` and
``(Bi(x), Bi'(x))``, in float64 ONNX (helpers for ``bessel_jv_f64.airy_band``; no
IR op of their own).

Source: Cephes ``airy.c`` (S. L. Moshier, Cephes Math Library 2.8, 2000; SciPy's
``scipy.special.airy`` for real x), per element:

* |x| < 2.09 (Bi: -2.09 < x <= 8.3203353): the Maclaurin series ``Ai = c1 f - c2 g``,
  ``Bi = sqrt(3) (c1 f + c2 g)`` with ``f = sum 3^k (1/3)_k x^(3k) / (3k)!``,
  ``g = sum 3^k (2/3)_k x^(3k+1) / (3k+1)!`` (DLMF 9.4.1-2), 36 terms each as fixed
  polynomials in x^3 / 512 (Cephes sums them in a loop to MACHEP; the 37th term is below
  2e-22 of the sum at x = 8.32), and their derivatives for Ai', Bi';
* x > 8.3203353 (zeta > 16): ``Bi = e^zeta (1 + f) / (sqrt(pi) x^(1/4))`` with
  Cephes' rational BN16/BD16 (BPPN/BPPD for Bi');
* x >= 2.09: ``Ai = e^(-zeta) AN(1/zeta)/AD(1/zeta) / (2 sqrt(pi) x^(1/4))``,
  ``zeta = (2/3) x^(3/2)`` (Cephes' rational minimax AN/AD, APN/APD for Ai'); Cephes
  returns 0 past x = 25.77 (MAXAIRY), here the form runs on (Ai underflows to 0 near
  x = 105, as SciPy);
* x <= -2.09: ``Ai = pi^(-1/2) |x|^(-1/4) (sin(theta) U_f - cos(theta) U_g)``,
  ``Bi = pi^(-1/2) |x|^(-1/4) (cos(theta) U_f + sin(theta) U_g)``,
  ``theta = zeta + pi/4``, with Cephes' rational AFN/AFD, AGN/AGD (APFN.., APGN.. for
  Ai'); ``cos``/``sin`` of ``zeta - pi/4`` by ``bessel_f64.cos_sin_phase`` (exact
  reduction), so the phase carries the few-ulp error of zeta only.

Cephes' stated accuracy (IEEE, 10,000 trials each): Ai, Ai' on [-10, 0] 1.6e-15,
4.6e-15 absolute; on [0, 10] 2.3e-14, 1.8e-14 relative (growing as x^1.5 past 10);
for x <= -2.09 the absolute error grows as |x|^1.5 (the phase).
"""

from __future__ import annotations

from fractions import Fraction

from backends.onnx.rules.bessel_f64 import cephes_polevl, cos_sin_phase
from backends.onnx.rules.special_f64 import add, div, k, mul, poly, sub, where

C1 = 0.35502805388781723926  # Ai(0)
C2 = 0.258819403792806798405  # -Ai'(0)
SQPII = 5.64189583547756286948e-1  # 1 / sqrt(pi)
SQRT3 = 1.732050807568877293527
SPLIT = 2.09
TERMS = 36
BI_SPLIT = 8.3203353  # zeta = 16


def _maclaurin_coeffs():
    f, g = [Fraction(1)], [Fraction(1)]
    for j in range(1, TERMS):
        f.append(f[-1] / ((3 * j - 1) * (3 * j)))
        g.append(g[-1] / ((3 * j) * (3 * j + 1)))
    return f, g


# The series run in u = x^3 / SCALE with coefficients c_j SCALE^j: onnxruntime's optimizer drops an Add of
# a float64 constant that is 0 in float32 (c_j falls below 1e-45 from j ~ 20; scaled, all stay above 1e-20).
SCALE = 512.0
_F, _G = _maclaurin_coeffs()
F_SERIES = [float(q * 512 ** j) for j, q in enumerate(_F)]  # f = sum F[j] u^j
G_SERIES = [float(q * 512 ** j) for j, q in enumerate(_G)]  # g = x sum G[j] u^j
DF_SERIES = [float(3 * j * q * 512 ** (j - 1)) for j, q in enumerate(_F)][1:]  # f' = x^2 sum DF[j] u^j
DG_SERIES = [float((3 * j + 1) * q * 512 ** j) for j, q in enumerate(_G)]  # g' = sum DG[j] u^j

AN = [3.46538101525629032477E-1, 1.20075952739645805542E1, 7.62796053615234516538E1, 1.68089224934630576269E2,
      1.59756391350164413639E2, 7.05360906840444183113E1, 1.40264691163389668864E1, 9.99999999999999995305E-1]
AD = [5.67594532638770212846E-1, 1.47562562584847203173E1, 8.45138970141474626562E1, 1.77318088145400459522E2,
      1.64234692871529701831E2, 7.14778400825575695274E1, 1.40959135607834029598E1, 1.00000000000000000470E0]
APN = [6.13759184814035759225E-1, 1.47454670787755323881E1, 8.20584123476060982430E1, 1.71184781360976385540E2,
       1.59317847137141783523E2, 6.99778599330103016170E1, 1.39470856980481566958E1, 1.00000000000000000550E0]
APD = [3.34203677749736953049E-1, 1.11810297306158156705E1, 7.11727352147859965283E1, 1.58778084372838313640E2,
       1.53206427475809220834E2, 6.86752304592780337944E1, 1.38498634758259442477E1, 9.99999999999999994502E-1]
AFN = [-1.31696323418331795333E-1, -6.26456544431912369773E-1, -6.93158036036933542233E-1,
       -2.79779981545119124951E-1, -4.91900132609500318020E-2, -4.06265923594885404393E-3,
       -1.59276496239262096340E-4, -2.77649108155232920844E-6, -1.67787698489114633780E-8]
AFD = [1.0, 1.33560420706553243746E1, 3.26825032795224613948E1, 2.67367040941499554804E1, 9.18707402907259625840E0,
       1.47529146771666414581E0, 1.15687173795188044134E-1, 4.40291641615211203805E-3, 7.54720348287414296618E-5,
       4.51850092970580378464E-7]
AGN = [1.97339932091685679179E-2, 3.91103029615688277255E-1, 1.06579897599595591108E0, 9.39169229816650230044E-1,
       3.51465656105547619242E-1, 6.33888919628925490927E-2, 5.85804113048388458567E-3, 2.82851600836737019778E-4,
       6.98793669997260967291E-6, 8.11789239554389293311E-8, 3.41551784765923618484E-10]
AGD = [1.0, 9.30892908077441974853E0, 1.98352928718312140417E1, 1.55646628932864612953E1, 5.47686069422975497931E0,
       9.54293611618961883998E-1, 8.64580826352392193095E-2, 4.12656523824222607191E-3, 1.01259085116509135510E-4,
       1.17166733214413521882E-6, 4.91834570062930015649E-9]
APFN = [1.85365624022535566142E-1, 8.86712188052584095637E-1, 9.87391981747398547272E-1, 4.01241082318003734092E-1,
        7.10304926289631174579E-2, 5.90618657995661810071E-3, 2.33051409401776799569E-4, 4.08718778289035454598E-6,
        2.48379932900442457853E-8]
APFD = [1.0, 1.47345854687502542552E1, 3.75423933435489594466E1, 3.14657751203046424330E1, 1.09969125207298778536E1,
        1.78885054766999417817E0, 1.41733275753662636873E-1, 5.44066067017226003627E-3, 9.39421290654511171663E-5,
        5.65978713036027009243E-7]
APGN = [-3.55615429033082288335E-2, -6.37311518129435504426E-1, -1.70856738884312371053E0,
        -1.50221872117316635393E0, -5.63606665822102676611E-1, -1.02101031120216891789E-1,
        -9.48396695961445269093E-3, -4.60325307486780994357E-4, -1.14300836484517375919E-5,
        -1.33415518685547420648E-7, -5.63803833958893494476E-10]
BN16 = [-2.53240795869364152689E-1, 5.75285167332467384228E-1, -3.29907036873225371650E-1,
        6.44404068948199951727E-2, -3.82519546641336734394E-3]
BD16 = [1.0, -7.15685095054035237902E0, 1.06039580715664694291E1, -5.23246636471251500874E0,
        9.57395864378383833152E-1, -5.50828147163549611107E-2]
BPPN = [4.65461162774651610328E-1, -1.08992173800493920734E0, 6.38800117371827987759E-1,
        -1.26844349553102907034E-1, 7.62487844342109852105E-3]
BPPD = [1.0, -8.70622787633159124240E0, 1.38993162704553213172E1, -7.14116144616431159572E0,
        1.34008595960680518666E0, -7.84273211323341930448E-2]
APGD = [1.0, 9.85865801696130355144E0, 2.16401867356585941885E1, 1.73130776389749389525E1, 6.17872175280828766327E0,
        1.08848694396321495475E0, 9.95005543440888479402E-2, 4.78468199683886610842E-3, 1.18159633322838625562E-4,
        1.37480673554219441465E-6, 5.79912514929147598821E-9]


def _maclaurin(c, x, lo, hi):
    """``(f, g, f', g')`` of the module doc at x clamped to [lo, hi]."""
    xs = c.op("Max", c.op("Min", x, k(c, hi)), k(c, lo))
    z = mul(c, xs, xs, xs, k(c, 1.0 / SCALE))
    return (poly(c, z, F_SERIES), mul(c, xs, poly(c, z, G_SERIES)), mul(c, xs, xs, poly(c, z, DF_SERIES)),
            poly(c, z, DG_SERIES))


def _oscillatory(c, x):
    """Cephes' x <= -2.09 form at ``max(-x, 2.09)``: ``(k, sin(theta), cos(theta), U_f, U_g, U_f', U_g')``
    with ``k = |x|^(1/4)``."""
    xn = c.op("Max", c.op("Neg", x), k(c, SPLIT))
    t = c.op("Sqrt", xn)
    zeta = mul(c, xn, t, k(c, 2.0 / 3.0))
    q = c.op("Sqrt", t)
    zi = div(c, k(c, 1.0), zeta)
    zz = mul(c, zi, zi)
    cos_m, sin_m = cos_sin_phase(c, zeta, 1)  # theta = zeta + pi/4: sin(theta) = cos(zeta - pi/4), ...
    uf = add(c, k(c, 1.0), mul(c, zz, div(c, cephes_polevl(c, zz, AFN), cephes_polevl(c, zz, AFD))))
    ug = mul(c, zi, div(c, cephes_polevl(c, zz, AGN), cephes_polevl(c, zz, AGD)))
    upf = add(c, k(c, 1.0), mul(c, zz, div(c, cephes_polevl(c, zz, APFN), cephes_polevl(c, zz, APFD))))
    upg = mul(c, zi, div(c, cephes_polevl(c, zz, APGN), cephes_polevl(c, zz, APGD)))
    return q, cos_m, c.op("Neg", sin_m), uf, ug, upf, upg


def airy_ai(c, x):
    """``(Ai(x), Ai'(x))`` for a float64 tensor x of any shape (finite; the module
    doc's three forms, each on x clamped into its own range, selected by ``where``).
    No error is raised; NaN gives NaN."""
    f, g, df, dg = _maclaurin(c, x, -SPLIT, SPLIT)
    ai_small = sub(c, mul(c, f, k(c, C1)), mul(c, g, k(c, C2)))
    aip_small = sub(c, mul(c, df, k(c, C1)), mul(c, dg, k(c, C2)))
    # x >= 2.09: exponentially small
    xp = c.op("Max", x, k(c, SPLIT))
    t = c.op("Sqrt", xp)
    zeta = mul(c, xp, t, k(c, 2.0 / 3.0))
    q = c.op("Sqrt", t)  # x^(1/4)
    e = c.op("Exp", c.op("Neg", zeta))
    zi = div(c, k(c, 1.0), zeta)
    ai_pos = div(c, mul(c, e, k(c, SQPII * 0.5), div(c, cephes_polevl(c, zi, AN), cephes_polevl(c, zi, AD))), q)
    aip_pos = mul(c, e, q, k(c, -0.5 * SQPII), div(c, cephes_polevl(c, zi, APN), cephes_polevl(c, zi, APD)))
    q, sin_th, cos_th, uf, ug, upf, upg = _oscillatory(c, x)
    ai_neg = mul(c, div(c, k(c, SQPII), q), sub(c, mul(c, sin_th, uf), mul(c, cos_th, ug)))
    aip_neg = mul(c, q, k(c, -SQPII), add(c, mul(c, cos_th, upf), mul(c, sin_th, upg)))
    small = c.op("Less", c.op("Abs", x), k(c, SPLIT))
    positive = c.op("GreaterOrEqual", x, k(c, 0.0))
    ai = where(c, small, ai_small, where(c, positive, ai_pos, ai_neg))
    aip = where(c, small, aip_small, where(c, positive, aip_pos, aip_neg))
    return ai, aip


def airy_bi(c, x):
    """``(Bi(x), Bi'(x))`` for a float64 tensor x of any shape (finite; the module
    doc's three forms; +inf past x ~ 104, where Bi overflows). No error is raised."""
    f, g, df, dg = _maclaurin(c, x, -SPLIT, BI_SPLIT)
    bi_small = mul(c, add(c, mul(c, f, k(c, C1)), mul(c, g, k(c, C2))), k(c, SQRT3))
    bip_small = mul(c, add(c, mul(c, df, k(c, C1)), mul(c, dg, k(c, C2))), k(c, SQRT3))
    xp = c.op("Max", x, k(c, BI_SPLIT))
    t = c.op("Sqrt", xp)
    zeta = mul(c, xp, t, k(c, 2.0 / 3.0))
    q = c.op("Sqrt", t)
    zi = div(c, k(c, 1.0), zeta)
    e = mul(c, c.op("Exp", zeta), k(c, SQPII))
    fb = mul(c, zi, div(c, cephes_polevl(c, zi, BN16), cephes_polevl(c, zi, BD16)))
    fbp = mul(c, zi, div(c, cephes_polevl(c, zi, BPPN), cephes_polevl(c, zi, BPPD)))
    bi_big = div(c, mul(c, e, add(c, k(c, 1.0), fb)), q)
    bip_big = mul(c, e, q, add(c, k(c, 1.0), fbp))
    q, sin_th, cos_th, uf, ug, upf, upg = _oscillatory(c, x)
    bi_neg = mul(c, div(c, k(c, SQPII), q), add(c, mul(c, cos_th, uf), mul(c, sin_th, ug)))
    bip_neg = mul(c, q, k(c, SQPII), sub(c, mul(c, sin_th, upf), mul(c, cos_th, upg)))
    middle = c.op("And", c.op("Greater", x, k(c, -SPLIT)), c.op("LessOrEqual", x, k(c, BI_SPLIT)))
    positive = c.op("GreaterOrEqual", x, k(c, 0.0))
    bi = where(c, middle, bi_small, where(c, positive, bi_big, bi_neg))
    bip = where(c, middle, bip_small, where(c, positive, bip_big, bip_neg))
    return bi, bip
