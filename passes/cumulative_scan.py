"""``cumulative-scan``: a ``loop`` that only accumulates the rows of a
sequence by ``add`` (or ``mul``) becomes one ``cumsum`` (``cumprod``), which
the ONNX emitter writes as CumSum (CumProd as its Scan) instead of a Loop.

The matched loop (what lowering makes of ``scan(lambda x_t, acc: acc + x_t,
sequences=[xs], outputs_info=[s0])``) carries one value, reads row ``i`` of
an invariant sequence and returns the sum as the next carried value and,
optionally, as its per-step value::

    %s: f32[3], %ys: f32[n,3] = loop(%n, %s0, %xs) {has_condition=false, num_carried=1} (
      body: graph @scan0(%scan0.i: i64[], %scan0.s: f32[3], %scan0.xs: f32[T,3]) {
        %x: f32[3] = gather(%scan0.xs, %scan0.i) {axis=0}
        %s1: f32[3] = add(%scan0.s, %x)
        return %s1, %s1
      })
    ->
    %m = maximum(%n, 0)         (a loop of n < 0 steps runs none)
    %c = cumsum(concat(unsqueeze(%s0), %xs[:m]))     (axis 0)
    %ys = %c[1:]        %s = gather(%c, %m)

Exact: the running value starts from ``%s0`` itself, so each step adds (or
multiplies) the same operands in the same order as the loop (``add`` and
``mul`` are commutative in IEEE arithmetic, so ``x + s`` matches too), and
``%c[m]`` is ``%s0`` when no step runs. Only when the carried value and the
row have provably equal shapes (no broadcasting). Linear; nested graphs are
processed too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ir import Graph, Node, Value
from ir.transforms import add_fresh_constant, holds, nested_names, walk
from passes.base import Pass, register_pass

CUMULATIVE = {"add": "cumsum", "mul": "cumprod"}
INT64_MAX = np.iinfo(np.int64).max


@register_pass
@dataclass(frozen=True)
class CumulativeScan(Pass):
    """Turn accumulating loops into ``cumsum``/``cumprod`` (see the module
    docstring). ``run`` returns True if it replaced any."""

    name = "cumulative-scan"
    visits_nested_graphs = True

    def run(self, graph: Graph) -> bool:
        if not graph.contains_op("loop"):
            return False  # O(1): the op index says there is no loop anywhere
        changed = False
        for node, scope in walk(graph, enter=_Scope, descend=holds("loop")):
            match = _match(node) if node.op == "loop" else None
            if match is not None:
                _replace(node.graph, node, *match, scope.reserved)
                changed = True
        return changed


class _Scope:
    """The walk's context of a graph: the names its new constants avoid,
    those of its nested graphs and of the graphs enclosing it (a nested name
    may not repeat an enclosing one; an enclosing graph's names are read
    when the walk enters the nested graph, after the rewrites before it)."""

    def __init__(self, graph: Graph, outer: "_Scope | None"):
        self.graph = graph
        self.enclosing: frozenset[str] = frozenset() if outer is None else (
            outer.enclosing | {v.name for v in outer.graph.inputs} | set(outer.graph.constants))
        self.reserved = nested_names(graph) | self.enclosing


def _match(node: Node) -> tuple[str, Value] | None:
    """``(cumulative op, sequence)`` when ``node`` is an accumulating loop."""
    if node.attrs["has_condition"] or node.attrs["num_carried"] != 1:
        return None
    body = node.subgraphs["body"]
    nodes = body.nodes
    if len(nodes) != 2 or len(body.outputs) not in (1, 2) or len(set(body.outputs)) != 1:
        return None
    read, step = nodes
    i, state = body.inputs[0], body.inputs[1]
    if (read.op != "gather" or read.attrs["axis"] != 0 or read.inputs[1] is not i
            or read.inputs[0] not in body.inputs[2:] or step.op not in CUMULATIVE
            or set(step.inputs) != {state, read.output} or body.outputs[0] is not step.output):
        return None
    if not (state.type == read.output.type == step.output.type and all(d is not None for d in state.shape)):
        return None
    return CUMULATIVE[step.op], node.inputs[body.inputs.index(read.inputs[0])]


def _replace(graph: Graph, node: Node, op: str, seq: Value, reserved: set[str]) -> None:
    n, s0 = node.inputs[0], node.inputs[1]

    def add(name: str, inputs: list[Value], attrs: dict | None = None) -> Value:
        new = graph.create_node(name, inputs, attrs)
        new.origins = node.origins
        graph.insert_before(node, new)
        return new.output

    def const(values, name: str = "const") -> Value:
        return add_fresh_constant(graph, np.asarray(values, dtype=np.int64), name, reserved)

    zero = const(0, "zero")
    steps = add("maximum", [n, zero])  # a loop of n < 0 steps runs none
    head = add("slice", [seq, const([0]), add("unsqueeze", [steps], {"axes": [0]}), const([1])], {"axes": [0]})
    padded = add("concat", [add("unsqueeze", [s0], {"axes": [0]}), head], {"axis": 0})
    running = add(op, [padded], {"axis": 0})
    graph.replace_all_uses(node.outputs[0], add("gather", [running, steps], {"axis": 0}))
    if len(node.outputs) == 2:
        rows = add("slice", [running, const([1]), const([INT64_MAX]), const([1])], {"axes": [0]})
        graph.replace_all_uses(node.outputs[1], rows)
    graph.erase(node)
