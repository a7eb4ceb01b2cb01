"""The pass explorer's data (``compiler.core.explorer``) and page
(``compiler.core.explorer_page``): exact stage records, identity-keyed
diffs, per-pass rule counts, ONNX -> IR provenance; the page in Chromium is
tested by ``tests/web/test_explorer_browser.py``."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.signal import convolve2d

from compiler import compile_to_onnx
from compiler.core import driver
from compiler.core.explorer import StageRecorder
from compiler.core.explorer_page import page_html
from ir.parser import parse_graph
from passes.rewrite_log import RewriteLog


def _page_data(directory) -> dict:
    html = (directory / "index.html").read_text()
    payload = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', html, re.S)
    return json.loads(payload.group(1))


def _cnn(tmp_path):
    """A convolve2d + sum + maximum CNN compiled with ``dump_ir``; returns
    the compiled model, the page's data and the source lines of the three."""
    rng = np.random.default_rng(0)
    x = pt.tensor4("x", dtype="float32", shape=(None, 3, 6, 6))
    W = pt.constant(rng.normal(size=(4, 3, 3, 3)).astype(np.float32))
    line = inspect.currentframe().f_lineno
    c = convolve2d(x[:, None], W[None], mode="valid")
    y = c.sum(axis=2)
    z = pt.maximum(y, 0)
    compiled = compile_to_onnx([x], outputs=[z], dump_ir=tmp_path, provenance_root=Path(__file__).parent)
    sources = {"conv": f'test_explorer.py:{line + 1} (c = convolve2d(x[:, None], W[None], mode="valid"))',
               "sum": f"test_explorer.py:{line + 2} (y = c.sum(axis=2))",
               "max": f"test_explorer.py:{line + 3} (z = pt.maximum(y, 0))"}
    return compiled, _page_data(tmp_path), sources


def test_stages_match_the_history_and_the_files(tmp_path):
    compiled, data, _ = _cnn(tmp_path)
    assert data["format"] == "pytensor-onnx.explorer"
    stages = data["stages"]
    assert [(s["name"], s["nodes"], s["changed"], s["seconds"]) for s in stages] == [
        (r.name, r.nodes, r.changed, r.seconds) for r in compiled.history]
    for i, s in enumerate(stages):
        assert s["file"] == f"{i:02d}-{s['name']}.ir"
        assert (tmp_path / s["file"]).read_text() == s["text"]
        assert [line for mark, line in s["diff"] if mark != "-"] == s["text"].splitlines()
        assert [n["line"] for n in s["ir"]] == sorted(n["line"] for n in s["ir"])
        assert len(s["ir"]) == s["nodes"]
    assert all(mark == " " for mark, _ in stages[0]["diff"])
    unchanged = [s for s in stages[1:] if not s["changed"]]
    assert unchanged and all(mark == " " for s in unchanged for mark, _ in s["diff"])


def test_conv_recovery_diff_marks_the_replaced_and_added_nodes(tmp_path):
    _, data, _ = _cnn(tmp_path)
    stage = next(s for s in data["stages"] if s["name"] == "conv-recovery")
    assert stage["fired"] == [["channel-sum", 1]] and stage["declined"] == []
    assert [row for row in stage["diff"] if row[0] != " "] == [
        ["-", "  %0: f32[x_dim0,1,3,6,6] = unsqueeze(%x) {axes=[1]}"],
        ["-", "  %1: f32[x_dim0,4,3,4,4] = convolve2d(%0, %unsqueeze) {full=false}"],
        ["-", "  %2: f64[x_dim0,4,3,4,4] = cast(%1) {to=f64}"],
        ["-", "  %3: f64[x_dim0,4,4,4] = reduce_sum(%2) {axes=[2], keepdims=false}"],
        ["-", "  %4: f32[x_dim0,4,4,4] = cast(%3) {to=f32}"],
        ["-", "  %5: f32[x_dim0,4,4,4] = maximum(%4, %const_3)"],  # rewired to read the conv
        ["+", "  const %unsqueeze_2: f32[4,3,3,3] = <4x3x3x3 f32 sha256:18e9cf41fecf>"],
        ["+", "  %0: f32[x_dim0,4,4,4] = conv(%x, %unsqueeze_2) {dilations=[], flip=true, group=1, pads=[], "
              "strides=[]}"],
        ["+", "  %1: f32[x_dim0,4,4,4] = maximum(%0, %const_3)"],
    ]
    relu = next(s for s in data["stages"] if s["name"] == "relu-silu")
    assert relu["fired"] == [["relu-max", 1]]
    assert [r for r in relu["diff"] if r[0] != " "] == [
        ["-", "  %1: f32[x_dim0,4,4,4] = maximum(%0, %const_3)"], ["-", "  return %1"],  # returns another value
        ["+", "  %1: f32[x_dim0,4,4,4] = relu(%0)"], ["+", "  return %1"]]


def test_ir_and_onnx_nodes_name_their_source_lines(tmp_path):
    compiled, data, src = _cnn(tmp_path)
    final = data["stages"][-1]
    conv, relu = final["ir"]
    assert (conv["op"], relu["op"], relu["inputs"]) == ("conv", "relu", [conv["id"]])
    conv_origins = [{"op": "Sum{axis=2, acc=float64}", "source": src["sum"]},
                    {"op": "Blockwise{Convolve2d{method='auto'}, (n0,n1),(k0,k1),()->(o0,o1)}", "source": src["conv"]}]
    assert conv["origins"] == conv_origins
    assert relu["origins"] == [{"op": "Maximum", "source": src["max"]}]
    assert data["onnx"] == [
        {"name": "Conv_node", "op": "Conv", "ir": [conv["id"]], "origins": conv_origins},
        {"name": "Relu_node", "op": "Relu", "ir": [relu["id"]], "origins": relu["origins"]}]
    assert [n.name for n in compiled.model.graph.node] == ["Conv_node", "Relu_node"]
    lowered = data["stages"][0]["ir"]
    assert [n["origins"][0]["source"] for n in lowered if n["op"] == "convolve2d"] == [src["conv"]]
    assert conv["id"] not in {n["id"] for n in lowered}


def test_rules_are_counted_per_pass():
    log = RewriteLog()
    graph = parse_graph("graph @main(%x: f32[2]) {\n  %0: f32[2] = neg(%x)\n  return %0\n}\n")
    recorder = StageRecorder(log)
    recorder.record(graph, "lowered", "00-lowered.ir", True, 0.0)
    log.note_fired("a")
    recorder.before_pass()
    log.note_fired("a")
    log.note_fired("a")
    log.note_declined("b", "why not")
    recorder.record(graph, "p1", "01-p1.ir", False, 0.0)
    recorder.before_pass()
    log.note_declined("b", "other")
    recorder.record(graph, "p2", "02-p2.ir", False, 0.0)
    assert [(s["fired"], s["declined"]) for s in recorder.stages] == [
        ([], []), ([["a", 2]], [["b", "why not", 1]]), ([], [["b", "other", 1]])]
    assert recorder.stages[1]["ir"] == [{"id": 0, "op": "neg", "line": 1, "inputs": [], "origins": []}]


def test_nothing_is_recorded_without_dump_ir(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("StageRecorder built without dump_ir")

    monkeypatch.setattr(driver, "StageRecorder", refuse)
    x = pt.vector("x", dtype="float32")
    compiled = compile_to_onnx([x], outputs=[pt.exp(x) + 1])
    np.testing.assert_allclose(compiled.run(np.ones(2, np.float32))[0], np.exp(1) + 1, rtol=1e-6)


def test_page_embeds_the_data_safely():
    recorder = StageRecorder(RewriteLog())
    graph = parse_graph("graph @main(%x: f32[2]) {\n  %0: f32[2] = neg(%x)\n  return %0\n}\n")
    recorder.record(graph, "lowered", "00-lowered.ir", True, 0.0)
    onnx = [{"name": "n", "op": "Neg", "ir": [0], "origins": [{"op": "Neg", "source": "a.py:1 (</script><b>)"}]}]
    html = page_html({"format": "pytensor-onnx.explorer", "stages": recorder.stages, "onnx": onnx})
    assert "</script><b>" not in html and "/*DATA*/" not in html and "/*SCRIPT*/" not in html
    payload = re.search(r'id="explorer-data">(.*?)</script>', html, re.S).group(1)
    assert json.loads(payload)["onnx"] == onnx


def test_explore_builds_a_page_from_a_reproducer_and_errs_in_one_line(tmp_path, capsys, monkeypatch):
    from compiler.core import explorer_page
    from compiler.tools import cli

    monkeypatch.setenv(explorer_page.VIZ_DIR_ENV, str(tmp_path / "no-viz"))
    monkeypatch.setattr(explorer_page, "PROJECT_ROOT", tmp_path)  # no node_modules
    monkeypatch.setattr("compiler.tools.explore.fetch_viz", lambda: None)
    repro = tmp_path / "repro"
    repro.mkdir()
    (repro / "before.ir").write_text("graph @main(%x: f32[2]) {\n  %0: f32[2] = neg(%x)\n  return %0\n}\n")
    assert cli.main(["explore", str(repro), "--no-serve"]) == 0
    out, err = capsys.readouterr()
    assert out == f"{repro / 'index.html'}\n"
    assert err.splitlines() == [f"built index.html from the .ir files of {repro}",
                                "viz-global.js not found (npm ci in the project, or npm on the PATH): graphs are "
                                "not drawn"]
    (stage,) = _page_data(repro)["stages"]
    assert (stage["name"], stage["file"], stage["nodes"], stage["changed"]) == ("before", "before.ir", 1, False)

    assert cli.main(["explore", str(tmp_path / "missing"), "--no-serve"]) == 1
    assert capsys.readouterr().err == (f"pytensor-onnx explore: NotADirectoryError: {tmp_path / 'missing'} is not "
                                       "a directory (compile with dump_ir=DIR first)\n")
    digest = tmp_path / "digest"
    digest.mkdir()
    (digest / "00-lowered.ir").write_text("graph @main() {\n  const %w: f32[20] = <20 f32 sha256:0123456789ab>\n"
                                          "  return %w\n}\n")
    assert cli.main(["explore", str(digest), "--no-serve"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pytensor-onnx explore: ") and "00-lowered.ir: " in err and err.count("\n") == 1
