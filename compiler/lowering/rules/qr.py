"""Lowering of ``QR`` (``pt.linalg.qr``; ``scipy.linalg.qr`` in PyTensor's
``perform``) and its ``Blockwise`` batched form: modes "full", "economic",
"r" and "raw", with or without column pivoting (``pivoting=True``).

The algorithm is LAPACK's unblocked Householder QR (``dgeqr2``), one
reflection per column ``j < k = min(m, n)``, as one ``run_steps`` loop
over whole ``(..., m, n)`` matrices (``matrix_loops.py``: masks from the
row and column positions, unrolled by ``scan-unroll`` for static sizes):

* ``dlarfg`` on the column ``(alpha, x) = (R[j, j], R[j+1:, j])``:
  ``beta = -sign(alpha) * hypot(alpha, |x|)`` (the sign of ``alpha``'s
  sign bit, as Fortran's ``SIGN``), ``tau = (beta - alpha) / beta``,
  ``v = (1, x * (1 / (alpha - beta)))``; where ``x`` is all zero, ``tau =
  0`` and the column is left as it is (``H = I``, ``R[j, j] = alpha``).
  The norms are taken of the column scaled by its largest entry, so they
  neither overflow nor underflow (``dnrm2``/``dlapy2`` scale too);
* ``dlarf``: the columns after ``j`` get ``H = I - tau v v^T``, ``R[j+1:,
  j]`` becomes exactly 0 and ``R[j, j] = beta``;
* ``Q = H_0 H_1 ... H_(k-1)`` accumulated as ``Q <- Q - tau (Q v) v^T``
  from the identity (``dorg2r`` applies the same reflections to the
  identity in the opposite order).

Signs are LAPACK's (``R``'s diagonal is ``-sign(alpha)``), so ``Q`` and
``R`` agree with SciPy's and NumPy's entry by entry, not only up to the
signs of columns. Bound: Householder QR is backward stable; ``Q R``
reproduces the input and ``Q^T Q`` the identity within a small multiple
of ``n * eps`` times the input's norm, and the factors themselves differ
from LAPACK's blocked ``dgeqrf``/``dorgqr`` by a few ulp times the
condition number (tests: 1e-13 relative to the input's norm for the
reconstruction, factors against SciPy on well-conditioned matrices).
Not done: ``dlarfg``'s rescaling loop for a column whose norm is below
``safmin / eps`` (about 1e-292), where LAPACK rescales and this loses
the low bits.

Column pivoting (``pivoting=True``: LAPACK ``dgeqp3``/``dlaqp2``,
Businger & Golub 1965; Golub & Van Loan Alg. 5.4.1): before reflection
``j`` the remaining column (index ``>= j``) of largest 2-norm over rows
``>= j`` is swapped into place, the first of equal norms (``idamax``), and
the swap recorded in ``jpvt`` (from ``range(n)``; ``A[:, jpvt] = Q R``,
0-based, ``int32`` as PyTensor's output). The norms are recomputed (scaled,
as ``dnrm2``) at every step instead of LAPACK's downdated partial norms
(``vn1``/``vn2``), which agree to far better than the gap between distinct
norms; so the permutation equals LAPACK's wherever the column norms it
compares are distinct, and may differ only at ties within rounding (the
trailing columns of a rank-deficient matrix are such rounding noise; tests:
80 random shapes up to 24 x 24 in float64 and float32, all permutations
equal).

Modes (PyTensor's ``perform``, which is ``scipy.linalg.qr``'s): "full":
``Q (m, m)``, ``R (m, n)``; "economic": ``Q[:, :k]``, ``R[:k, :]``; "r":
``R (m, n)`` (SciPy's mode "r"); "raw": ``geqrf``'s (or ``geqp3``'s)
packed ``qr (m, n)`` (R on and above the diagonal, ``v[j+1:]`` of
reflection ``j`` below it, ``v[j] = 1`` implied), ``tau (k,)`` and
``triu(qr)[:k]``; with pivoting ``jpvt (n,)`` last. Mode "raw" of a static
non-square shape follows ``perform``: PyTensor types the packed output
``(m, m)`` and R ``(m, n)`` but computes ``(m, n)`` and ``(k, n)``; the
model's outputs have ``perform``'s shapes (``LoweringContext.follow_perform``). The gradient is PyTensor's own
(3.0's ``QR.L_op``), lowered through the ops it builds.
"""

from __future__ import annotations

from typing import NamedTuple

from compiler.lowering.compat import QR
from compiler.lowering.context import LoweringContext
from compiler.lowering.errors import Unsupported
from compiler.lowering.registry import lowers
from compiler.lowering.rules.decompositions import float_args
from compiler.lowering.rules.indexing import dim_of, int64_value
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from compiler.lowering.rules.matrix_loops import (column, identity_of, positions, row, run_steps, swap_entries,
                                                   unsq, zeros_like)
from compiler.lowering.rules.scalar_ops import shape_of
from ir import DType, Value

INT64 = DType.INT64
MODES = ("full", "economic", "r", "raw")


def _steps(ctx: LoweringContext, a: Value) -> Value:
    """``k = min(m, n)`` of ``a`` (``(..., m, n)``) as an ``i64[]``."""
    m, n = a.shape[-2], a.shape[-1]
    if isinstance(m, int) and isinstance(n, int):
        return ctx.scalar(min(m, n), INT64)
    return ctx.add("minimum", [int64_value(ctx, dim_of(ctx, a, -2)), int64_value(ctx, dim_of(ctx, a, -1))])


class QRFactors(NamedTuple):
    """What ``householder_qr`` returns (``(..., m, n)`` input, ``k = min(m,
    n)``): ``q`` ``(..., m, m)`` or None; ``r`` ``(..., m, n)``: R on and
    above the diagonal, below it exact zeros or, with ``raw``, the
    reflectors' ``v[j+1:]`` (geqrf's packed ``qr``); ``tau`` ``(..., k)``
    or None (unless ``raw``); ``jpvt`` ``i64 (..., n)`` (0-based, ``a[...,
    :, jpvt] = Q R``) or None (unless ``pivoting``)."""
    q: Value | None
    r: Value
    tau: Value | None
    jpvt: Value | None


def _column_norms(c: LoweringContext, x: Value, rows_in: Value) -> Value:
    """The 2-norm of each column of ``x`` (``(..., m, n)``) over the rows
    where ``rows_in`` (``(m, 1)`` bool) holds, scaled by the column's largest
    entry (no overflow or underflow, as ``dnrm2``): ``(..., n)``."""
    dt = x.dtype
    zero, one = c.scalar(0, dt), c.scalar(1, dt)
    part = c.add("where", [rows_in, x, zero])
    axis = x.rank - 2
    big = c.add("reduce_max", [c.add("abs", [part])], {"axes": [axis], "keepdims": True})
    safe = c.add("where", [c.add("gt", [big, zero]), big, one])
    scaled = c.add("div", [part, safe])
    total = c.add("reduce_sum", [c.add("mul", [scaled, scaled])], {"axes": [axis], "keepdims": True})
    return c.add("squeeze", [c.add("mul", [safe, c.add("sqrt", [total])])], {"axes": [axis]})


def _swap_columns(c: LoweringContext, x: Value, cl: Value, j: Value, p: Value) -> Value:
    """``x`` (``(..., m, n)``) with its columns ``j`` (an ``i64[]``) and
    ``p`` (``(..., 1)``, one per matrix) exchanged; column ``p`` is read as
    a sum with -0.0 elsewhere (``matrix_loops.select_row``'s exact read)."""
    last = x.rank - 1
    col_j = unsq(c, column(c, x, j), last)  # (..., m, 1)
    at_p = unsq(c, c.add("eq", [cl, p]), last - 1)  # (..., 1, n)
    col_p = c.add("reduce_sum", [c.add("where", [at_p, x, c.scalar(-0.0, x.dtype)])],
                  {"axes": [last], "keepdims": True})
    return c.add("where", [c.add("eq", [cl, j]), col_p, c.add("where", [at_p, col_j, x])])


def householder_vector(c: LoweringContext, alpha: Value, x: Value, at: Value,
                       below: Value) -> tuple[Value, Value, Value, Value]:
    """LAPACK ``dlarfg`` on ``(alpha, x)`` (module docstring): ``alpha``
    ``(..., 1)``, ``x`` ``(..., m)`` zero outside ``below``; ``at`` and
    ``below`` (broadcasting to ``(..., m)``) mark alpha's position and the
    entries reflected into it. Returns ``(v, tau, beta, tail)``: ``v``
    ``(..., m)`` (1 at ``at``, ``x / (alpha - beta)`` below, 0 elsewhere),
    ``tau`` ``(..., 1)`` with ``H = I - tau v v^T``, ``beta`` the entry
    ``H (alpha, x)`` leaves at ``at`` (``alpha`` itself where ``x`` is 0 and
    ``tau = 0``), and ``tail`` = ``v`` below ``at`` (zero elsewhere)."""
    dt = x.dtype
    last = x.rank - 1
    zero, one = c.scalar(0, dt), c.scalar(1, dt)
    scale = c.add("maximum", [c.add("reduce_max", [c.add("abs", [x])], {"axes": [last], "keepdims": True}),
                              c.add("abs", [alpha])])
    safe = c.add("where", [c.add("gt", [scale, zero]), scale, one])
    xs, als = c.add("div", [x, safe]), c.add("div", [alpha, safe])
    x2 = c.add("reduce_sum", [c.add("mul", [xs, xs])], {"axes": [last], "keepdims": True})
    norm = c.add("mul", [safe, c.add("sqrt", [c.add("add", [c.add("mul", [als, als]), x2])])])
    negative = c.add("or", [c.add("lt", [alpha, zero]),
                            c.add("and", [c.add("eq", [alpha, zero]),
                                          c.add("lt", [c.add("div", [one, alpha]), zero])])])  # -0.0 too
    beta = c.add("where", [negative, norm, c.add("neg", [norm])])
    trivial = c.add("eq", [x2, zero])  # (..., 1)
    tau = c.add("where", [trivial, zero, c.add("div", [c.add("sub", [beta, alpha]), beta])])
    inv = c.add("where", [trivial, zero, c.add("reciprocal", [c.add("sub", [alpha, beta])])])  # H = I: v = e_j
    tail = c.add("mul", [x, inv])
    v = c.add("where", [at, one, c.add("where", [below, tail, zero])])
    return v, tau, c.add("where", [trivial, alpha, beta]), tail


def householder_qr(ctx: LoweringContext, a: Value, want_q: bool, *, pivoting: bool = False,
                   raw: bool = False) -> QRFactors:
    """The QR factors of ``a`` (``(..., m, n)``, float) by ``dgeqr2``'s
    Householder reflections, with ``pivoting`` ``dlaqp2``'s column pivoting
    (module docstring); what is returned is ``QRFactors``' docstring. Q is
    accumulated only if ``want_q``; ``raw`` keeps the reflectors below the
    diagonal of ``r`` and returns ``tau``."""
    rows, cols = positions(ctx, a, a.rank - 2), positions(ctx, a, a.rank - 1)
    k = _steps(ctx, a)
    carried = [a]
    if want_q:
        carried.append(identity_of(ctx, a, a.rank - 2))
    if raw:
        carried.append(_leading(ctx, zeros_like(ctx, row(ctx, a, ctx.scalar(0, INT64))), a.rank - 2, k))
    if pivoting:
        batch = ctx.add("slice", [shape_of(ctx, a), ctx.i64([0]), ctx.i64([a.rank - 2]), ctx.i64([1])], {"axes": [0]})
        carried.append(ctx.add("expand", [cols, ctx.add("concat", [batch, ctx.i64([1])], {"axis": 0})]))  # (..., n)

    def step(c: LoweringContext, j: Value, state: list, invariant: list) -> list:
        R, *rest = state
        Q = rest.pop(0) if want_q else None
        taus = rest.pop(0) if raw else None
        jpvt = rest.pop(0) if pivoting else None
        r, cl = invariant
        dt = R.dtype
        zero = c.scalar(0, dt)
        at, below = c.add("eq", [r, j]), c.add("gt", [r, j])  # (m,)
        last = R.rank - 2  # the rank of a column (..., m)
        if pivoting:  # dlaqp2: the first remaining column of largest norm below row j (idamax)
            norms = _column_norms(c, R, unsq(c, c.add("ge", [r, j]), 1))  # (..., n)
            norms = c.add("where", [c.add("ge", [cl, j]), norms, c.scalar(-1, dt)])
            p = c.add("argmax", [norms], {"axis": last, "keepdims": True})  # (..., 1)
            R = _swap_columns(c, R, cl, j, p)
            jpvt = swap_entries(c, jpvt, cl, j, p)
        col = column(c, R, j)  # (..., m)
        alpha = c.add("gather", [col, unsq(c, j, 0)], {"axis": last})  # (..., 1)
        x = c.add("where", [below, col, zero])
        v, tau, diag, tail = householder_vector(c, alpha, x, at, below)
        v_col, v_row = unsq(c, v, last + 1), unsq(c, v, last)  # (..., m, 1), (..., 1, m)
        tau_m = unsq(c, tau, last + 1)  # (..., 1, 1)
        w = c.add("matmul", [v_row, R])  # (..., 1, n)
        updated = c.add("sub", [R, c.add("mul", [tau_m, c.add("mul", [v_col, w])])])
        region = c.add("and", [unsq(c, c.add("ge", [r, j]), 1), c.add("gt", [cl, j])])  # rows >= j, cols > j
        R = c.add("where", [region, updated, R])
        new_col = c.add("where", [below, tail if raw else zero, c.add("where", [at, diag, col])])  # (..., m)
        R = c.add("where", [c.add("eq", [cl, j]), unsq(c, new_col, last + 1), R])
        out = [R]
        if want_q:
            u = c.add("matmul", [Q, v_col])  # (..., m, 1)
            out.append(c.add("sub", [Q, c.add("mul", [tau_m, c.add("mul", [u, v_row])])]))
        if raw:
            out.append(c.add("where", [c.add("eq", [positions(c, taus), j]), tau, taus]))
        if pivoting:
            out.append(jpvt)
        return out

    result = run_steps(ctx, k, carried, [rows, cols], step)
    r_out, *rest = result
    q = rest.pop(0) if want_q else None
    tau = rest.pop(0) if raw else None
    return QRFactors(q, r_out, tau, rest.pop(0) if pivoting else None)


def _leading(ctx: LoweringContext, x: Value, axis: int, count: Value) -> Value:
    """``x`` cut to its first ``count`` entries along ``axis``."""
    return ctx.add("slice", [x, ctx.i64([0]), ctx.add("reshape", [count, ctx.i64([1])]), ctx.i64([1])],
                   {"axes": [axis]})


def _qr_rule(ctx: LoweringContext, node, args: list[Value]) -> tuple[Value, ...]:
    op = getattr(node.op, "core_op", node.op)
    if op.mode not in MODES:
        raise Unsupported(f"QR with mode={op.mode!r} (lowered: {', '.join(MODES)})")
    (a,) = float_args(ctx, node, args)
    m, n = a.shape[-2:]
    if op.mode == "raw" and m != n:  # PyTensor types (m, m) and (m, n); perform gives (m, n) and (k, n)
        ctx.follow_perform([node.outputs[0], node.outputs[2]])
    f = householder_qr(ctx, a, want_q=op.mode in ("full", "economic"), pivoting=op.pivoting, raw=op.mode == "raw")
    k = _steps(ctx, a)
    if op.mode == "r":
        out = (f.r,)
    elif op.mode == "raw":  # PyTensor's perform: geqrf's (qr, tau) and R = triu(qr)[:k]
        out = (f.r, f.tau, _upper(ctx, _leading(ctx, f.r, f.r.rank - 2, k)))
    elif op.mode == "economic":
        out = (_leading(ctx, f.q, f.q.rank - 1, k), _leading(ctx, f.r, f.r.rank - 2, k))
    else:
        out = (f.q, f.r)
    return (*out, ctx.cast(f.jpvt, DType.INT32)) if op.pivoting else out


def _upper(ctx: LoweringContext, x: Value) -> Value:
    """``np.triu(x)`` of ``x`` (``(..., k, n)``)."""
    keep = ctx.add("le", [unsq(ctx, positions(ctx, x, x.rank - 2), 1), positions(ctx, x, x.rank - 1)])
    return ctx.add("where", [keep, x, ctx.scalar(0, x.dtype)])


BLOCKWISE_RULES[QR] = _qr_rule


@lowers(QR)
def lower_qr(ctx: LoweringContext, node) -> list[Value]:
    """``QR{mode, pivoting}`` of one matrix ``(m, n)`` (module docstring):
    the outputs of PyTensor's ``perform`` for every mode, with ``pivoting``
    the 0-based ``jpvt`` (``int32 (n,)``) last; float results only.

    Raises:
        Unsupported: an integer result dtype.
    """
    return list(_qr_rule(ctx, node, [ctx.get(v) for v in node.inputs]))
