"""A pre-norm transformer encoder block as a PyTensor user writes it, no
helpers: LayerNorm from means, causal scaled dot-product attention with the
mask from ``arange`` and ``where``, a GELU (erf) MLP, residual adds. Shared
by ``tests/nn/test_transformer_block.py`` and ``bench/bench_transformer.py``
(whose torch twin uses the same weights)."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.tensor.special import softmax

EPS = 1e-5


def weights(d_model: int = 256, seed: int = 0) -> dict[str, np.ndarray]:
    """Random float32 weights: LayerNorm scales/shifts ``g1 b1 g2 b2`` (D,),
    projections ``Wq Wk Wv Wo`` (D, D), MLP ``W1`` (D, 4D), ``c1`` (4D,),
    ``W2`` (4D, D), ``c2`` (D,); right-multiplied (``x @ W``)."""
    rng = np.random.default_rng(seed)
    d = d_model
    w = {k: (rng.normal(size=(d, d)) * d ** -0.5) for k in ("Wq", "Wk", "Wv", "Wo")}
    w.update(W1=rng.normal(size=(d, 4 * d)) * d ** -0.5, W2=rng.normal(size=(4 * d, d)) * (4 * d) ** -0.5,
             c1=rng.normal(size=4 * d) * 0.1, c2=rng.normal(size=d) * 0.1)
    for k in ("g1", "g2"):
        w[k] = 1 + 0.1 * rng.normal(size=d)
    for k in ("b1", "b2"):
        w[k] = 0.1 * rng.normal(size=d)
    return {k: v.astype(np.float32) for k, v in w.items()}


def layer_norm(x, g, b, eps: float = EPS):
    """(x - mean) / sqrt(var + eps) * g + b over the last axis (eps a
    float32: a Python float would make the block float64 under PyTensor's
    default ``floatX``)."""
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / pt.sqrt(var + np.float32(eps)) * g + b


def block(w: dict, heads: int = 4):
    """``(x, y)``: x float32 ``(batch, seq, D)`` with a symbolic batch and
    sequence, y the block's output of the same shape."""
    p = {k: pytensor.shared(v, name=k) for k, v in w.items()}
    d = w["Wq"].shape[0]
    x = pt.tensor3("x", dtype="float32", shape=(None, None, d))
    n, t = x.shape[0], x.shape[1]

    def split(z):
        return z.reshape((n, t, heads, d // heads)).transpose(0, 2, 1, 3)

    h = layer_norm(x, p["g1"], p["b1"])
    q, k, v = split(h @ p["Wq"]), split(h @ p["Wk"]), split(h @ p["Wv"])
    scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(d // heads))
    i = pt.arange(t)
    scores = pt.where(i[:, None] >= i[None, :], scores, np.float32(-np.inf))
    attended = softmax(scores, axis=-1) @ v
    x1 = x + attended.transpose(0, 2, 1, 3).reshape((n, t, d)) @ p["Wo"]
    u = layer_norm(x1, p["g2"], p["b2"]) @ p["W1"] + p["c1"]
    gelu = 0.5 * u * (1 + pt.erf(u / np.float32(np.sqrt(2))))
    return x, x1 + gelu @ p["W2"] + p["c2"]
