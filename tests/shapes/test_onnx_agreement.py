"""Our inferred shapes agree with ``onnx.shape_inference.infer_shapes(model,
strict_mode=True)`` on every value of a corpus of models covering every
lowering family (elementwise, reductions, linear algebra, shape ops,
indexing, convolution and padding, compiled functions), each emitted with
``value_info`` after the shape pipeline and, for the indexing reads of
``tests/lowering/test_subtensor.py``, also straight from lowering. Each
model's declared dims are also checked against the arrays the IR computes.

The whole suite can be checked the same way with the plugin:
``python -m pytest -p tests.shapes.plugin tests/``.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.signal import convolve2d

from compiler import compile_to_onnx
from compiler.core.shapes import onnx_shape_disagreements
from tests.lowering.test_subtensor import READS
from tests.shapes.helpers import SHAPE_PIPELINE, assert_declared_shapes

RNG = np.random.default_rng(9)


def f32(*shape):
    return RNG.normal(size=shape).astype("float32")


x = pt.tensor("x", dtype="float32", shape=(None, None))
v = pt.tensor("v", dtype="float32", shape=(None,))
t = pt.tensor("t", dtype="float32", shape=(None, 3, None))
img = pt.tensor("img", dtype="float32", shape=(None, 2, None, None))
n = pt.lscalar("n")
X, V, T, IMG = f32(4, 6), f32(5), f32(2, 3, 4), f32(2, 2, 7, 8)

# name: (inputs, outputs, values)
CORPUS = {
    "elemwise broadcast, compare, switch": ([x, v], [pt.switch(x > 0, x * v[:4, None], pt.exp(-x)), x >= 1],
                                            [X, V]),
    "elemwise cast, clip, integer division": ([x], [pt.clip(x, -1, 1).astype("int32") // 2, pt.sqr(x) % 3], [X]),
    "reductions": ([t], [t.sum(axis=1), t.max(axis=(0, 2)), pt.argmax(t, axis=-1), t.mean(), t.cumsum(axis=2)],
                   [T]),
    "softmax, log_softmax": ([x], [pt.special.softmax(x, axis=0), pt.special.log_softmax(x, axis=-1)], [X]),
    "dot, matmul, batched": ([x, t], [x.T @ x, pt.matmul(t.dimshuffle(0, 2, 1), t), pt.outer(x[0], x[:, 1])],
                             [X, T]),
    "dimshuffle, reshape, flatten": ([t], [t.dimshuffle(2, "x", 0, 1), t.reshape((t.shape[0], -1)),
                                           t.flatten(), t.reshape((-1, 3, 2))], [T]),
    "join, split, stack": ([x], [pt.concatenate([x, x[:, :2]], axis=1), *pt.split(x, [1, 3], n_splits=2, axis=0),
                                 pt.stack([x, x], axis=1)], [X]),
    "alloc, arange, eye, zeros_like": ([x, n], [pt.alloc(1.0, x.shape[0], 3), pt.arange(x.shape[1]),
                                                pt.eye(x.shape[0]), pt.zeros_like(x), pt.arange(1, n, 2)],
                                       [X, np.int64(9)]),
    "shape arithmetic into reshape": ([img], [img.reshape((img.shape[0], img.shape[1], -1)),
                                              img.reshape((img.shape[0] * img.shape[1], img.shape[2], -1))], [IMG]),
    "slicing with symbolic sizes": ([x, v], [x[1:, :-2], x[::2, 1::3], v[-3:], v[::-1], x[:, v.shape[0] - 6:]],
                                    [X, V]),
    "set and inc subtensor": ([x, v], [pt.set_subtensor(x[1:3], 0.0), pt.inc_subtensor(x[:, 0], v[:4])], [X, V]),
    "convolve2d, pad, pooling": ([img], [convolve2d(img, pt.ones((3, 3), dtype="float32"), mode="full"),
                                         pt.pad(img, ((0, 0), (0, 0), (1, 2), (2, 1))),
                                         img[:, :, :6, :8].reshape((-1, 2, 3, 2, 4, 2)).max(axis=(3, 5))], [IMG]),
}


def compiled_function():
    """A ``pytensor.function`` compiled in PyTensor's default mode (fused,
    in-place ops and shape features)."""
    a = pt.tensor("a", dtype="float32", shape=(None, 3))
    fn = pytensor.function([a], [pt.tanh(a @ pt.ones((3, 4), dtype="float32")) * 2 + 1, a.reshape((-1,))])
    return fn, [f32(5, 3)]


def check(compiled, values) -> None:
    problems = onnx_shape_disagreements(compiled.model)
    assert problems == [], "\n".join(problems)
    assert_declared_shapes(compiled.ir, values)


@pytest.mark.parametrize("name", list(CORPUS))
def test_corpus_agrees_with_onnx_shape_inference(name):
    inputs, outputs, values = CORPUS[name]
    check(compile_to_onnx(inputs, outputs=outputs, passes=SHAPE_PIPELINE, value_info=True), values)


@pytest.mark.parametrize("name", list(READS))
def test_indexing_reads_agree_lowered_and_optimized(name):
    inputs, output, values = READS[name]
    out = output(*inputs)
    for passes in ([], SHAPE_PIPELINE):
        check(compile_to_onnx(inputs, outputs=[out], passes=passes, value_info=True), values)


def test_compiled_function_agrees():
    fn, values = compiled_function()
    check(compile_to_onnx(fn, passes=SHAPE_PIPELINE, value_info=True, check_dynamic=True), values)


def test_a_wrong_declaration_is_reported():
    compiled = compile_to_onnx([x], outputs=[x.T], passes=SHAPE_PIPELINE, value_info=True)
    model = onnx.ModelProto()
    model.CopyFrom(compiled.model)
    dims = model.graph.output[0].type.tensor_type.shape.dim
    dims[0].dim_param = "x_dim0"  # the transpose's dim 0 is x_dim1
    assert onnx_shape_disagreements(model) == ["output0 axis 0: 'x_dim0' here, 'x_dim1' by ONNX"]
    dims[0].dim_value = 5
    assert onnx_shape_disagreements(model) == ["output0 axis 0: 5 here, 'x_dim1' by ONNX"]


def test_a_size_a_specify_shape_requires_reaches_the_input_type():
    # PyTensor requires x_dim0 == 4 (an AssertionError otherwise; ONNX has no
    # assertion): the input's ONNX type says 4, so ONNX's inference agrees and
    # onnxruntime itself refuses another size.
    y = pt.specify_shape(pt.exp(x), (4, None)) * 2
    compiled = compile_to_onnx([x], outputs=[y], value_info=True)
    assert [d if isinstance(d, int) else d.value for d in compiled.onnx_model.graph.inputs[0].shape] == [4, "x_dim1"]
    assert onnx_shape_disagreements(compiled.model) == []
    with pytest.raises(Exception, match="(?i)invalid dimensions for input: x"):
        compiled.session.run(None, {"x": np.ones((3, 2), np.float32)})
    assert compile_to_onnx([x], outputs=[pt.exp(x)]).onnx_model.graph.inputs[0].shape[0].value == "x_dim0"


def test_a_specify_shape_on_a_computed_dim_is_imposed_by_a_reshape():
    # the specified value's dim is computed (not an input's own), so no input
    # type can carry it: a reshape to the specified sizes makes the value's
    # shape what its type says, and a wrong element count fails in onnxruntime
    n = pt.lscalar("n")
    v = pt.specify_shape(pt.alloc(pt.exp(x[0]), n, x.shape[1]), (2, None))
    compiled = compile_to_onnx([x, n], outputs=[v], value_info=True)
    assert onnx_shape_disagreements(compiled.model) == []
    assert [d if isinstance(d, int) else d.value for d in compiled.onnx_model.graph.outputs[0].shape] == [2, "x_dim1"]
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(compiled.run(data, np.int64(2))[0], np.broadcast_to(np.exp(data[0]), (2, 3)),
                               rtol=2 * np.finfo(np.float32).eps)  # onnxruntime's Exp: within 2 ulp
    with pytest.raises(Exception, match="(?i)reshape"):
        compiled.run(data, np.int64(3))
