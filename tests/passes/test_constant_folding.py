"""``constant-folding``: folded graphs as IR text before and after, what is
not folded (the size limit, non-constant inputs, evaluation errors), the
exact NumPy semantics of folded values, and that users' arrays are safe."""

from __future__ import annotations

import numpy as np
import pytest

from ir import DType, Graph, TensorType
from ir.interpreter import evaluate
from ir.parser import parse_graph
from ir.verifier import verify
from passes import get_pass
from ir.transforms import FOLD_MAX_ELEMENTS
from passes.constant_folding import ConstantFolding
from tests.passes.helpers import assert_identical, check_pass

FOLD = ConstantFolding()


def test_a_chain_of_constant_nodes_folds_in_one_walk():
    check_pass(FOLD, """
        graph @main(%x: f32[N,3]) {
          const %two: f32[] = 2.0
          const %c: f32[3] = [1.0, 2.0, 3.0]
          %s: f32[3] = mul(%c, %two)
          %t: f32[3] = neg(%s)
          %y: f32[N,3] = add(%x, %t)
          return %y
        }""", """
        graph @main(%x: f32[N,3]) {
          const %two: f32[] = 2.0
          const %c: f32[3] = [1.0, 2.0, 3.0]
          const %s: f32[3] = [2.0, 4.0, 6.0]
          const %t: f32[3] = [-2.0, -4.0, -6.0]
          %y: f32[N,3] = add(%x, %t)
          return %y
        }""")


def test_unnamed_outputs_are_named_after_the_op_and_names_stay_unique():
    graph = Graph()
    x = graph.add_input(TensorType(DType.FLOAT32, (2,)), "x")
    c = graph.add_constant(np.array([1.0, 4.0], np.float32), "c")
    root = graph.add("sqrt", [c])
    taken = graph.add("exp", [c], name="c")
    weird = graph.add("neg", [c], name="a b")
    graph.set_outputs([graph.add("add", [graph.add("add", [x, root]), graph.add("add", [taken, weird])])])
    assert FOLD.run(graph)
    verify(graph)
    assert sorted(graph.constants) == ["a_b", "add", "c", "c_1", "sqrt"]
    np.testing.assert_array_equal(graph.constants["sqrt"].const, np.array([1.0, 2.0], np.float32))


def test_shape_of_a_static_value_folds():
    check_pass(FOLD, """
        graph @main(%x: f32[4,3], %y: f32[N,3]) {
          %s: i64[2] = shape(%x)
          %t: i64[2] = shape(%y)
          %z: f32[4,3] = reshape(%y, %s)
          return %z, %t
        }""", """
        graph @main(%x: f32[4,3], %y: f32[N,3]) {
          const %s: i64[2] = [4, 3]
          %t: i64[2] = shape(%y)
          %z: f32[4,3] = reshape(%y, %s)
          return %z, %t
        }""", sizes={"N": 4})


def test_nodes_with_a_non_constant_input_stay():
    check_pass(FOLD, """
        graph @main(%x: f32[3]) {
          const %c: f32[3] = [1.0, 2.0, 3.0]
          %y: f32[3] = add(%c, %x)
          return %y
        }""", None)


def test_outputs_over_the_limit_stay():
    # expand of a scalar to 300x300 = 90000 elements: the model keeps the
    # scalar and an Expand node rather than a 360 KB initializer.
    text = """
        graph @main(%x: f32[300,300]) {
          const %z: f32[] = 0.5
          const %s: i64[2] = [300, 300]
          %e: f32[300,300] = expand(%z, %s)
          %y: f32[300,300] = add(%x, %e)
          return %y
        }"""
    assert 300 * 300 > FOLD_MAX_ELEMENTS
    check_pass(FOLD, text, None)
    graph = parse_graph(text)
    assert ConstantFolding(max_elements=90000).run(graph)
    assert [n.op for n in graph] == ["add"]
    assert graph.constants["e"].const.shape == (300, 300)


def test_the_limit_counts_all_outputs_of_a_node():
    text = """
        graph @main() {
          const %c: f32[10] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
          const %sizes: i64[2] = [4, 6]
          %a: f32[4], %b: f32[6] = split(%c, %sizes) {axis=0, num_outputs=2}
          return %a, %b
        }"""
    check_pass(ConstantFolding(max_elements=9), text, None)
    graph = check_pass(ConstantFolding(max_elements=10), text, """
        graph @main() {
          const %c: f32[10] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
          const %sizes: i64[2] = [4, 6]
          const %a: f32[4] = [1.0, 2.0, 3.0, 4.0]
          const %b: f32[6] = [5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
          return %a, %b
        }""")
    assert len(graph) == 0


def test_outputs_without_a_static_shape_stay():
    check_pass(FOLD, """
        graph @main() {
          const %c: i32[4] = [0, 3, 0, 5]
          %n: i64[1,?] = nonzero(%c)
          return %n
        }""", None)


def test_a_node_whose_evaluation_fails_is_left_for_the_runtime():
    graph = parse_graph("""
        graph @main() {
          const %c: f32[3] = [1.0, 2.0, 3.0]
          const %i: i64[1] = [7]
          %y: f32[1] = gather(%c, %i) {axis=0}
          return %y
        }""")
    assert FOLD.run(graph) is False
    assert [n.op for n in graph] == ["gather"]


def test_folding_follows_numpy_semantics_exactly():
    graph = check_pass(FOLD, """
        graph @main() {
          const %a: i32[4] = [-7, -1, 7, 1]
          const %b: i32[] = 2
          const %f: f64[3] = [-2.7, 0.5, 3.9]
          const %h: f32[3] = [1.0, -1.0, 0.0]
          const %z: f32[] = 0.0
          %q: i32[4] = floor_div(%a, %b)
          %m: i32[4] = mod(%a, %b)
          %t: i32[3] = cast(%f) {to=i32}
          %r: f64[3] = round_half_even(%f)
          %d: f32[3] = div(%h, %z)
          return %q, %m, %t, %r, %d
        }""", """
        graph @main() {
          const %a: i32[4] = [-7, -1, 7, 1]
          const %b: i32[] = 2
          const %f: f64[3] = [-2.7, 0.5, 3.9]
          const %h: f32[3] = [1.0, -1.0, 0.0]
          const %z: f32[] = 0.0
          const %q: i32[4] = [-4, -1, 3, 0]
          const %m: i32[4] = [1, 1, 1, 1]
          const %t: i32[3] = [-2, 0, 3]
          const %r: f64[3] = [-3.0, 0.0, 4.0]
          const %d: f32[3] = [inf, -inf, nan]
          return %q, %m, %t, %r, %d
        }""")
    assert graph.constants["d"].const.dtype == np.float32


def test_users_arrays_are_never_modified_or_shared():
    user = np.arange(6, dtype=np.float32)
    graph = Graph()
    w = graph.add_constant(user, "W")
    s = graph.add_constant(np.array([2, 3], np.int64), "s")
    r = graph.add("reshape", [w, s], name="r")
    graph.set_outputs([graph.add("transpose", [r], {"perm": [1, 0]}, name="t")])
    assert FOLD.run(graph)
    (folded,) = graph.outputs
    assert folded.const is not None and not folded.const.flags.writeable
    assert not np.shares_memory(folded.const, user)
    with pytest.raises(ValueError):
        folded.const[0, 0] = 99.0
    np.testing.assert_array_equal(user, np.arange(6, dtype=np.float32))
    np.testing.assert_array_equal(folded.const, user.reshape(2, 3).T)


def test_folded_graph_computes_the_same_as_before():
    text = """
        graph @main(%x: f32[N,4]) {
          const %r: f32[4] = [0.1, 0.2, 0.3, 0.4]
          const %k: f32[] = 3.0
          const %axes: i64[2] = [1, 4]
          %a: f32[4] = mul(%r, %k)
          %b: f32[4] = exp(%a)
          %c: f32[1,4] = reshape(%b, %axes)
          %d: f32[] = reduce_max(%c) {axes=[], keepdims=false}
          %e: f32[1,4] = div(%c, %d)
          %y: f32[N,4] = mul(%x, %e)
          return %y
        }"""
    graph = parse_graph(text)
    assert FOLD.run(graph)
    assert [n.op for n in graph] == ["mul"]
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    assert_identical(evaluate(graph, [x])[0], evaluate(parse_graph(text), [x])[0])


def test_registered_with_its_option():
    assert get_pass("constant-folding") == FOLD
    assert get_pass("constant-folding", max_elements=10) == ConstantFolding(10)
    assert FOLD.max_elements == FOLD_MAX_ELEMENTS == 65536
