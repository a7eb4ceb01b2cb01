"""``special-batching``: independent calls of one special function run once
on their concatenated arguments; dependent calls, other dtypes and dynamic
shapes stay apart. Checked on the IR text, bit for bit with the
interpreter, and in onnxruntime against SciPy."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import scipy.special as sp

from passes import get_pass
from passes.special_batching import SpecialBatching, independent_groups
from ir.parser import parse_graph
from tests.helpers import check_pytensor
from tests.passes.helpers import check_pass

BATCH = SpecialBatching()


def test_independent_calls_of_mixed_ranks_run_once_and_readers_move_after():
    check_pass(BATCH, """
        graph @main(%x: f64[1], %y: f64[], %z: f64[2,3]) {
          const %k: f64[] = 2.0
          %a: f64[1] = gammaln(%x)
          %u: f64[1] = mul(%a, %k)
          %b: f64[] = gammaln(%y)
          %c: f64[2,3] = gammaln(%z)
          %d: f64[2,3] = mul(%c, %b)
          return %u, %d
        }""", """
        graph @main(%x: f64[1], %y: f64[], %z: f64[2,3]) {
          const %k: f64[] = 2.0
          const %flat: i64[1] = [-1]
          const %batch_sizes: i64[3] = [1, 1, 6]
          const %batch_shape: i64[0] = base64""
          const %batch_shape_1: i64[2] = [2, 3]
          %0: f64[1] = reshape(%y, %flat)
          %1: f64[6] = reshape(%z, %flat)
          %2: f64[8] = concat(%x, %0, %1) {axis=0}
          %3: f64[8] = gammaln(%2)
          %4: f64[1], %5: f64[1], %6: f64[6] = split(%3, %batch_sizes) {axis=0, num_outputs=3}
          %u: f64[1] = mul(%4, %k)
          %7: f64[] = reshape(%5, %batch_shape)
          %8: f64[2,3] = reshape(%6, %batch_shape_1)
          %d: f64[2,3] = mul(%8, %7)
          return %u, %d
        }""")


def test_dependent_calls_dtypes_and_dynamic_shapes_stay_apart():
    check_pass(BATCH, """
        graph @main(%x: f64[2], %y: f32[2], %w: f32[2], %n: f64[N]) {
          %a: f64[2] = psi(%x)
          %b: f64[2] = psi(%a)
          %c: f32[2] = erfc(%y)
          %e: f64[N] = psi(%n)
          %f: f32[2] = psi(%w)
          return %b, %c, %e, %f
        }""", None)


def test_groups_are_greedy_and_independent():
    g = parse_graph("""
        graph @main(%x: f64[1], %y: f64[1]) {
          %a: f64[1] = psi(%x)
          %b: f64[1] = psi(%y)
          %s: f64[1] = add(%a, %b)
          %c: f64[1] = psi(%s)
          %d: f64[1] = psi(%x)
          return %c, %d
        }""")
    calls = [n for n in g if n.op == "psi"]
    groups = independent_groups(calls)
    assert [[calls.index(n) for n in grp] for grp in groups] == [[0, 1, 3], [2]]


def test_student_t_normalizer_in_onnxruntime_matches_scipy():
    """The StudentT log-density normalizer and its gradient: gammaln and psi at
    nu/2 and (nu+1)/2 become one call each; within 1e-14 of SciPy."""
    nu = pt.dscalar("nu")
    logp = pt.gammaln((nu + 1) / 2) - pt.gammaln(nu / 2)
    grad = pt.grad(logp, nu)
    values = [np.float64(4.5)]
    want = [sp.gammaln(2.75) - sp.gammaln(2.25), 0.5 * (sp.psi(2.75) - sp.psi(2.25))]
    compiled = check_pytensor([nu], [logp, grad], values, reference=[np.asarray(w) for w in want], rtol=1e-14)
    ops = [n.op for n in compiled.ir]
    assert ops.count("gammaln") == 1 and ops.count("psi") == 1


def test_registered_by_name():
    assert get_pass("special-batching") == BATCH
