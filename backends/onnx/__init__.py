"""The ONNX back end: ``emit_model`` turns an IR graph into an ONNX opset-18
``ModelProto``; ``save_model`` writes it (external data past 2 GB);
``make_session`` runs it in onnxruntime on the CPU.

Emission rules live in ``backends/onnx/rules``, one module per op family,
registered in ``EMITTERS`` by IR op name.
"""

from backends.onnx.registry import EMITTERS, EmitError, emits
from backends.onnx.context import EmitOptions
from backends.onnx.emitter import build_model, emit_model
from backends.onnx.runtime import make_session
from backends.onnx.serialize import PROTOBUF_LIMIT, initializer_bytes, save_ir_model, save_model

__all__ = ["EMITTERS", "PROTOBUF_LIMIT", "EmitError", "EmitOptions", "build_model", "emit_model", "emits",
           "initializer_bytes", "make_session", "save_ir_model", "save_model"]
