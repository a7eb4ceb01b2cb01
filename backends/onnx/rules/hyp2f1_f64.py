"""float64 Gauss hypergeometric function ``hyp2f1`` (2F1(a, b; c; x), real
arguments) by Cephes ``hyp2f1.c`` (Moshier, Cephes Math Library 2.8; the
algorithm of SciPy's real ``hyp2f1``, ``xsf/cephes/hyp2f1.h``), its
recursions unrolled into argument transformations chosen per element:

* special values first, as Cephes: 1 at x = 0 and at a = 0 or b = 0 (c != 0);
  ``(1-x)^-a`` for b = c and ``(1-x)^-b`` for a = c (|x| < 1 or x = -1);
  inf for c a non-positive integer unless a or b is a non-positive integer
  that ends the series first, for x > 1 unless the function is a polynomial,
  and at x = 1 where c - a - b <= 0; Gauss's sum
  ``Gamma(c) Gamma(c-a-b) / (Gamma(c-a) Gamma(c-b))`` at x = 1 (AMS55 15.1.20);
* Euler's transformation ``(1-x)^(c-a-b) 2F1(c-a, c-b; c; x)`` (AMS55 15.3.3)
  where c - a - b <= -1, and for c - a or c - b a non-positive integer;
* for x < -2 with b - a not an integer, the two series in 1/x (AMS55 15.3.7);
  for the other x < -1 and for -1 < x < -0.5, Pfaff's ``(1-x)^-a
  2F1(a, c-b; c; x/(x-1))`` (AMS55 15.3.4/15.3.5), then Euler's again;
* for 0.9 < x < 1, the power series if its error estimate is below 1e-12
  (Cephes ``ETHRESH``), else the transformation to 1 - x (AMS55 15.3.6) for
  non-integer c - a - b and its psi-function series (AMS55 15.3.10-12, the
  degenerate case) for integer c - a - b;
* elsewhere the power series (Cephes ``hys2f1``), which also evaluates the
  polynomials (a or b a non-positive integer) at any x; where |a| > |c| + 1
  it runs at a shifted by an integer and Cephes ``hyp2f1ra``'s recurrence in
  a (AMS55 15.2.10) carries it back;
* for -1 < c - a - b < 0 where that estimate fails, Cephes' recurrence in c
  (AMS55 15.2.27) from c + 2 or c + 3.

Each series is a ``converge`` Loop on its own elements
(``iterative_f64.on_subset``); NaN where one has not converged within its
step limit (Cephes' 10,000 terms). Calls that Cephes makes more than once
(the two series of each transformation, ``hyt2f1`` at c and at the
recurrence's starts) run once on concatenated arguments (``batched``), so
the model holds 23 Loops. The errors measured against mpmath (SciPy's,
unbounded where the series and transformations cancel) are in
``tests/numerics/test_hyp2f1.py`` and ``docs/numerics.md``.
"""

from __future__ import annotations

import numpy as np

from backends.onnx.rules.common import I64
from backends.onnx.rules.iterative_f64 import converge, flat_args, on_subset
from backends.onnx.rules.special_f64 import add, div, fold, gamma, k, lt, mul, psi, sub, where

MACHEP = 1.11022302462515654042e-16  # Cephes MACHEP
EPS = 1.0e-13  # Cephes hyp2f1.c EPS: closeness to an integer
ETHRESH = 1.0e-12  # Cephes hyp2f1.c: largest accepted error estimate of a series
MAX_SERIES_STEPS = 10000  # Cephes MAX_ITERATIONS
MAX_TRIAL_STEPS = MAX_SERIES_STEPS  # the series tried first for 0.9 < x < 1 (Cephes: its error estimate decides)


def _zeros(c, x):
    """Zeros of x's shape (``0 * x`` is NaN at x = +-inf)."""
    return c.op("Expand", k(c, 0.0), c.op("Shape", x))


def _near_int(c, v):
    return lt(c, c.op("Abs", sub(c, v, c.op("Round", v))), EPS)


def _nonpositive_int(c, v):
    return c.op("And", c.op("LessOrEqual", v, k(c, 0.0)), _near_int(c, v))


def _or(c, *bs):
    return fold(c, "Or", bs)


def _and(c, *bs):
    return fold(c, "And", bs)


def _not(c, b):
    return c.op("Not", b)


def _stacked(c, fn, xs):
    """``[fn(x) for x in xs]`` for an elementwise ``fn`` and 1-D ``xs`` of
    one length, built once on their stack (Gamma and psi are large graphs)."""
    stack = c.op("Concat", *(c.op("Unsqueeze", x, c.const([0], I64)) for x in xs), axis=0)
    out = fn(c, stack)
    return [c.op("Gather", out, c.const(i, I64), axis=0) for i in range(len(xs))]


def gammas(c, gamma_of, rgamma_of):
    """``(Gamma(x) for x in gamma_of) + (1/Gamma(x) for x in rgamma_of)``, 1/Gamma 0 at the poles."""
    values = _stacked(c, gamma, [*gamma_of, *rgamma_of])
    recip = [where(c, _nonpositive_int(c, v), k(c, 0.0), div(c, k(c, 1.0), g))
             for v, g in zip(rgamma_of, values[len(gamma_of):])]
    return [*values[:len(gamma_of)], *recip]


def batched(c, fn, *arg_sets):
    """``fn`` (of 1-D float64 arguments, returning one value or a packed
    ``[n, 2]`` per element) run once on the concatenated ``arg_sets``, its
    result split back per set: one Loop instead of one per call."""
    sizes = c.op("Concat", *(c.op("Shape", s[0]) for s in arg_sets), axis=0)
    args = [c.op("Concat", *(s[i] for s in arg_sets), axis=0) for i in range(len(arg_sets[0]))]
    return c.op("Split", fn(c, *args), sizes, axis=0, num_outputs=len(arg_sets))


def _plain_series(c, f, g, cc, x, max_steps, name):
    """``(sum, error estimate)`` of Cephes ``hys2f1``'s loop: sum_n (f)_n (g)_n / ((c)_n n!) x^n
    stopped at ``|u / s| <= MACHEP``; the estimate is ``MACHEP (max |u| / |s| + steps)``."""
    def step(c, kk, u, s, umax):
        m = add(c, kk, k(c, 1.0))
        u = mul(c, u, div(c, mul(c, add(c, f, kk), add(c, g, kk), x), mul(c, add(c, cc, kk), m)))
        s = add(c, s, u)
        umax = c.op("Max", umax, c.op("Abs", u))
        done = c.op("And", _not(c, c.op("Equal", s, k(c, 0.0))),
                    c.op("LessOrEqual", c.op("Abs", div(c, u, s)), k(c, MACHEP)))
        return [m, u, s, umax], done
    zero = _zeros(c, x)
    one = add(c, zero, k(c, 1.0))
    steps, _, s, umax = converge(c, [zero, one, one, zero], step, max_steps, name)
    return s, mul(c, k(c, MACHEP), add(c, div(c, umax, c.op("Abs", s)), steps))


def _recurrence_in_a(c, a, b, cc, x, max_steps, name, level):
    """``(value, error estimate)`` of Cephes ``hyp2f1ra``: the series at a
    shifted by an integer to t (not crossing c or 0) and at t -+ 1, carried
    back to a by the three-term recurrence in a (AMS55 15.2.10), which
    avoids the cancellation of the strongly alternating series at large |a|."""
    one = k(c, 1.0)
    cross = c.op("Or", _and(c, lt(c, cc, 0.0), c.op("LessOrEqual", a, cc)),
                 _and(c, c.op("GreaterOrEqual", cc, k(c, 0.0)), c.op("GreaterOrEqual", a, cc)))
    da = where(c, cross, c.op("Round", sub(c, a, cc)), c.op("Round", a))
    t = sub(c, a, da)
    down = lt(c, da, 0.0)
    step_t = where(c, down, k(c, -1.0), one)
    both = batched(c, lambda c, *v: _pack(c, *_series_state(c, *v, max_steps, name + "_t", level - 1)),
                   [t, b, cc, x], [add(c, t, step_t), b, cc, x])
    (f1, e1), (f0, e0) = (_unpack(c, v) for v in both)
    n_steps = c.op("Abs", da)

    def step(c, n, t, f1, f0):
        f2, f1 = f1, f0
        lin = add(c, sub(c, sub(c, mul(c, k(c, 2.0), t), cc), mul(c, t, x)), mul(c, b, x))
        down_f0 = sub(c, mul(c, c.op("Neg", div(c, lin, sub(c, cc, t))), f1),
                      mul(c, div(c, mul(c, t, sub(c, x, one)), sub(c, cc, t)), f2))
        up_f0 = c.op("Neg", div(c, add(c, mul(c, lin, f1), mul(c, sub(c, cc, t), f2)), mul(c, t, sub(c, x, one))))
        n = add(c, n, one)
        return [n, add(c, t, step_t), f1, where(c, down, down_f0, up_f0)], c.op("GreaterOrEqual", n, n_steps)
    init = [add(c, _zeros(c, x), one), add(c, t, step_t), f1, f0]
    f0 = converge(c, init, step, MAX_SERIES_STEPS, name + "_recurrence", skip=c.op("LessOrEqual", n_steps, one))[3]
    return f0, add(c, e1, e0)


def _series_state(c, a, b, cc, x, max_steps, name, level=2):
    """``(sum, error estimate)`` of Cephes ``hys2f1``: |a| >= |b| after the
    swap (the smaller non-positive integer kept as b otherwise), the
    recurrence in a (``hyp2f1ra``) where |a| > |c| + 1 (or a polynomial's
    b was kept) and |c - a| > 2, |a| > 2, else the plain series.
    ``hyp2f1ra``'s two series are ``hys2f1`` again, which may reduce the
    other parameter the same way; after that both are within 1/2 of c or 0
    and the condition fails, so two ``level``s are Cephes' recursion."""
    swap = c.op("Greater", c.op("Abs", b), c.op("Abs", a))
    f, g = where(c, swap, b, a), where(c, swap, a, b)
    keep = _and(c, _near_int(c, g), c.op("LessOrEqual", c.op("Round", g), k(c, 0.0)),
                lt(c, sub(c, c.op("Abs", g), c.op("Abs", f)), 0.0))
    f, g = where(c, keep, g, f), where(c, keep, f, g)
    ra = _and(c, _or(c, c.op("Greater", c.op("Abs", f), add(c, c.op("Abs", cc), k(c, 1.0))), keep),
              c.op("Greater", c.op("Abs", sub(c, cc, f)), k(c, 2.0)), c.op("Greater", c.op("Abs", f), k(c, 2.0)))

    if level == 0:
        return _plain_series(c, f, g, cc, x, max_steps, name)

    def pack(method, *extra):
        return lambda c, *args: _pack(c, *method(c, *args, max_steps, f"{name}{level}", *extra))
    out = _packed_nan(c, x)
    out = on_subset(c, _not(c, ra), [f, g, cc, x], pack(_plain_series), out)
    out = on_subset(c, ra, [f, g, cc, x], pack(_recurrence_in_a, level), out)
    return _unpack(c, out)


def series(c, a, b, cc, x):
    """2F1(a, b; c; x) by the power series (Cephes ``hys2f1``)."""
    return _series_state(c, a, b, cc, x, MAX_SERIES_STEPS, "hyp2f1_series")[0]


def _pow(c, base, e):
    return c.op("Pow", base, e)


def _inner_args(c, a, b, cc, x):
    """``(a, b, mult)`` of Cephes' recursive ``hyp2f1`` call at |x| < 1/2 where
    c - a or c - b is a non-positive integer and c - a - b >= 0 (its ``hypf``:
    Euler's transformation to a polynomial; 1/x's inner calls meet it for
    integer a or b), else ``(a, b, 1)``."""
    d = sub(c, sub(c, cc, a), b)
    hypf = _and(c, _or(c, _nonpositive_int(c, sub(c, cc, a)), _nonpositive_int(c, sub(c, cc, b))),
                c.op("GreaterOrEqual", d, k(c, 0.0)))
    mult = where(c, hypf, _pow(c, sub(c, k(c, 1.0), x), d), add(c, _zeros(c, x), k(c, 1.0)))
    return where(c, hypf, sub(c, cc, a), a), where(c, hypf, sub(c, cc, b), b), mult


def one_over_x(c, a, b, cc, x):
    """AMS55 15.3.7 for x < -2, b - a not an integer: two 2F1 in 1/x (Cephes'
    recursive calls: the series, after ``_inner_args``)."""
    one = k(c, 1.0)
    w = div(c, one, x)
    sets, mults = [], []
    for p1, p2, p3 in ((a, add(c, sub(c, one, cc), a), add(c, sub(c, one, b), a)),
                       (b, add(c, sub(c, one, cc), b), add(c, sub(c, one, a), b))):
        u, v, m = _inner_args(c, p1, p2, p3, w)
        sets.append([u, v, p3, w])
        mults.append(m)
    p, q = batched(c, series, *sets)
    p = mul(c, p, mults[0], _pow(c, c.op("Neg", x), c.op("Neg", a)))
    q = mul(c, q, mults[1], _pow(c, c.op("Neg", x), c.op("Neg", b)))
    gc, gba, gab, rb, rca, ra, rcb = gammas(c, [cc, sub(c, b, a), sub(c, a, b)], [b, sub(c, cc, a), a, sub(c, cc, b)])
    return add(c, mul(c, gc, gba, rb, rca, p), mul(c, gc, gab, ra, rcb, q))


def one_minus_x(c, a, b, cc, x):
    """``(value, error estimate)`` by AMS55 15.3.6 for 0.9 < x < 1, c - a - b not an
    integer: two series in 1 - x (Cephes' estimate, cancellation between them included)."""
    one = k(c, 1.0)
    s, d = sub(c, one, x), sub(c, sub(c, cc, a), b)
    both = batched(c, lambda c, *v: _pack(c, *_series_state(c, *v, MAX_SERIES_STEPS, "hyp2f1_1mx")),
                   [a, b, sub(c, one, d), s], [sub(c, cc, a), sub(c, cc, b), add(c, d, one), s])
    (q, err), (r, err1) = (_unpack(c, v) for v in both)
    gd, gmd, gc, rca, rcb, ra, rb = gammas(c, [d, c.op("Neg", d), cc], [sub(c, cc, a), sub(c, cc, b), a, b])
    q = mul(c, q, gd, rca, rcb)
    r = mul(c, r, _pow(c, s, d), gmd, ra, rb)
    y = add(c, q, r)
    err = add(c, err, err1, div(c, mul(c, k(c, MACHEP), c.op("Max", c.op("Abs", q), c.op("Abs", r))), y))
    return mul(c, y, gc), err


def _pack(c, v, e):
    """``[n, 2]``: value and error estimate side by side (one ``on_subset`` scatters both)."""
    axis = c.const([1], I64)
    return c.op("Concat", c.op("Unsqueeze", v, axis), c.op("Unsqueeze", e, axis), axis=1)


def _unpack(c, packed):
    return tuple(c.op("Gather", packed, c.const(i, I64), axis=1) for i in (0, 1))


def _packed_nan(c, x):
    return c.op("Expand", k(c, np.nan), c.op("Concat", c.op("Shape", x), c.const([2], I64), axis=0))


def psi_series(c, a, b, cc, x):
    """AMS55 15.3.10-12 (Cephes ``hyt2f1``'s psi-function expansion) for
    0.9 < x < 1 and c - a - b an integer m: the series in 1 - x with
    digammas, the psi(z + 1) = psi(z) + 1/z recurrence carrying them from
    term to term, plus the finite sum of |m| - 1 terms."""
    one, zero = k(c, 1.0), _zeros(c, x)
    s = sub(c, one, x)
    d = sub(c, sub(c, cc, a), b)
    idd = c.op("Round", d)
    pos = c.op("GreaterOrEqual", idd, k(c, 0.0))
    e = c.op("Abs", d)
    d1 = where(c, pos, d, zero)
    d2 = where(c, pos, zero, d)
    aid = c.op("Abs", idd)
    ax = c.op("Log", s)
    ad1, bd1 = add(c, a, d1), add(c, b, d1)
    psi_a, psi_b, psi_1, psi_1e = _stacked(c, psi, [ad1, bd1, add(c, zero, one), add(c, e, one)])
    ge1, ge2, ge, gc, ra, rb, rad1, rbd1, rad2, rbd2 = gammas(
        c, [add(c, e, one), add(c, e, k(c, 2.0)), e, cc], [a, b, ad1, bd1, add(c, a, d2), add(c, b, d2)])
    y0 = div(c, sub(c, sub(c, sub(c, add(c, psi_1, psi_1e), psi_a), psi_b), ax), ge1)
    p0 = div(c, mul(c, ad1, bd1, s), ge2)
    # psi at t = 1: psi(2), psi(2 + e), psi(a + 1 + d1), psi(b + 1 + d1)
    init = [add(c, zero, one), p0, y0, add(c, psi_1, one), add(c, psi_1e, div(c, one, add(c, e, one))),
            add(c, psi_a, div(c, one, ad1)), add(c, psi_b, div(c, one, bd1))]

    def step(c, t, p, y, pt, pte, pa, pb):
        r = sub(c, sub(c, sub(c, add(c, pt, pte), pa), pb), ax)
        q = mul(c, p, r)
        y = add(c, y, q)
        atd, btd = add(c, a, t, d1), add(c, b, t, d1)
        t1 = add(c, t, one)
        p = mul(c, p, div(c, mul(c, s, atd), t1), div(c, btd, add(c, t1, e)))
        new = [t1, p, y, add(c, pt, div(c, one, t1)), add(c, pte, div(c, one, add(c, t1, e))),
               add(c, pa, div(c, one, atd)), add(c, pb, div(c, one, btd))]
        done = c.op("And", _not(c, c.op("Equal", y, k(c, 0.0))),
                    c.op("LessOrEqual", c.op("Abs", div(c, q, y)), k(c, EPS)))
        return new, done
    y = converge(c, init, step, MAX_SERIES_STEPS, "hyp2f1_psi_series")[2]
    degenerate0 = mul(c, y, gc, ra, rb)  # c - a - b = 0

    def finite_step(c, i, t, p, y1):
        p = mul(c, p, div(c, mul(c, s, add(c, a, t, d2), add(c, b, t, d2)), add(c, sub(c, one, e), t)))
        t = add(c, t, one)
        p = div(c, p, t)
        i = add(c, i, one)
        return [i, t, p, add(c, y1, p)], c.op("GreaterOrEqual", i, aid)
    y1 = converge(c, [add(c, zero, one), zero, add(c, zero, one), add(c, zero, one)], finite_step,
                  MAX_SERIES_STEPS, "hyp2f1_psi_finite", skip=c.op("LessOrEqual", aid, one))[3]
    y1 = mul(c, y1, ge, gc, rad1, rbd1)
    yy = mul(c, y, gc, rad2, rbd2)
    odd = c.op("Equal", c.op("Mod", aid, k(c, 2.0), fmod=1), one)
    yy = where(c, odd, c.op("Neg", yy), yy)
    q = _pow(c, s, idd)
    yy = where(c, pos, mul(c, yy, q), yy)
    y1 = where(c, pos, y1, mul(c, y1, q))
    return where(c, c.op("Equal", idd, k(c, 0.0)), degenerate0, add(c, yy, y1))


def near_one(c, a, b, cc, x):
    """``[n, 2]`` value and error estimate for 0.9 < x < 1, not a polynomial
    (Cephes ``hyt2f1``): for c - a - b an integer (to MACHEP) the psi series
    (estimate 0); else the series where its estimate is below ETHRESH, 15.3.6
    where it is not."""
    d = sub(c, sub(c, cc, a), b)
    integer_d = c.op("LessOrEqual", c.op("Abs", sub(c, d, c.op("Round", d))), k(c, MACHEP))

    def general(c, a, b, cc, x):
        s, err = _series_state(c, a, b, cc, x, MAX_TRIAL_STEPS, "hyp2f1_trial_series")
        failed = c.op("Not", lt(c, err, ETHRESH))  # NaN (not converged) fails too
        return on_subset(c, failed, [a, b, cc, x], lambda c, *v: _pack(c, *one_minus_x(c, *v)), _pack(c, s, err))
    out = on_subset(c, _not(c, integer_d), [a, b, cc, x], general, _packed_nan(c, x))
    return on_subset(c, integer_d, [a, b, cc, x], lambda c, *v: _pack(c, psi_series(c, *v), _zeros(c, v[0])), out)


def hyt2f1(c, a, b, cc, x):
    """``[n, 2]`` value and error estimate of Cephes ``hyt2f1`` for |x| <= 1:
    polynomials by the series; else Pfaff's transformation for x < -1/2,
    ``near_one`` for x > 0.9, the series between."""
    one = k(c, 1.0)
    poly = _polynomial(c, a, b)
    low = _and(c, _not(c, poly), lt(c, x, -0.5))
    s = sub(c, one, x)
    b_gt_a = c.op("Greater", b, a)
    mult = where(c, low, _pow(c, s, c.op("Neg", where(c, b_gt_a, a, b))), add(c, _zeros(c, x), one))
    a2 = where(c, low, where(c, b_gt_a, a, sub(c, cc, a)), a)
    b2 = where(c, low, where(c, b_gt_a, sub(c, cc, b), b), b)
    x = where(c, low, div(c, c.op("Neg", x), s), x)
    high = _and(c, _not(c, poly), c.op("Greater", x, k(c, 0.9)))
    out = on_subset(c, _not(c, high), [a2, b2, cc, x],
                    lambda c, *v: _pack(c, *_series_state(c, *v, MAX_SERIES_STEPS, "hyp2f1_series")), _packed_nan(c, x))
    out = on_subset(c, high, [a2, b2, cc, x], near_one, out)
    v, e = _unpack(c, out)
    return _pack(c, mul(c, v, mult), e)


def _round_away(c, v):
    """C ``round``: halves away from zero (ONNX ``Round`` takes them to even)."""
    return mul(c, c.op("Sign", v), c.op("Floor", add(c, c.op("Abs", v), k(c, 0.5))))


def _c_shift(c, a, b, cc):
    """m = 2 - round(c - a - b) (2 or 3 for -1 < c - a - b < 0): Cephes' recurrence starts at c + m."""
    return sub(c, k(c, 2.0), _round_away(c, sub(c, sub(c, cc, a), b)))


def recurrence_in_c(c, a, b, cc, x, d2, d1):
    """Cephes' recurrence on c (AMS55 15.2.27) for -1 < c - a - b < 0 where
    ``hyt2f1``'s estimate fails: from ``d2``, ``d1`` (``hyt2f1`` at c + m and
    c + m + 1, m of ``_c_shift``) m steps down to c."""
    one = k(c, 1.0)
    s = sub(c, one, x)
    aid = _c_shift(c, a, b, cc)
    e = add(c, cc, aid)
    q = add(c, a, b, one)
    y = d2
    for i in range(3):
        r = sub(c, e, one)
        num = add(c, mul(c, e, sub(c, r, mul(c, sub(c, mul(c, k(c, 2.0), e), q), x)), d2),
                  mul(c, sub(c, e, a), sub(c, e, b), x, d1))
        new_y = div(c, num, mul(c, e, r, s))
        live = c.op("Greater", aid, k(c, float(i)))
        y = where(c, live, new_y, y)
        d1, d2, e = where(c, live, d2, d1), where(c, live, new_y, d2), where(c, live, r, e)
    return y


def neg_c_equal_bc(c, a, b, x):
    """2F1(a, b; b; x) for b = c a non-positive integer (SciPy's
    ``hyp2f1_neg_c_equal_bc``): the first 1 - b terms of (1-x)^-a's series,
    NaN for |b| >= 1e5 and where the sum has cancelled below 1e-7 relative."""
    one, zero = k(c, 1.0), _zeros(c, x)
    n = c.op("Neg", c.op("Round", b))

    def step(c, kk, u, s, umax):
        u = mul(c, u, div(c, mul(c, add(c, a, kk), x), add(c, kk, one)))
        kk = add(c, kk, one)
        return [kk, u, add(c, s, u), c.op("Max", umax, c.op("Abs", u))], c.op("GreaterOrEqual", kk, n)
    init = [zero, add(c, zero, one), add(c, zero, one), add(c, zero, one)]
    _, _, s, umax = converge(c, init, step, 100000, "hyp2f1_neg_c_equal_bc", skip=c.op("LessOrEqual", n, zero))
    lost = c.op("Greater", mul(c, k(c, 1e-16), add(c, one, div(c, umax, c.op("Abs", s)))), k(c, 1e-7))
    return where(c, c.op("Or", lost, c.op("Not", lt(c, c.op("Abs", b), 1e5))), k(c, np.nan), s)


def _euler(c, mask, a, b, cc, x, mult):
    """Euler's transformation on the elements of ``mask``: ``(a, b, mult)`` -> ``(c-a, c-b, mult (1-x)^(c-a-b))``."""
    d = sub(c, sub(c, cc, a), b)
    mult = where(c, mask, mul(c, mult, _pow(c, sub(c, k(c, 1.0), x), d)), mult)
    return where(c, mask, sub(c, cc, a), a), where(c, mask, sub(c, cc, b), b), mult


def _pfaff(c, mask, a, b, cc, x, mult):
    """Pfaff's transformation on ``mask``: x -> x / (x - 1) keeping the one of a, b smaller in modulus
    (AMS55 15.3.4/15.3.5, Cephes' choice for x < -1)."""
    s = sub(c, k(c, 1.0), x)
    small_a = lt(c, sub(c, c.op("Abs", a), c.op("Abs", b)), 0.0)
    keep = where(c, small_a, a, b)
    other = where(c, small_a, b, a)
    mult = where(c, mask, mul(c, mult, _pow(c, s, c.op("Neg", keep))), mult)
    return (where(c, mask, keep, a), where(c, mask, sub(c, cc, other), b),
            where(c, mask, div(c, x, sub(c, x, k(c, 1.0))), x), mult)


def _unit_after(c, changed, todo, a, b, cc, mult, value):
    """``(value, todo)`` with ``mult`` as the value where a transformation
    (``changed``) made a or b 0 (c != 0): Cephes' recursive call returns 1 there."""
    zero = k(c, 0.0)
    unit = _and(c, changed, todo, _or(c, c.op("Equal", a, zero), c.op("Equal", b, zero)),
                _not(c, c.op("Equal", cc, zero)))
    return where(c, unit, mult, value), _and(c, todo, _not(c, unit))


def _polynomial(c, a, b):
    return c.op("Or", _nonpositive_int(c, a), _nonpositive_int(c, b))


def hyp2f1(c, a, b, cc, x):
    """``scipy.special.hyp2f1(a, b, c, x)`` for real arguments (see the
    module docstring); float64 of any broadcastable shapes in, their
    broadcast shape out."""
    shape, (a, b, cc, x) = flat_args(c, a, b, cc, x)
    one, zero = k(c, 1.0), _zeros(c, x)
    nan, inf = add(c, zero, k(c, np.nan)), add(c, zero, k(c, np.inf))
    value = nan
    todo = _not(c, _or(c, *(c.op("IsNaN", v) for v in (a, b, cc, x))))
    a_or_b_zero = _and(c, _or(c, c.op("Equal", a, zero), c.op("Equal", b, zero)), _not(c, c.op("Equal", cc, zero)))
    trivial = _and(c, todo, _or(c, c.op("Equal", x, zero), a_or_b_zero))
    value = where(c, trivial, one, value)
    todo = _and(c, todo, _not(c, trivial))
    mult = add(c, zero, one)
    # Euler where c - a - b <= -1 (Cephes: not for x > 1 with non-integer c - a - b, not for polynomials)
    d = sub(c, sub(c, cc, a), b)
    euler = _and(c, todo, c.op("LessOrEqual", d, k(c, -1.0)), _not(c, _polynomial(c, a, b)),
                 _not(c, _and(c, _not(c, _near_int(c, d)), c.op("Greater", x, one))))
    a, b, mult = _euler(c, euler, a, b, cc, x, mult)
    value, todo = _unit_after(c, euler, todo, a, b, cc, mult, value)
    poly = _polynomial(c, a, b)
    d = sub(c, sub(c, cc, a), b)
    # x = 1 with c - a - b <= 0 (not a polynomial): inf
    div_at_one = _and(c, todo, c.op("Equal", x, one), c.op("LessOrEqual", d, zero), _not(c, poly))
    value = where(c, div_at_one, inf, value)
    todo = _and(c, todo, _not(c, div_at_one))
    # c a non-positive integer: the polynomials ending before it, else inf
    ic = c.op("Round", cc)
    c_pole = _and(c, todo, _nonpositive_int(c, cc))
    ends = _or(c, _and(c, _nonpositive_int(c, a), c.op("Greater", c.op("Round", a), ic)),
               _and(c, _nonpositive_int(c, b), c.op("Greater", c.op("Round", b), ic)))
    # (1-x)^-a for b = c, (1-x)^-b for a = c (Cephes tests these before c's poles)
    inside = _or(c, lt(c, c.op("Abs", x), 1.0), c.op("Equal", x, k(c, -1.0)))
    b_is_c = _and(c, todo, inside, lt(c, c.op("Abs", sub(c, b, cc)), EPS))
    value = on_subset(c, _and(c, b_is_c, _nonpositive_int(c, b)), [a, b, x, mult],
                      lambda c, a, b, x, m: mul(c, neg_c_equal_bc(c, a, b, x), m), value)
    b_is_c_pow = _and(c, b_is_c, _not(c, _nonpositive_int(c, b)))
    a_is_c = _and(c, todo, inside, _not(c, b_is_c), lt(c, c.op("Abs", sub(c, a, cc)), EPS))
    s = sub(c, one, x)
    value = where(c, b_is_c_pow, mul(c, mult, _pow(c, s, c.op("Neg", a))), value)
    value = where(c, a_is_c, mul(c, mult, _pow(c, s, c.op("Neg", b))), value)
    todo = _and(c, todo, _not(c, _or(c, b_is_c, a_is_c)))
    value = where(c, _and(c, todo, c_pole, _not(c, ends)), inf, value)
    todo = _and(c, todo, _not(c, _and(c, c_pole, _not(c, ends))))
    # polynomials: the series at any x
    plain = _and(c, todo, poly)
    todo = _and(c, todo, _not(c, poly))
    # x < -2, b - a not an integer: the series in 1/x
    inverse = _and(c, todo, lt(c, x, -2.0), _not(c, _near_int(c, sub(c, b, a))))
    value = on_subset(c, inverse, [a, b, cc, x, mult], lambda c, *v: mul(c, one_over_x(c, *v[:4]), v[4]), value)
    todo = _and(c, todo, _not(c, inverse))
    # other x < -1: Pfaff to x / (x - 1) in (1/2, 1), then the whole function again (Cephes' recursion)
    far = _and(c, todo, lt(c, x, -1.0))
    a, b, x, mult = _pfaff(c, far, a, b, cc, x, mult)
    d = sub(c, sub(c, cc, a), b)
    euler2 = _and(c, far, c.op("LessOrEqual", d, k(c, -1.0)), _not(c, _polynomial(c, a, b)))
    a, b, mult = _euler(c, euler2, a, b, cc, x, mult)
    value, todo = _unit_after(c, far, todo, a, b, cc, mult, value)
    d = sub(c, sub(c, cc, a), b)
    s = sub(c, one, x)
    poly_now = _and(c, far, _polynomial(c, a, b))
    plain = _or(c, plain, poly_now)
    todo = _and(c, todo, _not(c, poly_now))
    b_is_c = _and(c, far, todo, lt(c, c.op("Abs", sub(c, b, cc)), EPS))
    a_is_c = _and(c, far, todo, _not(c, b_is_c), lt(c, c.op("Abs", sub(c, a, cc)), EPS))
    value = where(c, b_is_c, mul(c, mult, _pow(c, s, c.op("Neg", a))), value)
    value = where(c, a_is_c, mul(c, mult, _pow(c, s, c.op("Neg", b))), value)
    todo = _and(c, todo, _not(c, _or(c, b_is_c, a_is_c)))
    # x > 1, not a polynomial: inf (the value is complex)
    beyond = _and(c, todo, c.op("Greater", x, one))
    value = where(c, beyond, inf, value)
    todo = _and(c, todo, _not(c, beyond))
    # x = 1: Gauss's sum (c - a or c - b a non-positive integer: Euler's polynomial)
    ca_cb = _or(c, _nonpositive_int(c, sub(c, cc, a)), _nonpositive_int(c, sub(c, cc, b)))
    at_one = _and(c, todo, lt(c, c.op("Abs", sub(c, x, one)), EPS))  # Cephes: |x| - 1 within EPS
    gauss = _and(c, at_one, _not(c, ca_cb), c.op("Greater", d, zero))
    value = where(c, gauss, mul(c, mult, *gammas(c, [cc, d], [sub(c, cc, a), sub(c, cc, b)])), value)
    value = where(c, _and(c, at_one, _not(c, gauss), c.op("Not", _and(c, ca_cb, c.op("GreaterOrEqual", d, zero)))),
                  inf, value)
    todo = _and(c, todo, _not(c, _and(c, at_one, _not(c, _and(c, ca_cb, c.op("GreaterOrEqual", d, zero))))))
    # c - a or c - b a non-positive integer: Euler's transformation to a polynomial (Cephes hypf)
    hypf = _and(c, todo, c.op("GreaterOrEqual", d, zero), ca_cb)
    a, b, mult = _euler(c, hypf, a, b, cc, x, mult)
    plain = _or(c, plain, hypf)
    todo = _and(c, todo, _not(c, hypf))
    # Cephes hyt2f1 on the rest; for -1 < c - a - b < 0 the recurrence on c where its estimate fails
    # (one hyt2f1 for all three sets of arguments: its Loops are the model's bulk)
    run = _or(c, plain, todo)
    shifted = _and(c, todo, _not(c, hypf), lt(c, d, 0.0))
    e = add(c, cc, _c_shift(c, a, b, cc))
    sub_sets = [[c.op("Compress", v, m, axis=0) for v in vs] for m, vs in
                ((run, [a, b, cc, x]), (shifted, [a, b, e, x]), (shifted, [a, b, add(c, e, one), x]))]
    main, at_e, at_e1 = batched(c, hyt2f1, *sub_sets)
    index = c.op("Transpose", c.op("NonZero", run), perm=[1, 0])
    y, err = _unpack(c, c.op("ScatterND", _packed_nan(c, x), index, main))
    into = c.op("Transpose", c.op("NonZero", shifted), perm=[1, 0])
    d2 = c.op("ScatterND", nan, into, _unpack(c, at_e)[0])
    d1 = c.op("ScatterND", nan, into, _unpack(c, at_e1)[0])
    retry = _and(c, shifted, _not(c, lt(c, err, ETHRESH)))
    y = on_subset(c, retry, [a, b, cc, x, d2, d1], recurrence_in_c, y)
    value = where(c, run, mul(c, mult, y), value)
    return c.op("Reshape", value, shape, allowzero=1)


FORMULAS = {"hyp2f1": hyp2f1}
