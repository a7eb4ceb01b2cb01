"""The table of lowering rules: PyTensor ``Op`` class -> function building IR.

A rule is ``rule(ctx, node) -> list[ir.Value]`` (one value per node output),
registered with ``@lowers(OpClass, ...)``. Lookup walks the op's MRO, so a
rule for a base class covers subclasses (e.g. inplace variants) unless a
subclass has its own.
"""

from __future__ import annotations

from typing import Callable

LoweringRule = Callable[..., list]

_RULES: dict[type, LoweringRule] = {}


def lowers(*op_types: type):
    """Decorator registering a rule for each PyTensor Op class in ``op_types``.

    Raises:
        ValueError: a class already has a rule.
    """

    def register(rule: LoweringRule) -> LoweringRule:
        for t in op_types:
            if t in _RULES:
                raise ValueError(f"{t.__name__} already has a lowering rule: {_RULES[t].__name__}")
            _RULES[t] = rule
        return rule

    return register


def find_rule(op) -> LoweringRule | None:
    """The rule for ``op`` (an Op instance), or None if no class in its MRO has one."""
    for cls in type(op).__mro__:
        rule = _RULES.get(cls)
        if rule is not None:
            return rule
    return None


def supported_op_types() -> list[type]:
    """Every PyTensor Op class with a rule (for docs and tests)."""
    return list(_RULES)
