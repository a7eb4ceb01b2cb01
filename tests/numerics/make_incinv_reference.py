"""Generate ``data/incinv_gamma_mpmath.npz``: 10,000 (a, y) points over the
domain of the inverse regularized incomplete gamma functions, with
``gammaincinv(a, y)`` (the x with P(a, x) = y) and ``gammainccinv(a, y)``
(the x with Q(a, x) = y) from mpmath at 30 digits
(``tests/numerics/test_incomplete_inverse.py`` reads it). Run from the
worktree root (about a minute)::

    python tests/numerics/make_incinv_reference.py

Each root is found by Newton's method on ``t = log x`` for ``log(F / y)``,
F the smaller of P and Q at the root (the other is ``1 - y``, exact), with
F computed as in ``make_incgamma_reference.py`` (the smaller of P and Q
directly, by 1F1 or the upper-gamma function / Legendre's continued
fraction), until the step is below 1e-25 (1 + |t|). ``log F(a, e^t)`` is concave in
t (F is the CDF or survival function of the log of a gamma variate, whose
density is log-concave), so the iteration converges from any start.
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np
import scipy.special as sp

from tests.numerics.make_incgamma_reference import _legendre_q

mp.mp.dps = 30
DATA = pathlib.Path(__file__).with_name("data")
GAMMA_OUT = DATA / "incinv_gamma_mpmath.npz"


def gamma_points(rng) -> tuple[np.ndarray, np.ndarray]:
    """(a, y): a log-uniform over [1e-3, 1e4] (and a few down to 1e-6), y
    uniform over (0, 1), log-uniform down to 1e-300 and 1 - y log-uniform
    down to 1e-16; the first half float32 numbers (y >= 1e-37), so that
    the float32 model is checked at the same points."""
    n = 2500
    a = np.exp(np.r_[rng.uniform(np.log(1e-3), np.log(1e4), 4 * n - 100), rng.uniform(np.log(1e-6), np.log(1e-3), 100)])
    rng.shuffle(a)
    y32 = np.r_[rng.uniform(0, 1, n // 2), np.exp(rng.uniform(np.log(1e-37), 0, n // 2)),
                1 - np.exp(rng.uniform(np.log(1e-7), np.log(0.5), n))]
    y64 = np.r_[np.exp(rng.uniform(np.log(1e-300), np.log(1e-37), n // 2)), rng.uniform(0, 1, n // 2),
                1 - np.exp(rng.uniform(np.log(1e-16), np.log(1e-7), n))]
    a32 = a[: 2 * n].astype(np.float32).astype(np.float64)
    y32 = y32.astype(np.float32).astype(np.float64)
    y32 = np.where((y32 > 0) & (y32 < 1), y32, 0.5)
    y64 = np.where((y64 > 0) & (y64 < 1), y64, 0.25)
    return np.r_[a32, a[2 * n:]], np.r_[y32, y64]


def _p_q(a, x):
    """(P(a, x), Q(a, x)) as mpf, the smaller one computed directly."""
    if x < a:
        p = mp.exp(a * mp.log(x) - x - mp.loggamma(a + 1)) * mp.hyp1f1(1, a + 1, x, maxterms=10 ** 6)
        return p, 1 - p
    try:
        q = mp.gammainc(a, x, mp.inf, regularized=True)
    except mp.libmp.libhyper.NoConvergence:
        q = _legendre_q(a, x)
    return 1 - q, q


def gamma_root(a: float, y: float, upper: bool, guess: float) -> float:
    """The x > 0 with P(a, x) = y (Q when ``upper``), rounded to float64."""
    a, y = mp.mpf(a), mp.mpf(y)
    lower_side = (y <= 0.5) != upper  # solve for the smaller of P and Q
    target = y if y <= 0.5 else 1 - y
    sign = 1 if lower_side else -1
    left = (mp.log(y if not upper else 1 - y) + mp.loggamma(a + 1)) / a  # P(a, e^left) <= p
    t = mp.log(guess) if 0 < guess < np.inf else left
    for _ in range(200):
        x = mp.exp(t)
        p, q = _p_q(a, x)
        f = p if lower_side else q
        fac = mp.exp(a * t - x - mp.loggamma(a))
        step = -mp.log(f / target) / (sign * fac / f)
        step = max(min(step, 5), -5)
        t += step
        if abs(step) < mp.mpf(10) ** -25 * (1 + abs(t)):  # 30 digits of t
            return float(mp.exp(t))
    raise RuntimeError(f"no convergence at a={a}, y={y}, upper={upper}")


def main() -> None:
    a, y = gamma_points(np.random.default_rng(2601))
    with np.errstate(all="ignore"):
        lower_guess, upper_guess = sp.gammaincinv(a, y), sp.gammainccinv(a, y)
    lower = np.array([gamma_root(*v, False, g) for v, g in zip(zip(a, y), lower_guess)])
    upper = np.array([gamma_root(*v, True, g) for v, g in zip(zip(a, y), upper_guess)])
    DATA.mkdir(exist_ok=True)
    np.savez_compressed(GAMMA_OUT, a=a, y=y, gammaincinv=lower, gammainccinv=upper)


if __name__ == "__main__":
    main()
