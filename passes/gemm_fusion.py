"""``gemm-fusion``: a 2-D matrix product plus a bias becomes ``gemm``
(ONNX Gemm), transposed operands folded into its ``trans_a``/``trans_b``.

Rules:

1. matmul-add: ``add(matmul(a, b), c)`` in either operand order, with ``a``
   and ``b`` of rank 2, the matmul read by nothing else, and ``c`` of rank
   <= 2 broadcasting to the product's (M, N) without widening it (a bias
   (N,), (1, N), (M, 1), (M, N) or a scalar)::

       %h: f32[B,10] = matmul(%a, %W)
       %y: f32[B,10] = add(%h, %b)          (%b: f32[10])
     ->
       %y: f32[B,10] = gemm(%a, %W, %b) {alpha=1.0, beta=1.0, trans_a=false, trans_b=false}

2. gemm-transpose: a ``gemm`` operand that is ``transpose{perm=[1, 0]}(v)``
   reads ``v`` with the matching flag flipped (a dense layer stored (out,
   in), ``x @ W.T``)::

       %t: f32[64,10] = transpose(%Wt) {perm=[1, 0]}
       %y: f32[B,10] = gemm(%a, %t, %b) {..., trans_b=false}
     ->
       %y: f32[B,10] = gemm(%a, %Wt, %b) {..., trans_b=true}

3. matmul-2d-weight: a batched product's right operand that is a matrix
   with a leading 1 added (``unsqueeze{axes=[0]}(W)`` or a constant of shape
   (1, K, M), how PyTensor's ``h @ W`` of a (B, T, K) ``h`` is lowered) is
   read as the matrix: ``matmul`` broadcasts it the same (ONNX MatMul, NumPy
   ``matmul``), and onnxruntime runs (B, T, K) @ (K, M) as one GEMM::

       %w: f32[1,256,1024] = unsqueeze(%W) {axes=[0]}
       %y: f32[B,T,1024] = matmul(%h, %w)
     ->
       %y: f32[B,T,1024] = matmul(%h, %W)

4. matvec-shared-matrix: a batch of matrix-vector products with one matrix,
   ``squeeze{-1}(matmul(A, unsqueeze{-1}(v)))`` with ``A`` of shape
   (1, ..., 1, M, K) (how ``vectorize_graph`` batches ``dot(A, x)``: B
   products of (M, K) @ (K, 1), which onnxruntime runs one small GEMM at a
   time), is one product of the vectors by the transposed matrix, row ``b``
   being ``A @ v[b]`` (a constant ``A`` is transposed here, once)::

       %u: f64[B,3,1] = unsqueeze(%v) {axes=[2]}
       %p: f64[B,100,1] = matmul(%A, %u)       (%A: f64[1,100,3])
       %y: f64[B,100] = squeeze(%p) {axes=[2]}
     ->
       %y: f64[B,100] = matmul(%v, %At)        (%At: f64[3,100])

   Each element is the same K-term dot product, accumulated in the
   kernel's order (the numerics contract's bound for matmul).

Batched products (rank > 2), a matmul with other readers and a ``c`` that
broadcasts the product to a larger shape are left alone. Exact: ``gemm``
with alpha = beta = 1 is the IR's ``matmul`` then ``add`` (the emitter keeps
that meaning, bridging dtypes onnxruntime's Gemm lacks); a transpose is
data movement. But float16: gemm computes ``a @ b + c`` in float32 and
rounds once, the matched graph rounds the product first;
``numerics="strict"`` (``ir.numerics``) declines it. The transpose stays for its other readers, if any. One
visit per add and gemm node, O(1) work each.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ir import DType, Value
from passes.base import TYPES, register_pass
from passes.canonicalize import axes_of
from passes.rewrite import Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var
from passes.shape_facts import dim_source


def matmul_add(rw: Rewriter, m: Match) -> Value | str:
    """add(matmul(a, b), c) -> gemm(a, b, c) (rule 1)."""
    a, b, c, product = m.a, m.b, m.c, m.matmul.output
    if a.rank != 2 or b.rank != 2:
        return f"not a 2-D product: {a.type} @ {b.type}"
    if c.rank > 2:
        return f"the addend {c.type} has rank > 2"
    for i, d in enumerate(c.shape):  # the product's dims are asked only where they matter
        if d != 1 and dim_source(c, i) != dim_source(product, i + 2 - c.rank):
            return f"the addend {c.type} does not broadcast to the product {product.type} unchanged"
    return rw.add("gemm", [a, b, c])


def two_d_weight(rw: Rewriter, m: Match) -> Value | str:
    """matmul(a, unsqueeze{0}(W)) -> matmul(a, W), a of rank >= 3 (rule 3)."""
    a, b = m.a, m.b
    if a.rank < 3 or b.rank != 3 or b.shape[0] != 1:
        return f"not a batched product with a (1, K, M) operand: {a.type} @ {b.type}"
    node = b.producer
    if node is not None and node.op == "unsqueeze" and [x % 3 for x in node.attrs["axes"]] == [0]:
        return rw.add("matmul", [a, node.inputs[0]])
    if b.const is not None:
        return rw.add("matmul", [a, rw.const(b.const[0], "weight")])
    return "the (1, K, M) operand is neither an unsqueezed matrix nor a constant"


def shared_matrix_matvec(rw: Rewriter, m: Match) -> Value | str:
    """squeeze{-1}(matmul(A[1.., M, K], unsqueeze{-1}(v))) -> matmul(v, A^T) (rule 4)."""
    a, u, product = m.a, m.unsqueeze.output, m.matmul.output
    if axes_of(m.root, product.rank) != {product.rank - 1}:
        return "the squeeze does not drop only the product's last axis"
    if axes_of(m.unsqueeze, u.rank) != {u.rank - 1}:
        return "the unsqueeze does not add only a last axis"
    v = m.unsqueeze.inputs[0]
    if u.rank < 3:
        return "a single matrix-vector product (no batch): already one product"
    if a.rank < 2 or any(d != 1 for d in a.shape[:-2]) or a.rank > u.rank:
        return f"the matrix {a.type} is not one (1, ..., M, K) matrix broadcast over the batch of {u.type}"
    if a.const is not None:
        return rw.add("matmul", [v, rw.const(a.const.reshape(a.shape[-2:]).T.copy(), "matrix_t")])
    matrix = rw.add("squeeze", [a], {"axes": list(range(a.rank - 2))}) if a.rank > 2 else a
    return rw.add("matmul", [v, rw.add("transpose", [matrix], {"perm": [1, 0]})])


def fold_transpose(rw: Rewriter, m: Match) -> Value | str:
    """gemm(transpose(a), ...) -> gemm{trans_a flipped}(a, ...) (rule 2)."""
    node = m.root
    inputs, attrs = list(node.inputs), dict(node.attrs)
    for i, flag in enumerate(("trans_a", "trans_b")):
        t = inputs[i].producer
        if t is not None and t.op == "transpose" and tuple(t.attrs["perm"]) == (1, 0):
            inputs[i] = t.inputs[0]
            attrs[flag] = not attrs[flag]
    if inputs == list(node.inputs):
        return "no operand is a 2-D transpose"
    return rw.add("gemm", inputs, attrs)


RULES = RuleSet([
    # add(matmul(a, b), c) -> gemm(a, b, c), either order, c a bias broadcasting to (M, N)
    Rule("matmul-add", Op("add", Op("matmul", Var("a"), Var("b"), name="matmul"), Var("c")), matmul_add),
    # matmul(a, unsqueeze{0}(W)) -> matmul(a, W) for a batched a
    Rule("matmul-2d-weight", Op("matmul", Var("a"), Var("b")), two_d_weight),
    # squeeze{-1}(matmul(A[1, M, K], unsqueeze{-1}(v))) -> matmul(v, A^T): one product, not B
    Rule("matvec-shared-matrix",
         Op("squeeze", Op("matmul", Var("a"), Op("unsqueeze", Var(), name="unsqueeze"), name="matmul")),
         shared_matrix_matvec),
    # gemm(transpose(a), transpose(b), c) -> gemm{trans_a, trans_b}(a, b, c)
    Rule("gemm-transpose", Op("gemm", Var(), Var(), Var(), any_input=Op("transpose", Var(), single_use=False)),
         fold_transpose),
])


def strict_matmul_add(rw: Rewriter, m: Match) -> Value | str:
    """``matmul_add`` but in float16 (rule 1 under ``numerics="strict"``)."""
    if m.matmul.output.dtype == DType.FLOAT16:
        return "numerics='strict': a float16 gemm adds c before rounding once, the matched graph after"
    return matmul_add(rw, m)


STRICT_RULES = RuleSet(dataclasses.replace(r, rewrite=strict_matmul_add) if r.rewrite is matmul_add else r
                       for r in RULES)


@register_pass
@dataclass(frozen=True)
class GemmFusion(RuleSetPass):
    """Fuse 2-D matmul plus bias into gemm (see the module docstring).

    Attributes:
        numerics: ``"strict"`` runs ``STRICT_RULES`` (no float16 fusion);
            ``"fast"`` or None (alone; a compilation fills in its mode) every
            rule.
    """

    name = "gemm-fusion"
    after = ("flatten-recovery",)  # the flatten is the gemm's 2-D operand
    requires = (TYPES,)  # compares the addend's sizes with the product's (dim_source)
    numerics: str | None = None

    def rule_set(self) -> RuleSet:
        return STRICT_RULES if self.strict else RULES
