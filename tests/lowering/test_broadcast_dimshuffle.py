"""A ``DimShuffle`` that only prepends broadcastable axes (``b[None, :]``,
the ``0`` of ``maximum(x, 0)``) is lowered only when something other than a
broadcasting ``Elemwise`` reads it (``LoweringContext.defer`` and
``broadcast_args``): NumPy broadcasting is right-aligned, so the Elemwise
reads the source and no ``unsqueeze`` is built, as long as one input keeps
the result's rank."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from compiler.lowering import graph_spec, lower
from ir.printer import print_graph
from tests.helpers import check_pytensor

RNG = np.random.default_rng(0)


def _ops(graph) -> list[str]:
    return [n.op for n in graph]


def test_bias_add_and_relu_read_their_constants_without_unsqueeze():
    x = pt.tensor("x", dtype="float32", shape=(None, 3))
    W = pytensor.shared(RNG.standard_normal((3, 2)).astype("float32"), name="W")
    b = pytensor.shared(RNG.standard_normal(2).astype("float32"), name="b")
    y = pt.maximum(x @ W + b, 0)
    graph = lower(graph_spec([x], [y])).graph
    assert _ops(graph) == ["matmul", "add", "maximum"], print_graph(graph)
    add = next(n for n in graph if n.op == "add")
    assert add.inputs[1].const is not None and add.inputs[1].rank == 1  # b itself, not b[None, :]
    m = check_pytensor([x], [y], [RNG.standard_normal((5, 3)).astype("float32")])
    assert [n.op_type for n in m.model.graph.node] == ["Gemm", "Relu"]


def test_an_expansion_read_by_another_op_is_lowered_once_with_its_own_origin():
    x = pt.tensor("x", dtype="float64", shape=(None, 3))
    v = pt.tensor("v", dtype="float64", shape=(3,))
    row = v[None, :]
    out = [x * row, pt.concatenate([x, row], axis=0)]
    graph = lower(graph_spec([x, v], out)).graph
    assert _ops(graph).count("unsqueeze") == 1, print_graph(graph)
    (mul,) = [n for n in graph if n.op == "mul"]
    assert mul.inputs[1].rank == 1  # the Elemwise still reads v itself
    (unsqueeze,) = [n for n in graph if n.op == "unsqueeze"]
    assert [o.op for o in unsqueeze.origins] == ["ExpandDims{axis=0}"]
    assert "row = v[None, :]" in unsqueeze.origins[0].source
    check_pytensor([x, v], out, [RNG.standard_normal((2, 3)), RNG.standard_normal(3)])


def test_an_expansion_that_is_a_graph_output_is_lowered():
    v = pt.vector("v", dtype="int32")
    out = [v[None, None, :], v + 1]
    graph = lower(graph_spec([v], out)).graph
    assert graph.outputs[0].type.rank == 3
    check_pytensor([v], out, [np.array([1, -2, 3], dtype="int32")])


def test_expansions_on_every_input_keep_the_result_rank():
    # without its leading axis no input has rank 2: both are lowered, the result is (1, n)
    a, b = pt.vector("a"), pt.vector("b")
    out = a[None, :] + b[None, :]
    m = check_pytensor([a, b], [out], [RNG.standard_normal(4), RNG.standard_normal(4)])
    assert m.ir.outputs[0].type.rank == 2
    assert _ops(lower(graph_spec([a, b], [out])).graph).count("unsqueeze") == 2


@pytest.mark.parametrize("build", [
    lambda x, v: pt.switch(v[None, :] > 0, x, v[None, :]),
    lambda x, v: pt.second(x, v[None, :]),  # fill: v broadcast to x's shape
    lambda x, v: pt.second(v[None, :], x),  # x broadcast against v's expansion
    lambda x, v: pt.clip(x, v[None, :], 1.5),
    lambda x, v: pt.where(pt.isnan(x), v[None, :], x) ** 2,
], ids=["switch", "fill-from-expansion", "fill-of-expansion", "clip", "where-pow"])
def test_scalar_rules_broadcast_the_source_like_the_expansion(build):
    x = pt.tensor("x", dtype="float64", shape=(None, 3))
    v = pt.tensor("v", dtype="float64", shape=(3,))
    out = build(x, v)
    xs = RNG.standard_normal((4, 3))
    xs[1, 2] = np.nan
    check_pytensor([x, v], [out], [xs, np.array([0.5, -1.0, np.inf])])


def test_fused_composite_of_a_compiled_function():
    # a compiled function's Composite reads the DimShuffle of its vector input
    x = pt.matrix("x", dtype="float64")
    v = pt.vector("v", dtype="float64")
    fn = pytensor.function([x, v], pt.exp(x + v) * 2 - v)
    m = compile_to_onnx(fn)
    xs, vs = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    np.testing.assert_allclose(m.run(xs, vs)[0], fn(xs, vs), rtol=1e-12)


def test_equal_dims_are_read_through_an_expansion():
    # PyTensor refuses to broadcast v's length against x's second dim at run time: so does run()
    x = pt.matrix("x", dtype="float32")
    v = pt.vector("v", dtype="float32")
    m = compile_to_onnx([x, v], outputs=[x + v])
    assert sorted(map(sorted, m.equal_dims)) == [[("v", 0), ("x", 1)]]
    ok = m.run(np.ones((2, 3), "float32"), np.arange(3, dtype="float32"))[0]
    np.testing.assert_array_equal(ok, np.ones((2, 3)) + np.arange(3))
    with pytest.raises(ValueError):
        m.run(np.ones((2, 3), "float32"), np.ones(1, "float32"))


def test_equal_dims_with_one_symbolic_input_dim():
    # one symbolic dim in all inputs: nothing to group, unless a size is required
    x = pt.tensor("x", dtype="float32", shape=(None, 3))
    assert compile_to_onnx([x], outputs=[pt.exp(x) + x[None, 0]]).equal_dims == []
    y = pt.tensor("y", dtype="float32", shape=(None, 3))
    m = compile_to_onnx([x, y], outputs=[x * 2, y + 1], input_shapes={"x": ["N", 3], "y": ["N", 3]})
    with pytest.raises(ValueError, match="N"):  # one dim_param for both: run() checks it
        m.run(np.ones((2, 3), "float32"), np.ones((3, 3), "float32"))
    m = compile_to_onnx([x], outputs=[pt.specify_shape(pt.exp(x), (4, 3))])
    assert m.equal_dims == [[("x", 0), (None, 4)]]
    with pytest.raises(ValueError):
        m.run(np.ones((2, 3), "float32"))
