"""``ive``/``kve`` at large orders (``backends/onnx/rules/bessel_debye_f64.py``,
Debye's uniform expansions) against mpmath, and the expansions' own pieces.

The references (``data/bessel_debye_mpmath.npz``, ``make_bessel_debye_reference.py``):
mpmath's ``besseli``/``besselk`` at orders |v| in [50, 3000] of both signs, x around
the transition x = |v| and up to 2e4; and, at |v| in [1e3, 1e5] with x up to |v|^2/10,
where the series, continued fractions and recurrences of ``bessel_ik_f64`` ran out of
steps (NaN past nu = 2,000 or x ~ 4e4 before) and mpmath's functions take minutes a
point, the same expansions evaluated in mpmath to 40 digits with 30 terms.
Bound, where the reference is a normal float: ``(1e-13 + 4 |E| eps) |ref|``
with ``E = log(value)`` the exponent the expansion forms in double precision
(so at most ~7e-13 at the float64 range's ends; 1e-13 where |E| < 100).
"""

from __future__ import annotations

import math
import pathlib
from fractions import Fraction

import numpy as np
import pytensor.tensor as pt
import pytest

from backends.onnx.rules.bessel_debye_f64 import debye_polynomials
from compiler import compile_to_onnx

DATA = np.load(pathlib.Path(__file__).with_name("data") / "bessel_debye_mpmath.npz")
EPS = np.finfo(np.float64).eps
TINY = np.finfo(np.float64).tiny


def _run(dtype, v, x):
    vv, xv = pt.vector("v", dtype=dtype), pt.vector("x", dtype=dtype)
    model = compile_to_onnx([vv, xv], outputs=[pt.math.ive(vv, xv), pt.kve(vv, xv)])
    return model.run(v.astype(dtype), x.astype(dtype))


def _check(got, ref):
    normal = (np.abs(ref) >= TINY) & np.isfinite(ref)
    bound = (1e-13 + 4 * EPS * np.abs(np.log(np.where(normal, np.abs(ref), 1.0)))) * np.abs(ref)
    bad = normal & ~(np.abs(got - ref) <= bound)
    return normal, bad


def test_reference_covers_large_orders():
    v, x = DATA["v"], DATA["x"]
    assert len(v) > 1500 and np.abs(v).max() > 2500 and (v < 0).sum() > 400
    assert (np.abs(x / np.abs(v) - 1) < 0.2).sum() > 250
    assert np.abs(DATA["big_v"]).max() > 5e4 and DATA["big_x"].max() > 1e8


@pytest.mark.parametrize("which", ["ive", "kve", "big_ive", "big_kve"])
def test_float64_against_mpmath(which):
    prefix = "big_" if which.startswith("big_") else ""
    v, x, ref = DATA[prefix + "v"], DATA[prefix + "x"], DATA[which]
    ive, kve = _run("float64", v, x)
    got = ive if which.endswith("ive") else kve
    normal, bad = _check(got, ref)
    assert normal.sum() > 1000
    assert not bad.any(), list(zip(v[bad][:5], x[bad][:5], got[bad][:5], ref[bad][:5]))
    # beyond float64's range: 0 (underflow) or +-inf (overflow) as the reference, never NaN
    assert not np.isnan(got).any()
    assert np.all(got[np.isinf(ref)] == ref[np.isinf(ref)])
    assert np.all(np.abs(got[ref == 0]) < 1e-300)


def test_float32_within_4_ulp():
    """At the stored points rounded to float32, against the float64 model at the same
    points (which the test above holds to <= 3e-13 of mpmath, far below a float32 ulp)."""
    v = np.concatenate([DATA["v"], DATA["big_v"]]).astype(np.float32)
    x = np.concatenate([DATA["x"], DATA["big_x"]]).astype(np.float32)
    f32 = np.finfo(np.float32)
    wants = _run("float64", v.astype(np.float64), x.astype(np.float64))
    for got, ref in zip(_run("float32", v, x), wants):
        keep = (np.abs(ref) >= f32.tiny) & (np.abs(ref) <= f32.max)
        assert got.dtype == np.float32 and keep.sum() > 1000
        ulp = np.spacing(np.abs(ref[keep].astype(np.float32))).astype(np.float64)
        assert np.all(np.abs(got[keep].astype(np.float64) - ref[keep]) <= 4 * ulp)


def test_debye_polynomials_are_dlmf_10_41_10():
    u = debye_polynomials(4)
    assert u[1] == [0, Fraction(1, 8), 0, Fraction(-5, 24)]
    assert u[2] == [0, 0, Fraction(9, 128), 0, Fraction(-77, 192), 0, Fraction(385, 1152)]
    assert u[3] == [0, 0, 0, Fraction(75, 1024), 0, Fraction(-4563, 5120), 0, Fraction(17017, 9216), 0,
                    Fraction(-85085, 82944)]


def test_the_wronskian_holds_at_huge_orders():
    """I_nu K_(nu+1) + I_(nu+1) K_nu = 1/x (DLMF 10.28.2) where no reference is cheap:
    orders to 1e7, x from nu/100 to 100 nu but at least nu^2/1000, where the scaled
    exponent is above ~-600, so no factor underflows."""
    rng = np.random.default_rng(0)
    nu = np.exp(rng.uniform(math.log(1e3), math.log(1e7), 2000))
    x = np.maximum(nu * np.exp(rng.uniform(math.log(0.01), math.log(100), 2000)), nu**2 / 1000)
    v = np.concatenate([nu, nu + 1])
    xx = np.concatenate([x, x])
    ive, kve = _run("float64", v, xx)
    i0, i1, k0, k1 = ive[:2000], ive[2000:], kve[:2000], kve[2000:]
    # ive * kve = I K: each product's exponents cancel
    lhs = i0 * k1 + i1 * k0
    assert np.all(np.isfinite(lhs)) and np.all(i0 > 0)
    np.testing.assert_allclose(lhs * x, 1.0, rtol=1e-12)
