"""Acceptance of dynamic shapes on real models: the digits MLP and a small
CNN (convolve2d, ReLU, reshape-max pooling, flatten) exported with a
symbolic batch run at batch 1, 7 and 64; the CNN with symbolic H and W has
symbolic output dims in the IR dump and runs at 28x28 and 32x32; with
``example_inputs`` neither model computes a shape at run time."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.signal import convolve2d

from compiler import compile_to_onnx
from compiler.tools.demo import inference_graph, init_mlp_params
from compiler.core.shapes import onnx_shape_disagreements
from tests.helpers import assert_same, pytensor_reference
from tests.shapes.helpers import SHAPE_PIPELINE, assert_declared_shapes, onnx_dims, shape_arithmetic

RNG = np.random.default_rng(3)


def mlp():
    return inference_graph(init_mlp_params(0, hidden=16), "mlp")


def cnn_features(x, kernels):
    """conv 1->4 3x3 valid (convolve2d), relu, 2x2 max pool (reshape form)."""
    y = convolve2d(x[:, :, None], kernels[None], mode="valid").sum(axis=1)
    y = pt.maximum(y, 0)
    n, c, h, w = y.shape
    return y.reshape((n, c, h // 2, 2, w // 2, 2)).max(axis=(3, 5))


def cnn(spatial=(12, 12)):
    """``([x], [probs])``: features, flatten via ``reshape((n, -1))``, dense, softmax."""
    kernels = pytensor.shared(RNG.normal(size=(4, 3, 3)).astype("float32"), name="kernels")
    x = pt.tensor("x", dtype="float32", shape=(None, 1, *spatial))
    features = cnn_features(x, kernels)
    flat = features.reshape((features.shape[0], -1))
    size = 4 * ((spatial[0] - 2) // 2) * ((spatial[1] - 2) // 2)
    dense = pytensor.shared(RNG.normal(size=(size, 10)).astype("float32") * 0.1, name="dense")
    probs = pt.special.softmax(flat @ dense, axis=-1)
    return [x], [probs]


def run_at_batches(compiled, inputs, outputs, features: int, batches=(1, 7, 64)) -> None:
    for batch in batches:
        shape = (batch, features) if len(inputs[0].type.shape) == 2 else (batch, *inputs[0].type.shape[1:])
        value = RNG.normal(size=shape).astype("float32")
        (want,) = pytensor_reference(inputs, outputs, [value])
        (got,) = compiled.run(value)
        assert_same(got, want, rtol=1e-5, atol=1e-6, what=f"batch {batch}")
        assert_declared_shapes(compiled.ir, [value])


@pytest.mark.parametrize("make, features", [(mlp, 64), (cnn, None)], ids=["mlp", "cnn"])
def test_symbolic_batch_runs_at_batch_1_7_64(make, features):
    inputs, outputs = make()
    rank = len(inputs[0].type.shape)
    compiled = compile_to_onnx(inputs, outputs=outputs, passes=SHAPE_PIPELINE, check_dynamic=True, value_info=True,
                               input_shapes={"x": ("batch",) + (None,) * (rank - 1)})
    graph = compiled.model.graph
    assert onnx_dims(graph.input[0])[0] == "batch" and onnx_dims(graph.output[0]) == ["batch", 10]
    assert onnx_shape_disagreements(compiled.model) == []
    run_at_batches(compiled, inputs, outputs, features)


def test_cnn_with_symbolic_height_and_width(tmp_path):
    kernels = pytensor.shared(RNG.normal(size=(4, 3, 3)).astype("float32"), name="kernels")
    x = pt.tensor("x", dtype="float32", shape=(None, 1, None, None))
    features = cnn_features(x, kernels)
    flat = features.reshape((features.shape[0], -1))
    compiled = compile_to_onnx([x], outputs=[features, flat], passes=SHAPE_PIPELINE, check_dynamic=True,
                               input_shapes={"x": ("N", 1, "H", "W")}, dump_ir=tmp_path, value_info=True)
    dump = sorted(tmp_path.glob("*.ir"))[-1].read_text()
    pooled = "f32[N,4,(abs(H-3)+1)//2,(abs(W-3)+1)//2]"
    flattened = "f32[N,4*((abs(H-3)+1)//2)*((abs(W-3)+1)//2)]"
    assert f": {pooled} = reduce_max(" in dump and f": {flattened} = reshape(" in dump
    assert [onnx_dims(o) for o in compiled.model.graph.output] == [
        ["N", 4, "(abs(H-3)+1)//2", "(abs(W-3)+1)//2"], ["N", "4*((abs(H-3)+1)//2)*((abs(W-3)+1)//2)"]]
    assert onnx_shape_disagreements(compiled.model) == []
    for side in (28, 32):
        value = RNG.normal(size=(2, 1, side, side + 2)).astype("float32")
        want = pytensor_reference([x], [features, flat], [value])
        got = compiled.run(value)
        for g, w in zip(got, want):
            assert_same(g, w, rtol=1e-5, atol=1e-6, what=f"{side}x{side + 2}")
        assert got[1].shape == (2, 4 * ((side - 2) // 2) * (side // 2))
        assert_declared_shapes(compiled.ir, [value])


@pytest.mark.parametrize("make, shape", [(mlp, (7, 64)), (cnn, (7, 1, 12, 12))], ids=["mlp", "cnn"])
def test_example_inputs_leave_no_shape_arithmetic(make, shape):
    inputs, outputs = make()
    value = RNG.normal(size=shape).astype("float32")
    dynamic = compile_to_onnx(inputs, outputs=outputs, passes=SHAPE_PIPELINE)
    compiled = compile_to_onnx(inputs, outputs=outputs, passes=SHAPE_PIPELINE, example_inputs=[value],
                               check_dynamic=True)
    assert shape_arithmetic(compiled.model) == []
    assert make is mlp or shape_arithmetic(dynamic.model)  # the CNN's reshapes need shapes when dynamic
    assert onnx_dims(compiled.model.graph.input[0]) == list(shape)
    (want,) = pytensor_reference(inputs, outputs, [value])
    assert_same(compiled.run(value)[0], want, rtol=1e-5, atol=1e-6, what="specialized")
