"""IR passes. ``DEFAULT_PIPELINE`` is the ordered list ``compile_to_onnx`` runs
when no passes are given; read it top to bottom."""

from passes.base import (ENTRY_POINT_GROUP, Pass, PassRecord, get_pass, register_pass, registered_passes,
                         resolve_passes, run_pipeline)
from passes import canonicalize, constant_folding, cse, dce  # noqa: F401  (register the built-in passes)

DEFAULT_PIPELINE: list[str] = [
    # Bypass broadcast unsqueezes first, so a bias stays its own initializer
    # instead of being folded into a reshaped copy.
    "canonicalize",
    "constant-folding",
    # Folding makes new constants (ones, static shapes) the rules can use.
    "canonicalize",
    # Merge what lowering and folding duplicated, then drop the dead.
    "cse",
    "dce",
]

__all__ = ["DEFAULT_PIPELINE", "ENTRY_POINT_GROUP", "Pass", "PassRecord", "get_pass", "register_pass",
           "registered_passes", "resolve_passes", "run_pipeline"]
