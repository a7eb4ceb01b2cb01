"""The twelve PyMC models of issue 9, written as a PyMC user would, on
generated data of ``n`` observations (seeded, so every call builds the same
data). Used by ``tests/pymc`` and ``bench/bench_pymc.py``.

Each builder takes ``n`` (observations) and returns a ``pymc.Model``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm


def linear_regression(n: int = 100) -> pm.Model:
    """y ~ Normal(a + X @ b, sigma) with 3 covariates."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = 1.0 + X @ np.array([0.5, -1.0, 2.0]) + rng.normal(scale=0.7, size=n)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 10)
        b = pm.Normal("b", 0, 5, shape=3)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", a + pm.math.dot(X, b), sigma, observed=y)
    return model


def logistic_regression(n: int = 100) -> pm.Model:
    """y ~ Bernoulli(logit_p = a + X @ b)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 3))
    p = 1 / (1 + np.exp(-(0.3 + X @ np.array([1.0, -2.0, 0.5]))))
    y = rng.binomial(1, p)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 5)
        b = pm.Normal("b", 0, 2.5, shape=3)
        pm.Bernoulli("y", logit_p=a + pm.math.dot(X, b), observed=y)
    return model


def eight_schools(n: int = 100) -> pm.Model:
    """Non-centered eight schools (``n`` schools; the classic has 8)."""
    rng = np.random.default_rng(2)
    sigma = rng.uniform(9, 18, size=n)
    y = rng.normal(8, 10, size=n)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        tau = pm.HalfCauchy("tau", 5)
        theta_t = pm.Normal("theta_t", 0, 1, shape=n)
        theta = pm.Deterministic("theta", mu + tau * theta_t)
        pm.Normal("y", theta, sigma, observed=y)
    return model


def poisson_glm(n: int = 100) -> pm.Model:
    """Counts ~ Poisson(exp(a + X @ b))."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n, 2))
    y = rng.poisson(np.exp(0.5 + X @ np.array([0.3, -0.2])))
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 1, shape=2)
        pm.Poisson("y", mu=pm.math.exp(a + pm.math.dot(X, b)), observed=y)
    return model


def radon(n: int = 100) -> pm.Model:
    """Radon varying intercepts: 10 counties, a floor covariate."""
    rng = np.random.default_rng(4)
    county = rng.integers(0, 10, size=n)
    floor = rng.integers(0, 2, size=n).astype(float)
    y = rng.normal(1.5, 0.3, size=10)[county] - 0.6 * floor + rng.normal(scale=0.7, size=n)
    with pm.Model() as model:
        mu_a = pm.Normal("mu_a", 0, 10)
        sigma_a = pm.HalfNormal("sigma_a", 5)
        a = pm.Normal("a", mu_a, sigma_a, shape=10)
        b = pm.Normal("b", 0, 10)
        eps = pm.HalfCauchy("eps", 5)
        pm.Normal("y", a[county] + b * floor, eps, observed=y)
    return model


def student_t(n: int = 100) -> pm.Model:
    """Robust regression: StudentT likelihood with a Gamma prior on nu."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=n)
    y = 1 + 2 * x + rng.standard_t(4, size=n)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 10)
        b = pm.Normal("b", 0, 10)
        sigma = pm.HalfNormal("sigma", 5)
        nu = pm.Gamma("nu", 2, 0.1)
        pm.StudentT("y", nu=nu, mu=a + b * x, sigma=sigma, observed=y)
    return model


def mixture(n: int = 100) -> pm.Model:
    """A 2-component Normal mixture with ordered means."""
    rng = np.random.default_rng(6)
    z = rng.random(n) < 0.3
    y = np.where(z, rng.normal(-2, 1, n), rng.normal(3, 1.5, n))
    with pm.Model() as model:
        w = pm.Dirichlet("w", np.ones(2))
        mu = pm.Normal("mu", np.array([-1.0, 1.0]), 5, shape=2,
                       transform=pm.distributions.transforms.ordered)
        sigma = pm.HalfNormal("sigma", 3, shape=2)
        pm.NormalMixture("y", w=w, mu=mu, sigma=sigma, observed=y)
    return model


def beta_binomial(n: int = 100) -> pm.Model:
    """Overdispersed counts: BetaBinomial(20, alpha, beta)."""
    rng = np.random.default_rng(7)
    y = rng.binomial(20, rng.beta(2, 5, size=n))
    with pm.Model() as model:
        alpha = pm.HalfNormal("alpha", 10)
        beta = pm.HalfNormal("beta", 10)
        pm.BetaBinomial("y", n=20, alpha=alpha, beta=beta, observed=y)
    return model


def ar2(n: int = 100) -> pm.Model:
    """An AR(2) series with a constant term."""
    rng = np.random.default_rng(8)
    y = np.zeros(n)
    for t in range(2, n):
        y[t] = 0.3 + 0.5 * y[t - 1] - 0.2 * y[t - 2] + rng.normal()
    with pm.Model() as model:
        rho = pm.Normal("rho", 0, 1, shape=3)
        sigma = pm.HalfNormal("sigma", 2)
        pm.AR("y", rho=rho, sigma=sigma, constant=True, init_dist=pm.Normal.dist(0, 10),
              observed=y)
    return model


def random_walk(n: int = 100) -> pm.Model:
    """A latent Gaussian random walk observed with noise."""
    rng = np.random.default_rng(9)
    y = np.cumsum(rng.normal(size=n)) + rng.normal(scale=0.5, size=n)
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1)
        obs_sigma = pm.HalfNormal("obs_sigma", 1)
        x = pm.GaussianRandomWalk("x", sigma=sigma, init_dist=pm.Normal.dist(0, 5), shape=n)
        pm.Normal("y", x, obs_sigma, observed=y)
    return model


def dirichlet_categorical(n: int = 100) -> pm.Model:
    """Categorical observations of 4 classes with a Dirichlet prior."""
    rng = np.random.default_rng(10)
    y = rng.choice(4, size=n, p=[0.1, 0.2, 0.3, 0.4])
    with pm.Model() as model:
        p = pm.Dirichlet("p", np.ones(4))
        pm.Categorical("y", p=p, observed=y)
    return model


def lkj_mvnormal(n: int = 100) -> pm.Model:
    """3-dimensional MvNormal with an LKJCholeskyCov prior."""
    rng = np.random.default_rng(11)
    cov = np.array([[1.0, 0.5, 0.2], [0.5, 2.0, -0.3], [0.2, -0.3, 1.5]])
    y = rng.multivariate_normal([1.0, -1.0, 0.5], cov, size=n)
    with pm.Model() as model:
        chol, _, _ = pm.LKJCholeskyCov("chol", n=3, eta=2.0, sd_dist=pm.Exponential.dist(1.0, shape=3))
        mu = pm.Normal("mu", 0, 5, shape=3)
        pm.MvNormal("y", mu=mu, chol=chol, observed=y)
    return model


MODELS = {f.__name__: f for f in (linear_regression, logistic_regression, eight_schools, poisson_glm,
                                  radon, student_t, mixture, beta_binomial, ar2, random_walk,
                                  dirichlet_categorical, lkj_mvnormal)}
