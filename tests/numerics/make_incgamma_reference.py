"""Generate ``data/incgamma_mpmath.npz``: 10,000 (a, x) points over the whole
domain of the regularized incomplete gamma functions, with P(a, x) and
Q(a, x) from mpmath at 30 digits (``tests/numerics/test_incomplete_gamma.py``
reads it). Run from the worktree root::

    python tests/numerics/make_incgamma_reference.py

The smaller of P and Q is computed directly, the other as 1 minus it:
P = x^a e^-x / Gamma(a+1) 1F1(1; a+1; x) (DLMF 8.5.1, 13.6.5) for x < a,
else Q by ``mpmath.gammainc`` or, where its series do not converge,
Legendre's continued fraction (DLMF 8.9.2) summed by the modified Lentz
method at 30 digits.
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np

mp.mp.dps = 30
OUT = pathlib.Path(__file__).with_name("data") / "incgamma_mpmath.npz"


def points(rng) -> tuple[np.ndarray, np.ndarray]:
    """(a, x), float32 numbers: shape-relative tails, a broad log grid, the transition x ~ a,
    and the small-a, small-x corner (SciPy's ``igamc_series`` region)."""
    n = 2500
    a1 = np.exp(rng.uniform(np.log(1e-3), np.log(1e4), n))
    x1 = a1 * np.exp(rng.uniform(-4, 4, n))
    a2 = np.exp(rng.uniform(-7, 9, n))
    x2 = np.exp(rng.uniform(-10, 10, n))
    a3 = np.exp(rng.uniform(np.log(5), np.log(1e4), n))
    x3 = np.abs(a3 + rng.normal(0, 3, n) * np.sqrt(a3))
    a4 = np.exp(rng.uniform(np.log(1e-3), np.log(2), n))
    x4 = np.exp(rng.uniform(np.log(1e-3), np.log(2), n))
    # float32-representable, so that the float32 model is checked at the same points
    a, x = (np.concatenate(v).astype(np.float32).astype(np.float64) for v in ([a1, a2, a3, a4], [x1, x2, x3, x4]))
    return a, x


def _legendre_q(a, x):
    tiny = mp.mpf(10) ** -300
    b = x + 1 - a
    f, c, d = 1 / b, 1 / tiny, 1 / b
    for n in range(1, 10 ** 6):
        an = -n * (n - a)
        b += 2
        d = b + an * d
        d = 1 / d if d != 0 else 1 / tiny
        c = b + an / c
        f *= c * d
        if abs(c * d - 1) < mp.mpf(10) ** (2 - mp.mp.dps):
            break
    return mp.exp(a * mp.log(x) - x - mp.loggamma(a)) * f


def reference(a: float, x: float) -> tuple[float, float]:
    """(P(a, x), Q(a, x)) rounded to float64."""
    a, x = mp.mpf(a), mp.mpf(x)
    if x < a:
        p = mp.exp(a * mp.log(x) - x - mp.loggamma(a + 1)) * mp.hyp1f1(1, a + 1, x, maxterms=10 ** 6)
        return float(p), float(1 - p)
    try:
        q = mp.gammainc(a, x, mp.inf, regularized=True)
    except mp.libmp.libhyper.NoConvergence:
        q = _legendre_q(a, x)
    return float(1 - q), float(q)


def main() -> None:
    a, x = points(np.random.default_rng(26))
    p, q = np.array([reference(ai, xi) for ai, xi in zip(a, x)]).T
    OUT.parent.mkdir(exist_ok=True)
    np.savez_compressed(OUT, a=a, x=x, p=p, q=q)


if __name__ == "__main__":
    main()
