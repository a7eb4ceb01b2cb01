"""``conv-bias-fusion``: per-channel additions become the conv's bias input.
IR text before and after with the interpreter agreeing (bit for bit: the
conv adds its bias to the rounded sums, as the add did; to rounding when two
biases are summed first), and the cases it must not take."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytensor.tensor as pt
import pytest
from pytensor.tensor.signal import convolve2d

import passes.batchnorm_folding  # noqa: F401  (registers the passes named in PIPELINE)
import passes.conv_recovery  # noqa: F401
import passes.filter_flip  # noqa: F401
from passes.conv_bias import ConvBiasFusion
from passes.dce import DeadCodeElimination
from tests.helpers import check_pytensor
from tests.passes.helpers import check_pass

CB = ConvBiasFusion()
PASSES = [CB, DeadCodeElimination()]
CONV = "{dilations=[], flip=true, group=1, pads=[], strides=[]}"


def test_unsqueezed_bias_input_in_either_order():
    for add in ("add(%u, %c)", "add(%c, %u)"):
        check_pass(PASSES, f"""
            graph @main(%x: f32[N,3,6,6], %W: f32[4,3,3,3], %b: f32[4]) {{
              %c: f32[N,4,4,4] = conv(%x, %W) {CONV}
              %u: f32[1,4,1,1] = unsqueeze(%b) {{axes=[0, 2, 3]}}
              %y: f32[N,4,4,4] = {add}
              return %y
            }}""", f"""
            graph @main(%x: f32[N,3,6,6], %W: f32[4,3,3,3], %b: f32[4]) {{
              %y: f32[N,4,4,4] = conv(%x, %W, %b) {CONV}
              return %y
            }}""")


def test_constant_bias_is_reshaped_at_compile_time():
    check_pass(PASSES, f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3]) {{
          const %b: f32[1,2,1,1] = [[[[0.5]], [[-0.25]]]]
          %c: f32[N,2,4,4] = conv(%x, %W) {CONV}
          %y: f32[N,2,4,4] = add(%b, %c)
          return %y
        }}""", f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3]) {{
          const %b_1: f32[2] = [0.5, -0.25]
          %y: f32[N,2,4,4] = conv(%x, %W, %b_1) {CONV}
          return %y
        }}""")


def test_one_constant_value_is_broadcast_over_the_channels():
    check_pass(PASSES, f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[3,3,3,3]) {{
          const %one: f32[] = 1.0
          %c: f32[N,3,4,4] = conv(%x, %W) {CONV}
          %y: f32[N,3,4,4] = add(%one, %c)
          return %y
        }}""", f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[3,3,3,3]) {{
          const %one_1: f32[3] = [1.0, 1.0, 1.0]
          %y: f32[N,3,4,4] = conv(%x, %W, %one_1) {CONV}
          return %y
        }}""")


def test_bias_added_to_an_existing_constant_bias_is_summed_now():
    check_pass(PASSES, f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3]) {{
          const %b0: f32[2] = [1.0, 2.0]
          const %b: f32[1,2,1,1] = [[[[0.5]], [[-0.25]]]]
          %c: f32[N,2,4,4] = conv(%x, %W, %b0) {CONV}
          %y: f32[N,2,4,4] = add(%c, %b)
          return %y
        }}""", f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3]) {{
          const %b0_1: f32[2] = [1.5, 1.75]
          %y: f32[N,2,4,4] = conv(%x, %W, %b0_1) {CONV}
          return %y
        }}""", rtol=1e-6)


def test_computed_channel_bias_is_squeezed_and_added_to_the_bias_input():
    check_pass(PASSES, f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3], %b0: f32[2], %p: f32[2,1,1], %q: f32[2,1,1]) {{
          %c: f32[N,2,4,4] = conv(%x, %W, %b0) {CONV}
          %b: f32[2,1,1] = mul(%p, %q)
          %y: f32[N,2,4,4] = add(%c, %b)
          return %y
        }}""", f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3], %b0: f32[2], %p: f32[2,1,1], %q: f32[2,1,1]) {{
          %b: f32[2,1,1] = mul(%p, %q)
          %y: f32[2] = squeeze(%b) {{axes=[1, 2]}}
          %y_1: f32[2] = add(%b0, %y)
          %y_2: f32[N,2,4,4] = conv(%x, %W, %y_1) {CONV}
          return %y_2
        }}""", rtol=1e-6)


def test_subtracted_constant_is_a_negated_bias():
    check_pass(PASSES, f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3]) {{
          const %m: f32[2,1,1] = [[[0.5]], [[-1.0]]]
          %c: f32[N,2,4,4] = conv(%x, %W) {CONV}
          %y: f32[N,2,4,4] = sub(%c, %m)
          return %y
        }}""", f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3]) {{
          const %m_1: f32[2] = [-0.5, 1.0]
          %y: f32[N,2,4,4] = conv(%x, %W, %m_1) {CONV}
          return %y
        }}""")


def test_symbolic_channels_keep_their_name():
    check_pass(PASSES, f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[M,3,3,3], %b: f32[1,M,1,1]) {{
          %c: f32[N,M,4,4] = conv(%x, %W) {CONV}
          %y: f32[N,M,4,4] = add(%c, %b)
          return %y
        }}""", f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[M,3,3,3], %b: f32[1,M,1,1]) {{
          %y: f32[M] = squeeze(%b) {{axes=[0, 2, 3]}}
          %y_1: f32[N,M,4,4] = conv(%x, %W, %y) {CONV}
          return %y_1
        }}""", sizes={"M": 3})


# -- does not fire ------------------------------------------------------------------
@pytest.mark.parametrize("bias", [
    "%b: f32[1,2,4,4]",  # varies over space
    "%b: f32[1,1,1,4]",  # the width axis, not the channels
    "%b: f32[1,1,1,1]",  # one value for two channels, not a constant
], ids=["spatial", "wrong-axis", "one-value-input"])
def test_biases_that_are_not_per_output_channel_do_not_fire(bias):
    check_pass(CB, f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3], {bias}) {{
          %c: f32[N,2,4,4] = conv(%x, %W) {CONV}
          %y: f32[N,2,4,4] = add(%c, %b)
          return %y
        }}""", None)


def test_conv_read_elsewhere_does_not_fire():
    check_pass(CB, f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3], %b: f32[1,2,1,1]) {{
          %c: f32[N,2,4,4] = conv(%x, %W) {CONV}
          %y: f32[N,2,4,4] = add(%c, %b)
          return %y, %c
        }}""", None)


def test_subtraction_of_an_input_or_from_a_constant_does_not_fire():
    check_pass(CB, f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3], %b: f32[1,2,1,1]) {{
          %c: f32[N,2,4,4] = conv(%x, %W) {CONV}
          %y: f32[N,2,4,4] = sub(%c, %b)
          return %y
        }}""", None)
    check_pass(CB, f"""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3]) {{
          const %b: f32[1,2,1,1] = [[[[0.5]], [[-0.25]]]]
          %c: f32[N,2,4,4] = conv(%x, %W) {CONV}
          %y: f32[N,2,4,4] = sub(%b, %c)
          return %y
        }}""", None)


# -- PyTensor end to end ---------------------------------------------------------------
PIPELINE = ["canonicalize", "constant-folding", "canonicalize", "cse", "dce",
            "conv-recovery", "conv-bias-fusion", "batchnorm-folding", "filter-flip", "cse", "dce"]


def _conv(x, W):
    return convolve2d(x[:, None], W[None], mode="valid").sum(axis=2)


@pytest.mark.parametrize("form", ["vector-input", "4d-input", "initializer"])
def test_pytensor_bias_becomes_the_conv_bias_input(form):
    rng = np.random.default_rng(0)
    x = pt.tensor4("x", dtype="float32", shape=(None, 3, 6, 6))
    W = pt.constant(rng.normal(size=(4, 3, 3, 3)).astype(np.float32))
    bv = rng.normal(size=4).astype(np.float32)
    if form == "vector-input":
        b = pt.vector("b", dtype="float32", shape=(4,))
        y, inputs, values = b[None, :, None, None] + _conv(x, W), [b], [bv]
    elif form == "4d-input":
        b = pt.tensor4("b", dtype="float32", shape=(1, 4, 1, 1))
        y, inputs, values = _conv(x, W) + b, [b], [bv.reshape(1, 4, 1, 1)]
    else:
        y, inputs, values = _conv(x, W) + pt.constant(bv)[None, :, None, None], [], []
    xv = rng.normal(size=(2, 3, 6, 6)).astype(np.float32)
    compiled = check_pytensor([x, *inputs], y, [xv, *values], passes=PIPELINE, rtol=1e-5, atol=1e-5)
    conv = [n for n in compiled.model.graph.node if n.op_type == "Conv"]
    assert len(conv) == 1 and len(conv[0].input) == 3
    assert histogram(compiled) == ({"Squeeze": 1, "Conv": 1} if form == "4d-input" else {"Conv": 1})
    if form == "vector-input":
        assert conv[0].input[2] == "b"


def histogram(compiled) -> dict[str, int]:
    """ONNX op type -> count in the emitted model."""
    return dict(Counter(n.op_type for n in compiled.model.graph.node))
