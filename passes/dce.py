"""``dce``: dead-code elimination.

Erases every node none of whose outputs reaches a graph output, and every
constant nothing reads. One backward walk over the node list: O(nodes).

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
from ir.transforms import remove_dead_code
from passes.base import Pass, register_pass


@register_pass
@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    """Remove nodes whose results are unused and unused constants."""

    name = "dce"

    def run(self, graph: Graph) -> bool:
        return remove_dead_code(graph)
