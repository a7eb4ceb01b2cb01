"""Generate ``backends/onnx/rules/bessel_airy_coeffs.py``: polynomial fits, in
``t = 1 - z^2`` over ``T_LO <= t <= T_HI``, of the pieces of the uniform Airy-type
expansion of ``J_nu(nu z)`` (DLMF 10.20.4) that ``bessel_jv_f64.airy_band`` evaluates
in the turning band ``|nu z - nu| < 20 nu^(1/3)`` (``nu >= 1000``: ``|1 - z| <= 0.2``).
Run from the worktree root (~1 min)::

    python tests/numerics/make_jv_airy_coefficients.py

Derivation (mpmath at 60 digits, exact rationals for U_k, u_k, v_k):

* ``(2/3) zeta^(3/2) = atanh(s) - s`` with ``s = sqrt(1 - z^2)`` (DLMF 10.20.2: the
  even powers of s in ``log((1 + s)/z)`` cancel ``-log z``), so
  ``zeta = t H(t)``, ``H = ((3/2) G(t))^(2/3)``, ``G = sum_(k>=1) t^(k-1) / (2k+1)``:
  one power series in t for both sides of z = 1 (DLMF 10.20.3 is its continuation
  to t < 0);
* the prefactor ``(4 zeta / (1 - z^2))^(1/4) = (4 H)^(1/4)``;
* ``A_k``, ``B_k`` by DLMF 10.20.10-11 with ``p = t^(-1/2)``, ``zeta^(-3j/2) =
  t^(-3j/2) H^(-3j/2)``: each term is a Laurent series in t with integer powers;
  summed, the negative powers cancel (checked: below 1e-40) and what is left is the
  Taylor series of ``A_k(zeta(t))``, ``B_k(zeta(t))`` (U_k: DLMF 10.41.9-10;
  u_k, v_k: DLMF 9.7.2). Checked: ``A_1(0) = -1/225``, ``B_0(0) = 2^(1/3)/70``, and the
  whole expansion against mpmath's ``besselj`` at nu = 60, z = 0.8..1.2 (within 1e-13).

Each function is then fitted by ``mpmath.chebyfit`` (degree DEGREE) on [T_LO, T_HI]
from its Taylor series (radius 1; 200 terms), the fit error printed and required
below 1e-18 of the function's size.
"""

from __future__ import annotations

import pathlib
from fractions import Fraction

import mpmath as mp

mp.mp.dps = 60
N = 200  # Taylor terms
KMAX = 3  # A_0..A_3, B_0..B_2
T_LO, T_HI = -0.45, 0.40
DEGREE = 28
OUT = pathlib.Path(__file__).resolve().parents[2] / "backends" / "onnx" / "rules" / "bessel_airy_coeffs.py"


def _mul(p, q, n):
    r = [mp.mpf(0)] * n
    for i, pi in enumerate(p[:n]):
        if pi:
            for j, qj in enumerate(q[:n - i]):
                r[i + j] += pi * qj
    return r


def _power(f, alpha, n):
    """f^alpha for a series with f[0] > 0 (J. C. P. Miller's recurrence)."""
    b = [f[0] ** alpha] + [mp.mpf(0)] * (n - 1)
    for m in range(1, n):
        b[m] = sum(((alpha + 1) * j - m) * f[j] * b[m - j] for j in range(1, m + 1)) / (m * f[0])
    return b


def _mpf(q: Fraction):
    return mp.mpf(q.numerator) / q.denominator


def u_polys(kmax):
    """U_k(p) as exact coefficient lists (DLMF 10.41.10)."""
    us = [[Fraction(1)]]
    for _ in range(kmax):
        u = us[-1]
        d = [i * c for i, c in enumerate(u)][1:]  # U'
        a = [Fraction(0)] * (len(u) + 3)
        for i, c in enumerate(d):  # p^2 (1 - p^2) U' / 2
            a[i + 2] += c / 2
            a[i + 4] -= c / 2
        integrand = [Fraction(0)] * (len(u) + 2)
        for i, c in enumerate(u):  # (1 - 5 p^2) U
            integrand[i] += c
            integrand[i + 2] += -5 * c
        for i, c in enumerate(integrand):  # int_0^p / 8
            a[i + 1] += c / (8 * (i + 1))
        while a and a[-1] == 0:
            a.pop()
        us.append(a)
    return us


def uv(kmax):
    """u_k, v_k of DLMF 9.7.2."""
    u, v = [Fraction(1)], [Fraction(1)]
    for k in range(1, kmax + 1):
        u.append(u[-1] * Fraction((6 * k - 5) * (6 * k - 3) * (6 * k - 1), (2 * k - 1) * 216 * k))
        v.append(-Fraction(6 * k + 1, 6 * k - 1) * u[-1])
    return u, v


def series():
    """Taylor series in t (N terms) of H, (4H)^(1/4), A_k (k <= KMAX), B_k (k < KMAX)."""
    m = N + 6 * KMAX + 4
    g = [mp.mpf(3) / 2 / (2 * j + 3) for j in range(m)]
    h = _power(g, mp.mpf(2) / 3, m)
    us = u_polys(2 * KMAX + 1)
    u, v = uv(2 * KMAX + 1)

    def laurent(kind, kk):
        # coefficient of t^e stored at e + shift
        shift = 3 * 2 * KMAX + 4 * KMAX + 4
        out = [mp.mpf(0)] * (m + shift)
        terms = range(2 * kk + 1) if kind == "A" else range(2 * kk + 2)
        for j in terms:
            order = 2 * kk - j if kind == "A" else 2 * kk + 1 - j
            coef = _mpf(Fraction(3, 2) ** j * (v[j] if kind == "A" else u[j]))
            hp = _power(h, mp.mpf(-3 * j - (1 if kind == "B" else 0)) / 2, m)
            for i, c in enumerate(us[order]):
                if c == 0:
                    continue
                e0 = -(3 * j + i + (1 if kind == "B" else 0)) // 2
                for n, hn in enumerate(hp):
                    if n + e0 + shift < len(out):
                        out[n + e0 + shift] += coef * _mpf(c) * hn
        if kind == "B":
            out = [-x for x in out]
        assert max(abs(x) for x in out[:shift]) < mp.mpf(10) ** -40, (kind, kk)
        return out[shift:shift + N]

    result = {"H": h[:N], "PHI": _power([4 * x for x in h], mp.mpf(1) / 4, N)}
    for kk in range(KMAX + 1):
        result[f"A{kk}"] = laurent("A", kk)
    for kk in range(KMAX):
        result[f"B{kk}"] = laurent("B", kk)
    assert abs(result["A1"][0] + mp.mpf(1) / 225) < mp.mpf(10) ** -40
    assert abs(result["B0"][0] - mp.cbrt(2) / 70) < mp.mpf(10) ** -40
    return result


def check(result) -> None:
    """The whole expansion against mpmath's besselj at nu = 60 (relative error O(nu^-8))."""
    nu = mp.mpf(60)
    for z in (mp.mpf("0.8"), mp.mpf("0.97"), mp.mpf(1), mp.mpf("1.03"), mp.mpf("1.2")):
        t = 1 - z * z

        def val(name):
            return mp.polyval(result[name][::-1], t)

        arg = nu ** (mp.mpf(2) / 3) * t * val("H")
        a_sum = 1 + sum(val(f"A{j}") / nu ** (2 * j) for j in range(1, KMAX + 1))
        b_sum = sum(val(f"B{j}") / nu ** (2 * j) for j in range(KMAX))
        got = val("PHI") * (mp.airyai(arg) / mp.cbrt(nu) * a_sum + mp.airyai(arg, 1) / nu ** (mp.mpf(5) / 3) * b_sum)
        want = mp.besselj(nu, nu * z)
        print("check z =", z, mp.nstr(got / want - 1, 3))
        assert abs(got / want - 1) < mp.mpf(10) ** -13


def main() -> None:
    fits = {}
    result = series()
    check(result)
    for name, s in result.items():
        if name == "A0":
            continue

        def f(t, s=s):
            return mp.polyval(s[::-1], t)

        coeffs, err = mp.chebyfit(f, [T_LO, T_HI], DEGREE + 1, error=True)
        size = max(abs(f(mp.mpf(T_LO))), abs(f(mp.mpf(T_HI))), abs(f(0)))
        print(name, mp.nstr(err / size, 3), mp.nstr(s[0], 17))
        assert err < mp.mpf(10) ** -18 * size
        fits[name] = [float(x) for x in coeffs[::-1]]
    head = f"Polynomial fits in ``t = 1 - z^2`` over [{T_LO}, {T_HI}] (ascending powers) of the pieces of"
    lines = ['"""' + head,
             "the uniform Airy-type expansion of ``J_nu(nu z)`` (DLMF 10.20.4): ``H = zeta / t``,",
             "``PHI = (4 zeta / (1 - z^2))^(1/4)``, ``A_k(zeta)``, ``B_k(zeta)``. Generated by",
             '``tests/numerics/make_jv_airy_coefficients.py``; do not edit."""', "",
             f"T_LO, T_HI = {T_LO}, {T_HI}", ""]
    for name, cs in fits.items():
        lines.append(f"{name} = (")
        row = "   "
        for x in cs:
            item = f" {x!r},"
            if len(row) + len(item) > 118:
                lines.append(row)
                row = "   "
            row += item
        lines.append(row)
        lines.append(")")
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
