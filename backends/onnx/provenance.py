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


def origin_texts(origins: Sequence, cache: dict | None = None) -> tuple[str, str] | None:
    """The ``(metadata value, doc_string)`` recording ``origins``
    (``ir.core.Origin`` tuples), or None when there are none. ``cache`` (a
    dict the caller keeps for one model) remembers the texts per origins
    tuple: many nodes share theirs (one PyTensor node emitted as several
    ONNX nodes, or one source line building many)."""
    if not origins:
        return None
    texts = cache.get(origins) if cache is not None else None
    if texts is None:
        texts = (json.dumps([{"op": o.op, "source": o.source} for o in origins]),
                 "\n".join(f"{o.op or '?'} at {o.source or '?'}" for o in origins))
        if cache is not None:
            cache[origins] = texts
    return texts


def stamp(onnx_node, origins: Sequence, cache: dict | None = None) -> None:
    """Record ``origins`` on an ``onnx_ir`` node (``origin_texts``, stored in
    its ``metadata_props`` and ``doc_string``); nothing when there are none."""
    texts = origin_texts(origins, cache)
    if texts is not None:
        onnx_node.metadata_props[ORIGINS_KEY], onnx_node.doc_string = texts


def node_origins(node: onnx.NodeProto) -> list[dict]:
    """The origins recorded on a serialized ONNX node (``[]`` if none): a
    list of ``{"op": str | None, "source": str | None}``."""
    for prop in node.metadata_props:
        if prop.key == ORIGINS_KEY:
            return json.loads(prop.value)
    return []
