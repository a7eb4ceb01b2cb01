"""The IR text form: print -> parse -> print is the identity, parsed graphs
compute the right numbers, constants keep their exact bytes, and parse
errors point at the offending line and column."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from ir import DType, Graph, TensorType
from ir.interpreter import evaluate
from ir import opdef as registry
from ir.opdef import Attr, OpDef
from ir.parser import IRParseError, parse_graph, parse_type
from ir.printer import print_graph
from ir.verifier import verify

F32 = DType.FLOAT32


def roundtrip(text: str) -> Graph:
    """Parse ``text``, assert it prints back identically, return the graph."""
    graph = parse_graph(text)
    printed = print_graph(graph)
    assert printed == text, f"--- given\n{text}\n--- printed\n{printed}"
    assert str(graph) == printed
    assert print_graph(parse_graph(printed)) == printed
    return graph


@pytest.fixture
def extra_ops(monkeypatch):
    """Register two test-only ops for the duration of a test: ``test_attrs``
    (identity, with one attribute of every kind) and ``test_call`` (variadic
    identity carrying nested graphs)."""
    kinds = {"b": Attr("bool", False), "d": Attr("dtype", F32), "f": Attr("float", 0.0),
             "fs": Attr("floats", ()), "i": Attr("int", 0), "is": Attr("ints", ()), "s": Attr("str", "")}
    ident = (lambda types, attrs, consts: list(types)), (lambda args, attrs: list(args))
    monkeypatch.setitem(registry._REGISTRY, "test_attrs", OpDef("test_attrs", *ident, 1, attrs=kinds))
    monkeypatch.setitem(registry._REGISTRY, "test_call", OpDef("test_call", *ident, None))


# -- fixed texts ---------------------------------------------------------------

MAIN = """\
graph @main(%x: f32[N,4], %n: i64[]) {
  const %w: f32[4,2] = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]]
  const %two: f32[] = 2.0
  const %sizes: i64[2] = [1, 1]
  const %m: bool[2,2] = [[true, false], [false, true]]
  %0: f32[N,2] = matmul(%x, %w)
  %y: f32[N,2] = mul(%0, %two)
  %a: f32[N,1], %b: f32[N,1] = split(%y, %sizes) {axis=1, num_outputs=2}
  %s: f32[N] = reduce_sum(%y) {axes=[1], keepdims=false}
  %c: f64[N] = cast(%s) {to=f64}
  %d: f32[N,1] = sub(%a, %b)
  return %c, %d, %m
}
"""

SHAPES = """\
graph @shapes(%x: f32[?,3,B], %i: i64[K]) {
  const %shape: i64[2] = [-1, 3]
  const %idx: i64[2,1] = [[0], [2]]
  const %u: f32[2,3] = [[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]]
  %t: f32[B,?,3] = transpose(%x) {perm=[2, 0, 1]}
  %g: f32[?,K,B] = gather(%x, %i) {axis=1}
  %r: f32[?,3] = reshape(%t, %shape)
  %sc: f32[?,3] = scatter_nd(%r, %idx, %u) {reduction="add"}
  %am: i64[?,1,B] = argmax(%x) {axis=1, keepdims=true}
  return %g, %sc, %am
}
"""

EMPTY = """\
graph @empty() {
  return
}
"""


@pytest.mark.parametrize("text", [MAIN, SHAPES, EMPTY], ids=["main", "shapes", "empty"])
def test_fixed_texts_round_trip_and_verify(text):
    verify(roundtrip(text))


def test_main_text_computes_expected_numbers():
    graph = roundtrip(MAIN)
    x = np.array([[1, 0, 0, 1], [0, 1, 1, 0]], dtype=np.float32)
    c, d, m = evaluate(graph, [x, np.array(7)])
    # x @ w = [[8, 10], [8, 10]]; doubled = [[16, 20], ...]; row sums 36; a - b = -4
    np.testing.assert_array_equal(c, np.array([36.0, 36.0]))
    assert c.dtype == np.float64
    np.testing.assert_array_equal(d, np.array([[-4.0], [-4.0]], dtype=np.float32))
    np.testing.assert_array_equal(m, np.eye(2, dtype=bool))


def test_shapes_text_computes_expected_numbers():
    graph = roundtrip(SHAPES)
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    g, sc, am = evaluate(graph, [x, np.array([2, 0])])
    np.testing.assert_array_equal(g, x[:, [2, 0], :])
    r = np.transpose(x, (2, 0, 1)).reshape(-1, 3)
    want = r.copy()
    want[0] += [1, 2, 3]
    want[2] += [10, 20, 30]
    np.testing.assert_array_equal(sc, want)
    np.testing.assert_array_equal(am, np.full((2, 1, 2), 2))


ATTRS = """\
graph @attrs(%x: f32[2]) {
  %a: f32[2] = test_attrs(%x) {b=true, d=u16, f=1e-05, fs=[1.0, -0.0, inf, -inf, nan, 5e-324], i=-3, is=[], s="q\\"uote\\\\ \\n\\u00e9\\ud83d\\ude00"}
  %b: f32[2] = test_attrs(%a) {b=false, d=bool, f=-inf, fs=[], i=9223372036854775807, is=[0, -1, 2], s=""}
  %c: f32[2] = test_attrs(%b) {b=false, d=f32, f=nan, fs=[], i=0, is=[], s=""}
  return %c
}
"""


def test_every_attribute_kind_round_trips(extra_ops):
    graph = roundtrip(ATTRS)
    a, b, c = graph.nodes
    assert a.attrs["s"] == 'q"uote\\ \n\u00e9\U0001F600'
    assert a.attrs["d"] is DType.UINT16 and b.attrs["d"] is DType.BOOL
    assert a.attrs["f"] == 1e-05 and a.attrs["i"] == -3 and a.attrs["b"] is True
    fs = a.attrs["fs"]
    assert fs[:2] == (1.0, 0.0) and np.signbit(fs[1]) and fs[2:4] == (np.inf, -np.inf)
    assert np.isnan(fs[4]) and fs[5] == 5e-324
    assert b.attrs["is"] == (0, -1, 2) and b.attrs["i"] == 2**63 - 1 and b.attrs["f"] == -np.inf
    assert np.isnan(c.attrs["f"])
    verify(graph)


CONSTS = """\
graph @consts() {
  const %f32: f32[8] = [0.1, -0.0, 1e-45, 3.4028235e+38, inf, -inf, nan, 1.6777216e+07]
  const %f16: f16[6] = [6e-08, 6.55e+04, 0.0999, -0.0, inf, nan]
  const %f64: f64[4] = [5e-324, 1.7976931348623157e+308, 0.1, -2.5]
  const %i8: i8[3] = [-128, 0, 127]
  const %u64: u64[2] = [0, 18446744073709551615]
  const %i64: i64[2,1] = [[-9223372036854775808], [9223372036854775807]]
  const %u8: u8[] = 255
  const %flag: bool[] = false
  const %none: f32[0,3] = base64""
  const %big: i16[17] = base64"AAABAAIAAwAEAAUABgAHAAgACQAKAAsADAANAA4ADwAQAA=="
  return %f32, %f16, %f64, %i8, %u64, %i64, %u8, %flag, %none, %big
}
"""


def test_constants_keep_exact_values():
    graph = roundtrip(CONSTS)
    verify(graph)
    c = {name: v.const for name, v in graph.constants.items()}
    want32 = np.array([0.1, -0.0, 1e-45, 3.4028235e38, np.inf, -np.inf, np.nan, 2**24], dtype=np.float32)
    np.testing.assert_array_equal(c["f32"], want32)
    assert np.signbit(c["f32"][1]) and c["f32"][2] == np.float32(1e-45) > 0  # subnormal kept
    np.testing.assert_array_equal(c["f16"], np.array([6e-08, 65504, 0.0999, -0.0, np.inf, np.nan], np.float16))
    assert c["f16"][0] > 0 and c["f16"].dtype == np.float16
    assert c["f64"][0] == 5e-324 and c["f64"][1] == np.finfo(np.float64).max
    assert c["u64"][1] == 2**64 - 1 and c["u64"].dtype == np.uint64
    assert c["i64"].tolist() == [[-2**63], [2**63 - 1]]
    assert c["u8"].shape == () and c["u8"] == 255 and c["flag"].dtype == bool and not c["flag"]
    assert c["none"].shape == (0, 3) and c["none"].dtype == np.float32
    np.testing.assert_array_equal(c["big"], np.arange(17, dtype=np.int16))
    assert all(not a.flags.writeable for a in c.values())


NESTED = """\
graph @main(%x: f32[3]) {
  const %c: f32[] = 1.0
  %y: f32[3] = add(%x, %c)
  %r: f32[3], %s: f32[3] = test_call(%y, %x) (body: graph @body(%i: f32[3], %j: f32[3]) {
    const %k: f32[] = 2.0
    %z: f32[3] = mul(%i, %k)
    %w: f32[3] = add(%z, %y)
    %q: f32[3] = test_call(%w) (inner: graph @inner(%u: f32[3]) {
      %v: f32[3] = sub(%u, %c)
      return %v
    })
    return %q, %x
  }, "other role": graph @other(%i: f32[3]) {
    return %i
  })
  %t: f32[3] = mul(%r, %s)
  return %t
}
"""


def test_nested_graphs_round_trip_with_outer_references(extra_ops):
    graph = roundtrip(NESTED)
    verify(graph)
    call = graph.nodes[1]
    body, other = call.subgraphs["body"], call.subgraphs["other role"]
    assert [v.name for v in body.inputs] == ["i", "j"] and other.outputs == other.inputs
    y, x, c = graph.nodes[0].output, graph.inputs[0], graph.constants["c"]
    add = body.nodes[1]
    assert add.inputs[1] is y and body.outputs[1] is x  # enclosing-graph values are shared
    inner = body.nodes[2].subgraphs["inner"]
    assert inner.nodes[0].inputs[1] is c
    assert {u.node for u in c.uses()} == {graph.nodes[0], inner.nodes[0]}


def test_printer_names_are_unique_sanitized_and_stable(extra_ops):
    g = Graph("names")
    x = g.add_input(TensorType(F32, (2,)), "x")
    q = g.add_input(TensorType(F32, (2,)), "in:0")  # not a plain token: quoted
    g.add_constant(np.float32(1.5), "1")  # a numeric name unnamed values must skip
    v = [x]
    for hint in ["x", None, "y", "y", "a/b c", "x_1", None, None, "y", ""]:
        v.append(g.add("neg", [v[-1]], name=hint))
    sub = Graph("sub")
    sub.add_input(TensorType(F32, (2,)), "y_2")  # reserved across the whole text
    sub.set_outputs([sub.add("abs", [q], name="y")])
    node = g.create_node("test_call", [v[-1]], output_names=[None], subgraphs={"body": sub})
    g.append(node)
    g.set_outputs([node.output, q])
    text = print_graph(g)
    roundtrip(text)
    assert text == """\
graph @names(%x: f32[2], %"in:0": f32[2]) {
  const %1: f32[] = 1.5
  %x_1: f32[2] = neg(%x)
  %0: f32[2] = neg(%x_1)
  %y: f32[2] = neg(%0)
  %y_1: f32[2] = neg(%y)
  %a_b_c: f32[2] = neg(%y_1)
  %x_1_1: f32[2] = neg(%a_b_c)
  %2: f32[2] = neg(%x_1_1)
  %3: f32[2] = neg(%2)
  %y_3: f32[2] = neg(%3)
  %4: f32[2] = neg(%y_3)
  %5: f32[2] = test_call(%4) (body: graph @sub(%y_2: f32[2]) {
    %y_4: f32[2] = abs(%"in:0")
    return %y_4
  })
  return %5, %"in:0"
}
"""
    assert [v.name for v in g.inputs] == ["x", "in:0"]  # printing names nothing


def test_many_equal_hints_get_distinct_names():
    g = Graph()
    v = g.add_input(TensorType(F32, ()), "v")
    for _ in range(500):
        v = g.add("neg", [v], name="v")
    g.set_outputs([v])
    names = [n.output.name for n in parse_graph(print_graph(g))]
    assert names == [f"v_{i}" for i in range(1, 501)]


def test_zero_output_node_prints_without_equals(monkeypatch):
    sink = OpDef("test_sink", lambda t, a, c: [], lambda a, at: [], 1)
    monkeypatch.setitem(registry._REGISTRY, "test_sink", sink)
    text = "graph @main(%x: f32[]) {\n  test_sink(%x)\n  return\n}\n"
    graph = roundtrip(text)
    assert graph.nodes[0].outputs == () and graph.inputs[0].uses()[0].node is graph.nodes[0]


def test_comments_and_whitespace_are_ignored():
    graph = parse_graph("""
        # a comment
        graph @g(%x:f32[2,N]){%y:f32[2,N]=exp(%x)   # trailing comment
        return %y}""")
    assert print_graph(graph) == "graph @g(%x: f32[2,N]) {\n  %y: f32[2,N] = exp(%x)\n  return %y\n}\n"


def test_parse_type():
    assert parse_type("f32[N,?,3]") == TensorType(F32, ("N", None, 3))
    assert parse_type("bool[]") == TensorType(DType.BOOL, ())
    with pytest.raises(IRParseError, match="unknown dtype 'f8'"):
        parse_type("f8[2]")


# -- parse errors ----------------------------------------------------------------

HEAD = "graph @g(%x: f32[2]) {\n"


@pytest.mark.parametrize("text, line, at, message", [
    (HEAD + "  %y: f32[2] = exp(%z)\n  return %y\n}\n", 2, "%z)", "%z is not defined"),
    (HEAD + "  %x: f32[2] = exp(%x)\n  return %x\n}\n", 2, "%x:", "%x is already defined"),
    (HEAD + "  %y: f32[2] = frobnicate(%x)\n  return %y\n}\n", 2, "frob", "unknown IR op 'frobnicate'"),
    (HEAD + "  %y: f32[] = reduce_sum(%x) {axes=[0], keepdims=1}\n  return %y\n}\n", 2, "reduce_sum",
     "keepdims=1 must be a bool"),
    (HEAD + "  %y: f32[] = reduce_sum(%x) {axis=0}\n  return %y\n}\n", 2, "reduce_sum",
     r"unknown attribute\(s\) \['axis'\]"),
    (HEAD + "  %y: f32[2] = cast(%x) {to=f32, to=f64}\n  return %y\n}\n", 2, "to=f64", "attribute to given twice"),
    (HEAD + "  %y: f32[2] = cast(%x) {to=float32}\n  return %y\n}\n", 2, "float32", "expected a number, true or false"),
    (HEAD + "  %y: q32[2] = exp(%x)\n  return %y\n}\n", 2, "q32", "unknown dtype 'q32'"),
    (HEAD + "  %y: f32[2 = exp(%x)\n  return %y\n}\n", 2, "= exp", "expected ']', got '='"),
    (HEAD + "  const %c: i32[2] = [1, 2.5]\n  return %c\n}\n", 2, "2.5", "'2.5' is not a i32 value"),
    (HEAD + "  const %c: u8[] = 256\n  return %c\n}\n", 2, "256", "literal does not fit u8"),
    (HEAD + "  const %c: bool[] = 1\n  return %c\n}\n", 2, "1", "'1' is not a bool value"),
    (HEAD + "  const %c: f32[2] = [[1.0], 2.0]\n  return %c\n}\n", 2, "[[", "literal does not fit f32"),
    (HEAD + '  const %c: f32[2] = base64"AAAA"\n  return %c\n}\n', 2, "base64", "has 3 bytes, f32\\[2\\] needs 8"),
    (HEAD + '  const %c: f32[N] = base64""\n  return %c\n}\n', 2, "base64", "needs a static type"),
    (HEAD + '  %y: f32[2] = cast(%x) {to="\\q"}\n  return %y\n}\n', 2, '"\\q"', "bad string literal"),
    (HEAD + "  %y: f32[2] = exp(%x) $\n", 2, "$", "unexpected character '\\$'"),
    (HEAD + "  return %x\n}\n}\n", 4, "}", "expected end of text, got '}'"),
    (HEAD + "  return %x\n", 3, "", "expected '}', got end of text"),
    ("graph @g(%x: f32[-1]) {\n  return\n}\n", 1, "-1", "expected a dim"),
    ("graph g(%x: f32[2]) {\n  return\n}\n", 1, "g(", "expected a graph name @name, got 'g'"),
    ("graph @g(x: f32[2]) {\n  return\n}\n", 1, "x:", "expected a value %name, got 'x'"),
])
def test_parse_errors_point_at_line_and_column(text, line, at, message):
    source = text.split("\n")[line - 1]
    column = source.index(at) + 1
    with pytest.raises(IRParseError, match=message) as info:
        parse_graph(text)
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    assert str(err).startswith(f"line {line}:{column}: ")
    assert f"\n  {source}\n  {' ' * (column - 1)}^" in str(err)


# -- property tests --------------------------------------------------------------

DTYPES = list(DType)


@st.composite
def constant_arrays(draw):
    dtype = draw(st.sampled_from(DTYPES)).numpy
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
    if dtype.kind == "f":
        elements = st.floats(width=8 * dtype.itemsize, allow_nan=True, allow_infinity=True,
                             allow_subnormal=True)
        return draw(hnp.arrays(dtype, shape, elements=elements))
    return draw(hnp.arrays(dtype, shape))


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bytes, except that any NaN matches any NaN."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        if not np.array_equal(nan, np.isnan(b)):
            return False
        a, b = np.where(nan, 0, a), np.where(nan, 0, b)
    return a.tobytes() == b.tobytes()


@given(constant_arrays())
def test_constant_arrays_round_trip_bit_exactly(array):
    g = Graph("c")
    g.set_outputs([g.add_constant(array, "c")])
    text = print_graph(g)
    parsed = parse_graph(text)
    assert print_graph(parsed) == text
    got = parsed.constants["c"].const
    assert same_bits(got, array), f"{text}\n{got!r} != {array!r}"
    assert ('base64"' in text) == (array.size == 0 or array.size > 16)


UNARY = ["neg", "abs", "exp", "tanh", "sqrt", "floor", "sigmoid", "isnan"]
BINARY = ["add", "sub", "mul", "div", "maximum", "pow", "lt"]


@st.composite
def elementwise_graphs(draw):
    """A random graph of float32 elementwise ops over two inputs that broadcast
    (``f32[N,3]`` and ``f32[3]``), with a few scalar constants."""
    g = Graph("rand")
    values = [g.add_input(TensorType(F32, ("N", 3)), "a"), g.add_input(TensorType(F32, (3,)), "b")]
    for k in range(draw(st.integers(0, 2))):
        c = draw(st.floats(width=32, allow_nan=True, allow_infinity=True))
        values.append(g.add_constant(np.float32(c), f"k{k}"))
    for _ in range(draw(st.integers(1, 8))):
        floats = [v for v in values if v.dtype == F32]
        name = draw(st.sampled_from([None, "t", "t"]))
        if draw(st.booleans()):
            values.append(g.add(draw(st.sampled_from(UNARY)), [draw(st.sampled_from(floats))], name=name))
        else:
            ins = [draw(st.sampled_from(floats)) for _ in range(2)]
            values.append(g.add(draw(st.sampled_from(BINARY)), ins, name=name))
    g.set_outputs(draw(st.lists(st.sampled_from(values), min_size=1, max_size=3)))
    return g


@given(elementwise_graphs(), hnp.arrays(np.float32, (2, 3), elements=st.floats(-3, 3, width=32)),
       hnp.arrays(np.float32, (3,), elements=st.floats(-3, 3, width=32)))
def test_random_elementwise_graphs_round_trip_and_compute_the_same(graph, a, b):
    text = print_graph(graph)
    parsed = parse_graph(text)
    assert print_graph(parsed) == text
    verify(parsed)
    for want, got in zip(evaluate(graph, [a, b]), evaluate(parsed, [a, b])):
        assert same_bits(got, want)
