"""``QR`` (``rules/qr.py``: ``dgeqr2``'s Householder reflections) against
SciPy: modes "full", "economic" and "r"; square, tall and wide matrices of
static size (the loop unrolled) and symbolic size (an ONNX Loop); batched
``Blockwise`` forms; well- and ill-conditioned, rank-deficient and
already-triangular inputs; float32; the gradient against PyTensor; the
refused options."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.linalg

from compiler import UnsupportedOpsError, compile_to_onnx
from tests.helpers import check_pytensor
from tests.lowering.test_solvers import general

RNG = np.random.default_rng(30)
EPS64 = np.finfo(np.float64).eps


def _qr(a, mode):
    out = pt.linalg.qr(a, mode=mode)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _scipy(a, mode):
    out = scipy.linalg.qr(a, mode=mode)
    return list(out) if isinstance(out, tuple) else [out]


def _check(got, a, mode, bound, entrywise=True):
    """Entrywise against SciPy (LAPACK's signs; not where ``a`` is rank
    deficient: the reflections of a column that is rounding noise are
    arbitrary) and the reconstruction ``Q R == A``, ``Q^T Q == I``, each
    within ``bound`` of ``|A|``."""
    want = _scipy(a, mode)
    scale = np.max(np.abs(a)) if a.any() else 1.0
    for g, w in zip(got, want):
        assert g.shape == w.shape
        if entrywise:
            np.testing.assert_allclose(g, w, rtol=0, atol=bound * scale)
    assert np.array_equal(np.tril(got[-1], -1), np.zeros_like(got[-1]))  # exact zeros below the diagonal
    if mode != "r":
        q, r = got
        np.testing.assert_allclose(q @ r, a, rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(q.T @ q, np.eye(q.shape[1]), rtol=0, atol=1e-13)


@pytest.mark.parametrize("mode", ["full", "economic", "r"])
@pytest.mark.parametrize("shape", [(5, 5), (7, 3), (3, 6), (None, None)])
def test_qr_matches_scipy_signs_included(mode, shape):
    a = pt.dmatrix("a", shape=shape)
    compiled = compile_to_onnx([a], outputs=_qr(a, mode))
    assert compiled.ir.contains_op("loop") == (shape[0] is None)
    size = shape if shape[0] is not None else (6, 4)
    values = [RNG.normal(size=size), RNG.normal(size=size) * 1e200]  # the norms are scaled: no overflow
    if size[0] == size[1]:
        values.append(general(size[0], 1e3))
    for value in values:
        _check(compiled.run(value), value, mode, 1e-13)


def test_ill_conditioned_rank_deficient_and_triangular_inputs():
    """cond 1e10: the reconstruction stays within 1e-13 of |A|, the factors
    within cond * eps of SciPy's; a zero column and an identity give
    ``tau = 0`` (the column kept, as ``dlarfg``), a zero matrix Q = I."""
    a = pt.dmatrix("a", shape=(6, 6))
    compiled = compile_to_onnx([a], outputs=_qr(a, "full"))
    ill = general(6, 1e10)
    q, r = compiled.run(ill)
    np.testing.assert_allclose(q @ r, ill, rtol=0, atol=1e-13 * np.max(np.abs(ill)))
    for g, w in zip((q, r), _scipy(ill, "full")):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e10 * 10 * EPS64)
    deficient = RNG.normal(size=(6, 6))
    deficient[:, 2] = 0.0
    deficient[:, 4] = deficient[:, 1]
    _check(compiled.run(deficient), deficient, "full", 1e-13, entrywise=False)
    q, r = compiled.run(deficient)
    assert np.all(np.abs(r[2:, 2]) <= 1e-13 * np.max(np.abs(deficient)))  # the zero column stays zero below row 2
    for value in [np.eye(6), np.triu(RNG.normal(size=(6, 6))), np.zeros((6, 6))]:
        _check(compiled.run(value), value, "full", 1e-13)


def test_batched_qr_and_float32():
    a = pt.tensor("a", dtype="float64", shape=(3, 5, 4))
    compiled = compile_to_onnx([a], outputs=_qr(a, "economic"))
    value = RNG.normal(size=(3, 5, 4))
    q, r = compiled.run(value)
    for k in range(3):
        _check([q[k], r[k]], value[k], "economic", 1e-13)
    a32 = pt.matrix("a", dtype="float32", shape=(4, 4))
    compiled = compile_to_onnx([a32], outputs=_qr(a32, "full"))
    value = RNG.normal(size=(4, 4)).astype(np.float32)
    got = compiled.run(value)
    assert all(g.dtype == np.float32 for g in got)
    for g, w in zip(got, _scipy(value, "full")):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-5)


def test_qr_gradient_matches_pytensor():
    a = pt.dmatrix("a", shape=(5, 3))
    q, r = pt.linalg.qr(a, mode="economic")
    cost = (q[:, 0] * pt.arange(5)).sum() + (r ** 2).sum() + pt.log(pt.abs(r[0, 0]))
    check_pytensor([a], [cost, pytensor.grad(cost, a)], [RNG.normal(size=(5, 3))], rtol=1e-11)


@pytest.mark.parametrize("kwargs, match", [({"pivoting": True}, "pivoting"), ({"mode": "raw"}, "raw")])
def test_pivoting_and_raw_mode_are_refused(kwargs, match):
    a = pt.dmatrix("a", shape=(3, 3))
    out = pt.linalg.qr(a, **kwargs)
    with pytest.raises(UnsupportedOpsError, match=match):
        compile_to_onnx([a], outputs=list(out) if isinstance(out, (list, tuple)) else [out])
