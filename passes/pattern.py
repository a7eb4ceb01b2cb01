"""A declarative pattern-rewrite engine for the IR.

A **pattern** describes a small dataflow tree; a **rule** pairs a pattern
with a rewrite; ``apply_rules`` runs rule sets to a fixpoint with a
worklist. Rules read like data::

    x = Var("x")
    RULES = RuleSet([
        # maximum(x, 0) -> relu(x), 0 any broadcast constant, either operand order
        Rule("max-to-relu", Op("maximum", x, ConstEq(0)), lambda rw, m: rw.add("relu", [m.x])),
    ])

Pattern parts:

- ``Var(name, where=pred)`` binds any value (``pred(value)`` must hold); a
  name used twice must bind the same value (``x * sigmoid(x)``).
- ``Const(name, where=pred)`` binds a graph constant (``pred(array)``);
  ``ConstEq(v)`` matches a constant whose every element equals ``v`` (a
  broadcast scalar of any shape).
- ``Op(op, *inputs, name=, attrs={...}, where=pred, single_use=True)``
  matches a value produced by an ``op`` node. ``attrs`` values are exact
  values or predicates. Commutative ops (``OpDef.commutative``) also try the
  swapped operand order. Inner ``Op`` patterns require their value to have a
  single use (so the rewrite leaves nothing duplicated); pass
  ``single_use=False`` to allow more. The root's node binds as ``m.root``.

A rewrite ``fn(rw, m)`` returns the replacement value for the root, or a
string saying why it declines. Every miss (pattern mismatch or decline) is
logged at DEBUG level on the ``passes.pattern`` logger with the rule's name
and where it was defined, and recorded in ``trace`` when one is passed to
``apply_rules``. To see why a rule did not fire, use
``logging.getLogger("passes.pattern").setLevel(logging.DEBUG)``.
"""

from __future__ import annotations

import inspect
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import numpy as np

from ir import Graph, Node, Value
from ir.ops import get_op

log = logging.getLogger(__name__)


class Match:
    """The bindings of a successful match: ``m.x`` / ``m["x"]`` give the
    value (``Var``/``Const``) or node (named ``Op``) bound to ``x``;
    ``m.root`` is the matched root node."""

    def __init__(self, root: Node):
        self.root = root
        self._bindings: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        return self._bindings[name]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_bindings"][name]
        except KeyError:
            raise AttributeError(f"pattern binds no {name!r}") from None

    def __contains__(self, name: str) -> bool:
        return name in self._bindings

    def _bind(self, name: str | None, thing: Any) -> str | None:
        if name is None:
            return None
        prev = self._bindings.get(name)
        if prev is None:
            self._bindings[name] = thing
            return None
        return None if prev is thing else f"{name} is bound to another value"


class Pattern:
    """Base class of pattern parts. ``match(value, m)`` returns None on
    success (recording bindings in ``m``) or the reason it failed."""

    def match(self, value: Value, m: Match) -> str | None:  # pragma: no cover - abstract
        raise TypeError(f"{type(self).__name__} is not a pattern")


@dataclass(frozen=True)
class Var(Pattern):
    """Any value, bound to ``name`` (None: not bound), satisfying ``where``."""

    name: str | None = None
    where: Callable[[Value], bool] | None = None

    def match(self, value: Value, m: Match) -> str | None:
        if self.where is not None and not self.where(value):
            return f"{self.name or 'value'} %{value.name or '?'} fails its constraint"
        return m._bind(self.name, value)


@dataclass(frozen=True)
class Const(Pattern):
    """A graph constant, bound to ``name``, whose array satisfies ``where``."""

    name: str | None = None
    where: Callable[[np.ndarray], bool] | None = None

    def match(self, value: Value, m: Match) -> str | None:
        if value.const is None:
            return f"%{value.name or '?'} is not a constant"
        if self.where is not None and not self.where(value.const):
            return f"constant %{value.name} fails its constraint"
        return m._bind(self.name, value)


def ConstEq(scalar: float | int | bool, name: str | None = None) -> Const:
    """A non-empty constant whose every element equals ``scalar`` (any shape,
    so a broadcast scalar matches too)."""
    return Const(name, lambda a: a.size > 0 and bool(np.all(a == scalar)))


@dataclass(frozen=True)
class Op(Pattern):
    """A value produced by an ``op`` node whose inputs match ``inputs``.

    Attributes:
        op: the IR op name.
        inputs: one pattern per input (the node must have exactly as many).
        name: binds the node.
        attrs: attribute name -> exact value or predicate on the value.
        where: predicate on the node.
        single_use: (inner patterns) the value must have one use and not be a
            graph output.
    """

    op: str
    inputs: tuple[Pattern, ...] = ()
    name: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    where: Callable[[Node], bool] | None = None
    single_use: bool = True

    def __init__(self, op: str, *inputs: Pattern, name: str | None = None, attrs: dict | None = None,
                 where: Callable[[Node], bool] | None = None, single_use: bool = True):
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "inputs", tuple(inputs))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "attrs", dict(attrs or {}))
        object.__setattr__(self, "where", where)
        object.__setattr__(self, "single_use", single_use)

    def __hash__(self) -> int:
        return hash((self.op, self.inputs, self.name))

    def match(self, value: Value, m: Match, *, root: bool = False) -> str | None:
        node = value.producer
        if node is None or node.op != self.op:
            return f"%{value.name or '?'} is not produced by {self.op}"
        if not root and self.single_use and (value.num_uses != 1 or _is_graph_output(value, node)):
            return f"{self.op} result %{value.name or '?'} has other uses"
        return self.match_node(node, m)

    def match_node(self, node: Node, m: Match) -> str | None:
        """Match ``node`` itself (the root's entry point)."""
        if len(node.outputs) != 1:
            return f"{node.op} has {len(node.outputs)} outputs"
        if len(node.inputs) != len(self.inputs):
            return f"{node.op} has {len(node.inputs)} inputs, pattern has {len(self.inputs)}"
        for key, want in self.attrs.items():
            have = node.attrs.get(key)
            ok = want(have) if callable(want) else have == want
            if not ok:
                return f"{node.op} attribute {key}={have!r} does not match"
        if self.where is not None and not self.where(node):
            return f"{node.op} node fails its constraint"
        orders = [self.inputs]
        if len(self.inputs) == 2 and get_op(self.op).commutative:
            orders.append(self.inputs[::-1])
        why = None
        for order in orders:
            saved = dict(m._bindings)
            why = _match_all(order, node.inputs, m)
            if why is None:
                return m._bind(self.name, node)
            m._bindings = saved
        return why


def _match_all(patterns: Sequence[Pattern], values: Sequence[Value], m: Match) -> str | None:
    for p, v in zip(patterns, values):
        why = p.match(v, m)
        if why is not None:
            return why
    return None


def _is_graph_output(value: Value, node: Node) -> bool:
    return node.graph is not None and value in node.graph.outputs


class Rewriter:
    """What a rewrite may do besides returning a value: create nodes and
    constants. New nodes go just before the matched root, carry its source
    line and its output's name hint, and are revisited by the rules.

    Attributes:
        graph: the graph being rewritten.
        root: the matched root node.
    """

    def __init__(self, graph: Graph):
        self.graph = graph
        self.root: Node | None = None
        self.created: list[Node] = []

    def add(self, op: str, inputs: Sequence[Value], attrs: dict | None = None) -> Value:
        """A new single-output ``op(inputs){attrs}`` before the root; returns its
        output (type inferred; ``ir.ops.OpError`` if the op rejects them)."""
        node = self.graph.create_node(op, list(inputs), attrs, output_names=[self.root.output.name])
        node.trace = self.root.trace
        self.graph.insert_before(self.root, node)
        self.created.append(node)
        return node.output

    def const(self, array, name: str = "const") -> Value:
        """A new graph constant holding a copy of ``array``."""
        return self.graph.add_constant(np.asarray(array), name)


RewriteFn = Callable[[Rewriter, Match], "Value | str"]


@dataclass(frozen=True)
class Rule:
    """A rewrite rule: a name, a root ``Op`` pattern and a rewrite function.
    ``defined_at`` (file:line) is filled in where the rule is constructed, so
    debug output says which rule fired or missed."""

    name: str
    pattern: Op
    rewrite: RewriteFn
    defined_at: str = ""

    def __post_init__(self):
        if not self.defined_at:
            frame = inspect.stack()[2]
            object.__setattr__(self, "defined_at", f"{frame.filename}:{frame.lineno}")


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


class Miss(NamedTuple):
    """Why ``rule`` did not fire on a node (``node`` is its op and output name)."""

    rule: str
    node: str
    reason: str


def apply_rules(graph: Graph, rules: Iterable[Rule], *, trace: list[Miss] | None = None,
                max_rewrites: int | None = None) -> bool:
    """Apply ``rules`` to ``graph`` until none fires (a fixpoint).

    Every node is visited; after a rewrite, the readers of the replaced value
    and the nodes the rewrite created are revisited, and nodes left dead are
    erased. A replacement must have exactly the root's type (otherwise the
    rewrite is undone and recorded as a miss).

    Args:
        graph: rewritten in place.
        rules: tried in order on each node whose op is a rule's root op.
        trace: if given, receives a ``Miss`` per rule that did not fire.
        max_rewrites: a safety bound (default: 10 per node plus 100).

    Returns:
        True if any rule fired.

    Raises:
        RuntimeError: more than ``max_rewrites`` rewrites (a rule set that
            does not terminate).
    """
    by_op: dict[str, list[Rule]] = {}
    for rule in rules:
        by_op.setdefault(rule.pattern.op, []).append(rule)
    rw = Rewriter(graph)
    work = deque(n for n in graph if n.op in by_op)
    queued = set(work)
    budget = max_rewrites if max_rewrites is not None else 10 * len(graph) + 100
    changed = False
    while work:
        node = work.popleft()
        queued.discard(node)
        if node.graph is not graph:
            continue
        for rule in by_op.get(node.op, ()):
            new = _try(rw, rule, node, trace)
            if new is None:
                continue
            budget -= 1
            if budget < 0:
                raise RuntimeError(f"rule set does not terminate (last rule: {rule.name} at {rule.defined_at})")
            old = node.output
            touched = [use.node for use in old.uses()] + rw.created
            graph.replace_all_uses(old, new)
            erase_dead(graph, [node])
            for n in touched:
                if n not in queued and n.graph is graph and n.op in by_op:
                    queued.add(n)
                    work.append(n)
            changed = True
            break
    return changed


def _try(rw: Rewriter, rule: Rule, node: Node, trace: list[Miss] | None) -> Value | None:
    m = Match(node)
    why = rule.pattern.match_node(node, m)
    result: Value | str | None = None
    if why is None:
        rw.root, rw.created = node, []
        result = rule.rewrite(rw, m)
        if isinstance(result, Value) and result.type != node.output.type:
            result = f"replacement type {result.type} != {node.output.type}"
        why = result if isinstance(result, str) else None
    if why is not None:
        label = f"{node.op} -> %{node.output.name or '?'}"
        log.debug("rule %s (%s) did not fire on %s: %s", rule.name, rule.defined_at, label, why)
        if trace is not None:
            trace.append(Miss(rule.name, label, why))
        erase_dead(rw.graph, reversed(rw.created))
        rw.created = []
        return None
    log.debug("rule %s (%s) fired on %s", rule.name, rule.defined_at, node.op)
    return result


def erase_dead(graph: Graph, nodes: Iterable[Node]) -> None:
    """Erase each of ``nodes`` that nothing reads, then their producers that
    became dead (never a node whose results are used or are graph outputs)."""
    outputs = set(graph.outputs)
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if n.graph is not graph or any(out.num_uses or out in outputs for out in n.outputs):
            continue
        stack.extend(v.producer for v in n.inputs if v.producer is not None)
        graph.erase(n)
