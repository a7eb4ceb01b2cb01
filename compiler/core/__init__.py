"""The compiler core: the ``compile_to_onnx`` driver and what it needs around
the pipeline (argument and input validation, shape options, pass checking,
the report). It depends on the PyTensor front end (``compiler.lowering``),
``passes``, ``backends`` and ``ir``; never on ``compiler.tools`` or
``compiler.nn``."""
