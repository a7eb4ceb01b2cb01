"""Lowering of the LU decompositions (``pt.linalg.lu``, ``lu_factor``,
``pivot_to_permutation``; ``scipy.linalg`` in PyTensor's ``perform``) and
their ``Blockwise`` batched forms, on ``matrix_loops.lu_loop`` (LU with
partial pivoting in ``getf2``'s order, so the same pivots as LAPACK's
``getrf`` but for exact ties of ``|a|`` after rounding differently):

- ``LU``: ``scipy.linalg.lu``: ``A = P L U`` with ``P`` a permutation
  matrix (``P[order[i], i] = 1``, ``order`` the row order of the
  elimination: ``A[order] = L U``), ``L`` unit lower and ``U`` upper
  triangular; ``p_indices=True`` returns ``p = argsort(order)`` (int32:
  ``A = L[p] @ U``) instead of ``P``, ``permute_l=True`` returns
  ``(P L, U)``. A singular matrix is factored as ``getrf`` does (a zero
  pivot column is left unscaled), never NaN.
- ``LUFactor``: ``getrf``'s packed factors and 0-based pivots (int32:
  row ``i`` was exchanged with row ``piv[i]``); where a diagonal entry of
  ``U`` is exactly 0 (``info > 0``) the factors are all NaN, as PyTensor's
  ``perform`` sets them.
- ``PivotToPermutations``: the row order the pivots make (the swaps
  applied in turn to ``arange(n)``; ``inverse=False``: its argsort), one
  swap per step of a ``run_steps`` loop.

Gradients are PyTensor's own (its ``L_op``/``pullback``s build triangular
solves and ``pivot_to_permutation``). Bound: as ``solvers.py``'s (LAPACK's
blocked ``getrf`` associates the updates differently: a few ulp times the
growth of the factors; pivots and permutations exact).
"""

from __future__ import annotations

import numpy as np

from compiler.lowering.compat import LU, LUFactor, PivotToPermutations
from compiler.lowering.context import LoweringContext, ir_dtype
from compiler.lowering.errors import Unsupported
from compiler.lowering.registry import lowers
from compiler.lowering.rules.decompositions import float_args
from compiler.lowering.rules.indexing import dim_of, int64_value
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from compiler.lowering.rules.matrix_loops import diagonal, lu_loop, positions, run_steps, swap_entries, unsq
from ir import DType, Value

INT32, INT64 = DType.INT32, DType.INT64


def _triangles(ctx: LoweringContext, lu: Value) -> tuple[Value, Value]:
    """``(L, U)`` of packed factors: unit lower and upper triangles."""
    rows = positions(ctx, lu)
    r, c = unsq(ctx, rows, 1), rows
    zero, one = ctx.scalar(0, lu.dtype), ctx.scalar(1, lu.dtype)
    lower = ctx.add("where", [ctx.add("gt", [r, c]), lu, ctx.add("where", [ctx.add("eq", [r, c]), one, zero])])
    return lower, ctx.add("where", [ctx.add("le", [r, c]), lu, zero])


def _permutation_matrix(ctx: LoweringContext, order: Value, dtype: DType) -> Value:
    """``P`` with ``P[..., order[k], k] = 1`` (``(..., n, n)``)."""
    rows = unsq(ctx, positions(ctx, order), 1)  # (n, 1)
    return ctx.cast(ctx.add("eq", [rows, unsq(ctx, order, order.rank - 1)]), dtype)


def _inverse_order(ctx: LoweringContext, order: Value) -> Value:
    """``argsort(order)`` of a permutation: where ``order[k] == i``, ``k``."""
    rows = unsq(ctx, positions(ctx, order), 1)  # (n, 1)
    hits = ctx.cast(ctx.add("eq", [rows, unsq(ctx, order, order.rank - 1)]), INT64)  # (..., n, n)
    return ctx.add("argmax", [hits], {"axis": hits.rank - 1, "keepdims": False})


def _lu_rule(ctx: LoweringContext, node, args: list[Value]) -> tuple[Value, ...]:
    op = getattr(node.op, "core_op", node.op)
    dtype = ir_dtype(node.outputs[-1])  # U's; the first output may be int32 pivots
    if not dtype.is_float:
        raise Unsupported(f"{node.op} with a {dtype} result")
    a = ctx.cast(args[0], dtype)
    factors = lu_loop(ctx, a, pivots=True)
    lower, upper = _triangles(ctx, factors.lu)
    if op.permute_l:
        return ctx.add("matmul", [_permutation_matrix(ctx, factors.order, a.dtype), lower]), upper
    if op.p_indices:
        return ctx.cast(_inverse_order(ctx, factors.order), ir_dtype(node.outputs[0])), lower, upper
    return _permutation_matrix(ctx, factors.order, ir_dtype(node.outputs[0])), lower, upper


def _lu_factor_rule(ctx: LoweringContext, node, args: list[Value]) -> tuple[Value, Value]:
    (a,) = float_args(ctx, node, args)
    factors = lu_loop(ctx, a, pivots=True)
    u_diag = diagonal(ctx, factors.lu, positions(ctx, a))  # (..., n)
    ok = ctx.add("reduce_all", [ctx.add("ne", [u_diag, ctx.scalar(0, a.dtype)])],
                 {"axes": [u_diag.rank - 1], "keepdims": True})
    lu = ctx.add("where", [unsq(ctx, ok, ok.rank), factors.lu, ctx.scalar(np.nan, a.dtype)])
    return lu, ctx.cast(factors.pivots, ir_dtype(node.outputs[1]))


def _pivot_to_permutation_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    op = getattr(node.op, "core_op", node.op)
    pivots = ctx.cast(args[0], INT64)
    rows = positions(ctx, pivots)
    start = ctx.add("expand", [rows, ctx.add("shape", [pivots])])

    def step(c: LoweringContext, j: Value, carried: list, invariant: list) -> list:
        (order,), (piv, r) = carried, invariant
        q = c.add("gather", [piv, unsq(c, j, 0)], {"axis": piv.rank - 1})  # (..., 1)
        return [swap_entries(c, order, r, j, q)]

    (order,) = run_steps(ctx, int64_value(ctx, dim_of(ctx, pivots, -1)), [start], [pivots, rows], step)
    out = order if op.inverse else _inverse_order(ctx, order)
    return ctx.cast(out, ir_dtype(node.outputs[0]))


BLOCKWISE_RULES[LU] = _lu_rule
BLOCKWISE_RULES[LUFactor] = _lu_factor_rule
BLOCKWISE_RULES[PivotToPermutations] = _pivot_to_permutation_rule


@lowers(LU, LUFactor, PivotToPermutations)
def lower_lu(ctx: LoweringContext, node) -> list[Value]:
    """``LU``, ``LUFactor`` or ``PivotToPermutations`` of one matrix or
    pivot vector (module docstring).

    Raises:
        Unsupported: ``LU``/``LUFactor`` with an integer result dtype.
    """
    rule = BLOCKWISE_RULES[type(node.op)]
    out = rule(ctx, node, [ctx.get(v) for v in node.inputs])
    return list(out) if isinstance(out, tuple) else [out]
