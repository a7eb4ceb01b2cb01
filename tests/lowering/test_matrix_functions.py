"""``expm`` (``compiler/lowering/rules/matrix_functions.py``): against
mpmath's ``expm`` (30 digits) on random matrices of norms 1e-3 to 50, sizes
1 to 8; batches of mixed norms; NaN/inf inputs; the gradient (PyTensor 3's
block-matrix form) against PyTensor; a compiled function."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from compiler.lowering.compat import IS_PYTENSOR_3
from compiler.lowering.errors import UnsupportedOpsError
from compiler.lowering.rules.matrix_functions import THETA_13

mp.mp.dps = 30


def _mp_expm(x: np.ndarray) -> np.ndarray:
    return np.array(mp.expm(mp.matrix(x.tolist())).tolist(), dtype=float)


def _bound(x: np.ndarray) -> float:
    """64 n eps times the 2^s squarings' error growth, relative to the result's largest entry (the Padé
    quotient of a matrix with eigenvalues near -theta_13 cancels: 33 eps measured at n = 1, a = -5.2)."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(x).sum(axis=0).max(), 1e-300) / THETA_13))))
    return 64 * np.finfo(float).eps * 2 ** s * x.shape[0]


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_against_mpmath(n):
    a = pt.dmatrix("a")
    model = compile_to_onnx([a], outputs=[pt.linalg.expm(a)])
    rng = np.random.default_rng(n)
    for scale in (1e-3, 0.1, 1.0, 4.0, 12.0):
        x = rng.normal(size=(n, n)) * scale / np.sqrt(n)
        got, want = model.run(x)[0], _mp_expm(x)
        err = np.max(np.abs(got - want)) / np.max(np.abs(want))
        assert err <= max(_bound(x), 2e-15), (n, scale, err)


def test_zero_and_nilpotent_and_diagonal_matrices():
    a = pt.dmatrix("a")
    model = compile_to_onnx([a], outputs=[pt.linalg.expm(a)])
    np.testing.assert_array_equal(model.run(np.zeros((3, 3)))[0], np.eye(3))
    nil = np.array([[0.0, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(model.run(nil)[0], [[1.0, 1.0], [0.0, 1.0]], rtol=1e-15, atol=1e-16)
    d = np.diag([-3.0, 0.5, 2.0])
    np.testing.assert_allclose(model.run(d)[0], np.diag(np.exp([-3.0, 0.5, 2.0])), rtol=4e-15, atol=1e-300)


def test_a_batch_squares_each_matrix_its_own_number_of_times():
    b = pt.dtensor3("b")
    model = compile_to_onnx([b], outputs=[pt.linalg.expm(b)])
    rng = np.random.default_rng(7)
    x = rng.normal(size=(4, 3, 3)) * np.array([1e-3, 1.0, 10.0, 40.0])[:, None, None]
    got = model.run(x)[0]
    for g, xi in zip(got, x):
        want = _mp_expm(xi)
        assert np.max(np.abs(g - want)) / np.max(np.abs(want)) <= _bound(xi)


def test_nan_and_inf_entries_give_nan_matrices():
    b = pt.dtensor3("b")
    model = compile_to_onnx([b], outputs=[pt.linalg.expm(b)])
    x = np.stack([np.eye(2), [[np.nan, 0.0], [0.0, 1.0]], [[np.inf, 1.0], [0.0, 1.0]]])
    got = model.run(x)[0]
    np.testing.assert_allclose(got[0], np.diag([np.e, np.e]), rtol=1e-15)
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all()


def test_float32_and_compiled_function():
    a = pt.fmatrix("a")
    f = pytensor.function([a], pt.linalg.expm(a))
    model = compile_to_onnx(f)
    x = (np.random.default_rng(3).normal(size=(4, 4)) * 0.7).astype(np.float32)
    got = model.run(x)[0]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _mp_expm(x.astype(float)), rtol=2e-6, atol=2e-6)


def test_gradient():
    """PyTensor 3 differentiates ``expm`` through the exponential of a
    2n x 2n block matrix, which lowers through the same rule; 2.38's
    gradient (a complex eigendecomposition, ``Eig``) is refused, naming it."""
    a = pt.dmatrix("a")
    y = (pt.linalg.expm(a) * np.arange(9.0).reshape(3, 3)).sum()
    g = pytensor.grad(y, a)
    x = np.random.default_rng(4).normal(size=(3, 3))
    if not IS_PYTENSOR_3:
        with pytest.raises(UnsupportedOpsError, match="Eig"):
            compile_to_onnx([a], outputs=[g])
        return
    got = compile_to_onnx([a], outputs=[g]).run(x)[0]
    np.testing.assert_allclose(got, pytensor.function([a], g)(x), rtol=1e-12, atol=1e-13)
