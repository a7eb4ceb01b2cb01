"""The blocks of a real quasi-triangular Schur form ``T`` (``(..., n, n)``,
float; ``rules/schur.py`` computes it): their standardization, the
eigenvalues they hold and their reordering (``Schur{sort=...}``).

* ``standardize_blocks``: LAPACK ``dlanv2`` on every 2 x 2 block at once
  (upper triangular where the eigenvalues are real; ``a = d``, ``b c < 0``
  where they are a complex pair).
* ``reorder``: LAPACK ``dtrsen``'s reordering as ``dgees`` runs it for a
  ``sort`` (SciPy's ``schur(a, sort=...)``): the blocks whose eigenvalues
  the criterion selects (``"lhp"``: Re < 0, ``"rhp"``: Re >= 0, ``"iuc"``:
  ``|lambda| <= 1``, ``"ouc"``: ``|lambda| > 1``, evaluated once on the
  unsorted form, both eigenvalues of a pair alike) move to the top
  left, each kept in order, by swaps of adjacent blocks (``dtrexc``).
  One ONNX ``Loop`` iteration swaps, in every matrix, the first
  unselected block that a selected block follows: the same sequence of
  swaps as ``dtrsen``'s, which moves each selected block up past the
  unselected ones before it. A swap is LAPACK ``dlaexc``:

  - two 1 x 1 blocks: the Givens rotation ``dlartg(t12, t22 - t11)``,
    ``t11`` and ``t22`` exchanged exactly, ``t12`` kept;
  - otherwise the Sylvester equation ``T11 X - X T22 = T12`` of the
    ``(n1, n2)`` window (``dlasy2``: here the ``n1 n2 <= 4`` unknowns by
    Gaussian elimination with partial pivoting, pivots below
    ``smin = max(eps max|D|, tiny/eps)`` raised to ``smin`` as
    ``dlasy2`` does; ``dlasy2`` pivots completely and scales against
    overflow, which is not done), then one or two Householder reflectors
    (``dlarfg``) of ``[-X; I]`` as ``dlaexc`` forms them, applied from
    both sides; the swap is rejected, as ``dlaexc``'s weak stability
    test does, where the transformed window's new lower-left block (or the
    moved 1 x 1 block's value) is off by more than
    ``max(10 eps max|D|, tiny/eps)``; a rejected swap makes the matrix's
    ``T`` and ``Z`` all NaN, as PyTensor's ``perform`` returns for
    ``gees``' ``info = n + 1``. The new 2 x 2 blocks are standardized by
    ``dlanv2`` (``standardize_blocks``).

  The transformations are applied to the whole matrices (``G^T T G``,
  ``Z G`` with ``G`` the identity outside the window), which in exact
  arithmetic is LAPACK's ranged application: the entries outside the
  window's rows and columns it leaves exactly unchanged. Then the entries
  below the new block structure are set to exact zeros (``dlaexc`` does
  the same). Not done: ``gees``' ``info = n + 2`` (rounding changed which
  eigenvalues the criterion selects after the reordering) is not
  detected, and an eigenvalue on the criterion's boundary (a zero real
  part, a modulus of 1) may be selected differently from LAPACK's, whose
  ``T`` differs by rounding.
"""

from __future__ import annotations

import numpy as np

from compiler.lowering.bodies import Body
from compiler.lowering.context import LoweringContext
from compiler.lowering.rules.decompositions import matrix_transpose
from compiler.lowering.rules.matrix_loops import diagonal, positions, size_of, unsq
from compiler.lowering.rules.qr import householder_vector
from compiler.lowering.rules.scalar_ops import shape_of
from ir import DType, TensorType, Value

INT64 = DType.INT64
SORTS = ("lhp", "rhp", "iuc", "ouc")


def off_diagonal(c: LoweringContext, h: Value, idx: Value, offset: int) -> Value:
    """``s[k] = h[k, k + offset]`` (``(..., n)``; 0 where out of range), as
    ``diagonal`` reads (exact)."""
    at = c.add("eq", [idx, c.add("add", [unsq(c, idx, 1), c.scalar(offset, INT64)])])  # [k, j]: j == k + offset
    return c.add("reduce_sum", [c.add("where", [at, h, c.scalar(-0.0, h.dtype)])],
                 {"axes": [h.rank - 1], "keepdims": False})



def _sign(c: LoweringContext, x: Value) -> Value:
    """Fortran's ``SIGN(1, x)``: -1 where ``x < 0``, else 1."""
    return c.add("where", [c.add("lt", [x, c.scalar(0, x.dtype)]), c.scalar(-1, x.dtype), c.scalar(1, x.dtype)])


def standardize_blocks(ctx: LoweringContext, t: Value, z: Value) -> tuple[Value, Value]:
    """``dlanv2`` on every 2 x 2 block of the converged quasi-triangular
    ``t`` (its nonzero subdiagonal entries, isolated), all blocks at once:
    ``(G^T t G, z G)`` with ``G`` the block rotations ``[cs -sn; sn cs]``,
    then exact zeros below the diagonal of real blocks (and below the
    subdiagonal everywhere) and equal diagonals in complex blocks."""
    c = ctx
    dt = t.dtype
    nb = t.rank - 2
    idx = positions(c, t)
    rows, cols = unsq(c, idx, 1), idx
    one_i = c.scalar(1, INT64)
    zero, one, half = c.scalar(0, dt), c.scalar(1, dt), c.scalar(0.5, dt)
    eps = c.scalar(np.finfo(dt.numpy).eps, dt)
    prev = c.add("where", [c.add("ge", [idx, one_i]), c.add("sub", [idx, one_i]), c.scalar(0, INT64)])
    d = diagonal(c, t, idx)
    cc = off_diagonal(c, t, idx, -1)  # block k: rows k-1, k
    block = c.add("and", [c.add("ne", [cc, zero]), c.add("ge", [idx, one_i])])
    a = c.add("gather", [d, prev], {"axis": nb})
    b = c.add("gather", [off_diagonal(c, t, idx, 1), prev], {"axis": nb})  # t[k-1, k]
    safe_c = c.add("where", [block, cc, one])
    # dlanv2's general branch
    temp = c.add("sub", [a, d])
    p = c.add("mul", [half, temp])
    ab, ac = c.add("abs", [b]), c.add("abs", [safe_c])
    bcmax = c.add("maximum", [ab, ac])
    bcmis = c.add("mul", [c.add("minimum", [ab, ac]), c.add("mul", [_sign(c, b), _sign(c, safe_c)])])
    scale = c.add("maximum", [c.add("abs", [p]), bcmax])
    scale = c.add("where", [c.add("gt", [scale, zero]), scale, one])
    zq = c.add("add", [c.add("mul", [c.add("div", [p, scale]), p]), c.add("mul", [c.add("div", [bcmax, scale]), bcmis])])
    real1 = c.add("ge", [zq, c.add("mul", [c.scalar(4, dt), eps])])
    zr = c.add("add", [p, c.add("mul", [_sign(c, p), c.add("mul", [c.add("sqrt", [scale]),
                                                                    c.add("sqrt", [c.add("abs", [zq])])])])])
    tau1 = c.add("sqrt", [c.add("add", [c.add("mul", [safe_c, safe_c]), c.add("mul", [zr, zr])])])
    tau1 = c.add("where", [c.add("gt", [tau1, zero]), tau1, one])
    cs1, sn1 = c.add("div", [zr, tau1]), c.add("div", [safe_c, tau1])
    sigma = c.add("add", [b, safe_c])
    tau2 = c.add("sqrt", [c.add("add", [c.add("mul", [sigma, sigma]), c.add("mul", [temp, temp])])])
    tau2 = c.add("where", [c.add("gt", [tau2, zero]), tau2, one])
    cs2 = c.add("sqrt", [c.add("mul", [half, c.add("add", [one, c.add("div", [c.add("abs", [sigma]), tau2])])])])
    sn2 = c.add("neg", [c.add("mul", [c.add("div", [p, c.add("mul", [tau2, cs2])]), _sign(c, sigma)])])
    aa = c.add("add", [c.add("mul", [a, cs2]), c.add("mul", [b, sn2])])
    bb = c.add("add", [c.add("mul", [c.add("neg", [a]), sn2]), c.add("mul", [b, cs2])])
    c2 = c.add("add", [c.add("mul", [safe_c, cs2]), c.add("mul", [d, sn2])])
    dd = c.add("add", [c.add("mul", [c.add("neg", [safe_c]), sn2]), c.add("mul", [d, cs2])])
    b3 = c.add("add", [c.add("mul", [bb, cs2]), c.add("mul", [dd, sn2])])
    c3 = c.add("add", [c.add("mul", [c.add("neg", [aa]), sn2]), c.add("mul", [c2, cs2])])
    same = c.add("eq", [_sign(c, b3), _sign(c, c3)])
    c3_nz, b3_nz = c.add("ne", [c3, zero]), c.add("ne", [b3, zero])
    split = c.add("and", [c3_nz, c.add("and", [b3_nz, same])])  # real after all: one more rotation
    sab, sac = c.add("sqrt", [c.add("abs", [b3])]), c.add("sqrt", [c.add("abs", [c3])])
    bc = c.add("abs", [c.add("add", [b3, c3])])
    tau3 = c.add("div", [one, c.add("sqrt", [c.add("where", [c.add("gt", [bc, zero]), bc, one])])])
    cs3, sn3 = c.add("mul", [sab, tau3]), c.add("mul", [sac, tau3])
    cs_split = c.add("sub", [c.add("mul", [cs2, cs3]), c.add("mul", [sn2, sn3])])
    sn_split = c.add("add", [c.add("mul", [cs2, sn3]), c.add("mul", [sn2, cs3])])
    swap = c.add("and", [c3_nz, c.add("invert", [b3_nz])])  # b = -c, c = 0: (cs, sn) <- (-sn, cs)
    cs_c = c.add("where", [split, cs_split, c.add("where", [swap, c.add("neg", [sn2]), cs2])])
    sn_c = c.add("where", [split, sn_split, c.add("where", [swap, cs2, sn2])])
    complex_c = c.add("and", [c3_nz, c.add("and", [b3_nz, c.add("invert", [same])])])
    # the special cases before it
    b_zero = c.add("eq", [b, zero])
    standard = c.add("and", [c.add("eq", [temp, zero]), c.add("ne", [_sign(c, b), _sign(c, safe_c)])])
    cs = c.add("where", [b_zero, zero, c.add("where", [standard, one, c.add("where", [real1, cs1, cs_c])])])
    sn = c.add("where", [b_zero, one, c.add("where", [standard, zero, c.add("where", [real1, sn1, sn_c])])])
    is_complex = c.add("and", [block, c.add("and", [c.add("invert", [b_zero]),
                                                    c.add("or", [standard, c.add("and", [c.add("invert", [real1]),
                                                                                         complex_c])])])])
    cs = c.add("where", [block, cs, one])
    sn = c.add("where", [block, sn, zero])
    # G: [k-1, k-1] = [k, k] = cs_k, [k-1, k] = -sn_k, [k, k-1] = sn_k for each block k
    not_last = c.add("lt", [idx, c.add("sub", [size_of(c, t), one_i])])
    nxt = c.add("where", [not_last, c.add("add", [idx, one_i]), idx])
    top = c.add("and", [c.add("gather", [block, nxt], {"axis": nb}), not_last])  # row i: a block's top
    g_diag = c.add("where", [block, cs, c.add("where", [top, c.add("gather", [cs, nxt], {"axis": nb}), one])])
    g_up = c.add("where", [top, c.add("neg", [c.add("gather", [sn, nxt], {"axis": nb})]), zero])  # [i, i+1]
    on_diag, on_sup, on_sub = (c.add("eq", [cols, rows]), c.add("eq", [cols, c.add("add", [rows, one_i])]),
                               c.add("eq", [cols, c.add("sub", [rows, one_i])]))
    g = c.add("where", [on_diag, unsq(c, g_diag, nb + 1),
                        c.add("where", [on_sup, unsq(c, g_up, nb + 1),
                                        c.add("where", [on_sub, unsq(c, sn, nb + 1), zero])])])
    t = c.add("matmul", [c.add("matmul", [matrix_transpose(c, g), t]), g])
    z = c.add("matmul", [z, g])
    # exact structure: zero below the diagonal but in complex blocks; equal diagonals there
    keep_sub = c.add("and", [on_sub, unsq(c, is_complex, nb + 1)])
    t = c.add("where", [c.add("or", [c.add("le", [rows, cols]), keep_sub]), t, zero])
    d_new = diagonal(c, t, idx)
    mean = c.add("mul", [half, c.add("add", [c.add("gather", [d_new, prev], {"axis": nb}), d_new])])
    pair_mean = c.add("where", [is_complex, mean, c.add("where", [c.add("and", [top, c.add("gather", [is_complex, nxt],
                                                                                                 {"axis": nb})]),
                                                                  c.add("gather", [mean, nxt], {"axis": nb}), d_new])])
    t = c.add("where", [on_diag, unsq(c, pair_mean, nb + 1), t])
    return t, z




# -- reading the blocks ---------------------------------------------------------
def pick(c: LoweringContext, v: Value, k: Value, idx: Value) -> Value:
    """``v[..., k]`` for a per-matrix index ``k`` (``(...,)``) of ``v``
    (``(..., n)``; ``idx`` its positions), exact: a masked sum (``or`` for
    bool); 0 (False) where ``k`` is out of range."""
    at = c.add("eq", [idx, unsq(c, k, k.rank)])
    if v.dtype == DType.BOOL:
        return c.add("reduce_any", [c.add("and", [at, v])], {"axes": [v.rank - 1], "keepdims": False})
    zero = c.scalar(-0.0 if v.dtype.is_float else 0, v.dtype)
    return c.add("reduce_sum", [c.add("where", [at, v, zero])], {"axes": [v.rank - 1], "keepdims": False})


def _structure(c: LoweringContext, t: Value, idx: Value, n: Value) -> tuple[Value, Value]:
    """``(in2, top2)`` (``(..., n)`` bool) of quasi-triangular ``t``:
    ``in2[k]``: rows ``k - 1, k`` are a 2 x 2 block (``t[k, k-1] != 0``);
    ``top2[k]``: row ``k`` is the top of one."""
    nb = t.rank - 2
    one_i = c.scalar(1, INT64)
    in2 = c.add("and", [c.add("ne", [off_diagonal(c, t, idx, -1), c.scalar(0, t.dtype)]),
                        c.add("ge", [idx, one_i])])
    not_last = c.add("lt", [idx, c.add("sub", [n, one_i])])
    nxt = c.add("where", [not_last, c.add("add", [idx, one_i]), idx])
    top2 = c.add("and", [c.add("gather", [in2, nxt], {"axis": nb}), not_last])
    return in2, top2


def _hypot(c: LoweringContext, x: Value, y: Value) -> Value:
    """``sqrt(x^2 + y^2)`` without overflow or underflow of the squares
    (``m sqrt(1 + (s/m)^2)``, ``m = max(|x|, |y|)``), within 1 ulp of NumPy's ``hypot``."""
    ax, ay = c.add("abs", [x]), c.add("abs", [y])
    big, small = c.add("maximum", [ax, ay]), c.add("minimum", [ax, ay])
    zero, one = c.scalar(0, x.dtype), c.scalar(1, x.dtype)
    safe = c.add("where", [c.add("gt", [big, zero]), big, one])
    q = c.add("div", [small, safe])
    return c.add("mul", [big, c.add("sqrt", [c.add("add", [one, c.add("mul", [q, q])])])])


def selected(c: LoweringContext, t: Value, sort: str) -> Value:
    """``(..., n)`` bool: the rows of the standardized quasi-triangular
    ``t`` whose eigenvalue the ``sort`` criterion (module docstring)
    selects; both rows of a 2 x 2 block alike. The eigenvalue of a row is
    ``t[k, k]`` and, in a block ``[a b; c a]``, ``a +- i sqrt|b| sqrt|c|``
    (``dlanv2``'s ``wi``, which ``gees`` hands to the criterion); False where
    it is NaN."""
    idx = positions(c, t)
    n = size_of(c, t)
    nb = t.rank - 2
    in2, top2 = _structure(c, t, idx, n)
    wr = diagonal(c, t, idx)
    if sort == "lhp":
        return c.add("lt", [wr, c.scalar(0, t.dtype)])
    if sort == "rhp":
        return c.add("ge", [wr, c.scalar(0, t.dtype)])
    one_i = c.scalar(1, INT64)
    last = c.add("sub", [n, one_i])
    up = off_diagonal(c, t, idx, 1)  # t[k, k+1]
    down = off_diagonal(c, t, idx, -1)  # t[k, k-1]
    nxt = c.add("where", [c.add("lt", [idx, last]), c.add("add", [idx, one_i]), idx])
    prv = c.add("where", [c.add("ge", [idx, one_i]), c.add("sub", [idx, one_i]), idx])

    def root_abs(x: Value) -> Value:
        return c.add("sqrt", [c.add("abs", [x])])

    wi_top = c.add("mul", [root_abs(up), root_abs(c.add("gather", [down, nxt], {"axis": nb}))])
    wi_bottom = c.add("mul", [root_abs(c.add("gather", [up, prv], {"axis": nb})), root_abs(down)])
    wi = c.add("where", [top2, wi_top, c.add("where", [in2, wi_bottom, c.scalar(0, t.dtype)])])
    modulus = _hypot(c, wr, wi)
    one = c.scalar(1, t.dtype)
    return c.add("le", [modulus, one]) if sort == "iuc" else c.add("gt", [modulus, one])


# -- one swap of adjacent blocks (dlaexc) ----------------------------------------------
_CASES = ((1, 2), (2, 1), (2, 2))  # (n1, n2) of the swaps through the Sylvester equation


def _kronecker_maps(n1: int, n2: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Static maps building ``K vec(X) = vec(T12)``, ``K = I ⊗ T11 - T22^T ⊗ I``
    (``vec`` column-major: unknown ``p = a + n1 b``), from the window ``D``
    (``(4, 4)`` flattened row-major: ``D[i, j]`` at ``4 i + j``; ``T11 =
    D[:n1, :n1]``, ``T12 = D[:n1, n1:]``, ``T22 = D[n1:, n1:]``), padded
    to 4 unknowns with identity rows. Returns ``(idx (2, 4, 4), coef (2, 4,
    4), pad (4, 4), rhs_idx (4,), rhs_mask (4,))``:
    ``K = sum_t coef[t] * D_flat[idx[t]] + pad``, ``rhs = D_flat[rhs_idx] * rhs_mask``."""
    idx, coef = np.zeros((2, 4, 4), np.int64), np.zeros((2, 4, 4))
    pad, rhs_idx, rhs_mask = np.eye(4), np.zeros(4, np.int64), np.zeros(4)
    m = n1 * n2
    pad[:m, :m] = 0
    for a in range(n1):
        for b in range(n2):
            p = a + n1 * b
            rhs_idx[p], rhs_mask[p] = 4 * a + n1 + b, 1.0
            for k in range(n1):  # (T11 X)[a, b] = sum_k T11[a, k] X[k, b]
                idx[0, p, k + n1 * b], coef[0, p, k + n1 * b] = 4 * a + k, 1.0
            for d in range(n2):  # (X T22)[a, b] = sum_d X[a, d] T22[d, b]
                idx[1, p, a + n1 * d], coef[1, p, a + n1 * d] = 4 * (n1 + d) + n1 + b, -1.0
    return idx, coef, pad, rhs_idx, rhs_mask


def _solve4(c: LoweringContext, k: Value, y: Value, smin: Value) -> Value:
    """``x`` (``(..., 4)``) with ``k x = y`` (``k`` ``(..., 4, 4)``): Gaussian
    elimination with partial pivoting, unrolled; a pivot of magnitude below
    ``smin`` (``(..., 1)``) is replaced by ``smin`` (``dlasy2``'s perturbation of
    a nearly singular system)."""
    dt = k.dtype
    r4 = c.i64(list(range(4)))
    zero = c.scalar(0, dt)
    for j in range(4):
        col = c.add("gather", [k, c.i64(j)], {"axis": k.rank - 1})  # (..., 4)
        cand = c.add("where", [c.add("ge", [r4, c.i64(j)]), c.add("abs", [col]), c.scalar(-1, dt)])
        p = c.add("argmax", [cand], {"axis": k.rank - 2, "keepdims": True})  # (..., 1)
        is_p = c.add("eq", [r4, p])  # (..., 4)
        is_j = c.add("eq", [r4, c.i64(j)])
        row_j = unsq(c, c.add("gather", [k, c.i64(j)], {"axis": k.rank - 2}), k.rank - 2)  # (..., 1, 4)
        row_p = c.add("reduce_sum", [c.add("where", [unsq(c, is_p, k.rank - 1), k, zero])],
                      {"axes": [k.rank - 2], "keepdims": True})
        k = c.add("where", [unsq(c, is_j, 1), row_p, c.add("where", [unsq(c, is_p, k.rank - 1), row_j, k])])
        y_j, y_p = c.add("gather", [y, c.i64([j])], {"axis": y.rank - 1}), \
            c.add("reduce_sum", [c.add("where", [is_p, y, zero])], {"axes": [y.rank - 1], "keepdims": True})
        y = c.add("where", [is_j, y_p, c.add("where", [is_p, y_j, y])])
        piv = c.add("gather", [row_p, c.i64([j])], {"axis": k.rank - 1})  # (..., 1, 1)
        piv = c.add("where", [c.add("lt", [c.add("abs", [piv]), unsq(c, smin, smin.rank)]), unsq(c, smin, smin.rank), piv])
        k = c.add("where", [c.add("and", [unsq(c, is_j, 1), c.add("eq", [r4, c.i64(j)])]), piv, k])
        below = c.add("gt", [r4, c.i64(j)])
        l = c.add("where", [below, c.add("div", [c.add("gather", [k, c.i64(j)], {"axis": k.rank - 1}),
                                                  c.add("squeeze", [piv], {"axes": [k.rank - 1]})]), zero])  # (..., 4)
        k = c.add("where", [unsq(c, below, 1), c.add("sub", [k, c.add("mul", [unsq(c, l, l.rank), row_p])]), k])
        y = c.add("sub", [y, c.add("mul", [l, y_p])])
    xs: list[Value | None] = [None] * 4
    for j in reversed(range(4)):
        acc = c.add("gather", [y, c.i64([j])], {"axis": y.rank - 1})  # (..., 1)
        row_j = c.add("gather", [k, c.i64(j)], {"axis": k.rank - 2})  # (..., 4)
        for q in range(j + 1, 4):
            acc = c.add("sub", [acc, c.add("mul", [c.add("gather", [row_j, c.i64([q])], {"axis": row_j.rank - 1}),
                                                   xs[q]])])
        xs[j] = c.add("div", [acc, c.add("gather", [row_j, c.i64([j])], {"axis": row_j.rank - 1})])
    return c.add("concat", xs, {"axis": y.rank - 1})


def _window_matrix(c: LoweringContext, w: Value, e: Value, eye_n: Value, in_window: Value) -> Value:
    """The ``(..., n, n)`` matrix equal to ``w`` (``(..., 4, 4)``) on the
    window's rows and columns (``e``: ``(..., 4, n)`` one-hot rows of the
    window, ``in_window`` ``(..., n, n)`` its mask) and to the identity
    elsewhere; exact (one-hot products)."""
    placed = c.add("matmul", [c.add("matmul", [matrix_transpose(c, e), w]), e])
    return c.add("where", [in_window, placed, eye_n])


def _reflector3(c: LoweringContext, alpha: Value, rest: Value, at_first: bool) -> tuple[Value, Value]:
    """``dlarfg(3, alpha, x)`` on the 3-vector with ``alpha`` (``(..., 1)``)
    at position 2 (``at_first=False``) or 0 and ``rest`` (``(..., 3)``, zero at
    alpha's position): ``(v, tau)``, ``v`` ``(..., 3)`` with 1 at alpha's position."""
    r3 = c.i64([0, 1, 2])
    at = c.add("eq", [r3, c.i64(0 if at_first else 2)])
    v, tau, _, _ = householder_vector(c, alpha, rest, at, c.add("invert", [at]))
    return v, tau


def _dlartg(c: LoweringContext, f: Value, g: Value) -> tuple[Value, Value]:
    """``(cs, sn)`` of LAPACK ``dlartg(f, g)`` (3.10's branches, without its
    scaling against overflow): ``[cs sn; -sn cs] [f; g] = [r; 0]``, ``cs >= 0``."""
    zero, one = c.scalar(0, f.dtype), c.scalar(1, f.dtype)
    d = _hypot(c, f, g)
    safe_d = c.add("where", [c.add("gt", [d, zero]), d, one])
    r = c.add("where", [c.add("lt", [f, zero]), c.add("neg", [safe_d]), safe_d])  # sign(d, f)
    cs = c.add("div", [c.add("abs", [f]), safe_d])
    sn = c.add("div", [g, r])
    g0, f0 = c.add("eq", [g, zero]), c.add("eq", [f, zero])
    sign_g = c.add("where", [c.add("lt", [g, zero]), c.scalar(-1, f.dtype), one])
    cs = c.add("where", [g0, one, c.add("where", [f0, zero, cs])])
    sn = c.add("where", [g0, zero, c.add("where", [f0, sign_g, sn])])
    return cs, sn


def _swap_step(c: LoweringContext, t: Value, z: Value, sel: Value, failed: Value, idx: Value,
               n: Value) -> tuple[Value, Value, Value, Value, Value]:
    """One ``dtrsen`` swap in every matrix that still needs one (module
    docstring): ``(t, z, sel, failed, active)`` after it, ``active``
    (``(...,)`` bool) where a swap was attempted."""
    dt = t.dtype
    nb = t.rank - 2
    zero, one = c.scalar(0, dt), c.scalar(1, dt)
    eps, tiny = np.finfo(dt.numpy).eps, np.finfo(dt.numpy).tiny
    one_i = c.scalar(1, INT64)
    rows, cols = unsq(c, idx, 1), idx

    def lift(x: Value) -> Value:  # (...,) -> (..., 1, 1)
        return unsq(c, unsq(c, x, nb), nb + 1)

    # the first unselected block followed by a selected one
    in2, top2 = _structure(c, t, idx, n)
    size = c.add("add", [one_i, c.cast(top2, INT64)])
    last = c.add("sub", [n, one_i])
    after1 = c.add("gather", [sel, c.add("minimum", [c.add("add", [idx, one_i]), last])], {"axis": nb})
    after2 = c.add("gather", [sel, c.add("minimum", [c.add("add", [idx, c.scalar(2, INT64)]), last])], {"axis": nb})
    follows = c.add("and", [c.add("where", [top2, after2, after1]), c.add("lt", [c.add("add", [idx, size]), n])])
    inversion = c.add("and", [c.add("and", [c.add("invert", [in2]), c.add("invert", [sel])]), follows])
    j1 = c.add("reduce_min", [c.add("where", [inversion, idx, n])], {"axes": [nb], "keepdims": False})
    active = c.add("and", [c.add("lt", [j1, n]), c.add("invert", [failed])])
    n1 = pick(c, size, j1, idx)
    n2 = pick(c, size, c.add("add", [j1, n1]), idx)
    nd = c.add("add", [n1, n2])

    # the window D = t[j1:j1+nd, j1:j1+nd], padded with zeros to 4 x 4
    a4 = unsq(c, c.i64(list(range(4))), 1)  # (4, 1)
    e_mask = c.add("and", [c.add("eq", [cols, c.add("add", [lift(j1), a4])]), c.add("lt", [a4, lift(nd)])])
    e = c.cast(c.add("and", [e_mask, lift(active)]), dt)  # (..., 4, n); no window where inactive
    et = matrix_transpose(c, e)
    d = c.add("matmul", [c.add("matmul", [e, t]), et])  # (..., 4, 4)
    dnorm = c.add("reduce_max", [c.add("abs", [d])], {"axes": [nb, nb + 1], "keepdims": False})
    small = c.scalar(tiny / eps, dt)
    thresh = c.add("maximum", [c.add("mul", [c.scalar(10 * eps, dt), dnorm]), small])  # (...,)
    smin = unsq(c, c.add("maximum", [c.add("mul", [c.scalar(eps, dt), dnorm]), small]), nb)  # (..., 1)

    def entry(m: Value, i: int, j: int) -> Value:  # (..., 4, 4) -> (..., 1)
        return c.add("gather", [c.add("gather", [m, c.i64(i)], {"axis": nb}), c.i64([j])], {"axis": nb})

    case = {(p, q): c.add("and", [c.add("eq", [n1, c.scalar(p, INT64)]), c.add("eq", [n2, c.scalar(q, INT64)])])
            for p, q in ((1, 1), *_CASES)}

    # the Sylvester equation T11 X - X T22 = T12 (dlasy2) for the cases through reflectors
    batch = c.add("slice", [shape_of(c, d), c.i64([0]), c.i64([nb]), c.i64([1])], {"axes": [0]})
    d_flat = c.add("reshape", [d, c.add("concat", [batch, c.i64([16])], {"axis": 0})])
    k_sys = rhs = None
    for p, q in _CASES:
        idx_t, coef, pad, rhs_idx, rhs_mask = _kronecker_maps(p, q)
        k_case = c.const(pad, dt)
        for term in range(2):
            k_case = c.add("add", [k_case, c.add("mul", [c.const(coef[term], dt),
                                                          c.add("gather", [d_flat, c.i64(idx_t[term])], {"axis": nb})])])
        rhs_case = c.add("mul", [c.const(rhs_mask, dt), c.add("gather", [d_flat, c.i64(rhs_idx)], {"axis": nb})])
        where = case[(p, q)]
        k_sys = k_case if k_sys is None else c.add("where", [lift(where), k_case, k_sys])
        rhs = rhs_case if rhs is None else c.add("where", [unsq(c, where, nb), rhs_case, rhs])
    x = _solve4(c, k_sys, rhs, smin)  # (..., 4): X[a, b] at a + n1 b

    def xs(i: int) -> Value:
        return c.add("gather", [x, c.i64([i])], {"axis": nb})  # (..., 1)

    def vec3(*parts: Value) -> Value:
        return c.add("concat", list(parts), {"axis": nb})

    zero1 = c.add("expand", [zero, c.add("concat", [batch, c.i64([1])], {"axis": 0})])  # (..., 1)
    one1 = c.add("expand", [one, c.add("concat", [batch, c.i64([1])], {"axis": 0})])
    # n1 = 1, n2 = 2: u = (1, X11, X12), reflected into its last entry
    v12, tau12 = _reflector3(c, xs(1), vec3(one1, xs(0), zero1), at_first=False)
    # n1 = 2: u = (-X11, -X21, 1), reflected into its first entry
    v2x, tau2x = _reflector3(c, c.add("neg", [xs(0)]), vec3(zero1, c.add("neg", [xs(1)]), one1), at_first=True)
    # n1 = n2 = 2: the second reflector on rows 2..4 of the window
    v1 = c.add("gather", [v2x, c.i64([1])], {"axis": nb})
    v2 = c.add("gather", [v2x, c.i64([2])], {"axis": nb})
    temp = c.add("neg", [c.add("mul", [tau2x, c.add("add", [xs(2), c.add("mul", [v1, xs(3)])])])])
    alpha = c.add("sub", [c.add("neg", [c.add("mul", [temp, v1])]), xs(3)])
    w2, tau22 = _reflector3(c, alpha, vec3(zero1, c.add("neg", [c.add("mul", [temp, v2])]), one1), at_first=True)

    eye4 = c.const(np.eye(4), dt)

    def reflector4(v: Value, tau: Value, offset: int) -> Value:  # I - tau v v^T on window rows offset..offset+2
        v4 = c.add("concat", ([zero1] * offset) + [v] + ([zero1] * (1 - offset)), {"axis": nb})
        outer = c.add("mul", [unsq(c, v4, nb + 1), unsq(c, v4, nb)])
        return c.add("sub", [eye4, c.add("mul", [unsq(c, tau, nb), outer])])

    h12 = reflector4(v12, tau12, 0)
    h2x = reflector4(v2x, tau2x, 0)
    h22 = c.add("matmul", [h2x, reflector4(w2, tau22, 1)])
    # n1 = n2 = 1: dlartg(t12, t22 - t11); window [cs -sn; sn cs]
    t11, t12, t22 = entry(d, 0, 0), entry(d, 0, 1), entry(d, 1, 1)
    cs, sn = _dlartg(c, t12, c.add("sub", [t22, t11]))
    rot = c.add("concat", [c.add("concat", [cs, c.add("neg", [sn]), zero1, zero1], {"axis": nb}),
                           c.add("concat", [sn, cs, zero1, zero1], {"axis": nb}),
                           c.add("concat", [zero1, zero1, one1, zero1], {"axis": nb}),
                           c.add("concat", [zero1, zero1, zero1, one1], {"axis": nb})], {"axis": nb})
    rot = c.add("reshape", [rot, c.add("concat", [batch, c.i64([4, 4])], {"axis": 0})])
    gw = c.add("where", [lift(case[(1, 1)]), rot, c.add("where", [lift(case[(1, 2)]), h12,
                                                              c.add("where", [lift(case[(2, 1)]), h2x, h22])])])
    in_rows = c.add("reduce_max", [e], {"axes": [nb], "keepdims": False})  # (..., n): 1 on the window
    on_window = c.add("gt", [in_rows, zero])
    in_window = c.add("and", [unsq(c, on_window, nb + 1), unsq(c, on_window, nb)])  # (..., n, n)
    eye_n = c.add("eq", [rows, cols])
    g = _window_matrix(c, gw, e, c.cast(eye_n, dt), in_window)
    t_new = c.add("matmul", [c.add("matmul", [matrix_transpose(c, g), t]), g])
    z_new = c.add("matmul", [z, g])

    # dlaexc's weak stability test on the transformed window
    d_new = c.add("matmul", [c.add("matmul", [e, t_new]), et])
    r4 = c.i64(list(range(4)))
    lower_left = c.add("and", [c.add("and", [c.add("ge", [unsq(c, r4, 1), lift(n2)]), c.add("lt", [unsq(c, r4, 1), lift(nd)])]),
                               c.add("lt", [r4, lift(n2)])])
    off = c.add("reduce_max", [c.add("where", [lower_left, c.add("abs", [d_new]), zero])], {"axes": [nb, nb + 1],
                                                                                        "keepdims": False})
    last_new = entry(d_new, 0, 0)
    diag_at = c.add("eq", [unsq(c, r4, 1), c.add("sub", [lift(nd), c.scalar(1, INT64)])])
    diag_at = c.add("and", [diag_at, c.add("eq", [r4, c.add("sub", [lift(nd), c.scalar(1, INT64)])])])

    def at_mask(m: Value, mask: Value) -> Value:  # (..., 4, 4) entry where mask -> (...,)
        return c.add("reduce_sum", [c.add("where", [mask, m, c.scalar(-0.0, dt)])], {"axes": [nb, nb + 1],
                                                                                    "keepdims": False})

    t_first = c.add("squeeze", [t11], {"axes": [nb]})  # old window's first diagonal entry
    t_last = at_mask(d, diag_at)  # old window's last diagonal entry
    moved_first = c.add("abs", [c.add("sub", [at_mask(d_new, diag_at), t_first])])  # n1 = 1: t11 now last
    moved_last = c.add("abs", [c.add("sub", [c.add("squeeze", [last_new], {"axes": [nb]}), t_last])])  # n2 = 1
    n1_is_1, n2_is_1 = c.add("eq", [n1, one_i]), c.add("eq", [n2, one_i])
    off = c.add("maximum", [off, c.add("where", [n1_is_1, moved_first, zero])])
    off = c.add("maximum", [off, c.add("where", [n2_is_1, moved_last, zero])])
    reject = c.add("and", [c.add("and", [active, c.add("invert", [case[(1, 1)]])]), c.add("gt", [off, thresh])])
    reject = c.add("or", [reject, c.add("and", [active, c.add("ne", [off, off])])])  # NaN: reject
    accept = c.add("and", [active, c.add("invert", [reject])])

    # exact structure: zeros below the new blocks; the moved 1 x 1 values; t12 of a 1 x 1 pair kept
    in_range = c.add("and", [c.add("ge", [idx, unsq(c, j1, nb)]), c.add("lt", [idx, unsq(c, c.add("add", [j1, nd]), nb)])])
    new_top = c.add("or", [c.add("and", [c.add("eq", [idx, unsq(c, j1, nb)]), unsq(c, c.add("eq", [n2, c.scalar(2, INT64)]), nb)]),
                           c.add("and", [c.add("eq", [idx, unsq(c, c.add("add", [j1, n2]), nb)]),
                                         unsq(c, c.add("eq", [n1, c.scalar(2, INT64)]), nb)])])
    top_after = c.add("where", [in_range, new_top, top2])  # (..., n)
    keep_sub = c.add("and", [c.add("eq", [rows, c.add("add", [cols, one_i])]), unsq(c, top_after, nb)])  # [k+1, k]
    t_new = c.add("where", [c.add("or", [c.add("le", [rows, cols]), keep_sub]), t_new, zero])
    at_j1 = c.add("eq", [rows, lift(j1)])
    pos_first = c.add("and", [at_j1, c.add("eq", [cols, lift(j1)])])
    pos_moved = c.add("and", [c.add("eq", [rows, lift(c.add("add", [j1, n2]))]), c.add("eq", [cols, lift(c.add("add", [j1, n2]))])])
    t_new = c.add("where", [c.add("and", [pos_moved, lift(n1_is_1)]), lift(t_first), t_new])
    t_new = c.add("where", [c.add("and", [pos_first, lift(n2_is_1)]), lift(t_last), t_new])
    pos_12 = c.add("and", [at_j1, c.add("eq", [cols, lift(c.add("add", [j1, one_i]))])])
    t_new = c.add("where", [c.add("and", [pos_12, lift(case[(1, 1)])]), unsq(c, t12, nb), t_new])
    t_new, z_new = standardize_blocks(c, t_new, z_new)

    take = lift(accept)
    t = c.add("where", [take, t_new, t])
    z = c.add("where", [take, z_new, z])
    moved_up = c.add("lt", [idx, unsq(c, c.add("add", [j1, n2]), nb)])
    sel = c.add("where", [c.add("and", [in_range, unsq(c, accept, nb)]), moved_up, sel])
    return t, z, sel, c.add("or", [failed, reject]), active


def reorder(ctx: LoweringContext, t: Value, z: Value, ok: Value, sort: str) -> tuple[Value, Value, Value]:
    """``dtrsen``'s reordering of the standardized real Schur form ``(t, z)``
    (``(..., n, n)``) for the ``sort`` criterion (module docstring): ``(T, Z,
    ok)`` with ``ok`` (``(...,)`` bool) false where a swap was rejected or
    was already false (matrices not ``ok`` are not reordered).

    Raises:
        ValueError: ``sort`` not one of ``SORTS``.
    """
    if sort not in SORTS:
        raise ValueError(f"sort must be one of {SORTS}, got {sort!r}")
    idx = positions(ctx, t)
    n = size_of(ctx, t)
    sel = selected(ctx, t, sort)
    failed = ctx.add("invert", [ok])
    trips = ctx.add("add", [ctx.add("mul", [n, n]), ctx.scalar(1, INT64)])  # at most n^2 / 4 swaps

    body = Body(ctx, "schur_sort")
    c = body.ctx
    body.input(TensorType(INT64, ()), "k")
    carried = [t, z, sel, failed]
    bt, bz, bsel, bfailed = [body.input(v.type, name) for v, name in zip(carried, ("t", "z", "sel", "failed"))]
    r_idx, r_n = body.input(idx.type, "idx"), body.input(n.type, "n")
    nt, nz, nsel, nfailed, active = _swap_step(c, bt, bz, bsel, bfailed, r_idx, r_n)
    more = c.add("reduce_any", [active], {"axes": list(range(active.rank)), "keepdims": False}) \
        if active.rank else active
    graph = body.finish([more, nt, nz, nsel, nfailed])
    loop = ctx.graph.create_node("loop", [trips, *carried, idx, n],
                                 {"num_carried": len(carried), "has_condition": True}, subgraphs={"body": graph})
    loop.origins = ctx.origins
    ctx.graph.append(loop)
    t_out, z_out, _, failed_out = loop.outputs[:4]
    return t_out, z_out, ctx.add("invert", [failed_out])
