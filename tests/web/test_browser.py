"""The browser job: the models we emit, run by onnxruntime-web in a real
Chromium, against Python onnxruntime.

Marked ``browser`` and deselected by default; ``.ci/run`` runs
``python -m pytest -m browser tests/web`` after installing Debian's
``chromium`` (apt) and ``npm ci`` (onnxruntime-web, playwright-core). One
session-scoped fixture builds everything, serves it on 127.0.0.1 with
COOP/COEP (two WASM threads) and runs ``run_browser.mjs`` once:

(a) ``pytensor-onnx demo --web`` end to end: every test image on the page and
    a digit drawn with the mouse are classified as Python onnxruntime
    classifies the same pixels (probabilities within 1e-6); the screenshot is
    kept as ``.ci/artifacts/web-demo.png``;
(b) ``cases.CASES``: every output of every run matches Python onnxruntime
    on the same model file: float32 within 1e-6, float64 within 1e-12
    (``|web - py| <= tol * (1 + |py|)``), integers and bools exactly, same
    dtypes and shapes;
(c) the same cases and the demo's digits CNN on onnxruntime-web's WebGPU build
    (``executionProviders: ["webgpu"]``) where Chromium has a WebGPU adapter
    (SwiftShader's, software): float32 within ``WEBGPU_TOLERANCE``, integers
    and bools exactly; onnxruntime's verbose log says which nodes ran on the
    WebGPU EP and which fell back to the CPU EP. Models holding float64
    tensors cannot get a WebGPU session in onnxruntime-web 1.30 (a float64
    node is left without an execution provider, even with ``"wasm"`` listed
    second); the tests assert exactly that. Where Chromium has no adapter,
    the WebGPU tests warn why (pytest's warnings summary) and check the
    WebAssembly run of the same model instead.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import threading
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from compiler.tools import cli
from compiler.tools.website import PROJECT_ROOT, copy_ort, find_ort_dist, make_server
from tests.web.cases import CASES, Case

pytestmark = pytest.mark.browser

HERE = Path(__file__).parent
ARTIFACTS = PROJECT_ROOT / ".ci" / "artifacts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TOLERANCE = {"float32": 1e-6, "float64": 1e-12}
# WebGPU computes in WGSL on the GPU (here SwiftShader): exp/tanh/division are not correctly rounded
# (WGSL spec, "Floating Point Accuracy": exp within 3 + 2|x| ULP); measured <= 9e-7 on these cases.
WEBGPU_TOLERANCE = {"float32": 1e-5}
# A "7": across the top, then down to the lower left (canvas pixels, 256 x 256).
SEVEN = [[[62, 48], [120, 48], [192, 48], [160, 110], [128, 170], [104, 222]]]
EPOCHS = 3
# onnxruntime-web's WebGPU build: its loader and the asyncify WASM it fetches.
WEBGPU_FILES = ("ort.webgpu.min.js", "ort-wasm-simd-threaded.asyncify.mjs", "ort-wasm-simd-threaded.asyncify.wasm")


def _missing() -> list[str]:
    missing = []
    if shutil.which("node") is None:
        missing.append("node (apt-get install nodejs)")
    if not Path(CHROMIUM).exists():
        missing.append(f"{CHROMIUM} (apt-get install chromium, or set CHROMIUM)")
    for package in ("playwright-core", "onnxruntime-web"):
        if not (PROJECT_ROOT / "node_modules" / package / "package.json").is_file():
            missing.append(f"node_modules/{package} (npm ci in {PROJECT_ROOT})")
    return missing


def _write_case(case, root: Path) -> dict:
    """Compile ``case``, write its model and input files under
    ``root/case.name`` and return ``{"model", "runs", "expected"}`` (the
    Python onnxruntime outputs of each run)."""
    compiled, runs = case.build()
    folder = root / case.name
    folder.mkdir(parents=True)
    compiled.save(folder / "model.onnx")
    session = ort.InferenceSession(os.fspath(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    spec, expected = {"model": "model.onnx", "runs": []}, []
    for r, arrays in enumerate(runs):
        inputs = []
        for value, name in zip(arrays, compiled.input_names, strict=True):
            value = np.ascontiguousarray(value)
            file = f"run{r}-{name}.bin"
            (folder / file).write_bytes(value.astype(value.dtype.newbyteorder("<")).tobytes())
            inputs.append({"name": name, "dtype": "bool" if value.dtype == bool else str(value.dtype),
                           "dims": list(value.shape), "file": file})
        spec["runs"].append({"inputs": inputs})
        expected.append(session.run(None, dict(zip(compiled.input_names, arrays))))
    (folder / "case.json").write_text(json.dumps(spec))
    return {"model": compiled.model, "expected": expected, "output_names": compiled.output_names}


class _Saved:
    """A saved model as ``_write_case`` wants it (``save``, the names, ``model``)."""

    def __init__(self, path: Path):
        import onnx

        self.path, self.model = path, onnx.load(os.fspath(path))
        self.input_names = [i.name for i in self.model.graph.input]
        self.output_names = [o.name for o in self.model.graph.output]

    def save(self, target):
        shutil.copyfile(self.path, target)


def _digits_case(demo_dir: Path):
    """The demo page's digits CNN on its 20 test images as one batch."""
    examples = json.loads((demo_dir / "digits.json").read_text())["examples"]
    x = (np.asarray([e["pixels"] for e in examples], np.float32) / 16).reshape(len(examples), 1, 8, 8)
    return _Saved(demo_dir / "model.onnx"), [[x]]


@pytest.fixture(scope="session")
def browser_run(tmp_path_factory):
    missing = _missing()
    if missing:
        pytest.fail("the browser job needs: " + "; ".join(missing), pytrace=False)
    root = tmp_path_factory.mktemp("web")
    # (a) the demo site, through the console script's own code path.
    status = cli.main(["demo", "--out", os.fspath(root / "demo-out"), "--epochs", str(EPOCHS),
                       "--web", os.fspath(root / "demo")])
    assert status == 0
    # (b) the models, beside the harness page and onnxruntime-web.
    cases_dir = root / "cases"
    cases_dir.mkdir()
    for name in ("harness.html", "harness-webgpu.html", "harness.js"):
        shutil.copyfile(HERE / name, cases_dir / name)
    dist = find_ort_dist(PROJECT_ROOT, fetch=False)
    copy_ort(dist, cases_dir)
    for name in WEBGPU_FILES:
        shutil.copyfile(dist / name, cases_dir / "ort" / name)
    built = {case.name: _write_case(case, cases_dir) for case in CASES}
    built["digits"] = _write_case(Case("digits", lambda: _digits_case(root / "demo")), cases_dir)

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "web-demo.png"
    screenshot.unlink(missing_ok=True)
    server, plain = make_server(root, port=0), make_server(root, port=0, isolate=False)
    for s in (server, plain):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        plan = {"chromium": CHROMIUM,
                "demo": {"url": f"{base}/demo/index.html", "screenshot": os.fspath(screenshot), "strokes": SEVEN},
                "plain": {"url": f"http://127.0.0.1:{plain.server_address[1]}/demo/index.html"},
                "gpuDemo": {"url": f"{base}/demo/index.html?backend=webgpu"},
                "cases": {"url": f"{base}/cases/harness.html", "names": [c.name for c in CASES]},
                "webgpu": {"url": f"{base}/cases/harness-webgpu.html", "names": [*(c.name for c in CASES), "digits"]}}
        (root / "plan.json").write_text(json.dumps(plan))
        proc = subprocess.run(["node", os.fspath(HERE / "run_browser.mjs"), os.fspath(root / "plan.json"),
                               os.fspath(root / "results.json")], capture_output=True, text=True, timeout=240,
                              cwd=PROJECT_ROOT)
    finally:
        for s in (server, plain):
            s.shutdown()
            s.server_close()
    assert proc.returncode == 0, proc.stderr
    results = json.loads((root / "results.json").read_text())
    examples = json.loads((root / "demo" / "digits.json").read_text())["examples"]
    return {"results": results, "built": built, "examples": examples, "model": root / "demo" / "model.onnx",
            "site": root / "demo",
            "screenshot": screenshot}


def test_browser_ran_without_errors(browser_run):
    results = browser_run["results"]
    assert results["errors"] == [] and results["console"] == [], (results["errors"], results["console"])
    # Served with COOP/COEP: cross-origin isolated, so both pages ran on two WASM threads.
    assert results["demo"]["isolated"] and results["demo"]["threads"] == 2
    assert results["cases"]["__env"] == {"isolated": True, "threads": 2}


def test_demo_page_runs_single_threaded_without_coop_coep(browser_run):
    plain, examples = browser_run["results"]["plain"], browser_run["examples"]
    assert plain["error"] is None and plain["isolated"] is False and plain["threads"] == 1
    assert plain["test0"]["cls"] == examples[0]["python_class"]
    np.testing.assert_allclose(plain["test0"]["probs"], examples[0]["python_probs"], rtol=0, atol=1e-6)


def _python_probs(model_path: Path, pixels: list[int]) -> np.ndarray:
    session = ort.InferenceSession(os.fspath(model_path), providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    x = (np.asarray(pixels, np.float32) / 16).reshape((1, *inp.shape[1:]))
    return session.run(None, {inp.name: x})[0][0]


def test_demo_test_images_are_classified_as_in_python(browser_run):
    page, examples = browser_run["results"]["demo"], browser_run["examples"]
    assert len(page["tests"]) == len(examples) == 20
    for i, (got, ex) in enumerate(zip(page["tests"], examples, strict=True)):
        assert got["source"] == f"test-{i}" and got["pixels"] == ex["pixels"]
        assert got["cls"] == ex["python_class"]
        np.testing.assert_allclose(got["probs"], _python_probs(browser_run["model"], ex["pixels"]), rtol=0, atol=1e-6)
        np.testing.assert_allclose(got["probs"], ex["python_probs"], rtol=0, atol=1e-6)  # batch of 20 in Python
    # The trained model gets most of them right (their labels are on the page).
    assert np.mean([t["cls"] == ex["label"] for t, ex in zip(page["tests"], examples)]) >= 0.8


def test_drawn_digit_is_classified_as_in_python(browser_run):
    page = browser_run["results"]["demo"]
    drawn = page["drawn"]
    assert drawn["source"] == "drawn"
    pixels = np.asarray(drawn["pixels"])
    assert pixels.shape == (64,) and pixels.min() >= 0 and pixels.max() <= 16 and pixels.sum() > 0
    # The bounding box fills the 32x32 bitmap's height: ink in the top and bottom rows of blocks.
    assert pixels.reshape(8, 8)[0].sum() > 0 and pixels.reshape(8, 8)[7].sum() > 0
    probs = _python_probs(browser_run["model"], drawn["pixels"])
    assert drawn["cls"] == int(np.argmax(probs)) == int(page["predictedText"])
    np.testing.assert_allclose(drawn["probs"], probs, rtol=0, atol=1e-6)
    size, session_time, infer_time, backend = page["stats"]
    assert f"({browser_run['model'].stat().st_size} bytes)" in size
    assert session_time.endswith(" ms") and infer_time.endswith(" ms") and "2 threads" in backend
    assert browser_run["screenshot"].stat().st_size > 10_000


def _decode(out: dict) -> np.ndarray:
    dtype = np.dtype(bool) if out["dtype"] == "bool" else np.dtype(out["dtype"]).newbyteorder("<")
    return np.frombuffer(base64.b64decode(out["b64"]), dtype=dtype).reshape(out["dims"])


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_emitted_model_matches_python_onnxruntime(browser_run, case):
    built, got = browser_run["built"][case.name], browser_run["results"]["cases"][case.name]
    model = built["model"]
    assert case.ops <= {n.op_type for n in model.graph.node}
    assert case.functions <= {f.name for f in model.functions}
    assert "error" not in got, got.get("error")
    assert len(got["runs"]) == len(built["expected"])
    for run, (outs, want) in enumerate(zip(got["runs"], built["expected"], strict=True)):
        assert [o["name"] for o in outs] == built["output_names"]
        for out, expected in zip(outs, want, strict=True):
            value = _decode(out)
            where = f"{case.name} run {run} output {out['name']}"
            assert value.dtype == expected.dtype and value.shape == expected.shape, where
            tol = TOLERANCE.get(str(expected.dtype))
            if tol is None:
                np.testing.assert_array_equal(value, expected, err_msg=where)
            else:
                err = np.abs(value.astype(np.float64) - expected) / (1 + np.abs(expected.astype(np.float64)))
                assert np.isfinite(expected).all() and err.max() <= tol, (where, float(err.max()))


def test_symbolic_batch_ran_at_two_sizes(browser_run):
    runs = browser_run["results"]["cases"]["float32_batch"]["runs"]
    assert [run[0]["dims"] for run in runs] == [[1, 10], [7, 10]]
    (x,) = browser_run["built"]["float32_batch"]["model"].graph.input
    assert x.type.tensor_type.shape.dim[0].dim_param == "batch"


def test_large_initializer_is_over_50_mb(browser_run):
    model = browser_run["built"]["large_initializer"]["model"]
    assert max(len(init.raw_data) for init in model.graph.initializer) >= 50 * 2**20 - 2**20


def test_glue_module_in_the_browser(browser_run):
    glue = browser_run["results"]["demo"]["glue"]
    session = ort.InferenceSession(os.fspath(browser_run["model"]), providers=["CPUExecutionProvider"])
    (want,) = session.run(None, {"x": np.full((2, 1, 8, 8), 0.5, np.float32)})
    assert glue["dims"] == [2, 10] and glue["dtype"] == "float32"
    np.testing.assert_allclose(np.reshape(glue["data"], (2, 10)), want, rtol=0, atol=1e-6)
    assert glue["wrongType"] == "input x: expected a Float32Array (float32), got Float64Array"
    assert glue["wrongLength"] == "input x: length 65 is not a multiple of 64"
    assert glue["missing"] == "missing input x (float32)"



def _has_float64(model) -> bool:
    """Whether any graph, subgraph or function of ``model`` holds a float64
    input, output, initializer or Cast to float64."""
    import onnx

    f64 = onnx.TensorProto.DOUBLE

    def graph(g) -> bool:
        typed = [*g.input, *g.output, *g.value_info]
        if any(v.type.tensor_type.elem_type == f64 for v in typed) or any(i.data_type == f64 for i in g.initializer):
            return True
        return any(nodes([n]) for n in g.node)

    def nodes(ns) -> bool:
        for n in ns:
            for a in n.attribute:
                if n.op_type == "Cast" and a.name == "to" and a.i == f64:
                    return True
                if a.type == onnx.AttributeProto.GRAPH and graph(a.g):
                    return True
        return False

    return graph(model.graph) or any(nodes(f.node) for f in model.functions)


def _placement(lines: list[str]) -> dict[str, list[str]]:
    """``{execution provider: op types}`` from onnxruntime's verbose
    "Node placements" log (session_state.cc, VerifyEachNodeIsAssignedToAnEp);
    "All nodes placed on [EP]" gives ``{EP: []}``."""
    import re

    placed, ep = {}, None
    for line in lines:
        if m := re.search(r"placed on \[(\w+)\]", line):
            ep = m.group(1)
            placed.setdefault(ep, [])
        elif ep and (m := re.search(r"VerifyEachNodeIsAssignedToAnEp\]   (\w+) \(", line)):
            placed[ep].append(m.group(1))
    return placed


WEBGPU_NAMES = [*(c.name for c in CASES), "digits"]


def test_webgpu_adapter_or_the_reason_there_is_none(browser_run):
    probe = browser_run["results"]["webgpu"]["probe"]
    if probe["adapter"] is None:
        assert probe["reason"], probe
        message = f"WebGPU not tested: {probe['reason']}; the WebAssembly path ran instead"
        print(message)
        warnings.warn(message, stacklevel=1)
    else:
        assert probe["reason"] is None and probe["adapter"]["vendor"] and probe["adapter"]["architecture"]
        print(f"WebGPU adapter: {probe['adapter']}")


@pytest.mark.parametrize("name", WEBGPU_NAMES)
def test_emitted_model_on_webgpu_matches_python_onnxruntime(browser_run, name):
    webgpu, built = browser_run["results"]["webgpu"], browser_run["built"][name]
    if webgpu["probe"]["adapter"] is None:
        message = f"{name}: WebGPU not run ({webgpu['probe']['reason']}); checked its WebAssembly run instead"
        print(message)
        warnings.warn(message, stacklevel=1)
        if name != "digits":  # the digits CNN's WebAssembly run is test_demo_test_images_are_classified_as_in_python
            assert "error" not in browser_run["results"]["cases"][name]
        return
    got = webgpu["cases"][name]
    if _has_float64(built["model"]):
        # onnxruntime-web 1.30: a float64 node gets no execution provider, session creation fails.
        for result in (got, webgpu["fallback"][name]):
            assert "Can't create a session" in result["error"] and "is not set" in result["error"], result
        return
    assert "error" not in got, got.get("error")
    placed = _placement(webgpu["log"][name])
    assert "WebGpuExecutionProvider" in placed, placed  # the log was read: this fails if it stops being printed
    if any(t.type.tensor_type.elem_type == 7 for t in built["model"].graph.input):  # int64 arithmetic runs on the CPU EP
        assert {"Add", "Mul", "Div", "Mod", "Where"} <= set(placed["CPUExecutionProvider"]), placed
    else:
        assert placed == {"WebGpuExecutionProvider": []}, placed  # "All nodes placed on [WebGpuExecutionProvider]"
    (run,) = got["runs"]
    (want,) = built["expected"]
    for out, expected in zip(run, want, strict=True):
        value, where = _decode(out), f"{name} output {out['name']} on WebGPU"
        assert value.dtype == expected.dtype and value.shape == expected.shape, where
        if expected.dtype.kind != "f":
            np.testing.assert_array_equal(value, expected, err_msg=where)
        else:
            err = np.abs(value.astype(np.float64) - expected) / (1 + np.abs(expected.astype(np.float64)))
            assert np.isfinite(expected).all() and err.max() <= WEBGPU_TOLERANCE[str(expected.dtype)], (where, err.max())
    if name == "digits":
        assert np.array_equal(np.argmax(_decode(run[0]), axis=1), np.argmax(want[0], axis=1))


def test_float64_detection_sees_float64(browser_run):
    built = browser_run["built"]
    assert _has_float64(built["float64_math"]["model"]) and _has_float64(built["ifelse"]["model"])
    assert not _has_float64(built["digits"]["model"]) and not _has_float64(built["int64_math"]["model"])


def test_demo_page_on_webgpu_or_the_visible_fallback(browser_run):
    gpu, examples = browser_run["results"]["gpuDemo"], browser_run["examples"]
    assert gpu["error"] is None and gpu["switchValue"] == gpu["backend"]
    assert len(gpu["tests"]) == len(examples) == 20
    if browser_run["results"]["webgpu"]["probe"]["adapter"] is None:
        # No adapter: the page says why on screen and runs on WebAssembly.
        assert gpu["backend"] == "wasm" and gpu["note"].startswith("WebGPU is not available (")
        assert gpu["noteText"] == gpu["note"]
        warnings.warn(f"demo page: {gpu['note']}", stacklevel=1)
        tol = TOLERANCE["float32"]
    else:
        assert gpu["backend"] == "webgpu" and gpu["note"] is None and gpu["noteText"] == ""
        assert " webgpu, " in gpu["backendText"]
        tol = WEBGPU_TOLERANCE["float32"]
    for got, ex in zip(gpu["tests"], examples, strict=True):
        assert got["cls"] == ex["python_class"]
        np.testing.assert_allclose(got["probs"], ex["python_probs"], rtol=0, atol=tol)


def test_demo_page_shows_float32_float16_int8_side_by_side(browser_run):
    from compiler.tools.demo import load_digits_split

    site, examples = browser_run["site"], browser_run["examples"]
    variants = json.loads((site / "digits.json").read_text())["variants"]
    assert [v["name"] for v in variants] == ["float32", "float16", "int8"]
    data = load_digits_split(0)
    x20 = (np.asarray([e["pixels"] for e in examples], np.float32) / 16).reshape(-1, 1, 8, 8)
    labels = np.asarray([e["label"] for e in examples])
    sizes = {}
    for v in variants:
        path = site / v["file"]
        sizes[v["name"]] = path.stat().st_size
        assert v["size_bytes"] == sizes[v["name"]]
        session = ort.InferenceSession(os.fspath(path), providers=["CPUExecutionProvider"])
        assert v["test_accuracy"] == np.mean(np.argmax(session.run(None, {"x": data.x_test})[0], -1) == data.y_test)
        v["classes20"] = np.argmax(session.run(None, {"x": x20})[0], -1).tolist()
    assert sizes["int8"] * 2.5 <= sizes["float32"] and sizes["float16"] < sizes["float32"]
    adapter = browser_run["results"]["webgpu"]["probe"]["adapter"]
    pages = {"wasm": browser_run["results"]["demo"], "gpu page": browser_run["results"]["gpuDemo"]}
    for page_name, page in pages.items():
        rows = page["variants"]
        assert [r["name"] for r in rows] == ["float32", "float16", "int8"], page_name
        for row, v in zip(rows, variants, strict=True):
            where = f"{page_name} {v['name']}"
            if page_name == "gpu page" and adapter and v["name"] == "float16" and not adapter["shaderF16"]:
                # WebGPU computes float16 only on adapters with the shader-f16 feature (SwiftShader lacks it).
                assert "requires f16 but the device does not support it" in row["error"], (where, row["error"])
                warnings.warn(f"float16 on WebGPU not run: the adapter {adapter} lacks shader-f16", stacklevel=1)
                continue
            assert row["error"] is None, (where, row["error"])
            assert row["sizeBytes"] == v["size_bytes"] and row["pyAccuracy"] == v["test_accuracy"], where
            assert row["classes"] == v["classes20"], where
            assert row["accuracy"] == np.mean(np.asarray(row["classes"]) == labels), where
