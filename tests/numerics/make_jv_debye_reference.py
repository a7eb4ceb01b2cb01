"""Generate ``data/jv_debye_mpmath.npz``: mpmath references (30 digits, rounded to
float64) of ``jv(v, x)`` at large orders and large x, where
``backends/onnx/rules/bessel_jv_f64.py`` takes Debye's expansions (or Steed's method
near the turning point); ``tests/numerics/test_bessel_jv_debye.py`` reads them. Run
from the worktree root (a few minutes)::

    PYTHONPATH=. python tests/numerics/make_jv_debye_reference.py

Candidate pairs (v, x), a third of the orders negative, a quarter integers and a
quarter half-integers:

- 900 with |v| log-uniform over [1e3, 1.2e4] and x = |v| exp(N(0, 0.4)) (both sides of
  the turning point x = |v|, the turning region itself included);
- 300 with |v| log-uniform over [300, 1e3] and x log-uniform over [3e4, 100 |v|]
  (where CF1 would need over 3e4 steps).

mpmath's ``besselj`` (hypergeometric series at up to 2e5 bits) is given 3 s a point;
the points it does not finish in time are dropped (the count is printed).
"""

from __future__ import annotations

import pathlib
import signal

import mpmath as mp
import numpy as np

from tests.numerics.make_bessel_debye_reference import _alarm, _Slow
from tests.numerics.make_bessel_debye_reference import _orders as _positive_orders

mp.mp.dps = 30
OUT = pathlib.Path(__file__).with_name("data") / "jv_debye_mpmath.npz"


def _orders(rng, lo, hi, m):
    """``make_bessel_debye_reference``'s orders (a quarter integers, a quarter
    half-integers), a third of them negated."""
    nu = _positive_orders(rng, lo, hi, m)
    return np.where(rng.random(m) < 1 / 3, -nu, nu)


def points(rng) -> tuple[np.ndarray, np.ndarray]:
    v1 = _orders(rng, 1e3, 1.2e4, 900)
    x1 = np.abs(v1) * np.exp(rng.normal(0, 0.4, v1.size))
    v2 = _orders(rng, 300, 1e3, 300)
    x2 = np.exp(rng.uniform(np.log(3e4), np.log(100 * np.abs(v2))))
    return np.concatenate([v1, v2]), np.concatenate([x1, x2])


def reference(v: float, x: float) -> float:
    """J_v(x) rounded to float64 (J_-n = (-1)^n J_n for integer n)."""
    if v == int(v) and v < 0:
        return float((-1) ** int(-v) * mp.besselj(int(-v), mp.mpf(x), maxprec=200000, maxterms=10**6))
    return float(mp.besselj(mp.mpf(v), mp.mpf(x), maxprec=200000, maxterms=10**6))


def reference_points(v, x, seconds) -> tuple[np.ndarray, np.ndarray]:
    """``(keep, jv)``: ``reference`` at each (v, x) that mpmath finishes
    within ``seconds(v)`` seconds (the others are left out: ``keep`` False)."""
    signal.signal(signal.SIGALRM, _alarm)
    keep, ref = [], []
    for vi, xi in zip(v, x):
        signal.alarm(seconds(vi))
        try:
            value = reference(vi, xi)
            signal.alarm(0)
        except (_Slow, mp.libmp.NoConvergence, ValueError):
            signal.alarm(0)
            keep.append(False)
            continue
        keep.append(True)
        ref.append(value)
    return np.array(keep), np.array(ref)


def main() -> None:
    rng = np.random.default_rng(20261129)
    v, x = points(rng)
    keep, ref = reference_points(v, x, lambda _: 3)
    np.savez_compressed(OUT, v=v[keep], x=x[keep], jv=ref)
    print(f"{keep.sum()} of {len(v)} points stored in {OUT}")


if __name__ == "__main__":
    main()
