"""Differential fuzzer: seeded random PyTensor programs compiled to ONNX and
compared with PyTensor's default compiled mode (``generate``, ``run_case``,
``shrink``, ``fuzz``; ``pytensor-onnx fuzz --seed S --n N`` on the command
line). Families of programs (``FAMILIES``): random op chains
(``generate``) and random scans with nested gradients
(``generate_scan_grad``, ``--family scan-grad``)."""

from compiler.tools.fuzz.generate import Program, edge_data, generate
from compiler.tools.fuzz.runner import (FAMILIES, CaseResult, FuzzReport, build, compare, fuzz, reference_mode, run_case,
                                  shrink)
from compiler.tools.fuzz.scan_grads import generate_scan_grad

__all__ = ["FAMILIES", "CaseResult", "FuzzReport", "Program", "build", "compare", "edge_data", "fuzz", "generate",
           "generate_scan_grad", "reference_mode", "run_case", "shrink"]
