"""``norm-recovery``: layer normalization as IR text before and after (the
interpreter agreeing), the cases where it must not fire, strict numerics,
onnxruntime's LayerNormalization against PyTensor (including rows whose mean
is large against their spread), and the transformer block of
``tests/nn/transformer_block.py`` against PyTensor with its node count."""

from __future__ import annotations

import collections
import textwrap

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from passes.dce import DeadCodeElimination
from ir.parser import parse_graph
from passes.norm_recovery import NormRecovery
from tests.helpers import REFERENCE_MODE
from tests.nn.transformer_block import block, layer_norm, weights
from tests.passes.helpers import assert_close_numbers, check_pass

PASSES = [NormRecovery(), DeadCodeElimination()]
RTOL = 1e-5  # the interpreter's layer_norm sums in float32, the matched graph in float64

# PyTensor's raw layer norm over the last axis of x: f32[N,8] (the lowered mean form, sums widened to float64).
LAYER_NORM = """
        graph @main(%x: f32[N,8], %g: f32[8], %b: f32[8]) {{
          const %eight: f32[] = 8.0
          const %two: f32[] = 2.0
          const %eps: f32[] = {eps}
          %xw: f64[N,8] = cast(%x) {{to=f64}}
          %xs: f64[N] = reduce_sum(%xw) {{axes=[1], keepdims=false}}
          %xn: f32[N] = cast(%xs) {{to=f32}}
          %xk: f32[N,1] = unsqueeze(%xn) {{axes=[1]}}
          %mean: f32[N,1] = div(%xk, %eight)
          %d: f32[N,8] = sub(%x, {mean})
          %sq: f32[N,8] = {square}
          %sw: f64[N,8] = cast(%sq) {{to=f64}}
          %ss: f64[N] = reduce_sum(%sw) {{axes=[{axis}], keepdims=false}}
          %sn: f32[N] = cast(%ss) {{to=f32}}
          %sk: f32[N,1] = unsqueeze(%sn) {{axes=[1]}}
          %var: f32[N,1] = div(%sk, %eight)
          %ve: f32[N,1] = add(%var, %eps)
          %sd: f32[N,1] = sqrt(%ve)
          %y: f32[N,8] = div(%d, %sd)
          %ys: f32[N,8] = mul(%y, %g)
          %yb: f32[N,8] = add(%ys, %b)
          return %yb
        }}"""


def layer_norm_ir(eps="1e-05", mean="%mean", square="pow(%d, %two)", axis="1") -> str:
    return LAYER_NORM.format(eps=eps, mean=mean, square=square, axis=axis)


@pytest.mark.parametrize("square", ["pow(%d, %two)", "mul(%d, %d)"])
def test_layer_norm_with_scale_and_bias_is_one_layer_norm(square):
    check_pass(PASSES, layer_norm_ir(square=square), """
        graph @main(%x: f32[N,8], %g: f32[8], %b: f32[8]) {
          %yb: f32[N,8] = layer_norm(%x, %g, %b) {epsilon=9.999999747378752e-06}
          return %yb
        }""", rtol=RTOL)


def compiled_form(factor: str = "0.125") -> str:
    """The layer norm as PyTensor's compiled functions write it: each mean a
    sum times a constant factor, epsilon added on the left."""
    return (layer_norm_ir().replace("const %eight: f32[] = 8.0", f"const %eighth: f32[1,1] = [[{factor}]]")
            .replace("div(%xk, %eight)", "mul(%eighth, %xk)").replace("div(%sk, %eight)", "mul(%sk, %eighth)")
            .replace("add(%var, %eps)", "add(%eps, %var)"))


def test_means_times_the_reciprocal_and_eps_on_the_left_are_a_layer_norm():
    check_pass(PASSES, compiled_form(), """
        graph @main(%x: f32[N,8], %g: f32[8], %b: f32[8]) {
          %yb: f32[N,8] = layer_norm(%x, %g, %b) {epsilon=9.999999747378752e-06}
          return %yb
        }""", rtol=RTOL)


def test_a_factor_that_is_not_the_reciprocal_does_not_fire():
    check_pass([NormRecovery()], compiled_form("0.12"), None, sizes={"N": 3})


@pytest.mark.parametrize("source", ["c-mode", "default-mode"])
def test_layer_norm_from_compiled_functions_is_one_layer_norm(source):
    from pytensor.compile.mode import Mode, get_default_mode

    x = pt.tensor3("x", dtype="float32", shape=(None, None, 16))
    g = pytensor.shared(np.linspace(0.5, 1.5, 16).astype("float32"), name="g")
    b = pytensor.shared(np.linspace(-0.1, 0.1, 16).astype("float32"), name="b")
    mode = Mode(linker="cvm", optimizer="fast_run") if source == "c-mode" else get_default_mode()
    f = pytensor.function([x], layer_norm(x, g, b), mode=mode)
    m = compile_to_onnx(f)
    assert [n.op_type for n in m.model.graph.node] == ["LayerNormalization"]
    value = np.random.default_rng(3).normal(size=(3, 5, 16)).astype("float32")
    np.testing.assert_allclose(m.run(value)[0], f(value), rtol=0, atol=2e-6)


RMS_NORM = """
        graph @main(%x: f32[N,8], %g: f32[8]) {
          const %eighth: f32[] = 0.125
          const %two: f32[] = 2.0
          const %eps: f32[] = 1e-06
          %sq: f32[N,8] = pow(%SQUARED, %two)
          %sw: f64[N,8] = cast(%sq) {to=f64}
          %ss: f64[N] = reduce_sum(%sw) {axes=[1], keepdims=false}
          %sn: f32[N] = cast(%ss) {to=f32}
          %sk: f32[N,1] = unsqueeze(%sn) {axes=[1]}
          %ms: f32[N,1] = mul(%sk, %eighth)
          %ve: f32[N,1] = add(%eps, %ms)
          %sd: f32[N,1] = sqrt(%ve)
          %y: f32[N,8] = div(%x, %sd)
          %ys: f32[N,8] = mul(%g, %y)
          return %ys
        }"""


def test_rms_norm_with_scale_is_one_rms_norm():
    check_pass(PASSES, RMS_NORM.replace("%SQUARED", "%x"), """
        graph @main(%x: f32[N,8], %g: f32[8]) {
          %ys: f32[N,8] = rms_norm(%x, %g) {epsilon=9.999999974752427e-07}
          return %ys
        }""", rtol=RTOL)


def test_rms_of_another_value_does_not_fire():
    before = RMS_NORM.replace("%x: f32[N,8], %g", "%x: f32[N,8], %z: f32[N,8], %g").replace("%SQUARED", "%z")
    check_pass([NormRecovery()], before, None, sizes={"N": 3})
    check_pass([NormRecovery(numerics="strict")], RMS_NORM.replace("%SQUARED", "%x"), None, sizes={"N": 3})


@pytest.mark.parametrize("source", ["raw", "c-mode"])
def test_rms_norm_is_what_onnxruntime_fuses_and_matches_pytensor(source, tmp_path):
    import onnx
    import onnxruntime as ort
    from pytensor.compile.mode import Mode

    x = pt.tensor3("x", dtype="float32", shape=(None, None, 32))
    g = pytensor.shared(np.linspace(0.5, 1.5, 32).astype("float32"), name="g")
    y = x / pt.sqrt(pt.mean(x ** 2, axis=-1, keepdims=True) + np.float32(1e-6)) * g
    m = compile_to_onnx([x], outputs=[y]) if source == "raw" else compile_to_onnx(
        pytensor.function([x], y, mode=Mode(linker="cvm", optimizer="fast_run")))
    assert [n.op_type for n in m.model.graph.node] == ["Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul"]
    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(m.model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    assert [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node] == [
        "SimplifiedLayerNormalization"]
    value = np.random.default_rng(4).normal(size=(2, 3, 32)).astype("float32")
    want = pytensor.function([x], y, mode=REFERENCE_MODE)(value)
    np.testing.assert_allclose(m.run(value)[0], want, rtol=0, atol=2e-6)


@pytest.mark.parametrize("kw", [
    {"mean": "%var"},  # x minus something else
    {"square": "pow(%d, %eight)"},  # not a square
    {"eps": "-1.0"},  # a negative epsilon
], ids=["not-the-mean", "not-squared", "negative-eps"])
def test_forms_that_are_not_a_layer_norm_do_not_fire(kw):
    before = layer_norm_ir(**kw)
    if "mean" in kw:  # %var is defined after %d: reorder into a valid graph with the same meaning
        before = before.replace("%d: f32[N,8] = sub(%x, %var)", "%d: f32[N,8] = sub(%x, %xk)")
        # d / sqrt(mean(d^2) + eps) with d = x - sum(x) is no layer norm, but it is an RMS norm of d (rule 4)
        graph = parse_graph(textwrap.dedent(before))
        assert NormRecovery().run(graph)
        assert [n.op for n in graph].count("rms_norm") == 1 and "layer_norm" not in [n.op for n in graph]
        assert_close_numbers(parse_graph(textwrap.dedent(before)), graph, rtol=RTOL, sizes={"N": 3})
        return
    check_pass([NormRecovery()], before, None, sizes={"N": 3})


def test_symbolic_normalized_axis_with_its_scale_and_bias_is_one_layer_norm():
    before = layer_norm_ir().replace("f32[N,8]", "f32[N,D]").replace("f64[N,8]", "f64[N,D]").replace(
        "%g: f32[8], %b: f32[8]", "%g: f32[D], %b: f32[D]")
    # divide by D read off the shape, as PyTensor's mean over a symbolic axis does
    before = before.replace("          %xw: f64", "          %sh: i64[2] = shape(%x)\n          %shf: f32[2] = cast(%sh) {to=f32}\n"
                            "          %dim: f32[] = gather(%shf, %one) {axis=0}\n          %xw: f64")
    before = before.replace("const %eps", "const %one: i64[] = 1\n          const %eps").replace(", %eight)", ", %dim)")
    check_pass(PASSES, before, """
        graph @main(%x: f32[N,D], %g: f32[D], %b: f32[D]) {
          %yb: f32[N,D] = layer_norm(%x, %g, %b) {epsilon=9.999999747378752e-06}
          return %yb
        }""", rtol=RTOL, sizes={"N": 3, "D": 8})


def test_strict_numerics_keeps_the_primitive_form():
    check_pass([NormRecovery(numerics="strict")], layer_norm_ir(), None, sizes={"N": 3})


def compile_layer_norm(offset: float):
    x = pt.matrix("x", dtype="float32", shape=(None, 64))
    g = pytensor.shared(np.linspace(0.5, 1.5, 64).astype("float32"), name="g")
    b = pytensor.shared(np.linspace(-0.1, 0.1, 64).astype("float32"), name="b")
    y = layer_norm(x, g, b)
    value = (offset + np.random.default_rng(0).normal(size=(32, 64))).astype("float32")
    m = compile_to_onnx([x], outputs=[y])
    want = pytensor.function([x], y, mode=REFERENCE_MODE)(value)
    return m, np.abs(m.run(value)[0] - want).max()


def test_onnxruntime_layer_norm_matches_pytensor_on_centered_rows():
    m, err = compile_layer_norm(0.0)
    assert [n.op_type for n in m.model.graph.node] == ["LayerNormalization"]
    assert err <= 2e-6, err


@pytest.mark.parametrize("offset", [100.0, 1000.0])
def test_rows_with_a_large_mean_keep_their_accuracy(offset):
    # a one-pass E[x^2] - mean^2 would lose about eps * mean^2 / var here (0.06 at 1000): onnxruntime does not
    _, err = compile_layer_norm(offset)
    assert err <= 2e-6, err


def test_layer_norm_through_pytensors_var_with_symbolic_leading_dims_is_one_layer_norm():
    # x.var and x.mean divide by cast(shape(x))[-1]: canonicalize moves the gather before the cast,
    # so shape-folding makes the static last dim a constant and the rule sees the mean form
    x = pt.tensor3("x", dtype="float32", shape=(None, None, 16))
    g = pytensor.shared(np.linspace(0.5, 1.5, 16).astype("float32"), name="g")
    y = (x - x.mean(-1, keepdims=True)) / pt.sqrt(x.var(-1, keepdims=True) + np.float32(1e-5)) * g
    m = compile_to_onnx([x], outputs=[y])
    assert [n.op_type for n in m.model.graph.node] == ["LayerNormalization"]
    value = np.random.default_rng(2).normal(size=(3, 5, 16)).astype("float32")
    want = pytensor.function([x], y, mode=REFERENCE_MODE)(value)
    np.testing.assert_allclose(m.run(value)[0], want, rtol=0, atol=2e-6)


def test_transformer_block_has_two_layer_norms_and_matches_pytensor():
    x, y = block(weights(d_model=32), heads=4)
    m = compile_to_onnx([x], outputs=[y])
    ops = collections.Counter(n.op_type for n in m.model.graph.node)
    assert ops["LayerNormalization"] == 2 and ops["Gelu"] == 1 and ops["Softmax"] == 1
    assert not {"ReduceSum", "ReduceMean", "Sqrt", "Pow", "Cast", "Where", "Range"} & set(ops), ops
    assert ops["Trilu"] == 2  # the causal mask (passes.attention)
    assert sum(ops.values()) <= 35  # torch.onnx's dynamo export of the same block: 47
    value = np.random.default_rng(1).normal(size=(2, 7, 32)).astype("float32")
    want = pytensor.function([x], y, mode=REFERENCE_MODE)(value)
    np.testing.assert_allclose(m.run(value)[0], want, rtol=0, atol=1e-5)


def test_a_symbolic_normalized_axis_takes_a_broadcast_scale_and_bias():
    # the lowered raw graph of layer_norm(x, 1, 0) for a plain pt.matrix: the means divide by D read off the shape
    check_pass(PASSES, """
        graph @main(%x: f32[N,D]) {
          const %one: i64[] = 1
          const %two: f32[] = 2.0
          const %eps: f32[] = 1e-05
          %s: i64[2] = shape(%x)
          %d: i64[] = gather(%s, %one) {axis=0}
          %df: f32[] = cast(%d) {to=f32}
          %xw: f64[N,D] = cast(%x) {to=f64}
          %xs: f64[N] = reduce_sum(%xw) {axes=[1], keepdims=false}
          %xn: f32[N] = cast(%xs) {to=f32}
          %xk: f32[N,1] = unsqueeze(%xn) {axes=[1]}
          %mean: f32[N,1] = div(%xk, %df)
          %c: f32[N,D] = sub(%x, %mean)
          %sq: f32[N,D] = pow(%c, %two)
          %sw: f64[N,D] = cast(%sq) {to=f64}
          %ss: f64[N] = reduce_sum(%sw) {axes=[1], keepdims=false}
          %sn: f32[N] = cast(%ss) {to=f32}
          %sk: f32[N,1] = unsqueeze(%sn) {axes=[1]}
          %var: f32[N,1] = div(%sk, %df)
          %ve: f32[N,1] = add(%var, %eps)
          %sd: f32[N,1] = sqrt(%ve)
          %y: f32[N,D] = div(%c, %sd)
          return %y
        }""", """
        graph @main(%x: f32[N,D]) {
          const %ln_scale: f32[1] = [1.0]
          const %ln_bias: f32[1] = [0.0]
          %y: f32[N,D] = layer_norm(%x, %ln_scale, %ln_bias) {epsilon=9.999999747378752e-06}
          return %y
        }""", rtol=RTOL, sizes={"N": 3, "D": 6})


@pytest.mark.parametrize("source", ["raw", "c-mode"])
def test_layer_and_rms_norm_over_a_symbolic_axis_match_pytensor_at_two_sizes(source):
    from pytensor.compile.mode import Mode

    x = pt.tensor3("x", dtype="float32")  # batch, sequence and D all symbolic
    g = pt.vector("g", dtype="float32")
    rms = x / pt.sqrt(pt.mean(x ** 2, axis=-1, keepdims=True) + np.float32(1e-6))
    for inputs, y, want_ops in (([x], layer_norm(x, np.float32(1), np.float32(0)), {"LayerNormalization"}),
                                ([x, g], rms * g, {"ReduceMean", "Sqrt", "Div", "Mul"})):
        m = compile_to_onnx(inputs, outputs=[y]) if source == "raw" else compile_to_onnx(
            pytensor.function(inputs, y, mode=Mode(linker="cvm", optimizer="fast_run")))
        ops = [n.op_type for n in m.model.graph.node]
        assert want_ops <= set(ops) and not {"ReduceSum", "Cast", "Shape"} & set(ops), ops
        assert len(ops) <= 7, ops
        reference = pytensor.function(inputs, y, mode=REFERENCE_MODE)
        for d in (5, 16):
            rng = np.random.default_rng(d)
            values = [rng.normal(size=(2, 3, d)).astype("float32")] + [rng.normal(size=d).astype("float32")
                                                                       for _ in inputs[1:]]
            np.testing.assert_allclose(m.run(*values)[0], reference(*values), rtol=0, atol=2e-6)
