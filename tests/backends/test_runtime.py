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
