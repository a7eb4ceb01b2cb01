"""Accuracy of ``betaincinv`` (``backends/onnx/rules/incbetainv_f64.py``) in
onnxruntime against mpmath, its special values against SciPy, and its
PyTensor gradient against PyTensor.

The mpmath references (40 digits) of 10,000 (a, b, y) points are stored in
``data/betaincinv_mpmath.npz`` (``make_betaincinv_reference.py`` regenerates
them in about a minute); the first 5,000 are float32 numbers. Asserted where
the reference is a normal float:

* float64: ``|got - x| <= (1e-13 + 16 kappa (16 + E) eps) x`` with ``kappa =
  max(1, max(I, 1 - I) / (x |dI/dx|))``, the larger of the root's condition
  numbers in I and in 1 - I (one ulp of either moves x by kappa ulp; each
  step forms one of them as 1 minus the other; about 1/a for tiny a), and
  ``E`` the forward function's exponent term where a + b >= 171.6
  (``|a log x| + |b log(1-x)| + |lgamma a| + |lgamma b| + |lgamma(a+b)|``,
  docs/numerics.md's ``betainc`` row), 0 elsewhere; measured at most 0.66 of
  it. 1e-13 holds at 97% of the points (max 1.1e-11 at a ~ 1e-3);
* below the normal range (tiny a: roots to e^-7000) as small as the reference;
* float32: within 4 float32 ulp of the float64 reference (``slow``, as the
  gradient: each model's onnxruntime session takes seconds to build).
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
from tests.helpers import REFERENCE_MODE

DATA = np.load(pathlib.Path(__file__).with_name("data") / "betaincinv_mpmath.npz")
EPS = np.finfo(np.float64).eps
TINY = np.finfo(np.float64).tiny
FLOAT32_POINTS = 5000


@functools.cache
def _model(dtype):
    inputs = [pt.vector(name, dtype=dtype) for name in "aby"]
    return compile_to_onnx(inputs, outputs=[pt.betaincinv(*inputs)])


def _run(dtype, a, b, y):
    """``betaincinv`` on 1-D arguments in onnxruntime, one model per dtype."""
    return _model(dtype).run(*(v.astype(dtype) for v in (a, b, y)))[0]


def _bound(a, b, x):
    """``(1e-13 + 16 kappa (16 + E) eps) x`` (module docstring) at the exact roots x."""
    with np.errstate(all="ignore"):
        i = np.where(x <= 0.5, sp.betainc(a, b, x), 1 - sp.betainc(b, a, 1 - x))
        density_x = np.exp(a * np.log(x) + b * np.log1p(-x) - sp.betaln(a, b))  # x dI/dx
        kappa = np.maximum(1.0, np.maximum(i, 1 - i) / density_x)
        exponent = np.where(a + b >= 171.6, np.abs(a * np.log(x)) + np.abs(b * np.log1p(-x)) + np.abs(sp.gammaln(a))
                            + np.abs(sp.gammaln(b)) + np.abs(sp.gammaln(a + b)), 0.0)
    return (1e-13 + 16 * kappa * (16 + exponent) * EPS) * x


def test_reference_covers_the_domain():
    a, b, y, x = DATA["a"], DATA["b"], DATA["y"], DATA["x"]
    assert len(a) == 10_000
    assert a.min() < 2e-3 and a.max() > 5e3 and b.min() < 2e-3 and b.max() > 5e3
    assert (y < 1e-200).sum() > 400 and (1 - y < 1e-12).sum() > 500 and ((y > 0.1) & (y < 0.9)).sum() > 1500
    assert (x < 1e-100).sum() > 500 and (1 - x < 1e-10).sum() > 500 and ((x > 0.1) & (x < 0.9)).sum() > 1500


def test_float64_against_mpmath():
    a, b, y, ref = DATA["a"], DATA["b"], DATA["y"], DATA["x"]
    got = _run("float64", a, b, y)
    normal = ref >= TINY
    assert normal.sum() > 9000
    bad = normal & ~(np.abs(got - ref) <= _bound(a, b, ref))
    assert not bad.any(), list(zip(a[bad][:5], b[bad][:5], y[bad][:5], got[bad][:5], ref[bad][:5]))
    assert (np.abs(got - ref)[normal] <= 1e-13 * ref[normal]).mean() > 0.97  # the plain bound, almost everywhere
    assert np.all(np.abs(got[~normal] - ref[~normal]) <= 1e-300)


LARGE = np.load(pathlib.Path(__file__).with_name("data") / "betaincinv_large_mpmath.npz")


def test_large_shapes_against_mpmath():
    """Shapes from 10 to 1e300 (``make_betaincinv_large_reference.py``: mpmath
    quadrature, SciPy is no reference there: 6e-10 off at a = b = 1e16, y = 0.1,
    and 2e-8 off at a = 7e50, b = 1.9e142): within 1e-13 x wherever the root is
    a normal float. Before, betaincinv(1e300, 1e300, 0.5) was 0.75 and roots
    with shapes past ~1e16 were NaN or orders of magnitude off (Halley's
    bisection fallback from a start where I underflowed)."""
    a, b, y, ref = LARGE["a"], LARGE["b"], LARGE["y"], LARGE["x"]
    assert len(a) == 1000 and np.minimum(a, b).max() > 1e250 and (np.maximum(a, b) / np.minimum(a, b) > 1e100).sum() > 100
    assert (y < 1e-100).sum() > 100 and (1 - y < 1e-10).sum() > 100 and (a == b).sum() > 200
    got = _run("float64", a, b, y)
    normal = ref >= TINY
    bad = normal & ~(np.abs(got - ref) <= 1e-13 * ref)
    assert normal.sum() > 900 and not bad.any(), list(zip(a[bad][:5], b[bad][:5], y[bad][:5], got[bad][:5], ref[bad][:5]))
    equal = 10.0 ** np.array([2, 5, 16, 28, 50, 300])  # the median of a symmetric beta is 1/2
    np.testing.assert_allclose(_run("float64", equal, equal, np.full(6, 0.5)), 0.5, rtol=2e-16)


@pytest.mark.slow
def test_float32_within_4_ulp():
    a, b, y, ref = (DATA[v][:FLOAT32_POINTS] for v in ("a", "b", "y", "x"))
    got = _run("float32", a, b, y)
    assert got.dtype == np.float32
    normal = (ref >= np.finfo(np.float32).tiny) & (ref <= np.finfo(np.float32).max)
    ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    bad = normal & ~(np.abs(got.astype(np.float64) - ref) <= 4 * ulp)
    assert normal.sum() > 3000 and not bad.any(), list(zip(a[bad][:5], b[bad][:5], y[bad][:5], got[bad][:5], ref[bad][:5]))


SPECIAL = np.array([(np.nan, 1.0, 0.5), (1.0, np.nan, 0.5), (1.0, 1.0, np.nan), (-1.0, 1.0, 0.5), (1.0, -1.0, 0.5),
                    (0.0, 1.0, 0.5), (1.0, 0.0, 0.5), (0.0, 1.0, 0.0), (2.0, 3.0, -0.1), (2.0, 3.0, 1.1),
                    (2.0, 3.0, 0.0), (2.0, 3.0, 1.0), (np.inf, 1.0, 0.5), (1.0, np.inf, 0.5), (np.inf, np.inf, 0.5), (np.inf, 3.0, 0.5), (3.0, np.inf, 0.5),
                    (np.inf, 2.0, 0.0), (2.0, np.inf, 1.0), (1.0, 1e-300, 0.5), (0.5, 0.5, 1 - 2 ** -53),
                    (1.0, 1.0, 0.25), (3.0, 1.0, 0.125)])


def test_special_values_as_scipy():
    a, b, y = SPECIAL.T
    got = _run("float64", a, b, y)
    want = sp.betaincinv(a, b, y)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)


def test_tiny_roots_and_targets_differ_from_scipy_where_scipy_is_off():
    """SciPy returns the smallest normal float (2.2e-308) where the root is
    below it (here e^-7459, mpmath: ``make_betaincinv_reference.root``), and
    is off by a factor 10 for a subnormal y (x^2 / (2 B(2, 3)) = 6 x^2 = y)."""
    a, b, y = np.array([[0.0030177475418895483, 8063.8212890625, 1.7250093020670931e-10],
                        [2.0, 3.0, 1e-310], [2.0, 3.0, 1e-320]]).T
    got = _run("float64", a, b, y)
    assert 2e-308 < sp.betaincinv(a[0], b[0], y[0]) <= TINY and got[0] == 0.0
    np.testing.assert_allclose(got[1:], np.sqrt(y[1:]) / np.sqrt(6), rtol=1e-6)  # (y / 6 would round)
    assert sp.betaincinv(2.0, 3.0, 1e-310) > 10 * got[1]


@pytest.mark.slow
def test_gradient_matches_pytensor_and_broadcasts():
    """PyTensor's gradient in y (``BetaIncInv.pullback``; none in a, b) compiles
    and matches; vectors a, b broadcast against a matrix y."""
    a, b, y = pt.dvector("a"), pt.dvector("b"), pt.dmatrix("y")
    cost = (pt.betaincinv(a, b, y) ** 2).sum() + pt.log(pt.betaincinv(a, b, y)).sum()
    grad = pytensor.grad(cost, y)
    av, bv = np.array([0.3, 1.5, 7.0, 60.0]), np.array([2.0, 0.4, 30.0, 5.0])
    yv = np.array([[0.02, 0.4, 0.75, 0.999], [0.5, 1e-5, 0.3, 0.01]])
    want = pytensor.function([a, b, y], [cost, grad], mode=REFERENCE_MODE)(av, bv, yv)
    got = compile_to_onnx([a, b, y], outputs=[cost, grad]).run(av, bv, yv)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10)


def test_no_wrong_root_where_betainc_is_nan():
    """Very unequal shapes (one 1e3..1e5, the other 1e6..1e9), y anywhere: each root is
    SciPy's to 1e-10 or NaN where betainc's continued fractions do not converge
    (docs/status.md). Before, a NaN I moved the bracket as if x were below the root:
    betaincinv(2585, 7.4e7, 0.957) gave 2.6e-4 for 3.6e-5."""
    rng = np.random.default_rng(3)
    a = np.exp(rng.uniform(np.log(1e3), np.log(1e5), 1000))
    b = np.exp(rng.uniform(np.log(1e6), np.log(1e9), 1000))
    y = rng.uniform(0.01, 0.99, 1000)
    a, b, y = np.append(a, 2585.4790619577784), np.append(b, 73756577.05319278), np.append(y, 0.9569192569099866)
    got, want = _run("float64", a, b, y), sp.betaincinv(a, b, y)
    known = ~np.isnan(got)
    assert known.sum() > 700
    np.testing.assert_allclose(got[known], want[known], rtol=1e-10)
