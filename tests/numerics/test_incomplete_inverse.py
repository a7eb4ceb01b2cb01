"""Accuracy of ``gammaincinv`` / ``gammainccinv``
(``backends/onnx/rules/incinv_f64.py``) in onnxruntime against mpmath, their
special values against SciPy, and their PyTensor gradients against PyTensor.

The mpmath references (30 digits) of 10,000 (a, y) points are stored in
``data/incinv_gamma_mpmath.npz`` (``make_incinv_reference.py`` regenerates
them in about a minute); the first 5,000 are float32 numbers. Asserted where
the reference is a normal float:

* float64: ``|got - x| <= (1e-13 + kappa (16 + E) eps) x`` with ``kappa =
  max(1, F / (x |dF/dx|))``, F the smaller of P(a, x) and Q(a, x), the
  condition number of the root in F (one ulp of F moves x by kappa ulp: for
  a < 1 and tiny x it is about 1/a), and ``E`` the forward functions' own
  exponent term (``test_incomplete_gamma.py``): the root is that of the
  float64 P or Q, which is within ``(16 + E) eps`` of the exact one. Where
  kappa < 10 the error is below 1e-13 at all but 5 of the points (tiny x,
  E ~ 300: up to 1.9e-13);
* float32: within 4 float32 ulp of the float64 reference (``slow``, as the
  gradients: each model's onnxruntime session takes seconds to build).
"""

from __future__ import annotations

import functools
import pathlib

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special as sp

from compiler import compile_to_onnx
from ir.ops.special import BINARY_SPECIAL
from tests.helpers import REFERENCE_MODE

GAMMA = np.load(pathlib.Path(__file__).with_name("data") / "incinv_gamma_mpmath.npz")
EPS = np.finfo(np.float64).eps
TINY = np.finfo(np.float64).tiny
GAMMA_FUNCTIONS = {"gammaincinv": pt.gammaincinv, "gammainccinv": pt.gammainccinv}
FUNCTIONS = GAMMA_FUNCTIONS
FLOAT32_POINTS = 5000


@functools.cache
def _model(name, dtype, arity):
    inputs = [pt.vector(f"v{i}", dtype=dtype) for i in range(arity)]
    return compile_to_onnx(inputs, outputs=[FUNCTIONS[name](*inputs)])


def _run(name, dtype, *args):
    """``name`` on 1-D ``args`` in onnxruntime: one model per function and dtype
    (its session costs seconds: the bodies hold the forward functions' Loops)."""
    return _model(name, dtype, len(args)).run(*(v.astype(dtype) for v in args))[0]


def _gamma_bound(a, x):
    """``(1e-13 + kappa (16 + E) eps) x`` (module docstring) at the exact roots x."""
    with np.errstate(all="ignore"):
        f = np.minimum(sp.gammainc(a, x), sp.gammaincc(a, x))
        kappa = np.maximum(1.0, f / np.exp(a * np.log(x) - x - sp.gammaln(a)))
        exponent = np.where(np.abs(a - x) > 0.4 * a, np.abs(a * np.log(x)) + x + np.abs(sp.gammaln(a)), 0.0)
    return (1e-13 + kappa * (16 + exponent) * EPS) * x


def test_gamma_reference_covers_the_domain():
    a, y = GAMMA["a"], GAMMA["y"]
    assert len(a) == 10_000
    assert a.min() < 1e-5 and a.max() > 5e3
    assert (y < 1e-200).sum() > 400 and (1 - y < 1e-12).sum() > 500 and ((y > 0.1) & (y < 0.9)).sum() > 1500
    for name in GAMMA_FUNCTIONS:
        x = GAMMA[name]
        assert (x < 1e-100).sum() > 500 and (x > 1e3).sum() > 500  # both tails of the root


@pytest.mark.parametrize("name", GAMMA_FUNCTIONS)
def test_gamma_inverse_float64_against_mpmath(name):
    a, y, ref = GAMMA["a"], GAMMA["y"], GAMMA[name]
    got = _run(name, "float64", a, y)
    normal = ref >= TINY
    assert normal.sum() > 8500
    bad = normal & ~(np.abs(got - ref) <= _gamma_bound(a, ref))
    assert not bad.any(), list(zip(a[bad][:5], y[bad][:5], got[bad][:5], ref[bad][:5]))
    assert (np.abs(got - ref)[normal] <= 1e-13 * ref[normal]).mean() > 0.98  # the plain bound, almost everywhere
    # below the normal range (roots down to e^-68000): as small, and as SciPy's
    assert np.all(got[~normal] < 1e-300) and np.all(np.abs(got[~normal] - ref[~normal]) <= 1e-300)


@pytest.mark.slow
@pytest.mark.parametrize("name", GAMMA_FUNCTIONS)
def test_gamma_inverse_float32_within_4_ulp(name):
    a, y, ref = (GAMMA[v][:FLOAT32_POINTS] for v in ("a", "y", name))
    got = _run(name, "float32", a, y)
    assert got.dtype == np.float32
    normal = (ref >= np.finfo(np.float32).tiny) & (ref <= np.finfo(np.float32).max)
    ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    bad = normal & ~(np.abs(got.astype(np.float64) - ref) <= 4 * ulp)
    assert normal.sum() > 3000 and not bad.any(), list(zip(a[bad][:5], y[bad][:5], got[bad][:5], ref[bad][:5]))


GAMMA_SPECIAL = np.array([(np.nan, 0.5), (1.0, np.nan), (-1.0, 0.5), (2.0, -0.1), (2.0, 1.1), (2.0, 0.0), (2.0, 1.0),
                          (0.0, 0.0), (0.0, 1.0), (0.0, 0.5), (np.inf, 0.5), (np.inf, 0.0), (np.inf, 1.0),
                          (1e-300, 0.5), (1e-300, 1e-300), (3e4, 0.5), (1.0, 1 - 2 ** -53),
                          (1e-3, 0.7), (5e-324, 0.5), (1e-300, -0.1)])


@pytest.mark.parametrize("name", GAMMA_FUNCTIONS)
def test_gamma_inverse_special_values_as_scipy(name):
    a, y = GAMMA_SPECIAL.T
    got = _run(name, "float64", a, y)
    want = BINARY_SPECIAL[name](a, y)  # SciPy's, NaN where SciPy is off its domain (the last two points)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    scipy_values = getattr(sp, name)(a[:-2], y[:-2])
    np.testing.assert_array_equal(np.isnan(want[:-2]), np.isnan(scipy_values))


# subnormal targets: the tail expansions' fixed point (mpmath roots by make_incinv_reference.gamma_root;
# SciPy's gammainccinv(0.5, 1e-320) is 732.955778, 1.7e-7 off)
SUBNORMAL = {"gammaincinv": [(30.0, 1e-315, 3.808804391018822e-10)],
             "gammainccinv": [(0.5, 1e-320, 732.9556523387926), (1e-300, 1e-320, 42.28443124246888),
                              (30.0, 1e-315, 849.693338031222)]}


@pytest.mark.parametrize("name", GAMMA_FUNCTIONS)
def test_gamma_inverse_subnormal_targets(name):
    a, y, want = np.array(SUBNORMAL[name]).T
    np.testing.assert_allclose(_run(name, "float64", a, y), want, rtol=1e-6)


@pytest.mark.parametrize("name", GAMMA_FUNCTIONS)
def test_gamma_inverse_at_huge_a(name):
    """a from 1e10 to 1e300 (NaN before the forward functions had Temme's
    expansion): the root against the Cornish-Fisher expansion of the gamma
    quantile, a + z sqrt(a) + (z^2 - 1)/3 + (z^3 - 7z)/(36 sqrt(a)), z the normal
    quantile of P, whose next term, O(z^4 / a), is below 1e-17 relative here."""
    a = np.repeat(10.0 ** np.array([10, 14, 20, 50, 100, 200, 300]), 5)
    y = np.tile([1e-9, 0.01, 0.5, 0.8, 1 - 1e-6], 7)
    z = sp.ndtri(y) if name == "gammaincinv" else -sp.ndtri(y)
    root = np.sqrt(a)
    want = a + (z * root + ((z * z - 1) / 3 + (z ** 3 - 7 * z) / (36 * root)))
    got = _run(name, "float64", np.r_[a, 3.0], np.r_[y, 0.5])
    np.testing.assert_allclose(got[:-1], want, rtol=4 * EPS, atol=0)
    assert got[-1] == pytest.approx(getattr(sp, name)(3.0, 0.5), rel=1e-14)


@pytest.mark.slow
def test_gamma_inverse_gradients_match_pytensor_and_broadcast():
    """PyTensor's gradients in y (``GammaIncInv.pullback``; none in a) compile and
    match; a vector a broadcasts against a matrix y."""
    a, y = pt.dvector("a"), pt.dmatrix("y")
    cost = (pt.gammaincinv(a, y) ** 2).sum() + pt.log(pt.gammainccinv(a, y)).sum()
    grad = pytensor.grad(cost, y)
    av, yv = np.array([0.3, 1.5, 7.0, 60.0]), np.array([[0.02, 0.4, 0.75, 0.999], [0.5, 1e-5, 0.3, 0.01]])
    want = pytensor.function([a, y], [cost, grad], mode=REFERENCE_MODE)(av, yv)
    got = compile_to_onnx([a, y], outputs=[cost, grad]).run(av, yv)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10)
