"""Assertions (``rules/assertions.py``), compile-time evaluation of constant
nodes (``const_eval.py``) and complete unsupported-op reports."""

import warnings

import numpy as np
import onnx
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode
from pytensor.ifelse import ifelse
from pytensor.raise_op import Assert, CheckAndRaise
import pytensor.scalar as ps
from pytensor.tensor.elemwise import Elemwise

from compiler import compile_to_onnx, onnx_mode
from compiler.core.options import CompileOptions
from compiler.lowering.errors import DroppedAssertionWarning, UnsupportedOpsError
from compiler.mode import REWRITES, ONNXLinker
from tests.helpers import REFERENCE_MODE


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
        pytensor.function([x], z, mode=onnx_mode(assertions="drop"))
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
        compile_to_onnx([i], outputs=[y], assertions="warn")


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


# -- assertions="raise": bool outputs that CompiledModel.run and the mode raise on ---------------------------


def _pytensor_error(inputs, output, values):
    """``(exception class, message)`` PyTensor's reference mode raises on
    ``values`` (None if none). The message is the op's: PyTensor 2.38's
    ``Function`` appends a report of the failing node to the exception's
    argument (``raise_with_op``), which is cut off here."""
    try:
        pytensor.function(inputs, output, mode=REFERENCE_MODE)(*values)
    except Exception as e:  # noqa: BLE001 - what PyTensor raises is the expectation
        return type(e), _op_message(e)
    return None


def _op_message(error: BaseException) -> str:
    """``error``'s message without the report PyTensor 2.38's ``Function``
    appends (``raise_with_op``, in every mode, ours included)."""
    return str(error).split("\nApply node that caused the error:")[0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_assert_raise_passes_the_value_through_and_raises_pytensors_error(dtype):
    x = pt.vector("x", dtype=dtype)
    y = Assert("x positive")(x, pt.all(x > 0)) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing dropped
        compiled = compile_to_onnx([x], outputs=[y], assertions="raise")
    (assertion,) = compiled.assertions
    assert (assertion.name, assertion.exc_type, assertion.message) == ("assert_0", AssertionError, "x positive")
    assert "test_assertions_and_reports.py" in assertion.source
    good = np.array([0.5, 3.25, 1e-30], dtype=dtype)
    (got,) = compiled.run(good)  # the assertion output is stripped
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, good * 2)
    bad = np.array([0.5, -3.25, 1.0], dtype=dtype)  # one element fails
    want = _pytensor_error([x], y, [bad])
    with pytest.raises(AssertionError) as err:
        compiled.run(bad)
    assert (type(err.value), err.value.args) == (want[0], (want[1],)) == (AssertionError, ("x positive",))
    # the ONNX model holds the check as an ordinary bool scalar output for raw onnxruntime users
    outputs = {o.name: o for o in compiled.model.graph.output}
    assert list(outputs) == compiled.output_names + ["assert_0"]
    assert outputs["assert_0"].type.tensor_type.elem_type == onnx.TensorProto.BOOL
    assert not outputs["assert_0"].type.tensor_type.shape.dim  # a scalar
    for value, holds in ((good, True), (bad, False), (np.array([np.nan], dtype=dtype), False)):
        value_out, flag = compiled.session.run(None, {"x": value})
        assert flag.dtype == np.bool_ and flag.shape == () and bool(flag) is holds
        np.testing.assert_array_equal(value_out, value * 2)  # the guarded value is unchanged


def test_custom_check_and_raise_on_an_integer_value_raises_its_own_exception():
    i = pt.lvector("i")
    y = CheckAndRaise(ValueError, "need three")(i, pt.eq(i.shape[0], 3)) + 1
    compiled = compile_to_onnx([i], outputs=[y], assertions="raise")
    got = compiled.run(np.array([4, -5, 2**40], dtype=np.int64))[0]
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, [5, -4, 2**40 + 1])
    with pytest.raises(ValueError, match="^need three$"):
        compiled.run(np.array([1, 2], dtype=np.int64))


def test_the_first_failing_assertion_in_topological_order_is_raised():
    x = pt.vector("x")
    a = Assert("x positive")(x, pt.all(x > 0))
    b = CheckAndRaise(ValueError, "x small")(a + 1, pt.all(x < 10), pt.lt(x.sum(), 12))  # two conditions
    c = CheckAndRaise(RuntimeError, "")(b * 3, pt.any(x > 1))  # an empty message, as PyTensor allows
    compiled = compile_to_onnx([x], outputs=[c, a], assertions="raise")
    assert [(t.name, t.exc_type) for t in compiled.assertions] == [
        ("assert_0", AssertionError), ("assert_1", ValueError), ("assert_2", RuntimeError)]
    cases = {  # inputs -> (failing flags, the error PyTensor raises)
        (2.0, 3.0): (),
        (-2.0, 3.0): ("assert_0",),
        (2.0, 30.0): ("assert_1",),
        (5.0, 8.0): ("assert_1",),  # every element < 10 but the sum, the second condition, is not < 12
        (-2.0, 30.0): ("assert_0", "assert_1"),  # both fail: the first in topological order is raised
        (0.5, 0.25): ("assert_2",),
    }
    for values, (failing, ) in ((k, (v,)) for k, v in cases.items()):
        v = np.array(values)
        flags = compiled.session.run([t.name for t in compiled.assertions], {"x": v})
        assert [t.name for t, f in zip(compiled.assertions, flags) if not f] == list(failing)
        want = _pytensor_error([x], [c, a], [v])
        if want is None:
            got_c, got_a = compiled.run(v)
            np.testing.assert_array_equal(got_c, (v + 1) * 3)
            np.testing.assert_array_equal(got_a, v)
            assert not failing
            continue
        with pytest.raises(want[0]) as err:
            compiled.run(v)
        assert (type(err.value), err.value.args) == (want[0], (want[1],))


def test_constant_conditions_are_decided_at_compile_time_under_raise():
    x = pt.vector("x")
    y = Assert("static")(x, pt.eq(pt.constant(3), 3))
    compiled = compile_to_onnx([x], outputs=[y], assertions="raise")
    assert compiled.assertions == [] and len(compiled.model.graph.output) == 1


def test_the_mode_raises_like_pytensor_by_default():
    x = pt.scalar("x")
    y = Assert("x positive")(x, x > 0) * 2
    f = pytensor.function([x], y, mode="ONNX")
    assert f(1.5) == 3.0
    want = _pytensor_error([x], y, [np.float64(-1.0)])
    with pytest.raises(AssertionError) as err:
        f(-1.0)
    assert (type(err.value), _op_message(err.value)) == want == (AssertionError, "x positive")
    # PyTensor's PyTorch-backend test_checkandraise, through the linker as bench/peer_tests.py builds it
    check_and_raise = CheckAndRaise(AssertionError, "testing")
    y_fn = pytensor.function([x], check_and_raise(x, x > 0, x > 3),
                             mode=Mode(linker=ONNXLinker(compile_options={"random": "inputs"}), optimizer=REWRITES))
    with pytest.raises(AssertionError, match="testing"):
        y_fn(0.0)
    with pytest.raises(AssertionError, match="testing"):
        y_fn(2.0)  # the second condition fails
    assert y_fn(4).item() == 4
    # assertions="drop" keeps the former behaviour; a CompileOptions is used as it is
    with pytest.warns(DroppedAssertionWarning):
        g = pytensor.function([x], y, mode=onnx_mode(assertions="drop"))
    assert g(-1.0) == -2.0
    with pytest.warns(DroppedAssertionWarning):
        pytensor.function([x], y, mode=onnx_mode(options=CompileOptions()))


def _scan(fn, **kwargs):
    """``pytensor.scan``'s outputs on both lines (2.38 returns (outputs, updates))."""
    out = pytensor.scan(fn, **kwargs)
    return out[0] if isinstance(out, tuple) else out


def test_an_assertion_in_a_scan_body_holds_when_it_held_at_every_step():
    x = pt.vector("x")
    k = pt.scalar("k")

    def step(v, acc):
        inner = _scan(lambda w: CheckAndRaise(ValueError, "w below k")(w * 2, pt.lt(w, k)), sequences=[v[None]])
        return Assert("row positive")(acc + v, pt.gt(v, 0)) + inner[0]

    out = _scan(step, sequences=[x], outputs_info=[pt.zeros(())])
    compiled = compile_to_onnx([x, k], outputs=[out], assertions="raise")
    # the body's assertions, the nested scan's first (PyTensor's inner order), after the scan
    assert [(a.name, a.exc_type, a.message) for a in compiled.assertions] == [
        ("assert_0", ValueError, "w below k"), ("assert_1", AssertionError, "row positive")]
    for values, kk in (([1.0, 2.0, 3.0], 5.0), ([1.0, -2.0, 3.0], 5.0), ([1.0, 2.0, 3.0], 2.5),
                       ([-1.0, 2.0, 3.0], 1.5),  # "row positive" fails at step 0, "w below k" at step 1 only
                       ([2.0, -1.0, 3.0], -5.0),  # "w below k" fails at every step, "row positive" at step 1
                       ([], 0.0)):
        v, kk = np.array(values), np.float64(kk)
        want = _pytensor_error([x, k], out, [v, kk])
        if want is None:
            (got,) = compiled.run(v, kk)
            np.testing.assert_array_equal(got, pytensor.function([x, k], out, mode=REFERENCE_MODE)(v, kk))
            continue
        with pytest.raises(want[0]) as err:
            compiled.run(v, kk)
        assert (type(err.value), err.value.args) == (want[0], (want[1],))


def test_an_assertion_only_an_ifelse_branch_needs_is_unsupported():
    x = pt.vector("x")
    out = ifelse(pt.gt(x.sum(), 0), Assert("branch")(x, pt.all(x > 1)), x)
    with pytest.raises(UnsupportedOpsError, match="computed only when an IfElse branch runs"):
        compile_to_onnx([x], outputs=[out], assertions="raise")
    with pytest.warns(DroppedAssertionWarning):  # what the message recommends works
        compile_to_onnx([x], outputs=[out], assertions="drop")
    inner = _scan(lambda v: ifelse(pt.gt(v, 0), Assert("inner branch")(v, pt.gt(v, 1)), v), sequences=[x])
    with pytest.raises(UnsupportedOpsError, match="computed only when an IfElse branch runs"):
        compile_to_onnx([x], outputs=[inner], assertions="raise")


def test_an_assertion_an_ifelse_branch_and_the_rest_both_need_raises():
    x = pt.vector("x")
    checked = Assert("x positive")(x, pt.all(x > 0))
    out = ifelse(pt.gt(x.sum(), 100), checked, x * 0) + checked  # needed whichever branch runs
    compiled = compile_to_onnx([x], outputs=[out], assertions="raise")
    np.testing.assert_array_equal(compiled.run(np.array([1.0, 2.0]))[0], [1.0, 2.0])
    with pytest.raises(AssertionError, match="^x positive$"):
        compiled.run(np.array([1.0, -2.0]))


def test_check_parameter_value_keeps_its_minus_inf_under_raise():
    pymc = pytest.importorskip("pymc")
    sigma = pt.scalar("sigma")
    value = pt.vector("value")
    logp = pymc.logp(pymc.Normal.dist(0, sigma), value).sum()
    compiled = compile_to_onnx([sigma, value], outputs=[logp], assertions="raise")
    assert compiled.assertions == [] and len(compiled.model.graph.output) == 1
    want = pymc.compile([sigma, value], logp)
    v = np.array([0.5, -1.0])
    for s in (1.5, -1.0, 0.0):
        np.testing.assert_allclose(compiled.run(np.float64(s), v)[0], want(s, v), rtol=1e-14)
    assert compiled.run(np.float64(-1.0), v)[0] == -np.inf


def test_an_assertion_on_a_returned_condition_keeps_both_outputs_apart():
    x = pt.vector("x")
    ok = pt.all(x > 0)
    y = Assert("x positive")(x, ok)
    twice = Assert("again")(y, ok)  # the same condition twice
    compiled = compile_to_onnx([x], outputs=[twice, ok], assertions="raise")
    names = [o.name for o in compiled.model.graph.output]
    assert names == compiled.output_names + [a.name for a in compiled.assertions]
    assert len(set(names)) == 4 and [a.message for a in compiled.assertions] == ["x positive", "again"]
    got, flag = compiled.run(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(got, [1.0, 2.0])
    assert flag.dtype == np.bool_ and bool(flag)
    with pytest.raises(AssertionError, match="^x positive$"):
        compiled.run(np.array([1.0, -2.0]))
