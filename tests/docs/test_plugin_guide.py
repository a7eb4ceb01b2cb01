"""The pass guide works as written (issue 28: "a plugin pass written by
following the docs' pass guide alone, outside the repository, in a fresh
package with an entry point, is found by name and shows up in the
explorer").

The package is the page's own files (its ``{code-block}``s with a
``:caption:``), written into a temporary directory outside the checkout. Its
``.dist-info`` (with the entry point) is made by the page's build backend
(setuptools' ``prepare_metadata_for_build_wheel``, in a child process) into
a directory put on ``sys.path`` for this test only, as an installed
distribution: nothing is installed into the environment. Then the page's
Python examples run in order, their output compared as ``test_examples``
does, and the explorer's data of their ``dump_ir`` names the pass and its
rule.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from passes import base
from tests.docs.pages import DOCS, code_blocks
from tests.docs.test_examples import run_page

PAGE = "writing-a-pass.md"


def _install_the_guides_package(tmp_path, monkeypatch):
    package, site = tmp_path / "my-passes", tmp_path / "site"
    package.mkdir()
    site.mkdir()
    files = {b.caption: b.code for b in code_blocks(PAGE) if b.caption is not None}
    assert set(files) == {"pyproject.toml", "negation_passes.py"}
    for name, text in files.items():
        (package / name).write_text(text)
    assert DOCS.parent not in package.parents
    subprocess.run([sys.executable, "-c", "import sys, setuptools.build_meta as backend; "
                    "print(backend.prepare_metadata_for_build_wheel(sys.argv[1]))", str(site)],
                   cwd=package, check=True, capture_output=True, text=True)
    (dist_info,) = site.glob("*.dist-info")
    assert "cancel-double-neg = negation_passes:CancelDoubleNeg" in (dist_info / "entry_points.txt").read_text()
    (site / "negation_passes.py").write_text(files["negation_passes.py"])
    monkeypatch.syspath_prepend(str(site))
    # the registry as a fresh process has it: entry points not read yet, built-in passes only
    monkeypatch.setattr(base, "_PASSES", dict(base._PASSES))
    monkeypatch.setattr(base, "_entry_points_loaded", False)
    monkeypatch.delitem(sys.modules, "negation_passes", raising=False)


def test_the_guides_plugin_is_found_by_name_and_shows_up_in_the_explorer(tmp_path, monkeypatch):
    _install_the_guides_package(tmp_path, monkeypatch)
    assert "cancel-double-neg" not in base._PASSES
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert run_page(PAGE) == 2  # "Using it" and "Testing it"
    cls = base.registered_passes()["cancel-double-neg"]
    assert cls.__module__ == "negation_passes" and sys.modules["negation_passes"].__file__.startswith(str(tmp_path))

    html = (work / "ir-dumps" / "index.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>',
                                html, re.S).group(1))
    stage = next(s for s in data["stages"] if s["name"] == "cancel-double-neg")
    assert stage["changed"] and stage["fired"] == [["cancel-double-neg", 1]]
    assert [row for row in stage["diff"] if row[0] == "-"] == [
        ["-", "  %1: f64[x_dim0] = neg(%0)"], ["-", "  %2: f64[x_dim0] = neg(%1)"], ["-", "  return %2"]]
