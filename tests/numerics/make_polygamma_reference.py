"""Generate ``data/polygamma_mpmath.npz``: 10,000 (n, x) points of
``polygamma(n, x)`` for orders 2-16 over the whole real line, with the value
from mpmath (``mp.psi(n, x)``, or the reflection formula far left; 40 digits; ``tests/numerics/test_polygamma.py``
reads it). Run from the worktree root::

    python tests/numerics/make_polygamma_reference.py

x are float32 numbers (so the float32 test feeds the same points): a log
grid over (1e-30, 1e30), uniform points in (0, 40], negative non-integers
in (-60, 0), points within 1e-7..1e-2 of the negative integers, and large
negative non-integers (|x| up to 4e6, where a float32 still has a fraction).
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np

mp.mp.dps = 40
OUT = pathlib.Path(__file__).with_name("data") / "polygamma_mpmath.npz"
ORDERS = (2, 3, 4, 5, 6, 8, 11, 16)


def points(rng) -> tuple[np.ndarray, np.ndarray]:
    """(n, x) with x float32 numbers, 10,000 of them."""
    m = 2000
    x1 = np.exp(rng.uniform(np.log(1e-30), np.log(1e30), m))
    x2 = rng.uniform(0, 40, m)
    x3 = -rng.uniform(0, 60, m)
    k = rng.integers(1, 40, m).astype(np.float64)
    x4 = -k + np.sign(rng.uniform(-1, 1, m)) * np.exp(rng.uniform(np.log(1e-7), np.log(1e-2), m))
    x5 = -(np.exp(rng.uniform(np.log(60), np.log(4e6), m)) + rng.uniform(0.05, 0.95, m))
    x = np.concatenate([x1, x2, x3, x4, x5]).astype(np.float32).astype(np.float64)
    x = np.where((x <= 0) & (x == np.floor(x)), x + 0.5, x)  # the poles are tested apart
    n = rng.choice(ORDERS, x.size)
    return n.astype(np.int64), x


def cot_derivative(n: int) -> list[int]:
    """Integer coefficients (lowest power first) of Q_n, ``d^n/dx^n cot(pi x)
    = pi^n Q_n(cot(pi x))``: Q_0 = t, Q_(k+1) = -(1 + t^2) Q_k'. Exact and
    kept apart from ``ir.ops.special.cot_derivative`` (float), which the
    reference checks."""
    q = [0, 1]
    for _ in range(n):
        d = [i * c for i, c in enumerate(q)][1:] or [0]
        q = [0] * (len(d) + 2)
        for i, c in enumerate(d):
            q[i] -= c
            q[i + 2] -= c
    return q


def reference(n: int, x: float) -> float:
    """polygamma(n, x) rounded to float64: mpmath's ``psi`` for x > -60; for
    x below, where ``mp.psi`` takes minutes, the reflection formula
    ``(-1)^n psi^(n)(1-x) - pi^(n+1) Q_n(cot(pi x))`` (DLMF 5.15.6) at 40
    digits."""
    v = mp.mpf(x)
    if x > -60:
        return float(mp.psi(n, v))
    t = mp.cot(mp.pi * v)
    q = sum(c * t ** i for i, c in enumerate(cot_derivative(n)))
    return float((-1) ** n * mp.psi(n, 1 - v) - mp.pi ** (n + 1) * q)


def main() -> None:
    rng = np.random.default_rng(20261128)
    n, x = points(rng)
    ref = np.array([reference(int(o), float(v)) for o, v in zip(n, x)])
    np.savez_compressed(OUT, n=n, x=x, psi=ref)
    print(f"wrote {OUT}: {len(x)} points")


if __name__ == "__main__":
    main()
