"""Lowering of reductions and scans: ``CAReduce`` (Sum, Prod, Max, Min, All,
Any, ProdWithoutZeros), ``Argmax``, ``Softmax``/``LogSoftmax`` (PyTensor 2's
COps and PyTensor 3's symbolic ops), ``SoftmaxGrad`` and ``CumOp``."""

from __future__ import annotations

import numpy as np
import pytensor.scalar as ps
from pytensor.graph.traversal import ancestors
from pytensor.tensor import special
from pytensor.tensor.elemwise import CAReduce
from pytensor.tensor.extra_ops import CumOp
from pytensor.tensor.math import Argmax, MulWithoutZeros

from compiler.lowering.bodies import Body
from compiler.lowering.errors import Unsupported
from compiler.lowering.compat import SOFTMAX_OVER_LENGTH_ONE, SoftmaxGrad, inner_graph
from compiler.lowering.context import LoweringContext, ir_dtype
from compiler.lowering.registry import find_in_mro, lowers
from compiler.lowering.rules.graph_ops import lower_op_from_graph
from compiler.lowering.rules.scalar_ops import lower_scalar_graph, shape_of
from ir import DType, TensorType, Value
from ir.ops.shape import INT64_MAX

BOOL = DType.BOOL

# Scalar op of a CAReduce -> IR reduction.
REDUCERS = {
    ps.Add: "reduce_sum",
    ps.Mul: "reduce_prod",
    ps.Maximum: "reduce_max",
    ps.Minimum: "reduce_min",
    ps.AND: "reduce_all",  # on bools; on ints a pairwise fold of "and" (_bitwise_fold)
    ps.OR: "reduce_any",
}
# Bitwise reductions (ONNX has BitwiseAnd/Or/Xor, no reduction): elementwise IR op, identity.
BITWISE = {ps.AND: ("and", -1), ps.OR: ("or", 0), ps.XOR: ("xor", 0)}
EXACT_IN_ANY_DTYPE = {"reduce_max", "reduce_min", "reduce_all", "reduce_any"}
ON_BOOL = {"reduce_max": "reduce_any", "reduce_min": "reduce_all"}  # np.max of bools is any


@lowers(CAReduce)
def lower_careduce(ctx: LoweringContext, node) -> list[Value]:
    """``CAReduce{scalar_op, axis, dtype, acc_dtype}`` (``pytensor.tensor.elemwise``).

    PyTensor's ``perform``: cast the input to ``acc_dtype``, reduce with the
    scalar op's ufunc over ``axis`` (None: every axis), cast to the output
    dtype. Max/Min/All/Any are exact in any dtype, so they reduce in the input
    dtype; Sum/Prod go through the accumulator (float32 sums in float64).
    ``ProdWithoutZeros`` multiplies the nonzero entries (0 when all are zero).

    Bitwise AND/OR of ints and XOR of ints or bools (``np.bitwise_and.reduce``
    ...) fold pairwise in the input dtype (``_bitwise_fold``; PyTensor
    accumulates in int64/uint64 and casts back, which keeps the same low bits).

    Raises:
        Unsupported: other scalar ops, or Max/Min over an axis statically of length 0 (PyTensor raises;
            over a symbolic axis that is 0 at run time the model returns
            -inf/+inf or the integer extremes, the known differences, docs/status.md).
    """
    op = node.op
    x = ctx.get(node.inputs[0])
    out = ir_dtype(node.outputs[0])
    acc = DType.from_numpy(op.acc_dtype) if op.acc_dtype is not None else out
    axes = tuple(range(x.rank)) if op.axis is None else tuple(op.axis)
    scalar_op = op.scalar_op
    if isinstance(scalar_op, ps.Composite):
        x, scalar_op = _unfuse(ctx, scalar_op, x)
    if isinstance(scalar_op, MulWithoutZeros):
        return [ctx.cast(_prod_without_zeros(ctx, ctx.cast(x, acc), axes), out)]
    bitwise = find_in_mro(BITWISE, scalar_op)
    if bitwise is not None and (x.dtype != BOOL or bitwise[0] == "xor"):
        return [ctx.cast(_bitwise_fold(ctx, x, axes, *bitwise), out)]
    reducer = find_in_mro(REDUCERS, scalar_op)
    if reducer is None:
        raise Unsupported(f"reduction with scalar op {scalar_op} has no IR equivalent")
    if reducer in ("reduce_max", "reduce_min") and any(x.type.shape[a] == 0 for a in axes):
        raise Unsupported(f"{scalar_op} over an empty axis: PyTensor raises (a zero-size reduction "
                          "with no identity)")
    if reducer in ("reduce_all", "reduce_any"):
        acc = BOOL
    elif reducer in EXACT_IN_ANY_DTYPE:
        acc = x.dtype
        if acc == BOOL:
            reducer = ON_BOOL[reducer]
    elif acc == BOOL:
        raise Unsupported(f"{scalar_op} reduction with a bool accumulator")
    value = ctx.cast(x, acc)
    if axes:  # CAReduce over no axes only casts
        value = ctx.add(reducer, [value], {"axes": axes, "keepdims": False})
    return [ctx.cast(value, out)]


def _unfuse(ctx: LoweringContext, composite, x: Value):
    """Split a fused reduction's scalar op (PyTensor 2.38's ``local_careduce_fusion``
    builds ``Composite{(acc, x) -> [cast](reduce_op(acc, f(x)))}`` with ``reduce_op``
    Add or Mul) into ``(f(x) lowered elementwise, reduce_op)``: reducing
    ``f(x)`` from the op's identity is what the fused loop computes.

    Raises:
        Unsupported: a Composite of another shape.
    """
    fg = composite.fgraph
    acc_var, elem_var = fg.inputs if len(fg.inputs) == 2 else (None, None)
    (result,) = fg.outputs
    if result.owner is not None and isinstance(result.owner.op, ps.Cast):
        result = result.owner.inputs[0]
    top = result.owner
    if (acc_var is None or top is None or not isinstance(top.op, (ps.Add, ps.Mul)) or len(top.inputs) != 2
            or top.inputs[0] is not acc_var or acc_var in ancestors([top.inputs[1]])):
        raise Unsupported(f"reduction with scalar op {composite} is not an elementwise map followed by "
                          "a sum or product")
    (elem,) = lower_scalar_graph(ctx, [elem_var], [top.inputs[1]], [x])
    return elem, top.op


def _bitwise_fold(ctx: LoweringContext, x: Value, axes: tuple, op: str, identity: int) -> Value:
    """``np.bitwise_and/or/xor.reduce(x, axis=axes)`` for an int or bool ``x``
    of any shape: the result has ``x``'s dtype and its shape without ``axes``
    (no axes: ``x`` itself; an empty reduction: ``identity``, all bits set
    (-1 cast to the dtype) for AND, 0 for OR/XOR).

    The reduced axes are moved last and flattened to one of length N, then
    folded pairwise in a halving tree (ONNX opset 18 has the elementwise
    BitwiseAnd/Or/Xor but no bitwise reduction): a step combines the first
    floor(m/2) entries with the next floor(m/2) and keeps the odd one out,
    ``concat(op(x[:h], x[h:2h]), x[2h:])``, so ceil(log2 N) steps leave one
    entry (the operations are associative and commutative, so the result is
    exact). A static N is unrolled; a symbolic N runs the step in a ``loop``
    that stops when one entry is left, and the identity is combined with the
    last entry so that N = 0 gives the identity.
    """
    if not axes:
        return x
    keep = [a for a in range(x.rank) if a not in axes]
    if keep + list(axes) != list(range(x.rank)):
        x = ctx.add("transpose", [x], {"perm": keep + list(axes)})
    kept = len(keep)
    lengths = [x.shape[a] for a in range(kept, x.rank)]
    if all(isinstance(d, int) for d in lengths):
        length = int(np.prod(lengths, dtype=np.int64))
        n = ctx.i64([length])
    else:
        length = None
        n = ctx.add("reduce_prod", [_dims(ctx, x, range(kept, x.rank))], {"axes": (0,), "keepdims": True})
    flat = ctx.add("reshape", [x, ctx.add("concat", [_dims(ctx, x, range(kept)), n], {"axis": 0})])
    one = ctx.const(np.array(identity).astype(x.dtype.numpy))  # -1 wraps to all bits set
    if length is not None:  # unrolled
        if length == 0:
            return ctx.add("expand", [one, _dims(ctx, x, range(kept))])
        while length > 1:
            half = length // 2
            flat = _fold_step(ctx, flat, op, ctx.i64([half]), ctx.i64([2 * half]), ctx.i64([length]))
            length -= half
        return ctx.add("squeeze", [flat], {"axes": [kept]})
    body = Body(ctx, "fold")
    body.input(TensorType(DType.INT64, ()), "i")
    state = body.input(TensorType(flat.dtype, flat.shape[:kept] + (None,)), "state")
    bctx = body.ctx
    m = bctx.add("gather", [bctx.add("shape", [state]), bctx.i64([kept])], {"axis": 0})
    half = bctx.add("floor_div", [m, bctx.i64([2])])
    nxt = _fold_step(bctx, state, op, half, bctx.add("mul", [half, bctx.i64([2])]), m)
    more = bctx.add("gt", [bctx.add("sub", [m, half]), bctx.i64([1])])
    more = bctx.add("squeeze", [more], {"axes": [0]})
    loop = ctx.graph.create_node("loop", [ctx.scalar(64, DType.INT64), flat],
                                 {"num_carried": 1, "has_condition": True},
                                 subgraphs={"body": body.finish([more, nxt])})
    loop.origins = ctx.origins
    ctx.graph.append(loop)
    (folded,) = loop.outputs
    last = ctx.add("slice", [folded, ctx.i64([-1]), ctx.i64([INT64_MAX]), ctx.i64([1])], {"axes": [kept]})
    ident = ctx.add("expand", [one, ctx.add("concat", [_dims(ctx, x, range(kept)), ctx.i64([1])], {"axis": 0})])
    last = ctx.add("concat", [last, ident], {"axis": kept})  # (..., 1) or (..., 2) when N = 0
    first = ctx.add("slice", [last, ctx.i64([0]), ctx.i64([1]), ctx.i64([1])], {"axes": [kept]})
    second = ctx.add("slice", [last, ctx.i64([-1]), ctx.i64([INT64_MAX]), ctx.i64([1])], {"axes": [kept]})
    return ctx.add("squeeze", [ctx.add(op, [first, second])], {"axes": [kept]})


def _fold_step(ctx: LoweringContext, x: Value, op: str, half: Value, pairs: Value, length: Value) -> Value:
    """One halving step of ``_bitwise_fold`` on the last axis of ``x``:
    ``concat(op(x[..., :half], x[..., half:pairs]), x[..., pairs:length])``
    (``half``, ``pairs`` = 2 half, ``length`` as ``i64[1]``)."""
    axis = [x.rank - 1]
    zero, step = ctx.i64([0]), ctx.i64([1])
    low = ctx.add("slice", [x, zero, half, step], {"axes": axis})
    high = ctx.add("slice", [x, half, pairs, step], {"axes": axis})
    rest = ctx.add("slice", [x, pairs, length, step], {"axes": axis})
    return ctx.add("concat", [ctx.add(op, [low, high]), rest], {"axis": x.rank - 1})


def _prod_without_zeros(ctx: LoweringContext, x: Value, axes: tuple) -> Value:
    # MulWithoutZeros reduces with identity 0: product of the nonzero entries, 0 if there are none.
    zero, one = ctx.scalar(0, x.dtype), ctx.scalar(1, x.dtype)
    if not axes:
        return x
    nonzero = ctx.add("ne", [x, zero])
    attrs = {"axes": axes, "keepdims": False}
    prod = ctx.add("reduce_prod", [ctx.add("where", [nonzero, x, one])], attrs)
    return ctx.add("where", [ctx.add("reduce_any", [nonzero], attrs), prod, zero])


@lowers(Argmax)
def lower_argmax(ctx: LoweringContext, node) -> list[Value]:
    """``Argmax{axis}`` (``pytensor.tensor.math``): int64 index of the first
    maximum over ``axis`` (None: all axes). Several axes count in row-major
    order over the reduced axes, as PyTensor's ``perform`` does by moving them
    last and flattening them."""
    x = ctx.get(node.inputs[0])
    axes = tuple(range(x.rank)) if node.op.axis is None else tuple(sorted(node.op.axis))
    if not axes:  # argmax over a single element (or none): index 0 everywhere
        return [ctx.add("expand", [ctx.scalar(0, DType.INT64), shape_of(ctx, x)])]
    if len(axes) == 1:
        return [ctx.add("argmax", [x], {"axis": axes[0], "keepdims": False})]
    keep = [a for a in range(x.rank) if a not in axes]
    perm = keep + list(axes)
    if perm != list(range(x.rank)):
        x = ctx.add("transpose", [x], {"perm": perm})
    kept_shape = _dims(ctx, x, range(len(keep)))
    flat = ctx.add("reshape", [x, ctx.add("concat", [kept_shape, ctx.i64([-1])], {"axis": 0})])
    return [ctx.add("argmax", [flat], {"axis": len(keep), "keepdims": False})]


def _dims(ctx: LoweringContext, x: Value, axes) -> Value:
    """The sizes of ``x`` along ``axes`` as an i64[k] value (constant when static)."""
    axes = list(axes)
    sizes = [x.shape[a] for a in axes]
    if all(isinstance(d, int) for d in sizes):
        return ctx.i64(sizes)
    return ctx.add("gather", [ctx.add("shape", [x]), ctx.i64(axes)], {"axis": 0})


# -- softmax -------------------------------------------------------------
def _softmax_rule(ir_op: str):
    def rule(ctx: LoweringContext, node) -> list[Value]:
        axis = node.op.axis
        if isinstance(axis, tuple) and len(axis) == 1:
            axis = axis[0]
        x = ctx.get(node.inputs[0])
        static = node.inputs[0].type.shape
        if SOFTMAX_OVER_LENGTH_ONE is not None and x.dtype.is_float and (
                all(s == 1 for s in static) if axis is None
                else isinstance(axis, int) and static[axis] == 1):
            fill = ctx.const(np.array(SOFTMAX_OVER_LENGTH_ONE[ir_op], dtype=x.dtype.numpy))
            return [ctx.add("expand", [fill, shape_of(ctx, x)])]
        if isinstance(axis, tuple) or not x.dtype.is_float:
            if inner_graph(node.op) is not None:  # PyTensor 3: the op's own graph defines it
                return lower_op_from_graph(ctx, node)
            raise Unsupported(f"{node.op} of {x.dtype}: PyTensor 2 declares an {x.dtype} result, but its Python "
                              "perform returns SciPy's float16/float64 softmax (uint inputs wrap in x - max; bool "
                              "raises) and its C code raises 'not a float': no value has the declared type")
        if axis is not None:
            return [ctx.add(ir_op, [x], {"axis": axis})]
        flat = ctx.add("reshape", [x, ctx.i64([-1])])
        return [ctx.add("reshape", [ctx.add(ir_op, [flat], {"axis": 0}), shape_of(ctx, x)])]

    rule.__name__ = f"lower_{ir_op}"
    rule.__doc__ = f"""``{ir_op}`` over ``axis`` (``pytensor.tensor.special``): max-subtracted,
        as in PyTensor. ``axis=None`` normalizes over all entries (flatten,
        {ir_op}, reshape back). PyTensor 3's multi-axis form, and integer
        inputs, inline the op's own graph; its softmax over an axis of static
        length 1 is the constant its rewrites make of it in every mode
        (``compat.SOFTMAX_OVER_LENGTH_ONE``: 1 and -0.0, NaN and inf
        inputs included)."""
    return rule


lower_softmax = lowers(special.Softmax)(_softmax_rule("softmax"))
lower_log_softmax = lowers(special.LogSoftmax)(_softmax_rule("log_softmax"))

if SoftmaxGrad is not None:  # PyTensor 2.x only

    @lowers(SoftmaxGrad)
    def lower_softmax_grad(ctx: LoweringContext, node) -> list[Value]:
        """``SoftmaxGrad{axis}(dy, sm)`` (PyTensor 2): ``dy*sm - sum(dy*sm, axis,
        keepdims) * sm``, as its ``perform`` computes."""
        dy, sm = (ctx.get(v) for v in node.inputs)
        axis = node.op.axis
        dy_sm = ctx.add("mul", [dy, sm])
        axes = () if axis is None else (axis,)
        total = ctx.add("reduce_sum", [dy_sm], {"axes": axes, "keepdims": True})
        return [ctx.add("sub", [dy_sm, ctx.add("mul", [total, sm])])]


# -- scans ---------------------------------------------------------------
@lowers(CumOp)
def lower_cumop(ctx: LoweringContext, node) -> list[Value]:
    """``CumOp{axis, mode}`` (``pytensor.tensor.extra_ops``): inclusive
    ``np.cumsum`` / ``np.cumprod`` along ``axis``, in the input dtype.

    Of bool, PyTensor's output type is bool, NumPy's result (int64 counts or
    products) converted to it, as PyTensor's C backend stores it: a running
    OR (``cumsum``) or AND (``cumprod``), computed as the int64 scan
    compared with 0. (PyTensor's Python ``perform`` and 3.0's Numba backend
    return the int64 array itself, against the declared type.)
    """
    x = ctx.get(node.inputs[0])
    ir_op = {"add": "cumsum", "mul": "cumprod"}[node.op.mode]
    if x.dtype == BOOL:
        scan = ctx.add(ir_op, [ctx.cast(x, DType.INT64)], {"axis": node.op.axis})
        return [ctx.add("ne", [scan, ctx.scalar(0, DType.INT64)])]
    return [ctx.add(ir_op, [x], {"axis": node.op.axis})]

