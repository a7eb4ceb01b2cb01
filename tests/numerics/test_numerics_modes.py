"""``compile_to_onnx(numerics=...)``: the option is validated, and the
default ``"fast"`` mode emits one ONNX Where per float ``where`` (no
sign-of-zero repair) in a PyMC-style logp graph and its gradient, while
``"strict"`` keeps the sign-exact form. Both compute the same values."""

from collections import Counter

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from tests.helpers import pytensor_reference


def test_numerics_must_be_fast_or_strict():
    x = pt.vector("x")
    with pytest.raises(ValueError, match="'fast', 'strict'"):
        compile_to_onnx([x], outputs=[x + 1], numerics="exact")
    with pytest.raises(ValueError, match="numerics to compile_to_onnx"):
        compile_to_onnx([x], outputs=[x + 1], emit_options={"numerics": "strict"})


def logp_graph():
    """A Normal/StudentT-like logp in plain PyTensor with float ``switch``es
    (the way PyMC bounds parameters and truncates), summed, and its gradient
    with respect to ``mu`` and ``log_sigma``."""
    x = pt.vector("x", dtype="float64")
    mu = pt.scalar("mu", dtype="float64")
    log_sigma = pt.scalar("log_sigma", dtype="float64")
    nu = pt.constant(4.0)
    sigma = pt.exp(log_sigma)
    z = (x - mu) / sigma
    normal = -0.5 * z**2 - pt.log(sigma) - 0.5 * np.log(2 * np.pi)
    student = -(nu + 1) / 2 * pt.log(1 + z**2 / nu) - pt.log(sigma)
    body = pt.switch(pt.abs(z) < 3.0, normal, student)  # float condition, float branches
    logp = pt.switch(sigma > 0, body, -np.inf).sum()
    grads = pytensor.grad(logp, [mu, log_sigma])
    return [x, mu, log_sigma], [logp, *grads]


def float_wheres(ir_graph) -> int:
    return sum(1 for n in ir_graph.nodes if n.op == "where" and n.outputs[0].dtype.is_float)


@pytest.fixture(scope="module")
def compiled():
    inputs, outputs = logp_graph()
    return inputs, outputs, {mode: compile_to_onnx(inputs, outputs=outputs, numerics=mode)
                             for mode in ("fast", "strict")}


def test_fast_emits_one_where_per_float_where(compiled):
    _, _, models = compiled
    fast = models["fast"]
    n = float_wheres(fast.ir)
    assert n >= 4  # two switches and their gradients
    ops = Counter(node.op_type for node in fast.model.graph.node)
    assert ops["Where"] == n


def test_default_is_fast(compiled):
    inputs, outputs, models = compiled
    default = compile_to_onnx(inputs, outputs=outputs)
    assert len(default.model.graph.node) == len(models["fast"].model.graph.node)


def test_strict_repairs_the_sign_of_zero(compiled):
    _, _, models = compiled
    fast, strict = (Counter(n.op_type for n in models[m].model.graph.node) for m in ("fast", "strict"))
    assert strict["Where"] == 2 * fast["Where"]  # the selection and the sign flip
    assert sum(strict.values()) - sum(fast.values()) == 19 * fast["Where"]  # 19 nodes of repair each


def test_both_modes_compute_the_logp_and_gradient(compiled):
    inputs, outputs, models = compiled
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(50) * 4, np.float64(0.3), np.float64(-0.2)]
    want = pytensor_reference(inputs, outputs, values)
    for mode, m in models.items():
        for got, w in zip(m.run(*values), want):
            np.testing.assert_allclose(got, w, rtol=1e-13, err_msg=mode)
