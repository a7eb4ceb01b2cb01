"""Exact float64 forms of Conv and AveragePool, which onnxruntime's CPU
provider lacks (``float64_conv="exact"``, the default): Pad, one strided
Slice per kernel offset, and MatMul (convolution) or Add and Div (average
pooling), all float64 kernels onnxruntime has.

Convolution (ONNX Conv semantics, ``ir/ops/nn.py`` ``conv``): for the
input padded with zeros and kernel offset ``o`` (dilated ``o * d``), the
Slice ``x[..., o*d :: s]`` cut to the output size holds, at each output
position, the input element that kernel tap ``o`` multiplies. Two forms,
chosen by ``CONV_FORM`` (``bench/bench_float64_conv.py`` measures both):

* ``"im2col"``: the K slices are stacked into ``(N, g, C/g * K, L)``
  (``L`` output positions) and one MatMul with the weights reshaped to
  ``(g, M/g, C/g * K)`` gives ``(N, g, M/g, L)``.
* ``"taps"``: per offset, MatMul of the slice ``(N, g, C/g, L)`` with the
  weights of that tap ``(g, M/g, C/g)``, summed over the K offsets.

A depthwise convolution (one input and one output channel per group) is
the sum over offsets of each slice times its tap's weights (Mul, Add).

Each output is one float64 dot product of ``C/g * K`` terms (im2col) or a
sum of K such products (taps): float64 rounding only, in an order that
differs from PyTensor's (the tests hold it to 1e-12 relative).

A kernel whose spatial dims are only known at run time (``convolve1d`` and
``convolve2d`` of two inputs; ``conv_f64`` chooses the form) cannot be
unrolled over its offsets: ``conv_f64_gathered`` builds the same im2col
matrix by gathering the windows. Per spatial axis of size ``n`` (padded),
kernel size ``k``, stride ``s`` and dilation ``d``, the int64 indices
``o * s + j * d`` (``o`` an output position, ``j`` a kernel offset: a
``(out, k)`` matrix from two ``Range`` ops) gather ``x`` along that axis;
a Transpose puts the offsets before the positions, and the same MatMul as
``im2col`` takes one float64 dot product of ``C/g * K`` terms per output
element. It is exact in the same sense: float64 products and sums only,
within the convolution family's bound of the numerics contract
(``|error| <= C/g * K * eps * (|x| . |w|)`` per element).

Average pooling: the sum of the K slices divided by the window count
(the kernel size, or with ``count_include_pad=False`` the same sum over a
padded mask of ones: a constant when the spatial sizes are static).
"""

from __future__ import annotations

import numpy as np

from backends.onnx.rules.common import F64, I64

INT64_MAX = np.iinfo(np.int64).max
CONV_FORMS = ("im2col", "taps")
CONV_FORM = "im2col"  # measured faster on every shape of bench/bench_float64_conv.py


def _i64(ctx, values):
    return ctx.const(np.array(values, dtype=np.int64).reshape(-1), I64)


def _slice_end(start: int, extent: int) -> int:
    """The Slice end keeping the positions a window of span ``extent + 1``
    can start from, shifted by ``start`` (``x[start:len - (extent - start)]``)."""
    rest = extent - start
    return -rest if rest > 0 else INT64_MAX


def _padded(ctx, x, pads, nsp, value=0.0):
    if not any(pads):
        return x
    return ctx.op("Pad", x, _i64(ctx, [0, 0, *pads[:nsp], 0, 0, *pads[nsp:]]), ctx.const(value, F64))


def window_slices(ctx, x, kernel, strides, dilations):
    """One Slice of ``x`` (N, C, *spatial, already padded) per kernel offset,
    in ``np.ndindex(*kernel)`` order; each is (N, C, *out)."""
    nsp = len(kernel)
    axes = _i64(ctx, range(2, 2 + nsp))
    steps = _i64(ctx, strides)
    out = []
    for offset in np.ndindex(*kernel):
        starts = [o * d for o, d in zip(offset, dilations)]
        ends = [_slice_end(s, (k - 1) * d) for s, k, d in zip(starts, kernel, dilations)]
        out.append(ctx.op("Slice", x, _i64(ctx, starts), _i64(ctx, ends), axes, steps))
    return out


def _output_shape(ctx, lead: list[int], first_slice, out_shape):
    """The int64 target ``lead + output spatial dims``: a constant when
    ``out_shape`` (the IR output type's shape) is static; else the batch and
    spatial dims read off ``first_slice`` (N, C, *out), which ONNX shape
    inference follows (a 0 "copy this dim" entry it may not)."""
    spatial = out_shape[2:]
    if all(isinstance(d, int) for d in spatial):
        return _i64(ctx, lead + list(spatial))
    return ctx.op("Concat", ctx.op("Shape", first_slice, start=0, end=1), _i64(ctx, lead[1:]),
                  ctx.op("Shape", first_slice, start=2), axis=0)


def _grouped_weights(ctx, w, w_shape, group: int, taps: int):
    """``w`` (M, C/g, *kernel) as (g, M/g, C/g * taps)."""
    m, cg = w_shape[0], w_shape[1]
    if isinstance(cg, int):
        target = _i64(ctx, [group, -1, cg * taps])
    elif isinstance(m, int):
        target = _i64(ctx, [group, m // group, -1])
    else:
        cols = ctx.op("Mul", ctx.op("Shape", w, start=1, end=2), _i64(ctx, [taps]))
        target = ctx.op("Concat", _i64(ctx, [group, -1]), cols, axis=0)
    return ctx.op("Reshape", w, target)


def conv_f64(ctx, x, w, b, *, w_shape, out_shape, kernel, strides, dilations, pads, group, form=None):
    """Exact float64 Conv (module doc) of ``x`` (N, C, *spatial) and ``w``
    (M, C/g, *kernel; ``w_shape`` its IR shape, ``kernel`` its spatial dims,
    ints when static) with optional bias ``b`` (M,), added after the sums;
    ``out_shape`` is the IR output shape (static dims become constants).
    A kernel with a dim not static takes ``conv_f64_gathered``. Returns the
    float64 (N, M, *out) value."""
    if not all(isinstance(k, int) for k in kernel):
        return conv_f64_gathered(ctx, x, w, b, w_shape=w_shape, out_shape=out_shape, strides=strides,
                                 dilations=dilations, pads=pads, group=group)
    form = form or CONV_FORM
    out = None
    nsp = len(kernel)
    taps = int(np.prod(kernel, dtype=np.int64))
    slices = window_slices(ctx, _padded(ctx, x, pads, nsp), kernel, strides, dilations)
    m = w_shape[0]
    lead = [0, m if isinstance(m, int) else -1]
    if w_shape[1] == 1 and m == group > 1:  # depthwise: one product per tap, no MatMul
        y = _depthwise(ctx, w, slices, taps, nsp)
        out = y
    elif form == "im2col":
        cols = [ctx.op("Reshape", s, _i64(ctx, [0, 0, 1, -1])) for s in slices]  # (N, C, 1, L)
        col = ctx.op("Concat", *cols, axis=2) if taps > 1 else cols[0]  # (N, C, K, L)
        col = ctx.op("Reshape", col, _i64(ctx, [0, group, -1, 0]))  # (N, g, C/g * K, L)
        y = ctx.op("MatMul", _grouped_weights(ctx, w, w_shape, group, taps), col)  # (N, g, M/g, L)
    elif form == "taps":
        wg = _grouped_weights(ctx, w, w_shape, group, taps)  # (g, M/g, C/g * K): tap t is every K-th column
        y = None
        for t, s in enumerate(slices):
            wt = ctx.op("Slice", wg, _i64(ctx, [t]), _i64(ctx, [INT64_MAX]), _i64(ctx, [2]), _i64(ctx, [taps]))
            col = ctx.op("Reshape", ctx.op("Reshape", s, _i64(ctx, [0, 0, 1, -1])), _i64(ctx, [0, group, -1, 0]))
            term = ctx.op("MatMul", wt, col)  # (N, g, M/g, L)
            y = term if y is None else ctx.op("Add", y, term)
    else:
        raise ValueError(f"conv form {form!r}: must be one of {CONV_FORMS}")
    if y is not out:
        y = ctx.op("Reshape", y, _output_shape(ctx, lead, slices[0], out_shape))
    if b is not None:
        y = ctx.op("Add", y, ctx.op("Unsqueeze", b, _i64(ctx, range(1, 1 + nsp))))
    return y


def conv_f64_gathered(ctx, x, w, b, *, w_shape, out_shape, strides, dilations, pads, group):
    """Exact float64 Conv of ``x`` (N, C, *spatial) and ``w`` (M, C/g,
    *kernel) whose kernel dims may be known only at run time (module doc:
    the windows gathered into the im2col matrix, then one MatMul); the
    other arguments as in ``conv_f64``. Returns the float64 (N, M, *out)
    value."""
    nsp = len(strides)
    xp = _padded(ctx, x, pads, nsp)
    zero, one = _scalar(ctx, 0), _scalar(ctx, 1)
    outs, windows = [], xp
    cols = ctx.op("Squeeze", ctx.op("Shape", w, start=1, end=2))  # C/g, times each kernel dim below
    positions = None
    for j, (s, d) in enumerate(zip(strides, dilations)):
        size = ctx.op("Squeeze", ctx.op("Shape", xp, start=2 + j, end=3 + j))
        k = ctx.op("Squeeze", ctx.op("Shape", w, start=2 + j, end=3 + j))
        span = ctx.op("Mul", ctx.op("Sub", k, one), _scalar(ctx, d))
        # out = floor((size - span - 1) / s) + 1, or 0 when no window fits
        out = ctx.op("Div", ctx.op("Max", ctx.op("Add", ctx.op("Sub", size, span), _scalar(ctx, s - 1)), zero),
                     _scalar(ctx, s))
        starts = ctx.op("Range", zero, out, one)
        if s != 1:
            starts = ctx.op("Mul", starts, _scalar(ctx, s))
        offsets = ctx.op("Range", zero, ctx.op("Add", span, one), _scalar(ctx, d))
        index = ctx.op("Add", ctx.op("Unsqueeze", starts, _i64(ctx, [1])), ctx.op("Unsqueeze", offsets, _i64(ctx, [0])))
        windows = ctx.op("Gather", windows, index, axis=2 + 2 * j)  # axis 2 + 2j becomes (out_j, k_j)
        outs.append(ctx.op("Unsqueeze", out, _i64(ctx, [0])))
        cols = ctx.op("Mul", cols, k)
        positions = out if positions is None else ctx.op("Mul", positions, out)
    perm = [0, 1] + [3 + 2 * j for j in range(nsp)] + [2 + 2 * j for j in range(nsp)]
    windows = ctx.op("Transpose", windows, perm=perm)  # (N, C, *kernel, *out)
    cols, positions = (ctx.op("Unsqueeze", v, _i64(ctx, [0])) for v in (cols, positions))
    col_shape = ctx.op("Concat", _i64(ctx, [0, group]), cols, positions, axis=0)
    col = ctx.op("Reshape", windows, col_shape)  # (N, g, C/g*K, L)
    wg = ctx.op("Reshape", w, ctx.op("Concat", _i64(ctx, [group, -1]), cols, axis=0))  # (g, M/g, C/g*K)
    y = ctx.op("MatMul", wg, col)  # (N, g, M/g, L)
    spatial = out_shape[2:]
    m = w_shape[0]
    if isinstance(m, int) and all(isinstance(o, int) for o in spatial):
        target = _i64(ctx, [0, m, *spatial])
    else:
        target = ctx.op("Concat", _i64(ctx, [0]), ctx.op("Shape", w, start=0, end=1), *outs, axis=0)
    y = ctx.op("Reshape", y, target)
    if b is not None:
        y = ctx.op("Add", y, ctx.op("Unsqueeze", b, _i64(ctx, range(1, 1 + nsp))))
    return y


def _scalar(ctx, value: int):
    """An int64 scalar constant."""
    return ctx.const(np.array(value, dtype=np.int64), I64)


def _depthwise(ctx, w, slices, taps: int, nsp: int):
    """The depthwise convolution (M == C == group): the sum over taps of
    each slice (N, C, *out) times that tap's weights (C, 1, ..., 1)."""
    wk = ctx.op("Reshape", w, _i64(ctx, [0, taps] + [1] * (nsp - 1)))  # (C, K, 1, ...): rank 1 + nsp
    y = None
    for t, s in enumerate(slices):
        wt = ctx.op("Slice", wk, _i64(ctx, [t]), _i64(ctx, [t + 1]), _i64(ctx, [1]))  # (C, 1, 1, ...)
        term = ctx.op("Mul", s, wt)
        y = term if y is None else ctx.op("Add", y, term)
    return y


def avg_pool_f64(ctx, x, *, x_shape, kernel, strides, dilations, pads, count_include_pad: bool):
    """Exact float64 AveragePool (module doc) of ``x`` (N, C, *spatial;
    ``x_shape`` its IR shape): the window sums, in ``np.ndindex`` order of
    the kernel offsets, divided by the window counts."""
    nsp = len(kernel)
    total = None
    for s in window_slices(ctx, _padded(ctx, x, pads, nsp), kernel, strides, dilations):
        total = s if total is None else ctx.op("Add", total, s)
    size = float(np.prod(kernel))
    if count_include_pad or not any(pads):
        return ctx.op("Div", total, ctx.const(size, F64))
    spatial = x_shape[2:]
    if all(isinstance(d, int) for d in spatial):
        return ctx.op("Div", total, ctx.const(_static_counts(spatial, kernel, strides, dilations, pads), F64))
    ones = ctx.op("Expand", ctx.const(1.0, F64), ctx.op("Concat", _i64(ctx, [1, 1]),
                                                        ctx.op("Shape", x, start=2), axis=0))
    count = None
    for s in window_slices(ctx, _padded(ctx, ones, pads, nsp), kernel, strides, dilations):
        count = s if count is None else ctx.op("Add", count, s)
    return ctx.op("Div", total, count)


def _static_counts(spatial, kernel, strides, dilations, pads):
    """The (1, 1, *out) float64 counts of non-pad elements per window."""
    nsp = len(kernel)
    ones = np.pad(np.ones(spatial), [(pads[i], pads[i + nsp]) for i in range(nsp)])
    count = 0.0
    for offset in np.ndindex(*kernel):
        index = []
        for i, (o, k, d, s) in enumerate(zip(offset, kernel, dilations, strides)):
            extent = (k - 1) * d
            index.append(slice(o * d, ones.shape[i] - extent + o * d, s))
        count = count + ones[tuple(index)]
    return np.asarray(count, np.float64)[None, None]
