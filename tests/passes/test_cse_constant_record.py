"""``cse`` on constants across runs: a constant added after a run is merged
by the next; after a removal the constants stay distinct; large constants
(keyed by a digest, compared only when their ends agree) merge exactly when
their bytes are equal."""

from __future__ import annotations

import numpy as np
import pytest

from ir import DType, Graph, TensorType
from ir.printer import print_graph
from passes.cse import CommonSubexpressionElimination

CSE = CommonSubexpressionElimination()


def _graph() -> Graph:
    g = Graph()
    x = g.add_input(TensorType(DType.FLOAT32, ("N", 3)), "x")
    a = g.add_constant(np.array([1.0, 2.0, 3.0], np.float32), "a")
    b = g.add_constant(np.array([1.0, 2.0, 3.0], np.float32), "b")
    g.outputs = [g.add("mul", [g.add("add", [x, a]), b])]
    return g


def test_a_constant_added_after_a_run_is_merged_by_the_next():
    g = _graph()
    assert CSE.run(g) is True
    assert list(g.constants) == ["a"]
    assert CSE.run(g) is False
    c = g.add_constant(np.array([1.0, 2.0, 3.0], np.float32), "c")
    g.outputs = [g.add("sub", [g.outputs[0], c])]
    assert CSE.run(g) is True
    assert list(g.constants) == ["a"]
    assert "%2: f32[N,3] = sub(%1, %a)" in [line.strip() for line in print_graph(g).splitlines()]


def test_after_a_removal_the_constants_stay_distinct_and_are_not_merged():
    g = _graph()
    CSE.run(g)
    d = g.add_constant(np.array([4.0, 5.0, 6.0], np.float32), "d")
    g.outputs = [g.add("sub", [g.outputs[0], d])]
    assert CSE.run(g) is False  # d differs from a: nothing to merge
    g.outputs = [g.outputs[0].producer.inputs[0]]
    g.erase(g.nodes[-1])
    g.remove_constant(d)
    assert CSE.run(g) is False
    assert list(g.constants) == ["a"]


def _large_pair(b_array: np.ndarray) -> Graph:
    g = Graph()
    x = g.add_input(TensorType(DType.FLOAT32, (2000,)), "x")
    a = g.add_constant(np.arange(2000, dtype=np.float32), "a")
    b = g.add_constant(b_array, "b")
    g.outputs = [g.add("mul", [g.add("add", [x, a]), b])]
    return g


def test_large_constants_merge_when_their_bytes_are_equal():
    g = _large_pair(np.arange(2000, dtype=np.float32))  # 8000 bytes: keyed by a digest
    assert CSE.run(g) is True
    assert list(g.constants) == ["a"]


@pytest.mark.parametrize("where", [0, 1000, 1999])
def test_large_constants_differing_anywhere_stay_apart(where):
    other = np.arange(2000, dtype=np.float32)
    other[where] = -1.0  # the ends, or only the middle, differ
    g = _large_pair(other)
    assert CSE.run(g) is False
    assert list(g.constants) == ["a", "b"]
