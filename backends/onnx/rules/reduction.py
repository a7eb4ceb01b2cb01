"""Rules for reductions, arg-reductions, cumulative ops, softmax and matmul.
Semantics: ``ir/ops/reduction.py`` (NumPy); ONNX operator spec, opset 18
(axes are int64 inputs; an empty axes list means every axis).
"""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from backends.onnx.rules.common import (B, F16, F32, F64, I64, U8, compute_dtype, float_compute, has_kernel,
                                        in_f32, kernel_op, to_compute, where, zero)
from backends.onnx.registry import emits
from ir.ops.common import normalize_axis

INT64_MAX = np.iinfo(np.int64).max


def _axes(ctx, node):
    """The node's reduced axes (normalized; all axes when ``axes`` is empty) as an int64 initializer."""
    rank = node.inputs[0].rank
    axes = node.attrs["axes"] or tuple(range(rank))
    return ctx.const(np.array(sorted(normalize_axis(a, rank, node.op) for a in axes), np.int64), I64)


def _any_nan(ctx, x, axes, keepdims):
    """Whether any element of ``x`` over ``axes`` is NaN (bool)."""
    flags = ctx.cast(ctx.op("IsNaN", x), U8)
    return ctx.cast(ctx.op("ReduceMax", flags, axes, keepdims=keepdims), B)


REDUCE = {"reduce_sum": "ReduceSum", "reduce_prod": "ReduceProd",
          "reduce_max": "ReduceMax", "reduce_min": "ReduceMin"}


@emits(*REDUCE)
def reduce(ctx, node, x):
    """``np.sum``/``np.prod``/``np.max``/``np.min`` over the node's axes.

    Floats: ReduceSum/ReduceProd/ReduceMax/ReduceMin; max/min propagate NaN
    as NumPy does (onnxruntime's float64 ReduceMax drops it); sums and
    products may differ from NumPy's pairwise order by rounding; float16
    reduces in float32 and rounds once (NumPy's float16 sum accumulates in
    float32). Ints: onnxruntime's integer ReduceSum/ReduceProd saturate and
    its int64 ReduceMax/ReduceMin are wrong for some values, so sums are
    the last element of a wrapping CumSum, products a Scan, and int64-sized
    max/min an ArgMax + GatherElements, one axis at a time (all exact)."""
    dtype = node.inputs[0].dtype
    axes, keepdims = _axes(ctx, node), int(node.attrs["keepdims"])
    onnx_op = REDUCE[node.op]
    if dtype.is_float:
        def reduce_float(v):
            y = ctx.op(onnx_op, v, axes, keepdims=keepdims)
            if onnx_op in ("ReduceMax", "ReduceMin"):
                compute = float_compute(dtype)
                y = where(ctx, _any_nan(ctx, v, axes, keepdims), ctx.const(np.nan, compute), y, compute)
            return y

        return in_f32(ctx, dtype, reduce_float, x)
    if onnx_op in ("ReduceMax", "ReduceMin") and compute_dtype(onnx_op, dtype) != I64:
        return kernel_op(ctx, onnx_op, dtype, x, extra=(axes,), keepdims=keepdims)
    reduce_axis = {"ReduceSum": _sum_axis, "ReduceProd": _prod_axis}.get(onnx_op, _extreme_axis)
    rank = node.inputs[0].rank  # each axis is reduced to size 1 in turn: the rank stays
    for axis in sorted(normalize_axis(a, rank, node.op) for a in (node.attrs["axes"] or range(rank))):
        x = reduce_axis(ctx, x, axis, rank, dtype, onnx_op)
    return x if keepdims else ctx.op("Squeeze", x, axes)


def _sum_axis(ctx, x, axis, rank, dtype, onnx_op):
    """Wrapping integer sum along ``axis`` (kept as size 1): the last element
    of CumSum over ``concat([0], x)`` (the 0 makes empty axes sum to 0)."""
    compute = dtype if has_kernel("CumSum", dtype) else I64
    v = x if compute == dtype else ctx.cast(x, compute)
    v = ctx.op("Concat", identity_slice(ctx, v, axis, compute, 0), v, axis=axis)
    total = _last(ctx, ctx.op("CumSum", v, ctx.const(axis, I64)), axis)
    return total if compute == dtype else ctx.cast(total, dtype)


def _prod_axis(ctx, x, axis, rank, dtype, onnx_op):
    """Wrapping integer product along ``axis`` (kept as size 1): the final
    state of a Scan multiplying in int64."""
    final, _ = scan(ctx, ctx.cast(x, I64), axis, rank, I64, 1, lambda acc, v: ctx.op("Mul", acc, v))
    return ctx.cast(ctx.op("Unsqueeze", final, ctx.const(np.array([axis]), I64)), dtype)


def _extreme_axis(ctx, x, axis, rank, dtype, onnx_op):
    """Integer max/min along ``axis`` (kept as size 1): GatherElements at
    the ArgMax/ArgMin index (order-preserving int64 for uint32/uint64)."""
    arg = "ArgMax" if onnx_op == "ReduceMax" else "ArgMin"
    index = kernel_op(ctx, arg, dtype, x, same_out=False, axis=axis, keepdims=1)
    return ctx.op("GatherElements", x, index, axis=axis)


def _last(ctx, x, axis):
    """``x[..., -1:, ...]`` along ``axis``."""
    return ctx.op("Slice", x, ctx.const(np.array([-1]), I64), ctx.const(np.array([INT64_MAX]), I64),
                  ctx.const(np.array([axis]), I64))


@emits("reduce_all", "reduce_any")
def reduce_logical(ctx, node, x):
    """``np.all``/``np.any`` of a bool tensor: Cast to uint8, ReduceMin/ReduceMax, Cast back
    (an empty reduction gives True/False as in NumPy)."""
    onnx_op = "ReduceMin" if node.op == "reduce_all" else "ReduceMax"
    y = ctx.op(onnx_op, ctx.cast(x, U8), _axes(ctx, node), keepdims=int(node.attrs["keepdims"]))
    return ctx.cast(y, B)


@emits("argmax", "argmin")
def arg_reduce(ctx, node, x):
    """``np.argmax``/``np.argmin``: ArgMax/ArgMin (first extreme index, int64).
    A NaN is the extreme, as in NumPy: where a lane holds a NaN the result
    is the index of its first NaN (onnxruntime skips NaN). bool goes through
    uint8, other missing int dtypes through int64 (order-preserving)."""
    dtype = node.inputs[0].dtype
    rank = node.inputs[0].rank
    attrs = dict(axis=normalize_axis(node.attrs["axis"], rank, node.op), keepdims=int(node.attrs["keepdims"]))
    onnx_op = "ArgMax" if node.op == "argmax" else "ArgMin"
    if not dtype.is_float:
        return kernel_op(ctx, onnx_op, dtype, x, same_out=False, **attrs)
    index = ctx.op(onnx_op, x, **attrs)
    nan = ctx.cast(ctx.op("IsNaN", x), U8)
    has_nan = ctx.cast(ctx.op("ReduceMax", nan, ctx.const(np.array([attrs["axis"]]), I64),
                              keepdims=attrs["keepdims"]), B)
    return ctx.op("Where", has_nan, ctx.op("ArgMax", nan, **attrs), index)


@emits("cumsum")
def cumsum(ctx, node, x):
    """``np.cumsum`` (inclusive): CumSum (ints through int64 where
    onnxruntime lacks the dtype; wrapping, exact). float16 accumulates
    step by step, rounding to float16 after each add, as NumPy does."""
    dtype, rank = node.inputs[0].dtype, node.inputs[0].rank
    axis = normalize_axis(node.attrs["axis"], rank, node.op)
    if dtype == F16:
        def add(acc, v):
            return in_f32(ctx, F16, lambda p, q: ctx.op("Add", p, q), acc, v)

        return scan(ctx, x, axis, rank, F16, -0.0, add)[1]
    return kernel_op(ctx, "CumSum", dtype, x, extra=(ctx.const(axis, I64),))


@emits("cumprod")
def cumprod(ctx, node, x):
    """``np.cumprod`` (inclusive), which ONNX lacks: a Scan along the axis
    carrying the running product (sequential, as NumPy multiplies). Ints
    multiply in wrapping int64 and Cast back (exact mod 2^w); float16
    rounds to float16 after each step, as NumPy does."""
    dtype, rank = node.inputs[0].dtype, node.inputs[0].rank
    axis = normalize_axis(node.attrs["axis"], rank, node.op)
    if dtype.is_int:
        y = scan(ctx, ctx.cast(x, I64), axis, rank, I64, 1, lambda acc, v: ctx.op("Mul", acc, v))[1]
        return ctx.cast(y, dtype)

    def mul(acc, v):
        return in_f32(ctx, dtype, lambda p, q: ctx.op("Mul", p, q), acc, v)

    return scan(ctx, x, axis, rank, dtype, 1, mul)[1]


def identity_slice(ctx, x, axis, dtype, value):
    """A tensor like ``x[..., :1, ...]`` (size 1 along ``axis``) filled with ``value``."""
    shape = ctx.op("Concat", ctx.op("Shape", x, end=axis), ctx.const(np.array([1]), I64),
                   ctx.op("Shape", x, start=axis + 1), axis=0)
    return ctx.op("ConstantOfShape", shape, value=oir.tensor(np.array([value], dtype.numpy)))


def scan(ctx, x, axis, rank, dtype, identity, step):
    """Inclusive scan of ``x`` (of ``dtype`` and ``rank``) along ``axis`` with
    ``acc = step(acc, x_i)`` starting from ``identity``, as an ONNX Scan.
    Returns ``(final accumulator (axis removed), all accumulators)``.

    onnxruntime's Scan dies with SIGFPE on zero iterations and on empty
    slices (another axis of length 0; fuzz seed 100253), so:

    - the scan runs over ``concat([identity], x)`` and drops the first
      result; ``step(identity, identity) == identity`` keeps values exact;
    - an ``If`` on ``Size(x) == 0`` skips the Scan for an empty ``x``: the
      final accumulator is ``identity`` over the other axes and the
      accumulators are ``x`` itself (empty).

    The body's values have their rank declared: onnxruntime's Scan needs it.
    """
    pad = identity_slice(ctx, x, axis, dtype, identity)
    init = ctx.op("Squeeze", pad, ctx.const(np.array([axis]), I64))
    empty = ctx.op("Equal", ctx.op("Size", x), ctx.const(np.array(0), I64))
    with ctx.body() as then_nodes:
        then_outs = [ctx.op("Identity", init), ctx.op("Identity", x)]
    with ctx.body() as else_nodes:
        padded = ctx.op("Concat", pad, x, axis=axis)
        with ctx.body() as body:
            acc_in = ctx.body_input("acc", dtype, [None] * (rank - 1))
            x_i = ctx.body_input("x_i", dtype, [None] * (rank - 1))
            acc_out = step(acc_in, x_i)
            y_i = ctx.op("Identity", acc_out)
        graph = ctx.subgraph(body, [acc_in, x_i], [acc_out, y_i], "scan_body")
        final, y = ctx.op("Scan", init, padded, num_outputs=2, body=graph, num_scan_inputs=1,
                          scan_input_axes=[axis], scan_output_axes=[axis])
        y = ctx.op("Slice", y, ctx.const(np.array([1]), I64), ctx.const(np.array([INT64_MAX]), I64),
                   ctx.const(np.array([axis]), I64))
        else_outs = [final, y]
    return ctx.op("If", empty, num_outputs=2,
                  then_branch=ctx.subgraph(then_nodes, [], then_outs, "then_branch"),
                  else_branch=ctx.subgraph(else_nodes, [], else_outs, "else_branch"))


@emits("sort")
def sort(ctx, node, x):
    """NumPy's stable ascending sort along ``axis`` and its permutation.

    ONNX TopK (opset 11+) with ``largest=0, sorted=1`` and k the axis length
    breaks ties by the lower index ("the element with the lower index will
    appear first"), so it is a stable sort, as onnxruntime implements it.
    Its order is undefined for NaN, so a float sort is two stable passes
    (least significant key first): TopK of ``x`` with NaN replaced by 0,
    then TopK of the permuted ``isnan(x)`` flags, which moves the NaNs last
    in index order, as ``np.sort`` does. The values are ``x`` gathered
    (GatherElements) by the permutation, so -0.0 and NaN payloads are kept.
    Dtypes without a TopK kernel go through an order-preserving cast
    (``common.to_compute``: bool to uint8, uint32/uint64 to int64).
    """
    dtype = node.inputs[0].dtype
    axis = normalize_axis(node.attrs["axis"], node.inputs[0].rank, "sort")
    k = ctx.op("Gather", ctx.op("Shape", x), ctx.const([axis], I64))

    def stable_argsort(key, key_dtype):
        compute = compute_dtype("TopK", key_dtype)
        _, perm = ctx.op("TopK", to_compute(ctx, key, key_dtype, compute, True), k, num_outputs=2,
                         axis=axis, largest=0, sorted=1)
        return perm

    if not dtype.is_float:
        perm = stable_argsort(x, dtype)
    else:
        nan = ctx.op("IsNaN", x)
        perm = stable_argsort(ctx.op("Where", nan, zero(ctx, dtype), x), dtype)
        flags = ctx.op("GatherElements", ctx.cast(nan, U8), perm, axis=axis)
        perm = ctx.op("GatherElements", perm, stable_argsort(flags, U8), axis=axis)
    return ctx.op("GatherElements", x, perm, axis=axis), perm


@emits("softmax", "log_softmax")
def softmax(ctx, node, x):
    """PyTensor Softmax/LogSoftmax along one axis. float32/float64: ONNX
    Softmax/LogSoftmax (opset 13+: a single axis), which subtract the max
    as PyTensor does; they agree with NumPy to rounding (float64
    LogSoftmax gets lanes whose max is NaN or infinite set to NaN, as in
    NumPy; the other kernels do that already). float16: NumPy
    rounds to float16 after every step, so the IR formula is emitted step
    by step, each op in float32 and rounded (``_softmax_f16``).

    Along an axis that is not the innermost one (some later dim is not 1),
    float32/float64 are the formula too (``_softmax_formula``):
    onnxruntime's Softmax/LogSoftmax transpose the axis inwards and back
    and run one short row at a time (YOLO's DFL softmax over 16 bins of a
    (1, 16, 4, 2100) tensor: 1.7 ms against 0.2 ms for the formula)."""
    dtype = node.inputs[0].dtype
    shape = node.inputs[0].shape
    axis = normalize_axis(node.attrs["axis"], node.inputs[0].rank, node.op)
    if dtype == F16:
        return _softmax_f16(ctx, x, axis, log=node.op == "log_softmax")
    if any(d != 1 for d in shape[axis + 1:]):
        return _softmax_formula(ctx, x, axis, log=node.op == "log_softmax")
    y = ctx.op("Softmax" if node.op == "softmax" else "LogSoftmax", x, axis=axis)
    if node.op == "softmax" or dtype != F64:
        return y
    # a lane whose max is NaN or +/-inf is all NaN in NumPy (x - max is NaN
    # somewhere, so is the sum); onnxruntime's float64 LogSoftmax keeps -inf
    # there (its float32 kernels and Softmax agree with NumPy)
    top = ctx.op("ReduceMax", x, ctx.const(np.array([axis]), I64), keepdims=1)
    bad = ctx.op("Or", ctx.op("IsNaN", top), ctx.op("IsInf", top))
    bad = ctx.op("Or", bad, _any_nan(ctx, x, ctx.const(np.array([axis]), I64), 1))
    return ctx.op("Where", bad, ctx.const(np.nan, dtype), y)


def _softmax_formula(ctx, x, axis, log):
    """``e = exp(x - max); e / sum(e)`` or ``z = x - max; z - log(sum(exp(z)))``
    along ``axis``, the formula PyTensor's Softmax/LogSoftmax compute, in the
    input's dtype (float32/float64), so NaN, +inf and -inf land where NumPy
    puts them: a lane holding NaN or +inf, or only -inf, has a NaN in
    ``x - max`` (whatever ReduceMax does with NaN), so its sum and every
    element are NaN; a -inf element gives 0 (-inf for log). Values: within
    the softmax bound of the numerics contract (Exp/Log within 4 ulp, a sum
    of positive terms)."""
    axes = ctx.const(np.array([axis]), I64)
    z = ctx.op("Sub", x, ctx.op("ReduceMax", x, axes, keepdims=1))
    e = ctx.op("Exp", z)
    total = ctx.op("ReduceSum", e, axes, keepdims=1)
    return ctx.op("Sub", z, ctx.op("Log", total)) if log else ctx.op("Div", e, total)


def _softmax_f16(ctx, x, axis, log):
    """``e = exp(x - max); e / sum(e)`` or ``z = x - max; z - log(sum(exp(z)))``
    with a float16 rounding after each op, as NumPy evaluates them (each op
    computes in float32; the sum accumulates in float32 as NumPy's float16
    sum does)."""
    def rounded(v):
        return ctx.cast(ctx.cast(v, F16), F32)

    axes = ctx.const(np.array([axis]), I64)
    xf = ctx.cast(x, F32)
    top = ctx.op("ReduceMax", xf, axes, keepdims=1)
    top = ctx.op("Where", _any_nan(ctx, xf, axes, 1), ctx.const(np.nan, F32), top)
    z = rounded(ctx.op("Sub", xf, top))
    e = rounded(ctx.op("Exp", z))
    total = rounded(ctx.op("ReduceSum", e, axes, keepdims=1))
    y = ctx.op("Sub", z, rounded(ctx.op("Log", total))) if log else ctx.op("Div", e, total)
    return ctx.cast(y, F16)


@emits("matmul")
def matmul(ctx, node, a, b):
    """``np.matmul``: MatMul (NumPy's 1-D and batch rules). Ints onnxruntime
    lacks (int8/16, uint8/16) multiply in wrapping int64 and Cast back
    (exact); float16 accumulates in float32 and rounds once, as NumPy's
    float16 matmul loop does.

    A float64 matrix-vector product is rewritten into the forms onnxruntime
    runs fast (its float64 MatMul of a tall matrix by a vector is ~100x
    slower than NumPy): see ``_f64_matrix_vector``."""
    dtype = node.inputs[0].dtype
    if dtype == F64 and sorted(v.rank for v in node.inputs) == [1, 2]:
        return _f64_matrix_vector(ctx, node, a, b)
    if node.inputs[1].rank == 1 and node.inputs[0].rank >= 2 and a.producer() is not None:
        return _matrix_by_column(ctx, dtype, a, b)
    return in_f32(ctx, dtype, lambda p, q: kernel_op(ctx, "MatMul", float_compute(dtype), p, q), a, b)


def _matrix_by_column(ctx, dtype, a, v):
    """``a @ v`` for a computed ``a`` (rank >= 2) and a vector ``v``, as
    ``(a @ v[:, None])[..., 0]``: the same products and sums.

    onnxruntime's ``MatmulTransposeFusion`` (ORT_ENABLE_ALL) folds a
    ``Transpose`` feeding MatMul's first input into ``FusedMatMul``, which
    gives wrong numbers when the second input is 1-D (onnxruntime 1.32:
    ``Transpose(A) @ v`` returned ``[0, 0]`` for ``[-18, 0]``; fuzz seeds
    1175, 100649); with a ``(K, 1)`` column it is right. Unsqueeze and
    Squeeze are views in onnxruntime."""
    last = ctx.const(np.array([-1]), I64)
    column = ctx.op("Unsqueeze", v, last)
    product = in_f32(ctx, dtype, lambda p, q: kernel_op(ctx, "MatMul", float_compute(dtype), p, q), a, column)
    return ctx.op("Squeeze", product, last)


def _f64_matrix_vector(ctx, node, a, b):
    """``A @ v`` (A ``(M, K)``) or ``v @ B`` (= ``B.T @ v``) in float64 as
    ``(v[None, :] @ A.T)[0]`` when A is tall (M >= K or M unknown) and
    ``reduce_sum(A * v, axis=-1)`` when it is wide: the same dot products,
    summed in another order (as any BLAS may), with MatMul's NaN/Inf
    behaviour. The transposes of initializers (a model's data) are folded
    by onnxruntime when the session is created."""
    if node.inputs[0].rank == 2:
        mat, vec, (m, k) = a, b, node.inputs[0].shape
        mat_t = None
    else:
        vec, mat_t, (k, m) = a, b, node.inputs[1].shape
        mat = None
    tall = not (isinstance(m, int) and isinstance(k, int)) or m >= k
    zero = ctx.const(np.array([0]), I64)
    if tall:
        if mat_t is None:
            mat_t = ctx.op("Transpose", mat, perm=[1, 0])
        row = ctx.op("Unsqueeze", vec, zero)
        return ctx.op("Squeeze", ctx.op("MatMul", row, mat_t), zero)
    if mat is None:
        mat = ctx.op("Transpose", mat_t, perm=[1, 0])
    return ctx.op("ReduceSum", ctx.op("Mul", mat, vec), ctx.const(np.array([1]), I64), keepdims=0)
