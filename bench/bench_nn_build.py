"""Build time of the YOLO11n-class model (``bench/models/yolo11n.py``):
the PyTensor graph from ``compiler.nn`` helpers against the torch twin.

Each row is the median over ``--repeats`` builds, in this process, of:

* ``weights``: drawing the weights (``yolo11n.weights``), which both builds do;
* ``compiler.nn``: ``yolo11n.build_pytensor`` (weights, shared variables and
  the graph of every helper call), with the cache of helper ops
  (``compiler.nn.base._shared_op``) cleared first: a first build;
* ``compiler.nn, ops cached``: the same, reusing the ops of earlier builds;
* ``torch module``: ``yolo11n.build_torch`` (weights and the ``nn.Module``);
* ``torch module + forward``: the module and one forward pass at batch 1
  under ``torch.no_grad`` (torch only builds its graph when it runs).

The ratio column is against ``torch module``; the issue's target is at most
3x. Needs torch (the ``bench`` extra). CPU seconds of this process and wall
seconds are both shown: the machine may be shared.

Usage::

    python bench/bench_nn_build.py [--repeats 5] [--size 320]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.models import yolo11n  # noqa: E402
from compiler.nn import base  # noqa: E402


def timed(fn, repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``fn()`` over ``repeats`` calls."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--size", type=int, default=yolo11n.IMAGE_SIZE)
    args = parser.parse_args()
    import numpy as np
    import torch

    torch.set_num_threads(1)
    image = torch.from_numpy(np.zeros(yolo11n.input_shape(args.size), np.float32))

    def torch_forward():
        module = yolo11n.build_torch(0, args.size)
        with torch.no_grad():
            module(image)

    yolo11n.build_pytensor(0, args.size)  # warm imports and caches on both sides
    torch_forward()
    def cold():
        base._shared_op.cache_clear()  # no op of an earlier build reused
        yolo11n.build_pytensor(0, args.size)

    rows = [("weights", lambda: yolo11n.weights(0)),
            ("compiler.nn", cold),
            ("compiler.nn, ops cached", lambda: yolo11n.build_pytensor(0, args.size)),
            ("torch module", lambda: yolo11n.build_torch(0, args.size)),
            ("torch module + forward", torch_forward)]
    results = {name: timed(fn, args.repeats) for name, fn in rows}
    reference = results["torch module"][1]
    print(f"YOLO11n-class at {args.size}x{args.size}, median of {args.repeats} builds")
    print(f"{'build':<26} {'wall s':>8} {'cpu s':>8} {'cpu / torch module':>19}")
    for name, (wall, cpu) in results.items():
        print(f"{name:<26} {wall:>8.3f} {cpu:>8.3f} {cpu / reference:>19.2f}")


if __name__ == "__main__":
    main()
