"""Rules for the random ops (``ir/ops/random.py``): ONNX
``RandomUniformLike``/``RandomNormalLike`` (opset 1; onnxruntime keeps one
generator per node, seeded once from ``seed``, so every run draws new values
and a new session repeats the sequence) of a ``ConstantOfShape`` of the
target shape, which works for static and run-time shapes alike."""

from __future__ import annotations

import numpy as np
import onnx_ir as oir

from backends.onnx.context import onnx_dtype
from backends.onnx.registry import emits


@emits("random_uniform", "random_normal")
def random_draws(ctx, node, shape):
    """U[0, 1) (``RandomUniformLike`` with low 0, high 1) or standard normal
    (``RandomNormalLike`` with mean 0, scale 1) draws of ``node.attrs["dtype"]``
    shaped like ``shape``; the seed is written as ONNX's float attribute
    (seeds below 2**24 are exact)."""
    dtype = node.attrs["dtype"]
    like = ctx.op("ConstantOfShape", shape, value=oir.tensor(np.zeros(1, dtype.numpy)))
    seed = float(node.attrs["seed"])
    if node.op == "random_uniform":
        return ctx.op("RandomUniformLike", like, dtype=int(onnx_dtype(dtype)), low=0.0, high=1.0, seed=seed)
    return ctx.op("RandomNormalLike", like, dtype=int(onnx_dtype(dtype)), mean=0.0, scale=1.0, seed=seed)
