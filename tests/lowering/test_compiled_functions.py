"""``compile_to_onnx`` on compiled ``pytensor.function``s, in the default mode
(Numba in PyTensor 3, C in PyTensor 2.38) and in C mode (the CVM linker with
the fast_run rewrites): their rewritten graphs hold the BLAS ops (Dot22,
Gemm, Gemv, Ger), inplace variants and fused multi-output Composites. Each
test asserts those ops really are in the compiled graph, so it cannot
silently stop testing them, and that the ONNX model reproduces the
function's own outputs."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode, get_default_mode
from pytensor.tensor.blas import Dot22, Gemm, Gemv, Ger
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.math import Dot
from pytensor.scalar import Composite

from compiler import compile_to_onnx
from tests.helpers import assert_same

RNG = np.random.default_rng(5)
C_MODE = Mode(linker="cvm", optimizer="fast_run")
DEFAULT_IS_NUMBA = "numba" in type(get_default_mode().linker).__name__.lower()
MODES = {"default": None, "c": C_MODE}


def _blas_graph():
    """Products whose fast_run form uses every BLAS op; the accumulators are
    fresh intermediates, so Gemm/Gemv/Ger may work in place. (One elementwise
    op, exp, keeps the number of C modules to build small.)"""
    A, B, C, D, E = (pt.dmatrix(n) for n in "ABCDE")
    u, v, w, y = (pt.dvector(n) for n in "uvwy")
    h = pt.exp(A @ B)
    outputs = [0.5 * pt.exp(C) + 2.0 * (h @ D),  # Gemm
               0.25 * pt.exp(y) + A @ u,  # Gemv
               pt.exp(E) + pt.outer(v, w) * 1.5,  # Ger
               h]
    shapes = [(3, 4), (4, 5), (3, 5), (5, 5), (3, 5), (4,), (3,), (5,), (3,)]
    return [A, B, C, D, E, u, v, w, y], outputs, [RNG.normal(size=s) for s in shapes]


def _fused_graph():
    """Elementwise chains on a fresh Dot result: fused into Composites, one of
    them multi-output, working in place."""
    A, B = pt.fmatrix("A"), pt.fmatrix("B")
    x = pt.fvector("x")
    t = A @ B
    outputs = [pt.exp(t) * 2.0 + pt.log1p(t * t) - t,
               pt.sigmoid(x * 3.0) + x, pt.sqr(pt.sigmoid(x * 3.0)) * pt.cast(x > 0, "float32")]
    values = [RNG.normal(size=(3, 4)).astype("float32"), RNG.normal(size=(4, 2)).astype("float32"),
              np.float32([-1.5, 0.0, 0.5, 2.5])]
    return [A, B, x], outputs, values


def _ops(fn) -> list:
    return [node.op for node in fn.maker.fgraph.toposort()]


def _inplace_composites(fn) -> list:
    return [op for op in _ops(fn) if isinstance(op, Elemwise) and isinstance(op.scalar_op, Composite)
            and op.inplace_pattern]


def _check_against_function(fn, values, rtol):
    expected = [np.array(r, copy=True) for r in fn(*values)]
    compiled = compile_to_onnx(fn)
    for i, (got, want) in enumerate(zip(compiled.run(*values), expected, strict=True)):
        assert_same(got, want, rtol=rtol, atol=rtol, what=f"output {i}")
    return compiled


@pytest.mark.parametrize("mode", sorted(MODES))
def test_blas_ops(mode):
    inputs, outputs, values = _blas_graph()
    fn = pytensor.function(inputs, outputs, mode=MODES[mode])
    ops = _ops(fn)
    if mode == "default" and DEFAULT_IS_NUMBA:  # Numba keeps Dot and fuses the rest
        assert any(isinstance(op, Dot) for op in ops), ops
    else:
        for op_type in (Dot22, Gemm, Gemv, Ger):
            assert any(isinstance(op, op_type) for op in ops), (op_type.__name__, ops)
        assert {op.inplace for op in ops if isinstance(op, (Gemm, Gemv))} == {True}, ops
        assert [op.destructive for op in ops if isinstance(op, Ger)] == [True], ops
    _check_against_function(fn, values, rtol=1e-12)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_fused_inplace_composites(mode):
    inputs, outputs, values = _fused_graph()
    fn = pytensor.function(inputs, outputs, mode=MODES[mode])
    composites = _inplace_composites(fn)
    assert composites, _ops(fn)
    assert any(len(op.scalar_op.fgraph.outputs) > 1 for op in _ops(fn)
               if isinstance(op, Elemwise) and isinstance(op.scalar_op, Composite)), _ops(fn)
    _check_against_function(fn, values, rtol=1e-6)
