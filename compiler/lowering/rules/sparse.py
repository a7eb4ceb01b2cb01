"""Lowering of ``pytensor.sparse`` graphs whose sparse values are constants:
each sparse constant becomes a dense IR constant (``LoweringContext.get``,
at most ``context.MAX_DENSE_ELEMENTS`` elements, 2**24) and the sparse ops on it the dense
ops with the same values: ``Dot`` and ``StructuredDot`` a ``matmul``
(``structured_dot``'s result equals the dense product: it differs from
``dot`` only in the gradient's sparsity pattern), ``Transpose`` a
``transpose``, ``DenseFromSparse`` the value itself, ``SparseFromDense``
the dense value (a sparse result is only ever an intermediate: a graph
input or output of a sparse type is unsupported, ONNX has no sparse
tensors that onnxruntime computes with).

The product of a densified matrix rounds like the dense ``Dot`` (a sum of
every term, the zeros included, in onnxruntime's order); SciPy's sparse
product adds only the stored terms, so float results agree to the dot
products' rounding (float32: ~1e-6 relative), not bit for bit.
"""

from __future__ import annotations

from pytensor.sparse.basic import DenseFromSparse, SparseFromDense, Transpose
from pytensor.sparse.math import Dot, StructuredDot

from compiler.lowering.context import LoweringContext, ir_dtype
from compiler.lowering.registry import lowers
from ir import Value


@lowers(Dot, StructuredDot)
def lower_sparse_dot(ctx: LoweringContext, node) -> list[Value]:
    """``dot``/``structured_dot`` of a sparse constant and a dense tensor (or
    two sparse constants) as a ``matmul`` of the dense values, in the result
    dtype (PyTensor's upcast of the two)."""
    dtype = ir_dtype(node.outputs[0])
    x, y = (ctx.cast(ctx.get(v), dtype) for v in node.inputs)
    return [ctx.add("matmul", [x, y])]


@lowers(Transpose)
def lower_sparse_transpose(ctx: LoweringContext, node) -> list[Value]:
    """The transpose of a sparse matrix (dense here)."""
    return [ctx.add("transpose", [ctx.get(node.inputs[0])], {"perm": [1, 0]})]


@lowers(DenseFromSparse, SparseFromDense)
def lower_sparse_conversion(ctx: LoweringContext, node) -> list[Value]:
    """A conversion between the sparse and the dense form: the same values."""
    return [ctx.get(node.inputs[0])]
