"""What is known of the values of small integer tensors: the shape
arithmetic that ``shape-inference`` and ``shape-folding`` see through.

An int32/int64 value of rank 0 or 1 with at most ``CONTENT_LIMIT`` elements
is *tracked*: its content is a tuple of dims (``int``, ``str``, ``Expr`` or
None), its elements in order. ``shape(x)`` of an ``f32[N,3]`` is ``(N, 3)``,
``gather`` of that at 0 is ``(N,)``, ``mul`` of that by 2 is ``(2*N,)``, and
``concat`` joins such tuples. ``VALUE_RULES`` holds one rule per op, read
top to bottom; an op without a rule gives unknown elements. The arithmetic
is the IR's (NumPy integer semantics: ``floor_div`` and ``mod`` round toward
negative infinity), computed by ``ir.symbolic``; a result it cannot express
(division by a symbol) is unknown, and so is an int result that would not
fit the value's dtype (Python ints do not wrap around as int64 does). Shapes
fit in int32, so int32 and int64 contents are the same numbers.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ir import symbolic as sym
from ir.core import Node, Value
from ir.types import DType, TensorType

CONTENT_LIMIT = 64  # longest vector whose elements are tracked
TRACKED_DTYPES = (DType.INT64, DType.INT32)

Content = tuple  # of dims


def tracked(t: TensorType) -> bool:
    """Whether values of type ``t`` have tracked contents."""
    return (t.dtype in TRACKED_DTYPES and t.rank <= 1
            and (t.rank == 0 or (isinstance(t.shape[0], int) and t.shape[0] <= CONTENT_LIMIT)))


def _length(t: TensorType) -> int:
    return 1 if t.rank == 0 else t.shape[0]


class ShapeValues:
    """The contents known so far, filled in program order by ``update``."""

    def __init__(self) -> None:
        self.known: dict[Value, Content] = {}

    def of(self, value: Value) -> Content | None:
        """The content of ``value`` (elements None where unknown), or None if
        it is not tracked."""
        got = self.known.get(value)
        if got is not None:
            return got
        if not tracked(value.type):
            return None
        if value.const is not None:
            got = tuple(int(v) for v in value.const.reshape(-1))
            self.known[value] = got
            return got
        return (None,) * _length(value.type)

    def array(self, value: Value) -> np.ndarray | None:
        """The content of ``value`` as a NumPy object array of its shape (what
        type rules with ``symbolic_inputs`` read), or None when nothing is known."""
        content = self.known.get(value)
        if content is None or all(d is None for d in content):
            return None
        out = np.empty(len(content), dtype=object)
        out[:] = content
        return out.reshape(value.shape)

    def update(self, node: Node) -> None:
        """Record the contents of ``node``'s outputs from its inputs' contents."""
        if not any(tracked(v.type) for v in node.outputs):
            return
        rule = VALUE_RULES.get(node.op)
        if rule is None:
            return
        results = rule(node, [self.of(v) for v in node.inputs])
        for out, content in zip(node.outputs, results or ()):
            if (content is not None and tracked(out.type) and len(content) == _length(out.type)
                    and any(d is not None for d in content) and _fits(content, out.dtype)):
                self.known[out] = tuple(content)


# -- rules --------------------------------------------------------------------
Rule = Callable[[Node, Sequence["Content | None"]], "list[Content | None] | None"]


def _shape(node, args):
    """shape(x): the dims of x."""
    return [tuple(node.inputs[0].shape)]


def _same(node, args):
    """unsqueeze, squeeze, reshape, transpose of a vector, int -> int cast: the same elements."""
    if node.op == "cast" and node.attrs["to"] not in TRACKED_DTYPES:
        return None
    return [args[0]]


def _gather(node, args):
    """gather(v, i) of a vector at known indices (negative from the end)."""
    data, idx = args
    if data is None or idx is None or node.inputs[0].rank != 1:
        return None
    out = []
    for i in idx:
        if not isinstance(i, int) or not -len(data) <= i < len(data):
            return None
        out.append(data[i])
    return [tuple(out)]


def _concat(node, args):
    """concat of vectors: the elements one after the other."""
    if any(a is None for a in args):
        return None
    return [tuple(d for a in args for d in a)]


def _slice(node, args):
    """slice of a vector with static bounds: Python slicing (the IR's open ends
    are INT64_MIN/MAX, which Python clamps the same way)."""
    data, starts, ends, steps = args
    if data is None or node.inputs[0].rank != 1 or any(
            b is None or not all(isinstance(d, int) for d in b) for b in (starts, ends, steps)):
        return None
    return [data[slice(starts[0], ends[0], steps[0])]]


def _split(node, args):
    """split of a vector at static sizes."""
    data, sizes = args
    if data is None or sizes is None or not all(isinstance(s, int) for s in sizes):
        return None
    bounds = np.cumsum((0,) + tuple(sizes))
    return [data[bounds[i]:bounds[i + 1]] for i in range(len(sizes))]


def _expand(node, args):
    """expand of one element to the output's static length."""
    data = args[0]
    if data is None or len(data) != 1:
        return None
    return [data * _length(node.output.type)]


def _reduce(fn):
    def rule(node, args):
        """reduce_sum, reduce_prod of a vector over its only axis."""
        data = args[0]
        if data is None:
            return None
        return [(fn(data),)]
    return rule


def _elementwise(fn):
    def rule(node, args):
        """Elementwise integer arithmetic, a length-1 operand broadcast."""
        if any(a is None for a in args):
            return None
        n = _length(node.output.type)
        if any(len(a) not in (1, n) for a in args):
            return None
        columns = [a * n if len(a) == 1 else a for a in args]
        return [tuple(fn(*row) for row in zip(*columns))]
    return rule


def _where(node, args):
    """where(c, a, b) with a constant condition ``c``: the selected elements
    (length-1 operands broadcast)."""
    cond = node.inputs[0].const
    a, b = args[1], args[2]
    if cond is None or a is None or b is None:
        return None
    n = _length(node.output.type)
    flags = [bool(f) for f in np.broadcast_to(cond.reshape(-1), (n,))] if cond.size in (1, n) else None
    if flags is None or any(len(v) not in (1, n) for v in (a, b)):
        return None
    a, b = (v * n if len(v) == 1 else v for v in (a, b))
    return [tuple(p if f else q for f, p, q in zip(flags, a, b))]


VALUE_RULES: dict[str, Rule] = {
    "shape": _shape,
    "unsqueeze": _same,
    "squeeze": _same,
    "reshape": _same,     # rank <= 1 to rank <= 1 keeps the element order
    "transpose": _same,
    "cast": _same,        # int32 <-> int64 only (shapes fit)
    "gather": _gather,
    "concat": _concat,
    "slice": _slice,
    "split": _split,
    "expand": _expand,
    "reduce_sum": _reduce(sym.total),
    "reduce_prod": _reduce(sym.product),
    "add": _elementwise(sym.add),
    "sub": _elementwise(sym.sub),
    "mul": _elementwise(sym.mul),
    "floor_div": _elementwise(sym.floordiv),
    "mod": _elementwise(sym.mod),
    "neg": _elementwise(sym.neg),
    "abs": _elementwise(sym.absolute),
    "maximum": _elementwise(sym.maximum),
    "minimum": _elementwise(sym.minimum),
    "where": _where,
}


def is_static(content: Content | None) -> bool:
    """Whether every element of ``content`` is an int."""
    return content is not None and all(isinstance(d, int) for d in content)


_RANGES = {d: (int(np.iinfo(d.numpy).min), int(np.iinfo(d.numpy).max)) for d in TRACKED_DTYPES}


def _fits(content: Content, dtype: DType) -> bool:
    """Whether the int elements fit ``dtype``."""
    lo, hi = _RANGES[dtype]
    return all(lo <= d <= hi for d in content if isinstance(d, int))
