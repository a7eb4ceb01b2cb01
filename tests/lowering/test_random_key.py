"""``random="key"`` (``rules/random_key.py``): generators as ``uint64[2]``
keys ``(seed, counter)`` and noise from the SplitMix64 stream of the seed.

Bit-exact where the contract is integer arithmetic: SplitMix64 against its
published reference outputs, the model's uniforms against the NumPy
reference of the stream and its uniform mapping (float64 and float32), the
next key's counter, the IR interpreter against onnxruntime. In distribution
elsewhere (KS at p > 1e-3 at fixed keys, as ``test_random.py``; its tables
run under ``"key"`` too): normal noise, scans, the PyTensor mode.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.random.type import random_generator_type
from scipy import special, stats

from compiler import compile_to_onnx
from compiler.lowering.rules.random_key import random_key, splitmix64, uniform_of_bits
from ir.interpreter import evaluate
from tests.lowering.test_random import P_MIN, _rng
from tests.lowering.test_random_control_flow import N, T, _check_walk, _walk


def _stream(key, start, count, dtype="float64"):
    """Uniforms ``start .. start + count - 1`` of the stream of ``key``'s seed (NumPy reference)."""
    return uniform_of_bits(splitmix64(key[0], np.arange(start, start + count, dtype=np.uint64)), dtype)


def test_splitmix64_is_the_reference_generator():
    """The first outputs of SplitMix64 seeded with 1234567 (Rosetta Code, "Pseudo-random
    numbers/Splitmix64", from Vigna's splitmix64.c)."""
    want = [6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431,
            16408922859458223821]
    assert splitmix64(1234567, np.arange(5, dtype=np.uint64)).tolist() == want


def test_uniform_mapping_is_exact_and_open():
    """The extreme bit patterns map to the grid's first and last midpoints, inside (0, 1)."""
    bits = np.array([0, 2 ** 64 - 1], dtype=np.uint64)
    assert uniform_of_bits(bits, "float64").tolist() == [2.0 ** -53, 1 - 2.0 ** -53]
    assert uniform_of_bits(bits, "float32").tolist() == [2.0 ** -24, 1 - 2.0 ** -24]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_chained_draws_read_the_stream_in_order(dtype):
    """Two draws from one chain: the first reads elements 0..11 (row-major), the second 12..16;
    the next key is ``(seed, 17)``; the IR interpreter gives the same bits as onnxruntime."""
    rng = random_generator_type("rng")
    r1, a = pt.random.uniform(size=(3, 4), rng=rng, dtype=dtype).owner.outputs
    r2, b = pt.random.uniform(-2.0, 2.0, size=(5,), rng=r1, dtype=dtype).owner.outputs
    m = compile_to_onnx([rng], outputs=[a, b, r2], random="key")
    assert m.input_names == ["rng"] and m.model.graph.input[0].type.tensor_type.elem_type == 13  # UINT64
    key = random_key(42)
    x, y, nxt = m.run(key)
    assert x.dtype == y.dtype == np.dtype(dtype) and nxt.dtype == np.uint64
    np.testing.assert_array_equal(x, _stream(key, 0, 12, dtype).reshape(3, 4))
    np.testing.assert_array_equal(y, (-2.0 + 4.0 * _stream(key, 12, 5, dtype)).astype(dtype))
    assert nxt.tolist() == [int(key[0]), 17]
    for got, want in zip(evaluate(m.ir, [key]), (x, y, nxt)):
        np.testing.assert_array_equal(got, want)


def test_next_key_continues_the_stream_across_runs():
    """Feeding a run's output key to the next run reads on: two runs of 6 draws equal one of 12;
    the same key repeats its draws; a fresh seed gives others."""
    rng = random_generator_type("rng")
    nxt, x = pt.random.normal(size=(6,), rng=rng).owner.outputs
    m = compile_to_onnx([rng], outputs=[x, nxt], random="key")
    twice = pt.random.normal(size=(12,), rng=rng)
    whole = compile_to_onnx([rng], outputs=[twice], random="key").run(random_key(5))[0]
    first, key = m.run(random_key(5))
    second, _ = m.run(key)
    np.testing.assert_array_equal(np.concatenate([first, second]), whole)
    np.testing.assert_allclose(whole, np.sqrt(2) * special.erfinv(2 * _stream(random_key(5), 0, 12) - 1),
                               rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(m.run(random_key(5))[0], first)
    assert not np.array_equal(m.run(random_key(6))[0], first)


def test_generators_passed_as_numpy_generators_and_shared_ones_are_inputs():
    """A shared generator is a key input (never baked, even with ``bake_shared``); ``run`` takes a
    NumPy ``Generator`` for it and draws a fresh key from it (the generator advances)."""
    x = pt.random.exponential(2.0, size=(N,), rng=_rng())
    m = compile_to_onnx([], outputs=[x], random="key")
    assert m.input_names == ["rng"] and m.options.bake_shared
    gen = np.random.default_rng(11)
    first, second = m.run(gen)[0], m.run(gen)[0]
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(m.run(np.random.default_rng(11))[0], first)
    assert stats.kstest(np.concatenate([first, second]), stats.expon(scale=2.0).cdf).pvalue > P_MIN
    assert random_key(np.random.default_rng(11)).tolist() == [int(np.random.default_rng(11).integers(
        0, 2 ** 64, dtype=np.uint64)), 0]


@pytest.mark.parametrize("style", ["non_seq", "update"])
@pytest.mark.parametrize("steps", ["constant", "symbolic"])  # unrolled by scan-unroll / a Loop
def test_scan_carries_an_updated_key_and_repeats_a_fixed_one(steps, style):
    """A scan threading the generator with its update carries the key through the ``Loop``: step
    ``t`` reads stream elements ``t N .. (t + 1) N - 1`` and the final key has counter ``T N``. A
    generator non-sequence without update draws the same noise at every step, as PyTensor does."""
    n = pt.lscalar("n")
    x0, ys, updates = _walk(style, T if steps == "constant" else n)
    outputs = [ys] + list(updates.values())
    inputs = [x0] if steps == "constant" else [x0, n]
    m = compile_to_onnx(inputs, outputs=outputs, random="key", check_passes=2)
    key = random_key(3)
    out, *final = m.run(np.zeros(N), *([] if steps == "constant" else [T]), key)
    if style == "update":
        z = np.sqrt(2) * special.erfinv(2 * _stream(key, 0, T * N).reshape(T, N) - 1)
        np.testing.assert_allclose(out, np.cumsum(z, axis=0), rtol=1e-13, atol=1e-13)
        assert final[0].tolist() == [int(key[0]), T * N]
        _check_walk(out)
    else:
        steps_taken = np.diff(np.vstack([np.zeros(N), out]), axis=0)
        np.testing.assert_allclose(steps_taken, np.broadcast_to(steps_taken[0], (T, N)), rtol=0, atol=1e-14)
        f = pytensor.function([x0] + inputs[1:], ys)  # PyTensor's own scan repeats the draw too
        ref = f(np.zeros(N), *([] if steps == "constant" else [T]))
        np.testing.assert_allclose(np.diff(ref, axis=0), np.broadcast_to(ref[0], (T - 1, N)), atol=1e-12)


def test_mode_feeds_keys_drawn_from_the_functions_generators():
    """``random="key"``, the mode's default (``mode="ONNX"``): each call draws a key from the shared
    generator (so draws change from call to call, and reseeding the stream repeats them, as in
    PyTensor), the update is the advanced generator, and the draws are standard normal."""
    import compiler  # noqa: F401  (registers mode "ONNX")

    srng = pt.random.RandomStream(5)
    f = pytensor.function([], srng.normal(size=(N,)), mode="ONNX")
    first, second = f(), f()
    assert not np.array_equal(first, second)
    srng.seed(5)
    np.testing.assert_array_equal(f(), first)
    assert stats.kstest(np.concatenate([first, second]), "norm").pvalue > P_MIN


# one draw per kind of transform (rules/random_transforms.py): closed form of normal noise, closed-form and
# special-function quantiles, a discrete search, several uniforms per element, a multivariate core dim,
# sequential binomials, sort keys, a bisected quantile
EVERY_KIND = {
    "normal": lambda r: pt.random.normal(1.0, 2.0, size=(40,), rng=r),
    "cauchy_f32": lambda r: pt.random.cauchy(0.5, 1.5, size=(40,), rng=r, dtype="float32"),
    "gamma": lambda r: pt.random.gamma(2.5, scale=1.5, size=(20,), rng=r),
    "poisson": lambda r: pt.random.poisson(np.array([0.5, 4.0, 30.0]), size=(10, 3), rng=r),
    "wald": lambda r: pt.random.wald(1.0, 2.0, size=(30,), rng=r),
    "dirichlet": lambda r: pt.random.dirichlet(np.array([2.0, 3.0, 5.0]), size=(8,), rng=r),
    "mvnormal": lambda r: pt.random.multivariate_normal(np.zeros(3), np.array([[2.0, 0.5, 0], [0.5, 1, 0.2],
                                                                               [0, 0.2, 1]]), size=(7,), rng=r),
    # unbatched: with a batch the suite's model check (ONNX's strict, data-propagating shape inference)
    # rejects the binomial search Loop under every policy: its Sub data propagator compares a (6,) and a
    # (2, 6) value's element counts as 1-D shapes, "(6) vs (12)" (onnxruntime runs it): docs/status.md
    "multinomial": lambda r: pt.random.multinomial(10, np.array([0.2, 0.3, 0.5]), rng=r),
    "permutation": lambda r: pt.random.permutation(9, rng=r),
    "vonmises": lambda r: pt.random.vonmises(0.3, 4.0, size=(10,), rng=r),
}


@pytest.mark.parametrize("kind", [pytest.param(k, marks=[pytest.mark.slow] if k == "multinomial" else [])
                                  for k in sorted(EVERY_KIND)])  # multinomial: two binomial-search compiles, ~15 s
def test_every_transform_equals_its_inputs_form_on_the_stream(kind):
    """The ``"key"`` model's draw equals the ``"inputs"`` model's fed the same noise: the stream's
    uniforms in row-major order over the noise input's shape (normal noise through
    ``sqrt(2) erfinv(2u - 1)``); integer draws exactly, float ones to 1e-12 (erfinv's bound)."""
    draw = EVERY_KIND[kind](_rng())
    keyed = compile_to_onnx([], outputs=[draw], random="key")
    fed = compile_to_onnx([], outputs=[draw], random="inputs")
    key = random_key(17)
    (spec,) = fed.random_inputs
    u = _stream(key, 0, int(np.prod(spec.shape)), spec.dtype).reshape(spec.shape)
    noise = np.sqrt(2) * special.erfinv(2 * u.astype(np.float64) - 1) if spec.noise == "normal" else u
    want = fed.run(**{spec.name: noise.astype(spec.dtype)})[0]
    got = keyed.run(key)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "f":
        tol = 1e-12 if got.dtype == np.float64 else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


def test_check_dynamic_feeds_keys_and_compares_the_next_key():
    """``check_dynamic`` under ``"key"``: the shared generator is a model input PyTensor gets as an
    explicit one; the draw and the next key compared in dtype and shape, ``2 mu`` in value too."""
    mu, sigma = pt.matrix("mu"), pt.vector("sigma")
    nxt, x = pt.random.normal(mu, pt.exp(sigma), rng=_rng(), name="x").owner.outputs
    m = compile_to_onnx([mu, sigma], outputs=[x, 2 * mu, nxt], random="key", check_dynamic=True)
    assert m.input_names == ["mu", "sigma", "rng"]
    draw, twice, key = m.run(np.ones((2, 3)), np.zeros(3), random_key(1))
    assert draw.shape == (2, 3) and key.tolist()[1] == 6 and np.array_equal(twice, np.full((2, 3), 2.0))


def test_pymc_prior_predictive_through_the_mode():
    """``pm.sample_prior_predictive`` compiled with ``onnx_mode(random="key")``: the same
    ``random_seed`` gives the same draws; ``mu ~ N(0, 1)`` and ``sigma ~ HalfNormal(2)`` by KS."""
    pm = pytest.importorskip("pymc")
    from compiler.mode import onnx_mode

    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", mu, sigma, shape=5)
    draws = [pm.sample_prior_predictive(model=model, draws=1000, random_seed=1,
                                        compile_kwargs={"mode": onnx_mode(random="key")}).prior for _ in range(2)]
    np.testing.assert_array_equal(draws[0]["y"].values, draws[1]["y"].values)
    assert stats.kstest(draws[0]["mu"].values.ravel(), "norm").pvalue > P_MIN
    assert stats.kstest(draws[0]["sigma"].values.ravel(), stats.halfnorm(scale=2).cdf).pvalue > P_MIN


def test_generator_output_needs_key():
    """Under the other policies a generator output is refused with the way out."""
    from compiler.lowering.errors import UnsupportedOpsError

    x = pt.random.normal(size=(3,), rng=_rng())
    with pytest.raises(UnsupportedOpsError, match="only under random='key'"):
        compile_to_onnx([], outputs=[x, x.owner.outputs[0]], random="onnx")
