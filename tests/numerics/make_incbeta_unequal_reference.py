"""Generate ``data/incbeta_unequal_mpmath.npz``: 2,000 points with very
unequal shapes (issue 26), one shape log-uniform in [1e6, 1e9], the other in
[0.1, 1e5], either of them a, and x = mean + N(0, 3) standard deviations,
where ``incbeta_f64`` takes TOMS 708's methods (``incbeta_toms_f64``); read by
``tests/numerics/test_incomplete_beta.py``. The shapes are float32 numbers,
x is one where x < 1/2 (the float32 test uses those points).

I_x(a, b) by mpmath (60 digits) from the hypergeometric series of the smaller
shape's side, ``x^s y^l / (s B(s, l)) 2F1(s + l, 1; s + 1; .)`` (DLMF 8.17.8):
its terms fall like a Poisson weight of mean ~s there, so it sums in ~s +
10 sqrt(s) terms (the larger shape's side needs ~l terms: the reference of
``make_incbeta_reference`` does not finish at l = 1e9); the other side as 1
minus it. Run from the worktree root (~3 min)::

    python tests/numerics/make_incbeta_unequal_reference.py
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np

OUT = pathlib.Path(__file__).with_name("data") / "incbeta_unequal_mpmath.npz"


def points(rng, n: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, x) as the module docstring describes."""
    large = np.exp(rng.uniform(np.log(1e6), np.log(1e9), n)).astype(np.float32).astype(np.float64)
    small = np.exp(rng.uniform(np.log(0.1), np.log(1e5), n)).astype(np.float32).astype(np.float64)
    swap = rng.random(n) < 0.5
    a, b = np.where(swap, large, small), np.where(swap, small, large)
    mean = a / (a + b)
    sd = np.sqrt(a * b / (a + b + 1)) / (a + b)
    x = np.clip(mean + rng.normal(0, 3, n) * sd, 1e-300, 1 - 2 ** -53)
    x = np.where(x < 0.5, x.astype(np.float32).astype(np.float64), x)
    x = np.where(x > 0, x, np.nextafter(np.float32(0), np.float32(1)).astype(np.float64))
    return a, b, x


def _series(s, l, x):
    """I_x(s, l) by the hypergeometric series in x (s the smaller shape)."""
    log_front = s * mp.log(x) + l * mp.log1p(-x) - mp.log(s) - (mp.loggamma(s) + mp.loggamma(l) - mp.loggamma(s + l))
    term, total, n = mp.mpf(1), mp.mpf(1), 0
    while True:  # 2F1(s + l, 1; s + 1; x), positive terms
        term *= (s + l + n) * x / (s + 1 + n)
        total += term
        n += 1
        if term < total * mp.mpf(10) ** -45 and (s + l + n) * x < (s + 1 + n):
            break
    return mp.exp(log_front) * total


def reference(a: float, b: float, x: float) -> float:
    """I_x(a, b) rounded to float64."""
    with mp.workdps(60):
        a, b, x = mp.mpf(a), mp.mpf(b), mp.mpf(x)
        if a <= b:
            return float(_series(a, b, x))
        return float(1 - _series(b, a, 1 - x))


def main() -> None:
    a, b, x = points(np.random.default_rng(2026))
    value = np.array([reference(*p) for p in zip(a, b, x)])
    OUT.parent.mkdir(exist_ok=True)
    np.savez_compressed(OUT, a=a, b=b, x=x, i=value)


if __name__ == "__main__":
    main()
