"""Differential fuzzer: seeded random PyTensor programs compiled to ONNX and
compared with PyTensor's default compiled mode (``generate``, ``run_case``,
``shrink``, ``fuzz``; ``pytensor-onnx fuzz --seed S --n N`` on the command
line)."""

from compiler.tools.fuzz.generate import Program, edge_data, generate
from compiler.tools.fuzz.runner import CaseResult, FuzzReport, build, compare, fuzz, reference_mode, run_case, shrink

__all__ = ["CaseResult", "FuzzReport", "Program", "build", "compare", "edge_data", "fuzz", "generate",
           "reference_mode", "run_case", "shrink"]
