"""``shape-inference``: IR text before and after, the numbers before and
after (interpreter), and every declared dim checked against the arrays."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from ir.errors import ShapeInferenceError
from ir.parser import parse_graph
from passes.base import get_pass
from passes.shape_inference import ShapeInference
from tests.passes.helpers import check_pass, random_inputs
from tests.shapes.helpers import assert_declared_shapes

SI = ShapeInference()


def check(before: str, after: str | None, sizes: dict | None = None):
    """``check_pass`` of shape-inference, then the declared dims against the
    arrays at two draws of sizes."""
    graph = check_pass(SI, before, after, sizes=sizes)
    for seed in (0, 1):
        assert_declared_shapes(graph, random_inputs(graph, np.random.default_rng(seed), sizes))
    return graph


def test_reshape_of_a_shape_computation_gets_symbolic_dims():
    check("""
        graph @main(%x: f32[N,3,4]) {
          const %zero: i64[] = 0
          const %minus_one: i64[1] = [-1]
          %s: i64[3] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %u: i64[1] = unsqueeze(%n) {axes=[0]}
          %t: i64[2] = concat(%u, %minus_one) {axis=0}
          %y: f32[?,?] = reshape(%x, %t)
          return %y
        }""", """
        graph @main(%x: f32[N,3,4]) {
          const %zero: i64[] = 0
          const %minus_one: i64[1] = [-1]
          %s: i64[3] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %u: i64[1] = unsqueeze(%n) {axes=[0]}
          %t: i64[2] = concat(%u, %minus_one) {axis=0}
          %y: f32[N,12] = reshape(%x, %t)
          return %y
        }""")


POOL = """
    graph @main(%x: f32[N,C,H,W]) {
      const %two: i64[] = 2
      const %three: i64[] = 3
      const %k: i64[1] = [2]
      const %lead: i64[1] = [0]
      const %mid: i64[1] = [2]
      const %one: i64[1] = [1]
      %s: i64[4] = shape(%x)
      %nc: i64[2] = slice(%s, %lead, %mid, %one) {axes=[0]}
      %none: i64[0] = slice(%s, %mid, %mid, %one) {axes=[0]}
      %h: i64[] = gather(%s, %two) {axis=0}
      %h2: i64[] = floor_div(%h, %two)
      %w: i64[] = gather(%s, %three) {axis=0}
      %w2: i64[] = floor_div(%w, %two)
      %h2v: i64[1] = unsqueeze(%h2) {axes=[0]}
      %w2v: i64[1] = unsqueeze(%w2) {axes=[0]}
      %t: i64[6] = concat(%nc, %none, %h2v, %k, %w2v, %k) {axis=0}
      %r: f32[?,?,?,?,?,?] = reshape(%x, %t)
      %y: f32[?,?,?,?] = reduce_max(%r) {axes=[3, 5], keepdims=false}
      return %y
    }"""


def test_reshape_max_pooling_form():
    graph = parse_graph(textwrap.dedent(POOL))
    assert SI.run(graph)
    assert str(graph.outputs[0].type) == "f32[N,C,H//2,W//2]"
    assert str(graph.nodes[-2].output.type) == "f32[N,C,H//2,2,W//2,2]"
    for sizes in ({"N": 1, "C": 2, "H": 4, "W": 6}, {"N": 3, "C": 1, "H": 8, "W": 2}):
        assert_declared_shapes(graph, random_inputs(graph, np.random.default_rng(0), sizes))


def test_range_slice_and_expand_read_symbolic_operands():
    check("""
        graph @main(%x: f32[N,H], %y: f32[M]) {
          const %zero: i64[] = 0
          const %one: i64[] = 1
          const %two: i64[] = 2
          const %starts: i64[1] = [0]
          const %step: i64[1] = [1]
          const %f: f32[] = 1.0
          %sx: i64[2] = shape(%x)
          %n: i64[] = gather(%sx, %zero) {axis=0}
          %r1: i64[?] = range(%zero, %n, %one)
          %r2: i64[?] = range(%one, %n, %two)
          %m: i64[1] = shape(%y)
          %head: f32[N,?] = slice(%x, %starts, %m, %step) {axes=[1]}
          %e: f32[?,?] = expand(%f, %sx)
          return %r1, %r2, %head, %e
        }""", """
        graph @main(%x: f32[N,H], %y: f32[M]) {
          const %zero: i64[] = 0
          const %one: i64[] = 1
          const %two: i64[] = 2
          const %starts: i64[1] = [0]
          const %step: i64[1] = [1]
          const %f: f32[] = 1.0
          %sx: i64[2] = shape(%x)
          %n: i64[] = gather(%sx, %zero) {axis=0}
          %r1: i64[N] = range(%zero, %n, %one)
          %r2: i64[N//2] = range(%one, %n, %two)
          %m: i64[1] = shape(%y)
          %head: f32[N,min(H,M)] = slice(%x, %starts, %m, %step) {axes=[1]}
          %e: f32[N,H] = expand(%f, %sx)
          return %r1, %r2, %head, %e
        }""")


def test_shape_arithmetic_contents_and_split():
    check("""
        graph @main(%x: f32[N,6]) {
          const %zero: i64[] = 0
          const %one: i64[] = 1
          const %three: i64[] = 3
          %s: i64[2] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %c: i64[] = gather(%s, %one) {axis=0}
          %a: i64[] = floor_div(%c, %three)
          %b: i64[] = sub(%c, %a)
          %av: i64[1] = unsqueeze(%a) {axes=[0]}
          %bv: i64[1] = unsqueeze(%b) {axes=[0]}
          %sizes: i64[2] = concat(%av, %bv) {axis=0}
          %p: f32[N,?], %q: f32[N,?] = split(%x, %sizes) {axis=1, num_outputs=2}
          %n2: i64[] = mul(%n, %three)
          %flat: i64[1] = unsqueeze(%n2) {axes=[0]}
          %t: i64[2] = concat(%flat, %av) {axis=0}
          %y: f32[?,?] = reshape(%x, %t)
          return %p, %q, %y
        }""", """
        graph @main(%x: f32[N,6]) {
          const %zero: i64[] = 0
          const %one: i64[] = 1
          const %three: i64[] = 3
          %s: i64[2] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %c: i64[] = gather(%s, %one) {axis=0}
          %a: i64[] = floor_div(%c, %three)
          %b: i64[] = sub(%c, %a)
          %av: i64[1] = unsqueeze(%a) {axes=[0]}
          %bv: i64[1] = unsqueeze(%b) {axes=[0]}
          %sizes: i64[2] = concat(%av, %bv) {axis=0}
          %p: f32[N,2], %q: f32[N,4] = split(%x, %sizes) {axis=1, num_outputs=2}
          %n2: i64[] = mul(%n, %three)
          %flat: i64[1] = unsqueeze(%n2) {axes=[0]}
          %t: i64[2] = concat(%flat, %av) {axis=0}
          %y: f32[3*N,2] = reshape(%x, %t)
          return %p, %q, %y
        }""")


def test_unknown_operands_stay_unknown_and_nothing_changes():
    text = textwrap.dedent("""\
        graph @main(%x: f32[N,4], %t: i64[2]) {
          %y: f32[?,?] = reshape(%x, %t)
          %z: f32[?,?] = exp(%y)
          return %z
        }
        """)
    graph = parse_graph(text)
    assert SI.run(graph) is False
    assert str(graph) == text


def test_declared_names_are_kept_and_ints_adopted():
    graph = check_pass(SI, """
        graph @main(%x: f32[N,3]) {
          %y: f32[batch,?] = exp(%x)
          return %y
        }""", """
        graph @main(%x: f32[N,3]) {
          %y: f32[batch,3] = exp(%x)
          return %y
        }""")
    assert graph.outputs[0].shape[0] == "batch"


def test_a_contradiction_with_a_declared_static_dim_is_an_error():
    graph = parse_graph(textwrap.dedent("""
        graph @main(%x: f32[4,3,4]) {
          const %zero: i64[] = 0
          const %minus_one: i64[1] = [-1]
          %s: i64[3] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %u: i64[1] = unsqueeze(%n) {axes=[0]}
          %t: i64[2] = concat(%u, %minus_one) {axis=0}
          %y: f32[5,12] = reshape(%x, %t)
          return %y
        }"""))
    with pytest.raises(ShapeInferenceError, match=r"reshape node: output 0 is declared f32\[5,12\] but its inputs "
                                                  r"give f32\[4,12\]\n  %y: f32\[5,12\] = reshape") as info:
        SI.run(graph)
    assert info.value.node.op == "reshape"


def test_a_rule_rejecting_the_now_known_shapes_is_an_error():
    graph = parse_graph(textwrap.dedent("""
        graph @main(%x: f32[N,5]) {
          const %minus_one: i64[1] = [-1]
          const %two: i64[1] = [2]
          %s: i64[2] = shape(%x)
          %t: i64[3] = concat(%s, %two) {axis=0}
          %b: f32[?,?,?] = expand(%x, %t)
          return %b
        }"""))
    with pytest.raises(ShapeInferenceError, match="cannot broadcast dims 5 and 2"):
        SI.run(graph)


def test_registered_by_name():
    assert isinstance(get_pass("shape-inference"), ShapeInference)
