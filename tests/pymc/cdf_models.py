"""PyMC models whose log-density needs CDFs (issue 26), written as a PyMC
user would, on generated data of ``n`` observations (seeded). Used by
``tests/pymc/test_cdf_models.py`` and ``bench/bench_pymc.py``.

Each builder takes ``n`` and returns a ``pymc.Model``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm


def censored_weibull(n: int = 100) -> pm.Model:
    """Survival regression: Weibull times with scale exp(a + X @ b),
    right-censored at the end of follow-up (``pm.Censored``; Weibull's
    log-survival is closed form)."""
    rng = np.random.default_rng(10)
    X = rng.normal(size=(n, 2))
    t = np.exp(1.0 + X @ np.array([0.4, -0.3])) * rng.weibull(1.5, size=n)
    follow_up = rng.uniform(1.0, 6.0, size=n)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 1, shape=2)
        alpha = pm.HalfNormal("alpha", 2)
        pm.Censored("t", pm.Weibull.dist(alpha=alpha, beta=pm.math.exp(a + pm.math.dot(X, b))),
                    lower=None, upper=follow_up, observed=np.minimum(t, follow_up))
    return model


def censored_gamma(n: int = 100) -> pm.Model:
    """Concentrations ~ Gamma(alpha, beta) below a detection limit reported
    at the limit (left-censored: ``log(gammainc)``)."""
    rng = np.random.default_rng(11)
    y = rng.gamma(2.5, 1 / 1.5, size=n)
    limit = 0.6
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2, 1)
        beta = pm.Gamma("beta", 2, 1)
        pm.Censored("y", pm.Gamma.dist(alpha=alpha, beta=beta), lower=limit, upper=None,
                    observed=np.maximum(y, limit))
    return model


def truncated_normal(n: int = 100) -> pm.Model:
    """Regression on data truncated below 0 (``pm.Truncated`` of Normal)."""
    rng = np.random.default_rng(12)
    X = rng.normal(size=n)
    y = 0.5 + 1.2 * X + rng.normal(size=n)
    keep = y > 0
    X, y = X[keep], y[keep]
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 2)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Truncated("y", pm.Normal.dist(a + b * X, sigma), lower=0.0, observed=y)
    return model


def truncated_poisson(n: int = 100) -> pm.Model:
    """Zero-truncated Poisson regression (the normalizer is
    ``log(1 - Poisson CDF(0))``, Poisson's CDF through ``gammaincc``), with an
    upper truncation at 30 too."""
    rng = np.random.default_rng(13)
    X = rng.normal(size=n)
    y = rng.poisson(np.exp(0.8 + 0.5 * X))
    keep = (y > 0) & (y <= 30)
    X, y = X[keep], y[keep]
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 1)
        pm.Truncated("y", pm.Poisson.dist(pm.math.exp(a + b * X)), lower=1, upper=30, observed=y)
    return model


def ordered_logistic(n: int = 100) -> pm.Model:
    """Ratings in 4 ordered categories from a latent regression with ordered cutpoints."""
    rng = np.random.default_rng(14)
    X = rng.normal(size=n)
    latent = 0.8 * X + rng.logistic(size=n)
    y = np.digitize(latent, [-1.0, 0.0, 1.2])
    with pm.Model() as model:
        b = pm.Normal("b", 0, 2)
        cut = pm.Normal("cut", 0, 3, shape=3, transform=pm.distributions.transforms.ordered,
                        initval=np.array([-1.0, 0.0, 1.0]))
        pm.OrderedLogistic("y", eta=b * X, cutpoints=cut, observed=y)
    return model


def skew_normal(n: int = 100) -> pm.Model:
    """Skewed measurements: a SkewNormal likelihood (its log-density needs ``erfc``)."""
    rng = np.random.default_rng(15)
    y = 1.0 + np.abs(rng.normal(size=n)) * 0.8 + rng.normal(scale=0.3, size=n)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        sigma = pm.HalfNormal("sigma", 2)
        alpha = pm.Normal("alpha", 0, 3)
        pm.SkewNormal("y", mu=mu, sigma=sigma, alpha=alpha, observed=y)
    return model


def gamma_logcdf(n: int = 100) -> pm.Model:
    """Interval-censored Gamma times: each observation contributes
    ``log(F(hi) - F(lo))`` through ``pm.logcdf`` (a CDF difference)."""
    rng = np.random.default_rng(16)
    t = 1.0 + rng.gamma(3.0, 1.0, size=n)  # intervals from 1 up: see docs/status.md on log(gammainc(a, 0))
    lo, hi = np.floor(t), np.floor(t) + 1.0
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2, 0.5)
        beta = pm.Gamma("beta", 2, 1)
        dist = pm.Gamma.dist(alpha=alpha, beta=beta)
        pm.Potential("interval", pm.math.logdiffexp(pm.logcdf(dist, hi), pm.logcdf(dist, lo)).sum())
    return model


def censored_student_t(n: int = 100) -> pm.Model:
    """Heavy-tailed measurements clipped by an instrument's range on both
    sides (``pm.Censored`` of StudentT: its log-CDF and log-survival need
    ``betainc``)."""
    rng = np.random.default_rng(17)
    y = np.clip(1.0 + 0.8 * rng.standard_t(4.0, size=n), -0.5, 2.5)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 2)
        sigma = pm.HalfNormal("sigma", 2)
        nu = pm.Gamma("nu", 4, 1)
        pm.Censored("y", pm.StudentT.dist(nu=nu, mu=mu, sigma=sigma), lower=-0.5, upper=2.5, observed=y)
    return model


def truncated_negative_binomial(n: int = 100) -> pm.Model:
    """Counts recorded only up to 12 (``pm.Truncated`` of NegativeBinomial:
    the normalizer is its CDF, ``betainc``), and a Binomial success count
    with a censored upper end (``pm.Censored``: the Binomial log-survival)."""
    rng = np.random.default_rng(18)
    X = rng.normal(size=n)
    y = rng.negative_binomial(3.0, 3.0 / (3.0 + np.exp(1.0 + 0.4 * X)))
    keep = y <= 12
    X, y = X[keep], y[keep]
    k = np.minimum(rng.binomial(20, 0.35, size=n), 10)
    with pm.Model() as model:
        a = pm.Normal("a", 0, 2)
        b = pm.Normal("b", 0, 1)
        alpha = pm.Gamma("alpha", 2, 0.5)
        p = pm.Beta("p", 2, 2)
        pm.Truncated("y", pm.NegativeBinomial.dist(mu=pm.math.exp(a + b * X), alpha=alpha), upper=12, observed=y)
        pm.Censored("k", pm.Binomial.dist(n=20, p=p), lower=None, upper=10, observed=k)
    return model


def censored_beta(n: int = 100) -> pm.Model:
    """Proportions reported as at most 0.05 or at least 0.95 (``pm.Censored``
    of Beta on both sides: ``log(betainc)`` and its complement)."""
    rng = np.random.default_rng(19)
    y = np.clip(rng.beta(2.0, 5.0, size=n), 0.05, 0.95)
    with pm.Model() as model:
        alpha = pm.Gamma("alpha", 2, 1)
        beta = pm.Gamma("beta", 2, 0.5)
        pm.Censored("y", pm.Beta.dist(alpha=alpha, beta=beta), lower=0.05, upper=0.95, observed=y)
    return model


CDF_MODELS = {f.__name__: f for f in (censored_weibull, censored_gamma, truncated_normal, truncated_poisson,
                                      ordered_logistic, skew_normal, gamma_logcdf, censored_student_t,
                                      truncated_negative_binomial, censored_beta)}
