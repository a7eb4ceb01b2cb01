"""``special-batching``: independent calls of one special function become
one call on their arguments concatenated.

A special function (``ir.ops.special.UNARY_SPECIAL``: ``gammaln``, ``psi``,
``erfc``, ...) is emitted as a body of a few hundred ONNX nodes. On the
small arguments of a log-density (``gammaln(nu / 2)`` and
``gammaln((nu + 1) / 2)`` of a StudentT, a parameter's ``psi`` in the
gradient) the cost of a call is those nodes' dispatch, not their
arithmetic, so k calls cost k times one. This pass evaluates every set of
mutually independent calls of the same op and dtype (no call reads another's
result, directly or not) with static shapes once: each argument is
flattened, the flat arguments are concatenated, the op runs once and a
``split`` returns each call's part, reshaped back. The functions are
elementwise, so every element's value is unchanged (bit for bit).

The new nodes are appended and the node list re-sorted topologically
(``ir.transforms.topological_sort``), since the readers of an early call may
come before a later call's argument.

Before::

    %a: f64[1] = gammaln(%x)
    %u: f64[1] = mul(%a, %k)
    %b: f64[] = gammaln(%y)

After::

    %fx: f64[1] = reshape(%x, %m1)   # (rank 1: no reshape)
    %fy: f64[1] = reshape(%y, %m1)
    %c: f64[2] = concat(%x, %fy) {axis=0}
    %g: f64[2] = gammaln(%c)
    %a, %s: f64[1], f64[1] = split(%g, %sizes) {axis=0, num_outputs=2}
    %b: f64[] = reshape(%s, %scalar)
    %u: f64[1] = mul(%a, %k)

Every nested graph is batched on its own (``ir.transforms.walk_scopes``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np

from ir import Graph
from ir.core import Node, Value
from ir.ops.special import UNARY_SPECIAL
from ir.transforms import add_fresh_constant, topological_sort, walk_scopes
from passes.base import Pass, register_pass


def _ancestors(value: Value) -> set[Node]:
    """Every node ``value`` depends on (its producer included)."""
    seen: set[Node] = set()
    stack = [value.producer] if value.producer is not None else []
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(v.producer for v in node.inputs if v.producer is not None and v.producer not in seen)
    return seen


def independent_groups(calls: list[Node]) -> list[list[Node]]:
    """``calls`` (in graph order) split greedily into groups of mutually
    independent calls: a call joins the first group none of whose members it
    reads (directly or not) or is read by."""
    upstream = {call: _ancestors(call.inputs[0]) for call in calls}
    groups: list[list[Node]] = []
    for call in calls:
        for group in groups:
            if all(m not in upstream[call] and call not in upstream[m] for m in group):
                group.append(call)
                break
        else:
            groups.append([call])
    return groups


@register_pass
@dataclass(frozen=True)
class SpecialBatching(Pass):
    """Evaluate independent calls of the same special function once (see the module doc)."""

    name = "special-batching"
    visits_nested_graphs = True

    def run(self, graph: Graph) -> bool:
        if not graph.contains_op(*UNARY_SPECIAL):  # no node visited when absent, nested graphs included
            return False
        changed = False
        for g, reserved in walk_scopes(graph):  # each body on its own
            changed |= _batch_graph(g, reserved)
        return changed


def _batch_graph(graph: Graph, reserved: AbstractSet[str]) -> bool:
    """Batch the independent calls of each special function of ``graph``
    (not its nested graphs); re-sort its nodes if any were."""
    if not any(graph.op_count(op) > 1 for op in UNARY_SPECIAL):
        return False
    calls: dict[tuple, list[Node]] = defaultdict(list)
    for node in graph:
        if node.op in UNARY_SPECIAL and node.inputs[0].type.size is not None:
            calls[(node.op, node.inputs[0].dtype)].append(node)
    changed = False
    for (op, _), nodes in calls.items():
        for group in independent_groups(nodes) if len(nodes) > 1 else ():
            if len(group) > 1:
                _batch(graph, op, group, reserved)
                changed = True
    if changed:
        topological_sort(graph)
    return changed


def _batch(graph: Graph, op: str, group: list[Node], reserved: AbstractSet[str]) -> None:
    made: dict[tuple, Value] = {}

    def const(array, name):
        key = (name, tuple(array))
        if key not in made:
            made[key] = add_fresh_constant(graph, np.asarray(array, dtype=np.int64), name, reserved)
        return made[key]

    flat = [x if x.rank == 1 else graph.add("reshape", [x, const([-1], "flat")])
            for x in (call.inputs[0] for call in group)]
    joined = graph.add("concat", flat, {"axis": 0})
    result = graph.add(op, [joined])
    sizes = [call.inputs[0].type.size for call in group]
    split = graph.create_node("split", [result, const(sizes, "batch_sizes")], {"axis": 0, "num_outputs": len(group)})
    graph.append(split)
    for call, part in zip(group, split.outputs):
        out = call.outputs[0]
        if out.rank != 1:
            part = graph.add("reshape", [part, const(list(out.shape), "batch_shape")])
        graph.replace_all_uses(out, part)
        graph.erase(call)
