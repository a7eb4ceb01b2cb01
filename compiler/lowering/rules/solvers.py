"""Lowering of the linear solvers and determinants PyMC models use, on LU
with partial pivoting and Cholesky (``matrix_loops.py``): ``Solve``
(``assume_a`` "gen", "sym"/"her", "pos", "tridiagonal", "banded"), ``CholeskySolve``,
``MatrixInverse``, ``Det``, ``SLogDet``, and their ``Blockwise`` forms
(batch dims broadcast, as in NumPy gufuncs).

Semantics (the PyTensor ops' ``perform``):

- ``Solve`` "gen": ``scipy.linalg.solve`` (``getrf`` + ``getrs``); an
  exactly singular ``a`` (a zero pivot) raises ``LinAlgError`` there and
  PyTensor returns NaN: here every entry of that system is NaN.
- ``Solve`` "sym" (and "her", the same for real matrices) reads only the
  ``lower`` (or upper) triangle; SciPy factors it with Bunch-Kaufman
  (``sysv``), this lowering with LU of the symmetric matrix rebuilt from
  that triangle: the same solution, rounded differently (within the bound
  below). Singular: NaN as above.
- ``Solve`` "pos": Cholesky of the ``lower`` (or upper) triangle and two
  triangular solves (``posv``); not positive definite: NaN.
- ``Solve`` "tridiagonal": ``scipy.linalg.solve`` reads only the three
  central diagonals (``gttrf`` + ``gttrs``: LU with partial pivoting on
  them); here the same LAPACK steps (``tridiagonal.tridiagonal_solve``,
  O(n) steps of O(n) vector work). A zero on ``U``'s diagonal (SciPy's
  ``LinAlgError``): NaN as above.
- ``Solve`` "banded": SciPy finds the bandwidth from the nonzero entries
  and solves with ``gbsv`` (partial pivoting within the band): the "gen"
  solve here, whose pivot search sees the same candidates.
- ``CholeskySolve(c, b)``: ``potrs``: two triangular solves with the factor
  ``c`` (``lower``); a zero on its diagonal gives Inf/NaN, never an error.
- ``MatrixInverse``: ``np.linalg.inv`` (``gesv`` with the identity);
  a singular matrix raises ``LinAlgError`` in NumPy and gives NaN here.
- ``Det``: ``np.linalg.det`` = ``sign * exp(sum(log|u_ii|))`` from the LU
  factors, as NumPy computes it; 0 (sign 0) for a singular matrix.
- ``SLogDet``: ``np.linalg.slogdet``: ``(sign, sum(log|u_ii|))``, sign the
  parity of the row exchanges times the signs of the pivots; ``(0, -inf)``
  for a singular matrix.

Bound: relative error of a backward-stable solve, about ``n * eps *
cond(a)`` normwise against SciPy/NumPy (LAPACK's blocked and recursive
drivers associate the same sums differently); a determinant's relative
error is about ``n * eps`` times the growth of the factors. Tests: 1e-12 on
well-conditioned float64 matrices, 1e-5 float32, and ``cond * 1e-15`` on
ill-conditioned ones.
"""

from __future__ import annotations


from compiler.lowering.errors import Unsupported
from compiler.lowering.compat import CholeskySolve, Det, MatrixInverse, SLogDet, Solve
from compiler.lowering.context import LoweringContext
from compiler.lowering.registry import find_in_mro, lowers
from compiler.lowering.rules.decompositions import cholesky, float_args, matrix_transpose, solve_triangular
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from compiler.lowering.rules.matrix_loops import (broadcast_batch, diagonal, identity_like, lu_loop, positions,
                                                   symmetric_from_triangle, unsq)
from compiler.lowering.rules.tridiagonal import tridiagonal_solve
from ir import DType, Value


def _core(node):
    return getattr(node.op, "core_op", node.op)


def _as_matrix_rhs(ctx: LoweringContext, b: Value, b_ndim: int) -> Value:
    return unsq(ctx, b, b.rank) if b_ndim == 1 else b


def _from_matrix_rhs(ctx: LoweringContext, x: Value, b_ndim: int) -> Value:
    return ctx.add("squeeze", [x], {"axes": [x.rank - 1]}) if b_ndim == 1 else x


def lu_solve(ctx: LoweringContext, a: Value, b: Value) -> Value:
    """``x`` with ``a @ x == b`` (``(..., n, n)``, ``(..., n, k)``) by LU with
    partial pivoting; all NaN per system with a zero pivot."""
    a, b = broadcast_batch(ctx, a, b, 2)
    lu, _, y = lu_loop(ctx, a, b)[:3]
    return solve_triangular(ctx, lu, y, lower=False, unit_diagonal=False, b_ndim=2)


def spd_solve(ctx: LoweringContext, a: Value, b: Value, lower: bool) -> Value:
    """``posv``: Cholesky of ``a``'s ``lower`` triangle, then two triangular
    solves; NaN where ``a`` is not positive definite."""
    factor = cholesky(ctx, a, lower=True) if lower else matrix_transpose(ctx, cholesky(ctx, a, lower=False))
    return _cho_solve(ctx, factor, b, lower=True)


def _cho_solve(ctx: LoweringContext, c: Value, b: Value, lower: bool) -> Value:
    """``potrs``: ``L L^T x = b`` (``lower``) or ``U^T U x = b``."""
    first, second = (c, matrix_transpose(ctx, c)) if lower else (matrix_transpose(ctx, c), c)
    y = solve_triangular(ctx, first, b, lower=True, unit_diagonal=False, b_ndim=2, nan_if_singular=False)
    return solve_triangular(ctx, second, y, lower=False, unit_diagonal=False, b_ndim=2, nan_if_singular=False)


def _solve_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    a, b = float_args(ctx, node, args)
    op = _core(node)
    b = _as_matrix_rhs(ctx, b, op.b_ndim)
    if op.assume_a == "gen":
        x = lu_solve(ctx, a, b)
    elif op.assume_a in ("sym", "her"):
        x = lu_solve(ctx, symmetric_from_triangle(ctx, a, op.lower), b)
    elif op.assume_a == "pos":
        x = spd_solve(ctx, a, b, op.lower)
    elif op.assume_a == "tridiagonal":
        x = tridiagonal_solve(ctx, a, b)
    elif op.assume_a == "banded":
        x = lu_solve(ctx, a, b)
    else:
        raise Unsupported(f"Solve with assume_a={op.assume_a!r} "
                          "(lowered: 'gen', 'sym', 'her', 'pos', 'tridiagonal', 'banded')")
    return _from_matrix_rhs(ctx, x, op.b_ndim)


def _cholesky_solve_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    c, b = float_args(ctx, node, args)
    op = _core(node)
    x = _cho_solve(ctx, c, _as_matrix_rhs(ctx, b, op.b_ndim), op.lower)
    return _from_matrix_rhs(ctx, x, op.b_ndim)


def _inverse_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    (a,) = float_args(ctx, node, args)
    return lu_solve(ctx, a, identity_like(ctx, a))


def _slogdet(ctx: LoweringContext, a: Value) -> tuple[Value, Value]:
    """``(sign, log|det|)`` of ``a`` (``(..., n, n)``), each ``(...)``."""
    lu, swaps = lu_loop(ctx, a)[:2]
    u = diagonal(ctx, lu, positions(ctx, a))  # (..., n)
    last = u.rank - 1
    logdet = ctx.add("reduce_sum", [ctx.add("log", [ctx.add("abs", [u])])], {"axes": [last], "keepdims": False})
    negatives = ctx.add("reduce_sum", [ctx.cast(ctx.add("lt", [u, ctx.scalar(0, u.dtype)]), DType.INT64)],
                        {"axes": [last], "keepdims": True})
    odd = ctx.add("eq", [ctx.add("mod", [ctx.add("add", [negatives, swaps]), ctx.scalar(2, DType.INT64)]),
                         ctx.scalar(1, DType.INT64)])
    sign = ctx.add("where", [odd, ctx.scalar(-1, a.dtype), ctx.scalar(1, a.dtype)])
    singular = ctx.add("reduce_any", [ctx.add("eq", [u, ctx.scalar(0, u.dtype)])], {"axes": [last], "keepdims": True})
    sign = ctx.add("where", [singular, ctx.scalar(0, a.dtype), sign])
    return ctx.add("squeeze", [sign], {"axes": [last]}), logdet


def _det_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    (a,) = float_args(ctx, node, args)
    sign, logdet = _slogdet(ctx, a)
    return ctx.add("mul", [sign, ctx.add("exp", [logdet])])


def _slogdet_rule(ctx: LoweringContext, node, args: list[Value]) -> tuple[Value, Value]:
    (a,) = float_args(ctx, node, args)
    return _slogdet(ctx, a)


BLOCKWISE_RULES[Solve] = _solve_rule
BLOCKWISE_RULES[CholeskySolve] = _cholesky_solve_rule
BLOCKWISE_RULES[MatrixInverse] = _inverse_rule
BLOCKWISE_RULES[Det] = _det_rule
BLOCKWISE_RULES[SLogDet] = _slogdet_rule


@lowers(Solve, CholeskySolve, MatrixInverse, Det, SLogDet)
def lower_solver(ctx: LoweringContext, node) -> list[Value]:
    """``Solve``, ``CholeskySolve``, ``MatrixInverse``, ``Det``, ``SLogDet``
    on one matrix (the module docstring gives each one's semantics, failure
    values and bound); float results only.

    Raises:
        Unsupported: an integer result dtype, ``Solve`` with another
            ``assume_a`` (not "gen", "sym", "her", "pos", "tridiagonal" or
            "banded").
    """
    rule = find_in_mro(BLOCKWISE_RULES, node.op)
    out = rule(ctx, node, [ctx.get(v) for v in node.inputs])
    return list(out) if isinstance(out, tuple) else [out]
