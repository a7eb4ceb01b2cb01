"""Accuracy of ``j0``/``j1`` (``backends/onnx/rules/bessel_f64.py``) in
onnxruntime against mpmath, their limits against SciPy, and the PyTensor
graphs that build them (``pt.j0``/``pt.j1`` and the gradient of ``j0``).

The mpmath references of 10,000 float32-representable points are stored
in ``data/bessel_mpmath.npz`` (``make_bessel_reference.py`` regenerates
them). With ``amp = min(1, sqrt(2 / (pi |x|)))`` (the envelope of J0 and J1)
the float64 bound asserted is

    |got - ref| <= 1e-13 |ref| + 5e-16 amp   (|x| > 5),
    |got - ref| <= 1e-13 |ref|               (|x| <= 5, zeros included),

i.e. relative 1e-13 wherever |ref| >= 5e-3 amp, and absolute near the zeros
beyond 5, where the Hankel form ``P cos(theta) - w Q sin(theta)`` cancels
(relative error there is unbounded for any method through that form;
Cephes states 4.2e-16 absolute). float32: within 4 ulp where
|ref| >= 1e-6 amp.
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

DATA = np.load(pathlib.Path(__file__).with_name("data") / "bessel_mpmath.npz")
TINY = np.finfo(np.float64).tiny


def _run(dtype, x):
    v = pt.vector("x", dtype=dtype)
    return compile_to_onnx([v], outputs=[pt.j0(v), pt.j1(v)]).run(x.astype(dtype))


def _envelope(x):
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, np.sqrt(2.0 / (np.pi * np.abs(x))))


def test_reference_covers_the_domain():
    x = DATA["x"]
    assert len(x) == 10_000 and x.max() > 1e11 and np.abs(x).min() < 1e-37 and x.min() < -1e3
    zeros = sp.jn_zeros(0, 60)
    assert (np.min(np.abs(x[:, None] - zeros[None, :]), axis=1) < 1e-3).sum() > 1000


@pytest.mark.parametrize("name", ["j0", "j1"])
def test_float64_against_mpmath(name):
    x, ref = DATA["x"], DATA[name]
    got = _run("float64", x)[0 if name == "j0" else 1]
    amp = _envelope(x)
    normal = np.abs(ref) >= TINY
    bound = 1e-13 * np.abs(ref) + np.where(np.abs(x) > 5, 5e-16 * amp, 0.0)
    bad = normal & ~(np.abs(got - ref) <= bound)
    assert not bad.any(), list(zip(x[bad][:5], got[bad][:5], ref[bad][:5]))
    # relative 1e-13 everywhere |ref| >= 5e-3 amp: most points, the zeros below 5 included
    relative = normal & (np.abs(ref) >= 5e-3 * amp)
    assert relative.sum() > 5000
    assert np.all(np.abs(got - ref)[relative] <= 1e-13 * np.abs(ref[relative]))
    near_small_zero = (np.abs(x) < 5) & (np.abs(ref) < 1e-3)
    assert near_small_zero.sum() > 100
    assert np.all(np.abs(got - ref)[near_small_zero] <= 1e-13 * np.abs(ref[near_small_zero]))


def test_float32_within_4_ulp():
    x = DATA["x"]
    for name, got in zip(("j0", "j1"), _run("float32", x)):
        ref = DATA[name]
        assert got.dtype == np.float32
        keep = (np.abs(ref) >= np.finfo(np.float32).tiny) & (np.abs(ref) >= 1e-6 * _envelope(x))
        ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
        bad = keep & ~(np.abs(got.astype(np.float64) - ref) <= 4 * ulp)
        assert not bad.any(), (name, list(zip(x[bad][:5], got[bad][:5], ref[bad][:5])))
        assert keep.sum() > 7000


def test_float16_rounds_the_float64_value():
    x = np.array([0.5, 2.0, 2.4, 7.0, -3.0, 100.0], dtype=np.float16)
    j0, j1 = _run("float16", x)
    assert j0.dtype == np.float16
    np.testing.assert_array_equal(j0, sp.j0(x.astype(np.float64)).astype(np.float16))
    np.testing.assert_array_equal(j1, sp.j1(x.astype(np.float64)).astype(np.float16))


def test_limits_and_signs():
    """Even J0, odd J1; 0 at +-inf (the C library's j0/j1, PyTensor's C backend;
    SciPy 1.17 gives NaN there); NaN for NaN; SciPy's values up to 100."""
    x = np.array([0.0, 5e-324, -1e-300, 1e-10, -4.0, 5.0, -5.0, 100.0, np.inf, -np.inf, np.nan])
    j0, j1 = _run("float64", x)
    finite = np.isfinite(x)
    np.testing.assert_allclose(j0[finite], sp.j0(x[finite]), rtol=1e-13, atol=0)
    np.testing.assert_allclose(j1[finite], sp.j1(x[finite]), rtol=1e-13, atol=1e-323)
    np.testing.assert_array_equal(j0[~finite], [0.0, 0.0, np.nan])
    np.testing.assert_array_equal(j1[~finite], [0.0, 0.0, np.nan])


def test_huge_arguments_against_mpmath():
    """SciPy 1.17's j0/j1 lose accuracy for large x (``j0(1e4)`` is 2.8e-13
    relative off; ``j0(1e15)`` is 5.29e-9, mpmath 6.16e-9; ``j0(1e20)`` is 9
    times too large); the model keeps the phase: the 180-bit reduction below
    2^52, onnxruntime's Sin/Cos of x from there (mpmath values, 40 digits)."""
    x = np.array([1e4, 1e15, 2.0 ** 52, 1e20])
    j0, j1 = _run("float64", x)
    amp = _envelope(x)
    want0 = np.array([-0.007096160353388801477, 6.156638646885021e-09, 3.267684296787875e-09, 6.698009040703424e-12])
    want1 = np.array([0.00364745075552958034, 2.4468665123771328e-08, 1.1431545178992597e-08, -7.95068198242545e-11])
    assert np.all(np.abs(j0 - want0) <= 1e-13 * np.abs(want0) + 5e-16 * amp)
    assert np.all(np.abs(j1 - want1) <= 1e-13 * np.abs(want1) + 5e-16 * amp)


def test_phase_reduction_near_multiples_of_pi():
    """x close to large multiples of pi/4: the Hankel phase keeps its bits
    where ``x - pi/4`` in float64 would not (mpmath values, 40 digits)."""
    x = np.array([355.0 * 2 ** 20, 7.0e7 * np.pi, 1e12 + 0.5])
    want0 = np.array([3.430161843304289e-05, 3.8045308104684173e-05, 4.6863282789589057e-07])
    j0, _ = _run("float64", x)
    assert np.all(np.abs(j0 - want0) <= 1e-13 * np.abs(want0) + 5e-16 * _envelope(x))


@pytest.mark.parametrize("compiled", [False, True], ids=["raw", "function"])
def test_gradient_of_j0_is_minus_j1(compiled):
    x = pt.dvector("x")
    y = pt.sum(pt.j0(x) * 2.0)
    g = pytensor.grad(y, x)
    xs = np.array([0.3, 2.0, 4.9, 5.1, 17.0, -8.0, 300.0])
    want = pytensor.function([x], [y, g], mode=REFERENCE_MODE)(xs)
    graph = pytensor.function([x], [y, g]) if compiled else [x]
    m = compile_to_onnx(graph, outputs=None if compiled else [y, g])
    for got, w in zip(m.run(xs), want):
        np.testing.assert_allclose(got, w, rtol=1e-10)
    np.testing.assert_allclose(m.run(xs)[1], -2.0 * sp.j1(xs), rtol=1e-13)
