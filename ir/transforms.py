"""Graph transforms every pass and the lowering share: the walk over a
graph and all its nested graphs (``walk``, node by node with hooks that
carry context; ``walk_graphs``/``walk_scopes``, graph by graph), deep copy,
inlining a closed body, fresh names that avoid nested graphs, dead-code
removal, a stable topological re-sort, and the size limit of compile-time
evaluation. All are linear (the sort n log n) in the size of what they
touch. Passes reach nested graphs only through these walks
(``tests/architecture`` checks that no pass iterates ``node.subgraphs``).
"""

from __future__ import annotations

import heapq
from collections.abc import Set as AbstractSet
from typing import Any, Callable, Iterable, Iterator, Sequence

from ir import symbolic as sym
from ir.core import Graph, Node, Value

FOLD_MAX_ELEMENTS = 65536
"""The largest result (in elements) compile-time evaluation may produce:
the ``constant-folding`` pass's default and the lowering's evaluation of
constant PyTensor subgraphs. Larger results stay computations, so a model
never swells with folded weights."""


EnterHook = Callable[[Graph, Any], Any]


def walk(graph: Graph, *, enter: EnterHook | None = None, exit: Callable[[Graph, Any], None] | None = None,
         descend: Callable[[Node], bool] | None = None, reverse: bool = False,
         bodies_first: bool = False) -> Iterator[tuple[Node, Any]]:
    """Every node of ``graph`` and of the graphs nested in it, at any depth,
    each as ``(node, context)``: the scoped walk of every pass that carries
    something down into nested graphs (as onnx_ir's
    ``RecursiveGraphIterator(enter_graph=, exit_graph=)``).

    Args:
        graph: the outermost graph; it may change while walked (see below).
        enter: ``enter(g, outer)`` is called when the walk starts on graph
            ``g`` (``outer``: the context of the graph enclosing ``g``, None
            for ``graph``); what it returns is ``g``'s context, yielded with
            every node of ``g`` and passed as ``outer`` to ``g``'s nested
            graphs (reserved names, a name prefix, positions). Default: None.
        exit: ``exit(g, context)`` is called when ``g``'s nodes are done.
        descend: whether to walk the nested graphs of a node (default: all),
            e.g. only those holding an op the pass rewrites
            (``Graph.contains_op``).
        reverse: each graph's nodes last to first (``Graph.__reversed__``):
            nodes a rewrite inserts before the current node are visited next.
            A node's nested graphs are walked in their order either way.
        bodies_first: a node's nested graphs are walked before the node is
            yielded (a ``loop``'s type rule reads its body's types);
            otherwise after it, and only if it is still in its graph (a
            node the pass replaced has no bodies left to visit).

    Each graph's nodes are visited like ``for node in g`` (or reversed): a
    pass may erase the current node and insert nodes anywhere. Costs O(1)
    per node visited plus the hooks.
    """
    return _walk(graph, None, enter, exit, descend, reverse, bodies_first)


def holds(*ops: str) -> Callable[[Node], bool]:
    """A ``descend`` test for ``walk``: whether a graph nested in the node
    holds a node with one of ``ops``, at any depth (``Graph.contains_op``:
    O(1) per graph, no node visited)."""
    return lambda node: any(sub.contains_op(*ops) for sub in node.subgraphs.values())


def _walk(g: Graph, outer: Any, enter, exit, descend, reverse: bool, bodies_first: bool):
    context = enter(g, outer) if enter is not None else None
    for node in (reversed(g) if reverse else g):
        if bodies_first and node.subgraphs and (descend is None or descend(node)):
            for sub in tuple(node.subgraphs.values()):
                yield from _walk(sub, context, enter, exit, descend, reverse, bodies_first)
        yield node, context
        if not bodies_first and node.subgraphs and node.graph is g and (descend is None or descend(node)):
            for sub in tuple(node.subgraphs.values()):
                yield from _walk(sub, context, enter, exit, descend, reverse, bodies_first)
    if exit is not None:
        exit(g, context)


def walk_graphs(graph: Graph) -> Iterator[Graph]:
    """``graph`` and every graph nested in it, at any depth, each before the
    graphs nested in it. The graph may change between steps (a graph's
    nested graphs are read when the walk leaves it). Costs O(number of
    graphs), not a scan of the nodes (``Graph.nodes_with_subgraphs``)."""
    for g, _ in walk_scopes(graph, names=False):
        yield g


class ScopeNames(AbstractSet):
    """A read-only set: the names of the enclosing scopes (shared by every
    graph they enclose, never copied) and those nested in one graph. O(1)
    membership and truth; so ``walk_scopes`` costs no copy of the enclosing
    names per nested graph (a model with thousands of loop bodies)."""

    __slots__ = ("_enclosing", "_nested")

    def __init__(self, enclosing: frozenset[str], nested: set[str]):
        self._enclosing = enclosing
        self._nested = nested

    def __contains__(self, name) -> bool:
        return name in self._nested or name in self._enclosing

    def __bool__(self) -> bool:
        return bool(self._nested) or bool(self._enclosing)

    def __iter__(self) -> Iterator[str]:
        yield from self._nested
        yield from (n for n in self._enclosing if n not in self._nested)

    def __len__(self) -> int:
        return len(self._nested) + sum(1 for n in self._enclosing if n not in self._nested)


def walk_scopes(graph: Graph, names: bool = True) -> Iterator[tuple[Graph, AbstractSet[str]]]:
    """``(g, reserved)`` for ``graph`` and every graph nested in it, outer
    first (``walk_graphs``'s order): ``reserved`` holds the names a new
    constant of ``g`` must avoid, the input and constant names of the graphs
    enclosing ``g`` and of the graphs nested in ``g`` (a nested name may not
    repeat an enclosing one). A graph without nested graphs and enclosing
    scope costs nothing; else linear in the nested graphs' sizes."""
    stack: list[tuple[Graph, frozenset[str]]] = [(graph, frozenset())]
    while stack:
        g, enclosing = stack.pop()
        nested = g.nodes_with_subgraphs()
        reserved = ScopeNames(enclosing, nested_names(nested)) if names and (nested or enclosing) else set()
        yield g, reserved
        if nested:
            own = enclosing | {v.name for v in g.inputs} | set(g.constants) if names else enclosing
            stack.extend((sub, own) for node in reversed(g.nodes_with_subgraphs())
                         for sub in reversed(node.subgraphs.values()))


def refine_types(graph: Graph, bounds: sym.Bounds) -> None:
    """Refine the dims of every node output of ``graph`` (top level) by the
    size facts ``bounds`` (``ir.symbolic.refine``: ``abs(H-3)+1`` is ``H-2``
    given ``H >= 3``). Only for facts that hold wherever ``graph`` runs to
    its end (a node needs them, or fails). Every type is refined alike, so
    the types stay consistent with the type rules. Linear in the graph's size."""
    if not bounds:
        return
    for node in graph:
        for v in node.outputs:
            shape = v.type.shape
            new = tuple(sym.refine(d, bounds) if isinstance(d, sym.Expr) else d for d in shape)
            if new != shape:
                v.type = v.type.with_shape(new)


def remove_dead_code(graph: Graph) -> bool:
    """Erase every node of ``graph`` (top level only) none of whose outputs
    is read or returned, and every constant nothing reads; True if anything
    went. One backward walk over the node list: O(nodes)."""
    changed = False
    live_outputs = set(graph.outputs)
    for node in reversed(graph.nodes):
        for out in node.outputs:
            if out._uses or out in live_outputs:
                break
        else:  # no output is read or returned
            graph.erase(node)
            changed = True
    for value in list(graph.constants.values()):
        if not value.num_uses and value not in live_outputs:
            graph.remove_constant(value)
            changed = True
    return changed


def topological_sort(graph: Graph) -> None:
    """Reorder ``graph``'s top-level node list so every node follows the
    producers of its inputs (nested bodies read outer values only through
    their node's inputs, so these are all the dependencies), keeping the
    current relative order wherever it is already valid (Kahn's algorithm,
    ready nodes taken by current position). For passes that append nodes
    whose readers come earlier. O(nodes log nodes).

    Raises:
        ValueError: the dependencies have a cycle.
    """
    nodes = graph.nodes
    position = {node: i for i, node in enumerate(nodes)}
    waiting = {node: 0 for node in nodes}
    readers: dict[Node, list[Node]] = {node: [] for node in nodes}
    for node in nodes:
        for producer in {v.producer for v in node.inputs if v.producer in position}:
            waiting[node] += 1
            readers[producer].append(node)
    ready = [position[n] for n in nodes if waiting[n] == 0]
    heapq.heapify(ready)
    order: list[Node] = []
    while ready:
        node = nodes[heapq.heappop(ready)]
        order.append(node)
        for reader in readers[node]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                heapq.heappush(ready, position[reader])
    if len(order) != len(nodes):
        raise ValueError(f"graph {graph.name}: the node dependencies have a cycle")
    graph.reorder(order)


def copy_graph(graph: Graph, name: str | None = None) -> Graph:
    """A deep copy of a closed graph (its nested graphs copied too), with
    the same names and types. Linear in the graph's size."""
    copy = Graph(name or graph.name)
    env: dict[Value, Value] = {v: copy.add_input(v.type, v.name) for v in graph.inputs}
    env.update({c: copy.add_constant(c.const, c.name, c.type) for c in graph.constants.values()})
    for node in graph:
        clone = _clone_node(copy, node, [env[v] for v in node.inputs])
        copy.append(clone)
        env.update(zip(node.outputs, clone.outputs))
    copy.set_outputs([env[v] for v in graph.outputs])
    copy.size_bounds = graph.size_bounds
    return copy


def nested_names(nodes: Iterable[Node]) -> set[str]:
    """The input and constant names of every graph nested in ``nodes`` (a
    graph, or a list of nodes), at any depth: a constant added to their
    graph must avoid them, since a nested name may not repeat an enclosing
    one. Linear in the size of the nodes and their nested graphs."""
    names: set[str] = set()
    stack = [sub for node in nodes for sub in node.subgraphs.values()]
    while stack:
        g = stack.pop()
        names.update(v.name for v in g.inputs)
        names.update(g.constants)
        stack += [sub for node in g for sub in node.subgraphs.values()]
    return names


def add_fresh_constant(graph: Graph, array, name: str, reserved: set[str], type=None) -> Value:
    """``graph.add_constant`` under ``name`` or ``name_<k>``, avoiding the
    ``reserved`` names (``nested_names(graph)``) too."""
    if name in reserved:
        k = 1
        while f"{name}_{k}" in reserved or f"{name}_{k}" in graph.constants:
            k += 1
        name = f"{name}_{k}"
    value = graph.add_constant(array, name, type)
    if value.name in reserved:  # the graph's own uniquing landed on a reserved name
        graph.remove_constant(value)
        return add_fresh_constant(graph, array, value.name, reserved, type)
    return value


def inline(target: Graph, body: Graph, args: Sequence[Value | None], *, before: Node | None = None,
           constants: dict[Value, Value] | None = None, origins: tuple = (),
           prefix: str = "", created: list[Node] | None = None, reserved: set[str] | None = None) -> list[Value]:
    """Copy the nodes of the closed graph ``body`` into ``target`` (before
    ``before``, or at the end) with its inputs bound to ``args`` (None for
    an input the body never reads); returns the values of its outputs in
    ``target``.

    Body constants become constants of ``target``, named ``prefix`` plus
    the last dotted part of their name (give a nested ``target``'s prefix so
    no name repeats an enclosing graph's) and avoiding ``reserved`` (pass
    ``nested_names(target)``); pass the same ``constants`` dict (body
    constant -> target value) to several calls to make them once.
    Copied nodes keep their own origins, else get ``origins``, and are appended
    to ``created`` when given. They keep the body's types, refined where an
    argument's type differs from its body input's (the body's dims are its
    own names, an argument may know them: ``Graph.reinfer``). Linear in the
    body's size.
    """
    if len(args) != len(body.inputs):
        raise ValueError(f"graph @{body.name} takes {len(body.inputs)} inputs, got {len(args)}")
    constants = {} if constants is None else constants
    env: dict[Value, Value] = dict(zip(body.inputs, args))
    for c in body.constants.values():
        if c not in constants:
            name = prefix + c.name.rsplit(".", 1)[-1]
            constants[c] = add_fresh_constant(target, c.const, name, reserved or set(), c.type)
        env[c] = constants[c]
    retype = {v for v, a in zip(body.inputs, args) if a is not None and a.type != v.type}
    stale: list[Node] = []  # copies reading an argument of another type than their body input's
    for node in body:
        clone = _clone_node(target, node, [env[v] for v in node.inputs])
        clone.origins = node.origins or origins
        if before is None:
            target.append(clone)
        else:
            target.insert_before(before, clone)
        if created is not None:
            created.append(clone)
        if retype and any(v in retype for v in node.inputs):
            stale.append(clone)
        env.update(zip(node.outputs, clone.outputs))
    if stale:
        target.reinfer(stale)
    return [env[v] for v in body.outputs]


def _clone_node(graph: Graph, node: Node, inputs: list[Value]) -> Node:
    clone = graph.create_node(node.op, inputs, node.attrs, [v.type for v in node.outputs],
                              output_names=[v.name for v in node.outputs],
                              subgraphs={role: copy_graph(g) for role, g in node.subgraphs.items()})
    clone.origins = node.origins
    return clone
