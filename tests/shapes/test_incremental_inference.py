"""``shape-inference``'s incremental run (``Graph.track_changes``): after the
default pipeline, whose last ``shape-inference`` redoes only what changed, a
full run finds nothing left to refine; a plugin pass that assigns types in
place ends the change record, so the next run is full."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx, nn
from ir import DType, TensorType
from ir.parser import parse_graph
from ir.printer import print_graph
from passes import Pass, run_pipeline
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
    ys, _ = pytensor.scan(lambda row, acc: acc + pt.tanh(row), sequences=[x], outputs_info=[pt.zeros(3)])
    return [x], [ys[-1] * x.shape[0]]


@pytest.mark.parametrize("build", [_chain, _mlp, _cnn, _scan], ids=lambda f: f.__name__.strip("_"))
def test_after_the_pipeline_a_full_run_refines_nothing(build):
    inputs, outputs = build()
    graph = compile_to_onnx(inputs, outputs=outputs).ir
    before = print_graph(graph)
    graph.forget_changes()
    assert SI.run(graph) is False
    assert print_graph(graph) == before


TEXT = """
    graph @main(%x: f32[?,3]) {
      %y: f32[?,3] = exp(%x)
      %z: f32[?,3] = neg(%y)
      return %z
    }"""


@dataclass(frozen=True)
class PinRows(Pass):
    """A plugin pass that assigns a type in place (not through the mutation API)."""

    name = "pin-rows"

    def run(self, graph):
        y = graph.nodes[0].outputs[0]
        y.type = TensorType(DType.FLOAT32, (5, 3))
        return True


def test_a_plugin_pass_is_assumed_not_to_record_its_changes():
    assert PinRows.records_changes is False
    assert ShapeInference.records_changes is True


def test_after_a_plugin_pass_changes_types_in_place_the_next_run_is_full():
    graph = parse_graph(TEXT)
    run_pipeline(graph, [SI, PinRows(), SI])
    z = graph.nodes[1].outputs[0]
    assert z.type.shape == (5, 3), print_graph(graph)


def test_the_incremental_run_redoes_a_node_rewired_through_the_api():
    graph = parse_graph("""
        graph @main(%x: f32[?,3], %w: f32[4,3]) {
          %y: f32[?,3] = exp(%x)
          %z: f32[?,3] = neg(%y)
          %s: f32[?,3] = sin(%z)
          return %s
        }""")
    SI.run(graph)
    z_node = graph.nodes[1]
    z_node.set_input(0, graph.add("exp", [graph.inputs[1]], before=z_node))
    assert SI.run(graph) is True
    assert [str(n.outputs[0].type) for n in graph.nodes if n.op in ("neg", "sin")] == ["f32[4,3]", "f32[4,3]"]
