"""Assertions (``rules/assertions.py``), compile-time evaluation of constant
nodes (``const_eval.py``) and complete unsupported-op reports."""

import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.raise_op import Assert, CheckAndRaise
import pytensor.scalar as ps
from pytensor.tensor.elemwise import Elemwise

from compiler import compile_to_onnx
from compiler.lowering.errors import DroppedAssertionWarning, UnsupportedOpsError


class _Mystery(ps.UnaryScalarOp):
    """A scalar op no lowering knows (PyTensor can still evaluate it)."""

    def impl(self, x):
        return np.log(np.abs(x) + 1.0) * 3.0


class _Enigma(_Mystery):
    def impl(self, x):
        return x * 7.0


mystery = Elemwise(_Mystery(ps.upgrade_to_float, name="mystery"))
enigma = Elemwise(_Enigma(ps.upgrade_to_float, name="enigma"))


def test_assert_dropped_with_one_warning_listing_each():
    x = pt.vector("x")
    y = Assert("x positive")(x, pt.all(x > 0))
    z = Assert("x small")(y * 2, pt.all(x < 10))
    with pytest.warns(DroppedAssertionWarning) as rec:
        compiled = compile_to_onnx([x], outputs=[z])
    assert len(rec) == 1
    text = str(rec[0].message)
    assert "2 assertion(s) dropped" in text and "x positive" in text and "x small" in text
    assert "test_assertions_and_reports.py" in text  # source lines
    np.testing.assert_array_equal(compiled.run(np.array([-1.0, 20.0]))[0], [-2.0, 40.0])
    assert rec[0].filename == __file__  # the warning points at the user's compile_to_onnx call
    with pytest.warns(DroppedAssertionWarning) as rec:
        pytensor.function([x], z, mode="ONNX")
    assert rec[0].filename == __file__  # and at the pytensor.function call under the ONNX mode


def test_assert_nan_poisons_the_guarded_value():
    x = pt.vector("x")
    y = Assert("x positive")(x, pt.all(x > 0)) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = compile_to_onnx([x], outputs=[y], assertions="nan")
    np.testing.assert_array_equal(compiled.run(np.array([1.0, 2.0]))[0], [2.0, 3.0])
    assert np.isnan(compiled.run(np.array([1.0, -2.0]))[0]).all()


def test_assert_nan_on_integers_is_unsupported_and_mode_validated():
    i = pt.lvector("i")
    y = Assert("len")(i, pt.eq(i.shape[0], 3))
    with pytest.raises(UnsupportedOpsError, match="cannot poison a i64"):
        compile_to_onnx([i], outputs=[y], assertions="nan")
    with pytest.raises(ValueError, match="assertions must be one of"):
        compile_to_onnx([i], outputs=[y], assertions="raise")


def test_check_parameter_value_is_minus_inf_outside_the_support():
    pymc = pytest.importorskip("pymc")
    sigma = pt.scalar("sigma")
    value = pt.vector("value")
    logp = pymc.logp(pymc.Normal.dist(0, sigma), value).sum()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no assertion is dropped
        compiled = compile_to_onnx([sigma, value], outputs=[logp])
    want = pymc.compile([sigma, value], logp)  # PyMC's own switch(cond, logp, -inf)
    v = np.array([0.5, -1.0])
    for s in (1.5, -1.0, 0.0):
        np.testing.assert_allclose(compiled.run(np.float64(s), v)[0], want(s, v), rtol=1e-14)
    assert compiled.run(np.float64(-1.0), v)[0] == -np.inf


def test_constant_nodes_without_a_lowering_are_evaluated_by_pytensor():
    y = np.arange(1.0, 6.0)
    x = pt.vector("x")
    shared = pytensor.shared(np.array([0.5, 1.5]), name="s")
    out = x * mystery(pt.as_tensor(y) + 1).sum() + enigma(shared).sum()
    compiled = compile_to_onnx([x], outputs=[out])
    want = np.array([1.0, 2.0]) * (np.log(y + 2) * 3).sum() + 14.0
    np.testing.assert_allclose(compiled.run(np.array([1.0, 2.0]))[0], want, rtol=1e-15)


def test_constant_evaluation_limit_is_named_in_the_error(monkeypatch):
    from compiler.lowering import const_eval
    monkeypatch.setattr(const_eval.ConstantEvaluator.__init__, "__defaults__", (4,))
    x = pt.vector("x")
    out = x + mystery(pt.as_tensor(np.arange(1.0, 11.0))).sum()
    with pytest.raises(UnsupportedOpsError, match="10 elements, over the compile-time evaluation limit of 4"):
        compile_to_onnx([x], outputs=[out])


def test_report_lists_every_scalar_op_of_a_composite_and_downstream_ops():
    x = pt.vector("x")
    s = ps.float64("s")
    composite = ps.Composite([s], [mystery.scalar_op(s) + enigma.scalar_op(s) * 2])
    with pytest.raises(UnsupportedOpsError) as err:
        compile_to_onnx([x], outputs=[Elemwise(composite)(x)])
    assert "1 node(s)" in str(err.value)
    assert "_Mystery" in str(err.value) and "_Enigma" in str(err.value)
    # an unsupported op, an op that reads it and is unsupported too, and a supported one between
    y = mystery(x).cumsum()
    z = enigma(y * 2)
    with pytest.raises(UnsupportedOpsError) as err:
        compile_to_onnx([x], outputs=[z])
    text = str(err.value)
    assert "2 node(s)" in text and "mystery" in text and "enigma" in text
    assert "reads the result of an unsupported op" in text


def test_checkandraise_subclass_keeps_graph_unmodified():
    x = pt.vector("x")
    y = CheckAndRaise(ValueError, "bad")(x, pt.all(x > 0))
    before = pytensor.graph.basic.equal_computations([y], [y])
    with pytest.warns(DroppedAssertionWarning):
        compile_to_onnx([x], outputs=[y])
    assert before and isinstance(y.owner.op, CheckAndRaise)
