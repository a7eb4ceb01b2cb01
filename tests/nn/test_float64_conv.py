"""float64 convolutions: onnxruntime's CPU Conv (and AveragePool) has no
float64 kernel. By default a float64 CNN compiles to the exact float64
forms of ``backends/onnx/rules/window_f64.py`` (no Conv, no Cast) and
matches PyTensor to 1e-12, groups, strides, dilations and pads included;
a padded float32 CNN whose ``pt.pad`` upcasts to float64 is such a CNN.
With ``emit_options={"float64_conv": "float32"}`` it compiles with a
``UserWarning``, computes those ops in float32 and matches PyTensor to
float32 tolerance. Never a silent precision change: float32 graphs are
unaffected by the option and never warn. A kernel whose size is known only
at run time (``convolve1d``/``convolve2d`` of two inputs) is exact too: its
windows are gathered (issue 31; PyTensor's JAX suite's ``test_convolve1d``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.signal
from pytensor.compile.mode import Mode, get_default_mode
from pytensor.tensor import dmatrix
from pytensor.tensor.signal import convolve1d, convolve2d
from pytensor.tensor.special import softmax

from compiler import compile_to_onnx, nn
from compiler.core.advisor import SlowFormWarning
from tests.helpers import assert_same, pytensor_reference
from tests.nn import onnx_ops

RNG = np.random.default_rng(11)
FLOAT32_OPTION = {"float64_conv": "float32"}
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


EXACT = {"rtol": 1e-12, "atol": 1e-12}


def _exact(inputs, outputs, values, casts=0):
    """Compile by default with warnings as errors; assert no Conv or
    AveragePool, ``casts`` Casts (None: any number; the shape arithmetic of
    symbolic sizes may cast ints) and a match to 1e-12; returns the model."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = compile_to_onnx(inputs, outputs=outputs)
    # the one warning: the performance advisor's summary of the exact (slow) forms
    assert [w.category for w in caught] == [SlowFormWarning], [str(w.message) for w in caught]
    assert "float64-window" in {a.kind for a in compiled.advice}
    assert not {"Conv", "AveragePool"} & set(onnx_ops(compiled)), onnx_ops(compiled)
    assert casts is None or onnx_ops(compiled).count("Cast") == casts
    for got, want in zip(compiled.run(*values), pytensor_reference(inputs, outputs, values)):
        assert got.dtype == np.float64
        assert_same(got, want, what="exact float64", **EXACT)
    return compiled


def test_float64_cnn_is_exact_by_default():
    inputs, outputs = cnn("float64")
    _exact(inputs, outputs, [images("float64")])


@pytest.mark.parametrize("groups, stride, dilation, padding", [
    (1, 1, 1, 0), (2, 2, 1, 1), (4, 1, 2, 2), (2, (2, 1), (1, 2), (1, 0)), (1, 3, 2, 3)])
@pytest.mark.parametrize("hw", [(9, 8), (None, None)])
def test_float64_conv_parameters_match_to_1e_12(groups, stride, dilation, padding, hw):
    x = pt.tensor("x", dtype="float64", shape=(None, 4, *hw))
    W = pytensor.shared(RNG.normal(size=(8, 4 // groups, 3, 2)), name="W")
    b = pytensor.shared(RNG.normal(size=8), name="b")
    y = nn.conv2d(x, W, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    _exact([x], [y], [RNG.normal(size=(2, 4, 9, 8))])


@pytest.mark.parametrize("stride, dilation", [(1, 1), (2, 2)])
def test_float64_depthwise_conv_matches_to_1e_12(stride, dilation):
    x = pt.tensor("x", dtype="float64", shape=(None, 4, None, None))
    W = pytensor.shared(RNG.normal(size=(4, 1, 3, 3)), name="W")
    b = pytensor.shared(RNG.normal(size=4), name="b")
    y = nn.conv2d(x, W, b, stride=stride, padding=1, dilation=dilation, groups=4)
    compiled = _exact([x], [y], [RNG.normal(size=(2, 4, 9, 8))])
    assert "MatMul" not in onnx_ops(compiled)  # one Mul per tap


@pytest.mark.parametrize("kernel, stride, padding, count_include_pad", [
    (2, None, 0, True), (3, 1, 1, False), (3, 2, 1, True), ((3, 2), (1, 2), (1, 0), False)])
@pytest.mark.parametrize("hw", [(7, 6), (None, None)])
def test_float64_average_pool_matches_to_1e_12(kernel, stride, padding, count_include_pad, hw):
    x = pt.tensor("x", dtype="float64", shape=(None, 2, *hw))
    y = nn.avg_pool2d(x, kernel, stride, padding, count_include_pad=count_include_pad)
    _exact([x], [y], [RNG.normal(size=(3, 2, 7, 6))])


def test_float64_cnn_written_by_hand_is_exact():
    x = pt.tensor("x", dtype="float64", shape=(None, 2, 5, 5))
    W = pytensor.shared(RNG.normal(size=(3, 2, 3, 3)), name="W")
    y = pt.maximum(convolve2d(x[:, None], W[None], mode="valid").sum(axis=2), 0)
    _exact([x], [y], [RNG.normal(size=(2, 2, 5, 5))])


def test_padded_float32_cnn_upcast_by_pt_pad_compiles_by_default():
    """``pt.pad`` of a float32 tensor returns float64: the convolution that
    follows is float64, emitted exactly."""
    for hw in ((6, 7), (None, None)):
        x = pt.tensor("x", dtype="float32", shape=(None, 1, *hw))
        W = pytensor.shared(RNG.normal(size=(4, 1, 3, 3)).astype("float32"), name="W")
        h = pt.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
        assert h.dtype == "float64"
        y = pt.maximum(convolve2d(h[:, None], W[None], mode="valid").sum(axis=2), 0)
        for size in ((6, 7),) if hw[0] else ((6, 7), (9, 5)):
            compiled = _exact([x], [y], [RNG.uniform(size=(2, 1, *size)).astype("float32")], casts=1)
            assert onnx_ops(compiled).count("MatMul") == 1


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


def test_native_option_emits_float64_conv():
    inputs, outputs = cnn("float64")
    compiled = compile_to_onnx(inputs, outputs=outputs, emit_options={"float64_conv": "native"})
    assert "Conv" in onnx_ops(compiled) and "Cast" not in onnx_ops(compiled)


def test_float32_graphs_never_warn_and_keep_their_kernels():
    inputs, outputs = cnn("float32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = compile_to_onnx(inputs, outputs=outputs, emit_options=FLOAT32_OPTION)
    assert onnx_ops(compiled) == ["Conv", "Relu", "MaxPool", "Flatten", "MatMul", "Softmax"]
    values = [images("float32")]
    (want,) = pytensor_reference(inputs, outputs, values)
    assert_same(compiled.run(*values)[0], want, rtol=1e-5, atol=1e-6, what="float32 CNN")


# -- kernels whose size is known only at run time ------------------------------------------------------
REWRITTEN = Mode(linker="py", optimizer=get_default_mode().optimizer)  # the default rewrites, nothing compiled


def _exact_with_function(inputs, outputs, values, scipy_values):
    """``_exact`` from the raw graph, then the model of a function compiled
    with the default rewrites against that function, and both against
    ``scipy_values`` (SciPy's direct float64 convolution) to 1e-12. Inner
    graphs PyTensor's references compile (``OpFromGraph``) run in Python."""
    with pytensor.config.change_flags(mode="FAST_COMPILE"):
        compiled = _exact(inputs, outputs, values, casts=None)
        fn = pytensor.function(inputs, outputs, mode=REWRITTEN)
        reference = fn(*values)
    from_function = compile_to_onnx(fn)
    assert not {"Conv", "AveragePool"} & set(onnx_ops(from_function))
    for got, want, exact in zip(from_function.run(*values), reference, scipy_values):
        assert_same(got, want, what="compiled function", **EXACT)
        assert_same(got, exact, what="SciPy", **EXACT)
    for got, exact in zip(compiled.run(*values), scipy_values):
        assert_same(got, exact, what="SciPy", **EXACT)


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize("sizes", [(9, 4), (3, 7)], ids=["kernel shorter", "kernel longer"])
def test_float64_convolve1d_with_a_kernel_of_symbolic_length(mode, sizes):
    """``convolve1d`` of two vectors of symbolic lengths (scipy swaps the
    operands of a valid convolution whose kernel is the longer) and of a
    batch of rows against one kernel: the exact float64 form gathers the
    windows (``window_f64.conv_f64_gathered``)."""
    x, k, batch = pt.dvector("x"), pt.dvector("k"), pt.dmatrix("batch")
    values = [RNG.normal(size=sizes[0]), RNG.normal(size=sizes[1]), RNG.normal(size=(3, sizes[0]))]
    outputs = [convolve1d(x, k, mode=mode), convolve1d(batch, k, mode=mode)]
    want = [scipy.signal.convolve(values[0], values[1], mode=mode, method="direct"),
            np.stack([scipy.signal.convolve(row, values[1], mode=mode, method="direct") for row in values[2]])]
    _exact_with_function([x, k, batch], outputs, values, want)


@pytest.mark.parametrize("mode", ["valid", "full"])
@pytest.mark.parametrize("kernel", [(2, 3), (7, 5)], ids=["kernel smaller", "kernel larger"])
def test_float64_convolve2d_with_a_kernel_of_symbolic_size(mode, kernel):
    """``convolve2d`` of a batch of images and a kernel whose dims are both
    symbolic, broadcast over the batch, and per image with a batch of
    kernels (a batch axis both operands vary along needs its size static):
    exact float64, SciPy's values to 1e-12."""
    x, k = pt.tensor("x", dtype="float64", shape=(2, None, None)), pt.dmatrix("k")
    ks = pt.tensor("ks", dtype="float64", shape=(2, None, None))
    values = [RNG.normal(size=(2, 5, 4)), RNG.normal(size=kernel), RNG.normal(size=(2, *kernel))]
    outputs = [convolve2d(x, k, mode=mode), convolve2d(x, ks, mode=mode)]
    want = [np.stack([scipy.signal.convolve(img, values[1], mode=mode, method="direct") for img in values[0]]),
            np.stack([scipy.signal.convolve(img, kern, mode=mode, method="direct")
                      for img, kern in zip(values[0], values[2])])]
    _exact_with_function([x, k, ks], outputs, values, want)


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_convolve1d_of_the_jax_suite(mode):
    """PyTensor's ``tests/link/jax/signal/test_conv.py::test_convolve1d``
    (v3.0.7) with ``mode="ONNX"`` for ``"JAX"``: a (1, 3, 5) batch against a
    (7, 1, 11) batch of kernels, all lengths symbolic, against PyTensor's
    Python implementation (``compare_jax_and_py``) to 1e-12."""
    x = dmatrix("x")
    y = dmatrix("y")
    out = convolve1d(x[None], y[:, None], mode=mode)
    rng = np.random.default_rng()
    test_x = rng.normal(size=(3, 5))
    test_y = rng.normal(size=(7, 11))
    (got,) = pytensor.function([x, y], [out], mode="ONNX")(test_x, test_y)
    (want,) = pytensor.function([x, y], [out], mode="FAST_COMPILE")(test_x, test_y)
    assert_same(got, want, what=f"convolve1d {mode}", **EXACT)
