"""``batchnorm-folding``: batch normalization (and any per-channel affine
chain) folded into the preceding conv, or made one ``batch_norm``. IR text
before and after, with the interpreter agreeing to float rounding on random
inputs; the variants of the formula; and the cases it must not take."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode, get_default_mode
from pytensor.tensor.signal import convolve2d

import passes.conv_bias  # noqa: F401  (registers the passes named in PIPELINE)
import passes.conv_recovery  # noqa: F401
import passes.filter_flip  # noqa: F401
from compiler import compile_to_onnx
from passes.batchnorm_folding import BatchNormFolding
from passes.dce import DeadCodeElimination
from tests.helpers import check_pytensor, pytensor_reference
from tests.passes.helpers import check_pass

BN = BatchNormFolding()
PASSES = [BN, DeadCodeElimination()]
CONV = "{dilations=[], flip=true, group=1, pads=[], strides=[]}"
RTOL = 1e-5


def check(before: str, after: str | None, **kw):
    return check_pass(PASSES, before, after, rtol=RTOL, **kw)


# -- rule 1: constants after a conv fold into its weights and bias -----------------
FOLDED = f"""
    graph @main(%x: f32[N,3,5,5]) {{
      const %W_1: f32[2,3,1,1] = [[[[0.75]], [[1.5]], [[2.25]]], [[[-12.0]], [[6.0]], [[3.0]]]]
      const %bias: f32[2] = [-0.25, 12.25]
      %y: f32[N,2,5,5] = conv(%x, %W_1, %bias) {CONV}
      return %y
    }}"""
STATS = """
      const %W: f32[2,3,1,1] = [[[[1.0]], [[2.0]], [[3.0]]], [[[-1.0]], [[0.5]], [[0.25]]]]
      const %m: f32[1,2,1,1] = [[[[0.5]], [[-1.0]]]]
      const %sd: f32[1,2,1,1] = [[[[2.0]], [[0.25]]]]
      const %g: f32[1,2,1,1] = [[[[1.5]], [[3.0]]]]
      const %b: f32[1,2,1,1] = [[[[0.125]], [[0.25]]]]"""


@pytest.mark.parametrize("chain", [
    # (c - m) / sd * g + b, beta first
    """%0: f32[N,2,5,5] = sub(%c, %m)
      %1: f32[N,2,5,5] = div(%0, %sd)
      %2: f32[N,2,5,5] = mul(%1, %g)
      %y: f32[N,2,5,5] = add(%b, %2)""",
    # g * (c - m) * (1 / sd) + b: gamma first, the reciprocal folded by constant folding
    """const %r: f32[1,2,1,1] = [[[[0.5]], [[4.0]]]]
      %0: f32[N,2,5,5] = sub(%c, %m)
      %1: f32[N,2,5,5] = mul(%g, %0)
      %2: f32[N,2,5,5] = mul(%1, %r)
      %y: f32[N,2,5,5] = add(%2, %b)""",
], ids=["canonical", "gamma-first-reciprocal"])
def test_constant_batch_norm_after_a_conv_folds_into_it(chain):
    check(f"""
        graph @main(%x: f32[N,3,5,5]) {{{STATS}
          %c: f32[N,2,5,5] = conv(%x, %W) {CONV}
          {chain}
          return %y
        }}""", FOLDED)


def test_kernel_and_bias_inputs_get_scaling_nodes():
    check(f"""
        graph @main(%x: f32[N,3,5,5], %W: f32[2,3,3,3], %b0: f32[2]) {{
          const %m: f32[1,2,1,1] = [[[[0.5]], [[-1.0]]]]
          const %r: f32[1,2,1,1] = [[[[0.5]], [[4.0]]]]
          %c: f32[N,2,3,3] = conv(%x, %W, %b0) {CONV}
          %0: f32[N,2,3,3] = sub(%c, %m)
          %y: f32[N,2,3,3] = mul(%r, %0)
          return %y
        }}""", f"""
        graph @main(%x: f32[N,3,5,5], %W: f32[2,3,3,3], %b0: f32[2]) {{
          const %scale: f32[2,1,1,1] = [[[[0.5]]], [[[4.0]]]]
          const %scale_1: f32[2] = [0.5, 4.0]
          const %shift: f32[2] = [-0.25, 4.0]
          %y: f32[2,3,3,3] = mul(%W, %scale)
          %y_1: f32[2] = mul(%b0, %scale_1)
          %y_2: f32[2] = add(%y_1, %shift)
          %y_3: f32[N,2,3,3] = conv(%x, %y, %y_2) {CONV}
          return %y_3
        }}""")


def test_grouped_flipped_conv_keeps_its_attributes_and_existing_bias():
    check("""
        graph @main(%x: f32[N,2,4,4]) {
          const %W: f32[2,1,1,1] = [[[[2.0]]], [[[-3.0]]]]
          const %b0: f32[2] = [1.0, 0.5]
          const %s: f32[2,1,1] = [[[0.5]], [[2.0]]]
          %c: f32[N,2,4,4] = conv(%x, %W, %b0) {dilations=[], flip=true, group=2, pads=[1, 1, 1, 1], strides=[2, 2]}
          %y: f32[N,2,4,4] = mul(%c, %s)
          return %y
        }""".replace("f32[N,2,4,4] = conv", "f32[N,2,3,3] = conv").replace("%y: f32[N,2,4,4]", "%y: f32[N,2,3,3]"),
          """
        graph @main(%x: f32[N,2,4,4]) {
          const %W_1: f32[2,1,1,1] = [[[[1.0]]], [[[-6.0]]]]
          const %b0_1: f32[2] = [0.5, 1.0]
          %y: f32[N,2,3,3] = conv(%x, %W_1, %b0_1) {dilations=[], flip=true, group=2, pads=[1, 1, 1, 1], strides=[2, 2]}
          return %y
        }""")


def test_float64_normalization_of_a_float32_conv_keeps_its_dtypes():
    # PyTensor makes (x - m) / sqrt(v + 1e-5) float64 (a Python float eps): the
    # float32 part folds into the conv, the float64 part stays float64.
    check(f"""
        graph @main(%x: f32[N,3,5,5], %W: f32[2,3,3,3]) {{
          const %m: f32[1,2,1,1] = [[[[0.5]], [[-1.0]]]]
          const %sd: f64[1,2,1,1] = [[[[2.0]], [[0.25]]]]
          const %g: f64[1,2,1,1] = [[[[1.5]], [[3.0]]]]
          %c: f32[N,2,3,3] = conv(%x, %W) {CONV}
          %0: f32[N,2,3,3] = sub(%c, %m)
          %1: f64[N,2,3,3] = cast(%0) {{to=f64}}
          %2: f64[N,2,3,3] = div(%1, %sd)
          %y: f64[N,2,3,3] = mul(%2, %g)
          return %y
        }}""", f"""
        graph @main(%x: f32[N,3,5,5], %W: f32[2,3,3,3]) {{
          const %bias: f32[2] = [-0.5, 1.0]
          const %scale: f64[2] = [0.75, 12.0]
          const %shift: f64[2] = [0.0, 0.0]
          const %mean: f64[2] = [0.0, 0.0]
          const %var: f64[2] = [1.0, 1.0]
          %0: f32[N,2,3,3] = conv(%x, %W, %bias) {CONV}
          %1: f64[N,2,3,3] = cast(%0) {{to=f64}}
          %y: f64[N,2,3,3] = batch_norm(%1, %scale, %shift, %mean, %var) {{epsilon=0.0}}
          return %y
        }}""")


# -- rule 2: batch normalization with statistics that are not constants --------------
def test_batch_norm_of_inputs_in_the_reciprocal_gamma_first_spelling():
    check("""
        graph @main(%x: f32[N,3,5,5], %m: f32[3], %v: f32[3], %g: f32[3], %b: f32[3]) {
          const %eps: f32[] = 1e-05
          %m4: f32[1,3,1,1] = unsqueeze(%m) {axes=[0, 2, 3]}
          %v4: f32[1,3,1,1] = unsqueeze(%v) {axes=[0, 2, 3]}
          %g4: f32[1,3,1,1] = unsqueeze(%g) {axes=[0, 2, 3]}
          %b4: f32[1,3,1,1] = unsqueeze(%b) {axes=[0, 2, 3]}
          %0: f32[N,3,5,5] = sub(%x, %m4)
          %1: f32[1,3,1,1] = add(%eps, %v4)
          %2: f32[1,3,1,1] = sqrt(%1)
          %3: f32[1,3,1,1] = reciprocal(%2)
          %4: f32[N,3,5,5] = mul(%g4, %0)
          %5: f32[N,3,5,5] = mul(%4, %3)
          %y: f32[N,3,5,5] = add(%5, %b4)
          return %y
        }""", """
        graph @main(%x: f32[N,3,5,5], %m: f32[3], %v: f32[3], %g: f32[3], %b: f32[3]) {
          %y: f32[N,3,5,5] = batch_norm(%x, %g, %b, %m, %v) {epsilon=9.999999747378752e-06}
          return %y
        }""")


def test_batch_norm_after_a_conv_with_input_statistics():
    check(f"""
        graph @main(%x: f32[N,3,5,5], %W: f32[2,3,3,3], %m: f32[1,2,1,1], %v: f32[1,2,1,1]) {{
          const %eps: f32[] = 0.001
          %c: f32[N,2,3,3] = conv(%x, %W) {CONV}
          %0: f32[N,2,3,3] = sub(%c, %m)
          %1: f32[1,2,1,1] = add(%v, %eps)
          %2: f32[1,2,1,1] = sqrt(%1)
          %y: f32[N,2,3,3] = div(%0, %2)
          return %y
        }}""", f"""
        graph @main(%x: f32[N,3,5,5], %W: f32[2,3,3,3], %m: f32[1,2,1,1], %v: f32[1,2,1,1]) {{
          const %gamma: f32[2] = [1.0, 1.0]
          const %beta: f32[2] = [0.0, 0.0]
          %c: f32[N,2,3,3] = conv(%x, %W) {CONV}
          %y: f32[2] = squeeze(%m) {{axes=[0, 2, 3]}}
          %y_1: f32[2] = squeeze(%v) {{axes=[0, 2, 3]}}
          %y_2: f32[N,2,3,3] = batch_norm(%c, %gamma, %beta, %y, %y_1) {{epsilon=0.0010000000474974513}}
          return %y_2
        }}""", sizes={})


def test_rank_2_batch_norm_with_pow_minus_half_and_gamma_over_the_root():
    check("""
        graph @main(%x: f32[N,3], %m: f32[3], %v: f32[3], %g: f32[3]) {
          const %eps: f32[] = 0.001
          const %half: f32[] = -0.5
          %0: f32[N,3] = sub(%x, %m)
          %1: f32[3] = add(%v, %eps)
          %2: f32[3] = pow(%1, %half)
          %3: f32[3] = mul(%g, %2)
          %y: f32[N,3] = mul(%0, %3)
          return %y
        }""", """
        graph @main(%x: f32[N,3], %m: f32[3], %v: f32[3], %g: f32[3]) {
          const %beta: f32[3] = [0.0, 0.0, 0.0]
          %y: f32[N,3] = batch_norm(%x, %g, %beta, %m, %v) {epsilon=0.0010000000474974513}
          return %y
        }""")


def test_folded_constant_root_moves_into_the_scale():
    check("""
        graph @main(%x: f32[N,2,4,4], %g: f32[2,1,1]) {
          const %m: f32[2,1,1] = [[[0.5]], [[-1.0]]]
          const %sd: f32[2,1,1] = [[[2.0]], [[0.25]]]
          %r: f32[N,2,4,4] = relu(%x)
          %0: f32[N,2,4,4] = sub(%r, %m)
          %1: f32[N,2,4,4] = div(%0, %sd)
          %y: f32[N,2,4,4] = mul(%1, %g)
          return %y
        }""", """
        graph @main(%x: f32[N,2,4,4], %g: f32[2,1,1]) {
          const %m_1: f32[2] = [0.5, -1.0]
          const %sd_1: f32[2] = [2.0, 0.25]
          const %var: f32[2] = [1.0, 1.0]
          const %beta: f32[2] = [0.0, 0.0]
          %r: f32[N,2,4,4] = relu(%x)
          %y: f32[2] = squeeze(%g) {axes=[1, 2]}
          %y_1: f32[2] = div(%y, %sd_1)
          %y_2: f32[N,2,4,4] = batch_norm(%r, %y_1, %beta, %m_1, %var) {epsilon=0.0}
          return %y_2
        }""")


# -- rule 3: a constant affine chain on anything else ----------------------------------
def test_constant_scale_and_shift_after_a_relu_is_one_batch_norm():
    check("""
        graph @main(%x: f32[N,2,4,4]) {
          const %s: f32[1,2,1,1] = [[[[0.5]], [[2.0]]]]
          const %t: f32[] = 1.0
          %r: f32[N,2,4,4] = relu(%x)
          %0: f32[N,2,4,4] = mul(%s, %r)
          %y: f32[N,2,4,4] = add(%0, %t)
          return %y
        }""", """
        graph @main(%x: f32[N,2,4,4]) {
          const %scale: f32[2] = [0.5, 2.0]
          const %shift: f32[2] = [1.0, 1.0]
          const %mean: f32[2] = [0.0, 0.0]
          const %var: f32[2] = [1.0, 1.0]
          %r: f32[N,2,4,4] = relu(%x)
          %y: f32[N,2,4,4] = batch_norm(%r, %scale, %shift, %mean, %var) {epsilon=0.0}
          return %y
        }""")


# -- does not fire ---------------------------------------------------------------------
def test_conv_read_elsewhere_is_not_folded_and_a_bare_shift_stays():
    check_pass(BN, f"""
        graph @main(%x: f32[N,3,5,5], %W: f32[2,3,3,3]) {{
          const %t: f32[1,2,1,1] = [[[[0.5]], [[-1.0]]]]
          %c: f32[N,2,3,3] = conv(%x, %W) {CONV}
          %y: f32[N,2,3,3] = add(%c, %t)
          return %y, %c
        }}""", None)


def test_zero_divisor_is_not_folded():
    check_pass(BN, f"""
        graph @main(%x: f32[N,3,5,5], %W: f32[2,3,3,3]) {{
          const %sd: f32[1,2,1,1] = [[[[2.0]], [[0.0]]]]
          %c: f32[N,2,3,3] = conv(%x, %W) {CONV}
          %y: f32[N,2,3,3] = div(%c, %sd)
          return %y
        }}""", None)


def test_operand_along_the_wrong_axis_is_not_a_channel_step():
    check_pass(BN, """
        graph @main(%x: f32[N,3,5,5], %m: f32[1,1,1,5], %v: f32[1,1,1,5]) {
          %0: f32[N,3,5,5] = sub(%x, %m)
          %1: f32[1,1,1,5] = sqrt(%v)
          %y: f32[N,3,5,5] = div(%0, %1)
          return %y
        }""", None)


def test_normalization_with_an_extra_use_of_an_intermediate_is_not_one_batch_norm():
    # %0 is read twice: the chain ending at %y is only the division, no batch norm.
    check_pass(BN, """
        graph @main(%x: f32[N,3,5,5], %m: f32[1,3,1,1], %v: f32[1,3,1,1]) {
          %0: f32[N,3,5,5] = sub(%x, %m)
          %1: f32[1,3,1,1] = sqrt(%v)
          %y: f32[N,3,5,5] = div(%0, %1)
          return %y, %0
        }""", None)


def test_scale_without_a_root_or_rank_2_constants_are_not_batch_norm():
    check_pass(BN, """
        graph @main(%x: f32[N,3,5,5], %g: f32[1,3,1,1], %b: f32[1,3,1,1]) {
          %0: f32[N,3,5,5] = mul(%x, %g)
          %y: f32[N,3,5,5] = add(%0, %b)
          return %y
        }""", None)
    check_pass(BN, """
        graph @main(%x: f32[N,2]) {
          const %s: f32[2] = [0.5, 2.0]
          const %t: f32[2] = [1.0, -1.0]
          %0: f32[N,2] = mul(%x, %s)
          %y: f32[N,2] = add(%0, %t)
          return %y
        }""", None)


def test_divisor_that_is_not_a_square_root_is_not_batch_norm():
    check_pass(BN, """
        graph @main(%x: f32[N,3,5,5], %m: f32[1,3,1,1], %v: f32[1,3,1,1]) {
          const %eps: f32[] = 0.001
          %0: f32[N,3,5,5] = sub(%x, %m)
          %1: f32[1,3,1,1] = add(%v, %eps)
          %2: f32[1,3,1,1] = exp(%1)
          %y: f32[N,3,5,5] = div(%0, %2)
          return %y
        }""", None)


# -- PyTensor end to end ---------------------------------------------------------------
PIPELINE = ["canonicalize", "constant-folding", "canonicalize", "cse", "dce",
            "conv-recovery", "conv-bias-fusion", "batchnorm-folding", "filter-flip", "cse", "dce"]
# PyTensor's default rewrites (the graph its default mode compiles) with the Python linker.
DEFAULT_REWRITES = Mode(linker="py", optimizer=get_default_mode().provided_optimizer)
EPS = np.float32(1e-5)


def histogram(compiled) -> dict[str, int]:
    """ONNX op type -> count in the emitted model."""
    return dict(Counter(n.op_type for n in compiled.model.graph.node))


def _channel(v):
    return v[None, :, None, None]


def _network(stats, spelling="canonical"):
    """conv + bias + inference batch norm on ``stats`` (mean, var, gamma, beta)."""
    rng = np.random.default_rng(0)
    x = pt.tensor4("x", dtype="float32", shape=(None, 3, 6, 6))
    W = pt.constant(rng.normal(size=(4, 3, 3, 3)).astype(np.float32))
    b = pt.constant(rng.normal(size=4).astype(np.float32))
    c = convolve2d(x[:, None], W[None], mode="valid").sum(axis=2) + _channel(b)
    m, v, g, beta = (_channel(s) for s in stats)
    if spelling == "canonical":
        y = (c - m) / pt.sqrt(v + EPS) * g + beta
    else:  # gamma first, times the reciprocal of the root
        y = g * (c - m) * pt.reciprocal(pt.sqrt(v + EPS)) + beta
    return x, y, rng.normal(size=(2, 3, 6, 6)).astype(np.float32)


def _stats(rng):
    return [rng.normal(size=4).astype(np.float32), rng.uniform(0.5, 2, size=4).astype(np.float32),
            rng.normal(size=4).astype(np.float32), rng.normal(size=4).astype(np.float32)]


@pytest.mark.parametrize("spelling", ["canonical", "gamma-first-reciprocal"])
def test_pytensor_batch_norm_with_shared_statistics_folds_into_one_conv(spelling):
    stats = [pytensor.shared(s) for s in _stats(np.random.default_rng(1))]
    x, y, xv = _network(stats, spelling)
    compiled = check_pytensor([x], y, [xv], passes=PIPELINE, rtol=1e-5, atol=1e-5)
    assert histogram(compiled) == {"Conv": 1}
    assert len(compiled.model.graph.node[0].input) == 3


def test_pytensor_default_mode_graph_folds_too():
    stats = [pytensor.shared(s) for s in _stats(np.random.default_rng(2))]
    x, y, xv = _network(stats)
    compiled = compile_to_onnx(pytensor.function([x], y, mode=DEFAULT_REWRITES), passes=PIPELINE)
    (want,) = pytensor_reference([x], [y], [xv])
    np.testing.assert_allclose(compiled.run(xv)[0], want, rtol=1e-5, atol=1e-5)
    assert histogram(compiled) == {"Conv": 1}


def test_pytensor_batch_norm_of_input_statistics_is_batch_normalization():
    stats = [pt.vector(n, dtype="float32", shape=(4,)) for n in ("mean", "var", "gamma", "beta")]
    x, y, xv = _network(stats)
    compiled = check_pytensor([x, *stats], y, [xv, *_stats(np.random.default_rng(3))], passes=PIPELINE,
                              rtol=1e-5, atol=1e-5)
    assert histogram(compiled) == {"Conv": 1, "BatchNormalization": 1}


def test_pytensor_batch_norm_without_a_conv_is_batch_normalization():
    x = pt.tensor4("x", dtype="float32", shape=(None, 4, 5, 5))
    stats = [pt.vector(n, dtype="float32", shape=(4,)) for n in ("mean", "var", "gamma", "beta")]
    m, v, g, beta = (_channel(s) for s in stats)
    y = (x - m) / pt.sqrt(v + EPS) * g + beta
    rng = np.random.default_rng(4)
    compiled = check_pytensor([x, *stats], y, [rng.normal(size=(2, 4, 5, 5)).astype(np.float32), *_stats(rng)],
                              passes=PIPELINE, rtol=1e-5, atol=1e-5)
    assert histogram(compiled) == {"BatchNormalization": 1}


def test_python_float_epsilon_keeps_the_float64_part_in_float64():
    # ``v + 1e-5`` is float64 in PyTensor (floatX=float64): the float32 conv and
    # its mean subtraction fold, the float64 normalization stays float64.
    stats = [pytensor.shared(s) for s in _stats(np.random.default_rng(5))]
    rng = np.random.default_rng(0)
    x = pt.tensor4("x", dtype="float32", shape=(None, 3, 6, 6))
    W = pt.constant(rng.normal(size=(4, 3, 3, 3)).astype(np.float32))
    c = convolve2d(x[:, None], W[None], mode="valid").sum(axis=2)
    m, v, g, beta = (_channel(s) for s in stats)
    y = (c - m) / pt.sqrt(v + 1e-5) * g + beta
    assert y.dtype == "float64"
    xv = rng.normal(size=(2, 3, 6, 6)).astype(np.float32)
    compiled = check_pytensor([x], y, [xv], passes=PIPELINE, rtol=1e-6, atol=1e-6)
    assert histogram(compiled) == {"Conv": 1, "Cast": 1, "BatchNormalization": 1}
