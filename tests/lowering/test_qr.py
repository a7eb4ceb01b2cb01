"""``QR`` (``rules/qr.py``: ``dgeqr2``'s Householder reflections) against
SciPy: modes "full", "economic" and "r"; square, tall and wide matrices of
static size (the loop unrolled) and symbolic size (an ONNX Loop); batched
``Blockwise`` forms; well- and ill-conditioned, rank-deficient and
already-triangular inputs; float32; the gradient against PyTensor; ``pivoting=True``
(geqp3) in every mode and mode "raw" (geqrf's packed output) against SciPy,
the permutation exactly; mode "raw" of a static non-square shape with
``perform``'s output shapes (PyTensor types others)."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.linalg
from pytensor.graph.replace import vectorize_graph

from compiler import compile_to_onnx
from tests.helpers import check_pytensor, pytensor_reference
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


def _scipy_all(x, mode, pivoting):
    """``scipy.linalg.qr``'s outputs in PyTensor's order: mode "raw" as
    ``(qr, tau, R)``, the 0-based permutation last with ``pivoting``."""
    out = scipy.linalg.qr(x, mode=mode, pivoting=pivoting)
    out = list(out) if isinstance(out, tuple) else [out]
    return [*out[0], *out[1:]] if mode == "raw" else out


def _check_pivoted(got, x, mode, bound=1e-13):
    """Entrywise against SciPy (same permutation exactly, LAPACK's signs),
    ``A[:, P] == Q R``, ``|R|``'s diagonal non-increasing (geqp3's
    property)."""
    want = _scipy_all(x, mode, True)
    scale = np.max(np.abs(x)) if x.any() else 1.0
    assert len(got) == len(want)
    np.testing.assert_array_equal(got[-1], want[-1])
    assert got[-1].dtype == np.int32
    for g, w in zip(got[:-1], want[:-1]):
        assert g.shape == w.shape and g.dtype == x.dtype
        np.testing.assert_allclose(g, w, rtol=0, atol=bound * scale)
    r = got[-2]
    assert np.array_equal(np.tril(r, -1), np.zeros_like(r))
    assert np.all(np.diff(np.abs(np.diag(r))) <= bound * scale)
    if mode in ("full", "economic"):
        np.testing.assert_allclose(got[0] @ r, x[:, got[-1]], rtol=0, atol=bound * scale)


@pytest.mark.parametrize("mode, shape", [(mode, shape) for mode in ["full", "economic", "r", "raw"]
                                         for shape in [(5, 5), (7, 3), (3, 6), (None, None)]
                                         ])
def test_pivoted_qr_matches_scipy(mode, shape):
    """``pivoting=True`` (geqp3's column pivoting) in every mode: the
    permutation equals SciPy's exactly (distinct column norms), the factors
    entrywise within 1e-13 of ``|A|``; tall and wide values for the
    symbolic shape."""
    a = pt.dmatrix("a", shape=shape)
    compiled = compile_to_onnx([a], outputs=list(pt.linalg.qr(a, mode=mode, pivoting=True)))
    sizes = [shape] if shape[0] is not None else [(6, 4), (4, 7), (1, 3), (5, 1)]
    for size in sizes:
        for x in [RNG.normal(size=size) * RNG.uniform(0.1, 10, size[1]), RNG.normal(size=size) * 1e200]:
            _check_pivoted(compiled.run(x), x, mode)


def test_raw_mode_matches_geqrf():
    """Mode "raw" without pivoting: geqrf's packed reflectors and tau value
    for value (within 1e-13 of ``|A|``), for square, tall and wide inputs."""
    a = pt.dmatrix("a")
    compiled = compile_to_onnx([a], outputs=list(pt.linalg.qr(a, mode="raw")))
    for size in [(5, 5), (7, 3), (3, 6), (1, 1)]:
        x = RNG.normal(size=size)
        got = compiled.run(x)
        want = _scipy_all(x, "raw", False)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=0, atol=1e-13 * np.max(np.abs(x)))


@pytest.mark.parametrize("dtype, bound", [("float64", 1e-13), ("float32", 1e-5)])
def test_pivoting_permutation_equals_lapack_on_random_shapes(dtype, bound):
    """40 random shapes up to 24 x 24 with column scales in [0.5, 2]: the
    permutation equals sgeqp3's/dgeqp3's exactly, the packed factors within
    ``bound`` of ``|A|`` (float32 computed in float32)."""
    rng = np.random.default_rng(7)
    a = pt.matrix("a", dtype=dtype)
    compiled = compile_to_onnx([a], outputs=list(pt.linalg.qr(a, mode="raw", pivoting=True)))
    for _ in range(40):
        size = tuple(rng.integers(1, 25, 2))
        x = (rng.normal(size=size) * rng.uniform(0.5, 2, size[1])).astype(dtype)
        _check_pivoted(compiled.run(x), x, "raw", bound)


def test_pivoted_rank_deficient_batched_and_ties():
    """Rank 3 of 8 x 6, a zero column and a repeated column: the first
    ``rank`` pivots equal SciPy's, ``A[:, P] == Q R`` and ``R``'s trailing
    block is rounding noise; equal column norms take the first (LAPACK's
    ``idamax``); a batch of 3 (``Blockwise``) as each matrix alone."""
    a = pt.dmatrix("a")
    compiled = compile_to_onnx([a], outputs=list(pt.linalg.qr(a, mode="full", pivoting=True)))
    low = RNG.normal(size=(8, 3)) @ RNG.normal(size=(3, 6))
    holes = RNG.normal(size=(6, 6))
    holes[:, 2], holes[:, 4] = 0.0, holes[:, 1]
    for x, rank in [(low, 3), (holes, 4)]:
        q, r, p = compiled.run(x)
        scale = np.max(np.abs(x))
        np.testing.assert_array_equal(p[:rank], scipy.linalg.qr(x, pivoting=True)[2][:rank])
        np.testing.assert_allclose(q @ r, x[:, p], rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(q.T @ q, np.eye(len(q)), rtol=0, atol=1e-13)
        assert np.max(np.abs(r[rank:, rank:])) <= 1e-13 * scale
    q, r, p = compiled.run(np.eye(4))  # all norms equal: no swap
    np.testing.assert_array_equal(p, np.arange(4))
    batch = pt.tensor("batch", dtype="float64", shape=(3, 5, 4))
    outs = vectorize_graph(list(pt.linalg.qr(a, mode="economic", pivoting=True)), {a: batch})
    values = RNG.normal(size=(3, 5, 4))
    got = compile_to_onnx([batch], outputs=outs).run(values)
    assert got[2].shape == (3, 4) and got[2].dtype == np.int32
    for k in range(3):
        _check_pivoted([g[k] for g in got], values[k], "economic")


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (1, 4)])
@pytest.mark.parametrize("pivoting", [False, True])
def test_raw_mode_of_static_non_square_follows_perform(shape, pivoting):
    """PyTensor types mode "raw"'s packed output ``(m, m)`` and R ``(m, n)``
    while its ``perform`` returns ``(m, n)`` and ``(min(m, n), n)``: the
    model returns ``perform``'s shapes and values (PyTensor's own Python
    evaluation, and SciPy's geqrf/geqp3 within 1e-13 of ``|A|``)."""
    a = pt.dmatrix("a", shape=shape)
    outs = list(pt.linalg.qr(a, mode="raw", pivoting=pivoting))
    compiled = compile_to_onnx([a], outputs=outs)
    x = RNG.normal(size=shape)
    got = compiled.run(x)
    want = pytensor_reference([a], outs, [x])
    assert [g.shape for g in got] == [w.shape for w in want]
    assert got[0].shape == shape and got[2].shape == (min(shape), shape[1])
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-13 * np.max(np.abs(x)))
    for g, w in zip(got, _scipy_all(x, "raw", pivoting), strict=True):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-13 * np.max(np.abs(x)))


@pytest.mark.parametrize("mode", ["full", "raw"])
def test_pivoted_cases_of_pytensors_numba_suite(mode):
    """``tests/link/numba/linalg/test_decomposition.py::test_qr``'s real
    cases with pivoting (a static 5 x 5 normal matrix, modes "full" and
    "raw") against PyTensor's evaluation, the permutation exactly; and
    ``tests/link/pytorch/linalg/test_decomposition.py::test_qr``'s (a
    symbolic matrix, ``M M^T`` of 3 x 3; "raw" is an expected failure of
    PyTensor's PyTorch backend)."""
    a = pt.tensor("a", shape=(5, 5), dtype="float64")
    check_pytensor([a], list(pt.linalg.qr(a, mode=mode, pivoting=True)), [RNG.normal(size=(5, 5))],
                   rtol=1e-12, atol=1e-12)
    x = pt.dmatrix("x")
    m = np.random.default_rng(213234).normal(size=(3, 3))
    check_pytensor([x], list(pt.linalg.qr(x, mode=mode)), [m @ m.T], rtol=1e-12, atol=1e-12)
