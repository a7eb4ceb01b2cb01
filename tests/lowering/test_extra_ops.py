"""``Nonzero`` (also from compiled functions, where boolean-mask indexing
becomes it), ``Repeat`` with a vector of counts and ``Convolve1d`` (all
modes), differentially against PyTensor from raw graphs and default-mode
compiled functions."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode
from pytensor.tensor.signal import convolve1d

from compiler import UnsupportedOpsError, compile_to_onnx
from tests.helpers import assert_same, check_pytensor

RNG = np.random.default_rng(7)


def check_function(inputs, outputs, values, ops=(), mode=None):
    """The compiled function (default mode unless ``mode``) and its ONNX
    model agree exactly; the function's graph holds every op class in ``ops``."""
    fn = pytensor.function(inputs, outputs, mode=mode)
    held = {type(n.op).__name__ for n in fn.maker.fgraph.toposort()}
    assert set(ops) <= held, f"{ops} not in the compiled graph: {held}"
    want = fn(*values)
    got = compile_to_onnx(fn).run(*values)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_same(g, np.asarray(w), rtol=0, atol=0, what=f"function output {i}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
def test_nonzero(dtype):
    x = pt.tensor("x", dtype=dtype, shape=(None, None, None))
    v = RNG.integers(0, 2, (2, 3, 4)).astype(dtype)
    if dtype.startswith("float"):
        v[0, 0, :3] = [np.nan, -0.0, np.inf]
    check_pytensor([x], [*pt.nonzero(x), pt.flatnonzero(x)], [v])
    y = pt.vector("y", dtype=dtype)
    check_pytensor([y], [*pt.nonzero(y)], [v.reshape(-1)])


def test_mask_indexing_from_compiled_function():
    x = pt.matrix("x")
    v = np.array([[0.0, 1.0, np.nan], [-0.0, 2.0, -3.0]])
    check_function([x], [x[x > 0], pt.flatnonzero(x), *pt.nonzero(x)], [v], ops=("Nonzero",))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_repeat_vector_counts(dtype):
    x = pt.tensor("x", dtype=dtype, shape=(None, None))
    r = pt.vector("r", dtype="int64")
    r8 = pt.vector("r8", dtype="int8")
    v = RNG.integers(0, 5, (3, 4)).astype(dtype)
    outs = [pt.repeat(x, r, axis=0), pt.repeat(x, r8, axis=-1), pt.repeat(x, r[:1], axis=1)]
    check_pytensor([x, r, r8], outs, [v, np.array([2, 0, 3]), np.array([0, 1, 0, 4], np.int8)])
    # every count zero, and zeros at both ends
    check_pytensor([x, r, r8], outs, [v, np.array([0, 0, 0]), np.array([0, 0, 0, 0], np.int8)])
    check_pytensor([x, r, r8], outs, [v, np.array([0, 1, 0]), np.array([0, 0, 2, 0], np.int8)])


def test_repeat_from_compiled_function():
    x = pt.matrix("x")
    r = pt.vector("r", dtype="int64")
    check_function([x, r], [pt.repeat(x, r, axis=1) * 2], [RNG.normal(size=(2, 3)), np.array([1, 0, 2])],
                   ops=("Repeat",))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_convolve1d_modes(dtype):
    x = pt.tensor("x", dtype=dtype, shape=(None,))
    k = pt.tensor("k", dtype=dtype, shape=(3,))
    b = pt.tensor("b", dtype=dtype, shape=(2, None))
    vals = [(RNG.normal(size=s) * 4).astype(dtype) for s in ((7,), (3,), (2, 5))]
    outs = [convolve1d(x, k, mode=m) for m in ("full", "valid", "same")] + [convolve1d(b, k, mode="full")]
    tol = 1e-5 if dtype == "float32" else None
    check_pytensor([x, k, b], outs, vals, rtol=tol, atol=tol)


def test_convolve1d_kernel_longer_than_signal():
    """``np.convolve``'s valid mode slides the shorter operand."""
    x = pt.tensor("x", dtype="float32", shape=(None,))
    k = pt.tensor("k", dtype="float32", shape=(3,))
    vals = [RNG.normal(size=7).astype("float32"), RNG.normal(size=3).astype("float32")]
    check_pytensor([x, k], [convolve1d(k, x, mode="valid"), convolve1d(k, x, mode="full")], vals,
                   rtol=1e-5, atol=1e-5)


def test_convolve1d_from_compiled_function():
    x = pt.vector("x")
    k = pt.tensor("k", shape=(4,))
    fn_values = [RNG.normal(size=9), RNG.normal(size=4)]
    fn = pytensor.function([x, k], [convolve1d(x, k, mode="same"), convolve1d(x, k, mode="full")])
    want = fn(*fn_values)
    for g, w in zip(compile_to_onnx(fn).run(*fn_values), want):
        assert_same(g, w, rtol=1e-12, atol=1e-12, what="convolve1d")


# -- np.add.at into integer and bool tensors ------------------------------------------
INDEX = np.array([1, 1, 0, 2, 1])


@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8", "int32"])
def test_add_at_float_into_int_truncates_after_every_add(dtype):
    """``np.add.at`` casts unsafely after each add: 20 + 0.6 + 0.6 is 20, not
    21, and -3.9 truncates toward zero."""
    x, y, i = pt.vector("x", dtype=dtype), pt.vector("y"), pt.vector("i", dtype="int64")
    values = [np.array([10, 20, 30], dtype), np.array([0.6, 0.6, -1.7, 2.5, -3.9]), INDEX]
    if dtype == "uint8":
        values[1] = np.abs(values[1])
    check_pytensor([x, y, i], [pt.inc_subtensor(x[i], y)], values)


def test_add_at_into_bool():
    """A sum into bool is true where nonzero after each add (True + -1.0 is False)."""
    x, y, i = pt.vector("x", dtype="bool"), pt.vector("y"), pt.vector("i", dtype="int64")
    check_pytensor([x, y, i], [pt.inc_subtensor(x[i], y), pt.inc_subtensor(x[i], x[i])],
                   [np.array([True, False, False]), np.array([-1.0, 1.0, 0.0, 0.5, 0.0]), INDEX])


def test_add_at_float_into_int_matrix_and_compiled_function():
    m, y, i = pt.matrix("m", dtype="int32"), pt.vector("y", dtype="float32"), pt.vector("i", dtype="int64")
    out = pt.inc_subtensor(m[i, 1:], y[:, None])
    values = [np.arange(6, dtype=np.int32).reshape(3, 2), np.float32([0.6, 0.6, -2.5]), np.array([1, 1, 2])]
    check_pytensor([m, y, i], [out], values)
    # PyTensor 3.0's default Numba function fails on it at run time; its rewritten graph run by Python:
    check_function([m, y, i], [out], values, mode=Mode(linker="py", optimizer="fast_run"))


# -- split along an axis known at run time ----------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_split_on_a_symbolic_axis(axis):
    x, a, s = pt.tensor3("x"), pt.scalar("a", dtype="int64"), pt.vector("s", dtype="int64")
    v = RNG.normal(size=(2, 3, 4))
    check_pytensor([x, a, s], pt.split(x, s, n_splits=2, axis=a), [v, np.int64(axis), np.array([1, v.shape[axis] - 1])])
    i = pt.tensor3("i", dtype="int32")
    vi = RNG.integers(-9, 9, (2, 3, 4)).astype("int32")
    check_pytensor([i, a, s], pt.split(i, s, n_splits=3, axis=a), [vi, np.int64(axis),
                                                                    np.array([0, v.shape[axis], 0])])


def test_split_on_a_symbolic_axis_from_compiled_function():
    x, a = pt.matrix("x"), pt.scalar("a", dtype="int64")
    check_function([x, a], pt.split(x, [2, 1], n_splits=2, axis=a), [RNG.normal(size=(3, 3)), np.int64(1)],
                   ops=("Split",))


# -- complex values are reported, never a crash ------------------------------------------
def _complex_graphs():
    x, y = pt.vector("x"), pt.vector("y")
    c = pt.vector("c", dtype="complex128")
    return {"input": ([c], [pt.real(c)]), "intermediate": ([x, y], [pt.abs(pt.complex(x, y) * 2)]),
            "constant": ([x], [pt.real(x * np.complex64(1j))]), "output": ([x, y], [pt.complex(x, y)])}


@pytest.mark.parametrize("form", ["raw", "function"])
@pytest.mark.parametrize("where", ["input", "intermediate", "constant", "output"])
def test_complex_values_raise_unsupported_ops_error(where, form):
    inputs, outputs = _complex_graphs()[where]
    arg = pytensor.function(inputs, outputs) if form == "function" else inputs
    with pytest.raises(UnsupportedOpsError, match="complex numbers are not supported"):
        compile_to_onnx(arg, outputs=None if form == "function" else outputs)


# -- diagonals: ExtractDiag and AllocDiag with offsets, any sizes ---------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_diag_with_offsets_and_symbolic_sizes(dtype):
    m, t, v = pt.matrix("m", dtype=dtype), pt.tensor3("t", dtype=dtype), pt.vector("v", dtype=dtype)
    vm, vt, vv = (RNG.integers(0, 9, s).astype(dtype) for s in ((3, 4), (3, 4, 5), (3,)))
    check_pytensor([m], [pt.diagonal(m, k) for k in (-3, -1, 0, 1, 2, 7)] + [pt.diag(m)], [vm])
    check_pytensor([t], [pt.diagonal(t, 1, 0, 2), pt.diagonal(t, -1, 1, 2), pt.diagonal(t, 0, 2, 0)], [vt])
    check_pytensor([v], [pt.diag(v), pt.diag(v, k=2), pt.diag(v, k=-1)], [vv])
    check_pytensor([m], [pt.diag(m)], [np.zeros((0, 3), dtype)])


def test_diag_from_compiled_function():
    m, v = pt.matrix("m"), pt.vector("v")
    check_function([m, v], [pt.diagonal(m, 1), pt.diag(v, k=-1) * 2, pt.diag(m)], [RNG.normal(size=(4, 3)),
                                                                                  RNG.normal(size=3)])
