"""Compile cost per PyTensor node, from 1k to 100k nodes, beside the floors.

For each graph family and size, compiles the graph with the default options
(``compile_to_onnx(graph)``, default pipeline) and prints:

- the total CPU microseconds per PyTensor Apply node (compilation plus
  ``SerializeToString`` of the model), and the same at the other sizes;
- the split: lowering, each pass of the pipeline (summed over its runs), the
  driver's hooks (the final structural check), emission (building the
  onnx_ir model) and serialization (to the ``ModelProto``, then to bytes);
- the peak memory of the compilation (``tracemalloc``, a separate run, since
  tracing slows Python down);
- two floors measured in the same process on the *same* ONNX graph (the
  model we emitted, its nodes, their names, attributes, doc strings and
  metadata, and its initializers taken apart beforehand): building it with
  onnx_ir and serializing it (``onnx_ir`` floor), and building it with
  ``onnx.helper`` and serializing it (``onnx.helper`` floor); with the
  ratio of our total to each, and whether the onnx_ir floor's bytes parse
  to our ``ModelProto`` ("same graph"; attribute and metadata order aside).

Families (sizes count PyTensor Apply nodes, ``io_toposort``):
    chain   ``y = cos(y) * y`` repeated: an elementwise chain.
    wide    ``sum_i sin(x * w_i)`` over many shared ``w_i`` (a balanced add
            tree): a wide graph with one constant per branch.
    mlp     ``y = maximum(y @ W_i + b_i, 0)``: a Linear+ReLU stack.
    conv    ``relu(conv2d(y, W_i) + b_i)`` with ``compiler.nn`` blocks.
    scan    scans of 8 steps (``y = tanh(y * a) + y``) in sequence, which
            ``scan-unroll`` unrolls; the size counts the outer Apply nodes
            plus each body's nodes once.
    yolo    the YOLO11n-class model of ``bench/models/yolo11n.py`` (or
            ``--yolo-module``) when it exists, beside torch's legacy
            exporter on its torch twin: CPU seconds and peak RSS growth,
            each in fresh subprocesses.

Usage::

    python bench/bench_scaling.py [--families chain wide mlp conv scan yolo]
                                  [--sizes 1000 10000 100000] [--repeats 3]
                                  [--verify-each-pass] [--keep-ir]

The 100k size runs only for the families listed in ``CHEAP_AT_100K`` unless
``--all-sizes`` is given. Timings are CPU time medians on a possibly shared
machine: read the ratios, never assert on them.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CHEAP_AT_100K = ("chain", "wide", "mlp")
WIDTH = 16  # feature width of the chain, wide and MLP graphs: small, so the compiler is measured


def _io_toposort():
    try:
        from pytensor.graph.traversal import io_toposort
    except ImportError:  # PyTensor < 2.32
        from pytensor.graph.basic import io_toposort
    return io_toposort


def chain(size: int):
    """An elementwise chain, 2 Apply nodes per step."""
    import pytensor.tensor as pt

    x = y = pt.tensor("x", dtype="float32", shape=(None, WIDTH))
    for _ in range(size // 2):
        y = pt.cos(y) * y
    return [x], [y]


def wide(size: int):
    """``sum_i sin(x * w_i)``: 3 Apply nodes per branch (mul, sin, add)."""
    import pytensor
    import pytensor.tensor as pt

    rng = np.random.default_rng(0)
    x = pt.tensor("x", dtype="float32", shape=(None, WIDTH))
    terms = [pt.sin(x * pytensor.shared(rng.standard_normal(WIDTH).astype("float32"), name=f"w{i}"))
             for i in range(max(1, size // 3))]
    while len(terms) > 1:  # a balanced tree keeps the graph shallow
        terms = [terms[i] + terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return [x], [terms[0]]


def mlp(size: int):
    """Linear+ReLU layers of width ``WIDTH``: 4 Apply nodes per layer."""
    import pytensor
    import pytensor.tensor as pt

    rng = np.random.default_rng(0)
    x = y = pt.tensor("x", dtype="float32", shape=(None, WIDTH))
    for i in range(max(1, size // 4)):
        W = pytensor.shared((rng.standard_normal((WIDTH, WIDTH)) / 4).astype("float32"), name=f"W{i}")
        b = pytensor.shared(rng.standard_normal(WIDTH).astype("float32"), name=f"b{i}")
        y = pt.maximum(y @ W + b, 0)
    return [x], [y]


def conv(size: int):
    """conv2d + bias + relu blocks on 4 channels of 8x8."""
    import pytensor
    import pytensor.tensor as pt

    from compiler import nn

    rng = np.random.default_rng(0)
    x = y = pt.tensor("x", dtype="float32", shape=(None, 4, 8, 8))
    n_apply = lambda: len(_io_toposort()([x], [y]))  # noqa: E731
    per_block = None
    i = 0
    while per_block is None or i * per_block < size:
        W = pytensor.shared((rng.standard_normal((4, 4, 3, 3)) / 6).astype("float32"), name=f"W{i}")
        b = pytensor.shared(rng.standard_normal(4).astype("float32"), name=f"b{i}")
        y = nn.relu(nn.conv2d(y, W, padding=1) + b[None, :, None, None])
        i += 1
        if per_block is None:
            per_block = n_apply()
    return [x], [y]


def scan(size: int):
    """Scans of 8 steps in sequence (each body: mul, tanh, add). One scan is
    built with ``pytensor.scan`` on a placeholder, and its Apply nodes are
    copied onto each previous result (``clone_with_new_inputs``): calling
    ``pytensor.scan`` or ``clone_replace`` on a long graph walks all of it,
    which would make building the graph quadratic."""
    import pytensor
    import pytensor.tensor as pt

    x = y = pt.tensor("x", dtype="float32", shape=(None, WIDTH))
    a = pt.constant(np.float32(0.5))
    h0 = pt.tensor("h0", dtype="float32", shape=(None, WIDTH))
    ys, _ = pytensor.scan(lambda h: pt.tanh(h * a) + h, outputs_info=[h0], n_steps=8)
    one = ys[-1]
    nodes = _io_toposort()([h0], [one])
    per_scan = _count_nodes([h0], [one])
    for _ in range(max(1, -(-size // per_scan))):
        copies = {h0: y}
        for node in nodes:
            new = node.clone_with_new_inputs([copies.get(v, v) for v in node.inputs])
            copies.update(zip(node.outputs, new.outputs))
        y = copies[one]
    return [x], [y]


def _count_nodes(inputs, outputs) -> int:
    """Apply nodes, each Scan body counted once."""
    total = 0
    for node in _io_toposort()(inputs, outputs):
        total += 1
        if type(node.op).__name__ == "Scan":
            total += len(node.op.fgraph.apply_nodes)
    return total


FAMILIES: dict[str, Callable] = {"chain": chain, "wide": wide, "mlp": mlp, "conv": conv, "scan": scan}


# -- the floors -------------------------------------------------------------
def take_apart(model):
    """The ONNX model's pieces as plain Python/NumPy data, so the floors time
    only building and serializing: (inputs, outputs, nodes, initializers)."""
    import onnx
    from onnx import numpy_helper

    def vi(v):
        t = v.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim]
        return v.name, t.elem_type, dims

    nodes = []
    for n in model.graph.node:
        attrs = {}
        for a in n.attribute:
            value = onnx.helper.get_attribute_value(a)
            if a.type == onnx.AttributeProto.TENSOR:
                value = numpy_helper.to_array(value)
            elif a.type == onnx.AttributeProto.GRAPH:
                return None  # subgraphs (Loop, If): not rebuilt by the floors
            attrs[a.name] = value
        meta = {prop.key: prop.value for prop in n.metadata_props}
        nodes.append((n.op_type, n.domain, list(n.input), list(n.output), attrs, n.name, n.doc_string, meta))
    inits = [(t.name, numpy_helper.to_array(t)) for t in model.graph.initializer]
    opsets = {o.domain: o.version for o in model.opset_import}
    if model.functions:
        return None  # model-local functions: not rebuilt
    header = {"graph": model.graph.name, "producer": model.producer_name}
    return ([vi(v) for v in model.graph.input], [vi(v) for v in model.graph.output], nodes, inits, opsets,
            header)


def floor_helper(parts) -> bytes:
    """Build the model with ``onnx.helper`` and serialize it."""
    from onnx import helper, numpy_helper

    inputs, outputs, nodes, inits, opsets, header = parts
    proto_nodes = []
    for op, domain, ins, outs, attrs, name, doc, meta in nodes:
        attrs = {k: numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v for k, v in attrs.items()}
        node = helper.make_node(op, ins, outs, name=name or None, doc_string=doc or None, domain=domain or None,
                                **attrs)
        if meta:
            helper.set_metadata_props(node, meta)
        proto_nodes.append(node)
    graph = helper.make_graph(proto_nodes, header["graph"],
                              [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
                              [helper.make_tensor_value_info(n, t, d) for n, t, d in outputs],
                              [numpy_helper.from_array(a, name) for name, a in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()],
                              ir_version=10, producer_name=header["producer"])
    return model.SerializeToString()


def floor_onnx_ir(parts) -> bytes:
    """Build the model with onnx_ir, serialize it to a ModelProto, then to bytes."""
    import onnx_ir as oir

    inputs, outputs, nodes, inits, opsets, header = parts
    values: dict[str, oir.Value] = {}
    graph_inputs = []
    for name, t, dims in inputs:
        v = oir.Value(name=name, type=oir.TensorType(oir.DataType(t)), shape=oir.Shape(dims))
        values[name] = v
        graph_inputs.append(v)
    initializers = []
    for name, a in inits:
        v = oir.Value(name=name, const_value=oir.Tensor(a, name=name))  # oir.tensor adds slow protocol checks
        values[name] = v
        initializers.append(v)
    ir_nodes = []
    for op, domain, ins, outs, attrs, name, doc, meta in nodes:
        attrs = {k: oir.Tensor(v) if isinstance(v, np.ndarray) else v for k, v in attrs.items()}
        node = oir.node(op, [values[i] if i else None for i in ins], attributes=attrs, domain=domain,
                        num_outputs=len(outs), name=name or None, doc_string=doc or None,
                        metadata_props=meta or None)
        for name, v in zip(outs, node.outputs):
            v.name = name
            values[name] = v
        ir_nodes.append(node)
    graph_outputs = []
    for name, t, dims in outputs:
        v = values[name]
        v.type, v.shape = oir.TensorType(oir.DataType(t)), oir.Shape(dims)
        graph_outputs.append(v)
    graph = oir.Graph(graph_inputs, graph_outputs, nodes=ir_nodes, initializers=initializers,
                      opset_imports=opsets, name=header["graph"])
    return oir.serde.serialize_model(oir.Model(graph, ir_version=10, producer_name=header["producer"])
                                     ).SerializeToString()


# -- measuring ----------------------------------------------------------------
FLOOR_GC = "paused"  # the floors run under the GC state compile_to_onnx gives itself (driver._gc_paused)


def cpu(fn: Callable, repeats: int, gc_state: str = FLOOR_GC) -> tuple[float, object]:
    """Median CPU seconds of ``fn()`` over ``repeats`` runs, and its last
    result. ``gc_state``: ``"paused"`` (the cyclic garbage collector is off
    during ``fn``, as ``compile_to_onnx`` turns it off while it compiles and
    serializes: a floor timed with it on pays young-generation collections
    our compile does not, 2.2-2.7x at 100k nodes) or ``"running"``."""
    times, result = [], None
    for _ in range(repeats):
        gc.collect()
        enabled = gc.isenabled()
        if gc_state == "paused":
            gc.disable()
        try:
            start = time.process_time()
            result = fn()
            times.append(time.process_time() - start)
        finally:
            if enabled:
                gc.enable()
    return statistics.median(times), result


def peak_memory(fn: Callable) -> float:
    """Peak traced memory (MiB) of one run of ``fn()``."""
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def measure(family: str, size: int, repeats: int, **options) -> dict:
    """One row: sizes, CPU totals, the stage split, peak memory and floors
    (``options``: extra ``compile_to_onnx`` keywords)."""
    from compiler import compile_to_onnx

    inputs, outputs = FAMILIES[family](size)
    apply_nodes = _count_nodes(inputs, outputs)
    compile_once = lambda: compile_to_onnx(inputs, outputs=outputs, **options)  # noqa: E731
    compile_to_onnx(inputs, outputs=outputs)  # warm caches (imports, rule tables)
    splits: dict[str, list[float]] = defaultdict(list)
    totals, models = [], []
    for _ in range(repeats):
        gc.collect()
        start = time.process_time()
        compiled = compile_once()
        t_proto = time.process_time()
        proto = compiled.model  # serialized to a ModelProto on first use
        t_bytes = time.process_time()
        proto.SerializeToString()
        end = time.process_time()
        totals.append(end - start)
        for k, v in compiled.timings.items():
            splits[k].append(v)
        splits["serialization"][-1] = t_bytes - t_proto  # CPU time, like the total
        splits["to bytes"].append(end - t_bytes)
        per_pass: dict[str, float] = defaultdict(float)
        for r in compiled.history[1:]:
            per_pass[r.name] += r.seconds
        for k, v in per_pass.items():
            splits["pass " + k].append(v)
        models.append(compiled)
    compiled = models[-1]
    del models
    row = {"family": family, "size": size, "apply": apply_nodes, "ir": compiled.history[0].nodes,
           "onnx": len(compiled.model.graph.node), "total": statistics.median(totals),
           "split": {k: statistics.median(v) for k, v in splits.items()},
           "peak MiB": peak_memory(compile_once)}
    parts = take_apart(compiled.model)
    if parts is not None:
        row["onnx_ir floor"], rebuilt = cpu(lambda: floor_onnx_ir(parts), repeats)
        row["helper floor"] = cpu(lambda: floor_helper(parts), repeats)[0]
        row["same graph"] = _same_model(rebuilt, compiled.model)
    return row


def _same_model(rebuilt: bytes, model) -> bool:
    """Whether the floor rebuilt exactly our model: equal ``ModelProto`` s
    (the order of a node's metadata and attributes aside, which protobuf
    keeps as built)."""
    import onnx

    ours, theirs = onnx.ModelProto(), onnx.ModelProto()
    ours.CopyFrom(model)
    theirs.ParseFromString(rebuilt)
    for proto in (ours, theirs):
        for node in proto.graph.node:
            for field in (node.attribute, node.metadata_props):
                items = sorted(field, key=lambda a: a.name if hasattr(a, "type") else a.key)
                copies = [type(a)() for a in items]
                for c, a in zip(copies, items):
                    c.CopyFrom(a)
                del field[:]
                field.extend(copies)
    return ours == theirs


def format_rows(rows: list[dict]) -> str:
    header = ["family", "apply", "ir", "onnx", "total s", "us/node", "peak MiB", "onnx_ir us/n", "helper us/n",
              "x onnx_ir", "x helper", "same graph", "us/node vs smallest"]
    body = []
    first: dict[str, float] = {}
    for r in rows:
        per = r["total"] / r["apply"] * 1e6
        first.setdefault(r["family"], per)
        ir_floor = r.get("onnx_ir floor")
        helper = r.get("helper floor")
        body.append([r["family"], str(r["apply"]), str(r["ir"]), str(r["onnx"]), f"{r['total']:.3f}", f"{per:.1f}",
                     f"{r['peak MiB']:.1f}",
                     f"{ir_floor / r['apply'] * 1e6:.1f}" if ir_floor else "-",
                     f"{helper / r['apply'] * 1e6:.1f}" if helper else "-",
                     f"{r['total'] / ir_floor:.2f}" if ir_floor else "-",
                     f"{r['total'] / helper:.2f}" if helper else "-",
                     {True: "yes", False: "NO"}.get(r.get("same graph"), "-"),
                     f"{per / first[r['family']]:.2f}"])
    return _table(header, body)


def format_splits(rows: list[dict]) -> str:
    """Microseconds per PyTensor node of each part (columns: rows above)."""
    keys: list[str] = []
    for r in rows:
        for k in r["split"]:
            if k not in keys:
                keys.append(k)
    header = ["us/node"] + [f"{r['family']} {r['apply']}" for r in rows]
    body = [[k] + [f"{r['split'].get(k, 0.0) / r['apply'] * 1e6:.2f}" for r in rows] for k in keys]
    return _table(header, body)


def _table(header: list[str], body: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in [header] + body)


# -- YOLO11n-class model against torch's legacy exporter -------------------------
YOLO_MODULE = Path(__file__).resolve().parent / "models" / "yolo11n.py"


def _load_yolo(path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_yolo11n", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def yolo_child(which: str, path: str, threads: int = 1) -> None:
    """In a fresh process: build the model, then compile it (``ours``: default
    ``compile_to_onnx``) or export its torch twin with torch's legacy exporter
    (``torch``, with ``threads`` intra-op threads), and print CPU seconds and
    the peak RSS growth (MiB) of that step (the process's peak RSS, ``VmHWM``,
    after it minus the RSS before it). Both steps include serializing the
    model to bytes."""
    import io
    import json
    import resource

    module = _load_yolo(Path(path))

    def rss_mib() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 2**20

    def hwm_mib() -> float:
        # VmHWM, the peak RSS of this process image: ru_maxrss would also count the parent's RSS at fork
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024

    if which == "ours":
        from compiler import compile_to_onnx

        import pytensor.tensor as pt

        from compiler import nn

        tiny = pt.tensor("t", dtype="float32", shape=(1, 3, 8, 8))  # warms imports on a tiny model, so that
        compile_to_onnx([tiny], outputs=[nn.relu(tiny) * 2])  # the high-water mark stays below the real one
        images, out, _ = module.build_pytensor(0)

        def step():  # serialized to bytes, as torch.onnx.export writes them
            compiled = compile_to_onnx([images], outputs=[out])
            compiled.model.SerializeToString()
            return compiled
    else:
        import warnings

        import torch

        torch.set_num_threads(threads)  # torch's default (one per core) is ~6x slower on a loaded 2-core machine
        with warnings.catch_warnings():  # warms the exporter's imports on a tiny model
            warnings.simplefilter("ignore")
            torch.onnx.export(torch.nn.Conv2d(3, 3, 1), (torch.zeros(1, 3, 8, 8),), io.BytesIO(), dynamo=False)
        net = module.build_torch(0).eval()
        x = torch.zeros(module.input_shape())

        def step():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(net, (x,), io.BytesIO(), dynamo=False, input_names=["images"])
    gc.collect()
    before = rss_mib()
    start = time.process_time()
    result = step()
    seconds = time.process_time() - start
    peak = hwm_mib()
    info = {"cpu": seconds, "peak_growth_mib": peak - before, "gc": "enabled" if gc.isenabled() else "disabled"}
    if which == "torch":
        info["torch_threads"] = torch.get_num_threads()
    if which == "ours":
        info["onnx_nodes"] = len(result.model.graph.node)
        info["timings"] = result.timings
    print(json.dumps(info))


def yolo_rows(path: Path, repeats: int, threads: int = 1) -> list[str]:
    """CPU seconds and peak memory growth of compiling the YOLO11n-class model
    (default options) and of torch's legacy exporter on its torch twin, each
    in ``repeats`` fresh subprocesses (medians)."""
    import json
    import subprocess

    if not path.exists():
        return [f"yolo: {path} does not exist (skipped)"]
    lines = []
    results = {}
    for which in ("ours", "torch"):
        runs = []
        for _ in range(repeats):
            proc = subprocess.run([sys.executable, __file__, "--yolo-child", which, "--yolo-module", str(path),
                                   "--torch-threads", str(threads)], capture_output=True, text=True)
            if proc.returncode != 0:
                lines.append(f"yolo {which}: failed: {proc.stderr.strip().splitlines()[-1:]}")
                break
            runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        if runs:
            results[which] = runs
    for which, runs in results.items():
        cpu_s = statistics.median(r["cpu"] for r in runs)
        mem = statistics.median(r["peak_growth_mib"] for r in runs)
        label = "compile_to_onnx (default)" if which == "ours" else "torch.onnx.export (legacy)"
        extra = f", torch threads {runs[-1]['torch_threads']}" if which == "torch" else ""
        if which == "ours":
            extra = f", {runs[-1]['onnx_nodes']} ONNX nodes, split (s): " + ", ".join(
                f"{k} {v:.3f}" for k, v in runs[-1]["timings"].items())
        lines.append(f"yolo11n-class  {label:28s} {cpu_s:7.3f} s CPU  peak RSS growth {mem:7.1f} MiB{extra}")
    if len(results) == 2:
        ours, theirs = results["ours"], results["torch"]
        lines.append("  ratios ours/torch-legacy: CPU {:.2f}x, memory {:.2f}x".format(
            statistics.median(r["cpu"] for r in ours) / statistics.median(r["cpu"] for r in theirs),
            statistics.median(r["peak_growth_mib"] for r in ours)
            / statistics.median(r["peak_growth_mib"] for r in theirs)))
    return lines


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES) + ["yolo"],
                        choices=list(FAMILIES) + ["yolo"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--all-sizes", action="store_true", help="run 100k nodes for every family")
    parser.add_argument("--verify-each-pass", action="store_true",
                        help="compile with verify_each_pass=True (the full verifier after every stage)")
    parser.add_argument("--keep-ir", action="store_true", help="compile with keep_ir=True")
    parser.add_argument("--yolo-module", type=Path, default=YOLO_MODULE,
                        help=f"the YOLO11n-class model module (default: {YOLO_MODULE})")
    parser.add_argument("--torch-threads", type=int, default=1, metavar="N",
                        help="torch.set_num_threads for the exporter (default: 1, printed with its row)")
    parser.add_argument("--yolo-child", choices=["ours", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.yolo_child:
        yolo_child(args.yolo_child, str(args.yolo_module), args.torch_threads)
        return

    rows = []
    for family in args.families:
        if family == "yolo":
            continue
        for size in args.sizes:
            if size > 10000 and family not in CHEAP_AT_100K and not args.all_sizes:
                print(f"skipped {family} {size} (not in CHEAP_AT_100K; --all-sizes runs it)", flush=True)
                continue
            options = {"verify_each_pass": args.verify_each_pass, "keep_ir": args.keep_ir}
            rows.append(measure(family, size, args.repeats if size <= 10000 else 1, **options))
            print(f"measured {family} {size}", flush=True)
    if rows:
        print(f"\nCPU time, median of {args.repeats} (1 at 100k); compile_to_onnx + SerializeToString, "
              f"verify_each_pass={args.verify_each_pass}, keep_ir={args.keep_ir}; the floors are timed with the "
              f"garbage collector {FLOOR_GC}, as compile_to_onnx pauses it")
        print(format_rows(rows))
        print("\nsplit (us per PyTensor node): wall-clock stage times from CompiledModel.timings and history "
              "(inflated on a loaded machine), CPU time for serialization and to bytes")
        print(format_splits(rows))
    if "yolo" in args.families:
        print()
        print("\n".join(yolo_rows(args.yolo_module, args.repeats, args.torch_threads)))


if __name__ == "__main__":
    main()
