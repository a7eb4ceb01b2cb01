"""Lowering of the matrix decompositions and triangular solves PyMC models
use: ``Cholesky``, ``SolveTriangular``, ``ExtractDiag``, and their
``Blockwise`` batched forms (``pytensor.tensor.slinalg`` / ``basic``).

ONNX has none of them, so each is an exact algorithm built from IR ops,
unrolled over the matrix size (which must be static, at most
``UNROLL_LIMIT``): every step works on whole columns or rows with
``slice``/``matmul``/``concat``, so batch dims broadcast for free and the
node count grows with n (not n^3).

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

from compiler.errors import Unsupported
from compiler.lowering.compat import Cholesky, SolveTriangular
from compiler.lowering.context import LoweringContext, ir_dtype
from compiler.lowering.registry import lowers
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from ir import DType, Value

UNROLL_LIMIT = 32  # largest static matrix size unrolled (the ONNX Loop form is not written yet)


def _size(x: Value, what: str) -> int:
    n = x.shape[-1]
    if not isinstance(n, int) or n > UNROLL_LIMIT or n < 1:
        raise Unsupported(f"{what} of a matrix of size {n}: only static sizes 1..{UNROLL_LIMIT} are "
                          "lowered (unrolled); the ONNX Loop form is not done yet")
    return n


def _slice(ctx: LoweringContext, x: Value, axis: int, start: int, stop: int) -> Value:
    """``x[..., start:stop, ...]`` on ``axis`` (non-negative)."""
    return ctx.add("slice", [x, ctx.i64([start]), ctx.i64([stop]), ctx.i64([1])], {"axes": [axis]})


def _mT(ctx: LoweringContext, x: Value) -> Value:
    """Transpose of the last two axes."""
    perm = list(range(x.rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return ctx.add("transpose", [x], {"perm": perm})


def _concat(ctx: LoweringContext, parts: list[Value], axis: int) -> Value:
    return parts[0] if len(parts) == 1 else ctx.add("concat", parts, {"axis": axis})


def _all(ctx: LoweringContext, conds: list[Value]) -> Value:
    out = conds[0]
    for c in conds[1:]:
        out = ctx.add("and", [out, c])
    return out


def cholesky(ctx: LoweringContext, a: Value, lower: bool) -> Value:
    """The Cholesky factor of ``a`` (float, ``(..., n, n)``, n static),
    lower or upper, all NaN per matrix where it is not positive definite."""
    n = _size(a, "Cholesky")
    if not lower:
        a = _mT(ctx, a)  # potrf(upper) reads the upper triangle: U = chol_lower(A.T).T
    r = a.rank
    rows = np.arange(n)[:, None]
    zero, nan = ctx.scalar(0, a.dtype), ctx.scalar(np.nan, a.dtype)
    cols, pivots_ok = [], []
    for j in range(n):
        v = _slice(ctx, a, r - 1, j, j + 1)  # (..., n, 1)
        if j:
            done = _concat(ctx, cols, r - 1)  # (..., n, j)
            v = ctx.add("sub", [v, ctx.add("matmul", [done, _mT(ctx, _slice(ctx, done, r - 2, j, j + 1))])])
        d = _slice(ctx, v, r - 2, j, j + 1)  # (..., 1, 1)
        ljj = ctx.add("sqrt", [d])
        pivots_ok.append(ctx.add("gt", [d, zero]))
        below = ctx.add("where", [ctx.const(rows > j), ctx.add("div", [v, ljj]), zero])
        cols.append(ctx.add("where", [ctx.const(rows == j), ljj, below]))
    factor = ctx.add("where", [_all(ctx, pivots_ok), _concat(ctx, cols, r - 1), nan])
    return factor if lower else _mT(ctx, factor)


def solve_triangular(ctx: LoweringContext, a: Value, b: Value, *, lower: bool, unit_diagonal: bool,
                     b_ndim: int) -> Value:
    """``x`` with ``a @ x == b`` for triangular ``a`` (``(..., n, n)``, n
    static) and ``b`` (``(..., n)`` when ``b_ndim`` is 1, else ``(..., n, k)``),
    batch dims broadcast; all NaN per system where a diagonal entry is 0."""
    n = _size(a, "SolveTriangular")
    if b_ndim == 1:
        b = ctx.add("unsqueeze", [b], {"axes": [b.rank]})
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
            diag_ok.append(ctx.add("ne", [aii, ctx.scalar(0, a.dtype)]))
            bi = ctx.add("div", [bi, aii])
        rows[i] = bi
    x = _concat(ctx, [rows[i] for i in range(n)], rb - 2)
    if diag_ok:
        x = ctx.add("where", [_all(ctx, diag_ok), x, ctx.scalar(np.nan, a.dtype)])
    if b_ndim == 1:
        x = ctx.add("squeeze", [x], {"axes": [x.rank - 1]})
    return x


def _float_args(ctx: LoweringContext, node, args: list[Value]) -> list[Value]:
    dtype = ir_dtype(node.outputs[0])
    if not dtype.is_float:
        raise Unsupported(f"{node.op} with a {dtype} result")
    return [ctx.cast(x, dtype) for x in args]


def _cholesky_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    (a,) = _float_args(ctx, node, args)
    op = getattr(node.op, "core_op", node.op)
    return cholesky(ctx, a, op.lower)


def _solve_triangular_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    a, b = _float_args(ctx, node, args)
    op = getattr(node.op, "core_op", node.op)
    return solve_triangular(ctx, a, b, lower=op.lower, unit_diagonal=op.unit_diagonal, b_ndim=op.b_ndim)


BLOCKWISE_RULES[Cholesky] = _cholesky_rule
BLOCKWISE_RULES[SolveTriangular] = _solve_triangular_rule


@lowers(Cholesky)
def lower_cholesky(ctx: LoweringContext, node) -> list[Value]:
    """``Cholesky{lower}(A)`` (``pytensor.tensor.slinalg``; LAPACK ``potrf``):
    a float ``(n, n)`` matrix with static n <= ``UNROLL_LIMIT``; returns the
    triangular factor, all NaN when A is not positive definite.

    Raises:
        Unsupported: a dynamic or larger n.
    """
    return [_cholesky_rule(ctx, node, [ctx.get(node.inputs[0])])]


@lowers(SolveTriangular)
def lower_solve_triangular(ctx: LoweringContext, node) -> list[Value]:
    """``SolveTriangular{lower, unit_diagonal, b_ndim}(A, b)``
    (``pytensor.tensor.slinalg``; LAPACK ``trtrs``): substitution through
    A's triangle; all NaN when A has a zero diagonal entry.

    Raises:
        Unsupported: a dynamic or larger n.
    """
    return [_solve_triangular_rule(ctx, node, [ctx.get(v) for v in node.inputs])]


@lowers(ExtractDiag)
def lower_extract_diag(ctx: LoweringContext, node) -> list[Value]:
    """``ExtractDiag{offset, axis1, axis2}(x)`` = ``np.diagonal(x, offset,
    axis1, axis2)``: the other axes in order, then the diagonal; one slice per
    diagonal element.

    Sizes that are not static (or a diagonal that is empty or longer than
    ``UNROLL_LIMIT``): one ``gather`` of the flattened last two axes at the
    positions ``r0 * m + c0 + k * (m + 1)`` for ``k < max(0, min(n - r0, m - c0))``
    (``r0, c0`` the offset's first row and column, ``n, m`` the sizes).
    """
    op = node.op
    x = ctx.get(node.inputs[0])
    a1, a2 = op.axis1 % x.rank, op.axis2 % x.rank
    rest = [i for i in range(x.rank) if i not in (a1, a2)]
    if rest + [a1, a2] != list(range(x.rank)):
        x = ctx.add("transpose", [x], {"perm": rest + [a1, a2]})
    n, m = x.shape[-2], x.shape[-1]
    r0, c0 = max(0, -op.offset), max(0, op.offset)
    static = isinstance(n, int) and isinstance(m, int)
    if not static or not 1 <= max(0, min(n - r0, m - c0)) <= UNROLL_LIMIT:
        return [_gathered_diagonal(ctx, x, r0, c0)]
    length = min(n - r0, m - c0)
    r = x.rank
    parts = [ctx.add("squeeze", [_slice(ctx, _slice(ctx, x, r - 2, r0 + k, r0 + k + 1), r - 1, c0 + k, c0 + k + 1)],
                     {"axes": [r - 2]}) for k in range(length)]
    return [_concat(ctx, parts, r - 2)]


def _gathered_diagonal(ctx: LoweringContext, x: Value, r0: int, c0: int) -> Value:
    """``x[..., r0 + k, c0 + k]`` for every ``k`` that fits, as the last axis:
    a ``gather`` of the flattened last two axes (see ``lower_extract_diag``)."""
    i64 = DType.INT64
    shape = ctx.add("shape", [x])
    n, m = (ctx.add("gather", [shape, ctx.scalar(a, i64)], {"axis": 0}) for a in (x.rank - 2, x.rank - 1))
    length = ctx.add("minimum", [ctx.add("sub", [n, ctx.scalar(r0, i64)]), ctx.add("sub", [m, ctx.scalar(c0, i64)])])
    length = ctx.add("maximum", [length, ctx.scalar(0, i64)])
    step = ctx.add("add", [m, ctx.scalar(1, i64)])
    start = ctx.add("add", [ctx.add("mul", [ctx.scalar(r0, i64), m]), ctx.scalar(c0, i64)])
    k = ctx.add("range", [ctx.scalar(0, i64), length, ctx.scalar(1, i64)])
    positions = ctx.add("add", [ctx.add("mul", [k, step]), start])
    batch = ctx.add("slice", [shape, ctx.i64([0]), ctx.i64([x.rank - 2]), ctx.i64([1])], {"axes": [0]})
    flat_shape = ctx.add("concat", [batch, ctx.add("reshape", [ctx.add("mul", [n, m]), ctx.i64([1])])], {"axis": 0})
    flat = ctx.add("reshape", [x, flat_shape])
    return ctx.add("gather", [flat, positions], {"axis": x.rank - 2})
