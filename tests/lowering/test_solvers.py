"""Solve (gen, sym, pos, tridiagonal, banded), CholeskySolve, MatrixInverse, Det and SLogDet
(``rules/solvers.py`` on ``rules/matrix_loops.py``) against SciPy/NumPy:
float64 and float32, static sizes (the loop unrolled by ``scan-unroll``)
and symbolic ones (an ONNX Loop), batched ``Blockwise`` forms with
broadcast batch dims, well- and ill-conditioned matrices, and the failure
values (NaN for singular or non-positive-definite systems, ``det == 0``,
``slogdet == (0, -inf)``)."""

import numpy as np
import pytensor.tensor as pt
import pytest
import scipy.linalg

from compiler import compile_to_onnx
from tests.helpers import check_pytensor
from tests.lowering.test_decompositions import spd

RNG = np.random.default_rng(5)
EPS64 = np.finfo(np.float64).eps


def general(n, cond=10.0, batch=()):
    """Random nonsymmetric matrices with condition number ``cond`` (U diag(s) V^T)."""
    out = np.empty(batch + (n, n))
    for idx in np.ndindex(*batch):
        u, _ = np.linalg.qr(RNG.normal(size=(n, n)))
        v, _ = np.linalg.qr(RNG.normal(size=(n, n)))
        out[idx] = (u * np.geomspace(1, 1 / cond, n)) @ v.T
    return out


def matrix(name, n, dtype="float64", batch=()):
    return pt.tensor(name, dtype=dtype, shape=batch + (n, n))


def assert_normwise(got, want, bound):
    """``|got - want| <= bound * |want|`` in the max norm, per matrix/vector."""
    err = np.max(np.abs(got - want))
    assert err <= bound * np.max(np.abs(want)), (err, np.max(np.abs(want)), bound)


@pytest.mark.parametrize("n", [5, None])
@pytest.mark.parametrize("assume_a, lower", [("gen", False), ("sym", True), ("sym", False), ("pos", True),
                                             ("pos", False)])
@pytest.mark.parametrize("b_ndim", [1, 2])
def test_solve_matches_scipy(n, assume_a, lower, b_ndim):
    a = matrix("a", n)
    b = pt.tensor("b", dtype="float64", shape=(n,) if b_ndim == 1 else (n, 2))
    compiled = compile_to_onnx([a, b], outputs=[pt.linalg.solve(a, b, assume_a=assume_a, lower=lower, b_ndim=b_ndim)])
    assert compiled.ir.contains_op("loop") == (n is None)
    size = 5
    for cond, bound in [(10.0, 1e-13), (1e8, 1e8 * 50 * EPS64)]:
        a_value = spd(size, cond) if assume_a != "gen" else general(size, cond)
        b_value = RNG.normal(size=(size,) if b_ndim == 1 else (size, 2))
        want = scipy.linalg.solve(a_value, b_value, assume_a=assume_a)
        (got,) = compiled.run(a_value if assume_a == "gen" else only_triangle(a_value, lower), b_value)
        assert_normwise(got, want, bound)


def only_triangle(a, lower):
    """``a``'s ``lower`` (or upper) triangle with garbage (and an Inf) in the other one."""
    junk = np.triu(RNG.normal(size=a.shape), 1)
    junk[0, -1] = np.inf
    return np.tril(a) + junk if lower else np.triu(a) + junk.T


def banded(n, lower, upper, cond=10.0):
    """``general(n, cond)`` with every entry outside ``lower`` subdiagonals
    and ``upper`` superdiagonals set to 0."""
    i, j = np.indices((n, n))
    return np.where((i - j <= lower) & (j - i <= upper), general(n, cond), 0.0)


@pytest.mark.parametrize("n", [6, None])
@pytest.mark.parametrize("assume_a", ["tridiagonal", "banded"])
def test_tridiagonal_and_banded_solve_match_scipy(n, assume_a):
    """"tridiagonal" reads only the three central diagonals (NaN elsewhere is
    ignored, as by ``gtsv``); "banded" solves the band SciPy finds; both
    pivot, so a zero on the diagonal is no failure; a singular band is NaN."""
    a, b = matrix("a", n), pt.tensor("b", dtype="float64", shape=(n, 2))
    compiled = compile_to_onnx([a, b], outputs=[pt.linalg.solve(a, b, assume_a=assume_a)])
    b_value = RNG.normal(size=(6, 2))
    for lower, upper in [(1, 1), (2, 1), (0, 3)] if assume_a == "banded" else [(1, 1)]:
        a_value = banded(6, lower, upper)
        if lower:
            a_value[0, 0] = 0.0  # partial pivoting needed (a triangular band would be singular)
        want = scipy.linalg.solve(a_value, b_value, assume_a=assume_a)
        given = a_value.copy()
        if assume_a == "tridiagonal":
            given[0, 3], given[5, 1] = np.nan, 7.0  # off the band: not read
        (got,) = compiled.run(given, b_value)
        assert_normwise(got, want, 1e-13)
    singular = banded(6, 1, 1)
    singular[:, 2] = 0.0
    (got,) = compiled.run(singular, b_value)
    assert np.isnan(got).all()


@pytest.mark.parametrize("n", [9, None])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_tridiagonal_solve_runs_scipys_gttrf_gttrs(n, dtype):
    """"tridiagonal" runs LAPACK's ``gttrf``/``gttrs`` steps on the three
    diagonals (``rules/tridiagonal.py``), as ``scipy.linalg.solve`` does:
    its result to a few ulp (measured: bit-equal), rows interchanged at
    about half the steps; a zero on ``U``'s diagonal gives NaN."""
    a, b = matrix("a", n, dtype), pt.tensor("b", dtype=dtype, shape=(n, 3))
    compiled = compile_to_onnx([a, b], outputs=[pt.linalg.solve(a, b, assume_a="tridiagonal")])
    eps = np.finfo(dtype).eps
    for _ in range(3):
        a_value = banded(9, 1, 1) * np.where(RNG.random(9) < 0.5, 0.1, 3.0)[:, None]
        a_value, b_value = a_value.astype(dtype), RNG.normal(size=(9, 3)).astype(dtype)
        (got,) = compiled.run(a_value, b_value)
        want = scipy.linalg.solve(a_value, b_value, assume_a="tridiagonal")
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=0, atol=16 * eps * np.abs(want).max())
    a_value[2, :] = 0.0  # row 2 of the band is zero: U[2, 2] == 0 after any interchanges
    (got,) = compiled.run(a_value, b_value)
    assert np.isnan(got).all()


def test_batched_tridiagonal_solve_broadcasts():
    a, b = matrix("a", 4, batch=(3,)), pt.tensor("b", dtype="float64", shape=(1, 4))
    compiled = compile_to_onnx([a, b], outputs=[pt.linalg.solve(a, b, assume_a="tridiagonal", b_ndim=1)])
    a_value, b_value = np.stack([banded(4, 1, 1) for _ in range(3)]), RNG.normal(size=(1, 4))
    (got,) = compiled.run(a_value, b_value)
    for k in range(3):
        assert_normwise(got[k], scipy.linalg.solve(a_value[k], b_value[0], assume_a="tridiagonal"), 1e-13)


def test_solve_checked_against_pytensor_float32_and_gradient():
    a, b = matrix("a", 4, "float32"), pt.vector("b", dtype="float32", shape=(4,))
    values = [general(4).astype(np.float32), RNG.normal(size=4).astype(np.float32)]
    check_pytensor([a, b], [pt.linalg.solve(a, b)], values,
                   rtol=1e-5)
    a64, b64 = matrix("a", 4), pt.dvector("b")
    cost = (pt.linalg.solve(a64, b64) ** 2).sum()
    check_pytensor([a64, b64], [cost, *pt.grad(cost, [a64, b64])], [general(4, 5), RNG.normal(size=4)], rtol=1e-11)


def test_singular_and_not_positive_definite_give_nan():
    a, b = matrix("a", 3, batch=(2,)), pt.dmatrix("b", shape=(3, 1))
    singular = general(3)
    singular[:, 2] = singular[:, 0] * 0.0
    bad_spd = spd(3)
    bad_spd[1, 1] = -1.0
    good = spd(3)
    b_value = RNG.normal(size=(3, 1))
    compiled = compile_to_onnx([a, b], outputs=[pt.linalg.solve(a, b, b_ndim=2),
                                                pt.linalg.solve(a, b, assume_a="pos", b_ndim=2)])
    gen, pos = compiled.run(np.stack([singular, good]), b_value)
    assert np.isnan(gen[0]).all()  # PyTensor: LinAlgError -> NaN
    np.testing.assert_allclose(gen[1], np.linalg.solve(good, b_value), rtol=1e-13)
    _, pos = compiled.run(np.stack([bad_spd, good]), b_value)
    assert np.isnan(pos[0]).all()  # PyTensor: LinAlgError -> NaN
    np.testing.assert_allclose(pos[1], np.linalg.solve(good, b_value), rtol=1e-13)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("n", [4, None])
def test_cholesky_solve(lower, n):
    c, b = matrix("c", n), pt.tensor("b", dtype="float64", shape=(n, 3))
    factor = scipy.linalg.cholesky(spd(4, 1e3), lower=lower)
    b_value = RNG.normal(size=(4, 3))
    (got,) = compile_to_onnx([c, b], outputs=[pt.linalg.cho_solve((c, lower), b)]).run(factor, b_value)
    assert_normwise(got, scipy.linalg.cho_solve((factor, lower), b_value), 1e-12)


@pytest.mark.parametrize("n", [6, None])
@pytest.mark.parametrize("dtype, bound", [("float64", 1e-12), ("float32", 2e-5)])
def test_inverse_det_slogdet(n, dtype, bound):
    a = matrix("a", n, dtype)
    sign, logdet = pt.linalg.slogdet(a)
    compiled = compile_to_onnx([a], outputs=[pt.linalg.inv(a), pt.linalg.det(a), sign, logdet])
    for value in (general(6, 30.0), spd(6, 30.0), -general(6, 30.0) * 3, RNG.normal(size=(6, 6))):
        value = value.astype(dtype)
        inv, det, s, ld = compiled.run(value)
        assert inv.dtype == det.dtype == s.dtype == ld.dtype == np.dtype(dtype)
        assert_normwise(inv, np.linalg.inv(value.astype(np.float64)), bound * 30)
        np.testing.assert_allclose(det, np.linalg.det(value.astype(np.float64)), rtol=bound * 10)
        want_s, want_ld = np.linalg.slogdet(value.astype(np.float64))
        assert s == want_s
        np.testing.assert_allclose(ld, want_ld, rtol=bound, atol=bound)


def test_det_slogdet_singular_and_checked_against_pytensor():
    a = matrix("a", 4)
    sign, logdet = pt.linalg.slogdet(a)
    singular = general(4)
    singular[3] = 2 * singular[1]
    singular[:, 2] = 0.0
    compiled = check_pytensor([a], [pt.linalg.det(a), sign, logdet], [singular])
    det, s, ld = compiled.run(singular)
    assert det == 0 and s == 0 and ld == -np.inf
    check_pytensor([a], [pt.linalg.det(a), sign, logdet, pt.linalg.inv(a)], [general(4, 100.0)])


def test_log_det_gradient():
    """The log-determinant and its gradient (``inv(a).T``), as a model's density uses them."""
    a = matrix("a", 3)
    cost = pt.log(pt.abs(pt.linalg.det(a))) + pt.linalg.slogdet(a)[1]
    check_pytensor([a], [cost, pt.grad(cost, a)], [general(3, 10.0)], rtol=1e-11)


def test_batched_blockwise_broadcasts():
    a = pt.tensor("a", dtype="float64", shape=(2, 1, 4, 4))
    b = pt.tensor("b", dtype="float64", shape=(3, 4))
    c = pt.tensor("c", dtype="float64", shape=(None, None, None))
    outs = [pt.linalg.solve(a, b, b_ndim=1), pt.linalg.solve(a, b, assume_a="pos", b_ndim=1), pt.linalg.det(a),
            pt.linalg.inv(c),
            *pt.linalg.slogdet(c)]
    values = [spd(4, 20.0, batch=(2, 1)), RNG.normal(size=(3, 4)), general(3, 20.0, batch=(5,))]
    check_pytensor([a, b, c], outs, values, rtol=1e-11)


def test_integer_input_is_solved_in_float64():
    a, b = pt.lmatrix("a"), pt.lvector("b")
    check_pytensor([a, b], [pt.linalg.solve(a, b), pt.linalg.det(a)], [np.array([[2, 1], [1, 3]]), np.array([1, -2])])
