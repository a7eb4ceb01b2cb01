"""Accuracy of ``ive(v, x)``/``iv(v, x)`` of any real order
(``backends/onnx/rules/bessel_ik_f64.py``) in onnxruntime against mpmath,
their special values against SciPy, and the PyTensor graphs that build
them (``pt.ive`` of a run-time order, the closed forms kept for constant
orders 0, 1, 2, gradients).

The mpmath references of 10,000 (v, x) pairs, v in [-50, 200] (integers,
half-integers, near-integers), x in (1e-300, 1e4) and around x = v, are in
``data/bessel_mpmath.npz`` (``make_bessel_reference.py``). Asserted where
the reference is a normal float: ``|got - ref| <= 1e-13 |ref|`` (measured
5.7e-14, at orders above 170 through the small-x series, whose prefix
``exp(v log(x/2) - lgamma(v+1))`` carries the exponent's rounding; 2e-15
elsewhere); float32 within 4 ulp.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special as sp

from compiler import compile_to_onnx
from compiler.lowering.compat import Iv
from tests.helpers import REFERENCE_MODE

DATA = np.load(pathlib.Path(__file__).with_name("data") / "bessel_mpmath.npz")
TINY = np.finfo(np.float64).tiny


def _run(dtype, v, x):
    vv, xv = pt.vector("v", dtype=dtype), pt.vector("x", dtype=dtype)
    return compile_to_onnx([vv, xv], outputs=[pt.math.ive(vv, xv)]).run(v.astype(dtype), x.astype(dtype))[0]


def test_reference_covers_the_domain():
    v, x = DATA["iv_v"], DATA["iv_x"]
    assert len(v) == 10_000 and v.min() < -49 and v.max() > 199 and x.min() < 1e-290 and x.max() > 5e3
    assert (v == np.round(v)).sum() > 3000 and (np.abs(v - np.round(v)) == 0.5).sum() > 1500
    near = (v != np.round(v)) & (np.abs(v - np.round(v)) < 1e-3)
    assert near.sum() > 500  # float32 orders above ~10 round the smallest offsets to the integer
    assert (np.abs(x / np.maximum(np.abs(v), 1e-3) - 1) < 0.2).sum() > 3000


def test_float64_against_mpmath():
    v, x, ref = DATA["iv_v"], DATA["iv_x"], DATA["ive"]
    got = _run("float64", v, x)
    normal = (np.abs(ref) >= TINY) & np.isfinite(ref)
    assert normal.sum() > 5000
    bad = normal & ~(np.abs(got - ref) <= 1e-13 * np.abs(ref))
    assert not bad.any(), list(zip(v[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))
    # overflow beyond float64's range (negative non-integer orders at tiny x) is +-inf with the reference's sign
    big = np.isinf(ref)
    assert np.all(got[big] == ref[big])


def _check_float32_within_4_ulp(run, ref):
    """``run("float32", v, x)`` within 4 float32 ulp of the float64 ``ref`` wherever x and ``ref`` are
    normal float32 numbers (over 3,000 of the stored points)."""
    v, x = DATA["iv_v"], DATA["iv_x"]
    f32 = np.finfo(np.float32)
    keep = (x >= f32.tiny) & (np.abs(ref) >= f32.tiny) & (np.abs(ref) <= f32.max)
    got = run("float32", v[keep], x[keep])
    assert got.dtype == np.float32 and keep.sum() > 3000
    ulp = np.spacing(np.abs(ref[keep].astype(np.float32))).astype(np.float64)
    bad = ~(np.abs(got.astype(np.float64) - ref[keep]) <= 4 * ulp)
    assert not bad.any(), list(zip(v[keep][bad][:5], x[keep][bad][:5], got[bad][:5], ref[keep][bad][:5]))


def test_float32_within_4_ulp():
    _check_float32_within_4_ulp(_run, DATA["ive"])


def test_special_values_as_scipy():
    """x = 0 (1 at v = 0, 0 for v > 0 and negative integers, NaN for negative
    non-integers), x < 0 (parity for integer v, NaN otherwise), NaN; the
    limit 0 at x = +-inf (SciPy: NaN for some orders)."""
    v = np.array([0.0, 2.5, -3.0, -0.5, 3.0, 2.0, 2.5, -2.5, np.nan, 1.5, 4.0, 4.5, 1e-10, -7.0])
    x = np.array([0.0, 0.0, 0.0, 0.0, -1.5, -1.5, -1.5, 2.0, 1.0, np.nan, np.inf, -np.inf, 1.0, -2.0])
    got = _run("float64", v, x)
    want = sp.ive(v, x)
    want[10] = 0.0  # the limit
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


def test_constant_orders_keep_their_closed_forms_and_others_use_the_general_op():
    x = pt.dvector("x")
    xs = np.array([0.5, 3.0, -2.0, 40.0])
    m = compile_to_onnx([x], outputs=[pt.math.ive(0, x), pt.math.ive(-1, x), pt.math.ive(2, x)])
    assert not m.ir.contains_op("ive")
    m2 = compile_to_onnx([x], outputs=[pt.math.ive(2.5, x), pt.math.ive(7, x)])
    assert m2.ir.contains_op("ive")
    for got, order in zip(m2.run(xs), (2.5, 7)):
        np.testing.assert_allclose(got, sp.ive(order, xs), rtol=1e-13, equal_nan=True)


def test_iv_through_ive_and_exp():
    """``pt.iv`` of a run-time order (PyTensor 2.38: the Iv op; 3.0: ive times exp)."""
    v, x = pt.dvector("v"), pt.dvector("x")
    vs = np.array([0.3, 7.0, -2.5, 3.0, 150.0])
    xs = np.array([2.0, 30.0, 4.0, -5.0, 600.0])
    m = compile_to_onnx([v, x], outputs=[pt.iv(v, x)])
    assert m.ir.contains_op("iv") == (Iv is not None)
    np.testing.assert_allclose(m.run(vs, xs)[0], sp.iv(vs, xs), rtol=1e-13)


@pytest.mark.parametrize("order", [0.0, 2.5, 7.0])
def test_gradient_through_pytensors_graph(order):
    """``pytensor.grad`` of ``ive(v, x)`` (the VonMises/Rice form: orders v - 1,
    v + 1 of a constant order v) compiles and matches PyTensor."""
    x = pt.dvector("x")
    y = pt.sum(pt.log(pt.math.ive(order, x)))
    g = pytensor.grad(y, x)
    xs = np.array([0.4, 2.0, 9.0, 55.0])
    want = pytensor.function([x], [y, g], mode=REFERENCE_MODE)(xs)
    got = compile_to_onnx([x], outputs=[y, g]).run(xs)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10)


# -- kve(v, x) = K_v(x) e^x: the K half of the same machinery
def _run_kve(dtype, v, x):
    vv, xv = pt.vector("v", dtype=dtype), pt.vector("x", dtype=dtype)
    return compile_to_onnx([vv, xv], outputs=[pt.kve(vv, xv)]).run(v.astype(dtype), x.astype(dtype))[0]


def test_kve_float64_against_mpmath():
    """1e-13 rel where the reference is a normal float (measured 5.5e-14);
    overflow (large orders at small x) is +inf as the reference."""
    v, x, ref = DATA["iv_v"], DATA["iv_x"], DATA["kve"]
    got = _run_kve("float64", v, x)
    normal = (np.abs(ref) >= TINY) & np.isfinite(ref)
    assert normal.sum() > 5000
    bad = normal & ~(np.abs(got - ref) <= 1e-13 * np.abs(ref))
    assert not bad.any(), list(zip(v[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))
    assert np.all(got[np.isinf(ref)] == np.inf) and np.isinf(ref).sum() > 1000


def test_kve_float32_within_4_ulp():
    _check_float32_within_4_ulp(_run_kve, DATA["kve"])


def test_kve_special_values_and_kv():
    """+inf at x = 0, NaN for x < 0 and NaN, the limit 0 at x = +inf (SciPy: NaN);
    ``pt.kv`` (kve times exp(-x)) matches SciPy."""
    v = np.array([0.5, 2.0, -3.5, 1.0, 0.3, 1.0, 7.3])
    x = np.array([0.0, -1.0, 2.0, np.inf, 1e-300, np.nan, 30.0])
    got = _run_kve("float64", v, x)
    want = sp.kve(v, x)
    want[3] = 0.0
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-13)
    vv, xv = pt.dvector("v"), pt.dvector("x")
    kv = compile_to_onnx([vv, xv], outputs=[pt.kv(vv, xv)]).run(v[[2, 4, 6]], x[[2, 4, 6]])[0]
    np.testing.assert_allclose(kv, sp.kv(v[[2, 4, 6]], x[[2, 4, 6]]), rtol=1e-13)


def test_kve_gradient_through_pytensors_graph():
    x = pt.dvector("x")
    y = pt.sum(pt.log(pt.kve(2.3, x)))
    g = pytensor.grad(y, x)
    xs = np.array([0.4, 2.0, 9.0, 55.0])
    want = pytensor.function([x], [y, g], mode=REFERENCE_MODE)(xs)
    for a, b in zip(compile_to_onnx([x], outputs=[y, g]).run(xs), want):
        np.testing.assert_allclose(a, b, rtol=1e-10)
