"""MNIST CNN latency in onnxruntime: the hand-written PyTensor network
(``tests/nn/test_mnist_cnn.py: by_hand``: ``convolve2d`` + sum, reshape-max
pooling, ``maximum``, reshape, ``dot``) exported by ``compile_to_onnx`` from
the raw graph and from functions compiled in the default and the C mode,
against torch.onnx's export of the same network with the same weights.

Every model is checked against the torch module first (1e-5), then the
sessions (1 intra-op and 1 inter-op thread, ``ORT_ENABLE_ALL``) are timed
round-robin, one call each per round, so that load on a shared machine hits
them alike. The table gives node counts, the median latency per call and
its ratio to torch's export (the issue's target: at most 1.1).

Usage::

    python bench/bench_mnist.py [--rounds 300] [--batch 1]

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
import onnxruntime as ort  # noqa: E402
import pytensor  # noqa: E402
from pytensor.compile.mode import Mode, get_default_mode  # noqa: E402

from compiler import compile_to_onnx  # noqa: E402
from tests.nn.test_mnist_cnn import by_hand, weights  # noqa: E402


def torch_model(w: dict):
    """The network in torch (``F.conv2d`` is a cross-correlation: the
    ``compiler.nn`` weights, which ``by_hand`` rotates for ``convolve2d``)."""
    import torch
    import torch.nn.functional as F

    class Mnist(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for k, v in w.items():
                self.register_buffer(k, torch.from_numpy(v.copy()))

        def forward(self, x):
            h = F.max_pool2d(F.relu(F.conv2d(x, self.W1, self.b1)), 2)
            h = F.max_pool2d(F.relu(F.conv2d(h, self.W2, self.b2)), 2)
            h = F.relu(h.flatten(1) @ self.W3 + self.b3)
            return torch.softmax(h @ self.W4 + self.b4, dim=-1)

    return Mnist().eval()


def torch_onnx(module, x) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.onnx.export(module, (torch.from_numpy(x),), buffer, dynamo=False, input_names=["x"],
                      dynamic_axes={"x": {0: "batch"}})
    return buffer.getvalue()


def session(model: bytes) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()
    import torch

    w = weights()
    x = np.random.default_rng(0).uniform(size=(args.batch, 1, 28, 28)).astype(np.float32)
    module = torch_model(w)
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    inputs, outputs = by_hand(w)
    models = {
        "ours, raw graph": compile_to_onnx(inputs, outputs=outputs).model,
        "ours, default mode": compile_to_onnx(pytensor.function(inputs, outputs, mode=get_default_mode())).model,
        "ours, C mode": compile_to_onnx(pytensor.function(inputs, outputs,
                                                          mode=Mode(linker="cvm", optimizer="fast_run"))).model,
    }
    blobs = {name: m.SerializeToString() for name, m in models.items()}
    blobs["torch.onnx"] = torch_onnx(module, x)
    sessions = {name: session(blob) for name, blob in blobs.items()}
    nodes = {name: len(__import__("onnx").load_from_string(blob).graph.node) for name, blob in blobs.items()}
    for name, s in sessions.items():
        got = s.run(None, {s.get_inputs()[0].name: x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)
    times = {name: [] for name in sessions}
    for _ in range(args.rounds):
        for name, s in sessions.items():
            feed = {s.get_inputs()[0].name: x}
            t = time.perf_counter()
            s.run(None, feed)
            times[name].append(time.perf_counter() - t)
    ref = statistics.median(times["torch.onnx"])
    print(f"MNIST CNN, batch {args.batch}, median of {args.rounds} round-robin onnxruntime calls (1 thread)")
    print(f"{'model':<20} {'nodes':>6} {'median ms':>10} {'/ torch.onnx':>13}")
    for name, t in times.items():
        print(f"{name:<20} {nodes[name]:>6} {1e3 * statistics.median(t):>10.4f} {statistics.median(t) / ref:>13.3f}")


if __name__ == "__main__":
    main()
