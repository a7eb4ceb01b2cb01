"""``dce``: dead-code elimination.

Erases every node none of whose outputs reaches a graph output, and every
constant nothing reads, in the graph and in every nested body
(``ir.transforms.walk_graphs``; a body's inputs stay, as its node's
signature fixes them). One backward walk over each node list: O(nodes).

Before::

    %a: f32[3] = exp(%x)
    %b: f32[3] = neg(%x)      # unused
    return %a

After::

    %a: f32[3] = exp(%x)
    return %a
"""

from __future__ import annotations

from dataclasses import dataclass

from ir import Graph
from ir.transforms import remove_dead_code, walk_graphs
from passes.base import Pass, register_pass


@register_pass
@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    """Remove nodes whose results are unused and unused constants."""

    name = "dce"
    visits_nested_graphs = True

    def run(self, graph: Graph) -> bool:
        changed = False
        for g in walk_graphs(graph):  # outer graphs first: a dead loop's body is never visited
            changed |= remove_dead_code(g)
        return changed
