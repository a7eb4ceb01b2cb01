"""Scan benchmark: compile time of an unrolled RNN, and onnxruntime latency
of the unrolled and the Loop forms side by side.

The model is the Elman RNN ``h_t = tanh(x_t W + h_{t-1} U + b)`` of the
control-flow tests (``tests/control_flow/models.py``: batch 2, 3 inputs, 4
hidden units, float64). Compile time is measured for the length ``T`` fixed
in the PyTensor graph (``scan-unroll`` with its threshold raised to ``T``
unrolls it), with and without the driver's verifier after each pass, and
split into the time of each stage (``CompiledModel.history``) and the rest
(emission and the driver's hooks). Latency is the median of ``--runs``
onnxruntime calls of each form at that length, after one warm-up call.

Usage::

    python bench/bench_scan.py [--lengths 50 200] [--repeats 5] [--runs 50]

Timings are wall clock on a possibly shared machine: read the medians and
the CPU column, and never assert on them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from compiler import compile_to_onnx  # noqa: E402
from passes.scan_unroll import ScanUnroll  # noqa: E402
from tests.control_flow import models  # noqa: E402
from tests.control_flow.helpers import onnx_ops  # noqa: E402

TARGET_SECONDS = 1.0  # the compile-time target for the unrolled T = 200 RNN


def pipeline(T: int) -> list:
    """The control-flow tests' pipeline, unrolling up to ``T`` steps."""
    return ["canonicalize", "constant-folding", ScanUnroll(max_trip_count=T), "canonicalize",
            "constant-folding", "cse", "dce"]


def compile_times(T: int, repeats: int, verify: bool) -> tuple[float, float, dict, int]:
    """Median wall and CPU seconds of compiling the unrolled RNN of length
    ``T``, median seconds per stage, and the ONNX node count."""
    walls, cpus, stages = [], [], {}
    for _ in range(repeats):
        m = models.elman(T)
        wall, cpu = time.perf_counter(), time.process_time()
        compiled = compile_to_onnx(m.inputs, outputs=m.outputs, passes=pipeline(T), verify_each_pass=verify)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        seen: dict[str, int] = {}
        for record in compiled.history:
            seen[record.name] = seen.get(record.name, 0) + 1
            key = record.name if seen[record.name] == 1 else f"{record.name}#{seen[record.name]}"
            stages.setdefault(key, []).append(record.seconds)
        stages.setdefault("emit+hooks", []).append(walls[-1] - sum(r.seconds for r in compiled.history))
    assert "Loop" not in onnx_ops(compiled.model)
    return (statistics.median(walls), statistics.median(cpus),
            {k: statistics.median(v) for k, v in stages.items()}, len(compiled.model.graph.node))


def latency(T: int, runs: int) -> dict[str, float]:
    """Median onnxruntime seconds per call of the unrolled and Loop forms."""
    out = {}
    for form, length in (("unrolled", T), ("loop", None)):
        m = models.elman(length)
        compiled = compile_to_onnx(m.inputs, outputs=m.outputs, passes=pipeline(T))
        assert ("Loop" in onnx_ops(compiled.model)) == (form == "loop")
        values = m.values(T)
        compiled.run(*values)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            compiled.run(*values)
            times.append(time.perf_counter() - start)
        out[form] = statistics.median(times)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--repeats", type=int, default=5, help="compilations per measurement")
    parser.add_argument("--runs", type=int, default=50, help="onnxruntime calls per latency")
    args = parser.parse_args(argv)

    print(f"compile time of the unrolled Elman RNN (median of {args.repeats}; target for T=200: "
          f"under {TARGET_SECONDS:.0f} s)")
    rows = []
    for T in args.lengths:
        for verify in (True, False):
            wall, cpu, stages, nodes = compile_times(T, args.repeats, verify)
            rows.append((T, "on" if verify else "off", nodes, wall, cpu, stages))
    names = list(rows[0][5])
    header = f"{'T':>4} {'verify':>6} {'onnx':>5} {'median s':>9} {'cpu s':>6} " + " ".join(
        f"{n + ' ms':>{max(9, len(n) + 3)}}" for n in names)
    print(header)
    for T, verify, nodes, wall, cpu, stages in rows:
        print(f"{T:>4} {verify:>6} {nodes:>5} {wall:>9.3f} {cpu:>6.3f} " + " ".join(
            f"{1e3 * stages[n]:>{max(9, len(n) + 3)}.1f}" for n in names))

    print(f"\nonnxruntime latency, median of {args.runs} calls (ms)")
    print(f"{'T':>4} {'unrolled':>9} {'loop':>9} {'loop/unrolled':>14}")
    for T in args.lengths:
        lat = latency(T, args.runs)
        print(f"{T:>4} {1e3 * lat['unrolled']:>9.3f} {1e3 * lat['loop']:>9.3f} {lat['loop'] / lat['unrolled']:>14.2f}")


if __name__ == "__main__":
    main()
