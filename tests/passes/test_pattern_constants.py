"""The pattern engine's constant filter (``passes/rewrite/rules.py``:
``reads_constant``, ``Rule.needs_constant``): in a graph without constants a
rule every match of which reads one is never tried, and a rewrite that makes
the graph's first constant turns it on in the same run; the filter changes
no result (the trace mode, which filters nothing, gives the same IR)."""

from __future__ import annotations

import textwrap

import numpy as np

from ir.parser import parse_graph
from ir.printer import print_graph
from passes.rewrite import AnyOf, Const, ConstEq, Op, Rule, Var, apply_rules, reads_constant

x = Var("x")


def test_which_patterns_read_a_constant():
    assert reads_constant(Const("c"))
    assert reads_constant(Op("mul", x, ConstEq(1)))
    assert reads_constant(Op("exp", Op("mul", x, Const())))
    assert not reads_constant(x)
    assert not reads_constant(Op("mul", x, x))
    assert not reads_constant(Op("mul", x, AnyOf(Const(), Op("neg", x))))  # one alternative reads none
    assert reads_constant(Op("mul", x, AnyOf(Const(), Op("neg", Const()))))
    assert not reads_constant(Op("concat", x, rest=Const()))  # rest may match no input


CALLS: list[str] = []


def _counting_where(node) -> bool:
    CALLS.append(node.op)
    return True


MUL_BY_ONE = Rule("mul-by-one-test", Op("mul", x, ConstEq(1), where=_counting_where), lambda rw, m: m.x)
# neg(neg(x)) -> x * 1: makes a constant, which MUL_BY_ONE then removes
NEG_NEG = Rule("neg-neg-to-mul-one", Op("neg", Op("neg", x)),
               lambda rw, m: rw.add("mul", [m.x, rw.const(np.ones((), np.float32), "one")]))


def test_a_rule_reading_a_constant_is_not_tried_in_a_graph_without_constants():
    assert MUL_BY_ONE.needs_constant and not NEG_NEG.needs_constant
    graph = parse_graph("""
        graph @main(%x: f32[3]) {
          %y: f32[3] = mul(%x, %x)
          return %y
        }""")
    CALLS.clear()
    assert apply_rules(graph, [MUL_BY_ONE]) is False
    assert CALLS == []
    with_constant = parse_graph("""
        graph @main(%x: f32[3]) {
          const %two: f32[] = 2.0
          %y: f32[3] = mul(%x, %two)
          return %y
        }""")
    assert apply_rules(with_constant, [MUL_BY_ONE]) is False
    assert CALLS == ["mul"]


TEXT = """
    graph @main(%x: f32[3]) {
      %a: f32[3] = neg(%x)
      %b: f32[3] = neg(%a)
      %c: f32[3] = exp(%b)
      return %c
    }"""


def test_the_first_constant_a_rewrite_makes_turns_the_rule_on():
    graph = parse_graph(TEXT)
    assert apply_rules(graph, [NEG_NEG, MUL_BY_ONE]) is True
    want = textwrap.dedent("""\
        graph @main(%x: f32[3]) {
          const %one: f32[] = 1.0
          %c: f32[3] = exp(%x)
          return %c
        }""")
    assert print_graph(graph).strip() == want.strip()
    traced = parse_graph(TEXT)
    apply_rules(traced, [NEG_NEG, MUL_BY_ONE], trace=[])  # a trace filters nothing
    assert print_graph(traced) == print_graph(graph)
