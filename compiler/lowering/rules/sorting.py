"""Lowering of sorting and set ops: ``SortOp``, ``ArgSortOp``
(``pytensor.tensor.sort``) and ``Unique`` (``pytensor.tensor.extra_ops``).

All three rest on the IR ``sort`` op: NumPy's stable ascending sort (ties
in index order, NaN last) and its permutation, emitted as ONNX TopK. A
stable sort is one of the orders NumPy's default ``quicksort`` may give
(values are equal either way; ``argsort`` positions of tied elements may
differ from NumPy's unstable kinds, which promise no order) and exactly
the order of ``kind="stable"``/``"mergesort"``.

``Unique`` is built from the sort rather than ONNX Unique: onnxruntime's
Unique has kernels for four dtypes only and merges NaN with other values,
while ``np.unique`` (``equal_nan=True``) keeps one NaN, last.
"""

from __future__ import annotations

import numpy as np
from pytensor.tensor.extra_ops import Unique
from pytensor.tensor.sort import ArgSortOp, SortOp

from compiler.lowering.bodies import Body
from compiler.lowering.errors import Unsupported
from compiler.lowering.context import LoweringContext
from compiler.lowering.registry import lowers
from compiler.lowering.rules.matrix_loops import run_steps
from ir import DType, Value

I64 = DType.INT64
MAX_ROW_KEYS = 64  # Unique along an axis: one stable sort per element of a row, unrolled up to this many


def _axis(ctx: LoweringContext, node) -> int | None:
    """The constant sort axis of a ``SortOp``/``ArgSortOp`` node, normalized
    (None for a symbolic axis)."""
    value = ctx.constant_value(node.inputs[1])
    if value is None:
        return None
    rank = node.inputs[0].type.ndim
    axis = int(value)
    if not -rank <= axis < rank:
        raise Unsupported(f"{node.op}: axis {axis} out of range for rank {rank}")
    return axis % rank


@lowers(SortOp, ArgSortOp)
def lower_sort(ctx: LoweringContext, node) -> list[Value]:
    """``SortOp{kind}(x, axis)`` (``np.sort``) and ``ArgSortOp{kind}(x, axis)``
    (``np.argsort``, int64): the IR ``sort`` (stable, NaN last) along
    ``axis``. Every ``kind`` gets the stable order (see the module
    docstring).

    A symbolic ``axis`` (a 0-d int known at run time; the rank is static)
    becomes a chain of ``if`` nodes over the static-axis sorts
    (``_sort_along_runtime_axis``): a negative axis counts from the end as in
    NumPy; an axis outside ``[-rank, rank)``, where PyTensor (NumPy) raises
    ``AxisError``, sorts along the last axis (the model cannot raise).

    Raises:
        Unsupported: a constant axis out of range, or a 0-d input.
    """
    x = ctx.get(node.inputs[0])
    if x.rank == 0:
        raise Unsupported(f"{node.op} of a 0-d tensor")
    which = 1 if isinstance(node.op, ArgSortOp) else 0
    axis = _axis(ctx, node)
    if axis is None and x.rank > 1:
        return [_sort_along_runtime_axis(ctx, x, ctx.cast(ctx.get(node.inputs[1]), I64), which)]
    return [ctx.add_multi("sort", [x], {"axis": axis or 0})[which]]


def _sort_along_runtime_axis(ctx: LoweringContext, x: Value, axis: Value, which: int) -> Value:
    """Output ``which`` (0: values, 1: int64 permutation) of the IR ``sort``
    of ``x`` (rank >= 2) along the run-time ``axis`` (``i64[]``): ``axis +
    rank`` when negative, then ``if axis == 0: sort(x, 0) else if axis == 1:
    ... else sort(x, rank - 1)``, one ``if`` per candidate but the last, so
    only the selected sort runs. Out-of-range axes take the last branch."""
    rank = x.rank
    axis = ctx.add("where", [ctx.add("lt", [axis, ctx.scalar(0, I64)]),
                             ctx.add("add", [axis, ctx.scalar(rank, I64)]), axis])

    def chain(c: LoweringContext, inner: Value, inner_axis: Value, first: int) -> Value:
        if first == rank - 1:
            return c.add_multi("sort", [inner], {"axis": first})[which]
        subgraphs = {}
        for role in ("then", "else"):
            body = Body(c, f"sort_axis{first}_{role}")
            bx = body.input(inner.type, inner.name or "x")
            ba = body.input(inner_axis.type, "axis")
            out = (body.ctx.add_multi("sort", [bx], {"axis": first})[which] if role == "then"
                   else chain(body.ctx, bx, ba, first + 1))
            subgraphs[role] = body.finish([out])
        node = c.graph.create_node("if", [c.add("eq", [inner_axis, c.scalar(first, I64)]), inner, inner_axis],
                                   subgraphs=subgraphs)
        node.origins = c.origins
        c.graph.append(node)
        return node.outputs[0]

    return chain(ctx, x, axis, 0)


def _previous(ctx: LoweringContext, v: Value, positions: Value) -> Value:
    """``v[max(i - 1, 0)]`` along axis 0 for each ``i`` of ``positions``."""
    back = ctx.add("maximum", [ctx.add("sub", [positions, ctx.scalar(1, I64)]), ctx.scalar(0, I64)])
    return ctx.add("gather", [v, back], {"axis": 0})


def _differs(ctx: LoweringContext, a: Value, b: Value) -> Value:
    """``a != b`` elementwise with NaN equal to NaN (``np.unique``'s
    ``equal_nan=True``)."""
    ne = ctx.add("ne", [a, b])
    if not a.dtype.is_float:
        return ne
    both_nan = ctx.add("and", [ctx.add("isnan", [a]), ctx.add("isnan", [b])])
    return ctx.add("and", [ne, ctx.add("invert", [both_nan])])


def _sort_rows_by(ctx: LoweringContext, rows: Value, perm: Value, c: Value) -> Value:
    """``perm`` reordered by a stable sort of column ``c`` (an ``i64[]``) of ``rows[perm]``."""
    key = ctx.add("gather", [ctx.add("gather", [rows, c], {"axis": 1}), perm], {"axis": 0})
    _, p = ctx.add_multi("sort", [key], {"axis": 0})
    return ctx.add("gather", [perm, p], {"axis": 0})


@lowers(Unique)
def lower_unique(ctx: LoweringContext, node) -> list[Value]:
    """``Unique{return_index, return_inverse, return_counts, axis}``: PyTensor's
    ``old_np_unique`` (``np.unique`` with the inverse ravelled, as before
    NumPy 2.0). Outputs: the sorted unique values (or unique slices along
    ``axis``), then as asked the int64 index of each one's first occurrence,
    the int64 inverse (one entry per element, or per slice along ``axis``)
    and the int64 counts.

    Built on a stable sort: ``s, perm = sort(x)``; a position starts a group
    where ``s`` differs from its predecessor (NaN equal to NaN); values
    ``s[starts]``, first occurrences ``perm[starts]`` (stable), the inverse
    the running group number scattered back through ``perm``, the counts the
    gaps between starts. Along an axis, the slices are rows (the axis moved
    first, the rest flattened) sorted lexicographically by one stable sort
    per row element, least significant first, and a row starts a group
    where any element differs (there NumPy compares rows as records, so a
    row holding NaN equals no other row).

    Slices of a static size up to ``MAX_ROW_KEYS`` elements are sorted by
    that many unrolled sorts; others (a symbolic size, or more elements) by
    one ``loop`` step per element (``matrix_loops.run_steps``).
    """
    op = node.op
    x = ctx.get(node.inputs[0])
    if op.axis is None or x.rank <= 1:
        rows = ctx.add("reshape", [x, ctx.i64([-1])])
        s, perm = ctx.add_multi("sort", [rows], {"axis": 0})
        starts_mask = None
    else:
        axis = op.axis
        order = [axis] + [i for i in range(x.rank) if i != axis]
        moved = ctx.add("transpose", [x], {"perm": tuple(order)}) if axis else x
        dims = x.type.shape[:axis] + x.type.shape[axis + 1:]
        width = int(np.prod(dims)) if all(isinstance(d, int) for d in dims) else None
        moved_shape = ctx.add("shape", [moved])
        length = ctx.add("slice", [moved_shape, ctx.i64([0]), ctx.i64([1]), ctx.i64([1])], {"axes": (0,)})
        row_width = ctx.i64([width]) if width is not None else ctx.add(
            "reduce_prod", [ctx.add("slice", [moved_shape, ctx.i64([1]), ctx.i64([x.rank]), ctx.i64([1])],
                                    {"axes": (0,)})], {"axes": (0,), "keepdims": True})
        rows = ctx.add("reshape", [moved, ctx.add("concat", [length, row_width], {"axis": 0})])
        all_rows = ctx.add("range", [ctx.scalar(0, I64), ctx.add("reshape", [length, ctx.i64([])]),
                                     ctx.scalar(1, I64)])
        if width is not None and width <= MAX_ROW_KEYS:
            perm = all_rows
            for c in reversed(range(width)):  # least significant key first
                perm = _sort_rows_by(ctx, rows, perm, ctx.scalar(c, I64))
        else:  # one loop step per key, least significant first
            last = ctx.add("sub", [ctx.add("reshape", [row_width, ctx.i64([])]), ctx.scalar(1, I64)])
            (perm,) = run_steps(ctx, ctx.add("reshape", [row_width, ctx.i64([])]), [all_rows], [rows, last],
                                lambda c, j, carried, inv: [_sort_rows_by(c, inv[0], carried[0],
                                                                          c.add("sub", [inv[1], j]))])
        s = ctx.add("gather", [rows, perm], {"axis": 0})
        starts_mask = True
    n = ctx.add("reshape", [ctx.add("gather", [ctx.add("shape", [s]), ctx.i64([0])], {"axis": 0}),
                            ctx.i64([])])
    positions = ctx.add("range", [ctx.scalar(0, I64), n, ctx.scalar(1, I64)])
    if starts_mask is None:
        differs = _differs(ctx, s, _previous(ctx, s, positions))
    else:  # NumPy compares slices as records: a NaN never equals a NaN there
        differs = ctx.add("ne", [s, _previous(ctx, s, positions)])
        differs = ctx.add("reduce_any", [differs], {"axes": (1,), "keepdims": False})
    first = ctx.add("eq", [positions, ctx.scalar(0, I64)])
    new = ctx.add("or", [first, differs])
    starts = ctx.add("reshape", [ctx.add("nonzero", [new]), ctx.i64([-1])])
    values = ctx.add("gather", [s, starts], {"axis": 0})
    if starts_mask is not None:
        shape = [ctx.add("shape", [starts])] + [ctx.add("gather", [ctx.add("shape", [x]), ctx.i64([i])], {"axis": 0})
                                   for i in order[1:]]
        values = ctx.add("reshape", [values, ctx.add("concat", shape, {"axis": 0})])
        inverse_perm = [order.index(i) for i in range(x.rank)]
        if op.axis:
            values = ctx.add("transpose", [values], {"perm": tuple(inverse_perm)})
    outs = [values]
    if op.return_index:
        outs.append(ctx.add("gather", [perm, starts], {"axis": 0}))
    if op.return_inverse:
        group = ctx.add("sub", [ctx.add("cumsum", [ctx.cast(new, I64)], {"axis": 0}), ctx.scalar(1, I64)])
        zeros = ctx.add("expand", [ctx.scalar(0, I64), ctx.add("reshape", [n, ctx.i64([1])])])
        where = ctx.add("unsqueeze", [perm], {"axes": (1,)})
        outs.append(ctx.add("scatter_nd", [zeros, where, group]))
    if op.return_counts:
        ends = ctx.add("concat", [ctx.add("slice", [starts, ctx.i64([1]), ctx.i64([np.iinfo(np.int64).max]),
                                                    ctx.i64([1])], {"axes": (0,)}),
                                  ctx.add("reshape", [n, ctx.i64([1])])], {"axis": 0})
        outs.append(ctx.add("sub", [ends, starts]))
    return outs
