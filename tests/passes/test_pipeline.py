"""The default pipeline: its names resolve, it reaches a fixpoint, and it
compiles the demo's 2-layer MLP (from the raw graph and from a default-mode
``pytensor.function``) to the four ONNX nodes a person would write (Gemm,
Relu, Gemm, Softmax), with the weights as initializers named after the shared
variables."""

from __future__ import annotations

import numpy as np
import onnx
import pytensor
import pytensor.tensor as pt
import pytest

from tests.helpers import compile_debug
from ir.interpreter import evaluate
from ir.parser import parse_graph
from passes import DEFAULT_PIPELINE, registered_passes, resolve_passes
from tests.helpers import assert_same, check_pytensor
from tests.passes.helpers import assert_same_numbers, check_pass

N_IN, N_HIDDEN, N_OUT, BATCH = 64, 32, 10, 7
# What a person would write: gemm-fusion makes each dense layer one Gemm.
MLP_OPS = ["Gemm", "Relu", "Gemm", "Softmax"]


def test_default_pipeline_names_registered_passes():
    assert DEFAULT_PIPELINE[-3:] == ["cse", "dce", "shape-inference"]
    assert set(DEFAULT_PIPELINE) <= set(registered_passes())
    assert [p.name for p in resolve_passes(DEFAULT_PIPELINE)] == DEFAULT_PIPELINE


def test_the_order_lets_folding_feed_the_rules_and_cse():
    # shape(x) and exp(0) fold to constants; then reshape-to-itself and
    # mul-by-one go; the bias keeps its name; the duplicate exp merges.
    check_pass(resolve_passes(DEFAULT_PIPELINE), """
        graph @main(%x: f32[2,3]) {
          const %z: f32[] = 0.0
          const %b: f32[3] = [1.0, 2.0, 3.0]
          %s: i64[2] = shape(%x)
          %e: f32[2,3] = exp(%x)
          %r: f32[2,3] = reshape(%e, %s)
          %one: f32[] = exp(%z)
          %m: f32[2,3] = mul(%r, %one)
          %u: f32[1,3] = unsqueeze(%b) {axes=[0]}
          %y: f32[2,3] = add(%m, %u)
          %e2: f32[2,3] = exp(%x)
          %w: f32[2,3] = sub(%y, %e2)
          return %w
        }""", """
        graph @main(%x: f32[2,3]) {
          const %b: f32[3] = [1.0, 2.0, 3.0]
          %e: f32[2,3] = exp(%x)
          %y: f32[2,3] = add(%e, %b)
          %w: f32[2,3] = sub(%y, %e)
          return %w
        }""")


def _mlp():
    """``softmax(maximum(x @ W1 + b1, 0) @ W2 + b2, axis=-1)`` in float32 with
    shared weights, as in ``compiler/tools/demo.py``."""
    rng = np.random.default_rng(42)
    x = pt.matrix("x", dtype="float32")
    params = {
        "W1": rng.uniform(-0.3, 0.3, size=(N_IN, N_HIDDEN)), "b1": rng.normal(size=N_HIDDEN) * 0.1,
        "W2": rng.uniform(-0.3, 0.3, size=(N_HIDDEN, N_OUT)), "b2": rng.normal(size=N_OUT) * 0.1,
    }
    shared = {k: pytensor.shared(v.astype(np.float32), name=k) for k, v in params.items()}
    hidden = pt.maximum(x @ shared["W1"] + shared["b1"], 0)
    probs = pt.special.softmax(hidden @ shared["W2"] + shared["b2"], axis=-1)
    values = rng.uniform(0, 1, size=(BATCH, N_IN)).astype(np.float32)
    return x, probs, shared, values


def _check_mlp_model(compiled, shared) -> None:
    ops = [n.op_type for n in compiled.model.graph.node]
    assert ops == MLP_OPS, ops
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in compiled.model.graph.initializer}
    for name, var in shared.items():
        assert name in inits, f"no initializer named {name}: {sorted(inits)}"
        np.testing.assert_array_equal(inits[name], var.get_value())
    assert compiled.input_names == ["x"]


def test_mlp_from_the_raw_graph():
    x, probs, shared, values = _mlp()
    compiled = check_pytensor([x], [probs], [values])  # onnxruntime, IR and PyTensor agree to 1e-6
    _check_mlp_model(compiled, shared)


def test_mlp_from_a_default_mode_function():
    x, probs, shared, values = _mlp()
    fn = pytensor.function([x], probs)
    compiled = compile_debug(fn)
    _check_mlp_model(compiled, shared)
    (got,) = compiled.run(values)
    assert_same(got, np.asarray(fn(values)), rtol=1e-6, atol=1e-6, what="onnxruntime vs pytensor.function")


@pytest.mark.parametrize("source", ["raw", "function"])
def test_pipeline_preserves_numbers_and_reaches_a_fixpoint(source):
    x, probs, shared, values = _mlp()
    graph = [x] if source == "raw" else pytensor.function([x], probs)
    compiled = compile_debug(graph, outputs=[probs] if source == "raw" else None)
    lowered = parse_graph(compiled.history[0].ir_text)
    assert_same_numbers(lowered, compiled.ir, sizes={"x_dim0": BATCH, "x_dim1": N_IN})
    np.testing.assert_array_equal(evaluate(compiled.ir, [values])[0], evaluate(lowered, [values])[0])
    again = resolve_passes(DEFAULT_PIPELINE)
    assert [p.run(compiled.ir) for p in again] == [False] * len(again)


def test_the_nn_passes_compose_on_a_hand_written_cnn():
    # conv-recovery, then the bias, then the batch norm folded into the
    # kernel before filter-flip flips it; relu, pool, flatten, then gemm.
    rng = np.random.default_rng(5)
    W = pytensor.shared(rng.normal(size=(4, 2, 3, 3)).astype(np.float32), name="W")
    b, gamma, beta, mean = (pytensor.shared(rng.normal(size=4).astype(np.float32), name=n)
                            for n in ("b", "gamma", "beta", "mean"))
    var = pytensor.shared(rng.uniform(0.5, 2, size=4).astype(np.float32), name="var")
    dense = pytensor.shared(rng.normal(size=(36, 5)).astype(np.float32), name="dense")
    bias = pytensor.shared(rng.normal(size=5).astype(np.float32), name="bias")

    def channel(v):
        return v[None, :, None, None]

    x = pt.tensor("x", dtype="float32", shape=(None, 2, 8, 8))
    y = pt.signal.convolve2d(x[:, None], W[None], mode="valid").sum(axis=2) + channel(b)
    y = (y - channel(mean)) / pt.sqrt(channel(var) + np.float32(1e-5)) * channel(gamma) + channel(beta)
    y = pt.maximum(y, 0).reshape((x.shape[0], 4, 3, 2, 3, 2)).max(axis=(3, 5))
    probs = pt.special.softmax(y.reshape((x.shape[0], -1)) @ dense + bias, axis=-1)
    values = [rng.normal(size=(3, 2, 8, 8)).astype(np.float32)]
    compiled = check_pytensor([x], [probs], values, rtol=1e-5, atol=1e-5)
    assert [n.op_type for n in compiled.model.graph.node] == ["Conv", "Relu", "MaxPool", "Flatten", "Gemm",
                                                              "Softmax"]
