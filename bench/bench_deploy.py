"""Smaller models side by side: float32, float16, int8 dynamic and int8
static (QDQ, per channel) of the digits MLP, the digits CNN and the
YOLO11n-class detector, each as our export and, when torch is importable, as
torch.onnx's export of the same network put through the same conversions
(``compiler.core.deploy``).

Per model and format: the file size, the onnxruntime CPU latency (1 intra-op
and 1 inter-op thread, ``ORT_ENABLE_ALL``, one image a call; sessions timed
round-robin in a new random order each round, ``bench_yolo.time_round_robin``)
with the median ratio to torch's export in the same format (paired by round),
and the accuracy: for the digits models the test-set accuracy, the arg-max
agreement with the float32 model and the max abs error of the probabilities;
for the detector (random weights, no labels) the max abs error of its output
relative to its largest magnitude. The digits models are trained here
(``compiler.tools.demo.train``: ``--epochs``, seed 0) and calibrated on the
training images; the detector is calibrated on ``--calib`` random images.

Usage::

    python bench/bench_deploy.py [--models mlp cnn yolo] [--rounds 100] [--epochs 10] [--size 320]

torch comes from the ``bench`` extra (never a test dependency); without it
the torch columns are left out. Timings are wall clock on a shared machine:
read the ratios, never assert on them.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import statistics
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_yolo import paired_ratio, session, time_round_robin  # noqa: E402
from bench.models import yolo11n  # noqa: E402
from compiler.core import deploy  # noqa: E402

FORMATS = ("float32", *deploy.CONVERSIONS)


def digits_models(name: str, epochs: int):
    """Our export of the trained digits model ``name`` (``"mlp"``/``"cnn"``),
    its torch twin (or None), the test images and labels in its layout, and
    calibration feeds (the training images in minibatches of 64)."""
    from compiler.core.driver import compile_to_onnx
    from compiler.tools.demo import inference_graph, load_digits_split, model_spec, train

    spec = model_spec(name)
    data = load_digits_split(0)
    trained = train(data, model=name, epochs=epochs, seed=0, log=None)
    inputs, outputs = inference_graph(trained.params, name)
    ours = compile_to_onnx(inputs, outputs=outputs).model
    x_train, x_test = spec.examples(data.x_train), spec.examples(data.x_test)
    calibration = [{"x": x_train[i:i + 64]} for i in range(0, len(x_train), 64)]
    weights = {k: v.get_value() for k, v in trained.params.items()}
    twin = _torch_digits(name, weights) if _has_torch() else None
    return ours, twin, x_test, data.y_test, calibration


def _has_torch() -> bool:
    return importlib.util.find_spec("torch") is not None


def _torch_digits(name: str, w: dict):
    """The torch twin of ``compiler.tools.demo``'s model ``name`` with the
    trained weights ``w`` (eval mode), returning softmax probabilities."""
    import torch
    import torch.nn.functional as F

    class Digits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for k, v in w.items():  # parameters, so that the export holds them as initializers
                self.register_parameter(k, torch.nn.Parameter(torch.from_numpy(v), requires_grad=False))

        def forward(self, x):
            t = dict(self.named_parameters())
            if name == "mlp":
                logits = torch.relu(x @ t["W1"] + t["b1"]) @ t["W2"] + t["b2"]
            else:
                h = F.max_pool2d(torch.relu(F.conv2d(x, t["W1"], t["b1"], padding=1)), 2)
                h = F.max_pool2d(torch.relu(F.conv2d(h, t["W2"], t["b2"], padding=1)), 2)
                logits = h.flatten(1) @ t["W3"] + t["b3"]
            return torch.softmax(logits, dim=-1)

    return Digits().eval()


def export_torch(module, x: np.ndarray, input_name: str, path: str):
    """torch.onnx's export of ``module`` at example ``x`` (dynamo, else the
    legacy exporter), batch dim dynamic for the digits models (``x`` then
    holds 2 or more images), as a ``ModelProto``."""
    import onnx
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            batch = torch.export.Dim("batch")
            torch.onnx.export(module, (torch.from_numpy(x),), path, dynamo=True, input_names=[input_name],
                              dynamic_shapes=({0: batch},) if input_name == "x" else None, external_data=False)
        except Exception:  # noqa: BLE001 - the legacy exporter is the fallback bench_yolo also uses
            torch.onnx.export(module, (torch.from_numpy(x),), path, dynamo=False, input_names=[input_name],
                              opset_version=18, dynamic_axes={input_name: {0: "batch"}} if input_name == "x" else None)
    model = onnx.load(path)
    if model.graph.input[0].name != input_name:
        raise RuntimeError(f"torch's export names its input {model.graph.input[0].name!r}, not {input_name!r}")
    return model


def conversions(model, calibration: list[dict]) -> dict:
    """``{format: ModelProto}`` over ``FORMATS`` (float32: ``model`` slimmed
    like the others, so sizes compare the weights and graph, not the
    provenance text)."""
    out = {"float32": deploy.slim(model)}
    for fmt in deploy.CONVERSIONS:
        out[fmt] = deploy.convert(model, fmt, calibration if fmt == "int8-static" else None)
    return out


def accuracy_cells(models: dict, x: np.ndarray, labels: np.ndarray | None) -> dict:
    """Per format: (test accuracy or None, arg-max agreement or None, max
    abs error relative to the float32 output's largest magnitude)."""
    ref = session(models["float32"]).run(None, {models["float32"].graph.input[0].name: x})[0]
    cells = {}
    for fmt, m in models.items():
        y = session(m).run(None, {m.graph.input[0].name: x})[0]
        err = float(np.abs(y.astype(np.float64) - ref).max() / np.abs(ref).max())
        if labels is None:
            cells[fmt] = (None, None, err)
        else:
            cells[fmt] = (float(np.mean(y.argmax(-1) == labels)), float(np.mean(y.argmax(-1) == ref.argmax(-1))), err)
    return cells


def run_model(name: str, args, rng) -> None:
    """Build, convert, check and time one model; print its table."""
    if name == "yolo":
        from compiler.core.driver import compile_to_onnx

        images, out, _ = yolo11n.build_pytensor(args.seed, args.size)
        ours = compile_to_onnx([images], outputs=[out]).model
        shape = yolo11n.input_shape(args.size)
        gen = np.random.default_rng(args.seed + 1)
        x_eval = gen.standard_normal(shape).astype(np.float32)
        calibration = [{"images": gen.standard_normal(shape).astype(np.float32)} for _ in range(args.calib)]
        twin = yolo11n.build_torch(args.seed, args.size) if _has_torch() else None
        labels, x_one, input_name = None, x_eval, "images"
    else:
        ours, twin, x_eval, labels, calibration = digits_models(name, args.epochs)
        x_one, input_name = x_eval[:1], "x"
    exports = {"ours": conversions(ours, calibration)}
    if twin is not None:
        import tempfile

        path = os.path.join(tempfile.mkdtemp(prefix="bench_deploy_"), f"{name}_torch.onnx")
        exports["torch"] = conversions(export_torch(twin, x_eval[:2] if labels is not None else x_one, input_name,
                                                    path), calibration)
    sessions = {(exp, fmt): session(m) for exp, ms in exports.items() for fmt, m in ms.items()}
    wall, _ = time_round_robin(sessions, x_one, args.rounds, rng)
    acc = {exp: accuracy_cells(ms, x_eval, labels) for exp, ms in exports.items()}

    print(f"\n== {name}: {args.rounds} rounds, 1 thread, batch 1 ==")
    print(f"{'export':<7}{'format':<14}{'KB':>8}{'ms':>9}{'vs torch [95%]':>22}{'accuracy':>10}{'agree':>8}"
          f"{'max err':>10}")
    for (exp, fmt) in sessions:
        ratio = "-"
        if exp == "ours" and ("torch", fmt) in wall:
            med, low, high = paired_ratio(wall[exp, fmt], wall["torch", fmt], args.seed)
            ratio = f"{med:.3f} [{low:.3f}-{high:.3f}]"
        accuracy, agree, err = acc[exp][fmt]
        print(f"{exp:<7}{fmt:<14}{exports[exp][fmt].ByteSize() / 1024:>8.1f}"
              f"{statistics.median(wall[exp, fmt]) * 1e3:>9.3f}{ratio:>22}"
              f"{'-' if accuracy is None else f'{accuracy:.4f}':>10}{'-' if agree is None else f'{agree:.4f}':>8}"
              f"{err:>10.2e}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["mlp", "cnn", "yolo"], choices=["mlp", "cnn", "yolo"])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=10, help="digits training epochs (the demo's default)")
    ap.add_argument("--size", type=int, default=yolo11n.IMAGE_SIZE, help="detector input side")
    ap.add_argument("--calib", type=int, default=8, help="random calibration images for the detector")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    logging.getLogger().setLevel(logging.ERROR)  # onnxruntime.quantization's pre-processing advice
    if _has_torch():
        import torch

        torch.set_num_threads(1)
        print(f"torch {torch.__version__}: its export through the same conversions beside ours")
    else:
        print("torch is not importable (the bench extra): our exports only")
    rng = np.random.default_rng(args.seed)
    for name in args.models:
        run_model(name, args, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
