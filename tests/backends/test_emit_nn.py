"""Differential tests of the ONNX rules of the neural-network ops
(``backends/onnx/rules/nn.py``): onnxruntime against the IR interpreter
(``ir/ops/nn.py``), with the full ONNX checker on every model.

Sums are exact where they can be: convolution and pooling cases use
integer-valued floats, so the float32 results must equal the interpreter's
bit for bit, whatever order onnxruntime sums in. The activations are
checked on edge values (NaN, +/-inf, -0.0) against the behaviour measured
and documented in the rules; Hypothesis draws convolution and pooling
parameters (kernel 1-5, strides 1-3, pads 0-2, dilations 1-2, groups,
channels, batch).
"""

from __future__ import annotations

import functools
import warnings
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import onnx
import pytest
import scipy.signal
from hypothesis import given, strategies as st

from backends.onnx import EmitError, emit_model, make_session
from ir import Graph, TensorType
from ir.interpreter import evaluate
from ir.types import DType
from tests.backends.test_emit_ops import assert_matches, floats, ints

F16, F32, F64 = DType.FLOAT16, DType.FLOAT32, DType.FLOAT64
I8, I16, I32, I64, U8, U16, U32, U64, BOOL = (DType.INT8, DType.INT16, DType.INT32, DType.INT64, DType.UINT8,
                                               DType.UINT16, DType.UINT32, DType.UINT64, DType.BOOL)
RNG = np.random.default_rng(3)
SOBEL = np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]], np.float32)  # asymmetric: a missing flip shows


@dataclass
class NNCase:
    """One IR node on ``args`` (``consts``: indices that are IR constants;
    ``dynamic``: graph inputs get symbolic dims), emitted with ``options``.
    Float results must be within ``ulps`` of the interpreter plus
    ``x_eps * eps * |args[0]|`` (the error a cancelling formula may show)."""

    op: str
    args: tuple
    attrs: dict = field(default_factory=dict)
    consts: tuple = ()
    options: dict = field(default_factory=dict)
    ulps: int = 0
    x_eps: float = 0.0
    dynamic: bool = False  # the first input's dims are symbolic

    @property
    def id(self) -> str:
        attrs = "-".join(f"{k}={v}" for k, v in sorted(self.attrs.items()))
        opts = "-".join(f"{v}" for v in self.options.values())
        shapes = "x".join(str(a.shape) for a in self.args)
        return "-".join(p for p in (self.op, str(DType.from_numpy(self.args[0].dtype)), shapes, attrs, opts,
                                    "dyn" if self.dynamic else "") if p)


def graph_of(case: NNCase) -> Graph:
    g = Graph(case.op)
    values = []
    for i, a in enumerate(case.args):
        if i in case.consts:
            values.append(g.add_constant(a, f"c{i}"))
        else:
            t = TensorType.of_array(a)
            shape = tuple(f"d{i}_{k}" for k in range(a.ndim)) if case.dynamic and i == 0 else t.shape
            values.append(g.add_input(t.with_shape(shape), f"x{i}"))
    node = g.create_node(case.op, values, case.attrs)
    g.append(node)
    g.set_outputs(list(node.outputs))
    return g


def emitted(graph: Graph, **options) -> onnx.ModelProto:
    """Emit with ``options`` (``numerics="strict"``, the bit-exact forms,
    unless given) and run the full ONNX checker."""
    model = emit_model(graph, **{"numerics": "strict", **options})
    onnx.checker.check_model(model, full_check=True)
    return model


def run(case: NNCase):
    """``(got, want, model)``: onnxruntime's and the interpreter's outputs."""
    graph = graph_of(case)
    feeds = {f"x{i}": a for i, a in enumerate(case.args) if i not in case.consts}
    want = evaluate(graph, list(feeds.values()))
    model = emitted(graph, **case.options)
    return make_session(model).run(None, feeds), want, model


def check(case: NNCase) -> onnx.ModelProto:
    got, want, model = run(case)
    for g, w in zip(got, want):
        atol = 0.0
        if case.x_eps and w.dtype.kind == "f":
            x = np.abs(case.args[0].astype(np.float64))
            atol = case.x_eps * float(np.finfo(w.dtype).eps) * float(np.nanmax(np.where(np.isfinite(x), x, 0)))
        assert_matches(g, w, case.ulps, case.id, atol=atol)
    return model


def histogram(model: onnx.ModelProto) -> Counter:
    return Counter(n.op_type for n in model.graph.node)


def integers(shape, dtype=np.float32, lo=-3, hi=4):
    """Small integers as ``dtype``: products and sums of these are exact."""
    return RNG.integers(lo, hi, size=shape).astype(dtype)


# -- the case table --------------------------------------------------------------
ACTIVATIONS = {"relu": 0, "leaky_relu": 0, "hard_sigmoid": 0, "hard_swish": 0, "silu": 4, "gelu": 4}
X_EPS = {"gelu": 8.0}  # 1 + erf(x / sqrt 2) cancels for negative x


def activation_cases():
    for op, ulps in ACTIVATIONS.items():
        for dtype in (F16, F32, F64):
            x = floats(dtype, extra=[-3.0, 3.0, 2.9, -2.9, -85.0, 1e-40]).reshape(-1, 2)
            x_eps = X_EPS.get(op, 0)
            opts = [{}]
            if op in ("silu", "gelu"):
                opts = [{op: "function"}, {op: "primitive"}]
            for o in opts:
                yield NNCase(op, (x,), options=o, ulps=min(ulps, 1) if dtype == F16 else ulps, x_eps=x_eps)
    for dtype in (I8, I16, I32, I64):
        yield NNCase("relu", (ints(dtype),))
    for dtype in (F16, F32, F64):
        x = floats(dtype)
        yield NNCase("leaky_relu", (x,), {"alpha": 0.2})
        yield NNCase("leaky_relu", (x,), {"alpha": -0.5})  # the sign of alpha * 0 matters
        yield NNCase("leaky_relu", (x,), {"alpha": 0.25})  # a float32 value: LeakyRelu in float64 too
        yield NNCase("hard_sigmoid", (x,), {"alpha": 0.25, "beta": 0.375})
        yield NNCase("gelu", (x,), {"approximate": "tanh"}, ulps=1 if dtype == F16 else 8, x_eps=16)


def conv_cases():
    x = integers((2, 4, 7, 6))
    w = integers((6, 2, 3, 2))
    b = integers((6,))
    yield NNCase("conv", (x, w, b), {"group": 2, "pads": (1, 0, 2, 1), "strides": (2, 1), "dilations": (1, 2)})
    yield NNCase("conv", (x, integers((3, 4, 1, 1))))
    yield NNCase("conv", (x, w[:, :, :, :1]), {"group": 2, "flip": True}, consts=(1,))
    yield NNCase("conv", (x.astype(np.float16), w.astype(np.float16), b.astype(np.float16)), {"group": 2})
    yield NNCase("conv", (integers((1, 2, 9)), integers((3, 2, 4)), integers((3,))), {"pads": (2, 1)})  # 1-D
    yield NNCase("conv", (integers((1, 2, 4, 5, 3)), integers((2, 2, 2, 3, 1))), {"flip": True})  # 3-D
    real = [RNG.normal(size=s).astype(np.float32) for s in ((2, 4, 9, 9), (6, 2, 3, 3), (6,))]
    yield NNCase("conv", tuple(real), {"group": 2}, ulps=4, x_eps=64)  # sums in another order
    yield NNCase("conv", tuple(v.astype(np.float16) for v in real), {"group": 2}, ulps=1)
    yield NNCase("conv", (integers((1, 2, 5, 5), np.float64), integers((3, 2, 3, 3), np.float64)),
                 options={"float64_conv": "float32"})  # integers: exact even in float32


def convolve2d_cases():
    x, k = integers((2, 3, 6, 5)), integers((3, 2, 3))
    for full in (False, True):
        yield NNCase("convolve2d", (x, k), {"full": full})
        yield NNCase("convolve2d", (x, k), {"full": full}, dynamic=True)
        yield NNCase("convolve2d", (x[:, None], integers((4, 3, 2, 2))[None]), {"full": full})  # x[:, None], W[None]
        yield NNCase("convolve2d", (x[0, 0, :2, :3], integers((4, 5))), {"full": full})  # kernel larger
        yield NNCase("convolve2d", (x[0, 0, :2, :3], integers((4, 5))), {"full": full}, dynamic=True)
        yield NNCase("convolve2d", (x.astype(np.float16), k.astype(np.float16)), {"full": full})
        for dtype in (I8, U8, I16, I32, I64, U64):
            big = RNG.integers(0, 120, size=(2, 4, 5)).astype(dtype.numpy)  # int8 products wrap
            yield NNCase("convolve2d", (big, RNG.integers(0, 120, size=(3, 2)).astype(dtype.numpy)), {"full": full})
        yield NNCase("convolve2d", (integers((2, 5, 4), np.int32), integers((3, 3), np.int32)), {"full": full},
                     dynamic=True)
    yield NNCase("convolve2d", (x[:1, 0], k), {"full": True})  # batch broadcast along the kernel's axis
    yield NNCase("convolve2d", (integers((2, 6, 5), np.float64), integers((2, 3), np.float64)),
                 options={"float64_conv": "float32"})


def pad_cases():
    for dtype in (F16, F32, F64, I8, I16, U16, I32, I64, U64, BOOL):
        x = (RNG.random((2, 3, 4)) < 0.5) if dtype == BOOL else integers((2, 3, 4), dtype.numpy, 0, 100)
        value = np.array(True if dtype == BOOL else 7, dtype.numpy)
        yield NNCase("pad", (x, value), {"pads": (0, 1, 2, 1, 0, 3)})
    yield NNCase("pad", (integers((3, 4)), np.array(np.nan, np.float32)), {"pads": (2, 0, 0, 1)}, dynamic=True)


def pool_cases():
    x = integers((2, 3, 7, 6), lo=-50, hi=50)
    window = {"kernel": (3, 2), "pads": (1, 0, 2, 1), "strides": (2, 1)}
    for dtype in (F16, F32, F64, I8, U8, I16, U16, I32, U32, I64, U64):
        v = np.abs(x).astype(dtype.numpy) if dtype.numpy.kind == "u" else x.astype(dtype.numpy)
        yield NNCase("max_pool", (v,), {**window, "dilations": (2, 1)})
        yield NNCase("global_max_pool", (v,))
    for dtype in (F16, F32):
        yield NNCase("avg_pool", (x.astype(dtype.numpy),), window)
        yield NNCase("avg_pool", (x.astype(dtype.numpy),), {**window, "count_include_pad": True})
        yield NNCase("global_avg_pool", (x.astype(dtype.numpy) / 7,), ulps=4, x_eps=8)
    real = RNG.normal(size=(2, 3, 8, 8))
    yield NNCase("avg_pool", (real.astype(np.float16),), {"kernel": (3, 3), "pads": (1, 1, 1, 1)}, ulps=1)
    yield NNCase("avg_pool", (real.astype(np.float32),), {"kernel": (3, 3), "pads": (1, 1, 1, 1)}, ulps=4, x_eps=8)
    yield NNCase("global_avg_pool", (x.astype(np.float64) / 7,), ulps=4, x_eps=8)
    yield NNCase("avg_pool", (x.astype(np.float64),), {"kernel": (2, 2), "pads": (1, 0, 1, 1), "count_include_pad": True},
                 options={"float64_conv": "float32"})  # sums of integers / 4: exact in float32
    yield NNCase("avg_pool", (x,), {**window, "dilations": (1, 2)}, options={"opset": 19})
    yield NNCase("max_pool", (integers((1, 2, 9)),), {"kernel": (3,), "strides": (2,), "pads": (2, 1)})  # 1-D


def misc_cases():
    C = 4
    stats = lambda dtype: [RNG.normal(size=C).astype(dtype) for _ in range(3)] + [RNG.uniform(0.5, 2, C).astype(dtype)]
    for dtype in (np.float16, np.float32, np.float64):
        yield NNCase("batch_norm", (RNG.normal(size=(2, C, 3, 3)).astype(dtype), *stats(dtype)), ulps=8, x_eps=8)
    yield NNCase("batch_norm", (RNG.normal(size=(2, C, 5)), *stats(np.float64)), {"epsilon": 0.001}, ulps=8, x_eps=8)
    for dtype in (np.float16, np.float32, np.float64):
        rows = (RNG.normal(size=(2, 3, 16)) + 4).astype(dtype)
        yield NNCase("layer_norm", (rows, RNG.uniform(0.5, 2, 16).astype(dtype), RNG.normal(size=16).astype(dtype)),
                     {"epsilon": 1e-5}, ulps=16, x_eps=16)
        yield NNCase("rms_norm", (rows - 4, RNG.uniform(0.5, 2, 16).astype(dtype)), {"epsilon": 1e-6}, ulps=16,
                     x_eps=16)
    for dtype in (F16, F32, F64, I8, U8, I16, I32, I64, U64, BOOL):
        x = (RNG.random((2, 3, 2, 3)) < 0.5) if dtype == BOOL else integers((2, 3, 2, 3), dtype.numpy, 0, 100)
        yield NNCase("resize_nearest", (x,), {"scales": (1, 1, 2, 3)})
        yield NNCase("flatten", (x,), {"axis": 2})
    yield NNCase("resize_nearest", (integers((2, 5, 3), np.int64),), {"scales": (1, 3, 2)}, dynamic=True)
    yield NNCase("resize_nearest", (integers((1, 1, 700, 3)),), {"scales": (1, 1, 13, 7)})
    yield NNCase("flatten", (integers((2, 3, 4)),), {"axis": 0})
    yield NNCase("flatten", (integers((2, 3, 4)),), {"axis": 3})
    a, b, c = integers((3, 4)), integers((4, 5)), integers((5,))
    for dtype in (np.float16, np.float32, np.float64):
        yield NNCase("gemm", (a.astype(dtype), b.T.astype(dtype), c.astype(dtype)), {"trans_b": True, "alpha": 0.5})
        yield NNCase("gemm", (a.T.astype(dtype), b.astype(dtype), integers((3, 1), dtype)),
                     {"trans_a": True, "alpha": 2.0, "beta": -1.5})
    yield NNCase("gemm", tuple(RNG.normal(size=s) for s in ((3, 4), (4, 5), (3, 5))), {"alpha": 0.1, "beta": 0.3},
                 ulps=4)
    real = [RNG.normal(size=s).astype(np.float16) for s in ((5, 40), (40, 6), (6,))]
    yield NNCase("gemm", tuple(real), {"alpha": 0.5, "beta": 2.0}, ulps=1)  # one rounding from float32
    for dtype in (np.int8, np.uint8, np.int32, np.int64, np.uint64):
        big = lambda *s: RNG.integers(0, 100, size=s).astype(dtype)  # noqa: E731  (int8 wraps)
        yield NNCase("gemm", (big(3, 4), big(4, 5), big(3, 5)), {"alpha": 2.0, "beta": 3.0})


CASES = [*activation_cases(), *conv_cases(), *convolve2d_cases(), *pad_cases(), *pool_cases(), *misc_cases()]
NN_OPS = {"relu", "silu", "hard_swish", "leaky_relu", "hard_sigmoid", "gelu", "conv", "convolve2d", "pad",
          "max_pool", "avg_pool", "global_avg_pool", "global_max_pool", "batch_norm", "resize_nearest", "gemm",
          "flatten", "layer_norm", "rms_norm"}


def test_every_nn_op_has_cases():
    assert NN_OPS - {c.op for c in CASES} == set()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_nn_op_matches_interpreter(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the float32 policy's warning: tested below
        check(case)


# -- activations: the measured NaN / inf / -0.0 behaviour --------------------------------
def test_relu_propagates_nan_and_leaves_the_sign_of_zero_open():
    """Relu(NaN) is NaN (as max(NaN, 0)); Relu(-0.0) is -0.0 in onnxruntime
    and +0.0 in NumPy's SIMD maximum: zeros compare equal, signs may differ."""
    x = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -1.0, 2.0], np.float32)
    got, want, _ = run(NNCase("relu", (x,)))
    np.testing.assert_array_equal(got[0], want[0])  # NaN == NaN, -0.0 == 0.0 here
    assert np.isnan(got[0][0]) and got[0][1] == 0 and got[0][2] == np.inf


@pytest.mark.parametrize("op, attrs, want", [
    ("leaky_relu", {"alpha": 0.5}, [np.nan, -np.inf, np.inf, -0.0, 0.0, -1.5]),
    ("hard_sigmoid", {}, [np.nan, 0.0, 1.0, 0.5, 0.5, 0.0]),
    ("hard_swish", {}, [np.nan, np.nan, np.inf, -0.0, 0.0, -0.0]),
])
def test_activation_edge_values(op, attrs, want):
    """NaN propagates everywhere; HardSwish(-inf) = -inf * 0 = NaN; zeros keep their sign."""
    x = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -3.0], np.float32)
    got, ref, _ = run(NNCase(op, (x,), attrs))
    for result in (got[0], ref[0]):
        assert_matches(result, np.array(want, np.float32), 0, op, signed_zeros=True)


def test_hard_swish_multiplies_by_one_sixth_like_onnxruntime():
    """onnxruntime computes x * (1/6), not x / 6: on these inputs the two differ
    in the last bit, and the IR follows onnxruntime exactly."""
    x = np.linspace(-3.5, 3.5, 20001, dtype=np.float32)
    got, want, _ = run(NNCase("hard_swish", (x,)))
    np.testing.assert_array_equal(got[0], want[0])
    by_six = x * np.clip(x / np.float32(6) + np.float32(0.5), 0, 1)
    assert (by_six != want[0]).any()


@pytest.mark.parametrize("op", ["silu", "gelu"])
def test_function_and_primitive_forms(op):
    """The default is one call of a model-local function in domain
    pytensor_onnx (one node in the histogram, an overload per dtype); the
    primitive form inlines the same body, so both compute identical bits."""
    x = floats(F32).reshape(-1, 2)
    graph = graph_of(NNCase(op, (x,)))
    name = {"silu": "SiLU", "gelu": "Gelu"}[op]
    function = emitted(graph)
    assert histogram(function) == Counter({name: 1})
    assert [(f.domain, f.name, f.overload) for f in function.functions] == [("pytensor_onnx", name, "f32")]
    assert {o.domain: o.version for o in function.opset_import} == {"": 18, "pytensor_onnx": 1}
    primitive = emitted(graph, **{op: "primitive"})
    assert not primitive.functions and name not in histogram(primitive)
    a, b = (make_session(m).run(None, {"x0": x})[0] for m in (function, primitive))
    np.testing.assert_array_equal(a, b)


def test_one_function_per_dtype_and_form():
    g = Graph("two")
    x32, x64 = g.add_input(TensorType(F32, (3,)), "a"), g.add_input(TensorType(F64, (3,)), "b")
    outs = [g.add("silu", [x32]), g.add("silu", [x64]), g.add("silu", [x32]), g.add("gelu", [x32]),
            g.add("gelu", [x32], {"approximate": "tanh"})]
    g.set_outputs(outs)
    model = emitted(g)
    assert sorted((f.name, f.overload) for f in model.functions) == [
        ("Gelu", "f32"), ("Gelu", "f32-tanh"), ("SiLU", "f32"), ("SiLU", "f64")]
    a, b = np.array([-1, 0, 2], np.float32), np.array([-1, 0, 2], np.float64)
    for got, want in zip(make_session(model).run(None, {"a": a, "b": b}), evaluate(g, [a, b])):
        assert_matches(got, want, 4, "silu/gelu")


def test_emit_options_are_checked():
    graph = graph_of(NNCase("relu", (floats(F32),)))
    with pytest.raises(ValueError, match="silu='fast'"):
        emit_model(graph, silu="fast")
    with pytest.raises(ValueError, match="float64_conv"):
        emit_model(graph, float64_conv="error")


# -- convolution -----------------------------------------------------------------------
@pytest.mark.parametrize("flip", [False, True])
def test_conv_flip_with_sobel_against_scipy(flip):
    """flip=true is true convolution (scipy.signal.convolve2d), flip=false is
    cross-correlation (scipy.signal.correlate2d); the Sobel kernel tells
    them apart."""
    image = integers((1, 1, 6, 7))
    case = NNCase("conv", (image, SOBEL[None, None]), {"flip": flip}, consts=(1,))
    got, _, _ = run(case)
    scipy_fn = scipy.signal.convolve2d if flip else scipy.signal.correlate2d
    np.testing.assert_array_equal(got[0][0, 0], scipy_fn(image[0, 0], SOBEL, mode="valid"))
    assert not np.array_equal(scipy.signal.convolve2d(image[0, 0], SOBEL, "valid"),
                              scipy.signal.correlate2d(image[0, 0], SOBEL, "valid"))
    check(case)


def test_convolve2d_with_sobel_against_scipy():
    image = integers((6, 7))
    for mode in ("valid", "full"):
        got, _, _ = run(NNCase("convolve2d", (image, SOBEL), {"full": mode == "full"}))
        np.testing.assert_array_equal(got[0], scipy.signal.convolve2d(image, SOBEL, mode=mode))


FLOAT64_CASES = [
    ("conv", (RNG.normal(size=(1, 2, 5, 5)), RNG.normal(size=(3, 2, 3, 3)))),
    ("convolve2d", (RNG.normal(size=(5, 5)), RNG.normal(size=(3, 3)))),
    ("avg_pool", (RNG.normal(size=(1, 2, 5, 5)),)),
]


@pytest.mark.parametrize("op, args", FLOAT64_CASES)
def test_float64_policy(op, args):
    """float64 Conv/AveragePool: exact float64 forms without Conv or
    AveragePool by default; with float64_conv="float32" a warning and
    float32 precision; with "native" the float64 operator itself."""
    attrs = {"kernel": (2, 2)} if op == "avg_pool" else {}
    graph = graph_of(NNCase(op, args, attrs))
    feeds = {f"x{i}": a for i, a in enumerate(args)}
    want = evaluate(graph, list(args))[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact = emitted(graph)
    assert not {"Conv", "AveragePool", "Cast"} & set(histogram(exact))
    np.testing.assert_allclose(make_session(exact).run(None, feeds)[0], want, rtol=1e-12, atol=1e-12)
    with pytest.warns(UserWarning, match=f"IR op '{op}': float64 .* computes in float32"):
        model = emitted(graph, float64_conv="float32")
    got = make_session(model).run(None, feeds)[0]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert not np.array_equal(got, want)  # the precision change is real, hence the warning
    native = emitted(graph, float64_conv="native")
    assert {"Conv", "AveragePool"} & set(histogram(native)) and "Cast" not in histogram(native)
    assert {n.type.tensor_type.elem_type for n in native.graph.output} == {onnx.TensorProto.DOUBLE}


@st.composite
def conv_params(draw):
    group = draw(st.integers(1, 3))
    cin, cout = group * draw(st.integers(1, 2)), group * draw(st.integers(1, 2))
    nsp = draw(st.sampled_from([1, 2, 2]))
    kernel = [draw(st.integers(1, 5)) for _ in range(nsp)]
    strides = [draw(st.integers(1, 3)) for _ in range(nsp)]
    dilations = [draw(st.integers(1, 2)) for _ in range(nsp)]
    pads = [draw(st.integers(0, 2)) for _ in range(2 * nsp)]
    sizes = [draw(st.integers(max(1, (k - 1) * d + 1 - pads[i] - pads[i + nsp]), (k - 1) * d + 5))
             for i, (k, d) in enumerate(zip(kernel, dilations))]
    batch = draw(st.integers(1, 2))
    bias = draw(st.booleans())
    flip = draw(st.booleans())
    dtype = draw(st.sampled_from([np.float32, np.float64]))  # float64: the exact form (window_f64)
    x = integers((batch, cin, *sizes), dtype)
    w = integers((cout, cin // group, *kernel), dtype)
    args = (x, w, integers((cout,), dtype)) if bias else (x, w)
    return NNCase("conv", args, {"group": group, "strides": strides, "dilations": dilations, "pads": pads,
                                 "flip": flip}, dynamic=draw(st.booleans()))


@given(conv_params())
def test_conv_parameters(case):
    check(case)


@st.composite
def pool_params(draw):
    op = draw(st.sampled_from(["max_pool", "max_pool", "avg_pool"]))
    kernel = [draw(st.integers(1, 5)) for _ in range(2)]
    strides = [draw(st.integers(1, 3)) for _ in range(2)]
    dtype = draw(st.sampled_from([F32, F16, I8, I64, U16] if op == "max_pool" else [F32, F16, F64]))
    dilations = [draw(st.integers(1, 2)) for _ in range(2)] if op == "max_pool" or dtype == F64 else [1, 1]
    pads = [draw(st.integers(0, min(2, kernel[i % 2] - 1))) for i in range(4)]
    sizes = [draw(st.integers(max(1, (k - 1) * d + 1 - pads[i] - pads[i + 2]), (k - 1) * d + 5))
             for i, (k, d) in enumerate(zip(kernel, dilations))]
    x = integers((draw(st.integers(1, 2)), draw(st.integers(1, 3)), *sizes), dtype.numpy, 0 if dtype == U16 else -9, 9)
    attrs = {"kernel": kernel, "strides": strides, "pads": pads, "dilations": dilations}
    if op == "avg_pool":
        attrs["count_include_pad"] = draw(st.booleans())
    return NNCase(op, (x,), attrs, dynamic=draw(st.booleans()))


@given(pool_params())
def test_pool_parameters(case):
    check(case)


# -- pooling: measured onnxruntime behaviour ------------------------------------------
def test_max_pool_padded_window_of_minus_inf():
    """float32 MaxPool gives -FLT_MAX for a padded window holding only -inf;
    the rule pads explicitly so that the result is -inf."""
    x = np.full((1, 1, 4, 4), -np.inf, np.float32)
    x[0, 0, 0, 0] = 1
    model = check(NNCase("max_pool", (x,), {"kernel": (2, 2), "pads": (1, 1, 1, 1), "strides": (2, 2)}))
    assert histogram(model) == Counter({"Pad": 1, "MaxPool": 1})


def _pool_of(producer: str | None, x: np.ndarray, attrs: dict, chain: int = 1) -> Graph:
    """``max_pool`` (``chain`` of them) of ``producer(x)`` (of ``x`` itself when None)."""
    g = Graph("pool")
    v = g.add_input(TensorType.of_array(x), "x0")
    if producer is not None:
        node = g.create_node(producer, [v], {})
        g.append(node)
        v = node.outputs[0]
    for _ in range(chain):
        node = g.create_node("max_pool", [v], attrs)
        g.append(node)
        v = node.outputs[0]
    g.set_outputs([v])
    return g


@pytest.mark.parametrize("producer, chain", [("silu", 1), ("relu", 1), ("silu", 3), ("exp", 2)])
@pytest.mark.parametrize("numerics", ["fast", "strict"])
def test_max_pool_keeps_its_pads_when_no_input_is_minus_inf(producer, chain, numerics):
    """A pool of a value that holds no -inf (SiLU, ReLU, exp, or a pool of
    those), whose windows each hold an input element, needs no explicit Pad:
    the -FLT_MAX padding never wins. Same values, NaN and inf included."""
    x = integers((1, 2, 6, 5))
    x[0, 0, 0, :] = -np.inf
    x[0, 1, 2, 2], x[0, 1, 4, 4] = np.nan, np.inf
    attrs = {"kernel": (5, 5), "pads": (2, 2, 2, 2), "strides": (1, 1)}  # SPPF's pool
    graph = _pool_of(producer, x, attrs, chain)
    model = emitted(graph, numerics=numerics)
    assert histogram(model)["Pad"] == 0 and histogram(model)["MaxPool"] == chain
    got, = make_session(model).run(None, {"x0": x})
    want, = evaluate(graph, [x])
    kept = ~np.isnan(want)  # where a NaN lands in a window is unspecified for MaxPool
    for test in (np.isposinf, np.isneginf):
        np.testing.assert_array_equal(test(got[kept]), test(want[kept]))
    # fast SiLU is within 2 eps max(1, |x|) of the interpreter's; onnxruntime's Exp
    # is within 2 ulp of NumPy's (its vectorized kernel differs by CPU: 1 ulp on
    # CI's AVX-512 machine); the pools themselves only select, so exact otherwise
    tol = 2 * np.finfo(np.float32).eps if (numerics, producer) == ("fast", "silu") or producer == "exp" else 0
    np.testing.assert_allclose(got[kept], want[kept], rtol=tol, atol=tol)


@pytest.mark.parametrize("producer, attrs", [
    (None, {"kernel": (3, 3), "pads": (1, 1, 1, 1)}),        # the input may hold -inf
    ("neg", {"kernel": (3, 3), "pads": (1, 1, 1, 1)}),       # so may its negation
    ("relu", {"kernel": (3, 3), "pads": (1, 1, 1, 1), "dilations": (2, 2)}),  # dilated: not analysed
])
def test_max_pool_pads_explicitly_when_minus_inf_can_reach_a_padded_window(producer, attrs):
    x = np.full((1, 1, 4, 4), -np.inf, np.float32)
    x[0, 0, 3, 3] = 1
    model = emitted(_pool_of(producer, x, attrs), numerics="fast")
    assert histogram(model)["Pad"] == 1
    got, = make_session(model).run(None, {"x0": x})
    want, = evaluate(_pool_of(producer, x, attrs), [x])
    np.testing.assert_array_equal(got, want)


def test_max_pool_nan_propagate_option():
    """Native MaxPool keeps a NaN only when it visits it last (unspecified in
    the IR); max_pool_nan="propagate" makes every window holding a NaN NaN."""
    x = integers((1, 2, 5, 6))
    x[0, 0, 0, 0] = x[0, 1, 3, 4] = np.nan
    for op, attrs in (("max_pool", {"kernel": (2, 3), "pads": (1, 1, 0, 0)}), ("global_max_pool", {})):
        case = NNCase(op, (x,), attrs)
        got, want, _ = run(case)
        assert (np.isnan(got[0]) != np.isnan(want[0])).any()  # native: some NaN window gives a number
        check(NNCase(op, (x,), attrs, options={"max_pool_nan": "propagate"}))
        check(NNCase(op, (x.astype(np.float16),), attrs, options={"max_pool_nan": "propagate"}))


def test_avg_pool_dilations_need_opset_19():
    graph = graph_of(NNCase("avg_pool", (integers((1, 1, 5, 5)),), {"kernel": (2, 2), "dilations": (2, 1)}))
    with pytest.raises(EmitError, match="opset 19"):
        emit_model(graph)


# -- convolve2d: forms that need static information ----------------------------------
def test_convolve2d_group_axis_of_unknown_size():
    g = Graph("c")
    x = g.add_input(TensorType(F32, ("B", 5, 5)), "x")
    k = g.add_input(TensorType(F32, ("C", 3, 3)), "k")
    g.set_outputs([g.add("convolve2d", [x, k])])
    with pytest.raises(EmitError, match="static group count"):
        emit_model(g)


def test_integer_convolve2d_needs_a_static_kernel():
    g = Graph("c")
    x = g.add_input(TensorType(I32, (5, 5)), "x")
    k = g.add_input(TensorType(I32, ("H", 3)), "k")
    g.set_outputs([g.add("convolve2d", [x, k])])
    with pytest.raises(EmitError, match="static kernel"):
        emit_model(g)


@pytest.mark.parametrize("x_shape, w_shape, attrs", [
    ((2, 4, 7, 6), (6, 2, 3, 2), {"group": 2, "pads": (1, 0, 2, 1), "strides": (2, 1), "dilations": (1, 2)}),
    ((2, 4, 7, 6), (3, 4, 1, 1), {}),
    ((2, 4, 7, 6), (4, 1, 3, 3), {"group": 4, "strides": (2, 3), "flip": True}),  # depthwise
    ((1, 2, 9), (3, 2, 4), {"pads": (2, 1), "strides": (2,)}),  # 1-D
    ((1, 2, 4, 5, 3), (2, 2, 2, 3, 1), {"flip": True, "dilations": (2, 1, 1)}),  # 3-D
], ids=["grouped-strided-dilated-padded", "1x1", "depthwise", "1d", "3d"])
@pytest.mark.parametrize("values", ["integers", "reals"])
def test_float64_conv_of_a_kernel_known_at_run_time(x_shape, w_shape, attrs, values):
    """Exact float64 ``conv`` (``window_f64.conv_f64_gathered``) when the
    kernel's spatial dims are symbolic: no Conv; integer-valued floats give
    the interpreter's values bit for bit, reals within the convolution
    family's bound (``C/g * K`` eps of ``|x| . |w|``)."""
    g = Graph("conv")
    nsp = len(x_shape) - 2
    x = g.add_input(TensorType(F64, ("N", x_shape[1], *(f"s{i}" for i in range(nsp)))), "x0")
    w = g.add_input(TensorType(F64, (w_shape[0], w_shape[1], *(f"k{i}" for i in range(nsp)))), "x1")
    b = g.add_input(TensorType(F64, (w_shape[0],)), "x2")
    g.set_outputs([g.add("conv", [x, w, b], attrs)])
    if values == "integers":
        args = [integers(x_shape, np.float64), integers(w_shape, np.float64), integers(w_shape[:1], np.float64)]
    else:
        args = [RNG.normal(size=s) for s in (x_shape, w_shape, w_shape[:1])]
    model = emitted(g)
    assert "Conv" not in histogram(model) and "Gather" in histogram(model)
    (got,), (want,) = make_session(model).run(None, dict(zip(("x0", "x1", "x2"), args))), evaluate(g, args)
    if values == "integers":
        assert_matches(got, want, 0, "integer-valued float64 conv")
    else:  # the contract's bound, |x| . |w| computed by the interpreter on absolute values
        flipped = args[1][(slice(None),) * 2 + (slice(None, None, -1),) * nsp] if attrs.get("flip") else args[1]
        g_abs = Graph("abs")
        xa, wa = (g_abs.add_input(TensorType.of_array(a), f"a{i}") for i, a in enumerate(args[:2]))
        g_abs.set_outputs([g_abs.add("conv", [xa, wa], {k: v for k, v in attrs.items() if k != "flip"})])
        magnitude = evaluate(g_abs, [np.abs(args[0]), np.abs(flipped)])[0]
        magnitude = magnitude + np.abs(args[2]).reshape((1, -1) + (1,) * nsp)
        terms = w_shape[1] * int(np.prod(w_shape[2:])) + 1
        assert np.all(np.abs(got - want) <= terms * np.finfo(np.float64).eps * magnitude)


def test_convolve2d_emits_one_conv():
    """Batch, output-channel and group axes fold into a single grouped Conv."""
    model = check(NNCase("convolve2d", (integers((2, 1, 3, 6, 5)), integers((1, 4, 3, 2, 2)))))
    assert histogram(model)["Conv"] == 1
    assert [a.i for n in model.graph.node if n.op_type == "Conv" for a in n.attribute if a.name == "group"] == [3]


@functools.cache
def _dynamic_convolve2d(full: bool, x_batch, k_batch):
    g = Graph("c")
    x = g.add_input(TensorType(F32, (x_batch, "H", "W")), "x")
    k = g.add_input(TensorType(F32, (k_batch, "KH", "KW")), "k")
    g.set_outputs([g.add("convolve2d", [x, k], {"full": full})])
    return g, make_session(emitted(g))


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("batches, x_shape, k_shape", [
    ((2, 2), (2, 6, 5), (2, 2, 3)), ((2, 2), (2, 2, 3), (2, 6, 5)), ((2, 2), (2, 4, 4), (2, 4, 4)),
    ((2, 2), (2, 1, 1), (2, 3, 2)), (("N", 1), (3, 5, 4), (1, 2, 2)), ((1, "M"), (1, 2, 2), (4, 3, 5))])
def test_convolve2d_sizes_known_only_at_run_time(full, batches, x_shape, k_shape):
    """One model, whichever operand is larger: valid mode pads the image by
    max(0, k - n) at run time (scipy's kernel-larger case)."""
    graph, session = _dynamic_convolve2d(full, *batches)
    x, k = integers(x_shape), integers(k_shape)
    got = session.run(None, {"x": x, "k": k})[0]
    np.testing.assert_array_equal(got, evaluate(graph, [x, k])[0])
