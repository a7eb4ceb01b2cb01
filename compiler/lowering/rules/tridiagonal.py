"""Lowering of PyTensor 3's tridiagonal LU ops
(``pytensor.tensor.linalg.solvers.tridiagonal``: PyTensor's default-mode
rewrites split ``solve(a, b, assume_a="tridiagonal")`` into them when the
factorization can be shared: several solves with one ``a`` or ``a.mT``, a
batch dim of ``a`` broadcast against ``b``'s, a ``Scan`` whose ``a`` is a
non-sequence) and their ``Blockwise`` batched forms (batch dims broadcast).
PyTensor 2.38 has neither op (``compat.py``). ``tridiagonal_solve`` is
``Solve`` with ``assume_a="tridiagonal"`` (``solvers.py``, both lines):
SciPy's ``gttrf`` + ``gttrs`` on the three central diagonals.

- ``LUFactorTridiagonal(dl, d, du) -> (dl, d, du, du2, ipiv)``: LAPACK
  ``dgttrf`` (reference LAPACK 3.12 ``dgttrf.f``; SciPy's
  ``scipy.linalg.lapack.dgttrf``, the op's ``perform``), LU with partial
  pivoting by row interchanges of the matrix with sub-, main and
  superdiagonals ``dl`` (n-1), ``d`` (n), ``du`` (n-1). Step ``i = 0 ..
  n-2``: when ``|d[i]| >= |dl[i]|`` (false at a NaN) no interchange, and if
  ``d[i] != 0``, ``fact = dl[i] / d[i]``, ``dl[i] = fact``, ``d[i+1] -=
  fact * du[i]``; otherwise rows ``i`` and ``i+1`` are interchanged:
  ``fact = d[i] / dl[i]``, ``d[i] = dl[i]``, ``dl[i] = fact``, ``du[i] =
  d[i+1]``, ``d[i+1] = du[i] - fact * d[i+1]`` (the old ``du[i]``),
  ``du2[i] = du[i+1]``, ``du[i+1] = -fact * du[i+1]`` (the last two only
  when ``i < n-2``), ``ipiv[i] = i+2``. ``du2`` starts at 0 and ``ipiv`` at
  ``i+1`` (1-based, int32, as ``dgttrf`` returns them). A zero pivot
  (``info > 0`` in LAPACK) leaves the factors as computed, as PyTensor's
  ``perform`` does (it ignores ``info``).
- ``SolveLUFactorTridiagonal(b_ndim, transposed)(dl, d, du, du2, ipiv, b)``:
  LAPACK ``dgttrs`` (its kernel ``dgtts2.f``), ``A x = b`` or, with
  ``transposed``, ``A^T x = b``, ``b`` a vector or an (n, k) matrix.
  ``"N"``: forward pass ``L``: for ``i = 0 .. n-2``, without interchange
  ``b[i+1] -= dl[i] * b[i]``, with one (``ipiv[i] != i+1``) ``(b[i],
  b[i+1]) = (b[i+1], b[i] - dl[i] * b[i+1])``; then back substitution with
  ``U``: ``x[i] = (b[i] - du[i] x[i+1] - du2[i] x[i+2]) / d[i]`` from ``i =
  n-1`` down (terms past the end absent). ``"T"``: forward substitution
  with ``U^T``: ``x[i] = (b[i] - du[i-1] x[i-1] - du2[i-2] x[i-2]) /
  d[i]``; then ``L^T`` from ``i = n-2`` down: without interchange ``b[i]
  -= dl[i] * b[i+1]``, with one ``(b[i], b[i+1]) = (b[i+1], b[i] - dl[i] *
  b[i+1])``. A zero on ``U``'s diagonal divides by zero (Inf/NaN), as in
  LAPACK (``dgttrs`` reports no singularity; PyTensor's unsplit ``Solve``
  returns NaN there, the split form does not). ``ipiv`` entries are read as
  ``dgtts2``'s multi-column path reads them (an interchange wherever
  ``ipiv[i] != i+1``); ``dgttrf``'s pivots are ``i+1`` or ``i+2``, for
  which its one-column path agrees.

Each pass is one ``matrix_loops.run_steps`` loop over the step number on
whole vectors (``where`` over ``range(n)`` compared with the step; entries
read with ``gather`` at the step, the same for every batch element),
unrolled by ``scan-unroll`` for a static n <= 64. The vectors are padded
with zeros so that every step reads and writes in bounds (``du``/``du2``
past their ends, two zero rows of ``b`` past the last or before the first
row); a padded term is ``0 * 0`` subtracted after LAPACK's own terms, so
it changes no bit, and padded outputs are sliced off. Rounding: the same
operations in the same order as the reference Fortran (no fused multiply-
add in onnxruntime's elementwise kernels), so the factors, pivots and
solutions equal SciPy's up to the rounding of LAPACK's build (measured:
bit-equal to SciPy 1.17's ``?gttrf``/``?gttrs`` on 20 random systems each
of n = 16, 64 and 200, float64 and float32; tests: exact pivots, 4 eps
relative to the largest entry on the factors, 64 eps on the solutions).
Costs: O(n) steps of O(n) vector work each (``dgttrf`` is O(n)).
"""

from __future__ import annotations

import numpy as np

from compiler.lowering.compat import LUFactorTridiagonal, SolveLUFactorTridiagonal
from compiler.lowering.context import LoweringContext, ir_dtype
from compiler.lowering.errors import Unsupported
from compiler.lowering.registry import lowers
from compiler.lowering.rules.blockwise_loop import broadcast_batches
from compiler.lowering.rules.decompositions import extract_diagonal
from compiler.lowering.rules.indexing import dim_of, int64_value
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from compiler.lowering.rules.matrix_loops import broadcast_batch, positions, row, run_steps, unsq, zeros_like
from ir import DType, Value

INT64 = DType.INT64


def _pad_zeros(ctx: LoweringContext, x: Value, before: int, after: int, axis: int = -1) -> Value:
    """``x`` with ``before``/``after`` zeros added along ``axis``."""
    pads = [0] * (2 * x.rank)
    pads[axis % x.rank], pads[x.rank + axis % x.rank] = before, after
    return ctx.add("pad", [x, ctx.scalar(0, x.dtype)], {"pads": pads})


def _first(ctx: LoweringContext, x: Value, n: int | Value, less: int, axis: int = -1, start: int = 0) -> Value:
    """``x[..., start : start + max(n - less, 0)]`` along ``axis`` (``n`` a
    Python int or an ``i64[]``)."""
    if isinstance(n, int):
        end = ctx.i64([start + max(n - less, 0)])
    else:
        end = unsq(ctx, ctx.add("add", [_count(ctx, n, less), ctx.scalar(start, INT64)]) if start
                   else _count(ctx, n, less), 0)
    return ctx.add("slice", [x, ctx.i64([start]), end, ctx.i64([1])], {"axes": [axis % x.rank]})


def _count(ctx: LoweringContext, n: int | Value, less: int) -> Value:
    """``max(n - less, 0)`` as an ``i64[]`` (a loop's trip count)."""
    if isinstance(n, int):
        return ctx.scalar(max(n - less, 0), INT64)
    return ctx.add("maximum", [ctx.add("sub", [n, ctx.scalar(less, INT64)]), ctx.scalar(0, INT64)])


def _at(ctx: LoweringContext, x: Value, k: Value) -> Value:
    """``x[..., k]`` as ``(..., 1)`` (``k`` an ``i64[]``)."""
    return ctx.add("gather", [x, unsq(ctx, k, 0)], {"axis": x.rank - 1})


def _put_row(ctx: LoweringContext, rows: Value, k: Value, new: Value, x: Value) -> Value:
    """``x`` (``(..., m, k)``) with row ``k`` replaced by ``new`` (``(..., k)``);
    ``rows`` is ``range(m)``."""
    return ctx.add("where", [unsq(ctx, ctx.add("eq", [rows, k]), 1), unsq(ctx, new, new.rank - 1), x])


def gttrf(ctx: LoweringContext, dl: Value, d: Value, du: Value) -> tuple[Value, Value, Value, Value, Value]:
    """LAPACK ``dgttrf`` of the tridiagonal matrices ``(dl, d, du)``
    (``(..., n-1)``, ``(..., n)``, ``(..., n-1)``, one float dtype, batch
    dims equal) as the module docstring gives it.

    Returns:
        ``(dl, d, du, du2, ipiv)``: the multipliers (``(..., n-1)``), ``U``'s
        diagonal (``(..., n)``), first and second superdiagonals
        (``(..., n-1)``, ``(..., max(n-2, 0))``), and the 1-based pivots
        (``i64 (..., n)``).
    """
    n = dim_of(ctx, d, -1)
    rows = positions(ctx, d)
    ipiv = ctx.add("expand", [ctx.add("add", [rows, ctx.scalar(1, INT64)]), ctx.add("shape", [d])])
    carried = [_pad_zeros(ctx, dl, 0, 1), d, _pad_zeros(ctx, du, 0, 1), zeros_like(ctx, d), ipiv]

    def step(c: LoweringContext, i: Value, state: list, invariant: list) -> list:
        L, D, U, U2, P = state
        (r,) = invariant
        one, zero = c.scalar(1, INT64), c.scalar(0, D.dtype)
        i1 = c.add("add", [i, one])
        di, di1, li, ui, ui1 = _at(c, D, i), _at(c, D, i1), _at(c, L, i), _at(c, U, i), _at(c, U, i1)
        swap = c.add("invert", [c.add("ge", [c.add("abs", [di]), c.add("abs", [li])])])  # NaN: interchange
        nonzero = c.add("ne", [di, zero])
        f_keep, f_swap = c.add("div", [li, di]), c.add("div", [di, li])
        new_di = c.add("where", [swap, li, di])
        new_li = c.add("where", [swap, f_swap, c.add("where", [nonzero, f_keep, li])])
        new_ui = c.add("where", [swap, di1, ui])
        new_di1 = c.add("where", [swap, c.add("sub", [ui, c.add("mul", [f_swap, di1])]),
                                  c.add("where", [nonzero, c.add("sub", [di1, c.add("mul", [f_keep, ui])]), di1])])
        new_ui1 = c.add("where", [swap, c.add("neg", [c.add("mul", [f_swap, ui1])]), ui1])
        new_u2i = c.add("where", [swap, ui1, zero])
        new_pi = c.add("add", [c.add("where", [swap, i1, i]), one])
        at, at1 = c.add("eq", [r, i]), c.add("eq", [r, i1])
        return [c.add("where", [at, new_li, L]),
                c.add("where", [at, new_di, c.add("where", [at1, new_di1, D])]),
                c.add("where", [at, new_ui, c.add("where", [at1, new_ui1, U])]),
                c.add("where", [at, new_u2i, U2]),
                c.add("where", [at, new_pi, P])]

    L, D, U, U2, P = run_steps(ctx, _count(ctx, n, 1), carried, [rows], step)
    return _first(ctx, L, n, 1), D, _first(ctx, U, n, 1), _first(ctx, U2, n, 2), P


def gttrs(ctx: LoweringContext, dl: Value, d: Value, du: Value, du2: Value, ipiv: Value, b: Value, *,
          transposed: bool) -> Value:
    """LAPACK ``dgttrs`` (``dgtts2``) with ``gttrf``'s factors: ``x`` with
    ``A x = b`` (``A^T x = b`` when ``transposed``), ``b`` ``(..., n, k)``,
    the factors as ``gttrf`` returns them (``ipiv`` 1-based, any integer
    dtype), one float dtype, batch dims equal. Returns ``(..., n, k)``."""
    n_int = dim_of(ctx, d, -1)
    n = int64_value(ctx, n_int)
    rows = positions(ctx, d)
    swapped = ctx.add("ne", [ctx.cast(ipiv, INT64), ctx.add("add", [rows, ctx.scalar(1, INT64)])])  # (..., n)
    b_rows = positions(ctx, b, -2)
    if isinstance(n_int, int):
        padded_rows, top = ctx.i64(np.arange(n_int + 2)), ctx.scalar(n_int - 1, INT64)
    else:
        padded_rows = ctx.add("range", [ctx.scalar(0, INT64), ctx.add("add", [n, ctx.scalar(2, INT64)]),
                                        ctx.scalar(1, INT64)])
        top = ctx.add("sub", [n, ctx.scalar(1, INT64)])

    def l_pass(c: LoweringContext, t: Value, state: list, invariant: list) -> list:
        """One step of ``L``'s forward pass (``transposed``: of ``L^T``'s backward pass)."""
        (B,), (Dl, S, r, last) = state, invariant
        i = c.add("sub", [c.add("sub", [last, c.scalar(1, INT64)]), t]) if transposed else t
        i1 = c.add("add", [i, c.scalar(1, INT64)])
        bi, bi1, li, si = row(c, B, i), row(c, B, i1), _at(c, Dl, i), _at(c, S, i)
        if transposed:
            reduced = c.add("sub", [bi, c.add("mul", [li, bi1])])
            new_i, new_i1 = c.add("where", [si, bi1, reduced]), c.add("where", [si, reduced, bi1])
        else:
            new_i = c.add("where", [si, bi1, bi])
            new_i1 = c.add("where", [si, c.add("sub", [bi, c.add("mul", [li, bi1])]),
                                     c.add("sub", [bi1, c.add("mul", [li, bi])])])
        return [_put_row(c, r, i, new_i, _put_row(c, r, i1, new_i1, B))]

    def u_pass(c: LoweringContext, t: Value, state: list, invariant: list) -> list:
        """One step of ``U``'s back substitution (``transposed``: ``U^T``'s
        forward substitution), on ``b`` padded with two zero rows."""
        (B,), (D, U1, U2, r, last) = state, invariant
        i = t if transposed else c.add("sub", [last, t])
        # the row of x[i] in the padded b, and those of its two neighbours in U's rows
        at = c.add("add", [i, c.scalar(2, INT64)]) if transposed else i
        step1 = c.scalar(-1 if transposed else 1, INT64)
        near, far = c.add("add", [at, step1]), c.add("add", [at, c.add("add", [step1, step1])])
        num = c.add("sub", [c.add("sub", [row(c, B, at), c.add("mul", [_at(c, U1, i), row(c, B, near)])]),
                            c.add("mul", [_at(c, U2, i), row(c, B, far)])])
        return [_put_row(c, r, at, c.add("div", [num, _at(c, D, i)]), B)]

    if transposed:
        # A^T = U^T L^T P^T: U^T x = b (du[i-1], du2[i-2] at step i), then L^T
        padded = _pad_zeros(ctx, b, 2, 0, axis=-2)
        u1, u2 = _pad_zeros(ctx, du, 1, 0), _pad_zeros(ctx, du2, 2, 0)
        (y,) = run_steps(ctx, n, [padded], [d, u1, u2, padded_rows, top], u_pass)
        y = _first(ctx, y, n_int, 0, axis=-2, start=2)
        (x,) = run_steps(ctx, _count(ctx, n_int, 1), [y], [dl, swapped, b_rows, top], l_pass)
        return x
    (y,) = run_steps(ctx, _count(ctx, n_int, 1), [b], [dl, swapped, b_rows, top], l_pass)
    padded = _pad_zeros(ctx, y, 0, 2, axis=-2)
    u1, u2 = _pad_zeros(ctx, du, 0, 1), _pad_zeros(ctx, du2, 0, 2)
    (x,) = run_steps(ctx, n, [padded], [d, u1, u2, padded_rows, top], u_pass)
    return _first(ctx, x, n_int, 0, axis=-2)


def tridiagonal_solve(ctx: LoweringContext, a: Value, b: Value) -> Value:
    """``Solve`` with ``assume_a="tridiagonal"``: ``scipy.linalg.solve``'s
    tridiagonal case (``gttrf`` then ``gttrs`` on ``a``'s three central
    diagonals; no other entry is read), ``a`` ``(..., n, n)``, ``b``
    ``(..., n, k)``, batch dims broadcast; all NaN per system where ``U``
    has a zero on its diagonal (SciPy's ``LinAlgError`` for ``info > 0``,
    which PyTensor's ``perform`` turns into NaN)."""
    a, b = broadcast_batch(ctx, a, b, 2)
    dl, d, du = (extract_diagonal(ctx, a, offset, -2, -1) for offset in (-1, 0, 1))
    dl, d, du, du2, ipiv = gttrf(ctx, dl, d, du)
    x = gttrs(ctx, dl, d, du, du2, ipiv, b, transposed=False)
    ok = ctx.add("reduce_all", [ctx.add("ne", [d, ctx.scalar(0, d.dtype)])], {"axes": [d.rank - 1], "keepdims": True})
    return ctx.add("where", [unsq(ctx, ok, ok.rank), x, ctx.scalar(np.nan, x.dtype)])


def _float_dtype(node) -> DType:
    dtype = ir_dtype(node.outputs[0])
    if not dtype.is_float:
        raise Unsupported(f"{node.op} with a {dtype} result")
    return dtype


def _factor_rule(ctx: LoweringContext, node, args: list[Value]) -> tuple[Value, ...]:
    dtype = _float_dtype(node)
    nb = args[1].rank - 1
    dl, d, du = broadcast_batches(ctx, [ctx.cast(x, dtype) for x in args], nb, [1, 1, 1])
    *factors, ipiv = gttrf(ctx, dl, d, du)
    return (*factors, ctx.cast(ipiv, ir_dtype(node.outputs[4])))


def _solve_rule(ctx: LoweringContext, node, args: list[Value]) -> Value:
    dtype = _float_dtype(node)
    op = getattr(node.op, "core_op", node.op)
    nb = args[1].rank - 1
    floats = [ctx.cast(x, dtype) if k != 4 else x for k, x in enumerate(args)]
    dl, d, du, du2, ipiv, b = broadcast_batches(ctx, floats, nb, [1, 1, 1, 1, 1, op.b_ndim])
    if op.b_ndim == 1:
        b = unsq(ctx, b, b.rank)
    x = gttrs(ctx, dl, d, du, du2, ipiv, b, transposed=op.transposed)
    return ctx.add("squeeze", [x], {"axes": [x.rank - 1]}) if op.b_ndim == 1 else x


if LUFactorTridiagonal is not None:  # PyTensor 3 only
    BLOCKWISE_RULES[LUFactorTridiagonal] = _factor_rule
    BLOCKWISE_RULES[SolveLUFactorTridiagonal] = _solve_rule

    @lowers(LUFactorTridiagonal, SolveLUFactorTridiagonal)
    def lower_tridiagonal(ctx: LoweringContext, node) -> list[Value]:
        """``LUFactorTridiagonal`` (``gttrf``) or ``SolveLUFactorTridiagonal``
        (``gttrs``) of one system (module docstring); float results only.

        Raises:
            Unsupported: an integer or complex result dtype.
        """
        rule = BLOCKWISE_RULES[type(node.op)]
        out = rule(ctx, node, [ctx.get(v) for v in node.inputs])
        return list(out) if isinstance(out, tuple) else [out]
