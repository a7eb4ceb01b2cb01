"""float64 convolutions: onnxruntime's CPU Conv (and AveragePool) has no
float64 kernel. By default compiling a float64 CNN raises an ``EmitError``
naming the op and the ``float64_conv`` option; with
``emit_options={"float64_conv": "float32"}`` it compiles with a
``UserWarning``, computes those ops in float32 and matches PyTensor to
float32 tolerance. Never a silent precision change: float32 graphs are
unaffected by the option and never warn."""

from __future__ import annotations

import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.signal import convolve2d
from pytensor.tensor.special import softmax

from backends.onnx import EmitError
from compiler import compile_to_onnx, nn
from tests.helpers import assert_same, pytensor_reference
from tests.nn import onnx_ops

RNG = np.random.default_rng(11)
FLOAT32_OPTION = {"float64_conv": "float32"}
ERROR = r"CPU {op} has no float64 kernel; emit with float64_conv='float32'"
WARNING = r"float64 {op} computes in float32"


def cnn(dtype: str):
    """conv 1->4 3x3 pad 1, relu, max pool 2, flatten, dense 10, softmax on
    (batch, 1, 6, 6) inputs of ``dtype``; returns ``([x], [probs])``."""
    x = pt.tensor("x", dtype=dtype, shape=(None, 1, 6, 6))
    W = pytensor.shared(RNG.normal(size=(4, 1, 3, 3)).astype(dtype), name="W")
    b = pytensor.shared(RNG.normal(size=4).astype(dtype), name="b")
    dense = pytensor.shared(RNG.normal(size=(36, 10)).astype(dtype) * 0.3, name="dense")
    h = nn.max_pool2d(nn.relu(nn.conv2d(x, W, b, padding=1)), 2)
    return [x], [softmax(nn.linear(nn.flatten(h), dense), axis=-1)]


def images(dtype: str, n: int = 3) -> np.ndarray:
    return RNG.uniform(0, 1, size=(n, 1, 6, 6)).astype(dtype)


def test_float64_cnn_raises_naming_the_op_and_the_option():
    inputs, outputs = cnn("float64")
    with pytest.raises(EmitError, match=ERROR.format(op="Conv")):
        compile_to_onnx(inputs, outputs=outputs)


def test_float64_cnn_written_by_hand_raises_too():
    x = pt.tensor("x", dtype="float64", shape=(None, 2, 5, 5))
    W = pytensor.shared(RNG.normal(size=(3, 2, 3, 3)), name="W")
    y = pt.maximum(convolve2d(x[:, None], W[None], mode="valid").sum(axis=2), 0)
    with pytest.raises(EmitError, match=ERROR.format(op="Conv")):
        compile_to_onnx([x], outputs=[y])


def test_float64_average_pool_raises():
    x = pt.tensor("x", dtype="float64", shape=(None, 2, 6, 6))
    with pytest.raises(EmitError, match=ERROR.format(op="AveragePool")):
        compile_to_onnx([x], outputs=[nn.avg_pool2d(x, 2)])


def test_opt_in_computes_in_float32_with_a_warning():
    inputs, outputs = cnn("float64")
    with pytest.warns(UserWarning, match=WARNING.format(op="Conv")):
        compiled = compile_to_onnx(inputs, outputs=outputs, emit_options=FLOAT32_OPTION)
    assert "Conv" in onnx_ops(compiled) and "Cast" in onnx_ops(compiled)
    values = [images("float64")]
    (want,) = pytensor_reference(inputs, outputs, values)
    (got,) = compiled.run(*values)
    assert got.dtype == np.float64
    assert_same(got, want, rtol=1e-5, atol=1e-6, what="float64 CNN via float32 Conv")
    # the warning is due: the result is not float64-exact
    assert np.max(np.abs(got - want)) > 1e-12


def test_opt_in_average_pool_warns_and_matches():
    x = pt.tensor("x", dtype="float64", shape=(None, 2, 6, 6))
    y = nn.avg_pool2d(x, 3, 1, 1, count_include_pad=False)
    with pytest.warns(UserWarning, match=WARNING.format(op="AveragePool")):
        compiled = compile_to_onnx([x], outputs=[y], emit_options=FLOAT32_OPTION)
    values = [RNG.normal(size=(2, 2, 6, 6))]
    (want,) = pytensor_reference([x], [y], values)
    assert_same(compiled.run(*values)[0], want, rtol=1e-5, atol=1e-6, what="float64 AveragePool via float32")


def test_float32_graphs_never_warn_and_keep_their_kernels():
    inputs, outputs = cnn("float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = compile_to_onnx(inputs, outputs=outputs, emit_options=FLOAT32_OPTION)
    assert onnx_ops(compiled) == ["Conv", "Relu", "MaxPool", "Flatten", "MatMul", "Softmax"]
    values = [images("float32")]
    (want,) = pytensor_reference(inputs, outputs, values)
    assert_same(compiled.run(*values)[0], want, rtol=1e-5, atol=1e-6, what="float32 CNN")
