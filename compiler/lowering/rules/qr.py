"""Lowering of ``QR`` (``pt.linalg.qr``; ``scipy.linalg.qr`` in PyTensor's
``perform``) and its ``Blockwise`` batched form, modes "full", "economic"
and "r"; column pivoting and mode "raw" are refused.

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

Modes: "full": ``Q (m, m)``, ``R (m, n)``; "economic": ``Q[:, :k]``,
``R[:k, :]``; "r": ``R (m, n)`` (SciPy's mode "r"). The gradient is
PyTensor's own (3.0's ``QR.L_op``), lowered through the ops it builds.
"""

from __future__ import annotations

from compiler.lowering.compat import QR
from compiler.lowering.context import LoweringContext
from compiler.lowering.errors import Unsupported
from compiler.lowering.registry import lowers
from compiler.lowering.rules.decompositions import float_args
from compiler.lowering.rules.indexing import dim_of, int64_value
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from compiler.lowering.rules.matrix_loops import column, identity_of, positions, run_steps, unsq
from ir import DType, Value

INT64 = DType.INT64
MODES = ("full", "economic", "r")


def _steps(ctx: LoweringContext, a: Value) -> Value:
    """``k = min(m, n)`` of ``a`` (``(..., m, n)``) as an ``i64[]``."""
    m, n = a.shape[-2], a.shape[-1]
    if isinstance(m, int) and isinstance(n, int):
        return ctx.scalar(min(m, n), INT64)
    return ctx.add("minimum", [int64_value(ctx, dim_of(ctx, a, -2)), int64_value(ctx, dim_of(ctx, a, -1))])


def householder_qr(ctx: LoweringContext, a: Value, want_q: bool) -> tuple[Value | None, Value]:
    """``(Q, R)`` of ``a`` (``(..., m, n)``, float) by ``dgeqr2``'s
    Householder reflections (module docstring): ``Q (..., m, m)`` (None
    unless ``want_q``) and ``R (..., m, n)``, upper trapezoidal with exact
    zeros below the diagonal."""
    rows, cols = positions(ctx, a, a.rank - 2), positions(ctx, a, a.rank - 1)
    carried = [a] + ([identity_of(ctx, a, a.rank - 2)] if want_q else [])

    def step(c: LoweringContext, j: Value, state: list, invariant: list) -> list:
        R, *rest = state
        r, cl = invariant
        dt = R.dtype
        zero, one = c.scalar(0, dt), c.scalar(1, dt)
        at, below = c.add("eq", [r, j]), c.add("gt", [r, j])  # (m,)
        col = column(c, R, j)  # (..., m)
        last = col.rank - 1
        alpha = c.add("gather", [col, unsq(c, j, 0)], {"axis": last})  # (..., 1)
        x = c.add("where", [below, col, zero])
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
        v = c.add("where", [at, one, c.add("where", [below, c.add("mul", [x, inv]), zero])])  # (..., m)
        v_col, v_row = unsq(c, v, last + 1), unsq(c, v, last)  # (..., m, 1), (..., 1, m)
        tau_m = unsq(c, tau, last + 1)  # (..., 1, 1)
        w = c.add("matmul", [v_row, R])  # (..., 1, n)
        updated = c.add("sub", [R, c.add("mul", [tau_m, c.add("mul", [v_col, w])])])
        region = c.add("and", [unsq(c, c.add("ge", [r, j]), 1), c.add("gt", [cl, j])])  # rows >= j, cols > j
        R = c.add("where", [region, updated, R])
        diag = c.add("where", [trivial, alpha, beta])  # (..., 1)
        new_col = c.add("where", [below, zero, c.add("where", [at, diag, col])])  # (..., m)
        R = c.add("where", [c.add("eq", [cl, j]), unsq(c, new_col, last + 1), R])
        out = [R]
        if rest:
            (Q,) = rest
            u = c.add("matmul", [Q, v_col])  # (..., m, 1)
            out.append(c.add("sub", [Q, c.add("mul", [tau_m, c.add("mul", [u, v_row])])]))
        return out

    result = run_steps(ctx, _steps(ctx, a), carried, [rows, cols], step)
    return (result[1] if want_q else None), result[0]


def _leading(ctx: LoweringContext, x: Value, axis: int, count: Value) -> Value:
    """``x`` cut to its first ``count`` entries along ``axis``."""
    return ctx.add("slice", [x, ctx.i64([0]), ctx.add("reshape", [count, ctx.i64([1])]), ctx.i64([1])],
                   {"axes": [axis]})


def _qr_rule(ctx: LoweringContext, node, args: list[Value]) -> tuple[Value, ...]:
    op = getattr(node.op, "core_op", node.op)
    if op.pivoting:
        raise Unsupported("QR with pivoting=True (LAPACK geqp3's column pivoting) is not lowered")
    if op.mode not in MODES:
        raise Unsupported(f"QR with mode={op.mode!r} (lowered: {', '.join(MODES)})")
    (a,) = float_args(ctx, node, args)
    q, r = householder_qr(ctx, a, want_q=op.mode != "r")
    if op.mode == "r":
        return (r,)
    if op.mode == "economic":
        k = _steps(ctx, a)
        q, r = _leading(ctx, q, q.rank - 1, k), _leading(ctx, r, r.rank - 2, k)
    return q, r


BLOCKWISE_RULES[QR] = _qr_rule


@lowers(QR)
def lower_qr(ctx: LoweringContext, node) -> list[Value]:
    """``QR`` of one matrix (module docstring); float results only.

    Raises:
        Unsupported: ``pivoting=True``, mode "raw", or an integer result dtype.
    """
    return list(_qr_rule(ctx, node, [ctx.get(v) for v in node.inputs]))
