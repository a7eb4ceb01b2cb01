"""``pool-recovery`` with symbolic H and W: PyTensor's pooling idioms whose
window counts are floor divisions of symbolic sizes (``reshape`` to
``(H // 2, 2)``, maxima of ``::2`` slices, a global mean dividing by a float
product of sizes) as IR text before and after, the cases where they must not
fire, and the documented odd-size difference: PyTensor raises where the
recovered pool drops the remainder (docs/numerics.md)."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from passes.dce import DeadCodeElimination
from passes.pool_recovery import PoolRecovery
from tests.passes.helpers import check_pass

SIZES = {"N": 2, "H": 8, "W": 6}
MEAN_RTOL = 1e-6

# PyTensor's symbolic reshape-max: the target is (N, C, H // 2, 2, W // 2, 2) read off shape(x).
RESHAPE_MAX = """
        graph @main(%x: f32[N,8,H,W]) {
          const %c0: i64[] = 0
          const %c2: i64[] = 2
          const %c3: i64[] = 3
          const %k: i64[1] = [2]
          const %ch: i64[1] = [8]
          %s: i64[4] = shape(%x)
          %w: i64[] = gather(%s, %c3) {axis=0}
          %w2: i64[] = floor_div(%w, %c2)
          %h: i64[] = gather(%s, %c2) {axis=0}
          %h2: i64[] = floor_div(%h, %c2)
          %n: i64[] = gather(%s, %c0) {axis=0}
          %nu: i64[1] = unsqueeze(%n) {axes=[0]}
          %hu: i64[1] = unsqueeze(%h2) {axes=[0]}
          %wu: i64[1] = unsqueeze(%w2) {axes=[0]}
          %t: i64[6] = concat(%nu, %ch, %hu, %k, %wu, %k) {axis=0}
          %r: f32[N,8,H//2,2,W//2,2] = reshape(%x, %t)
          %p: f32[N,8,H//2,W//2] = reduce_max(%r) {axes=[3, 5], keepdims=false}"""

# ... then PyTensor's mean over the symbolic spatial axes: the divisor is cast(shape)[2] * cast(shape)[3].
GLOBAL_MEAN = """
          %ps: i64[4] = shape(%p)
          %pf: f32[4] = cast(%ps) {to=f32}
          %pw: f32[] = gather(%pf, %c3) {axis=0}
          %ph: f32[] = gather(%pf, %c2) {axis=0}
          %count: f32[] = mul(%ph, %pw)
          %wide: f64[N,8,H//2,W//2] = cast(%p) {to=f64}
          %sum: f64[N,8] = reduce_sum(%wide) {axes=[2, 3], keepdims=false}
          %narrow: f32[N,8] = cast(%sum) {to=f32}
          %y: f32[N,8] = div(%narrow, %count)
          return %y
        }"""


def test_symbolic_reshape_max_with_a_floor_divided_target_is_a_max_pool():
    check_pass([PoolRecovery(), DeadCodeElimination()], RESHAPE_MAX + "\n          return %p\n        }", """
        graph @main(%x: f32[N,8,H,W]) {
          %p: f32[N,8,H//2,W//2] = max_pool(%x) {dilations=[], kernel=[2, 2], pads=[], strides=[2, 2]}
          return %p
        }""", sizes=SIZES)


def test_global_mean_dividing_by_a_float_product_of_sizes_is_a_global_pool():
    check_pass([PoolRecovery(), DeadCodeElimination()], RESHAPE_MAX + GLOBAL_MEAN, """
        graph @main(%x: f32[N,8,H,W]) {
          %p: f32[N,8,H//2,W//2] = max_pool(%x) {dilations=[], kernel=[2, 2], pads=[], strides=[2, 2]}
          %y: f32[N,8,1,1] = global_avg_pool(%p)
          %y_1: f32[N,8] = squeeze(%y) {axes=[2, 3]}
          return %y_1
        }""", sizes=SIZES, rtol=MEAN_RTOL)


def test_strict_numerics_keeps_a_mean_dividing_by_a_float_product():
    # strict keeps the widened sum anyway; this divides in float32 with a float32 sum, so only the count declines
    graph = check_pass([PoolRecovery(numerics="strict"), DeadCodeElimination()], RESHAPE_MAX + """
          %ps: i64[4] = shape(%p)
          %pf: f32[4] = cast(%ps) {to=f32}
          %pw: f32[] = gather(%pf, %c3) {axis=0}
          %ph: f32[] = gather(%pf, %c2) {axis=0}
          %count: f32[] = mul(%ph, %pw)
          %sum: f32[N,8] = reduce_sum(%p) {axes=[2, 3], keepdims=false}
          %y: f32[N,8] = div(%sum, %count)
          return %y
        }""", """
        graph @main(%x: f32[N,8,H,W]) {
          const %c2: i64[] = 2
          const %c3: i64[] = 3
          %p: f32[N,8,H//2,W//2] = max_pool(%x) {dilations=[], kernel=[2, 2], pads=[], strides=[2, 2]}
          %ps: i64[4] = shape(%p)
          %pf: f32[4] = cast(%ps) {to=f32}
          %pw: f32[] = gather(%pf, %c3) {axis=0}
          %ph: f32[] = gather(%pf, %c2) {axis=0}
          %count: f32[] = mul(%ph, %pw)
          %sum: f32[N,8] = reduce_sum(%p) {axes=[2, 3], keepdims=false}
          %y: f32[N,8] = div(%sum, %count)
          return %y
        }""", sizes=SIZES)
    assert sum(n.op == "global_avg_pool" for n in graph.nodes) == 0


@pytest.mark.parametrize("target, why", [
    ("%t: i64[6] = concat(%nu, %ch, %hu, %k, %hu, %k) {axis=0}", "W // 2 replaced by H // 2"),
    ("%t: i64[6] = concat(%nu, %ch, %wu, %k, %hu, %k) {axis=0}", "H and W swapped"),
])
def test_reshape_whose_counts_are_not_the_floor_counts_does_not_fire(target, why):
    before = RESHAPE_MAX.replace("%t: i64[6] = concat(%nu, %ch, %hu, %k, %wu, %k) {axis=0}", target)
    out = "H//2,2,H//2" if "%hu, %k, %hu" in target else "W//2,2,H//2"
    before = before.replace("H//2,2,W//2", out).replace("f32[N,8,H//2,W//2] = reduce_max",
                                                        f"f32[N,8,{out.split(',')[0]},{out.split(',')[2]}] = reduce_max")
    check_pass([PoolRecovery()], before + "\n          return %p\n        }", None, sizes={"N": 2, "H": 8, "W": 8})


def strided_graph(starts: list[tuple[int, int]]) -> str:
    """maximum of the ``x[:, :, a::2, b::2]`` for (a, b) in ``starts``."""
    lines = ["graph @main(%x: f32[N,3,H,W]) {", "  const %end: i64[2] = [9223372036854775807, 9223372036854775807]",
             "  const %two: i64[2] = [2, 2]"]
    for i, (a, b) in enumerate(starts):
        lines.append(f"  const %b{i}: i64[2] = [{a}, {b}]")
    for i, (a, b) in enumerate(starts):
        h = f"(max(H-{a},0)+1)//2" if a else "(H+1)//2"
        w = f"(max(W-{b},0)+1)//2" if b else "(W+1)//2"
        lines.append(f"  %s{i}: f32[N,3,{h},{w}] = slice(%x, %b{i}, %end, %two) {{axes=[2, 3]}}")
    last = "%s0"
    for i in range(1, len(starts)):
        lines.append(f"  %m{i}: f32[N,3,?,?] = maximum({last}, %s{i})")
        last = f"%m{i}"
    return "\n".join(lines + [f"  return {last}", "}"])


def test_maximum_of_open_ended_stride_2_slices_is_a_max_pool():
    check_pass([PoolRecovery(), DeadCodeElimination()], strided_graph([(0, 0), (1, 0), (0, 1), (1, 1)]), """
        graph @main(%x: f32[N,3,H,W]) {
          %m3: f32[N,3,H//2,W//2] = max_pool(%x) {dilations=[], kernel=[2, 2], pads=[], strides=[2, 2]}
          return %m3
        }""", sizes=SIZES)


@pytest.mark.parametrize("starts, sizes", [
    ([(0, 0), (1, 0), (0, 1)], SIZES),  # an incomplete grid
    ([(1, 1), (2, 1), (1, 2), (2, 2)], {"N": 2, "H": 9, "W": 7}),  # offset from 1: a crop of symbolic size
], ids=["incomplete", "offset"])
def test_open_ended_slices_that_are_not_a_floor_mode_pool_do_not_fire(starts, sizes):
    check_pass([PoolRecovery()], strided_graph(starts), None, sizes=sizes)


# -- the odd-size difference, end to end -------------------------------------------


@pytest.mark.parametrize("form", ["reshape", "strided"])
def test_odd_sizes_pytensor_raises_where_the_model_floors(form):
    x = pt.tensor4("x", shape=(None, 2, None, None), dtype="float32")
    n, c, h, w = x.shape
    if form == "reshape":
        y = x.reshape((n, c, h // 2, 2, w // 2, 2)).max(axis=(3, 5))
    else:
        y = pt.maximum(pt.maximum(x[:, :, ::2, ::2], x[:, :, 1::2, ::2]),
                       pt.maximum(x[:, :, ::2, 1::2], x[:, :, 1::2, 1::2]))
    m = compile_to_onnx([x], outputs=[y])
    assert [n.op_type for n in m.model.graph.node] == ["MaxPool"]
    odd = np.random.default_rng(0).normal(size=(2, 2, 7, 5)).astype("float32")
    with pytest.raises(ValueError):
        pytensor.function([x], y, mode="FAST_COMPILE")(odd)
    want = odd[:, :, :6, :4].reshape(2, 2, 3, 2, 2, 2).max(axis=(3, 5))  # floor mode: the last row/column dropped
    np.testing.assert_array_equal(m.run(odd)[0], want)
