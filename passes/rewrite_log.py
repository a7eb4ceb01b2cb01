"""What the rewrites of one compilation did, and the opt-bisect budget.

The driver activates a ``RewriteLog`` around its pipeline (``observing``);
the pattern engine (``passes.rewrite.apply_rules``) reports into the active
log every rule that fired and every rule whose pattern matched but whose
rewrite declined (with its reason), and asks it before each rewrite whether
the opt-bisect budget allows one more. Passes need no change to be counted.

What counts as one **rewrite** (the unit of ``opt_bisect_limit``): one
application of a pattern rule; for a pass that changes the IR without the
pattern engine (``cse``, ``dce``, ``constant-folding``, ...), the whole pass
run counts as one rewrite. Once the budget is spent, the pattern engine stops
firing and the driver skips the remaining passes.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Iterator


@dataclass
class RewriteLog:
    """Counts of one compilation's rewrites.

    Attributes:
        fired: rule name -> how many times it fired.
        declined: (rule name, reason) -> how many times the rule's pattern
            matched but its rewrite declined (or produced a wrong type).
        limit: the opt-bisect budget (None: unlimited).
        count: rewrites performed so far (rule applications plus changing
            passes that did not use the pattern engine).
    """

    fired: Counter = field(default_factory=Counter)
    declined: Counter = field(default_factory=Counter)
    limit: int | None = None
    count: int = 0

    def allows(self) -> bool:
        """Whether one more rewrite is within ``limit``."""
        return self.limit is None or self.count < self.limit

    def note_fired(self, rule: str) -> None:
        self.fired[rule] += 1
        self.count += 1

    def note_declined(self, rule: str, reason: str) -> None:
        self.declined[(rule, reason)] += 1


_ACTIVE: ContextVar[RewriteLog | None] = ContextVar("pytensor_onnx_rewrite_log", default=None)


def active_log() -> RewriteLog | None:
    """The ``RewriteLog`` of the compilation running now, if any."""
    return _ACTIVE.get()


@contextlib.contextmanager
def observing(log: RewriteLog) -> Iterator[RewriteLog]:
    """Make ``log`` the active log inside the ``with`` block."""
    token = _ACTIVE.set(log)
    try:
        yield log
    finally:
        _ACTIVE.reset(token)
