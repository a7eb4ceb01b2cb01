"""Small graphs the tool tests compile (importable as ``MODULE:FUNCTION``)."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt


def relu_mlp():
    """``([x], [y])``: a float32 two-layer MLP with relu, batch dim symbolic."""
    rng = np.random.default_rng(0)
    x = pt.tensor("x", dtype="float32", shape=(None, 4))
    W1 = pytensor.shared(rng.normal(size=(4, 8)).astype(np.float32), name="W1")
    W2 = pytensor.shared(rng.normal(size=(8, 3)).astype(np.float32), name="W2")
    h = pt.maximum(x @ W1, 0)
    return [x], [pt.exp(h @ W2)]


def compiled_relu_mlp():
    """The same MLP as a compiled ``pytensor.function``."""
    ins, outs = relu_mlp()
    return pytensor.function(ins, outs)


def scaled_relu_mlp():
    """``relu_mlp`` with its first product scaled by ``exp(0)``, a constant
    subgraph ``constant-folding`` turns into a constant (a rewrite to count)."""
    rng = np.random.default_rng(0)
    x = pt.tensor("x", dtype="float32", shape=(None, 4))
    W1 = pytensor.shared(rng.normal(size=(4, 8)).astype(np.float32), name="W1")
    W2 = pytensor.shared(rng.normal(size=(8, 3)).astype(np.float32), name="W2")
    h = pt.maximum((x @ W1) * pt.exp(pt.constant(np.float32(0.0))), 0)
    return [x], [pt.exp(h @ W2)]
