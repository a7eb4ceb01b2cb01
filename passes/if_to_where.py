"""``if-to-where``: replace an ``if`` whose branches are cheap, cannot
fail and give outputs of provably equal shapes by both branches inlined
and one ``where`` per output (ONNX Where instead of If: no subgraphs,
and later passes see through it).

An ``if`` qualifies when each branch has at most ``max_nodes`` nodes, none
with nested graphs, all of ops in ``TOTAL_OPS`` — ops defined for every
input (no out-of-range index, no shape mismatch, no integer division by
zero), since the branch not taken now runs too — and each output's two
types have the same dtype and provably equal shapes (equal ints or equal
symbolic dims), so ``where`` broadcasts nothing::

    %r: f32[N] = if(%c, %x, %y) (then: graph @t(%t.x: f32[N], %t.y: f32[N]) {
      %a: f32[N] = exp(%t.x)
      return %a
    }, else: graph @f(%f.x: f32[N], %f.y: f32[N]) {
      return %f.y
    })
    ->
    %a: f32[N] = exp(%x)
    %r: f32[N] = where(%c, %a, %y)

Run it after ``if-sinking`` (which decides what each branch computes).
Linear in the graph size; nested graphs are processed too.
"""

from __future__ import annotations

from dataclasses import dataclass

from ir import Graph, Node, get_op
from ir.opdef import TOTAL, TOTAL_ON_FLOATS
from ir.transforms import holds, inline, nested_names, walk
from passes.base import Pass, register_pass



@register_pass
@dataclass(frozen=True)
class IfToWhere(Pass):
    """Turn cheap, total, shape-compatible ``if`` nodes into ``where``
    (see the module docstring). ``run`` returns True if any changed."""

    name = "if-to-where"
    after = ("if-sinking",)  # sinking first leaves less work in both branches
    max_nodes: int = 8

    visits_nested_graphs = True

    def run(self, graph: Graph) -> bool:
        if not graph.contains_op("if"):
            return False  # the op index says there is no if, nested graphs included
        changed = False
        for node, (prefix, reserved) in walk(graph, enter=_names, descend=holds("if")):
            if node.op == "if" and self._qualifies(node):
                _replace(node.graph, node, prefix, reserved)
                changed = True
        return changed

    def _qualifies(self, node: Node) -> bool:
        then, other = node.subgraphs["then"], node.subgraphs["else"]
        for branch in (then, other):
            if len(branch) > self.max_nodes:
                return False
            for n in branch:
                op = get_op(n.op)
                if n.subgraphs or not (op.has(TOTAL) or op.has(TOTAL_ON_FLOATS) and n.outputs[0].dtype.is_float):
                    return False
        return all(a.dtype == b.dtype and a.shape == b.shape and all(d is not None for d in a.shape)
                   for a, b in zip(then.outputs, other.outputs))


def _names(graph: Graph, outer) -> tuple[str, set[str]]:
    """The walk's context of a graph: the prefix of the constants inlined
    into it (a nested graph's name) and the names they must avoid."""
    return ("" if outer is None else f"{graph.name}.", nested_names(graph))


def _replace(graph: Graph, node: Node, prefix: str, reserved: set[str]) -> None:
    """Inline both branches of ``node`` before it and select with ``where``."""
    args = list(node.inputs[1:])
    then, other = (inline(graph, node.subgraphs[role], args, before=node, origins=node.origins, prefix=prefix,
                          reserved=reserved) for role in ("then", "else"))
    for out, a, b in zip(node.outputs, then, other):
        if a is b:
            graph.replace_all_uses(out, a)
            continue
        where = graph.create_node("where", [node.inputs[0], a, b], output_names=[out.name])
        where.origins = node.origins
        graph.insert_before(node, where)
        graph.replace_all_uses(out, where.output)
    graph.erase(node)
