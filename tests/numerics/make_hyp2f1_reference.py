"""Generate ``data/hyp2f1_mpmath.npz``: 10,000+ points (a, b, c, z) over the
real domain of the Gauss hypergeometric function 2F1(a, b; c; z) (z <= 1),
with mpmath's value (``tests/numerics/test_hyp2f1.py`` reads it). Run from
the worktree root::

    python tests/numerics/make_hyp2f1_reference.py

mpmath's ``hyp2f1`` sums the series (and its transformations) at the
working precision, where they cancel as in double precision: each value is
computed at 50 and at 80 digits and kept only where the two agree to 1e-25
relative (recomputed at 160 digits otherwise, dropped if that still
disagrees), so the stored value is correct to far below float64's rounding.
A second set of 2,100 points with float32-representable arguments (``*32``
arrays) serves the float32 test.
"""

from __future__ import annotations

import pathlib

import mpmath as mp
import numpy as np

OUT = pathlib.Path(__file__).with_name("data") / "hyp2f1_mpmath.npz"
REGIONS = ("small", "near_half", "near_0.9", "near_one", "minus_one", "negative", "large_negative")


def _parameters(rng, n):
    """a, b, c over [-30, 30]: continuous, integers, near-integers (1e-9 off), and c - a - b an
    integer or near one (the degenerate transformations)."""
    def draw():
        v = rng.uniform(-30, 30, n)
        kind = rng.integers(0, 4, n)
        v = np.where(kind == 1, np.round(v), v)
        v = np.where(kind == 2, np.round(v) + rng.choice([-1, 1], n) * 10 ** rng.uniform(-10, -6, n), v)
        v = np.where(kind == 3, rng.uniform(-5, 5, n), v)  # small parameters, the common case
        return v
    a, b, c = draw(), draw(), draw()
    tie = rng.uniform(size=n)
    m = rng.integers(-4, 6, n) + np.where(tie < 0.15, rng.choice([-1, 1], n) * 10 ** rng.uniform(-10, -5, n), 0.0)
    c = np.where(tie < 0.3, a + b + m, c)
    return a, b, c


def _z(rng, region, n):
    if region == "small":
        return rng.uniform(-0.5, 0.5, n)
    if region == "near_half":
        return rng.choice([-0.5, 0.5], n) + rng.uniform(-0.02, 0.02, n)
    if region == "near_0.9":
        return 0.9 + rng.uniform(-0.02, 0.02, n)
    if region == "near_one":
        return 1 - 10 ** rng.uniform(-12, -1, n)
    if region == "minus_one":
        return -1 + rng.uniform(-0.1, 0.1, n)
    if region == "negative":
        return -10 ** rng.uniform(0, np.log10(2.5), n)
    return -10 ** rng.uniform(np.log10(2), 4, n)


def _value(a, b, c, z, dps):
    with mp.workdps(dps):
        return mp.hyp2f1(mp.mpf(a), mp.mpf(b), mp.mpf(c), mp.mpf(z), maxterms=10 ** 6)


def reference(a, b, c, z):
    """mpmath's 2F1 correct to 1e-25 relative, or None (no agreement, or no finite value)."""
    try:
        lo, hi = _value(a, b, c, z, 50), _value(a, b, c, z, 80)
        if abs(hi - lo) > 1e-25 * abs(hi):
            lo, hi = hi, _value(a, b, c, z, 160)
            if abs(hi - lo) > 1e-25 * abs(hi):
                return None
    except (ZeroDivisionError, ValueError, mp.libmp.NoConvergence):
        return None
    if not isinstance(hi, mp.mpf):
        return None
    return float(hi)


def _rows(rng, per_region, dtype):
    rows = []
    for r, region in enumerate(REGIONS):
        a, b, c = (v.astype(dtype).astype(np.float64) for v in _parameters(rng, per_region))
        z = _z(rng, region, per_region).astype(dtype).astype(np.float64)
        for i in range(per_region):
            v = reference(a[i], b[i], c[i], z[i])
            if v is not None and np.isfinite(v):
                rows.append((a[i], b[i], c[i], z[i], v, r))
    return (np.array(v) for v in zip(*rows))


def main(per_region: int = 1700, seed: int = 2602):
    rng = np.random.default_rng(seed)
    a, b, c, z, f, region = _rows(rng, per_region, np.float64)
    a32, b32, c32, z32, f32, region32 = _rows(rng, 300, np.float32)
    np.savez_compressed(OUT, a=a, b=b, c=c, z=z, f=f, region=region.astype(np.int8), regions=np.array(REGIONS),
                        a32=a32, b32=b32, c32=c32, z32=z32, f32=f32, region32=region32.astype(np.int8))
    print(f"{len(f)} points written to {OUT}")


if __name__ == "__main__":
    main()
