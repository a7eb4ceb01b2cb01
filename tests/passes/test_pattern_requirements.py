"""The pattern engine's op filter (``passes/rewrite/rules.py``: ``op_requirements``,
``Rule.possible``): a rule whose pattern needs ops the graph lacks is never
tried, and the filter changes no result, also when a rewrite creates the op
another rule needs.

Graphs are IR text; rewrites are checked as text and with the interpreter.
"""

from __future__ import annotations

import textwrap

import pytest

from ir.parser import parse_graph
from ir.printer import print_graph
from ir.verifier import verify
from passes.rewrite import (MAX_CLAUSES, AnyOf, Const, ConstEq, Miss, Op, Rule, Var, apply_rules,
                            op_requirements)
from tests.passes.helpers import assert_same_numbers

x = Var("x")


def _sets(p) -> set[frozenset[str]]:
    return set(op_requirements(p))


def test_requirements_of_variables_and_constants_are_empty():
    assert op_requirements(x) == (frozenset(),)
    assert op_requirements(Const("c")) == (frozenset(),)


def test_requirements_of_nested_ops_are_their_union():
    p = Op("mul", x, Op("sigmoid", x))
    assert _sets(p) == {frozenset({"mul", "sigmoid"})}


def test_requirements_of_alternatives_are_alternatives():
    p = Op("mul", x, AnyOf(Op("sigmoid", x), Op("tanh", Op("neg", x))))
    assert _sets(p) == {frozenset({"mul", "sigmoid"}), frozenset({"mul", "tanh", "neg"})}


def test_subsumed_requirements_are_dropped():
    # AnyOf(x, cast(x)): x alone needs nothing more, so cast is not required
    p = Op("exp", AnyOf(x, Op("cast", x)))
    assert _sets(p) == {frozenset({"exp"})}


def test_rest_pattern_is_not_required():
    assert _sets(Op("concat", x, rest=Op("neg", x))) == {frozenset({"concat"})}


def test_too_many_alternatives_keep_the_common_ops():
    # 2 choices at each of 7 levels: 128 combinations > MAX_CLAUSES; every one holds "add"
    p = Var("x")
    for i in range(7):
        p = Op("add", AnyOf(Op(f"a{i}", p), Op(f"b{i}", p)), Var())
    assert 2 ** 7 > MAX_CLAUSES
    assert _sets(p) == {frozenset({"add"})}


def test_rule_possible():
    rule = Rule("silu", Op("mul", x, Op("sigmoid", x)), lambda rw, m: rw.add("silu", [m.x]))
    assert rule.requires == (frozenset({"mul", "sigmoid"}),)
    assert rule.possible({"mul", "sigmoid", "cos"})
    assert not rule.possible({"mul", "cos"})


# -- the filter in apply_rules -------------------------------------------------------
# maximum(x, 0) -> relu(x) creates the relu that relu(relu(x)) -> relu(x) needs.
MAX0 = Rule("max0", Op("maximum", x, ConstEq(0)), lambda rw, m: rw.add("relu", [m.x]))
RELU_RELU = Rule("relu-relu", Op("relu", Op("relu", x, name="inner")), lambda rw, m: m.inner.output)

BEFORE = """
graph @main(%a: f32[3]) {
  const %zero: f32[] = 0.0
  %m: f32[3] = maximum(%a, %zero)
  %y: f32[3] = maximum(%m, %zero)
  return %y
}
"""
AFTER = """
graph @main(%a: f32[3]) {
  const %zero: f32[] = 0.0
  %m: f32[3] = relu(%a)
  return %m
}
"""


@pytest.mark.parametrize("traced", [False, True])
def test_a_rule_enabled_by_a_rewrite_still_fires(traced):
    g = parse_graph(textwrap.dedent(BEFORE).lstrip())
    assert not RELU_RELU.possible(g.op_names())  # filtered out at the start
    trace: list[Miss] | None = [] if traced else None
    assert apply_rules(g, [MAX0, RELU_RELU], trace=trace)
    verify(g)
    assert print_graph(g) == textwrap.dedent(AFTER).lstrip()
    assert_same_numbers(parse_graph(textwrap.dedent(BEFORE).lstrip()), g)


def test_no_possible_rule_visits_no_node():
    g = parse_graph(textwrap.dedent("""
        graph @main(%a: f32[3]) {
          %y: f32[3] = cos(%a)
          return %y
        }""").lstrip())
    calls = []

    def counted(node):
        calls.append(node)
        return True

    rule = Rule("cos-of-sigmoid", Op("cos", Op("sigmoid", x), where=counted), lambda rw, m: m.x)
    assert not apply_rules(g, [rule])
    assert calls == []  # the root op is present, but sigmoid is not: the rule is never tried
    trace: list[Miss] = []
    assert not apply_rules(g, [rule], trace=trace)
    assert [m.rule for m in trace] == ["cos-of-sigmoid"]  # a trace still hears why it missed


def test_any_input_adds_its_ops_to_every_requirement():
    rule = Rule("bypass", Op("add", rest=Var(), any_input=Op("unsqueeze", Var())), lambda rw, m: "declines")
    assert rule.requires == (frozenset({"add", "unsqueeze"}),)
    assert rule.child_ops == frozenset({"unsqueeze"})
    assert not rule.possible({"add", "mul"})
    assert rule.possible({"add", "unsqueeze"})
