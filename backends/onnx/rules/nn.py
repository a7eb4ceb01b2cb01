"""Rules for the neural-network ops of ``ir/ops/nn.py`` (semantics there),
emitted as the ONNX opset-18 operators onnxruntime runs fast: Relu,
LeakyRelu, HardSigmoid, HardSwish, Conv, Pad, MaxPool, AveragePool,
GlobalAveragePool, GlobalMaxPool, BatchNormalization, Resize, Gemm, Flatten,
and the model-local functions ``SiLU`` and ``Gelu`` (``EmitOptions``).

Measured on onnxruntime 1.31's CPU provider (``tests/backends/test_emit_nn.py``
holds each claim as a test):

* float64: Conv, AveragePool, GlobalAveragePool, GlobalMaxPool, Resize and
  Erf have no float64 kernel. ``conv``, ``convolve2d`` and ``avg_pool``
  follow the ``float64_conv`` option (default: the exact forms of
  ``window_f64``); the others have exact float64 forms.
* ONNX float attributes are float32: LeakyRelu, HardSigmoid, HardSwish,
  BatchNormalization and Gemm compute float64 inputs with ``float(float32(a))``
  for an attribute ``a``, so float64 uses them only when the attribute is
  exactly a float32, and an exact formula otherwise.
* float16 activation, Conv, Gemm and pooling kernels compute in float32 and
  round once (the IR's float16 semantics), except HardSwish, whose float16
  kernel rounds differently: it runs in float32 between Casts.
* Integer kernels: Relu (int8/32/64), MaxPool (int8/uint8), Resize
  (int8/uint8/int32), Pad (all but int16/uint16); no integer Conv, Gemm or
  pooling otherwise. Integer forms are exact bridges or wrapping int64
  arithmetic (see each rule).
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np

from backends.onnx.registry import emits
from backends.onnx.rules import reduction
from backends.onnx.rules.common import (F16, F32, F64, I16, I32, I64, I8, U16, U32, U64, U8, float_compute,
                                        in_f32, kernel_op, where)
from backends.onnx.rules.mathfn import sigmoid
from backends.onnx.rules.transcendental import erf_f64
from backends.onnx.rules.window_f64 import avg_pool_f64, conv_f64
from ir.opdef import NO_NEG_INF, get_op

INT64_MIN, INT64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def _i64(ctx, values):
    return ctx.const(np.array(values, dtype=np.int64).reshape(-1), I64)


def _is_f32(value: float) -> bool:
    """Whether an attribute value survives ONNX's float32 attribute storage."""
    return float(np.float32(value)) == value or np.isnan(value)


def float64_compute(ctx, node, onnx_op: str):
    """The dtype to run ``onnx_op`` (which onnxruntime's CPU provider lacks
    in float64) in for ``node``: its input dtype, or float32 for float64
    under ``float64_conv="float32"`` (with a ``UserWarning`` naming the op).
    Under ``"exact"`` (the default) the caller emits the float64 form of
    ``window_f64`` instead; under ``"native"`` the float64 operator itself."""
    dtype = node.inputs[0].dtype
    if dtype != F64 or ctx.options.float64_conv != "float32":
        return dtype
    warnings.warn(f"IR op {node.op!r}: float64 {onnx_op} computes in float32 (float64_conv='float32'): "
                  f"its results carry float32 precision", UserWarning, stacklevel=4)
    return F32


def exact_f64(ctx, node) -> bool:
    """Whether ``node`` (conv, convolve2d, avg_pool) is float64 emitted in
    its exact decomposition (``float64_conv="exact"``)."""
    return node.inputs[0].dtype == F64 and ctx.options.float64_conv == "exact"


def _via(ctx, x, dtype, compute):
    return x if compute == dtype else ctx.cast(x, compute)


# -- activations ---------------------------------------------------------------
@emits("relu")
def relu(ctx, node, x):
    """Relu; int16 through int32 (exact). Measured: NaN propagates (its sign
    too), as in ``np.maximum(x, 0)``; Relu(-0.0) is -0.0 where NumPy's SIMD
    maximum gives +0.0 (the sign of a zero maximum is unspecified in both)."""
    dtype = node.inputs[0].dtype
    return ctx.cast(ctx.op("Relu", ctx.cast(x, I32)), I16) if dtype == I16 else ctx.op("Relu", x)


@emits("leaky_relu")
def leaky_relu(ctx, node, x):
    """LeakyRelu (``x >= 0 ? x : alpha * x`` in onnxruntime, which equals the
    IR's ``x > 0 ? x : alpha * x`` for alpha >= 0, zeros included; NaN and
    -inf measured to propagate). float64 with an alpha that is not a float32
    is PRelu with a float64 slope; a negative alpha uses the sign-exact
    ``where`` (there the sign of alpha * 0 matters)."""
    dtype, alpha = node.inputs[0].dtype, node.attrs["alpha"]
    if not alpha >= 0:
        def select(v):
            c = float_compute(dtype)
            return where(ctx, ctx.op("Greater", v, ctx.const(0, c)), v, ctx.op("Mul", v, ctx.const(alpha, c)), c)

        return in_f32(ctx, dtype, select, x)
    if dtype == F64 and not _is_f32(alpha):
        return ctx.op("PRelu", x, ctx.const(alpha, F64))
    return ctx.op("LeakyRelu", x, alpha=alpha)


@emits("hard_sigmoid")
def hard_sigmoid(ctx, node, x):
    """HardSigmoid (measured: ``max(0, min(1, alpha * x + beta))`` with no
    fused multiply-add; NaN propagates). float64 with alpha or beta not
    float32 values: Mul, Add, Min, Max (onnxruntime's Min/Max propagate NaN)."""
    dtype, alpha, beta = node.inputs[0].dtype, node.attrs["alpha"], node.attrs["beta"]
    if dtype != F64 or (_is_f32(alpha) and _is_f32(beta)):
        return ctx.op("HardSigmoid", x, alpha=alpha, beta=beta)
    v = ctx.op("Add", ctx.op("Mul", ctx.const(alpha, F64), x), ctx.const(beta, F64))
    return ctx.op("Max", ctx.op("Min", v, ctx.const(1, F64)), ctx.const(0, F64))


@emits("hard_swish")
def hard_swish(ctx, node, x):
    """HardSwish (measured in float32: ``x * clip(x * float32(1/6) + 0.5, 0, 1)``,
    bit for bit; NaN propagates, -inf gives NaN). float16 runs it in float32
    between Casts (the float16 kernel rounds otherwise); float64 is that
    formula in float64 (the attribute 1/6 is not a float32)."""
    dtype = node.inputs[0].dtype
    if dtype == F64:
        v = ctx.op("Add", ctx.op("Mul", x, ctx.const(1 / 6, F64)), ctx.const(0.5, F64))
        return ctx.op("Mul", x, ctx.op("Min", ctx.op("Max", v, ctx.const(0, F64)), ctx.const(1, F64)))
    return in_f32(ctx, dtype, lambda v: ctx.op("HardSwish", v), x)


def _fused(ctx, option: str, name: str, overload: str, body, x):
    """``body(ctx, x)`` as a call of the model-local function ``name`` when
    ``option == "function"``, else inlined."""
    if option == "function":
        return ctx.call_function(name, overload, [x], body)
    return body(ctx, x)


def _in_f32_body(dtype, fn):
    """A function body computing ``fn(ctx, v, compute_dtype)``; float16 in float32, rounded once."""
    def body(c, x):
        return in_f32(c, dtype, lambda v: fn(c, v, float_compute(dtype)), x)
    return body


def _silu(c, x, dtype):
    return c.op("Mul", x, sigmoid(c, x, dtype))


def _silu_fast(c, x, dtype):
    return c.op("Mul", x, c.op("Sigmoid", x))


# Bound of the fast float32 SiLU (onnxruntime's Sigmoid, fused with the Mul
# into QuickGelu): |error| <= SILU_FAST_ABS_EPS * eps * max(1, |x|); measured
# 1.5 (tests/numerics/test_contract.py).
SILU_FAST_ABS_EPS = 2


@emits("silu")
def silu(ctx, node, x):
    """``x * sigmoid(x)``.

    ``numerics="strict"`` (and float64 in both modes): sigmoid as
    ``1 / (1 + exp(-x))`` (``mathfn.sigmoid``: within 4 ulp of
    ``scipy.special.expit`` wherever the result is a normal number).
    ``numerics="fast"``, float16/float32: ``Mul(x, Sigmoid(x))``, which
    onnxruntime fuses into one QuickGelu kernel (YOLO11n: 1.2x faster than the
    strict form); its Sigmoid is a clamped rational approximation, off by up
    to ~5e7 ulp relative for x < -15, so the contract bound is absolute:
    ``|error| <= 2 eps max(1, |x|)`` (measured 1.5). float64 keeps the
    strict form (onnxruntime's float64 Sigmoid returns 0 below about -40).

    ``silu="function"``: a call of the model-local function ``SiLU``
    (overload: the dtype, ``-fast`` for the fast body); ``"primitive"``: the
    same body inline; ``"auto"``: primitive under ``numerics="fast"``,
    function under ``"strict"``."""
    dtype = node.inputs[0].dtype
    form = ctx.options.silu
    if form == "auto":
        form = "function" if ctx.options.strict else "primitive"
    if not ctx.options.strict and dtype in (F16, F32):
        return _fused(ctx, form, "SiLU", f"{dtype}-fast", _in_f32_body(dtype, _silu_fast), x)
    return _fused(ctx, form, "SiLU", str(dtype), _in_f32_body(dtype, _silu), x)


def _gelu(approximate):
    def fn(c, x, dtype):
        k = lambda value: c.const(value, dtype)  # noqa: E731
        if approximate == "tanh":
            cube = c.op("Mul", c.op("Mul", c.op("Mul", k(0.044715), x), x), x)
            t = c.op("Tanh", c.op("Mul", k(np.sqrt(2 / np.pi)), c.op("Add", x, cube)))
        else:
            scaled = c.op("Div", x, k(np.sqrt(2)))
            t = erf_f64(c, scaled) if dtype == F64 else c.op("Erf", scaled)
        return c.op("Mul", c.op("Mul", k(0.5), x), c.op("Add", k(1), t))
    return fn


@emits("gelu")
def gelu(ctx, node, x):
    """``0.5 x (1 + erf(x / sqrt 2))`` (Erf; float64 ``transcendental.erf_f64``,
    onnxruntime has no float64 Erf) or the tanh form, in the IR's operation
    order. ``gelu="function"``: a call of the model-local function ``Gelu``
    (overload: dtype, ``-tanh`` for the approximation; ONNX's own Gelu is
    opset 20); ``"primitive"``: the same body inline."""
    dtype, approximate = node.inputs[0].dtype, node.attrs["approximate"]
    overload = str(dtype) + ("-tanh" if approximate == "tanh" else "")
    return _fused(ctx, ctx.options.gelu, "Gelu", overload, _in_f32_body(dtype, _gelu(approximate)), x)


# -- convolution ------------------------------------------------------------------
def _window(node, kernel=None):
    """``(kernel, strides, dilations, pads)`` of a conv or pool node, defaults filled in."""
    nsp = node.inputs[0].rank - 2
    kernel = tuple(kernel if kernel is not None else node.attrs["kernel"])
    strides = tuple(node.attrs["strides"] or (1,) * nsp)
    dilations = tuple(node.attrs.get("dilations") or (1,) * nsp)
    pads = tuple(node.attrs["pads"] or (0,) * (2 * nsp))
    return kernel, strides, dilations, pads


def flip_spatial(ctx, w, rank: int):
    """``w`` with its axes 2.. reversed: Slice with step -1."""
    n = rank - 2
    return ctx.op("Slice", w, _i64(ctx, [-1] * n), _i64(ctx, [INT64_MIN] * n), _i64(ctx, range(2, rank)),
                  _i64(ctx, [-1] * n))


@emits("conv")
def conv(ctx, node, x, w, b=None):
    """Conv with the bias as third input. ``flip`` reverses the kernel's
    spatial axes first (a Slice; the ``filter-flip`` pass normally folds it
    into the weights at compile time). float16 is onnxruntime's float16
    Conv (float32 accumulation, one rounding); float64 follows
    ``float64_conv``: by default the exact ``window_f64.conv_f64``, else
    Conv in float32 (``float64_compute``) or a native float64 Conv."""
    dtype = node.inputs[0].dtype
    if node.attrs["flip"]:
        w = flip_spatial(ctx, w, node.inputs[1].rank)
    kernel, strides, dilations, pads = _window(node, node.inputs[1].shape[2:])
    if exact_f64(ctx, node):
        return conv_f64(ctx, x, w, b, w_shape=node.inputs[1].shape, out_shape=node.outputs[0].shape,
                        kernel=kernel, strides=strides, dilations=dilations, pads=pads, group=node.attrs["group"])
    compute = float64_compute(ctx, node, "Conv")
    args = [_via(ctx, v, dtype, compute) for v in (x, w, b) if v is not None]
    y = ctx.op("Conv", *args, strides=list(strides), pads=list(pads), dilations=list(dilations),
               group=node.attrs["group"])
    return _via(ctx, y, compute, dtype)


@emits("pad")
def pad(ctx, node, x, value):
    """Pad (mode constant, pads and constant_value inputs); int16/uint16
    through int32 (exact)."""
    dtype = node.inputs[0].dtype
    compute = I32 if dtype in (I16, U16) else dtype
    y = ctx.op("Pad", _via(ctx, x, dtype, compute), _i64(ctx, node.attrs["pads"]), _via(ctx, value, dtype, compute),
               mode="constant")
    return _via(ctx, y, compute, dtype)


# -- pooling ------------------------------------------------------------------------
# MaxPool has float16/32/64, int8 and uint8 kernels. Integer dtypes it lacks, run in a float type holding all their values (order-exact).
MAX_POOL_BRIDGE = {I16: F32, U16: F32, I32: F64, U32: F64}


def _pool_attrs(node):
    kernel, strides, dilations, pads = _window(node)
    return dict(kernel_shape=list(kernel), strides=list(strides), dilations=list(dilations), pads=list(pads))


def _lowest(dtype):
    return -np.inf if dtype.is_float else np.iinfo(dtype.numpy).min


def _pad_spatial(ctx, x, pads, dtype):
    """``x`` padded on its spatial axes by ``pads`` (begins, then ends) with ``dtype``'s lowest value."""
    nsp = len(pads) // 2
    return ctx.op("Pad", x, _i64(ctx, [0, 0, *pads[:nsp], 0, 0, *pads[nsp:]]), ctx.const(_lowest(dtype), dtype))


_NEG_INF_LOOKBACK = 16  # producers followed at most, so the check stays O(1) per pool


def never_neg_inf(value) -> bool:
    """True when ``value`` provably holds no -inf: produced by an op with
    the ``no_neg_inf`` trait (relu, exp, sigmoid, silu...), by a ``max_pool`` of such a value whose windows
    each hold a real element (``_windows_hold_input``), or by a ``concat``
    of such values, at most ``_NEG_INF_LOOKBACK`` producers deep; or a
    constant without -inf. False when unsure."""
    budget = [_NEG_INF_LOOKBACK]

    def check(v) -> bool:
        if v.const is not None:
            return not np.any(np.isneginf(v.const))
        node = v.producer
        budget[0] -= 1
        if node is None or budget[0] < 0:
            return False
        if get_op(node.op).has(NO_NEG_INF):
            return True
        if node.op == "max_pool":
            return _windows_hold_input(node) and check(node.inputs[0])
        if node.op == "concat":
            return all(check(i) for i in node.inputs)
        return False

    return check(value)


def _windows_hold_input(node) -> bool:
    """Every window of a pool ``node`` holds at least one input element.
    The IR keeps every pad below the kernel size (ONNX pooling), so without
    dilation a window starts at most ``k - 1`` before the input and ends at
    most ``k - 1`` after it; dilated windows are not analysed (False)."""
    _, _, dilations, _ = _window(node)
    return all(d == 1 for d in dilations)


@emits("max_pool")
def max_pool(ctx, node, x):
    """MaxPool. Measured differences bridged: float32 MaxPool pads with
    -FLT_MAX, so a padded window whose input elements are all -inf gives
    -FLT_MAX instead of -inf; float32 pads are therefore an explicit Pad with
    -inf, unless the input provably holds no -inf and every window holds an
    input element (``never_neg_inf``, e.g. a pool of a SiLU or ReLU: then
    MaxPool's own pads are exact, and onnxruntime keeps the pool in its
    blocked layout, as torch's exports do); int16/uint16 run in float32 and
    int32/uint32 in float64 (exact); int64/uint64 are a Max over strided
    Slices of the input padded with the dtype's minimum. A NaN in a window
    gives NaN only when MaxPool visits it last (the IR leaves this
    unspecified); ``max_pool_nan="propagate"`` makes such windows NaN."""
    dtype = node.inputs[0].dtype
    if dtype in (I64, U64):
        return _max_of_slices(ctx, node, x)
    attrs = _pool_attrs(node)
    compute = MAX_POOL_BRIDGE.get(dtype, dtype)
    v = _via(ctx, x, dtype, compute)
    if dtype == F32 and any(attrs["pads"]) and not (_windows_hold_input(node) and never_neg_inf(node.inputs[0])):
        v = _pad_spatial(ctx, v, attrs["pads"], F32)
        y = ctx.op("MaxPool", v, **{**attrs, "pads": [0] * len(attrs["pads"])})
    else:
        y = ctx.op("MaxPool", v, **attrs)
    if dtype.is_float and ctx.options.max_pool_nan == "propagate":
        mask = ctx.op("MaxPool", ctx.cast(ctx.op("IsNaN", x), dtype), **attrs)
        y = ctx.op("Where", ctx.op("Greater", mask, ctx.const(0, dtype)), ctx.const(np.nan, dtype), y)
    return _via(ctx, y, compute, dtype)


def _max_of_slices(ctx, node, x):
    """Max pooling as ``Max`` over one strided Slice per kernel offset of
    the input padded with the dtype's minimum (which never wins)."""
    dtype, rank = node.inputs[0].dtype, node.inputs[0].rank
    kernel, strides, dilations, pads = _window(node)
    if any(pads):
        x = _pad_spatial(ctx, x, pads, dtype)
    slices = []
    for offset in np.ndindex(*kernel):
        starts = [o * d for o, d in zip(offset, dilations)]
        ends = [_end_before(s, (k - 1) * d) for s, k, d in zip(starts, kernel, dilations)]
        slices.append(ctx.op("Slice", x, _i64(ctx, starts), _i64(ctx, ends), _i64(ctx, range(2, rank)),
                             _i64(ctx, strides)))
    return kernel_op(ctx, "Max", dtype, *slices) if len(slices) > 1 else ctx.op("Identity", slices[0])


def _end_before(start: int, extent: int) -> int:
    """The Slice end keeping ``x[start:len - (extent - start)]``: the
    positions a window of span ``extent + 1`` can start from, shifted by ``start``."""
    rest = extent - start
    return -rest if rest > 0 else INT64_MAX


@emits("avg_pool")
def avg_pool(ctx, node, x):
    """AveragePool (count_include_pad; the window sum divided by the count,
    as the IR computes). float16 runs in float32 between Casts (one
    rounding); float64 follows ``float64_conv``: by default the exact
    ``window_f64.avg_pool_f64`` (any dilation), else AveragePool in float32
    or natively. Dilations on AveragePool need opset 19.

    Raises:
        EmitError: an AveragePool with dilations other than 1 under opset 18.
    """
    dtype = node.inputs[0].dtype
    if exact_f64(ctx, node):
        kernel, strides, dilations, pads = _window(node)
        return avg_pool_f64(ctx, x, x_shape=node.inputs[0].shape, kernel=kernel, strides=strides,
                            dilations=dilations, pads=pads, count_include_pad=node.attrs["count_include_pad"])
    attrs = _pool_attrs(node)
    if any(d != 1 for d in attrs["dilations"]) and ctx.opset < 19:
        raise ctx.error("AveragePool takes dilations from opset 19; emit with opset=19")
    if ctx.opset < 19:
        del attrs["dilations"]
    compute = F32 if dtype == F16 else float64_compute(ctx, node, "AveragePool")
    y = ctx.op("AveragePool", _via(ctx, x, dtype, compute), count_include_pad=int(node.attrs["count_include_pad"]),
               **attrs)
    return _via(ctx, y, compute, dtype)


def _spatial_reduce(ctx, node, x, op):
    """The IR ``reduce_*`` rule over the spatial axes, keeping them (``reduction.reduce``)."""
    view = SimpleNamespace(op=op, inputs=node.inputs, outputs=node.outputs,
                           attrs={"axes": tuple(range(2, node.inputs[0].rank)), "keepdims": True})
    return reduction.reduce(ctx, view, x)


@emits("global_avg_pool")
def global_avg_pool(ctx, node, x):
    """GlobalAveragePool (float16 accumulates in float32 as ``np.mean`` does);
    float64, which it lacks, is ReduceMean over the spatial axes."""
    if node.inputs[0].dtype == F64:
        return ctx.op("ReduceMean", x, _i64(ctx, range(2, node.inputs[0].rank)), keepdims=1)
    return ctx.op("GlobalAveragePool", x)


@emits("global_max_pool")
def global_max_pool(ctx, node, x):
    """GlobalMaxPool for float16/float32 (measured: it skips NaN, which the IR
    leaves unspecified); other dtypes, and every float under
    ``max_pool_nan="propagate"``, use the exact ``reduce_max`` rule over the
    spatial axes (NaN propagates; integer bridges)."""
    dtype = node.inputs[0].dtype
    if dtype in (F16, F32) and ctx.options.max_pool_nan == "native":
        return ctx.op("GlobalMaxPool", x)
    return _spatial_reduce(ctx, node, x, "reduce_max")


# -- batch norm, resize, gemm, flatten -------------------------------------------------
@emits("batch_norm")
def batch_norm(ctx, node, x, scale, bias, mean, var):
    """BatchNormalization (inference). onnxruntime folds the statistics into
    one scale and shift, so results differ from the IR's formula by
    rounding (a few ulp of the terms). float16 runs in float32 between
    Casts; float64 with an epsilon that is not a float32 adds it to ``var``
    in float64 and passes epsilon 0 (the attribute is a float32)."""
    dtype, eps = node.inputs[0].dtype, node.attrs["epsilon"]
    if dtype == F64 and not _is_f32(eps):
        var, eps = ctx.op("Add", var, ctx.const(eps, F64)), 0.0
    compute = float_compute(dtype)
    args = [_via(ctx, v, dtype, compute) for v in (x, scale, bias, mean, var)]
    return _via(ctx, ctx.op("BatchNormalization", *args, epsilon=eps), compute, dtype)


RESIZE_KERNELS = {F16, F32, I8, U8, I32}


@emits("resize_nearest")
def resize_nearest(ctx, node, x):
    """Resize (mode nearest, coordinate_transformation_mode asymmetric,
    nearest_mode floor, float32 scales): output index i reads ``floor(i / s)``,
    which is ``np.repeat`` for integer scales (measured exact, sizes to
    9100). Dtypes Resize lacks (float64, int16, int64, bool, ...) use
    Unsqueeze, Expand and Reshape (data movement, exact)."""
    dtype, scales = node.inputs[0].dtype, node.attrs["scales"]
    if dtype in RESIZE_KERNELS:
        return ctx.op("Resize", x, None, ctx.const(np.array(scales, np.float32), F32), mode="nearest",
                      coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    scaled = [a for a, s in enumerate(scales) if s != 1]
    if not scaled:
        return ctx.op("Identity", x)
    axes = [a + i + 1 for i, a in enumerate(scaled)]  # a new axis after each scaled one
    wide = ctx.op("Unsqueeze", x, _i64(ctx, axes))
    repeats = [1] * (node.inputs[0].rank + len(axes))
    for new_axis, a in zip(axes, scaled):
        repeats[new_axis] = scales[a]
    wide = ctx.op("Expand", wide, _i64(ctx, repeats))
    out = node.outputs[0].type
    shape = (_i64(ctx, out.shape) if out.is_static
             else ctx.op("Mul", ctx.op("Shape", x), _i64(ctx, scales)))
    return ctx.op("Reshape", wide, shape)


@emits("gemm")
def gemm(ctx, node, a, b, c):
    """Gemm for floats (float16 accumulates in float32 and rounds once, as
    the IR defines). float64 with alpha or beta not a float32 is
    ``Gemm(a, b)`` (alpha 1, no C), then Mul and Add in the IR's order: a
    MatMul followed by a Mul by a constant would meet onnxruntime 1.31's
    MatMulScaleFusion, which rounds a float64 scale to a float32
    attribute. Ints (onnxruntime has no integer Gemm) are Transpose,
    MatMul, Mul and Add, wrapping (``kernel_op``'s int64 ring bridge)."""
    dtype, at = node.inputs[0].dtype, node.attrs
    alpha, beta = at["alpha"], at["beta"]
    trans = dict(transA=int(at["trans_a"]), transB=int(at["trans_b"]))
    if dtype.is_float and (dtype != F64 or (_is_f32(alpha) and _is_f32(beta))):
        return ctx.op("Gemm", a, b, c, alpha=alpha, beta=beta, **trans)
    if dtype.is_float:
        ab = ctx.op("Gemm", a, b, **trans)
    else:
        a = ctx.op("Transpose", a) if at["trans_a"] else a
        b = ctx.op("Transpose", b) if at["trans_b"] else b
        ab = kernel_op(ctx, "MatMul", dtype, a, b)
    if alpha != 1:
        ab = kernel_op(ctx, "Mul", dtype, ctx.const(alpha, dtype), ab)
    if beta != 1:
        c = kernel_op(ctx, "Mul", dtype, ctx.const(beta, dtype), c)
    return kernel_op(ctx, "Add", dtype, ab, c)


@emits("flatten")
def flatten(ctx, node, x):
    """Flatten (every dtype has a kernel)."""
    return ctx.op("Flatten", x, axis=node.attrs["axis"])


# -- convolve2d -----------------------------------------------------------------------
@emits("convolve2d")
def convolve2d(ctx, node, x, k):
    """PyTensor's ``Blockwise(Convolve2d)`` as one grouped Conv (floats) or
    wrapping int64 multiply-adds (ints; onnxruntime has no integer Conv).

    Floats (float16 natively, float64 per ``float64_conv``: by default
    ``window_f64.conv_f64`` on the same grouped form, which gathers the
    windows when the kernel's dims are known only at run time): each broadcast
    batch axis of ``x`` and ``k`` becomes part of the Conv's batch (``k`` is 1
    there), of its output channels (``x`` is 1 there) or of its groups (both
    vary; one group per element, which needs a static size); the kernel is
    flipped (true convolution). Full mode pads by ``k - 1``; valid mode pads
    by ``max(0, k - n)``, which yields scipy's swapped result when the kernel
    is the larger operand (its sums only add products with padding zeros).
    Pads are Conv attributes when the sizes are static, else a Pad node.

    Raises:
        EmitError: a batch axis where both operands vary has no static size;
            integer kernels with dynamic spatial dims.
    """
    dtype = node.inputs[0].dtype
    if dtype.is_int:
        return _convolve2d_taps(ctx, node, x, k)
    compute = float64_compute(ctx, node, "Conv")
    y = _convolve2d_conv(ctx, node, _via(ctx, x, dtype, compute), _via(ctx, k, dtype, compute), compute)
    return _via(ctx, y, compute, dtype)


def _spatial_pads(ctx, node, xs, ks):
    """The pad ``q`` per spatial axis: a list of ints when static, else an
    int64 (2,) value computed from the runtime shapes ``xs`` and ``ks``
    (thunks giving the spatial dims of the image and the kernel)."""
    (n_h, n_w), (m_h, m_w) = node.inputs[0].shape[-2:], node.inputs[1].shape[-2:]
    full = node.attrs["full"]
    static = []
    for n, m in ((n_h, m_h), (n_w, m_w)):
        if isinstance(m, int) and (full or m == 1):
            static.append(m - 1 if full else 0)
        elif isinstance(m, int) and isinstance(n, int):
            static.append(max(0, m - n))
        else:
            static = None
            break
    if static is not None:
        return static
    m = ks()
    if full:
        return ctx.op("Sub", m, ctx.const(np.array([1, 1]), I64))
    return ctx.op("Max", ctx.op("Sub", m, xs()), ctx.const(np.array([0, 0]), I64))


def _pad_last2(ctx, x, q, rank, dtype):
    """``x`` zero-padded by ``q[j]`` on both sides of its last two axes (``q`` static or an int64 value)."""
    if isinstance(q, list):
        if not any(q):
            return x
        pads = _i64(ctx, [0] * (rank - 2) + q + [0] * (rank - 2) + q)
    else:
        zeros = ctx.const(np.zeros(rank - 2, np.int64), I64)
        pads = ctx.op("Concat", zeros, q, zeros, q, axis=0)
    return ctx.op("Pad", x, pads, ctx.const(0, dtype))


def _batch_roles(node):
    """``(r, bx, bk, roles)``: the broadcast batch rank, the batch dims of
    ``x`` and ``k`` left-padded with 1s to it, and per axis ``"n"`` (``k``
    is 1: Conv batch), ``"m"`` (``x`` is 1: output channels) or ``"g"``
    (both vary: groups)."""
    tx, tk = node.inputs[0].type, node.inputs[1].type
    r = max(tx.rank, tk.rank) - 2
    bx = (1,) * (r - tx.rank + 2) + tx.shape[:-2]
    bk = (1,) * (r - tk.rank + 2) + tk.shape[:-2]
    roles = ["n" if dk == 1 else "m" if dx == 1 else "g" for dx, dk in zip(bx, bk)]
    return r, bx, bk, roles


def _aligned(ctx, v, rank, r, dims, sizes):
    """``v`` with leading 1s up to ``r`` batch axes, expanded to ``sizes[i]``
    on the axes where ``sizes[i]`` is set and its dim is not already that."""
    if rank - 2 < r:
        v = ctx.op("Unsqueeze", v, _i64(ctx, range(r - rank + 2)))
    if any(s is not None and d != s for d, s in zip(dims, sizes)):
        v = ctx.op("Expand", v, _i64(ctx, [1 if s is None else s for s in sizes] + [1, 1]))
    return v


def _transposed(ctx, v, perm, dims=None):
    """``v`` transposed by ``perm``; no node when the axes whose size is not
    statically 1 (``dims``) keep their order (the Reshape that follows
    moves the others)."""
    moving = [p for p in perm if dims is None or p >= len(dims) or dims[p] != 1]
    return v if moving == sorted(moving) else ctx.op("Transpose", v, perm=list(perm))


def _convolve2d_conv(ctx, node, x, k, dtype):
    """The grouped-Conv form of ``convolve2d`` (see ``convolve2d``) on
    ``x`` and ``k`` of float ``dtype``."""
    r, bx, bk, roles = _batch_roles(node)
    sizes = [None] * r
    for i, role in enumerate(roles):
        if role == "g":
            sizes[i] = next((d for d in (bx[i], bk[i]) if isinstance(d, int)), None)
            if sizes[i] is None:
                raise ctx.error(f"batch axis {i} varies in both operands with no static size: ONNX Conv "
                                f"needs a static group count (give the inputs static shapes)")
    x = _aligned(ctx, x, node.inputs[0].rank, r, bx, sizes)
    k = _aligned(ctx, k, node.inputs[1].rank, r, bk, sizes)
    axes = {role: [i for i in range(r) if roles[i] == role] for role in "ngm"}
    groups = int(np.prod([sizes[i] for i in axes["g"]], dtype=np.int64))
    image = ctx.op("Reshape", _transposed(ctx, x, axes["n"] + axes["g"] + axes["m"] + [r, r + 1], bx),
                   _shape_with(ctx, [-1, groups], x, node.inputs[0].shape[-2:]))
    kernel = ctx.op("Reshape", _transposed(ctx, k, axes["g"] + axes["m"] + axes["n"] + [r, r + 1], bk),
                    _shape_with(ctx, [-1, 1], k, node.inputs[1].shape[-2:]))
    q = _spatial_pads(ctx, node, lambda: ctx.op("Shape", image, start=2), lambda: ctx.op("Shape", kernel, start=2))
    pads = q + q if isinstance(q, list) else [0, 0, 0, 0]
    if not isinstance(q, list):
        image = _pad_last2(ctx, image, q, 4, dtype)
    kernel = flip_spatial(ctx, kernel, 4)
    if exact_f64(ctx, node):
        taps = node.inputs[1].shape[-2:]
        y = conv_f64(ctx, image, kernel, None, w_shape=(None, 1, *taps), out_shape=(None,) * 4, kernel=tuple(taps),
                     strides=(1, 1), dilations=(1, 1), pads=tuple(pads), group=groups)
    else:
        y = ctx.op("Conv", image, kernel, group=groups, pads=pads)
    out = node.outputs[0].type
    order = axes["n"] + axes["g"] + axes["m"]
    if out.is_static:
        target = _i64(ctx, [out.shape[i] for i in order] + list(out.shape[-2:]))
    else:
        parts = [ctx.op("Gather", ctx.op("Shape", x), _i64(ctx, axes["n"])), _i64(ctx, [sizes[i] for i in axes["g"]]),
                 ctx.op("Gather", ctx.op("Shape", k), _i64(ctx, axes["m"])), ctx.op("Shape", y, start=2)]
        target = ctx.op("Concat", *parts, axis=0)
    y = ctx.op("Reshape", y, target)
    return _transposed(ctx, y, [int(i) for i in np.argsort(order + [r, r + 1])])


def _shape_with(ctx, lead, v, spatial):
    """The int64 shape ``lead + spatial dims of v``: a constant when they are static."""
    if all(isinstance(d, int) for d in spatial):
        return _i64(ctx, lead + list(spatial))
    return ctx.op("Concat", _i64(ctx, lead), ctx.op("Shape", v, start=-2), axis=0)


def _convolve2d_taps(ctx, node, x, k):
    """Integer ``convolve2d``: in int64, the sum over kernel taps ``(a, b)`` of
    ``k[..., a, b]`` times the padded image shifted by ``(kh-1-a, kw-1-b)``
    (batch axes broadcast by Mul); the wrap-around of int64 products and
    sums keeps the low bits exact, so the Cast back equals the wrapping
    arithmetic of scipy in the input dtype."""
    dtype, tk = node.inputs[0].dtype, node.inputs[1].type
    kh, kw = tk.shape[-2:]
    if not (isinstance(kh, int) and isinstance(kw, int)):
        raise ctx.error("integer convolution needs static kernel dims (it is unrolled over the taps)")
    xi, ki = _via(ctx, x, dtype, I64), _via(ctx, k, dtype, I64)
    q = _spatial_pads(ctx, node, lambda: ctx.op("Shape", xi, start=-2), lambda: ctx.op("Shape", ki, start=-2))
    xi = _pad_last2(ctx, xi, q, node.inputs[0].rank, I64)
    last2 = _i64(ctx, [-2, -1])
    total = None
    for a, b in np.ndindex(kh, kw):
        shift = (kh - 1 - a, kw - 1 - b)
        window = ctx.op("Slice", xi, _i64(ctx, shift), _i64(ctx, [_end_before(shift[0], kh - 1),
                                                                  _end_before(shift[1], kw - 1)]), last2)
        tap = ctx.op("Slice", ki, _i64(ctx, [a, b]), _i64(ctx, [a + 1, b + 1]), last2)
        term = ctx.op("Mul", window, tap)
        total = term if total is None else ctx.op("Add", total, term)
    return _via(ctx, total, I64, dtype)


@emits("layer_norm")
def layer_norm(ctx, node, x, scale, bias):
    """LayerNormalization over the last axis (opset 17). onnxruntime's CPU
    kernel sums each row in its own order and dtype, so results differ from
    the IR's formula by rounding (measured within 1e-6 absolute of PyTensor
    on float32 rows of unit spread with means 0 to 1000,
    ``tests/passes/test_norm_recovery.py``). float16 runs in float32 between
    Casts. float64 is the IR's two-pass formula (ReduceMean, Sub, Mul,
    ReduceMean, Add, Sqrt, Div, Mul, Add): onnxruntime's float64 kernel was
    measured up to ~2000 ulp off it (``tests/backends/test_emit_nn.py``)."""
    dtype = node.inputs[0].dtype
    if dtype == F64:
        last = _i64(ctx, [node.inputs[0].rank - 1])
        d = ctx.op("Sub", x, ctx.op("ReduceMean", x, last, keepdims=1))
        var = ctx.op("ReduceMean", ctx.op("Mul", d, d), last, keepdims=1)
        sd = ctx.op("Sqrt", ctx.op("Add", var, ctx.const(node.attrs["epsilon"], F64)))
        return ctx.op("Add", ctx.op("Mul", ctx.op("Div", d, sd), scale), bias)
    compute = float_compute(dtype)
    args = [_via(ctx, v, dtype, compute) for v in (x, scale, bias)]
    return _via(ctx, ctx.op("LayerNormalization", *args, axis=-1, epsilon=node.attrs["epsilon"]), compute, dtype)


@emits("rms_norm")
def rms_norm(ctx, node, x, scale):
    """``x / Sqrt(ReduceMean(Pow(x, 2)) + eps) * scale`` over the last axis:
    opset 18 has no RMSNormalization (opset 23), and this is the spelling
    onnxruntime's optimizer fuses into one SimplifiedLayerNormalization
    kernel (float32 and float16; checked in ``tests/passes/test_norm_recovery.py``),
    which sums each row in float32 in its own order: results differ from the
    IR's formula by rounding. float16 runs in float32 between Casts."""
    dtype = node.inputs[0].dtype
    compute = float_compute(dtype)
    xc, sc = (_via(ctx, v, dtype, compute) for v in (x, scale))
    mean = ctx.op("ReduceMean", ctx.op("Pow", xc, ctx.const(2.0, compute)), _i64(ctx, [node.inputs[0].rank - 1]),
                  keepdims=1)
    rms = ctx.op("Sqrt", ctx.op("Add", mean, ctx.const(node.attrs["epsilon"], compute)))
    y = ctx.op("Div", xc, rms)
    neutral = node.inputs[1].const is not None and np.all(node.inputs[1].const == 1)  # x * 1 is x
    return _via(ctx, y if neutral else ctx.op("Mul", y, sc), compute, dtype)
