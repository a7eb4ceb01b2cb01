"""``narrow-layout``: ``[N, k]`` computations with small k run as ``[k, N]``:
elementwise ops, reductions over either axis, unsqueeze, slice and expand
are rewritten, transposes between rewritten nodes cancel, one transpose
leaves the region; bit for bit with the interpreter, and in onnxruntime
against PyTensor on a two-component mixture's log-density and gradient."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from passes import get_pass
from passes.dce import DeadCodeElimination
from passes.narrow_layout import NarrowLayout, narrow
from ir.types import TensorType, DType
from tests.helpers import check_pytensor
from tests.passes.helpers import check_pass

LAYOUT = NarrowLayout()


def test_region_runs_transposed_and_leaves_through_one_transpose():
    """Compared on finite inputs to 1e-15: NumPy's own sum gives the sign of
    a zero sum differently for the two layouts (see the pass's doc)."""
    check_pass([LAYOUT, DeadCodeElimination()], """
        graph @main(%y: f64[64,2], %mu: f64[2]) {
          const %shape: i64[2] = [64, 2]
          %d: f64[64,2] = sub(%y, %mu)
          %m: f64[64] = reduce_max(%d) {axes=[1], keepdims=false}
          %u: f64[64,1] = unsqueeze(%m) {axes=[1]}
          %e: f64[64,2] = sub(%d, %u)
          %x: f64[64,2] = expand(%u, %shape)
          %f: f64[64,2] = mul(%e, %x)
          %c: f64[2] = reduce_sum(%f) {axes=[0], keepdims=false}
          %k: f64[64,1] = reduce_sum(%f) {axes=[1], keepdims=true}
          return %c, %k, %f
        }""", """
        graph @main(%y: f64[64,2], %mu: f64[2]) {
          const %expand_shape: i64[2] = [2, 64]
          %0: f64[2,64] = transpose(%y) {perm=[1, 0]}
          %1: f64[2,1] = unsqueeze(%mu) {axes=[1]}
          %2: f64[2,64] = sub(%0, %1)
          %3: f64[64] = reduce_max(%2) {axes=[0], keepdims=false}
          %4: f64[1,64] = unsqueeze(%3) {axes=[0]}
          %5: f64[2,64] = sub(%2, %4)
          %6: f64[2,64] = expand(%4, %expand_shape)
          %7: f64[2,64] = mul(%5, %6)
          %8: f64[64,2] = transpose(%7) {perm=[1, 0]}
          %9: f64[2] = reduce_sum(%7) {axes=[1], keepdims=false}
          %10: f64[1,64] = reduce_sum(%7) {axes=[0], keepdims=true}
          %11: f64[64,1] = transpose(%10) {perm=[1, 0]}
          return %9, %11, %8
        }""", rtol=1e-15)


def test_narrow_means_small_static_last_axis_and_long_first_axis():
    f64 = DType.FLOAT64
    assert narrow(TensorType(f64, ("N", 2))) and narrow(TensorType(f64, (64, 16)))
    assert not narrow(TensorType(f64, (63, 2))) and not narrow(TensorType(f64, ("N", 17)))
    assert not narrow(TensorType(f64, ("N", "K"))) and not narrow(TensorType(f64, ("N", 2, 2)))


def test_mixture_log_density_and_gradient_match_pytensor():
    """log-sum-exp over two components (a static 2) of N = 300 observations, and its gradient."""
    rng = np.random.default_rng(3)
    y = rng.normal(size=300)
    mu, w = pt.tensor("mu", shape=(2,), dtype="float64"), pt.tensor("w", shape=(2,), dtype="float64")
    comp = -0.5 * (y[:, None] - mu[None, :]) ** 2 + pt.log(w)[None, :]
    logp = pt.logsumexp(comp, axis=1).sum()
    gmu = pt.grad(logp, mu)
    compiled = check_pytensor([mu, w], [logp, gmu], [np.array([-1.0, 2.0]), np.array([0.3, 0.7])])
    assert any(n.op != "transpose" and n.outputs[0].shape[:1] == (2,) and n.outputs[0].rank == 2
               for n in compiled.ir)


def test_registered_by_name():
    assert get_pass("narrow-layout") == LAYOUT


def test_a_gather_along_the_narrow_axis_gathers_rows_of_the_transpose():
    check_pass(NarrowLayout(), """
        graph @main(%a: f64[N,4], %b: i64[N,4]) {
          const %county: i64[6] = [0, 3, 3, 1, 2, 0]
          const %one: i64[] = 1
          %g: f64[N,6] = gather(%a, %county) {axis=1}
          %h: i64[N,6] = gather(%b, %county) {axis=-1}
          %s: f64[N] = gather(%a, %one) {axis=1}
          return %g, %h, %s
        }""", """
        graph @main(%a: f64[N,4], %b: i64[N,4]) {
          const %county: i64[6] = [0, 3, 3, 1, 2, 0]
          const %one: i64[] = 1
          %0: f64[4,N] = transpose(%a) {perm=[1, 0]}
          %1: f64[6,N] = gather(%0, %county) {axis=0}
          %2: f64[N,6] = transpose(%1) {perm=[1, 0]}
          %3: i64[4,N] = transpose(%b) {perm=[1, 0]}
          %4: i64[6,N] = gather(%3, %county) {axis=0}
          %5: i64[N,6] = transpose(%4) {perm=[1, 0]}
          %6: f64[N] = gather(%0, %one) {axis=0}
          return %2, %5, %6
        }""", sizes={"N": 70})


def test_gathers_along_the_first_axis_or_of_wide_or_short_inputs_stay():
    check_pass(NarrowLayout(), """
        graph @main(%a: f64[N,4], %w: f64[N,40], %short: f64[8,4]) {
          const %idx: i64[3] = [0, 3, 1]
          const %m: i64[2,3] = [[0, 1, 2], [3, 2, 1]]
          %g: f64[3,4] = gather(%a, %idx) {axis=0}
          %h: f64[N,3] = gather(%w, %idx) {axis=1}
          %i: f64[8,3] = gather(%short, %idx) {axis=1}
          %j: f64[N,2,3] = gather(%a, %m) {axis=1}
          return %g, %h, %i, %j
        }""", None, sizes={"N": 5})
