"""Bessel functions of the first kind J0 and J1 in float64 (the IR ops
``j0`` and ``j1``), model-local functions ``BesselJ0``/``BesselJ1``.

Sources: Cephes ``j0.c`` and ``j1.c`` (S. Moshier, as in
``scipy.special.j0``/``j1``):

* |x| <= 5: ``J0 = (z - r1^2)(z - r2^2) R(z)`` and
  ``J1 = x (z - s1^2)(z - s2^2) R(z)`` with z = x^2, the rational
  approximations RP/RQ of Cephes and the squares of the first two zeros
  (r1 = 2.4048.., r2 = 5.5201.. of J0; s1 = 3.8317.., s2 = 7.0156.. of J1).
  Unlike Cephes, ``z - r^2`` is computed from the exact product x*x (Dekker)
  and r^2 as a double-double, so the value stays relatively accurate at
  the zeros themselves.
* |x| > 5: the Hankel asymptotic form (DLMF 10.17.3) with Cephes' rational
  P and Q in w = 5/x:
  ``J_n = sqrt(2 / (pi x)) (P cos(theta) - w Q sin(theta))``,
  ``theta = x - (2n + 1) pi/4``. Cephes evaluates ``cos(x)``/``sin(x)`` in
  the C library; here theta is reduced to ``m pi/2 + r`` (|r| <= pi/4) by
  ``reduce_quarter_pi``, exact products of an integer of at most 27 bits
  with 26-bit pieces of pi/4 summed with error-free transformations (a
  Cody-Waite reduction carried to 180 bits), so Sin/Cos only see [-pi/4, pi/4]
  and the phase is exact to a few ulp of r for |x| < 2^52. For |x| >= 2^52
  the phase is onnxruntime's Sin/Cos of x (the C library on its CPU
  provider, accurate there; elsewhere the error is bounded only by the
  amplitude, 1.1e-8 at most).

Limits: J0(+-inf) = 0 and J1(+-inf) = +-0, the mathematical limits (the C
library's ``j0``/``j1``, which PyTensor's C backend calls; SciPy 1.17
returns NaN there); NaN for NaN.

Measured against mpmath (``tests/numerics/test_bessel_j.py``, 10,000
points): relative error 4.7e-16 on |x| <= 5 (zeros included); beyond,
``|error| <= 1e-13 |J| + 5e-16 sqrt(2/(pi x))``: 3.7e-15 relative where
|J| >= 5e-3 sqrt(2/(pi x)), and near the zeros absolute (measured 5.8e-16
of the envelope), as any method through the Hankel form, which cancels
there (Cephes states 4.2e-16 absolute).
"""

from __future__ import annotations

import math

from backends.onnx.rules.special_f64 import add, div, k, mul, poly, sub, where

# Cephes j0.c
J0_PP = (7.96936729297347051624E-4, 8.28352392107440799803E-2, 1.23953371646414299388E0, 5.44725003058768775090E0,
         8.74716500199817011941E0, 5.30324038235394892183E0, 9.99999999999999997821E-1)
J0_PQ = (9.24408810558863637013E-4, 8.56288474354474431428E-2, 1.25352743901058953537E0, 5.47097740330417105182E0,
         8.76190883237069594232E0, 5.30605288235394617618E0, 1.00000000000000000218E0)
J0_QP = (-1.13663838898469149931E-2, -1.28252718670509318512E0, -1.95539544257735972385E1, -9.32060152123768231369E1,
         -1.77681167980488050595E2, -1.47077505154951170175E2, -5.14105326766599330220E1, -6.05014350600728481186E0)
J0_QQ = (1.0, 6.43178256118178023184E1, 8.56430025976980587198E2, 3.88240183605401609683E3, 7.24046774195652478189E3,
         5.93072701187316984827E3, 2.06209331660327847417E3, 2.42005740240291393179E2)
J0_RP = (-4.79443220978201773821E9, 1.95617491946556577543E12, -2.49248344360967716204E14, 9.70862251047306323952E15)
J0_RQ = (1.0, 4.99563147152651017219E2, 1.73785401676374683123E5, 4.84409658339962045305E7, 1.11855537045356834862E10,
         2.11277520115489217587E12, 3.10518229857422583814E14, 3.18121955943204943306E16, 1.71086294081043136091E18)
J0_ZEROS_SQ = ((5.783185962946784, 4.123247343506204e-16), (30.471262343662087, -2.366534485750659e-16))

# Cephes j1.c
J1_RP = (-8.99971225705559398224E8, 4.52228297998194034323E11, -7.27494245221818276015E13, 3.68295732863852883286E15)
J1_RQ = (1.0, 6.20836478118054335476E2, 2.56987256757748830383E5, 8.35146791431949253037E7, 2.21511595479792499675E10,
         4.74914122079991414898E12, 7.84369607876235854894E14, 8.95222336184627338078E16, 5.32278620332680085395E18)
J1_PP = (7.62125616208173112003E-4, 7.31397056940917570436E-2, 1.12719608129684925192E0, 5.11207951146807644818E0,
         8.42404590141772420927E0, 5.21451598682361504063E0, 1.00000000000000000254E0)
J1_PQ = (5.71323128072548699714E-4, 6.88455908754495404082E-2, 1.10514232634061696926E0, 5.07386386128601488557E0,
         8.39985554327604159757E0, 5.20982848682361821619E0, 9.99999999999999997461E-1)
J1_QP = (5.10862594750176621635E-2, 4.98213872951233449420E0, 7.58238284132545283818E1, 3.66779609360150777800E2,
         7.10856304998926107277E2, 5.97489612400613639965E2, 2.11688757100572135698E2, 2.52070205858023719784E1)
J1_QQ = (1.0, 7.42373277035675149943E1, 1.05644886038262816351E3, 4.98641058337653607651E3, 9.56231892404756170795E3,
         7.99704160447350683650E3, 2.82619278517639096600E3, 3.36093607810698293419E2)
J1_ZEROS_SQ = ((14.681970642123893, -9.858177825793294e-17), (49.2184563216946, 5.086354069436341e-16))

# pi/4 as 26-bit pieces (each product with an integer below 2^27 is exact) and a 53-bit tail (mpmath)
PIO4_PIECES = (0.7853981703519821, -6.954533837699728e-09, 3.061616966026797e-17, 3.1841585892423996e-25,
               -7.486924525329365e-34, 1.0335160440761152e-43, 1.0837084206336272e-51)
SQRT_2_OVER_PI = 0.79788456080286535588
SPLIT = 2.0 ** 26
BIG = 2.0 ** 52  # from here on the phase is onnxruntime's Sin/Cos of x (the module doc)


def cephes_polevl(c, x, coeffs):
    """Cephes ``polevl``: ``coeffs[0] x^n + ... + coeffs[n]`` (highest power first)."""
    return poly(c, x, list(reversed(coeffs)))


def two_sum(c, a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e = a + b`` exactly (Knuth)."""
    s = add(c, a, b)
    bb = sub(c, s, a)
    e = add(c, sub(c, a, sub(c, s, bb)), sub(c, b, bb))
    return s, e


def two_product(c, a, b):
    """``(p, e)`` with ``p = fl(a b)`` and ``p + e = a b`` exactly (Dekker,
    Veltkamp's split at 27 bits); |a|, |b| below 2^996."""
    def halves(v):
        t = mul(c, v, k(c, 134217729.0))
        hi = sub(c, t, sub(c, t, v))
        return hi, sub(c, v, hi)
    p = mul(c, a, b)
    ah, al = halves(a)
    bh, bl = halves(b)
    e = add(c, sub(c, mul(c, ah, bh), p), mul(c, ah, bl), mul(c, al, bh))
    return p, add(c, e, mul(c, al, bl))


def minus_zero_square(c, x, zero_sq):
    """``x^2 - r^2`` for the double-double ``r^2 = hi + lo``, exact up to one
    rounding (x^2 exact by Dekker; x^2 - hi exact near the zero by Sterbenz)."""
    p, e = two_product(c, x, x)
    return add(c, sub(c, p, k(c, zero_sq[0])), sub(c, e, k(c, zero_sq[1])))


def reduce_quarter_pi(c, x, odd: int):
    """``(m, r_hi, r_lo)`` with ``x - odd pi/4 = m pi/2 + r_hi + r_lo``,
    |r| <= pi/4 (float64 x >= 0, m an integer-valued float64).

    ``N = 2m + odd`` is split into ``N1`` (a multiple of 2^26) and ``N2``
    (|N2| <= 2^25), both products with each 26-bit piece of pi/4 are exact,
    and ``x - sum N_i p_j`` is summed with ``two_sum`` (errors carried in a
    second word): Cody-Waite to 180 bits of pi/4, so r keeps a few ulp even
    where x is within 2^-60 x of a multiple of pi/4 (N < 2^53)."""
    m = c.op("Round", mul(c, sub(c, x, k(c, odd * math.pi / 4)), k(c, 2.0 / math.pi)))
    n = add(c, mul(c, m, k(c, 2.0)), k(c, float(odd)))
    n1 = mul(c, c.op("Round", div(c, n, k(c, SPLIT))), k(c, SPLIT))
    n2 = sub(c, n, n1)
    s, lo = x, k(c, 0.0)
    for piece in PIO4_PIECES:
        for part in (n1, n2):
            s, e = two_sum(c, s, c.op("Neg", mul(c, part, k(c, piece))))
            lo = add(c, lo, e)
    hi = add(c, s, lo)
    return m, hi, sub(c, lo, sub(c, hi, s))


def cos_sin_phase(c, x, odd: int):
    """``(cos(theta), sin(theta))`` for ``theta = x - odd pi/4`` (x >= 0 finite)."""
    m, r, rl = reduce_quarter_pi(c, x, odd)
    sr, cr = c.op("Sin", r), c.op("Cos", r)
    sr, cr = add(c, sr, mul(c, cr, rl)), sub(c, cr, mul(c, sr, rl))
    q = sub(c, m, mul(c, c.op("Floor", mul(c, m, k(c, 0.25))), k(c, 4.0)))  # m mod 4, exact
    is_q = [c.op("Equal", q, k(c, float(j))) for j in (1, 2, 3)]
    neg_sr, neg_cr = c.op("Neg", sr), c.op("Neg", cr)
    cos_t = where(c, is_q[0], neg_sr, where(c, is_q[1], neg_cr, where(c, is_q[2], sr, cr)))
    sin_t = where(c, is_q[0], cr, where(c, is_q[1], neg_sr, where(c, is_q[2], neg_cr, sr)))
    # x >= 2^52 (N would not split into two 27-bit integers): onnxruntime's own Sin/Cos of x
    big = c.op("GreaterOrEqual", x, k(c, BIG))
    c0, s0 = k(c, math.cos(odd * math.pi / 4)), k(c, math.sin(odd * math.pi / 4))
    sx, cx = c.op("Sin", x), c.op("Cos", x)
    cos_t = where(c, big, add(c, mul(c, cx, c0), mul(c, sx, s0)), cos_t)
    sin_t = where(c, big, sub(c, mul(c, sx, c0), mul(c, cx, s0)), sin_t)
    return cos_t, sin_t


def hankel(c, a, odd: int, pp, pq, qp, qq):
    """``sqrt(2/(pi a)) (P cos(theta) - (5/a) Q sin(theta))`` for a > 5
    (Cephes' rational P, Q in 25/a^2; a clamped to >= 5 by the caller)."""
    w = div(c, k(c, 5.0), a)
    z = mul(c, w, w)
    p = div(c, cephes_polevl(c, z, pp), cephes_polevl(c, z, pq))
    q = div(c, cephes_polevl(c, z, qp), cephes_polevl(c, z, qq))
    cos_t, sin_t = cos_sin_phase(c, a, odd)
    val = sub(c, mul(c, p, cos_t), mul(c, w, q, sin_t))
    return div(c, mul(c, val, k(c, SQRT_2_OVER_PI)), c.op("Sqrt", a))


def j0(c, x):
    """``J0(x)`` (the module doc): even; 0 at +-inf; NaN for NaN."""
    a = c.op("Abs", x)
    small_a = c.op("Min", a, k(c, 5.0))
    z = mul(c, small_a, small_a)
    rational = div(c, cephes_polevl(c, z, J0_RP), cephes_polevl(c, z, J0_RQ))
    small = mul(c, minus_zero_square(c, small_a, J0_ZEROS_SQ[0]), minus_zero_square(c, small_a, J0_ZEROS_SQ[1]),
                rational)
    finite = c.op("Min", c.op("Max", a, k(c, 5.0)), k(c, 1e300))
    large = hankel(c, finite, 1, J0_PP, J0_PQ, J0_QP, J0_QQ)
    y = where(c, c.op("LessOrEqual", a, k(c, 5.0)), small, large)
    y = where(c, c.op("IsInf", x), k(c, 0.0), y)
    return where(c, c.op("IsNaN", x), x, y)


def j1(c, x):
    """``J1(x)`` (the module doc): odd; +-0 at +-inf; NaN for NaN."""
    a = c.op("Abs", x)
    small_a = c.op("Min", a, k(c, 5.0))
    z = mul(c, small_a, small_a)
    rational = div(c, cephes_polevl(c, z, J1_RP), cephes_polevl(c, z, J1_RQ))
    small = mul(c, small_a, minus_zero_square(c, small_a, J1_ZEROS_SQ[0]),
                minus_zero_square(c, small_a, J1_ZEROS_SQ[1]), rational)
    finite = c.op("Min", c.op("Max", a, k(c, 5.0)), k(c, 1e300))
    large = hankel(c, finite, 3, J1_PP, J1_PQ, J1_QP, J1_QQ)
    y = where(c, c.op("LessOrEqual", a, k(c, 5.0)), small, large)
    y = where(c, c.op("IsInf", x), k(c, 0.0), y)
    y = where(c, c.op("Less", x, k(c, 0.0)), c.op("Neg", y), y)
    return where(c, c.op("IsNaN", x), x, y)


FORMULAS = {"j0": j0, "j1": j1}
