"""The pass explorer page (``dump_ir=DIR`` -> ``DIR/index.html``) in a real
Chromium (marker ``browser``, as ``test_browser.py``): opened from the file
system with no network, every stage renders and its graph is drawn by
Graphviz (``@viz-js/viz``), the ``conv-recovery`` diff of a convolve2d + sum
CNN marks the nodes it erased and the conv it added, and the final ONNX
Conv node links to the source lines of the convolve2d and the sum."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from compiler.core.explorer_page import find_viz
from compiler.tools.website import PROJECT_ROOT
from tests.tools.test_explorer import _cnn
from tests.web.test_browser import ARTIFACTS, CHROMIUM

pytestmark = pytest.mark.browser


def test_explorer_page_in_chromium(tmp_path):
    missing = [what for what, ok in (("node", shutil.which("node")), (CHROMIUM, os.path.exists(CHROMIUM)),
                                     ("node_modules/playwright-core", (PROJECT_ROOT / "node_modules" /
                                                                      "playwright-core").is_dir()),
                                     ("node_modules/@viz-js/viz (npm ci)", find_viz())) if not ok]
    assert not missing, f"the browser job needs {', '.join(missing)}"
    _, data, src = _cnn(tmp_path)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    plan = {"chromium": CHROMIUM, "url": (tmp_path / "index.html").as_uri(), "stage": "conv-recovery",
            "screenshot": str(ARTIFACTS / "explorer.png")}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    subprocess.run(["node", str(PROJECT_ROOT / "tests" / "web" / "run_explorer.mjs"), str(tmp_path / "plan.json"),
                    str(tmp_path / "results.json")], check=True, cwd=PROJECT_ROOT, timeout=300)
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["errors"] == [] and results["requests"] == [] and results["vizErrors"] == []
    stages = results["stages"]
    assert [s["name"] for s in stages] == [s["name"] for s in data["stages"]]
    for page, stage in zip(stages, data["stages"]):
        assert page["rendered"] and page["drawn"], page
        assert page["svgNodes"] == len(stage["ir"]) and page["diffRows"] == len(stage["diff"])
        assert f"{stage['nodes']} nodes" in page["title"]
    diff = results["diff"]
    assert [r[2:] for r in diff["removed"]] == [
        "  %0: f32[x_dim0,1,3,6,6] = unsqueeze(%x) {axes=[1]}",
        "  %1: f32[x_dim0,4,3,4,4] = convolve2d(%0, %unsqueeze) {full=false}",
        "  %2: f64[x_dim0,4,3,4,4] = cast(%1) {to=f64}",
        "  %3: f64[x_dim0,4,4,4] = reduce_sum(%2) {axes=[2], keepdims=false}",
        "  %4: f32[x_dim0,4,4,4] = cast(%3) {to=f32}",
        "  %5: f32[x_dim0,4,4,4] = maximum(%4, %const_3)"]
    assert [r[2:] for r in diff["added"]] == [
        "  const %unsqueeze_2: f32[4,3,3,3] = <4x3x3x3 f32 sha256:18e9cf41fecf>",
        "  %0: f32[x_dim0,4,4,4] = conv(%x, %unsqueeze_2) {dilations=[], flip=true, group=1, pads=[], strides=[]}",
        "  %1: f32[x_dim0,4,4,4] = maximum(%0, %const_3)"]
    assert diff["fired"] == ["channel-sum x1"] and diff["addedSvg"] == 1  # the conv node, filled green
    onnx = results["onnx"]
    assert onnx["stage"] == len(stages) - 1
    assert onnx["heading"].startswith("ONNX node Conv_node (Conv) was emitted for IR node(s) #")
    expected = [f"Sum{{axis=2, acc=float64}} at {src['sum']}",
                f"Blockwise{{Convolve2d{{method='auto'}}, (n0,n1),(k0,k1),()->(o0,o1)}} at {src['conv']}"]
    assert onnx["sources"] == expected and onnx["irSources"] == expected
    assert " = conv(%x, %unsqueeze_2_flipped)" in onnx["picked"]
