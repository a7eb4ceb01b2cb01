"""``scan-unroll``: replace a ``loop`` whose trip count is a constant of at
most ``max_trip_count`` by straight-line copies of its body, so that CSE,
constant folding and the pattern rewrites see through it.

A loop qualifies when it has no while condition (``has_condition`` false)
and its trip count input is a constant ``n`` with ``1 <= n <=
max_trip_count`` (the constant may come from the graph, or from folding
the shape arithmetic ``shape-inference`` specialized). Iteration ``i``
inlines the body (``ir.transforms.inline``) with the iteration number
bound to a constant ``i`` and the carried values bound to the previous
iteration's results; the carried outputs become the last iteration's values
and each stacked output a ``concat`` of the per-step values, each with a
new leading axis::

    %s: f32[3], %ys: f32[2,3] = loop(%n, %s0, %xs) {has_condition=false, num_carried=1} (
      body: graph @scan0(%scan0.i: i64[], %scan0.s: f32[3], %scan0.xs: f32[2,3]) {
        %x: f32[3] = gather(%scan0.xs, %scan0.i) {axis=0}
        %s1: f32[3] = add(%scan0.s, %x)
        return %s1, %s1
      })                                              (with const %n: i64[] = 2)
    ->
    %x: f32[3] = gather(%xs, %i) {axis=0}             (const %i: i64[] = 0)
    %s1: f32[3] = add(%s0, %x)
    %x_1: f32[3] = gather(%xs, %i_1) {axis=0}         (const %i_1: i64[] = 1)
    %s1_1: f32[3] = add(%s1, %x_1)
    %u: f32[1,3] = unsqueeze(%s1) {axes=[0]}
    %u_1: f32[1,3] = unsqueeze(%s1_1) {axes=[0]}
    %ys: f32[2,3] = concat(%u, %u_1) {axis=0}         (uses of %s read %s1_1)

A random node in the body (``random_uniform``/``random_normal``, the ``random``
trait) draws anew at every step of the loop; its copies would each start a
generator from the same seed and repeat one another's draws, so copy ``i``
gets the seed ``SeedSequence([seed, i])`` (below 2**24, as lowering's
seeds; random nodes in bodies nested in the copy too), and the unrolled steps
draw independently.

Loops nested in a body are unrolled when their copies land in the graph,
and the pass also works inside the bodies of loops it keeps and of ``if``
branches. The time is linear in the size of the unrolled graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ir import Graph, Node, Value
from ir.opdef import RANDOM, get_op
from ir.transforms import add_fresh_constant, holds, inline, nested_names, walk
from passes.base import Pass, register_pass

DEFAULT_MAX_TRIP_COUNT = 64


@register_pass
@dataclass(frozen=True)
class ScanUnroll(Pass):
    """Unroll loops with a constant trip count of at most ``max_trip_count``
    (see the module docstring). ``run`` returns True if it unrolled any."""

    name = "scan-unroll"
    after = ("cumulative-scan",)  # an accumulating loop becomes a cumsum, not copies
    max_trip_count: int = DEFAULT_MAX_TRIP_COUNT

    visits_nested_graphs = True

    def run(self, graph: Graph) -> bool:
        if not graph.contains_op("loop"):
            return False  # the op index says there is no loop, nested graphs included
        changed = False
        # last node first: the copies of an unrolled body land before its loop, so their loops come next
        for node, (prefix, reserved) in walk(graph, enter=_names, descend=holds("loop"), reverse=True):
            count = trip_count(node)
            if count is not None and 1 <= count <= self.max_trip_count:
                unroll(node.graph, node, count, prefix, reserved)
                changed = True
        return changed


def _names(graph: Graph, outer) -> tuple[str, set[str]]:
    """The walk's context of a graph: the prefix of the constants unrolling
    makes in it (a nested graph's name) and the names they must avoid."""
    return ("" if outer is None else f"{graph.name}.", nested_names(graph))


def trip_count(node: Node) -> int | None:
    """The constant trip count of a ``loop`` without a while condition, else None."""
    if node.op != "loop" or node.attrs["has_condition"]:
        return None
    n = node.inputs[0].const
    return None if n is None else int(n)


def unroll(graph: Graph, node: Node, count: int, prefix: str = "", reserved: set[str] | None = None) -> list[Node]:
    """Replace ``loop`` ``node`` of ``graph`` by ``count`` inlined copies of
    its body (see the module docstring) and erase it. New constants are
    named with ``prefix`` (the graph's, when it is a nested graph) and avoid
    ``reserved`` (``nested_names(graph)``, computed if not given). Returns
    the nodes created."""
    reserved = nested_names(graph) if reserved is None else reserved
    body = node.subgraphs["body"]
    k = node.attrs["num_carried"]
    carried, invariant = list(node.inputs[1:1 + k]), list(node.inputs[1 + k:])
    created: list[Node] = []
    constants: dict[Value, Value] = {}
    steps: list[list[Value]] = [[] for _ in body.outputs[k:]]
    draws = {n: int(n.attrs["seed"]) for n, _ in walk(body) if get_op(n.op).has(RANDOM)}  # nested bodies too
    for i in range(count):
        index = add_fresh_constant(graph, np.array(i, dtype=np.int64), f"{prefix}i", reserved)
        _reseed(draws, i)
        outs = inline(graph, body, [index, *carried, *invariant], before=node, constants=constants,
                      origins=node.origins, prefix=prefix, created=created, reserved=reserved)
        carried = outs[:k]
        for per_step, value in zip(steps, outs[k:]):
            per_step.append(value)
    for old, new in zip(node.outputs[:k], carried):
        graph.replace_all_uses(old, new)
    for old, values in zip(node.outputs[k:], steps):
        rows = [_add(graph, node, "unsqueeze", [v], {"axes": [0]}, created) for v in values]
        stacked = rows[0] if count == 1 else _add(graph, node, "concat", rows, {"axis": 0}, created)
        graph.replace_all_uses(old, stacked)
    graph.erase(node)
    return created


def _reseed(draws: dict[Node, int], step: int) -> None:
    """Set the seed of every random node of a body (``draws``: node -> its
    seed in the loop) to ``SeedSequence([seed, step])`` (24 bits), before
    copy ``step`` is inlined, so the copies of one draw differ per step."""
    for node, seed in draws.items():
        new = int(np.random.SeedSequence([seed, step]).generate_state(1)[0]) & 0xFFFFFF
        node.attrs = {**node.attrs, "seed": new}


def _add(graph: Graph, anchor: Node, op: str, inputs: list[Value], attrs: dict, created: list[Node]) -> Value:
    new = graph.create_node(op, inputs, attrs)
    new.origins = anchor.origins
    graph.insert_before(anchor, new)
    created.append(new)
    return new.output
