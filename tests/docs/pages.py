"""The documentation's sources as the tests read them: the pages under
``docs/``, their fenced code blocks, and the build-time generator
``docs/_ext/pytensor_onnx_docs.py`` (loaded by path: ``docs/`` is not a
package)."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def docs_extension():
    """The module ``docs/_ext/pytensor_onnx_docs.py``."""
    spec = importlib.util.spec_from_file_location("pytensor_onnx_docs", DOCS / "_ext" / "pytensor_onnx_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
