"""The onnxruntime session we build keeps float64 results exact."""

import numpy as np
import pytensor.tensor as pt

from compiler import compile_to_onnx


def test_float64_scaled_matmul_is_not_rounded_to_float32():
    # onnxruntime's MatMulScaleFusion would store the 0.1 as a float32 alpha.
    x, y = pt.matrix("x", dtype="float64"), pt.matrix("y", dtype="float64")
    rng = np.random.default_rng(0)
    a, b = rng.random((3, 4)), rng.random((4, 5))
    (got,) = compile_to_onnx([x, y], outputs=[0.1 * (x @ y)]).run(a, b)
    np.testing.assert_array_equal(got, 0.1 * (a @ b))


def test_int64_maximum_and_minimum_beyond_int32():
    # onnxruntime 1.31's int64 Max gives Max(0, 2**31) = 0; the emitter bridges it.
    x, y = pt.vector("x", dtype="int64"), pt.scalar("y", dtype="int64")
    a, b = np.array([0, -2**40, 2**31 + 1, 5], dtype=np.int64), np.array(2**31, dtype=np.int64)
    got_max, got_min = compile_to_onnx([x, y], outputs=[pt.maximum(x, y), pt.minimum(x, y)]).run(a, b)
    np.testing.assert_array_equal(got_max, np.maximum(a, b))
    np.testing.assert_array_equal(got_min, np.minimum(a, b))
