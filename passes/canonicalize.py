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

8. ``expand`` and ``reshape`` to a shape known to hold the input's own
   dims (``shape_facts.elements`` of the target, every dim known: computed
   from the input's shape) are the input, for every run-time size::

       %s: i64[2] = shape(%x)                 (%x: f64[points,100])
       %y: f64[points,100] = expand(%x, %s) ->   (uses of %y read %x)

9. a broadcasting op reads the input of an ``expand`` operand when its
   result type stays the same without it (the op broadcasts as ``expand``
   does, NumPy's rules, so every element is the same)::

       %e: f64[points,100] = expand(%v, %s)   (%v: f64[points,1])
       %y: f64[points,100] = mul(%x, %e)    ->   %y: f64[points,100] = mul(%x, %v)

10. constants broadcast by ``expand`` (how a gradient's seed of ones, and
    what it meets, reach a batched graph) stay one-element constants as long
    as possible: ``expand(splat(c), s)``, where the input is an ``expand``
    of a one-element constant ``c`` (also through ``unsqueeze``/``reshape``/
    ``squeeze`` that cannot fail) and broadcasts to the result for every size
    its type allows (so no run-time shape check is lost), is ``expand(c, s)``; an elementwise op whose inputs are
    such expands and one-element constants computes on the constants and
    expands the result (then ``constant-folding`` folds it); ``reduce_sum``
    of ``expand(c, s)`` over static dims of n elements is ``expand(c * n)``
    to the kept dims, where every partial sum of the n terms is exact in
    float32 and float64 (``exact_repeat_sum``: ``c`` an integer or a power
    of two, and n below 2**24)::

       %o: f64[points] = expand(%one, %t)      (%one: f64[] = 1.0)
       %u: f64[points,1] = unsqueeze(%o) {axes=[1]}
       %e: f64[points,100] = expand(%u, %s)
       %n: f64[points,100] = mul(%e, %minus_half)
                                            ->   %n: f64[points,100] = expand(mul(%one, %minus_half), %s)

11. a negation moves onto the smaller operand of a float product or
    quotient (one that broadcasts, or a constant, which ``constant-folding``
    then negates): ``neg(a * b) = a * neg(b)``, ``neg(a) / b = a / neg(b)``,
    exact in IEEE arithmetic (rounding is symmetric; the sign of a zero or an
    infinity is the same either way; only a NaN's sign bit may differ)::

       %q: f64[N,100] = div(%a, %s)          (%s: f64[N,1])
       %y: f64[N,100] = neg(%q)         ->   %n: f64[N,1] = neg(%s)
                                             %y: f64[N,100] = div(%a, %n)

Deliberately absent: ``x + 0 -> x`` (wrong for ``x = -0.0``: ``-0.0 + 0.0``
is ``+0.0``) and ``x * 0 -> 0`` (wrong for NaN and Inf).

A replacement must have the type of the value it replaces (the engine
accepts a more precise dim only where the old one was unknown); otherwise the
rewrite is undone and logged. Each node is visited once plus
once per change of its inputs: O(nodes) for the rules here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ir import DType, Node, Value
from ir.errors import OpError
from ir.opdef import BROADCASTING, ELEMENTWISE, RANDOM, ops_with
from ir.ops.common import broadcast_shapes, normalize_axis
from ir.types import refine_type
from passes.base import register_pass
from passes.shape_facts import elements
from passes.rewrite import Const, ConstEq, Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var, producer


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


# -- rules 8-10: expand ------------------------------------------------------------
def known_shape(value: Value) -> bool:
    return None not in value.shape


def holds_own_dims(s: Value, x: Value) -> bool:
    """Whether the shape operand ``s`` is known to hold ``x``'s own dims
    (``passes.shape_facts.elements``: computed from ``shape(x)`` or equal
    constants), so an ``expand``/``reshape`` of ``x`` to ``s`` is ``x``
    for every input, a wrong-shaped one included (a declared type is only a
    claim about run time; this is a proof)."""
    return known_shape(x) and elements(s) == tuple(x.shape)


def to_own_dims(rw: Rewriter, m: Match) -> Value | str:
    """expand(x, s) -> x, reshape(x, s) -> x where s holds x's own dims (rule 8)"""
    if m.x.type != m.root.output.type or not holds_own_dims(m.root.inputs[1], m.x):
        return "the target is not known to be the input's own dims"
    return m.x


def bypass_expand(rw: Rewriter, m: Match) -> Value | str:
    """op(..., expand(v, s), ...) -> op(..., v, ...) where the result type stays (rule 9)"""
    node = m.root
    inputs = list(node.inputs)
    for i, e in enumerate(inputs):
        src = producer(e, "expand")
        if src is None:
            continue
        trial = inputs[:i] + [src.inputs[0]] + inputs[i + 1:]
        if all(known_shape(v) for v in trial) and broadcast_of(trial, node.op) == node.output.shape:
            inputs = trial
    if inputs == list(node.inputs):
        return "every expand operand widens the result, or a dim is unknown"
    return rw.add(node.op, inputs, node.attrs)


def broadcast_of(values: list[Value], op: str) -> tuple | None:
    """The broadcast shape of ``values`` (None where they cannot broadcast)."""
    try:
        return broadcast_shapes([v.shape for v in values], op)
    except OpError:
        return None


def view_cannot_fail(node: Node) -> bool:
    """Whether ``node`` is a view that runs for every input of its type:
    ``unsqueeze``; ``squeeze`` of static 1s; ``reshape`` between static
    shapes (its type rule checked the sizes)."""
    if node.op == "unsqueeze":
        return True
    x = node.inputs[0]
    if node.op == "squeeze":
        return all(x.shape[a] == 1 for a in axes_of(node, x.rank))
    return node.op == "reshape" and x.type.is_static and node.output.type.is_static


def broadcast_cannot_fail(x: Value, out: Value) -> bool:
    """Whether broadcasting ``x`` to ``out``'s shape succeeds for every
    run-time size the types allow: each dim of ``x`` (right-aligned) is a
    static 1 or ``out``'s own dim. Dropping such an ``expand`` drops no
    run-time check (a wrong-shaped input must still be refused)."""
    offset = out.rank - x.rank
    return offset >= 0 and all(d == 1 or (d is not None and d == out.shape[i + offset])
                               for i, d in enumerate(x.shape))


def one_element_constant(v: Value) -> bool:
    return v.const is not None and v.const.size == 1


def splat_of(value: Value):
    """The one-element constant ``c`` when ``value`` is ``expand(c, s)``,
    possibly under views that cannot fail (``view_cannot_fail``): every
    element is ``c``; else None."""
    while (node := value.producer) is not None and node.op in ("unsqueeze", "squeeze", "reshape") \
            and view_cannot_fail(node):
        value = node.inputs[0]
    node = producer(value, "expand")
    return node.inputs[0] if node is not None and one_element_constant(node.inputs[0]) else None


def expand_constant(rw: Rewriter, c: Value, s: Value, want: Value) -> Value | str:
    """``expand(c, s)`` of a one-element constant ``c``, typed as ``want``
    (the value it replaces), when ``s`` is known to hold ``want``'s dims
    (``passes.shape_facts.elements``: the rewriter's type rule sees no
    value in a computed shape); else a reason."""
    if c.rank > want.rank or not holds_own_dims(s, want):
        return "the target shape is not known to be the result's"
    out = rw.add("expand", [c, s])
    out.type = refine_type(out.type, want.type.with_dtype(out.dtype))
    return out


def expand_of_splat(rw: Rewriter, m: Match) -> Value | str:
    """expand(splat(c), s) -> expand(c, s) (rule 10)"""
    c = splat_of(m.x)
    if c is None:
        return "the input is not a splat of a one-element constant"
    if not broadcast_cannot_fail(m.x, m.root.output):
        return "the expand checks the input's shape at run time"
    return expand_constant(rw, c, m.root.inputs[1], m.root.output)


def elementwise_of_splats(rw: Rewriter, m: Match) -> Value | str:
    """op(expand(c, s), d, ...) -> expand(op(c, d, ...), s): one-element constants and expands of them (rule 10)"""
    node, out = m.root, m.root.output
    shape, scalars = None, []
    for v in node.inputs:
        src = producer(v, "expand")
        if src is not None and one_element_constant(src.inputs[0]) and v.type.shape == out.shape:
            shape = shape or src.inputs[1]
            scalars.append(src.inputs[0])
        elif one_element_constant(v) and v.rank <= out.rank:
            scalars.append(v)
        else:
            return "an input is neither a one-element constant nor an expand of one to the result's shape"
    if shape is None:
        return "no input is an expand"
    return expand_constant(rw, rw.add(node.op, scalars, node.attrs), shape, out)


def exact_repeat_sum(c: float, n: int) -> bool:
    """Every partial sum ``k c`` (k <= n) of n copies of c is exact in
    float32 and float64, in any order: c = 0; c an integer with n |c| below
    2**24; or c a power of two (k c is k scaled) with n below 2**24 and
    n |c| in float32's normal range."""
    if c == 0 or not np.isfinite(c):
        return c == 0
    if n >= 2 ** 24:
        return False
    if float(c).is_integer():
        return n * abs(c) < 2 ** 24
    mantissa, _ = np.frexp(abs(c))
    return mantissa == 0.5 and 2.0 ** -126 <= abs(c) and n * abs(c) < 2.0 ** 127


def reduce_sum_of_splat(rw: Rewriter, m: Match) -> Value | str:
    """reduce_sum(expand(c, s), axes) -> expand(c * n, kept dims of s) (rule 10)"""
    node, e = m.root, m.root.inputs[0]
    src = producer(e, "expand")
    c, s = src.inputs
    if c.rank > 0 or c.dtype not in (DType.FLOAT32, DType.FLOAT64):
        return "not an expand of a float32/float64 scalar constant"
    if len(node.inputs) > 1 or s.rank != 1 or s.shape[0] != e.rank:
        return "the axes are an input, or the shape is not one entry per axis"
    axes = axes_of(node, e.rank) if node.attrs.get("axes") else frozenset(range(e.rank))
    reduced = [e.shape[a] for a in axes]
    if any(not isinstance(d, int) for d in reduced):
        return "a reduced dim is not static"
    n = int(np.prod(reduced, dtype=np.int64))
    value = float(c.const)
    if not exact_repeat_sum(value, n):
        return "the sum of the copies may round"
    kept = [a for a in range(e.rank) if a not in axes]
    if node.attrs["keepdims"]:
        mask = np.array([a in axes for a in range(e.rank)])
        target = rw.add("where", [rw.const(mask), rw.const(np.ones(e.rank, s.dtype.numpy)), s])
    else:
        target = rw.add("gather", [s, rw.const(np.array(kept, np.int64))], {"axis": 0})
    return expand_constant(rw, rw.const(np.array(value * n, dtype=c.const.dtype)), target, node.output)


# -- rule 11: negation onto the smaller operand ---------------------------------------
def smaller(v: Value, out: Value) -> bool:
    """Whether ``v`` is a constant, or broadcasts against ``out`` (lower
    rank, or a static 1 where ``out``'s dim is not 1): fewer elements."""
    if v.const is not None:
        return True
    if v.rank < out.rank:
        return True
    return any(d == 1 and o != 1 for d, o in zip(v.shape, out.shape))


def negate_smaller_operand(rw: Rewriter, m: Match) -> Value | str:
    """neg(a * b) -> a * neg(b), neg(a / b) -> a / neg(b) (or neg(a) / b), b the smaller operand"""
    inner, out = m.inner, m.root.output
    a, b = inner.inputs
    if not out.dtype.is_float:
        return "only float products and quotients (IEEE rounding is symmetric)"
    if smaller(b, out):
        return rw.add(inner.op, [a, rw.add("neg", [b])], inner.attrs)
    if smaller(a, out):
        return rw.add(inner.op, [rw.add("neg", [a]), b], inner.attrs)
    return "neither operand is smaller than the result"


def move_negation(rw: Rewriter, m: Match) -> Value | str:
    """neg(a) * b -> a * neg(b), neg(a) / b -> a / neg(b), b / neg(a) -> neg(b) / a, b the smaller operand"""
    node, out = m.root, m.root.output
    if not out.dtype.is_float:
        return "only float products and quotients (IEEE rounding is symmetric)"
    inputs = list(node.inputs)
    for i, v in enumerate(inputs):
        neg = producer(v, "neg", single=True)
        other = inputs[1 - i]
        if neg is not None and smaller(other, out) and not smaller(neg.inputs[0], out):
            inputs[i], inputs[1 - i] = neg.inputs[0], rw.add("neg", [other])
            return rw.add(node.op, inputs, node.attrs)
    return "no single-use negated operand beside a smaller one"


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
    Rule("expand-to-own-dims", Op("expand", x, Var()), to_own_dims),                                  # 8
    Rule("reshape-to-own-dims", Op("reshape", x, Var()), to_own_dims),                                # 8
    *(Rule("bypass-expand", Op(op, rest=Var(), any_input=Op("expand", Var(), Var(), single_use=False)),
           bypass_expand) for op in sorted(ops_with(BROADCASTING))),                                  # 9
    Rule("expand-of-splat", Op("expand", x, Var()), expand_of_splat),                                 # 10
    *(Rule("elementwise-of-splats", Op(op, rest=Var(), any_input=Op("expand", Const(), Var(), single_use=False)),
           elementwise_of_splats) for op in sorted(ops_with(ELEMENTWISE) - ops_with(RANDOM))),       # 10
    Rule("reduce-sum-of-splat", Op("reduce_sum", Op("expand", Const(), Var(), single_use=False), rest=Var()),
         reduce_sum_of_splat),                                                                          # 10
    *(Rule("negate-smaller-operand", Op("neg", Op(op, Var(), Var(), name="inner")), negate_smaller_operand)
      for op in ("mul", "div")),                                                                        # 11
    *(Rule("move-negation", Op(op, Var(), Var(), any_input=Op("neg", Var(), single_use=True)), move_negation)
      for op in ("mul", "div")),                                                                        # 11
])


@register_pass
@dataclass(frozen=True)
class Canonicalize(RuleSetPass):
    """Apply ``RULES`` to a fixpoint (see the module docstring); ``run``
    returns True if any rule fired."""

    name = "canonicalize"
    rules = RULES
