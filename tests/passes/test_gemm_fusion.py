"""``gemm-fusion``: each rule as IR text before and after (the interpreter
agreeing bit for bit on random inputs), the cases where it must not fire,
and PyTensor dense layers (raw and compiled) against onnxruntime with the
ONNX op histogram."""

from __future__ import annotations

import collections

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from passes.dce import DeadCodeElimination
from passes.flatten_recovery import FlattenRecovery
from passes.gemm_fusion import GemmFusion
from passes.pool_recovery import PoolRecovery
from tests.helpers import assert_same, check_pytensor, pytensor_reference
from tests.passes.helpers import check_pass

GF = GemmFusion()


def check(before: str, after: str | None, **kw):
    return check_pass(GF, before, after, **kw)


@pytest.mark.parametrize("add", ["add(%h, %b)", "add(%b, %h)"])
def test_matmul_plus_bias_is_a_gemm_in_either_order(add):
    check(f"""
        graph @main(%a: f32[B,4], %W: f32[4,3], %b: f32[3]) {{
          %h: f32[B,3] = matmul(%a, %W)
          %y: f32[B,3] = {add}
          return %y
        }}""", """
        graph @main(%a: f32[B,4], %W: f32[4,3], %b: f32[3]) {
          %y: f32[B,3] = gemm(%a, %W, %b) {alpha=1.0, beta=1.0, trans_a=false, trans_b=false}
          return %y
        }""")


@pytest.mark.parametrize("c", ["f32[1,3]", "f32[B,1]", "f32[B,3]", "f32[]", "f32[1,1]"])
def test_addends_that_broadcast_to_the_product(c):
    check(f"""
        graph @main(%a: f32[B,4], %W: f32[4,3], %c: {c}) {{
          %h: f32[B,3] = matmul(%a, %W)
          %y: f32[B,3] = add(%h, %c)
          return %y
        }}""", f"""
        graph @main(%a: f32[B,4], %W: f32[4,3], %c: {c}) {{
          %y: f32[B,3] = gemm(%a, %W, %c) {{alpha=1.0, beta=1.0, trans_a=false, trans_b=false}}
          return %y
        }}""", sizes={"B": 3})


def test_transposed_operands_become_flags():
    check("""
        graph @main(%at: f64[4,B], %Wt: f64[3,4], %b: f64[3]) {
          %a: f64[B,4] = transpose(%at) {perm=[1, 0]}
          %W: f64[4,3] = transpose(%Wt) {perm=[1, 0]}
          %h: f64[B,3] = matmul(%a, %W)
          %y: f64[B,3] = add(%h, %b)
          %z: f64[4,3] = neg(%W)
          return %y, %z
        }""", """
        graph @main(%at: f64[4,B], %Wt: f64[3,4], %b: f64[3]) {
          %W: f64[4,3] = transpose(%Wt) {perm=[1, 0]}
          %y: f64[B,3] = gemm(%at, %Wt, %b) {alpha=1.0, beta=1.0, trans_a=true, trans_b=true}
          %z: f64[4,3] = neg(%W)
          return %y, %z
        }""")


def test_gemm_transposes_flip_existing_flags():
    check("""
        graph @main(%a: f32[4,3], %W: f32[5,4], %c: f32[5]) {
          %t: f32[4,5] = transpose(%W) {perm=[1, 0]}
          %y: f32[3,5] = gemm(%a, %t, %c) {alpha=1.0, beta=1.0, trans_a=true, trans_b=false}
          return %y
        }""", """
        graph @main(%a: f32[4,3], %W: f32[5,4], %c: f32[5]) {
          %y: f32[3,5] = gemm(%a, %W, %c) {alpha=1.0, beta=1.0, trans_a=true, trans_b=true}
          return %y
        }""")


@pytest.mark.parametrize("graph, why", [
    ("""graph @main(%a: f32[2,B,4], %W: f32[4,3], %b: f32[3]) {
          %h: f32[2,B,3] = matmul(%a, %W)
          %y: f32[2,B,3] = add(%h, %b)
          return %y
        }""", "a batched (rank 3) product"),
    ("""graph @main(%a: f32[B,4], %W: f32[4,3], %b: f32[3]) {
          %h: f32[B,3] = matmul(%a, %W)
          %y: f32[B,3] = add(%h, %b)
          return %y, %h
        }""", "the product is also an output"),
    ("""graph @main(%a: f32[B,4], %W: f32[4,3], %b: f32[3]) {
          %h: f32[B,3] = matmul(%a, %W)
          %y: f32[B,3] = add(%h, %b)
          %z: f32[B,3] = neg(%h)
          return %y, %z
        }""", "the product has another reader"),
    ("""graph @main(%a: f32[1,4], %W: f32[4,3], %c: f32[5,3]) {
          %h: f32[1,3] = matmul(%a, %W)
          %y: f32[5,3] = add(%h, %c)
          return %y
        }""", "the addend widens the product"),
    ("""graph @main(%a: f32[B,4], %W: f32[4,3], %c: f32[2,B,3]) {
          %h: f32[B,3] = matmul(%a, %W)
          %y: f32[2,B,3] = add(%h, %c)
          return %y
        }""", "the addend has rank 3"),
    ("""graph @main(%a: f32[4], %W: f32[4,3], %b: f32[3]) {
          %h: f32[3] = matmul(%a, %W)
          %y: f32[3] = add(%h, %b)
          return %y
        }""", "a vector-matrix product"),
    ("""graph @main(%a: f32[B,4], %W: f32[4,3], %c: f32[M,3]) {
          %h: f32[B,3] = matmul(%a, %W)
          %y: f32[?,3] = add(%h, %c)
          return %y
        }""", "an addend dim not known to equal the product's"),
])
def test_does_not_fire(graph, why):
    check("\n        " + graph, None, sizes={"B": 1, "M": 1})


# -- PyTensor vs onnxruntime -------------------------------------------------------------
FRONT = ["canonicalize", "constant-folding", "canonicalize", "cse", "dce"]
PIPELINE = FRONT + [GF]


def histogram(compiled) -> dict:
    return dict(collections.Counter(n.op_type for n in compiled.model.graph.node))


def dense_inputs(transposed: bool):
    rng = np.random.default_rng(0)
    a = pt.matrix("a", shape=(None, 6), dtype="float32")
    W = pt.matrix("W", shape=(4, 6) if transposed else (6, 4), dtype="float32")
    b = pt.vector("b", shape=(4,), dtype="float32")
    values = [rng.normal(size=(3, 6)), rng.normal(size=(4, 6) if transposed else (6, 4)), rng.normal(size=4)]
    return [a, W, b], [v.astype(np.float32) for v in values]


@pytest.mark.parametrize("transposed", [False, True], ids=["x@W+b", "b+x@W.T"])
def test_dense_layer_is_one_gemm(transposed):
    (a, W, b), values = dense_inputs(transposed)
    y = b + pt.dot(a, W.T) if transposed else pt.dot(a, W) + b
    m = check_pytensor([a, W, b], [y], values, passes=PIPELINE)
    assert histogram(m) == {"Gemm": 1}, m.ir


def test_compiled_dense_relu_keeps_one_gemm():
    (a, W, b), values = dense_inputs(False)
    y = pt.maximum(pt.dot(a, W) + b, 0)
    want = pytensor_reference([a, W, b], [y], values)[0]
    m = compile_to_onnx(pytensor.function([a, W, b], y), passes=PIPELINE)
    assert_same(m.run(*values)[0], want, rtol=1e-6, atol=1e-6, what="onnxruntime")
    assert histogram(m) == {"Gemm": 1, "Max": 1}, m.ir  # the ReLU is relu-silu's job


def test_batched_matmul_stays():
    x = pt.tensor3("x", shape=(2, None, 6), dtype="float32")
    W = pt.matrix("W", shape=(6, 4), dtype="float32")
    b = pt.vector("b", shape=(4,), dtype="float32")
    rng = np.random.default_rng(1)
    values = [rng.normal(size=(2, 3, 6)).astype(np.float32), rng.normal(size=(6, 4)).astype(np.float32),
              rng.normal(size=4).astype(np.float32)]
    m = check_pytensor([x, W, b], [pt.matmul(x, W) + b], values, passes=PIPELINE)
    assert "Gemm" not in histogram(m), m.ir


# -- the hand-written MNIST CNN after its convolutions --------------------------------
def mnist_head(x, rng):
    """relu, reshape-max pool, cropped reshape-max pool, flatten, dense + relu,
    dense, softmax: the hand-written MNIST CNN after a conv's output ``x``."""
    n = x.shape[0]
    W3, b3, W4, b4 = (pt.constant(rng.normal(size=s).astype(np.float32)) for s in ((288, 16), (16,), (16, 10), (10,)))
    h = pt.maximum(x, 0).reshape((n, 8, 13, 2, 13, 2)).max(axis=(3, 5))
    h = h[:, :, :12, :12].reshape((n, 8, 6, 2, 6, 2)).max(axis=(3, 5))
    h = pt.maximum(pt.dot(h.reshape((n, -1)), W3) + b3, 0)
    return pt.special.softmax(pt.dot(h, W4) + b4, axis=-1)


@pytest.mark.parametrize("batch, compiled_mode", [(4, False), (None, False), (None, True)],
                         ids=["static", "symbolic", "symbolic-compiled"])
def test_mnist_head_with_pool_flatten_and_gemm_recovery(batch, compiled_mode):
    rng = np.random.default_rng(0)
    x = pt.tensor4("x", shape=(batch, 8, 26, 26), dtype="float32")
    y = mnist_head(x, rng)
    xv = rng.normal(size=(4, 8, 26, 26)).astype(np.float32)
    passes = FRONT + [PoolRecovery(), FlattenRecovery(), GF, DeadCodeElimination()]
    if compiled_mode:
        want = pytensor_reference([x], [y], [xv])[0]
        m = compile_to_onnx(pytensor.function([x], y), passes=passes)
        assert_same(m.run(xv)[0], want, rtol=1e-5, atol=1e-6, what="onnxruntime")
    else:
        m = check_pytensor([x], [y], [xv], passes=passes, rtol=1e-5, atol=1e-6)
    # the ReLUs stay Max here: relu-silu is another pass
    assert histogram(m) == {"Max": 2, "MaxPool": 2, "Flatten": 1, "Gemm": 2, "Softmax": 1}, m.ir


# -- rule 3: a batched product's unsqueezed matrix operand ---------------------------------


@pytest.mark.parametrize("weight", ["unsqueeze", "constant"])
def test_batched_product_reads_the_unsqueezed_matrix(weight):
    if weight == "unsqueeze":
        before = """
        graph @main(%h: f32[B,T,3], %W: f32[3,4]) {
          %w: f32[1,3,4] = unsqueeze(%W) {axes=[0]}
          %y: f32[B,T,4] = matmul(%h, %w)
          return %y
        }"""
        after = """
        graph @main(%h: f32[B,T,3], %W: f32[3,4]) {
          %y: f32[B,T,4] = matmul(%h, %W)
          return %y
        }"""
    else:
        before = """
        graph @main(%h: f32[B,T,2]) {
          const %w: f32[1,2,2] = [[[1.0, 2.0], [3.0, 4.0]]]
          %y: f32[B,T,2] = matmul(%h, %w)
          return %y
        }"""
        after = """
        graph @main(%h: f32[B,T,2]) {
          const %weight: f32[2,2] = [[1.0, 2.0], [3.0, 4.0]]
          %y: f32[B,T,2] = matmul(%h, %weight)
          return %y
        }"""
    check_pass([GemmFusion(), DeadCodeElimination()], before, after, sizes={"B": 2, "T": 3})


@pytest.mark.parametrize("graph", [
    # a 2-D left operand: the (1, 3, 4) operand widens the result to rank 3
    """
    graph @main(%h: f32[5,3], %W: f32[3,4]) {
      %w: f32[1,3,4] = unsqueeze(%W) {axes=[0]}
      %y: f32[1,5,4] = matmul(%h, %w)
      return %y
    }""",
    # a run-time (1, K, M) operand that is no unsqueeze
    """
    graph @main(%h: f32[B,5,3], %w: f32[1,3,4]) {
      %y: f32[B,5,4] = matmul(%h, %w)
      return %y
    }""",
], ids=["2-d-left", "input"])
def test_matmul_2d_weight_does_not_fire(graph):
    check_pass([GemmFusion()], graph, None, sizes={"B": 2})


# -- 4. a batch of products with one matrix --------------------------------------------
def test_a_batch_of_matvecs_with_one_constant_matrix_is_one_product():
    check_pass(GemmFusion(), """
        graph @main(%v: f64[B,3]) {
          const %A: f64[1,2,3] = [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]
          %u: f64[B,3,1] = unsqueeze(%v) {axes=[2]}
          %p: f64[B,2,1] = matmul(%A, %u)
          %y: f64[B,2] = squeeze(%p) {axes=[-1]}
          return %y
        }""", """
        graph @main(%v: f64[B,3]) {
          const %A: f64[1,2,3] = [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]
          const %matrix_t: f64[3,2] = [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
          %y: f64[B,2] = matmul(%v, %matrix_t)
          return %y
        }""", sizes={"B": 4}, rtol=1e-15)


def test_a_batch_of_matvecs_with_one_computed_matrix_transposes_it():
    check_pass(GemmFusion(), """
        graph @main(%v: f64[B,3], %W: f64[2,3]) {
          %a: f64[1,2,3] = unsqueeze(%W) {axes=[0]}
          %u: f64[B,3,1] = unsqueeze(%v) {axes=[-1]}
          %p: f64[B,2,1] = matmul(%a, %u)
          %y: f64[B,2] = squeeze(%p) {axes=[2]}
          return %y
        }""", """
        graph @main(%v: f64[B,3], %W: f64[2,3]) {
          %a: f64[1,2,3] = unsqueeze(%W) {axes=[0]}
          %y: f64[2,3] = squeeze(%a) {axes=[0]}
          %y_1: f64[3,2] = transpose(%y) {perm=[1, 0]}
          %y_2: f64[B,2] = matmul(%v, %y_1)
          return %y_2
        }""", sizes={"B": 3}, rtol=1e-15)


def test_matvecs_with_a_matrix_per_point_or_other_axes_stay():
    check_pass(GemmFusion(), """
        graph @main(%v: f64[B,3], %M: f64[B,2,3], %r: f64[B,1,3]) {
          const %A: f64[1,2,3] = [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]
          %u: f64[B,3,1] = unsqueeze(%v) {axes=[2]}
          %p: f64[B,2,1] = matmul(%M, %u)
          %y: f64[B,2] = squeeze(%p) {axes=[2]}
          %u2: f64[B,3,1] = unsqueeze(%v) {axes=[2]}
          %p2: f64[B,2,1] = matmul(%A, %u2)
          %z: f64[B,2,1] = relu(%p2)
          return %y, %z
        }""", None, sizes={"B": 2})


def test_one_matvec_without_a_batch_stays():
    check_pass(GemmFusion(), """
        graph @main(%v: f64[3]) {
          const %A: f64[2,3] = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
          %u: f64[3,1] = unsqueeze(%v) {axes=[1]}
          %p: f64[2,1] = matmul(%A, %u)
          %y: f64[2] = squeeze(%p) {axes=[1]}
          return %y
        }""", None)
