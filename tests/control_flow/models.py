"""The control-flow models of the acceptance tests and the benchmark, built
with PyTensor's ``scan`` and ``ifelse``.

Each builder takes the sequence length ``T`` (None: symbolic) and returns a
``Model``: input variables, output variables and a function giving input
values for a concrete length. Weights are shared variables (baked into the
model as initializers), so scans read them as implicit non-sequences.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.ifelse import ifelse
from pytensor.scan import scan
from pytensor.scan.utils import until

FLOAT = "float64"
BATCH, D_IN, HIDDEN = 2, 3, 4


@dataclass
class Model:
    """A PyTensor graph to export: ``values(T)`` gives one array per input."""

    name: str
    inputs: list
    outputs: list
    values: Callable[[int], list[np.ndarray]]


def _scan(*args, **kwargs):
    return scan(*args, **kwargs, return_updates=False)


def _weights(seed: int, *shapes) -> list:
    rng = np.random.default_rng(seed)
    return [pytensor.shared(rng.normal(scale=0.5, size=s).astype(FLOAT), name=f"w{seed}_{i}")
            for i, s in enumerate(shapes)]


def _sequence(T, seed: int, shape=(BATCH, D_IN)) -> Callable[[int], np.ndarray]:
    def make(length: int) -> np.ndarray:
        return np.random.default_rng(seed + length).normal(size=(length, *shape)).astype(FLOAT)
    return make


def cumsum(T=None) -> Model:
    """``ys[t] = ys[t-1] + x[t]``: a cumulative sum written as a scan."""
    x = pt.tensor("x", dtype=FLOAT, shape=(T,))
    ys = _scan(lambda x_t, acc: acc + x_t, sequences=[x], outputs_info=[pt.zeros((), dtype=FLOAT)])
    return Model("cumsum", [x], [ys], lambda n: [_sequence(T, 1, ())(n)])


def elman(T=None) -> Model:
    """Elman RNN ``h_t = tanh(x_t W + h_{t-1} U + b)`` over ``(T, batch, d)``."""
    x = pt.tensor("x", dtype=FLOAT, shape=(T, BATCH, D_IN))
    h0 = pt.matrix("h0", dtype=FLOAT)
    W, U, b = _weights(2, (D_IN, HIDDEN), (HIDDEN, HIDDEN), (HIDDEN,))
    hs = _scan(lambda x_t, h: pt.tanh(x_t @ W + h @ U + b), sequences=[x], outputs_info=[h0])
    return Model("elman", [x, h0], [hs, hs[-1]],
                 lambda n: [_sequence(T, 2)(n), np.zeros((BATCH, HIDDEN), FLOAT) + 0.1])


def gru(T=None) -> Model:
    """A GRU layer (update gate z, reset gate r) over ``(T, batch, d)``."""
    x = pt.tensor("x", dtype=FLOAT, shape=(T, BATCH, D_IN))
    Wz, Wr, Wh = _weights(3, *[(D_IN, HIDDEN)] * 3)
    Uz, Ur, Uh = _weights(4, *[(HIDDEN, HIDDEN)] * 3)
    bz, br, bh = _weights(5, *[(HIDDEN,)] * 3)

    def step(x_t, h):
        z = pt.sigmoid(x_t @ Wz + h @ Uz + bz)
        r = pt.sigmoid(x_t @ Wr + h @ Ur + br)
        candidate = pt.tanh(x_t @ Wh + (r * h) @ Uh + bh)
        return (1 - z) * h + z * candidate

    hs = _scan(step, sequences=[x], outputs_info=[pt.zeros((BATCH, HIDDEN), dtype=FLOAT)])
    return Model("gru", [x], [hs], lambda n: [_sequence(T, 3)(n)])


def lstm(T=None) -> Model:
    """An LSTM layer carrying (h, c) over ``(T, batch, d)``; returns the
    hidden states and the last cell state."""
    x = pt.tensor("x", dtype=FLOAT, shape=(T, BATCH, D_IN))
    W, U, b = _weights(6, (D_IN, 4 * HIDDEN), (HIDDEN, 4 * HIDDEN), (4 * HIDDEN,))
    H = HIDDEN

    def step(x_t, h, c):
        g = x_t @ W + h @ U + b
        i, f, o = pt.sigmoid(g[:, :H]), pt.sigmoid(g[:, H:2 * H]), pt.sigmoid(g[:, 2 * H:3 * H])
        c_new = f * c + i * pt.tanh(g[:, 3 * H:])
        return o * pt.tanh(c_new), c_new

    zeros = pt.zeros((BATCH, HIDDEN), dtype=FLOAT)
    hs, cs = _scan(step, sequences=[x], outputs_info=[zeros, zeros])
    return Model("lstm", [x], [hs, cs[-1]], lambda n: [_sequence(T, 6)(n)])


def two_taps(T=None) -> Model:
    """``x_t = a x_{t-1} + b x_{t-2}`` (a mit-sot with taps -2, -1) for
    ``T`` steps from two initial values."""
    x0 = pt.vector("x0", dtype=FLOAT)
    a, b = pt.scalar("a", dtype=FLOAT), pt.scalar("b", dtype=FLOAT)
    if T is None:
        n = pt.scalar("n", dtype="int64")
        inputs = [x0, a, b, n]
    else:
        n, inputs = T, [x0, a, b]
    xs = _scan(lambda x2, x1: a * x1 + b * x2, outputs_info=[{"initial": x0, "taps": [-2, -1]}], n_steps=n)

    def values(length):
        base = [np.array([1.0, 0.5], FLOAT), np.array(0.9, FLOAT), np.array(-0.3, FLOAT)]
        return base + [np.array(length, np.int64)] if T is None else base
    return Model("two_taps", inputs, [xs], values)


def newton_until(T=None) -> Model:
    """A while loop: Newton's iteration for ``sqrt(y)`` until the update is
    below a tolerance (at most 50 steps); returns all iterates and the last."""
    y = pt.scalar("y", dtype=FLOAT)

    def step(v):
        nxt = 0.5 * (v + y / v)
        return nxt, until(pt.abs(nxt - v) < 1e-9)

    vs = _scan(step, outputs_info=[pt.as_tensor(1.0, dtype=FLOAT)], n_steps=50)
    return Model("newton_until", [y], [vs, vs[-1]], lambda n: [np.array(float(n) + 0.5, FLOAT)])


def backwards(T=None) -> Model:
    """A reverse cumulative sum with ``go_backwards`` (PyTensor reverses
    the sequence in the outer graph), with a second sequence tap ``x[t+1]``:
    ``T`` steps over ``T + 1`` rows."""
    x = pt.tensor("x", dtype=FLOAT, shape=(None if T is None else T + 1, BATCH))
    ys = _scan(lambda x_t, x_next, acc: acc + x_t * x_next, sequences=[{"input": x, "taps": [0, 1]}],
               outputs_info=[pt.zeros((BATCH,), dtype=FLOAT)], go_backwards=True)
    return Model("backwards", [x], [ys], lambda n: [_sequence(T, 7, (BATCH,))(n + 1)])


def ifelse_outside(T=None) -> Model:
    """``ifelse`` on a data-dependent condition choosing between two
    computations over the input."""
    x = pt.tensor("x", dtype=FLOAT, shape=(T, BATCH))
    big = pt.exp(x.sum(axis=0)) * 2.0
    small = pt.log1p(pt.abs(x.max(axis=0)))
    out = ifelse(pt.gt(x.sum(), 0.0), big, small)
    return Model("ifelse_outside", [x], [out], lambda n: [_sequence(T, 8, (BATCH,))(n)])


def ifelse_inside(T=None) -> Model:
    """A scan whose step chooses with ``ifelse`` per step: accumulate
    ``x_t`` when it sums positive, else decay the state."""
    x = pt.tensor("x", dtype=FLOAT, shape=(T, BATCH))

    def step(x_t, acc):
        return ifelse(pt.gt(x_t.sum(), 0.0), acc + x_t, acc * 0.5)

    ys = _scan(step, sequences=[x], outputs_info=[pt.ones((BATCH,), dtype=FLOAT)])
    return Model("ifelse_inside", [x], [ys], lambda n: [_sequence(T, 9, (BATCH,))(n)])


ALL = [cumsum, elman, gru, lstm, two_taps, newton_until, backwards, ifelse_outside, ifelse_inside]
