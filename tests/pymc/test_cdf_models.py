"""The CDF-based models of issue 26 (``cdf_models.py``: censored, truncated,
ordered and interval-censored likelihoods, SkewNormal) in every form
samplers use (``forms.py``): each compiles, stays float64, and its logp and
gradient match the raw graph evaluated by PyTensor's Python mode (SciPy's
``gammainc``/``erfc``, the same ``ScalarLoop`` gradients) to 1e-12 relative
at 5 random points (1e-11 for ``gamma_logcdf``, see ``TOLERANCE``), normwise
per output as ``test_models.py``.

(PyTensor's C mode differs from its Python mode by up to 3e-10 on the
censored Gamma's gradient: its C ``psi``, inside the ``gammainc`` gradient
loop, is off by ~3e-9.)
"""

import numpy as np
import pytest

pm = pytest.importorskip("pymc")

import pytensor  # noqa: E402
from pytensor.graph.basic import ancestors  # noqa: E402

from compiler import compile_to_onnx  # noqa: E402

from ir import DType  # noqa: E402
from tests.pymc.cdf_models import CDF_MODELS  # noqa: E402
from tests.pymc.forms import FORMS, build_form, random_points  # noqa: E402
from tests.helpers import REFERENCE_MODE  # noqa: E402
from tests.pymc.test_models import _reference  # noqa: E402


# d/d alpha of log(F(hi) - F(lo)) divides PyTensor's gammainc gradient series (summed
# to 1e-10 absolute) by a CDF difference: one ulp of a log in the series moves the result
# by ~1e-12 relative. Allowed: 1e-11.
TOLERANCE = {"gamma_logcdf": 1e-11}


def _pytensor_float_dtypes(model) -> set:
    """The float dtypes of the raw logp graph's variables. PyMC's ``logpow``
    switches between the constants 0.0 and -inf, which PyTensor types float32
    (exact there) before the result is upcast: such nodes are PyTensor's own."""
    logp = model.logp()
    found = {DType.from_numpy(v.type.dtype) for v in ancestors([logp]) if hasattr(v.type, "dtype")}
    return {d for d in found if d.is_float} | {DType.FLOAT64}


# The betainc models: the censored Beta's raw form in the slow job (40-90 s each in 2.38: an
# 11 s compile of the betainc_grad ScalarLoops and PyTensor's Python-mode reference of them),
# every other form of them in the extended job (CI's 45-minute budget).
# tests/numerics/test_incomplete_beta.py checks the same gradients in the main suite.
BETAINC_MODELS = {"censored_student_t", "truncated_negative_binomial", "censored_beta"}
SLOW_BETAINC_CASES = {("censored_beta", "raw")}


def _cases():
    for name in CDF_MODELS:
        for form in FORMS:
            # "compiled": two C compilations per model; "ravel" repeats "raw" through PyMC's
            # sampler wrapper (the slow job runs both)
            if name in BETAINC_MODELS:
                marks = [pytest.mark.slow if (name, form) in SLOW_BETAINC_CASES else pytest.mark.extended]
            else:
                marks = [pytest.mark.slow] if form != "raw" else []
            yield pytest.param(name, form, marks=marks, id=f"{name}-{form}")


@pytest.fixture(scope="module")
def models():
    cache = {}

    def get(name):
        if name not in cache:
            model = CDF_MODELS[name](50)
            cache[name] = (model, _reference(model), random_points(model, 5, seed=1))
        return cache[name]

    return get


@pytest.mark.parametrize("name, form", list(_cases()))
def test_cdf_model_form_matches_reference(models, name, form):
    model, ref, points = models(name)
    compiled = build_form(model, form)
    for m in compiled.compiled:  # no float narrower than the PyTensor graph's own
        floats = {v.dtype for node in m.ir for v in node.outputs if v.dtype.is_float}
        assert floats <= _pytensor_float_dtypes(model), f"{name}/{form}: {floats}"
    for point in points:
        got, want = compiled.onnx(point), ref(point, form)
        assert len(got) == len(want) >= 2
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == np.float64 and g.shape == np.shape(w)
            scale = max(np.max(np.abs(w)), 1e-300)
            assert np.max(np.abs(g - w)) <= TOLERANCE.get(name, 1e-12) * scale, f"{name}/{form} output {i}"


def test_censored_gamma_reaches_the_incomplete_gamma():
    """The censored Gamma's log-density is the one that needs ``gammainc``:
    its compiled IR calls it (so the test above checks the new lowering)."""
    model = CDF_MODELS["censored_gamma"](20)
    compiled = build_form(model, "raw").compiled[0]
    assert any(node.op == "gammainc" for node in compiled.ir)


def test_censored_beta_reaches_the_incomplete_beta():
    """The censored Beta's log-density calls ``betainc`` (so the slow test above checks it),
    and its value matches PyTensor's Python mode to 1e-12 (the gradient: slow job)."""
    model = CDF_MODELS["censored_beta"](20)
    compiled = compile_to_onnx(model.value_vars, outputs=[model.logp()])
    assert any(node.op == "betainc" for node in compiled.ir)
    point = random_points(model, 1, seed=2)[0]
    inputs = [point[v.name] for v in model.value_vars]
    want = pytensor.function(model.value_vars, model.logp(), mode=REFERENCE_MODE)(*inputs)
    np.testing.assert_allclose(compiled.run(*inputs)[0], want, rtol=1e-12)
