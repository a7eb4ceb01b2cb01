"""Compile a fixed set of models with the default pipeline and write each
emitted ONNX model's bytes (``CompiledModel.model.SerializeToString()``) to a
directory, one file per model; ``--compare A B`` lists the models whose bytes
differ between two such directories.

Run with the tree to compile first on ``sys.path`` (``PYTHONPATH=<tree>``);
provenance names the tree's files, so its root is written as ``<tree>``
(the bytes are then compared, not parsed). A refactoring that should not
change what is emitted shows "N of N models byte-identical"; the ``.ir``
files beside the models show where two trees differ.

    git worktree add /tmp/base <base commit>
    PYTHONPATH=/tmp/base python bench/emitted_bytes.py --out /tmp/bytes-base
    PYTHONPATH=. python bench/emitted_bytes.py --out /tmp/bytes-head
    python bench/emitted_bytes.py --compare /tmp/bytes-base /tmp/bytes-head

Models: the demo CNN and MLP (graphs and default-mode compiled functions),
YOLO11n-class (bench/models/yolo11n.py), a PyMC-style logp+gradient, the
control-flow models of tests/control_flow/models.py at a static length (unrolled)
and a symbolic one, bench_scaling's families at 1000 nodes, pooling and conv
forms with symbolic sizes, and with PyMC installed the twelve PyMC models'
logp+dlogp functions.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np


def models(root: Path):
    """``(name, graph, options)`` for each model: ``graph`` is ``(inputs,
    outputs)`` or a compiled PyTensor function, ``options`` extra
    ``compile_to_onnx`` keywords."""
    import pytensor
    import pytensor.tensor as pt

    from compiler import nn
    from compiler.tools import demo

    for name in ("cnn", "mlp"):
        spec = demo.model_spec(name)
        params = spec.init(0)
        inputs, outputs = demo.inference_graph(params, name)
        yield f"demo-{name}", (inputs, outputs), {}
        yield f"demo-{name}-function", pytensor.function(inputs, outputs), {}

    spec = importlib.util.spec_from_file_location("yolo11n", root / "bench/models/yolo11n.py")
    yolo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(yolo)
    images, out, _ = yolo.build_pytensor(0)
    yield "yolo11n", ([images], [out]), {}

    from tests.numerics.test_numerics_modes import logp_graph
    inputs, outputs = logp_graph()
    yield "logp-grad", (inputs, outputs), {}
    yield "logp-grad-function", pytensor.function(inputs, outputs), {}

    from tests.control_flow import models as cf
    for build in cf.ALL:
        for T in (8, None):
            m = build(T)
            yield f"cf-{m.name}-{T}", (m.inputs, m.outputs), {}

    spec = importlib.util.spec_from_file_location("bench_scaling", root / "bench/bench_scaling.py")
    bs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bs)
    for fam in ("chain", "wide", "mlp", "conv", "scan"):
        inputs, outputs = bs.FAMILIES[fam](1000)
        yield f"scaling-{fam}", (inputs, outputs), {}

    rng = np.random.default_rng(0)
    x = pt.tensor("x", dtype="float32", shape=(None, 4, None, None))
    n, h, w = x.shape[0], x.shape[2], x.shape[3]
    forms = {
        "crop-max": x[:, :, :h // 3 * 3, :w // 3 * 3].reshape((n, 4, h // 3, 3, w // 3, 3)).max(axis=(3, 5)),
        "reshape-mean": x.reshape((n, 4, h // 2, 2, w // 2, 2)).mean(axis=(3, 5)),
        "global-max": x.max(axis=(2, 3), keepdims=True),
        "strided-max": pt.maximum(pt.maximum(x[:, :, ::2, ::2], x[:, :, 1::2, ::2]),
                                  pt.maximum(x[:, :, ::2, 1::2], x[:, :, 1::2, 1::2])),
    }
    for name, y in forms.items():
        yield f"pool-{name}", ([x], [y]), {}
        yield f"pool-{name}-function", pytensor.function([x], y), {}
    k = pytensor.shared(rng.standard_normal((6, 4, 3, 3)).astype("float32"), name="k")
    b = pytensor.shared(rng.standard_normal(6).astype("float32"), name="b")
    y = nn.max_pool2d(nn.relu(nn.conv2d(x, k, b)), 2)
    yield "conv-symbolic", ([x], [y.reshape((y.shape[0], -1))]), {}
    yield "conv-symbolic-function", pytensor.function([x], y), {}
    from pytensor.tensor.signal import convolve2d
    x3 = pt.tensor("x3", dtype="float64", shape=(None, 2, None, None))
    kk = pytensor.shared(rng.standard_normal((3, 2, 3, 3)), name="kk")
    conv = convolve2d(x3[:, None], kk[None], mode="valid").sum(axis=2)
    yield "convolve2d-valid", ([x3], [conv]), {}
    yield "convolve2d-valid-function", pytensor.function([x3], conv), {}

    try:
        from tests.pymc.models import MODELS
    except ImportError:
        return
    for name, build in MODELS.items():
        model = build(100)
        fn = model.logp_dlogp_function(ravel_inputs=True)
        fn.set_extra_values({})
        yield f"pymc-{name}", fn._pytensor_function, {}


def main(argv=None) -> None:
    """Write the models' bytes (``--out DIR``) or compare two directories
    (``--compare A B``)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--compare", nargs=2)
    args = parser.parse_args(argv)
    if args.compare:
        a, b = map(Path, args.compare)
        names = sorted({p.name for p in a.glob("*.onnx")} | {p.name for p in b.glob("*.onnx")})
        same = 0
        for name in names:
            pa, pb = a / name, b / name
            if not pa.exists() or not pb.exists():
                print(f"{name}: only in {'A' if pa.exists() else 'B'}")
            elif pa.read_bytes() != pb.read_bytes():
                print(f"{name}: DIFFERENT ({pa.stat().st_size} vs {pb.stat().st_size} bytes)")
            else:
                same += 1
        print(f"{same} of {len(names)} models byte-identical")
        return
    import compiler
    root = Path(compiler.__file__).resolve().parents[1]
    print("tree:", root, file=sys.stderr)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from compiler import compile_to_onnx
    warnings.simplefilter("ignore")
    for name, graph, options in models(root):
        if isinstance(graph, tuple):
            compiled = compile_to_onnx(graph[0], outputs=graph[1], **options)
        else:
            compiled = compile_to_onnx(graph, **options)
        # provenance names the tree's files: write its root as a placeholder, so two trees compare
        data = compiled.model.SerializeToString().replace(str(root).encode(), b"<tree>")
        (out / f"{name}.onnx").write_bytes(data)
        (out / f"{name}.ir").write_text(str(compiled.ir).replace(str(root), "<tree>"))
        print(name, len(compiled.model.graph.node), file=sys.stderr)


if __name__ == "__main__":
    main()
