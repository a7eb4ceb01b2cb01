"""``cse``: common-subexpression elimination.

Rules:

1. Two constants with equal dtype, shape and bytes are one constant; the one
   added first survives with its name (so a user's baked shared variable
   beats an anonymous lowering constant holding the same data)::

       const %a: f32[] = 2.0                const %a: f32[] = 2.0
       const %b: f32[] = 2.0        ->      %y: f32[3] = mul(%x, %a)
       %y: f32[3] = mul(%x, %b)             return %y
       return %y

2. Two nodes with equal op, attributes, inputs and output types compute the
   same values (every IR op is pure, except the ``random`` ones, which are
   never merged); the later one is replaced by the earlier. Commutative ops (``OpDef.commutative``) compare their inputs in
   a canonical order, so ``add(%x, %y)`` and ``add(%y, %x)`` merge::

       %a: f32[3] = add(%x, %y)             %a: f32[3] = add(%x, %y)
       %b: f32[3] = add(%y, %x)     ->      %c: f32[3] = mul(%a, %a)
       %c: f32[3] = mul(%a, %b)             return %c
       return %c

Bytes are compared exactly, so ``0.0`` and ``-0.0`` stay apart and NaNs with
equal payloads merge; float attributes are compared by their bit pattern for
the same reason. Nodes with subgraphs (control flow) are never merged with
each other, but each nested body gets the same treatment on its own
(``ir.transforms.walk_graphs``; no value crosses a graph boundary), and
graph inputs are never merged. One forward walk per graph with a hash
table: O(nodes + the bytes of the constants that share a dtype and shape
with another).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Any, Hashable

import numpy as np

from ir import DType, Graph, Value, get_op
from ir.opdef import RANDOM
from ir.transforms import walk_graphs
from passes.base import Pass, register_pass


SMALL_BYTES = 1024  # constants up to this size are keyed by their bytes, larger ones by a digest


@register_pass
@dataclass(frozen=True)
class CommonSubexpressionElimination(Pass):
    """Merge equal constants and nodes computing the same thing (see the
    module docstring). ``run`` returns True if anything was merged."""

    name = "cse"
    visits_nested_graphs = True

    def run(self, graph: Graph) -> bool:
        changed = False
        for g in walk_graphs(graph):  # each nested body on its own: values never cross a graph boundary
            changed |= _merge_in(g)
        return changed


def _merge_in(graph: Graph) -> bool:
    """CSE within ``graph``'s own nodes and constants."""
    changed = _merge_constants(graph)
    seen: dict[Hashable, Any] = {}
    kinds: dict[str, tuple[bool, bool]] = {}  # op -> (mergeable, commutative), read once per op
    for node in graph:
        kind = kinds.get(node.op)
        if kind is None:
            opdef = get_op(node.op)
            kind = kinds[node.op] = (not opdef.has(RANDOM), opdef.commutative)  # two draws are two draws
        if kind[0] and not node.subgraphs:
            # the input values themselves (equal when identical); a commutative op's in a
            # canonical order, any fixed one will do within the walk: by id
            operands = node._inputs
            if kind[1] and len(operands) > 1:
                operands = tuple(sorted(operands, key=id))
            outputs = node.outputs
            key = (node.op, _freeze_attrs(node.attrs) if node.attrs else (), operands,
                   (outputs[0].type,) if len(outputs) == 1 else tuple(v.type for v in outputs))
            first = seen.setdefault(key, node)
            if first is not node:
                for old, new in zip(node.outputs, first.outputs):
                    graph.replace_all_uses(old, new)
                graph.erase(node)
                changed = True
    return changed


def _merge_constants(graph: Graph) -> bool:
    """Rule 1: replace every constant by the first one with equal dtype, shape
    and bytes. Returns True if any constant was merged. Only constants that
    share their dtype and shape with another one are compared, and a large
    one only when its first and last elements equal another's too, so a
    model's distinct weights cost no pass over their bytes (on every run)."""
    first: dict[tuple, Value] = {}
    changed = False
    kinds = Counter(v.type for v in graph.constants.values())  # dtype and shape (a hash kept by the type)
    if len(kinds) == len(graph.constants):
        return False  # no two constants of one dtype and shape: the common case of a model's weights
    constants = [(v, (v.type,) if v.const.nbytes <= SMALL_BYTES else (v.type, _ends(v.const)))
                 for v in graph.constants.values() if kinds[v.type] > 1]
    kinds = Counter(kind for _, kind in constants)
    for value, kind in constants:
        if kinds[kind] < 2:
            continue
        data = value.const
        small = len(kind) == 1  # keyed by its bytes: no digest, no collision
        key = (value.type, small,
               data.tobytes() if small else hashlib.blake2b(np.ascontiguousarray(data)).digest())
        survivor = first.setdefault(key, value)
        if survivor is value or (not small and survivor.const.tobytes() != data.tobytes()):
            continue  # the first of its kind (or a digest collision, which never merges)
        graph.replace_all_uses(value, survivor)
        graph.remove_constant(value)
        changed = True
    return changed


def _ends(array: np.ndarray) -> bytes:
    """The bytes of the first and last elements of a non-empty array."""
    flat = array.reshape(-1)
    return flat[:1].tobytes() + flat[-1:].tobytes()


_PLAIN = (int, bool, str, DType)  # attribute values that key as (class name, value) directly


def _freeze_attrs(attrs: dict[str, Any]) -> Hashable:
    """``_freeze(attrs)``, with the common values (ints, bools, strings,
    dtypes, floats) keyed without a call per value."""
    parts = []
    for name, v in attrs.items():
        kind = type(v)
        if kind in _PLAIN:
            parts.append((name, (kind.__name__, v)))
        elif kind is float:
            parts.append((name, ("float", v.hex())))
        else:
            parts.append((name, _freeze(v)))
    return tuple(parts)


def _freeze(attr: Any) -> Hashable:
    """A hashable key for an attribute value that tells ``-0.0`` from ``0.0``
    and equates NaNs (floats by bit pattern)."""
    if isinstance(attr, float):
        return ("float", attr.hex())
    if isinstance(attr, dict):
        return tuple((k, _freeze(v)) for k, v in attr.items())
    if isinstance(attr, (tuple, list)):
        return tuple(_freeze(v) for v in attr)
    return (type(attr).__name__, attr)
