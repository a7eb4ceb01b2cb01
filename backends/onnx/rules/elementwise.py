"""Rules for the elementwise ops ONNX has directly (up to dtype bridges):
unary math, add/sub/mul/div, maximum/minimum, logic, comparisons, where,
clip and cast. Semantics: ``ir/ops/elementwise.py`` (NumPy); ONNX operator
spec for the emitted ops. Ops needing a decomposition live in
``arithmetic.py`` (floor_div, mod, pow) and ``mathfn.py``.
"""

from __future__ import annotations

from backends.onnx.rules.common import B, F16, F32, F64, float_compute, in_f32, kernel_op, where
from backends.onnx.registry import emits
from backends.onnx.rules.transcendental import F64_FORMULAS
from ir.types import DType

# IR op -> ONNX op for float math. float16 computes in float32 (NumPy does);
# float64 uses ``transcendental.F64_FORMULAS`` where onnxruntime has no
# float64 kernel or an inaccurate one (Sin/Cos near their zeros).
FLOAT_UNARY = {
    "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "reciprocal": "Reciprocal",
    "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan",
    "sinh": "Sinh", "cosh": "Cosh", "tanh": "Tanh", "asinh": "Asinh", "acosh": "Acosh",
    "atanh": "Atanh", "erf": "Erf", "floor": "Floor", "ceil": "Ceil",
    "round_half_even": "Round", "isnan": "IsNaN", "isinf": "IsInf",
}
BOOL_RESULT = {"IsNaN", "IsInf"}


def float_unary(onnx_op: str):
    """The rule ``y = onnx_op(x)`` for a float IR op."""
    def rule(ctx, node, x):
        dtype = node.inputs[0].dtype
        if dtype == F64 and node.op in F64_FORMULAS:
            return F64_FORMULAS[node.op](ctx, x)
        if dtype is not F16:
            return ctx.op(onnx_op, x)
        return in_f32(ctx, dtype, lambda v: ctx.op(onnx_op, v), x, float_out=onnx_op not in BOOL_RESULT)

    rule.__doc__ = (f"{onnx_op}(x); float16 computes in float32 as NumPy does; float64 uses "
                    f"transcendental.F64_FORMULAS where onnxruntime's kernel is missing or inaccurate.")
    return rule


for _op, _onnx in FLOAT_UNARY.items():
    emits(_op)(float_unary(_onnx))


@emits("neg", "abs", "sign")
def signed_unary(ctx, node, x):
    """Neg / Abs / Sign (every int and float dtype has a kernel; float16
    goes through float32 because onnxruntime's float16 Sign maps NaN to 0)."""
    onnx_op = {"neg": "Neg", "abs": "Abs", "sign": "Sign"}[node.op]
    return in_f32(ctx, node.inputs[0].dtype, lambda v: ctx.op(onnx_op, v), x)


@emits("invert")
def invert(ctx, node, x):
    """``np.invert``: Not on bool, BitwiseNot on ints."""
    return ctx.op("Not" if node.inputs[0].dtype == B else "BitwiseNot", x)


@emits("add", "sub", "mul", "div")
def arithmetic(ctx, node, a, b):
    """Add / Sub / Mul / Div with NumPy broadcasting; ints wrap as in NumPy
    (``div`` is float-only); float16 computes in float32 and rounds once,
    which is NumPy's float16 semantics."""
    onnx_op = ARITHMETIC[node.op]
    dtype = node.inputs[0].dtype
    if dtype is not F16:
        return kernel_op(ctx, onnx_op, dtype, a, b)
    return in_f32(ctx, dtype, lambda x, y: kernel_op(ctx, onnx_op, F32, x, y), a, b)


ARITHMETIC = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div"}


@emits("maximum", "minimum")
def extremum(ctx, node, a, b):
    """``np.maximum``/``np.minimum``: Max/Min (onnxruntime propagates NaN from
    either side, as NumPy does); Or/And on bool; int16/uint16 via int32;
    int64 as ``Where(Greater(a, b), a, b)`` (resp. ``Less``), because
    onnxruntime 1.31's int64 Max/Min are wrong for some values (Max(0, 2**31)
    is 0)."""
    dtype = node.inputs[0].dtype
    if dtype == B:
        return ctx.op("Or" if node.op == "maximum" else "And", a, b)
    if dtype == DType.INT64:
        wins = ctx.op("Greater" if node.op == "maximum" else "Less", a, b)
        return ctx.op("Where", wins, a, b)
    onnx_op = "Max" if node.op == "maximum" else "Min"
    return in_f32(ctx, dtype, lambda x, y: kernel_op(ctx, onnx_op, float_compute(dtype), x, y), a, b)


@emits("and", "or", "xor")
def logic(ctx, node, a, b):
    """``np.bitwise_and/or/xor``: And/Or/Xor on bool, Bitwise* on ints."""
    name = {"and": "And", "or": "Or", "xor": "Xor"}[node.op]
    return ctx.op(name if node.inputs[0].dtype == B else f"Bitwise{name}", a, b)


@emits("shift_right")
def shift_right(ctx, node, a, b):
    """``np.right_shift`` of unsigned ints: ONNX ``BitShift`` with direction
    RIGHT (onnxruntime's kernel, like NumPy, gives 0 for a shift of at least
    the bit width)."""
    return ctx.op("BitShift", a, b, direction="RIGHT")


COMPARE = {"lt": "Less", "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual"}


@emits("eq", "ne", "lt", "le", "gt", "ge")
def compare(ctx, node, a, b):
    """NumPy comparisons (bool result; NaN compares false, ``ne`` true):
    Equal (every dtype), Not(Equal), Less/LessOrEqual/Greater/GreaterOrEqual
    (bool through uint8)."""
    dtype = node.inputs[0].dtype
    if node.op in ("eq", "ne"):
        eq = ctx.op("Equal", a, b)
        return eq if node.op == "eq" else ctx.op("Not", eq)
    return compare_values(ctx, COMPARE[node.op], dtype, a, b)


def compare_values(ctx, onnx_op, dtype, a, b):
    """``onnx_op(a, b)`` (Less, Greater, ...) for ``dtype`` inputs, bridged as needed."""
    return kernel_op(ctx, onnx_op, dtype, a, b, same_out=False)


@emits("where")
def where_rule(ctx, node, cond, a, b):
    """``np.where(cond, a, b)``: Where (bridged for bool, int16, uint16, uint64)."""
    return where(ctx, cond, a, b, node.outputs[0].dtype)


@emits("clip")
def clip(ctx, node, x, lo, hi):
    """PyTensor Clip: ``where(x < lo, lo, where(x > hi, hi, x))`` with
    broadcast bounds; NaN in x passes through. Emitted as that Where chain
    (ONNX Clip wants scalar bounds)."""
    dtype = node.outputs[0].dtype
    inner = where(ctx, compare_values(ctx, "Greater", dtype, x, hi), hi, x, dtype)
    return where(ctx, compare_values(ctx, "Less", dtype, x, lo), lo, inner, dtype)


@emits("cast")
def cast(ctx, node, x):
    """NumPy ``astype``: ONNX Cast (float to int truncates toward zero;
    nonzero and NaN to bool are true). float64 to float16 rounds once, as
    NumPy does (``f64_to_f16``). Float to int of NaN, Inf or out-of-range
    values is undefined in NumPy (a C cast); onnxruntime gives the same
    x86 results."""
    src, to = node.inputs[0].dtype, node.attrs["to"]
    if src == F64 and to == F16:
        return f64_to_f16(ctx, x)
    return ctx.cast(x, to)


F16_MAX, F16_OVERFLOW = 65504.0, 65520.0


def f64_to_f16(ctx, x):
    """float64 -> float16 with one round-to-nearest-even, as NumPy's
    ``npy_double_to_half``. onnxruntime casts through float32, which rounds
    twice: wrong exactly when the float32 value ``y`` is a float16 midpoint
    that ``x`` is not. There ``y`` is nudged by 2^-20 relative toward ``x``
    (far less than half a float16 ulp, more than a float32 ulp), so the
    float16 rounding goes the way ``x`` lies. A midpoint is detected as a
    float32 ``y`` not in float16 whose mirror ``2*y - h`` about the nearest
    float16 ``h`` is in float16. The top midpoint 65520 (next to float16's
    inf) is handled apart: ``|x| < 65520`` rounds to 65504.
    """
    y = ctx.cast(x, F32)
    h = ctx.cast(ctx.cast(y, F16), F32)
    d = ctx.op("Sub", y, h)
    mirror = ctx.op("Add", h, ctx.op("Add", d, d))
    mirror_is_f16 = ctx.op("Equal", ctx.cast(ctx.cast(mirror, F16), F32), mirror)
    inexact = ctx.op("Not", ctx.op("Equal", ctx.cast(y, F64), x))
    midpoint = ctx.op("And", ctx.op("And", inexact, mirror_is_f16),
                      ctx.op("Not", ctx.op("Equal", d, ctx.const(0, F32))))
    # the factor moves y up when x > y: grow |y| for positive y, shrink it for negative y
    grow = ctx.op("Equal", ctx.op("Greater", x, ctx.cast(y, F64)), ctx.op("Greater", y, ctx.const(0, F32)))
    toward = ctx.op("Where", grow, ctx.const(1 + 2.0**-20, F32), ctx.const(1 - 2.0**-20, F32))
    y = ctx.op("Mul", y, ctx.op("Where", midpoint, toward, ctx.const(1, F32)))
    r = ctx.cast(y, F16)
    below_top = ctx.op("And", ctx.op("Less", ctx.op("Abs", x), ctx.const(F16_OVERFLOW, F64)),
                       ctx.op("IsInf", ctx.cast(r, F32)))
    top = ctx.op("Mul", ctx.cast(ctx.op("Sign", x), F16), ctx.const(F16_MAX, F16))
    return where(ctx, below_top, top, r, F16, exact_zero_sign=True)  # a cast: exact in both modes
