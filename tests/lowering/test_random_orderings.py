"""Permutations and choice without replacement (``random_transforms.py``:
``_permutation``, ``_choice_without_replacement``): one uniform per item of
the population as a sort key. Under ``random="inputs"`` the draws equal the
NumPy top-k of the same keys; in distribution, chi-square tests of the
ordered outcomes against their exact probabilities (uniform, and successive
sampling proportional to ``p`` for Efraimidis & Spirakis' keys)."""

from __future__ import annotations

import itertools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

from compiler import compile_to_onnx
from compiler.lowering.errors import UnsupportedOpsError
from tests.lowering.test_random import P_MIN, _rng

RUNS = 2000


def _noise_of(m, shape, seed=7):
    (spec,) = m.random_inputs
    assert spec.noise == "uniform" and spec.dtype == "float64"
    return spec.name, np.random.default_rng(seed).random(shape)


def _chi2_p(outcomes: list[tuple], probs: dict) -> float:
    counts = {k: 0 for k in probs}
    for o in outcomes:
        counts[o] += 1
    keys = sorted(probs)
    return stats.chisquare([counts[k] for k in keys], [probs[k] * len(outcomes) for k in keys]).pvalue


def test_permutation_of_an_int_is_the_order_of_its_keys_and_uniform():
    x = pt.random.permutation(4, size=(RUNS,), rng=_rng())
    m = compile_to_onnx([], outputs=[x], random="inputs")
    name, u = _noise_of(m, (RUNS, 4))
    assert m.random_inputs[0].shape == (RUNS, 4)
    draws = m.run(**{name: u})[0]
    assert draws.dtype == np.dtype(x.type.dtype) == np.int8 and draws.shape == (RUNS, 4)
    np.testing.assert_array_equal(draws, np.argsort(-u, axis=-1, kind="stable"))
    perms = {p: 1 / 24 for p in itertools.permutations(range(4))}
    assert _chi2_p([tuple(r) for r in draws], perms) > P_MIN
    onnx_draws = compile_to_onnx([], outputs=[x], random="onnx").run()[0]
    assert _chi2_p([tuple(r) for r in onnx_draws], perms) > P_MIN


def test_permutation_of_a_symbolic_int_and_of_an_array():
    n = pt.lscalar("n")
    m = compile_to_onnx([n], outputs=[pt.random.permutation(n, rng=_rng())], random="inputs")
    name, u = _noise_of(m, (7,))
    draws = m.run(7, **{name: u})[0]
    assert draws.dtype == np.int64 and np.array_equal(draws, np.argsort(-u, kind="stable"))
    a = pt.matrix("a")
    xa = pt.random.permutation(a, rng=_rng())
    m = compile_to_onnx([a], outputs=[xa], random="inputs")
    values = np.arange(15.0).reshape(5, 3)
    name, u = _noise_of(m, (5,))
    draws = m.run(values, **{name: u})[0]
    assert draws.dtype == np.float64 and draws.shape == (5, 3)
    np.testing.assert_array_equal(draws, values[np.argsort(-u, kind="stable")])


@pytest.mark.parametrize("size", [(RUNS,), (RUNS // 4, 4)])
def test_permutation_of_a_batch_of_arrays_permutes_each_member_by_its_own_keys(size):
    """``size=`` batches a permutation of an array (PyTensor 3's batch dims; 2.38 alike): member ``b``
    is ``a`` (broadcast to the batch) in the decreasing order of its own keys ``u[b]``; the draws
    have PyTensor's dtype and shape, and every ordering of the 3 rows is equally likely."""
    values = np.arange(6.0).reshape(3, 2)
    x = pt.random.permutation(values, size=size, rng=_rng())
    m = compile_to_onnx([], outputs=[x], random="inputs")
    name, u = _noise_of(m, size + (3,))
    assert m.random_inputs[0].shape == size + (3,)
    draws = m.run(**{name: u})[0]
    want = x.eval()
    assert draws.dtype == want.dtype and draws.shape == want.shape == size + (3, 2)
    np.testing.assert_array_equal(draws, values[np.argsort(-u, axis=-1, kind="stable")])
    perms = {p: 1 / 6 for p in itertools.permutations(range(3))}
    rows = draws.reshape(-1, 3, 2)[:, :, 0] / 2
    assert _chi2_p([tuple(int(v) for v in r) for r in rows], perms) > P_MIN
    onnx_rows = compile_to_onnx([], outputs=[x], random="onnx").run()[0].reshape(-1, 3, 2)[:, :, 0] / 2
    assert _chi2_p([tuple(int(v) for v in r) for r in onnx_rows], perms) > P_MIN


def test_permutation_of_a_symbolic_array_with_size_broadcasts_it():
    """A symbolic (n, 2) ``a`` with ``size=(3, 2)``: each of the 3 x 2 members permutes the rows of
    ``a`` by its own keys; the noise's population dim is ``a``'s first."""
    a = pt.matrix("a")
    x = pt.random.permutation(a, size=(3, 2), rng=_rng())
    m = compile_to_onnx([a], outputs=[x], random="inputs")
    assert m.random_inputs[0].shape == (3, 2, "a_dim0")
    values = np.arange(10.0).reshape(5, 2)
    name, u = _noise_of(m, (3, 2, 5))
    draws = m.run(values, **{name: u})[0]
    np.testing.assert_array_equal(draws, values[np.argsort(-u, axis=-1, kind="stable")])
    assert draws.shape == pytensor.function([a], x)(values).shape == (3, 2, 5, 2)


def test_choice_without_replacement_of_an_int_is_a_uniform_ordered_sample():
    x = pt.random.choice(5, size=(2,), replace=False, rng=_rng())
    m = compile_to_onnx([], outputs=[x], random="inputs")
    (spec,) = m.random_inputs
    assert spec.shape == (5,)
    us = np.random.default_rng(11).random((RUNS, 5))
    draws = np.array([m.run(**{spec.name: u})[0] for u in us])
    assert draws.dtype == np.dtype(x.type.dtype) and draws.shape[1:] == x.type.shape == (2,)
    np.testing.assert_array_equal(draws, np.argsort(-us, axis=-1, kind="stable")[:, :2])
    pairs = {(i, j): 1 / 20 for i in range(5) for j in range(5) if i != j}
    assert _chi2_p([tuple(r) for r in draws], pairs) > P_MIN


def test_choice_without_replacement_with_p_is_successive_sampling():
    """Efraimidis & Spirakis' keys ``log(u) / p``: the ordered pair (i, j) has probability
    ``p_i p_j / (1 - p_i)``; a zero-probability item is never drawn while others are left."""
    p = pt.vector("p")
    x = pt.random.choice(5, size=(2,), replace=False, p=p, rng=_rng())
    m = compile_to_onnx([p], outputs=[x], random="inputs")
    probs = np.array([0.1, 0.4, 0.0, 0.2, 0.3])
    (spec,) = m.random_inputs
    us = np.random.default_rng(12).random((RUNS, 5))
    draws = np.array([m.run(probs, **{spec.name: u})[0] for u in us])
    with np.errstate(divide="ignore"):
        keys = np.log(us) / probs
    np.testing.assert_array_equal(draws, np.argsort(-keys, axis=-1, kind="stable")[:, :2])
    assert not (draws == 2).any()
    pairs = {(i, j): probs[i] * probs[j] / (1 - probs[i]) for i in range(5) for j in range(5)
             if i != j and probs[i] and probs[j]}
    assert _chi2_p([tuple(r) for r in draws], pairs) > P_MIN


def test_choice_without_replacement_of_an_array_keeps_its_rows_and_pytensors_shape():
    a = np.arange(12.0).reshape(4, 3).astype(np.float32)
    x = pt.random.choice(a, size=(2, 1), replace=False, p=np.array([0.1, 0.2, 0.3, 0.4]), rng=_rng())
    m = compile_to_onnx([], outputs=[x], random="inputs")
    name, u = _noise_of(m, (4,))
    draws = m.run(**{name: u})[0]
    assert draws.dtype == np.dtype(x.type.dtype) == np.float32 and draws.shape == x.type.shape == (2, 1, 3)
    order = np.argsort(-np.log(u) / np.array([0.1, 0.2, 0.3, 0.4]), kind="stable")[:2]
    np.testing.assert_array_equal(draws, a[order].reshape(2, 1, 3))
    onnx_draws = compile_to_onnx([], outputs=[x], random="onnx").run()[0]
    assert onnx_draws.shape == (2, 1, 3) and len({tuple(r) for r in onnx_draws.reshape(2, 3)}) == 2


def test_compiled_function_of_a_permutation_a_choice_and_a_multinomial():
    """A default-mode function (PyTensor 3 wraps each draw in ``RandomVariableWithCoreShape``)."""
    import pytensor

    n = pt.lscalar("n")
    perm = pt.random.permutation(n, rng=_rng())
    pick = pt.random.choice(n, size=(3,), replace=False, p=pt.ones((n,)) / n, rng=_rng(2))
    counts = pt.random.multinomial(n, np.array([0.5, 0.25, 0.25]), rng=_rng(3))
    f = pytensor.function([n], [perm, pick, counts])
    m = compile_to_onnx(f, random="onnx")
    p, c, k = m.run(n=np.array(9))
    assert sorted(p) == list(range(9)) and len(set(c)) == 3 and set(c) <= set(range(9))
    assert k.shape == (3,) and k.sum() == 9 and (k >= 0).all()
    assert [x.dtype for x in (p, c, k)] == [np.dtype(v.type.dtype) for v in (perm, pick, counts)]


@pytest.mark.parametrize("signature, core, size", [("(a0,a1),(1)->(s0,a1)", (4,), None),
                                                   ("(a0,a1),(2)->(s0,s1,a1)", (4, 1), (2, 3))])
def test_choice_without_replacement_of_a_batch_of_arrays(signature, core, size):
    """PyTensor's ``ChoiceWithoutReplacement`` with batch dims on ``a`` (as ``vectorize`` builds it, and
    PyTensor's ``batched_*_choice_without_replacement_tester``): member ``b`` takes the rows of ``a[b]`` at
    its own largest keys, in decreasing key order, reshaped to the core shape; PyTensor's shape and dtype."""
    from pytensor.tensor.random.basic import ChoiceWithoutReplacement

    a = np.arange(3 * 5 * 2).reshape((3, 5, 2))
    x = ChoiceWithoutReplacement(signature=signature, dtype="int64")(a, core, size=size, rng=_rng())
    m = compile_to_onnx([], outputs=[x], random="inputs")
    batch = (3,) if size is None else size
    name, u = _noise_of(m, batch + (5,))
    draws = m.run(**{name: u})[0]
    want = x.eval()
    assert draws.dtype == want.dtype and draws.shape == want.shape
    order = np.argsort(-u, axis=-1, kind="stable")[..., :4]  # (*batch, 4)
    members = np.broadcast_to(a, batch + (5, 2))
    expected = np.take_along_axis(members, order[..., None], axis=-2).reshape(want.shape)
    np.testing.assert_array_equal(draws, expected)
