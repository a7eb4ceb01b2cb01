"""Lowering of the symmetric eigendecomposition: ``Eigh`` (``pt.linalg.eigh``;
``np.linalg.eigh`` in 2.38's ``perform``, ``scipy.linalg.eigh`` in 3.0's),
``Eigvalsh`` (``eigvalsh(a)``, eigenvalues only), their ``Blockwise`` batched
forms and 2.38's ``EighGrad``; and the generalized symmetric-definite
problem ``A v = w B v`` (a second matrix ``b``: ``Eigvalsh(a, b)`` in both
lines, ``Eigh(a, b)`` in 3.0, 2.38's ``EigvalshGrad``), as
``scipy.linalg.eigh(a, b)`` (LAPACK ``sygvd``, ``itype = 1``).

The algorithm is the cyclic Jacobi method (Golub & Van Loan, *Matrix
Computations*, 4th ed., §8.5) in a parallel ordering: the round-robin
("chess tournament", Brent & Luk 1985) schedule pairs the ``m = n + n % 2``
indices into ``m / 2`` disjoint pairs in each of ``m - 1`` steps, so that a
sweep meets every pair ``(p, q)`` once and a step's rotations commute. A
step is whole-matrix work on ``(..., n, n)``: the partner ``prt(i)`` of
every index (itself for the dummy index of an odd n) is computed from the
step number, the rows and columns of the pairs are read with ``gather``,
and ``A <- J^T A J``, ``V <- V J`` become ``c_i A[i] - sigma_i s_i
A[prt(i)]`` on rows and the same on columns (``sigma = +1`` for the first
index of a pair, -1 for the second): ``O(n^2)`` per step, no matmul.

* Rotation (GVL Alg. 8.5.1, ``sym.schur2``): ``tau = (a_qq - a_pp) /
  (2 a_pq)``, ``t = sign(tau) / (|tau| + hypot(1, tau))`` (``hypot``
  scaled, so a huge ``tau`` gives ``t = 1 / (2 tau)``, not 0), ``c = 1 /
  sqrt(1 + t^2)``, ``s = t c``; the diagonal is updated as ``a_pp - t
  a_pq``, ``a_qq + t a_pq`` and ``a_pq`` set to exactly 0; the matrix is
  kept exactly symmetric (the upper triangle mirrored).
* Threshold (Demmel & Veselić 1992, for relative accuracy): a pair is
  rotated only where ``|a_pq| > eps * sqrt(|a_pp|) * sqrt(|a_qq|)`` and
  ``|a_pq|`` is above the smallest normal number.
* Convergence: one ONNX ``Loop`` over steps that stops at the end of the
  first sweep in which no matrix of the batch rotated any pair, or after
  ``MAX_SWEEPS`` = 30 sweeps (Jacobi converges quadratically; 5-10 sweeps
  are typical up to n = 128), so a bad input cannot hang it.
* Result: the eigenvalues are the diagonal, sorted ascending (LAPACK
  ``syevd``'s order, ties in index order) with the columns of ``V``
  permuted alike; each eigenvector's sign is chosen so that its entry of
  largest magnitude (the first such) is positive (LAPACK defines no sign).
  A matrix with a NaN or an infinity in the triangle read gives all-NaN
  eigenvalues and vectors.

Only the triangle PyTensor's op reads is used (``lower`` / ``UPLO``): the
other one is its mirror. Float32 is computed in float32 with float32's
eps, as LAPACK's ``ssyevd``. Bound: Jacobi is backward stable, ``V Λ V^T``
reproduces the input and ``V^T V`` the identity within a small multiple of
``n * eps * ||A||``; eigenvalues agree with LAPACK's within ``n * eps *
||A||`` (tests: 1e-13 relative to the largest eigenvalue magnitude for
condition numbers up to 1e10). Inputs whose ``a_qq - a_pp`` overflows (entries
near the largest float) are not rescaled first.

The generalized problem is reduced to the standard one as LAPACK's
``sygv``/``sygst`` do (Golub & Van Loan §8.7.2, Alg. 8.7.1): ``B = L L^T``
(``decompositions.cholesky``, reading ``b``'s ``lower`` triangle as SciPy
does), ``C = L^-1 A L^-T`` by two triangular solves (``L^-1 A``, then
``L^-1 (L^-1 A)^T``; its lower triangle mirrored so that ``C`` is exactly
symmetric), ``C = Y diag(w) Y^T`` by the Jacobi method above, and ``V =
L^-T Y`` by back substitution; so ``V^T B V = Y^T Y = I``, SciPy's
normalisation. The sign of each column of ``V`` is that of ``Y`` (its
entry of largest magnitude positive); LAPACK's signs are arbitrary. A
``b`` that is not positive definite (``potrf`` fails: SciPy raises
``LinAlgError``) or a non-finite input gives all-NaN results for that
matrix. Bound: the reduction adds ``eps * cond(B)`` (GVL §8.7.2):
eigenvalues within ``n * eps * ||A|| * ||B^-1||`` of LAPACK's (tests:
1e-12 relative to the largest magnitude with ``cond(B)`` up to 1e4;
``A V = B V diag(w)`` and ``V^T B V = I`` to 1e-11).

The gradient is PyTensor's own: 3.0's ``Eigh.L_op`` is a graph of ordinary
ops; 2.38's ``EighGrad`` (whose ``perform`` is ``sum_n outer(v_n, v_n W_n
+ G_n)``) is lowered in its matrix form ``v (diag(W) + (F ∘ v^T V))^T v^T``
with ``F[m, n] = 1 / (w_n - w_m)`` off the diagonal, then ``tri0(g) +
tri1(g)^T`` as its ``perform``; 2.38's ``EigvalshGrad(a, b, gw)`` is its
``perform``: ``gA = V diag(gw) V^T``, ``gB = -V diag(gw w) V^T`` from the
generalized problem, each folded the same way. 3.0's gradients of the
generalized ``Eigh``/``Eigvalsh`` are graphs of ordinary ops on ``Eigh(a, b)``.
"""

from __future__ import annotations

import numpy as np

from compiler.lowering.bodies import Body
from compiler.lowering.compat import EIGH_OPS, EighGrad, Eigvalsh, EigvalshGrad
from compiler.lowering.context import LoweringContext, ir_dtype
from compiler.lowering.registry import lowers
from compiler.lowering.rules.decompositions import cholesky, float_args, matrix_transpose, solve_triangular
from compiler.lowering.rules.linalg import BLOCKWISE_RULES
from compiler.lowering.rules.matrix_loops import (broadcast_batch, diagonal, identity_like, positions, size_of,
                                                   symmetric_from_triangle, unsq)
from ir import DType, TensorType, Value

INT64, BOOL = DType.INT64, DType.BOOL
MAX_SWEEPS = 30


def _partners(c: LoweringContext, t: Value, idx: Value, n: Value) -> Value:
    """The round-robin partner of every index ``idx = range(n)`` in step
    ``t`` (``i64[]``): with ``L = m - 1`` (``m = n + n % 2``) and ``s = t
    mod L``, index 0 meets ``1 + s`` and index ``j >= 1`` (residue ``r = j -
    1``) meets 0 when ``r == s``, else ``1 + (2 s - r) mod L``; a partner
    ``>= n`` (the dummy of an odd n) is replaced by the index itself."""
    one = c.scalar(1, INT64)
    m = c.add("add", [n, c.add("mod", [n, c.scalar(2, INT64)])])
    big_l = c.add("sub", [m, one])
    s = c.add("mod", [t, big_l])
    r = c.add("sub", [idx, one])
    other = c.add("add", [one, c.add("mod", [c.add("add", [c.add("sub", [c.add("add", [s, s]), r]),
                                                            c.add("add", [big_l, big_l])]), big_l])])
    prt = c.add("where", [c.add("eq", [r, s]), c.scalar(0, INT64), other])
    prt = c.add("where", [c.add("eq", [idx, c.scalar(0, INT64)]), c.add("add", [one, s]), prt])
    return c.add("where", [c.add("lt", [prt, n]), prt, idx])


def jacobi_rotation(c: LoweringContext, app: Value, aqq: Value, apq: Value,
                    paired: Value) -> tuple[Value, Value, Value, Value]:
    """``(rotate, t, c, s)`` of GVL's ``sym.schur2`` for each pair (module
    docstring), elementwise; ``rotate`` is the Demmel-Veselić threshold,
    false where ``paired`` is not (the dummy partner of an odd n)."""
    dt = app.dtype
    zero, one, two = c.scalar(0, dt), c.scalar(1, dt), c.scalar(2, dt)
    eps, tiny = c.scalar(np.finfo(dt.numpy).eps, dt), c.scalar(np.finfo(dt.numpy).tiny, dt)
    mag = c.add("abs", [apq])
    root_pp, root_qq = c.add("sqrt", [c.add("abs", [app])]), c.add("sqrt", [c.add("abs", [aqq])])
    limit = c.add("mul", [eps, c.add("mul", [root_pp, root_qq])])
    rotate = c.add("and", [paired, c.add("and", [c.add("gt", [mag, limit]), c.add("gt", [mag, tiny])])])
    safe = c.add("where", [rotate, apq, one])
    tau = c.add("div", [c.add("sub", [aqq, app]), c.add("mul", [two, safe])])
    r = c.add("abs", [tau])
    big = c.add("gt", [r, one])
    inv = c.add("div", [one, c.add("where", [big, r, one])])
    hyp = c.add("where", [big, c.add("mul", [r, c.add("sqrt", [c.add("add", [one, c.add("mul", [inv, inv])])])]),
                          c.add("sqrt", [c.add("add", [one, c.add("mul", [r, r])])])])
    sign = c.add("where", [c.add("lt", [tau, zero]), c.scalar(-1, dt), one])
    t = c.add("where", [rotate, c.add("div", [sign, c.add("add", [r, hyp])]), zero])
    cos = c.add("div", [one, c.add("sqrt", [c.add("add", [one, c.add("mul", [t, t])])])])
    return rotate, t, cos, c.add("mul", [t, cos])


def jacobi_sweeps(ctx: LoweringContext, n: Value, idx: Value, carried: list[Value], step) -> list[Value]:
    """Run ``step`` over the round-robin pairs of ``idx = range(n)`` (``n``
    an ``i64[]``) as one ``loop``: ``step(c, idx, prt, first, state)`` gets
    ``range(n)``, the partner of every index, ``first = idx < prt`` and the carried values and
    returns ``(new_state, rotate)`` with ``rotate`` the bool pairs it
    rotated; the loop stops after the first sweep (``m - 1`` steps) without
    any rotation in the batch, or after ``MAX_SWEEPS`` sweeps. Returns the
    final carried values."""
    steps = ctx.add("add", [n, ctx.add("sub", [ctx.add("mod", [n, ctx.scalar(2, INT64)]), ctx.scalar(1, INT64)])])
    trips = ctx.add("mul", [ctx.scalar(MAX_SWEEPS, INT64), steps])
    body = Body(ctx, "jacobi")
    c = body.ctx
    t = body.input(TensorType(INT64, ()), "t")
    state = [body.input(v.type, f"state{k}") for k, v in enumerate(carried)]
    rotated = body.input(TensorType(BOOL, ()), "rotated")
    r_idx, r_n, r_steps = [body.input(v.type, name) for v, name in zip((idx, n, steps), ("idx", "n", "steps"))]
    prt = _partners(c, t, r_idx, r_n)
    new_state, rotate = step(c, r_idx, prt, c.add("lt", [r_idx, prt]), state)
    any_rot = c.add("or", [rotated, c.add("reduce_any", [rotate], {"axes": list(range(rotate.rank)),
                                                                 "keepdims": False})])
    end = c.add("eq", [c.add("mod", [t, r_steps]), c.add("sub", [r_steps, c.scalar(1, INT64)])])
    more = c.add("or", [c.add("invert", [end]), any_rot])
    graph = body.finish([more, *new_state, c.add("and", [c.add("invert", [end]), any_rot])])
    loop = ctx.graph.create_node("loop", [trips, *carried, ctx.const(np.asarray(False)), idx, n, steps],
                                 {"num_carried": len(carried) + 1, "has_condition": True}, subgraphs={"body": graph})
    loop.origins = ctx.origins
    ctx.graph.append(loop)
    return list(loop.outputs[:len(carried)])


def rotate_columns(c: LoweringContext, x: Value, prt: Value, cos: Value, sigma_s: Value) -> Value:
    """``x J`` for the step's rotations: column ``j`` becomes ``cos_j x[:, j]
    - sigma_s_j x[:, prt(j)]`` (``cos``, ``sigma_s`` ``(..., n)``)."""
    last = x.rank - 1
    return c.add("sub", [c.add("mul", [unsq(c, cos, last - 1), x]),
                         c.add("mul", [unsq(c, sigma_s, last - 1), c.add("gather", [x, prt], {"axis": last})])])


def jacobi_eigh(ctx: LoweringContext, a: Value, want_vectors: bool = True) -> tuple[Value, Value | None]:
    """``(w, V)`` of the symmetric ``a`` (``(..., n, n)``, float, both
    triangles set) by parallel cyclic Jacobi (module docstring): ``w``
    ``(..., n)`` ascending, ``V`` ``(..., n, n)`` with ``a = V diag(w) V^T``
    (None unless ``want_vectors``); all NaN for a matrix with a NaN or Inf."""
    dt = a.dtype
    n = size_of(ctx, a)
    idx = positions(ctx, a)

    def step(c: LoweringContext, r_idx: Value, prt: Value, first: Value, state: list) -> tuple[list, Value]:
        A, V = state
        d = diagonal(c, A, r_idx)  # (..., n)
        rows_p = c.add("gather", [A, prt], {"axis": A.rank - 2})  # rows_p[i] = A[prt(i)]
        apq = diagonal(c, rows_p, r_idx)  # A[prt(i), i] == A[i, prt(i)]
        d_p = c.add("gather", [d, prt], {"axis": d.rank - 1})
        app, aqq = c.add("where", [first, d, d_p]), c.add("where", [first, d_p, d])
        rotate, tt, cos, sin = jacobi_rotation(c, app, aqq, apq, c.add("ne", [prt, r_idx]))
        sigma_s = c.add("where", [first, sin, c.add("neg", [sin])])  # (..., n)
        last = A.rank - 1
        A1 = c.add("sub", [c.add("mul", [unsq(c, cos, last), A]), c.add("mul", [unsq(c, sigma_s, last), rows_p])])
        A2 = rotate_columns(c, A1, prt, cos, sigma_s)
        upper = c.add("lt", [unsq(c, r_idx, 1), r_idx])
        A2 = c.add("where", [upper, A2, matrix_transpose(c, A2)])
        d_new = c.add("sub", [d, c.add("mul", [c.add("where", [first, tt, c.add("neg", [tt])]), apq])])
        at_pair = c.add("and", [c.add("eq", [unsq(c, prt, 1), r_idx]), unsq(c, rotate, last)])  # (..., n, n)
        eye = c.add("eq", [unsq(c, r_idx, 1), r_idx])
        A3 = c.add("where", [eye, unsq(c, d_new, last), c.add("where", [at_pair, c.scalar(0, dt), A2])])
        return [A3, rotate_columns(c, V, prt, cos, sigma_s)], rotate

    A, V = jacobi_sweeps(ctx, n, idx, [a, identity_like(ctx, a)], step)

    w, order = ctx.add_multi("sort", [diagonal(ctx, A, idx)], {"axis": -1})
    finite = ctx.add("reduce_all", [ctx.add("eq", [ctx.add("sub", [a, a]), ctx.scalar(0, dt)])],
                     {"axes": [a.rank - 2, a.rank - 1], "keepdims": False})  # (...,): x - x is NaN at NaN and Inf
    nan = ctx.scalar(np.nan, dt)
    w = ctx.add("where", [unsq(ctx, finite, finite.rank), w, nan])
    if not want_vectors:
        return w, None
    perm = ctx.cast(ctx.add("eq", [unsq(ctx, idx, 1), unsq(ctx, order, order.rank - 1)]), dt)  # [j, k]: j == order[k]
    V = ctx.add("matmul", [V, perm])  # column k is column order[k]
    big = ctx.add("argmax", [ctx.add("abs", [V])], {"axis": V.rank - 2, "keepdims": True})  # (..., 1, n)
    lead = ctx.add("reduce_sum", [ctx.add("where", [ctx.add("eq", [unsq(ctx, idx, 1), big]), V, ctx.scalar(0, dt)])],
                   {"axes": [V.rank - 2], "keepdims": True})
    V = ctx.add("where", [ctx.add("lt", [lead, ctx.scalar(0, dt)]), ctx.add("neg", [V]), V])
    V = ctx.add("where", [unsq(ctx, unsq(ctx, finite, finite.rank), finite.rank + 1), V, nan])
    return w, V


def _lower_flag(op) -> bool:
    """Which triangle ``op`` reads: 3.0's ``lower``, 2.38's ``UPLO``."""
    return op.lower if hasattr(op, "lower") else op.UPLO == "L"


def generalized_eigh(ctx: LoweringContext, a: Value, b: Value,
                     want_vectors: bool = True) -> tuple[Value, Value | None]:
    """``(w, V)`` of ``A v = w B v`` for symmetric ``a`` and symmetric
    positive definite ``b`` (``(..., n, n)`` each, float, both triangles
    set; batch dims broadcast) by the Cholesky reduction of the module
    docstring (LAPACK ``sygst``): ``w`` ``(..., n)`` ascending, ``V``
    ``(..., n, n)`` with ``A V = B V diag(w)`` and ``V^T B V = I`` (None
    unless ``want_vectors``); all NaN for a matrix pair where ``b`` is not
    positive definite or either holds a NaN or Inf."""
    a, b = broadcast_batch(ctx, a, b, 2)
    factor = cholesky(ctx, b, lower=True)
    x = solve_triangular(ctx, factor, a, lower=True, unit_diagonal=False, b_ndim=2)  # L^-1 A
    reduced = solve_triangular(ctx, factor, matrix_transpose(ctx, x), lower=True, unit_diagonal=False, b_ndim=2)
    w, y = jacobi_eigh(ctx, symmetric_from_triangle(ctx, reduced, True), want_vectors)
    if y is None:
        return w, None
    return w, solve_triangular(ctx, matrix_transpose(ctx, factor), y, lower=False, unit_diagonal=False, b_ndim=2)


def _eigh_rule(ctx: LoweringContext, node, args: list[Value]) -> tuple[Value, ...]:
    op = getattr(node.op, "core_op", node.op)
    lower, want_vectors = _lower_flag(op), not isinstance(op, Eigvalsh)
    if len(args) == 2:
        a, b = float_args(ctx, node, args)
        w, v = generalized_eigh(ctx, symmetric_from_triangle(ctx, a, lower), symmetric_from_triangle(ctx, b, lower),
                                want_vectors)
    else:
        (a,) = float_args(ctx, node, args)
        w, v = jacobi_eigh(ctx, symmetric_from_triangle(ctx, a, lower), want_vectors)
    return (w,) if v is None else (w, v)


for _op in EIGH_OPS:
    BLOCKWISE_RULES[_op] = _eigh_rule


@lowers(*EIGH_OPS)
def lower_eigh(ctx: LoweringContext, node) -> list[Value]:
    """``Eigh`` / ``Eigvalsh`` of one matrix ``a`` (``(n, n)``) or of the
    generalized pair ``(a, b)`` (module docstring): ``w`` ``(n,)`` ascending
    and (``Eigh``) ``V`` ``(n, n)``, in the node's float dtype.

    Raises:
        Unsupported: an integer result dtype.
    """
    return list(_eigh_rule(ctx, node, [ctx.get(v) for v in node.inputs]))


if EighGrad is not None:
    @lowers(EighGrad)
    def lower_eigh_grad(ctx: LoweringContext, node) -> list[Value]:
        """2.38's ``EighGrad(x, w, v, W, V)``: the gradient of ``Eigh`` as its
        ``perform`` computes it (module docstring), in matrix form; float
        results only."""
        _, w, v, gw, gv = float_args(ctx, node, [ctx.get(x) for x in node.inputs])
        idx = positions(ctx, v)
        dt = ir_dtype(node.outputs[0])
        eye = ctx.add("eq", [unsq(ctx, idx, 1), idx])
        diff = ctx.add("sub", [unsq(ctx, w, 0), unsq(ctx, w, 1)])  # [m, n] = w_n - w_m
        f = ctx.add("where", [eye, ctx.scalar(0, dt), ctx.add("div", [ctx.scalar(1, dt), diff])])
        k = ctx.add("matmul", [matrix_transpose(ctx, v), gv])  # [m, n] = v_m . V_n
        inner = ctx.add("add", [ctx.add("where", [eye, unsq(ctx, gw, 1), ctx.scalar(0, dt)]),
                                matrix_transpose(ctx, ctx.add("mul", [f, k]))])
        g = ctx.add("matmul", [ctx.add("matmul", [v, inner]), matrix_transpose(ctx, v)])
        return [_fold_triangles(ctx, g, node.op.UPLO == "L")]


def _fold_triangles(ctx: LoweringContext, g: Value, lower: bool) -> Value:
    """``tri0(g) + tri1(g)^T`` of 2.38's gradient ops: the triangle the op
    reads (diagonal included) plus the transpose of the other one, strictly."""
    idx = positions(ctx, g)
    zero = ctx.scalar(0, g.dtype)
    below = ctx.add("ge" if lower else "le", [unsq(ctx, idx, 1), idx])
    strict = ctx.add("lt" if lower else "gt", [unsq(ctx, idx, 1), idx])
    return ctx.add("add", [ctx.add("where", [below, g, zero]),
                           matrix_transpose(ctx, ctx.add("where", [strict, g, zero]))])


if EigvalshGrad is not None:
    @lowers(EigvalshGrad)
    def lower_eigvalsh_grad(ctx: LoweringContext, node) -> list[Value]:
        """2.38's ``EigvalshGrad{lower}(a, b, gw)`` (``(n, n)``, ``(n, n)``,
        ``(n,)``): ``(gA, gB)`` ``(n, n)`` each, as its ``perform``: ``V, w``
        of the generalized problem (module docstring), ``gA = V diag(gw)
        V^T``, ``gB = -V diag(gw w) V^T``, each ``tri0 + tri1^T``; float
        results only.

        Raises:
            Unsupported: an integer result dtype.
        """
        a, b, gw = float_args(ctx, node, [ctx.get(x) for x in node.inputs])
        lower = node.op.lower
        w, v = generalized_eigh(ctx, symmetric_from_triangle(ctx, a, lower), symmetric_from_triangle(ctx, b, lower))
        vt = matrix_transpose(ctx, v)
        ga = ctx.add("matmul", [ctx.add("mul", [v, unsq(ctx, gw, 0)]), vt])
        gb = ctx.add("neg", [ctx.add("matmul", [ctx.add("mul", [v, unsq(ctx, ctx.add("mul", [gw, w]), 0)]), vt])])
        return [_fold_triangles(ctx, ga, lower), _fold_triangles(ctx, gb, lower)]
