"""Backend-test-style cases through the ONNX PyTensor mode.

PyTensor tests each backend with per-file suites (``tests/link/jax/test_*.py``)
built on one compare helper: compile a graph in the backend's mode and in
PyTensor's Python mode, run both on the same inputs, compare. Those files are
not shipped in PyTensor's wheels and need JAX to import, so this script
carries a reconstructed, representative set of such cases, grouped by the
file they mirror, and runs every case with ``mode="ONNX"`` against
PyTensor's Python reference mode. It prints pass / unsupported / mismatch /
error counts per group, then every non-passing case.

- pass: same dtypes and shapes, same NaN/inf positions, integers exact,
  floats within ``rtol`` (1e-5 float32, 1e-10 float64: onnxruntime's
  transcendental kernels are a few ulp from NumPy's);
- unsupported: ``UnsupportedOpsError`` or ``EmitError`` (the op has no exact
  ONNX form, or no onnxruntime kernel for the dtype; docs/status.md "Not done yet");
- mismatch: the values differ (a bug to fix or a documented difference);
- error: anything else (a bug).

Usage::

    python bench/peer_suite.py [-k SUBSTRING] [-v]
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402

from backends.onnx.registry import EmitError  # noqa: E402
from compiler import UnsupportedOpsError  # noqa: E402

REFERENCE = Mode(linker="py", optimizer="fast_compile")
RTOL = {np.dtype("float32"): 1e-5, np.dtype("float64"): 1e-10, np.dtype("float16"): 1e-3,
        np.dtype("complex64"): 1e-5, np.dtype("complex128"): 1e-10}
rng = np.random.default_rng(0)


@dataclass
class Case:
    group: str  # the PyTensor test file it mirrors
    name: str
    build: Callable[[], tuple[list, list, list]]  # -> (inputs, outputs, values)


CASES: list[Case] = []


def case(group: str):
    def register(fn):
        CASES.append(Case(group, fn.__name__, fn))
        return fn
    return register


def f64(*shape):
    return rng.normal(size=shape)


def f32(*shape):
    return rng.normal(size=shape).astype(np.float32)


# -- test_elemwise.py / test_scalar.py --------------------------------------------
@case("test_elemwise")
def unary_math():
    x = pt.vector("x")
    outs = [pt.exp(x), pt.log(pt.abs(x) + 1), pt.tanh(x), pt.sigmoid(x), pt.softplus(x), pt.erf(x), pt.sqrt(pt.abs(x)),
            pt.log1p(pt.abs(x)), pt.expm1(x), pt.sin(x), pt.cos(x), pt.arctan(x), pt.floor(x), pt.round(x)]
    return [x], outs, [f64(7)]


@case("test_elemwise")
def binary_and_comparisons():
    x, y = pt.vectors("x", "y")
    return [x, y], [x + y, x - y, x * y, x / y, pt.maximum(x, y), x ** 2, pt.lt(x, y), pt.eq(x, x),
                    pt.switch(x > 0, x, y)], [f64(5), f64(5)]


@case("test_elemwise")
def integer_division_and_mod():
    a, b = pt.vector("a", dtype="int64"), pt.vector("b", dtype="int64")
    return [a, b], [a // b, a % b, a * b, -a], [np.array([-7, 7, -3, 3, 9]), np.array([2, -2, 2, -5, 4])]


@case("test_elemwise")
def float32_broadcast():
    x, y = pt.matrix("x", dtype="float32"), pt.vector("y", dtype="float32")
    return [x, y], [x * y + 1, pt.exp(x - y[None, :])], [f32(3, 4), f32(4)]


@case("test_elemwise")
def casts():
    x = pt.vector("x")
    return [x], [pt.cast(x, "int32"), pt.cast(x, "float32"), pt.cast(x > 0, "int8")], [f64(6) * 3]


@case("test_elemwise")
def softmax_logsoftmax():
    x = pt.matrix("x")
    return [x], [pt.special.softmax(x, axis=-1), pt.special.log_softmax(x, axis=0)], [f64(3, 5)]


@case("test_elemwise")
def arctan2():
    x, y = pt.vectors("x", "y")
    return [x, y], [pt.arctan2(x, y)], [f64(4), f64(4)]


@case("test_elemwise")
def gammaln():
    x = pt.vector("x")
    return [x], [pt.gammaln(pt.abs(x) + 1)], [f64(4)]


# -- test_math.py ------------------------------------------------------------------
@case("test_math")
def reductions():
    x = pt.tensor3("x")
    return [x], [x.sum(), x.sum(axis=1), x.prod(axis=(0, 2)), x.max(axis=0), x.min(), x.mean(axis=-1),
                 pt.argmax(x, axis=1), pt.all(x > -10), pt.any(x > 1)], [f64(2, 3, 4)]


@case("test_math")
def dot_and_matmul():
    a, b = pt.matrices("a", "b")
    v = pt.vector("v")
    c = pt.tensor3("c")
    return [a, b, v, c], [pt.dot(a, b), a @ v, pt.matmul(c, b), pt.outer(v, v)], \
        [f64(3, 4), f64(4, 2), f64(4), f64(5, 3, 4)]


@case("test_math")
def logsumexp():
    x = pt.matrix("x")
    return [x], [pt.logsumexp(x, axis=1)], [f64(3, 4)]


# -- test_shape.py / test_basic.py -----------------------------------------------------
@case("test_shape")
def reshape_dimshuffle_shape():
    x = pt.tensor3("x")
    return [x], [x.reshape((x.shape[0], -1)), x.dimshuffle(2, "x", 0, 1), x.shape, x.T, pt.flatten(x)], \
        [f64(2, 3, 4)]


@case("test_basic")
def join_split_stack_alloc():
    x, y = pt.matrices("x", "y")
    a, b = pt.split(x, [1, 2], n_splits=2, axis=0)
    return [x, y], [pt.concatenate([x, y], axis=1), pt.stack([x, y]), a, b, pt.zeros_like(x), pt.alloc(1.5, 2, 3),
                    pt.arange(5), pt.eye(3)], [f64(3, 2), f64(3, 2)]


@case("test_basic")
def specify_shape_and_second():
    x = pt.matrix("x")
    return [x], [pt.specify_shape(x, (2, 3)) * 2, pt.fill(x, 3.0)], [f64(2, 3)]


# -- test_subtensor.py ---------------------------------------------------------------
@case("test_subtensor")
def basic_indexing():
    x = pt.tensor3("x")
    i = pt.scalar("i", dtype="int64")
    return [x, i], [x[1], x[:, 1:3], x[::-1, :, ::2], x[i], x[-1, i, 1:]], [f64(4, 5, 6), np.int64(2)]


@case("test_subtensor")
def advanced_indexing():
    x = pt.matrix("x")
    idx = pt.vector("idx", dtype="int64")
    return [x, idx], [x[idx], x[idx, idx], x[x > 0], x[:, idx]], [f64(4, 4), np.array([0, 3, 1])]


@case("test_subtensor")
def set_and_inc_subtensor():
    x = pt.matrix("x")
    idx = pt.vector("idx", dtype="int64")
    return [x, idx], [pt.set_subtensor(x[1:, 0], 7.0), pt.inc_subtensor(x[idx], 1.0),
                      pt.inc_subtensor(x[idx, 0], 2.0)], [f64(4, 3), np.array([0, 2, 2])]


# -- test_extra_ops.py -----------------------------------------------------------------
@case("test_extra_ops")
def cumulative_ops():
    x = pt.matrix("x")
    return [x], [pt.cumsum(x, axis=0), pt.cumprod(x, axis=1)], [f64(3, 4)]


@case("test_extra_ops")
def repeat_and_unique():
    x = pt.vector("x")
    return [x], [pt.repeat(x, 2), pt.extra_ops.unique(x)], [f64(4)]


@case("test_extra_ops")
def unique_all_flags():
    x = pt.vector("x")
    m = pt.tensor("m", shape=(None, 2))
    flags = pt.extra_ops.Unique(True, True, True)(x)
    rows = pt.extra_ops.Unique(True, True, True, axis=0)(m)
    v = np.array([3.0, np.nan, 1.0, 3.0, -0.0, 0.0, np.nan, 2.0])
    return [x, m], [*flags, *rows], [v, np.array([[1.0, 2.0], [0.0, 5.0], [1.0, 2.0], [0.0, 1.0]])]


@case("test_extra_ops")
def unique_ints():
    x = pt.matrix("x", dtype="int64")
    return [x], [pt.extra_ops.unique(x), *pt.extra_ops.Unique(False, True, True)(x)], \
        [rng.integers(-2, 3, (3, 4))]


@case("test_extra_ops")
def repeat_vector_counts():
    x = pt.matrix("x")
    r = pt.vector("r", dtype="int64")
    return [x, r], [pt.repeat(x, r, axis=0), pt.repeat(x, r[:1], axis=1)], [f64(3, 2), np.array([2, 0, 3])]


@case("test_extra_ops")
def diag_and_alloc_diag():
    v, m = pt.vector("v"), pt.matrix("m")
    return [v, m], [pt.diag(v), pt.diag(v, k=1), pt.diag(v, k=-2), pt.diag(m), pt.diagonal(m, 1)], \
        [f64(3), f64(3, 4)]


@case("test_extra_ops")
def einsum_and_kron():
    a, b = pt.matrices("a", "b")
    return [a, b], [pt.einsum("ij,jk->ik", a, b), pt.linalg.kron(a, b)], [f64(2, 3), f64(3, 2)]


# -- test_sort.py -------------------------------------------------------------------------------
@case("test_sort")
def sort_and_argsort():
    x = pt.matrix("x")
    v = np.array([[3.0, np.nan, 1.0, 1.0, -np.inf], [0.0, -0.0, 2.0, np.inf, 2.0]])
    return [x], [pt.sort(x), pt.sort(x, axis=0), pt.sort(x, axis=None), pt.argsort(x, stable=True),
                 pt.argsort(x, axis=0, kind="mergesort")], [v]


@case("test_sort")
def sort_ints_and_descending():
    x = pt.vector("x", dtype="int32")
    return [x], [pt.sort(x)[::-1], pt.argsort(-x, stable=True), pt.argsort(x, stable=True)], \
        [np.array([3, -1, 3, 0, 7, -1], np.int32)]


@case("test_sort")
def sort_float32_rows():
    x = pt.matrix("x", dtype="float32")
    return [x], [pt.sort(x, axis=1), pt.argsort(x, axis=1, stable=True)], [f32(4, 6)]


# -- test_basic.py (more) -------------------------------------------------------------------------
@case("test_basic")
def nonzero_and_mask():
    x = pt.matrix("x")
    return [x], [*pt.nonzero(x), pt.flatnonzero(x), x[x > 0]], [np.array([[0.0, 1.0, -2.0], [np.nan, 0.0, 3.0]])]


@case("test_basic")
def split_and_join_on_a_symbolic_axis():
    x = pt.tensor3("x")
    a = pt.scalar("a", dtype="int64")
    return [x, a], [*pt.split(x, [1, 2], n_splits=2, axis=a), pt.join(a, x, x)], [f64(2, 3, 4), np.int64(1)]


@case("test_math")
def bool_dot_and_cumulative():
    a, b = pt.matrix("a", dtype="bool"), pt.matrix("b", dtype="bool")
    return [a, b], [pt.dot(a, b), pt.matmul(a, b)], [rng.random((3, 4)) < 0.4, rng.random((4, 2)) < 0.4]


@case("test_subtensor")
def add_at_float_into_int():
    x, y = pt.vector("x", dtype="int64"), pt.vector("y")
    i = pt.vector("i", dtype="int64")
    return [x, y, i], [pt.inc_subtensor(x[i], y)], [np.array([10, 20, 30]), np.array([0.6, 0.6, -1.7]),
                                                    np.array([1, 1, 0])]


# -- test_scalar.py (ScalarLoop) -----------------------------------------------------------------
@case("test_scalar")
def scalar_loop_for_and_while():
    import pytensor.scalar as ps
    from pytensor.scalar.loop import ScalarLoop
    from pytensor.tensor.elemwise import Elemwise

    x0, c = ps.float64("x0"), ps.float64("c")
    step = x0 * c + 1
    loop = Elemwise(ScalarLoop(init=[x0], update=[step], constant=[c]))
    until = Elemwise(ScalarLoop(init=[x0], update=[step], constant=[c], until=step > 10))
    n, x, k = pt.vector("n", dtype="int64"), pt.vector("x"), pt.scalar("k")
    return [n, x, k], [loop(n, x, k), *until(n, x, k)], [np.array([1, 3, 20]), f64(3), np.float64(1.5)]


# -- test_scan.py ---------------------------------------------------------------------------
def _scan(fn, **kwargs):
    result = pytensor.scan(fn, **kwargs)
    return result[0] if isinstance(result, tuple) else result


@case("test_scan")
def scan_sit_sot_and_sequences():
    x = pt.matrix("x")
    h0 = pt.vector("h0")
    hs = _scan(lambda xt, h: pt.tanh(xt + h), sequences=[x], outputs_info=[h0])
    return [x, h0], [hs, hs[-1]], [f64(5, 3), f64(3)]


@case("test_scan")
def scan_taps_and_n_steps():
    a0 = pt.vector("a0")
    n = pt.scalar("n", dtype="int64")
    fib = _scan(lambda a, b: a + b, outputs_info=[{"initial": a0, "taps": [-2, -1]}], n_steps=n)
    return [a0, n], [fib], [np.array([0.0, 1.0]), np.int64(8)]


@case("test_scan")
def scan_cumulative():
    x = pt.vector("x")
    acc = _scan(lambda xt, s: s + xt, sequences=[x], outputs_info=[pt.zeros(())])
    return [x], [acc], [f64(6)]


# -- test_ifelse.py --------------------------------------------------------------------------
@case("test_ifelse")
def ifelse_branches():
    from pytensor.ifelse import ifelse

    x = pt.vector("x")
    c = pt.scalar("c", dtype="bool")
    return [x, c], [ifelse(c, pt.exp(x), x * 2)], [f64(3), np.bool_(True)]


# -- test_nlinalg.py / test_slinalg.py ---------------------------------------------------------
@case("test_nlinalg")
def matrix_inverse_and_det():
    a = pt.matrix("a")
    return [a], [pt.linalg.inv(a), pt.linalg.det(a)], [f64(3, 3) + 3 * np.eye(3)]


@case("test_slinalg")
def cholesky_solve():
    a, b = pt.matrix("a"), pt.vector("b")
    return [a, b], [pt.linalg.solve(a, b)], [f64(3, 3) + 3 * np.eye(3), f64(3)]


# -- test_random.py ----------------------------------------------------------------------------
@case("test_random")
def normal_draws():
    srng = pt.random.normal(0, 1, size=(3,))
    return [], [srng], []


# -- test_signal.py / nn -----------------------------------------------------------------------
@case("test_signal")
def convolve2d_valid():
    from pytensor.tensor.signal import convolve2d

    x, k = pt.matrix("x", dtype="float32"), pt.matrix("k", dtype="float32")
    return [x, k], [convolve2d(x, k, mode="valid"), convolve2d(x, k, mode="full")], [f32(5, 6), f32(2, 3)]


@case("test_signal")
def convolve2d_float64():
    from pytensor.tensor.signal import convolve2d

    x, k = pt.matrices("x", "k")
    return [x, k], [convolve2d(x, k, mode="valid")], [f64(5, 6), f64(2, 3)]


@case("test_signal")
def convolve1d_modes():
    from pytensor.tensor.signal import convolve1d

    x, k = pt.vector("x"), pt.tensor("k", shape=(3,))
    return [x, k], [convolve1d(x, k, mode=m) for m in ("full", "valid", "same")], [f64(8), f64(3)]


def compare(got, want, values: bool = True) -> str | None:
    """None if ``got`` matches ``want`` (see the module docstring).

    Args:
        got, want: sequences of output arrays (ours, the reference's).
        values: False checks only dtypes, shapes and NaN/inf positions
            (the caller judges the finite values with its own assertion).
    """
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"output {i}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        if b.dtype.kind in "fc":
            infs = [np.where(np.isinf(t), np.sign(t), 0) for t in (a, b)]  # (isinf * sign is NaN at NaN)
            if not np.array_equal(np.isnan(a), np.isnan(b)) or not np.array_equal(*infs):
                return f"output {i}: NaN/inf positions differ"
            if not values:
                continue
            finite = np.isfinite(b)
            if not np.allclose(a[finite], b[finite], rtol=RTOL[b.dtype], atol=RTOL[b.dtype]):
                return f"output {i}: max abs error {np.max(np.abs(a[finite] - b[finite])):.3g}"
        elif values and not np.array_equal(a, b):
            return f"output {i}: values differ"
    return None


def refusal(e: Exception) -> str:
    """One line saying why our compile refused: each unsupported op (its
    name without parameters) with its reason, once, for an
    ``UnsupportedOpsError``; the message of an ``EmitError`` (no exact ONNX
    form, or no onnxruntime kernel, for these dtypes)."""
    if isinstance(e, UnsupportedOpsError):
        return "; ".join(dict.fromkeys(o.op.split("{")[0] + ": " + o.reason for o in e.occurrences))
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def run_case(c: Case) -> tuple[str, str]:
    """(status, detail) of one case."""
    try:
        inputs, outputs, values = c.build()
        ref = pytensor.function(inputs, outputs, mode=REFERENCE)(*values)
    except Exception as e:  # noqa: BLE001 - the reference could not run it: not our failure
        return "skipped", f"reference: {type(e).__name__}: {e}"
    try:
        got = pytensor.function(inputs, outputs, mode="ONNX")(*values)
    except (UnsupportedOpsError, EmitError) as e:
        return "unsupported", refusal(e)
    except Exception as e:  # noqa: BLE001 - reported
        return "error", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    why = compare(got, ref)
    return ("pass", "") if why is None else ("mismatch", why)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-k", default="", help="run only cases whose group or name contains this")
    parser.add_argument("-v", action="store_true", help="print the traceback of errors")
    args = parser.parse_args(argv)
    statuses = ("pass", "unsupported", "mismatch", "error", "skipped")
    table: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(statuses, 0))
    notes = []
    for c in CASES:
        if args.k and args.k not in c.group and args.k not in c.name:
            continue
        try:
            status, detail = run_case(c)
        except Exception:  # noqa: BLE001
            status, detail = "error", traceback.format_exc() if args.v else "crashed"
        table[c.group][status] += 1
        if status != "pass":
            notes.append(f"  {status:<11} {c.group}::{c.name}: {detail[:160]}")
    print(f"pytensor {pytensor.__version__}: {sum(sum(r.values()) for r in table.values())} cases through mode='ONNX'")
    print(f"{'file':<16}" + "".join(f"{s:>12}" for s in statuses))
    for group, row in table.items():
        print(f"{group:<16}" + "".join(f"{row[s]:>12}" for s in statuses))
    total = {s: sum(r[s] for r in table.values()) for s in statuses}
    print(f"{'total':<16}" + "".join(f"{total[s]:>12}" for s in statuses))
    if notes:
        print("\nnot passing:")
        print("\n".join(notes))
    return 1 if total["mismatch"] or total["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
