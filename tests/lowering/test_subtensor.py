"""Differential tests of the indexing lowerings (Subtensor, AdvancedSubtensor1,
AdvancedSubtensor, IncSubtensor, AdvancedIncSubtensor1, AdvancedIncSubtensor):
PyTensor vs onnxruntime vs the IR interpreter, dtype and shape included."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from pytensor.compile.mode import Mode
from pytensor.graph.traversal import graph_inputs
from pytensor.tensor.subtensor import (advanced_inc_subtensor1, advanced_set_subtensor1, advanced_subtensor1,
                                       inc_subtensor)

from compiler import UnsupportedOpsError, compile_to_onnx
from compiler.lowering import graph_spec, lower
from ir.interpreter import evaluate
from tests.helpers import assert_same, check_pytensor

RNG = np.random.default_rng(7)
DTYPES = ["float32", "float64", "int32", "int64", "bool"]


def data(shape, dtype="float64"):
    """Random test data of ``shape`` and ``dtype`` (distinct values for numbers)."""
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    values = RNG.permutation(int(np.prod(shape))).reshape(shape) - 7
    return (values * 0.5 if dtype.startswith("float") else values).astype(dtype)


def ids(*values):
    """int64 index arrays of ``values`` (lists)."""
    return [np.asarray(v, dtype="int64") for v in values]


def lowered_ops(inputs, outputs) -> list[str]:
    """The IR op names ``outputs`` lower to, in program order (no passes)."""
    return [n.op for n in lower(graph_spec(inputs, outputs)).graph]


x2 = pt.matrix("x", dtype="float64")
x3 = pt.tensor3("t", dtype="float64")
i32 = pt.iscalar("i")
ia = pt.lvector("ia")
ib = pt.ivector("ib")
X2, X3 = data((5, 6)), data((4, 5, 6))


# -- reads ---------------------------------------------------------------------
mask1 = pt.vector("mask", dtype="bool")
mask2 = pt.matrix("mask", dtype="bool")
# name: (inputs, output as a function of the inputs, input values)
READS = {
    "x[-1]": ([x2], lambda x: x[-1], [X2]),
    "x[::2]": ([x2], lambda x: x[::2], [X2]),
    "x[::-1]": ([x2], lambda x: x[::-1], [X2]),
    "x[1:-1, ::3]": ([x2], lambda x: x[1:-1, ::3], [X2]),
    "x[i] negative": ([x2, i32], lambda x, i: x[i], [X2, np.int32(-2)]),
    "t[1, :, -2]": ([x3], lambda t: t[1, :, -2], [X3]),
    "t[i, ::-2, i]": ([x3, i32], lambda t, i: t[i, ::-2, i], [X3, np.int32(-1)]),
    "x.shape[0]": ([x2], lambda x: x.shape[0], [X2]),
    "x[idx] negative": ([x2, ia], lambda x, a: x[a], [X2, *ids([0, -1, 3, -5, 3])]),
    "x[idx_a, idx_b]": ([x2, ia, ib], lambda x, a, b: x[a, b], [X2, *ids([0, -1, 3]), np.int32([5, -2, 0])]),
    "x[idx_a[:, None], idx_b]": ([x2, ia, ib], lambda x, a, b: x[a[:, None], b],
                                [X2, *ids([0, -1, 3]), np.int32([5, -2])]),
    "x[:, idx]": ([x2, ia], lambda x, a: x[:, a], [X2, *ids([-6, 5, 0, 0])]),
    "t[idx_a, :, idx_b] separated": ([x3, ia, ib], lambda t, a, b: t[a, :, b], [X3, *ids([3, -4]), np.int32([-1, 2])]),
    "t[:, idx_a, idx_b] adjacent": ([x3, ia, ib], lambda t, a, b: t[:, a, b],
                                    [X3, *ids([4, 0, -1]), np.int32([1, 2, 3])]),
    "t[0, :, idx] scalar is advanced": ([x3, ia], lambda t, a: t[0, :, a], [X3, *ids([1, -1, 2])]),
    "t[1:3, idx, ::-1]": ([x3, ia], lambda t, a: t[1:3, a, ::-1], [X3, *ids([1, -1])]),
    "x[idx2d]": ([x2, pt.lmatrix("m")], lambda x, m: x[m], [X2, np.array([[0, 1], [-1, 2], [4, 4]])]),
    "x[mask]": ([x2, mask2], lambda x, m: x[m], [X2, data((5, 6), "bool")]),
    "t[:, mask]": ([x3, mask2], lambda t, m: t[:, m], [X3, data((5, 6), "bool")]),
    "t[mask, idx]": ([x3, mask2, ia], lambda t, m, a: t[m, a], [X3, np.eye(4, 5, dtype=bool), *ids([5, 4, -1, 0])]),
    "v[v > 0]": ([pt.vector("v")], lambda v: v[v > 0], [data(7)]),
    "x[None, idx]": ([x2, ia], lambda x, a: x[None, a], [X2, *ids([1, 1, -3])]),
    "x[idx_a, None, idx_b] newaxis separates": ([x2, ia, ib], lambda x, a, b: x[a, None, b],
                                               [X2, *ids([1, -3]), np.int32([0, 5])]),
    "x[i:, idx]": ([x2, i32, ia], lambda x, i, a: x[i:, a], [X2, np.int32(-3), *ids([1, -3])]),
    "advanced_subtensor1": ([x2, ia], advanced_subtensor1, [X2, *ids([4, -5, 0, 4])]),
}


@pytest.mark.parametrize("name", list(READS))
def test_read(name):
    inputs, output, values = READS[name]
    check_pytensor(inputs, output(*inputs), values)


@pytest.mark.parametrize("make, ops", [
    (lambda: x2[1:-1, ::3], ["slice"]),
    (lambda: x3[1:, -1, ::-1], ["slice", "gather"]),
    (lambda: x2[i32], ["cast", "gather"]),
    (lambda: x2[:, ia], ["gather"]),
    (lambda: x3[:, ia, ia], ["transpose", "unsqueeze", "unsqueeze", "concat", "gather_nd", "transpose"]),
    (lambda: x2[mask2], ["nonzero", "transpose", "gather_nd"]),
    (lambda: x2[:, mask1], ["nonzero", "squeeze", "gather"]),
])
def test_lowered_forms(make, ops):
    """All sliced axes share one slice node; one index array is one gather."""
    out = make()
    inputs = [v for v in (x2, x3, i32, ia, mask1, mask2) if v in set(graph_inputs([out]))]
    assert lowered_ops(inputs, [out]) == ops


@pytest.mark.parametrize("dtype", DTYPES)
def test_read_dtypes(dtype):
    x = pt.tensor3("x", dtype=dtype)
    m = pt.vector("m", dtype="bool")
    X, M = data((4, 5, 3), dtype), np.array([True, False, True, True, False])
    outputs = [x[1:-1, ::-2], x[-1, 2], x[ia, :, ia], x[:, m], x[:, ia][::2]]
    check_pytensor([x, ia, m], outputs, [X, *ids([2, -1, 0]), M])


def test_symbolic_shape_two_sizes():
    """One model, two input sizes: the slices and gathers use run-time shapes."""
    x = pt.matrix("x")
    out = [x[1:-1, ::-2], x[x.shape[0] // 2], x[:, ia]]
    for shape in [(4, 3), (7, 9)]:
        check_pytensor([x, ia], out, [data(shape), *ids([0, -1])])


# -- random slices ---------------------------------------------------------------
part = st.one_of(st.none(), st.integers(-8, 8))
step = st.one_of(st.none(), st.integers(-3, 3).filter(bool))


@st.composite
def basic_index(draw, rank):
    """One entry per axis: a slice (None, negative and out-of-range bounds,
    negative steps) or an in-range scalar, each part constant or symbolic."""
    shape = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    entries = []
    for n in shape:
        if draw(st.integers(0, 4)) == 0:
            entries.append(draw(st.integers(-n, n - 1)))
        else:
            entries.append(slice(draw(part), draw(part), draw(step)))
    symbolic = draw(st.lists(st.booleans(), min_size=3 * rank, max_size=3 * rank))
    return tuple(shape), entries, symbolic


def _symbolize(entries, symbolic):
    """Replace the chosen index parts by int64/int32 scalar inputs."""
    inputs, values, flags = [], [], iter(symbolic)

    def sym(value):
        if value is None or not next(flags):
            return value
        var = (pt.lscalar if len(inputs) % 2 else pt.iscalar)(f"p{len(inputs)}")
        inputs.append(var)
        values.append(np.asarray(value, dtype=var.type.dtype))
        return var

    out = []
    for e in entries:
        out.append(slice(sym(e.start), sym(e.stop), sym(e.step)) if isinstance(e, slice) else sym(e))
    return tuple(out), inputs, values


@given(st.integers(1, 3).flatmap(basic_index))
def test_random_basic_index(case):
    shape, entries, symbolic = case
    x = pt.tensor("x", dtype="float32", shape=(None,) * len(shape))
    index, inputs, values = _symbolize(entries, symbolic)
    check_pytensor([x, *inputs], x[index], [data(shape, "float32"), *values])


@given(st.integers(1, 3).flatmap(basic_index))
def test_random_set_subtensor(case):
    shape, entries, symbolic = case
    x = pt.tensor("x", dtype="int32", shape=(None,) * len(shape))
    X = data(shape, "int32")
    selected = X[tuple(entries)]
    y = pt.tensor("y", dtype="int32", shape=(None,) * selected.ndim)
    index, inputs, values = _symbolize(entries, symbolic)
    check_pytensor([x, y, *inputs], pt.set_subtensor(x[index], y), [X, data(selected.shape, "int32") + 100, *values])


@given(st.integers(-6, 6).filter(bool), st.integers(-9, 9), st.integers(-9, 9))
def test_symbolic_step_sign(step_value, start, stop):
    """A symbolic step of either sign, with open and given bounds."""
    x, s = pt.vector("x"), pt.lscalar("s")
    outs = [x[::s], x[start::s], x[:stop:s], x[start:stop:s]]
    check_pytensor([x, s], outs, [data(7), np.int64(step_value)])


@st.composite
def advanced_index(draw):
    """A shape and an index mixing constant slices, scalars, 1-d masks and
    integer arrays (at least one) whose lengths broadcast (L or 1)."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    length = draw(st.integers(1, 3))
    kinds = draw(st.lists(st.sampled_from(["slice", "scalar", "array", "mask"]), min_size=len(shape),
                          max_size=len(shape)).filter(lambda k: "array" in k or "mask" in k))
    index = []
    for n, kind in zip(shape, kinds):
        if kind == "slice":
            index.append(slice(draw(part), draw(part), draw(step)))
        elif kind == "scalar":
            index.append(draw(st.integers(-n, n - 1)))
        elif kind == "mask":
            index.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))))
        else:
            size = draw(st.sampled_from([length, 1]))
            index.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size))))
    return shape, index


@given(advanced_index())
def test_random_advanced_index(case):
    """Reads and add.at writes through random advanced indices, the arrays
    and masks as symbolic inputs."""
    shape, index = case
    X = data(shape)
    try:
        X[tuple(index)]
    except IndexError:  # masks and arrays whose lengths do not broadcast
        assume(False)
    inputs, values, entries = [], [], []
    for e in index:
        if isinstance(e, np.ndarray):
            var = pt.vector(f"i{len(inputs)}", dtype="bool" if e.dtype == bool else "int64")
            inputs.append(var)
            values.append(e if e.dtype == bool else e.astype("int64"))
            entries.append(var)
        else:
            entries.append(e)
    x = pt.tensor("x", shape=(None,) * len(shape))
    outs = [x[tuple(entries)], pt.inc_subtensor(x[tuple(entries)], 1.5)]
    check_pytensor([x, *inputs], outs, [X, *values])


# -- writes ------------------------------------------------------------------------
def test_set_subtensor_slice():
    y = pt.vector("y")
    check_pytensor([x2, y], pt.set_subtensor(x2[1:3], y), [X2, data(6)])


def test_inc_subtensor_basic_forms():
    y, s = pt.matrix("y"), pt.scalar("s")
    outs = [pt.inc_subtensor(x2[::-2, 1:], y), pt.set_subtensor(x2[-1, ::2], s), pt.inc_subtensor(x2[i32], s)]
    check_pytensor([x2, y, s, i32], outs, [X2, data((3, 5)), np.float64(2.5), np.int32(-5)])


def test_inc_subtensor_repeated_indices_accumulate():
    y = pt.matrix("y")
    check_pytensor([x2, ia, y], pt.inc_subtensor(x2[ia], y), [X2, *ids([1, -4, 1, 0, 1]), data((5, 6))])


def test_advanced_inc_subtensor1_set_and_inc():
    y = pt.vector("y")
    outs = [advanced_inc_subtensor1(x2, y, ia), advanced_set_subtensor1(x2, y, ia[:2])]
    check_pytensor([x2, y, ia], outs, [X2, data(6), *ids([2, -1, 2])])


def test_advanced_inc_subtensor_separated_repeats():
    y = pt.scalar("y")
    outs = [pt.inc_subtensor(x3[ia, :, ib], y), pt.set_subtensor(x3[ia[:2], 1:, ib[:2]], y)]
    check_pytensor([x3, y, ia, ib], outs, [X3, np.float64(1.5), *ids([0, -1, 0]), np.array([2, 3, 2], "int32")])


def test_set_and_inc_through_mask():
    m = pt.matrix("m", dtype="bool")
    y = pt.matrix("y")
    outs = [pt.set_subtensor(x2[m], 0.0), pt.inc_subtensor(x3[:, m], y)]
    check_pytensor([x2, x3, m, y], outs, [X2, X3, data((5, 6), "bool"), data((4, 1))])


def test_inc_ignore_duplicates_unique_positions():
    y = pt.vector("y")
    check_pytensor([x2, ia, y], inc_subtensor(x2[ia, 2], y, ignore_duplicates=True), [X2, *ids([0, 3, -1]), data(3)])


@pytest.mark.parametrize("dtype", DTYPES)
def test_write_dtypes(dtype):
    x = pt.matrix("x", dtype=dtype)
    y = pt.vector("y", dtype=dtype)
    outs = [pt.set_subtensor(x[1:3], y), pt.set_subtensor(x[ia, ::2], y[:3])]
    if dtype != "bool":
        outs.append(pt.inc_subtensor(x[ia], y))
    check_pytensor([x, y, ia], outs, [data((4, 6), dtype), data(6, dtype), *ids([3, -4, 1])])


def test_inc_in_wider_dtype_rounds_once():
    """``x32[a:b] += y64`` adds in float64 and rounds once, as NumPy does."""
    x, y = pt.vector("x", dtype="float32"), pt.vector("y", dtype="float64")
    # adding y rounded to float32 would give other results for the first two
    values = [np.float32([1.0, -0.019877010956406593, 0.0022116026375442743, 7.0]),
              np.array([-0.0012946770911935618, -0.00044378445628180706, 1 / 3])]
    check_pytensor([x, y], [pt.inc_subtensor(x[1:], y), pt.set_subtensor(x[:3], y)], values)


def test_add_at_of_exact_constant_into_narrower_float():
    x = pt.vector("x", dtype="float32")
    check_pytensor([x, ia], pt.inc_subtensor(x[ia], np.float64(0.5)), [data(5, "float32"), *ids([1, 1, -1])])


def test_add_at_of_wider_symbolic_updates_rounds_after_every_add():
    """``np.add.at`` of float64 into float32 rounds to float32 after each add
    (1 + 1e-8 stays 1 every time; one float64 sum would not); a loop."""
    x, y = pt.vector("x", dtype="float32"), pt.vector("y", dtype="float64")
    values = [np.float32([1.0, 0.0, 3.0]), np.array([1e-8, 1e-8, 0.1, 6e-8, 1 / 3]), np.array([0, 0, 1, 0, -1])]
    check_pytensor([x, y, ia], [pt.inc_subtensor(x[ia], y)], values)


def test_rewritten_function_graph():
    """A ``pytensor.function`` after PyTensor's FAST_RUN rewrites holds
    AdvancedSubtensor1 and AdvancedIncSubtensor1; compile it as given."""
    y = pt.matrix("y")
    outs = [x2[ia], pt.inc_subtensor(x2[ia], y), pt.set_subtensor(x2[ia[:2]], y[:2]), x2[1:, ia]]
    fn = pytensor.function([x2, ia, y], outs, mode=Mode(linker="py", optimizer="fast_run"))
    ops = {type(node.op).__name__ for node in fn.maker.fgraph.apply_nodes}
    assert {"AdvancedSubtensor1", "AdvancedIncSubtensor1"} <= ops
    compiled = compile_to_onnx(fn)
    values = [X2, *ids([0, -1, 0]), data((3, 6))]
    got_ort, got_ir = compiled.run(*values), evaluate(compiled.ir, values)
    for i, want in enumerate(fn(*values)):
        assert_same(got_ort[i], want, rtol=1e-12, atol=1e-12, what=f"onnxruntime output {i}")
        assert_same(got_ir[i], want, rtol=1e-12, atol=1e-12, what=f"IR interpreter output {i}")


# -- writes through unit-step slices of static dims: pad, add, where -----------------------
def _bitwise(got, want):
    """Equal values, NaN at the same places, the same sign of every zero (a
    NaN's sign bit is not part of any contract)."""
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)
    assert np.array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers]), "signs of zero differ"


def test_slice_writes_are_pads_not_scatters_and_exact():
    """``x[:, 1:] += y``, ``set``, a gradient's ``inc`` into zeros, a broadcast
    scalar: pads (no scatter_nd), equal to PyTensor bit for bit, -0.0, NaN and
    inf included; a wrong-shaped ``y`` is refused, as PyTensor refuses it."""
    x = pt.tensor("x", shape=(None, 5), dtype="float64")
    z = pt.tensor("z", shape=(6, 5), dtype="float64")
    outs = [pt.inc_subtensor(x[:, 1:], 2 * x[:, :-1]), pt.set_subtensor(x[:, 1:3], x[:, 2:4] + 1),
            pt.inc_subtensor(z[2:-1], z[:3]), pt.grad((x[:, 1:] ** 2).sum() + (x[:, :-1] * 3).sum(), x),
            pt.inc_subtensor(x[:, -3:], 2.0), pt.set_subtensor(z[-2:, 1:4], -z[:2, :3])]
    m = compile_to_onnx([x, z], outputs=outs)
    assert "scatter_nd" not in {n.op for n in m.ir.nodes} and "pad" in {n.op for n in m.ir.nodes}
    X = data((6, 5))
    X[0, 0], X[1, 2], X[3, 0], X[4, 4] = -0.0, np.nan, np.inf, -0.0
    want = pytensor.function([x, z], outs, mode=Mode(linker="py", optimizer=None))(X, X)
    for got, w in zip(m.run(X, X), want):
        _bitwise(got, w)
    for got, w in zip(evaluate(m.ir, [X, X]), want):
        _bitwise(got, w)
    y = pt.tensor("y", shape=(None,), dtype="float64")
    for out, fits in ((pt.set_subtensor(z[1:3], y), 5), (pt.inc_subtensor(z[:, 1:2], y[:, None]), 6)):
        m = compile_to_onnx([z, y], outputs=[out])
        assert "pad" in {n.op for n in m.ir.nodes} and "scatter_nd" not in {n.op for n in m.ir.nodes}
        _bitwise(m.run(X, np.arange(fits, dtype=float))[0], pytensor.function([z, y], out)(X, np.arange(fits, dtype=float)))
        for size in (fits - 2, fits + 2):  # a y that does not fit: PyTensor raises, so does onnxruntime
            with pytest.raises(Exception):
                m.run(X, np.ones(size))


@given(st.integers(-7, 7) | st.none(), st.integers(-7, 7) | st.none(), st.booleans())
def test_random_slice_writes_equal_pytensor(start, stop, inc):
    x = pt.tensor("x", shape=(3, 6), dtype="float64")
    y = pt.tensor("y", shape=(6,), dtype="float64")
    width = len(range(6)[start:stop])
    out = (pt.inc_subtensor if inc else pt.set_subtensor)(x[1:, start:stop], y[:width])
    m = compile_to_onnx([x, y], outputs=[out])
    assert ("scatter_nd" in {n.op for n in m.ir.nodes}) == (width == 0)  # an empty write keeps the scatter
    X, Y = data((3, 6)), data(6) + 10
    want = pytensor.function([x, y], out, mode=Mode(linker="py", optimizer=None))(X, Y)
    _bitwise(m.run(X, Y)[0], want)


def test_a_slice_write_into_an_empty_symbolic_axis_refuses_a_y_that_does_not_fit():
    """The fuzzer's seed 103668: ``x[-3:1] = y`` with x of run-time shape
    (2, 0, 1) and y (0, 4): PyTensor raises; so must the model, though a
    reshape's size check sees nothing in an empty tensor."""
    x = pt.tensor("x", dtype="int8", shape=(2, None, None))
    y = pt.tensor("y", dtype="int8", shape=(0, None))
    out = pt.set_subtensor((x + x)[-3:1], y)
    m = compile_to_onnx([x, y], outputs=[out])
    assert "pad" in {n.op for n in m.ir.nodes}
    good = np.ones((2, 0, 4), np.int8), np.ones((0, 4), np.int8)
    np.testing.assert_array_equal(m.run(*good)[0], pytensor.function([x, y], out)(*good))
    with pytest.raises(Exception):
        pytensor.function([x, y], out)(np.ones((2, 0, 1), np.int8), np.ones((0, 4), np.int8))
    with pytest.raises(Exception):
        m.run(np.ones((2, 0, 1), np.int8), np.ones((0, 4), np.int8))
