"""``attention``: the causal mask as trilu + add and the score scale moved to
the smaller operand, as IR text before and after (the interpreter agreeing
bit for bit, NaN, +-inf and -0 scores included), the cases where the rules
must not fire, strict numerics, and onnxruntime against PyTensor on a causal
attention with a NaN in a later token (which an additive mask would spread
to the earlier ones)."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.special import softmax

from compiler import compile_to_onnx
from passes.attention import AttentionRewrites
from passes.dce import DeadCodeElimination
from ir.interpreter import evaluate
from ir.parser import parse_graph
from tests.helpers import REFERENCE_MODE
from tests.passes.helpers import check_pass

PASSES = [AttentionRewrites(), DeadCodeElimination()]

# where(i[:, None] >= i[None, :], s, -inf) read by a softmax, i = arange(T) with T read off the shape.
CAUSAL = """
        graph @main(%s: f32[N,2,T,T]) {{
          const %zero: i64[] = 0
          const %one: i64[] = 1
          const %two: i64[] = 2
          const %fill: f32[] = -inf
          %sh: i64[4] = shape(%s)
          %t: i64[] = gather(%sh, %two) {{axis=0}}
          %i: i64[T] = range(%zero, %t, {step})
          %r: i64[T,1] = unsqueeze(%i) {{axes=[1]}}
          %m: bool[T,T] = {cmp}
          %w: f32[N,2,T,T] = {where}
          %p: f32[N,2,T,T] = softmax(%w) {{axis=3}}
          return %p
        }}"""


def causal(cmp="ge(%r, %i)", where="where(%m, %s, %fill)", step="%one") -> str:
    return CAUSAL.format(cmp=cmp, where=where, step=step)


def after(upper: bool, k: int, dropped_upper: bool, dropped_k: int) -> str:
    return f"""
        graph @main(%s: f32[N,2,T,T]) {{
          const %rank: i64[1] = [4]
          const %start: i64[1] = [2]
          const %step: i64[1] = [1]
          const %fill_1: f32[] = -inf
          %w: i64[4] = shape(%s)
          %w_1: i64[2] = slice(%w, %start, %rank, %step) {{axes=[0]}}
          %w_2: f32[T,T] = expand(%fill_1, %w_1)
          %w_3: f32[T,T] = trilu(%w_2) {{k={dropped_k}, upper={str(dropped_upper).lower()}}}
          %w_4: f32[N,2,T,T] = trilu(%s) {{k={k}, upper={str(upper).lower()}}}
          %w_5: f32[N,2,T,T] = add(%w_4, %w_3)
          %p: f32[N,2,T,T] = softmax(%w_5) {{axis=3}}
          return %p
        }}"""


@pytest.mark.parametrize("cmp, where, kept, dropped", [
    ("ge(%r, %i)", "where(%m, %s, %fill)", (False, 0), (True, 1)),     # i[:, None] >= i: causal
    ("gt(%r, %i)", "where(%m, %s, %fill)", (False, -1), (True, 0)),    # strictly below the diagonal
    ("le(%i, %r)", "where(%m, %s, %fill)", (False, 0), (True, 1)),     # the column first
    ("lt(%r, %i)", "where(%m, %fill, %s)", (False, 0), (True, 1)),     # the future masked by the true branch
    ("le(%r, %i)", "where(%m, %s, %fill)", (True, 0), (False, -1)),    # anti-causal
])
def test_a_causal_where_mask_is_trilu_plus_a_fill_triangle(cmp, where, kept, dropped):
    check_pass(PASSES, causal(cmp, where), after(*kept, *dropped), sizes={"N": 2, "T": 5})


def test_a_constant_triangle_mask_is_a_constant_fill_triangle():
    mask = np.tril(np.ones((3, 3), bool)).tolist()
    check_pass(PASSES, f"""
        graph @main(%s: f32[N,3,3]) {{
          const %m: bool[3,3] = {str(mask).replace("True", "true").replace("False", "false")}
          const %fill: f32[] = -inf
          %w: f32[N,3,3] = where(%m, %s, %fill)
          %p: f32[N,3,3] = softmax(%w) {{axis=-1}}
          return %p
        }}""", """
        graph @main(%s: f32[N,3,3]) {
          const %causal_fill: f32[3,3] = [[0.0, -inf, -inf], [0.0, 0.0, -inf], [0.0, 0.0, 0.0]]
          %w: f32[N,3,3] = trilu(%s) {k=0, upper=false}
          %w_1: f32[N,3,3] = add(%w, %causal_fill)
          %p: f32[N,3,3] = softmax(%w_1) {axis=-1}
          return %p
        }""")


@pytest.mark.parametrize("before", [
    causal().replace("softmax(%w) {axis=3}", "exp(%w)"),                      # another reader could see a -0
    causal().replace("softmax(%w) {axis=3}", "softmax(%w) {axis=2}"),         # softmax over the rows
    causal(cmp="ge(%r, %r)"),                                                # a row against a row
    causal().replace("range(%zero, %t, %one)", "range(%t, %zero, %neg)")
            .replace("const %one", "const %neg: i64[] = -1\n          const %one"),  # a decreasing range
    causal().replace("%i: i64[T] = range", "%t1: i64[] = add(%t, %one)\n          %j: i64[T] = range(%one, %t1, %one)"
                     "\n          %i: i64[T] = range").replace("ge(%r, %i)", "ge(%r, %j)"),  # ranges offset by 1
])
def test_the_causal_rule_does_not_fire(before):
    check_pass([AttentionRewrites()], before, None, sizes={"N": 2, "T": 5})


def test_a_non_triangular_constant_mask_does_not_fire():
    check_pass([AttentionRewrites()], """
        graph @main(%s: f32[N,2,2]) {
          const %m: bool[2,2] = [[true, false], [false, true]]
          const %fill: f32[] = -inf
          %w: f32[N,2,2] = where(%m, %s, %fill)
          %p: f32[N,2,2] = softmax(%w) {axis=-1}
          return %p
        }""", None)


SCALED = """
        graph @main(%q: f32[N,2,T,8], %k: f32[N,2,8,T]) {{
          const %c: f32[] = {c}
          %s: f32[N,2,T,T] = matmul(%q, %k)
          %y: f32[N,2,T,T] = {op}
          return %y
        }}"""


@pytest.mark.parametrize("op", ["div(%s, %c)", "mul(%c, %s)"])
def test_a_scaled_product_scales_the_smaller_operand(op):
    # 8 (1/8) is a power of two: the two forms agree bit for bit
    c = "8.0" if op.startswith("div") else "0.125"
    check_pass(PASSES, SCALED.format(c=c, op=op), f"""
        graph @main(%q: f32[N,2,T,8], %k: f32[N,2,8,T]) {{
          const %scale: f32[] = {c}
          %y: f32[N,2,T,8] = {op[:3]}(%q, %scale)
          %y_1: f32[N,2,T,T] = matmul(%y, %k)
          return %y_1
        }}""", sizes={"N": 2, "T": 5})


def test_a_scale_that_is_not_a_power_of_two_rounds_within_the_stated_bound():
    before = parse_graph(SCALED.format(c="3.0", op="div(%s, %c)"))
    rewritten = parse_graph(SCALED.format(c="3.0", op="div(%s, %c)"))
    for p in PASSES:
        p.run(rewritten)
    assert [n.op for n in rewritten.nodes] == ["div", "matmul"]
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 2, 5, 8)).astype("f"), rng.normal(size=(2, 2, 8, 5)).astype("f")
    (want,), (got,) = evaluate(before, [q, k]), evaluate(rewritten, [q, k])
    u, K = np.finfo(np.float32).eps / 2, 8
    bound = (2 * K * u / (1 - K * u) + 2 * u) * (np.abs(q) @ np.abs(k)) / 3
    assert np.all(np.abs(got - want) <= bound) and not np.array_equal(got, want)


@pytest.mark.parametrize("before, pass_", [
    (SCALED.format(c="8.0", op="div(%s, %c)"), AttentionRewrites(numerics="strict")),   # strict keeps it
    (SCALED.format(c="8.0", op="div(%s, %c)").replace("return %y", "return %y, %s"), AttentionRewrites()),
    # the product is read again (above); no operand smaller than the product (below)
    (SCALED.replace("f32[N,2,T,8], %k: f32[N,2,8,T]", "f32[N,2,8,8], %k: f32[N,2,8,8]")
     .replace("N,2,T,T", "N,2,8,8").format(c="8.0", op="div(%s, %c)"), AttentionRewrites()),
    (SCALED.replace("const %c: f32[] = {c}", "const %c: f32[T] = {c}").format(c="8.0", op="div(%s, %c)")
     .replace("const %c: f32[T] = 8.0", "%c: f32[T] = cast(%t) {to=f32}").replace(
        "%k: f32[N,2,8,T]) {", "%k: f32[N,2,8,T], %t: i64[T]) {"), AttentionRewrites()),  # not a constant
])
def test_the_scale_rule_does_not_fire(before, pass_):
    check_pass([pass_], before, None, sizes={"N": 2, "T": 5})


def test_strict_numerics_keeps_the_exact_causal_rule():
    check_pass([AttentionRewrites(numerics="strict"), DeadCodeElimination()], causal(), after(False, 0, True, 1),
               sizes={"N": 2, "T": 5})


def causal_attention():
    """(x, v, y): single-head causal attention, x (N, T, 8) float32 the
    queries and keys, v (N, T, 8) the values."""
    x = pt.tensor3("x", dtype="float32", shape=(None, None, 8))
    v = pt.tensor3("v", dtype="float32", shape=(None, None, 8))
    scores = x @ x.transpose(0, 2, 1) / np.float32(np.sqrt(8))
    i = pt.arange(x.shape[1])
    return x, v, softmax(pt.where(i[:, None] >= i[None, :], scores, np.float32(-np.inf)), axis=-1) @ v


def test_causal_attention_in_onnxruntime_matches_pytensor_with_a_nan_in_a_later_token():
    x, v, y = causal_attention()
    m = compile_to_onnx([x, v], outputs=[y])
    ops = [n.op_type for n in m.model.graph.node]
    assert "Where" not in ops and ops.count("Trilu") == 2
    reference = pytensor.function([x, v], y, mode=REFERENCE_MODE)
    for t in (1, 6):
        value, values = np.random.default_rng(t).normal(size=(2, 2, t, 8)).astype("float32")
        value[1, -1, 3] = np.nan  # the last token's query and key: earlier tokens never attend to it
        got, want = m.run(value, values)[0], reference(value, values)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert np.isnan(got[1, -1]).all() and np.isfinite(got[:, :-1]).all() and np.isfinite(got[0]).all()


def test_a_scaled_product_with_a_constant_operand_scales_the_constant_once():
    check_pass(PASSES, """
        graph @main(%x: f32[N,2]) {
          const %w: f32[2,3] = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
          const %c: f32[] = 4.0
          %s: f32[N,3] = matmul(%x, %w)
          %y: f32[N,3] = div(%s, %c)
          return %y
        }""", """
        graph @main(%x: f32[N,2]) {
          const %scaled: f32[2,3] = [[0.25, 0.5, 0.75], [1.0, 1.25, 1.5]]
          %y: f32[N,3] = matmul(%x, %scaled)
          return %y
        }""", sizes={"N": 3})
