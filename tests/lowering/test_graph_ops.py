"""Differential tests of OpFromGraph inlining: multi-output, the same op
applied twice, nesting, implicit shared-variable inputs, and errors naming
the unsupported inner op."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.builders import OpFromGraph

from compiler import UnsupportedOpsError, compile_to_onnx
from tests.helpers import check_pytensor


def _affine_op():
    a, b = pt.dvector("a"), pt.dvector("b")
    return OpFromGraph([a, b], [a * 2.0 + b, pt.exp(a) - b.sum()])


def test_multi_output_op_applied_twice():
    """One OpFromGraph (one inner graph) used by two Apply nodes."""
    op = _affine_op()
    x, y = pt.dvector("x"), pt.dvector("y")
    first, second = op(x, y)
    third, _ = op(first, x)
    check_pytensor([x, y], [first, second, third], [np.array([1.0, -0.5, 2.0]), np.array([0.25, 3.0, -1.0])])


def test_nested_op_from_graph():
    a = pt.fmatrix("a")
    inner = OpFromGraph([a], [pt.tanh(a) @ a.T])
    b, c = pt.fmatrix("b"), pt.fmatrix("c")
    outer = OpFromGraph([b, c], [inner(b) + inner(c).max(axis=0)])
    x, y = pt.fmatrix("x"), pt.fmatrix("y")
    values = [np.float32([[0.5, -1.0], [2.0, 0.0]]), np.float32([[1.0, 1.5], [-0.5, 0.25]])]
    check_pytensor([x, y], [outer(x, y)], values)


def test_implicit_shared_input_is_baked():
    w = pytensor.shared(np.array([1.5, -2.0, 0.5]), name="w")
    a = pt.dvector("a")
    op = OpFromGraph([a], [a * w])
    x = pt.dvector("x")
    compiled = check_pytensor([x], [op(x) + 1.0], [np.array([2.0, 4.0, -1.0])])
    assert "w" in compiled.ir.constants


def test_unsupported_inner_op_is_named():
    a = pt.dvector("a")
    op = OpFromGraph([a], [pt.angle(a) + 1.0])
    x = pt.dvector("x")
    with pytest.raises(UnsupportedOpsError, match="angle"):
        compile_to_onnx([x], outputs=[op(x)])


def test_pytensor_ops_built_on_op_from_graph():
    """Einsum, Pad and KroneckerProduct are OpFromGraph subclasses: inlined."""
    a, b, v = pt.dtensor3("a"), pt.dmatrix("b"), pt.dvector("v")
    rng = np.random.default_rng(2)
    outs = [pt.einsum("bij,jk->bik", a, b), pt.pad(v, (1, 2), mode="constant"), pt.linalg.kron(b, b)]
    check_pytensor([a, b, v], outs, [rng.normal(size=(2, 3, 4)), rng.normal(size=(4, 2)), np.array([0.5, 1.5])])
