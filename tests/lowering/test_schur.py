"""``Schur{output="real"}`` (``rules/schur.py``: Hessenberg reduction and
Francis double-shift QR, ``dlanv2``'s standardized 2 x 2 blocks) against
``scipy.linalg.schur``. The real Schur form is not unique (eigenvalue
order on the diagonal, signs of ``Z``'s columns), so the invariants are
compared: ``Z T Z^T == A``, ``Z^T Z == I``, ``T`` quasi-upper-triangular
(no two consecutive nonzero subdiagonal entries, exact zeros below),
every 2 x 2 block standardized (equal diagonal, ``b c < 0``: a complex
pair), and the eigenvalues read from ``T``'s blocks equal SciPy's. Static
sizes 1..8 and a symbolic one; random, triangular, symmetric,
skew-symmetric (purely imaginary pairs), orthogonal (the unit circle),
cyclic permutation (needs the exceptional shift), companion, zero and
rank-deficient inputs; batched; float32; NaN/Inf; refused options."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.linalg
import scipy.optimize
from pytensor.graph.replace import vectorize_graph

from compiler import UnsupportedOpsError, compile_to_onnx
from tests.helpers import check_pytensor

RNG = np.random.default_rng(40)


def _eigenvalues(t):
    """The eigenvalues of the quasi-triangular ``t`` from its blocks (matched
    to SciPy's by the closest assignment: sorting is not stable when real
    parts are rounding noise, as for a skew-symmetric matrix)."""
    n = len(t)
    out, k = [], 0
    while k < n:
        if k + 1 < n and t[k + 1, k] != 0:
            out.extend(np.linalg.eigvals(t[k:k + 2, k:k + 2]))
            k += 2
        else:
            out.append(t[k, k])
            k += 1
    return np.sort_complex(np.asarray(out, dtype=complex))


def _check(t, z, a, tol=1e-13):
    """The invariants of the module docstring, within ``tol * n`` of ``|A|``
    (eigenvalues: ``1e3 tol`` relative to the largest magnitude, for the
    well-separated spectra used)."""
    n = len(a)
    scale = max(np.max(np.abs(a)), 1e-300)
    assert t.dtype == z.dtype == a.dtype and t.shape == z.shape == a.shape
    np.testing.assert_allclose(z @ t @ z.T, a, rtol=0, atol=tol * n * scale)
    np.testing.assert_allclose(z.T @ z, np.eye(n), rtol=0, atol=tol * n)
    assert np.array_equal(np.tril(t, -2), np.zeros_like(t))
    sub = np.diag(t, -1)
    assert not np.any((sub[1:] != 0) & (sub[:-1] != 0))
    for k in np.flatnonzero(sub):
        assert t[k, k] == t[k + 1, k + 1] and t[k, k + 1] * t[k + 1, k] < 0
    want = scipy.linalg.eigvals(scipy.linalg.schur(a)[0])
    got = _eigenvalues(t)
    big = max(np.max(np.abs(want)), 1e-300)
    rows, cols = scipy.optimize.linear_sum_assignment(np.abs(got[:, None] - want[None, :]))  # order-free
    np.testing.assert_allclose(got[rows], want[cols], rtol=0, atol=1e3 * tol * big)


def _cases(n):
    x = RNG.normal(size=(n, n))
    cases = {"random": x, "triangular": np.triu(x), "symmetric": x + x.T, "zero": np.zeros((n, n))}
    if n >= 2:
        cases["cyclic"] = np.roll(np.eye(n), 1, axis=0)
        companion = np.zeros((n, n))
        companion[0] = RNG.normal(size=n)
        companion[np.arange(1, n), np.arange(n - 1)] = 1.0
        cases["companion"] = companion
        low = RNG.normal(size=(n, 1)) @ RNG.normal(size=(1, n))
        cases["rank1"] = low
        cases["skew"] = x - x.T
        cases["orthogonal"] = np.linalg.qr(x)[0]
    return cases


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, None])  # None: symbolic, n = 12
def test_schur_invariants_match_scipy(n):
    a = pt.dmatrix("a", shape=(n, n))
    compiled = compile_to_onnx([a], outputs=list(pt.linalg.schur(a)))
    for name, x in _cases(n or 12).items():
        t, z = compiled.run(x)
        _check(t, z, x)


@pytest.mark.slow
def test_random_sweep():
    """60 matrices of sizes 2..15 (symbolic): normal, small integers
    (repeated eigenvalues), skew-symmetric and orthogonal."""
    rng = np.random.default_rng(11)
    a = pt.dmatrix("a")
    compiled = compile_to_onnx([a], outputs=list(pt.linalg.schur(a)))
    for trial in range(60):
        n = int(rng.integers(2, 16))
        x = rng.normal(size=(n, n))
        x = [x, rng.integers(-3, 4, size=(n, n)).astype(float), x - x.T, np.linalg.qr(x)[0]][trial % 4]
        t, z = compiled.run(x)
        _check(t, z, x)


def test_batched_float32_and_non_finite():
    """A batch of 4 (``Blockwise``) with a NaN and an Inf matrix: those are
    all NaN (PyTensor's ``perform``), the others unaffected; float32 within
    float32's 1e-6 per unit of n."""
    a = pt.dmatrix("a", shape=(5, 5))
    batch = pt.tensor("batch", dtype="float64", shape=(4, 5, 5))
    compiled = compile_to_onnx([batch], outputs=vectorize_graph(list(pt.linalg.schur(a)), {a: batch}))
    values = RNG.normal(size=(4, 5, 5))
    values[2, 1, 3] = np.nan
    values[3, 0, 0] = np.inf
    t, z = compiled.run(values)
    for k in range(2):
        _check(t[k], z[k], values[k])
    assert np.all(np.isnan(t[2:])) and np.all(np.isnan(z[2:]))
    a32 = pt.matrix("a", dtype="float32", shape=(6, 6))
    x = RNG.normal(size=(6, 6)).astype(np.float32)
    t, z = compile_to_onnx([a32], outputs=list(pt.linalg.schur(a32))).run(x)
    _check(t, z, x, tol=1e-6)


def test_quasi_triangular_input_is_its_own_form():
    """A matrix already in standardized real Schur form (a 2 x 2 complex
    block and real diagonal) comes back unchanged up to rounding and signs,
    as from PyTensor's evaluation."""
    t0 = np.array([[2.0, 1.0, 0.5, 0.3], [0.0, -1.0, 0.7, 0.2], [0.0, 0.0, 0.5, 2.0], [0.0, 0.0, -3.0, 0.5]])
    a = pt.dmatrix("a", shape=(4, 4))
    t, z = compile_to_onnx([a], outputs=list(pt.linalg.schur(a))).run(t0)
    _check(t, z, t0)
    np.testing.assert_allclose(np.abs(t), np.abs(t0), rtol=0, atol=1e-13)


def test_triangular_input_against_pytensor():
    """An upper triangular input needs no iteration: ``T`` is the input and
    ``Z`` the identity, exactly as LAPACK's (PyTensor's evaluation)."""
    a = pt.dmatrix("a", shape=(4, 4))
    check_pytensor([a], list(pt.linalg.schur(a)), [np.triu(RNG.normal(size=(4, 4)))], rtol=1e-14, atol=1e-14)


def _check_sorted(t, z, a, sort, tol=1e-13):
    """``schur(a, sort=...)``'s invariants against ``scipy.linalg.schur``:
    those of ``_check``, the same number ``sdim`` of selected eigenvalues,
    all of them (read from ``T``'s blocks) in the leading ``sdim`` rows and
    none after, and the same invariant subspace: the projector onto ``Z``'s
    first ``sdim`` columns equals SciPy's within ``1e3 tol`` (random spectra
    are well separated)."""
    _check(t, z, a, tol)
    _, z_ref, sdim = scipy.linalg.schur(a, sort=sort)
    test = {"lhp": lambda w: w.real < 0, "rhp": lambda w: w.real >= 0,
            "iuc": lambda w: np.abs(w) <= 1, "ouc": lambda w: np.abs(w) > 1}[sort]
    n, k, picked = len(t), 0, []
    while k < n:
        size = 2 if k + 1 < n and t[k + 1, k] != 0 else 1
        picked += [bool(test(np.linalg.eigvals(t[k:k + size, k:k + size])[0]))] * size
        k += size
    assert picked == [True] * sdim + [False] * (n - sdim)
    p, p_ref = z[:, :sdim] @ z[:, :sdim].T, z_ref[:, :sdim] @ z_ref[:, :sdim].T
    np.testing.assert_allclose(p, p_ref, rtol=0, atol=1e3 * tol)


@pytest.mark.parametrize("sort", ["lhp", "rhp", "iuc", "ouc"])
@pytest.mark.parametrize("n", [1, 2, 4, 7, None])  # None: symbolic, n = 9
def test_sort_matches_scipy(sort, n):
    """``Schur{sort=...}`` (``schur_blocks.reorder``: ``dtrsen``'s swaps):
    random matrices (several complex pairs, so 1 x 1 and 2 x 2 blocks swap
    past each other in every combination), a matrix with only complex
    pairs (orthogonal) and a scaled one (eigenvalues around the unit
    circle's both sides)."""
    rng = np.random.default_rng(7)
    a = pt.dmatrix("a", shape=(n, n))
    compiled = compile_to_onnx([a], outputs=list(pt.linalg.schur(a, sort=sort)))
    size = n or 9
    for trial in range(6):
        x = rng.normal(size=(size, size)) / np.sqrt(size) * [0.5, 1.0, 1.5][trial % 3]
        if trial == 5 and size > 1:
            x = np.linalg.qr(x)[0] * 1.01
        t, z = compiled.run(x)
        _check_sorted(t, z, x, sort)


def test_sort_constructed_blocks():
    """A known quasi-triangular spectrum in a random orthogonal basis: real
    eigenvalues and complex pairs inside and outside the unit circle and on
    both half-planes, so every swap kind of ``dlaexc`` ((1, 1), (1, 2),
    (2, 1), (2, 2)) runs; batched (``Blockwise``) with a NaN matrix, which
    stays all NaN."""
    t0 = np.zeros((8, 8))
    t0[np.triu_indices(8, 1)] = RNG.normal(size=28) * 0.3
    for k, (re, im) in {0: (2.0, 1.0), 3: (0.3, 0.4), 6: (-0.5, 2.0)}.items():
        t0[k, k] = t0[k + 1, k + 1] = re
        t0[k, k + 1], t0[k + 1, k] = im, -im
    t0[2, 2], t0[5, 5] = -3.0, 0.25
    q = np.linalg.qr(RNG.normal(size=(8, 8)))[0]
    x = q @ t0 @ q.T
    a = pt.dmatrix("a", shape=(8, 8))
    batch = pt.tensor("batch", dtype="float64", shape=(None, 8, 8))
    for sort in ["lhp", "rhp", "iuc", "ouc"]:
        outs = vectorize_graph(list(pt.linalg.schur(a, sort=sort)), {a: batch})
        values = np.stack([x, x.T, np.full((8, 8), np.nan)])
        t, z = compile_to_onnx([batch], outputs=outs).run(values)
        for k in range(2):
            _check_sorted(t[k], z[k], values[k], sort)
        assert np.all(np.isnan(t[2])) and np.all(np.isnan(z[2]))


def test_sort_float32():
    a = pt.matrix("a", dtype="float32", shape=(6, 6))
    x = RNG.normal(size=(6, 6)).astype(np.float32)
    t, z = compile_to_onnx([a], outputs=list(pt.linalg.schur(a, sort="lhp"))).run(x)
    _check_sorted(t, z, x, "lhp", tol=1e-6)


def test_complex_output_is_refused():
    a = pt.dmatrix("a", shape=(3, 3))
    with pytest.raises(UnsupportedOpsError, match="complex"):
        compile_to_onnx([a], outputs=list(pt.linalg.schur(a, output="complex")))


@pytest.mark.parametrize("n, seed", [(3, 1), (5, 666), (5, 3), (8, 5), (12, 4)])
def test_equals_lapack(n, seed):
    """With ``dlahqr``'s shifts, deflation test and bulge start, ``T`` and ``Z``
    are LAPACK's own (PyTensor's evaluation: ``gees``), not just a Schur
    form with the same invariants, where no sweep's direction is decided by
    rounding-level entries (the module docstring: most normal matrices;
    seed 666 at n = 5 is PyTensor's ``tests/link/jax`` Schur case). The IR
    interpreter's NumPy rounding may take another path in such a case, so
    onnxruntime's result alone is compared."""
    x = np.random.default_rng(seed).normal(size=(n, n))
    a = pt.dmatrix("a", shape=(n, n))
    outs = list(pt.linalg.schur(a))
    want = pytensor.function([a], outs)(x)
    got = compile_to_onnx([a], outputs=outs).run(x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-12)
