"""``shape-inference``: give every value the most precise type its op's
type rule can prove, symbolic dims included.

One forward walk in program order (nested graphs first, where a node has
them). At each node:

1. the op's type rule (``OpDef.infer``, next to the op in ``ir/ops``) runs
   on the current input types; ops with shape operands
   (``OpDef.symbolic_inputs``: reshape, expand, slice, split, range) also get
   what is known of those operands' values (``passes.shape_facts``), so::

       %s: i64[3] = shape(%x)                 (%x: f32[N,3,4])
       %n: i64[] = gather(%s, %zero) {axis=0}
       %u: i64[1] = unsqueeze(%n) {axes=[0]}
       %t: i64[2] = concat(%u, %minus_one) {axis=0}
       %y: f32[?,?] = reshape(%x, %t)    ->   %y: f32[N,12] = reshape(%x, %t)

2. each output adopts, dim by dim, what is strictly more precise: an int
   for a symbol, an expression or ``?``, and a symbol or an expression for
   ``?``. A declared int is never changed: an inferred different int is a
   contradiction and raises ``ShapeInferenceError`` (naming the value, both
   types and the source line). A declared symbol or expression is kept (it
   may be the user's name for the dim).

3. the contents of small integer outputs are recorded for the nodes after.

Graph inputs and constants keep their types. Each node is visited once and
every symbolic operation is bounded (``ir.symbolic.MAX_TERMS``), so the pass
is linear in graph size (``bench/bench_shape_inference.py``).

A later run on the same graph is incremental: the first run starts the
graph's change record (``Graph.track_changes``) and keeps its shape facts;
the next visits, in program order, only the nodes inserted or given a new
input since (the mutation API records them) and, transitively, the readers
of every value whose type or known contents it changed, plus every node
with nested graphs (whose bodies it redoes in full). Its types are those a
full run would give: the type rule of a node whose input types are as
before returns what it returned, and refining by it again changes nothing.
Code that changes types in place elsewhere (``ir.transforms.refine_types``)
calls ``Graph.forget_changes``, and the next run is a full one.
"""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from ir import Graph, Node, TensorType, get_op
from ir.errors import ShapeInferenceError
from ir.opdef import OpError
from ir.printer import format_graph
from ir.types import Dim
from passes.base import Pass, register_pass
from passes.shape_facts import ShapeValues


@register_pass
@dataclass(frozen=True)
class ShapeInference(Pass):
    """Refine every value's type (see the module docstring); ``run`` returns
    True if any type changed."""

    name = "shape-inference"

    def run(self, graph: Graph) -> bool:
        values = _FACTS.get(graph)
        todo = graph.changed_nodes()
        if values is None or todo is None:
            values = ShapeValues()
            changed = infer_shapes(graph, graph, values)
        else:
            changed = _infer_changed(graph, values, todo)
        _FACTS[graph] = values
        graph.track_changes()
        return changed


# the shape facts of each graph's last run, valid while its change record runs
_FACTS: WeakKeyDictionary[Graph, ShapeValues] = WeakKeyDictionary()


def _infer_changed(graph: Graph, values: ShapeValues, todo: list[Node]) -> bool:
    """The incremental run (module docstring): re-infer the nodes of
    ``todo``, the readers of what they changed, and the nodes with nested
    graphs, in program order; ``values`` holds the last run's facts."""
    pending = set(todo)
    if not pending and not graph.nodes_with_subgraphs():
        return False
    known = values.known
    changed = False
    for node in graph:
        if node.subgraphs:
            for sub in node.subgraphs.values():
                changed |= infer_shapes(sub, graph, values)
        elif node not in pending:
            continue
        before = [known.get(v) for v in node.outputs]
        node_changed = _infer_node(node, graph, values)
        values.update(node)
        if node_changed or any(known.get(v) != b for v, b in zip(node.outputs, before)):
            pending.update(use.node for v in node.outputs for use in v._uses)
        changed |= node_changed
    return changed


def infer_shapes(graph: Graph, root: Graph, values: ShapeValues) -> bool:
    """Refine the types of ``graph``'s nodes in place (``root`` is the
    outermost graph, for error messages); returns whether a type changed."""
    changed = False
    for node in graph:
        for sub in node.subgraphs.values():
            changed |= infer_shapes(sub, root, values)
        changed |= _infer_node(node, root, values)
        values.update(node)
    return changed


def _infer_node(node: Node, root: Graph, values: ShapeValues) -> bool:
    opdef = get_op(node.op)
    inputs = node._inputs
    consts = [v.const for v in inputs]
    if opdef.symbolic_inputs:
        consts = [c if c is not None else values.array(v) for c, v in zip(consts, inputs)]
    try:
        inferred = opdef.infer_types([v.type for v in inputs], node.attrs, consts, node.subgraphs)
    except OpError as e:
        raise _error(node, root, f"the type rule rejects the inputs once their shapes are known: {e}") from None
    outputs = node.outputs
    if len(outputs) == 1 and len(inferred) == 1 and outputs[0].type == inferred[0]:
        return False  # the common case: nothing to refine
    changed = False
    for i, (out, want) in enumerate(zip(outputs, inferred, strict=True)):
        refined = _refine(out.type, want)
        if refined is None:
            raise _error(node, root, f"output {i} is declared {out.type} but its inputs give {want}")
        if refined != out.type:
            out.type = refined
            changed = True
    return changed


def _refine(declared: TensorType, inferred: TensorType) -> TensorType | None:
    """``declared`` with each dim made as precise as ``inferred``'s, or None
    when they contradict (dtype, rank, or two different ints)."""
    if declared == inferred:
        return declared
    if declared.dtype != inferred.dtype or declared.rank != inferred.rank:
        return None
    dims: list[Dim] = []
    for d, i in zip(declared.shape, inferred.shape):
        if isinstance(d, int):
            if isinstance(i, int) and i != d:
                return None
            dims.append(d)
        elif isinstance(i, int) or d is None:
            dims.append(i)
        else:
            dims.append(d)
    return TensorType(declared.dtype, tuple(dims))


def _error(node: Node, root: Graph, why: str) -> ShapeInferenceError:
    printed = format_graph(root)
    line = printed.lines_of.get(node)
    text = printed.lines[line].strip() if line is not None else node.op
    where = f" (at {node.trace})" if node.trace else ""
    return ShapeInferenceError(f"shape-inference: {node.op} node{where}: {why}\n  {text}", node)
