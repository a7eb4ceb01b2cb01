"""The Bessel function of the first kind of any real order,
``jv(v, x) = J_v(x)``, in float64 (the IR op ``jv``; model-local function
``BesselJv``).

Reference semantics: ``scipy.special.jv`` (AMOS), except at x = +-inf,
where the op takes the limit 0 (SciPy: NaN). Methods, per element
(``on_subset``), after Boost's ``bessel_jy`` (J. Maddock and X. Zhang, from
Numerical Recipes' ``bessjy``: I. J. Thompson and A. R. Barnett, "Coulomb and
Bessel functions of complex arguments and order", J. Comput. Phys. 64 (1986),
Steed's method), with nu = |v|, a = |x| and w = v (or nu for integer v):

* a < 5 or nu > a^2/4: the power series ``(a/2)^w / Gamma(w+1) sum
  (-a^2/4)^k / (k! (w+1)_k)`` (DLMF 10.2.2; Boost's
  ``bessel_j_small_z_series``), also for w < 0 not an integer, where
  ``1/Gamma(1 - nu) = Gamma(nu) sin(pi nu) / pi`` and the sum runs past
  k = nu before it may stop (its terms grow again where k - nu is small);
* max(nu, 1) < a / 100: the large-x form ``M cos(theta)`` with three terms
  of the amplitude and four of the phase (DLMF 10.18.17-18; Boost's
  ``asymptotic_bessel_j_large_x_2``), for any sign of w; cos(a) and sin(a)
  with the exact reduction of ``bessel_f64.cos_sin_phase`` and
  ``(w/2 + 1/4) pi`` by ``sincospi``, so the phase is exact to a few ulp;
* otherwise (nu >= 0; nu = n + u, |u| <= 1/2): CF1 for ``J_(nu+1) / J_nu``
  (modified Lentz), the backward recurrence to J_u, J_(u+1) (scale only),
  Steed's CF2 for ``p + iq = (J_u' + i Y_u') / (J_u + i Y_u)`` and the
  Wronskian for J_u (Boost ``CF1_jy``, ``CF2_jy``); for v < 0 not an
  integer, Y_nu by the forward recurrence from Y_u, Y_(u+1) and the
  reflection ``J_-nu = cos(nu pi) J_nu - sin(nu pi) Y_nu`` (DLMF 10.4.7).
* |a - nu| >= 20 nu^(1/3) where nu >= 1000 (the recurrences would need
  ~nu steps; also for v < 0 not an integer in the series region, whose sum
  runs past k = nu) or a >= 3e4 (CF1 would need ~a steps): Debye's
  expansions with no loop, DLMF 10.19.3-4 below the turning point and
  10.19.6 above it (``debye_below``, ``debye_above``), the U_k of
  ``bessel_debye_f64.debye_terms`` (11 terms; the first omitted one,
  ``|V_11(p^2)| / s^11`` with ``s = sqrt(|nu^2 - a^2|)``, is below 2e-19
  wherever ``|a - nu| >= 20 nu^(1/3)`` (computed for nu = 1e3..1e9): it depends on
  ``(a - nu) / nu^(1/3)`` only, up to O(nu^(-2/3)); 2e-17 at 15 nu^(1/3)),
  negative non-integer orders by DLMF 10.4.7 with Y_nu's Debye forms. The
  uniform Airy-type expansion (DLMF 10.20.4) is not written: within
  20 nu^(1/3) of the turning point Steed's method runs, whose recurrences
  stop at RECURRENCE_STEPS = 20,000, so J is NaN there past |v| ~ 2e4;
* integer v: ``J_-n = (-1)^n J_n`` and ``J_n(-x) = (-1)^n J_n(x)``;
  x < 0 with v not an integer: NaN (SciPy); x = 0: 1 for v = 0, 0 for
  v > 0 or a negative integer, +-inf (the sign of 1/Gamma(1 + v), as SciPy)
  otherwise; v = +-inf: 0 for finite x >= 0, NaN otherwise (SciPy).

Each series or fraction is an ONNX ``Loop`` on its own elements
(``iterative_f64.converge``), NaN where one would need over its step
count; with the Debye region that is only the turning region
``|a - nu| < 20 nu^(1/3)`` past nu ~ 2e4.

Measured against mpmath: ``tests/numerics/test_bessel_jv.py`` and, for the
large orders, ``tests/numerics/test_bessel_jv_debye.py`` (their docstrings
state the bounds per domain: Debye's forms carry ``2 eps nu alpha``
relative below the turning point, ``alpha = acosh(nu / a)``, and
``2 eps nu`` of the envelope above it, the size of the exponent's and the
phase's pieces formed in double precision).
"""

from __future__ import annotations

import math

import numpy as np

from backends.onnx.rules.common import F64
from backends.onnx.rules.bessel_debye_f64 import debye_terms
from backends.onnx.rules.bessel_f64 import cos_sin_phase
from backends.onnx.rules.iterative_f64 import converge, flat_args, on_subset
from backends.onnx.rules.special_f64 import (add, div, gamma_positive, is_integer, k, lgamma_positive, mul,
                                             poly, sincospi, sub, where)
from backends.onnx.rules.mathfn import log1p
from backends.onnx.rules.transcendental import atan_f64

EPS = 2.220446049250313e-16
TINY = 1.4916681462400413e-154  # sqrt(smallest normal): the backward recurrence's starting scale
RESCALE = 1e-250
SERIES_STEPS = 1000
CF1_STEPS = 60000
CF2_STEPS = 500
RECURRENCE_STEPS = 20000
# Debye's forms (no loop) where |x - nu| >= TURNING nu^(1/3) and either nu >= DEBYE_ORDER (the
# recurrences would need ~nu steps) or x >= CF1_LONG (CF1 would need ~x steps)
TURNING = 20.0
DEBYE_ORDER = 1000.0
CF1_LONG = 3.0e4
# atanh(t) - t = sum_j t^(2j+1) / (2j+1) and t - atan(t) = sum_j (-1)^(j+1) t^(2j+1) / (2j+1), j >= 1,
# as t^3 poly(t^2) for t <= 1/2 (27 terms: the next is below 2^-54 of the first)
SERIES_T = 0.5
ATANH_MINUS = [1.0 / (2 * j + 1) for j in range(1, 28)]
MINUS_ATAN = [(-1.0) ** (j + 1) / (2 * j + 1) for j in range(1, 28)]


def series(c, w, a):
    """``J_w(a)`` by the power series (the module doc), a > 0, w >= 0 or not an integer."""
    q = mul(c, a, a, k(c, -0.25))

    def step(c, term, total, j):
        j1 = add(c, j, k(c, 1.0))
        term = div(c, mul(c, term, q), mul(c, j1, add(c, w, j1)))
        total = add(c, total, term)
        small = c.op("LessOrEqual", c.op("Abs", term), mul(c, c.op("Abs", total), k(c, EPS / 2)))
        return [term, total, j1], c.op("And", small, c.op("Greater", add(c, w, j1), k(c, 0.0)))

    zero = mul(c, a, k(c, 0.0))
    _, total, _ = converge(c, [add(c, zero, k(c, 1.0)), add(c, zero, k(c, 1.0)), zero], step, SERIES_STEPS,
                           "jv_series")
    nu = c.op("Abs", w)
    negative = c.op("Less", w, k(c, 0.0))
    s, _ = sincospi(c, nu)
    # (a/2)^w / Gamma(w + 1); for w < 0: (a/2)^-nu Gamma(nu) sin(pi nu) / pi
    g_arg = add(c, nu, where(c, negative, k(c, 0.0), k(c, 1.0)))
    sign_part = where(c, negative, div(c, s, k(c, math.pi)), k(c, 1.0))
    half = mul(c, a, k(c, 0.5))
    gamma = gamma_positive(c, g_arg)
    direct = mul(c, c.op("Pow", half, w), where(c, negative, gamma, div(c, k(c, 1.0), gamma)), sign_part)
    log_gamma = lgamma_positive(c, g_arg)
    logged = mul(c, c.op("Exp", add(c, mul(c, w, c.op("Log", half)),
                                    where(c, negative, log_gamma, c.op("Neg", log_gamma)))), sign_part)
    use_direct = c.op("And", c.op("Less", nu, k(c, 170.0)), c.op("Not", c.op("IsInf", direct)))
    return mul(c, where(c, use_direct, direct, logged), total)


def large_x(c, w, a):
    """``J_w(a)`` by the amplitude and phase of DLMF 10.18.17-18 (Boost
    ``asymptotic_bessel_amplitude``/``asymptotic_bessel_phase_mx``), max(|w|, 1) < a/100."""
    mu = mul(c, w, w, k(c, 4.0))
    m1 = sub(c, mu, k(c, 1.0))
    txq = mul(c, a, a, k(c, 4.0))
    amp = add(c, k(c, 1.0), div(c, m1, mul(c, txq, k(c, 2.0))))
    m9 = mul(c, m1, sub(c, mu, k(c, 9.0)))
    amp = add(c, amp, div(c, mul(c, m9, k(c, 3.0)), mul(c, txq, txq, k(c, 8.0))))
    amp = add(c, amp, div(c, mul(c, m9, sub(c, mu, k(c, 25.0)), k(c, 15.0)), mul(c, txq, txq, txq, k(c, 48.0))))
    amplitude = c.op("Sqrt", div(c, mul(c, amp, k(c, 2.0 / math.pi)), a))
    d1 = mul(c, a, k(c, 4.0))
    d2 = mul(c, d1, d1)
    d3 = mul(c, d1, d2)
    d5 = mul(c, d3, d2)
    d7 = mul(c, d5, d2)
    phase = div(c, m1, mul(c, d1, k(c, 2.0)))
    phase = add(c, phase, div(c, mul(c, m1, sub(c, mu, k(c, 25.0))), mul(c, d3, k(c, 6.0))))
    quad = add(c, mul(c, mu, sub(c, mu, k(c, 114.0))), k(c, 1073.0))
    phase = add(c, phase, div(c, mul(c, m1, quad), mul(c, d5, k(c, 5.0))))
    cubic = sub(c, mul(c, mu, add(c, mul(c, mu, sub(c, mul(c, mu, k(c, 5.0)), k(c, 1535.0))), k(c, 54703.0))),
                k(c, 375733.0))
    phase = add(c, phase, div(c, mul(c, m1, cubic), mul(c, d7, k(c, 14.0))))
    # theta = a + phase - pi s, s = (w/2 + 1/4) mod 2 (exact for |w| < 2^50)
    t = add(c, mul(c, w, k(c, 0.5)), k(c, 0.25))
    t = sub(c, t, mul(c, c.op("Floor", mul(c, t, k(c, 0.5))), k(c, 2.0)))
    sin_s, cos_s = sincospi(c, t)
    cos_a, sin_a = cos_sin_phase(c, a, 0)
    sp, cp = c.op("Sin", phase), c.op("Cos", phase)
    cos_b = add(c, mul(c, cp, cos_s), mul(c, sp, sin_s))  # cos(phase - pi s)
    sin_b = sub(c, mul(c, sp, cos_s), mul(c, cp, sin_s))
    return mul(c, amplitude, sub(c, mul(c, cos_a, cos_b), mul(c, sin_a, sin_b)))


def cf1(c, nu, a):
    """``(J_(nu+1) / J_nu, sign of J_nu)``: ``1 / (b_1 - 1/(b_2 - 1/(b_3 - ...)))``,
    ``b_j = 2 (nu + j) / a`` (Boost ``CF1_jy``: modified Lentz with TINY for the
    zero b_0 and for a zero C or D; J_nu has the sign of the product of the D's,
    the ratios of the convergents' denominators)."""
    def b_of(j):
        return div(c, mul(c, add(c, nu, j), k(c, 2.0)), a)

    def step(c, cc, d, g, sign, j):
        j = add(c, j, k(c, 1.0))
        b = b_of(j)
        cc = sub(c, b, div(c, k(c, 1.0), cc))
        cc = where(c, c.op("Equal", cc, k(c, 0.0)), k(c, TINY), cc)
        d = sub(c, b, d)
        d = div(c, k(c, 1.0), where(c, c.op("Equal", d, k(c, 0.0)), k(c, TINY), d))
        sign = where(c, c.op("Less", d, k(c, 0.0)), c.op("Neg", sign), sign)
        delta = mul(c, cc, d)
        g = mul(c, g, delta)
        return [cc, d, g, sign, j], c.op("Less", c.op("Abs", sub(c, delta, k(c, 1.0))), k(c, 2 * EPS))

    zero = mul(c, a, k(c, 0.0))
    tiny = c.op("Max", zero, k(c, TINY))  # not an Add: onnxruntime drops an Add of a constant that is 0 in float32
    state = converge(c, [tiny, zero, tiny, add(c, zero, k(c, 1.0)), zero], step, CF1_STEPS, "jv_cf1")
    return c.op("Neg", state[2]), state[3]


def cf2(c, u, a):
    """``(p, q)`` with ``p + iq = (J_u' + i Y_u') / (J_u + i Y_u)`` for a > 1
    (Boost ``CF2_jy``: Steed's complex continued fraction in real arithmetic)."""
    u2 = mul(c, u, u)
    br = mul(c, a, k(c, 2.0))
    fr0 = div(c, k(c, -0.5), a)
    a0 = div(c, sub(c, k(c, 0.25), u2), a)
    temp = add(c, mul(c, fr0, fr0), k(c, 1.0))
    ci = add(c, k(c, 2.0), div(c, mul(c, a0, fr0), temp))
    cr = add(c, br, div(c, a0, temp))
    temp = add(c, mul(c, br, br), k(c, 4.0))
    dr, di = div(c, br, temp), div(c, k(c, -2.0), temp)
    delta_r = sub(c, mul(c, cr, dr), mul(c, ci, di))
    delta_i = add(c, mul(c, ci, dr), mul(c, cr, di))
    fr = sub(c, mul(c, fr0, delta_r), delta_i)
    fi = add(c, mul(c, fr0, delta_i), delta_r)

    def step(c, cr, ci, dr, di, fr, fi, bi, j):
        j = add(c, j, k(c, 1.0))
        ak = sub(c, mul(c, sub(c, j, k(c, 0.5)), sub(c, j, k(c, 0.5))), u2)
        bi = add(c, bi, k(c, 2.0))
        temp = add(c, mul(c, cr, cr), mul(c, ci, ci))
        cr, ci = add(c, br, div(c, mul(c, ak, cr), temp)), sub(c, bi, div(c, mul(c, ak, ci), temp))
        dr, di = add(c, br, mul(c, ak, dr)), add(c, bi, mul(c, ak, di))
        temp = add(c, mul(c, dr, dr), mul(c, di, di))
        dr, di = div(c, dr, temp), c.op("Neg", div(c, di, temp))
        delta_r = sub(c, mul(c, cr, dr), mul(c, ci, di))
        delta_i = add(c, mul(c, ci, dr), mul(c, cr, di))
        fr, fi = sub(c, mul(c, fr, delta_r), mul(c, fi, delta_i)), add(c, mul(c, fr, delta_i), mul(c, fi, delta_r))
        done = c.op("Less", add(c, c.op("Abs", sub(c, delta_r, k(c, 1.0))), c.op("Abs", delta_i)), k(c, 2 * EPS))
        return [cr, ci, dr, di, fr, fi, bi, j], done

    zero = mul(c, a, k(c, 0.0))
    state = converge(c, [cr, ci, dr, di, fr, fi, add(c, zero, k(c, 2.0)), add(c, zero, k(c, 1.0))], step,
                     CF2_STEPS, "jv_cf2")
    return state[4], state[5]


def _recurrence(c, u, a, prev, cur, n, direction: float, skip, name):
    """``n`` steps of ``next = 2 (u + j) / a cur - prev`` (j from n down to 1 for
    ``direction`` -1, the backward J recurrence, with a rescale by RESCALE past
    1/RESCALE; j from 1 up to n for +1, the forward Y recurrence). Returns
    ``(prev, cur, rescales)``."""
    def step(c, prev, cur, j, count):
        nxt = sub(c, mul(c, div(c, mul(c, add(c, u, j), k(c, 2.0)), a), cur), prev)
        prev, cur = cur, nxt
        big = c.op("Greater", c.op("Abs", cur), k(c, 1.0 / RESCALE))
        prev = where(c, big, mul(c, prev, k(c, RESCALE)), prev)
        cur = where(c, big, mul(c, cur, k(c, RESCALE)), cur)
        count = add(c, count, c.cast(big, F64))
        j = add(c, j, k(c, direction))
        done = c.op("Less", j, k(c, 1.0)) if direction < 0 else c.op("Greater", j, n)
        return [prev, cur, j, count], done

    zero = mul(c, a, k(c, 0.0))
    start = n if direction < 0 else add(c, zero, k(c, 1.0))
    state = converge(c, [prev, cur, start, zero], step, RECURRENCE_STEPS, name, skip=skip)
    return state[0], state[1], state[3]


def steed(c, nu, a, reflect):
    """``J_nu(a)`` (or ``J_-nu(a)`` where ``reflect`` is 1.0), nu >= 0, a > 5:
    CF1, the backward recurrence, CF2 and the Wronskian (the module doc)."""
    n = c.op("Floor", add(c, nu, k(c, 0.5)))
    u = sub(c, nu, n)
    no_steps = c.op("Equal", n, k(c, 0.0))
    fv, sign = cf1(c, nu, a)
    start = mul(c, sign, k(c, TINY))
    prev, cur, count = _recurrence(c, u, a, mul(c, fv, start), start, n,
                                   -1.0, no_steps, "jv_backward")
    fu = div(c, prev, cur)
    p, q = cf2(c, u, a)
    t = sub(c, div(c, u, a), fu)  # J_u' / J_u
    gamma = div(c, sub(c, p, t), q)  # Y_u / J_u
    gamma = where(c, c.op("Equal", gamma, k(c, 0.0)), div(c, mul(c, u, k(c, EPS)), a), gamma)
    wronskian = div(c, k(c, 2.0 / math.pi), a)
    ju = mul(c, c.op("Sign", cur), c.op("Sqrt", div(c, wronskian, add(c, q, mul(c, gamma, sub(c, p, t))))))
    jv = mul(c, div(c, mul(c, ju, start), cur), c.op("Pow", k(c, RESCALE), count))
    # the reflection for v < 0 not an integer: Y_nu by the forward recurrence
    yu = mul(c, gamma, ju)
    yu1 = mul(c, yu, sub(c, sub(c, div(c, u, a), p), div(c, q, gamma)))
    skip = c.op("Or", c.op("Equal", reflect, k(c, 0.0)), no_steps)
    y_nu, _, _ = _recurrence(c, u, a, yu, yu1, n, 1.0, skip, "jv_forward_y")
    s, co = sincospi(c, nu)
    reflected = sub(c, mul(c, co, jv), mul(c, s, y_nu))
    return where(c, c.op("Equal", reflect, k(c, 1.0)), reflected, jv)


def _sqrt_difference(c, big, small):
    """``sqrt(big^2 - small^2)`` as ``sqrt(big - small) sqrt(big + small)`` (no overflow, no cancellation)."""
    return mul(c, c.op("Sqrt", sub(c, big, small)), c.op("Sqrt", add(c, big, small)))


def _odd_series(c, t, coeffs):
    """``t^3 poly(t^2, coeffs)`` (t clamped to [0, SERIES_T], where the series converge)."""
    t = c.op("Min", t, k(c, SERIES_T))
    t2 = mul(c, t, t)
    return mul(c, t, t2, poly(c, t2, coeffs))


def debye_below(c, nu, a, reflect):
    """``J_nu(a)`` (or ``J_-nu(a)`` where ``reflect`` is 1.0) for 1-D float64
    ``0 < a <= nu - TURNING nu^(1/3)``: Debye's expansions DLMF 10.19.3-4
    with ``sech(alpha) = a / nu``, ``s = nu tanh(alpha) = sqrt(nu^2 - a^2)``::

        J_nu(a) ~  e^E  / sqrt(2 pi s)  * sum_k U_k(p) / nu^k,
        Y_nu(a) ~ -e^-E * sqrt(2 / (pi s)) * sum_k (-1)^k U_k(p) / nu^k,

    ``p = coth(alpha) = nu / s``, ``U_k(p) / nu^k = V_k(p^2) / s^k`` (``debye_terms``),
    ``E = s - nu alpha = -nu (atanh(t) - t)``, t = s / nu: by its series for t <= 1/2
    (no cancellation), else ``s - nu log1p((nu - a + s) / a)``. The negative order by
    ``J_-nu = cos(nu pi) J_nu - sin(nu pi) Y_nu`` (DLMF 10.4.7), Y's factor inside the
    exponential (it may overflow to +-inf, as the value does)."""
    s = _sqrt_difference(c, nu, a)
    t = div(c, s, nu)
    e_small = c.op("Neg", mul(c, nu, _odd_series(c, t, ATANH_MINUS)))
    # alpha = log((nu + s) / a) = log1p((nu - a + s) / a): nu - a exact where a >= nu / 2 (Sterbenz)
    e_big = sub(c, s, mul(c, nu, log1p(c, div(c, add(c, sub(c, nu, a), s), a), F64)))
    exponent = where(c, c.op("LessOrEqual", t, k(c, SERIES_T)), e_small, e_big)
    q = div(c, nu, s)
    terms = debye_terms(c, div(c, k(c, 1.0), s), mul(c, q, q))
    even = add(c, *terms[0::2])
    odd = add(c, *terms[1::2])
    log_s = c.op("Log", s)
    j = mul(c, c.op("Exp", sub(c, exponent, mul(c, add(c, log_s, k(c, math.log(2 * math.pi))), k(c, 0.5)))),
            add(c, even, odd))
    sin_pi, cos_pi = sincospi(c, nu)
    # -sin(nu pi) Y_nu = sign(sin) exp(-E - log(pi s / 2) / 2 + log|sin|) (even - odd)
    y_log = sub(c, add(c, c.op("Neg", exponent), c.op("Log", c.op("Abs", sin_pi))),
                mul(c, add(c, log_s, k(c, math.log(math.pi / 2))), k(c, 0.5)))
    y_part = mul(c, c.op("Sign", sin_pi), c.op("Exp", y_log), sub(c, even, odd))
    reflected = add(c, mul(c, cos_pi, j), y_part)
    return where(c, c.op("Equal", reflect, k(c, 1.0)), reflected, j)


def debye_above(c, nu, a, reflect):
    """``J_nu(a)`` (or ``J_-nu(a)`` where ``reflect`` is 1.0) for 1-D float64
    ``a >= nu + TURNING nu^(1/3)``, nu > 0: DLMF 10.19.6 with ``sec(beta) = a / nu``,
    ``s = nu tan(beta) = sqrt(a^2 - nu^2)``, ``xi = nu (tan(beta) - beta) - pi/4``::

        J_nu(a) ~ sqrt(2 / (pi s)) (cos(xi) P + sin(xi) Q),
        Y_nu(a) ~ sqrt(2 / (pi s)) (sin(xi) P - cos(xi) Q),

    with q = cot(beta) = nu / s, ``U_k(i q) / nu^k = i^k V_k(-q^2) / s^k``, so ``P = sum_k (-1)^k V_2k(-q^2) / s^2k`` and
    ``Q = sum_k (-1)^k V_(2k+1)(-q^2) / s^(2k+1)``. The phase: for t = s / nu <= 1/2,
    ``nu (t - atan(t))`` by its series and ``bessel_f64.cos_sin_phase`` (its - pi/4 exact);
    beyond, ``xi = a + nu (atan(nu / s) - nu / (s + a)) - (nu/2 + 1/4) pi`` (as
    ``s = a - nu^2 / (s + a)``), with a and the middle term reduced exactly
    (``cos_sin_phase``) and ``(nu mod 4) / 2 + 1/4`` by ``sincospi``, so the phase error is
    a few ulp of the middle term (~nu^2 / (2a) for a >> nu, below nu pi / 2 everywhere).
    The negative order by DLMF 10.4.7 as ``debye_below``."""
    s = _sqrt_difference(c, a, nu)
    t = div(c, s, nu)
    q = div(c, nu, s)
    terms = debye_terms(c, div(c, k(c, 1.0), s), c.op("Neg", mul(c, q, q)))
    p_sum = add(c, *[term if i % 2 == 0 else c.op("Neg", term) for i, term in enumerate(terms[0::2])])
    q_sum = add(c, *[term if i % 2 == 0 else c.op("Neg", term) for i, term in enumerate(terms[1::2])])
    theta = mul(c, nu, _odd_series(c, t, MINUS_ATAN))
    cos_small, sin_small = cos_sin_phase(c, theta, 1)
    # s = a - nu^2 / (s + a): a reduced exactly, the rest (>= 0) with its own few-ulp error
    cos_s, sin_s = cos_sin_phase(c, a, 0)
    rest = mul(c, nu, sub(c, atan_f64(c, q), div(c, nu, add(c, s, a))))
    cos_f, sin_f = cos_sin_phase(c, c.op("Max", rest, k(c, 0.0)), 0)
    cos_a = sub(c, mul(c, cos_s, cos_f), mul(c, sin_s, sin_f))
    sin_a = add(c, mul(c, sin_s, cos_f), mul(c, cos_s, sin_f))
    quarter = add(c, mul(c, sub(c, nu, mul(c, c.op("Floor", mul(c, nu, k(c, 0.25))), k(c, 4.0))), k(c, 0.5)),
                  k(c, 0.25))
    sin_b, cos_b = sincospi(c, quarter)
    cos_big = add(c, mul(c, cos_a, cos_b), mul(c, sin_a, sin_b))
    sin_big = sub(c, mul(c, sin_a, cos_b), mul(c, cos_a, sin_b))
    small = c.op("LessOrEqual", t, k(c, SERIES_T))
    cos_xi, sin_xi = where(c, small, cos_small, cos_big), where(c, small, sin_small, sin_big)
    amplitude = c.op("Sqrt", div(c, k(c, 2.0 / math.pi), s))
    j = mul(c, amplitude, add(c, mul(c, cos_xi, p_sum), mul(c, sin_xi, q_sum)))
    y = mul(c, amplitude, sub(c, mul(c, sin_xi, p_sum), mul(c, cos_xi, q_sum)))
    sin_pi, cos_pi = sincospi(c, nu)
    reflected = sub(c, mul(c, cos_pi, j), mul(c, sin_pi, y))
    return where(c, c.op("Equal", reflect, k(c, 1.0)), reflected, j)


def debye(c, nu, a, reflect):
    """``debye_below`` where a < nu, ``debye_above`` where a > nu (1-D float64)."""
    below = c.op("Less", a, nu)
    out = mul(c, a, k(c, 0.0))
    out = on_subset(c, below, [nu, a, reflect], debye_below, out)
    return on_subset(c, c.op("Not", below), [nu, a, reflect], debye_above, out)


def jv(c, v, x):
    """``scipy.special.jv(v, x)`` for float64 v, x of any (broadcast) shapes (the module doc)."""
    shape, (vf, xf) = flat_args(c, v, x)
    nu, a = c.op("Abs", vf), c.op("Abs", xf)
    integer = is_integer(c, vf)
    negative_fraction = c.op("And", c.op("Less", vf, k(c, 0.0)), c.op("Not", integer))
    w = where(c, integer, nu, vf)
    valid = c.op("And", c.op("Greater", a, k(c, 0.0)), c.op("Not", c.op("IsInf", a)))
    valid = c.op("And", valid, c.op("Not", c.op("Or", c.op("IsInf", nu), c.op("IsNaN", nu))))  # no NaN in a Loop
    asymptotic = c.op("Less", c.op("Max", nu, k(c, 1.0)), mul(c, a, k(c, 0.01)))
    series_region = c.op("Or", c.op("Less", a, k(c, 5.0)), c.op("Greater", nu, mul(c, a, a, k(c, 0.25))))
    use_asymptotic = c.op("And", valid, asymptotic)
    # Debye: away from the turning point, where the loops would be long (the module doc)
    away = c.op("GreaterOrEqual", c.op("Abs", sub(c, a, nu)), mul(c, c.op("Pow", nu, k(c, 1.0 / 3.0)), k(c, TURNING)))
    large_order = c.op("GreaterOrEqual", nu, k(c, DEBYE_ORDER))
    long_loops = c.op("Or", large_order, c.op("GreaterOrEqual", a, k(c, CF1_LONG)))
    # the series runs past k = nu for a negative non-integer order: Debye takes those from DEBYE_ORDER on
    debye_region = c.op("Or", c.op("Not", series_region), c.op("And", negative_fraction, large_order))
    use_debye = c.op("And", c.op("And", valid, c.op("Not", asymptotic)),
                     c.op("And", c.op("And", away, long_loops), debye_region))
    use_series = c.op("And", c.op("And", valid, series_region), c.op("Not", c.op("Or", asymptotic, use_debye)))
    use_steed = c.op("And", valid, c.op("Not", c.op("Or", c.op("Or", use_series, use_asymptotic), use_debye)))
    out = mul(c, a, k(c, 0.0))
    out = on_subset(c, use_series, [w, a], series, out)
    out = on_subset(c, use_asymptotic, [w, a], large_x, out)
    reflect = where(c, negative_fraction, k(c, 1.0), k(c, 0.0))
    out = on_subset(c, use_steed, [nu, a, reflect], steed, out)
    out = on_subset(c, use_debye, [nu, a, reflect], debye, out)
    odd = c.op("And", integer, c.op("Equal", sub(c, vf, mul(c, c.op("Floor", mul(c, vf, k(c, 0.5))), k(c, 2.0))),
                                     k(c, 1.0)))
    flip = c.op("And", odd, c.op("Xor", c.op("Less", vf, k(c, 0.0)), c.op("Less", xf, k(c, 0.0))))
    out = where(c, flip, c.op("Neg", out), out)
    # x = 0; +-inf (the limit 0); x < 0 with v not an integer; an infinite order; NaN
    s, _ = sincospi(c, nu)
    pole = where(c, c.op("Less", s, k(c, 0.0)), k(c, -np.inf), k(c, np.inf))
    zero_value = where(c, c.op("Equal", vf, k(c, 0.0)), k(c, 1.0), where(c, negative_fraction, pole, k(c, 0.0)))
    out = where(c, c.op("Equal", a, k(c, 0.0)), zero_value, out)
    out = where(c, c.op("IsInf", a), k(c, 0.0), out)
    infinite_order = c.op("IsInf", nu)  # SciPy: 0 for finite x >= 0, NaN otherwise
    bad = c.op("And", c.op("Less", xf, k(c, 0.0)), c.op("Or", c.op("Not", integer), infinite_order))
    bad = c.op("Or", bad, c.op("And", infinite_order, c.op("IsInf", a)))
    bad = c.op("Or", bad, c.op("Or", c.op("IsNaN", vf), c.op("IsNaN", xf)))
    out = where(c, bad, k(c, np.nan), out)
    return c.op("Reshape", out, shape)


FORMULAS = {"jv": jv}
