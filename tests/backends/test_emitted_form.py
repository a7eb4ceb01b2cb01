"""The exact ``ModelProto`` the emitter builds for a few IR graphs, against a
golden text (``golden/emitted_form.txtpb``): node and value names, attribute
kinds and order, initializers, doc strings, provenance metadata, value_info,
output Identities, model-local functions and control-flow bodies. Emission
speed work must leave these byte-for-byte alone; a deliberate change of the
emitted form regenerates the golden with ``PYTENSOR_ONNX_REGOLD=1`` and shows
up in review as a diff of that file.

The graphs are IR text, so lowering and passes do not move the golden; every
model also runs in onnxruntime against the IR interpreter.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from google.protobuf import text_format

from backends.onnx import emit_model, make_session
from ir import Origin
from ir.interpreter import evaluate
from ir.parser import parse_graph

GOLDEN = Path(__file__).parent / "golden" / "emitted_form.txtpb"

GRAPHS = {
    # an elementwise chain, a Linear+ReLU layer, output aliasing (a node output twice, an input, a constant)
    "chain-mlp": ("""
        graph @main(%x: f32[N,4]) {
          const %w: f32[4,4] = [[0.5, 1.0, 0.0, 2.0], [1.0, -1.0, 0.5, 0.0], [0.0, 0.25, 1.0, 1.0], [2.0, 0.0, -0.5, 1.0]]
          const %b: f32[4] = [0.5, -0.5, 1.0, 0.0]
          %c: f32[N,4] = cos(%x)
          %m: f32[N,4] = mul(%c, %x)
          %g: f32[N,4] = gemm(%m, %w, %b) {alpha=1.0, beta=1.0, trans_a=false, trans_b=false}
          %y: f32[N,4] = relu(%g)
          return %y, %y, %x, %b
        }""", {}),
    # float16 math through float32, int64 maximum as Where, an int Cast, shapes and attributes
    "bridges": ("""
        graph @main(%h: f16[3], %i: i64[3], %u: u16[3]) {
          %s: f16[3] = add(%h, %h)
          %e: f16[3] = exp(%s)
          %mx: i64[3] = maximum(%i, %i)
          %uu: u16[3] = mul(%u, %u)
          %t: f16[1,3] = unsqueeze(%e) {axes=[0]}
          %r: f16[3] = reduce_sum(%t) {axes=[0], keepdims=false}
          return %r, %mx, %uu
        }""", {}),
    # silu as the model-local function (strict numerics) and value_info on every value
    "function": ("""
        graph @main(%x: f32[N,4]) {
          %a: f32[N,4] = silu(%x)
          %b: f32[N,4] = silu(%a)
          %c: f32[N,4] = add(%a, %b)
          return %c
        }""", {"numerics": "strict", "value_info": True}),
    # a Loop with a body reading an outer value
    "loop": ("""
        graph @main(%s0: f32[3], %xs: f32[2,3]) {
          const %n: i64[] = 2
          %s: f32[3], %ys: f32[2,3] = loop(%n, %s0, %xs) {has_condition=false, num_carried=1} (body: graph @scan0(%scan0.i: i64[], %scan0.s: f32[3], %scan0.xs: f32[2,3]) {
            const %scan0.half: f32[] = 0.5
            %x: f32[3] = gather(%scan0.xs, %scan0.i) {axis=0}
            %h: f32[3] = mul(%x, %scan0.half)
            %s1: f32[3] = add(%scan0.s, %h)
            return %s1, %s1
          })
          return %s, %ys
        }""", {}),
}


def _stamp(graph) -> None:
    """Give the nodes made-up provenance: one origin, two, or none (every
    third node), so that all three cases reach the emitted model."""
    for i, node in enumerate(graph):
        if i % 3 == 2:
            continue
        origins = (Origin(node.op.title(), f"model.py:{10 + i} (y{i} = {node.op}(...))"),)
        if i % 3 == 1:
            origins += (Origin(None, None),)
        node.origins = origins


def _emit(name: str) -> onnx.ModelProto:
    text, options = GRAPHS[name]
    graph = parse_graph(text)
    _stamp(graph)
    return emit_model(graph, **options)


def _form() -> str:
    return "".join(f"# {name}\n{text_format.MessageToString(_emit(name))}" for name in GRAPHS)


def test_the_emitted_form_is_the_golden_one():
    form = _form()
    if os.environ.get("PYTENSOR_ONNX_REGOLD"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(form)
    golden = GOLDEN.read_text()
    if form != golden:
        diff = "".join(list(difflib.unified_diff(golden.splitlines(True), form.splitlines(True), "golden",
                                                 "emitted"))[:200])
        pytest.fail(f"the emitted ModelProto changed (PYTENSOR_ONNX_REGOLD=1 rewrites {GOLDEN.name}):\n{diff}")


@pytest.mark.parametrize("name", list(GRAPHS))
def test_the_golden_graphs_compute_what_the_interpreter_does(name):
    text, _ = GRAPHS[name]
    graph = parse_graph(text)
    model = _emit(name)
    onnx.checker.check_model(model, full_check=True)
    rng = np.random.default_rng(0)
    arrays = []
    for v in graph.inputs:
        shape = [d if isinstance(d, int) else 2 for d in v.type.shape]
        arrays.append((rng.standard_normal(shape) * 3).astype(v.type.dtype.numpy))
    want = evaluate(graph, arrays)
    got = make_session(model).run(None, {i.name: a for i, a in zip(model.graph.input, arrays)})
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=2e-3 if w.dtype == np.float16 else 1e-6, atol=0)
