"""Sparse constants (``compiler/lowering/rules/sparse.py``): densified, with
``dot``/``structured_dot``/transpose/conversions as dense ops, against
PyTensor; sparse inputs, sparse outputs and constants over the size limit
refused with the reason."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.sparse as ps
import pytensor.tensor as pt
import pytest
import scipy.sparse

from compiler import compile_to_onnx
from compiler.lowering import context
from compiler.lowering.errors import UnsupportedOpsError


def _sparse(rows, cols, fmt, seed):
    return ps.as_sparse_variable(scipy.sparse.random(rows, cols, density=0.25, format=fmt, dtype="float32",
                                                     random_state=seed), name=f"s{seed}")


X = np.arange(5 * 40, dtype="float32").reshape(5, 40) / 100
V = np.arange(40, dtype="float32") / 10


@pytest.mark.parametrize("build", [
    lambda x, v: ([x], ps.dot(x, _sparse(40, 3, "csc", 0)), [X]),
    lambda x, v: ([v], ps.dot(v, _sparse(40, 3, "csr", 1)), [V]),
    lambda x, v: ([x], ps.dot(_sparse(5, 40, "csr", 2), x.T), [X]),
    lambda x, v: ([v], ps.dot(_sparse(5, 40, "csc", 3), v), [V]),
    lambda x, v: ([x], ps.structured_dot(x, _sparse(40, 3, "csc", 4)), [X]),
    lambda x, v: ([x], ps.structured_dot(_sparse(5, 40, "csr", 5), x.T), [X]),
    lambda x, v: ([x], ps.dense_from_sparse(ps.transpose(_sparse(40, 5, "csr", 6))) * x[:, :40], [X]),
], ids=["dense@sparse", "vector@sparse", "sparse@dense", "sparse@vector", "structured", "structured-left",
        "transpose"])
def test_sparse_constants_match_pytensor(build):
    inputs, out, values = build(pt.matrix("x", dtype="float32"), pt.vector("v", dtype="float32"))
    want = pytensor.function(inputs, out)(*values)
    got = compile_to_onnx(inputs, outputs=[out]).run(*values)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())


def test_sparse_inputs_and_outputs_are_refused_with_the_reason():
    x = pt.vector("x", dtype="float32")
    s = ps.csc_matrix("s", dtype="float32")
    with pytest.raises(UnsupportedOpsError, match="SparseTensorType has no ONNX equivalent"):
        compile_to_onnx([x, s], outputs=[ps.dot(x, s)])
    c = _sparse(4, 4, "csr", 7)
    with pytest.raises(UnsupportedOpsError, match="SparseTensorType has no ONNX equivalent"):
        compile_to_onnx([x], outputs=[ps.transpose(c)])


def test_a_sparse_constant_over_the_limit_is_refused(monkeypatch):
    monkeypatch.setattr(context, "MAX_DENSE_ELEMENTS", 100)
    x = pt.matrix("x", dtype="float32")
    with pytest.raises(UnsupportedOpsError, match=r"densified to 120 elements, over the 100 limit"):
        compile_to_onnx([x], outputs=[ps.dot(x, _sparse(40, 3, "csc", 0))])
