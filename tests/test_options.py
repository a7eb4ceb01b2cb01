"""``CompileOptions`` (``compiler/core/options.py``): one frozen value holding
every option of a compilation, validated once at construction with messages
that name the option and the accepted values, printed back with its
non-default fields, derived into the stages' options, and taken whole by
``compile_to_onnx`` (``options=`` plus keywords) and the PyTensor mode."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from backends.onnx import EmitOptions
from compiler import compile_to_onnx, compiled_model, onnx_mode
from compiler.core.driver import compile_to_onnx as driver_compile
from compiler.core.options import OPTION_NAMES, CompileOptions, max_opset
from compiler.lowering.context import LoweringOptions


@pytest.mark.parametrize("kwargs, error, match", [
    ({"numerics": "exact"}, ValueError, r"numerics must be one of 'fast', 'strict'; got 'exact'"),
    ({"assertions": "warn"}, ValueError, r"assertions must be one of 'drop', 'nan', 'raise'; got 'warn'"),
    ({"random": "numpy"}, ValueError, r"random must be one of None, 'inputs', 'onnx', 'key'; got 'numpy'"),
    ({"opset": 17}, ValueError, r"opset=17 is not supported: accepted opsets are 18\.\."),
    ({"opset": 18.0}, TypeError, "opset must be an int, got float"),
    ({"opset": True}, TypeError, "opset must be an int, got bool"),
    ({"name": ""}, TypeError, "name must be a non-empty str"),
    ({"keep_ir": 1}, TypeError, "keep_ir must be True or False, got 1"),
    ({"value_info": "yes"}, TypeError, "value_info must be True or False"),
    ({"check_passes": -1}, ValueError, "check_passes=-1 must not be negative"),
    ({"check_passes": 2.5}, TypeError, "check_passes must be an int, got float"),
    ({"opt_bisect_limit": "3"}, TypeError, "opt_bisect_limit must be an int"),
    ({"external_data_threshold": -5}, ValueError, "external_data_threshold=-5 must not be negative"),
    ({"dump_ir": 3}, TypeError, r"dump_ir must be a directory \(str or path\) or None"),
    ({"provenance": "hidden"}, ValueError, r"provenance must be one of 'relative', 'absolute', 'none'; got 'hidden'"),
    ({"provenance_root": 1}, TypeError, r"provenance_root must be a directory \(str or path\) or None"),
    ({"emit_options": [("silu", "function")]}, TypeError, "emit_options must be a dict, got list"),
    ({"emit_options": {"bogus": 1}}, ValueError, "unknown key 'bogus'; accepted keys: float64_conv, gelu"),
    ({"emit_options": {"gelu": "tanh"}}, ValueError, r"emit_options\['gelu'\] = 'tanh': accepted values are "
                                                     r"'function', 'primitive'"),
    ({"emit_options": {"numerics": "strict"}}, ValueError, "pass numerics to compile_to_onnx, not in emit_options"),
    ({"input_shapes": {"x": "batch"}}, TypeError, r"input_shapes\['x'\] must be a sequence of dims"),
    ({"example_inputs": "abc"}, TypeError, "example_inputs must be a sequence of arrays"),
])
def test_a_bad_option_is_refused_when_the_options_are_made(kwargs, error, match):
    with pytest.raises(error, match=match):
        CompileOptions(**kwargs)
    x = pt.vector("x")
    with pytest.raises(error, match=match):  # the same check, the same message, from compile_to_onnx
        compile_to_onnx([x], outputs=[x * 2], **kwargs)


def test_an_unknown_option_name_lists_the_options():
    x = pt.vector("x")
    with pytest.raises(TypeError, match=r"unknown option\(s\) numeric; the options are numerics, bake_shared"):
        compile_to_onnx([x], outputs=[x * 2], numeric="strict")
    with pytest.raises(TypeError, match="options must be a CompileOptions, got dict"):
        compile_to_onnx([x], outputs=[x * 2], options={"numerics": "strict"})


def test_options_are_frozen_print_back_and_compare_by_value():
    options = CompileOptions(numerics="strict", opset=max_opset(), emit_options={"silu": "function"},
                             input_shapes={"x": ["batch", 3]})
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.numerics = "fast"
    with pytest.raises(TypeError):
        options.emit_options["silu"] = "primitive"  # stored read-only
    text = repr(options)
    assert text == (f"CompileOptions(numerics='strict', input_shapes={{'x': ('batch', 3)}}, opset={max_opset()}, "
                    "emit_options={'silu': 'function'})")
    assert eval(text, {"CompileOptions": CompileOptions}) == options
    assert hash(eval(text, {"CompileOptions": CompileOptions})) == hash(options)
    assert repr(CompileOptions()) == str(CompileOptions()) == "CompileOptions()"
    assert CompileOptions(example_inputs=[np.ones((2, 3)), [[1, 2]]]).example_inputs == ((2, 3), (1, 2))


def test_every_option_is_documented_in_both_docstrings():
    for name in OPTION_NAMES:
        assert f"{name}:" in CompileOptions.__doc__, name
        assert f"``{name}``" in driver_compile.__doc__, name


def test_the_stages_options_are_derived_from_it():
    options = CompileOptions(numerics="strict", bake_shared=False, assertions="nan", random="onnx", name="g",
                             opset=18, value_info=True, emit_options={"float64_conv": "float32"})
    assert options.lowering == LoweringOptions(bake_shared=False, name="g", assertions="nan", random="onnx")
    assert options.emit == EmitOptions(opset=18, value_info=True, numerics="strict", float64_conv="float32")
    replaced = dataclasses.replace(options, numerics="fast")
    assert replaced.emit.numerics == "fast" and replaced.emit.float64_conv == "float32"


def test_compile_to_onnx_takes_the_object_and_keywords_replacing_its_fields():
    x = pt.matrix("x", dtype="float32")
    y = pt.switch(x > 1, x, -x)  # a float where: one Where ("fast"), sign repairs ("strict")
    strict = CompileOptions(numerics="strict", name="model")
    by_object = compile_to_onnx([x], outputs=[y], options=strict)
    assert by_object.options == strict and by_object.model.graph.name == "model"
    by_keywords = compile_to_onnx([x], outputs=[y], numerics="strict", name="model")
    assert by_keywords.options == strict
    assert by_keywords.model.SerializeToString() == by_object.model.SerializeToString()
    overridden = compile_to_onnx([x], outputs=[y], options=strict, numerics="fast")
    assert overridden.options == CompileOptions(name="model")
    assert len(overridden.model.graph.node) < len(by_object.model.graph.node)
    v = np.array([[-0.0, 1.5], [-2.0, 0.0]], np.float32)
    np.testing.assert_array_equal(np.signbit(by_object.run(v)[0]), np.signbit(np.where(v > 1, v, -v)))


def test_the_mode_validates_its_options_when_made_and_compiles_with_them():
    with pytest.raises(ValueError, match="numerics must be one of"):
        onnx_mode(numerics="exact")
    mode = onnx_mode(options=CompileOptions(numerics="strict"), value_info=True)
    assert mode.linker.options == CompileOptions(numerics="strict", value_info=True, bake_shared=False)
    x = pt.vector("x", dtype="float32")
    w = pytensor.shared(np.float32([1.0, -2.0]), name="w")
    f = pytensor.function([x], pt.switch(x * w > 0, x * w, 0.0), mode=mode)
    np.testing.assert_array_equal(f(np.float32([3.0, 4.0])), [3.0, 0.0])
    options = compiled_model(f).options
    assert options.numerics == "strict" and options.value_info and not options.bake_shared
    assert options.input_shapes == {w: (2,)}  # pinned to the shared value's shape
