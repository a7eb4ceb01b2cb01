"""Direct lowering of the ``compiler.nn`` helpers' ops (``NNOp`` subclasses
of ``OpFromGraph``): each becomes the one IR op it names, with attributes
read from the op (semantics: the helper's docstring and ``ir/ops/nn.py``).

The IR op computes what the inner graph computes, up to float rounding
where the inner graph sums in another order (conv, average pool). A node
the IR op cannot express exactly (inputs of mixed dtypes, which the inner
graph upcasts at a particular step; an integer ``silu``) inlines its inner
graph instead, like any ``OpFromGraph``. ``BatchNorm`` always inlines: the
``batchnorm-folding`` pass folds its graph into a preceding conv or makes
one ``batch_norm``.

The rules register when ``compiler.nn`` is imported (a graph holding these
ops was built with it), so the compile path never imports this library.
"""

from __future__ import annotations

from typing import Callable

from compiler.lowering.context import LoweringContext, ir_dtype
from compiler.lowering.registry import lowers
from compiler.lowering.rules.graph_ops import lower_op_from_graph
from compiler.nn.activations import Gelu, Relu, Silu
from compiler.nn.conv import Conv2d
from compiler.nn.layers import BatchNorm, Flatten, Linear, UpsampleNearest2d
from compiler.nn.pool import AvgPool2d, GlobalAvgPool2d, GlobalMaxPool2d, MaxPool2d
from ir import Value


def _direct(kinds: str = "f"):
    """Decorator: run the rule ``fn(ctx, node, args) -> Value`` when every
    input has the output's dtype and that dtype's NumPy kind is in ``kinds``
    (``f`` float, ``i`` signed, ``u`` unsigned, ``b`` bool), else inline the
    op's graph."""

    def wrap(fn: Callable[[LoweringContext, object, list[Value]], Value]):
        def rule(ctx: LoweringContext, node) -> list[Value]:
            dtype = ir_dtype(node.outputs[0])
            args = [ctx.get(v) for v in node.inputs]
            if any(a.dtype != dtype for a in args) or dtype.numpy.kind not in kinds:
                return lower_op_from_graph(ctx, node)
            return [fn(ctx, node, args)]

        rule.__name__, rule.__doc__ = fn.__name__, fn.__doc__
        return rule

    return wrap


def _pads(padding: tuple[int, int]) -> tuple[int, int, int, int]:
    """(ph, pw) on both sides -> ONNX pads (h_begin, w_begin, h_end, w_end)."""
    return (*padding, *padding)


@lowers(Conv2d)
@_direct()
def lower_conv2d(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``conv2d`` -> ``conv{flip=false}`` with the op's strides, pads,
    dilations and groups; the bias, if any, is the conv's third input."""
    op = node.op
    return ctx.add("conv", args, {"strides": op.stride, "pads": _pads(op.padding), "dilations": op.dilation,
                                  "group": op.groups, "flip": False})


@lowers(MaxPool2d)
@_direct("iuf")
def lower_max_pool2d(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``max_pool2d`` -> ``max_pool`` (padding never wins in either)."""
    op = node.op
    return ctx.add("max_pool", args, {"kernel": op.kernel, "strides": op.stride, "pads": _pads(op.padding)})


@lowers(AvgPool2d)
@_direct()
def lower_avg_pool2d(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``avg_pool2d`` -> ``avg_pool`` with ``count_include_pad``."""
    op = node.op
    return ctx.add("avg_pool", args, {"kernel": op.kernel, "strides": op.stride, "pads": _pads(op.padding),
                                      "count_include_pad": op.count_include_pad})


@lowers(GlobalAvgPool2d)
@_direct()
def lower_global_avg_pool2d(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``global_avg_pool2d`` -> ``global_avg_pool``."""
    return ctx.add("global_avg_pool", args)


@lowers(GlobalMaxPool2d)
@_direct("iuf")
def lower_global_max_pool2d(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``global_max_pool2d`` -> ``global_max_pool``."""
    return ctx.add("global_max_pool", args)


@lowers(Relu)
@_direct("if")
def lower_relu(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``relu`` -> ``relu`` (unsigned and bool inputs inline)."""
    return ctx.add("relu", args)


@lowers(Silu)
@_direct()
def lower_silu(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``silu`` -> ``silu``."""
    return ctx.add("silu", args)


@lowers(Gelu)
@_direct()
def lower_gelu(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``gelu`` -> ``gelu{approximate}``."""
    return ctx.add("gelu", args, {"approximate": node.op.approximate})


@lowers(Linear)
@_direct()
def lower_linear(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``linear`` -> ``gemm(x, W, b)`` for a 2-D ``x`` (``matmul`` without a
    bias); other ranks inline (``matmul`` and ``add``)."""
    if args[0].rank != 2:
        return lower_op_from_graph(ctx, node)[0]
    if len(args) == 2:
        return ctx.add("matmul", args)
    return ctx.add("gemm", args)


@lowers(Flatten)
@_direct("biuf")
def lower_flatten(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``flatten`` -> ``flatten{axis}``."""
    return ctx.add("flatten", args, {"axis": node.op.axis})


@lowers(UpsampleNearest2d)
@_direct("biuf")
def lower_upsample_nearest2d(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``upsample_nearest2d`` -> ``resize_nearest{scales=[1, 1, sh, sw]}``."""
    return ctx.add("resize_nearest", args, {"scales": (1, 1, *node.op.scale)})


@lowers(BatchNorm)
def lower_batch_norm(ctx: LoweringContext, node) -> list[Value]:
    """``batch_norm``: its graph, inlined (see the module docstring)."""
    return lower_op_from_graph(ctx, node)
