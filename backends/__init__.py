"""Back ends of pytensor-onnx: code generators from the IR. ``backends.onnx``
emits ONNX models."""
