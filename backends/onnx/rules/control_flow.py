"""Rules for the control-flow ops ``loop`` and ``if`` (semantics:
``ir/ops/control_flow.py``): ONNX Loop and If, opset 18.

Bodies are emitted by the same rules as the main graph
(``registry.emit_nodes``) into the node list ``ctx.body()`` collects. The
IR's explicit captures become ONNX outer-scope reads: a body input that an
IR node fills with an enclosing value is bound to that value's ONNX name,
and body constants become model initializers, which bodies may read. A body
output that the body does not compute itself (a body input, an outer value,
an initializer, or a value returned twice) goes through an Identity, so
every subgraph output is produced inside its subgraph, as onnxruntime
expects. Body inputs and outputs are typed (dtype and rank; int dims
static): onnxruntime's Loop needs the ranks.
"""

from __future__ import annotations

import onnx_ir as oir

from backends.onnx.context import onnx_dtype
from backends.onnx.registry import emit_nodes, emits
from backends.onnx.rules.common import B, I64
from ir.core import Graph, Value
from ir.types import TensorType


def _dims(t: TensorType) -> list:
    return [d if isinstance(d, int) else None for d in t.shape]


def _emit_body(ctx, graph: Graph, env: dict[Value, oir.Value]) -> list[oir.Value]:
    """Emit the nodes of nested ``graph`` (its inputs already bound in
    ``env``) into the current body; returns its outputs, each produced by a
    node of the body and typed."""
    for c in graph.constants.values():
        env[c] = ctx.initializer(c.const, c.name)
    emit_nodes(ctx, graph, env)
    produced = {id(out) for node in ctx.nodes for out in node.outputs}
    outputs = []
    for v in graph.outputs:
        value = env[v]
        if id(value) not in produced:
            value = ctx.op("Identity", value)
        produced.discard(id(value))  # a second return of it needs its own Identity
        value.type = oir.TensorType(onnx_dtype(v.dtype))
        value.shape = oir.Shape(_dims(v.type))
        outputs.append(value)
    return outputs


@emits("loop")
def loop(ctx, node, n, *inputs):
    """``loop``: ONNX Loop with trip count ``n`` and an initial condition
    of true. Carried values are Loop's loop-carried dependencies, per-step
    values its scan outputs (stacked on axis 0, as the IR op stacks them);
    invariant inputs are read from the outer scope. Without
    ``has_condition`` the body passes its condition input through."""
    body = node.subgraphs["body"]
    k, has_cond = node.attrs["num_carried"], node.attrs["has_condition"]
    with ctx.body() as nodes:
        i = ctx.body_input("i", I64, [])
        cond_in = ctx.body_input("cond", B, [])
        carried = [ctx.body_input("carried", v.dtype, _dims(v.type)) for v in body.inputs[1:1 + k]]
        env = dict(zip(body.inputs, [i, *carried, *inputs[k:]]))
        outs = _emit_body(ctx, body, env)
        if not has_cond:
            outs.insert(0, ctx.op("Identity", cond_in))
    graph = ctx.subgraph(nodes, [i, cond_in, *carried], outs, "loop_body")
    return ctx.op("Loop", n, ctx.const(True, B), *inputs[:k], num_outputs=len(node.outputs), body=graph)


@emits("if")
def if_(ctx, node, cond, *captured):
    """``if``: ONNX If; both branches read the captured values from the
    outer scope."""
    branches = {}
    for role in ("then", "else"):
        graph = node.subgraphs[role]
        with ctx.body() as nodes:
            outs = _emit_body(ctx, graph, dict(zip(graph.inputs, captured)))
        branches[role] = ctx.subgraph(nodes, [], outs, f"{role}_branch")
    return ctx.op("If", cond, num_outputs=len(node.outputs), then_branch=branches["then"],
                  else_branch=branches["else"])
