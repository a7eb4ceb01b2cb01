"""Models whose weights exceed the external-data threshold: compile, save
(model + ``<file>.data``), reload, run, compare with PyTensor. The main
suite lowers the threshold to test the path at tens of MB; the slow job
runs a real > 2 GB model."""

import tracemalloc

import numpy as np
import onnx
import onnx.numpy_helper
import onnxruntime as ort
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx


def _model(n_rows: int, n_cols: int = 1024):
    w = np.empty((n_rows, n_cols), np.float32)  # owns its buffer (``ir.core.frozen`` once read-only)
    step = 1 << 14  # row blocks: a > 2 GB model must not cost several copies here
    for i in range(0, n_rows, step):
        w[i:i + step] = (np.arange(i * n_cols, min(i + step, n_rows) * n_cols) % 7 - 3).reshape(-1, n_cols)
    W = pytensor.shared(w, name="W", borrow=True)
    x = pt.vector("x", dtype="float32", shape=(n_cols,))
    return x, W, W @ x  # a MatMul: no weight-sized intermediate in onnxruntime


def _check(tmp_path, n_rows, **options):
    """Compile with the default passes, run, save, reload and run again."""
    x, W, y = _model(n_rows)
    m = compile_to_onnx([x], outputs=[y], **options)
    xv = np.linspace(-1, 1, 1024, dtype=np.float32)
    w = W.get_value(borrow=True)
    step = 1 << 14  # row blocks: the float64 reference costs one block, not a copy of the weights
    want = np.concatenate([w[i:i + step].astype(np.float64) @ xv.astype(np.float64)
                           for i in range(0, len(w), step)]).astype(np.float32)
    assert m.uses_external_data
    got = m.run(xv)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    path = tmp_path / "big.onnx"
    m.save(path)
    data = tmp_path / "big.onnx.data"
    assert data.exists() and data.stat().st_size >= w.nbytes
    assert path.stat().st_size < 1 << 20  # the weights are not in the protobuf
    loaded = onnx.load(str(path), load_external_data=False)
    locations = {t.name: t.data_location for t in loaded.graph.initializer}
    assert locations["W"] == onnx.TensorProto.EXTERNAL
    del m  # one onnxruntime session with the weights at a time
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": xv})[0], want, rtol=1e-5, atol=1e-3)


def test_weights_past_a_lowered_threshold_go_to_external_data(tmp_path):
    _check(tmp_path, 16 * 1024, external_data_threshold=32 << 20)  # 64 MiB of weights


@pytest.mark.parametrize("writable", [True, False], ids=["writable", "read-only"])
def test_compile_memory_is_at_most_one_copy_of_the_weights(writable):
    """Issue 11: compiling takes at most 1.5x the weight size in extra
    memory. A writable shared value is copied once (the model must not
    change when the user's array does); a read-only one is borrowed
    (``ir.core.frozen``). Measured by ``tracemalloc`` (NumPy reports its
    buffers to it) over ``compile_to_onnx`` with the default passes."""
    x, W, y = _model(16 * 1024)  # 64 MiB
    w = W.get_value(borrow=True)
    w.setflags(write=writable)
    tracemalloc.start()
    try:
        m = compile_to_onnx([x], outputs=[y], external_data_threshold=32 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert m.uses_external_data
    assert peak <= (1.5 if writable else 0.05) * w.nbytes, peak / w.nbytes
    xv = np.linspace(-1, 1, 1024, dtype=np.float32)
    np.testing.assert_allclose(m.run(xv)[0][:64], w[:64].astype(np.float64) @ xv, rtol=1e-5, atol=1e-3)


def test_small_models_stay_one_file(tmp_path):
    x, W, y = _model(4)
    m = compile_to_onnx([x], outputs=[y])
    assert not m.uses_external_data
    m.save(tmp_path / "small.onnx")
    assert not (tmp_path / "small.onnx.data").exists()
    weights = {t.name: t for t in onnx.load(str(tmp_path / "small.onnx")).graph.initializer}
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(weights["W"]), W.get_value(borrow=True))


@pytest.mark.slow
def test_a_model_over_2_gb_compiles_saves_reloads_and_runs(tmp_path):
    _check(tmp_path, 530 * 1024)  # 2.07 GiB of float32 weights, protobuf's limit as threshold
