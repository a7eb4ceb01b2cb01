"""Differential tests of the matrix-product lowerings: Dot, Matmul
(Blockwise(Dot)) with broadcast batch dims, BatchedDot, and the BLAS ops of
PyTensor's rewrites (Dot22, Dot22Scalar, Gemm, Gemv, Ger), including BLAS's
rule that ``beta == 0`` ignores the accumulator even when it holds NaN/Inf."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest
from pytensor.tensor.blas import BatchedDot, _dot22, _dot22scalar, gemm_no_inplace, gemv_no_inplace, ger
from pytensor.tensor.math import _dot

from compiler import UnsupportedOpsError, compile_to_onnx
from tests.helpers import check_pytensor

RNG = np.random.default_rng(11)


def data(shape, dtype="float64"):
    """Small integers (exact products in any dtype), as ``dtype``."""
    return RNG.integers(-3, 4, size=shape).astype(dtype)


@pytest.mark.parametrize("dx,dy", [("float32", "float32"), ("float64", "float64"), ("int32", "int32"),
                                   ("int64", "int64"), ("int32", "float32"), ("float32", "float64")])
def test_dot_dtypes(dx, dy):
    x = pt.matrix("x", dtype=dx)
    y = pt.matrix("y", dtype=dy)
    check_pytensor([x, y], [_dot(x, y), x @ y], [data((3, 4), dx), data((4, 2), dy)])


def test_matmul_ranks_and_broadcast_batch_dims():
    m, v = pt.dmatrix("m"), pt.dvector("v")
    a = pt.tensor("a", dtype="float64", shape=(None, 1, None, None))
    b = pt.tensor("b", dtype="float64", shape=(1, None, None, None))
    t = pt.dtensor3("t")
    outs = [m @ v, v @ m, v @ v, a @ b, t @ m, pt.matmul(t, t.transpose(0, 2, 1))]
    values = [data((4, 4)), data((4,)), data((2, 1, 3, 4)), data((1, 5, 4, 2)), data((3, 2, 4))]
    check_pytensor([m, v, a, b, t], outs, values)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_transposed_matrix_by_vector(dtype):
    """``x1.T @ v`` and its batched form (a Transpose feeding MatMul with a
    1-D second operand): onnxruntime's MatmulTransposeFusion computes it
    wrongly (fuzz seeds 1175, 100649), so the vector goes in as a column.
    Run with onnxruntime's default optimizations (ORT_ENABLE_ALL)."""
    x1, v = pt.matrix("x1", dtype=dtype), pt.vector("v", dtype=dtype)
    t = pt.tensor3("t", dtype=dtype)
    outs = [pt.dot(x1.T, v), x1.T @ v, t.transpose(0, 2, 1) @ v, gemv_no_inplace(v[:2], 1.0, x1.T, v, 0.0)]
    values = [np.array([[0, 0], [3, 0], [1, 2]], dtype), np.array([-6, 0, 2], dtype), data((2, 3, 2), dtype)]
    if dtype == "int64":
        outs.pop()  # Gemv is float only
    check_pytensor([x1, v, t], outs, values)


def test_batched_dot():
    x, y = pt.ftensor3("x"), pt.ftensor3("y")
    check_pytensor([x, y], [BatchedDot()(x, y)], [data((2, 3, 4), "float32"), data((2, 4, 5), "float32")])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dot22_and_dot22scalar(dtype):
    x, y = pt.matrix("x", dtype=dtype), pt.matrix("y", dtype=dtype)
    a = pt.scalar("a", dtype=dtype)
    check_pytensor([x, y, a], [_dot22(x, y), _dot22scalar(x, y, a)],
                   [data((3, 4), dtype), data((4, 5), dtype), np.array(-1.5, dtype=dtype)])


# -- Gemm ----------------------------------------------------------------------
def _const(value, dtype):
    return pt.constant(np.array(value, dtype=dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemm_constant_scalars(dtype):
    """beta 0 ignores a z full of NaN/Inf; beta 1 and 0.5 accumulate; alpha 1, -1, 2."""
    z, x, y = (pt.matrix(n, dtype=dtype) for n in "zxy")
    outs = [gemm_no_inplace(z, _const(a, dtype), x, y, _const(b, dtype))
            for a, b in [(1.0, 0.0), (2.0, 0.0), (1.0, 1.0), (-1.0, 1.0), (2.0, 0.5)]]
    z_value = np.full((3, 5), np.nan, dtype=dtype)
    z_value[0] = np.inf
    compiled = check_pytensor([z, x, y], outs[:2], [z_value, data((3, 4), dtype), data((4, 5), dtype)])
    assert np.isfinite(compiled.run(z_value, data((3, 4), dtype), data((4, 5), dtype))[0]).all()
    check_pytensor([z, x, y], outs[2:], [data((3, 5), dtype), data((3, 4), dtype), data((4, 5), dtype)])


@pytest.mark.parametrize("beta_value", [0.0, 0.75])
def test_gemm_runtime_scalars(beta_value):
    """alpha and beta as inputs: when beta is 0 at run time, z is still ignored."""
    z, x, y = pt.dmatrix("z"), pt.dmatrix("x"), pt.dmatrix("y")
    alpha, beta = pt.dscalar("alpha"), pt.dscalar("beta")
    z_value = data((3, 5))
    z_value[1, 2], z_value[2, 0] = np.nan, -np.inf
    values = [z_value, np.array(-0.5), data((3, 4)), data((4, 5)), np.array(beta_value)]
    check_pytensor([z, alpha, x, y, beta], [gemm_no_inplace(z, alpha, x, y, beta)], values)


def test_gemm_broadcasts_z():
    z = pt.tensor("z", dtype="float64", shape=(None, None))
    x, y = pt.dmatrix("x"), pt.dmatrix("y")
    out = gemm_no_inplace(z, _const(2.0, "float64"), x, y, _const(0.5, "float64"))
    check_pytensor([z, x, y], [out], [data((1, 5)), data((3, 4)), data((4, 5))])


# -- Gemv, Ger -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemv(dtype):
    y, a_vec = pt.vector("y", dtype=dtype), pt.vector("x", dtype=dtype)
    A = pt.matrix("A", dtype=dtype)
    alpha, beta = pt.scalar("alpha", dtype=dtype), pt.scalar("beta", dtype=dtype)
    outs = [gemv_no_inplace(y, _const(1.0, dtype), A, a_vec, _const(0.0, dtype)),
            gemv_no_inplace(y, alpha, A, a_vec, _const(1.0, dtype)),
            gemv_no_inplace(y, alpha, A, a_vec, beta)]
    nan_y = np.array([np.nan, np.inf, 1.0], dtype=dtype)
    for beta_value in (0.0, -2.0):
        values = [nan_y if beta_value == 0 else data((3,), dtype), data((3, 4), dtype), data((4,), dtype),
                  np.array(1.5, dtype=dtype), np.array(beta_value, dtype=dtype)]
        check_pytensor([y, A, a_vec, alpha, beta], outs[2:] if beta_value == 0 else outs[1:], values)
    check_pytensor([y, A, a_vec], outs[:1], [nan_y, data((3, 4), dtype), data((4,), dtype)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ger(dtype):
    A = pt.matrix("A", dtype=dtype)
    x, y = pt.vector("x", dtype=dtype), pt.vector("y", dtype=dtype)
    alpha = pt.scalar("alpha", dtype=dtype)
    A_value = data((3, 4), dtype)
    A_value[0, 0] = np.nan  # Ger reads A whatever alpha is
    check_pytensor([A, alpha, x, y], [ger(A, alpha, x, y), ger(A, _const(1.0, dtype), x, y)],
                   [A_value, np.array(0.5, dtype=dtype), data((3,), dtype), data((4,), dtype)])
