"""Accuracy of ``polygamma(n, x)`` with the order n a run-time input
(``backends/onnx/rules/polygamma_order_f64.py``) in onnxruntime against
mpmath, its poles, limits and invalid orders against SciPy, and the
PyTensor graph ``pt.polygamma(n, x)`` with n an input (PyTensor 2.38's JAX
suite has that graph).

The mpmath references (40 digits) of 6,000 float32-representable points,
orders 0-30 and 40, 60, 100, 170, every point in one model, are stored in
``data/polygamma_order_mpmath.npz`` (``make_polygamma_order_reference.py``
regenerates them). Asserted where the reference is a normal float:

* float64, x > 0: ``|got - ref| <= 2e-15 |ref|`` (measured 6.6e-16);
* float64, x < 0 (the reflection): ``|got - ref| <= 4e-15 S``, S the larger
  term the formula subtracts (``tests/numerics/test_polygamma.py``;
  ``|psi(1-x)| + pi |cot(pi x)|`` at n = 0), for n <= 30, where S is finite
  (measured 8.7e-16 S), and ``<= 1e-14 |ref|`` at every order (measured
  1.9e-15: no point is near a zero of psi^(n));
* float32: within 1 float32 ulp of the float64 reference (measured 0.5).
"""

from __future__ import annotations

import math
import pathlib

import mpmath
import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special as sp

from backends.onnx.rules.polygamma_order_f64 import factorial_halves
from compiler import compile_to_onnx
from ir.ops.special import cot_derivative, polygamma_order_reference
from tests.helpers import REFERENCE_MODE

DATA = np.load(pathlib.Path(__file__).with_name("data") / "polygamma_order_mpmath.npz")
TINY = np.finfo(np.float64).tiny


def _model(dtype):
    n, x = pt.vector("n", dtype="int64"), pt.vector("x", dtype=dtype)
    return compile_to_onnx([n, x], outputs=[pt.polygamma(n, x)])


def _run(dtype, n, x):
    return _model(dtype).run(np.asarray(n, np.int64), np.asarray(x).astype(dtype))[0]


def _reflection_scale(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The larger term of the reflection formula at each (n, x), x < 0."""
    out = np.empty(x.shape)
    with np.errstate(all="ignore"):
        t = 1.0 / np.tan(np.pi * x)
        for order in np.unique(n):
            pick, o = n == order, int(order)
            if o == 0:
                out[pick] = np.abs(sp.psi(1 - x[pick])) + np.pi * np.abs(t[pick])
            else:
                q = np.polynomial.polynomial.polyval(t[pick], cot_derivative(o))
                out[pick] = math.factorial(o) * sp.zeta(o + 1, 1 - x[pick]) + np.pi ** (o + 1) * np.abs(q)
    return out


@pytest.fixture(scope="module")
def float64_values():
    return _run("float64", DATA["n"], DATA["x"])


def test_reference_covers_the_orders_and_the_domain():
    n, x = DATA["n"], DATA["x"]
    assert len(x) == 6000 and set(range(31)) | {40, 60, 100, 170} == set(np.unique(n).tolist())
    assert x.max() > 1e29 and x[x > 0].min() < 1e-29 and x.min() < -1e6
    assert ((x < 0) & (np.abs(x - np.round(x)) < 1e-5)).sum() > 200


def test_float64_against_mpmath(float64_values):
    n, x, ref, got = DATA["n"], DATA["x"], DATA["psi"], float64_values
    normal = (np.abs(ref) >= TINY) & np.isfinite(ref)
    with np.errstate(invalid="ignore"):
        err = np.where(normal, np.abs(got - ref), 0.0)
    pos, neg = normal & (x > 0), normal & (x < 0)
    bad = pos & ~(err <= 2e-15 * np.abs(ref))
    assert not bad.any(), list(zip(n[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))
    # the reflection: the contract's bound, relative to the larger term S (n <= 30, where S is finite) ...
    bad = neg & (n <= 30) & ~(err <= 4e-15 * _reflection_scale(n, x))
    assert not bad.any(), list(zip(n[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))
    # ... and what is measured, relative to the value at every order (no point of the set is within
    # 1e-3 S of a zero of psi^(n), where the bound above is the one that holds)
    bad = neg & ~(err <= 1e-14 * np.abs(ref))
    assert not bad.any(), list(zip(n[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))
    big = np.abs(ref) > np.finfo(np.float64).max  # overflows to the reference's signed infinity
    assert np.array_equal(got[big], np.sign(ref[big]) * np.inf)
    assert pos.sum() > 1800 and neg.sum() > 3000 and big.sum() > 300


def test_float32_within_1_ulp():
    n, x, ref = DATA["n"], DATA["x"], DATA["psi"]
    got = _run("float32", n, x)
    assert got.dtype == np.float32
    f32 = np.finfo(np.float32)
    normal = (np.abs(ref) >= f32.tiny) & (np.abs(ref) <= f32.max)
    with np.errstate(over="ignore"):
        ulp = np.spacing(np.abs(ref.astype(np.float32))).astype(np.float64)
    with np.errstate(invalid="ignore"):
        bad = normal & ~(np.abs(got.astype(np.float64) - ref) <= ulp)
    assert not bad.any(), list(zip(n[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))
    assert normal.sum() > 3000


def test_agrees_with_the_constant_orders(float64_values):
    """The run-time order gives the constant-order functions' values
    (``polygamma_f64.py``, ``psi``, ``trigamma``) to a few ulp."""
    n, x = DATA["n"], DATA["x"]
    for order in (0, 1, 2, 7, 16):
        pick = (n == order) & (x > -60)
        v = pt.dvector("x")
        want = compile_to_onnx([v], outputs=[pt.polygamma(order, v)]).run(x[pick])[0]
        finite = np.isfinite(want) & (np.abs(want) > 1e-290)
        np.testing.assert_allclose(float64_values[pick][finite], want[finite], rtol=1e-14 if order else 1e-15,
                                   atol=1e-300)


@pytest.mark.parametrize("order", [0, 1, 2, 3, 30, 170])
def test_poles_and_limits_as_scipy(order):
    x = np.array([0.0, -0.0, -1.0, -7.0, -1e20, np.inf, -np.inf, np.nan, 1e-300, 5e-324, 1e300, 2.5, 40.0])
    got = _run("float64", np.full(x.shape, order), x)
    want = sp.polygamma(order, x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.signbit(got[np.isinf(want)]), np.signbit(want[np.isinf(want)]))
    fine = np.isfinite(want) & ((order < 170) | (x > 10))  # SciPy's polygamma(170, 2.5) is 2e-9 off
    np.testing.assert_allclose(got[fine], want[fine], rtol=1e-13, atol=0)


def test_invalid_and_overflowing_orders():
    """NaN for negative orders (SciPy's values); beyond 170, n! overflows
    float64 and the result is SciPy's: (-1)^(n+1) inf times the sign of
    zeta(n+1, x), NaN where zeta underflows to 0."""
    n, x = pt.lvector("n"), pt.dvector("x")
    m = compile_to_onnx([n, x], outputs=[pt.polygamma(n, x)])
    xs = np.array([1.0, 0.5, 1.5, 76.0, 78.0, np.inf, -2.3, -0.7, -100.2, -3.0, 0.0, 1e-300, np.nan, 30.0])
    ns = np.array([-1, -3, 172, 172, 172, 172, 172, 172, 172, 172, 172, 201, 180, 200])
    with np.errstate(all="ignore"):
        want = sp.polygamma(ns, xs)
    np.testing.assert_array_equal(m.run(ns, xs)[0], want)
    hi, lo = factorial_halves()
    assert hi[170] * lo[170] == pytest.approx(math.factorial(170), rel=3e-16) and np.isinf(hi[171])


def test_float_orders_of_the_ir_op():
    """The IR op takes the order in x's float dtype (PyTensor requires an
    integer order; the lowering casts it): its reference semantics are NaN
    where the order is not an integer, NaN or infinite, as SciPy
    (``tests/backends/test_emit_ops.py`` runs the model on such orders)."""
    ns = np.array([2.5, np.nan, np.inf, -np.inf, 2.0, 0.0])
    xs = np.ones(6)
    with np.errstate(all="ignore"):
        want = sp.polygamma(ns, xs)
    np.testing.assert_array_equal(polygamma_order_reference(ns, xs), want)


@pytest.mark.parametrize("compiled", [False, True], ids=["raw", "function"])
def test_pytensor_graph_with_an_order_input(compiled):
    """``pt.polygamma(n, x)`` with n an int32 input broadcast against a
    float32/float64 matrix (PyTensor 2.38's JAX suite builds this graph),
    against PyTensor's own evaluation and SciPy."""
    for dtype, rtol in (("float64", 1e-13), ("float32", 3e-6)):
        n, x = pt.vector("n", dtype="int32"), pt.row("x", dtype=dtype)
        out = pt.polygamma(n[:, None], x)
        ns = np.array([0, 1, 2, 5, 12], dtype=np.int32)
        xs = np.array([[0.5, 3.0, -1.5, 20.0, -0.25, 1e-3]], dtype=dtype)
        want = pytensor.function([n, x], out, mode=REFERENCE_MODE)(ns, xs)
        graph = pytensor.function([n, x], out) if compiled else [n, x]
        m = compile_to_onnx(graph, outputs=None if compiled else [out])
        assert m.ir.contains_op("polygamma_order")
        got = m.run(ns, xs)[0]
        assert got.dtype == want.dtype and got.shape == (5, 6)
        # SciPy's (and so PyTensor's) direct sum cancels at x < 0 (psi^(12)(-1.5) is 7e-8 off): mpmath's
        # values there (the reflection of polygamma_order_reference)
        pos = np.broadcast_to(xs > 0, want.shape)
        np.testing.assert_allclose(got[pos], want[pos], rtol=rtol)
        with np.errstate(over="ignore"):  # psi^(12)(1e-3) is inf in float32
            np.testing.assert_allclose(got, polygamma_order_reference(ns[:, None], xs).astype(dtype), rtol=rtol)
        with mpmath.workdps(30):
            assert got[4, 2] == pytest.approx(float(mpmath.psi(12, float(xs[0, 2]))), rel=rtol)
