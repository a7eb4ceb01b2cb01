"""Provenance of emitted ONNX nodes: which PyTensor ops and user source
lines each node computes.

Every ONNX node built while emitting an IR node carries that node's
``origins`` (``ir.core.Origin``: PyTensor op, ``file:line (code)`` from the
variable's ``tag.trace``), kept through the passes (a fused node lists all
of the nodes it replaced):

- ``metadata_props["pytensor_onnx.origins"]``: a JSON list of
  ``{"op": ..., "source": ...}`` objects (machine-readable);
- ``doc_string``: one ``op at source`` line per origin (what Netron shows).

A model file is shipped to others, so the source files are named by
``SourcePaths`` (``EmitOptions.provenance``): relative to a root (default:
the current directory; a file outside it relative to the ``sys.path`` entry
holding it, as a module path; else its base name), absolute, or left out.
The same model compiled in two checkouts is then byte-identical.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Sequence

import onnx

ORIGINS_KEY = "pytensor_onnx.origins"
PROVENANCE_MODES = ("relative", "absolute", "none")
_SOURCE = re.compile(r"(?P<path>.+?):(?P<line>\d+)(?P<code> \(.*\))?", re.DOTALL)


class SourcePaths:
    """Rewrites the file of an origin's source text (``path:line (code)``,
    ``ir.core.Origin.source``) for a model file.

    ``mode``: ``"relative"`` (an absolute path under ``root`` becomes
    relative to it, ``/`` separated; one outside ``root`` becomes relative to
    the longest ``sys.path`` entry holding it, e.g. ``pytensor/tensor/math.py``;
    else its base name: never an absolute path), ``"absolute"`` (unchanged)
    or ``"none"`` (``__call__`` is not used: ``EmitContext`` stamps no
    source). ``root``: a directory, default the current directory when
    constructed. Texts are cached per source (one per user line)."""

    def __init__(self, mode: str = "relative", root: str | os.PathLike | None = None) -> None:
        if mode not in PROVENANCE_MODES:
            raise ValueError(f"provenance must be one of {', '.join(map(repr, PROVENANCE_MODES))}; got {mode!r}")
        self.mode = mode
        self.root = os.path.abspath(os.fspath(root)) if root is not None else os.getcwd()
        self._texts: dict[str, str] = {}

    def __call__(self, source: str | None) -> str | None:
        if source is None or self.mode == "absolute":
            return source
        text = self._texts.get(source)
        if text is None:
            match = _SOURCE.fullmatch(source)
            if match is None or not os.path.isabs(match["path"]):
                text = source  # "<stdin>:3", a relative path: nothing to hide
            else:
                text = f"{self.relative(match['path'])}:{match['line']}{match['code'] or ''}"
            self._texts[source] = text
        return text

    def relative(self, path: str) -> str:
        """``path`` (absolute) relative to ``root``, else to the longest
        ``sys.path`` entry holding it, else its base name."""
        path = os.path.normpath(path)
        for base in (self.root, *sorted((os.path.abspath(p) for p in sys.path if p), key=len, reverse=True)):
            if path.startswith(base.rstrip(os.sep) + os.sep):
                return os.path.relpath(path, base).replace(os.sep, "/")
        return os.path.basename(path)


def origin_texts(origins: Sequence, cache: dict | None = None,
                 paths: SourcePaths | None = None) -> tuple[str, str] | None:
    """The ``(metadata value, doc_string)`` recording ``origins``
    (``ir.core.Origin`` tuples), or None when there are none. ``cache`` (a
    dict the caller keeps for one model) remembers the texts per origins
    tuple: many nodes share theirs (one PyTensor node emitted as several
    ONNX nodes, or one source line building many). ``paths`` rewrites each
    source's file (None: as recorded, absolute)."""
    if not origins:
        return None
    texts = cache.get(origins) if cache is not None else None
    if texts is None:
        rows = [(o.op, paths(o.source) if paths is not None else o.source) for o in origins]
        texts = (json.dumps([{"op": op, "source": source} for op, source in rows]),
                 "\n".join(f"{op or '?'} at {source or '?'}" for op, source in rows))
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
