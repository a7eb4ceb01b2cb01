"""Accuracy of ``betainc`` (``backends/onnx/rules/incbeta_f64.py``) in
onnxruntime against mpmath, its special values against SciPy, and its
PyTensor gradients (``betainc_grad``'s ``ScalarLoop``s) against PyTensor.

The mpmath references (30 digits) of 10,000 float32-representable points
are stored in ``data/incbeta_mpmath.npz`` (``make_incbeta_reference.py``
regenerates them in about a minute). Asserted where the reference is a
normal float:

* float64: ``|got - ref| <= (3e-13 + 4 eps E) |ref|``, where ``E = |a log x|
  + |b log(1-x)| + |lgamma(a)| + |lgamma(b)| + |lgamma(a+b)|`` when the
  prefactor ``x^a (1-x)^b / B(a, b)`` is formed as ``exp`` of that sum
  (a + b >= 171.6, Cephes' choice) and 0 otherwise: the rounding of the
  exponent's terms (measured: 2.0e-11 at a, b ~ 4e3; 2.7e-13 where E = 0,
  at x within 2e-4 of a / (a+b) with b ~ 1e-3; SciPy, through Boost's
  Lanczos prefactor, stays within 4e-14 there);
* float32: within 4 float32 ulp of the float64 reference (measured 0.5).
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special as sp

from compiler import compile_to_onnx
from tests.helpers import REFERENCE_MODE

DATA = np.load(pathlib.Path(__file__).with_name("data") / "incbeta_mpmath.npz")
EPS = np.finfo(np.float64).eps
TINY = np.finfo(np.float64).tiny


def _run(dtype, a, b, x):
    av, bv, xv = (pt.vector(n, dtype=dtype) for n in "abx")
    model = compile_to_onnx([av, bv, xv], outputs=[pt.betainc(av, bv, xv)])
    return model.run(a.astype(dtype), b.astype(dtype), x.astype(dtype))[0]


def _exponent_size(a, b, x):
    with np.errstate(all="ignore"):
        terms = (np.abs(a * np.log(x)) + np.abs(b * np.log1p(-x)) + np.abs(sp.gammaln(a)) + np.abs(sp.gammaln(b))
                 + np.abs(sp.gammaln(a + b)))
        return np.where(a + b >= 171.6, terms, 0.0)


def test_reference_covers_the_domain():
    a, b, x, ref = DATA["a"], DATA["b"], DATA["x"], DATA["i"]
    assert len(a) == 10_000
    assert min(a.min(), b.min()) < 2e-3 and min(a.max(), b.max()) > 4e3
    assert x.min() < 1e-17 and (x > 1 - 1e-6).sum() >= 30
    mean = a / (a + b)
    assert (np.abs(x - mean) < 3 * np.sqrt(mean * (1 - mean) / (a + b + 1))).sum() > 2000  # the transition
    assert (ref[ref > 0] < 1e-100).sum() >= 150 and ((1 - ref) < 1e-12).sum() >= 150  # both tails


def test_float64_against_mpmath():
    a, b, x, ref = DATA["a"], DATA["b"], DATA["x"], DATA["i"]
    got = _run("float64", a, b, x)
    normal = ref >= TINY
    assert normal.sum() > 9500
    bound = (3e-13 + 4 * EPS * _exponent_size(a, b, x)) * np.abs(ref)
    bad = normal & ~(np.abs(got - ref) <= bound)
    assert not bad.any(), list(zip(a[bad][:5], b[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))
    # below the normal range: no more than the absolute error of a normal result
    assert np.all(np.abs(got[~normal] - ref[~normal]) <= 1e-300)


def test_float32_within_4_ulp():
    a, b, x, ref = DATA["a"], DATA["b"], DATA["x"], DATA["i"]
    got = _run("float32", a, b, x)
    assert got.dtype == np.float32
    normal = ref >= np.finfo(np.float32).tiny
    ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    err = np.abs(got.astype(np.float64) - ref)
    bad = normal & ~(err <= 4 * ulp)
    assert normal.sum() > 9000 and not bad.any(), list(zip(a[bad][:5], b[bad][:5], x[bad][:5], got[bad][:5]))


_EDGE = [np.nan, -1.0, 0.0, 1e-300, 0.5, 2.0, 1e4, np.inf]
SPECIAL = np.array([(a, b, x) for a in _EDGE for b in _EDGE for x in (np.nan, -0.5, 0.0, 1e-300, 0.3, 1.0, 1.5)])


def test_special_values_as_scipy():
    """NaN, negative, zero, tiny, large and infinite a and b at x on and off [0, 1] (a or b
    ~ 1e300 with the other finite is NaN here: the fraction does not converge, see below)."""
    a, b, x = SPECIAL.T
    got = _run("float64", a, b, x)
    want = sp.betainc(a, b, x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_broadcasting_and_empty_inputs():
    a, b, x = pt.dvector("a"), pt.dscalar("b"), pt.dmatrix("x")
    model = compile_to_onnx([a, b, x], outputs=[pt.betainc(a, b, x)])
    av, xv = np.array([0.5, 3.0, 40.0]), np.array([[0.1, 0.2, 0.9], [0.7, 0.02, 0.5]])
    np.testing.assert_allclose(model.run(av, np.array(2.5), xv)[0], sp.betainc(av, 2.5, xv), rtol=1e-14)
    assert model.run(np.zeros(0), np.array(2.5), np.zeros((2, 0)))[0].shape == (2, 0)


def test_gradients_compile_and_match_pytensor():
    """PyTensor's gradients in a and b are ``betainc_grad`` ScalarLoops
    (Boik & Robison-Cox's continued fraction, on both sides of the swap); the
    gradient in x is closed form. ``pytensor.grad`` of a log-CDF compiles and
    matches PyTensor's Python mode."""
    a, b, x = pt.dvector("a"), pt.dvector("b"), pt.dvector("x")
    y = pt.log(pt.betainc(a, b, x)).sum()
    grads = pytensor.grad(y, [a, b, x])
    rng = np.random.default_rng(6)
    av, bv = rng.uniform(0.3, 20, (2, 8))
    xv = rng.uniform(0.02, 0.98, 8)
    want = pytensor.function([a, b, x], [y, *grads], mode=REFERENCE_MODE)(av, bv, xv)
    got = compile_to_onnx([a, b, x], outputs=[y, *grads]).run(av, bv, xv)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


LARGE = np.load(pathlib.Path(__file__).with_name("data") / "incbeta_large_mpmath.npz")


def test_large_shapes_near_the_mean():
    """100 < a, b < 1e5, x near the mean (``make_incbeta_large_reference.py``): where
    lambda = |a - (a + b) x| <= 0.03 min(a, b), TOMS 708's asymptotic expansion, within
    (1e-14 + 2 eps sqrt(a + b)) relative (the rounding of lambda, eps a, moved by the
    density: TOMS 708 forms it alike); elsewhere the module bound. At a = b up to 1e300,
    x = 1/2 (NaN before: the fractions need over 1,000 steps) I = 1/2 exactly by symmetry;
    float32 within 4 ulp."""
    a, b, x, ref = LARGE["a"], LARGE["b"], LARGE["x"], LARGE["i"]
    region = np.abs(a - (a + b) * x) <= 0.03 * np.minimum(a, b)
    assert region.sum() > 400 and (~region).sum() > 300
    huge = 10.0 ** np.array([6, 20, 100, 200, 300])
    got = _run("float64", np.r_[a, huge], np.r_[b, huge], np.r_[x, np.full(5, 0.5)])
    np.testing.assert_array_equal(got[-5:], 0.5)
    got = got[:-5]
    normal = ref >= TINY
    bound = np.where(region, 1e-14 + 2 * EPS * np.sqrt(a + b), 1e-13 + 16 * EPS * _exponent_size(a, b, x)) * ref
    bad = normal & ~(np.abs(got - ref) <= bound)
    assert normal.sum() > 950 and not bad.any(), list(zip(a[bad][:5], b[bad][:5], x[bad][:5], got[bad][:5]))
    got32 = _run("float32", a, b, x).astype(np.float64)
    normal32 = ref >= np.finfo(np.float32).tiny
    ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    assert normal32.sum() > 900 and np.all(np.abs(got32 - ref)[normal32] <= 4 * ulp[normal32])


def test_a_tiny_x_beside_a_huge_shape_keeps_its_complement():
    """b log(1 - x) with x = 3e-9 and b = 1e9: the rounded 1 - x is off by eps/x
    relative (4e-8 in I before); the prefactor takes log1p of the exact smaller
    of x and 1 - x (``_prefactor``), and BASYM's lambda TOMS 708's form.
    Against SciPy (Boost's ``ibeta``, checked against mpmath at the worst points):
    the module's bound, (1e-13 + 16 eps E) |I|, where the power series runs
    (b x <= 1, either side of the mean; 4e-8 relative before); the continued
    fractions at these shapes lose more (docs/numerics.md)."""
    rng = np.random.default_rng(7)
    a = np.exp(rng.uniform(0, np.log(1e4), 2000))
    b = np.exp(rng.uniform(np.log(1e6), np.log(1e9), 2000))
    x = np.exp(rng.uniform(np.log(1e-3), 0, 2000)) / b
    a, b, x = np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([x, 1 - x])
    got = _run("float64", a, b, x)
    want = sp.betainc(a, b, x)
    keep = want > 1e-290
    assert keep.sum() > 2000
    bound = (1e-13 + 16 * np.finfo(float).eps * _exponent_size(a, b, x)) * want
    bad = keep & ~(np.abs(got - want) <= bound)
    assert not bad.any(), list(zip(a[bad][:5], b[bad][:5], x[bad][:5], got[bad][:5], want[bad][:5]))


UNEQUAL = np.load(pathlib.Path(__file__).with_name("data") / "incbeta_unequal_mpmath.npz")


def test_very_unequal_shapes_near_the_mean():
    """Issue 26: one shape in [1e6, 1e9], the other in [0.1, 1e5], x within 3
    standard deviations of the mean (``make_incbeta_unequal_reference.py``, 2,000
    points), where TOMS 708's bratio choice runs (``incbeta_toms_f64``; Cephes'
    fractions gave NaN on 613 of these points and lost 9.5e-10 on others).
    float64 within 1.5e-13 relative (measured 1.39e-13; 2.1e-14 where the
    smaller shape is <= 1, BGRAT and the power series), below the normal range
    within 1e-300; I and 1 - I both to their own accuracy (betainc_pair's
    complement side); float32 within 4 ulp where x < 1/2 is a float32 number."""
    a, b, x, ref = UNEQUAL["a"], UNEQUAL["b"], UNEQUAL["x"], UNEQUAL["i"]
    small = np.minimum(a, b)
    assert len(a) == 2000 and (small <= 1).sum() > 250 and (small < 40).sum() > 700 and (small > 100).sum() > 900
    assert min(a.max(), b.max()) > 5e8 and (a > 1e6).sum() > 900 and (b > 1e6).sum() > 900
    got = _run("float64", a, b, x)
    normal = ref >= TINY
    assert normal.sum() > 1950 and not np.isnan(got).any()
    err = np.abs(got - ref)
    bad = normal & ~(err <= np.where(small <= 1, 3e-14, 1.5e-13) * ref)
    assert not bad.any(), list(zip(a[bad][:5], b[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))
    assert np.all(err[~normal] <= 1e-300)
    upper = ref < 0.999  # the complement 1 - I, formed from the complement side where flipped
    assert np.all(np.abs((1 - got) - (1 - ref))[upper] <= 1.5e-13 * (1 - ref[upper]))
    f = x < 0.5
    got32 = _run("float32", a[f], b[f], x[f]).astype(np.float64)
    normal32 = ref[f] >= np.finfo(np.float32).tiny
    ulp = np.spacing(np.abs(ref[f].astype(np.float32))).astype(np.float64)
    assert normal32.sum() > 900 and np.all(np.abs(got32 - ref[f])[normal32] <= 4 * ulp[normal32])


def test_very_unequal_shapes_match_scipy_where_boost_is_accurate():
    """A few points of issue 26's region against SciPy (Boost's ``ibeta``) and
    mpmath alike; at (3, 5e8, 6e-9) SciPy 1.17 is off by 2e-8 relative (mpmath, 60
    digits, and the closed form for integer a: 0.57680992223378359717), this module
    is not."""
    a = np.array([3.0, 5e8, 0.3, 2e8, 78659.74009210085])
    b = np.array([5e8, 3.0, 2e8, 0.3, 147216577.97253078])
    x = np.array([6e-9, 1 - 6e-9, 1.7e-9, 1 - 1.3e-9, 0.0005164312500293054])
    want = np.array([0.5768099222337836, 0.4231900719015842, 0.7485384888925838, 0.29771226006548657,
                     4.544571634505002e-21])
    got = _run("float64", a, b, x)
    np.testing.assert_allclose(got, want, rtol=1.5e-13)
    np.testing.assert_allclose(sp.betainc(a[1:4], b[1:4], x[1:4]), want[1:4], rtol=1e-14)


@pytest.mark.slow
def test_betaincinv_is_finite_at_very_unequal_shapes():
    """``betaincinv`` (which calls ``betainc``) at issue 26's points: finite
    everywhere (NaN on 679 of 1,931 before), x recovered within 2e-6 relative
    (measured 1.1e-6, 2.5e-11 at the 99th percentile: the inversion's own
    tolerance, ``incbetainv_f64``)."""
    a, b, x, ref = UNEQUAL["a"], UNEQUAL["b"], UNEQUAL["x"], UNEQUAL["i"]
    keep = (ref >= TINY) & (ref < 1)
    av, bv, yv = (pt.vector(n, dtype="float64") for n in "aby")
    model = compile_to_onnx([av, bv, yv], outputs=[pt.betaincinv(av, bv, yv)])
    got = model.run(a[keep], b[keep], ref[keep])[0]
    assert keep.sum() > 1900 and not np.isnan(got).any()
    assert np.all(np.abs(got - x[keep]) <= 2e-6 * x[keep])
