"""Rules for data movement and index ops: reshape, transpose, squeeze,
unsqueeze, expand, concat, split, slice, gather, gather_nd, scatter_nd,
shape, range, nonzero, trilu. Semantics: ``ir/ops/shape.py`` (NumPy); ONNX
operator spec, opset 18 (axes and sizes are int64 inputs).
"""

from __future__ import annotations

import numpy as np

from backends.onnx.rules.common import B, F16, F32, F64, I16, I64, I8, in_f32, where, zero
from backends.onnx.rules.elementwise import f64_to_f16
from backends.onnx.registry import emits


def _int64s(ctx, values):
    return ctx.const(np.array(values, dtype=np.int64).reshape(-1), I64)


def _index(ctx, node, i, idx):
    """Index input ``i`` as int64 (ONNX Gather/GatherND/ScatterND take int32/int64)."""
    return idx if node.inputs[i].dtype == I64 else ctx.cast(idx, I64)


@emits("reshape")
def reshape(ctx, node, x, shape):
    """``np.reshape``: Reshape with ``allowzero=1`` (a 0 in the shape is a
    zero-size dim, not ONNX's copy-the-input-dim)."""
    return ctx.op("Reshape", x, shape, allowzero=1)


@emits("transpose")
def transpose(ctx, node, x):
    """``np.transpose(x, perm)``: Transpose."""
    return ctx.op("Transpose", x, perm=list(node.attrs["perm"]))


@emits("squeeze", "unsqueeze")
def squeeze(ctx, node, x):
    """``np.squeeze``/``np.expand_dims``: Squeeze/Unsqueeze with an int64 axes input."""
    return ctx.op("Squeeze" if node.op == "squeeze" else "Unsqueeze", x, _int64s(ctx, node.attrs["axes"]))


@emits("expand")
def expand(ctx, node, x, shape):
    """Bidirectional broadcast of x against shape: Expand.

    When the result has a dim of static size 0, onnxruntime's
    ``ExpandElimination`` graph optimizer (on in every default session)
    deletes an Expand that broadcasts a length-1 dim to 0 and keeps the
    length-1 input, so later nodes see the wrong shape. The model then holds
    ``Where(Expand(true, shape), x, x)`` instead, the same broadcast in a
    form the optimizer leaves alone; the result has no elements, so it is
    computed in float32 (Where has no kernel for every dtype) and cast back.
    """
    if 0 in node.outputs[0].type.shape:
        mask = ctx.op("Expand", ctx.const(np.array(True), B), shape)
        xf = ctx.cast(x, F32)
        return ctx.cast(ctx.op("Where", mask, xf, xf), node.outputs[0].type.dtype)
    return ctx.op("Expand", x, shape)


@emits("concat")
def concat(ctx, node, *xs):
    """``np.concatenate(xs, axis)``: Concat."""
    return ctx.op("Concat", *xs, axis=node.attrs["axis"])


@emits("split")
def split(ctx, node, x, sizes):
    """Split along axis into pieces of ``sizes``: Split with its split input."""
    n = node.attrs["num_outputs"]
    out = ctx.op("Split", x, sizes, axis=node.attrs["axis"], num_outputs=n)
    return out if n > 1 else (out,)


@emits("slice")
def slice_(ctx, node, x, starts, ends, steps):
    """Python slicing per axis; the IR uses ONNX Slice semantics (INT64_MIN/MAX
    sentinels, clamping), so this is Slice with an axes input.

    One difference is bridged: with a negative step, a start below ``-dim``
    is "before the first element" in Python (an empty result) but clamps to
    0 in ONNX; there the end becomes 0, which makes ONNX's result empty too.
    """
    axes = _int64s(ctx, node.attrs["axes"])
    if _start_may_undershoot(node):
        dims = ctx.op("Gather", ctx.op("Shape", x), axes)
        under = ctx.op("And", ctx.op("Less", steps, ctx.const(0, I64)),
                       ctx.op("Less", starts, ctx.op("Neg", dims)))
        ends = ctx.op("Where", under, ctx.const(0, I64), ends)
    return ctx.op("Slice", x, starts, ends, axes, steps)


def _start_may_undershoot(node) -> bool:
    """Whether some axis may have a negative step and a start below ``-dim``."""
    x, starts, _, steps = node.inputs
    if steps.const is not None and (steps.const > 0).all():
        return False
    if starts.const is None:
        return True
    dims = [x.shape[a] for a in node.attrs["axes"]]
    return any(s < 0 and not (isinstance(d, int) and s >= -d) for s, d in zip(starts.const.tolist(), dims))


@emits("gather")
def gather(ctx, node, x, idx):
    """``np.take(x, idx, axis)``: Gather (negative indices count from the end).
    A 1-D table read with a 1-D index (``a[county]`` in a hierarchical model)
    is GatherElements, the same copy, which onnxruntime runs about 7x faster
    (its Gather pays a per-element memcpy: 80 us against 12 for 10,000
    float64 elements)."""
    index = _index(ctx, node, 1, idx)
    if node.inputs[0].rank == 1 and node.inputs[1].rank == 1:
        return ctx.op("GatherElements", x, index, axis=0)
    return ctx.op("Gather", x, index, axis=node.attrs["axis"])


@emits("gather_nd")
def gather_nd(ctx, node, x, idx):
    """``x[idx[..., 0], ..., idx[..., k-1]]``: GatherND (batch_dims=0)."""
    return ctx.op("GatherND", x, _index(ctx, node, 1, idx))


@emits("scatter_nd")
def scatter_nd(ctx, node, data, idx, updates):
    """ONNX ScatterND (``reduction`` none or add; repeated indices accumulate
    in index order, as ``np.add.at``).

    Raises:
        EmitError: float16 with ``reduction="add"``: onnxruntime has no
            kernel, and accumulating in float32 would round once instead of
            after every add as NumPy does.
    """
    reduction = node.attrs["reduction"]
    if reduction == "add" and node.inputs[0].dtype == F16:
        raise ctx.error("onnxruntime has no float16 ScatterND(add) and float32 accumulation is not exact")
    index = _index(ctx, node, 1, idx)
    if node.inputs[0].rank == 1 and node.inputs[2].rank == 1 and node.inputs[1].shape == (node.inputs[2].shape[0], 1):
        # 1-D data, one index per update: ScatterElements, the same updates in
        # the same order (np.add.at's), about 1.3x faster in onnxruntime
        flat = ctx.op("Squeeze", index, ctx.const([1], I64))
        return ctx.op("ScatterElements", data, flat, updates, axis=0, reduction=reduction)
    return ctx.op("ScatterND", data, index, updates, reduction=reduction)


@emits("shape")
def shape(ctx, node, x):
    """``x.shape`` as int64[rank]: Shape."""
    return ctx.op("Shape", x)


@emits("nonzero")
def nonzero(ctx, node, x):
    """``np.nonzero`` stacked as int64[rank, count]: NonZero of ``x != 0``
    (NaN counts as nonzero, -0.0 as zero, as in NumPy)."""
    dtype = node.inputs[0].dtype
    mask = x if dtype == B else ctx.op("Not", ctx.op("Equal", x, zero(ctx, dtype)))
    return ctx.op("NonZero", mask)


@emits("range")
def range_(ctx, node, start, limit, delta):
    """``np.arange(start, limit, delta)`` in the inputs' dtype, as the IR
    defines it (NumPy's ``PyArray_ArangeObj`` on 0-d arrays, then a cast).

    Ints: Range (int8 through int16; exact). Floats: NumPy's own algorithm
    rather than Range, which accumulates ``start += delta``. NumPy makes a
    float64 array: the length and the second element come from scalar
    arithmetic in the inputs' dtype, the rest from float64 ``fill``::

        n = max(ceil((limit - start) / delta), 0)      (dtype ops)
        second = start + delta                          (dtype op)
        step = second - start; out[i] = start + i * step  (float64)
        out[0] = start; out[1] = second

    then an exact float64 -> dtype cast (``f64_to_f16`` for float16).
    float16 scalar ops compute in float32 and round, as NumPy's do.
    """
    dtype = node.inputs[0].dtype
    if dtype == I8:
        args = [ctx.cast(v, I16) for v in (start, limit, delta)]
        return ctx.cast(ctx.op("Range", *args), I8)
    if dtype.is_int:
        return ctx.op("Range", start, limit, delta)

    def scalar(op, a, b):
        return in_f32(ctx, dtype, lambda p, q: ctx.op(op, p, q), a, b)

    def wide(v):
        return v if dtype == F64 else ctx.cast(v, F64)

    count = ctx.op("Ceil", wide(scalar("Div", scalar("Sub", limit, start), delta)))
    count = ctx.op("Max", count, ctx.const(0, F64))
    index = ctx.op("Range", ctx.const(0, I64), ctx.cast(count, I64), ctx.const(1, I64))
    first, second = wide(start), wide(scalar("Add", start, delta))
    step = ctx.op("Sub", second, first)
    values = ctx.op("Add", first, ctx.op("Mul", ctx.cast(index, F64), step))
    values = where(ctx, ctx.op("Equal", index, ctx.const(1, I64)), second, values, F64)
    values = where(ctx, ctx.op("Equal", index, ctx.const(0, I64)), first, values, F64)
    if dtype == F16:
        return f64_to_f16(ctx, values)
    return values if dtype == F64 else ctx.cast(values, dtype)


@emits("trilu")
def trilu(ctx, node, x):
    """``np.triu``/``np.tril`` over the last two axes: Trilu with ``k`` as
    an int64 scalar input (opset 14); the IR admits only the dtypes
    onnxruntime's CPU kernel has."""
    return ctx.op("Trilu", x, ctx.const(np.array(node.attrs["k"], dtype=np.int64), I64), upper=int(node.attrs["upper"]))
