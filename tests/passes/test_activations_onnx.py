"""``relu-silu`` end to end: PyTensor against onnxruntime (and the IR
interpreter) for every spelling, raw and as default-mode compilation leaves
it, with the emitted ONNX operators; and what onnxruntime gives where a
rewrite changes results on NaN, infinities or overflow."""

from __future__ import annotations

import collections

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode

from compiler import compile_to_onnx
from ir.interpreter import evaluate
from ir.printer import print_graph
from passes.activations import ActivationMatching
from tests.helpers import assert_same, check_pytensor

# relu-silu fires every rule here (numerics="fast", kept by the compilation:
# it fills only an unset field) while the emitter runs numerics="strict"
# (below); test_activations.py checks which rules fire under "strict".
PIPELINE = ["canonicalize", "constant-folding", "canonicalize", "cse", ActivationMatching(numerics="fast"), "dce"]


X32 = np.array([[np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40],
                [1.5, -2.5, 3.0, -0.5, 7.0, -7.0],
                [0.25, -0.25, 40.0, -40.0, 2.0, -3.0]], np.float32)
FINITE32 = np.nan_to_num(X32, nan=0.5, posinf=5.0, neginf=-5.0)


def f32(v):
    return np.float32(v)


# name -> (PyTensor spelling of x, ONNX op histogram, values, rtol or None for the default).
# softplus is emitted as an exact formula (backends/onnx/rules/mathfn.py), the
# same ONNX as PyTensor's own pt.softplus.
SPELLINGS = {
    "maximum(x, 0)": (lambda x: pt.maximum(x, 0), {"Relu": 1}, X32, None),
    "maximum(0, x)": (lambda x: pt.maximum(0, x), {"Relu": 1}, X32, None),
    "maximum(x, zeros((1, 1)))": (lambda x: pt.maximum(x, np.zeros((1, 1), "float32")), {"Relu": 1}, X32, None),
    "switch(x > 0, x, 0)": (lambda x: pt.switch(x > 0, x, 0), {"Relu": 1}, FINITE32, None),
    "switch(0 < x, x, 0)": (lambda x: pt.switch(pt.lt(0, x), x, 0), {"Relu": 1}, FINITE32, None),
    "x * (x > 0)": (lambda x: x * (x > 0), {"Relu": 1}, FINITE32, None),
    "clip(x, 0, inf)": (lambda x: pt.clip(x, 0, np.inf), {"Relu": 1}, X32, None),
    "x * sigmoid(x)": (lambda x: x * pt.sigmoid(x), {"SiLU": 1}, X32, None),
    "sigmoid(x) * x": (lambda x: pt.sigmoid(x) * x, {"SiLU": 1}, X32, None),
    "x / (1 + exp(-x))": (lambda x: x / (1 + pt.exp(-x)), {"SiLU": 1}, X32, 1e-6),
    "switch(x > 0, x, 0.1 * x)": (lambda x: pt.switch(x > 0, x, f32(0.1) * x), {"LeakyRelu": 1}, X32, None),
    "switch(x > 0, x, x * 0.25)": (lambda x: pt.switch(x > 0, x, x * 0.25), {"LeakyRelu": 1}, X32, None),
    "maximum(x, 0.2 * x)": (lambda x: pt.maximum(x, f32(0.2) * x), {"LeakyRelu": 1}, X32, None),
    "clip(0.2 * x + 0.5, 0, 1)": (lambda x: pt.clip(f32(0.2) * x + 0.5, 0, 1), {"HardSigmoid": 1}, X32, None),
    "maximum(0, minimum(1, x * 0.25 + 0.5))": (lambda x: pt.maximum(0, pt.minimum(1, x * 0.25 + 0.5)),
                                            {"HardSigmoid": 1}, X32, None),
    "x * clip(x / 6 + 0.5, 0, 1)": (lambda x: x * pt.clip(x / 6 + 0.5, 0, 1), {"HardSwish": 1}, X32, 1e-6),
    "x * clip(x + 3, 0, 6) / 6": (lambda x: x * pt.clip(x + 3, 0, 6) / 6, {"HardSwish": 1}, X32, 1e-6),
    "0.5 * x * (1 + erf(x * 0.70710677))": (
        lambda x: f32(0.5) * x * (1 + pt.erf(x * f32(2 ** -0.5))), {"Gelu": 1}, X32, 1e-6),
    "x * 0.5 * (1 + erf(x / sqrt(2)))": (  # float64 from np.sqrt(2): gelu on cast(x)
        lambda x: x * 0.5 * (1 + pt.erf(x / np.sqrt(2))), {"Cast": 1, "Gelu": 1}, X32, 1e-12),
    "gelu tanh form": (lambda x: f32(0.5) * x * (1 + pt.tanh(f32(np.sqrt(2 / np.pi)) * (x + f32(0.044715) * x ** 3))),
                       {"Gelu": 1}, X32, 2e-6),
    "log1p(exp(x))": (lambda x: pt.log1p(pt.exp(x)), "as pt.softplus", FINITE32, 1e-6),
    "log(1 + exp(x))": (lambda x: pt.log(1 + pt.exp(x)), "as pt.softplus", FINITE32 / 4, 1e-6),
    "log(softmax(x))": (lambda x: pt.log(pt.special.softmax(x, axis=1)), {"LogSoftmax": 1}, FINITE32, 1e-6),
    "x - max - log(sum(exp(x - max)))": (
        lambda x: (x - x.max(axis=1, keepdims=True))
        - pt.log(pt.exp(x - x.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)),
        {"LogSoftmax": 1}, FINITE32, 1e-6),
}
COMPILED = Mode(linker="py", optimizer="fast_run")  # default-mode rewrites (fusion included), no C/Numba build


# numerics="strict" throughout: the recovered ops' one-node forms (a SiLU
# function call ...) and their bit-exact values (tests/numerics checks the
# fast SiLU against its bound).


def histogram(model) -> dict[str, int]:
    return dict(collections.Counter(n.op_type for n in model.graph.node))


def expected_histogram(ops) -> dict[str, int]:
    if ops == "as pt.softplus":
        x = pt.matrix("x", dtype="float32")
        return histogram(compile_to_onnx([x], outputs=[pt.softplus(x)], passes=PIPELINE, numerics="strict").model)
    return ops


@pytest.mark.parametrize("name", SPELLINGS)
def test_pytensor_spelling_matches_onnxruntime(name):
    build, ops, values, rtol = SPELLINGS[name]
    x = pt.matrix("x", dtype="float32")
    compiled = check_pytensor([x], build(x), [values], passes=PIPELINE, rtol=rtol, numerics="strict")
    assert histogram(compiled.model) == expected_histogram(ops), print_graph(compiled.ir)


@pytest.mark.parametrize("name", [n for n in SPELLINGS if "erf" not in n])  # see test_compiled_gelu_erf
def test_default_mode_compiled_spelling_matches_onnxruntime(name):
    build, ops, values, rtol = SPELLINGS[name]
    x = pt.matrix("x", dtype="float32")
    fn = pytensor.function([x], build(x), mode=COMPILED)
    compiled = compile_to_onnx(fn, passes=PIPELINE, numerics="strict")
    want = fn(values)
    r = rtol or (1e-12 if want.dtype == np.float64 else 1e-6)
    assert_same(compiled.run(values)[0], want, rtol=r, atol=r, what=f"onnxruntime, {name}")
    assert_same(evaluate(compiled.ir, [values])[0], want, rtol=r, atol=r, what=f"IR interpreter, {name}")
    assert histogram(compiled.model) == expected_histogram(ops), print_graph(compiled.ir)


def test_compiled_gelu_erfc_form_exports():
    # Default-mode rewriting turns 1 + erf(x / sqrt 2) into erfc(-x / sqrt 2):
    # not recovered as Gelu, but exported through the model-local Erfc function.
    x = pt.matrix("x", dtype="float32")
    fn = pytensor.function([x], f32(0.5) * x * (1 + pt.erf(x * f32(2 ** -0.5))), mode=COMPILED)
    compiled = compile_to_onnx(fn, passes=PIPELINE)
    assert histogram(compiled.model).get("Erfc") == 1, print_graph(compiled.ir)
    np.testing.assert_allclose(compiled.run(X32)[0], fn(X32), rtol=1e-6, atol=1e-7)


def test_float64_spellings_match_onnxruntime():
    # ONNX's float attributes are float32: the emitter keeps float64 exact
    # (PRelu for alpha 0.1, HardSwish's formula with a float64 1/6).
    x = pt.matrix("x", dtype="float64")
    v = X32.astype(np.float64)
    for out, ops in [(pt.switch(x > 0, x, 0.1 * x), {"PRelu": 1}),
                     (x * pt.clip(x / 6 + 0.5, 0, 1), {"Mul": 2, "Add": 1, "Max": 1, "Min": 1}),
                     (0.5 * x * (1 + pt.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), {"Gelu": 1})]:
        compiled = check_pytensor([x], out, [v], passes=PIPELINE, rtol=1e-12, numerics="strict")
        assert histogram(compiled.model) == ops, print_graph(compiled.ir)


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8"])
def test_integer_relu_matches_onnxruntime(dtype):
    x = pt.matrix("x", dtype=dtype)
    v = np.array([[-3, 0, 5], [7, -1, -128 if dtype == "int8" else -(2 ** 31)]], dtype)
    for out in (pt.maximum(x, 0), pt.switch(x > 0, x, 0), x * (x > 0)):
        compiled = check_pytensor([x], out, [v], passes=PIPELINE, numerics="strict")
        assert histogram(compiled.model) == {"Relu": 1}, print_graph(compiled.ir)


def test_onnxruntime_on_the_values_the_rewrites_change():
    # What the rewritten model gives where SPECIAL_VALUE_CHANGES says it
    # differs from PyTensor: Relu keeps NaN, Relu(-inf) is 0, softplus of a
    # large x is x.
    x = pt.vector("x", dtype="float32")
    v = np.array([np.nan, -np.inf, 100.0, 2.0], np.float32)
    for out, want_pytensor, want_onnx in [
            (pt.switch(x > 0, x, 0), [0, 0, 100, 2], [np.nan, 0, 100, 2]),
            (x * (x > 0), [np.nan, np.nan, 100, 2], [np.nan, 0, 100, 2]),
            (pt.log1p(pt.exp(x)), [np.nan, 0, np.inf, np.log1p(np.exp(2))], [np.nan, 0, 100, np.log1p(np.exp(2))])]:
        fn = pytensor.function([x], out, mode=Mode(linker="py", optimizer="fast_compile"))
        np.testing.assert_allclose(fn(v), want_pytensor, rtol=1e-6)
        got = compile_to_onnx([x], outputs=[out], passes=PIPELINE, numerics="strict").run(v)[0]
        np.testing.assert_allclose(got, want_onnx, rtol=1e-6)


def test_relu_of_nan_and_signed_zero_in_onnxruntime():
    x = pt.vector("x", dtype="float32")
    v = np.array([np.nan, -0.0, 0.0, -1.0], np.float32)
    got = compile_to_onnx([x], outputs=[pt.maximum(x, 0)], passes=PIPELINE, numerics="strict").run(v)[0]
    np.testing.assert_array_equal(got, [np.nan, 0.0, 0.0, 0.0])  # NaN propagates; -0.0 == 0.0
