"""Scan tap and buffer forms the other scan tests never built, each against
PyTensor's Python implementation (``Scan.perform``, ``pytensor/scan/op.py``)
from the raw graph and from a function compiled with the default mode's
rewrites, with the default pipeline and with ``passes=[]`` (``check_scan``):

- ``truncate_gradient``: the backward scan runs fewer steps than its
  sequence-gradient buffers have rows, which ``Scan.perform`` fills with
  zeros (``output[i - mintaps:] = 0``; wrong values or a failing Expand
  before issue 31), also in a while scan (PyTensor's
  ``check_grad_until_and_truncate_sequence_taps``);
- ``n_steps = 0`` (symbolic and constant) for sit-sot, mit-sot and nit-sot
  outputs and a gradient;
- a shared variable updated inside a scan (an untraced state);
- mit-sot taps ``-3,-2,-1`` and with gaps ``-4,-2,-1``;
- buffers built with the ``Scan`` op itself (as PyTensor's
  ``test_trace_truncation_regression_bug`` does): shorter than the trace
  (circular, rotated), longer (zero-filled; a while scan trims them), a
  nit-sot longer than its steps, and mit-mot buffers whose reads and writes
  wrap around (``(pos + t) % S`` reads, ``pos + o`` writes).
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.scan.op import Scan, ScanInfo
from pytensor.scan.utils import until

from compiler.lowering.compat import IS_PYTENSOR_3
from compiler.lowering.rules.scan import SharedStateWarning
from tests.control_flow.helpers import PY, check_scan


def _scan(*args, **kwargs):
    return pytensor.scan(*args, mode=PY, return_updates=False, **kwargs)


@pytest.mark.parametrize("truncate", [1, 3, 6])
def test_truncated_gradients(truncate):
    """An RNN of 4 steps whose gradient is truncated to ``truncate`` steps:
    the sequence gradient is zero before them; the initial state's gradient
    is zero unless the truncation reaches it."""
    x, h0, w = pt.dvector("x"), pt.dscalar("h0"), pt.dscalar("w")
    hs = _scan(lambda a, h, w: pt.tanh(a + w * h), sequences=[x], outputs_info=[h0], non_sequences=[w],
               truncate_gradient=truncate)
    loss = (hs ** 2).sum()
    want = check_scan([x, h0, w], [loss, *pytensor.grad(loss, [x, h0, w])],
                      [np.linspace(-1, 1, 4), np.float64(0.2), np.float64(0.7)], f"truncate_gradient={truncate}")
    assert not want[1][:max(4 - truncate, 0)].any() and want[1][-1] != 0
    assert (want[2] == 0) == (truncate < 4)


def test_truncated_gradient_of_a_while_scan_with_sequence_taps():
    """PyTensor's ``tests/scan/test_basic.py``,
    ``ScanCompatibilityTests.check_grad_until_and_truncate_sequence_taps``
    (v3.0.7; run by its JAX and Numba suites): taps -2 and 0 of a sequence,
    ``until``, ``truncate_gradient=3``, the gradient it computes by hand."""
    x = pt.dvector("x")
    threshold = pt.scalar(name="threshold", dtype="int64")
    r = _scan(lambda x, y, u: (x * y, until(y > u)), sequences=dict(input=x, taps=[-2, 0]), non_sequences=[threshold],
              truncate_gradient=3)
    g = pytensor.grad(r.sum(), x)
    want = check_scan([x, threshold], [r, g], [np.arange(15, dtype="float64"), np.int64(6)], "until, truncate 3")
    np.testing.assert_array_equal(want[1], [0, 0, 0, 5, 6, 10, 4, 5, 0, 0, 0, 0, 0, 0, 0])


def test_zero_steps():
    """``n_steps`` 0: a symbolic count that is 0 at run time (sit-sot and
    nit-sot traces are empty, a mit-sot's is too, the gradient is the
    seed's), and a constant 0 (the model's loop runs no iteration)."""
    v0, k = pt.dvector("v0"), pt.lscalar("k")
    ys, ns = _scan(lambda h: (h * 2, h.sum()), outputs_info=[v0, None], n_steps=k)
    taps = _scan(lambda a, b: a + b, outputs_info=[{"initial": v0, "taps": [-2, -1]}], n_steps=k)
    sines = _scan(pt.sin, outputs_info=[v0], n_steps=k)
    grad = pytensor.grad(sines.sum() + v0.sum(), v0)
    for n in (0, 3):
        values = [np.array([1.0, 2.0, 3.0]), np.int64(n)]
        want = check_scan([v0, k], [ys, ns, taps, sines], values, f"n_steps={n}")
        assert [len(w) for w in want] == [n] * 4
        # PyTensor 2.38's default rewrites make this gradient raise at n = 0 (a sequence shorter than its steps)
        want = check_scan([v0, k], [grad], values, f"gradient, n_steps={n}", function=IS_PYTENSOR_3 or n > 0)
        if n == 0:
            np.testing.assert_array_equal(want[0], np.ones(3))
    none = _scan(lambda h: h * 2, outputs_info=[v0], n_steps=0)
    check_scan([v0], [none, none.shape[0]], [np.array([1.0, 2.0])], "constant n_steps=0")


def test_a_shared_variable_updated_inside_a_scan():
    """The update a step returns for a shared variable makes it an untraced
    state: each step reads the value the previous one left; the final value
    (the update PyTensor would apply) is an output of the raw graph. The
    model cannot write it back to the variable, and warns."""
    s = pytensor.shared(np.float64(1.5), name="s")
    x = pt.dvector("x")
    out, updates = pytensor.scan(lambda a: (a * s, {s: s * 0.5 + a}), sequences=[x], mode=PY)
    with pytest.warns(SharedStateWarning, match="shared variable 's'"):
        want = check_scan([x], [out, updates[s]], [np.array([1.0, 2.0, 3.0])], "shared update")
    np.testing.assert_allclose(want[0], [1.5, 2 * 1.75, 3 * 2.875])
    np.testing.assert_allclose(want[1], 2.875 * 0.5 + 3)


@pytest.mark.parametrize("taps", [(-3, -2, -1), (-4, -2, -1)], ids=["-3,-2,-1", "gaps -4,-2,-1"])
def test_mit_sot_taps(taps):
    """A mit-sot reading three taps, consecutive or with gaps: its whole
    trace, its last row, and the gradient of its trace's sum in the initial
    rows (a mit-mot reading every tap's mirror), with a symbolic step count
    (a loop) and with 5 steps and static shapes (unrolled)."""
    v, k = pt.dvector("v"), pt.lscalar("k")
    ys = _scan(lambda a, b, c: pt.sin(a) + b * c * 0.5, outputs_info=[{"initial": v, "taps": list(taps)}], n_steps=k)
    values = [np.linspace(0.1, 0.4, -taps[0]), np.int64(5)]
    check_scan([v, k], [ys, ys[-1], pytensor.grad(ys.sum(), v)], values, f"taps {taps}")
    v = pt.dvector("v", shape=(-taps[0],))
    fixed = _scan(lambda a, b, c: pt.sin(a) + b * c * 0.5, outputs_info=[{"initial": v, "taps": list(taps)}], n_steps=5)
    check_scan([v], [fixed[-2:], pytensor.grad(fixed[-1], v)], values[:1], f"taps {taps}, 5 steps", unrolled=True)


# -- buffers built with the Scan op ------------------------------------------------------------------
def _scan_op(inner_inputs, inner_outputs, **info):
    """A ``Scan`` of the inner graph with ``ScanInfo`` fields ``info`` (others empty), run in ``PY``."""
    fields = dict(n_seqs=0, mit_mot_in_slices=(), mit_mot_out_slices=(), mit_sot_in_slices=(), sit_sot_in_slices=(),
                  n_nit_sot=0, n_untraced_sit_sot=0, n_non_seqs=0, as_while=False)
    return Scan(inner_inputs, inner_outputs, ScanInfo(**{**fields, **info}), mode=PY)


def test_a_trace_buffer_shorter_than_the_trace():
    """PyTensor's ``tests/link/jax/test_scan.py::test_trace_truncation_regression_bug``
    (v3.0.7): a sit-sot buffer of ``n_steps`` rows holds the last 7 of the
    8 rows, rotated."""
    n_steps = pt.as_tensor(7, dtype=int)
    x0 = pt.scalar("x0")
    x0_buffer = pt.empty((n_steps,))[0].set(x0)
    xtm1 = x0.type()
    scan_op = _scan_op([xtm1], [xtm1 + 1], sit_sot_in_slices=((-1,),))
    want = check_scan([x0], [scan_op(n_steps, x0_buffer)], [np.array(0, dtype=x0.dtype)], "buffer of n rows")
    np.testing.assert_array_equal(want[0], np.arange(1, 8))


@pytest.mark.parametrize("extra", [0, 3])
def test_buffers_longer_than_the_trace_are_zero_filled(extra):
    """A sit-sot buffer of ``n + 1 + extra`` rows and a nit-sot of ``n +
    extra`` rows after ``n`` steps: the trace, then zeros; a while scan that
    stops after ``i < n`` steps then drops ``n - i`` rows (``S - (n - i)``
    rows: the trace and ``extra`` zeros)."""
    x0, n = pt.dscalar("x0"), pt.lscalar("n")
    h = x0.type()
    size = n + 1 + extra
    buffer = pt.empty((size,))[0].set(x0)
    op = _scan_op([h], [h * 1.5, h - 1], sit_sot_in_slices=((-1,),), n_nit_sot=1)
    outputs = op(n, buffer, n + extra)
    want = check_scan([x0, n], outputs, [np.float64(2.0), np.int64(4)], f"extra={extra}")
    np.testing.assert_allclose(want[0], np.r_[2.0 * 1.5 ** np.arange(5), np.zeros(extra)])
    np.testing.assert_allclose(want[1], np.r_[2.0 * 1.5 ** np.arange(4) - 1, np.zeros(extra)])
    stop = _scan_op([h], [h * 1.5, h * 1.5 > 4], sit_sot_in_slices=((-1,),), as_while=True)
    want = check_scan([x0, n], [stop(n, pt.empty((size,))[0].set(x0))], [np.float64(2.0), np.int64(6)],
                      f"while, extra={extra}")
    np.testing.assert_allclose(want[0], np.r_[2.0 * 1.5 ** np.arange(3), np.zeros(extra)])


@pytest.mark.parametrize("rows, in_taps, out_taps", [
    (3, (-1, 0), (0, -1)),  # a second derivative's taps on a buffer shorter than the steps: rows wrap
    (7, (0, 2), (2,)),  # a positive tap: writes two rows ahead
    (4, (-2, 0, 1), (0, -2)),  # three in-taps on both sides, a negative write wrapping to the end
])
def test_mit_mot_buffers(rows, in_taps, out_taps):
    """Mit-mot buffers of ``rows`` rows and 5 steps built with the Scan op:
    step ``i`` reads row ``(i - min(in_taps) + t) % rows`` and writes row
    ``pos + o`` (NumPy wraps a negative row), in out-tap order, as
    ``Scan.perform`` does (``rows < 5 + span``: the rows wrap)."""
    buffer = pt.dvector("buffer")
    taps = [pt.dscalar(f"t{t}") for t in in_taps]
    total = sum((0.5 + 0.25 * j) * a for j, a in enumerate(taps))
    outs = [pt.sin(total) + taps[-1] * 0.5, total * taps[0] - 1.0][:len(out_taps)]
    op = _scan_op(taps, outs, mit_mot_in_slices=(in_taps,), mit_mot_out_slices=(out_taps,))
    n = pt.lscalar("n")
    values = [np.linspace(-0.5, 0.7, rows), np.int64(5)]
    check_scan([buffer, n], [op(n, buffer)], values, f"mit-mot {in_taps} -> {out_taps}, {rows} rows")
