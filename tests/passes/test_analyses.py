"""The pipeline owns the ``types`` analysis (``passes/base.py``: ``Pass.requires``,
``ensures``, ``preserves``, ``Analyses``): ``run_pipeline`` runs
``shape-inference`` before a pass that requires fresh types when they do not
hold (a list without it, or after a plugin pass that preserves nothing), and
only then; after the default pipeline a further ``shape-inference`` finds
nothing left to refine."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx, nn
from compiler.tools.opt_tool import run_opt
from ir import DType, TensorType
from ir.parser import parse_graph
from ir.printer import print_graph
from passes import TYPES, Analyses, Pass, get_pass, run_pass, run_pipeline
from passes.base import check_order
from passes.shape_inference import ShapeInference

SI = ShapeInference()


def _chain():
    x = pt.tensor("x", dtype="float32", shape=(None, 8))
    y = x
    for _ in range(20):
        y = pt.cos(y) * y
    return [x], [y.reshape((x.shape[0], 2, 4)).sum(axis=1)]


def _mlp():
    rng = np.random.default_rng(0)
    x = y = pt.matrix("x", dtype="float32", shape=(None, 16))
    for i in range(3):
        w = pytensor.shared(rng.standard_normal((16, 16)).astype("float32"), name=f"w{i}")
        b = pytensor.shared(rng.standard_normal(16).astype("float32"), name=f"b{i}")
        y = pt.maximum(y @ w + b, 0)
    return [x], [pt.special.softmax(y, axis=-1)]


def _cnn():
    rng = np.random.default_rng(0)
    x = pt.tensor("x", dtype="float32", shape=(None, 1, None, None))
    k = pytensor.shared(rng.standard_normal((4, 1, 3, 3)).astype("float32"), name="k")
    b = pytensor.shared(rng.standard_normal(4).astype("float32"), name="b")
    y = nn.relu(nn.conv2d(x, k) + b[None, :, None, None])
    return [x], [nn.max_pool2d(y, 2).reshape((y.shape[0], -1))]


def _scan():
    x = pt.matrix("x", dtype="float64", shape=(None, 3))
    ys = pytensor.scan(lambda row, acc: acc + pt.tanh(row), sequences=[x], outputs_info=[pt.zeros(3)],
                       return_updates=False)
    return [x], [ys[-1] * x.shape[0]]


@pytest.mark.parametrize("build", [_chain, _mlp, _cnn, _scan], ids=lambda f: f.__name__.strip("_"))
def test_after_the_pipeline_a_full_run_refines_nothing(build):
    inputs, outputs = build()
    graph = compile_to_onnx(inputs, outputs=outputs).ir
    before = print_graph(graph)
    assert SI.run(graph) is False
    assert print_graph(graph) == before


# A reshape to concat(shape(x)[0], [-1]): only shape-inference, reading the
# target's contents, knows that %y is f32[N,12].
RESHAPE = """
    graph @main(%x: f32[N,3,4]) {
      const %zero: i64[] = 0
      const %minus_one: i64[1] = [-1]
      %s: i64[3] = shape(%x)
      %n: i64[] = gather(%s, %zero) {axis=0}
      %u: i64[1] = unsqueeze(%n) {axes=[0]}
      %t: i64[2] = concat(%u, %minus_one) {axis=0}
      %y: f32[?,?] = reshape(%x, %t)
      %z: f32[?,?] = neg(%y)
      return %z
    }"""

SEEN: list[str] = []


@dataclass(frozen=True)
class ReadsTypes(Pass):
    """Requires fresh types; records the type of the graph's output."""

    name = "reads-types"
    requires = (TYPES,)

    def run(self, graph):
        SEEN.append(str(graph.outputs[0].type))
        return False


@dataclass(frozen=True)
class PinRows(Pass):
    """A plugin pass that assigns a type in place (not through the mutation API)."""

    name = "pin-rows"

    def run(self, graph):
        graph.nodes[0].outputs[0].type = TensorType(DType.FLOAT32, (5, 3))
        return True


@dataclass(frozen=True)
class PinRowsPreserving(PinRows):
    """The same, claiming (wrongly) that it keeps types fresh."""

    name = "pin-rows-preserving"
    preserves = (TYPES,)


TEXT = """
    graph @main(%x: f32[?,3]) {
      %y: f32[?,3] = exp(%x)
      %z: f32[?,3] = neg(%y)
      return %z
    }"""


def _run(text: str, passes: list) -> list[str]:
    """The names of the passes ``run_pipeline`` ran (its hook), in order."""
    SEEN.clear()
    ran: list[str] = []
    run_pipeline(parse_graph(text), passes, lambda p, g, changed, seconds: ran.append(p.name))
    return ran


def test_a_pass_requiring_types_gets_shape_inference_first_in_a_list_without_it():
    assert _run(RESHAPE, [get_pass("canonicalize"), ReadsTypes()]) == ["canonicalize", "shape-inference",
                                                                      "reads-types"]
    assert SEEN == ["f32[N,12]"]


def test_fresh_types_are_not_inferred_again():
    passes = [SI, get_pass("canonicalize"), get_pass("cse"), ReadsTypes(), ReadsTypes()]
    assert _run(RESHAPE, passes) == ["shape-inference", "canonicalize", "cse", "reads-types", "reads-types"]


def test_after_a_plugin_pass_changes_types_in_place_the_next_requirer_gets_shape_inference():
    assert _run(TEXT, [SI, PinRows(), ReadsTypes()]) == ["shape-inference", "pin-rows", "shape-inference",
                                                         "reads-types"]
    assert SEEN == ["f32[5,3]"]


def test_a_pass_declaring_that_it_preserves_types_is_believed():
    assert _run(TEXT, [SI, PinRowsPreserving(), ReadsTypes()]) == ["shape-inference", "pin-rows-preserving",
                                                                   "reads-types"]
    assert SEEN == ["f32[?,3]"]  # stale, as the pass's declaration allowed


def test_a_plugin_preserves_nothing_and_a_pass_of_this_package_every_analysis():
    assert PinRows.preserves == ()
    assert ShapeInference.preserves == (TYPES,) and ShapeInference.ensures == (TYPES,)
    assert get_pass("pool-recovery").requires == (TYPES,)


def test_analyses_follow_ensures_and_preserves():
    graph = parse_graph(TEXT)
    analyses = Analyses(graph)
    assert [p.name for p in analyses.missing(ReadsTypes())] == ["shape-inference"]
    analyses.ran(SI, changed=True)
    assert analyses.missing(ReadsTypes()) == []
    analyses.ran(PinRows(), changed=False)  # changed nothing: nothing lost
    assert analyses.fresh == {TYPES}
    analyses.ran(PinRows(), changed=True)
    assert analyses.fresh == set()
    analyses.ran(SI, changed=False)
    graph.size_bounds = (("N", 3),)  # a rewrite assumed N >= 3 (Rewriter.assume)
    analyses.ran(get_pass("conv-recovery"), changed=True)
    assert analyses.fresh == set()


def test_run_pass_with_analyses_runs_what_a_pass_requires_first():
    graph = parse_graph(RESHAPE)
    SEEN.clear()
    run_pass(ReadsTypes(), graph)  # alone: the types as they are
    run_pass(ReadsTypes(), graph, Analyses(graph))
    assert SEEN == ["f32[?,?]", "f32[N,12]"]


def test_the_opt_tool_runs_shape_inference_before_a_pass_requiring_types():
    text, status = run_opt(RESHAPE, "gemm-fusion")
    assert status == 0 and "%z: f32[N,12] = neg(%y)" in text


@dataclass(frozen=True)
class UnknownAnalysis(Pass):
    name = "unknown-analysis"
    requires = ("facts",)

    def run(self, graph):
        return False


def test_an_unknown_analysis_name_is_an_error():
    with pytest.raises(ValueError, match="names the analysis 'facts'; the analyses are types"):
        check_order([UnknownAnalysis()])
