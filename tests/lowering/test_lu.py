"""``LU``, ``LUFactor`` and ``PivotToPermutations`` (``rules/lu.py`` on
``matrix_loops.lu_loop``) against SciPy: every output form (``P``,
``p_indices``, ``permute_l``), static and symbolic sizes, batched forms,
singular matrices (a zero pivot column: LU factors it, ``LUFactor`` is
NaN as PyTensor's ``perform``), exact pivots and permutations, and the
gradients against PyTensor."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.linalg

from compiler import compile_to_onnx
from compiler.lowering.compat import IS_PYTENSOR_3
from tests.helpers import REFERENCE_MODE, check_pytensor
from tests.lowering.test_solvers import general

if IS_PYTENSOR_3:
    from pytensor.tensor.linalg import lu, lu_factor, pivot_to_permutation
else:
    from pytensor.tensor.slinalg import lu, lu_factor, pivot_to_permutation

RNG = np.random.default_rng(31)


def _singular(n):
    a = general(n)
    a[:, 1] = 0.0
    return a


@pytest.mark.parametrize("n", [5, None])
@pytest.mark.parametrize("kwargs", [{}, {"p_indices": True}, {"permute_l": True}])
def test_lu_matches_scipy(n, kwargs):
    a = pt.dmatrix("a", shape=(n, n))
    compiled = compile_to_onnx([a], outputs=list(lu(a, **kwargs)))
    for value, cond in [(general(5), 10.0), (general(5, 1e8), 1e8), (_singular(5), 10.0)]:
        got = compiled.run(value)
        want = scipy.linalg.lu(value, **kwargs)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            if g.dtype.kind == "i" or w.shape == value.shape and not kwargs and w is want[0]:
                np.testing.assert_array_equal(g, w)  # the pivots and P are exact
            else:  # LAPACK's blocked getrf rounds differently: a few ulp times the conditioning
                np.testing.assert_allclose(g, w, rtol=0, atol=cond * 1e-14 * max(1.0, np.max(np.abs(w))))
        if not kwargs:
            p, low, up = got
            np.testing.assert_allclose(p @ low @ up, value, rtol=0, atol=1e-13 * np.max(np.abs(value)))


@pytest.mark.parametrize("n", [4, None])
def test_lu_factor_and_pivots_match_scipy(n):
    a, p = pt.dmatrix("a", shape=(n, n)), pt.ivector("p", shape=(n,))
    compiled = compile_to_onnx([a], outputs=list(lu_factor(a)))
    value = general(4)
    got_lu, got_piv = compiled.run(value)
    want_lu, want_piv = scipy.linalg.lu_factor(value)
    np.testing.assert_allclose(got_lu, want_lu, rtol=0, atol=1e-13 * np.max(np.abs(want_lu)))
    np.testing.assert_array_equal(got_piv, want_piv)
    assert got_piv.dtype == np.int32
    singular = _singular(4)
    got_lu, got_piv = compiled.run(singular)  # getrf's info > 0: PyTensor sets the factors to NaN
    assert np.isnan(got_lu).all()
    np.testing.assert_array_equal(got_piv, scipy.linalg.lu_factor(singular, check_finite=False)[1])
    for inverse in (True, False):
        perm = compile_to_onnx([p], outputs=[pivot_to_permutation(p, inverse=inverse)])
        reference = pytensor.function([p], pivot_to_permutation(p, inverse=inverse), mode=REFERENCE_MODE)
        for piv in [want_piv, np.array([3, 3, 2, 3], dtype=np.int32), np.arange(4, dtype=np.int32)]:
            np.testing.assert_array_equal(perm.run(piv)[0], reference(piv))


def test_batched_lu():
    a = pt.tensor("a", dtype="float64", shape=(3, 4, 4))
    compiled = compile_to_onnx([a], outputs=list(lu(a, p_indices=True)))
    value = np.stack([general(4), _singular(4), general(4, 1e6)])
    got = compiled.run(value)
    for k in range(3):
        for g, w in zip(got, scipy.linalg.lu(value[k], p_indices=True)):
            np.testing.assert_allclose(g[k], w, rtol=0, atol=1e-13 * max(1.0, np.max(np.abs(w))))


def test_lu_gradients_match_pytensor():
    a = pt.dmatrix("a", shape=(4, 4))
    p, low, up = lu(a)
    packed, _ = lu_factor(a)
    cost = (low * pt.arange(16).reshape((4, 4))).sum() + (up ** 2).sum() + pt.log(pt.abs(packed)).sum()
    check_pytensor([a], [cost, pytensor.grad(cost, a)], [general(4, 5)], rtol=1e-10)
