"""Rules for ``floor_div``, ``mod`` and ``pow``: NumPy's Python-style
integer division and remainder, and NumPy's float ``divmod`` algorithm,
which ONNX Div/Mod/Pow do not compute directly.

Semantics: ``np.floor_divide``, ``np.remainder``, ``np.power`` (see
``npy_divmod`` and ``npy_remainder`` in NumPy's ``npy_math_internal.h``).
Integer division by zero gives 0, as NumPy does (with a warning); the model
never divides by zero or computes ``INT_MIN / -1`` (both trap on x86).
"""

from __future__ import annotations

from backends.onnx.rules.common import B, F16, F32, I64, U64, in_f32, signbit, signed_zeros, where, zero
from backends.onnx.registry import emits


def _int_guard(ctx, b, dtype):
    """``(b_safe, div_by_zero, div_by_minus_one)``: ``b`` with 0 and -1
    replaced by 1, so Div/Mod never trap; the masks say where they were."""
    is_zero = ctx.op("Equal", b, zero(ctx, dtype))
    bad = is_zero
    is_m1 = None
    if dtype.is_signed:
        is_m1 = ctx.op("Equal", b, ctx.const(-1, dtype))
        bad = ctx.op("Or", is_zero, is_m1)
    return where(ctx, bad, ctx.const(1, dtype), b, dtype), is_zero, is_m1


@emits("floor_div")
def floor_div(ctx, node, a, b):
    """``np.floor_divide``. Signed ints: ``q = Div(a, b)`` truncates, so
    ``q -= (r != 0) & ((r < 0) != (b < 0))`` with ``r = a - q*b``; ``a // -1``
    is ``-a`` (wrapping) and ``a // 0`` is 0. Unsigned: Div. Floats: NumPy's
    ``npy_divmod`` step by step (see ``float_floor_div``); float16 in float32,
    as NumPy's float16 loop does."""
    dtype = node.inputs[0].dtype
    if dtype.is_float:
        compute = F32 if dtype == F16 else dtype
        return in_f32(ctx, dtype, lambda x, y: float_floor_div(ctx, x, y, compute), a, b)
    b_safe, is_zero, is_m1 = _int_guard(ctx, b, dtype)
    q = ctx.op("Div", a, b_safe)
    if dtype.is_signed:
        r = ctx.op("Sub", a, ctx.op("Mul", q, b_safe))
        zero_ = zero(ctx, dtype)
        wrong_sign = ctx.op("Xor", ctx.op("Less", r, zero_), ctx.op("Less", b_safe, zero_))
        adjust = ctx.op("And", wrong_sign, ctx.op("Not", ctx.op("Equal", r, zero_)))
        q = ctx.op("Sub", q, ctx.cast(adjust, dtype))
        q = where(ctx, is_m1, ctx.op("Sub", zero_, a), q, dtype)
    return where(ctx, is_zero, zero(ctx, dtype), q, dtype)


def _with_zero_sign(ctx, y, negative, dtype):
    """``y`` with its zeros made -0.0 where ``negative`` holds. ``y`` must hold
    +0.0 there (a Where of the constant 0): multiplying by -1 is then exact,
    and no selected -0.0 is left to onnxruntime's Where (see ``common.where``).
    Only under ``numerics="strict"`` (the callers skip it under ``"fast"``,
    where those zeros stay +0.0)."""
    return ctx.op("Mul", y, ctx.op("Where", negative, ctx.const(-1, dtype), ctx.const(1, dtype)))


def float_floor_div(ctx, a, b, dtype):
    """NumPy's float floor division (``npy_floor_divide``/``npy_divmod``)::

        b == 0: a / b
        mod = fmod(a, b); div = (a - mod) / b
        if mod != 0 and (b < 0) != (mod < 0): div -= 1
        div == 0: copysign(0, a / b)   (+0.0 under numerics="fast")
        else: fl = floor(div); fl + 1 if div - fl > 0.5 else fl
    """
    zero_, one_ = ctx.const(0, dtype), ctx.const(1, dtype)
    mod = ctx.op("Mod", a, b, fmod=1)
    div = ctx.op("Div", ctx.op("Sub", a, mod), b)
    wrong_sign = ctx.op("Xor", ctx.op("Less", b, zero_), ctx.op("Less", mod, zero_))
    adjust = ctx.op("And", wrong_sign, ctx.op("Not", ctx.op("Equal", mod, zero_)))
    div = ctx.op("Where", adjust, ctx.op("Sub", div, one_), div)
    fl = ctx.op("Floor", div)
    snap = ctx.op("Greater", ctx.op("Sub", div, fl), ctx.const(0.5, dtype))
    fl = ctx.op("Where", snap, ctx.op("Add", fl, one_), fl)
    quotient = ctx.op("Div", a, b)  # +/-inf or NaN where b == 0, never a zero
    div_zero, b_zero = ctx.op("Equal", div, zero_), ctx.op("Equal", b, zero_)
    y = ctx.op("Where", b_zero, quotient, ctx.op("Where", div_zero, zero_, fl))
    if not signed_zeros(ctx):
        return y
    negative = ctx.op("And", ctx.op("And", div_zero, ctx.op("Not", b_zero)), signbit(ctx, quotient, dtype))
    return _with_zero_sign(ctx, y, negative, dtype)


def float_mod(ctx, a, b, dtype):
    """NumPy's float remainder (``npy_remainder``)::

        mod = fmod(a, b)           (NaN when b == 0)
        mod != 0 and (b < 0) != (mod < 0): mod + b
        mod == 0: copysign(0, b)       (+0.0 under numerics="fast")
    """
    zero_ = ctx.const(0, dtype)
    mod = ctx.op("Mod", a, b, fmod=1)
    wrong_sign = ctx.op("Xor", ctx.op("Less", b, zero_), ctx.op("Less", mod, zero_))
    is_zero = ctx.op("Equal", mod, zero_)
    adjust = ctx.op("And", wrong_sign, ctx.op("Not", is_zero))
    y = ctx.op("Where", is_zero, zero_, ctx.op("Where", adjust, ctx.op("Add", mod, b), mod))
    if not signed_zeros(ctx):
        return y
    return _with_zero_sign(ctx, y, ctx.op("And", is_zero, signbit(ctx, b, dtype)), dtype)


@emits("mod")
def mod(ctx, node, a, b):
    """``np.remainder`` (sign of the divisor). Ints: ONNX Mod with fmod=0 has
    that sign already; ``a % 0`` is 0 and ``a % -1`` is 0 (guarded). Floats:
    NumPy's algorithm (``float_mod``); float16 in float32 as NumPy does."""
    dtype = node.inputs[0].dtype
    if dtype.is_float:
        compute = F32 if dtype == F16 else dtype
        return in_f32(ctx, dtype, lambda x, y: float_mod(ctx, x, y, compute), a, b)
    b_safe, _, _ = _int_guard(ctx, b, dtype)  # a % 1 == 0 covers b == 0 and b == -1
    return ctx.op("Mod", a, b_safe, fmod=0)


@emits("pow")
def pow_(ctx, node, a, b):
    """``np.power``. Floats: Pow (float16 in float32). Ints: exponentiation
    by squaring in wrapping int64 arithmetic, one Loop iteration per bit of
    the exponent, then Cast back (exact mod 2^w, as NumPy's integer power).
    onnxruntime's integer Pow goes through double and is wrong past 2^53.
    Negative integer exponents are an error in NumPy; here they give an
    unspecified value."""
    dtype = node.inputs[0].dtype
    if dtype.is_float:
        return in_f32(ctx, dtype, lambda x, y: ctx.op("Pow", x, y), a, b)
    return _int_pow(ctx, a, b, dtype, node.outputs[0].rank)


def _int_pow(ctx, a, b, dtype, rank):
    """``a ** b`` for ints of ``dtype`` (result rank ``rank``): a Loop of one
    iteration per bit of ``dtype`` carrying (result, base, exponent)::

        result *= base if exponent & 1 else 1; base *= base; exponent >>= 1

    in int64 (the exponent as uint64 for the shift), all broadcast first.
    """
    base = ctx.cast(a, I64)
    exponent = ctx.cast(b, U64)
    base = ctx.op("Expand", base, ctx.op("Shape", exponent))
    exponent = ctx.op("Expand", exponent, ctx.op("Shape", base))
    result = ctx.op("Expand", ctx.const(1, I64), ctx.op("Shape", base))
    with ctx.body() as body:
        i = ctx.body_input("i", I64, [])
        cond = ctx.body_input("cond", B, [])
        shape = [None] * rank
        r_in, b_in, e_in = (ctx.body_input(n, t, shape) for n, t in (("acc", I64), ("base", I64), ("exp", U64)))
        one_u = ctx.const(1, U64)
        bit = ctx.op("Equal", ctx.op("BitwiseAnd", e_in, one_u), one_u)
        r_out = ctx.op("Mul", r_in, ctx.op("Where", bit, b_in, ctx.const(1, I64)))
        b_out = ctx.op("Mul", b_in, b_in)
        e_out = ctx.op("BitShift", e_in, one_u, direction="RIGHT")
        cond_out = ctx.op("Identity", cond)
    graph = ctx.subgraph(body, [i, cond, r_in, b_in, e_in], [cond_out, r_out, b_out, e_out], "pow_body")
    bits = 8 * dtype.numpy.itemsize
    out, _, _ = ctx.op("Loop", ctx.const(bits, I64), ctx.const(True, B), result, base, exponent,
                       num_outputs=3, body=graph)
    return ctx.cast(out, dtype)

