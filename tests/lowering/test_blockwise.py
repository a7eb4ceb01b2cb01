"""``Blockwise`` of core ops without a batched rule (``rules/blockwise_loop.py``):
a ``loop`` over the broadcast batch, checked against PyTensor (onnxruntime and
the IR interpreter), with static batches (unrolled by ``scan-unroll``) and
symbolic ones (an ONNX Loop), batch dims that broadcast, and several outputs."""

import numpy as np
import pytensor.tensor as pt
import pytest
from pytensor.graph.replace import vectorize_graph
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.tensor.basic import ARange, Split
from pytensor.tensor.blockwise import Blockwise

from compiler import UnsupportedOpsError, compile_to_onnx
from tests.helpers import check_pytensor


def _arange(*args):
    return Blockwise(ARange("int64"), signature="(),(),()->(o)")(*args)


@pytest.mark.parametrize("static", [True, False])
def test_blockwise_arange_broadcasts_batch_dims(static):
    """start (2,), stop (3, 2), step (1,): every row has 4 elements."""
    shape = (lambda s: s) if static else (lambda s: (None,) * len(s))
    start = pt.tensor("start", dtype="int64", shape=shape((2,)))
    stop = pt.tensor("stop", dtype="int64", shape=shape((3, 2)))
    step = pt.tensor("step", dtype="int64", shape=(1,))  # broadcastable, as PyTensor requires
    values = [np.array([0, -5]), np.array([[8, 3], [8, 3], [8, 3]]), np.array([2])]
    compiled = check_pytensor([start, stop, step], [_arange(start, stop, step)], values)
    assert compiled.ir.contains_op("loop") != static  # a static batch of 6 is unrolled


def test_blockwise_arange_float_steps():
    start, stop = pt.dvector("start"), pt.dvector("stop")
    out = Blockwise(ARange("float64"), signature="(),(),()->(o)")(start, stop, pt.constant(np.array([0.1])))
    check_pytensor([start, stop], [out], [np.array([0.0, 0.3, -1.7]), np.array([0.95, 1.25, -0.75])])


@pytest.mark.parametrize("offset", [0, 1, -2])
def test_blockwise_alloc_diag(offset):
    v, x = pt.dvector("v"), pt.dtensor3("x")
    out = vectorize_graph(pt.diag(v, k=offset), {v: x})
    assert isinstance(out.owner.op, Blockwise)
    check_pytensor([x], [out], [np.arange(24.0).reshape(2, 4, 3) - 7])


def test_blockwise_several_outputs():
    """A core op with two outputs (Split) over a symbolic batch."""
    x = pt.dmatrix("x")
    split = Blockwise(Split(2), signature="(n),(),(s)->(a),(b)")
    a, b = split(x, pt.constant(np.int64(0)), pt.constant(np.array([2, 3])))
    check_pytensor([x], [a, b], [np.arange(15.0).reshape(3, 5)])


class _NoRule(Op):
    """A core op no lowering rule knows (``(m) -> (m)``, the identity)."""
    __props__ = ()

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0].copy()


def test_blockwise_of_an_op_without_lowering_is_reported():
    a = pt.dmatrix("a")
    with pytest.raises(UnsupportedOpsError, match="Blockwise of .*_NoRule"):
        compile_to_onnx([a], outputs=[Blockwise(_NoRule(), signature="(m)->(m)")(a)])


