"""Smaller models to ship (``compiler.core.deploy`` through ``CompiledModel``):
the digits CNN in float16 and int8 (dynamic, static QDQ) with their accuracy
reports checked against a recomputation, float16 through a Loop body and a
model-local function, calibration data in each accepted form, ``slim``, and
the ``.ort`` format loaded back in onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytensor
import pytensor.tensor as pt
from pytensor.tensor.special import softmax
import pytest
from scipy.special import gammaln as reference

from compiler.core import deploy
from compiler.core.driver import compile_to_onnx
from compiler.tools.demo import inference_graph, load_digits_split, train
from tests.web.cases import CASES, ifelse

SEED, EPOCHS = 0, 3  # test_demo's model: test accuracy 0.956 in float32, 0.950 in int8 static


@pytest.fixture(scope="module")
def cnn():
    data = load_digits_split(SEED)
    trained = train(data, epochs=EPOCHS, seed=SEED, log=None)
    inputs, outputs = inference_graph(trained.params)
    return compile_to_onnx(inputs, outputs=outputs), data


def _session(model: onnx.ModelProto):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _check_report(report, original, converted, x):
    """The report's numbers, recomputed here from both models' outputs."""
    (r,) = _session(original.model).run(None, {"x": x})
    (y,) = _session(converted.model).run(None, {"x": x})
    err = np.abs(y.astype(np.float64) - r)
    rel = err / np.maximum(np.abs(r.astype(np.float64)), report.rel_floor)
    assert report.n_feeds == 1 and report.n_values == r.size
    np.testing.assert_allclose([report.max_abs_error, report.mean_abs_error, report.max_rel_error,
                                report.mean_rel_error], [err.max(), err.mean(), rel.max(), rel.mean()], rtol=1e-12)
    assert report.argmax_agreement == np.mean(y.argmax(-1) == r.argmax(-1))
    assert report.size_bytes == len(converted.model.SerializeToString())
    assert report.original_size_bytes == len(original.model.SerializeToString())
    assert report.size_ratio == report.original_size_bytes / report.size_bytes
    assert report.max_abs_error > 0  # the conversion changed the numbers: the comparison saw them


def _accuracy(model, data) -> float:
    return float(np.mean(model.run(data.x_test)[0].argmax(-1) == data.y_test))


def test_int8_static_keeps_accuracy_within_one_point_and_is_over_2_5x_smaller(cnn):
    model, data = cnn
    batches = ({"x": data.x_train[i:i + 64]} for i in range(0, len(data.x_train), 64))  # a generator, read once
    small, report = model.quantize_static(batches, inputs=[data.x_test])
    assert report.conversion == "int8-static"
    assert _accuracy(small, data) >= _accuracy(model, data) - 0.01
    assert report.size_ratio >= 2.5, report
    ops = [n.op_type for n in small.model.graph.node]
    assert ops.count("QuantizeLinear") >= 4 and ops[-1] == "Softmax"  # the output stays float
    weights = {i.name: i for i in small.model.graph.initializer}
    assert weights["W2_quantized"].data_type == onnx.TensorProto.INT8
    scale = onnx.numpy_helper.to_array(weights["W2_scale"])
    assert scale.shape == (32,) and len(set(scale.tolist())) > 1  # per output channel
    assert [i.type.tensor_type.elem_type for i in small.model.graph.input] == [onnx.TensorProto.FLOAT]
    _check_report(report, model, small, data.x_test)


def test_float16_agrees_on_the_arg_max_of_99_percent_and_keeps_float32_io(cnn):
    model, data = cnn
    half, report = model.to_float16({"x": data.x_test})
    assert report.argmax_agreement >= 0.99 and abs(_accuracy(half, data) - _accuracy(model, data)) <= 0.01
    assert {i.data_type for i in half.model.graph.initializer} == {onnx.TensorProto.FLOAT16}
    io = [*half.model.graph.input, *half.model.graph.output]
    assert [v.type.tensor_type.elem_type for v in io] == [onnx.TensorProto.FLOAT] * 2
    assert half.run(data.x_test)[0].dtype == np.float32
    assert report.max_abs_error < 5e-3 and 1.8 < report.size_ratio < 2.2  # float16 rounding; half the weight bytes
    _check_report(report, model, half, data.x_test)


def test_int8_dynamic_quantizes_the_weights(cnn):
    model, data = cnn
    small, report = model.quantize_dynamic(data.x_test)
    assert "W3_quantized" in {i.name for i in small.model.graph.initializer}
    assert report.size_ratio >= 2.5 and _accuracy(small, data) >= _accuracy(model, data) - 0.01
    _check_report(report, model, small, data.x_test)


def test_the_original_model_is_untouched(cnn):
    model, data = cnn
    before = model.model.SerializeToString()
    model.quantize_dynamic(data.x_test[:8])
    assert model.model.SerializeToString() == before and model.run(data.x_test[:2])[0].dtype == np.float32


def test_ort_format_loads_with_the_same_outputs(cnn, tmp_path):
    model, data = cnn
    path = model.save_ort(tmp_path / "digits.ort")
    assert path.read_bytes()[4:8] == b"ORTM"  # the flatbuffer file identifier
    (y,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": data.x_test})
    np.testing.assert_allclose(y, model.run(data.x_test)[0], rtol=0, atol=1e-6)


@pytest.mark.filterwarnings("ignore:Scan return signature")  # PyTensor 3's notice; 2.38 has no other form
@pytest.mark.filterwarnings("ignore:the model holds 1 slow form")  # the Loop is what this test wants
def test_float16_through_a_loop_body_and_a_model_local_function():
    x = pt.vector("x", dtype="float32")
    ys, _ = pytensor.scan(lambda xi, acc: acc * np.float32(0.5) + pt.tanh(xi), sequences=[x],
                          outputs_info=[pt.constant(np.float32(0))])
    v = np.linspace(0.5, 3, 7).astype(np.float32)
    loop = compile_to_onnx([x], outputs=[ys[-1]])
    half, report = loop.to_float16([v])
    body = next(a.g for n in half.model.graph.node if n.op_type == "Loop" for a in n.attribute if a.name == "body")
    assert onnx.TensorProto.FLOAT16 in {v.type.tensor_type.elem_type for v in body.output}
    assert 0 < report.max_abs_error < 2e-3 and report.argmax_agreement is None

    func = compile_to_onnx([x], outputs=[pt.gammaln(x) * np.float32(2)])
    assert [f.name for f in func.model.functions] == ["GammaLn"]
    half, report = func.to_float16(v)
    gammaln = next(n for n in half.model.graph.node if n.op_type == "GammaLn")
    consumers = [n.op_type for n in half.model.graph.node if gammaln.output[0] in n.input]
    assert consumers == ["Cast"]  # float32 out of the call (the converter does not see function bodies)
    assert half.model.functions[0] == deploy.slim(func.model).functions[0]  # the body stays float32
    np.testing.assert_allclose(half.run(v)[0], 2 * reference(v.astype(np.float64)), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("given", ["array", "list", "dict", "dicts"])
def test_calibration_and_inputs_in_each_form_give_the_same_model(given):
    x = pt.matrix("x", dtype="float32")
    w = np.random.default_rng(0).normal(size=(16, 8)).astype(np.float32)
    model = compile_to_onnx([x], outputs=[pt.tanh(x @ w)])
    data = np.random.default_rng(1).normal(size=(32, 16)).astype(np.float32)
    forms = {"array": data, "list": [data], "dict": {"x": data}, "dicts": iter([{"x": data}])}
    reference, _ = model.quantize_static({"x": data})
    small, report = model.quantize_static(forms[given])
    assert small.model.SerializeToString() == reference.model.SerializeToString()
    assert report.n_feeds == 1 and report.n_values == 32 * 8


def test_bad_inputs_get_clear_errors():
    x = pt.matrix("x", dtype="float32")
    model = compile_to_onnx([x], outputs=[pt.tanh(x)])
    with pytest.raises(ValueError, match="no inputs given"):
        model.to_float16(None)
    with pytest.raises(ValueError, match=r"unknown input\(s\) y; missing input\(s\) x"):
        model.to_float16({"y": np.ones((2, 2), np.float32)})
    with pytest.raises(ValueError, match="2 arrays for the 1 inputs"):
        model.quantize_dynamic([np.ones((2, 2), np.float32)] * 2)
    with pytest.raises(ValueError, match="an empty iterable"):
        model.quantize_static(iter([]))
    with pytest.raises(ValueError, match="unknown conversion 'int4'"):
        deploy.convert(model.model, "int4")


def test_float16_through_if_bodies_with_ops_that_have_no_float16_form():
    """The browser job's If case: IsInf (no float16 form before opset 20)
    and CumSum (none at all) inside the branches stay float32 between Casts."""
    model, runs = ifelse()
    feeds = [dict(zip(model.input_names, r)) for r in runs]  # both branches
    half, report = model.to_float16(feeds)
    bodies = [a.g for n in half.model.graph.node if n.op_type == "If" for a in n.attribute]
    producer = {o: n for g in [half.model.graph, *bodies] for n in g.node for o in n.output}
    for op in ("IsInf", "CumSum"):
        node = next(n for g in bodies for n in g.node if n.op_type == op)
        assert producer[node.input[0]].op_type == "Cast"  # float32 in
    scale = max(np.abs(model.run(*r)[0]).max() for r in runs)
    assert report.n_feeds == 2 and 0 < report.max_abs_error < 1e-2 * scale


@pytest.mark.filterwarnings("ignore:the model holds")  # the Loop case's advisor notice
@pytest.mark.filterwarnings("ignore:Scan return signature")
@pytest.mark.parametrize("case", [c for c in CASES if c.name != "large_initializer"], ids=lambda c: c.name)
def test_every_browser_job_model_converts_and_runs(case):
    """float32/float64/int64 kernels, model-local functions, Loop, If: each
    converts three ways and its report covers every run (float64 and int64
    parts are left as they are: exact)."""
    model, runs = case.build()
    feeds = [dict(zip(model.input_names, r)) for r in runs]
    scale = max(float(np.abs(np.asarray(y, np.float64)).max()) for r in runs for y in model.run(*r))
    for small, report in (model.to_float16(feeds), model.quantize_dynamic(feeds), model.quantize_static(feeds)):
        assert report.n_feeds == len(runs) and report.max_abs_error <= 0.1 * scale, report
        assert len(small.run(*runs[0])) == len(model.output_names)


def test_float16_keeps_the_float64_accumulation_of_a_sum_past_float16s_range():
    """Our float32 sums accumulate in float64 (Cast, ReduceSum, Cast back):
    in the float16 model the Cast back targets float16, the sum itself
    (9e5 here, float16's largest is 65504) never is float16."""
    x = pt.vector("x", dtype="float32")
    model = compile_to_onnx([x], outputs=[pt.sum(x * x) / np.float32(1000)])
    assert [n.op_type for n in model.model.graph.node] == ["Mul", "Cast", "ReduceSum", "Cast", "Div"]
    v = np.full(1000, 30, np.float32)
    half, report = model.to_float16(v)
    assert half.run(v)[0] == np.float32(900) and report.max_abs_error == 0
    casts = [next(a.i for a in n.attribute if a.name == "to") for n in half.model.graph.node if n.op_type == "Cast"]
    assert casts == [onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
                     onnx.TensorProto.FLOAT]


def test_float16_clamps_only_outside_its_range_and_says_so():
    x = pt.vector("x", dtype="float32")
    c = np.array([3e4, 1e-7, 1e5, 1e-9, -np.inf, 65504], np.float32)  # two outside float16's range
    model = compile_to_onnx([x], outputs=[x * c])
    with pytest.warns(UserWarning, match=r"float16: 2 float32 constant value\(s\) outside"):
        half, _ = model.to_float16(np.ones(6, np.float32))
    np.testing.assert_allclose(half.run(np.ones(6, np.float32))[0],
                               np.array([3e4, 1e-7, 65504, 2 ** -24, -np.inf, 65504], np.float16).astype(np.float32),
                               rtol=0)


def test_a_gemm_with_a_scalar_bias_quantizes():
    """onnxruntime's quantizer fails on a Gemm whose bias is a scalar (``x @ W
    + 0.5``); the bias is repeated per column first."""
    x = pt.matrix("x", dtype="float32")
    w = np.random.default_rng(0).normal(size=(16, 8)).astype(np.float32)
    model = compile_to_onnx([x], outputs=[x @ w + np.float32(0.5)])
    gemm = next(n for n in model.model.graph.node if n.op_type == "Gemm")
    bias = {i.name: i for i in model.model.graph.initializer}[gemm.input[2]]
    assert list(bias.dims) in ([], [1])
    data = np.random.default_rng(1).normal(size=(32, 16)).astype(np.float32)
    for small, report in (model.quantize_static(data), model.quantize_dynamic(data)):
        assert report.max_abs_error < 0.1 * np.abs(model.run(data)[0]).max()
        assert "QuantizeLinear" in {n.op_type for n in small.model.graph.node} or \
            "DynamicQuantizeLinear" in {n.op_type for n in small.model.graph.node}


def test_slim_drops_provenance_and_value_info_and_keeps_what_onnxruntime_fuses(cnn):
    model, data = cnn
    assert any(n.doc_string for n in model.model.graph.node)  # provenance is there to drop
    raw = deploy.quantize_int8(model.model, [{"x": data.x_train[:64]}])
    slimmed = deploy.slim(raw)
    assert not any(n.doc_string or n.metadata_props for n in slimmed.graph.node) and not slimmed.graph.value_info
    assert raw.graph.value_info and slimmed.ByteSize() < raw.ByteSize()
    assert [list(n.input) for n in slimmed.graph.node] == [list(n.input) for n in raw.graph.node]
    (a,) = _session(raw).run(None, {"x": data.x_test})
    (b,) = _session(slimmed).run(None, {"x": data.x_test})
    np.testing.assert_array_equal(a, b)


def test_onnxruntime_fuses_the_static_int8_gemms_into_qgemm(tmp_path):
    """The quantized Gemms run as int8 kernels: onnxruntime's optimized
    graph has ``QGemm`` and no float ``Gemm`` left."""
    x = pt.matrix("x", dtype="float32")
    rng = np.random.default_rng(0)
    w1, b1, w2, b2 = (rng.normal(size=s).astype(np.float32) for s in [(16, 32), (32,), (32, 4), (4,)])
    model = compile_to_onnx([x], outputs=[softmax(pt.maximum(x @ w1 + b1, 0) @ w2 + b2, axis=-1)])
    assert [n.op_type for n in model.model.graph.node].count("Gemm") == 2
    small, _ = model.quantize_static(rng.normal(size=(64, 16)).astype(np.float32))
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    options.log_severity_level = 3
    ort.InferenceSession(small.model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    ops = [n.op_type for n in onnx.load(tmp_path / "optimized.onnx").graph.node]
    assert ops.count("QGemm") == 2 and "Gemm" not in ops, ops


@pytest.fixture()
def saved_mlp(tmp_path):
    """A small saved classifier (float32 (batch, 16) -> softmax (batch, 8)) and
    an .npz of inputs named after its input."""
    x = pt.matrix("x", dtype="float32")
    w = np.random.default_rng(0).normal(size=(16, 8)).astype(np.float32)
    model = compile_to_onnx([x], outputs=[softmax(x @ w, axis=-1)])
    model.save(tmp_path / "m.onnx")
    data = np.random.default_rng(1).normal(size=(64, 16)).astype(np.float32)
    np.savez(tmp_path / "data.npz", x=data)
    np.savez(tmp_path / "positional.npz", data)
    return model, data, tmp_path


@pytest.mark.parametrize("argv, conversion", [
    (["quantize", "m.onnx", "-o", "out.onnx", "--inputs", "data.npz"], "int8-dynamic"),
    (["quantize", "m.onnx", "-o", "out.onnx", "--mode", "static", "--calibration", "positional.npz"], "int8-static"),
    (["convert", "m.onnx", "-o", "out.onnx", "--to", "float16", "--inputs", "data.npz"], "float16"),
])
def test_cli_converts_a_saved_model_and_prints_its_report(argv, conversion, saved_mlp, capsys, monkeypatch):
    from compiler.tools.cli import main

    model, data, tmp = saved_mlp
    monkeypatch.chdir(tmp)
    assert main(argv) == 0
    out = capsys.readouterr().out
    converted = onnx.load(tmp / "out.onnx")
    report = deploy.compare(model.model, converted, [{"x": data}], conversion)
    assert out == f"wrote out.onnx\n{report}\n"
    assert f"{conversion}: {converted.ByteSize():,} bytes" in out and "arg-max agreement" in out


def test_cli_writes_ort_and_refuses_bad_input_in_one_line(saved_mlp, capsys, monkeypatch):
    from compiler.tools.cli import main

    model, data, tmp = saved_mlp
    monkeypatch.chdir(tmp)
    assert main(["convert", "m.onnx", "-o", "m.ort", "--to", "ort"]) == 0
    assert capsys.readouterr().out == "wrote m.ort\n"
    (y,) = ort.InferenceSession("m.ort", providers=["CPUExecutionProvider"]).run(None, {"x": data})
    np.testing.assert_allclose(y, model.run(data)[0], rtol=0, atol=1e-6)
    assert main(["quantize", "m.onnx", "-o", "q.onnx", "--mode", "static"]) == 1
    assert capsys.readouterr().err == ("pytensor-onnx quantize: ValueError: --mode static needs --calibration "
                                       "DATA.npz\n")
    np.savez(tmp / "bad.npz", y=data)
    assert main(["quantize", "m.onnx", "-o", "q.onnx", "--inputs", "bad.npz"]) == 1
    assert capsys.readouterr().err == ("pytensor-onnx quantize: ValueError: bad.npz holds y; the model's inputs are x "
                                       "(name them so, or save them as arr_0, arr_1, ... in order)\n")


def _scaled(c: float) -> onnx.ModelProto:
    """ONNX model ``x -> (x * c, argmax(x * c, axis=1))`` for float32 (n, 3) ``x``."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "c"], ["y"]), helper.make_node("ArgMax", ["y"], ["k"], axis=1, keepdims=0)],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3]),
         helper.make_tensor_value_info("k", TensorProto.INT64, ["n"])],
        [helper.make_tensor("c", TensorProto.FLOAT, [], [c])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=10)


def test_compare_covers_every_output_and_treats_equal_non_finite_values_as_exact():
    x = np.array([[1, -2, 3], [0.5, 2, 0], [4, 3.9, -1]], np.float32)
    feeds = deploy.input_feeds([{"x": x}, {"x": x[:1]}], ["x"])
    report = deploy.compare(_scaled(1.0), _scaled(1.5), feeds, "float16")
    r = np.concatenate([x, x[:1]]).astype(np.float64)
    y_err = np.abs((r.astype(np.float32) * np.float32(1.5)).astype(np.float64) - r).ravel()  # k: the same int64
    err = np.concatenate([y_err[:9], np.zeros(3), y_err[9:], np.zeros(1)])
    rel = err / np.maximum(np.abs(np.concatenate([r[:3].ravel(), r.argmax(1)[:3], r[3:].ravel(), [2]])), 1e-6)
    assert report.n_feeds == 2 and report.n_values == 12 + 4  # y and the int64 arg-max, both compared
    np.testing.assert_allclose([report.max_abs_error, report.mean_abs_error, report.max_rel_error,
                                report.mean_rel_error], [err.max(), err.mean(), rel.max(), rel.mean()], rtol=1e-12)
    assert report.argmax_agreement == 1.0

    z = np.array([[1, -2, 3], [0.5, np.nan, np.inf], [4, 3.9, -1]], np.float32)
    same = deploy.compare(_scaled(1.0), _scaled(1.0), [{"x": z}], "float16")
    assert (same.max_abs_error, same.max_rel_error, same.argmax_agreement) == (0.0, 0.0, 1.0)  # NaN, inf match
    flipped = deploy.compare(_scaled(1.0), _scaled(-1.0), [{"x": z}], "float16")
    assert flipped.max_abs_error == np.inf  # inf against -inf
    assert flipped.argmax_agreement == np.mean(np.argmax(-z, 1) == np.argmax(z, 1))  # NumPy's: a NaN wins
