"""Random draws inside control flow (``rules/scan.py``, ``rules/random.py``):
scans whose body draws (the generator a non-sequence, or an untraced state
with its update, as ``collect_default_updates`` and PyMC's forward
sampling of AR/random-walk models write them), looped and unrolled, raw
graphs, compiled functions and PyMC's AR (2.38, with PyMC), and draws in ``IfElse`` branches. In
distribution: a Gaussian random walk ``x_t = x_{t-1} + e_t`` has
``x_t ~ N(0, t + 1)`` and independent increments (KS per step at fixed
seeds, p > 1e-3; a body that repeated one draw per step would give
``N(0, (t + 1)^2)``). Under ``random="inputs"`` the walk equals the cumulative
sum of the noise rows, exactly."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.ifelse import ifelse
from scipy import stats

from compiler import compile_to_onnx, random_key
from tests.lowering.test_random import P_MIN, _rng

N, T = 3000, 4


def _scan(step, **kwargs):
    """``pytensor.scan``'s outputs and updates on both PyTensor lines (3.0 asks for ``return_updates``)."""
    if "return_updates" in pytensor.scan.__code__.co_varnames:
        kwargs["return_updates"] = True
    return pytensor.scan(step, **kwargs)


def _walk(style: str, n_steps, dtype="float64"):
    """A Gaussian random walk of ``n_steps`` from the vector ``x0`` (returned with its updates):
    ``"non_seq"`` draws from a generator the body closes over, ``"update"`` threads the generator as
    an untraced state (the body returns its update)."""
    x0 = pt.vector("x0", dtype=dtype)
    rng = _rng()
    if style == "non_seq":
        ys, updates = _scan(lambda x: x + pt.random.normal(0, 1, size=x.shape, rng=rng, dtype=dtype),
                            outputs_info=[x0], n_steps=n_steps)
    else:
        def step(x, r):
            next_r, e = pt.random.normal(0, 1, size=x.shape, rng=r, dtype=dtype).owner.outputs
            return x + e, {r: next_r}
        ys, updates = _scan(step, outputs_info=[x0], non_sequences=[rng], n_steps=n_steps)
    return x0, ys, updates


def _check_walk(out: np.ndarray) -> None:
    assert out.shape == (T, N)
    for t in range(T):
        assert stats.kstest(out[t].astype(np.float64), stats.norm(0, np.sqrt(t + 1)).cdf).pvalue > P_MIN
    steps = np.diff(out.astype(np.float64), axis=0)
    for t in range(T - 1):  # increments independent of the past and of each other
        assert abs(np.corrcoef(out[t], steps[t])[0, 1]) < 0.08
        assert stats.kstest(steps[t], stats.norm(0, 1).cdf).pvalue > P_MIN


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("style", ["non_seq", "update"])
@pytest.mark.parametrize("steps", ["constant", "symbolic"])  # unrolled by scan-unroll / a Loop
def test_random_walk_under_onnx_draws_anew_at_every_step(steps, style, dtype):
    n = pt.lscalar("n")
    x0, ys, _ = _walk(style, T if steps == "constant" else n, dtype)
    inputs = [x0] if steps == "constant" else [x0, n]
    m = compile_to_onnx(inputs, outputs=[ys], random="onnx")
    ops = [node.op_type for node in m.model.graph.node]
    assert ("Loop" in ops) == (steps == "symbolic")
    assert m.random_inputs == []
    out = m.run(np.zeros(N, dtype), *([] if steps == "constant" else [T]))[0]
    assert out.dtype == np.dtype(dtype) and out.shape == (T, N)
    _check_walk(out)


@pytest.mark.parametrize("style", ["non_seq", "update"])
@pytest.mark.parametrize("steps", ["constant", "symbolic"])
def test_random_walk_under_inputs_is_the_cumulative_sum_of_step_rows(steps, style):
    n = pt.lscalar("n")
    x0, ys, _ = _walk(style, T if steps == "constant" else n)
    inputs = [x0] if steps == "constant" else [x0, n]
    m = compile_to_onnx(inputs, outputs=[ys], random="inputs")
    (spec,) = m.random_inputs
    assert (spec.distribution, spec.noise, spec.dtype) == ("normal", "normal", "float64")
    assert len(spec.shape) == 2 and spec.shape[0] == (T if steps == "constant" else "normal_noise_dim0")
    z = np.random.default_rng(5).standard_normal((T, N))
    x0v = np.linspace(-1, 1, N)
    out = m.run(x0v, *([] if steps == "constant" else [T]), **{spec.name: z})[0]
    np.testing.assert_array_equal(out, np.cumsum(np.vstack([x0v, z]), axis=0)[1:])  # x0 + z_0 + ... in order
    _check_walk(out - x0v)


@pytest.mark.parametrize("policy", ["onnx", "inputs"])
def test_compiled_function_with_the_generator_update(policy):
    """``pytensor.function`` with the scan's generator update (the update is dropped: models are
    stateless); PyTensor's own draws have the same dtype and shape."""
    x0, ys, updates = _walk("update", T)
    f = pytensor.function([x0], ys, updates=updates)
    m = compile_to_onnx(f, random=policy)
    feed = {}
    if policy == "inputs":
        (spec,) = m.random_inputs
        assert spec.shape[0] == T
        feed[spec.name] = np.random.default_rng(8).standard_normal((T, N))
    out = m.run(np.zeros(N), **feed)[0]
    want = f(np.zeros(N))
    assert out.dtype == want.dtype and out.shape == want.shape
    _check_walk(out)
    if policy == "inputs":
        np.testing.assert_array_equal(out, np.cumsum(feed[spec.name], axis=0))


def test_draws_of_a_nested_scan_stack_one_step_axis_per_scan():
    """A scan over 3 rows whose body runs an inner scan of 2 steps drawing a uniform a step: the noise
    is (3, 2, k), outermost step first, and step (i, j) reads row [i, j]."""
    rng = _rng()
    xs = pt.matrix("xs")

    def inner_walk(x):
        ys, _ = _scan(lambda y: y + pt.random.uniform(0, 1, size=y.shape, rng=rng), outputs_info=[x], n_steps=2)
        return ys[-1]

    out, _ = _scan(inner_walk, sequences=[xs])
    m = compile_to_onnx([xs], outputs=[out], random="inputs")
    (spec,) = m.random_inputs
    assert spec.noise == "uniform" and spec.shape[1] == 2 and len(spec.shape) == 3
    values = np.arange(12.0).reshape(3, 4)
    u = np.random.default_rng(2).random((3, 2, 4))
    np.testing.assert_allclose(m.run(values, **{spec.name: u})[0], values + u.sum(axis=1), rtol=0, atol=1e-14)
    draws = compile_to_onnx([xs], outputs=[out], random="onnx").run(np.zeros((3, N)))[0]
    for row in draws:  # the sum of two independent U[0, 1): triangular on [0, 2]
        assert stats.kstest(row, stats.triang(0.5, 0, 2).cdf).pvalue > P_MIN


@pytest.mark.parametrize("policy", ["onnx", "inputs", "key"])
def test_draw_in_an_ifelse_branch(policy):
    """A draw in the taken branch of an ``IfElse``; under ``"inputs"`` its noise is an input of the
    branch's draw shape, fed whether or not the branch runs (the other branch ignores it)."""
    c = pt.scalar("c")
    y = ifelse(c > 0, pt.random.exponential(2.0, size=(N,), rng=_rng()), pt.zeros(N))
    m = compile_to_onnx([c], outputs=[y], random=policy)
    feed = {}
    if policy == "inputs":
        (spec,) = m.random_inputs
        assert (spec.noise, spec.shape) == ("uniform", (N,))
        feed[spec.name] = np.random.default_rng(4).random(N)
    if policy == "key":
        feed["rng"] = random_key(4)
    draws = m.run(1.0, **feed)[0]
    assert draws.dtype == np.float64 and draws.shape == (N,)
    assert stats.kstest(draws, stats.expon(scale=2.0).cdf).pvalue > P_MIN
    if policy == "inputs":
        np.testing.assert_allclose(draws, stats.expon(scale=2.0).ppf(feed[spec.name]), rtol=1e-13)
    np.testing.assert_array_equal(m.run(-1.0, **feed)[0], np.zeros(N))


def test_draw_in_an_ifelse_inside_a_scan_under_inputs():
    """Each step either adds a normal draw (its row of the step-stacked noise) or keeps the state."""
    rng = _rng()
    flags = pt.vector("flags")
    x0 = pt.vector("x0")
    ys, _ = _scan(lambda f, x: ifelse(f > 0, x + pt.random.normal(size=x.shape, rng=rng), x),
                  sequences=[flags], outputs_info=[x0])
    m = compile_to_onnx([flags, x0], outputs=[ys], random="inputs")
    (spec,) = m.random_inputs
    f = np.array([1.0, -1.0, 1.0])
    z = np.random.default_rng(9).standard_normal((3, 5))
    out = m.run(f, np.zeros(5), **{spec.name: z})[0]
    np.testing.assert_array_equal(out, np.cumsum(z * (f > 0)[:, None], axis=0))


@pytest.mark.parametrize("policy", ["onnx", "inputs", "key"])
def test_pymc_ar_forward_sampling(policy):
    """PyMC's ``AR`` (an ``OpFromGraph`` random variable whose scan draws the innovations) sampled
    forward: ``x_0 ~ N(0, 1)``, ``x_t = 0.5 x_{t-1} + e_t``, so ``Var x_t = 0.25 Var x_{t-1} + 1``
    (KS per step over 2000 series)."""
    pm = pytest.importorskip("pymc")
    with pm.Model():
        ar = pm.AR("ar", rho=[0.5], sigma=1.0, init_dist=pm.Normal.dist(0, 1), steps=6, shape=(2000, 7))
    m = compile_to_onnx([], outputs=[ar], random=policy)
    feed = {}
    if policy == "inputs":
        gen = np.random.default_rng(3)
        for spec in m.random_inputs:  # the innovations' step axis is symbolic inside PyMC's graph: 6 steps
            shape = tuple(6 if isinstance(d, str) else d for d in spec.shape)
            feed[spec.name] = gen.standard_normal(shape).astype(spec.dtype)
    if policy == "key":  # the generators of the initial value's and the innovations' draws
        feed = {name: random_key([3, i]) for i, name in enumerate(m.input_names)}
    out = m.run(**feed)[0]
    want = pm.draw(ar, random_seed=1)
    assert out.dtype == want.dtype and out.shape == want.shape == (2000, 7)
    var = 1.0
    for t in range(7):
        assert stats.kstest(out[:, t], stats.norm(0, np.sqrt(var)).cdf).pvalue > P_MIN
        var = 0.25 * var + 1
