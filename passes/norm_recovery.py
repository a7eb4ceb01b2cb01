"""``norm-recovery``: layer normalization spelled with means, a square, a
square root and a division becomes ``layer_norm`` (ONNX
LayerNormalization, opset 17+), which onnxruntime runs as one kernel; RMS
normalization becomes ``rms_norm`` (rules 4-5).

``x`` is ``(..., D)``; the means are over the last axis, each the pool
rules' mean form (``passes.pool_recovery.sum_of``: a ``reduce_sum``, maybe
widened to float64 between casts, kept as an axis of 1 by an unsqueeze,
divided by D, or multiplied by the constant nearest 1/D as PyTensor's
compiled functions write it; ``eps`` added on either side). Rules:

1. layer-norm: ``(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps)`` (the
   square as ``pow(d, 2)`` or ``d * d``); a symbolic D (a plain
   ``pt.tensor3``) takes a (1,) scale and bias, which LayerNormalization
   broadcasts::

       %m: f32[N,T,1] = div(unsqueeze(cast(reduce_sum(cast(%x)))), %D)
       %d: f32[N,T,256] = sub(%x, %m)
       %v: f32[N,T,1] = div(unsqueeze(cast(reduce_sum(cast(pow(%d, 2))))), %D)
       %y: f32[N,T,256] = div(%d, sqrt(add(%v, %eps)))
     ->
       %y: f32[N,T,256] = layer_norm(%x, %ones, %zeros) {epsilon=eps}

2. layer-norm-scale: ``layer_norm(x, ones, b) * g`` with g of shape (D,)
   (or 1s then D) takes g as its scale; 3. layer-norm-bias:
   ``layer_norm(x, s, zeros) + b`` takes b as its bias.

4. rms-norm: ``x / sqrt(mean(x^2) + eps)`` (Zhang & Sennrich,
   "Root Mean Square Layer Normalization", 2019) becomes ``rms_norm(x, ones)``,
   emitted in the spelling onnxruntime fuses into its
   SimplifiedLayerNormalization kernel; 5. rms-norm-scale:
   ``rms_norm(x, ones) * g`` takes g as its scale.

Semantics. onnxruntime's kernel sums each row in float32 in its own order
where PyTensor sums float32 in float64: measured within 1e-6 absolute of
PyTensor on rows of unit spread with means 0 to 1000 (onnxruntime 1.32,
``tests/passes/test_norm_recovery.py``), a rounding-level difference. So the
rules run under ``numerics="fast"`` only (the default) and for float32
(``RECOVERED_DTYPES``); ``"strict"`` keeps the primitive form. Nodes left dead are erased by ``dce``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ir import DType, Value
from passes.base import TYPES, register_pass
from passes.pool_recovery import _count, sum_of
from passes.rewrite import Const, Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var, producer

RECOVERED_DTYPES = {DType.FLOAT32}


def mean_source(value: Value) -> Value | None:
    """The x of ``value = mean(x, axis=-1, keepdims=True)`` in the pool
    rules' mean form (a sum over the last axis kept as 1, divided by the
    axis' size, a constant or the size read off the shape), or that sum
    times the float nearest 1/size (PyTensor's compiled functions fold the
    division into a constant factor, either operand order), else None."""
    node = value.producer
    if node is None or node.op not in ("div", "mul"):
        return None
    for total, count in ([node.inputs] if node.op == "div" else [node.inputs, node.inputs[::-1]]):
        s = sum_of(total)
        if isinstance(s, str) or s.reduce is None:
            continue
        x = s.source
        last = x.rank - 1
        axes = sorted(a % x.rank for a in s.reduce.attrs["axes"])
        if axes != [last] or s.kept != (last,):
            continue
        factor, size = _count(count), x.shape[last]
        if node.op == "div" and factor == size or node.op == "mul" and isinstance(size, int) and _is_reciprocal(
                factor, size, value.dtype):
            return x
    return None


def _is_reciprocal(factor, size: int, dtype: DType) -> bool:
    """Whether ``factor`` is 1/size rounded to ``dtype`` (a float dtype)."""
    return isinstance(factor, float) and factor == float(np.asarray(1 / size, dtype.numpy))


def _square_of(value: Value) -> Value | None:
    """d for ``value = pow(d, 2)`` or ``d * d``."""
    node = value.producer
    if node is None:
        return None
    if node.op == "pow" and node.inputs[1].const is not None and np.all(node.inputs[1].const == 2):
        return node.inputs[0]
    if node.op == "mul" and node.inputs[0] is node.inputs[1]:
        return node.inputs[0]
    return None


def _normalized_size(m: Match, x: Value, op: str) -> int | str:
    """The length of the neutral scale and bias of ``op`` over ``x``'s last
    axis when ``m`` (a division by ``sqrt(... + eps)``) may become it: the
    axis' static size, or 1 for a symbolic axis (ONNX LayerNormalization
    broadcasts its scale and bias; the means' divisor was checked to be the
    axis' size read off the shape). Else why not: a dtype outside
    ``RECOVERED_DTYPES``, an epsilon that is not one number >= 0, or a
    division that broadcasts beyond ``x``."""
    if x.dtype not in RECOVERED_DTYPES:
        return f"{op} is not recovered for {x.dtype} (see RECOVERED_DTYPES)"
    size = x.shape[-1] if isinstance(x.shape[-1], int) else 1
    eps = np.asarray(m.eps.const).reshape(-1)
    if eps.size != 1 or not eps[0] >= 0:
        return f"epsilon {m.eps.const} is not one number >= 0"
    if m.root.output.shape != x.shape:
        return "the division broadcasts beyond x"
    return size


def layer_norm(rw: Rewriter, m: Match) -> Value | str:
    """(x - mean) / sqrt(mean((x - mean)^2) + eps) -> layer_norm (rule 1)."""
    d = m.d
    sub = producer(d, "sub")
    if sub is None:
        return f"%{d.name or '?'} is not x - mean(x)"
    x, mean = sub.inputs
    if mean_source(mean) is not x:
        return "the subtrahend is not the mean of x over its last axis"
    var_source = mean_source(m.var)
    if var_source is None or _square_of(var_source) is not d:
        return "the variance is not the mean of (x - mean(x)) squared over the last axis"
    size = _normalized_size(m, x, "layer_norm")
    if isinstance(size, str):
        return size
    eps = np.asarray(m.eps.const).reshape(-1)
    ones = rw.const(np.ones(size, x.dtype.numpy), "ln_scale")
    zeros = rw.const(np.zeros(size, x.dtype.numpy), "ln_bias")
    return rw.add("layer_norm", [x, ones, zeros], {"epsilon": float(eps[0])})


def rms_norm(rw: Rewriter, m: Match) -> Value | str:
    """x / sqrt(mean(x^2) + eps) -> rms_norm(x, 1) (rule 4)."""
    x = m.d
    source = mean_source(m.var)
    if source is None or _square_of(source) is not x:
        return "the divisor is not sqrt(mean(x^2) + eps) over the last axis of the dividend"
    size = _normalized_size(m, x, "rms_norm")
    if isinstance(size, str):
        return size
    eps = np.asarray(m.eps.const).reshape(-1)
    return rw.add("rms_norm", [x, rw.const(np.ones(size, x.dtype.numpy), "rms_scale")], {"epsilon": float(eps[0])})


def rms_scale(rw: Rewriter, m: Match) -> Value | str:
    """rms_norm(x, 1) * g -> rms_norm(x, g) (rule 5)."""
    rms = m.rms
    x, slot = rms.inputs
    if m.root.output.shape != rms.output.shape or m.root.output.dtype != x.dtype:
        return "the operand broadcasts beyond the normalized value"
    if slot.const is None or not np.all(slot.const == 1):
        return "the rms_norm already has its scale"
    v = _row_vector(m.other, x.shape[-1])
    if v is None:
        return f"{m.other.type} is not a vector along the normalized axis"
    if v.rank != 1:
        v = rw.add("reshape", [v, rw.const(np.array([x.shape[-1]], np.int64), "shape")])
    return rw.add("rms_norm", [x, v], dict(rms.attrs))


def _row_vector(v: Value, size: int) -> Value | None:
    """``v`` as a (size,) operand broadcast over the last axis only, or None."""
    if v.shape[-1:] != (size,) or any(d != 1 for d in v.shape[:-1]):
        return None
    return v


def _fold(rw: Rewriter, m: Match, which: int, neutral: float) -> Value | str:
    ln = m.ln
    x = ln.inputs[0]
    if ln.output.rank < m.other.rank:
        return "the operand has more axes than the normalized value"
    if m.root.output.shape != ln.output.shape or m.root.output.dtype != x.dtype:
        return "the operand broadcasts beyond the normalized value"
    slot = ln.inputs[which]
    if slot.const is None or not np.all(slot.const == neutral):
        return "the layer_norm already has its " + ("scale" if which == 1 else "bias")
    v = _row_vector(m.other, x.shape[-1])
    if v is None:
        return f"{m.other.type} is not a vector along the normalized axis"
    if v.rank != 1:
        v = rw.add("reshape", [v, rw.const(np.array([x.shape[-1]], np.int64), "shape")])
    inputs = list(ln.inputs)
    if which == 1 and not np.all(inputs[2].const == 0):
        return "a scale after a bias would scale the bias"
    inputs[which] = v
    return rw.add("layer_norm", inputs, dict(ln.attrs))


def scale(rw: Rewriter, m: Match) -> Value | str:
    """layer_norm(x, 1, 0) * g -> layer_norm(x, g, 0) (rule 2)."""
    return _fold(rw, m, 1, 1.0)


def bias(rw: Rewriter, m: Match) -> Value | str:
    """layer_norm(x, s, 0) + b -> layer_norm(x, s, b) (rule 3)."""
    return _fold(rw, m, 2, 0.0)


def _ln(name: str = "ln") -> Op:
    return Op("layer_norm", Var(), Var(), Var(), name=name)


RULES = RuleSet([
    # (x - mean) / sqrt(var + eps) -> layer_norm(x, 1, 0)
    Rule("layer-norm", Op("div", Var("d"), Op("sqrt", Op("add", Var("var"), Const("eps")))), layer_norm),
    Rule("layer-norm", Op("div", Var("d"), Op("sqrt", Op("add", Const("eps"), Var("var")))), layer_norm),
    # x / sqrt(mean(x^2) + eps) -> rms_norm(x, 1)
    Rule("rms-norm", Op("div", Var("d"), Op("sqrt", Op("add", Var("var"), Const("eps")))), rms_norm),
    Rule("rms-norm", Op("div", Var("d"), Op("sqrt", Op("add", Const("eps"), Var("var")))), rms_norm),
    # rms_norm * g, g * rms_norm -> rms_norm(x, g)
    Rule("rms-norm-scale", Op("mul", Op("rms_norm", Var(), Var(), name="rms"), Var("other")), rms_scale),
    Rule("rms-norm-scale", Op("mul", Var("other"), Op("rms_norm", Var(), Var(), name="rms")), rms_scale),
    # layer_norm * g, g * layer_norm -> layer_norm(x, g, 0)
    Rule("layer-norm-scale", Op("mul", _ln(), Var("other")), scale),
    Rule("layer-norm-scale", Op("mul", Var("other"), _ln()), scale),
    # layer_norm + b, b + layer_norm -> layer_norm(x, s, b)
    Rule("layer-norm-bias", Op("add", _ln(), Var("other")), bias),
    Rule("layer-norm-bias", Op("add", Var("other"), _ln()), bias),
])
NO_RULES = RuleSet([])


@register_pass
@dataclass(frozen=True)
class NormRecovery(RuleSetPass):
    """Recover layer and RMS normalization (see the module docstring).

    Attributes:
        numerics: ``"strict"`` recovers nothing (onnxruntime's
            LayerNormalization rounds otherwise than the matched graph);
            ``"fast"`` or None (alone; a compilation fills in its mode) runs
            ``RULES``.
    """

    name = "norm-recovery"
    requires = (TYPES,)
    numerics: str | None = None

    def rule_set(self) -> RuleSet:
        return NO_RULES if self.strict else RULES
