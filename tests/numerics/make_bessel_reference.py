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

``iv_v``, ``iv_x`` (10,000 float32 pairs) with ``ive = I_v(x) exp(-x)``:
orders from -50 to 200, a third integers, a sixth half-integers, a sixth
within 1e-9..1e-3 of an integer, the rest uniform; x log-uniform over
(1e-300, 1e4) for half of them (float64 x there: the float32 test skips
x below float32's range), x = v (1 + N(0, 0.2)) (the transition) for the rest;
``kve = K_v(x) exp(x)`` at the same pairs.
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np
import scipy.special as sp

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


def iv_points(rng) -> tuple[np.ndarray, np.ndarray]:
    """(v, x) over the domain of ive (the module doc)."""
    m = 10_000
    v = rng.uniform(-50, 200, m)
    v[: m // 3] = np.round(v[: m // 3])
    v[m // 3: m // 2] = np.round(v[m // 3: m // 2]) + 0.5
    near = slice(m // 2, 2 * m // 3)
    v[near] = np.round(v[near]) + rng.choice([-1.0, 1.0], m // 6) * np.exp(rng.uniform(np.log(1e-9), np.log(1e-3), m // 6))
    x = np.exp(rng.uniform(np.log(1e-300), np.log(1e4), m))
    transition = rng.random(m) < 0.5
    x[transition] = np.abs(v[transition]) * np.abs(1 + 0.2 * rng.normal(size=transition.sum())) + 1e-3
    v = v.astype(np.float32).astype(np.float64)
    x = np.where(x > 1e-37, x.astype(np.float32).astype(np.float64), x)
    return v, x


def ive_reference(v: float, x: float) -> float:
    """I_v(x) e^-x rounded to float64 (I_-n = I_n for integer n: mpmath's
    hypercomb cannot bound the cancelled terms of a negative integer order)."""
    order = abs(v) if v == int(v) else v
    return float(mp.besseli(order, mp.mpf(x), maxprec=20000) * mp.exp(-mp.mpf(x)))


def kve_reference(v: float, x: float) -> float:
    """K_v(x) e^x rounded to float64 (mpmath ``besselk``; K_-v = K_v). mpmath's
    ``besselk`` at 30 digits can lose every digit at large orders (v = 146,
    x = 96: 3.4 times too small), so a value more than 1e-13 off SciPy's is
    recomputed at 80 digits (``checked_kve``)."""
    return float(mp.besselk(abs(v), mp.mpf(x), maxprec=20000) * mp.exp(mp.mpf(x)))


def checked_kve(v: float, x: float, value: float) -> float:
    """``value`` (30 digits), or the 80-digit value where it is over 1e-13 off ``scipy.special.kve``."""
    scipy_value = sp.kve(v, x)
    if not np.isfinite(value) or abs(value - scipy_value) <= 1e-13 * abs(scipy_value):
        return value
    with mp.workdps(80):
        return float(mp.besselk(abs(v), mp.mpf(x), maxprec=40000) * mp.exp(mp.mpf(x)))


def main() -> None:
    rng = np.random.default_rng(20261128)
    iv_v, iv_x = iv_points(rng)
    ive = np.array([ive_reference(float(a), float(b)) for a, b in zip(iv_v, iv_x)])
    kve = np.array([checked_kve(float(a), float(b), kve_reference(float(a), float(b))) for a, b in zip(iv_v, iv_x)])
    x = j_points(rng)
    j0 = np.array([float(mp.besselj(0, mp.mpf(v))) for v in x])
    j1 = np.array([float(mp.besselj(1, mp.mpf(v))) for v in x])
    np.savez_compressed(OUT, x=x, j0=j0, j1=j1, iv_v=iv_v, iv_x=iv_x, ive=ive, kve=kve)
    print(f"wrote {OUT}: {len(x)} points")


if __name__ == "__main__":
    main()
