"""Acceptance of issue 25's pooling idioms: the two-block CNN of
``tests.nn.idiom_cnn`` (plain ``pt.tensor4``, symbolic batch, H and W,
``floatX=float32``) compiles, from the raw graph and from ``pytensor.function``s
compiled in the C and the default (Numba) mode, to 2 Conv, 2 Relu, 2 MaxPool
and a 4-node head (GlobalAveragePool, Squeeze, Gemm, Softmax), and matches
PyTensor at two image sizes."""

from __future__ import annotations

import numpy as np
import pytensor
import pytest
from pytensor.compile.mode import Mode, get_default_mode

from compiler import compile_to_onnx
from tests.helpers import REFERENCE_MODE, assert_same
from tests.nn import onnx_ops
from tests.nn.idiom_cnn import idiom_cnn

OPS = ["Conv", "Relu", "MaxPool", "Conv", "Relu", "MaxPool", "GlobalAveragePool", "Squeeze", "Gemm", "Softmax"]
C_MODE = Mode(linker="cvm", optimizer="fast_run")


@pytest.mark.parametrize("source", [
    "raw", "c-mode", pytest.param("default-mode", marks=pytest.mark.extended)])  # Numba compiles Convolve2d for minutes
def test_idiom_cnn_compiles_to_the_pools_and_a_4_node_head(source):
    with pytensor.config.change_flags(floatX="float32"):
        x, probs = idiom_cnn()
        if source == "raw":
            compiled = compile_to_onnx([x], outputs=[probs])
        else:
            compiled = compile_to_onnx(pytensor.function([x], probs, mode=C_MODE if source == "c-mode"
                                                         else get_default_mode()))
        assert onnx_ops(compiled) == OPS
        dims = compiled.model.graph.input[0].type.tensor_type.shape.dim
        # batch, height and width stay symbolic; the channels are fixed to 3 by W1
        assert [d.dim_value or d.dim_param[:2] for d in dims] == ["x_", 3, "x_", "x_"]
        reference = pytensor.function([x], probs, mode=REFERENCE_MODE)
        for size in ((16, 16), (24, 20)):
            value = np.random.default_rng(size[1]).normal(size=(2, 3, *size)).astype("float32")
            assert_same(compiled.run(value)[0], reference(value), rtol=1e-5, atol=1e-6, what=f"{source} at {size}")
