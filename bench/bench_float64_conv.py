"""float64 convolution benchmark: onnxruntime latency of the exact float64
forms of ``backends/onnx/rules/window_f64.py`` (``im2col``: one MatMul over
stacked strided Slices; ``taps``: one MatMul per kernel offset, summed)
against the opt-in ``float64_conv="float32"`` path (Cast, float32 Conv,
Cast), and the largest difference of each from PyTensor's float64 result.

Each row is one ``compiler.nn.conv2d`` layer (float64, random weights,
symbolic batch) compiled three ways in the same process; latency is the
median of ``--runs`` onnxruntime calls after one warm-up call.

Usage::

    python bench/bench_float64_conv.py [--runs 50] [--batch 8]

Timings are wall clock on a possibly shared machine: read the ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402

from backends.onnx.rules import window_f64  # noqa: E402
from compiler import compile_to_onnx, nn  # noqa: E402

# (name, Cin, Cout, H=W, kernel, stride, padding, groups)
LAYERS = [
    ("mnist conv1", 1, 32, 28, 3, 1, 0, 1),
    ("mnist conv2", 32, 64, 13, 3, 1, 0, 1),
    ("resnet 3x3", 64, 64, 28, 3, 1, 1, 1),
    ("stride 2", 32, 64, 32, 3, 2, 1, 1),
    ("1x1", 64, 128, 20, 1, 1, 0, 1),
    ("depthwise", 64, 64, 28, 3, 1, 1, 64),
    ("7x7 stem", 3, 16, 64, 7, 2, 3, 1),
]


def median_ms(fn, runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def layer(cin, cout, size, kernel, stride, padding, groups, rng):
    x = pt.tensor("x", dtype="float64", shape=(None, cin, size, size))
    W = pytensor.shared(rng.normal(size=(cout, cin // groups, kernel, kernel)) / kernel, name="W")
    b = pytensor.shared(rng.normal(size=cout), name="b")
    return x, nn.conv2d(x, W, b, stride=stride, padding=padding, groups=groups)


def compiled(x, y, option: str, form: str = "im2col"):
    previous, window_f64.CONV_FORM = window_f64.CONV_FORM, form
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the float32 path warns, by design
            return compile_to_onnx([x], outputs=[y], emit_options={"float64_conv": option})
    finally:
        window_f64.CONV_FORM = previous


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"batch {args.batch}, median of {args.runs} onnxruntime runs; error: max |onnx - pytensor|")
    header = (f"{'layer':<12} {'shape':>22} {'im2col ms':>10} {'taps ms':>9} {'float32 ms':>11} "
              f"{'im2col/f32':>10} {'taps/f32':>9} {'im2col err':>11} {'float32 err':>12}")
    print(header)
    for name, cin, cout, size, kernel, stride, padding, groups in LAYERS:
        x, y = layer(cin, cout, size, kernel, stride, padding, groups, rng)
        value = rng.normal(size=(args.batch, cin, size, size))
        want = pytensor.function([x], y, mode="FAST_RUN")(value)
        models = {key: compiled(x, y, opt, form) for key, opt, form in
                  (("im2col", "exact", "im2col"), ("taps", "exact", "taps"), ("float32", "float32", "im2col"))}
        ms = {key: median_ms(lambda m=m: m.run(value), args.runs) for key, m in models.items()}
        err = {key: float(np.max(np.abs(m.run(value)[0] - want))) for key, m in models.items()}
        shape = f"{cin}->{cout} {size}x{size} k{kernel}s{stride}g{groups}"
        print(f"{name:<12} {shape:>22} {ms['im2col']:>10.3f} {ms['taps']:>9.3f} {ms['float32']:>11.3f} "
              f"{ms['im2col'] / ms['float32']:>10.2f} {ms['taps'] / ms['float32']:>9.2f} "
              f"{err['im2col']:>11.1e} {err['float32']:>12.1e}")


if __name__ == "__main__":
    main()
