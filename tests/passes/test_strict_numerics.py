"""``numerics="strict"`` in the passes that choose a form (``ir.numerics``):
under "strict" a rewrite fires only where its result is the matched graph's
bit for bit under the IR's reference semantics (up to the order of a sum's
terms and the sign of a zero maximum); under "fast" (and when a pass runs
alone) every rule fires. For each pass: which rules fire in each mode, the
interpreter's numbers bit for bit where "strict" fires, and numbers that
change where only "fast" fires. End to end: ``compile_to_onnx`` gives the
passes its mode, and a float32 conv or mean keeps PyTensor's float64
accumulator under "strict" (PyTensor's result exactly) where "fast" sums in
float32."""

from __future__ import annotations

import dataclasses
import textwrap

import numpy as np
import pytensor.tensor as pt
import pytest
from pytensor.tensor.signal import convolve2d

from compiler import compile_to_onnx
from ir import DType, Graph
from ir.interpreter import evaluate
from ir.parser import parse_graph
from ir.printer import print_graph
from passes import Pass, get_pass
from passes.activations import BIT_EXACT, BIT_EXACT_IN_FLOAT16
from passes.rewrite_log import RewriteLog, observing
from tests.helpers import pytensor_reference
from tests.passes.helpers import assert_identical, random_inputs
from tests.passes.test_activations import CASES, check_numbers


def parse(text: str) -> Graph:
    return parse_graph(textwrap.dedent(text).strip() + "\n")


def rewrite(text: str, name: str, numerics: str | None, **options) -> tuple[Graph, Graph, bool]:
    """The graph of ``text``, its copy after pass ``name`` (with
    ``numerics``) and dce, and whether the pass changed it."""
    before = parse(text)
    after = parse(print_graph(before))
    changed = get_pass(name, numerics=numerics, **options).run(after)
    get_pass("dce").run(after)
    return before, after, changed


def bits_differ(before: Graph, after: Graph, values) -> bool:
    """Whether the interpreter's results of ``before`` and ``after`` differ
    anywhere in bits (NaN matching NaN)."""
    for want, got in zip(evaluate(before, values), evaluate(after, values)):
        same = (want == got) & (np.signbit(want) == np.signbit(got)) | (np.isnan(want) & np.isnan(got))
        if not np.all(same):
            return True
    return False


# -- relu-silu ---------------------------------------------------------------------
def strict_fires(name: str) -> bool:
    """Whether relu-silu under "strict" rewrites case ``name``: a BIT_EXACT
    rule, in float16 only a BIT_EXACT_IN_FLOAT16 one."""
    case = CASES[name]
    root = list(parse(case.before))[-1].output.dtype
    return case.rule in BIT_EXACT and (root != DType.FLOAT16 or case.rule in BIT_EXACT_IN_FLOAT16)


@pytest.mark.parametrize("name", CASES)
def test_relu_silu_under_strict_fires_only_bit_exact_rules(name):
    case = CASES[name]
    log = RewriteLog()
    with observing(log):
        before, after, changed = rewrite(case.before, "relu-silu", "strict")
    assert (case.rule in log.fired) is strict_fires(name)
    if strict_fires(name):  # the rewrite of "fast", which the catalog measured bit for bit
        assert print_graph(after) == textwrap.dedent(case.after).strip() + "\n"
        assert case.numbers in ("exact", "zero-sign")
    # whatever fired (hard-sigmoid inside a hard-swish, say) keeps every bit
    check_numbers(before, after, "exact" if case.numbers == "exact" else "zero-sign", seeds=range(4))


# Spellings whose parts compute what the fused op's reference computes, step
# for step (log_softmax subtracts the max again: max(x - max) is 0); "strict"
# declines their rules for the rules' other spellings.
SAME_STEPS = {"gelu-erf-from-f32", "gelu-erf-halved", "log-softmax-parts-keepdims", "log-softmax-shift"}


@pytest.mark.parametrize("name", [n for n in CASES if not strict_fires(n) and n not in SAME_STEPS
                                  and CASES[n].numbers not in ("exact", "zero-sign")])
def test_relu_silu_under_fast_changes_bits_where_strict_declines(name):
    case = CASES[name]
    before, after, changed = rewrite(case.before, "relu-silu", "fast")
    assert changed
    sizes = {d: 1024 for v in before.inputs for d in v.shape if isinstance(d, str)}
    rng = np.random.default_rng(0)
    values = random_inputs(before, rng, sizes)  # NaN, +-inf, -0.0 among normal values
    values = [(v * np.where(rng.random(v.shape) < 0.5, 30, 1)).astype(v.dtype) for v in values]
    assert bits_differ(before, after, values)


def test_relu_silu_alone_is_fast_and_a_bad_mode_is_refused():
    before, after, changed = rewrite(CASES["gelu-erf"].before, "relu-silu", None)
    assert changed and list(after)[-1].op == "gelu"
    with pytest.raises(ValueError, match=r"relu-silu: numerics must be one of 'fast', 'strict'; got 'exact'"):
        get_pass("relu-silu", numerics="exact")


# -- conv-recovery -------------------------------------------------------------------
# PyTensor's float32 channel sum accumulates in float64 (acc_dtype): the cast form.
WIDE_CHANNEL_SUM = """
    graph @main(%x: f32[N,3,5,5]) {
      const %W: f32[1,2,3,1,1] = [[[[[1.0]], [[1.0]], [[1.0]]], [[[2.0]], [[1.0]], [[1.0]]]]]
      %u: f32[N,1,3,5,5] = unsqueeze(%x) {axes=[1]}
      %c: f32[N,2,3,5,5] = convolve2d(%u, %W) {full=false}
      %w: f64[N,2,3,5,5] = cast(%c) {to=f64}
      %s: f64[N,2,5,5] = reduce_sum(%w) {axes=[2], keepdims=false}
      %y: f32[N,2,5,5] = cast(%s) {to=f32}
      return %y
    }"""


def cancelling_channels(dtype=np.float32) -> np.ndarray:
    """(1, 3, 5, 5) channels 1e8, 1, -1e8: summed in float64 the sum is 1,
    in float32 (1e8 + 1 rounds to 1e8) it is 0."""
    return np.broadcast_to(np.array([1e8, 1.0, -1e8], dtype)[None, :, None, None], (1, 3, 5, 5)).copy()


def test_conv_recovery_keeps_pytensors_float64_accumulator_under_strict():
    before, strict, changed = rewrite(WIDE_CHANNEL_SUM, "conv-recovery", "strict")
    assert not changed and print_graph(strict) == print_graph(before)
    _, fast, changed = rewrite(WIDE_CHANNEL_SUM, "conv-recovery", "fast")
    assert changed and [n.op for n in fast] == ["conv"]
    x = cancelling_channels()
    assert evaluate(before, [x])[0][0, 0, 0, 0] == 1.0  # float64 accumulator
    assert evaluate(fast, [x])[0][0, 0, 0, 0] == 0.0  # the conv sums in float32


def test_conv_recovery_under_strict_recovers_a_sum_in_its_own_dtype():
    # float64 throughout: the conv adds the same products in another order
    # (integer-valued data: every order gives the same bits)
    text = WIDE_CHANNEL_SUM.replace("f32", "f64").replace("      %w: f64[N,2,3,5,5] = cast(%c) {to=f64}\n", "") \
        .replace("reduce_sum(%w)", "reduce_sum(%c)").replace("      %y: f64[N,2,5,5] = cast(%s) {to=f64}\n", "") \
        .replace("return %y", "return %s")
    before, after, changed = rewrite(textwrap.dedent(text), "conv-recovery", "strict")
    assert changed and [n.op for n in after] == ["conv"]
    x = np.random.default_rng(1).integers(-50, 50, size=(2, 3, 5, 5)).astype(np.float64)
    assert_identical(evaluate(after, [x])[0], evaluate(before, [x])[0])


def test_conv_recovery_under_strict_keeps_dilation_and_negative_zero_pads():
    dilated = """
        graph @main(%x: f32[N,1,8,8], %w: f32[1,1,2,2]) {
          const %zeros: f32[9] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
          const %idx: i64[1,1,2,2,1] = [[[[[0], [2]], [[6], [8]]]]]
          const %shape: i64[4] = [1, 1, 3, 3]
          %s: f32[9] = scatter_nd(%zeros, %idx, %w) {reduction="none"}
          %k: f32[1,1,3,3] = reshape(%s, %shape)
          %y: f32[N,1,6,6] = conv(%x, %k) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          return %y
        }"""
    before, after, changed = rewrite(dilated, "conv-recovery", "fast")
    assert changed and [n.attrs["dilations"] for n in after if n.op == "conv"] == [(2, 2)]
    x = np.zeros((1, 1, 8, 8), np.float32)
    x[0, 0, 1, 1] = np.inf  # under a zero tap: 0 * inf is NaN before, skipped after
    w = np.ones((1, 1, 2, 2), np.float32)
    assert np.isnan(evaluate(before, [x, w])[0][0, 0, 0, 0]) and evaluate(after, [x, w])[0][0, 0, 0, 0] == 0.0
    assert not rewrite(dilated, "conv-recovery", "strict")[2]
    padded = """
        graph @main(%x: f32[N,1,4,4], %W: f32[1,1,3,3]) {
          const %pad: f32[] = -0.0
          %p: f32[N,1,6,6] = pad(%x, %pad) {pads=[0, 0, 1, 1, 0, 0, 1, 1]}
          %y: f32[N,1,4,4] = conv(%p, %W) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          return %y
        }"""
    assert rewrite(padded, "conv-recovery", "fast")[2]
    assert not rewrite(padded, "conv-recovery", "strict")[2]
    assert rewrite(padded.replace("-0.0", "0.0"), "conv-recovery", "strict")[2]


def test_float32_conv_end_to_end_is_pytensors_under_strict():
    x = pt.tensor("x", dtype="float32", shape=(None, 3, 5, 5))
    y = convolve2d(x[:, None], np.ones((2, 3, 1, 1), np.float32)[None], mode="valid").sum(axis=2)
    value = cancelling_channels()
    want, = pytensor_reference([x], [y], [value])
    assert want[0, 0, 0, 0] == 1.0
    fast = compile_to_onnx([x], outputs=[y])
    strict = compile_to_onnx([x], outputs=[y], numerics="strict")
    assert [n.op_type for n in fast.model.graph.node] == ["Conv"]
    assert "Conv" in {n.op_type for n in strict.model.graph.node}  # one Conv per (image, kernel) plane pair
    assert evaluate(fast.ir, [value])[0][0, 0, 0, 0] == 0.0
    np.testing.assert_array_equal(strict.run(value)[0], want)
    assert strict.rewrites.declined[("channel-sum", "numerics='strict': PyTensor's float64 accumulator of the "
                                                    "float32 channel sum is kept")] == 1


# -- pool-recovery -------------------------------------------------------------------
def mean_of_windows(k: int) -> str:
    """The mean of 2 x k windows of an (N, 1, 4, 2k) x, as a sum times the
    float32 reciprocal of the count (PyTensor's rewrite of the division)."""
    scale = float(np.float32(1 / (2 * k)))
    return f"""
        graph @main(%x: f32[N,1,4,{2 * k}]) {{
          const %shape: i64[6] = [-1, 1, 2, 2, 2, {k}]
          const %scale: f32[] = {scale!r}
          %r: f32[N,1,2,2,2,{k}] = reshape(%x, %shape)
          %s: f32[N,1,2,2] = reduce_sum(%r) {{axes=[3, 5], keepdims=false}}
          %y: f32[N,1,2,2] = mul(%s, %scale)
          return %y
        }}"""


def test_pool_recovery_under_strict_multiplies_only_by_exact_reciprocals():
    sixth, eighth = mean_of_windows(3), mean_of_windows(4)
    before, fast, changed = rewrite(sixth, "pool-recovery", "fast")
    assert changed and [n.op for n in fast] == ["avg_pool"]
    # a window summing to s: s * float32(1/6) is not s / 6 for some s
    s = next(s for s in range(1, 1000) if np.float32(s) * np.float32(1 / 6) != np.float32(s) / np.float32(6))
    x = np.zeros((1, 1, 4, 6), np.float32)
    x[0, 0, 0, 0] = s
    assert bits_differ(before, fast, [x])
    before, strict, changed = rewrite(sixth, "pool-recovery", "strict")
    assert not changed and print_graph(strict) == print_graph(before)
    before, after, changed = rewrite(eighth, "pool-recovery", "strict")  # * 0.125 is / 8 exactly
    assert changed and [n.op for n in after] == ["avg_pool"]
    x = np.random.default_rng(2).integers(-100, 100, size=(2, 1, 4, 8)).astype(np.float32)
    assert_identical(evaluate(after, [x])[0], evaluate(before, [x])[0])


def test_float32_mean_pool_end_to_end_is_pytensors_under_strict():
    x = pt.tensor("x", dtype="float32", shape=(None, 1, 4, 4))
    y = x.reshape((-1, 1, 2, 2, 2, 2)).mean(axis=(3, 5))
    value = np.tile(np.float32([[1e8, 1.0], [-1e8, 2.0]]), (1, 1, 2, 2))  # windows summing to 3 in float64
    want, = pytensor_reference([x], [y], [value])
    fast = compile_to_onnx([x], outputs=[y])
    strict = compile_to_onnx([x], outputs=[y], numerics="strict")
    assert [n.op_type for n in fast.model.graph.node] == ["AveragePool"]
    assert "AveragePool" not in {n.op_type for n in strict.model.graph.node}
    np.testing.assert_array_equal(strict.run(value)[0], want)
    assert want[0, 0, 0, 0] == 0.75 and evaluate(fast.ir, [value])[0][0, 0, 0, 0] != 0.75  # summed in float32


# -- batchnorm-folding, conv-bias-fusion, gemm-fusion -----------------------------------
FOLDABLE = """
    graph @main(%x: f32[N,3,5,5]) {
      const %W: f32[2,3,1,1] = [[[[0.3]], [[0.7]], [[1.1]]], [[[-0.2]], [[0.9]], [[0.4]]]]
      const %sd: f32[1,2,1,1] = [[[[0.7]], [[1.3]]]]
      const %g: f32[1,2,1,1] = [[[[1.7]], [[0.1]]]]
      %c: f32[N,2,5,5] = conv(%x, %W) {dilations=[], flip=true, group=1, pads=[], strides=[]}
      %0: f32[N,2,5,5] = div(%c, %sd)
      %y: f32[N,2,5,5] = mul(%0, %g)
      return %y
    }"""


def test_batchnorm_folding_does_nothing_under_strict():
    before, fast, changed = rewrite(FOLDABLE, "batchnorm-folding", "fast")
    assert changed and [n.op for n in fast] == ["conv"]
    x = np.random.default_rng(3).normal(size=(2, 3, 5, 5)).astype(np.float32)
    assert bits_differ(before, fast, [x])  # (W . x) / sd * g is not (W * g / sd) . x
    before, strict, changed = rewrite(FOLDABLE, "batchnorm-folding", "strict")
    assert not changed and print_graph(strict) == print_graph(before)


def test_conv_bias_fusion_under_strict_keeps_a_second_bias_and_float16():
    with_bias = """
        graph @main(%x: f32[N,3,5,5], %W: f32[2,3,1,1], %b0: f32[2], %b: f32[1,2,1,1]) {
          %c: f32[N,2,5,5] = conv(%x, %W, %b0) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          %y: f32[N,2,5,5] = add(%c, %b)
          return %y
        }"""
    before, fast, changed = rewrite(with_bias, "conv-bias-fusion", "fast")
    assert changed
    x, w = np.ones((1, 3, 5, 5), np.float32), np.ones((2, 3, 1, 1), np.float32)
    b0, b = np.float32([1e8, 1e8]), np.float32([-1e8, -1e8]).reshape(1, 2, 1, 1)
    assert bits_differ(before, fast, [x, w, b0, b])  # (3 + 1e8) - 1e8 = 0 against 3 + (1e8 - 1e8) = 3
    assert not rewrite(with_bias, "conv-bias-fusion", "strict")[2]
    plain = with_bias.replace(", %b0)", ")").replace(", %b0: f32[2]", "")
    before, after, changed = rewrite(plain, "conv-bias-fusion", "strict")
    assert changed
    assert_identical(evaluate(after, [x, w, b])[0], evaluate(before, [x, w, b])[0])
    assert rewrite(plain.replace("f32", "f16"), "conv-bias-fusion", "fast")[2]
    assert not rewrite(plain.replace("f32", "f16"), "conv-bias-fusion", "strict")[2]


def test_gemm_fusion_under_strict_keeps_float16():
    text = """
        graph @main(%a: f16[N,3], %w: f16[3,2], %c: f16[2]) {
          %m: f16[N,2] = matmul(%a, %w)
          %y: f16[N,2] = add(%m, %c)
          return %y
        }"""
    before, fast, changed = rewrite(text, "gemm-fusion", "fast")
    assert changed and [n.op for n in fast] == ["gemm"]
    a = np.float16([[2048.0, 1.0, 0.0]])
    w = np.float16([[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
    c = np.float16([1.0, 0.0])
    assert bits_differ(before, fast, [a, w, c])  # 2048 + 1 rounds to 2048 in float16 before + 1
    assert not rewrite(text, "gemm-fusion", "strict")[2]
    before, after, changed = rewrite(text.replace("f16", "f32"), "gemm-fusion", "strict")
    assert changed
    args = [v.astype(np.float32) for v in (a, w, c)]
    assert_identical(evaluate(after, args)[0], evaluate(before, args)[0])


# -- the driver fills the field ---------------------------------------------------------
SEEN: list = []


@dataclasses.dataclass(frozen=True)
class NumericsProbe(Pass):
    """A plugin-style pass declaring ``numerics``: records what it runs with."""

    name = "test-numerics-probe"
    numerics: str | None = None

    def run(self, graph: Graph) -> bool:
        SEEN.append(self.numerics)
        return False


def test_compile_to_onnx_gives_the_passes_its_mode_and_keeps_a_chosen_one():
    x = pt.matrix("x", dtype="float32")
    gelu = 0.5 * x * (1 + pt.erf(x / np.sqrt(2).astype("float32")))
    SEEN.clear()
    for numerics in ("fast", "strict"):
        compile_to_onnx([x], [NumericsProbe(), NumericsProbe(numerics="fast")], outputs=[gelu], numerics=numerics)
    assert SEEN == ["fast", "fast", "strict", "fast"]
    fast = compile_to_onnx([x], outputs=[gelu])
    strict = compile_to_onnx([x], outputs=[gelu], numerics="strict")
    chosen = compile_to_onnx([x], ["canonicalize", "relu-silu", "dce"], outputs=[gelu], numerics="strict")
    assert "gelu" in {n.op for n in fast.ir} and "gelu" not in {n.op for n in strict.ir}
    assert "gelu" not in {n.op for n in chosen.ir}
    kept = compile_to_onnx([x], ["canonicalize", get_pass("relu-silu", numerics="fast"), "dce"], outputs=[gelu],
                           numerics="strict")
    assert "gelu" in {n.op for n in kept.ir}
