"""Regression tests for every example of issue 11's "Why": fuzzer findings,
peer-suite gaps and bad arguments. Each asserts numbers or the exact error."""

import numpy as np
import onnxruntime as ort
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.sparse
from pytensor.tensor.type_other import NoneConst

from compiler import compile_to_onnx
from compiler.lowering.errors import UnsupportedOpsError
from compiler.tools.fuzz import reference_mode
from compiler.lowering.compat import IS_PYTENSOR_3


def plain_session(m):
    """A session as a user opens it: onnxruntime's defaults, no options."""
    return ort.InferenceSession(m.model.SerializeToString(), providers=["CPUExecutionProvider"])


def run_plain(m, *arrays):
    return plain_session(m).run(None, dict(zip(m.input_names, arrays)))


# -- onnxruntime's ExpandElimination: the model must not depend on it ----------
def test_alloc_of_a_computed_length_one_dim_to_zero():
    x = pt.vector("x", shape=(1,))
    m = compile_to_onnx([x], outputs=[pt.alloc(x * 2, 1, 0).sum(axis=1)])
    np.testing.assert_array_equal(run_plain(m, np.ones(1))[0], [0.0])
    np.testing.assert_array_equal(m.run(np.ones(1))[0], [0.0])


def test_inc_subtensor_on_an_empty_static_slice_is_a_no_op():
    z, v = pt.vector("z", shape=(3,)), pt.vector("v", shape=(1,))
    m = compile_to_onnx([z, v], outputs=[pt.inc_subtensor(z[3:], pt.exp(v))])
    np.testing.assert_array_equal(run_plain(m, np.arange(3.0), np.ones(1))[0], [0.0, 1.0, 2.0])


@pytest.mark.parametrize("shape", [(), (1,)])
def test_repeat_zero_times(shape):
    x = pt.tensor("x", dtype="float64", shape=shape)
    m = compile_to_onnx([x], outputs=[pt.repeat(x * 2, 0)])
    out = run_plain(m, np.ones(shape))[0]
    assert out.shape == (0,) and out.dtype == np.float64


def test_dot_on_an_empty_slice():
    a, x = pt.matrix("a", shape=(2, 3)), pt.vector("x", shape=(1,))
    m = compile_to_onnx([a, x], outputs=[pt.dot(a[:, 3:], pt.alloc(x * 2, 0))])
    np.testing.assert_array_equal(run_plain(m, np.ones((2, 3)), np.ones(1))[0], [0.0, 0.0])


def test_zero_size_expand_of_every_dtype():
    for dtype in ["bool", "int8", "int16", "uint8", "int64", "float32"]:
        x = pt.tensor("x", dtype=dtype, shape=(1,))
        m = compile_to_onnx([x], outputs=[pt.alloc(x, 2, 0)])
        out = run_plain(m, np.ones(1, dtype))[0]
        assert out.shape == (2, 0) and out.dtype == np.dtype(dtype)


# -- PyTensor-side decisions ----------------------------------------------------
def test_inc_subtensor_of_a_float_into_int16_is_refused_like_pytensor():
    x = pt.vector("x", dtype="int16")
    out = pt.inc_subtensor(x[0:3], np.float32(0.5))
    with pytest.raises(Exception):  # NumPy's same_kind casting (C/Python), a typing error (Numba)
        pytensor.function([x], out)(np.array([1, -2, 2], np.int16))
    with pytest.raises(UnsupportedOpsError, match="incrementing i16 by f32"):
        compile_to_onnx([x], outputs=[out])


def test_set_subtensor_of_a_float_into_int16_truncates_like_numpy():
    x = pt.vector("x", dtype="int16")
    out = pt.set_subtensor(x[0:2], np.float32(-1.5))
    m = compile_to_onnx([x], outputs=[out])
    np.testing.assert_array_equal(m.run(np.array([1, -2, 2], np.int16))[0], [-1, -1, 2])


def test_max_over_a_static_empty_axis_is_refused():
    x = pt.matrix("x", shape=(2, 0))
    with pytest.raises(ValueError):  # PyTensor's Python and C implementations (3.0's Numba returns -inf)
        pytensor.function([x], pt.max(x, axis=1), mode="FAST_COMPILE")(np.ones((2, 0)))
    for fn in (pt.max, pt.min):
        with pytest.raises(UnsupportedOpsError, match="over an empty axis"):
            compile_to_onnx([x], outputs=[fn(x, axis=1)])


def test_max_over_a_symbolic_empty_axis_gives_the_identity():
    """Documented: the model cannot raise at run time; a float max returns
    -inf (PyTensor 3.0's default Numba mode does the same)."""
    x = pt.matrix("x")
    m = compile_to_onnx([x], outputs=[pt.max(x, axis=1), pt.min(x, axis=1)])
    got_max, got_min = m.run(np.ones((2, 0)))
    np.testing.assert_array_equal(got_max, [-np.inf, -np.inf])
    np.testing.assert_array_equal(got_min, [np.inf, np.inf])


def test_x_over_x_follows_the_graph_it_is_given():
    """Raw graph: 0/0 is NaN as written; compiled function: PyTensor's rewrite made it 1."""
    x = pt.vector("x", dtype="int16")
    raw = compile_to_onnx([x], outputs=[x / x]).run(np.array([0, 2], np.int16))[0]
    f = pytensor.function([x], x / x)
    compiled = compile_to_onnx(f).run(np.array([0, 2], np.int16))[0]
    np.testing.assert_array_equal(np.isnan(raw), [True, False])
    np.testing.assert_array_equal(compiled, f(np.array([0, 2], np.int16)))


def test_set_subtensor_on_a_vector_emits_no_scan():
    x, v = pt.vector("x"), pt.vector("v")
    for graph in ([x, v], pytensor.function([x, v], pt.set_subtensor(x[1:3], v))):
        m = compile_to_onnx(graph, outputs=[pt.set_subtensor(x[1:3], v)]) if isinstance(graph, list) \
            else compile_to_onnx(graph)
        assert "Scan" not in {n.op_type for n in m.model.graph.node}
        np.testing.assert_array_equal(m.run(np.arange(4.0), np.array([7.0, 8.0]))[0], [0, 7, 8, 3])


# -- runtime checks before onnxruntime ------------------------------------------
def test_runtime_broadcasting_is_refused_like_pytensor():
    x, m_ = pt.matrix("x"), pt.vector("m")
    with pytest.raises(ValueError):
        pytensor.function([x, m_], x - m_)(np.ones((2, 1)), np.ones(3))
    model = compile_to_onnx([x, m_], outputs=[x - m_])
    with pytest.raises(ValueError, match="input 'm' axis 0 has size 3, but input 'x' axis 1 has size 1"):
        model.run(np.ones((2, 1)), np.ones(3))
    np.testing.assert_array_equal(model.run(np.ones((2, 3)), np.ones(3))[0], np.zeros((2, 3)))


def test_batched_dot_with_mismatched_batches_is_refused_before_onnxruntime():
    a, b = pt.tensor3("a"), pt.tensor3("b")
    with pytest.warns(FutureWarning):
        out = pt.batched_dot(a, b)
    m = compile_to_onnx([a, b], outputs=[out])
    with pytest.raises(ValueError, match="input 'b' axis 0 has size 3, but input 'a' axis 0 has size 2"):
        m.run(np.ones((2, 3, 4)), np.ones((3, 4, 5)))


@pytest.mark.parametrize("bad, error, match", [
    (np.ones(3, np.float32), TypeError, "input 'x' must be float64, got an array of float32"),
    (np.ones((3, 1)), ValueError, "input 'x' must have rank 1"),
    ("abc", TypeError, "input 'x' must be float64"),
])
def test_run_checks_dtype_and_rank(bad, error, match):
    x = pt.vector("x")
    m = compile_to_onnx([x], outputs=[x * 2])
    with pytest.raises(error, match=match):
        m.run(bad)


def test_run_checks_static_dims_and_converts_lists_exactly():
    x = pt.vector("x", shape=(3,))
    m = compile_to_onnx([x], outputs=[x * 2])
    with pytest.raises(ValueError, match="input 'x' axis 0 must have size 3"):
        m.run(np.ones(4))
    np.testing.assert_array_equal(m.run([1, 2, 3])[0], [2.0, 4.0, 6.0])


def test_run_checks_a_dim_name_shared_through_input_shapes():
    x, y = pt.vector("x"), pt.vector("y")
    m = compile_to_onnx([x, y], outputs=[pt.concatenate([x, y])], input_shapes={"x": ("n",), "y": ("n",)})
    with pytest.raises(ValueError, match="input 'y' axis 0 .*'n'.* has size 2, but input 'x' axis 0 has size 3"):
        m.run(np.ones(3), np.ones(2))


# -- bad arguments and types ----------------------------------------------------
def test_broadcast_assert_of_a_compiled_function():
    """PyTensor's broadcast-check Assert (generic Assert lowering is helper i9's)."""
    x, m_ = pt.matrix("x"), pt.vector("m")
    f = pytensor.function([x, m_], pt.zeros_like(x * m_))
    try:
        model = compile_to_onnx(f)
    except UnsupportedOpsError as e:
        assert "Assert" in str(e)
    else:
        np.testing.assert_array_equal(model.run(np.ones((2, 3)), np.ones(3))[0], np.zeros((2, 3)))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"outputs": []}, ValueError, "outputs is empty"),
    ({"opset": 99}, ValueError, r"opset=99 is not supported: accepted opsets are 18\.\."),
    ({"opset": 17}, ValueError, "opset=17 is not supported"),
    ({"opset": "18"}, TypeError, "opset must be an int"),
    ({"passes": "cse"}, TypeError, r"passes must be None or a list .*did you mean \['cse'\]"),
    ({"passes": [123]}, TypeError, r"passes\[0\] must be a Pass object or a registered pass name"),
    ({"passes": ["nope"]}, ValueError, r"passes\[0\] = 'nope' is not a registered pass; known passes: .*cse"),
    ({"emit_options": {"bogus": 1}}, ValueError, "unknown key 'bogus'; accepted keys: float64_conv, gelu"),
    ({"emit_options": {"silu": "x"}}, ValueError, r"emit_options\['silu'\] = 'x': accepted values"),
    ({"bake_shared": "yes"}, TypeError, "bake_shared must be True or False"),
])
def test_bad_arguments_name_the_argument_and_the_accepted_values(kwargs, error, match):
    x = pt.vector("x")
    kwargs = {"outputs": [x * 2]} | kwargs
    with pytest.raises(error, match=match):
        compile_to_onnx([x], **kwargs)


def test_an_input_given_twice():
    x = pt.vector("x")
    with pytest.raises(ValueError, match=r"inputs\[1\] is the same variable as inputs\[0\]"):
        compile_to_onnx([x, x], outputs=[x * 2])


def test_complex_input_is_an_unsupported_ops_error():
    c = pt.vector("c", dtype="complex128")
    with pytest.raises(UnsupportedOpsError, match="input c .* complex numbers are not supported"):
        compile_to_onnx([c], outputs=[c * 2])


def test_typed_list_none_and_sparse_are_unsupported_ops_errors():
    from pytensor.typed_list import TypedListType
    import pytensor.sparse as ps

    tl = TypedListType(pt.dvector)("tl")
    with pytest.raises(UnsupportedOpsError, match="TypedListType has no ONNX equivalent"):
        compile_to_onnx([tl], outputs=[tl[0]])
    x = pt.vector("x")
    with pytest.raises(UnsupportedOpsError, match="output NoneConst.* NoneTypeT has no ONNX equivalent"):
        compile_to_onnx([x], outputs=[NoneConst])
    sv = pytensor.shared(scipy.sparse.csr_matrix(np.eye(3)), name="sv")
    with pytest.raises(UnsupportedOpsError, match="shared variable .*SparseTensorType has no ONNX"):
        compile_to_onnx([x], outputs=[ps.dense_from_sparse(sv).sum() + x])


def test_split_with_the_wrong_number_of_sizes():
    x = pt.vector("x")
    with pytest.raises((ValueError, TypeError)):
        pt.split(x, [1, 2], 3)  # PyTensor refuses it while building the graph


# -- compiled functions and run-time checks of intermediate values -----------------
@pytest.mark.parametrize("make", [
    lambda x: x[x > 0],                                   # AdvancedSubtensor1(x, Nonzero(mask))
    lambda x: pt.set_subtensor(x[x > 0], 0.0),            # AdvancedIncSubtensor1 over Nonzero
    lambda x: x.reshape((2, 3))[x.reshape((2, 3)) > 0],   # a 2-D mask: Nonzero has two outputs
    lambda x: pt.stack(pt.nonzero(x.reshape((3, 2)))),    # pt.nonzero itself
])
def test_boolean_mask_indexing_from_a_compiled_function(make):
    """PyTensor 3.0's compiled functions turn ``x[mask]`` into ``Nonzero``;
    it lowers to ONNX NonZero (row-major order, one int64 vector per axis)."""
    x = pt.vector("x")
    f = pytensor.function([x], make(x), mode=reference_mode("python"))  # the default rewrites, no JIT
    has_nonzero = any(type(n.op).__name__ == "Nonzero" for n in f.maker.fgraph.apply_nodes)
    assert has_nonzero or not IS_PYTENSOR_3  # 2.38's rewrites keep boolean masks as AdvancedSubtensor
    models = (compile_to_onnx(f), compile_to_onnx([x], outputs=[make(x)]))
    for xv in (np.array([1.0, -2.0, 3.0, np.nan, 0.5, 0.0]), np.array([-1.0, -2.0, 0.0, -0.0, -3.0, 0.0])):
        want = f(xv)
        for m in models:
            got = m.run(xv)[0]
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)


def test_a_violated_specify_shape_on_an_intermediate_value_is_refused_by_run():
    """PyTensor asserts ``specify_shape`` at run time; ONNX has no assertion,
    so the sizes reach the types of the input dims the specified value's
    dims are, which ``run`` checks."""
    x, y = pt.vector("x"), pt.matrix("y")
    out = pt.specify_shape(x * 2, (3,)).sum() + pt.specify_shape(pt.exp(y), (None, 2)).sum()
    with pytest.raises(AssertionError):
        pytensor.function([x, y], out, mode="FAST_COMPILE")(np.ones(4), np.ones((1, 2)))
    m = compile_to_onnx([x, y], outputs=[out])
    with pytest.raises(ValueError, match=r"input 'x' axis 0 must have size 3, got shape \(4,\)"):
        m.run(np.ones(4), np.ones((1, 2)))
    with pytest.raises(ValueError, match=r"input 'y' axis 1 must have size 2, got shape \(1, 5\)"):
        m.run(np.ones(3), np.ones((1, 5)))
    np.testing.assert_allclose(m.run(np.ones(3), np.zeros((4, 2)))[0], 6.0 + 8.0)
