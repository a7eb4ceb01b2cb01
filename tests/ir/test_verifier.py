"""The verifier accepts valid IR and rejects each kind of malformed IR with a
message naming the problem and marking the failing line of printed IR."""

from __future__ import annotations

import numpy as np
import pytest

from ir import DType, Graph, Node, TensorType, Use, Value
from ir import opdef as registry
from ir.opdef import OpDef
from ir.parser import parse_graph
from ir.verifier import VerificationError, verify

F32 = DType.FLOAT32
T2 = TensorType(F32, (2,))

VALID = """\
graph @main(%x: f32[N,2], %k: i64[]) {
  const %c: f32[2] = [1.0, 2.0]
  const %sizes: i64[2] = [1, 1]
  %y: f32[N,2] = add(%x, %c)
  %a: f32[N,1], %b: f32[N,1] = split(%y, %sizes) {axis=1, num_outputs=2}
  %s: f32[N] = reduce_sum(%y) {axes=[1], keepdims=false}
  %i: f32[] = cast(%k) {to=f32}
  return %s, %a
}
"""


def rejects(graph: Graph, *fragments: str, marked: str | None = None, context: str | None = None) -> str:
    """Assert ``verify`` fails with every fragment in its message and, when
    ``marked`` is given, a ``>>`` line of IR containing it. Returns the message."""
    with pytest.raises(VerificationError) as info:
        verify(graph, context)
    message = str(info.value)
    for f in fragments:
        assert f in message, f"{f!r} not in:\n{message}"
    if marked is not None:
        arrows = [line for line in message.splitlines() if line.startswith(">> ")]
        assert len(arrows) == 1 and marked in arrows[0], message
    return message


def small() -> tuple[Graph, Value, Value]:
    """``%x: f32[2] -> %y = exp(%x) -> %z = neg(%y)``; returns (graph, y, z)."""
    g = Graph()
    x = g.add_input(T2, "x")
    y = g.add("exp", [x], name="y")
    z = g.add("neg", [y], name="z")
    g.set_outputs([z])
    return g, y, z


def test_accepts_valid_graphs():
    verify(parse_graph(VALID))
    g, _, _ = small()
    verify(g, "after nothing")
    verify(Graph("empty"))


def test_context_goes_into_the_message():
    g, y, _ = small()
    y.type = TensorType(DType.FLOAT64, (2,))
    message = rejects(g, context="after cse")
    assert message.startswith("IR verification failed after cse: exp node (%y)")


# -- 1. definitions and use lists ---------------------------------------------------

def test_use_before_definition():
    g, y, z = small()
    g.move_before(y.producer, z.producer)
    rejects(g, "neg node (%z): input 0 %y is used before it is defined",
            "its producer, a exp node, comes later", marked="%z: f32[2] = neg(%y)")


def test_producer_unlinked_while_its_output_is_used():
    g, y, z = small()
    y.producer.drop_inputs()
    g._unlink(y.producer)  # an erase that skipped the use check
    rejects(g, "neg node (%z): input 0 %y is not defined (its producer, a exp node, is not in the graph)",
            marked="%z: f32[2] = neg(%y)")


def test_dangling_use_from_a_node_erased_without_dropping_inputs():
    g, y, z = small()
    g.set_outputs([y])
    g._unlink(z.producer)  # the neg node still sits in %y's use list
    rejects(g, "%y has a dangling use: a neg node (input 0) that is not in the graph",
            marked="%y: f32[2] = exp(%x)")


def test_use_list_missing_an_entry():
    g, y, z = small()
    del y._uses[Use(z.producer, 0)]
    rejects(g, "neg node (%z): input 0 %y does not list this use in its use list", marked="%z: f32[2] = neg")


def test_use_list_entry_with_a_wrong_index():
    g, y, z = small()
    y._uses[Use(z.producer, 3)] = None
    rejects(g, "%y lists a use by neg node (%z) input 3, but that input is not %y", marked="%z: f32[2] = neg")


def test_value_defined_twice():
    g, y, z = small()
    other = Node("exp", [z], {}, [T2])
    other.outputs = y.producer.outputs
    g.append(other)
    rejects(g, "%y is defined twice")


def test_value_from_nowhere():
    g, y, z = small()
    z.producer.set_input(0, Value(T2, "ghost"))
    rejects(g, "input 0 %ghost is not defined (not an input or constant of this graph or an enclosing one)")


def test_graph_output_not_defined():
    g, y, z = small()
    g.set_outputs([z, Value(T2, "ghost")])
    rejects(g, "graph @main: output 1 %ghost is not defined", marked="return %z, %ghost")


def test_output_of_unlinked_node_as_graph_output():
    g, y, z = small()
    g._unlink(z.producer)
    z.producer.drop_inputs()
    rejects(g, "output 0 %z is not defined (its producer, a neg node, is not in the graph)", marked="return %z")


def test_broken_node_list():
    g, y, z = small()
    g._num_nodes += 1
    rejects(g, "graph @main: len() is 3 but the node list has 2 nodes")
    g, y, z = small()
    y.producer.graph = Graph("elsewhere")
    rejects(g, "exp node is in the node list of graph @main but its .graph is <Graph elsewhere")
    g, y, z = small()
    z.producer._next = y.producer  # a cycle: reported without printing the IR
    message = rejects(g, "exp node appears twice in the node lists")
    assert ">>" not in message


# -- 3. ops and attributes --------------------------------------------------------------

def test_unknown_op():
    g, y, z = small()
    g.insert_after(y.producer, Node("frobnicate", [y], {}, [T2], ["f"]))
    rejects(g, "frobnicate node (%f): unknown op 'frobnicate'", marked="%f: f32[2] = frobnicate(%y)")


def test_wrong_arity():
    g, y, z = small()
    g.append(Node("add", [y], {}, [T2], ["s"]))
    rejects(g, "add node (%s): add takes 2 inputs, got 1", marked="%s: f32[2] = add(%y)")


@pytest.mark.parametrize("attrs, message", [
    ({"axes": (0,), "keepdims": False, "bogus": 1}, "reduce_sum: unknown attribute(s) ['bogus']"),
    ({"axes": (0,), "keepdims": 0}, "reduce_sum: attribute keepdims=0 must be a bool"),
    ({"axes": (0.5,), "keepdims": False}, "reduce_sum: attribute axes=0.5 must be an int"),
    ({"axes": [0], "keepdims": False}, "attributes {'axes': [0], 'keepdims': False} differ from their "
                                       "schema-normalized form {'axes': (0,), 'keepdims': False}"),
    ({"axes": (0,)}, "differ from their schema-normalized form {'axes': (0,), 'keepdims': False}"),
])
def test_bad_attributes(attrs, message):
    g, y, z = small()
    g.append(Node("reduce_sum", [y], attrs, [TensorType(F32, ())], ["r"]))
    rejects(g, "reduce_sum node (%r): ", message, marked="%r: f32[] = reduce_sum(%y)")


def test_missing_and_ill_typed_required_attribute():
    g, y, z = small()
    g.append(Node("cast", [y], {}, [T2], ["c"]))
    rejects(g, "cast node (%c): cast: missing required attribute to", marked="%c: f32[2] = cast(%y)")
    g, y, z = small()
    g.append(Node("cast", [y], {"to": "f32"}, [T2], ["c"]))
    rejects(g, "cast: attribute to='f32' must be a DType", marked='%c: f32[2] = cast(%y) {to="f32"}')


# -- 4. types --------------------------------------------------------------------------------

@pytest.mark.parametrize("declared, message", [
    ("f64[N,2]", "output 0 %y is declared f64[N,2] but the type rule gives f32[N,2]"),
    ("f32[N]", "output 0 %y is declared f32[N] but the type rule gives f32[N,2]"),
    ("f32[N,3]", "output 0 %y is declared f32[N,3] but the type rule gives f32[N,2]"),
    ("f32[N,2,1]", "output 0 %y is declared f32[N,2,1] but the type rule gives f32[N,2]"),
])
def test_wrong_declared_output_type(declared, message):
    graph = parse_graph(VALID.replace("%y: f32[N,2] = add", f"%y: {declared} = add"))
    rejects(graph, f"add node (%y): {message}", marked=f"%y: {declared} = add(%x, %c)")


def test_compatible_dims_are_accepted():
    verify(parse_graph(VALID.replace("%y: f32[N,2] = add", "%y: f32[?,2] = add")))
    verify(parse_graph(VALID.replace("%y: f32[N,2] = add", "%y: f32[7,2] = add")))


def test_wrong_output_count():
    text = VALID.replace("%a: f32[N,1], %b: f32[N,1] = split", "%a: f32[N,1] = split")
    rejects(parse_graph(text), "split node (%a): declares 1 outputs, the type rule gives 2")


def test_type_rule_rejection_is_reported():
    text = VALID.replace("%y: f32[N,2] = add(%x, %c)", "%y: f32[N,2] = add(%x, %k)")
    rejects(parse_graph(text), "add node (%y): type rule rejects the inputs: add: inputs must share one dtype, "
                               "got f32, i64", marked="%y: f32[N,2] = add(%x, %k)")


# -- 5. names and constants ---------------------------------------------------------------------

def test_duplicate_input_names():
    g = Graph()
    x = g.add_input(T2, "x")
    g.add_input(T2, "x")
    g.set_outputs([g.add("neg", [x])])
    rejects(g, "graph input name %x is used twice in graph @main")


def test_constant_named_like_an_input():
    g = Graph()
    g.add_input(T2, "x")
    c = g.add_constant(np.zeros(2, np.float32), "c")
    c.name = "x"
    rejects(g, "constant name %x is used twice")


def test_empty_input_name():
    g = Graph()
    g.add_input(T2, "")
    rejects(g, "graph input %\"\" of graph @main has no name")


@pytest.mark.parametrize("array, message", [
    (np.zeros(3, np.float32), "constant %c is declared f32[2] but holds a float32 array of shape (3,)"),
    (np.zeros(2, np.float64), "constant %c is declared f32[2] but holds a float64 array of shape (2,)"),
    ([1.0, 2.0], "constant %c holds a list, not a NumPy array"),
])
def test_constant_disagreeing_with_its_type(array, message):
    g = Graph()
    c = g.add_constant(np.zeros(2, np.float32), "c")
    c.const = array
    g.set_outputs([c])
    rejects(g, message, marked="const %c: f32[2]")


def test_constant_with_symbolic_type_from_text():
    graph = parse_graph("graph @g() {\n  const %c: f32[N] = [1.0, 2.0]\n  return %c\n}\n")
    rejects(graph, "constant %c is declared f32[N] but holds a float32 array of shape (2,)")


# -- nested graphs --------------------------------------------------------------------------------

@pytest.fixture
def call_op(monkeypatch):
    """A test-only variadic identity op ``test_call`` that carries nested graphs."""
    ident = OpDef("test_call", lambda t, a, c: list(t), lambda a, at: list(a), None)
    monkeypatch.setitem(registry._REGISTRY, "test_call", ident)


def nested(body_reads_later: bool = False, body_input: str = "i") -> Graph:
    g, y, z = small()
    body = Graph("body")
    i = body.add_input(T2, body_input)
    body.set_outputs([body.add("add", [i, z if body_reads_later else y], name="w")])
    call = g.create_node("test_call", [y], subgraphs={"body": body}, output_names=["r"])
    g.insert_before(z.producer, call)
    g.set_outputs([z, call.output])
    return g


def test_nested_graph_reading_enclosing_values_is_valid(call_op):
    verify(nested())


def test_nested_graph_reading_a_value_defined_after_its_node(call_op):
    rejects(nested(body_reads_later=True), "add node (%w): input 1 %z is used before it is defined",
            marked="%w: f32[2] = add(%i, %z)")


def test_nested_graph_input_shadowing_an_enclosing_name(call_op):
    rejects(nested(body_input="x"), "graph input %x of graph @body shadows a name of an enclosing graph")


def test_nested_graph_values_are_not_visible_outside(call_op):
    g = nested()
    w = g.nodes[1].subgraphs["body"].outputs[0]
    g.set_outputs([w])
    rejects(g, "graph @main: output 0 %w is not defined", marked="return %w")


def test_excerpt_is_bounded_for_big_graphs():
    g = Graph()
    v = g.add_input(T2, "x")
    for _ in range(1000):
        v = g.add("neg", [v], name="v")
    g.set_outputs([v])
    bad = g.nodes[500]
    bad.outputs[0].type = TensorType(F32, (3,))
    message = rejects(g, "neg node (%v_500): output 0 %v_500 is declared f32[3]",
                      marked="%v_500: f32[3] = neg(%v_499)")
    lines = message.splitlines()
    assert len(lines) < 20 and lines[1] == "   ..." and lines[-1] == "   ..."
