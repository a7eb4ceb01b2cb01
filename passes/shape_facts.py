"""Shape facts: what is known of the *values* of small integer and
shape-like tensors, and of the run-time sizes they describe. One analysis,
one per-op table (``VALUE_RULES``), used two ways:

- **forward**, in program order (``ShapeValues``): ``shape-inference`` and
  ``shape-folding`` track every int32/int64 value of rank 0 or 1 with at most
  ``CONTENT_LIMIT`` elements. Its *content* is a tuple of dims (``int``,
  ``str``, ``Expr`` or None), its elements in order: ``shape(x)`` of an
  ``f32[N,3]`` is ``(N, 3)``, ``gather`` of that at 0 is ``(N,)``, ``mul`` of
  that by 2 is ``(2*N,)``, and ``concat`` joins such tuples.
- **on demand**, backward from a value (``elements``, ``dim_source``):
  the recovery passes ask what a reshape or expand target holds, or
  whether two sizes are the same, after other rewrites changed the graph
  (the types they read are fresh: the pipeline keeps ``passes.base.TYPES``). Elements may then also be float numbers (a divisor computed
  from a shape), and an unknown size is a token ``DimOf(value, axis)``: equal
  tokens mean equal sizes (named dims are equal sizes by the IR's
  convention); unequal tokens mean "not known to be equal". Every query
  follows at most ``MAX_STEPS`` producers (a budget shared by its
  recursion), so a pass that asks once per node stays linear in graph size;
  running out of budget only makes an answer less precise, never wrong.

The arithmetic is the IR's: on integer dims (named or expressions) it is
``ir.symbolic``'s (NumPy integer semantics: ``floor_div`` and ``mod`` round
toward negative infinity); on float numbers it is NumPy's in the value's
dtype. A result ``ir.symbolic`` cannot express (division by a symbol) is
unknown, and so, forward, is an int result that would not fit the value's
dtype (Python ints do not wrap around as int64 does). Shapes fit in int32,
so int32 and int64 contents are the same numbers.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ir import get_op
from ir.opdef import ELEMENTWISE, ROW_MAJOR_VIEW
from ir import symbolic as sym
from ir.core import Node, Value
from ir.types import DType, TensorType

CONTENT_LIMIT = 64  # longest vector whose elements are tracked forward
TRACKED_DTYPES = (DType.INT64, DType.INT32, DType.BOOL)  # bools: comparisons of sizes
MAX_STEPS = 256  # distinct producers one on-demand query may visit
MAX_ELEMENTS = 16  # the longest value ``elements`` evaluates

Content = tuple  # of elements: numbers, dims, DimOf tokens or None


class DimOf(NamedTuple):
    """The run-time size of ``value``'s ``axis``, when nothing better is known."""

    value: Value
    axis: int


class Cmp(NamedTuple):
    """An undecided comparison of two sizes, ``x < y`` (``op`` "lt"), ``x <= y``
    ("le") or ``x == y`` ("eq"): the element of a bool value, so that
    ``where(x < y, x, y)`` is known to be ``min(x, y)``."""

    op: str
    x: Any
    y: Any


def _is_number(e) -> bool:
    return isinstance(e, (int, float, np.integer, np.floating)) and not isinstance(e, (bool, np.bool_))


def _is_dim(e) -> bool:
    return isinstance(e, (int, str, sym.Expr)) and not isinstance(e, bool)


def _number(a: np.ndarray) -> int | float:
    return a.item()


def _length(t: TensorType) -> int:
    """The number of elements of a value of static size (a vector's length)."""
    return 1 if t.rank == 0 else t.shape[0] if t.rank == 1 else t.size


def tracked(t: TensorType) -> bool:
    """Whether values of type ``t`` have tracked contents."""
    return (t.dtype in TRACKED_DTYPES and t.rank <= 1
            and (t.rank == 0 or (isinstance(t.shape[0], int) and t.shape[0] <= CONTENT_LIMIT)))


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
            got = tuple(value.const.reshape(-1).tolist())
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
        for v in node.outputs:
            if tracked(v.type):
                break
        else:
            return  # no output has tracked contents (the common case)
        rule = VALUE_RULES.get(node.op)
        if rule is None:
            return
        results = rule(node, [self.of(v) for v in node.inputs])
        for out, content in zip(node.outputs, results or ()):
            if (content is not None and tracked(out.type) and len(content) == _length(out.type)
                    and any(d is not None for d in content) and _fits(content, out.dtype)):
                self.known[out] = _refined(tuple(content), node)


# -- rules --------------------------------------------------------------------
Rule = Callable[[Node, Sequence["Content | None"]], "list[Content | None] | None"]


def _shape(node, args):
    """shape(x): the dims of x."""
    return [tuple(node.inputs[0].shape)]


def _same(node, args):
    """unsqueeze, squeeze, reshape (any rank: row-major order is kept), and
    transpose of a vector: the same elements."""
    if node.op == "transpose" and node.output.rank > 1:
        return None
    return [args[0]]


def _cast(node, args):
    """cast: numbers converted (NumPy ``astype``), dims and tokens kept (a
    size cast to a float is still that size)."""
    data = args[0]
    if data is None:
        return None
    to = node.attrs["to"]
    if to == DType.BOOL:  # a size is true when provably >= 1, false when 0
        return [tuple(bool(e) if _is_number(e) or isinstance(e, bool) else True if _is_dim(e) and
                      sym.nonnegative_given(sym.sub(e, 1), node.graph.size_bounds) else None for e in data)]
    return [tuple(_number(np.asarray(e).astype(to.numpy)) if _is_number(e) or isinstance(e, bool) else
                  None if isinstance(e, Cmp) else e for e in data)]


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


def _reduce(fn, np_fn):
    def rule(node, args):
        """reduce_sum, reduce_prod of a vector over its only axis: ``ir.symbolic``
        on integer dims, NumPy in the dtype on float numbers."""
        data = args[0]
        if data is None:
            return None
        dtype = node.output.dtype
        if any(isinstance(e, Cmp) for e in data):
            return None
        if dtype.is_float or any(isinstance(e, (DimOf, float)) for e in data):
            if not all(_is_number(e) for e in data):
                return None
            return [(_number(np.asarray(np_fn(np.asarray(data, dtype.numpy)), dtype.numpy)),)]
        return [(fn(data),)]
    return rule


def _elementwise(fn, np_fn=None):
    def rule(node, args):
        """Elementwise arithmetic, a length-1 operand broadcast: ``ir.symbolic``
        on integer dims, NumPy in the output dtype on float numbers."""
        if any(a is None for a in args):
            return None
        n = _length(node.output.type)
        if any(len(a) not in (1, n) for a in args):
            return None
        columns = [a * n if len(a) == 1 else a for a in args]
        dtype = node.output.dtype
        return [tuple(_apply(fn, np_fn, dtype, row) for row in zip(*columns))]
    return rule


def _apply(fn, np_fn, dtype: DType, row: tuple):
    """One element: NumPy on float numbers, ``ir.symbolic`` on integer dims
    (None inside stays None), else unknown (a ``DimOf`` token)."""
    if dtype.is_float:
        if np_fn is None or not all(_is_number(e) for e in row):
            return None
        with np.errstate(all="ignore"):
            return _number(np.asarray(np_fn(*(np.asarray(e, dtype.numpy) for e in row)), dtype.numpy))
    if any(isinstance(e, (DimOf, float, Cmp)) for e in row):
        return None
    return fn(*(int(e) if isinstance(e, np.integer) else e for e in row))


def _where(node, args):
    """where(c, a, b) with a known condition ``c`` (a constant, or a
    comparison the shape facts decide): the selected elements (length-1
    operands broadcast)."""
    cond, a, b = args
    if cond is None and node.inputs[0].const is not None:
        cond = tuple(node.inputs[0].const.reshape(-1).tolist())
    if cond is None or not all(isinstance(f, (bool, np.bool_, Cmp)) for f in cond):
        return None
    n = _length(node.output.type)
    decided = [f for f in cond if not isinstance(f, Cmp)]
    a = a if a is not None else (None,) if not any(decided) and len(decided) == len(cond) else None
    b = b if b is not None else (None,) if all(decided) and len(decided) == len(cond) else None  # never taken
    if a is None or b is None or any(len(v) not in (1, n) for v in (cond, a, b)):
        return None
    cond, a, b = (v * n if len(v) == 1 else v for v in (cond, a, b))
    return [tuple(_select(f, p, q) for f, p, q in zip(cond, a, b))]


def _select(flag, p, q):
    """``p if flag else q``; for an undecided ``Cmp`` whose operands are the
    branches, the ``min``/``max`` (or the one operand) that ``where`` picks."""
    if not isinstance(flag, Cmp):
        return p if flag else q
    x, y = flag.x, flag.y
    if flag.op == "eq":
        return q if (p, q) in ((x, y), (y, x)) else None  # where(x == y, x, y) is y, and the other order x
    if (p, q) == (x, y):
        return sym.minimum(x, y)
    if (p, q) == (y, x):
        return sym.maximum(x, y)
    return None


def _compare(op: str):
    def rule(node, args):
        """eq, ne, lt, le, gt, ge of sizes: NumPy on numbers, else decided
        by ``ir.symbolic`` (``a < b`` when ``b-a-1 >= 0`` is provable, given
        the graph's size facts), else unknown."""
        if any(a is None for a in args) or node.inputs[0].dtype.is_float != node.inputs[1].dtype.is_float:
            return None
        n = _length(node.output.type)
        if any(len(a) not in (1, n) for a in args):
            return None
        columns = [a * n if len(a) == 1 else a for a in args]
        return [tuple(_decide(op, x, y, node.graph.size_bounds) for x, y in zip(*columns))]
    return rule


_SWAP = {"gt": "lt", "ge": "le"}


def _decide(op: str, x, y, bounds) -> bool | Cmp | None:
    """``x op y`` decided (a bool), else a ``Cmp`` of two dims, else None."""
    if op in _SWAP:
        op, x, y = _SWAP[op], y, x
    got = _decide_normalized(op, x, y, bounds)
    if got is None and _is_dim(x) and _is_dim(y) and op != "ne":
        return Cmp(op, x, y)
    return got


def _decide_normalized(op: str, x, y, bounds) -> bool | None:
    if _is_number(x) and _is_number(y):
        return bool(getattr(np, {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal"}[op])(x, y))
    if isinstance(x, DimOf) or isinstance(y, DimOf):
        return True if op in ("eq", "le") and x == y else False if op in ("ne", "lt") and x == y else None
    if not (_is_dim(x) and _is_dim(y)):
        return None
    diff = sym.sub(y, x)  # y - x
    if diff is None:
        return None
    holds = lambda d: sym.nonnegative_given(d, bounds)  # noqa: E731
    if op in ("eq", "ne"):
        equal = True if diff == 0 else False if holds(sym.sub(diff, 1)) or holds(sym.sub(sym.neg(diff), 1)) else None
        return equal if op == "eq" or equal is None else not equal
    strict = op == "lt"
    if holds(sym.sub(diff, 1) if strict else diff):
        return True
    if holds(sym.neg(diff) if strict else sym.sub(sym.neg(diff), 1)):
        return False
    return None


VALUE_RULES: dict[str, Rule] = {
    "shape": _shape,
    "unsqueeze": _same,
    "squeeze": _same,
    "reshape": _same,     # rank <= 1 to rank <= 1 keeps the element order
    "transpose": _same,
    "cast": _cast,
    "gather": _gather,
    "concat": _concat,
    "slice": _slice,
    "split": _split,
    "expand": _expand,
    "reduce_sum": _reduce(sym.total, np.sum),
    "reduce_prod": _reduce(sym.product, np.prod),
    "add": _elementwise(sym.add, np.add),
    "sub": _elementwise(sym.sub, np.subtract),
    "mul": _elementwise(sym.mul, np.multiply),
    "div": _elementwise(lambda a, b: None, np.true_divide),  # float division: numbers only
    "floor_div": _elementwise(sym.floordiv, np.floor_divide),
    "mod": _elementwise(sym.mod, np.mod),
    "neg": _elementwise(sym.neg, np.negative),
    "abs": _elementwise(sym.absolute, np.abs),
    "maximum": _elementwise(sym.maximum, np.maximum),
    "minimum": _elementwise(sym.minimum, np.minimum),
    "where": _where,
    **{op: _compare(op) for op in ("eq", "ne", "lt", "le", "gt", "ge")},
}


def is_static(content: Content | None) -> bool:
    """Whether every element of ``content`` is an int."""
    return content is not None and all(isinstance(d, int) for d in content)


_RANGES = {d: (int(np.iinfo(d.numpy).min), int(np.iinfo(d.numpy).max)) for d in TRACKED_DTYPES if d.is_int}


def _fits(content: Content, dtype: DType) -> bool:
    """Whether the int elements fit ``dtype``; a bool's elements must be bools."""
    if dtype == DType.BOOL:
        return all(d is None or isinstance(d, (bool, Cmp)) for d in content)
    lo, hi = _RANGES[dtype]
    return all(lo <= d <= hi for d in content if isinstance(d, int))


def _refined(content: Content, node: Node) -> Content:
    """``content`` with its dims refined by the graph's size facts
    (``Graph.size_bounds``, ``ir.symbolic.refine``)."""
    bounds = node.graph.size_bounds if node.graph is not None else ()
    if not bounds:
        return content
    return tuple(sym.refine(d, bounds) if isinstance(d, sym.Expr) else d for d in content)


# -- on-demand queries --------------------------------------------------
class _Budget:
    """The producers one query may still visit, and the answers it already
    has (a value read twice through a DAG is evaluated once)."""

    def __init__(self, steps: int = MAX_STEPS):
        self.steps = steps
        self.memo: dict[Value, tuple | None] = {}

    def take(self) -> bool:
        self.steps -= 1
        return self.steps >= 0


def dim_source(value: Value, axis: int, budget: _Budget | None = None) -> Any:
    """A token for the run-time size of ``value``'s ``axis`` (see the module
    docstring): the declared dim if there is one (the types are fresh:
    ``passes.base.TYPES``), else what the shape
    computation feeding an ``unsqueeze``, ``squeeze``, ``reshape`` or
    ``expand`` says, else the input's token through a single-input op that
    keeps its input's shape (``exp``, ``cast``, ``softmax``...), else
    ``DimOf(value, axis)``."""
    declared = value.shape[axis]
    if declared is not None:
        return declared  # the pipeline keeps types fresh: re-inference could only agree
    budget = budget or _Budget()
    node = value.producer
    if node is None or not budget.take():
        return DimOf(value, axis)
    if node.op in ("unsqueeze", "squeeze"):
        rank = value.rank if node.op == "unsqueeze" else node.inputs[0].rank
        axes = sorted(a % rank for a in node.attrs["axes"])
        if node.op == "unsqueeze":
            if axis in axes:
                return 1
            return dim_source(node.inputs[0], axis - sum(a < axis for a in axes), budget)
        for a in axes:  # squeeze: find the input axis this output axis came from
            if a <= axis:
                axis += 1
        return dim_source(node.inputs[0], axis, budget)
    if node.op == "reshape":
        target = elements(node.inputs[1], budget)
        if target is not None and target[axis] is not None and target[axis] != -1:
            return target[axis]
    if node.op == "expand":
        target = elements(node.inputs[1], budget)
        x = node.inputs[0]
        offset = value.rank - x.rank
        t = target[axis] if target is not None else None
        src = dim_source(x, axis - offset, budget) if axis >= offset else 1
        if t == 1 or t == src:
            return src
        if src == 1 and t is not None:
            return t
    if len(node.inputs) == 1 and len(node.outputs) == 1 and _keeps_shape(node):
        return dim_source(node.inputs[0], axis, budget)  # exp, cast, relu, softmax, ...
    return DimOf(value, axis)


def _keeps_shape(node) -> bool:
    """Whether the single-input ``node``'s type rule gives its input's dims
    back: probed on distinct sizes, so a permutation or a reduction shows."""
    x = node.inputs[0]
    probe = x.type.with_shape(_PRIMES[:x.rank]) if x.rank <= len(_PRIMES) else None
    try:
        return probe is not None and get_op(node.op).infer([probe], node.attrs, [None])[0].shape == probe.shape
    except (ValueError, TypeError, IndexError):
        return False


_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19)


def _reads_as_vectors(node: Node) -> bool:
    """Whether ``VALUE_RULES``, written for vectors, read ``node`` right at its
    ranks: ops with the ``row_major_view`` trait at any rank; elementwise ops when every
    input is one element or has the output's shape (row-major order then
    pairs the elements); other ops when every value is a vector or holds
    one element."""
    values = (*node.inputs, *node.outputs)
    op = get_op(node.op)
    if op.has(ROW_MAJOR_VIEW) or all(v.rank <= 1 or v.type.size == 1 for v in values):
        return True
    out = node.outputs[0]
    return op.has(ELEMENTWISE) and all(v.type.size == 1 or v.shape == out.shape for v in node.inputs)


def elements(value: Value, budget: _Budget | None = None) -> tuple | None:
    """The elements of ``value`` in row-major order, each a Python number, a
    dim, a ``DimOf`` token or None (unknown); None when ``value`` has no
    static size of at most ``MAX_ELEMENTS`` or its producer is not
    understood. ``shape(x)`` gives ``dim_source`` of each axis; every other
    op is read through ``VALUE_RULES``, the table the forward analysis uses
    (see ``_reads_as_vectors``)."""
    size = value.type.size
    if size is None or size > MAX_ELEMENTS:
        return None
    if value.const is not None:
        return tuple(value.const.reshape(-1).tolist())
    node = value.producer
    budget = budget or _Budget()
    if value in budget.memo:
        return budget.memo[value]
    if node is None or not budget.take():
        return None
    got = _elements_of(value, node, size, budget)
    budget.memo[value] = got
    return got


def _elements_of(value: Value, node: Node, size: int, budget: _Budget) -> tuple | None:
    if node.op == "shape":
        x = node.inputs[0]
        return tuple(dim_source(x, i, budget) for i in range(x.rank))
    rule = VALUE_RULES.get(node.op)
    if rule is None or not _reads_as_vectors(node):
        return None
    results = rule(node, [elements(v, budget) for v in node.inputs])
    if not results or results[value.index] is None or len(results[value.index]) != size:
        return None
    if value.dtype == DType.BOOL and not _fits(results[value.index], DType.BOOL):
        return None
    return _refined(tuple(results[value.index]), node)
