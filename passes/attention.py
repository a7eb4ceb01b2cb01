"""``attention``: the scaled dot-product attention of a transformer block
in the forms onnxruntime runs fastest, without changing what it computes.

Rules:

1. causal-mask: ``where(mask, s, fill)`` (or ``where(mask, fill, s)``)
   read only by softmaxes over the last axis, ``mask`` a triangle of
   ``s``'s last two axes (rows and columns (T, T)) and ``fill`` a scalar
   constant, becomes ``trilu(s) + U``: the kept triangle of ``s`` and zeros
   elsewhere, plus a (T, T) ``U`` holding ``fill`` on the dropped triangle
   and zeros on the kept one. The mask is either built from one integer
   ``arange`` compared with itself, one side a column (``i[:, None] >=
   i[None, :]``, any of ``>= > <= <``, either side first), or a constant
   boolean triangle (what constant folding leaves of that for a static T)::

       %r: i64[T] = range(%zero, %t, %one)
       %c: i64[T,1] = unsqueeze(%r) {axes=[1]}
       %m: bool[T,T] = ge(%c, %r)
       %w: f32[N,H,T,T] = where(%m, %s, %neg_inf)
       %p: f32[N,H,T,T] = softmax(%w) {axis=3}
     ->
       %k: f32[N,H,T,T] = trilu(%s) {k=0, upper=false}
       %u: f32[T,T] = trilu(expand(%neg_inf, shape(%s)[2:4])) {k=1, upper=true}
       %p: f32[N,H,T,T] = softmax(add(%k, %u)) {axis=3}

   Why: onnxruntime's CPU Where makes three passes over the (N, H, T, T)
   scores (the selections of each branch, then their merge); Trilu and Add
   make one each (``bench/bench_transformer.py``'s block: 1.02 -> 1.00x
   torch.onnx's export, whose additive mask ``s + where(mask, 0, -max)`` is
   cheaper still but turns a NaN or +inf score at a masked position into a
   NaN row, so a NaN in a *later* token's key reaches earlier tokens).
   Exact: a kept element is ``s + 0`` (``s`` for every ``s`` but -0, which
   becomes +0), a dropped one ``0 + fill`` (``fill`` for every ``fill``);
   Trilu zeroes the dropped elements whatever they hold (NaN included, ONNX
   Trilu). A softmax does not see the sign of a zero (``exp(x - max)`` with
   x or max +-0 is the same number), so the softmax reading it gives the
   same bits; hence the rule requires that every reader be one.

2. scaled-scores: ``matmul(a, b) / c`` or ``* c`` with ``c`` a scalar
   constant scales the smaller operand instead of the product (attention's
   ``q @ k^T / sqrt(d)``: (T, d) elements instead of (T, T)). With a of
   (..., M, K) and b (..., K, N), a is scaled when K < N, else b when K < M;
   a symbolic M or N (a sequence length) is taken as larger than a static
   K (a head size); a constant operand (a weight) is scaled instead,
   once, at compile time. onnxruntime folds either form into its FusedMatMul's
   alpha (MatMulScaleFusion), so this speeds up runtimes without that
   fusion, not onnxruntime. Rounding: the product rounds ``a_k / c``
   instead of the sum, so the two forms differ by at most ``(2*gamma_K +
   2u) * sum_k |a_k b_k| / |c|`` (``u`` the unit roundoff, ``gamma_K = K
   u / (1 - K u)``; Higham, *Accuracy and Stability of Numerical
   Algorithms*, 2nd ed., section 3.1): the size of the product's own
   rounding error. A power-of-two ``c`` (``sqrt(64) = 8``) commutes with
   every rounding, so the forms agree bit for bit unless an element leaves
   the normal range. Not exact in general: ``numerics="strict"`` keeps the
   product scaled.

Both rules leave the replaced nodes to ``dce``. One visit per where, div
and mul node, O(1) work each plus the constant-triangle check (O(T^2)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ir import Value
from ir.core import infer_node
from ir.ops.shape import TRILU_DTYPES
from passes.base import TYPES, register_pass
from passes.rewrite import Const, Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var

# (row op col) -> the kept elements as Trilu's (upper, k): lower keeps col - row <= k, upper col - row >= k.
TRIANGLE = {"ge": (False, 0), "gt": (False, -1), "le": (True, 0), "lt": (True, 1)}
SWAPPED = {"ge": "le", "gt": "lt", "le": "ge", "lt": "gt"}  # col op row == row SWAPPED[op] col


def _index_role(value: Value) -> tuple[str, Value] | None:
    """``("row", r)`` for ``unsqueeze(r){axes=[1]}`` and ``("col", r)`` for
    ``r`` or ``unsqueeze(r){axes=[0]}``, ``r`` an integer ``range`` with a
    constant positive step; else None."""
    node = value.producer
    role = "col"
    if node is not None and node.op == "unsqueeze" and tuple(node.attrs["axes"]) in ((0,), (1,)):
        role = "row" if tuple(node.attrs["axes"]) == (1,) else "col"
        value = node.inputs[0]
        node = value.producer
    if node is None or node.op != "range" or not value.dtype.is_int:
        return None
    step = node.inputs[2].const
    if step is None or not np.all(np.asarray(step) > 0):
        return None
    return role, value


def _compared_triangle(mask: Value) -> tuple[bool, int] | str:
    """The kept triangle (upper, k) of a mask ``cmp(row, col)`` over one range."""
    node = mask.producer
    if node is None or node.op not in TRIANGLE:
        return "the mask is neither a constant nor a comparison"
    roles = [_index_role(v) for v in node.inputs]
    if None in roles:
        return "a compared operand is not an integer arange (as a row or a column) with a positive step"
    (first, r0), (second, r1) = roles
    if r0 is not r1:
        return "the compared rows and columns come from different ranges"
    if {first, second} != {"row", "col"}:
        return "the comparison is not of a row against a column"
    # The same increasing range on both sides: comparing values compares indices.
    return TRIANGLE[node.op if first == "row" else SWAPPED[node.op]]


def _constant_triangle(mask: np.ndarray) -> tuple[bool, int] | str:
    """The (upper, k) with ``mask == np.triu/np.tril(ones, k)``: the kept
    elements are those with column - row <= k (lower) or >= k (upper)."""
    rows, cols = mask.shape
    d = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    if not mask.any():
        return False, -rows
    k = int(d[mask].max())
    if np.array_equal(mask, d <= k):
        return False, k
    k = int(d[mask].min())
    if np.array_equal(mask, d >= k):
        return True, k
    return "the constant mask is not a triangle"


def causal_mask(rw: Rewriter, m: Match, fill_first: bool = False) -> Value | str:
    """where(mask, s, fill) -> trilu(s) + U (rule 1; ``fill_first``:
    where(mask, fill, s), which keeps where the mask is false)."""
    mask, s, fill, where = m.mask, m.s, m.fill, m.root.output
    if s.dtype not in TRILU_DTYPES or not s.dtype.is_float:
        return f"trilu is not emitted for {s.dtype} scores"
    if mask.rank != 2 or s.rank < 2 or tuple(mask.shape) != tuple(s.shape[-2:]) or where.shape != s.shape:
        return "the mask is not (T, T) over the scores' last two axes, or the where broadcasts the scores"
    if fill.type.size != 1 or fill.rank > s.rank:
        return "the fill is not one number"
    for use in where.uses():
        node = use.node
        if node.op != "softmax" or node.attrs["axis"] % s.rank != s.rank - 1:
            return "a reader of the masked scores is not a softmax over the last axis (it may see a -0)"
    if (where in m.outputs) if m.outputs is not None else m.root.graph.is_output(where):
        return "the masked scores are a graph output"
    triangle = _constant_triangle(mask.const) if mask.const is not None else _compared_triangle(mask)
    if isinstance(triangle, str):
        return triangle
    upper, k = triangle
    if fill_first:
        upper, k = (not upper, k + 1) if not upper else (False, k - 1)
    value = np.asarray(fill.const, dtype=s.dtype.numpy).reshape(())
    dropped_upper, dropped_k = (True, k + 1) if not upper else (False, k - 1)
    if mask.const is not None:
        kept = (np.triu if upper else np.tril)(np.ones(mask.shape, bool), k)
        u = rw.const(np.where(kept, np.zeros((), s.dtype.numpy), value), "causal_fill")
    else:
        shape = rw.add("shape", [s])
        rank = rw.const(np.array([s.rank], np.int64), "rank")
        last_two = rw.add("slice", [shape, rw.const(np.array([s.rank - 2], np.int64), "start"), rank,
                                    rw.const(np.array([1], np.int64), "step")], {"axes": (0,)})
        fill_value = rw.const(value, "fill")
        full = rw.add("expand", [fill_value, last_two])
        # the type rule reads the symbolic (T, T) the slice holds, as shape-inference would
        infer_node(full.producer, [fill_value.const, np.array(s.shape[-2:], dtype=object)])
        u = rw.add("trilu", [full], {"upper": dropped_upper, "k": dropped_k})
    return rw.add("add", [rw.add("trilu", [s], {"upper": upper, "k": k}), u])


def _larger(d, k: int) -> bool:
    """Whether dim ``d`` is larger than the static ``k`` (a symbolic ``d`` is taken as larger)."""
    return not isinstance(d, int) or d > k


def scaled_scores(rw: Rewriter, m: Match) -> Value | str:
    """matmul(a, b) / c -> matmul(a / c, b) (or b scaled) (rule 2)."""
    a, b, c, root = m.a, m.b, m.c, m.root
    if a.rank < 2 or b.rank < 2 or not root.output.dtype.is_float:
        return "not a float matrix product of two (batches of) matrices"
    if c.type.size != 1 or root.output.shape != m.matmul.output.shape:
        return "the scale is not one number, or it broadcasts the product"
    k = a.shape[-1]
    if a.const is not None or b.const is not None:  # scaled once at compile time
        scaled = 0 if a.const is not None else 1
    elif not isinstance(k, int):
        return "the contracted axis has no static size"
    elif _larger(b.shape[-1], k):
        scaled = 0
    elif _larger(a.shape[-2], k):
        scaled = 1
    else:
        return "the product is no larger than either operand"
    operands = [a, b]
    scale = np.asarray(c.const, dtype=c.dtype.numpy).reshape(())
    x = operands[scaled]
    if x.const is not None:  # a weight: scaled once here, rounded as the division at run time would
        ufunc = np.divide if root.op == "div" else np.multiply
        operands[scaled] = rw.const(ufunc(x.const, scale).astype(x.dtype.numpy), "scaled")
    else:
        operands[scaled] = rw.add(root.op, [x, rw.const(scale, "scale")])
    return rw.add("matmul", operands)


def causal_mask_fill_first(rw: Rewriter, m: Match) -> Value | str:
    """where(mask, fill, s) -> trilu(s) + U (rule 1, the kept triangle the mask's complement)."""
    return causal_mask(rw, m, fill_first=True)


_PRODUCT = Op("matmul", Var("a"), Var("b"), name="matmul")

CAUSAL_RULES = [
    # where(triangle, s, fill) / where(triangle, fill, s) read by softmax -> trilu(s) + U
    Rule("causal-mask", Op("where", Var("mask"), Var("s"), Const("fill")), causal_mask),
    Rule("causal-mask", Op("where", Var("mask"), Const("fill"), Var("s")), causal_mask_fill_first),
]
SCALE_RULES = [
    # matmul(a, b) / c, matmul(a, b) * c, c * matmul(a, b) -> the smaller operand scaled
    Rule("scaled-scores", Op("div", _PRODUCT, Const("c")), scaled_scores),
    Rule("scaled-scores", Op("mul", _PRODUCT, Const("c")), scaled_scores),
]
RULES = RuleSet(CAUSAL_RULES + SCALE_RULES)
STRICT_RULES = RuleSet(CAUSAL_RULES)


@register_pass
@dataclass(frozen=True)
class AttentionRewrites(RuleSetPass):
    """Attention's causal mask and score scale in onnxruntime's fast forms
    (see the module docstring).

    Attributes:
        numerics: ``"strict"`` runs only the exact ``causal-mask`` rule;
            ``"fast"`` or None (alone; a compilation fills in its mode)
            also scales the smaller operand of a scaled product.
    """

    name = "attention"
    requires = (TYPES,)
    numerics: str | None = None

    def rule_set(self) -> RuleSet:
        return STRICT_RULES if self.strict else RULES
