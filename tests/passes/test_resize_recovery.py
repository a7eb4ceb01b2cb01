"""``resize-recovery``: each rule as IR text before and after (the
interpreter agreeing bit for bit on random inputs), the cases where it must
not fire, and PyTensor's repeat graphs (raw and compiled, static and
symbolic batch, H and W) against onnxruntime with the ONNX op histogram."""

from __future__ import annotations

import collections

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from ir.interpreter import evaluate
from passes.dce import DeadCodeElimination
from passes.resize_recovery import ResizeRecovery
from tests.helpers import assert_same, check_pytensor, pytensor_reference
from tests.passes.helpers import check_pass

RR = ResizeRecovery()


def check(before: str, after: str | None, **kw):
    """``check_pass`` with resize-recovery (and dce, unless nothing may change)."""
    return check_pass([RR, DeadCodeElimination()] if after is not None else [RR], before, after, **kw)


# -- rule 1: reshape(expand(unsqueeze(x))) ------------------------------------------
def test_repeat_is_a_resize():
    check("""
        graph @main(%x: f32[2,3,4,5]) {
          const %t: i64[5] = [2, 3, 4, 2, 5]
          const %s: i64[4] = [2, 3, 8, 5]
          %u: f32[2,3,4,1,5] = unsqueeze(%x) {axes=[3]}
          %e: f32[2,3,4,2,5] = expand(%u, %t)
          %y: f32[2,3,8,5] = reshape(%e, %s)
          return %y
        }""", """
        graph @main(%x: f32[2,3,4,5]) {
          %y: f32[2,3,8,5] = resize_nearest(%x) {scales=[1, 1, 2, 1]}
          return %y
        }""")


def test_repeats_of_two_axes_with_a_symbolic_batch_are_one_resize():
    # PyTensor's compiled form: the targets are built from shape(x)[0] at run
    # time, and the first repeat's reshape also adds the second's unit axis.
    check("""
        graph @main(%x: f32[N,3,4,5]) {
          const %zero: i64[] = 0
          const %t1: i64[4] = [3, 4, 2, 5]
          const %m: i64[4] = [3, 8, 5, 1]
          const %t2: i64[4] = [3, 8, 5, 3]
          const %o: i64[3] = [3, 8, 15]
          %s: i64[4] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %nu: i64[1] = unsqueeze(%n) {axes=[0]}
          %c1: i64[5] = concat(%nu, %t1) {axis=0}
          %c2: i64[5] = concat(%nu, %m) {axis=0}
          %c3: i64[5] = concat(%nu, %t2) {axis=0}
          %c4: i64[4] = concat(%nu, %o) {axis=0}
          %u: f32[N,3,4,1,5] = unsqueeze(%x) {axes=[3]}
          %e1: f32[?,3,4,2,5] = expand(%u, %c1)
          %r1: f32[?,3,8,5,1] = reshape(%e1, %c2)
          %e2: f32[?,3,8,5,3] = expand(%r1, %c3)
          %y: f32[?,3,8,15] = reshape(%e2, %c4)
          return %y
        }""", """
        graph @main(%x: f32[N,3,4,5]) {
          %y: f32[N,3,8,15] = resize_nearest(%x) {scales=[1, 1, 2, 3]}
          return %y
        }""", sizes={"N": 2})


def test_unit_axis_of_another_value_is_squeezed():
    check("""
        graph @main(%x: f32[2,3,1,5]) {
          const %t: i64[4] = [2, 3, 4, 5]
          const %s: i64[3] = [2, 12, 5]
          %e: f32[2,3,4,5] = expand(%x, %t)
          %y: f32[2,12,5] = reshape(%e, %s)
          return %y
        }""", """
        graph @main(%x: f32[2,3,1,5]) {
          %y: f32[2,3,5] = squeeze(%x) {axes=[2]}
          %y_1: f32[2,12,5] = resize_nearest(%y) {scales=[1, 4, 1]}
          return %y_1
        }""")


# -- rule 3: merge -------------------------------------------------------------------
def test_resizes_merge():
    check("""
        graph @main(%x: i32[N,3,4,5]) {
          %a: i32[N,3,8,5] = resize_nearest(%x) {scales=[1, 1, 2, 1]}
          %b: i32[N,3,8,10] = resize_nearest(%a) {scales=[1, 1, 1, 2]}
          %y: i32[N,3,24,10] = resize_nearest(%b) {scales=[1, 1, 3, 1]}
          return %y
        }""", """
        graph @main(%x: i32[N,3,4,5]) {
          %y: i32[N,3,24,10] = resize_nearest(%x) {scales=[1, 1, 6, 2]}
          return %y
        }""")


# -- does not fire -------------------------------------------------------------------------
@pytest.mark.parametrize("u, axes, e, target, y, shape, why", [
    ("f32[1,3,4,1,5]", "[3]", "f32[2,3,4,2,5]", "[2, 3, 4, 2, 5]", "f32[2,3,8,5]", "[2, 3, 8, 5]",
     "the expand also broadcasts the batch"),
    ("f32[1,3,1,4,5]", "[2]", "f32[1,3,2,4,5]", "[1, 3, 2, 4, 5]", "f32[1,3,8,5]", "[1, 3, 8, 5]",
     "the new axis is merged with the axis after it: a tile, not a repeat"),
    ("f32[1,1,3,4,5]", "[0]", "f32[2,1,3,4,5]", "[2, 1, 3, 4, 5]", "f32[2,3,4,5]", "[2, 3, 4, 5]",
     "a leading new axis: a tile of the whole tensor"),
])
def test_broadcasts_that_are_not_a_repeat_do_not_fire(u, axes, e, target, y, shape, why):
    x = "f32[1,3,4,5]"
    check(f"""
        graph @main(%x: {x}) {{
          const %t: i64[5] = {target}
          const %s: i64[4] = {shape}
          %u: {u} = unsqueeze(%x) {{axes={axes}}}
          %e: {e} = expand(%u, %t)
          %y: {y} = reshape(%e, %s)
          return %y
        }}""", None)


def test_expand_with_another_reader_or_an_unknown_count_does_not_fire():
    check("""
        graph @main(%x: f32[2,3,4,5], %v: f32[A,B,C,D,E]) {
          const %t: i64[5] = [2, 3, 4, 2, 5]
          const %s: i64[4] = [2, 3, 8, 5]
          %u: f32[2,3,4,1,5] = unsqueeze(%x) {axes=[3]}
          %e: f32[2,3,4,2,5] = expand(%u, %t)
          %y: f32[2,3,8,5] = reshape(%e, %s)
          %z: f32[2,3,4,2,5] = neg(%e)
          %t2: i64[5] = shape(%v)
          %e2: f32[?,?,?,?,?] = expand(%u, %t2)
          %w: f32[2,3,8,5] = reshape(%e2, %s)
          return %y, %z, %w
        }""", None, sizes={"A": 2, "B": 3, "C": 4, "D": 2, "E": 5})


# -- PyTensor vs onnxruntime -------------------------------------------------------------
PIPELINE = ["canonicalize", "constant-folding", "canonicalize", "cse", "dce", RR, DeadCodeElimination()]


def histogram(compiled) -> dict:
    return dict(collections.Counter(n.op_type for n in compiled.model.graph.node))


C_MODE = pytensor.compile.mode.Mode(linker="cvm", optimizer="fast_run")


def check_both(x, y, xv, compiled_mode):
    """PyTensor vs onnxruntime and the interpreter, for the raw graph
    (``compiled_mode`` False) or its compiled function (``"default"`` or
    ``"c"`` mode); returns the CompiledModel."""
    if not compiled_mode:
        return check_pytensor([x], [y], [xv], passes=PIPELINE)
    want = pytensor_reference([x], [y], [xv])[0]
    m = compile_to_onnx(pytensor.function([x], y, mode=C_MODE if compiled_mode == "c" else None), passes=PIPELINE)
    for got in (m.run(xv)[0], evaluate(m.ir, [xv])[0]):
        assert_same(got, want, rtol=0, atol=0, what="compiled function")
    return m


REPEATS = {
    "x.repeat axes 2 and 3": (lambda x: x.repeat(2, axis=2).repeat(2, axis=3), [1, 1, 2, 2]),
    "pt.repeat axis 3": (lambda x: pt.repeat(x, 3, axis=3), [1, 1, 1, 3]),
    "x.repeat channels": (lambda x: x.repeat(2, axis=1), [1, 2, 1, 1]),
}


@pytest.mark.parametrize("spatial", [(4, 5), (None, None)], ids=["static-hw", "symbolic-hw"])
@pytest.mark.parametrize("form, batch, compiled_mode", [
    *((form, batch, False) for form in sorted(REPEATS) for batch in (2, None)),
    # compiled functions (slower to build): the two-axis upsampling
    *(("x.repeat axes 2 and 3", batch, "default") for batch in (2, None)),
    ("x.repeat axes 2 and 3", None, "c"),
])
def test_pytensor_repeats_compile_to_one_resize(form, batch, compiled_mode, spatial):
    """Static or symbolic H and W (then the repeated axis is ``2*H`` for a
    named ``H``, and a compiled function computes its sizes through
    ``where``s of comparisons that the shape facts decide)."""
    build, scales = REPEATS[form]
    x = pt.tensor4("x", shape=(batch, 3, *spatial), dtype="float32")
    xv = np.random.default_rng(0).normal(size=(2, 3, 4, 5)).astype(np.float32)
    m = check_both(x, build(x), xv, compiled_mode)
    assert histogram(m) == {"Resize": 1}, m.ir
    assert [n.attrs["scales"] for n in m.ir] == [tuple(scales)]
    if spatial == (None, None):  # another image size through the same model
        other = np.random.default_rng(1).normal(size=(2, 3, 7, 2)).astype(np.float32)
        assert_same(m.run(other)[0], pytensor_reference([x], [build(x)], [other])[0], rtol=0, atol=0,
                    what="7x2 image")


def test_repeat_of_a_symbolic_batch_is_a_resize_of_the_batch():
    x = pt.tensor4("x", shape=(None, 3, 4, 5), dtype="float32")
    xv = np.random.default_rng(0).normal(size=(2, 3, 4, 5)).astype(np.float32)
    m = check_pytensor([x], [x.repeat(2, axis=0)], [xv], passes=PIPELINE)
    assert [(n.op, n.attrs["scales"]) for n in m.ir] == [("resize_nearest", (2, 1, 1, 1))]


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_other_dtypes(dtype):
    # int32 has a Resize kernel; float64 does not and the emitter bridges it exactly.
    x = pt.tensor4("x", shape=(None, 2, 3, 3), dtype=dtype)
    xv = (np.arange(36).reshape(2, 2, 3, 3) * 3 - 20).astype(dtype)
    m = check_pytensor([x], [x.repeat(2, axis=2).repeat(3, axis=3)], [xv], passes=PIPELINE)
    assert [(n.op, n.attrs["scales"]) for n in m.ir] == [("resize_nearest", (1, 1, 2, 3))]
