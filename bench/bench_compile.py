"""Compile-time benchmark: does ``compile_to_onnx`` scale linearly with graph size?

Builds PyTensor graphs of growing size, compiles each several times with
``compile_to_onnx`` (default pipeline) and prints, per graph: its size, the
median compile time, microseconds per node, and the median time of each stage
(lowering, every pass of the pipeline from ``CompiledModel.history``, ONNX
emission, and the driver's hook: verifier and IR printing after each stage).
A last table gives each stage's growth exponent (slope of log time against
log size); about 1 is linear, and stages clearly above are flagged.

Workloads (sizes count PyTensor Apply nodes):
    ladder   ``u, v = v, tanh(u @ W) * v + u`` repeated: matmul and
             elementwise nodes only, nothing for the passes to simplify.
    consts   ``u, v = v, exp(u * c_i) + v`` with a distinct scalar ``c_i`` per
             step: every step adds a broadcast ``ExpandDims`` of a constant,
             so constant folding and constant bookkeeping get work.

Usage::

    python bench/bench_compile.py [--sizes 100 1000 10000] [--repeats 3]
                                  [--workloads ladder consts] [--verify-each-pass]

Timings are wall clock on a possibly shared machine: read the medians, and
never assert on them.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from typing import Callable

import numpy as np

# Growth exponent above which a stage is called superlinear (1.0 is linear;
# timer noise on small graphs moves it by a few tenths).
SUPERLINEAR_EXPONENT = 1.3
# Stages faster than this at the largest size are not flagged: their times are
# timer and garbage-collector noise.
FLAG_MIN_SECONDS = 0.05
WIDTH = 8  # the matrices' side: small, so the benchmark measures the compiler


def ladder(size: int):
    """``(inputs, outputs)`` of a chain of matmuls and elementwise ops with
    about ``size`` PyTensor Apply nodes (4 per step)."""
    import pytensor.tensor as pt

    w = pt.tensor("W", dtype="float32", shape=(WIDTH, WIDTH))
    u = a = pt.tensor("a", dtype="float32", shape=(None, WIDTH))
    v = b = pt.tensor("b", dtype="float32", shape=(None, WIDTH))
    for _ in range(max(1, size // 4)):
        u, v = v, pt.tanh(u @ w) * v + u
    return [a, b, w], [v]


def consts(size: int):
    """``(inputs, outputs)`` of an elementwise chain with one distinct scalar
    constant per step, about ``size`` PyTensor Apply nodes (4 per step:
    ExpandDims of the constant, mul, exp, add)."""
    import pytensor.tensor as pt

    u = a = pt.tensor("a", dtype="float32", shape=(None, WIDTH))
    v = b = pt.tensor("b", dtype="float32", shape=(None, WIDTH))
    for i in range(max(1, size // 4)):
        u, v = v, pt.exp(u * np.float32(1 + i * 1e-4)) + v
    return [a, b], [v]


WORKLOADS: dict[str, Callable] = {"ladder": ladder, "consts": consts}


@dataclass
class Measurement:
    """Medians over the repeats for one graph: total seconds and seconds per
    stage (in pipeline order; repeated pass names get ``#2``, ``#3``...)."""

    workload: str
    apply_nodes: int
    ir_nodes: int
    onnx_nodes: int
    total: float
    cpu: float
    stages: dict[str, float]


def count_apply_nodes(inputs, outputs) -> int:
    """Apply nodes between ``inputs`` and ``outputs`` (PyTensor's toposort)."""
    try:
        from pytensor.graph.traversal import io_toposort
    except ImportError:  # PyTensor < 2.32
        from pytensor.graph.basic import io_toposort
    return len(io_toposort(inputs, outputs))


def _stage_names(history) -> list[str]:
    seen: Counter = Counter()
    names = []
    for record in history:
        seen[record.name] += 1
        names.append(record.name if seen[record.name] == 1 else f"{record.name}#{seen[record.name]}")
    return names


def measure(workload: str, size: int, repeats: int, verify: bool) -> Measurement:
    """Compile the ``workload`` graph of ``size`` nodes ``repeats`` times;
    returns the medians. Emission is timed by emitting the final IR again
    (``backends.onnx.emit_model``); the hook column is what is left of the
    total (verifier and IR printing after every stage, IR dumps: none here)."""
    from backends.onnx import emit_model
    from compiler import compile_to_onnx

    inputs, outputs = WORKLOADS[workload](size)
    per_stage: dict[str, list[float]] = {}
    totals, cpus = [], []
    for _ in range(repeats):
        cpu_start = time.process_time()
        compiled = compile_to_onnx(inputs, outputs=outputs, verify_each_pass=verify)
        cpus.append(time.process_time() - cpu_start)
        start = time.perf_counter()
        emit_model(compiled.ir)
        emit = time.perf_counter() - start
        stages = dict(zip(_stage_names(compiled.history), (r.seconds for r in compiled.history)))
        stages["emit"] = emit
        stages["hooks"] = compiled.compile_seconds - sum(stages.values())
        for name, seconds in stages.items():
            per_stage.setdefault(name, []).append(seconds)
        totals.append(compiled.compile_seconds)
    ir_nodes = compiled.history[0].nodes
    return Measurement(workload, count_apply_nodes(inputs, outputs), ir_nodes, len(compiled.model.graph.node),
                       statistics.median(totals), statistics.median(cpus), {k: statistics.median(v) for k, v in per_stage.items()})


def growth_exponent(sizes: list[int], seconds: list[float]) -> float:
    """The least-squares slope of log(seconds) against log(size): 1 for
    linear growth, 2 for quadratic."""
    return float(np.polyfit(np.log(sizes), np.log(np.maximum(seconds, 1e-9)), 1)[0])


def format_table(rows: list[Measurement]) -> str:
    """The results table: one row per graph, stage columns in milliseconds."""
    stages = list(rows[0].stages)
    header = ["workload", "apply", "ir", "onnx", "median s", "cpu s", "us/node"] + [f"{s} ms" for s in stages]
    body = [[m.workload, str(m.apply_nodes), str(m.ir_nodes), str(m.onnx_nodes), f"{m.total:.3f}",
             f"{m.cpu:.3f}", f"{m.total / m.apply_nodes * 1e6:.1f}"] + [f"{m.stages[s] * 1e3:.1f}" for s in stages]
            for m in rows]
    widths = [max(len(r[i]) for r in [header] + body) for i in range(len(header))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(r, widths)) for r in [header] + body)


def format_exponents(rows: list[Measurement]) -> str:
    """Per workload and stage, the growth exponent between each pair of
    successive sizes (a quadratic term shows first in the last interval),
    with ``SUPERLINEAR`` after a stage whose last exponent is above
    ``SUPERLINEAR_EXPONENT`` and that takes at least ``FLAG_MIN_SECONDS``."""
    lines = ["growth exponents between successive sizes (slope of log time vs log nodes; 1 = linear):"]
    for workload in dict.fromkeys(m.workload for m in rows):
        ms = [m for m in rows if m.workload == workload]
        if len(ms) < 2:
            continue
        sizes = [m.apply_nodes for m in ms]
        cells = []
        for stage in ["total"] + list(ms[0].stages):
            secs = [m.total if stage == "total" else m.stages[stage] for m in ms]
            ks = [growth_exponent(sizes[i:i + 2], secs[i:i + 2]) for i in range(len(ms) - 1)]
            flag = ks[-1] > SUPERLINEAR_EXPONENT and secs[-1] >= FLAG_MIN_SECONDS
            cells.append(f"{stage:>18} " + " ".join(f"{k:5.2f}" for k in ks) + ("  SUPERLINEAR" if flag else ""))
        lines.append(f"  {workload} ({' -> '.join(map(str, sizes))}):")
        lines += [f"    {cell}" for cell in cells]
    return "\n".join(lines)


def main(argv=None) -> None:
    """Parse the command line, run the measurements and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000],
                        help="graph sizes in PyTensor Apply nodes (default: 100 1000 10000)")
    parser.add_argument("--repeats", type=int, default=3, help="compilations per graph (default: 3)")
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--verify-each-pass", action="store_true", help="compile with verify_each_pass=True")
    args = parser.parse_args(argv)

    rows = []
    for workload in args.workloads:
        for size in args.sizes:
            rows.append(measure(workload, size, args.repeats, verify=args.verify_each_pass))
            print(f"measured {workload} {size}", flush=True)
    print(f"\nmedian of {args.repeats} compilations; verify_each_pass={args.verify_each_pass}")
    print(format_table(rows))
    print()
    print(format_exponents(rows))


if __name__ == "__main__":
    main()
