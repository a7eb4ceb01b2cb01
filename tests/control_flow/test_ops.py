"""The IR control-flow ops ``loop`` and ``if``: text form, type rules and
explicit capture (verifier), reference semantics (interpreter), ONNX
emission (onnxruntime against the interpreter), and how the generic passes
treat them."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from backends.onnx import emit_model, make_session
from ir import DType, Graph, TensorType
from ir.interpreter import evaluate
from ir.ops import get_op
from ir.parser import parse_graph
from ir.printer import print_graph
from ir.verifier import VerificationError, verify
import passes.shape_inference  # noqa: F401  (registers shape-inference)
from passes import get_pass
from tests.helpers import assert_same, roundtrip_text

# A running sum over the rows of %xs, stacking each partial sum; a while
# loop halving %v until it drops below 1, stacking the values; and an if
# choosing between them.
PROGRAM = """\
graph @main(%n: i64[], %s0: f32[3], %xs: f32[T,3], %v0: f32[]) {
  const %one: f32[] = 1.0
  %s: f32[3], %ys: f32[n,3] = loop(%n, %s0, %xs) {has_condition=false, num_carried=1} (body: graph @scan0(%scan0.i: i64[], %scan0.s: f32[3], %scan0.xs: f32[T,3]) {
    %x: f32[3] = gather(%scan0.xs, %scan0.i) {axis=0}
    %s1: f32[3] = add(%scan0.s, %x)
    return %s1, %s1
  })
  %v: f32[], %vs: f32[?] = loop(%n, %v0, %one) {has_condition=true, num_carried=1} (body: graph @scan1(%scan1.i: i64[], %scan1.v: f32[], %scan1.one: f32[]) {
    const %scan1.half: f32[] = 0.5
    %h: f32[] = mul(%scan1.v, %scan1.half)
    %go: bool[] = ge(%h, %scan1.one)
    return %go, %h, %h
  })
  %c: bool[] = gt(%v, %one)
  %r: f32[3] = if(%c, %s, %s0) (then: graph @if0(%if0.a: f32[3], %if0.b: f32[3]) {
    return %if0.a
  }, else: graph @if1(%if1.a: f32[3], %if1.b: f32[3]) {
    %d: f32[3] = sub(%if1.a, %if1.b)
    return %d
  })
  return %s, %ys, %v, %vs, %r
}
"""

XS = np.arange(12, dtype=np.float32).reshape(4, 3)
S0 = np.float32([1, -2, 0.5])


def _run_onnx(graph: Graph, values) -> list[np.ndarray]:
    model = emit_model(graph)
    onnx.checker.check_model(model, full_check=True)
    feed = {v.name: np.asarray(a) for v, a in zip(graph.inputs, values)}
    return make_session(model).run(None, feed)


def _same_everywhere(graph: Graph, values, want) -> None:
    """The interpreter and onnxruntime both give ``want`` (exact for these
    small float32 sums)."""
    for name, got in (("interpreter", evaluate(graph, values)), ("onnxruntime", _run_onnx(graph, values))):
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, np.asarray(w), rtol=0, atol=0, what=f"{name} output {i}")


def test_text_round_trips_and_verifies():
    graph = parse_graph(PROGRAM)
    verify(graph)
    assert roundtrip_text(graph) == PROGRAM


@pytest.mark.parametrize("n, v0", [(4, 10.0), (2, 100.0), (1, 3.0)])
def test_semantics_interpreter_and_onnxruntime(n, v0):
    """For loop: n steps; while loop: stops after the step whose condition
    is false (or after n steps); if: the branch the condition picks."""
    graph = parse_graph(PROGRAM)
    sums = S0 + np.cumsum(XS[:n], axis=0)
    halves, v = [], np.float32(v0)
    for _ in range(n):
        v = v * np.float32(0.5)
        halves.append(v)
        if not v >= 1:
            break
    r = sums[-1] if halves[-1] > 1 else sums[-1] - S0
    want = [sums[-1], sums, halves[-1], np.float32(halves), r]
    _same_everywhere(graph, [np.int64(n), S0, XS, np.float32(v0)], want)


def test_zero_trip_count_gives_initial_values_and_empty_stacks():
    graph = parse_graph(PROGRAM)
    s, ys, v, vs, _ = evaluate(graph, [np.int64(0), S0, XS, np.float32(5.0)])
    np.testing.assert_array_equal(s, S0)
    assert ys.shape == (0, 3) and vs.shape == (0,) and v == 5.0


def test_stacked_length_comes_from_the_trip_count():
    """The type rule gives the stacked dim from what is known of the trip
    count: a constant, a symbolic value (from ``shape-inference``) or
    nothing; a while loop's stack length is never known."""
    graph = parse_graph(PROGRAM)
    for_loop, while_loop = graph.nodes[0], graph.nodes[1]
    opdef = get_op("loop")

    def stacked(node, n):
        types = [v.type for v in node.inputs]
        consts = [n] + [None] * (len(types) - 1)
        return str(opdef.infer_types(types, node.attrs, consts, node.subgraphs)[-1])

    assert stacked(for_loop, None) == "f32[?,3]"
    assert stacked(for_loop, np.int64(7)) == "f32[7,3]"
    assert stacked(for_loop, np.array(["T"], dtype=object)) == "f32[T,3]"
    assert stacked(while_loop, np.int64(7)) == "f32[?]"


def test_nested_loops_emit_and_run():
    """A loop in a loop body (a 2-level sum), bodies reading pass-through
    values and constants, and a carried value returned unchanged."""
    text = """\
graph @main(%n: i64[], %xs: f32[4,3]) {
  const %zero: f32[3] = [0.0, 0.0, 0.0]
  %t: f32[3], %k: f32[3] = loop(%n, %zero, %zero, %xs) {has_condition=false, num_carried=2} (body: graph @scan0(%scan0.i: i64[], %scan0.acc: f32[3], %scan0.keep: f32[3], %scan0.xs: f32[4,3]) {
    const %scan0.two: i64[] = 2
    %inner: f32[3] = loop(%scan0.two, %scan0.acc, %scan0.xs) {has_condition=false, num_carried=1} (body: graph @scan0.scan0(%scan0.scan0.j: i64[], %scan0.scan0.a: f32[3], %scan0.scan0.xs: f32[4,3]) {
      %x: f32[3] = gather(%scan0.scan0.xs, %scan0.scan0.j) {axis=0}
      %a1: f32[3] = add(%scan0.scan0.a, %x)
      return %a1
    })
    return %inner, %scan0.keep
  })
  return %t, %k
}
"""
    graph = parse_graph(text)
    verify(graph)
    n = 3
    _same_everywhere(graph, [np.int64(n), XS], [n * (XS[0] + XS[1]), np.zeros(3, np.float32)])


# -- type rules and explicit capture ---------------------------------------------
def _rejected(text: str, *fragments: str) -> str:
    graph = parse_graph(text)
    with pytest.raises(VerificationError) as info:
        verify(graph)
    for f in fragments:
        assert f in str(info.value), str(info.value)
    return str(info.value)


def test_a_body_reading_an_outer_value_is_rejected():
    """Capture is explicit: a body reads its inputs and constants only."""
    _rejected(PROGRAM.replace("add(%scan0.s, %x)", "add(%s0, %x)"),
              "loop: body graph @scan0 reads %s0", "capture explicitly")


def test_carried_types_must_agree():
    _rejected(PROGRAM.replace("return %s1, %s1", "return %scan0.xs, %s1"),
              "carried value 0 enters the body as f32[3] and leaves it as f32[T,3]")


def test_body_arity_and_condition_type_are_checked():
    _rejected(PROGRAM.replace("return %go, %h, %h", "return %h, %h, %h"), "condition must be bool[]")
    _rejected(PROGRAM.replace("(%n, %s0, %xs)", "(%n, %s0, %s0)"), "body input 2 %scan0.xs is f32[T,3]")
    _rejected(PROGRAM.replace("return %d", "return %if1.a, %if1.b"), "then graph returns 1 values, the else graph 2")


# -- generic passes ----------------------------------------------------------
def test_dce_keeps_what_a_body_reads_and_drops_an_unused_loop():
    graph = parse_graph(PROGRAM)
    graph.set_outputs(graph.outputs[:2])  # the while loop and the if are dead now
    assert get_pass("dce").run(graph) is True
    verify(graph)
    assert [n.op for n in graph] == ["loop"]
    assert [v.name for v in graph.inputs] == ["n", "s0", "xs", "v0"]
    assert list(graph.constants) == []  # %one was read by the dead while loop only
    want = [S0 + XS[:2].sum(0), S0 + np.cumsum(XS[:2], axis=0)]
    for g, w in zip(evaluate(graph, [np.int64(2), S0, XS, np.float32(1)]), want):
        np.testing.assert_array_equal(g, w)


def test_cse_and_constant_folding_leave_control_flow_alone():
    """Two identical loops are not merged and a loop on constants is not
    folded (passes see only the enclosing graph)."""
    text = PROGRAM.replace("%n: i64[], ", "").replace("%s0: f32[3], ", "")
    text = text.replace("  const %one: f32[] = 1.0\n",
                        "  const %one: f32[] = 1.0\n  const %n: i64[] = 2\n  const %s0: f32[3] = [1.0, 2.0, 3.0]\n")
    graph = parse_graph(text)
    before = print_graph(graph)
    for name in ("cse", "constant-folding"):
        get_pass(name).run(graph)
    verify(graph)
    assert [n.op for n in graph] == [n.op for n in parse_graph(before)]


def test_shape_inference_sees_through_loops():
    """``shape-inference`` infers body types, then the loop's outputs from
    the trip count's known value."""
    text = """\
graph @main(%xs: f32[T,3]) {
  const %zero: i64[] = 0
  %sh: i64[2] = shape(%xs)
  %n: i64[] = gather(%sh, %zero) {axis=0}
  %s0: f32[3] = gather(%xs, %zero) {axis=0}
  %s: f32[3], %ys: f32[?,3] = loop(%n, %s0) {has_condition=false, num_carried=1} (body: graph @scan0(%scan0.i: i64[], %scan0.s: f32[3]) {
    %d: f32[3] = add(%scan0.s, %scan0.s)
    return %d, %d
  })
  return %ys
}
"""
    graph = parse_graph(text)
    get_pass("shape-inference").run(graph)
    verify(graph)
    assert str(graph.outputs[0].type) == "f32[T,3]"


def test_types_of_a_hand_built_loop():
    """Building through the API: ``create_node`` infers the output types
    from the body."""
    g = Graph("main")
    n = g.add_input(TensorType(DType.INT64, ()), "n")
    s0 = g.add_input(TensorType(DType.FLOAT64, (2,)), "s0")
    body = Graph("scan0")
    i = body.add_input(TensorType(DType.INT64, ()), "scan0.i")
    s = body.add_input(TensorType(DType.FLOAT64, (2,)), "scan0.s")
    f = body.add("cast", [i], {"to": DType.FLOAT64})
    body.set_outputs([body.add("add", [s, f]), f])
    node = g.create_node("loop", [n, s0], {"num_carried": 1}, subgraphs={"body": body})
    g.append(node)
    g.set_outputs(list(node.outputs))
    verify(g)
    assert [str(v.type) for v in node.outputs] == ["f64[2]", "f64[?]"]
    out, steps = evaluate(g, [np.int64(3), np.zeros(2)])
    np.testing.assert_array_equal(out, [3.0, 3.0])
    np.testing.assert_array_equal(steps, [0.0, 1.0, 2.0])
