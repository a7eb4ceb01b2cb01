"""Generate ``data/bessel_debye_mpmath.npz``: mpmath references (30 digits,
rounded to float64) of ``ive(v, x)`` and ``kve(|v|, x)`` at large orders,
where ``backends/onnx/rules/bessel_debye_f64.py`` evaluates them;
``tests/numerics/test_bessel_debye.py`` reads them. Run from the worktree
root (a few minutes)::

    PYTHONPATH=. python tests/numerics/make_bessel_debye_reference.py

4,000 float64 pairs (v, x), a third of the orders negative, a quarter of
them integers and a quarter half-integers:

- 2,500 with |v| log-uniform over [50, 3000] and x around the transition
  x = |v| (``|v| exp(N(0, 0.7))``) or log-uniform over (1, 2e4): mpmath's
  own ``besseli``/``besselk`` at the positive order (its 0F1 series needs ~x
  terms), negative non-integer orders by the reflection I_-nu = I_nu +
  (2/pi) sin(nu pi) K_nu at 50 digits (mpmath's ``besseli`` of a negative
  order cancels, and at 30 digits it was off, sign included, at some of
  them); a point whose reference takes over 2 s or that mpmath gives up on
  is dropped;
- 1,500 with |v| log-uniform over [1e3, 1e5] and x log-uniform over
  [|v|, |v|^2 / 10] (the values are normal floats to x ~ |v|^2 / 1400 and
  beyond), where mpmath's functions take minutes a point: the same
  expansions evaluated in mpmath with 30 terms (U_k from
  ``bessel_debye_f64.debye_polynomials``, checked against DLMF there) at 40
  digits, so the float64 evaluation (the exponent, the sums) is what is
  measured, and the truncation after 11 terms (< 1e-30 relative there).
"""

from __future__ import annotations

import pathlib
import signal

import mpmath as mp
import numpy as np

from backends.onnx.rules.bessel_debye_f64 import debye_polynomials

mp.mp.dps = 30
OUT = pathlib.Path(__file__).with_name("data") / "bessel_debye_mpmath.npz"


class _Slow(Exception):
    pass


def _alarm(*_):
    raise _Slow


def _orders(rng, lo, hi, m):
    nu = np.exp(rng.uniform(np.log(lo), np.log(hi), m))
    nu[: m // 4] = np.round(nu[: m // 4])
    nu[m // 4: m // 2] = np.round(nu[m // 4: m // 2]) + 0.5
    return nu


def mpmath_points(rng) -> tuple[np.ndarray, np.ndarray]:
    m = 2500
    nu = _orders(rng, 50, 3000, m)
    x = np.exp(rng.uniform(0, np.log(2e4), m))
    near = rng.random(m) < 0.5
    x[near] = np.minimum(nu[near] * np.exp(rng.normal(0, 0.7, near.sum())), 2e4)
    return np.where(rng.random(m) < 1 / 3, -nu, nu), x


def expansion_points(rng) -> tuple[np.ndarray, np.ndarray]:
    m = 1500
    nu = _orders(rng, 1e3, 1e5, m)
    x = np.exp(rng.uniform(np.log(nu), np.log(nu**2 / 10)))
    return np.where(rng.random(m) < 1 / 3, -nu, nu), x


U = [[mp.mpf(c.numerator) / c.denominator for c in u] for u in debye_polynomials(30)]


def debye(v, x) -> tuple:
    """(ive(v, x), kve(|v|, x)) by DLMF 10.41.3-4 (and 10.27.2 for v < 0) in mpmath."""
    nu, x = abs(mp.mpf(v)), mp.mpf(x)
    r = mp.sqrt(nu * nu + x * x)
    p = nu / r
    exponent = nu * nu / (r + x) - nu * mp.asinh(nu / x)
    terms = [mp.polyval(u[::-1], p) / nu**kk for kk, u in enumerate(U)]
    plus, minus = mp.fsum(terms), mp.fsum(t * (-1) ** kk for kk, t in enumerate(terms))
    kve = mp.sqrt(mp.pi / (2 * r)) * mp.exp(-exponent) * minus
    ive = mp.exp(exponent) / mp.sqrt(2 * mp.pi * r) * plus
    if v < 0 and nu != mp.floor(nu):
        ive += 2 / mp.pi * mp.sinpi(nu) * kve * mp.exp(-2 * x)
    return ive, kve


def main() -> None:
    rng = np.random.default_rng(20261128)
    v, x = mpmath_points(rng)
    signal.signal(signal.SIGALRM, _alarm)
    keep, ive, kve = [], [], []
    for vi, xi in zip(v, x):
        signal.alarm(2)
        try:
            k_val = mp.besselk(abs(vi), xi, maxterms=10**6) * mp.exp(xi)
            i_val = mp.besseli(abs(vi), xi, maxterms=10**6) * mp.exp(-xi)
            if vi < 0 and vi != np.round(vi):  # DLMF 10.27.2 at 50 digits: mpmath's besseli of a
                with mp.workdps(50):  # negative order cancels, and at 30 digits is off (sign included)
                    i_val += 2 / mp.pi * mp.sinpi(abs(mp.mpf(vi))) * k_val * mp.exp(-2 * mp.mpf(xi))
            signal.alarm(0)
        except (_Slow, mp.libmp.NoConvergence, ValueError):  # ValueError: hypercomb gave up on cancellation
            signal.alarm(0)
            keep.append(False)
            continue
        keep.append(True)
        ive.append(float(i_val))
        kve.append(float(k_val))
    keep = np.array(keep)
    v2, x2 = expansion_points(rng)
    with mp.workdps(40):
        pairs = [debye(vi, xi) for vi, xi in zip(v2, x2)]
    np.savez_compressed(OUT, v=v[keep], x=x[keep], ive=np.array(ive), kve=np.array(kve),
                        big_v=v2, big_x=x2, big_ive=np.array([float(p[0]) for p in pairs]),
                        big_kve=np.array([float(p[1]) for p in pairs]))
    print(f"{keep.sum()} of {len(v)} mpmath points and {len(v2)} expansion points stored in {OUT}")


if __name__ == "__main__":
    main()
