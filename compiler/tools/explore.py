"""``pytensor-onnx explore DIR``: serve the pass explorer of a ``dump_ir``
directory (``compiler.core.explorer_page``).

``prepare`` makes ``DIR`` ready first: a directory without ``index.html``
but with ``.ir`` files (a ``check_passes`` reproducer's ``before.ir``, files
written by hand or by ``pytensor-onnx opt``) gets a page built from them,
one stage per file in name order (their text must parse: constants in full,
as reproducers and ``full_weights=True`` dumps print them); and when
``viz-global.js`` is missing it is copied from ``find_viz``, or else fetched
once with ``npm pack @viz-js/viz@VIZ_VERSION`` into the per-user cache (the
registry's tarball only, no install scripts).
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from compiler.core.explorer import StageRecorder
from compiler.core.explorer_page import VIZ_FILE, VIZ_VERSION, find_viz, viz_cache_dir, write_explorer
from ir.parser import IRParseError, parse_graph
from passes.rewrite_log import RewriteLog


def page_from_ir_files(directory: Path) -> Path:
    """Write ``directory/index.html`` from its ``*.ir`` files (one stage
    each, named after the file; no timings, no rule counts, no ONNX model).

    Raises:
        FileNotFoundError: no ``.ir`` file.
        ValueError: a file does not parse (the message names it and the
            parser's first line).
    """
    files = sorted(directory.glob("*.ir"))
    if not files:
        raise FileNotFoundError(f"{directory} holds neither index.html nor .ir files (compile with dump_ir=DIR)")
    recorder = StageRecorder(RewriteLog())
    previous = None
    for f in files:
        text = f.read_text()
        try:
            graph = parse_graph(text)
        except IRParseError as err:
            raise ValueError(f"{f.name}: {str(err).splitlines()[0]}") from err
        recorder.record(graph, f.stem, f.name, previous is not None and text != previous, 0.0)
        previous = text
    return write_explorer(directory, recorder, [])


def fetch_viz() -> Path | None:
    """``viz-global.js`` from ``npm pack`` into ``viz_cache_dir()``; None
    when npm is missing or fails."""
    npm = shutil.which("npm")
    if npm is None:
        return None
    cache = viz_cache_dir()
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run([npm, "pack", f"@viz-js/viz@{VIZ_VERSION}", "--pack-destination", tmp],
                              capture_output=True, text=True)
        tarballs = list(Path(tmp).glob("*.tgz"))
        if done.returncode != 0 or not tarballs:
            return None
        with tarfile.open(tarballs[0]) as tar:
            member = tar.extractfile(f"package/dist/{VIZ_FILE}")
            if member is None:
                return None
            cache.mkdir(parents=True, exist_ok=True)
            (cache / VIZ_FILE).write_bytes(member.read())
    return cache / VIZ_FILE


def prepare(directory, fetch: bool = True) -> list[str]:
    """Make ``directory`` servable (see the module docstring); returns notes
    for the user (empty when nothing was missing).

    Raises:
        NotADirectoryError: ``directory`` is not a directory.
        FileNotFoundError, ValueError: see ``page_from_ir_files``.
    """
    out = Path(directory)
    if not out.is_dir():
        raise NotADirectoryError(f"{out} is not a directory (compile with dump_ir=DIR first)")
    notes = []
    if not (out / "index.html").is_file():
        page_from_ir_files(out)
        notes.append(f"built index.html from the .ir files of {out}")
    if not (out / VIZ_FILE).is_file():
        viz = find_viz() or (fetch_viz() if fetch else None)
        if viz is None:
            notes.append(f"{VIZ_FILE} not found (npm ci in the project, or npm on the PATH): graphs are not drawn")
        else:
            shutil.copyfile(viz, out / VIZ_FILE)
    return notes
