"""Pass-developer tools: ``check_passes`` and its reproducers,
``opt_bisect_limit``, ``pytensor-onnx opt`` / ``compile``, ``report()``, and
``CompiledModel.run`` by name."""

from __future__ import annotations

import shlex

import numpy as np
import onnx
import pytest

from compiler import compile_to_onnx
from compiler.tools.cli import main
from compiler.tools.opt_tool import parse_pass_specs
from compiler.core.pass_check import PassCheckError, compare
from ir.parser import parse_graph
from ir.printer import print_graph
from tests.tools import broken_pass
from tests.tools.models import relu_mlp, scaled_relu_mlp

X = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)


@pytest.fixture(autouse=True)
def unregister_broken_pass():
    """``opt --load`` registers the fixture pass; other tests list the
    registry and expect built-in passes only."""
    from passes import base

    yield
    base._PASSES.pop(broken_pass.BrokenRelu.name, None)


def test_check_passes_names_the_broken_plugin_pass_and_its_reproducer_replays(tmp_path, capsys):
    ins, outs = relu_mlp()
    with pytest.raises(PassCheckError) as info:
        compile_to_onnx(ins, ["constant-folding", broken_pass.BrokenRelu(unused_option=3), "dce"], outputs=outs,
                        check_passes=3, reproducer_dir=tmp_path / "repro")
    err = info.value
    assert err.pass_name == "broken-relu" and "broken-relu" in str(err) and err.command in str(err)
    repro = tmp_path / "repro"
    assert {p.name for p in repro.iterdir()} == {"before.ir", "pass.json", "inputs.npz", "replay.sh"}
    assert "maximum" in (repro / "before.ir").read_text()
    argv = shlex.split(err.command)
    assert argv[:3] == ["pytensor-onnx", "opt", str(repro / "before.ir")]
    assert "broken-relu{unused_option=3}" in argv and "tests.tools.broken_pass" in argv
    capsys.readouterr()
    assert main(argv[1:]) == 1
    assert "pass 'broken-relu' changed the results" in capsys.readouterr().err
    # the same inputs through a correct pass replay cleanly
    assert main(["opt", str(repro / "before.ir"), "-p", "relu-silu", "--check-inputs",
                 str(repro / "inputs.npz")]) == 0
    assert "relu(" in capsys.readouterr().out


def test_check_passes_accepts_the_default_pipeline():
    ins, outs = relu_mlp()
    m = compile_to_onnx(ins, outputs=outs, check_passes=3)
    assert [n.op_type for n in m.model.graph.node] == ["MatMul", "Relu", "MatMul", "Exp"]


def test_opt_bisect_limit_stops_before_the_broken_rewrite():
    ins, outs = scaled_relu_mlp()
    pipeline = ["constant-folding", broken_pass.BrokenRelu()]
    full = compile_to_onnx(ins, pipeline, outputs=outs)
    assert full.rewrites.count == 2 and full.rewrites.fired == {"max0-to-abs": 1}
    # constant-folding is rewrite 1 (a whole pass outside the pattern engine), the broken rule rewrite 2
    m1 = compile_to_onnx(ins, pipeline, outputs=outs, opt_bisect_limit=1, check_passes=2)
    assert m1.rewrites.count == 1 and "maximum" in print_graph(m1.ir)
    with pytest.raises(PassCheckError):
        compile_to_onnx(ins, pipeline, outputs=outs, opt_bisect_limit=2, check_passes=2)


def test_opt_bisect_limit_counts_rule_applications_and_changing_passes():
    ins, outs = scaled_relu_mlp()
    counts = [compile_to_onnx(ins, outputs=outs, opt_bisect_limit=k).rewrites.count for k in (0, 1, 2, 3, 100)]
    full = compile_to_onnx(ins, outputs=outs).rewrites.count
    assert counts == [0, 1, 2, 3, full] and full > 3


def test_compare_is_exact_on_special_values_and_integers_and_tolerant_on_floats():
    a = np.array([1.0, np.nan, np.inf], np.float32)
    assert compare([a], [a.copy()]) is None
    assert compare([a], [np.array([1.0 + 1e-7, np.nan, np.inf], np.float32)]) is None
    assert "max abs error" in compare([a], [np.array([1.001, np.nan, np.inf], np.float32)])
    assert "NaN" in compare([a], [np.array([1.0, 0.0, np.inf], np.float32)])
    assert "+inf" in compare([a], [np.array([1.0, np.nan, 3.0], np.float32)])
    assert "exact" in compare([np.array([1, 2])], [np.array([1, 3])])
    assert "float64" in compare([a], [a.astype(np.float64)])


IR = """
graph @main(%x: f32[N,4]) {
  const %zero: f32[] = 0.0
  const %one: f32[] = 1.0
  %a: f32[N,4] = mul(%x, %one)
  %b: f32[N,4] = maximum(%a, %zero)
  return %b
}
"""


def test_opt_runs_passes_on_ir_text_and_prints_after_change(tmp_path, capsys):
    path = tmp_path / "in.ir"
    path.write_text(IR)
    assert main(["opt", str(path), "-p", "canonicalize,cse,relu-silu,dce", "--print-after-change", "--verify-each"]) == 0
    out, err = capsys.readouterr()
    assert out == print_graph(parse_graph("""
        graph @main(%x: f32[N,4]) {
          %b: f32[N,4] = relu(%x)
          return %b
        }"""))
    assert "IR Dump After canonicalize" in err and "IR Dump After relu-silu" in err
    assert "IR Dump After cse" not in err  # cse changed nothing
    assert main(["opt", str(path), "-p", "dce", "--print-after-all", "-o", str(tmp_path / "out.ir")]) == 0
    assert "IR Dump After dce" in capsys.readouterr().err
    assert "maximum" in (tmp_path / "out.ir").read_text()


def test_pass_specs_take_options():
    assert parse_pass_specs("cse, scan-unroll{max_trip_count=8},relu-silu{exact_special_values=True}") == [
        ("cse", {}), ("scan-unroll", {"max_trip_count": 8}), ("relu-silu", {"exact_special_values": True})]
    with pytest.raises(ValueError):
        parse_pass_specs("cse{x}")


@pytest.mark.parametrize("target", ["tests.tools.models:relu_mlp", "tests.tools.models:compiled_relu_mlp"])
def test_compile_command_writes_a_model(tmp_path, capsys, target):
    out = tmp_path / "model.onnx"
    assert main(["compile", target, "-o", str(out), "--report"]) == 0
    model = onnx.load(str(out))
    assert [n.op_type for n in model.graph.node] == ["MatMul", "Relu", "MatMul", "Exp"]
    text = capsys.readouterr().out
    assert "ONNX ops:" in text and "relu-max" in text


def test_report_lists_ops_passes_fired_and_declined_rules():
    ins, outs = relu_mlp()
    text = compile_to_onnx(ins, outputs=outs).report()
    assert "ONNX ops:\n  MatMul  2\n" in text
    assert "relu-silu" in text and "relu-max  x1" in text
    assert "rules declined" in text


def test_run_takes_inputs_by_name():
    ins, outs = relu_mlp()
    m = compile_to_onnx(ins, outputs=outs)
    (by_position,) = m.run(X)
    (by_name,) = m.run(x=X)
    np.testing.assert_array_equal(by_position, by_name)
    with pytest.raises(TypeError, match="unknown model input"):
        m.run(y=X)
    with pytest.raises(TypeError, match="missing model input"):
        m.run()
    with pytest.raises(TypeError, match="both by position and by name"):
        m.run(X, x=X)
    with pytest.raises(TypeError, match="positional"):
        m.run(X, X)


def test_random_inputs_share_one_size_per_symbol_and_keep_dtypes():
    from compiler.core.pass_check import random_inputs

    g = parse_graph("""
        graph @main(%a: f32[N,3], %b: i64[N], %c: bool[M,N], %d: u8[2]) {
          return %a
        }""")
    rng = np.random.default_rng(0)
    for _ in range(5):
        a, b, c, d = random_inputs(g, rng)
        assert (a.dtype, b.dtype, c.dtype, d.dtype) == (np.float32, np.int64, np.bool_, np.uint8)
        assert a.shape[0] == b.shape[0] == c.shape[1] and a.shape[1] == 3 and d.shape == (2,)


def test_check_passes_says_when_no_random_input_fits():
    g = parse_graph("""
        graph @main(%a: f32[N,K], %w: f32[K,2]) {
          %y: f32[N,2] = matmul(%a, %w)
          return %y
        }""")
    from compiler.core.pass_check import PassChecker

    assert len(PassChecker(g, 3).inputs) == 3  # K is shared: the draw always fits


def test_check_passes_draws_symbolic_dims_that_fit_the_weights():
    import pytensor.tensor as pt

    from compiler.lowering import graph_spec, lower
    from compiler.core.pass_check import PassChecker

    x = pt.matrix("x", dtype="float32")  # both dims symbolic: the inner one must be 4
    W = np.ones((4, 8), np.float32)
    g = lower(graph_spec([x], [pt.exp(x @ W)])).graph
    checker = PassChecker(g, 3)
    assert len(checker.inputs) == 3 and all(a[0].shape[1] == 4 for a in checker.inputs)
