"""Lowering rules for PyTensor's shape and data-movement ops: DimShuffle,
Reshape, Shape, Shape_i, SpecifyShape, Alloc, AllocEmpty, MakeVector, ARange,
Join, Split, Eye, JoinDims, SplitDims, Nonzero, Repeat, and the identity-like
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
from pytensor.tensor.extra_ops import Repeat
from pytensor.tensor.reshape import JoinDims, SplitDims
from pytensor.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape

from compiler.lowering.errors import Unsupported
from compiler.lowering.context import ir_dtype
from compiler.lowering.registry import lowers
from compiler.lowering.rules.indexing import INT64, dim_of, int64_scalar, int64_value, int64_vector, shape_vector

# -- identities ------------------------------------------------------------


@lowers(TensorFromScalar, ScalarFromTensor, DeepCopyOp, ViewOp)
def lower_identity(ctx, node):
    """The input value unchanged: scalars are 0-d tensors in the IR, copies
    and views are values."""
    return [ctx.get(node.inputs[0])]


@lowers(SpecifyShape)
def lower_specify_shape(ctx, node):
    """SpecifyShape(x, *sizes): ``x`` with the constant sizes it is given.

    PyTensor asserts the sizes at run time (``AssertionError``) and ONNX has
    no assertion. A constant size required of an input's own symbolic dim is
    recorded in ``ctx.record.specified``: ``CompiledModel.run`` checks it and
    the driver writes it into the input's ONNX type. A constant size on any
    other dim that ``x``'s type does not already fix (a dim computed inside
    the graph) is imposed by a ``reshape`` to the specified sizes: the value
    then has the static shape its type declares, and a wrong element count
    fails in onnxruntime rather than returning a value of another shape.
    Sizes computed at run time are not checked.

    Raises:
        Unsupported: a constant size contradicts a static dim of ``x`` (the
            graph fails at every run; PyTensor 2.38's ``local_specify_shape_lift``
            can build such a graph from a slice that is empty).
    """
    x = ctx.get(node.inputs[0])
    input_dims = {d for v in ctx.graph.inputs for d in v.type.shape if isinstance(d, str)}
    spec: list[int | None] = []
    for axis, (dim, size) in enumerate(zip(x.type.shape, node.inputs[1:])):
        data = getattr(size, "data", None) if isinstance(size, Constant) else None
        if data is not None and isinstance(dim, int) and int(data) != dim:
            raise Unsupported(f"SpecifyShape requires size {int(data)} of axis {axis}, whose size is always {dim}: "
                              "the graph raises at every run (PyTensor's AssertionError), which ONNX cannot express")
        if data is None or isinstance(dim, int):
            spec.append(None)
        elif isinstance(dim, str) and dim in input_dims:
            ctx.record.specified.append((dim, int(data)))
            spec.append(None)
        else:
            spec.append(int(data))
    if all(s is None for s in spec):
        return [x]
    if all(s is not None or isinstance(d, int) for s, d in zip(spec, x.type.shape)):
        target = ctx.i64([s if s is not None else d for s, d in zip(spec, x.type.shape)])
    else:
        known = [s is not None for s in spec]
        target = ctx.add("where", [ctx.const(np.array(known)), ctx.i64([s or 0 for s in spec]),
                                   ctx.add("shape", [x])])
    return [ctx.add("reshape", [x, target])]


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
    return [int64_value(ctx, dim_of(ctx, ctx.get(node.inputs[0]), node.op.i))]


# -- building tensors --------------------------------------------------------


@lowers(Alloc)
def lower_alloc(ctx, node):
    """Alloc(value, *shape): ``np.broadcast_to(value, shape)`` as ``expand``;
    the shape is a constant when every dim is.

    ONNX's Expand broadcasts both ways, so a value longer than a target dim
    of 1 (length 2 to shape (1,)) would give the longer result where
    ``Alloc`` raises. Where PyTensor's type says the target dim is 1 and the
    value's dim is not statically 1, the result is reshaped to the target
    shape, which fails at run time (in onnxruntime's Reshape) for such a
    value. A target dim of run-time size 1 is not guarded (docs/status.md "Not done yet"):
    a guard on every Alloc would hide the repeat patterns resize-recovery
    finds."""
    value = ctx.get(node.inputs[0])
    shape = int64_vector(ctx, [int64_scalar(ctx, s) for s in node.inputs[1:]])
    out = ctx.add("expand", [value, shape])
    target, given = node.outputs[0].type.shape, node.inputs[0].type.shape
    aligned = (1,) * (len(target) - len(given)) + tuple(given)
    if any(t == 1 and v != 1 for t, v in zip(target, aligned)):
        out = ctx.add("reshape", [out, shape])
    return [out]


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

    An axis known only at run time views every input as ``(prod(shape[:axis]),
    shape[axis], prod(shape[axis+1:]))``, concatenates axis 1 and reshapes
    to the first input's shape with ``shape[axis]`` the total (as ``Split``).
    """
    dtype = ir_dtype(node.outputs[0])
    tensors = [ctx.cast(ctx.get(v), dtype) for v in node.inputs[1:]]
    if len(tensors) == 1:
        return tensors
    if ctx.constant_value(node.inputs[0]) is None:
        axis = _runtime_axis(ctx, int64_scalar(ctx, node.inputs[0]), tensors[0].rank)
        views = [_three_axis_view(ctx, t, axis) for t in tensors]
        joined = ctx.add("concat", [v for v, _, _ in views], {"axis": 1})
        _, before, after = views[0]
        total = ctx.add("gather", [ctx.add("shape", [joined]), ctx.i64([1])], {"axis": 0})
        target = ctx.add("concat", [before, total, after], {"axis": 0})
        return [ctx.add("reshape", [joined, ctx.add("reshape", [target, ctx.i64([tensors[0].rank])])])]
    axis = _constant_axis(ctx, node.inputs[0], "Join")
    return [ctx.add("concat", tensors, {"axis": axis})]


@lowers(Split)
def lower_split(ctx, node):
    """Split(n)(x, axis, sizes): ``np.split`` at the cumulative sizes, as
    ``split`` with an ``i64[n]`` sizes vector.

    An axis known only at run time (ONNX Split needs a constant) views ``x``
    as ``(prod(shape[:axis]), shape[axis], prod(shape[axis+1:]))`` (the same
    elements in the same order), splits axis 1 and reshapes each piece to
    ``shape`` with ``shape[axis]`` replaced by its size; a negative axis
    counts from the end (PyTensor's ``perform``).

    Raises:
        Unsupported: a sizes vector whose static length is not the number of outputs.
    """
    x = ctx.get(node.inputs[0])
    n = node.op.len_splits
    given = node.inputs[2].type.shape[0]
    if given is not None and given != n:
        raise Unsupported(f"Split of {n} outputs with {given} sizes: PyTensor raises 'Length of splits is not equal "
                          f"to n_splits' when the function runs, and an ONNX model cannot raise")
    sizes = _shape_operand(ctx, node.inputs[2], n)
    if ctx.constant_value(node.inputs[1]) is not None:
        axis = _constant_axis(ctx, node.inputs[1], "Split")
        return list(ctx.add_multi("split", [x, sizes], {"axis": axis, "num_outputs": n}))
    return _split_symbolic_axis(ctx, x, int64_scalar(ctx, node.inputs[1]), sizes, n)


def _runtime_axis(ctx, axis, rank: int):
    """The 0-d int64 ``axis`` with a negative value counted from the end."""
    negative = ctx.add("lt", [axis, ctx.scalar(0, INT64)])
    return ctx.add("where", [negative, ctx.add("add", [axis, ctx.scalar(rank, INT64)]), axis])


def _three_axis_view(ctx, x, axis):
    """``x`` reshaped to ``(prod(shape[:axis]), shape[axis], prod(shape[axis+1:]))``
    for the 0-d int64 run-time ``axis`` (the same elements in the same order),
    with the shape vectors ``shape[:axis]`` and ``shape[axis+1:]``."""
    at = ctx.add("reshape", [axis, ctx.i64([1])])
    shape = shape_vector(ctx, x)
    end = ctx.i64([np.iinfo(np.int64).max])
    before = ctx.add("slice", [shape, ctx.i64([0]), at, ctx.i64([1])], {"axes": (0,)})
    after = ctx.add("slice", [shape, ctx.add("add", [at, ctx.i64([1])]), end, ctx.i64([1])], {"axes": (0,)})

    def product(dims):  # the element count of a run of dims (1 when empty), exact in int64
        ones = ctx.add("concat", [ctx.i64([1]), dims], {"axis": 0})
        return ctx.add("reduce_prod", [ones], {"axes": (0,), "keepdims": True})

    length = ctx.add("gather", [shape, at], {"axis": 0})
    view = ctx.add("reshape", [x, ctx.add("concat", [product(before), length, product(after)], {"axis": 0})])
    return view, before, after


def _split_symbolic_axis(ctx, x, axis, sizes, n: int):
    """``np.split`` of ``x`` along the 0-d int64 run-time ``axis`` (see ``lower_split``)."""
    view, before_dims, after_dims = _three_axis_view(ctx, x, _runtime_axis(ctx, axis, x.rank))
    pieces = ctx.add_multi("split", [view, sizes], {"axis": 1, "num_outputs": n})
    outs = []
    for i, piece in enumerate(pieces):
        size = ctx.add("slice", [sizes, ctx.i64([i]), ctx.i64([i + 1]), ctx.i64([1])], {"axes": (0,)})
        target = ctx.add("concat", [before_dims, size, after_dims], {"axis": 0})
        outs.append(ctx.add("reshape", [piece, ctx.add("reshape", [target, ctx.i64([x.rank])])]))
    return outs


def _constant_axis(ctx, var, op: str) -> int:
    const = ctx.constant_value(var)
    if const is None:
        raise Unsupported(f"{op} along a symbolic axis (ONNX needs a constant axis)")
    return int(const)


@lowers(Nonzero)
def lower_nonzero(ctx, node):
    """Nonzero(a): ``np.nonzero(a)``, one int64 vector per axis of ``a``
    (the rows of the IR ``nonzero``, ONNX NonZero; NaN counts as nonzero,
    -0.0 as zero). Boolean-mask indexing of compiled functions becomes this."""
    x = ctx.get(node.inputs[0])
    nz = ctx.add("nonzero", [x])
    if x.rank == 1:
        return [ctx.add("reshape", [nz, ctx.i64([-1])])]
    rows = ctx.add_multi("split", [nz, ctx.i64([1] * x.rank)], {"axis": 0, "num_outputs": x.rank})
    return [ctx.add("reshape", [r, ctx.i64([-1])]) for r in rows]


@lowers(Repeat)
def lower_repeat(ctx, node):
    """Repeat{axis}(x, repeats): ``np.repeat(x, repeats, axis)`` with a vector
    of counts (one per element along ``axis``, or one for all), as a
    ``gather`` along ``axis`` of the source index of every output position.

    That index vector is built in O(len + total): a 1 is added at each
    running total ``cumsum(repeats)[:-1]`` of a zero vector of length
    ``total + 1`` (``scatter_nd`` add: empty groups stack their marks), and
    its running sum, cut to ``total``, is the source index. Counts are
    non-negative (NumPy raises on a negative one; the model does not check).
    """
    x = ctx.get(node.inputs[0])
    axis = node.op.axis % x.rank
    repeats = ctx.cast(ctx.get(node.inputs[1]), INT64)
    length = ctx.add("gather", [shape_vector(ctx, x), ctx.i64([axis])], {"axis": 0})
    repeats = ctx.add("expand", [repeats, length])  # np.repeat broadcasts one count to every element
    ends = ctx.add("cumsum", [repeats], {"axis": 0})
    total = ctx.add("reduce_sum", [repeats], {"axes": (0,), "keepdims": True})
    marks = ctx.add("expand", [ctx.scalar(0, INT64), ctx.add("add", [total, ctx.i64([1])])])
    starts = ctx.add("slice", [ends, ctx.i64([0]), ctx.i64([-1]), ctx.i64([1])], {"axes": (0,)})
    ones = ctx.add("expand", [ctx.scalar(1, INT64), ctx.add("shape", [starts])])
    marks = ctx.add("scatter_nd", [marks, ctx.add("unsqueeze", [starts], {"axes": (1,)}), ones],
                    {"reduction": "add"})
    source = ctx.add("slice", [ctx.add("cumsum", [marks], {"axis": 0}), ctx.i64([0]), total, ctx.i64([1])],
                     {"axes": (0,)})
    return [ctx.add("gather", [x, source], {"axis": axis})]
