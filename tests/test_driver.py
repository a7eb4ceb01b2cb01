"""``compile_to_onnx``: what it accepts, how passes are chosen (names,
objects, plugins from entry points), IR dumps and history, the compiled
model's API, shared variables, input and output naming, and that the
caller's PyTensor graph is never touched."""

from __future__ import annotations

import hashlib
import sys
import textwrap
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.graph.fg import FunctionGraph

try:
    from pytensor.graph.traversal import io_toposort  # PyTensor 3
except ImportError:  # PyTensor 2.x
    from pytensor.graph.basic import io_toposort

import passes.base
from compiler import compile_to_onnx
from ir.parser import IRParseError, parse_graph
from ir.printer import print_graph
from passes import DEFAULT_PIPELINE, Pass, get_pass, register_pass
from passes.cse import CommonSubexpressionElimination
from tests.helpers import assert_same

RNG = np.random.default_rng(0)


def _affine():
    """``y = exp(x * a + b)`` with float32 shared ``a`` (3,) and ``b`` ()."""
    x = pt.matrix("x", dtype="float32")
    a = pytensor.shared(np.array([0.5, -1.0, 2.0], np.float32), name="a")
    b = pytensor.shared(np.float32(0.25), name="b")
    return x, a, b, pt.exp(x * a + b)


def _x(rows=4):
    return RNG.normal(size=(rows, 3)).astype(np.float32)


# -- what compile_to_onnx accepts ------------------------------------------
def test_accepts_inputs_and_outputs():
    x, a, b, y = _affine()
    compiled = compile_to_onnx([x], outputs=[y])
    xv = _x()
    (got,) = compiled.run(xv)
    assert_same(got, np.exp(xv * a.get_value() + b.get_value()), rtol=1e-6, atol=1e-6, what="raw graph")


def test_accepts_a_function_graph():
    x, a, b, y = _affine()
    fg = FunctionGraph([x, a, b], [y], clone=False)
    compiled = compile_to_onnx(fg)
    assert compiled.input_names == ["x"]
    xv = _x()
    assert_same(compiled(xv)[0], np.exp(xv * a.get_value() + b.get_value()), rtol=1e-6, atol=1e-6,
                what="FunctionGraph")


def test_accepts_a_compiled_function_and_drops_updates():
    x, a, b, y = _affine()
    count = pytensor.shared(np.int64(0), name="count")
    fn = pytensor.function([x], [y, y.sum()], updates=[(count, count + 1)])
    compiled = compile_to_onnx(fn)
    assert compiled.input_names == ["x"]
    assert len(compiled.model.graph.output) == 2
    xv = _x()
    want = fn(xv)
    got = compiled.run(xv)
    for i, (g, w) in enumerate(zip(got, want)):
        assert_same(g, np.asarray(w), rtol=1e-6, atol=1e-5, what=f"output {i}")
    assert count.get_value() == 1  # only PyTensor's own call updated it


def test_rejects_other_things():
    with pytest.raises(TypeError, match="FunctionGraph"):
        compile_to_onnx(42)


# -- choosing passes -----------------------------------------------------------
def test_default_pipeline_runs_when_passes_is_none():
    x, a, b, y = _affine()
    compiled = compile_to_onnx([x], outputs=[y])
    assert [r.name for r in compiled.history] == ["lowered", *DEFAULT_PIPELINE]


def test_empty_pass_list_runs_none():
    x, a, b, y = _affine()
    compiled = compile_to_onnx([x], outputs=[y], passes=[], keep_ir=True, full_weights=True)
    assert [r.name for r in compiled.history] == ["lowered"]
    assert print_graph(compiled.ir) == compiled.history[0].ir_text


def test_pass_names_and_objects_mix():
    x, a, b, y = _affine()
    compiled = compile_to_onnx([x], outputs=[y], passes=["canonicalize", CommonSubexpressionElimination(),
                                                          get_pass("constant-folding", max_elements=4), "dce"])
    assert [r.name for r in compiled.history] == ["lowered", "canonicalize", "cse", "constant-folding", "dce"]


def test_unknown_pass_name_lists_the_known_ones():
    x, a, b, y = _affine()
    with pytest.raises(ValueError, match="no-such-pass.*known passes: .*canonicalize.*constant-folding.*cse.*dce"):
        compile_to_onnx([x], outputs=[y], passes=["no-such-pass"])


def test_a_duplicate_pass_name_is_an_error(monkeypatch):
    monkeypatch.setattr(passes.base, "_PASSES", dict(passes.base._PASSES))

    @dataclass(frozen=True)
    class OtherDce(Pass):
        name = "dce"

        def run(self, graph):
            return False

    with pytest.raises(ValueError, match="'dce' is registered twice"):
        register_pass(OtherDce)
    assert type(get_pass("dce")).__module__ == "passes.dce"


# -- dumps and history -----------------------------------------------------------
def test_dump_ir_writes_one_parseable_file_per_stage(tmp_path):
    x, a, b, y = _affine()
    compiled = compile_to_onnx([x], outputs=[y], dump_ir=tmp_path / "ir", keep_ir=True, full_weights=True)
    files = sorted((tmp_path / "ir").glob("*.ir"))
    stages = ["lowered", *DEFAULT_PIPELINE]
    assert [f.name for f in files] == [f"{i:02d}-{s}.ir" for i, s in enumerate(stages)]
    assert {f.name for f in (tmp_path / "ir").iterdir()} - {f.name for f in files} <= {"index.html", "viz-global.js"}
    for f, record in zip(files, compiled.history):
        text = f.read_text()
        assert text == record.ir_text
        assert print_graph(parse_graph(text)) == text
    assert compiled.history[-1].ir_text == print_graph(compiled.ir)


def _big_weight_model():
    """``x @ W`` with a float32 shared ``W`` of 4x5 = 20 elements (over the
    16-element literal limit)."""
    x = pt.matrix("x", dtype="float32")
    W = pytensor.shared(np.arange(20, dtype=np.float32).reshape(4, 5), name="W")
    return x, x @ W


def test_dumps_abbreviate_big_weights_unless_full_weights_are_asked_for(tmp_path):
    x, y = _big_weight_model()
    compile_to_onnx([x], outputs=[y], passes=[], dump_ir=tmp_path / "short")
    compile_to_onnx([x], outputs=[y], passes=[], dump_ir=tmp_path / "full", full_weights=True)
    short = (tmp_path / "short" / "00-lowered.ir").read_text()
    full = (tmp_path / "full" / "00-lowered.ir").read_text()
    digest = hashlib.sha256(np.arange(20, dtype="<f4").tobytes()).hexdigest()[:12]
    assert f"const %W: f32[4,5] = <4x5 f32 sha256:{digest}>" in short
    assert 'const %W: f32[4,5] = base64"' in full
    assert print_graph(parse_graph(full)) == full
    with pytest.raises(IRParseError, match="abbreviated to a digest.*full_weights=True"):
        parse_graph(short)


def test_history_records_each_stage_without_text_by_default():
    x, a, b, y = _affine()
    compiled = compile_to_onnx([x], outputs=[y], passes=["dce", "dce"])
    lowered, first, second = compiled.history
    assert (lowered.name, lowered.changed) == ("lowered", True)
    assert first.name == second.name == "dce"
    assert second.changed is False  # nothing left to remove the second time
    assert all(r.seconds >= 0 and r.ir_text is None for r in compiled.history)
    assert [r.nodes for r in compiled.history] == [len(compiled.ir)] * 3
    assert set(compiled.timings) == {"lowering", "passes", "hooks", "emission"}
    compiled.model  # the ModelProto is serialized on first use, and timed then
    assert set(compiled.timings) == {"lowering", "passes", "hooks", "emission", "serialization"}


def test_history_keeps_each_stage_text_when_asked():
    x, a, b, y = _affine()
    compiled = compile_to_onnx([x], outputs=[y], passes=["dce", "dce"], keep_ir=True)
    assert all(isinstance(r.ir_text, str) and r.ir_text.startswith("graph @main(") for r in compiled.history)
    assert compiled.history[-1].ir_text == print_graph(compiled.ir)


# -- the compiled model ------------------------------------------------------------
def test_run_call_and_save(tmp_path):
    x, a, b, y = _affine()
    compiled = compile_to_onnx([x], outputs=[y])
    xv = _x()
    (got_run,) = compiled.run(xv)
    (got_call,) = compiled(xv)
    np.testing.assert_array_equal(got_run, got_call)
    with pytest.raises(TypeError, match="takes 1 inputs"):
        compiled.run(xv, xv)
    path = tmp_path / "model.onnx"
    compiled.save(path)
    onnx.checker.check_model(onnx.load(path))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got_file,) = session.run(None, {"x": xv})
    np.testing.assert_array_equal(got_file, got_run)


def test_run_checks_every_new_dtype_and_shape_once_and_skips_repeats(monkeypatch):
    """``run`` skips the input checks for arrays with the dtypes and shapes
    of the last accepted call (``run_signature``); anything else is checked."""
    import compiler.core.driver as driver

    x, y = pt.dmatrix("x"), pt.dvector("y")
    compiled = compile_to_onnx([x, y], outputs=[pt.dot(x, y)])
    checked = []
    real = driver.check_run_inputs
    monkeypatch.setattr(driver, "check_run_inputs", lambda *a: checked.append(1) or real(*a))
    ones = np.ones((2, 3))
    for _ in range(3):
        np.testing.assert_array_equal(compiled.run(ones, np.ones(3))[0], [3.0, 3.0])
    assert len(checked) == 1
    with pytest.raises(ValueError, match="axis 1"):
        compiled.run(ones, np.ones(4))  # a new shape: checked (PyTensor requires equal contracted dims)
    with pytest.raises(TypeError, match="must be float64"):
        compiled.run(ones, np.ones(3, dtype=np.float32))
    compiled.run(ones.tolist(), np.ones(3))  # a list: converted and checked every time
    compiled.run(ones.tolist(), np.ones(3))
    compiled.run(x=ones, y=np.ones(3))
    assert len(checked) == 6
    with pytest.raises(ValueError, match="axis 1"):
        compiled.run(np.ones((2, 5)), np.ones(3))


def test_run_feeds_onnxruntimes_cxx_session_directly():
    """``run`` calls the C++ session under ``InferenceSession`` (its checks
    are ``run``'s own); if onnxruntime renames it, ``run`` falls back to
    ``InferenceSession.run`` silently, so this fails instead."""
    x = pt.dvector("x")
    compiled = compile_to_onnx([x], outputs=[x * 2.0])
    engine = compiled.session._sess
    calls = []

    class Spy:
        def run(self, *args):
            calls.append(args[0])
            return engine.run(*args)

    compiled.session._sess = Spy()
    np.testing.assert_array_equal(compiled.run(np.ones(2))[0], [2.0, 2.0])
    assert calls == [compiled.output_names]


# -- shared variables ------------------------------------------------------------------
def test_bake_shared_makes_named_initializers():
    x, a, b, y = _affine()
    compiled = compile_to_onnx([x], outputs=[y], bake_shared=True)
    assert compiled.input_names == ["x"]
    assert [i.name for i in compiled.model.graph.input] == ["x"]
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in compiled.model.graph.initializer}
    np.testing.assert_array_equal(inits["a"], a.get_value())
    np.testing.assert_array_equal(inits["b"], b.get_value())
    # The IR holds copies: changing the shared variable later changes nothing.
    assert not np.shares_memory(compiled.ir.constants["a"].const, a.get_value(borrow=True))


def test_keeping_shared_variables_as_inputs_in_fgraph_order():
    x, a, b, y = _affine()
    fn = pytensor.function([x], y)
    compiled = compile_to_onnx(fn, bake_shared=False)
    want_order = [v.name for v in fn.maker.fgraph.inputs]
    assert compiled.input_names == want_order
    assert sorted(want_order) == ["a", "b", "x"] and want_order[0] == "x"
    assert [i.name for i in compiled.model.graph.input] == want_order
    assert not {t.name for t in compiled.model.graph.initializer} & {"a", "b"}
    xv = _x()
    feeds = {"x": xv, "a": np.array([1.0, 2.0, 3.0], np.float32), "b": np.float32(-1.0)}
    (got,) = compiled.run(*[feeds[n] for n in want_order])
    np.testing.assert_allclose(got, np.exp(xv * feeds["a"] + feeds["b"]), rtol=1e-6)

    raw = compile_to_onnx([x], outputs=[y], bake_shared=False)
    assert raw.input_names[0] == "x" and sorted(raw.input_names) == ["a", "b", "x"]


# -- names -----------------------------------------------------------------------------
def test_input_names_are_kept_sanitized_and_unique():
    x1, x2 = pt.vector("x", dtype="float64"), pt.vector("x", dtype="float64")
    spaced, unnamed = pt.vector("my input", dtype="float64"), pt.vector(dtype="float64")
    out = (x1 - x2) * spaced + unnamed
    compiled = compile_to_onnx([x1, x2, spaced, unnamed], outputs=[out])
    assert compiled.input_names == ["x", "x_1", "my_input", "input3"]
    assert [i.name for i in compiled.model.graph.input] == compiled.input_names
    values = [np.array([1.0, 2.0]), np.array([0.5, 4.0]), np.array([3.0, -1.0]), np.array([10.0, 20.0])]
    (got,) = compiled.run(*values)
    np.testing.assert_array_equal(got, (values[0] - values[1]) * values[2] + values[3])


def test_outputs_come_in_fgraph_order():
    x = pt.vector("x", dtype="float64")
    outs = [x + 1, x * 3, x - 5, -x]
    compiled = compile_to_onnx([x], outputs=outs)
    assert len(compiled.output_names) == 4
    assert [o.name for o in compiled.model.graph.output] == compiled.output_names
    xv = np.array([1.0, -2.0, 0.5])
    for got, want in zip(compiled.run(xv), [xv + 1, xv * 3, xv - 5, -xv]):
        np.testing.assert_array_equal(got, want)


# -- the caller's graph is never mutated ----------------------------------------------------
def _graph_state(outputs, fgraph=None):
    """Everything compilation could change about a PyTensor graph."""
    nodes = io_toposort([], list(outputs))
    state = {
        "dprint": pytensor.dprint(fgraph if fgraph is not None else list(outputs), file="str"),
        "nodes": [(n, n.op, tuple(n.inputs), tuple(n.outputs)) for n in nodes],
        "names": [(v, v.name, v.type) for n in nodes for v in n.inputs + n.outputs],
        "shared": [(v, v.get_value(borrow=True).tobytes()) for n in nodes for v in n.inputs
                   if isinstance(v, pytensor.compile.SharedVariable) and hasattr(v.get_value(borrow=True), "tobytes")],
    }
    if fgraph is not None:
        state["apply_nodes"] = set(fgraph.apply_nodes)
        state["clients"] = {v: list(c) for v, c in fgraph.clients.items()}
        state["fg_inputs"], state["fg_outputs"] = list(fgraph.inputs), list(fgraph.outputs)
    return state


def _mlp_like():
    x = pt.matrix("x", dtype="float32")
    w = pytensor.shared(RNG.normal(size=(3, 4)).astype(np.float32), name="W")
    b = pytensor.shared(np.zeros(4, np.float32), name="b")
    h = pt.maximum(x @ w + b, 0)
    return x, [w, b], h * 1 + 0, (h.T).T.sum(axis=1)


def test_a_raw_graph_is_not_mutated():
    x, _, y, z = _mlp_like()
    before = _graph_state([y, z])
    compile_to_onnx([x], outputs=[y, z])
    assert _graph_state([y, z]) == before


def test_a_function_graph_is_not_mutated():
    x, shared, y, z = _mlp_like()
    fg = FunctionGraph([x, *shared], [y, z], clone=False)
    before = _graph_state(fg.outputs, fg)
    compile_to_onnx(fg)
    assert _graph_state(fg.outputs, fg) == before


def test_a_compiled_function_is_not_mutated():
    x, _, y, z = _mlp_like()
    fn = pytensor.function([x], [y, z])
    fg = fn.maker.fgraph
    before = _graph_state(fg.outputs, fg)
    compile_to_onnx(fn)
    assert _graph_state(fg.outputs, fg) == before
    xv = _x()
    for got, want in zip(compile_to_onnx(fn).run(xv), fn(xv)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# -- plugin passes from entry points --------------------------------------------------------
PLUGIN_SOURCE = '''
from dataclasses import dataclass

from passes import Pass

CALLS = []


@dataclass(frozen=True)
class NegateOutputs(Pass):
    """Replace every graph output y by neg(y)."""

    name = "{name}"

    def run(self, graph):
        CALLS.append(len(graph))
        graph.set_outputs([graph.add("neg", [v]) for v in graph.outputs])
        return True
'''


def _install_plugin(tmp_path, monkeypatch, module: str, pass_name: str, entry_name: str | None = None):
    """A real distribution in ``tmp_path``: a module with a Pass subclass plus
    its dist-info (METADATA, entry_points.txt), on sys.path, with the pass
    loader's cache and registry reset for this test."""
    (tmp_path / f"{module}.py").write_text(PLUGIN_SOURCE.replace("{name}", pass_name))
    info = tmp_path / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(f"""\
        [pytensor_onnx.passes]
        {entry_name or pass_name} = {module}:NegateOutputs
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(passes.base, "_entry_points_loaded", False)
    monkeypatch.setattr(passes.base, "_PASSES", dict(passes.base._PASSES))
    monkeypatch.delitem(sys.modules, module, raising=False)


def test_a_plugin_pass_is_found_by_name(tmp_path, monkeypatch):
    _install_plugin(tmp_path, monkeypatch, "my_onnx_plugin", "my-plugin-pass")
    x = pt.vector("x", dtype="float64")
    compiled = compile_to_onnx([x], outputs=[x * 2], passes=["my-plugin-pass"])
    assert len(sys.modules["my_onnx_plugin"].CALLS) == 1  # ran once, on the lowered graph
    assert [r.name for r in compiled.history] == ["lowered", "my-plugin-pass"]
    xv = np.array([0.0, 1.0, -2.0])
    np.testing.assert_array_equal(compiled.run(xv)[0], -(xv * 2))
    assert "my-plugin-pass" in passes.base.registered_passes()


def test_a_plugin_reusing_a_builtin_name_is_an_error(tmp_path, monkeypatch):
    _install_plugin(tmp_path, monkeypatch, "clashing_onnx_plugin", "cse")
    with pytest.raises(ValueError, match="'cse' is registered twice"):
        get_pass("cse")


def test_a_plugin_whose_entry_name_differs_from_its_pass_name_is_an_error(tmp_path, monkeypatch):
    _install_plugin(tmp_path, monkeypatch, "misnamed_onnx_plugin", "real-name", entry_name="other-name")
    with pytest.raises(ValueError, match="other-name.*real-name"):
        get_pass("dce")
