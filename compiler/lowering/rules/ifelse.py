"""Lowering of PyTensor's ``IfElse`` (``pytensor.ifelse``) to the IR ``if``
(``ir/ops/control_flow.py``).

``IfElse(n_outs)(cond, *then_values, *else_values)`` returns the then
values when ``cond != 0``, else the else values (``IfElse.make_thunk``),
computing only the chosen branch's inputs under a lazy linker. Lowering
builds an ``if`` whose branches return their values, captured from the
outer graph (each distinct value once); the ``if-sinking`` pass then moves
what only one branch needs into that branch, so the emitted ONNX If
computes it lazily, and ``if-to-where`` turns an ``if`` with cheap,
shape-compatible branches into ``where``.
"""

from __future__ import annotations

from importlib import import_module

from compiler.lowering.errors import Unsupported
from compiler.lowering.bodies import Body
from compiler.lowering.context import LoweringContext
from compiler.lowering.registry import lowers
from ir import DType, Value

# ``pytensor.ifelse`` the module (the package re-exports a function of that name)
IfElse = import_module("pytensor.ifelse").IfElse


@lowers(IfElse)
def lower_ifelse(ctx: LoweringContext, node) -> list[Value]:
    """``IfElse``: an ``if`` on ``cond != 0`` (``cond`` itself when bool).

    Returns:
        One IR value per output.

    Raises:
        Unsupported: a condition that is not a scalar.
    """
    k = node.op.n_outs
    cond = ctx.get(node.inputs[0])
    if cond.rank != 0:
        raise Unsupported(f"IfElse condition of rank {cond.rank} (must be a scalar)")
    if cond.dtype != DType.BOOL:
        cond = ctx.add("ne", [cond, ctx.scalar(0, cond.dtype)])
    then_values = [ctx.get(v) for v in node.inputs[1:1 + k]]
    else_values = [ctx.get(v) for v in node.inputs[1 + k:]]
    captured = list(dict.fromkeys(then_values + else_values))
    subgraphs = {}
    for role, values in (("then", then_values), ("else", else_values)):
        body = Body(ctx, f"if_{role}")
        inputs = {v: body.input(v.type, v.name or "x") for v in captured}
        subgraphs[role] = body.finish([inputs[v] for v in values])
    out = ctx.graph.create_node("if", [cond, *captured], subgraphs=subgraphs,
                                output_names=[v.name for v in node.outputs])
    out.origins = ctx.origins
    ctx.graph.append(out)
    return list(out.outputs)
