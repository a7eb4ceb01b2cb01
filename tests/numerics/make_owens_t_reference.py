"""Generate ``data/owens_t_mpmath.npz``: 10,000 (h, a) points over the
domain of Owen's T function T(h, a), with the value from mpmath at 40
digits (``tests/numerics/test_owens_t.py`` reads it). Run from the
worktree root::

    python tests/numerics/make_owens_t_reference.py

For 0 <= a <= 1 the value is the defining integral (Owen 1956)
``T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx``
(mpmath's tanh-sinh quadrature of the integrand without its factor
exp(-h^2/2), split at 1/h, 4/h and 10/h where it is narrow); for a > 1 Patefield & Tandy's equation (2),
``T(h, a) = (Q(h) + Q(ah)) / 2 - Q(h) Q(ah) - T(ah, 1/a)`` (Q the upper
normal tail), whose cancellation 40 digits absorb; T is even in h and
odd in a.
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np

mp.mp.dps = 40
OUT = pathlib.Path(__file__).with_name("data") / "owens_t_mpmath.npz"
HRANGE = (0.02, 0.06, 0.09, 0.125, 0.26, 0.4, 0.6, 1.6, 1.7, 2.33, 2.4, 3.36, 3.4, 4.8)
ARANGE = (0.025, 0.09, 0.15, 0.36, 0.5, 0.9, 0.99999)


def points(rng) -> tuple[np.ndarray, np.ndarray]:
    """(h, a), float32 numbers of both signs: a broad log grid, the tails
    (h up to 38, where T is still a normal float), the boundaries of
    Patefield & Tandy's method table (h and a within 2% of each breakpoint),
    a near 1 (the T6 region and the |a| > 1 reduction's seam), and
    a h near 0.67 for a > 1 (the reduction's two forms)."""
    n = 2000
    h1 = np.exp(rng.uniform(np.log(1e-4), np.log(38), n))
    a1 = np.exp(rng.uniform(np.log(1e-6), np.log(1e6), n))
    h2 = rng.uniform(4, 38, n)
    a2 = np.exp(rng.uniform(np.log(1e-4), np.log(1e4), n))
    h3 = np.array(HRANGE)[rng.integers(0, len(HRANGE), n)] * rng.uniform(0.98, 1.02, n)
    a3 = np.array(ARANGE)[rng.integers(0, len(ARANGE), n)] * rng.uniform(0.98, 1.02, n)
    swap = rng.uniform(size=n) < 0.3
    h3 = np.where(swap, np.exp(rng.uniform(np.log(1e-3), np.log(38), n)), h3)
    a3 = np.where(rng.uniform(size=n) < 0.3, np.exp(rng.uniform(np.log(1e-4), np.log(1e3), n)), a3)
    h4 = np.exp(rng.uniform(np.log(1e-3), np.log(38), n))
    a4 = 1 + np.where(rng.uniform(size=n) < 0.5, -1, 1) * np.exp(rng.uniform(np.log(1e-7), np.log(0.2), n))
    a5 = np.exp(rng.uniform(np.log(1.0), np.log(1e5), n))
    h5 = 0.67 / a5 * rng.uniform(0.9, 1.1, n)
    h, a = (np.concatenate(v).astype(np.float32).astype(np.float64)
            for v in ([h1, h2, h3, h4, h5], [a1, a2, a3, a4, a5]))
    h = h * np.where(rng.uniform(size=h.size) < 0.5, -1, 1)
    a = a * np.where(rng.uniform(size=a.size) < 0.5, -1, 1)
    return h, a


def _q(x):
    return mp.erfc(x / mp.sqrt(2)) / 2


def _t_small_a(h, a):
    """T(h, a) for h >= 0, 0 <= a <= 1 (the integral)."""
    if a == 0:
        return mp.mpf(0)
    f = lambda x: mp.exp(-h * h * x * x / 2) / (1 + x * x)  # O(1): mpmath's quad error is absolute
    cuts = [mp.mpf(0)] + [c for c in (1 / h, 4 / h, 10 / h) if h > 0 and c < a] + [a]
    return mp.exp(-h * h / 2) * mp.quad(f, cuts) / (2 * mp.pi)


def owens_t(h: float, a: float) -> mp.mpf:
    """T(h, a) at mpmath precision."""
    h, a = abs(mp.mpf(h)), mp.mpf(a)
    sign = -1 if a < 0 else 1
    a = abs(a)
    if a <= 1:
        return sign * _t_small_a(h, a)
    qh, qah = _q(h), _q(a * h)
    return sign * ((qh + qah) / 2 - qh * qah - _t_small_a(a * h, 1 / a))


def main() -> None:
    h, a = points(np.random.default_rng(26))
    t = np.array([float(owens_t(x, y)) for x, y in zip(h, a)])
    np.savez_compressed(OUT, h=h, a=a, t=t)
    print(f"wrote {OUT} ({len(h)} points)")


if __name__ == "__main__":
    main()
