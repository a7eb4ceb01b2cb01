"""``pytensor-onnx demo --web DIR``: the digits model as a static web site
that runs it client-side in onnxruntime-web (WebAssembly).

The site (``write_site``) is self-contained and works from any static server:

- ``model.onnx``, ``model.json`` and ``model.js`` (``compiler.tools.web``: the
  model's interface and the feed/fetch glue the page itself uses);
- ``index.html`` and ``demo.js`` (from ``compiler/tools/web_assets``): draw a digit
  on a canvas or pick a test image, see the predicted class with a
  probability bar per class, the model's size, the session creation time and
  the inference time;
- ``digits.json``: test images from the demo's split (sklearn digits pixels,
  integers 0-16) with the class and probabilities Python onnxruntime gives;
- ``ort/``: onnxruntime-web's WASM and WebGPU builds (``ORT_FILES`` from the npm
  package ``onnxruntime-web``, version ``ORT_WEB_VERSION``); the page loads the
  WASM one, or the WebGPU one with ``?backend=webgpu`` (its backend switch) where
  the browser has a WebGPU adapter, else it says why and stays on WASM. The page sets
  ``ort.env.wasm.wasmPaths`` to the ``ort/`` folder beside it, so the
  runtime fetches ``ort-wasm-simd-threaded.mjs``/``.wasm`` from there, never
  from a CDN.

Preprocessing matches the data set's: sklearn's digits (UCI "Optical
Recognition of Handwritten Digits") are 32x32 binary bitmaps cut into 4x4
blocks whose on-pixels are counted (0-16); the demo divides by 16. The page
scales the drawing's bounding box into a 32x32 bitmap, thresholds it at half
intensity and counts the same blocks.

Threads: the page asks for two WASM threads when the page is cross-origin
isolated (``crossOriginIsolated``: the server sent
``Cross-Origin-Opener-Policy: same-origin`` and
``Cross-Origin-Embedder-Policy: require-corp``, as ``make_server`` does), one
otherwise.

Where onnxruntime-web comes from (``find_ort_dist``, first hit wins): the
``--ort-dir`` option, the ``PYTENSOR_ONNX_ORT_DIR`` environment variable, the
project's own ``node_modules`` (``npm ci`` in a clone), a per-user cache
(``~/.cache/pytensor-onnx``), and else, when ``npm`` is on the PATH,
``npm pack onnxruntime-web@ORT_WEB_VERSION`` into that cache (the registry's
tarball only, no install scripts).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from compiler.core.deploy import convert
from compiler.tools.demo import load_digits_split
from compiler.tools.web import model_manifest, write_web_glue

ORT_WEB_VERSION = "1.30.0"
# The WASM-only script build (global ``ort``) and the runtime it loads.
ORT_FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm",
             # the WebGPU build (the page's backend switch) and the asyncify WASM it loads
             "ort.webgpu.min.js", "ort-wasm-simd-threaded.asyncify.mjs", "ort-wasm-simd-threaded.asyncify.wasm")
ORT_DIR_ENV = "PYTENSOR_ONNX_ORT_DIR"
ASSETS = Path(__file__).parent / "web_assets"
PROJECT_ROOT = Path(__file__).resolve().parents[2]


class OrtWebNotFound(RuntimeError):
    """No onnxruntime-web distribution was found or could be fetched."""


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/pytensor-onnx`` (default ``~/.cache/pytensor-onnx``)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "pytensor-onnx"


def _dist_of(path: Path) -> Path | None:
    """``path`` itself, or its ``dist`` folder, when it holds every ``ORT_FILES``."""
    for candidate in (path, path / "dist", path / "node_modules" / "onnxruntime-web" / "dist"):
        if all((candidate / f).is_file() for f in ORT_FILES):
            return candidate
    return None


def ort_version(dist: Path) -> str | None:
    """The ``version`` of the ``package.json`` beside an onnxruntime-web
    ``dist`` folder (None when there is none)."""
    package = Path(dist).parent / "package.json"
    try:
        return json.loads(package.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def npm_pack_ort(dest: Path, version: str = ORT_WEB_VERSION) -> Path:
    """Fetch the ``onnxruntime-web@version`` tarball with ``npm pack`` (the
    registry npm is configured with) and unpack it into ``dest``. Returns the
    ``dist`` folder. Raises ``OrtWebNotFound`` when npm is missing or fails."""
    npm = shutil.which("npm")
    if npm is None:
        raise OrtWebNotFound("npm is not on the PATH")
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest) as tmp:
        proc = subprocess.run([npm, "pack", f"onnxruntime-web@{version}", "--pack-destination", tmp],
                              capture_output=True, text=True)
        tarballs = list(Path(tmp).glob("*.tgz"))
        if proc.returncode != 0 or not tarballs:
            raise OrtWebNotFound(f"npm pack onnxruntime-web@{version} failed: {proc.stderr.strip()[-500:]}")
        target = dest / f"onnxruntime-web-{version}"
        with tarfile.open(tarballs[0]) as tar:
            tar.extractall(target, filter="data")
    dist = _dist_of(target / "package")
    if dist is None:
        raise OrtWebNotFound(f"the onnxruntime-web@{version} tarball lacks {', '.join(ORT_FILES)}")
    return dist


def find_ort_dist(ort_dir: str | os.PathLike | None = None, fetch: bool = True) -> Path:
    """The onnxruntime-web ``dist`` folder to copy into a site.

    Args:
        ort_dir: a folder holding ``ORT_FILES``: a ``dist`` folder, the
            ``onnxruntime-web`` package, or a folder with ``node_modules``.
            When given, it is the only place looked at.
        fetch: run ``npm pack`` into the cache when nothing else is found.

    Returns:
        The folder holding ``ORT_FILES``.

    Raises:
        OrtWebNotFound: nothing found; the message says how to provide it.
    """
    if ort_dir is not None:
        dist = _dist_of(Path(ort_dir))
        if dist is None:
            raise OrtWebNotFound(f"{ort_dir} does not hold onnxruntime-web's {', '.join(ORT_FILES)}")
        return dist
    candidates = [Path(os.environ[ORT_DIR_ENV])] if os.environ.get(ORT_DIR_ENV) else []
    candidates += [PROJECT_ROOT, cache_dir() / f"onnxruntime-web-{ORT_WEB_VERSION}" / "package"]
    for candidate in candidates:
        dist = _dist_of(candidate)
        if dist is not None:
            return dist
    if fetch:
        try:
            return npm_pack_ort(cache_dir())
        except OrtWebNotFound as err:
            reason = str(err)
    else:
        reason = "fetching was disabled"
    raise OrtWebNotFound(
        f"onnxruntime-web {ORT_WEB_VERSION} not found ({reason}). Provide it with one of: "
        f"`npm ci` in the project's checkout; `npm pack onnxruntime-web@{ORT_WEB_VERSION}` and "
        f"`--ort-dir <unpacked package>`; or {ORT_DIR_ENV}=<folder with {', '.join(ORT_FILES)}>.")


def copy_ort(dist: Path, site_dir: Path) -> Path:
    """Copy ``ORT_FILES`` from ``dist`` into ``site_dir/ort``; returns that folder."""
    target = Path(site_dir) / "ort"
    target.mkdir(parents=True, exist_ok=True)
    for name in ORT_FILES:
        shutil.copyfile(Path(dist) / name, target / name)
    return target


def digit_examples(model_path: str | os.PathLike, per_class: int = 2, seed: int = 0) -> list[dict]:
    """Test images for the page, with Python onnxruntime's answers.

    Takes the first ``per_class`` images of each class from the test split of
    ``compiler.tools.demo.load_digits_split(seed)`` and runs the model at
    ``model_path`` (one float32 input of 64 pixels per image in any layout
    ``(batch, ...)``, one ``(batch, 10)`` probability output) on them.

    Returns:
        A list of ``{"pixels": 64 ints 0-16 (row-major 8x8), "label": int,
        "python_class": int, "python_probs": 10 floats}``.

    Raises:
        ValueError: the model does not take one float32 input of 64 pixels per
            image and give one ``(batch, 10)`` output.
    """
    import onnxruntime as ort


    manifest = model_manifest(model_path)
    inputs, outputs = manifest["inputs"], manifest["outputs"]
    spec = inputs[0] if len(inputs) == 1 else None
    example_shape = spec["shape"][1:] if spec and spec["shape"] else None
    if (spec is None or spec["dtype"] != "float32" or example_shape is None
            or any(not isinstance(d, int) for d in example_shape) or int(np.prod(example_shape)) != 64
            or len(outputs) != 1 or not outputs[0]["shape"] or outputs[0]["shape"][-1] != 10):
        takes = ", ".join(f"{v['name']}: {v['dtype']} {v['shape']}" for v in inputs)
        gives = ", ".join(f"{v['name']}: {v['dtype']} {v['shape']}" for v in outputs)
        raise ValueError("the digits page needs a model with one float32 (batch, ...) input of 64 pixels "
                         f"and one (batch, 10) output; this one takes {takes} and gives {gives}")
    data = load_digits_split(seed)
    picks = [i for c in range(10) for i in np.flatnonzero(data.y_test == c)[:per_class]]
    images = data.x_test[picks]  # float32 k/16, exact
    session = ort.InferenceSession(os.fspath(model_path), providers=["CPUExecutionProvider"])
    (probs,) = session.run(None, {spec["name"]: images.reshape((-1, *example_shape))})
    return [{"pixels": [int(v) for v in np.rint(img.reshape(-1) * 16)], "label": int(data.y_test[i]),
             "python_class": int(np.argmax(p)), "python_probs": [float(v) for v in p]}
            for i, img, p in zip(picks, images, probs)]


VARIANTS = (("float32", None, "model.onnx"), ("float16", "float16", "model-float16.onnx"),
            ("int8", "int8-static", "model-int8.onnx"))


def model_variants(model_path: str | os.PathLike, site_dir: str | os.PathLike, seed: int = 0,
                   n_calibration: int = 200) -> list[dict]:
    """Write the digits model's float16 and int8 (static QDQ, per-channel)
    conversions beside it (``compiler.core.deploy.convert``; int8 calibrated
    on the first ``n_calibration`` training images of ``load_digits_split(seed)``)
    and measure each variant's test accuracy in Python onnxruntime.

    Returns:
        ``[{"name": "float32" | "float16" | "int8", "file": str, "size_bytes": int,
        "test_accuracy": float (the 360 test images), "n_test": int}]``.
    """
    import onnx
    import onnxruntime as ort

    model, data = onnx.load(os.fspath(model_path)), load_digits_split(seed)
    name = model.graph.input[0].name
    image_shape = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim[1:])
    x_train, x_test = (a.reshape((len(a), *image_shape)) for a in (data.x_train, data.x_test))
    variants = []
    for label, conversion, file in VARIANTS:
        target = Path(site_dir) / file
        if conversion is not None:
            onnx.save(convert(model, conversion, [{name: x_train[:n_calibration]}]), os.fspath(target))
        session = ort.InferenceSession(os.fspath(target), providers=["CPUExecutionProvider"])
        predicted = np.argmax(session.run(None, {name: x_test})[0], axis=-1)
        variants.append({"name": label, "file": file, "size_bytes": target.stat().st_size,
                         "test_accuracy": float(np.mean(predicted == data.y_test)), "n_test": len(data.y_test)})
    return variants


def write_site(site_dir: str | os.PathLike, model_path: str | os.PathLike, ort_dist: str | os.PathLike,
               title: str = "digits model", seed: int = 0) -> Path:
    """Write the static site into ``site_dir`` (created if missing).

    Args:
        site_dir: the output folder.
        model_path: the digits model (``pytensor-onnx demo``'s ``model.onnx``).
        ort_dist: an onnxruntime-web folder from ``find_ort_dist``.
        title: what the page calls the model.
        seed: the split the test images come from.

    Returns:
        The path of ``index.html``.

    Raises:
        ValueError: as ``digit_examples``.
    """
    site = Path(site_dir)
    site.mkdir(parents=True, exist_ok=True)
    examples = digit_examples(model_path, seed=seed)
    if Path(model_path).resolve() != (site / "model.onnx").resolve():
        shutil.copyfile(model_path, site / "model.onnx")
    write_web_glue(site / "model.onnx")
    copy_ort(Path(ort_dist), site)
    for name in ("index.html", "demo.js"):
        shutil.copyfile(ASSETS / name, site / name)
    info = {"title": title, "ort_version": ort_version(Path(ort_dist)), "examples": examples,
            "variants": model_variants(site / "model.onnx", site, seed=seed)}
    (site / "digits.json").write_text(json.dumps(info) + "\n")
    return site / "index.html"


class SiteRequestHandler(SimpleHTTPRequestHandler):
    """Static files with the MIME types onnxruntime-web needs
    (``application/wasm`` for streaming compilation, ``text/javascript`` for
    ``.mjs``) and, when ``isolate`` is set, the COOP/COEP headers that make
    the page cross-origin isolated (``SharedArrayBuffer``, so WASM threads)."""

    isolate = True
    quiet = True
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm",
                      ".mjs": "text/javascript", ".js": "text/javascript", ".json": "application/json",
                      ".onnx": "application/octet-stream"}

    def end_headers(self) -> None:
        if self.isolate:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
            self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's signature
        if not self.quiet:
            super().log_message(format, *args)


def make_server(site_dir: str | os.PathLike, host: str = "127.0.0.1", port: int = 8000, isolate: bool = True,
                quiet: bool = True) -> ThreadingHTTPServer:
    """An HTTP server (not yet serving) for ``site_dir`` on ``host:port``
    (``port=0``: any free port; read ``server.server_address``).
    ``isolate`` sends COOP/COEP (two WASM threads); ``quiet`` drops the
    request log."""
    handler = type("Handler", (SiteRequestHandler,), {"isolate": isolate, "quiet": quiet})
    return ThreadingHTTPServer((host, port), functools.partial(handler, directory=os.fspath(site_dir)))


def serve(site_dir: str | os.PathLike, host: str = "127.0.0.1", port: int = 8000, isolate: bool = True) -> None:
    """Serve ``site_dir`` until interrupted (Ctrl-C), printing its URL."""
    server = make_server(site_dir, host, port, isolate=isolate, quiet=False)
    bound_host, bound_port = server.server_address[:2]
    print(f"serving {site_dir} at http://{bound_host}:{bound_port}/  (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
