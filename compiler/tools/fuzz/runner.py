"""Run generated programs through PyTensor and the compiled ONNX models,
classify, shrink failures.

Each case is compiled twice: from the raw graph (``compile_to_onnx(inputs,
outputs=...)``) and from the default-mode ``pytensor.function``
(``compile_to_onnx(f)``). The raw-graph model is compared with PyTensor
running the graph as written (no rewrites), the other with the default-mode
function: PyTensor's rewrites change some results (``x / x`` becomes 1 at
0/0), and a model compiled from a function follows that function. Models run in onnxruntime
with its default session options (``default_session``). Outcome classes,
worst first:

- ``crash``: onnxruntime raised or the worker process died (a hard crash is
  caught by running cases in a child process), or the compiler raised
  something else than ``UnsupportedOpsError`` (a compiler bug);
- ``mismatch``: different dtype, shape, NaN/+-inf pattern, integer values,
  or floats outside the bound; or our input check refused what PyTensor ran;
- ``known``: a mismatch one of the documented differences (``KNOWN``)
  explains;
- ``pytensor-error``: PyTensor raised at run time where the model gave a
  result (e.g. its Numba backend failing to compile an op);
- ``unsupported``: ``UnsupportedOpsError``;
- ``match``: equal results, or both refused the inputs.

Float bound: the numerics contract's per-op bounds compose, so a chain of
steps is compared with ``|got - want| <= 16 eps (|want| + max|want|)``,
times the program's ``condition`` number where it solves, inverts or
factors an ill-conditioned matrix, with the epsilon of the program's
``precision`` where a float32 computation has a float64 result; ints, bools, dtypes, shapes and which
elements are NaN/+inf/-inf exactly.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnxruntime as ort

from compiler import compile_to_onnx
from compiler.lowering.errors import UnsupportedOpsError
from compiler.tools.fuzz.generate import Program, generate
from compiler.tools.fuzz.idioms import generate_idioms
from compiler.tools.fuzz.pymc_logps import generate_pymc
from compiler.tools.fuzz.pymc_models import generate_pymc_model
from compiler.tools.fuzz.random_draws import generate_random, run_random_case
from compiler.tools.fuzz.reference import (CaseResult, _inner_graphs_in_python, _plain_mode, _reference, build,
                                           compare, reference_mode)
from compiler.tools.fuzz.scan_grads import generate_scan_grad
from compiler.tools.fuzz.wrong_shapes import check_wrong_shapes
from passes import DEFAULT_PIPELINE
from passes.activations import ActivationMatching

ORDER = ["crash", "mismatch", "known", "pytensor-error", "unsupported", "match", "invalid"]
# Program generators by family: seed, max_steps -> Program.
FAMILIES: dict[str, Callable[[int, int], Program]] = {"ops": generate, "scan-grad": generate_scan_grad,
                                                     "idioms": generate_idioms, "pymc": generate_pymc,
                                                     "pymc-model": generate_pymc_model, "random": generate_random}
FAILURES = ("crash", "mismatch")


def default_session(model):
    """An ``onnxruntime.InferenceSession`` of ``model`` with onnxruntime's
    default session options (CPU provider; unlike ``CompiledModel.session``,
    no optimizer disabled): what a user's own session runs.

    Raises:
        onnxruntime's errors when it rejects the model.
    """
    return ort.InferenceSession(model.model.SerializeToString(), providers=["CPUExecutionProvider"])


def _classify_path(path: str, make_model, data, want, want_error, bound: tuple = (1.0, None)) -> tuple[str, str, object]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make_model()
    except UnsupportedOpsError as e:
        return "unsupported", (str(e).splitlines()[1].strip() if "\n" in str(e) else str(e)), None
    except Exception as e:  # a compiler bug
        return "crash", f"compile: {type(e).__name__}: {e}"[:300], None
    try:
        feed = model.check_inputs(data)
    except (TypeError, ValueError) as e:
        if want_error is not None:
            return "match", "both refused the inputs", None
        return "mismatch", f"input check refused what PyTensor ran: {e}"[:300], None
    try:
        got = default_session(model).run(model.output_names, feed)
    except Exception as e:
        return "crash", f"onnxruntime: {type(e).__name__}: {e}"[:300], None
    if want_error is not None:
        return "pytensor-error", f"PyTensor raised {type(want_error).__name__}: {str(want_error)[:150]}", got[0]
    why = compare(got[0], want, *bound)
    return ("match", "", got[0]) if why is None else ("mismatch", why, got[0])


@dataclass
class Mismatch:
    """What a ``KNOWN`` entry may inspect about a mismatch: the program, the
    path (``raw``/``compiled``) and reference backend, the graph's PyTensor
    ``inputs``/``out`` and ``data``, the model's result ``got``, the
    reference's ``want``, and ``recompile(**options)``, which compiles the
    same path again with other ``compile_to_onnx`` options."""

    program: Program
    detail: str
    path: str
    backend: str
    inputs: list
    out: object
    data: list
    got: np.ndarray
    want: np.ndarray
    recompile: Callable

    def node_inputs(self, select: Callable) -> list:
        """``[(node, [input arrays])]`` for the nodes of the graph as written
        that ``select(node)`` picks, the inputs evaluated by PyTensor's
        Python implementation on ``data`` (a node whose inputs PyTensor
        cannot evaluate is left out)."""
        import pytensor
        from pytensor.compile.mode import Mode
        from pytensor.graph.basic import Constant
        from pytensor.graph.traversal import io_toposort

        result = []
        for node in io_toposort(self.inputs, [self.out]):
            if not select(node):
                continue
            wanted = [v for v in node.inputs if not isinstance(v, Constant)]
            try:  # one function per node: a later node's inputs may be where PyTensor raises
                with warnings.catch_warnings(), _inner_graphs_in_python("python"):
                    warnings.simplefilter("ignore")
                    fn = pytensor.function(self.inputs, wanted, mode=Mode(linker="py", optimizer=None),
                                           on_unused_input="ignore")
                    values = dict(zip(wanted, fn(*[d.copy() for d in self.data])))
            except Exception:
                continue
            result.append((node, [np.asarray(v.data) if isinstance(v, Constant) else np.asarray(values[v])
                                  for v in node.inputs]))
        return result


def _scalar_op(node, *classes) -> bool:
    return isinstance(getattr(node.op, "scalar_op", None), classes)


def _unspecified_cast(m: Mismatch) -> bool:
    """A float-to-integer ``Cast`` of the graph as written receives NaN,
    +-inf or a value whose integer part is out of the target's range (to
    bool: NaN) at run time: NumPy and ONNX leave the result unspecified."""
    import pytensor.scalar as ps

    def bad(node, x):
        target = np.dtype(node.outputs[0].dtype)
        if x.dtype.kind != "f" or target.kind not in "iub":
            return False
        if target.kind == "b":
            return bool(np.isnan(x).any())
        info = np.iinfo(target)
        with np.errstate(invalid="ignore"):
            t = np.trunc(x.astype(np.float64))
            return bool((~np.isfinite(t) | (t < info.min) | (t > info.max)).any())

    return any(bad(node, ins[0]) for node, ins in m.node_inputs(lambda n: _scalar_op(n, ps.Cast)))


def _negative_integer_power(m: Mismatch) -> bool:
    """An integer ``pow`` of the graph as written has a negative exponent at
    run time (NumPy raises, C and ONNX give different values)."""
    import pytensor.scalar as ps

    return any(np.dtype(node.outputs[0].dtype).kind in "iu" and (ins[1] < 0).any()
               for node, ins in m.node_inputs(lambda n: _scalar_op(n, ps.Pow)))


def _int64_beyond_float64(m: Mismatch) -> bool:
    """A float mismatch where a node of the graph as written computes a float
    result from an int64/uint64 value beyond 2^53 (not exactly a float64:
    PyTensor and the model may round it at different steps)."""
    if "float values differ" not in m.detail:
        return False

    def select(node):
        return (any(getattr(o.type, "dtype", "").startswith("float") for o in node.outputs)
                and any(getattr(i.type, "dtype", "") in ("int64", "uint64") for i in node.inputs))

    return any(any(x.dtype in (np.int64, np.uint64) and (np.abs(x.astype(np.float64)) > 2.0**53).any() for x in ins)
               for _, ins in m.node_inputs(select))


def _fast_sigmoid(m: Mismatch) -> bool:
    """A float32/float16 float mismatch of a graph with a float32/float16
    ``sigmoid`` that the same path compiled with ``numerics="strict"`` does
    not have: the documented 2 eps absolute bound of ``numerics="fast"``'s
    ONNX Sigmoid, not the fuzzer's relative bound."""
    import pytensor.scalar as ps

    if "float values differ" not in m.detail or m.got.dtype not in (np.float32, np.float16):
        return False
    if not any(node.outputs[0].dtype in ("float32", "float16")
               for node, _ in m.node_inputs(lambda n: _scalar_op(n, ps.Sigmoid))):
        return False
    try:
        model = m.recompile(numerics="strict")
        return compare(model.run(*[d.copy() for d in m.data])[0], m.want) is None
    except Exception:
        return False


def _narrow_float_intermediate(m: Mismatch) -> bool:
    """A float mismatch of a float64 result within the fuzzer's bound at the
    precision of a float32/float16 value the graph as written computes on
    the way (``tanh`` of an int16 is float32, then cast to float64): that
    value carries its dtype's rounding (onnxruntime's float32 kernels round
    within a few ulp, docs/numerics.md), which the float64 bound does not
    allow for."""
    if "float values differ" not in m.detail or m.want.dtype != np.float64:
        return False
    narrow = [dt for dt in ("float16", "float32")
              if m.node_inputs(lambda n, dt=dt: any(getattr(o.type, "dtype", "") == dt for o in n.outputs))]
    return bool(narrow) and compare(m.got, m.want, m.program.condition, narrow[0]) is None


def _special_value_rewrite(m: Mismatch) -> bool:
    """A mismatch the same path compiled with ``relu-silu``'s
    ``exact_special_values=True`` does not have: one of the rewrites
    ``passes.activations.SPECIAL_VALUE_CHANGES`` documents changed a NaN or
    an infinity (``where(x > 0, x, 0)`` is 0 at a NaN x, the Relu it becomes
    keeps the NaN: fuzz seed 106294)."""
    exact = [ActivationMatching(exact_special_values=True) if p == "relu-silu" else p for p in DEFAULT_PIPELINE]
    try:
        fast, kept = (model.run(*[d.copy() for d in m.data])[0]
                      for model in (m.recompile(), m.recompile(passes=exact)))
    except Exception:
        return False
    return compare(fast, m.want, *m.program.bound) is not None and compare(kept, m.want, *m.program.bound) is None


def _default_mode_skips_nan(m: Mismatch) -> bool:
    """Against the default backend (``backend="default"``), on the compiled
    path: the model has NaN where the default mode's max/min/argmax skipped
    it, and equals it everywhere else."""
    import pytensor.scalar as ps

    if m.backend != "default" or m.path != "compiled" or m.got.shape != m.want.shape or m.want.dtype.kind != "f":
        return False
    extra = np.isnan(m.got) & ~np.isnan(m.want)
    if not extra.any() or compare(np.where(extra, 0, m.got), np.where(extra, 0, m.want)) is not None:
        return False
    return bool(m.node_inputs(lambda n: _scalar_op(n, ps.Maximum, ps.Minimum) or type(n.op).__name__ == "Argmax"))


# Documented differences (docs/status.md, "Known, documented differences"): a
# mismatch one of them explains is classified ``known`` with the entry's
# name. Each predicate checks the exact documented condition at run time
# (the values reaching the op), not the mere presence of an op.
KNOWN = [
    ("nan-in-max-min", "PyTensor's default mode skips a NaN in some positions of max/min; we propagate it "
                       "like NumPy and PyTensor's Python implementation", _default_mode_skips_nan),
    ("float-to-int-cast", "float-to-int casts of NaN/inf/out-of-range values are unspecified", _unspecified_cast),
    ("negative-int-power", "integer ** negative integer is unspecified (NumPy raises, C wraps)",
     _negative_integer_power),
    ("fast-float32-sigmoid", "numerics='fast' emits float32 sigmoid as ONNX Sigmoid, within 2 eps absolute "
                             "(docs/numerics.md), not the fuzzer's relative bound", _fast_sigmoid),
    ("integer-overflow-in-float", "int64 values beyond 2^53 lose precision when an op computes in float64",
     _int64_beyond_float64),
    ("special-value-rewrite", "relu-silu's rewrites in passes.activations.SPECIAL_VALUE_CHANGES change NaN/inf "
                              "results (docs/numerics.md); exact_special_values=True keeps them", _special_value_rewrite),
    ("narrow-float-intermediate", "a float64 result of a float32/float16 value computed on the way is compared "
                                  "at that value's precision", _narrow_float_intermediate),
]


def known_difference(mismatch: Mismatch) -> str | None:
    """The name of the ``KNOWN`` entry explaining ``mismatch``, or None."""
    return next((name for name, _, pred in KNOWN if pred(mismatch)), None)


def implementation_difference(path: str, backend: str, inputs, out, fn, data, got,
                              bound: tuple = (1.0, None)) -> str | None:
    """Why a mismatch is PyTensor disagreeing with itself, or None.

    The reference graph of ``path`` (``"raw"``: the graph as written;
    ``"compiled"``: the default mode's rewritten graph ``fn`` holds) is run
    again by PyTensor's other implementations: the default mode's own backend
    (Numba in 3.0, C in 2.38; for the compiled path the default-mode function
    itself; for the raw path also the default-mode function, whose rewrites
    the model follows), each op's Python ``perform`` and its C code; for the
    compiled path also the graph as written run by the Python ``perform``s
    (the result the default mode's rewrites must keep). When one of them
    gives the model's result ``got``, PyTensor's implementations of that one
    graph disagree and the model agrees with one of them. docs/status.md ("Where
    PyTensor disagrees with itself") records the cases found and the
    decision. Returns ``"implementations: <which agrees>, <which not>"``.
    """
    import pytensor
    from pytensor.compile.mode import Mode, get_default_mode

    reference = ("PyTensor's Python implementation" if path == "raw" or backend == "python"
                 else "the default backend")
    default = get_default_mode()
    candidates = []
    if path == "compiled":
        if backend == "python":
            candidates.append(("the default-mode function",
                               lambda: pytensor.function(inputs, out, mode=default, on_unused_input="ignore")))
        # what PyTensor computes for the graph as written: the rewrites must not change it (PyTensor 2.38's
        # Python Composite rounds some float64 results to float32 where its C code does not, whose own psi
        # is ~1e-12 off: a model right at every element then agrees with neither whole)
        candidates.append(("the Python implementation of the graph as written",
                           lambda: pytensor.function(inputs, out, mode=Mode(linker="py", optimizer=None),
                                                     on_unused_input="ignore")))
        graph = fn.maker.fgraph
        candidates += [(f"the {name} of the rewritten graph",
                        lambda linker=linker: pytensor.function(graph.inputs, graph.outputs[0],
                                                                mode=_plain_mode(linker, None),
                                                                on_unused_input="ignore", accept_inplace=True))
                       for linker, name in (("py", "Python implementation"), ("cvm", "C implementation"))
                       if not (linker == "py" and backend == "python")]
    else:
        # the graph as PyTensor's default mode rewrites it (switch-sink follows those rewrites on raw graphs)
        candidates.append(("the default-mode function", lambda: fn))
        candidates += [(f"the {name} of the graph as written",
                        lambda linker=linker: pytensor.function(inputs, out, mode=Mode(linker=linker, optimizer=None),
                                                                on_unused_input="ignore"))
                       for linker, name in ((default.linker, "default backend"), ("cvm", "C implementation"))]
    for name, make_fn in candidates:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = make_fn()(*[d.copy() for d in data])
        except Exception:
            continue
        if compare(got, want, *bound) is None:
            return f"implementations: {name} gives the model's result, {reference} does not"
    return None


def run_case(program: Program, backend: str = "default", wrong_shapes: bool = True) -> CaseResult:
    """Build, run and classify one program in this process.

    The raw-graph model is compared with PyTensor running the graph as
    written (no rewrites, Python implementations); the model compiled from
    the default-mode function with that function run by ``backend``
    (``reference_mode``). A mismatch where another of PyTensor's
    implementations of the same graph gives the model's result
    (``implementation_difference``) is classified ``known`` (also when
    PyTensor's reference raised and the other implementation did not);
    remaining mismatches a ``KNOWN`` entry explains are ``known``. When the
    raw path matched, inputs with one wrong dim must be refused exactly when
    PyTensor refuses them (``wrong_shapes.check_wrong_shapes``, path
    ``wrong-shape``), unless ``wrong_shapes`` is False.
    """
    from pytensor.compile.mode import Mode

    if program.draws:  # a random sample: compared in distribution (random_draws.py)
        return run_random_case(program, backend)
    try:
        inputs, out = build(program)
    except Exception as e:
        return CaseResult("invalid", "", f"build: {type(e).__name__}: {e}"[:200], program)
    data = [d for *_, d in program.inputs]
    mode = reference_mode(backend)
    _mark(REFERENCE)
    with warnings.catch_warnings(), _inner_graphs_in_python(backend):
        warnings.simplefilter("ignore")
        raw_fn, raw_want, raw_error = _reference(inputs, out, data, Mode(linker="py", optimizer=None))
        fn, want, want_error = _reference(inputs, out, data, mode)
    _mark(MODELS)
    if fn is None:
        return CaseResult("invalid", "", f"pytensor.function: {want_error}"[:200], program)
    results, models = [], {}

    def make_raw():
        models["raw"] = compile_to_onnx(inputs, outputs=[out])
        return models["raw"]

    for path, make, ref, ref_error in (
            ("raw", make_raw, raw_want, raw_error),
            ("compiled", lambda: compile_to_onnx(fn), want, want_error)):
        kind, detail, got = _classify_path(path, make, data, ref, ref_error, program.bound)
        explanation = ""
        if kind in ("mismatch", "pytensor-error") and got is not None:
            why = implementation_difference(path, backend, inputs, out, fn, data, got, program.bound)
            if why:
                explanation = ("reference raised; " if kind == "pytensor-error" else "") + why.split(" gives")[0]
                kind, detail = "known", f"{why}: {detail}"
        if kind == "mismatch" and got is not None:
            name = known_difference(Mismatch(program, detail, path, backend, inputs, out, data, np.asarray(got),
                                             np.asarray(ref), recompile=_recompiler(path, inputs, out, fn)))
            if name:
                kind, detail, explanation = "known", f"{name}: {detail}", name
        results.append(CaseResult(kind, path, detail, program, explanation))
    if wrong_shapes and results[0].kind == "match" and raw_fn is not None and raw_error is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wrong = check_wrong_shapes(program, raw_fn, models["raw"])
        if wrong is not None:
            results.append(CaseResult(wrong[0], "wrong-shape", wrong[1], program, wrong[2]))
    return min(results, key=lambda r: ORDER.index(r.kind))


def _recompiler(path: str, inputs, out, fn) -> Callable:
    def recompile(**options):
        return compile_to_onnx(inputs, outputs=[out], **options) if path == "raw" else compile_to_onnx(fn, **options)

    return recompile


def shrink(program: Program, still_fails: Callable[[Program], bool], budget_s: float = 60.0) -> Program:
    """Delta-debug ``program`` to a smaller one for which ``still_fails``
    holds: shortest failing prefix, then single-line deletions to a fixpoint,
    then unused inputs dropped, then data elements zeroed in halves."""
    deadline = time.monotonic() + budget_s

    def try_(candidate: Program) -> bool:
        return time.monotonic() < deadline and still_fails(candidate)

    def with_lines(lines):
        return dataclasses.replace(program, inputs=list(program.inputs), lines=list(lines))

    for k in range(1, len(program.lines)):
        if try_(with_lines(program.lines[:k])):
            program = with_lines(program.lines[:k])
            break
    changed = True
    while changed:
        changed = False
        for i in range(len(program.lines) - 1, -1, -1):
            cand = with_lines(program.lines[:i] + program.lines[i + 1:])
            if cand.lines and try_(cand):
                program, changed = cand, True
    text = "\n".join(program.lines)
    used = [inp for inp in program.inputs if inp[0] in text or inp[0] == program.inputs[0][0] and not program.lines]
    if used != program.inputs and used:
        cand = dataclasses.replace(program, inputs=used, lines=list(program.lines))
        if try_(cand):
            program = cand
    for j, (name, dtype, static, data) in enumerate(program.inputs):
        flat = data.ravel().copy()
        chunk = max(len(flat) // 2, 1)
        while chunk >= 1 and len(flat):
            for start in range(0, len(flat), chunk):
                trial = flat.copy()
                trial[start:start + chunk] = 0
                if (trial == flat).all():
                    continue
                inputs = list(program.inputs)
                inputs[j] = (name, dtype, static, trial.reshape(data.shape))
                cand = dataclasses.replace(program, inputs=inputs, lines=list(program.lines))
                if try_(cand):
                    program, flat = cand, trial
            chunk //= 2
    return program


def _shrunk(r: CaseResult, backend: str, budget_s: float, wrong_shapes: bool = True) -> CaseResult:
    """``r``'s program shrunk (``shrink``) while it stays in ``r``'s class, rerun."""
    small = shrink(r.program, lambda p: run_case(p, backend, wrong_shapes).kind == r.kind, budget_s)
    return run_case(small, backend, wrong_shapes)


# What the isolated child is doing (``_Isolated.stage``), so that a case that
# hangs in PyTensor's reference (2.38's Python ``Composite`` computes an int
# ``x ** x`` with Python integers: 2147483647 ** 2147483647 never ends, seed
# 102265) is not reported as a crash of the model.
REFERENCE, MODELS = 1, 2
_stage = None


def _mark(stage: int) -> None:
    if _stage is not None:
        _stage.value = stage


def _worker(conn, backend: str, stage, family: str, wrong_shapes: bool) -> None:
    global _stage
    _stage = stage
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request[0] == "run":
            _, seed, max_steps = request
            r = run_case(FAMILIES[family](seed, max_steps), backend, wrong_shapes)
        else:
            _, r, budget_s = request
            r = _shrunk(r, backend, budget_s, wrong_shapes)
        conn.send((r.kind, r.path, r.detail, r.explanation, r.program))


class _Isolated:
    """Cases run in a forked child; a child that dies or hangs is a crash,
    unless it hung in PyTensor's reference (``pytensor-error``).

    A case's reference gets ``reference_timeout_s`` of its ``timeout_s``
    (default: 60 s with the Python-linker reference, which compiles nothing
    and takes ~0.2 s a graph; all of ``timeout_s`` with the default backend,
    which compiles C or Numba), so that a reference that never ends costs
    a minute, not the model's whole budget."""

    def __init__(self, timeout_s: float, backend: str, family: str = "ops", wrong_shapes: bool = True,
                 reference_timeout_s: float | None = None):
        self.timeout_s = timeout_s
        if reference_timeout_s is None:
            reference_timeout_s = min(60.0, timeout_s) if backend == "python" else timeout_s
        self.reference_timeout_s = reference_timeout_s
        self.backend = backend
        self.family = family
        self.wrong_shapes = wrong_shapes
        self.proc = None
        self.hung_in = 0

    def start(self):
        ctx = multiprocessing.get_context("fork")
        self.conn, child = ctx.Pipe()
        self.stage = ctx.Value("i", 0, lock=False)
        self.proc = ctx.Process(target=_worker, args=(child, self.backend, self.stage, self.family, self.wrong_shapes),
                                daemon=True)
        self.proc.start()

    def run(self, seed: int, max_steps: int) -> CaseResult:
        """Run and classify the program of ``seed`` in the child."""
        r = self._ask(("run", seed, max_steps), self.timeout_s, self.reference_timeout_s)
        if isinstance(r, CaseResult):
            return r
        if r.startswith("no result") and self.hung_in == REFERENCE:
            return CaseResult("pytensor-error", "", f"PyTensor's reference did not finish ({r})",
                              FAMILIES[self.family](seed, max_steps))
        return CaseResult("crash", "", r, FAMILIES[self.family](seed, max_steps))

    def shrink(self, r: CaseResult, budget_s: float) -> CaseResult:
        """``r`` shrunk in the child (``_shrunk``); ``r`` itself, with a note,
        if the child dies or overruns the budget (plus ``timeout_s`` for the
        last case) while shrinking."""
        small = self._ask(("shrink", r, budget_s), budget_s + self.timeout_s)
        return small if isinstance(small, CaseResult) else CaseResult(
            r.kind, r.path, f"{r.detail} (not shrunk: {small})", r.program, r.explanation)

    def _ask(self, request, timeout_s: float, reference_timeout_s: float | None = None) -> CaseResult | str:
        if self.proc is None or not self.proc.is_alive():
            self.start()
        self.stage.value = 0
        self.conn.send(request)
        start = time.monotonic()
        while True:
            elapsed = time.monotonic() - start
            budget = timeout_s
            if reference_timeout_s is not None and self.stage.value == REFERENCE:
                budget = min(timeout_s, reference_timeout_s)
            if self.conn.poll(min(1.0, max(budget - elapsed, 0.0))):
                try:
                    kind, path, detail, explanation, program = self.conn.recv()
                    return CaseResult(kind, path, detail, program, explanation)
                except EOFError:
                    pass
                why = f"worker process died (exit code {self.proc.exitcode})"
                break
            if time.monotonic() - start >= budget:
                why = f"no result within {budget:.0f} s"
                break
        self.hung_in = self.stage.value
        self.stop()
        return why

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
            self.proc = None


@dataclass
class FuzzReport:
    """Counts per class, per explanation of the ``known`` ones, the
    (shrunk) failures and the ``pytensor-error`` cases of a fuzz run."""

    counts: Counter
    failures: list[CaseResult]
    seconds: float
    explained: Counter = field(default_factory=Counter)
    explained_seeds: dict = field(default_factory=dict)
    pytensor_errors: list[CaseResult] = field(default_factory=list)

    def summary(self) -> str:
        """Counts per class and per explanation, then each failure's repro."""
        lines = [f"{sum(self.counts.values())} graphs in {self.seconds:.1f} s: "
                 + ", ".join(f"{k} {self.counts[k]}" for k in ORDER if self.counts[k])
                 + "".join(f"\n  known, {k}: {n} (seeds {' '.join(map(str, self.explained_seeds.get(k, [])))})"
                           for k, n in sorted(self.explained.items()))
                 + "".join(f"\n  pytensor-error seed={r.program.seed} path={r.path}: {r.detail[:160]}"
                           for r in self.pytensor_errors)]
        lines += [f.report() for f in self.failures]
        return "\n\n".join(lines)


def fuzz(seed: int, n: int, *, max_steps: int = 6, isolate: bool = False, shrink_failures: bool = True,
         timeout_s: float = 300.0, backend: str = "default", shrink_budget_s: float = 60.0,
         log: Callable[[str], None] | None = None, family: str = "ops", wrong_shapes: bool = True) -> FuzzReport:
    """Run the programs of seeds ``seed .. seed+n-1``.

    Args:
        family: the program generator (``FAMILIES``): ``"ops"`` (random op
            chains, ``generate``), ``"scan-grad"`` (a random scan and its
            nested gradients, ``generate_scan_grad``) or ``"idioms"``
            (convolution, pooling, linear algebra, sorting and special
            functions as users write them, ``generate_idioms``).
        isolate: run each case in a child process so that a hard crash of
            onnxruntime (or a hang past ``timeout_s``) is classified as
            ``crash`` instead of ending the run.
        backend: how the default-mode reference runs (``reference_mode``).
        wrong_shapes: also feed each matched case inputs with one wrong dim
            (``run_case``).
        shrink_failures: shrink each crash/mismatch with ``shrink`` (for
            ``shrink_budget_s``; with ``isolate``, in the child process, so
            a candidate that hangs or crashes onnxruntime cannot stop the
            run) before reporting it.

    Returns:
        A ``FuzzReport``.
    """
    start = time.perf_counter()
    counts: Counter = Counter()
    explained: Counter = Counter()
    explained_seeds: dict = {}
    failures, pytensor_errors = [], []
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {sorted(FAMILIES)}, got {family!r}")
    runner = _Isolated(timeout_s, backend, family, wrong_shapes) if isolate else None
    try:
        for s in range(seed, seed + n):
            r = runner.run(s, max_steps) if runner else run_case(FAMILIES[family](s, max_steps), backend, wrong_shapes)
            counts[r.kind] += 1
            if r.kind == "known":
                explained[r.explanation] += 1
                explained_seeds.setdefault(r.explanation, []).append(s)
            elif r.kind == "pytensor-error":
                pytensor_errors.append(r)
            if r.kind in FAILURES:
                if shrink_failures and "worker process died" not in r.detail:
                    r = runner.shrink(r, shrink_budget_s) if runner else _shrunk(r, backend, shrink_budget_s, wrong_shapes)
                failures.append(r)
                if log:
                    log(r.report())
    finally:
        if runner:
            runner.stop()
    return FuzzReport(counts, failures, time.perf_counter() - start, explained, explained_seeds,
                      pytensor_errors)
