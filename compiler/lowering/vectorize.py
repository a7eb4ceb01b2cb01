"""``vectorize_spec``: a ``GraphSpec`` whose chosen inputs gain a leading
batch dim, the whole graph vectorized over it by PyTensor's own
``pytensor.graph.replace.vectorize_graph`` (``compile_to_onnx(...,
vectorize={"theta": "points"})``).

``vectorize_graph`` rebuilds every node on the batched inputs through the
op's ``_vectorize_node`` (``Elemwise`` and ``CAReduce`` batch natively, most
others become ``Blockwise(core_op)``, ``Scan`` a batched ``Scan``); nodes that
depend on no batched input are kept as they are. Each batched output holds,
at index ``b`` of its leading dim, the single-point output at the inputs'
point ``b``; an output that depends on no batched input keeps its shape
(the lowering then has ``Blockwise``/batched forms to lower, which is the
point of the option). A check the lowering makes a value (a PyMC parameter
check's -inf, ``assertions="nan"``) becomes a ``switch`` first, so its
condition is batched per point (``pointwise_guards``); inside a ``Scan`` or
``OpFromGraph`` body it stays PyTensor's one condition over the batch. The
caller's graph is only read.
"""

from __future__ import annotations

import functools
from typing import Mapping

from pytensor.graph.fg import FunctionGraph
from pytensor.graph.replace import clone_replace, vectorize_graph
from pytensor.graph.rewriting.basic import in2out, node_rewriter
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.basic import (AllocDiag, Join, Split, alloc_diag, arange, constant,
                                   get_underlying_scalar_constant_value, join, switch)
from pytensor.tensor.blockwise import Blockwise, _squeeze_left
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.extra_ops import broadcast_to
from pytensor.tensor.math import all as pt_all
from pytensor.tensor.math import and_, maximum
from pytensor.tensor.rewriting.basic import local_dimshuffle_alloc, local_elemwise_alloc, local_join_of_alloc
from pytensor.tensor.rewriting.blockwise import (local_blockwise_alloc, local_blockwise_alloc_inputs,
                                                 local_blockwise_reshape, local_useless_unbatched_blockwise)
from pytensor.tensor.rewriting.subtensor import local_blockwise_inc_subtensor, local_blockwise_of_subtensor
from pytensor.tensor.rewriting.subtensor_lift import local_subtensor_of_alloc
from pytensor.tensor.subtensor import AdvancedIncSubtensor, AdvancedSubtensor
from pytensor.graph.traversal import io_toposort
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.type import TensorType

from compiler.lowering.lower import GraphSpec
from compiler.lowering.rules.assertions import guard_fill


def vectorize_spec(spec: GraphSpec, vectorize: Mapping, assertions: str = "drop") -> tuple[GraphSpec, dict]:
    """``spec`` with each input ``vectorize`` names replaced by one with a
    leading batch dim, and its outputs vectorized over it.

    Args:
        spec: what ``graph_spec`` made of the caller's graph.
        vectorize: input (its name, or the PyTensor variable) -> the batch
            dim's name (a str; inputs sharing a name share the batch).
        assertions: the ``assertions`` policy of the lowering: the checks it
            makes values (``pointwise_guards``) keep one condition per point.

    Returns:
        ``(batched spec, {old input variable: new input variable})``; the new
        inputs keep their position and name, and have type
        ``TensorType(dtype, (None, *old shape))``.

    Raises:
        ValueError: a key that is no input (the inputs are listed) or a
            shared variable, an input named twice, or an input that is not a
            tensor.
    """
    by_name = {}
    for v in spec.inputs:
        if v.name is not None:
            by_name.setdefault(v.name, v)
    replace: dict = {}
    for key in vectorize:
        var = by_name.get(key) if isinstance(key, str) else next((v for v in spec.inputs if v is key), None)
        if var is None:
            names = ", ".join(repr(v.name) for v in spec.inputs if v not in spec.shared_inputs)
            raise ValueError(f"vectorize names {key!r}, which is not a graph input; the inputs are {names}")
        if var in spec.shared_inputs:
            raise ValueError(f"vectorize names {key!r}, a shared variable; only explicit inputs can be batched")
        if var in replace:
            raise ValueError(f"vectorize names input {var.name!r} twice")
        if not isinstance(var.type, TensorType):
            raise ValueError(f"vectorize names {key!r} of type {var.type}; only tensor inputs can be batched")
        replace[var] = TensorType(var.type.dtype, shape=(None, *var.type.shape))(name=var.name)
    if not replace:
        return spec, {}
    unbatched = pointwise_guards(_without_inplace(spec.outputs), set(replace), assertions)
    outputs = _batched_forms(vectorize_graph(unbatched, replace=replace))
    inputs = [replace.get(v, v) for v in spec.inputs]
    return GraphSpec(inputs, list(outputs), set(spec.shared_inputs)), replace


@node_rewriter([Blockwise])
def local_blockwise_split(fgraph, node):
    """``Blockwise(Split)`` whose batch shape is its ``x``'s (no batch dim
    of ``x`` is broadcast against the sizes), with a constant ``axis``
    (broadcast batch dims), as one ``Split`` of the batched
    ``x`` along ``axis + batch_ndim`` (a negative axis counts from the end and
    stays) with the split sizes of the first batch element. Exact wherever
    ``Blockwise`` has a result: it stacks the per-element parts, so every
    element's sizes are equal (``vectorize_graph`` batches sizes computed from
    a point's shape, which are). Where they differ ``Blockwise`` raises and the
    ONNX model splits every element by the first one's sizes; an empty batch
    raises in both (PyTensor: ``vectorize with zero size not implemented``;
    onnxruntime: the index 0 is out of range). Returns None (no rewrite)
    otherwise.
    """
    if not isinstance(node.op.core_op, Split):
        return None
    batch_ndim = node.op.batch_ndim(node)
    x, axis, splits = node.inputs
    if not batch_ndim or x.type.ndim - len(node.op.inputs_sig[0]) != batch_ndim:
        return None
    if not all(axis.type.broadcastable):
        return None
    sizes_batch = (True,) * (batch_ndim - splits.type.ndim + 1) + splits.type.broadcastable[:-1]
    if any(x_b and not s_b for x_b, s_b in zip(x.type.broadcastable, sizes_batch)):
        return None  # the batch shape is not x's alone
    try:
        core_axis = int(get_underlying_scalar_constant_value(_squeeze_left(axis, axis.type.ndim)))
    except NotScalarConstantError:
        return None
    new_axis = core_axis if core_axis < 0 else core_axis + batch_ndim
    first_sizes = splits[(0,) * (splits.type.ndim - 1)]  # core: a vector
    return Split(node.op.core_op.len_splits)(x, new_axis, first_sizes, return_list=True)


@node_rewriter([Blockwise])
def local_blockwise_advanced_subtensor(fgraph, node):
    """``Blockwise(AdvancedSubtensor)`` whose index inputs are all integer
    arrays (``x[i, j]`` with batched ``i``/``j``: a categorical's
    ``log_p[arange, y]`` once vectorized) as one ``AdvancedSubtensor`` of the
    batched ``x``: each batch axis ``a`` of ``x`` is indexed by
    ``arange(x.shape[a])`` shaped to broadcast along that axis only, and each
    core index keeps its batch dims with length-1 axes inserted after them,
    so core indices of different ranks still broadcast right-aligned among
    themselves as NumPy's do. The advanced indices are then consecutive from
    axis 0, so the result is ``batch + broadcast(core indices) + the rest of
    x``: at batch element ``b``, ``x[b][i[b], j[b]]``, which is what
    ``Blockwise`` stacks (a length-1 batch dim of ``x`` or an index
    broadcasts, as in ``Blockwise``; out-of-range and negative indices act as
    in the core op). Returns None (no rewrite) for boolean indices or a core
    op that slices or inserts axes (its idx_list holds more than arrays).
    """
    core = node.op.core_op
    if not isinstance(core, AdvancedSubtensor):
        return None
    x, *idxs = node.inputs
    if not idxs or any(not i.type.dtype.startswith(("int", "uint")) for i in idxs):
        return None
    idx_list = getattr(core, "idx_list", None)  # PyTensor 3: slices and newaxis live there
    if idx_list is not None and (len(idx_list) != len(idxs) or any(isinstance(e, slice) for e in idx_list)):
        return None
    batch_ndim = node.op.batch_ndim(node)
    if not batch_ndim:
        return None
    core_ndims = [len(sig) for sig in node.op.inputs_sig[1:]]
    widest = max(core_ndims)
    batch_index = []
    for axis in range(batch_ndim):
        pattern = ["x"] * (batch_ndim + widest)
        pattern[axis] = 0
        batch_index.append(arange(x.shape[axis]).dimshuffle(pattern))
    core_index = [i.dimshuffle(*range(batch_ndim), *["x"] * (widest - n), *range(batch_ndim, batch_ndim + n))
                  for i, n in zip(idxs, core_ndims)]
    return [x[(*batch_index, *core_index)]]


@node_rewriter([Blockwise])
def local_blockwise_join(fgraph, node):
    """``Blockwise(Join)`` with a constant ``axis`` (the gradient of a
    vectorized ``concatenate``) as one ``Join`` along ``axis + batch_ndim``
    (a negative axis counts from the end and stays) of the inputs broadcast
    to their common batch shape (``_common_dim`` per batch axis, a run-time
    length 1 included, as ``Blockwise`` broadcasts; left alone when every
    input's static batch shape is already the output's). Returns None (no
    rewrite) for a batched or non-constant axis.
    """
    if not isinstance(node.op.core_op, Join):
        return None
    batch_ndim = node.op.batch_ndim(node)
    axis, *tensors = node.inputs
    if not batch_ndim or not all(axis.type.broadcastable):
        return None
    try:
        core_axis = int(get_underlying_scalar_constant_value(_squeeze_left(axis, axis.type.ndim)))
    except NotScalarConstantError:
        return None
    batch = node.outputs[0].type.shape[:batch_ndim]
    if None in batch or any(t.type.shape[:batch_ndim] != batch for t in tensors):
        common = [_common_dim([t for t in tensors if not t.type.broadcastable[a]], a) for a in range(batch_ndim)]
        tensors = [broadcast_to(t, (*common, *tuple(t.shape)[batch_ndim:])) for t in tensors]
    return [join(core_axis if core_axis < 0 else core_axis + batch_ndim, *tensors)]


def _common_dim(tensors: list, axis: int):
    """The broadcast length of axis ``axis`` over ``tensors`` (those whose
    axis is not statically 1): a static length if one has it, else the
    largest run-time length, which is the broadcast length wherever the
    lengths broadcast (each is 1 or that length); where they do not,
    ``Blockwise`` raises and so does the ``Expand`` that broadcasts to it.
    1 when every axis is statically 1."""
    static = [t.type.shape[axis] for t in tensors if t.type.shape[axis] is not None]
    if static:
        return static[0]
    if not tensors:
        return 1
    dims = [t.shape[axis] for t in tensors]
    return functools.reduce(maximum, dims)


@node_rewriter([Blockwise])
def local_blockwise_inc_subtensor_same_rank(fgraph, node):
    """PyTensor's ``local_blockwise_inc_subtensor``, except where the core
    op is an ``AdvancedIncSubtensor`` whose index arrays differ in rank:
    there PyTensor 2.38 and 3.0 pad the lower-rank indices with length-1
    axes on the right, after their core dims, so ``x[i, j] += y`` with
    ``i`` of shape (5,) and ``j`` of shape (2, 5) no longer broadcasts
    (``i`` becomes (B, 5, 1)); that ``Blockwise`` keeps its loop, which is
    right. Returns None (no rewrite) there, else PyTensor's result."""
    core = node.op.core_op
    if isinstance(core, AdvancedIncSubtensor) and len({len(sig) for sig in node.op.inputs_sig[2:]}) > 1:
        return None
    return local_blockwise_inc_subtensor.transform(fgraph, node)


@node_rewriter([Blockwise])
def local_blockwise_alloc_diag(fgraph, node):
    """``Blockwise(AllocDiag)`` as one ``AllocDiag`` of the batched input
    with its diagonal axes moved past the batch dims (a negative axis counts
    from the end and stays): ``AllocDiag`` already treats every axis of its
    input but the last as a leading dim it keeps, in order, so batch dims
    stay in front and the core's other dims where they were."""
    core = node.op.core_op
    if not isinstance(core, AllocDiag):
        return None
    batch_ndim = node.op.batch_ndim(node)
    if not batch_ndim:
        return None
    axis1, axis2 = (a if a < 0 else a + batch_ndim for a in (core.axis1, core.axis2))
    return [alloc_diag(node.inputs[0], offset=core.offset, axis1=axis1, axis2=axis2)]


# vectorize_graph leaves Blockwise nodes that would lower to a loop over the batch. These rewrite
# them into the core op's batched form: PyTensor's own (leading full slices of a (Inc)Subtensor,
# a larger Alloc, a Reshape, the core op itself where there is no batch dim, and the Alloc lifts
# that expose a shape broadcast over the batch: PyMC's vectorized shapes become
# Blockwise(AllocEmpty) otherwise; local_blockwise_inc_subtensor behind a guard; the Alloc lifts
# through Elemwise and DimShuffle, so a scalar computed from shapes that vectorize_graph broadcast
# over the batch, such as an ARange's stop, reaches the Blockwise as an Alloc that
# local_blockwise_alloc_inputs removes) and ours (Split, Join, AdvancedSubtensor, AllocDiag).
# local_blockwise_alloc_inputs and local_elemwise_alloc are "shape_unsafe" in PyTensor: an Alloc
# they drop would have checked a shape the model trusts.
BATCHED_FORMS = (local_blockwise_inc_subtensor_same_rank, local_blockwise_of_subtensor, local_blockwise_alloc,
                 local_useless_unbatched_blockwise, local_blockwise_alloc_inputs, local_blockwise_reshape,
                 local_subtensor_of_alloc, local_join_of_alloc, local_elemwise_alloc, local_dimshuffle_alloc,
                 local_blockwise_split, local_blockwise_join, local_blockwise_advanced_subtensor,
                 local_blockwise_alloc_diag)


def _batched_forms(outputs: list) -> list:
    """``outputs`` with ``BATCHED_FORMS`` applied to a copy of their graph
    (the inputs and constants kept, every node cloned: the caller's graph,
    which shares the unbatched part, is not changed)."""
    copied = clone_replace(list(outputs), replace={})
    fgraph = FunctionGraph(outputs=copied, clone=False)
    in2out(*BATCHED_FORMS).rewrite(fgraph)
    return list(fgraph.outputs)


# the props by which PyTensor's ops declare that they overwrite an input, and their in-place-free value
_INPLACE_PROPS = {"inplace": False, "destructive": False, "overwrite_a": False, "overwrite_b": False,
                  "overwrite_b_and_a": False}


def _without_inplace(outputs: list) -> list:
    """``outputs`` rebuilt with every op that overwrites an input (a
    ``destroy_map``: what PyTensor's in-place rewrites leave in a compiled
    function) replaced by its in-place-free form, the same op with its
    in-place props off (``Elemwise``: no ``inplace_pattern``). Only the
    nodes on such paths are new; a graph without them is returned as is.
    ``Blockwise`` refuses a core op that destroys its inputs, and an ONNX
    model has no in-place ops anyway.

    Raises:
        ValueError: an op that overwrites an input by a means not listed.
    """
    order = io_toposort([], outputs)
    if not any(node.op.destroy_map for node in order):
        return list(outputs)
    memo: dict = {}
    for node in order:
        inputs = [memo.get(v, v) for v in node.inputs]
        op = node.op
        if op.destroy_map:
            op = _inplace_free(op)
        elif all(a is b for a, b in zip(inputs, node.inputs)):
            continue
        new = op.make_node(*inputs) if op is not node.op else node.clone_with_new_inputs(inputs, strict=False)
        memo.update(zip(node.outputs, new.outputs))
    return [memo.get(v, v) for v in outputs]


def pointwise_guards(outputs: list, batched: set, assertions: str) -> list:
    """``outputs`` with each check that the lowering makes a value
    (``rules.assertions.guard_fill``) and whose conditions depend on a ``batched`` input
    rewritten as ``switch(all(c1) & all(c2) ..., x, fill)``, the lowering's
    own form.

    ``vectorize_graph`` batches a ``CheckAndRaise`` as one check whose
    condition is ``all`` over the batch too (``vectorize_check_and_raise``:
    right for an op that raises), so one point outside a distribution's
    support would make every point's log-density -inf. As a ``switch`` the
    condition is batched like any ``Elemwise``: point ``b``'s value is the
    single-point value at ``b``. Only nodes on paths through a rewritten
    check are new; the caller's graph is not changed.
    """
    order = io_toposort([], outputs)
    depends = set(batched)
    memo: dict = {}
    for node in order:
        inputs = [memo.get(v, v) for v in node.inputs]
        if any(v in depends for v in node.inputs):
            depends.update(node.outputs)
        x, *conds = node.inputs or [None]
        fill = guard_fill(node.op, str(getattr(x, "dtype", "")).startswith("float"), assertions) \
            if isinstance(node.op, CheckAndRaise) else None
        if fill is not None and any(c in depends for c in conds):
            holds = functools.reduce(and_, [pt_all(c) for c in inputs[1:]])
            guarded = switch(holds, inputs[0], constant(fill, dtype=x.type.dtype))
            guarded.name = node.outputs[0].name
            memo[node.outputs[0]] = guarded
            continue
        if all(a is b for a, b in zip(inputs, node.inputs)):
            continue
        memo.update(zip(node.outputs, node.clone_with_new_inputs(inputs, strict=False).outputs))
    return [memo.get(v, v) for v in outputs]


def _inplace_free(op):
    if isinstance(op, Elemwise):
        return Elemwise(op.scalar_op)
    props = op._props_dict() if op.__props__ else {}
    changed = {k: v for k, v in _INPLACE_PROPS.items() if props.get(k, v) != v}
    new = type(op)(**{**props, **changed}) if changed else op
    if new.destroy_map:
        raise ValueError(f"{op} overwrites its input {dict(op.destroy_map)} and has no in-place-free form "
                         "known to vectorize; vectorize the graph before compiling it with pytensor.function")
    return new
