"""Differential-test helpers shared by the test suite.

``check_pytensor(inputs, outputs, values)`` compiles a PyTensor graph with
``compile_to_onnx`` and asserts that onnxruntime, the IR interpreter and
PyTensor itself agree on ``values``, dtype and shape included; it also
checks that the final IR's text round-trips through the parser.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pytensor
from pytensor.compile.mode import Mode

from compiler import compile_to_onnx

# What the tests compile with: the full verifier after every stage, and the IR
# text of every stage kept with its weights (so the lowered graph parses back).
DEBUG_OPTIONS = {"verify_each_pass": True, "keep_ir": True, "full_weights": True}


def compile_debug(*args, **options):
    """``compile_to_onnx`` with ``DEBUG_OPTIONS`` (``options`` override them)."""
    return compile_to_onnx(*args, **{**DEBUG_OPTIONS, **options})
from ir.interpreter import evaluate
from ir.parser import parse_graph
from ir.printer import print_graph

# PyTensor's reference results come from its Python implementations (the
# perform methods), after the cheap canonical rewrites.
REFERENCE_MODE = Mode(linker="py", optimizer="fast_compile")


def pytensor_reference(inputs, outputs, values, mode=REFERENCE_MODE) -> list[np.ndarray]:
    """PyTensor's own result for ``outputs`` given ``values`` for ``inputs``."""
    outs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    fn = pytensor.function(list(inputs), list(outs), mode=mode, on_unused_input="ignore")
    return [np.asarray(r) for r in fn(*values)]


def assert_same(got: np.ndarray, want: np.ndarray, *, rtol: float, atol: float, what: str) -> None:
    """Equal dtype, equal shape and values equal up to ``rtol``/``atol``
    (NaN matches NaN; integer and bool results must match exactly)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != PyTensor's {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != PyTensor's {want.shape}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def roundtrip_text(graph) -> str:
    """Print ``graph``, parse it, print again; assert both texts are equal."""
    text = print_graph(graph)
    again = print_graph(parse_graph(text))
    assert again == text, f"IR text does not round-trip:\n--- printed\n{text}\n--- reparsed\n{again}"
    return text


def check_pytensor(inputs: Sequence, outputs, values: Sequence, *, rtol: float | None = None,
                   atol: float | None = None, passes=None, reference=None, **compile_options):
    """Compile ``(inputs, outputs)`` and check onnxruntime and the IR
    interpreter against PyTensor on ``values``. Returns the CompiledModel.

    Tolerances default to 1e-6 (float32 and below) or 1e-12 (float64),
    relative, with the same absolute tolerance.
    """
    outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    values = [np.asarray(v) for v in values]
    want = reference if reference is not None else pytensor_reference(inputs, outs, values)
    compiled = compile_debug(list(inputs), passes=passes, outputs=outs, **compile_options)
    got_ort = compiled.run(*values)
    got_ir = evaluate(compiled.ir, values)
    history_first = parse_graph(compiled.history[0].ir_text)
    got_lowered = evaluate(history_first, values)
    for i, w in enumerate(want):
        wide = w.dtype == np.float64
        r = rtol if rtol is not None else (1e-12 if wide else 1e-6)
        a = atol if atol is not None else r
        assert_same(got_ort[i], w, rtol=r, atol=a, what=f"onnxruntime output {i}")
        assert_same(got_ir[i], w, rtol=r, atol=a, what=f"IR interpreter (final) output {i}")
        assert_same(got_lowered[i], w, rtol=r, atol=a, what=f"IR interpreter (lowered) output {i}")
    roundtrip_text(compiled.ir)
    return compiled
