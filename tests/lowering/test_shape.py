"""Differential tests of the shape lowerings (DimShuffle, Reshape, Shape,
Shape_i, SpecifyShape, Alloc, AllocEmpty, MakeVector, ARange, Join, Split,
Eye, JoinDims, SplitDims, identities, and ``pt.pad``'s constant mode):
PyTensor vs onnxruntime vs the IR interpreter, plus the IR they lower to
where the lowering promises a form (few nodes, constant shapes)."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest
from pytensor.compile.ops import deep_copy_op, view_op
from pytensor.graph.replace import clone_replace
from pytensor.tensor.basic import AllocEmpty, scalar_from_tensor, tensor_from_scalar
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.reshape import join_dims, split_dims
from pytensor.tensor.shape import Shape_i

from compiler import UnsupportedOpsError, compile_to_onnx
from compiler.lowering import graph_spec, lower
from tests.helpers import check_pytensor, pytensor_reference

RNG = np.random.default_rng(11)
DTYPES = ["float32", "float64", "int32", "int64", "bool"]


def data(shape, dtype="float64"):
    """Random test data of ``shape`` and ``dtype``."""
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    return (RNG.normal(size=shape) * 5).astype(dtype)


def lowered_ops(inputs, outputs) -> list[str]:
    """The IR op names ``outputs`` lower to, in program order (no passes)."""
    return [n.op for n in lower(graph_spec(inputs, outputs)).graph]


x = pt.matrix("x")
X = data((3, 4))


# -- DimShuffle ---------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_dimshuffle_forms(dtype):
    t = pt.tensor("t", dtype=dtype, shape=(None, 1, None))
    outs = [t.T, t.dimshuffle(2, 0), t.dimshuffle("x", 2, "x", 0, 1), pt.expand_dims(t, (0, 3)), t.dimshuffle(0, 2)]
    check_pytensor([t], outs, [data((2, 1, 3), dtype)])


@pytest.mark.parametrize("make, ops", [
    (lambda t: DimShuffle(input_ndim=3, new_order=(0, 1, 2))(t), []),
    (lambda t: t.dimshuffle(2, 0), ["squeeze", "transpose"]),
    (lambda t: t.dimshuffle("x", 0, 2), ["squeeze", "unsqueeze"]),
    (lambda t: t.dimshuffle("x", 2, 1, 0), ["transpose", "unsqueeze"]),
    (lambda t: t.dimshuffle(0, 1, 2, "x"), ["unsqueeze"]),
])
def test_dimshuffle_emits_only_needed_nodes(make, ops):
    t = pt.tensor("t", shape=(None, 1, None))
    assert lowered_ops([t], [make(t)]) == ops


def test_matrix_transpose_and_dimshuffle():
    check_pytensor([x], [x.T, x.dimshuffle("x", 1, 0), pt.swapaxes(x, 0, 1)], [X])


# -- Reshape, JoinDims, SplitDims ------------------------------------------------
def test_reshape_constant_shape_is_static():
    out = x.reshape((-1, 2))
    graph = lower(graph_spec([x], [out])).graph
    (node,) = graph.nodes
    assert node.op == "reshape" and node.inputs[1].const.tolist() == [-1, 2]
    check_pytensor([x], [out, x.reshape((2, 3, 2)), x.flatten(), x.reshape((12, 1))], [X])


@pytest.mark.parametrize("shape", [(2, 6), (5, 3)])
def test_reshape_from_symbolic_shape(shape):
    """The same model at two input sizes: the target shape is computed at run time."""
    outs = [x.reshape((x.shape[0] * x.shape[1],)), x.reshape((x.shape[1], -1)), pt.flatten(x.T)]
    check_pytensor([x], outs, [data(shape)])


def test_reshape_symbolic_vector_and_scalar():
    s = pt.lvector("s")
    v = pt.vector("v")
    check_pytensor([x, s, v], [x.reshape(s, ndim=3), v.reshape(())], [X, np.int64([2, -1, 3]), data(1)])


@pytest.mark.parametrize("shape", [(2, 3, 4), (3, 1, 2)])
def test_join_dims_and_split_dims(shape):
    t = pt.tensor3("t")
    n, m = pt.lscalar("n"), pt.iscalar("m")
    outs = [join_dims(t, 1), join_dims(t, 0, 2), join_dims(t, 1, 0), split_dims(t, (n, m), axis=2),
            split_dims(t, (1, shape[0]), axis=0)]
    check_pytensor([t, n, m], outs, [data(shape), np.int64(2), np.int32(shape[2] // 2)])


# -- Shape, Shape_i, SpecifyShape ----------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 4), (1, 7)])
def test_shape_ops(shape):
    s = pt.specify_shape(x, (None, shape[1]))
    outs = [x.shape, Shape_i(1)(x), s.shape, Shape_i(1)(s), s * 2]
    check_pytensor([x], outs, [data(shape)])


def test_static_shape_becomes_constant():
    t = pt.tensor("t", shape=(2, 5))
    assert lowered_ops([t], [t.shape, Shape_i(0)(t)]) == []


# -- Alloc, AllocEmpty, MakeVector ---------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_alloc(dtype):
    v = pt.vector("v", dtype=dtype)
    i = pt.iscalar("i")
    outs = [pt.alloc(v, 3, x.shape[0], v.shape[0]), pt.alloc(v[0], 2, i), pt.zeros((i, 3), dtype=dtype),
            pt.full((2, 2), v[1])]
    check_pytensor([x, v, i], outs, [X, data(4, dtype), np.int32(5)])


def test_alloc_constant_shape_is_static():
    out = pt.alloc(pt.scalar("s"), 2, 3)
    graph = lower(graph_spec([out.owner.inputs[0]], [out])).graph
    (node,) = graph.nodes
    assert node.op == "expand" and node.inputs[1].const.tolist() == [2, 3] and node.output.shape == (2, 3)


def test_alloc_empty():
    """AllocEmpty's content is undefined, so compare its shape and an overwrite."""
    n = pt.lscalar("n")
    y = pt.matrix("y", dtype="int32")
    empty = AllocEmpty("int32")(n, 2)
    check_pytensor([n, y], [empty.shape, pt.set_subtensor(empty[:], y)], [np.int64(3), data((3, 2), "int32")])


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "float32", "float64", "bool"])
def test_make_vector(dtype):
    a, b = pt.scalar("a", dtype=dtype), pt.scalar("b", dtype=dtype)
    outs = [pt.stack([a, b, a]), pt.stack([b])]
    check_pytensor([a, b], outs, [data((), dtype), data((), dtype)])


def test_make_vector_mixed_dtypes_and_constant():
    a, b = pt.iscalar("a"), pt.lscalar("b")
    out = pt.stack([a, b])
    assert out.dtype == "int64"
    check_pytensor([a, b, x], [out, x.reshape((x.shape[1], 3))], [np.int32(-3), np.int64(9), X])
    const = pt.stack([pt.constant(np.int8(1)), pt.constant(np.int8(2))])
    assert type(const.owner.op).__name__ == "MakeVector" and lowered_ops([], [const]) == []


# -- ARange, Eye ---------------------------------------------------------------------------
def test_arange():
    i, f = pt.iscalar("i"), pt.scalar("f", dtype="float32")
    outs = [pt.arange(i), pt.arange(10, i, -3), pt.arange(0.5, i, 0.25), pt.arange(f, 3.5, 0.5),
            pt.arange(i, dtype="float64")]
    for n in (7, -2):
        check_pytensor([i, f], outs, [np.int32(n), np.float32(-1.5)])


def test_eye():
    n, k = pt.iscalar("n"), pt.lscalar("k")
    outs = [pt.eye(n, 4, 1), pt.eye(3, dtype="int32"), pt.eye(n, n + 2, k, dtype="bool")]
    check_pytensor([n, k], outs, [np.int32(3), np.int64(-1)])


# -- Join, Split -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_join(dtype):
    a, b = pt.matrix("a", dtype=dtype), pt.matrix("b", dtype=dtype)
    outs = [pt.concatenate([a, b], axis=1), pt.concatenate([a, b, a], axis=-2), pt.stack([a, b], axis=1)]
    check_pytensor([a, b], outs, [data((2, 3), dtype), data((2, 3), dtype)])


def test_join_upcasts():
    a, b = pt.vector("a", dtype="int32"), pt.vector("b", dtype="float32")
    out = pt.concatenate([a, b])
    assert out.dtype == "float64"
    check_pytensor([a, b], out, [np.int32([1, -2]), np.float32([0.1, 3e7])])


@pytest.mark.parametrize("dtype", DTYPES)
def test_join_along_runtime_axis(dtype):
    """A scalar-input axis, every value from -3 to 2, on tensors that differ
    in the joined dim; against PyTensor and NumPy, exact."""
    axis = pt.lscalar("axis")
    t, u = pt.tensor3("t", dtype=dtype), pt.tensor3("u", dtype=dtype)
    compiled = None
    for k in range(-3, 3):
        shape_u = [2, 3, 4]
        shape_u[k] = 1
        values = [data((2, 3, 4), dtype), data(tuple(shape_u), dtype), np.int64(k)]
        compiled = check_pytensor([t, u, axis], [pt.join(axis, t, u, t)], values)
        np.testing.assert_array_equal(compiled.run(*values)[0], np.concatenate(values[:2] + values[:1], axis=k))
    assert not compiled.ir.contains_op("if")


def test_join_runtime_axis_int32():
    axis = pt.iscalar("axis")
    check_pytensor([x, axis], [pt.join(axis, x, x)], [X, np.int32(-1)])


@pytest.mark.parametrize("value", [0, 1, -1, -2])
def test_join_and_split_along_a_run_time_axis(value):
    axis = pt.lscalar("axis")
    m, i = pt.matrix("m"), pt.matrix("i", dtype="int32")
    sizes = [1, 1]
    check_pytensor([m, axis], [*pt.split(m, sizes, n_splits=2, axis=axis), pt.join(axis, m, m * 2, m)],
                   [data((2, 2)), np.int64(value)])
    check_pytensor([i, axis], [pt.join(axis, i, i[::-1])], [data((3, 2), "int32"), np.int64(value)])


def test_join_along_a_run_time_axis_of_unequal_lengths():
    axis = pt.lscalar("axis")
    a, b = pt.matrix("a"), pt.matrix("b")
    check_pytensor([a, b, axis], [pt.join(axis, a, b)], [data((2, 3)), data((4, 3)), np.int64(0)])
    check_pytensor([a, b, axis], [pt.join(axis, a, b)], [data((2, 3)), data((2, 1)), np.int64(-1)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_split(dtype):
    t = pt.matrix("t", dtype=dtype)
    sizes = pt.lvector("sizes")
    outs = [*pt.split(t, [1, 3], n_splits=2, axis=1), *pt.split(t, sizes, n_splits=3, axis=0)]
    check_pytensor([t, sizes], outs, [data((3, 4), dtype), np.int64([0, 2, 1])])


# -- identities ----------------------------------------------------------------------------
def test_identity_ops():
    s = pt.scalar("s", dtype="int32")
    outs = [tensor_from_scalar(scalar_from_tensor(s)), deep_copy_op(x), view_op(x) + 1]
    check_pytensor([s, x], outs, [np.int32(-4), X])


# -- pt.pad, constant mode ----------------------------------------------------------------
def inlined(out):
    """``out`` of an OpFromGraph with the Op's inner graph substituted for it
    (PyTensor runs the same graph; inlining only spares compiling the Op's
    inner function in the default mode for the reference)."""
    op = out.owner.op
    return clone_replace(op.inner_outputs, dict(zip(op.inner_inputs, out.owner.inputs)))[0]


def test_pad_constant():
    """``pt.pad`` builds a ``Pad`` OpFromGraph of Alloc, Shape, Subtensor,
    MakeVector and SetSubtensor ops (plus scalar Add/Sub); the first pad also
    runs at a second input size."""
    widths = [((1, 2), (0, 3)), 2, ((0, 1), (2, 0))]
    outs = [pt.pad(x, widths[0], mode="constant", constant_values=1.5),
            pt.pad(x, widths[1], mode="constant"),
            pt.pad(x, widths[2], constant_values=((-1, -2), (-3, -4)))]
    assert all(type(o.owner.op).__name__ == "Pad" for o in outs)
    for outputs, values in [(outs, [X]), (outs[:1], [data((1, 2))])]:
        reference = pytensor_reference([x], [inlined(o) for o in outputs], values)
        for got, width in zip(reference, widths):
            assert got.shape == np.pad(values[0], width).shape
        check_pytensor([x], outputs, values, reference=reference)


def test_specify_shape_contradicting_a_static_dim_is_unsupported():
    """PyTensor 2.38's ``local_specify_shape_lift`` can leave ``SpecifyShape(x, 0)``
    on an ``x`` whose dim is statically 1 (fuzz seed 106827, an empty slice): the
    graph raises at every run, which ONNX cannot express."""
    from pytensor.tensor.shape import specify_shape

    from compiler import compile_to_onnx
    from compiler.lowering.errors import UnsupportedOpsError

    x = pt.tensor("x", dtype="float64", shape=(1, None))
    out = specify_shape(pt.sqr(pt.matrix("free")), (0, None))
    out.owner.inputs[0] = pt.sqr(x)  # the graph as the rewrite leaves it (make_node would refuse 1 != 0)
    with pytest.raises(UnsupportedOpsError, match="requires size 0 of axis 0, whose size is always 1"):
        compile_to_onnx([x], outputs=[out])


def test_split_with_more_sizes_than_outputs_is_refused_clearly():
    """``split(a, [2, 2, 2], n_splits=2)``: PyTensor raises when the function
    runs ("Length of splits is not equal to n_splits"); the compile refuses
    it with that reason instead of an internal type error."""
    a = pt.matrix("a")
    with pytest.raises(UnsupportedOpsError, match="Length of splits is not equal to n_splits"):
        compile_to_onnx([a], outputs=pt.split(a, splits_size=[2, 2, 2], n_splits=2, axis=0))
