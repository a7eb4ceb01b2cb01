"""IR passes. ``DEFAULT_PIPELINE`` is the ordered list ``compile_to_onnx`` runs
when no passes are given; read it top to bottom."""

from passes.base import (ENTRY_POINT_GROUP, Pass, PassRecord, get_pass, register_pass, registered_passes,
                         resolve_passes, run_pipeline)
from passes import dce  # noqa: F401  (register the built-in passes)

DEFAULT_PIPELINE: list[str] = [
    "dce",
]

__all__ = ["DEFAULT_PIPELINE", "ENTRY_POINT_GROUP", "Pass", "PassRecord", "get_pass", "register_pass",
           "registered_passes", "resolve_passes", "run_pipeline"]
