"""Lowering of matrix products: ``Dot``, the BLAS ops PyTensor's rewrites
introduce (``Dot22``, ``Dot22Scalar``, ``Gemm``, ``Gemv``, ``Ger`` and their C
subclasses), ``BatchedDot`` and ``Blockwise(Dot)`` (``Matmul``).

The BLAS ops follow PyTensor's ``perform``: when ``beta`` is 0, Gemm and Gemv
ignore ``z``/``y`` entirely (a NaN or Inf there does not reach the result),
as BLAS does and as PyTensor relies on.
"""

from __future__ import annotations

from typing import Callable

from pytensor.tensor.blas import BatchedDot, Dot22, Dot22Scalar, Gemm, Gemv, Ger
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.math import Dot

from compiler.lowering.errors import Unsupported
from compiler.lowering.context import LoweringContext, ir_dtype
from compiler.lowering.registry import find_in_mro, find_rule, lowers
from compiler.lowering.rules.blockwise_loop import lower_blockwise_loop
from compiler.lowering.rules.scalar_ops import broadcast_against
from ir import DType, Value


def _matmul(ctx: LoweringContext, node, x: Value, y: Value) -> Value:
    """``np.matmul(x, y)`` computed in the dtype of ``node``'s output.

    A bool product (PyTensor's output dtype of bool operands) is NumPy's:
    the OR over k of ``x[i, k] AND y[k, j]``, computed as an int64 count of
    true terms compared with 0 (exact: the count is at most k)."""
    dtype = ir_dtype(node.outputs[0])
    if dtype == DType.BOOL:
        count = ctx.add("matmul", [ctx.cast(x, DType.INT64), ctx.cast(y, DType.INT64)])
        return ctx.add("ne", [count, ctx.scalar(0, DType.INT64)])
    return ctx.add("matmul", [ctx.cast(x, dtype), ctx.cast(y, dtype)])


@lowers(Dot, Dot22, BatchedDot)
def lower_dot(ctx: LoweringContext, node) -> list[Value]:
    """``Dot`` / ``Dot22`` (2-D @ 2-D) and ``BatchedDot`` (3-D, batch first):
    ``np.matmul`` in the upcast dtype of the inputs (PyTensor's output dtype)."""
    x, y = (ctx.get(v) for v in node.inputs)
    return [_matmul(ctx, node, x, y)]


@lowers(Dot22Scalar)
def lower_dot22_scalar(ctx: LoweringContext, node) -> list[Value]:
    """``Dot22Scalar(x, y, a)`` = ``a * dot(x, y)`` (all of one float dtype)."""
    x, y, a = (ctx.get(v) for v in node.inputs)
    return [ctx.add("mul", [a, _matmul(ctx, node, x, y)])]


def _scaled(ctx: LoweringContext, node, alpha, product: Value) -> Value:
    """``alpha * product``, skipping the multiply when ``alpha`` is the constant 1."""
    if _is_constant(ctx, alpha, 1):
        return product
    return ctx.add("mul", [ctx.cast(ctx.get(alpha), product.dtype), product])


def _accumulate(ctx: LoweringContext, acc_var, beta_var, update: Value) -> Value:
    """``beta * acc + update``, except that ``acc`` is ignored where ``beta == 0``
    (BLAS semantics, kept by PyTensor's Gemm/Gemv), broadcast to the shape of
    both. Constant ``beta`` of 0 or 1 needs no runtime test."""
    if _is_constant(ctx, beta_var, 0):
        return broadcast_against(ctx, update, [ctx.get(acc_var)])
    acc = ctx.get(acc_var)
    if _is_constant(ctx, beta_var, 1):
        return ctx.add("add", [acc, update])
    beta = ctx.cast(ctx.get(beta_var), update.dtype)
    full = ctx.add("add", [ctx.add("mul", [acc, beta]), update])
    if ctx.constant_value(beta_var) is not None:
        return full
    beta_is_zero = ctx.add("eq", [beta, ctx.scalar(0, beta.dtype)])
    return ctx.add("where", [beta_is_zero, broadcast_against(ctx, update, [acc]), full])


def _is_constant(ctx: LoweringContext, var, number) -> bool:
    value = ctx.constant_value(var)
    return value is not None and value.size == 1 and value.reshape(()) == number


@lowers(Gemm)
def lower_gemm(ctx: LoweringContext, node) -> list[Value]:
    """``Gemm(z, a, x, y, b)`` = ``b * z + a * dot(x, y)`` (``pytensor.tensor.blas``);
    ``z`` broadcasts to the product's shape and is ignored when ``b == 0``."""
    z, a, x, y, b = node.inputs
    product = _scaled(ctx, node, a, _matmul(ctx, node, ctx.get(x), ctx.get(y)))
    return [_accumulate(ctx, z, b, product)]


@lowers(Gemv)
def lower_gemv(ctx: LoweringContext, node) -> list[Value]:
    """``Gemv(y, alpha, A, x, beta)`` = ``beta * y + alpha * dot(A, x)``
    (``pytensor.tensor.blas``, also ``CGemv``); ``y`` is ignored when
    ``beta == 0``. Scalars are cast to the vectors' dtype, as BLAS does."""
    y, alpha, A, x, beta = node.inputs
    product = _scaled(ctx, node, alpha, _matmul(ctx, node, ctx.get(A), ctx.get(x)))
    return [_accumulate(ctx, y, beta, product)]


@lowers(Ger)
def lower_ger(ctx: LoweringContext, node) -> list[Value]:
    """``Ger(A, alpha, x, y)`` = ``A + alpha * outer(x, y)`` (``pytensor.tensor.blas``,
    also ``CGer``), computed as BLAS does: ``A[i, j] + x[i] * (alpha * y[j])``."""
    A, alpha, x, y = (ctx.get(v) for v in node.inputs)
    scaled_y = y if _is_constant(ctx, node.inputs[1], 1) else ctx.add("mul", [alpha, y])
    outer = ctx.add("mul", [ctx.add("unsqueeze", [x], {"axes": [1]}),
                            ctx.add("unsqueeze", [scaled_y], {"axes": [0]})])
    return [ctx.add("add", [A, outer])]


def _blas_rule(core_rank: int):
    """The ``BLOCKWISE_RULES`` entry of a BLAS op (vectorized compiled
    functions hold them) whose scalars ``alpha``/``beta`` gain batch dims
    under ``Blockwise``: ``Gemm``/``Gemv`` as ``beta * acc + alpha * matmul``
    (``acc`` ignored where ``beta == 0``, as ``lower_gemm``), ``Ger`` as
    ``A + x * (alpha * y)`` (as ``lower_ger``); ``core_rank`` is the core
    output rank the scalars are broadcast over."""
    def rule(ctx: LoweringContext, node, args: list) -> Value:
        dtype = ir_dtype(node.outputs[0])

        def lift(s: Value, rank: int = core_rank) -> Value:
            return ctx.add("unsqueeze", [ctx.cast(s, dtype)], {"axes": list(range(s.rank, s.rank + rank))})

        if isinstance(node.op.core_op, Ger):
            A, alpha, x, y = args
            scaled_y = ctx.add("mul", [lift(alpha, 1), y])
            outer = ctx.add("mul", [ctx.add("unsqueeze", [x], {"axes": [x.rank]}),
                                    ctx.add("unsqueeze", [scaled_y], {"axes": [scaled_y.rank - 1]})])
            return ctx.add("add", [A, outer])
        acc, alpha, a, b, beta = args
        if isinstance(node.op.core_op, Gemv):
            column = _matmul(ctx, node, a, ctx.add("unsqueeze", [b], {"axes": [b.rank]}))
            product = ctx.add("squeeze", [column], {"axes": [column.rank - 1]})
        else:
            product = _matmul(ctx, node, a, b)
        product = ctx.add("mul", [lift(alpha), product])
        beta = lift(beta)
        full = ctx.add("add", [ctx.add("mul", [acc, beta]), product])
        beta_is_zero = ctx.add("eq", [beta, ctx.scalar(0, dtype)])
        return ctx.add("where", [beta_is_zero, broadcast_against(ctx, product, [acc]), full])
    return rule


# -- Blockwise -----------------------------------------------------------
BlockwiseRule = Callable[[LoweringContext, object, list], "Value | tuple[Value, ...]"]

# Core op class -> rule on the batched inputs (one output). Batch dims
# broadcast as in NumPy gufuncs, which is what Blockwise does.
def _matmul_rule(ctx: LoweringContext, node, args: list) -> Value:
    return _matmul(ctx, node, *args)


BLOCKWISE_RULES: dict[type, BlockwiseRule] = {
    Dot: _matmul_rule,  # Matmul: (m,n),(n,p)->(m,p)
    Dot22: _matmul_rule,
    Dot22Scalar: lambda ctx, node, args: ctx.add("mul", [
        ctx.add("unsqueeze", [args[2]], {"axes": [args[2].rank, args[2].rank + 1]}), _matmul(ctx, node, *args[:2])]),
    Gemm: _blas_rule(2),
    Gemv: _blas_rule(1),
    Ger: _blas_rule(2),
}


@lowers(Blockwise)
def lower_blockwise(ctx: LoweringContext, node) -> list[Value]:
    """``Blockwise(core_op)`` (``pytensor.tensor.blockwise``) for the core ops in
    ``BLOCKWISE_RULES`` (``Dot``: ``np.matmul`` with broadcast batch dims;
    the decompositions of ``decompositions.py``), and any core op with a
    lowering when no input has batch dims.

    Raises:
        Unsupported: any other core op (named in the message).
    """
    core = node.op.core_op
    rule = find_in_mro(BLOCKWISE_RULES, core)
    if rule is None:
        core_ndims = [len(sig) for sig in node.op.inputs_sig]
        core_rule = find_rule(core)
        if core_rule is None:
            raise Unsupported(f"Blockwise of {core} has no lowering")
        if [v.type.ndim for v in node.inputs] == core_ndims:
            return core_rule(ctx, core.make_node(*node.inputs))  # no batch dims: the core op itself
        return lower_blockwise_loop(ctx, node)
    out = rule(ctx, node, [ctx.get(v) for v in node.inputs])
    return list(out) if isinstance(out, tuple) else [out]
