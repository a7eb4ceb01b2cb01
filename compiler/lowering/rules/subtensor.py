"""Lowering rules for PyTensor's indexing ops: Subtensor, AdvancedSubtensor1,
AdvancedSubtensor (reads) and IncSubtensor, AdvancedIncSubtensor1,
AdvancedIncSubtensor (``set_subtensor``/``inc_subtensor``), plus PyTensor
2.x's MakeSlice.

Reads lower through ``indexing.index_value``. Writes use the same index
computation on a grid of flat positions: ``grid = reshape(range(size), x.shape)``,
``pos = grid[index]``, then ``scatter_nd`` of the (cast, broadcast) updates
into ``reshape(x, [-1])`` at ``pos`` and a reshape back; a ``set``/``inc``
through unit-step slices and integer indices with constant bounds on static
dims (a gradient's ``x[:, 1:]``) is a ``pad`` of the updates instead,
elementwise and exact (``_write_slices_as_pad``). Semantics are the Ops'
``perform`` methods:

* set: ``x[index] = y`` (``y`` cast like NumPy assignment, i.e. ``astype``).
  With repeated indices NumPy keeps the last write; ONNX ScatterND leaves
  that undefined, so only duplicate-free sets are exact.
* inc (IncSubtensor, AdvancedIncSubtensor with ``ignore_duplicates``):
  ``x[index] += y`` (a repeated position keeps one sum: NumPy's last, again
  undefined in ScatterND).
* inc (AdvancedIncSubtensor1, AdvancedIncSubtensor): ``np.add.at(x, index, y)``,
  repeated indices accumulate (ScatterND ``reduction="add"``); updates that
  ``x``'s dtype does not hold exactly are added one by one in a loop, with
  NumPy's unsafe cast after each add.
"""

from __future__ import annotations

import numpy as np
from pytensor.tensor.basic import get_underlying_scalar_constant_value
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.subtensor import (AdvancedIncSubtensor, AdvancedIncSubtensor1, AdvancedSubtensor,
                                       AdvancedSubtensor1, IncSubtensor, Subtensor)
from pytensor.tensor.type_other import MakeSlice

from compiler.lowering.errors import Unsupported
from compiler.lowering.bodies import Body
from compiler.lowering.registry import lowers
from compiler.lowering.rules.indexing import INT64, _is_full, _is_slice, index_value, node_index, shape_vector
from ir import DType, TensorType


@lowers(Subtensor, AdvancedSubtensor)
def lower_subtensor(ctx, node):
    """``x[index]`` for basic and advanced indices (see ``indexing``)."""
    return [index_value(ctx, ctx.get(node.inputs[0]), node_index(node, 1))]


@lowers(AdvancedSubtensor1)
def lower_advanced_subtensor1(ctx, node):
    """AdvancedSubtensor1: ``x[ilist]`` for an integer vector: ``gather`` on axis 0."""
    x, ilist = node.inputs
    return [index_value(ctx, ctx.get(x), [ilist])]


@lowers(MakeSlice)
def lower_make_slice(ctx, node):
    """MakeSlice (PyTensor 2.x): a slice has no IR value; the indexing rules
    read the MakeSlice's inputs instead."""
    return [None]


@lowers(IncSubtensor)
def lower_inc_subtensor(ctx, node):
    """IncSubtensor: ``x[index] = y`` or ``x[index] += y`` on basic indices
    (which never repeat a position)."""
    return [_write(ctx, node, node_index(node, 2), "set" if node.op.set_instead_of_inc else "inc")]


@lowers(AdvancedIncSubtensor1)
def lower_advanced_inc_subtensor1(ctx, node):
    """AdvancedIncSubtensor1: ``x[ilist] = y`` or ``np.add.at(x, ilist, y)``."""
    return [_write(ctx, node, [node.inputs[2]], "set" if node.op.set_instead_of_inc else "inc_at")]


@lowers(AdvancedIncSubtensor)
def lower_advanced_inc_subtensor(ctx, node):
    """AdvancedIncSubtensor: ``x[index] = y``, ``x[index] += y``
    (``ignore_duplicates``) or ``np.add.at(x, index, y)``."""
    if node.op.set_instead_of_inc:
        mode = "set"
    else:
        mode = "inc_buffered" if node.op.ignore_duplicates else "inc_at"
    return [_write(ctx, node, node_index(node, 2), mode)]


def _write(ctx, node, index, mode: str):
    """``x`` (``node.inputs[0]``) with ``y`` (``node.inputs[1]``) written
    through ``index``. ``mode`` is ``set``; ``inc`` (``x[index] += y`` on
    distinct positions); ``inc_buffered`` (``x[index] += y`` where a repeated
    position keeps its last sum, as in NumPy); ``inc_at`` (``np.add.at``).

    ``x[index] += y`` adds in NumPy's result dtype of ``x`` and ``y`` and
    rounds once to ``x``'s dtype; so does this lowering when that dtype is
    wider than ``x``'s.

    ``np.add.at`` whose updates are not exact in ``x``'s dtype (float into
    int or bool, float64 into float32, int into bool) casts unsafely after
    every add, in index order (``np.add.at``'s casting is ``unsafe``: float
    into int truncates toward zero, a nonzero sum into bool is true); that
    is ``_add_at_in_order``, a loop over the updates.

    Raises:
        Unsupported: ``x[index] += y`` (not ``np.add.at``) of an integer or
            bool ``x`` by a float ``y``, which PyTensor refuses at run time
            (NumPy's ``same_kind`` casting).
    """
    x, y = ctx.get(node.inputs[0]), ctx.get(node.inputs[1])
    if mode in ("inc", "inc_buffered") and y.dtype.is_float and not x.dtype.is_float:
        raise Unsupported(f"incrementing {x.dtype} by {y.dtype}: PyTensor raises at run time (NumPy's "
                          f"same_kind casting refuses {y.dtype} into {x.dtype}); cast the increment first")
    if mode in ("set", "inc"):
        padded = _write_slices_as_pad(ctx, x, y, index, mode)
        if padded is not None:
            return padded
    shape = shape_vector(ctx, x)
    size = ctx.scalar(x.type.size, INT64) if x.type.is_static else _size(ctx, shape, x.rank)
    grid = ctx.add("range", [ctx.scalar(0, INT64), size, ctx.scalar(1, INT64)])
    pos = index_value(ctx, ctx.add("reshape", [grid, shape]), index)  # flat positions of x[index]
    flat = ctx.add("reshape", [x, ctx.i64([-1])])

    wide = DType.from_numpy(np.result_type(x.dtype.numpy, y.dtype.numpy))
    exact = wide == x.dtype or (x.dtype.is_int and y.dtype.is_int) or \
        (x.dtype.is_float and _exact_constant(ctx, node.inputs[1], x.dtype.numpy))
    if mode == "set":
        updates, reduction = ctx.cast(y, x.dtype), "none"
    elif exact and mode in ("inc", "inc_at"):
        updates, reduction = ctx.cast(y, x.dtype), "add"
    elif mode in ("inc", "inc_buffered"):
        old = ctx.cast(ctx.add("gather", [flat, pos], {"axis": 0}), wide)
        updates, reduction = ctx.cast(ctx.add("add", [old, ctx.cast(y, wide)]), x.dtype), "none"
    else:
        updates = ctx.add("expand", [ctx.cast(y, wide), shape_vector(ctx, pos)])
        return ctx.add("reshape", [_add_at_in_order(ctx, flat, pos, updates), shape])
    if updates.shape != pos.shape or None in pos.shape:
        updates = ctx.add("expand", [updates, shape_vector(ctx, pos)])
    where = ctx.add("unsqueeze", [pos], {"axes": [-1]})
    out = ctx.add("scatter_nd", [flat, where, updates], {"reduction": reduction})
    return ctx.add("reshape", [out, shape])


def _constant_int(part) -> int | None:
    """A slice bound or integer index as a Python int when PyTensor can
    tell it is constant (``ScalarFromTensor`` of a constant included), else None."""
    if part is None:
        return None
    if isinstance(part, (int, np.integer)):
        return int(part)
    try:
        return int(get_underlying_scalar_constant_value(part))
    except NotScalarConstantError:
        return None


def _unit_slice_pads(ctx, x, index) -> tuple[list[int], list[int], list[int]] | None:
    """``(begins, ends, integer axes)`` when ``index`` is basic slices of
    step 1 and integer indices, with constant bounds on static dims (full
    slices ``:`` on any dim): per axis of ``x``, how many positions lie
    before and after ``x[index]`` (an integer index ``i`` as ``i:i+1``), and
    the axes an integer index removes. None otherwise (an integer out of
    range, where PyTensor raises, included)."""
    if len(index) > x.rank:
        return None
    begins, ends, integers = [0] * x.rank, [0] * x.rank, []
    for axis, e in enumerate(index):
        if _is_full(e):
            continue
        dim = x.shape[axis]
        if not isinstance(dim, int):
            return None
        if not _is_slice(e):
            if getattr(getattr(e, "type", None), "ndim", 0) != 0:
                return None
            i = _constant_int(e)
            if i is None or not -dim <= i < dim:
                return None
            begins[axis], ends[axis] = i % dim, dim - i % dim - 1
            integers.append(axis)
            continue
        start, stop, step = (_constant_int(p) for p in (e.start, e.stop, e.step))
        if step not in (None, 1) or (e.start is not None and start is None) or (e.stop is not None and stop is None):
            return None
        start, stop, _ = slice(start, stop).indices(dim)  # Python's (= NumPy's) clipping
        begins[axis], ends[axis] = start, dim - max(stop, start)
    return begins, ends, integers


def _write_slices_as_pad(ctx, x, y, index, mode: str):
    """``x[index] = y`` / ``x[index] += y`` for unit-step slices and integer
    indices with constant bounds (``_unit_slice_pads``), as a ``pad`` of
    ``y`` to ``x``'s shape: ``set`` is ``where(mask, pad(y), x)``; ``inc``
    is ``x + pad(y)``, selected by ``mask`` unless ``x`` is a +0.0 constant
    (a gradient's zeros: ``0 + y`` is then what PyTensor computes at every
    position). ``y`` is expanded and reshaped to the shape of ``x[index]``
    unless its type is that static shape: PyTensor's broadcast of ``y``, and
    its refusal of a ``y`` that does not fit, which a wrong-shaped input
    must still meet (``canonicalize`` drops both where the target is known
    to be ``y``'s own dims). Exact (the same
    single rounding of ``x + y`` at written positions, ``x`` unchanged
    elsewhere) and elementwise, where ``scatter_nd`` into flat positions
    runs one update at a time in onnxruntime (measured 6.4 ns an element).
    None where it does not apply (``inc`` by a ``y`` that NumPy would add in
    a wider dtype, a ``y`` of higher rank or of the wrong static length)."""
    pads = _unit_slice_pads(ctx, x, index)
    if pads is None or (mode == "inc" and x.dtype == DType.BOOL) or \
            (mode == "inc" and np.result_type(x.dtype.numpy, y.dtype.numpy) != x.dtype.numpy):
        return None
    begins, ends, integers = pads
    kept = x.rank - len(integers)
    if not any(begins + ends) or y.rank > kept:
        return None
    cut = [bool(b or e) for b, e in zip(begins, ends)]
    written = [d - b - e if c else 1 for d, b, e, c in zip(x.shape, begins, ends, cut)]
    if 0 in written:  # an empty write: the size check below cannot see a y that does not fit
        return None
    y = ctx.cast(y, x.dtype)
    if y.rank < kept:
        y = ctx.add("unsqueeze", [y], {"axes": list(range(kept - y.rank))})
    if integers:
        y = ctx.add("unsqueeze", [y], {"axes": integers})
    if any(c and d is not None and d not in (w, 1) for d, w, c in zip(y.shape, written, cut)):
        return None
    full = tuple(w if c else d for d, w, c in zip(x.shape, written, cut))  # the shape of x[index], kept axes
    if y.shape != full or not all(isinstance(d, int) for d in full):
        y = _fit(ctx, y, full, cut, written, x)
    padded = ctx.add("pad", [y, ctx.scalar(0, x.dtype)], {"pads": begins + ends})
    if mode == "inc":
        padded = ctx.add("add", [x, padded])
        if _positive_zeros(x):
            return padded
    mask = np.pad(np.ones(written, bool), list(zip(begins, ends)))  # length 1 along the axes taken whole
    return ctx.add("where", [ctx.const(mask), padded, x])


def _fit(ctx, y, full: tuple, cut: list[bool], written: list[int], x):
    """``y`` broadcast to the shape of ``x[index]`` (``full``: ``written``
    along the ``cut`` axes, ``x``'s dims along the others), refused at run
    time where PyTensor refuses it: ONNX's ``expand`` broadcasts both ways,
    so the result is reshaped to exactly that shape, which fails for a ``y``
    larger than it; where a dim of ``x`` is not static (it may be 0 at run
    time, and a size check sees nothing in an empty tensor), the reshape's
    target is all -1 (invalid) unless the expanded shape equals it. Where
    ``y``'s own dims are known to be those, ``canonicalize`` drops all of
    it (``shape_facts`` decides the comparison)."""
    if all(isinstance(d, int) for d in full):
        target = ctx.i64(list(full))
        return ctx.add("reshape", [ctx.add("expand", [y, target]), target])
    target = ctx.add("where", [ctx.const(np.array(cut)), ctx.i64(written), shape_vector(ctx, x)])
    fitted = ctx.add("expand", [y, target])
    same = ctx.cast(ctx.add("eq", [ctx.add("shape", [fitted]), target]), INT64)
    fits = ctx.add("eq", [ctx.add("reduce_prod", [same], {"axes": (), "keepdims": False}), ctx.scalar(1, INT64)])
    checked = ctx.add("where", [fits, target, ctx.i64([-1] * len(full))])
    return ctx.add("reshape", [fitted, checked])


def _positive_zeros(value) -> bool:
    """Whether ``value`` is a constant of +0.0 (or integer 0), possibly
    broadcast by ``expand``."""
    while value.producer is not None and value.producer.op == "expand":
        value = value.producer.inputs[0]
    c = value.const
    return c is not None and not np.any(c) and not np.any(np.signbit(c))


def _add_at_in_order(ctx, flat, pos, updates):
    """``np.add.at(flat, pos, updates)`` for ``updates`` of the wider dtype:
    ``flat[p] = cast(flat[p] + u)`` for each ``(p, u)`` in index order, a
    ``loop`` whose body gathers one element, adds in the wide dtype, casts
    back and scatters it (one pass per update; every intermediate cast as
    NumPy's)."""
    positions = ctx.add("reshape", [pos, ctx.i64([-1])])
    values = ctx.add("reshape", [updates, ctx.i64([-1])])
    count = ctx.add("reshape", [ctx.add("gather", [ctx.add("shape", [positions]), ctx.i64([0])], {"axis": 0}),
                                ctx.i64([])])
    body = Body(ctx, "add_at")
    b = body.ctx
    i = body.input(TensorType(INT64, ()), "i")
    acc = body.input(flat.type, "acc")
    p_in = body.input(positions.type, "pos")
    u_in = body.input(values.type, "upd")
    p = b.add("gather", [p_in, b.add("reshape", [i, b.i64([1])])], {"axis": 0})  # i64[1]
    old = b.cast(b.add("gather", [acc, p], {"axis": 0}), values.dtype)
    new = b.cast(b.add("add", [old, b.add("gather", [u_in, b.add("reshape", [i, b.i64([1])])], {"axis": 0})]),
                 flat.dtype)
    step = b.add("scatter_nd", [acc, b.add("unsqueeze", [p], {"axes": (1,)}), new])
    graph = body.finish([step])
    loop = ctx.graph.create_node("loop", [count, flat, positions, values], {"num_carried": 1, "has_condition": False},
                                 subgraphs={"body": graph})
    loop.origins = ctx.origins
    ctx.graph.append(loop)
    return loop.outputs[0]


def _size(ctx, shape, rank: int):
    """The element count of a tensor of ``rank`` from its shape vector, as a
    chain of ``mul`` (an int64 ``reduce_prod`` becomes an ONNX Scan)."""
    size = ctx.scalar(1, INT64)
    for axis in range(rank):
        dim = ctx.add("gather", [shape, ctx.scalar(axis, INT64)], {"axis": 0})
        size = dim if axis == 0 else ctx.add("mul", [size, dim])
    return size


def _exact_constant(ctx, var, dtype) -> bool:
    """Whether ``var`` is a constant that ``dtype`` holds exactly: then adding
    it in a wider float rounds like adding it in ``dtype`` (a double rounding
    through a format with at least 2p+2 bits is innocuous)."""
    const = ctx.constant_value(var)
    if const is None:
        return False
    back = const.astype(dtype).astype(const.dtype)
    return bool(np.array_equal(back, const, equal_nan=const.dtype.kind == "f"))
