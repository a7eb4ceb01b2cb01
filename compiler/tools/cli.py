"""The ``pytensor-onnx`` console script.

Subcommands:
    ``demo``    train a CNN (or an MLP) on scikit-learn's digits, compile it to
                ONNX and compare onnxruntime with PyTensor (``compiler.tools.demo``);
                ``--web DIR`` also writes the browser page (``compiler.tools.website``)
                and ``--serve`` serves it.
    ``web-glue`` write ``model.json`` and ``model.js`` beside an ONNX model
                (``compiler.tools.web``).
    ``passes``  list the registered passes and the default pipeline.
    ``opt``     run passes on IR text (``compiler.tools.opt_tool``).
    ``compile`` compile ``MODULE:FUNCTION``'s graph to an ONNX file.
    ``quantize`` int8 quantization of a saved model, dynamic or static QDQ
                (``compiler.core.deploy``), with its accuracy report.
    ``convert`` a saved model to float16 or to onnxruntime's ``.ort`` format.
    ``fuzz``    run the differential fuzzer (``compiler.tools.fuzz``) on N seeded
                random graphs; exit status 1 if any crash or mismatch.

``python -m compiler.tools.cli ...`` is the same program. Heavy imports (PyTensor,
scikit-learn) happen only inside the subcommand that needs them; the console
script enters through the top-level ``pytensor_onnx_cli`` module, which loads
this file without importing the ``compiler`` package (whose ``__init__`` loads
PyTensor and the compile path), so ``--help``, ``--version`` and usage errors
start in a fraction of a second. This module therefore imports only the
standard library at module level.

A failing subcommand prints one line, ``pytensor-onnx COMMAND: ErrorType:
message``, and exits 1; ``--traceback`` shows the full traceback instead.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Sequence

DIST_NAME = "pytensor-onnx"
# compiler.tools.demo's defaults, repeated so that building the parser imports nothing heavy
# (tests/test_cli.py checks they match the demo's)
DEMO_MODELS = ("cnn", "mlp")
DEMO_DEFAULTS = {"model": "cnn", "epochs": 10, "seed": 0, "mode": "FAST_COMPILE"}


def package_version() -> str:
    """The installed version of the ``pytensor-onnx`` distribution, or
    ``"unknown"`` when it is not installed (run from a bare checkout)."""
    try:
        return version(DIST_NAME)
    except PackageNotFoundError:
        return "unknown"


def doc_summary(obj) -> str:
    """The first sentence of ``obj.__doc__``'s first paragraph, on one line
    ("" if it has no docstring). Docstring first lines are often wrapped
    mid-sentence, so the paragraph is joined before cutting."""
    paragraph = (obj.__doc__ or "").strip().split("\n\n")[0]
    text = " ".join(line.strip() for line in paragraph.splitlines())
    end = text.find(". ")
    return text if end < 0 else text[:end + 1]


def format_passes() -> str:
    """The ``passes`` listing: every registered pass (name, origin, first
    docstring line), sorted by name, then the default pipeline in order.
    A pass is ``built-in`` when its class lives in the ``passes`` package,
    else ``plugin`` (loaded from the ``pytensor_onnx.passes`` entry points)."""
    from passes import DEFAULT_PIPELINE, registered_passes

    table = registered_passes()
    width = max((len(name) for name in table), default=0)
    lines = ["registered passes:"]
    for name in sorted(table):
        cls = table[name]
        origin = "built-in" if cls.__module__.split(".")[0] == "passes" else f"plugin {cls.__module__}"
        lines.append(f"  {name:<{width}}  [{origin}]  {doc_summary(cls)}")
    lines.append("default pipeline:")
    lines += [f"  {i}. {name}" for i, name in enumerate(DEFAULT_PIPELINE, 1)]
    return "\n".join(lines)


def _cmd_demo(args: argparse.Namespace) -> int:
    from compiler.tools.demo import format_report, model_spec, run_demo

    if args.model == "pymc":
        from compiler.tools.demo_pymc import format_pymc_report, run_pymc_demo

        pymc_report = run_pymc_demo(args.out, seed=args.seed, log=lambda line: print(line, flush=True))
        print(format_pymc_report(pymc_report))
        return 0 if pymc_report.ok else 1
    if (args.serve or args.from_model or args.ort_dir or args.retrain) and not args.web:
        print("pytensor-onnx demo: --serve, --from-model, --ort-dir and --retrain need --web DIR", file=sys.stderr)
        return 2
    status, model_path = 0, args.from_model
    existing = Path(args.out) / "model.onnx"
    if args.web and model_path is None and not args.retrain and existing.exists():
        print(f"using {existing} (--retrain trains and overwrites it)", flush=True)
        model_path = existing
    if args.web:  # find onnxruntime-web before training, so a missing one fails fast
        from compiler.tools.website import OrtWebNotFound, find_ort_dist

        try:
            ort_dist = find_ort_dist(args.ort_dir)
        except OrtWebNotFound as err:
            print(f"pytensor-onnx demo: {err}", file=sys.stderr)
            return 1
    if model_path is None:
        mode = None if args.mode == "default" else args.mode
        report = run_demo(args.out, model=args.model, epochs=args.epochs, seed=args.seed, mode=mode,
                          log=lambda line: print(line, flush=True))
        print(format_report(report))
        status, model_path = (0 if report.ok else 1), report.model_path
    if args.web:
        from compiler.tools.website import serve, write_site

        title = model_spec(args.model).title if args.from_model is None else f"model ({args.from_model})"
        index = write_site(args.web, model_path, ort_dist, title=title, seed=args.seed)
        print(f"web page:                     {index}  (onnxruntime-web from {ort_dist})", flush=True)
        if args.serve:
            serve(args.web, port=args.port, isolate=not args.no_isolation)
    return status


def _cmd_web_glue(args: argparse.Namespace) -> int:
    from compiler.tools.web import write_web_glue

    try:
        json_path, js_path = write_web_glue(args.model, args.out)
    except (FileNotFoundError, ValueError) as err:
        print(f"pytensor-onnx web-glue: {err}", file=sys.stderr)
        return 1
    print(f"wrote {json_path} and {js_path}")
    return 0


def _cmd_fuzz(args: argparse.Namespace) -> int:
    from compiler.tools.fuzz import fuzz

    report = fuzz(args.seed, args.n, max_steps=args.steps, isolate=not args.no_isolate, backend=args.backend,
                  family=args.family, log=lambda text: print(text + "\n", flush=True))
    print(report.summary().split("\n\n")[0])
    return 1 if report.failures else 0


def _cmd_passes(args: argparse.Namespace) -> int:
    print(format_passes())
    return 0


def _cmd_opt(args: argparse.Namespace) -> int:
    from compiler.tools.opt_tool import run_opt

    text = sys.stdin.read() if args.file == "-" else open(args.file).read()
    out, status = run_opt(text, args.passes, print_after_all=args.print_after_all,
                          print_after_change=args.print_after_change, verify_each=args.verify_each,
                          check_inputs=args.check_inputs, load=args.load)
    if args.output:
        with open(args.output, "w") as f:
            f.write(out)
    else:
        print(out, end="" if out.endswith("\n") else "\n")
    return status


def _cmd_explore(args: argparse.Namespace) -> int:
    from compiler.tools.explore import prepare
    from compiler.tools.website import serve

    for note in prepare(args.directory):
        print(note, file=sys.stderr)
    if args.no_serve:
        print(Path(args.directory) / "index.html")
        return 0
    serve(args.directory, args.host, args.port, isolate=False)
    return 0


def _cmd_compile(args: argparse.Namespace) -> int:
    from compiler.tools.opt_tool import compile_target

    compile_target(args.target, args.output, args.passes, report=args.report)
    return 0


def _ship(args: argparse.Namespace, conversion: str, **options) -> int:
    from compiler.core.deploy import convert_file

    report = convert_file(args.model, args.output, conversion, calibration=getattr(args, "calibration", None),
                          inputs=args.inputs, **options)
    print(f"wrote {args.output}" + (f"\n{report}" if report is not None else ""))
    return 0


def _cmd_quantize(args: argparse.Namespace) -> int:
    if args.mode == "static" and not args.calibration:
        raise ValueError("--mode static needs --calibration DATA.npz")
    per_channel = {"auto": None, "yes": True, "no": False}[args.per_channel]
    return _ship(args, f"int8-{args.mode}", per_channel=per_channel, reduce_range=not args.full_range)


def _cmd_convert(args: argparse.Namespace) -> int:
    return _ship(args, args.to)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the console script (builds without importing
    PyTensor or the compiler)."""
    DEFAULT_MODEL, DEFAULT_EPOCHS, DEFAULT_SEED, DEFAULT_MODE = (
        DEMO_DEFAULTS[k] for k in ("model", "epochs", "seed", "mode"))
    MODELS = DEMO_MODELS
    parser = argparse.ArgumentParser(prog="pytensor-onnx",
                                     description="A graph-rewrite compiler from PyTensor graphs to ONNX.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    parser.add_argument("--traceback", action="store_true",
                        help="on an error, print the full Python traceback (default: one line)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="train a CNN on the digits data set, compile it to ONNX, "
                                       "check onnxruntime against PyTensor")
    demo.add_argument("--out", default="demo-out", metavar="DIR",
                      help="output directory for model.onnx and the IR dumps (default: ./demo-out)")
    demo.add_argument("--model", choices=[*MODELS, "pymc"], default=DEFAULT_MODEL,
                      help=f"the network to train (default: {DEFAULT_MODEL}), or 'pymc': a hierarchical "
                           "PyMC model's MAP found through onnxruntime (needs the pymc extra)")
    demo.add_argument("--mode", default=DEFAULT_MODE, metavar="MODE",
                      help="PyTensor mode for training and the reference run: FAST_COMPILE, NUMBA, C, ..., "
                           f"or 'default' for PyTensor's default (default: {DEFAULT_MODE}, which compiles "
                           "nothing, so a first run is as fast as later ones)")
    demo.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS, metavar="N",
                      help=f"training epochs (default: {DEFAULT_EPOCHS})")
    demo.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="S",
                      help=f"seed of the split, the initialization and the batches (default: {DEFAULT_SEED})")
    demo.add_argument("--web", metavar="DIR",
                      help="also write a static web page into DIR that runs the model in onnxruntime-web")
    demo.add_argument("--from-model", metavar="PATH",
                      help="with --web: skip training and put this digits model (float32 (batch, ...) input of "
                           "64 pixels, (batch, 10) probabilities) on the page")
    demo.add_argument("--ort-dir", metavar="DIR",
                      help="with --web: where onnxruntime-web's dist files are (default: the project's "
                           "node_modules, $PYTENSOR_ONNX_ORT_DIR, the user cache, else `npm pack` into the cache)")
    demo.add_argument("--retrain", action="store_true",
                      help="with --web: train again even when DIR of --out already holds model.onnx "
                           "(default: reuse it)")
    demo.add_argument("--serve", action="store_true",
                      help="with --web: serve DIR on 127.0.0.1 (COOP/COEP headers: two WASM threads) until Ctrl-C")
    demo.add_argument("--port", type=int, default=8000, metavar="N",
                      help="with --serve: the port (default: 8000; 0 picks a free one)")
    demo.add_argument("--no-isolation", action="store_true",
                      help="with --serve: omit the COOP/COEP headers (the page then runs single-threaded)")
    demo.set_defaults(func=_cmd_demo)

    glue = sub.add_parser("web-glue", help="write model.json (inputs, outputs, dtypes, symbolic dims) and the "
                                           "model.js feed/fetch module beside an ONNX model")
    glue.add_argument("model", metavar="MODEL.onnx")
    glue.add_argument("--out", metavar="DIR", help="output directory (default: the model's)")
    glue.set_defaults(func=_cmd_web_glue)

    passes = sub.add_parser("passes", help="list the registered passes and the default pipeline")
    passes.set_defaults(func=_cmd_passes)

    opt = sub.add_parser("opt", help="run passes on IR text (like mlir-opt)")
    opt.add_argument("file", metavar="FILE.ir", help="IR text file, or - for stdin")
    opt.add_argument("-p", "--passes", required=True, metavar="PASSES",
                     help="comma-separated passes, each NAME or NAME{key=value,...}")
    opt.add_argument("-o", "--output", metavar="FILE", help="write the final IR here (default: stdout)")
    shown = opt.add_mutually_exclusive_group()
    shown.add_argument("--print-after-all", action="store_true", help="print the IR after every pass (stderr)")
    shown.add_argument("--print-after-change", action="store_true",
                       help="print the IR after every pass that changed it (stderr)")
    opt.add_argument("--verify-each", action="store_true", help="run the IR verifier after each pass")
    opt.add_argument("--check-inputs", metavar="INPUTS.npz",
                     help="evaluate before and after each pass on these inputs (arr_0, arr_1, ...); "
                          "exit 1 at the first pass that changes a result")
    opt.add_argument("--load", action="append", default=[], metavar="MODULE",
                     help="import a module (or .py file) and register the Pass subclasses it defines; repeatable")
    opt.set_defaults(func=_cmd_opt)

    comp = sub.add_parser("compile", help="compile MODULE:FUNCTION (returning a compiled pytensor.function, "
                                          "a FunctionGraph or (inputs, outputs)) to an ONNX file")
    comp.add_argument("target", metavar="MODULE:FUNCTION")
    comp.add_argument("-o", "--output", required=True, metavar="MODEL.onnx")
    comp.add_argument("-p", "--passes", metavar="PASSES", help="pass list (default: the default pipeline)")
    comp.add_argument("--report", action="store_true", help="print CompiledModel.report()")
    comp.set_defaults(func=_cmd_compile)

    inputs_help = ("an .npz of inputs to measure the accuracy on (arrays named after the model's inputs, or "
                   "arr_0, arr_1, ... in order)")
    quant = sub.add_parser("quantize", help="int8 quantization of a saved model (onnxruntime.quantization), "
                                            "with its accuracy against the original")
    quant.add_argument("model", metavar="MODEL.onnx")
    quant.add_argument("-o", "--output", required=True, metavar="OUT.onnx")
    quant.add_argument("--mode", choices=["dynamic", "static"], default="dynamic",
                       help="dynamic: int8 weights, activations quantized at run time (default); static: QDQ "
                            "with activation ranges from --calibration")
    quant.add_argument("--calibration", metavar="DATA.npz", help="calibration inputs (static; same layout as "
                                                                  "--inputs, which default to them)")
    quant.add_argument("--per-channel", choices=["auto", "yes", "no"], default="auto",
                       help="one weight scale per output channel (auto: yes for static, no for dynamic)")
    quant.add_argument("--full-range", action="store_true",
                       help="8-bit weights (default: 7 bits, which onnxruntime's x86 kernels need on CPUs without "
                            "VNNI to not saturate; use this for VNNI or ARM targets)")
    quant.add_argument("--inputs", metavar="DATA.npz", help=inputs_help)
    quant.set_defaults(func=_cmd_quantize)

    conv = sub.add_parser("convert", help="convert a saved model to float16 (float32 inputs and outputs kept) "
                                          "or to onnxruntime's .ort format")
    conv.add_argument("model", metavar="MODEL.onnx")
    conv.add_argument("-o", "--output", required=True, metavar="OUT")
    conv.add_argument("--to", choices=["float16", "ort"], required=True)
    conv.add_argument("--inputs", metavar="DATA.npz", help=inputs_help + " (float16)")
    conv.set_defaults(func=_cmd_convert)

    fuzz = sub.add_parser("fuzz", help="differential fuzzing: random PyTensor graphs compiled to ONNX and "
                                       "compared with PyTensor; failures are shrunk and printed")
    fuzz.add_argument("--seed", type=int, default=0, metavar="S", help="first seed (default: 0)")
    fuzz.add_argument("--n", type=int, default=100, metavar="N", help="number of graphs (default: 100)")
    fuzz.add_argument("--steps", type=int, default=6, metavar="K", help="max steps per graph (default: 6)")
    fuzz.add_argument("--backend", default="python", choices=["python", "default"],
                      help="how the default-mode reference runs (its rewritten graph either way): 'python' with "
                           "the ops' Python implementations (default, ~0.2 s a graph), 'default' with the default "
                           "mode's own backend (Numba in PyTensor 3, C in 2.38: seconds a graph to compile)")
    fuzz.add_argument("--family", default="ops", choices=["ops", "scan-grad", "idioms", "pymc", "pymc-model", "random"],
                      help="programs: random op chains (default), a random scan and its nested gradients, "
                           "idioms (convolution, pooling, linear algebra, sorting, special functions), PyMC "
                           "log-densities of one distribution or of small whole models (pymc, pymc-model: need "
                           "PyMC), or random variables compared in distribution under the three random policies")
    fuzz.add_argument("--no-isolate", action="store_true",
                      help="run cases in this process (a hard onnxruntime crash then ends the run)")
    fuzz.set_defaults(func=_cmd_fuzz)

    explore = sub.add_parser("explore", help="serve the pass explorer of a dump_ir directory (or of a "
                             "directory of .ir files, such as a check_passes reproducer)")
    explore.add_argument("directory", help="the dump_ir directory")
    explore.add_argument("--host", default="127.0.0.1")
    explore.add_argument("--port", type=int, default=8000, help="0: any free port")
    explore.add_argument("--no-serve", action="store_true", help="only make the page; print its path")
    explore.set_defaults(func=_cmd_explore)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the console script on ``argv`` (default ``sys.argv[1:]``) and
    return the exit status: 0 on success; 1 when the demo's onnxruntime
    results disagree with PyTensor, onnxruntime-web is not found (``--web``),
    ``web-glue`` cannot read the model or the fuzzer found a failure; 2 on a
    usage error, or when the subcommand raised (one line on stderr, the
    traceback with ``--traceback``)."""
    args = build_parser().parse_args(argv)
    if args.traceback:
        return args.func(args)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print(f"pytensor-onnx {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - every failure becomes one line; --traceback shows it whole
        first = str(err).strip().splitlines()
        print(f"pytensor-onnx {args.command}: {type(err).__name__}: {first[0] if first else ''}"
              + (" (more with --traceback)" if len(first) > 1 else ""), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
