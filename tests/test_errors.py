"""Errors ``compile_to_onnx`` reports: every unsupported op at once with the
user's source lines, and a broken pass caught by the verifier between
passes."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt
import pytest

import passes.base
from compiler import UnsupportedOpsError, compile_to_onnx
from ir import DType
from ir.verifier import VerificationError
from passes import Pass, register_pass


def _unsupported_elemwise():
    """An Elemwise of a scalar op no lowering knows (named ``Mystery``)."""
    import pytensor.scalar as ps
    from pytensor.tensor.elemwise import Elemwise

    class Mystery(ps.UnaryScalarOp):
        def impl(self, x):
            return x * 3.0

    return Elemwise(Mystery(ps.upgrade_to_float, name="mystery"), name="Mystery")


mystery = _unsupported_elemwise()


def _line() -> int:
    """The caller's line number in this file."""
    return inspect.currentframe().f_back.f_lineno


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # PyTensor 3 on RNG-less random variables
def test_all_unsupported_ops_are_reported_once_with_counts_and_lines():
    x = pt.vector("x", dtype="float64")
    r1, r1_line = pt.random.normal(size=3), _line()
    g1, g1_line = mystery(x), _line()
    r2, r2_line = pt.random.normal(size=3), _line()
    g2, g2_line = mystery(x + 1), _line()
    with pytest.raises(UnsupportedOpsError) as info:
        compile_to_onnx([x], outputs=[r1 + g1, r2 * g2])
    err = info.value
    message = str(err)
    assert len(err.occurrences) == 4
    assert message.startswith("4 node(s) cannot be exported to ONNX (2 unsupported op kind(s)):")
    assert "Mystery x2" in message
    assert "normal_rv" in message and message.count(" x2: ") == 2
    for line in (r1_line, g1_line, r2_line, g2_line):
        assert f"{__file__}:{line}" in message, f"line {line} missing from:\n{message}"
    sources = {occ.source.split(" (")[0] for occ in err.occurrences}
    assert sources == {f"{__file__}:{n}" for n in (r1_line, g1_line, r2_line, g2_line)}


def test_supported_nodes_downstream_of_an_unsupported_op_are_not_reported():
    x = pt.vector("x", dtype="float64")
    y = pt.exp(mystery(x)) + 1
    with pytest.raises(UnsupportedOpsError) as info:
        compile_to_onnx([x], outputs=[y])
    assert [occ.op for occ in info.value.occurrences] == ["Mystery"]


def test_unsupported_nodes_downstream_of_an_unsupported_op_are_reported():
    x = pt.vector("x", dtype="float64")
    y = mystery(pt.exp(mystery(x)) + 1)
    with pytest.raises(UnsupportedOpsError) as info:
        compile_to_onnx([x], outputs=[y])
    occ = info.value.occurrences
    assert [o.op for o in occ] == ["Mystery", "Mystery"]
    assert "reads the result" not in occ[0].reason and "reads the result of an unsupported op" in occ[1].reason


@dataclass(frozen=True)
class RetypeFirstNode(Pass):
    """Broken on purpose: declares the first node's output float64."""

    name = "retype-first-node"

    def run(self, graph):
        out = graph.nodes[0].outputs[0]
        out.type = out.type.with_dtype(DType.FLOAT64)
        return True


@dataclass(frozen=True)
class UnlinkLastNode(Pass):
    """Broken on purpose: drops the last node from the node list without
    updating use lists (bypassing ``Graph.erase``)."""

    name = "unlink-last-node"

    def run(self, graph):
        graph._unlink(graph.nodes[-1])
        return True


@pytest.mark.parametrize("broken, expected", [
    (RetypeFirstNode, r"after retype-first-node: exp node \(%\S+\): output 0 %\S+ is declared "
                      r"f64\[x_dim0\] but the type rule gives f32\[x_dim0\]"),
    (UnlinkLastNode, r"after unlink-last-node: %\S+ has a dangling use: a mul node \(input \d\) "
                     r"that is not in the graph"),
])
def test_the_verifier_catches_a_broken_pass_between_passes(monkeypatch, broken, expected):
    monkeypatch.setattr(passes.base, "_PASSES", dict(passes.base._PASSES))
    register_pass(broken)
    x = pt.vector("x", dtype="float32")
    y = pt.exp(x) * np.float32(3)
    with pytest.raises(VerificationError, match=expected) as info:
        compile_to_onnx([x], outputs=[y], passes=["canonicalize", broken.name, "dce"], verify_each_pass=True)
    assert "\n>> " in str(info.value), "the message shows the IR with the failing line marked"


def test_the_default_structural_check_catches_a_broken_structure_after_the_passes(monkeypatch):
    monkeypatch.setattr(passes.base, "_PASSES", dict(passes.base._PASSES))
    register_pass(UnlinkLastNode)
    x = pt.vector("x", dtype="float32")
    y = pt.exp(x) * np.float32(3)
    with pytest.raises(VerificationError, match=r"after the passes: %\S+ has a dangling use: a mul node"):
        compile_to_onnx([x], outputs=[y], passes=["canonicalize", UnlinkLastNode.name])


def test_a_list_of_inputs_without_outputs_names_outputs():
    x = pt.vector("x")
    with pytest.raises(TypeError, match=r"got a list of inputs but no outputs: pass them as outputs=, as in "
                                        r"compile_to_onnx\(\[x\], outputs=\[y\]\)"):
        compile_to_onnx([x])
    with pytest.raises(TypeError, match=r"passes\[0\] must be a Pass .* the second positional argument is passes: "
                                        r"give the outputs as outputs=\[...\]"):
        compile_to_onnx([x], [pt.exp(x)])
