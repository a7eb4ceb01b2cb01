"""Lowering of the matrix decompositions and triangular solves PyMC models
use: ``Cholesky``, ``SolveTriangular``, ``ExtractDiag``, and their
``Blockwise`` batched forms (``pytensor.tensor.slinalg`` / ``basic``).

ONNX has none of them, so each is an exact algorithm built from IR ops.
For a static matrix size of at most ``UNROLL_LIMITS[op]`` it is unrolled: every
step works on whole columns or rows with ``slice``/``matmul``/``concat``,
so batch dims broadcast for free and the node count grows with n (not
n^3). Dynamic and larger sizes use the loop forms of ``matrix_loops.py``
(one ONNX Loop, the same algorithms on masked full matrices).

- Cholesky: the column-by-column (Crout) algorithm of LAPACK's unblocked
  ``potf2``: ``v = A[:, j] - L[:, :j] @ L[j, :j]``, ``L[j, j] = sqrt(v[j])``,
  ``L[j+1:, j] = v[j+1:] / L[j, j]``; only the lower triangle of A is read
  (the upper one for ``lower=False``, which returns the transpose of the
  factor of ``A.T``). Where a pivot is not positive (not positive
  definite, or NaN) the whole matrix is NaN, as PyTensor's ``perform``
  sets it when ``potrf`` reports ``info != 0``.
- SolveTriangular: forward (lower) or back (upper) substitution, one row of
  the solution per step, reading only A's triangle; ``unit_diagonal``
  skips the division. A zero on the diagonal gives an all-NaN result, as
  PyTensor's ``perform`` does when ``trtrs`` reports a singular matrix.
- ExtractDiag: one slice per diagonal element (``np.diagonal``: the
  diagonal becomes the last axis).

Rounding differs from LAPACK only in the association of the dot products
(within a few ulp times the condition number; tests use 1e-12 relative on
well-conditioned and 1e-8 on ill-conditioned matrices against SciPy).
"""

from __future__ import annotations

import numpy as np
from pytensor.tensor.basic import ExtractDiag

from compiler.lowering.errors import Unsupported
from compiler.lowering.compat import Cholesky, SolveTriangular
from compiler.lowering.context import LoweringContext, ir_dtype
from compiler.lowering.registry import lowers
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from compiler.lowering.rules.matrix_loops import cholesky_loop, matrix_transpose, triangular_loop
from compiler.lowering.rules.scalar_ops import shape_of
from ir import DType, Value

# Largest static matrix size unrolled; larger and dynamic sizes use the loop
# form. Chosen from bench/bench_linalg.py (bench/README): the unrolled
# Cholesky is faster than the loop at every size measured up to 64 (1.2x for
# one matrix, 2.7x for a batch of 64 at n=64) and equal at 128 for one matrix,
# where it costs 1,659 ONNX nodes; the unrolled triangular solve stops paying
# between 32 and 64 (equal at 64 for one system, the loop 1.2x faster for 64).
UNROLL_LIMITS = {"Cholesky": 64, "SolveTriangular": 32}


def _unrolled_size(x: Value, op: str) -> int | None:
    """The static matrix size when the unrolled form of ``op`` applies
    (1..``UNROLL_LIMITS[op]``), else None."""
    n = x.shape[-1]
    return n if isinstance(n, int) and 1 <= n <= UNROLL_LIMITS[op] else None


def _slice(ctx: LoweringContext, x: Value, axis: int, start: int, stop: int) -> Value:
    """``x[..., start:stop, ...]`` on ``axis`` (non-negative)."""
    return ctx.add("slice", [x, ctx.i64([start]), ctx.i64([stop]), ctx.i64([1])], {"axes": [axis]})


def _concat(ctx: LoweringContext, parts: list[Value], axis: int) -> Value:
    return parts[0] if len(parts) == 1 else ctx.add("concat", parts, {"axis": axis})


def _all(ctx: LoweringContext, conds: list[Value]) -> Value:
    out = conds[0]
    for c in conds[1:]:
        out = ctx.add("and", [out, c])
    return out


def cholesky(ctx: LoweringContext, a: Value, lower: bool) -> Value:
    """The Cholesky factor of ``a`` (float, ``(..., n, n)``, n static),
    lower or upper, all NaN per matrix where it is not positive definite.
    Unrolled for static n <= ``UNROLL_LIMITS["Cholesky"]``, else a loop
    (``matrix_loops.cholesky_loop``)."""
    n = _unrolled_size(a, "Cholesky")
    if not lower:
        a = matrix_transpose(ctx, a)  # potrf(upper) reads the upper triangle: U = chol_lower(A.T).T
    if n is None:
        factor = cholesky_loop(ctx, a)
        return factor if lower else matrix_transpose(ctx, factor)
    r = a.rank
    rows = np.arange(n)[:, None]
    zero, nan = ctx.scalar(0, a.dtype), ctx.scalar(np.nan, a.dtype)
    cols, pivots_ok = [], []
    for j in range(n):
        v = _slice(ctx, a, r - 1, j, j + 1)  # (..., n, 1)
        if j:
            done = _concat(ctx, cols, r - 1)  # (..., n, j)
            row_j = matrix_transpose(ctx, _slice(ctx, done, r - 2, j, j + 1))
            v = ctx.add("sub", [v, ctx.add("matmul", [done, row_j])])
        d = _slice(ctx, v, r - 2, j, j + 1)  # (..., 1, 1)
        ljj = ctx.add("sqrt", [d])
        pivots_ok.append(ctx.add("gt", [d, zero]))
        below = ctx.add("where", [ctx.const(rows > j), ctx.add("div", [v, ljj]), zero])
        cols.append(ctx.add("where", [ctx.const(rows == j), ljj, below]))
    factor = ctx.add("where", [_all(ctx, pivots_ok), _concat(ctx, cols, r - 1), nan])
    return factor if lower else matrix_transpose(ctx, factor)


def solve_triangular(ctx: LoweringContext, a: Value, b: Value, *, lower: bool, unit_diagonal: bool,
                     b_ndim: int, nan_if_singular: bool = True) -> Value:
    """``x`` with ``a @ x == b`` for triangular ``a`` (``(..., n, n)``) and
    ``b`` (``(..., n)`` when ``b_ndim`` is 1, else ``(..., n, k)``), batch
    dims broadcast; all NaN per system where a diagonal entry is 0 (unless
    not ``nan_if_singular``: then the Inf/NaN of the division stay, as in
    ``potrs``). Unrolled for static n <= ``UNROLL_LIMITS["SolveTriangular"]``,
    else a loop (``matrix_loops.triangular_loop``)."""
    n = _unrolled_size(a, "SolveTriangular")
    if b_ndim == 1:
        b = ctx.add("unsqueeze", [b], {"axes": [b.rank]})
    if n is None:
        x = triangular_loop(ctx, a, b, lower=lower, unit_diagonal=unit_diagonal, nan_if_singular=nan_if_singular)
        return ctx.add("squeeze", [x], {"axes": [x.rank - 1]}) if b_ndim == 1 else x
    ra, rb = a.rank, b.rank
    rows: dict[int, Value] = {}
    diag_ok = []
    for i in (range(n) if lower else reversed(range(n))):
        bi = _slice(ctx, b, rb - 2, i, i + 1)  # (..., 1, k)
        lo, hi = (0, i) if lower else (i + 1, n)
        a_row = _slice(ctx, a, ra - 2, i, i + 1)  # (..., 1, n)
        if hi > lo:
            known = _concat(ctx, [rows[j] for j in range(lo, hi)], rb - 2)  # (..., hi-lo, k)
            bi = ctx.add("sub", [bi, ctx.add("matmul", [_slice(ctx, a_row, ra - 1, lo, hi), known])])
        if not unit_diagonal:
            aii = _slice(ctx, a_row, ra - 1, i, i + 1)
            if nan_if_singular:
                diag_ok.append(ctx.add("ne", [aii, ctx.scalar(0, a.dtype)]))
            bi = ctx.add("div", [bi, aii])
        rows[i] = bi
    x = _concat(ctx, [rows[i] for i in range(n)], rb - 2)
    if diag_ok:
        x = ctx.add("where", [_all(ctx, diag_ok), x, ctx.scalar(np.nan, a.dtype)])
    if b_ndim == 1:
        x = ctx.add("squeeze", [x], {"axes": [x.rank - 1]})
    return x


def float_args(ctx: LoweringContext, node, args: list[Value]) -> list[Value]:
    """``args`` cast to the float dtype of ``node``'s result.

    Raises:
        Unsupported: an integer or bool result dtype.
    """
    dtype = ir_dtype(node.outputs[0])
    if not dtype.is_float:
        raise Unsupported(f"{node.op} with a {dtype} result")
    return [ctx.cast(x, dtype) for x in args]


def _cholesky_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    (a,) = float_args(ctx, node, args)
    op = getattr(node.op, "core_op", node.op)
    return cholesky(ctx, a, op.lower)


def _solve_triangular_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    a, b = float_args(ctx, node, args)
    op = getattr(node.op, "core_op", node.op)
    return solve_triangular(ctx, a, b, lower=op.lower, unit_diagonal=op.unit_diagonal, b_ndim=op.b_ndim)


BLOCKWISE_RULES[Cholesky] = _cholesky_rule
BLOCKWISE_RULES[SolveTriangular] = _solve_triangular_rule


@lowers(Cholesky)
def lower_cholesky(ctx: LoweringContext, node) -> list[Value]:
    """``Cholesky{lower}(A)`` (``pytensor.tensor.slinalg``; LAPACK ``potrf``):
    a float ``(n, n)`` matrix of any size (unrolled up to ``UNROLL_LIMITS``,
    else a loop); returns the triangular factor, all NaN when A is not
    positive definite (PyTensor's ``perform`` when ``potrf`` fails).

    Raises:
        Unsupported: an integer result dtype.
    """
    return [_cholesky_rule(ctx, node, [ctx.get(node.inputs[0])])]


@lowers(SolveTriangular)
def lower_solve_triangular(ctx: LoweringContext, node) -> list[Value]:
    """``SolveTriangular{lower, unit_diagonal, b_ndim}(A, b)``
    (``pytensor.tensor.slinalg``; LAPACK ``trtrs``): substitution through
    A's triangle, any size (unrolled up to ``UNROLL_LIMITS``, else a loop);
    all NaN when A has a zero diagonal entry.

    Raises:
        Unsupported: an integer result dtype.
    """
    return [_solve_triangular_rule(ctx, node, [ctx.get(v) for v in node.inputs])]


@lowers(ExtractDiag)
def lower_extract_diag(ctx: LoweringContext, node) -> list[Value]:
    """``ExtractDiag{offset, axis1, axis2}(x)`` = ``np.diagonal(x, offset,
    axis1, axis2)``: the other axes in order, then the diagonal. Any dtype
    and size (static or not): the two axes are moved to the front, one
    ``gather_nd`` at ``(k + max(0, -offset), k + max(0, offset))`` for ``k``
    in ``range(length)`` reads the diagonal (exact, a copy), and the diagonal
    axis is moved last.
    """
    op = node.op
    return [extract_diagonal(ctx, ctx.get(node.inputs[0]), op.offset, op.axis1, op.axis2)]


def extract_diagonal(ctx: LoweringContext, x: Value, offset: int, axis1: int, axis2: int) -> Value:
    """``np.diagonal(x, offset, axis1, axis2)`` (``lower_extract_diag``):
    the other axes of ``x`` in order, then the diagonal; only the diagonal's
    entries are read."""
    a1, a2 = axis1 % x.rank, axis2 % x.rank
    rest = [i for i in range(x.rank) if i not in (a1, a2)]
    if [a1, a2] + rest != list(range(x.rank)):
        x = ctx.add("transpose", [x], {"perm": [a1, a2] + rest})
    r0, c0 = max(0, -offset), max(0, offset)
    n, m = x.shape[0], x.shape[1]
    i64 = DType.INT64
    if isinstance(n, int) and isinstance(m, int):
        length = ctx.scalar(max(0, min(n - r0, m - c0)), i64)
    else:
        shape = shape_of(ctx, x)
        n, m = (ctx.add("gather", [shape, ctx.scalar(k, i64)], {"axis": 0}) for k in (0, 1))
        length = ctx.add("maximum", [ctx.scalar(0, i64), ctx.add("minimum", [
            ctx.add("sub", [n, ctx.scalar(r0, i64)]), ctx.add("sub", [m, ctx.scalar(c0, i64)])])])
    k = ctx.add("unsqueeze", [ctx.add("range", [ctx.scalar(0, i64), length, ctx.scalar(1, i64)])], {"axes": [1]})
    index = ctx.add("concat", [ctx.add("add", [k, ctx.scalar(r0, i64)]), ctx.add("add", [k, ctx.scalar(c0, i64)])],
                    {"axis": 1})  # (length, 2)
    diag = ctx.add("gather_nd", [x, index])  # (length, *rest)
    if diag.rank == 1:
        return diag
    return ctx.add("transpose", [diag], {"perm": list(range(1, diag.rank)) + [0]})
