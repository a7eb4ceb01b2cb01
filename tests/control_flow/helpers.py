"""Helpers of the control-flow tests: one PyTensor function computing every
acceptance model (``Bundle``), the differential check of a compiled model,
the ONNX op inventory of a model (bodies included), and ``check_scan``, a
scan graph exported from the raw graph and from a compiled function, with
and without passes, against PyTensor's Python implementation."""

from __future__ import annotations

import numpy as np
import onnx
import pytensor
from pytensor.compile.mode import Mode
from pytensor.graph.traversal import io_toposort
from pytensor.link.vm import VMLinker
from pytensor.scan.op import Scan

from compiler import compile_to_onnx
from compiler.tools.fuzz import reference_mode
from ir.interpreter import evaluate
from ir.parser import parse_graph
from tests.control_flow import models
from tests.helpers import assert_same, roundtrip_text

C_MODE = Mode(linker="cvm", optimizer="fast_run")


class Bundle:
    """Every model of ``models.ALL`` (symbolic T) and one PyTensor function
    computing all their outputs, compiled in ``mode`` (one compilation
    serves every test), with each model's slice of inputs and outputs."""

    def __init__(self, mode):
        self.models = [build(None) for build in models.ALL]
        self.fn = pytensor.function([v for m in self.models for v in m.inputs],
                                    [v for m in self.models for v in m.outputs], mode=mode)
        self.inputs, self.outputs, i, o = {}, {}, 0, 0
        for m in self.models:
            self.inputs[m.name] = slice(i, i + len(m.inputs))
            self.outputs[m.name] = slice(o, o + len(m.outputs))
            i, o = i + len(m.inputs), o + len(m.outputs)

    def model(self, name: str) -> models.Model:
        return next(m for m in self.models if m.name == name)

    def values(self, T: int) -> list[np.ndarray]:
        """Input values of every model at length ``T``."""
        return [a for m in self.models for a in m.values(T)]

    def reference(self, name: str, T: int, values: list | None = None) -> list[np.ndarray]:
        """PyTensor's outputs of model ``name`` at length ``T``, or for its
        inputs ``values`` when given."""
        inputs = self.values(T)
        if values is not None:
            inputs[self.inputs[name]] = values
        return [np.asarray(r) for r in self.fn(*inputs)[self.outputs[name]]]


def check(compiled, values, want, what: str, tolerance: float = 1e-12) -> None:
    """The model passes ONNX's full checker; onnxruntime, the final IR and
    the lowered IR (read back from its text) all give ``want`` (dtype and
    shape equal, values to ``tolerance``, relative and absolute); the IR
    text round-trips."""
    onnx.checker.check_model(compiled.model, full_check=True)
    lowered = parse_graph(compiled.history[0].ir_text)
    for where, got in (("onnxruntime", compiled.run(*values)), ("IR interpreter", evaluate(compiled.ir, values)),
                       ("lowered IR", evaluate(lowered, values))):
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, rtol=tolerance, atol=tolerance, what=f"{what}: {where} output {i}")
    roundtrip_text(compiled.ir)


def onnx_ops(model: onnx.ModelProto) -> list[str]:
    """Every ONNX op type in the model, control-flow bodies included."""
    ops, graphs = [], [model.graph]
    while graphs:
        g = graphs.pop()
        for node in g.node:
            ops.append(node.op_type)
            graphs += [a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
    return ops


# -- scans checked against PyTensor's Python implementation ----------------------------------
PY = Mode(VMLinker(use_cloop=False, c_thunks=False), None)  # the graph as written, Python thunks: nothing compiles
REWRITTEN = reference_mode("python")  # the default mode's rewrites (what compile_to_onnx(f) sees), Python thunks


def check_scan(inputs, outputs, values, what: str, *, function: bool = True, tol: float = 1e-12,
               unrolled: bool | None = None) -> list[np.ndarray]:
    """Export ``outputs`` with the default pipeline and with ``passes=[]``
    (the lowered IR: each scan a ``loop``), from the raw graph (against
    ``PY``) and, with ``function``, from a function compiled with the
    default mode's rewrites (against that function, ``REWRITTEN``).
    onnxruntime and the IR interpreter must give PyTensor's dtypes, shapes
    and values to ``tol`` (relative and absolute). ``unrolled`` True/False:
    the default pipeline must leave no loop / at least one. Scans in the
    graph should be built with ``mode=PY`` (their inner functions then
    compile nothing either). Returns PyTensor's raw-graph values."""
    want = [np.asarray(w) for w in pytensor.function(inputs, outputs, mode=PY)(*values)]
    has_scan = any(isinstance(node.op, Scan) for node in io_toposort(inputs, outputs))
    sources = [("raw graph", lambda passes: compile_to_onnx(inputs, outputs=outputs, passes=passes), want)]
    if function:
        fn = pytensor.function(inputs, outputs, mode=REWRITTEN)
        sources.append(("compiled function", lambda passes: compile_to_onnx(fn, passes=passes),
                        [np.asarray(w) for w in fn(*values)]))
    for source, build, reference in sources:
        for passes in (None, []):
            m = build(passes)
            if passes == [] and source == "raw graph":
                assert m.ir.contains_op("loop") == has_scan, f"{what}: the lowered IR has a loop per scan"
            elif passes is None and unrolled is not None:
                assert m.ir.contains_op("loop") != unrolled, f"{what}, {source}: unrolled is not {unrolled}"
            for where, got in (("onnxruntime", m.run(*values)), ("IR interpreter", evaluate(m.ir, values))):
                assert len(got) == len(reference)
                for k, (g, w) in enumerate(zip(got, reference)):
                    assert_same(g, w, rtol=tol, atol=tol, what=f"{what}, {source}, passes={passes}: {where} output {k}")
    return want
