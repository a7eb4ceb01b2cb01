"""The typed SSA IR of pytensor-onnx: types, values, nodes, graphs, op
definitions, text printer/parser, verifier and reference interpreter."""

from ir.core import Graph, Node, Origin, Use, Value
from ir.types import DType, Dim, TensorType
from ir import ops
from ir.ops import OpDef, OpError, get_op

__all__ = ["DType", "Dim", "Graph", "Node", "OpDef", "OpError", "Origin", "TensorType", "Use", "Value", "get_op", "ops"]
