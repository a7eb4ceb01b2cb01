"""IfElse: lowering to ``if``, the ``if-sinking`` and ``if-to-where``
passes as IR text before and after (with interpreter checks), and the
emitted models against PyTensor (ONNX If, or Where)."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.ifelse import ifelse

import passes.if_sinking  # noqa: F401  (registers the passes)
import passes.if_to_where  # noqa: F401
import passes.scan_unroll  # noqa: F401
from tests.helpers import compile_debug
from passes.if_sinking import IfSinking
from passes.if_to_where import IfToWhere
from tests.control_flow import models
from tests.control_flow.helpers import C_MODE, check, onnx_ops
from tests.passes.helpers import check_pass

BRANCHES = """
    graph @main(%c: bool[], %x: f32[N], %y: f32[N]) {
      %e: f32[N] = exp(%x)
      %l: f32[N] = log(%y)
      %s: f32[N] = add(%l, %y)
      %r: f32[N] = if(%c, %e, %s, %x) (then: graph @t(%t.e: f32[N], %t.s: f32[N], %t.x: f32[N]) {
        %d: f32[N] = sub(%t.e, %t.x)
        return %d
      }, else: graph @f(%f.e: f32[N], %f.s: f32[N], %f.x: f32[N]) {
        return %f.s
      })
      return %r
    }"""


def test_sinking_moves_each_branchs_own_work_into_it():
    """exp feeds only the then branch, log and add only the else branch;
    %x is read by both, so it stays captured."""
    check_pass(IfSinking(), BRANCHES, """
        graph @main(%c: bool[], %x: f32[N], %y: f32[N]) {
          %r: f32[N] = if(%c, %x, %y) (then: graph @t(%t.x: f32[N], %t.y: f32[N]) {
            %e: f32[N] = exp(%t.x)
            %d: f32[N] = sub(%e, %t.x)
            return %d
          }, else: graph @f(%f.x: f32[N], %f.y: f32[N]) {
            %l: f32[N] = log(%f.y)
            %s: f32[N] = add(%l, %f.y)
            return %s
          })
          return %r
        }""")


def test_sinking_keeps_shared_values_outputs_and_copies_small_constants():
    check_pass(IfSinking(), """
        graph @main(%c: bool[], %x: f32[N]) {
          const %two: f32[] = 2.0
          %e: f32[N] = exp(%x)
          %m: f32[N] = mul(%x, %two)
          %n: f32[N] = neg(%m)
          %r: f32[N] = if(%c, %e, %n) (then: graph @t(%t.e: f32[N], %t.n: f32[N]) {
            return %t.e
          }, else: graph @f(%f.e: f32[N], %f.n: f32[N]) {
            return %f.n
          })
          return %r, %e
        }""", """
        graph @main(%c: bool[], %x: f32[N]) {
          const %two: f32[] = 2.0
          %e: f32[N] = exp(%x)
          %r: f32[N] = if(%c, %e, %x) (then: graph @t(%t.e: f32[N], %t.x: f32[N]) {
            return %t.e
          }, else: graph @f(%f.e: f32[N], %f.x: f32[N]) {
            const %f.two: f32[] = 2.0
            %m: f32[N] = mul(%f.x, %f.two)
            %n: f32[N] = neg(%m)
            return %n
          })
          return %r, %e
        }""")


def test_if_to_where_inlines_cheap_total_branches():
    check_pass([IfSinking(), IfToWhere()], BRANCHES, """
        graph @main(%c: bool[], %x: f32[N], %y: f32[N]) {
          %e: f32[N] = exp(%x)
          %d: f32[N] = sub(%e, %x)
          %l: f32[N] = log(%y)
          %s: f32[N] = add(%l, %y)
          %r: f32[N] = where(%c, %d, %s)
          return %r
        }""")


@pytest.mark.parametrize("text, max_nodes", [
    ("""
    graph @main(%c: bool[], %x: i32[N], %y: i32[N]) {
      %r: i32[N] = if(%c, %x, %y) (then: graph @t(%t.x: i32[N], %t.y: i32[N]) {
        %d: i32[N] = floor_div(%t.x, %t.y)
        return %d
      }, else: graph @f(%f.x: i32[N], %f.y: i32[N]) {
        return %f.y
      })
      return %r
    }""", 8),  # an integer division by zero may trap
    ("""
    graph @main(%c: bool[], %x: f32[N]) {
      %r: f32[] = if(%c, %x) (then: graph @t(%t.x: f32[N]) {
        %m: f32[] = reduce_max(%t.x) {axes=[], keepdims=false}
        return %m
      }, else: graph @f(%f.x: f32[N]) {
        %s: f32[] = reduce_sum(%f.x) {axes=[], keepdims=false}
        return %s
      })
      return %r
    }""", 8),  # the max of an empty axis fails
    ("""
    graph @main(%c: bool[], %x: f32[N], %y: f32[M]) {
      %r: f32[?] = if(%c, %x, %y) (then: graph @t(%t.x: f32[N], %t.y: f32[M]) {
        return %t.x
      }, else: graph @f(%f.x: f32[N], %f.y: f32[M]) {
        return %f.y
      })
      return %r
    }""", 8),  # the shapes may differ
    (BRANCHES, 0),  # too costly for the threshold
])
def test_if_to_where_leaves_partial_costly_or_shape_changing_branches(text, max_nodes):
    check_pass(IfToWhere(max_nodes=max_nodes), text, None)


def test_ifelse_outside_a_scan_becomes_a_lazy_if(default):
    """After sinking, each branch computes its own reductions inside the
    ONNX If; PyTensor, onnxruntime and the interpreter agree on both sides."""
    m = default.model("ifelse_outside")
    compiled = compile_debug(m.inputs, outputs=m.outputs, passes=["if-sinking", "if-to-where", "dce"])
    top = [n.op_type for n in compiled.model.graph.node]
    assert "If" in top and "Exp" not in top and "ReduceMax" not in top
    for T in (3, 8):
        for sign in (1.0, -1.0):
            values = [sign * m.values(T)[0]]
            check(compiled, values, default.reference(m.name, T, values), f"ifelse_outside, sign {sign}")


def test_ifelse_inside_an_unrolled_scan_becomes_where(default):
    m = models.ifelse_inside(6)
    compiled = compile_debug(m.inputs, outputs=m.outputs,
                               passes=["scan-unroll", "if-sinking", "if-to-where", "cse", "dce"])
    ops = onnx_ops(compiled.model)
    assert "If" not in ops and "Loop" not in ops
    assert [n.op for n in compiled.ir].count("where") == 6
    check(compiled, m.values(6), default.reference("ifelse_inside", 6), "ifelse_inside unrolled")


def test_ifelse_of_several_outputs_with_a_non_bool_condition():
    """``IfElse`` with two outputs on an integer condition (true when != 0),
    compiled in C mode."""
    k = pt.iscalar("k")
    x = pt.dvector("x")
    a, b = ifelse(k, [x * 2.0, x.sum()], [x - 1.0, x.max()])
    fn = pytensor.function([k, x], [a, b], mode=C_MODE)
    compiled = compile_debug(fn, passes=["if-sinking", "dce"])
    for kv in (0, 3):
        values = [np.int32(kv), np.array([1.0, -2.0, 0.5])]
        check(compiled, values, [np.asarray(r) for r in fn(*values)], f"k={kv}")
