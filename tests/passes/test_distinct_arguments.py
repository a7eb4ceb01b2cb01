"""``distinct-arguments``: a special function of constant data plus
one-element values runs once per distinct data tuple and is gathered back;
bit for bit with the interpreter, in onnxruntime against SciPy, and it
declines inputs, large cones and data without repeats."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import scipy.special as sp

from passes import get_pass
from passes.distinct_arguments import DistinctArguments, distinct_rows
from tests.helpers import check_pytensor
from tests.passes.helpers import check_pass

DISTINCT = DistinctArguments()


def test_counts_plus_a_parameter_run_once_per_distinct_count():
    """The cone's original nodes stay (``dce`` removes them when dead)."""
    check_pass(DISTINCT, """
        graph @main(%alpha: f64[], %b: f64[1]) {
          const %y: f64[8] = [3.0, 1.0, 3.0, 3.0, 1.0, 1.0, 3.0, 1.0]
          %a: f64[8] = add(%y, %alpha)
          %c: f64[8] = mul(%a, %b)
          %g: f64[8] = gammaln(%c)
          return %g, %a
        }""", """
        graph @main(%alpha: f64[], %b: f64[1]) {
          const %y: f64[8] = [3.0, 1.0, 3.0, 3.0, 1.0, 1.0, 3.0, 1.0]
          const %y_distinct: f64[2] = [3.0, 1.0]
          const %scalar_shape: i64[0] = base64""
          const %c_index: i64[8] = [0, 1, 0, 0, 1, 1, 0, 1]
          %a: f64[8] = add(%y, %alpha)
          %c: f64[8] = mul(%a, %b)
          %0: f64[] = reshape(%b, %scalar_shape)
          %1: f64[2] = add(%y_distinct, %alpha)
          %2: f64[2] = mul(%1, %0)
          %3: f64[2] = gammaln(%2)
          %4: f64[8] = gather(%3, %c_index) {axis=0}
          return %4, %a
        }""")


def test_tuples_of_two_data_arrays_and_signed_zeros_stay_apart():
    first, inverse = distinct_rows([np.array([0.0, -0.0, 0.0, 1.0, 1.0]), np.array([1, 1, 1, 2, 3])])
    assert first.tolist() == [0, 1, 3, 4]
    assert inverse.tolist() == [0, 1, 0, 2, 3]


def test_declines_inputs_data_without_repeats_and_non_elementwise_cones():
    check_pass(DISTINCT, """
        graph @main(%x: f64[4], %s: f64[]) {
          const %y: f64[4] = [1.0, 2.0, 3.0, 4.0]
          const %z: f64[4] = [1.0, 1.0, 1.0, 1.0]
          %a: f64[4] = add(%x, %s)
          %g: f64[4] = psi(%a)
          %b: f64[4] = add(%y, %s)
          %h: f64[4] = psi(%b)
          %c: f64[4] = cumsum(%z) {axis=0}
          %d: f64[4] = add(%c, %s)
          %k: f64[4] = psi(%d)
          return %g, %h, %k
        }""", None)


def test_beta_binomial_log_density_matches_scipy_in_onnxruntime():
    """sum(betaln(y + a, n - y + b)) and its gradient for 400 counts with 21
    values: gammaln and psi run on 21 elements each (gathered back)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 21, size=400).astype(np.float64)
    a, b = pt.dscalar("a"), pt.dscalar("b")
    logp = (pt.gammaln(y + a) + pt.gammaln(20 - y + b) - pt.gammaln(20 + a + b)).sum()
    ga, gb = pt.grad(logp, [a, b])
    av, bv = 2.5, 7.25
    want = [np.sum(sp.gammaln(y + av) + sp.gammaln(20 - y + bv) - sp.gammaln(20 + av + bv)),
            np.sum(sp.psi(y + av) - sp.psi(20 + av + bv)), np.sum(sp.psi(20 - y + bv) - sp.psi(20 + av + bv))]
    compiled = check_pytensor([a, b], [logp, ga, gb], [np.float64(av), np.float64(bv)],
                              reference=[np.asarray(w) for w in want], rtol=1e-13)
    sizes = [n.inputs[0].type.size for n in compiled.ir if n.op in ("gammaln", "psi")]
    assert sizes and max(sizes) <= 2 * 21 + 2, sizes


def test_registered_by_name():
    assert get_pass("distinct-arguments") == DISTINCT
