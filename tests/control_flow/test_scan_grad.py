"""Gradients of scans: ``pytensor.grad`` through a scan builds a backward
scan with mit-mot outputs (``rules/scan.py: _MitMot``). An Elman RNN's and a
GRU's loss and gradients export from the raw graph and from a default-mode
compiled function and match PyTensor: float64 within 1e-10, float32 within
1e-5 (relative to max(1, |value|))."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode
from pytensor.link.vm import VMLinker
from pytensor.graph.traversal import io_toposort
from pytensor.scan.op import Scan

from compiler import compile_to_onnx
from ir.interpreter import evaluate

PY = Mode(VMLinker(use_cloop=False, c_thunks=False), "fast_compile")  # the raw graph, Python thunks: nothing compiles
TOL = {"float64": 1e-10, "float32": 1e-5}
T, B, D, H = 9, 3, 4, 5


MODE = {"mode": None}  # the inner functions' mode of the scans built (PyTensor's default unless a test sets it)


def _scan(step, **kwargs):
    out, _ = pytensor.scan(step, mode=MODE["mode"], **kwargs)
    return out


@pytest.fixture
def py_scans():
    """Scans built inside the test run their inner functions in Python too
    (the reference then compiles nothing: PyTensor 2.38 would compile C)."""
    MODE["mode"] = PY
    yield
    MODE["mode"] = None


def elman(dt):
    """h_t = tanh(x_t W + h_{t-1} U + b); loss = mean((h V - y)^2)."""
    x, y = pt.tensor3("x", dtype=dt), pt.tensor3("y", dtype=dt)
    h0 = pt.matrix("h0", dtype=dt)
    W, U, V = (pt.matrix(n, dtype=dt) for n in "WUV")
    b = pt.vector("b", dtype=dt)
    hs = _scan(lambda x_t, h, W, U, b: pt.tanh(x_t @ W + h @ U + b), sequences=[x], outputs_info=[h0],
               non_sequences=[W, U, b])
    loss = ((hs @ V - y) ** 2).mean()
    params = [W, U, V, b, h0]
    shapes = {"x": (T, B, D), "y": (T, B, 2), "h0": (B, H), "W": (D, H), "U": (H, H), "V": (H, 2), "b": (H,)}
    return [x, y, h0, W, U, V, b], loss, params, shapes


def gru(dt):
    """A GRU cell (update z, reset r, candidate c) over the sequence; the loss
    reads every step's state."""
    x, y = pt.tensor3("x", dtype=dt), pt.tensor3("y", dtype=dt)
    h0 = pt.matrix("h0", dtype=dt)
    Wz, Wr, Wc = (pt.matrix(n, dtype=dt) for n in ("Wz", "Wr", "Wc"))
    Uz, Ur, Uc = (pt.matrix(n, dtype=dt) for n in ("Uz", "Ur", "Uc"))
    bz, br, bc = (pt.vector(n, dtype=dt) for n in ("bz", "br", "bc"))
    V = pt.matrix("V", dtype=dt)

    def step(x_t, h, Wz, Wr, Wc, Uz, Ur, Uc, bz, br, bc):
        z = pt.sigmoid(x_t @ Wz + h @ Uz + bz)
        r = pt.sigmoid(x_t @ Wr + h @ Ur + br)
        c = pt.tanh(x_t @ Wc + (r * h) @ Uc + bc)
        return (1 - z) * h + z * c

    weights = [Wz, Wr, Wc, Uz, Ur, Uc, bz, br, bc]
    hs = _scan(step, sequences=[x], outputs_info=[h0], non_sequences=weights)
    loss = ((hs @ V - y) ** 2).mean() + 0.1 * (hs[-1] ** 2).sum()
    shapes = {"x": (T, B, D), "y": (T, B, 2), "h0": (B, H), "V": (H, 2)}
    shapes |= {n: (D, H) for n in ("Wz", "Wr", "Wc")} | {n: (H, H) for n in ("Uz", "Ur", "Uc")}
    shapes |= {n: (H,) for n in ("bz", "br", "bc")}
    return [x, y, h0, *weights, V], loss, weights + [V, h0], shapes


def _values(inputs, shapes, dt, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shapes[v.name]) * (0.5 if v.name[0] in "WUV" else 1.0)).astype(dt)
            for v in inputs]


def _close(got, want, dt, what):
    for g, w, name in zip(got, want, what):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        scale = max(1.0, float(np.max(np.abs(w))))
        assert np.max(np.abs(g - w)) <= TOL[dt] * scale, f"{name}: {np.max(np.abs(g - w))}"


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("model", [elman, gru])
def test_rnn_loss_and_grad_from_the_raw_graph(model, dt, py_scans):
    inputs, loss, params, shapes = model(dt)
    grads = pytensor.grad(loss, params)
    outputs = [loss, *grads]
    assert any(isinstance(n.op, Scan) and n.op.info.n_mit_mot for n in io_toposort(inputs, outputs))
    values = _values(inputs, shapes, dt)
    want = pytensor.function(inputs, outputs, mode=PY)(*values)
    m = compile_to_onnx(inputs, outputs=outputs)
    names = ["loss"] + [f"d{p.name}" for p in params]
    _close(m.run(*values), want, dt, names)
    if dt == "float64":  # the IR interpreter runs the same loop
        _close(evaluate(m.ir, values), want, dt, names)


@pytest.mark.parametrize("dt", ["float64", pytest.param("float32", marks=pytest.mark.slow)])
@pytest.mark.parametrize("model", [elman, gru])
def test_rnn_loss_and_grad_from_a_compiled_function(model, dt):
    inputs, loss, params, shapes = model(dt)
    outputs = [loss, *pytensor.grad(loss, params)]
    f = pytensor.function(inputs, outputs)
    values = _values(inputs, shapes, dt, seed=1)
    m = compile_to_onnx(f)
    _close(m.run(*values), f(*values), dt, ["loss"] + [f"d{p.name}" for p in params])


def test_sequence_length_is_dynamic(py_scans):
    """One model serves every sequence length (the Loop's trip count is the input's)."""
    inputs, loss, params, shapes = elman("float64")
    outputs = [loss, *pytensor.grad(loss, params)]
    f = pytensor.function(inputs, outputs, mode=PY)
    m = compile_to_onnx(inputs, outputs=outputs)
    for t in (1, 4, 13):
        values = _values(inputs, shapes | {"x": (t, B, D), "y": (t, B, 2)}, "float64", seed=t)
        _close(m.run(*values), f(*values), "float64", ["loss"] + [p.name for p in params])


def test_mit_mot_with_two_input_taps_of_a_mit_sot(py_scans):
    """A mit-sot with taps -1 and -2 (a second-order recurrence): its
    gradient scan reads three taps of the mit-mot buffer."""
    x = pt.vector("x")
    a = pt.scalar("a")
    s0 = pt.vector("s0")
    seq = _scan(lambda x_t, s1, s2, a: a * s1 - 0.5 * s2 + x_t, sequences=[x],
                outputs_info=[{"initial": s0, "taps": [-1, -2]}], non_sequences=[a])
    loss = (seq ** 2).sum()
    outputs = [loss, *pytensor.grad(loss, [a, s0, x])]
    values = [np.linspace(-1, 1, 8), np.array(0.7), np.array([0.3, -0.2])]
    want = pytensor.function([x, a, s0], outputs, mode=PY)(*values)
    m = compile_to_onnx([x, a, s0], outputs=outputs)
    _close(m.run(*values), want, "float64", ["loss", "da", "ds0", "dx"])
