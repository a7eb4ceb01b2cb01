"""``jv(v, x)`` in the turning band ``|x - nu| < 20 nu^(1/3)``, nu = |v| >= 1000
(``backends/onnx/rules/bessel_jv_f64.py``: the uniform Airy-type expansion DLMF 10.20.4,
``airy_band``, with Cephes' Airy functions ``airy_f64``; before it, Steed's method ran
there and was NaN past nu ~ 2e4) against mpmath.

The references (``data/jv_airy_mpmath.npz``, ``make_jv_airy_reference.py``): 284
points, |v| in [1e3, 3e4] and 6 in [4e4, 8.8e4], of both signs, x = |v| + u 20 |v|^(1/3),
u uniform over (-1, 1). Bound,
where the reference is a normal float: ``1e-13 (|ref| + nu^(-1/3))`` (|J| is at most
~0.7 nu^(-1/3) in the band; the absolute part covers the zeros above x = nu; the error is
the Airy argument's, ~25 * few eps, carried through Ai's phase ``(2/3)|X|^(3/2)``;
measured 4.9e-14, 8.4e-14 relative below the turning point).

Past the references' orders, the three-term recurrence
``J_(nu-1) + J_(nu+1) = (2 nu / x) J_nu`` (DLMF 10.6.1) at orders 2e4..1e8.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pytensor.tensor as pt

from compiler import compile_to_onnx

DATA = np.load(pathlib.Path(__file__).with_name("data") / "jv_airy_mpmath.npz")
TINY = np.finfo(np.float64).tiny


def _run(dtype, v, x):
    vv, xv = pt.vector("v", dtype=dtype), pt.vector("x", dtype=dtype)
    return compile_to_onnx([vv, xv], outputs=[pt.jv(vv, xv)]).run(v.astype(dtype), x.astype(dtype))[0]


def _bound(v, ref):
    return 1e-13 * (np.abs(ref) + np.abs(v) ** (-1 / 3))


def test_reference_covers_the_band():
    v, x = DATA["v"], DATA["x"]
    nu = np.abs(v)
    assert len(v) > 250 and nu.min() < 1.1e3 and (nu > 2e4).sum() > 20 and (nu > 4e4).sum() >= 5
    assert (v < 0).sum() > 60 and (v != np.round(v)).sum() > 100 and ((v < 0) & (v != np.round(v))).sum() > 30
    assert np.all(np.abs(x - nu) < 20 * nu ** (1 / 3))
    assert (x < nu).sum() > 80 and (x > nu).sum() > 80


def test_float64_against_mpmath():
    v, x, ref = DATA["v"], DATA["x"], DATA["jv"]
    got = _run("float64", v, x)
    normal = (np.abs(ref) >= TINY) & np.isfinite(ref)
    assert normal.sum() > 200 and not np.isnan(got).any()
    bad = normal & ~(np.abs(got - ref) <= _bound(v, ref))
    assert not bad.any(), list(zip(v[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))


def test_float32_within_4_ulp():
    """At the stored points rounded to float32, against the float64 model at the same points
    (points within 1e-5 nu^(-1/3) of a zero left out)."""
    v = DATA["v"].astype(np.float32).astype(np.float64)
    x = DATA["x"].astype(np.float32).astype(np.float64)
    want = _run("float64", v, x)
    got = _run("float32", v, x)
    f32 = np.finfo(np.float32)
    keep = (np.abs(want) >= f32.tiny) & (np.abs(want) <= f32.max) & (np.abs(want) >= 1e-5 * np.abs(v) ** (-1 / 3))
    assert got.dtype == np.float32 and keep.sum() > 150
    ulp = np.spacing(np.abs(want[keep].astype(np.float32))).astype(np.float64)
    assert np.all(np.abs(got[keep].astype(np.float64) - want[keep]) <= 4 * ulp)


def test_issue_points():
    """jv(3e4, 3e4) was NaN (Steed's recurrence ran out of steps); SciPy/mpmath 0.014395682049566351."""
    got = _run("float64", np.array([3e4, 1e8, -1e8 - 0.5]), np.array([3e4, 1e8, 1e8]))
    assert abs(got[0] - 0.014395682049566351) <= 1e-15
    assert np.all(np.isfinite(got))


def test_recurrence_at_huge_orders():
    """J_(nu-1) + J_(nu+1) = (2 nu / x) J_nu at orders 2e4..1e8 (a third negative
    non-integers), x = nu + u 20 nu^(1/3), u uniform over (-1, 1): finite everywhere,
    within the bound above summed over the three values."""
    rng = np.random.default_rng(2)
    m = 600
    nu = np.exp(rng.uniform(np.log(2e4), np.log(1e8), m))
    nu[: m // 3] = -(np.round(nu[: m // 3]) + rng.uniform(0.1, 0.9, m // 3))
    a = np.abs(nu)
    x = a + rng.uniform(-1, 1, m) * 20 * a ** (1 / 3)
    v = np.concatenate([nu - 1, nu, nu + 1])
    got = _run("float64", v, np.tile(x, 3))
    lo, mid, hi = got[:m], got[m:2 * m], got[2 * m:]
    assert np.all(np.isfinite(got))
    scale = 2 * nu / x
    bound = _bound(nu - 1, lo) + _bound(nu + 1, hi) + np.abs(scale) * _bound(nu, mid)
    bad = ~(np.abs(lo + hi - scale * mid) <= bound)
    assert not bad.any(), list(zip(nu[bad][:5], x[bad][:5], (lo + hi)[bad][:5], (scale * mid)[bad][:5]))


def test_airy_functions_against_scipy(monkeypatch):
    """``airy_f64.airy_ai`` / ``airy_bi`` (internal helpers, no op of their own: run here in
    place of jv's body) against ``scipy.special.airy`` on x in [-30, 30] (the band reaches
    |x| ~ 27): 1e-13 of ``max(|f|, M)``, M the modulus ``|x|^(-+1/4) / sqrt(pi)`` of the
    oscillatory side (x < 0), i.e. relative where the function is not near a zero."""
    import scipy.special as sp

    from backends.onnx.rules import special
    from backends.onnx.rules.airy_f64 import airy_ai, airy_bi

    x = np.concatenate([np.linspace(-30, 30, 3001), [-2.09, 2.09, 8.3203353, 8.3203354]])
    want = sp.airy(x)
    for i in range(4):
        monkeypatch.setitem(special.FORMULAS, "jv", lambda c, v, xx, i=i: (airy_ai(c, xx) + airy_bi(c, xx))[i])
        got = _run("float64", np.zeros_like(x), x)
        power = 0.25 if i % 2 else -0.25
        modulus = np.where(x < 0, np.abs(np.minimum(x, -1.0)) ** power / np.sqrt(np.pi), 0.0)
        scale = np.maximum(np.abs(want[i]), modulus)
        assert np.all(np.abs(got - want[i]) <= 1e-13 * scale), i
