"""Pooling over NCHW tensors: ``max_pool2d``, ``avg_pool2d``,
``global_avg_pool2d``, ``global_max_pool2d``.

Windows follow ONNX ``MaxPool`` / ``AveragePool`` and PyTorch
(``ceil_mode=False``): output pixel ``(oh, ow)`` covers input rows
``oh*sh + i`` and columns ``ow*sw + j`` for ``0 <= i < kh``, ``0 <= j < kw``
of the input padded by ``padding`` on both sides. Padding is at most half the
kernel (PyTorch's rule), so every window holds at least one input pixel.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from compiler.nn.base import NNOp, check_float, check_rank, output_size, pad_spatial, pair, windows


def _window_args(x, kernel, stride, padding, what: str):
    x = pt.as_tensor_variable(x)
    check_rank(x, 4, f"{what} input x (N, C, H, W)")
    kernel = pair(kernel, "kernel", 1)
    stride = kernel if stride is None else pair(stride, "stride", 1)
    padding = pair(padding, "padding", 0)
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(f"{what}: padding {padding} must be at most half the kernel {kernel}")
    for axis in (0, 1):
        output_size(x.type.shape[2 + axis], kernel[axis], stride[axis], padding[axis], 1, what)
    return x, kernel, stride, padding


class MaxPool2d(NNOp):
    """``max_pool2d``'s op: attributes ``kernel``, ``stride``, ``padding``
    (pairs). Lowers to the IR ``max_pool``."""

    attr_names = ("kernel", "stride", "padding")

    @classmethod
    def inner_graph(cls, x, *, kernel, stride, padding):
        dtype = np.dtype(x.type.dtype)
        lowest = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
        xp = pad_spatial(x, padding, lowest)
        return pt.max(windows(xp, kernel, stride, (1, 1)), axis=(2, 4))


def max_pool2d(x, kernel, stride=None, padding=0) -> pt.TensorVariable:
    """Max pooling (ONNX ``MaxPool``, PyTorch ``max_pool2d`` with
    ``ceil_mode=False``).

    Args:
        x: tensor (N, C, H, W), float or integer.
        kernel: window size, an int or an (H, W) pair.
        stride: an int or pair; None (default) means ``kernel``.
        padding: an int or pair, at most half the kernel; padded pixels
            never win (the input is padded with -inf, or the dtype's minimum).

    Returns:
        (N, C, OH, OW), ``OH = floor((H + 2 ph - kh) / sh) + 1``, dtype of
        ``x``. NaN in a window gives NaN (``np.max``). Lowers to one ONNX
        ``MaxPool``.

    Raises:
        ValueError: wrong rank, padding over half the kernel, or a window
            larger than the padded input.
    """
    x, kernel, stride, padding = _window_args(x, kernel, stride, padding, "max_pool2d")
    return MaxPool2d.apply([x], kernel=kernel, stride=stride, padding=padding)


class AvgPool2d(NNOp):
    """``avg_pool2d``'s op: attributes ``kernel``, ``stride``, ``padding``
    (pairs) and ``count_include_pad``. Lowers to the IR ``avg_pool``."""

    attr_names = ("kernel", "stride", "padding", "count_include_pad")

    @classmethod
    def inner_graph(cls, x, *, kernel, stride, padding, count_include_pad):
        def window_sum(t):
            return pt.sum(windows(pad_spatial(t, padding, 0), kernel, stride, (1, 1)), axis=(2, 4))

        total = window_sum(x)
        if count_include_pad or padding == (0, 0):
            return total / np.asarray(kernel[0] * kernel[1], dtype=x.type.dtype)
        ones = pt.ones((1, 1, x.shape[2], x.shape[3]), dtype=x.type.dtype)
        return total / window_sum(ones)  # pixels of each window that are not padding


def avg_pool2d(x, kernel, stride=None, padding=0, count_include_pad=True) -> pt.TensorVariable:
    """Average pooling (ONNX ``AveragePool``, PyTorch ``avg_pool2d`` with
    ``ceil_mode=False``).

    Args:
        x: float tensor (N, C, H, W).
        kernel: window size, an int or an (H, W) pair.
        stride: an int or pair; None (default) means ``kernel``.
        padding: an int or pair, at most half the kernel; zero padding.
        count_include_pad: divide by the full window size ``kh * kw`` (True,
            PyTorch's default) or by the number of input pixels in the
            window (False, ONNX's default); only matters with padding.

    Returns:
        (N, C, OH, OW), dtype of ``x``. Lowers to one ONNX ``AveragePool``.

    Raises:
        ValueError: as ``max_pool2d``. TypeError: ``x`` is not float.
    """
    x, kernel, stride, padding = _window_args(x, kernel, stride, padding, "avg_pool2d")
    check_float(x, "avg_pool2d input x")
    return AvgPool2d.apply([x], kernel=kernel, stride=stride, padding=padding,
                           count_include_pad=bool(count_include_pad))


class GlobalAvgPool2d(NNOp):
    """``global_avg_pool2d``'s op. Lowers to the IR ``global_avg_pool``."""

    @classmethod
    def inner_graph(cls, x):
        return pt.mean(x, axis=(2, 3), keepdims=True)


class GlobalMaxPool2d(NNOp):
    """``global_max_pool2d``'s op. Lowers to the IR ``global_max_pool``."""

    @classmethod
    def inner_graph(cls, x):
        return pt.max(x, axis=(2, 3), keepdims=True)


def global_avg_pool2d(x) -> pt.TensorVariable:
    """Mean over the spatial axes, kept as size 1 (ONNX ``GlobalAveragePool``;
    ``x.mean(axis=(2, 3), keepdims=True)``).

    Args:
        x: float tensor (N, C, H, W).

    Returns:
        (N, C, 1, 1), dtype of ``x``.

    Raises:
        ValueError: wrong rank. TypeError: ``x`` is not float.
    """
    x = pt.as_tensor_variable(x)
    check_rank(x, 4, "global_avg_pool2d input x (N, C, H, W)")
    check_float(x, "global_avg_pool2d input x")
    return GlobalAvgPool2d.apply([x])


def global_max_pool2d(x) -> pt.TensorVariable:
    """Max over the spatial axes, kept as size 1 (ONNX ``GlobalMaxPool``;
    ``x.max(axis=(2, 3), keepdims=True)``; NaN propagates).

    Args:
        x: tensor (N, C, H, W).

    Returns:
        (N, C, 1, 1), dtype of ``x``.

    Raises:
        ValueError: wrong rank.
    """
    x = pt.as_tensor_variable(x)
    check_rank(x, 4, "global_max_pool2d input x (N, C, H, W)")
    return GlobalMaxPool2d.apply([x])
