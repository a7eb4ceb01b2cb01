"""Lowering rules for PyTensor's shape and data-movement ops: DimShuffle,
Reshape, Shape, Shape_i, SpecifyShape, Alloc, AllocEmpty, MakeVector, ARange,
Join, Split, Eye, JoinDims, SplitDims, Nonzero, and the identity-like
conversions.

Semantics are each Op's ``perform`` (NumPy): ``np.reshape``,
``np.broadcast_to``, ``np.arange(..., dtype)``, ``np.concatenate(...,
dtype)``, ``np.split``, ``np.eye``. Shapes and axes are int64 in the IR;
PyTensor's int8/int32 shape scalars are cast (exactly).
"""

from __future__ import annotations

import numpy as np
from pytensor.compile.ops import DeepCopyOp, ViewOp
from pytensor.graph.basic import Constant
from pytensor.tensor.basic import (ARange, Alloc, AllocEmpty, Eye, Join, MakeVector, Nonzero, ScalarFromTensor,
                                   Split, TensorFromScalar)
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.reshape import JoinDims, SplitDims
from pytensor.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape

from compiler.errors import Unsupported
from compiler.lowering.context import ir_dtype
from compiler.lowering.registry import lowers
from compiler.lowering.rules.indexing import INT64, int64_scalar, int64_value, int64_vector, shape_vector

# -- identities ------------------------------------------------------------


@lowers(TensorFromScalar, ScalarFromTensor, DeepCopyOp, ViewOp)
def lower_identity(ctx, node):
    """The input value unchanged: scalars are 0-d tensors in the IR, copies
    and views are values."""
    return [ctx.get(node.inputs[0])]


@lowers(SpecifyShape)
def lower_specify_shape(ctx, node):
    """SpecifyShape(x, *sizes): ``x`` unchanged; the driver adopts the static
    dims. PyTensor asserts the sizes at run time and ONNX has no assertion,
    so every constant size required of a symbolic dim of ``x`` is recorded in
    ``ctx.options.specified`` for ``CompiledModel.run``'s input check
    (sizes computed at run time are not checked)."""
    x = ctx.get(node.inputs[0])
    for dim, size in zip(x.type.shape, node.inputs[1:]):
        data = getattr(size, "data", None) if isinstance(size, Constant) else None
        if isinstance(dim, str) and data is not None:
            ctx.options.specified.append((dim, int(data)))
    return [x]


# -- axes --------------------------------------------------------------------


@lowers(DimShuffle)
def lower_dimshuffle(ctx, node):
    """DimShuffle (and its ExpandDims/Squeeze/Transpose forms): ``squeeze`` the
    dropped broadcastable axes, ``transpose`` the kept ones, ``unsqueeze`` the
    'x' axes; only the nodes that change something are emitted."""
    x = ctx.get(node.inputs[0])
    order = list(node.op.new_order)
    drop = [a for a in range(x.rank) if a not in order]
    kept = [a for a in range(x.rank) if a in order]
    if drop:
        x = ctx.add("squeeze", [x], {"axes": drop})
    perm = [kept.index(a) for a in order if a != "x"]
    if perm != sorted(perm):
        x = ctx.add("transpose", [x], {"perm": perm})
    augment = [i for i, a in enumerate(order) if a == "x"]
    if augment:
        x = ctx.add("unsqueeze", [x], {"axes": augment})
    return [x]


@lowers(Reshape)
def lower_reshape(ctx, node):
    """Reshape(ndim)(x, shape): ``np.reshape`` (-1 infers a dim). A constant
    shape stays a constant, so the output's static shape is known."""
    x, shape = ctx.get(node.inputs[0]), node.inputs[1]
    return [ctx.add("reshape", [x, _shape_operand(ctx, shape, node.op.ndim)])]


@lowers(JoinDims)
def lower_join_dims(ctx, node):
    """JoinDims(start_axis, n_axes): reshape merging ``n_axes`` axes into one
    of their product's size (1 when ``n_axes`` is 0)."""
    x = ctx.get(node.inputs[0])
    start, stop = node.op.start_axis, node.op.start_axis + node.op.n_axes
    if x.type.is_static:
        return [ctx.add("reshape", [x, ctx.i64(_joined(x.shape, start, stop))])]
    shape = ctx.add("shape", [x])
    merged = ctx.i64([1]) if start == stop else \
        ctx.add("reduce_prod", [_take(ctx, shape, start, stop)], {"axes": [0], "keepdims": True})
    return [ctx.add("reshape", [x, _concat(ctx, [_take(ctx, shape, 0, start), merged,
                                                   _take(ctx, shape, stop, x.rank)])])]


@lowers(SplitDims)
def lower_split_dims(ctx, node):
    """SplitDims(axis)(x, shape): reshape replacing axis ``axis`` by ``shape``."""
    x, axis = ctx.get(node.inputs[0]), node.op.axis
    sizes = _shape_operand(ctx, node.inputs[1], node.outputs[0].type.ndim - x.rank + 1)
    shape = shape_vector(ctx, x)
    return [ctx.add("reshape", [x, _concat(ctx, [_take(ctx, shape, 0, axis), sizes,
                                                   _take(ctx, shape, axis + 1, x.rank)])])]


def _concat(ctx, vectors):
    """The concatenation of the i64 vectors that are not None."""
    vectors = [v for v in vectors if v is not None]
    return vectors[0] if len(vectors) == 1 else ctx.add("concat", vectors, {"axis": 0})


def _joined(shape, start, stop):
    return list(shape[:start]) + [int(np.prod(shape[start:stop], dtype=np.int64))] + list(shape[stop:])


def _take(ctx, vector, start, stop):
    """``vector[start:stop]`` of an i64 vector, or None when empty (a constant
    vector is sliced in Python)."""
    if start >= stop:
        return None
    if vector.const is not None:
        return ctx.i64(vector.const[start:stop])
    return ctx.add("slice", [vector, ctx.i64([start]), ctx.i64([stop]), ctx.i64([1])], {"axes": [0]})


def _shape_operand(ctx, var, length):
    """An ``i64[length]`` IR shape vector from a PyTensor integer vector
    (constant when it is constant; reshaped to its static length otherwise)."""
    const = ctx.constant_value(var)
    if const is not None:
        return ctx.i64(np.asarray(const).astype(np.int64).reshape(-1))
    value = ctx.get(var)
    if not value.dtype.is_int:
        raise Unsupported(f"shape {var} has dtype {value.dtype}, not an integer")
    value = ctx.cast(value, INT64)
    if value.shape != (length,):  # give it PyTensor's static length
        value = ctx.add("reshape", [value, ctx.i64([length])])
    return value


# -- shapes ------------------------------------------------------------------


@lowers(Shape)
def lower_shape(ctx, node):
    """Shape: ``i64[rank]``, a constant when the IR type is static."""
    return [shape_vector(ctx, ctx.get(node.inputs[0]))]


@lowers(Shape_i)
def lower_shape_i(ctx, node):
    """Shape_i(i): the 0-d int64 length of axis ``i`` (a constant when static)."""
    x, i = ctx.get(node.inputs[0]), node.op.i
    if isinstance(x.shape[i], int):
        return [ctx.scalar(x.shape[i], INT64)]
    return [ctx.add("gather", [ctx.add("shape", [x]), ctx.scalar(i, INT64)], {"axis": 0})]


# -- building tensors --------------------------------------------------------


@lowers(Alloc)
def lower_alloc(ctx, node):
    """Alloc(value, *shape): ``np.broadcast_to(value, shape)`` as ``expand``;
    the shape is a constant when every dim is."""
    value = ctx.get(node.inputs[0])
    shape = int64_vector(ctx, [int64_scalar(ctx, s) for s in node.inputs[1:]])
    return [ctx.add("expand", [value, shape])]


@lowers(AllocEmpty)
def lower_alloc_empty(ctx, node):
    """AllocEmpty(dtype)(*shape): zeros of that shape. PyTensor leaves the
    content undefined (``np.empty``), so zeros are one valid choice."""
    zero = ctx.scalar(0, ir_dtype(node.outputs[0]))
    shape = int64_vector(ctx, [int64_scalar(ctx, s) for s in node.inputs])
    return [ctx.add("expand", [zero, shape])]


@lowers(MakeVector)
def lower_make_vector(ctx, node):
    """MakeVector(dtype)(*scalars): ``np.asarray(scalars, dtype)``; a constant
    when every scalar is constant, else a concat of unsqueezed scalars cast
    to ``dtype``."""
    dtype = ir_dtype(node.outputs[0])
    consts = [ctx.constant_value(v) for v in node.inputs]
    if all(c is not None for c in consts):
        return [ctx.const(np.asarray(consts, dtype=dtype.numpy).reshape(len(consts)))]
    pieces = [ctx.add("unsqueeze", [ctx.cast(ctx.get(v), dtype)], {"axes": [0]}) for v in node.inputs]
    return [pieces[0] if len(pieces) == 1 else ctx.add("concat", pieces, {"axis": 0})]


@lowers(ARange)
def lower_arange(ctx, node):
    """ARange(dtype)(start, stop, step): ``np.arange`` in ``dtype``, as
    ``range`` of the inputs cast to ``dtype``. That is NumPy's result when
    each input converts to ``dtype`` exactly, as it does for the dtype
    ``pt.arange`` infers (an upcast of the inputs); with an explicit narrower
    ``dtype`` (say int32 bounds beyond 2**24 and float32) NumPy sizes the
    result from the unconverted values and may differ by an element.

    Raises:
        Unsupported: an unsigned ``dtype`` (the IR range takes signed ints
            and floats).
    """
    dtype = ir_dtype(node.outputs[0])
    if not dtype.is_signed:
        raise Unsupported(f"arange of dtype {dtype}")
    args = [ctx.cast(ctx.get(v), dtype) for v in node.inputs]
    return [ctx.add("range", args)]


@lowers(Eye)
def lower_eye(ctx, node):
    """Eye(dtype)(n, m, k): ``np.eye(n, m, k, dtype)``: ones where
    ``col - row == k``, built as ``(range(n)[:, None] + k == range(m)[None, :])``."""
    n, m, k = (int64_value(ctx, int64_scalar(ctx, v)) for v in node.inputs)
    zero, one = ctx.scalar(0, INT64), ctx.scalar(1, INT64)
    rows = ctx.add("unsqueeze", [ctx.add("range", [zero, n, one])], {"axes": [1]})
    cols = ctx.add("unsqueeze", [ctx.add("range", [zero, m, one])], {"axes": [0]})
    diagonal = ctx.add("eq", [ctx.add("add", [rows, k]), cols])
    return [ctx.cast(diagonal, ir_dtype(node.outputs[0]))]


# -- joining and splitting ---------------------------------------------------


@lowers(Join)
def lower_join(ctx, node):
    """Join(axis, *tensors): ``np.concatenate(tensors, axis, dtype=out)``
    as ``concat`` of the inputs cast to the output dtype.

    Raises:
        Unsupported: a symbolic axis.
    """
    axis = _constant_axis(ctx, node.inputs[0], "Join")
    dtype = ir_dtype(node.outputs[0])
    tensors = [ctx.cast(ctx.get(v), dtype) for v in node.inputs[1:]]
    if len(tensors) == 1:
        return tensors
    return [ctx.add("concat", tensors, {"axis": axis})]


@lowers(Split)
def lower_split(ctx, node):
    """Split(n)(x, axis, sizes): ``np.split`` at the cumulative sizes, as
    ``split`` with an ``i64[n]`` sizes vector.

    Raises:
        Unsupported: a symbolic axis.
    """
    x = ctx.get(node.inputs[0])
    axis = _constant_axis(ctx, node.inputs[1], "Split")
    n = node.op.len_splits
    sizes = _shape_operand(ctx, node.inputs[2], n)
    return list(ctx.add_multi("split", [x, sizes], {"axis": axis, "num_outputs": n}))


@lowers(Nonzero)
def lower_nonzero(ctx, node):
    """Nonzero(a): ``np.nonzero(a)``, one int64 index vector per axis of
    ``a`` (rank >= 1), in row-major order. The IR's ``nonzero`` (ONNX
    NonZero) stacks them as ``i64[rank, count]``; output ``i`` is row ``i``.
    Compiled functions turn a boolean-mask index ``x[m]`` into
    ``AdvancedSubtensor1(x, Nonzero(m))``."""
    nz = ctx.add("nonzero", [ctx.get(node.inputs[0])])
    return [ctx.add("gather", [nz, ctx.i64(i)], {"axis": 0}) for i in range(len(node.outputs))]


def _constant_axis(ctx, var, op: str) -> int:
    const = ctx.constant_value(var)
    if const is None:
        raise Unsupported(f"{op} along a symbolic axis (ONNX needs a constant axis)")
    return int(const)
