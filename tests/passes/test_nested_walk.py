"""cse and dce reach into nested bodies through ``ir.transforms.walk_graphs``."""

import numpy as np

from ir.interpreter import evaluate
from ir.parser import parse_graph
from ir.transforms import walk_graphs
from ir.verifier import verify
from passes import get_pass

LOOP = """
graph @main(%n: i64[], %s0: f32[3], %x: f32[3]) {
  %s: f32[3], %ys: f32[?,3] = loop(%n, %s0, %x) {has_condition=false, num_carried=1} (
    body: graph @body(%body.i: i64[], %body.s: f32[3], %body.x: f32[3]) {
      %a: f32[3] = add(%body.s, %body.x)
      %b: f32[3] = add(%body.x, %body.s)
      %dead: f32[3] = exp(%body.x)
      %c: f32[3] = mul(%a, %b)
      return %c, %c
    })
  return %s, %ys
}
"""


def _ops(graph):
    return [n.op for g in walk_graphs(graph) for n in g]


def test_walk_visits_every_graph_once_outer_first():
    g = parse_graph(LOOP)
    assert [h.name for h in walk_graphs(g)] == ["main", "body"]


def test_cse_and_dce_simplify_a_loop_body_without_changing_results():
    g = parse_graph(LOOP)
    args = [np.int64(3), np.ones(3, np.float32), np.arange(3, dtype=np.float32)]
    before = evaluate(g, args)
    assert get_pass("cse").run(g) and get_pass("dce").run(g)
    verify(g)
    assert _ops(g) == ["loop", "add", "mul"]
    for got, want in zip(evaluate(g, args), before):
        np.testing.assert_array_equal(got, want)
    assert not get_pass("cse").run(g) and not get_pass("dce").run(g)  # a fixpoint
