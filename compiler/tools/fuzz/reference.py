"""What a fuzzed program is compared with: building it (``build``), PyTensor
running it (``reference_mode``, ``_reference``), the fuzzer's float bound
(``compare``) and the result of one case (``CaseResult``). Shared by the
case runners of every family (``runner.py``, ``random_draws.py``)."""

from __future__ import annotations

import contextlib
import copy
import functools
from dataclasses import dataclass, field

import numpy as np

from compiler.tools.fuzz.generate import Program


@dataclass
class CaseResult:
    """The outcome of one program: its class, which path decided it
    (``raw``/``compiled``), a one-line detail, the program, and for
    ``known`` the explanation's name (a ``KNOWN`` entry, or
    ``implementations: <which agrees>``)."""

    kind: str
    path: str
    detail: str
    program: Program = field(repr=False)
    explanation: str = ""

    def report(self) -> str:
        """A repro: the class, detail, program source and data."""
        return (f"[{self.kind}] seed={self.program.seed} path={self.path}: {self.detail}\n"
                f"{self.program.source()}\n{self.program.data_source()}")


def build(program: Program):
    """Execute ``program``'s source: (input variables, output variable).

    Raises:
        whatever PyTensor raises building it.
    """
    ns: dict = {}
    exec(program.source(), ns)  # noqa: S102 - our own generated source
    return [ns[name] for name, *_ in program.inputs], ns["out"]


def compare(got, want, condition: float = 1.0, precision: str | None = None) -> str | None:
    """None if ``got`` equals ``want`` under the fuzzer's contract (the float
    bound times ``condition``, with the epsilon of ``precision`` when given,
    else of ``want``'s dtype: ``Program.condition``, ``Program.precision``),
    else why."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if want.dtype.kind != "f":
        bad = got != want
        return None if not bad.any() else f"values differ at {np.argwhere(bad)[:3].tolist()}: {got[bad][:3]} != {want[bad][:3]}"
    for what, fn in (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
        if (fn(got) != fn(want)).any():
            return f"{what} pattern differs: got {got.ravel()[:8]}, want {want.ravel()[:8]}"
    fin = np.isfinite(want)
    if not fin.any():
        return None
    eps = np.finfo(precision or want.dtype).eps
    scale = np.max(np.abs(want[fin]))
    err = np.abs(got[fin].astype(np.float64) - want[fin])
    bound = 16 * eps * condition * (np.abs(want[fin]) + scale)
    if (err > bound).any():
        i = int(np.argmax(err - bound))
        return f"float values differ: {got[fin][i]!r} != {want[fin][i]!r} (bound {bound[i]:.3g})"
    return None


BACKENDS = ("default", "python")


def reference_mode(backend: str = "default"):
    """The PyTensor mode a model compiled from a function is compared with.

    Both backends apply exactly PyTensor's default-mode rewrites (the graph
    ``compile_to_onnx(f)`` sees for a default-mode ``f``):

    - ``"default"``: the default mode itself (Numba in PyTensor 3, C in
      2.38), which compiles every new random graph for seconds (measured
      about 9 s per fuzzed graph with Numba, 4 s with C).
    - ``"python"``: that rewritten graph run by PyTensor's Python linker (each
      op's ``perform``), with no compilation. Its linker is told to require
      and exclude no rewrites, so the rewrite query is the default mode's
      own (a plain ``Mode(linker="py")`` would add ``py_only`` and drop
      ``cxx_only``, another graph).

    Raises:
        ValueError: an unknown ``backend``.
    """
    import pytensor
    from pytensor.compile.mode import get_default_mode

    if backend == "default":
        return get_default_mode()
    if backend != "python":
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    flags = pytensor.config
    return _python_reference_mode(flags.mode, flags.optimizer_including, flags.optimizer_excluding,
                                  flags.optimizer_requiring)


@functools.lru_cache(maxsize=4)
def _python_reference_mode(*config):
    """``reference_mode("python")`` for the PyTensor flags ``config``: the
    default mode's rewrite query is run once (``Mode.optimizer`` queries the
    rewrite database at every ``pytensor.function``, ~5 ms a call)."""
    from pytensor.compile.mode import get_default_mode

    return _plain_mode("py", get_default_mode().optimizer)


def _reference(inputs, out, data, mode):
    """(function, outputs, error) of PyTensor in ``mode``; function None if
    PyTensor cannot compile the graph."""
    import pytensor

    try:
        fn = pytensor.function(inputs, out, on_unused_input="ignore", mode=mode)
    except Exception as e:
        return None, None, e
    try:
        return fn, fn(*[d.copy() for d in data]), None
    except Exception as e:
        return fn, None, e


def _plain_mode(linker: str, optimizer):
    """A ``Mode`` with PyTensor's ``linker`` (``"py"`` or ``"cvm"``) that adds
    and removes no rewrite of its own to ``optimizer``."""
    from pytensor.compile.mode import Mode, predefined_linkers

    link = copy.copy(predefined_linkers[linker])
    link.required_rewrites, link.incompatible_rewrites = (), ()
    return Mode(linker=link, optimizer=optimizer)


def _inner_graphs_in_python(backend: str):
    """With the ``"python"`` backend, the inner functions ``OpFromGraph``
    compiles for its ``perform`` (3.0's symbolic ``Softmax``, ...) use
    PyTensor's ``FAST_COMPILE`` mode (Python linker) instead of the default
    mode, which would compile them with Numba."""
    import pytensor

    return pytensor.config.change_flags(mode="FAST_COMPILE") if backend == "python" else contextlib.nullcontext()
