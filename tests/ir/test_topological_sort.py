"""``ir.transforms.topological_sort`` and ``Graph.reorder``: readers follow
their producers, the rest keeps its order, cycles and non-permutations raise."""

from __future__ import annotations

import pytest

from ir.parser import parse_graph
from ir.printer import print_graph
from ir.transforms import topological_sort
from ir.verifier import verify


def test_readers_move_after_appended_producers_and_the_rest_keeps_its_order():
    g = parse_graph("""
        graph @main(%x: f32[2]) {
          %a: f32[2] = neg(%x)
          %b: f32[2] = exp(%x)
          return %a, %b
        }""")
    a, b = g.nodes
    late = g.add("abs", [b.output])
    a.set_input(0, late)  # a now reads a value computed after it
    topological_sort(g)
    assert [n.op for n in g] == ["exp", "abs", "neg"]
    verify(g)
    again = print_graph(g)
    topological_sort(g)
    assert print_graph(g) == again


def test_reorder_rejects_a_non_permutation_and_sort_rejects_a_cycle():
    g = parse_graph("""
        graph @main(%x: f32[2]) {
          %a: f32[2] = neg(%x)
          %b: f32[2] = exp(%a)
          return %b
        }""")
    a, b = g.nodes
    with pytest.raises(ValueError, match="permutation"):
        g.reorder([a, a])
    a.set_input(0, b.output)
    with pytest.raises(ValueError, match="cycle"):
        topological_sort(g)
