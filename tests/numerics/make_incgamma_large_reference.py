"""Generate ``data/incgamma_large_mpmath.npz``: 2,000 (a, x) points in the
band |x - a| < 0.3 a with a from 20 to 1e300 (where SciPy and
``incgamma_temme_f64`` use Temme's expansion), with P(a, x) and Q(a, x) from
mpmath (``tests/numerics/test_incomplete_gamma.py`` reads it). Run from the
worktree root (~1 min)::

    python tests/numerics/make_incgamma_large_reference.py

For a <= 1e5 the reference is ``make_incgamma_reference.reference`` (mpmath
at 30 digits). For a >= 1e8 it comes from the closed
forms of the first two terms of Temme's expansion (DLMF 8.12.3, 8.12.8,
8.12.9: ``c_0 = 1/mu - 1/eta``, ``c_1 = 1/eta^3 - 1/mu^3 - 1/mu^2 - 1/(12 mu)``,
mu = x/a - 1) at 400 digits, whose remainder, O(a^-2) of the O(a^-1/2)
correction, is below 1e-20 relative there: no coefficient table of the code
under test is used.
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np

from make_incgamma_reference import reference as small_a_reference

OUT = pathlib.Path(__file__).with_name("data") / "incgamma_large_mpmath.npz"


def points(rng) -> tuple[np.ndarray, np.ndarray]:
    """(a, x): log-uniform a in [20, 1e5] and [1e8, 1e300], x = a (1 + s) with s
    uniform in the band or a few standard deviations 1/sqrt(a) from the median
    (rounded to float32 where a < 1e30)."""
    n = 1000
    a = np.r_[np.exp(rng.uniform(np.log(20.5), np.log(1e5), n)), np.exp(rng.uniform(np.log(1e8), np.log(1e300), n))]
    s = np.where(rng.random(2 * n) < 0.3, rng.uniform(-0.29, 0.29, 2 * n), rng.normal(0, 4, 2 * n) / np.sqrt(a))
    x = a * (1 + np.clip(s, -0.29, 0.29))
    small = a < 1e30  # float32-representable there, so that the float32 model is checked at the same points
    a[small], x[small] = (v[small].astype(np.float32).astype(np.float64) for v in (a, x))
    return a, x


def _closed_form(a, x):
    mp.mp.dps = 400
    a, x = mp.mpf(a), mp.mpf(x)
    mu = x / a - 1
    if mu == 0:
        q = mp.mpf(0.5) + (-mp.mpf(1) / 3 - mp.mpf(1) / (540 * a)) / mp.sqrt(2 * mp.pi * a)
        return 1 - q, q
    eta = mp.sign(mu) * mp.sqrt(2 * (mu - mp.log1p(mu)))
    c0 = 1 / mu - 1 / eta
    c1 = 1 / eta ** 3 - 1 / mu ** 3 - 1 / mu ** 2 - 1 / (12 * mu)
    tail = mp.exp(-a * eta ** 2 / 2) / mp.sqrt(2 * mp.pi * a) * (c0 + c1 / a)
    q = mp.erfc(eta * mp.sqrt(a / 2)) / 2 + tail
    p = mp.erfc(-eta * mp.sqrt(a / 2)) / 2 - tail
    return p, q


def reference(a: float, x: float) -> tuple[float, float]:
    """(P(a, x), Q(a, x)) rounded to float64."""
    if a >= 1e8:
        p, q = _closed_form(a, x)
        return float(p), float(q)
    mp.mp.dps = 30
    return small_a_reference(a, x)


def main() -> None:
    a, x = points(np.random.default_rng(261))
    p, q = np.array([reference(ai, xi) for ai, xi in zip(a, x)]).T
    OUT.parent.mkdir(exist_ok=True)
    np.savez_compressed(OUT, a=a, x=x, p=p, q=q)


if __name__ == "__main__":
    main()
