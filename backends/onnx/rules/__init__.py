"""Emission rules, one module per op family. Importing this package
registers every rule in ``backends.onnx.registry.EMITTERS``."""

from backends.onnx.rules import (arithmetic, control_flow, elementwise, mathfn, nn, reduction,  # noqa: F401
                                 polygamma_f64, polygamma_order_f64, random, shape, special, transcendental)
