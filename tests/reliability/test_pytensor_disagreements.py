"""Where PyTensor disagrees with itself, the decision docs/status.md records, pinned.

The fuzzer (``compiler.tools.fuzz``) found these by running one graph through
PyTensor's implementations (the default backend: Numba in 3.0, C in 2.38;
each op's Python ``perform``; its C code) and seeing them differ. Each test
states what the model computes, against NumPy/SciPy, from the raw graph and
from a function with the default mode's rewrites (``reference_mode("python")``:
the graph a default-mode function holds, without compiling it with Numba or C,
seconds per graph).
"""

import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.special
from pytensor.compile.mode import Mode

from compiler import compile_to_onnx
from compiler.tools.fuzz import generate, reference_mode, run_case
from compiler.lowering.compat import IS_PYTENSOR_3


def both_models(inputs, out):
    """Models compiled from the raw graph and from a default-mode function."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = pytensor.function(inputs, out, mode=reference_mode("python"))  # the default rewrites, no JIT
    return [compile_to_onnx(inputs, outputs=[out]), compile_to_onnx(fn)]


def python_reference(inputs, out, *arrays):
    """PyTensor's Python implementation of the graph as written."""
    return pytensor.function(inputs, out, mode=Mode(linker="py", optimizer=None))(*arrays)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32"])
def test_small_int_true_division_is_float64_exact(dtype):
    """Fuzz seed 1059. ``a / b`` of ints is float64 (PyTensor's type, its
    C code ``(double)a / b`` and Python ``perform``); 3.0's Numba backend
    divides 8- and 16-bit ints in float32 and widens (255/7 gives
    36.42856979370117). The model divides in float64, exactly."""
    a, b = pt.vector("a", dtype=dtype), pt.vector("b", dtype=dtype)
    av = np.array([255 if dtype.startswith("u") else 127, 1, 100], dtype)
    bv = np.array([7, 3, 7], dtype)
    want = av.astype(np.float64) / bv.astype(np.float64)
    for m in both_models([a, b], a / b):
        got = m.run(av, bv)[0]
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, want)


def test_sigmoid_of_an_unsigned_int_is_the_logistic_function():
    """Fuzz seed 1067. ``sigmoid(ceil(uint8))`` is float32 expit of the
    value; 3.0's Numba backend gives 0.0 for 4 (it negates in uint8: -4 is
    252). The model gives expit(4) rounded to float32."""
    x = pt.scalar("x", dtype="uint8")
    out = pt.switch(pt.sigmoid(pt.ceil(x)) > 0, pt.sigmoid(pt.ceil(x)), pt.ceil(x))
    for m in both_models([x], out):
        got = m.run(np.uint8(4))[0]
        assert got.dtype == np.float32
        assert got == np.float32(scipy.special.expit(4.0))


def test_signed_integer_overflow_wraps_like_numpy():
    """Fuzz seed 1099. ``x + x`` of int64 wraps (NumPy, PyTensor's C and
    Python code); 3.0's Numba backend treats signed overflow as undefined
    (LLVM ``nsw``) and folds ``x + x > 0`` to ``x > 0``. The model wraps:
    MAX + MAX = -2, not > 0, so the switch picks ``x``."""
    x = pt.matrix("x", dtype="int64", shape=(2, None))
    v = pt.inc_subtensor(x[-3:2], x)
    out = pt.switch(v > 0, v, x)
    big = np.iinfo(np.int64).max
    xv = np.array([[5, 3, 4, -7], [-2, -7, big, 6]], np.int64)
    with np.errstate(over="ignore"):
        doubled = xv + xv
    want = np.where(doubled > 0, doubled, xv)
    assert want[1, 2] == big
    for m in both_models([x], out):
        np.testing.assert_array_equal(m.run(xv)[0], want)


@pytest.mark.parametrize("fn", [pt.special.softmax, pt.special.log_softmax])
def test_softmax_over_a_static_length_one_axis_follows_pytensor(fn):
    """PyTensor 3.0's symbolic softmax over an axis of static length 1 is 1
    (log_softmax: -0.0) in every mode, NaN and inf inputs included: its inner
    function's rewrites make ``e / sum(e)`` 1. 2.38's COps compute the formula
    (NaN where the input is NaN or inf). The model follows the line it runs
    with; over an axis of unknown length it computes the formula in both."""
    xv = np.array([[0.0], [np.inf], [2.5], [np.nan], [-np.inf]], np.float32)
    static = pt.tensor("x", dtype="float32", shape=(None, 1))
    want = python_reference([static], fn(static, axis=1), xv)
    if IS_PYTENSOR_3:
        np.testing.assert_array_equal(want, np.full_like(xv, 1.0 if fn is pt.special.softmax else -0.0))
    for m in both_models([static], fn(static, axis=1)):
        got = m.run(xv)[0]
        np.testing.assert_array_equal(got, want)  # NaN positions included
        number = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))
    dynamic = pt.matrix("x", dtype="float32")
    formula = python_reference([dynamic], fn(dynamic, axis=1), xv)
    assert np.isnan(formula[1:]).any()
    got = compile_to_onnx([dynamic], outputs=[fn(dynamic, axis=1)]).run(xv)[0]
    np.testing.assert_array_equal(got, formula)


def test_cumsum_of_uint8_keeps_its_declared_dtype():
    """``cumsum`` of uint8 is declared uint8 (C and Numba return uint8);
    the Python ``perform`` returns NumPy's uint64. The model returns uint8,
    wrapping like the compiled modes."""
    x = pt.vector("x", dtype="uint8")
    xv = np.array([200, 100, 1], np.uint8)
    assert python_reference([x], pt.cumsum(x), xv).dtype == np.uint64
    for m in both_models([x], pt.cumsum(x)):
        got = m.run(xv)[0]
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, np.cumsum(xv, dtype=np.uint8))


def test_min_of_a_bool_is_the_bool():
    """``min`` of a bool scalar: the default rewrites make it
    ``Composite{invert(invert(x))}``, whose Python ``perform`` gives False
    for True (Python's ``~True`` is -2); Numba and C give True, as does the
    model."""
    x = pt.scalar("x", dtype="bool")
    for m in both_models([x], pt.min(x)):
        assert m.run(np.array(True))[0] == np.array(True)


@pytest.mark.slow  # compiles the default-mode function (Numba or C): ~50 s on a loaded machine
def test_the_fuzzer_classifies_a_backend_disagreement_as_known():
    """Seed 102599 (a bool ``min``): with the fast Python reference the
    model disagrees; the default-mode function (rerun by
    ``implementation_difference``) gives the model's result."""
    r = run_case(generate(102599), "python")
    assert r.kind == "known", r.report()
    assert "the default-mode function gives the model's result" in r.detail
