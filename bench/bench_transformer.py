"""Transformer encoder block latency in onnxruntime: the pre-norm block of
``tests/nn/transformer_block.py`` (d_model 256, 4 heads; LayerNorm from
means, causal attention with an ``arange``/``where`` mask, GELU MLP) compiled
by ``compile_to_onnx`` from the raw graph, against torch.onnx's exports
(dynamo and legacy) of the same block with the same weights.

Every model is checked against the torch module first (1e-5 absolute on
outputs of magnitude ~1), then the sessions (1 intra-op and 1 inter-op
thread, ``ORT_ENABLE_ALL``) are timed round-robin, one call each per round
(the order reversed every other round), so load on a shared machine hits
them alike. The table gives node counts, the median latency per call, and
the median of the per-round ratios to torch's dynamo export with its 95%
distribution-free interval (the order statistics of a binomial(rounds, 1/2),
as for any median: no assumption on the timing distribution).

Usage::

    python bench/bench_transformer.py [--rounds 100] [--batch 8] [--seq 128]

Needs torch (the ``bench`` extra). Timings are wall clock: read the ratios.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

from compiler import compile_to_onnx  # noqa: E402
from tests.nn.transformer_block import EPS, block, weights  # noqa: E402

HEADS = 4


def torch_block(w: dict):
    """The block in torch: ``F.layer_norm``, ``F.scaled_dot_product_attention``
    with ``is_causal=True``, exact GELU."""
    import torch
    import torch.nn.functional as F

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for k, v in w.items():
                self.register_buffer(k, torch.from_numpy(v.copy()))

        def forward(self, x):
            n, t, d = x.shape
            h = F.layer_norm(x, (d,), self.g1, self.b1, EPS)

            def split(z):
                return z.reshape(n, t, HEADS, d // HEADS).transpose(1, 2)

            a = F.scaled_dot_product_attention(split(h @ self.Wq), split(h @ self.Wk), split(h @ self.Wv),
                                               is_causal=True)
            x1 = x + a.transpose(1, 2).reshape(n, t, d) @ self.Wo
            u = F.layer_norm(x1, (d,), self.g2, self.b2, EPS) @ self.W1 + self.c1
            return x1 + F.gelu(u) @ self.W2 + self.c2

    return Block().eval()


def torch_onnx(module, x, dynamo: bool) -> bytes:
    import torch

    buffer = io.BytesIO()
    if dynamo:
        program = torch.onnx.export(module, (torch.from_numpy(x),), dynamo=True, input_names=["x"],
                                     dynamic_shapes=({0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")},))
        return program.model_proto.SerializeToString()
    torch.onnx.export(module, (torch.from_numpy(x),), buffer, dynamo=False, input_names=["x"],
                      dynamic_axes={"x": {0: "batch", 1: "seq"}})
    return buffer.getvalue()


def session(model: bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def median_interval(n: int, level: float = 0.95) -> tuple[int, int]:
    """Indices ``(lo, hi)`` into ``n`` sorted samples bracketing their
    median with probability >= ``level``: the distribution-free interval
    from the binomial(n, 1/2) counts of samples below the median (Conover,
    *Practical Nonparametric Statistics*, 3rd ed., section 3.2)."""
    from scipy.stats import binom

    lo = int(binom.ppf((1 - level) / 2, n, 0.5))
    lo = max(0, lo - 1 if binom.cdf(lo, n, 0.5) > (1 - level) / 2 else lo)
    return lo, n - 1 - lo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    args = parser.parse_args()
    import torch

    w = weights()
    x = np.random.default_rng(1).normal(size=(args.batch, args.seq, 256)).astype(np.float32)
    module = torch_block(w)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    inputs, output = block(w, HEADS)
    blobs = {"ours, raw graph": compile_to_onnx([inputs], outputs=[output]).model.SerializeToString()}
    for name, dynamo in (("torch.onnx dynamo", True), ("torch.onnx legacy", False)):
        try:
            blobs[name] = torch_onnx(module, x, dynamo)
        except Exception as e:  # an exporter that fails on this torch is reported, not timed
            print(f"{name}: export failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    sessions = {name: session(blob) for name, blob in blobs.items()}
    nodes = {name: len(onnx.load_from_string(blob).graph.node) for name, blob in blobs.items()}
    for name, s in sessions.items():
        got = s.run(None, {s.get_inputs()[0].name: x})[0]
        print(f"{name}: max |error| vs torch {np.abs(got - want).max():.2e}")
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * max(1.0, np.abs(want).max()), err_msg=name)
    times = {name: [] for name in sessions}
    names = list(sessions)
    for round_ in range(args.rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:
            s = sessions[name]
            feed = {s.get_inputs()[0].name: x}
            t = time.perf_counter()
            s.run(None, feed)
            times[name].append(time.perf_counter() - t)
    ref_name = next(n for n in ("torch.onnx dynamo", "torch.onnx legacy") if n in times)
    print(f"transformer block (d_model 256, {HEADS} heads), batch {args.batch}, seq {args.seq}: median of "
          f"{args.rounds} round-robin onnxruntime calls (1 thread), ratio to {ref_name}")
    print(f"{'model':<20} {'nodes':>6} {'median ms':>10} {'ratio':>7}  95% interval")
    for name, t in times.items():
        ratios = sorted(a / b for a, b in zip(t, times[ref_name]))
        low, high = median_interval(len(ratios))
        print(f"{name:<20} {nodes[name]:>6} {1e3 * statistics.median(t):>10.3f} {statistics.median(ratios):>7.3f}"
              f"  [{ratios[low]:.3f}, {ratios[high]:.3f}]")


if __name__ == "__main__":
    main()
