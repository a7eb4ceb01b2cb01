"""``if-sinking``: move into an ``if`` branch the nodes only that branch
needs, so that they run only when it is taken (PyTensor's ``IfElse`` is
lazy; the lowering captures both branches' values from the enclosing
graph, computed eagerly).

A node sinks into branch ``b`` of an ``if`` when every use of each of its
outputs is the ``if`` at a captured input that only ``b`` reads, or a node
sinking into ``b`` too (and none is a graph output). Sunk nodes are copied
to the front of the branch in program order; what they read from the
enclosing graph becomes a captured input (small constants are copied into
the branch instead, so the branch's rules still see them as constants)::

    %e: f32[3] = exp(%x)
    %r: f32[3] = if(%c, %e, %x) (then: graph @t(%t.e: f32[3], %t.x: f32[3]) {
      return %t.e
    }, else: graph @f(%f.e: f32[3], %f.x: f32[3]) {
      return %f.x
    })
    ->
    %r: f32[3] = if(%c, %x) (then: graph @t(%t.x: f32[3]) {
      %e: f32[3] = exp(%t.x)
      return %e
    }, else: graph @f(%f.x: f32[3]) {
      return %f.x
    })

Each ``if`` is rebuilt once. Candidates are visited latest first (a heap on
program position), so a node is decided after all its users: linear in the
graph size (times log for the heap). Nested graphs are processed too.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from ir import Graph, Node, Value
from ir.transforms import add_fresh_constant, holds, inline, nested_names, walk
from passes.base import Pass, register_pass

MAX_COPIED_CONSTANT = 16  # constants up to this many elements are copied into a branch


@register_pass
@dataclass(frozen=True)
class IfSinking(Pass):
    """Move branch-only computations into ``if`` branches (see the module
    docstring). ``run`` returns True if any node moved."""

    name = "if-sinking"
    visits_nested_graphs = True

    def run(self, graph: Graph) -> bool:
        if not graph.contains_op("if"):
            return False  # the op index says there is no if, nested graphs included
        changed = False
        # an if's branches first (what sinks into them was decided there), each graph with its node positions
        for node, position in walk(graph, enter=_positions, descend=holds("if"), bodies_first=True):
            if node.op == "if":
                changed |= _sink(node.graph, node, position)
        return changed


def _positions(graph: Graph, outer) -> dict[Node, int]:
    """The walk's context of a graph: each node's position in it."""
    return {node: k for k, node in enumerate(graph)}


def _sink(graph: Graph, node: Node, position: dict[Node, int]) -> bool:
    """Sink what each branch of ``if`` ``node`` alone needs; rebuild it."""
    branches = [node.subgraphs["then"], node.subgraphs["else"]]
    readers = [{k for k, v in enumerate(g.inputs) if v.num_uses or v in g.outputs} for g in branches]
    sunk: list[list[Node]] = [[], []]
    for b, branch in enumerate(branches):
        own = readers[b] - readers[1 - b]
        sunk[b] = _sinkable(graph, node, {1 + k for k in own}, position)
    if not sunk[0] and not sunk[1]:
        return False
    moved = {n for nodes in sunk for n in nodes}
    captured = list(dict.fromkeys(v for v in node.inputs[1:] if v.producer not in moved))
    for nodes in sunk:
        for n in nodes:
            captured += [v for v in n.inputs if v.producer not in moved and not _copied(v) and v not in captured]
    new_branches = {role: _rebuild(branch, node, captured, nodes)
                    for role, branch, nodes in zip(("then", "else"), branches, sunk)}
    rebuilt = graph.create_node("if", [node.inputs[0], *captured], {}, [v.type for v in node.outputs],
                                output_names=[v.name for v in node.outputs], subgraphs=new_branches)
    rebuilt.origins = node.origins
    graph.insert_before(node, rebuilt)
    position[rebuilt] = position[node]
    for old, new in zip(node.outputs, rebuilt.outputs):
        graph.replace_all_uses(old, new)
    graph.erase(node)
    for n in sorted(moved, key=position.__getitem__, reverse=True):
        graph.erase(n)
    return True


def _sinkable(graph: Graph, node: Node, slots: set[int], position: dict[Node, int]) -> list[Node]:
    """The nodes (in program order) that only ``node``'s inputs at
    positions ``slots`` and each other need."""
    chosen: set[Node] = set()
    heap, seen = [], set()

    def push(value: Value) -> None:
        p = value.producer
        if p is not None and p.graph is graph and p not in seen:
            seen.add(p)
            heapq.heappush(heap, (-position[p], id(p), p))

    for k in slots:
        push(node.inputs[k])
    outputs = set(graph.outputs)
    while heap:
        _, _, p = heapq.heappop(heap)
        if any(out in outputs for out in p.outputs):
            continue
        if all(u.node in chosen or (u.node is node and u.index in slots) for out in p.outputs for u in out.uses()):
            chosen.add(p)
            for v in p.inputs:
                push(v)
    return sorted(chosen, key=position.__getitem__)


def _copied(value: Value) -> bool:
    """Whether a constant read by a sunk node is copied into the branch."""
    return value.const is not None and value.const.size <= MAX_COPIED_CONSTANT


def _rebuild(branch: Graph, node: Node, captured: list[Value], nodes: list[Node]) -> Graph:
    """A copy of ``branch`` taking ``captured`` and computing ``nodes``
    (moved from the enclosing graph) first."""
    new = Graph(branch.name)
    reserved = nested_names(branch) | nested_names(nodes)
    taken: set[str] = set()
    env: dict[Value, Value] = {}
    old_args = dict(zip(node.inputs[1:], branch.inputs))
    for v in captured:
        old = old_args.get(v)
        hint = old.name if old is not None else f"{branch.name}.{v.name or 'x'}"
        name, i = hint, 1
        while name in taken:
            name, i = f"{hint}_{i}", i + 1
        taken.add(name)
        env[v] = new.add_input(v.type, name)
    for n in nodes:
        for v in n.inputs:
            if v not in env:  # a small constant of the enclosing graph
                env[v] = add_fresh_constant(new, v.const, f"{branch.name}.{v.name}", reserved, v.type)
        copy = new.create_node(n.op, [env[v] for v in n.inputs], n.attrs, [v.type for v in n.outputs],
                               output_names=[v.name for v in n.outputs], subgraphs=dict(n.subgraphs))
        copy.origins = n.origins
        new.append(copy)
        env.update(zip(n.outputs, copy.outputs))
    # inputs only the other branch reads may be bound to anything: None
    outs = inline(new, branch, [env.get(v) for v in node.inputs[1:]], prefix=f"{branch.name}.", reserved=reserved)
    new.set_outputs(outs)
    return new
