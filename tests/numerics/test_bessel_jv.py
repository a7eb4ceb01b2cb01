"""Accuracy of ``jv(v, x)`` of any real order (``backends/onnx/rules/bessel_jv_f64.py``)
in onnxruntime against mpmath, its special values against SciPy, and the
PyTensor graphs that read it (the gradients of ``j1`` and of ``jv``).

The mpmath references of 12,000 (v, x) pairs, v in [-200, 200] (integers,
half-integers, near-integers), x in (1e-300, 1e5), around x = |v| and
within 1e-14..1e-3 of zeros of J_v, are in ``data/jv_mpmath.npz``
(``make_jv_reference.py``). Asserted where the reference is a normal float:

* x <= |v| (no zeros; the series and Steed's method):
  ``|got - ref| <= 1e-13 |ref|`` (measured 9.2e-14, at orders above 170
  through the series, whose prefix ``exp(v log(x/2) - lgamma(v+1))`` carries
  the exponent's rounding; 1.4e-14 in Steed's region);
* x > |v|, where J_v oscillates under the envelope ``env = sqrt(2/(pi x))``
  and relative error means nothing near its zeros:
  ``|got - ref| <= 1e-13 |ref| + 3e-14 env`` (measured: 2.3e-14 env in
  Steed's region, whose CF1 runs ~x steps; 5e-16 env for the series and the
  large-x form; relative 1.1e-13 where |J| >= env / 10).

SciPy (AMOS) on the same points: 7.5e-12 env and 9.98e-14 relative for
x <= |v| in Steed's region; near zeros of J_v with x < 5 it is wrong in
every digit.
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special as sp

from compiler import compile_to_onnx
from tests.helpers import REFERENCE_MODE

DATA = np.load(pathlib.Path(__file__).with_name("data") / "jv_mpmath.npz")
TINY = np.finfo(np.float64).tiny


def _run(dtype, v, x):
    vv, xv = pt.vector("v", dtype=dtype), pt.vector("x", dtype=dtype)
    return compile_to_onnx([vv, xv], outputs=[pt.jv(vv, xv)]).run(v.astype(dtype), x.astype(dtype))[0]


def test_reference_covers_the_domain():
    v, x, near = DATA["v"], DATA["x"], DATA["near_zero"]
    assert len(v) == 12_000 and v.min() < -199 and v.max() > 199 and x.min() < 1e-290 and x.max() > 5e4
    assert (v == np.round(v)).sum() > 3000 and (np.abs(v - np.round(v)) == 0.5).sum() > 1500
    assert ((v != np.round(v)) & (np.abs(v - np.round(v)) < 1e-3)).sum() > 800
    assert (np.abs(x / np.maximum(np.abs(v), 1e-3) - 1) < 0.2).sum() > 2000
    ratio = np.abs(DATA["jv"][near]) / DATA["env"][near]
    assert near.sum() == 1800 and np.all(ratio < 0.1) and (ratio < 1e-6).sum() > 500


def test_float64_against_mpmath():
    v, x, ref, env = DATA["v"], DATA["x"], DATA["jv"], DATA["env"]
    got = _run("float64", v, x)
    normal = (np.abs(ref) >= TINY) & np.isfinite(ref)
    oscillating = np.abs(x) > np.abs(v)
    assert (normal & oscillating).sum() > 5000 and (normal & ~oscillating).sum() > 1500
    bound = 1e-13 * np.abs(ref) + np.where(oscillating, 3e-14 * env, 0.0)
    with np.errstate(invalid="ignore"):  # inf - inf where the reference overflows
        bad = normal & ~(np.abs(got - ref) <= bound)
    assert not bad.any(), list(zip(v[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))
    # below float64's range the value underflows to 0 (or a subnormal) and above it overflows to +-inf as the reference
    tiny = np.abs(ref) < TINY
    assert tiny.sum() > 1000 and np.all(np.abs(got[tiny]) <= 2 * TINY)
    big = np.isinf(ref)
    assert big.sum() > 500 and np.all(got[big] == ref[big])


def test_float32_within_4_ulp():
    """Where v, x are float32 numbers and the reference a normal float32: 4 float32 ulp (points
    within 1e-5 env of a zero, where the float64 bound itself is a few float32 ulp, left out)."""
    v, x, ref, env = DATA["v"], DATA["x"], DATA["jv"], DATA["env"]
    f32 = np.finfo(np.float32)
    keep = (x.astype(np.float32) == x) & (x >= f32.tiny) & (np.abs(ref) >= f32.tiny) & (np.abs(ref) <= f32.max)
    keep &= (np.abs(x) <= np.abs(v)) | (np.abs(ref) >= 1e-5 * env)
    got = _run("float32", v[keep], x[keep])
    assert got.dtype == np.float32 and keep.sum() > 5000
    ulp = np.spacing(np.abs(ref[keep].astype(np.float32))).astype(np.float64)
    bad = ~(np.abs(got.astype(np.float64) - ref[keep]) <= 4 * ulp)
    assert not bad.any(), list(zip(v[keep][bad][:5], x[keep][bad][:5], got[bad][:5], ref[keep][bad][:5]))


def test_special_values_as_scipy():
    """x = 0 (1 at v = 0, 0 for v > 0 and negative integers, +-inf as SciPy for negative
    non-integers), x < 0 (parity for integer v, NaN otherwise), NaN, an infinite order (0 for
    finite x >= 0, as SciPy); the limit 0 at x = +-inf (SciPy: NaN)."""
    v = np.array([0.0, 2.5, -3.0, -0.5, -1.5, 3.0, -3.0, 2.5, np.nan, 1.5, 4.0, -7.0, 4.5, np.inf, -2.0, 1e-10])
    x = np.array([0.0, 0.0, 0.0, 0.0, 0.0, -1.5, -30.0, -1.5, 1.0, np.nan, np.inf, -np.inf, np.inf, 1.0, 700.0, 1.0])
    got = _run("float64", v, x)
    want = sp.jv(v, x)
    want[[10, 11, 12]] = 0.0  # the limit
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


def test_float16_rounds_the_float64_value():
    v = np.array([0.5, -2.5, 7.0, 30.0], np.float16)
    x = np.array([1.0, 3.0, 8.0, 40.0], np.float16)
    want = sp.jv(v.astype(np.float64), x.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(_run("float16", v, x), want)


def test_constant_orders_0_and_1_keep_j0_and_j1():
    x = pt.dvector("x")
    xs = np.array([0.5, 3.0, -2.0, 40.0])
    m = compile_to_onnx([x], outputs=[pt.jv(0, x), pt.jv(-1, x), pt.jv(1, x)])
    assert not m.ir.contains_op("jv")
    j0, j1 = ([float(mp.besselj(n, t)) for t in xs] for n in (0, 1))
    for got, want in zip(m.run(xs), (j0, -np.array(j1), j1)):
        np.testing.assert_allclose(got, want, rtol=1e-14)
    m2 = compile_to_onnx([x], outputs=[pt.jv(2, x), pt.jv(-2.5, x)])
    assert m2.ir.contains_op("jv")
    for got, order in zip(m2.run(xs), (2, -2.5)):
        np.testing.assert_allclose(got, sp.jv(order, xs), rtol=1e-13, equal_nan=True)


@pytest.mark.parametrize("build", [lambda x: pt.j1(x), lambda x: pt.jv(2.5, x), lambda x: pt.jv(-3.3, x) * pt.jv(7, x)],
                         ids=["j1", "jv-2.5", "jv-product"])
def test_gradient_through_pytensors_graph(build):
    """``pytensor.grad`` of ``j1`` (which reads ``jv(2, x)``) and of ``jv`` w.r.t. x
    (``(jv(v-1, x) - jv(v+1, x)) / 2``) compiles and matches PyTensor to 1e-10."""
    x = pt.dvector("x")
    y = pt.sum(build(x) ** 2)
    g = pytensor.grad(y, x)
    xs = np.array([0.4, 2.0, 9.0, 55.0, 700.0])
    want = pytensor.function([x], [y, g], mode=REFERENCE_MODE)(xs)
    got = compile_to_onnx([x], outputs=[y, g]).run(xs)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10)
