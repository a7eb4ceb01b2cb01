"""``pool-recovery``: pooling spelled with reshapes, strided slices, maxima
and sums becomes ``max_pool`` / ``avg_pool`` / ``global_max_pool`` /
``global_avg_pool`` (ONNX MaxPool, AveragePool, GlobalMaxPool,
GlobalAveragePool).

``x`` is ``(N, C, *spatial)``, shown for 2-D (any number of spatial axes
works); the batch, and for rules 1, 3 and 6 the spatial dims, may be
symbolic (static kernels). Rules:

1. reshape-max: the max over the window axes of a reshape that splits each
   spatial axis into (size/k, k) is a k x k max pool with stride k. With a
   symbolic batch the reshape target is computed at run time; the types
   prove it (the static dims after the batch agree, so the element count
   fixes the batch; with symbolic spatial dims the batch dims must be
   equal, and ``shape_facts`` reads the target: ``(H-2)//2`` rows of 2 for
   the ``H-2`` of a recovered conv)::

       %r: f32[N,16,14,2,14,2] = reshape(%x, %s)        (%x: f32[N,16,28,28])
       %y: f32[N,16,14,14] = reduce_max(%r) {axes=[3, 5], keepdims=false}
     ->
       %y: f32[N,16,14,14] = max_pool(%x) {kernel=[2, 2], strides=[2, 2], ...}

   A crop to a multiple of k before the reshape (``x[:, :, :h//k*k, :w//k*k]``)
   is dropped: MaxPool's floor mode ignores the remainder as the crop did.
   Without the crop, a split to ``(H//k, k)`` of a symbolic H (PyTensor's
   idiom ``x.reshape((n, c, h // 2, 2, w // 2, 2))``) is the pool too: for
   an H that k does not divide PyTensor's reshape raises where the pool
   floors (docs/numerics.md).

2. window-mean: ``sum / count`` or ``sum * (1/count)`` of the same reshape
   summed over the window axes, ``count = prod(k)``, is ``avg_pool``. The sum
   may be computed in a wider dtype and cast back (PyTensor sums float32 in
   float64)::

       %w: f64[N,16,14,2,14,2] = cast(%r) {to=f64}
       %s: f64[N,16,14,14] = reduce_sum(%w) {axes=[3, 5], keepdims=false}
       %n: f32[N,16,14,14] = cast(%s) {to=f32}
       %y: f32[N,16,14,14] = div(%n, %four)
     ->
       %y: f32[N,16,14,14] = avg_pool(%x) {kernel=[2, 2], strides=[2, 2], ...}

3. strided-max: a tree of ``maximum`` nodes (any shape and order) whose
   leaves include strided slices of one x at every offset of a full
   k1 x k2 grid, all with the same steps and lengths, is a max pool with
   kernel (k1, k2) and the slices' steps as strides (then ``maximum`` with
   the other leaves, if any, e.g. the 0 of a ReLU). Slices that start past 0
   or stop early pool a crop of x. On symbolic axes the open-ended slices
   ``x[:, :, j::s]`` from offset 0 pool with the floor-mode count: their
   lengths differ when s does not divide H - j, where PyTensor's maximum
   raises (see ``_grids``)::

       %a: f32[N,C,4,4] = slice(%x, [0, 0], [max, max], [2, 2]) {axes=[2, 3]}
       ... %b, %c, %d at offsets [0, 1], [1, 0], [1, 1] ...
       %y: f32[N,C,4,4] = maximum(maximum(%a, %b), maximum(%c, %d))
     ->
       %y: f32[N,C,4,4] = max_pool(%x) {kernel=[2, 2], strides=[2, 2], ...}

4. strided-mean: the sum of such slices (an ``add`` tree with no other
   leaves) divided by their number is ``avg_pool``.

5. global-max / global-mean: ``reduce_max`` or the mean over all spatial
   axes of an x with at least two (rank >= 4: the mean over the last axis
   of a (batch, time, feature) tensor is a LayerNorm's, not a pool) is
   ``global_max_pool`` / ``global_avg_pool``, followed by a ``squeeze`` of
   the spatial axes when the reduction did not keep them (the mean's divisor
   a constant, a size, or with symbolic axes PyTensor's float product of
   sizes, ``_size_product``);
   ``unsqueeze(squeeze(global pool))`` of the same axes is the pool::

       %y: f32[N,C] = reduce_max(%x) {axes=[2, 3], keepdims=false}
     ->
       %g: f32[N,C,1,1] = global_max_pool(%x)
       %y: f32[N,C] = squeeze(%g) {axes=[2, 3]}

6. pad-into-pool: ``max_pool`` of a constant pad with -inf (the dtype's
   minimum for integers) on the spatial axes only takes the pads itself,
   when each pad stays smaller than the kernel (ONNX requires it; then
   every window holds a real element, so the pad never wins). With rule 3
   this recovers YOLO's SPPF, the max of k x k shifted slices of a padded
   x::

       %p: f32[N,C,32,32] = pad(%x, %minus_inf) {pads=[0, 0, 2, 2, 0, 0, 2, 2]}
       %y: f32[N,C,28,28] = max_pool(%p) {kernel=[5, 5], strides=[1, 1], ...}
     ->
       %y: f32[N,C,28,28] = max_pool(%x) {kernel=[5, 5], pads=[2, 2, 2, 2], strides=[1, 1], ...}

Semantics. Max pools compute what the maxima computed, except the sign of
a zero maximum, which follows the evaluation order (as ``np.maximum``'s
does), and NaN: ``np.maximum`` and the IR's ``max_pool`` propagate every
NaN, while onnxruntime's MaxPool and GlobalMaxPool skip a NaN in most
window positions (measured with onnxruntime 1.31 in
``tests/passes/test_pool_recovery.py``); compile with the emitter option
``max_pool_nan="propagate"`` to keep PyTensor's NaNs. Average pools add the
window in another order and, with ``narrow_sums``, in the input dtype where
PyTensor summed in a wider one (float32 in float64): results differ by the
rounding of a k*k-term sum (a few ulps; PyTensor vs onnxruntime within
1e-6 relative in float32 on the tests' data). ``numerics="strict"``
(``ir.numerics``) recovers only the means that round as the matched graph
does, up to the order of the sum's terms: not a widened sum (whatever
``narrow_sums`` says), not float16 (the pool rounds once, the matched graph
the sum first), and ``sum * (1/n)`` only for n a power of two (else the
product is not the quotient). Max pools are exact in both modes. Average pools are not made
for float64 (``RECOVERED_DTYPES``): onnxruntime has no float64 AveragePool,
and the float64 mean form runs exactly as it is. Nodes left dead (the reshape and
its run-time shape computation) are erased. Each node is visited once per
change of its inputs and a tree is walked only from its root: linear.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ir import DType, Node, Value, symbolic
from passes.base import TYPES, register_pass
from passes.rewrite import (Const, Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var, all_equal, producer,
                            single_use)
from passes.shape_facts import elements

OPEN_END = 2 ** 62  # slice ends at least this large are "to the end" (PyTensor writes INT64_MAX)

# The dtypes each op is recovered for: max pools of any number type (the
# emitter bridges what onnxruntime's MaxPool lacks exactly); average pools
# of float16/float32 only: onnxruntime has no float64 AveragePool (the
# emitter's float64 policy would compute in float32) while the float64 mean
# form runs exactly as it is.
RECOVERED_DTYPES = {
    "max_pool": {d for d in DType if d != DType.BOOL},
    "global_max_pool": {d for d in DType if d != DType.BOOL},
    "avg_pool": {DType.FLOAT16, DType.FLOAT32},
    "global_avg_pool": {DType.FLOAT16, DType.FLOAT32, DType.FLOAT64},
}


# -- small helpers ---------------------------------------------------------
def _only_use(value: Value, shape_reads: bool = False) -> bool:
    """``single_use``, not counting ``shape`` readers with ``shape_reads``
    (PyTensor's mean divides by a count read off the shape)."""
    return single_use(value, ignore=_is_shape_node if shape_reads else None)


def _is_shape_node(node: Node) -> bool:
    return node.op == "shape"


def _static(dims) -> bool:
    return all(isinstance(d, int) and d > 0 for d in dims)


def _check_dtype(op: str, x: Value) -> str | None:
    if x.dtype not in RECOVERED_DTYPES[op]:
        return f"{op} is not recovered for {x.dtype} (see RECOVERED_DTYPES)"
    return None


def _tree_leaves(root: Value, op: str) -> list[Value]:
    """The operands of the ``op`` tree rooted at ``root``, left to right;
    inner ``op`` nodes must have no reader but their parent."""
    leaves, stack = [], [root]
    while stack:
        v = stack.pop()
        node = v.producer
        if node is not None and node.op == op and (v is root or _only_use(v)):
            stack.extend(reversed(node.inputs))
        else:
            leaves.append(v)
    return leaves


def _crop(rw: Rewriter, x: Value, bounds: dict[int, tuple[int, int]]) -> Value:
    """``x[..., start:stop, ...]`` on the axes of ``bounds`` (axis -> (start, stop))."""
    if not bounds:
        return x
    axes = sorted(bounds)
    arr = lambda vals: rw.const(np.array(vals, dtype=np.int64), "crop")  # noqa: E731
    return rw.add("slice", [x, arr([bounds[a][0] for a in axes]), arr([bounds[a][1] for a in axes]),
                            arr([1] * len(axes))], {"axes": axes})


def _window_pool(rw: Rewriter, op: str, x: Value, kernel, strides, starts, lengths) -> Value | str:
    """``op`` with ``kernel`` and ``strides`` whose window ``j`` on spatial
    axis ``i`` starts at ``starts[i] + j * strides[i]``, ``lengths[i]``
    windows: a pool of ``x``, cropped where the pool alone would not give
    exactly those windows."""
    why = _check_dtype(op, x)
    if why:
        return why
    dims = x.shape
    bounds = {}
    for i, (k, s, b, n) in enumerate(zip(kernel, strides, starts, lengths)):
        if dims[2 + i] is None:
            return f"spatial axis {i} of {x.type} has no known size"
        if b != 0 or symbolic.add(symbolic.floordiv(symbolic.sub(dims[2 + i], k), s), 1) != n:
            if not isinstance(n, int):
                return f"the windows of axis {i} are a crop of symbolic size {n}"
            bounds[2 + i] = (b, b + (n - 1) * s + k)
    return rw.add(op, [_crop(rw, x, bounds)], {"kernel": list(kernel), "strides": list(strides)})


# -- reshape windows (rules 1 and 2) -----------------------------------------
class Window(NamedTuple):
    """A pooling window read off a reshape: the source, kernel (= strides)
    and number of windows per spatial axis."""

    x: Value
    kernel: tuple[int, ...]
    lengths: tuple[int, ...]


def reshape_window(reshaped: Value, axes) -> Window | str:
    """The window of ``reshaped = reshape(x)`` reduced over ``axes``, when
    the reshape splits each spatial axis of ``x`` (N, C, *S) into
    (S_i/k_i, k_i) and ``axes`` are the k_i axes; else why not."""
    x = reshaped.producer.inputs[0]
    xs, rs = x.shape, reshaped.shape
    nsp = x.rank - 2
    if nsp < 1 or reshaped.rank != 2 + 2 * nsp:
        return f"reshape {x.type} -> {reshaped.type} does not split each spatial axis in two"
    if sorted(axes) != [3 + 2 * i for i in range(nsp)]:
        return f"reduces axes {list(axes)}, not the window axes {[3 + 2 * i for i in range(nsp)]}"
    kernel, lengths = tuple(rs[3::2]), tuple(rs[2::2])
    if not _static(kernel) or any(d is None for d in (*xs[1:], *lengths)):
        return f"the window of {x.type} -> {reshaped.type} is not static or a dim is unknown"
    if rs[1] != xs[1] or not all(_splits(d, n, k) for n, k, d in zip(lengths, kernel, xs[2:])):
        return f"reshape {x.type} -> {reshaped.type} is not a split of the spatial axes"
    if isinstance(xs[0], int) and isinstance(rs[0], int) and xs[0] != rs[0]:
        return "the reshape changes the batch"
    if not _static(xs[1:]) and (xs[0] is None or xs[0] != rs[0]):
        # With static nonzero dims after the batch the element count fixes it; else the dims must say so.
        return f"the batch of {reshaped.type} is not known to be that of {x.type}"
    return Window(_uncropped(x, kernel, lengths), kernel, lengths)


def _splits(d, n, k: int) -> bool:
    """Whether an axis of size ``d`` reshaped to ``(n, k)`` is a split:
    ``n * k == d``, or ``n == d // k`` (the floor-mode window count: where
    ``k`` does not divide ``d``, PyTensor's reshape raises and the pool drops
    the remainder, docs/numerics.md)."""
    return symbolic.mul(n, k) == d or (not isinstance(d, int) and n == symbolic.floordiv(d, k))


def _uncropped(x: Value, kernel, lengths) -> Value:
    """The source of a crop ``x = src[:, :, :a, :b]`` that floor-mode pooling
    with stride = kernel makes implicit, else ``x``."""
    node = x.producer
    if node is None or node.op != "slice":
        return x
    src = node.inputs[0]
    dims = src.shape
    bounds = [elements(v) for v in node.inputs[1:]]
    if any(b is None for b in bounds):
        return x
    for a, b, e, s in zip(node.attrs["axes"], *bounds):
        a %= src.rank
        k, n, d = kernel[a - 2], lengths[a - 2], dims[a]
        if a < 2 or s != 1 or d is None:
            return x
        if _static((d, n)) and isinstance(b, int) and isinstance(e, int):
            if range(*slice(b, e, s).indices(d)) != range(n * k):
                return x
        elif b != 0 or e != symbolic.mul(n, k):  # x[:n*k] with n*k <= d, as the floor-mode count below proves
            return x
        if symbolic.add(symbolic.floordiv(symbolic.sub(d, k), k), 1) != n:
            return x
    return src


def reshape_max(rw: Rewriter, m: Match) -> Value | str:
    """reduce_max{window axes}(reshape(x)) -> max_pool(x) (rule 1)."""
    w = reshape_window(m.reshape.output, m.root.attrs["axes"])
    if isinstance(w, str):
        return w
    return _window_pool(rw, "max_pool", w.x, w.kernel, w.kernel, (0,) * len(w.kernel), w.lengths)


# -- strided slices (rules 3 and 4) ------------------------------------------
class Strided(NamedTuple):
    """A slice of ``x`` read as a window offset: per spatial axis its start,
    and the group key (x, steps, lengths) slices of one pool share.
    ``open_ended``: a strided slice of symbolic axes to their end
    (``x[:, :, 1::2]``), whose lengths differ between offsets (see
    ``_grids``)."""

    x: Value
    steps: tuple[int, ...]
    lengths: tuple[int, ...]
    starts: tuple[int, ...]
    open_ended: bool = False


def strided_slice(value: Value) -> Strided | None:
    """``value`` as a slice of the spatial axes of some x with constant
    bounds and positive steps (other axes untouched), else None."""
    node = value.producer
    if node is None or node.op != "slice":
        return None
    x = node.inputs[0]
    dims = x.shape
    if x.rank < 3:
        return None
    if not all(v.const is not None for v in node.inputs[1:]) or not _static(dims[2:]):
        return _symbolic_slice(node, dims)
    spans = {a: range(d) for a, d in enumerate(dims) if a >= 2}
    starts, stops, steps = (v.const.tolist() for v in node.inputs[1:])
    for a, b, e, s in zip(node.attrs["axes"], starts, stops, steps):
        a %= x.rank
        if a >= 2:
            spans[a] = range(*slice(b, e, s).indices(dims[a]))
        elif not (b == 0 and s == 1 and e >= (dims[a] if isinstance(dims[a], int) else OPEN_END)):
            return None  # the batch or channel axis is cut
    if any(r.step < 1 or len(r) == 0 for r in spans.values()):
        return None
    order = sorted(spans)
    return Strided(x, tuple(spans[a].step if len(spans[a]) > 1 else 1 for a in order),
                   tuple(len(spans[a]) for a in order), tuple(spans[a].start for a in order))


def _symbolic_slice(node: Node, dims) -> Strided | None:
    """A ``slice`` of the spatial axes with bounds or sizes that are
    symbolic as a ``Strided`` with symbolic lengths (bounds read with
    ``shape_facts.elements``): step 1, the start a constant >= 0, the stop
    provably within the axis (``x[:, :, i:i + H]`` of an x of ``H + 4``
    rows); or a constant step and start on a symbolic axis, to its end
    (``x[:, :, 1::2]``: ``ceil((H - 1) / 2)`` rows, ``open_ended``)."""
    x = node.inputs[0]
    bounds = [elements(v) for v in node.inputs[1:]]
    if any(b is None for b in bounds) or not all(isinstance(s, int) and s >= 1 for s in bounds[2]):
        return None
    starts, lengths = {a: 0 for a in range(2, x.rank)}, {a: dims[a] for a in range(2, x.rank)}
    steps, open_ended = {a: 1 for a in range(2, x.rank)}, False
    for a, b, e, s in zip(node.attrs["axes"], *bounds):
        a %= x.rank
        if isinstance(e, int) and e >= OPEN_END:
            e = dims[a]
        if a < 2:
            if b != 0 or e != dims[a] or s != 1:
                return None
            continue
        if not isinstance(b, int) or b < 0 or not _is_size(e) or dims[a] is None:
            return None
        if s != 1:
            if e != dims[a] or isinstance(e, int):
                return None
            starts[a], steps[a], lengths[a], open_ended = b, s, symbolic.ceildiv(symbolic.sub(e, b), s), True
            continue
        length = symbolic.sub(e, b)
        if not (symbolic.is_nonnegative(e) and symbolic.is_nonnegative(symbolic.sub(dims[a], e))
                and symbolic.is_nonnegative(length)):
            return None
        starts[a], lengths[a] = b, length
    if any(n is None for n in lengths.values()):
        return None
    order = sorted(starts)
    return Strided(x, tuple(steps[a] for a in order), tuple(lengths[a] for a in order),
                   tuple(starts[a] for a in order), open_ended)


def _is_size(e) -> bool:
    return isinstance(e, (int, str, symbolic.Expr)) and not isinstance(e, bool)


def grid_kernel(offsets: set[tuple[int, ...]]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(base, kernel) when ``offsets`` is every point of a box
    base + [0, k1) x [0, k2) x ..., with at least two points; else None."""
    if len(offsets) < 2:
        return None
    base = tuple(min(c) for c in zip(*offsets))
    kernel = tuple(max(c) - b + 1 for c, b in zip(zip(*offsets), base))
    return (base, kernel) if len(offsets) == int(np.prod(kernel)) else None


def _grids(leaves: list[Value]) -> tuple[list[tuple[Strided, tuple, tuple]], list[Value]]:
    """Split ``leaves`` into full grids of strided slices (group, base,
    kernel) and the other leaves, keeping first-seen order.

    Open-ended strided slices of a symbolic axis (``x[:, :, 0::2]`` and
    ``x[:, :, 1::2]``) have lengths that differ by offset
    (``ceil((H - j) / s)``); they group by (x, steps) and pool from offset 0
    with the floor-mode count ``(H - k) // s + 1`` as their length. Where
    the lengths differ at run time (an odd H for k = s = 2), PyTensor's
    elementwise maximum raises and the pool drops the remainder; where they
    are equal, they equal that count (the numerics contract, docs/numerics.md)."""
    groups: dict[tuple, list[tuple[Value, Strided | None]]] = {}
    for leaf in leaves:
        s = strided_slice(leaf)
        key = (leaf,) if s is None else (s.x, s.steps, "open") if s.open_ended else (s.x, s.steps, s.lengths)
        groups.setdefault(key, []).append((leaf, s))
    grids, rest = [], []
    for members in groups.values():
        first = members[0][1]
        found = grid_kernel({s.starts for _, s in members}) if first is not None else None
        if found is not None and first.open_ended:
            found, first = _open_grid(first, found, [s for _, s in members])
        if found is None:
            rest.extend(leaf for leaf, _ in members)
        else:
            grids.append((first, *found))
    return grids, rest


def _open_grid(first: Strided, found: tuple, members: list[Strided]) -> tuple[tuple | None, Strided]:
    """A grid of open-ended slices (``_grids``) as one ``Strided`` whose
    lengths are the floor-mode window counts, or (None, first) when it
    does not start at 0 on every axis or a member is not open-ended on a
    strided axis."""
    base, kernel = found
    dims = first.x.shape[2:]
    counts = []
    for i, (k, s, d) in enumerate(zip(kernel, first.steps, dims)):
        if base[i] != 0 or (s == 1 and k != 1):
            return None, first
        counts.append(symbolic.add(symbolic.floordiv(symbolic.sub(d, k), s), 1) if s != 1 else first.lengths[i])
    if any(m.lengths[i] != (symbolic.ceildiv(symbolic.sub(d, m.starts[i]), s) if s != 1 else first.lengths[i])
           for m in members for i, (s, d) in enumerate(zip(first.steps, dims))):
        return None, first
    return found, first._replace(lengths=tuple(counts))


def strided_max(rw: Rewriter, m: Match) -> Value | str:
    """maximum tree over a full grid of strided slices -> max_pool (rule 3)."""
    out = m.root.output
    if _only_use(out) and out.uses()[0].node.op == "maximum":
        return "inside a larger maximum tree (its root is rewritten)"
    grids, rest = _grids(_tree_leaves(out, "maximum"))
    if not grids:
        return "no full grid of strided slices of one value among the maximum's operands"
    terms = []
    for s, base, kernel in grids:
        pooled = _window_pool(rw, "max_pool", s.x, kernel, s.steps, base, s.lengths)
        if isinstance(pooled, str):
            return pooled
        terms.append(pooled)
    result = terms[0]
    for v in terms[1:] + rest:
        result = rw.add("maximum", [result, v])
    return result


# -- means (rules 2, 4 and 5) ------------------------------------------------
class Sum(NamedTuple):
    """A sum being averaged: the reduced source, the reduce node (None for an
    add tree), whether it is widened, and whether the reduced axes were put
    back by an unsqueeze (keepdims)."""

    source: Value
    reduce: Node | None
    widened: bool
    kept: tuple[int, ...] | None


def sum_of(total: Value) -> Sum | str:
    """Read ``[unsqueeze](cast(reduce_sum(cast(source))))``, casts optional,
    or an ``add`` tree (source = total), every inner value single-use."""
    if not _only_use(total):
        return "the sum has other readers"
    v, kept = total, None
    node = producer(v, "unsqueeze", single=True)
    if node is not None:
        v, kept = node.inputs[0], tuple(sorted(a % total.rank for a in node.attrs["axes"]))
    node = producer(v, "cast", single=True)
    if node is not None:
        v = node.inputs[0]
    reduce = producer(v, "reduce_sum", single=True)
    if reduce is None:
        return Sum(total, None, False, None) if kept is None and producer(total, "add") else \
            f"%{total.name or '?'} is not a reduce_sum or an add tree"
    if reduce.attrs["keepdims"]:
        return "the reduce_sum keeps its axes"
    source = reduce.inputs[0]
    cast = producer(source, "cast", single=True)
    if cast is not None:
        source = cast.inputs[0]
    if source.dtype != total.dtype:
        return f"the sum of {source.type} ends as {total.dtype}"
    if not reduce.inputs[0].dtype.is_float or reduce.inputs[0].dtype.numpy.itemsize < source.dtype.numpy.itemsize:
        return f"the sum is computed in {reduce.inputs[0].dtype}, narrower than {source.dtype}"
    return Sum(source, reduce, reduce.inputs[0].dtype != source.dtype, kept)


def _count(value: Value) -> int | float | symbolic.Dim:
    """The one value every element of ``value`` holds, if known: a number,
    or a size (a dim: the spatial size a symbolic mean divides by)."""
    if value.const is not None:
        flat = value.const.reshape(-1)
        return flat[0].item() if flat.size and all_equal(flat, flat[0]) else None
    el = elements(value)
    if el and all(e == el[0] for e in el) and (isinstance(el[0], float) or _is_size(el[0])):
        return el[0]
    return None


def _size_product(value: Value, depth: int = 8) -> symbolic.Dim | None:
    """A float scalar computed as a product of sizes (PyTensor's mean over
    symbolic axes divides by ``cast(shape)[2] * cast(shape)[3]``) as that
    product, else None. Exact while the product fits the float's
    significand (2**24 in float32): beyond it the graph divides by a rounded
    count, the pool by the exact one (``numerics="strict"`` declines)."""
    if value.type.size != 1 or depth == 0:
        return None
    node = value.producer
    if node is not None and node.op == "mul":
        a, b = (_size_product(v, depth - 1) for v in node.inputs)
        return symbolic.mul(a, b) if a is not None and b is not None else None
    el = elements(value)
    return el[0] if el and _is_size(el[0]) else None


def _mean(rw: Rewriter, m: Match, count: int | float, narrow_sums: bool, strict: bool = False) -> Value | str:
    """``m.total / count`` as a pool (rules 2, 4 and 5)."""
    s = sum_of(m.total)
    if isinstance(s, str):
        return s
    if s.widened and (strict or not narrow_sums):
        return ("the sum is computed in a wider dtype than AveragePool's "
                + ("(numerics='strict')" if strict else "(narrow_sums=False)"))
    if strict and m.total.dtype == DType.FLOAT16:
        return "numerics='strict': a float16 pool rounds once where the matched graph rounds the sum first"
    x = s.source
    if s.reduce is None:  # rule 4: an add tree of strided slices
        grids, rest = _grids(_tree_leaves(x, "add"))
        if len(grids) != 1 or rest:
            return "the add tree is not exactly a full grid of strided slices of one value"
        g, base, kernel = grids[0]
        if count != int(np.prod(kernel)):
            return f"divides by {count}, not by the {int(np.prod(kernel))} slices summed"
        return _window_pool(rw, "avg_pool", g.x, kernel, g.steps, base, g.lengths)
    axes = tuple(sorted(a % x.rank for a in s.reduce.attrs["axes"]))
    w = None
    if s.kept is None and x.producer is not None and x.producer.op == "reshape" and _only_use(x, shape_reads=True):
        w = reshape_window(x, axes)  # rule 2
    if isinstance(w, Window):
        if count != int(np.prod(w.kernel)):
            return f"divides by {count}, not by the window size {int(np.prod(w.kernel))}"
        return _window_pool(rw, "avg_pool", w.x, w.kernel, w.kernel, (0,) * len(w.kernel), w.lengths)
    return _global(rw, "global_avg_pool", x, axes, s.kept, count)


def _global(rw: Rewriter, op: str, x: Value, axes: tuple[int, ...], kept, count=None) -> Value | str:
    """``op(x)`` for a reduction of ``x`` over ``axes``, squeezed unless
    ``kept`` (the axes an unsqueeze put back) are those axes (rule 5)."""
    spatial = tuple(range(2, x.rank))
    if x.rank < 4:
        return f"{x.type} has fewer than two spatial axes (a LayerNorm's mean, not a pool)"
    if axes != spatial:
        return f"reduces axes {list(axes)} of {x.type}, not the spatial axes {list(spatial)}"
    if kept is not None and kept != spatial:
        return f"puts back axes {list(kept)}, not {list(spatial)}"
    if count is not None:
        dims = x.shape[2:]
        size = int(np.prod(dims)) if _static(dims) else symbolic.product(dims)
        if size is None or count != size:
            return f"divides by {count}, not by the {symbolic.format_dim(size)} spatial elements"
    why = _check_dtype(op, x)
    if why:
        return why
    pooled = rw.add(op, [x])
    return pooled if kept else rw.add("squeeze", [pooled], {"axes": list(spatial)})


def mean_div(rw: Rewriter, m: Match, narrow_sums: bool, strict: bool = False) -> Value | str:
    """sum / count -> avg_pool or global_avg_pool."""
    count = _count(m.count)
    if count is None and m.count.dtype.is_float:
        count = _size_product(m.count)
        if count is not None and strict:
            return "numerics='strict': the divisor is a float product of sizes (rounded past the significand)"
    if count is None:
        return "the divisor is not a known constant"
    return _mean(rw, m, count, narrow_sums, strict)


def mean_mul(rw: Rewriter, m: Match, narrow_sums: bool, strict: bool = False) -> Value | str:
    """sum * (1/count) -> avg_pool or global_avg_pool, when the factor is
    exactly 1/count rounded to the dtype (PyTensor's rewrite of a division);
    with ``strict``, only where that product is the quotient bit for bit
    (count a power of two)."""
    scale = _count(m.scale)
    if not isinstance(scale, (int, float)) or not scale or scale < 0:
        return "the factor is not one positive constant"
    dtype = m.total.dtype.numpy
    count = round(1 / scale)
    if count < 1 or dtype.type(1) / dtype.type(count) != dtype.type(scale):
        return f"the factor {scale} is not 1/n for an integer n"
    if strict and count & (count - 1):
        return f"numerics='strict': sum * (1/{count}) rounds otherwise than the pool's sum / {count}"
    return _mean(rw, m, count, narrow_sums, strict)


# -- global max, keepdims, pads (rules 5 and 6) ------------------------------
def global_max(rw: Rewriter, m: Match) -> Value | str:
    """reduce_max{spatial axes}(x) -> [squeeze](global_max_pool(x))."""
    node = m.root
    axes = tuple(sorted(a % m.x.rank for a in node.attrs["axes"]))
    return _global(rw, "global_max_pool", m.x, axes, axes if node.attrs["keepdims"] else None)


def kept_global_pool(rw: Rewriter, m: Match) -> Value | str:
    """unsqueeze{a}(squeeze{a}(global pool)) -> global pool."""
    pooled = m.pool.output
    spatial = list(range(2, pooled.rank))
    if sorted(a % pooled.rank for a in m.squeeze.attrs["axes"]) != spatial or \
            sorted(a % pooled.rank for a in m.root.attrs["axes"]) != spatial:
        return "the squeeze and unsqueeze axes are not the spatial axes"
    return pooled


def pad_into_pool(rw: Rewriter, m: Match) -> Value | str:
    """max_pool(pad(x, -inf)) -> max_pool{pads}(x) (rule 6)."""
    pool, pad, x = m.root, m.pad, m.x
    lowest = -np.inf if x.dtype.is_float else np.iinfo(x.dtype.numpy).min
    if not np.all(m.fill.const == lowest):
        return f"pads with {m.fill.const}, not {lowest}"
    r, nsp = x.rank, x.rank - 2
    pads = pad.attrs["pads"]
    if any(pads[a] or pads[a + r] for a in (0, 1)):
        return "the pad widens the batch or channel axis"
    if any(d != 1 for d in pool.attrs["dilations"]):
        return "the pool is dilated"
    old = pool.attrs["pads"] or (0,) * (2 * nsp)
    new = [old[i] + pads[2 + i] for i in range(nsp)] + [old[nsp + i] + pads[r + 2 + i] for i in range(nsp)]
    kernel = pool.attrs["kernel"]
    if any(p >= kernel[i % nsp] for i, p in enumerate(new)):
        return f"pads {new} would not be smaller than the kernel {list(kernel)}"
    return rw.add("max_pool", [x], {**pool.attrs, "pads": new})


def rules(narrow_sums: bool, strict: bool = False) -> RuleSet:
    """The rules of the pass (see the module docstring); ``narrow_sums`` as
    the pass option, ``strict`` for ``numerics="strict"``."""
    def mean(rw: Rewriter, m: Match) -> Value | str:
        return mean_div(rw, m, narrow_sums, strict)

    def mean_reciprocal(rw: Rewriter, m: Match) -> Value | str:
        return mean_mul(rw, m, narrow_sums, strict)

    return RuleSet([
        # reduce_max{window axes}(reshape(x)) -> max_pool(x)
        Rule("reshape-max", Op("reduce_max", Op("reshape", Var(), Var(), name="reshape"),
                               attrs={"keepdims": False}), reshape_max),
        # reduce_max{spatial axes}(x) -> [squeeze](global_max_pool(x))
        Rule("global-max", Op("reduce_max", Var("x")), global_max),
        # maximum tree over a full grid of strided slices -> max_pool
        Rule("strided-max", Op("maximum", Var(), Var()), strided_max),
        # sum / count, sum * (1/count) -> avg_pool or global_avg_pool
        Rule("mean", Op("div", Var("total"), Var("count")), mean),
        Rule("mean-reciprocal", Op("mul", Var("total"), Const("scale")), mean_reciprocal),
        # unsqueeze(squeeze(global pool)) -> global pool
        *(Rule("kept-global-pool", Op("unsqueeze", Op("squeeze", Op(op, Var(), name="pool"), name="squeeze")),
               kept_global_pool) for op in ("global_max_pool", "global_avg_pool")),
        # max_pool(pad(x, -inf)) -> max_pool{pads}(x)
        Rule("pad-into-pool", Op("max_pool", Op("pad", Var("x"), Const("fill"), name="pad", single_use=False)),
             pad_into_pool),
    ])


RULES = rules(narrow_sums=True)
EXACT_SUM_RULES = rules(narrow_sums=False)
STRICT_RULES = rules(narrow_sums=False, strict=True)


@register_pass
@dataclass(frozen=True)
class PoolRecovery(RuleSetPass):
    """Recover pooling ops (see the module docstring).

    Attributes:
        narrow_sums: also recover means whose sum PyTensor computes in a
            wider dtype than the input (float32 summed in float64): the
            pool sums in the input dtype, a rounding-level difference.
        numerics: ``"strict"`` runs ``STRICT_RULES`` (no narrowed sum
            whatever ``narrow_sums`` says, no float16 mean, ``sum * (1/n)``
            only for n a power of two); ``"fast"`` or None (alone; a
            compilation fills in its mode) as ``narrow_sums`` says.
    """

    name = "pool-recovery"
    requires = (TYPES,)  # window sizes read from dims that shape arithmetic determines
    narrow_sums: bool = True
    numerics: str | None = None

    def rule_set(self) -> RuleSet:
        return STRICT_RULES if self.strict else RULES if self.narrow_sums else EXACT_SUM_RULES
