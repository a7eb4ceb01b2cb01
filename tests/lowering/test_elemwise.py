"""Differential tests of the Elemwise lowering (scalar-op table, Composite,
inplace variants, top-level scalar ops): PyTensor vs onnxruntime vs the IR
interpreter, dtype and shape included, on edge values (signed zeros, .5
ties, NaN, Inf, negative integers)."""

from __future__ import annotations

import warnings

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.math import mul_without_zeros
from pytensor.tensor.xlogx import xlogx, xlogy0

from compiler import UnsupportedOpsError, compile_to_onnx
from compiler.lowering import graph_spec, lower
from ir.interpreter import evaluate
from tests.helpers import assert_same, check_pytensor, pytensor_reference

DTYPES = ["float32", "float64", "int32", "int64", "bool"]
FLOATS = [-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, -3.7, 0.3, 1e-8, 40.0, np.nan, np.inf, -np.inf]
INTS = [-7, -3, -1, 0, 1, 2, 5, 100]
EDGE = {
    "float32": np.array(FLOATS, dtype="float32"),
    "float64": np.array(FLOATS, dtype="float64"),
    "int32": np.array(INTS, dtype="int32"),
    "int64": np.array(INTS, dtype="int64"),
    "bool": np.array([True, False]),
}


def _per_dtype(fn, dtypes=DTYPES):
    """One vector input per dtype PyTensor accepts for ``fn``, with its edge values:
    (inputs, outputs, values)."""
    inputs, outputs, values = [], [], []
    for dtype in dtypes:
        x = pt.vector(f"x_{dtype}", dtype=dtype)
        try:
            out = fn(x)
        except TypeError:  # PyTensor rejects the op on this dtype
            continue
        inputs.append(x)
        outputs.append(out)
        values.append(EDGE[dtype])
    assert outputs, "no dtype accepted"
    return inputs, outputs, values


# -- unary ops ----------------------------------------------------------------
UNARY = {
    "neg": pt.neg, "abs": pt.abs, "sgn": pt.sign, "sqr": pt.sqr, "sqrt": pt.sqrt,
    "exp": pt.exp, "exp2": pt.exp2, "expm1": pt.expm1,
    "log": pt.log, "log2": pt.log2, "log10": pt.log10, "log1p": pt.log1p, "log1mexp": pt.log1mexp,
    "sigmoid": pt.sigmoid, "softplus": pt.softplus, "erf": pt.erf,
    "sin": pt.sin, "cos": pt.cos, "tan": pt.tan, "arcsin": pt.arcsin, "arccos": pt.arccos, "arctan": pt.arctan,
    "sinh": pt.sinh, "cosh": pt.cosh, "tanh": pt.tanh,
    "arcsinh": pt.arcsinh, "arccosh": pt.arccosh, "arctanh": pt.arctanh,
    "floor": pt.floor, "ceil": pt.ceil, "trunc": pt.trunc,
    "round_half_to_even": pt.round_half_to_even, "round_half_away_from_zero": pt.round_half_away_from_zero,
    "reciprocal": pt.reciprocal, "deg2rad": pt.deg2rad, "rad2deg": pt.rad2deg,
    "invert": pt.invert, "isnan": pt.isnan, "isinf": pt.isinf, "identity": pt.tensor_copy,
}


# onnxruntime 1.31 implements these only in float32, and the emitter refuses
# float64 rather than lose precision: their float64 results are checked on
# the lowered IR with the interpreter instead.
ORT_FLOAT32_ONLY = {"tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "erf"}
# PyTensor's Python Softplus on a bool computes through NumPy float16
# (np.exp(True)); its Numba backend and this compiler compute in float32.
NOT_ON_BOOL = {"softplus"}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    dtypes = [d for d in DTYPES if not (d == "bool" and name in NOT_ON_BOOL)]
    inputs, outputs, values = _per_dtype(UNARY[name], dtypes)
    if name not in ORT_FLOAT32_ONLY:
        check_pytensor(inputs, outputs, values)
        return
    f64 = [i for i, out in enumerate(outputs) if out.dtype == "float64"]
    f32 = [i for i, out in enumerate(outputs) if out.dtype != "float64"]
    check_pytensor([inputs[i] for i in f32], [outputs[i] for i in f32], [values[i] for i in f32])
    check_lowering([inputs[i] for i in f64], [outputs[i] for i in f64], [values[i] for i in f64])


def check_lowering(inputs, outputs, values):
    """The lowered IR, run by the interpreter, against PyTensor (no ONNX)."""
    want = pytensor_reference(inputs, outputs, values)
    got = evaluate(lower(graph_spec(list(inputs), list(outputs))).graph, values)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_same(g, w, rtol=1e-12, atol=1e-12, what=f"IR interpreter output {i}")


def test_rounding_ties_both_modes():
    x = pt.dvector("x")
    f = pt.vector("f", dtype="float32")
    ties = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]
    compiled = check_pytensor([x, f], [pt.round_half_to_even(x), pt.round_half_away_from_zero(x),
                                       pt.round_half_to_even(f), pt.round_half_away_from_zero(f)],
                              [np.array(ties), np.array(ties, dtype="float32")])
    even, away = compiled.run(np.array(ties), np.array(ties, dtype="float32"))[:2]
    np.testing.assert_array_equal(even, [-2, -2, -0, 0, 2, 2])
    np.testing.assert_array_equal(away, [-3, -2, -1, 1, 2, 3])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_deg2rad_rad2deg_bit_exact(dtype):
    x = pt.vector("x", dtype=dtype)
    value = np.linspace(-720, 720, 4001).astype(dtype)
    compiled = check_pytensor([x], [pt.deg2rad(x), pt.rad2deg(x)], [value])
    rad, deg = compiled.run(value)
    np.testing.assert_array_equal(rad, np.deg2rad(value))
    np.testing.assert_array_equal(deg, np.rad2deg(value))


# -- binary ops ---------------------------------------------------------------
# (x dtype, y dtype) pairs, mixed ones included: PyTensor upcasts.
PAIRS = [("float64", "float64"), ("float32", "float32"), ("int32", "int32"), ("int64", "int64"),
         ("bool", "bool"), ("int32", "float32"), ("int64", "float32"), ("float32", "float64"),
         ("int32", "int64"), ("bool", "int64"), ("bool", "float32"), ("int8", "uint8")]
NONZERO_INTS = [-7, -3, -1, 1, 2, 5]
BINARY = {
    "add": pt.add, "sub": pt.sub, "mul": pt.mul, "true_div": pt.true_div, "maximum": pt.maximum,
    "minimum": pt.minimum, "lt": pt.lt, "gt": pt.gt, "le": pt.le, "ge": pt.ge, "eq": pt.eq, "neq": pt.neq,
    "and": pt.and_, "or": pt.or_, "xor": pt.xor,
    # integer division by zero is an error in PyTensor's C code: nonzero integer divisors
    "int_div": pt.int_div, "mod": pt.mod,
    # integers to negative powers are an error in NumPy: nonnegative integer exponents
    "pow": pt.pow,
}


def _operand(dtype, role, name):
    if dtype == "bool":
        return np.array([True] if role == "divisor" else [True, False])
    if dtype.startswith("float"):
        return np.array(FLOATS, dtype=dtype)
    ints = {"divisor": NONZERO_INTS, "exponent": [0, 1, 2, 3]}.get(role, INTS)
    return np.array([v for v in ints if v >= 0] if dtype.startswith("u") else ints, dtype=dtype)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name):
    """Every legal dtype pair, all combinations of edge values by broadcasting
    a column against a row."""
    role = {"int_div": "divisor", "mod": "divisor", "pow": "exponent"}.get(name, "value")
    inputs, outputs, values = [], [], []
    for i, (dx, dy) in enumerate(PAIRS):
        x = pt.tensor(f"x{i}", dtype=dx, shape=(None, 1))
        y = pt.tensor(f"y{i}", dtype=dy, shape=(1, None))
        try:
            out = BINARY[name](x, y)
        except TypeError:
            continue
        inputs += [x, y]
        outputs.append(out)
        values += [_operand(dx, "value", name)[:, None], _operand(dy, role, name)[None, :]]
    check_pytensor(inputs, outputs, values)


def test_must_have_cases():
    x = pt.dvector("x")
    i = pt.lvector("i")
    compiled = check_pytensor([x, i], [x * 2, i + 1, i // 2],
                              [np.array([1.5, -2.0, np.inf]), np.array([-7, -2, -1, 0, 3, 8])])
    assert [str(v.type.dtype) for v in compiled.ir.outputs] == ["f64", "i64", "i64"]
    _, plus_one, halves = compiled.run(np.array([1.5, -2.0, np.inf]), np.array([-7, -2, -1, 0, 3, 8]))
    np.testing.assert_array_equal(plus_one, [-6, -1, 0, 1, 4, 9])
    np.testing.assert_array_equal(halves, [-4, -1, -1, 0, 1, 4])  # floor, not truncation


def test_variadic_add_and_mul():
    x, y, z = pt.dvector("x"), pt.fvector("y"), pt.lvector("z")
    add3 = Elemwise(ps.add)(x, y, z)
    mul3 = Elemwise(ps.mul)(z, y, x)
    check_pytensor([x, y, z], [add3, mul3], [np.array([0.5, -1.0]), np.float32([2.0, 3.5]), np.array([3, -4])])


# -- casts, switch, clip, second ------------------------------------------------
CAST_PAIRS = [("float64", "int64"), ("float32", "int32"), ("float64", "int8"), ("float64", "bool"),
              ("float32", "bool"), ("int64", "float32"), ("int32", "float64"), ("bool", "float64"),
              ("bool", "int32"), ("int64", "int32"), ("int32", "bool"), ("float64", "float32"),
              ("float32", "float64"), ("int64", "uint8")]


@pytest.mark.parametrize("src,dst", CAST_PAIRS)
def test_cast(src, dst):
    """Float to int truncates toward zero (negatives included); NaN and Inf are
    only cast to floats and bool (to an int they are undefined behaviour in C)."""
    x = pt.vector("x", dtype=src)
    if src.startswith("float"):
        values = [-2.7, -2.5, -0.5, -0.0, 0.0, 0.4, 1.5, 99.9]
        if dst in ("bool", "float32", "float64"):
            values += [np.nan, np.inf, -np.inf]
        value = np.array(values, dtype=src)
    else:
        value = EDGE[src]
    if dst.startswith("u"):
        value = value[value > -1]
    check_pytensor([x], [pt.cast(x, dst)], [value])


def test_switch_condition_dtypes():
    a, b = pt.dvector("a"), pt.lvector("b")
    cb, ci, cf = pt.vector("cb", dtype="bool"), pt.vector("ci", dtype="int8"), pt.fvector("cf")
    n = 5
    values = [np.arange(n) - 2.5, np.arange(n) * 10, np.array([True, False, True, False, False]),
              np.int8([0, 1, -3, 0, 2]), np.float32([0.0, -0.0, np.nan, 1e-30, -np.inf])]
    check_pytensor([a, b, cb, ci, cf], [pt.switch(cb, a, b), pt.switch(ci, b, a), pt.switch(cf, a, 7)], values)


def test_clip():
    x, lo, hi = pt.dvector("x"), pt.dscalar("lo"), pt.dscalar("hi")
    i = pt.ivector("i")
    bx, blo, bhi = (pt.vector(n, dtype="bool") for n in ("bx", "blo", "bhi"))
    values = [np.array([-3.0, -1.0, 0.5, 2.0, np.nan, np.inf]), np.array(-1.0), np.array(1.0),
              np.int32([-5, 0, 5, 9]),
              np.array([True, False, True, False]), np.array([True, True, False, False]),
              np.array([True, False, False, True])]
    check_pytensor([x, lo, hi, i, bx, blo, bhi],
                   [pt.clip(x, lo, hi), pt.clip(i, -2, 6), Elemwise(ps.clip)(bx, blo, bhi)], values)


def test_second_broadcasts_to_both_shapes():
    x = pt.tensor("x", dtype="float32", shape=(None, 1))
    y = pt.tensor("y", dtype="int64", shape=(1, None))
    check_pytensor([x, y], [pt.second(x, y), pt.fill(y, x), pt.zeros_like(x), pt.ones_like(y, dtype="float64")],
                   [np.float32([[1.0], [2.0], [3.0]]), np.array([[4, 5]])])


def test_mul_without_zeros_and_xlogx():
    """Exact where-decompositions of MulWithoutZeros and (PyTensor 2's scalar,
    PyTensor 3's switch graph) xlogx / xlogy0."""
    x, y = pt.dvector("x"), pt.dvector("y")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # deprecated in PyTensor 3
        outs = [Elemwise(mul_without_zeros)(x, y), xlogx(x), xlogy0(x, y)]
    values = [np.array([0.0, 0.0, 2.0, 1.5, -0.0, np.nan]), np.array([0.0, 3.0, 0.0, 4.0, 2.0, 1.0])]
    check_pytensor([x, y], outs, values)


# -- Composite and inplace ---------------------------------------------------------
def test_composite_multi_output_with_constants_and_broadcast():
    xs, ys = ps.float64("xs"), ps.int32("ys")
    # output 1 reads only xs: Elemwise still broadcasts it against ys
    comp = ps.Composite([xs, ys], [ps.exp(xs) * 2.0 + ys, ps.sqr(xs) - 1.5, ps.lt(ys, 3)])
    x = pt.tensor("x", dtype="float64", shape=(None, 1))
    y = pt.tensor("y", dtype="int32", shape=(1, None))
    outs = Elemwise(comp)(x, y)
    compiled = check_pytensor([x, y], outs, [np.array([[-1.0], [0.5], [np.nan]]), np.int32([[1, 3, -4, 7]])])
    assert compiled.ir.outputs[1].type.rank == 2


def test_nested_composite():
    a, b = ps.float32("a"), ps.float32("b")
    inner = ps.Composite([a, b], [ps.log1p(a * b)])
    c, d = ps.float32("c"), ps.float32("d")
    outer = ps.Composite([c, d], [inner(c, d) + ps.true_div(c, d)])
    x, y = pt.fvector("x"), pt.fvector("y")
    check_pytensor([x, y], [Elemwise(outer)(x, y)], [np.float32([0.5, 2.0, -0.25]), np.float32([1.0, -0.1, 3.0])])


def test_inplace_elemwise_computes_the_same_values():
    x, y = pt.dvector("x"), pt.dvector("y")
    t = x * 3.0  # an intermediate the inplace node may destroy
    out = Elemwise(ps.add, inplace_pattern={0: 0})(t, y)
    values = [np.array([1.0, -2.0]), np.array([0.5, 0.25])]
    # pytensor.function refuses user-made inplace ops: the reference is the outplace graph
    check_pytensor([x, y], [out], values, reference=pytensor_reference([x, y], [t + y], values))


def test_scalar_ops_at_the_top_level():
    """ScalarType arithmetic between ScalarFromTensor and TensorFromScalar."""
    n = pt.lscalar("n")
    s = pt.scalar_from_tensor(n)
    out = pt.tensor_from_scalar(ps.int_div(s * 3, ps.constant(np.int64(2))) - 1)
    check_pytensor([n], [out], [np.array(-5)])


# -- unsupported ops ----------------------------------------------------------------
def test_unsupported_scalar_op_is_named():
    x = pt.dvector("x")
    with pytest.raises(UnsupportedOpsError) as err:
        compile_to_onnx([x], outputs=[pt.angle(x) + pt.real(pt.complex(x, 2 * x)), pt.exp(x)])
    message = str(err.value)
    assert "angle" in message.lower() and "complex" in message.lower()
    assert len(err.value.occurrences) == 3  # Angle, Complex, and Real (its input has no value)


def test_unsupported_scalar_op_inside_composite():
    xs = ps.float64("xs")
    comp = ps.Composite([xs], [ps.exp(xs) + ps.angle(xs)])
    x = pt.dvector("x")
    with pytest.raises(UnsupportedOpsError, match="angle"):
        compile_to_onnx([x], outputs=[Elemwise(comp)(x)])


# -- property-based: random shapes, dtypes and values -------------------------------
HYPOTHESIS_OPS = {"add": pt.add, "sub": pt.sub, "mul": pt.mul, "true_div": pt.true_div,
                  "maximum": pt.maximum, "ge": pt.ge, "eq": pt.eq}
NUMBER_DTYPES = ["float32", "float64", "int32", "int64"]


@st.composite
def _operands(draw):
    ndim = draw(st.integers(0, 3))
    full = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    shapes = [tuple(1 if draw(st.booleans()) else d for d in full) for _ in range(2)]
    dtypes = [draw(st.sampled_from(NUMBER_DTYPES)) for _ in range(2)]
    arrays = []
    for shape, dtype in zip(shapes, dtypes):
        size = int(np.prod(shape))
        if dtype.startswith("float"):
            elems = st.floats(-1e3, 1e3, width=32) | st.sampled_from([0.5, -2.5, np.inf, np.nan])
        else:
            elems = st.integers(-1000, 1000)
        arrays.append(np.array(draw(st.lists(elems, min_size=size, max_size=size)), dtype=dtype).reshape(shape))
    return draw(st.sampled_from(sorted(HYPOTHESIS_OPS))), arrays


@settings(max_examples=12, deadline=None)
@given(_operands())
def test_binary_ops_random_shapes_and_dtypes(case):
    name, (a, b) = case
    x = pt.tensor("x", dtype=str(a.dtype), shape=tuple(1 if d == 1 else None for d in a.shape))
    y = pt.tensor("y", dtype=str(b.dtype), shape=tuple(1 if d == 1 else None for d in b.shape))
    check_pytensor([x, y], [HYPOTHESIS_OPS[name](x, y)], [a, b])
