"""YOLO11n-class latency in onnxruntime: our export against torch.onnx's.

Builds ``bench.models.yolo11n`` twice from one seed (PyTensor graph from
``compiler.nn``, and the PyTorch twin with the same weights), exports it with
``compile_to_onnx`` and with ``torch.onnx.export(..., dynamo=True)`` (and the
legacy TorchScript exporter, ``dynamo=False``, when it works), checks that
every export computes what the torch module computes, then times each model in
onnxruntime: 1 intra-op and 1 inter-op thread, ``ORT_ENABLE_ALL``, batch 1.
Sessions are timed round-robin (one call each per round, in a new random
order each round) so that load on a shared machine hits them alike; the table gives the median per-call latency
and its ratio to the dynamo export.

Usage::

    python bench/bench_yolo.py [--rounds 200] [--seed 0] [--size 320]
                               [--numerics fast strict] [--check-only] [--control] [--ops]

``--check-only`` runs the numerical self-check and no timing; ``--control``
adds a second session of the dynamo export, whose ratio to the first shows
the noise of the machine; ``--ops`` also
prints, per export, the node counts by op type before and after onnxruntime's
graph optimizations. Needs torch (the ``bench`` extra). Timings are wall
clock: read the medians, never assert on them.
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
    """Our export: ``(onnx ModelProto, compile seconds)``."""
    from compiler import compile_to_onnx

    images, out, _ = yolo11n.build_pytensor(seed, size)
    kwargs = {} if numerics is None else {"numerics": numerics}
    t = time.perf_counter()
    m = compile_to_onnx([images], outputs=[out], **kwargs)
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--size", type=int, default=yolo11n.IMAGE_SIZE)
    ap.add_argument("--numerics", nargs="*", default=None,
                    help="compile_to_onnx numerics modes to time (default: the compiler's default only)")
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--ops", action="store_true")
    ap.add_argument("--control", action="store_true", help="time the dynamo export twice (noise control)")
    args = ap.parse_args(argv)

    import onnx
    import onnxruntime as ort
    import torch

    torch.set_num_threads(1)
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
        print(f"{label}: compiled in {seconds:.1f} s")
        entries.append((label, path))
    for label, dynamo in (("torch dynamo", True), ("torch legacy", False)):
        path = os.path.join(tmp, f"{label.replace(' ', '_')}.onnx")
        try:
            torch_export(module, x, dynamo, path)
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
        sessions[label] = (sess, path, opt)
    if not ok:
        print("self-check FAILED")
        return 1
    print(f"self-check ok: every export within {CHECK_RTOL:g} of the torch module")
    if args.check_only:
        return 0
    if args.control and "torch dynamo" in sessions:
        _, path, opt = sessions["torch dynamo"]
        sessions["torch dynamo (2)"] = (session(path), path, opt)

    times = {label: [] for label in sessions}
    feeds = {label: {s.get_inputs()[0].name: x} for label, (s, _, _) in sessions.items()}
    for label, (s, _, _) in sessions.items():  # warm up
        for _ in range(5):
            s.run(None, feeds[label])
    order, rng = list(sessions), np.random.default_rng(args.seed)
    for _ in range(args.rounds):
        rng.shuffle(order)  # a new order each round: no session always runs right after another
        for label in order:
            s = sessions[label][0]
            t = time.perf_counter()
            s.run(None, feeds[label])
            times[label].append(time.perf_counter() - t)

    ref = statistics.median(times["torch dynamo"]) if "torch dynamo" in times else None
    print(f"\nYOLO11n-class {args.size}x{args.size}, batch 1, onnxruntime {ort.__version__} CPU, 1 thread, "
          f"ORT_ENABLE_ALL, torch {torch.__version__}; median of {args.rounds} round-robin calls")
    print(f"{'export':<16}{'nodes':>7}{'ort nodes':>11}{'median ms':>11}{'p10 ms':>9}{'p90 ms':>9}{'vs dynamo':>11}")
    for label, (s, path, opt) in sessions.items():
        ts = sorted(times[label])
        med = statistics.median(ts)
        p10, p90 = ts[len(ts) // 10], ts[(9 * len(ts)) // 10]
        n_in, n_opt = sum(op_counts(path).values()), sum(op_counts(opt).values())
        ratio = f"{med / ref:.3f}" if ref else "-"
        print(f"{label:<16}{n_in:>7}{n_opt:>11}{med * 1e3:>11.2f}{p10 * 1e3:>9.2f}{p90 * 1e3:>9.2f}{ratio:>11}")
    if args.ops:
        for label, (_, path, opt) in sessions.items():
            print(f"\n{label}: emitted {dict(op_counts(path).most_common())}")
            print(f"{label}: after onnxruntime {dict(op_counts(opt).most_common())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
