"""``conv-slicing``: disjoint channel slices of a constant-weight conv (through
its activation) become convs of the kernel's slices. IR text before and after
with the interpreter agreeing (to rounding: a narrower conv may sum in
another order, e.g. the sign of a zero sum), the cases it must not take, and a CSP block
(``cv1(x).chunk(2, 1)``, YOLO's C3k2) compiled end to end: PyTensor against
onnxruntime and the interpreter, with no Slice/Split left."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytensor.tensor as pt
import pytest

from compiler import nn
from passes.conv_slicing import ConvSlicing
from passes.dce import DeadCodeElimination
from tests.helpers import check_pytensor
from tests.passes.helpers import check_pass

CS = ConvSlicing()
PASSES = [CS, DeadCodeElimination()]
CONV = "{dilations=[1, 1], flip=false, group=1, pads=[0, 0, 0, 0], strides=[1, 1]}"
W4 = "const %W: f32[4,2,1,1] = [[[[1.0]], [[2.0]]], [[[-1.0]], [[0.5]]], [[[0.25]], [[3.0]]], [[[-2.0]], [[1.5]]]]"
B4 = "const %b: f32[4] = [0.5, -1.0, 2.0, 0.0]"


def test_two_halves_through_the_activation_become_two_convs():
    check_pass(PASSES, f"""
        graph @main(%x: f32[N,2,3,3]) {{
          {W4}
          {B4}
          const %zero: i64[1] = [0]
          const %two: i64[1] = [2]
          const %four: i64[1] = [4]
          const %one: i64[1] = [1]
          %c: f32[N,4,3,3] = conv(%x, %W, %b) {CONV}
          %a: f32[N,4,3,3] = silu(%c)
          %lo: f32[N,2,3,3] = slice(%a, %zero, %two, %one) {{axes=[1]}}
          %hi: f32[N,2,3,3] = slice(%a, %two, %four, %one) {{axes=[1]}}
          %y: f32[N,2,3,3] = add(%lo, %hi)
          return %y
        }}""", f"""
        graph @main(%x: f32[N,2,3,3]) {{
          const %W_0_2: f32[2,2,1,1] = [[[[1.0]], [[2.0]]], [[[-1.0]], [[0.5]]]]
          const %b_0_2: f32[2] = [0.5, -1.0]
          const %W_2_4: f32[2,2,1,1] = [[[[0.25]], [[3.0]]], [[[-2.0]], [[1.5]]]]
          const %b_2_4: f32[2] = [2.0, 0.0]
          %0: f32[N,2,3,3] = conv(%x, %W_0_2, %b_0_2) {CONV}
          %lo: f32[N,2,3,3] = silu(%0)
          %1: f32[N,2,3,3] = conv(%x, %W_2_4, %b_2_4) {CONV}
          %hi: f32[N,2,3,3] = silu(%1)
          %y: f32[N,2,3,3] = add(%lo, %hi)
          return %y
        }}""", rtol=1e-6)


def test_channels_no_slice_reads_are_not_computed():
    # one slice of the middle channels, a two-op chain, no bias, negative start
    check_pass(PASSES, f"""
        graph @main(%x: f32[N,2,3,3]) {{
          {W4}
          const %start: i64[1] = [-3]
          const %stop: i64[1] = [3]
          const %one: i64[1] = [1]
          %c: f32[N,4,3,3] = conv(%x, %W) {CONV}
          %a: f32[N,4,3,3] = relu(%c)
          %e: f32[N,4,3,3] = exp(%a)
          %y: f32[N,2,3,3] = slice(%e, %start, %stop, %one) {{axes=[-3]}}
          return %y
        }}""", f"""
        graph @main(%x: f32[N,2,3,3]) {{
          const %W_1_3: f32[2,2,1,1] = [[[[-1.0]], [[0.5]]], [[[0.25]], [[3.0]]]]
          %0: f32[N,2,3,3] = conv(%x, %W_1_3) {CONV}
          %1: f32[N,2,3,3] = relu(%0)
          %y: f32[N,2,3,3] = exp(%1)
          return %y
        }}""", rtol=1e-6)


# -- does not fire ------------------------------------------------------------------
NOT_FIRING = {
    "overlapping": ("%lo: f32[N,3,3,3] = slice(%a, %zero, %three, %one) {axes=[1]}",
                    "%hi: f32[N,2,3,3] = slice(%a, %two, %four, %one) {axes=[1]}"),
    "other-axis": ("%lo: f32[N,4,2,3] = slice(%a, %zero, %two, %one) {axes=[2]}",
                   "%hi: f32[N,4,1,3] = slice(%a, %two, %four, %one) {axes=[2]}"),
    "step-2": ("%lo: f32[N,2,3,3] = slice(%a, %zero, %four, %two) {axes=[1]}",
               "%hi: f32[N,2,3,3] = slice(%a, %two, %four, %one) {axes=[1]}"),
    "other-reader": ("%lo: f32[N,4,3,3] = neg(%a)",
                     "%hi: f32[N,2,3,3] = slice(%a, %two, %four, %one) {axes=[1]}"),
}


@pytest.mark.parametrize("case", sorted(NOT_FIRING))
def test_readers_other_than_disjoint_channel_slices_do_not_fire(case):
    lo, hi = NOT_FIRING[case]
    check_pass(CS, f"""
        graph @main(%x: f32[N,2,3,3]) {{
          {W4}
          const %zero: i64[1] = [0]
          const %one: i64[1] = [1]
          const %two: i64[1] = [2]
          const %three: i64[1] = [3]
          const %four: i64[1] = [4]
          %c: f32[N,4,3,3] = conv(%x, %W) {CONV}
          %a: f32[N,4,3,3] = silu(%c)
          {lo}
          {hi}
          return %lo, %hi
        }}""", None)


CANNOT_CUT = {
    "weights-input": ("%x: f32[N,2,3,3], %W: f32[4,2,1,1]", "", CONV, "%q: f32[N,4,3,3] = silu(%c)", "%lo"),
    "grouped": ("%x: f32[N,2,3,3]", "const %W: f32[4,1,1,1] = [[[[1.0]]], [[[2.0]]], [[[3.0]]], [[[4.0]]]]",
                CONV.replace("group=1", "group=2"), "%q: f32[N,4,3,3] = silu(%c)", "%lo"),
    "activation-read-twice": ("%x: f32[N,2,3,3]", W4, CONV,
                              "%m: f32[N,4,3,3] = silu(%c)\n%q: f32[N,4,3,3] = mul(%m, %c)", "%lo"),
    "conv-is-output": ("%x: f32[N,2,3,3]", W4, CONV, "%q: f32[N,4,3,3] = silu(%c)", "%lo, %c"),
}


@pytest.mark.parametrize("case", sorted(CANNOT_CUT))
def test_convs_it_cannot_cut_do_not_fire(case):
    inputs, weights, conv, activation, outputs = CANNOT_CUT[case]
    lines = [weights, "const %zero: i64[1] = [0]", "const %two: i64[1] = [2]", "const %one: i64[1] = [1]",
             f"%c: f32[N,4,3,3] = conv(%x, %W) {conv}", *activation.split("\n"),
             "%lo: f32[N,2,3,3] = slice(%q, %zero, %two, %one) {axes=[1]}", f"return {outputs}"]
    body = "\n".join("  " + line for line in lines if line)
    check_pass(CS, f"graph @main({inputs}) {{\n{body}\n}}", None)


# -- end to end: a CSP block ------------------------------------------------------
def _csp_block(x, rng, c=16):
    """``y0, y1 = silu(conv1x1(x)).chunk(2, 1); cat(y0, y1, y1 + silu(conv3x3(y1)))``
    with 2c output channels in the first conv, as YOLO's C3k2 block."""
    w1 = (rng.standard_normal((2 * c, x.type.shape[1], 1, 1)) / 4).astype(np.float32)
    b1 = rng.standard_normal(2 * c).astype(np.float32)
    w2 = (rng.standard_normal((c, c, 3, 3)) / 12).astype(np.float32)
    y = nn.silu(nn.conv2d(x, pt.constant(w1), pt.constant(b1)))
    y0, y1 = y[:, :c], y[:, c:]
    m = y1 + nn.silu(nn.conv2d(y1, pt.constant(w2), padding=1))
    return pt.concatenate([y0, y1, m], axis=1)


def test_csp_block_compiles_without_slices_and_matches_pytensor():
    rng = np.random.default_rng(0)
    x = pt.tensor4("x", dtype="float32", shape=(1, 16, 12, 12))
    out = _csp_block(x, rng)
    v = rng.standard_normal((1, 16, 12, 12)).astype(np.float32)
    # convolutions: the backend's summation order is free (numerics contract), hence rtol
    compiled = check_pytensor([x], [out], [v], rtol=2e-5, atol=2e-5)
    ops = Counter(n.op_type for n in compiled.model.graph.node)
    assert ops["Conv"] == 3 and ops["Slice"] == ops["Split"] == 0, ops
