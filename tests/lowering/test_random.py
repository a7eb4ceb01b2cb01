"""Random variables (``compiler/lowering/rules/random.py``) under the
policies, tested by distribution: a Kolmogorov-Smirnov test (continuous) or
a chi-square test (discrete) of 4000 draws against SciPy's distribution, at
fixed seeds (the ONNX nodes' seeds come from the PyTensor generator's state,
the noise inputs from a seeded NumPy generator, the ``"key"`` models' key
from a fixed seed), so every run sees the same
draws. Under ``random="inputs"`` the transform is also checked value by value
against its closed form on the same noise."""

from __future__ import annotations

import numpy as np
import onnx
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

from compiler import compile_to_onnx
from compiler.lowering.errors import UnsupportedOpsError
from compiler.lowering.rules.random_key import random_key

N = 4000
P_MIN = 1e-3  # the tests are deterministic; a correct sampler passes these at any seed with p = 0.999

# name -> (PyTensor draw from params, SciPy frozen distribution or discrete pmf, closed form of the noise)
CONTINUOUS = {
    "normal": (lambda r, d: pt.random.normal(1.5, 2.0, size=(N,), rng=r, dtype=d), stats.norm(1.5, 2.0),
               lambda z: 1.5 + 2.0 * z),
    "lognormal": (lambda r, d: pt.random.lognormal(0.3, 0.5, size=(N,), rng=r, dtype=d),
                  stats.lognorm(s=0.5, scale=np.exp(0.3)), lambda z: np.exp(0.3 + 0.5 * z)),
    "uniform": (lambda r, d: pt.random.uniform(-1.0, 3.0, size=(N,), rng=r, dtype=d), stats.uniform(-1.0, 4.0),
                lambda u: -1.0 + 4.0 * u),
    "exponential": (lambda r, d: pt.random.exponential(2.0, size=(N,), rng=r, dtype=d), stats.expon(scale=2.0),
                    lambda u: -np.log1p(-u) * 2.0),
    "logistic": (lambda r, d: pt.random.logistic(1.0, 0.5, size=(N,), rng=r, dtype=d), stats.logistic(1.0, 0.5),
                 lambda u: 1.0 + 0.5 * (np.log(u) - np.log1p(-u))),
    "gumbel": (lambda r, d: pt.random.gumbel(1.0, 2.0, size=(N,), rng=r, dtype=d), stats.gumbel_r(1.0, 2.0),
               lambda u: 1.0 - 2.0 * np.log(-np.log(u))),
    "laplace": (lambda r, d: pt.random.laplace(-1.0, 0.7, size=(N,), rng=r, dtype=d), stats.laplace(-1.0, 0.7),
                lambda u: np.where(u >= 0.5, -1.0 - 0.7 * np.log(2 - 2 * u), -1.0 + 0.7 * np.log(2 * u))),
    "cauchy": (lambda r, d: pt.random.cauchy(0.5, 1.5, size=(N,), rng=r, dtype=d), stats.cauchy(0.5, 1.5),
               lambda u: 0.5 + 1.5 * np.tan(np.pi * (u - 0.5))),
}
CATEGORICAL_P = np.array([0.1, 0.2, 0.3, 0.4])
DISCRETE = {
    "bernoulli": (lambda r: pt.random.bernoulli(0.3, size=(N,), rng=r), np.arange(2), np.array([0.7, 0.3]),
                  lambda u: (u < 0.3).astype(np.int64)),
    "integers": (lambda r: pt.random.integers(-3, 5, size=(N,), rng=r), np.arange(-3, 5), np.full(8, 1 / 8),
                 lambda u: -3 + np.floor(u * 8).astype(np.int64)),
    "categorical": (lambda r: pt.random.categorical(CATEGORICAL_P, size=(N,), rng=r), np.arange(4), CATEGORICAL_P,
                    lambda u: (np.cumsum(CATEGORICAL_P)[None, :] < u[:, None]).sum(-1)),
}


def _rng(seed=20261125):
    return pytensor.shared(np.random.default_rng(seed), name="rng")


def _noise(m, seed=7):
    """A seeded draw of every noise input of ``m``, by name."""
    gen = np.random.default_rng(seed)
    out = {}
    for spec in m.random_inputs:
        shape = tuple(spec.shape)
        draw = gen.standard_normal(shape) if spec.noise == "normal" else gen.random(shape)
        out[spec.name] = draw.astype(spec.dtype)
    return out


def _draws(m, policy):
    if policy == "key":
        return m.run(random_key(7))[0]
    return m.run(**_noise(m))[0] if policy == "inputs" else m.run()[0]


def _chi2_p(draws, support, pmf):
    counts = np.array([(draws == k).sum() for k in support])
    assert counts.sum() == len(draws), "draws outside the support"
    return stats.chisquare(counts, pmf * len(draws)).pvalue


@pytest.mark.parametrize("policy", ["onnx", "inputs", "key"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_distribution(name, dtype, policy):
    make, dist, closed = CONTINUOUS[name]
    x = make(_rng(), dtype)
    m = compile_to_onnx([], outputs=[x], random=policy)
    draws = _draws(m, policy)
    assert draws.dtype == np.dtype(dtype) and draws.shape == (N,)
    assert stats.kstest(draws.astype(np.float64), dist.cdf).pvalue > P_MIN
    if policy == "inputs":
        (spec,) = m.random_inputs
        assert (spec.distribution, spec.dtype, spec.shape) == (name, dtype, (N,))
        noise = _noise(m)[spec.name].astype(np.float64)
        noise = np.maximum(noise, np.finfo(dtype).tiny) if name in ("logistic", "gumbel", "laplace") else noise
        tol = 1e-12 if dtype == "float64" else 1e-4
        np.testing.assert_allclose(draws, closed(noise), rtol=tol, atol=tol)


@pytest.mark.parametrize("policy", ["onnx", "inputs", "key"])
@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_distribution(name, policy):
    make, support, pmf, closed = DISCRETE[name]
    x = make(_rng())
    m = compile_to_onnx([], outputs=[x], random=policy)
    draws = _draws(m, policy)
    assert draws.dtype == np.int64 and draws.shape == (N,)
    assert _chi2_p(draws, support, pmf) > P_MIN
    if policy == "inputs":
        np.testing.assert_array_equal(draws, closed(_noise(m)[m.random_inputs[0].name]))


def test_onnx_policy_draws_anew_each_run_and_repeats_per_session():
    m = compile_to_onnx([], outputs=[pt.random.normal(size=(50,), rng=_rng())], random="onnx")
    first, second = m.run()[0], m.run()[0]
    assert not np.array_equal(first, second)
    again = compile_to_onnx([], outputs=[pt.random.normal(size=(50,), rng=_rng())], random="onnx")
    np.testing.assert_array_equal(again.run()[0], first)  # same generator state: same seeds
    other = compile_to_onnx([], outputs=[pt.random.normal(size=(50,), rng=_rng(1))], random="onnx")
    assert not np.array_equal(other.run()[0], first)


def test_onnx_policy_keeps_random_nodes_and_chained_draws_differ():
    """Static shapes do not fold the draws away; two draws from one generator
    chain get different seeds (not one merged node)."""
    rng = _rng()
    a = pt.random.normal(size=(1000,), rng=rng)
    b = pt.random.normal(size=(1000,), rng=a.owner.outputs[0])
    m = compile_to_onnx([], outputs=[a, b], random="onnx")
    ops = [n.op_type for n in m.model.graph.node]
    assert ops.count("RandomNormalLike") == 2
    x, y = m.run()
    assert abs(np.corrcoef(x, y)[0, 1]) < 0.15


def test_parameters_broadcast_to_the_draw_shape_symbolic_dims():
    mu = pt.matrix("mu")
    sigma = pt.vector("sigma")
    x = pt.random.normal(mu, sigma, rng=_rng(), name="x")
    values = [np.arange(6.0).reshape(2, 3) * 100, np.array([0.5, 1.0, 2.0])]
    m = compile_to_onnx([mu, sigma], outputs=[x], random="inputs")
    (spec,) = m.random_inputs
    assert spec.name == "x_noise" and spec.shape == ("mu_dim0", "x_noise_dim1")  # mu_dim1 vs sigma_dim0: unknown
    z = np.random.default_rng(3).standard_normal((2, 3))
    np.testing.assert_array_equal(m.run(*values, x_noise=z)[0], values[0] + values[1] * z)
    onnx_m = compile_to_onnx([mu, sigma], outputs=[x], random="onnx")
    big = [np.zeros((2000, 3)), np.array([0.5, 1.0, 2.0])]
    out = onnx_m.run(*big)[0]
    assert out.shape == (2000, 3)
    for j, s in enumerate(big[1]):
        assert stats.kstest(out[:, j], stats.norm(0, s).cdf).pvalue > P_MIN


def test_categorical_batch_of_probabilities():
    p = pt.matrix("p")
    x = pt.random.categorical(p, rng=_rng())
    probs = np.array([[0.9, 0.1, 0.0], [0.0, 0.5, 0.5]] * 2000)
    m = compile_to_onnx([p], outputs=[x], random="onnx")
    draws = m.run(probs)[0]
    assert _chi2_p(draws[0::2], np.arange(3)[:2], np.array([0.9, 0.1])) > P_MIN
    assert _chi2_p(draws[1::2], np.arange(3)[1:], np.array([0.5, 0.5])) > P_MIN


@pytest.mark.parametrize("policy", ["onnx", "inputs", "key"])
def test_compiled_function(policy):
    """A default-mode function (PyTensor 3 wraps each draw in
    ``RandomVariableWithCoreShape``); its generator update is dropped."""
    rng = _rng()
    mu = pt.vector("mu")
    x = pt.random.normal(mu, 2.0, rng=rng)
    next_rng = x.owner.outputs[0]
    k = pt.random.categorical(CATEGORICAL_P, size=mu.shape, rng=next_rng)
    f = pytensor.function([mu], [x + k], updates={rng: k.owner.outputs[0]})
    m = compile_to_onnx(f, random=policy)
    feed = {"mu": np.full(N, 3.0)}
    if policy == "inputs":
        assert [s.noise for s in m.random_inputs] == ["normal", "uniform"]
        feed |= _noise(m) if all(isinstance(d, int) for s in m.random_inputs for d in s.shape) else {
            s.name: (np.random.default_rng(i).standard_normal(N) if s.noise == "normal"
                     else np.random.default_rng(i).random(N)) for i, s in enumerate(m.random_inputs)}
    if policy == "key":
        assert m.input_names == ["mu", "rng"]
        feed["rng"] = random_key(3)
    draws = m.run(**feed)[0]
    ref = stats.norm(3.0, 2.0)
    # x + k: a mixture of shifted normals with the categorical weights
    cdf = lambda v: sum(w * ref.cdf(v - i) for i, w in enumerate(CATEGORICAL_P))  # noqa: E731
    assert stats.kstest(draws, cdf).pvalue > P_MIN


def test_no_policy_is_unsupported_and_names_the_option():
    x = pt.random.normal(size=(3,), rng=_rng())
    with pytest.raises(UnsupportedOpsError, match="random='inputs'"):
        compile_to_onnx([], outputs=[x])


def test_bad_policy():
    x = pt.random.normal(size=(3,), rng=_rng())
    with pytest.raises(ValueError, match="random must be one of"):
        compile_to_onnx([], outputs=[x], random="numpy")


@pytest.mark.parametrize("policy", ["onnx", "inputs"])
def test_check_dynamic_compares_draws_in_dtype_and_shape(policy):
    """``check_dynamic`` under a ``random`` policy: the draw ``normal(mu, sigma)`` (its noise's second
    dim unnamed: mu's or sigma's) in dtype and shape at two sizes of every dim, the draw-free output
    ``2 mu`` in value too; a model whose draw-free output is wrong is still caught."""
    mu, sigma = pt.matrix("mu"), pt.vector("sigma")
    x = pt.random.normal(mu, sigma, rng=_rng(), name="x")
    m = compile_to_onnx([mu, sigma], outputs=[x, 2 * mu], random=policy, check_dynamic=True)
    assert [s.shape for s in m.random_inputs] == ([] if policy == "onnx" else [("mu_dim0", "x_noise_dim1")])
    from compiler.core import shapes
    from compiler.core.shapes import DynamicShapeError
    with pytest.raises(DynamicShapeError, match="differs from PyTensor"):
        shapes.check_dynamic(m.model, m.ir, m.input_variables, [x, 3 * mu], random_inputs=m.random_inputs)


def test_model_is_valid_onnx():
    x = pt.random.uniform(size=(4,), rng=_rng())
    onnx.checker.check_model(compile_to_onnx([], outputs=[x], random="onnx").model, full_check=True)


@pytest.mark.parametrize("policy", ["onnx", "inputs"])
def test_parameters_that_do_not_broadcast_to_size_are_refused(policy):
    """``size=(N, 1)`` with a length-2 ``loc``: PyTensor raises; the transform
    alone would broadcast to (N, 2). A length-1 ``loc`` draws."""
    loc = pt.vector("loc")
    x = pt.random.normal(loc, 1.0, size=(N, 1), rng=_rng())
    m = compile_to_onnx([loc], outputs=[x], random=policy)
    noise = _noise(m) if policy == "inputs" else {}
    assert m.run(np.array([5.0]), **noise)[0].shape == (N, 1)
    with pytest.raises(Exception, match="Reshape"):
        m.run(np.array([5.0, 6.0]), **noise)
    one = pt.vector("loc", shape=(1,))
    static = compile_to_onnx([one], outputs=[pt.random.normal(one, 1.0, size=(N, 1), rng=_rng())], random=policy)
    assert "reshape" not in {node.op for node in static.ir}  # nothing to guard
