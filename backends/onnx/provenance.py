"""Provenance of emitted ONNX nodes: which PyTensor ops and user source
lines each node computes.

Every ONNX node built while emitting an IR node carries that node's
``origins`` (``ir.core.Origin``: PyTensor op, ``file:line (code)`` from the
variable's ``tag.trace``), kept through the passes (a fused node lists all
of the nodes it replaced):

- ``metadata_props["pytensor_onnx.origins"]``: a JSON list of
  ``{"op": ..., "source": ...}`` objects (machine-readable);
- ``doc_string``: one ``op at source`` line per origin (what Netron shows).
"""

from __future__ import annotations

import json
from typing import Sequence

import onnx

ORIGINS_KEY = "pytensor_onnx.origins"


def stamp(onnx_node, origins: Sequence) -> None:
    """Record ``origins`` (``ir.core.Origin`` tuples) on an ``onnx_ir`` node."""
    if not origins:
        return
    onnx_node.metadata_props[ORIGINS_KEY] = json.dumps([{"op": o.op, "source": o.source} for o in origins])
    onnx_node.doc_string = "\n".join(f"{o.op or '?'} at {o.source or '?'}" for o in origins)


def node_origins(node: onnx.NodeProto) -> list[dict]:
    """The origins recorded on a serialized ONNX node (``[]`` if none): a
    list of ``{"op": str | None, "source": str | None}``."""
    for prop in node.metadata_props:
        if prop.key == ORIGINS_KEY:
            return json.loads(prop.value)
    return []
