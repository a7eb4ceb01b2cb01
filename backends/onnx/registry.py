"""The emission table: one rule per IR op, keyed by op name.

A rule is ``rule(ctx, node, *inputs) -> Value | tuple[Value, ...]``: it
receives the ``EmitContext``, the IR ``Node`` and the ONNX values of the
node's inputs, builds ONNX nodes through ``ctx`` and returns the ONNX values
of the node's outputs, in order. Rules register with ``@emits("add")``.
"""

from __future__ import annotations

from typing import Callable

import onnx_ir as oir

from backends.onnx.context import EmitContext
from ir.core import Graph, Value
from ir.errors import EmitError
from ir.ops import get_op

EmitRule = Callable[..., object]

EMITTERS: dict[str, EmitRule] = {}


def emits(*ops: str) -> Callable[[EmitRule], EmitRule]:
    """Decorator registering a rule for the IR ops ``ops``.

    Raises:
        ValueError: an op already has a rule.
    """
    def register(rule: EmitRule) -> EmitRule:
        for op in ops:
            if op in EMITTERS:
                raise ValueError(f"IR op {op!r} already has an ONNX rule ({EMITTERS[op].__qualname__})")
            EMITTERS[op] = rule
        return rule

    return register


def get_rule(op: str) -> EmitRule:
    """The rule emitting IR op ``op``. EmitError if there is none."""
    try:
        return EMITTERS[op]
    except KeyError:
        raise EmitError(f"no ONNX emission rule for IR op {op!r}") from None


def emit_nodes(ctx: EmitContext, graph: Graph, env: dict[Value, oir.Value]) -> None:
    """Emit the nodes of ``graph`` in program order, each by its rule,
    reading the ONNX values of their inputs from ``env`` (IR value -> ONNX
    value) and adding their outputs to it. ``emit_model`` calls it for the
    main graph; the control-flow rules (``rules/control_flow.py``) call it
    for nested bodies inside ``ctx.body()``.

    Raises:
        EmitError: an op without a rule, a rule returning the wrong number of
            values, or a node with subgraphs whose op takes none.
    """
    outer = ctx.node
    rules = EMITTERS
    for node in graph:
        if node.subgraphs and not get_op(node.op).subgraph_roles:
            raise EmitError(f"IR op {node.op!r} with subgraphs is not supported by the ONNX emitter")
        rule = rules.get(node.op) or get_rule(node.op)
        ctx.node = node
        results = rule(ctx, node, *[env[v] for v in node.inputs])
        outputs = node.outputs
        if type(results) is not tuple and len(outputs) == 1:
            env[outputs[0]] = results
            continue
        results = results if isinstance(results, tuple) else (results,)
        if len(results) != len(outputs):
            raise EmitError(f"rule for {node.op!r} returned {len(results)} values for {len(outputs)} outputs")
        env.update(zip(outputs, results))
    ctx.node = outer
