"""Errors raised while compiling a PyTensor graph."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import pytensor

from ir.errors import CompileError

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_INTERNAL = (*(os.path.join(_ROOT, pkg) + os.sep for pkg in ("compiler", "ir", "passes", "backends")),
             os.path.dirname(pytensor.__file__) + os.sep)


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` in the calling
    function point at the user's line: the first frame outside this
    project's packages and PyTensor (whose ``function`` calls the ``ONNX``
    mode's linker). Python 3.12's ``skip_file_prefixes`` does this; 3.11 has
    no such argument."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        frame, level = frame.f_back, level + 1
    return level


class Unsupported(CompileError):
    """Raised by a lowering rule for a node it cannot express (the reason is
    the message); the lowering driver collects these into one
    ``UnsupportedOpsError``."""


@dataclass(frozen=True)
class UnsupportedOccurrence:
    """One unsupported PyTensor Apply node: the op as printed, why, and the
    user's source line (``file:line``) when PyTensor kept a trace."""

    op: str
    reason: str
    source: str | None


class UnsupportedOpsError(CompileError):
    """Every unsupported op of a graph, reported at once.

    Attributes:
        occurrences: one ``UnsupportedOccurrence`` per offending Apply node.
    """

    def __init__(self, occurrences: list[UnsupportedOccurrence]):
        self.occurrences = occurrences
        groups: dict[tuple[str, str], list[str | None]] = {}
        for occ in occurrences:
            groups.setdefault((occ.op, occ.reason), []).append(occ.source)
        lines = [f"{len(occurrences)} node(s) cannot be exported to ONNX "
                 f"({len(groups)} unsupported op kind(s)):"]
        for (op, reason), sources in groups.items():
            lines.append(f"  {op} x{len(sources)}: {reason}")
            for src in dict.fromkeys(s for s in sources if s):
                lines.append(f"    at {src}")
        super().__init__("\n".join(lines))


class LoweringError(CompileError):
    """A lowering rule produced IR that disagrees with PyTensor's types (a bug
    in this compiler, reported with the node and the source line)."""


class DroppedAssertionWarning(UserWarning):
    """Assertions (``CheckAndRaise``/``Assert``) that lowering dropped under
    ``assertions="drop"``: ONNX cannot raise, so the model no longer checks
    them. One warning lists them all.

    Attributes:
        dropped: (op label, source line or None) per dropped assertion.
    """

    def __init__(self, dropped: list[tuple[str, str | None]] | str):
        if isinstance(dropped, str):  # rebuilt from its message (pickling, pytest-xdist)
            self.dropped = []
            super().__init__(dropped)
            return
        self.dropped = list(dropped)
        groups: dict[str, list] = {}
        for op, src in dropped:
            groups.setdefault(op, []).append(src)
        lines = [f"{len(dropped)} assertion(s) dropped (ONNX cannot raise; pass assertions='nan' "
                 "to poison the guarded values with NaN instead):"]
        for op, sources in groups.items():
            lines.append(f"  {op} x{len(sources)}")
            lines.extend(f"    at {s}" for s in dict.fromkeys(s for s in sources if s))
        super().__init__("\n".join(lines))
