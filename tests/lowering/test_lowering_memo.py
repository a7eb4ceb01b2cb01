"""Lowering builds nodes of constants only once (hash-consing) and replays a
scalar rule's recorded IR instead of running it again
(``LoweringContext.add_multi`` / ``memoized``): the IR is the one running
every rule would build, up to the shared nodes, and computes the same
numbers."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest

from compiler.lowering import graph_spec, lower
from compiler.lowering.context import LoweringContext
from ir import DType, Graph, TensorType
from ir.interpreter import evaluate
from ir.printer import print_graph
from tests.helpers import check_pytensor

RNG = np.random.default_rng(0)


def _lowered(inputs, outputs, *, replay: bool = True, monkeypatch=None):
    if not replay:
        monkeypatch.setattr(LoweringContext, "memoized", lambda self, key, args, build: build())
    graph = lower(graph_spec(inputs, outputs)).graph
    if not replay:
        monkeypatch.undo()
    return graph


def _zero_column():
    """A fresh PyTensor constant int8 zero vector made a (4, 1) column: a
    trailing axis, so lowering builds an unsqueeze (and, against float32, a
    cast) of it."""
    return pt.constant(np.zeros(4, "int8")).dimshuffle(0, "x")


def test_equal_constant_subgraphs_lower_to_one_value():
    x = pt.tensor("x", dtype="float32", shape=(4, None))
    y = pt.maximum(x, _zero_column())
    z = pt.maximum(y * x, _zero_column())  # a second, equal PyTensor constant, unsqueezed and cast again
    graph = lower(graph_spec([x], [z])).graph
    ops = [n.op for n in graph]
    assert ops.count("unsqueeze") == 1 and ops.count("cast") == 1, print_graph(graph)
    unsqueeze = next(n for n in graph if n.op == "unsqueeze")
    (cast,) = unsqueeze.outputs[0].uses()
    readers = [u.node.op for u in cast.node.outputs[0].uses()]
    assert readers == ["maximum", "maximum"]
    values = [RNG.standard_normal((4, 3)).astype("float32")]
    check_pytensor([x], [z], values)


def test_interned_node_lists_every_origin():
    x = pt.tensor("x", dtype="float32", shape=(4, None))
    y = pt.maximum(x, _zero_column())
    z = pt.minimum(y, _zero_column())  # the same unsqueeze and cast, for another op on another line
    graph = lower(graph_spec([x], [z])).graph
    cast = [n for n in graph if n.op == "cast"]
    assert len(cast) == 1
    assert {o.op for o in cast[0].origins} == {"Maximum", "Minimum"}


def test_constants_with_different_values_stay_apart():
    x = pt.vector("x", dtype="float64")
    out = [x * 2.0, x * 3.0, x * -0.0, x * 0.0, x ** 2, x ** 3]
    graph = lower(graph_spec([x], out)).graph
    values = [np.array([1.5, -2.0, np.inf, 0.0])]
    with np.errstate(invalid="ignore"):  # inf * 0
        got = evaluate(graph, values)
        want = [values[0] * 2, values[0] * 3, values[0] * -0.0, values[0] * 0.0,
                values[0] ** 2, values[0] ** 3]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
    finite = [np.array([1.5, -2.0, 0.25])]
    check_pytensor([x], [out[0], out[1], out[4], out[5]], finite)  # PyTensor rewrites x * 0.0 to 0


def test_random_nodes_are_not_interned():
    g = Graph("g")
    ctx = LoweringContext(g)
    shape = ctx.i64([3])
    a = ctx.add("random_uniform", [shape], {"dtype": DType.FLOAT32, "seed": 1})
    b = ctx.add("random_uniform", [shape], {"dtype": DType.FLOAT32, "seed": 1})
    assert a is not b and len(g) == 2


def test_float_attributes_compare_by_bits():
    g = Graph("g")
    ctx = LoweringContext(g)
    k = ctx.const(np.array([-1.0, 2.0]))
    pos = ctx.add("leaky_relu", [k], {"alpha": 0.0})
    neg = ctx.add("leaky_relu", [k], {"alpha": -0.0})
    again = ctx.add("leaky_relu", [k], {"alpha": 0.0})
    assert pos is not neg and again is pos and len(g) == 2
    assert np.signbit(evaluate_node(neg)[0]) != np.signbit(evaluate_node(pos)[0])  # -0.0 * -1 vs 0.0 * -1


def evaluate_node(value):
    from ir.ops import get_op

    node = value.producer
    return get_op(node.op).evaluate([v.const for v in node.inputs], node.attrs)[0]


def test_replayed_lowering_equals_running_every_rule(monkeypatch):
    x = pt.matrix("x", dtype="float32")
    n = pt.vector("n", dtype="int32")
    y = x
    for _ in range(5):
        y = pt.cos(y) * y + n  # int32 input: cast to float32 in each add
        y = pt.switch(y > 0, y, -y)
    out = [y, pt.polygamma(0, y), pt.polygamma(1, y), pt.sqr(y), y // 2, n % 3, n % 4]
    replayed = _lowered([x, n], out)
    ran = _lowered([x, n], out, replay=False, monkeypatch=monkeypatch)
    assert print_graph(replayed) == print_graph(ran)
    assert [node.origins for node in replayed] == [node.origins for node in ran]
    values = [RNG.standard_normal((3, 4)).astype("float32"), np.array([1, -2, 5, 7], dtype="int32")]
    check_pytensor([x, n], out, values, rtol=1e-5)


def test_constant_order_is_read_per_node():
    x = pt.vector("x", dtype="float64")
    out = [pt.polygamma(0, x), pt.polygamma(1, x), pt.polygamma(0, x + 1)]
    graph = lower(graph_spec([x], out)).graph
    ops = [n.op for n in graph]
    assert ops.count("psi") == 2 and ops.count("trigamma") == 1, print_graph(graph)
    check_pytensor([x], out, [np.array([0.5, 2.0, 7.25])])


def test_replay_keys_on_types():
    g = Graph("g")
    ctx = LoweringContext(g)
    a = g.add_input(TensorType(DType.FLOAT32, ("N",)), "a")
    b = g.add_input(TensorType(DType.INT32, ("N",)), "b")
    c = g.add_input(TensorType(DType.FLOAT32, (3,)), "c")
    calls = []

    def build(v):
        calls.append(v)
        return [ctx.add("neg", [ctx.cast(v, DType.FLOAT32)])]

    first = ctx.memoized(("neg",), [a], lambda: build(a))
    second = ctx.memoized(("neg",), [a], lambda: build(a))  # replayed: a new node, same form
    third = ctx.memoized(("neg",), [b], lambda: build(b))  # another dtype: run again
    fourth = ctx.memoized(("neg",), [c], lambda: build(c))  # another shape: run again
    assert calls == [a, b, c]
    assert first[0] is not second[0] and second[0].producer.op == "neg" and second[0].producer.inputs == (a,)
    assert third[0].producer.inputs[0].producer.op == "cast"
    assert fourth[0].type == TensorType(DType.FLOAT32, (3,))


def test_types_of_rules_that_read_constants_are_inferred_per_constant():
    g = Graph("g")
    ctx = LoweringContext(g)
    x = g.add_input(TensorType(DType.FLOAT32, (6,)), "x")
    a = ctx.add("reshape", [x, ctx.i64([2, 3])])
    b = ctx.add("reshape", [x, ctx.i64([3, 2])])  # same input types, another constant: another type
    c = ctx.add("reshape", [x, ctx.i64([2, 3])])
    assert (a.type.shape, b.type.shape, c.type.shape) == ((2, 3), (3, 2), (2, 3))
    w1, w2 = ctx.const(np.ones((6, 2), "float32")), ctx.const(np.zeros((6, 2), "float32"))
    y = g.add_input(TensorType(DType.FLOAT32, ("N", 6)), "y")
    assert ctx.add("matmul", [y, w1]).type == ctx.add("matmul", [y, w2]).type == TensorType(DType.FLOAT32, ("N", 2))


def test_a_rule_folding_a_constant_argument_is_replayed_for_that_constant_only():
    g = Graph("g")
    ctx = LoweringContext(g)
    x = g.add_input(TensorType(DType.FLOAT32, ("N",)), "x")
    zero, three = ctx.const(np.int8(0)), ctx.const(np.int8(3))
    big = ctx.const(np.arange(17, dtype="int8"))  # not shared by value: never pinned
    calls = []

    def build(k):
        calls.append(k)
        return [ctx.add("maximum", [x, ctx.cast(k, DType.FLOAT32)])]

    results = [ctx.memoized(("max",), [x, k], lambda k=k: build(k)) for k in (zero, zero, three, three)]
    assert calls == [zero, three]  # the second use of each constant is replayed
    folded = [r[0].producer.inputs[1] for r in results]
    assert [float(f.const) for f in folded] == [0.0, 0.0, 3.0, 3.0] and folded[0] is folded[1]
    assert ctx.const(np.int8(0)) is zero  # equal small constants are one value: what pinning relies on

    def build_big(k):
        calls.append(k)
        return [ctx.add("cast", [k], {"to": DType.FLOAT32})]

    ctx.memoized(("big",), [big], lambda: build_big(big))
    ctx.memoized(("big",), [big], lambda: build_big(big))  # did not fold: replayed by type
    assert calls[2:] == [big]


def test_maximum_with_constants_of_other_dtypes_matches_pytensor(monkeypatch):
    x = pt.vector("x", dtype="float32")
    out = [pt.maximum(x, np.int8(0)), pt.maximum(x * 2, np.int8(0)), pt.maximum(x, np.int8(3)),
           pt.minimum(x, np.int16(-2)), pt.maximum(x + 1, np.int8(3))]
    replayed = _lowered([x], out)
    ran = _lowered([x], out, replay=False, monkeypatch=monkeypatch)
    assert print_graph(replayed) == print_graph(ran)
    check_pytensor([x], out, [np.array([-4.0, -0.5, 0.0, 2.5, 7.0], "float32")])


def test_an_elemwise_is_lowered_once_per_argument_signature_and_replayed(monkeypatch):
    import pytensor.scalar as ps
    from pytensor.tensor.elemwise import Elemwise

    from compiler.lowering.rules import elemwise

    a, b = ps.float32(), ps.float32()
    fused = Elemwise(ps.Composite([a, b], [ps.exp(a) * b + ps.log1p(b), a - b]))
    x = pt.matrix("x", dtype="float32")
    v = pt.vector("v", dtype="float32")
    first, _ = fused(x, x * 2)
    second, _ = fused(first, x)  # the same signature: replayed
    third, diff = fused(x, v[None, :])  # v's expansion: another signature (rank 1): run again
    runs = []
    real = elemwise._lower_elemwise
    monkeypatch.setattr(elemwise, "_lower_elemwise", lambda ctx, node, args: runs.append(node) or real(ctx, node, args))
    out = [second, third, diff]
    replayed = _lowered([x, v], out)
    assert [n.op for n in runs].count(fused) == 2  # and the Mul of x * 2 once
    monkeypatch.undo()
    ran = _lowered([x, v], out, replay=False, monkeypatch=monkeypatch)
    assert print_graph(replayed) == print_graph(ran)
    values = [RNG.uniform(0.1, 1, (3, 4)).astype("float32"), RNG.uniform(0.1, 1, 4).astype("float32")]
    check_pytensor([x, v], out, values, rtol=1e-5)
