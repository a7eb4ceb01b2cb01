"""Accuracy of ``polygamma(n, x)`` for n >= 2
(``backends/onnx/rules/polygamma_f64.py``) in onnxruntime against mpmath,
its poles and limits against SciPy, and the PyTensor graphs that build it
(the gradients of ``psi``/``tri_gamma``, ``pt.polygamma`` of a constant
order).

The mpmath references (40 digits) of 10,000 float32-representable points,
orders 2-16, are stored in ``data/polygamma_mpmath.npz``
(``make_polygamma_reference.py`` regenerates them). Asserted where the
reference is a normal float:

* float64, x > 0 (every term of the Hurwitz zeta sum positive):
  ``|got - ref| <= 2e-15 |ref|``;
* float64, x < 0 (the reflection formula): ``|got - ref| <= 1e-14 S``,
  where ``S = n! zeta(n+1, 1-x) + pi^(n+1) |Q_n(cot(pi x))|`` is the larger
  of the two terms the formula subtracts (relative to |ref| wherever they do
  not cancel: away from the zeros of psi^(n) for even n);
* float32: within 4 float32 ulp of the float64 reference.
"""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special as sp

from backends.onnx.rules.polygamma_f64 import shift_bound, tail_coefficients
from ir.ops.special import cot_derivative, polygamma_reference
from compiler import compile_to_onnx
from tests.helpers import REFERENCE_MODE

DATA = np.load(pathlib.Path(__file__).with_name("data") / "polygamma_mpmath.npz")
TINY = np.finfo(np.float64).tiny


def _run(dtype, n: int, x):
    v = pt.vector("x", dtype=dtype)
    return compile_to_onnx([v], outputs=[pt.polygamma(n, v)]).run(x.astype(dtype))[0]


def _by_order(dtype):
    """Each order's points run through its own model: (n, x, ref, got)."""
    for n in np.unique(DATA["n"]):
        pick = DATA["n"] == n
        x, ref = DATA["x"][pick], DATA["psi"][pick]
        yield int(n), x, ref, _run(dtype, int(n), x)


def _reflection_scale(n: int, x: np.ndarray) -> np.ndarray:
    t = 1.0 / np.tan(np.pi * x)
    q = np.polynomial.polynomial.polyval(t, cot_derivative(n))
    return math.factorial(n) * sp.zeta(n + 1, 1 - x) + np.pi ** (n + 1) * np.abs(q)


def test_reference_covers_the_domain():
    n, x = DATA["n"], DATA["x"]
    assert len(x) == 10_000 and set(np.unique(n)) == {2, 3, 4, 5, 6, 8, 11, 16}
    assert x.max() > 1e29 and x[x > 0].min() < 1e-29 and x.min() < -1e6
    near_pole = (x < 0) & (np.abs(x - np.round(x)) < 1e-5)
    assert near_pole.sum() > 400


def test_float64_against_mpmath():
    checked = 0
    for n, x, ref, got in _by_order("float64"):
        normal = np.abs(ref) >= TINY
        normal &= np.isfinite(ref)
        pos, neg = normal & (x > 0), normal & (x < 0)
        bad_pos = pos & ~(np.abs(got - ref) <= 2e-15 * np.abs(ref))
        assert not bad_pos.any(), (n, list(zip(x[bad_pos][:5], got[bad_pos][:5], ref[bad_pos][:5])))
        bad_neg = neg & ~(np.abs(got - ref) <= 1e-14 * _reflection_scale(n, x))
        assert not bad_neg.any(), (n, list(zip(x[bad_neg][:5], got[bad_neg][:5], ref[bad_neg][:5])))
        # beyond float64's range the result overflows to the reference's signed infinity
        big = np.abs(ref) > np.finfo(np.float64).max
        assert np.all(got[big] == np.sign(ref[big]) * np.inf)
        checked += int(normal.sum())
    assert checked > 9000


def test_float32_within_4_ulp():
    checked = 0
    for n, x, ref, got in _by_order("float32"):
        assert got.dtype == np.float32
        f32 = np.finfo(np.float32)
        normal = (np.abs(ref) >= f32.tiny) & (np.abs(ref) <= f32.max)
        # where the float64 result cancels (near the zeros for even n, x < 0) the float32 one is its rounding
        normal &= (x > 0) | (np.abs(ref) > 1e-6 * _reflection_scale(n, x))
        ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
        bad = normal & ~(np.abs(got.astype(np.float64) - ref) <= 4 * ulp)
        assert not bad.any(), (n, list(zip(x[bad][:5], got[bad][:5], ref[bad][:5])))
        checked += int(normal.sum())
    assert checked > 7500


@pytest.mark.parametrize("n", [2, 3, 4, 7, 30])
def test_poles_and_limits_as_scipy(n):
    x = np.array([0.0, -0.0, -1.0, -7.0, -1e20, np.inf, -np.inf, np.nan, 1e-300, -1e-300, 5e-324, 1e300, 2.5])
    got = _run("float64", n, x)
    want = sp.polygamma(n, x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    # the sign of an infinity (that of a zero is not kept under numerics="fast": onnxruntime's Where)
    np.testing.assert_array_equal(np.signbit(got[np.isinf(want)]), np.signbit(want[np.isinf(want)]))
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


def test_negative_arguments_where_scipy_loses_accuracy():
    """SciPy sums Cephes ``zeta``'s terms ``(x+k)^-s`` directly for x < 0 and
    cancels (polygamma(30, -2.5) is 1e10 times too large, polygamma(4, -2.5)
    3.6e-13 off); the reflection formula gives mpmath's value."""
    got = _run("float64", 30, np.array([-2.5]))[0]
    assert got == pytest.approx(-3611857616302858.1011341583083, rel=1e-14)
    assert sp.polygamma(30, -2.5) == pytest.approx(-3.683576746952601e+25, rel=1e-12)
    # the IR's reference semantics (the interpreter) use the same reflection
    assert polygamma_reference(30, np.array([-2.5]))[0] == pytest.approx(-3611857616302858.1011341583083, rel=1e-13)
    assert _run("float64", 4, np.array([-2.5]))[0] == pytest.approx(-0.067995999506731363375428, rel=1e-14)


def test_the_shift_and_the_tail_follow_the_order():
    assert [shift_bound(n) for n in (2, 10, 50)] == [11, 19, 58]
    # c_1 = B_2/2! (s)_1 = s/12; c_2 = B_4/4! s(s+1)(s+2) = -s(s+1)(s+2)/720
    s = 4
    assert tail_coefficients(3)[:2] == pytest.approx((s / 12, -s * (s + 1) * (s + 2) / 720), rel=1e-15)
    # d/dx cot(pi x) = -pi (1 + cot^2): Q_1 = -1 - t^2; Q_2 = 2t + 2t^3
    assert list(cot_derivative(1)) == [-1.0, 0.0, -1.0] and list(cot_derivative(2)) == [0.0, 2.0, 0.0, 2.0]


def test_orders_0_and_1_stay_psi_and_trigamma_and_negative_orders_are_nan():
    x = pt.dvector("x")
    xs = np.array([0.5, 3.0, -1.5])
    m = compile_to_onnx([x], outputs=[pt.polygamma(0, x), pt.polygamma(1, x), pt.polygamma(-1, x)])
    assert not m.ir.contains_op("polygamma")
    got = m.run(xs)
    np.testing.assert_allclose(got[0], sp.psi(xs), rtol=1e-14)
    np.testing.assert_allclose(got[1], sp.polygamma(1, xs), rtol=1e-14)
    assert np.isnan(got[2]).all()


@pytest.mark.parametrize("compiled", [False, True], ids=["raw", "function"])
def test_second_and_third_derivatives_of_trigamma(compiled):
    """``pytensor.grad`` of ``tri_gamma`` builds ``polygamma(2, x)``, and its
    gradient ``polygamma(3, x)`` (the Hessian of a log-density with a
    ``gammaln`` or the Fisher information of a Gamma shape)."""
    x = pt.dvector("x")
    y = pt.sum(pt.gammaln(x) * 3.0)
    g1 = pytensor.grad(y, x)
    g2 = pytensor.grad(g1.sum(), x)
    g3 = pytensor.grad(g2.sum(), x)
    g4 = pytensor.grad(g3.sum(), x)
    xs = np.array([0.25, 1.0, 3.5, 40.0, -0.5, -2.25])
    want = pytensor.function([x], [g2, g3, g4], mode=REFERENCE_MODE)(xs)
    graph = pytensor.function([x], [g2, g3, g4]) if compiled else [x]
    m = compile_to_onnx(graph, outputs=None if compiled else [g2, g3, g4])
    for got, w, n in zip(m.run(xs), want, (1, 2, 3)):
        np.testing.assert_allclose(got, w, rtol=1e-13)
        np.testing.assert_allclose(got, 3.0 * sp.polygamma(n, xs), rtol=1e-13)


def test_unregularized_incomplete_gammas():
    """``gammau``/``gammal`` are PyTensor's ``gammaincc(k, x) * gamma(k)`` and
    ``gammainc(k, x) * gamma(k)`` (``GammaU.impl``/``GammaL.impl``), and so
    are the model's, with the bounds of their factors."""
    k, x = pt.dvector("k"), pt.dvector("x")
    kv = np.array([0.5, 2.0, 3.5, 30.0, 1e-3])
    xv = np.array([1.0, 0.5, 7.0, 25.0, 2.0])
    m = compile_to_onnx([k, x], outputs=[pt.gammau(k, x), pt.gammal(k, x)])
    upper, lower = m.run(kv, xv)
    np.testing.assert_allclose(upper, sp.gammaincc(kv, xv) * sp.gamma(kv), rtol=1e-13)
    np.testing.assert_allclose(lower, sp.gammainc(kv, xv) * sp.gamma(kv), rtol=1e-13)
