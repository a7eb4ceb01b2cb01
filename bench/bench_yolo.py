"""YOLO11n-class latency in onnxruntime: our export against torch.onnx's.

Builds ``bench.models.yolo11n`` twice from one seed (PyTensor graph from
``compiler.nn``, and the PyTorch twin with the same weights), exports it with
``compile_to_onnx`` and with ``torch.onnx.export(..., dynamo=True)`` (and the
legacy TorchScript exporter, ``dynamo=False``, when it works), checks that
every export computes what the torch module computes, then times each model in
onnxruntime: 1 intra-op and 1 inter-op thread, ``ORT_ENABLE_ALL``, batch 1.

The verdict is built to survive a shared, noisy machine:

- a second session of the dynamo export (the control) measures the noise:
  its ratio to the first would be 1.000 on a quiet, unbiased machine;
- sessions are created in a random order (the first session created in a
  process tends to run a little slower) and timed round-robin, one call each
  per round in a new random order, so load hits them alike;
- each call is compared with the dynamo call of the same round (a paired
  ratio); the table gives the median paired ratio with a 95% bootstrap
  interval, for wall-clock time and for the calling thread's CPU time (which
  leaves out the time other processes held the core).

The verdict "at most 1.0x" holds when the median paired ratio plus the
control's distance from 1 stays at or below 1 (and the interval's upper end
too), on both clocks.

Usage::

    python bench/bench_yolo.py [--rounds 300] [--seed 0] [--size 320]
                               [--numerics fast strict] [--check-only] [--no-control] [--ops]

``--check-only`` runs the numerical self-check and no timing; ``--ops`` also
prints, per export, the node counts by op type before and after onnxruntime's
graph optimizations. Needs torch (the ``bench`` extra). Timings are wall
clock and CPU time: read the ratios, never assert on them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.models import yolo11n  # noqa: E402

# The exports agree with the torch module within this much, relative to the
# output's largest magnitude (float32, different summation orders).
CHECK_RTOL = 1e-5


def ours(seed: int, size: int, numerics: str | None):
    """Our export: ``(onnx ModelProto, seconds to compile and serialize it)``."""
    from compiler import compile_to_onnx

    images, out, _ = yolo11n.build_pytensor(seed, size)
    kwargs = {} if numerics is None else {"numerics": numerics}
    t = time.perf_counter()
    m = compile_to_onnx([images], outputs=[out], **kwargs)
    m.model.SerializeToString()  # serialized, as torch.onnx.export writes its file
    return m.model, time.perf_counter() - t


def torch_export(module, x, dynamo: bool, path: str):
    """Export ``module`` at input ``x`` to ``path`` with torch.onnx; returns
    the path or raises what the exporter raised."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            torch.onnx.export(module, (torch.from_numpy(x),), path, dynamo=True, input_names=["images"],
                              external_data=False)
        else:
            torch.onnx.export(module, (torch.from_numpy(x),), path, dynamo=False, input_names=["images"],
                              opset_version=18)
    return path


def session(model_or_path, optimized_path: str | None = None):
    """An onnxruntime session: 1 thread, ORT_ENABLE_ALL, CPU."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if optimized_path:
        so.optimized_model_filepath = optimized_path
    src = model_or_path if isinstance(model_or_path, str) else model_or_path.SerializeToString()
    return ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])


def op_counts(path: str) -> Counter:
    """Node counts by op type (domain-qualified when not ONNX) of a model file."""
    import onnx

    g = onnx.load(path, load_external_data=False).graph
    return Counter(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}:{n.op_type}" for n in g.node)


def time_round_robin(sessions: dict, x: np.ndarray, rounds: int, rng) -> tuple[dict, dict]:
    """Per session, the wall-clock and thread-CPU seconds of each of ``rounds``
    calls, one call per session per round in a new random order (after 5
    warm-up calls each). Returns ``(wall, cpu)``: label -> list of seconds,
    index r being round r."""
    feeds = {label: {s.get_inputs()[0].name: x} for label, s in sessions.items()}
    for label, s in sessions.items():
        for _ in range(5):
            s.run(None, feeds[label])
    wall = {label: [] for label in sessions}
    cpu = {label: [] for label in sessions}
    order = list(sessions)
    for _ in range(rounds):
        rng.shuffle(order)  # a new order each round: no session always runs right after another
        for label in order:
            s, feed = sessions[label], feeds[label]
            t, c = time.perf_counter(), time.thread_time()
            s.run(None, feed)
            cpu[label].append(time.thread_time() - c)
            wall[label].append(time.perf_counter() - t)
    return wall, cpu


def paired_ratio(times: list, ref: list, seed: int, resamples: int = 2000) -> tuple[float, float, float]:
    """Median over rounds of ``times[r] / ref[r]`` and a 95% bootstrap
    interval of that median: ``(median, low, high)``."""
    r = np.asarray(times) / np.asarray(ref)
    boot = np.random.default_rng(seed).choice(r, size=(resamples, r.size))
    low, high = np.percentile(np.median(boot, axis=1), [2.5, 97.5])
    return float(np.median(r)), float(low), float(high)


def print_table(sessions: dict, paths: dict, opt_paths: dict, wall: dict, cpu: dict, seed: int) -> None:
    """The latency table (medians, paired ratios to the dynamo session with
    95% intervals, on both clocks) and, when the control ran, the verdict
    for each of our exports."""
    ref = "torch dynamo"
    print(f"{'export':<18}{'nodes':>6}{'ort':>5}{'wall ms':>9}{'cpu ms':>8}"
          f"{'wall ratio [95%]':>23}{'cpu ratio [95%]':>23}")
    ratios = {}
    for label in sessions:
        n_in, n_opt = sum(op_counts(paths[label]).values()), sum(op_counts(opt_paths[label]).values())
        cells = []
        for clock, times in (("wall", wall), ("cpu", cpu)):
            if ref in times:
                ratios[label, clock] = paired_ratio(times[label], times[ref], seed)
                med, low, high = ratios[label, clock]
                cells.append(f"{med:.3f} [{low:.3f}-{high:.3f}]")
            else:
                cells.append("-")
        print(f"{label:<18}{n_in:>6}{n_opt:>5}{statistics.median(wall[label]) * 1e3:>9.2f}"
              f"{statistics.median(cpu[label]) * 1e3:>8.2f}{cells[0]:>23}{cells[1]:>23}")
    control = f"{ref} (2)"
    if control not in sessions:
        return
    for label in sessions:
        if not label.startswith("ours"):
            continue
        verdicts = []
        for clock in ("wall", "cpu"):
            med, _, high = ratios[label, clock]
            noise = abs(1 - ratios[control, clock][0])
            ok = med + noise <= 1 and high <= 1
            verdicts.append(f"{clock} {med:.3f} + control noise {noise:.3f} -> {'holds' if ok else 'NOT shown'}")
        print(f"verdict, {label} at most 1.0x dynamo: " + "; ".join(verdicts))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--size", type=int, default=yolo11n.IMAGE_SIZE)
    ap.add_argument("--numerics", nargs="*", default=None,
                    help="compile_to_onnx numerics modes to time (default: the compiler's default only)")
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--ops", action="store_true")
    ap.add_argument("--no-control", action="store_true",
                    help="do not time a second session of the dynamo export (the noise control)")
    args = ap.parse_args(argv)

    import onnx
    import onnxruntime as ort
    import torch

    torch.set_num_threads(1)  # pinned and printed: torch's default (one per core) is ~6x slower on a loaded machine
    x = np.random.default_rng(args.seed + 1).standard_normal(yolo11n.input_shape(args.size)).astype(np.float32)
    module = yolo11n.build_torch(args.seed, args.size)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    scale = float(np.abs(want).max())

    tmp = tempfile.mkdtemp(prefix="bench_yolo_")
    entries = []  # (label, path)
    for mode in (args.numerics if args.numerics else [None]):
        proto, seconds = ours(args.seed, args.size, mode)
        label = "ours" if mode is None else f"ours ({mode})"
        path = os.path.join(tmp, f"ours_{mode}.onnx")
        onnx.save(proto, path)
        print(f"{label}: compiled and serialized in {seconds:.2f} s")
        entries.append((label, path))
    for label, dynamo in (("torch dynamo", True), ("torch legacy", False)):
        path = os.path.join(tmp, f"{label.replace(' ', '_')}.onnx")
        try:
            t = time.perf_counter()
            torch_export(module, x, dynamo, path)
            print(f"{label}: exported and saved in {time.perf_counter() - t:.2f} s "
                  f"(torch threads {torch.get_num_threads()})")
            entries.append((label, path))
        except Exception as e:  # an exporter failure is reported, not fatal
            print(f"{label}: export failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")

    sessions, ok = {}, True
    for label, path in entries:
        opt = path.replace(".onnx", ".ort-opt.onnx")
        sess = session(path, opt)
        got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        err = float(np.abs(got - want).max()) / scale
        good = got.shape == want.shape and err <= CHECK_RTOL
        ok &= good
        print(f"{label}: max |onnxruntime - torch| / max|torch| = {err:.2e} ({'ok' if good else 'MISMATCH'})")
        sessions[label] = (None, path, opt)  # timed below in fresh sessions
        del sess
    if not ok:
        print("self-check FAILED")
        return 1
    print(f"self-check ok: every export within {CHECK_RTOL:g} of the torch module")
    if args.check_only:
        return 0
    paths = {label: path for label, (_, path, _) in sessions.items()}
    if not args.no_control and "torch dynamo" in paths:
        paths["torch dynamo (2)"] = paths["torch dynamo"]
    rng = np.random.default_rng(args.seed)
    timed = {}
    for label in rng.permutation(list(paths)):  # a random creation order: no export always comes first
        timed[str(label)] = session(paths[label])
    timed = {label: timed[label] for label in paths}  # table order
    wall, cpu = time_round_robin(timed, x, args.rounds, rng)
    opt_paths = {label: sessions[label.replace(" (2)", "")][2] for label in timed}
    print(f"\nYOLO11n-class {args.size}x{args.size}, batch 1, onnxruntime {ort.__version__} CPU, 1 thread, "
          f"ORT_ENABLE_ALL, torch {torch.__version__} ({torch.get_num_threads()} thread); "
          f"{args.rounds} round-robin rounds")
    print_table(timed, paths, opt_paths, wall, cpu, args.seed)
    if args.ops:
        for label, (_, path, opt) in sessions.items():
            print(f"\n{label}: emitted {dict(op_counts(path).most_common())}")
            print(f"{label}: after onnxruntime {dict(op_counts(opt).most_common())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
