"""Lowering of ops that carry an inner PyTensor graph: ``OpFromGraph`` (and
its subclasses, such as PyTensor 3's symbolic ``Softmax`` when no more
specific rule applies) is inlined into the IR graph."""

from __future__ import annotations

from pytensor.compile.builders import OpFromGraph
from pytensor.tensor.random.type import RandomType

from compiler.lowering.errors import Unsupported, UnsupportedOpsError
from compiler.lowering.context import LoweringContext
from compiler.lowering.lower import lower_apply_nodes
from compiler.lowering.registry import lowers
from compiler.lowering.rules.random_key import valueless_generator
from ir import Value


@lowers(OpFromGraph)
def lower_op_from_graph(ctx: LoweringContext, node) -> list[Value]:
    """Inline ``OpFromGraph`` (``pytensor.compile.builders``): its inner
    ``fgraph`` is lowered on the IR values of the node's inputs (explicit
    inputs, then the implicit shared-variable inputs, in ``fgraph.inputs``
    order). Nested OpFromGraphs inline recursively. A random generator
    input (PyMC's symbolic random variables: ``AutoRegressiveRV`` and
    others wrap their draws so) has no IR value but under
    ``random="key"``: its inner variable stands for the outer one
    (``LoweringRecord.rng_sources``, the draws' seeds), and a generator
    output is None (``rules/random.py``); under ``"key"`` both are keys.

    Returns:
        The IR values of the inner outputs, one per node output (None for
        a generator).

    Raises:
        Unsupported: some inner node cannot be lowered; the message lists
            the inner ops and reasons.
    """
    fgraph = node.op.fgraph
    args = []
    for outer, inner in zip(node.inputs, fgraph.inputs):
        if isinstance(outer.type, RandomType):
            ctx.record.rng_sources[inner] = outer
        args.append(None if valueless_generator(ctx, outer) else ctx.get(outer))
    return inline_graph(ctx, fgraph.inputs, fgraph.outputs, args)


def inline_graph(ctx: LoweringContext, inputs, outputs, args: list[Value]) -> list[Value]:
    """Lower the PyTensor graph from ``inputs`` to ``outputs`` with ``inputs``
    bound to the IR values ``args``; returns the IR values of ``outputs``.

    The inner variables get a fresh variable map, so an op whose inner graph
    is shared by several Apply nodes inlines correctly each time. Inner IR
    nodes carry the caller's source line.

    Raises:
        Unsupported: listing the inner nodes that could not be lowered.
    """
    outer_values, outer_source, outer_label = ctx.values, ctx.source, ctx.op_label
    ctx.values = {v: a for v, a in zip(inputs, args, strict=True) if a is not None}  # None: a valueless generator
    try:
        lower_apply_nodes(ctx, inputs, outputs, source=outer_source)
        return [None if valueless_generator(ctx, v) else ctx.get(v) for v in outputs]
    except UnsupportedOpsError as e:
        raise Unsupported("inner graph: " + "; ".join(f"{o.op}: {o.reason}" for o in e.occurrences)) from None
    finally:
        ctx.values, ctx.source, ctx.op_label = outer_values, outer_source, outer_label
