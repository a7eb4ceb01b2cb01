"""Type rules of ``ir/ops`` produce symbolic dims where a dim is computable:
window outputs, concat sums, reshape's -1, slice lengths, flatten products,
padding, upsampling, broadcasts of equal expressions. Each rule's dims are
checked against the arrays the op's NumPy reference computes, at several
sizes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ir import DType, Graph, TensorType, get_op
from ir import symbolic as sym
from ir.ops.shape import INT64_MAX, INT64_MIN, slice_length
from ir.parser import parse_type
from tests.shapes.helpers import assert_declared_shapes

RNG = np.random.default_rng(4)


def build(op: str, attrs: dict, inputs: list) -> tuple[Graph, list]:
    """A graph with one ``op`` node whose type is inferred; ``inputs`` are
    type texts (graph inputs) or arrays (constants)."""
    g = Graph()
    values = [g.add_input(parse_type(x), f"in{i}") if isinstance(x, str) else g.add_constant(x, f"c{i}")
              for i, x in enumerate(inputs)]
    node = g.create_node(op, values, attrs)
    g.append(node)
    g.set_outputs(list(node.outputs))
    return g, [str(v.type) for v in node.outputs]


def random_inputs(g: Graph, sizes: dict) -> list[np.ndarray]:
    return [RNG.normal(size=tuple(sym.evaluate(d, sizes) for d in v.shape)).astype(v.dtype.numpy)
            for v in g.inputs]


I64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731
W33 = np.ones((2, 3, 3, 3), np.float32)

CASES = [
    ("conv", {"strides": [2, 2], "pads": [1, 1, 1, 1]}, ["f32[N,3,H,W]", W33], ["f32[N,2,(H+1)//2,(W+1)//2]"]),
    ("conv", {"dilations": [2, 2]}, ["f32[N,3,H,W]", W33], ["f32[N,2,H-4,W-4]"]),
    ("max_pool", {"kernel": [2, 2], "strides": [2, 2]}, ["f32[N,3,H,W]"], ["f32[N,3,H//2,W//2]"]),
    ("avg_pool", {"kernel": [3, 3], "strides": [2, 2], "pads": [1, 1, 0, 0]}, ["f32[N,3,H,W]"],
     ["f32[N,3,H//2,W//2]"]),
    ("convolve2d", {"full": True}, ["f32[N,H,W]", "f32[3,3]"], ["f32[N,H+2,W+2]"]),
    ("convolve2d", {"full": False}, ["f32[N,H,W]", "f32[3,3]"], ["f32[N,abs(H-3)+1,abs(W-3)+1]"]),
    ("pad", {"pads": [0, 1, 2, 0, 3, 0]}, ["f32[N,H,W]", np.float32(0)], ["f32[N,H+4,W+2]"]),
    ("resize_nearest", {"scales": [1, 1, 2, 3]}, ["f32[N,3,H,W]"], ["f32[N,3,2*H,3*W]"]),
    ("flatten", {"axis": 1}, ["f32[N,3,H,W]"], ["f32[N,3*H*W]"]),
    ("flatten", {"axis": 0}, ["f32[N,3]"], ["f32[1,3*N]"]),
    ("concat", {"axis": 1}, ["f32[N,H]", "f32[N,2]", "f32[N,H]"], ["f32[N,2*H+2]"]),
    ("reshape", {}, ["f32[N,3,4]", I64(-1, 12)], ["f32[N,12]"]),
    ("reshape", {}, ["f32[N,3,H]", I64(6, -1)], ["f32[6,(H*N)//2]"]),
    ("slice", {"axes": [0, 1]}, ["f32[N,H]", I64(1, 0), I64(INT64_MAX, -1), I64(1, 2)],
     ["f32[max(N-1,0),(max(H-1,0)+1)//2]"]),
    ("add", {}, ["f32[N,H-2]", "f32[1,H-2]"], ["f32[N,H-2]"]),
    ("matmul", {}, ["f32[B,N,H]", "f32[H,3]"], ["f32[B,N,3]"]),
    ("split", {"axis": 1, "num_outputs": 2}, ["f32[N,6]", I64(2, 4)], ["f32[N,2]", "f32[N,4]"]),
]


@pytest.mark.parametrize("op, attrs, inputs, want", CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
def test_symbolic_output_dims(op, attrs, inputs, want):
    g, got = build(op, attrs, inputs)
    assert got == want
    for sizes in ({"N": 2, "H": 9, "W": 7, "B": 1}, {"N": 3, "H": 6, "W": 12, "B": 2}):
        assert_declared_shapes(g, random_inputs(g, sizes), sizes)


def test_broadcast_of_different_symbols_is_unknown_and_a_static_dim_wins():
    assert build("add", {}, ["f32[N]", "f32[M]"])[1] == ["f32[?]"]
    assert build("add", {}, ["f32[N]", "f32[3]"])[1] == ["f32[3]"]


BOUNDS = [0, 1, 2, 3, 5, -1, -2, -3, -4, INT64_MAX, INT64_MIN]


def test_slice_length_is_exact_for_every_static_bound_and_symbolic_size():
    """``len(range(n)[start:stop:step])`` for all n in 0..9, every bound form."""
    unknown = 0
    for start, stop, step in itertools.product(BOUNDS, BOUNDS, [1, 2, 3, -1, -2]):
        d = slice_length("N", start, stop, step)
        if d is None:
            unknown += 1
            continue
        for n in range(10):
            assert sym.evaluate(d, {"N": n}) == len(range(n)[start:stop:step]), (start, stop, step, n, str(d))
    assert unknown < len(BOUNDS) ** 2 * 2  # only negative steps with bounds may stay unknown


@pytest.mark.parametrize("start, stop, step, text", [
    (1, INT64_MAX, 1, "max(N-1,0)"),
    (0, -1, 1, "max(N-1,0)"),
    (-3, INT64_MAX, 1, "min(N,3)"),
    (0, INT64_MAX, 2, "(N+1)//2"),
    (INT64_MAX, INT64_MIN, -1, "N"),
])
def test_common_slices_read_well(start, stop, step, text):
    assert sym.format_dim(slice_length("N", start, stop, step)) == text


def test_static_rules_are_unchanged():
    assert build("conv", {"strides": [2, 2]}, ["f32[1,3,28,28]", W33])[1] == ["f32[1,2,13,13]"]
    assert build("reshape", {}, ["f32[4,3]", I64(-1, 2)])[1] == ["f32[6,2]"]
    assert TensorType(DType.FLOAT32, (2, 3)).is_static


def test_reshape_reads_symbolic_targets_and_divides_monomials():
    """What shape-inference passes for an operand whose value it knows: an
    object array of dims."""
    target = np.empty(3, dtype=object)
    target[:] = [sym.mul(2, "N"), "H", -1]
    (out,) = get_op("reshape").infer_types([parse_type("f32[N,2,H,W]"), parse_type("i64[3]")], {}, [None, target])
    assert str(out) == "f32[2*N,H,W]"
    target[:] = [sym.add("N", 1), "H", -1]  # no monomial divisor: unknown, not a guess
    (out,) = get_op("reshape").infer_types([parse_type("f32[N,2,H,W]"), parse_type("i64[3]")], {}, [None, target])
    assert str(out) == "f32[N+1,H,?]"
