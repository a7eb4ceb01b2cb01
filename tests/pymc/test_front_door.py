"""The PyMC front door (``compiler/pymc_model.py``) on the twelve models of
issue 9: ``compile_logp_dlogp(model)`` and ``compile_logp_dlogp(model,
"points")`` give PyMC's ravelled, transformed logp and gradient, single-point
and batched at B = 1, 7 and 1024, equal to PyTensor's single-point values to
1e-12 relative (normwise, as ``test_models.py``); the ravel order is
``model.value_vars``'; ``unravel`` maps the initial point to PyMC's own
untransformed initial point (``make_initial_point_fn``)."""

import numpy as np
import pytest

pm = pytest.importorskip("pymc")

import pytensor  # noqa: E402
from pymc.initial_point import make_initial_point_fn  # noqa: E402

from compiler.pymc_model import compile_logp_dlogp  # noqa: E402
from tests.helpers import REFERENCE_MODE  # noqa: E402
from tests.pymc.forms import random_points  # noqa: E402
from tests.pymc.models import MODELS  # noqa: E402
from tests.pymc.test_models import TOLERANCE  # noqa: E402

# The main suite runs the four cheapest models (about 3-5 s each); the other
# eight (7-20 s each: vectorize_graph's shape inference and the references'
# compilation; LKJ's batched graphs alone take ~15 s) run in the slow job.
FAST = ("linear_regression", "logistic_regression", "eight_schools", "poisson_glm")


def _reference(model):
    """PyTensor (Python mode) logp and ravelled gradient at a point dict."""
    logp = model.logp()
    fn = pytensor.function(model.value_vars, [logp, *pytensor.grad(logp, model.value_vars)], mode=REFERENCE_MODE)
    names = [v.name for v in model.value_vars]

    def ref(point):
        logp, *g = fn(*(point[n] for n in names))
        return np.asarray(logp), np.concatenate([np.ravel(x) for x in g])

    return ref


def _close(got, want, tol, what):
    scale = max(np.max(np.abs(want)), 1e-300)
    err = np.max(np.abs(got - want)) / scale
    assert err <= tol, f"{what}: normwise relative error {err:.2e} > {tol:.0e}"


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n in FAST else [pytest.mark.extended])
                                  for n in MODELS])
def test_front_door_matches_pytensor_single_and_batched(name):
    model = MODELS[name](50)
    tol = TOLERANCE.get((name, "raw"), 1e-12)
    single, batched = compile_logp_dlogp(model), compile_logp_dlogp(model, "points")
    assert [e.name for e in single.ravel_order] == [v.name for v in model.value_vars]
    assert batched.compiled.onnx_model.graph.inputs[0].shape[0].value == "points"
    ref = _reference(model)
    points = random_points(model, 7, seed=1)
    X = np.stack([single.ravel(p) for p in points])
    np.testing.assert_array_equal(batched.ravel({k: np.stack([p[k] for p in points]) for k in points[0]}), X)
    wants = [ref(p) for p in points]
    for B in (1, 7):
        logp, dlogp = batched(X[:B])
        assert logp.shape == (B,) and dlogp.shape == (B, single.size) and logp.dtype == np.float64
        for b in range(B):
            _close(logp[b], wants[b][0], tol, f"{name} B={B} logp[{b}]")
            _close(dlogp[b], wants[b][1], tol, f"{name} B={B} dlogp[{b}]")
    for b, (x, want) in enumerate(zip(X, wants)):
        logp, dlogp = single(x)
        assert logp.shape == () and dlogp.shape == (single.size,)
        _close(logp, want[0], tol, f"{name} single logp[{b}]")
        _close(dlogp, want[1], tol, f"{name} single dlogp[{b}]")
    rng = np.random.default_rng(2)
    big = np.concatenate([X, single.initial_point + 0.5 * rng.normal(size=(1024 - 7, single.size))])
    logp, dlogp = batched(big)
    assert logp.shape == (1024,) and np.isfinite(logp).all()
    for b in range(1024):  # every row against the single-point model (itself checked above)
        want_logp, want_dlogp = single(big[b])
        _close(logp[b], want_logp, tol, f"{name} B=1024 logp[{b}]")
        _close(dlogp[b], want_dlogp, tol, f"{name} B=1024 dlogp[{b}]")


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n == "lkj_mvnormal" else [])
                                  for n in MODELS])
def test_unravel_round_trips_the_initial_point(name):
    model = MODELS[name](50)
    f = compile_logp_dlogp(model)
    start = model.initial_point()
    split = f.split(f.initial_point)
    assert split.keys() == start.keys()
    for k in start:
        np.testing.assert_array_equal(split[k], start[k])
    np.testing.assert_array_equal(f.ravel(split), f.initial_point)
    untransformed = make_initial_point_fn(model=model, return_transformed=False)(0)
    got = f.unravel(f.initial_point)
    assert set(got) == {rv.name for rv in [*model.free_RVs, *model.deterministics]}
    for rv in model.free_RVs:
        np.testing.assert_allclose(got[rv.name], untransformed[rv.name], rtol=1e-13, atol=1e-15)


def test_unravel_batched_rows_equal_single_points():
    model = MODELS["radon"](50)
    single, batched = compile_logp_dlogp(model), compile_logp_dlogp(model, "b")
    X = single.initial_point + np.random.default_rng(3).normal(size=(4, single.size))
    rows = batched.unravel(X)
    for b in range(4):
        for k, v in single.unravel(X[b]).items():
            np.testing.assert_allclose(rows[k][b], v, rtol=1e-14)
    assert rows["eps"].shape == (4,) and rows["a"].shape == (4, 10)


def test_bad_arguments_are_refused():
    model = MODELS["linear_regression"](10)
    with pytest.raises(TypeError, match="model must be a pymc.Model, got dict"):
        compile_logp_dlogp({})
    with pytest.raises(ValueError, match="batch must be None or a batch dim name"):
        compile_logp_dlogp(model, 3)
    with pytest.raises(TypeError, match="batches with batch=<dim name>, not vectorize="):
        compile_logp_dlogp(model, vectorize={"x": "b"})
    with pm.Model() as discrete:
        pm.Poisson("k", 3.0)
    with pytest.raises(ValueError, match="value variable\\(s\\) k are discrete"):
        compile_logp_dlogp(discrete)
    f = compile_logp_dlogp(model, "b")
    with pytest.raises(ValueError, match="rank 2"):
        f(f.initial_point)


def test_a_point_outside_the_support_is_minus_inf_for_that_point_only():
    """A parameter check (PyMC's ``CheckParameterValue``) of a batched model
    fails at the points that violate it, not at every point of the batch
    (``vectorize_graph`` alone makes it one ``all`` over the batch)."""
    with pm.Model() as model:
        s = pm.Normal("s", 1.0, 1.0)  # untransformed: s <= 0 is outside the Normal's sigma > 0
        pm.Normal("y", 0.0, s, observed=np.array([0.1, -0.3, 0.5]))
    single, batched = compile_logp_dlogp(model), compile_logp_dlogp(model, "points")
    X = np.array([[1.0], [-1.0], [0.5], [0.0]])
    logp, dlogp = batched(X)
    want = [single(x) for x in X]
    np.testing.assert_array_equal(np.isneginf(logp), [False, True, False, True])
    np.testing.assert_allclose(logp, [w[0] for w in want], rtol=1e-14)
    np.testing.assert_allclose(dlogp, np.stack([w[1] for w in want]), rtol=1e-14)
