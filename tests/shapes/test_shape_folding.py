"""``shape-folding``: shape arithmetic the types determine becomes
constants; partially static shape vectors become the fewest pieces; dynamic
shape arithmetic stays a (small) run-time computation."""

from __future__ import annotations

from passes.base import get_pass
from passes.dce import DeadCodeElimination
from passes.shape_folding import ShapeFolding
from passes.shape_inference import ShapeInference
from tests.passes.helpers import check_pass

SF = [ShapeFolding(), DeadCodeElimination()]


def test_static_dims_of_a_dynamic_shape_fold_to_constants():
    check_pass(SF, """
        graph @main(%x: f32[N,3]) {
          const %one: i64[] = 1
          const %two: i64[] = 2
          const %minus_one: i64[1] = [-1]
          %s: i64[2] = shape(%x)
          %c: i64[] = gather(%s, %one) {axis=0}
          %d: i64[] = mul(%c, %two)
          %dv: i64[1] = unsqueeze(%d) {axes=[0]}
          %t: i64[2] = concat(%minus_one, %dv) {axis=0}
          %y: f32[?,6] = reshape(%x, %t)
          return %y
        }""", """
        graph @main(%x: f32[N,3]) {
          const %t: i64[2] = [-1, 6]
          %y: f32[?,6] = reshape(%x, %t)
          return %y
        }""")


def test_partially_static_vector_becomes_a_slice_of_shape_and_a_constant():
    check_pass(SF, """
        graph @main(%x: f32[N,C,4]) {
          const %zero: i64[] = 0
          const %one: i64[] = 1
          const %minus_one: i64[1] = [-1]
          %s: i64[3] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %c: i64[] = gather(%s, %one) {axis=0}
          %u: i64[1] = unsqueeze(%n) {axes=[0]}
          %v: i64[1] = unsqueeze(%c) {axes=[0]}
          %t: i64[3] = concat(%u, %v, %minus_one) {axis=0}
          %y: f32[N,C,4] = reshape(%x, %t)
          return %y
        }""", """
        graph @main(%x: f32[N,C,4]) {
          const %minus_one: i64[1] = [-1]
          const %bound: i64[1] = [0]
          const %bound_1: i64[1] = [2]
          const %bound_2: i64[1] = [1]
          %shape: i64[3] = shape(%x)
          %dims: i64[2] = slice(%shape, %bound, %bound_1, %bound_2) {axes=[0]}
          %t: i64[3] = concat(%dims, %minus_one) {axis=0}
          %y: f32[N,C,4] = reshape(%x, %t)
          return %y
        }""")


def test_a_whole_shape_rebuilt_is_just_shape_of_its_source():
    check_pass(SF, """
        graph @main(%x: f32[N,M], %y: f32[N,M]) {
          const %zero: i64[] = 0
          const %one: i64[] = 1
          %s: i64[2] = shape(%y)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %m: i64[] = gather(%s, %one) {axis=0}
          %u: i64[1] = unsqueeze(%n) {axes=[0]}
          %v: i64[1] = unsqueeze(%m) {axes=[0]}
          %t: i64[2] = concat(%u, %v) {axis=0}
          %z: f32[N,M] = reshape(%x, %t)
          return %z
        }""", """
        graph @main(%x: f32[N,M], %y: f32[N,M]) {
          %shape: i64[2] = shape(%x)
          %z: f32[N,M] = reshape(%x, %shape)
          return %z
        }""")


def test_one_dynamic_dim_feeding_a_reshape_stays_shape_and_gather():
    check_pass(SF, """
        graph @main(%x: f32[N,3,4]) {
          const %zero: i64[] = 0
          const %minus_one: i64[1] = [-1]
          %s: i64[3] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %u: i64[1] = unsqueeze(%n) {axes=[0]}
          %t: i64[2] = concat(%u, %minus_one) {axis=0}
          %y: f32[N,12] = reshape(%x, %t)
          return %y
        }""", None)


def test_after_shape_inference_the_folded_shapes_keep_their_precise_types():
    check_pass([ShapeInference(), *SF], """
        graph @main(%x: f32[N,2,3]) {
          const %one: i64[] = 1
          const %two: i64[] = 2
          %s: i64[3] = shape(%x)
          %c: i64[] = gather(%s, %one) {axis=0}
          %h: i64[] = gather(%s, %two) {axis=0}
          %k: i64[] = mul(%c, %h)
          %r: i64[?] = range(%one, %k, %one)
          return %r
        }""", """
        graph @main(%x: f32[N,2,3]) {
          const %one: i64[] = 1
          const %k: i64[] = 6
          %r: i64[5] = range(%one, %k, %one)
          return %r
        }""")


def test_registered_by_name():
    assert isinstance(get_pass("shape-folding"), ShapeFolding)
