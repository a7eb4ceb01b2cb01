"""``canonicalize``: exact algebraic simplifications, run to a fixpoint.

Each rule is a pattern of the pattern engine (``passes/rewrite/``) with a
rewrite that returns the replacing value, or a string saying why it did not
fire; the engine's worklist driver applies ``RULES`` until none fires (misses are logged at debug level under ``passes.rewrite``): a rewrite
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

6. ``gather(cast(v), i)`` is ``cast(gather(v, i))`` when the gather has no
   more elements than ``v`` (statically): the cast commutes with any data
   movement, so this is exact, casts fewer elements and lets shape-folding
   see ``gather(shape(x), i)`` (PyTensor's ``mean`` divides by
   ``cast(shape(x))[axis]``, so a static axis's size becomes a constant)::

       %c: f32[3] = cast(%s) {to=f32}
       %y: f32[] = gather(%c, %two) {axis=0}
                                            ->   %g: i64[] = gather(%s, %two) {axis=0}
                                                 %y: f32[] = cast(%g) {to=f32}

7. ``x ** 1`` (``pow`` by an all-ones constant that changes neither shape
   nor dtype) is ``x``: the exact result is representable, so C's ``pow``
   (IEEE 754 ``pow``; NumPy's ``power``) returns it, NaN, Inf and -0.0
   included. onnxruntime's float64 ``Pow`` runs ``std::pow`` per element
   for any exponent but a scalar 2 or 3 (PyTensor's gradient of ``x ** 2``
   is ``2 * x ** 1``)::

       const %one: f64[1] = [1.0]
       %y: f64[N,3] = pow(%x, %one)         ->   (uses of %y read %x)

Deliberately absent: ``x + 0 -> x`` (wrong for ``x = -0.0``: ``-0.0 + 0.0``
is ``+0.0``) and ``x * 0 -> 0`` (wrong for NaN and Inf).

A replacement must have the type of the value it replaces (the engine
accepts a more precise dim only where the old one was unknown); otherwise the
rewrite is undone and logged. Each node is visited once plus
once per change of its inputs: O(nodes) for the rules here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ir import Node, Value
from ir.opdef import BROADCASTING, ops_with
from ir.ops.common import normalize_axis
from passes.base import register_pass
from passes.rewrite import ConstEq, Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var, producer


def axes_of(node: Node, rank: int) -> frozenset[int]:
    """The ``axes`` attribute of ``node`` normalized against ``rank``."""
    return frozenset(normalize_axis(a, rank, node.op) for a in node.attrs["axes"])


def leading_unsqueeze_source(value: Value) -> Value | None:
    """``x`` when ``value = unsqueeze(x)`` adds only leading axes, else None."""
    node = producer(value, "unsqueeze")
    if node is None or axes_of(node, value.rank) != frozenset(range(len(node.attrs["axes"]))):
        return None
    return node.inputs[0]


# -- rule 1: a leading unsqueeze read by a broadcasting op --------------------
def bypass_leading_unsqueeze(rw: Rewriter, m: Match) -> Value | str:
    """op(..., unsqueeze(x){axes=[0..k)}, ...) -> op(..., x, ...) if the result rank is kept."""
    node = m.root
    inputs = list(node.inputs)
    for i, v in enumerate(inputs):
        x = leading_unsqueeze_source(v)
        if x is not None and max(w.rank for w in inputs[:i] + [x] + inputs[i + 1:]) == node.output.rank:
            inputs[i] = x
    if inputs == list(node.inputs):
        return "no input is a leading unsqueeze that the broadcast makes redundant"
    return rw.add(node.op, inputs, node.attrs)


# -- node predicates of the patterns below ---------------------------------------
def casts_to_own_dtype(node: Node) -> bool:
    return node.attrs["to"] == node.inputs[0].dtype


def identity_perm(node: Node) -> bool:
    return list(node.attrs["perm"]) == list(range(node.output.rank))


def static_to_itself(node: Node) -> bool:
    x = node.inputs[0]
    return x.type.is_static and x.type == node.output.type


def _no_axes(axes) -> bool:
    return not axes


def _input(rw: Rewriter, m: Match) -> Value:
    return m.x


# -- rewrites ---------------------------------------------------------------------
def merge_transposes(rw: Rewriter, m: Match) -> Value:
    """transpose(transpose(x, p), q) -> transpose(x, [p[i] for i in q])"""
    return rw.add("transpose", [m.x], {"perm": [m.inner.attrs["perm"][i] for i in m.root.attrs["perm"]]})


def cancel_squeeze(rw: Rewriter, m: Match) -> Value | str:
    """unsqueeze(squeeze(x, a), a) -> x"""
    if axes_of(m.inner, m.x.rank) != axes_of(m.root, m.root.output.rank):
        return "squeeze and unsqueeze axes differ"
    return m.x


def cancel_unsqueeze(rw: Rewriter, m: Match) -> Value | str:
    """squeeze(unsqueeze(x, a), a) -> x"""
    if axes_of(m.inner, m.inner.output.rank) != axes_of(m.root, m.inner.output.rank):
        return "unsqueeze and squeeze axes differ"
    return m.x


def drop_one(rw: Rewriter, m: Match) -> Value | str:
    """x * 1 -> x, 1 * x -> x, x / 1 -> x and x ** 1 -> x, when the ones change neither shape nor dtype"""
    return m.x if m.x.type == m.root.output.type else "the ones change the shape or dtype"


def gather_before_cast(rw: Rewriter, m: Match) -> Value | str:
    """gather(cast(v), i) -> cast(gather(v, i)) when the gather does not grow v"""
    v, out = m.x, m.root.output
    if v.type.size is None or out.type.size is None or out.type.size > v.type.size:
        return "the gather may hold more elements than the cast's input"
    gathered = rw.add("gather", [v, *m.root.inputs[1:]], m.root.attrs)
    return rw.add("cast", [gathered], m.inner.attrs)


x = Var("x")
ONES = ConstEq(1)
# (kept alive by other readers, the inner node of rules 3 and 4 is not duplicated work: one node replaces two)
INNER = {"name": "inner", "single_use": False}

RULES = RuleSet([
    *(Rule("bypass-leading-unsqueeze", Op(op, rest=Var(), any_input=Op("unsqueeze", Var(), single_use=False)),
           bypass_leading_unsqueeze) for op in sorted(ops_with(BROADCASTING))),                          # 1
    Rule("cast-to-own-dtype", Op("cast", x, where=casts_to_own_dtype), _input),                    # 2
    Rule("identity-transpose", Op("transpose", x, where=identity_perm), _input),                   # 2
    Rule("reshape-to-itself", Op("reshape", x, Var(), where=static_to_itself), _input),            # 2
    Rule("squeeze-no-axes", Op("squeeze", x, attrs={"axes": _no_axes}), _input),                     # 2
    Rule("unsqueeze-no-axes", Op("unsqueeze", x, attrs={"axes": _no_axes}), _input),                 # 2
    Rule("transpose-of-transpose", Op("transpose", Op("transpose", x, **INNER)), merge_transposes),  # 3
    Rule("unsqueeze-of-squeeze", Op("unsqueeze", Op("squeeze", x, **INNER)), cancel_squeeze),       # 4
    Rule("squeeze-of-unsqueeze", Op("squeeze", Op("unsqueeze", x, **INNER)), cancel_unsqueeze),     # 4
    Rule("mul-by-one", Op("mul", x, ONES), drop_one),                                                # 5
    Rule("div-by-one", Op("div", x, ONES), drop_one),                                                # 5
    Rule("pow-of-one", Op("pow", x, ONES), drop_one),                                                # 7
    Rule("gather-before-cast", Op("gather", Op("cast", x, **INNER), Var()), gather_before_cast),    # 6
])


@register_pass
@dataclass(frozen=True)
class Canonicalize(RuleSetPass):
    """Apply ``RULES`` to a fixpoint (see the module docstring); ``run``
    returns True if any rule fired."""

    name = "canonicalize"
    rules = RULES
