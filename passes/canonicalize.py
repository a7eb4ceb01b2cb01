"""``canonicalize``: exact algebraic simplifications, run to a fixpoint.

Each rule is a small function ``rule(rw, node)`` on a node of one op; it
returns the value that replaces ``node``'s output, or a string saying why it
did not fire. ``on(op, fn)`` makes it a rule of the pattern engine
(``passes/pattern.py``), whose worklist driver applies ``RULES`` until none
fires (misses are logged at debug level under ``passes.pattern``): a rewrite
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

A replacement must have the type of the value it replaces (the engine
accepts a more precise dim only where the old one was unknown); otherwise the
rewrite is undone and logged. Each node is visited once plus
once per change of its inputs: O(nodes) for the rules here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ir import Graph, Node, Value
from ir.opdef import BROADCASTING, ops_with
from ir.ops.common import normalize_axis
from passes.base import Pass, register_pass
from passes.pattern import Op, Rewriter, Rule, RuleSet, Var, apply_rules


NodeRule = Callable[[Rewriter, Node], "Value | str"]


def on(op: str, fn: NodeRule, guard: Callable[[Node], bool] | None = None) -> Rule:
    """A rule of the pattern engine looking at every ``op`` node, whatever its
    inputs, with ``fn(rw, node)`` deciding (named after ``fn``); ``guard``,
    a cheap necessary condition for ``fn`` to fire (``Rule.guard``)."""
    code = fn.__code__
    return Rule(fn.__name__, Op(op, rest=Var()), lambda rw, m: fn(rw, m.root),
                defined_at=f"{code.co_filename}:{code.co_firstlineno}", guard=guard)


def reads(op: str) -> Callable[[Node], bool]:
    """Guard: some input of the node is computed by an ``op`` node."""
    return lambda node: any(v.producer is not None and v.producer.op == op for v in node._inputs)


def reads_constant(node: Node) -> bool:
    """Guard: some input of the node is a graph constant."""
    return any(v.const is not None for v in node._inputs)


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


BROADCASTING_OPS = sorted(ops_with(BROADCASTING))  # the ops that broadcast like NumPy

RULES = RuleSet([
    *(on(op, bypass_leading_unsqueeze, reads("unsqueeze")) for op in BROADCASTING_OPS),  # 1
    on("cast", cast_to_same_dtype),                                   # 2
    on("transpose", identity_transpose),                              # 2
    on("reshape", reshape_to_same_shape),                             # 2
    on("squeeze", no_axes),                                           # 2
    on("unsqueeze", no_axes),                                         # 2
    on("transpose", transpose_of_transpose, reads("transpose")),      # 3
    on("unsqueeze", unsqueeze_of_squeeze, reads("squeeze")),          # 4
    on("squeeze", squeeze_of_unsqueeze, reads("unsqueeze")),          # 4
    on("mul", mul_by_one, reads_constant),                            # 5
    on("div", div_by_one, reads_constant),                            # 5
])


@register_pass
@dataclass(frozen=True)
class Canonicalize(Pass):
    """Apply ``RULES`` to a fixpoint (see the module docstring); ``run``
    returns True if any rule fired."""

    name = "canonicalize"

    def run(self, graph: Graph) -> bool:
        return apply_rules(graph, RULES)
