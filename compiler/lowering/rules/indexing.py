"""NumPy indexing of IR values: the one index computation shared by the
``Subtensor`` family (reading ``x[index]``) and the ``IncSubtensor`` family
(writing through the same index). Registers no rules.

An *index* is a sequence of entries, one per indexed axis of ``x`` (missing
trailing entries mean ``:``). An entry is one of

* ``slice(start, stop, step)`` whose parts are None, Python ints or PyTensor
  integer scalars (0-d tensors or ``ScalarType`` variables);
* ``NEWAXIS`` (``np.newaxis``; only PyTensor 2.x's ``AdvancedSubtensor`` lets
  it through);
* a PyTensor integer variable: a scalar, or an index array;
* a PyTensor bool array (a mask, rank >= 1).

Semantics are NumPy's (``numpy.org/doc/stable/user/basics.indexing.html``),
which PyTensor's ``perform`` methods call directly: negative indices count
from the end, slices clamp like Python's, and advanced indices (integer arrays,
masks as their ``nonzero()``, and integer scalars next to them) broadcast
together; their dims replace the indexed axes when those are adjacent and go
first otherwise.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from pytensor.graph.basic import Constant, Variable
from pytensor.tensor.subtensor import indices_from_subtensor
from pytensor.tensor.type_other import MakeSlice, NoneTypeT, SliceType

from compiler.lowering.errors import Unsupported
from ir import DType, Value
from ir.ops.shape import INT64_MAX, INT64_MIN

INT64 = DType.INT64
NEWAXIS = None  # an entry that inserts a length-1 axis (NumPy's ``np.newaxis``)
FOLD_LIMIT = 64  # fold indexing of constants into a constant up to this many elements


# -- index entries of PyTensor nodes --------------------------------------
def node_index(node, first: int) -> list:
    """The index entries of a ``*Subtensor*`` Apply node whose index inputs
    start at ``node.inputs[first]`` (1 for reads, 2 for ``*IncSubtensor*``).

    Handles both PyTensor 3.x (``op.idx_list`` of input positions) and 2.x
    (``op.idx_list`` of types, or, for ``AdvancedSubtensor``/
    ``AdvancedIncSubtensor``, index inputs that are tensors, slice variables
    and ``NoneConst``).

    Raises:
        Unsupported: a slice variable that is neither a constant nor built by
            ``MakeSlice``.
    """
    inputs = node.inputs[first:]
    idx_list = getattr(node.op, "idx_list", None)
    if idx_list is None:
        return [_entry_of_variable(v) for v in inputs]
    return [_strip_none(e) for e in indices_from_subtensor(inputs, idx_list)]


def _entry_of_variable(v):
    """The index entry of a PyTensor 2.x ``AdvancedSubtensor`` index input."""
    if isinstance(v.type, NoneTypeT):
        return NEWAXIS
    if isinstance(v.type, SliceType):
        if isinstance(v, Constant):
            return v.data
        if v.owner is not None and isinstance(v.owner.op, MakeSlice):
            return _strip_none(slice(*v.owner.inputs))
        raise Unsupported(f"slice index {v} is not a constant or a MakeSlice")
    return v


def _strip_none(entry):
    """A slice's ``NoneConst`` parts become None."""
    if isinstance(entry, slice):
        return slice(*(None if isinstance(getattr(p, "type", None), NoneTypeT) else p
                       for p in (entry.start, entry.stop, entry.step)))
    return entry


def _is_slice(e) -> bool:
    return isinstance(e, slice)


def _is_full(e) -> bool:
    return isinstance(e, slice) and e.start is None and e.stop is None and e.step is None


def _is_mask(e) -> bool:
    return isinstance(e, Variable) and e.type.dtype == "bool"


# -- int64 scalars and vectors ---------------------------------------------
def int64_scalar(ctx, part) -> int | Value:
    """A PyTensor integer scalar (or Python int) as a Python int when it is
    constant, else as a 0-d int64 IR value (cast from its dtype: exact for
    every signed type and for unsigned values below 2**63)."""
    if isinstance(part, (int, np.integer)):
        return int(part)
    const = ctx.constant_value(part)
    if const is not None:
        return int(const)
    value = ctx.get(part)
    if value.rank != 0 or not value.dtype.is_int:
        raise Unsupported(f"index {part} must be an integer scalar, got {value.type}")
    return ctx.cast(value, INT64)


def int64_value(ctx, item: int | Value) -> Value:
    """A 0-d int64 IR value of an ``int64_scalar`` result."""
    return ctx.scalar(item, INT64) if isinstance(item, int) else item


def int64_vector(ctx, items: Sequence[int | Value]) -> Value:
    """An ``i64[len(items)]`` value whose entries are Python ints or 0-d int64
    IR values: a constant when all are ints, else a ``concat`` of unsqueezed
    values and constant runs."""
    if all(isinstance(i, int) for i in items):
        return ctx.i64(list(items))
    pieces: list[Value] = []
    run: list[int] = []
    for item in items:
        if isinstance(item, int):
            run.append(item)
            continue
        if run:
            pieces.append(ctx.i64(run))
            run = []
        pieces.append(ctx.add("unsqueeze", [item], {"axes": [0]}))
    if run:
        pieces.append(ctx.i64(run))
    return pieces[0] if len(pieces) == 1 else ctx.add("concat", pieces, {"axis": 0})


def dim_of(ctx, x: Value, axis: int) -> int | Value:
    """The length of ``x`` along ``axis``: a Python int when the IR type
    knows it, else a 0-d int64 ``gather`` of ``shape(x)`` (``int64_value``
    makes either an IR value)."""
    size = x.shape[axis]
    if isinstance(size, int):
        return size
    return ctx.add("gather", [ctx.add("shape", [x]), ctx.scalar(axis % x.rank, INT64)], {"axis": 0})


def shape_vector(ctx, x: Value) -> Value:
    """``i64[rank]``: the shape of ``x``, a constant when its type is static."""
    if x.type.is_static:
        return ctx.i64(list(x.shape))
    return ctx.add("shape", [x])


# -- x[index] ----------------------------------------------------------------
def index_value(ctx, x: Value, index: Sequence) -> Value:
    """The IR value of ``x[index]`` (see the module docstring for entries).

    Basic indexing lowers to one ``slice`` node over every sliced axis plus one
    0-d ``gather`` per integer scalar; advanced indexing to ``gather`` (a
    single index array or 1-d mask), else ``transpose`` + ``gather_nd`` +
    ``transpose``. Indexing a small constant with constant indices folds.

    Raises:
        Unsupported: more indices than axes, or a non-integer index.
    """
    index = list(index)
    folded = _fold(ctx, x, index)
    if folded is not None:
        return folded
    x, index = _insert_new_axes(ctx, x, index)
    consumed = sum(e.ndim if _is_mask(e) else 1 for e in index)
    if consumed > x.rank:
        raise Unsupported(f"{consumed} indices for a rank-{x.rank} tensor")
    index += [slice(None)] * (x.rank - consumed)
    for e in index:
        if not _is_slice(e) and not e.type.dtype.startswith(("int", "uint", "bool")):
            raise Unsupported(f"index {e} of dtype {e.type.dtype} is not an integer or bool")
    x = _apply_slices(ctx, x, index)
    if any(not _is_slice(e) and (e.ndim > 0) for e in index):
        return _advanced(ctx, x, index)
    scalar_axes = [a for a, e in enumerate(index) if not _is_slice(e)]
    for axis in reversed(scalar_axes):  # from the last, so earlier axes keep their numbers
        i = int64_value(ctx, int64_scalar(ctx, index[axis]))
        x = ctx.add("gather", [x, i], {"axis": axis})
    return x


def _fold(ctx, x: Value, index: list) -> Value | None:
    """``x[index]`` as a constant when ``x`` and every index part are constant
    and the result has at most ``FOLD_LIMIT`` elements (shape arithmetic), else None."""
    if x.const is None:
        return None
    parts = []
    for e in index:
        if isinstance(e, slice):
            vals = [p if p is None or isinstance(p, (int, np.integer)) else ctx.constant_value(p)
                    for p in (e.start, e.stop, e.step)]
            if any(p is None and q is not None for p, q in zip(vals, (e.start, e.stop, e.step))):
                return None
            parts.append(slice(*(None if v is None else int(v) for v in vals)))
        elif e is NEWAXIS:
            parts.append(None)
        else:
            c = ctx.constant_value(e)
            if c is None:
                return None
            parts.append(c)
    try:
        result = np.asarray(x.const[tuple(parts)])
    except IndexError:  # PyTensor fails at run time; so will the unfolded lowering
        return None
    return ctx.const(result) if result.size <= FOLD_LIMIT else None


def _insert_new_axes(ctx, x: Value, index: list) -> tuple[Value, list]:
    """``x[..., newaxis, ...]`` is ``x`` with a length-1 axis there, indexed by ``:``."""
    if not any(e is NEWAXIS for e in index):
        return x, index
    axes, out, pos = [], [], 0
    for e in index:
        if e is NEWAXIS:
            axes.append(pos)
            e = slice(None)
        out.append(e)
        pos += e.ndim if _is_mask(e) else 1
    return ctx.add("unsqueeze", [x], {"axes": axes}), out


def _slice_bounds(ctx, s: slice) -> tuple[int | Value, int | Value, int | Value] | None:
    """``(start, stop, step)`` of ``s`` for the IR ``slice`` op (Python ints
    when constant), with open ends as ``ir.ops.shape``'s INT64 sentinels; None
    when the slice takes the whole axis unchanged.

    With a symbolic step the open ends depend on its sign, chosen with ``where``.

    Raises:
        Unsupported: a constant step of 0 (PyTensor raises ValueError).
    """
    step = 1 if s.step is None else int64_scalar(ctx, s.step)
    start = None if s.start is None else int64_scalar(ctx, s.start)
    stop = None if s.stop is None else int64_scalar(ctx, s.stop)
    if step == 0:
        raise Unsupported("slice step is 0")
    if isinstance(step, int):
        if step == 1 and start in (None, 0) and (stop is None or (isinstance(stop, int) and stop >= INT64_MAX)):
            return None
        first, last = (0, INT64_MAX) if step > 0 else (INT64_MAX, INT64_MIN)
        return (first if start is None else start, last if stop is None else stop, step)
    if start is None or stop is None:
        positive = ctx.add("gt", [step, ctx.scalar(0, INT64)])
        if start is None:
            start = ctx.add("where", [positive, ctx.scalar(0, INT64), ctx.scalar(INT64_MAX, INT64)])
        if stop is None:
            stop = ctx.add("where", [positive, ctx.scalar(INT64_MAX, INT64), ctx.scalar(INT64_MIN, INT64)])
    return start, stop, step


def _apply_slices(ctx, x: Value, index: list) -> Value:
    """One ``slice`` node for every slice entry that changes its axis."""
    axes, bounds = [], []
    for axis, e in enumerate(index):
        if _is_slice(e) and not _is_full(e):
            b = _slice_bounds(ctx, e)
            if b is not None:
                axes.append(axis)
                bounds.append(b)
    if not axes:
        return x
    starts, stops, steps = (int64_vector(ctx, [b[j] for b in bounds]) for j in range(3))
    return ctx.add("slice", [x, starts, stops, steps], {"axes": axes})


def _advanced(ctx, x: Value, index: list) -> Value:
    """``x[index]`` where the slices are already applied (they are ``:`` now
    as far as this function cares) and at least one entry is an array."""
    # One group per advanced entry: (axes of x it indexes, IR index, is it a mask).
    groups: list[tuple[list[int], Value, bool]] = []
    axis = 0
    for e in index:
        if _is_slice(e):
            axis += 1
            continue
        if _is_mask(e):
            nz = ctx.add("nonzero", [ctx.get(e)])  # i64[k, n]: NumPy's mask.nonzero()
            groups.append((list(range(axis, axis + e.ndim)), nz, True))
            axis += e.ndim
        else:
            groups.append(([axis], ctx.cast(ctx.get(e), INT64), False))
            axis += 1
    adv_axes = [a for g in groups for a in g[0]]
    rest = [a for a in range(x.rank) if a not in adv_axes]
    adjacent = adv_axes == list(range(adv_axes[0], adv_axes[0] + len(adv_axes)))

    if len(groups) == 1 and len(adv_axes) == 1:  # one index array: np.take along that axis
        (a,), idx, is_mask = groups[0]
        if is_mask:
            idx = ctx.add("squeeze", [idx], {"axes": [0]})
        return ctx.add("gather", [x, idx], {"axis": a})

    if adv_axes != list(range(len(adv_axes))):
        x = ctx.add("transpose", [x], {"perm": adv_axes + rest})
    idx = _stacked_indices(ctx, groups)  # i64[B..., K]
    out = ctx.add("gather_nd", [x, idx])  # [B..., rest...]
    b, first = idx.rank - 1, adv_axes[0]
    if adjacent and first > 0:  # NumPy keeps adjacent advanced dims in place
        perm = list(range(b, b + first)) + list(range(b)) + list(range(b + first, out.rank))
        out = ctx.add("transpose", [out], {"perm": perm})
    return out


def _stacked_indices(ctx, groups) -> Value:
    """The advanced indices broadcast together and stacked on a last axis:
    ``i64[B..., K]`` with K the number of indexed axes (as ``gather_nd`` wants).
    A mask is its ``nonzero()`` rows, one index vector per axis it covers."""
    if len(groups) == 1 and groups[0][2]:  # one mask: its nonzero() transposed
        return ctx.add("transpose", [groups[0][1]], {"perm": [1, 0]})
    columns: list[Value] = []
    for axes, idx, is_mask in groups:
        if is_mask:
            columns += [ctx.add("gather", [idx, ctx.scalar(j, INT64)], {"axis": 0}) for j in range(len(axes))]
        else:
            columns.append(idx)
    shapes = [c.shape for c in columns]
    if all(s == shapes[0] for s in shapes) and None not in shapes[0]:
        pass  # already one shape (equal static or symbolic dims)
    elif all(all(isinstance(d, int) for d in s) for s in shapes):
        try:
            common = tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            raise Unsupported(f"index arrays of shapes {shapes} do not broadcast") from None
        columns = [c if c.shape == common else ctx.add("expand", [c, ctx.i64(list(common))]) for c in columns]
    else:  # the broadcast shape of the index arrays, at run time
        total = columns[0]
        for c in columns[1:]:
            total = ctx.add("add", [total, c])
        common = ctx.add("shape", [total])
        columns = [ctx.add("expand", [c, common]) for c in columns]
    columns = [ctx.add("unsqueeze", [c], {"axes": [-1]}) for c in columns]
    return columns[0] if len(columns) == 1 else ctx.add("concat", columns, {"axis": -1})
