"""Input dims the graph fixes (a constant, a baked shared weight, a
``specify_shape``, an equal-dims constraint with another input) are refused
when wrong, by ``CompiledModel.run`` and by ``mode="ONNX"``, where PyTensor
refuses them too; ONNX alone would broadcast a length-1 dim or fail inside
onnxruntime with a raw kernel message."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from tests.helpers import REFERENCE_MODE

B = np.array([1.0, 2.0, 3.0])
W = np.arange(6.0).reshape(3, 2)


def graphs():
    """(name, input x, output) of shared-weight graphs fixing x's last dim to 3."""
    x = pt.matrix("x")
    b, w = pytensor.shared(B, name="b"), pytensor.shared(W, name="W")
    return {"bias": (x, x + b), "matmul": (x, x @ w), "constant": (x, x * pt.constant(B)),
            "dense": (x, pt.tanh(x @ w + b[:2]))}


@pytest.mark.parametrize("name", ["bias", "matmul", "constant", "dense"])
@pytest.mark.parametrize("width", [1, 4])
def test_a_wrong_fixed_dim_is_refused_by_run_as_by_pytensor(name, width):
    x, out = graphs()[name]
    with pytest.raises(ValueError):  # PyTensor: "Runtime broadcasting not allowed" / "shapes not aligned"
        pytensor.function([x], out, mode=REFERENCE_MODE)(np.ones((2, width)))
    m = compile_to_onnx([x], outputs=[out])
    with pytest.raises(ValueError, match=fr"input 'x' axis 1 must have size 3, got shape \(2, {width}\)"):
        m.run(np.ones((2, width)))
    good = np.linspace(-1, 1, 6).reshape(2, 3)
    np.testing.assert_allclose(m.run(good)[0], pytensor.function([x], out, mode=REFERENCE_MODE)(good), rtol=1e-12)
    assert [d if isinstance(d, int) else d.value for d in m.onnx_model.graph.inputs[0].shape] == ["x_dim0", 3]


@pytest.mark.parametrize("name", ["bias", "matmul", "constant", "dense"])
@pytest.mark.parametrize("width", [1, 4])
def test_a_wrong_fixed_dim_is_refused_by_the_onnx_mode(name, width):
    x, out = graphs()[name]
    f = pytensor.function([x], out, mode="ONNX")
    with pytest.raises(ValueError, match=f"input 'x' axis 1 has size {width}, but (the graph fixes that dim to "
                                         "size 3|input '(b|W)' axis 0 has size 3)"):
        f(np.ones((2, width)))
    good = np.linspace(-1, 1, 6).reshape(2, 3)
    np.testing.assert_allclose(f(good), pytensor.function([x], out, mode=REFERENCE_MODE)(good), rtol=1e-12)


def test_a_broadcastable_constant_fixes_nothing():
    # a length-1 constant has static shape (1,): PyTensor broadcasts it, so must we
    x = pt.matrix("x")
    m = compile_to_onnx([x], outputs=[x + pt.constant(np.ones(1))])
    assert m.equal_dims == []
    np.testing.assert_allclose(m.run(np.ones((2, 5)))[0], np.full((2, 5), 2.0))


def test_a_baked_weight_of_length_one_fixes_the_dim_to_one():
    # a shared vector's type is not broadcastable: PyTensor refuses to broadcast its length 1 at run time
    x = pt.vector("x")
    out = x + pytensor.shared(np.ones(1))
    with pytest.raises(ValueError):
        pytensor.function([x], out, mode=REFERENCE_MODE)(np.ones(4))
    m = compile_to_onnx([x], outputs=[out])
    assert m.equal_dims == [[("x", 0), (None, 1)]]
    with pytest.raises(ValueError, match=r"input 'x' axis 0 must have size 1, got shape \(4,\)"):
        m.run(np.ones(4))
    np.testing.assert_allclose(m.run(np.ones(1))[0], [2.0])


def test_a_fixed_dim_reached_through_another_input_is_refused():
    # y + x: y's dim equals x's, which the baked W fixes to 3
    x, y = pt.matrix("x"), pt.matrix("y")
    out = (x @ pytensor.shared(W)).sum() + (x + y).sum()
    m = compile_to_onnx([x, y], outputs=[out])
    with pytest.raises(ValueError, match=r"input 'x' axis 1 must have size 3, got shape \(2, 4\)"):
        m.run(np.ones((2, 4)), np.ones((2, 4)))
    np.testing.assert_allclose(m.run(np.ones((2, 3)), np.ones((2, 3)))[0], (6 + 9) * 2 + 12.0)


@pytest.mark.parametrize("op", ["det", "inv", "solve"])
def test_a_non_square_matrix_is_refused_as_pytensor_refuses_it(op):
    # the core dims a gufunc signature repeats ("(m,m)->()", "(m,m),(m,n)->(m,n)") must be equal
    a, b = pt.matrix("a"), pt.matrix("b")
    out = pt.linalg.solve(a, b) if op == "solve" else getattr(pt.linalg, op)(a)
    wrong, rhs = np.ones((2, 3)), np.ones((2, 1))
    with pytest.raises(ValueError):  # numpy's LinAlgError is a ValueError
        pytensor.function([a, b], out, mode=REFERENCE_MODE, on_unused_input="ignore")(wrong, rhs)
    m = compile_to_onnx([a, b], outputs=[out])
    with pytest.raises(ValueError, match="input 'a' axis 1 has size 3, but input 'a' axis 0 has size 2"):
        m.run(wrong, rhs)
    square = np.array([[2.0, 1.0], [1.0, 3.0]])
    want = pytensor.function([a, b], out, mode=REFERENCE_MODE, on_unused_input="ignore")(square, rhs)
    np.testing.assert_allclose(m.run(square, rhs)[0], want, rtol=1e-12)
    if op == "solve":
        with pytest.raises(ValueError, match="input 'b' axis 0 has size 3"):
            m.run(square, np.ones((3, 1)))


def test_a_reshape_to_a_constant_shape_fixes_the_one_input_dim_its_size_depends_on():
    # concatenate([x, x]) has 2 * x_dim0 elements: reshaping it to (4, 1) fixes x_dim0 to 2, even where
    # later rewrites remove the reshape (PyTensor 3.0's softmax over a length-1 axis is all ones)
    x = pt.vector("x")
    out = pt.special.softmax(pt.concatenate([x, x]).reshape((4, 1)), axis=1)
    with pytest.raises((ValueError, AssertionError)):  # the reshape, or a SpecifyShape rewritten from it
        pytensor.function([x], out, mode=REFERENCE_MODE)(np.ones(3))
    m = compile_to_onnx([x], outputs=[out])
    assert [d if isinstance(d, int) else d.value for d in m.onnx_model.graph.inputs[0].shape] == [2]
    with pytest.raises(ValueError, match=r"input 'x' axis 0 must have size 2, got shape \(3,\)"):
        m.run(np.ones(3))
    np.testing.assert_allclose(m.run(np.ones(2))[0], np.ones((4, 1)))
    # two input dims (x_dim0 * y_dim0 elements): neither is fixed
    y = pt.vector("y")
    m = compile_to_onnx([x, y], outputs=[pt.outer(x, y).reshape((6,))])
    assert m.equal_dims == []


@pytest.mark.parametrize("case", ["alloc", "alloc-symbolic", "inc1", "set1"])
def test_alloc_and_inc_subtensor1_values_do_not_broadcast_at_run_time(case):
    """``alloc(x, 5, 3)`` needs ``x`` of length 3 and ``x[idx] += y`` a ``y`` of
    ``x[idx]``'s shape (PyTensor: "Runtime broadcasting not allowed"; ONNX would
    broadcast a length 1), by ``CompiledModel.run`` and ``mode="ONNX"`` with
    PyTensor's words; the right sizes give PyTensor's values (PyTensor's
    ``tests/link/jax`` ``test_alloc_runtime_broadcast`` and
    ``test_jax_AdvancedIncSubtensor1_runtime_broadcast``)."""
    if case.startswith("alloc"):
        x = pt.vector("x")
        n = pt.iscalar("n")
        inputs, out = ([x], pt.alloc(x, 5, 3)) if case == "alloc" else ([x, n], pt.alloc(x, n, x.shape[0]))
        good, bad = [np.arange(3.0)], [np.zeros(1)]
        if case == "alloc-symbolic":  # the target is x's own length: any length is right
            good, bad = good + [np.int32(4)], None
    else:
        y = pt.matrix("y")
        func = pt.subtensor.advanced_inc_subtensor1 if case == "inc1" else pt.subtensor.advanced_set_subtensor1
        inputs, out = [y], func(pt.zeros((10, 5)), y, np.repeat(np.arange(10), 2))
        good, bad = [np.arange(100.0).reshape(20, 5)], [np.ones((1, 5))]
    want = pytensor.function(inputs, out, mode=REFERENCE_MODE)(*good)
    m = compile_to_onnx(inputs, outputs=[out])
    np.testing.assert_allclose(m.run(*good)[0], want, rtol=0, atol=0)
    f = pytensor.function(inputs, out, mode="ONNX")
    np.testing.assert_allclose(f(*good), want, rtol=0, atol=0)
    if bad is not None:
        with pytest.raises(ValueError):
            pytensor.function(inputs, out, mode=REFERENCE_MODE)(*bad)
        with pytest.raises(ValueError):
            m.run(*bad)
        with pytest.raises(ValueError, match="Runtime broadcasting not allowed"):
            f(*bad)
    if case == "inc1":
        with pytest.raises(ValueError, match="Runtime broadcasting not allowed"):
            f(np.ones((20, 1)))
