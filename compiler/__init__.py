"""pytensor-onnx's compiler, by stage: ``compiler.lowering`` (the PyTensor
front end: PyTensor graph -> IR), ``compiler.core`` (the ``compile_to_onnx``
driver, validation, shape options, pass checking, the report) and, on top,
``compiler.mode`` (the PyTensor mode "ONNX", registered on import),
``compiler.tools`` (CLI, demos, browser glue, fuzzer) and ``compiler.nn``
(the model-building library). Importing this package loads the compile path
and the mode, never the tools or ``nn``."""

from compiler.core.driver import CompiledModel, compile_to_onnx
from compiler.lowering.errors import CompileError, UnsupportedOpsError
from compiler.lowering.rules.random_key import random_key
from compiler.mode import ONNX_MODE, ONNXLinker, compiled_model, onnx_mode  # registers mode "ONNX"

__all__ = ["CompileError", "CompiledModel", "ONNXLinker", "ONNX_MODE", "UnsupportedOpsError", "compile_to_onnx",
           "compiled_model", "onnx_mode", "random_key"]
