"""Tests of the ``compiler.nn`` building blocks and of the issue's CNN
acceptance criteria, plus the helpers they share."""

from __future__ import annotations

import numpy as np

from ir import get_op
from ir.parser import parse_graph


def ir_reference(op: str, arrays, **attrs) -> np.ndarray:
    """The NumPy reference semantics of IR op ``op`` (``ir/ops/nn.py``,
    written to the ONNX operator specs) on ``arrays`` with ``attrs``."""
    opdef = get_op(op)
    return opdef.evaluate([np.asarray(a) for a in arrays], opdef.normalize_attrs(attrs))[0]


def lowered_ops(compiled) -> list[str]:
    """The IR ops of ``compiled``'s graph right after lowering, in order."""
    return [node.op for node in parse_graph(compiled.history[0].ir_text)]


def onnx_ops(compiled) -> list[str]:
    """The ONNX op types of ``compiled``'s main graph, in order."""
    return [node.op_type for node in compiled.model.graph.node]


def pads(p: int) -> tuple[int, int, int, int]:
    """Symmetric padding ``p`` in ONNX order (h_begin, w_begin, h_end, w_end)."""
    return (p, p, p, p)
