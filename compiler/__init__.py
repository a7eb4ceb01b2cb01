"""pytensor-onnx's compiler: lowering from PyTensor and the ``compile_to_onnx`` driver."""

from compiler.driver import CompiledModel, compile_to_onnx
from compiler.errors import CompileError, UnsupportedOpsError
from compiler.mode import ONNX_MODE, ONNXLinker, compiled_model, onnx_mode  # registers mode "ONNX"

__all__ = ["CompileError", "CompiledModel", "ONNXLinker", "ONNX_MODE", "UnsupportedOpsError", "compile_to_onnx",
           "compiled_model", "onnx_mode"]
