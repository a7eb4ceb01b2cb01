"""Provenance: every emitted ONNX node names the PyTensor ops and the user's
source lines it computes, through the passes (a fused node lists all of
them)."""

from __future__ import annotations

import importlib.util
import os

import pytensor
import pytensor.tensor as pt

from backends.onnx.provenance import SourcePaths, node_origins
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


MODEL_FILE = '''
import numpy as np
import pytensor
import pytensor.tensor as pt


def build():
    x = pt.matrix("x")
    w = pytensor.shared(np.linspace(-1, 1, 6).reshape(3, 2), name="w")
    return [x], [pt.tanh(x @ w).sum(axis=1)]
'''


def _compile_tree(root, monkeypatch, **options):
    """Compile ``build()`` of ``root/models/net.py`` with ``root`` as the current directory."""
    path = root / "models" / "net.py"
    path.parent.mkdir(parents=True)
    path.write_text(MODEL_FILE)
    spec = importlib.util.spec_from_file_location(f"net_{root.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.chdir(root)
    ins, outs = module.build()
    return compile_to_onnx(ins, outputs=outs, **options).model


def test_the_same_model_built_in_two_checkouts_is_byte_identical(tmp_path, monkeypatch):
    first = _compile_tree(tmp_path / "checkout-a", monkeypatch)
    second = _compile_tree(tmp_path / "clone-b", monkeypatch)
    data = first.SerializeToString()
    assert data == second.SerializeToString()
    assert str(tmp_path).encode() not in data
    sources = {o["source"] for n in first.graph.node for o in node_origins(n)}
    assert sources and all(s.startswith("models/net.py:10 (") for s in sources), sources


def test_provenance_paths_can_be_absolute_or_left_out(tmp_path, monkeypatch):
    model = _compile_tree(tmp_path / "a", monkeypatch, provenance="absolute")
    sources = {o["source"] for n in model.graph.node for o in node_origins(n)}
    assert sources and all(s.startswith(f"{tmp_path / 'a' / 'models' / 'net.py'}:10") for s in sources), sources
    ins, outs = _graph_of(tmp_path / "a")
    bare = compile_to_onnx(ins, outputs=outs, provenance="none").model
    assert all(not n.doc_string and not node_origins(n) for n in bare.graph.node)
    elsewhere = compile_to_onnx(ins, outputs=outs, provenance_root=tmp_path).model
    sources = {o["source"] for n in elsewhere.graph.node for o in node_origins(n)}
    assert sources and all(s.startswith("a/models/net.py:10") for s in sources), sources


def _graph_of(root):
    spec = importlib.util.spec_from_file_location(f"again_{root.name}", root / "models" / "net.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ins, outs = module.build()
    return ins, outs


def test_a_file_outside_the_root_is_named_by_its_module_path_or_its_base_name():
    paths = SourcePaths("relative", root="/nowhere/near")
    inside = os.path.join(os.path.dirname(pytensor.__file__), "tensor", "math.py")
    assert paths(f"{inside}:12 (y = x @ w)") == "pytensor/tensor/math.py:12 (y = x @ w)"
    assert paths("/elsewhere/secret home/model.py:3") == "model.py:3"
    assert paths("<stdin>:1 (x:2)") == "<stdin>:1 (x:2)"
    assert paths("/nowhere/near/pkg/m.py:7 (a[1:3])") == "pkg/m.py:7 (a[1:3])"
    assert SourcePaths("absolute")("/elsewhere/m.py:3") == "/elsewhere/m.py:3"
