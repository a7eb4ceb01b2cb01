"""Model-level properties of ``emit_model``/``save_model``/``make_session``:
versions, names of inputs, initializers and outputs, dims, output aliasing,
errors, and external data."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from backends.onnx import EmitError, emit_model, make_session, save_model
from ir import Graph, Node, TensorType
from ir.interpreter import evaluate
from ir.types import DType

F32, I64 = DType.FLOAT32, DType.INT64


def emit_checked(graph: Graph) -> onnx.ModelProto:
    model = emit_model(graph)
    onnx.checker.check_model(model, full_check=True)
    return model


def run(model: onnx.ModelProto, *arrays):
    session = make_session(model)
    return session.run(None, {i.name: a for i, a in zip(model.graph.input, arrays)})


def all_names(model: onnx.ModelProto) -> list[str]:
    g = model.graph
    return ([v.name for v in g.input] + [t.name for t in g.initializer]
            + [o for n in g.node for o in n.output] + [n.name for n in g.node])


def dims(value_info) -> list:
    out = []
    for d in value_info.type.tensor_type.shape.dim:
        out.append(d.dim_value if d.HasField("dim_value") else d.dim_param if d.HasField("dim_param") else None)
    return out


def affine_graph() -> Graph:
    g = Graph("affine")
    x = g.add_input(TensorType(F32, ("N", 3)), "x")
    w = g.add_constant(np.arange(6, dtype=np.float32).reshape(3, 2), "w")
    b = g.add_constant(np.float32([0.5, -1.0]), "b")
    y = g.add("add", [g.add("matmul", [x, w], name="xw"), b], name="y")
    g.set_outputs([y, g.add("reduce_sum", [y], {"axes": (1,)}, name="total")])
    return g


def test_versions_and_opset():
    model = emit_checked(affine_graph())
    assert model.ir_version == 10
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 18)]
    assert model.graph.name == "affine"
    assert model.producer_name == "pytensor-onnx"


def test_inputs_initializers_and_outputs_keep_their_names():
    model = emit_checked(affine_graph())
    assert [i.name for i in model.graph.input] == ["x"]
    assert [t.name for t in model.graph.initializer][:2] == ["w", "b"]
    assert [o.name for o in model.graph.output] == ["y", "total"]
    names = all_names(model)
    assert len(names) == len(set(names)), "names must be unique across the model"
    x = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    got = run(model, x)
    for g, w in zip(got, evaluate(affine_graph(), [x])):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_symbolic_and_unknown_dims_and_full_output_types():
    g = Graph()
    x = g.add_input(TensorType(F32, ("batch", None, 4)), "x")
    y = g.add("exp", [x])
    g.set_outputs([y, g.add("shape", [x])])
    model = emit_checked(g)
    assert dims(model.graph.input[0]) == ["batch", None, 4]
    assert model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    out0, out1 = model.graph.output
    assert dims(out0) == ["batch", None, 4] and out0.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert dims(out1) == [3] and out1.type.tensor_type.elem_type == onnx.TensorProto.INT64
    got = run(model, np.zeros((2, 5, 4), np.float32))
    assert got[0].shape == (2, 5, 4) and got[1].tolist() == [2, 5, 4]


def test_outputs_aliasing_inputs_constants_or_each_other_get_identities():
    g = Graph()
    x = g.add_input(TensorType(I64, (2,)), "x")
    k = g.add_constant(np.array([7, 8]), "k")
    s = g.add("add", [x, k], name="s")
    g.set_outputs([x, k, s, s, x])
    model = emit_checked(g)
    outputs = [o.name for o in model.graph.output]
    assert len(set(outputs)) == 5
    assert outputs[2] == "s"
    assert not {"x", "k"} & set(outputs), "an output may not be an input or initializer"
    assert sum(n.op_type == "Identity" for n in model.graph.node) == 4
    got = run(model, np.array([1, 2]))
    assert [v.tolist() for v in got] == [[1, 2], [7, 8], [8, 10], [8, 10], [1, 2]]


def test_output_names_fall_back_when_hints_clash():
    g = Graph()
    x = g.add_input(TensorType(F32, (2,)), "x")
    a = g.add("neg", [x], name="x")  # the hint is the input's name
    b = g.add("abs", [x])  # no hint
    c = g.add("exp", [x], name="output0")  # the fallback name of output 0
    g.set_outputs([a, b, c])
    model = emit_checked(g)
    names = [o.name for o in model.graph.output]
    assert names[0] != "x" and names[1] == "output1" and len(set(names)) == 3
    assert "x" in [i.name for i in model.graph.input]
    names = all_names(model)
    assert len(names) == len(set(names))
    got = run(model, np.float32([1, -2]))
    np.testing.assert_array_equal(got[0], [-1, 2])


def test_constant_and_input_with_the_same_name():
    g = Graph()
    k = g.add_constant(np.float32([1, 2]), "x")  # named before the input exists
    x = g.add_input(TensorType(F32, (2,)), "x")
    g.set_outputs([g.add("sub", [x, k])])
    model = emit_checked(g)
    assert [i.name for i in model.graph.input] == ["x"]
    (init,) = model.graph.initializer
    assert init.name != "x" and init.name.startswith("x")
    assert not {i.name for i in model.graph.input} & {t.name for t in model.graph.initializer}
    np.testing.assert_array_equal(run(model, np.float32([5, 5]))[0], [4, 3])


def test_scalar_constants_stay_rank_zero():
    g = Graph()
    x = g.add_input(TensorType(F32, ()), "x")
    g.set_outputs([g.add("mul", [x, g.add_constant(np.float32(3), "three")])])
    model = emit_checked(g)
    assert list(model.graph.initializer[0].dims) == []
    assert dims(model.graph.output[0]) == []
    assert run(model, np.array(2, np.float32))[0].shape == ()


def test_every_node_and_value_name_is_unique_in_a_graph_with_control_flow():
    g = Graph()
    x = g.add_input(TensorType(I64, (3, 4)), "x")
    p = g.add("cumprod", [x], {"axis": 1}, name="p")
    q = g.add("pow", [x, g.add_constant(np.int64(3), "three")], name="p")
    g.set_outputs([p, g.add("reduce_prod", [q], {"axes": (0,)})])
    model = emit_checked(g)
    names = all_names(model)
    for node in model.graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                body = attr.g
                names += [v.name for v in body.input] + [o for n in body.node for o in n.output]
                names += [n.name for n in body.node]
    assert len(names) == len(set(names))
    xs = np.arange(12).reshape(3, 4) - 5
    for got, want in zip(run(model, xs), evaluate(g, [xs])):
        np.testing.assert_array_equal(got, want)


def test_missing_rule_names_the_op():
    g = Graph()
    x = g.add_input(TensorType(F32, (2,)), "x")
    node = g.append(Node("mystery_op", [x], {}, [x.type]))
    g.set_outputs([node.output])
    with pytest.raises(EmitError, match="mystery_op"):
        emit_model(g)


def test_nodes_with_subgraphs_are_rejected():
    g = Graph()
    x = g.add_input(TensorType(F32, (2,)), "x")
    node = g.append(Node("neg", [x], {}, [x.type], subgraphs={"body": Graph("body")}))
    g.set_outputs([node.output])
    with pytest.raises(EmitError, match="subgraphs"):
        emit_model(g)


def test_duplicate_input_names_are_rejected():
    g = Graph()
    a = g.add_input(TensorType(F32, (2,)), "a")
    b = g.add_input(TensorType(F32, (2,)), "a")
    g.set_outputs([g.add("add", [a, b])])
    with pytest.raises(EmitError, match="'a'"):
        emit_model(g)


def test_opset_below_18_is_rejected():
    with pytest.raises(EmitError, match="opset 17"):
        emit_model(affine_graph(), opset=17)


def test_session_runs_on_cpu():
    session = make_session(emit_checked(affine_graph()))
    assert session.get_providers() == ["CPUExecutionProvider"]


def test_save_small_model_inline(tmp_path):
    model = emit_checked(affine_graph())
    path = tmp_path / "m.onnx"
    save_model(model, path)
    assert list(tmp_path.iterdir()) == [path]
    loaded = onnx.load(path)
    assert [t.name for t in loaded.graph.initializer] == [t.name for t in model.graph.initializer]


def test_save_with_external_data_round_trips(tmp_path):
    g = Graph()
    x = g.add_input(TensorType(F32, (1000,)), "x")
    big = np.random.default_rng(1).normal(size=1000).astype(np.float32)
    g.set_outputs([g.add("mul", [x, g.add_constant(big, "weights")])])
    model = emit_checked(g)
    path = tmp_path / "big.onnx"
    save_model(model, path, external_data_threshold=1000)
    data = tmp_path / "big.onnx.data"
    assert data.exists() and data.stat().st_size >= big.nbytes
    assert path.stat().st_size < big.nbytes, "initializer bytes must live in the data file"
    assert model.graph.initializer[0].HasField("raw_data") or model.graph.initializer[0].float_data, \
        "save_model must not strip the caller's model"
    loaded = onnx.load(path)
    onnx.checker.check_model(loaded, full_check=True)
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(loaded.graph.initializer[0]), big)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    xs = np.ones(1000, np.float32)
    np.testing.assert_array_equal(session.run(None, {"x": xs})[0], big)
    size = data.stat().st_size
    save_model(model, path, external_data_threshold=1000)  # saving again replaces the data file
    assert data.stat().st_size == size
