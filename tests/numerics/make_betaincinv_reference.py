"""Generate ``data/betaincinv_mpmath.npz``: 10,000 (a, b, y) points over the
domain of the inverse regularized incomplete beta function, with
``betaincinv(a, b, y)`` (the x with I_x(a, b) = y) from mpmath at 40 digits
(``tests/numerics/test_betaincinv.py`` reads it). Run from the worktree root
(a few minutes)::

    python tests/numerics/make_betaincinv_reference.py

mpmath has no ``betaincinv``: each root is found by Newton's method on
``t = logit x`` for ``log(F / y')``, y' the smaller of y and 1 - y and F the
matching one of I_x(a, b) and 1 - I_x(a, b) (each the smaller one computed
directly, ``make_incbeta_reference._lower``: DLMF 8.17.8, positive terms),
from SciPy's root, until the step is below 1e-30 (1 + |t|). ``log I`` and
``log(1 - I)`` are concave in ``logit x`` (the distribution and survival
function of the logit of a beta variate, whose density ``e^(a t) / (1 +
e^t)^(a+b) / B(a, b)`` is log-concave), so after one step the iterates
approach the root monotonically. The root is rounded to float64 from
``x`` (or from ``1 - x`` where x > 1/2, so that a root next to 1 rounds
as itself).
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np
import scipy.special as sp

from tests.numerics.make_incbeta_reference import _lower

mp.mp.dps = 40
OUT = pathlib.Path(__file__).with_name("data") / "betaincinv_mpmath.npz"


def points(rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, y): a, b log-uniform over [1e-3, 1e4]; y uniform over (0, 1),
    log-uniform down to 1e-300 (1e-37 in the float32 half) and 1 - y
    log-uniform down to 1e-16 (1e-7); the first half float32 numbers, so
    that the float32 model is checked at the same points."""
    n = 2500
    a, b = np.exp(rng.uniform(np.log(1e-3), np.log(1e4), (2, 4 * n)))
    y32 = np.r_[rng.uniform(0, 1, n // 2), np.exp(rng.uniform(np.log(1e-37), 0, n // 2)),
                1 - np.exp(rng.uniform(np.log(1e-7), np.log(0.5), n))]
    y64 = np.r_[np.exp(rng.uniform(np.log(1e-300), np.log(1e-10), n // 2)), rng.uniform(0, 1, n // 2),
                1 - np.exp(rng.uniform(np.log(1e-15), np.log(1e-3), n))]
    y32 = y32.astype(np.float32).astype(np.float64)
    y32 = np.where((y32 > 0) & (y32 < 1), y32, 0.5)
    y64 = np.where((y64 > 0) & (y64 < 1), y64, 0.25)
    a[: 2 * n], b[: 2 * n] = (v[: 2 * n].astype(np.float32).astype(np.float64) for v in (a, b))
    return a, b, np.r_[y32, y64]


def _pair(a, b, t):
    """(I_x(a, b), 1 - I_x(a, b)) at x = 1 / (1 + e^-t), the smaller computed directly."""
    x, xc = 1 / (1 + mp.exp(-t)), 1 / (1 + mp.exp(t))
    if x <= a / (a + b):
        i = _lower(a, b, x)
        return i, 1 - i
    ic = _lower(b, a, xc)
    return 1 - ic, ic


def root(a: float, b: float, y: float, guess: float) -> float:
    """The x in (0, 1) with I_x(a, b) = y, rounded to float64."""
    a, b, y = mp.mpf(a), mp.mpf(b), mp.mpf(y)
    lower = y <= 0.5
    target = y if lower else 1 - y
    sign = 1 if lower else -1
    lbeta = mp.loggamma(a) + mp.loggamma(b) - mp.loggamma(a + b)
    t = mp.log(guess) - mp.log1p(-guess) if 1e-300 < guess < 0.5 else -mp.log1p(-guess) + mp.log(guess)
    if not 1e-300 < guess < 1 - 1e-16:  # SciPy's root is 0, 1 or clipped: x^a / (a B) = y, (1 - x)^b / (b B) = 1 - y
        t = (mp.log(y * a) + lbeta) / a if guess < 0.5 else -(mp.log((1 - y) * b) + lbeta) / b
    for _ in range(300):
        i, ic = _pair(a, b, t)
        f = i if lower else ic
        # d log F / dt = +-x^a (1-x)^b / (B F), in logs (x^a underflows)
        log_dens = a * t - (a + b) * mp.log1p(mp.exp(t)) if t < 0 else -b * t - (a + b) * mp.log1p(mp.exp(-t))
        slope = sign * mp.exp(log_dens - lbeta - mp.log(f))
        step = -mp.log(f / target) / slope
        step = max(min(step, 50), -50)
        t += step
        if abs(step) < mp.mpf(10) ** -30 * (1 + abs(t)):
            return float(1 / (1 + mp.exp(-t))) if t <= 0 else float(1 - 1 / (1 + mp.exp(t)))
    raise RuntimeError(f"no convergence at a={a}, b={b}, y={y}")


def main() -> None:
    a, b, y = points(np.random.default_rng(2626))
    with np.errstate(all="ignore"):
        guess = sp.betaincinv(a, b, y)
    x = np.array([root(*p, g) for p, g in zip(zip(a, b, y), guess)])
    OUT.parent.mkdir(exist_ok=True)
    np.savez_compressed(OUT, a=a, b=b, y=y, x=x)


if __name__ == "__main__":
    main()
