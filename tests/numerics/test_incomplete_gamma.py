"""Accuracy of ``gammainc`` / ``gammaincc`` (``backends/onnx/rules/incgamma_f64.py``)
in onnxruntime against mpmath, their special values against SciPy, and
their PyTensor gradients (``ScalarLoop``s) against PyTensor.

The mpmath references (30 digits) of 10,000 float32-representable points
are stored in ``data/incgamma_mpmath.npz`` (``make_incgamma_reference.py``
regenerates them, which takes minutes). Asserted where the reference is a
normal float:

* float64: ``|got - ref| <= (1e-13 + 16 eps E) |ref|``, where ``E = |a log x|
  + x + |lgamma(a)|`` when the prefactor ``x^a e^-x / Gamma(a)`` is formed as
  ``exp`` of that sum (|a - x| > 0.4 a, SciPy's choice) and 0 otherwise:
  rounding the exponent is SciPy's error too, and it is the size of the
  function's own condition number in a and x there;
* float32: within 4 float32 ulp of the float64 reference.
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

DATA = np.load(pathlib.Path(__file__).with_name("data") / "incgamma_mpmath.npz")
EPS = np.finfo(np.float64).eps
TINY = np.finfo(np.float64).tiny
FUNCTIONS = {"gammainc": (pt.gammainc, "p", sp.gammainc), "gammaincc": (pt.gammaincc, "q", sp.gammaincc)}


def _run(name, dtype, a, x):
    av, xv = pt.vector("a", dtype=dtype), pt.vector("x", dtype=dtype)
    model = compile_to_onnx([av, xv], outputs=[FUNCTIONS[name][0](av, xv)])
    return model.run(a.astype(dtype), x.astype(dtype))[0]


def _exponent_size(a, x):
    with np.errstate(all="ignore"):
        direct = np.abs(a - x) > 0.4 * a
        return np.where(direct, np.abs(a * np.log(x)) + x + np.abs(sp.gammaln(a)), 0.0)


def test_reference_covers_the_domain():
    a, x = DATA["a"], DATA["x"]
    assert len(a) == 10_000
    assert a.min() < 1e-2 and a.max() > 5e3 and x.min() < 1e-3 and x.max() > 1e4
    near = np.abs(x - a) < 2 * np.sqrt(a)
    assert near.sum() > 2000  # the transition region
    for tail in (DATA["p"], DATA["q"]):
        assert (tail[tail > 0] < 1e-100).sum() >= 150  # deep tails


@pytest.mark.parametrize("name", FUNCTIONS)
def test_float64_against_mpmath(name):
    a, x = DATA["a"], DATA["x"]
    ref = DATA[FUNCTIONS[name][1]]
    got = _run(name, "float64", a, x)
    normal = ref >= TINY
    assert normal.sum() > 9000
    bound = (1e-13 + 16 * EPS * _exponent_size(a, x)) * np.abs(ref)
    bad = normal & ~(np.abs(got - ref) <= bound)
    assert not bad.any(), list(zip(a[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))
    # below the normal range: no more than the absolute error of a normal result
    assert np.all(np.abs(got[~normal] - ref[~normal]) <= 1e-300)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_float32_within_4_ulp(name):
    a, x = DATA["a"], DATA["x"]
    ref = DATA[FUNCTIONS[name][1]]
    got = _run(name, "float32", a, x)
    assert got.dtype == np.float32
    normal = ref >= np.finfo(np.float32).tiny
    ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    err = np.abs(got.astype(np.float64) - ref)
    bad = normal & ~(err <= 4 * ulp)
    assert normal.sum() > 8000 and not bad.any(), list(zip(a[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))


SPECIAL = np.array([(np.nan, 1.0), (1.0, np.nan), (-1.0, 1.0), (1.0, -1.0), (0.0, 1.0), (0.0, 0.0), (2.0, 0.0),
                    (np.inf, 1.0), (np.inf, np.inf), (2.0, np.inf), (0.0, np.inf), (1e-300, 1e-300),
                    (5e-324, 1.0), (1e300, 1e-300), (1e-300, 1e300), (0.5, 1e-320), (1e6, 1e6 + 1e3)])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_special_values_as_scipy(name):
    a, x = SPECIAL.T
    got = _run(name, "float64", a, x)
    want = FUNCTIONS[name][2](a, x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_broadcasting_and_empty_inputs():
    a, x = pt.dvector("a"), pt.dmatrix("x")
    model = compile_to_onnx([a, x], outputs=[pt.gammainc(a, x), pt.gammaincc(a, x)])
    av, xv = np.array([0.5, 3.0, 40.0]), np.array([[0.1, 2.0, 45.0], [3.0, 0.2, 30.0]])
    p, q = model.run(av, xv)
    np.testing.assert_allclose(p, sp.gammainc(av, xv), rtol=1e-14)
    np.testing.assert_allclose(q, sp.gammaincc(av, xv), rtol=1e-14)
    p, q = model.run(np.zeros(0), np.zeros((2, 0)))
    assert p.shape == q.shape == (2, 0)


def test_gradients_compile_and_match_pytensor():
    """PyTensor's gradients of P and Q are ScalarLoop series (``gammainc_grad``);
    ``pytensor.grad`` of a log-CDF compiles and matches PyTensor's Python mode
    (SciPy's psi inside the loop; C mode's psi is off by ~3e-9)."""
    a, x = pt.dvector("a"), pt.dvector("x")
    y = pt.log(pt.gammainc(a, x)).sum() + pt.log(pt.gammaincc(a, x)).sum()
    grads = pytensor.grad(y, [a, x])
    # where PyTensor's own series are well conditioned: small x, and x >= max(a, 8) (the
    # gammaincc gradient's other branch sums an alternating series of terms up to e^x times
    # the result, to a tolerance of 1e-6: there one ulp of a log moves it by ~1e-6)
    rng = np.random.default_rng(5)
    av = np.r_[rng.uniform(0.2, 10, 3), rng.uniform(1, 20, 3)]
    xv = np.r_[rng.uniform(0.1, 2.5, 3), av[3:] + rng.uniform(8, 20, 3)]
    want = pytensor.function([a, x], [y, *grads], mode=REFERENCE_MODE)(av, xv)
    got = compile_to_onnx([a, x], outputs=[y, *grads]).run(av, xv)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


LARGE = np.load(pathlib.Path(__file__).with_name("data") / "incgamma_large_mpmath.npz")


def _band_exponent(a, x):
    """a eta^2 / 2 = x - a - a log(x / a): the size of the exponent of Temme's
    e^(-a eta^2 / 2), whose rounding (eps of it) is the error there."""
    s = (x - a) / a
    return a * (s - np.log1p(s))


def _both(dtype, a, x):
    av, xv = pt.vector("a", dtype=dtype), pt.vector("x", dtype=dtype)
    model = compile_to_onnx([av, xv], outputs=[pt.gammainc(av, xv), pt.gammaincc(av, xv)])
    return model.run(a.astype(dtype), x.astype(dtype))


def test_temme_band_against_mpmath():
    """|x - a| < 0.3 a with a from 20 to 1e300 (``make_incgamma_large_reference.py``):
    Temme's expansion, within (1e-14 + 4 eps a eta^2 / 2) relative in float64 (the
    series took up to 2,000 steps here and gave NaN past a ~ 1e5; SciPy's series
    give 1.0 relative error at a >= 1e8) and 4 float32 ulp where a < 1e30. At
    a = x = 1e300 P = Q = 1/2, as SciPy."""
    median_a, median_x = np.array([1e300, 1e300]), np.array([1e300, 1e300 * (1 + 1e-150)])
    a, x = np.r_[LARGE["a"], median_a], np.r_[LARGE["x"], median_x]
    got = _both("float64", a, x)
    small = LARGE["a"] < 1e30
    got32 = _both("float32", LARGE["a"][small], LARGE["x"][small])
    for j, name in enumerate(FUNCTIONS):
        np.testing.assert_allclose(got[j][-2:], FUNCTIONS[name][2](median_a, median_x), rtol=1e-14)
        ref = LARGE[FUNCTIONS[name][1]]
        normal = ref >= TINY
        assert normal.sum() > 1800 and LARGE["a"].max() > 1e299 and (normal & (LARGE["a"] > 1e8)).sum() > 800
        bound = (1e-14 + 4 * EPS * _band_exponent(LARGE["a"], LARGE["x"])) * ref
        bad = normal & ~(np.abs(got[j][:-2] - ref) <= bound)
        assert not bad.any(), (name, list(zip(a[bad][:5], x[bad][:5], got[j][bad][:5], ref[bad][:5])))
        ref32 = ref[small]
        normal32 = ref32 >= np.finfo(np.float32).tiny
        ulp = np.spacing(np.abs(ref32.astype(np.float32))).astype(np.float64)
        err32 = np.abs(got32[j].astype(np.float64) - ref32)
        assert got32[j].dtype == np.float32 and normal32.sum() > 900
        assert np.all(err32[normal32] <= 4 * ulp[normal32]), name
