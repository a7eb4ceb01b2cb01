"""``switch-sink``: PyTensor's ``local_mul_switch_sink`` and
``local_div_switch_sink`` on the IR. IR text before and after, the cases
where it must not fire, the interpreter before and after (equal on finite
inputs; 0 instead of NaN where the zero branch meets an infinite factor),
and raw PyTensor graphs whose default-mode values the model now gives."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from ir.interpreter import evaluate
from ir.parser import parse_graph
from passes.switch_sink import SwitchSink
from tests.passes.helpers import check_pass

SINK = SwitchSink()


def test_mul_by_a_where_with_a_zero_first_branch():
    check_pass(SINK, """
        graph @main(%c: bool[N], %y: f64[N], %z: f64[N]) {
          const %zero: f64[] = 0.0
          %s: f64[N] = where(%c, %zero, %y)
          %p: f64[N] = mul(%s, %z)
          return %p
        }""", """
        graph @main(%c: bool[N], %y: f64[N], %z: f64[N]) {
          const %zero: f64[] = 0.0
          %p: f64[N] = mul(%y, %z)
          %p_1: f64[N] = where(%c, %zero, %p)
          return %p_1
        }""", rtol=0.0)


def test_mul_by_a_where_with_a_zero_second_branch_as_second_operand():
    check_pass(SINK, """
        graph @main(%c: bool[3], %y: f32[3], %z: f32[2,3]) {
          const %zeros: f32[3] = [0.0, 0.0, 0.0]
          %s: f32[3] = where(%c, %y, %zeros)
          %p: f32[2,3] = mul(%z, %s)
          return %p
        }""", """
        graph @main(%c: bool[3], %y: f32[3], %z: f32[2,3]) {
          const %zeros: f32[3] = [0.0, 0.0, 0.0]
          %p: f32[2,3] = mul(%z, %y)
          %p_1: f32[2,3] = where(%c, %p, %zeros)
          return %p_1
        }""", rtol=0.0)


def test_div_and_floor_div_sink_their_numerator():
    check_pass(SINK, """
        graph @main(%c: bool[3], %y: f64[3], %z: f64[3], %i: i64[3], %j: i64[3]) {
          const %zero: f64[] = 0.0
          const %izero: i64[] = 0
          %s: f64[3] = where(%c, %zero, %y)
          %q: f64[3] = div(%s, %z)
          %t: i64[3] = where(%c, %i, %izero)
          %r: i64[3] = floor_div(%t, %j)
          return %q, %r
        }""", """
        graph @main(%c: bool[3], %y: f64[3], %z: f64[3], %i: i64[3], %j: i64[3]) {
          const %zero: f64[] = 0.0
          const %izero: i64[] = 0
          %q: f64[3] = div(%y, %z)
          %q_1: f64[3] = where(%c, %zero, %q)
          %r: i64[3] = floor_div(%i, %j)
          %r_1: i64[3] = where(%c, %r, %izero)
          return %q_1, %r_1
        }""", rtol=0.0)


def test_a_where_read_elsewhere_is_kept_for_its_other_reader():
    check_pass(SINK, """
        graph @main(%c: bool[3], %y: f64[3], %z: f64[3]) {
          const %zero: f64[] = 0.0
          %s: f64[3] = where(%c, %zero, %y)
          %p: f64[3] = mul(%s, %z)
          %e: f64[3] = exp(%s)
          return %p, %e
        }""", """
        graph @main(%c: bool[3], %y: f64[3], %z: f64[3]) {
          const %zero: f64[] = 0.0
          %s: f64[3] = where(%c, %zero, %y)
          %p: f64[3] = mul(%y, %z)
          %p_1: f64[3] = where(%c, %zero, %p)
          %e: f64[3] = exp(%s)
          return %p_1, %e
        }""", rtol=0.0)


@pytest.mark.parametrize("text", [
    # the where in the denominator: PyTensor leaves it (its zero would divide)
    """
        graph @main(%c: bool[3], %y: f64[3], %z: f64[3]) {
          const %zero: f64[] = 0.0
          %s: f64[3] = where(%c, %zero, %y)
          %q: f64[3] = div(%z, %s)
          return %q
        }""",
    # no zero branch
    """
        graph @main(%c: bool[3], %y: f64[3], %z: f64[3]) {
          const %half: f64[] = 0.5
          %s: f64[3] = where(%c, %half, %y)
          %p: f64[3] = mul(%s, %z)
          return %p
        }""",
    # a zero that is not a constant
    """
        graph @main(%c: bool[3], %y: f64[3], %z: f64[3], %w: f64[3]) {
          %s: f64[3] = where(%c, %w, %y)
          %p: f64[3] = mul(%s, %z)
          return %p
        }""",
    # a constant with one nonzero element
    """
        graph @main(%c: bool[2], %y: f64[2], %z: f64[2]) {
          const %k: f64[2] = [0.0, 1.0]
          %s: f64[2] = where(%c, %k, %y)
          %p: f64[2] = mul(%s, %z)
          return %p
        }""",
    # an add is not a product
    """
        graph @main(%c: bool[3], %y: f64[3], %z: f64[3]) {
          const %zero: f64[] = 0.0
          %s: f64[3] = where(%c, %zero, %y)
          %p: f64[3] = add(%s, %z)
          return %p
        }""",
], ids=["denominator", "no-zero", "not-constant", "not-all-zero", "add"])
def test_does_not_fire(text):
    check_pass(SINK, text, None)


def test_an_infinite_factor_where_the_zero_is_taken_gives_zero_not_nan():
    before = """
        graph @main(%c: bool[4], %y: f64[4], %z: f64[4]) {
          const %zero: f64[] = 0.0
          %s: f64[4] = where(%c, %zero, %y)
          %p: f64[4] = mul(%s, %z)
          return %p
        }"""
    graph = parse_graph(before)
    assert SINK.run(graph)
    c = np.array([True, True, False, False])
    y = np.array([2.0, 3.0, 4.0, 5.0])
    z = np.array([np.inf, np.nan, 0.5, np.inf])
    np.testing.assert_array_equal(evaluate(parse_graph(before), [c, y, z])[0], [np.nan, np.nan, 2.0, np.inf])
    np.testing.assert_array_equal(evaluate(graph, [c, y, z])[0], [0.0, 0.0, 2.0, np.inf])


def _default_mode_and_model(inputs, outputs, *args):
    want = pytensor.function(inputs, outputs)(*args)
    got = compile_to_onnx(inputs, outputs=outputs).run(*args)
    literal = compile_to_onnx(inputs, outputs=outputs, passes=[]).run(*args)
    return want, got, literal


def test_the_gradient_of_a_switch_is_zero_where_the_untaken_branch_is_infinite():
    """``grad(switch(x > 0, log(x), 0))`` at x <= 0: PyTensor's default mode
    gives 0; the graph as written (``passes=[]``) gives ``0 * (1/x)``, NaN."""
    x = pt.dvector("x")
    y = pt.switch(x > 0, pt.log(x), 0.0).sum()
    g = pytensor.grad(y, x)
    xs = np.array([-1.0, 0.0, 0.5, 2.0])
    want, got, literal = _default_mode_and_model([x], [g], xs)
    np.testing.assert_array_equal(want[0], [0.0, 0.0, 2.0, 0.5])
    np.testing.assert_array_equal(got[0], want[0])
    assert np.isnan(literal[0][1])


def test_the_gradient_of_log_gammainc_at_zero():
    """d/da log(gammainc(a, 0)): 0 in PyTensor's default modes (issue 26's
    censored models at a zero detection limit)."""
    a, x = pt.dvector("a"), pt.dvector("x")
    y = pt.log(pt.gammainc(a, x)).sum()
    g = pytensor.grad(y, a)
    args = (np.array([0.5, 2.0, 3.0]), np.array([0.0, 0.0, 1.5]))
    want, got, _ = _default_mode_and_model([a, x], [y, g], *args)
    np.testing.assert_array_equal(want[1][:2], [0.0, 0.0])
    np.testing.assert_array_equal(got[1][:2], [0.0, 0.0])
    # away from x = 0 both are the gradient's series (PyTensor's ScalarLoop): mpmath's value, to its accuracy
    np.testing.assert_allclose(got[1][2], -0.9606454663031653, rtol=1e-10)
    np.testing.assert_allclose(want[1][2], -0.9606454663031653, rtol=2e-10)
    assert got[0] == want[0] == -np.inf
