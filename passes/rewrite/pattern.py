"""The pattern language of the rewrite engine: patterns that describe a
small dataflow tree, and the matching that binds them.

Pattern parts:

- ``Var(name, where=pred)`` binds any value (``pred(value)`` must hold); a
  name used twice must bind the same value (``x * sigmoid(x)``).
- ``Const(name, where=pred)`` binds a graph constant (``pred(array)``);
  ``ConstEq(v)`` matches a constant whose every element equals ``v`` (a
  broadcast scalar of any shape).
- ``Op(op, *inputs, name=, attrs={...}, where=pred, single_use=True,
  rest=, any_input=)`` matches a value produced by an ``op`` node.
  ``attrs`` values are exact values or predicates. Commutative ops
  (``OpDef.commutative``) also try the swapped operand order. Inner ``Op``
  patterns require their value to have a single use (so the rewrite leaves
  nothing duplicated); pass ``single_use=False`` to allow more. The root's
  node binds as ``m.root``. ``rest=p`` lets the node have any number of
  further inputs, each matching ``p`` (a variadic ``concat``; a ``conv``
  with or without its bias). ``any_input=p``: at least one input of the
  node (at any position) matches ``p`` too, a condition that binds nothing
  (an op reading an ``unsqueeze`` somewhere among its broadcast operands).
- ``AnyOf(*patterns)`` matches what any of ``patterns`` matches.

Matching backtracks: when a later part fails, the earlier choices (the
operand order of a commutative op, the alternative of an ``AnyOf``) are
tried again, so ``(x + y) * x`` matches ``(b + a) * b``. A part with
choices is tried at most once per combination of the choices around it;
patterns are small, so this stays cheap. A mismatch says why each choice
failed (joined by ``; ``).

``single_use`` and ``producer`` are the one single-use test and producer
lookup every pass shares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ir import Node, Value
from ir.ops import get_op


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
        any_input: if given, at least one input of the node (any position)
            must match it as well: a condition on some operand of a
            variadic or broadcasting op (its names and nodes are not bound:
            the rewrite finds the operand itself), which the engine's
            filters read like the rest of the pattern (``passes.rewrite.rules``).
    """

    op: str
    inputs: tuple[Pattern, ...] = ()
    name: str | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    where: Callable[[Node], bool] | None = None
    single_use: bool = True
    rest: Pattern | None = None
    any_input: Pattern | None = None

    def __init__(self, op: str, *inputs: Pattern, name: str | None = None, attrs: dict | None = None,
                 where: Callable[[Node], bool] | None = None, single_use: bool = True,
                 rest: Pattern | None = None, any_input: Pattern | None = None):
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "inputs", tuple(inputs))
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "attrs", dict(attrs or {}))
        object.__setattr__(self, "where", where)
        object.__setattr__(self, "single_use", single_use)
        object.__setattr__(self, "rest", rest)
        object.__setattr__(self, "any_input", any_input)

    def __hash__(self) -> int:
        return hash((self.op, self.inputs, self.name))

    def match(self, value: Value, m: Match, *, root: bool = False) -> str | None:
        return self._solve(value, m, _done, root=root)

    def match_node(self, node: Node, m: Match, *, checked: bool = False) -> str | None:
        """Match ``node`` itself (the root's entry point). ``checked``: the
        node's output count, arity, ``attrs`` and ``where`` are known to fit
        (the rule's skeleton check passed), so they are not tested again."""
        return self._solve_node(node, m, _done, checked)

    def _solve(self, value: Value, m: Match, then: Callable[[], str | None], *, root: bool = False) -> str | None:
        node = value.producer
        if node is None or node.op != self.op:
            return f"%{value.name or '?'} is not produced by {self.op}"
        if not root and self.single_use and not single_use(value, m.outputs):
            return f"{self.op} result %{value.name or '?'} has other uses"
        return self._solve_node(node, m, then)

    def _solve_node(self, node: Node, m: Match, then: Callable[[], str | None], checked: bool = False) -> str | None:
        if not checked:
            why = self._node_fits(node)
            if why is not None:
                return why
        if self.rest is not None:
            orders = [self.inputs + (self.rest,) * (len(node.inputs) - len(self.inputs))]
        elif len(self.inputs) == 2 and _commutative(self.op):
            orders = [self.inputs, self.inputs[::-1]]
        else:
            orders = [self.inputs]
        if self.any_input is not None:
            why = _some_input(self.any_input, node, m)
            if why is not None:
                return why
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

    def _node_fits(self, node: Node) -> str | None:
        """Why ``node`` itself (output count, arity, ``attrs``, ``where``)
        does not fit, or None."""
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
        return None


def _some_input(p: Pattern, node: Node, m: Match) -> str | None:
    """None when some input of ``node`` matches ``p`` (a condition: its
    names and nodes are not bound), else why none does."""
    reasons = []
    for v in node._inputs:
        why = p.match(v, Match(m.root, m.outputs))
        if why is None:
            return None
        reasons.append(why)
    return f"no input of {node.op} matches: " + "; ".join(dict.fromkeys(reasons)) if reasons \
        else f"{node.op} has no inputs"


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
