"""cse, dce, constant folding and the pattern rules reach into nested bodies
through ``ir.transforms.walk_graphs``/``walk_scopes``; ``walk`` visits every node with its graph's context."""

import numpy as np

from ir.interpreter import evaluate
from ir.parser import parse_graph
from ir.transforms import holds, walk, walk_graphs, walk_scopes
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


BODY_FOLDS = """
graph @main(%n: i64[], %s0: f32[3]) {
  const %cc: f32[3] = [1.0, 2.0, 3.0]
  %s: f32[3], %ys: f32[?,3] = loop(%n, %s0) {has_condition=false, num_carried=1} (
    body: graph @body(%body.i: i64[], %body.s: f32[3]) {
      const %body.a: f32[3] = [1.0, 1.0, 1.0]
      const %body.b: f32[3] = [0.5, 0.5, 0.5]
      %k: f32[3] = add(%body.a, %body.b)
      %m: f32[3] = mul(%body.s, %k)
      %r: f32[3] = maximum(%m, %body.s)
      return %r, %r
    })
  %o: f32[3] = add(%s, %cc)
  return %o, %ys
}
"""


def test_scopes_reserve_the_names_of_enclosing_and_nested_graphs():
    g = parse_graph(BODY_FOLDS)
    (outer, outer_reserved), (body, body_reserved) = walk_scopes(g)
    assert body.name == "body" and outer_reserved == {"body.i", "body.s", "body.a", "body.b"}
    assert body_reserved == {"n", "s0", "cc"}


def test_constant_folding_reaches_bodies_with_fresh_names():
    """A folded body constant avoids every enclosing name; results are unchanged."""
    g = parse_graph(BODY_FOLDS)
    args = [np.int64(4), np.array([1.0, -2.0, 0.5], np.float32)]
    before = evaluate(g, args)
    assert get_pass("constant-folding").run(g)
    verify(g)
    body = g.nodes_with_subgraphs()[0].subgraphs["body"]
    assert [n.op for n in body] == ["mul", "maximum"]
    assert not set(body.constants) & (set(g.constants) | {v.name for v in g.inputs})
    for got, want in zip(evaluate(g, args), before):
        np.testing.assert_array_equal(got, want)


def test_pattern_rules_fire_inside_bodies():
    g = parse_graph("""
        graph @main(%n: i64[], %s0: f32[3]) {
          %s: f32[3], %ys: f32[?,3] = loop(%n, %s0) {has_condition=false, num_carried=1} (
            body: graph @body(%body.i: i64[], %body.s: f32[3]) {
              const %body.zero: f32[] = 0.0
              %r: f32[3] = maximum(%body.s, %body.zero)
              %t: f32[3] = sub(%r, %body.s)
              return %t, %r
            })
          return %s, %ys
        }""")
    args = [np.int64(3), np.array([1.0, -2.0, 0.5], np.float32)]
    before = evaluate(g, args)
    assert get_pass("relu-silu").run(g)
    verify(g)
    assert "relu" in _ops(g) and "maximum" not in _ops(g)
    for got, want in zip(evaluate(g, args), before):
        np.testing.assert_array_equal(got, want)


NESTED = """
graph @main(%c: bool[], %x: f32[3]) {
  %a: f32[3] = exp(%x)
  %r: f32[3] = if(%c, %a) (then: graph @t(%t.a: f32[3]) {
    %t1: f32[3] = neg(%t.a)
    %t2: f32[3], %t3: f32[?,3] = loop(%k, %t1) {has_condition=false, num_carried=1} (
      body: graph @t.body(%t.body.i: i64[], %t.body.s: f32[3]) {
        %b1: f32[3] = sin(%t.body.s)
        return %b1, %b1
      })
    return %t2
  }, else: graph @f(%f.a: f32[3]) {
    %f1: f32[3] = cos(%f.a)
    return %f1
  })
  %z: f32[3] = abs(%r)
  return %z
}
""".replace("%k", "%t.k").replace("graph @t(%t.a: f32[3]) {", "graph @t(%t.a: f32[3]) {\n    const %t.k: i64[] = 2")


def _names(graph):
    return [n.outputs[0].name or n.op for n, _ in walk(graph)]


def test_walk_yields_each_node_then_its_nested_graphs_with_their_context():
    g = parse_graph(NESTED)
    entered, exited = [], []

    def enter(graph, outer):
        entered.append(graph.name)
        return (outer or ()) + (graph.name,)

    seen = [(n.outputs[0].name, ctx) for n, ctx in walk(g, enter=enter, exit=lambda graph, ctx: exited.append(ctx))]
    assert seen == [("a", ("main",)), ("r", ("main",)), ("t1", ("main", "t")), ("t2", ("main", "t")),
                    ("b1", ("main", "t", "t.body")), ("f1", ("main", "f")), ("z", ("main",))]
    assert entered == ["main", "t", "t.body", "f"]
    assert exited == [("main", "t", "t.body"), ("main", "t"), ("main", "f"), ("main",)]


def test_walk_bodies_first_reverse_and_descend():
    g = parse_graph(NESTED)
    assert [n.outputs[0].name for n, _ in walk(g, bodies_first=True)] == ["a", "t1", "b1", "t2", "f1", "r", "z"]
    assert [n.outputs[0].name for n, _ in walk(g, reverse=True)] == ["z", "r", "t2", "b1", "t1", "f1", "a"]
    assert [n.outputs[0].name for n, _ in walk(g, descend=holds("loop"))] == ["a", "r", "t1", "t2", "f1", "z"]
    assert [n.outputs[0].name for n, _ in walk(g, descend=holds("sin"))] == ["a", "r", "t1", "t2", "b1", "f1", "z"]
    assert [n.outputs[0].name for n, _ in walk(g, descend=holds("cos"))] == ["a", "r", "t1", "t2", "f1", "z"]


def test_walk_skips_the_bodies_of_a_node_the_pass_replaced():
    g = parse_graph(NESTED)
    seen = []
    for node, _ in walk(g):
        seen.append(node.outputs[0].name)
        if node.op == "if":
            g.replace_all_uses(node.outputs[0], node.inputs[1])
            g.erase(node)
    assert seen == ["a", "r", "z"]
