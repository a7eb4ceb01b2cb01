"""The digits demo end to end: the CNN trained with ``compiler.nn`` and
``pytensor.grad``, compiled with the default pipeline to the nine ONNX nodes
a person would write, and onnxruntime against PyTensor on the test split;
the MLP behind ``--model mlp``; the console script's report."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from backends.onnx.provenance import node_origins
from compiler.tools.demo import (MODELS, DemoReport, adam_updates, format_histogram, format_report, load_digits_split,
                           run_demo)

EPOCHS = 3  # ~0.97 test accuracy with seed 0; the default (10) reaches ~0.98
CNN_OPS = ["Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool", "Flatten", "Gemm", "Softmax"]
CNN_HISTOGRAM = {"Conv": 2, "Relu": 2, "MaxPool": 2, "Flatten": 1, "Gemm": 1, "Softmax": 1}
MLP_HISTOGRAM = {"Gemm": 2, "Relu": 1, "Softmax": 1}


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[DemoReport, object]:
    out = tmp_path_factory.mktemp("demo")
    return run_demo(out, epochs=EPOCHS, seed=0, log=None), out


def test_demo_onnxruntime_matches_pytensor(demo):
    report, _ = demo
    assert report.model == "cnn"
    assert report.predictions_identical
    assert report.max_abs_diff <= 1e-5
    assert report.test_accuracy_onnx == report.test_accuracy_pytensor
    assert report.test_accuracy_pytensor >= 0.9
    assert report.ok


def test_demo_cnn_node_count_and_op_histogram(demo):
    report, _ = demo
    assert report.node_count == 9
    assert report.op_histogram == CNN_HISTOGRAM, format_histogram(report.op_histogram)
    assert report.op_histogram == MODELS["cnn"].expected_ops


def test_demo_writes_a_valid_model_and_ir_dumps(demo):
    report, out = demo
    assert report.model_path == out / "model.onnx"
    model = onnx.load(report.model_path)
    onnx.checker.check_model(model, full_check=True)
    assert [n.op_type for n in model.graph.node] == CNN_OPS
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    assert [list(n.input)[1:] for n in convs] == [["W1", "b1"], ["W2", "b2"]]  # biases fused, weights named
    (x,) = model.graph.input
    dims = x.type.tensor_type.shape.dim
    assert x.name == "x" and x.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert [d.dim_value for d in dims[1:]] == [1, 8, 8] and dims[0].dim_param
    assert {"W1", "b1", "W2", "b2", "W3", "b3"} <= {init.name for init in model.graph.initializer}
    names = [p.name for p in report.ir_files]
    assert names[0] == "00-lowered.ir" and len(names) >= 2
    assert all((out / "ir" / name).read_text().startswith("graph @main(") for name in names)


def test_the_saved_model_holds_no_absolute_path(demo):
    # the web demo ships this file: provenance names files relative to the current directory
    report, out = demo
    data = report.model_path.read_bytes()
    assert os.getcwd().encode() not in data and str(out).encode() not in data
    sources = {o["source"] for n in onnx.load(report.model_path).graph.node for o in node_origins(n)}
    assert sources and not any(os.path.isabs(s.split(":")[0]) for s in sources), sources


def test_saved_model_is_the_one_that_was_checked(demo):
    report, _ = demo
    data = load_digits_split(0)
    session = ort.InferenceSession(str(report.model_path), providers=["CPUExecutionProvider"])
    (probs,) = session.run(None, {"x": data.x_test})
    assert probs.dtype == np.float32 and probs.shape == (360, 10)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    assert np.mean(probs.argmax(axis=1) == data.y_test) == report.test_accuracy_onnx


def test_mlp_model_is_still_available(tmp_path):
    report = run_demo(tmp_path, model="mlp", epochs=2, seed=0, log=None)
    assert report.op_histogram == MLP_HISTOGRAM, format_histogram(report.op_histogram)
    assert report.max_abs_diff <= 1e-6 and report.ok
    assert report.test_accuracy_pytensor >= 0.85
    (x,) = onnx.load(report.model_path).graph.input
    assert [d.dim_value for d in x.type.tensor_type.shape.dim[1:]] == [64]


def test_unknown_model_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="unknown model 'resnet'; known: cnn, mlp"):
        run_demo(tmp_path, model="resnet", epochs=1, log=None)


def test_load_digits_split_is_stratified_and_scaled():
    data = load_digits_split(0)
    assert data.x_train.shape == (1437, 1, 8, 8) and data.x_test.shape == (360, 1, 8, 8)
    assert data.x_train.dtype == np.float32 and data.y_train.dtype == np.int64
    assert data.x_train.min() == 0.0 and data.x_train.max() == 1.0
    # stratified: each class holds the same share of both splits, to one image
    train_counts = np.bincount(data.y_train, minlength=10)
    test_counts = np.bincount(data.y_test, minlength=10)
    assert np.all(np.abs(test_counts - (train_counts + test_counts) * 0.2) <= 1)


def test_adam_updates_match_numpy_reference():
    import pytensor
    import pytensor.tensor as pt

    p0 = np.array([0.5, -1.5, 3.0], dtype=np.float32)
    p = pytensor.shared(p0.copy(), name="p")
    target = pt.vector("target", dtype="float32")
    loss = pt.sum(pt.sqr(p - target))
    step = pytensor.function([target], loss, updates=adam_updates([p], [pytensor.grad(loss, p)], lr=0.1),
                             mode="FAST_COMPILE")
    targets = [np.array([1.0, 2.0, -1.0], np.float32), np.array([0.0, 0.5, 0.25], np.float32)]

    # Kingma & Ba (2015), Algorithm 1, in float64
    want, m, v = p0.astype(np.float64), 0.0, 0.0
    for t, tgt in enumerate(targets, 1):
        step(tgt)
        g = 2 * (want - tgt)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        want = want - 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-8)
        assert p.get_value().dtype == np.float32
        np.testing.assert_allclose(p.get_value(), want, rtol=1e-6, atol=1e-6)


def test_format_report_lists_every_number(tmp_path):
    ir = tmp_path / "ir"
    report = DemoReport(epochs=1, seed=0, final_loss=0.5, train_accuracy=0.9, test_accuracy_pytensor=0.95,
                        test_accuracy_onnx=0.95, predictions_identical=False, max_abs_diff=2.5e-7,
                        node_count=10, op_histogram={"Conv": 2, "Relu": 2, "MaxPool": 2, "Reshape": 1, "MatMul": 1,
                                                     "Add": 1, "Softmax": 1},
                        compile_seconds=0.0123, train_seconds=1.5, model_path=tmp_path / "model.onnx", model="cnn",
                        ir_files=[ir / "00-lowered.ir", ir / "01-canonicalize.ir", ir / "02-dce.ir"])
    text = format_report(report)
    assert text.startswith("== pytensor-onnx demo: digits CNN ==")
    assert "identical predictions:        NO" in text
    assert "max abs probability diff:     2.500e-07  (tolerance 1e-05)" in text
    assert "ONNX nodes:                   10  (over the budget of 9)" in text
    assert ("ONNX ops:                     Conv x2, Relu x2, MaxPool x2, Reshape x1, MatMul x1, Add x1, "
            "Softmax x1") in text
    assert "compile time:                 12.3 ms" in text
    assert f"IR dumps:                     {ir}/ (3 files: 00-lowered.ir ... 02-dce.ir)" in text
    assert not report.ok and text.endswith("MISMATCH between PyTensor and onnxruntime")
    report.predictions_identical = True
    assert report.ok
    report.model = "mlp"  # the MLP's tolerance is 1e-6
    assert report.ok and "tolerance 1e-06" in format_report(report)
    report.max_abs_diff = 2e-6
    assert not report.ok


def test_console_script_demo(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "compiler.tools.cli", "demo", "--out", str(out), "--epochs", "2"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split()[:2] for line in lines if line.startswith("epoch")] == [["epoch", "1/2"], ["epoch", "2/2"]]
    assert "== pytensor-onnx demo: digits CNN ==" in lines
    assert "identical predictions:        yes" in lines
    assert "ONNX nodes:                   9" in lines
    assert "ONNX ops:                     Conv x2, Relu x2, MaxPool x2, Flatten x1, Gemm x1, Softmax x1" in lines
    assert f"wrote:                        {out / 'model.onnx'}" in lines
    assert lines[-1] == "result:                       OK"
    acc = {line.split(":")[0]: float(line.split()[-1]) for line in lines if line.startswith("test accuracy")}
    assert acc["test accuracy (PyTensor)"] == acc["test accuracy (onnxruntime)"] >= 0.85
    assert (out / "model.onnx").is_file() and (out / "ir" / "00-lowered.ir").is_file()
