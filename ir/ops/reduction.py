"""Reductions, arg-reductions, scans along an axis, softmax and matmul.

Semantics are NumPy's: ``reduce_*`` over ``axes`` (every axis when ``axes``
is empty) keep the input dtype (the lowering casts for PyTensor's
``acc_dtype``); ``argmax``/``argmin`` return the first extreme index as int64;
``cumsum``/``cumprod`` are inclusive; ``sort`` is NumPy's stable sort (ties
in index order, NaN last) with its permutation; ``softmax``/``log_softmax``
follow PyTensor's Softmax/LogSoftmax (max-subtracted); ``matmul`` is
``np.matmul``.
"""

from __future__ import annotations

import numpy as np

from ir.ops.common import INT64, broadcast_shapes, check_dtype, normalize_axis, same_dtype
from ir.opdef import TOTAL, Attr, OpDef, OpError, register
from ir.types import TensorType


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _axes(attrs, rank, op):
    axes = attrs["axes"] or tuple(range(rank))
    norm = tuple(sorted({normalize_axis(a, rank, op) for a in axes}))
    if len(norm) != len(axes):
        raise OpError(f"{op}: repeated axis in {axes}")
    return norm


def _reduce(name: str, fn, allowed: str, doc: str, traits: frozenset = frozenset()) -> OpDef:
    def infer(types, attrs, consts):
        (t,) = types
        check_dtype(t, allowed, name)
        return [TensorType(t.dtype, _reduced_shape(t.shape, _axes(attrs, t.rank, name), attrs["keepdims"]))]

    def evaluate(args, attrs):
        (x,) = args
        axes = _axes(attrs, x.ndim, name)
        return [np.asarray(fn(x, axis=axes, keepdims=attrs["keepdims"]), dtype=x.dtype)]

    return register(OpDef(name, infer, evaluate, 1,
                          attrs={"axes": Attr("ints", ()), "keepdims": Attr("bool", False)}, traits=traits, doc=doc))


# Sums, products, all and any have an identity: total even over an empty axis (max/min fail there).
_reduce("reduce_sum", np.sum, "iuf", "np.sum over axes (all when empty), in the input dtype", traits={TOTAL})
_reduce("reduce_prod", np.prod, "iuf", "np.prod over axes, in the input dtype", traits={TOTAL})
_reduce("reduce_max", np.max, "iuf", "np.max over axes; NaN propagates")
_reduce("reduce_min", np.min, "iuf", "np.min over axes; NaN propagates")
_reduce("reduce_all", np.all, "b", "np.all over axes of a bool tensor", traits={TOTAL})
_reduce("reduce_any", np.any, "b", "np.any over axes of a bool tensor", traits={TOTAL})


def _arg_reduce(name: str, fn) -> OpDef:
    def infer(types, attrs, consts):
        (t,) = types
        check_dtype(t, "iufb", name)
        axis = normalize_axis(attrs["axis"], t.rank, name)
        return [TensorType(INT64, _reduced_shape(t.shape, (axis,), attrs["keepdims"]))]

    def evaluate(args, attrs):
        (x,) = args
        axis = normalize_axis(attrs["axis"], x.ndim, name)
        return [np.asarray(fn(x, axis=axis, keepdims=attrs["keepdims"]), dtype=np.int64)]

    return register(OpDef(name, infer, evaluate, 1,
                          attrs={"axis": Attr("int"), "keepdims": Attr("bool", False)},
                          doc=f"np.{fn.__name__}: index (int64) of the first extreme along axis"))


_arg_reduce("argmax", np.argmax)
_arg_reduce("argmin", np.argmin)


def _along_axis(name: str, fn, allowed: str, doc: str) -> OpDef:
    def infer(types, attrs, consts):
        (t,) = types
        check_dtype(t, allowed, name)
        normalize_axis(attrs["axis"], t.rank, name)
        return [t]

    def evaluate(args, attrs):
        (x,) = args
        return [np.asarray(fn(x, axis=attrs["axis"]), dtype=x.dtype)]

    return register(OpDef(name, infer, evaluate, 1, attrs={"axis": Attr("int")}, doc=doc))


def _softmax(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, axis):
    z = x - np.max(x, axis=axis, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))


_along_axis("cumsum", np.cumsum, "iuf", "np.cumsum along axis (inclusive)")
_along_axis("cumprod", np.cumprod, "iuf", "np.cumprod along axis (inclusive)")
_along_axis("softmax", _softmax, "f", "exp(x - max) / sum(exp(x - max)) along axis (PyTensor Softmax)")
_along_axis("log_softmax", _log_softmax, "f", "x - max - log(sum(exp(x - max))) along axis (PyTensor LogSoftmax)")


def _sort_infer(types, attrs, consts):
    (t,) = types
    check_dtype(t, "biuf", "sort")
    if t.rank == 0:
        raise OpError("sort: input must have rank >= 1")
    normalize_axis(attrs["axis"], t.rank, "sort")
    return [t, TensorType(INT64, t.shape)]


def _sort_eval(args, attrs):
    (x,) = args
    perm = np.argsort(x, axis=attrs["axis"], kind="stable").astype(np.int64)
    return [np.take_along_axis(x, perm, axis=attrs["axis"]), perm]


register(OpDef("sort", _sort_infer, _sort_eval, 1, attrs={"axis": Attr("int")},
               doc="(np.sort(x, axis, kind='stable'), np.argsort(x, axis, kind='stable')): ascending, "
                   "ties in index order, NaN last (PyTensor SortOp/ArgSortOp; ONNX TopK)"))


def _matmul_infer(types, attrs, consts):
    a, b = types
    dtype = same_dtype(types, "matmul")
    check_dtype(a, "iuf", "matmul")
    if a.rank == 0 or b.rank == 0:
        raise OpError("matmul: inputs must have rank >= 1")
    sa = a.shape if a.rank > 1 else (1,) + a.shape
    sb = b.shape if b.rank > 1 else b.shape + (1,)
    k1, k2 = sa[-1], sb[-2]
    if isinstance(k1, int) and isinstance(k2, int) and k1 != k2:
        raise OpError(f"matmul: contracted dims differ: {a} @ {b}")
    batch = broadcast_shapes([sa[:-2], sb[:-2]], "matmul")
    shape = batch + (sa[-2],) * (a.rank > 1) + (sb[-1],) * (b.rank > 1)
    return [TensorType(dtype, shape)]


register(OpDef("matmul", _matmul_infer, lambda args, attrs: [np.matmul(*args)], 2,
               doc="np.matmul: batched matrix product with broadcast batch dims"))

