"""Generate ``data/incbeta_large_mpmath.npz``: 1,000 points with both shapes
large (100 < a, b < 1e5) and x within a few standard deviations of the mean
a / (a + b), where ``incbeta_f64`` uses TOMS 708's asymptotic expansion
(``incbeta_asym_f64``) instead of Cephes' continued fractions, with I_x(a, b)
from ``make_incbeta_reference.reference`` (mpmath, 30 digits;
``tests/numerics/test_incomplete_beta.py`` reads it). Run from the worktree
root (~1 min)::

    python tests/numerics/make_incbeta_large_reference.py
"""

from __future__ import annotations

import pathlib

import numpy as np

from make_incbeta_reference import reference

OUT = pathlib.Path(__file__).with_name("data") / "incbeta_large_mpmath.npz"


def points(rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, x), float32 numbers: log-uniform a in [101, 1e5], b = a e^U(-3, 3) (at least
    101), x = mean + N(0, 4) standard deviations or uniform within lambda <= 0.035 min(a, b)."""
    n = 1000
    a = np.exp(rng.uniform(np.log(101), np.log(1e5), n))
    b = np.maximum(a * np.exp(rng.uniform(-3, 3, n)), 101)
    mean = a / (a + b)
    sd = np.sqrt(a * b / (a + b + 1)) / (a + b)
    band = 0.035 * np.minimum(a, b) / (a + b)
    x = np.where(rng.random(n) < 0.7, mean + rng.normal(0, 4, n) * sd, mean + rng.uniform(-1, 1, n) * band)
    x = np.clip(x, 1e-6, 1 - 1e-6)
    return tuple(v.astype(np.float32).astype(np.float64) for v in (a, b, x))


def main() -> None:
    a, b, x = points(np.random.default_rng(262))
    value = np.array([reference(*p) for p in zip(a, b, x)])
    OUT.parent.mkdir(exist_ok=True)
    np.savez_compressed(OUT, a=a, b=b, x=x, i=value)


if __name__ == "__main__":
    main()
