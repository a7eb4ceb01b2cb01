"""The PyTensor mode: ``pytensor.function(..., mode="ONNX")`` compiles with
this compiler and runs in onnxruntime, with PyTensor's function semantics,
compared against PyTensor's Python reference mode."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import ONNX_MODE, UnsupportedOpsError, compiled_model
from compiler.tools.demo import MODELS, inference_graph
from tests.helpers import REFERENCE_MODE

RNG = np.random.default_rng(0)


def both(inputs, outputs, **kwargs):
    """The function compiled in the ONNX mode and in the reference mode."""
    return (pytensor.function(inputs, outputs, mode="ONNX", **kwargs),
            pytensor.function(inputs, outputs, mode=REFERENCE_MODE, **kwargs))


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_demo_models_run_in_the_onnx_mode(model):
    spec = MODELS[model]
    ins, outs = inference_graph(spec.init(0), model)
    f, ref = both(ins, outs)
    x = RNG.random((7, *spec.input_shape), dtype=np.float32)
    np.testing.assert_allclose(f(x)[0], ref(x)[0], rtol=0, atol=spec.tolerance)
    ops = {}
    for node in compiled_model(f).model.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    assert ops == spec.expected_ops


def test_an_sgd_step_through_updates_matches_the_reference_after_ten_steps():
    spec = MODELS["mlp"]
    results = []
    for mode in ("ONNX", REFERENCE_MODE):
        params = spec.init(0)
        x = spec.input()
        y = pt.vector("y", dtype="int64")
        probs = pt.special.softmax(spec.logits(x, params), axis=-1)
        loss = -pt.mean(pt.log(probs[pt.arange(y.shape[0]), y]))
        shared = list(params.values())
        grads = pytensor.grad(loss, shared)
        step = pytensor.function([x, y], loss, updates=[(p, p - np.float32(0.5) * g) for p, g in zip(shared, grads)],
                                 mode=mode)
        rng = np.random.default_rng(1)
        losses = [step(rng.random((16, 64), dtype=np.float32), rng.integers(0, 10, 16)) for _ in range(10)]
        results.append((losses, [p.get_value() for p in shared]))
    (losses, weights), (ref_losses, ref_weights) = results
    assert losses[-1] < losses[0]  # it trains
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    for w, r in zip(weights, ref_weights):
        np.testing.assert_allclose(w, r, rtol=1e-5, atol=1e-6)


def test_a_scan_runs_in_the_onnx_mode():
    x = pt.matrix("x")
    W = pytensor.shared(RNG.normal(size=(3, 3)) * 0.5, name="W")
    h0 = pt.vector("h0")
    hs = pytensor.scan(lambda xt, h: pt.tanh(xt + h @ W), sequences=[x], outputs_info=[h0],
                       return_updates=False) if _scan_takes_return_updates() else \
        pytensor.scan(lambda xt, h: pt.tanh(xt + h @ W), sequences=[x], outputs_info=[h0])[0]
    f, ref = both([x, h0], [hs, hs[-1].sum()])
    xv, hv = RNG.normal(size=(6, 3)), RNG.normal(size=3)
    for a, b in zip(f(xv, hv), ref(xv, hv)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    # a symbolic number of steps
    for a, b in zip(f(xv[:2], hv), ref(xv[:2], hv)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def _scan_takes_return_updates() -> bool:
    import inspect

    return "return_updates" in inspect.signature(pytensor.scan).parameters


def test_an_unsupported_op_raises_the_listed_error():
    x = pt.vector("x")
    with pytest.raises(UnsupportedOpsError, match=r"(?s)cannot be exported.*test_mode.py"):
        pytensor.function([x], pt.angle(x + 1) * 2, mode="ONNX")


def test_function_semantics_givens_multiple_outputs_outputs_that_are_inputs_and_borrow():
    x, y = pt.vectors("x", "y")
    c = pytensor.shared(np.array([1.0, 2.0, 3.0]), name="c")
    z = pt.vector("z")
    f, ref = both([x, z], [x, (x * y + c).sum(), pt.exp(z)], givens={y: z * 2})
    xv, zv = RNG.normal(size=3), RNG.normal(size=3)
    for a, b in zip(f(xv, zv), ref(xv, zv)):
        np.testing.assert_allclose(a, b, rtol=1e-15)
    c.set_value(np.array([5.0, 6.0, 7.0]))  # shared values are read at each call
    np.testing.assert_allclose(f(xv, zv)[1], ref(xv, zv)[1], rtol=1e-15)
    # borrowed outputs are fresh arrays: a later call does not overwrite them
    g = pytensor.function([x], pytensor.Out(pt.exp(x), borrow=True), mode="ONNX")
    first = g(np.zeros(3))
    g(np.ones(3))
    np.testing.assert_array_equal(first, np.ones(3))
    # an output that is an input, and the same output twice
    h = pytensor.function([x], [x, x * 2, x * 2], mode="ONNX")
    a, b, b2 = h(xv)
    np.testing.assert_array_equal(a, xv)
    np.testing.assert_array_equal(b, b2)
    assert a is not xv


def test_scalar_inputs_keep_their_rank():
    x = pt.matrix("x")
    i = pt.scalar("i", dtype="int64")
    f, ref = both([x, i], [x[i], x * pt.cast(i, "float64")])
    xv = RNG.normal(size=(4, 3))
    for a, b in zip(f(xv, 2), ref(xv, 2)):
        np.testing.assert_array_equal(a, b)


def test_accept_inplace_graphs_and_updates_without_outputs():
    x = pt.vector("x")
    acc = pytensor.shared(np.zeros(3), name="acc")
    f = pytensor.function([x], [], updates={acc: acc + pt.exp(x)}, mode="ONNX")
    for _ in range(3):
        f(np.zeros(3))
    np.testing.assert_array_equal(acc.get_value(), np.full(3, 3.0))
    from pytensor.scalar.basic import exp as scalar_exp
    from pytensor.tensor.elemwise import Elemwise

    exp_inplace = Elemwise(scalar_exp, inplace_pattern={0: 0})
    y = exp_inplace(x * 1)  # an inplace op in the user's graph needs accept_inplace
    g = pytensor.function([x], y, mode="ONNX", accept_inplace=True)
    xv = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(g(xv), np.exp(xv), rtol=1e-15)  # onnxruntime exp: 1 ulp
    np.testing.assert_array_equal(xv, [1.0, 2.0, 3.0])


def test_the_mode_object_options_and_the_config_default():
    x = pt.vector("x")
    f = pytensor.function([x], pt.maximum(x, 0), mode=ONNX_MODE)
    np.testing.assert_array_equal(f(np.array([-1.0, 2.0])), [0.0, 2.0])
    assert [n.op_type for n in compiled_model(f).model.graph.node] == ["Relu"]
    assert "ONNX ops:" in compiled_model(f).report()
    from compiler.mode import onnx_mode

    g = pytensor.function([x], pt.maximum(x, 0), mode=onnx_mode(passes=[]))
    ops = [n.op_type for n in compiled_model(g).model.graph.node]
    assert "Max" in ops and "Relu" not in ops  # no passes: no relu recovery
    np.testing.assert_array_equal(g(np.array([-1.0, 2.0])), [0.0, 2.0])
    old = pytensor.config.mode
    pytensor.config.mode = ONNX_MODE
    try:
        h = pytensor.function([x], pt.exp(x))
        assert compiled_model(h).model.graph.node[0].op_type == "Exp"
    finally:
        pytensor.config.mode = old
    with pytest.raises(TypeError):
        compiled_model(pytensor.function([x], x * 2, mode=REFERENCE_MODE))


def test_random_streams_and_generator_outputs_under_random_onnx():
    """``onnx_mode(random="onnx")`` compiles functions whose generators are
    outputs: a ``RandomStream``'s default updates and an explicit next
    generator. The model draws anew at every call (onnxruntime's session
    state), the generator outputs are the input generators as they came
    (the model holds no generator state), and the draws follow the
    distribution (KS against N(0, 1) and U(2, 3) at p > 1e-3)."""
    from scipy import stats

    from compiler.mode import onnx_mode

    mode = onnx_mode(random="onnx")
    srng = pt.random.RandomStream(1)
    x = srng.normal(size=2000)
    f = pytensor.function([], x, mode=mode)
    first, second = f(), f()
    assert first.shape == (2000,) and first.dtype == np.float64 and not np.array_equal(first, second)
    assert stats.kstest(np.concatenate([first, second]), "norm").pvalue > 1e-3
    rng = pytensor.shared(np.random.default_rng(0))
    nxt, y = pt.random.uniform(2.0, 3.0, rng=rng, size=3000).owner.outputs
    nxt2, z = pt.random.normal(rng=nxt, size=4).owner.outputs  # a chain of two draws
    g = pytensor.function([], [nxt2, y, z], mode=mode)
    state = rng.get_value().bit_generator.state
    gen, draws, normals = g()
    assert isinstance(gen, np.random.Generator) and gen.bit_generator.state == state
    assert draws.shape == (3000,) and normals.shape == (4,)
    assert stats.kstest(draws, stats.uniform(2.0, 1.0).cdf).pvalue > 1e-3


def test_random_inputs_in_the_mode_is_a_clear_error():
    """Noise inputs have no function argument: the mode says what to use instead."""
    from compiler.mode import onnx_mode

    x = pt.random.normal(size=3, rng=pytensor.shared(np.random.default_rng(0)))
    with pytest.raises(ValueError, match="random='onnx'"):
        pytensor.function([], x, mode=onnx_mode(random="inputs"))
