"""``conv-recovery``: multi-channel NCHW 2-D convolutions from PyTensor's
``convolve2d`` forms, as IR ``conv{flip=true}`` (a true convolution, as
``scipy.signal.convolve2d``; the ``filter-flip`` pass then makes it ONNX's
cross-correlation).

PyTensor has no Conv2d op. A layer ``y[n, m] = sum_c convolve2d(x[n, c], W[m, c])``
with ``x: (N, C, H, W)`` and ``W: (M, C, kh, kw)`` is written with the
Blockwise ``pytensor.tensor.signal.convolve2d`` and broadcasting::

    y = convolve2d(x[:, None], W[None], mode="valid").sum(axis=2)

Padding is an explicit ``pt.pad`` (mode "same" breaks for multi-channel use),
strides are a strided slice of the output, groups are channel slices whose
convolutions are concatenated, dilation is a kernel with zeros between its
taps. The rules below see the IR after lowering, ``canonicalize`` and
``constant-folding`` (constant kernels arrive as folded constants)::

1. channel-sum: the sum over the broadcast channel axis is a conv; 'full'
   mode pads ``k - 1`` on each side::

       %u: f32[N,1,3,8,8] = unsqueeze(%x) {axes=[1]}
       %v: f32[1,4,3,3,3] = unsqueeze(%W) {axes=[0]}
       %c: f32[N,4,3,6,6] = convolve2d(%u, %v) {full=false}
       %y: f32[N,4,6,6] = reduce_sum(%c) {axes=[2], keepdims=false}
     ->
       %y: f32[N,4,6,6] = conv(%x, %W) {dilations=[], flip=true, group=1, pads=[], strides=[]}

   Also matched: the float64 accumulator of a float32 sum
   (``cast(reduce_sum(cast(%c){to=f64}), f32)``, PyTensor's ``acc_dtype``),
   ``squeeze(%c){axes=[2]}`` (what PyTensor leaves of the sum when C = 1),
   a kernel of unknown shape in 'valid' mode (a graph input ``k`` of shape
   ``(M, C, kh, kw)`` all symbolic: a Conv with group 1 whose output is
   ``H-kh+1``, assuming ``H >= kh``),
   a strided slice of ``%c`` under the sum (compiled graphs push the slice of
   rule 3 there; any other slice of the spatial axes, such as a pooling crop,
   becomes the same slice of the conv), a rank-4 kernel broadcast without ``[None]``, and kernels
   and images that are not ``unsqueeze`` nodes (a folded constant kernel is
   reshaped at compile time, other values get a ``squeeze``).

2. conv-pad: a constant zero ``pad`` of the spatial axes is the conv's pads::

       %p: f32[N,3,10,10] = pad(%x, %zero) {pads=[0, 0, 1, 1, 0, 0, 1, 1]}
       %y: f32[N,4,8,8] = conv(%p, %W) {flip=true, ...}
     ->
       %y: f32[N,4,8,8] = conv(%x, %W) {flip=true, pads=[1, 1, 1, 1], ...}

3. conv-stride: a slice from 0 to the end with step s on spatial axes is the
   conv's stride (strides multiply)::

       %c: f32[N,4,6,6] = conv(%x, %W) {flip=true, ...}
       %y: f32[N,4,3,3] = slice(%c, %zeros, %ends, %twos) {axes=[2, 3]}
     ->
       %y: f32[N,4,3,3] = conv(%x, %W) {flip=true, strides=[2, 2], ...}

4. conv-groups: concatenating along channels the convs of consecutive,
   equal channel slices (``slice`` or ``split`` along axis 1) of one input,
   with equal kernel shapes and attributes, is a grouped conv (kernels
   concatenated along axis 0: the tensor they were sliced from, a constant
   made now, or a ``concat`` node; biases likewise, a missing one being
   zeros)::

       %a: f32[N,2,8,8], %b: f32[N,2,8,8] = split(%x, %sizes) {axis=1, num_outputs=2}
       %ya: f32[N,3,6,6] = conv(%a, %Wa) {flip=true, ...}
       %yb: f32[N,3,6,6] = conv(%b, %Wb) {flip=true, ...}
       %y: f32[N,6,6,6] = concat(%ya, %yb) {axis=1}
     ->
       %W: f32[6,2,3,3] = concat(%Wa, %Wb) {axis=0}
       %y: f32[N,6,6,6] = conv(%x, %W) {flip=true, group=2, ...}

5. conv-dilation: a kernel holding zeros between its taps is a smaller
   kernel with dilations. Recognized as ``set_subtensor(zeros[:, :, ::d, ::d], W)``
   (lowered to ``reshape(scatter_nd(zeros, grid, W), shape)``), and, with the
   option ``dilate_constant_kernels``, as a constant kernel whose every tap
   off the ``::d`` grid is zero (the largest such d per axis). That option is
   off by default: constant folding has already turned a constant kernel's
   ``set_subtensor`` into a plain constant, whose zeros may be the user's
   (a Sobel kernel's middle column), and skipping them changes what an Inf
   or NaN under them gives (see below); the zero-interleaved kernel is one
   Conv either way::

       const %K: f32[1,1,3,3] = [[[[1.0, 0.0, 2.0], [0.0, 0.0, 0.0], [3.0, 0.0, 4.0]]]]
       %y: f32[N,1,6,6] = conv(%x, %K) {flip=true, ...}
     ->
       const %K_1: f32[1,1,2,2] = [[[[1.0, 2.0], [3.0, 4.0]]]]
       %y: f32[N,1,6,6] = conv(%x, %K_1) {dilations=[2, 2], flip=true, ...}

6. crop-sink: an end crop (start 0, step 1, any ends) of a conv,
   read by an elementwise op whose other operands have size 1 on the cropped
   axes, moves after that op, and on through the next ones; the pooling crop
   of rule 1 thus returns to where ``pool-recovery`` absorbs it into a
   floor-mode max pool (what the raw graph had)::

       %s: f32[N,64,10,10] = slice(%c, %zeros, %tens, %ones) {axes=[2, 3]}
       %y: f32[N,64,10,10] = add(%s, %b)                      (%b: f32[1,64,1,1])
     ->
       %a: f32[N,64,11,11] = add(%c, %b)
       %y: f32[N,64,10,10] = slice(%a, %zeros, %tens, %ones) {axes=[2, 3]}

Semantics and assumptions (PyTensor's ``Convolve2d.perform`` is
``scipy.signal.convolve(in1, in2, mode, method="auto")``, which may use the FFT):

- Results agree up to float rounding: the channel sum and the kernel taps are
  accumulated in another order, and float32's float64 channel accumulator
  (rule 1) becomes the conv's own float32 accumulation (about 1e-6 relative).
- 'valid' mode with an image smaller than the kernel makes SciPy swap the
  operands. The rule declines when the image's static size is smaller than
  the kernel; for symbolic sizes it assumes the image covers the kernel
  (``Rewriter.assume(H - k)``), where PyTensor's output size ``abs(H-k)+1``
  is the conv's ``H-k+1``, and every type of the graph is refined by that
  fact (so the pooling after it sees ``H-2``, not ``abs(H-3)+1``). If the
  image is smaller at run time, onnxruntime's Conv fails ("Invalid input
  shape") where PyTensor returns the swapped convolution: an error, never a
  wrong value. Likewise a channel count that is symbolic is assumed to equal
  the kernel's, unless the kernel has one channel: convolve2d broadcasts it,
  and by linearity the channel sum is the conv of the channel-summed image
  (a ``reduce_sum`` over channels before the conv).
- NaN and Inf: the conv multiplies the zero pads of 'full' mode like any
  other element, so an Inf kernel tap can give NaN near the border where
  SciPy's direct method skips those products (and its FFT method, which
  PyTensor's ``method="auto"`` may pick, spreads any NaN or Inf over the
  whole output anyway). Rule 5 skips zero taps, so an Inf or NaN image
  element under one no longer makes a NaN (0 * Inf). Finite data agree.
- A pad value of -0.0 counts as zero (only the sign of an all-pad window's
  zero sum can differ).
- ``numerics="strict"`` (``ir.numerics``) keeps only what changes no bit
  beyond the order of the sums' terms: rule 1 declines PyTensor's float64
  accumulator of a float32 sum (the conv would sum in float32) and float16
  (the conv rounds once where the matched graph rounds each plane), rule 2
  declines a -0.0 pad value, rule 5 does not run (skipping zero taps changes
  what an Inf or NaN under them gives, and the sign of a zero sum).

Each node is matched once plus once per change of its inputs, each match
doing O(1) work apart from scanning a constant kernel once (rule 5): linear
in the size of the graph and its kernels.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ir import DType, Node, Value
from ir import symbolic as sym
from ir.opdef import ELEMENTWISE, ops_with
from ir.ops.common import normalize_axis
from ir.ops.shape import INT64_MAX
from passes.base import register_pass
from passes.rewrite import Const, ConstEq, Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var, single_use

# -- conv attribute helpers (shared with the other conv passes) -------------


def window(conv: Node) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The explicit ``(strides, pads, dilations)`` of a ``conv`` node, ONNX's
    defaults (stride 1, pad 0, dilation 1) filled in for empty attributes."""
    nsp = conv.output.rank - 2
    a = conv.attrs
    return (tuple(a["strides"]) or (1,) * nsp, tuple(a["pads"]) or (0,) * (2 * nsp),
            tuple(a["dilations"]) or (1,) * nsp)


def with_window(attrs: dict, strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int]) -> dict:
    """``attrs`` (of a conv) with new window attributes; a list holding only
    the default value is written ``[]``, as lowering and users write it."""
    def norm(values, default):
        return () if all(v == default for v in values) else tuple(int(v) for v in values)

    return {**attrs, "strides": norm(strides, 1), "pads": norm(pads, 0), "dilations": norm(dilations, 1)}


def conv_bias(m: Match) -> list[Value]:
    """The bias input bound as ``b`` by a conv pattern's ``rest``, as a list (empty without one)."""
    return [m.b] if "b" in m else []


# -- rule 1: the channel sum of a broadcast convolve2d -----------------------
CV = Op("convolve2d", Var("x5"), Var("k5"), name="cv")
STRIDED_CV = Op("slice", CV, Const("starts"), Var("ends"), Const("steps"), name="stride")  # ends may be computed
CHANNEL_AXIS = {"axes": lambda axes: tuple(axes) in ((2,), (-3,))}
SUM_C = {**CHANNEL_AXIS, "keepdims": False}
TO_F64 = {"to": DType.FLOAT64}


def recover_conv(rw: Rewriter, m: Match) -> Value | str:
    """sum_c convolve2d(x[:, None], W[None]) -> conv{flip=true}(x, W) (see rule 1)."""
    cv, x5, k5 = m.cv, m.x5, m.k5
    dtype = cv.output.dtype
    if m.root.output.dtype != dtype:
        return "the accumulator is cast to another dtype"
    if not dtype.is_float:
        return f"convolve2d of {dtype}: conv needs floats"
    if x5.rank != 5 or x5.shape[1] != 1:
        return f"image {x5.type} is not x[:, None] of an NCHW x"
    if k5.rank not in (4, 5) or (k5.rank == 5 and k5.shape[0] != 1):
        return f"kernel {k5.type} is not W or W[None] of an (M, C, kh, kw) W"
    kernel = k5.shape[-2:]
    full = cv.attrs["full"]
    if any(k is None for k in kernel) or (full and not all(isinstance(k, int) for k in kernel)):
        return f"kernel {k5.type} has unknown spatial dims, or symbolic ones in full mode (pads k-1)"
    c_x, c_w = x5.shape[2], k5.shape[-3]
    if isinstance(c_x, int) and isinstance(c_w, int) and c_x != c_w:
        return f"image has {c_x} channels, kernel {c_w}: convolve2d would broadcast them"
    if not full and any(isinstance(n, int) and isinstance(k, int) and n < k for n, k in zip(x5.shape[3:], kernel)):
        return "image smaller than the kernel in valid mode: SciPy swaps the operands"
    if not full:  # a valid conv needs the image to cover the kernel: abs(H-k)+1 is then H-k+1
        rw.assume(*(sym.sub(n, k) for n, k in zip(x5.shape[3:], kernel)
                    if not (isinstance(n, int) and isinstance(k, int))))
    strides, crop = (1, 1), None
    if "stride" in m:
        strides = open_steps(m.stride, first_spatial=3)
        if isinstance(strides, str):  # a crop (or crop and stride): a slice of the conv
            strides, crop = (1, 1), spatial_slice(m.stride, first_spatial=3)
            if isinstance(crop, str):
                return crop
    pads = [k - 1 for k in kernel] * 2 if full else [0] * 4
    x = drop_axis(rw, x5, 1)
    w = drop_axis(rw, k5, 0) if k5.rank == 5 else k5
    if c_w == 1 and c_x != 1:  # convolve2d broadcasts the one kernel channel: sum_c conv(x_c, W) = conv(sum_c x_c, W)
        x = rw.add("reduce_sum", [x], {"axes": [1], "keepdims": True})
    y = rw.add("conv", [x, w], with_window({"flip": True}, strides, pads, (1, 1)))
    if crop is not None:
        y = rw.add("slice", [y, *m.stride.inputs[1:]], {"axes": [a - 1 for a in crop]})
    return y


def spatial_slice(node: Node, first_spatial: int) -> list[int] | str:
    """The normalized axes of a ``slice`` node with positive steps on
    spatial axes only (from ``first_spatial`` on); else why it is not one."""
    x = node.inputs[0]
    axes = [normalize_axis(a, x.rank, "slice") for a in node.attrs["axes"]]
    if any(a < first_spatial for a in axes):
        return "slices a non-spatial axis"
    if any(step < 1 for step in node.inputs[3].const.tolist()):
        return "a step is not positive"
    return axes


# -- rule 6: crop sinking: a crop of a conv moves past elementwise ops -------
SINK_OPS = tuple(sorted(ops_with(ELEMENTWISE)))  # a crop commutes with any elementwise op
SINK_FROM = ("conv",) + SINK_OPS


def sink_crop(rw: Rewriter, m: Match) -> Value | str:
    """f(x[:, :, :h, :w], b) -> f(x, b)[:, :, :h, :w] for an elementwise f
    whose other operands have size 1 on the cropped axes, when x is a conv
    (or such an f of one): the crop PyTensor moved into the channel sum goes
    back to where the pooling recovery reads it (rule 6)."""
    root = m.root
    crops = [i for i, v in enumerate(root.inputs) if _is_crop(v)]
    if len(crops) != 1:
        return "needs exactly one operand that is a single-use end crop of a conv"
    i = crops[0]
    crop = root.inputs[i].producer
    x = crop.inputs[0]
    if x.rank != root.output.rank:
        return "the crop is broadcast"
    axes = [normalize_axis(a, x.rank, "slice") for a in crop.attrs["axes"]]
    for j, other in enumerate(root.inputs):
        if j != i and any(a - (x.rank - other.rank) >= 0 and other.shape[a - (x.rank - other.rank)] != 1
                          for a in axes):
            return f"operand {j} varies along a cropped axis"
    inputs = [x if j == i else v for j, v in enumerate(root.inputs)]
    return rw.add("slice", [rw.add(root.op, inputs, dict(root.attrs)), *crop.inputs[1:]], dict(crop.attrs))


def _is_crop(value: Value) -> bool:
    """Whether ``value`` is a single-use ``slice`` from 0 with step 1 (constant
    starts and steps; the ends may be computed) of the output of a conv or of
    a ``SINK_OPS`` node."""
    node = value.producer
    if node is None or node.op != "slice" or not single_use(value):
        return False
    data = node.inputs[0].producer
    if data is None or data.op not in SINK_FROM or node.inputs[1].const is None or node.inputs[3].const is None:
        return False
    return not any(node.inputs[1].const.tolist()) and all(s == 1 for s in node.inputs[3].const.tolist())


def drop_axis(rw: Rewriter, value: Value, axis: int) -> Value:
    """``value`` without its size-1 ``axis``: the input of an ``unsqueeze`` that
    added just that axis, a reshaped copy of a constant, else a ``squeeze``."""
    node = value.producer
    if node is not None and node.op == "unsqueeze" and \
            [normalize_axis(a, value.rank, "unsqueeze") for a in node.attrs["axes"]] == [axis]:
        return node.inputs[0]
    if value.const is not None:
        return rw.const(np.squeeze(value.const, axis=axis), value.name or "const")
    return rw.add("squeeze", [value], {"axes": [axis]})


def open_steps(node: Node, first_spatial: int) -> tuple[int, ...] | str:
    """The per-spatial-axis steps of a ``slice`` node that takes every s-th
    element from the start to the end of spatial axes only (the spatial axes
    of its input being ``first_spatial`` on); else the reason it is not one."""
    x = node.inputs[0]
    nsp = x.rank - first_spatial
    steps = [1] * nsp
    if any(v.const is None for v in node.inputs[1:]):
        return "the slice bounds are computed at run time"
    starts, ends, strides = (v.const.tolist() for v in node.inputs[1:])
    for a, start, end, step in zip(node.attrs["axes"], starts, ends, strides):
        a = normalize_axis(a, x.rank, "slice")
        if a < first_spatial:
            return f"slices non-spatial axis {a}"
        if step < 1:
            return f"step {step} on axis {a} is not positive"
        n = x.shape[a]
        whole = range(*slice(start, end, step).indices(n)) == range(0, n, step) if isinstance(n, int) \
            else (start == 0 and end == INT64_MAX)
        if not whole:
            return f"slice [{start}:{end}:{step}] of axis {a} does not run from 0 to the end"
        steps[a - first_spatial] *= step
    return tuple(steps)


# -- rules 2 and 3: pads and strides -----------------------------------------
def fold_pad(rw: Rewriter, m: Match) -> Value | str:
    """conv(pad(x, 0), W) -> conv{pads + pad's spatial pads}(x, W)"""
    x, p, r = m.x, m.pad.attrs["pads"], m.x.rank
    if any(p[i] or p[i + r] for i in (0, 1)):
        return "pads the batch or channel axis"
    strides, pads, dilations = window(m.root)
    nsp = r - 2
    pads = [pads[i] + p[2 + i] for i in range(nsp)] + [pads[nsp + i] + p[r + 2 + i] for i in range(nsp)]
    return rw.add("conv", [x, m.w, *conv_bias(m)], with_window(m.root.attrs, strides, pads, dilations))


def fold_stride(rw: Rewriter, m: Match) -> Value | str:
    """conv(x, W)[:, :, ::s, ::t] -> conv{strides * (s, t)}(x, W)"""
    steps = open_steps(m.root, first_spatial=2)
    if isinstance(steps, str):
        return steps
    strides, pads, dilations = window(m.conv)
    strides = [s * t for s, t in zip(strides, steps)]
    return rw.add("conv", [m.x, m.w, *conv_bias(m)], with_window(m.conv.attrs, strides, pads, dilations))


# -- rule 4: groups -------------------------------------------------------------
def piece(value: Value, axis: int) -> tuple[Value, int, int] | None:
    """``(x, lo, hi)`` when ``value`` is ``x[lo:hi]`` along ``axis`` (a
    ``slice`` of that axis alone with step 1, or an output of a ``split``
    along it) of an ``x`` whose size there is static; else None."""
    node = value.producer
    if node is None or node.op not in ("slice", "split") or node.inputs[0].rank <= axis:
        return None
    x = node.inputs[0]
    size = x.shape[axis]
    if not isinstance(size, int):
        return None
    if node.op == "slice" and all(v.const is not None for v in node.inputs[1:]):
        starts, ends, steps = (v.const.tolist() for v in node.inputs[1:])
        if [normalize_axis(a, x.rank, "slice") for a in node.attrs["axes"]] != [axis] or steps != [1]:
            return None
        lo, hi, _ = slice(starts[0], ends[0], 1).indices(size)
        return x, lo, max(lo, hi)
    if node.op == "split" and normalize_axis(node.attrs["axis"], x.rank, "split") == axis \
            and node.inputs[1].const is not None:
        sizes = node.inputs[1].const.tolist()
        lo = sum(sizes[:value.index])
        return x, lo, lo + sizes[value.index]
    return None


def consecutive_pieces(values: list[Value], axis: int) -> Value | None:
    """The ``x`` that ``values`` cut into consecutive pieces along ``axis``,
    first to last and covering it whole, else None."""
    pieces = [piece(v, axis) for v in values]
    if any(p is None for p in pieces) or any(p[0] is not pieces[0][0] for p in pieces):
        return None
    x = pieces[0][0]
    bounds = [0] + [p[2] for p in pieces]
    if [p[1] for p in pieces] != bounds[:-1] or bounds[-1] != x.shape[axis]:
        return None
    return x


def group_convs(rw: Rewriter, m: Match) -> Value | str:
    """concat{axis=1}(conv(x[:, g*c:(g+1)*c], W_g) for g) -> conv{group=G}(x, concat(W_g))"""
    root = m.root
    if normalize_axis(root.attrs["axis"], root.output.rank, "concat") != 1:
        return "concatenates a non-channel axis"
    convs = [v.producer for v in root.inputs]
    first = convs[0]
    if len(convs) < 2 or first.attrs["group"] != 1 or any(c.attrs != first.attrs for c in convs):
        return "needs two or more ungrouped convs with equal attributes"
    wshape = first.inputs[1].shape
    if not all(isinstance(d, int) for d in wshape) or any(c.inputs[1].shape != wshape for c in convs):
        return "kernels differ in shape or are not static"
    x = consecutive_pieces([c.inputs[0] for c in convs], axis=1)
    if x is None or x.shape[1] != len(convs) * wshape[1]:
        return f"the conv inputs are not consecutive channel slices of {wshape[1]} covering one tensor"
    w = concat(rw, [c.inputs[1] for c in convs], first.inputs[1].name or "kernel")
    mg = wshape[0]
    inputs = [x, w]
    if any(len(c.inputs) == 3 for c in convs):
        zero = np.zeros(mg, dtype=first.output.dtype.numpy)
        biases = [c.inputs[2] if len(c.inputs) == 3 else rw.const(zero, "bias") for c in convs]
        inputs.append(concat(rw, biases, "bias"))
    return rw.add("conv", inputs, {**first.attrs, "group": len(convs)})


def concat(rw: Rewriter, values: list[Value], name: str) -> Value:
    """``values`` joined along axis 0: the tensor they are consecutive slices
    of, a new constant when all are constants, else a ``concat`` node."""
    whole = consecutive_pieces(values, axis=0)
    if whole is not None:
        return whole
    if all(v.const is not None for v in values):
        return rw.const(np.concatenate([v.const for v in values], axis=0), name)
    return rw.add("concat", values, {"axis": 0})


# -- rule 5: dilation -------------------------------------------------------------
def zero_interleave(kernel: np.ndarray, axis: int) -> int:
    """The largest d > 1 such that every tap of ``kernel`` along ``axis`` whose
    index is not a multiple of d is zero and ``(k - 1) % d == 0``; else 1."""
    k = kernel.shape[axis]
    others = tuple(a for a in range(kernel.ndim) if a != axis)
    taps = np.flatnonzero(np.any(kernel != 0, axis=others))
    for d in range(k - 1, 1, -1):
        if (k - 1) % d == 0 and not np.any(taps % d):
            return d
    return 1


def dilate_constant(rw: Rewriter, m: Match) -> Value | str:
    """conv(x, K) with K zero off the ::d grid -> conv{dilations * d}(x, K[..., ::d, ::d])"""
    kernel = m.w.const
    if not np.any(kernel != 0):
        return "kernel is all zeros"
    factors = [zero_interleave(kernel, a) for a in range(2, kernel.ndim)]
    if all(d == 1 for d in factors):
        return "no spatial axis has zeros between its taps"
    small = kernel[(slice(None), slice(None), *(slice(None, None, d) for d in factors))]
    return _dilated(rw, m, rw.const(small, m.w.name or "kernel"), factors)


def dilate_scattered(rw: Rewriter, m: Match) -> Value | str:
    """conv(x, set_subtensor(zeros[:, :, ::d, ::d], W)) -> conv{dilations * d}(x, W)"""
    shape = tuple(int(d) for d in m.shape.const)
    small = m.w_small.shape
    if len(small) != len(shape) or small[:2] != shape[:2] or not all(isinstance(d, int) for d in small):
        return f"updates {m.w_small.type} are not a static kernel for {shape}"
    factors = []
    for big, k in zip(shape[2:], small[2:]):
        if (k == 1 and big != 1) or (k > 1 and (big - 1) % (k - 1)):
            return f"a kernel of {k} taps does not spread evenly over {big}"
        factors.append((big - 1) // (k - 1) if k > 1 else 1)
    size = int(np.prod(shape))
    grid = np.arange(size).reshape(shape)[(slice(None), slice(None), *(slice(None, None, d) for d in factors))]
    if m.zeros.shape != (size,) or m.idx.const.shape != grid.shape + (1,) or \
            not np.array_equal(m.idx.const[..., 0], grid):
        return "the scatter positions are not the ::d grid of a zero kernel"
    return _dilated(rw, m, m.w_small, factors)


def _dilated(rw: Rewriter, m: Match, kernel: Value, factors: list[int]) -> Value:
    strides, pads, dilations = window(m.root)
    dilations = [d * f for d, f in zip(dilations, factors)]
    return rw.add("conv", [m.x, kernel, *conv_bias(m)], with_window(m.root.attrs, strides, pads, dilations))


# -- the rule sets ----------------------------------------------------------------
def _channel_sums(cv: Op) -> list[Op]:
    return [Op("reduce_sum", cv, attrs=SUM_C),
            Op("cast", Op("reduce_sum", Op("cast", cv, attrs=TO_F64), attrs=SUM_C)),
            Op("squeeze", cv, attrs=CHANNEL_AXIS)]


PAD = Op("pad", Var("x"), ConstEq(0), name="pad", single_use=False)
SCATTERED = Op("reshape", Op("scatter_nd", ConstEq(0, "zeros"), Const("idx"), Var("w_small"),
                             attrs={"reduction": "none"}, single_use=False), Const("shape"), single_use=False)

RULES = RuleSet([
    # sum_c convolve2d(x[:, None], W[None]) -> conv{flip=true}(x, W), optionally strided
    *(Rule("channel-sum", root, recover_conv) for root in _channel_sums(CV)),
    *(Rule("strided-channel-sum", root, recover_conv) for root in _channel_sums(STRIDED_CV)),
    # f(conv(x, W)[:, :, :h, :w], b) -> f(conv(x, W), b)[:, :, :h, :w]
    *(Rule("crop-sink", Op(op, rest=Var(), any_input=Op("slice", rest=Var(), single_use=False)), sink_crop)
      for op in SINK_OPS),
    # conv(pad(x, 0), W) -> conv{pads}(x, W)
    Rule("conv-pad", Op("conv", PAD, Var("w"), rest=Var("b")), fold_pad),
    # conv(x, W)[:, :, ::s, ::s] -> conv{strides=s}(x, W)
    Rule("conv-stride", Op("slice", Op("conv", Var("x"), Var("w"), rest=Var("b"), name="conv"),
                           Const(), Const(), Const()), fold_stride),
    # concat{axis=1}(conv(x[:, g*c:(g+1)*c], W_g) for g) -> conv{group=G}(x, concat(W_g))
    Rule("conv-groups", Op("concat", rest=Op("conv", Var(), Var(), rest=Var())), group_convs),
    # conv(x, set_subtensor(zeros[:, :, ::d, ::d], W)) -> conv{dilations=d}(x, W)
    Rule("conv-dilation", Op("conv", Var("x"), SCATTERED, rest=Var("b")), dilate_scattered),
])

CONSTANT_DILATION = RuleSet([
    # conv(x, K) with K zero off the ::d grid -> conv{dilations=d}(x, K[:, :, ::d, ::d])
    Rule("conv-dilation", Op("conv", Var("x"), Const("w"), rest=Var("b")), dilate_constant),
])



# -- numerics="strict" ------------------------------------------------------------
def strict_channel_sum(rw: Rewriter, m: Match) -> Value | str:
    """``recover_conv`` where the conv sums what the matched graph sums, in
    its dtype (rule 1 under ``numerics="strict"``)."""
    if m.root.op == "cast":
        return "numerics='strict': PyTensor's float64 accumulator of the float32 channel sum is kept"
    if m.cv.output.dtype == DType.FLOAT16:
        return "numerics='strict': a float16 conv rounds once where the matched graph rounds each plane"
    return recover_conv(rw, m)


def strict_fold_pad(rw: Rewriter, m: Match) -> Value | str:
    """``fold_pad`` of a +0.0 pad only (rule 2 under ``numerics="strict"``)."""
    if np.signbit(m.pad.inputs[1].const).any():
        return "numerics='strict': a -0.0 pad gives an all-pad window's sum the sign the conv's +0.0 pads do not"
    return fold_pad(rw, m)


STRICT_REWRITES = {recover_conv: strict_channel_sum, fold_pad: strict_fold_pad}
STRICT_RULES = RuleSet(dataclasses.replace(r, rewrite=STRICT_REWRITES.get(r.rewrite, r.rewrite))
                       for r in RULES if r.name != "conv-dilation")


@register_pass
@dataclass(frozen=True)
class ConvRecovery(RuleSetPass):
    """Recover ``conv`` nodes from ``convolve2d`` forms (see the module docstring).

    Attributes:
        dilate_constant_kernels: also turn constant kernels with zeros between
            their taps into dilated convs (rule 5 on constants; exact for
            finite inputs only, so off by default).
        numerics: ``"strict"`` runs ``STRICT_RULES`` (rule 5 never); ``"fast"``
            or None (alone; a compilation fills in its mode) every rule.
    """

    name = "conv-recovery"
    dilate_constant_kernels: bool = False
    numerics: str | None = None

    def rule_set(self) -> RuleSet:
        if self.strict:
            return STRICT_RULES
        return RULES + CONSTANT_DILATION if self.dilate_constant_kernels else RULES
