"""Rules for float functions ONNX lacks or computes differently from NumPy:
trunc, round_half_away, expm1, log1p, exp2, log2, log10, softplus, sigmoid.

Each is a short exact or few-ulp formula over ONNX ops; float16 computes in
float32 and rounds once, as NumPy's float16 loops do.
"""

from __future__ import annotations

from decimal import Decimal, localcontext

import numpy as np

from backends.onnx.rules.common import F32, F64, float_compute, in_f32, sign_of, where
from backends.onnx.registry import emits


def trunc(ctx, x, dtype):
    """``np.trunc`` (exact): ``floor(|x|) * copysign(1, x)`` keeps -0.0
    (``trunc(-0.5) == -0.0``) and NaN."""
    return ctx.op("Mul", ctx.op("Floor", ctx.op("Abs", x)), sign_of(ctx, x, dtype))


def expm1(ctx, x, dtype):
    """``np.expm1`` to a few ulp (Kahan's formula: the rounding error of
    ``u = exp(x)`` cancels in ``(u - 1) / log(u)``)::

        u == 1: x;  u - 1 == -1: -1;  u == inf: inf;  else (u - 1) * (x / log(u))
    """
    u = ctx.op("Exp", x)
    one = ctx.const(1, dtype)
    um1 = ctx.op("Sub", u, one)
    y = ctx.op("Mul", um1, ctx.op("Div", x, ctx.op("Log", u)))
    y = ctx.op("Where", ctx.op("IsInf", u), u, y)
    y = ctx.op("Where", ctx.op("Equal", um1, ctx.const(-1, dtype)), ctx.const(-1, dtype), y)
    return where(ctx, ctx.op("Equal", u, one), x, y, dtype)


def log1p(ctx, x, dtype):
    """``np.log1p`` to a few ulp (Goldberg's formula: the rounding error of
    ``u = 1 + x`` cancels in ``log(u) / (u - 1)``)::

        u == 1: x;  u == +inf: +inf;  u == 0: -inf;  else log(u) * (x / (u - 1))

    (x < -1 and NaN give NaN; x keeps its sign of zero.)
    """
    one = ctx.const(1, dtype)
    u = ctx.op("Add", x, one)
    y = ctx.op("Mul", ctx.op("Log", u), ctx.op("Div", x, ctx.op("Sub", u, one)))
    y = ctx.op("Where", ctx.op("IsInf", u, detect_negative=0), u, y)
    y = ctx.op("Where", ctx.op("Equal", u, ctx.const(0, dtype)), ctx.const(-np.inf, dtype), y)
    return where(ctx, ctx.op("Equal", u, one), x, y, dtype)


def sigmoid(ctx, x, dtype):
    """``scipy.special.expit`` with both tails: ``r = 1 / (1 + e)`` with
    ``e = exp(-|x|)`` (never overflows), and ``e * r`` for x < 0, so results
    down to the subnormals keep their precision (``1 / (1 + exp(-x))``
    returns 0 below x = -709 in float64, -88 in float32; onnxruntime's
    Sigmoid clamps and returns 0 below about -18 in float32)."""
    e = ctx.op("Exp", ctx.op("Neg", ctx.op("Abs", x)))
    r = ctx.op("Reciprocal", ctx.op("Add", ctx.const(1, dtype), e))
    return ctx.op("Where", ctx.op("Less", x, ctx.const(0, dtype)), ctx.op("Mul", e, r), r)


def softplus(ctx, x, dtype):
    """``np.logaddexp(0, x)``, stable for large |x|: ``max(x, 0) + log1p(exp(-|x|))``
    (onnxruntime's float64 Softplus overflows past x = 709 and underflows
    to 0 below -37)."""
    tail = log1p(ctx, ctx.op("Exp", ctx.op("Neg", ctx.op("Abs", x))), dtype)
    return ctx.op("Add", ctx.op("Max", x, ctx.const(0, dtype)), tail)


def round_half_away(ctx, x, dtype):
    """C ``round`` (PyTensor RoundHalfAwayFromZero), exactly:
    ``t = trunc(x); where(|x - t| == 0.5, t + sign(x), Round(x))``
    (``x - trunc(x)`` is exact)."""
    t = trunc(ctx, x, dtype)
    tie = ctx.op("Equal", ctx.op("Abs", ctx.op("Sub", x, t)), ctx.const(0.5, dtype))
    return where(ctx, tie, ctx.op("Add", t, ctx.op("Sign", x)), ctx.op("Round", x), dtype)


def exp2(ctx, x, dtype):
    """``np.exp2`` as ``Pow(2, x)``: within 2 ulp of NumPy (asserted in the
    tests). float32 computes in float64 and rounds: onnxruntime's float32
    kernels are up to 4 ulp off."""
    return ctx.op("Pow", ctx.const(2, dtype), x)


def _scaled_log(ctx, x, dtype, constant: Decimal):
    """``Log(x) * constant`` with the constant split in two (``hi + lo``,
    each rounded to ``dtype``), so that only Log's own rounding and the
    final rounding remain; ``log(0) = -inf`` and ``log(inf) = inf`` pass through."""
    hi = np.asarray(float(constant), dtype.numpy)
    lo = np.asarray(float(constant - Decimal(float(hi))), dtype.numpy)
    log = ctx.op("Log", x)
    y = ctx.op("Add", ctx.op("Mul", log, ctx.const(hi, dtype)), ctx.op("Mul", log, ctx.const(lo, dtype)))
    return ctx.op("Where", ctx.op("IsInf", log), log, y)  # inf * hi + inf * lo may be inf - inf


with localcontext() as _c:
    _c.prec = 40
    LOG2_E = 1 / Decimal(2).ln()
    LOG10_E = 1 / Decimal(10).ln()


def log2(ctx, x, dtype):
    """``np.log2`` as ``Log(x) * (1 / ln 2)``: within 2 ulp of NumPy (asserted
    in the tests); float32 computes in float64 and rounds, as onnxruntime's
    float32 Log alone is up to 4 ulp off."""
    return _scaled_log(ctx, x, dtype, LOG2_E)


def log10(ctx, x, dtype):
    """``np.log10`` as ``Log(x) * (1 / ln 10)``: within 2 ulp of NumPy
    (asserted in the tests); float32 computes in float64 and rounds."""
    return _scaled_log(ctx, x, dtype, LOG10_E)


# Bound of the fast float16/float32 sigmoid: |error| <= SIGMOID_FAST_ABS_EPS * eps
# (tests/numerics/test_contract.py).
SIGMOID_FAST_ABS_EPS = 2

FORMULAS = {"trunc": trunc, "expm1": expm1, "log1p": log1p, "softplus": softplus, "sigmoid": sigmoid,
            "round_half_away": round_half_away, "exp2": exp2, "log2": log2, "log10": log10}


# Formulas whose float32 form computes in float64 and rounds once (see their docs).
IN_F64 = {"exp2", "log2", "log10"}


@emits(*FORMULAS)
def formula(ctx, node, x):
    """The formula in ``FORMULAS`` for the node's op, in its float dtype
    (float16 through float32; float32 through float64 for ``IN_F64``).

    Under ``numerics="fast"`` a float16/float32 ``sigmoid`` is onnxruntime's
    ``Sigmoid`` (as torch exports it): a clamped rational approximation
    within ``SIGMOID_FAST_ABS_EPS`` eps absolute of ``scipy.special.expit``
    (measured 1.39 eps; relative accuracy is lost in the tail, which is 0
    below x = -17), NaN and ±inf exact. float64, and every dtype under
    ``numerics="strict"``, keep the tail-accurate formula."""
    dtype = node.inputs[0].dtype
    fn = FORMULAS[node.op]
    if node.op == "sigmoid" and not ctx.options.strict and dtype != F64:
        return in_f32(ctx, dtype, lambda v: ctx.op("Sigmoid", v), x)

    def compute(v):
        if node.op in IN_F64 and float_compute(dtype) == F32:
            return ctx.cast(fn(ctx, ctx.cast(v, F64), F64), F32)
        return fn(ctx, v, float_compute(dtype))

    return in_f32(ctx, dtype, compute, x)
