"""The ``pytensor-onnx`` console script.

Subcommands:
    ``demo``    train a CNN (or an MLP) on scikit-learn's digits, compile it to
                ONNX and compare onnxruntime with PyTensor (``compiler.demo``).
    ``passes``  list the registered passes and the default pipeline.

``python -m compiler.cli ...`` is the same program. Heavy imports (PyTensor,
scikit-learn) happen only inside the subcommand that needs them.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Sequence

DIST_NAME = "pytensor-onnx"


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
    from compiler.demo import format_report, run_demo

    if args.model == "pymc":
        from compiler.demo_pymc import format_pymc_report, run_pymc_demo

        pymc_report = run_pymc_demo(args.out, seed=args.seed, log=lambda line: print(line, flush=True))
        print(format_pymc_report(pymc_report))
        return 0 if pymc_report.ok else 1
    mode = None if args.mode == "default" else args.mode
    report = run_demo(args.out, model=args.model, epochs=args.epochs, seed=args.seed, mode=mode,
                      log=lambda line: print(line, flush=True))
    print(format_report(report))
    return 0 if report.ok else 1


def _cmd_passes(args: argparse.Namespace) -> int:
    print(format_passes())
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the console script."""
    from compiler.demo import DEFAULT_EPOCHS, DEFAULT_MODE, DEFAULT_MODEL, DEFAULT_SEED, MODELS

    parser = argparse.ArgumentParser(prog="pytensor-onnx",
                                     description="A graph-rewrite compiler from PyTensor graphs to ONNX.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
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
    demo.set_defaults(func=_cmd_demo)

    passes = sub.add_parser("passes", help="list the registered passes and the default pipeline")
    passes.set_defaults(func=_cmd_passes)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the console script on ``argv`` (default ``sys.argv[1:]``) and
    return the exit status: 0 on success; 1 when the demo's onnxruntime
    results disagree with PyTensor; 2 on a usage error (from argparse)."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
