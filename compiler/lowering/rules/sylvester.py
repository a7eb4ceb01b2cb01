"""Lowering of PyTensor's Sylvester solver (``SolveSylvester``, the
``OpFromGraph`` behind ``solve_sylvester``, ``solve_continuous_lyapunov``
and ``solve_discrete_lyapunov(method="bilinear")``), single and
``Blockwise``, in the Kronecker form.

``A X + X B = Q`` (``A`` ``(..., m, m)``, ``B`` ``(..., n, n)``, ``Q``
``(..., m, n)``) is the linear system ``K vec(X) = vec(Q)`` with ``vec`` the
row-major flattening and ``K = A (x) I_n + I_m (x) B^T`` (``(m n, m n)``:
``K[(i, j), (k, l)] = A[i, k] delta(j, l) + delta(i, k) B[l, j]``), solved
by LU with partial pivoting (``solvers.lu_solve``). PyTensor's inner graph
is Bartels-Stewart (real Schur forms of ``A`` and ``B``, then LAPACK
``trsyl``), which has no ONNX form here; the Kronecker form is the textbook
alternative for small sizes (Golub & Van Loan, *Matrix Computations*, 4th
ed., section 7.6.3, "The Sylvester equation").

- Cost: ``O((m n)^3)`` work and ``(m n)^2`` memory, against
  Bartels-Stewart's ``O(m^3 + n^3)``: fine for the state-space sizes PyMC
  models use (``m, n`` up to a few tens), not for hundreds.
- Accuracy: LU with partial pivoting is backward stable for ``K``, so the
  error is about ``m n eps cond(K)`` with ``cond(K) ~ ||K|| / sep(A, -B)``
  (Bartels-Stewart's is ``eps ||A, B|| / sep``): the two agree to ~1e-13
  relative on well-separated spectra (tests), and both lose accuracy as
  ``A`` and ``-B`` share an eigenvalue.
- An exactly singular ``K`` (``A`` and ``-B`` with a common eigenvalue and
  a zero pivot) gives NaN for that system; ``trsyl`` perturbs the system
  and returns a scaled, inaccurate solution with a warning.
- The gradient is PyTensor's (``_lop_solve_continuous_sylvester``: another
  Sylvester solve), lowered by this rule too.
"""

from __future__ import annotations

from compiler.lowering.compat import SolveSylvester
from compiler.lowering.context import LoweringContext
from compiler.lowering.registry import lowers
from compiler.lowering.rules.decompositions import float_args, matrix_transpose
from compiler.lowering.rules.indexing import dim_of, int64_value
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from compiler.lowering.rules.matrix_loops import eye, unsq
from compiler.lowering.rules.scalar_ops import shape_of
from compiler.lowering.rules.solvers import lu_solve
from ir import Value


def _with_core(ctx: LoweringContext, x: Value, core_rank: int, core: list[Value]) -> Value:
    """``x`` reshaped to its batch dims (all but the last ``core_rank``) followed by ``core`` (``i64[1]`` each)."""
    batch = ctx.add("slice", [shape_of(ctx, x), ctx.i64([0]), ctx.i64([x.rank - core_rank]), ctx.i64([1])],
                    {"axes": [0]})
    return ctx.add("reshape", [x, ctx.add("concat", [batch, *core], {"axis": 0})])


def sylvester_solve(ctx: LoweringContext, a: Value, b: Value, q: Value) -> Value:
    """``X`` with ``A X + X B = Q`` (module docstring), batch dims broadcast."""
    m = ctx.add("reshape", [int64_value(ctx, dim_of(ctx, a, -1)), ctx.i64([1])])
    n = ctx.add("reshape", [int64_value(ctx, dim_of(ctx, b, -1)), ctx.i64([1])])
    mn = ctx.add("mul", [m, n])
    # (..., m, n, m, n): A[i, k] I[j, l] + I[i, k] B^T[j, l]
    a_part = ctx.add("mul", [unsq(ctx, unsq(ctx, a, a.rank), a.rank - 1), unsq(ctx, unsq(ctx, eye(ctx, b), 1), 0)])
    bt = matrix_transpose(ctx, b)
    b_part = ctx.add("mul", [unsq(ctx, unsq(ctx, eye(ctx, a), 2), 1), unsq(ctx, unsq(ctx, bt, bt.rank - 1), bt.rank - 2)])
    k = ctx.add("add", [a_part, b_part])
    k = _with_core(ctx, k, 4, [mn, mn])
    rhs = _with_core(ctx, q, 2, [mn, ctx.i64([1])])
    x = lu_solve(ctx, k, rhs)
    return _with_core(ctx, x, 2, [m, n])


def _sylvester_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    a, b, q = float_args(ctx, node, args)
    return sylvester_solve(ctx, a, b, q)


BLOCKWISE_RULES[SolveSylvester] = _sylvester_rule


@lowers(SolveSylvester)
def lower_solve_sylvester(ctx: LoweringContext, node) -> list[Value]:
    """``SolveSylvester`` (``solve_sylvester(A, B, Q)``: ``X`` with ``A X + X B
    = Q``) in the Kronecker form (module docstring: cost, bound, singular
    systems)."""
    return [_sylvester_rule(ctx, node, [ctx.get(v) for v in node.inputs])]
