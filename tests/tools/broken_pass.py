"""A deliberately broken plugin pass (a test fixture): ``broken-relu``
rewrites ``maximum(x, 0)`` into ``abs(x)``, which is wrong for negative x.
``check_passes`` must catch it and its reproducer must replay it (``opt
--load tests.tools.broken_pass`` registers it)."""

from __future__ import annotations

from dataclasses import dataclass

from passes import Pass
from passes.rewrite import ConstEq, Op, Rule, Var, apply_rules

x = Var("x")
RULES = [Rule("max0-to-abs", Op("maximum", x, ConstEq(0)), lambda rw, m: rw.add("abs", [m.x]))]


@dataclass(frozen=True)  # not registered on import: ``--load`` registers it
class BrokenRelu(Pass):
    """maximum(x, 0) -> abs(x): wrong on purpose (a test fixture)."""

    name = "broken-relu"
    unused_option: int = 0

    def run(self, graph) -> bool:
        return apply_rules(graph, RULES)
