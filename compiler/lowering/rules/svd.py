"""Lowering of ``SVD`` (``pt.linalg.svd``; ``np.linalg.svd`` in PyTensor's
``perform``): ``full_matrices`` True/False, ``compute_uv`` True/False, and
its ``Blockwise`` batched form, by one-sided Jacobi (Hestenes 1958; Demmel
& Veselić 1992; Golub & Van Loan §8.6.3).

For a tall ``(..., M, N)`` matrix (``M >= N``; a wide one is transposed,
``A^T = U' S V'^T`` giving ``A = V' S U'^T``) the columns of ``U = A`` are
rotated in pairs, with the round-robin schedule, rotation and stopping rule
of ``eigh.py`` (``jacobi_sweeps``), until every pair is orthogonal to
working precision: for columns ``u_p``, ``u_q`` the 2x2 Gram matrix
``[[|u_p|^2, u_p.u_q], [u_p.u_q, |u_q|^2]]`` is diagonalised by GVL's
``sym.schur2`` rotation, which is applied to the columns of ``U`` and of
``V`` (from the identity), a pair rotated only where ``|u_p.u_q| > eps
|u_p| |u_q|`` (Demmel-Veselić's test). The input is first scaled by a power
of two (exact) so that its largest entry is near 1 (the squared norms
neither overflow nor underflow) and the singular values scaled back.

Result: ``s_j = |u_j|`` sorted descending (LAPACK's order) with ``V``'s
columns permuted alike; ``U``'s columns are ``u_j / s_j`` where ``s_j >
0``; the columns of a zero singular value and, for ``full_matrices``, the
remaining ``M - N`` columns are completed to an orthonormal basis by the
Householder ``Q`` of ``qr.py`` (of ``U`` with those columns zero). Signs:
``V``'s column ``j`` has its largest entry positive (``U`` follows). A
matrix with a NaN or Inf gives all-NaN results. With ``compute_uv=True``
a matrix not known at compile time to be tall or wide (both dims static,
or the same symbol) gets both forms under an ``if`` on ``m < n``; for
singular values only, it is rotated as it is and the ``min(m, n)``
largest returned.

Bound: one-sided Jacobi is backward stable with small relative error in
each singular value for a matrix of well-scaled columns (Demmel &
Veselić); ``U S V^T`` reproduces the input within a small multiple of
``n * eps * |A|`` (tests: 1e-13 relative to the largest singular value, up
to condition number 1e10, and the singular values against LAPACK's within
1e-13 relative to the largest).

``MatrixPinv`` (``np.linalg.pinv``, NumPy's default ``rcond = 1e-15``
relative to the largest singular value) is ``V diag(1/s where s > rcond *
s_max else 0) U^T`` through the reduced SVD; with ``hermitian=True`` only
the lower triangle is read (NumPy's ``eigh`` path reads that one), the
pseudo-inverse being the same.
"""

from __future__ import annotations

import numpy as np

from compiler.lowering.compat import SVD, MatrixPinv
from compiler.lowering.context import LoweringContext
from compiler.lowering.bodies import Body
from compiler.lowering.registry import lowers
from compiler.lowering.rules.decompositions import float_args, matrix_transpose
from compiler.lowering.rules.eigh import jacobi_rotation, jacobi_sweeps, rotate_columns
from compiler.lowering.rules.indexing import dim_of, int64_value
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from compiler.lowering.rules.matrix_loops import identity_of, positions, size_of, symmetric_from_triangle, unsq
from compiler.lowering.rules.qr import householder_qr
from ir import DType, Value

INT64 = DType.INT64


def _is_wide(a: Value) -> bool:
    """Whether ``a`` (``(..., m, n)``, orientation known: ``_knows_orientation``) has ``m < n``."""
    m, n = a.shape[-2], a.shape[-1]
    return isinstance(m, int) and isinstance(n, int) and m < n


def _knows_orientation(a: Value) -> bool:
    """Whether ``_is_wide`` can tell for ``a``."""
    m, n = a.shape[-2], a.shape[-1]
    return (isinstance(m, int) and isinstance(n, int)) or (m == n and m is not None)


def _power_of_two_scale(ctx: LoweringContext, a: Value) -> Value:
    """``2^-e`` (``(..., 1, 1)``) with ``2^e`` near ``a``'s largest
    magnitude (1 for a zero matrix); exact to apply."""
    dt = a.dtype
    big = ctx.add("reduce_max", [ctx.add("abs", [a])], {"axes": [a.rank - 2, a.rank - 1], "keepdims": True})
    ok = ctx.add("and", [ctx.add("gt", [big, ctx.scalar(0, dt)]), ctx.add("lt", [big, ctx.scalar(np.inf, dt)])])
    e = ctx.add("floor", [ctx.add("log2", [ctx.add("where", [ok, big, ctx.scalar(1, dt)])])])
    return ctx.add("pow", [ctx.scalar(2, dt), ctx.add("neg", [e])])


def jacobi_svd(ctx: LoweringContext, a: Value, compute_uv: bool,
               full_matrices: bool) -> tuple[Value | None, Value, Value | None]:
    """``(U, s, Vt)`` of ``a`` (``(..., m, n)``, float) as
    ``np.linalg.svd`` (module docstring); ``U``/``Vt`` None unless
    ``compute_uv``. Shapes: ``s (..., k)``, ``k = min(m, n)``; ``U (..., m,
    m or k)``, ``Vt (..., n or k, n)``.

    A matrix whose orientation is not known at compile time gets both
    forms, one run by an ``if`` on ``m < n`` (``_either_orientation``).
    """
    if compute_uv and not _knows_orientation(a):
        return _either_orientation(ctx, a, full_matrices)
    # without U and V the orientation only costs time: a wide matrix's extra columns rotate to zero
    wide = _is_wide(a) if compute_uv or _knows_orientation(a) else False
    return _oriented_svd(ctx, a, compute_uv, full_matrices, wide)


def _either_orientation(ctx: LoweringContext, a: Value, full_matrices: bool) -> tuple[Value, Value, Value]:
    """``jacobi_svd`` with ``U`` and ``Vt`` of a matrix of run-time shape: an
    ``if`` whose branches are the wide form (``m < n``, through the transpose)
    and the tall one."""
    m, n = (int64_value(ctx, dim_of(ctx, a, axis)) for axis in (-2, -1))
    subgraphs = {}
    for role, wide in (("then", True), ("else", False)):
        body = Body(ctx, f"svd_{role}")
        inner = body.input(a.type, a.name or "a")
        subgraphs[role] = body.finish(list(_oriented_svd(body.ctx, inner, True, full_matrices, wide)))
    node = ctx.graph.create_node("if", [ctx.add("lt", [m, n]), a], subgraphs=subgraphs)
    node.origins = ctx.origins
    ctx.graph.append(node)
    u, s, vt = node.outputs
    return u, s, vt


def _oriented_svd(ctx: LoweringContext, a: Value, compute_uv: bool, full_matrices: bool,
                  wide: bool) -> tuple[Value | None, Value, Value | None]:
    """``jacobi_svd`` with the orientation given (``wide``: through ``a``'s transpose)."""
    b = matrix_transpose(ctx, a) if wide else a  # (..., M, N), M >= N unless only s is wanted
    dt = b.dtype
    scale = _power_of_two_scale(ctx, b)
    u0 = ctx.add("mul", [b, scale])
    n = size_of(ctx, b)
    idx = positions(ctx, b)
    rows_axis = b.rank - 2

    def step(c: LoweringContext, r_idx: Value, prt: Value, first: Value, state: list) -> tuple[list, Value]:
        U, V = state
        norms = c.add("reduce_sum", [c.add("mul", [U, U])], {"axes": [rows_axis], "keepdims": False})  # (..., N)
        partner = c.add("gather", [U, prt], {"axis": U.rank - 1})
        gram = c.add("reduce_sum", [c.add("mul", [U, partner])], {"axes": [rows_axis], "keepdims": False})
        n_p = c.add("gather", [norms, prt], {"axis": norms.rank - 1})
        app, aqq = c.add("where", [first, norms, n_p]), c.add("where", [first, n_p, norms])
        rotate, _, cos, sin = jacobi_rotation(c, app, aqq, gram, c.add("ne", [prt, r_idx]))
        sigma_s = c.add("where", [first, sin, c.add("neg", [sin])])
        return [rotate_columns(c, U, prt, cos, sigma_s), rotate_columns(c, V, prt, cos, sigma_s)], rotate

    eye_n = identity_of(ctx, u0, u0.rank - 1)  # (..., N, N): V's start
    U, V = jacobi_sweeps(ctx, n, idx, [u0, eye_n], step)
    norms = ctx.add("sqrt", [ctx.add("reduce_sum", [ctx.add("mul", [U, U])], {"axes": [rows_axis], "keepdims": False})])
    neg_s, order = ctx.add_multi("sort", [ctx.add("neg", [norms])], {"axis": -1})
    s = ctx.add("div", [ctx.add("neg", [neg_s]), ctx.add("squeeze", [scale], {"axes": [rows_axis]})])
    finite = ctx.add("reduce_all", [ctx.add("eq", [ctx.add("sub", [a, a]), ctx.scalar(0, dt)])],
                     {"axes": [a.rank - 2, a.rank - 1], "keepdims": False})
    nan = ctx.scalar(np.nan, dt)
    s = ctx.add("where", [unsq(ctx, finite, finite.rank), s, nan])
    if not compute_uv:
        if not _knows_orientation(a):  # the k = min(m, n) largest
            k = ctx.add("minimum", [int64_value(ctx, dim_of(ctx, b, -2)), n])
            s = ctx.add("slice", [s, ctx.i64([0]), ctx.add("reshape", [k, ctx.i64([1])]), ctx.i64([1])],
                        {"axes": [s.rank - 1]})
        return None, s, None
    perm = ctx.cast(ctx.add("eq", [unsq(ctx, idx, 1), unsq(ctx, order, order.rank - 1)]), dt)
    U, V, norms = ctx.add("matmul", [U, perm]), ctx.add("matmul", [V, perm]), ctx.add("neg", [neg_s])
    big = ctx.add("argmax", [ctx.add("abs", [V])], {"axis": rows_axis, "keepdims": True})
    lead = ctx.add("reduce_sum", [ctx.add("where", [ctx.add("eq", [unsq(ctx, idx, 1), big]), V, ctx.scalar(0, dt)])],
                   {"axes": [rows_axis], "keepdims": True})
    flip = ctx.add("lt", [lead, ctx.scalar(0, dt)])
    V, U = ctx.add("where", [flip, ctx.add("neg", [V]), V]), ctx.add("where", [flip, ctx.add("neg", [U]), U])
    nonzero = ctx.add("gt", [unsq(ctx, norms, rows_axis), ctx.scalar(0, dt)])  # (..., 1, N)
    U = ctx.add("where", [nonzero, ctx.add("div", [U, ctx.add("where", [nonzero, unsq(ctx, norms, rows_axis),
                                                                         ctx.scalar(1, dt)])]),
                          ctx.scalar(0, dt)])
    q = householder_qr(ctx, U, want_q=True).q  # (..., M, M): its first columns are +-U's nonzero ones
    n_end = ctx.add("reshape", [n, ctx.i64([1])])
    last = q.rank - 1
    U = ctx.add("where", [nonzero, U, ctx.add("slice", [q, ctx.i64([0]), n_end, ctx.i64([1])], {"axes": [last]})])
    if full_matrices:
        rest = ctx.add("slice", [q, n_end, ctx.i64([np.iinfo(np.int64).max]), ctx.i64([1])], {"axes": [last]})
        U = ctx.add("concat", [U, rest], {"axis": last})
    V = ctx.add("where", [unsq(ctx, unsq(ctx, finite, finite.rank), finite.rank + 1), V, nan])
    U = ctx.add("where", [unsq(ctx, unsq(ctx, finite, finite.rank), finite.rank + 1), U, nan])
    if wide:  # A^T = U' S V'^T, so A = V' S U'^T
        return V, s, matrix_transpose(ctx, U)
    return U, s, matrix_transpose(ctx, V)


def _svd_rule(ctx: LoweringContext, node, args: list[Value]) -> tuple[Value, ...]:
    op = getattr(node.op, "core_op", node.op)
    (a,) = float_args(ctx, node, args)
    u, s, vt = jacobi_svd(ctx, a, op.compute_uv, op.full_matrices)
    return (u, s, vt) if op.compute_uv else (s,)


BLOCKWISE_RULES[SVD] = _svd_rule


@lowers(SVD)
def lower_svd(ctx: LoweringContext, node) -> list[Value]:
    """``SVD`` of one matrix (module docstring); float results only.

    Raises:
        Unsupported: an integer result dtype.
    """
    return list(_svd_rule(ctx, node, [ctx.get(v) for v in node.inputs]))


RCOND = 1e-15  # np.linalg.pinv's default (rcond unset, rtol unset)


def _pinv_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    op = getattr(node.op, "core_op", node.op)
    (a,) = float_args(ctx, node, args)
    if op.hermitian:
        a = symmetric_from_triangle(ctx, a, lower=True)
    u, s, vt = jacobi_svd(ctx, a, compute_uv=True, full_matrices=False)
    axis = s.rank - 1
    largest = ctx.add("reduce_max", [s], {"axes": [axis], "keepdims": True})
    cutoff = ctx.add("mul", [ctx.scalar(RCOND, s.dtype), largest])
    large = ctx.add("gt", [s, cutoff])
    one, zero = ctx.scalar(1, s.dtype), ctx.scalar(0, s.dtype)
    inv = ctx.add("where", [large, ctx.add("div", [one, ctx.add("where", [large, s, one])]), zero])
    inv = ctx.add("where", [ctx.add("isnan", [s]), s, inv])  # a NaN input stays NaN
    return ctx.add("matmul", [matrix_transpose(ctx, vt), ctx.add("mul", [unsq(ctx, inv, axis + 1),
                                                                       matrix_transpose(ctx, u)])])


BLOCKWISE_RULES[MatrixPinv] = _pinv_rule


@lowers(MatrixPinv)
def lower_pinv(ctx: LoweringContext, node) -> list[Value]:
    """``MatrixPinv`` of one matrix (module docstring); float results only.

    Raises:
        Unsupported: an integer result dtype.
    """
    return [_pinv_rule(ctx, node, [ctx.get(v) for v in node.inputs])]
