"""Shared pieces of type rules: broadcasting, dtype checks and reading the
known value of an integer input."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ir.opdef import OpError
from ir.types import Dim, DType, TensorType


def broadcast_dims(a: Dim, b: Dim, op: str) -> Dim:
    """The broadcast of two dims under NumPy rules (a 1 stretches).

    Raises:
        OpError: two different static sizes, neither 1.
    """
    if a == 1:
        return b
    if b == 1 or a == b:
        return a
    if isinstance(a, int) and isinstance(b, int):
        raise OpError(f"{op}: cannot broadcast dims {a} and {b}")
    if isinstance(a, int):
        return a
    if isinstance(b, int):
        return b
    return None  # two different symbols, or unknown: runtime decides


def broadcast_shapes(shapes: Sequence[tuple], op: str) -> tuple:
    """NumPy broadcast of several shapes (right-aligned)."""
    if shapes and all(s == shapes[0] for s in shapes):
        return tuple(shapes[0])  # equal shapes broadcast to themselves (the common case)
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = [1] * rank
    for s in shapes:
        padded = (1,) * (rank - len(s)) + tuple(s)
        out = [broadcast_dims(x, y, op) for x, y in zip(out, padded)]
    return tuple(out)


def same_dtype(types: Sequence[TensorType], op: str) -> DType:
    """The common dtype of ``types``; OpError if they differ."""
    dtypes = {t.dtype for t in types}
    if len(dtypes) != 1:
        raise OpError(f"{op}: inputs must share one dtype, got {', '.join(str(t.dtype) for t in types)}")
    return types[0].dtype


def check_dtype(t: TensorType, allowed: str, op: str, what: str = "input") -> None:
    """OpError unless ``t.dtype`` is in the class ``allowed``: a string of the
    letters b (bool), i (signed int), u (unsigned int), f (float)."""
    if t.dtype.numpy.kind not in allowed:  # the letters are NumPy's dtype kinds
        names = {"b": "bool", "i": "signed int", "u": "unsigned int", "f": "float"}
        raise OpError(f"{op}: {what} dtype {t.dtype} is not {' or '.join(names[c] for c in allowed)}")


def normalize_axis(axis: int, rank: int, op: str) -> int:
    """``axis`` in ``[0, rank)``; negative axes count from the end. OpError if out of range."""
    if not -rank <= axis < max(rank, 1):
        raise OpError(f"{op}: axis {axis} out of range for rank {rank}")
    return axis % rank if rank else 0


INT64 = DType.INT64
BOOL = DType.BOOL


def known_dims(value: "np.ndarray | None") -> tuple[Dim, ...] | None:
    """The elements of a known integer input, flattened, as dims: a NumPy
    integer array (a constant) gives Python ints; an object array (what
    ``shape-inference`` knows, see ``OpDef.symbolic_inputs``) gives its
    elements (int, str, ``Expr`` or None); None gives None."""
    if value is None:
        return None
    flat = np.asarray(value).reshape(-1)
    if flat.dtype == object:
        return tuple(flat.tolist())
    return tuple(int(v) for v in flat)
