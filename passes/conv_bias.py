"""``conv-bias-fusion``: a per-output-channel bias added to a conv's result
becomes the conv's bias input (ONNX Conv's ``B``).

A value is a per-channel operand of a rank-r tensor when, aligned to the
right as NumPy broadcasting aligns it, every dim except the one facing axis 1
is statically 1: ``(1, C, 1, 1)`` and ``(C, 1, 1)`` for NCHW. Its ``(C,)``
vector is made at compile time for constants (a one-value constant is
broadcast to C), is the source of an ``unsqueeze``/``reshape`` of a vector,
or is a ``squeeze`` node.

Rules:

1. conv-bias: ``add(conv(x, W), b)``, either operand order, b per-channel
   (initializer, graph input or computed value); a conv that already has a
   bias gets the sum (computed now when both are constants)::

       %c: f32[N,4,6,6] = conv(%x, %W) {flip=true, ...}
       %u: f32[1,4,1,1] = unsqueeze(%b) {axes=[0, 2, 3]}
       %y: f32[N,4,6,6] = add(%u, %c)
     ->
       %y: f32[N,4,6,6] = conv(%x, %W, %b) {flip=true, ...}

2. conv-bias-sub: ``sub(conv(x, W), c)`` with a constant per-channel c is
   the bias ``-c`` (``a - c`` and ``a + (-c)`` are the same IEEE operation)::

       const %c: f32[1,2,1,1] = [[[[0.5]], [[-1.0]]]]
       %y: f32[N,2,6,6] = sub(%conv, %c)
     ->
       const %c_1: f32[2] = [-0.5, 1.0]
       %y: f32[N,2,6,6] = conv(%x, %W, %c_1) {...}

The conv must have no other reader. ONNX Conv adds its bias to each
finished dot product, as the separate ``add`` did; only adding two biases
first (rule 1 with an existing bias) rounds differently: ``(acc + b0) + b``
becomes ``acc + (b0 + b)``. In float16 the conv adds its bias before
rounding once, where the matched graph rounds the conv's sums first.
``numerics="strict"`` (``ir.numerics``) declines both cases. One visit per
add/sub node, O(1) work each apart from reshaping a constant bias.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ir import Dim, DType, Value
from ir.types import dims_compatible
from passes.base import register_pass
from passes.rewrite import Const, Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var


# -- per-channel operands (shared with batchnorm-folding) --------------------
def channel_position(value: Value, rank: int) -> int:
    """The axis of ``value`` facing axis 1 of a rank-``rank`` tensor under
    right-aligned broadcasting (negative when ``value`` has no such axis)."""
    return value.rank - rank + 1


def is_per_channel(value: Value, rank: int, channels: Dim) -> bool:
    """Whether ``value`` broadcasts against a rank-``rank`` tensor with
    ``channels`` channels (axis 1) varying at most along that axis."""
    if value.rank > rank:
        return False
    ax = channel_position(value, rank)
    return all(d == 1 or (i == ax and dims_compatible(d, channels)) for i, d in enumerate(value.shape))


def channel_array(value: Value, channels: Dim) -> np.ndarray | None:
    """The ``(channels,)`` array of a constant per-channel ``value`` (a single
    value broadcast when ``channels`` is static), else None."""
    a = np.asarray(value.const).reshape(-1)
    if a.size == 1 and isinstance(channels, int):
        return np.broadcast_to(a, (channels,)).copy()
    return a if not isinstance(channels, int) or a.size == channels else None


def channel_vector(rw: Rewriter, value: Value, rank: int, channels: Dim) -> Value | None:
    """A ``(C,)`` value holding the per-channel ``value`` (see
    ``is_per_channel``): a new constant, the rank-1 source of an
    ``unsqueeze`` or ``reshape``, ``value`` itself, or a ``squeeze`` node.
    None when ``value`` is not per-channel, or is one non-constant value
    for several channels."""
    if not is_per_channel(value, rank, channels):
        return None
    if value.const is not None:
        a = channel_array(value, channels)
        return None if a is None else rw.const(a, value.name or "bias")
    ax = channel_position(value, rank)
    if ax < 0 or (value.shape[ax] == 1 and channels != 1):
        return None
    if value.rank == 1:
        return value
    node = value.producer
    if node is not None and node.op in ("unsqueeze", "reshape") and node.inputs[0].rank == 1:
        return node.inputs[0]
    return rw.add("squeeze", [value], {"axes": [i for i in range(value.rank) if i != ax]})


def add_vectors(rw: Rewriter, a: Value, b: Value) -> Value:
    """``a + b`` of two ``(C,)`` vectors: a new constant when both are constants
    (NumPy's add in their dtype, the same IEEE operation), else an ``add`` node."""
    if a.const is not None and b.const is not None:
        return rw.const(a.const + b.const, a.name or "bias")
    return rw.add("add", [a, b])


# -- rules ------------------------------------------------------------------------
CONV = Op("conv", Var("x"), Var("w"), rest=Var("b0"), name="conv")


def _fused(rw: Rewriter, m: Match, vector: Value | None, what: str) -> Value | str:
    out = m.conv.output
    if vector is None:
        return f"{what} is not a per-output-channel bias of {out.type}"
    bias = add_vectors(rw, m.b0, vector) if "b0" in m else vector
    return rw.add("conv", [m.x, m.w, bias], m.conv.attrs)


def fuse_add(rw: Rewriter, m: Match) -> Value | str:
    """add(conv(x, W[, b0]), b) -> conv(x, W, [b0 +] b as (C,))"""
    out = m.conv.output
    return _fused(rw, m, channel_vector(rw, m.c, out.rank, out.shape[1]), f"{m.c.type}")


def fuse_sub(rw: Rewriter, m: Match) -> Value | str:
    """sub(conv(x, W[, b0]), c) -> conv(x, W, [b0 +] -c as (C,)), c constant"""
    out = m.conv.output
    if not is_per_channel(m.c, out.rank, out.shape[1]):
        return f"{m.c.type} is not a per-output-channel bias of {out.type}"
    a = channel_array(m.c, out.shape[1])
    vector = None if a is None else rw.const(-a, m.c.name or "bias")
    return _fused(rw, m, vector, f"{m.c.type}")


RULES = RuleSet([
    # conv(x, W) + b[None, :, None, None] -> conv(x, W, b)
    Rule("conv-bias", Op("add", CONV, Var("c")), fuse_add),
    # conv(x, W) - c[None, :, None, None] -> conv(x, W, -c), c constant
    Rule("conv-bias-sub", Op("sub", CONV, Const("c")), fuse_sub),
])


def _bit_exact(rewrite):
    """``rewrite`` where the fused conv rounds as the matched graph did (the
    rules under ``numerics="strict"``)."""
    def strict(rw: Rewriter, m: Match) -> Value | str:
        if "b0" in m:
            return "numerics='strict': the two biases would be added first ((acc + b0) + b becomes acc + (b0 + b))"
        if m.conv.output.dtype == DType.FLOAT16:
            return "numerics='strict': a float16 conv adds its bias before rounding, the matched graph after"
        return rewrite(rw, m)

    return strict


STRICT_RULES = RuleSet(dataclasses.replace(r, rewrite=_bit_exact(r.rewrite)) for r in RULES)


@register_pass
@dataclass(frozen=True)
class ConvBiasFusion(RuleSetPass):
    """Fuse per-channel bias additions into ``conv`` nodes (see the module docstring).

    Attributes:
        numerics: ``"strict"`` runs ``STRICT_RULES`` (no second bias, no
            float16); ``"fast"`` or None (alone; a compilation fills in its
            mode) every rule.
    """

    name = "conv-bias-fusion"
    after = ("conv-recovery",)  # the convs whose bias it finds
    numerics: str | None = None

    def rule_set(self) -> RuleSet:
        return STRICT_RULES if self.strict else RULES
