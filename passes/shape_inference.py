"""``shape-inference``: give every value the most precise type its op's
type rule can prove, symbolic dims included.

One forward walk in program order (nested graphs first, where a node has
them: ``ir.transforms.walk(bodies_first=True)``). At each node:

1. the op's type rule (``OpDef.infer``, next to the op in ``ir/ops``) runs
   on the current input types; ops with shape operands
   (``OpDef.symbolic_inputs``: reshape, expand, slice, split, range) also get
   what is known of those operands' values (``passes.shape_facts``), so::

       %s: i64[3] = shape(%x)                 (%x: f32[N,3,4])
       %n: i64[] = gather(%s, %zero) {axis=0}
       %u: i64[1] = unsqueeze(%n) {axes=[0]}
       %t: i64[2] = concat(%u, %minus_one) {axis=0}
       %y: f32[?,?] = reshape(%x, %t)    ->   %y: f32[N,12] = reshape(%x, %t)

2. each output adopts, dim by dim, what is strictly more precise
   (``ir.core.infer_node``, ``ir.types.refine_type``): an int for a symbol,
   an expression or ``?``, and a symbol or an expression for ``?``. A
   declared int is never changed: an inferred different int is a
   contradiction and raises ``ShapeInferenceError`` (naming the value, both
   types and the source line). A declared symbol or expression is kept (it
   may be the user's name for the dim).

3. the contents of small integer outputs are recorded for the nodes after.

Graph inputs and constants keep their types. Each node is visited once and
every symbolic operation is bounded (``ir.symbolic.MAX_TERMS``), so the pass
is linear in graph size (``bench/bench_shape_inference.py``).

The pass establishes the pipeline's ``types`` analysis (``Pass.ensures``):
the passes after it keep types fresh through the mutation API
(``Graph.replace_all_uses`` re-infers the readers of a value replaced by
one of another type), and ``run_pipeline`` runs this pass again before a
pass that ``requires`` fresh types when a pass that does not ``preserve``
them (a plugin) changed the graph. Every run is a full one.
"""

from __future__ import annotations

from dataclasses import dataclass

from ir import Graph, get_op
from ir.core import infer_node
from ir.transforms import walk
from passes.base import TYPES, Pass, register_pass
from passes.shape_facts import ShapeValues


@register_pass
@dataclass(frozen=True)
class ShapeInference(Pass):
    """Refine every value's type (see the module docstring); ``run`` returns
    True if any type changed."""

    name = "shape-inference"
    ensures = (TYPES,)
    visits_nested_graphs = True

    def run(self, graph: Graph) -> bool:
        return infer_shapes(graph)


def infer_shapes(graph: Graph) -> bool:
    """Refine the types of every node of ``graph`` and of its nested graphs
    in place (module docstring); returns whether a type changed.

    Raises:
        ShapeInferenceError: a type rule rejects its inputs or contradicts a
            declared static dim.
    """
    values = ShapeValues()  # nested graphs read no outer value except through their node: one table serves all
    changed = False
    for node, _ in walk(graph, bodies_first=True):
        consts = None
        if get_op(node.op).symbolic_inputs:  # reshape, expand, slice...: what is known of their shape operands
            consts = [v.const if v.const is not None else values.array(v) for v in node._inputs]
        if infer_node(node, consts, graph):
            changed = True
        values.update(node)
    return changed
