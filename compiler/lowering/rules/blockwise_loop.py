"""The general lowering of ``Blockwise(core_op)`` for a core op that has a
lowering of its own but no batched rule (``linalg.BLOCKWISE_RULES``): an IR
``loop`` over the broadcast batch, whose body is the core op lowered on one
batch element (``ARange``, ``AllocDiag`` and every other core op).

``Blockwise`` (``pytensor.tensor.blockwise``) applies its core op to each
element of the broadcast batch dims and stacks the results (``perform``
loops over ``np.ndindex(batch_shape)``), so the core outputs of all batch
elements must have one shape. The lowering:

0. passes inputs that are constants with batch dims of 1 to the core op
   as constants (a constant axis or step stays constant for its rule),
1. broadcasts every other input's batch dims against every other input's (ONNX
   ``Expand`` is bidirectional: ``expand(x, concat(batch_shape(y), 1...))``),
2. flattens the batch dims into one axis of ``N = prod(batch)`` elements,
3. runs ``loop(N)``: the body gathers element ``i`` of every input, binds it
   to a fresh PyTensor variable of the core type and lowers
   ``core_op.make_node(...)`` with the ordinary rules (``bodies.Body``); the
   loop stacks the per-element results on a new axis 0,
4. reshapes each stacked result to ``batch + core_out_shape``.

Exactly the core op's semantics per element, so exactly ``Blockwise``'s.
With a static batch of at most ``scan-unroll``'s trip count the loop is
unrolled by that pass, so the other passes see through it.
"""

from __future__ import annotations

from pytensor.tensor.basic import constant
from pytensor.tensor.type import TensorType as PtTensorType

from compiler.lowering.bodies import Body
from compiler.lowering.context import LoweringContext
from compiler.lowering.rules.scalar_ops import shape_of
from ir import DType, TensorType, Value


def _batch_shape(ctx: LoweringContext, x: Value, nb: int, core: int) -> Value:
    """``shape(x)[:nb]`` followed by ``core`` ones: the shape that broadcasts
    another input's batch dims against ``x``'s."""
    shape = ctx.add("slice", [shape_of(ctx, x), ctx.i64([0]), ctx.i64([nb]), ctx.i64([1])], {"axes": [0]})
    return ctx.add("concat", [shape, ctx.i64([1] * core)], {"axis": 0}) if core else shape


def _core_constant(ctx: LoweringContext, var, nb: int):
    """A PyTensor constant of ``var``'s core value when ``var`` is constant
    and its batch dims are all 1 (the same for every batch element; passed
    to the core op as a constant so its rule sees it: a constant axis, a
    constant step), else None."""
    value = ctx.constant_value(var)
    if value is None or any(d != 1 for d in value.shape[:nb]):
        return None
    return constant(value.reshape(value.shape[nb:]))


def _covers(batch: tuple, other: tuple) -> bool:
    """Whether broadcasting batch dims ``batch`` against ``other`` surely
    leaves them unchanged (equal dims, or 1s in ``other``)."""
    return all(b == 1 or a == b for a, b in zip(batch, other))


def broadcast_batches(ctx: LoweringContext, xs: list[Value], nb: int, core_ndims: list[int]) -> list[Value]:
    """``xs`` (each with ``nb`` leading batch dims, then ``core_ndims[k]``
    core dims) with their batch dims broadcast against each other, as
    ``Blockwise`` broadcasts them (NumPy's rules; ONNX ``Expand`` is
    bidirectional: ``expand(x, concat(batch_shape(y), 1...))`` for each other
    input ``y`` whose batch dims could change ``x``'s)."""
    out = list(xs)
    for i in range(len(xs)):
        for j in range(len(xs)):
            if j != i and not _covers(out[i].shape[:nb], xs[j].shape[:nb]):
                out[i] = ctx.add("expand", [out[i], _batch_shape(ctx, xs[j], nb, core_ndims[i])])
    return out


def lower_blockwise_loop(ctx: LoweringContext, node) -> list[Value]:
    """``Blockwise(core_op)(*inputs)`` as a ``loop`` over the flattened
    broadcast batch (module docstring); any dtype, any number of outputs.

    Raises:
        Unsupported: the core op cannot be lowered (raised while lowering
            the body, naming the core op's failure).
    """
    op = node.op
    core_ndims = [len(sig) for sig in op.inputs_sig]
    nb = node.outputs[0].type.ndim - len(op.outputs_sig[0])
    fixed = [_core_constant(ctx, v, nb) for v in node.inputs]
    looped = [k for k, f in enumerate(fixed) if f is None] or [0]
    xs = dict(zip(looped, broadcast_batches(ctx, [ctx.get(node.inputs[k]) for k in looped], nb,
                                            [core_ndims[k] for k in looped])))
    first = xs[looped[0]]
    batch = ctx.add("slice", [shape_of(ctx, first), ctx.i64([0]), ctx.i64([nb]), ctx.i64([1])], {"axes": [0]})
    count = ctx.add("reduce_prod", [batch], {"axes": [0], "keepdims": True})  # i64[1]
    flat = {}
    for k, x in xs.items():
        core_shape = ctx.add("slice", [shape_of(ctx, x), ctx.i64([nb]), ctx.i64([nb + core_ndims[k]]),
                                       ctx.i64([1])], {"axes": [0]})
        flat[k] = ctx.add("reshape", [x, ctx.add("concat", [count, core_shape], {"axis": 0})])

    body = Body(ctx, "blockwise")
    i = body.input(TensorType(DType.INT64, ()), "i")
    core_inputs, dummies = [], []
    for k, var in enumerate(node.inputs):
        if k not in flat:
            core_inputs.append(fixed[k])
            continue
        element = body.ctx.add("gather", [body.input(flat[k].type, var.name or "x"), i], {"axis": 0})
        c = core_ndims[k]
        dummy = PtTensorType(var.type.dtype, shape=var.type.shape[var.type.ndim - c:] if c else ())()
        body.ctx.values[dummy] = element
        core_inputs.append(dummy)
        dummies.append(dummy)
    core_node = op.core_op.make_node(*core_inputs)
    results = body.lower(dummies, core_node.outputs, f"Blockwise of {op.core_op}")
    loop = ctx.graph.create_node("loop", [ctx.add("squeeze", [count], {"axes": [0]}), *flat.values()],
                                 {"num_carried": 0, "has_condition": False},
                                 subgraphs={"body": body.finish(results)})
    loop.origins = ctx.origins
    ctx.graph.append(loop)
    outs = []
    for stacked in loop.outputs:
        rest = ctx.add("slice", [shape_of(ctx, stacked), ctx.i64([1]), ctx.i64([stacked.rank]), ctx.i64([1])],
                       {"axes": [0]})
        outs.append(ctx.add("reshape", [stacked, ctx.add("concat", [batch, rest], {"axis": 0})]))
    return outs
