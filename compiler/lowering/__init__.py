"""Lowering from PyTensor graphs to the IR.

Importing this package registers every rule module (one per PyTensor op
family). ``lower(graph_spec(g))`` does the work; see ``lower.py``.
"""

from compiler.lowering.lower import GraphSpec, LoweredGraph, graph_spec, lower
from compiler.lowering.registry import find_rule, lowers, supported_op_types
from compiler.lowering import rules  # noqa: F401  (registers the rules)

__all__ = ["GraphSpec", "LoweredGraph", "find_rule", "graph_spec", "lower", "lowers", "supported_op_types"]
