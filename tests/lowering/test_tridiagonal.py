"""PyTensor 3's tridiagonal LU ops (``rules/tridiagonal.py``):
``LUFactorTridiagonal`` against LAPACK ``dgttrf``/``sgttrf`` and
``SolveLUFactorTridiagonal`` against ``dgttrs``/``sgttrs`` (both ``trans``),
float64 and float32, static sizes (the loops unrolled) and symbolic ones (ONNX
Loops), batched ``Blockwise`` forms with broadcast batch dims, n = 1 and 2,
zero pivots and NaN, PyTensor's own evaluation (``check_pytensor``) and a
default-mode ``pytensor.function`` whose rewrites split ``solve(a, b,
assume_a="tridiagonal")`` into these ops. PyTensor 2.38 has no such ops: the
module is skipped there."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.linalg
from scipy.linalg import lapack

tridiagonal = pytest.importorskip("pytensor.tensor.linalg.solvers.tridiagonal")  # PyTensor 3 only

from pytensor.tensor.blockwise import Blockwise  # noqa: E402

from compiler import compile_to_onnx  # noqa: E402
from compiler.lowering.errors import UnsupportedOpsError  # noqa: E402
from tests.helpers import check_pytensor  # noqa: E402

LUFactorTridiagonal = tridiagonal.LUFactorTridiagonal
SolveLUFactorTridiagonal = tridiagonal.SolveLUFactorTridiagonal
RNG = np.random.default_rng(30)


def diagonals(n, dtype="float64", batch=()):
    """Random ``(dl, d, du)`` whose elimination interchanges rows at the
    first step and at about half the others (``|d| < |dl|`` there)."""
    dl = RNG.normal(size=batch + (n - 1,))
    d = RNG.normal(size=batch + (n,)) * np.where(RNG.random(size=batch + (n,)) < 0.5, 0.1, 3.0)
    du = RNG.normal(size=batch + (n - 1,))
    if n > 1:
        d[..., 0], dl[..., 0] = 0.05, 2.0  # the first step always interchanges
    return [x.astype(dtype) for x in (dl, d, du)]


def dense(dl, d, du):
    return np.diag(dl, -1) + np.diag(d) + np.diag(du, 1)


def lapack_gttrf(dl, d, du):
    return lapack.get_lapack_funcs("gttrf", dtype=d.dtype)(dl, d, du)[:5]


def lapack_gttrs(factors, b, transposed):
    x, info = lapack.get_lapack_funcs("gttrs", dtype=b.dtype)(*factors, b, trans="T" if transposed else "N")
    assert info == 0
    return x


def assert_factors_equal(got, want):
    """Pivots exact, dtypes equal, factors within 4 eps of LAPACK's relative
    to the largest entry of each (NaN where LAPACK's are NaN)."""
    eps = np.finfo(want[1].dtype).eps
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        if w.dtype.kind == "i":
            np.testing.assert_array_equal(g, w)
        else:
            scale = np.max(np.abs(w[np.isfinite(w)]), initial=1.0)
            np.testing.assert_allclose(g, w, rtol=4 * eps, atol=4 * eps * scale, equal_nan=True)


def vectors(n, dtype, batch=()):
    k = None if n is None else n - 1
    return (pt.tensor("dl", dtype=dtype, shape=batch + (k,)), pt.tensor("d", dtype=dtype, shape=batch + (n,)),
            pt.tensor("du", dtype=dtype, shape=batch + (k,)))


@pytest.mark.parametrize("n", [3, 7, None])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_factor_and_solves_match_lapack(n, dtype):
    """gttrf's five outputs and gttrs's N and T solves of a vector and a
    matrix right-hand side, against SciPy's LAPACK on the same inputs."""
    dl, d, du = vectors(n, dtype)
    b1, b2 = pt.tensor("b1", dtype=dtype, shape=(n,)), pt.tensor("b2", dtype=dtype, shape=(n, 3))
    factors = LUFactorTridiagonal()(dl, d, du)
    solves = [SolveLUFactorTridiagonal(b_ndim=b.ndim, transposed=t)(*factors, b) for b in (b1, b2)
              for t in (False, True)]
    compiled = compile_to_onnx([dl, d, du, b1, b2], outputs=[*factors, *solves])
    assert compiled.ir.contains_op("loop") == (n is None)
    eps = np.finfo(dtype).eps
    size = 7 if n is None else n
    for _ in range(3):
        values = diagonals(size, dtype)
        rhs = [RNG.normal(size=(size,)).astype(dtype), RNG.normal(size=(size, 3)).astype(dtype)]
        got = compiled.run(*values, *rhs)
        want = lapack_gttrf(*values)
        assert_factors_equal(got[:5], want)
        assert not (want[4] == np.arange(1, size + 1)).all()  # rows were interchanged
        a = dense(*values).astype(np.float64)
        for k, (b, t) in enumerate([(b, t) for b in rhs for t in (False, True)]):
            x = got[5 + k]
            assert x.dtype == np.dtype(dtype) and x.shape == b.shape
            np.testing.assert_allclose(x, lapack_gttrs(want, b, t), rtol=0, atol=64 * eps * np.abs(x).max())
            exact = np.linalg.solve(a.T if t else a, b.astype(np.float64))
            assert np.abs(x - exact).max() <= 1e3 * eps * np.linalg.cond(a) * np.abs(exact).max()


def test_batched_blockwise_broadcasts_and_matches_pytensor():
    """Blockwise forms with batch dims broadcast between the diagonals and
    ``b``; checked against PyTensor's own evaluation (``perform``: SciPy's
    LAPACK) and element by element against LAPACK."""
    dl, d, du = (pt.tensor(name, shape=shape) for name, shape in
                 [("dl", (2, 1, 4)), ("d", (1, 3, 5)), ("du", (2, 3, 4))])
    b = pt.tensor("b", shape=(2, 1, 5, 2))
    factors = Blockwise(LUFactorTridiagonal())(dl, d, du)
    x = Blockwise(SolveLUFactorTridiagonal(b_ndim=2, transposed=False))(*factors, b)
    xt = Blockwise(SolveLUFactorTridiagonal(b_ndim=2, transposed=True))(*factors, b)
    values = [RNG.normal(size=(2, 1, 4)), RNG.normal(size=(1, 3, 5)) * 0.3, RNG.normal(size=(2, 3, 4)),
              RNG.normal(size=(2, 1, 5, 2))]
    compiled = check_pytensor([dl, d, du, b], [*factors, x, xt], values, rtol=1e-13)
    got = compiled.run(*values)
    full = [np.broadcast_to(v, (2, 3) + v.shape[2:]) for v in values]
    for i, j in np.ndindex(2, 3):
        want = lapack_gttrf(*(v[i, j] for v in full[:3]))
        assert_factors_equal([g[i, j] for g in got[:5]], want)
        for t, g in ((False, got[5]), (True, got[6])):
            np.testing.assert_allclose(g[i, j], lapack_gttrs(want, full[3][i, j], t), rtol=1e-14, atol=1e-14)


def test_symbolic_batch_float32_against_pytensor():
    dl, d, du = vectors(None, "float32", batch=(None,))
    b = pt.tensor("b", dtype="float32", shape=(None, None))
    out = Blockwise(LUFactorTridiagonal())(dl, d, du)
    x = tridiagonal.tridiagonal_lu_solve(out, b, b_ndim=1, transposed=True)
    values = [v.astype(np.float32) for v in diagonals(6, batch=(4,))] + [RNG.normal(size=(4, 6)).astype(np.float32)]
    check_pytensor([dl, d, du, b], [*out, x], values, rtol=1e-6)


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("static", [True, False])
def test_sizes_one_and_two(n, static):
    """``du2`` is empty; SciPy's f2py ``dgttrf`` wrapper refuses n <= 2
    (``unexpected array size``) and PyTensor's Numba kernel n = 1, so the
    reference is LAPACK's algorithm by hand: n = 1 is ``x = b / d``; n = 2
    interchanges when ``|d0| < |dl0|``. At a static n = 1 PyTensor types
    ``du2`` with length -1; the model returns what ``perform`` does, an
    empty ``du2``."""
    dl, d, du = vectors(n if static else None, "float64")
    b = pt.tensor("b", shape=(n if static else None, 2))
    factors = LUFactorTridiagonal()(dl, d, du)
    outs = [*factors, *(SolveLUFactorTridiagonal(b_ndim=2, transposed=t)(*factors, b) for t in (False, True))]
    compiled = compile_to_onnx([dl, d, du, b], outputs=outs)
    b_value = RNG.normal(size=(n, 2))
    if n == 1:
        got = compiled.run(np.zeros(0), np.array([4.0]), np.zeros(0), b_value)
        assert [g.shape for g in got[:5]] == [(0,), (1,), (0,), (0,), (1,)]
        assert got[1][0] == 4.0 and got[4].tolist() == [1] and got[4].dtype == np.int32
        np.testing.assert_array_equal(got[5], b_value / 4.0)
        np.testing.assert_array_equal(got[6], b_value / 4.0)
        return
    for dl_v, d_v, du_v, piv in [([3.0], [1.0, 2.0], [5.0], [2, 2]), ([0.5], [2.0, -1.0], [1.5], [1, 2]),
                                 ([2.0], [-2.0, 1.0], [1.0], [1, 2])]:  # a tie |d0| == |dl0|: no interchange
        dl_v, d_v, du_v = map(np.array, (dl_v, d_v, du_v))
        got = compiled.run(dl_v, d_v, du_v, b_value)
        assert got[3].shape == (0,) and got[4].tolist() == piv
        if piv[0] == 2:  # interchange: fact = d0/dl0, U = [[dl0, d1], [0, du0 - fact d1]]
            fact = d_v[0] / dl_v[0]
            want = [np.array([fact]), np.array([dl_v[0], du_v[0] - fact * d_v[1]]), np.array([d_v[1]])]
        else:
            fact = dl_v[0] / d_v[0]
            want = [np.array([fact]), np.array([d_v[0], d_v[1] - fact * du_v[0]]), du_v]
        for g, w in zip(got[:3], want):
            np.testing.assert_array_equal(g, w)
        a = dense(dl_v, d_v, du_v)
        np.testing.assert_allclose(got[5], np.linalg.solve(a, b_value), rtol=1e-14)
        np.testing.assert_allclose(got[6], np.linalg.solve(a.T, b_value), rtol=1e-14)


def test_zero_pivot_nan_and_inf_as_lapack():
    """A zero pivot (``info > 0``) leaves the factors as computed and the
    solve divides by it (Inf/NaN where LAPACK's are); a NaN on the diagonal
    takes the interchange branch (``|d| >= |dl|`` is false)."""
    dl, d, du = vectors(6, "float64")
    b = pt.tensor("b", shape=(6,))
    factors = LUFactorTridiagonal()(dl, d, du)
    outs = [*factors, *(SolveLUFactorTridiagonal(b_ndim=1, transposed=t)(*factors, b) for t in (False, True))]
    compiled = compile_to_onnx([dl, d, du, b], outputs=outs)
    cases = []
    values = diagonals(6)
    values[1][2], values[0][1:3] = 0.0, 0.0  # step 1 leaves d[2] == 0 and step 2 finds dl[2] == 0: info == 3
    values[1][:2] = [5.0, 5.0]
    cases.append(values)
    zero_everywhere = [np.zeros(5), np.zeros(6), np.ones(5)]
    cases.append(zero_everywhere)
    with_nan = diagonals(6)
    with_nan[1][3] = np.nan
    cases.append(with_nan)
    b_value = RNG.normal(size=6)
    for values in cases:
        got = compiled.run(*values, b_value)
        want = lapack.dgttrf(*values)
        assert_factors_equal(got[:5], want[:5])
        assert want[5] > 0 or np.isnan(values[1]).any()
        with np.errstate(all="ignore"):
            for t, x in ((False, got[5]), (True, got[6])):
                w = lapack.dgttrs(*want[:5], b_value, trans="T" if t else "N")[0]
                np.testing.assert_array_equal(np.isnan(x), np.isnan(w))
                np.testing.assert_array_equal(np.isinf(x), np.isinf(w))
                np.testing.assert_allclose(x[np.isfinite(w)], w[np.isfinite(w)], rtol=1e-13)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("batch", [(), (3,)])
def test_default_mode_function_of_tridiagonal_solves(batch):
    """PyTensor 3's default mode splits solves that share ``a`` (and
    ``a.mT``: the transposed solve) into the two ops; the compiled
    function's graph compiles and agrees with the function and with SciPy
    (an entry of ``a`` off the band is NaN: never read)."""
    a = pt.tensor("a", shape=batch + (None, None))
    b, c = pt.tensor("b", shape=batch + (None, 2)), pt.tensor("c", shape=batch + (None,))
    outs = [pt.linalg.solve(a, b, assume_a="tridiagonal"), pt.linalg.solve(a, c, assume_a="tridiagonal", b_ndim=1),
            pt.linalg.solve(a.mT, c, assume_a="tridiagonal", b_ndim=1)]
    f = pytensor.function([a, b, c], outs)
    ops = {type(getattr(n.op, "core_op", n.op)) for n in f.maker.fgraph.apply_nodes}
    assert {LUFactorTridiagonal, SolveLUFactorTridiagonal} <= ops
    compiled = compile_to_onnx(f)
    dl_v, d_v, du_v = diagonals(9, batch=batch)
    bands = np.stack([dense(*(v[k] for v in (dl_v, d_v, du_v))) for k in np.ndindex(*batch)]).reshape(
        batch + (9, 9))
    a_value = bands.copy()
    a_value[..., 0, 5] = np.nan
    values = [a_value, RNG.normal(size=batch + (9, 2)), RNG.normal(size=batch + (9,))]
    got, want = compiled.run(*values), f(*values)
    for k in np.ndindex(*batch):
        refs = [scipy.linalg.solve(bands[k], values[1][k]), scipy.linalg.solve(bands[k], values[2][k]),
                scipy.linalg.solve(bands[k].T, values[2][k])]
        for g, w, ref in zip(got, want, refs):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g[k], w[k], rtol=1e-13, atol=1e-13)
            np.testing.assert_allclose(g[k], ref, rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_scan_solving_with_a_non_sequence():
    """A ``Scan`` whose tridiagonal ``a`` is a non-sequence: the default mode
    factors once outside the loop and solves inside its body."""
    a, bs = pt.dmatrix("a"), pt.dmatrix("bs")
    ys = pytensor.scan(lambda b, m: pt.linalg.solve(m, b, assume_a="tridiagonal"), sequences=[bs],
                       non_sequences=[a], return_updates=False)
    f = pytensor.function([a, bs], ys)
    assert LUFactorTridiagonal in {type(getattr(n.op, "core_op", n.op)) for n in f.maker.fgraph.apply_nodes}
    band = dense(*diagonals(6))
    values = [band, RNG.normal(size=(3, 6))]
    (got,) = compile_to_onnx(f).run(*values)
    np.testing.assert_allclose(got, f(*values), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(got, scipy.linalg.solve(band, values[1].T).T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["int64", "float16"])
def test_integer_and_half_inputs_take_lapacks_dtype(dtype):
    """``get_lapack_funcs`` picks float64 for int64 inputs and float32 for
    float16 ones; an int32 ``b`` against float32 factors solves in float64."""
    dl, d, du = (pt.tensor(name, dtype=dtype, shape=(k,)) for name, k in [("dl", 3), ("d", 4), ("du", 3)])
    b = pt.tensor("b", dtype="int32", shape=(4,))
    factors = LUFactorTridiagonal()(dl, d, du)
    x = SolveLUFactorTridiagonal(b_ndim=1, transposed=True)(*factors, b)
    values = [np.array([3, 1, 2], dtype), np.array([1, 4, 1, 5], dtype), np.array([1, 2, 3], dtype),
              np.array([1, 2, 3, 4], "int32")]
    check_pytensor([dl, d, du, b], [*factors, x], values)
