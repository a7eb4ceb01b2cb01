"""Differential tests of every IR op's ONNX rule: build a one-node IR graph,
emit it, check it with ``onnx.checker`` (full_check) and compare
onnxruntime with the IR interpreter (each op's NumPy ``evaluate``).

Int and bool results must be bit-exact. Float results must match to
``ULPS[op]`` units in the last place of the NumPy result (0 for the ops
that are exact: arithmetic, rounding, comparisons, data movement, and the
decompositions of floor_div, mod, round_half_away, trunc, cumprod, range,
the float64 -> float16 cast), with NaN where NumPy has NaN, infinities
equal and, for the exact ops, the same sign on every zero.

The case table runs every op in every dtype its type rule allows (bool,
int8..uint64, float16..float64) on edge values (NaN, +/-inf, -0.0, .5
ties, int extremes); Hypothesis adds broadcasting shapes and arbitrary
values for the elementwise ops.

These are the bit-exactness tests: models are emitted with
``numerics="strict"``. ``run_case`` also emits every float case with the
default ``numerics="fast"`` and checks it to the same bound, except the sign
of zero results, which the numerics contract leaves open in that mode.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import onnx
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

from backends.onnx import EMITTERS, EmitError, emit_model, make_session
from backends.onnx.rules.mathfn import SIGMOID_FAST_ABS_EPS
from ir import Graph, TensorType
from ir.interpreter import evaluate
from ir.opdef import RANDOM
from ir.ops import all_ops
from ir.types import DType

F16, F32, F64 = DType.FLOAT16, DType.FLOAT32, DType.FLOAT64
BOOL, I8, I16, I32, I64 = DType.BOOL, DType.INT8, DType.INT16, DType.INT32, DType.INT64
U8, U16, U32, U64 = DType.UINT8, DType.UINT16, DType.UINT32, DType.UINT64
FLOATS = (F16, F32, F64)
INTS = (I8, I16, I32, I64, U8, U16, U32, U64)
SIGNED_INTS = (I8, I16, I32, I64)
MAIN = (F32, F64, I32, I64, BOOL)  # every op runs in these (where its type rule allows)
ALL = (BOOL,) + INTS + FLOATS

# Largest allowed error in ulps of the NumPy result for float outputs.
# Transcendentals differ between libm/SVML (NumPy) and onnxruntime's own
# kernels (or the float64 forms in rules/transcendental.py) by a few ulps:
# the measured maxima are 4 (float32 log, asin, acos, tanh), 5 (float64
# tan) and 6 (onnxruntime's float64 tanh). float16 results are float32
# results rounded, so they may differ by one float16 ulp where the float32
# results straddle a rounding boundary.
ULPS = {op: 4 for op in ("exp", "expm1", "log", "log1p", "sin", "cos", "asin", "acos", "atan",
                         "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "sigmoid",
                         "softplus", "pow", "exp2", "log2", "log10")}
ULPS |= {"tan": 6, "tanh": 6, "softmax": 8, "log_softmax": 8, "reduce_sum": 8, "reduce_prod": 8,
         "matmul": 8}
F16_ULPS = 1  # transcendental float16 results: one float16 ulp
# Softmax results are O(1) quantities computed with sums in a different
# order: near zero (log_softmax of the max element) the error is a few
# machine epsilons absolute, which is many ulps of the tiny result.
ATOL_EPS = {"softmax": 4, "log_softmax": 4}
# onnxruntime's float32 Tanh (MLAS) loses relative accuracy near underflow: 104 ulp at
# x = 2^-126, i.e. 1.5e-43 absolute (the contract: 6 ulp or 2^-140 absolute).
ATOL_FLOAT32 = {"tanh": 2.0**-140}
# Ops whose float16/float32 fast form has an absolute bound in eps (the numerics contract).
FAST_ATOL_EPS = {"sigmoid": SIGMOID_FAST_ABS_EPS}


# -- comparison ----------------------------------------------------------------
def assert_matches(got: np.ndarray, want: np.ndarray, ulps: int, what: str, signed_zeros: bool = False,
                   atol: float = 0.0) -> None:
    """Same dtype and shape; ints/bools equal; floats within ``ulps`` of
    ``want`` or ``atol`` (NaN where ``want`` is NaN, equal infinities, and
    with ``signed_zeros`` the same sign on every zero)."""
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{what}: NaN positions")
    g, w = got[~nan], want[~nan]
    inf = np.isinf(w)
    np.testing.assert_array_equal(g[inf], w[inf], err_msg=f"{what}: infinities")
    g, w = g[~inf], w[~inf]
    if signed_zeros:
        zero = w == 0
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]), err_msg=f"{what}: signs of zeros")
    err = np.abs(g.astype(np.float64) - w.astype(np.float64))
    with np.errstate(over="ignore", invalid="ignore"):  # spacing(float16 max) is inf; 0 * inf
        bound = ulps * np.spacing(np.abs(w)).astype(np.float64)
    bad = ~((err == 0) | (err <= bound) | (err <= atol))  # spacing(float16 max) is inf: 0 * inf is NaN
    if bad.any():
        i = np.flatnonzero(bad)[:5]
        raise AssertionError(f"{what}: {bad.sum()} values beyond {ulps} ulp: got {g[i]}, want {w[i]} "
                             f"(error {err[i] / np.spacing(np.abs(w[i])).astype(np.float64)} ulp)")


# NumPy itself leaves the sign of max(-0.0, 0.0) to the SIMD instruction used.
UNORDERED_ZEROS = {"maximum", "minimum", "reduce_max", "reduce_min"}


def ulps_for(op: str, dtype: DType) -> int:
    u = ULPS.get(op, 0)
    return min(u, F16_ULPS) if dtype == F16 else u


# -- building and running one-op graphs -------------------------------------
@dataclass
class Case:
    """One IR node on given inputs: ``args[i]`` is a graph input unless
    ``i in consts`` (then an IR constant)."""

    op: str
    args: tuple
    attrs: dict = field(default_factory=dict)
    consts: tuple = ()
    num_outputs: int = 1

    @property
    def id(self) -> str:
        dts = "-".join(str(DType.from_numpy(a.dtype)) for a in self.args[:1])
        extra = "-".join(f"{k}={v}" for k, v in sorted(self.attrs.items()) if k != "to") or ""
        to = f"-to{self.attrs['to']}" if "to" in self.attrs else ""
        return f"{self.op}-{dts}{to}{'-' + extra if extra else ''}"


def build(case: Case) -> Graph:
    g = Graph(case.op)
    values = []
    for i, a in enumerate(case.args):
        if i in case.consts:
            values.append(g.add_constant(a, f"c{i}"))
        else:
            values.append(g.add_input(TensorType.of_array(a), f"x{i}"))
    node = g.create_node(case.op, values, case.attrs)
    g.append(node)
    g.set_outputs(list(node.outputs))
    return g


def emit_checked(graph: Graph, numerics: str = "strict") -> onnx.ModelProto:
    """Emit ``graph`` (bit-exact forms unless ``numerics="fast"``) and run
    the full ONNX checker on the model."""
    model = emit_model(graph, numerics=numerics)
    onnx.checker.check_model(model, full_check=True)
    return model


def run_case(case: Case) -> None:
    """Strict mode: the op's bound and signed zeros; fast mode (float cases):
    the same bound, zeros of either sign."""
    graph = build(case)
    feeds = [a for i, a in enumerate(case.args) if i not in case.consts]
    want = evaluate(graph, feeds)
    has_float = any(v.dtype.is_float for v in (*graph.inputs, *graph.outputs, *graph.constants.values()))
    for numerics in ("strict", "fast") if has_float else ("strict",):
        session = make_session(emit_checked(graph, numerics))
        got = session.run(None, {f"x{i}": a for i, a in enumerate(case.args) if i not in case.consts})
        for k, (g, w) in enumerate(zip(got, want)):
            check(case.op, g, w, f"{case.id} output {k} ({numerics})", exact_zero_sign=numerics == "strict",
                  fast=numerics == "fast")


def check(op: str, got: np.ndarray, want: np.ndarray, what: str, exact_zero_sign: bool = True,
          fast: bool = False) -> None:
    """``assert_matches`` with the op's tolerance (under ``numerics="fast"``
    the absolute bound of ``FAST_ATOL_EPS`` for float16/float32); exact ops
    also match signed zeros when ``exact_zero_sign``."""
    dtype = DType.from_numpy(want.dtype)
    ulps = ulps_for(op, dtype)
    atol = ATOL_EPS.get(op, 0) * float(np.finfo(want.dtype).eps) if dtype.is_float else 0.0
    if dtype == DType.FLOAT32:
        atol = max(atol, ATOL_FLOAT32.get(op, 0.0))
    if fast and op in FAST_ATOL_EPS and dtype.is_float and dtype != DType.FLOAT64:
        atol = max(atol, FAST_ATOL_EPS[op] * float(np.finfo(want.dtype).eps))
    signed = exact_zero_sign and ulps == 0 and op not in UNORDERED_ZEROS
    assert_matches(got, want, ulps, what, signed_zeros=signed, atol=atol)


# -- values ----------------------------------------------------------------------
RNG = np.random.default_rng(0)
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 1.0, -1.0, 0.25, -0.9,
           0.99, 3.0, -7.3, 20.0, -20.0, 100.0, 1e-6, -1e-6, 1e-30, 700.0, -700.0, 6e4, 1e300]


def floats(dtype: DType, extra=()) -> np.ndarray:
    """Edge values and random ones in ``dtype`` (overflowing ones become inf)."""
    with np.errstate(over="ignore"):
        return np.concatenate([np.array(SPECIAL + list(extra)), RNG.normal(0, 3, 12)]).astype(dtype.numpy)


def ints(dtype: DType) -> np.ndarray:
    """Extremes, small values and random ones in ``dtype``."""
    info = np.iinfo(dtype.numpy)
    small = [0, 1, 2, 3, 7, 100, info.max, info.max - 1, info.min, info.min + 1]
    if dtype.is_signed:
        small += [-1, -2, -3, -7, -100]
    rand = RNG.integers(info.min, info.max, 8, dtype=dtype.numpy, endpoint=True)
    return np.concatenate([np.array(small, dtype=dtype.numpy), rand])


def values(dtype: DType) -> np.ndarray:
    if dtype == BOOL:
        return np.concatenate([[True, False, True, True, False, False], RNG.random(14) < 0.5])
    return floats(dtype) if dtype.is_float else ints(dtype)


def grid(a: np.ndarray, b: np.ndarray):
    """Every pair: ``a`` as a column, ``b`` as a row (broadcast to a square)."""
    return a[:, None], b[None, :]


def allowed(op: str, dtype: DType) -> bool:
    """Whether the op's type rule accepts inputs of ``dtype``."""
    from ir.opdef import OpError

    t = TensorType(dtype, (2,))
    opdef = all_ops()[op]
    try:
        opdef.infer_types([t] * (opdef.num_inputs or 1), opdef.normalize_attrs({}))
    except OpError:
        return False
    return True


# -- the case table --------------------------------------------------------------
UNARY = ["neg", "abs", "sign", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
         "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
         "acosh", "atanh", "erf", "sigmoid", "softplus", "floor", "ceil", "trunc", "round_half_even",
         "round_half_away", "invert", "isnan", "isinf"]
BINARY = ["add", "sub", "mul", "div", "floor_div", "mod", "maximum", "minimum", "and", "or", "xor",
          "shift_right", "eq", "ne", "lt", "le", "gt", "ge"]


def unary_cases():
    for op in UNARY:
        for dtype in ALL:
            if allowed(op, dtype):
                yield Case(op, (values(dtype),))


def binary_cases():
    for op in BINARY:
        for dtype in ALL:
            if allowed(op, dtype):
                v = values(dtype)
                yield Case(op, grid(v, v))


def pow_cases():
    for dtype in FLOATS:
        v = floats(dtype, extra=[-8.0, 1 / 3])
        yield Case("pow", grid(v, v))
    for dtype in INTS:
        base = ints(dtype)
        bits = 8 * dtype.numpy.itemsize
        exps = np.array([e for e in (0, 1, 2, 3, 5, 7, 15, 31, 62, 63, 64, 127) if e < 2 ** (bits - 1)],
                        dtype=dtype.numpy)
        yield Case("pow", grid(base, exps))


def where_clip_cast_cases():
    for dtype in ALL:
        v = values(dtype)
        cond = RNG.random(v.shape) < 0.5
        yield Case("where", (cond[:, None], v[:, None], v[None, ::-1]))
        if dtype != BOOL:
            lo, hi = np.sort(RNG.choice(v[~np.isnan(v)] if dtype.is_float else v, (2, v.size)), axis=0)
            yield Case("clip", (v, lo, hi))
            yield Case("clip", (v, v[3:4], v[5:6]))  # scalar-like bounds, may be crossed
    for src in ALL:
        for to in ALL:
            v = values(src)
            if src.is_float and to.is_int:  # NumPy's float->int cast is a C cast: defined only in range
                info = np.iinfo(to.numpy)
                v = v[np.isfinite(v) & (v > max(info.min, -6e4)) & (v < min(info.max, 6e4))]
                v = v[(v > -1) | to.is_signed]
            yield Case("cast", (v,), {"to": to})
    f64 = np.array([1 + 2**-11 + 2**-40, 2.98023223876953125e-08 + 1e-20, 65519.999999, 65520.0,
                    -(1 + 2**-11 + 2**-40), 1 + 2**-11, 1 + 3 * 2**-11, 6e-8, 5e-324, np.nan, -0.0])
    yield Case("cast", (f64,), {"to": F16})  # one rounding, not two through float32


def reduction_cases():
    for op in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min"):
        for dtype in ALL:
            if not allowed(op, dtype):
                continue
            x = values(dtype)[:16].reshape(4, 4)
            if op == "reduce_prod" and dtype.is_float:
                x = np.where(np.abs(x) > 50, 1.5, x).astype(dtype.numpy)
            for axes, keep in (((), False), ((1,), True), ((0,), False), ((-1, 0), False)):
                yield Case(op, (x,), {"axes": axes, "keepdims": keep})
            if dtype.is_float and op in ("reduce_max", "reduce_min"):
                clean = RNG.normal(size=(3, 5)).astype(dtype.numpy)
                clean[1, 2] = np.nan
                yield Case(op, (clean,), {"axes": (1,)})
                yield Case(op, (clean,), {"axes": (0,), "keepdims": True})
    for op in ("reduce_all", "reduce_any"):
        x = RNG.random((3, 4)) < 0.5
        x[0] = True
        x[1] = False
        for axes, keep in (((), False), ((1,), True), ((0,), False)):
            yield Case(op, (x,), {"axes": axes, "keepdims": keep})
        yield Case(op, (np.zeros((0, 3), bool),), {"axes": (0,)})  # empty: all -> True, any -> False
    for op in ("argmax", "argmin"):
        for dtype in ALL:
            x = values(dtype)
            x = x[: x.size // 4 * 4].reshape(-1, 4)
            x[1, 1] = x[1, 3]  # a tie: the first index wins
            yield Case(op, (x,), {"axis": 1})
            yield Case(op, (x,), {"axis": 0, "keepdims": True})
    for op in ("cumsum", "cumprod"):
        for dtype in INTS + FLOATS:
            x = values(dtype)[:16].reshape(4, 4)
            if op == "cumprod" and dtype.is_float:
                x = RNG.uniform(-3, 3, (4, 6)).astype(dtype.numpy)
                x[0, 2], x[2, 0], x[3, 3] = np.nan, np.inf, -0.0
            yield Case(op, (x,), {"axis": 1})
            yield Case(op, (x,), {"axis": 0})
            if dtype in (F32, I64):
                yield Case(op, (x.reshape(2, 2, -1),), {"axis": -1})
                yield Case(op, (x[0],), {"axis": 0})
        yield Case(op, (np.ones((2, 0, 3), np.float32),), {"axis": 1})  # empty axis
    for op in ("softmax", "log_softmax"):
        for dtype in FLOATS:
            x = RNG.normal(0, 4, (3, 5)).astype(dtype.numpy)
            x[0, 0] = -np.inf
            yield Case(op, (x,), {"axis": 1})
            yield Case(op, (x,), {"axis": 0})
            inf = np.inf  # lanes with a non-finite max are all NaN in NumPy
            odd = np.array([[-inf, -inf, -inf], [inf, 1, 2], [np.nan, 1, 2], [inf, inf, 1], [3e4, -3e4, 0]])
            yield Case(op, (odd.astype(dtype.numpy),), {"axis": 1})
            wide = RNG.normal(0, 4, (6, 17))
            wide[0], wide[1, 8], wide[2, 16], wide[3, :2], wide[4, 0] = -inf, inf, np.nan, inf, -inf
            for axis in (0, 1):  # long lanes and strided lanes take other kernel paths
                yield Case(op, (wide.astype(dtype.numpy),), {"axis": axis})
    for dtype in INTS + FLOATS:
        info = np.iinfo(dtype.numpy) if dtype.is_int else None
        hi = min(info.max, 50) if info else 4
        lo = 0 if (info and info.min == 0) else -hi

        def m(*shape):
            values = RNG.integers(lo, hi, shape) if info else RNG.normal(0, hi, shape)
            return values.astype(dtype.numpy)

        yield Case("matmul", (m(3, 4), m(4, 5)))
        if dtype in (F32, I64, I8):
            yield Case("matmul", (m(2, 1, 3, 4), m(5, 4, 2)))
            yield Case("matmul", (m(4), m(4, 2)))
            yield Case("matmul", (m(3, 4), m(4)))
            yield Case("matmul", (m(4), m(4)))
    big = np.full((2, 2), 100, np.int8)  # wraps in int8, as NumPy does
    yield Case("matmul", (big, big))
    for dtype in ALL:  # stable: ties in index order, NaN last; every dtype (TopK kernels or order-preserving casts)
        x = np.resize(values(dtype), 20)
        x[[3, 11, 17]] = x[0]  # ties
        yield Case("sort", (x.reshape(4, 5),), {"axis": 1}, num_outputs=2)
        yield Case("sort", (x.reshape(4, 5),), {"axis": 0}, num_outputs=2)
        yield Case("sort", (x.reshape(2, 5, 2),), {"axis": -2}, num_outputs=2)


def shape_cases():
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    for dtype in ALL:
        x = values(dtype)[:12].reshape(3, 4)
        yield Case("reshape", (x, i64(2, -1, 3)), consts=(1,))
        yield Case("transpose", (x.reshape(3, 2, 2),), {"perm": (2, 0, 1)})
        yield Case("concat", (x, x[:1]), {"axis": 0})
        yield Case("split", (x, i64(1, 3)), {"axis": 1, "num_outputs": 2}, consts=(1,), num_outputs=2)
        yield Case("gather", (x, i64(2, -1, 0)), {"axis": 0})
        yield Case("expand", (x[:, :1], i64(2, 3, 5)), consts=(1,))
        yield Case("slice", (x, i64(2, 0), i64(-4, 100), i64(-1, 2)), {"axes": (0, 1)}, consts=(1, 2, 3))
        yield Case("nonzero", (x,))
        yield Case("shape", (x,))
        yield Case("gather_nd", (x, np.array([[0, 1], [2, 3], [-1, 0]])))
        yield Case("gather_nd", (x, np.array([[2], [0]], np.int32)))
        yield Case("scatter_nd", (x, np.array([[0, 1], [2, 3]]), x[0, :2].copy()))
        yield Case("scatter_nd", (x, np.array([[-1], [1], [1]], np.int32), x[:3]))  # negative; last repeat wins
        if dtype != F16:
            rows = np.stack([x[1], x[2], x[0]])  # row 0 updated twice: the adds accumulate
            yield Case("scatter_nd", (x, np.array([[0], [0], [2]]), rows), {"reduction": "add"})
    for dtype in (F32, F64, I64, BOOL):  # the dtypes of onnxruntime's Trilu (NaN and infinities zeroed too)
        x = values(dtype)[:12].reshape(3, 4)
        x = np.stack([x, x[::-1]])  # (2, 3, 4)
        for upper, k in ((False, 0), (True, 1), (False, -1), (True, -5)):
            yield Case("trilu", (x,), {"upper": upper, "k": k})
    x = RNG.normal(size=(3, 1, 4)).astype(np.float32)
    yield Case("squeeze", (x,), {"axes": (1,)})
    yield Case("squeeze", (x[:1],), {"axes": (-2, 0)})
    yield Case("unsqueeze", (x,), {"axes": (0, -1)})
    yield Case("reshape", (np.zeros((0, 4), np.float32), i64(0, 2, 2)), consts=(1,))
    yield Case("reshape", (x, i64(-1)))  # shape given at run time
    yield Case("gather", (x, np.array([[0, -1], [1, 2]], np.int32)), {"axis": 2})
    yield Case("gather", (x, np.array(1, np.int8)), {"axis": -1})
    yield Case("slice", (x, i64(np.iinfo(np.int64).max), i64(np.iinfo(np.int64).min), i64(-1)), {"axes": (2,)})
    yield Case("split", (x, i64(4)), {"axis": 2, "num_outputs": 1}, consts=(1,))
    # negative step from a start before the first element: empty in Python, clamped in ONNX
    big = i64(np.iinfo(np.int64).min)
    yield Case("slice", (x, i64(-10), big, i64(-1)), {"axes": (2,)}, consts=(1, 2, 3))
    yield Case("slice", (x, i64(-10, 2), i64(-20, 0), i64(-1, -1)), {"axes": (2, 0)})  # run-time starts
    yield Case("slice", (x, i64(-2), big, i64(-2)), {"axes": (-1,)})
    for dtype in (I8, I32, I64, U64):  # empty integer reductions: sum 0, product 1
        empty = np.zeros((0, 3), dtype.numpy)
        for op in ("reduce_sum", "reduce_prod"):
            yield Case(op, (empty,), {"axes": (0,)})
            yield Case(op, (empty.T,), {"axes": (1,), "keepdims": True})
    for dtype in (I8, I16, I32, I64):
        for a, b, c in ((0, 10, 3), (10, -5, -2), (5, 5, 1), (-7, 7, 4)):
            yield Case("range", tuple(np.array(v, dtype.numpy) for v in (a, b, c)))
    for dtype in FLOATS:
        for a, b, c in ((0.1, 10.3, 0.7), (1.0, -2.0, -0.25), (0.0, 1.0, 0.1), (3.0, 3.0, 1.0), (0.1, 1.0, 0.3),
                        (-1.5, 2.5, 0.5)):
            yield Case("range", tuple(np.array(v, dtype.numpy) for v in (a, b, c)))


# Special functions (ir/ops/special.py): the interpreter's reference is SciPy,
# itself off by up to ~1e-14 relative in places (erfc for large x, psi near
# its negative zeros), so this table checks structure, dtypes and NaN/inf
# positions at a loose 64 ulp; tests/numerics/test_special_functions.py
# asserts each function's contract bound against mpmath.
SPECIAL_VALUES = {
    "gammaln": [0.5, 1.0, 2.0, 2.5, 7.3, 30.0, 1e-5, -0.5, -2.5, -7.3, 0.0, -3.0],
    "gamma": [0.5, 1.0, 2.5, 7.3, 30.0, 1e-5, -0.5, -2.5, -7.3, 0.0, -0.0, -3.0],
    "psi": [0.5, 1.0, 2.5, 7.3, 30.0, 1e-5, -0.5, -2.5, 0.0, -0.0, -3.0],
    "trigamma": [0.5, 1.0, 2.5, 7.3, 30.0, 1e-5, -0.5, -2.5, 0.0, -3.0],
    "erfc": [0.0, 0.5, -0.5, 1.5, -1.5, 5.0, 9.0, -9.0, 20.0],
    "erfcx": [0.0, 0.5, -0.5, 1.5, -1.5, 5.0, 9.0, -9.0, 30.0, 1e5],
    "erfinv": [0.0, 0.3, -0.3, 0.7, -0.9, 0.999, 1.0, -1.0, 1.5],
    "erfcinv": [0.0, 0.3, 1.0, 1.3, 1.9, 2.0, 1e-10, 2.5, -0.5],
    "i0": [0.0, 0.5, -0.5, 3.0, 9.0, -20.0, 100.0], "i1": [0.0, 0.5, -0.5, 3.0, 9.0, -20.0, 100.0],
    "i0e": [0.0, 0.5, -0.5, 3.0, 9.0, -20.0, 1e4], "i1e": [0.0, 0.5, -0.5, 3.0, 9.0, -20.0, 1e4],
    "i2e": [0.0, 0.5, -0.5, 1.9, 2.0, 3.0, 9.0, -20.0, 1e4],
    # away from the zeros and below 1e3, where SciPy's j0/j1 (the interpreter's) lose relative accuracy
    "j0": [0.0, 0.5, -0.5, 2.0, 3.0, 5.0, 9.0, -20.0, 31.0], "j1": [0.0, 0.5, -0.5, 3.0, 5.0, 9.0, -20.0, 31.0],
}
ULPS |= {op: 64 for op in SPECIAL_VALUES} | {"atan2": 2, "polygamma": 64, "polygamma_order": 64}


# The binary special functions (a, x): shapes a from tiny to large beside x
# below, near and above a, the edges 0 and inf, and NaN (interpreter: SciPy,
# itself within ~2e-13 of mpmath for these, our forms within ~6e-14: the bound
# here is 1024 ulp; tests/numerics/test_incomplete_gamma.py holds the contract).
BINARY_SPECIAL_VALUES = {op: ([1e-3, 0.5, 1.0, 3.0, 20.0, 150.0, -1.0, 0.0],
                              [0.0, 1e-3, 0.5, 1.0, 2.9, 3.1, 25.0, 140.0, -1.0])
                         for op in ("gammainc", "gammaincc")}
ULPS |= {op: 1024 for op in BINARY_SPECIAL_VALUES}
# betainc (a, b, x): tiny to large shapes, x at the edges, on both sides of a / (a + b) and
# outside [0, 1] (tests/numerics/test_incomplete_beta.py holds the contract)
BETAINC_SHAPES, BETAINC_X = [1e-3, 0.5, 1.0, 3.0, 40.0, -1.0, 0.0], [0.0, 1e-3, 0.3, 0.5, 0.97, 1.0, 1.5]
ULPS["betainc"] = 1024
# betaincinv (a, b, y): the same shapes, y at the edges, between them and outside [0, 1] (roots
# kept above 1e-300: SciPy clamps smaller ones; tests/numerics/test_betaincinv.py holds the
# contract: the root's condition number, ~1/a, times the forward bound)
BETAINCINV_SHAPES, BETAINCINV_Y = [0.05, 0.5, 1.0, 3.0, 40.0, -1.0, 0.0], [0.0, 1e-5, 0.3, 0.5, 0.97, 1.0, 1.5]
ULPS["betaincinv"] = 8192
# gammaincinv/gammainccinv (a, y): shapes from tiny to large, y at and between the edges, outside
# [0, 1] and in the tails (tests/numerics/test_incomplete_inverse.py holds the contract: the
# root's condition number times the forward functions' bound: SciPy's and our roots of a = 1e-3
# differ by up to 1,100 ulp, 1/a times the few ulp their forward functions differ by)
GAMMA_INVERSE_VALUES = ([1e-3, 0.5, 1.0, 3.0, 40.0, 2000.0, -1.0, 0.0], [0.0, 1e-200, 1e-5, 0.3, 0.5, 0.9, 1.0, 1.5])
ULPS |= {"gammaincinv": 8192, "gammainccinv": 8192}
# owens_t (h, a): each Patefield-Tandy region, the symmetries, a = +-1, +-inf and 0, NaN (h kept
# below 5: SciPy, the interpreter's reference, loses up to 1e-11 in the far tails; the contract is
# tests/numerics/test_owens_t.py's, against mpmath)
OWENS_T_VALUES = ([0.0, 0.3, -0.3, 1.5, -2.5, 4.5], [0.0, 0.2, -0.7, 1.0, -1.0, 3.0, 1e3])
ULPS["owens_t"] = 1024
# ive/iv/kve (v, x): integer, half-integer and other orders, negative ones, x from 0 to large, the
# transition x ~ v, negative x (NaN for a non-integer order), NaN (interpreter: SciPy's AMOS,
# tests/numerics/test_bessel_i.py holds the contract against mpmath)
BESSEL_VALUES = ([0.0, 1.0, 2.5, -1.5, 7.3, 40.0], [0.0, 0.3, 2.0, 7.0, 45.0, 300.0, -2.0])
ULPS |= {"ive": 1024, "iv": 1024, "kve": 1024, "jv": 1024}

# hyp2f1 (a, b, c, z): the direct series, the z/(z-1) and 1-z transformations, a polynomial
# (a = -2), NaN (tests/numerics/test_hyp2f1.py holds the contract, against mpmath)
HYP2F1_VALUES = ([0.5, -2.0, 3.0], [1.0, 2.5], [1.5, 4.0], [-0.7, 0.3, 0.95])
ULPS["hyp2f1"] = 1024


def special_cases():
    for op, (a, x) in BINARY_SPECIAL_VALUES.items():
        for dtype in (F32, F64):
            yield Case(op, grid(np.array(a + [np.nan, np.inf], dtype.numpy), np.array(x + [np.nan, np.inf], dtype.numpy)))
    for op in ("gammaincinv", "gammainccinv"):
        for dtype in (F32, F64):
            a, y = (np.array(v + [np.nan, np.inf], dtype.numpy) for v in GAMMA_INVERSE_VALUES)
            yield Case(op, grid(a, y))
    for op in ("ive", "iv", "kve", "jv"):
        for dtype in (F32, F64):
            v, x = (np.array(vals + [np.nan], dtype.numpy) for vals in BESSEL_VALUES)
            yield Case(op, grid(v, x))
    for dtype in (F32, F64):
        a, b, c, z = (np.array(v + [np.nan], dtype.numpy) for v in HYP2F1_VALUES)
        yield Case("hyp2f1", (a[:, None, None, None], b[None, :, None, None], c[None, None, :, None],
                              z[None, None, None, :]))
    for dtype in (F32, F64):
        h, a = (np.array(v + [np.nan, np.inf, -np.inf], dtype.numpy) for v in OWENS_T_VALUES)
        yield Case("owens_t", grid(h, a))
    for dtype in (F32, F64):
        shapes = np.array(BETAINC_SHAPES + [np.nan, np.inf], dtype.numpy)
        yield Case("betainc", (shapes[:, None, None], shapes[None, :, None],
                               np.array(BETAINC_X + [np.nan], dtype.numpy)[None, None, :]))
    for dtype in (F32, F64):
        shapes = np.array(BETAINCINV_SHAPES + [np.nan, np.inf], dtype.numpy)
        yield Case("betaincinv", (shapes[:, None, None], shapes[None, :, None],
                                  np.array(BETAINCINV_Y + [np.nan], dtype.numpy)[None, None, :]))
    for op, vals in SPECIAL_VALUES.items():
        for dtype in FLOATS:
            with np.errstate(over="ignore"):  # 1e5 is inf in float16
                yield Case(op, (np.array(vals + [np.nan, np.inf, -np.inf], dtype.numpy),))
    for dtype in FLOATS:
        v = floats(dtype)
        yield Case("atan2", grid(v, v))
    for n in (2, 3, 6):  # polygamma of an order >= 2 (tests/numerics/test_polygamma.py holds the contract)
        for dtype in (F32, F64):
            yield Case("polygamma", (np.array(SPECIAL_VALUES["trigamma"] + [np.nan, np.inf, -np.inf], dtype.numpy),),
                       {"n": n})
    for dtype in (F32, F64):  # polygamma of a run-time order (tests/numerics/test_polygamma_order.py: the contract)
        orders = np.array([0, 1, 2, 3, 6, 31, -1, 2.5, np.nan], dtype.numpy)
        yield Case("polygamma_order", grid(orders, np.array(SPECIAL_VALUES["trigamma"] + [np.nan, np.inf, -np.inf],
                                                            dtype.numpy)))


def all_cases():
    yield from unary_cases()
    yield from special_cases()
    yield from binary_cases()
    yield from pow_cases()
    yield from where_clip_cast_cases()
    yield from reduction_cases()
    yield from shape_cases()


CASES = list(all_cases())


def _all_cases():
    """These cases and those of ``test_emit_nn`` (the neural-network ops)."""
    from tests.backends.test_emit_nn import CASES as NN_CASES

    return CASES + NN_CASES


def test_every_op_has_a_rule_and_a_case():
    ops = set(all_ops())
    assert ops - set(EMITTERS) == set(), "IR ops without an ONNX rule"
    # ops with nested graphs (loop, if) have their cases in tests/control_flow/test_ops.py; random ops
    # (random_uniform, random_normal) are tested by distribution in tests/lowering/test_random.py
    flat = {op for op, d in all_ops().items() if not d.subgraph_roles and not d.has(RANDOM)}
    assert flat - {c.op for c in _all_cases()} == set(), "IR ops without a test case"


def test_every_op_runs_in_the_main_dtypes():
    """Each op is tested in float32, float64, int32, int64 and bool wherever its type rule allows."""
    covered = {(c.op, DType.from_numpy(c.args[0].dtype)) for c in _all_cases()}
    dtype_free = {"where", "range", "shape", "nonzero"}  # checked by their own cases
    missing = [(op, d) for op in all_ops() if op not in dtype_free and not all_ops()[op].has(RANDOM) for d in MAIN
               if allowed(op, d) and (op, d) not in covered]
    assert missing == []


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_op_matches_interpreter(case):
    run_case(case)


# -- precision checks for the formula-based rules ---------------------------------
@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("op", ["expm1", "log1p"])
def test_expm1_log1p_accurate_near_zero(op, dtype):
    """Kahan/Goldberg forms keep full precision where exp(x) - 1 loses it all."""
    x = np.array([1e-10, -1e-10, 1e-300, -1e-300, 1e-20, 3e-8, -3e-8, -0.5, 0.5, 1e-5, -0.99, 50.0, 88.0,
                  700.0, 1e30, np.inf, -np.inf, np.nan, -0.0, 0.0, -1.0, -2.0, 1e-38, 1.5e-45],
                  dtype.numpy)
    run_case(Case(op, (x,)))


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("op", ["exp2", "log2", "log10"])
def test_constant_scaled_forms_within_2_ulp(op, dtype):
    """exp2 = Pow(2, x), log2/log10 = Log(x) * constant: within 2 ulp of NumPy."""
    x = np.concatenate([RNG.uniform(-60, 60, 300), 2.0 ** np.arange(-20, 21), 10.0 ** np.arange(-10, 11),
                        RNG.uniform(0, 1e6, 200), 10 ** RNG.uniform(-30, 30, 300),
                        [0.0, -1.0, np.inf, np.nan]]).astype(dtype.numpy)
    graph = build(Case(op, (x,)))
    got = make_session(emit_checked(graph)).run(None, {"x0": x})[0]
    assert_matches(got, evaluate(graph, [x])[0], 2, op)


def test_softplus_stable_for_large_magnitudes():
    x = np.array([-1000, -745, -100, -37, -1e-8, 0, 1e-8, 30, 88, 100, 709, 710, 1000, 1e300], np.float64)
    run_case(Case("softplus", (x,)))
    with np.errstate(over="ignore"):
        run_case(Case("softplus", (x.astype(np.float32),)))  # 1e300 becomes inf


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_floor_div_mod_match_numpy_divmod(dtype):
    """Float floor_div/mod follow npy_divmod, not floor(a / b): e.g. 1 // 0.1 == 9."""
    big, tiny = np.finfo(dtype.numpy).max / 2, np.finfo(dtype.numpy).tiny  # quotient overflows
    a = np.array([1.0, 1.0, -1.0, 7.5, -7.5, 0.3, big, 5.0, -0.0, 0.0, 1.0, -1.0], dtype.numpy)
    b = np.array([0.1, -0.1, 0.1, 2.0, 2.0, 0.1, tiny, np.inf, 3.0, -3.0, -np.inf, np.inf], dtype.numpy)
    for op in ("floor_div", "mod"):
        graph = build(Case(op, (a, b)))
        got = make_session(emit_checked(graph)).run(None, {"x0": a, "x1": b})[0]
        want = evaluate(graph, [a, b])[0]
        assert_matches(got, want, 0, op)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=f"{op}: signs of zeros")


def test_integer_division_by_zero_gives_zero():
    for dtype in (I32, I64, U8, I8):
        a = np.array([5, 0, 7, 100], dtype.numpy)
        b = np.zeros(4, dtype.numpy)
        run_case(Case("floor_div", (a, b)))
        run_case(Case("mod", (a, b)))


def _accuracy_samples(op: str, dtype: DType) -> np.ndarray:
    rng = np.random.default_rng(7)
    sign = rng.choice([-1.0, 1.0], 400)
    parts = [rng.uniform(-1, 1, 400), rng.uniform(-10, 10, 400), 10 ** rng.uniform(-20, 3, 400) * sign]
    if op in ("sin", "cos", "tan"):  # near multiples of pi/2, where a short reduction fails
        k = np.arange(-300, 300)
        parts += [k * np.pi / 2, k * np.pi / 2 + 1e-9, rng.uniform(-1e6, 1e6, 400)]
    elif op in ("asin", "acos", "atanh"):
        parts = [rng.uniform(-1, 1, 600), 1 - 10 ** rng.uniform(-16, -1, 300), -1 + 10 ** rng.uniform(-16, -1, 300)]
    elif op == "acosh":
        parts = [1 + 10 ** rng.uniform(-16, 1, 600), 10 ** rng.uniform(0, 300, 300)]
    elif op in ("sinh", "cosh"):
        parts += [rng.uniform(-720, 720, 600)]
    elif op == "erf":
        parts += [rng.uniform(-6, 6, 600)]
    with np.errstate(over="ignore"):
        return np.concatenate(parts).astype(dtype.numpy)


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
@pytest.mark.parametrize("op", ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
                                "acosh", "atanh", "erf", "exp", "log", "sigmoid"])
def test_transcendental_accuracy(op, dtype):
    """Many points per function (float64 ones are libm algorithms rebuilt
    from ONNX ops, see rules/transcendental.py): within ULPS of NumPy/SciPy."""
    x = _accuracy_samples(op, dtype)
    graph = build(Case(op, (x,)))
    got = make_session(emit_checked(graph)).run(None, {"x0": x})[0]
    assert_matches(got, evaluate(graph, [x])[0], ULPS[op], f"{op} {dtype}")


def test_scatter_nd_add_float16_raises():
    x = np.zeros(3, np.float16)
    with pytest.raises(EmitError, match="scatter_nd.*f16"):
        emit_model(build(Case("scatter_nd", (x, np.array([[0]], np.int64), x[:1]), {"reduction": "add"})))


# -- Hypothesis: broadcasting shapes and value ranges ----------------------------
@functools.lru_cache(maxsize=None)
def _binary_session(op: str, dtype: DType, rank_a: int, rank_b: int):
    g = Graph(op)
    a = g.add_input(TensorType(dtype, tuple(f"a{i}" for i in range(rank_a))), "a")
    b = g.add_input(TensorType(dtype, tuple(f"b{i}" for i in range(rank_b))), "b")
    g.set_outputs([g.add(op, [a, b])])
    return g, make_session(emit_checked(g))


HYPO_OPS = ["add", "sub", "mul", "div", "floor_div", "mod", "pow", "maximum", "minimum", "lt", "eq", "and"]


@st.composite
def binary_inputs(draw):
    op = draw(st.sampled_from(HYPO_OPS))
    dtype = draw(st.sampled_from([d for d in (F16, F32, F64, I8, I32, I64, U8, U64, BOOL) if allowed(op, d)]))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4))
    if dtype.is_float:
        elements = st.floats(width=8 * dtype.numpy.itemsize, allow_subnormal=True)
    elif dtype == BOOL:
        elements = st.booleans()
    else:
        info = np.iinfo(dtype.numpy)
        elements = st.integers(info.min, info.max)
    arrays = [draw(hnp.arrays(dtype.numpy, s, elements=elements)) for s in shapes.input_shapes]
    if op == "pow" and dtype.is_int:
        arrays[1] = np.asarray(np.mod(arrays[1], 70), dtype=dtype.numpy)  # NumPy rejects negative exponents
    return op, dtype, arrays


@given(binary_inputs())
def test_binary_ops_broadcast_like_numpy(drawn):
    op, dtype, (a, b) = drawn
    graph, session = _binary_session(op, dtype, a.ndim, b.ndim)
    want = evaluate(graph, [a, b])[0]
    got = session.run(None, {"a": a, "b": b})[0]
    check(op, got, want, f"{op} {dtype} {a.shape} {b.shape}")


@given(st.sampled_from(["exp", "log", "sqrt", "tanh", "sigmoid", "expm1", "log1p", "softplus", "floor",
                        "round_half_away", "round_half_even", "trunc", "sign", "abs", "neg"]),
       st.sampled_from([F16, F32, F64]),
       hnp.arrays(np.float64, hnp.array_shapes(max_dims=2, max_side=5),
                  elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_unary_float_ops_on_any_values(op, dtype, x):
    with np.errstate(over="ignore"):
        x = x.astype(dtype.numpy)
    graph, session = _unary_session(op, dtype, x.ndim)
    check(op, session.run(None, {"x": x})[0], evaluate(graph, [x])[0], f"{op} {dtype}")


@functools.lru_cache(maxsize=None)
def _unary_session(op: str, dtype: DType, rank: int):
    g = Graph(op)
    x = g.add_input(TensorType(dtype, (None,) * rank), "x")
    g.set_outputs([g.add(op, [x])])
    return g, make_session(emit_checked(g))


@given(st.sampled_from([F16, F32, F64, I8, I32, I64]),
       st.tuples(st.integers(-50, 50), st.integers(-50, 50), st.integers(-9, 9).filter(bool)),
       st.sampled_from([1, 0.1, 0.25, 0.3, 0.7, 1.1]))
def test_range_matches_numpy_arange(dtype, ints_, scale):
    start, limit, delta = (np.array(v * (scale if dtype.is_float else 1), dtype.numpy) for v in ints_)
    run_case(Case("range", (start, limit, delta)))

