"""The transforms of ``compiler/lowering/rules/random_transforms.py`` beyond
the closed forms of ``test_random.py``: quantiles through special functions,
discrete quantiles by search, several uniforms per draw and the multivariate
draws. Each is tested in distribution (Kolmogorov-Smirnov or chi-square
against SciPy at fixed seeds, ``P_MIN``) and, under ``random="inputs"``,
value by value against SciPy's quantile function on the same noise."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest
from pytensor.tensor.random import basic as rb
from scipy import special, stats

from compiler import compile_to_onnx
from compiler.lowering.errors import UnsupportedOpsError
from tests.lowering.test_random import P_MIN, _noise, _rng

N = 1000
# quantiles through betaincinv/gammaincinv cost ~0.1-1 ms a draw: their float32 runs, and beta_binomial,
# are in the slow job
SPECIAL = {"gamma", "gamma_small_shape", "chisquare", "invgamma", "gengamma", "beta", "t"}

# name -> (draw of dtype d, SciPy distribution, quantile of the noise (None: several uniforms), tolerance)
CONTINUOUS = {
    "halfnormal": (lambda d: pt.random.halfnormal(1.0, 2.0, size=(N,), rng=_rng(), dtype=d), stats.halfnorm(1.0, 2.0),
                   lambda z: 1.0 + 2.0 * np.abs(z)),
    "halfcauchy": (lambda d: pt.random.halfcauchy(1.0, 2.0, size=(N,), rng=_rng(), dtype=d),
                   stats.halfcauchy(1.0, 2.0), stats.halfcauchy(1.0, 2.0).ppf),
    "triangular": (lambda d: pt.random.triangular(-1.0, 0.5, 2.0, size=(N,), rng=_rng(), dtype=d),
                   stats.triang(0.5, -1.0, 3.0), stats.triang(0.5, -1.0, 3.0).ppf),
    "truncexpon": (lambda d: pt.random.truncexpon(2.0, 1.0, 3.0, size=(N,), rng=_rng(), dtype=d),
                   stats.truncexpon(2.0, 1.0, 3.0), stats.truncexpon(2.0, 1.0, 3.0).ppf),
    "pareto": (lambda d: pt.random.pareto(3.0, 2.0, size=(N,), rng=_rng(), dtype=d), stats.pareto(3.0, scale=2.0),
               stats.pareto(3.0, scale=2.0).ppf),
    "weibull": (lambda d: pt.random.weibull(1.7, size=(N,), rng=_rng(), dtype=d), stats.weibull_min(1.7),
                stats.weibull_min(1.7).ppf),
    "gamma": (lambda d: pt.random.gamma(2.5, scale=1.5, size=(N,), rng=_rng(), dtype=d), stats.gamma(2.5, scale=1.5),
              lambda u: 1.5 * special.gammaincinv(2.5, u)),
    "gamma_small_shape": (lambda d: pt.random.gamma(0.05, scale=1.0, size=(N,), rng=_rng(), dtype=d),
                          stats.gamma(0.05), lambda u: special.gammaincinv(0.05, u)),
    "chisquare": (lambda d: pt.random.chisquare(5.0, size=(N,), rng=_rng()).astype(d), stats.chi2(5.0),
                  lambda u: 2.0 * special.gammaincinv(2.5, u)),
    "invgamma": (lambda d: pt.random.invgamma(3.0, 2.0, size=(N,), rng=_rng(), dtype=d),
                 stats.invgamma(3.0, scale=2.0), lambda u: 2.0 / special.gammaincinv(3.0, u)),
    "gengamma": (lambda d: pt.random.gengamma(2.0, 1.5, 3.0, size=(N,), rng=_rng(), dtype=d),
                 stats.gengamma(2.0 / 1.5, 1.5, scale=3.0), lambda u: 3.0 * special.gammaincinv(2.0 / 1.5, u) ** (1 / 1.5)),
    "beta": (lambda d: pt.random.beta(0.7, 2.0, size=(N,), rng=_rng(), dtype=d), stats.beta(0.7, 2.0),
             lambda u: special.betaincinv(0.7, 2.0, u)),
    "t": (lambda d: pt.random.t(3.0, 1.0, 2.0, size=(N,), rng=_rng(), dtype=d), stats.t(3.0, 1.0, 2.0),
          stats.t(3.0, 1.0, 2.0).ppf),
    "wald": (lambda d: pt.random.wald(1.5, 2.0, size=(N,), rng=_rng(), dtype=d), stats.invgauss(1.5 / 2.0, scale=2.0),
             None),
}
# name -> (draw, SciPy distribution, whether the quantile is scipy's ppf of the noise)
DISCRETE = {
    "geometric": (lambda: pt.random.geometric(0.2, size=(N,), rng=_rng()), stats.geom(0.2)),
    "poisson": (lambda: pt.random.poisson(3.5, size=(N,), rng=_rng()), stats.poisson(3.5)),
    "poisson_tiny_rate": (lambda: pt.random.poisson(0.01, size=(N,), rng=_rng()), stats.poisson(0.01)),
    "poisson_large_rate": (lambda: pt.random.poisson(1e6, size=(N,), rng=_rng()), stats.poisson(1e6)),
    "binomial": (lambda: pt.random.binomial(20, 0.3, size=(N,), rng=_rng()), stats.binom(20, 0.3)),
    "binomial_many_trials": (lambda: pt.random.binomial(100_000, 0.001, size=(N,), rng=_rng()),
                             stats.binom(100_000, 0.001)),
    "negative_binomial": (lambda: pt.random.negative_binomial(3.0, 0.4, size=(N,), rng=_rng()), stats.nbinom(3.0, 0.4)),
    "beta_binomial": (lambda: pt.random.betabinom(10, 2.0, 3.0, size=(N,), rng=_rng()), stats.betabinom(10, 2.0, 3.0)),
    "hypergeometric": (lambda: pt.random.hypergeometric(20, 30, 15, size=(N,), rng=_rng()), stats.hypergeom(50, 20, 15)),
    "hypergeometric_lower_bound": (lambda: pt.random.hypergeometric(400, 30, 420, size=(N,), rng=_rng()),
                                   stats.hypergeom(430, 400, 420)),
    "hypergeometric_large": (lambda: pt.random.hypergeometric(3000, 5000, 2000, size=(N,), rng=_rng()),
                             stats.hypergeom(8000, 3000, 2000)),
}


def _binned_p(draws, dist, bins=20):
    """Chi-square p-value of integer ``draws`` against ``dist`` in bins between its quantiles at
    ``1/bins, 2/bins, ...`` (merged where equal), so that every bin is expected often at any rate."""
    edges = np.unique(dist.ppf(np.arange(1, bins) / bins))
    cdf = np.concatenate([[0.0], dist.cdf(edges), [1.0]])
    counts = np.bincount(np.searchsorted(edges, draws, side="left"), minlength=len(edges) + 1)
    expected = np.diff(cdf) * len(draws)
    keep = expected > 0
    assert counts[~keep].sum() == 0, "draws where the distribution has no mass"
    return stats.chisquare(counts[keep], expected[keep] * counts.sum() / expected[keep].sum()).pvalue


@pytest.mark.parametrize("name,dtype", [(n, "float64") for n in sorted(CONTINUOUS)] + [
    pytest.param(n, "float32", marks=[pytest.mark.slow] if n in SPECIAL else []) for n in sorted(CONTINUOUS)])
def test_continuous_distribution_and_its_quantile(name, dtype):
    make, dist, quantile = CONTINUOUS[name]
    m = compile_to_onnx([], outputs=[make(dtype)], random="inputs")
    noise = _noise(m)
    draws = m.run(**noise)[0]
    assert draws.dtype == np.dtype(dtype) and draws.shape == (N,)
    assert stats.kstest(draws.astype(np.float64), dist.cdf).pvalue > P_MIN
    (spec,) = m.random_inputs
    if quantile is not None:
        want = quantile(noise[spec.name].astype(np.float64))
        # relative to each draw, and to the largest draw where a location shift cancels (a draw near 0)
        rtol = 1e-11 if dtype == "float64" else 4e-6
        np.testing.assert_allclose(draws, want.astype(dtype), rtol=rtol, atol=rtol * np.abs(want).max())
    else:
        assert spec.shape == (N, 3)


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n == "beta_binomial" else [])
                                  for n in sorted(DISCRETE)])
def test_discrete_distribution_and_its_quantile(name):
    make, dist = DISCRETE[name]
    m = compile_to_onnx([], outputs=[make()], random="inputs")
    noise = _noise(m)
    draws = m.run(**noise)[0]
    assert draws.dtype == np.int64 and draws.shape == (N,)
    assert _binned_p(draws, dist) > P_MIN
    (spec,) = m.random_inputs
    if spec.shape == (N,):  # one uniform a draw: SciPy's quantile (the smallest k with F(k) >= u) of the noise
        np.testing.assert_array_equal(draws, dist.ppf(noise[spec.name]).astype(np.int64))


def test_discrete_search_takes_parameters_per_element_and_the_onnx_policy():
    lam = pt.vector("lam")
    n, p = pt.lvector("n"), pt.vector("p")
    draws = [pt.random.poisson(lam, rng=_rng()), pt.random.binomial(n, p, rng=_rng(3))]
    rates = np.array([0.0, 0.5, 7.0, 250.0] * 500)
    trials, probs = np.array([0, 1, 30, 1000] * 500), np.array([0.5, 1.0, 0.2, 0.999] * 500)
    m = compile_to_onnx([lam, n, p], outputs=draws, random="onnx")
    k, b = m.run(rates, trials, probs)
    for j in range(4):
        assert _binned_p(k[j::4], stats.poisson(rates[j])) > P_MIN if rates[j] else not k[j::4].any()
    assert not b[0::4].any() and (b[1::4] == 1).all()
    assert _binned_p(b[2::4], stats.binom(30, 0.2)) > P_MIN and _binned_p(b[3::4], stats.binom(1000, 0.999)) > P_MIN


def test_a_search_loop_gets_no_static_size_advice():
    m = compile_to_onnx([], outputs=[pt.random.poisson(3.0, size=(10,), rng=_rng())], random="inputs")
    assert [a for a in m.advice if a.kind == "loop"] == []


def test_multivariate_normal_is_mean_plus_cholesky_times_noise():
    mean = pt.vector("mean")
    cov = pt.matrix("cov")
    x = pt.random.multivariate_normal(mean, cov, size=(N,), rng=_rng())
    m = compile_to_onnx([mean, cov], outputs=[x], random="inputs")
    (spec,) = m.random_inputs
    assert spec.noise == "normal" and spec.shape[0] == N
    mu = np.array([1.0, -2.0, 0.5])
    a = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.4], [0.1, -0.4, 0.8]])
    z = np.random.default_rng(5).standard_normal((N, 3))
    draws = m.run(mu, a, **{spec.name: z})[0]
    np.testing.assert_allclose(draws, mu + z @ np.linalg.cholesky(a).T, rtol=1e-12, atol=1e-12)
    onnx_draws = compile_to_onnx([mean, cov], outputs=[x], random="onnx").run(mu, a)[0]
    for j in range(3):
        assert stats.kstest(onnx_draws[:, j], stats.norm(mu[j], np.sqrt(a[j, j])).cdf).pvalue > P_MIN
    assert np.abs(np.cov(onnx_draws.T) - a).max() < 0.2


def test_multivariate_normal_batch_of_means_and_covariances():
    mean, cov = pt.matrix("mean"), pt.tensor3("cov")
    x = pt.random.multivariate_normal(mean, cov, rng=_rng())
    m = compile_to_onnx([mean, cov], outputs=[x], random="inputs")
    mu = np.arange(8.0).reshape(4, 2)
    covs = np.stack([np.eye(2) * (i + 1) + 0.5 for i in range(4)])
    z = np.random.default_rng(2).standard_normal((4, 2))
    draws = m.run(mu, covs, **{m.random_inputs[0].name: z})[0]
    np.testing.assert_allclose(draws, mu + np.einsum("bij,bj->bi", np.linalg.cholesky(covs), z), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("method", ["svd", "eigh"])
@pytest.mark.parametrize("cov_value", [[[1, 0.5, 0], [0.5, 2, 0], [0, 0, 0]],  # singular PSD (PyTensor's test)
                                       [[2.0, 0.3, 0.1], [0.3, 1.0, -0.4], [0.1, -0.4, 0.8]]],
                         ids=["singular", "definite"])
def test_multivariate_normal_svd_and_eigh_methods_use_their_factor(method, dtype, cov_value):
    """``method="svd"``/``"eigh"`` draw ``mean + A z`` with NumPy's factor ``U sqrt(s)`` / ``V sqrt(w)``
    (``MvNormalRV.rng_fn``), so a singular PSD covariance draws (Cholesky gave NaN). Noise ``z = I`` reads
    the columns of ``A`` off the draws: equal to NumPy's up to each column's sign (the Jacobi vectors' signs
    are not LAPACK's, the law is the same), and ``A A^T = cov``."""
    mean, cov = pt.vector("mean", dtype=dtype), pt.matrix("cov", dtype=dtype)
    x = pt.random.multivariate_normal(mean, cov, size=(3,), method=method, rng=_rng(), dtype=dtype)
    m = compile_to_onnx([mean, cov], outputs=[x], random="inputs")
    (spec,) = m.random_inputs
    mu, a = np.array([1.0, 2.0, 4.0], dtype), np.array(cov_value, dtype)
    draws = m.run(mu, a, **{spec.name: np.eye(3, dtype=spec.dtype)})[0]
    assert draws.dtype == np.dtype(dtype) and draws.shape == (3, 3)
    columns = (draws - mu).T  # column i of A
    a64 = a.astype(np.float64)
    if method == "svd":
        u, s, _ = np.linalg.svd(a64)
        want = u * np.sqrt(s)
    else:
        w, v = np.linalg.eigh(a64)
        want = v * np.sqrt(w)
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(np.abs(columns), np.abs(want), atol=tol * 10)
    np.testing.assert_allclose(columns @ columns.T, a64, atol=tol * 10)


@pytest.mark.parametrize("alpha", [[2.0, 3.0, 5.0], [0.02, 0.5, 0.02], [1e-3, 1e-3, 1e-3]])
def test_dirichlet_marginals_are_beta_and_rows_sum_to_one(alpha):
    """Small alphas are drawn in log space: no 0/0 where every gamma variate underflows (at alpha = 1e-3
    about half the components are below the smallest float and round to 0, as the true values do). The
    KS test runs on the marginals that rounding to 0 or 1 leaves continuous."""
    x = pt.random.dirichlet(np.array(alpha), size=(N,), rng=_rng())
    m = compile_to_onnx([], outputs=[x], random="inputs")
    (spec,) = m.random_inputs
    assert spec.shape == (N, 3, 2)
    draws = m.run(**_noise(m))[0]
    assert draws.shape == (N, 3) and np.isfinite(draws).all()
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-14)
    total = sum(alpha)
    for j, a in enumerate(alpha):
        marginal = stats.beta(a, total - a)
        if marginal.cdf(np.finfo(np.float64).tiny) < 1e-6 and marginal.sf(1 - 2.0 ** -53) < 1e-6:  # no rounding
            assert stats.kstest(draws[:, j], marginal.cdf).pvalue > P_MIN


def test_hypergeometric_takes_parameters_per_element_and_the_onnx_policy():
    good, bad, sample = pt.lvector("good"), pt.lvector("bad"), pt.lvector("sample")
    x = pt.random.hypergeometric(good, bad, sample, rng=_rng())
    g, b, s = np.array([0, 5, 10, 7] * 500), np.array([4, 0, 10, 3] * 500), np.array([3, 5, 0, 10] * 500)
    draws = compile_to_onnx([good, bad, sample], outputs=[x], random="onnx").run(g, b, s)[0]
    assert draws.dtype == np.int64 and draws.shape == (2000,)
    assert not draws[0::4].any() and (draws[1::4] == 5).all() and not draws[2::4].any() and (draws[3::4] == 7).all()
    g2, b2, s2 = np.array([6, 40] * 1000), np.array([9, 25] * 1000), np.array([7, 30] * 1000)
    m = compile_to_onnx([good, bad, sample], outputs=[x], random="inputs")
    noise = _noise_for(m, (2000,))
    draws = m.run(g2, b2, s2, **noise)[0]
    want = stats.hypergeom(g2 + b2, g2, s2).ppf(next(iter(noise.values()))).astype(np.int64)
    np.testing.assert_array_equal(draws, want)


def _noise_for(m, shape, seed=7):
    (spec,) = m.random_inputs
    return {spec.name: np.random.default_rng(seed).random(shape)}


def test_multinomial_is_sequential_binomials_with_exact_sums():
    n, p = pt.lvector("n"), pt.matrix("p")
    x = pt.random.multinomial(n, p, rng=_rng())
    m = compile_to_onnx([n, p], outputs=[x], random="inputs")
    (spec,) = m.random_inputs
    assert spec.noise == "uniform" and len(spec.shape) == 2
    probs = np.array([[0.2, 0.3, 0.5], [0.0, 0.6, 0.4], [0.7, 0.3, 0.0], [0.25, 0.25, 0.5]])
    trials = np.array([10, 50, 0, 1000])
    rows = np.tile(np.arange(4), N)
    noise = np.random.default_rng(3).random((4 * N, 2))
    draws = m.run(trials[rows], probs[rows], **{spec.name: noise})[0]
    assert draws.dtype == np.dtype(x.type.dtype) == np.int64 and draws.shape == (4 * N, 3)
    assert x.type.ndim == 2
    np.testing.assert_array_equal(draws.sum(-1), trials[rows])
    # the first count is the binomial quantile of the first uniform; the second the conditional one's
    first = stats.binom(trials[rows], probs[rows, 0]).ppf(noise[:, 0]).astype(np.int64)
    np.testing.assert_array_equal(draws[:, 0], first)
    left = np.where(probs[rows, 0] < 1, probs[rows, 1] / (1 - probs[rows, 0]), 0.0)
    second = stats.binom(trials[rows] - first, np.minimum(left, 1.0)).ppf(noise[:, 1]).astype(np.int64)
    np.testing.assert_array_equal(draws[:, 1], second)
    assert not draws[1::4, 0].any() and not draws[2::4].any() and not draws[2::4, 2].any()
    for r in (0, 3):
        for j in range(3):
            assert _binned_p(draws[r::4, j], stats.binom(trials[r], probs[r, j])) > P_MIN


@pytest.mark.slow  # three binomial searches on 2,000 draws: ~5-13 s
def test_multinomial_with_size_and_a_shared_p_under_the_onnx_policy():
    x = pt.random.multinomial(20, np.array([0.1, 0.2, 0.3, 0.4]), size=(N, 2), rng=_rng())
    m = compile_to_onnx([], outputs=[x], random="onnx")
    draws = m.run()[0]
    assert draws.shape == (N, 2, 4) and draws.dtype == np.int64 and (draws.sum(-1) == 20).all()
    for j, pj in enumerate([0.1, 0.2, 0.3, 0.4]):
        assert _binned_p(draws[..., j].ravel(), stats.binom(20, pj)) > P_MIN
    (spec,) = compile_to_onnx([], outputs=[x], random="inputs").random_inputs
    assert spec.shape == (N, 2, 3)


class _ReparametrizedNormal(rb.NormalRV):
    """A subclass of a supported RV: the table is keyed by the exact class (it may change the law)."""
    name = "reparametrized_normal"


def test_distributions_without_a_transform_are_refused_with_the_reason():
    x = _ReparametrizedNormal()(0.0, 1.0, size=(3,), rng=_rng())
    with pytest.raises(UnsupportedOpsError, match="reparametrized_normal: no exact transform"):
        compile_to_onnx([], outputs=[x], random="inputs")


def _centered(x, mu):
    """``x - mu`` wrapped into [-pi, pi)."""
    return np.mod(x - mu + np.pi, 2 * np.pi) - np.pi


# each von Mises model takes ~1-5 s to build and run (a bisection loop around a series loop): the float32
# and further kappas run in the slow job
@pytest.mark.parametrize("kappa,dtype", [(0.0, "float64"), (4.0, "float64"), (30.0, "float32")] + [
    pytest.param(k, d, marks=pytest.mark.slow) for k, d in [(0.5, "float64"), (30.0, "float64"), (0.0, "float32"),
                                                             (4.0, "float32")]])
def test_vonmises_is_the_quantile_of_the_noise(kappa, dtype):
    """SciPy's CDF (Hill's series below kappa = 50) of each draw, centered, is its uniform; the draws
    pass a KS test against SciPy's law and lie in [-pi, pi]."""
    mu = 2.5
    x = pt.random.vonmises(mu, kappa, size=(N,), rng=_rng(), dtype=dtype)
    m = compile_to_onnx([], outputs=[x], random="inputs")
    noise = _noise(m)
    (spec,) = m.random_inputs
    assert spec.shape == (N,) and spec.dtype == dtype
    draws = m.run(**noise)[0]
    assert draws.dtype == np.dtype(x.type.dtype) == np.dtype(dtype) and draws.shape == x.type.shape
    assert (np.abs(draws) <= np.pi).all()
    u = noise[spec.name].astype(np.float64)
    d = _centered(draws.astype(np.float64), mu)
    cdf = (d + np.pi) / (2 * np.pi) if kappa == 0 else stats.vonmises(kappa).cdf(d)
    # float32: the draw's rounding (4e-7 relative to pi) times the largest density, ~sqrt(kappa / (2 pi))
    atol = 1e-12 if dtype == "float64" else 4e-7 * np.pi * (1 + np.sqrt(kappa))
    np.testing.assert_allclose(cdf, u, rtol=0, atol=atol)
    law = stats.uniform(-np.pi, 2 * np.pi).cdf if kappa == 0 else stats.vonmises(kappa).cdf
    assert stats.kstest(d, law).pvalue > P_MIN


@pytest.mark.parametrize("kappa", [80.0, pytest.param(5000.0, marks=pytest.mark.slow)])
def test_vonmises_above_scipys_normal_approximation_is_still_exact(kappa):
    """At kappa >= 50 SciPy's CDF is a normal approximation (off by ~1e-6 at kappa = 50); the series is
    kept here, checked against the CDF integrated by quadrature at a few draws."""
    from scipy.integrate import quad

    x = pt.random.vonmises(0.0, kappa, size=(N,), rng=_rng())
    m = compile_to_onnx([], outputs=[x], random="inputs")
    noise = _noise(m)
    draws = m.run(**noise)[0]
    u = next(iter(noise.values()))
    norm = 2 * np.pi * special.i0e(kappa)
    for j in range(0, N, 50):
        f = quad(lambda t: np.exp(kappa * (np.cos(t) - 1)) / norm, -np.pi, draws[j], epsabs=1e-15, limit=200,
                 points=[0.0] if draws[j] > 0 else None)[0]
        assert abs(f - u[j]) < 1e-12
    assert stats.kstest(draws, stats.vonmises(kappa).cdf).pvalue > P_MIN


def test_vonmises_takes_parameters_per_element_and_the_onnx_policy():
    mu, kappa = pt.vector("mu"), pt.vector("kappa")
    x = pt.random.vonmises(mu, kappa, rng=_rng())
    locs, concs = np.array([-3.0, 0.0, 3.0, 1.0] * 500), np.array([1.0, 10.0, 0.1, 200.0] * 500)
    draws = compile_to_onnx([mu, kappa], outputs=[x], random="onnx").run(locs, concs)[0]
    assert draws.shape == (2000,) and (np.abs(draws) <= np.pi).all()
    for j in range(4):
        assert stats.kstest(_centered(draws[j::4], locs[j]), stats.vonmises(concs[j]).cdf).pvalue > P_MIN
