"""Hypothesis over the parameters of ``nn.conv2d`` (kernel 1-5, stride 1-3,
padding 0-2, dilation 1-2, channels, groups dividing them, batch, bias) and
of the pools (kernel 1-4, stride 1-3, padding up to half the kernel, max or
average with either ``count_include_pad``): PyTensor, onnxruntime and the
IR interpreter agree on random float32 data, and each helper is one ONNX
node. Spatial dims are static or symbolic. A few examples run with the
suite; the sweep is ``pytest -m slow``."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings, strategies as st

from compiler import nn
from compiler.lowering.compat import IS_PYTENSOR_3
from tests.helpers import check_pytensor
from tests.nn import onnx_ops

TOL = {"rtol": 1e-5, "atol": 1e-5}
# the slow job's sweep: 150 examples on the 3.0 line, 75 on 2.38 (new ones every CI run; CI's budget)
FAST, SWEEP = 12, 150 if IS_PYTENSOR_3 else 75


def _size(draw, kernel: int, dilation: int, pad: int) -> int:
    """A spatial size the window fits in, up to 4 positions more."""
    smallest = max(1, dilation * (kernel - 1) + 1 - 2 * pad)
    return draw(st.integers(smallest, smallest + 4))


def _input(draw, shape):
    """A float32 input with a symbolic batch and, drawn, symbolic H and W."""
    static_hw = draw(st.booleans())
    return pt.tensor("x", dtype="float32", shape=(None, shape[1], *(shape[2:] if static_hw else (None, None))))


@st.composite
def conv_cases(draw):
    groups = draw(st.integers(1, 3))
    cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel = (draw(st.integers(1, 5)), draw(st.integers(1, 5)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    shape = (draw(st.integers(1, 3)), cin, *(_size(draw, k, d, p) for k, d, p in zip(kernel, dilation, padding)))
    x = _input(draw, shape)
    seed = draw(st.integers(0, 2**16))
    return x, shape, (cout, cin // groups, *kernel), dict(stride=stride, padding=padding, dilation=dilation,
                                                          groups=groups), draw(st.booleans()), seed


def check_conv(case) -> None:
    x, shape, w_shape, attrs, bias, seed = case
    rng = np.random.default_rng(seed)
    W = rng.normal(size=w_shape).astype(np.float32)
    b = rng.normal(size=w_shape[0]).astype(np.float32) if bias else None
    y = nn.conv2d(x, W, b, **attrs)
    compiled = check_pytensor([x], [y], [rng.normal(size=shape).astype(np.float32)], **TOL)
    assert onnx_ops(compiled) == ["Conv"], onnx_ops(compiled)


@st.composite
def pool_cases(draw):
    kernel = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    shape = (draw(st.integers(1, 3)), draw(st.integers(1, 3)),
             *(_size(draw, k, 1, p) for k, p in zip(kernel, padding)))
    x = _input(draw, shape)
    kind = draw(st.sampled_from(["max", "avg", "avg_exclude_pad"]))
    return x, shape, kind, dict(kernel=kernel, stride=stride, padding=padding), draw(st.integers(0, 2**16))


def check_pool(case) -> None:
    x, shape, kind, attrs, seed = case
    if kind == "max":
        y = nn.max_pool2d(x, **attrs)
        # a padded float32 MaxPool is an explicit -inf Pad first (backends/onnx/rules/nn.py)
        want_ops = ["Pad", "MaxPool"] if any(attrs["padding"]) else ["MaxPool"]
    else:
        y = nn.avg_pool2d(x, **attrs, count_include_pad=kind == "avg")
        want_ops = ["AveragePool"]
    values = [np.random.default_rng(seed).normal(size=shape).astype(np.float32)]
    compiled = check_pytensor([x], [y], values, **TOL)
    assert onnx_ops(compiled) == want_ops, onnx_ops(compiled)


@settings(max_examples=FAST)
@given(conv_cases())
def test_conv2d(case):
    check_conv(case)


@settings(max_examples=FAST)
@given(pool_cases())
def test_pools(case):
    check_pool(case)


@pytest.mark.slow
@settings(max_examples=SWEEP)
@given(conv_cases())
def test_conv2d_sweep(case):
    check_conv(case)


@pytest.mark.slow
@settings(max_examples=SWEEP)
@given(pool_cases())
def test_pools_sweep(case):
    check_pool(case)
