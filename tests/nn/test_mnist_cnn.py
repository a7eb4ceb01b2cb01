"""The issue's acceptance network: the classic MNIST CNN (input (batch, 1,
28, 28) float32 with a symbolic batch; conv 32 3x3 valid, relu, max pool 2,
conv 64 3x3, relu, max pool 2, flatten, dense 128, relu, dense 10, softmax)
with random weights.

Built with ``compiler.nn`` it compiles with the default pipeline to at most
11 ONNX nodes (torch.onnx's dynamo exporter emits 11) and matches PyTensor
to 1e-5. Written by hand without the helpers (``convolve2d(x[:, None],
W[None], mode="valid").sum(axis=2)`` plus a bias, ``maximum(., 0)``,
reshape-max pooling, a reshape flatten, ``dot`` plus a bias, softmax) it
compiles, through the recovery passes, to the same operators in the same
order, from the raw graph and from ``pytensor.function``s compiled in the
default and the C mode, in float32 and float64, with static or symbolic
batch, H and W (run at 28x28 and 32x32)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode, get_default_mode
from pytensor.tensor.signal import convolve2d
from pytensor.tensor.special import softmax

from compiler import compile_to_onnx, nn
from tests.helpers import assert_same, check_pytensor, pytensor_reference
from tests.nn import onnx_ops

NODE_BUDGET = 11
MNIST_OPS = ["Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool", "Flatten", "Gemm", "Relu", "Gemm", "Softmax"]
TOL = {"rtol": 1e-5, "atol": 1e-5}


def flat_size(image: int) -> int:
    """The flattened features of an ``image`` x ``image`` input: two valid
    3x3 convs, each followed by a floor-mode 2x2 pool (1600 at 28, 2304 at 32)."""
    side = ((image - 2) // 2 - 2) // 2
    return 64 * side * side


def weights(seed: int = 0, image: int = 28) -> dict[str, np.ndarray]:
    """He-scaled random float32 weights of the network for ``image`` x
    ``image`` inputs (no dataset needed)."""
    rng = np.random.default_rng(seed)
    shapes = {"W1": (32, 1, 3, 3), "b1": (32,), "W2": (64, 32, 3, 3), "b2": (64,),
              "W3": (flat_size(image), 128), "b3": (128,), "W4": (128, 10), "b4": (10,)}
    out = {}
    for name, shape in shapes.items():
        fan_in = int(np.prod(shape[1:])) if name.startswith("W") and len(shape) == 4 else shape[0]
        scale = np.sqrt(2 / fan_in) if name.startswith("W") else 0.1
        out[name] = (rng.normal(size=shape) * scale).astype(np.float32)
    return out


def mnist_input():
    return pt.tensor("x", dtype="float32", shape=(None, 1, 28, 28))


def with_helpers(w: dict):
    """The network built with ``compiler.nn``; returns ``([x], [probs])``."""
    p = {k: pytensor.shared(v, name=k) for k, v in w.items()}
    x = mnist_input()
    h = nn.max_pool2d(nn.relu(nn.conv2d(x, p["W1"], p["b1"])), 2)
    h = nn.max_pool2d(nn.relu(nn.conv2d(h, p["W2"], p["b2"])), 2)
    h = nn.relu(nn.linear(nn.flatten(h), p["W3"], p["b3"]))
    return [x], [softmax(nn.linear(h, p["W4"], p["b4"]), axis=-1)]


def by_hand(w: dict, dtype: str = "float32", spatial: tuple = (28, 28)):
    """The same network in plain PyTensor. ``convolve2d`` is a true
    convolution, so its kernels are the helpers' kernels rotated 180 degrees
    (then both networks compute the same function). ``spatial``: the
    input's static H and W, or ``(None, None)`` for symbolic ones."""
    p = {k: pytensor.shared(np.ascontiguousarray(v[:, :, ::-1, ::-1] if v.ndim == 4 else v).astype(dtype), name=k)
         for k, v in w.items()}
    x = pt.tensor("x", dtype=dtype, shape=(None, 1, *spatial))

    def conv(h, W, b):
        return convolve2d(h[:, None], W[None], mode="valid").sum(axis=2) + b[None, :, None, None]

    def max_pool(h, channels: int):
        # floor-mode 2x2 pooling: crop to even sizes, split each spatial axis in two
        half_h, half_w = h.shape[2] // 2, h.shape[3] // 2
        h = h[:, :, :2 * half_h, :2 * half_w]
        return h.reshape((h.shape[0], channels, half_h, 2, half_w, 2)).max(axis=(3, 5))

    h = max_pool(pt.maximum(conv(x, p["W1"], p["b1"]), 0), 32)
    h = max_pool(pt.maximum(conv(h, p["W2"], p["b2"]), 0), 64)
    h = h.reshape((h.shape[0], -1))
    h = pt.maximum(pt.dot(h, p["W3"]) + p["b3"], 0)
    return [x], [softmax(pt.dot(h, p["W4"]) + p["b4"], axis=-1)]


@pytest.fixture(scope="module")
def batch() -> np.ndarray:
    return np.random.default_rng(1).uniform(0, 1, size=(3, 1, 28, 28)).astype(np.float32)


@pytest.fixture(scope="module")
def helpers_model(batch):
    inputs, outputs = with_helpers(weights())
    return inputs, outputs, check_pytensor(inputs, outputs, [batch], **TOL)


@pytest.fixture(scope="module")
def hand_model(batch):
    inputs, outputs = by_hand(weights())
    return inputs, outputs, check_pytensor(inputs, outputs, [batch], **TOL)


def test_with_helpers_at_most_11_nodes(helpers_model):
    _, _, compiled = helpers_model
    assert len(compiled.model.graph.node) <= NODE_BUDGET
    assert onnx_ops(compiled) == MNIST_OPS


def test_with_helpers_weights_are_the_named_initializers(helpers_model):
    _, _, compiled = helpers_model
    onnx.checker.check_model(compiled.model, full_check=True)
    convs = [n for n in compiled.model.graph.node if n.op_type == "Conv"]
    assert [list(n.input)[1:] for n in convs] == [["W1", "b1"], ["W2", "b2"]]
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in compiled.model.graph.initializer}
    for name, value in weights().items():
        np.testing.assert_array_equal(inits[name], value)


@pytest.mark.parametrize("model", ["helpers_model", "hand_model"])
@pytest.mark.parametrize("size", [1, 5])
def test_symbolic_batch(model, size, request):
    inputs, outputs, compiled = request.getfixturevalue(model)
    (x,) = compiled.model.graph.input
    assert x.type.tensor_type.shape.dim[0].dim_param
    value = np.random.default_rng(size).uniform(0, 1, size=(size, 1, 28, 28)).astype(np.float32)
    (want,) = pytensor_reference(inputs, outputs, [value])
    assert_same(compiled.run(value)[0], want, what=f"batch {size}", **TOL)


def test_by_hand_compiles_to_the_same_operators(hand_model, helpers_model):
    _, _, hand = hand_model
    _, _, helpers = helpers_model
    assert Counter(onnx_ops(hand)) == Counter(onnx_ops(helpers))
    assert onnx_ops(hand) == MNIST_OPS


def test_both_forms_compute_the_same_function(hand_model, helpers_model, batch):
    (by_hand_probs,) = hand_model[2].run(batch)
    (helpers_probs,) = helpers_model[2].run(batch)
    np.testing.assert_allclose(by_hand_probs, helpers_probs, **TOL)


C_MODE = Mode(linker="cvm", optimizer="fast_run")


# (static H and W, or symbolic ones; the image size the weights are for)
IMAGES = [pytest.param((28, 28), 28, id="static-28"), pytest.param((None, None), 28, id="symbolic-28"),
          pytest.param((None, None), 32, id="symbolic-32")]
# compiling PyTensor functions is the slow part: the 32x32 twin of each compiled-function case is a slow test
COMPILED_IMAGES = IMAGES[:2] + [pytest.param(*IMAGES[2].values, id="symbolic-32", marks=pytest.mark.slow)]


@pytest.mark.parametrize("spatial, image", IMAGES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_by_hand_raw_graph(spatial, image, dtype):
    """The raw graph with static or symbolic H and W: the 11 operators. With
    symbolic sizes PyTensor's valid ``convolve2d`` has ``abs(H-3)+1`` rows;
    the recovered Conv needs ``H >= 3`` and then has ``H-2``
    (``Rewriter.assume``), and the floor-division shape arithmetic of the
    pooling becomes MaxPool's floor mode."""
    inputs, outputs = by_hand(weights(image=image), dtype, spatial)
    values = [np.random.default_rng(image).uniform(0, 1, size=(2, 1, image, image)).astype(dtype)]
    (want,) = pytensor_reference(inputs, outputs, values)
    native = compile_to_onnx(inputs, outputs=outputs, emit_options={"float64_conv": "native"})
    assert onnx_ops(native) == MNIST_OPS
    (x,) = native.model.graph.input
    assert [bool(d.dim_param) for d in x.type.tensor_type.shape.dim] == [True, False] + [s is None for s in spatial]
    tol = TOL if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12}
    if dtype == "float32":
        assert_same(native.run(*values)[0], want, what="raw graph", **tol)
    else:  # the default float64 form (no onnxruntime double Conv)
        assert_same(compile_to_onnx(inputs, outputs=outputs).run(*values)[0], want, what="raw graph", **tol)


@pytest.mark.parametrize("spatial, image", COMPILED_IMAGES)
@pytest.mark.parametrize("mode", ["default", "c"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_by_hand_from_a_compiled_function(mode, dtype, spatial, image):
    """PyTensor's rewrites move the pooling crop inside the channel sum, sum
    float32 in float64 between casts, check the shapes of the weights at run
    time and use Dot22; with symbolic H and W its shape inference spells
    ``abs(H-3)+1`` as ``max(H,3)+1-min(H,3)`` and the crops and reshapes
    through ``where``s of comparisons. conv-recovery, the size facts and
    the shape facts follow, and the compiled function gives the raw graph's
    11 operators (float64 Conv natively; by default its exact float64 form,
    to 1e-12)."""
    inputs, outputs = by_hand(weights(image=image), dtype, spatial)
    fn = pytensor.function(inputs, outputs, mode=get_default_mode() if mode == "default" else C_MODE)
    values = [np.random.default_rng(image).uniform(0, 1, size=(3, 1, image, image)).astype(dtype)]
    (want,) = pytensor_reference(inputs, outputs, values)
    if dtype == "float32":
        compiled = compile_to_onnx(fn)
        assert onnx_ops(compiled) == MNIST_OPS
        assert_same(compiled.run(*values)[0], want, what=f"{mode} mode", **TOL)
    else:
        native = compile_to_onnx(fn, emit_options={"float64_conv": "native"})
        assert onnx_ops(native) == MNIST_OPS
        compiled = compile_to_onnx(fn)
        assert "Conv" not in onnx_ops(compiled)
        assert_same(compiled.run(*values)[0], want, what=f"{mode} mode", rtol=1e-12, atol=1e-12)
