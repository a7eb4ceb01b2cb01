"""Reference interpreter: evaluates an IR graph with NumPy, using each op's
``evaluate`` from the registry. No ONNX involved; passes are checked by
running a graph here before and after them.

Ops with nested graphs (``OpDef.subgraph_roles``: ``loop``, ``if``) get the
node's subgraphs and ``evaluate`` itself as the callback that runs them;
their bodies are closed (explicit capture), so a body runs on its own inputs."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ir.core import Graph, Value
from ir.ops import get_op
from ir.types import dims_compatible


class InterpreterError(RuntimeError):
    """An op produced a value that disagrees with its declared type, or the
    inputs do not match the graph's input types."""


def evaluate(graph: Graph, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run ``graph`` on ``inputs`` (one array per graph input, in order).

    Returns:
        One NumPy array per graph output, in order (values of ops with
        nested graphs are computed by running those graphs here too).

    Raises:
        InterpreterError: an input or a computed value disagrees with its
            declared dtype or a static dim.
    """
    if len(inputs) != len(graph.inputs):
        raise InterpreterError(f"graph {graph.name} takes {len(graph.inputs)} inputs, got {len(inputs)}")
    env: dict[Value, np.ndarray] = {v: v.const for v in graph.constants.values()}
    for value, array in zip(graph.inputs, inputs):
        env[value] = _checked(value, np.asarray(array), "input")
    with np.errstate(all="ignore"):
        for node in graph:
            args = [env[v] for v in node.inputs]
            opdef = get_op(node.op)
            if opdef.subgraph_roles:
                results = opdef.evaluate(args, node.attrs, node.subgraphs, evaluate)
            else:
                results = opdef.evaluate(args, node.attrs)
            for out, array in zip(node.outputs, results):
                env[out] = _checked(out, np.asarray(array), node.op)
    return [env[v] for v in graph.outputs]


def _checked(value: Value, array: np.ndarray, where: str) -> np.ndarray:
    t = value.type
    if array.dtype != t.dtype.numpy:
        raise InterpreterError(f"{where}: %{value.name} is {array.dtype}, declared {t}")
    if array.ndim != t.rank or not all(dims_compatible(d, n) for d, n in zip(t.shape, array.shape)):
        raise InterpreterError(f"{where}: %{value.name} has shape {array.shape}, declared {t}")
    return array
