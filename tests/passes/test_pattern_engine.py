"""The pattern-rewrite engine (``passes/rewrite/``): matching (variables,
constants, commutative operands, alternatives, attributes, single use),
rules and rule sets, the worklist driver (fixpoint, termination guard,
dead-code cleanup) and the reasons it gives when a rule does not fire.

Graphs are IR text; the rules here are small test rules over ordinary ops.
"""

from __future__ import annotations

import logging
import textwrap

import numpy as np
import pytest

from ir import DType, Graph, TensorType
from ir.interpreter import evaluate
from ir.parser import parse_graph
from ir.printer import print_graph
from ir.verifier import verify
from passes.rewrite import (AnyOf, Const, ConstEq, Match, Miss, Op, Rule, RuleSet, Var, apply_rules,
                            erase_dead)
from tests.passes.helpers import assert_same_numbers

x, y = Var("x"), Var("y")

# Test rules. Each keeps its value's type, so the driver accepts it.
NEG_NEG = Rule("neg-neg", Op("neg", Op("neg", x)), lambda rw, m: m.x)  # -(-x) -> x
SILU = Rule("silu", Op("mul", x, Op("sigmoid", x)), lambda rw, m: rw.add("silu", [m.x]))  # x*sigmoid(x) -> silu(x)
MAX0 = Rule("max0", Op("maximum", x, ConstEq(0)), lambda rw, m: rw.add("relu", [m.x]))  # max(x, 0) -> relu(x)


def graph_of(text: str):
    g = parse_graph(textwrap.dedent(text).strip() + "\n")
    verify(g)
    return g


def rewrite(rules, before: str, after: str | None, *, trace: list | None = None, changed: bool | None = None):
    """Apply ``rules`` to the IR ``before``; compare with ``after`` (None:
    unchanged) and the interpreter results before and after."""
    before = textwrap.dedent(before).strip() + "\n"
    expected = before if after is None else textwrap.dedent(after).strip() + "\n"
    g = graph_of(before)
    did = apply_rules(g, rules, trace=trace)
    verify(g, context="after apply_rules")
    actual = print_graph(g)
    assert actual == expected, f"apply_rules gave:\n{actual}\nexpected:\n{expected}"
    assert did is (expected != before if changed is None else changed)
    assert_same_numbers(parse_graph(before), g)
    return g


def match(pattern: Op, text: str, root: str = "%y") -> tuple[Match, str | None]:
    """Match ``pattern`` against the node defining the value named ``root``."""
    g = graph_of(text)
    node = next(n for n in g if f"%{n.output.name}" == root)
    m = Match(node)
    return m, pattern.match_node(node, m)


# -- variables ----------------------------------------------------------------
def test_repeated_variable_binds_one_value():
    rewrite([SILU], """
        graph @main(%a: f32[3]) {
          %s: f32[3] = sigmoid(%a)
          %y: f32[3] = mul(%a, %s)
          return %y
        }""", """
        graph @main(%a: f32[3]) {
          %y: f32[3] = silu(%a)
          return %y
        }""")


def test_repeated_variable_refuses_two_values():
    trace: list[Miss] = []
    rewrite([SILU], """
        graph @main(%a: f32[3], %b: f32[3]) {
          %s: f32[3] = sigmoid(%b)
          %y: f32[3] = mul(%a, %s)
          return %y
        }""", None, trace=trace)
    assert trace == [Miss("silu", "mul -> %y", "x is bound to another value; %a is not produced by sigmoid")]


def test_variable_constraint():
    p = Op("neg", Var("v", where=lambda v: v.dtype.is_float))
    m, why = match(p, """
        graph @main(%a: f32[3]) {
          %y: f32[3] = neg(%a)
          return %y
        }""")
    assert why is None and m.v.name == "a" and m["v"] is m.v and "v" in m
    _, why = match(p, """
        graph @main(%a: i32[3]) {
          %y: i32[3] = neg(%a)
          return %y
        }""")
    assert why == "v %a fails its constraint"


def test_match_exposes_the_root_and_named_nodes():
    p = Op("mul", x, Op("sigmoid", x, name="sig"))
    m, why = match(p, """
        graph @main(%a: f32[3]) {
          %s: f32[3] = sigmoid(%a)
          %y: f32[3] = mul(%s, %a)
          return %y
        }""")
    assert why is None
    assert m.root.op == "mul" and m.sig.op == "sigmoid" and m.x.name == "a"
    with pytest.raises(AttributeError, match="binds no 'z'"):
        m.z


# -- commutative operands ------------------------------------------------------
@pytest.mark.parametrize("operands", ["%a, %s", "%s, %a"])
def test_commutative_op_matches_either_order(operands):
    _, why = match(Op("mul", x, Op("sigmoid", x)), f"""
        graph @main(%a: f32[3]) {{
          %s: f32[3] = sigmoid(%a)
          %y: f32[3] = mul({operands})
          return %y
        }}""")
    assert why is None


def test_non_commutative_op_keeps_its_order():
    p = Op("sub", x, Op("exp", y))
    text = """
        graph @main(%a: f32[3], %b: f32[3]) {
          %e: f32[3] = exp(%b)
          %y: f32[3] = sub(%e, %a)
          return %y
        }"""
    _, why = match(p, text)
    assert why == "%a is not produced by exp"


def test_commutative_match_backtracks_into_an_inner_operand():
    # (b + a) * b with pattern (x + y) * x: the inner add must be tried as
    # x=b, y=a even though x=a, y=b matched the add first.
    m, why = match(Op("mul", Op("add", x, y), x), """
        graph @main(%a: f32[3], %b: f32[3]) {
          %s: f32[3] = add(%a, %b)
          %y: f32[3] = mul(%s, %b)
          return %y
        }""")
    assert why is None and (m.x.name, m.y.name) == ("b", "a")


def test_bindings_of_a_failed_order_do_not_leak():
    # The first order binds x=%b before failing on exp; the swapped order
    # must start from clean bindings.
    m, why = match(Op("add", x, Op("exp", y), name="sum"), """
        graph @main(%a: f32[3], %b: f32[3]) {
          %e: f32[3] = exp(%a)
          %y: f32[3] = add(%e, %b)
          return %y
        }""")
    assert why is None and (m.x.name, m.y.name) == ("b", "a") and m.sum.op == "add"


def test_any_of_tries_each_alternative():
    p = Op("neg", AnyOf(Op("exp", x), Op("log", x)))
    for op in ("exp", "log"):
        m, why = match(p, f"""
            graph @main(%a: f32[3]) {{
              %e: f32[3] = {op}(%a)
              %y: f32[3] = neg(%e)
              return %y
            }}""")
        assert why is None and m.x.name == "a"
    _, why = match(p, """
        graph @main(%a: f32[3]) {
          %e: f32[3] = sin(%a)
          %y: f32[3] = neg(%e)
          return %y
        }""")
    assert why == "%e is not produced by exp; %e is not produced by log"


def test_any_of_backtracks_when_a_later_operand_fails():
    # x is either the add's operand or the add itself; only the second
    # choice agrees with the other operand of mul.
    p = Op("mul", AnyOf(Op("add", x, ConstEq(1), single_use=False), x), Op("exp", x))
    m, why = match(p, """
        graph @main(%a: f32[3]) {
          const %one: f32[] = 1.0
          %s: f32[3] = add(%a, %one)
          %e: f32[3] = exp(%s)
          %y: f32[3] = mul(%s, %e)
          return %y
        }""")
    assert why is None and m.x.name == "s"


def test_rest_matches_any_number_of_further_inputs():
    p = Op("concat", x, rest=Op("exp", y, single_use=False), name="cat")
    text = """
        graph @main(%a: f32[2], %b: f32[2]) {{
          %e: f32[2] = exp(%b)
          %y: f32[{n}] = concat({inputs}) {{axis=0}}
          return %y
        }}"""
    assert match(p, text.format(n=2, inputs="%a"))[1] is None
    m, why = match(p, text.format(n=6, inputs="%a, %e, %e"))
    assert why is None and m.y.name == "b" and m.cat.op == "concat"
    _, why = match(p, text.format(n=6, inputs="%a, %e, %a"))
    assert why == "%a is not produced by exp"


# -- constants -----------------------------------------------------------------
@pytest.mark.parametrize("array", [
    np.float32(0), np.zeros(1, np.float32), np.zeros((1, 1), np.float32), np.float32(-0.0),
    np.zeros((1, 1, 1), np.float64), np.zeros(3, np.float16), np.int32(0), np.zeros((1, 3), np.int64),
    np.bool_(False), np.zeros((4, 5), np.float32),
])
def test_const_eq_matches_a_broadcast_scalar_of_any_shape_and_dtype(array):
    c = Graph().add_constant(array, "c")
    m = Match(None)
    assert ConstEq(0, name="z").match(c, m) is None and m.z is c


@pytest.mark.parametrize("array", [
    np.array([0.0, 1.0], np.float32), np.zeros((0,), np.float32), np.array(np.nan, np.float64),
    np.array([0, 0, 1], np.int64),
])
def test_const_eq_refuses_other_values_and_empty_arrays(array):
    c = Graph().add_constant(array, "c")
    assert ConstEq(0).match(c, Match(None)) == "constant %c fails its constraint"


def test_const_refuses_a_computed_value_and_checks_its_constraint():
    p = Op("mul", x, Const("k", where=lambda a: a.ndim == 0))
    m, why = match(p, """
        graph @main(%a: f32[3]) {
          const %k: f32[] = 2.5
          %y: f32[3] = mul(%k, %a)
          return %y
        }""")
    assert why is None and m.k.name == "k" and float(m.k.const) == 2.5
    _, why = match(p, """
        graph @main(%a: f32[3], %b: f32[3]) {
          %y: f32[3] = mul(%a, %b)
          return %y
        }""")
    assert why == "%b is not a constant; %a is not a constant"  # why each operand order failed


def test_const_that_would_change_the_result_shape_is_refused_by_the_type_check():
    # maximum(x, zeros(2, 3)) broadcasts x: relu(x) would have x's shape.
    g = Graph()
    a = g.add_input(TensorType(DType.FLOAT32, (3,)), "a")
    z = g.add_constant(np.zeros((2, 3), np.float32), "z")
    g.set_outputs([g.add("maximum", [a, z], name="y")])
    before = print_graph(g)
    trace: list[Miss] = []
    assert apply_rules(g, [MAX0], trace=trace) is False
    assert print_graph(g) == before
    assert trace == [Miss("max0", "maximum -> %y", "replacement type f32[3] != f32[2,3]")]


# -- attributes and node constraints ----------------------------------------
def test_attribute_values_and_predicates():
    text = """
        graph @main(%a: f32[2,3]) {
          %y: f32[2] = reduce_sum(%a) {axes=[1], keepdims=false}
          return %y
        }"""
    assert match(Op("reduce_sum", x, attrs={"axes": (1,), "keepdims": False}), text)[1] is None
    assert match(Op("reduce_sum", x, attrs={"axes": lambda a: len(a) == 1}), text)[1] is None
    assert match(Op("reduce_sum", x, attrs={"axes": (0,)}), text)[1] == \
        "reduce_sum attribute axes=(1,) does not match"
    assert match(Op("reduce_sum", x, attrs={"keepdims": lambda k: k}), text)[1] == \
        "reduce_sum attribute keepdims=False does not match"
    assert match(Op("reduce_sum", x, where=lambda n: n.output.rank == 2), text)[1] == \
        "reduce_sum node fails its constraint"

    def rank_two(n):
        return n.output.rank == 2
    assert match(Op("reduce_sum", x, where=rank_two), text)[1] == "reduce_sum node fails rank_two"
    assert match(Op("reduce_sum", x, x), text)[1] == "reduce_sum has 1 inputs, pattern has 2"


# -- single use ----------------------------------------------------------------
def test_inner_value_with_another_use_is_not_rewritten():
    trace: list[Miss] = []
    rewrite([SILU], """
        graph @main(%a: f32[3]) {
          %s: f32[3] = sigmoid(%a)
          %y: f32[3] = mul(%a, %s)
          %z: f32[3] = exp(%s)
          return %y, %z
        }""", None, trace=trace)
    assert trace == [Miss("silu", "mul -> %y", "sigmoid result %s has other uses; %a is not produced by sigmoid")]


def test_inner_value_that_is_a_graph_output_is_not_rewritten():
    trace: list[Miss] = []
    rewrite([SILU], """
        graph @main(%a: f32[3]) {
          %s: f32[3] = sigmoid(%a)
          %y: f32[3] = mul(%a, %s)
          return %y, %s
        }""", None, trace=trace)
    assert trace[-1].reason == "sigmoid result %s has other uses; %a is not produced by sigmoid"


def test_graph_output_check_without_the_driver():
    _, why = match(Op("mul", x, Op("sigmoid", x)), """
        graph @main(%a: f32[3]) {
          %s: f32[3] = sigmoid(%a)
          %y: f32[3] = mul(%a, %s)
          return %y, %s
        }""")
    assert why == "sigmoid result %s has other uses; %a is not produced by sigmoid"


def test_a_replacement_that_becomes_a_graph_output_is_not_an_inner_value():
    # ||a|| -> |a| replaces the graph output %b; -|a| must then keep |a|.
    abs_abs = Rule("abs-abs", Op("abs", Op("abs", x)), lambda rw, m: rw.add("abs", [m.x]))
    neg_abs = Rule("neg-abs", Op("neg", Op("abs", x)), lambda rw, m: rw.add("neg", [rw.add("abs", [m.x])]))
    trace: list[Miss] = []
    rewrite([abs_abs, neg_abs], """
        graph @main(%a: f32[3]) {
          %c: f32[3] = abs(%a)
          %b: f32[3] = abs(%c)
          %y: f32[3] = neg(%b)
          return %y, %b
        }""", """
        graph @main(%a: f32[3]) {
          %b: f32[3] = abs(%a)
          %y: f32[3] = neg(%b)
          return %y, %b
        }""", trace=trace)
    assert Miss("neg-abs", "neg -> %y", "abs result %b has other uses") in trace


def test_single_use_false_allows_shared_inner_values():
    shared = Rule("silu-shared", Op("mul", x, Op("sigmoid", x, single_use=False)),
                  lambda rw, m: rw.add("silu", [m.x]))
    rewrite([shared], """
        graph @main(%a: f32[3]) {
          %s: f32[3] = sigmoid(%a)
          %y: f32[3] = mul(%a, %s)
          %z: f32[3] = exp(%s)
          return %y, %z
        }""", """
        graph @main(%a: f32[3]) {
          %s: f32[3] = sigmoid(%a)
          %y: f32[3] = silu(%a)
          %z: f32[3] = exp(%s)
          return %y, %z
        }""")


def test_root_may_have_many_uses_and_be_a_graph_output():
    rewrite([MAX0], """
        graph @main(%a: f32[3]) {
          const %zero: f32[] = 0.0
          %y: f32[3] = maximum(%a, %zero)
          %z: f32[3] = mul(%y, %y)
          return %y, %z
        }""", """
        graph @main(%a: f32[3]) {
          const %zero: f32[] = 0.0
          %y: f32[3] = relu(%a)
          %z: f32[3] = mul(%y, %y)
          return %y, %z
        }""")


# -- reasons: trace and log -------------------------------------------------
def test_reasons_are_traced_and_logged_with_rule_name_and_place(caplog):
    decline = Rule("decline", Op("exp", x), lambda rw, m: "exp is fine as it is")
    text = """
        graph @main(%a: f32[3]) {
          %y: f32[3] = exp(%a)
          %z: f32[3] = neg(%y)
          return %z
        }"""
    trace: list[Miss] = []
    with caplog.at_level(logging.DEBUG, logger="passes.rewrite"):
        rewrite([decline, NEG_NEG], text, None, trace=trace)
    assert trace == [Miss("decline", "exp -> %y", "exp is fine as it is"),
                     Miss("neg-neg", "neg -> %z", "%y is not produced by neg")]
    logged = [r.getMessage() for r in caplog.records if r.name == "passes.rewrite"]
    assert any("decline" in s and decline.defined_at in s and "exp is fine as it is" in s for s in logged), logged
    assert any("neg-neg" in s and "%y is not produced by neg" in s for s in logged), logged


def test_fired_rules_are_logged(caplog):
    with caplog.at_level(logging.DEBUG, logger="passes.rewrite"):
        rewrite([NEG_NEG], """
            graph @main(%a: f32[3]) {
              %n: f32[3] = neg(%a)
              %y: f32[3] = neg(%n)
              return %y
            }""", """
            graph @main(%a: f32[3]) {
              return %a
            }""")
    assert any("neg-neg" in r.getMessage() and "fired" in r.getMessage() for r in caplog.records)


def test_defined_at_names_the_line_that_built_the_rule():
    line = _line_of("NEG_NEG = Rule(")
    assert NEG_NEG.defined_at == f"{__file__}:{line}"
    here = Rule("here", Op("exp", x), lambda rw, m: "no")
    assert here.defined_at == f"{__file__}:{_line_of('here = Rule(')}"
    assert Rule("given", Op("exp", x), lambda rw, m: "no", defined_at="elsewhere:1").defined_at == "elsewhere:1"


def _line_of(prefix: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if line.strip().startswith(prefix))


# -- rule sets -----------------------------------------------------------------
def test_rule_sets_combine_with_plus_in_order():
    a, b = RuleSet([NEG_NEG]), RuleSet([SILU, MAX0])
    both = a + b
    assert [r.name for r in both] == ["neg-neg", "silu", "max0"] and len(both) == 3
    assert [r.name for r in a] == ["neg-neg"] and len(b) == 2  # the operands are unchanged
    rewrite(both, """
        graph @main(%a: f32[3]) {
          const %zero: f32[] = 0.0
          %n: f32[3] = neg(%a)
          %m: f32[3] = neg(%n)
          %s: f32[3] = sigmoid(%m)
          %t: f32[3] = mul(%s, %m)
          %y: f32[3] = maximum(%t, %zero)
          return %y
        }""", """
        graph @main(%a: f32[3]) {
          const %zero: f32[] = 0.0
          %t: f32[3] = silu(%a)
          %y: f32[3] = relu(%t)
          return %y
        }""")


def test_first_rule_that_fires_wins():
    first = Rule("first", Op("exp", x), lambda rw, m: rw.add("expm1", [m.x]))
    second = Rule("second", Op("exp", x), lambda rw, m: rw.add("sin", [m.x]))
    g = graph_of("""
        graph @main(%a: f32[3]) {
          %y: f32[3] = exp(%a)
          return %y
        }""")
    assert apply_rules(g, RuleSet([first, second]))
    assert [n.op for n in g] == ["expm1"]


# -- the driver ----------------------------------------------------------------
def test_rewrites_run_to_a_fixpoint():
    rewrite([NEG_NEG], """
        graph @main(%a: f32[3]) {
          %1: f32[3] = neg(%a)
          %2: f32[3] = neg(%1)
          %3: f32[3] = neg(%2)
          %4: f32[3] = neg(%3)
          %5: f32[3] = neg(%4)
          return %5
        }""", """
        graph @main(%a: f32[3]) {
          %5: f32[3] = neg(%a)
          return %5
        }""")


def test_a_node_is_revisited_when_a_rewrite_frees_its_shared_input():
    # %n has two readers, so neg(neg(a)) cannot fire at %y; the rewrite of
    # %z (later in the graph) removes the other reader, and %y must then fire.
    free_n = Rule("abs-neg", Op("abs", Op("neg", x, single_use=False)), lambda rw, m: rw.add("abs", [m.x]))
    rewrite([NEG_NEG, free_n], """
        graph @main(%a: f32[3]) {
          %n: f32[3] = neg(%a)
          %y: f32[3] = neg(%n)
          %z: f32[3] = abs(%n)
          return %y, %z
        }""", """
        graph @main(%a: f32[3]) {
          %z: f32[3] = abs(%a)
          return %a, %z
        }""")


def test_nodes_created_by_a_rewrite_are_visited():
    # ||x|| -> |-(-x)|, whose double negation the other rule then removes
    via_neg_neg = Rule("abs-abs-via-neg-neg", Op("abs", Op("abs", x)),
                       lambda rw, m: rw.add("abs", [rw.add("neg", [rw.add("neg", [m.x])])]))
    rewrite([NEG_NEG, via_neg_neg], """
        graph @main(%a: f32[3]) {
          %b: f32[3] = abs(%a)
          %y: f32[3] = abs(%b)
          return %y
        }""", """
        graph @main(%a: f32[3]) {
          %y: f32[3] = abs(%a)
          return %y
        }""")


def test_a_rule_set_that_does_not_terminate_is_stopped():
    flip = Rule("flip", Op("mul", x, y), lambda rw, m: rw.add("mul", [m.root.inputs[1], m.root.inputs[0]]))
    g = graph_of("""
        graph @main(%a: f32[3], %b: f32[3]) {
          %y: f32[3] = mul(%a, %b)
          return %y
        }""")
    with pytest.raises(RuntimeError, match=r"does not terminate \(last rule: flip at .*test_pattern_engine.py"):
        apply_rules(g, [flip])
    verify(g)
    g = graph_of("""
        graph @main(%a: f32[3], %b: f32[3]) {
          %y: f32[3] = mul(%a, %b)
          return %y
        }""")
    with pytest.raises(RuntimeError, match="does not terminate"):
        apply_rules(g, [flip], max_rewrites=3)


def test_matched_nodes_left_dead_are_erased_and_shared_ones_kept():
    rewrite([SILU], """
        graph @main(%a: f32[3]) {
          %e: f32[3] = exp(%a)
          %s: f32[3] = sigmoid(%e)
          %y: f32[3] = mul(%e, %s)
          %z: f32[3] = mul(%e, %e)
          return %y, %z
        }""", """
        graph @main(%a: f32[3]) {
          %e: f32[3] = exp(%a)
          %y: f32[3] = silu(%e)
          %z: f32[3] = mul(%e, %e)
          return %y, %z
        }""")


def test_nodes_of_a_declined_rewrite_are_erased():
    def build_then_decline(rw, m):
        rw.add("exp", [rw.add("neg", [m.x])])
        return "changed my mind"

    trace: list[Miss] = []
    rewrite([Rule("decline", Op("sin", x), build_then_decline)], """
        graph @main(%a: f32[3]) {
          %y: f32[3] = sin(%a)
          return %y
        }""", None, trace=trace)
    assert trace == [Miss("decline", "sin -> %y", "changed my mind")]


def test_constants_of_a_declined_rewrite_are_removed():
    def const_then_decline(rw, m):
        rw.add("mul", [m.x, rw.const(np.float32(2), "two")])
        return "changed my mind"

    rewrite([Rule("decline", Op("sin", x), const_then_decline)], """
        graph @main(%a: f32[3]) {
          %y: f32[3] = sin(%a)
          return %y
        }""", None)


def test_replacement_of_another_type_is_undone_and_recorded():
    to_f64 = Rule("widen", Op("exp", x), lambda rw, m: rw.add("exp", [rw.add("cast", [m.x], {"to": DType.FLOAT64})]))
    trace: list[Miss] = []
    rewrite([to_f64], """
        graph @main(%a: f32[3]) {
          %y: f32[3] = exp(%a)
          return %y
        }""", None, trace=trace)
    assert trace == [Miss("widen", "exp -> %y", "replacement type f64[3] != f32[3]")]


def test_new_nodes_go_before_the_root_with_its_name_and_trace():
    def via_two(rw, m):
        return rw.add("mul", [rw.add("exp", [m.x]), rw.add("exp", [m.x])])

    g = graph_of("""
        graph @main(%a: f32[3]) {
          %b: f32[3] = sin(%a)
          %y: f32[3] = exp2(%b)
          %z: f32[3] = neg(%y)
          return %z
        }""")
    root = next(n for n in g if n.op == "exp2")
    root.trace = "model.py:7"
    apply_rules(g, [Rule("exp2", Op("exp2", x), via_two)])
    assert [n.op for n in g] == ["sin", "exp", "exp", "mul", "neg"]
    assert all(n.trace == "model.py:7" and n.output.name == "y" for n in g if n.op in ("exp", "mul"))


def test_erase_dead_keeps_used_nodes_and_graph_outputs():
    g = graph_of("""
        graph @main(%a: f32[3]) {
          %e: f32[3] = exp(%a)
          %f: f32[3] = neg(%e)
          %s: f32[3] = sin(%a)
          %d: f32[3] = cos(%s)
          return %e
        }""")
    erase_dead(g, [n for n in g if n.op in ("neg", "cos", "exp")])
    assert [n.op for n in g] == ["exp"]


def test_apply_rules_is_linear_in_graph_size():
    # A chain of 1000 maximum(x, 0) nodes (relu of relu ...): one rewrite each.
    g = Graph()
    v = g.add_input(TensorType(DType.FLOAT32, (2,)), "a")
    zero = g.add_constant(np.zeros((), np.float32), "zero")
    for _ in range(1000):
        v = g.add("maximum", [v, zero])
    g.set_outputs([v])
    calls = []

    def counting(rw, m):
        calls.append(1)
        return rw.add("relu", [m.x])

    assert apply_rules(g, [Rule("max0", Op("maximum", x, ConstEq(0)), counting)])
    assert len(calls) == 1000 and {n.op for n in g} == {"relu"}
    np.testing.assert_array_equal(evaluate(g, [np.array([-1.0, 2.0], np.float32)])[0], [0.0, 2.0])


# -- skipping rules that cannot fire ------------------------------------------------
GUARDED = """\
graph @main(%x: f32[3]) {
  %a: f32[3] = exp(%x)
  %y: f32[3] = mul(%a, %x)
  return %y
}
"""


def _counting_rule(pattern: Op) -> tuple[Rule, list]:
    calls: list = []

    def decline(rw, m):
        calls.append(m.root.op)
        return "declines on purpose"

    return Rule("counting", pattern, decline), calls


@pytest.mark.parametrize("pattern", [
    Op("mul", Op("sigmoid", Var()), Var()),            # no input is produced by sigmoid
    Op("mul", Const(), Var()),                         # no input is a constant
    Op("mul", Op("exp", Op("neg", Var())), Var()),     # exp's input is not a neg (two levels down)
    Op("mul", Var(), Var(), where=lambda node: False),  # the root's predicate says no
    Op("mul", Var(), Var(), any_input=Op("neg", Var())),  # no input at any position is a neg
])
def test_a_rule_that_cannot_fire_is_skipped_unless_a_trace_wants_the_reason(pattern):
    rule, calls = _counting_rule(pattern)
    rewrite([rule], GUARDED, None)
    assert calls == [], "skipped before matching"
    trace: list[Miss] = []
    rewrite([rule], GUARDED, None, trace=trace)
    assert [m.rule for m in trace] == ["counting"], "with a trace, the miss and its reason are recorded"


def test_a_rule_that_may_fire_is_matched():
    rule, calls = _counting_rule(Op("mul", Op("exp", Var()), Var(), where=lambda node: True))
    rewrite([rule], GUARDED, None)
    assert calls == ["mul"]


def test_rules_whose_root_op_is_absent_visit_no_node():
    rule, calls = _counting_rule(Op("div", Var(), Var()))
    g = graph_of(GUARDED)
    assert apply_rules(g, [rule]) is False and calls == []


def test_single_use_counts_readers_and_graph_outputs():
    from passes.rewrite import producer, single_use

    g = parse_graph("""
        graph @main(%a: f32[3]) {
          %e: f32[3] = exp(%a)
          %s: i64[1] = shape(%e)
          %n: f32[3] = neg(%e)
          %m: f32[3] = neg(%n)
          return %m, %n
        }""")
    e, s, n, m = (node.outputs[0] for node in g)
    assert not single_use(e)                                          # read by shape and neg
    assert single_use(e, ignore=lambda node: node.op == "shape")      # shape reads no element
    assert not single_use(n)                                          # one reader, but a graph output
    assert producer(n, "neg") is n.producer and producer(n, "neg", single=True) is None
    assert producer(m, "exp") is None


# -- any_input: some operand, at any position, matches --------------------------------
def _concat_of(third: str) -> str:
    return f"""
        graph @main(%x: f32[2], %y: f32[2]) {{
          %a: f32[2] = abs(%x)
          %e: f32[2] = {third}(%y)
          %c: f32[6] = concat(%a, %x, %e) {{axis=0}}
          return %c
        }}"""


def test_any_input_matches_an_operand_at_any_position_and_binds_nothing():
    seen = []

    def record(rw, m):
        seen.append(sorted(k for k in m._bindings if not isinstance(k, tuple)))
        seen.append(len(m.nodes))
        return "declines"

    rule = Rule("concat-reads-exp", Op("concat", rest=Var(), any_input=Op("exp", Var("inner"), single_use=False)),
                record)
    rewrite([rule], _concat_of("exp"), None)
    assert seen == [[], 1]  # matched through the third operand; neither the exp node nor its input is bound


def test_any_input_fails_with_each_operands_reason():
    rule = Rule("concat-reads-exp", Op("concat", rest=Var(), any_input=Op("exp", Var())), lambda rw, m: "declines")
    trace: list[Miss] = []
    rewrite([rule], _concat_of("sin"), None, trace=trace)
    assert [m.reason for m in trace] == ["no input of concat matches: %a is not produced by exp; "
                                         "%x is not produced by exp; %e is not produced by exp"]
    assert rule.requires == (frozenset({"concat", "exp"}),) and rule.child_ops == frozenset({"exp"})
