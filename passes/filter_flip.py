"""``filter-flip``: turn true convolutions (``conv{flip=true}``, what
PyTensor's ``convolve2d`` computes) into ONNX Conv's cross-correlation
(``flip=false``) by reversing the kernel's spatial axes.

A convolution with kernel ``W`` is the cross-correlation with
``W[:, :, ::-1, ::-1]`` (``ir/ops/nn.py``, ONNX Conv). With the kernel
``[[1, 2], [3, 4]]``, convolving a delta image gives ``[[1, 2], [3, 4]]``
back, cross-correlating gives ``[[4, 3], [2, 1]]``.

Rules:

1. flip-constant-kernel: a constant kernel is flipped at compile time into a
   new constant named after it (``<name>_flipped``); the original stays
   untouched (constants are read-only copies) and ``dce`` removes it when
   nothing else reads it::

       const %W: f32[1,1,2,2] = [[[[1.0, 2.0], [3.0, 4.0]]]]
       %y: f32[N,1,7,7] = conv(%x, %W) {flip=true, ...}
     ->
       const %W_flipped: f32[1,1,2,2] = [[[[4.0, 3.0], [2.0, 1.0]]]]
       %y: f32[N,1,7,7] = conv(%x, %W_flipped) {flip=false, ...}

2. cancel-reversed-kernel: a kernel that is itself a full reversal of the
   spatial axes (``W[:, :, ::-1, ::-1]``, how users write a cross-correlation
   with ``convolve2d``) is read unreversed::

       %r: f32[4,3,3,3] = slice(%W, %max, %min, %minus_ones) {axes=[2, 3]}
       %y: f32[N,4,6,6] = conv(%x, %r) {flip=true, ...}
     ->
       %y: f32[N,4,6,6] = conv(%x, %W) {flip=false, ...}

3. flip-kernel-value: any other kernel (a graph input, a computed value) is
   reversed by a ``slice`` with step -1 on its spatial axes (starts
   ``INT64_MAX``, ends ``INT64_MIN``: the whole axis backwards, as lowering
   writes ``[::-1]``)::

       %y: f32[N,4,6,6] = conv(%x, %W) {flip=true, ...}
     ->
       const %starts: i64[2] = [9223372036854775807, 9223372036854775807]
       const %ends: i64[2] = [-9223372036854775808, -9223372036854775808]
       const %steps: i64[2] = [-1, -1]
       %r: f32[4,3,3,3] = slice(%W, %starts, %ends, %steps) {axes=[2, 3]}
       %y: f32[N,4,6,6] = conv(%x, %r) {flip=false, ...}

All rules are exact: the same products are summed in the same order. One
visit per conv node; flipping a constant copies it once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ir import Value
from ir.ops.common import normalize_axis
from ir.ops.shape import INT64_MAX, INT64_MIN
from passes.base import register_pass
from passes.conv_recovery import conv_bias
from passes.rewrite import Const, Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var

FLIP = {"flip": True}


def _unflipped(rw: Rewriter, m: Match, kernel: Value) -> Value:
    return rw.add("conv", [m.x, kernel, *conv_bias(m)], {**m.root.attrs, "flip": False})


def flip_constant(rw: Rewriter, m: Match) -> Value:
    """conv{flip=true}(x, W) -> conv{flip=false}(x, W_flipped), W_flipped computed now"""
    w = m.w.const
    flipped = np.flip(w, axis=tuple(range(2, w.ndim)))
    return _unflipped(rw, m, rw.const(flipped, f"{m.w.name or 'kernel'}_flipped"))


def is_reversal(node) -> bool:
    """Whether a ``slice`` node reverses each spatial axis (2 and on) of its
    input whole, and touches no other axis."""
    x = node.inputs[0]
    if any(v.const is None for v in node.inputs[1:]):
        return False
    starts, ends, steps = (v.const.tolist() for v in node.inputs[1:])
    axes = [normalize_axis(a, x.rank, "slice") for a in node.attrs["axes"]]
    if sorted(axes) != list(range(2, x.rank)):
        return False
    for a, start, end, step in zip(axes, starts, ends, steps):
        n = x.shape[a]
        if step != -1 or not isinstance(n, int) or range(*slice(start, end, -1).indices(n)) != range(n - 1, -1, -1):
            return False
    return True


def cancel_reversal(rw: Rewriter, m: Match) -> Value | str:
    """conv{flip=true}(x, W[:, :, ::-1, ::-1]) -> conv{flip=false}(x, W)"""
    if not is_reversal(m.rev):
        return "the kernel slice is not a whole reversal of the spatial axes"
    return _unflipped(rw, m, m.w0)


def flip_value(rw: Rewriter, m: Match) -> Value:
    """conv{flip=true}(x, W) -> conv{flip=false}(x, W[:, :, ::-1, ::-1])"""
    nsp = m.w.rank - 2
    starts = rw.const(np.full(nsp, INT64_MAX, dtype=np.int64), "starts")
    ends = rw.const(np.full(nsp, INT64_MIN, dtype=np.int64), "ends")
    steps = rw.const(np.full(nsp, -1, dtype=np.int64), "steps")
    flipped = rw.add("slice", [m.w, starts, ends, steps], {"axes": list(range(2, m.w.rank))})
    return _unflipped(rw, m, flipped)


REVERSED = Op("slice", Var("w0"), Const(), Const(), Const(), name="rev", single_use=False)

RULES = RuleSet([
    # conv{flip}(x, W const) -> conv(x, W[:, :, ::-1, ::-1] computed now)
    Rule("flip-constant-kernel", Op("conv", Var("x"), Const("w"), rest=Var("b"), attrs=FLIP), flip_constant),
    # conv{flip}(x, W[:, :, ::-1, ::-1]) -> conv(x, W)
    Rule("cancel-reversed-kernel", Op("conv", Var("x"), REVERSED, rest=Var("b"), attrs=FLIP), cancel_reversal),
    # conv{flip}(x, W) -> conv(x, slice(W){step -1 on spatial axes})
    Rule("flip-kernel-value", Op("conv", Var("x"), Var("w"), rest=Var("b"), attrs=FLIP), flip_value),
])


@register_pass
@dataclass(frozen=True)
class FilterFlip(RuleSetPass):
    """Make every ``conv{flip=true}`` a ``conv{flip=false}`` with a reversed
    kernel (see the module docstring)."""

    name = "filter-flip"
    after = ("conv-recovery", "batchnorm-folding")  # flips the kernel once, after folding
    rules = RULES
