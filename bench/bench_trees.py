"""Compile cost per PyTensor node of two source trees, interleaved: the
before/after measurement of a change to the compiler (``bench_scaling.py``'s
families and measure: CPU time of ``compile_to_onnx`` plus
``SerializeToString``, median of ``repeats``, per Apply node).

Each round runs every family in a fresh process per tree, alternating which
tree goes first, so both see the same load; the table gives per-family
medians over the rounds and their ratio. Timings on a shared machine: read
the ratios, never assert on them.

Usage::

    git worktree add /tmp/base <base commit>
    git worktree add /tmp/head <head commit>
    python bench/bench_trees.py /tmp/base /tmp/head [--families chain wide mlp conv scan]
                                [--size 10000] [--rounds 7] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import statistics
import subprocess
import sys
import time
import warnings


def child(tree: str, family: str, size: int, repeats: int) -> None:
    """In a fresh process: the median CPU microseconds per Apply node of
    compiling ``family`` at ``size`` with the compiler of ``tree``."""
    sys.path.insert(0, tree)
    warnings.simplefilter("ignore")
    spec = importlib.util.spec_from_file_location("bench_scaling", f"{tree}/bench/bench_scaling.py")
    scaling = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scaling)
    from compiler import compile_to_onnx

    inputs, outputs = scaling.FAMILIES[family](size)
    apply_nodes = scaling._count_nodes(inputs, outputs)
    compile_to_onnx(inputs, outputs=outputs)  # warm caches
    totals = []
    for _ in range(repeats):
        gc.collect()
        start = time.process_time()
        compiled = compile_to_onnx(inputs, outputs=outputs)
        compiled.model.SerializeToString()
        totals.append(time.process_time() - start)
    print(json.dumps({"us": statistics.median(totals) / apply_nodes * 1e6}))


def main(argv=None) -> None:
    """Run the rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("head")
    parser.add_argument("--families", nargs="+", default=["chain", "wide", "mlp", "conv", "scan"])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    trees = {"base": args.base, "head": args.head}
    runs: dict[tuple[str, str], list[float]] = {(t, f): [] for t in trees for f in args.families}
    for r in range(args.rounds):
        for family in args.families:
            for name in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                proc = subprocess.run([sys.executable, __file__, "--child", trees[name], family, str(args.size),
                                       str(args.repeats)], capture_output=True, text=True, cwd="/")
                lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
                if proc.returncode != 0 or not lines:
                    raise SystemExit(f"{name} {family} failed: {proc.stderr[-2000:]}")
                runs[(name, family)].append(json.loads(lines[-1])["us"])
                print(f"round {r} {family:6} {name}: {runs[(name, family)][-1]:.1f} us/node", flush=True)
    print(f"\nCPU us per PyTensor node at {args.size}, median of {args.rounds} rounds (each the median of "
          f"{args.repeats} compilations)")
    print(f"{'family':8} {'base':>8} {'head':>8} {'head/base':>9}")
    for family in args.families:
        b, h = (statistics.median(runs[(t, family)]) for t in trees)
        print(f"{family:8} {b:8.1f} {h:8.1f} {h / b:9.3f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        main()
