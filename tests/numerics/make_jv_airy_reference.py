"""Generate ``data/jv_airy_mpmath.npz``: mpmath references (30 digits, rounded to
float64) of ``jv(v, x)`` in the turning band ``|x - |v|| < 20 |v|^(1/3)`` at large
orders, where ``backends/onnx/rules/bessel_jv_f64.py`` takes the uniform Airy-type
expansion (``airy_band``); ``tests/numerics/test_bessel_jv_airy.py`` reads them. Run
from the worktree root (a few minutes)::

    PYTHONPATH=. python tests/numerics/make_jv_airy_reference.py

300 candidate pairs with |v| log-uniform over [1e3, 3e4] and 12 over [4e4, 1e5] (a
third of the orders negative, a quarter integers, a quarter half-integers),
``x = |v| + u 20 |v|^(1/3)``, u uniform over (-1, 1). mpmath's ``besselj``
(hypergeometric series at up to 2e5 bits; ~3 s a point at 3e4, ~40 s at 1e5) is given
5 s a point below 3e4 and 90 s above; the points it does not finish in time are dropped
(the count is printed).
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np

from tests.numerics.make_jv_debye_reference import _orders, reference_points

OUT = pathlib.Path(__file__).with_name("data") / "jv_airy_mpmath.npz"


def points(rng) -> tuple[np.ndarray, np.ndarray]:
    v = np.concatenate([_orders(rng, 1e3, 3e4, 300), _orders(rng, 4e4, 1e5, 12)])
    nu = np.abs(v)
    x = nu + rng.uniform(-1, 1, v.size) * 20 * nu ** (1 / 3)
    return v, x


def main() -> None:
    mp.mp.dps = 30
    rng = np.random.default_rng(20261130)
    v, x = points(rng)
    keep, ref = reference_points(v, x, lambda vi: 5 if abs(vi) <= 3e4 else 90)
    np.savez_compressed(OUT, v=v[keep], x=x[keep], jv=ref)
    print(f"{keep.sum()} of {len(v)} points stored in {OUT}")


if __name__ == "__main__":
    main()
