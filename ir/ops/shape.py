"""Data-movement ops: reshape, transpose, squeeze/unsqueeze, expand, concat,
split, slice, gather, gather_nd, scatter_nd, shape, range, nonzero, trilu.

Index and shape operands are int64 tensors. Semantics are NumPy's, stated
per op; where ONNX differs (Reshape's 0, Slice's sentinels) the emitter
bridges the gap.

The type rules of ops with shape operands (reshape, expand, split, slice,
range) also read symbolic operand values (``OpDef.symbolic_inputs``), so
``reshape(x, concat(shape(x)[0], [-1]))`` of an ``f32[N,3,4]`` is
``f32[N,12]``. A symbolic element of a shape operand is taken as a size
(>= 0); only a static -1 asks reshape to infer a dim.
"""

from __future__ import annotations

import numpy as np

from ir import symbolic as sym
from ir.ops.common import INT64, broadcast_shapes, check_dtype, known_dims, normalize_axis, same_dtype
from ir.opdef import ROW_MAJOR_VIEW, TOTAL, Attr, OpDef, OpError, register
from ir.types import DType, TensorType, dims_compatible


def _static_length(t: TensorType, op: str, what: str) -> int:
    if t.dtype != INT64 or t.rank != 1 or not isinstance(t.shape[0], int):
        raise OpError(f"{op}: {what} must be i64[k] with a static k, got {t}")
    return t.shape[0]


# -- reshape ------------------------------------------------------------
def _reshape_infer(types, attrs, consts):
    x, s = types
    k = _static_length(s, "reshape", "shape")
    target = known_dims(consts[1])
    if target is None:
        return [TensorType(x.dtype, (None,) * k)]
    static = [d for d in target if isinstance(d, int)]
    if static.count(-1) > 1 or any(d < -1 for d in static):
        raise OpError(f"reshape: bad target shape {list(target)}")
    dims = list(target)
    if -1 in static:
        i = dims.index(-1)
        dims[i] = _quotient(x.shape, dims[:i] + dims[i + 1:])
    if x.size is not None and all(isinstance(d, int) for d in dims) and int(np.prod(dims)) != x.size:
        raise OpError(f"reshape: cannot reshape {x} to {dims}")
    return [TensorType(x.dtype, tuple(dims))]


def _quotient(shape, known) -> "sym.Dim":
    """The dim that -1 stands for: ``prod(shape) / prod(known)``, after
    cancelling the dims the two share (so ``(N, 3, 4)`` to ``(N, -1)`` gives
    12 whatever N is); a symbolic divisor must divide as a monomial. None
    when unknown or a zero size makes it ambiguous."""
    rest = list(shape)
    divisor = []
    for d in known:
        if d in rest and not isinstance(d, int):
            rest.remove(d)
        else:
            divisor.append(d)
    numerator, denominator = sym.product(rest), sym.product(divisor)
    if isinstance(denominator, int):  # a valid reshape divides exactly, so floor is exact
        return sym.floordiv(numerator, denominator) if denominator > 0 else None
    return sym.divide_exactly(numerator, denominator)


register(OpDef("reshape", _reshape_infer, lambda a, at: [np.reshape(a[0], a[1].tolist())], 2,
               traits={ROW_MAJOR_VIEW}, doc="np.reshape(x, shape): -1 infers one dim, 0 is a zero-size dim (not ONNX's copy)",
               symbolic_inputs=True))


# -- transpose, squeeze, unsqueeze --------------------------------------
def _transpose_infer(types, attrs, consts):
    (x,) = types
    perm = attrs["perm"]
    if sorted(perm) != list(range(x.rank)):
        raise OpError(f"transpose: perm {perm} is not a permutation of rank {x.rank}")
    return [x.with_shape(x.shape[p] for p in perm)]


register(OpDef("transpose", _transpose_infer, lambda a, at: [np.transpose(a[0], at["perm"])], 1,
               attrs={"perm": Attr("ints")}, traits={TOTAL}, doc="np.transpose(x, perm)"))


def _squeeze_infer(types, attrs, consts):
    (x,) = types
    axes = {normalize_axis(a, x.rank, "squeeze") for a in attrs["axes"]}
    for a in axes:
        if isinstance(x.shape[a], int) and x.shape[a] != 1:
            raise OpError(f"squeeze: axis {a} of {x} is not 1")
    return [x.with_shape(d for i, d in enumerate(x.shape) if i not in axes)]


register(OpDef("squeeze", _squeeze_infer, lambda a, at: [np.squeeze(a[0], axis=tuple(at["axes"]))], 1,
               attrs={"axes": Attr("ints")}, traits={ROW_MAJOR_VIEW}, doc="np.squeeze(x, axes): drop size-1 axes"))


def _unsqueeze_infer(types, attrs, consts):
    (x,) = types
    rank = x.rank + len(attrs["axes"])
    axes = {normalize_axis(a, rank, "unsqueeze") for a in attrs["axes"]}
    if len(axes) != len(attrs["axes"]):
        raise OpError(f"unsqueeze: repeated axis in {attrs['axes']}")
    dims = iter(x.shape)
    return [x.with_shape(1 if i in axes else next(dims) for i in range(rank))]


register(OpDef("unsqueeze", _unsqueeze_infer, lambda a, at: [np.expand_dims(a[0], tuple(at["axes"]))], 1,
               attrs={"axes": Attr("ints")}, traits={TOTAL, ROW_MAJOR_VIEW}, doc="np.expand_dims(x, axes): axes index the output"))


# -- expand -------------------------------------------------------------
def _expand_infer(types, attrs, consts):
    x, s = types
    k = _static_length(s, "expand", "shape")
    target = known_dims(consts[1]) or (None,) * k
    return [x.with_shape(broadcast_shapes([x.shape, target], "expand"))]


def _expand_eval(args, attrs):
    x, s = args
    return [np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(s.tolist()))).copy()]


register(OpDef("expand", _expand_infer, _expand_eval, 2,
               doc="broadcast x against shape (bidirectional, as ONNX Expand); PyTensor Alloc",
               symbolic_inputs=True))


# -- concat, split ------------------------------------------------------
def _concat_infer(types, attrs, consts):
    if not types:
        raise OpError("concat: needs at least one input")
    dtype = same_dtype(types, "concat")
    rank = types[0].rank
    if any(t.rank != rank for t in types):
        raise OpError("concat: inputs differ in rank")
    axis = normalize_axis(attrs["axis"], rank, "concat")
    shape = []
    for i in range(rank):
        dims = [t.shape[i] for t in types]
        if i == axis:
            shape.append(sym.total(dims))
        else:
            static = [d for d in dims if isinstance(d, int)]
            if len(set(static)) > 1:
                raise OpError(f"concat: inputs differ in dim {i}: {dims}")
            shape.append(static[0] if static else (dims[0] if len(set(dims)) == 1 else None))
    return [TensorType(dtype, tuple(shape))]


register(OpDef("concat", _concat_infer, lambda a, at: [np.concatenate(a, axis=at["axis"])], None,
               attrs={"axis": Attr("int")}, doc="np.concatenate(inputs, axis)"))


def _split_infer(types, attrs, consts):
    x, sizes = types
    n = _static_length(sizes, "split", "sizes")
    if n != attrs["num_outputs"]:
        raise OpError(f"split: {n} sizes for {attrs['num_outputs']} outputs")
    axis = normalize_axis(attrs["axis"], x.rank, "split")
    lens = known_dims(consts[1]) or (None,) * n
    return [x.with_shape(x.shape[:axis] + (d,) + x.shape[axis + 1:]) for d in lens]


def _split_eval(args, attrs):
    x, sizes = args
    return list(np.split(x, np.cumsum(sizes)[:-1], axis=attrs["axis"]))


register(OpDef("split", _split_infer, _split_eval, 2,
               attrs={"axis": Attr("int"), "num_outputs": Attr("int")},
               doc="split x along axis into pieces of the given sizes (PyTensor Split)", symbolic_inputs=True))


# -- slice --------------------------------------------------------------
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def _slice_infer(types, attrs, consts):
    x, starts, ends, steps = types
    n = len(attrs["axes"])
    for t, what in ((starts, "starts"), (ends, "ends"), (steps, "steps")):
        if _static_length(t, "slice", what) != n:
            raise OpError(f"slice: {what} has length {t.shape[0]}, axes has {n}")
    axes = [normalize_axis(a, x.rank, "slice") for a in attrs["axes"]]
    bounds = [known_dims(c) or (None,) * n for c in consts[1:]]
    shape = list(x.shape)
    for j, a in enumerate(axes):
        start, stop, step = (b[j] for b in bounds)
        if step == 0:
            raise OpError("slice: step must not be 0")
        shape[a] = slice_length(x.shape[a], start, stop, step)
    return [x.with_shape(shape)]


def slice_length(size, start, stop, step):
    """``len(range(size)[start:stop:step])`` (Python's clamping, the IR's
    INT64_MIN/MAX open ends) for dims ``size``, ``start``, ``stop`` and a
    static ``step``: exact when all are ints, else a symbolic expression
    (``max(N-1,0)`` for ``[1:]`` of ``N``) or None. A symbolic bound counts
    as a non-negative index; a bound that may be negative gives None."""
    if not isinstance(step, int) or step == 0:
        return None
    if all(isinstance(d, int) for d in (size, start, stop)):
        return len(range(*slice(start, stop, step).indices(size)))
    if step < 0:
        whole = start in (INT64_MAX, -1) and stop == INT64_MIN
        return sym.ceildiv(size, -step) if whole else None
    return sym.ceildiv(_forward_span(size, start, stop), step)


def _forward_span(size, start, stop):
    """How many of ``range(size)`` lie in ``[start, stop)`` after Python's
    clamping, for ``start, stop`` static (negative from the end, INT64_MAX
    open) or symbolic non-negative indices. Static bounds get the closed
    forms (``max(N-1,0)`` for ``[1:]``, ``min(N,3)`` for ``[-3:]``)."""
    opened = isinstance(stop, int) and stop >= INT64_MAX // 2
    if isinstance(start, int) and isinstance(stop, int) and (start < 0) == (stop < 0) and not opened:
        if stop <= start:
            return 0
        tail = sym.maximum(sym.sub(size, start), 0) if start >= 0 else sym.maximum(sym.add(size, stop), 0)
        return sym.minimum(tail, stop - start)
    if isinstance(start, int) and start >= 0 and (opened or (isinstance(stop, int) and stop < 0)):
        return sym.maximum(sym.sub(sym.add(size, 0 if opened else stop), start), 0)
    if isinstance(start, int) and -INT64_MAX // 2 < start < 0 and opened:
        return sym.minimum(size, -start)

    def clamped(i):  # the index in [0, size] Python's slice makes of i
        if isinstance(i, int) and i <= INT64_MIN // 2:
            return 0
        if isinstance(i, int) and i < 0:
            return sym.maximum(sym.add(size, i), 0)
        if isinstance(i, int) and i >= INT64_MAX // 2:
            return size
        return sym.minimum(i, size) if sym.is_nonnegative(i) else None

    return sym.maximum(sym.sub(clamped(stop), clamped(start)), 0)


def _slice_eval(args, attrs):
    x, starts, ends, steps = args
    index = [slice(None)] * x.ndim
    for a, s, e, st in zip(attrs["axes"], starts.tolist(), ends.tolist(), steps.tolist()):
        index[a] = slice(s, e, st)
    return [x[tuple(index)].copy()]


register(OpDef("slice", _slice_infer, _slice_eval, 4, attrs={"axes": Attr("ints")}, symbolic_inputs=True,
               doc="x[start:end:step] per axis, exactly Python's slice semantics (clamping included); "
                   "an open end is INT64_MAX (step > 0) or INT64_MIN (step < 0). ONNX Slice differs for "
                   "a negative step starting before the first element; the emitter bridges that"))


# -- gather, gather_nd, scatter_nd --------------------------------------
def _gather_infer(types, attrs, consts):
    x, idx = types
    check_dtype(idx, "i", "gather", "indices")
    axis = normalize_axis(attrs["axis"], x.rank, "gather")
    return [x.with_shape(x.shape[:axis] + idx.shape + x.shape[axis + 1:])]


register(OpDef("gather", _gather_infer, lambda a, at: [np.take(a[0], a[1], axis=at["axis"])], 2,
               attrs={"axis": Attr("int", 0)},
               doc="np.take(x, indices, axis): negative indices count from the end"))


def _gather_nd_infer(types, attrs, consts):
    x, idx = types
    check_dtype(idx, "i", "gather_nd", "indices")
    k = idx.shape[-1] if idx.rank else None
    if not isinstance(k, int) or k > x.rank:
        raise OpError(f"gather_nd: last dim of indices {idx} must be static and <= rank of {x}")
    return [x.with_shape(idx.shape[:-1] + x.shape[k:])]


def _gather_nd_eval(args, attrs):
    x, idx = args
    return [x[tuple(np.moveaxis(idx, -1, 0))]]


register(OpDef("gather_nd", _gather_nd_infer, _gather_nd_eval, 2,
               doc="x[idx[..., 0], ..., idx[..., k-1]] (ONNX GatherND, batch_dims=0)"))


def _scatter_nd_infer(types, attrs, consts):
    data, idx, upd = types
    check_dtype(idx, "i", "scatter_nd", "indices")
    same_dtype([data, upd], "scatter_nd")
    k = idx.shape[-1] if idx.rank else None
    if not isinstance(k, int) or k > data.rank:
        raise OpError(f"scatter_nd: last dim of indices {idx} must be static and <= rank of {data}")
    want = idx.shape[:-1] + data.shape[k:]
    if upd.rank != len(want) or not all(dims_compatible(a, b) for a, b in zip(upd.shape, want)):
        raise OpError(f"scatter_nd: updates {upd} do not match {want}")
    return [data]


def _scatter_nd_eval(args, attrs):
    data, idx, upd = args
    out = data.copy()
    where = tuple(np.moveaxis(idx, -1, 0))
    if attrs["reduction"] == "add":
        np.add.at(out, where, upd)
    else:
        out[where] = upd
    return [out]


register(OpDef("scatter_nd", _scatter_nd_infer, _scatter_nd_eval, 3,
               attrs={"reduction": Attr("str", "none", ("none", "add"))},
               doc="copy of data with data[idx] = updates, or += with repeats accumulating "
                   "(ONNX ScatterND; np.add.at)"))


# -- shape, range, nonzero ----------------------------------------------
register(OpDef("shape", lambda t, at, c: [TensorType(INT64, (t[0].rank,))],
               lambda a, at: [np.array(a[0].shape, dtype=np.int64)], 1,
               doc="the shape of x as i64[rank]"))


def _range_infer(types, attrs, consts):
    dtype = same_dtype(types, "range")
    check_dtype(types[0], "if", "range")
    if any(t.rank != 0 for t in types):
        raise OpError("range: start, limit and delta must be scalars")
    if all(c is not None and c.dtype != object for c in consts):
        n = len(np.arange(consts[0], consts[1], consts[2]))
        return [TensorType(dtype, (n,))]
    start, limit, delta = (known_dims(c) or (None,) for c in consts)
    n = None
    if dtype.is_int and isinstance(delta[0], int) and delta[0] > 0:
        n = sym.maximum(sym.ceildiv(sym.sub(limit[0], start[0]), delta[0]), 0)
    elif dtype.is_int and isinstance(delta[0], int) and delta[0] < 0:
        n = sym.maximum(sym.ceildiv(sym.sub(start[0], limit[0]), -delta[0]), 0)
    return [TensorType(dtype, (n,))]


register(OpDef("range", _range_infer,
               lambda a, at: [np.arange(a[0], a[1], a[2]).astype(a[0].dtype)], 3,
               doc="np.arange(start, limit, delta) in the inputs' dtype (PyTensor ARange)", symbolic_inputs=True))


# -- trilu ---------------------------------------------------------------
TRILU_DTYPES = {DType.FLOAT32, DType.FLOAT64, DType.INT64, DType.BOOL}  # onnxruntime's CPU Trilu kernel


def _trilu_infer(types, attrs, consts):
    (x,) = types
    if x.rank < 2:
        raise OpError(f"trilu: input must be a (batch of) matrix, got {x}")
    if x.dtype not in TRILU_DTYPES:
        raise OpError(f"trilu: dtype {x.dtype} is not one of {', '.join(sorted(str(d) for d in TRILU_DTYPES))}")
    return [x]


def _trilu_eval(args, attrs):
    (x,) = args
    return [(np.triu if attrs["upper"] else np.tril)(x, attrs["k"])]


register(OpDef("trilu", _trilu_infer, _trilu_eval, 1, attrs={"upper": Attr("bool", True), "k": Attr("int", 0)},
               traits={TOTAL},
               doc="np.triu(x, k) if upper else np.tril(x, k) over the last two axes: the kept elements are "
                   "those with column - row >= k (upper) or <= k (lower), every other one 0 whatever its value "
                   "(ONNX Trilu, opset 14; upper by default, as there)"))


def _nonzero_infer(types, attrs, consts):
    return [TensorType(INT64, (types[0].rank, None))]


register(OpDef("nonzero", _nonzero_infer, lambda a, at: [np.array(np.nonzero(a[0]), dtype=np.int64).reshape(a[0].ndim, -1)], 1,
               doc="np.nonzero(x) stacked as i64[rank, count] (ONNX NonZero)"))
