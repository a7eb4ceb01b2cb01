"""``compiler.tools.web`` (model.json and the model.js glue), ``pytensor-onnx
web-glue``, and the parts of ``compiler.tools.website`` that need no browser:
where onnxruntime-web is found, the site's files, the test images' Python
answers and the server's headers. The browser itself runs in tests/web
(marker ``browser``)."""

from __future__ import annotations

import json
import threading
import urllib.request

import numpy as np
import onnx
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from compiler.tools import cli, website
from compiler.tools.web import glue_module, model_manifest, write_web_glue


@pytest.fixture(scope="module")
def mixed_model():
    """float64 matrix with a named batch dim, int64 vector with an unnamed
    one, a float32 weight baked as an initializer; float64, int64 and bool outputs."""
    import pytensor

    x = pt.matrix("x", dtype="float64")
    k = pt.vector("k", dtype="int64")
    w = pytensor.shared(np.ones(3), name="w")
    return compile_to_onnx([x, k], outputs=[x @ w, k * 2, k > 0], input_shapes={"x": ("batch", 3)})


def test_manifest_lists_inputs_outputs_dtypes_and_symbolic_dims(mixed_model):
    m = model_manifest(mixed_model.model)
    assert m["format"] == "pytensor-onnx.model" and m["version"] == 1 and m["opset"] == 18
    assert m["model"] == "model.onnx"
    assert m["inputs"] == [
        {"name": "x", "dtype": "float64", "array": "Float64Array", "shape": ["batch", 3]},
        {"name": "k", "dtype": "int64", "array": "BigInt64Array", "shape": ["k_dim0"]},
    ]  # the initializer w is not an input
    out = m["outputs"]
    assert [o["name"] for o in out] == mixed_model.output_names
    assert [(o["dtype"], o["array"]) for o in out] == [("float64", "Float64Array"), ("int64", "BigInt64Array"),
                                                        ("bool", "Uint8Array")]
    assert out[0]["shape"] == ["batch"] and out[1]["shape"] == ["k_dim0"]
    assert m["symbolic_dims"] == ["batch", "k_dim0"]
    assert json.loads(json.dumps(m)) == m


def test_manifest_of_unnamed_dynamic_and_unknown_rank_values():
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [None, 4])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.UINT8, None)
    graph = onnx.helper.make_graph([onnx.helper.make_node("Cast", ["x"], ["y"], to=onnx.TensorProto.UINT8)],
                                   "g", [x], [y])
    m = model_manifest(onnx.helper.make_model(graph))
    assert m["inputs"][0]["shape"] == [None, 4] and m["outputs"][0]["shape"] is None
    assert m["symbolic_dims"] == []


def test_manifest_rejects_types_onnxruntime_web_cannot_feed():
    s = onnx.helper.make_tensor_value_info("s", onnx.TensorProto.STRING, [2])
    graph = onnx.helper.make_graph([onnx.helper.make_node("Identity", ["s"], ["t"])], "g", [s],
                                   [onnx.helper.make_tensor_value_info("t", onnx.TensorProto.STRING, [2])])
    with pytest.raises(ValueError, match="'s' has element type STRING"):
        model_manifest(onnx.helper.make_model(graph))


def test_glue_module_inlines_the_manifest(mixed_model):
    m = model_manifest(mixed_model.model)
    js = glue_module(m)
    start = js.index("export const MODEL = ") + len("export const MODEL = ")
    end = js.index(";\n", start)
    assert json.loads(js[start:end]) == m
    for name in ("export async function createSession", "export function makeFeeds", "export async function run"):
        assert name in js
    assert '"x": new Float64Array(...), "k": new BigInt64Array(...)' in js


def test_write_web_glue_beside_the_model_and_elsewhere(mixed_model, tmp_path):
    mixed_model.save(tmp_path / "net.onnx")
    json_path, js_path = write_web_glue(tmp_path / "net.onnx")
    assert (json_path, js_path) == (tmp_path / "net.json", tmp_path / "net.js")
    assert json.loads(json_path.read_text()) == model_manifest(mixed_model.model, model_file="net.onnx")
    json_path, _ = write_web_glue(tmp_path / "net.onnx", tmp_path / "web" / "glue", stem="model")
    assert json.loads(json_path.read_text())["model"] == "../../net.onnx"
    with pytest.raises(FileNotFoundError):
        write_web_glue(tmp_path / "missing.onnx")


def test_web_glue_command(mixed_model, tmp_path, capsys):
    mixed_model.save(tmp_path / "model.onnx")
    assert cli.main(["web-glue", str(tmp_path / "model.onnx")]) == 0
    assert "model.json" in capsys.readouterr().out
    assert json.loads((tmp_path / "model.json").read_text())["inputs"][0]["name"] == "x"
    assert cli.main(["web-glue", str(tmp_path / "nope.onnx")]) == 1
    assert "no ONNX model" in capsys.readouterr().err


# -- compiler.tools.website ----------------------------------------------------------
@pytest.fixture
def fake_dist(tmp_path):
    """A folder shaped like the onnxruntime-web package (files are placeholders
    for copying; nothing here loads them)."""
    package = tmp_path / "pkg" / "onnxruntime-web"
    (package / "dist").mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "onnxruntime-web", "version": "1.30.0"}))
    for name in website.ORT_FILES:
        (package / "dist" / name).write_bytes(name.encode())
    return package / "dist"


def test_find_ort_dist_takes_the_option_the_package_or_dist(fake_dist):
    assert website.find_ort_dist(fake_dist) == fake_dist
    assert website.find_ort_dist(fake_dist.parent) == fake_dist
    assert website.ort_version(fake_dist) == "1.30.0"
    with pytest.raises(website.OrtWebNotFound, match="does not hold"):
        website.find_ort_dist(fake_dist.parent.parent)


def test_find_ort_dist_without_any_says_how_to_get_it(tmp_path, monkeypatch, fake_dist):
    monkeypatch.setattr(website, "PROJECT_ROOT", tmp_path / "clone")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(website.ORT_DIR_ENV, raising=False)
    with pytest.raises(website.OrtWebNotFound, match="npm ci") as err:
        website.find_ort_dist(fetch=False)
    assert "--ort-dir" in str(err.value) and website.ORT_DIR_ENV in str(err.value)
    monkeypatch.setenv(website.ORT_DIR_ENV, str(fake_dist.parent))
    assert website.find_ort_dist(fetch=False) == fake_dist


@pytest.fixture(scope="module")
def mlp_model(tmp_path_factory):
    """The demo's MLP, untrained (seeded initialization): a digits model
    without the training time."""
    from compiler.tools.demo import inference_graph, init_mlp_params

    path = tmp_path_factory.mktemp("mlp") / "model.onnx"
    inputs, outputs = inference_graph(init_mlp_params(0), "mlp")
    compile_to_onnx(inputs, outputs=outputs).save(path)
    return path


def test_digit_examples_carry_python_onnxruntime_answers(mlp_model):
    import onnxruntime as ort

    from compiler.tools.demo import load_digits_split

    examples = website.digit_examples(mlp_model)
    assert [e["label"] for e in examples] == [c for c in range(10) for _ in range(2)]
    data = load_digits_split(0)
    first_zero = data.x_test[np.flatnonzero(data.y_test == 0)[0]]
    assert examples[0]["pixels"] == [int(v) for v in (first_zero.reshape(-1) * 16)]
    session = ort.InferenceSession(str(mlp_model), providers=["CPUExecutionProvider"])
    for e in examples:
        x = (np.asarray(e["pixels"], np.float32) / 16)[None]
        (probs,) = session.run(None, {"x": x})
        assert e["python_class"] == int(np.argmax(probs))
        np.testing.assert_allclose(e["python_probs"], probs[0], rtol=0, atol=1e-6)


def test_digit_examples_reject_a_model_that_is_not_a_digits_model(mixed_model, tmp_path):
    mixed_model.save(tmp_path / "m.onnx")
    with pytest.raises(ValueError, match="digits page needs a model with one float32"):
        website.digit_examples(tmp_path / "m.onnx")


def test_write_site_and_serve_it_with_coop_coep(mlp_model, fake_dist, tmp_path):
    site = tmp_path / "site"
    index = website.write_site(site, mlp_model, fake_dist, title="MLP")
    assert index == site / "index.html"
    names = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}
    assert names == {"index.html", "demo.js", "model.onnx", "model-float16.onnx", "model-int8.onnx", "model.json",
                     "model.js", "digits.json",
                     *(f"ort/{n}" for n in website.ORT_FILES)}
    info = json.loads((site / "digits.json").read_text())
    assert [(v["name"], v["file"], v["size_bytes"]) for v in info["variants"]] == [
        (name, file, (site / file).stat().st_size) for name, _, file in website.VARIANTS]
    assert all(0.0 <= v["test_accuracy"] <= 1.0 and v["n_test"] == 360 for v in info["variants"])
    assert info["title"] == "MLP" and info["ort_version"] == "1.30.0" and len(info["examples"]) == 20
    assert json.loads((site / "model.json").read_text())["inputs"][0]["shape"] == ["x_dim0", 64]
    page = (site / "demo.js").read_text()
    assert '"ort/ort.webgpu.min.js" : "ort/ort.wasm.min.js"' in page and 'id="backend-switch"' in index.read_text()
    for isolate in (True, False):
        server = website.make_server(site, port=0, isolate=isolate)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/ort/ort-wasm-simd-threaded.wasm"
            with urllib.request.urlopen(url) as response:
                assert response.headers["Content-Type"] == "application/wasm"
                assert (response.headers["Cross-Origin-Embedder-Policy"] == "require-corp") is isolate
                assert (response.headers["Cross-Origin-Opener-Policy"] == "same-origin") is isolate
                assert response.read() == b"ort-wasm-simd-threaded.wasm"
        finally:
            server.shutdown()
            server.server_close()


def test_demo_web_options_need_web(capsys):
    assert cli.main(["demo", "--serve"]) == 2
    assert "need --web DIR" in capsys.readouterr().err


def test_demo_web_from_an_existing_model(mlp_model, fake_dist, tmp_path, capsys):
    site = tmp_path / "site"
    assert cli.main(["demo", "--web", str(site), "--from-model", str(mlp_model), "--ort-dir", str(fake_dist)]) == 0
    assert f"web page:                     {site / 'index.html'}" in capsys.readouterr().out
    assert (site / "model.onnx").read_bytes() == mlp_model.read_bytes()
    assert cli.main(["demo", "--web", str(site), "--from-model", str(mlp_model), "--ort-dir", str(tmp_path)]) == 1
    assert "does not hold" in capsys.readouterr().err
