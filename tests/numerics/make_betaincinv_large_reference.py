"""Generate ``data/betaincinv_large_mpmath.npz``: (a, b, y) points with both
shapes at least 10 and up to 1e300, with the root x of I_x(a, b) = y from
mpmath (``tests/numerics/test_betaincinv.py`` reads it). Run from the worktree
root (about 15 minutes on one core)::

    python tests/numerics/make_betaincinv_large_reference.py

mpmath's ``betainc`` is a hypergeometric series that needs ~b x terms, so it
cannot reach these shapes, and SciPy is no reference there either (at
a = b = 1e16, y = 0.1 SciPy is 6e-10 off; at a = 7e50, b = 1.9e142 it is 2e-8
off). The reference is computed independently of any expansion, by
quadrature of the density written in the relative deviation from the mean,
``x = mu (1 + w)``, ``mu = a / (a + b)``, ``1 - x = (1 - mu)(1 - (a/b) w)``::

    log(x^(a-1) (1-x)^(b-1) / B(a, b)) = C + (a - b)/b w + (a-1) L(w) + (b-1) L(-(a/b) w)

with ``L(u) = log(1 + u) - u`` (its power series below |u| = 0.01: no
cancellation) and the constant ``C = (a-1) log mu + (b-1) log(1 - mu) - log
B(a, b)`` at 40 + log10(a + b) digits; everything else at 36 digits, so a
shape of 1e300 costs no more than one of 1e3. ``I`` is the tanh-sinh
quadrature of the density of v = log(x / mu) (``Beta.lower_tail``: pieces
over which its logarithm changes by at most 8, down to where it is e^-110
below its largest value; it is log-concave for a, b >= 1, so it only falls
further). The smaller tail is integrated: ``1 - I_x(a, b) =
I_(1-x)(b, a)``, in the mirrored deviation ``w' = -(a/b) w``.

Each root is found by Newton's method in w on ``log T - log y'`` (T the
smaller tail, y' = min(y, 1 - y)): log T is concave (the tails of a
log-concave density are log-concave), so the iterates approach the root
monotonically after one step; it stops when the step is below 1e-27
min(1, sd(v)) (the complement of a mirrored root may be as small as sd).
The root is rounded to float64 from x = mu e^v, or where the mirrored
problem was solved, from its complement ``(1 - mu) - mu (e^v - 1)`` (mu
itself may be 1 to 36 digits), at 36 digits.
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np
import scipy.special as sp

WORK_DIGITS = 36
OUT = pathlib.Path(__file__).with_name("data") / "betaincinv_large_mpmath.npz"


def _log1p_minus(u):
    """L(u) = log(1 + u) - u, without cancellation for small |u|."""
    if abs(u) < mp.mpf("0.01"):
        total, power, k = mp.mpf(0), u * u, 2
        while True:
            term = power / k * (1 if k % 2 else -1)
            total += term
            if abs(term) <= abs(total) * mp.mpf(10) ** (-WORK_DIGITS - 5) or power == 0:
                return total
            power *= u
            k += 1
    return mp.log1p(u) - u


class Beta:
    """The beta(a, b) distribution in v = log(x / mu), at 36 digits."""

    def __init__(self, a: float, b: float):
        with mp.workdps(40 + int(mp.log10(mp.mpf(a) + b))):
            a_, b_ = mp.mpf(a), mp.mpf(b)
            mu = a_ / (a_ + b_)
            lb = mp.loggamma(a_) + mp.loggamma(b_) - mp.loggamma(a_ + b_)
            c = (a_ - 1) * mp.log(mu) + (b_ - 1) * mp.log1p(-mu) - lb
        self.a, self.b, self.ratio = mp.mpf(a), mp.mpf(b), mp.mpf(a) / b
        self.mu, self.mu_c, self.c = +mu, b_ / (a_ + b_), +c  # 1 - mu from the shapes: mu may round to 1
        self.log_mu = mp.log(self.mu)
        self.sd = mp.sqrt(self.b / (self.a * (self.a + self.b + 1)))  # of v near the mean
        self.mode = mp.log1p(1 / (self.a + self.b - 1))  # x = a / (a + b - 1)

    def log_density(self, v):
        """log of the density of v (that of x times x)."""
        w = mp.expm1(v)
        return (self.c + self.log_mu + v + (self.a - self.b) / self.b * w + (self.a - 1) * _log_minus(v, w)
                + (self.b - 1) * _log1p_minus(-self.ratio * w))

    def slope(self, v):
        """d/dv of ``log_density``: a - (b - 1) x / (1 - x), written without
        cancellation: a ((1 + w) / b - (1 + a/b) w) / (1 - (a/b) w)."""
        w = mp.expm1(v)
        return self.a * ((1 + w) / self.b - (1 + self.ratio) * w) / (1 - self.ratio * w)

    def lower_tail(self, v):
        """I_x(a, b) at x = mu e^v: tanh-sinh on intervals over which the
        log-density changes by at most ~8, down to where it is e^-110 below
        its largest value (log-concave: it only falls further)."""
        points = [v]
        if v > self.mode:  # pieces of one standard deviation back to the mode
            n = int(mp.ceil((v - self.mode) / self.sd))
            points += [v - (v - self.mode) * k / n for k in range(1, n + 1)]
        top = max(self.log_density(p) for p in (points[0], points[-1]))
        step, here = self.sd, self.log_density(points[-1])
        while here > top - 110:
            p = points[-1]
            slope = self.slope(p)
            step = min(2 * step, 4 / slope) if slope > 0 else 2 * step
            while abs((there := self.log_density(p - step)) - here) > 8:
                step /= 2
            points.append(p - step)
            here = there
        # in units of the standard deviation and scaled to the largest value: mpmath's quad stops on an
        # absolute error estimate (an integral of size sd = 1e-268 would stop at its first level)
        nodes = [(p - v) / self.sd for p in points[::-1]]
        return mp.quad(lambda t: mp.exp(self.log_density(v + self.sd * t) - top), nodes) * self.sd * mp.exp(top)


def _log_minus(v, w):
    """v - w = log(1 + w) - w for w = e^v - 1, without cancellation for small |w|."""
    return _log1p_minus(w) if abs(w) < mp.mpf("0.01") else v - w


def root(a: float, b: float, y: float) -> float:
    """The x with I_x(a, b) = y (a, b >= 10, 0 < y < 1), rounded to float64."""
    with mp.workdps(WORK_DIGITS):
        y_ = mp.mpf(y)
        lower = y_ <= mp.mpf("0.5")
        dist = Beta(a, b) if lower else Beta(b, a)  # the upper tail is the mirrored lower one
        target = mp.log(y_ if lower else 1 - y_)
        v = dist.sd * float(sp.ndtri(float(mp.exp(target))))  # the normal quantile
        v_max = -mp.log(dist.mu)  # x = 1
        for _ in range(300):
            t = dist.lower_tail(v)
            dv = -(mp.log(t) - target) / mp.exp(dist.log_density(v) - mp.log(t))
            v_new = v + dv if v + dv < v_max else (v + v_max) / 2
            if abs(dv) <= mp.mpf(10) ** -27 * min(1, dist.sd):  # sd: 1 - x of a mirrored root may be 1e-266
                v = v_new
                break
            v = v_new
        else:
            raise RuntimeError(f"no convergence at {(a, b, y)}")
        if lower:
            return float(dist.mu * mp.exp(v))
        return float(dist.mu_c - dist.mu * mp.expm1(v))  # 1 - x of the mirrored problem, x next to 1


def points(rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, y): log10 a uniform over [1, 300]; b = a (a third), a e^U(-5, 5)
    (a third) or log10 b uniform over [1, 300] (a third), both at least 10;
    y uniform over (0, 1), log-uniform over [1e-300, 1e-2] or 1 - y
    log-uniform over [1e-16, 1e-2] (a third each)."""
    n = 1000
    a = 10 ** rng.uniform(1, 300, n)
    kind = rng.integers(0, 3, n)
    b = np.where(kind == 0, a, np.where(kind == 1, a * np.exp(rng.uniform(-5, 5, n)), 10 ** rng.uniform(1, 300, n)))
    a, b = np.maximum(a, 10.0), np.clip(b, 10.0, 1e300)
    which = rng.integers(0, 3, n)
    y = np.where(which == 0, rng.uniform(0, 1, n),
                 np.where(which == 1, 10 ** rng.uniform(-300, -2, n), 1 - 10 ** rng.uniform(-16, -2, n)))
    y = np.where((y > 0) & (y < 1), y, 0.5)
    return a, b, y


def main() -> None:
    a, b, y = points(np.random.default_rng(2026))
    x = np.array([root(*p) for p in zip(a, b, y)])
    OUT.parent.mkdir(exist_ok=True)
    np.savez_compressed(OUT, a=a, b=b, y=y, x=x)


if __name__ == "__main__":
    main()
