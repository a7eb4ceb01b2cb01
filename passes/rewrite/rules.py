"""Rules and rule sets, and the filters the engine derives from a rule's
pattern so that it skips a rule that surely cannot fire without matching.

A rule is a pattern and a rewrite, one to three lines::

    x = Var("x")
    Rule("max-to-relu", Op("maximum", x, ConstEq(0)), lambda rw, m: rw.add("relu", [m.x]))

Every filter is read off the pattern (as tinygrad derives its early rejects
from a ``UPat``), so a rule cannot disagree with its own fast path:

- ``Rule.requires`` (``op_requirements``): the op sets one of which a graph
  must hold for the pattern to match anywhere in it; ``apply_rules`` drops
  the rule while its graph lacks them.
- ``Rule.needs_constant`` (``reads_constant``): every match reads a graph
  constant; the rule is dropped while the graph has none.
- ``Rule.child_ops``: the ops that must compute some input of the root
  (its ``Op`` children and ``any_input``); a node whose inputs lack one is
  skipped.
- ``Rule.may_match`` (``compile_skeleton``): the pattern's skeleton (output
  count, arities, producer ops and constants two levels down, the root's
  ``attrs`` and ``where``, ``any_input``), compiled once into closures, so a
  node costs a few attribute reads per pattern level.

A node predicate that the pattern cannot state structurally goes in the
root's ``where=`` (a named function, so a miss names it).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ir import Node, Value
from ir.ops import get_op
from passes.rewrite.pattern import AnyOf, Const, Match, Op, Pattern

RewriteFn = Callable[["Rewriter", Match], "Value | str"]  # noqa: F821 - passes.rewrite.rewriter.Rewriter


@dataclass(frozen=True)
class Rule:
    """A rewrite rule: a name, a root ``Op`` pattern and a rewrite function
    ``rewrite(rw, m)`` returning the replacement value or a string saying why
    it declines. ``defined_at`` (file:line) is filled in where the rule is
    constructed, so debug output says which rule fired or missed. The
    filters (module docstring) are computed once here from the pattern."""

    name: str
    pattern: Op
    rewrite: RewriteFn
    defined_at: str = ""
    requires: tuple[frozenset[str], ...] = field(init=False, repr=False, compare=False, default=())
    needs_constant: bool = field(init=False, repr=False, compare=False, default=False)
    child_ops: frozenset[str] = field(init=False, repr=False, compare=False, default=frozenset())
    may_match: Callable[[Node], bool] = field(init=False, repr=False, compare=False, default=None)

    def __post_init__(self):
        if not self.defined_at:
            frame = sys._getframe(2)  # __post_init__ <- __init__ <- the line building the rule
            object.__setattr__(self, "defined_at", f"{frame.f_code.co_filename}:{frame.f_lineno}")
        object.__setattr__(self, "requires", op_requirements(self.pattern))
        object.__setattr__(self, "needs_constant", reads_constant(self.pattern))
        object.__setattr__(self, "child_ops", child_ops(self.pattern))
        object.__setattr__(self, "may_match", compile_skeleton(self.pattern))

    def possible(self, ops: set[str] | frozenset[str], constants: bool = True) -> bool:
        """Whether the pattern could match in a graph whose nodes have the op
        names ``ops`` and which has graph constants or not (False: it surely
        cannot; see ``op_requirements`` and ``reads_constant``)."""
        return (constants or not self.needs_constant) and any(clause <= ops for clause in self.requires)


class RuleSet:
    """An ordered collection of rules; sets combine with ``+``."""

    def __init__(self, rules: Iterable[Rule] = ()):
        self.rules = list(rules)

    def __add__(self, other: "RuleSet") -> "RuleSet":
        return RuleSet(self.rules + other.rules)

    def __iter__(self):
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)


# -- filters derived from a pattern --------------------------------------------
def reads_constant(p: Pattern) -> bool:
    """Whether every match of ``p`` binds a graph constant: ``p`` is a
    ``Const``, an ``Op`` one of whose inputs (``rest`` aside: it may match
    no input) or whose ``any_input`` reads a constant, or an ``AnyOf`` whose
    every alternative does. Such a pattern cannot match in a graph without
    constants."""
    if isinstance(p, Const):
        return True
    if isinstance(p, Op):
        return any(reads_constant(q) for q in p.inputs) or (p.any_input is not None and reads_constant(p.any_input))
    if isinstance(p, AnyOf):
        return bool(p.alternatives) and all(reads_constant(q) for q in p.alternatives)
    return False


MAX_CLAUSES = 64  # op_requirements keeps at most this many alternative op sets


def op_requirements(p: Pattern) -> tuple[frozenset[str], ...]:
    """The op sets one of which a graph must hold entirely for ``p`` to
    match a value in it (a disjunction of conjunctions): an ``Op`` needs its
    op and one requirement of each input pattern and of its ``any_input``;
    an ``AnyOf`` one requirement of any alternative; ``Var``, ``Const``,
    ``rest`` and unknown pattern classes need nothing. Past ``MAX_CLAUSES``
    alternatives the ops common to all of them stand for the whole (still a
    necessary condition, only weaker). Subsumed sets are dropped.

    Returns:
        A tuple of frozensets of op names; ``(frozenset(),)`` when nothing
        is required.
    """
    clauses = _requirements(p)
    minimal = [c for c in clauses if not any(o < c for o in clauses)]
    return tuple(dict.fromkeys(sorted(minimal, key=sorted)))


def _requirements(p: Pattern) -> list[frozenset[str]]:
    if isinstance(p, Op):
        clauses = [frozenset((p.op,))]
        for q in (*p.inputs, p.any_input) if p.any_input is not None else p.inputs:
            clauses = _bounded([c | d for c in clauses for d in _requirements(q)])
        return clauses
    if isinstance(p, AnyOf):
        return _bounded([c for q in p.alternatives for c in _requirements(q)])
    return [frozenset()]


def _bounded(clauses: list[frozenset[str]]) -> list[frozenset[str]]:
    clauses = list(dict.fromkeys(clauses))
    if len(clauses) <= MAX_CLAUSES:
        return clauses
    return [frozenset.intersection(*clauses)]


def child_ops(p: Op) -> frozenset[str]:
    """The ops that must produce some input of a node ``p`` matches: its
    direct ``Op`` children and its ``any_input`` when that is an ``Op``
    (``AnyOf`` and the rest are not required)."""
    children = [*p.inputs, p.any_input] if p.any_input is not None else p.inputs
    return frozenset(q.op for q in children if isinstance(q, Op))


SKELETON_DEPTH = 2  # pattern levels below the root the skeleton check looks at


def compile_skeleton(p: Op, depth: int = SKELETON_DEPTH) -> Callable[[Node], bool]:
    """A test ``check(node)`` that is False only if ``p`` surely cannot match
    ``node``: a wrong output count or arity, or (``depth`` levels down) an
    input pattern that needs a producer op or a constant the input does not
    have, or no input for ``any_input``. Ignores bindings, inner attributes
    and constraints and single use, so it never rejects a match (the root's
    ``where`` and ``attrs`` are checked: they read only the node). Built once
    per pattern as closures, so a node costs a few attribute reads per
    pattern level."""
    n = len(p.inputs)
    variadic = p.rest is not None
    where = p.where if depth == SKELETON_DEPTH else None
    attrs = tuple(p.attrs.items()) if depth == SKELETON_DEPTH else ()
    checks = [_compile_value(q, depth - 1) for q in p.inputs] if depth > 0 else []
    if all(c is None for c in checks):
        checks = []
    some = _compile_value(p.any_input, depth - 1) if depth > 0 and p.any_input is not None else None
    swap = bool(checks) and n == 2 and not variadic and get_op(p.op).commutative
    first, second = (checks + [None, None])[:2]

    def check(node: Node) -> bool:
        values = node._inputs
        k = len(values)
        if len(node.outputs) != 1 or (k != n and (not variadic or k < n)):
            return False
        if where is not None and not where(node):
            return False
        for key, want in attrs:
            have = node.attrs.get(key)
            if not (want(have) if callable(want) else have == want):
                return False
        if some is not None and not any(some(v) for v in values):
            return False
        if not checks:
            return True
        if all(c is None or c(v) for c, v in zip(checks, values)):
            return True
        return swap and (first is None or first(values[1])) and (second is None or second(values[0]))

    return check


def _compile_value(p: Pattern, depth: int) -> Callable[[Value], bool] | None:
    """The value-level part of ``compile_skeleton``: a test on an input value
    (an ``Op`` needs that producer op, a ``Const`` a constant, an ``AnyOf``
    one alternative), or None when every value may match (``Var``, or a
    pattern class this check does not know)."""
    if isinstance(p, Op):
        op, node_check = p.op, compile_skeleton(p, depth)
        return lambda v: v.producer is not None and v.producer.op == op and node_check(v.producer)
    if isinstance(p, Const):
        return lambda v: v.const is not None
    if isinstance(p, AnyOf):
        alternatives = [_compile_value(q, depth) for q in p.alternatives]
        if any(a is None for a in alternatives):
            return None
        return lambda v: any(a(v) for a in alternatives)
    return None
