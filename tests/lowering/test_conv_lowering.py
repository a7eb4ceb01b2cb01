"""Differential tests of the lowering of ``Blockwise(Convolve2d)`` to the IR's
``convolve2d`` and of ``Pad`` to ``pad``: PyTensor against onnxruntime and
the IR interpreter, raw graphs and compiled functions (Numba in PyTensor 3,
C in 2.38), in float32 unless stated.

PyTensor's Convolve2d calls ``scipy.signal.convolve`` with ``method="auto"``,
which may pick an FFT: inputs are small integers and the float32 tolerance
is 1e-5, the FFT's rounding.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode, get_default_mode
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.signal import convolve2d
from pytensor.tensor.signal.conv import Convolve2d

from compiler import UnsupportedOpsError, compile_to_onnx
from tests.helpers import assert_same, check_pytensor, pytensor_reference

RNG = np.random.default_rng(17)
TOL = dict(rtol=1e-5, atol=1e-5)
DEFAULT_IS_NUMBA = "numba" in type(get_default_mode().linker).__name__.lower()


def integers(shape, dtype="float32"):
    return RNG.integers(-3, 4, size=shape).astype(dtype)


def lowered_ops(compiled) -> list[str]:
    """The op names of the lowered IR (before any pass), in order."""
    text = compiled.history[0].ir_text
    return [line.split("=", 1)[1].strip().split("(")[0].split("{")[0] for line in text.splitlines() if " = " in line]


@pytest.mark.parametrize("mode", ["valid", "full"])
def test_convolve2d_matrices(mode):
    x, k = pt.fmatrix("x"), pt.fmatrix("k")
    compiled = check_pytensor([x, k], convolve2d(x, k, mode=mode), [integers((6, 5)), integers((3, 2))], **TOL)
    assert "convolve2d" in lowered_ops(compiled)


@pytest.mark.parametrize("mode", ["valid", "full"])
def test_convolve2d_kernel_larger_than_image(mode):
    """scipy swaps the operands in valid mode when the kernel is the larger one."""
    x, k = pt.fmatrix("x"), pt.fmatrix("k")
    check_pytensor([x, k], convolve2d(x, k, mode=mode), [integers((2, 3)), integers((4, 5))], **TOL)


@pytest.mark.parametrize("mode", ["valid", "full"])
def test_convolve2d_batched_and_broadcast(mode):
    """Batch axes broadcast: a stack of images with one kernel, and the
    multi-channel form ``x[:, None]`` against ``W[None]``."""
    x = pt.ftensor3("x")
    k = pt.fmatrix("k")
    images = pt.tensor4("images", dtype="float32")
    W = pt.tensor("W", dtype="float32", shape=(4, 3, 2, 3))
    outs = [convolve2d(x, k, mode=mode), convolve2d(images[:, None], W[None], mode=mode)]
    check_pytensor([x, k, images, W], outs,
                   [integers((2, 5, 6)), integers((2, 2)), integers((2, 3, 6, 5)), integers((4, 3, 2, 3))], **TOL)


def test_multichannel_convolution_end_to_end_without_passes():
    """``convolve2d(x[:, None], W[None], mode="valid").sum(axis=2)``: the
    standalone convolve2d emission (one grouped Conv), no rewrite pass."""
    x = pt.tensor4("x", dtype="float32")
    W = pytensor.shared(integers((4, 3, 3, 3)), name="W")
    y = convolve2d(x[:, None], W[None], mode="valid").sum(axis=2)
    compiled = check_pytensor([x], y, [integers((2, 3, 8, 7))], passes=[], **TOL)
    assert lowered_ops(compiled).count("convolve2d") == 1
    assert [n.op_type for n in compiled.model.graph.node].count("Conv") == 1


def test_multichannel_convolution_default_pipeline():
    x = pt.tensor4("x", dtype="float32")
    W = pytensor.shared(integers((4, 3, 3, 3)), name="W")
    y = convolve2d(x[:, None], W[None], mode="valid").sum(axis=2)
    check_pytensor([x], y, [integers((2, 3, 8, 7))], **TOL)


def test_compiled_function():
    """The default mode's rewritten graph (PyTensor 3's Numba mode wraps the
    Blockwise in a BlockwiseWithCoreShape, an OpFromGraph with an extra
    output-shape input). The graph is rewritten with the default mode's
    optimizer but never run (running it would compile it with Numba): the
    reference is the raw graph's result."""
    x = pt.tensor4("x", dtype="float32")
    W = pt.tensor("W", dtype="float32", shape=(2, 3, 3, 3))
    outs = [convolve2d(x[:, None], W[None], mode=mode).sum(axis=2) for mode in ("valid", "full")]
    fn = pytensor.function([x, W], outs, mode=Mode(linker="py", optimizer=get_default_mode().optimizer))
    ops = [type(n.op).__name__ for n in fn.maker.fgraph.apply_nodes]
    assert ops.count("BlockwiseWithCoreShape" if DEFAULT_IS_NUMBA else "Blockwise") == 2, ops
    values = [integers((2, 3, 6, 6)), integers((2, 3, 3, 3))]
    compiled = compile_to_onnx(fn)
    for got, want in zip(compiled.run(*values), pytensor_reference([x, W], outs, values)):
        assert_same(got, want, what="compiled function", **TOL)


def test_float64_is_exact_by_default_and_float32_on_request():
    x, k = pt.dmatrix("x"), pt.tensor("k", dtype="float64", shape=(2, 3))
    values = [RNG.normal(size=(5, 6)), RNG.normal(size=(2, 3))]
    compiled = check_pytensor([x, k], convolve2d(x, k), values, rtol=1e-12, atol=1e-12)
    assert "Conv" not in {n.op_type for n in compiled.model.graph.node}
    k_any = pt.dmatrix("k_any")  # a kernel of run-time size: its windows are gathered
    compiled = check_pytensor([x, k_any], convolve2d(x, k_any), values, rtol=1e-12, atol=1e-12)
    assert "Conv" not in {n.op_type for n in compiled.model.graph.node}
    with pytest.warns(UserWarning, match="convolve2d"):
        check_pytensor([x, k], convolve2d(x, k), values, rtol=1e-5, atol=1e-5,
                       emit_options={"float64_conv": "float32"})


def test_integer_convolution_wraps_like_scipy():
    x, k = pt.tensor("x", dtype="int8", shape=(None, None)), pt.tensor("k", dtype="int8", shape=(2, 2))
    values = [RNG.integers(0, 100, size=(4, 5)).astype("int8"), RNG.integers(0, 100, size=(2, 2)).astype("int8")]
    check_pytensor([x, k], [convolve2d(x, k, mode="valid"), convolve2d(x, k, mode="full")], values)


def test_mixed_dtypes_upcast():
    """float32 with int16 upcasts to float32; both operands are cast to it."""
    x, k = pt.fmatrix("x"), pt.tensor("k", dtype="int16", shape=(None, None))
    check_pytensor([x, k], convolve2d(x, k), [integers((4, 4)), integers((2, 2), "int16")], **TOL)


def test_non_constant_mode_is_unsupported():
    x, k = pt.fmatrix("x"), pt.fmatrix("k")
    flag = pt.scalar("flag", dtype="bool")
    y = Blockwise(Convolve2d())(x, k, flag)
    with pytest.raises(UnsupportedOpsError, match="full_mode that is not a constant"):
        compile_to_onnx([x, k, flag], outputs=[y])


# -- pad --------------------------------------------------------------------------------
@pytest.mark.parametrize("width, value", [(1, 0.0), ((1, 2), 1.5), (((0, 1), (2, 0)), -2.0), (((3, 0), (0, 0)), np.nan),
                                          (2, (7.0, 7.0))])
def test_constant_pad_lowers_to_one_pad(width, value):
    """Constant widths and one fill value: a single IR pad. The result is
    floatX (float64) whatever the input dtype: PyTensor pads into zeros."""
    m = pt.fmatrix("m")
    y = pt.pad(m, width, mode="constant", constant_values=value)
    compiled = check_pytensor([m], y, [integers((3, 4))])
    assert compiled.model.graph.output[0].type.tensor_type.elem_type == 11  # float64
    assert lowered_ops(compiled).count("pad") == 1


def test_constant_pad_of_ints_and_a_symbolic_value():
    m = pt.imatrix("m")
    v = pt.dscalar("v")
    y = pt.pad(m, ((1, 0), (2, 1)), mode="constant", constant_values=v)
    compiled = check_pytensor([m, v], y, [integers((2, 3), "int32"), np.array(-4.5)])
    assert lowered_ops(compiled).count("pad") == 1


@pytest.mark.parametrize("mode, kwargs", [("constant", {"constant_values": (4.0, 6.0)}), ("edge", {})])
def test_other_pads_inline_the_inner_graph(mode, kwargs):
    """Per-side fill values and the other modes fall back to inlining the
    OpFromGraph: no IR pad, same numbers."""
    m = pt.dmatrix("m")
    y = pt.pad(m, ((1, 2), (2, 1)), mode=mode, **kwargs)
    compiled = check_pytensor([m], y, [RNG.normal(size=(3, 4))])
    assert "pad" not in lowered_ops(compiled)


def test_pad_then_convolve():
    """The 'same' convolution users write: pt.pad, then a valid convolve2d."""
    x = pt.tensor4("x", dtype="float32")
    W = pytensor.shared(integers((2, 3, 3, 3)), name="W")
    padded = pt.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="constant").astype("float32")
    y = convolve2d(padded[:, None], W[None], mode="valid").sum(axis=2)
    check_pytensor([x], y, [integers((2, 3, 5, 5))], passes=[], **TOL)
