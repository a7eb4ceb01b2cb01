"""The pass-developer commands of the console script: ``pytensor-onnx opt``
(run passes on IR text, in the manner of ``mlir-opt``) and ``pytensor-onnx
compile`` (compile a Python function's graph to a model file).

``opt FILE.ir -p canonicalize,relu-silu`` parses the IR text (``-`` reads
stdin), runs the passes in order and prints the final IR (``-o`` writes it
to a file). A pass is ``name`` or ``name{key=value,...}`` (values are
Python literals, else strings). ``--print-after-all`` / ``--print-after-change``
print the IR after every pass / every pass that changed it, to stderr,
under ``// -----// IR Dump After <pass> //----- //``; ``--verify-each`` runs
the IR verifier after each pass; ``--check-inputs inputs.npz`` evaluates
the IR with the interpreter on those inputs before and after each pass and
fails (exit status 1) at the first pass that changes a result
(``compiler.core.pass_check.compare``), which is how a ``check_passes``
reproducer replays; ``--load MODULE`` imports a module and registers
the ``Pass`` subclasses it defines first.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from typing import Any, Sequence, TextIO

import numpy as np

from compiler.core.driver import compile_to_onnx
from compiler.core.pass_check import compare
from ir.interpreter import evaluate
from ir.parser import parse_graph
from ir.printer import print_graph
from ir.verifier import verify
from passes import Analyses, Pass, get_pass, register_pass, run_pass

_PASS_SPEC = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*(?:\{([^}]*)\})?\s*(?:,|$)")


def parse_pass_specs(text: str) -> list[tuple[str, dict[str, Any]]]:
    """``"a,b{k=1,m='x'}"`` -> ``[("a", {}), ("b", {"k": 1, "m": "x"})]``.

    Raises:
        ValueError: text that is not a comma-separated list of pass specs.
    """
    specs, pos = [], 0
    while pos < len(text):
        m = _PASS_SPEC.match(text, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"cannot parse pass list {text!r} at {text[pos:]!r}")
        options = {}
        for item in filter(None, (s.strip() for s in (m.group(2) or "").split(","))):
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"pass option {item!r} is not key=value")
            try:
                options[key.strip()] = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError):
                options[key.strip()] = value.strip()
        specs.append((m.group(1), options))
        pos = m.end()
    return specs


def load_modules(names: Sequence[str]) -> None:
    """Import each module (a dotted name, or a ``.py`` file path) and
    register the named ``Pass`` subclasses it defines (those it registers
    itself are fine too), so they can be named in the pass list."""
    for name in names:
        if name.endswith(".py"):
            spec = importlib.util.spec_from_file_location(Path(name).stem, name)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(name)
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, Pass) and obj.name
                    and obj.__module__ == module.__name__):
                register_pass(obj)


def run_opt(text: str, pass_list: str, *, print_after_all: bool = False, print_after_change: bool = False,
            verify_each: bool = False, check_inputs: str | None = None, load: Sequence[str] = (),
            log: TextIO | None = None) -> tuple[str, int]:
    """Run ``opt`` on IR text; returns ``(final IR text, exit status)``:
    0, or 1 when ``check_inputs`` found a pass that changed the results (the
    message goes to ``log``; the returned text is the IR before that pass).

    Raises:
        ir.parser.IRParseError, KeyError (unknown pass), ValueError (bad
        pass list), ir.verifier.VerificationError (``verify_each``).
    """
    log = sys.stderr if log is None else log
    load_modules(load)
    graph = parse_graph(text)
    passes = [get_pass(name, **options) for name, options in parse_pass_specs(pass_list)]
    inputs, results = None, None
    if check_inputs is not None:
        with np.load(check_inputs) as data:
            inputs = [data[f"arr_{i}"] for i in range(len(data.files))]
        with np.errstate(all="ignore"):
            results = evaluate(graph, inputs)
    before = print_graph(graph)
    analyses = Analyses(graph)  # a pass that requires fresh types gets shape-inference first, as in run_pipeline
    for p in passes:
        changed = run_pass(p, graph, analyses)
        if verify_each:
            verify(graph, context=f"after {p.name}")
        if print_after_all or (print_after_change and changed):
            print(f"// -----// IR Dump After {p.name} //----- //\n{print_graph(graph)}", file=log)
        if inputs is not None and changed:
            try:
                with np.errstate(all="ignore"):
                    after = evaluate(graph, inputs)
                why = compare(results, after)
            except Exception as e:  # noqa: BLE001 - reported like a mismatch
                why = f"the interpreter failed after the pass: {type(e).__name__}: {e}"
            if why is not None:
                print(f"pass {p.name!r} changed the results: {why}", file=log)
                return before, 1
            results = after
        before = print_graph(graph)
    return before, 0


def load_target(target: str):
    """The object ``MODULE:FUNCTION`` (or ``path/file.py:FUNCTION``) names,
    called with no arguments when it is callable and not already a compiled
    PyTensor function. ``MODULE`` is looked up in the current directory too
    (the console script's ``sys.path`` does not hold it).

    Raises:
        ValueError: no ``:`` in ``target``. ImportError, AttributeError.
    """
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected MODULE:FUNCTION, got {target!r}")
    if module_name.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())  # as ``python -m`` does: a module beside the caller is found
        module = importlib.import_module(module_name)
    obj = getattr(module, attr)
    if callable(obj) and not hasattr(obj, "maker"):
        obj = obj()
    return obj


def compile_target(target: str, out: str, passes: str | None = None, report: bool = False,
                   log: TextIO | None = None) -> None:
    """``pytensor-onnx compile``: compile what ``load_target(target)`` gives
    (a compiled ``pytensor.function``, a ``FunctionGraph``, or an
    ``(inputs, outputs)`` pair) and save the model to ``out``."""
    log = sys.stdout if log is None else log
    obj = load_target(target)

    pipeline = None if passes is None else [get_pass(n, **o) for n, o in parse_pass_specs(passes)]
    if isinstance(obj, tuple) and len(obj) == 2 and not hasattr(obj, "maker"):
        compiled = compile_to_onnx(list(obj[0]), pipeline, outputs=obj[1])
    else:
        compiled = compile_to_onnx(obj, pipeline)
    compiled.save(out)
    print(f"wrote {out}: {len(compiled.model.graph.node)} nodes, inputs {', '.join(compiled.input_names)}",
          file=log)
    if report:
        print(compiled.report(), file=log)

