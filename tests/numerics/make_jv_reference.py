"""Generate ``data/jv_mpmath.npz``: mpmath references of ``jv(v, x)``
(Bessel function of the first kind of real order, rounded to float64) that
``tests/numerics/test_bessel_jv.py`` reads. Run from the worktree root
(about a minute)::

    python tests/numerics/make_jv_reference.py

``v``, ``x`` (12,000 pairs): orders in [-200, 200], a third integers, a
sixth half-integers, a sixth within 1e-9..1e-3 of an integer, the rest
uniform; x log-uniform over (1e-300, 1e5) for 40% of them, x = |v| (1 +
N(0, 0.2)) (the transition, where the series, the Steed/CF1 region and the
turning point x = v meet) for 30%, x log-uniform over (100, 1e5) with
|v| < 50 (the large-x asymptotic and its switch) for 15%, and 15% within
1e-14..1e-3 relative of a zero of J_v (bracketed on SciPy's values, refined
by ``brentq``), where only the absolute error means something. All but the
near-zero points are float32 numbers, so the float32 test feeds them as they
are. ``env = sqrt(2 / (pi x))``, the envelope of |J_v| for x > |v|.

mpmath's ``besselj`` at 30 digits is checked against SciPy: where the two
differ by over 1e-12 relative, the value is recomputed at 80 digits
(``checked``); the count is printed.
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np
import scipy.optimize as so
import scipy.special as sp

mp.mp.dps = 30
OUT = pathlib.Path(__file__).with_name("data") / "jv_mpmath.npz"
M = 12_000


def orders(rng, m: int, top: float) -> np.ndarray:
    """m orders in [-top, top] (the module doc's mix)."""
    v = rng.uniform(-top, top, m)
    v[: m // 3] = np.round(v[: m // 3])
    v[m // 3: m // 2] = np.round(v[m // 3: m // 2]) + 0.5
    near = slice(m // 2, 2 * m // 3)
    n = v[near].size
    v[near] = np.round(v[near]) + rng.choice([-1.0, 1.0], n) * np.exp(rng.uniform(np.log(1e-9), np.log(1e-3), n))
    return v


def near_zero(rng, v: float) -> float:
    """A point within 1e-14..1e-3 relative of a zero of J_v above |v| + 1."""
    lo = abs(v) + 1 + rng.uniform(0, 60)
    grid = lo + 0.25 * np.arange(80)
    f = sp.jv(v, grid)
    i = int(np.flatnonzero(np.sign(f[:-1]) != np.sign(f[1:]))[0])
    zero = so.brentq(lambda t: sp.jv(v, t), grid[i], grid[i + 1], xtol=1e-300, rtol=1e-15)
    return zero * (1 + rng.choice([-1.0, 1.0]) * np.exp(rng.uniform(np.log(1e-14), np.log(1e-3))))


def points(rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(v, x, is_near_zero) (the module doc)."""
    n_log, n_tr, n_far = int(0.4 * M), int(0.3 * M), int(0.15 * M)
    n_zero = M - n_log - n_tr - n_far
    v = orders(rng, n_log + n_tr, 200.0)
    x = np.exp(rng.uniform(np.log(1e-300), np.log(1e5), n_log + n_tr))
    x[n_log:] = np.abs(v[n_log:]) * np.abs(1 + 0.2 * rng.normal(size=n_tr)) + 1e-3
    v_far = orders(rng, n_far, 50.0)
    x_far = np.exp(rng.uniform(np.log(100.0), np.log(1e5), n_far))
    v = np.concatenate([v, v_far]).astype(np.float32).astype(np.float64)
    x = np.concatenate([x, x_far])
    x = np.where(x > 1e-37, x.astype(np.float32).astype(np.float64), x)
    v_zero = orders(rng, n_zero, 50.0).astype(np.float32).astype(np.float64)
    x_zero = np.array([near_zero(rng, a) for a in v_zero])
    flags = np.concatenate([np.zeros(v.size, bool), np.ones(n_zero, bool)])
    return np.concatenate([v, v_zero]), np.concatenate([x, x_zero]), flags


def reference(v: float, x: float) -> float:
    """J_v(x) rounded to float64 (J_-n = (-1)^n J_n for integer n)."""
    if v == int(v) and v < 0:
        return float((-1) ** int(-v) * mp.besselj(int(-v), mp.mpf(x), maxprec=40000))
    return float(mp.besselj(mp.mpf(v), mp.mpf(x), maxprec=40000))


def checked(v: float, x: float) -> tuple[float, bool]:
    """(value, recomputed): the 30-digit value, or the 80-digit one where it is over 1e-12 off SciPy."""
    value = reference(v, x)
    scipy_value = sp.jv(v, x)
    if not np.isfinite(value) or not np.isfinite(scipy_value) or abs(value - scipy_value) <= 1e-12 * abs(scipy_value):
        return value, False
    with mp.workdps(80):
        return reference(v, x), True


def main() -> None:
    rng = np.random.default_rng(20261128)
    v, x, near = points(rng)
    pairs = [checked(float(a), float(b)) for a, b in zip(v, x)]
    jv = np.array([p[0] for p in pairs])
    recomputed = sum(p[1] for p in pairs)
    env = np.sqrt(2 / (np.pi * x))
    np.savez_compressed(OUT, v=v, x=x, jv=jv, env=env, near_zero=near)
    print(f"wrote {OUT}: {len(v)} points, {recomputed} recomputed at 80 digits")


if __name__ == "__main__":
    main()
