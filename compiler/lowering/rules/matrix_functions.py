"""Matrix functions: ``Expm`` (``pt.linalg.expm``; ``scipy.linalg.expm``),
any batch dims.

``expm(A)``: Higham's scaling and squaring with the degree-13 Padé
approximant (N. J. Higham, "The scaling and squaring method for the matrix
exponential revisited", SIAM J. Matrix Anal. Appl. 26(4), 2005, Algorithm
2.3, the form SciPy's ``expm`` takes for large norms):

* ``s = max(0, ceil(log2(|A|_1 / theta_13)))`` with ``theta_13 =
  5.371920351148152``, per matrix; ``A / 2^s`` is exact (a power of two);
* ``U = A (A6 (b13 A6 + b11 A4 + b9 A2) + b7 A6 + b5 A4 + b3 A2 + b1 I)``,
  ``V = A6 (b12 A6 + b10 A4 + b8 A2) + b6 A6 + b4 A4 + b2 A2 + b0 I``;
* ``R = (V - U)^-1 (V + U)`` by LU with partial pivoting
  (``solvers.lu_solve``);
* ``s`` squarings ``R = R @ R``: a ``loop`` of ``max(s)`` steps in which a
  matrix squares while its own ``s`` is not reached.

For ``|A|_1 / 2^s <= theta_13`` the approximant's backward error is below
the unit roundoff (Higham's Theorem 2.1), so the result is within a few ulp
times the condition number of the exponential of SciPy's; SciPy picks a
lower Padé degree (3, 5, 7 or 9) for small norms, whose rounding differs
(tests: 1e-13 relative to the result's norm on well-conditioned matrices).
A NaN or infinite entry makes the whole matrix NaN (SciPy raises for an
infinite one). PyTensor 3's gradient is the exponential of a 2n x 2n
block matrix (Mathias 1996), so it lowers through the same rule; 2.38's
``ExpmGrad`` needs a complex eigendecomposition and is refused.
"""

from __future__ import annotations

import numpy as np

from compiler.lowering.compat import Expm
from compiler.lowering.context import LoweringContext
from compiler.lowering.registry import lowers
from compiler.lowering.rules.decompositions import float_args
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from compiler.lowering.rules.matrix_loops import identity_like, run_steps
from compiler.lowering.rules.solvers import lu_solve
from ir import DType, Value

THETA_13 = 5.371920351148152
PADE_13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)


def _expm_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    (a,) = float_args(ctx, node, args)
    return expm(ctx, a)


def expm(ctx: LoweringContext, a: Value) -> Value:
    """``scipy.linalg.expm(a)`` for ``a`` of shape ``(..., n, n)`` (see the
    module doc)."""
    dtype, last = a.dtype, a.rank - 1

    def k(v):
        return ctx.scalar(v, dtype)

    def mm(x, y):
        return ctx.add("matmul", [x, y])

    def comb(*terms):
        out = None
        for coef, m in terms:
            t = ctx.add("mul", [k(coef), m])
            out = t if out is None else ctx.add("add", [out, t])
        return out

    norm = ctx.add("reduce_max", [ctx.add("reduce_sum", [ctx.add("abs", [a])], {"axes": [last - 1], "keepdims": True})],
                   {"axes": [last], "keepdims": True})  # (..., 1, 1): the 1-norm
    ratio = ctx.add("div", [norm, k(THETA_13)])
    s = ctx.add("maximum", [ctx.add("ceil", [ctx.add("log2", [ratio])]), k(0.0)])
    finite = ctx.add("lt", [s, k(1100.0)])  # NaN/inf norms (and nothing finite) fail this
    s = ctx.add("where", [finite, s, k(0.0)])
    scaled = ctx.add("div", [a, ctx.add("pow", [k(2.0), s])])
    eye = identity_like(ctx, a)
    b = PADE_13
    a2 = mm(scaled, scaled)
    a4 = mm(a2, a2)
    a6 = mm(a4, a2)
    u = mm(scaled, ctx.add("add", [mm(a6, comb((b[13], a6), (b[11], a4), (b[9], a2))),
                                   comb((b[7], a6), (b[5], a4), (b[3], a2), (b[1], eye))]))
    v = ctx.add("add", [mm(a6, comb((b[12], a6), (b[10], a4), (b[8], a2))),
                        comb((b[6], a6), (b[4], a4), (b[2], a2), (b[0], eye))])
    r = lu_solve(ctx, ctx.add("sub", [v, u]), ctx.add("add", [v, u]))
    squarings = ctx.cast(s, DType.INT64)
    count = ctx.add("reduce_max", [squarings], {"axes": list(range(squarings.rank)), "keepdims": False})

    def square(body, j, carried, invariant):
        (x,), (own,) = carried, invariant
        return [body.add("where", [body.add("lt", [j, own]), body.add("matmul", [x, x]), x])]

    (r,) = run_steps(ctx, count, [r], [squarings], square)
    nan = ctx.scalar(np.nan, dtype)
    return ctx.add("where", [finite, r, nan])


BLOCKWISE_RULES[Expm] = _expm_rule


@lowers(Expm)
def lower_expm(ctx: LoweringContext, node) -> list[Value]:
    """``Expm`` of one matrix (see the module doc); float results only.

    Raises:
        Unsupported: an integer result dtype.
    """
    return [_expm_rule(ctx, node, [ctx.get(v) for v in node.inputs])]
