"""Compile-time facts about sizes that the declared types alone do not show.

PyTensor computes reshape and expand targets at run time from ``shape(x)``
when a dim is not static (a symbolic batch), and the lowering types such a
result ``?``. The recovery passes still need to know that, say, the first
element of a reshape target *is* ``x``'s batch dim. Three queries answer that:

- ``known_shape(v)``: ``v``'s dims, re-inferred through a few producers with
  the ops' type rules when the declared type has unknown dims (a pass that
  refines a node's type leaves its readers' declared types as they were).
- ``dim_source(v, axis)``: a *token* for the run-time size of ``v``'s axis:
  an ``int``, a named dim (``"x_dim0"``, or an ``ir.symbolic`` expression),
  or ``DimOf(value, axis)``. Equal tokens mean equal sizes (named dims are
  equal sizes by the IR's convention); unequal tokens mean "not known to be
  equal".
- ``elements(v)``: the elements of a small shape-like vector (a reshape or
  expand target, a divisor computed from a shape), each a Python number, a
  dim token, or None when unknown.

Every query follows at most ``MAX_STEPS`` producers (a budget shared by its
recursion), so a pass that asks once per node stays linear in graph size;
running out of budget only makes an answer less precise, never wrong.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ir import Dim, Value, get_op, symbolic
from ir.types import join_dims

MAX_STEPS = 64  # producers one query may visit
MAX_ELEMENTS = 16  # the longest vector ``elements`` evaluates

# Elementwise arithmetic ``elements`` folds, with NumPy semantics in the value's dtype.
_ARITHMETIC = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
               "floor_div": np.floor_divide}
# The same on integer dims that are named or expressions (Python integer semantics).
_SYMBOLIC = {"add": symbolic.add, "sub": symbolic.sub, "mul": symbolic.mul, "floor_div": symbolic.floordiv}


class DimOf(NamedTuple):
    """The run-time size of ``value``'s ``axis``, when nothing better is known."""

    value: Value
    axis: int


class _Budget:
    def __init__(self, steps: int = MAX_STEPS):
        self.steps = steps

    def take(self) -> bool:
        self.steps -= 1
        return self.steps >= 0


def known_shape(value: Value, budget: _Budget | None = None) -> tuple[Dim, ...]:
    """``value``'s dims: the declared ones, with unknown or symbolic dims
    replaced by what the op type rules infer from the producers' inputs
    (themselves re-inferred), joined with ``ir.types.join_dims``."""
    shape = value.shape
    node = value.producer
    if node is None or all(isinstance(d, int) for d in shape) or node.subgraphs:
        return shape
    budget = budget or _Budget()
    if not budget.take():
        return shape
    types = [v.type.with_shape(known_shape(v, budget)) for v in node.inputs]
    opdef = get_op(node.op)
    consts = [v.const for v in node.inputs]
    if opdef.symbolic_inputs:  # reshape, expand, slice...: shape-like inputs as far as ``elements`` sees them
        consts = [c if c is not None else _symbolic_array(v, budget) for c, v in zip(consts, node.inputs)]
    try:
        inferred = opdef.infer(types, node.attrs, consts)[value.index]
    except (ValueError, TypeError, IndexError):  # a type rule rejecting its inputs: keep what we have
        return shape
    if inferred.rank != len(shape):
        return shape
    return tuple(join_dims(a, b) for a, b in zip(shape, inferred.shape))


def _symbolic_array(value: Value, budget: _Budget) -> np.ndarray | None:
    """``value``'s elements as an object array of dims (None where unknown),
    the form type rules with ``symbolic_inputs`` read; None when nothing is known."""
    if value.rank > 1 or not value.dtype.is_int:
        return None
    data = elements(value, budget)
    if data is None or not any(_is_dim(e) for e in data):
        return None
    out = np.empty(len(data), dtype=object)
    out[:] = [e if _is_dim(e) else None for e in data]
    return out.reshape(value.shape)


def dim_source(value: Value, axis: int, budget: _Budget | None = None) -> Any:
    """A token for the run-time size of ``value``'s ``axis`` (see the module
    docstring): the known dim if there is one, else what the shape
    computation feeding an ``unsqueeze``, ``squeeze``, ``reshape`` or
    ``expand`` says, else the input's token through a single-input op that
    keeps its input's shape (``exp``, ``cast``, ``softmax``...), else
    ``DimOf(value, axis)``."""
    declared = value.shape[axis]
    if isinstance(declared, int):
        return declared  # a static dim is final: re-inference could only agree
    budget = budget or _Budget()
    d = known_shape(value, budget)[axis]
    if d is not None:
        return d
    node = value.producer
    if node is None or not budget.take():
        return DimOf(value, axis)
    if node.op in ("unsqueeze", "squeeze"):
        rank = value.rank if node.op == "unsqueeze" else node.inputs[0].rank
        axes = sorted(a % rank for a in node.attrs["axes"])
        if node.op == "unsqueeze":
            if axis in axes:
                return 1
            return dim_source(node.inputs[0], axis - sum(a < axis for a in axes), budget)
        for a in axes:  # squeeze: find the input axis this output axis came from
            if a <= axis:
                axis += 1
        return dim_source(node.inputs[0], axis, budget)
    if node.op == "reshape":
        target = elements(node.inputs[1], budget)
        if target is not None and target[axis] is not None and target[axis] != -1:
            return target[axis]
    if node.op == "expand":
        target = elements(node.inputs[1], budget)
        x = node.inputs[0]
        offset = value.rank - x.rank
        t = target[axis] if target is not None else None
        src = dim_source(x, axis - offset, budget) if axis >= offset else 1
        if t == 1 or t == src:
            return src
        if src == 1 and t is not None:
            return t
    if len(node.inputs) == 1 and len(node.outputs) == 1 and _keeps_shape(node):
        return dim_source(node.inputs[0], axis, budget)  # exp, cast, relu, softmax, ...
    return DimOf(value, axis)


def _keeps_shape(node) -> bool:
    """Whether the single-input ``node``'s type rule gives its input's dims
    back: probed on distinct sizes, so a permutation or a reduction shows."""
    x = node.inputs[0]
    probe = x.type.with_shape(_PRIMES[:x.rank]) if x.rank <= len(_PRIMES) else None
    try:
        return probe is not None and get_op(node.op).infer([probe], node.attrs, [None])[0].shape == probe.shape
    except (ValueError, TypeError, IndexError):
        return False


_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19)


def elements(value: Value, budget: _Budget | None = None) -> tuple | None:
    """The elements of ``value`` in row-major order, each a Python number, a
    dim token or None (unknown); None when ``value`` has no static size of
    at most ``MAX_ELEMENTS`` or its producer is not understood.

    Understood: constants, ``shape``, ``gather`` and ``slice`` of a vector
    with constant indices, ``concat``, ``unsqueeze``/``squeeze``/``reshape``
    (the same elements), ``cast`` (numbers converted, tokens kept: a size
    cast to a float is still that size) and the arithmetic of ``_ARITHMETIC``
    on numbers, with NumPy semantics in the value's dtype, or of
    ``_SYMBOLIC`` on integer dims (``ir.symbolic``).
    """
    size = value.type.size
    if size is None or size > MAX_ELEMENTS:
        return None
    if value.const is not None:
        return tuple(value.const.reshape(-1).tolist())
    node = value.producer
    budget = budget or _Budget()
    if node is None or not budget.take():
        return None
    op, inputs = node.op, node.inputs
    if op == "shape":
        return tuple(dim_source(inputs[0], i, budget) for i in range(inputs[0].rank))
    if op in ("unsqueeze", "squeeze", "reshape"):
        return elements(inputs[0], budget)
    if op == "concat" and value.rank == 1:
        parts = [elements(v, budget) for v in inputs]
        return None if any(p is None for p in parts) else tuple(e for p in parts for e in p)
    if op == "gather" and inputs[0].rank == 1 and inputs[1].const is not None:
        data = elements(inputs[0], budget)
        if data is None:
            return None
        index = [int(i) for i in inputs[1].const.reshape(-1)]
        return tuple(data[i] for i in index) if all(-len(data) <= i < len(data) for i in index) else None
    if op == "slice" and value.rank == 1 and all(v.const is not None for v in inputs[1:]):
        data = elements(inputs[0], budget)
        if data is None:
            return None
        start, stop, step = (int(v.const[0]) for v in inputs[1:])
        return data[start:stop:step]
    if op == "cast":
        data = elements(inputs[0], budget)
        if data is None:
            return None
        dtype = node.attrs["to"].numpy
        return tuple(_number(np.asarray(e).astype(dtype)) if _is_number(e) else e for e in data)
    if op in _ARITHMETIC:
        a, b = (elements(v, budget) for v in inputs)
        if a is None or b is None or (len(a) != len(b) and 1 not in (len(a), len(b))):
            return None
        n = max(len(a), len(b))
        a, b = a * (n // len(a)), b * (n // len(b))
        return tuple(_arithmetic(op, p, q, value.dtype.numpy) for p, q in zip(a, b))
    return None


def _arithmetic(op: str, p, q, dtype: np.dtype):
    """``p op q``: NumPy in ``dtype`` on numbers, ``ir.symbolic`` on integer
    dims (named or expressions), else None."""
    if _is_number(p) and _is_number(q):
        with np.errstate(all="ignore"):
            return _number(_ARITHMETIC[op](np.asarray(p, dtype), np.asarray(q, dtype)))
    if dtype.kind in "iu" and _is_dim(p) and _is_dim(q) and op in _SYMBOLIC:
        return _SYMBOLIC[op](p, q)
    return None


def _is_number(e) -> bool:
    return isinstance(e, (int, float)) and not isinstance(e, bool)


def _is_dim(e) -> bool:
    return isinstance(e, (int, str, symbolic.Expr)) and not isinstance(e, bool)


def _number(a: np.ndarray) -> int | float:
    return a.item()
