"""``compiler.nn``: each helper computes, in PyTensor, what its ONNX operator
computes (the IR op's NumPy reference, SciPy for the convolution convention);
it lowers directly to that one IR op and compiles to one ONNX node that
matches PyTensor in onnxruntime; PyTensor differentiates it
(``verify_grad``); bad arguments raise; mixed dtypes and compiled functions
fall back to the inner graph and stay exact."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.signal
from pytensor.gradient import verify_grad

from compiler import compile_to_onnx, nn
from tests.helpers import REFERENCE_MODE, check_pytensor, pytensor_reference
from tests.nn import ir_reference, lowered_ops, onnx_ops, pads

RNG = np.random.default_rng(7)
SOBEL = np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]], np.float32)  # asymmetric: a flip would show
F32_TOL = {"rtol": 1e-5, "atol": 1e-5}


def f32(*shape) -> np.ndarray:
    return RNG.normal(size=shape).astype(np.float32)


def image(shape=(2, 3, 7, 6), dtype="float32", name="x"):
    """A PyTensor input with a symbolic batch and static C, H, W."""
    return pt.tensor(name, dtype=dtype, shape=(None, *shape[1:]))


def evaluate(inputs, output, values) -> np.ndarray:
    return pytensor_reference(inputs, [output], values)[0]


# -- conv2d ------------------------------------------------------------------
def test_conv2d_is_a_cross_correlation_like_onnx_conv():
    x = image((1, 1, 6, 7))
    xv = f32(1, 1, 6, 7)
    for padding in (0, 1):
        got = evaluate([x], nn.conv2d(x, SOBEL[None, None], padding=padding), [xv])
        want = scipy.signal.correlate2d(np.pad(xv[0, 0], padding), SOBEL, mode="valid")
        np.testing.assert_allclose(got[0, 0], want, rtol=1e-6, atol=1e-6)
        flipped = scipy.signal.convolve2d(np.pad(xv[0, 0], padding), SOBEL, mode="valid")
        assert not np.allclose(got[0, 0], flipped)


CONV_CASES = [  # (C, M, kh, kw, stride, padding, dilation, groups, bias)
    (3, 4, 3, 3, 1, 0, 1, 1, True),
    (3, 4, 3, 2, (2, 1), (1, 0), 1, 1, False),
    (4, 6, 2, 3, 2, 1, 2, 2, True),
    (4, 4, 3, 3, 1, 1, 1, 4, True),  # depthwise
    (2, 3, 1, 1, 3, 0, 1, 1, True),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "-".join(map(str, c)))
def test_conv2d_matches_onnx_conv(case):
    c, m, kh, kw, stride, padding, dilation, groups, bias = case
    x = image((2, c, 7, 6))
    W = pytensor.shared(f32(m, c // groups, kh, kw), name="W")
    b = pytensor.shared(f32(m), name="b") if bias else None
    y = nn.conv2d(x, W, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    xv = f32(2, c, 7, 6)
    two = (lambda v: v if isinstance(v, tuple) else (v, v))
    want = ir_reference("conv", [xv, W.get_value()] + ([b.get_value()] if bias else []), strides=two(stride),
                        pads=(*two(padding), *two(padding)), dilations=two(dilation), group=groups)
    np.testing.assert_allclose(evaluate([x], y, [xv]), want, rtol=1e-5, atol=1e-5)
    assert y.type.shape == (None, *want.shape[1:])  # static output shape

    compiled = check_pytensor([x], [y], [xv], **F32_TOL)
    assert lowered_ops(compiled) == ["conv"]
    assert onnx_ops(compiled) == ["Conv"]
    node = compiled.model.graph.node[0]
    assert list(node.input) == ["x", "W"] + (["b"] if bias else [])


def test_conv2d_op_holds_its_attributes():
    x = image((1, 4, 8, 8))
    y = nn.conv2d(x, f32(6, 2, 3, 3), stride=2, padding=(1, 0), dilation=1, groups=2)
    op = y.owner.op
    assert isinstance(op, nn.Conv2d)
    assert op.attrs == {"stride": (2, 2), "padding": (1, 0), "dilation": (1, 1), "groups": 2}
    assert str(op) == "Conv2d{stride=(2, 2), padding=(1, 0), dilation=(1, 1), groups=2}"


def test_conv2d_weights_given_as_a_graph_input():
    x, W = image((2, 3, 5, 5)), pt.tensor("W", dtype="float32", shape=(4, 3, 2, 2))
    y = nn.conv2d(x, W, padding=1)
    compiled = check_pytensor([x, W], [y], [f32(2, 3, 5, 5), f32(4, 3, 2, 2)], **F32_TOL)
    assert onnx_ops(compiled) == ["Conv"]


@pytest.mark.parametrize("call, error, match", [
    (lambda x: nn.conv2d(x, pt.tensor4("W")), ValueError, "needs a static shape"),
    (lambda x: nn.conv2d(x, f32(4, 2, 3, 3)), ValueError, "x has 3 channels, W expects 2 x groups 1"),
    (lambda x: nn.conv2d(x, f32(4, 1, 3, 3), groups=3), ValueError, "4 output channels are not divisible"),
    (lambda x: nn.conv2d(x, f32(4, 3, 9, 3)), ValueError, "does not fit in size 7"),
    (lambda x: nn.conv2d(x, f32(4, 3, 3, 3), stride=0), ValueError, "stride must be >= 1"),
    (lambda x: nn.conv2d(x, f32(4, 3, 3, 3), padding=(1, 2, 3)), ValueError, "padding must be an int or a pair"),
    (lambda x: nn.conv2d(x[0], f32(4, 3, 3, 3)), ValueError, "must have 4 dims"),
    (lambda x: nn.conv2d(pt.cast(x, "int32"), f32(4, 3, 3, 3)), TypeError, "must be a float tensor"),
    (lambda x: nn.max_pool2d(x, 2, padding=2), ValueError, "at most half the kernel"),
    (lambda x: nn.avg_pool2d(pt.cast(x, "int8"), 2), TypeError, "must be a float tensor"),
    (lambda x: nn.gelu(x, approximate="erf"), ValueError, "approximate must be one of"),
    (lambda x: nn.flatten(x, axis=5), ValueError, "axis must be in 0..4"),
    (lambda x: nn.upsample_nearest2d(x, 0), ValueError, "scale must be >= 1"),
    (lambda x: nn.dropout(x, 1.0), ValueError, r"p must be in \[0, 1\)"),
    (lambda x: nn.dropout(x, 0.5, training=True), ValueError, "needs rng"),
])
def test_bad_arguments_raise(call, error, match):
    with pytest.raises(error, match=match):
        call(image((2, 3, 7, 7)))


# -- pooling -------------------------------------------------------------------
@pytest.mark.parametrize("kernel, stride, padding", [(2, None, 0), (3, 1, 1), ((3, 2), (2, 1), (1, 0))])
def test_max_pool2d_matches_onnx_max_pool(kernel, stride, padding):
    x = image((2, 3, 7, 6))
    y = nn.max_pool2d(x, kernel, stride, padding)
    xv = f32(2, 3, 7, 6)
    op = y.owner.op
    want = ir_reference("max_pool", [xv], kernel=op.kernel, strides=op.stride, pads=(*op.padding, *op.padding))
    np.testing.assert_array_equal(evaluate([x], y, [xv]), want)
    compiled = check_pytensor([x], [y], [xv])
    # float32 pads are an explicit Pad with -inf: onnxruntime's padded MaxPool
    # gives -FLT_MAX for a window of -inf (backends/onnx/rules/nn.py)
    assert lowered_ops(compiled) == ["max_pool"]
    assert onnx_ops(compiled) == (["Pad", "MaxPool"] if padding else ["MaxPool"])


def test_max_pool2d_of_integers():
    x = image((1, 2, 4, 4), dtype="int8")
    xv = RNG.integers(-128, 128, size=(1, 2, 4, 4)).astype(np.int8)
    y = nn.max_pool2d(x, 3, 1, 1)  # padded with int8's minimum, which never wins
    np.testing.assert_array_equal(evaluate([x], y, [xv]),
                                  ir_reference("max_pool", [xv], kernel=(3, 3), strides=(1, 1), pads=pads(1)))
    assert onnx_ops(check_pytensor([x], [y], [xv])) == ["MaxPool"]


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("kernel, stride, padding", [(2, None, 0), (3, 2, 1), ((3, 2), 1, (1, 1))])
def test_avg_pool2d_matches_onnx_average_pool(kernel, stride, padding, count_include_pad):
    x = image((2, 3, 7, 6))
    y = nn.avg_pool2d(x, kernel, stride, padding, count_include_pad=count_include_pad)
    xv = f32(2, 3, 7, 6)
    op = y.owner.op
    want = ir_reference("avg_pool", [xv], kernel=op.kernel, strides=op.stride, pads=(*op.padding, *op.padding),
                        count_include_pad=count_include_pad)
    np.testing.assert_allclose(evaluate([x], y, [xv]), want, rtol=1e-6, atol=1e-6)
    compiled = check_pytensor([x], [y], [xv])
    assert lowered_ops(compiled) == ["avg_pool"] and onnx_ops(compiled) == ["AveragePool"]


@pytest.mark.parametrize("helper, op, onnx_op", [(nn.global_avg_pool2d, "global_avg_pool", "GlobalAveragePool"),
                                                 (nn.global_max_pool2d, "global_max_pool", "GlobalMaxPool")])
def test_global_pools(helper, op, onnx_op):
    x = image((2, 3, 5, 4))
    y = helper(x)
    xv = f32(2, 3, 5, 4)
    assert y.type.shape == (None, 3, 1, 1)
    np.testing.assert_allclose(evaluate([x], y, [xv]), ir_reference(op, [xv]), rtol=1e-6)
    compiled = check_pytensor([x], [y], [xv])
    assert lowered_ops(compiled) == [op] and onnx_ops(compiled) == [onnx_op]


# -- activations ---------------------------------------------------------------
@pytest.mark.parametrize("helper, op, kwargs", [
    (nn.relu, "relu", {}), (nn.silu, "silu", {}),
    (nn.gelu, "gelu", {"approximate": "none"}), (nn.gelu, "gelu", {"approximate": "tanh"}),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activations(helper, op, kwargs, dtype):
    x = pt.tensor("x", dtype=dtype, shape=(None, 5))
    y = helper(x, **kwargs)
    xv = (RNG.normal(size=(3, 5)) * 3).astype(dtype)
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(evaluate([x], y, [xv]), ir_reference(op, [xv], **kwargs), rtol=tol, atol=tol)
    compiled = check_pytensor([x], [y], [xv], emit_options={"silu": "function"})  # one node: a function call
    assert lowered_ops(compiled) == [op] and len(onnx_ops(compiled)) == 1


def test_relu_of_signed_ints_is_direct_and_of_unsigned_ints_inlined():
    for dtype, direct in (("int32", True), ("uint8", False)):
        x = pt.vector("x", dtype=dtype)
        xv = np.array([0, 3, 200 if dtype == "uint8" else -7, 1], dtype=dtype)
        compiled = check_pytensor([x], [nn.relu(x)], [xv])
        assert (lowered_ops(compiled) == ["relu"]) is direct


# -- layers ------------------------------------------------------------------
def test_batch_norm_after_a_conv_folds_into_its_weights():
    x = image((2, 3, 6, 6))
    params = [pytensor.shared(v, name=n) for v, n in ((f32(4), "gamma"), (f32(4), "beta"), (f32(4), "mean"),
                                                     (RNG.uniform(0.5, 2, 4).astype(np.float32), "var"))]
    y = nn.relu(nn.batch_norm(nn.conv2d(x, f32(4, 3, 3, 3), f32(4), padding=1), *params, eps=1e-3))
    compiled = check_pytensor([x], [y], [f32(2, 3, 6, 6)], **F32_TOL)
    assert onnx_ops(compiled) == ["Conv", "Relu"]


def test_batch_norm_with_input_statistics_is_one_batch_normalization():
    x, mean, var = image((2, 3, 4, 5)), pt.vector("mean", dtype="float32"), pt.vector("var", dtype="float32")
    gamma, beta = f32(3), f32(3)
    y = nn.batch_norm(x, gamma, beta, mean, var)
    values = [f32(2, 3, 4, 5), f32(3), RNG.uniform(0.5, 2, 3).astype(np.float32)]
    want = ir_reference("batch_norm", [values[0], gamma, beta, values[1], values[2]], epsilon=1e-5)
    np.testing.assert_allclose(evaluate([x, mean, var], y, values), want, rtol=1e-6, atol=1e-6)
    compiled = check_pytensor([x, mean, var], [y], values, **F32_TOL)
    assert onnx_ops(compiled) == ["BatchNormalization"]


def test_linear_is_gemm_matmul_or_batched():
    W, b = f32(5, 3), f32(3)
    x = pt.matrix("x", dtype="float32")
    xv = f32(4, 5)
    compiled = check_pytensor([x], [nn.linear(x, W, b)], [xv])
    assert lowered_ops(compiled) == ["gemm"] and onnx_ops(compiled) == ["Gemm"]
    assert onnx_ops(check_pytensor([x], [nn.linear(x, W)], [xv])) == ["MatMul"]
    x3 = pt.tensor3("x", dtype="float32")
    compiled = check_pytensor([x3], [nn.linear(x3, W, b)], [f32(2, 4, 5)])
    assert "gemm" not in lowered_ops(compiled) and onnx_ops(compiled) == ["MatMul", "Add"]


@pytest.mark.parametrize("axis", [0, 1, 2, 4])
def test_flatten(axis):
    x = image((2, 3, 4, 5))
    y = nn.flatten(x, axis)
    xv = f32(2, 3, 4, 5)
    np.testing.assert_array_equal(evaluate([x], y, [xv]), ir_reference("flatten", [xv], axis=axis))
    compiled = check_pytensor([x], [y], [xv])
    assert lowered_ops(compiled) == ["flatten"] and onnx_ops(compiled) == ["Flatten"]


def test_upsample_nearest2d():
    x = image((2, 3, 4, 5))
    y = nn.upsample_nearest2d(x, (2, 3))
    xv = f32(2, 3, 4, 5)
    assert y.type.shape == (None, 3, 8, 15)
    np.testing.assert_array_equal(evaluate([x], y, [xv]), xv.repeat(2, axis=2).repeat(3, axis=3))
    compiled = check_pytensor([x], [y], [xv])
    assert lowered_ops(compiled) == ["resize_nearest"] and onnx_ops(compiled) == ["Resize"]


@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning")  # RandomStream in PyTensor 3
def test_dropout_is_the_identity_at_inference_and_scales_in_training():
    from pytensor.tensor.random.utils import RandomStream

    x = pt.matrix("x", dtype="float32")
    assert nn.dropout(x, 0.5) is x
    y = nn.dropout(x, 0.25, training=True, rng=RandomStream(seed=1))
    out = pytensor.function([x], y, mode=REFERENCE_MODE)(np.ones((200, 100), np.float32))
    assert out.dtype == np.float32
    assert set(np.unique(out)) == {np.float32(0), np.float32(1 / 0.75)}
    assert abs(np.mean(out == 0) - 0.25) < 0.02


# -- gradients -----------------------------------------------------------------
GRAD_CASES = {
    "conv2d": (lambda x, w, b: nn.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
               [(2, 4, 6, 7), (4, 2, 3, 2), (4,)]),
    "max_pool2d": (lambda x: nn.max_pool2d(x, 3, 2, 1), [(2, 2, 5, 6)]),
    "avg_pool2d": (lambda x: nn.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [(2, 2, 5, 6)]),
    "global_avg_pool2d": (nn.global_avg_pool2d, [(2, 3, 4, 4)]),
    "batch_norm": (lambda x, g, b, m, v: nn.batch_norm(x, g, b, m, pt.exp(v)), [(2, 3, 4, 4)] + [(3,)] * 4),
    "linear": (nn.linear, [(4, 5), (5, 3), (3,)]),
    "silu-gelu": (lambda x: nn.gelu(nn.silu(x), approximate="tanh"), [(3, 4)]),
    "upsample-flatten": (lambda x: nn.flatten(nn.upsample_nearest2d(x, 2)), [(2, 2, 3, 3)]),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_pytensor_differentiates_the_helpers(name):
    fn, shapes = GRAD_CASES[name]
    # Distinct values keep max pooling's argmax unique under verify_grad's steps.
    values = [RNG.permutation(np.prod(s)).reshape(s) / np.prod(s) + RNG.normal(size=s) * 1e-3 for s in shapes]
    verify_grad(fn, values, rng=np.random.default_rng(0), mode=REFERENCE_MODE)


def test_training_step_updates_the_weights():
    x = image((4, 1, 6, 6))
    W = pytensor.shared(f32(2, 1, 3, 3), name="W")
    loss = pt.sum(nn.max_pool2d(nn.relu(nn.conv2d(x, W, padding=1)), 2) ** 2)
    (grad,) = pytensor.grad(loss, [W])
    step = pytensor.function([x], loss, updates=[(W, W - np.float32(0.01) * grad)], mode=REFERENCE_MODE)
    xv = f32(4, 1, 6, 6)
    before = step(xv)
    assert step(xv) < before


# -- fallbacks -----------------------------------------------------------------
def test_mixed_dtypes_inline_the_exact_graph():
    x = image((2, 3, 6, 6))
    y = nn.conv2d(x, RNG.normal(size=(4, 3, 3, 3)), padding=1)  # float64 weights: PyTensor upcasts after padding
    assert y.type.dtype == "float64"
    compiled = check_pytensor([x], [y], [f32(2, 3, 6, 6)], rtol=1e-12, atol=1e-12)
    assert "conv" not in lowered_ops(compiled)


def test_a_compiled_function_holds_the_inlined_graph_and_still_compiles():
    x = image((2, 3, 6, 6))
    y = nn.max_pool2d(nn.relu(nn.conv2d(x, f32(4, 3, 3, 3), f32(4), padding=1)), 2)
    fn = pytensor.function([x], y, mode=REFERENCE_MODE)
    assert not any(isinstance(node.op, nn.NNOp) for node in fn.maker.fgraph.apply_nodes)
    compiled = compile_to_onnx(fn)
    xv = f32(3, 3, 6, 6)
    np.testing.assert_allclose(compiled.run(xv)[0], fn(xv), rtol=1e-5, atol=1e-5)
