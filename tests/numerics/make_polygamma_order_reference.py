"""Generate ``data/polygamma_order_mpmath.npz``: 6,000 (n, x) points of
``polygamma(n, x)`` for every order 0-30 and a few up to 170, over the whole
real line, with the value from mpmath (40 digits;
``tests/numerics/test_polygamma_order.py`` reads it). Run from the worktree
root::

    python tests/numerics/make_polygamma_order_reference.py

The x are those of ``make_polygamma_reference.points`` (float32 numbers: a
log grid over (1e-30, 1e30), uniform in (0, 40], negative non-integers in
(-60, 0), within 1e-7..1e-2 of the negative integers, large negative
non-integers to -4e6); the value is ``mp.psi`` at x > 0, at x < 0 the
reflection formula (DLMF 5.15.6) with cot(pi x) from mpmath's
``cospi``/``sinpi``, exact at the half-integers, where Q_n(0) = 0: at 40
digits ``mp.psi(40, -19.5)`` is -3.2e13 (the value is -1.6e-6), and
``mp.cot(mp.pi * x)`` is 1e-33 off at the half-integers, which Q_170's
coefficients (~1e300) make an overflow.
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np

from tests.numerics.make_polygamma_reference import cot_derivative, points

mp.mp.dps = 40

OUT = pathlib.Path(__file__).with_name("data") / "polygamma_order_mpmath.npz"
ORDERS = tuple(range(31)) + (40, 60, 100, 170)


def reference(n: int, x: float) -> float:
    """polygamma(n, x) rounded to float64 (the module doc)."""
    v = mp.mpf(x)
    if x > 0:
        return float(mp.psi(n, v))
    t = mp.cospi(v) / mp.sinpi(v)
    q = sum(c * t ** i for i, c in enumerate(cot_derivative(n)))
    return float((-1) ** n * mp.psi(n, 1 - v) - mp.pi ** (n + 1) * q)


def main() -> None:
    rng = np.random.default_rng(20261129)
    _, x = points(rng)
    x = rng.permutation(x)[:6000]
    n = rng.choice(ORDERS, x.size)
    ref = np.array([reference(int(o), float(v)) for o, v in zip(n, x)])
    np.savez_compressed(OUT, n=n.astype(np.int64), x=x, psi=ref)
    print(f"wrote {OUT}: {len(x)} points")


if __name__ == "__main__":
    main()
