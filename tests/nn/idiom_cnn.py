"""A two-block CNN as a PyTensor user writes it without pooling or
convolution helpers: ``pt.pad`` + valid ``convolve2d`` (a "same" 3x3 conv),
``maximum(., 0)``, the reshape-max pooling idiom on sizes read off the
shape, a global mean over the spatial axes, a dense layer and a softmax;
the input a plain ``pt.tensor4`` (symbolic batch, channels, H and W). Shared
by the recovery acceptance test and the advisor tests."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.tensor.signal import convolve2d
from pytensor.tensor.special import softmax


def idiom_cnn(seed: int = 0):
    """``(x, probs)``: x float32 ``(N, 3, H, W)`` (H, W even, >= 4), probs
    ``(N, 10)``; the weights are shared variables of dtype ``floatX``."""
    rng = np.random.default_rng(seed)
    floatx = pytensor.config.floatX

    def shared(shape, scale, name):
        return pytensor.shared((rng.normal(size=shape) * scale).astype(floatx), name=name)

    W1, b1 = shared((8, 3, 3, 3), 0.3, "W1"), shared((8,), 0.1, "b1")
    W2, b2 = shared((16, 8, 3, 3), 0.2, "W2"), shared((16,), 0.1, "b2")
    W3, b3 = shared((16, 10), 0.3, "W3"), shared((10,), 0.1, "b3")
    x = pt.tensor4("x", dtype="float32")

    def conv(h, W, b):
        h = pt.pad(h, ((0, 0), (0, 0), (1, 1), (1, 1)))
        return convolve2d(h[:, None], W[None], mode="valid").sum(axis=2) + b[None, :, None, None]

    def pool(h):
        n, c, height, width = h.shape
        return h.reshape((n, c, height // 2, 2, width // 2, 2)).max(axis=(3, 5))

    h = pool(pt.maximum(conv(x, W1, b1), 0))
    h = pool(pt.maximum(conv(h, W2, b2), 0))
    return x, softmax(h.mean(axis=(2, 3)) @ W3 + b3, axis=-1)
