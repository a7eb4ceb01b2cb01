"""``filter-flip``: true convolutions become cross-correlations with reversed
kernels. IR text before and after (the interpreter agreeing bit for bit: the
same products are summed in the same order), the cases a rule must not
take, and asymmetric kernels (Sobel) end to end in onnxruntime, where a
missing or doubled flip shows."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.signal
from onnx import numpy_helper
from pytensor.tensor.signal import convolve2d

import passes.batchnorm_folding  # noqa: F401  (registers the passes named in PIPELINE)
import passes.conv_bias  # noqa: F401
import passes.conv_recovery  # noqa: F401
from backends.onnx import emit_model, make_session
from ir.parser import parse_graph
from ir.verifier import verify
from passes.cse import CommonSubexpressionElimination
from passes.dce import DeadCodeElimination
from passes.filter_flip import FilterFlip
from tests.helpers import check_pytensor
from tests.passes.helpers import assert_same_numbers, check_pass

FF = FilterFlip()
PASSES = [FF, DeadCodeElimination()]
SOBEL = np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]], dtype=np.float32)
PIPELINE = ["canonicalize", "constant-folding", "canonicalize", "cse", "dce",
            "conv-recovery", "conv-bias-fusion", "batchnorm-folding", "filter-flip", "cse", "dce"]


def histogram(compiled) -> dict[str, int]:
    """ONNX op type -> count in the emitted model."""
    return dict(Counter(n.op_type for n in compiled.model.graph.node))


def test_constant_kernel_is_flipped_into_a_new_constant():
    check_pass(PASSES, """
        graph @main(%x: f32[N,1,6,6]) {
          const %sobel: f32[1,1,3,3] = [[[[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]]]]
          const %b: f32[1] = [0.5]
          %y: f32[N,1,4,4] = conv(%x, %sobel, %b) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          return %y
        }""", """
        graph @main(%x: f32[N,1,6,6]) {
          const %b: f32[1] = [0.5]
          const %sobel_flipped: f32[1,1,3,3] = [[[[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]]]
          %y: f32[N,1,4,4] = conv(%x, %sobel_flipped, %b) {dilations=[], flip=false, group=1, pads=[], strides=[]}
          return %y
        }""")


def test_constant_kernel_read_elsewhere_stays_and_shared_flips_merge():
    graph = check_pass([FF, CommonSubexpressionElimination(), DeadCodeElimination()], """
        graph @main(%x: f32[N,1,5,5]) {
          const %k: f32[1,1,2,2] = [[[[1.0, 2.0], [3.0, 4.0]]]]
          %a: f32[N,1,4,4] = conv(%x, %k) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          %b: f32[N,1,5,5] = conv(%x, %k) {dilations=[], flip=true, group=1, pads=[0, 0, 1, 1], strides=[]}
          return %a, %b, %k
        }""", """
        graph @main(%x: f32[N,1,5,5]) {
          const %k: f32[1,1,2,2] = [[[[1.0, 2.0], [3.0, 4.0]]]]
          const %k_flipped: f32[1,1,2,2] = [[[[4.0, 3.0], [2.0, 1.0]]]]
          %a: f32[N,1,4,4] = conv(%x, %k_flipped) {dilations=[], flip=false, group=1, pads=[], strides=[]}
          %b: f32[N,1,5,5] = conv(%x, %k_flipped) {dilations=[], flip=false, group=1, pads=[0, 0, 1, 1], strides=[]}
          return %a, %b, %k
        }""")
    np.testing.assert_array_equal(graph.constants["k"].const, [[[[1, 2], [3, 4]]]])  # the user's data


def test_kernel_input_is_reversed_by_a_slice():
    check_pass(FF, """
        graph @main(%x: f32[N,3,8,8], %W: f32[4,3,3,2], %b: f32[4]) {
          %y: f32[N,4,7,7] = conv(%x, %W, %b) {dilations=[], flip=true, group=1, pads=[1, 0, 0, 0], strides=[]}
          return %y
        }""", """
        graph @main(%x: f32[N,3,8,8], %W: f32[4,3,3,2], %b: f32[4]) {
          const %starts: i64[2] = [9223372036854775807, 9223372036854775807]
          const %ends: i64[2] = [-9223372036854775808, -9223372036854775808]
          const %steps: i64[2] = [-1, -1]
          %y: f32[4,3,3,2] = slice(%W, %starts, %ends, %steps) {axes=[2, 3]}
          %y_1: f32[N,4,7,7] = conv(%x, %y, %b) {dilations=[], flip=false, group=1, pads=[1, 0, 0, 0], strides=[]}
          return %y_1
        }""")


REVERSED = """
    graph @main(%x: f32[N,3,8,8], %W: f32[4,3,3,2]) {
      const %max: i64[2] = [9223372036854775807, 9223372036854775807]
      const %min: i64[2] = [-9223372036854775808, -9223372036854775808]
      const %back: i64[2] = [-1, -1]
      %r: f32[4,3,3,2] = slice(%W, %max, %min, %back) {axes=[2, 3]}
      %y: f32[N,4,6,7] = conv(%x, %r) {dilations=[], flip=true, group=1, pads=[], strides=[]}
      return %y
    }"""


def test_user_reversed_kernel_cancels_the_flip():
    check_pass(PASSES, REVERSED, """
        graph @main(%x: f32[N,3,8,8], %W: f32[4,3,3,2]) {
          %y: f32[N,4,6,7] = conv(%x, %W) {dilations=[], flip=false, group=1, pads=[], strides=[]}
          return %y
        }""")


def test_partial_reversal_is_reversed_again_not_cancelled():
    # W[:, :, ::-1, 1::-1] drops nothing for a width-2 kernel but starts at 1: still whole;
    # W[:, :, ::-1, :0:-1] drops a column: not a reversal, so a second slice is added.
    whole = REVERSED.replace("%max: i64[2] = [9223372036854775807, 9223372036854775807]",
                             "%max: i64[2] = [9223372036854775807, 1]")
    check_pass(PASSES, whole, """
        graph @main(%x: f32[N,3,8,8], %W: f32[4,3,3,2]) {
          %y: f32[N,4,6,7] = conv(%x, %W) {dilations=[], flip=false, group=1, pads=[], strides=[]}
          return %y
        }""")
    cropped = REVERSED.replace("%min: i64[2] = [-9223372036854775808, -9223372036854775808]",
                               "%min: i64[2] = [-9223372036854775808, 0]") \
        .replace("%r: f32[4,3,3,2]", "%r: f32[4,3,3,1]").replace("f32[N,4,6,7]", "f32[N,4,6,8]")
    graph = parse_graph(cropped)
    assert FF.run(graph)
    verify(graph)
    assert_same_numbers(parse_graph(cropped), graph)
    conv = [n for n in graph if n.op == "conv"][0]
    assert conv.attrs["flip"] is False and conv.inputs[1].producer.op == "slice"
    assert conv.inputs[1].producer.inputs[0].producer.op == "slice"


def test_cross_correlations_are_left_alone():
    check_pass(FF, """
        graph @main(%x: f32[N,3,8,8], %W: f32[4,3,3,3]) {
          %y: f32[N,4,6,6] = conv(%x, %W) {dilations=[], flip=false, group=1, pads=[], strides=[]}
          return %y
        }""", None)


# -- end to end in onnxruntime -----------------------------------------------------
@pytest.mark.parametrize("kernel_input", [False, True], ids=["initializer", "input"])
def test_sobel_end_to_end_matches_scipy_convolve2d(kernel_input):
    # Sobel is antisymmetric: a missing flip negates the result, a doubled one too.
    kernel = "%k: f32[1,1,3,3]" if kernel_input else ""
    const = "" if kernel_input else \
        "const %k: f32[1,1,3,3] = [[[[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]]]]"
    graph = parse_graph(f"""
        graph @main(%x: f32[N,1,6,7]{', ' + kernel if kernel else ''}) {{
          {const}
          %y: f32[N,1,4,5] = conv(%x, %k) {{dilations=[], flip=true, group=1, pads=[], strides=[]}}
          return %y
        }}""")
    assert FF.run(graph)
    DeadCodeElimination().run(graph)
    model = emit_model(graph)
    assert [n.op_type for n in model.graph.node] == (["Slice", "Conv"] if kernel_input else ["Conv"])
    x = np.random.default_rng(0).normal(size=(2, 1, 6, 7)).astype(np.float32)
    feed = {"x": x, "k": SOBEL[None, None]} if kernel_input else {"x": x}
    got = make_session(model).run(None, feed)[0]
    want = np.stack([scipy.signal.convolve2d(x[i, 0], SOBEL, mode="valid") for i in range(2)])[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert np.abs(want).max() > 1  # not all zeros: a sign error would show


# -- PyTensor's convolve2d end to end ---------------------------------------------------
def test_pytensor_sobel_filter_is_one_conv_with_a_flipped_initializer():
    sobel = pytensor.shared(SOBEL[None, None].copy(), name="sobel")
    x = pt.tensor4("x", dtype="float32", shape=(None, 1, 6, 7))
    y = convolve2d(x[:, None], sobel[None], mode="valid").sum(axis=2)
    xv = np.random.default_rng(1).normal(size=(2, 1, 6, 7)).astype(np.float32)
    compiled = check_pytensor([x], y, [xv], passes=PIPELINE, rtol=1e-5, atol=1e-5)
    assert histogram(compiled) == {"Conv": 1}
    (init,) = compiled.model.graph.initializer
    np.testing.assert_array_equal(numpy_helper.to_array(init), SOBEL[::-1, ::-1][None, None])
    np.testing.assert_array_equal(sobel.get_value(), SOBEL[None, None])  # the user's kernel is untouched


def test_pytensor_kernel_input_is_reversed_in_the_model():
    W = pt.tensor4("W", dtype="float32", shape=(2, 1, 3, 3))
    x = pt.tensor4("x", dtype="float32", shape=(None, 1, 5, 5))
    y = convolve2d(x[:, None], W[None], mode="full").sum(axis=2)
    rng = np.random.default_rng(2)
    kernels = np.stack([SOBEL, SOBEL.T])[:, None]
    compiled = check_pytensor([x, W], y, [rng.normal(size=(2, 1, 5, 5)).astype(np.float32), kernels],
                              passes=PIPELINE, rtol=1e-5, atol=1e-5)
    assert histogram(compiled) == {"Slice": 1, "Conv": 1}


def test_delta_image_gives_the_kernel_back_in_full_mode():
    # PyTensor's convolve2d flips: a centred delta reproduces the kernel (ONNX Conv alone would rotate it).
    kernel = np.array([[1, 2], [3, 4]], dtype=np.float32)
    x = pt.tensor4("x", dtype="float32", shape=(1, 1, 3, 3))
    y = convolve2d(x[:, None], pt.constant(kernel[None, None])[None], mode="full").sum(axis=2)
    delta = np.zeros((1, 1, 3, 3), dtype=np.float32)
    delta[0, 0, 1, 1] = 1
    compiled = check_pytensor([x], y, [delta], passes=PIPELINE)
    np.testing.assert_array_equal(compiled.run(delta)[0][0, 0, 1:3, 1:3], kernel)
