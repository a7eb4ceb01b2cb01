"""Numerical per-pass verification (``compile_to_onnx(..., check_passes=N)``)
and its crash reproducers.

Before the pipeline, ``PassChecker`` draws N random input sets for the IR
graph (``random_inputs``: each input's dtype; one size per symbolic dim
name, shared by every input that names it) and evaluates the graph on them
with the reference interpreter (``ir.interpreter``). After each pass it
evaluates again and compares with the results before the pass
(``compare``): dtypes, shapes and which elements are NaN / +inf / -inf
exactly, integers and booleans exactly, floats within ``RTOL`` of the
dtype relative to the output's scale (``|a - b| <= rtol * max(1, max|b|)``,
so a reassociated sum near zero is not flagged). The first pass that
changes a result raises ``PassCheckError`` naming it, after writing a
reproducer directory:

- ``before.ir``: the IR text before the pass;
- ``pass.json``: the pass name, its options and its module;
- ``inputs.npz``: the failing input set (``arr_0``, ``arr_1``, ... in graph
  input order);
- ``replay.sh``: the ``pytensor-onnx opt`` command that replays it (it
  exits with status 1 and the same mismatch).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from ir import Graph
from ir.errors import CompileError
from ir.interpreter import evaluate
from ir.printer import print_graph
from ir.symbolic import evaluate as eval_dim, symbols
from ir.types import DType

# Relative tolerance per float dtype (the numerics contract's bound for one pass).
RTOL = {DType.FLOAT16: 1e-3, DType.FLOAT32: 1e-6, DType.FLOAT64: 1e-12}
SIZES = (1, 2, 3, 5)  # sizes drawn for symbolic dims


class PassCheckError(CompileError, AssertionError):
    """A pass changed the interpreter's results beyond the tolerance.

    Attributes:
        pass_name: the first pass that did.
        reproducer: the reproducer directory.
        command: the ``pytensor-onnx opt`` command that replays it.
    """

    def __init__(self, message: str, pass_name: str, reproducer: Path, command: str):
        super().__init__(message)
        self.pass_name, self.reproducer, self.command = pass_name, reproducer, command


def random_inputs(graph: Graph, rng: np.random.Generator, sizes: Sequence[int] = SIZES) -> list[np.ndarray]:
    """One random array per graph input: standard normal floats, integers in
    [-3, 3] (unsigned: [0, 6]), random booleans. Static dims are kept; every
    symbolic dim name gets one size drawn from ``sizes`` shared by all
    inputs (a symbolic expression is evaluated at those sizes); unknown dims
    get a random size."""
    chosen: dict[str, int] = {}
    for v in graph.inputs:
        for d in v.shape:
            if d is not None and not isinstance(d, int):
                for s in sorted(symbols(d)):
                    chosen.setdefault(s, int(rng.choice(sizes)))
    arrays = []
    for v in graph.inputs:
        shape = tuple(d if isinstance(d, int) else int(rng.choice(sizes)) if d is None
                      else max(0, eval_dim(d, chosen)) for d in v.shape)
        np_dtype = v.dtype.numpy
        if v.dtype == DType.BOOL:
            arr = rng.random(shape) < 0.5
        elif np.issubdtype(np_dtype, np.floating):
            arr = rng.standard_normal(shape)
        elif np.issubdtype(np_dtype, np.unsignedinteger):
            arr = rng.integers(0, 7, shape)
        else:
            arr = rng.integers(-3, 4, shape)
        arrays.append(np.asarray(arr, dtype=np_dtype))
    return arrays


def compare(before: Sequence[np.ndarray], after: Sequence[np.ndarray]) -> str | None:
    """None when ``after`` matches ``before`` within the contract (see the
    module docstring), else the first difference as text."""
    for i, (b, a) in enumerate(zip(before, after, strict=True)):
        b, a = np.asarray(b), np.asarray(a)
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"output {i}: {a.dtype}{list(a.shape)} instead of {b.dtype}{list(b.shape)}"
        if not np.issubdtype(b.dtype, np.floating):
            if not np.array_equal(a, b):
                return f"output {i}: {int(np.sum(a != b))} of {b.size} elements differ (exact dtype {b.dtype})"
            continue
        for name, test in (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
            if not np.array_equal(test(a), test(b)):
                return f"output {i}: the {name} elements differ"
        finite = np.isfinite(b)
        if not finite.any():
            continue
        rtol = RTOL[DType.from_numpy(b.dtype)]
        scale = max(1.0, float(np.max(np.abs(b[finite]))))
        err = float(np.max(np.abs(a[finite].astype(np.float64) - b[finite].astype(np.float64))))
        if err > rtol * scale:
            return f"output {i}: max abs error {err:.3g} > {rtol:g} * {scale:.3g} ({b.dtype})"
    return None


class PassChecker:
    """Evaluates a graph on N random input sets and re-checks it after each
    pass (see the module docstring).

    Args:
        graph: the IR graph the pipeline will rewrite (evaluated now).
        n: how many input sets.
        reproducer_dir: where reproducers go (default: a new temporary
            directory).
        seed: seed of the input draw.

    Raises:
        ValueError: the interpreter rejected every random input set drawn.
    """

    def __init__(self, graph: Graph, n: int, reproducer_dir: str | Path | None = None, seed: int = 0):
        rng = np.random.default_rng(seed)
        # symbolic dims are drawn from small sizes and the graph's own static dims (a matmul's
        # inner dim must match a weight's)
        sizes = sorted(set(SIZES) | {d for c in graph.constants.values() for d in c.shape if 1 <= d <= 64})
        self.inputs: list[list[np.ndarray]] = []
        self.results: list[list[np.ndarray]] = []
        last_error = None
        for _ in range(max(0, n) * 20):  # draws the graph rejects (mismatched dims, indices) are replaced
            if len(self.inputs) == n:
                break
            arrays = random_inputs(graph, rng, sizes)
            try:
                with np.errstate(all="ignore"):
                    self.results.append(evaluate(graph, arrays))
            except Exception as e:  # noqa: BLE001 - inputs the graph cannot take are skipped
                last_error = e
                continue
            self.inputs.append(arrays)
        if n > 0 and not self.inputs:
            raise ValueError(f"check_passes: the interpreter rejected every random input set (last error: "
                             f"{type(last_error).__name__}: {last_error}); pin the dims with input_shapes "
                             "or example_inputs")
        self.reproducer_dir = reproducer_dir
        self.before_text = print_graph(graph)

    def check(self, pass_, graph: Graph) -> None:
        """Compare ``graph`` (after ``pass_``) with the results before it.

        Raises:
            PassCheckError: a result changed; the reproducer is written first.
        """
        new_results = []
        for arrays, before in zip(self.inputs, self.results):
            try:
                with np.errstate(all="ignore"):
                    after = evaluate(graph, arrays)
                why = compare(before, after)
            except Exception as e:  # noqa: BLE001 - a pass that makes the graph fail is reported the same way
                why = f"the interpreter failed after the pass: {type(e).__name__}: {e}"
            if why is not None:
                raise self._failure(pass_, arrays, why)
            new_results.append(after)
        self.results = new_results
        self.before_text = print_graph(graph)

    def _failure(self, pass_, arrays: list[np.ndarray], why: str) -> PassCheckError:
        out = Path(self.reproducer_dir) if self.reproducer_dir is not None else Path(
            tempfile.mkdtemp(prefix=f"pytensor-onnx-{pass_.name}-"))
        out.mkdir(parents=True, exist_ok=True)
        (out / "before.ir").write_text(self.before_text)
        options = pass_options(pass_)
        (out / "pass.json").write_text(json.dumps({"name": pass_.name, "options": options,
                                                   "module": type(pass_).__module__}, indent=2, default=repr))
        np.savez(out / "inputs.npz", *arrays)
        command = replay_command(out, pass_)
        (out / "replay.sh").write_text(command + "\n")
        message = (f"pass {pass_.name!r} changed the results: {why}\n"
                   f"reproducer written to {out}\nreplay with: {command}")
        return PassCheckError(message, pass_.name, out, command)


def pass_options(pass_) -> dict:
    """The options (dataclass fields) of a pass object that differ from the
    defaults, as plain data."""
    if not dataclasses.is_dataclass(pass_):
        return {}
    return {f.name: getattr(pass_, f.name) for f in dataclasses.fields(pass_)
            if f.default is dataclasses.MISSING or getattr(pass_, f.name) != f.default}


def pass_spec(pass_) -> str:
    """The ``-p`` spelling of a pass object: ``name`` or ``name{key=value,...}``."""
    options = pass_options(pass_)
    if not options:
        return pass_.name
    return pass_.name + "{" + ",".join(f"{k}={v!r}" for k, v in options.items()) + "}"


def replay_command(out: Path, pass_) -> str:
    """The ``pytensor-onnx opt`` command replaying ``pass_`` on the reproducer
    in ``out`` (with ``--load`` for a pass defined outside ``passes``)."""
    args = ["pytensor-onnx", "opt", str(out / "before.ir"), "-p", pass_spec(pass_),
            "--check-inputs", str(out / "inputs.npz")]
    module = type(pass_).__module__
    if module.split(".")[0] != "passes":
        args += ["--load", module]
    return shlex.join(args)
