"""The YOLO11n-class benchmark model (``bench.models.yolo11n``), compiler.nn
side only (no torch; the torch twin is checked by ``bench/bench_yolo.py``):
the exported model computes what the lowered IR computes (and, in the slow
job, what PyTensor computes), and every Conv-BN-SiLU block, pool, upsample
and attention product lands on one ONNX operator."""

from collections import Counter

import numpy as np
import pytensor
import pytest
from pytensor.compile.mode import Mode

from bench.models import yolo11n
from compiler import compile_to_onnx
from ir.interpreter import evaluate
from ir.parser import parse_graph

SIZE = 64  # the smallest input with all three detection levels at 2x2 and more


@pytest.fixture(scope="module")
def model():
    images, out, _ = yolo11n.build_pytensor(seed=0, image_size=SIZE)
    return images, out, compile_to_onnx([images], outputs=[out], keep_ir=True, full_weights=True)


def image():
    return np.random.default_rng(1).standard_normal(yolo11n.input_shape(SIZE)).astype(np.float32)


def test_matches_the_lowered_ir(model):
    _, _, compiled = model
    x = image()
    want, = evaluate(parse_graph(compiled.history[0].ir_text), [x])
    got, = compiled.run(x)
    assert got.shape == want.shape == (1, 84, 21 * (SIZE // 32) ** 2)
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * np.abs(want).max())


@pytest.mark.slow
def test_matches_pytensor(model):
    images, out, compiled = model
    x = image()
    # PyTensor's perform methods with no rewrites: its fast_compile rewrites alone take
    # many minutes on this graph under PyTensor 2.38, the perform methods 15 s. The
    # OpFromGraph blocks compile their inner graphs in the default mode, Numba in PyTensor 3
    # (over 600 s with a cold Numba cache): FAST_COMPILE there, ~6 s in all on either line.
    with pytensor.config.change_flags(mode="FAST_COMPILE"):
        want = pytensor.function([images], out, mode=Mode(linker="py", optimizer=None))(x)
    got, = compiled.run(x)
    assert got.shape == want.shape == (1, 84, 21 * (SIZE // 32) ** 2)
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * scale)


def test_one_operator_per_layer(model):
    ops = Counter(n.op_type for n in model[2].model.graph.node)
    # 81 Conv-BN(-SiLU) blocks with the BN folded, 6 head convs, the DFL; conv-slicing cuts the
    # cv1 of the 8 C3k2 blocks and of C2PSA in two (their chunk(2, 1)), so no Split/Slice is left
    # for them (the 7 slices left: attention's q/k/v, Detect's box/class and lt/rb)
    assert ops["Conv"] == 88 + 9
    assert (ops["Slice"], ops["Split"]) == (7, 0)
    assert "BatchNormalization" not in ops
    # fast SiLU and class sigmoid (torch's ops exactly); Mul: the attention scale, the anchors' strides
    assert (ops["Sigmoid"], ops["Mul"]) == (86 + 1, 86 + 2)
    assert "Pad" not in ops  # SPPF's pools read SiLU outputs: MaxPool's own pads are exact
    # the attention's Softmax (innermost axis); the DFL's softmax over axis 1 is the formula
    assert (ops["MaxPool"], ops["Resize"], ops["Softmax"], ops["MatMul"]) == (3, 2, 1, 2)
    assert (ops["ReduceMax"], ops["Exp"], ops["ReduceSum"]) == (1, 1, 1)
