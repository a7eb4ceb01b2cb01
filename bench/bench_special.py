"""Special-function benchmark: elements per second of the emitted ONNX
function in onnxruntime (one intra-op thread) against ``scipy.special`` on
the same float64 arguments, at 1e3 and 1e6 elements, with their ratio.

Arguments are drawn over the functions' working domain (for ``gammainc``/
``gammaincc``: a log-uniform in [0.1, 100], x = a * exp(N(0, 1)), so every
method runs; the inverses: ``inverse_arguments``, ``betaincinv_arguments``; the Bessel functions: ``bessel_arguments``, ``ive_arguments``). Timings are medians of wall-clock runs on a possibly shared
machine: read them, never assert on them.

Usage::

    python bench/bench_special.py [--sizes 1000 1000000] [--runs 7] [--functions gammainc ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import pytensor.tensor as pt  # noqa: E402
import scipy.special as sp  # noqa: E402

from backends.onnx.runtime import DISABLED_OPTIMIZERS  # noqa: E402
from compiler import compile_to_onnx  # noqa: E402

def inverse_arguments(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(a, y) float64 vectors of n elements: a log-uniform in [0.1, 100], y
    uniform in (0, 1) for half the elements and log-uniform in [1e-30, 1] for the other half."""
    a = np.exp(rng.uniform(np.log(0.1), np.log(100.0), n))
    return a, np.where(rng.uniform(size=n) < 0.5, rng.uniform(size=n), np.exp(rng.uniform(np.log(1e-30), 0, n)))




def arguments(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(a, x) float64 vectors of n elements (see the module docstring)."""
    a = np.exp(rng.uniform(np.log(0.1), np.log(100.0), n))
    return a, a * np.exp(rng.normal(size=n))


def owens_t_arguments(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(h, a) for ``owens_t``: h ~ N(0, 3), a ~ N(0, 4) (a SkewNormal CDF's z and alpha),
    so every Patefield-Tandy method and the |a| > 1 reduction run."""
    return rng.normal(0, 3, n), rng.normal(0, 4, n)




def bessel_arguments(n: int, rng) -> tuple[np.ndarray]:
    """x for j0/j1: half uniform in [0, 5] (the rational form), half log-uniform in [5, 1e4] (Hankel)."""
    half = n // 2
    return (np.concatenate([rng.uniform(0, 5, half), np.exp(rng.uniform(np.log(5.0), np.log(1e4), n - half))]),)


def betaincinv_arguments(n: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, y) for betaincinv: a, b log-uniform in [0.1, 100], y as ``inverse_arguments``."""
    a, b = np.exp(rng.uniform(np.log(0.1), np.log(100.0), (2, n)))
    return a, b, inverse_arguments(n, rng)[1]


def ive_arguments(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(v, x) for ive, kve and jv: v uniform in [-5, 30] (non-integer: the general methods; jv's series,
    Steed's method and large-x form), x = |v| exp(N(0, 1)) + 0.1."""
    v = rng.uniform(-5, 30, n)
    return v, np.abs(v) * np.exp(rng.normal(size=n)) + 0.1


def hyp2f1_arguments(n: int, rng) -> tuple[np.ndarray, ...]:
    """(a, b, c, z) for hyp2f1: a, b uniform in [-5, 5], c in [0.5, 10], z uniform in [-3, 0.99]
    (the series, Pfaff's and the 1 - z transformations, and 1/z below -2)."""
    return rng.uniform(-5, 5, n), rng.uniform(-5, 5, n), rng.uniform(0.5, 10, n), rng.uniform(-3, 0.99, n)


# name -> (PyTensor function, SciPy function, argument generator)
FUNCTIONS = {"gammainc": (pt.gammainc, sp.gammainc, arguments), "gammaincc": (pt.gammaincc, sp.gammaincc, arguments),
             "gammaincinv": (pt.gammaincinv, sp.gammaincinv, inverse_arguments),
             "gammainccinv": (pt.gammainccinv, sp.gammainccinv, inverse_arguments),
             "owens_t": (pt.owens_t, sp.owens_t, owens_t_arguments),
             "j0": (pt.j0, sp.j0, bessel_arguments), "j1": (pt.j1, sp.j1, bessel_arguments),
             "ive": (pt.math.ive, sp.ive, ive_arguments), "kve": (pt.kve, sp.kve, ive_arguments),
             "jv": (pt.jv, sp.jv, ive_arguments), "hyp2f1": (pt.hyp2f1, sp.hyp2f1, hyp2f1_arguments),
             "betaincinv": (pt.betaincinv, sp.betaincinv, betaincinv_arguments)}


def median_seconds(fn, runs: int) -> float:
    """Median wall-clock seconds of ``fn()`` over ``runs`` calls (after one warm-up)."""
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 1_000_000])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--functions", nargs="+", choices=sorted(FUNCTIONS), default=list(FUNCTIONS))
    args = parser.parse_args(argv)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    print(f"{'function':<12} {'n':>8} {'onnxruntime el/s':>17} {'scipy el/s':>12} {'ratio':>6}")
    for name in args.functions:
        op, ref, generate = FUNCTIONS[name]
        inputs = [pt.dvector(f"x{i}") for i in range(len(generate(1, np.random.default_rng(0))))]
        model = compile_to_onnx(inputs, outputs=[op(*inputs)])
        session = ort.InferenceSession(model.model.SerializeToString(), options, providers=["CPUExecutionProvider"],
                                       disabled_optimizers=DISABLED_OPTIMIZERS)
        names = [i.name for i in session.get_inputs()]
        for n in args.sizes:
            values = generate(n, np.random.default_rng(0))
            feed = dict(zip(names, values))
            onnx_s = median_seconds(lambda: session.run(None, feed), args.runs)
            scipy_s = median_seconds(lambda: ref(*values), args.runs)
            print(f"{name:<12} {n:>8} {n / onnx_s:>17.3g} {n / scipy_s:>12.3g} {scipy_s / onnx_s:>6.2f}")


if __name__ == "__main__":
    main()
