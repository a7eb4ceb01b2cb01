"""``make_session``: an onnxruntime CPU session for an emitted model."""

from __future__ import annotations

import onnx
import onnxruntime as ort


def make_session(model: onnx.ModelProto) -> ort.InferenceSession:
    """An ``onnxruntime.InferenceSession`` for ``model`` on
    ``CPUExecutionProvider``, built from the serialized bytes with graph
    optimizations at onnxruntime's default level.

    Raises:
        onnxruntime's errors when it rejects the model.
    """
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
