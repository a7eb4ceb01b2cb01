"""``run_pipeline`` skips a ``deterministic`` pass whose last run changed
nothing when no pass has changed the graph since (``passes/base.py``): the
hook still reports it, unchanged; a change in between, other options or a
pass from outside this package (not ``deterministic``) make it run; and the
default pipeline gives the IR of running every pass (and the numbers of the
lowered graph)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler.lowering import graph_spec, lower
from ir import Graph
from ir.interpreter import evaluate
from ir.parser import parse_graph
from ir.printer import print_graph
from passes import DEFAULT_PIPELINE, Pass, resolve_passes, run_pass, run_pipeline
from passes.canonicalize import Canonicalize
from passes.cse import CommonSubexpressionElimination
from tests.passes.helpers import random_inputs

RUNS: list[str] = []


@dataclass(frozen=True)
class Probe(Pass):
    """Records each run; changes nothing."""

    name = "probe-skip"
    tag: str = "a"
    deterministic = True

    def run(self, graph: Graph) -> bool:
        RUNS.append(self.tag)
        return False


@dataclass(frozen=True)
class Negate(Pass):
    """Wraps the output in a neg node: always changes the graph."""

    name = "negate-skip"

    def run(self, graph: Graph) -> bool:
        graph.outputs = [graph.add("neg", [graph.outputs[0]])]
        return True


@dataclass(frozen=True)
class Plugin(Pass):
    """Like ``Probe``, but not declared deterministic (a plugin's default)."""

    name = "plugin-skip"

    def run(self, graph: Graph) -> bool:
        RUNS.append("plugin")
        return False


TEXT = """
    graph @main(%x: f32[?,3]) {
      %y: f32[?,3] = exp(%x)
      return %y
    }"""


@pytest.fixture(autouse=True)
def _clear():
    RUNS.clear()


def _run(passes) -> list[tuple[str, bool, float]]:
    reported = []
    run_pipeline(parse_graph(TEXT), passes, lambda p, g, changed, s: reported.append((p.name, changed, s)))
    return reported


def test_a_clean_pass_is_not_rerun_on_an_unchanged_graph_but_still_reported():
    reported = _run([Probe(), Plugin(), Probe()])
    assert RUNS == ["a", "plugin"]
    assert [(n, c) for n, c, _ in reported] == [("probe-skip", False), ("plugin-skip", False), ("probe-skip", False)]
    assert reported[2][2] == 0.0


def test_a_change_in_between_makes_it_run_again():
    _run([Probe(), Negate(), Probe(), Probe()])
    assert RUNS == ["a", "a"]


def test_other_options_are_another_pass():
    _run([Probe("a"), Probe("b"), Probe("a"), Probe("b")])
    assert RUNS == ["a", "b"]


def test_passes_from_outside_the_package_are_not_deterministic_by_default():
    assert Plugin.deterministic is False
    assert Canonicalize.deterministic is True and CommonSubexpressionElimination.deterministic is True
    _run([Plugin(), Plugin()])
    assert RUNS == ["plugin", "plugin"]


def _chain():
    x = y = pt.tensor("x", dtype="float32", shape=(None, 8))
    for _ in range(6):
        y = pt.cos(y) * y
    return [x], [y]


def _mlp():
    rng = np.random.default_rng(1)
    x = y = pt.matrix("x", dtype="float32", shape=(None, 8))
    for i in range(3):
        w = pytensor.shared(rng.standard_normal((8, 8)).astype("float32"), name=f"w{i}")
        b = pytensor.shared(rng.standard_normal(8).astype("float32"), name=f"b{i}")
        y = pt.maximum(y @ w + b, 0)
    return [x], [y]


@pytest.mark.parametrize("build", [_chain, _mlp])
def test_the_default_pipeline_gives_the_ir_of_running_every_pass(build):
    inputs, outputs = build()
    every, skipping = (lower(graph_spec(inputs, outputs)).graph for _ in range(2))
    lowered = lower(graph_spec(inputs, outputs)).graph
    texts_every, texts_skipping = [], []
    for p in resolve_passes(DEFAULT_PIPELINE):
        run_pass(p, every)
        texts_every.append(print_graph(every))
    run_pipeline(skipping, resolve_passes(DEFAULT_PIPELINE),
                 lambda p, g, changed, s: texts_skipping.append(print_graph(g)))
    assert texts_skipping == texts_every
    arrays = random_inputs(lowered, np.random.default_rng(0), {"x_dim0": 5}, finite=True)
    want = evaluate(lowered, arrays)
    got = evaluate(skipping, arrays)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
