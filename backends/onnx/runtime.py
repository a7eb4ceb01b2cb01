"""``make_session``: an onnxruntime CPU session for an emitted model."""

from __future__ import annotations

import os

import onnx
import onnxruntime as ort

# onnxruntime 1.31's MatMulScaleFusion folds `scale * (a @ b)` into a FusedMatMul whose
# `alpha` attribute is a float32, so a float64 scale that is not a float32 gets rounded
# (0.1 * (x @ y) in float64 is off by ~4e-9). Disabling it keeps float64 results exact.
# NoopElimination drops an Add/Sub of a float64 constant that is 0 in float32 and a Mul/Div by one that
# is 1 in float32 (noop_elimination.cc casts it): the emitter writes those as Sum (context.py,
# EmitContext._avoid_noop_elimination) except the strict Mul/Div, which need the rule off.
DISABLED_OPTIMIZERS = ["MatMulScaleFusion", "NoopElimination"]


def make_session(model: onnx.ModelProto | str | os.PathLike) -> ort.InferenceSession:
    """An ``onnxruntime.InferenceSession`` for ``model`` on
    ``CPUExecutionProvider``, built from the serialized bytes with graph
    optimizations at onnxruntime's default level, minus
    ``DISABLED_OPTIMIZERS`` (optimizations that change float64 results).

    ``model`` is a ``ModelProto`` or the path of a saved model (the way to
    load one with external data, which onnxruntime reads beside it).

    Raises:
        onnxruntime's errors when it rejects the model.
    """
    source = os.fspath(model) if isinstance(model, (str, os.PathLike)) else model.SerializeToString()
    return ort.InferenceSession(source, providers=["CPUExecutionProvider"],
                                disabled_optimizers=DISABLED_OPTIMIZERS)
