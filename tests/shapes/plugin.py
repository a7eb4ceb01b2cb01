"""A pytest plugin that checks every model the test suite emits against ONNX
shape inference::

    python -m pytest -p tests.shapes.plugin tests/

Each call of ``emit_model`` (through ``compile_to_onnx`` or directly) is
repeated with ``value_info=True`` and the result must agree with
``onnx.shape_inference.infer_shapes(strict_mode=True)``
(``compiler.core.shapes.onnx_shape_disagreements``); the test that emitted a
disagreeing model fails, naming the values. Emission errors pass through
untouched, and the models the tests see are the ones they asked for. A
test marked ``shapes_disagree`` (one that emits a wrong model on purpose)
is not checked.
"""

from __future__ import annotations

import sys

import pytest

import backends.onnx.emitter
from compiler.core.shapes import onnx_shape_disagreements

_ORIGINAL = backends.onnx.emitter.emit_model


def checked_emit_model(graph, **options):
    """``emit_model`` that also asserts the shapes agree with ONNX's inference."""
    model = _ORIGINAL(graph, **options)
    problems = onnx_shape_disagreements(_ORIGINAL(graph, **{**options, "value_info": True}))
    assert not problems, "declared shapes disagree with ONNX shape inference:\n  " + "\n  ".join(problems)
    return model


@pytest.fixture(autouse=True)
def _onnx_shape_agreement(request, monkeypatch):
    """Route every module's ``emit_model`` through ``checked_emit_model``."""
    if request.node.get_closest_marker("shapes_disagree") is not None:
        yield
        return
    for module in list(sys.modules.values()):
        try:
            bound = getattr(module, "emit_model", None)
        except Exception:  # noqa: BLE001 - a module with a lazy __getattr__
            continue
        if bound is _ORIGINAL:
            monkeypatch.setattr(module, "emit_model", checked_emit_model)
    yield
