"""Shape-inference benchmark: is the ``shape-inference`` pass linear in graph size?

Builds IR graphs of about 1k, 10k and 100k nodes, runs the pass on a fresh
copy several times and prints, per size: nodes, the median time, and
microseconds per node (flat when the pass is linear). A second table times
the symbolic arithmetic itself (``ir.symbolic``, without and with its
memo) against SymPy on the expressions a strided convolution and a flatten
make: the measurement behind writing our own small expression form.

Workload: a chain of blocks over an ``f32[N,C,H,W]`` input with symbolic
``N``, ``H``, ``W``; each block of 14 nodes adds a constant, flattens with
``reshape(x, concat(shape(x)[0], [-1]))``, computes ``shape(x)[2] // 2``,
reshapes to ``concat(shape(x)[0:2], [h, -1])`` (symbolic contents,
expressions, -1 inference), slices ``[:, :, 0:]`` (a symbolic slice length)
and reshapes back to ``shape(x)``. Building the graph types every reshape
``?``, so each run of the pass has real refinement to do.

Usage::

    python bench/bench_shape_inference.py [--sizes 1000 10000 100000] [--repeats 5]

Timings are wall clock on a possibly shared machine: read the medians, and
never assert on them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ir import DType, Graph, TensorType  # noqa: E402
from ir import symbolic as sym  # noqa: E402
from passes.shape_inference import ShapeInference  # noqa: E402

BLOCK_NODES = 14


def build(n_nodes: int) -> Graph:
    """A graph of about ``n_nodes`` nodes (see the module docstring)."""
    g = Graph("bench")
    x = g.add_input(TensorType(DType.FLOAT32, ("N", 8, "H", "W")), "x")
    one = g.add_constant(np.float32(1), "one")
    i64 = {v: g.add_constant(np.array(v, np.int64), f"k{v}") for v in (0, 1, 2)}
    minus_one = g.add_constant(np.array([-1], np.int64), "minus_one")
    first_two = [g.add_constant(np.array([b], np.int64), f"b{b}") for b in (0, 2, 1)]
    open_end = g.add_constant(np.array([2**63 - 1], np.int64), "open")
    for _ in range(max(1, n_nodes // BLOCK_NODES)):
        y = g.add("add", [x, one])
        s = g.add("shape", [y])
        n = g.add("unsqueeze", [g.add("gather", [s, i64[0]], {"axis": 0})], {"axes": [0]})
        flat = g.add("reshape", [y, g.add("concat", [n, minus_one], {"axis": 0})])
        h = g.add("floor_div", [g.add("gather", [s, i64[2]], {"axis": 0}), i64[2]])
        lead = g.add("slice", [s, first_two[0], first_two[1], first_two[2]], {"axes": [0]})
        halves = g.add("concat", [lead, g.add("unsqueeze", [h], {"axes": [0]}), minus_one], {"axis": 0})
        half = g.add("reshape", [flat, halves])
        x = g.add("reshape", [g.add("slice", [half, first_two[0], open_end, first_two[2]], {"axes": [2]}), s])
    g.set_outputs([x])
    return g


def time_pass(n_nodes: int, repeats: int) -> tuple[int, float, str]:
    """(nodes, median seconds of the pass, the output type after it)."""
    times, nodes, out = [], 0, ""
    for _ in range(repeats):
        g = build(n_nodes)
        nodes = len(g)
        start = time.perf_counter()
        ShapeInference().run(g)
        times.append(time.perf_counter() - start)
        out = str(g.outputs[0].type)
    return nodes, statistics.median(times), out


def time_symbolic(repeats: int) -> list[tuple]:
    """(expression, µs to build it with ir.symbolic uncached and memoized,
    with SymPy uncached and cached; None when SymPy is not installed)."""
    try:
        import sympy
    except ImportError:
        sympy = None
    H, W = "H", "W"
    ours = {
        "conv out (H-3)//2+1": lambda: sym.add(sym.floordiv(sym.sub(H, 3), 2), 1),
        "flatten 4*(H//2-1)*(W//2-1)": lambda: sym.mul(4, sym.mul(sym.sub(sym.floordiv(H, 2), 1),
                                                               sym.sub(sym.floordiv(W, 2), 1))),
        "equal dims (broadcast)": lambda: sym.add(H, 1) == sym.add(1, H),
    }
    theirs = {}
    if sympy is not None:
        h, w = sympy.symbols("H W", integer=True, nonnegative=True)
        theirs = {
            "conv out (H-3)//2+1": lambda: sympy.floor((h - 3) / 2) + 1,
            "flatten 4*(H//2-1)*(W//2-1)": lambda: sympy.expand(4 * (sympy.floor(h / 2) - 1)
                                                                 * (sympy.floor(w / 2) - 1)),
            "equal dims (broadcast)": lambda: sympy.simplify((h + 1) - (1 + h)) == 0,
        }

    def uncached(fn, clear):
        def run():
            clear()
            fn()
        return run

    rows = []
    for name, fn in ours.items():
        row = [name, _per_call(uncached(fn, sym.cache_clear), repeats), _per_call(fn, repeats)]
        if name in theirs:
            row += [_per_call(uncached(theirs[name], sympy.core.cache.clear_cache), repeats),
                    _per_call(theirs[name], repeats)]
        else:
            row += [None, None]
        rows.append(tuple(row))
    return rows


def _per_call(fn, repeats: int, calls: int = 200) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def _fmt(us: float | None) -> str:
    return "-" if us is None else f"{us:.2f}"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"shape-inference, median of {args.repeats} runs")
    print(f"{'nodes':>8} {'seconds':>9} {'us/node':>8}  output type")
    for size in args.sizes:
        nodes, seconds, out = time_pass(size, args.repeats)
        print(f"{nodes:>8} {seconds:>9.4f} {seconds / nodes * 1e6:>8.2f}  {out}")
    print()
    print("building one expression, microseconds (uncached / memoized)")
    print(f"{'expression':<30} {'ir.symbolic':>12} {'memoized':>9} {'sympy':>9} {'cached':>8}")
    for name, cold, warm, s_cold, s_warm in time_symbolic(args.repeats):
        print(f"{name:<30} {cold:>12.2f} {warm:>9.2f} {_fmt(s_cold):>9} {_fmt(s_warm):>8}")


if __name__ == "__main__":
    main()
