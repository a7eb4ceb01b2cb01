"""Lowering of the real Schur decomposition: ``Schur{output="real"}``
(``pt.linalg.schur``; LAPACK ``gees`` in PyTensor's ``perform``) and its ``Blockwise`` batched form, ``A = Z T Z^T`` with ``Z``
orthogonal and ``T`` quasi-upper-triangular (1 x 1 blocks for real
eigenvalues, standardized 2 x 2 blocks for complex pairs); with a
``sort`` the blocks are then reordered as ``gees`` does (``dtrsen``'s
swaps, ``schur_blocks.reorder``). ``output="complex"`` and complex inputs
are refused.

The algorithm is the textbook one (Golub & Van Loan, *Matrix
Computations*, 4th ed., Alg. 7.4.2 and 7.5.2; LAPACK ``dgehd2`` and
``dlahqr``), written on whole ``(..., n, n)`` matrices with masks as the
other loops of ``matrix_loops.py``:

* Hessenberg reduction (``dgehd2``): for ``j < n - 2`` the reflector of
  ``qr.householder_vector`` (``dlarfg``) on ``H[j+1:, j]`` is applied from
  both sides, ``H[j+2:, j]`` set to exactly 0; ``Z`` accumulates them from
  the identity (one ``run_steps`` loop).
* Francis double-shift QR as LAPACK ``dlahqr`` (3.10+) runs it (GVL Alg.
  7.5.1/7.5.2): one ONNX ``Loop`` whose iteration is one bulge-chasing
  reflector per matrix. At the start of a sweep subdiagonal entries that
  ``dlahqr``'s test finds negligible (``|h[k,k-1]| <= smlnum = tiny n /
  ulp``, or ``<= ulp (|h[k-1,k-1]| + |h[k,k]|)`` and Ahues & Tisseur's
  condition, LAWN 122) are set to 0, and the active window ``[lo, hi]`` is
  the bottom-most run of nonzero subdiagonal entries of length >= 2 (an
  unreduced block of size >= 3). The shifts are the eigenvalues of the
  window's trailing 2 x 2 (scaled by its 1-norm), a real pair replaced by
  the one closer to ``h[hi,hi]`` used twice; the 10th, 30th, ... sweep
  since the last deflation at ``hi`` uses ``dlahqr``'s exceptional shift
  from the window's top (``s = |h[lo+1,lo]| + |h[lo+2,lo+1]|``, ``h11 = h22
  = 0.75 s + h[lo,lo]``, ``h12 = -0.4375 s``, ``h21 = s``), the 20th, 40th,
  ... the same from its bottom. The bulge starts at the largest ``m`` in
  ``(lo, hi - 2]`` where ``dlahqr``'s test finds that starting there makes
  ``h[m,m-1]`` negligible (else at ``lo``; then ``h[m,m-1]`` is scaled by
  ``1 - tau``). Step ``k`` reflects ``(x, y, z)`` (the first column of
  ``(H - s1)(H - s2)`` at ``k = m``, the bulge ``h[k:k+3, k-1]`` after it,
  2 entries at ``k = hi - 1``) with the whole-row and whole-column update
  (so ``Z^T A Z = H`` holds for the full matrix) in ``dlahqr``'s order of
  operations, and sets ``h[k, k-1] = beta``, ``h[k+1:k+3, k-1] = 0``
  exactly. A matrix without an active window is done; the loop stops when
  every matrix is done or after ``30 * max(10, n) * n`` steps
  (``dlahqr``'s ``itmax`` of sweeps times the longest sweep). So ``T``
  and ``Z`` are LAPACK's (``gees`` for n < 75, where ``dhseqr`` calls
  ``dlahqr``) to ~1e-14 in most cases (measured on 20 normal matrices of
  each size: 20 at n = 3, 17 at n = 5, 19 at n = 8, 15 at n = 12, 9 at
  n = 20; 1, 1, 0, 0 and 0 before ``dlahqr``'s shifts and tests): where a
  sweep's direction is decided by entries at the rounding level, the
  order of operations of ``dgehd2``/``dorghr`` and of BLAS decides it,
  and the order of the eigenvalues and the signs of ``Z``'s columns may
  differ from LAPACK's.
* Standardization (``dlanv2``, ``schur_blocks.standardize_blocks``): each
  remaining 2 x 2 block ``[a b; c d]`` is rotated, all blocks at once
  (they are disjoint), into upper triangular form where its eigenvalues
  are real and into ``a = d``, ``b c < 0`` where they are complex,
  ``dlanv2``'s branches and formulas.
* With a ``sort``: ``schur_blocks.reorder`` (``dtrsen``/``dlaexc``).

As ``perform``: a matrix with a NaN or Inf gives all-NaN ``T`` and ``Z``,
and so does one that does not converge (``gees``' ``info > 0``).

Not done: LAPACK's multishift/aggressive early deflation for n >= 75
(``dhseqr``'s ``dlaqr0``, whose Schur form differs from ``dlahqr``'s).
The Schur form is not unique, so results are compared by
invariants (tests: ``Z T Z^T`` reproduces ``A`` and ``Z^T Z`` the identity
within ``1e-13 n`` of ``|A|``, ``T`` quasi-triangular with standardized
blocks, its eigenvalues (from the blocks) within ``1e-10`` of
``scipy.linalg.schur``'s relative to the largest for well-separated
spectra). Backward stable: every update is an orthogonal similarity.
"""

from __future__ import annotations

import numpy as np

from compiler.lowering.bodies import Body
from compiler.lowering.compat import Schur
from compiler.lowering.context import LoweringContext
from compiler.lowering.errors import Unsupported
from compiler.lowering.registry import lowers
from compiler.lowering.rules.decompositions import float_args
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from compiler.lowering.rules.matrix_loops import (column, diagonal, identity_like, positions, run_steps,
                                                   size_of, unsq)
from compiler.lowering.rules.qr import householder_vector
from compiler.lowering.rules.scalar_ops import shape_of
from compiler.lowering.rules.schur_blocks import off_diagonal, pick, reorder, standardize_blocks
from ir import DType, TensorType, Value

INT64 = DType.INT64


def _reflect(c: LoweringContext, h: Value, z: Value, v: Value, tau: Value) -> tuple[Value, Value]:
    """``P h P`` and ``z P`` with ``P = I - tau v v^T`` (``v`` ``(..., n)``,
    ``tau`` ``(..., 1)``)."""
    last = h.rank - 1
    v_col, v_row = unsq(c, v, last), unsq(c, v, last - 1)
    tau_m = unsq(c, tau, last)
    h = c.add("sub", [h, c.add("mul", [tau_m, c.add("mul", [v_col, c.add("matmul", [v_row, h])])])])
    h = c.add("sub", [h, c.add("mul", [tau_m, c.add("mul", [c.add("matmul", [h, v_col]), v_row])])])
    z = c.add("sub", [z, c.add("mul", [tau_m, c.add("mul", [c.add("matmul", [z, v_col]), v_row])])])
    return h, z


def _reflect_as_dlahqr(c: LoweringContext, h: Value, z: Value, v: Value, tau: Value,
                       k: Value) -> tuple[Value, Value]:
    """``P h P`` and ``z P`` as ``_reflect``, for a reflector whose ``v``
    (``(..., n)``) is 1 at row ``k`` (``(...,)``) and nonzero at most at
    ``k + 1, k + 2``, in ``dlahqr``'s order of operations: ``sum = h[k] +
    v2 h[k+1] + v3 h[k+2]`` per column, then ``h[k+i] -= sum * (tau v_i)``
    (rows from the left first, then columns), so that the rounding follows
    LAPACK's where a direction is decided by rounding-level entries."""
    nb = h.rank - 2
    dt = h.dtype
    idx = positions(c, h)
    kk = unsq(c, k, nb)  # (..., 1)
    v2 = unsq(c, pick(c, v, c.add("add", [k, c.scalar(1, INT64)]), idx), nb)  # (..., 1)
    v3 = unsq(c, pick(c, v, c.add("add", [k, c.scalar(2, INT64)]), idx), nb)
    t = c.add("mul", [tau, v])  # (..., n): t1 = tau, t2 = tau v2, t3 = tau v3

    def combine(x: Value, axis: int) -> Value:  # x[k] + v2 x[k+1] + v3 x[k+2] along axis (kept as 1)
        def at_offset(offset: int) -> Value:
            at = c.add("eq", [idx, c.add("add", [kk, c.scalar(offset, INT64)])])  # (..., n)
            at = unsq(c, at, x.rank - 1) if axis == x.rank - 2 else unsq(c, at, x.rank - 2)
            return c.add("reduce_sum", [c.add("where", [at, x, c.scalar(-0.0, dt)])], {"axes": [axis], "keepdims": True})
        v2_, v3_ = unsq(c, v2, nb), unsq(c, v3, nb)  # (..., 1, 1)
        return c.add("add", [c.add("add", [at_offset(0), c.add("mul", [v2_, at_offset(1)])]),
                               c.add("mul", [v3_, at_offset(2)])])

    t_col, t_row = unsq(c, t, nb + 1), unsq(c, t, nb)  # (..., n, 1), (..., 1, n)
    h = c.add("sub", [h, c.add("mul", [t_col, combine(h, nb)])])  # rows: sum is (..., 1, n)
    h = c.add("sub", [h, c.add("mul", [combine(h, nb + 1), t_row])])  # columns: sum is (..., n, 1)
    z = c.add("sub", [z, c.add("mul", [combine(z, nb + 1), t_row])])
    return h, z


def hessenberg(ctx: LoweringContext, a: Value) -> tuple[Value, Value]:
    """``(H, Z)`` with ``a = Z H Z^T`` (``(..., n, n)``, float): ``H`` upper
    Hessenberg with exact zeros below the subdiagonal, ``Z`` orthogonal
    (``dgehd2``/``dorghr``, module docstring)."""
    n = size_of(ctx, a)
    idx = positions(ctx, a)
    n2 = ctx.add("sub", [n, ctx.scalar(2, INT64)])
    count = ctx.add("where", [ctx.add("gt", [n2, ctx.scalar(0, INT64)]), n2, ctx.scalar(0, INT64)])  # max(n - 2, 0)

    def step(c: LoweringContext, j: Value, state: list, invariant: list) -> list:
        h, z = state
        (r,) = invariant
        zero = c.scalar(0, h.dtype)
        j1 = c.add("add", [j, c.scalar(1, INT64)])
        at, below = c.add("eq", [r, j1]), c.add("gt", [r, j1])
        col = column(c, h, j)  # (..., n)
        last = col.rank - 1
        alpha = c.add("gather", [col, unsq(c, j1, 0)], {"axis": last})
        v, tau, beta, _ = householder_vector(c, alpha, c.add("where", [below, col, zero]), at, below)
        h, z = _reflect(c, h, z, v, tau)
        new_col = c.add("where", [below, zero, c.add("where", [at, beta, column(c, h, j)])])
        h = c.add("where", [c.add("eq", [r, j]), unsq(c, new_col, last + 1), h])
        return [h, z]

    return tuple(run_steps(ctx, count, [a, identity_like(ctx, a)], [idx], step))


def _entry(c: LoweringContext, h: Value, eq_rows: Value, eq_cols: Value) -> Value:
    """``h[i, j]`` for per-matrix indices given as masks ``eq_rows``
    (``(..., n, 1)``: rows == i) and ``eq_cols`` (``(..., 1, n)``), as a sum
    with -0.0 elsewhere (exact); 0 where the index is out of range."""
    picked = c.add("where", [c.add("and", [eq_rows, eq_cols]), h, c.scalar(-0.0, h.dtype)])
    return c.add("reduce_sum", [picked], {"axes": [h.rank - 2, h.rank - 1], "keepdims": False})


def _francis(ctx: LoweringContext, h: Value, z: Value, finite: Value) -> tuple[Value, Value, Value]:
    """Francis double-shift QR on the Hessenberg ``h`` (module docstring),
    ``z`` accumulating the rotations: ``(T, Z, done)`` with ``done``
    (``(...,)`` bool) false where the iteration did not converge; matrices
    where ``finite`` (``(...,)`` bool) is false are not iterated."""
    dt = h.dtype
    n = size_of(ctx, h)
    idx = positions(ctx, h)
    batch = ctx.add("slice", [shape_of(ctx, h), ctx.i64([0]), ctx.i64([h.rank - 2]), ctx.i64([1])], {"axes": [0]})
    start = ctx.add("where", [finite, ctx.scalar(-1, INT64), ctx.scalar(-2, INT64)])  # k: -1 a sweep starts, -2 done
    start = ctx.add("expand", [start, batch])
    zeros_i = ctx.add("expand", [ctx.scalar(0, INT64), batch])
    trips = ctx.add("mul", [ctx.add("mul", [ctx.scalar(30, INT64), ctx.add("maximum", [n, ctx.scalar(10, INT64)])]), n])

    body = Body(ctx, "francis")
    c = body.ctx
    body.input(TensorType(INT64, ()), "t")
    carried = [h, z, start, zeros_i, zeros_i, zeros_i]
    bh, bz, k, lo, hi, its = [body.input(v.type, name) for v, name in
                              zip(carried, ("h", "z", "k", "lo", "hi", "its"))]
    r_idx, r_n = body.input(idx.type, "idx"), body.input(n.type, "n")
    one_i, two_i = c.scalar(1, INT64), c.scalar(2, INT64)
    zero, eps, tiny = c.scalar(0, dt), c.scalar(np.finfo(dt.numpy).eps, dt), c.scalar(np.finfo(dt.numpy).tiny, dt)
    rows, cols = unsq(c, r_idx, 1), r_idx  # (n, 1), (n,)
    nb = bh.rank - 2  # batch rank: (...,) -> (..., 1) is unsq(x, nb); (..., n) reductions on axis nb

    def lift(x: Value) -> Value:  # (...,) -> (..., 1, 1)
        return unsq(c, unsq(c, x, nb), nb + 1)

    # -- sweep start: deflate, find the window, count sweeps since hi moved
    fresh = c.add("eq", [k, c.scalar(-1, INT64)])  # -2: done
    d = diagonal(c, bh, r_idx)
    last_i = c.add("sub", [r_n, one_i])
    prev = c.add("where", [c.add("ge", [r_idx, one_i]), c.add("sub", [r_idx, one_i]), c.scalar(0, INT64)])
    nxt = c.add("where", [c.add("lt", [r_idx, last_i]), c.add("add", [r_idx, one_i]), last_i])
    nxt2 = c.add("minimum", [c.add("add", [r_idx, two_i]), last_i])

    def shifted(x: Value, to: Value) -> Value:  # x[..., to[k]]
        return c.add("gather", [x, to], {"axis": nb})

    d_prev = shifted(d, prev)
    s = off_diagonal(c, bh, r_idx, -1)  # s[k] = h[k, k-1]
    up = off_diagonal(c, bh, r_idx, 1)  # up[k] = h[k, k+1]
    mag = c.add("abs", [s])
    # dlahqr's test: |h[k,k-1]| <= smlnum, or <= ulp tst and Ahues & Tisseur's (LAWN 122) condition
    smlnum = c.add("mul", [tiny, c.add("div", [c.cast(r_n, dt), eps])])
    tst = c.add("add", [c.add("abs", [d_prev]), c.add("abs", [d])])
    aug = c.add("add", [c.add("where", [c.add("ge", [r_idx, two_i]), c.add("abs", [shifted(s, prev)]), zero]),
                        c.add("where", [c.add("lt", [r_idx, last_i]), c.add("abs", [shifted(s, nxt)]), zero])])
    tst = c.add("where", [c.add("eq", [tst, zero]), c.add("add", [tst, aug]), tst])
    up_prev = c.add("abs", [shifted(up, prev)])  # |h[k-1, k]|
    ab, ba = c.add("maximum", [mag, up_prev]), c.add("minimum", [mag, up_prev])
    diff = c.add("abs", [c.add("sub", [d_prev, d])])
    aa, bb = c.add("maximum", [c.add("abs", [d]), diff]), c.add("minimum", [c.add("abs", [d]), diff])
    ss = c.add("add", [aa, ab])
    ss = c.add("where", [c.add("gt", [ss, zero]), ss, c.scalar(1, dt)])
    at_test = c.add("le", [c.add("mul", [ba, c.add("div", [ab, ss])]),
                           c.add("maximum", [smlnum, c.add("mul", [eps, c.add("mul", [bb, c.add("div", [aa, ss])])])])])
    small = c.add("or", [c.add("le", [mag, smlnum]),
                         c.add("and", [c.add("le", [mag, c.add("mul", [eps, tst])]), at_test])])
    deflate = c.add("and", [c.add("and", [small, unsq(c, fresh, nb)]), c.add("ge", [r_idx, one_i])])
    at_sub = c.add("eq", [cols, c.add("sub", [rows, one_i])])  # (n, n): [k, k-1]
    bh = c.add("where", [c.add("and", [at_sub, unsq(c, deflate, nb + 1)]), zero, bh])
    s = c.add("where", [deflate, zero, s])
    nz = c.add("and", [c.add("ne", [s, zero]), c.add("ge", [r_idx, one_i])])
    pair = c.add("and", [nz, c.add("gather", [nz, prev], {"axis": nb})])
    pair = c.add("and", [pair, c.add("ge", [r_idx, two_i])])
    kp = c.add("reduce_max", [c.add("where", [pair, r_idx, c.scalar(-1, INT64)])], {"axes": [nb], "keepdims": True})
    found = c.add("squeeze", [c.add("ge", [kp, c.scalar(0, INT64)])], {"axes": [nb]})
    gap = c.add("invert", [nz])
    new_hi = c.add("reduce_min", [c.add("where", [c.add("and", [c.add("gt", [r_idx, kp]), gap]),
                                                  c.add("sub", [r_idx, one_i]), last_i])],
                   {"axes": [nb], "keepdims": False})
    new_lo = c.add("reduce_max", [c.add("where", [c.add("and", [c.add("le", [r_idx, kp]), gap]),
                                                  r_idx, c.scalar(0, INT64)])],
                   {"axes": [nb], "keepdims": False})
    its = c.add("where", [fresh, c.add("where", [c.add("eq", [new_hi, hi]), c.add("add", [its, one_i]),
                                                 c.scalar(0, INT64)]), its])
    hi = c.add("where", [fresh, new_hi, hi])
    lo = c.add("where", [fresh, new_lo, lo])

    def eq_r(i):
        return c.add("eq", [lift(i), rows])  # (..., n, 1)

    def eq_c(j):
        return c.add("eq", [lift(j), cols])  # (..., 1, n)

    def at(i, j):
        return _entry(c, bh, eq_r(i), eq_c(j))

    def plus(i, m):
        return c.add("add", [i, c.scalar(m, INT64)])

    # -- the shifts (dlahqr): the trailing 2 x 2's eigenvalues, a real pair replaced by the one closer to
    # h[i, i] twice; exceptional shifts at the 10th (top-based) and 20th (bottom-based) sweep since a deflation
    kdefl = c.add("add", [its, one_i])
    exc_i = c.add("eq", [c.add("mod", [kdefl, c.scalar(20, INT64)]), c.scalar(0, INT64)])
    exc_l = c.add("and", [c.add("invert", [exc_i]),
                          c.add("eq", [c.add("mod", [kdefl, c.scalar(10, INT64)]), c.scalar(0, INT64)])])
    e_i = c.add("add", [c.add("abs", [at(hi, plus(hi, -1))]), c.add("abs", [at(plus(hi, -1), plus(hi, -2))])])
    e_l = c.add("add", [c.add("abs", [at(plus(lo, 1), lo)]), c.add("abs", [at(plus(lo, 2), plus(lo, 1))])])
    e = c.add("where", [exc_i, e_i, e_l])
    e11 = c.add("add", [c.add("mul", [c.scalar(0.75, dt), e]), c.add("where", [exc_i, at(hi, hi), at(lo, lo)])])
    exceptional = c.add("or", [exc_i, exc_l])
    h11 = c.add("where", [exceptional, e11, at(plus(hi, -1), plus(hi, -1))])
    h12 = c.add("where", [exceptional, c.add("mul", [c.scalar(-0.4375, dt), e]), at(plus(hi, -1), hi)])
    h21 = c.add("where", [exceptional, e, at(hi, plus(hi, -1))])
    h22 = c.add("where", [exceptional, e11, at(hi, hi)])
    sc = c.add("add", [c.add("add", [c.add("abs", [h11]), c.add("abs", [h12])]),
                       c.add("add", [c.add("abs", [h21]), c.add("abs", [h22])])])
    sc_ok = c.add("gt", [sc, zero])
    scs = c.add("where", [sc_ok, sc, c.scalar(1, dt)])
    h11, h12, h21, h22 = (c.add("div", [v, scs]) for v in (h11, h12, h21, h22))
    tr = c.add("div", [c.add("add", [h11, h22]), c.scalar(2, dt)])
    det = c.add("sub", [c.add("mul", [c.add("sub", [h11, tr]), c.add("sub", [h22, tr])]), c.add("mul", [h12, h21])])
    rtdisc = c.add("sqrt", [c.add("abs", [det])])
    cplx = c.add("ge", [det, zero])
    r1, r2 = c.add("add", [tr, rtdisc]), c.add("sub", [tr, rtdisc])
    closer = c.add("where", [c.add("le", [c.add("abs", [c.add("sub", [r1, h22])]), c.add("abs", [c.add("sub", [r2, h22])])]),
                             r1, r2])
    rt1r = c.add("where", [sc_ok, c.add("mul", [c.add("where", [cplx, tr, closer]), scs]), zero])
    rt2r = rt1r
    rt1i = c.add("where", [c.add("and", [sc_ok, cplx]), c.add("mul", [rtdisc, scs]), zero])
    rt2i = c.add("neg", [rt1i])

    # -- where the bulge starts (dlahqr: the lowest m in [lo, hi - 2] that makes h[m, m-1] negligible)
    d1, s1, s2 = shifted(d, nxt), shifted(s, nxt), shifted(s, nxt2)  # h[m+1, m+1], h[m+1, m], h[m+2, m+1]
    rt1r_v, rt2r_v, rt1i_v, rt2i_v = (unsq(c, v, nb) for v in (rt1r, rt2r, rt1i, rt2i))
    dm2 = c.add("sub", [d, rt2r_v])
    s_m = c.add("add", [c.add("add", [c.add("abs", [dm2]), c.add("abs", [rt2i_v])]), c.add("abs", [s1])])
    s_m = c.add("where", [c.add("gt", [s_m, zero]), s_m, c.scalar(1, dt)])
    h21s = c.add("div", [s1, s_m])
    v1 = c.add("sub", [c.add("add", [c.add("mul", [h21s, up]), c.add("mul", [c.add("sub", [d, rt1r_v]),
                                                                            c.add("div", [dm2, s_m])])]),
                       c.add("mul", [rt1i_v, c.add("div", [rt2i_v, s_m])])])
    v2 = c.add("mul", [h21s, c.add("sub", [c.add("sub", [c.add("add", [d, d1]), rt1r_v]), rt2r_v])])
    v3 = c.add("mul", [h21s, s2])
    s_v = c.add("add", [c.add("add", [c.add("abs", [v1]), c.add("abs", [v2])]), c.add("abs", [v3])])
    s_v = c.add("where", [c.add("gt", [s_v, zero]), s_v, c.scalar(1, dt)])
    v1, v2, v3 = (c.add("div", [v, s_v]) for v in (v1, v2, v3))
    lhs = c.add("mul", [c.add("abs", [s]), c.add("add", [c.add("abs", [v2]), c.add("abs", [v3])])])
    rhs = c.add("mul", [c.add("mul", [eps, c.add("abs", [v1])]),
                        c.add("add", [c.add("add", [c.add("abs", [d_prev]), c.add("abs", [d])]), c.add("abs", [d1])])])
    lo_v, hi_v = unsq(c, lo, nb), unsq(c, hi, nb)
    can = c.add("and", [c.add("and", [c.add("gt", [r_idx, lo_v]), c.add("le", [r_idx, c.add("sub", [hi_v, two_i])])]),
                        c.add("le", [lhs, rhs])])
    m_start = c.add("reduce_max", [c.add("where", [can, r_idx, lo_v])], {"axes": [nb], "keepdims": False})

    x0, y0, z0 = (pick(c, v, m_start, r_idx) for v in (v1, v2, v3))
    k = c.add("where", [fresh, c.add("where", [found, m_start, c.scalar(-2, INT64)]), k])

    # -- one reflector of the sweep
    act = c.add("ge", [k, c.scalar(0, INT64)])
    km1 = plus(k, -1)
    three = c.add("le", [plus(k, 2), hi])  # (...,): a 3-entry reflector
    x1, y1 = at(k, km1), at(plus(k, 1), km1)
    z1 = c.add("where", [three, at(plus(k, 2), km1), zero])
    first = fresh
    x = unsq(c, c.add("where", [first, x0, x1]), nb)  # (..., 1)
    y = unsq(c, c.add("where", [first, y0, y1]), nb)
    zz = unsq(c, c.add("where", [first, z0, z1]), nb)
    ku = unsq(c, k, nb)
    is1, is2 = c.add("eq", [r_idx, plus(ku, 1)]), c.add("and", [c.add("eq", [r_idx, plus(ku, 2)]), unsq(c, three, nb)])
    below = c.add("or", [is1, is2])
    vec = c.add("where", [is1, y, c.add("where", [is2, zz, zero])])  # (..., n)
    v, tau, beta, _ = householder_vector(c, x, vec, c.add("eq", [r_idx, ku]), below)
    tau = c.add("where", [unsq(c, act, nb), tau, zero])
    nh, nz_ = _reflect_as_dlahqr(c, bh, bz, v, tau, k)
    chase = c.add("and", [act, c.add("invert", [first])])
    col_km1 = c.add("eq", [cols, lift(km1)])  # (..., 1, n)
    row_k = c.add("eq", [rows, lift(k)])  # (..., n, 1)
    row_after = c.add("and", [c.add("gt", [rows, lift(k)]), c.add("le", [rows, lift(plus(k, 2))])])
    in_chase = lift(chase)
    nh = c.add("where", [c.add("and", [in_chase, c.add("and", [col_km1, row_k])]), unsq(c, beta, nb + 1), nh])
    nh = c.add("where", [c.add("and", [in_chase, c.add("and", [col_km1, row_after])]), zero, nh])
    # a bulge started below lo: h[m, m-1] scaled by 1 - tau, the rows below it in that column kept 0 (dlahqr)
    inner = lift(c.add("and", [c.add("and", [act, first]), c.add("gt", [k, lo])]))
    nh = c.add("where", [c.add("and", [inner, c.add("and", [col_km1, row_k])]),
                         unsq(c, unsq(c, c.add("mul", [x1, c.add("sub", [c.scalar(1, dt), c.add("squeeze", [tau], {"axes": [nb]})])]), nb), nb + 1), nh])
    nh = c.add("where", [c.add("and", [inner, c.add("and", [col_km1, row_after])]), zero, nh])
    act_m = lift(act)
    bh = c.add("where", [act_m, nh, bh])
    bz = c.add("where", [act_m, nz_, bz])
    k_next = c.add("where", [act, c.add("where", [c.add("ge", [plus(k, 1), hi]), c.scalar(-1, INT64), plus(k, 1)]), k])
    more = c.add("reduce_any", [c.add("ne", [k_next, c.scalar(-2, INT64)])], {"axes": list(range(k_next.rank)),
                                                                              "keepdims": False}) \
        if k_next.rank else c.add("ne", [k_next, c.scalar(-2, INT64)])
    graph = body.finish([more, bh, bz, k_next, lo, hi, its])
    loop = ctx.graph.create_node("loop", [trips, *carried, idx, n],
                                 {"num_carried": len(carried), "has_condition": True}, subgraphs={"body": graph})
    loop.origins = ctx.origins
    ctx.graph.append(loop)
    t_out, z_out, k_out = loop.outputs[:3]
    return t_out, z_out, ctx.add("eq", [k_out, ctx.scalar(-2, INT64)])


def real_schur(ctx: LoweringContext, a: Value, sort: str | None = None) -> tuple[Value, Value]:
    """``(T, Z)`` of the real Schur form of ``a`` (``(..., n, n)``, float):
    ``a = Z T Z^T`` (module docstring), reordered for ``sort`` (one of
    ``schur_blocks.SORTS``, ``schur_blocks.reorder``) when given; all NaN for
    a matrix with a NaN or Inf, one whose iteration did not converge or one
    whose reordering rejected a swap."""
    finite = ctx.add("reduce_all", [ctx.add("eq", [ctx.add("sub", [a, a]), ctx.scalar(0, a.dtype)])],
                     {"axes": [a.rank - 2, a.rank - 1], "keepdims": False})  # x - x is NaN at NaN and Inf
    h, z = hessenberg(ctx, a)
    t, z, done = _francis(ctx, h, z, finite)
    t, z = standardize_blocks(ctx, t, z)
    ok = ctx.add("and", [finite, done])
    if sort is not None:
        t, z, ok = reorder(ctx, t, z, ok, sort)
    ok = unsq(ctx, unsq(ctx, ok, a.rank - 2), a.rank - 1)
    nan = ctx.scalar(np.nan, a.dtype)
    return ctx.add("where", [ok, t, nan]), ctx.add("where", [ok, z, nan])


def _schur_rule(ctx: LoweringContext, node, args: list[Value]) -> tuple[Value, Value]:
    op = getattr(node.op, "core_op", node.op)
    if op.output != "real":
        raise Unsupported(f"Schur with output={op.output!r} (lowered: 'real')")
    (a,) = float_args(ctx, node, args)
    return real_schur(ctx, a, op.sort)


BLOCKWISE_RULES[Schur] = _schur_rule


@lowers(Schur)
def lower_schur(ctx: LoweringContext, node) -> list[Value]:
    """``Schur{output="real", sort=...}`` of one float matrix ``(n, n)``
    (module docstring): ``T`` and ``Z`` ``(n, n)`` in its dtype.

    Raises:
        Unsupported: ``output="complex"``, or a complex or integer result dtype.
    """
    return list(_schur_rule(ctx, node, [ctx.get(v) for v in node.inputs]))
