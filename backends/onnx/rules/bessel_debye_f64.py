"""Debye's uniform asymptotic expansions of the modified Bessel functions for
large orders, in float64: ``ive(nu, a) = I_nu(a) e^-a`` and
``kve(nu, a) = K_nu(a) e^a`` where ``max(nu, a) >= 1000``, with no
loop (``bessel_ik_f64`` takes them there; its series, continued fractions
and recurrences need ~nu or ~a steps).

DLMF 10.41.3-4 (Olver, "The asymptotic expansion of Bessel functions of
large order", Phil. Trans. R. Soc. A 247 (1954)): with z = a / nu,
``r = sqrt(nu^2 + a^2)``, ``p = nu / r`` and ``eta = sqrt(1 + z^2) - asinh(1 / z)``,

    I_nu(a) ~ e^(nu eta) / sqrt(2 pi r) * sum_k U_k(p) / nu^k,
    K_nu(a) ~ sqrt(pi / (2 r)) e^(-nu eta) * sum_k (-1)^k U_k(p) / nu^k,

uniformly in a. The exponent of the scaled functions is
``nu eta - a = nu^2 / (r + a) - nu asinh(nu / a)`` (``sqrt(1 + z^2) - z``
written without cancellation). U_k is the polynomial of degree 3k of
DLMF 10.41.10, generated exactly (``fractions``) by its recurrence
``U_(k+1)(p) = p^2 (1 - p^2) U_k'(p) / 2 + 1/8 int_0^p (1 - 5 t^2) U_k(t) dt``.
Writing ``U_k(p) = p^k V_k(p^2)``, the first omitted term is
``U_11(p) / nu^11 = V_11(p^2) / r^11`` with ``max |V_11| = 551`` on [0, 1]
(and ``max |U_11| = 3.6``), so ``TERMS`` = 11 terms leave at most
``min(3.6 / nu^11, 551 / r^11)``: below 1e-30 wherever ``max(nu, a) >= 1000``,
the region ``bessel_ik_f64`` takes them in, any order down to 0 included
(``ive`` also from order 50 up where a >= nu / 4 or v is a negative
non-integer, where the bound is 3.6 / nu^11 < 1e-18).

Accuracy: the sums are exact to a few ulp; the exponent ``E`` is a
difference of terms of its own size, so the value carries a relative
error of a few ``|E| eps`` (tested: ``(1e-13 + 4 |E| eps)``, so up to
~7e-13 where the value is near the ends of float64's range, ``|E|`` ~ 745). The same holds for
every method that forms ``exp(E)`` in double precision (AMOS, which SciPy
uses, takes these same expansions).
"""

from __future__ import annotations

import math
from fractions import Fraction

from backends.onnx.rules.special_f64 import add, div, k, mul, poly, sincospi, sub, where
from backends.onnx.rules.transcendental import asinh_f64

# below it in both nu and a, the loops of bessel_ik_f64 are short (~a/2 CF1 steps, nu recurrence steps)
# and more accurate where the value is near the float64 range (Debye's exponent error is |E| eps)
DEBYE_BEYOND = 1000.0
TERMS = 11


def takes_debye(c, nu, a):
    """Where ``bessel_ik_f64`` uses these expansions: ``max(nu, a) >=
    DEBYE_BEYOND`` (bool, the broadcast shape of nu and a)."""
    return c.op("GreaterOrEqual", c.op("Max", nu, a), k(c, DEBYE_BEYOND))


def debye_polynomials(count: int) -> list[list[Fraction]]:
    """``U_0 .. U_(count-1)`` of DLMF 10.41.10 as exact ascending
    coefficient lists in p (U_0 = 1, U_1 = (3p - 5p^3) / 24, ...)."""
    polys = [[Fraction(1)]]
    for _ in range(count - 1):
        u = polys[-1]
        out = [Fraction(0)] * (len(u) + 3)
        for i, coef in enumerate(u):
            if i:  # p^2 (1 - p^2) / 2 * i coef p^(i-1)
                out[i + 1] += i * coef / 2
                out[i + 3] -= i * coef / 2
            out[i + 1] += coef / (8 * (i + 1))  # 1/8 int (1 - 5 t^2) coef t^i
            out[i + 3] -= 5 * coef / (8 * (i + 3))
        while out and out[-1] == 0:
            out.pop()
        polys.append(out)
    return polys


# U_k(p) = p^k V_k(p^2): V_k's ascending float coefficients
_V = [[float(coef) for coef in u[kk::2]] for kk, u in enumerate(debye_polynomials(TERMS))]


def debye_terms(c, w, p2):
    """``[U_k(p) / nu^k for k < TERMS]`` written as ``V_k(p^2) w^k`` with
    ``w = p / nu`` (1-D float64 w and p2 = p^2, which may be negative: for
    p = i q, ``U_k(i q) / nu^k = i^k V_k(-q^2) (q / nu)^k``). Term 0 is the
    constant 1. Shared by ``jv``'s Debye forms (``bessel_jv_f64``, DLMF 10.19.3, 10.19.6)."""
    terms = [k(c, 1.0)]
    power = k(c, 1.0)
    for kk in range(1, TERMS):
        power = mul(c, power, w)
        terms.append(mul(c, power, poly(c, p2, _V[kk])))
    return terms


def _sums(c, r, p):
    """``(sum U_k(p) / nu^k, sum (-1)^k U_k(p) / nu^k)`` over ``TERMS`` terms, from the radius r
    and p = nu / r (1-D float64)."""
    terms = debye_terms(c, div(c, k(c, 1.0), r), mul(c, p, p))  # U_k(p) / nu^k = V_k(p^2) / r^k
    even, odd = terms[0], None
    for kk, term in enumerate(terms[1:], 1):
        if kk % 2:
            odd = term if odd is None else add(c, odd, term)
        else:
            even = add(c, even, term)
    return add(c, even, odd), sub(c, even, odd)


def _radius(c, nu, a):
    """``sqrt(nu^2 + a^2)`` without overflow."""
    big, small = c.op("Max", nu, a), c.op("Min", nu, a)
    ratio = div(c, small, big)
    return mul(c, big, c.op("Sqrt", add(c, k(c, 1.0), mul(c, ratio, ratio))))


def _parts(c, nu, a):
    """``(E, r, sums)``: the scaled exponent ``nu eta - a``, the radius and ``_sums``."""
    r = _radius(c, nu, a)
    exponent = sub(c, div(c, mul(c, nu, nu), add(c, r, a)), mul(c, nu, asinh_f64(c, div(c, nu, a))))
    return exponent, r, _sums(c, r, div(c, nu, r))


def ive_debye(c, nu, a, reflect):
    """``ive(nu, a)``, or ``ive(-nu, a)`` where ``reflect`` is 1.0, for
    1-D float64 nu >= 0 and a > 0 (finite) in the region of the module doc: DLMF 10.41.3, and for
    the negative order the reflection ``I_-nu = I_nu + (2/pi) sin(nu pi) K_nu``
    (DLMF 10.27.2) with K_nu from the same exponent (10.41.4)."""
    exponent, r, (plus, minus) = _parts(c, nu, a)
    log_r = c.op("Log", r)
    value = mul(c, c.op("Exp", sub(c, exponent, mul(c, add(c, log_r, k(c, math.log(2 * math.pi))), k(c, 0.5)))),
                plus)
    # (2/pi) sin(nu pi) K_nu e^-a = sin(nu pi) sqrt(2 / (pi r)) e^(-E - 2a) * minus
    s, _ = sincospi(c, nu)
    k_log = sub(c, sub(c, c.op("Neg", exponent), mul(c, a, k(c, 2.0))),
                mul(c, add(c, log_r, k(c, math.log(math.pi / 2))), k(c, 0.5)))
    correction = mul(c, s, c.op("Exp", k_log), minus)  # may be inf where not wanted: selected, not scaled by 0
    return where(c, c.op("Greater", reflect, k(c, 0.0)), add(c, value, correction), value)


def kve_debye(c, nu, a):
    """``kve(nu, a) = K_nu(a) e^a`` for 1-D float64 nu >= 0 and a > 0
    (finite), ``max(nu, a) >= 1000``: DLMF 10.41.4, the prefactor inside the exponential so
    a value near the float64 maximum does not overflow early."""
    exponent, r, (_, minus) = _parts(c, nu, a)
    log_k = sub(c, c.op("Neg", exponent), mul(c, sub(c, c.op("Log", r), k(c, math.log(math.pi / 2))), k(c, 0.5)))
    return mul(c, c.op("Exp", log_k), minus)
