"""Matrix constructors: ``BlockDiagonal`` (``pt.linalg.block_diag``), and
``FillDiagonal``/``FillDiagonalOffset`` (``pt.fill_diagonal``,
``pt.fill_diagonal_offset``), exact for static and symbolic sizes.

``BlockDiagonal`` is a ``Blockwise`` core op: with no batch dims its
``Blockwise`` lowers through the rule here; with batch dims through
``blockwise_loop.py``'s ``Loop``.
"""

from __future__ import annotations

from pytensor.tensor.extra_ops import FillDiagonal, FillDiagonalOffset

from compiler.lowering.compat import BlockDiagonal
from compiler.lowering.context import ir_dtype
from compiler.lowering.registry import lowers
from compiler.lowering.rules.indexing import INT64, dim_of, int64_scalar, int64_value, int64_vector
from ir import Value


def _total(ctx, sizes: list) -> int | Value:
    """The sum of ``sizes`` (ints and 0-d int64 values): an int when all are."""
    static = sum(s for s in sizes if isinstance(s, int))
    dynamic = [s for s in sizes if not isinstance(s, int)]
    if not dynamic:
        return static
    out = dynamic[0]
    for s in dynamic[1:]:
        out = ctx.add("add", [out, s])
    return ctx.add("add", [out, ctx.scalar(static, INT64)]) if static else out


@lowers(BlockDiagonal)
def lower_block_diagonal(ctx, node):
    """``BlockDiagonal(*matrices)``: ``scipy.linalg.block_diag`` in the output
    dtype (PyTensor's upcast). Each matrix becomes a row strip, zeros of its
    height left and right of it up to the total width, and the strips are
    concatenated along the rows."""
    dtype = ir_dtype(node.outputs[0])
    mats = [ctx.cast(ctx.get(v), dtype) for v in node.inputs]
    widths = [dim_of(ctx, m, 1) for m in mats]
    zero = ctx.scalar(0, dtype)
    strips = []
    for i, m in enumerate(mats):
        pieces = []
        for cols in (widths[:i], widths[i + 1:]):
            if not cols:
                continue
            shape = int64_vector(ctx, [dim_of(ctx, m, 0), _total(ctx, cols)])
            pieces.append(ctx.add("expand", [zero, shape]))
        left = 1 if i else 0
        pieces.insert(left, m)
        strips.append(pieces[0] if len(pieces) == 1 else ctx.add("concat", pieces, {"axis": 1}))
    return [strips[0] if len(strips) == 1 else ctx.add("concat", strips, {"axis": 0})]


@lowers(FillDiagonal)
def lower_fill_diagonal(ctx, node):
    """``FillDiagonal(a, val)``: ``a`` with ``a[i, i, ..., i] = val``.

    A matrix of any shape gets ``val`` at ``(i, i)`` for i < min(rows, cols)
    (``FillDiagonal.perform``, which never wraps around a tall matrix); a
    tensor of rank > 2 (``np.fill_diagonal``) where all its indices are
    equal. NumPy raises for a rank > 2 tensor whose dims differ; the model
    then fills the positions whose indices are equal."""
    a, val = ctx.get(node.inputs[0]), ctx.get(node.inputs[1])
    zero, one = ctx.scalar(0, INT64), ctx.scalar(1, INT64)
    ranges = []
    for axis in range(a.rank):
        r = ctx.add("range", [zero, int64_value(ctx, dim_of(ctx, a, axis)), one])
        ranges.append(ctx.add("unsqueeze", [r], {"axes": [i for i in range(a.rank) if i != axis]}))
    mask = ctx.add("eq", [ranges[0], ranges[1]])
    for r in ranges[2:]:
        mask = ctx.add("and", [mask, ctx.add("eq", [ranges[0], r])])
    return [ctx.add("where", [mask, ctx.cast(val, a.dtype), a])]


@lowers(FillDiagonalOffset)
def lower_fill_diagonal_offset(ctx, node):
    """``FillDiagonalOffset(a, val, offset)``: ``FillDiagonalOffset.perform``'s
    strided write ``a.flat[start:end:w + 1] = val``, with ``start = offset``
    and ``end = start + (w + 1) * min(h, w, w - offset)`` for offset >= 0,
    ``start = -offset * w`` and ``min(h, w, h + offset)`` steps otherwise,
    and Python's slice rules for a negative ``end`` (so an offset beyond the
    width writes where ``perform`` does: ``offset = 7`` on a 4x4 matrix
    writes ``(1, 3)``). Inside the matrix this is ``(i, i + offset)``."""
    a, val = ctx.get(node.inputs[0]), ctx.get(node.inputs[1])
    h, w = (int64_value(ctx, dim_of(ctx, a, axis)) for axis in (0, 1))
    offset = int64_value(ctx, int64_scalar(ctx, node.inputs[2]))

    def op(name, *args):
        return ctx.add(name, list(args))

    zero, one = ctx.scalar(0, INT64), ctx.scalar(1, INT64)
    nonneg = op("ge", offset, zero)
    start = op("where", nonneg, offset, op("mul", op("neg", offset), w))
    square = op("minimum", w, h)
    steps = op("where", nonneg, op("minimum", square, op("sub", w, offset)),
               op("minimum", square, op("add", h, offset)))
    step = op("add", w, one)
    size = op("mul", h, w)
    end = op("add", start, op("mul", step, steps))
    end = op("where", op("lt", end, zero), op("add", end, size), end)
    end = op("minimum", op("maximum", end, zero), size)
    rows = ctx.add("unsqueeze", [op("range", zero, h, one)], {"axes": [1]})
    cols = ctx.add("unsqueeze", [op("range", zero, w, one)], {"axes": [0]})
    flat = op("add", op("mul", rows, w), cols)
    mask = op("and", op("and", op("ge", flat, start), op("lt", flat, end)),
              op("eq", op("mod", op("sub", flat, start), step), zero))
    return [ctx.add("where", [mask, ctx.cast(val, a.dtype), a])]
