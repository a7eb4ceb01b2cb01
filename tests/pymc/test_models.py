"""The twelve models of issue 9 in every form samplers use (``forms.py``):
each compiles, stays float64, and its logp and gradient match a reference
to 1e-12 relative at 5 random points of the unconstrained space.

The reference is the raw graph (``model.logp()`` + ``pytensor.grad``)
evaluated by PyTensor in Python mode, whose ops call NumPy/SciPy (e.g.
``scipy.special.psi``; PyTensor's C ``psi`` is off by ~3e-9). Compared
normwise: ``|onnx - ref| <= 1e-12 * max|ref|`` per output.
"""

import numpy as np
import pytest

pm = pytest.importorskip("pymc")

import pytensor  # noqa: E402

from ir import DType  # noqa: E402
from tests.helpers import REFERENCE_MODE  # noqa: E402
from tests.pymc.forms import FORMS, build_form, random_points  # noqa: E402
from tests.pymc.models import MODELS  # noqa: E402

# The raw StudentT graph's gradient w.r.t. log(nu) sums psi((nu+1)/2) -
# psi(nu/2) terms of size ~1 over the observations into a result ~0.07:
# a cancellation of ~1e3, so a 1-ulp difference between our psi and SciPy's
# shows as ~1e-13 absolute (1.1e-12 relative to the result). Allowed: 1e-11.
TOLERANCE = {("student_t", "raw"): 1e-11}


def _reference(model):
    logp = model.logp()
    grads = pytensor.grad(logp, model.value_vars)
    fn = pytensor.function(model.value_vars, [logp, *grads], mode=REFERENCE_MODE)
    names = [v.name for v in model.value_vars]

    def ref(point, form):
        logp, *g = fn(*(point[n] for n in names))
        if form == "raw":
            return [logp, *g]
        flat = np.concatenate([np.ravel(x) for x in g])
        return [np.asarray(logp), flat]

    return ref


def _cases():
    for name in MODELS:
        for form in FORMS:
            marks = []
            if form == "compiled":  # two more C compilations per model: the slow job
                marks.append(pytest.mark.slow)
            yield pytest.param(name, form, marks=marks, id=f"{name}-{form}")


@pytest.fixture(scope="module")
def models():
    cache = {}

    def get(name):
        if name not in cache:
            model = MODELS[name](50)
            cache[name] = (model, _reference(model), random_points(model, 5, seed=1))
        return cache[name]

    return get


@pytest.mark.parametrize("name, form", list(_cases()))
def test_model_form_matches_reference(models, name, form):
    model, ref, points = models(name)
    compiled = build_form(model, form)
    for m in compiled.compiled:
        floats = {v.dtype for node in m.ir for v in node.outputs if v.dtype.is_float}
        assert floats <= {DType.FLOAT64}, f"{name}/{form}: {floats}"
    for point in points:
        got, want = compiled.onnx(point), ref(point, form)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == np.float64 and g.shape == np.shape(w)
            scale = max(np.max(np.abs(w)), 1e-300)
            tol = TOLERANCE.get((name, form), 1e-12)
            assert np.max(np.abs(g - w)) <= tol * scale, f"{name}/{form} output {i}"
