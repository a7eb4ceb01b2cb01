"""Lowering of ``Elemwise``: a scalar op (or a fused ``Composite``) applied
elementwise to tensors with NumPy broadcasting.

The scalar op is lowered by the table in ``scalar_ops.py`` directly on the
tensor values: a plain ``Elemwise`` is a one-node scalar graph, a
``Composite`` is its inner ``fgraph`` (multi-output too). Inplace variants
(``inplace_pattern``) compute the same values: the IR has value semantics and
PyTensor only lets an op destroy inputs nothing reads afterwards. Scalar
ops applied directly to ``ScalarType`` variables use the same table.
"""

from __future__ import annotations

import pytensor.scalar as ps
from pytensor.tensor.elemwise import Elemwise

from compiler.lowering.compat import scalar_op_key
from compiler.lowering.context import LoweringContext
from compiler.lowering.registry import lowers
from compiler.lowering.rules.scalar_ops import lower_scalar_graph, lower_scalar_node
from ir import Value


@lowers(Elemwise)
def lower_elemwise(ctx: LoweringContext, node) -> list[Value]:
    """``Elemwise{scalar_op}(*inputs)`` (PyTensor ``pytensor.tensor.elemwise.Elemwise``).

    Takes tensors of equal rank (PyTensor has already inserted the
    DimShuffles) of any dtypes; returns one tensor per scalar output with
    PyTensor's output dtype and the broadcast shape of all inputs. An input
    made by a DimShuffle that only prepends broadcastable axes is read as
    its source (``LoweringContext.broadcast_args``), so no ``unsqueeze`` is
    built for a bias ``b[None, :]`` or the ``0`` of ``maximum(x, 0)``.

    Raises:
        Unsupported: the scalar op (or one inside the Composite) has no
            exact IR lowering; the message names it.
    """
    # A DimShuffle's leading broadcast axes are implied: the scalar rules
    # build broadcasting ops only, so the results keep PyTensor's rank (the
    # driver's type check would say otherwise).
    args = ctx.broadcast_args(node.inputs, node.outputs[0].type.ndim)
    # The whole lowering (a Composite's every inner node too) is recorded
    # once per op and signature of ``args`` (which holds the input dtypes) and
    # replayed for the next nodes.
    op = node.op
    token = ctx.memo.get(("elemwise-op", id(op)))
    if token is None or token[0] is not op:
        token = ctx.memo[("elemwise-op", id(op))] = (op, object())  # keeps the op alive while its id is a key
    return ctx.memoized(("elemwise", token[1]), args, lambda: _lower_elemwise(ctx, node, args))


def _lower_elemwise(ctx: LoweringContext, node, args: list[Value]) -> list[Value]:
    # (a key by identity stays unique: the memoized Apply holds the op)
    key = ("elemwise", scalar_op_key(node.op.scalar_op), *(v.type.dtype for v in node.inputs))
    scalar_node = ctx.memo.get(key)
    if scalar_node is None:  # one scalar Apply per scalar op and input dtypes, not one per node
        scalar_node = node.op.scalar_op.make_node(*(ps.get_scalar_type(v.type.dtype)() for v in node.inputs))
        ctx.memo[key] = scalar_node
    if not isinstance(node.op.scalar_op, ps.Composite):
        # one scalar node reading every input: its outputs already broadcast over all of them
        return lower_scalar_node(ctx, scalar_node, args)
    return lower_scalar_graph(ctx, scalar_node.inputs, scalar_node.outputs, args)


@lowers(ps.ScalarOp)
def lower_scalar_apply(ctx: LoweringContext, node) -> list[Value]:
    """A scalar op applied to ``ScalarType`` variables at the top level of a
    graph (shape arithmetic between ``ScalarFromTensor`` and
    ``TensorFromScalar``): the same table, on 0-d IR values."""
    return lower_scalar_graph(ctx, node.inputs, node.outputs, [ctx.get(v) for v in node.inputs])
