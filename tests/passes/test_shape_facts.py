"""One shape-facts table, read forward (``ShapeValues``) and on demand
(``elements``): both give the same contents, and on-demand reads refuse
what the vector rules cannot read at higher ranks."""

import pytest

from ir.parser import parse_graph
from ir.symbolic import format_dim
from passes.shape_facts import DimOf, ShapeValues, elements

GRAPH = """
graph @main(%x: f32[N,3,8,8], %m: i64[2,3]) {
  const %one: i64[1] = [1]
  const %end: i64[1] = [4]
  const %step: i64[1] = [1]
  const %two: i64[] = 2
  %s: i64[4] = shape(%x)
  %hw: i64[3] = slice(%s, %one, %end, %step) {axes=[0]}
  %p: i64[] = reduce_prod(%hw) {axes=[], keepdims=false}
  %b: i64[] = gather(%s, %two) {axis=0}
  %h2: i64[] = floor_div(%b, %two)
  %h2v: i64[1] = unsqueeze(%h2) {axes=[0]}
  %v: i64[2] = concat(%h2v, %h2v) {axis=0}
  %f: f32[4] = cast(%s) {to=f32}
  %fd: f32[] = gather(%f, %two) {axis=0}
  %half: f32[] = div(%fd, %fd)
  %t: i64[3,2] = transpose(%m) {perm=[1, 0]}
  return %p, %h2, %half, %t, %v
}
"""


@pytest.fixture(scope="module")
def graph():
    return parse_graph(GRAPH)


def _value(graph, name):
    return next(out for node in graph for out in node.outputs if out.name == name)


def test_forward_and_on_demand_agree_on_integer_shape_arithmetic(graph):
    forward = ShapeValues()
    for node in graph:
        forward.update(node)
    for name in ("s", "hw", "p", "b", "h2", "v"):
        v = _value(graph, name)
        want = forward.of(v)
        got = elements(v)
        assert tuple(got) == tuple(want), name
    assert elements(_value(graph, "p")) == (192,)
    assert elements(_value(graph, "s"))[0] == "N"


def test_on_demand_float_numbers_use_the_dtype_and_keep_sizes(graph):
    assert elements(_value(graph, "f")) == ("N", 3.0, 8.0, 8.0)  # a size cast to a float is still that size
    assert elements(_value(graph, "half")) == (1.0,)


def test_on_demand_refuses_orders_the_vector_rules_do_not_model(graph):
    assert elements(_value(graph, "t")) is None  # a 2-D transpose reorders elements


def test_unknown_sizes_are_tokens_of_their_value():
    g = parse_graph("""
        graph @main(%x: f32[?,3]) {
          %s: i64[2] = shape(%x)
          return %s
        }""")
    (s,) = g.outputs
    token, three = elements(s)
    assert token == DimOf(g.inputs[0], 0) and three == 3


def test_comparisons_of_sizes_are_decided_and_where_picks_min_or_max():
    """PyTensor's compiled slice clamping: ``where(a < b, a, b)`` of two sizes
    is ``min(a, b)`` even when the comparison is undecided; a decided one
    selects a branch (the other may be unknown)."""
    g = parse_graph("""
        graph @main(%x: f32[N,3,H,W], %u: i64[]) {
          const %four: i64[] = 4
          %s: i64[4] = shape(%x)
          %h: i64[] = gather(%s, %two) {axis=0}
          %h4: i64[] = add(%h, %four)
          %c: bool[] = ge(%four, %h4)
          %m: i64[] = where(%c, %h4, %four)
          %d: bool[] = lt(%h, %h4)
          %e: i64[] = where(%d, %h, %u)
          %f: bool[] = lt(%h, %four)
          %g: i64[] = where(%f, %h, %four)
          return %m, %e, %g
        }""".replace("%two", "%two_c").replace("const %four", "const %two_c: i64[] = 2\n          const %four"))
    m, e, gmin = g.outputs
    assert elements(m) == (4,)             # min(H+4, 4): H >= 0
    assert elements(e) == ("H",)           # H < H+4 always: the unknown branch is never taken
    assert format_dim(elements(gmin)[0]) == "min(H,4)"
    forward = ShapeValues()
    for node in g:
        forward.update(node)
    assert forward.of(m) == (4,) and forward.of(e) == ("H",)
