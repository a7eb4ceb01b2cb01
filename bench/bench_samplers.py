"""Samplers' benchmark: the twelve PyMC models of issue 9
(``tests/pymc/models.py``, at their own data size) through the PyMC front
door (``compiler/pymc_model.py``), beside the backends PyMC users already have.

Per model, calling-thread CPU time (``time.thread_time``) of one logp+gradient,
per point, median over interleaved rounds (every contender runs ``--calls``
calls per round, the rounds alternate, so load hits all alike):

- ``onnx B=1``: ``LogpDlogp`` single-point, ``CompiledModel.run``;
  ``bare``: the same session's ``InferenceSession.run`` (``run/bare``);
- ``B=64``, ``B=1024``: the batched model (one call of B points), per point;
- ``C``: PyTensor's C mode (``model.logp_dlogp_function(ravel_inputs=True)``'s
  compiled function), ``numba``: the same in PyTensor's Numba mode,
  ``nutpie``: nutpie's compiled Numba function (``_make_functions``'s
  ``jit_fn``, not its Python wrapper); each at B = 1 (called in a loop for B > 1,
  so its per-point cost is the B = 1 cost);
- ratios: ``B=1/C`` (target <= 2), ``B=1024/nutpie`` (target <= 0.25).

All onnxruntime sessions get one intra-op thread (PyTensor and Numba run on
the calling thread; a thread pool would move work out of the measured thread).
``--sample`` adds nutpie's sampling wall time (2 chains, 500+500 draws) with
its Numba backend and with ``LogpDlogp.to_nutpie()``.

Usage::

    python bench/bench_samplers.py [--models radon ar2] [--rounds 15] [--calls 50] [--sample]

Needs the ``samplers`` extra (PyMC, nutpie) on the PyTensor 2.38 line. Timings
come from a possibly shared machine: read medians and ratios, never assert.
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
from compiler.pymc_model import compile_logp_dlogp  # noqa: E402
from tests.pymc.models import MODELS  # noqa: E402

BATCHES = (64, 1024)


def one_thread(compiled) -> ort.InferenceSession:
    """``compiled``'s session rebuilt with one intra-op thread, installed as
    the session its ``run`` uses."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(compiled.model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"], disabled_optimizers=DISABLED_OPTIMIZERS)
    compiled._session = session
    return session


def per_call_us(fn, calls: int) -> float:
    """Median calling-thread CPU time of ``fn()`` over ``calls`` calls, in µs."""
    times = []
    for _ in range(calls):
        start = time.thread_time_ns()
        fn()
        times.append(time.thread_time_ns() - start)
    return float(np.median(times)) / 1e3


def contenders(model, seed: int = 0) -> tuple[dict, dict, object]:
    """name -> (zero-argument callable, points per call), the node counts,
    and the single-point front door."""
    import nutpie.compile_pymc as nutpie_pymc
    from pymc.initial_point import make_initial_point_fn

    single, batched = compile_logp_dlogp(model), compile_logp_dlogp(model, "points")
    bare = one_thread(single.compiled)
    one_thread(batched.compiled)
    x = single.initial_point
    rng = np.random.default_rng(seed)
    points = {b: x + 0.1 * rng.normal(size=(b, x.size)) for b in BATCHES}
    c_fn = model.logp_dlogp_function(ravel_inputs=True)
    c_fn.set_extra_values({})
    numba_fn = model.logp_dlogp_function(ravel_inputs=True, mode="NUMBA")
    numba_fn.set_extra_values({})
    start_fn = make_initial_point_fn(model=model, return_transformed=True)
    nutpie_pt = nutpie_pymc._make_functions(model, mode="NUMBA", compute_grad=True, join_expanded=True,
                                            pymc_initial_point_fn=start_fn)[2]
    shared = [v.get_value() for v in nutpie_pt.get_shared()]
    jit = nutpie_pt.vm.jit_fn
    names = single.compiled.output_names
    feed = {single.compiled.input_names[0]: x}
    out = {"onnx B=1": (lambda: single.compiled.run(x), 1),
           "bare": (lambda: bare.run(names, feed), 1),
           "C": (lambda: c_fn._pytensor_function(x), 1),
           "numba": (lambda: numba_fn._pytensor_function(x), 1),
           "nutpie": (lambda: jit(x, *shared), 1)}
    for b in BATCHES:
        out[f"B={b}"] = (lambda p=points[b]: batched.compiled.run(p), b)
    for name, (fn, _) in out.items():
        fn()  # compile caches, first-call allocations
    nodes = {"nodes": len(single.compiled.model.graph.node), "nodes B": len(batched.compiled.model.graph.node)}
    return out, nodes, single


def measure(model, rounds: int, calls: int) -> dict:
    """Per-point µs of every contender, medians over interleaved rounds."""
    fns, row, _ = contenders(model)
    samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, (fn, points) in fns.items():
            samples[name].append(per_call_us(fn, max(3, calls // max(1, points // 16))) / points)
    row.update({name: float(np.median(v)) for name, v in samples.items()})
    row["run/bare"] = float(np.median(np.array(samples["onnx B=1"]) / np.array(samples["bare"])))
    row["B=1/C"] = row["onnx B=1"] / row["C"]
    row["B=1024/nutpie"] = row["B=1024"] / row["nutpie"]
    return row


def sample_seconds(model) -> dict:
    """nutpie's sampling wall time (compilation excluded) with each backend."""
    import nutpie

    single = compile_logp_dlogp(model)
    one_thread(single.compiled)
    out = {}
    for name, compiled in (("nutpie numba s", nutpie.compile_pymc_model(model)), ("nutpie onnx s", single.to_nutpie())):
        start = time.perf_counter()
        nutpie.sample(compiled, chains=2, draws=500, tune=500, seed=1, progress_bar=False)
        out[name] = time.perf_counter() - start
    return out


COLUMNS = ("nodes", "nodes B", "onnx B=1", "bare", "run/bare", "B=64", "B=1024", "C", "numba", "nutpie", "B=1/C",
           "B=1024/nutpie")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--sample", action="store_true", help="also time nutpie's sampling with each backend")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    columns = COLUMNS + (("nutpie numba s", "nutpie onnx s") if args.sample else ())
    print("per point, calling-thread CPU µs (medians); ratios are medians of per-round ratios or of medians")
    print("| model | " + " | ".join(columns) + " |")
    print("|" + "---|" * (len(columns) + 1))
    for name in args.models:
        model = MODELS[name]()
        row = measure(model, args.rounds, args.calls)
        if args.sample:
            row.update(sample_seconds(model))
        cells = [f"{row[c]:.0f}" if c.startswith("nodes") else f"{row[c]:.2f}" if "/" in c or c.endswith(" s")
                 else f"{row[c]:.1f}" for c in columns]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
