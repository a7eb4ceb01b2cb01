"""Every difference between the PyTensor lines this project supports (2.38.x,
PyMC's pin, and 3.0.x) that lowering and the PyTensor mode depend on, in one
place: other modules import the name from here and never test the version.

- ``SCAN_PREALLOC_TAG``: the rewrite tag of the scan rewrite that
  pre-allocates the trace buffer: ``scan_save_mem_prealloc`` in 2.38,
  ``scan_reduce_trace_prealloc`` in 3.0 (the Numba linker excludes it under
  either name). ``configdefaults._filter_mode`` accepts only a fixed list of
  mode names in both lines, so ``PYTENSOR_FLAGS=mode=ONNX`` is rejected when
  PyTensor is imported; a ``Mode`` instance is accepted
  (``pytensor.config.mode = ONNX_MODE``).
- ``Cholesky``, ``SolveTriangular``, ``Solve``, ``CholeskySolve``,
  ``MatrixInverse``, ``Det``, ``SLogDet``: ``pytensor.tensor.linalg`` in 3.0
  (``slinalg``/``nlinalg`` are deprecated there), ``pytensor.tensor.slinalg``
  and ``nlinalg`` in 2.38.
- ``SolveSylvester`` (the ``OpFromGraph`` of ``solve_sylvester``): in
  ``pytensor.tensor.linalg.solvers.linear_control`` in 3.0,
  ``pytensor.tensor._linalg.solve.linear_control`` in 2.38.
- ``LUFactorTridiagonal``, ``SolveLUFactorTridiagonal`` (LAPACK ``gttrf`` /
  ``gttrs``; ``pytensor.tensor.linalg.solvers.tridiagonal``, 3.0 only: the
  default mode's rewrites split ``solve(a, b, assume_a="tridiagonal")`` into
  them): None in 2.38.
- ``SoftmaxGrad`` (2.38 only; 3.0's symbolic Softmax differentiates itself),
  ``Iv`` (2.38 only), ``XlogX``/``XlogY0`` (2.38 only; 3.0 builds xlogx from a
  switch): None where the line lacks them.
- ``scalar_op_key``: 2.38 hashes a ``Composite`` by its C code, which may not
  exist (``NotImplementedError``).
- ``inner_graph``: 3.0's symbolic ``Softmax``/``LogSoftmax`` carry their own
  graph (``op.fgraph``); 2.38's are COps.
- ``SOFTMAX_OVER_LENGTH_ONE``: 3.0's symbolic softmax over an axis whose
  static length is 1 is a constant in every mode (its inner function's
  rewrites turn ``e / sum(e)`` into 1, also at NaN/inf): ``{"softmax": 1.0,
  "log_softmax": -0.0}``; 2.38's COps compute the formula (NaN at NaN/inf):
  None.
"""

from __future__ import annotations

from typing import Any

import pytensor
import pytensor.scalar.math as _scalar_math
import pytensor.tensor.special as _special

PYTENSOR_VERSION = tuple(int(p) for p in pytensor.__version__.split("+")[0].split(".")[:2])
IS_PYTENSOR_3 = PYTENSOR_VERSION >= (3, 0)

SCAN_PREALLOC_TAG = "scan_reduce_trace_prealloc" if IS_PYTENSOR_3 else "scan_save_mem_prealloc"

if IS_PYTENSOR_3:
    from pytensor.tensor.linalg import (LU, QR, BlockDiagonal, Cholesky, CholeskySolve, Det, Expm, LUFactor,
                                        MatrixInverse, PivotToPermutations, SLogDet, Solve, SolveTriangular)
    from pytensor.tensor.linalg.solvers.linear_control import SolveSylvester
    from pytensor.tensor.linalg.solvers.tridiagonal import LUFactorTridiagonal, SolveLUFactorTridiagonal
else:
    LUFactorTridiagonal = SolveLUFactorTridiagonal = None
    from pytensor.tensor._linalg.solve.linear_control import SolveSylvester
    from pytensor.tensor.nlinalg import Det, MatrixInverse, SLogDet
    from pytensor.tensor.slinalg import (LU, QR, BlockDiagonal, Cholesky, CholeskySolve, Expm, LUFactor,
                                         PivotToPermutations, Solve, SolveTriangular)

if IS_PYTENSOR_3:
    from pytensor.tensor.linalg import SVD, Eigh, Eigvalsh, MatrixPinv, Schur
    EighGrad = None  # 3.0's Eigh.L_op builds ordinary ops
    EigvalshGrad = None  # 3.0's Eigvalsh.pullback builds ordinary ops (on Eigh(a, b))
else:
    from pytensor.tensor.nlinalg import SVD, Eigh, EighGrad, MatrixPinv
    from pytensor.tensor.slinalg import Eigvalsh, EigvalshGrad, Schur
EIGH_OPS = (Eigh, Eigvalsh)

SoftmaxGrad = getattr(_special, "SoftmaxGrad", None)
SOFTMAX_OVER_LENGTH_ONE = {"softmax": 1.0, "log_softmax": -0.0} if IS_PYTENSOR_3 else None
Iv = getattr(_scalar_math, "Iv", None)

if IS_PYTENSOR_3:
    XlogX = XlogY0 = None
else:
    from pytensor.tensor.xlogx import XlogX, XlogY0


def scalar_op_key(scalar_op) -> Any:
    """A hashable key for ``scalar_op``: the op itself, or its identity when
    PyTensor cannot hash it (2.38's ``Composite`` without C code)."""
    try:
        hash(scalar_op)
    except NotImplementedError:
        return ("by-identity", id(scalar_op))
    return scalar_op


def inner_graph(op):
    """The ``FunctionGraph`` that defines ``op`` when PyTensor gives it one
    (3.0's symbolic softmax ops, ``OpFromGraph``), else None."""
    return getattr(op, "fgraph", None)


__all__ = ["BlockDiagonal", "Cholesky", "CholeskySolve", "Det", "EIGH_OPS", "Eigh", "EighGrad", "Eigvalsh", "EigvalshGrad", "Expm", "MatrixPinv", "SVD", "Schur", "IS_PYTENSOR_3", "Iv", "LU", "LUFactor", "LUFactorTridiagonal",
           "MatrixInverse", "PYTENSOR_VERSION", "PivotToPermutations", "QR", "SCAN_PREALLOC_TAG", "SLogDet", "SOFTMAX_OVER_LENGTH_ONE", "SoftmaxGrad", "Solve", "SolveLUFactorTridiagonal", "SolveSylvester", "SolveTriangular",
           "XlogX", "XlogY0", "inner_graph", "scalar_op_key"]
