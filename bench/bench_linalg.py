"""Linear-algebra benchmark: where the unrolled forms of ``Cholesky`` and
``SolveTriangular`` stop paying (``compiler/lowering/rules/decompositions.py:
UNROLL_LIMITS``), and what the loop forms of ``matrix_loops.py`` cost.

Per op and matrix size n, three forms of the same PyTensor graph:

- ``sliced``: the unrolled column/row algorithm of ``decompositions.py``
  (static n; one step per column on growing slices),
- ``masked``: the loop form on a static n; ``scan-unroll`` unrolls it into
  n copies of the masked full-matrix step while n <= 64, above that it
  stays an ONNX Loop,
- ``loop``: the loop form on a symbolic n (the ONNX Loop is kept).

Printed: ONNX node count, compile time, and the median onnxruntime latency
of one call (one intra-op thread), for one matrix and for a batch of 64.
``Solve`` (LU) has no sliced form. Wall clock on a possibly shared machine:
read the medians, never assert on them.

Usage::

    python bench/bench_linalg.py [--sizes 2 4 8 16 32 64 128] [--runs 200] [--batch 1 64]
    python bench/bench_linalg.py --decompositions [--runs 20]   # Jacobi Eigh/SVD/pinv vs NumPy, n = 4, 32, 128
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import pytensor.tensor as pt  # noqa: E402

from backends.onnx.runtime import DISABLED_OPTIMIZERS  # noqa: E402
from compiler import compile_to_onnx  # noqa: E402
from compiler.tools.demo_pymc import median_seconds  # noqa: E402
from compiler.lowering.rules import decompositions  # noqa: E402

OPS = {
    "cholesky": (lambda a, b: pt.linalg.cholesky(a), True),
    "solve_triangular": (lambda a, b: pt.linalg.solve_triangular(a, b, lower=True, b_ndim=1), True),
    "solve": (lambda a, b: pt.linalg.solve(a, b, b_ndim=1), False),
}


@contextlib.contextmanager
def unroll_limit(limit: int):
    """Every entry of ``decompositions.UNROLL_LIMITS`` set to ``limit`` while compiling."""
    saved = dict(decompositions.UNROLL_LIMITS)
    decompositions.UNROLL_LIMITS.update({op: limit for op in saved})
    try:
        yield
    finally:
        decompositions.UNROLL_LIMITS.update(saved)


def measure(op: str, form: str, n: int, batch: int, runs: int) -> dict:
    """Nodes, compile seconds and median run seconds of ``op`` in ``form``."""
    build, _ = OPS[op]
    static = form != "loop"
    lead = (batch,) if batch > 1 else ()
    a = pt.tensor("a", dtype="float64", shape=lead + ((n, n) if static else (None, None)))
    b = pt.tensor("b", dtype="float64", shape=lead + ((n,) if static else (None,)))
    out = build(a, b)
    inputs = [a, b] if op != "cholesky" else [a]
    start = time.process_time()
    with unroll_limit(10**6 if form == "sliced" else 0):
        compiled = compile_to_onnx(inputs, outputs=[out])
    seconds = time.process_time() - start
    rng = np.random.default_rng(0)
    m = rng.normal(size=lead + (n, n))
    spd = m @ np.swapaxes(m, -1, -2) + n * np.eye(n)
    values = [spd, rng.normal(size=lead + (n,))][:len(inputs)]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(compiled.model.SerializeToString(), options, providers=["CPUExecutionProvider"],
                                   disabled_optimizers=DISABLED_OPTIMIZERS)
    feed = dict(zip(compiled.input_names, values))
    return {"nodes": len(compiled.model.graph.node), "compile": seconds,
            "run": median_seconds(lambda: session.run(None, feed), runs)}


# Jacobi decompositions (rules/eigh.py, rules/svd.py) against NumPy's LAPACK in the same process
DECOMPOSITIONS = {
    "eigh": (lambda a: list(pt.linalg.eigh(a)), np.linalg.eigh, True),
    "eigvalsh": (lambda a: [pt.linalg.eigh(a)[0]], np.linalg.eigvalsh, True),
    "svd": (lambda a: list(pt.linalg.svd(a)), np.linalg.svd, False),
    "svd_values": (lambda a: [pt.linalg.svd(a, compute_uv=False)], lambda x: np.linalg.svd(x, compute_uv=False),
                   False),
    "pinv": (lambda a: [pt.linalg.pinv(a)], np.linalg.pinv, False),
}


def compare_numpy(op: str, n: int, runs: int) -> dict:
    """Median seconds of one call of ``op`` on a random (symmetric where the
    op wants it) ``n x n`` float64 matrix: onnxruntime (one intra-op thread)
    and NumPy (its LAPACK, threads as configured)."""
    build, reference, symmetric = DECOMPOSITIONS[op]
    a = pt.tensor("a", dtype="float64", shape=(n, n))
    compiled = compile_to_onnx([a], outputs=build(a))
    x = np.random.default_rng(0).normal(size=(n, n))
    x = x + x.T if symmetric else x
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(compiled.model.SerializeToString(), options, providers=["CPUExecutionProvider"],
                                   disabled_optimizers=DISABLED_OPTIMIZERS)
    feed = {compiled.input_names[0]: x}
    ours = median_seconds(lambda: session.run(None, feed), runs)
    theirs = median_seconds(lambda: reference(x), runs)
    return {"ours": ours, "numpy": theirs}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64, 128])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 64])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--ops", nargs="+", default=list(OPS))
    parser.add_argument("--decompositions", action="store_true",
                        help="Eigh/Eigvalsh/SVD/pinv (Jacobi) against NumPy at --sizes (default 4 32 128)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    if args.decompositions:
        sizes = args.sizes if argv and "--sizes" in argv else [4, 32, 128]
        print(f"{'op':<11} {'n':>4} | {'onnxruntime':>12} {'numpy':>10} {'ratio':>6}")
        for op in DECOMPOSITIONS:
            for n in sizes:
                r = compare_numpy(op, n, args.runs)
                print(f"{op:<11} {n:>4} | {r['ours'] * 1e6:>10.1f}us {r['numpy'] * 1e6:>8.1f}us "
                      f"{r['ours'] / r['numpy']:>6.1f}", flush=True)
        return
    print(f"{'op':<17} {'batch':>5} {'n':>4} | {'form':<7} {'nodes':>6} {'compile':>8} {'run':>10}")
    for op in args.ops:
        forms = ["sliced", "masked", "loop"] if OPS[op][1] else ["masked", "loop"]
        for batch in args.batch:
            for n in args.sizes:
                for form in forms:
                    r = measure(op, form, n, batch, args.runs)
                    print(f"{op:<17} {batch:>5} {n:>4} | {form:<7} {r['nodes']:>6} {r['compile']:>7.2f}s "
                          f"{r['run'] * 1e6:>8.1f}us", flush=True)


if __name__ == "__main__":
    main()
