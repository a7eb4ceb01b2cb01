"""The ``pytensor-onnx demo --model pymc`` job: a hierarchical PyMC model's
log-density and gradient compiled to ONNX, its MAP point found by SciPy
driving onnxruntime only, next to ``pymc.find_MAP``.

The model is the radon-style varying-intercepts regression on generated
data (seeded): ``J`` groups, ``n`` observations, one covariate,
non-centered intercepts ``a_j = mu_a + sigma_a * z_j``, ``y ~ Normal(a_g +
b x, sigma)`` with HalfNormal scales. The raw graph of
``model.logp(jacobian=False)`` and its gradient (``pytensor.grad``) w.r.t.
the value variables of the unconstrained space is compiled with
``compile_to_onnx`` (``pymc.find_MAP`` maximizes that same density, without
the transforms' Jacobians); ``scipy.optimize.minimize(method="L-BFGS-B")``
minimizes ``-logp`` with the ONNX model as its only oracle, from PyMC's
initial point; ``pymc.find_MAP`` (also L-BFGS-B with the same tolerances,
on PyTensor's compiled function) gives the comparison. Latency is the median per call of
logp+gradient in onnxruntime and in PyTensor.

Needs PyMC (the ``pymc`` extra, PyTensor 2.38).
"""

from __future__ import annotations

import statistics
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from compiler import compile_to_onnx

N_GROUPS = 8
N_OBS = 400
# Both optimizers run to a tight optimum (SciPy's default ftol stops L-BFGS-B
# early on the flat direction of a hierarchical scale).
TIGHT = {"ftol": 1e-15, "gtol": 1e-10, "maxiter": 20_000}


def hierarchical_model(seed: int = 0, n: int = N_OBS, groups: int = N_GROUPS):
    """The demo's PyMC model on generated data (``n`` observations in
    ``groups`` groups; true mu_a=1.5, sigma_a=0.5, b=-0.7, sigma=0.4)."""
    import pymc as pm

    rng = np.random.default_rng(seed)
    group = rng.integers(0, groups, size=n)
    x = rng.normal(size=n)
    a = 1.5 + 0.5 * rng.normal(size=groups)
    y = a[group] - 0.7 * x + 0.4 * rng.normal(size=n)
    with pm.Model() as model:
        mu_a = pm.Normal("mu_a", 0, 5)
        sigma_a = pm.HalfNormal("sigma_a", 2)
        z = pm.Normal("z", 0, 1, shape=groups)
        b = pm.Normal("b", 0, 5)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", mu_a + sigma_a * z[group] + b * x, sigma, observed=y)
    return model


@dataclass
class PymcDemoReport:
    """What the PyMC demo measured.

    Attributes:
        names: one label per entry of the raveled unconstrained point.
        map_onnx, map_pymc: the MAP point found through onnxruntime and by
            ``pymc.find_MAP`` (unconstrained space, raveled).
        logp_onnx, logp_pymc: the log-density at each.
        evaluations: calls of the ONNX model by the optimizer.
        latency_onnx, latency_pytensor: median seconds per logp+gradient call.
        node_count: ONNX nodes.
        max_logp_grad_diff: largest relative difference of logp and gradient
            between onnxruntime and PyTensor (C mode) at the initial point.
    """

    names: list
    map_onnx: np.ndarray
    map_pymc: np.ndarray
    logp_onnx: float
    logp_pymc: float
    evaluations: int
    latency_onnx: float
    latency_pytensor: float
    node_count: int
    max_logp_grad_diff: float

    @property
    def ok(self) -> bool:
        """Both optimizers agree (1e-4 on the point) and the oracle matched PyTensor."""
        return bool(np.allclose(self.map_onnx, self.map_pymc, rtol=1e-4, atol=1e-4)
                    and self.max_logp_grad_diff < 1e-10)


def median_seconds(call: Callable, runs: int = 200, clock: Callable[[], float] = time.perf_counter) -> float:
    """Median time in seconds of ``call()`` over ``runs`` calls, after 3
    warm-ups, read on ``clock`` (wall time by default; ``time.thread_time``
    counts only the calling thread's CPU time, which a loaded machine does
    not inflate, for calls that compute on the calling thread)."""
    for _ in range(3):
        call()
    times = []
    for _ in range(runs):
        t = clock()
        call()
        times.append(clock() - t)
    return statistics.median(times)


def run_pymc_demo(out_dir: str | Path = "demo-out", seed: int = 0,
                  log: Callable[[str], None] | None = print) -> PymcDemoReport:
    """Build the model, compile logp+gradient to ``out_dir/model.onnx``, find
    the MAP through onnxruntime and with ``pymc.find_MAP``; returns the report.

    Raises:
        ImportError: PyMC is not installed.
    """
    import pymc as pm
    import pytensor
    from scipy.optimize import minimize


    log = log or (lambda line: None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = hierarchical_model(seed)
    # pymc.find_MAP maximizes the density of the constrained values: logp
    # without the transforms' Jacobian terms, on the unconstrained space.
    logp = model.logp(jacobian=False)
    vars_ = model.value_vars
    outputs = [logp, *pytensor.grad(logp, vars_)]
    f = pytensor.function(vars_, outputs)  # PyTensor's default (C) mode: the latency peer
    log("compiling logp + gradient to ONNX ...")
    compiled = compile_to_onnx(vars_, outputs=outputs)
    compiled.save(out / "model.onnx")
    session = compiled.session

    start = model.initial_point()
    shapes = [np.shape(start[v.name]) for v in vars_]
    sizes = [int(np.prod(sh)) for sh in shapes]
    names = [f"{v.name}[{i}]" if sh else v.name for v, sh, k in zip(vars_, shapes, sizes) for i in range(k)]

    def feed(x):
        parts = np.split(np.asarray(x, dtype=np.float64), np.cumsum(sizes)[:-1])
        return {name: p.reshape(sh) for name, p, sh in zip(compiled.input_names, parts, shapes)}

    def run(x):
        logp, *grads = session.run(None, feed(x))
        return float(logp), np.concatenate([np.ravel(g) for g in grads])

    x0 = np.concatenate([np.ravel(start[v.name]) for v in vars_])
    args0 = list(feed(x0).values())
    want = f(*args0)
    got = session.run(None, feed(x0))
    diff = max(float(np.max(np.abs(g - w)) / max(np.max(np.abs(w)), 1e-300)) for g, w in zip(got, want))

    calls = 0

    def neg_logp_and_grad(x):
        nonlocal calls
        calls += 1
        logp, grad = run(x)
        return -logp, -grad

    log("finding the MAP with scipy.optimize.minimize driven by onnxruntime ...")
    result = minimize(neg_logp_and_grad, x0, jac=True, method="L-BFGS-B", options=TIGHT)
    log("finding the MAP with pymc.find_MAP ...")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with model:
            map_pm = pm.find_MAP(progressbar=False, method="L-BFGS-B", maxeval=20_000, options=TIGHT)
    x_pm = np.concatenate([np.ravel(map_pm[v.name]) for v in vars_])
    feed0 = feed(x0)
    return PymcDemoReport(
        names, result.x, x_pm, -float(result.fun), run(x_pm)[0], calls,
        median_seconds(lambda: session.run(None, feed0)), median_seconds(lambda: f(*args0)),
        len(compiled.model.graph.node), diff)


def format_pymc_report(r: PymcDemoReport) -> str:
    """The table ``pytensor-onnx demo --model pymc`` prints."""
    lines = ["== pytensor-onnx demo: hierarchical PyMC model, MAP through onnxruntime ==",
             f"{'parameter (unconstrained)':<28} {'ONNX + scipy':>14} {'pymc.find_MAP':>14}"]
    lines += [f"{n:<28} {a:>14.6f} {b:>14.6f}" for n, a, b in zip(r.names, r.map_onnx, r.map_pymc)]
    lines += [f"{'logp at the MAP':<28} {r.logp_onnx:>14.6f} {r.logp_pymc:>14.6f}",
              f"optimizer calls of the ONNX model: {r.evaluations}",
              f"ONNX nodes: {r.node_count}; logp/grad vs PyTensor at the start: {r.max_logp_grad_diff:.1e} (relative)",
              f"latency per logp+grad call: onnxruntime {r.latency_onnx * 1e6:.1f} us, "
              f"PyTensor {r.latency_pytensor * 1e6:.1f} us (ratio {r.latency_onnx / r.latency_pytensor:.2f})",
              f"MAP points agree (1e-4): {'yes' if r.ok else 'NO'}"]
    return "\n".join(lines)
