"""The table of lowering rules: PyTensor ``Op`` class -> function building IR.

A rule is ``rule(ctx, node) -> list[ir.Value]`` (one value per node output),
registered with ``@lowers(OpClass, ...)``. Lookup walks the op's MRO, so a
rule for a base class covers subclasses (e.g. inplace variants) unless a
subclass has its own.
"""

from __future__ import annotations

from typing import Any, Callable

LoweringRule = Callable[..., list]

_RULES: dict[type, LoweringRule] = {}


def class_table_decorator(table: dict[type, Callable], kind: str):
    """A decorator factory ``deco(*classes)(rule)`` that puts ``rule`` in
    ``table`` under each class, refusing a class that already has a ``kind``
    rule (ValueError)."""

    def deco(*op_types: type):
        def register(rule: Callable) -> Callable:
            for t in op_types:
                if t in table:
                    raise ValueError(f"{t.__name__} already has a {kind} rule: {table[t].__name__}")
                table[t] = rule
            return rule

        return register

    return deco


def find_in_mro(table: dict, op) -> Any:
    """The entry of ``table`` (keyed by class) for the first class of
    ``op``'s MRO that has one (``op`` an instance or a class), or None.
    Every class-keyed table of the lowering is read through this."""
    cls = op if isinstance(op, type) else type(op)
    cached = _MRO_CACHE.get(id(table))
    if cached is None or cached[0] is not table or cached[1] != len(table):
        # tables only grow (a class registers once), so their size tells a stale cache
        cached = _MRO_CACHE[id(table)] = (table, len(table), {})
    found = cached[2].get(cls, _MISSING)
    if found is _MISSING:
        found = cached[2][cls] = next((table[c] for c in cls.__mro__ if c in table), None)
    return found


_MISSING = object()
# id(table) -> (table, its size when cached, class -> entry); the table is kept so its id stays its own
_MRO_CACHE: dict[int, tuple[dict, int, dict]] = {}


lowers = class_table_decorator(_RULES, "lowering")
lowers.__doc__ = """Decorator registering a rule for each PyTensor Op class given.

Raises:
    ValueError: a class already has a rule.
"""


def find_rule(op) -> LoweringRule | None:
    """The rule for ``op`` (an Op instance), or None if no class in its MRO has one."""
    return find_in_mro(_RULES, op)


def supported_op_types() -> list[type]:
    """Every PyTensor Op class with a rule (for docs and tests)."""
    return list(_RULES)
