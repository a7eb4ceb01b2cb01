"""``check_dynamic=True``: the model is run at two sizes of every symbolic
dim against PyTensor, so a dim that silently became static (or a wrong
symbolic output dim) is caught at compile time with the dim named."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from compiler.lowering import graph_spec, lower
from compiler.core.shapes import CANDIDATES, DynamicShapeError, check_dynamic
from ir import Graph, TensorType
from ir import symbolic as sym
from passes.base import Pass
from tests.shapes.helpers import SHAPE_PIPELINE


@dataclass(frozen=True)
class BakeShapes(Pass):
    """A broken pass: replaces every ``shape(x)`` by the shape ``x`` has when
    each symbol is 5, as an exporter tracing one example would."""

    name = "bake-shapes"

    def run(self, graph: Graph) -> bool:
        for node in graph:
            if node.op == "shape":
                dims = [sym.evaluate(d, _Fives()) for d in node.inputs[0].shape]
                graph.replace_all_uses(node.output, graph.add_constant(np.array(dims, np.int64), "baked"))
                graph.erase(node)
        return True


class _Fives(dict):
    def __missing__(self, key):
        return 5


@dataclass(frozen=True)
class MislabelOutput(Pass):
    """A broken pass: declares the first output's dim 0 one larger than it is."""

    name = "mislabel-output"

    def run(self, graph: Graph) -> bool:
        out = graph.outputs[0]
        out.type = TensorType(out.dtype, (sym.add(out.shape[0], 1),) + out.shape[1:])
        return True


def test_a_correct_dynamic_model_passes_at_two_sizes_of_each_dim():
    x = pt.tensor("x", dtype="float32", shape=(None, None, 4))
    y = x.reshape((x.shape[0], -1)).sum(axis=1) + pt.arange(x.shape[0])
    compiled = compile_to_onnx([x], outputs=[y], passes=SHAPE_PIPELINE, check_dynamic=True)
    lowered = lower(graph_spec([x], [y]))
    sizes = check_dynamic(compiled.model, compiled.ir, lowered.input_vars, [y])
    assert sizes == {"x_dim0": (5, 3), "x_dim1": (5, 3)}


def test_a_dim_baked_into_a_reshape_is_caught_and_named():
    x = pt.tensor("x", dtype="float32", shape=(None, 3, 4))
    y = x.reshape((x.shape[0], -1))
    compile_to_onnx([x], outputs=[y], passes=[BakeShapes()])  # no check: the broken model goes unnoticed
    with pytest.raises(DynamicShapeError, match=r"onnxruntime fails at x_dim0=3 \(so dim 'x_dim0' does not work "
                                                r"at 3: it may have become static\): .*Reshape"):
        compile_to_onnx([x], outputs=[y], passes=[BakeShapes()], check_dynamic=True)


def test_a_dim_baked_into_an_expand_is_caught_by_the_output_shape():
    x = pt.tensor("x", dtype="float32", shape=(None, 3))
    y = x + pt.zeros((x.shape[0], 3))
    with pytest.raises(DynamicShapeError, match=r"at x_dim0=3, output 'output0' is float64\[5, 3\] in onnxruntime "
                                                r"but float64\[3, 3\] in PyTensor \(so dim 'x_dim0'"):
        compile_to_onnx([x], outputs=[pt.zeros((x.shape[0], 3)) + 1.0], passes=[BakeShapes()], check_dynamic=True)
    compile_to_onnx([x], outputs=[y], passes=SHAPE_PIPELINE, check_dynamic=True)


@pytest.mark.shapes_disagree
def test_a_wrong_symbolic_output_dim_is_caught():
    x = pt.tensor("x", dtype="float32", shape=(None, 2))
    with pytest.raises(DynamicShapeError, match=r"output '.*' is declared f32\[x_dim0\+1,2\], which at x_dim0=5 is "
                                                r"\(6, 2\), but PyTensor gives shape \(5, 2\)"):
        compile_to_onnx([x], outputs=[pt.exp(x)], passes=[MislabelOutput()], check_dynamic=True)


def test_dims_pytensor_ties_together_change_together():
    x = pt.tensor("x", dtype="float32", shape=(None,))
    y = pt.tensor("y", dtype="float32", shape=(None,))
    compiled = compile_to_onnx([x, y], outputs=[x * y], passes=SHAPE_PIPELINE, check_dynamic=True)
    lowered = lower(graph_spec([x, y], [x * y]))
    sizes = check_dynamic(compiled.model, compiled.ir, lowered.input_vars, [x * y])
    assert sizes == {"x_dim0": (5, 3), "y_dim0": (5, 3)}


def test_a_dim_with_a_single_valid_size_is_reported():
    x = pt.tensor("x", dtype="float32", shape=(None,))
    y = x.reshape((5, -1)) * 2
    assert not any(c % 5 == 0 for c in CANDIDATES if c != 5)
    with pytest.raises(DynamicShapeError, match=r"PyTensor accepts no second size of dim 'x_dim0' \(base x_dim0=5"):
        compile_to_onnx([x], outputs=[y], passes=SHAPE_PIPELINE, check_dynamic=True)
    compile_to_onnx([x], outputs=[y], passes=SHAPE_PIPELINE, check_dynamic=True, input_shapes={"x": (10,)})


def test_static_models_are_checked_once():
    x = pt.tensor("x", dtype="float64", shape=(2, 3))
    compiled = compile_to_onnx([x], outputs=[x.T @ x], passes=SHAPE_PIPELINE, check_dynamic=True)
    lowered = lower(graph_spec([x], [x.T @ x]))
    assert check_dynamic(compiled.model, compiled.ir, lowered.input_vars, [x.T @ x]) == {}
