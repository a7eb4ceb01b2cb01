"""``Elemwise(ScalarLoop)``: per-element step counts and ``until``
conditions, several carried values, constants, broadcasting, float and
int dtypes; raw graphs and default-mode compiled functions."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from pytensor.scalar.loop import ScalarLoop
from pytensor.tensor.elemwise import Elemwise

from compiler import compile_to_onnx
from tests.helpers import assert_same, check_pytensor

RNG = np.random.default_rng(3)


def _affine(dtype):
    """x <- x * c + 1 (a for loop), and the same stopping once x > 10."""
    x0, c = ps.get_scalar_type(dtype)("x0"), ps.get_scalar_type(dtype)("c")
    step = x0 * c + 1
    return (Elemwise(ScalarLoop(init=[x0], update=[step], constant=[c])),
            Elemwise(ScalarLoop(init=[x0], update=[step], constant=[c], until=step > 10)))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32"])
def test_for_and_while_loops(dtype):
    loop, until = _affine(dtype)
    n = pt.matrix("n", dtype="int64")
    x, c = pt.vector("x", dtype=dtype), pt.scalar("c", dtype=dtype)
    steps = np.array([[0, 1, 3, 5], [2, 0, 7, 40]])
    x0 = np.array([0.5, 1.0, -2.0, 3.0]) if dtype.startswith("float") else np.array([0, 1, -2, 3])
    vals = [steps, x0.astype(dtype), np.asarray(1.5 if dtype.startswith("float") else 2, dtype)]
    check_pytensor([n, x, c], [loop(n, x, c), *until(n, x, c)], vals)
    # a while loop may have a negative step count: no step, until stays false
    check_pytensor([n, x, c], [*until(n, x, c)], [-steps, *vals[1:]])


def test_several_carried_values_fibonacci_until():
    """(a, b) <- (b, a + b) until b > limit, with an int step counter carried."""
    a, b, k = ps.float64("a"), ps.float64("b"), ps.int64("k")
    limit = ps.float64("limit")
    op = Elemwise(ScalarLoop(init=[a, b, k], update=[ps.identity(b), a + b, k + 1], constant=[limit],
                             until=a + b > limit))
    n = pt.scalar("n", dtype="int64")
    a0, b0, lim = pt.vector("a0"), pt.vector("b0"), pt.vector("lim")
    k0 = pt.zeros_like(a0, dtype="int64")
    vals = [np.int64(100), np.array([0.0, 1.0, 2.0]), np.array([1.0, 1.0, 3.0]), np.array([1e3, 5.0, 1e9])]
    check_pytensor([n, a0, b0, lim], list(op(n, a0, b0, k0, lim)), vals)


def test_scalar_loop_from_compiled_function():
    loop, until = _affine("float64")
    n, x, c = pt.vector("n", dtype="int64"), pt.vector("x"), pt.scalar("c")
    fn = pytensor.function([n, x, c], [loop(n, x, c) * 2, *until(n, x, c)])
    # n_steps >= 1: with 0 steps PyTensor 2.38's C code reports until=True, its Python perform False
    vals = [np.array([1, 4, 9]), RNG.normal(size=3), np.float64(1.25)]
    for g, w in zip(compile_to_onnx(fn).run(*vals), fn(*vals), strict=True):
        assert_same(g, np.asarray(w), rtol=1e-12, atol=1e-12, what="scalar loop")
