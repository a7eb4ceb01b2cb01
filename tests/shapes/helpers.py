"""Helpers of the shape tests: the pass pipeline they compile with, an
oracle that checks every declared dim against the values a graph computes,
the dims of an ONNX value, and the shape-arithmetic nodes of an ONNX model."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import onnx

from ir import Graph, get_op
from ir import symbolic as sym

# Where shape-inference and shape-folding go in a pipeline (passes/__init__.py's
# DEFAULT_PIPELINE is the lead's): precise types first, folding after the
# constant folding that makes static shapes constant, a last refinement after
# the rewrites.
SHAPE_PIPELINE = ["shape-inference", "canonicalize", "constant-folding", "shape-folding", "canonicalize",
                  "cse", "dce", "shape-inference"]


def bind_sizes(graph: Graph, inputs: Sequence[np.ndarray]) -> dict[str, int]:
    """The size of every named input dim of ``graph`` in ``inputs``; asserts
    that a name has one size."""
    sizes: dict[str, int] = {}
    for value, array in zip(graph.inputs, inputs, strict=True):
        for d, n in zip(value.shape, np.shape(array), strict=True):
            if isinstance(d, str):
                assert sizes.setdefault(d, n) == n, f"dim {d} is both {sizes[d]} and {n}"
    return sizes


def assert_declared_shapes(graph: Graph, inputs: Sequence[np.ndarray],
                           sizes: dict[str, int] | None = None) -> list[np.ndarray]:
    """Evaluate ``graph`` node by node (each op's NumPy reference) and assert
    that every declared dim of every value, expressions included, equals the
    computed array's size. The sizes of the dim names are ``sizes``, else
    read from the inputs. Returns the outputs."""
    sizes = sizes if sizes is not None else bind_sizes(graph, inputs)
    env = {v: v.const for v in graph.constants.values()}
    env.update(zip(graph.inputs, (np.asarray(a) for a in inputs)))
    with np.errstate(all="ignore"):
        for node in graph:
            results = get_op(node.op).evaluate([env[v] for v in node.inputs], node.attrs)
            for out, array in zip(node.outputs, results, strict=True):
                array = np.asarray(array)
                declared = tuple(None if d is None else sym.evaluate(d, sizes) for d in out.shape)
                assert len(declared) == array.ndim and all(
                    d is None or d == n for d, n in zip(declared, array.shape)), (
                    f"{node.op} output declared {out.type}, which at {sizes} is {declared}, "
                    f"computes shape {array.shape}")
                env[out] = array
    return [env[v] for v in graph.outputs]


def onnx_dims(value_info) -> list:
    """The dims of an ONNX ValueInfoProto: ints, dim_param strings, or None."""
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in value_info.type.tensor_type.shape.dim]


SHAPE_SOURCES = {"Shape", "Size"}
SHAPE_OPERANDS = {"Reshape": [1], "Expand": [1], "Unsqueeze": [1], "Squeeze": [1], "Slice": [1, 2, 3, 4],
                  "Tile": [1], "Pad": [1], "ConstantOfShape": [0], "Range": [0, 1, 2]}


def shape_arithmetic(model: onnx.ModelProto) -> list[str]:
    """The nodes of ``model`` that compute shapes at run time: Shape and Size,
    every node whose inputs are all such computations or initializers (a
    Gather, Concat or Mul of shapes), and shape operands (of Reshape, Expand,
    Unsqueeze, Slice, Range, ...) that are not initializers."""
    initializers = {t.name for t in model.graph.initializer}
    computed: set[str] = set()
    found = []
    for node in model.graph.node:
        inputs = [i for i in node.input if i]
        if node.op_type in SHAPE_SOURCES or (inputs and any(i in computed for i in inputs)
                                             and all(i in computed or i in initializers for i in inputs)):
            found.append(node.op_type)
            computed.update(node.output)
        for i in SHAPE_OPERANDS.get(node.op_type, []):
            if i < len(node.input) and node.input[i] and node.input[i] not in initializers:
                found.append(f"{node.op_type} with computed input {i}")
    return found
