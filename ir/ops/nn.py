"""Neural-network ops: the high-level operators the rewrite passes recover
from PyTensor's primitive graphs, plus PyTensor's own ``convolve2d``.

Layout is NCHW (``N, C, *spatial``). ``pads`` lists the begin pads of every
spatial axis, then the end pads (ONNX order). Reference semantics are NumPy
/ SciPy, written to match the ONNX operator specs (Conv, MaxPool,
AveragePool, BatchNormalization, Resize, Gemm, Flatten, Relu, LeakyRelu,
HardSigmoid, HardSwish, Pad) and PyTensor's ``Convolve2d``.
"""

from __future__ import annotations

import numpy as np
import scipy.special
from numpy.lib.stride_tricks import sliding_window_view

from ir import symbolic as sym
from ir.ops.common import broadcast_shapes, check_dtype, same_dtype
from ir.ops.elementwise import _unary
from ir.opdef import ELEMENTWISE, NO_NEG_INF, ROW_MAJOR_VIEW, TOTAL, Attr, OpDef, OpError, register
from ir.types import TensorType, dims_compatible

# -- activations ---------------------------------------------------------
_unary("relu", lambda x: np.maximum(x, np.zeros((), x.dtype)), "if",
       doc="max(x, 0) (ONNX Relu); NaN propagates; the sign of relu(-0.0) is unspecified, as in np.maximum")


def _half_in_f32(fn):
    """``fn(*arrays)`` computed in float32 when the first array is float16, with
    the result rounded to float16 once: the float16 semantics of every fused
    op here (onnxruntime's float16 activation kernels compute that way)."""
    def wrapped(args, *rest):
        dtype = args[0].dtype
        if dtype != np.float16:
            return np.asarray(fn(args, *rest), dtype=dtype)
        wide = [a.astype(np.float32) if a.dtype == np.float16 else a for a in args]
        return np.asarray(fn(wide, *rest), dtype=np.float32).astype(np.float16)
    return wrapped


def _activation(name: str, fn, attrs: dict[str, Attr], doc: str) -> OpDef:
    """Register a float activation ``fn(x, attrs)``: computed in the input
    dtype, float16 in float32 rounded once."""
    def infer(types, at, consts):
        check_dtype(types[0], "f", name)
        return [types[0]]

    compute = _half_in_f32(lambda args, at: fn(args[0], at))
    traits = {ELEMENTWISE, TOTAL} | ({NO_NEG_INF} if name == "silu" else set())  # silu(-inf) = -inf * 0 = NaN
    return register(OpDef(name, infer, lambda args, at: [compute(args, at)], 1, attrs=attrs, traits=traits, doc=doc))


def _cst(x, value):
    return np.asarray(value, dtype=x.dtype)


_activation("silu", lambda x, a: x * scipy.special.expit(x), {},
            "x * sigmoid(x) (SiLU / Swish); ONNX has no SiLU operator in opset 18")
_activation("hard_swish", lambda x, a: x * np.clip(x * _cst(x, 1 / 6) + _cst(x, 0.5), _cst(x, 0), _cst(x, 1)), {},
            "x * clip(x * alpha + 1/2, 0, 1) with alpha = 1/6 rounded to the dtype (ONNX HardSwish, "
            "as onnxruntime computes it: x * alpha, not x / 6); NaN propagates, -inf gives NaN")
_activation("leaky_relu", lambda x, a: np.where(x > 0, x, _cst(x, a["alpha"]) * x),
            {"alpha": Attr("float", 0.01)}, "x if x > 0 else alpha * x (ONNX LeakyRelu); NaN propagates")
_activation("hard_sigmoid",
            lambda x, a: np.maximum(np.minimum(_cst(x, a["alpha"]) * x + _cst(x, a["beta"]), _cst(x, 1)), _cst(x, 0)),
            {"alpha": Attr("float", 0.2), "beta": Attr("float", 0.5)},
            "max(0, min(1, alpha * x + beta)) (ONNX HardSigmoid); NaN propagates")


def _gelu(x, a):
    half, one = _cst(x, 0.5), _cst(x, 1)
    if a["approximate"] == "tanh":
        inner = _cst(x, np.sqrt(2 / np.pi)) * (x + _cst(x, 0.044715) * x * x * x)
        return half * x * (one + np.tanh(inner))
    return half * x * (one + scipy.special.erf(x / _cst(x, np.sqrt(2))))


_activation("gelu", _gelu, {"approximate": Attr("str", "none", ("none", "tanh"))},
            "0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation (ONNX Gelu, opset 20)")


# -- window geometry -------------------------------------------------------
def _spatial_out(size, kernel, stride, pad_begin, pad_end, dilation):
    """``(size + pads - extent) // stride + 1`` (ONNX Conv/pool output size,
    floor mode); symbolic for a symbolic size (``(H-3)//2+1``)."""
    extent = sym.add(sym.mul(sym.sub(kernel, 1), dilation), 1)
    return sym.add(sym.floordiv(sym.sub(sym.add(size, pad_begin + pad_end), extent), stride), 1)


def _window_attrs(x: TensorType, attrs, op: str, kernel=None):
    nsp = x.rank - 2
    if nsp < 1:
        raise OpError(f"{op}: input must be (N, C, *spatial), got {x}")
    kernel = kernel if kernel is not None else attrs["kernel"]
    strides = attrs["strides"] or (1,) * nsp
    dilations = attrs.get("dilations") or (1,) * nsp
    pads = attrs["pads"] or (0,) * (2 * nsp)
    if len(kernel) != nsp or len(strides) != nsp or len(dilations) != nsp or len(pads) != 2 * nsp:
        raise OpError(f"{op}: kernel/strides/dilations need {nsp} entries and pads {2 * nsp} for {x}")
    if min(strides) < 1 or min(dilations) < 1 or min(pads) < 0 or min((k for k in kernel if isinstance(k, int)), default=1) < 1:
        raise OpError(f"{op}: kernel, strides and dilations must be >= 1 and pads >= 0")
    return tuple(kernel), tuple(strides), tuple(dilations), tuple(pads)


def _windows(x, kernel, strides, dilations, pads, fill):
    """View of x's sliding windows: (N, C, *out, *kernel), padded with ``fill``."""
    nsp = x.ndim - 2
    width = [(0, 0), (0, 0)] + [(pads[i], pads[i + nsp]) for i in range(nsp)]
    xp = np.pad(x, width, constant_values=fill)
    extent = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    w = sliding_window_view(xp, extent, axis=tuple(range(2, x.ndim)))
    w = w[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]
    return w[(Ellipsis,) + tuple(slice(None, None, d) for d in dilations)]


_WINDOW_ATTRS = {"strides": Attr("ints", ()), "pads": Attr("ints", ()), "dilations": Attr("ints", ())}


# -- conv ------------------------------------------------------------------
def _conv_infer(types, attrs, consts):
    if len(types) not in (2, 3):
        raise OpError(f"conv takes (x, w) or (x, w, b), got {len(types)} inputs")
    x, w = types[:2]
    dtype = same_dtype(types, "conv")
    check_dtype(x, "f", "conv")
    if w.rank != x.rank:
        raise OpError(f"conv: weight {w} must have the rank of {x}")
    if any(k is None for k in w.shape[2:]):
        raise OpError(f"conv: kernel spatial dims must be known (static or symbolic), got {w}")
    group = attrs["group"]
    c, m = x.shape[1], w.shape[0]
    if isinstance(c, int) and isinstance(w.shape[1], int) and c != w.shape[1] * group:
        raise OpError(f"conv: {c} input channels != {w.shape[1]} x group {group}")
    if isinstance(m, int) and m % group:
        raise OpError(f"conv: {m} output channels not divisible by group {group}")
    if len(types) == 3 and (types[2].rank != 1 or not dims_compatible(types[2].shape[0], m)):
        raise OpError(f"conv: bias must be ({m},), got {types[2]}")
    kernel, strides, dilations, pads = _window_attrs(x, attrs, "conv", w.shape[2:])
    nsp = x.rank - 2
    out = [_spatial_out(x.shape[2 + i], kernel[i], strides[i], pads[i], pads[i + nsp], dilations[i]) for i in range(nsp)]
    return [TensorType(dtype, (x.shape[0], m, *out))]


@_half_in_f32
def _conv_sums(args, attrs):
    x, w = args[:2]
    nsp = x.ndim - 2
    if attrs["flip"]:
        w = np.flip(w, axis=tuple(range(2, w.ndim)))
    kernel, strides, dilations, pads = _window_attrs(TensorType.of_array(x), attrs, "conv", w.shape[2:])
    win = _windows(x, kernel, strides, dilations, pads, 0)  # (N, C, *out, *k)
    group = attrs["group"]
    cg, mg = x.shape[1] // group, w.shape[0] // group
    red_x = [1] + list(range(2 + nsp, 2 + 2 * nsp))
    red_w = [1] + list(range(2, 2 + nsp))
    parts = [np.tensordot(win[:, g * cg:(g + 1) * cg], w[g * mg:(g + 1) * mg], axes=(red_x, red_w))
             for g in range(group)]  # each (N, *out, mg)
    y = np.moveaxis(np.concatenate(parts, axis=-1), -1, 1).astype(x.dtype)
    if len(args) == 3:  # the bias is added to the rounded sums, as conv(x, w) + b would be
        y = y + args[2].reshape((1, -1) + (1,) * nsp)
    return y


def _conv_eval(args, attrs):
    return [_conv_sums(args, attrs)]


register(OpDef("conv", _conv_infer, _conv_eval, None,
               attrs={**_WINDOW_ATTRS, "group": Attr("int", 1), "flip": Attr("bool", False)},
               doc="N-d convolution over NCHW with groups, zero pads, strides, dilations and an optional "
                   "bias (ONNX Conv); flip=true flips the kernel's spatial axes first (true convolution, "
                   "as PyTensor's convolve2d). The sums are rounded to the dtype, then the bias is added; "
                   "float16 computes all of it in float32, rounded once"))


# -- convolve2d (PyTensor's Blockwise(Convolve2d)) --------------------------
def _convolve2d_infer(types, attrs, consts):
    x, k = types
    dtype = same_dtype(types, "convolve2d")
    check_dtype(x, "iuf", "convolve2d")
    if x.rank < 2 or k.rank < 2:
        raise OpError(f"convolve2d: inputs need rank >= 2, got {x} and {k}")
    batch = broadcast_shapes([x.shape[:-2], k.shape[:-2]], "convolve2d")
    out = []
    for n, m in zip(x.shape[-2:], k.shape[-2:]):
        out.append(sym.sub(sym.add(n, m), 1) if attrs["full"] else sym.add(sym.absolute(sym.sub(n, m)), 1))
    return [TensorType(dtype, batch + tuple(out))]


@_half_in_f32
def _convolve2d_planes(args, attrs):
    x, k = args
    batch = np.broadcast_shapes(x.shape[:-2], k.shape[:-2])
    xb = np.broadcast_to(x, batch + x.shape[-2:])
    kb = np.broadcast_to(k, batch + k.shape[-2:])
    mode = "full" if attrs["full"] else "valid"
    import scipy.signal  # deferred: scipy.signal costs ~1 s to import, and only this reference reads it

    planes = [scipy.signal.convolve2d(xb[i], kb[i], mode=mode) for i in np.ndindex(*batch)]
    out_hw = planes[0].shape if planes else _convolve2d_infer(
        [TensorType.of_array(x), TensorType.of_array(k)], attrs, [None, None])[0].shape[-2:]
    return np.asarray(planes, dtype=x.dtype).reshape(batch + tuple(out_hw))


def _convolve2d_eval(args, attrs):
    return [_convolve2d_planes(args, attrs)]


register(OpDef("convolve2d", _convolve2d_infer, _convolve2d_eval, 2, attrs={"full": Attr("bool", False)},
               doc="2-D true convolution of the last two axes, batch axes broadcast "
                   "(PyTensor Blockwise(Convolve2d) = scipy.signal.convolve2d per batch element; "
                   "valid mode swaps the operands when the kernel is larger; ints wrap; float16 "
                   "computes in float32, rounded once). Padding zeros enter the products, so an inf "
                   "in the kernel gives NaN there (PyTensor's own result depends on scipy's choice "
                   "between direct and FFT convolution)"))


# -- pad -------------------------------------------------------------------
def _pad_infer(types, attrs, consts):
    x, value = types
    same_dtype(types, "pad")
    if value.rank != 0:
        raise OpError(f"pad: value must be a scalar, got {value}")
    pads = attrs["pads"]
    if len(pads) != 2 * x.rank or min(pads, default=0) < 0:
        raise OpError(f"pad: pads needs {2 * x.rank} non-negative entries, got {pads}")
    r = x.rank
    return [x.with_shape(sym.add(d, pads[i] + pads[i + r]) for i, d in enumerate(x.shape))]


def _pad_eval(args, attrs):
    x, value = args
    r = x.ndim
    return [np.pad(x, [(attrs["pads"][i], attrs["pads"][i + r]) for i in range(r)], constant_values=value)]


register(OpDef("pad", _pad_infer, _pad_eval, 2, attrs={"pads": Attr("ints")},
               doc="constant padding with a scalar value; pads = begins then ends per axis "
                   "(ONNX Pad mode=constant; np.pad)"))


# -- pooling ---------------------------------------------------------------
def _pool_infer(name):
    def infer(types, attrs, consts):
        (x,) = types
        check_dtype(x, "f" if name == "avg_pool" else "iuf", name)
        kernel, strides, dilations, pads = _window_attrs(x, attrs, name)
        nsp = x.rank - 2
        if any(p >= kernel[i % nsp] for i, p in enumerate(pads)):
            raise OpError(f"{name}: pads {pads} must be smaller than the kernel {kernel} (ONNX pooling)")
        out = [_spatial_out(x.shape[2 + i], kernel[i], strides[i], pads[i], pads[i + nsp], dilations[i])
               for i in range(nsp)]
        return [x.with_shape(x.shape[:2] + tuple(out))]
    return infer


def _max_pool_eval(args, attrs):
    (x,) = args
    kernel, strides, dilations, pads = _window_attrs(TensorType.of_array(x), attrs, "max_pool")
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    win = _windows(x, kernel, strides, dilations, pads, fill)
    axes = tuple(range(x.ndim, win.ndim))
    return [np.max(win, axis=axes).astype(x.dtype)]


@_half_in_f32
def _avg_pool_mean(args, attrs):
    (x,) = args
    kernel, strides, dilations, pads = _window_attrs(TensorType.of_array(x), attrs, "avg_pool")
    win = _windows(x, kernel, strides, dilations, pads, 0)
    axes = tuple(range(x.ndim, win.ndim))
    total = np.sum(win, axis=axes)
    if attrs["count_include_pad"]:
        count = np.prod(kernel)
    else:
        ones = np.ones((1, 1) + x.shape[2:], dtype=x.dtype)
        count = np.sum(_windows(ones, kernel, strides, dilations, pads, 0), axis=axes)
    return total / np.asarray(count, dtype=x.dtype)


def _avg_pool_eval(args, attrs):
    return [_avg_pool_mean(args, attrs)]


register(OpDef("max_pool", _pool_infer("max_pool"), _max_pool_eval, 1,
               attrs={**_WINDOW_ATTRS, "kernel": Attr("ints")},
               doc="max over windows; pads never win (ONNX MaxPool, ceil_mode=0). A NaN in a window "
                   "gives NaN here, but the result is unspecified: onnxruntime's MaxPool returns NaN only "
                   "when the NaN is the last element it visits (the emitter's max_pool_nan option)"))
register(OpDef("avg_pool", _pool_infer("avg_pool"), _avg_pool_eval, 1,
               attrs={**_WINDOW_ATTRS, "kernel": Attr("ints"), "count_include_pad": Attr("bool", False)},
               doc="mean over windows, pads counted only with count_include_pad (ONNX AveragePool); "
                   "float16 computes in float32, rounded once"))


def _global_pool(name, fn, allowed, doc):
    def infer(types, attrs, consts):
        (x,) = types
        check_dtype(x, allowed, name)
        if x.rank < 3:
            raise OpError(f"{name}: input must be (N, C, *spatial), got {x}")
        return [x.with_shape(x.shape[:2] + (1,) * (x.rank - 2))]

    def evaluate(args, attrs):
        (x,) = args
        return [np.asarray(fn(x, axis=tuple(range(2, x.ndim)), keepdims=True), dtype=x.dtype)]

    register(OpDef(name, infer, evaluate, 1, doc=doc))


_global_pool("global_avg_pool", np.mean, "f",
             "np.mean over the spatial axes, kept as 1s (float16 accumulates in float32) (ONNX GlobalAveragePool)")
_global_pool("global_max_pool", np.max, "iuf",
             "np.max over the spatial axes, kept as 1s (ONNX GlobalMaxPool); NaN handling is unspecified "
             "as for max_pool")


# -- batch norm, resize, gemm, flatten -------------------------------------
def _batch_norm_infer(types, attrs, consts):
    x = types[0]
    same_dtype(types, "batch_norm")
    check_dtype(x, "f", "batch_norm")
    for t in types[1:]:
        if t.rank != 1:
            raise OpError(f"batch_norm: scale, bias, mean and var must be (C,), got {t}")
    return [x]


@_half_in_f32
def _batch_norm_formula(args, attrs):
    x, scale, bias, mean, var = args
    shape = (1, -1) + (1,) * (x.ndim - 2)
    eps = np.asarray(attrs["epsilon"], dtype=x.dtype)
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * scale.reshape(shape) + bias.reshape(shape)


def _batch_norm_eval(args, attrs):
    return [_batch_norm_formula(args, attrs)]


register(OpDef("batch_norm", _batch_norm_infer, _batch_norm_eval, 5, attrs={"epsilon": Attr("float", 1e-5)},
               doc="inference batch norm over axis 1: (x - mean) / sqrt(var + eps) * scale + bias "
                   "(ONNX BatchNormalization, training_mode=0, which rounds differently); float16 "
                   "computes in float32, rounded once"))


def _resize_infer(types, attrs, consts):
    (x,) = types
    scales = attrs["scales"]
    if len(scales) != x.rank or min(scales, default=1) < 1:
        raise OpError(f"resize_nearest: needs {x.rank} integer scales >= 1, got {scales}")
    return [x.with_shape(sym.mul(d, s) for d, s in zip(x.shape, scales))]


def _resize_eval(args, attrs):
    (y,) = args
    for axis, s in enumerate(attrs["scales"]):
        if s != 1:
            y = np.repeat(y, s, axis=axis)
    return [y]


register(OpDef("resize_nearest", _resize_infer, _resize_eval, 1, attrs={"scales": Attr("ints")},
               doc="nearest upsampling by integer factors = np.repeat per axis "
                   "(ONNX Resize mode=nearest, asymmetric coordinates, floor rounding)"))


def _gemm_infer(types, attrs, consts):
    a, b, c = types
    dtype = same_dtype(types, "gemm")
    check_dtype(a, "iuf", "gemm")
    if a.rank != 2 or b.rank != 2 or c.rank > 2:
        raise OpError(f"gemm: needs 2-D a, b and c of rank <= 2, got {a}, {b}, {c}")
    m = a.shape[1] if attrs["trans_a"] else a.shape[0]
    n = b.shape[0] if attrs["trans_b"] else b.shape[1]
    k_a, k_b = (a.shape[0] if attrs["trans_a"] else a.shape[1]), (b.shape[1] if attrs["trans_b"] else b.shape[0])
    if not dims_compatible(k_a, k_b):
        raise OpError(f"gemm: contracted dims differ: {a} and {b}")
    if not all(d == 1 or dims_compatible(d, t) for d, t in zip(c.shape[::-1], (n, m))):
        raise OpError(f"gemm: c {c} does not broadcast to ({m}, {n})")
    return [TensorType(dtype, (m, n))]


@_half_in_f32
def _gemm_formula(args, attrs):
    a, b, c = args
    a = a.T if attrs["trans_a"] else a
    b = b.T if attrs["trans_b"] else b
    alpha, beta = np.asarray(attrs["alpha"], a.dtype), np.asarray(attrs["beta"], a.dtype)
    ab = a @ b
    ab = ab if attrs["alpha"] == 1 else alpha * ab
    cc = c if attrs["beta"] == 1 else beta * c
    return ab + cc


def _gemm_eval(args, attrs):
    return [_gemm_formula(args, attrs)]


register(OpDef("gemm", _gemm_infer, _gemm_eval, 3,
               attrs={"alpha": Attr("float", 1.0), "beta": Attr("float", 1.0),
                      "trans_a": Attr("bool", False), "trans_b": Attr("bool", False)},
               doc="alpha * op(a) @ op(b) + beta * c, c broadcast to (M, N) (ONNX Gemm); ints wrap "
                   "(alpha and beta cast to the int dtype); float16 computes in float32, rounded once"))


def _flatten_infer(types, attrs, consts):
    (x,) = types
    axis = attrs["axis"]
    if not 0 <= axis <= x.rank:
        raise OpError(f"flatten: axis {axis} out of range for {x}")

    return [x.with_shape((sym.product(x.shape[:axis]), sym.product(x.shape[axis:])))]


def _flatten_eval(args, attrs):
    (x,) = args
    axis = attrs["axis"]
    return [x.reshape(int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))]


register(OpDef("flatten", _flatten_infer, _flatten_eval, 1, attrs={"axis": Attr("int", 1)},
               traits={ROW_MAJOR_VIEW}, doc="reshape to (prod(shape[:axis]), prod(shape[axis:])) (ONNX Flatten)"))


# -- layer normalization --------------------------------------------------------
def _layer_norm_infer(types, attrs, consts):
    x, scale, bias = types
    same_dtype(types, "layer_norm")
    check_dtype(x, "f", "layer_norm")
    if x.rank < 1:
        raise OpError(f"layer_norm: input must have an axis to normalize, got {x}")
    for t in (scale, bias):
        if t.rank != 1 or not (dims_compatible(t.shape[0], x.shape[-1]) or t.shape[0] == 1):
            raise OpError(f"layer_norm: scale and bias must be ({x.shape[-1]},) or (1,), got {t}")
    return [x]


@_half_in_f32
def _layer_norm_formula(args, attrs):
    x, scale, bias = args
    eps = np.asarray(attrs["epsilon"], dtype=x.dtype)
    mean = x.mean(axis=-1, keepdims=True, dtype=x.dtype)
    d = x - mean
    var = (d * d).mean(axis=-1, keepdims=True, dtype=x.dtype)
    return d / np.sqrt(var + eps) * scale + bias


def _layer_norm_eval(args, attrs):
    return [_layer_norm_formula(args, attrs)]


register(OpDef("layer_norm", _layer_norm_infer, _layer_norm_eval, 3, attrs={"epsilon": Attr("float", 1e-5)},
               doc="layer normalization over the last axis: (x - mean) / sqrt(var + eps) * scale + bias, "
                   "mean and biased variance over that axis, scale and bias (D,) or (1,) broadcast (ONNX "
                   "LayerNormalization, axis=-1, opset 17, whose function body broadcasts them; "
                   "onnxruntime rounds differently); float16 computes in float32, rounded once"))


# -- RMS normalization ----------------------------------------------------------
def _rms_norm_infer(types, attrs, consts):
    x, scale = types
    same_dtype(types, "rms_norm")
    check_dtype(x, "f", "rms_norm")
    if x.rank < 1:
        raise OpError(f"rms_norm: input must have an axis to normalize, got {x}")
    if scale.rank != 1 or not (dims_compatible(scale.shape[0], x.shape[-1]) or scale.shape[0] == 1):
        raise OpError(f"rms_norm: scale must be ({x.shape[-1]},) or (1,), got {scale}")
    return [x]


@_half_in_f32
def _rms_norm_formula(args, attrs):
    x, scale = args
    eps = np.asarray(attrs["epsilon"], dtype=x.dtype)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True, dtype=x.dtype) + eps) * scale


def _rms_norm_eval(args, attrs):
    return [_rms_norm_formula(args, attrs)]


register(OpDef("rms_norm", _rms_norm_infer, _rms_norm_eval, 2, attrs={"epsilon": Attr("float", 1e-5)},
               doc="RMS normalization over the last axis: x / sqrt(mean(x^2) + eps) * scale, scale (D,) or (1,) "
                   "broadcast (Zhang & Sennrich "
                   "2019; ONNX RMSNormalization, opset 23; onnxruntime's SimplifiedLayerNormalization); "
                   "float16 computes in float32, rounded once"))
