"""Helpers shared by the emission rules: onnxruntime's CPU kernel coverage,
exact bridges for the dtypes it lacks, and selection (sign-exact under
``numerics="strict"``).

``KERNELS`` lists, per ONNX op that rules run through ``kernel_op``, the
dtypes onnxruntime 1.31's CPU provider implements correctly (probed op by
op; ``tests/backends`` runs every rule in every dtype its IR op allows, so
a wrong entry fails a test). A missing integer dtype is bridged through a
wider type only where that is exact:

* ring ops (Add, Sub, Mul, CumSum, MatMul) compute mod 2^64 in int64 and
  Cast back, which truncates mod 2^w: the low w bits of a ring result
  depend only on the low w bits of the operands, so this is exact for every
  int width and signedness.
* order ops (Max, Min, comparisons, Where, ArgMax, ReduceMax, ...) need a
  value-preserving type: bool goes to uint8, narrow ints to int32 (int64
  when int32 is missing too), uint32 to int64, and uint64 is mapped by
  ``x ^ 2^63`` to int64, which preserves order.

float16 math computes in float32 and rounds back to float16: that is what
NumPy's float16 loops do (``npy_half_to_float``, the float32 function,
``npy_float_to_half``), so it is NumPy's exact semantics, not a change.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import onnx_ir as oir

from backends.onnx.context import EmitContext
from ir.types import DType

B, I8, I16, I32, I64 = DType.BOOL, DType.INT8, DType.INT16, DType.INT32, DType.INT64
U8, U16, U32, U64 = DType.UINT8, DType.UINT16, DType.UINT32, DType.UINT64
F16, F32, F64 = DType.FLOAT16, DType.FLOAT32, DType.FLOAT64


def _dtypes(text: str) -> frozenset[DType]:
    return frozenset(DType.parse(t) for t in text.split())


NUM = "i8 i16 i32 i64 u8 u16 u32 u64 f16 f32 f64"

# ONNX op -> dtypes with a correct onnxruntime 1.31 CPU kernel (opset 18).
# ReduceMax/ReduceMin have an int64 kernel, but it returns wrong values for
# some inputs between 2^32 and 2^35 (it is left out); ReduceSum/ReduceProd
# saturate on ints and are not used for them (see reduction.py).
KERNELS: dict[str, frozenset[DType]] = {op: _dtypes(text) for op, text in {
    "Add": NUM, "Sub": NUM, "Mul": NUM, "Div": NUM,
    "Max": "i8 i32 i64 u8 u32 u64 f16 f32 f64", "Min": "i8 i32 i64 u8 u32 u64 f16 f32 f64",
    "Less": NUM, "Greater": NUM, "LessOrEqual": NUM, "GreaterOrEqual": NUM,
    "Where": "i8 i32 i64 u8 u32 f16 f32 f64",
    "ArgMax": "i8 i32 i64 u8 f16 f32 f64", "ArgMin": "i8 i32 i64 u8 f16 f32 f64",
    "ReduceMax": "i8 i32 u8 f16 f32 f64", "ReduceMin": "i8 i32 u8 f16 f32 f64",
    "CumSum": "i32 i64 f16 f32 f64", "MatMul": "i32 i64 u32 u64 f16 f32 f64",
    "TopK": "i8 i16 i32 i64 u8 f16 f32 f64",
}.items()}

RING = {"Add", "Sub", "Mul", "CumSum", "MatMul"}
ORDER = {"Max", "Min", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Where",
         "ArgMax", "ArgMin", "ReduceMax", "ReduceMin", "TopK"}

SIGN_BIT = np.uint64(1 << 63)


def has_kernel(op_type: str, dtype: DType) -> bool:
    """Whether onnxruntime's CPU provider implements ``op_type`` for ``dtype``."""
    return dtype in KERNELS[op_type]


def compute_dtype(op_type: str, dtype: DType) -> DType:
    """The dtype to run ``op_type`` in for inputs of ``dtype`` (see the module
    doc): ``dtype`` itself when onnxruntime has the kernel.

    Raises:
        AssertionError: no exact bridge (a gap in ``KERNELS``, a bug here).
    """
    if has_kernel(op_type, dtype):
        return dtype
    if dtype == F16:
        return F32
    if op_type in ORDER:
        if dtype == B:
            return U8
        if dtype in (I8, I16, U8, U16) and has_kernel(op_type, I32):
            return I32
    if dtype.is_int and (op_type in RING or op_type in ORDER):
        return I64
    raise AssertionError(f"no exact bridge for ONNX {op_type} on {dtype}")


def to_compute(ctx: EmitContext, x: oir.Value, dtype: DType, compute: DType, order: bool) -> oir.Value:
    """``x`` (of ``dtype``) in ``compute`` dtype; with ``order``, uint64 ->
    int64 flips the sign bit so that order is preserved (else the cast
    wraps, which keeps the bits)."""
    if compute == dtype:
        return x
    if order and dtype == U64:
        x = ctx.op("BitwiseXor", x, ctx.const(SIGN_BIT, U64))
    return ctx.cast(x, compute)


def from_compute(ctx: EmitContext, y: oir.Value, dtype: DType, compute: DType, order: bool) -> oir.Value:
    """The inverse of ``to_compute`` for a result of ``compute`` dtype."""
    if compute == dtype:
        return y
    y = ctx.cast(y, dtype)
    if order and dtype == U64:
        y = ctx.op("BitwiseXor", y, ctx.const(SIGN_BIT, U64))
    return y


def kernel_op(ctx: EmitContext, op_type: str, dtype: DType, *xs: oir.Value, same_out: bool = True,
              extra: tuple = (), **attrs) -> oir.Value:
    """``op_type(*xs, *extra)`` for inputs ``xs`` of ``dtype``, bridged
    through ``compute_dtype`` when onnxruntime lacks the kernel. ``extra``
    inputs (axes) pass through unconverted. The result is converted back to
    ``dtype`` when ``same_out``; else it is returned as computed (a bool
    comparison, int64 indices)."""
    compute = compute_dtype(op_type, dtype)
    if compute is dtype:  # onnxruntime has the kernel
        return ctx.op(op_type, *xs, *extra, **attrs)
    order = op_type in ORDER
    y = ctx.op(op_type, *(to_compute(ctx, x, dtype, compute, order) for x in xs), *extra, **attrs)
    return from_compute(ctx, y, dtype, compute, order) if same_out else y


def signed_zeros(ctx: EmitContext) -> bool:
    """Whether rules must keep NumPy's sign of zero (``numerics="strict"``)."""
    return ctx.options.strict


def where(ctx: EmitContext, cond: oir.Value, a: oir.Value, b: oir.Value, dtype: DType,
          exact_zero_sign: bool | None = None) -> oir.Value:
    """``np.where(cond, a, b)`` for branches of ``dtype``: one Where, exact
    but for the sign of a zero result under ``numerics="fast"``; exact
    including signed zeros under ``"strict"`` or ``exact_zero_sign=True``.

    onnxruntime's Where may return +0.0 for a selected -0.0 (it merges
    ``cond ? a : 0`` with ``cond ? 0 : b`` by testing for zero, and its
    optimizer swaps the branches of ``Where(Not(c), ...)``), so the strict
    form repairs the sign of a zero result: where the selected value is
    -0.0 and the result is not (or the other way round), it is multiplied
    by -1 (exact; 19 more nodes). Bool goes through uint8, int16/uint16
    through int32 and uint64 through int64 (onnxruntime lacks those kernels).
    """
    exact = signed_zeros(ctx) if exact_zero_sign is None else exact_zero_sign
    if dtype.is_float and not exact:
        return ctx.op("Where", cond, a, b)
    if dtype.is_float:
        y = ctx.op("Where", cond, a, b)
        want = ctx.op("Or", ctx.op("And", cond, negative_zero(ctx, a, dtype)),
                      ctx.op("And", ctx.op("Not", cond), negative_zero(ctx, b, dtype)))
        flip = ctx.op("Xor", want, negative_zero(ctx, y, dtype))
        return ctx.op("Mul", y, ctx.op("Where", flip, ctx.const(-1, dtype), ctx.const(1, dtype)))
    compute = compute_dtype("Where", dtype)  # selection keeps bits: no order map needed
    y = ctx.op("Where", cond, to_compute(ctx, a, dtype, compute, False), to_compute(ctx, b, dtype, compute, False))
    return from_compute(ctx, y, dtype, compute, False)


def signbit(ctx: EmitContext, x: oir.Value, dtype: DType) -> oir.Value:
    """``np.signbit(x)`` for non-NaN float ``x``: ``x < 0 or 1/x < 0`` (1/-0.0 is -inf)."""
    zero_ = ctx.const(0, dtype)
    return ctx.op("Or", ctx.op("Less", x, zero_), ctx.op("Less", ctx.op("Reciprocal", x), zero_))


def negative_zero(ctx: EmitContext, x: oir.Value, dtype: DType) -> oir.Value:
    """Whether float ``x`` is -0.0."""
    zero_ = ctx.const(0, dtype)
    return ctx.op("And", ctx.op("Equal", x, zero_), ctx.op("Less", ctx.op("Reciprocal", x), zero_))


def copysign_one(ctx: EmitContext, x: oir.Value, dtype: DType) -> oir.Value:
    """``copysign(1, x)`` for non-NaN float ``x`` (-1 for -0.0), in both numerics
    modes: for callers whose nonzero result depends on the sign of a zero
    (``atan2(-0.0, -1) = -pi``)."""
    return ctx.op("Where", signbit(ctx, x, dtype), ctx.const(-1, dtype), ctx.const(1, dtype))


def sign_of(ctx: EmitContext, x: oir.Value, dtype: DType) -> oir.Value:
    """``copysign(1, x)`` for non-NaN float ``x`` (-1 for -0.0) under
    ``numerics="strict"``; ONNX ``Sign(x)`` (0 for zeros) under ``"fast"``,
    which gives the same product ``m * sign`` for every nonzero ``x`` and
    a zero of either sign for a zero ``x`` (callers multiply a magnitude
    that is 0 at 0, or ``floor(|x|)``)."""
    if not signed_zeros(ctx):
        return ctx.op("Sign", x)
    return copysign_one(ctx, x, dtype)


def float_compute(dtype: DType) -> DType:
    """The dtype float math on ``dtype`` runs in: float32 for float16 (NumPy's float16 loops)."""
    return F32 if dtype == F16 else dtype


def in_f32(ctx: EmitContext, dtype: DType, fn: Callable[..., oir.Value], *xs: oir.Value,
           float_out: bool = True) -> oir.Value:
    """``fn(*xs)`` computed in float32 when ``dtype`` is float16 (NumPy's
    float16 semantics, see module doc), rounded back to float16 when
    ``float_out`` (a bool result is returned as is); else ``fn(*xs)``."""
    if dtype != F16:
        return fn(*xs)
    y = fn(*(ctx.cast(x, F32) for x in xs))
    return ctx.cast(y, F16) if float_out else y


def zero(ctx: EmitContext, dtype: DType) -> oir.Value:
    """A scalar 0 of ``dtype``."""
    return ctx.const(0, dtype)
