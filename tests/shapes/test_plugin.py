"""The shape-agreement plugin (``tests/shapes/plugin.py``) sees every model:
one compiled by ``compile_to_onnx`` and one emitted directly each add one to
its count, a model whose declared shapes are wrong fails the test that
builds it, and a test marked ``shapes_disagree`` is not checked. If the
plugin stopped being loaded or stopped seeing a path, these tests fail."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest

from backends.onnx import build_model, emit_model
from compiler import compile_to_onnx
from ir.parser import parse_graph
from tests.shapes import plugin

# The type of %y is wrong on purpose: a transpose of f32[2,3] is f32[3,2].
WRONG = """graph @main(%x: f32[2,3]) {
  %y: f32[3,3] = transpose(%x) {perm=[1, 0]}
  return %y
}
"""


def test_every_compiled_and_emitted_model_is_checked():
    x = pt.matrix("x", dtype="float32")
    before = plugin.CHECKED.models
    compiled = compile_to_onnx([x], outputs=[pt.exp(x).T])
    assert plugin.CHECKED.models == before + 1
    emit_model(compiled.ir)
    build_model(compiled.ir, value_info=True)
    assert plugin.CHECKED.models == before + 3
    np.testing.assert_allclose(compiled.run(np.ones((2, 3), np.float32))[0], np.full((3, 2), np.e, np.float32))


def test_a_model_with_a_wrong_declared_shape_fails_the_test():
    with pytest.raises(AssertionError, match=r"disagree with ONNX shape inference:\n  +y axis 1: 3 here, 2 by ONNX"):
        build_model(parse_graph(WRONG))


@pytest.mark.shapes_disagree("builds a model with a wrong declared shape on purpose")
def test_a_test_marked_shapes_disagree_is_not_checked():
    before = plugin.CHECKED.models
    model = build_model(parse_graph(WRONG))
    assert plugin.CHECKED.models == before
    assert [d for d in model.graph.outputs[0].shape] == [3, 3]


def test_large_weights_are_checked_without_copying_them():
    x = pt.vector("x", dtype="float32")
    w = np.ones((2048, 8), np.float32)  # over PLACEHOLDER_ELEMENTS: a placeholder of its dtype and shape
    before = plugin.CHECKED.models
    compiled = compile_to_onnx([x], outputs=[pt.dot(w, x)])
    assert plugin.CHECKED.models == before + 1
    big = [v for v in compiled.onnx_model.graph.initializers.values() if v.const_value.size == w.size]
    np.testing.assert_array_equal(big[0].const_value.numpy(), w)  # the model handed back keeps its weights
