"""Derivatives of order 1-3 through scans: ``pytensor.grad`` of a scan is a
backward scan with mit-mot outputs, and each further order a scan whose
mit-mots read and write taps on both sides of the current step
(``rules/scan.py: _MitMot``; a wrong starting position made every second
derivative of a scan of more than one step wrong, issue 31).

Each graph holds a scan's result and its first three derivatives. PyTensor's
Python implementation gives the reference, and a truncated Taylor series
(``Jet``) the analytic value; onnxruntime and the IR interpreter must match
PyTensor to 1e-12 from the raw graph and from a function compiled with the
default mode's rewrites, with the default pipeline (which unrolls these
static scans into straight-line code: ``scan-unroll``) and with ``passes=[]``
(the ``Loop`` form). PyTensor 2.38's ``Scan.L_op`` builds wrong third
derivatives of scans of two or more steps and wrong second derivatives of
mit-sot scans (PyTensor 3 builds right ones; PyTensor's own
``check_higher_order_derivative`` leaves the third unchecked): the model
follows the graph it is given, so there the analytic check stops at order 2
(one state) or 1 (the others).
"""

from __future__ import annotations

from math import factorial

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from compiler.lowering.compat import IS_PYTENSOR_3
from tests.control_flow.helpers import PY, check_scan

X = 0.95


class Jet:
    """A truncated Taylor series ``c0 + c1 e + c2 e^2 + c3 e^3`` in float64.
    Propagated through ``+``, ``-``, ``*``, integer powers, ``sin`` and
    ``cos`` from ``Jet.variable(x)`` it holds the derivatives of orders 0-3
    at ``x``: ``derivatives() = (c0, c1, 2 c2, 6 c3)`` (exact up to
    rounding: the analytic reference)."""

    def __init__(self, c):
        self.c = np.asarray(c, dtype=np.float64)

    @staticmethod
    def variable(x: float) -> "Jet":
        return Jet([x, 1.0, 0.0, 0.0])

    @staticmethod
    def of(v) -> "Jet":
        return v if isinstance(v, Jet) else Jet([float(v), 0.0, 0.0, 0.0])

    def __add__(self, other):
        return Jet(self.c + Jet.of(other).c)

    __radd__ = __add__

    def __neg__(self):
        return Jet(-self.c)

    def __sub__(self, other):
        return self + -Jet.of(other)

    def __rsub__(self, other):
        return Jet.of(other) - self

    def __mul__(self, other):
        a, b = self.c, Jet.of(other).c
        return Jet([sum(a[i] * b[k - i] for i in range(k + 1)) for k in range(4)])

    __rmul__ = __mul__

    def __pow__(self, p: int):
        out = Jet.of(1.0)
        for _ in range(p):
            out = out * self
        return out

    def _apply(self, d):
        """``f(self)`` given ``d = (f, f', f'', f''')`` at ``c0``: the Taylor series of the composition."""
        h, hk, out = Jet([0.0, *self.c[1:]]), Jet.of(1.0), Jet.of(d[0])
        for k in (1, 2, 3):
            hk = hk * h
            out = out + (d[k] / factorial(k)) * hk
        return out

    def sin(self):
        s, c = np.sin(self.c[0]), np.cos(self.c[0])
        return self._apply((s, c, -s, -c))

    def cos(self):
        s, c = np.sin(self.c[0]), np.cos(self.c[0])
        return self._apply((c, -s, -c, s))

    def derivatives(self) -> np.ndarray:
        return self.c * np.array([1.0, 1.0, 2.0, 6.0])


class JetMath:
    """``sin``/``cos`` of jets, so one step function serves ``pt`` and ``Jet``."""

    sin, cos = staticmethod(Jet.sin), staticmethod(Jet.cos)


def _grads(r, x, order: int = 3) -> list:
    """``[r, dr/dx, d2r/dx2, ...]`` up to ``order`` (``r`` and ``x`` scalars)."""
    out = [r]
    for _ in range(order):
        out.append(pytensor.grad(out[-1], x))
    return out


def _check_analytic(want, jet: Jet, what: str, orders_2_38: int, pinned_2_38: bool = False) -> None:
    """PyTensor's ``want`` (value and derivatives 1-3) against ``jet``: all
    of them in PyTensor 3; in 2.38 the first ``orders_2_38`` (value
    included), and with ``pinned_2_38`` its third derivative is not the
    analytic one."""
    exact = jet.derivatives()
    orders = 4 if IS_PYTENSOR_3 else orders_2_38
    np.testing.assert_allclose(np.array(want[:orders], dtype=np.float64), exact[:orders], rtol=1e-12, atol=1e-12,
                               err_msg=f"{what}: PyTensor against the analytic derivatives")
    if pinned_2_38 and not IS_PYTENSOR_3:
        assert not np.isclose(want[3], exact[3], rtol=1e-6), f"{what}: PyTensor 2.38's third derivative is right now"


STEPS = {"a**2": lambda a, m: a ** 2, "sin": lambda a, m: m.sin(a)}


def _sources(ns, raw: tuple, function: tuple) -> list:
    """``(n, function)`` parameters for each n in ``ns``: from the raw graph
    and from a compiled function, in the main suite at the n in ``raw`` and
    ``function``, in the slow job at the others up to 3 steps, in the
    extended job (``pytest -m extended``) beyond (PyTensor's default rewrites
    of a third-order graph of 4-6 scan steps take 10-35 s each in 2.38)."""
    def marks(n, f):
        return () if n in (function if f else raw) else pytest.mark.slow if n <= 3 or not f else pytest.mark.extended

    return [pytest.param(n, f, id=f"{n}-{'function' if f else 'raw'}", marks=marks(n, f))
            for n in ns for f in (False, True)]


@pytest.mark.parametrize("n, function", _sources(range(1, 7), raw=range(1, 7), function=(3,)))
@pytest.mark.parametrize("step", list(STEPS))
def test_derivatives_of_a_scans_last_state(step, n, function):
    """The issue's table: ``xs = scan(step, outputs_info=[x], n_steps=n)``,
    ``xs[-1]`` and its derivatives 1-3 at x = 0.95 (``a**2``: x^(2^n))."""
    f = STEPS[step]
    x = pt.dscalar("x")
    xs = pytensor.scan(lambda a: f(a, pt), outputs_info=[x], n_steps=n, mode=PY, return_updates=False)
    outputs = _grads(xs[-1], x)
    want = check_scan([x], outputs, [np.float64(X)], f"{step}, n={n}", unrolled=True, function=function)
    jet = Jet.variable(X)
    for _ in range(n):
        jet = f(jet, JetMath)
    _check_analytic([float(w) for w in want], jet, f"{step}, n={n}", orders_2_38=3, pinned_2_38=n > 1)
    if step == "a**2":
        p = 2 ** n
        np.testing.assert_allclose(float(want[2]), p * (p - 1) * X ** (p - 2), rtol=1e-12)


def _two_states(x, s, m):
    """Two coupled sit-sots and a sequence ``s`` (several mit-mot outputs)."""
    a, b = x, 0.3 * x + 0.2
    for s_t in s:
        a, b = m.sin(a) * b + s_t, a * m.cos(b) - 0.5 * s_t
    return a * b


def _mit_sot(x, s, m):
    """A mit-sot reading taps -2 and -1 (initial rows x and x/2), a sequence added."""
    rows = [x, 0.5 * x]
    for s_t in s:
        rows.append(m.sin(rows[-2]) * rows[-1] + 0.3 * rows[-2] + s_t)
    return rows[-1]


def _gap(x, s, m):
    """A mit-sot reading taps -3 and -1 (a gap), initial rows x, 0.4, x^2;
    the sum of its trace."""
    rows = [x, 0.4 + 0 * x, x * x]
    for s_t in s:
        rows.append(rows[-1] * m.cos(rows[-3]) + 0.2 * s_t)
    return sum(rows[3:])


def _parameter(x, s, m):
    """``h_t = sin(w h_{t-1} + s_t)`` differentiated in the non-sequence ``w = x``."""
    h = 0.4 + 0 * x
    for s_t in s:
        h = m.sin(x * h + s_t)
    return h


def _scan_of(model: str, x, s):
    """The scan form of ``model`` (same arithmetic as the Python loop)."""
    if model == "two states":
        a, b = pytensor.scan(lambda s_t, a, b: (pt.sin(a) * b + s_t, a * pt.cos(b) - 0.5 * s_t), sequences=[s],
                             outputs_info=[x, 0.3 * x + 0.2], mode=PY, return_updates=False)
        return a[-1] * b[-1]
    if model == "mit-sot -2,-1":
        ys = pytensor.scan(lambda s_t, y2, y1: pt.sin(y2) * y1 + 0.3 * y2 + s_t, sequences=[s],
                           outputs_info=[{"initial": pt.stack([x, 0.5 * x]), "taps": [-2, -1]}], mode=PY,
                           return_updates=False)
        return ys[-1]
    if model == "mit-sot -3,-1":
        ys = pytensor.scan(lambda s_t, y3, y1: y1 * pt.cos(y3) + 0.2 * s_t, sequences=[s],
                           outputs_info=[{"initial": pt.stack([x, pt.constant(0.4, dtype="float64"), x * x]),
                                          "taps": [-3, -1]}], mode=PY, return_updates=False)
        return ys.sum()
    hs = pytensor.scan(lambda s_t, h, w: pt.sin(w * h + s_t), sequences=[s], outputs_info=[pt.constant(0.4)],
                       non_sequences=[x], mode=PY, return_updates=False)
    return hs[-1]


MODELS = {"two states": _two_states, "mit-sot -2,-1": _mit_sot, "mit-sot -3,-1": _gap, "non-sequence": _parameter}


@pytest.mark.parametrize("n, function", _sources((1, 2, 5), raw=(2,), function=()))
@pytest.mark.parametrize("model", list(MODELS))
def test_derivatives_of_scans_with_states_sequences_and_parameters(model, n, function):
    """Derivatives 1-3 of scans with two states, mit-sot taps with and
    without a gap, and a non-sequence, each reading a sequence of ``n``
    steps (static length: the default pipeline unrolls them)."""
    x = pt.dscalar("x")
    s = pt.dvector("s", shape=(n,))
    values = [np.float64(X), np.linspace(-0.4, 0.5, n)]
    want = check_scan([x, s], _grads(_scan_of(model, x, s), x), values, f"{model}, n={n}", function=function,
                      unrolled=True)
    jet = MODELS[model](Jet.variable(X), values[1], JetMath)
    _check_analytic([float(w) for w in want], jet, f"{model}, n={n}", orders_2_38=2)


def test_symbolic_step_count_keeps_the_loop():
    """With a symbolic ``n_steps`` every scan stays a ``Loop`` (also in the
    default pipeline): derivatives 1-3 at n = 0, 1, 4 and 7 from one model."""
    x, k = pt.dscalar("x"), pt.lscalar("k")
    xs = pytensor.scan(lambda a: pt.sin(a) * a, outputs_info=[x], n_steps=k, mode=PY, return_updates=False)
    outputs = _grads(pt.concatenate([x[None], xs])[-1], x)  # x itself after no step
    m = compile_to_onnx([x, k], outputs=outputs)
    assert m.ir.contains_op("loop")
    reference = pytensor.function([x, k], outputs, mode=PY)
    for n in (0, 1, 4, 7):
        want = reference(X, n)
        jet = Jet.variable(X)
        for _ in range(n):
            jet = jet.sin() * jet
        _check_analytic([float(w) for w in want], jet, f"n={n}", orders_2_38=3)
        for got, w in zip(m.run(np.float64(X), np.int64(n)), want):
            np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-12)


def test_higher_order_derivatives_of_the_jax_suite():
    """PyTensor's ``tests/link/jax/test_scan.py::test_higher_order_derivatives``
    (its body: ``tests/scan/test_basic.py``,
    ``ScanCompatibilityTests.check_higher_order_derivative``, v3.0.7) with
    ``mode="ONNX"`` for ``mode="JAX"``: ``xs[-1]`` of four squarings is
    x^16; the value and its first two derivatives against the formulas (the
    original's tolerance), all four against PyTensor's Python mode to 1e-12
    (the original leaves the third unchecked: "All implementations of Scan
    seem to get this one wrong")."""
    x = pt.dscalar("x")
    xs = pytensor.scan(fn=lambda xtm1: xtm1 ** 2, outputs_info=[x], n_steps=4, return_updates=False)
    r = xs[-1]
    g = pytensor.grad(r, x)
    gg = pytensor.grad(g, x)
    ggg = pytensor.grad(gg, x)
    fn = pytensor.function([x], [r, g, gg, ggg], mode="ONNX")
    x_test = np.array(0.95, dtype=x.type.dtype)
    r_res, g_res, gg_res, ggg_res = fn(x_test)
    np.testing.assert_allclose(r_res, x_test ** 16)
    np.testing.assert_allclose(g_res, 16 * x_test ** 15)
    np.testing.assert_allclose(gg_res, (16 * 15) * x_test ** 14)
    want = pytensor.function([x], [r, g, gg, ggg], mode=PY)(x_test)
    for got, w in zip((r_res, g_res, gg_res, ggg_res), want):
        np.testing.assert_allclose(got, w, rtol=1e-12)
    if IS_PYTENSOR_3:
        np.testing.assert_allclose(ggg_res, (16 * 15 * 14) * x_test ** 13, rtol=1e-12)
