"""``Body``: a nested IR graph (a control-flow body) that a lowering rule
builds from an inner PyTensor graph, with the naming the verifier needs.

Names of a body's inputs and constants must not repeat a name of an
enclosing graph, so every body gets a prefix unique among its siblings and
ancestors (``scan0``, ``if1``, ``scan0.scan0`` for a scan inside the first
scan's body), its graph is named after it and its inputs and constants are
called ``<prefix>.<hint>``. Bodies capture explicitly (see
``ir/ops/control_flow.py``): the rule passes every outer value the body
reads as a node input, bound to a body input made with ``input``.
"""

from __future__ import annotations

from typing import Sequence

from compiler.lowering.errors import Unsupported, UnsupportedOpsError
from compiler.lowering.context import LoweringContext, sanitize_name
from compiler.lowering.lower import lower_apply_nodes
from ir import Graph, TensorType, Value
from ir.transforms import remove_dead_code

class Body:
    """A body under construction, nested in the graph of ``outer``.

    Attributes:
        graph: the body's IR ``Graph`` (named after the prefix).
        ctx: a fresh ``LoweringContext`` building into ``graph``; its
            ``values`` map inner PyTensor variables to body values.
        prefix: the unique prefix (``scan0``).
    """

    def __init__(self, outer: LoweringContext, kind: str):
        k = outer.bodies.get(kind, 0)
        outer.bodies[kind] = k + 1
        self.prefix = f"{outer.prefix}.{kind}{k}" if outer.prefix else f"{kind}{k}"
        self.graph = Graph(self.prefix)
        self.ctx = LoweringContext(self.graph, outer.options, outer.record)
        self.ctx.prefix = self.prefix
        self.ctx.source, self.ctx.op_label = outer.source, outer.op_label
        self._names: set[str] = set()

    def input(self, type: TensorType, hint: str | None) -> Value:
        """A new body input of ``type`` named ``<prefix>.<hint>`` (made unique)."""
        base = sanitize_name(hint) or "in"
        name, i = base, 1
        while name in self._names:
            name, i = f"{base}_{i}", i + 1
        self._names.add(name)
        return self.graph.add_input(type, f"{self.prefix}.{name}")

    def lower(self, inputs: Sequence, outputs: Sequence, what: str) -> list[Value]:
        """Lower the inner PyTensor graph from ``inputs`` (already bound in
        ``ctx.values``) to ``outputs``; returns the body values of
        ``outputs``. Inner nodes keep their own source lines.

        Raises:
            Unsupported: naming ``what`` (``"scan body"``) and listing the
                inner ops that could not be lowered, with their lines.
        """
        try:
            lower_apply_nodes(self.ctx, list(inputs), list(outputs))
            return [self.ctx.get(v) for v in outputs]
        except UnsupportedOpsError as e:
            reasons = "; ".join(f"{o.op}: {o.reason}" + (f" (at {o.source})" if o.source else "")
                                for o in e.occurrences)
            raise Unsupported(f"{what}: {reasons}") from None

    def finish(self, outputs: Sequence[Value]) -> Graph:
        """Set the body's outputs, drop what they do not need (``dce``) and
        prefix the constants' names; returns the graph, ready to be a
        node's subgraph."""
        self.graph.set_outputs(list(outputs))
        remove_dead_code(self.graph)
        renamed: dict[str, Value] = {}
        taken = {v.name for v in self.graph.inputs}
        for value in self.graph.constants.values():
            name, i = f"{self.prefix}.{value.name}", 1
            while name in taken:
                name, i = f"{self.prefix}.{value.name}_{i}", i + 1
            taken.add(name)
            value.name = name
            renamed[name] = value
        self.graph.constants = renamed
        return self.graph
