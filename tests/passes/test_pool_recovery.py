"""``pool-recovery``: each rule as IR text before and after (the interpreter
agreeing on random inputs), the cases where it must not fire, PyTensor's own
pooling graphs (raw and compiled, static and symbolic batch) against
onnxruntime with the ONNX op histogram, onnxruntime's NaN behaviour, and a
Hypothesis sweep over pool parameters."""

from __future__ import annotations

import collections
import functools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler import compile_to_onnx, nn
from ir.interpreter import evaluate
from ir.parser import parse_graph
from passes.dce import DeadCodeElimination
from passes.pool_recovery import PoolRecovery
from tests.helpers import assert_same, check_pytensor, pytensor_reference
from tests.passes.helpers import check_pass, random_inputs

PASSES = [PoolRecovery(), DeadCodeElimination()]
# Max pools are exact (the sign of a zero maximum aside: rtol=0 on finite
# inputs compares -0.0 == 0.0; NaN and Inf have their own test); average pools
# sum in another order, and in float32 where PyTensor summed in float64.
EXACT, MEAN_RTOL = 0.0, 1e-6


def check(before: str, after: str | None, *, rtol: float = EXACT, passes=None, **kw):
    """``check_pass`` with pool-recovery (and dce, unless nothing may change)."""
    passes = passes or (PASSES if after is not None else PASSES[:1])
    return check_pass(passes, before, after, rtol=rtol, **kw)


# -- rule 1: max over the window axes of a splitting reshape ----------------------
def test_reshape_max_is_a_max_pool():
    check("""
        graph @main(%x: f32[2,3,8,6]) {
          const %s: i64[6] = [2, 3, 4, 2, 2, 3]
          %r: f32[2,3,4,2,2,3] = reshape(%x, %s)
          %y: f32[2,3,4,2] = reduce_max(%r) {axes=[3, 5], keepdims=false}
          return %y
        }""", """
        graph @main(%x: f32[2,3,8,6]) {
          %y: f32[2,3,4,2] = max_pool(%x) {dilations=[], kernel=[2, 3], pads=[], strides=[2, 3]}
          return %y
        }""")


SYMBOLIC_RESHAPE = """
        graph @main(%x: f32[N,3,8,8]) {
          const %zero: i64[] = 0
          const %rest: i64[5] = [3, 4, 2, 4, 2]
          %s: i64[4] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %u: i64[1] = unsqueeze(%n) {axes=[0]}
          %t: i64[6] = concat(%u, %rest) {axis=0}
          %r: f32[?,3,4,2,4,2] = reshape(%x, %t)
          %y: f32[?,3,4,4] = reduce_max(%r) {axes=[3, 5], keepdims=false}
          return %y
        }"""


def test_symbolic_batch_reshape_max_drops_the_run_time_shape_computation():
    check(SYMBOLIC_RESHAPE, """
        graph @main(%x: f32[N,3,8,8]) {
          %y: f32[N,3,4,4] = max_pool(%x) {dilations=[], kernel=[2, 2], pads=[], strides=[2, 2]}
          return %y
        }""")


def test_crop_to_a_multiple_of_the_kernel_is_implicit():
    check("""
        graph @main(%x: f32[N,2,7,9]) {
          const %b: i64[2] = [0, 0]
          const %e: i64[2] = [6, 8]
          const %one: i64[2] = [1, 1]
          const %s: i64[6] = [-1, 2, 3, 2, 4, 2]
          %c: f32[N,2,6,8] = slice(%x, %b, %e, %one) {axes=[2, 3]}
          %r: f32[?,2,3,2,4,2] = reshape(%c, %s)
          %y: f32[?,2,3,4] = reduce_max(%r) {axes=[3, 5], keepdims=false}
          return %y
        }""", """
        graph @main(%x: f32[N,2,7,9]) {
          %y: f32[N,2,3,4] = max_pool(%x) {dilations=[], kernel=[2, 2], pads=[], strides=[2, 2]}
          return %y
        }""")


def test_crop_of_a_whole_window_stays():
    check("""
        graph @main(%x: f32[N,2,8,8]) {
          const %b: i64[1] = [0]
          const %e: i64[1] = [6]
          const %one: i64[1] = [1]
          const %s: i64[6] = [-1, 2, 3, 2, 4, 2]
          %c: f32[N,2,6,8] = slice(%x, %b, %e, %one) {axes=[2]}
          %r: f32[?,2,3,2,4,2] = reshape(%c, %s)
          %y: f32[?,2,3,4] = reduce_max(%r) {axes=[3, 5], keepdims=false}
          return %y
        }""", """
        graph @main(%x: f32[N,2,8,8]) {
          const %b: i64[1] = [0]
          const %e: i64[1] = [6]
          const %one: i64[1] = [1]
          %c: f32[N,2,6,8] = slice(%x, %b, %e, %one) {axes=[2]}
          %y: f32[N,2,3,4] = max_pool(%c) {dilations=[], kernel=[2, 2], pads=[], strides=[2, 2]}
          return %y
        }""")


@pytest.mark.parametrize("axes, out", [
    ("[2, 4]", "f32[2,3,2,2]"),  # the wrong axes: one of each pair
    ("[3]", "f32[2,3,4,4,2]"),  # one window axis only
])
def test_reshape_max_over_other_axes_does_not_fire(axes, out):
    check(f"""
        graph @main(%x: f32[2,3,8,8]) {{
          const %s: i64[6] = [2, 3, 4, 2, 4, 2]
          %r: f32[2,3,4,2,4,2] = reshape(%x, %s)
          %y: {out} = reduce_max(%r) {{axes={axes}, keepdims=false}}
          return %y
        }}""", None)


def test_reshape_that_is_not_a_split_does_not_fire():
    # (8, 8) -> (4, 4, 2, 2) moves elements across the spatial axes: not windows.
    check("""
        graph @main(%x: f32[2,3,8,8]) {
          const %s: i64[6] = [2, 3, 4, 4, 2, 2]
          %r: f32[2,3,4,4,2,2] = reshape(%x, %s)
          %y: f32[2,3,4,2] = reduce_max(%r) {axes=[3, 5], keepdims=false}
          return %y
        }""", None)


def test_reshape_with_another_reader_does_not_fire():
    check("""
        graph @main(%x: f32[2,3,8,8]) {
          const %s: i64[6] = [2, 3, 4, 2, 4, 2]
          %r: f32[2,3,4,2,4,2] = reshape(%x, %s)
          %y: f32[2,3,4,4] = reduce_max(%r) {axes=[3, 5], keepdims=false}
          %z: f32[2,3,4,2,4,2] = neg(%r)
          return %y, %z
        }""", None)


# -- rule 2: the mean of the same windows --------------------------------------------
def test_window_mean_summed_in_float64_is_an_avg_pool():
    check("""
        graph @main(%x: f32[N,3,8,8]) {
          const %s: i64[6] = [-1, 3, 4, 2, 4, 2]
          const %four: f32[] = 4.0
          %r: f32[?,3,4,2,4,2] = reshape(%x, %s)
          %w: f64[?,3,4,2,4,2] = cast(%r) {to=f64}
          %t: f64[?,3,4,4] = reduce_sum(%w) {axes=[3, 5], keepdims=false}
          %n: f32[?,3,4,4] = cast(%t) {to=f32}
          %y: f32[?,3,4,4] = div(%n, %four)
          return %y
        }""", """
        graph @main(%x: f32[N,3,8,8]) {
          %y: f32[N,3,4,4] = avg_pool(%x) {count_include_pad=false, dilations=[], kernel=[2, 2], pads=[], strides=[2, 2]}
          return %y
        }""", rtol=MEAN_RTOL)


def test_window_mean_by_reciprocal_and_in_the_input_dtype():
    # PyTensor's compiled graphs multiply by 1/count; a sum may be in float32 already.
    check("""
        graph @main(%x: f32[2,3,9,9]) {
          const %s: i64[6] = [2, 3, 3, 3, 3, 3]
          const %ninth: f32[1,1,1,1] = [[[[0.11111111]]]]
          %r: f32[2,3,3,3,3,3] = reshape(%x, %s)
          %t: f32[2,3,3,3] = reduce_sum(%r) {axes=[3, 5], keepdims=false}
          %y: f32[2,3,3,3] = mul(%ninth, %t)
          return %y
        }""", """
        graph @main(%x: f32[2,3,9,9]) {
          %y: f32[2,3,3,3] = avg_pool(%x) {count_include_pad=false, dilations=[], kernel=[3, 3], pads=[], strides=[3, 3]}
          return %y
        }""", rtol=MEAN_RTOL)


def test_window_mean_divided_by_a_count_read_off_the_shape():
    # The lowered symbolic-batch mean: the divisor is shape(r)[3] * shape(r)[5].
    check("""
        graph @main(%x: f32[N,3,8,8]) {
          const %s: i64[6] = [-1, 3, 4, 2, 4, 2]
          const %i3: i64[] = 3
          const %i5: i64[] = 5
          %r: f32[?,3,4,2,4,2] = reshape(%x, %s)
          %sh: i64[6] = shape(%r)
          %f: f32[6] = cast(%sh) {to=f32}
          %k3: f32[] = gather(%f, %i3) {axis=0}
          %k5: f32[] = gather(%f, %i5) {axis=0}
          %count: f32[] = mul(%k3, %k5)
          %w: f64[?,3,4,2,4,2] = cast(%r) {to=f64}
          %t: f64[?,3,4,4] = reduce_sum(%w) {axes=[3, 5], keepdims=false}
          %n: f32[?,3,4,4] = cast(%t) {to=f32}
          %y: f32[?,3,4,4] = div(%n, %count)
          return %y
        }""", """
        graph @main(%x: f32[N,3,8,8]) {
          %y: f32[N,3,4,4] = avg_pool(%x) {count_include_pad=false, dilations=[], kernel=[2, 2], pads=[], strides=[2, 2]}
          return %y
        }""", rtol=MEAN_RTOL)


WIDE_MEAN = """
        graph @main(%x: f32[2,3,8,8], %d: f32[]) {{
          const %s: i64[6] = [2, 3, 4, 2, 4, 2]
          const %count: f32[] = {count}
          %r: f32[2,3,4,2,4,2] = reshape(%x, %s)
          %w: f64[2,3,4,2,4,2] = cast(%r) {{to=f64}}
          %t: f64[2,3,4,4] = reduce_sum(%w) {{axes=[3, 5], keepdims=false}}
          %n: f32[2,3,4,4] = cast(%t) {{to=f32}}
          %y: f32[2,3,4,4] = div(%n, {divisor})
          return %y
        }}"""


@pytest.mark.parametrize("count, divisor, why", [
    ("3.0", "%count", "wrong count: not the window size 4"),
    ("4.0", "%d", "a divisor only known at run time"),
])
def test_mean_with_the_wrong_divisor_does_not_fire(count, divisor, why):
    check(WIDE_MEAN.format(count=count, divisor=divisor), None)


def test_narrow_sums_false_keeps_a_mean_summed_in_a_wider_dtype():
    check(WIDE_MEAN.format(count="4.0", divisor="%count"), None, passes=[PoolRecovery(narrow_sums=False)])


def test_float64_mean_stays_a_mean():
    # onnxruntime has no float64 AveragePool; the float64 form runs exactly.
    check("""
        graph @main(%x: f64[2,3,8,8]) {
          const %s: i64[6] = [2, 3, 4, 2, 4, 2]
          const %four: f64[] = 4.0
          %r: f64[2,3,4,2,4,2] = reshape(%x, %s)
          %t: f64[2,3,4,4] = reduce_sum(%r) {axes=[3, 5], keepdims=false}
          %y: f64[2,3,4,4] = div(%t, %four)
          return %y
        }""", None)


# -- rules 3 and 4: strided slices ---------------------------------------------------
GRID_CONSTS = """
          const %b00: i64[2] = [0, 0]
          const %b01: i64[2] = [0, 1]
          const %b10: i64[2] = [1, 0]
          const %b11: i64[2] = [1, 1]
          const %end: i64[2] = [9223372036854775807, 9223372036854775807]
          const %two: i64[2] = [2, 2]"""
GRID_NODES = """
          %s00: f32[N,3,3,3] = slice(%x, %b00, %end, %two) {axes=[2, 3]}
          %s01: f32[N,3,3,3] = slice(%x, %b01, %end, %two) {axes=[2, 3]}
          %s10: f32[N,3,3,3] = slice(%x, %b10, %end, %two) {axes=[2, 3]}
          %s11: f32[N,3,3,3] = slice(%x, %b11, %end, %two) {axes=[2, 3]}"""


@pytest.mark.parametrize("tree", [
    # balanced, as x[::2, ::2] written pairwise
    """%m1: f32[N,3,3,3] = maximum(%s00, %s01)
          %m2: f32[N,3,3,3] = maximum(%s10, %s11)
          %y: f32[N,3,3,3] = maximum(%m1, %m2)""",
    # a chain in another order
    """%m1: f32[N,3,3,3] = maximum(%s11, %s00)
          %m2: f32[N,3,3,3] = maximum(%s10, %m1)
          %y: f32[N,3,3,3] = maximum(%m2, %s01)""",
])
def test_maximum_tree_of_a_full_grid_of_strided_slices_is_a_max_pool(tree):
    check(f"""
        graph @main(%x: f32[N,3,6,6]) {{{GRID_CONSTS}{GRID_NODES}
          {tree}
          return %y
        }}""", """
        graph @main(%x: f32[N,3,6,6]) {
          %y: f32[N,3,3,3] = max_pool(%x) {dilations=[], kernel=[2, 2], pads=[], strides=[2, 2]}
          return %y
        }""")


def test_other_operands_of_the_tree_stay_in_a_maximum():
    # relu(pool) written as one maximum tree with the 0 inside it
    check(f"""
        graph @main(%x: f32[N,3,6,6]) {{{GRID_CONSTS}
          const %zero: f32[] = 0.0{GRID_NODES}
          %m1: f32[N,3,3,3] = maximum(%s00, %zero)
          %m2: f32[N,3,3,3] = maximum(%m1, %s01)
          %m3: f32[N,3,3,3] = maximum(%s10, %s11)
          %y: f32[N,3,3,3] = maximum(%m2, %m3)
          return %y
        }}""", """
        graph @main(%x: f32[N,3,6,6]) {
          const %zero: f32[] = 0.0
          %y: f32[N,3,3,3] = max_pool(%x) {dilations=[], kernel=[2, 2], pads=[], strides=[2, 2]}
          %y_1: f32[N,3,3,3] = maximum(%y, %zero)
          return %y_1
        }""")


def test_overlapping_windows_with_explicit_ends_pool_a_crop():
    # kernel 3, stride 2, windows starting at 1: x[:, :, 1+i : 1+i+2*2+1 : 2] for i in 0..2 (1-D)
    check("""
        graph @main(%x: f32[N,2,9]) {
          const %b0: i64[1] = [1]
          const %b1: i64[1] = [2]
          const %b2: i64[1] = [3]
          const %e0: i64[1] = [6]
          const %e1: i64[1] = [7]
          const %e2: i64[1] = [8]
          const %two: i64[1] = [2]
          %a: f32[N,2,3] = slice(%x, %b0, %e0, %two) {axes=[2]}
          %b: f32[N,2,3] = slice(%x, %b1, %e1, %two) {axes=[2]}
          %c: f32[N,2,3] = slice(%x, %b2, %e2, %two) {axes=[2]}
          %m: f32[N,2,3] = maximum(%a, %b)
          %y: f32[N,2,3] = maximum(%m, %c)
          return %y
        }""", """
        graph @main(%x: f32[N,2,9]) {
          const %crop: i64[1] = [1]
          const %crop_1: i64[1] = [8]
          const %crop_2: i64[1] = [1]
          %y: f32[N,2,7] = slice(%x, %crop, %crop_1, %crop_2) {axes=[2]}
          %y_1: f32[N,2,3] = max_pool(%y) {dilations=[], kernel=[3], pads=[], strides=[2]}
          return %y_1
        }""")


@pytest.mark.parametrize("tree, why", [
    ("""%m1: f32[N,3,3,3] = maximum(%s00, %s01)
          %y: f32[N,3,3,3] = maximum(%m1, %s10)""", "three of the four offsets"),
    ("""%m1: f32[N,3,3,3] = maximum(%s00, %s11)
          %m2: f32[N,3,3,3] = maximum(%s01, %s10)
          %y: f32[N,3,3,3] = maximum(%m1, %m2)
          %z: f32[N,3,3,3] = neg(%m1)""", "an inner maximum with another reader: neither part is a grid"),
])
def test_maximum_of_an_incomplete_grid_does_not_fire(tree, why):
    out = "%y, %z" if "%z" in tree else "%y"
    check(f"""
        graph @main(%x: f32[N,3,6,6]) {{{GRID_CONSTS}{GRID_NODES}
          {tree}
          return {out}
        }}""", None)


def test_offsets_that_skip_a_position_or_mix_steps_do_not_fire():
    check("""
        graph @main(%x: f32[N,2,12]) {
          const %b0: i64[1] = [0]
          const %b2: i64[1] = [2]
          const %e: i64[1] = [9223372036854775807]
          const %three: i64[1] = [3]
          const %s4: i64[1] = [4]
          const %e9: i64[1] = [12]
          %a: f32[N,2,4] = slice(%x, %b0, %e, %three) {axes=[2]}
          %b: f32[N,2,4] = slice(%x, %b2, %e, %three) {axes=[2]}
          %c: f32[N,2,3] = slice(%x, %b0, %e9, %s4) {axes=[2]}
          %d: f32[N,2,3] = slice(%x, %b2, %e9, %s4) {axes=[2]}
          %y: f32[N,2,4] = maximum(%a, %b)
          %z: f32[N,2,3] = maximum(%c, %d)
          return %y, %z
        }""", None)


def test_bool_maximum_of_slices_does_not_fire():
    check("""
        graph @main(%x: bool[N,1,4]) {
          const %b0: i64[1] = [0]
          const %b1: i64[1] = [1]
          const %e: i64[1] = [9223372036854775807]
          const %two: i64[1] = [2]
          %a: bool[N,1,2] = slice(%x, %b0, %e, %two) {axes=[2]}
          %b: bool[N,1,2] = slice(%x, %b1, %e, %two) {axes=[2]}
          %y: bool[N,1,2] = maximum(%a, %b)
          return %y
        }""", None)


def test_mean_of_strided_slices_is_an_avg_pool():
    check(f"""
        graph @main(%x: f32[N,3,6,6]) {{{GRID_CONSTS}
          const %quarter: f32[] = 0.25{GRID_NODES}
          %a1: f32[N,3,3,3] = add(%s00, %s01)
          %a2: f32[N,3,3,3] = add(%a1, %s10)
          %a3: f32[N,3,3,3] = add(%a2, %s11)
          %y: f32[N,3,3,3] = mul(%quarter, %a3)
          return %y
        }}""", """
        graph @main(%x: f32[N,3,6,6]) {
          %y: f32[N,3,3,3] = avg_pool(%x) {count_include_pad=false, dilations=[], kernel=[2, 2], pads=[], strides=[2, 2]}
          return %y
        }""", rtol=MEAN_RTOL)


def test_sum_of_slices_with_another_term_or_count_does_not_fire():
    check(f"""
        graph @main(%x: f32[N,3,6,6], %v: f32[N,3,3,3]) {{{GRID_CONSTS}
          const %third: f32[] = 0.33333334
          const %fifth: f32[] = 0.2{GRID_NODES}
          %a1: f32[N,3,3,3] = add(%s00, %s01)
          %a2: f32[N,3,3,3] = add(%a1, %s10)
          %y: f32[N,3,3,3] = mul(%third, %a2)
          %b1: f32[N,3,3,3] = add(%s00, %s01)
          %b2: f32[N,3,3,3] = add(%s10, %s11)
          %b3: f32[N,3,3,3] = add(%b1, %b2)
          %b4: f32[N,3,3,3] = add(%b3, %v)
          %z: f32[N,3,3,3] = mul(%fifth, %b4)
          return %y, %z
        }}""", None)


# -- rule 5: global pools ------------------------------------------------------------
def test_global_max_and_mean_over_the_spatial_axes():
    check("""
        graph @main(%x: f32[N,3,5,4]) {
          const %count: f32[] = 20.0
          %m: f32[N,3] = reduce_max(%x) {axes=[2, 3], keepdims=false}
          %w: f64[N,3,5,4] = cast(%x) {to=f64}
          %t: f64[N,3] = reduce_sum(%w) {axes=[2, 3], keepdims=false}
          %n: f32[N,3] = cast(%t) {to=f32}
          %a: f32[N,3] = div(%n, %count)
          return %m, %a
        }""", """
        graph @main(%x: f32[N,3,5,4]) {
          %m: f32[N,3,1,1] = global_max_pool(%x)
          %m_1: f32[N,3] = squeeze(%m) {axes=[2, 3]}
          %a: f32[N,3,1,1] = global_avg_pool(%x)
          %a_1: f32[N,3] = squeeze(%a) {axes=[2, 3]}
          return %m_1, %a_1
        }""", rtol=MEAN_RTOL)


def test_global_pools_keeping_dims():
    # keepdims=True lowers to an unsqueeze of the reduction
    check("""
        graph @main(%x: f32[N,3,5,4]) {
          const %count: f32[1,1,1,1] = [[[[20.0]]]]
          %m0: f32[N,3] = reduce_max(%x) {axes=[2, 3], keepdims=false}
          %m: f32[N,3,1,1] = unsqueeze(%m0) {axes=[2, 3]}
          %w: f64[N,3,5,4] = cast(%x) {to=f64}
          %t: f64[N,3] = reduce_sum(%w) {axes=[2, 3], keepdims=false}
          %n: f32[N,3] = cast(%t) {to=f32}
          %u: f32[N,3,1,1] = unsqueeze(%n) {axes=[2, 3]}
          %a: f32[N,3,1,1] = div(%u, %count)
          return %m, %a
        }""", """
        graph @main(%x: f32[N,3,5,4]) {
          %m0: f32[N,3,1,1] = global_max_pool(%x)
          %a: f32[N,3,1,1] = global_avg_pool(%x)
          return %m0, %a
        }""", rtol=MEAN_RTOL)


def test_reductions_over_other_axes_or_of_rank_3_do_not_fire():
    check("""
        graph @main(%x: f32[N,3,5,4], %s: f32[N,T,8]) {
          const %count: f32[] = 5.0
          const %eight: f32[] = 8.0
          %m: f32[N,4] = reduce_max(%x) {axes=[1, 2], keepdims=false}
          %t: f32[N,3,4] = reduce_sum(%x) {axes=[2], keepdims=false}
          %a: f32[N,3,4] = div(%t, %count)
          %ms: f32[N,T] = reduce_max(%s) {axes=[2], keepdims=false}
          %ts: f32[N,T] = reduce_sum(%s) {axes=[2], keepdims=false}
          %as: f32[N,T] = div(%ts, %eight)
          return %m, %a, %ms, %as
        }""", None)


# -- rule 6: pads into the pool (SPPF) ----------------------------------------------
def sppf_ir(fill: str, k: int = 3, h: int = 4) -> str:
    """The max of the k x k shifted slices ``p[:, :, i:i+h, j:j+h]`` of x
    padded by k//2 with ``fill`` (YOLO's SPPF, as PyTensor lowers it)."""
    p = k // 2
    lines = [f"graph @main(%x: f32[N,2,{h},{h}]) {{", f"  const %fill: f32[] = {fill}",
             "  const %one: i64[2] = [1, 1]"]
    for i, j in np.ndindex(k, k):
        lines.append(f"  const %b{i}{j}: i64[2] = [{i}, {j}]")
        lines.append(f"  const %e{i}{j}: i64[2] = [{i + h}, {j + h}]")
    lines.append(f"  %p: f32[N,2,{h + 2 * p},{h + 2 * p}] = pad(%x, %fill) {{pads=[0, 0, {p}, {p}, 0, 0, {p}, {p}]}}")
    for i, j in np.ndindex(k, k):
        lines.append(f"  %s{i}{j}: f32[N,2,{h},{h}] = slice(%p, %b{i}{j}, %e{i}{j}, %one) {{axes=[2, 3]}}")
    prev = "%s00"
    for n, (i, j) in enumerate(list(np.ndindex(k, k))[1:]):
        lines.append(f"  %m{n}: f32[N,2,{h},{h}] = maximum({prev}, %s{i}{j})")
        prev = f"%m{n}"
    return "\n".join(lines + [f"  return {prev}", "}"])


def test_padded_stride_1_max_pool_takes_the_pads():
    check(sppf_ir("-inf"), """
        graph @main(%x: f32[N,2,4,4]) {
          %m7: f32[N,2,4,4] = max_pool(%x) {dilations=[], kernel=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]}
          return %m7
        }""")


def test_pad_with_another_value_stays():
    check(sppf_ir("0.0"), """
        graph @main(%x: f32[N,2,4,4]) {
          const %fill: f32[] = 0.0
          %p: f32[N,2,6,6] = pad(%x, %fill) {pads=[0, 0, 1, 1, 0, 0, 1, 1]}
          %m7: f32[N,2,4,4] = max_pool(%p) {dilations=[], kernel=[3, 3], pads=[], strides=[1, 1]}
          return %m7
        }""")


def test_pads_not_smaller_than_the_kernel_stay_a_pad():
    check("""
        graph @main(%x: f32[N,2,4,4]) {
          const %fill: f32[] = -inf
          %p: f32[N,2,8,4] = pad(%x, %fill) {pads=[0, 0, 2, 0, 0, 0, 2, 0]}
          %y: f32[N,2,7,3] = max_pool(%p) {dilations=[], kernel=[2, 2], pads=[], strides=[1, 1]}
          return %y
        }""", None)


# -- NaN and Inf through the interpreter ---------------------------------------------
def test_max_pools_keep_nan_and_inf_in_the_interpreter():
    for text in (SYMBOLIC_RESHAPE, sppf_ir("-inf")):
        before = parse_graph(text)
        after = parse_graph(text)
        assert PoolRecovery().run(after)
        for seed in range(4):
            values = random_inputs(before, np.random.default_rng(seed), {"N": 3})
            assert np.isnan(values[0]).any() and np.isinf(values[0]).any()
            for got, want in zip(evaluate(after, values), evaluate(before, values)):
                np.testing.assert_array_equal(got, want)  # NaN by position; -0.0 == 0.0


# -- PyTensor vs onnxruntime -----------------------------------------------------------
FRONT = ["canonicalize", "constant-folding", "canonicalize", "cse", "dce"]
PIPELINE = FRONT + [PoolRecovery(), DeadCodeElimination()]


def histogram(compiled) -> dict:
    return dict(collections.Counter(n.op_type for n in compiled.model.graph.node))


def image(shape, batch=2, seed=0, dtype="float32"):
    return np.random.default_rng(seed).normal(size=(batch,) + tuple(shape[1:])).astype(dtype)


def compile_check(x, y, xv, *, compiled_mode=False):
    """PyTensor vs onnxruntime and the interpreter on ``xv`` for the raw
    graph, or for its default-mode compiled function (whose fused
    Composites the lowering expands); returns the CompiledModel."""
    if not compiled_mode:
        return check_pytensor([x], [y], [xv], passes=PIPELINE)
    want = pytensor_reference([x], [y], [xv])[0]
    m = compile_to_onnx(pytensor.function([x], y), passes=PIPELINE)
    for got in (m.run(xv)[0], evaluate(m.ir, [xv])[0]):
        assert_same(got, want, rtol=1e-6, atol=1e-6, what="compiled function")
    return m


# Each form of (x, batch, H, W), the sizes ints (static) or read off x.shape (symbolic).
POOL_FORMS = {
    "reshape-max": (lambda x, n, h, w: x.reshape((n, 4, h // 2, 2, w // 2, 2)).max(axis=(3, 5)), {"MaxPool": 1}),
    "reshape-mean": (lambda x, n, h, w: x.reshape((n, 4, h // 2, 2, w // 2, 2)).mean(axis=(3, 5)),
                     {"AveragePool": 1}),
    "strided-max": (lambda x, n, h, w: pt.maximum(pt.maximum(x[:, :, ::2, ::2], x[:, :, 1::2, ::2]),
                                                  pt.maximum(x[:, :, ::2, 1::2], x[:, :, 1::2, 1::2])),
                    {"MaxPool": 1}),
    "strided-mean": (lambda x, n, h, w: (x[:, :, ::2, ::2] + x[:, :, 1::2, ::2] + x[:, :, ::2, 1::2]
                                         + x[:, :, 1::2, 1::2]) / 4, {"AveragePool": 1}),
    "crop-max": (lambda x, n, h, w: x[:, :, :h // 3 * 3, :w // 3 * 3].reshape((n, 4, h // 3, 3, w // 3, 3))
                 .max(axis=(3, 5)), {"MaxPool": 1}),
    "global-mean": (lambda x, n, h, w: x.mean(axis=(2, 3)), {"GlobalAveragePool": 1, "Squeeze": 1}),
    "global-max-keep": (lambda x, n, h, w: x.max(axis=(2, 3), keepdims=True), {"GlobalMaxPool": 1}),
}
SPATIAL = pytest.mark.parametrize("spatial", [(8, 8), (None, None)], ids=["static-hw", "symbolic-hw"])


def build_form(form: str, x):
    """The pooling ``form`` of ``x``, its sizes static where x's are."""
    h, w = (d if d is not None else x.shape[i] for i, d in ((2, x.type.shape[2]), (3, x.type.shape[3])))
    return POOL_FORMS[form][0](x, x.shape[0], h, w)


def check_ops(m, form: str, spatial) -> None:
    """One pool (``POOL_FORMS``), with static or symbolic H and W."""
    assert histogram(m) == POOL_FORMS[form][1], m.ir


@SPATIAL
@pytest.mark.parametrize("batch", [2, None], ids=["static", "symbolic"])
@pytest.mark.parametrize("form", sorted(POOL_FORMS))
def test_pytensor_pooling_forms_compile_to_one_pool(form, batch, spatial):
    x = pt.tensor4("x", shape=(batch, 4, *spatial), dtype="float32")
    check_ops(compile_check(x, build_form(form, x), image((2, 4, 8, 8))), form, spatial)


@SPATIAL
@pytest.mark.parametrize("form", ["reshape-max", "reshape-mean", "strided-max", "global-mean", "crop-max"])
def test_default_mode_compiled_forms_compile_to_one_pool(form, spatial):
    x = pt.tensor4("x", shape=(None, 4, *spatial), dtype="float32")
    check_ops(compile_check(x, build_form(form, x), image((2, 4, 8, 8)), compiled_mode=True), form, spatial)


def sppf(x, k: int, size: int, fill=-np.inf):
    """YOLO's SPPF max pool: pad by k//2 with -inf, max of the k x k shifted slices."""
    p = k // 2
    xp = pt.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), mode="constant", constant_values=pt.constant(fill, dtype=x.dtype))
    h, w = (size, size) if size is not None else (x.shape[2], x.shape[3])  # None: symbolic bounds
    shifted = [xp[:, :, i:i + h, j:j + w] for i in range(k) for j in range(k)]
    out = shifted[0]
    for s in shifted[1:]:
        out = pt.maximum(out, s)
    return out


def pools(m) -> list[tuple]:
    """(kernel, strides, pads) of each max_pool of the final IR."""
    return [(n.attrs["kernel"], n.attrs["strides"], n.attrs["pads"]) for n in m.ir if n.op == "max_pool"]


def sppf_numpy(xv: np.ndarray, k: int) -> np.ndarray:
    """What ``sppf`` computes, in NumPy (PyTensor's constant pad of float32
    is float64, measured on 2.38 and 3.0). PyTensor's Pad is an OpFromGraph
    whose inner graph compiles on first use (seconds per new graph), so the
    Hypothesis tests compare with this."""
    p, (h, w) = k // 2, xv.shape[2:]
    xp = np.pad(xv.astype(np.float64), [(0, 0), (0, 0), (p, p), (p, p)], constant_values=-np.inf)
    return functools.reduce(np.maximum, [xp[:, :, i:i + h, j:j + w] for i in range(k) for j in range(k)])


C_MODE = pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run")


@pytest.mark.parametrize("chained", [False, True], ids=["sppf", "chained-sppf"])
@pytest.mark.parametrize("source", [None, "default", "c"], ids=["raw", "default-mode", "c-mode"])
@pytest.mark.parametrize("size", [5, None], ids=["static-hw", "symbolic-hw"])
def test_sppf_compiles_to_max_pools_with_pads(size, source, chained):
    """YOLO's SPPF (a -inf pad and the max of 25 shifted slices, whose
    bounds are symbolic with a symbolic H and W), alone or chained three
    times as YOLO's SPPF block does, from the raw graph or a compiled
    function (which computes the slice bounds through ``where``s of
    comparisons): one 5x5 MaxPool per SPPF."""
    x = pt.tensor4("x", shape=(None, 2, size, size), dtype="float32")
    y = sppf(x, 5, size)
    if chained:
        y2 = sppf(y, 5, size)
        y = pt.concatenate([y, y2, sppf(y2, 5, size)], axis=1)
    sizes = [(5, 5)] if size is not None else [(5, 5), (7, 4)]
    fn = pytensor.function([x], y, mode=C_MODE if source == "c" else None) if source else None
    m = compile_to_onnx(fn, passes=PIPELINE) if fn else compile_to_onnx([x], outputs=[y], passes=PIPELINE)
    for shape in sizes:
        xv = image((1, 2, *shape), batch=1)
        want = sppf_numpy(xv, 5)
        if chained:
            once = sppf_numpy(want.astype(np.float32), 5)
            want = np.concatenate([want, once, sppf_numpy(once.astype(np.float32), 5)], axis=1)
        if fn is not None:
            np.testing.assert_array_equal(fn(xv), want)
        else:
            with pytensor.config.change_flags(mode="FAST_COMPILE"):  # Pad's inner graph compiles in this mode
                np.testing.assert_array_equal(pytensor_reference([x], [y], [xv])[0], want)
        assert_same(m.run(xv)[0], want, rtol=0, atol=0, what=f"{shape} image")
    n = 3 if chained else 1
    assert histogram(m) == {"Cast": 1, "MaxPool": n, **({"Concat": 1} if chained else {})}, m.ir
    assert pools(m) == [((5, 5), (1, 1), (2, 2, 2, 2))] * n


def test_float64_max_pool_runs_in_onnxruntime():
    x = pt.tensor4("x", shape=(None, 2, 6, 6), dtype="float64")
    m = compile_check(x, x.reshape((x.shape[0], 2, 3, 2, 3, 2)).max(axis=(3, 5)), image((2, 2, 6, 6), dtype="float64"))
    assert histogram(m) == {"MaxPool": 1}


def test_onnxruntime_max_pool_nan_differs_from_pytensor_unless_propagated():
    """Measured (onnxruntime 1.31): MaxPool skips a NaN in most positions of a
    window, where PyTensor's maximum propagates it; ``max_pool_nan="propagate"``
    restores PyTensor's result."""
    x = pt.tensor4("x", shape=(None, 1, 2, 2), dtype="float32")
    y = x.reshape((x.shape[0], 1, 1, 2, 1, 2)).max(axis=(3, 5))
    xv = np.tile(np.array([1.0, 2.0, 3.0, 4.0], np.float32), (4, 1))
    xv[np.arange(4), np.arange(4)] = np.nan  # NaN at each window position in turn
    xv = xv.reshape(4, 1, 2, 2)
    assert np.isnan(pytensor_reference([x], [y], [xv])[0]).all()
    native = compile_to_onnx([x], passes=PIPELINE, outputs=[y])
    assert histogram(native) == {"MaxPool": 1}
    got = native.run(xv)[0].reshape(-1)
    assert not np.isnan(got).all(), "onnxruntime's MaxPool now propagates NaN: update the docs"
    np.testing.assert_array_equal(got[~np.isnan(got)], [4.0, 4.0, 3.0][:int((~np.isnan(got)).sum())])
    check_pytensor([x], [y], [xv], passes=PIPELINE, emit_options={"max_pool_nan": "propagate"})


# -- Hypothesis: pool parameters -------------------------------------------------------
@st.composite
def window_pools(draw):
    k = draw(st.integers(1, 4))
    s = draw(st.integers(1, 4))
    n_out = draw(st.integers(1, 3))
    size = (n_out - 1) * s + k + draw(st.integers(0, 2))
    return dict(k=k, s=s, size=size, batch=draw(st.integers(1, 3)), channels=draw(st.integers(1, 3)),
                mean=draw(st.booleans()), symbolic=draw(st.booleans()))


def strided_pool(x, k: int, s: int, size: int, mean: bool):
    """The max (or mean) of the k x k slices x[:, :, i:i+span:s, j:j+span:s]."""
    n_out = (size - k) // s + 1
    span = (n_out - 1) * s + 1
    parts = [x[:, :, i:i + span:s, j:j + span:s] for i in range(k) for j in range(k)]
    out = parts[0]
    for p in parts[1:]:
        out = out + p if mean else pt.maximum(out, p)
    return out / (k * k) if mean else out


def check_window_pool(p):
    x = pt.tensor4("x", shape=(None if p["symbolic"] else p["batch"], p["channels"], p["size"], p["size"]),
                   dtype="float32")
    y = strided_pool(x, p["k"], p["s"], p["size"], p["mean"])
    xv = image((p["batch"], p["channels"], p["size"], p["size"]), batch=p["batch"], seed=p["size"])
    m = compile_check(x, y, xv)
    ops = histogram(m)
    if p["k"] > 1:
        assert ops.pop("AveragePool" if p["mean"] else "MaxPool") == 1, m.ir
        assert set(ops) <= {"Slice"}, m.ir  # a crop, where the windows do not cover x


@settings(max_examples=8, deadline=None)
@given(window_pools())
def test_hypothesis_strided_pools_match_pytensor(p):
    check_window_pool(p)


@st.composite
def sppf_params(draw):
    k = draw(st.sampled_from([1, 3, 5]))
    return dict(k=k, size=draw(st.integers(1, 6)), batch=draw(st.integers(1, 2)), channels=draw(st.integers(1, 3)))


def check_sppf(p):
    x = pt.tensor4("x", shape=(None, p["channels"], p["size"], p["size"]), dtype="float32")
    xv = image((p["batch"], p["channels"], p["size"], p["size"]), batch=p["batch"], seed=p["k"])
    m = check_pytensor([x], [sppf(x, p["k"], p["size"])], [xv], passes=PIPELINE, reference=[sppf_numpy(xv, p["k"])])
    k, pad = p["k"], p["k"] // 2
    if k > 1:
        assert histogram(m) == {"Cast": 1, "MaxPool": 1}, m.ir
        assert pools(m) == [((k, k), (1, 1), (pad,) * 4)], m.ir


@settings(max_examples=5, deadline=None)
@given(sppf_params())
def test_hypothesis_sppf_matches_pytensor(p):
    check_sppf(p)


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(window_pools())
def test_hypothesis_strided_pools_sweep(p):
    check_window_pool(p)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(sppf_params())
def test_hypothesis_sppf_sweep(p):
    check_sppf(p)
