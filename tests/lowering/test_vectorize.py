"""``compile_to_onnx(..., vectorize={input: dim})`` (``compiler/lowering/
vectorize.py``): the chosen inputs gain a leading batch dim and the graph
is vectorized by PyTensor's ``vectorize_graph``; row ``b`` of every output
equals the single-point graph evaluated by PyTensor at point ``b``, for
each op family (elementwise, reductions, indexing, ``Dot`` as a batched
``MatMul``, linear algebra, special functions, scans, a compiled function's
in-place ops)."""

from __future__ import annotations

import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor import slinalg

from compiler import compile_to_onnx
from compiler.core.advisor import SlowFormWarning
from tests.helpers import REFERENCE_MODE

RNG = np.random.default_rng(24)
A = RNG.normal(size=(4, 3))
SPD = A.T @ A + 3 * np.eye(3)


def _scan_cumprod(x):
    out = pytensor.scan(lambda xi, acc: acc * xi + 1.0, sequences=[x], outputs_info=[pt.constant(np.float64(1.0))],
                        return_updates=False)
    return [out]


# name -> (single-point input types, outputs builder, rows of batched values maker)
CASES = {
    "elemwise_and_reductions": ([pt.dvector("x")], lambda x: [pt.exp(x).sum() - pt.max(x), pt.log1p(x ** 2)]),
    "indexing": ([pt.dvector("x")], lambda x: [x[1:3] * x[0], x[[2, 0, 0]], pt.set_subtensor(x[1], 5.0)]),
    "dot_gemv": ([pt.dvector("x")], lambda x: [pt.dot(A, x), pt.dot(x, A.T @ A) @ x]),
    "linalg": ([pt.dvector("x")], lambda x: [slinalg.solve(SPD, x), slinalg.cholesky(SPD + pt.outer(x, x))]),
    "special": ([pt.dvector("x")], lambda x: [pt.gammaln(pt.exp(x)), pt.erf(x), pt.psi(pt.exp(x))]),
    "scan": ([pt.dvector("x")], _scan_cumprod),
    "two_inputs_one_batched": ([pt.dvector("x"), pt.dmatrix("m")], lambda x, m: [pt.dot(m, x), m.sum()]),
}


def _rows(case: str, batch: int) -> list[np.ndarray]:
    inputs = CASES[case][0]
    values = [RNG.normal(size=(batch, 3))]
    if len(inputs) > 1:
        values.append(RNG.normal(size=(2, 3)))
    return values


@pytest.mark.parametrize("case", list(CASES))
def test_batched_rows_equal_single_points(case):
    inputs, build = CASES[case]
    outputs = build(*inputs)
    batched = compile_to_onnx(inputs, outputs=outputs, vectorize={"x": "points"})
    assert [d.value if hasattr(d, "value") else d for d in batched.onnx_model.graph.inputs[0].shape][0] == "points"
    reference = pytensor.function(inputs, outputs, mode=REFERENCE_MODE)
    for batch in (1, 5):
        values = _rows(case, batch)
        got = batched.run(*values)
        for b in range(batch):
            want = reference(values[0][b], *values[1:])
            for g, w in zip(got, want):
                row = g if g.shape == np.shape(w) else g[b]  # an output of unbatched inputs only keeps its shape
                assert row.dtype == w.dtype and row.shape == np.shape(w)
                np.testing.assert_allclose(row, w, rtol=1e-13, atol=1e-14)


def test_a_compiled_function_with_in_place_ops_is_vectorized_without_them():
    """A FAST_RUN function holds in-place ops (``Gemv{inplace}``,
    ``IncSubtensor{inplace}``) that ``Blockwise`` refuses; the vectorized
    graph uses their in-place-free forms, and the function is not changed."""
    x = pt.dvector("x")
    y = pt.inc_subtensor(pt.dot(A, x)[1:], 2.0) * 3.0
    f = pytensor.function([x], [y, pt.dot(A.T, y)], mode="FAST_RUN")
    before = pytensor.graph.fg.FunctionGraph.__str__(f.maker.fgraph)
    assert any(node.op.destroy_map for node in f.maker.fgraph.apply_nodes)
    batched = compile_to_onnx(f, vectorize={"x": "points"})
    assert pytensor.graph.fg.FunctionGraph.__str__(f.maker.fgraph) == before
    values = RNG.normal(size=(6, 3))
    got = batched.run(values)
    for b in range(6):
        for g, w in zip(got, f(values[b])):
            np.testing.assert_allclose(g[b], w, rtol=1e-13, atol=1e-14)


def test_the_batch_dim_is_shared_and_checked():
    x, y = pt.dvector("x"), pt.dvector("y")
    m = compile_to_onnx([x, y], outputs=[x * y], vectorize={"x": "b", y: "b"})
    np.testing.assert_allclose(m.run(np.ones((4, 2)), np.full((4, 2), 3.0))[0], np.full((4, 2), 3.0))
    with pytest.raises(ValueError, match="dim 'b'"):
        m.run(np.ones((4, 2)), np.ones((3, 2)))


def test_input_shapes_and_examples_give_the_batched_shape():
    x = pt.dvector("x")
    m = compile_to_onnx([x], outputs=[x.sum()], vectorize={"x": "b"}, input_shapes={"x": ("b", 3)})
    dims = [d if isinstance(d, int) else d.value for d in m.onnx_model.graph.inputs[0].shape]
    assert dims == ["b", 3]
    m = compile_to_onnx([x], outputs=[x.sum()], vectorize={"x": "b"}, example_inputs=[np.ones((8, 3))])
    dims = [d if isinstance(d, int) else d.value for d in m.onnx_model.graph.inputs[0].shape]
    assert dims == ["b", 3]  # the batch dim is named, so the example does not pin it
    np.testing.assert_allclose(m.run(np.ones((2, 3)))[0], [3.0, 3.0])


@pytest.mark.parametrize("vectorize, error, match", [
    ({"z": "b"}, ValueError, r"vectorize names 'z', which is not a graph input; the inputs are 'x'"),
    ({"x": 3}, TypeError, r"vectorize\['x'\] must be a batch dim name \(a str\), got 3"),
    ({"x": "2b"}, ValueError, r"vectorize\['x'\] = '2b' is not a dim name"),
    (["x"], TypeError, "vectorize must be a dict, got list"),
])
def test_bad_vectorize_is_refused(vectorize, error, match):
    x = pt.dvector("x")
    with pytest.raises(error, match=match):
        compile_to_onnx([x], outputs=[x * 2], vectorize=vectorize)


def test_a_shared_variable_cannot_be_batched():
    s = pytensor.shared(np.ones(3), name="s")
    x = pt.dvector("x")
    with pytest.raises(ValueError, match="vectorize names 's', a shared variable"):
        compile_to_onnx([x, s], outputs=[x * s], vectorize={"s": "b"}, bake_shared=False)


def _op_types(model) -> list[str]:
    """The op types of every node of an ONNX ``ModelProto``: its graph, its
    local functions and their subgraphs."""
    def walk(nodes):
        for node in nodes:
            yield node.op_type
            for attr in node.attribute:
                if attr.g.node:
                    yield from walk(attr.g.node)
    return [*walk(model.graph.node), *(t for f in model.functions for t in walk(f.node))]


def _check_split_rows(compiled, inputs, outputs, values):
    reference = pytensor.function(inputs, outputs, mode=REFERENCE_MODE)
    got = compiled.run(*values)
    for b in range(values[0].shape[0]):
        for g, w in zip(got, reference(*(v[b] for v in values))):
            np.testing.assert_allclose(g[b], w, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("axis", [0, -1])
def test_a_split_with_the_same_sizes_for_every_point_is_one_split_not_a_loop(axis):
    """``local_blockwise_split``: sizes computed from the point's shape (which
    ``vectorize_graph`` batches) split the batched input along its core axis
    in one ONNX ``Split``, and the gradient's ``AllocEmpty`` of that shape is
    one batched allocation (PyTensor's Alloc lifts); no loop is left, and
    the rows equal the single points."""
    x = pt.dvector("x")
    head, tail = pt.split(x, [1, x.shape[0] - 1], n_splits=2, axis=axis)
    logp = (head ** 2).sum() + pt.exp(tail).sum()
    outputs = [head.sum() * tail, logp, pytensor.grad(logp, x)]  # the gradient: AllocEmpty of x's shape, a Join
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowFormWarning)
        compiled = compile_to_onnx([x], outputs=outputs, vectorize={"x": "points"})
    ops = _op_types(compiled.model)
    assert "Loop" not in ops and ops.count("Split") >= 1
    _check_split_rows(compiled, [x], outputs, [RNG.normal(size=(6, 4))])


def test_a_split_of_an_unbatched_input_by_batched_sizes_stays_a_loop():
    """Does not fire: only the sizes are batched, so the batch comes from
    them and the ``Blockwise`` keeps its loop (and its values)."""
    x, sizes = pt.dvector("x"), pt.lvector("sizes")
    head, tail = pt.split(x, sizes, n_splits=2)
    outputs = [head.sum() * tail]
    with pytest.warns(SlowFormWarning, match=r"Blockwise\{Split\{2\}"):
        compiled = compile_to_onnx([x, sizes], outputs=outputs, vectorize={"sizes": "points"})
    assert "Loop" in _op_types(compiled.model)
    values = [RNG.normal(size=4), np.tile([1, 3], (3, 1))]
    reference = pytensor.function([x, sizes], outputs, mode=REFERENCE_MODE)
    got = compiled.run(*values)[0]
    for b in range(3):
        np.testing.assert_allclose(got[b], reference(values[0], values[1][b])[0], rtol=1e-13, atol=1e-14)


def _no_loop_rows(inputs, outputs, values, vectorize):
    """Compile with ``vectorize`` (no ``SlowFormWarning``: no loop over the
    batch), check that no ``Loop`` is left and that row ``b`` of every output
    equals the single-point graph at the batched inputs' row ``b``."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowFormWarning)
        compiled = compile_to_onnx(inputs, outputs=outputs, vectorize=vectorize)
    assert "Loop" not in _op_types(compiled.model)
    batched = [v.name in vectorize for v in inputs]
    reference = pytensor.function(inputs, outputs, mode=REFERENCE_MODE)
    got = compiled.run(*values)
    rows = next(v.shape[0] for v, b in zip(values, batched) if b)
    for b in range(rows):
        want = reference(*(v[b] if is_b else v for v, is_b in zip(values, batched)))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g[b], w, rtol=1e-13, atol=1e-14)
    return compiled


def _index_values(batched, shapes):
    """x (3, 4) and int64 indices of ``shapes`` (negative ones included, all
    in range), four rows of each name in ``batched``."""
    values = [RNG.normal(size=(3, 4))] + [RNG.integers(-3 + k, 3, size=s) for k, s in enumerate(shapes)]
    names = "xij"[:len(values)]
    return [np.stack([v + k if n == "x" else np.roll(v, k) for k in range(4)]) if n in batched else v
            for v, n in zip(values, names)]


@pytest.mark.parametrize("batched", [("x", "i", "j"), ("i",), ("x", "j")])
def test_advanced_indexing_by_batched_index_arrays_is_one_gather_not_a_loop(batched):
    """``local_blockwise_advanced_subtensor``: ``x[i, j]`` with batched
    index arrays of different core ranks (broadcast right-aligned), negative
    indices and an unbatched operand, as a categorical's ``log_p[arange, y]``
    becomes once vectorized."""
    x, i, j = pt.dmatrix("x"), pt.lvector("i"), pt.lmatrix("j")
    picked = x[i, j]  # i: (5,), j: (2, 5) -> (2, 5)
    outputs = [picked, (picked ** 2).sum()]
    _no_loop_rows([x, i, j], outputs, _index_values(batched, [(5,), (2, 5)]), {n: "points" for n in batched})


@pytest.mark.parametrize("batched", [("x", "i", "j"), ("i",)])
def test_the_gradient_of_batched_advanced_indexing_has_no_loop(batched):
    """With index arrays of one rank the gradient's ``AdvancedIncSubtensor``
    is batched too (PyTensor's ``local_blockwise_inc_subtensor``)."""
    x, i, j = pt.dmatrix("x"), pt.lvector("i"), pt.lvector("j")
    logp = (x[i, j] ** 3).sum()
    outputs = [logp, pytensor.grad(logp, x)]
    _no_loop_rows([x, i, j], outputs, _index_values(batched, [(5,), (5,)]), {n: "points" for n in batched})


def test_a_batched_increment_by_index_arrays_of_two_ranks_keeps_its_loop():
    """Does not fire (``local_blockwise_inc_subtensor_same_rank``): PyTensor
    pads the lower-rank index on the wrong side there, so the loop stays,
    and its rows are right."""
    x, i, j = pt.dmatrix("x"), pt.lvector("i"), pt.lmatrix("j")
    outputs = [pt.inc_subtensor(x[i, j], 1.0)]
    with pytest.warns(SlowFormWarning, match="AdvancedIncSubtensor"):
        compiled = compile_to_onnx([x, i, j], outputs=outputs, vectorize={"j": "points"})
    values = _index_values(("j",), [(5,), (2, 5)])
    got = compiled.run(*values)[0]
    reference = pytensor.function([x, i, j], outputs, mode=REFERENCE_MODE)
    for b in range(4):
        np.testing.assert_allclose(got[b], reference(values[0], values[1], values[2][b])[0], rtol=1e-13)


def test_advanced_indexing_with_a_boolean_index_keeps_its_loop():
    """Does not fire: a boolean core index (its ``nonzero`` could differ per
    point) keeps the ``Blockwise`` loop, and its rows are right."""
    x, mask = pt.dvector("x"), pt.bvector("mask")
    outputs = [x[mask.astype(bool)].sum()]
    with pytest.warns(SlowFormWarning):
        compiled = compile_to_onnx([x, mask], outputs=outputs, vectorize={"mask": "points"})
    assert "Loop" in _op_types(compiled.model)
    values = [RNG.normal(size=5), np.array([[1, 0, 1, 0, 0], [0, 1, 0, 1, 0]], dtype=np.int8)]  # one count per row
    got = compiled.run(*values)[0]
    reference = pytensor.function([x, mask], outputs, mode=REFERENCE_MODE)
    for b in range(2):
        np.testing.assert_allclose(got[b], reference(values[0], values[1][b])[0], rtol=1e-13)


@pytest.mark.parametrize("axis", [0, -1])
def test_a_join_of_batched_and_unbatched_parts_is_one_concat_not_a_loop(axis):
    """``local_blockwise_join``: a concatenation of a batched part, an
    unbatched constant (broadcast over the batch) and a slice whose batch
    dim is known only at run time, along a core axis; with the gradient
    (the ``Join`` of a random walk's innovations)."""
    x = pt.dvector("x")
    walk = pt.concatenate([x[:1], pt.constant(np.array([0.5, -1.0])), pt.cumsum(x[1:])], axis=axis)
    logp = -(walk ** 2).sum()
    outputs = [walk, logp, pytensor.grad(logp, x)]
    _no_loop_rows([x], outputs, [RNG.normal(size=(5, 4))], {"x": "points"})


SHAPE_DERIVED = {
    "arange_of_a_diag_shape": lambda x: [pt.arange(pt.diag(x).shape[0]) * x],
    "diag_indexed_by_aranges": lambda x: [pt.diag(pt.exp(x))[pt.arange(x.shape[0]), pt.arange(x.shape[0])]],
    "set_subtensor_to_a_shape": lambda x: [pt.set_subtensor(pt.zeros((x.shape[0], x.shape[0]))[:, : pt.diag(x).shape[0] - 1],
                                                            1.0) * x],
    "diag_of_rows": lambda x: [(pt.diag(pt.exp(x)) @ pt.outer(x, x)).sum(), pt.diag(pt.outer(x, x).sum(0))],
}


@pytest.mark.parametrize("case", list(SHAPE_DERIVED))
def test_shape_derived_sizes_and_diagonals_are_batched_not_looped(case):
    """``AllocDiag`` (``local_blockwise_alloc_diag``) and sizes computed
    from a batched value's shape, which ``vectorize_graph`` broadcasts over
    the batch (the Alloc lifts, then ``local_blockwise_alloc_inputs``), as
    PyMC's LKJ graphs hold them: no loop over the batch, rows equal."""
    x = pt.dvector("x")
    _no_loop_rows([x], SHAPE_DERIVED[case](x), [RNG.normal(size=(3, 4))], {"x": "points"})


def test_an_arange_of_a_batched_length_keeps_its_loop():
    """Does not fire: a stop computed from the point's values (equal here,
    as ``Blockwise`` needs) is batched, so its ``ARange`` stays a loop."""
    x = pt.dvector("x")
    outputs = [pt.arange(pt.second(x, 1.0).sum().astype("int64")) * x]
    with pytest.warns(SlowFormWarning, match="ARange"):
        compiled = compile_to_onnx([x], outputs=outputs, vectorize={"x": "points"})
    values = RNG.normal(size=(3, 4))
    got = compiled.run(values)[0]
    reference = pytensor.function([x], outputs, mode=REFERENCE_MODE)
    for b in range(3):
        np.testing.assert_allclose(got[b], reference(values[b])[0], rtol=1e-13)


def test_blas_ops_are_batched_matmuls():
    """``Gemv``, ``Gemm``, ``Ger``, ``Dot22`` and ``Dot22Scalar`` (what
    PyTensor's BLAS rewrites leave in a compiled function), with batched
    scalars and a ``beta`` of 0 at one point (the accumulator not read:
    a NaN in it stays out of the result there): batched ``MatMul``s (``BLOCKWISE_RULES``), no loop over
    the batch, rows equal."""
    from pytensor.tensor.blas import _dot22, _dot22scalar, gemm_no_inplace, gemv_no_inplace, ger

    x, m, s = pt.dvector("x"), pt.dmatrix("m"), pt.dscalar("s")
    outputs = [gemv_no_inplace(x[::-1], s, m, x, s - 1.0), gemm_no_inplace(m.T, 2.0 * s, m, m, s - 1.0),
               ger(m, s, x, x[::-1]), _dot22(m, m.T), _dot22scalar(m, m, s)]
    batch = {"x": "points", "m": "points", "s": "points"}
    xs, ms, ss = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4, 4)), np.array([0.5, 1.0, -2.0])
    xs[1, 0] = ms[1, 0, 0] = np.nan  # beta = 0 at point 1: y and C are not read
    _no_loop_rows([x, m, s], outputs, [xs, ms, ss], batch)  # NaN positions compared too


@pytest.mark.parametrize("assertions, fill", [("nan", np.nan), ("drop", None), ("raise", None)])
def test_a_check_keeps_one_condition_per_point(assertions, fill):
    """A ``CheckAndRaise`` whose condition depends on the batched input: under
    ``"nan"`` only the failing points are NaN (``vectorize_graph`` alone
    checks ``all`` over the batch); under ``"raise"`` one failing point
    raises for the call, as PyTensor's vectorized function does."""
    from pytensor.raise_op import CheckAndRaise

    x = pt.dvector("x")
    y = CheckAndRaise(ValueError, "x[0] must be positive")(x * 2.0, pt.gt(x[0], 0))
    m = compile_to_onnx([x], outputs=[y.sum()], vectorize={"x": "points"}, assertions=assertions)
    X = np.array([[1.0, 2.0], [-1.0, 2.0], [0.5, 1.0]])
    if assertions == "raise":
        with pytest.raises(ValueError, match="x\\[0\\] must be positive"):
            m.run(X)
        np.testing.assert_allclose(m.run(X[[0, 2]])[0], [6.0, 3.0], rtol=1e-15)
        return
    got = m.run(X)[0]
    want = np.array([6.0, 2.0, 3.0]) if fill is None else np.array([6.0, fill, 3.0])
    np.testing.assert_array_equal(got, want)
