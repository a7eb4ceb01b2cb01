"""Sampling through onnxruntime (slow job): the PyMC front door's models
drive real samplers, and their posteriors agree with reference samplers on
the same model.

- nutpie (``LogpDlogp.to_nutpie()``, ``from_pyfunc`` calling the
  single-point model) and
- emcee (``vectorize=True``, calling the batched model once per ensemble
  half-step),

each against one reference posterior per model: NUTS with nutpie's Numba
backend (what ``pm.sample(nuts_sampler="nutpie")`` runs; one reference for
both tests keeps the slow job's time down, PyMC's own Python NUTS would add
~25 s per model).

The statistical check, per scalar parameter (``_compare``), with a stated
false-alarm rate: the posterior means differ by at most ``Z = 4.5`` standard
errors of their difference (``sqrt(mcse_a^2 + mcse_b^2)``, ArviZ's MCSE):
P(|N(0,1)| > 4.5) = 6.8e-6 per comparison; the standard deviations by at
most ``SD_TOL = 10%``: an sd estimated from ESS n draws has relative
standard error ~1/sqrt(2n), so with bulk ESS >= ``MIN_ESS = 1500`` on both
sides (asserted: the rate holds only then) the ratio's is <= 0.0258 and 10%
is >= 3.87 of them: P <= 1.1e-4 per comparison. Over the 24 scalar
parameters compared here the chance that correct code fails is <= 2.8e-3.
The seeds are fixed, so every run draws the same samples.
"""

import numpy as np
import pytest

pm = pytest.importorskip("pymc")
nutpie = pytest.importorskip("nutpie")
emcee = pytest.importorskip("emcee")

import arviz as az  # noqa: E402

from compiler.pymc_model import compile_logp_dlogp  # noqa: E402
from tests.pymc.models import MODELS  # noqa: E402

pytestmark = pytest.mark.extended  # minutes of sampling per model: by hand (pytest -m extended)
SAMPLED = ("linear_regression", "logistic_regression", "poisson_glm")
Z, SD_TOL, MIN_ESS = 4.5, 0.10, 1500


def _compare(got: dict, want: dict, what: str) -> int:
    """Assert the posterior check on every scalar of every variable of
    ``want`` (name -> draws ``[chain, draw, ...]``); returns how many scalars
    were compared."""
    compared = 0
    for name, ref in want.items():
        a, b = np.asarray(got[name]), np.asarray(ref)
        for idx in np.ndindex(*a.shape[2:]):
            sa, sb = a[(..., *idx)], b[(..., *idx)]
            ess = min(float(az.ess(sa)), float(az.ess(sb)))
            assert ess >= MIN_ESS, f"{what} {name}{idx}: ESS {ess:.0f} < {MIN_ESS}"
            se = np.hypot(np.ravel(az.mcse(sa))[0], np.ravel(az.mcse(sb))[0])
            diff = abs(sa.mean() - sb.mean())
            assert diff <= Z * se, f"{what} {name}{idx}: means {sa.mean():.4f} vs {sb.mean():.4f} ({diff / se:.1f} SE)"
            ratio = sa.std() / sb.std()
            assert abs(ratio - 1) <= SD_TOL, f"{what} {name}{idx}: sd ratio {ratio:.3f}"
            compared += 1
    return compared


def _posterior(trace, names) -> dict:
    return {n: trace.posterior[n].values for n in names}


NUTS = dict(chains=2, draws=1500, tune=500, progress_bar=False)


@pytest.fixture(scope="module")
def reference():
    """Model name -> (model, reference posterior draws by free variable)."""
    cache = {}

    def get(name):
        if name not in cache:
            model = MODELS[name](50)
            trace = nutpie.sample(nutpie.compile_pymc_model(model), seed=7, **NUTS)
            cache[name] = model, _posterior(trace, [rv.name for rv in model.free_RVs])
        return cache[name]

    return get


@pytest.mark.parametrize("name", SAMPLED)
def test_nutpie_through_onnxruntime_matches_nuts_numba(name, reference):
    model, want = reference(name)
    f = compile_logp_dlogp(model)
    onnx_trace = nutpie.sample(f.to_nutpie(), seed=24, **NUTS)
    assert _compare(_posterior(onnx_trace, want), want, f"{name} nutpie") == f.size


@pytest.mark.parametrize("name", SAMPLED)
def test_emcee_vectorized_through_onnxruntime_matches_nuts_numba(name, reference):
    model, want = reference(name)
    f = compile_logp_dlogp(model, "walkers")
    walkers, steps, burn = 32, 5000, 500

    def log_prob(thetas):  # emcee's vectorize=True: [walkers/2, d] -> [walkers/2]
        return f(thetas)[0]

    rng = np.random.default_rng(24)
    start = f.initial_point + 0.1 * rng.normal(size=(walkers, f.size))
    sampler = emcee.EnsembleSampler(walkers, f.size, log_prob, vectorize=True)
    sampler.random_state = np.random.RandomState(24).get_state()
    sampler.run_mcmc(start, steps, progress=False)
    chain = sampler.get_chain(discard=burn)  # [steps, walkers, d]
    draws = f.unravel(chain.reshape(-1, f.size))
    # walkers are not independent chains: thin by the integrated autocorrelation time and treat
    # each walker's thinned draws as one chain of (nearly) independent draws
    tau = int(np.ceil(np.max(sampler.get_autocorr_time(discard=burn, quiet=True))))
    got = {rv.name: draws[rv.name].reshape(steps - burn, walkers, *draws[rv.name].shape[1:])[::tau].swapaxes(0, 1)
           for rv in model.free_RVs}
    assert _compare(got, want, f"{name} emcee") == f.size


def test_the_docs_sampling_example_runs_as_written():
    """The nutpie/emcee example of ``docs/pymc.md`` ("Sampling with onnxruntime"), the block
    ``tests/docs/test_examples.py`` leaves to this test (RUN_ELSEWHERE)."""
    from tests.docs.pages import code_blocks
    from tests.docs.test_examples import RUN_ELSEWHERE

    block = next(b for b in code_blocks("pymc.md") if ("pymc.md", b.code.splitlines()[0]) in RUN_ELSEWHERE)
    scope: dict = {}
    exec(compile(block.code, block.where, "exec"), scope)
    assert scope["draws"]["mu"].shape == scope["draws"]["sigma"].shape == (32 * 1500,)
    assert abs(float(scope["trace"].posterior["mu"].mean()) - scope["draws"]["mu"].mean()) < 0.2
