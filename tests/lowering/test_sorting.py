"""Sorting and set ops: ``SortOp``/``ArgSortOp`` (IR ``sort``, ONNX TopK) and
``Unique``, differentially against PyTensor from raw graphs and from
default-mode compiled functions, in float32/float64/int/bool with ties,
NaN, infinities and signed zeros."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.extra_ops import Unique, old_np_unique

from compiler import compile_to_onnx
from tests.helpers import assert_same, check_pytensor

RNG = np.random.default_rng(12)
SPECIAL = [3.0, np.nan, 1.0, np.inf, np.nan, 1.0, -0.0, 0.0, -np.inf, 2.0, 1.0, -5.5]


def _data(dtype, shape):
    """Values of ``dtype`` with many ties (and NaN/inf/-0.0 for floats)."""
    n = int(np.prod(shape))
    if dtype == "bool":
        return (RNG.random(n) < 0.5).reshape(shape)
    if np.dtype(dtype).kind == "f":
        return np.resize(np.array(SPECIAL + list(RNG.integers(-3, 3, n)), dtype=dtype), shape)
    info = np.iinfo(dtype)
    picks = np.array([info.min, info.max, 0, 1, 2, 1, 0, info.max], dtype=dtype)
    return RNG.choice(picks, n).astype(dtype).reshape(shape)


def check_function(inputs, outputs, values):
    """The default-mode compiled function and its ONNX model agree exactly
    (dtype, shape, values; NaN where NaN)."""
    fn = pytensor.function(inputs, outputs)
    want = fn(*values)
    got = compile_to_onnx(fn).run(*values)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_same(g, np.asarray(w), rtol=0, atol=0, what=f"function output {i}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "int8", "uint64", "bool"])
def test_sort_and_stable_argsort(dtype):
    x = pt.tensor("x", dtype=dtype, shape=(None, None))
    v = _data(dtype, (4, 12))
    outs = [pt.sort(x, axis=1), pt.argsort(x, axis=1, stable=True), pt.sort(x, axis=0),
            pt.argsort(x, axis=0, kind="mergesort"), pt.sort(x, axis=None)]
    check_pytensor([x], outs, [v], rtol=0, atol=0)


def test_quicksort_argsort_is_a_valid_sorting_permutation():
    """Default ``kind="quicksort"``: values as NumPy's; the permutation is
    the stable one, which sorts the input and breaks ties by index."""
    x = pt.vector("x")
    v = _data("float64", (40,))
    m = compile_to_onnx([x], outputs=[pt.argsort(x)])
    (perm,) = m.run(v)
    np.testing.assert_array_equal(perm, np.argsort(v, kind="stable"))


def test_descending_forms():
    """Descending sorts are written ``sort(x)[::-1]`` or ``argsort(-x)``."""
    x = pt.vector("x", dtype="float32")
    v = _data("float32", (12,))
    check_pytensor([x], [pt.sort(x)[::-1], pt.argsort(-x, stable=True)], [v], rtol=0, atol=0)


def test_sort_from_compiled_function():
    x = pt.matrix("x")
    v = _data("float64", (3, 12))
    check_function([x], [pt.sort(x), pt.argsort(x, axis=0, stable=True), pt.sort(x * 2, axis=0)[0]], [v])


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16", "uint8"])
def test_sort_along_runtime_axis(dtype):
    """``sort``/``argsort`` along an axis given at run time (an int64 or int8
    scalar input): every axis of a rank-3 tensor, negative ones included,
    each against PyTensor's ``np.sort``/``np.argsort`` with ``kind="stable"``
    (ties, NaN, inf, -0.0); rank 1 has one candidate."""
    x = pt.tensor("x", dtype=dtype, shape=(None, None, None))
    y = pt.tensor("y", dtype=dtype, shape=(None,))
    a = pt.scalar("a", dtype="int64")
    b = pt.scalar("b", dtype="int8")
    outs = [pt.sort(x, axis=a), pt.argsort(x, axis=a, stable=True), pt.sort(x, axis=b),
            pt.argsort(x, axis=b, stable=True), pt.sort(y, axis=a), pt.argsort(y, axis=b, stable=True)]
    v, w = _data(dtype, (3, 4, 5)), _data(dtype, (7,))
    m = check_pytensor([x, y, a, b], outs, [v, w, np.int64(0), np.int8(-1)], rtol=0, atol=0)
    for axis in (-3, -2, -1, 0, 1, 2):
        got = m.run(v, w, np.int64(axis), np.int8(axis))
        for g, want in zip(got, [np.sort(v, axis), np.argsort(v, axis, kind="stable")] * 2
                           + [np.sort(w), np.argsort(w, kind="stable")]):
            assert_same(g, want, rtol=0, atol=0, what=f"axis {axis}")


def test_sort_along_runtime_axis_out_of_range_sorts_the_last_axis():
    """PyTensor (NumPy) raises ``AxisError`` for an axis outside [-ndim, ndim);
    the model cannot raise and sorts along the last axis (docs/status.md)."""
    x = pt.matrix("x")
    a = pt.scalar("a", dtype="int64")
    v = _data("float64", (4, 6))
    m = compile_to_onnx([x, a], outputs=[pt.sort(x, axis=a), pt.argsort(x, axis=a, stable=True)])
    for axis in (2, 5, -3, -100):
        with pytest.raises(np.exceptions.AxisError):
            np.sort(v, axis)
        got = m.run(v, np.int64(axis))
        assert_same(got[0], np.sort(v, -1), rtol=0, atol=0, what=f"sort at axis {axis}")
        assert_same(got[1], np.argsort(v, -1, kind="stable"), rtol=0, atol=0, what=f"argsort at axis {axis}")


FLAGS = [(False, False, False), (True, False, False), (False, True, False), (False, False, True),
         (True, True, True)]


def _outputs(u):
    return u if isinstance(u, list) else [u]


@pytest.mark.parametrize("flags", FLAGS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
def test_unique_flat(dtype, flags):
    x = pt.tensor("x", dtype=dtype, shape=(None, None))
    v = _data(dtype, (3, 8))
    check_pytensor([x], _outputs(Unique(*flags)(x)), [v], rtol=0, atol=0)


@pytest.mark.parametrize("flags", FLAGS)
def test_unique_along_an_axis(flags):
    rows = np.array([[1, 2], [0, 5], [1, 2], [0, 1], [np.nan, 1], [np.nan, 1], [1, np.nan], [-0.0, 5]])
    x = pt.tensor("x", shape=(None, 2))
    check_pytensor([x], _outputs(Unique(*flags, axis=0)(x)), [rows], rtol=0, atol=0)
    y = pt.tensor("y", dtype="int32", shape=(2, None, 3))
    v = RNG.integers(0, 2, (2, 5, 3)).astype("int32")
    check_pytensor([y], _outputs(Unique(*flags, axis=1)(y)), [v], rtol=0, atol=0)


def test_unique_nan_collapses_like_numpy():
    x = pt.vector("x")
    v = np.array([np.nan, 1.0, np.nan, -np.inf, np.inf, np.nan])
    m = compile_to_onnx([x], outputs=_outputs(Unique(True, True, True)(x)))
    for g, w in zip(m.run(v), old_np_unique(v, True, True, True)):
        assert_same(g, w, rtol=0, atol=0, what="unique")


def test_unique_empty_input():
    x = pt.vector("x", dtype="int64")
    check_pytensor([x], _outputs(Unique(True, True, True)(x)), [np.zeros(0, np.int64)])


def test_unique_from_compiled_function():
    x = pt.vector("x")
    v = _data("float64", (15,))
    check_function([x], _outputs(Unique(True, True, True)(x)) + [pt.extra_ops.unique(x * 2)], [v])


@pytest.mark.parametrize("flags", FLAGS)
def test_unique_along_an_axis_with_symbolic_or_wide_slices(flags):
    """Slices of a symbolic size, or wider than MAX_ROW_KEYS, are sorted by a loop of one stable sort per key."""
    rows = np.array([[1, 2, 3], [0, 5, 3], [1, 2, 3], [0, 1, 3], [np.nan, 1, 3], [1, 2, 2], [-0.0, 5, 3]])
    x = pt.matrix("x")
    check_pytensor([x], _outputs(Unique(*flags, axis=0)(x)), [rows], rtol=0, atol=0)
    check_pytensor([x], _outputs(Unique(*flags, axis=1)(x)), [rows.T[:, :5]], rtol=0, atol=0)
    wide = pt.tensor("w", dtype="int64", shape=(None, 70))
    v = RNG.integers(0, 2, (9, 70))
    v[4] = v[1]
    check_pytensor([wide], _outputs(Unique(*flags, axis=0)(wide)), [v], rtol=0, atol=0)
    check_pytensor([x], _outputs(Unique(*flags, axis=0)(x)), [np.zeros((3, 0))], rtol=0, atol=0)


# -- bool products and scans (PyTensor's output dtype is bool) -------------------------
def test_bool_dot_matmul_batched_dot():
    a, b = pt.matrix("a", dtype="bool"), pt.matrix("b", dtype="bool")
    c = pt.tensor3("c", dtype="bool")
    u = pt.vector("u", dtype="bool")
    va, vb = RNG.random((3, 4)) < 0.3, RNG.random((4, 2)) < 0.3
    vc, vu = RNG.random((2, 4, 4)) < 0.4, RNG.random(4) < 0.5
    outs = [pt.dot(a, b), pt.matmul(c, c), pt.batched_dot(c, c), pt.dot(a, u), pt.dot(u, u)]
    check_pytensor([a, b, c, u], outs, [va, vb, vc, vu])


def test_bool_dot_from_compiled_function():
    a, b = pt.matrix("a", dtype="bool"), pt.matrix("b", dtype="bool")
    check_function([a, b], [pt.dot(a, b)], [RNG.random((3, 4)) < 0.3, RNG.random((4, 2)) < 0.3])


def test_bool_cumsum_cumprod_keep_pytensors_bool_type():
    """The declared output is bool: NumPy's int64 scan converted to bool (a
    running OR / AND), as PyTensor's C backend stores it; its Python
    ``perform`` returns the int64 array itself, so the reference here is
    that array converted."""
    x = pt.matrix("x", dtype="bool")
    v = RNG.random((3, 5)) < 0.5
    v[1] = False
    outs = [pt.cumsum(x, axis=1), pt.cumprod(x, axis=0), pt.cumsum(x, axis=None)]
    assert all(o.dtype == "bool" for o in outs)
    want = [np.cumsum(v, axis=1) != 0, np.cumprod(v, axis=0) != 0, np.cumsum(v) != 0]
    check_pytensor([x], outs, [v], reference=want)
