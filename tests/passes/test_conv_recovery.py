"""``conv-recovery``: every rule as IR text before and after (with the
interpreter agreeing to float rounding on random inputs), the cases where it
must not fire, and PyTensor's own convolve2d graphs (raw and compiled)
against onnxruntime, including a Hypothesis sweep over conv parameters."""

from __future__ import annotations

import logging
from collections import Counter

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytensor.compile.mode import Mode, get_default_mode
from pytensor.tensor.signal import convolve2d

from compiler.lowering.compat import IS_PYTENSOR_3
import passes.batchnorm_folding  # noqa: F401  (registers the passes named in PIPELINE)
import passes.conv_bias  # noqa: F401
import passes.filter_flip  # noqa: F401
from compiler import compile_to_onnx
from ir.parser import parse_graph
from ir.printer import print_graph
from passes.conv_recovery import ConvRecovery
from passes.dce import DeadCodeElimination
from passes.rewrite import Op, Rule, Var, apply_rules
from tests.helpers import check_pytensor, pytensor_reference
from tests.passes.helpers import check_pass

CR = ConvRecovery()
PASSES = [CR, DeadCodeElimination()]
RTOL = 1e-5


def check(before: str, after: str | None, **kw):
    return check_pass(PASSES, before, after, rtol=RTOL, **kw)


# -- rule 1: the channel sum of a broadcast convolve2d -----------------------------
def test_valid_channel_sum_is_a_conv():
    check("""
        graph @main(%x: f32[N,3,8,8], %W: f32[4,3,3,3]) {
          %u: f32[N,1,3,8,8] = unsqueeze(%x) {axes=[1]}
          %v: f32[1,4,3,3,3] = unsqueeze(%W) {axes=[0]}
          %c: f32[N,4,3,6,6] = convolve2d(%u, %v) {full=false}
          %y: f32[N,4,6,6] = reduce_sum(%c) {axes=[2], keepdims=false}
          return %y
        }""", """
        graph @main(%x: f32[N,3,8,8], %W: f32[4,3,3,3]) {
          %y: f32[N,4,6,6] = conv(%x, %W) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          return %y
        }""")


def test_full_mode_with_float64_accumulator_and_folded_constant_kernel():
    # PyTensor sums float32 in float64; constant folding left W[None] as a 5-D constant.
    check("""
        graph @main(%x: f32[N,2,5,5]) {
          const %W: f32[1,2,2,2,2] = [[[[[1.0, 2.0], [3.0, 4.0]], [[0.5, -1.0], [2.0, 0.0]]], [[[0.0, 1.0], [-1.0, 0.25]], [[1.0, 1.0], [1.0, -2.0]]]]]
          %u: f32[N,1,2,5,5] = unsqueeze(%x) {axes=[1]}
          %c: f32[N,2,2,6,6] = convolve2d(%u, %W) {full=true}
          %c64: f64[N,2,2,6,6] = cast(%c) {to=f64}
          %s: f64[N,2,6,6] = reduce_sum(%c64) {axes=[2], keepdims=false}
          %y: f32[N,2,6,6] = cast(%s) {to=f32}
          return %y
        }""", """
        graph @main(%x: f32[N,2,5,5]) {
          const %W_1: f32[2,2,2,2] = [[[[1.0, 2.0], [3.0, 4.0]], [[0.5, -1.0], [2.0, 0.0]]], [[[0.0, 1.0], [-1.0, 0.25]], [[1.0, 1.0], [1.0, -2.0]]]]
          %y: f32[N,2,6,6] = conv(%x, %W_1) {dilations=[], flip=true, group=1, pads=[1, 1, 1, 1], strides=[]}
          return %y
        }""")


def test_single_channel_squeeze_with_strided_slice_of_the_5d_result():
    # The compiled-graph form for C = 1: Sum became a squeeze, the stride slice moved under it.
    check("""
        graph @main(%x: f32[N,1,7,7], %W: f32[4,1,3,3]) {
          const %st: i64[2] = [0, 0]
          const %en: i64[2] = [9223372036854775807, 9223372036854775807]
          const %sp: i64[2] = [2, 3]
          %u: f32[N,1,1,7,7] = unsqueeze(%x) {axes=[1]}
          %c: f32[N,4,1,5,5] = convolve2d(%u, %W) {full=false}
          %s: f32[N,4,1,3,2] = slice(%c, %st, %en, %sp) {axes=[3, 4]}
          %y: f32[N,4,3,2] = squeeze(%s) {axes=[2]}
          return %y
        }""", """
        graph @main(%x: f32[N,1,7,7], %W: f32[4,1,3,3]) {
          %y: f32[N,4,3,2] = conv(%x, %W) {dilations=[], flip=true, group=1, pads=[], strides=[2, 3]}
          return %y
        }""")


def test_image_and_kernel_that_are_not_unsqueezes_get_squeezed():
    check("""
        graph @main(%x5: f32[N,1,2,6,6], %k5: f32[1,3,2,2,2]) {
          %c: f32[N,3,2,5,5] = convolve2d(%x5, %k5) {full=false}
          %y: f32[N,3,5,5] = reduce_sum(%c) {axes=[-3], keepdims=false}
          return %y
        }""", """
        graph @main(%x5: f32[N,1,2,6,6], %k5: f32[1,3,2,2,2]) {
          %y: f32[N,2,6,6] = squeeze(%x5) {axes=[1]}
          %y_1: f32[3,2,2,2] = squeeze(%k5) {axes=[0]}
          %y_2: f32[N,3,5,5] = conv(%y, %y_1) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          return %y_2
        }""")


# -- rules 2 and 3: pads and strides -------------------------------------------------
def test_zero_pad_before_full_mode_adds_to_the_pads():
    check("""
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3]) {
          const %zero: f32[] = 0.0
          %p: f32[N,3,8,10] = pad(%x, %zero) {pads=[0, 0, 1, 2, 0, 0, 1, 2]}
          %u: f32[N,1,3,8,10] = unsqueeze(%p) {axes=[1]}
          %v: f32[1,2,3,3,3] = unsqueeze(%W) {axes=[0]}
          %c: f32[N,2,3,10,12] = convolve2d(%u, %v) {full=true}
          %y: f32[N,2,10,12] = reduce_sum(%c) {axes=[2], keepdims=false}
          return %y
        }""", """
        graph @main(%x: f32[N,3,6,6], %W: f32[2,3,3,3]) {
          %y: f32[N,2,10,12] = conv(%x, %W) {dilations=[], flip=true, group=1, pads=[3, 4, 3, 4], strides=[]}
          return %y
        }""")


def test_asymmetric_pad_and_a_pad_read_elsewhere():
    # The pad stays for its other reader; the conv reads x with pads (begin 2, end 0).
    check("""
        graph @main(%x: f32[N,1,5,5], %W: f32[1,1,2,2]) {
          const %zero: f32[] = -0.0
          %p: f32[N,1,7,5] = pad(%x, %zero) {pads=[0, 0, 2, 0, 0, 0, 0, 0]}
          %y: f32[N,1,6,4] = conv(%p, %W) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          return %y, %p
        }""", """
        graph @main(%x: f32[N,1,5,5], %W: f32[1,1,2,2]) {
          const %zero: f32[] = -0.0
          %p: f32[N,1,7,5] = pad(%x, %zero) {pads=[0, 0, 2, 0, 0, 0, 0, 0]}
          %y: f32[N,1,6,4] = conv(%x, %W) {dilations=[], flip=true, group=1, pads=[2, 0, 0, 0], strides=[]}
          return %y, %p
        }""")


def test_strided_slice_of_a_conv_multiplies_its_strides():
    check("""
        graph @main(%x: f32[N,3,8,13], %W: f32[4,3,3,3]) {
          const %st: i64[1] = [0]
          const %en: i64[1] = [9223372036854775807]
          const %sp: i64[1] = [2]
          %c: f32[N,4,6,4] = conv(%x, %W) {dilations=[], flip=true, group=1, pads=[], strides=[1, 3]}
          %y: f32[N,4,6,2] = slice(%c, %st, %en, %sp) {axes=[-1]}
          return %y
        }""", """
        graph @main(%x: f32[N,3,8,13], %W: f32[4,3,3,3]) {
          %y: f32[N,4,6,2] = conv(%x, %W) {dilations=[], flip=true, group=1, pads=[], strides=[1, 6]}
          return %y
        }""")


def test_slice_with_an_explicit_end_covering_the_axis_is_a_stride():
    check("""
        graph @main(%x: f32[2,1,7,7], %W: f32[1,1,2,2]) {
          const %st: i64[1] = [0]
          const %en: i64[1] = [5]
          const %sp: i64[1] = [2]
          %c: f32[2,1,6,6] = conv(%x, %W) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          %y: f32[2,1,3,6] = slice(%c, %st, %en, %sp) {axes=[2]}
          return %y
        }""", """
        graph @main(%x: f32[2,1,7,7], %W: f32[1,1,2,2]) {
          %y: f32[2,1,3,6] = conv(%x, %W) {dilations=[], flip=true, group=1, pads=[], strides=[2, 1]}
          return %y
        }""")


# -- rule 4: groups ------------------------------------------------------------------
def test_groups_from_split_with_one_bias():
    check("""
        graph @main(%x: f32[N,4,6,6], %Wa: f32[3,2,3,3], %Wb: f32[3,2,3,3], %bb: f32[3]) {
          const %sizes: i64[2] = [2, 2]
          %a: f32[N,2,6,6], %b: f32[N,2,6,6] = split(%x, %sizes) {axis=1, num_outputs=2}
          %ya: f32[N,3,4,4] = conv(%a, %Wa) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          %yb: f32[N,3,4,4] = conv(%b, %Wb, %bb) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          %y: f32[N,6,4,4] = concat(%ya, %yb) {axis=1}
          return %y
        }""", """
        graph @main(%x: f32[N,4,6,6], %Wa: f32[3,2,3,3], %Wb: f32[3,2,3,3], %bb: f32[3]) {
          const %bias: f32[3] = [0.0, 0.0, 0.0]
          %y: f32[6,2,3,3] = concat(%Wa, %Wb) {axis=0}
          %y_1: f32[6] = concat(%bias, %bb) {axis=0}
          %y_2: f32[N,6,4,4] = conv(%x, %y, %y_1) {dilations=[], flip=true, group=2, pads=[], strides=[]}
          return %y_2
        }""")


SLICED_GROUPS = """
    graph @main(%x: f32[N,6,5,5]) {
      const %k0: f32[1,2,1,1] = [[[[1.0]], [[2.0]]]]
      const %k1: f32[1,2,1,1] = [[[[3.0]], [[4.0]]]]
      const %k2: f32[1,2,1,1] = [[[[5.0]], [[6.0]]]]
      const %s0: i64[1] = [0]
      const %s1: i64[1] = [2]
      const %s2: i64[1] = [4]
      const %e2: i64[1] = [9223372036854775807]
      const %one: i64[1] = [1]
      %x0: f32[N,2,5,5] = slice(%x, %s0, %s1, %one) {axes=[1]}
      %x1: f32[N,2,5,5] = slice(%x, %s1, %s2, %one) {axes=[1]}
      %x2: f32[N,2,5,5] = slice(%x, %s2, %e2, %one) {axes=[1]}
      %y0: f32[N,1,5,5] = conv(%x0, %k0) {dilations=[], flip=true, group=1, pads=[], strides=[]}
      %y1: f32[N,1,5,5] = conv(%x1, %k1) {dilations=[], flip=true, group=1, pads=[], strides=[]}
      %y2: f32[N,1,5,5] = conv(%x2, %k2) {dilations=[], flip=true, group=1, pads=[], strides=[]}
      %y: f32[N,3,5,5] = concat(%y0, %y1, %y2) {axis=-3}
      return %y
    }"""


def test_groups_from_channel_slices_concatenate_constant_kernels():
    check(SLICED_GROUPS, """
        graph @main(%x: f32[N,6,5,5]) {
          const %k0_1: f32[3,2,1,1] = [[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]]]
          %y: f32[N,3,5,5] = conv(%x, %k0_1) {dilations=[], flip=true, group=3, pads=[], strides=[]}
          return %y
        }""")


# -- rule 5: dilation ----------------------------------------------------------------
DILATED_BY_SCATTER = """
    graph @main(%x: f32[N,1,6,6], %W: f32[1,1,2,2]) {
      const %zeros: f32[9] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
      const %grid: i64[1,1,2,2,1] = [[[[[0], [2]], [[6], [8]]]]]
      const %shape: i64[4] = [1, 1, 3, 3]
      %flat: f32[9] = scatter_nd(%zeros, %grid, %W) {reduction="none"}
      %K: f32[1,1,3,3] = reshape(%flat, %shape)
      %y: f32[N,1,4,4] = conv(%x, %K) {dilations=[], flip=true, group=1, pads=[], strides=[]}
      return %y
    }"""


def test_kernel_scattered_on_a_grid_of_zeros_is_a_dilation():
    check(DILATED_BY_SCATTER, """
        graph @main(%x: f32[N,1,6,6], %W: f32[1,1,2,2]) {
          %y: f32[N,1,4,4] = conv(%x, %W) {dilations=[2, 2], flip=true, group=1, pads=[], strides=[]}
          return %y
        }""")


ZERO_TAPS = """
    graph @main(%x: f32[N,1,6,7]) {
      const %K: f32[1,1,3,4] = [[[[1.0, 0.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0], [3.0, 0.0, 0.0, 4.0]]]]
      %y: f32[N,1,4,4] = conv(%x, %K) {dilations=[], flip=true, group=1, pads=[], strides=[]}
      return %y
    }"""


def test_constant_kernel_with_zero_taps_is_dilated_on_request():
    check_pass([ConvRecovery(dilate_constant_kernels=True), DeadCodeElimination()], ZERO_TAPS, """
        graph @main(%x: f32[N,1,6,7]) {
          const %K_1: f32[1,1,2,2] = [[[[1.0, 2.0], [3.0, 4.0]]]]
          %y: f32[N,1,4,4] = conv(%x, %K_1) {dilations=[2, 3], flip=true, group=1, pads=[], strides=[]}
          return %y
        }""", rtol=RTOL)


def test_constant_kernel_with_zero_taps_stays_by_default():
    check_pass(CR, ZERO_TAPS, None)


# -- does not fire ----------------------------------------------------------------------
CHANNEL_SUM = """
    graph @main(%x: f32[N,3,8,8], %W: f32[4,3,3,3]) {
      %u: f32[N,1,3,8,8] = unsqueeze(%x) {axes=[1]}
      %v: f32[1,4,3,3,3] = unsqueeze(%W) {axes=[0]}
      %c: f32[N,4,3,6,6] = convolve2d(%u, %v) {full=false}
      %y: f32[N,4,6,6] = reduce_sum(%c) {axes=[2], keepdims=false}
      return %y
    }"""


@pytest.mark.parametrize("edit", [
    ("{axes=[2], keepdims=false}\n      return %y", "{axes=[2], keepdims=false}\n      return %y, %c"),  # extra use
    ("%y: f32[N,4,6,6] = reduce_sum(%c) {axes=[2]", "%y: f32[N,3,6,6] = reduce_sum(%c) {axes=[1]"),  # wrong axis
    ("= reduce_sum(%c)", "= reduce_max(%c)"),  # not a sum
], ids=["extra-use", "wrong-axis", "max"])
def test_channel_sum_does_not_fire(edit):
    old, new = edit
    assert old in CHANNEL_SUM
    check_pass(CR, CHANNEL_SUM.replace(old, new), None)


def test_channel_sum_keepdims_does_not_fire():
    check_pass(CR, CHANNEL_SUM.replace("%y: f32[N,4,6,6] = reduce_sum(%c) {axes=[2], keepdims=false}",
                                       "%y: f32[N,4,1,6,6] = reduce_sum(%c) {axes=[2], keepdims=true}"), None)


def test_image_smaller_than_the_kernel_does_not_fire(caplog):
    # SciPy's valid mode would swap the operands: a 2x2 image under a 3x3 kernel.
    before = """
        graph @main(%x: f32[N,1,2,2], %W: f32[1,1,3,3]) {
          %u: f32[N,1,1,2,2] = unsqueeze(%x) {axes=[1]}
          %c: f32[N,1,1,2,2] = convolve2d(%u, %W) {full=false}
          %y: f32[N,1,2,2] = reduce_sum(%c) {axes=[2], keepdims=false}
          return %y
        }"""
    with caplog.at_level(logging.DEBUG, logger="passes.rewrite"):
        check_pass(CR, before, None)
    assert "image smaller than the kernel in valid mode" in caplog.text


def test_a_one_channel_kernel_broadcast_over_the_channels_convolves_their_sum():
    # convolve2d broadcasts the kernel's one channel over C: sum_c conv(x_c, W) = conv(sum_c x_c, W)
    check("""
        graph @main(%x: f32[N,C,6,6], %W: f32[4,1,3,3]) {
          %u: f32[N,1,C,6,6] = unsqueeze(%x) {axes=[1]}
          %v: f32[1,4,1,3,3] = unsqueeze(%W) {axes=[0]}
          %c: f32[N,4,C,4,4] = convolve2d(%u, %v) {full=false}
          %y: f32[N,4,4,4] = reduce_sum(%c) {axes=[2], keepdims=false}
          return %y
        }""", """
        graph @main(%x: f32[N,C,6,6], %W: f32[4,1,3,3]) {
          %y: f32[N,1,6,6] = reduce_sum(%x) {axes=[1], keepdims=true}
          %y_1: f32[N,4,4,4] = conv(%y, %W) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          return %y_1
        }""", sizes={"N": 2, "C": 3})


@pytest.mark.parametrize("channels", [1, 3])
def test_a_one_channel_kernel_over_symbolic_channels_matches_pytensor(channels):
    x, w = pt.tensor4("x"), pt.tensor("w", shape=(2, 1, 2, 3))
    y = convolve2d(x[:, None], w[None], mode="valid").sum(axis=2)
    compiled = compile_to_onnx([x, w], outputs=[y])
    assert "conv" in [n.op for n in compiled.ir]  # float64: emitted exactly (window_f64), not as ONNX Conv
    rng = np.random.default_rng(channels)
    data = [rng.normal(size=(2, channels, 5, 6)), rng.normal(size=(2, 1, 2, 3))]
    want = pytensor.function([x, w], y, mode=Mode(linker="py", optimizer=None))(*data)
    np.testing.assert_allclose(compiled.run(*data)[0], want, rtol=1e-12, atol=1e-12)


def test_channel_broadcast_and_integer_convolutions_do_not_fire():
    check_pass(CR, """
        graph @main(%x: f32[N,1,6,6], %W: f32[4,3,3,3]) {
          %u: f32[N,1,1,6,6] = unsqueeze(%x) {axes=[1]}
          %v: f32[1,4,3,3,3] = unsqueeze(%W) {axes=[0]}
          %c: f32[N,4,3,4,4] = convolve2d(%u, %v) {full=false}
          %y: f32[N,4,4,4] = reduce_sum(%c) {axes=[2], keepdims=false}
          return %y
        }""", None)
    check_pass(CR, CHANNEL_SUM.replace("f32", "i32"), None)


def test_image_without_a_broadcast_axis_does_not_fire():
    # convolve2d(x, W) with x (N, C, H, W) broadcasts x's batch against W's output channels.
    check_pass(CR, """
        graph @main(%x: f32[4,3,8,8], %W: f32[4,3,3,3]) {
          %c: f32[4,3,6,6] = convolve2d(%x, %W) {full=false}
          %y: f32[4,6,6] = reduce_sum(%c) {axes=[1], keepdims=false}
          return %y
        }""", None)


PADDED = """
    graph @main(%x: f32[N,1,5,5], %W: f32[1,1,2,2]) {
      const %value: f32[] = 0.0
      %p: f32[N,1,7,7] = pad(%x, %value) {pads=[0, 0, 1, 1, 0, 0, 1, 1]}
      %y: f32[N,1,6,6] = conv(%p, %W) {dilations=[], flip=true, group=1, pads=[], strides=[]}
      return %y
    }"""


def test_pad_with_another_value_or_on_the_channel_axis_does_not_fire():
    check_pass(CR, PADDED.replace("= 0.0", "= 1.0"), None)
    check_pass(CR, PADDED.replace("f32[N,1,7,7] = pad(%x, %value) {pads=[0, 0, 1, 1, 0, 0, 1, 1]}",
                                  "f32[N,2,7,7] = pad(%x, %value) {pads=[0, 1, 1, 1, 0, 0, 1, 1]}")
               .replace("%W: f32[1,1,2,2]", "%W: f32[1,2,2,2]"), None)


STRIDED = """
    graph @main(%x: f32[N,1,7,7], %W: f32[1,1,2,2]) {
      const %st: i64[1] = [0]
      const %en: i64[1] = [9223372036854775807]
      const %sp: i64[1] = [2]
      %c: f32[N,1,6,6] = conv(%x, %W) {dilations=[], flip=true, group=1, pads=[], strides=[]}
      %y: f32[N,1,3,6] = slice(%c, %st, %en, %sp) {axes=[2]}
      return %y
    }"""


@pytest.mark.parametrize("edits", [
    [("%st: i64[1] = [0]", "%st: i64[1] = [1]")],
    [("%en: i64[1] = [9223372036854775807]", "%en: i64[1] = [4]"), ("%y: f32[N,1,3,6]", "%y: f32[N,1,2,6]")],
    [("return %y", "return %y, %c")],
    [("{axes=[2]}", "{axes=[1]}"), ("%y: f32[N,1,3,6]", "%y: f32[N,1,6,6]")],
], ids=["non-zero-start", "stops-early", "extra-use-of-the-conv", "channel-axis"])
def test_stride_slice_does_not_fire(edits):
    text = STRIDED
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    check_pass(CR, text, None)


def test_groups_that_do_not_cover_the_channels_in_order_do_not_fire():
    check_pass(CR, SLICED_GROUPS.replace("concat(%y0, %y1, %y2)", "concat(%y1, %y0, %y2)"), None)


def test_groups_joined_on_another_axis_or_with_differing_attributes_do_not_fire():
    check_pass(CR, SLICED_GROUPS.replace("%y: f32[N,3,5,5] = concat(%y0, %y1, %y2) {axis=-3}",
                                         "%y: f32[N,1,5,15] = concat(%y0, %y1, %y2) {axis=-1}"), None)
    unflipped = "%y2: f32[N,1,5,5] = conv(%x2, %k2) {dilations=[], flip=false"
    check_pass(CR, SLICED_GROUPS.replace("%y2: f32[N,1,5,5] = conv(%x2, %k2) {dilations=[], flip=true", unflipped),
               None)


def test_group_conv_read_elsewhere_does_not_fire():
    check_pass(CR, SLICED_GROUPS.replace("return %y", "return %y, %y1"), None)


def test_scatter_off_the_dilation_grid_does_not_fire():
    check_pass(CR, DILATED_BY_SCATTER.replace("[[[[[0], [2]], [[6], [8]]]]]", "[[[[[0], [2]], [[5], [8]]]]]"),
               None)
    check_pass(CR, DILATED_BY_SCATTER.replace("const %zeros: f32[9] = [0.0, 0.0",
                                              "const %zeros: f32[9] = [1.0, 0.0"), None)


def test_kernel_with_a_nonzero_tap_off_the_grid_is_not_dilated():
    # A tap at (0, 2) breaks the ::3 grid of the width, one at (1, 1) the ::2 grid of the height.
    kernel = ZERO_TAPS.replace("[[1.0, 0.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0]", "[[1.0, 0.0, 7.0, 2.0], [0.0, 0.5, 0.0, 0.0]")
    check_pass(ConvRecovery(dilate_constant_kernels=True), kernel, None)


# -- PyTensor's convolve2d forms end to end ------------------------------------------------
# The default pipeline's cleanup, then the conv passes in the order they need.
PIPELINE = ["canonicalize", "constant-folding", "canonicalize", "cse", "dce",
            "conv-recovery", "conv-bias-fusion", "batchnorm-folding", "filter-flip", "cse", "dce"]
# PyTensor's default rewrites (Numba mode in 3.0, C in 2.38) with the Python
# linker: the graph the default mode compiles, without the JIT (whose
# BlockwiseWithCoreShape wrapper lowering inlines; the slow test covers it).
DEFAULT_REWRITES = Mode(linker="py", optimizer=get_default_mode().provided_optimizer)
# float32 graphs (pt.pad fills a floatX zeros); PyTensor's Pad evaluates its
# inner graph with the Python linker instead of compiling it.
FLOAT32 = dict(floatX="float32", mode="FAST_COMPILE")


def conv_form(x, W, *, mode="valid", stride=(1, 1), padding=0, dilation=1, groups=1):
    """A multi-channel NCHW convolution written the ways PyTensor users write
    it: ``pt.pad``, ``convolve2d(x[:, None], W[None]).sum(axis=2)`` per group
    of channel slices joined on axis 1, a kernel dilated by
    ``set_subtensor`` into zeros, and a strided slice of the result."""
    m, cg, kh, kw = W.type.shape
    if dilation > 1:
        big = ((kh - 1) * dilation + 1, (kw - 1) * dilation + 1)
        W = pt.set_subtensor(pt.zeros((m, cg, *big), dtype=W.dtype)[:, :, ::dilation, ::dilation], W)
    if padding:
        x = pt.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    mg = m // groups
    if groups == 1:
        y = convolve2d(x[:, None], W[None], mode=mode).sum(axis=2)
    else:
        y = pt.concatenate([convolve2d(x[:, g * cg:(g + 1) * cg][:, None], W[g * mg:(g + 1) * mg][None],
                                       mode=mode).sum(axis=2) for g in range(groups)], axis=1)
    if stride != (1, 1):
        y = y[:, :, ::stride[0], ::stride[1]]
    return y


def histogram(compiled) -> dict[str, int]:
    """ONNX op type -> count in the emitted model."""
    return dict(Counter(n.op_type for n in compiled.model.graph.node))


SPATIAL = pytest.mark.parametrize("spatial", [(8, 8), (None, None)], ids=["static-hw", "symbolic-hw"])


@SPATIAL
def test_padded_strided_conv_with_bias_is_one_onnx_conv(spatial):
    rng = np.random.default_rng(0)
    with pytensor.config.change_flags(**FLOAT32):
        x = pt.tensor4("x", dtype="float32", shape=(None, 3, *spatial))
        W = rng.normal(size=(4, 3, 3, 3)).astype(np.float32)
        b = rng.normal(size=4).astype(np.float32)
        y = conv_form(x, pt.constant(W), padding=1, stride=(2, 2)) + pt.constant(b)[None, :, None, None]
        compiled = check_pytensor([x], y, [rng.normal(size=(2, 3, 8, 8)).astype(np.float32)],
                                  passes=PIPELINE, rtol=1e-5, atol=1e-5)
    assert histogram(compiled) == {"Conv": 1}
    (conv,) = compiled.model.graph.node
    assert len(conv.input) == 3
    attrs = {a.name: list(a.ints) for a in conv.attribute if a.ints}
    assert attrs["pads"] == [1, 1, 1, 1] and attrs["strides"] == [2, 2]


def _strided_full_conv(spatial=(7, 7)):
    rng = np.random.default_rng(1)
    x = pt.tensor4("x", dtype="float32", shape=(None, 2, *spatial))
    W = rng.normal(size=(3, 2, 2, 3)).astype(np.float32)
    y = conv_form(x, pt.constant(W), mode="full", stride=(2, 1))
    return x, y, rng.normal(size=(2, 2, 7, 7)).astype(np.float32)


@pytest.mark.parametrize("spatial", [(7, 7), (None, None)], ids=["static-hw", "symbolic-hw"])
def test_compiled_function_with_pushed_down_stride_is_one_conv(spatial):
    # PyTensor's default rewrites move the stride slice under the sum.
    x, y, xv = _strided_full_conv(spatial)
    with pytensor.config.change_flags(**FLOAT32):
        compiled = compile_to_onnx(pytensor.function([x], y, mode=DEFAULT_REWRITES), passes=PIPELINE)
        (want,) = pytensor_reference([x], [y], [xv])
    np.testing.assert_allclose(compiled.run(xv)[0], want, rtol=1e-5, atol=1e-5)
    assert histogram(compiled) == {"Conv": 1}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Numba will use object mode")
def test_default_mode_function_is_one_conv():
    x, y, xv = _strided_full_conv()
    fn = pytensor.function([x], y)  # Numba in 3.0 (BlockwiseWithCoreShape), C in 2.38
    compiled = compile_to_onnx(fn, passes=PIPELINE)
    np.testing.assert_allclose(compiled.run(xv)[0], fn(xv), rtol=1e-5, atol=1e-5)
    assert histogram(compiled) == {"Conv": 1}


@pytest.mark.parametrize("kernel_shape", [(None, None, 2, 3), (None, None, None, None)],
                         ids=["symbolic-channels", "unknown-shape"])
@pytest.mark.parametrize("image_shape", [(None, None, 8, 9), (None, None, None, None)],
                         ids=["static-hw", "symbolic-hw"])
@pytest.mark.parametrize("compiled", [False, True], ids=["raw", "default-mode"])
def test_kernel_input_of_unknown_shape_is_a_conv(kernel_shape, image_shape, compiled):
    """``convolve2d(x[:, None], k[None]).sum(2)`` with a kernel that is a
    graph input whose channel counts (and sizes) are not static: one Conv
    with group 1 (and the Slice reversing the kernel, a true convolution's
    flip). With a kernel of symbolic size K the valid conv assumes
    ``H >= K`` (onnxruntime's Conv fails otherwise)."""
    rng = np.random.default_rng(4)
    with pytensor.config.change_flags(**FLOAT32):
        x = pt.tensor4("x", dtype="float32", shape=image_shape)
        k = pt.tensor4("k", dtype="float32", shape=kernel_shape)
        y = convolve2d(x[:, None], k[None], mode="valid").sum(axis=2)
        xv, kv = rng.normal(size=(2, 3, 8, 9)).astype(np.float32), rng.normal(size=(4, 3, 2, 3)).astype(np.float32)
        if compiled:
            fn = pytensor.function([x, k], y, mode=DEFAULT_REWRITES)
            compiled_model = compile_to_onnx(fn, passes=PIPELINE)
            np.testing.assert_allclose(compiled_model.run(xv, kv)[0], fn(xv, kv), rtol=1e-5, atol=1e-5)
        else:
            compiled_model = check_pytensor([x, k], y, [xv, kv], passes=PIPELINE, rtol=1e-5, atol=1e-5)
    assert histogram(compiled_model) == {"Slice": 1, "Conv": 1}
    (conv,) = [n for n in compiled_model.model.graph.node if n.op_type == "Conv"]
    assert {a.name: a.i for a in conv.attribute}.get("group", 1) == 1


def test_float64_kernel_of_symbolic_size_is_exact_or_native_on_request():
    """A recovered float64 Conv whose kernel size is known only at run time:
    by default the exact form gathers its windows (no Conv; PyTensor's
    values to 1e-12), on request a double Conv."""
    x, k = pt.tensor4("x", dtype="float64"), pt.tensor4("k", dtype="float64")
    y = convolve2d(x[:, None], k[None], mode="valid").sum(axis=2)
    rng = np.random.default_rng(3)
    values = [rng.normal(size=(2, 3, 8, 9)), rng.normal(size=(4, 3, 2, 3))]
    exact = check_pytensor([x, k], y, values, passes=PIPELINE, rtol=1e-12, atol=1e-12)
    assert "Conv" not in histogram(exact) and "Gather" in histogram(exact)
    native = compile_to_onnx([x, k], outputs=[y], passes=PIPELINE, emit_options={"float64_conv": "native"})
    assert histogram(native) == {"Slice": 1, "Conv": 1}


@st.composite
def conv_cases(draw):
    """Parameters of a convolution and its inputs (images that cover the
    dilated kernel after padding, so SciPy's valid mode never swaps)."""
    kh, kw = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    dilation, padding = draw(st.integers(1, 2)), draw(st.integers(0, 2))
    extent = [(k - 1) * dilation + 1 for k in (kh, kw)]
    h, w = (draw(st.integers(max(1, e - 2 * padding), max(1, e - 2 * padding) + 4)) for e in extent)
    return dict(kernel=(kh, kw), dilation=dilation, padding=padding, image=(h, w),
                stride=(draw(st.integers(1, 3)), draw(st.integers(1, 3))),
                groups=draw(st.integers(1, 3)), cg=draw(st.integers(1, 3)), mg=draw(st.integers(1, 2)),
                batch=draw(st.integers(1, 2)), mode=draw(st.sampled_from(["valid", "full"])),
                kernel_input=draw(st.booleans()), seed=draw(st.integers(0, 2**16)))


def check_conv_case(case):
    """PyTensor vs onnxruntime (and the IR interpreter) for one ``conv_cases``
    draw; the model must be one Conv (plus a Slice reversing an input kernel)."""
    rng = np.random.default_rng(case["seed"])
    g, cg, mg = case["groups"], case["cg"], case["mg"]
    with pytensor.config.change_flags(**FLOAT32):
        x = pt.tensor4("x", dtype="float32", shape=(None, g * cg, *case["image"]))
        Wv = rng.normal(size=(g * mg, cg, *case["kernel"])).astype(np.float32)
        W = pt.tensor4("W", dtype="float32", shape=Wv.shape) if case["kernel_input"] else pt.constant(Wv)
        y = conv_form(x, W, mode=case["mode"], stride=case["stride"], padding=case["padding"],
                      dilation=case["dilation"], groups=g)
        xv = rng.normal(size=(case["batch"], g * cg, *case["image"])).astype(np.float32)
        inputs, values = ([x, W], [xv, Wv]) if case["kernel_input"] else ([x], [xv])
        compiled = check_pytensor(inputs, y, values, passes=PIPELINE, rtol=1e-5, atol=1e-4)
    assert histogram(compiled) == ({"Slice": 1, "Conv": 1} if case["kernel_input"] else {"Conv": 1}), case


@settings(max_examples=6, deadline=None)
@given(conv_cases())
def test_convolutions_match_pytensor_in_onnxruntime(case):
    check_conv_case(case)


@pytest.mark.slow  # 150 examples on the 3.0 line, 75 on 2.38 (new ones every CI run; CI's budget)
@settings(max_examples=150 if IS_PYTENSOR_3 else 75, deadline=None)
@given(conv_cases())
def test_convolutions_match_pytensor_in_onnxruntime_sweep(case):
    check_conv_case(case)


def test_float64_conv_is_exact_by_default_and_computes_in_float32_on_request():
    rng = np.random.default_rng(2)
    x = pt.tensor4("x", dtype="float64", shape=(None, 2, 6, 6))
    W = rng.normal(size=(3, 2, 3, 3))
    y = conv_form(x, pt.constant(W))
    xv = rng.normal(size=(2, 2, 6, 6))
    (want,) = pytensor_reference([x], [y], [xv])
    exact = compile_to_onnx([x], passes=PIPELINE, outputs=[y])
    np.testing.assert_allclose(exact.run(xv)[0], want, rtol=1e-12, atol=1e-12)
    with pytest.warns(UserWarning, match="float32"):
        compiled = compile_to_onnx([x], passes=PIPELINE, outputs=[y], emit_options={"float64_conv": "float32"})
    got = compiled.run(xv)[0]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# -- the pattern-engine additions these passes use ------------------------------------------
def test_rest_matches_variadic_inputs_and_a_declined_rewrite_leaves_no_constants():
    graph = parse_graph(SLICED_GROUPS)
    seen = []

    def decline(rw, m):
        seen.append(len(m.root.inputs))
        rw.const(np.zeros(3, np.float32), "scratch")
        rw.add("neg", [m.root.inputs[0]])
        return "declined on purpose"

    before = print_graph(graph)
    rule = Rule("probe", Op("concat", rest=Op("conv", Var(), Var(), rest=Var())), decline)
    assert not apply_rules(graph, [rule])
    assert seen == [3] and print_graph(graph) == before
