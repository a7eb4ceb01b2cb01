"""Lowering of ``ScalarLoop`` (``pytensor.scalar.loop``) applied elementwise:
an IR ``loop`` (ONNX Loop) over whole tensors with a per-element step count.

PyTensor's ``perform``, per element::

    until = False
    for i in range(n_steps):
        *carry, [until] = fn(*carry, *constant)
        if until: break          # while loops only
    return *carry, [until]

Every element may have its own ``n_steps`` and stop at its own step, so the
loop runs up to the largest ``n_steps`` and an element's state moves only
while it is *active* (``i < n_steps`` and not yet done); the loop stops as
soon as no element is active. The body is the inner scalar graph lowered
by the same scalar rules on tensors, so each step computes exactly what
the ``Elemwise`` of the inner graph would. A negative ``n_steps`` without
an ``until`` runs no step (PyTensor raises). With no step run, ``until``
is false as in ``perform`` (PyTensor 2.38's C code, and the docstring's
pseudocode, say true).
"""

from __future__ import annotations

from pytensor.scalar.loop import ScalarLoop

from compiler.lowering.bodies import Body
from compiler.lowering.context import LoweringContext, ir_dtype
from compiler.lowering.rules.scalar_ops import broadcast_against, lower_scalar_graph, scalar_rule
from ir import DType, TensorType, Value

I64, BOOL = DType.INT64, DType.BOOL


@scalar_rule(ScalarLoop)
def lower_scalar_loop(ctx: LoweringContext, node, args: list[Value]) -> list[Value]:
    """``ScalarLoop(n_steps, *init, *constant)`` -> ``*final[, until]`` (see
    the module docstring), every input broadcast to the common shape."""
    op = node.op
    n_update = len(op.outputs) - (1 if op.is_while else 0)
    steps = ctx.cast(broadcast_against(ctx, args[0], args[1:]), I64)
    init = [broadcast_against(ctx, a, args) for a in args[1:1 + n_update]]
    constants = args[1 + n_update:]
    # trip count: the largest n_steps (0 when there are no elements)
    flat = ctx.add("concat", [ctx.i64([0]), ctx.add("reshape", [steps, ctx.i64([-1])])], {"axis": 0})
    trips = ctx.add("reduce_max", [flat], {"axes": (0,), "keepdims": False})
    done0 = ctx.add("ne", [steps, steps])  # all false, of the common shape

    body = Body(ctx, "scalar_loop")
    b = body.ctx
    i = body.input(TensorType(I64, ()), "i")
    carry = [body.input(v.type, f"carry{k}") for k, v in enumerate(init)]
    done = body.input(done0.type, "done")
    inner_constants = [body.input(v.type, f"const{k}") for k, v in enumerate(constants)]
    n = body.input(steps.type, "n_steps")
    active = b.add("and", [b.add("lt", [i, n]), b.add("invert", [done])])
    new = lower_scalar_graph(b, op.fgraph.inputs, op.fgraph.outputs, carry + inner_constants)
    next_carry = [b.add("where", [active, b.cast(v, c.dtype), c]) for v, c in zip(new[:n_update], carry)]
    next_done = b.add("where", [active, new[n_update], done]) if op.is_while else done
    more = b.add("and", [b.add("lt", [b.add("add", [i, b.scalar(1, I64)]), n]), b.add("invert", [next_done])])
    keep_going = b.add("reduce_any", [more], {"axes": (), "keepdims": False})
    graph = body.finish([keep_going, *next_carry, next_done])

    loop = ctx.graph.create_node("loop", [trips, *init, done0, *constants, steps],
                                 {"num_carried": n_update + 1, "has_condition": True}, subgraphs={"body": graph})
    loop.origins = ctx.origins
    ctx.graph.append(loop)
    finals = list(loop.outputs[:n_update])
    results = [ctx.cast(v, ir_dtype(out)) for v, out in zip(finals, node.outputs)]
    if op.is_while:
        results.append(loop.outputs[n_update])
    return results
