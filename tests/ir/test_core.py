"""The mutation API of ``ir.core`` keeps use lists, node order and names
consistent; each test ends with the verifier and the printed IR."""

from __future__ import annotations

import numpy as np
import pytest

from ir import DType, Graph, OpError, TensorType, Use
from ir.errors import ShapeInferenceError
from ir.parser import parse_graph, parse_type
from ir.printer import print_graph
from ir.types import refine_type
from ir.verifier import verify

F32 = DType.FLOAT32
T2 = TensorType(F32, (2,))

CHAIN = """\
graph @main(%x: f32[2]) {
  %a: f32[2] = exp(%x)
  %b: f32[2] = neg(%a)
  %c: f32[2] = add(%a, %b)
  return %c, %a
}
"""


def chain():
    g = parse_graph(CHAIN)
    a, b, c = (n.output for n in g)
    return g, g.inputs[0], a, b, c


def ops(g: Graph) -> list[str]:
    return [n.op for n in g]


def test_replace_all_uses_moves_node_inputs_and_graph_outputs():
    g, x, a, b, c = chain()
    s = g.add("sin", [x], name="s", before=b.producer)
    g.replace_all_uses(a, s)
    assert a.uses() == [] and set(s.uses()) == {Use(b.producer, 0), Use(c.producer, 0)}
    assert g.outputs == [c, s]
    g.erase(a.producer)
    verify(g)
    assert print_graph(g) == """\
graph @main(%x: f32[2]) {
  %s: f32[2] = sin(%x)
  %b: f32[2] = neg(%s)
  %c: f32[2] = add(%s, %b)
  return %c, %s
}
"""


def test_replace_all_uses_with_itself_is_a_no_op():
    g, x, a, b, c = chain()
    g.replace_all_uses(a, a)
    assert len(a.uses()) == 2 and g.outputs == [c, a]


def test_set_input_updates_both_use_lists():
    g, x, a, b, c = chain()
    c.producer.set_input(1, x)
    assert b.uses() == [] and x.uses() == [Use(a.producer, 0), Use(c.producer, 1)]
    assert c.producer.inputs == (a, x)
    g.erase(b.producer)
    verify(g)
    assert ops(g) == ["exp", "add"]


def test_uses_is_a_snapshot():
    g, x, a, b, c = chain()
    uses = a.uses()
    c.producer.set_input(0, x)
    assert len(uses) == 2 and a.num_uses == 1


def test_insert_before_and_after_and_add_before():
    g, x, a, b, c = chain()
    g.insert_after(a.producer, g.create_node("abs", [a], output_names=["after_a"]))
    g.insert_before(a.producer, g.create_node("sqrt", [x], output_names=["first"]))
    g.insert_after(c.producer, g.create_node("tanh", [c], output_names=["last"]))
    g.add("cos", [x], before=c.producer, name="before_c")
    assert ops(g) == ["sqrt", "exp", "abs", "neg", "cos", "add", "tanh"]
    assert len(g) == 7 and g._head.op == "sqrt" and g._tail.op == "tanh"
    verify(g)


def test_insert_refuses_foreign_anchor_and_linked_node():
    g, x, a, b, c = chain()
    other = Graph("other")
    node = other.create_node("exp", [x])
    with pytest.raises(ValueError, match="not in graph main"):
        g.insert_before(node, g.create_node("exp", [x]))
    with pytest.raises(ValueError, match="already in a graph"):
        g.insert_after(a.producer, b.producer)


def test_erase_refuses_a_used_node_and_a_graph_output():
    g, x, a, b, c = chain()
    with pytest.raises(ValueError, match="cannot erase exp: output %a is still used"):
        g.erase(a.producer)
    with pytest.raises(ValueError, match="cannot erase add: output %c is still used"):
        g.erase(c.producer)
    assert len(g) == 3
    verify(g)


def test_erase_drops_the_uses_of_its_inputs():
    g, x, a, b, c = chain()
    g.set_outputs([a])
    g.erase(c.producer)
    g.erase(b.producer)
    assert a.uses() == [] and ops(g) == ["exp"] and len(g) == 1
    verify(g)


def test_iteration_survives_erasing_the_current_and_next_nodes():
    g = parse_graph("""\
graph @main(%x: f32[2]) {
  %d1: f32[2] = exp(%x)
  %k: f32[2] = neg(%x)
  %d2: f32[2] = neg(%d1)
  %d3: f32[2] = abs(%x)
  %k2: f32[2] = sin(%k)
  return %k2
}
""")
    seen = []
    for node in g:
        seen.append(node.output.name)
        if node.output.name == "d2":
            g.erase(node)
            g.erase(g.nodes[0])  # d1, already visited, now unused
            g.erase(g.nodes[1])  # d3, the next node: skipped by the iterator
    assert seen == ["d1", "k", "d2", "k2"]
    assert [n.output.name for n in g] == ["k", "k2"]
    verify(g)


def test_iteration_visits_nodes_inserted_after_the_current_one():
    g, x, a, b, c = chain()
    seen = []
    for node in g:
        seen.append(node.op)
        if node.op == "exp":
            g.insert_after(node, g.create_node("abs", [node.output]))
            g.insert_before(node, g.create_node("sqrt", [x]))  # behind us: not visited
    assert seen == ["exp", "abs", "neg", "add"]
    assert ops(g) == ["sqrt", "exp", "abs", "neg", "add"]
    verify(g)


def test_move_before():
    g, x, a, b, c = chain()
    s = g.add("sin", [x], name="s")
    g.move_before(a.producer, s.producer)
    assert ops(g) == ["sin", "exp", "neg", "add"] and len(g) == 4
    verify(g)
    g.move_before(c.producer, s.producer)
    assert ops(g) == ["exp", "neg", "sin", "add"] and g._tail is c.producer
    verify(g)


def test_constants_are_read_only_copies():
    user = np.array([1.0, 2.0], dtype=np.float32)
    g = Graph()
    c = g.add_constant(user, "w")
    assert c.const is not user and not c.const.flags.writeable
    with pytest.raises(ValueError):
        c.const[0] = 5.0
    user[0] = 7.0
    assert c.const.tolist() == [1.0, 2.0] and user.flags.writeable
    assert c.type == TensorType(F32, (2,))


def test_frozen_arrays_are_kept_without_a_copy():
    """An array no one can write (read-only down to an owned or ``bytes``
    buffer) is kept as is: another graph's constants and read-only weights
    cost no copy; a read-only view of a writeable array is copied."""
    g = Graph()
    frozen_w = np.arange(6, dtype=np.float32)
    frozen_w.setflags(write=False)
    assert g.add_constant(frozen_w, "w").const is frozen_w
    c = g.add_constant(np.ones(3, np.float32), "c")
    assert Graph().add_constant(c.const, "c").const is c.const
    from_bytes = np.frombuffer(b"\x00" * 8, np.float32)
    assert g.add_constant(from_bytes, "b").const is from_bytes
    base = np.zeros(4, np.float32)
    view = base[1:]
    view.setflags(write=False)
    kept = g.add_constant(view, "v").const
    base[1] = 9.0
    assert kept is not view and kept.tolist() == [0.0, 0.0, 0.0]


def test_add_constant_makes_names_unique_and_checks_dtype():
    g = Graph()
    g.add_input(T2, "w_2")
    names = [g.add_constant(np.float32(i), "w").name for i in range(4)]
    assert names == ["w", "w_1", "w_3", "w_4"]
    with pytest.raises(TypeError, match="array dtype float64 != f32"):
        g.add_constant(np.zeros(2), "bad", T2)
    g.set_outputs(list(g.constants.values()))
    verify(g)


def test_remove_constant_refuses_a_used_one():
    g = Graph()
    c = g.add_constant(np.zeros(2, np.float32), "c")
    d = g.add_constant(np.ones(2, np.float32), "d")
    g.set_outputs([g.add("neg", [c])])
    with pytest.raises(ValueError, match="constant %c is still used"):
        g.remove_constant(c)
    g.remove_constant(d)
    assert list(g.constants) == ["c"]
    verify(g)


def test_create_node_infers_types_and_rejects_bad_nodes():
    g = Graph()
    x = g.add_input(TensorType(F32, ("N", 3)), "x")
    node = g.create_node("reduce_max", [x], {"axes": [1], "keepdims": True})
    assert node.output.type == TensorType(F32, ("N", 1)) and node.attrs == {"axes": (1,), "keepdims": True}
    assert node.graph is None and x.uses() == [Use(node, 0)]
    with pytest.raises(KeyError, match="unknown IR op 'nope'"):
        g.create_node("nope", [x])
    with pytest.raises(OpError, match="cast: missing required attribute to"):
        g.create_node("cast", [x])


def test_node_output_needs_a_single_output():
    g = parse_graph("""\
graph @main(%x: f32[4]) {
  const %s: i64[2] = [1, 3]
  %a: f32[1], %b: f32[3] = split(%x, %s) {axis=0, num_outputs=2}
  return %a, %b
}
""")
    (node,) = g.nodes
    with pytest.raises(ValueError, match="split has 2 outputs, not one"):
        node.output
    assert [v.index for v in node.outputs] == [0, 1] and all(v.producer is node for v in node.outputs)


def test_the_op_index_follows_insertions_and_erasures():
    g, x, a, b, c = chain()
    assert (g.op_count("exp"), g.op_count("neg"), g.op_count("sin")) == (1, 1, 0)
    assert g.contains_op("sin", "neg") and not g.contains_op("sin", "cos")
    s = g.add("sin", [x], name="s", before=b.producer)
    assert g.op_count("sin") == 1 and g.contains_op("sin")
    g.replace_all_uses(s, x)
    g.erase(s.producer)
    assert g.op_count("sin") == 0 and not g.contains_op("sin")
    verify(g)


def test_contains_op_looks_into_nested_graphs():
    g = parse_graph("""\
graph @main(%x: f32[], %c: bool[]) {
  %y: f32[] = if(%c, %x) (then: graph @then(%a: f32[]) {
    %s: f32[] = sin(%a)
    return %s
  }, else: graph @else(%b: f32[]) {
    return %b
  })
  return %y
}
""")
    assert g.op_count("sin") == 0
    assert g.contains_op("sin") and not g.contains_op("sin", nested=False)


def test_is_output_follows_replaced_outputs():
    g, x, a, b, c = chain()
    assert g.is_output(c) and g.is_output(a) and not g.is_output(b)
    g.replace_all_uses(a, b)
    assert not g.is_output(a) and g.is_output(b) and g.outputs == [c, b]


def test_reverse_iteration_visits_nodes_inserted_before_the_current_one_even_when_it_is_erased():
    g, x, a, b, c = chain()  # exp, neg, add
    seen = []
    for node in reversed(g):
        seen.append(node.op)
        if node.op == "neg":
            sqrt = g.create_node("sqrt", [a])
            g.insert_before(node, sqrt)
            g.replace_all_uses(node.output, sqrt.output)
            g.erase(node)
    assert seen == ["add", "neg", "sqrt", "exp"]
    assert ops(g) == ["exp", "sqrt", "add"]
    verify(g)


REFINABLE = """\
graph @main(%x: f32[?,3], %w: f32[4,3]) {
  %y: f32[?,3] = exp(%x)
  %z: f32[?,3] = neg(%y)
  %s: f32[?,3] = sin(%z)
  %t: i64[2] = shape(%s)
  return %s, %t
}
"""


def test_replacing_a_value_by_one_of_another_type_reinfers_the_readers_downstream():
    g = parse_graph(REFINABLE)
    y, z, s, t = (n.outputs[0] for n in g)
    known = g.add("exp", [g.inputs[1]], before=y.producer)
    g.replace_all_uses(y, known)
    assert [str(v.type) for v in (z, s, t)] == ["f32[4,3]", "f32[4,3]", "i64[2]"]
    verify(g)


def test_replacing_a_value_by_one_of_its_own_type_reinfers_nothing():
    g = parse_graph(REFINABLE.replace("%z: f32[?,3] = neg(%y)", "%z: f32[?,?] = neg(%y)"))
    y, z = (n.outputs[0] for n in g.nodes[:2])
    twin = g.add("exp", [g.inputs[0]], before=y.producer)
    g.replace_all_uses(y, twin)
    assert str(z.type) == "f32[?,?]"  # its rule would say f32[?,3]: not asked, the input type is the same


def test_a_replacement_that_contradicts_a_readers_static_dim_is_an_error():
    g = parse_graph(REFINABLE.replace("%z: f32[?,3] = neg(%y)\n  %s: f32[?,3]", "%z: f32[?,3] = neg(%y)\n  %s: f32[5,3]"))
    y = g.nodes[0].output
    known = g.add("exp", [g.inputs[1]], before=y.producer)
    with pytest.raises(ShapeInferenceError, match=r"output 0 is declared f32\[5,3\] but its inputs give f32\[4,3\]"):
        g.replace_all_uses(y, known)


@pytest.mark.parametrize("declared, inferred, want", [
    ("f32[?,N]", "f32[3,M]", "f32[3,N]"),   # an int for ?, a declared name kept
    ("f32[N,?]", "f32[4,K+1]", "f32[4,K+1]"),  # an int for a name, an expression for ?
    ("f32[3]", "f32[4]", None),             # two ints: a contradiction
    ("f32[3]", "f64[3]", None),             # another dtype
    ("f32[3]", "f32[3,1]", None),           # another rank
])
def test_refine_type_adopts_what_is_more_precise(declared, inferred, want):
    got = refine_type(parse_type(declared), parse_type(inferred))
    assert (None if got is None else str(got)) == want
