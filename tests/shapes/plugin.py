"""A pytest plugin that checks every model the test suite builds against ONNX
shape inference (``pyproject.toml`` loads it for every run)::

    python -m pytest -p tests.shapes.plugin tests/

Every model ``backends.onnx.emitter.build_model`` builds is shown to
``check_model`` (``observing_models``, entered around each test): every
emission path ends there (``compile_to_onnx``, ``emit_model``,
``build_model`` itself), so no path and no rename can bypass the check. The
model is built again with ``value_info=True`` and its declared shapes must
agree with ``onnx.shape_inference.infer_shapes(strict_mode=True)``
(``compiler.core.shapes.onnx_shape_disagreements``); the test that built a
disagreeing model fails, naming the values. Emission errors pass through
untouched, and the models the tests see are the ones they asked for.
``CHECKED.models`` counts the models checked (``tests/shapes/test_plugin.py``
fails when a compilation is not counted).

A test marked ``shapes_disagree(reason)`` is not checked: one that emits a
wrong model on purpose, or whose model declares what ONNX's inference cannot
know.
"""

from __future__ import annotations

import dataclasses

import onnx_ir as oir
import pytest

from backends.onnx.emitter import build_model, observing_models
from compiler.core.shapes import onnx_shape_disagreements

PLACEHOLDER_ELEMENTS = 1024  # larger initializers are checked by dtype and shape only (their bytes are not copied)


class CHECKED:
    """How many models ``check_model`` has checked in this process."""

    models = 0


def check_model(graph, model, options) -> None:
    """Assert that ``model`` (built from IR ``graph`` with ``options``)
    declares shapes ONNX's inference agrees with: the same graph built with
    ``value_info=True`` (large weights replaced by external-data
    placeholders of their dtype and shape, so checking a model costs no
    weight-sized memory) is compared by ``onnx_shape_disagreements``."""
    typed = build_model(graph, dataclasses.replace(options, value_info=True))  # a private copy; not observed
    for value in typed.graph.initializers.values():
        tensor = value.const_value
        if tensor is not None and tensor.size > PLACEHOLDER_ELEMENTS:
            value.const_value = oir.ExternalTensor("unread.bin", 0, tensor.nbytes, tensor.dtype,
                                                   shape=tensor.shape, name=tensor.name)
    problems = onnx_shape_disagreements(oir.serde.serialize_model(typed))
    CHECKED.models += 1
    assert not problems, "declared shapes disagree with ONNX shape inference:\n  " + "\n  ".join(problems)


def pytest_configure(config):
    config.addinivalue_line("markers", "shapes_disagree(reason): the test builds a model whose declared shapes ONNX's "
                                       "inference disagrees with: wrong on purpose, or declaring what ONNX cannot "
                                       "know (tests.shapes.plugin does not check it)")


@pytest.fixture(autouse=True)
def _onnx_shape_agreement(request):
    """Check every model built during the test (unless marked ``shapes_disagree``)."""
    if request.node.get_closest_marker("shapes_disagree") is not None:
        yield
        return
    with observing_models(check_model):
        yield
