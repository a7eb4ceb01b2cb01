"""Every error the compiler raises about a graph derives from one root,
``ir.errors.CompileError``, and keeps the builtin base it had before."""

import pytensor.tensor as pt
import pytest

from backends.onnx.registry import EmitError
from compiler import CompileError, compile_to_onnx
from compiler.lowering.errors import LoweringError, UnsupportedOpsError
from compiler.core.pass_check import PassCheckError
from compiler.core.shapes import DynamicShapeError, InputShapeError
from ir import errors
from ir.parser import IRParseError, parse_graph
from ir.verifier import VerificationError


@pytest.mark.parametrize("cls, builtin", [
    (errors.OpError, ValueError), (IRParseError, ValueError), (VerificationError, ValueError),
    (errors.ShapeInferenceError, ValueError), (EmitError, ValueError), (UnsupportedOpsError, Exception),
    (LoweringError, Exception), (InputShapeError, Exception), (DynamicShapeError, Exception),
    (PassCheckError, AssertionError)])
def test_every_error_derives_from_compile_error(cls, builtin):
    assert issubclass(cls, CompileError) and issubclass(cls, builtin)
    assert CompileError is errors.CompileError


def test_parse_error_is_caught_as_compile_error():
    with pytest.raises(CompileError, match="1:"):
        parse_graph("graph g( {")


def test_unsupported_op_is_caught_as_compile_error():
    x = pt.dvector("x")
    with pytest.raises(CompileError, match="cannot be exported"):
        compile_to_onnx([x], outputs=[pt.real(x.astype("complex128") * 2)])  # complex values: unsupported
