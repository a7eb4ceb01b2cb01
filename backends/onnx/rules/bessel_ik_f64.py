"""The modified Bessel functions of any real order: of the first kind,
``ive(v, x) = I_v(x) exp(-|x|)`` and ``iv(v, x)``, and of the second kind,
``kve(v, x) = K_v(x) exp(x)``, in float64 (the IR ops ``ive``, ``iv``,
``kve``; model-local functions ``BesselIve``/``BesselIv``/``BesselKve``).
``kve`` is the K half of the third method below (K_-v = K_v; +inf at
x = 0, NaN for x < 0, the limit 0 at x = +inf where SciPy gives NaN).

Reference semantics: ``scipy.special.ive``/``iv`` (AMOS), except at
x = +-inf, where the op takes the limits (``ive`` 0, ``iv`` +inf, or
(-1)^v inf at -inf for integer v). Methods, per element (``on_subset``),
after Boost's ``bessel_ik`` (J. Maddock, from N. Temme, "On the numerical
evaluation of the modified Bessel function of the third kind", J. Comput.
Phys. 19 (1975), and Numerical Recipes' ``bessik``), with nu = |v|, a = |x|:

* max(nu, a) >= 1000, or nu >= 50 with a >= nu / 4 or v not an integer:
  Debye's uniform expansions of I and K (DLMF 10.41.3-4,
  ``bessel_debye_f64``), no loop, the reflection below included in log
  space (the K recurrence's K_nu e^a overflows where I_nu or I_-nu is still
  finite or underflows to 0);
* a < nu / 4: the power series ``(a/2)^nu / Gamma(nu+1) sum (a^2/4)^k /
  (k! (nu+1)_k)`` (all terms positive; Boost's ``bessel_i_small_z_series``);
* a > 100 and ``((4 nu^2 + 10) / (8 a))^4 / 24 < 10 eps``: three terms of the
  large-x expansion (DLMF 10.40.1; Boost's ``asymptotic_bessel_i_large_x``);
* otherwise, with ``nu = n + u`` (n = round(nu), |u| <= 1/2): K_u and K_(u+1)
  from Temme's series (a <= 2; ``1/Gamma(1 +- u)`` from their Taylor series,
  so gamma1 has no cancellation) or Steed's continued fraction CF2 (a > 2,
  scaled by e^a), forward recurrence to K_nu, K_(nu+1) (stable for K), the
  continued fraction CF1 for ``I_(nu+1) / I_nu`` (modified Lentz), and the
  Wronskian ``I_nu = 1 / (a (K_(nu+1) + K_nu I_(nu+1)/I_nu))``.
* v < 0 not an integer: the reflection ``I_-nu = I_nu + (2/pi) sin(nu pi) K_nu``
  (DLMF 10.27.2; K_nu from the third method, which such elements take);
  integer v: ``I_-n = I_n``.
* x < 0: ``(-1)^v ive(v, |x|)`` for integer v, NaN otherwise (SciPy);
  x = 0: 1 for v = 0, 0 for v > 0 or a negative integer, NaN otherwise.

Each series or fraction is an ONNX ``Loop`` on its own elements
(``iterative_f64.converge``); outside Debye's region they run at most ~500
(CF1: ~a/2) and ~1000 (the K recurrence: nu) steps.

Measured against mpmath: ``tests/numerics/test_bessel_i.py`` (its docstring
states the bounds per domain).
"""

from __future__ import annotations

import math

import numpy as np

from backends.onnx.rules.bessel_debye_f64 import ive_debye, kve_debye, takes_debye
from backends.onnx.rules.common import I64
from backends.onnx.rules.iterative_f64 import converge, flat_args, on_subset
from backends.onnx.rules.special_f64 import (add, div, gamma_positive, is_integer, k, lgamma_positive, mul, poly,
                                             sincospi, sub, where)

EPS = 2.220446049250313e-16
# Taylor coefficients of 1/Gamma(1 + u) about 0 (mpmath, 40 digits); 27 terms reach 2^-60 at |u| = 1/2
RGAMMA_TAYLOR = (1.0, 0.5772156649015329, -0.6558780715202539, -0.04200263503409524, 0.16653861138229148,
                 -0.04219773455554433, -0.009621971527876973, 0.0072189432466631, -0.0011651675918590652,
                 -0.00021524167411495098, 0.0001280502823881162, -2.013485478078824e-05, -1.2504934821426706e-06,
                 1.133027231981696e-06, -2.056338416977607e-07, 6.116095104481416e-09, 5.002007644469223e-09,
                 -1.18127457048702e-09, 1.0434267116911005e-10, 7.782263439905071e-12, -3.696805618642206e-12,
                 5.100370287454476e-13, -2.0583260535665066e-14, -5.348122539423018e-15, 1.2267786282382608e-15,
                 -1.1812593016974588e-16, 1.1866922547516004e-18)
SINHC = tuple(1.0 / math.factorial(2 * j + 1) for j in range(9))  # sinh(s)/s in s^2, |s| <= 1
SERIES_STEPS = 500
TEMME_STEPS = 200
CF2_STEPS = 500
CF1_STEPS = 20000
RECURRENCE_STEPS = 2000


def _abs_lt(c, a, b):
    return c.op("Less", c.op("Abs", a), c.op("Abs", b))


def small_series(c, nu, a):
    """``ive`` by the power series (Boost ``bessel_i_small_z_series``), nu > 0, a < nu/4."""
    q = mul(c, a, a, k(c, 0.25))

    def step(c, term, total, j):
        j1 = add(c, j, k(c, 1.0))
        term = div(c, mul(c, term, q), mul(c, j1, add(c, nu, j1)))
        total = add(c, total, term)
        return [term, total, j1], c.op("LessOrEqual", c.op("Abs", term), mul(c, total, k(c, EPS / 2)))

    one = mul(c, a, k(c, 0.0))
    _, total, _ = converge(c, [add(c, one, k(c, 1.0)), add(c, one, k(c, 1.0)), one], step, SERIES_STEPS,
                           "ive_series")
    half = mul(c, a, k(c, 0.5))
    direct = div(c, c.op("Pow", half, nu), gamma_positive(c, add(c, nu, k(c, 1.0))))
    logged = c.op("Exp", sub(c, mul(c, nu, c.op("Log", half)), lgamma_positive(c, add(c, nu, k(c, 1.0)))))
    prefix = where(c, c.op("Less", nu, k(c, 170.0)), direct, logged)
    return mul(c, prefix, total, c.op("Exp", c.op("Neg", a)))


def large_x(c, nu, a):
    """``ive`` by three terms of DLMF 10.40.1 (Boost ``asymptotic_bessel_i_large_x``)."""
    mu = mul(c, nu, nu, k(c, 4.0))
    ex = mul(c, a, k(c, 8.0))
    num = sub(c, mu, k(c, 1.0))
    s = sub(c, k(c, 1.0), div(c, num, ex))
    num = mul(c, num, sub(c, mu, k(c, 9.0)))
    den = mul(c, ex, ex, k(c, 2.0))
    s = add(c, s, div(c, num, den))
    num = mul(c, num, sub(c, mu, k(c, 25.0)))
    den = mul(c, den, ex, k(c, 3.0))
    s = sub(c, s, div(c, num, den))
    return div(c, s, c.op("Sqrt", mul(c, a, k(c, 2.0 * math.pi))))


def temme(c, u, a):
    """``(K_u, K_(u+1))`` for |u| <= 1/2, 0 < a <= 2 (Boost ``temme_ik``)."""
    u2 = mul(c, u, u)
    gamma2 = poly(c, u2, RGAMMA_TAYLOR[0::2])
    gamma1 = c.op("Neg", poly(c, u2, RGAMMA_TAYLOR[1::2]))
    rg_plus, rg_minus = sub(c, gamma2, mul(c, u, gamma1)), add(c, gamma2, mul(c, u, gamma1))  # 1/Gamma(1 +- u)
    sinc = mul(c, rg_plus, rg_minus)  # sin(pi u) / (pi u)
    log_half = c.op("Log", mul(c, a, k(c, 0.5)))
    b = c.op("Exp", mul(c, u, log_half))  # (a/2)^u
    sigma = c.op("Neg", mul(c, u, log_half))
    small = c.op("LessOrEqual", c.op("Abs", sigma), k(c, 1.0))
    sig_safe = where(c, small, k(c, 1.0), sigma)
    e_pos, e_neg = c.op("Exp", sig_safe), c.op("Exp", c.op("Neg", sig_safe))
    d = where(c, small, poly(c, mul(c, sigma, sigma), SINHC), div(c, mul(c, sub(c, e_pos, e_neg), k(c, 0.5)), sig_safe))
    cosh = where(c, small, add(c, k(c, 1.0), mul(c, sigma, sigma, k(c, 0.5), poly(c, mul(c, sigma, sigma), [
        2.0 / math.factorial(2 * j + 2) for j in range(9)]))), mul(c, add(c, e_pos, e_neg), k(c, 0.5)))
    f0 = div(c, sub(c, mul(c, cosh, gamma1), mul(c, d, log_half, gamma2)), sinc)
    p0 = div(c, div(c, k(c, 1.0), rg_plus), mul(c, b, k(c, 2.0)))
    q0 = mul(c, div(c, k(c, 1.0), rg_minus), b, k(c, 0.5))
    quarter = mul(c, a, a, k(c, 0.25))

    def step(c, f, p, q, coef, total, total1, j):
        j = add(c, j, k(c, 1.0))
        f = div(c, add(c, mul(c, j, f), p, q), sub(c, mul(c, j, j), u2))
        p = div(c, p, sub(c, j, u))
        q = div(c, q, add(c, j, u))
        h = sub(c, p, mul(c, j, f))
        coef = div(c, mul(c, coef, quarter), j)
        total = add(c, total, mul(c, coef, f))
        total1 = add(c, total1, mul(c, coef, h))
        done = c.op("Less", c.op("Abs", mul(c, coef, f)), mul(c, c.op("Abs", total), k(c, EPS)))
        return [f, p, q, coef, total, total1, j], done

    zero = mul(c, a, k(c, 0.0))
    state = converge(c, [f0, p0, q0, add(c, zero, k(c, 1.0)), f0, p0, zero], step, TEMME_STEPS, "ik_temme")
    return state[4], div(c, mul(c, state[5], k(c, 2.0)), a)


def steed_cf2(c, u, a):
    """``(K_u e^a, K_(u+1) e^a)`` for a > 2 (Boost ``CF2_ik``, Steed's algorithm)."""
    alpha0 = sub(c, mul(c, u, u), k(c, 0.25))
    b0 = mul(c, add(c, a, k(c, 1.0)), k(c, 2.0))
    d0 = div(c, k(c, 1.0), b0)
    zero = mul(c, a, k(c, 0.0))
    q0 = c.op("Neg", alpha0)

    def step(c, alpha, b, d, delta, f, prev, cur, cc, q, s, j):
        j = add(c, j, k(c, 1.0))
        alpha = sub(c, alpha, mul(c, sub(c, j, k(c, 1.0)), k(c, 2.0)))
        b = add(c, b, k(c, 2.0))
        d = div(c, k(c, 1.0), add(c, b, mul(c, alpha, d)))
        delta = mul(c, delta, sub(c, mul(c, b, d), k(c, 1.0)))
        f = add(c, f, delta)
        nxt = div(c, sub(c, prev, mul(c, sub(c, b, k(c, 2.0)), cur)), alpha)
        cc = mul(c, cc, div(c, c.op("Neg", alpha), j))
        q = add(c, q, mul(c, cc, nxt))
        s = add(c, s, mul(c, q, delta))
        done = c.op("Less", c.op("Abs", mul(c, q, delta)), mul(c, c.op("Abs", s), k(c, EPS / 2)))
        return [alpha, b, d, delta, f, cur, nxt, cc, q, s, j], done

    init = [alpha0, b0, d0, d0, d0, zero, add(c, zero, k(c, 1.0)), q0, q0,
            add(c, k(c, 1.0), mul(c, q0, d0)), add(c, zero, k(c, 1.0))]
    state = converge(c, init, step, CF2_STEPS, "ik_cf2")
    f, s = state[4], state[9]
    kv = div(c, c.op("Sqrt", div(c, k(c, math.pi / 2), a)), s)
    kv1 = div(c, mul(c, kv, add(c, k(c, 0.5), u, a, mul(c, alpha0, f))), a)
    return kv, kv1


def forward_k(c, u, a, kv, kv1, n):
    """``(K_(u+n), K_(u+n+1))`` (any common scaling) by ``K_(m+1) = 2m/a K_m + K_(m-1)``."""
    def step(c, prev, cur, j):
        nxt = add(c, mul(c, div(c, mul(c, add(c, u, j), k(c, 2.0)), a), cur), prev)
        j = add(c, j, k(c, 1.0))
        return [cur, nxt, j], c.op("Greater", j, n)

    one = add(c, mul(c, a, k(c, 0.0)), k(c, 1.0))
    state = converge(c, [kv, kv1, one], step, RECURRENCE_STEPS, "ik_recurrence",
                     skip=c.op("Equal", n, k(c, 0.0)))
    return state[0], state[1]


def cf1(c, nu, a):
    """``I_(nu+1) / I_nu`` by CF1 (Boost ``CF1_ik``): modified Lentz on the
    reciprocal ``b_1 + 1/(b_2 + 1/(b_3 + ...))``, ``b_j = 2 (nu + j) / a > 0``,
    which needs no stand-in for a zero b_0."""
    def b_of(j):
        return div(c, mul(c, add(c, nu, j), k(c, 2.0)), a)

    b1 = b_of(k(c, 1.0))

    def step(c, cc, d, g, j):
        j = add(c, j, k(c, 1.0))
        b = b_of(j)
        cc = add(c, b, div(c, k(c, 1.0), cc))
        d = div(c, k(c, 1.0), add(c, b, d))
        delta = mul(c, cc, d)
        g = mul(c, g, delta)
        return [cc, d, g, j], c.op("LessOrEqual", c.op("Abs", sub(c, delta, k(c, 1.0))), k(c, 4 * EPS))

    zero = mul(c, a, k(c, 0.0))
    state = converge(c, [b1, zero, b1, add(c, zero, k(c, 1.0))], step, CF1_STEPS, "ik_cf1")
    return div(c, k(c, 1.0), state[2])


def scaled_k(c, nu, a):
    """``(K_nu e^a, K_(nu+1) e^a)`` for nu >= 0, a > 0 finite: K_u and K_(u+1)
    (Temme for a <= 2, Steed's CF2 beyond) and the forward recurrence."""
    n = c.op("Floor", add(c, nu, k(c, 0.5)))
    u = sub(c, nu, n)
    shape_mask = c.op("LessOrEqual", a, k(c, 2.0))

    def small(c, u, a):
        kv, kv1 = temme(c, u, a)
        e = c.op("Exp", a)
        return _rows(c, mul(c, kv, e), mul(c, kv1, e))

    def large(c, u, a):
        return _rows(c, *steed_cf2(c, u, a))

    pair = _rows(c, mul(c, a, k(c, 0.0)), mul(c, a, k(c, 0.0)))
    pair = on_subset_rows(c, shape_mask, [u, a], small, pair)
    pair = on_subset_rows(c, c.op("Not", shape_mask), [u, a], large, pair)
    kue = c.op("Gather", pair, c.const(0, I64), axis=0)
    ku1e = c.op("Gather", pair, c.const(1, I64), axis=0)
    return forward_k(c, u, a, kue, ku1e, n)


def _rows(c, first, second):
    """A [2, m] stack of two 1-D values."""
    return c.op("Concat", c.op("Unsqueeze", first, c.const([0], I64)),
                c.op("Unsqueeze", second, c.const([0], I64)), axis=0)


def temme_steed(c, nu, a, reflect):
    """``ive`` of order nu (or of -nu where ``reflect`` is 1.0) by K_u, the
    K recurrence, CF1 and the Wronskian (the module doc)."""
    kve, kv1e = scaled_k(c, nu, a)
    fv = cf1(c, nu, a)
    ive = div(c, k(c, 1.0), mul(c, a, add(c, kv1e, mul(c, fv, kve))))
    s, _ = sincospi(c, nu)
    correction = mul(c, k(c, 2.0 / math.pi), s, kve, c.op("Exp", mul(c, a, k(c, -2.0))))
    return add(c, ive, mul(c, reflect, correction))


def on_subset_rows(c, mask, args, method, into):
    """``on_subset`` for a method returning a [2, m] pair: ``into`` ([2, N]) with
    the columns where ``mask`` holds replaced."""
    sub_args = [c.op("Compress", x, mask, axis=0) for x in args]
    values = method(c, *sub_args)
    index = c.op("Transpose", c.op("NonZero", mask), perm=[1, 0])
    transposed = c.op("ScatterND", c.op("Transpose", into, perm=[1, 0]), index, c.op("Transpose", values, perm=[1, 0]))
    return c.op("Transpose", transposed, perm=[1, 0])


def ive(c, v, x):
    """``scipy.special.ive(v, x)`` for float64 v, x of any (broadcast) shapes (the module doc)."""
    shape, (vf, xf) = flat_args(c, v, x)
    nu, a = c.op("Abs", vf), c.op("Abs", xf)
    integer = is_integer(c, vf)
    negative_fraction = c.op("And", c.op("Less", vf, k(c, 0.0)), c.op("Not", integer))
    valid = c.op("And", c.op("Greater", a, k(c, 0.0)), c.op("Not", c.op("IsInf", a)))
    valid = c.op("And", valid, c.op("Not", c.op("Or", c.op("IsInf", nu), c.op("IsNaN", nu))))  # no NaN in a Loop
    out = mul(c, a, k(c, 0.0))
    nu_sq = mul(c, add(c, mul(c, nu, nu, k(c, 4.0)), k(c, 10.0)), div(c, k(c, 0.125), c.op("Max", a, k(c, 1.0))))
    asymptotic = c.op("And", c.op("Greater", a, k(c, 100.0)),
                      c.op("Less", div(c, mul(c, nu_sq, nu_sq, nu_sq, nu_sq), k(c, 24.0)), k(c, 10 * EPS)))
    series = c.op("And", c.op("Less", a, mul(c, nu, k(c, 0.25))), c.op("Not", asymptotic))
    # from order 50 up also outside the series' region and for negative non-integer orders: the Wronskian's
    # K_nu e^a (and the reflection's) overflows before it is divided out where ive is tiny (NaN before)
    reflected_large = c.op("And", c.op("Or", negative_fraction, c.op("Not", series)),
                           c.op("GreaterOrEqual", nu, k(c, 50.0)))
    use_debye = c.op("And", valid, c.op("Or", takes_debye(c, nu, a), reflected_large))
    plain = c.op("And", c.op("And", valid, c.op("Not", use_debye)), c.op("Not", negative_fraction))
    use_series = c.op("And", plain, series)
    use_asymptotic = c.op("And", plain, asymptotic)
    use_temme = c.op("And", c.op("And", valid, c.op("Not", use_debye)),
                     c.op("Not", c.op("Or", use_series, use_asymptotic)))
    out = on_subset(c, use_series, [nu, a], small_series, out)
    out = on_subset(c, use_asymptotic, [nu, a], large_x, out)
    reflect = where(c, negative_fraction, k(c, 1.0), k(c, 0.0))
    out = on_subset(c, use_temme, [nu, a, reflect], temme_steed, out)
    out = on_subset(c, use_debye, [nu, a, reflect], ive_debye, out)
    # x = 0; x < 0; infinities; NaN
    zero_value = where(c, c.op("Equal", vf, k(c, 0.0)), k(c, 1.0), where(c, negative_fraction, k(c, np.nan), k(c, 0.0)))
    out = where(c, c.op("Equal", a, k(c, 0.0)), zero_value, out)
    out = where(c, c.op("IsInf", a), where(c, c.op("IsInf", nu), k(c, np.nan), k(c, 0.0)), out)
    odd = c.op("Equal", sub(c, vf, mul(c, c.op("Floor", mul(c, vf, k(c, 0.5))), k(c, 2.0))), k(c, 1.0))
    out = where(c, c.op("And", c.op("Less", xf, k(c, 0.0)), odd), c.op("Neg", out), out)
    bad = c.op("Or", c.op("And", c.op("Less", xf, k(c, 0.0)), c.op("Not", integer)), c.op("IsInf", nu))
    bad = c.op("Or", bad, c.op("Or", c.op("IsNaN", vf), c.op("IsNaN", xf)))
    out = where(c, bad, k(c, np.nan), out)
    return c.op("Reshape", out, shape)


def iv(c, v, x):
    """``scipy.special.iv(v, x)``: ``ive * exp(|x|)`` (two halves: finite
    wherever the product is); +inf at +inf, (-1)^v inf at -inf (integer v)."""
    y = ive(c, v, x)
    e = c.op("Exp", mul(c, c.op("Abs", x), k(c, 0.5)))
    big = mul(c, mul(c, y, e), e)
    odd = c.op("Equal", sub(c, v, mul(c, c.op("Floor", mul(c, v, k(c, 0.5))), k(c, 2.0))), k(c, 1.0))
    signed_inf = where(c, c.op("And", c.op("Less", x, k(c, 0.0)), odd), k(c, -np.inf), k(c, np.inf))
    return where(c, c.op("And", c.op("IsInf", x), c.op("Not", c.op("IsNaN", y))), signed_inf, big)


def kve(c, v, x):
    """``scipy.special.kve(v, x) = K_v(x) e^x`` (K_-v = K_v): ``scaled_k``, or
    Debye's expansion (``bessel_debye_f64``) where max(nu, x) >= 1000;
    +inf at x = 0, NaN for x < 0, the limit 0 at x = +inf (SciPy: NaN),
    NaN for an infinite order or NaN."""
    shape, (vf, xf) = flat_args(c, v, x)
    nu = c.op("Abs", vf)
    valid = c.op("And", c.op("Greater", xf, k(c, 0.0)), c.op("Not", c.op("IsInf", xf)))
    valid = c.op("And", valid, c.op("Not", c.op("Or", c.op("IsInf", nu), c.op("IsNaN", nu))))  # no NaN in a Loop
    use_debye = c.op("And", valid, takes_debye(c, nu, xf))
    use_temme = c.op("And", valid, c.op("Not", use_debye))
    out = on_subset(c, use_temme, [nu, xf], lambda c, nu, a: scaled_k(c, nu, a)[0], mul(c, xf, k(c, 0.0)))
    out = on_subset(c, use_debye, [nu, xf], kve_debye, out)
    out = where(c, c.op("Equal", xf, k(c, 0.0)), k(c, np.inf), where(c, c.op("IsInf", xf), k(c, 0.0), out))
    bad = c.op("Or", c.op("Less", xf, k(c, 0.0)), c.op("Or", c.op("IsInf", nu), c.op("IsNaN", vf)))
    out = where(c, c.op("Or", bad, c.op("IsNaN", xf)), k(c, np.nan), out)
    return c.op("Reshape", out, shape)


FORMULAS = {"ive": ive, "iv": iv, "kve": kve}
