"""The performance advisor (``compiler.core.advisor``): the issue's CNN under
``floatX=float64`` with float32 inputs names the ``pt.pad`` line whose
float64 pad value upcast the data, and says what to change, in ``report()``
and in one ``SlowFormWarning``; following the advice (``floatX=float32``)
leaves an empty section and no warning; a dynamic-size Cholesky's Loop and a
convolve2d left unrecovered are named too, on IR text as well."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt

from compiler import compile_to_onnx
from compiler.core.advisor import SlowFormWarning, advise
from backends.onnx.context import EmitOptions
from ir.parser import parse_graph
from tests.nn import idiom_cnn as idiom_module
from tests.nn.idiom_cnn import idiom_cnn

PAD_LINE = next(i for i, line in enumerate(inspect.getsource(idiom_module).splitlines(), 1) if "pt.pad(" in line)


def compile_caught(x, y, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = compile_to_onnx([x], outputs=[y], **kw)
    return compiled, [w for w in caught if issubclass(w.category, SlowFormWarning)]


def advisor_section(report: str) -> list[str]:
    return report.split("performance advisor (slow forms, where, what to change):\n")[1].splitlines()


def test_float64_cnn_names_the_pad_line_and_the_fix():
    with pytensor.config.change_flags(floatX="float64"):
        x, probs = idiom_cnn()
        compiled, caught = compile_caught(x, probs)
    kinds = [a.kind for a in compiled.advice]
    assert kinds == ["float64-window", "float64-output"]
    window = compiled.advice[0]
    assert window.count == 2  # both convolutions, one upcast
    where = f"idiom_cnn.py:{PAD_LINE} (h = pt.pad(h"
    assert all(where in a.source for a in compiled.advice)
    assert "floatX = 'float32'" in window.fix and "float64_conv" in window.fix
    section = advisor_section(compiled.report())
    assert section[0].startswith("  float64-window: float64 conv") and "(x2)" in section[0]
    assert where in section[1] and section[2].startswith("      fix: set pytensor.config.floatX")
    assert len(caught) == 1 and where in str(caught[0].message)
    assert compiled.run(np.zeros((1, 3, 8, 8), "float32"))[0].dtype == np.float64


def test_following_the_advice_leaves_no_slow_form_and_no_warning():
    with pytensor.config.change_flags(floatX="float32"):
        x, probs = idiom_cnn()
        compiled, caught = compile_caught(x, probs)
    assert compiled.advice == [] and caught == []
    assert advisor_section(compiled.report()) == ["  (none)"]


def test_float32_convolutions_by_option_also_leave_no_window_advice():
    with pytensor.config.change_flags(floatX="float64"):
        x, probs = idiom_cnn()
        compiled, caught = compile_caught(x, probs, emit_options={"float64_conv": "float32"})
    assert [a.kind for a in compiled.advice] == ["float64-output"]  # the output dtype is still float64


def test_a_dynamic_size_cholesky_loop_is_named():
    a = pt.matrix("a")
    compiled, caught = compile_caught(a, pt.linalg.cholesky(a))
    (loop,) = compiled.advice
    assert loop.kind == "loop" and "Cholesky" in loop.what and "test_advisor.py" in loop.source
    assert "static" in loop.fix and len(caught) == 1


def test_advise_on_ir_text():
    graph = parse_graph("""
        graph @main(%x: f32[1,1,6,6], %k: f64[3,3]) {
          %w: f64[1,1,6,6] = cast(%x) {to=f64}
          %y: f64[1,1,4,4] = convolve2d(%w, %k) {full=false}
          return %y
        }""")
    found = advise(graph, EmitOptions())
    # %k is a float64 input: a float64 output is then no surprise (no float64-output advice)
    assert [a.kind for a in found] == ["float64-window", "unrecovered-convolution"]
    assert found[0].what.endswith("float32 data became float64 at cast")
    assert advise(graph, EmitOptions(float64_conv="native"))[0].kind == "unrecovered-convolution"
