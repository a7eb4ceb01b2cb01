"""Random-number ops: standard noise of a given shape, the sources that
``random="onnx"`` lowers PyTensor's random variables onto
(``compiler/lowering/rules/random.py`` builds each distribution from them).

``random_uniform(shape) {dtype, seed}`` holds U[0, 1) draws and
``random_normal(shape) {dtype, seed}`` standard normal draws, of the float
``dtype`` and the shape that the int64 vector ``shape`` gives (ONNX
``RandomUniformLike``/``RandomNormalLike`` of a ``ConstantOfShape``).

Both have the ``random`` trait: a runtime draws new values at every run (the
ONNX ops keep one generator per node, seeded once by ``seed``), so no pass
may fold them into constants. The reference ``evaluate`` draws from
``numpy.random.default_rng(seed)``, so the interpreter gives the same values
at every call: a stand-in of the right distribution, type and shape, not
onnxruntime's values (its generator is ``std::default_random_engine``).
"""

from __future__ import annotations

import numpy as np

from ir.ops.common import INT64, known_dims
from ir.opdef import RANDOM, Attr, OpDef, OpError, register
from ir.types import DType, TensorType

FLOAT_DTYPES = (DType.FLOAT32, DType.FLOAT64)


def _infer(op: str):
    def infer(types, attrs, consts):
        (s,) = types
        if s.dtype != INT64 or s.rank != 1 or not isinstance(s.shape[0], int):
            raise OpError(f"{op}: shape must be i64[k] with a static k, got {s}")
        dims = known_dims(consts[0]) or (None,) * s.shape[0]
        return [TensorType(attrs["dtype"], tuple(dims))]
    return infer


def _uniform(args, attrs):
    rng = np.random.default_rng(attrs["seed"])
    return [rng.random(tuple(int(d) for d in args[0]), dtype=attrs["dtype"].numpy)]


def _normal(args, attrs):
    rng = np.random.default_rng(attrs["seed"])
    return [rng.standard_normal(tuple(int(d) for d in args[0]), dtype=attrs["dtype"].numpy)]


_ATTRS = {"dtype": Attr("dtype", choices=FLOAT_DTYPES), "seed": Attr("int", 0)}
register(OpDef("random_uniform", _infer("random_uniform"), _uniform, 1, attrs=_ATTRS, traits={RANDOM},
               doc="U[0, 1) draws of the given shape (ONNX RandomUniformLike)", symbolic_inputs=True))
register(OpDef("random_normal", _infer("random_normal"), _normal, 1, attrs=_ATTRS, traits={RANDOM},
               doc="standard normal draws of the given shape (ONNX RandomNormalLike)", symbolic_inputs=True))
