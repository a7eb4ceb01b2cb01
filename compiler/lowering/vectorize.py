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
point of the option). The caller's graph is only read.
"""

from __future__ import annotations

from typing import Mapping

from pytensor.graph.fg import FunctionGraph
from pytensor.graph.replace import clone_replace, vectorize_graph
from pytensor.graph.rewriting.basic import in2out, node_rewriter
from pytensor.tensor.basic import Split, get_underlying_scalar_constant_value
from pytensor.tensor.blockwise import Blockwise, _squeeze_left
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.rewriting.basic import local_join_of_alloc
from pytensor.tensor.rewriting.blockwise import (local_blockwise_alloc, local_blockwise_alloc_inputs,
                                                 local_blockwise_reshape, local_useless_unbatched_blockwise)
from pytensor.tensor.rewriting.subtensor import local_blockwise_inc_subtensor, local_blockwise_of_subtensor
from pytensor.tensor.rewriting.subtensor_lift import local_subtensor_of_alloc
from pytensor.graph.traversal import io_toposort
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.type import TensorType

from compiler.lowering.lower import GraphSpec


def vectorize_spec(spec: GraphSpec, vectorize: Mapping) -> tuple[GraphSpec, dict]:
    """``spec`` with each input ``vectorize`` names replaced by one with a
    leading batch dim, and its outputs vectorized over it.

    Args:
        spec: what ``graph_spec`` made of the caller's graph.
        vectorize: input (its name, or the PyTensor variable) -> the batch
            dim's name (a str; inputs sharing a name share the batch).

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
    outputs = _batched_forms(vectorize_graph(_without_inplace(spec.outputs), replace=replace))
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


# PyTensor's own rewrites of a Blockwise into the core op's batched form (leading full slices of
# a (Inc)Subtensor, a larger Alloc, a Reshape) or into the core op (no batch dim), the Alloc
# lifts that expose a shape broadcast over the batch (PyMC's vectorized shapes become
# Blockwise(AllocEmpty) otherwise), and local_blockwise_split: vectorize_graph leaves these
# Blockwise nodes, which would otherwise lower to a loop over the batch (local_blockwise_alloc_inputs
# is "shape_unsafe" in PyTensor: an Alloc it drops would have checked a shape the model trusts)
BATCHED_FORMS = (local_blockwise_inc_subtensor, local_blockwise_of_subtensor, local_blockwise_alloc,
                 local_useless_unbatched_blockwise, local_blockwise_alloc_inputs, local_blockwise_reshape,
                 local_subtensor_of_alloc, local_join_of_alloc, local_blockwise_split)


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
