"""Every code example of the documentation runs (issue 28).

Each page's ``python`` blocks run in order in one namespace, in a fresh
working directory; a ``text`` block right after a ``python`` block is that
block's expected standard output, compared exactly. Blocks in other
languages are shown, not run here, and each language is listed below with
the reason (shell commands and browser code have tests of their own). The
pass guide's files (``{code-block}`` with a ``:caption:``) are written into
a package and installed by ``test_plugin_guide.py``. Examples that need
PyMC run in the PyTensor 2.38 line (PyMC pins it); the 3.0 line skips those
pages, as the rest of the PyMC tests.
"""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest

from tests.docs.pages import Block, code_blocks, pages

# languages shown but not run by this test, and why
SHOWN = {
    "bash": "shell commands: pip, npm and the CLI (tests/test_cli.py, tests/web run what they show)",
    "js": "browser code: onnxruntime-web in Chromium (tests/web, the browser job)",
    "text": "output: compared when it follows a python block, else shown",
    "toml": "the pass guide's pyproject.toml, installed by test_plugin_guide.py",
}
# modules a page's examples import that are not test dependencies of both lines
REQUIRES = {"pymc.md": ("pymc",)}
# pages whose examples another test runs, and why
PAGES_RUN_ELSEWHERE = {
    "writing-a-pass.md": "tests/docs/test_plugin_guide.py: installs the guide's package first, then runs them",
}
# python blocks run elsewhere, by their first line: where and why
RUN_ELSEWHERE = {
    ("pymc.md", "import emcee, numpy as np, nutpie, pymc as pm"):
        "tests/pymc/test_samplers.py::test_the_docs_sampling_example_runs_as_written (-m extended: "
        "nutpie and emcee, the samplers extra)",
}
PAGES = [p for p in pages() if any(b.lang == "python" for b in code_blocks(p)) and p not in PAGES_RUN_ELSEWHERE]


def _runs_here(block: Block) -> bool:
    return block.lang == "python" and block.caption is None and (
        (block.page, block.code.splitlines()[0]) not in RUN_ELSEWHERE)


def test_every_block_is_run_or_listed():
    blocks = [b for p in pages() for b in code_blocks(p)]
    assert len(blocks) > 30 and len(PAGES) >= 7  # the pages were read
    for b in blocks:
        assert b.lang == "python" or b.lang in SHOWN, f"{b.where}: a {b.lang!r} block is neither run nor listed"
        if b.caption is not None:
            assert b.page == "writing-a-pass.md", f"{b.where}: files are the pass guide's only"
    first_lines = {(b.page, b.code.splitlines()[0]) for b in blocks if b.lang == "python"}
    assert set(RUN_ELSEWHERE) <= first_lines  # an entry whose block is gone fails here
    assert set(PAGES_RUN_ELSEWHERE) <= set(pages())


def run_page(page: str) -> int:
    """Run the ``python`` blocks of ``page`` in order in one namespace (in
    the current directory), each checked against the ``text`` block right
    after it if any; returns how many ran.

    Raises:
        AssertionError: a block printed something else than its output block.
    """
    blocks = code_blocks(page)
    scope: dict = {"__name__": f"docs.{page}"}
    ran = 0
    for i, block in enumerate(blocks):
        if not _runs_here(block):
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the examples show what they print; warnings are the API's tests'
            exec(compile(block.code, block.where, "exec"), scope)
        ran += 1
        after = blocks[i + 1] if i + 1 < len(blocks) else None
        if after is not None and after.lang == "text" and after.follows:
            assert out.getvalue().rstrip() == after.code.rstrip(), f"{block.where}: printed\n{out.getvalue()}"
    return ran


@pytest.mark.parametrize("page", PAGES)
def test_the_examples_of_the_page_run(page, tmp_path, monkeypatch):
    for module in REQUIRES.get(page, ()):
        pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)
    assert run_page(page) > 0


def test_the_readme_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_page("../README.md") == 1
    assert (tmp_path / "model.onnx").is_file()
