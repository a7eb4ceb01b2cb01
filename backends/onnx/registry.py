"""The emission table: one rule per IR op, keyed by op name.

A rule is ``rule(ctx, node, *inputs) -> Value | tuple[Value, ...]``: it
receives the ``EmitContext``, the IR ``Node`` and the ONNX values of the
node's inputs, builds ONNX nodes through ``ctx`` and returns the ONNX values
of the node's outputs, in order. Rules register with ``@emits("add")``.
"""

from __future__ import annotations

from typing import Callable
from ir.errors import EmitError

EmitRule = Callable[..., object]

EMITTERS: dict[str, EmitRule] = {}


def emits(*ops: str) -> Callable[[EmitRule], EmitRule]:
    """Decorator registering a rule for the IR ops ``ops``.

    Raises:
        ValueError: an op already has a rule.
    """
    def register(rule: EmitRule) -> EmitRule:
        for op in ops:
            if op in EMITTERS:
                raise ValueError(f"IR op {op!r} already has an ONNX rule ({EMITTERS[op].__qualname__})")
            EMITTERS[op] = rule
        return rule

    return register


def get_rule(op: str) -> EmitRule:
    """The rule emitting IR op ``op``. EmitError if there is none."""
    try:
        return EMITTERS[op]
    except KeyError:
        raise EmitError(f"no ONNX emission rule for IR op {op!r}") from None
