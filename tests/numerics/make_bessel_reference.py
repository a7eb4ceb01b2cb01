"""Generate ``data/bessel_mpmath.npz``: mpmath references (30 digits,
rounded to float64) of the Bessel functions that
``backends/onnx/rules/bessel_f64.py`` emits; ``tests/numerics/test_bessel_j.py``
reads them. Run from the worktree root::

    python tests/numerics/make_bessel_reference.py

``x`` (10,000 float32 numbers, so the float32 test feeds the same points),
with ``j0 = J0(x)`` and ``j1 = J1(x)``: a log grid over (1e-38, 1e4) of both
signs, uniform points in (0, 60], points within 1e-7..1e-2 of the first 60
zeros of J0 and of J1 (where the Hankel form cancels), the switch at |x| = 5,
and a log grid over (1e4, 1e12) (the phase reduction).
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np

mp.mp.dps = 30
OUT = pathlib.Path(__file__).with_name("data") / "bessel_mpmath.npz"


def j_points(rng) -> np.ndarray:
    """10,000 float32 numbers over J0/J1's domain (the module doc)."""
    log_grid = np.exp(rng.uniform(np.log(1e-38), np.log(1e4), 3000)) * rng.choice([-1.0, 1.0], 3000)
    uniform = rng.uniform(0, 60, 2000)
    zeros = np.array([float(mp.besseljzero(n, k)) for n in (0, 1) for k in range(1, 61)])
    zeros = np.concatenate([zeros, np.repeat([zeros[0], zeros[60]], 20)])  # 1/4 near the zeros below 5
    near = rng.choice(zeros, 3000) + rng.choice([-1.0, 1.0], 3000) * np.exp(rng.uniform(np.log(1e-7), np.log(1e-2), 3000))
    switch = 5.0 + rng.uniform(-1e-3, 1e-3, 500)
    far = np.exp(rng.uniform(np.log(1e4), np.log(1e12), 1500))
    return np.concatenate([log_grid, uniform, near, switch, far]).astype(np.float32).astype(np.float64)


def main() -> None:
    rng = np.random.default_rng(20261128)
    x = j_points(rng)
    j0 = np.array([float(mp.besselj(0, mp.mpf(v))) for v in x])
    j1 = np.array([float(mp.besselj(1, mp.mpf(v))) for v in x])
    np.savez_compressed(OUT, x=x, j0=j0, j1=j1)
    print(f"wrote {OUT}: {len(x)} points")


if __name__ == "__main__":
    main()
