"""Generate ``data/incbeta_mpmath.npz``: 10,000 (a, b, x) points over the
domain of the regularized incomplete beta function I_x(a, b), with the value
from mpmath at 30 digits (``tests/numerics/test_incomplete_beta.py`` reads
it). Run from the worktree root::

    python tests/numerics/make_incbeta_reference.py

The smaller of I_x(a, b) and 1 - I_x(a, b) = I_{1-x}(b, a) is computed by
``x^a (1-x)^b / (a B(a, b)) 2F1(a+b, 1; a+1; x)`` (DLMF 8.17.8: positive
terms, no cancellation, for x <= a / (a+b)), the other as 1 minus it.
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np

mp.mp.dps = 30
OUT = pathlib.Path(__file__).with_name("data") / "incbeta_mpmath.npz"


def points(rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, x), float32 numbers: a broad log grid with x over (0, 1) and
    near both ends, the transition x ~ a / (a + b) with large shapes, and
    tiny shapes (PyMC's Beta, StudentT, Binomial and NegativeBinomial CDFs)."""
    n = 2500
    a1, b1 = np.exp(rng.uniform(np.log(1e-2), np.log(1e3), (2, n)))
    x1 = rng.uniform(0, 1, n)
    a2, b2 = np.exp(rng.uniform(np.log(1e-3), np.log(1e2), (2, n)))
    x2 = np.where(rng.uniform(size=n) < 0.5, np.exp(rng.uniform(-40, 0, n)), -np.expm1(-np.exp(rng.uniform(-15, 3, n))))
    a3, b3 = np.exp(rng.uniform(np.log(5), np.log(5e3), (2, n)))
    mean = a3 / (a3 + b3)
    x3 = np.clip(mean + rng.normal(0, 3, n) * np.sqrt(mean * (1 - mean) / (a3 + b3 + 1)), 1e-6, 1 - 1e-6)
    a4 = np.exp(rng.uniform(np.log(1e-3), np.log(2), n))
    b4 = np.exp(rng.uniform(np.log(1e-3), np.log(2e2), n))
    x4 = rng.uniform(0, 1, n)
    flip = rng.uniform(size=n) < 0.5
    a4, b4 = np.where(flip, b4, a4), np.where(flip, a4, b4)
    a, b, x = (np.concatenate(v).astype(np.float32).astype(np.float64)
               for v in ([a1, a2, a3, a4], [b1, b2, b3, b4], [x1, x2, x3, x4]))
    return a, b, x


def reference(a: float, b: float, x: float) -> float:
    """I_x(a, b) rounded to float64."""
    a, b, x = mp.mpf(a), mp.mpf(b), mp.mpf(x)
    if x == 0 or x == 1:
        return float(x)
    if x <= a / (a + b):
        return float(_lower(a, b, x))
    return float(1 - _lower(b, a, 1 - x))


def _lower(a, b, x):
    log_front = a * mp.log(x) + b * mp.log1p(-x) - mp.log(a) - (mp.loggamma(a) + mp.loggamma(b) - mp.loggamma(a + b))
    return mp.exp(log_front) * mp.hyp2f1(a + b, 1, a + 1, x, maxterms=10 ** 7)


def main() -> None:
    a, b, x = points(np.random.default_rng(27))
    ix = np.array([reference(*p) for p in zip(a, b, x)])
    OUT.parent.mkdir(exist_ok=True)
    np.savez_compressed(OUT, a=a, b=b, x=x, i=ix)


if __name__ == "__main__":
    main()
