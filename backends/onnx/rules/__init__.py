"""Emission rules, one module per op family. Importing this package
registers every rule in ``backends.onnx.registry.EMITTERS``."""

from backends.onnx.rules import arithmetic, elementwise, mathfn, reduction, shape, transcendental  # noqa: F401
