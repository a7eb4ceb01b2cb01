"""Seeded random PyMC log-density programs: the fuzzer's ``pymc`` family
(``generate_pymc``; ``fuzz(..., family="pymc")``), PyTensor 2.38 with PyMC.

A program (``generate.py``'s ``Program``) builds the elementwise
log-density ``pm.logp`` (or ``pm.logcdf``, ``pm.logccdf``) of one PyMC
distribution at a vector of values, its parameters graph inputs, then either
keeps it, sums it, or takes the gradient of the sum with respect to one
parameter (``pytensor.grad``): the graphs a sampler or an optimizer asks of
a model. Parameters are drawn inside their domains (PyMC raises for others:
``CheckParameterValue``); values are drawn inside the support and, for some
programs, a few outside it or on its edge, where the density is -inf or a
limit. Both fuzzer paths run, so PyMC's graph is also compiled from a
default-mode ``pytensor.function``.

Distributions (parameter domains from PyMC's docs): Normal, HalfNormal,
Gamma, Beta, StudentT, Exponential, LogNormal, Laplace, Cauchy, HalfCauchy,
Logistic, Weibull, InverseGamma, Poisson, Binomial, NegativeBinomial. CDFs
(``logcdf``/``logccdf``) for Normal, Exponential, Gamma (``gammainc``),
Poisson (``gammaincc``), Laplace, Logistic, Weibull.
"""

from __future__ import annotations

import numpy as np

from compiler.tools.fuzz.generate import POSITIVE, REAL, UNIT, Program, domain_values

# name -> (parameters with their domains, support of the value, value dtype)
DISTRIBUTIONS = {
    "Normal": ({"mu": REAL, "sigma": POSITIVE}, REAL, "float"),
    "HalfNormal": ({"sigma": POSITIVE}, POSITIVE, "float"),
    "Gamma": ({"alpha": POSITIVE, "beta": POSITIVE}, POSITIVE, "float"),
    "Beta": ({"alpha": POSITIVE, "beta": POSITIVE}, UNIT, "float"),
    "StudentT": ({"nu": POSITIVE, "mu": REAL, "sigma": POSITIVE}, REAL, "float"),
    "Exponential": ({"lam": POSITIVE}, POSITIVE, "float"),
    "LogNormal": ({"mu": REAL, "sigma": POSITIVE}, POSITIVE, "float"),
    "Laplace": ({"mu": REAL, "b": POSITIVE}, REAL, "float"),
    "Cauchy": ({"alpha": REAL, "beta": POSITIVE}, REAL, "float"),
    "HalfCauchy": ({"beta": POSITIVE}, POSITIVE, "float"),
    "Logistic": ({"mu": REAL, "s": POSITIVE}, REAL, "float"),
    "Weibull": ({"alpha": POSITIVE, "beta": POSITIVE}, POSITIVE, "float"),
    "InverseGamma": ({"alpha": POSITIVE, "beta": POSITIVE}, POSITIVE, "float"),
    "Poisson": ({"mu": POSITIVE}, "count", "int"),
    "Binomial": ({"n": "trials", "p": UNIT}, "count", "int"),
    "NegativeBinomial": ({"mu": POSITIVE, "alpha": POSITIVE}, "count", "int"),
}
CDFS = ("Normal", "Exponential", "Gamma", "Poisson", "Laplace", "Logistic", "Weibull")


def generate_pymc(seed: int, max_steps: int = 3) -> Program:
    """A random PyMC log-density program from ``seed`` (deterministic);
    ``max_steps`` is unused (one distribution per program)."""
    rng = np.random.default_rng([seed, 11])
    name = sorted(DISTRIBUTIONS)[seed % len(DISTRIBUTIONS)]
    params, support, kind = DISTRIBUTIONS[name]
    dtype = str(rng.choice(["float32", "float64"]))
    prog = Program(seed=seed, precision="float32" if dtype == "float32" else None)
    n = int(rng.integers(1, 7))
    args = []
    for i, (param, domain) in enumerate(params.items()):
        scalar = rng.random() < 0.5
        data = _draw(rng, domain, () if scalar else (n,), dtype)
        static = rng.random() < 0.5
        prog.inputs.append((f"x{i}", str(data.dtype), tuple(d if static else None for d in data.shape), data))
        args.append(f"{param}=x{i}")
    value = _values(rng, support, kind, n, dtype, prog.inputs)
    v = f"x{len(prog.inputs)}"
    prog.inputs.append((v, str(value.dtype), (None,), value))
    fn = "logp" if name not in CDFS or rng.random() < 0.5 else str(rng.choice(["logcdf", "logccdf"]))
    prog.lines.append('pm = __import__("pymc")')
    prog.lines.append(f"v1 = pm.{fn}(pm.{name}.dist({', '.join(args)}), {v})")
    follow = rng.random()
    if follow < 0.3:
        prog.lines.append("v2 = v1.sum()")
    elif follow < 0.6:
        wrt = next((f"x{i}" for i, (_, d) in enumerate(params.items()) if d in (REAL, POSITIVE, UNIT)), None)
        if wrt is not None:
            prog.lines.append(f"v2 = pytensor.grad(v1.sum(), {wrt})")
    return prog


def _draw(rng: np.random.Generator, domain: str, shape: tuple, dtype: str) -> np.ndarray:
    """Parameters inside ``domain``: reals in [-3, 3], positives in
    [0.2, 6] (log-uniform), unit-interval values in [0.05, 0.95], trials
    in 1..20 (int64)."""
    if domain == "trials":
        return rng.integers(1, 21, shape).astype("int64")
    return domain_values(rng, domain, shape, dtype, positive_high=6)


def _values(rng, support: str, kind: str, n: int, dtype: str, inputs: list) -> np.ndarray:
    """``n`` values in ``support``; in about a third of the programs one or
    two are outside it or on its edge (-1, 0 or 1.5 where those are)."""
    if kind == "int":
        trials = next((d for _, dt, _, d in inputs if dt == "int64"), None)
        high = int(np.min(trials)) if trials is not None else 12
        x = rng.integers(0, high + 1, n).astype("int64")
        if rng.random() < 0.3:
            x[0] = -1
        return x
    if support == REAL:
        x = rng.normal(0, 2, n)
    elif support == POSITIVE:
        x = np.exp(rng.uniform(np.log(0.05), np.log(10), n))
    else:
        x = rng.uniform(0.02, 0.98, n)
    if rng.random() < 0.3 and support != REAL:
        x[0] = float(rng.choice([-1.0, 0.0] if support == POSITIVE else [-0.5, 0.0, 1.0, 1.5]))
    return np.asarray(x, dtype)
