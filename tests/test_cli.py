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


def test_help_builds_without_importing_pytensor_or_the_compiler():
    # the console script's --help starts fast because nothing heavy is imported before a subcommand runs
    root = Path(passes.base.__file__).resolve().parents[1]
    code = ("import sys, pytensor_onnx_cli\n"
            "try:\n    pytensor_onnx_cli.main(['--help'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "print(sorted(m for m in ('pytensor', 'compiler', 'numpy', 'onnx', 'scipy') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "usage: pytensor-onnx" in proc.stdout and proc.stdout.splitlines()[-1] == "[]"


def test_the_demo_defaults_the_parser_repeats_are_the_demos():
    from compiler.tools import cli, demo

    assert cli.DEMO_MODELS == tuple(demo.MODELS)
    assert cli.DEMO_DEFAULTS == {"model": demo.DEFAULT_MODEL, "epochs": demo.DEFAULT_EPOCHS,
                                 "seed": demo.DEFAULT_SEED, "mode": demo.DEFAULT_MODE}


@pytest.mark.parametrize("argv, message", [
    (["opt", "missing.ir", "-p", "cse"], "pytensor-onnx opt: FileNotFoundError: [Errno 2] No such file or directory"),
    (["compile", "no_such_module_xyz:build", "-o", "m.onnx"],
     "pytensor-onnx compile: ModuleNotFoundError: No module named 'no_such_module_xyz'"),
])
def test_a_failing_command_prints_one_line_and_exits_1(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1, err
    with pytest.raises((FileNotFoundError, ModuleNotFoundError)):
        main(["--traceback", *argv])


def test_an_unknown_pass_is_one_line(capsys, tmp_path):
    ir = tmp_path / "g.ir"
    ir.write_text("graph @main(%x: f32[3]) {\n  %y: f32[3] = exp(%x)\n  return %y\n}\n")
    assert main(["opt", str(ir), "-p", "no-such-pass"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pytensor-onnx opt: ") and "no-such-pass" in err and err.count("\n") == 1, err


def test_compile_finds_a_module_in_the_current_directory(tmp_path, monkeypatch, capsys):
    (tmp_path / "mymodels_t29.py").write_text(
        "import pytensor.tensor as pt\n\n\ndef build():\n    x = pt.vector('x')\n    return [x], [pt.exp(x)]\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path), ".")])  # as the script
    assert main(["compile", "mymodels_t29:build", "-o", "m.onnx"]) == 0
    assert "wrote m.onnx: 1 nodes" in capsys.readouterr().out
    sys.modules.pop("mymodels_t29", None)


@pytest.mark.parametrize("retrain", [False, True])
def test_demo_web_reuses_the_trained_model_unless_told_to_retrain(retrain, monkeypatch, tmp_path, capsys):
    import compiler.tools.demo
    import compiler.tools.website

    (tmp_path / "model.onnx").write_bytes(b"trained before")
    trained, pages = [], []

    def fake_run_demo(out_dir, model, epochs, seed, mode, log):
        trained.append(out_dir)
        raise RuntimeError("stop after training was asked for")

    monkeypatch.setattr(compiler.tools.demo, "run_demo", fake_run_demo)
    monkeypatch.setattr(compiler.tools.website, "find_ort_dist", lambda where: tmp_path / "ort")
    monkeypatch.setattr(compiler.tools.website, "write_site",
                        lambda web, model_path, ort, title, seed: pages.append(model_path) or tmp_path / "index.html")
    argv = ["demo", "--out", str(tmp_path), "--web", str(tmp_path / "site")] + (["--retrain"] if retrain else [])
    status = main(argv)
    if retrain:
        assert status == 1 and trained == [str(tmp_path)] and not pages
        assert "stop after training" in capsys.readouterr().err
    else:
        assert status == 0 and not trained and pages == [tmp_path / "model.onnx"]
        assert "using" in capsys.readouterr().out
