"""Matrix algorithms as a sequence of n whole-matrix steps, each step a
function of the step number ``j`` (an ``i64[]`` value), emitted as one IR
``loop`` over ``j`` (``run_steps``): the ONNX ``Loop`` form for dynamic or
large sizes. ``scan-unroll`` turns a loop of static trip count <= 64 into
straight-line copies, so small static sizes end up unrolled as well.

Every step works on the full ``(..., n, n)`` matrix with masks built from
``rows = range(n)`` compared with ``j`` (one shape in every iteration, as
ONNX Loop requires), so batch dims broadcast for free. Rows and columns are
selected with ``gather`` at ``j`` or, for a row index that differs per batch
element (a pivot), with ``where(onehot, x, -0.0)`` summed over the axis:
``x + (-0.0) == x`` for every x, so the selection is exact, except that
onnxruntime's ``ReduceSum`` starts from +0.0 and so returns a -0.0 entry
as +0.0 (the sign of a zero in a swapped row; NumPy's sum keeps it).
Products are only ever formed where a mask keeps them (``where`` after the
multiply), so an Inf outside the triangle an algorithm reads never turns
into a NaN inside it.

- ``cholesky_steps``: LAPACK ``potf2``'s column order (``v = A[:, j] -
  L @ L[j, :]``, ``L[j, j] = sqrt(v[j])``, ``L[j+1:, j] = v[j+1:] /
  L[j, j]``), reading the lower triangle only.
- ``triangular_steps``: forward or back substitution, one row per step,
  reading only the triangle (``trtrs``).
- ``lu_steps``: LU with partial pivoting in ``getf2``'s order (the first
  largest ``|a|`` of the column is the pivot, as ``idamax``; the rows are
  swapped, the column below the pivot multiplied by its reciprocal (divided
  when it is below the smallest normal number, kept when it is 0), then
  the rank-1 update of the trailing block, ``a - l * u``), carrying the
  permutation, the number of row swaps and optionally right-hand sides
  that get the same swaps and elimination (``getrs``'s forward
  substitution with the unit lower factor, in ``trsm``'s column order).

Rounding: these are LAPACK's unblocked algorithms; LAPACK's blocked and
recursive drivers (``getrf2``, ``potrf``) associate the same dot products
differently, so results differ from SciPy/NumPy by a few ulp times the
condition number (tests: 1e-12 relative on well-conditioned matrices).
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import numpy as np

from compiler.lowering.bodies import Body
from compiler.lowering.context import LoweringContext
from compiler.lowering.rules.indexing import dim_of, int64_value
from compiler.lowering.rules.scalar_ops import shape_of
from ir import DType, TensorType, Value

INT64 = DType.INT64
Step = Callable[[LoweringContext, Value, list, list], list]


def size_of(ctx: LoweringContext, a: Value) -> Value:
    """The matrix size ``a.shape[-1]`` as an ``i64[]`` (a constant when static)."""
    return int64_value(ctx, dim_of(ctx, a, -1))


def positions(ctx: LoweringContext, a: Value, axis: int = -1) -> Value:
    """``range(a.shape[axis])`` as ``i64[n]`` (by default the matrix size of ``a``)."""
    n = a.shape[axis]
    if isinstance(n, int):
        return ctx.i64(np.arange(n))
    return ctx.add("range", [ctx.scalar(0, INT64), int64_value(ctx, dim_of(ctx, a, axis)), ctx.scalar(1, INT64)])


def swap_entries(ctx: LoweringContext, order: Value, rows: Value, j: Value, q: Value) -> Value:
    """``order`` (``i64 (..., n)``) with its entries ``j`` (an ``i64[]``) and
    ``q`` (``(..., 1)``, one per batch element) exchanged; ``rows`` is
    ``range(n)``. Entry ``q`` is read as a sum with zeros elsewhere (exact
    for integers)."""
    last = order.rank - 1
    at_j, at_q = ctx.add("eq", [rows, j]), ctx.add("eq", [rows, q])
    order_j = ctx.add("gather", [order, unsq(ctx, j, 0)], {"axis": last})  # (..., 1)
    order_q = ctx.add("reduce_sum", [ctx.add("where", [at_q, order, ctx.scalar(0, INT64)])],
                      {"axes": [last], "keepdims": True})
    return ctx.add("where", [at_j, order_q, ctx.add("where", [at_q, order_j, order])])


def run_steps(ctx: LoweringContext, count: Value, carried: Sequence[Value], invariant: Sequence[Value],
              step: Step) -> list[Value]:
    """``for j in range(count): carried = step(body_ctx, j, carried, invariant)``
    as one ``loop`` node; returns the final carried values. ``step`` builds
    its nodes with the body's context and must return values of the
    carried values' types."""
    body = Body(ctx, "linalg")
    j = body.input(TensorType(INT64, ()), "j")
    inner_carried = [body.input(v.type, v.name or "state") for v in carried]
    inner_invariant = [body.input(v.type, v.name or "x") for v in invariant]
    nxt = step(body.ctx, j, inner_carried, inner_invariant)
    loop = ctx.graph.create_node("loop", [count, *carried, *invariant],
                                 {"num_carried": len(carried), "has_condition": False},
                                 subgraphs={"body": body.finish(nxt)})
    loop.origins = ctx.origins
    ctx.graph.append(loop)
    return list(loop.outputs)


# -- small helpers (all on the last two axes) ----------------------------------
def zeros_like(ctx: LoweringContext, x: Value) -> Value:
    """Zeros of ``x``'s shape and dtype (never ``x * 0``, which is NaN at Inf)."""
    return ctx.add("expand", [ctx.scalar(0, x.dtype), shape_of(ctx, x)])


def eye(ctx: LoweringContext, a: Value, axis: int = -1) -> Value:
    """The identity matrix ``(k, k)`` of ``a``'s dtype, ``k = a.shape[axis]``, without batch dims."""
    rows = positions(ctx, a, axis)
    return ctx.cast(ctx.add("eq", [unsq(ctx, rows, 1), rows]), a.dtype)


def identity_like(ctx: LoweringContext, a: Value) -> Value:
    """Identity matrices of ``a``'s shape (``(..., n, n)``) and dtype."""
    return ctx.add("expand", [eye(ctx, a), shape_of(ctx, a)])


def identity_of(ctx: LoweringContext, a: Value, axis: int) -> Value:
    """Identity matrices ``(..., k, k)`` of ``a``'s dtype and batch dims,
    ``k = a.shape[axis]`` (``axis`` one of ``a``'s last two)."""
    axis %= a.rank
    shape = shape_of(ctx, a)
    batch = ctx.add("slice", [shape, ctx.i64([0]), ctx.i64([a.rank - 2]), ctx.i64([1])], {"axes": [0]})
    k = ctx.add("slice", [shape, ctx.i64([axis]), ctx.i64([axis + 1]), ctx.i64([1])], {"axes": [0]})
    return ctx.add("expand", [eye(ctx, a, axis), ctx.add("concat", [batch, k, k], {"axis": 0})])


def symmetric_from_triangle(ctx: LoweringContext, a: Value, lower: bool) -> Value:
    """The symmetric matrix whose ``lower`` (or upper) triangle, diagonal included, is ``a``'s."""
    rows = positions(ctx, a)
    keep = ctx.add("ge" if lower else "le", [unsq(ctx, rows, 1), rows])
    return ctx.add("where", [keep, a, matrix_transpose(ctx, a)])


def matrix_transpose(ctx: LoweringContext, x: Value) -> Value:
    """Transpose of the last two axes."""
    perm = list(range(x.rank))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    return ctx.add("transpose", [x], {"perm": perm})


def column(ctx: LoweringContext, x: Value, j: Value) -> Value:
    """``x[..., :, j]`` (``(..., n)``)."""
    return ctx.add("gather", [x, j], {"axis": x.rank - 1})


def row(ctx: LoweringContext, x: Value, j: Value) -> Value:
    """``x[..., j, :]`` (``(..., m)``)."""
    return ctx.add("gather", [x, j], {"axis": x.rank - 2})


def select_row(ctx: LoweringContext, x: Value, onehot: Value) -> Value:
    """The row of ``x`` (``(..., n, m)``) where ``onehot`` (``(..., n, 1)``
    bool, one true per matrix) holds: a sum with -0.0 elsewhere, exact but
    for the sign of a zero entry in onnxruntime (module docstring)."""
    neg_zero = ctx.scalar(-0.0, x.dtype) if x.dtype.is_float else ctx.scalar(0, x.dtype)
    return ctx.add("reduce_sum", [ctx.add("where", [onehot, x, neg_zero])], {"axes": [x.rank - 2], "keepdims": False})


def diagonal(ctx: LoweringContext, a: Value, rows: Value) -> Value:
    """``a``'s diagonal (``(..., n)``) as ``select_row`` reads a row (other
    entries never reach it, not even a NaN)."""
    eye = ctx.add("eq", [ctx.add("unsqueeze", [rows], {"axes": [1]}), rows])
    neg_zero = ctx.scalar(-0.0, a.dtype)
    return ctx.add("reduce_sum", [ctx.add("where", [eye, a, neg_zero])], {"axes": [a.rank - 1], "keepdims": False})


def unsq(ctx: LoweringContext, x: Value, axis: int) -> Value:
    return ctx.add("unsqueeze", [x], {"axes": [axis]})


# -- Cholesky -----------------------------------------------------------------
def cholesky_loop(ctx: LoweringContext, a: Value) -> Value:
    """The lower Cholesky factor of ``a`` (``(..., n, n)``, any n) read from
    its lower triangle; all NaN per matrix unless every pivot is > 0
    (PyTensor's ``potrf`` failure), decided from the factor's diagonal
    (``sqrt(d) > 0`` exactly when ``d > 0``)."""
    rows = positions(ctx, a)

    def step(c: LoweringContext, j: Value, carried: list, invariant: list) -> list:
        (L,), (A, r) = carried, invariant
        v = c.add("sub", [column(c, A, j),
                          c.add("squeeze", [c.add("matmul", [L, unsq(c, row(c, L, j), L.rank - 1)])],
                                {"axes": [L.rank - 1]})])  # (..., n)
        d = c.add("gather", [v, unsq(c, j, 0)], {"axis": v.rank - 1})  # (..., 1)
        ljj = c.add("sqrt", [d])
        zero = c.scalar(0, A.dtype)
        col = c.add("where", [c.add("gt", [r, j]), c.add("div", [v, ljj]),
                              c.add("where", [c.add("eq", [r, j]), ljj, zero])])
        return [c.add("where", [c.add("eq", [r, j]), unsq(c, col, col.rank), L])]

    (L,) = run_steps(ctx, size_of(ctx, a), [zeros_like(ctx, a)], [a, rows], step)
    ok = ctx.add("reduce_all", [ctx.add("gt", [diagonal(ctx, L, rows), ctx.scalar(0, a.dtype)])],
                 {"axes": [L.rank - 2], "keepdims": True})
    return ctx.add("where", [unsq(ctx, ok, ok.rank), L, ctx.scalar(np.nan, a.dtype)])


# -- triangular solve -----------------------------------------------------------
def triangular_loop(ctx: LoweringContext, a: Value, b: Value, *, lower: bool, unit_diagonal: bool,
                    nan_if_singular: bool = True) -> Value:
    """``x`` with ``a @ x == b``, ``a`` (``(..., n, n)``) triangular (only
    that triangle read), ``b`` ``(..., n, k)``, batch dims broadcast; all
    NaN per system where a diagonal entry is 0 (``nan_if_singular``, as
    PyTensor does when ``trtrs`` reports it)."""
    rows = positions(ctx, a)
    a, b = broadcast_batch(ctx, a, b, 2)
    zeros = zeros_like(ctx, b)
    last = ctx.add("sub", [size_of(ctx, a), ctx.scalar(1, INT64)])

    def step(c: LoweringContext, t: Value, carried: list, invariant: list) -> list:
        (X,), (A, B, r, top) = carried, invariant
        i = t if lower else c.add("sub", [top, t])
        known = c.add("lt" if lower else "gt", [r, i])
        a_row = c.add("where", [known, row(c, A, i), c.scalar(0, A.dtype)])  # (..., n)
        bi = c.add("sub", [row(c, B, i), c.add("squeeze", [c.add("matmul", [unsq(c, a_row, a_row.rank - 1), X])],
                                                 {"axes": [X.rank - 2]})])  # (..., k)
        if not unit_diagonal:
            aii = c.add("gather", [row(c, A, i), unsq(c, i, 0)], {"axis": A.rank - 2})  # (..., 1)
            bi = c.add("div", [bi, aii])
        return [c.add("where", [unsq(c, c.add("eq", [r, i]), 1), unsq(c, bi, bi.rank - 1), X])]

    (x,) = run_steps(ctx, size_of(ctx, a), [zeros], [a, b, rows, last], step)
    if unit_diagonal or not nan_if_singular:
        return x
    ok = ctx.add("reduce_all", [ctx.add("ne", [diagonal(ctx, a, rows), ctx.scalar(0, a.dtype)])],
                 {"axes": [a.rank - 2], "keepdims": True})
    return ctx.add("where", [unsq(ctx, ok, ok.rank), x, ctx.scalar(np.nan, a.dtype)])


# -- LU with partial pivoting --------------------------------------------------------
class LUFactors(NamedTuple):
    """What ``lu_loop`` returns: the factors packed as LAPACK's ``getrf``
    stores them (unit lower factor below the diagonal, upper factor on and
    above it), the number of row exchanges (``i64``, ``(..., 1)``),
    ``L^-1 P rhs`` when a right-hand side was given, and, when asked for,
    the pivots (``getrf``'s ``ipiv``, 0-based, ``i64 (..., n)``) and the
    row order they make (``i64 (..., n)``: ``a[..., order, :] == L U``)."""
    lu: Value
    swaps: Value
    rhs: Value | None = None
    pivots: Value | None = None
    order: Value | None = None


def lu_loop(ctx: LoweringContext, a: Value, rhs: Value | None = None, pivots: bool = False) -> LUFactors:
    """LU with partial pivoting of ``a`` (``(..., n, n)``; module docstring);
    ``rhs`` (``(..., n, k)``, batch dims already broadcast with ``a``'s)
    gets the same row exchanges and elimination; ``pivots`` asks for the
    pivots and the row order too (``LUFactors``)."""
    rows = positions(ctx, a)
    swaps = ctx.add("expand", [ctx.scalar(0, INT64), ctx.add("concat", [
        ctx.add("slice", [shape_of(ctx, a), ctx.i64([0]), ctx.i64([a.rank - 2]), ctx.i64([1])], {"axes": [0]}),
        ctx.i64([1])], {"axis": 0})])
    carried = [a, swaps] + ([rhs] if rhs is not None else [])
    if pivots:
        first = ctx.add("expand", [rows, ctx.add("slice", [shape_of(ctx, a), ctx.i64([0]), ctx.i64([a.rank - 1]),
                                                          ctx.i64([1])], {"axes": [0]})])
        carried += [first, first]  # pivots (each step writes its own), row order

    def step(c: LoweringContext, j: Value, state: list, invariant: list) -> list:
        M, s, *rest = state
        if pivots:
            *rest, ipiv, order = rest
        (r,) = invariant
        col = column(c, M, j)  # (..., n)
        cand = c.add("where", [c.add("ge", [r, j]), c.add("abs", [col]), c.scalar(-1, M.dtype)])
        cand = c.add("where", [c.add("ne", [cand, cand]), c.scalar(-0.5, M.dtype), cand])  # NaN never wins
        p = c.add("argmax", [cand], {"axis": M.rank - 2, "keepdims": True})  # (..., 1)
        is_j, is_p = unsq(c, c.add("eq", [r, j]), 1), unsq(c, c.add("eq", [r, p]), p.rank)  # (n,1), (...,n,1)

        def swap(x: Value) -> tuple[Value, Value]:
            xj, xp = unsq(c, row(c, x, j), x.rank - 2), unsq(c, select_row(c, x, is_p), x.rank - 2)
            return c.add("where", [is_j, xp, c.add("where", [is_p, xj, x])]), xp

        M, urow = swap(M)  # urow: the pivot row (..., 1, n)
        piv = c.add("gather", [urow, unsq(c, j, 0)], {"axis": M.rank - 1})  # (..., 1, 1)
        below = unsq(c, c.add("gt", [r, j]), 1)  # (n, 1)
        col = unsq(c, column(c, M, j), M.rank - 1)  # (..., n, 1)
        # getf2: multiply by 1/pivot when |pivot| >= sfmin, divide when smaller, keep when 0
        tiny = c.scalar(np.finfo(M.dtype.numpy).tiny, M.dtype)
        divided = c.add("where", [c.add("ne", [piv, c.scalar(0, M.dtype)]), c.add("div", [col, piv]), col])
        scaled = c.add("where", [c.add("ge", [c.add("abs", [piv]), tiny]),
                                 c.add("mul", [col, c.add("reciprocal", [piv])]), divided])
        l = c.add("where", [below, scaled, c.scalar(0, M.dtype)])  # (..., n, 1)
        right = c.add("gt", [r, j])  # (n,) columns after j
        trailing = c.add("and", [below, right])
        M = c.add("where", [trailing, c.add("sub", [M, c.add("mul", [l, urow])]), M])
        M = c.add("where", [c.add("and", [below, c.add("eq", [r, j])]), l, M])
        s = c.add("add", [s, c.cast(c.add("ne", [p, j]), INT64)])
        out = [M, s]
        if rest:
            (B,) = rest
            B, brow = swap(B)
            B = c.add("where", [below, c.add("sub", [B, c.add("mul", [l, brow])]), B])
            out.append(B)
        if pivots:
            out += [c.add("where", [c.add("eq", [r, j]), p, ipiv]), swap_entries(c, order, r, j, p)]
        return out

    results = run_steps(ctx, size_of(ctx, a), carried, [rows], step)
    lu, swaps, *rest = results
    if pivots:
        *rest, ipiv, order = rest
        return LUFactors(lu, swaps, rest[0] if rest else None, ipiv, order)
    return LUFactors(lu, swaps, rest[0] if rest else None)


def broadcast_batch(ctx: LoweringContext, a: Value, b: Value, core_b: int) -> tuple[Value, Value]:
    """``a`` (``(..., n, n)``) and ``b`` (``core_b`` core dims) with their
    batch dims broadcast against each other (ONNX Expand is bidirectional)."""
    def batch_then_ones(x: Value, core: int, ones: int) -> Value:
        s = ctx.add("slice", [shape_of(ctx, x), ctx.i64([0]), ctx.i64([x.rank - core]), ctx.i64([1])], {"axes": [0]})
        return ctx.add("concat", [s, ctx.i64([1] * ones)], {"axis": 0}) if ones else s

    if not _same_batch(a.shape[:-2], b.shape[:b.rank - core_b]):
        a, b = (ctx.add("expand", [a, batch_then_ones(b, core_b, 2)]),
                ctx.add("expand", [b, batch_then_ones(a, 2, core_b)]))
    return a, b


def _same_batch(x: tuple, y: tuple) -> bool:
    return len(x) == len(y) and all(isinstance(d, int) and d == e for d, e in zip(x, y))
