"""Every pass on a rewrite opportunity inside a ``loop`` body and inside both
branches of an ``if``: a pass that states ``visits_nested_graphs`` rewrites
it there as at the top level, a pass that does not leaves it; the
interpreter gives the same numbers before and after. Each registered pass of
this package has a case here and states the attribute in its class."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np
import pytest

from ir import DType, Graph, TensorType
from ir.interpreter import evaluate
from ir.parser import parse_graph
from ir.printer import print_graph
from ir.transforms import copy_graph, inline, remove_dead_code
from ir.verifier import verify
from passes import Pass, get_pass, registered_passes
from passes.rewrite import RuleSetPass
from tests.passes.helpers import random_inputs

CONV = "{dilations=[], flip=false, group=1, pads=[], strides=[]}"
IF_LOOP_BODY = """(body: graph @scan0(%scan0.i: i64[], %scan0.s: f32[3], %scan0.xs: f32[4,3]) {
        %x: f32[3] = gather(%scan0.xs, %scan0.i) {axis=0}
        %s1: f32[3] = add(%scan0.s, %x)
        return %s1, %s1
      })"""

# pass -> a graph whose nodes hold one rewrite opportunity of the pass
KERNELS = {
    "shape-inference": """
        graph @k(%x: f32[4,3]) {
          %y: f32[?,3] = exp(%x)
          return %y
        }""",
    "canonicalize": """
        graph @k(%x: f32[3]) {
          const %one: f32[] = 1.0
          %y: f32[3] = mul(%x, %one)
          %z: f32[3] = exp(%y)
          return %z
        }""",
    "switch-sink": """
        graph @k(%c: bool[3], %x: f32[3], %z: f32[3]) {
          const %zero: f32[] = 0.0
          %s: f32[3] = where(%c, %zero, %x)
          %y: f32[3] = mul(%s, %z)
          return %y
        }""",
    "constant-folding": """
        graph @k(%x: f32[2]) {
          const %a: f32[2] = [1.0, 2.0]
          const %b: f32[2] = [3.0, 4.0]
          %c: f32[2] = add(%a, %b)
          %y: f32[2] = mul(%x, %c)
          return %y
        }""",
    "shape-folding": """
        graph @k(%x: f32[N,3]) {
          const %one: i64[] = 1
          %s: i64[2] = shape(%x)
          %k: i64[] = gather(%s, %one) {axis=0}
          return %k
        }""",
    "cse": """
        graph @k(%x: f32[3]) {
          %a: f32[3] = exp(%x)
          %b: f32[3] = exp(%x)
          %c: f32[3] = add(%a, %b)
          return %c
        }""",
    "dce": """
        graph @k(%x: f32[3]) {
          %a: f32[3] = exp(%x)
          %dead: f32[3] = neg(%x)
          return %a
        }""",
    "cumulative-scan": f"""
        graph @k(%s0: f32[3], %xs: f32[4,3]) {{
          const %n: i64[] = 3
          %s: f32[3], %ys: f32[3,3] = loop(%n, %s0, %xs) {{has_condition=false, num_carried=1}} {IF_LOOP_BODY}
          return %s, %ys
        }}""",
    "scan-unroll": f"""
        graph @k(%s0: f32[3], %xs: f32[4,3]) {{
          const %n: i64[] = 2
          %s: f32[3], %ys: f32[2,3] = loop(%n, %s0, %xs) {{has_condition=false, num_carried=1}} {IF_LOOP_BODY}
          return %s, %ys
        }}""",
    "conv-recovery": """
        graph @k(%x: f32[2,3,8,8], %W: f32[4,3,3,3]) {
          %u: f32[2,1,3,8,8] = unsqueeze(%x) {axes=[1]}
          %v: f32[1,4,3,3,3] = unsqueeze(%W) {axes=[0]}
          %c: f32[2,4,3,6,6] = convolve2d(%u, %v) {full=false}
          %y: f32[2,4,6,6] = reduce_sum(%c) {axes=[2], keepdims=false}
          return %y
        }""",
    "conv-bias-fusion": f"""
        graph @k(%x: f32[2,3,6,6], %W: f32[4,3,3,3], %b: f32[4]) {{
          %c: f32[2,4,4,4] = conv(%x, %W) {CONV}
          %u: f32[1,4,1,1] = unsqueeze(%b) {{axes=[0, 2, 3]}}
          %y: f32[2,4,4,4] = add(%c, %u)
          return %y
        }}""",
    "batchnorm-folding": f"""
        graph @k(%x: f32[2,3,5,5]) {{
          const %W: f32[2,3,1,1] = [[[[1.0]], [[2.0]], [[3.0]]], [[[-1.0]], [[0.5]], [[0.25]]]]
          const %m: f32[1,2,1,1] = [[[[0.5]], [[-1.0]]]]
          const %sd: f32[1,2,1,1] = [[[[2.0]], [[0.25]]]]
          %c: f32[2,2,5,5] = conv(%x, %W) {CONV}
          %0: f32[2,2,5,5] = sub(%c, %m)
          %y: f32[2,2,5,5] = div(%0, %sd)
          return %y
        }}""",
    "filter-flip": """
        graph @k(%x: f32[2,1,6,6]) {
          const %sobel: f32[1,1,3,3] = [[[[1.0, 0.0, -1.0], [2.0, 0.0, -2.0], [1.0, 0.0, -1.0]]]]
          %y: f32[2,1,4,4] = conv(%x, %sobel) {dilations=[], flip=true, group=1, pads=[], strides=[]}
          return %y
        }""",
    "relu-silu": """
        graph @k(%x: f32[3]) {
          const %zero: f32[] = 0.0
          %y: f32[3] = maximum(%x, %zero)
          return %y
        }""",
    "pool-recovery": """
        graph @k(%x: f32[2,3,8,6]) {
          const %s: i64[6] = [2, 3, 4, 2, 2, 3]
          %r: f32[2,3,4,2,2,3] = reshape(%x, %s)
          %y: f32[2,3,4,2] = reduce_max(%r) {axes=[3, 5], keepdims=false}
          return %y
        }""",
    "norm-recovery": """
        graph @k(%x: f32[2,4]) {
          const %four: f32[] = 4.0
          const %two: f32[] = 2.0
          const %eps: f32[] = 1e-05
          %s: f32[2] = reduce_sum(%x) {axes=[1], keepdims=false}
          %k: f32[2,1] = unsqueeze(%s) {axes=[1]}
          %m: f32[2,1] = div(%k, %four)
          %d: f32[2,4] = sub(%x, %m)
          %q: f32[2,4] = pow(%d, %two)
          %qs: f32[2] = reduce_sum(%q) {axes=[1], keepdims=false}
          %qk: f32[2,1] = unsqueeze(%qs) {axes=[1]}
          %v: f32[2,1] = div(%qk, %four)
          %ve: f32[2,1] = add(%v, %eps)
          %sd: f32[2,1] = sqrt(%ve)
          %y: f32[2,4] = div(%d, %sd)
          return %y
        }""",
    "attention": """
        graph @k(%x: f32[2,2]) {
          const %m: bool[2,2] = [[true, false], [true, true]]
          const %fill: f32[] = -inf
          %w: f32[2,2] = where(%m, %x, %fill)
          %y: f32[2,2] = softmax(%w) {axis=1}
          return %y
        }""",
    "resize-recovery": """
        graph @k(%x: f32[2,3,4,5]) {
          const %t: i64[5] = [2, 3, 4, 2, 5]
          const %s: i64[4] = [2, 3, 8, 5]
          %u: f32[2,3,4,1,5] = unsqueeze(%x) {axes=[3]}
          %e: f32[2,3,4,2,5] = expand(%u, %t)
          %y: f32[2,3,8,5] = reshape(%e, %s)
          return %y
        }""",
    "flatten-recovery": """
        graph @k(%x: f32[N,16,5,5]) {
          const %zero: i64[] = 0
          const %minus_one: i64[1] = [-1]
          %s: i64[4] = shape(%x)
          %n: i64[] = gather(%s, %zero) {axis=0}
          %u: i64[1] = unsqueeze(%n) {axes=[0]}
          %t: i64[2] = concat(%u, %minus_one) {axis=0}
          %y: f32[N,400] = reshape(%x, %t)
          return %y
        }""",
    "gemm-fusion": """
        graph @k(%a: f32[2,4], %W: f32[4,3], %b: f32[3]) {
          %h: f32[2,3] = matmul(%a, %W)
          %y: f32[2,3] = add(%h, %b)
          return %y
        }""",
    "conv-slicing": f"""
        graph @k(%x: f32[2,2,3,3]) {{
          const %W: f32[4,2,1,1] = [[[[1.0]], [[2.0]]], [[[-1.0]], [[0.5]]], [[[0.25]], [[3.0]]], [[[-2.0]], [[1.5]]]]
          const %zero: i64[1] = [0]
          const %two: i64[1] = [2]
          const %four: i64[1] = [4]
          const %one: i64[1] = [1]
          %c: f32[2,4,3,3] = conv(%x, %W) {CONV}
          %lo: f32[2,2,3,3] = slice(%c, %zero, %two, %one) {{axes=[1]}}
          %hi: f32[2,2,3,3] = slice(%c, %two, %four, %one) {{axes=[1]}}
          %y: f32[2,2,3,3] = add(%lo, %hi)
          return %y
        }}""",
    "if-sinking": """
        graph @k(%c: bool[], %x: f32[3]) {
          %e: f32[3] = exp(%x)
          %r: f32[3] = if(%c, %e, %x) (then: graph @t(%t.e: f32[3], %t.x: f32[3]) {
            return %t.e
          }, else: graph @f(%f.e: f32[3], %f.x: f32[3]) {
            return %f.x
          })
          return %r
        }""",
    "if-to-where": """
        graph @k(%c: bool[], %x: f32[3], %y: f32[3]) {
          %r: f32[3] = if(%c, %x, %y) (then: graph @t(%t.x: f32[3], %t.y: f32[3]) {
            %a: f32[3] = exp(%t.x)
            return %a
          }, else: graph @f(%f.x: f32[3], %f.y: f32[3]) {
            return %f.y
          })
          return %r
        }""",
    "distinct-arguments": """
        graph @k(%alpha: f64[]) {
          const %y: f64[8] = [3.0, 1.0, 3.0, 3.0, 1.0, 1.0, 3.0, 1.0]
          %a: f64[8] = add(%y, %alpha)
          %g: f64[8] = gammaln(%a)
          return %g
        }""",
    "special-batching": """
        graph @k(%x: f64[2], %z: f64[2,3]) {
          %a: f64[2] = gammaln(%x)
          %c: f64[2,3] = gammaln(%z)
          return %a, %c
        }""",
    "narrow-layout": """
        graph @k(%y: f64[64,2], %mu: f64[2]) {
          %d: f64[64,2] = sub(%y, %mu)
          %m: f64[64] = reduce_max(%d) {axes=[1], keepdims=false}
          %u: f64[64,1] = unsqueeze(%m) {axes=[1]}
          %e: f64[64,2] = sub(%d, %u)
          %c: f64[2] = reduce_sum(%e) {axes=[0], keepdims=false}
          return %c
        }""",
}

OURS = sorted(name for name, cls in registered_passes().items() if cls.__module__.startswith("passes."))
SIZES = {"N": 2}
TRIPS = 2  # the outer loop's trip count in the numeric check


def kernel(name: str) -> Graph:
    return parse_graph(textwrap.dedent(KERNELS[name]).strip() + "\n")


def nest(k: Graph, how: str) -> Graph:
    """A graph running the kernel ``k`` in a ``loop`` body (its outputs
    stacked, the trip count the input ``%trips``) or in both branches of an
    ``if`` on the input ``%cond``."""
    outer = Graph("main")
    first = (outer.add_input(TensorType(DType.INT64, ()), "trips") if how == "loop"
             else outer.add_input(TensorType(DType.BOOL, ()), "cond"))
    args = [outer.add_input(v.type, v.name) for v in k.inputs]
    bodies = {}
    for role in (("body",) if how == "loop" else ("then", "else")):
        body = Graph(role)
        if how == "loop":
            body.add_input(TensorType(DType.INT64, ()), f"{role}.i")
        params = [body.add_input(v.type, f"{role}.{v.name}") for v in k.inputs]
        body.set_outputs(inline(body, k, params, prefix=f"{role}."))
        bodies[role] = body
    attrs = {"has_condition": False, "num_carried": 0} if how == "loop" else {}
    node = outer.create_node(how, [first, *args], attrs, subgraphs=bodies)
    outer.append(node)
    outer.set_outputs(list(node.outputs))
    verify(outer)
    return outer


def assert_same_results(before: Graph, after: Graph) -> None:
    for seed in range(3):
        values = random_inputs(before, np.random.default_rng(seed), SIZES, finite=True)
        if before.inputs[0].name == "trips":
            values[0] = np.array(TRIPS, np.int64)
        want, got = evaluate(before, values), evaluate(after, values)
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == w.dtype and g.shape == w.shape, f"output {i}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
            scale = float(np.max(np.abs(w), initial=1.0))  # conv and batch-norm recovery reassociate sums
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * scale, err_msg=f"output {i} (seed {seed})")


def test_every_pass_of_this_package_has_a_case_and_states_whether_it_visits_nested_graphs():
    assert len(OURS) >= 20  # the registry is seen
    assert sorted(KERNELS) == OURS
    for name in OURS:
        cls = registered_passes()[name]
        declared = any("visits_nested_graphs" in c.__dict__ for c in cls.__mro__ if c is cls or c is RuleSetPass)
        assert declared, f"{name} does not state visits_nested_graphs"


@pytest.mark.parametrize("name", OURS)
def test_the_opportunity_is_rewritten_at_the_top_level(name):
    graph = kernel(name)
    before = copy_graph(graph)
    assert get_pass(name).run(graph) is True
    verify(graph)
    assert_same_results(before, graph)


@pytest.mark.parametrize("how", ["loop", "if"])
@pytest.mark.parametrize("name", OURS)
def test_the_opportunity_in_a_nested_graph(name, how):
    check_nested(get_pass(name), kernel(name), how)


@dataclass(frozen=True)
class TopLevelDce(Pass):
    """Dead-code elimination of the top-level graph only."""

    name = "top-level-dce"
    visits_nested_graphs = False

    def run(self, graph: Graph) -> bool:
        return remove_dead_code(graph)


@pytest.mark.parametrize("how", ["loop", "if"])
def test_a_pass_that_does_not_visit_nested_graphs_leaves_them(how):
    assert TopLevelDce().run(kernel("dce")) is True
    check_nested(TopLevelDce(), kernel("dce"), how)


def check_nested(p: Pass, k: Graph, how: str) -> None:
    """Run ``p`` on ``k`` nested in a ``how`` node: rewritten there when ``p``
    visits nested graphs, else left as it is; the same numbers."""
    graph = nest(k, how)
    before, text = copy_graph(graph), print_graph(graph)
    changed = p.run(graph)
    verify(graph)
    if p.visits_nested_graphs:
        assert changed is True and print_graph(graph) != text, f"{p.name} did not rewrite inside the {how}"
    else:
        assert changed is False and print_graph(graph) == text
    assert_same_results(before, graph)
