"""The driver of the rewrite engine: ``apply_rules`` runs rule sets to a
fixpoint with a worklist, in a graph and every graph nested in it, and
``RuleSetPass`` is the pass that applies one rule set.

Every miss (pattern mismatch or decline) is logged at DEBUG level on the
``passes.rewrite`` logger with the rule's name and where it was defined,
and recorded in ``trace`` when one is passed to ``apply_rules``. To see why
a rule did not fire, use
``logging.getLogger("passes.rewrite").setLevel(logging.DEBUG)``.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Callable, ClassVar, Iterable, NamedTuple, Sequence

from ir import Graph, Node, Value
from ir.core import merge_origins
from ir.transforms import refine_types, walk_graphs, walk_scopes
from passes.base import Pass
from passes.rewrite.pattern import Match
from passes.rewrite.rewriter import Rewriter, erase_dead, refines
from passes.rewrite.rules import Rule, RuleSet
from passes.rewrite_log import RewriteLog, active_log

log = logging.getLogger("passes.rewrite")


class Miss(NamedTuple):
    """Why ``rule`` did not fire on a node (``node`` is its op and output name)."""

    rule: str
    node: str
    reason: str


def apply_rules(graph: Graph, rules: Iterable[Rule], *, trace: list[Miss] | None = None,
                max_rewrites: int | None = None) -> bool:
    """Apply ``rules`` to ``graph`` and to every graph nested in it
    (``ir.transforms.walk_scopes``: each body on its own, new constants
    named apart from the enclosing and nested graphs') until none fires (a
    fixpoint).

    Every node is visited; after a rewrite, the readers of the replaced value
    and the nodes the rewrite created are revisited, nodes left dead are
    erased, and the reader of a value left with a single use is revisited.
    A replacement must have the root's type, or one that only makes unknown
    dims known (``refines``); otherwise the rewrite is undone and recorded
    as a miss.

    Args:
        graph: rewritten in place.
        rules: tried in order on each node whose op is a rule's root op.
        trace: if given, receives a ``Miss`` per rule that did not fire.
            The active ``passes.rewrite_log.RewriteLog`` (if any) counts the
            rules that fired and declined, and its opt-bisect budget stops
            the rewriting when spent.
        max_rewrites: a safety bound (default: 10 per node plus 100).

    Returns:
        True if any rule fired.

    Raises:
        RuntimeError: more than ``max_rewrites`` rewrites (a rule set that
            does not terminate).
    """
    rules = list(rules)
    # A trace or the debug log wants every rule's reason for missing: no op filter then.
    quick = trace is None and not log.isEnabledFor(logging.DEBUG)
    constants = any(g.constants for g in walk_graphs(graph)) if quick else True
    active = _ActiveRules(rules, graph.op_names() if quick else None, constants)
    if not active.by_op:
        return False  # no rule can match: O(op names), no node visited
    by_op = {rule.pattern.op for rule in rules}
    changed = False
    for g, reserved in walk_scopes(graph):  # nested bodies too, each on its own
        if any(g.op_count(op) for op in by_op):
            changed |= _apply_in(g, by_op, active, trace, max_rewrites, reserved)
    return changed


class _ActiveRules:
    """The rules that could match given the op names present in the graph
    (``Rule.possible``), per root op, each with the ops its root's inputs
    must be produced by (``Rule.child_ops``) and its skeleton check
    (``Rule.may_match``). ``add_ops`` widens the set when a
    rewrite creates an op that was absent, so a rule is never skipped on a
    node it could match: the engine visits the same nodes in the same order
    as without this filter, it only skips rules that surely decline."""

    def __init__(self, rules: list[Rule], ops: set[str] | None, constants: bool = True):
        self.rules = rules
        self.ops = set(ops) if ops is not None else None  # None: every rule is active
        self.constants = constants  # whether the graph has constants (``Rule.needs_constant``)
        self._update()

    def add_constants(self) -> None:
        """Note that a rewrite made a graph constant; recompute if there was none."""
        if not self.constants:
            self.constants = True
            self._update()

    def add_ops(self, ops: Sequence[str]) -> None:
        """Note the op names of new nodes (a list: read twice); recompute
        if one was absent."""
        if self.ops is None or self.ops.issuperset(ops):
            return
        new = [op for op in ops if op not in self.ops]
        if new:
            self.ops.update(new)
            self._update()

    def _update(self) -> None:
        self.by_op: dict[str, list[tuple[Rule, frozenset[str], Callable[[Node], bool]]]] = {}
        for rule in self.rules:
            if self.ops is None or rule.possible(self.ops, self.constants):
                self.by_op.setdefault(rule.pattern.op, []).append((rule, rule.child_ops, rule.may_match))


def _apply_in(graph: Graph, by_op: set[str], active: _ActiveRules, trace: list[Miss] | None,
              max_rewrites: int | None, reserved: set[str]) -> bool:
    """``apply_rules`` on the nodes of one graph (not its nested graphs);
    new constants avoid the ``reserved`` names. ``by_op``: every rule's root
    op (the nodes visited); ``active``: the rules that may match."""
    # Without a trace or debug log, a rule whose pattern's skeleton (ops,
    # arities, constants; two levels deep; ``Rule.may_match``) cannot fit is
    # skipped before the full match builds its reasons for missing.
    quick = trace is None and not log.isEnabledFor(logging.DEBUG)
    rw = Rewriter(graph, reserved)
    outputs = set(graph.outputs)  # kept up to date: only replace_all_uses below changes them
    work = deque(n for n in graph if n.op in by_op)
    queued = set(work)
    budget = max_rewrites if max_rewrites is not None else 10 * len(graph) + 100
    session = active_log()
    changed = False
    while work:
        node = work.popleft()
        queued.discard(node)
        if node.graph is not graph:
            continue
        have = None  # the ops computing the node's inputs, built when a rule needs them
        for rule, needs, may_match in active.by_op.get(node.op, ()):
            if quick:
                if needs:
                    if have is None:
                        have = {v.producer.op for v in node._inputs if v.producer is not None}
                    if not needs <= have:
                        continue
                if not may_match(node):
                    continue
            if session is not None and not session.allows():
                return changed  # the opt-bisect budget is spent
            new = _try(rw, rule, node, trace, outputs, session, quick)
            if new is None:
                continue
            budget -= 1
            if budget < 0:
                raise RuntimeError(f"rule set does not terminate (last rule: {rule.name} at {rule.defined_at})")
            old = node.outputs[0]
            active.add_ops([n.op for n in rw.created])
            if not active.constants and graph.constants:  # the rewrite made the graph's first constant
                active.add_constants()
            touched = [use.node for use in old.uses()] + rw.created
            graph.replace_all_uses(old, new)
            if rw.pending != rw.bounds:  # the rewrite assumed new size facts: every type learns them
                rw.bounds = graph.size_bounds = rw.pending
                refine_types(graph, rw.bounds)
            if old in outputs:
                outputs.discard(old)
                outputs.add(new)
            # A value that lost readers to the erasure may now be single-use:
            # its remaining reader may match now.
            touched += [v.uses()[0].node for v in erase_dead(graph, [node], outputs) if v.num_uses == 1]
            for n in touched:
                if n not in queued and n.graph is graph and n.op in by_op:
                    queued.add(n)
                    work.append(n)
            changed = True
            break
    return changed


def _try(rw: Rewriter, rule: Rule, node: Node, trace: list[Miss] | None, outputs: set[Value],
         session: RewriteLog | None = None, checked: bool = False) -> Value | None:
    """Match ``rule`` on ``node`` and run its rewrite: the replacement value,
    or None (a miss, undone and reported). ``checked``: the rule's skeleton
    check passed on ``node`` (``Op.match_node``)."""
    m = Match(node, outputs)
    why = rule.pattern.match_node(node, m, checked=checked)
    result: Value | str | None = None
    if why is None:
        rw.begin(node)
        result = rule.rewrite(rw, m)
        rw.matched = m.nodes
        if isinstance(result, Value) and not refines(result.type, node.output.type, rw.pending):
            result = f"replacement type {result.type} != {node.output.type}"
        why = result if isinstance(result, str) else None
        if why is not None and session is not None:  # the pattern matched, the rewrite declined
            session.note_declined(rule.name, why)
    if why is not None:
        if trace is not None or log.isEnabledFor(logging.DEBUG):
            label = f"{node.op} -> %{node.output.name or '?'}"
            log.debug("rule %s (%s) did not fire on %s: %s", rule.name, rule.defined_at, label, why)
            if trace is not None:
                trace.append(Miss(rule.name, label, why))
        rw.undo(outputs)
        return None
    log.debug("rule %s (%s) fired on %s", rule.name, rule.defined_at, node.op)
    # Provenance: what the rewrite built computes what every matched node did.
    origins = merge_origins(*(n.origins for n in rw.matched))
    for n in rw.created:
        # ``Rewriter.add`` gave it the root's origins, which ``origins`` begins with
        n.origins = origins if n.origins is node.origins else merge_origins(n.origins, origins)
    if session is not None:
        session.note_fired(rule.name)
    return result


@dataclass(frozen=True)
class RuleSetPass(Pass):
    """A pass that applies one rule set with ``apply_rules`` (nested graphs
    included): a subclass sets ``name`` and ``rules``, or overrides
    ``rule_set`` when its options choose the rules."""

    rules: ClassVar[RuleSet] = RuleSet()
    visits_nested_graphs = True  # apply_rules walks every nested graph

    def rule_set(self) -> RuleSet:
        """The rules this pass applies (default: ``rules``)."""
        return self.rules

    def run(self, graph: Graph) -> bool:
        return apply_rules(graph, self.rule_set())
