"""``cse``: merged constants and nodes as IR text before and after, what must
stay apart, and interpreter checks."""

from __future__ import annotations

import numpy as np

from ir import DType, Graph, TensorType
from ir.interpreter import evaluate
from ir.parser import parse_graph
from passes import get_pass
from passes.cse import CommonSubexpressionElimination
from tests.passes.helpers import assert_identical, check_pass

CSE = CommonSubexpressionElimination()


def test_equal_constants_merge_into_the_first():
    check_pass(CSE, """
        graph @main(%x: f32[3]) {
          const %W: f32[3] = [1.0, 2.0, 3.0]
          const %a: f32[] = 2.0
          const %b: f32[] = 2.0
          const %c: f32[3] = [1.0, 2.0, 3.0]
          %y: f32[3] = mul(%x, %b)
          %z: f32[3] = add(%y, %c)
          %w: f32[3] = sub(%z, %a)
          return %w
        }""", """
        graph @main(%x: f32[3]) {
          const %W: f32[3] = [1.0, 2.0, 3.0]
          const %a: f32[] = 2.0
          %y: f32[3] = mul(%x, %a)
          %z: f32[3] = add(%y, %W)
          %w: f32[3] = sub(%z, %a)
          return %w
        }""")


def test_constants_differing_in_dtype_shape_or_bits_stay_apart():
    check_pass(CSE, """
        graph @main(%x: f32[2]) {
          const %pz: f32[] = 0.0
          const %nz: f32[] = -0.0
          const %v: f32[1] = [0.0]
          const %d: f64[] = 0.0
          const %i: i32[] = 0
          %a: f32[2] = add(%x, %pz)
          %b: f32[2] = add(%x, %nz)
          %c: f32[2] = add(%x, %v)
          return %a, %b, %c, %d, %i
        }""", None)


def test_nan_constants_with_equal_bits_merge():
    check_pass(CSE, """
        graph @main(%x: f64[2]) {
          const %n1: f64[] = nan
          const %n2: f64[] = nan
          %a: f64[2] = maximum(%x, %n1)
          %b: f64[2] = minimum(%x, %n2)
          return %a, %b
        }""", """
        graph @main(%x: f64[2]) {
          const %n1: f64[] = nan
          %a: f64[2] = maximum(%x, %n1)
          %b: f64[2] = minimum(%x, %n1)
          return %a, %b
        }""")


def test_commutative_inputs_merge_in_any_order():
    check_pass(CSE, """
        graph @main(%x: f32[N,3], %y: f32[3]) {
          %a: f32[N,3] = add(%x, %y)
          %b: f32[N,3] = add(%y, %x)
          %c: f32[N,3] = mul(%a, %b)
          return %c
        }""", """
        graph @main(%x: f32[N,3], %y: f32[3]) {
          %a: f32[N,3] = add(%x, %y)
          %c: f32[N,3] = mul(%a, %a)
          return %c
        }""")


def test_non_commutative_and_different_attributes_stay_apart():
    check_pass(CSE, """
        graph @main(%x: f32[3,3], %y: f32[3,3]) {
          %a: f32[3,3] = sub(%x, %y)
          %b: f32[3,3] = sub(%y, %x)
          %c: bool[3,3] = lt(%x, %y)
          %d: bool[3,3] = lt(%y, %x)
          %e: f32[3] = reduce_sum(%x) {axes=[0], keepdims=false}
          %f: f32[3] = reduce_sum(%x) {axes=[1], keepdims=false}
          %g: f32[1,3] = reduce_sum(%x) {axes=[0], keepdims=true}
          return %a, %b, %c, %d, %e, %f, %g
        }""", None)


def test_graph_inputs_are_never_merged():
    check_pass(CSE, """
        graph @main(%x: f32[3], %y: f32[3]) {
          %a: f32[3] = exp(%x)
          %b: f32[3] = exp(%y)
          return %a, %b
        }""", None)


def test_chains_merge_in_one_walk():
    check_pass(CSE, """
        graph @main(%x: f32[4]) {
          const %s1: i64[2] = [2, 2]
          const %s2: i64[2] = [2, 2]
          %a: f32[4] = exp(%x)
          %b: f32[4] = exp(%x)
          %c: f32[2,2] = reshape(%a, %s1)
          %d: f32[2,2] = reshape(%b, %s2)
          %e: f32[2,2] = transpose(%c) {perm=[1, 0]}
          %f: f32[2,2] = transpose(%d) {perm=[1, 0]}
          %g: f32[2,2] = sub(%e, %f)
          return %g
        }""", """
        graph @main(%x: f32[4]) {
          const %s1: i64[2] = [2, 2]
          %a: f32[4] = exp(%x)
          %c: f32[2,2] = reshape(%a, %s1)
          %e: f32[2,2] = transpose(%c) {perm=[1, 0]}
          %g: f32[2,2] = sub(%e, %e)
          return %g
        }""")


def test_multi_output_nodes_and_graph_outputs_merge():
    check_pass(CSE, """
        graph @main(%x: f32[5]) {
          const %sizes: i64[2] = [2, 3]
          %a: f32[2], %b: f32[3] = split(%x, %sizes) {axis=0, num_outputs=2}
          %c: f32[2], %d: f32[3] = split(%x, %sizes) {axis=0, num_outputs=2}
          %e: f32[3] = neg(%d)
          return %a, %c, %e, %b
        }""", """
        graph @main(%x: f32[5]) {
          const %sizes: i64[2] = [2, 3]
          %a: f32[2], %b: f32[3] = split(%x, %sizes) {axis=0, num_outputs=2}
          %e: f32[3] = neg(%b)
          return %a, %a, %e, %b
        }""")


def test_different_declared_types_stay_apart():
    # The second reshape's output was refined to a static dim (lowering adopts
    # PyTensor's static shapes); merging would lose or invent information.
    graph = parse_graph("""
        graph @main(%x: f32[N], %s: i64[1]) {
          %a: f32[?] = reshape(%x, %s)
          %b: f32[4] = reshape(%x, %s)
          return %a, %b
        }""")
    assert CSE.run(graph) is False
    assert len(graph) == 2


def test_nodes_with_subgraphs_are_left_alone():
    graph = Graph()
    x = graph.add_input(TensorType(DType.FLOAT32, (3,)), "x")
    outs = []
    for _ in range(2):
        node = graph.create_node("exp", [x], subgraphs={"body": Graph("body")})
        graph.append(node)
        outs.append(node.output)
    graph.set_outputs(outs)
    assert CSE.run(graph) is False
    assert len(graph) == 2


def test_nothing_to_merge_returns_false():
    check_pass(CSE, """
        graph @main(%x: f32[3]) {
          %y: f32[3] = exp(%x)
          return %y
        }""", None, changed=False)


def test_a_long_graph_merges_in_one_pass():
    # 300 duplicated chains of 5 ops: every duplicate goes, values unchanged.
    lines = ["graph @main(%x: f32[3]) {"]
    for i in range(300):
        src = "%x" if i == 0 else f"%a{i - 1}"
        lines += [f"  %a{i}: f32[3] = sin({src})", f"  %b{i}: f32[3] = sin({src})",
                  f"  %c{i}: f32[3] = add(%a{i}, %b{i})"]
    lines += ["  return %c299", "}"]
    text = "\n".join(lines) + "\n"
    graph = parse_graph(text)
    assert CSE.run(graph)
    assert len(graph) == 600
    x = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    assert_identical(evaluate(graph, [x])[0], evaluate(parse_graph(text), [x])[0])


def test_registered_by_name():
    assert get_pass("cse") == CSE
