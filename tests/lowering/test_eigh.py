"""``Eigh`` / ``Eigvalsh`` (``rules/eigh.py``: parallel cyclic Jacobi)
against NumPy's LAPACK ``syevd``: n = 1, 2, 3, 4, 8, 32 static and 64
symbolic; random, random-orthogonal with condition numbers up to 1e10,
repeated eigenvalues, near-singular, zero, identity and diagonal inputs;
either triangle; batched ``Blockwise``; float32; NaN and Inf; the gradient
against PyTensor; the generalized problem ``A v = w B v`` against
``scipy.linalg.eigh(a, b)`` (either triangle, non-definite ``b``, batched,
float32, gradients)."""

import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.linalg
from pytensor.graph.replace import vectorize_graph

from compiler import compile_to_onnx
from compiler.lowering.compat import IS_PYTENSOR_3, Eigvalsh
from tests.helpers import check_pytensor

RNG = np.random.default_rng(31)


def _eigh(a, lower=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if hasattr(pt.linalg.eigh, "__code__") and "lower" in pt.linalg.eigh.__code__.co_varnames:
            return pt.linalg.eigh(a, lower=lower)
        return pt.linalg.eigh(a, UPLO="L" if lower else "U")


def _eigvalsh(a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return Eigvalsh(lower=True)(a)
        except TypeError:  # 2.38: b is a required argument, None as NoneConst
            from pytensor.tensor.type_other import NoneConst
            return Eigvalsh(lower=True)(a, NoneConst)


def _spectrum(n, eigenvalues):
    q, _ = np.linalg.qr(RNG.normal(size=(n, n)))
    return (q * eigenvalues) @ q.T


def _inputs(n):
    """Named symmetric test matrices of size n."""
    x = RNG.normal(size=(n, n))
    cases = {"random": x + x.T, "zero": np.zeros((n, n)), "identity": np.eye(n),
             "diagonal": np.diag(RNG.normal(size=n))}
    if n >= 2:
        cases["cond1e10"] = _spectrum(n, np.geomspace(1, 1e-10, n) * RNG.choice([-1, 1], n))
        cases["spd_cond1e10"] = _spectrum(n, np.geomspace(1, 1e-10, n))
        cases["repeated"] = _spectrum(n, np.repeat([2.0, -1.0], [n // 2, n - n // 2]))
        cases["near_singular"] = _spectrum(n, np.r_[1e-15, RNG.uniform(1, 2, n - 1)])
    return cases


def _check(w, v, a, tol=1e-13):
    """Eigenvalues within ``tol`` of LAPACK's relative to the largest
    magnitude (what both guarantee), ``V Λ V^T`` within ``tol`` of ``|A|_2``,
    ``V`` orthogonal, each vector of a simple eigenvalue ``±`` LAPACK's and
    its largest entry positive (the stated sign convention)."""
    want_w, want_v = np.linalg.eigh(a)
    norm = max(np.max(np.abs(want_w)), np.finfo(a.dtype).tiny)
    assert np.all(np.diff(w) >= 0)
    np.testing.assert_allclose(w, want_w, rtol=0, atol=tol * norm)
    np.testing.assert_allclose((v * w) @ v.T, a, rtol=0, atol=tol * norm)
    np.testing.assert_allclose(v.T @ v, np.eye(len(w)), rtol=0, atol=tol * 10)
    gaps = np.diff(want_w)
    simple = np.ones(len(w), bool)
    simple[:-1] &= gaps > 1e-6 * norm
    simple[1:] &= gaps > 1e-6 * norm
    dots = np.abs(np.sum(v * want_v, axis=0))
    np.testing.assert_allclose(dots[simple], 1, rtol=0, atol=tol * 1e3)
    lead = v[np.argmax(np.abs(v), axis=0), np.arange(len(w))]
    assert np.all(lead > 0)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8, 32, pytest.param(None, marks=pytest.mark.slow)])  # None: symbolic, n = 64
def test_eigh_matches_lapack(n):
    a = pt.dmatrix("a", shape=(n, n))
    compiled = compile_to_onnx([a], outputs=list(_eigh(a)))
    size = n or 64
    cases = _inputs(size)
    for name, value in cases.items():
        w, v = compiled.run(value)
        _check(w, v, value)
    assert len(cases) == (4 if size == 1 else 8)


def test_upper_triangle_and_eigvalsh():
    """Only the triangle named is read: the other holds garbage."""
    a = pt.dmatrix("a", shape=(5, 5))
    x = _inputs(5)["random"]
    upper = np.triu(x) + np.tril(RNG.normal(size=(5, 5)) * 1e3, -1)
    w, v = compile_to_onnx([a], outputs=list(_eigh(a, lower=False))).run(upper)
    _check(w, v, x)
    lower = np.tril(x) + np.triu(RNG.normal(size=(5, 5)) * 1e3, 1)
    (w,) = compile_to_onnx([a], outputs=[_eigvalsh(a)]).run(lower)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(x), rtol=0, atol=1e-13 * np.max(np.abs(w)))


def test_batched_float32_and_non_finite():
    """A batch of 3 (``Blockwise``) with a NaN and an Inf matrix among
    finite ones: those two are all NaN, the other unaffected; float32 within
    float32's 1e-5 of LAPACK's float32."""
    a = pt.dmatrix("a", shape=(4, 4))
    batch = pt.tensor("batch", dtype="float64", shape=(4, 4, 4))
    w, v = vectorize_graph(list(_eigh(a)), {a: batch})
    compiled = compile_to_onnx([batch], outputs=[w, v])
    values = np.stack([_inputs(4)["random"], _inputs(4)["cond1e10"], _inputs(4)["random"], _inputs(4)["random"]])
    values[2, 1, 0] = np.nan
    values[3, 3, 3] = np.inf
    gw, gv = compiled.run(values)
    for k in range(2):
        _check(gw[k], gv[k], values[k])
    assert np.all(np.isnan(gw[2:])) and np.all(np.isnan(gv[2:]))
    a32 = pt.matrix("a", dtype="float32", shape=(6, 6))
    x = _inputs(6)["random"].astype(np.float32)
    w, v = compile_to_onnx([a32], outputs=list(_eigh(a32))).run(x)
    assert w.dtype == v.dtype == np.float32
    _check(w.astype(np.float64), v.astype(np.float64), x.astype(np.float64), tol=1e-5)


def test_eigh_gradient_matches_pytensor():
    a = pt.dmatrix("a", shape=(4, 4))
    w, v = _eigh(a)
    cost = (w ** 2).sum() + (v[:, 1] * pt.arange(4)).sum() ** 2 + w[0] * v[2, 3] ** 2
    x = _inputs(4)["random"]
    check_pytensor([a], [w, cost, pytensor.grad(cost, a)], [x], rtol=1e-10)


def _eigvalsh_ab(a, b, lower=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return Eigvalsh(lower=lower)(a, b)


def _spd(n, cond):
    """A symmetric positive definite matrix of condition number ``cond``."""
    return _spectrum(n, np.geomspace(1, 1 / cond, n)) if n > 1 else np.array([[2.0]])


def _check_generalized(w, v, a, b, tol=1e-12):
    """Eigenvalues within ``tol`` of ``scipy.linalg.eigh(a, b)``'s relative to
    the largest magnitude, ascending; ``A V = B V diag(w)`` and ``V^T B V =
    I`` within ``10 tol`` (scaled by ``|A|``, ``|B|``); SciPy's signs are
    arbitrary, so vectors are checked by these invariants."""
    want = scipy.linalg.eigh(a, b, eigvals_only=True)
    norm = max(np.max(np.abs(want)), np.finfo(a.dtype).tiny)
    assert np.all(np.diff(w) >= 0)
    np.testing.assert_allclose(w, want, rtol=0, atol=tol * norm)
    if v is not None:
        scale = np.max(np.abs(v)) ** 2
        np.testing.assert_allclose(a @ v, (b @ v) * w, rtol=0,
                                   atol=10 * tol * scale * max(np.max(np.abs(a)), norm * np.max(np.abs(b))))
        np.testing.assert_allclose(v.T @ b @ v, np.eye(len(w)), rtol=0, atol=10 * tol)


def _generalized_pairs(n):
    a = _inputs(n)
    return {"random/cond1e4": (a["random"], _spd(n, 1e4)), "random/identity": (a["random"], np.eye(n)),
            "cond1e10/diag": (a.get("cond1e10", a["random"]), np.diag(RNG.uniform(0.5, 3, n))),
            "zero/random": (a["zero"], _spd(n, 10.0))}


@pytest.mark.parametrize("n", [1, 3, 8, None])  # None: symbolic, n = 6 (the loop forms of Cholesky and the solves)
def test_generalized_eigvalsh_and_eigh_match_scipy(n):
    a, b = pt.dmatrix("a", shape=(n, n)), pt.dmatrix("b", shape=(n, n))
    outs = [_eigvalsh_ab(a, b)]
    if IS_PYTENSOR_3:  # 2.38's Eigh takes one matrix
        outs += list(pt.linalg.eigh(a, b))
    compiled = compile_to_onnx([a, b], outputs=outs)
    for name, (x, y) in _generalized_pairs(n or 6).items():
        got = compiled.run(x, y)
        _check_generalized(got[0], None, x, y)
        if IS_PYTENSOR_3:
            _check_generalized(got[1], got[2], x, y)
            np.testing.assert_array_equal(got[0], got[1])


def test_generalized_upper_triangle_and_not_positive_definite():
    """``lower=False`` reads the upper triangles of both matrices (garbage in
    the other); a ``b`` that is not positive definite (SciPy raises) gives
    all NaN."""
    a, b = pt.dmatrix("a", shape=(4, 4)), pt.dmatrix("b", shape=(4, 4))
    compiled = compile_to_onnx([a, b], outputs=[_eigvalsh_ab(a, b, lower=False)])
    x, y = _inputs(4)["random"], _spd(4, 100.0)
    garbage = np.tril(RNG.normal(size=(4, 4)) * 1e3, -1)
    (w,) = compiled.run(np.triu(x) + garbage, np.triu(y) + garbage)
    _check_generalized(w, None, x, y)
    (w,) = compiled.run(x, -y)
    assert np.all(np.isnan(w))


def test_generalized_batched_broadcast_and_float32():
    """A batch of 3 ``a`` against one ``b`` (``Blockwise``, batch dims
    broadcast); float32 within 1e-5 of float64 SciPy."""
    a, b = pt.dmatrix("a", shape=(4, 4)), pt.dmatrix("b", shape=(4, 4))
    batch = pt.tensor("batch", dtype="float64", shape=(3, 4, 4))
    (w,) = vectorize_graph([_eigvalsh_ab(a, b)], {a: batch})
    outs = [w] + (list(vectorize_graph(list(pt.linalg.eigh(a, b)), {a: batch})) if IS_PYTENSOR_3 else [])
    compiled = compile_to_onnx([batch, b], outputs=outs)
    xs, y = np.stack([_inputs(4)["random"] for _ in range(3)]), _spd(4, 1e3)
    got = compiled.run(xs, y)
    assert got[0].shape == (3, 4)
    for k in range(3):
        _check_generalized(got[0][k], got[2][k] if IS_PYTENSOR_3 else None, xs[k], y)
    a32, b32 = pt.matrix("a", dtype="float32", shape=(5, 5)), pt.matrix("b", dtype="float32", shape=(5, 5))
    x, y = _inputs(5)["random"].astype(np.float32), _spd(5, 10.0).astype(np.float32)
    (w,) = compile_to_onnx([a32, b32], outputs=[_eigvalsh_ab(a32, b32)]).run(x, y)
    assert w.dtype == np.float32
    _check_generalized(w.astype(np.float64), None, x.astype(np.float64), y.astype(np.float64), tol=1e-5)


def test_generalized_gradient_matches_pytensor():
    """2.38: ``EigvalshGrad``; 3.0: the ordinary ops of ``Eigvalsh``'s and
    ``Eigh(a, b)``'s pullbacks."""
    a, b = pt.dmatrix("a", shape=(4, 4)), pt.dmatrix("b", shape=(4, 4))
    w = _eigvalsh_ab(a, b)
    cost = (w ** 2).sum() + w[0] * w[3]
    if IS_PYTENSOR_3:
        w2, v2 = pt.linalg.eigh(a, b)
        cost = cost + (w2 * pt.arange(4)).sum() + ((v2 ** 2) * pt.arange(16).reshape((4, 4))).sum()
    check_pytensor([a, b], [w, cost, *pytensor.grad(cost, [a, b])], [_inputs(4)["random"], _spd(4, 10.0)],
                   rtol=1e-9)


@pytest.mark.parametrize("lower", [False, True])
def test_generalized_cases_of_pytensors_backend_suites(lower):
    """The generalized ``eigvalsh`` cases of PyTensor's JAX and MLX suites
    (``tests/link/jax/linalg/test_decomposition.py::test_jax_eigvalsh``,
    ``tests/link/mlx/linalg/test_decomposition.py::test_mlx_eigvalsh``;
    both backends raise NotImplementedError there), symbolic shapes, against
    PyTensor's evaluation: the JAX suite's integer-valued 4 x 4 pair and the
    MLX suite's ``(M M^T, M M^T)`` (every eigenvalue 1)."""
    a, b = pt.dmatrix("a"), pt.dmatrix("b")
    jax_a = np.array([[6, 3, 1, 5], [3, 0, 5, 1], [1, 5, 6, 2], [5, 1, 2, 2]], dtype=np.float64)
    jax_b = np.array([[10, 0, 1, 3], [0, 12, 7, 8], [1, 7, 14, 2], [3, 8, 2, 16]], dtype=np.float64)
    m = np.random.default_rng(15).normal(size=(3, 3))
    for x, y in [(jax_a, jax_b), (m @ m.T, m @ m.T)]:
        check_pytensor([a, b], [_eigvalsh_ab(a, b, lower=lower)], [x, y], rtol=1e-12, atol=1e-12)
