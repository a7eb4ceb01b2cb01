"""``canonicalize``: every rule as IR text before and after, the cases where
it must not fire, and interpreter checks that the rewrites are exact."""

from __future__ import annotations

import logging

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ir.interpreter import evaluate
from ir.parser import parse_graph
from ir.printer import print_graph
from passes import get_pass
from passes.canonicalize import RULES, Canonicalize
from tests.passes.helpers import assert_identical, assert_same_numbers, check_pass

CANON = Canonicalize()


# -- 1. leading unsqueeze feeding a broadcasting op -------------------------
def test_bias_unsqueeze_is_bypassed():
    check_pass(CANON, """
        graph @main(%h: f32[N,64], %b: f32[64]) {
          %u: f32[1,64] = unsqueeze(%b) {axes=[0]}
          %y: f32[N,64] = add(%h, %u)
          return %y
        }""", """
        graph @main(%h: f32[N,64], %b: f32[64]) {
          %y: f32[N,64] = add(%h, %b)
          return %y
        }""")


def test_bias_constant_stays_the_named_constant():
    check_pass(CANON, """
        graph @main(%h: f32[N,2]) {
          const %b: f32[2] = [0.5, -1.0]
          %u: f32[1,2] = unsqueeze(%b) {axes=[0]}
          %y: f32[N,2] = add(%u, %h)
          return %y
        }""", """
        graph @main(%h: f32[N,2]) {
          const %b: f32[2] = [0.5, -1.0]
          %y: f32[N,2] = add(%b, %h)
          return %y
        }""")


def test_unsqueeze_of_several_leading_axes_in_where_and_clip():
    check_pass(CANON, """
        graph @main(%c: bool[3], %a: f32[2,4,3], %lo: f32[], %hi: f32[3]) {
          %uc: bool[1,1,3] = unsqueeze(%c) {axes=[0, 1]}
          %w: f32[2,4,3] = where(%uc, %a, %lo)
          %uh: f32[1,3] = unsqueeze(%hi) {axes=[0]}
          %y: f32[2,4,3] = clip(%w, %lo, %uh)
          return %y
        }""", """
        graph @main(%c: bool[3], %a: f32[2,4,3], %lo: f32[], %hi: f32[3]) {
          %w: f32[2,4,3] = where(%c, %a, %lo)
          %y: f32[2,4,3] = clip(%w, %lo, %hi)
          return %y
        }""")


def test_unsqueeze_on_an_inner_axis_is_not_bypassed():
    # (3,) -> (3,1) broadcasts against (3,4) as a column; dropping it would not.
    check_pass(CANON, """
        graph @main(%x: f32[3,4], %b: f32[3]) {
          %u: f32[3,1] = unsqueeze(%b) {axes=[1]}
          %y: f32[3,4] = mul(%x, %u)
          return %y
        }""", None)


def test_unsqueeze_that_sets_the_result_rank_is_not_bypassed():
    check_pass(CANON, """
        graph @main(%b: f32[3], %s: f32[]) {
          %u: f32[1,3] = unsqueeze(%b) {axes=[0]}
          %y: f32[1,3] = sub(%u, %s)
          return %y
        }""", None)


def test_unsqueeze_with_another_use_stays_for_that_use():
    check_pass(CANON, """
        graph @main(%h: f32[N,3], %b: f32[3]) {
          %u: f32[1,3] = unsqueeze(%b) {axes=[0]}
          %y: f32[N,3] = add(%h, %u)
          %s: f32[1] = reduce_sum(%u) {axes=[1], keepdims=false}
          return %y, %s
        }""", """
        graph @main(%h: f32[N,3], %b: f32[3]) {
          %u: f32[1,3] = unsqueeze(%b) {axes=[0]}
          %y: f32[N,3] = add(%h, %b)
          %s: f32[1] = reduce_sum(%u) {axes=[1], keepdims=false}
          return %y, %s
        }""")


def test_unsqueeze_into_a_non_broadcasting_op_stays():
    check_pass(CANON, """
        graph @main(%x: f32[3]) {
          %u: f32[1,3] = unsqueeze(%x) {axes=[0]}
          %y: f32[1,3] = exp(%u)
          return %y
        }""", None)


def _dims(shape) -> str:
    return ",".join(map(str, shape))


@given(st.lists(st.integers(1, 3), max_size=3), st.lists(st.integers(1, 3), min_size=1, max_size=3))
def test_bypass_is_exact_for_random_shapes(bias_shape, extra_dims):
    x_shape = extra_dims + bias_shape  # the bias broadcasts against the trailing dims of x
    k = len(extra_dims)  # leading axes the unsqueeze adds
    graph = check_pass(CANON, f"""
        graph @main(%x: f32[{_dims(x_shape)}], %b: f32[{_dims(bias_shape)}]) {{
          %u: f32[{_dims([1] * k + bias_shape)}] = unsqueeze(%b) {{axes=[{', '.join(map(str, range(k)))}]}}
          %y: f32[{_dims(x_shape)}] = maximum(%u, %x)
          return %y
        }}""", f"""
        graph @main(%x: f32[{_dims(x_shape)}], %b: f32[{_dims(bias_shape)}]) {{
          %y: f32[{_dims(x_shape)}] = maximum(%b, %x)
          return %y
        }}""")
    assert len(graph) == 1


# -- 2. identities -----------------------------------------------------------
def test_identities_are_removed():
    check_pass(CANON, """
        graph @main(%x: f32[2,3], %n: i64[N]) {
          const %s: i64[2] = [2, 3]
          %a: f32[2,3] = cast(%x) {to=f32}
          %b: f32[2,3] = transpose(%a) {perm=[0, 1]}
          %c: f32[2,3] = reshape(%b, %s)
          %d: f32[2,3] = squeeze(%c) {axes=[]}
          %e: f32[2,3] = unsqueeze(%d) {axes=[]}
          %f: i64[N] = cast(%n) {to=i64}
          return %e, %f
        }""", """
        graph @main(%x: f32[2,3], %n: i64[N]) {
          const %s: i64[2] = [2, 3]
          return %x, %n
        }""")


def test_non_identities_stay():
    check_pass(CANON, """
        graph @main(%x: f32[2,3], %y: f32[N,3]) {
          const %s: i64[2] = [3, 2]
          const %t: i64[2] = [-1, 3]
          %a: f64[2,3] = cast(%x) {to=f64}
          %b: f32[3,2] = transpose(%x) {perm=[1, 0]}
          %c: f32[3,2] = reshape(%x, %s)
          %d: f32[?,3] = reshape(%y, %t)
          return %a, %b, %c, %d
        }""", None)


def test_reshape_to_a_symbolic_shape_stays():
    # The declared type f32[N,3] is only a claim about run time: the reshape
    # is kept unless both shapes are fully static.
    text = """
        graph @main(%x: f32[N,3], %s: i64[2]) {
          %y: f32[N,3] = reshape(%x, %s)
          return %y
        }"""
    graph = parse_graph(text)
    assert CANON.run(graph) is False
    assert print_graph(graph) == print_graph(parse_graph(text))


# -- 3. transpose of transpose -----------------------------------------------
def test_transpose_of_transpose_is_one_transpose():
    check_pass(CANON, """
        graph @main(%x: f32[2,3,4]) {
          %t: f32[4,3,2] = transpose(%x) {perm=[2, 1, 0]}
          %y: f32[3,4,2] = transpose(%t) {perm=[1, 0, 2]}
          return %y
        }""", """
        graph @main(%x: f32[2,3,4]) {
          %y: f32[3,4,2] = transpose(%x) {perm=[1, 2, 0]}
          return %y
        }""")


def test_inverse_transposes_cancel():
    check_pass(CANON, """
        graph @main(%x: f32[2,3,4]) {
          %t: f32[3,4,2] = transpose(%x) {perm=[1, 2, 0]}
          %y: f32[2,3,4] = transpose(%t) {perm=[2, 0, 1]}
          return %y
        }""", """
        graph @main(%x: f32[2,3,4]) {
          return %x
        }""")


def test_transpose_with_another_use_is_kept_for_it():
    check_pass(CANON, """
        graph @main(%x: f32[2,3]) {
          %t: f32[3,2] = transpose(%x) {perm=[1, 0]}
          %y: f32[2,3] = transpose(%t) {perm=[1, 0]}
          %z: f32[3,2] = neg(%t)
          return %y, %z
        }""", """
        graph @main(%x: f32[2,3]) {
          %t: f32[3,2] = transpose(%x) {perm=[1, 0]}
          %z: f32[3,2] = neg(%t)
          return %x, %z
        }""")


@given(st.permutations(range(4)), st.permutations(range(4)), st.permutations(range(4)))
def test_transpose_chains_fold_exactly(p, q, r):
    text = _transpose_chain((2, 3, 4, 5), [p, q, r])
    before, graph = parse_graph(text), parse_graph(text)
    CANON.run(graph)
    assert len(graph) <= 1, print_graph(graph)
    assert_same_numbers(before, graph, seeds=[0])


def _transpose_chain(shape, perms) -> str:
    lines, shape_now, name = [], list(shape), "%x"
    for i, perm in enumerate(perms):
        shape_now = [shape_now[j] for j in perm]
        lines.append(f"  %t{i}: f32[{','.join(map(str, shape_now))}] = transpose({name}) "
                     f"{{perm=[{', '.join(map(str, perm))}]}}")
        name = f"%t{i}"
    return (f"graph @main(%x: f32[{','.join(map(str, shape))}]) {{\n" + "\n".join(lines)
            + f"\n  return {name}\n}}\n")


# -- 4. squeeze / unsqueeze pairs ----------------------------------------------
def test_unsqueeze_of_squeeze_on_the_same_axes():
    check_pass(CANON, """
        graph @main(%x: f32[1,3,1]) {
          %s: f32[3] = squeeze(%x) {axes=[0, -1]}
          %y: f32[1,3,1] = unsqueeze(%s) {axes=[2, 0]}
          return %y
        }""", """
        graph @main(%x: f32[1,3,1]) {
          return %x
        }""")


def test_squeeze_of_unsqueeze_on_the_same_axes():
    check_pass(CANON, """
        graph @main(%x: f32[N,3]) {
          %u: f32[N,1,3] = unsqueeze(%x) {axes=[1]}
          %y: f32[N,3] = squeeze(%u) {axes=[-2]}
          return %y
        }""", """
        graph @main(%x: f32[N,3]) {
          return %x
        }""")


def test_squeeze_unsqueeze_on_other_axes_stay():
    check_pass(CANON, """
        graph @main(%x: f32[1,3,1]) {
          %s: f32[3,1] = squeeze(%x) {axes=[0]}
          %y: f32[3,1,1] = unsqueeze(%s) {axes=[1]}
          %u: f32[1,1,3,1] = unsqueeze(%x) {axes=[0]}
          %z: f32[1,3,1] = squeeze(%u) {axes=[1]}
          return %y, %z
        }""", None)


def test_unsqueeze_of_squeeze_of_a_symbolic_dim_stays():
    # squeeze checks N == 1 at run time; x itself has type f32[N,3], not f32[1,3].
    check_pass(CANON, """
        graph @main(%x: f32[N,3]) {
          %s: f32[3] = squeeze(%x) {axes=[0]}
          %y: f32[1,3] = unsqueeze(%s) {axes=[0]}
          return %y
        }""", None, sizes={"N": 1})


# -- 5. multiplication and division by one -------------------------------------
def test_mul_and_div_by_ones():
    check_pass(CANON, """
        graph @main(%x: f32[N,3], %i: i32[4]) {
          const %one: f32[] = 1.0
          const %ones: f32[1,3] = [[1.0, 1.0, 1.0]]
          const %ione: i32[1] = [1]
          %a: f32[N,3] = mul(%x, %one)
          %b: f32[N,3] = mul(%ones, %a)
          %c: f32[N,3] = div(%b, %one)
          %d: i32[4] = mul(%i, %ione)
          return %c, %d
        }""", """
        graph @main(%x: f32[N,3], %i: i32[4]) {
          const %one: f32[] = 1.0
          const %ones: f32[1,3] = [[1.0, 1.0, 1.0]]
          const %ione: i32[1] = [1]
          return %x, %i
        }""")


def test_mul_by_ones_that_broadcast_or_are_not_ones_stays():
    check_pass(CANON, """
        graph @main(%x: f32[3], %y: f32[N,3]) {
          const %ones: f32[2,3] = [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
          const %almost: f32[3] = [1.0, 1.0, 2.0]
          const %one: f32[] = 1.0
          %a: f32[2,3] = mul(%x, %ones)
          %b: f32[N,3] = mul(%y, %almost)
          %c: f32[3] = div(%one, %x)
          return %a, %b, %c
        }""", None)


# -- 7. x ** 1 -------------------------------------------------------------------
def test_pow_of_one_is_its_base():
    check_pass(CANON, """
        graph @main(%x: f64[N,3], %i: i64[3]) {
          const %one: f64[1] = [1.0]
          const %ione: i64[] = 1
          %a: f64[N,3] = pow(%x, %one)
          %b: f64[N,3] = mul(%a, %a)
          %c: i64[3] = pow(%i, %ione)
          return %b, %c
        }""", """
        graph @main(%x: f64[N,3], %i: i64[3]) {
          const %one: f64[1] = [1.0]
          const %ione: i64[] = 1
          %b: f64[N,3] = mul(%x, %x)
          return %b, %i
        }""")


def test_pow_of_one_that_broadcasts_or_is_not_one_or_is_the_base_stays():
    check_pass(CANON, """
        graph @main(%x: f64[3], %y: f64[N,3]) {
          const %ones: f64[2,3] = [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
          const %two: f64[] = 2.0
          const %one: f64[] = 1.0
          %a: f64[2,3] = pow(%x, %ones)
          %b: f64[N,3] = pow(%y, %two)
          %c: f64[3] = pow(%one, %x)
          return %a, %b, %c
        }""", None)


def test_pow_of_one_compiles_to_no_pow_and_keeps_nan_inf_and_signed_zero():
    """End to end: ``x ** 1`` (PyMC 5.28's gradients hold ``x ** [1.0]``)
    runs in onnxruntime without a ``Pow``, bit for bit PyTensor's values at
    the special values ``x ** 1`` must keep."""
    import pytensor
    import pytensor.tensor as pt

    from compiler import compile_to_onnx
    from tests.helpers import REFERENCE_MODE

    x = pt.dvector("x")
    outputs = [3.0 * x ** pt.constant(np.ones(1)), x ** np.float64(1.0)]
    compiled = compile_to_onnx([x], outputs=outputs)
    assert "Pow" not in [n.op_type for n in compiled.model.graph.node]
    values = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 5e-324, -1.5, 1.7976931348623157e308])
    want = pytensor.function([x], outputs, mode=REFERENCE_MODE)(values)
    for got, w in zip(compiled.run(values), want):
        np.testing.assert_array_equal(got, w)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(w))


# -- 6. gather of a cast -----------------------------------------------------
def test_a_gather_of_a_cast_gathers_first():
    check_pass(CANON, """
        graph @main(%x: f32[N,M,16], %v: i64[4]) {
          const %two: i64[] = 2
          const %ix: i64[2] = [3, 0]
          %s: i64[3] = shape(%x)
          %c: f32[3] = cast(%s) {to=f32}
          %d: f32[] = gather(%c, %two) {axis=0}
          %w: f64[4] = cast(%v) {to=f64}
          %e: f64[2] = gather(%w, %ix) {axis=0}
          return %d, %e
        }""", """
        graph @main(%x: f32[N,M,16], %v: i64[4]) {
          const %two: i64[] = 2
          const %ix: i64[2] = [3, 0]
          %s: i64[3] = shape(%x)
          %d: i64[] = gather(%s, %two) {axis=0}
          %d_1: f32[] = cast(%d) {to=f32}
          %e: i64[2] = gather(%v, %ix) {axis=0}
          %e_1: f64[2] = cast(%e) {to=f64}
          return %d_1, %e_1
        }""", sizes={"N": 2, "M": 3})


def test_a_gather_that_may_grow_its_input_stays_after_the_cast():
    check_pass(CANON, """
        graph @main(%v: i64[2], %u: i64[K]) {
          const %ix: i64[3] = [0, 1, 1]
          const %zero: i64[1] = [0]
          %w: f64[2] = cast(%v) {to=f64}
          %e: f64[3] = gather(%w, %ix) {axis=0}
          %z: f64[K] = cast(%u) {to=f64}
          %f: f64[1] = gather(%z, %zero) {axis=0}
          return %e, %f
        }""", None, sizes={"K": 3})


def test_inexact_identities_are_not_applied():
    # x + 0 -> x is wrong for -0.0; x * 0 -> 0 is wrong for NaN and Inf;
    # x - 0, 0 - x and x ** 1 are not in the rule set either.
    text = """
        graph @main(%x: f32[6]) {
          const %zero: f32[] = 0.0
          %a: f32[6] = add(%x, %zero)
          %b: f32[6] = mul(%x, %zero)
          return %a, %b
        }"""
    check_pass(CANON, text, None)
    x = np.array([-0.0, np.nan, np.inf, -np.inf, 2.0, 0.0], dtype=np.float32)
    a, b = evaluate(parse_graph(text), [x])
    assert not np.signbit(a[0]), "-0.0 + 0.0 is +0.0, so x + 0 is not x"
    assert np.isnan(b[1:4]).all(), "NaN * 0 and Inf * 0 are NaN, so x * 0 is not 0"


def test_why_a_rule_did_not_fire_is_logged(caplog):
    graph = parse_graph("""
        graph @main(%x: f32[3]) {
          %y: f64[3] = cast(%x) {to=f64}
          return %y
        }""")
    with caplog.at_level(logging.DEBUG, logger="passes.rewrite"):
        assert CANON.run(graph) is False
    assert "rule cast-to-own-dtype" in caplog.text
    assert "did not fire on cast -> %y: cast node fails casts_to_own_dtype" in caplog.text


# -- the driver ----------------------------------------------------------------
def test_rules_reach_a_fixpoint_through_chains():
    check_pass(CANON, """
        graph @main(%x: f32[3,2], %h: f32[N,2,3]) {
          const %one: f32[] = 1.0
          %a: f32[2,3] = transpose(%x) {perm=[1, 0]}
          %b: f32[2,3] = cast(%a) {to=f32}
          %c: f32[3,2] = transpose(%b) {perm=[1, 0]}
          %d: f32[3,2] = mul(%c, %one)
          %e: f32[1,3,2] = unsqueeze(%d) {axes=[0]}
          %f: f32[3,2] = squeeze(%e) {axes=[0]}
          %g: f32[2,3] = transpose(%f) {perm=[1, 0]}
          %u: f32[1,2,3] = unsqueeze(%g) {axes=[0]}
          %y: f32[N,2,3] = add(%h, %u)
          return %y
        }""", """
        graph @main(%x: f32[3,2], %h: f32[N,2,3]) {
          const %one: f32[] = 1.0
          %g: f32[2,3] = transpose(%x) {perm=[1, 0]}
          %y: f32[N,2,3] = add(%h, %g)
          return %y
        }""")


def test_nothing_to_do_returns_false():
    check_pass(CANON, """
        graph @main(%x: f32[3]) {
          %y: f32[3] = exp(%x)
          return %y
        }""", None, changed=False)


def test_rules_are_a_table_and_the_pass_is_registered():
    assert all(r.name and r.defined_at.endswith(tuple('0123456789')) for r in RULES)
    assert get_pass("canonicalize") == CANON
    assert {r.pattern.op for r in RULES} >= {"cast", "transpose", "reshape", "squeeze", "unsqueeze", "mul", "div", "add"}


def test_created_nodes_keep_the_source_line_and_name():
    graph = parse_graph("""
        graph @main(%x: f32[2,3,4]) {
          %t: f32[3,2,4] = transpose(%x) {perm=[1, 0, 2]}
          %v: f32[3,4,2] = transpose(%t) {perm=[0, 2, 1]}
          return %v
        }""")
    graph.nodes[-1].trace = "model.py:12"
    before = parse_graph(print_graph(graph))
    assert CANON.run(graph)
    (node,) = graph.nodes
    assert (node.attrs["perm"], node.trace, node.output.name) == ((1, 2, 0), "model.py:12", "v")
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert_identical(evaluate(graph, [x])[0], evaluate(before, [x])[0])


# -- 8-10. expand ------------------------------------------------------------------
def test_expands_of_constants_stay_one_element_and_bypasses_drop_expands():
    """A gradient seed of ones expanded over a batch (through an unsqueeze),
    scaled by constants and read by a broadcasting op, a reduction over its
    static dims, an expand a broadcast makes redundant, an expand to the
    input's own type."""
    check_pass(CANON, """
        graph @main(%x: f64[N,3], %v: f64[N,3], %w: f64[N,1]) {
          const %one: f64[] = 1.0
          const %half: f64[] = -0.5
          const %zero: i64[1] = [0]
          const %onei: i64[1] = [1]
          %s: i64[2] = shape(%x)
          %n: i64[1] = slice(%s, %zero, %onei, %onei) {axes=[0]}
          %e0: f64[N] = expand(%one, %n)
          %u: f64[N,1] = unsqueeze(%e0) {axes=[1]}
          %e: f64[N,3] = expand(%u, %s)
          %m: f64[N,3] = mul(%e, %half)
          %y: f64[N,3] = mul(%m, %v)
          %r: f64[N] = reduce_sum(%e) {axes=[1], keepdims=false}
          %k: f64[N,1] = reduce_sum(%e) {axes=[1], keepdims=true}
          %ew: f64[N,3] = expand(%w, %s)
          %z: f64[N,3] = add(%v, %ew)
          %same: f64[N,3] = expand(%v, %s)
          return %y, %r, %k, %z, %same
        }""", """
        graph @main(%x: f64[N,3], %v: f64[N,3], %w: f64[N,1]) {
          const %one: f64[] = 1.0
          const %half: f64[] = -0.5
          const %zero: i64[1] = [0]
          const %onei: i64[1] = [1]
          const %const: i64[1] = [0]
          const %const_1: f64[] = 3.0
          const %const_2: bool[2] = [false, true]
          const %const_3: i64[2] = [1, 1]
          const %const_4: f64[] = 3.0
          %s: i64[2] = shape(%x)
          %y: f64[N,3] = mul(%half, %v)
          %r: i64[1] = gather(%s, %const) {axis=0}
          %r_1: f64[N] = expand(%const_1, %r)
          %k: i64[2] = where(%const_2, %const_3, %s)
          %k_1: f64[N,1] = expand(%const_4, %k)
          %z: f64[N,3] = add(%v, %w)
          return %y, %r_1, %k_1, %z, %v
        }""", sizes={"N": 4})


def test_expands_that_widen_or_may_round_or_have_unknown_targets_stay():
    check_pass(CANON, """
        graph @main(%x: f64[N,3], %a: f64[N,1], %w: f64[N,1], %x2: f64[?,?]) {
          const %tenth: f64[] = 0.1
          const %one: f64[] = 1.0
          %s: i64[2] = shape(%x)
          %s2: i64[2] = shape(%x2)
          %e: f64[N,3] = expand(%w, %s)
          %b: f64[N,3] = add(%a, %e)
          %c: f64[N,3] = expand(%tenth, %s)
          %r: f64[N] = reduce_sum(%c) {axes=[1], keepdims=false}
          %q: f64[?,?] = expand(%one, %s2)
          %m: f64[?,?] = mul(%q, %tenth)
          %rq: f64[?] = reduce_sum(%q) {axes=[1], keepdims=false}
          return %e, %b, %r, %m, %rq
        }""", None, sizes={"N": 3})


def test_a_sum_of_copies_is_folded_only_where_every_partial_sum_is_exact():
    from passes.canonicalize import exact_repeat_sum

    assert exact_repeat_sum(1.0, 100) and exact_repeat_sum(-0.5, 1000) and exact_repeat_sum(0.0, 10 ** 9)
    assert exact_repeat_sum(3.0, 2 ** 20) and not exact_repeat_sum(3.0, 2 ** 23)
    assert exact_repeat_sum(2.0 ** -10, 2 ** 20) and not exact_repeat_sum(2.0 ** -10, 2 ** 30)
    assert not exact_repeat_sum(0.1, 3) and not exact_repeat_sum(np.inf, 2) and not exact_repeat_sum(np.nan, 2)
    for c, n in ((1.0, 100), (-0.5, 1000), (3.0, 2 ** 20), (0.25, 12345)):
        assert float(np.sum(np.full(n, c, np.float32), dtype=np.float32)) == np.float32(c * n)


# -- 11. negation onto the smaller operand ---------------------------------------------
def test_a_negation_moves_onto_the_smaller_operand():
    check_pass(CANON, """
        graph @main(%a: f64[N,4], %s: f64[N,1], %w: f64[N,4]) {
          const %c: f64[] = 2.0
          %q: f64[N,4] = div(%a, %s)
          %y: f64[N,4] = neg(%q)
          %m: f64[N,4] = mul(%c, %a)
          %z: f64[N,4] = neg(%m)
          %n: f64[N,4] = neg(%a)
          %d: f64[N,4] = div(%n, %s)
          %k: f64[N,4] = neg(%w)
          %e: f64[N,4] = div(%s, %k)
          return %y, %z, %d, %e
        }""", """
        graph @main(%a: f64[N,4], %s: f64[N,1], %w: f64[N,4]) {
          const %c: f64[] = 2.0
          %y: f64[N,1] = neg(%s)
          %y_1: f64[N,4] = div(%a, %y)
          %z: f64[] = neg(%c)
          %z_1: f64[N,4] = mul(%z, %a)
          %d: f64[N,1] = neg(%s)
          %d_1: f64[N,4] = div(%a, %d)
          %e: f64[N,1] = neg(%s)
          %e_1: f64[N,4] = div(%e, %w)
          return %y_1, %z_1, %d_1, %e_1
        }""", sizes={"N": 3})


def test_a_negation_between_operands_of_one_size_or_with_other_readers_stays():
    check_pass(CANON, """
        graph @main(%a: f64[N,4], %s: f64[N,1], %w: f64[N,4]) {
          %big: f64[N,4] = mul(%a, %w)
          %g: f64[N,4] = neg(%big)
          %n: f64[N,4] = neg(%a)
          %d: f64[N,4] = div(%n, %s)
          return %g, %d, %n
        }""", None, sizes={"N": 3})


def test_moved_negations_keep_signed_zeros_infinities_and_nans():
    graph = parse_graph("""
        graph @main(%a: f64[6], %s: f64[1]) {
          %q: f64[6] = div(%a, %s)
          %y: f64[6] = neg(%q)
          %n: f64[6] = neg(%a)
          %p: f64[6] = mul(%n, %s)
          return %y, %p
        }""")
    a = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310])
    before = [evaluate(graph, [a, np.array([s])]) for s in (2.0, -0.0, np.inf)]
    assert CANON.run(graph)
    for s, want in zip((2.0, -0.0, np.inf), before):
        for got, w in zip(evaluate(graph, [a, np.array([s])]), want):
            np.testing.assert_array_equal(got, w)
            numbers = ~np.isnan(w)
            np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(w)[numbers])


def test_an_expand_that_checks_a_shape_at_run_time_stays():
    """``expand(unsqueeze(splat), [2])`` of a splat shaped like an input: a
    wrong-shaped input (N = 3) must still be refused, so the outer expand
    stays (the fuzzer's wrong-shape path, seed 103806)."""
    check_pass(CANON, """
        graph @main(%x: f64[N]) {
          const %zero: f64[] = 0.0
          const %two: i64[1] = [2]
          %s: i64[1] = shape(%x)
          %z: f64[N] = expand(%zero, %s)
          %y: f64[2] = expand(%z, %two)
          return %y
        }""", None, sizes={"N": 2})


def test_integer_negations_stay():
    check_pass(CANON, """
        graph @main(%a: i64[N,4], %s: i64[N,1]) {
          %q: i64[N,4] = mul(%a, %s)
          %y: i64[N,4] = neg(%q)
          return %y
        }""", None, sizes={"N": 3})
