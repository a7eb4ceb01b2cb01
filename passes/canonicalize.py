"""``canonicalize``: exact algebraic simplifications, run to a fixpoint.

Each rule is a small function ``rule(rw, node)`` on a node of one op; it
returns the value that replaces ``node``'s output, or a string saying why it
did not fire (logged at debug level under ``passes.canonicalize``). ``RULES``
lists them all. A worklist driver applies them until none fires: a rewrite
requeues the nodes whose inputs it changed and the nodes it created, and
erases the nodes it left dead. Only exact identities are allowed (NaN, Inf,
-0.0 and integer wrap-around included):

1. ``unsqueeze`` adding only leading axes, read by a broadcasting op whose
   result rank does not change without it, is bypassed (NumPy broadcasting
   is right-aligned, so leading 1s are implied)::

       %u: f32[1,64] = unsqueeze(%b) {axes=[0]}
       %y: f32[N,64] = add(%h, %u)          ->   %y: f32[N,64] = add(%h, %b)

2. identities: ``cast`` to the dtype it has, ``transpose`` with the identity
   perm, ``reshape`` of a fully static shape to itself, ``squeeze`` and
   ``unsqueeze`` with no axes::

       %y: f32[3] = cast(%x) {to=f32}       ->   (uses of %y read %x)

3. ``transpose(transpose(x, p), q)`` is one transpose with perm ``p[q[i]]``::

       %t: f32[4,3,2] = transpose(%x) {perm=[2, 1, 0]}
       %y: f32[3,4,2] = transpose(%t) {perm=[1, 0, 2]}
                                            ->   %y: f32[3,4,2] = transpose(%x) {perm=[1, 2, 0]}

4. ``unsqueeze(squeeze(x, a), a)`` and ``squeeze(unsqueeze(x, a), a)`` are
   ``x`` (the first only when the types agree, i.e. the squeezed dims are
   statically 1)::

       %s: f32[3] = squeeze(%x) {axes=[0]}
       %y: f32[1,3] = unsqueeze(%s) {axes=[0]}   ->   (uses of %y read %x)

5. ``x * 1``, ``1 * x`` and ``x / 1``, where the all-ones constant changes
   neither shape nor dtype of ``x``, are ``x`` (exact for NaN, Inf and -0.0)::

       const %one: f32[] = 1.0
       %y: f32[N] = mul(%x, %one)           ->   (uses of %y read %x)

Deliberately absent: ``x + 0 -> x`` (wrong for ``x = -0.0``: ``-0.0 + 0.0``
is ``+0.0``) and ``x * 0 -> 0`` (wrong for NaN and Inf).

A replacement must have exactly the type of the value it replaces; when it
does not, the rewrite is undone and logged. Each node is visited once plus
once per change of its inputs: O(nodes) for the rules here.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ir import Graph, Node, Value
from ir.ops.common import normalize_axis
from passes.base import Pass, register_pass

log = logging.getLogger(__name__)


class Rewriter:
    """What a rule may do besides returning a value: create nodes. They are
    inserted just before the node being rewritten, carry its source line and
    its output's name hint, and are queued for the rules in turn.

    Attributes:
        graph: the graph being rewritten.
        root: the node the current rule is looking at.
    """

    def __init__(self, graph: Graph):
        self.graph = graph
        self.root: Node | None = None
        self.created: list[Node] = []

    def add(self, op: str, inputs: Sequence[Value], attrs: dict | None = None) -> Value:
        """A new single-output ``op(inputs){attrs}`` node before the root; returns
        its output (type inferred). Raises ``OpError`` if the op rejects them."""
        node = self.graph.create_node(op, list(inputs), attrs, output_names=[self.root.output.name])
        node.trace = self.root.trace
        self.graph.insert_before(self.root, node)
        self.created.append(node)
        return node.output


RuleFn = Callable[[Rewriter, Node], "Value | str"]


@dataclass(frozen=True)
class Rule:
    """A rewrite rule: the op of the nodes it looks at and the function
    returning the replacement value (or why it did not fire)."""

    op: str
    fn: RuleFn

    @property
    def name(self) -> str:
        """The rule's function name, as logged."""
        return self.fn.__name__


# -- pattern helpers -------------------------------------------------------
def producer(value: Value, op: str) -> Node | None:
    """The node computing ``value`` if it is an ``op`` node, else None."""
    node = value.producer
    return node if node is not None and node.op == op else None


def axes_of(node: Node, rank: int) -> frozenset[int]:
    """The ``axes`` attribute of ``node`` normalized against ``rank``."""
    return frozenset(normalize_axis(a, rank, node.op) for a in node.attrs["axes"])


def is_ones(value: Value) -> bool:
    """Whether ``value`` is a non-empty constant with every element equal to 1."""
    return value.const is not None and value.const.size > 0 and bool(np.all(value.const == 1))


def leading_unsqueeze_source(value: Value) -> Value | None:
    """``x`` when ``value = unsqueeze(x)`` adds only leading axes, else None."""
    node = producer(value, "unsqueeze")
    if node is None or axes_of(node, value.rank) != frozenset(range(len(node.attrs["axes"]))):
        return None
    return node.inputs[0]


# -- rules -----------------------------------------------------------------
def bypass_leading_unsqueeze(rw: Rewriter, node: Node) -> Value | str:
    """op(..., unsqueeze(x){axes=[0..k)}, ...) -> op(..., x, ...) if the result rank is kept."""
    inputs = list(node.inputs)
    for i, v in enumerate(inputs):
        x = leading_unsqueeze_source(v)
        if x is not None and max(w.rank for w in inputs[:i] + [x] + inputs[i + 1:]) == node.output.rank:
            inputs[i] = x
    if inputs == list(node.inputs):
        return "no input is a leading unsqueeze that the broadcast makes redundant"
    return rw.add(node.op, inputs, node.attrs)


def cast_to_same_dtype(rw: Rewriter, node: Node) -> Value | str:
    """cast(x){to=dtype(x)} -> x"""
    return node.inputs[0] if node.attrs["to"] == node.inputs[0].dtype else "casts to another dtype"


def identity_transpose(rw: Rewriter, node: Node) -> Value | str:
    """transpose(x){perm=[0, 1, ...]} -> x"""
    return node.inputs[0] if list(node.attrs["perm"]) == list(range(node.output.rank)) else "perm moves axes"


def reshape_to_same_shape(rw: Rewriter, node: Node) -> Value | str:
    """reshape(x, shape(x)) -> x, for a fully static shape"""
    x = node.inputs[0]
    return x if x.type.is_static and x.type == node.output.type else "not a static shape reshaped to itself"


def no_axes(rw: Rewriter, node: Node) -> Value | str:
    """squeeze(x){axes=[]} -> x and unsqueeze(x){axes=[]} -> x"""
    return node.inputs[0] if not node.attrs["axes"] else "has axes"


def transpose_of_transpose(rw: Rewriter, node: Node) -> Value | str:
    """transpose(transpose(x, p), q) -> transpose(x, [p[i] for i in q])"""
    inner = producer(node.inputs[0], "transpose")
    if inner is None:
        return "input is not a transpose"
    return rw.add("transpose", inner.inputs, {"perm": [inner.attrs["perm"][i] for i in node.attrs["perm"]]})


def unsqueeze_of_squeeze(rw: Rewriter, node: Node) -> Value | str:
    """unsqueeze(squeeze(x, a), a) -> x"""
    inner = producer(node.inputs[0], "squeeze")
    if inner is None or axes_of(inner, inner.inputs[0].rank) != axes_of(node, node.output.rank):
        return "input is not a squeeze of the same axes"
    return inner.inputs[0]


def squeeze_of_unsqueeze(rw: Rewriter, node: Node) -> Value | str:
    """squeeze(unsqueeze(x, a), a) -> x"""
    inner = producer(node.inputs[0], "unsqueeze")
    if inner is None or axes_of(inner, inner.output.rank) != axes_of(node, node.inputs[0].rank):
        return "input is not an unsqueeze of the same axes"
    return inner.inputs[0]


def mul_by_one(rw: Rewriter, node: Node) -> Value | str:
    """x * 1 -> x and 1 * x -> x, when the ones change neither shape nor dtype"""
    a, b = node.inputs
    for x, one in ((a, b), (b, a)):
        if is_ones(one) and x.type == node.output.type:
            return x
    return "no all-ones operand that keeps the other's type"


def div_by_one(rw: Rewriter, node: Node) -> Value | str:
    """x / 1 -> x, when the ones change neither shape nor dtype"""
    x, one = node.inputs
    return x if is_ones(one) and x.type == node.output.type else "divisor is not all ones keeping the type"


# The binary and ternary ops of ir/ops/elementwise.py: all broadcast like NumPy.
BROADCASTING_OPS = ("add", "sub", "mul", "div", "floor_div", "mod", "pow", "maximum", "minimum",
                    "and", "or", "xor", "eq", "ne", "lt", "le", "gt", "ge", "clip", "where")

RULES: list[Rule] = [
    *(Rule(op, bypass_leading_unsqueeze) for op in BROADCASTING_OPS),  # 1
    Rule("cast", cast_to_same_dtype),                                   # 2
    Rule("transpose", identity_transpose),                              # 2
    Rule("reshape", reshape_to_same_shape),                             # 2
    Rule("squeeze", no_axes),                                           # 2
    Rule("unsqueeze", no_axes),                                         # 2
    Rule("transpose", transpose_of_transpose),                          # 3
    Rule("unsqueeze", unsqueeze_of_squeeze),                            # 4
    Rule("squeeze", squeeze_of_unsqueeze),                              # 4
    Rule("mul", mul_by_one),                                            # 5
    Rule("div", div_by_one),                                            # 5
]


@register_pass
@dataclass(frozen=True)
class Canonicalize(Pass):
    """Apply ``RULES`` to a fixpoint (see the module docstring); ``run``
    returns True if any rule fired."""

    name = "canonicalize"

    def run(self, graph: Graph) -> bool:
        by_op: dict[str, list[Rule]] = {}
        for rule in RULES:
            by_op.setdefault(rule.op, []).append(rule)
        rw = Rewriter(graph)
        work = deque(graph)
        queued = set(work)
        changed = False
        while work:
            node = work.popleft()
            queued.discard(node)
            if node.graph is not graph or len(node.outputs) != 1:
                continue
            for rule in by_op.get(node.op, ()):
                new = _apply(rw, rule, node)
                if new is None:
                    continue
                old = node.output
                touched = [use.node for use in old.uses()] + rw.created
                graph.replace_all_uses(old, new)
                _erase_dead(graph, node)
                for n in touched:
                    if n not in queued:
                        queued.add(n)
                        work.append(n)
                changed = True
                break
        return changed


def _apply(rw: Rewriter, rule: Rule, node: Node) -> Value | None:
    """Run ``rule`` on ``node``: the replacement value, or None (the reason
    logged, and any node the rule created erased)."""
    rw.root, rw.created = node, []
    result = rule.fn(rw, node)
    if isinstance(result, Value) and result.type != node.output.type:
        result = f"replacement type {result.type} != {node.output.type}"
    if isinstance(result, str):
        log.debug("%s did not fire on %s: %s", rule.name, node.op, result)
        for created in reversed(rw.created):
            graph = created.graph
            if graph is not None and not any(out.num_uses for out in created.outputs):
                graph.erase(created)
        rw.created = []
        return None
    log.debug("%s fired on %s", rule.name, node.op)
    return result


def _erase_dead(graph: Graph, node: Node) -> None:
    """Erase ``node`` if nothing reads it, then its producers that became dead."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.graph is not graph or any(out.num_uses or out in graph.outputs for out in n.outputs):
            continue
        stack.extend(v.producer for v in n.inputs if v.producer is not None)
        graph.erase(n)
