"""Large-model benchmark: compile memory and time against the weight size.

Builds ``y = (W * x).sum(axis=1)`` with a float32 shared ``W`` of the given
sizes, writable (the model keeps a copy: its one weight-sized cost) and
read-only (borrowed, no copy), compiles it (``passes=[]`` and the default
pipeline), saves it
(external data past ``--threshold``) and prints, per size: weight MiB,
compile seconds, peak extra memory during compile (MiB, ``tracemalloc``:
Python and NumPy allocations, not onnxruntime's), its ratio to the weight
size, save seconds and the saved files' sizes.

Usage::

    python bench/bench_large_model.py [--mib 64 256 1024] [--threshold-mib 32]

Timings are wall clock on a possibly shared machine: never assert on them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None) -> None:
    import pytensor
    import pytensor.tensor as pt

    from compiler import compile_to_onnx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--threshold-mib", type=int, default=32)
    args = parser.parse_args(argv)
    print(f"{'weights MiB':>11} {'W':>9} {'pipeline':>9} {'compile s':>9} {'peak MiB':>9} {'ratio':>6} "
          f"{'save s':>7} {'onnx KiB':>9} {'data MiB':>9}")
    for mib in args.mib:
        n_cols = 1024
        w = np.ones((mib * 256, n_cols), np.float32)
        for writable, (label, passes) in [(wr, lp) for wr in (True, False)
                                          for lp in (("none", []), ("default", None))]:
            w.setflags(write=writable)
            W = pytensor.shared(w, name="W", borrow=True)
            x = pt.vector("x", dtype="float32", shape=(n_cols,))
            y = (W * x).sum(axis=1)
            tracemalloc.start()
            start = time.perf_counter()
            m = compile_to_onnx([x], outputs=[y], passes=passes, external_data_threshold=args.threshold_mib << 20)
            seconds = time.perf_counter() - start
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "m.onnx"
                start = time.perf_counter()
                m.save(path)
                save_s = time.perf_counter() - start
                data = path.with_name("m.onnx.data")
                data_mib = data.stat().st_size / 2**20 if data.exists() else 0.0
                kind = "writable" if writable else "read-only"
                print(f"{mib:>11} {kind:>9} {label:>9} {seconds:>9.2f} {peak / 2**20:>9.0f} {peak / w.nbytes:>6.2f} "
                      f"{save_s:>7.2f} {path.stat().st_size / 1024:>9.1f} {data_mib:>9.0f}")
            del m


if __name__ == "__main__":
    main()
