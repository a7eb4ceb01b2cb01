"""Accuracy of ``owens_t`` (``backends/onnx/rules/owens_t_f64.py``) in
onnxruntime against mpmath, its special values against SciPy, its PyTensor
gradients against PyTensor, and PyMC's SkewNormal log-CDF, which needs it.

The mpmath references (40 digits) of 10,000 float32-representable points
are stored in ``data/owens_t_mpmath.npz`` (``make_owens_t_reference.py``
regenerates them in about a minute). Asserted where the reference is a
normal float (T is tiny in the tails: the error is relative to the value):

* float64: ``|got - ref| <= 4e-15 |ref|`` (measured 1.1e-15; SciPy 1.17
  reaches 1e-11 on the same points, from ``exp(-h^2/2)`` of a rounded h^2,
  and 1.2e-13 in T3's seam, where the reduced arguments have
  3.36 < h < 3.6 and a > 0.36 and T5 runs here instead);
* float32: within 4 float32 ulp of the float64 reference (measured 0.5).
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytensor
import pytensor.tensor as pt
import scipy.special as sp

from compiler import compile_to_onnx
from tests.helpers import REFERENCE_MODE
from tests.numerics.make_owens_t_reference import owens_t as owens_t_reference

DATA = np.load(pathlib.Path(__file__).with_name("data") / "owens_t_mpmath.npz")
TINY = np.finfo(np.float64).tiny
HRANGE = (0.02, 0.06, 0.09, 0.125, 0.26, 0.4, 0.6, 1.6, 1.7, 2.33, 2.4, 3.36, 3.4, 4.8)
ARANGE = (0.025, 0.09, 0.15, 0.36, 0.5, 0.9, 0.99999)


def _run(dtype, h, a):
    hv, av = pt.vector("h", dtype=dtype), pt.vector("a", dtype=dtype)
    model = compile_to_onnx([hv, av], outputs=[pt.owens_t(hv, av)])
    return model.run(h.astype(dtype), a.astype(dtype))[0]


def test_reference_covers_the_domain():
    h, a, ref = np.abs(DATA["h"]), np.abs(DATA["a"]), DATA["t"]
    assert len(h) == 10_000 and (DATA["h"] < 0).sum() > 4000 and (DATA["a"] < 0).sum() > 4000
    assert h.min() < 1e-3 and h.max() > 37 and a.min() < 1e-5 and a.max() > 1e5
    assert (np.abs(ref[ref != 0]) < 1e-200).sum() >= 500  # the tails
    near = lambda x, bounds: np.min(np.abs(x[:, None] / np.array(bounds) - 1), axis=1) < 0.02
    assert near(h, HRANGE).sum() > 1500 and near(a, ARANGE).sum() > 1500  # the method table's seams
    assert (np.abs(a - 1) < 1e-4).sum() > 300 and (np.abs(a * h / 0.67 - 1) < 0.1).sum() > 1500


def _t3_seam(h, a):
    """Where the arguments reduced to 0 <= a <= 1 fall at T3's low edge, where SciPy's T3
    is 1.2e-13 off and T5 replaces it (``owens_t_f64.dispatch``)."""
    h, a = np.abs(h), np.abs(a)
    hr, ar = np.where(a > 1, h * a, h), np.where(a > 1, 1 / a, a)
    return (hr > 3.36) & (hr < 3.6) & (ar > 0.36)


def test_float64_against_mpmath():
    h, a, ref = DATA["h"], DATA["a"], DATA["t"]
    got = _run("float64", h, a)
    normal = np.abs(ref) >= TINY
    assert normal.sum() > 9500
    seam = _t3_seam(h, a)
    assert seam.sum() > 30
    bad = normal & ~(np.abs(got - ref) <= 4e-15 * np.abs(ref))
    assert not bad.any(), list(zip(h[bad][:5], a[bad][:5], got[bad][:5], ref[bad][:5]))
    assert np.all(np.abs(got[~normal] - ref[~normal]) <= 1e-310)  # subnormal or 0: to their spacing


def test_float32_within_4_ulp():
    h, a, ref = DATA["h"], DATA["a"], DATA["t"]
    got = _run("float32", h, a)
    assert got.dtype == np.float32
    normal = np.abs(ref) >= np.finfo(np.float32).tiny
    ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    bad = normal & ~(np.abs(got.astype(np.float64) - ref) <= 4 * ulp)
    assert normal.sum() > 8000 and not bad.any(), list(zip(h[bad][:5], a[bad][:5], got[bad][:5]))


_EDGE = [np.nan, -np.inf, -40.0, -1.0, -0.0, 0.0, 1e-300, 0.5, 1.0, 4.9, 40.0, 1e300, np.inf]
SPECIAL = np.array([(h, a) for h in _EDGE for a in _EDGE])


def test_special_values_as_scipy():
    """NaN, signed zeros, a = 1, huge and infinite h and a (T(h, +-inf) is
    +-Q(|h|)/2), each against SciPy."""
    h, a = SPECIAL.T
    got = _run("float64", h, a)
    want = sp.owens_t(h, a)
    # SciPy's T2 loses T(4.9, 1e-300) = 9.73e-307 (it gives 3.6e-308): mpmath's value there
    lost = (np.abs(a) == 1e-300) & (np.abs(h) == 4.9)
    assert lost.sum() == 1
    want[lost] = [float(owens_t_reference(x, y)) for x, y in zip(h[lost], a[lost])]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~lost], want[~lost], rtol=1e-14, atol=0)
    np.testing.assert_allclose(got[lost], want[lost], rtol=1e-13, atol=0)  # measured 3.6e-14


def test_broadcasting_and_empty_inputs():
    h, a = pt.dmatrix("h"), pt.dvector("a")
    model = compile_to_onnx([h, a], outputs=[pt.owens_t(h, a)])
    hv, av = np.array([[0.1, 2.0, 7.0], [-3.0, 0.0, 0.5]]), np.array([0.3, -2.5, 1.0])
    np.testing.assert_allclose(model.run(hv, av)[0], sp.owens_t(hv, av), rtol=1e-14)
    assert model.run(np.zeros((2, 0)), np.zeros(0))[0].shape == (2, 0)


def test_gradients_compile_and_match_pytensor():
    """PyTensor's gradients of owens_t are closed forms (erf and exp); they
    compile with the function and match PyTensor's Python mode."""
    h, a = pt.dvector("h"), pt.dvector("a")
    y = (pt.owens_t(h, a) ** 2).sum()
    grads = pytensor.grad(y, [h, a])
    rng = np.random.default_rng(26)
    hv, av = rng.normal(0, 3, 8), rng.normal(0, 4, 8)
    want = pytensor.function([h, a], [y, *grads], mode=REFERENCE_MODE)(hv, av)
    got = compile_to_onnx([h, a], outputs=[y, *grads]).run(hv, av)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_skewnormal_logcdf_and_gradient_match_pytensor():
    """The SkewNormal log-CDF, ``log(Phi(z) - 2 T(z, alpha))`` with
    ``z = (x - mu)/sigma`` (PyMC 5.28's SkewNormal has no ``logcdf``, so
    it is written as a user would), compiles, and it and its gradient in mu,
    sigma, alpha and x match PyTensor to 1e-10 at 5 random points, the
    gradients relative to their largest element: PyTensor's gradient graph
    forms the density as ``phi(z) (1 + erf(alpha z/sqrt 2))``, which cancels
    where alpha z << 0 in both backends alike (erf's last bits differ)."""
    mu, sigma, alpha, x = pt.dscalar("mu"), pt.dscalar("sigma"), pt.dscalar("alpha"), pt.dvector("x")
    z = (x - mu) / sigma
    y = pt.log(0.5 * pt.erfc(-z / np.sqrt(2)) - 2 * pt.owens_t(z, alpha)).sum()
    inputs = [mu, sigma, alpha, x]
    outputs = [y, *pytensor.grad(y, inputs)]
    want_fn = pytensor.function(inputs, outputs, mode=REFERENCE_MODE)
    model = compile_to_onnx(inputs, outputs=outputs)
    rng = np.random.default_rng(7)
    for _ in range(5):
        args = [np.array(rng.normal(0, 1)), np.array(rng.uniform(0.5, 3)), np.array(rng.normal(0, 4)),
                rng.normal(0, 3, 6)]
        got, want = model.run(*args), want_fn(*args)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-10)
        for g, w in zip(got[1:], want[1:]):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10 * np.max(np.abs(w)))


def test_float16_is_the_float64_value_rounded_once():
    """float16 inputs are computed in float64 and rounded once (``special.float64_body``)."""
    h, a = DATA["h"][:500].astype(np.float16), DATA["a"][:500].astype(np.float16)
    got = _run("float16", h, a)
    assert got.dtype == np.float16
    want = sp.owens_t(h.astype(np.float64), a.astype(np.float64))
    ulp = np.spacing(np.abs(want.astype(np.float16))).astype(np.float64)
    assert np.all(np.abs(got.astype(np.float64) - want) <= ulp)
