"""Provenance: every emitted ONNX node names the PyTensor ops and the user's
source lines it computes, through the passes (a fused node lists all of
them)."""

from __future__ import annotations

import pytensor.tensor as pt

from backends.onnx.provenance import node_origins
from compiler import compile_to_onnx
from ir import Origin
from ir.parser import parse_graph
from passes import get_pass
from tests.nn.test_mnist_cnn import by_hand, weights, with_helpers


def test_every_node_of_the_hand_written_mnist_cnn_names_a_line_of_the_model_file():
    ins, outs = by_hand(weights())
    model = compile_to_onnx(ins, outputs=outs).model
    ops = [n.op_type for n in model.graph.node]
    assert ops == ["Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool", "Flatten", "Gemm", "Relu", "Gemm",
                   "Softmax"]
    for node in model.graph.node:
        sources = [o["source"] for o in node_origins(node)]
        assert sources and all(s and s.split(":")[0].endswith("test_mnist_cnn.py") for s in sources), node
        assert "test_mnist_cnn.py" in node.doc_string
    conv = node_origins(model.graph.node[0])
    # conv-recovery and conv-bias-fusion fused convolve2d, the channel sum and the bias add
    assert {o["op"].split("{")[0] for o in conv} >= {"Blockwise", "Sum", "Add"}
    gemm = node_origins(model.graph.node[7])
    assert {o["op"] for o in gemm} == {"Dot", "Add"}


def test_nodes_built_by_the_nn_helpers_name_the_users_line_not_the_helpers():
    ins, outs = with_helpers(weights())
    model = compile_to_onnx(ins, outputs=outs).model
    for node in model.graph.node:
        (source,) = {o["source"] for o in node_origins(node)}
        assert source.split(" ")[0].rsplit(":", 1)[0].endswith("test_mnist_cnn.py"), source


def test_a_pattern_rewrite_gives_its_new_nodes_the_union_of_the_matched_origins():
    g = parse_graph("""
        graph @main(%x: f32[4]) {
          const %zero: f32[] = 0.0
          %m: f32[4] = maximum(%x, %zero)
          %e: f32[4] = exp(%m)
          return %e
        }""")
    m, e = g.nodes
    m.origins = (Origin("Maximum", "model.py:3"),)
    e.origins = (Origin("Exp", "model.py:4"),)
    assert get_pass("relu-silu").run(g)
    relu = next(n for n in g if n.op == "relu")
    assert relu.origins == (Origin("Maximum", "model.py:3"),)
    assert next(n for n in g if n.op == "exp").origins == (Origin("Exp", "model.py:4"),)


def test_a_replacement_built_outside_the_pattern_engine_inherits_the_origins():
    g = parse_graph("""
        graph @main(%x: f32[4]) {
          %a: f32[4] = exp(%x)
          %b: f32[4] = exp(%x)
          %c: f32[4] = add(%a, %b)
          return %c
        }""")
    a, b, c = g.nodes
    a.origins, b.origins = (Origin("Exp", "m.py:1"),), (Origin("Exp", "m.py:2"),)
    assert get_pass("cse").run(g)
    (kept,) = [n for n in g if n.op == "exp"]
    assert set(kept.origins) == {Origin("Exp", "m.py:1"), Origin("Exp", "m.py:2")}


def test_origins_name_the_pytensor_op_and_the_line():
    x = pt.vector("x")
    y = pt.exp(x) * 2  # the line the test looks for
    model = compile_to_onnx([x], outputs=[y]).model
    for node in model.graph.node:
        (origin,) = {(o["op"], o["source"]) for o in node_origins(node)}
        assert origin[1].split(" ")[0].endswith(f"test_provenance.py:{_line_of('the line the test looks for')}")


def _line_of(marker: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if marker in line and "_line_of" not in line)
