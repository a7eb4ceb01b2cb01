"""float64 forms of the functions onnxruntime 1.31 lacks, or computes
inaccurately, in float64.

onnxruntime has no float64 Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh,
Atanh or Erf, and its float64 Sin/Cos lose all relative precision near
their zeros past |x| ~ 10 (a short argument reduction). Computing in
float32 would silently lose precision, so each function here is the
float64 algorithm of a standard libm, written with ONNX ops that do have
accurate float64 kernels (Exp, Log, Sqrt, Sin/Cos on [-pi/4, pi/4], and
the ``expm1``/``log1p`` formulas of ``mathfn``):

* sin, cos, tan: Cody-Waite reduction by pi/2 in four parts (fdlibm's
  constants), exact for |x| < 2^20 pi/2; beyond that onnxruntime's own
  Sin/Cos (tan = sin/cos).
* sinh, cosh, tanh, asinh, acosh, atanh: glibc's (fdlibm's) formulas
  (onnxruntime's float64 Tanh is up to 6 ulp off, which ``log1p(tanh(x))``
  near -1 amplifies ~1e5 times; fuzz seed 104414).
* atan: fdlibm's ``s_atan.c`` (four reduction intervals, an 11-term odd
  polynomial); asin(x) = atan(x / sqrt((1-x)(1+x))),
  acos(x) = 2 atan(sqrt((1-x)/(1+x))).
* erf: Cephes ``ndtr.c``, the algorithm of ``scipy.special.erf``.

Odd functions compute a magnitude from |x| and multiply by
``copysign(1, x)``, which keeps -0.0 and NaN. The tests bound the error
against NumPy/SciPy at a few ulp.
"""

from __future__ import annotations

import numpy as np

from backends.onnx.rules.common import F64, I64, sign_of, where
from backends.onnx.rules.mathfn import expm1, log1p

LN2 = 6.93147180559945286227e-01


def _k(ctx, v):
    return ctx.const(v, F64)


def horner(ctx, x, coeffs, leading_one=False):
    """``coeffs[0] x^n + ... + coeffs[n]`` (Cephes ``polevl``; ``p1evl`` with
    an implicit leading 1 when ``leading_one``)."""
    acc = ctx.op("Add", x, _k(ctx, coeffs[0])) if leading_one else _k(ctx, coeffs[0])
    for c in coeffs[1:]:
        acc = ctx.op("Add", ctx.op("Mul", acc, x), _k(ctx, c))
    return acc


def _select(ctx, conditions_and_values, default):
    """``v0 if c0 else v1 if c1 else ... default`` for values that are never -0.0."""
    out = default
    for cond, value in reversed(conditions_and_values):
        out = ctx.op("Where", cond, value, out)
    return out


def _lt(ctx, x, c):
    return ctx.op("Less", x, _k(ctx, c))


def _odd(ctx, x, magnitude):
    """An odd function's value from its magnitude at |x|: ``magnitude * copysign(1, x)``."""
    return ctx.op("Mul", magnitude(ctx.op("Abs", x)), sign_of(ctx, x, F64))


# -- sin, cos, tan ------------------------------------------------------------
TWO_OVER_PI = 6.36619772367581382433e-01
PIO2 = (1.57079632673412561417e+00, 6.07710050630396597660e-11, 2.02226624871116645580e-21,
        8.47842766036889956997e-32)  # fdlibm pio2_1, pio2_2, pio2_3, pio2_3t: pi/2 in four parts
REDUCTION_LIMIT = 2.0**20 * np.pi / 2  # below it k * pio2_1 and k * pio2_2 are exact


def _reduce_pio2(ctx, x):
    """``(r, n, small)``: ``x = k pi/2 + r`` with |r| <= ~pi/4, ``n = k mod 4``
    (int64) and ``small = |x| < REDUCTION_LIMIT`` (where r is accurate)."""
    small = _lt(ctx, ctx.op("Abs", x), REDUCTION_LIMIT)
    k = ctx.op("Round", ctx.op("Mul", x, _k(ctx, TWO_OVER_PI)))
    k = ctx.op("Where", small, k, _k(ctx, 0.0))  # no NaN/inf/huge reaches the int cast
    r = x
    for part in PIO2:
        r = ctx.op("Sub", r, ctx.op("Mul", k, _k(ctx, part)))
    n = ctx.op("Mod", ctx.cast(k, I64), ctx.const(4, I64), fmod=0)
    return r, n, small


def _quadrant(ctx, n):
    """``(odd, n >= 2, n in {1, 2})`` for ``n = k mod 4``."""
    odd = ctx.op("Equal", ctx.op("BitwiseAnd", n, ctx.const(1, I64)), ctx.const(1, I64))
    high = ctx.op("GreaterOrEqual", n, ctx.const(2, I64))
    middle = ctx.op("Or", ctx.op("Equal", n, ctx.const(1, I64)), ctx.op("Equal", n, ctx.const(2, I64)))
    return odd, high, middle


def _negate_if(ctx, cond, v):
    return ctx.op("Mul", v, ctx.op("Where", cond, _k(ctx, -1.0), _k(ctx, 1.0)))


def sin_f64(ctx, x):
    """``sin(x)`` = [sin r, cos r, -sin r, -cos r][k mod 4]."""
    r, n, small = _reduce_pio2(ctx, x)
    odd, high, _ = _quadrant(ctx, n)
    v = _negate_if(ctx, high, where(ctx, odd, ctx.op("Cos", r), ctx.op("Sin", r), F64))
    return where(ctx, small, v, ctx.op("Sin", x), F64)


def cos_f64(ctx, x):
    """``cos(x)`` = [cos r, -sin r, -cos r, sin r][k mod 4]."""
    r, n, small = _reduce_pio2(ctx, x)
    odd, _, middle = _quadrant(ctx, n)
    v = _negate_if(ctx, middle, where(ctx, odd, ctx.op("Sin", r), ctx.op("Cos", r), F64))
    return where(ctx, small, v, ctx.op("Cos", x), F64)


def tan_f64(ctx, x):
    """``tan(x)`` = sin r / cos r for even k, -cos r / sin r for odd k."""
    r, n, small = _reduce_pio2(ctx, x)
    odd, _, _ = _quadrant(ctx, n)
    s, c = ctx.op("Sin", r), ctx.op("Cos", r)
    v = where(ctx, odd, ctx.op("Neg", ctx.op("Div", c, s)), ctx.op("Div", s, c), F64)
    return where(ctx, small, v, ctx.op("Div", ctx.op("Sin", x), ctx.op("Cos", x)), F64)


# -- hyperbolic -----------------------------------------------------------------
EXP_OVERFLOW = 7.09782712893383973096e+02  # log(DBL_MAX)


def _exp_large(ctx, a, half):
    """``half * exp(a)`` for a >= 22 without overflowing early:
    ``(half * w) * w`` with ``w = exp(a / 2)`` past log(DBL_MAX)."""
    direct = ctx.op("Mul", _k(ctx, half), ctx.op("Exp", a))
    w = ctx.op("Exp", ctx.op("Mul", a, _k(ctx, 0.5)))
    split = ctx.op("Mul", ctx.op("Mul", _k(ctx, half), w), w)
    return ctx.op("Where", _lt(ctx, a, EXP_OVERFLOW), direct, split)


def sinh_f64(ctx, x):
    """glibc ``__ieee754_sinh``: with t = expm1(|x|), |x| < 1: (2t - t^2/(t+1))/2;
    |x| < 22: (t + t/(t+1))/2; else exp(|x|)/2."""
    def magnitude(a):
        t = expm1(ctx, a, F64)
        t1 = ctx.op("Add", t, _k(ctx, 1.0))
        small = ctx.op("Sub", ctx.op("Add", t, t), ctx.op("Div", ctx.op("Mul", t, t), t1))
        mid = ctx.op("Add", t, ctx.op("Div", t, t1))
        return _select(ctx, [(_lt(ctx, a, 1.0), ctx.op("Mul", small, _k(ctx, 0.5))),
                             (_lt(ctx, a, 22.0), ctx.op("Mul", mid, _k(ctx, 0.5)))], _exp_large(ctx, a, 0.5))

    return _odd(ctx, x, magnitude)


def cosh_f64(ctx, x):
    """glibc ``__ieee754_cosh``: |x| < ln2/2: 1 + t^2/(2(1+t)) with t = expm1(|x|);
    |x| < 22: exp(|x|)/2 + 1/(2 exp(|x|)); else exp(|x|)/2."""
    a = ctx.op("Abs", x)
    t = expm1(ctx, a, F64)
    w = ctx.op("Add", t, _k(ctx, 1.0))
    small = ctx.op("Add", _k(ctx, 1.0), ctx.op("Div", ctx.op("Mul", t, t), ctx.op("Add", w, w)))
    e = ctx.op("Exp", a)
    mid = ctx.op("Add", ctx.op("Mul", _k(ctx, 0.5), e), ctx.op("Div", _k(ctx, 0.5), e))
    return _select(ctx, [(_lt(ctx, a, LN2 / 2), small), (_lt(ctx, a, 22.0), mid)], _exp_large(ctx, a, 0.5))


TANH_P = (-9.64399179425052238628E-1, -9.92877231001918586564E1, -1.61468768441708447952E3)
TANH_Q = (1.12811678491632931402E2, 2.23548839060100448583E3, 4.84406305325125486048E3)
TANH_SPLIT = 0.625


def tanh_f64(ctx, x):
    """Cephes ``tanh`` on a = |x|: a <= 0.625: a + a^3 P(a^2)/Q(a^2);
    else glibc's ``1 - 2/(t+2)`` with t = expm1(2a) (1 once t overflows); odd.

    Past 0.625 the result is 1 minus a term whose few-ulp error shrinks
    with it, so far from 0 it rounds like the exact value (onnxruntime's
    float64 Tanh is up to 7 ulp off there, which ``log1p(tanh(x))`` near
    -1 amplifies ~1e5 times; fuzz seed 104414). Measured against mpmath:
    see ``tests/numerics/test_contract.py``.
    """
    def magnitude(a):
        z = ctx.op("Mul", a, a)
        poly = ctx.op("Div", horner(ctx, z, TANH_P), horner(ctx, z, TANH_Q, leading_one=True))
        small = ctx.op("Add", a, ctx.op("Mul", ctx.op("Mul", a, z), poly))
        t = expm1(ctx, ctx.op("Add", a, a), F64)
        large = ctx.op("Sub", _k(ctx, 1.0), ctx.op("Div", _k(ctx, 2.0), ctx.op("Add", t, _k(ctx, 2.0))))
        return ctx.op("Where", ctx.op("LessOrEqual", a, _k(ctx, TANH_SPLIT)), small, large)

    return _odd(ctx, x, magnitude)


def asinh_f64(ctx, x):
    """glibc ``__asinh``: |x| < 2^-28: x; > 2^28: log|x| + ln2;
    > 2: log(2|x| + 1/(sqrt(x^2+1) + |x|)); else log1p(|x| + x^2/(1 + sqrt(1 + x^2)))."""
    def magnitude(a):
        one = _k(ctx, 1.0)
        t = ctx.op("Mul", a, a)
        root = ctx.op("Sqrt", ctx.op("Add", t, one))
        huge = ctx.op("Add", ctx.op("Log", a), _k(ctx, LN2))
        big = ctx.op("Log", ctx.op("Add", ctx.op("Add", a, a), ctx.op("Div", one, ctx.op("Add", root, a))))
        mid = log1p(ctx, ctx.op("Add", a, ctx.op("Div", t, ctx.op("Add", one, root))), F64)
        return _select(ctx, [(_lt(ctx, a, 2.0**-28), a), (ctx.op("LessOrEqual", a, _k(ctx, 2.0)), mid),
                             (_lt(ctx, a, 2.0**28), big)], huge)

    return _odd(ctx, x, magnitude)


def acosh_f64(ctx, x):
    """glibc ``__ieee754_acosh``: x < 1: NaN; x >= 2^28: log x + ln2;
    x > 2: log(2x - 1/(x + sqrt(x^2 - 1))); else log1p(t + sqrt(2t + t^2)), t = x - 1."""
    one = _k(ctx, 1.0)
    huge = ctx.op("Add", ctx.op("Log", x), _k(ctx, LN2))
    root = ctx.op("Sqrt", ctx.op("Sub", ctx.op("Mul", x, x), one))
    big = ctx.op("Log", ctx.op("Sub", ctx.op("Add", x, x), ctx.op("Div", one, ctx.op("Add", x, root))))
    t = ctx.op("Sub", x, one)
    mid = log1p(ctx, ctx.op("Add", t, ctx.op("Sqrt", ctx.op("Add", ctx.op("Add", t, t), ctx.op("Mul", t, t)))), F64)
    return _select(ctx, [(_lt(ctx, x, 1.0), _k(ctx, np.nan)), (ctx.op("LessOrEqual", x, _k(ctx, 2.0)), mid),
                         (_lt(ctx, x, 2.0**28), big)], huge)


def atanh_f64(ctx, x):
    """glibc ``__ieee754_atanh``: |x| < 0.5: log1p(2a + 2a^2/(1-a))/2;
    else log1p(2a/(1-a))/2 (inf at 1, NaN past it)."""
    def magnitude(a):
        one_minus = ctx.op("Sub", _k(ctx, 1.0), a)
        a2 = ctx.op("Add", a, a)
        small = log1p(ctx, ctx.op("Add", a2, ctx.op("Div", ctx.op("Mul", a2, a), one_minus)), F64)
        big = log1p(ctx, ctx.op("Div", a2, one_minus), F64)
        return ctx.op("Mul", ctx.op("Where", _lt(ctx, a, 0.5), small, big), _k(ctx, 0.5))

    return _odd(ctx, x, magnitude)


# -- atan, asin, acos -------------------------------------------------------------
ATAN_HI = (4.63647609000806093515e-01, 7.85398163397448278999e-01, 9.82793723247329054082e-01,
           1.57079632679489655800e+00)
ATAN_LO = (2.26987774529616870924e-17, 3.06161699786838301793e-17, 1.39033110312309984516e-17,
           6.12323399573676603587e-17)
ATAN_T = (3.33333333333329318027e-01, -1.99999999998764832476e-01, 1.42857142725034663711e-01,
          -1.11111104054623557880e-01, 9.09088713343650656196e-02, -7.69187620504482999495e-02,
          6.66107313738753120669e-02, -5.83357013379057348645e-02, 4.97687799461593236017e-02,
          -3.65315727442169155270e-02, 1.62858201153657823623e-02)


def atan_magnitude(ctx, a):
    """fdlibm ``atan`` for a = |x| >= 0 (or +inf, NaN). The interval id picks
    a reduced argument and ``atan`` of a breakpoint (hi + lo)::

        a < 7/16: a                 (id -1)
        a < 11/16: (2a-1)/(2+a)     (id 0, atan(1/2))
        a < 19/16: (a-1)/(a+1)      (id 1, atan(1))
        a < 39/16: (a-1.5)/(1+1.5a) (id 2, atan(3/2))
        else: -1/a                  (id 3, pi/2)
    """
    one, onehalf = _k(ctx, 1.0), _k(ctx, 1.5)
    bounds = [0.4375, 0.6875, 1.1875, 2.4375]
    reduced = [
        ctx.op("Div", ctx.op("Sub", ctx.op("Add", a, a), one), ctx.op("Add", _k(ctx, 2.0), a)),
        ctx.op("Div", ctx.op("Sub", a, one), ctx.op("Add", a, one)),
        ctx.op("Div", ctx.op("Sub", a, onehalf), ctx.op("Add", one, ctx.op("Mul", onehalf, a))),
    ]
    conds = [_lt(ctx, a, b) for b in bounds]
    xr = _select(ctx, list(zip(conds, [a] + reduced)), ctx.op("Div", _k(ctx, -1.0), a))
    hi = _select(ctx, list(zip(conds[1:], [_k(ctx, h) for h in ATAN_HI[:3]])), _k(ctx, ATAN_HI[3]))
    lo = _select(ctx, list(zip(conds[1:], [_k(ctx, h) for h in ATAN_LO[:3]])), _k(ctx, ATAN_LO[3]))
    z = ctx.op("Mul", xr, xr)
    w = ctx.op("Mul", z, z)
    s1 = ctx.op("Mul", z, horner(ctx, w, ATAN_T[10::-2]))
    s2 = ctx.op("Mul", w, horner(ctx, w, ATAN_T[9::-2]))
    xs = ctx.op("Mul", xr, ctx.op("Add", s1, s2))
    near_zero = ctx.op("Sub", xr, xs)
    reduced_value = ctx.op("Sub", hi, ctx.op("Sub", ctx.op("Sub", xs, lo), xr))
    return ctx.op("Where", conds[0], near_zero, reduced_value)


def atan_f64(ctx, x):
    """fdlibm ``atan`` (see ``atan_magnitude``), odd."""
    return _odd(ctx, x, lambda a: atan_magnitude(ctx, a))


def asin_f64(ctx, x):
    """``asin x = atan(x / sqrt((1 - x)(1 + x)))`` (NaN past |x| = 1), odd."""
    def magnitude(a):
        one = _k(ctx, 1.0)
        root = ctx.op("Sqrt", ctx.op("Mul", ctx.op("Sub", one, a), ctx.op("Add", one, a)))
        return atan_magnitude(ctx, ctx.op("Div", a, root))

    return _odd(ctx, x, magnitude)


def acos_f64(ctx, x):
    """``acos x = 2 atan(sqrt((1 - x)/(1 + x)))`` (pi at -1, NaN past |x| = 1)."""
    one = _k(ctx, 1.0)
    t = ctx.op("Sqrt", ctx.op("Div", ctx.op("Sub", one, x), ctx.op("Add", one, x)))
    return ctx.op("Mul", _k(ctx, 2.0), atan_magnitude(ctx, t))


# -- erf ----------------------------------------------------------------------------
ERF_T = (9.60497373987051638749E0, 9.00260197203842689217E1, 2.23200534594684319226E3,
         7.00332514112805075473E3, 5.55923013010394962768E4)
ERF_U = (3.35617141647503099647E1, 5.21357949780152679795E2, 4.59432382970980127987E3,
         2.26290000613890934246E4, 4.92673942608635921086E4)
ERFC_P = (2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
          4.86371970985681366614E1, 1.96520832956077098242E2, 5.26445194995477358631E2,
          9.34528527171957607540E2, 1.02755188689515710272E3, 5.57535335369399327526E2)
ERFC_Q = (1.32281951154744992508E1, 8.67072140885989742329E1, 3.54937778887819891062E2,
          9.75708501743205489753E2, 1.82390916687909736289E3, 2.24633760818710981792E3,
          1.65666309194161350182E3, 5.57535340817727675546E2)
ERFC_R = (5.64189583547755073984E-1, 1.27536670759978104416E0, 5.01905042251180477414E0,
          6.16021097993053585195E0, 7.40974269950448939160E0, 2.97886665372100240670E0)
ERFC_S = (2.26052863220117276590E0, 9.39603524938001434673E0, 1.20489539808096656605E1,
          1.70814450747565897222E1, 9.60896809063285878198E0, 3.36907645100081516050E0)
MAXLOG = 7.09782712893383996843E2


def erf_f64(ctx, x):
    """Cephes ``erf`` (``scipy.special.erf``): |x| <= 1: x T(x^2)/U(x^2);
    else 1 - erfc(|x|) with erfc = exp(-x^2) P(|x|)/Q(|x|) (R/S past 8,
    0 once x^2 > MAXLOG); odd."""
    def magnitude(a):
        z = ctx.op("Mul", a, a)
        small = ctx.op("Div", ctx.op("Mul", a, horner(ctx, z, ERF_T)), horner(ctx, z, ERF_U, leading_one=True))
        e = ctx.op("Exp", ctx.op("Neg", z))
        below8 = _lt(ctx, a, 8.0)
        p = ctx.op("Where", below8, horner(ctx, a, ERFC_P), horner(ctx, a, ERFC_R))
        q = ctx.op("Where", below8, horner(ctx, a, ERFC_Q, leading_one=True),
                   horner(ctx, a, ERFC_S, leading_one=True))
        erfc = ctx.op("Div", ctx.op("Mul", e, p), q)
        erfc = ctx.op("Where", ctx.op("Greater", z, _k(ctx, MAXLOG)), _k(ctx, 0.0), erfc)
        large = ctx.op("Sub", _k(ctx, 1.0), erfc)
        return ctx.op("Where", ctx.op("LessOrEqual", a, _k(ctx, 1.0)), small, large)

    return _odd(ctx, x, magnitude)


# IR op -> float64 form, used by ``elementwise.float_unary`` for float64 inputs.
F64_FORMULAS = {"sin": sin_f64, "cos": cos_f64, "tan": tan_f64, "sinh": sinh_f64, "cosh": cosh_f64,
                "tanh": tanh_f64, "asinh": asinh_f64, "acosh": acosh_f64, "atanh": atanh_f64, "atan": atan_f64,
                "asin": asin_f64, "acos": acos_f64, "erf": erf_f64}
