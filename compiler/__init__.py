"""pytensor-onnx's compiler: lowering from PyTensor and the ``compile_to_onnx`` driver."""

from compiler.driver import CompiledModel, compile_to_onnx
from compiler.errors import CompileError, UnsupportedOpsError

__all__ = ["CompileError", "CompiledModel", "UnsupportedOpsError", "compile_to_onnx"]
