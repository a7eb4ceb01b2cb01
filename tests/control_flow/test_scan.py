"""The acceptance models (``models.py``: cumulative sum, Elman RNN, GRU,
LSTM, two taps, a while loop, go_backwards, IfElse outside and inside a
scan) exported from raw graphs and from compiled functions in the default
mode (Numba in PyTensor 3, C in 2.38) and in C mode: onnxruntime, the IR
interpreter (final and as lowered) and PyTensor agree.

PyTensor's values come from one compiled function holding every model (one
compilation per mode keeps the module fast). With a symbolic length the
model has one Loop and runs at T = 1, 5 and 200; with a fixed length at or
below ``scan-unroll``'s threshold it has no Loop or Scan at all.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytest

import passes.scan_unroll  # noqa: F401  (registers scan-unroll)
from tests.helpers import compile_debug
from passes.scan_unroll import DEFAULT_MAX_TRIP_COUNT
from tests.control_flow import models
from tests.control_flow.helpers import C_MODE, check, onnx_ops

# Lowered graphs keep their loops through these; UNROLL adds scan-unroll.
LOOP_PASSES = ["canonicalize", "constant-folding", "canonicalize", "cse", "dce"]
UNROLL_PASSES = ["canonicalize", "constant-folding", "scan-unroll", "canonicalize", "constant-folding", "cse", "dce",
                 "shape-inference"]
SEQUENCE_MODELS = ["cumsum", "elman", "gru", "lstm", "two_taps", "backwards", "ifelse_inside"]


@pytest.mark.parametrize("name", [b.__name__ for b in models.ALL])
def test_raw_graph(default, name):
    m = default.model(name)
    compiled = compile_debug(m.inputs, outputs=m.outputs, passes=LOOP_PASSES)
    check(compiled, m.values(5), default.reference(name, 5), f"{name} (raw graph)")


@pytest.mark.parametrize("mode", ["default", "c_mode"])
def test_compiled_functions(request, mode):
    """All models in one compiled function: inplace scans, BLAS ops in the
    bodies, save-memory buffers and untraced states, as each mode rewrites."""
    bundle = request.getfixturevalue(mode)
    compiled = compile_debug(bundle.fn, passes=LOOP_PASSES)
    values = bundle.values(5)
    want = [np.asarray(r) for r in bundle.fn(*values)]
    check(compiled, values, want, f"all models compiled in {mode}")


@pytest.mark.parametrize("name", SEQUENCE_MODELS)
def test_symbolic_length_is_one_loop_at_any_length(default, name):
    m = default.model(name)
    compiled = compile_debug(m.inputs, outputs=m.outputs, passes=UNROLL_PASSES)
    assert onnx_ops(compiled.model).count("Loop") == 1 and "Scan" not in onnx_ops(compiled.model)
    for T in (1, 5, 200):
        check(compiled, m.values(T), default.reference(name, T), f"{name} at T={T}")


@pytest.mark.parametrize("name", SEQUENCE_MODELS)
def test_fixed_length_unrolls(default, name):
    T = 7
    m = getattr(models, name)(T)
    compiled = compile_debug(m.inputs, outputs=m.outputs, passes=UNROLL_PASSES)
    ops = onnx_ops(compiled.model)
    assert "Loop" not in ops and "Scan" not in ops, ops
    check(compiled, m.values(T), default.reference(name, T), f"{name} at fixed T={T}")


def test_while_loops_stay_loops(default):
    """A while loop (``until``) has no fixed trip count: it stays a Loop
    whose stacked outputs have the length of the iterations run."""
    m = default.model("newton_until")
    compiled = compile_debug(m.inputs, outputs=m.outputs, passes=UNROLL_PASSES)
    assert onnx_ops(compiled.model).count("Loop") == 1
    for y in (2, 40):
        want = default.reference("newton_until", y)
        assert 3 < len(want[0]) < 50  # stopped early
        check(compiled, m.values(y), want, f"newton_until for y={y + 0.5}")


@pytest.mark.parametrize("T, unrolled", [(50, True), (None, False)])
def test_rnn_at_50_steps_unrolled_and_as_a_loop(default, T, unrolled):
    assert 50 <= DEFAULT_MAX_TRIP_COUNT
    m = models.elman(T)
    compiled = compile_debug(m.inputs, outputs=m.outputs, passes=UNROLL_PASSES)
    assert ("Loop" in onnx_ops(compiled.model)) is not unrolled
    check(compiled, m.values(50), default.reference("elman", 50), f"elman, T=50, unrolled={unrolled}")


def test_compiled_function_with_a_fixed_length_unrolls(c_mode):
    """A compiled function's scan over a static length unrolls too (its
    trip count is a constant once shapes are static)."""
    m = models.gru(6)
    fn = pytensor.function(m.inputs, m.outputs, mode=C_MODE)
    compiled = compile_debug(fn, passes=UNROLL_PASSES)
    assert "Loop" not in onnx_ops(compiled.model)
    values = m.values(6)
    check(compiled, values, [np.asarray(r) for r in fn(*values)], "gru compiled at fixed T=6")
