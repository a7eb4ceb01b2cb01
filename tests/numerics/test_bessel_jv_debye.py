"""``jv(v, x)`` at large orders and large x (``backends/onnx/rules/bessel_jv_f64.py``:
Debye's expansions DLMF 10.19.3-4 and 10.19.6 away from the turning point x = |v|,
the uniform Airy-type expansion near it, test_bessel_jv_airy.py) against mpmath.

The references (``data/jv_debye_mpmath.npz``, ``make_jv_debye_reference.py``): 1,133
points, |v| in [1e3, 1.2e4] of both signs with x = |v| exp(N(0, 0.4)) (the turning
region |x - |v|| < 20 |v|^(1/3) included) and |v| in [300, 1e3] with x in [3e4, 100 |v|]
(where CF1 ran out of steps before). Bounds, where the reference is a normal float, with
nu = |v|, ``alpha = acosh(nu / x)`` and ``env = sqrt(2 / (pi x))``:

* x < nu: ``(1e-13 + 2 eps nu alpha) |ref|`` (nu alpha is the largest piece of the
  exponent ``nu (tanh(alpha) - alpha)`` formed in double precision; measured 0.32 of
  4 eps nu alpha, at most 1.1e-12 relative where the value is ~1e-286);
* x > nu: ``1e-13 |ref| + 2 eps nu env`` (the phase's pieces are ~nu; measured 1.8e-12
  env at nu ~ 4,500, 0.32 of 4 eps nu env, relative 1e-13 away from zeros).

Past the references' orders, the three-term recurrence
``J_(nu-1) + J_(nu+1) = (2 nu / x) J_nu`` (DLMF 10.6.1) at orders 2e4..1e8.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytensor.tensor as pt

from compiler import compile_to_onnx

DATA = np.load(pathlib.Path(__file__).with_name("data") / "jv_debye_mpmath.npz")
EPS = np.finfo(np.float64).eps
TINY = np.finfo(np.float64).tiny


def _run(dtype, v, x):
    vv, xv = pt.vector("v", dtype=dtype), pt.vector("x", dtype=dtype)
    return compile_to_onnx([vv, xv], outputs=[pt.jv(vv, xv)]).run(v.astype(dtype), x.astype(dtype))[0]


def _bound(v, x, ref):
    nu = np.abs(v)
    alpha = np.arccosh(np.maximum(nu / x, 1.0))
    env = np.sqrt(2 / (np.pi * x))
    return np.where(x < nu, (1e-13 + 2 * EPS * nu * alpha) * np.abs(ref), 1e-13 * np.abs(ref) + 2 * EPS * nu * env)


def test_reference_covers_large_orders():
    v, x = DATA["v"], DATA["x"]
    nu = np.abs(v)
    assert len(v) > 1000 and nu.max() > 1e4 and (v < 0).sum() > 300 and (v != np.round(v)).sum() > 500
    turning = np.abs(x - nu) < 20 * nu ** (1 / 3)
    assert turning.sum() > 100 and ((x < nu) & ~turning).sum() > 200 and ((x > nu) & ~turning).sum() > 500
    assert (x > 3e4).sum() > 200


def test_float64_against_mpmath():
    v, x, ref = DATA["v"], DATA["x"], DATA["jv"]
    got = _run("float64", v, x)
    normal = (np.abs(ref) >= TINY) & np.isfinite(ref)
    with np.errstate(invalid="ignore"):  # inf - inf where the reference overflows
        bad = normal & ~(np.abs(got - ref) <= _bound(v, x, ref))
    assert normal.sum() > 900
    assert not bad.any(), list(zip(v[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))
    # beyond float64's range: 0 (underflow) or +-inf (overflow) as the reference, never NaN
    assert not np.isnan(got).any()
    assert np.isinf(ref).sum() > 10 and np.all(got[np.isinf(ref)] == ref[np.isinf(ref)])
    assert (ref == 0).sum() > 50 and np.all(np.abs(got[ref == 0]) <= 2 * TINY)


def test_float32_within_4_ulp():
    """At the stored points rounded to float32, against the float64 model at the same points
    (held above to far below a float32 ulp; points within 1e-5 env of a zero left out)."""
    v = DATA["v"].astype(np.float32).astype(np.float64)
    x = DATA["x"].astype(np.float32).astype(np.float64)
    want = _run("float64", v, x)
    got = _run("float32", v, x)
    f32 = np.finfo(np.float32)
    keep = (np.abs(want) >= f32.tiny) & (np.abs(want) <= f32.max)
    keep &= (x < np.abs(v)) | (np.abs(want) >= 1e-5 * np.sqrt(2 / (np.pi * x)))
    assert got.dtype == np.float32 and keep.sum() > 700
    ulp = np.spacing(np.abs(want[keep].astype(np.float32))).astype(np.float64)
    assert np.all(np.abs(got[keep].astype(np.float64) - want[keep]) <= 4 * ulp)


def test_recurrence_at_huge_orders():
    """J_(nu-1) + J_(nu+1) = (2 nu / x) J_nu at orders 2e4..1e8 (some negative non-integers),
    x = nu (1 +- r) with |x - nu| from 25 nu^(1/3) to nu / 2: finite everywhere, within the
    bounds above (summed over the three values); never NaN, +-inf only where a negative
    order's Y_nu term overflows."""
    rng = np.random.default_rng(1)
    m = 600
    nu = np.exp(rng.uniform(np.log(2e4), np.log(1e8), m))
    nu[: m // 3] = -(np.round(nu[: m // 3]) + rng.uniform(0.1, 0.9, m // 3))
    a = np.abs(nu)
    d = np.exp(rng.uniform(np.log(25 * a ** (1 / 3)), np.log(a / 2)))
    x = a + rng.choice([-1.0, 1.0], m) * d
    v = np.concatenate([nu - 1, nu, nu + 1])
    got = _run("float64", v, np.tile(x, 3))
    lo, mid, hi = got[:m], got[m:2 * m], got[2 * m:]
    assert not np.isnan(got).any()
    assert np.all(np.isfinite(got[np.tile(nu > 0, 3)]))  # negative orders below x = nu overflow as Y_nu does
    scale = 2 * nu / x
    lhs, rhs = lo + hi, scale * mid
    size = np.abs(np.stack([lo, mid, hi]))
    keep = (size.min(axis=0) >= 1e-280) & (size.max(axis=0) <= 1e280)
    assert keep.sum() > 300 and (x[keep] < a[keep]).sum() > 50
    bound = _bound(nu - 1, x, lo) + _bound(nu + 1, x, hi) + np.abs(scale) * _bound(nu, x, mid)
    bad = keep & ~(np.abs(lhs - rhs) <= bound)
    assert not bad.any(), list(zip(nu[bad][:5], x[bad][:5], lhs[bad][:5], rhs[bad][:5]))
