"""Cholesky, SolveTriangular and ExtractDiag (``rules/decompositions.py``)
against SciPy/NumPy, float64 and float32, batched through Blockwise, on
well- and ill-conditioned matrices, and the NaN failure cases."""

import numpy as np
import pytensor.tensor as pt
import pytest
import scipy.linalg

from compiler import compile_to_onnx
from tests.helpers import check_pytensor

RNG = np.random.default_rng(0)


def spd(n, cond=10.0, batch=(), dtype=np.float64):
    """Random symmetric positive definite matrices with condition number ``cond``."""
    out = np.empty(batch + (n, n))
    for idx in np.ndindex(*batch):
        q, _ = np.linalg.qr(RNG.normal(size=(n, n)))
        out[idx] = (q * np.geomspace(1, cond, n)) @ q.T
        out[idx] = (out[idx] + out[idx].T) / 2
    return out.astype(dtype)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("n, cond, rtol", [(1, 1, 1e-13), (3, 10, 1e-13), (8, 1e3, 1e-12), (8, 1e10, 1e-9)])
def test_cholesky_matches_scipy(lower, n, cond, rtol):
    a = spd(n, cond)
    x = pt.matrix("a", shape=(n, n))
    compiled = compile_to_onnx([x], outputs=[pt.linalg.cholesky(x, lower=lower)])
    (got,) = compiled.run(a)
    want = scipy.linalg.cholesky(a, lower=lower)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())
    assert got.dtype == np.float64


def test_cholesky_reads_only_its_triangle_and_float32():
    a = spd(4, 100).astype(np.float32)
    junk = np.triu(RNG.normal(size=(4, 4)), 1).astype(np.float32)  # garbage above the diagonal
    x = pt.matrix("a", shape=(4, 4), dtype="float32")
    check_pytensor([x], [pt.linalg.cholesky(x, lower=True)], [np.tril(a) + junk], rtol=1e-5)
    check_pytensor([x], [pt.linalg.cholesky(x, lower=False)], [np.triu(a) + junk.T], rtol=1e-5)


def test_cholesky_not_positive_definite_is_all_nan_per_matrix():
    good, bad = spd(3), spd(3)
    bad[2, 2] = -1.0
    x = pt.tensor3("a", shape=(2, 3, 3))
    (got,) = compile_to_onnx([x], outputs=[pt.linalg.cholesky(x)]).run(np.stack([good, bad]))
    np.testing.assert_allclose(got[0], scipy.linalg.cholesky(good, lower=True), rtol=1e-13)
    assert np.isnan(got[1]).all()  # PyTensor: potrf info != 0 -> NaN


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("b_ndim", [1, 2])
def test_solve_triangular_matches_scipy(lower, unit, b_ndim):
    n = 5
    a = RNG.normal(size=(n, n)) + 4 * np.eye(n)
    b = RNG.normal(size=(n,) if b_ndim == 1 else (n, 3))
    x = pt.matrix("a", shape=(n, n))
    y = pt.vector("b", shape=(n,)) if b_ndim == 1 else pt.matrix("b", shape=(n, 3))
    for trans in (0, 1):
        out = pt.linalg.solve_triangular(x, y, lower=lower, unit_diagonal=unit, trans=trans, b_ndim=b_ndim)
        (got,) = compile_to_onnx([x, y], outputs=[out]).run(a, b)
        want = scipy.linalg.solve_triangular(a, b, lower=lower, unit_diagonal=unit, trans=trans)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_solve_triangular_batched_ill_conditioned_and_singular():
    n = 6
    a = np.tril(RNG.normal(size=(3, n, n)))
    a[:, np.arange(n), np.arange(n)] = np.geomspace(1, 1e-8, n)  # condition ~1e8 and more
    a[2, 3, 3] = 0.0  # singular
    b = RNG.normal(size=(n, 2))
    x, y = pt.tensor3("a", shape=(3, n, n)), pt.matrix("b", shape=(n, 2))
    (got,) = compile_to_onnx([x, y], outputs=[pt.linalg.solve_triangular(x, y, lower=True)]).run(a, b)
    for k in range(2):
        want = scipy.linalg.solve_triangular(a[k], b, lower=True)
        np.testing.assert_allclose(got[k], want, rtol=1e-6)
    assert np.isnan(got[2]).all()  # PyTensor: trtrs info != 0 -> NaN


def test_cholesky_gradient_through_solves():
    n = 3
    x = pt.matrix("a", shape=(n, n))
    b = pt.vector("b", shape=(n,))
    L = pt.linalg.cholesky(x)
    z = pt.linalg.solve_triangular(L, b, lower=True)
    cost = (z ** 2).sum() + pt.log(pt.diagonal(L)).sum()
    check_pytensor([x, b], [cost, *pt.grad(cost, [x, b])], [spd(n, 5), RNG.normal(size=n)], rtol=1e-11)


@pytest.mark.parametrize("offset, axes", [(0, (0, 1)), (1, (0, 1)), (-2, (1, 0)), (0, (1, 2)), (1, (2, 0))])
@pytest.mark.parametrize("static", [True, False])
def test_extract_diag(offset, axes, static):
    x = pt.tensor3("x", shape=(4, 5, 3) if static else (None, None, None))
    check_pytensor([x], [pt.diagonal(x, offset, *axes)], [RNG.normal(size=(4, 5, 3))])


def test_extract_diag_long_empty_and_int():
    x, i = pt.dmatrix("x", shape=(40, 40)), pt.lmatrix("i")
    outs = [pt.diagonal(x), pt.diagonal(x, 41), pt.diagonal(i, -1)]
    check_pytensor([x, i], outs, [RNG.normal(size=(40, 40)), np.arange(12).reshape(3, 4)])


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("n, static", [(5, False), (70, True)])
def test_cholesky_loop_form(lower, n, static):
    """Dynamic sizes and sizes over UNROLL_LIMITS: the loop form, batched,
    reading one triangle (an Inf in the other), NaN where not positive definite."""
    x = pt.tensor3("a", shape=(3, n, n) if static else (None, None, None))
    compiled = compile_to_onnx([x], outputs=[pt.linalg.cholesky(x, lower=lower)])
    assert compiled.ir.contains_op("loop")  # 70 is over scan-unroll's 64 too
    a = spd(n, 1e4, batch=(3,))
    a[1, n - 1, n - 1] = -1.0
    unread = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    (got,) = compiled.run(np.where(unread, np.inf, a))
    for k in (0, 2):
        want = scipy.linalg.cholesky(a[k], lower=lower)
        np.testing.assert_allclose(got[k], want, rtol=1e-10, atol=1e-12 * np.abs(want).max())
    assert np.isnan(got[1]).all()


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("b_ndim", [1, 2])
def test_solve_triangular_loop_form(lower, unit, b_ndim):
    n = 6
    a = RNG.normal(size=(n, n)) + 4 * np.eye(n)
    unread = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    given = np.where(unread, np.inf, a)
    b = RNG.normal(size=(2, n) if b_ndim == 1 else (2, n, 3))
    x = pt.dmatrix("a")
    y = pt.dmatrix("b") if b_ndim == 1 else pt.dtensor3("b")
    out = pt.linalg.solve_triangular(x, y, lower=lower, unit_diagonal=unit, b_ndim=b_ndim)
    compiled = check_pytensor([x, y], [out], [given, b], rtol=1e-12)
    assert compiled.ir.contains_op("loop")
    singular = given.copy()
    singular[2, 2] = 0.0
    (got,) = compiled.run(singular, b)
    assert np.isnan(got).all() != unit
