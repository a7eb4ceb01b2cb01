"""Run PyTensor's own backend test files (``tests/link/jax``,
``tests/link/pytorch``) through the ONNX mode.

PyTensor tests each backend with per-file suites built on one compare helper:
``compare_jax_and_py`` (``tests/link/jax/test_basic.py``),
``compare_pytorch_and_py`` (``tests/link/pytorch/test_basic.py``) and, for
random variables, ``compile_random_function`` (``tests/link/jax/test_random.py``).
This script takes those files for the installed PyTensor from git (the tag
``rel-<version>`` of a PyTensor repository, ``git archive tests conftest.py``
into a temporary directory; or the ``tests`` of a checkout, ``--pytensor-src``),
and runs them with pytest with the three helpers replaced (before any test
module imports them) by versions that compile the same graph with our ONNX mode:

- ``compare_*_and_py``: PyTensor's Python mode (the test's ``py_mode``) gives
  the reference (a reference that raises is re-raised: the test expected it);
  then the graph is compiled with ``mode="ONNX"`` and run on the same inputs.
  Ours matches when dtypes, shapes and NaN/inf positions are the reference's
  and the values pass the test's own ``assert_fn`` if it gave one, else
  ``bench/peer_suite.compare`` (integers exact, floats within 1e-10 float64,
  1e-5 float32). It returns our function and our results, so the test's
  checks after the compare run on ours.
- ``compile_random_function``: compiles with ``random="inputs"`` in an
  ONNX-mode function whose linker draws each noise input with NumPy
  (``m.random_inputs``: standard normal or U[0, 1) of the input's dtype and
  shape) at every call, so the test's own moment / KS checks judge the draws
  (a noise input of a symbolic size: ``random="onnx"``, the model draws it).
  The updates of random generators are dropped (the noise is fresh at every
  call: the stream advances without them; a generator is not a model output).
- the backends' modes (``"JAX"``, ``"PYTORCH"`` by name, and the test files'
  ``jax_mode`` / ``pytorch_mode``): a test that compiles with them directly
  gets our mode (the same linker), and its own assertions judge our function.

Each test is classified:

- pass: every compile through our mode matched and the test passed;
- refused: our compile raised ``UnsupportedOpsError`` or ``EmitError`` (the
  reason is the error's);
- mismatch: our values, dtypes or shapes differ from the reference (or a
  random test's own statistical check failed on our draws);
- error: anything else raised by our compile or run (our bug);
- failed: the test compiled a function of ours directly (a backend mode
  redirected to ours) and its own check failed on it (a value the test
  expected, or a check of the backend's internals: the message says which);
- n/a: the test never reached our compile (it checks the JAX / PyTorch
  linker itself), its graph wraps a JAX function (``wrap_jax``), or every compare matched and a backend-specific check after
  them failed (the message says which: a ``DID NOT RAISE`` is a backend's
  refusal the test expected, which our compile does not share);
- skipped: pytest skipped it (``--runslow`` not given, no CUDA, ...);
- not run: collected, but the ``--budget`` ran out before it (only counted).

It prints a table per file and every non-passing test with its reason.

Usage (needs JAX and PyTorch importable: the test files import them)::

    python bench/peer_tests.py [--pytensor-src DIR | --repo GITDIR] [-k EXPR]
        [--timeout SECONDS] [--budget SECONDS] [--out REPORT] [FILES ...]

FILES are paths inside ``tests/link`` (default: ``jax pytorch``, the linalg
files first, ``jax/test_wrap_jax.py``, whose 411 tests wrap JAX functions, last). ``--timeout`` bounds each test (SIGALRM; a test over it is an
error), ``--budget`` the whole run (the tests after it are not run, and the
report says where it stopped).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from collections import defaultdict

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(BENCH))
sys.path.insert(0, BENCH)

import pytensor  # noqa: E402
from pytensor.compile.mode import Mode  # noqa: E402

import peer_suite  # noqa: E402
from backends.onnx.registry import EmitError  # noqa: E402
from compiler import UnsupportedOpsError  # noqa: E402
from compiler.mode import REWRITES, ONNXLinker  # noqa: E402

DEFAULT_REPO = "/work/.mirror/pymc-devs+pytensor/repo"
DEFAULT_FILES = ["jax/linalg", "pytorch/linalg", "jax", "pytorch"]
STATUSES = ("pass", "refused", "mismatch", "error", "failed", "n/a", "skipped", "not run")
REFUSALS = (UnsupportedOpsError, EmitError)


class Refused(Exception):
    """Our compile refused the graph (raised out of the replaced helper)."""


class Mismatch(AssertionError):
    """Our outputs differ from the reference's."""


class OurError(Exception):
    """Our compile or run raised something else."""


class Recorder:
    """What the replaced helpers saw in the running test, by test id."""

    def __init__(self):
        self.current: str | None = None
        self.events: dict[str, list[tuple[str, str]]] = defaultdict(list)

    def add(self, kind: str, detail: str = "") -> None:
        if self.current is not None:
            self.events[self.current].append((kind, detail))


RECORDER = Recorder()


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:300]


def onnx_test_mode() -> Mode:
    """Our mode as the harness uses it: ``ONNX_MODE``'s rewrites, a
    ``NoiseLinker`` (``random="inputs"``, NumPy noise at each call; the
    mode's other defaults, ``assertions="raise"`` included: the same model
    as ``mode="ONNX"`` for graphs without random variables)."""
    return Mode(linker=NoiseLinker(compile_options={"random": "inputs"}), optimizer=REWRITES)


def _compile_ours(*args, **kwargs):
    """``pytensor.function`` in ``onnx_test_mode()``; refusals and other
    errors (recorded by the linker, or by this function when PyTensor failed
    before reaching the linker) are raised as ``Refused`` / ``OurError``."""
    kwargs.pop("mode", None)
    events = len(RECORDER.events.get(RECORDER.current, []))
    try:
        return pytensor.function(*args, mode=onnx_test_mode(), **kwargs)
    except REFUSALS as e:
        raise Refused(peer_suite.refusal(e)) from e
    except Exception as e:
        if len(RECORDER.events.get(RECORDER.current, [])) == events:
            RECORDER.add("error", "compile: " + _first_line(e))
        raise OurError("compile: " + _first_line(e)) from e


def compare_onnx_and_py(graph_inputs, graph_outputs, test_inputs, *args, assert_fn=None, py_mode=None, **_ignored):
    """Replacement of ``compare_jax_and_py`` / ``compare_pytorch_and_py``:
    the reference from PyTensor's Python mode (``py_mode``, the test's), ours
    from ``mode="ONNX"`` on the same ``test_inputs`` (module docstring).

    Returns:
        (our compiled function, our results), a list of arrays when
        ``graph_outputs`` is a list or tuple, else one array.

    Raises:
        Refused: our compile refused the graph.
        Mismatch: dtypes, shapes, NaN positions or values differ.
        OurError: our compile or run raised anything else.
        Whatever the reference raised (the test may expect it).
    """
    if args and assert_fn is None:  # compare_pytorch_and_py takes assert_fn positionally
        assert_fn = args[0]
    if py_mode is None:
        py_mode = Mode(linker="py", optimizer=None)
    if any(inp.owner is not None for inp in graph_inputs):
        raise ValueError("Inputs must be root variables")
    many = isinstance(graph_outputs, list | tuple)
    ref = pytensor.function(graph_inputs, graph_outputs, mode=py_mode)(*test_inputs)
    fn = _compile_ours(graph_inputs, graph_outputs)
    RECORDER.add("compare")
    try:
        got = fn(*test_inputs)
    except Exception as e:
        RECORDER.add("error", "run: " + _first_line(e))
        raise OurError("run: " + _first_line(e)) from e
    gots, refs = (list(got), list(ref)) if many else ([got], [ref])
    why = peer_suite.compare(gots, refs, values=assert_fn is None)
    if why is None and assert_fn is not None:
        try:
            for g, r in zip(gots, refs, strict=True):
                assert_fn(g, r)
        except AssertionError as e:
            why = "the test's assert_fn: " + " ".join(str(e).split())[:240]
    if why is not None:
        RECORDER.add("mismatch", why)
        raise Mismatch(why)
    RECORDER.add("pass")
    return fn, got


class NoiseLinker(ONNXLinker):
    """``ONNXLinker`` compiling with ``random="inputs"`` whose thunk draws
    every noise input (``CompiledModel.random_inputs``) from a NumPy
    ``Generator`` at each call: standard normal or U[0, 1) of the input's
    dtype and static shape. A graph with a noise input of a symbolic dim (a
    ``size`` read from an input: the harness cannot know it before the run)
    is compiled with ``random="onnx"`` instead (the model draws its noise).
    """

    def __init__(self, *args, seed: int = 0, **kwargs):
        super().__init__(*args, **kwargs)
        self.gen = np.random.default_rng(seed)

    def fgraph_convert(self, fgraph, **kwargs):
        """``ONNXLinker.fgraph_convert``, recording the outcome in the
        running test's events (``compiled``, ``refused`` or ``error``)."""
        try:
            run = super().fgraph_convert(fgraph, **kwargs)
        except REFUSALS as e:
            RECORDER.add("refused", peer_suite.refusal(e))
            raise
        except Exception as e:
            RECORDER.add("error", "compile: " + _first_line(e))
            raise
        RECORDER.add("compiled")
        return run

    def compile_model(self, graph, options, outputs=None):
        """``random="inputs"``, or ``"onnx"`` where a noise input has a symbolic
        dim (a ``size`` read from an input: the harness cannot know it before the run)."""
        compiled = super().compile_model(graph, options, outputs=outputs)
        if any(not all(isinstance(d, int) for d in spec.shape) for spec in compiled.random_inputs):
            compiled = super().compile_model(graph, dataclasses.replace(options, random="onnx"), outputs=outputs)
        return compiled

    def extra_feed(self, compiled):
        """Draws every noise input of ``compiled`` into the feed (class docstring)."""
        noise = list(compiled.random_inputs)
        if not noise:
            return None

        def draw(feed: dict) -> None:
            for spec in noise:
                value = self.gen.standard_normal(spec.shape) if spec.noise == "normal" else self.gen.random(spec.shape)
                feed[spec.name] = value.astype(spec.dtype)

        return draw

    def clone(self, allow_gc=None):
        return type(self)(self.passes, self.options, self.pin_shared_shapes,
                          allow_gc=self.allow_gc if allow_gc is None else allow_gc)


def compile_random_onnx(*args, mode=None, **kwargs):
    """Replacement of ``test_random.compile_random_function``: the function
    compiled with ``random="inputs"`` and NumPy noise at each call
    (``NoiseLinker``); updates of random generators dropped (module docstring).

    Raises:
        Refused, OurError: as ``compare_onnx_and_py``.
    """
    from pytensor.tensor.random.type import RandomType

    updates = kwargs.get("updates")
    if updates is not None:
        pairs = updates.items() if isinstance(updates, dict) else updates
        kwargs["updates"] = [(k, v) for k, v in pairs if not isinstance(k.type, RandomType)]
    kwargs.setdefault("no_default_updates", True)  # RandomStream's generators' default updates, likewise
    return _compile_ours(*args, **kwargs)


class Plugin:
    """The pytest plugin: patches the helpers, records each test's outcome."""

    def __init__(self, root: str, timeout: float, budget: float = 0.0):
        self.root = root
        self.timeout = timeout
        self.budget = budget  # seconds for the whole run (0: none); later tests are not run
        self.started = time.monotonic()
        self.stopped_at: str | None = None
        self.collected: list[str] = []
        self.reports: dict[str, dict] = {}  # nodeid -> {phase: TestReport}

    def pytest_configure(self, config):
        sys.path.insert(0, self.root)
        import importlib

        for module, name in (("tests.link.jax.test_basic", "compare_jax_and_py"),
                             ("tests.link.pytorch.test_basic", "compare_pytorch_and_py")):
            try:
                setattr(importlib.import_module(module), name, compare_onnx_and_py)
            except Exception as e:  # noqa: BLE001 - reported: that backend's files cannot import
                print(f"peer_tests: cannot patch {module}.{name}: {_first_line(e)}", file=sys.stderr)
        from pytensor.compile import mode as pytensor_mode

        ours = onnx_test_mode()
        for name in ("JAX", "PYTORCH"):  # function(..., mode="JAX") in the tests compiles with ours
            pytensor_mode.predefined_modes[name] = ours
        for module, name in (("tests.link.jax.test_basic", "jax_mode"), ("tests.link.pytorch.test_basic", "pytorch_mode")):
            if module in sys.modules:
                setattr(sys.modules[module], name, ours)
        try:
            test_random = importlib.import_module("tests.link.jax.test_random")
            test_random.compile_random_function = compile_random_onnx
        except Exception as e:  # noqa: BLE001
            print(f"peer_tests: cannot patch test_random: {_first_line(e)}", file=sys.stderr)

    def pytest_collection_modifyitems(self, items):
        """Drop the skip marks of tests whose JAX form needs numpyro
        (binomial, beta-binomial, vonmises): our compile does not."""
        for item in items:
            item.own_markers = [m for m in item.own_markers
                                if not (m.name == "skipif" and "numpyro" in str(m.kwargs.get("reason", "")))]

    def pytest_collection_finish(self, session):
        self.collected = [item.nodeid for item in session.items]

    def pytest_runtest_setup(self, item):
        RECORDER.current = item.nodeid
        if self.budget and time.monotonic() - self.started > self.budget and self.stopped_at is None:
            self.stopped_at = item.nodeid
            item.session.shouldstop = f"the time budget of {self.budget:g} s is spent"

    def _alarm(self, signum, frame):
        raise TimeoutError(f"test exceeded {self.timeout:g} s")

    def pytest_runtest_call(self, item):
        if self.timeout:
            signal.signal(signal.SIGALRM, self._alarm)
            signal.setitimer(signal.ITIMER_REAL, self.timeout)

    def pytest_runtest_teardown(self, item):
        if self.timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def pytest_runtest_logreport(self, report):
        phases = self.reports.setdefault(report.nodeid, {})
        phases[report.when] = report

    def outcome(self, nodeid: str) -> tuple[str, str]:
        """(``passed`` / ``failed`` / ``skipped`` / ``setup`` (setup failed),
        message) of one test from its phase reports; an expected failure
        (xfail) counts as failed, with its reason."""
        phases = self.reports[nodeid]
        setup, call = phases.get("setup"), phases.get("call")
        if setup is not None and setup.failed:
            return "setup", _message(setup)
        if call is None:
            return "skipped", _message(setup) if setup is not None else ""
        if hasattr(call, "wasxfail"):
            return ("failed", f"xfail ({call.wasxfail}): {_message(call)}") if call.skipped else ("passed", "")
        if call.skipped:
            return "skipped", _message(call)
        return call.outcome, _message(call) if call.failed else ""


def _message(report) -> str:
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple):  # a skip: (path, line, reason)
        return str(longrepr[2])
    crash = getattr(longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(longrepr)
    return " ".join(text.split())[:300]


def classify(events: list[tuple[str, str]], outcome: str, message: str) -> tuple[str, str]:
    """(status, reason) of one test from what the helpers recorded and the
    test's pytest outcome (module docstring)."""
    for kind in ("refused", "error", "mismatch"):
        found = [d for k, d in events if k == kind]
        if found:
            if kind == "refused" and any("JAXOp" in d.split(":")[0] for d in found[0].split("; ")):
                return "n/a", "the graph wraps a JAX function (wrap_jax's JAXOp: only JAX runs it): " + found[0]
            return kind, found[0]
    if outcome == "skipped":
        return "skipped", message
    if not events:
        if outcome == "setup":
            return "n/a", "setup failed before our compile: " + message
        return "n/a", f"never reached our compile (the backend test {outcome}{': ' + message if message else ''})"
    if outcome == "passed":
        return "pass", ""
    compiled = sum(k == "compiled" for k, _ in events)
    if compiled > sum(k == "compare" for k, _ in events):  # a function of ours the test judged itself
        return "failed", "the test's own check on our function: " + message
    return "n/a", "our compares passed, then the backend-specific check failed: " + message


def extract_tests(dest: str, repo: str | None, src: str | None) -> str:
    """Put PyTensor's ``tests`` package and root ``conftest.py`` under
    ``dest``: from the checkout ``src``, else ``git archive rel-<installed
    version>`` of the repository ``repo``. Returns the tag or path used."""
    if src:
        import shutil

        shutil.copytree(os.path.join(src, "tests"), os.path.join(dest, "tests"))
        if os.path.exists(os.path.join(src, "conftest.py")):
            shutil.copy(os.path.join(src, "conftest.py"), dest)
        return src
    tag = "rel-" + pytensor.__version__.split("+")[0]
    data = subprocess.run(["git", "--git-dir", repo, "archive", "--format=tar", tag, "tests", "conftest.py"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return f"{repo} {tag}"


def report(results: dict[str, tuple[str, str]], header: str) -> str:
    """The table per file and the list of non-passing tests."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(STATUSES, 0))
    lines = [header, ""]
    for nodeid, (status, _) in results.items():
        table[nodeid.split("::")[0].removeprefix("tests/link/")][status] += 1
    width = max([len(f) for f in table] + [5]) + 2
    lines.append(f"{'file':<{width}}" + "".join(f"{s:>10}" for s in STATUSES) + f"{'total':>10}")
    for file in sorted(table):
        row = table[file]
        lines.append(f"{file:<{width}}" + "".join(f"{row[s]:>10}" for s in STATUSES) + f"{sum(row.values()):>10}")
    total = {s: sum(r[s] for r in table.values()) for s in STATUSES}
    lines.append(f"{'total':<{width}}" + "".join(f"{total[s]:>10}" for s in STATUSES) + f"{sum(total.values()):>10}")
    for status in STATUSES[1:-1]:  # (the tests not run are only counted)
        chosen = [(n, r) for n, (s, r) in results.items() if s == status]
        if chosen:
            lines += ["", f"{status} ({len(chosen)}):"]
            lines += [f"  {n}: {r}" for n, r in chosen]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", default=DEFAULT_FILES, help="paths inside tests/link")
    parser.add_argument("--pytensor-src", help="a PyTensor checkout whose tests/ to run (default: git archive)")
    parser.add_argument("--repo", default=DEFAULT_REPO, help="a PyTensor git repository holding tag rel-<version>")
    parser.add_argument("-k", default="", help="pytest's -k expression")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per test (0: none)")
    parser.add_argument("--budget", type=float, default=0.0,
                        help="seconds for the whole run (0: none); the tests after it are listed as not run")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--pytest-args", default="", help="more pytest arguments (one string)")
    args = parser.parse_args(argv)
    import pytest

    with tempfile.TemporaryDirectory(prefix="peer_tests_") as root:
        source = extract_tests(root, args.repo, args.pytensor_src)
        plugin = Plugin(root, args.timeout, args.budget)
        paths = []
        for f in args.files:  # the linalg files first (a time budget cuts the rest)
            base = os.path.join(root, "tests", "link", f)
            if os.path.isdir(base):
                found = sorted(os.path.join(d, n) for d, _, names in os.walk(base) for n in names
                               if n.startswith("test_") and n.endswith(".py"))
                paths += [p for p in found if p not in paths]
            elif os.path.exists(base):
                paths.append(base)
            elif f not in DEFAULT_FILES:  # (the linalg folders are newer than PyTensor 2.38)
                raise SystemExit(f"no {base}")
        # stable: the files' order otherwise; the JAX-only test_wrap_jax.py last
        paths = sorted(paths, key=lambda p: ("linalg" not in p, p.endswith("test_wrap_jax.py")))
        pytest_args = ["-q", "-p", "no:cacheprovider", "--rootdir", root, "-o", "xfail_strict=false",
                       "-W", "ignore", "--tb=no", "-rN", *paths, *args.pytest_args.split()]
        if args.k:
            pytest_args += ["-k", args.k]
        cwd = os.getcwd()
        os.chdir(root)
        try:
            with contextlib.redirect_stdout(sys.stderr):
                pytest.main(pytest_args, plugins=[plugin])
        finally:
            os.chdir(cwd)
    results = {}
    for nodeid in plugin.collected or list(plugin.reports):
        if nodeid in plugin.reports:
            results[nodeid] = classify(RECORDER.events.get(nodeid, []), *plugin.outcome(nodeid))
        else:
            results[nodeid] = ("not run", "after the time budget")
    import jax
    import torch

    header = (f"PyTensor {pytensor.__version__} backend tests ({source}) through mode='ONNX'; "
              f"NumPy {np.__version__}, JAX {jax.__version__}, torch {torch.__version__}")
    if plugin.stopped_at:
        header += f"\nSTOPPED: the time budget ({args.budget:g} s) ran out at {plugin.stopped_at}; the tests after it were not run"
    text = report(results, header)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:
        traceback.print_exc()
        sys.exit(2)
