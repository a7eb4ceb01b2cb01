"""Layers: ``batch_norm`` (inference form), ``linear``, ``flatten``,
``upsample_nearest2d`` and ``dropout``."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from compiler.nn.base import NNOp, check_float, check_rank, pair


def _per_channel(v, rank: int):
    """The (C,) vector ``v`` broadcast against (N, C, *spatial) of ``rank`` dims."""
    return v.dimshuffle(["x", 0] + ["x"] * (rank - 2))


class BatchNorm(NNOp):
    """``batch_norm``'s op: inputs ``(x, gamma, beta, mean, var)``, attribute
    ``epsilon``. Lowered by inlining its graph, which ``batchnorm-folding``
    folds into a preceding conv (constant statistics) or makes one ONNX
    BatchNormalization."""

    attr_names = ("epsilon",)

    @classmethod
    def inner_graph(cls, x, gamma, beta, mean, var, *, epsilon):
        r = x.type.ndim
        eps = np.asarray(epsilon, dtype=var.type.dtype)
        normalized = (x - _per_channel(mean, r)) / pt.sqrt(_per_channel(var, r) + eps)
        return normalized * _per_channel(gamma, r) + _per_channel(beta, r)


def batch_norm(x, gamma, beta, mean, var, eps: float = 1e-5) -> pt.TensorVariable:
    """Inference batch normalization over axis 1 (ONNX
    ``BatchNormalization`` with ``training_mode=0``):
    ``(x - mean) / sqrt(var + eps) * gamma + beta``, each (C,) parameter
    broadcast along the channel axis.

    Args:
        x: float tensor (N, C, ``*spatial``), rank >= 2.
        gamma, beta, mean, var: (C,) tensors (scale, shift, running mean and
            running variance).
        eps: added to the variance, as a constant in ``var``'s dtype.

    Returns:
        A tensor of the shape of ``x`` (upcast dtype of the inputs). Folded
        into the weights of a conv it follows when the parameters are
        constants; else one ONNX BatchNormalization.

    Raises:
        ValueError: ``x`` of rank < 2 or parameters that are not vectors.
        TypeError: ``x`` is not float.
    """
    x = pt.as_tensor_variable(x)
    if x.type.ndim < 2:
        raise ValueError(f"batch_norm input x must be (N, C, ...), got {x.type}")
    check_float(x, "batch_norm input x")
    params = [pt.as_tensor_variable(v) for v in (gamma, beta, mean, var)]
    for name, v in zip(("gamma", "beta", "mean", "var"), params):
        check_rank(v, 1, f"batch_norm {name} (C,)")
    return BatchNorm.apply([x, *params], epsilon=float(eps))


class Linear(NNOp):
    """``linear``'s op: inputs ``(x, W)`` or ``(x, W, b)``. Lowers to the IR
    ``gemm`` for a 2-D ``x`` of one float dtype with ``W`` and ``b``."""

    @classmethod
    def inner_graph(cls, x, w, b=None):
        y = pt.dot(x, w) if x.type.ndim <= 2 else x @ w
        return y if b is None else y + b


def linear(x, W, b=None) -> pt.TensorVariable:
    """A dense layer ``x @ W + b`` (ONNX ``Gemm`` for a 2-D ``x``).

    Args:
        x: tensor (..., in_features); 2-D (batch, in_features) for Gemm.
        W: weights (in_features, out_features), as in ``x @ W`` (PyTorch's
            ``nn.Linear`` stores the transpose).
        b: optional bias (out_features,).

    Returns:
        (..., out_features) in the upcast dtype of the inputs.

    Raises:
        ValueError: ``W`` not 2-D or ``b`` not 1-D.
    """
    x, W = pt.as_tensor_variable(x), pt.as_tensor_variable(W)
    check_rank(W, 2, "linear weights W (in_features, out_features)")
    inputs = [x, W]
    if b is not None:
        b = pt.as_tensor_variable(b)
        check_rank(b, 1, "linear bias b (out_features,)")
        inputs.append(b)
    return Linear.apply(inputs)


class Flatten(NNOp):
    """``flatten``'s op, attribute ``axis``. Lowers to the IR ``flatten``."""

    attr_names = ("axis",)

    @classmethod
    def inner_graph(cls, x, *, axis):
        def product(dims):
            static = [x.type.shape[a] for a in dims]
            if None not in static:
                return int(np.prod(static, dtype=np.int64))
            return pt.prod(pt.stack([x.shape[a] for a in dims])) if dims else 1

        return x.reshape((product(range(axis)), product(range(axis, x.type.ndim))))


def flatten(x, axis: int = 1) -> pt.TensorVariable:
    """``x`` reshaped to 2-D (ONNX ``Flatten``): (prod(shape[:axis]),
    prod(shape[axis:])); the default keeps the batch axis and flattens the
    rest, (N, C, H, W) -> (N, C*H*W), in row-major (C, H, W) order.

    Args:
        x: a tensor of rank >= 1.
        axis: 0 <= axis <= rank.

    Returns:
        A 2-D tensor of the dtype of ``x``.

    Raises:
        ValueError: ``axis`` out of range.
    """
    x = pt.as_tensor_variable(x)
    if not isinstance(axis, int) or not 0 <= axis <= x.type.ndim:
        raise ValueError(f"flatten: axis must be in 0..{x.type.ndim}, got {axis!r}")
    return Flatten.apply([x], axis=axis)


class UpsampleNearest2d(NNOp):
    """``upsample_nearest2d``'s op, attribute ``scale`` (an (H, W) pair).
    Lowers to the IR ``resize_nearest``."""

    attr_names = ("scale",)

    @classmethod
    def inner_graph(cls, x, *, scale):
        sh, sw = scale
        return x.repeat(sh, axis=2).repeat(sw, axis=3)


def upsample_nearest2d(x, scale) -> pt.TensorVariable:
    """Nearest-neighbour upsampling by integer factors (ONNX ``Resize`` with
    mode nearest; PyTorch ``interpolate(mode="nearest")``): every pixel
    repeated ``scale`` times along H and W (``np.repeat``).

    Args:
        x: tensor (N, C, H, W).
        scale: an int or an (H, W) pair of ints >= 1.

    Returns:
        (N, C, H * sh, W * sw), dtype of ``x``.

    Raises:
        ValueError: wrong rank or scale.
    """
    x = pt.as_tensor_variable(x)
    check_rank(x, 4, "upsample_nearest2d input x (N, C, H, W)")
    return UpsampleNearest2d.apply([x], scale=pair(scale, "scale", 1))


def dropout(x, p: float, training: bool = False, rng=None) -> pt.TensorVariable:
    """Inverted dropout: at inference (``training=False``) the identity,
    ``x`` itself (no node: nothing to export); in training each element is
    zeroed with probability ``p`` and the others scaled by ``1 / (1 - p)``.

    Args:
        x: a float tensor.
        p: drop probability, 0 <= p < 1.
        training: whether to drop.
        rng: a ``pytensor.tensor.random.utils.RandomStream``, required when
            training (its random ops are not exported: compile the inference
            graph).

    Returns:
        ``x`` (inference) or a tensor of its shape and dtype.

    Raises:
        ValueError: ``p`` out of range, or training without ``rng``.
    """
    if not 0 <= p < 1:
        raise ValueError(f"dropout: p must be in [0, 1), got {p!r}")
    x = pt.as_tensor_variable(x)
    if not training or p == 0:
        return x
    if rng is None:
        raise ValueError("dropout: training=True needs rng (a pytensor RandomStream)")
    check_float(x, "dropout input x")
    keep = rng.binomial(1, 1 - p, size=x.shape).astype(x.type.dtype)
    return x * keep / np.asarray(1 - p, dtype=x.type.dtype)
