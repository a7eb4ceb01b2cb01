"""Lowering of PyTensor's convolution and padding ops to the IR's
``convolve2d`` and ``pad``.

* ``Blockwise(Convolve2d)`` (``pytensor.tensor.signal.conv``, PyTensor 2.38
  and 3.0): inputs ``in1, in2, full_mode``, where ``full_mode`` is a bool
  tensor that ``pytensor.tensor.signal.convolve2d`` makes constant (raw
  graphs hold it as ``ExpandDims(TensorFromScalar(constant))``, compiled
  ones as a folded constant); PyTensor 3's compiled graphs add a fourth
  input, the output's spatial shape, which the IR's type rule recomputes
  (there the Blockwise sits inside a ``BlockwiseWithCoreShape``, an
  ``OpFromGraph`` that is inlined, so ``full_mode`` arrives as an inner
  input bound to an IR constant). Registered in ``linalg.BLOCKWISE_RULES``.
* ``Blockwise(Convolve1d)`` (``pytensor.tensor.signal.convolve1d``:
  ``np.convolve`` in full or valid mode, the longer operand the signal;
  ``"same"`` is a padded ``"valid"`` in the graph): the same ``convolve2d``
  on both operands seen as one-row planes.
* ``Pad`` (``pytensor.tensor.pad``, an ``OpFromGraph``) in constant mode with
  constant pad widths and one scalar fill value: one IR ``pad``. Other modes
  and forms inline the inner graph like any ``OpFromGraph``.
"""

from __future__ import annotations

import numpy as np
from pytensor.tensor.basic import get_underlying_scalar_constant_value
from pytensor.tensor.exceptions import NotScalarConstantError
from pytensor.tensor.pad import Pad
from pytensor.tensor.signal.conv import Convolve1d, Convolve2d

from compiler.lowering.errors import Unsupported
from compiler.lowering.context import LoweringContext, ir_dtype
from compiler.lowering.registry import lowers
from compiler.lowering.rules.graph_ops import lower_op_from_graph
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from ir import DType, Value


def lower_convolve2d(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``Blockwise(Convolve2d)(in1, in2, full_mode[, out_shape])`` ->
    ``convolve2d{full}`` on both inputs cast to the output dtype (PyTensor's
    ``upcast`` of the two, as ``scipy.signal.convolve`` computes).

    Raises:
        Unsupported: ``full_mode`` is not a constant (or not the same
            everywhere); a bool output (the IR convolves numbers only).
    """
    full = _constant_flag(ctx, node.inputs[2])
    if full is None:
        raise Unsupported("convolve2d with a full_mode that is not a constant (the IR needs a static mode)")
    dtype = ir_dtype(node.outputs[0])
    if dtype == DType.BOOL:
        raise Unsupported("convolve2d of bool tensors")
    return ctx.add("convolve2d", [ctx.cast(args[0], dtype), ctx.cast(args[1], dtype)], {"full": full})


def _constant_flag(ctx: LoweringContext, var) -> bool | None:
    """The value of a bool tensor that is constant and the same everywhere
    (a PyTensor constant, an IR constant, or a constant seen through
    DimShuffle/TensorFromScalar), else None."""
    data = ctx.constant_value(var)
    if data is not None:
        return bool(data.flat[0]) if data.size and (data == data.flat[0]).all() else None
    try:
        return bool(get_underlying_scalar_constant_value(var))
    except NotScalarConstantError:
        return None


def lower_convolve1d(ctx: LoweringContext, node, args: list[Value]) -> Value:
    """``Blockwise(Convolve1d)(in1, in2, full_mode)`` (``np.convolve`` of the
    last axes, batch axes broadcast): ``convolve2d`` of one-row planes
    (``unsqueeze`` at -2), then ``squeeze``. ``convolve2d``'s valid mode
    slides the smaller operand over the larger, as ``np.convolve`` does.

    Raises:
        Unsupported: as ``lower_convolve2d``.
    """
    rows = [ctx.add("unsqueeze", [a], {"axes": (a.rank - 1,)}) for a in args[:2]]
    plane = lower_convolve2d(ctx, node, rows + list(args[2:3]))
    return ctx.add("squeeze", [plane], {"axes": (plane.rank - 2,)})


BLOCKWISE_RULES[Convolve2d] = lower_convolve2d
BLOCKWISE_RULES[Convolve1d] = lower_convolve1d


@lowers(Convolve1d)
def lower_core_convolve1d(ctx: LoweringContext, node) -> list[Value]:
    """``Convolve1d`` itself (compiled functions drop the ``Blockwise`` of
    1-D operands): as ``lower_convolve1d``."""
    return [lower_convolve1d(ctx, node, [ctx.get(v) for v in node.inputs])]


@lowers(Pad)
def lower_pad(ctx: LoweringContext, node) -> list[Value]:
    """``Pad`` (``pytensor.tensor.pad.pad``) in ``constant`` mode with
    constant, non-negative pad widths (anything ``np.broadcast_to`` takes to
    ``(ndim, 2)``) and one fill value (a scalar, or a constant whose entries
    are all equal) -> ``pad{pads}(x, value)``, both cast to the output
    dtype (PyTensor pads into a ``zeros`` of floatX, so the result is floatX
    for every input dtype). Any other Pad inlines its inner graph."""
    direct = _constant_pad(ctx, node)
    return direct if direct is not None else lower_op_from_graph(ctx, node)


def _constant_pad(ctx: LoweringContext, node) -> list[Value] | None:
    if node.op.pad_mode != "constant":
        return None
    x, width_var, value_var = node.inputs
    widths = ctx.constant_value(width_var)
    if widths is None:
        return None
    try:
        widths = np.broadcast_to(widths, (x.type.ndim, 2))
    except ValueError:
        return None
    if (widths < 0).any():
        return None
    dtype = ir_dtype(node.outputs[0])
    value = _scalar_fill(ctx, value_var)
    if value is None:
        return None
    pads = [int(w) for w in widths[:, 0]] + [int(w) for w in widths[:, 1]]
    return [ctx.add("pad", [ctx.cast(ctx.get(x), dtype), ctx.cast(value, dtype)], {"pads": pads})]


def _scalar_fill(ctx: LoweringContext, var) -> Value | None:
    """The fill value as a 0-d IR value: ``var`` itself when it is a scalar,
    its unique entry when it is a constant with all entries equal, else None."""
    if var.type.ndim == 0:
        return ctx.get(var)
    data = ctx.constant_value(var)
    if data is None or data.size == 0 or not (data == data.flat[0]).all():
        return None
    return ctx.const(data.flat[0], ir_dtype(var))
