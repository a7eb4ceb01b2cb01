"""The ``pytensor-onnx`` console script: ``passes``, ``--version`` and usage errors."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest

import passes.base
from compiler.tools.cli import doc_summary, main
from passes import DEFAULT_PIPELINE, Pass, registered_passes


@dataclass(frozen=True)
class _PluginPass(Pass):
    """Do nothing, for the listing
    test. Second sentence here.

    Details nobody sees."""

    name = "test-plugin-noop"

    def run(self, graph) -> bool:
        return False


def _passes_output(capsys) -> list[str]:
    assert main(["passes"]) == 0
    return capsys.readouterr().out.splitlines()


def test_passes_lists_every_registered_pass_then_the_pipeline(capsys):
    lines = _passes_output(capsys)
    split = lines.index("default pipeline:")
    assert lines[0] == "registered passes:"
    listed = [line.split()[0] for line in lines[1:split]]
    assert listed == sorted(registered_passes())
    for name, cls in registered_passes().items():
        (row,) = [line for line in lines[1:split] if line.split()[0] == name]
        assert "[built-in]" in row and row.endswith(doc_summary(cls))
    assert lines[split + 1:] == [f"  {i}. {name}" for i, name in enumerate(DEFAULT_PIPELINE, 1)]


def test_passes_marks_plugins(capsys, monkeypatch):
    monkeypatch.setitem(passes.base._PASSES, _PluginPass.name, _PluginPass)
    (row,) = [line for line in _passes_output(capsys) if _PluginPass.name in line]
    assert row.split() == [_PluginPass.name, "[plugin", "tests.test_cli]", "Do", "nothing,", "for", "the",
                           "listing", "test."]


def test_doc_summary():
    def one_line():
        """Sum two numbers"""

    assert doc_summary(_PluginPass) == "Do nothing, for the listing test."
    assert doc_summary(one_line) == "Sum two numbers"
    assert doc_summary(type("NoDoc", (), {"__doc__": None})) == ""


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"pytensor-onnx {version('pytensor-onnx')}\n"


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    assert "COMMAND" in capsys.readouterr().err


def test_python_m_compiler_cli_lists_the_pipeline(tmp_path):
    # the checkout under test first on the path (the editable install may point at another worktree)
    env = {**os.environ, "PYTHONPATH": str(Path(passes.base.__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-m", "compiler.tools.cli", "passes"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-len(DEFAULT_PIPELINE):] == [
        f"  {i}. {name}" for i, name in enumerate(DEFAULT_PIPELINE, 1)]


def test_installed_console_script_version(tmp_path):
    script = Path(sys.executable).with_name("pytensor-onnx")
    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"pytensor-onnx {version('pytensor-onnx')}\n"


@pytest.mark.parametrize("identical, diff, status", [(True, 1e-7, 0), (False, 1e-7, 1), (True, 1e-5, 1)])
def test_demo_exit_status_follows_the_comparison(identical, diff, status, monkeypatch, tmp_path, capsys):
    import compiler.tools.demo
    from compiler.tools.demo import DemoReport

    def fake_run_demo(out_dir, model, epochs, seed, mode, log):
        assert (out_dir, model, epochs, seed, mode) == (str(tmp_path), "mlp", 4, 7, None)
        return DemoReport(epochs=epochs, seed=seed, final_loss=0.1, train_accuracy=1.0, test_accuracy_pytensor=1.0,
                          test_accuracy_onnx=1.0, predictions_identical=identical, max_abs_diff=diff, node_count=6,
                          op_histogram={"MatMul": 2}, compile_seconds=0.1, train_seconds=1.0,
                          model_path=tmp_path / "model.onnx", model=model)

    monkeypatch.setattr(compiler.tools.demo, "run_demo", fake_run_demo)
    assert main(["demo", "--out", str(tmp_path), "--model", "mlp", "--epochs", "4", "--seed", "7",
                 "--mode", "default"]) == status
    assert capsys.readouterr().out.splitlines()[-1].endswith("OK" if status == 0 else "onnxruntime")
