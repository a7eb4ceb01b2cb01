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
  ``rest=p`` lets the node have any number of further inputs, each matching
  ``p`` (a variadic ``concat``; a ``conv`` with or without its bias).
- ``AnyOf(*patterns)`` matches what any of ``patterns`` matches.

Matching backtracks: when a later part fails, the earlier choices (the
operand order of a commutative op, the alternative of an ``AnyOf``) are
tried again, so ``(x + y) * x`` matches ``(b + a) * b``. A part with choices
is tried at most once per combination of the choices around it; patterns are
small, so this stays cheap.

A rewrite ``fn(rw, m)`` returns the replacement value for the root, or a
string saying why it declines (the nodes and constants it made are then
removed). A rewrite that is exact only where some sizes are large enough,
and whose replacement fails at run time elsewhere (a valid ONNX Conv needs
the image to cover the kernel), states it with ``rw.assume(H - 3)``: the
replacement's type is compared with the root's under that fact, and when
the rule fires every type of the graph is refined by it
(``ir.transforms.refine_types``: ``abs(H-3)+1`` becomes ``H-2``). A mismatch says why each choice failed
(operand orders and alternatives, joined by ``; ``). Every miss (pattern
mismatch or decline) is logged at DEBUG level on the ``passes.pattern``
logger with the rule's name and where it was defined, and recorded in
``trace`` when one is passed to ``apply_rules``. To see why a rule did not
fire, use ``logging.getLogger("passes.pattern").setLevel(logging.DEBUG)``.
"""

from __future__ import annotations

import logging
import sys
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import numpy as np

from ir import Graph, Node, TensorType, Value
from ir import symbolic as sym
from ir.core import merge_origins
from ir.transforms import add_fresh_constant, refine_types, walk_graphs, walk_scopes
from passes.rewrite_log import RewriteLog, active_log
from ir.ops import get_op

log = logging.getLogger(__name__)


class Match:
    """The bindings of a successful match: ``m.x`` / ``m["x"]`` give the
    value (``Var``/``Const``) or node (named ``Op``) bound to ``x``;
    ``m.root`` is the matched root node. ``outputs``, when given, is the set
    of the graph's outputs (the driver keeps one, so that single-use checks
    do not scan the output list)."""

    __slots__ = ("root", "outputs", "_bindings")

    def __init__(self, root: Node, outputs: set[Value] | None = None):
        self.root = root
        self.outputs = outputs
        self._bindings: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        return self._bindings[name]

    def __getattr__(self, name: str) -> Any:  # only called for names that are not slots: the bindings
        if name == "_bindings":  # not set yet (a copy being built)
            raise AttributeError(name)
        try:
            return self._bindings[name]
        except KeyError:
            raise AttributeError(f"pattern binds no {name!r}") from None

    def __contains__(self, name: str) -> bool:
        return name in self._bindings

    @property
    def nodes(self) -> list[Node]:
        """Every node an ``Op`` part matched (named or not), root included."""
        return [self.root] + [n for k, n in self._bindings.items() if isinstance(k, tuple) and n is not self.root]

    def _bind(self, name: str | tuple | None, thing: Any) -> str | None:
        if name is None:
            return None
        prev = self._bindings.get(name)
        if prev is None:
            self._bindings[name] = thing
            return None
        return None if prev is thing else f"{name} is bound to another value"


class Pattern:
    """Base class of pattern parts. ``match(value, m)`` returns None on
    success (recording bindings in ``m``) or the reason it failed. A part
    that can match in several ways (``Op`` of a commutative op, ``AnyOf``)
    also overrides ``_solve``, which drives backtracking."""

    def match(self, value: Value, m: Match) -> str | None:  # pragma: no cover - abstract
        raise TypeError(f"{type(self).__name__} is not a pattern")

    def _solve(self, value: Value, m: Match, then: Callable[[], str | None]) -> str | None:
        """Match ``value``, then the rest of the pattern (``then()``); a part
        with choices tries each until ``then()`` succeeds. Returns None or
        the last reason for failing."""
        why = self.match(value, m)
        return why if why is not None else then()


def _done() -> None:
    return None


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


def all_equal(array: np.ndarray, scalar) -> bool:
    """Whether ``array`` is non-empty and every element equals ``scalar``
    (``==``: NaN equals nothing). Compares in blocks of 65,536 elements and
    stops at the first block that differs, so a large weight whose first
    element differs costs O(1) time and memory, not a weight-sized bool
    array."""
    flat = array.reshape(-1)
    if flat.size == 0 or not bool(flat[0] == scalar):
        return False
    if flat.size == 1:
        return True
    step = 1 << 16
    return all(bool(np.all(flat[i:i + step] == scalar)) for i in range(0, flat.size, step))


def ConstEq(scalar: float | int | bool, name: str | None = None) -> Const:
    """A non-empty constant whose every element equals ``scalar`` (any shape,
    so a broadcast scalar matches too)."""
    return Const(name, lambda a: all_equal(a, scalar))


@dataclass(frozen=True)
class AnyOf(Pattern):
    """What any of ``alternatives`` matches, tried in order; if the rest of
    the pattern fails under one, the next is tried (bindings made under the
    failed one are undone)."""

    alternatives: tuple[Pattern, ...]

    def __init__(self, *alternatives: Pattern):
        object.__setattr__(self, "alternatives", tuple(alternatives))

    def match(self, value: Value, m: Match) -> str | None:
        return self._solve(value, m, _done)

    def _solve(self, value: Value, m: Match, then: Callable[[], str | None]) -> str | None:
        reasons = []
        for p in self.alternatives:
            saved = dict(m._bindings)
            why = p._solve(value, m, then)
            if why is None:
                return None
            m._bindings = saved
            reasons.append(why)
        return "; ".join(dict.fromkeys(reasons)) or "no alternatives"


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
        rest: if given, the node may have any number of inputs beyond
            ``inputs``, each matching ``rest`` (a variadic ``concat``, a
            ``conv`` with or without its bias); a name in ``rest`` binds the
            same value for all of them.
    """

    op: str
    inputs: tuple[Pattern, ...] = ()
    name: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    where: Callable[[Node], bool] | None = None
    single_use: bool = True
    rest: Pattern | None = None

    def __init__(self, op: str, *inputs: Pattern, name: str | None = None, attrs: dict | None = None,
                 where: Callable[[Node], bool] | None = None, single_use: bool = True,
                 rest: Pattern | None = None):
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "inputs", tuple(inputs))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "attrs", dict(attrs or {}))
        object.__setattr__(self, "where", where)
        object.__setattr__(self, "single_use", single_use)
        object.__setattr__(self, "rest", rest)

    def __hash__(self) -> int:
        return hash((self.op, self.inputs, self.name))

    def match(self, value: Value, m: Match, *, root: bool = False) -> str | None:
        return self._solve(value, m, _done, root=root)

    def match_node(self, node: Node, m: Match) -> str | None:
        """Match ``node`` itself (the root's entry point)."""
        return self._solve_node(node, m, _done)

    def _solve(self, value: Value, m: Match, then: Callable[[], str | None], *, root: bool = False) -> str | None:
        node = value.producer
        if node is None or node.op != self.op:
            return f"%{value.name or '?'} is not produced by {self.op}"
        if not root and self.single_use and not single_use(value, m.outputs):
            return f"{self.op} result %{value.name or '?'} has other uses"
        return self._solve_node(node, m, then)

    def _solve_node(self, node: Node, m: Match, then: Callable[[], str | None]) -> str | None:
        if len(node.outputs) != 1:
            return f"{node.op} has {len(node.outputs)} outputs"
        have, want = len(node._inputs), len(self.inputs)
        if have != want and (self.rest is None or have < want):
            return f"{node.op} has {have} inputs, pattern has {want}"
        for key, want in self.attrs.items():
            have = node.attrs.get(key)
            ok = want(have) if callable(want) else have == want
            if not ok:
                return f"{node.op} attribute {key}={have!r} does not match"
        if self.where is not None and not self.where(node):
            return f"{node.op} node fails {_predicate_name(self.where)}"
        if self.rest is not None:
            orders = [self.inputs + (self.rest,) * (len(node.inputs) - len(self.inputs))]
        elif len(self.inputs) == 2 and _commutative(self.op):
            orders = [self.inputs, self.inputs[::-1]]
        else:
            orders = [self.inputs]
        name = self.name

        def finish() -> str | None:  # the node matched: bind it, then match the rest of the pattern
            return (name is not None and m._bind(name, node)) or m._bind(("node", id(node)), node) or then()

        if len(orders) == 1:
            # One operand order: nothing to retry, so nothing to restore (a
            # choice point above restores the bindings it saved).
            return _solve_all(orders[0], node._inputs, m, finish)
        reasons = []
        for order in orders:
            saved = dict(m._bindings)
            why = _solve_all(order, node._inputs, m, finish)
            if why is None:
                return None
            m._bindings = saved
            reasons.append(why)
        return "; ".join(dict.fromkeys(reasons))  # why each operand order failed


_COMMUTATIVE: dict[str, bool] = {}  # op name -> OpDef.commutative, read once per op


def _commutative(op: str) -> bool:
    got = _COMMUTATIVE.get(op)
    if got is None:
        got = _COMMUTATIVE[op] = get_op(op).commutative
    return got


def _solve_all(patterns: Sequence[Pattern], values: Sequence[Value], m: Match,
               then: Callable[[], str | None]) -> str | None:
    """Match ``values`` one by one, then ``then()``; backtracks into earlier ones.
    A leading run of parts without choices (``_has_no_choices``) is matched
    in sequence, without a continuation per part: such a part never retries,
    so the result and the reason for failing are the same."""
    i, n = 0, len(patterns)
    while i < n:
        p = patterns[i]
        plain = _NO_CHOICES.get(id(p))
        if not (plain[1] if plain is not None and plain[0] is p else _has_no_choices(p)):
            break
        why = p.match(values[i], m)
        if why is not None:
            return why
        i += 1
    if i == n:
        return then()
    return patterns[i]._solve(values[i], m, lambda: _solve_all(patterns[i + 1:], values[i + 1:], m, then))


_NO_CHOICES: dict[int, tuple[Pattern, bool]] = {}  # id(pattern) -> (pattern, whether it has no choices)


def _has_no_choices(p: Pattern) -> bool:
    """Whether ``p`` matches a value in at most one way, so ``_solve`` is
    ``match`` then the rest: a ``Var``, a ``Const``, or an ``Op`` with one
    operand order (not a two-input commutative op) whose parts have no
    choices. ``AnyOf`` and unknown pattern classes have choices. Memoized
    per pattern object."""
    got = _NO_CHOICES.get(id(p))
    if got is not None and got[0] is p:
        return got[1]
    kind = type(p)
    if kind is Var or kind is Const:
        answer = True
    elif kind is Op:
        answer = (not (len(p.inputs) == 2 and p.rest is None and get_op(p.op).commutative)
                  and all(_has_no_choices(q) for q in p.inputs)
                  and (p.rest is None or _has_no_choices(p.rest)))
    else:
        answer = False
    _NO_CHOICES[id(p)] = (p, answer)
    return answer


def _is_graph_output(value: Value, node: Node, outputs: set[Value] | None) -> bool:
    if outputs is not None:
        return value in outputs
    return node.graph is not None and node.graph.is_output(value)


def _predicate_name(pred) -> str:
    """A named predicate's name, for the reason a match failed; lambdas are
    'its constraint'."""
    name = getattr(pred, "__name__", "<lambda>")
    return "its constraint" if name == "<lambda>" else name


def single_use(value: Value, outputs: set[Value] | None = None,
               ignore: Callable[[Node], bool] | None = None) -> bool:
    """Whether ``value`` has exactly one reader and is not an output of its
    graph: a rewrite that replaces that reader leaves nothing computing it
    twice. ``outputs``: the graph's outputs, when the caller keeps them as a
    set; ``ignore``: readers not counted (``shape`` nodes, which read no
    element). The one single-use test of every pass."""
    node = value.producer
    if ignore is None:
        if value.num_uses != 1:
            return False
    elif sum(1 for u in value.uses() if not ignore(u.node)) != 1:
        return False
    return node is None or not _is_graph_output(value, node, outputs)


def producer(value: Value, op: str, single: bool = False) -> Node | None:
    """The node computing ``value`` when it is an ``op`` node (and, with
    ``single``, ``value`` is ``single_use``), else None."""
    node = value.producer
    if node is None or node.op != op or (single and not single_use(value)):
        return None
    return node


class Rewriter:
    """What a rewrite may do besides returning a value: create nodes and
    constants. New nodes go just before the matched root, carry its source
    line and its output's name hint, and are revisited by the rules.

    Attributes:
        graph: the graph being rewritten.
        root: the matched root node.
    """

    def __init__(self, graph: Graph, reserved: set[str] | None = None):
        self.graph = graph
        self.reserved = reserved or set()  # names new constants avoid (enclosing and nested graphs')
        self.root: Node | None = None
        self.created: list[Node] = []
        self.created_constants: list[Value] = []
        self.matched: list[Node] = []
        self.bounds: sym.Bounds = graph.size_bounds  # the graph's size facts (``assume``)
        self.pending: sym.Bounds = ()  # ``bounds`` with the facts of the rewrite being tried

    def assume(self, *facts) -> None:
        """State that the replacement equals the root only where each dim of
        ``facts`` is >= 0, and fails at run time elsewhere (so no run gives
        a different value). The replacement's type is then compared with the
        root's refined by the facts (``ir.symbolic.refine``), and if the rule
        fires, every node type of the graph is refined by them."""
        self.pending = sym.lower_bounds(facts, self.pending)

    def add(self, op: str, inputs: Sequence[Value], attrs: dict | None = None) -> Value:
        """A new single-output ``op(inputs){attrs}`` before the root; returns its
        output (type inferred; ``ir.ops.OpError`` if the op rejects them)."""
        node = self.graph.create_node(op, list(inputs), attrs, output_names=[self.root.output.name])
        node.origins = self.root.origins
        self.graph.insert_before(self.root, node)
        self.created.append(node)
        return node.output

    def const(self, array, name: str = "const") -> Value:
        """A new graph constant holding a copy of ``array`` (removed again if
        the rewrite declines and nothing reads it)."""
        value = add_fresh_constant(self.graph, np.asarray(array), name, self.reserved)
        self.created_constants.append(value)
        return value


RewriteFn = Callable[[Rewriter, Match], "Value | str"]


@dataclass(frozen=True)
class Rule:
    """A rewrite rule: a name, a root ``Op`` pattern and a rewrite function.
    ``defined_at`` (file:line) is filled in where the rule is constructed, so
    debug output says which rule fired or missed; ``guard`` is an optional
    cheap precondition on the root node (see below)."""

    name: str
    pattern: Op
    rewrite: RewriteFn
    defined_at: str = ""
    # A cheap necessary condition on the root node (e.g. "some input is a
    # constant"): when it is False the rule surely declines, so
    # ``apply_rules`` skips it without matching unless a trace or the debug
    # log wants the reason. It must never be False where the rule fires.
    guard: Callable[[Node], bool] | None = None
    # Ops the graph must hold besides the pattern's for the rule to fire (what
    # the guard or the rewrite requires, e.g. "an input is computed by an
    # unsqueeze"): a rule lacking one is not tried at all. Like the guard, it
    # must never exclude a graph where the rule fires.
    needs: tuple[str, ...] = ()
    # The sets of ops one of which a graph must hold entirely for the pattern
    # to match anywhere in it (``op_requirements``); computed once here.
    requires: tuple[frozenset[str], ...] = field(init=False, repr=False, compare=False, default=())
    # Whether every match reads a graph constant (``reads_constant``): the
    # rule cannot fire in a graph without constants; computed once here.
    needs_constant: bool = field(init=False, repr=False, compare=False, default=False)

    def __post_init__(self):
        if not self.defined_at:
            frame = sys._getframe(2)  # __post_init__ <- __init__ <- the line building the rule
            object.__setattr__(self, "defined_at", f"{frame.f_code.co_filename}:{frame.f_lineno}")
        needs = frozenset(self.needs)
        object.__setattr__(self, "requires", tuple(c | needs for c in op_requirements(self.pattern)))
        object.__setattr__(self, "needs_constant", reads_constant(self.pattern))

    def possible(self, ops: set[str] | frozenset[str], constants: bool = True) -> bool:
        """Whether the pattern could match in a graph whose nodes have the op
        names ``ops`` and which has graph constants or not (False: it surely
        cannot; see ``op_requirements`` and ``reads_constant``)."""
        return (constants or not self.needs_constant) and any(clause <= ops for clause in self.requires)


def reads_constant(p: Pattern) -> bool:
    """Whether every match of ``p`` binds a graph constant: ``p`` is a
    ``Const``, an ``Op`` one of whose inputs (``rest`` aside: it may match
    no input) reads a constant, or an ``AnyOf`` whose every alternative
    does. Such a pattern cannot match in a graph without constants."""
    if isinstance(p, Const):
        return True
    if isinstance(p, Op):
        return any(reads_constant(q) for q in p.inputs)
    if isinstance(p, AnyOf):
        return bool(p.alternatives) and all(reads_constant(q) for q in p.alternatives)
    return False


MAX_CLAUSES = 64  # op_requirements keeps at most this many alternative op sets


def op_requirements(p: Pattern) -> tuple[frozenset[str], ...]:
    """The op sets one of which a graph must hold entirely for ``p`` to
    match a value in it (a disjunction of conjunctions): an ``Op`` needs its
    op and one requirement of each input pattern; an ``AnyOf`` one
    requirement of any alternative; ``Var``, ``Const``, ``rest`` and
    unknown pattern classes need nothing. Past ``MAX_CLAUSES`` alternatives
    the ops common to all of them stand for the whole (still a necessary
    condition, only weaker). Subsumed sets are dropped.

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
        for q in p.inputs:
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
    must be produced by (``_child_ops``). ``add_ops`` widens the set when a
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
                check = _skeletons.get(id(rule))
                if check is None or check[0] is not rule:
                    check = _skeletons[id(rule)] = (rule, _skeleton_check(rule))
                self.by_op.setdefault(rule.pattern.op, []).append((rule, _child_ops(rule.pattern), check[1]))


_skeletons: dict[int, tuple[Rule, Callable[[Node], bool]]] = {}  # id(rule) -> (rule, its skeleton check)


def _skeleton_check(rule: Rule) -> Callable[[Node], bool]:
    """``rule``'s quick pre-match test on a root node: its ``guard`` (if
    any), then ``_compile_node`` of its pattern, compiled once into
    closures so that a node costs a few attribute reads per pattern level."""
    skeleton = _compile_node(rule.pattern, SKELETON_DEPTH)
    guard = rule.guard
    if guard is None:
        return skeleton
    return lambda node: guard(node) and skeleton(node)


def _apply_in(graph: Graph, by_op: set[str], active: _ActiveRules, trace: list[Miss] | None,
              max_rewrites: int | None, reserved: set[str]) -> bool:
    """``apply_rules`` on the nodes of one graph (not its nested graphs);
    new constants avoid the ``reserved`` names. ``by_op``: every rule's root
    op (the nodes visited); ``active``: the rules that may match."""
    # Without a trace or debug log, a rule whose pattern's skeleton (ops,
    # arities, constants; two levels deep; ``_compile_node``) cannot fit is
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
            new = _try(rw, rule, node, trace, outputs, session)
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


SKELETON_DEPTH = 2  # pattern levels below the root the quick check looks at


def _compile_node(p: "Op", depth: int) -> Callable[[Node], bool]:
    """A test ``check(node)`` that is False only if ``p`` surely cannot match
    ``node``: a wrong output count or arity, or (``depth`` levels down) an
    input pattern that needs a producer op or a constant the input does not
    have. Ignores bindings, attributes, inner constraints and single use, so
    it never rejects a match (the root's ``where`` and ``attrs`` are checked:
    they read only the node). Built once per pattern as closures, so a node costs a few
    attribute reads per pattern level."""
    n = len(p.inputs)
    variadic = p.rest is not None
    where = p.where if depth == SKELETON_DEPTH else None
    attrs = tuple(p.attrs.items()) if depth == SKELETON_DEPTH else ()
    checks = [_compile_value(q, depth - 1) for q in p.inputs] if depth > 0 else []
    if all(c is None for c in checks):
        checks = []
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
        if not checks:
            return True
        if all(c is None or c(v) for c, v in zip(checks, values)):
            return True
        return swap and (first is None or first(values[1])) and (second is None or second(values[0]))

    return check


def _compile_value(p: Pattern, depth: int) -> Callable[[Value], bool] | None:
    """The value-level part of ``_compile_node``: a test on an input value
    (an ``Op`` needs that producer op, a ``Const`` a constant, an ``AnyOf``
    one alternative), or None when every value may match (``Var``, or a
    pattern class this check does not know)."""
    if isinstance(p, Op):
        op, node_check = p.op, _compile_node(p, depth)
        return lambda v: v.producer is not None and v.producer.op == op and node_check(v.producer)
    if isinstance(p, Const):
        return lambda v: v.const is not None
    if isinstance(p, AnyOf):
        alternatives = [_compile_value(q, depth) for q in p.alternatives]
        if any(a is None for a in alternatives):
            return None
        return lambda v: any(a(v) for a in alternatives)
    return None


def _child_ops(p: "Op") -> frozenset[str]:
    """The ops that must produce some input of a node ``p`` matches (its
    direct ``Op`` children; ``AnyOf`` and the rest are not required)."""
    return frozenset(q.op for q in p.inputs if isinstance(q, Op))


def _try(rw: Rewriter, rule: Rule, node: Node, trace: list[Miss] | None, outputs: set[Value],
         session: RewriteLog | None = None) -> Value | None:
    m = Match(node, outputs)
    why = rule.pattern.match_node(node, m)
    result: Value | str | None = None
    if why is None:
        rw.bounds = rw.graph.size_bounds
        rw.root, rw.created, rw.created_constants, rw.pending = node, [], [], rw.bounds
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
        if rw.created:
            erase_dead(rw.graph, reversed(rw.created), outputs)
        for c in rw.created_constants:
            if not c.num_uses:
                rw.graph.remove_constant(c)
        rw.created, rw.created_constants = [], []
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


def refines(new: TensorType, old: TensorType, bounds: sym.Bounds = ()) -> bool:
    """Whether a replacement of type ``new`` may stand for a value of type
    ``old``: the same dtype and rank, and every dim equal or unknown (``?``)
    in ``old`` (a rewrite may know more, e.g. the batch dim a reshape lost),
    ``old``'s dims refined by the size facts ``bounds`` (``Rewriter.assume``)."""
    if new is old:
        return True
    if new.dtype != old.dtype or len(new.shape) != len(old.shape):
        return False
    for n, o in zip(new.shape, old.shape):
        if not (o is None or n == o or n == sym.refine(o, bounds)):
            return False
    return True


def erase_dead(graph: Graph, nodes: Iterable[Node], outputs: set[Value] | None = None) -> list[Value]:
    """Erase each of ``nodes`` that nothing reads, then their producers that
    became dead (never a node whose results are used or are graph outputs;
    ``outputs``: the set of graph outputs, if the caller keeps one).

    Returns:
        The values that lost readers and are still there (graph inputs,
        constants, outputs of nodes left in the graph); a value may repeat.
    """
    is_output = graph.is_output if outputs is None else outputs.__contains__
    stack = list(nodes)
    freed: list[Value] = []
    while stack:
        n = stack.pop()
        if n.graph is not graph or _is_read(n, is_output):
            continue
        inputs = n._inputs
        freed += inputs
        for v in inputs:
            if v.producer is not None:
                stack.append(v.producer)
        graph.erase(n)
    return [v for v in freed if v.producer is None or v.producer.graph is graph]


def _is_read(node: Node, is_output: Callable[[Value], bool]) -> bool:
    """Whether an output of ``node`` has a reader or is a graph output."""
    for out in node.outputs:
        if out._uses or is_output(out):
            return True
    return False
