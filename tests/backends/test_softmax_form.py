"""Which ONNX form ``softmax``/``log_softmax`` take: ONNX Softmax/LogSoftmax
along the innermost axis (or one followed only by size-1 dims), the formula
``exp(x - max) / sum`` along an outer axis, where onnxruntime's kernels
transpose and run one short row at a time. Values against NumPy's formula,
special values by position (the contract bound itself is in
tests/numerics/test_contract.py)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx

RNG = np.random.default_rng(3)


def numpy_softmax(v, axis, log):
    """PyTensor's formula in extended precision, rounded to ``v.dtype``."""
    w = v.astype(np.longdouble)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = w - w.max(axis=axis, keepdims=True, initial=-np.inf)
        e = np.exp(z)
        total = e.sum(axis=axis, keepdims=True)
        return (z - np.log(total) if log else e / total).astype(v.dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, axis, native", [
    ((3, 5, 7), 2, True),     # innermost
    ((3, 5, 1, 1), 1, True),  # only size-1 dims follow: still one row per lane
    ((3, 5, 7), 1, False),    # an outer axis: the formula
    ((16, 4, 9), 0, False),
    ((2, 0, 3), 1, False),    # an empty axis
])
def test_form_and_values(dtype, shape, axis, native):
    x = pt.tensor("x", dtype=dtype, shape=shape)
    v = RNG.normal(0, 4, shape).astype(dtype)
    if v.size:
        flat = v.reshape(-1)
        flat[0], flat[5], flat[-1] = np.nan, np.inf, -np.inf  # NaN/inf lanes are all NaN, -inf gives 0 / -inf
    for log, onnx_op in ((False, "Softmax"), (True, "LogSoftmax")):
        fn = pt.special.log_softmax if log else pt.special.softmax
        compiled = compile_to_onnx([x], outputs=[fn(x, axis=axis)])
        ops = Counter(n.op_type for n in compiled.model.graph.node)
        assert (ops[onnx_op] == 1) == native, ops
        got, = compiled.run(v)
        want = numpy_softmax(v, axis, log)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got) & (got < 0), np.isinf(want) & (want < 0))
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=8 * np.finfo(dtype).eps,
                                   atol=4 * np.finfo(dtype).eps)
