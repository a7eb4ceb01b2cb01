"""``conv2d``: 2-D convolution over NCHW tensors as an exact, BLAS-backed
PyTensor graph (im2col: strided slices stacked, then one matrix product).

Convention (ONNX ``Conv``, PyTorch ``torch.nn.functional.conv2d``): the
kernel is **not** flipped (cross-correlation)::

    y[n, m, oh, ow] = b[m] + sum_{c, i, j} W[m, c, i, j]
                      * xp[n, g*Cg + c, oh*sh + i*dh, ow*sw + j*dw]

where ``xp`` is ``x`` zero-padded by ``padding``, ``g = m // (Cout/groups)``
is the group of output channel ``m`` and ``Cg = Cin/groups``. PyTensor's
``pytensor.tensor.signal.convolve2d`` is the true (flipped) convolution of
scipy; the two differ by a 180-degree rotation of the kernel.
"""

from __future__ import annotations

import pytensor.tensor as pt
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant

from compiler.nn.base import NNOp, check_float, check_rank, output_size, pad_spatial, pair, windows


class Conv2d(NNOp):
    """``conv2d``'s op: inputs ``(x, W)`` or ``(x, W, b)``; attributes
    ``stride``, ``padding``, ``dilation`` (pairs, (H, W) order) and
    ``groups``. Lowers to the IR ``conv`` with ``flip=false``."""

    attr_names = ("stride", "padding", "dilation", "groups")

    @classmethod
    def inner_graph(cls, x, w, b=None, *, stride, padding, dilation, groups):
        cout, cg, kh, kw = w.type.shape
        n = x.shape[0]
        xp = pad_spatial(x, padding, 0)
        patches = windows(xp, (kh, kw), stride, dilation)  # (N, C, kh, OH, kw, OW)
        oh = _static_or(patches, 3)
        ow = _static_or(patches, 5)
        k = cg * kh * kw
        if groups == 1:
            rows = patches.transpose(0, 3, 5, 1, 2, 4).reshape((-1, k))  # (N*OH*OW, C*kh*kw)
            y = pt.dot(rows, w.reshape((cout, k)).T)  # (N*OH*OW, Cout)
            y = y.reshape((n, oh, ow, cout)).transpose(0, 3, 1, 2)
        else:
            g, per_group = groups, cout // groups
            rows = (patches.reshape((n, g, cg, kh, oh, kw, ow)).transpose(1, 0, 4, 6, 2, 3, 5)
                    .reshape((g, -1, k)))  # (G, N*OH*OW, Cg*kh*kw)
            wg = w.reshape((g, per_group, k)).transpose(0, 2, 1)  # (G, Cg*kh*kw, Cout/G)
            y = pt.matmul(rows, wg)  # (G, N*OH*OW, Cout/G)
            y = y.reshape((g, n, oh, ow, per_group)).transpose(1, 0, 4, 2, 3).reshape((n, cout, oh, ow))
        if b is not None:
            y = y + b.dimshuffle("x", 0, "x", "x")
        return y


def _static_or(x, axis: int):
    """Dim ``axis`` of ``x``: the static int when PyTensor knows it, else symbolic."""
    d = x.type.shape[axis]
    return d if d is not None else x.shape[axis]


def static_shape_of(var) -> tuple:
    """The shape of ``var`` as far as it is known before run time: its static
    type shape, completed from the current value of a shared variable or the
    data of a constant (None for dims still unknown)."""
    shape = tuple(var.type.shape)
    if None not in shape:
        return shape
    if isinstance(var, SharedVariable):
        return tuple(var.get_value(borrow=True).shape)
    if isinstance(var, Constant):
        return tuple(var.data.shape)
    return shape


def with_static_shape(var, what: str):
    """``var`` with its static shape made explicit by ``pt.specify_shape``
    when only its value knows it (a shared variable or constant without a
    static type shape); PyTensor checks the shape at run time.

    Raises:
        ValueError: a dim is still unknown.
    """
    shape = static_shape_of(var)
    if None in shape:
        raise ValueError(f"{what} needs a static shape, got {var.type}; "
                         "give it one with pt.tensor(shape=...) or pt.specify_shape")
    if shape != tuple(var.type.shape):
        var = pt.specify_shape(var, shape)
    return var


def conv2d(x, W, b=None, stride=1, padding=0, dilation=1, groups=1) -> pt.TensorVariable:
    """2-D convolution (cross-correlation, as ONNX ``Conv`` and PyTorch's
    ``conv2d``; the kernel is not flipped) of an NCHW batch.

    Args:
        x: float tensor (N, Cin, H, W).
        W: weights (Cout, Cin / groups, kh, kw) of a shape known before run
            time (a static type shape, a shared variable or a constant).
        b: optional bias (Cout,), added per output channel.
        stride, padding, dilation: an int or an (H, W) pair; ``padding``
            zero-pads both sides of each spatial axis.
        groups: input and output channels split into this many groups, each
            convolved with its own slice of ``W`` (``groups == Cin`` is a
            depthwise convolution).

    Returns:
        (N, Cout, OH, OW) with ``OH = floor((H + 2 ph - dh (kh - 1) - 1) / sh) + 1``
        (likewise OW), in the upcast dtype of the inputs. The graph is a
        ``Conv2d`` op (an ``OpFromGraph``) that PyTensor differentiates; the
        compiler lowers it to one ONNX ``Conv``.

    Raises:
        ValueError: wrong ranks, a weight shape that is not static, channels
            not divisible by ``groups``, a kernel larger than the padded input,
            or bad stride/padding/dilation values.
        TypeError: ``x`` is not a float tensor.
    """
    x, W = pt.as_tensor_variable(x), pt.as_tensor_variable(W)
    check_rank(x, 4, "conv2d input x (N, C, H, W)")
    check_rank(W, 4, "conv2d weights W (Cout, Cin/groups, kh, kw)")
    check_float(x, "conv2d input x")
    W = with_static_shape(W, "conv2d weights W")
    stride, padding, dilation = pair(stride, "stride", 1), pair(padding, "padding", 0), pair(dilation, "dilation", 1)
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"groups must be a positive int, got {groups!r}")
    cout, cg, kh, kw = W.type.shape
    cin = x.type.shape[1]
    if cin is not None and cin != cg * groups:
        raise ValueError(f"conv2d: x has {cin} channels, W expects {cg} x groups {groups} = {cg * groups}")
    if cout is not None and cout % groups:
        raise ValueError(f"conv2d: {cout} output channels are not divisible by groups {groups}")
    for axis, k in ((0, kh), (1, kw)):
        output_size(x.type.shape[2 + axis], k, stride[axis], padding[axis], dilation[axis], "conv2d")
    inputs = [x, W]
    if b is not None:
        b = pt.as_tensor_variable(b)
        check_rank(b, 1, "conv2d bias b (Cout,)")
        inputs.append(b)
    return Conv2d.apply(inputs, stride=stride, padding=padding, dilation=dilation, groups=groups)
