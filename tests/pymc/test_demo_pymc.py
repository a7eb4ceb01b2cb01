"""``pytensor-onnx demo --model pymc``: the MAP found through onnxruntime
equals pymc.find_MAP's."""

import numpy as np
import pytest

pytest.importorskip("pymc")

from compiler.tools.cli import main  # noqa: E402
from compiler.tools.demo_pymc import run_pymc_demo  # noqa: E402


@pytest.mark.slow
def test_pymc_demo_finds_pymcs_map(tmp_path, capsys):
    report = run_pymc_demo(tmp_path, log=None)
    assert report.ok
    np.testing.assert_allclose(report.map_onnx, report.map_pymc, rtol=1e-5, atol=1e-5)
    assert abs(report.logp_onnx - report.logp_pymc) < 1e-8
    assert (tmp_path / "model.onnx").exists()


@pytest.mark.slow
def test_cli_runs_the_pymc_demo(tmp_path, capsys):
    assert main(["demo", "--model", "pymc", "--out", str(tmp_path)]) == 0
    assert "MAP points agree (1e-4): yes" in capsys.readouterr().out
