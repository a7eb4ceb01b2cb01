"""The declarative rewrite engine of the IR, in three parts:

- the pattern language (``pattern``: ``Var``, ``Const``, ``ConstEq``,
  ``Op``, ``AnyOf``, ``Match``, and the shared ``single_use``/``producer``
  tests) and its rules (``rules``: ``Rule``, ``RuleSet``, and the filters
  each rule derives from its pattern);
- the rewriter (``rewriter``: what a rewrite may create, ``assume``, the
  replacement's type test ``refines``, ``erase_dead``);
- the driver (``driver``: ``apply_rules``, a worklist to a fixpoint over a
  graph and its nested graphs, and ``RuleSetPass``, the pass applying one
  rule set).

Rules read like data::

    x = Var("x")
    RULES = RuleSet([
        # maximum(x, 0) -> relu(x), 0 any broadcast constant, either operand order
        Rule("max-to-relu", Op("maximum", x, ConstEq(0)), lambda rw, m: rw.add("relu", [m.x])),
    ])
"""

from passes.rewrite.driver import Miss, RuleSetPass, apply_rules
from passes.rewrite.pattern import AnyOf, Const, ConstEq, Match, Op, Pattern, Var, all_equal, producer, single_use
from passes.rewrite.rewriter import Rewriter, erase_dead, refines
from passes.rewrite.rules import MAX_CLAUSES, Rule, RuleSet, op_requirements, reads_constant

__all__ = ["MAX_CLAUSES", "AnyOf", "Const", "ConstEq", "Match", "Miss", "Op", "Pattern", "Rewriter", "Rule",
           "RuleSet", "RuleSetPass", "Var", "all_equal", "apply_rules", "erase_dead", "op_requirements",
           "producer", "reads_constant", "refines", "single_use"]
