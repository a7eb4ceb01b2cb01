"""onnxruntime's ``NoopElimination`` (onnxruntime/core/optimizer/noop_elimination.cc,
on in every default session) casts a one-element constant to float32 before it
decides that ``x + c`` / ``x - c`` adds 0 or ``x * c`` / ``x / c`` multiplies by 1,
so a float64 ``1e-300`` added or a factor ``1 + 1e-10`` vanished from our models
in any session but ours (``log(x + 1e-300)`` was ``log(x)``). The emitter writes
those as ``Sum`` (``EmitContext._avoid_noop_elimination``): checked here in
sessions with onnxruntime's default optimizations, against PyTensor."""

import numpy as np
import onnxruntime as ort
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from tests.helpers import REFERENCE_MODE

X = np.array([0.0, 1.0, -7.3, 1e-300, 3e5])


def _default_session_run(model, x):
    session = ort.InferenceSession(model.model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})


def _graphs():
    x = pt.dvector("x")
    y = x * 3  # a node's output: the rule does not remove a node reading a graph input directly
    exact = [(y + 1e-100) * 1e100, (y - 1e-100) * 1e100, (1e-100 + y) * 1e100, pt.log(pt.abs(y) + 1e-300),
             (1e-300 - y) * 1e300, y + np.float64(2.0 ** -150)]
    rounded = [y * (1 + 1e-10) - y, (1 + 1e-10) * y - y, y / (1 + 1e-10) - y, y * (1 - 2e-11)]
    return x, exact, rounded


def test_tiny_addends_survive_default_sessions_exactly():
    x, exact, _ = _graphs()
    want = pytensor.function([x], exact, mode=REFERENCE_MODE)(X)
    got = _default_session_run(compile_to_onnx([x], outputs=exact), X)
    for g, w in zip(got, want):  # dropped, they are 0 against 1, log(3e-300) against -inf, ...
        np.testing.assert_allclose(g, w, rtol=1e-15, atol=0)


@pytest.mark.parametrize("numerics", ["fast", "strict"])
def test_factors_next_to_one_survive(numerics):
    """fast: ``Sum(x, x (c - 1))`` in any session; strict: the Mul/Div itself,
    in our sessions (which disable the rule). Either within an ulp of ``x c``
    (the differences cancel against it; dropped, they are 0)."""
    x, _, rounded = _graphs()
    want = pytensor.function([x], rounded, mode=REFERENCE_MODE)(X)
    model = compile_to_onnx([x], outputs=rounded, numerics=numerics)
    ops = [node.op_type for node in model.model.graph.node]
    assert ("Sum" in ops) == (numerics == "fast")
    got = _default_session_run(model, X) if numerics == "fast" else model.run(X)
    for g, w in zip(got, want):
        assert np.all(np.abs(g - w) <= 2 * np.finfo(float).eps * np.abs(3 * X)), (g, w)


def test_ordinary_constants_keep_their_ops():
    """The guard fires only for constants the rule would misread."""
    x = pt.dvector("x")
    model = compile_to_onnx([x], outputs=[(x * 3 + 0.5) * 1.5 - 2.0, (x * 3) * (1 + 1e-7)])
    ops = [node.op_type for node in model.model.graph.node]
    assert "Sum" not in ops and ops.count("Mul") == 3
