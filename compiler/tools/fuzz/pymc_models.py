"""Seeded random small PyMC models: the fuzzer's ``pymc-model`` family
(``generate_pymc_model``; ``fuzz(..., family="pymc-model")``), PyTensor
2.38 with PyMC.

Where the ``pymc`` family takes one distribution's log-density, a program
here builds a whole model as users write them, in one ``with pm.Model()``
line, and takes the joint log-density ``model.logp()`` (PyMC's transforms
and their Jacobians included) or its gradient: what a sampler asks of a
model. The pieces, chosen from the seed:

- a location ``mu`` (Normal, StudentT or Laplace prior) and a scale
  ``sigma`` (HalfNormal, Exponential, Gamma, LogNormal, HalfCauchy or
  InverseGamma: a log transform);
- optionally group effects ``theta`` of 2-4 groups, centered
  (``Normal(mu, sigma)``) or non-centered (``mu + sigma * z``), read
  through an integer group index;
- optionally regression weights ``beta`` against a design matrix;
- optionally category weights ``w ~ Dirichlet`` (the simplex transform)
  with a Categorical outcome of their own;
- a likelihood of the linear predictor ``eta``: Normal, StudentT (with a
  Gamma prior on ``nu``), Poisson, Bernoulli (``logit_p``), Binomial,
  NegativeBinomial or Gamma, its data a graph input.

The model's value variables (transformed: ``sigma_log__``,
``w_simplex__``) are replaced by graph inputs with
``pytensor.graph.replace.graph_replace``, so the program's inputs are the
data and the unconstrained point; the values are drawn from N(0, 0.7).
Both fuzzer paths run: the raw ``model.logp()`` graph and its default-mode
function.
"""

from __future__ import annotations

import numpy as np

from compiler.tools.fuzz.generate import Program

LOCATION_PRIORS = ("pm.Normal('mu', 0, 2)", "pm.StudentT('mu', nu=4, mu=0, sigma=2)", "pm.Laplace('mu', 0, 1)")
SCALE_PRIORS = ("pm.HalfNormal('sigma', 1)", "pm.Exponential('sigma', 1)", "pm.Gamma('sigma', 2, 2)",
                "pm.LogNormal('sigma', 0, 0.5)", "pm.HalfCauchy('sigma', 1)", "pm.InverseGamma('sigma', 3, 2)")
LIKELIHOODS = ("Normal", "StudentT", "Poisson", "Bernoulli", "Binomial", "NegativeBinomial", "Gamma")
TRIALS = 10  # the Binomial likelihood's number of trials


def generate_pymc_model(seed: int, max_steps: int = 3) -> Program:
    """A random small PyMC model's log-density or gradient program from
    ``seed`` (deterministic); ``max_steps`` is unused (one model per
    program)."""
    rng = np.random.default_rng([seed, 19])
    prog = Program(seed=seed)
    n = int(rng.integers(1, 9))
    likelihood = LIKELIHOODS[seed % len(LIKELIHOODS)]
    values: list[tuple[str, tuple]] = []  # (statement, value shape) of each free RV, in creation order
    statements = [f"mu = {rng.choice(LOCATION_PRIORS)}", f"sigma = {rng.choice(SCALE_PRIORS)}"]
    values += [("mu", ()), ("sigma", ())]
    eta = "mu"
    if rng.random() < 0.5:
        groups = int(rng.integers(2, 5))
        idx = _input(prog, "int64", (None,), rng.integers(0, groups, n))
        if rng.random() < 0.5:
            statements.append(f"theta = pm.Normal('theta', mu, sigma, shape={groups})")
            values.append(("theta", (groups,)))
        else:
            statements.append(f"z = pm.Normal('z', 0, 1, shape={groups}); theta = mu + sigma * z")
            values.append(("z", (groups,)))
        eta = f"theta[{idx}]"
    if rng.random() < 0.5:
        p = int(rng.integers(1, 4))
        x = _input(prog, "float64", (None, p), rng.normal(0, 1, (n, p)))
        statements.append(f"beta = pm.Normal('beta', 0, 1, shape={p})")
        values.append(("beta", (p,)))
        eta = f"{eta} + pt.dot({x}, beta)"
    if rng.random() < 0.3:
        k = int(rng.integers(2, 5))
        c = _input(prog, "int64", (None,), rng.integers(0, k, n))
        statements.append(f"w = pm.Dirichlet('w', a=np.ones({k})); pm.Categorical('c', p=w, observed={c})")
        values.append(("w", (k - 1,)))
    statements.append(_likelihood(rng, prog, likelihood, eta, n, values, statements))
    prog.lines.append('pm = __import__("pymc")')
    prog.lines.append("with pm.Model() as model: " + "; ".join(statements))
    point = []
    for _, shape in values:
        point.append(_input(prog, "float64", shape, rng.normal(0, 0.7, shape)))
    prog.lines.append(f"v2 = pytensor.graph.replace.graph_replace(model.logp(), "
                      f"dict(zip(model.value_vars, [{', '.join(point)}])), strict=True)")
    if rng.random() < 0.5:
        prog.lines.append(f"v3 = pt.concatenate([g.ravel() for g in pytensor.grad(v2, [{', '.join(point)}])])")
    return prog


def _input(prog: Program, dtype: str, static: tuple, values) -> str:
    """A new graph input holding ``values``; returns its name."""
    name = f"x{len(prog.inputs)}"
    prog.inputs.append((name, dtype, static, np.asarray(values, dtype)))
    return name


def _likelihood(rng, prog: Program, likelihood: str, eta: str, n: int, values: list,
                statements: list) -> str:
    """The observed RV's statement, its data a new input (counts, 0/1,
    positive or real values as the likelihood's support)."""
    if likelihood in ("Normal", "StudentT", "Gamma"):
        raw = rng.normal(0, 2, n) if likelihood != "Gamma" else np.exp(rng.normal(0, 1, n))
        y = _input(prog, "float64", (None,), raw)
        if likelihood == "Normal":
            return f"pm.Normal('y', {eta}, sigma, observed={y})"
        if likelihood == "Gamma":
            return f"pm.Gamma('y', mu=pt.exp({eta}), sigma=sigma, observed={y})"
        statements.append("nu = pm.Gamma('nu', 2, 0.1)")
        values.append(("nu", ()))
        return f"pm.StudentT('y', nu=nu, mu={eta}, sigma=sigma, observed={y})"
    if likelihood == "Bernoulli":
        y = _input(prog, "int64", (None,), rng.integers(0, 2, n))
        return f"pm.Bernoulli('y', logit_p={eta}, observed={y})"
    if likelihood == "Binomial":
        y = _input(prog, "int64", (None,), rng.integers(0, TRIALS + 1, n))
        return f"pm.Binomial('y', n={TRIALS}, logit_p={eta}, observed={y})"
    y = _input(prog, "int64", (None,), rng.integers(0, 12, n))
    if likelihood == "Poisson":
        return f"pm.Poisson('y', pt.exp({eta}), observed={y})"
    return f"pm.NegativeBinomial('y', mu=pt.exp({eta}), alpha=sigma, observed={y})"
