"""Differential tests of the reduction lowerings: CAReduce (Sum, Prod, Max,
Min, All, Any, ProdWithoutZeros) with their accumulator dtypes, mean,
Argmax/Argmin, Softmax/LogSoftmax (axis int, None and, in PyTensor 3,
several axes), SoftmaxGrad and CumOp."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.extra_ops import CumOp
from pytensor.tensor.math import ProdWithoutZeros

from tests.helpers import check_pytensor, pytensor_reference

RNG = np.random.default_rng(3)
DTYPES = ["float32", "float64", "int32", "int64", "bool"]


def data(shape, dtype):
    """Small distinct-ish values of ``dtype``: halves for floats, -4..4 for ints."""
    if dtype == "bool":
        return RNG.random(shape) > 0.4
    values = RNG.integers(-4, 5, size=shape)
    return (values * 0.5 if dtype.startswith("float") else values).astype(dtype)


REDUCTIONS = {
    "sum": pt.sum, "prod": pt.prod, "max": pt.max, "min": pt.min, "all": pt.all, "any": pt.any,
}
AXES = [None, 0, -1, (0, 2), (1,), ()]


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_careduce_axes_and_dtypes(name):
    """Every dtype PyTensor accepts, several axes in one graph; int8 sums
    accumulate in int64 and float32 sums in float64, as PyTensor does."""
    inputs, outputs, values = [], [], []
    for dtype in DTYPES + ["int8"]:
        x = pt.tensor3(f"x_{dtype}", dtype=dtype)
        try:
            outs = [REDUCTIONS[name](x, axis=axis) for axis in AXES]
        except TypeError:
            continue
        inputs.append(x)
        outputs += outs
        values.append(data((2, 3, 4), dtype))
    check_pytensor(inputs, outputs, values)


def test_sum_dtype_and_acc_dtype():
    x8 = pt.tensor("x8", dtype="int8", shape=(None,))
    xf = pt.fvector("xf")
    outs = [pt.sum(x8, dtype="int8"), pt.sum(x8, acc_dtype="int64", dtype="int16"), pt.sum(xf, dtype="float64"),
            pt.sum(xf, acc_dtype="float64"), pt.prod(x8, dtype="float32"), pt.sum(x8, acc_dtype="float32")]
    # 100 * 3 overflows int8 but not the int64 accumulator: the cast at the end wraps
    values = [np.int8([100, 100, 100, -7]), np.float32([1e8, 1.0, -1e8, 0.5])]
    check_pytensor([x8, xf], outs, values)


def test_float32_sum_accumulates_in_float64():
    x = pt.fvector("x")
    values = [np.float32([1e8, 1.0, -1e8, 1.0])]
    compiled = check_pytensor([x], [x.sum()], values)
    assert compiled.run(*values)[0] == np.float32(2.0)  # a float32 accumulator would give 0 or 1


def test_max_min_propagate_nan_and_inf():
    x = pt.dmatrix("x")
    value = np.array([[1.0, np.nan, -np.inf], [2.0, 3.0, np.inf]])
    check_pytensor([x], [pt.max(x, axis=1), pt.min(x, axis=0), pt.max(x)], [value])


def test_mean():
    x, f, i = pt.dvector("x"), pt.fmatrix("f"), pt.lmatrix("i")
    check_pytensor([x, f, i], [x.mean(), f.mean(axis=0), f.mean(), i.mean(axis=1), pt.mean(f, axis=(0, 1))],
                   [np.array([1.0, 2.5, -4.0]), data((3, 4), "float32"), data((2, 5), "int64")])


def test_prod_without_zeros():
    x = pt.dmatrix("x")
    value = np.array([[0.0, 2.0, -3.0], [0.0, 0.0, 0.0], [1.5, 4.0, 0.0]])
    check_pytensor([x], [ProdWithoutZeros(axis=(1,))(x), ProdWithoutZeros(axis=None)(x),
                         ProdWithoutZeros(axis=(0,))(x)], [value])


@pytest.mark.parametrize("dtype", DTYPES)
def test_argmax_argmin(dtype):
    x = pt.tensor3("x", dtype=dtype)
    outs = [pt.argmax(x), pt.argmax(x, axis=1), pt.argmax(x, axis=-1, keepdims=True), pt.argmax(x, axis=(0, 2)),
            pt.argmax(x, axis=(2, 0)), pt.argmin(x, axis=0), pt.argmin(x)]
    value = data((3, 4, 2), dtype)
    check_pytensor([x], outs, [value])


def test_argmax_of_static_shape_and_ties():
    x = pt.tensor("x", dtype="float64", shape=(2, 3, 4))
    value = np.zeros((2, 3, 4))
    value[1, 2, 0] = value[0, 1, 3] = 1.0
    check_pytensor([x], [pt.argmax(x, axis=(0, 1)), pt.argmax(x, axis=(1, 2))], [value])


# -- softmax -----------------------------------------------------------------
SOFTMAX = {"softmax": pt.special.softmax, "log_softmax": pt.special.log_softmax}


@pytest.mark.parametrize("name", sorted(SOFTMAX))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_axes(name, dtype):
    fn = SOFTMAX[name]
    x = pt.tensor3("x", dtype=dtype)
    v = pt.vector("v", dtype=dtype)
    outs = [fn(x, axis=-1), fn(x, axis=0), fn(x, axis=None), fn(v, axis=None), fn(v, axis=0)]
    value = (RNG.normal(size=(2, 3, 4)) * 3).astype(dtype)
    value[0, 0, 0] = 50.0  # needs the max subtraction
    check_pytensor([x, v], outs, [value, np.array([-1.0, 0.0, 1000.0], dtype=dtype)])


@pytest.mark.parametrize("name", sorted(SOFTMAX))
def test_softmax_several_axes(name):
    """Several axes: PyTensor 3's symbolic Softmax takes a tuple; PyTensor 2
    only an int or None, so there the tuple is rejected when building."""
    x = pt.tensor3("x")
    try:
        out = SOFTMAX[name](x, axis=(0, 2))
    except TypeError:
        assert pytensor.__version__.startswith("2.")
        return
    check_pytensor([x], [out], [RNG.normal(size=(2, 3, 4))])


def test_softmax_gradient():
    """The gradient graph: SoftmaxGrad in PyTensor 2, plain ops in PyTensor 3."""
    x = pt.dmatrix("x")
    w = pt.dmatrix("w")
    cost = (pt.special.softmax(x, axis=1) * w).sum() + (pt.special.softmax(x, axis=None) * w).sum()
    g = pytensor.grad(cost, x)
    check_pytensor([x, w], [g], [RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))])


# -- cumulative ops ------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_cumsum_cumprod(dtype):
    x = pt.tensor3("x", dtype=dtype)
    outs = [pt.cumsum(x, axis=0), pt.cumsum(x, axis=2), pt.cumprod(x, axis=1), pt.cumsum(x), pt.cumprod(x, axis=-1)]
    check_pytensor([x], outs, [data((2, 3, 4), dtype)])


@pytest.mark.parametrize("dtype", ["uint8", "int64", "float16"])
@pytest.mark.parametrize("shape", [(0, 3, 1), (2, 0, 4), (2, 3, 0), (0, 0, 0)])
def test_scanned_products_and_sums_of_empty_tensors(dtype, shape):
    """The reductions emitted as ONNX Scan (integer prod/cumprod, float16
    cumsum) on tensors with a zero-length axis, scanned or not: onnxruntime's
    Scan dies with SIGFPE on empty slices (fuzz seed 100253), so the emitter
    skips it for an empty input. Products over an empty axis are 1."""
    x = pt.tensor3("x", dtype=dtype)
    outs = [pt.prod(x, axis=1), pt.prod(x, axis=0)]
    if dtype != "uint8":  # PyTensor's perform returns NumPy's uint64 for a uint8 cumsum/cumprod
        outs += [pt.cumprod(x, axis=1), pt.cumsum(x, axis=2)]
    check_pytensor([x], outs, [np.zeros(shape, dtype)])


def test_cumsum_int32_keeps_its_dtype():
    """NumPy's cumsum of int32 gives int64, so PyTensor's Python and Numba
    backends return int64 for this int32-typed output; the compiled model keeps
    the declared int32 (the values agree while nothing overflows)."""
    x = pt.ivector("x")
    out = CumOp(axis=0)(x)
    values = [np.int32([3, -4, 5, 2**29, 2**29])]
    (loose,) = pytensor_reference([x], [out], values)
    assert out.dtype == "int32" and loose.dtype == np.int64
    check_pytensor([x], [out], values, reference=[loose.astype(np.int32)])


# -- fused reductions: CAReduce{Composite} -------------------------------------------
def _fused_sum(x, body, axis=None, acc_dtype="float64"):
    """``CAReduce(Composite{(acc, x) -> acc + body(x)})`` as PyTensor 2.38's
    ``local_careduce_fusion`` builds it (identity of Add)."""
    import pytensor.scalar as ps
    from pytensor.tensor.elemwise import CAReduce

    acc = ps.get_scalar_type(acc_dtype).make_variable()
    elem = ps.get_scalar_type(x.dtype).make_variable()
    out = acc + body(elem)
    if out.type.dtype != acc_dtype:
        out = ps.cast(out, acc_dtype)
    comp = ps.Composite([acc, elem], [out])
    comp.identity, comp.nin, comp.nout = ps.add.identity, 2, 1
    return CAReduce(comp, axis=axis, dtype=x.dtype, acc_dtype=acc_dtype)(x)


@pytest.mark.parametrize("axis", [None, (1,), (0,)])
def test_fused_careduce_composite(axis):
    import pytensor.scalar as ps

    x = pt.matrix("x", dtype="float32")
    v = np.random.default_rng(1).normal(size=(3, 5)).astype(np.float32)
    want = [np.sum(np.square(v).astype(np.float64), axis=axis).astype(np.float32),
            np.sum(np.exp(v).astype(np.float64), axis=axis).astype(np.float32)]
    check_pytensor([x], [_fused_sum(x, lambda e: ps.sqr(e), axis), _fused_sum(x, lambda e: ps.exp(e), axis)], [v],
                   reference=want)


def test_fused_careduce_from_a_compiled_function():
    """PyTensor 2.38's default (C) mode fuses ``sum(x**2)`` and ``exp(x).sum(1)``
    into CAReduce{Composite}; the compiled function exports and matches."""
    from pytensor.tensor.elemwise import CAReduce
    import pytensor.scalar as ps

    x = pt.matrix("x", dtype="float64")
    f = pytensor.function([x], [(x**2).sum(), pt.exp(x).sum(axis=1), pt.gammaln(x).sum(axis=0)], mode="FAST_RUN")
    fused = [n for n in f.maker.fgraph.toposort()
             if isinstance(n.op, CAReduce) and isinstance(n.op.scalar_op, ps.Composite)]
    if pytensor.__version__.startswith("2."):
        assert len(fused) == 3  # the fusion really happens in 2.38
    from compiler import compile_to_onnx

    m = compile_to_onnx(f)
    v = np.random.default_rng(2).uniform(0.1, 3, (4, 6))
    for got, want in zip(m.run(v), f(v)):
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_fused_careduce_of_another_shape_is_unsupported():
    import pytensor.scalar as ps
    from pytensor.tensor.elemwise import CAReduce

    from compiler import compile_to_onnx
    from compiler.lowering.errors import UnsupportedOpsError

    acc, elem = ps.float64(), ps.float64()
    comp = ps.Composite([acc, elem], [acc * acc + elem])  # not reduce_op(acc, f(x))
    comp.identity, comp.nin, comp.nout = 0.0, 2, 1
    x = pt.dvector("x")
    with pytest.raises(UnsupportedOpsError, match="not an elementwise map followed by a sum or product"):
        compile_to_onnx([x], outputs=[CAReduce(comp, axis=None)(x)])


INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def bits(shape, dtype):
    """Integers over ``dtype``'s whole range (every bit pattern), bools 70% true."""
    if dtype == "bool":
        return RNG.random(shape) < 0.7
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("scalar_op", ["and_", "or_", "xor"])
def test_bitwise_reductions_of_every_int_width(scalar_op):
    """``CAReduce(ps.and_/or_/xor)`` (the reduction ``pytensor.tensor.elemwise.CAReduce``
    documents for ints; ``pt.all``/``pt.any`` compare with 0 first) of every
    int width, signed and unsigned, and bools (XOR; AND/OR of bools are
    ReduceMin/Max): static shapes (unrolled fold) and symbolic ones (a Loop),
    axes None, one, several, none, keepdims, and empty axes (identity: all
    bits set for AND, 0 for OR/XOR)."""
    import pytensor.scalar as ps
    from pytensor.tensor.elemwise import CAReduce

    op = getattr(ps, scalar_op)
    inputs, outputs, values = [], [], []
    for dtype in INT_DTYPES + ["bool"]:
        for shape, static in [((3, 5, 4), True), ((3, 5, 4), False), ((3, 0, 4), True), ((2, 0, 3), False)]:
            x = pt.tensor(f"x_{dtype}_{len(inputs)}", dtype=dtype, shape=shape if static else (None,) * 3)
            outs = [CAReduce(op, axis=axis)(x) for axis in [(1,), (0, 2), (2,), None, ()]]
            outs.append(pt.expand_dims(CAReduce(op, axis=(1,))(x), 1))  # keepdims
            inputs.append(x)
            outputs += outs
            values.append(bits(shape, dtype))
    check_pytensor(inputs, outputs, values)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 1023, 1025])
def test_bitwise_fold_of_symbolic_length(n):
    """The Loop fold stops after ceil(log2 n) halvings at any run-time length
    (odd lengths keep their last entry; n = 0 gives the identity); checked
    against NumPy's ``bitwise_*.reduce`` too."""
    import pytensor.scalar as ps
    from pytensor.tensor.elemwise import CAReduce

    x = pt.tensor("x", dtype="int64", shape=(None, None))
    ops = [ps.and_, ps.or_, ps.xor]
    v = bits((3, n), "int64")
    v[:, :n // 2] |= -2  # many set bits, so AND is not 0 after the first few entries
    m = check_pytensor([x], [CAReduce(op, axis=(1,))(x) for op in ops], [v])
    for got, ufunc in zip(m.run(v), [np.bitwise_and, np.bitwise_or, np.bitwise_xor]):
        np.testing.assert_array_equal(got, ufunc.reduce(v, axis=1))


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint8"])
def test_softmax_of_integers(dtype):
    """PyTensor 2.38 types ``softmax``/``log_softmax`` of ints with the input's
    int type while its ``perform`` returns SciPy's float values and its C
    code raises: refused with that reason. PyTensor 3 types them float (its
    symbolic graph, lowered like any other)."""
    from pytensor.tensor.special import log_softmax, softmax

    from compiler import compile_to_onnx
    from compiler.lowering.compat import SoftmaxGrad
    from compiler.lowering.errors import UnsupportedOpsError

    x = pt.tensor("x", dtype=dtype, shape=(None, None))
    outs = [softmax(x, axis=1), log_softmax(x, axis=None)]
    if SoftmaxGrad is None:  # PyTensor 3
        assert all(o.dtype.startswith("float") for o in outs)
        return
    assert all(o.dtype == dtype for o in outs)
    for out in outs:
        with pytest.raises(UnsupportedOpsError, match="no value has the declared type"):
            compile_to_onnx([x], outputs=[out])
