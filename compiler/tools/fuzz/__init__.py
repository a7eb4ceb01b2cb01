"""Differential fuzzer: seeded random PyTensor programs compiled to ONNX and
compared with PyTensor's default compiled mode (``generate``, ``run_case``,
``shrink``, ``fuzz``; ``pytensor-onnx fuzz --seed S --n N`` on the command
line). Families of programs (``FAMILIES``): random op chains
(``generate``), random scans with nested gradients (``scan_grads.py``),
idioms (``idioms.py``), PyMC log-densities and small models
(``pymc_logps.py``, ``pymc_models.py``) and random variables
(``random_draws.py``)."""

from compiler.tools.fuzz.generate import Program, edge_data, generate
from compiler.tools.fuzz.reference import CaseResult, build, compare, reference_mode
from compiler.tools.fuzz.runner import FAMILIES, FuzzReport, fuzz, run_case, shrink
from compiler.tools.fuzz.scan_grads import generate_scan_grad

__all__ = ["FAMILIES", "CaseResult", "FuzzReport", "Program", "build", "compare", "edge_data", "fuzz", "generate",
           "generate_scan_grad", "reference_mode", "run_case", "shrink"]
