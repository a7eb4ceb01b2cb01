"""Which PyTensor rewrites should run before our lowering in the ONNX mode?

Compiles each workload with ``pytensor.function(..., mode=onnx_mode(rewrites=Q))``
for several rewrite queries ``Q`` and prints, per workload and query: the
number of top-level ONNX nodes, the function's compile time, the median call
latency (onnxruntime plus PyTensor's function overhead), and the latency
ratio against PyTensor's own default mode (Numba in 3.0, C in 2.38) run in
the same process. ``!`` marks a query whose compilation failed (the error's
first line is printed).

Workloads: the demo MLP and CNN (inference, batch 64), the hand-written MNIST
CNN of ``tests/nn/test_mnist_cnn.py`` (``convolve2d`` + sum, reshape-max
pooling), a scan (an RNN of 32 steps over 64 features), and the MLP's SGD
step (gradients, updates).

Usage::

    python bench/bench_mode.py [--repeats 200]

Wall-clock timings on a shared machine: read the medians; never assert on them.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter

import os
import sys

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.rewriting.db import RewriteDatabaseQuery

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from compiler import compiled_model, onnx_mode  # noqa: E402
from compiler.tools.demo import MODELS, inference_graph  # noqa: E402

QUERIES = {
    "minimum_compile": RewriteDatabaseQuery(include=["minimum_compile"]),
    "canonicalize+stabilize": RewriteDatabaseQuery(include=["canonicalize", "stabilize"]),
    "fast_run (no C/BLAS/fusion/inplace)": RewriteDatabaseQuery(include=["fast_run"]),
}


def workloads(rng):
    """name -> (inputs, outputs, updates, argument values)."""
    out = {}
    for name in ("mlp", "cnn"):
        spec = MODELS[name]
        ins, outs = inference_graph(spec.init(0), name)
        out[name] = (ins, outs, None, [rng.random((64, *spec.input_shape), dtype=np.float32)])
    x = pt.tensor("x", dtype="float32", shape=(None, 64))
    W = pytensor.shared((rng.normal(size=(64, 64)) * 0.1).astype(np.float32), name="W")
    h0 = pt.zeros((64,), dtype="float32")
    hs = pytensor.scan(lambda xt, h: pt.tanh(xt + h @ W), sequences=[x], outputs_info=[h0])[0]
    from tests.nn.test_mnist_cnn import by_hand, weights

    ins, outs = by_hand(weights())
    out["cnn-by-hand"] = (ins, outs, None, [rng.random((64, 1, 28, 28), dtype=np.float32)])
    out["scan"] = ([x], [hs[-1]], None, [rng.random((32, 64), dtype=np.float32)])
    spec = MODELS["mlp"]
    params = spec.init(0)
    xs, y = spec.input(), pt.vector("y", dtype="int64")
    probs = pt.special.softmax(spec.logits(xs, params), axis=-1)
    loss = -pt.mean(pt.log(probs[pt.arange(y.shape[0]), y]))
    shared = list(params.values())
    grads = pytensor.grad(loss, shared)
    out["sgd-step"] = ([xs, y], [loss], [(p, p - np.float32(0.01) * g) for p, g in zip(shared, grads)],
                       [rng.random((64, 64), dtype=np.float32), rng.integers(0, 10, 64)])
    return out


def median_call(f, args, repeats: int) -> float:
    f(*args)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"pytensor {pytensor.__version__}; latency = median of {args.repeats} calls")
    print(f"{'workload':<10} {'rewrites':<38} {'nodes':>5} {'compile s':>9} {'call us':>9} {'vs default':>10}  ops")
    for name, (ins, outs, updates, values) in workloads(rng).items():
        ref = pytensor.function(ins, outs, updates=updates)
        ref_t = median_call(ref, values, args.repeats)
        print(f"{name:<10} {'(PyTensor default mode)':<38} {'':>5} {'':>9} {ref_t * 1e6:9.1f} {1.0:10.2f}")
        for qname, query in QUERIES.items():
            t0 = time.perf_counter()
            try:
                f = pytensor.function(ins, outs, updates=updates, mode=onnx_mode(rewrites=query))
            except Exception as e:  # noqa: BLE001 - a benchmark reports failures
                print(f"{'':<10} {qname:<38} ! {type(e).__name__}: {str(e).splitlines()[0][:80]}")
                continue
            compile_s = time.perf_counter() - t0
            t = median_call(f, values, args.repeats)
            model = compiled_model(f).model
            ops = Counter(n.op_type for n in model.graph.node)
            top = ", ".join(f"{k}:{v}" for k, v in ops.most_common(6))
            print(f"{'':<10} {qname:<38} {len(model.graph.node):5d} {compile_s:9.2f} {t * 1e6:9.1f} "
                  f"{t / ref_t:10.2f}  {top}")


if __name__ == "__main__":
    main()
