"""Special functions: the gamma family, the error-function family, modified
Bessel functions of order 0 and 1, Bessel functions J0 and J1, and ``atan2``. All are elementwise on
floats and broadcast like NumPy.

The reference semantics are ``scipy.special`` (``np.arctan2`` for
``atan2``), which PyTensor's scalar ops call in their ``impl``; where SciPy's
value at an infinity is not the mathematical limit the IR op takes the limit
and says so:

* ``i0(+-inf) = +inf`` and ``i1(+-inf) = +-inf`` (SciPy 1.17 returns NaN:
  ``exp(inf) * c / sqrt(inf)``);
* ``i2e(+-inf) = 0`` (``ive(2, x)``; SciPy returns NaN);
* ``j0(+-inf) = j1(+-inf) = 0`` (the C library's ``j0``/``j1``, which
  PyTensor's C backend calls; SciPy 1.17 returns NaN);
* ``jv(v, +-inf) = 0`` for finite v (the limit; SciPy returns NaN);
* ``gammaln(-inf) = +inf`` (C's ``lgamma``, which PyTensor's C and Numba
  backends call; SciPy returns -inf).

``gammainc``/``gammaincc`` (binary, broadcasting) are SciPy's everywhere it
converges (``backends/onnx/rules/incgamma_f64.py`` gives the methods and the
measured bounds; Temme's expansion for a > 20 with |x - a| < 0.3 a, so a up to 1e300).
``owens_t`` (binary, broadcasting) is SciPy's Owen's T function to the
bound of ``backends/onnx/rules/owens_t_f64.py`` (Patefield & Tandy).
``betainc`` (ternary, broadcasting) is SciPy's I_x(a, b) to the bound of
``backends/onnx/rules/incbeta_f64.py`` (Cephes ``incbet``); ``betaincinv``
(ternary) is its inverse in x (``backends/onnx/rules/incbetainv_f64.py``;
SciPy, the interpreter's reference here, is NaN or off at shapes past
~1e16, where the emitted form follows mpmath).
``hyp2f1`` (four arguments, broadcasting) is SciPy's real 2F1(a, b; c; z)
by Cephes ``hyp2f1.c`` (``backends/onnx/rules/hyp2f1_f64.py``: inf for
z > 1 unless a polynomial; its error is SciPy's, ``docs/numerics.md``).
``gammaincinv``/``gammainccinv`` (binary, broadcasting) are SciPy's inverses
in x of P and Q (``backends/onnx/rules/incinv_f64.py``), NaN where SciPy
returns a number off its domain (``_gamma_inverse``).

Poles follow SciPy: ``gammaln`` is +inf at 0 and at the negative integers;
``gamma`` is +-inf at +-0 and NaN at the negative integers; ``psi`` is -inf
at +0, +inf at -0 and NaN at the negative integers; ``trigamma`` is +inf at
0 and at the negative integers.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.special as sp
from numpy.polynomial import polynomial as P

from ir.ops.common import broadcast_shapes, check_dtype, same_dtype
from ir.opdef import BROADCASTING, ELEMENTWISE, TOTAL, Attr, OpDef, register
from ir.types import TensorType


def _limit_inf(fn, odd: bool):
    """``fn`` with ``+inf`` at ``+inf`` and (``odd``: ``-inf``, else ``+inf``) at ``-inf``."""
    def wrapped(x):
        with np.errstate(all="ignore"):
            y = np.asarray(fn(x), dtype=x.dtype)
        return np.where(np.isinf(x), np.where(x < 0, -np.inf if odd else np.inf, np.inf), y).astype(x.dtype)
    return wrapped


def _in_dtype(fn):
    """``fn`` computed in float64 and rounded to the input's dtype (SciPy's float32
    loops round the same float64 results, except ``gammaln``'s float32 loop, which
    is already float64 inside)."""
    def wrapped(x):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x.astype(np.float64))).astype(x.dtype)
    return wrapped


def _in_dtype2(fn):
    """``fn`` of several arguments computed in float64 and rounded to the first input's dtype."""
    def wrapped(*args):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*(v.astype(np.float64) for v in args))).astype(args[0].dtype)
    return wrapped


UNARY_SPECIAL = {
    "gammaln": _limit_inf(sp.gammaln, odd=False), "gamma": sp.gamma, "psi": sp.psi, "trigamma": lambda x: sp.polygamma(1, x),
    "erfc": sp.erfc, "erfcx": sp.erfcx, "erfinv": sp.erfinv, "erfcinv": sp.erfcinv,
    "i0": _limit_inf(sp.i0, odd=False), "i1": _limit_inf(sp.i1, odd=True), "i0e": sp.i0e, "i1e": sp.i1e,
    "i2e": lambda x: np.where(np.isinf(x), 0.0, sp.ive(2, x)),
    "j0": lambda x: np.where(np.isinf(x), 0.0, sp.j0(x)), "j1": lambda x: np.where(np.isinf(x), 0.0, sp.j1(x)),
}


def _unary(name: str, fn) -> None:
    def infer(types, attrs, consts):
        check_dtype(types[0], "f", name)
        return [types[0]]

    evaluate_fn = _in_dtype(fn)
    register(OpDef(name, infer, lambda args, attrs: [evaluate_fn(args[0])], 1, traits={ELEMENTWISE, TOTAL},
                   doc=f"scipy.special.{name} elementwise (see ir/ops/special.py for limits)"))


for _name, _fn in UNARY_SPECIAL.items():
    _unary(_name, _fn)


def _atan2_infer(types, attrs, consts):
    same_dtype(types, "atan2")
    check_dtype(types[0], "f", "atan2")
    return [TensorType(types[0].dtype, broadcast_shapes([t.shape for t in types], "atan2"))]


def _binary_special_infer(name):
    def infer(types, attrs, consts):
        same_dtype(types, name)
        check_dtype(types[0], "f", name)
        return [TensorType(types[0].dtype, broadcast_shapes([t.shape for t in types], name))]
    return infer


# Regularized incomplete gamma functions P(a, x) and Q(a, x), SciPy's values everywhere
# (NaN for a < 0, x < 0; see backends/onnx/rules/incgamma_f64.py for the special points).
BINARY_SPECIAL = {"gammainc": sp.gammainc, "gammaincc": sp.gammaincc}
# Owen's T function T(h, a): SciPy's values everywhere, including T(h, +-inf) = +-Q(|h|)/2
# (backends/onnx/rules/owens_t_f64.py).
BINARY_SPECIAL["owens_t"] = sp.owens_t


def _gamma_inverse(fn):
    """SciPy's inverse incomplete gamma function ``fn``, NaN where SciPy 1.17
    returns a number off its own domain: y outside [0, 1] (``gammaincinv(1e-300,
    -0.1)`` is 0), and 0 < y < 1 at a = 0 or subnormal a (``gammainccinv(0,
    1e-300)`` is 0; P(0, x) = 1 for every x > 0). At a normal a > 0 it is SciPy's."""
    def inverse(a, y):
        with np.errstate(all="ignore"):
            x = np.asarray(fn(a, y), dtype=np.float64)
        inner = (y > 0) & (y < 1)
        return np.where((y < 0) | (y > 1) | (inner & (a < np.finfo(np.float64).tiny)), np.nan, x)
    return inverse


# Inverses of P and Q in their second argument (backends/onnx/rules/incinv_f64.py).
BINARY_SPECIAL |= {"gammaincinv": _gamma_inverse(sp.gammaincinv), "gammainccinv": _gamma_inverse(sp.gammainccinv)}

# Regularized incomplete beta function I_x(a, b): SciPy's values everywhere (NaN outside
# a, b >= 0, 0 <= x <= 1; see backends/onnx/rules/incbeta_f64.py).
TERNARY_SPECIAL = {"betainc": sp.betainc}
# Its inverse in x (backends/onnx/rules/incbetainv_f64.py): SciPy's, which returns the smallest normal
# float (2.2e-308) where the root is below it; the op's value there is the root rounded (subnormal or 0).
TERNARY_SPECIAL["betaincinv"] = sp.betaincinv


def _ive_reference(v, x):
    """scipy.special.ive with the limit 0 at x = +-inf (SciPy: NaN for some orders)."""
    y = sp.ive(v, x)
    limit_ok = np.isinf(x) & ~np.isnan(v) & ~np.isinf(v) & ((x > 0) | (np.floor(v) == v))
    return np.where(limit_ok, 0.0, y)


def _iv_reference(v, x):
    """scipy.special.iv with the limits +inf at +inf and (-1)^v inf at -inf for integer v, and
    NaN at x = 0 for a negative non-integer v, as ``ive`` there (SciPy's iv gives +inf, whose sign
    is wrong for some orders: I_-1.5(x) tends to -inf as x -> 0+)."""
    y = np.where((x == 0) & (v < 0) & (np.floor(v) != v), np.nan, sp.iv(v, x))
    limit_ok = np.isinf(x) & ~np.isnan(v) & ~np.isinf(v) & ((x > 0) | (np.floor(v) == v))
    odd = np.floor(v) == v
    odd &= np.mod(np.where(odd, v, 0.0), 2.0) == 1.0
    return np.where(limit_ok, np.where((x < 0) & odd, -np.inf, np.inf), y)


# Modified Bessel function of the first kind I_v(x) (scaled by exp(-|x|): ive) of any real order v:
# SciPy's (AMOS) values, with the limits at x = +-inf (backends/onnx/rules/bessel_ik_f64.py).
BINARY_SPECIAL |= {"ive": _ive_reference, "iv": _iv_reference,
                   "kve": lambda v, x: np.where(np.isnan(v), np.nan,  # SciPy: inf at x = 0 for a NaN order
                                                np.where((x == np.inf) & np.isfinite(v), 0.0, sp.kve(v, x)))}

# Bessel function of the first kind J_v(x) of any real order: SciPy's (AMOS) values, with the
# limit 0 at x = +-inf (SciPy: NaN; backends/onnx/rules/bessel_jv_f64.py).
BINARY_SPECIAL |= {"jv": lambda v, x: np.where(np.isinf(x) & np.isfinite(v) & ((x > 0) | (np.floor(v) == v)),
                                                0.0, sp.jv(v, x))}

for _name, _fn in (BINARY_SPECIAL | TERNARY_SPECIAL).items():
    register(OpDef(_name, _binary_special_infer(_name),
                   (lambda fn: lambda args, attrs: [_in_dtype2(fn)(*args)])(_fn), 3 if _name in TERNARY_SPECIAL else 2,
                   traits={ELEMENTWISE, BROADCASTING, TOTAL},
                   doc=f"scipy.special.{_name} with broadcasting (PyTensor {_name})"))


# Gauss hypergeometric function 2F1(a, b; c; x), real arguments: SciPy's values (Cephes hyp2f1.c;
# inf for x > 1 unless a polynomial; backends/onnx/rules/hyp2f1_f64.py states what it leaves out).
register(OpDef("hyp2f1", _binary_special_infer("hyp2f1"), lambda args, attrs: [_in_dtype2(sp.hyp2f1)(*args)], 4,
               traits={ELEMENTWISE, BROADCASTING, TOTAL}, doc="scipy.special.hyp2f1 with broadcasting (PyTensor Hyp2F1)"))


def _polygamma_infer(types, attrs, consts):
    check_dtype(types[0], "f", "polygamma")
    return [types[0]]


@functools.lru_cache(maxsize=None)
def cot_derivative(n: int) -> np.ndarray:
    """Coefficients (lowest power first) of ``Q_n`` with
    ``d^n/dx^n cot(pi x) = pi^n Q_n(cot(pi x))``: ``Q_0(t) = t``,
    ``Q_(k+1)(t) = -(1 + t^2) Q_k'(t)``."""
    q = np.array([0.0, 1.0])
    for _ in range(n):
        q = -P.polymul([1.0, 0.0, 1.0], P.polyder(q))
    return q


def _sinpi(x: np.ndarray) -> np.ndarray:
    """sin(pi x) with an exact reduction to [0, 1/2] (exact 0 at the integers)."""
    r = x - 2.0 * np.round(x / 2.0)  # exact, in [-1, 1]
    a = np.abs(r)
    b = np.minimum(a, 1.0 - a)  # sin(pi a) = sin(pi b)
    return np.sign(r) * np.where(b <= 0.25, np.sin(np.pi * b), np.cos(np.pi * (0.5 - b)))


def _cospi(x: np.ndarray) -> np.ndarray:
    """cos(pi x) with an exact reduction (exact 0 at the half-integers)."""
    return _sinpi(0.5 - np.abs(x - 2.0 * np.round(x / 2.0)))  # cos(pi r) = sin(pi (1/2 - |r|)); exact


def polygamma_reference(n: int, x: np.ndarray) -> np.ndarray:
    """``scipy.special.polygamma(n, x)`` in float64, except at negative
    non-integers, where SciPy's direct Hurwitz sum cancels (n = 30 at
    x = -2.5 is 1e10 times too large) and the reflection formula
    ``(-1)^n psi^(n)(1-x) - pi^(n+1) Q_n(cot(pi x))`` (DLMF 5.15.6) is used
    with SciPy's value at 1 - x > 1 (cot from an exact reduction of x)."""
    with np.errstate(all="ignore"):
        y = np.asarray(sp.polygamma(n, x), dtype=np.float64)
        neg = (x < 0) & (np.floor(x) != x) & np.isfinite(x)
        if neg.any():
            v = x[neg]
            t = _cospi(v) / _sinpi(v)
            y[neg] = (-1.0) ** n * sp.polygamma(n, 1.0 - v) - np.pi ** (n + 1) * P.polyval(t, cot_derivative(n))
    return y


def _polygamma_eval(args, attrs):
    return [_in_dtype(lambda x: polygamma_reference(attrs["n"], np.atleast_1d(x)).reshape(x.shape))(args[0])]


# psi^(n)(x) for a constant order n >= 2 (0 and 1 are psi and trigamma): SciPy's values, which are
# (-1)^(n+1) inf at +-0, the negative integers and -inf (backends/onnx/rules/polygamma_f64.py).
register(OpDef("polygamma", _polygamma_infer, _polygamma_eval, 1, attrs={"n": Attr("int")},
               traits={ELEMENTWISE, TOTAL}, doc="scipy.special.polygamma(n, x) elementwise, n >= 2 (PyTensor PolyGamma)"))


def polygamma_order_reference(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``polygamma(n, x)`` (float64) for a run-time order n broadcast with x:
    NaN where n is negative, not an integer or NaN, ``scipy.special.psi`` at
    n = 0, ``polygamma_reference`` (SciPy's values, the reflection formula
    at negative non-integers) at n >= 1. Beyond n = 170, n! overflows
    float64: SciPy's ``(-1)^(n+1) inf`` (NaN where zeta(n+1, x) underflows)."""
    n, x = np.broadcast_arrays(np.asarray(n, np.float64), np.asarray(x, np.float64))
    out = np.full(x.shape, np.nan)
    with np.errstate(all="ignore"):
        for order in np.unique(n[(n >= 0) & (np.floor(n) == n)]):
            pick = n == order
            if order == 0:
                out[pick] = sp.psi(x[pick])
            elif order <= 170:
                out[pick] = polygamma_reference(int(order), x[pick])
            else:
                out[pick] = sp.polygamma(order, x[pick])
    return out


# psi^(n)(x) with the order n a tensor broadcast with x (PyTensor PolyGamma of a run-time order):
# backends/onnx/rules/polygamma_order_f64.py.
register(OpDef("polygamma_order", _binary_special_infer("polygamma_order"),
               lambda args, attrs: [polygamma_order_reference(*args).astype(args[1].dtype)], 2,
               traits={ELEMENTWISE, BROADCASTING, TOTAL},
               doc="scipy.special.polygamma(n, x) with a tensor order n, broadcasting (PyTensor PolyGamma)"))


register(OpDef("atan2", _atan2_infer, lambda args, attrs: [np.arctan2(*args).astype(args[0].dtype)], 2,
               traits={ELEMENTWISE, BROADCASTING, TOTAL}, doc="np.arctan2(y, x) with broadcasting (PyTensor ArcTan2)"))
