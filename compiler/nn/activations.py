"""Activations: ``relu``, ``silu``, ``gelu``.

Each is the usual elementwise formula in PyTensor, wrapped in an ``NNOp``
that lowers to one IR op (ONNX Relu; SiLU and Gelu are emitted as
model-local ONNX functions or primitive ops, see the emitter's ``silu`` and
``gelu`` options).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from compiler.nn.base import NNOp, check_float

GELU_APPROXIMATIONS = ("none", "tanh")


class Relu(NNOp):
    """``relu``'s op: ``maximum(x, 0)``. Lowers to the IR ``relu``."""

    @classmethod
    def inner_graph(cls, x):
        return pt.maximum(x, np.zeros((), dtype=x.type.dtype))


class Silu(NNOp):
    """``silu``'s op: ``x * sigmoid(x)``. Lowers to the IR ``silu``."""

    @classmethod
    def inner_graph(cls, x):
        return x * pt.sigmoid(x)


class Gelu(NNOp):
    """``gelu``'s op, attribute ``approximate`` (``"none"`` or ``"tanh"``).
    Lowers to the IR ``gelu``."""

    attr_names = ("approximate",)

    @classmethod
    def inner_graph(cls, x, *, approximate):
        def c(value):
            return np.asarray(value, dtype=x.type.dtype)

        if approximate == "tanh":
            inner = c(np.sqrt(2 / np.pi)) * (x + c(0.044715) * x * x * x)
            return c(0.5) * x * (c(1) + pt.tanh(inner))
        return c(0.5) * x * (c(1) + pt.erf(x / c(np.sqrt(2))))


def relu(x) -> pt.TensorVariable:
    """``max(x, 0)`` elementwise (ONNX ``Relu``; ``np.maximum``: NaN stays NaN).

    Args:
        x: a tensor of any shape, float or integer.

    Returns:
        A tensor of the shape and dtype of ``x``.
    """
    x = pt.as_tensor_variable(x)
    return Relu.apply([x])


def silu(x) -> pt.TensorVariable:
    """SiLU (swish): ``x * sigmoid(x)`` elementwise (PyTorch ``silu``).

    Args:
        x: a float tensor of any shape.

    Returns:
        A tensor of the shape and dtype of ``x``.

    Raises:
        TypeError: ``x`` is not float.
    """
    x = pt.as_tensor_variable(x)
    check_float(x, "silu input")
    return Silu.apply([x])


def gelu(x, approximate: str = "none") -> pt.TensorVariable:
    """GELU (ONNX ``Gelu``, opset 20; PyTorch ``gelu``):
    ``0.5 x (1 + erf(x / sqrt 2))``, or with ``approximate="tanh"``
    ``0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))``, with the constants
    in the dtype of ``x``.

    Args:
        x: a float tensor of any shape.
        approximate: ``"none"`` or ``"tanh"``.

    Returns:
        A tensor of the shape and dtype of ``x``.

    Raises:
        TypeError: ``x`` is not float. ValueError: unknown ``approximate``.
    """
    x = pt.as_tensor_variable(x)
    check_float(x, "gelu input")
    if approximate not in GELU_APPROXIMATIONS:
        raise ValueError(f"gelu: approximate must be one of {GELU_APPROXIMATIONS}, got {approximate!r}")
    return Gelu.apply([x], approximate=approximate)
