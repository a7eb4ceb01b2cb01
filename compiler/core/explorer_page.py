"""``DIR/index.html``: the pass explorer page ``dump_ir=DIR`` writes.

One HTML file holding the explorer's data (``compiler.core.explorer``) as
JSON, and the page's script and style (``explorer_assets/``). It needs no
network: graphs are drawn by Graphviz compiled to WebAssembly
(``viz-global.js`` of the npm package ``@viz-js/viz``, pinned in
``package.json``), copied beside the page when found (``find_viz``: the
``PYTENSOR_ONNX_VIZ_DIR`` environment variable, the project's
``node_modules`` after ``npm ci``, the per-user cache that
``pytensor-onnx explore`` fills). Without it the page shows everything but
the drawings, and says how to get them.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

ASSETS = Path(__file__).parent / "explorer_assets"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
VIZ_FILE = "viz-global.js"
VIZ_VERSION = "3.31.0"
VIZ_DIR_ENV = "PYTENSOR_ONNX_VIZ_DIR"
FORMAT = "pytensor-onnx.explorer"


def viz_cache_dir() -> Path:
    """Where ``pytensor-onnx explore`` keeps ``viz-global.js``:
    ``$XDG_CACHE_HOME/pytensor-onnx/viz-<version>``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "pytensor-onnx" / f"viz-{VIZ_VERSION}"


def find_viz() -> Path | None:
    """The ``viz-global.js`` to copy (see the module docstring), or None."""
    candidates = [Path(os.environ[VIZ_DIR_ENV])] if os.environ.get(VIZ_DIR_ENV) else []
    candidates += [PROJECT_ROOT / "node_modules" / "@viz-js" / "viz" / "dist", viz_cache_dir()]
    return next((c / VIZ_FILE for c in candidates if (c / VIZ_FILE).is_file()), None)


def explorer_data(stages, onnx_nodes: list[dict]) -> dict:
    """The page's JSON: ``{"format", "stages", "onnx"}`` (``stages``: a
    ``compiler.core.explorer.StageRecorder``)."""
    return {"format": FORMAT, "stages": stages.stages, "onnx": onnx_nodes}


def page_html(data: dict) -> str:
    """The page: ``explorer_assets/index.html`` with the style, the script
    and ``data`` (JSON; ``</`` escaped so no string ends the script) inlined."""
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    html = (ASSETS / "index.html").read_text()
    return (html.replace("/*STYLE*/", (ASSETS / "explorer.css").read_text())
            .replace("/*SCRIPT*/", (ASSETS / "explorer.js").read_text())
            .replace("/*DATA*/", payload))


def write_explorer(directory: str | os.PathLike, stages, onnx_nodes: list[dict]) -> Path:
    """Write ``index.html`` (and ``viz-global.js`` when ``find_viz`` finds
    it and the directory has none) into ``directory``; returns the page's
    path."""
    out = Path(directory)
    page = out / "index.html"
    page.write_text(page_html(explorer_data(stages, onnx_nodes)))
    viz = find_viz()
    if viz is not None and not (out / VIZ_FILE).is_file():
        shutil.copyfile(viz, out / VIZ_FILE)
    return page
