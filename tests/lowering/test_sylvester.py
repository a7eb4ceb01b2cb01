"""``SolveSylvester`` in the Kronecker form (``compiler/lowering/rules/sylvester.py``):
``solve_sylvester``, ``solve_continuous_lyapunov`` and both methods of
``solve_discrete_lyapunov`` against SciPy, batched, float32, and the
gradient against PyTensor's."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.linalg as sl

from compiler import compile_to_onnx

try:
    from pytensor.tensor.linalg import solve_continuous_lyapunov, solve_discrete_lyapunov, solve_sylvester
except ImportError:  # PyTensor 2.38
    from pytensor.tensor._linalg.solve.linear_control import (solve_continuous_lyapunov, solve_discrete_lyapunov,
                                                              solve_sylvester)


def _rel(x, want):
    return np.abs(x - want).max() / np.abs(want).max()


@pytest.mark.parametrize("m,n", [(1, 1), (4, 3), (2, 6), (8, 8)])
def test_sylvester_matches_scipy(m, n):
    rng = np.random.default_rng(m * 10 + n)
    A, B, Q = pt.matrix("A"), pt.matrix("B"), pt.matrix("Q")
    model = compile_to_onnx([A, B, Q], outputs=[solve_sylvester(A, B, Q)])
    a, b, q = rng.normal(size=(m, m)), rng.normal(size=(n, n)), rng.normal(size=(m, n))
    a += 3 * np.eye(m)  # spectra of A and -B apart: a well-conditioned equation
    assert _rel(model.run(a, b, q)[0], sl.solve_sylvester(a, b, q)) < 1e-13


def test_static_shapes_float32_and_a_batch_broadcast_against_one_matrix():
    rng = np.random.default_rng(1)
    A, B, Q = pt.tensor3("A", shape=(5, 3, 3)), pt.matrix("B", shape=(2, 2)), pt.tensor3("Q", shape=(5, 3, 2))
    model = compile_to_onnx([A, B, Q], outputs=[solve_sylvester(A, B, Q)])
    a, b, q = rng.normal(size=(5, 3, 3)) + 3 * np.eye(3), rng.normal(size=(2, 2)), rng.normal(size=(5, 3, 2))
    x = model.run(a, b, q)[0]
    for i in range(5):
        assert _rel(x[i], sl.solve_sylvester(a[i], b, q[i])) < 1e-13
    A32, B32, Q32 = pt.matrix("A", dtype="float32"), pt.matrix("B", dtype="float32"), pt.matrix("Q", dtype="float32")
    x32 = compile_to_onnx([A32, B32, Q32], outputs=[solve_sylvester(A32, B32, Q32)]).run(
        *(v.astype(np.float32) for v in (a[0], b, q[0])))[0]
    assert x32.dtype == np.float32 and _rel(x32, sl.solve_sylvester(a[0], b, q[0])) < 1e-5


def test_lyapunov_solvers_match_scipy():
    rng = np.random.default_rng(2)
    A, S = pt.matrix("A"), pt.matrix("S")
    a = rng.normal(size=(4, 4))
    s = rng.normal(size=(4, 4))
    s = s @ s.T
    stable = a - 4 * np.eye(4)
    cont = compile_to_onnx([A, S], outputs=[solve_continuous_lyapunov(A, S)]).run(stable, s)[0]
    assert _rel(cont, sl.solve_continuous_lyapunov(stable, s)) < 1e-13
    contractive = a / (2 * np.abs(np.linalg.eigvals(a)).max())
    for method in ("bilinear", "direct"):
        disc = compile_to_onnx([A, S], outputs=[solve_discrete_lyapunov(A, S, method=method)]).run(contractive, s)[0]
        assert _rel(disc, sl.solve_discrete_lyapunov(contractive, s)) < 1e-13, method


def test_gradient_is_pytensors():
    rng = np.random.default_rng(3)
    A, B, Q = pt.matrix("A"), pt.matrix("B"), pt.matrix("Q")
    w = rng.normal(size=(3, 2))
    grads = pytensor.grad((solve_sylvester(A, B, Q) * w).sum(), [A, B, Q])
    a, b, q = rng.normal(size=(3, 3)) + 3 * np.eye(3), rng.normal(size=(2, 2)), rng.normal(size=(3, 2))
    want = pytensor.function([A, B, Q], grads)(a, b, q)
    got = compile_to_onnx([A, B, Q], outputs=grads).run(a, b, q)
    for g, w_ in zip(got, want):
        assert _rel(g, w_) < 1e-12
