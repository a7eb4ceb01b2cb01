"""``SVD`` and ``MatrixPinv`` (``rules/svd.py``: one-sided Jacobi) against
NumPy's LAPACK: square, tall and wide; ``full_matrices`` and
``compute_uv`` both ways; condition numbers up to 1e10, rank-deficient,
zero, identity and diagonal inputs; batched ``Blockwise``; float32; NaN;
``pinv`` (``hermitian`` too) and its gradient against PyTensor; the refused
dynamic orientation."""

import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.replace import vectorize_graph

from compiler import compile_to_onnx
from tests.helpers import check_pytensor

RNG = np.random.default_rng(32)


def _svd(a, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        out = pt.linalg.svd(a, **kwargs)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _pinv(a, hermitian=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return pt.linalg.pinv(a, hermitian=hermitian)


def _with_singular_values(shape, s):
    u, _ = np.linalg.qr(RNG.normal(size=(shape[0], shape[0])))
    v, _ = np.linalg.qr(RNG.normal(size=(shape[1], shape[1])))
    k = min(shape)
    return (u[:, :k] * s) @ v[:, :k].T


def _inputs(shape):
    k = min(shape)
    cases = {"random": RNG.normal(size=shape), "zero": np.zeros(shape), "identity": np.eye(*shape),
             "diagonal": np.eye(*shape) * RNG.normal(size=shape[1])}
    if k >= 2:
        cases["cond1e10"] = _with_singular_values(shape, np.geomspace(1, 1e-10, k))
        cases["rank_deficient"] = _with_singular_values(shape, np.r_[RNG.uniform(1, 2, k - 1), 0.0])
        cases["repeated"] = _with_singular_values(shape, np.repeat([3.0, 1.0], [k // 2, k - k // 2]))
    return cases


def _check(u, s, vt, a, full, tol=1e-13):
    """Singular values descending within ``tol`` of LAPACK's relative to the
    largest, ``U S V^T`` within ``tol`` of it, ``U`` and ``V`` orthonormal
    with LAPACK's shapes."""
    want_u, want_s, want_vt = np.linalg.svd(a, full_matrices=full)
    norm = max(want_s[0] if want_s.size else 0.0, np.finfo(a.dtype).tiny)
    assert u.shape == want_u.shape and vt.shape == want_vt.shape
    assert np.all(np.diff(s) <= 0)
    np.testing.assert_allclose(s, want_s, rtol=0, atol=tol * norm)
    k = len(s)
    np.testing.assert_allclose((u[:, :k] * s) @ vt[:k], a, rtol=0, atol=tol * norm)
    np.testing.assert_allclose(u.T @ u, np.eye(u.shape[1]), rtol=0, atol=tol * 10)
    np.testing.assert_allclose(vt @ vt.T, np.eye(vt.shape[0]), rtol=0, atol=tol * 10)


SHAPES = [(1, 1), (2, 2), (4, 4), (7, 3), (3, 7)]


@pytest.mark.parametrize("shape, full", [(s, f) for s in SHAPES for f in (False, True)] + [((32, 32), False)])
def test_svd_matches_lapack(shape, full):
    a = pt.dmatrix("a", shape=shape)
    compiled = compile_to_onnx([a], outputs=_svd(a, full_matrices=full))
    cases = _inputs(shape)
    for value in cases.values():
        _check(*compiled.run(value), value, full)
    assert len(cases) == (4 if min(shape) == 1 else 7)


def test_singular_values_only_symbolic_square_batched_float32_nan():
    a = pt.dmatrix("a", shape=(None, None))
    compiled = compile_to_onnx([a], outputs=_svd(a, compute_uv=False))
    value = _inputs((64, 64))["cond1e10"]
    (s,) = compiled.run(value)
    np.testing.assert_allclose(s, np.linalg.svd(value, compute_uv=False), rtol=0, atol=1e-13)
    core = pt.dmatrix("core", shape=(5, 3))
    batch = pt.tensor("batch", dtype="float64", shape=(3, 5, 3))
    outs = vectorize_graph(_svd(core, full_matrices=False), {core: batch})
    values = RNG.normal(size=(3, 5, 3))
    values[2, 4, 1] = np.nan
    u, s, vt = compile_to_onnx([batch], outputs=outs).run(values)
    for k in range(2):
        _check(u[k], s[k], vt[k], values[k], False)
    assert np.all(np.isnan(s[2])) and np.all(np.isnan(u[2])) and np.all(np.isnan(vt[2]))
    a32 = pt.matrix("a", dtype="float32", shape=(6, 4))
    value = RNG.normal(size=(6, 4)).astype(np.float32)
    got = compile_to_onnx([a32], outputs=_svd(a32)).run(value)
    assert all(g.dtype == np.float32 for g in got)
    _check(*[g.astype(np.float64) for g in got], value.astype(np.float64), True, tol=1e-5)


def test_pinv_matches_numpy_and_its_gradient_pytensor():
    a = pt.dmatrix("a", shape=(6, 4))
    compiled = compile_to_onnx([a], outputs=[_pinv(a)])
    for value in _inputs((6, 4)).values():
        (got,) = compiled.run(value)
        want = np.linalg.pinv(value)
        sv = np.linalg.svd(value, compute_uv=False)
        kept = sv[sv > 1e-15 * sv[0]]
        cond = kept[0] / kept[-1] if kept.size else 1.0  # pinv's own condition: errors grow with it
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-13 * cond * max(np.max(np.abs(want)), 1.0))
    sym = pt.dmatrix("sym", shape=(4, 4))
    x = RNG.normal(size=(4, 4))
    (got,) = compile_to_onnx([sym], outputs=[_pinv(sym, hermitian=True)]).run(x)  # reads the lower triangle
    np.testing.assert_allclose(got, np.linalg.pinv(x, hermitian=True), rtol=0, atol=1e-12)
    cost = (_pinv(a) * np.arange(24.0).reshape(4, 6)).sum()
    check_pytensor([a], [cost, pytensor.grad(cost, a)], [RNG.normal(size=(6, 4))], rtol=1e-10)


@pytest.mark.parametrize("full", [False, True])
def test_svd_and_pinv_of_a_matrix_of_run_time_shape(full):
    """Neither tall nor wide at compile time: both forms under an ``if`` on ``m < n``, each run by its shape."""
    a = pt.dmatrix("a")
    compiled = compile_to_onnx([a], outputs=_svd(a, full_matrices=full) + [_pinv(a)])
    for shape in [(5, 3), (3, 5), (4, 4)]:
        for value in _inputs(shape).values():
            u, s, vt, p = compiled.run(value)
            _check(u, s, vt, value, full)
            want = np.linalg.pinv(value)
            kept = s[s > 1e-15 * s[0]] if s.size and s[0] > 0 else s[:0]
            cond = kept[0] / kept[-1] if kept.size else 1.0  # pinv's own condition: errors grow with it
            np.testing.assert_allclose(p, want, rtol=0, atol=1e-13 * cond * max(np.abs(want).max(), 1.0))
