"""The graphs that break the ONNX backend proposed in pytensor PR 1777 (the
anchor we measure ourselves against), compiled the way a new user would:
from a normally compiled ``pytensor.function`` in the default mode, and from
the raw graph. Each must compile and match PyTensor's own output exactly."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from tests.helpers import assert_same, check_pytensor


def _both_ways(inputs, output, values, **tol):
    """Check the raw graph and the default-mode compiled function."""
    check_pytensor(inputs, [output], values, **tol)
    fn = pytensor.function(inputs, output)
    compiled = compile_to_onnx(fn)
    (got,) = compiled.run(*values)
    assert_same(got, np.asarray(fn(*values)), rtol=1e-12, atol=0, what="compiled function")


def test_float64_times_integer_constant():
    x = pt.vector("x", dtype="float64")
    _both_ways([x], x * 2, [np.array([-1.5, 0.0, 2.25, np.inf, np.nan])])


def test_int64_plus_one():
    x = pt.vector("x", dtype="int64")
    _both_ways([x], x + 1, [np.array([-3, 0, 2**40], dtype=np.int64)])


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_floor_division_of_negative_ints(dtype):
    iv = pt.vector("iv", dtype=dtype)
    _both_ways([iv], iv // 2, [np.array([-7, -4, -3, -1, 0, 1, 3, 7], dtype=dtype)])


@pytest.mark.parametrize("mode", ["half_to_even", "half_away_from_zero"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rounding_ties(mode, dtype):
    x = pt.vector("x", dtype=dtype)
    values = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.49999997, 0.49999997, np.nan, -np.inf], dtype=dtype)
    _both_ways([x], pt.round(x, mode=mode), [values])
    expected = {"half_to_even": [-2, -2, -0, 0, 2, 2], "half_away_from_zero": [-3, -2, -1, 1, 2, 3]}[mode]
    (got,) = compile_to_onnx([x], outputs=[pt.round(x, mode=mode)]).run(values)
    np.testing.assert_array_equal(got[:6], np.array(expected, dtype=dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_mean(dtype):
    x = pt.matrix("x", dtype=dtype)
    values = (np.arange(12).reshape(3, 4) - 5).astype(dtype)
    _both_ways([x], x.mean(), [values])
    _both_ways([x], x.mean(axis=0), [values])


@pytest.mark.parametrize("src,dst", [("float64", "int32"), ("float32", "int64"), ("float32", "bool"),
                                     ("int64", "float32"), ("int32", "int8"), ("bool", "float64"),
                                     ("float64", "float32")])
def test_cast(src, dst):
    x = pt.vector("x", dtype=src)
    if src == "bool":
        values = np.array([True, False, True])
    elif src.startswith("float"):
        values = np.array([-2.7, -0.5, 0.0, 0.5, 3.9], dtype=src)
    else:
        values = np.array([-100, -1, 0, 1, 100], dtype=src)  # in range: overflow differs by backend
    _both_ways([x], pt.cast(x, dst), [values])
