"""PyMC benchmark: the twelve models of issue 9 (``tests/pymc/models.py``)
and the CDF models of issue 26 (``tests/pymc/cdf_models.py``) as samplers call them, ``model.logp_dlogp_function(ravel_inputs=True)``
(one raveled point in, logp and its gradient out).

Per model and number of observations: the ONNX node count, and the median
per-call latency of logp+gradient in onnxruntime (the compiled ONNX model,
one ``InferenceSession.run`` with one intra-op thread by default) and in PyTensor's C mode (the same compiled
``pytensor.function``, called directly), with their ratio. The target of
issue 9 is ratio <= 2 at 10,000 observations.

Usage::

    python bench/bench_pymc.py [--sizes 100 10000] [--runs 200] [--models radon ar2] [--clock cpu]

Timings are wall clock on a possibly shared machine: read the medians, and
never assert on them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

from backends.onnx.runtime import DISABLED_OPTIMIZERS  # noqa: E402

from compiler import compile_to_onnx  # noqa: E402
from compiler.tools.demo_pymc import median_seconds  # noqa: E402
from tests.pymc.cdf_models import CDF_MODELS  # noqa: E402
from tests.pymc.models import MODELS as BASE_MODELS  # noqa: E402

MODELS = BASE_MODELS | CDF_MODELS  # issue 9's twelve and issue 26's CDF models


CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


def measure(name: str, n: int, runs: int, threads: int = 1, clock: str = "wall") -> dict:
    """Node count and latencies of model ``name`` with ``n`` observations
    (``clock``: a key of ``CLOCKS``)."""
    model = MODELS[name](n)
    fn = model.logp_dlogp_function(ravel_inputs=True)  # PyTensor's default (C) mode
    fn.set_extra_values({})
    f = fn._pytensor_function
    compiled = compile_to_onnx(f)
    point = model.initial_point()
    x = np.concatenate([np.ravel(point[v.name]) for v in model.value_vars])
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads  # PyTensor's C mode is single-threaded
    session = ort.InferenceSession(compiled.model.SerializeToString(), options, providers=["CPUExecutionProvider"],
                                   disabled_optimizers=DISABLED_OPTIMIZERS)
    feed = {compiled.input_names[0]: x}
    got, want = session.run(None, feed), f(x)
    err = max(float(np.max(np.abs(g - w)) / max(np.max(np.abs(w)), 1e-300)) for g, w in zip(got, want))
    tick = CLOCKS[clock]
    return {"nodes": len(compiled.model.graph.node),
            "onnx": median_seconds(lambda: session.run(None, feed), runs, tick),
            "pytensor": median_seconds(lambda: f(x), runs, tick), "err": err}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 10_000])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--threads", type=int, default=1,
                        help="onnxruntime intra-op threads (default 1, like PyTensor's C mode; 0: its default)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall: perf_counter; cpu: the calling thread's CPU time (robust on a loaded "
                             "machine; meaningful with --threads 1, where both run on the calling thread)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    print(f"{'model':<22} {'obs':>6} {'nodes':>6} {'onnxruntime':>12} {'PyTensor C':>11} {'ratio':>6} "
          f"{'rel err':>8}")
    for name in args.models:
        for n in args.sizes:
            r = measure(name, n, args.runs, args.threads, args.clock)
            print(f"{name:<22} {n:>6} {r['nodes']:>6} {r['onnx'] * 1e6:>10.1f}us {r['pytensor'] * 1e6:>9.1f}us "
                  f"{r['onnx'] / r['pytensor']:>6.2f} {r['err']:>8.1e}", flush=True)


if __name__ == "__main__":
    main()
