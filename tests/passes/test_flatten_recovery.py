"""``flatten-recovery``: the rule as IR text before and after (the
interpreter agreeing bit for bit on random inputs), the cases where it must
not fire, and PyTensor's flattening reshapes (raw and compiled, static and
symbolic batch) against onnxruntime with the ONNX op histogram."""

from __future__ import annotations

import collections

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from ir.parser import parse_graph
from passes.dce import DeadCodeElimination
from passes.shape_facts import DimOf, dim_source
from passes.flatten_recovery import FlattenRecovery
from tests.helpers import assert_same, check_pytensor, pytensor_reference
from tests.passes.helpers import check_pass

FR = FlattenRecovery()


def check(before: str, after: str | None, **kw):
    """``check_pass`` with flatten-recovery (and dce, unless nothing may change)."""
    return check_pass([FR, DeadCodeElimination()] if after is not None else [FR], before, after, **kw)


@pytest.mark.parametrize("target, out, axis, flat", [
    ("[2, -1]", "f32[2,80]", 1, "f32[2,80]"),
    ("[-1, 80]", "f32[2,80]", 1, "f32[2,80]"),
    ("[10, 16]", "f32[10,16]", 2, "f32[10,16]"),
    ("[1, -1]", "f32[1,160]", 0, "f32[1,160]"),
    ("[160, 1]", "f32[160,1]", 4, "f32[160,1]"),
])
def test_static_flattening_reshapes(target, out, axis, flat):
    check(f"""
        graph @main(%x: f32[2,5,4,4]) {{
          const %t: i64[2] = {target}
          %y: {out} = reshape(%x, %t)
          return %y
        }}""", f"""
        graph @main(%x: f32[2,5,4,4]) {{
          %y: {flat} = flatten(%x) {{axis={axis}}}
          return %y
        }}""")


def test_symbolic_batch_drops_the_run_time_shape_computation():
    check("""
        graph @main(%x: f32[N,16,5,5]) {
          const %zero: i64[] = 0
          const %minus_one: i64[1] = [-1]
          %s: i64[4] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %u: i64[1] = unsqueeze(%n) {axes=[0]}
          %t: i64[2] = concat(%u, %minus_one) {axis=0}
          %y: f32[?,?] = reshape(%x, %t)
          return %y
        }""", """
        graph @main(%x: f32[N,16,5,5]) {
          %y: f32[N,400] = flatten(%x) {axis=1}
          return %y
        }""")


def test_symbolic_product_of_leading_dims():
    # x.reshape((x.shape[0] * 16, -1)): flatten at axis 2
    check("""
        graph @main(%x: f32[N,16,5,5]) {
          const %zero: i64[] = 0
          const %sixteen: i64[] = 16
          const %minus_one: i64[1] = [-1]
          %s: i64[4] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %m: i64[] = mul(%sixteen, %n)
          %u: i64[1] = unsqueeze(%m) {axes=[0]}
          %t: i64[2] = concat(%u, %minus_one) {axis=0}
          %y: f32[?,?] = reshape(%x, %t)
          return %y
        }""", """
        graph @main(%x: f32[N,16,5,5]) {
          %y: f32[16*N,25] = flatten(%x) {axis=2}
          return %y
        }""")


def test_batch_of_a_reshaped_value_and_a_shape_vector_with_another_reader():
    # x's batch is only known through the reshape that made it; the shape
    # vector also feeds another reshape, so it stays.
    check("""
        graph @main(%v: f32[N,80]) {
          const %zero: i64[] = 0
          const %rest: i64[3] = [5, 4, 4]
          const %minus_one: i64[1] = [-1]
          %s: i64[2] = shape(%v)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %u: i64[1] = unsqueeze(%n) {axes=[0]}
          %t4: i64[4] = concat(%u, %rest) {axis=0}
          %x: f32[?,5,4,4] = reshape(%v, %t4)
          %e: f32[?,5,4,4] = exp(%x)
          %sx: i64[4] = shape(%e)
          %ne: i64[] = gather(%sx, %zero) {axis=0}
          %ue: i64[1] = unsqueeze(%ne) {axes=[0]}
          %t: i64[2] = concat(%ue, %minus_one) {axis=0}
          %y: f32[?,?] = reshape(%e, %t)
          return %y, %x
        }""", """
        graph @main(%v: f32[N,80]) {
          const %zero: i64[] = 0
          const %rest: i64[3] = [5, 4, 4]
          %s: i64[2] = shape(%v)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %u: i64[1] = unsqueeze(%n) {axes=[0]}
          %t4: i64[4] = concat(%u, %rest) {axis=0}
          %x: f32[?,5,4,4] = reshape(%v, %t4)
          %e: f32[?,5,4,4] = exp(%x)
          %y: f32[?,80] = flatten(%e) {axis=1}
          return %y, %x
        }""")


def test_rank_2_reshape_to_its_own_shape_is_the_input():
    check("""
        graph @main(%x: f32[N,7]) {
          const %zero: i64[] = 0
          const %minus_one: i64[1] = [-1]
          %s: i64[2] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %u: i64[1] = unsqueeze(%n) {axes=[0]}
          %t: i64[2] = concat(%u, %minus_one) {axis=0}
          %y: f32[?,?] = reshape(%x, %t)
          %z: f32[?,?] = neg(%y)
          return %z
        }""", """
        graph @main(%x: f32[N,7]) {
          %z: f32[N,7] = neg(%x)
          return %z
        }""")  # the reader of the replaced reshape is re-inferred (Graph.replace_all_uses)


@pytest.mark.parametrize("target", ["[8, -1]", "[8, 20]", "[-1, 20]"])
def test_reshapes_that_are_not_a_flatten_do_not_fire(target):
    # (2, 5, 4, 4): the leading products are 1, 2, 10, 40, 160; 8 and 20 are none of them
    check(f"""
        graph @main(%x: f32[2,5,4,4]) {{
          const %t: i64[2] = {target}
          %y: f32[8,20] = reshape(%x, %t)
          return %y
        }}""", None)


def test_targets_of_unknown_dims_and_rank_3_do_not_fire():
    check("""
        graph @main(%x: f32[N,16,5,5], %v: f32[A,B], %w: f32[C,D,E]) {
          %t: i64[2] = shape(%v)
          %y: f32[?,?] = reshape(%x, %t)
          %t3: i64[3] = shape(%w)
          %z: f32[?,?,?] = reshape(%x, %t3)
          return %y, %z
        }""", None, sizes={"N": 2, "A": 10, "B": 80, "C": 2, "D": 16, "E": 25})


def test_dim_sources_follow_only_ops_that_keep_the_shape():
    # what the rule relies on: a transpose of two unknown dims swaps them
    g = parse_graph("""
        graph @main(%v: f32[?,?]) {
          %e: f32[?,?] = exp(%v)
          %t: f32[?,?] = transpose(%v) {perm=[1, 0]}
          return %e, %t
        }""")
    (v,), (e, t) = g.inputs, g.outputs
    assert dim_source(e, 0) == dim_source(v, 0) == DimOf(v, 0)
    assert dim_source(t, 0) == DimOf(t, 0) != dim_source(v, 0)


# -- PyTensor vs onnxruntime -------------------------------------------------------------
PIPELINE = ["canonicalize", "constant-folding", "canonicalize", "cse", "dce", FR, DeadCodeElimination()]


def histogram(compiled) -> dict:
    return dict(collections.Counter(n.op_type for n in compiled.model.graph.node))


FLATTENS = {
    "reshape(n, -1)": (lambda x: x.reshape((x.shape[0], -1)), 1),
    "flatten(2)": (lambda x: x.flatten(2), 1),
    "reshape(-1, 80)": (lambda x: x.reshape((-1, 80)), 1),
    "reshape(n * 5, 16)": (lambda x: x.reshape((x.shape[0] * 5, 16)), 2),
}


@pytest.mark.parametrize("batch", [2, None], ids=["static", "symbolic"])
@pytest.mark.parametrize("form", sorted(FLATTENS))
def test_pytensor_flattens_compile_to_one_flatten(form, batch):
    build, axis = FLATTENS[form]
    x = pt.tensor4("x", shape=(batch, 5, 4, 4), dtype="float32")
    xv = np.random.default_rng(0).normal(size=(2, 5, 4, 4)).astype(np.float32)
    m = check_pytensor([x], [build(x)], [xv], passes=PIPELINE)
    assert histogram(m) == {"Flatten": 1}, m.ir
    assert [n.attrs["axis"] for n in m.ir] == [axis]


def test_default_mode_compiled_flatten_with_symbolic_batch():
    x = pt.tensor4("x", shape=(None, 5, 4, 4), dtype="float32")
    y = pt.exp(x).reshape((x.shape[0], -1))
    xv = np.random.default_rng(0).normal(size=(3, 5, 4, 4)).astype(np.float32)
    want = pytensor_reference([x], [y], [xv])[0]
    m = compile_to_onnx(pytensor.function([x], y), passes=PIPELINE)
    assert_same(m.run(xv)[0], want, rtol=1e-6, atol=1e-6, what="onnxruntime")
    assert histogram(m) == {"Exp": 1, "Flatten": 1}, m.ir
