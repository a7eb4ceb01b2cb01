"""The documentation's sources as the tests read them: the pages under
``docs/``, their fenced code blocks, and the build-time generator
``docs/_ext/pytensor_onnx_generated.py`` (loaded by path: ``docs/`` is not a
package; it needs no Sphinx)."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def docs_generator():
    """The module ``docs/_ext/pytensor_onnx_generated.py``."""
    spec = importlib.util.spec_from_file_location("pytensor_onnx_generated",
                                                  DOCS / "_ext" / "pytensor_onnx_generated.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page: ``lang`` is the fence's info
    (``python``, ``bash``, ...; for a ``{code-block}`` directive the
    language after it), ``caption`` its ``:caption:`` option (the pass
    guide names its files so), ``line`` the 1-based line of its first code
    line."""

    page: str
    line: int
    lang: str
    caption: str | None
    code: str
    follows: bool = False  # only blank lines between it and the block before

    @property
    def where(self) -> str:
        return f"{(DOCS / self.page).resolve().relative_to(DOCS.parent)}:{self.line}"


_FENCE = re.compile(r"^(`{3,})\s*(\S*)\s*(.*)$")
# MyST directives that hold no code example (their content is markup or nothing)
DIRECTIVES = {"{toctree}", "{cli-help}", "{eval-rst}", "{note}", "{warning}", "{image}"}


def pages() -> list[str]:
    """Every page of the site (``.md`` and ``.rst`` under ``docs/``, the
    build's output excluded), relative to ``docs/``."""
    return sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*")
                  if p.suffix in (".md", ".rst") and "_build" not in p.parts)


def code_blocks(page: str) -> list[Block]:
    """The fenced code blocks of the MyST page ``page`` (a path relative to
    ``docs/``: ``../README.md`` is the README) in order, MyST directives in
    ``DIRECTIVES`` left out.

    Raises:
        ValueError: a fence that is never closed.
    """
    lines = (DOCS / page).read_text().splitlines()
    blocks, i, previous_end = [], 0, None
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, rest = m.groups()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), None)
        if end is None:
            raise ValueError(f"docs/{page}:{i + 1}: fence never closed")
        body = lines[i + 1:end]
        lang, caption = info, None
        if info == "{code-block}":
            lang = rest.strip()
            options = [ln for ln in body if ln.startswith(":")] if body and body[0].startswith(":") else []
            for ln in options:
                if ln.startswith(":caption:"):
                    caption = ln.removeprefix(":caption:").strip()
            body = body[len(options):]
            if body and not body[0].strip():
                body = body[1:]
        if info not in DIRECTIVES:
            first = i + 2 + (len(lines[i + 1:end]) - len(body))
            follows = previous_end is not None and not any(ln.strip() for ln in lines[previous_end + 1:i])
            blocks.append(Block(page, first, lang, caption, "\n".join(body) + "\n", follows))
            previous_end = end
        i = end + 1
    return blocks
