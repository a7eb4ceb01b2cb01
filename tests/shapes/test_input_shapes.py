"""``compile_to_onnx``'s ``input_shapes``, ``example_inputs`` and
``value_info``: names and pins reach every value and the ONNX model, static
specialization folds the shape arithmetic, contradictions are clear errors."""

from __future__ import annotations

import textwrap

import numpy as np
import onnx
import pytensor.tensor as pt
import pytest

from compiler import CompileError, compile_to_onnx
from compiler.core.shapes import InputShapeError, apply_input_shapes
from ir.parser import parse_graph
from tests.helpers import check_pytensor
from tests.shapes.helpers import SHAPE_PIPELINE, assert_declared_shapes, onnx_dims, shape_arithmetic

RNG = np.random.default_rng(7)


def flatten_graph():
    x = pt.tensor("x", dtype="float32", shape=(None, None, 4))
    y = pt.tensor("y", dtype="float32", shape=(None, None))
    return [x, y], [x.reshape((x.shape[0], -1)) * 2, pt.concatenate([y, y], axis=1)]


def test_unknown_dims_get_stable_names_and_shapes_reach_onnx():
    inputs, outputs = flatten_graph()
    compiled = compile_to_onnx(inputs, outputs=outputs, passes=SHAPE_PIPELINE)
    assert [str(v.type) for v in compiled.ir.inputs] == ["f32[x_dim0,x_dim1,4]", "f32[y_dim0,y_dim1]"]
    assert [str(v.type) for v in compiled.ir.outputs] == ["f32[x_dim0,4*x_dim1]", "f32[y_dim0,2*y_dim1]"]
    assert [onnx_dims(v) for v in compiled.model.graph.input] == [["x_dim0", "x_dim1", 4], ["y_dim0", "y_dim1"]]
    assert [onnx_dims(v) for v in compiled.model.graph.output] == [["x_dim0", "4*x_dim1"], ["y_dim0", "2*y_dim1"]]


def test_input_shapes_name_and_pin_dims_everywhere():
    inputs, outputs = flatten_graph()
    compiled = compile_to_onnx(inputs, outputs=outputs, passes=SHAPE_PIPELINE, value_info=True,
                               input_shapes={"x": ("batch", 3, None), inputs[1]: ("batch", "width")})
    assert [str(v.type) for v in compiled.ir.outputs] == ["f32[batch,12]", "f32[batch,2*width]"]
    assert [onnx_dims(v) for v in compiled.model.graph.output] == [["batch", 12], ["batch", "2*width"]]
    values = [RNG.normal(size=(5, 3, 4)).astype("float32"), RNG.normal(size=(5, 2)).astype("float32")]
    check_pytensor(inputs, outputs, values, passes=SHAPE_PIPELINE, input_shapes={"x": ("batch", 3, None)})
    assert_declared_shapes(compiled.ir, values)


def test_value_info_declares_every_intermediate_value():
    inputs, outputs = flatten_graph()
    compiled = compile_to_onnx(inputs, outputs=outputs, passes=SHAPE_PIPELINE, value_info=True)
    graph = compiled.model.graph
    declared = {v.name: onnx_dims(v) for v in graph.value_info}
    initializers = {t.name for t in graph.initializer}
    outputs_ = {o.name for o in graph.output}
    intermediate = {o for n in graph.node for o in n.output} - outputs_
    ir_count = sum(len(n.outputs) for n in compiled.ir) - len(compiled.ir.outputs)
    assert len(set(declared) & intermediate) >= ir_count >= 3
    assert declared["shape"] == [3] and ["x_dim0", "x_dim1", 4] not in [declared[k] for k in initializers]
    plain = compile_to_onnx(inputs, outputs=outputs, passes=SHAPE_PIPELINE).model.graph
    assert {v.name for v in plain.value_info} <= {t.name for t in plain.initializer}


def test_example_inputs_specialize_and_fold_all_shape_arithmetic():
    inputs, outputs = flatten_graph()
    values = [RNG.normal(size=(2, 5, 4)).astype("float32"), RNG.normal(size=(3, 2)).astype("float32")]
    dynamic = compile_to_onnx(inputs, outputs=outputs, passes=SHAPE_PIPELINE)
    assert shape_arithmetic(dynamic.model)  # Shape and Gather of x at run time
    compiled = check_pytensor(inputs, outputs, values, passes=SHAPE_PIPELINE, example_inputs=values)
    assert [str(v.type) for v in compiled.ir.outputs] == ["f32[2,20]", "f32[3,4]"]
    assert shape_arithmetic(compiled.model) == []
    assert all(onnx_dims(v) in ([2, 5, 4], [3, 2]) for v in compiled.model.graph.input)


def test_example_inputs_with_a_named_dim_keep_it_symbolic():
    inputs, outputs = flatten_graph()
    values = [np.zeros((2, 5, 4), "float32"), np.zeros((2, 2), "float32")]
    compiled = compile_to_onnx(inputs, outputs=outputs, passes=SHAPE_PIPELINE, example_inputs=values,
                               input_shapes={"x": ("N", None, None), "y": ("N", None)}, check_dynamic=True)
    assert [str(v.type) for v in compiled.ir.outputs] == ["f32[N,20]", "f32[N,4]"]


@pytest.mark.parametrize("kwargs, message", [
    ({"input_shapes": {"z": (1,)}}, r"input_shapes names 'z', which is not a graph input; the inputs are 'x', 'y'"),
    ({"input_shapes": {"x": (1, 2)}}, r"gives 2 dims for input 'x', which has rank 3"),
    ({"input_shapes": {"x": (1, 2, 5)}}, r"input 'x' axis 2: input_shapes gives 5, but PyTensor's type fixes it to 4"),
    ({"input_shapes": {"x": (1, 2, "C")}}, r"input 'x' axis 2: input_shapes gives 'C', but PyTensor's type fixes "
                                           r"it to 4"),
    ({"input_shapes": {"x": ("a b", 2, 4)}}, r"axis 0: 'a b' is not a size >= 0, a dim name"),
    ({"input_shapes": {"x": (-1, 2, 4)}}, r"axis 0: -1 is not a size"),
    ({"example_inputs": [np.zeros((2, 3, 5)), np.zeros((2, 2))]},
     r"input 'x' axis 2: example_inputs gives 5, but PyTensor's type fixes it to 4"),
    ({"example_inputs": [np.zeros((2, 3, 4))]}, r"example_inputs has 1 arrays, the graph takes 2 inputs"),
    ({"example_inputs": [np.zeros((2, 4)), np.zeros((2, 2))]}, r"example input 'x' has shape \(2, 4\)"),
    ({"input_shapes": {"x": ("N", 2, 4), "y": ("N", 3)}, "example_inputs": [np.zeros((2, 2, 4)),
                                                                             np.zeros((3, 3))]},
     r"input 'y' axis 0: dim 'N' is 3 in the example, but 2 elsewhere"),
])
def test_contradictions_are_clear_errors(kwargs, message):
    inputs, outputs = flatten_graph()
    with pytest.raises(InputShapeError, match=message) as info:
        compile_to_onnx(inputs, outputs=outputs, passes=SHAPE_PIPELINE, **kwargs)
    assert isinstance(info.value, CompileError)


def test_pinned_sizes_simplify_every_dim_and_too_small_ones_are_errors():
    x = pt.tensor("x", dtype="float32", shape=(None,))
    compiled = compile_to_onnx([x], outputs=[x[2:] + 1], passes=SHAPE_PIPELINE, input_shapes={"x": (1,)})
    assert str(compiled.ir.outputs[0].type) == "f32[0]"
    graph = parse_graph(textwrap.dedent("""
        graph @main(%x: f32[1,1,H,W]) {
          const %k: f32[1,1,3,3] = [[[[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]]
          %y: f32[1,1,H-2,W-2] = conv(%x, %k) {dilations=[], flip=false, group=1, pads=[], strides=[]}
          return %y
        }"""))
    with pytest.raises(InputShapeError, match=r"H=1, W=5, a value of type f32\[1,1,H-2,W-2\] would have the "
                                              r"negative shape \(1, 1, -1, 3\)"):
        apply_input_shapes(graph, [], {"x": (1, 1, 1, 5)})


def test_model_declares_the_names_onnx_checker_accepts():
    inputs, outputs = flatten_graph()
    compiled = compile_to_onnx(inputs, outputs=outputs, passes=SHAPE_PIPELINE, value_info=True,
                               input_shapes={"x": ("N", "T", None)})
    onnx.checker.check_model(compiled.model, full_check=True)
