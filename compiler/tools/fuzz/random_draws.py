"""Seeded random programs of random variables: the fuzzer's ``random``
family (``generate_random``; ``fuzz(..., family="random")``), and how such a
program is judged (``run_random_case``).

A program draws from one or two of the distributions ``compile_to_onnx``
lowers with a closed-form transform (``compiler/lowering/rules/random_transforms.py``), its
parameters graph inputs
(scalars, or one value per column broadcast against ``size``), from one
shared NumPy generator (a second draw chained on the first draw's
next-generator output, as PyTensor's own chains are written), then 0-2
elementwise steps on the draws (a sum of two draws, a scaling, a
non-linear map).

A draw cannot be compared value for value: PyTensor's generator and the
model's noise differ. The output is a sample of ``ROWS`` rows (the ``size``
axis), and each column of the model's sample is compared with the same
column of PyTensor's by a two-sample Kolmogorov-Smirnov test
(``scipy.stats.ks_2samp``); dtypes and shapes exactly. Both fuzzer paths
(the raw graph and the default-mode function) run under the three ``random``
policies: ``"inputs"``, the noise fed from NumPy's generator,
``"onnx"``, drawn by onnxruntime, and ``"key"``, the generators fed keys
(SplitMix64 noise in the model). A program fails when any test rejects at
``ALPHA / tests``, or when its parameters with one wrong dim are not
refused exactly when PyTensor refuses them (``wrong_shapes.py``, on the raw
graph's ``random="onnx"`` model): with the Bonferroni correction the chance that a correct
program fails is at most ``ALPHA`` (1e-5: under 0.5% over a 300-program
run); programs are seeded, so a run is repeatable. KS tests of discrete
samples are conservative (their false-alarm rate is lower still).
"""

from __future__ import annotations

import ast
import re
import warnings

import numpy as np
from pytensor.tensor.random.type import RandomType

from compiler import compile_to_onnx
from compiler.lowering.errors import UnsupportedOpsError
from compiler.lowering.rules.random_key import random_key
from compiler.tools.fuzz.generate import POSITIVE, REAL, UNIT, Program, domain_values
from compiler.tools.fuzz.reference import CaseResult, _inner_graphs_in_python, _reference, build, reference_mode
from compiler.tools.fuzz.wrong_shapes import check_wrong_shapes

# The sample size per column: at ALPHA / 12 the KS test rejects a CDF difference of ~0.02 (a location
# shifted by 0.05 sd, a scale 10% off); drawing and sorting 40,000 values costs ~1 ms, the compiles ~10 ms.
ROWS = 40_000
ALPHA = 1e-5  # per program, over all its tests
POLICIES = ("inputs", "onnx", "key")
LOW, ABOVE_LOW, SIMPLEX = "low", "above_low", "simplex"
# distribution -> its parameters (PyTensor's keyword names) with their domains; the draw's dtype kind
DISTRIBUTIONS = {
    "normal": ({"loc": REAL, "scale": POSITIVE}, "f"),
    "lognormal": ({"mean": REAL, "sigma": POSITIVE}, "f"),
    "uniform": ({"low": REAL, "high": ABOVE_LOW}, "f"),
    "exponential": ({"scale": POSITIVE}, "f"),
    "logistic": ({"loc": REAL, "scale": POSITIVE}, "f"),
    "gumbel": ({"loc": REAL, "scale": POSITIVE}, "f"),
    "laplace": ({"loc": REAL, "scale": POSITIVE}, "f"),
    "cauchy": ({"loc": REAL, "scale": POSITIVE}, "f"),
    "bernoulli": ({"p": UNIT}, "i"),
    "integers": ({"low": LOW, "high": ABOVE_LOW}, "i"),
    "categorical": ({"p": SIMPLEX}, "i"),
    # closed-form quantiles added with random_transforms.py (the special-function quantiles, ~0.1-0.5 ms a
    # draw, would make a 40,000-row program take seconds: tests/lowering/test_random_transforms.py has them)
    "halfnormal": ({"loc": REAL, "scale": POSITIVE}, "f"),
    "halfcauchy": ({"loc": REAL, "scale": POSITIVE}, "f"),
    "pareto": ({"b": POSITIVE, "scale": POSITIVE}, "f"),
    "weibull": ({"shape": POSITIVE}, "f"),
    "truncexpon": ({"b": POSITIVE, "loc": REAL, "scale": POSITIVE}, "f"),
    "wald": ({"mean": POSITIVE, "scale": POSITIVE}, "f"),
    "geometric": ({"p": UNIT}, "i"),
}
FOLLOW = ["{v} * 2", "pt.exp(-pt.abs({v}))", "pt.sqr({v})", "pt.tanh({v})", "{v} - {p}"]


def generate_random(seed: int, max_steps: int = 3) -> Program:
    """A random-variable program from ``seed`` (deterministic): one or two
    draws of ``ROWS`` rows (``ROWS // 8`` with a categorical draw) and 1-3
    columns, then at most ``max_steps - 1`` elementwise steps."""
    rng = np.random.default_rng([seed, 13])
    prog = Program(seed=seed, draws=True)
    columns = int(rng.integers(1, 4))
    first_name = sorted(DISTRIBUTIONS)[seed % len(DISTRIBUTIONS)]
    second_name = str(rng.choice(sorted(DISTRIBUTIONS))) if rng.random() < 0.4 else None
    # PyTensor's categorical draws row by row (np.vectorize): 1 s per 10,000 rows
    rows = ROWS // 8 if "categorical" in (first_name, second_name) else ROWS
    size = (rows, columns) if columns > 1 or rng.random() < 0.5 else (rows,)
    dtype = str(rng.choice(["float32", "float64"]))
    prog.lines.append(f"g = pytensor.shared(np.random.default_rng({seed}), name='g')")
    first = _draw(rng, prog, first_name, size, dtype, "g")
    last = first
    if second_name is not None:
        second = _draw(rng, prog, second_name, size, dtype, f"{first}.owner.outputs[0]")
        last = _line(prog, f"{first} + {second}")
    for _ in range(int(rng.integers(0, max(max_steps, 1)))):
        param = next((n for n, dt, _, d in prog.inputs  # a scalar or per-column parameter (not categorical's p)
                      if dt.startswith("float") and d.shape in ((), size[1:])), None)
        step = str(rng.choice(FOLLOW if param else FOLLOW[:-1]))
        last = _line(prog, step.format(v=last, p=param))
    return prog


def _line(prog: Program, expr: str) -> str:
    name = f"v{len(prog.lines)}"
    prog.lines.append(f"{name} = {expr}")
    return name


def _draw(rng: np.random.Generator, prog: Program, name: str, size: tuple, dtype: str, generator: str) -> str:
    """Add a ``pt.random.<name>`` draw of ``size`` (``(ROWS,)`` or ``(ROWS,
    columns)``) whose parameters are new inputs, scalars or one value per
    column; returns its variable. A categorical draw's probability vector is
    its core dim, so its ``size`` is the batch of rows alone and its draw
    broadcasts against the others' columns when added."""
    params, kind = DISTRIBUTIONS[name]
    shape = size[1:] if len(size) > 1 and rng.random() < 0.7 else ()
    args, low = [], None
    for param, domain in params.items():
        data = _parameter(rng, domain, shape, dtype, low)
        low = data if domain == LOW or param == "low" else low
        static = tuple(d if rng.random() < 0.5 else None for d in data.shape)
        if name == "categorical":  # the category count is the core dim: keep it static
            static = data.shape
        x = f"x{len(prog.inputs)}"
        prog.inputs.append((x, str(data.dtype), static, data))
        args.append(f"{param}={x}")
    if name == "categorical":
        size = size[:1] + (1,) * (len(size) - 1)
    dtype_arg = f", dtype={dtype!r}" if kind == "f" else ""
    return _line(prog, f"pt.random.{name}({', '.join(args)}, size={size}, rng={generator}{dtype_arg})")


def _parameter(rng, domain: str, shape: tuple, dtype: str, low) -> np.ndarray:
    """A parameter value in ``domain``: reals in [-3, 3], positives in
    [0.2, 5] (log-uniform), probabilities in [0.05, 0.95], integer bounds in
    [-5, 5] with ``high`` 1-8 above ``low``, a probability vector (the
    categorical's: 2-5 categories, one possibly 0)."""
    if domain == SIMPLEX:
        k = int(rng.integers(2, 6))
        p = rng.uniform(0.05, 1.0, k)
        if rng.random() < 0.3:
            p[int(rng.integers(k))] = 0.0
        return p / p.sum()
    if domain == LOW:
        return rng.integers(-5, 6, shape).astype("int64")
    if domain == ABOVE_LOW:
        if np.asarray(low).dtype.kind == "i":
            return (low + rng.integers(1, 9, shape)).astype("int64")
        return np.asarray(low + np.exp(rng.uniform(np.log(0.2), np.log(5), shape)), dtype)
    return domain_values(rng, domain, shape, dtype, positive_high=5)


def noise_feed(model, seed: int) -> dict:
    """Standard noise for each of ``model.random_inputs`` (``"normal"`` or
    U[0, 1) ``"uniform"``, of its dtype and shape) from NumPy's generator
    seeded with ``seed``, and a key (``random_key``) for each generator input
    of a ``random="key"`` model.

    Raises:
        ValueError: a noise input whose shape is not static.
    """
    gen = np.random.default_rng([seed, 17])
    feed = {name: random_key([seed, 17, i]) for i, (name, var) in enumerate(zip(model.input_names,
                                                                              model.input_variables))
            if isinstance(var.type, RandomType)}  # random="key": the generators' keys
    for spec in model.random_inputs:
        if not all(isinstance(d, int) for d in spec.shape):
            raise ValueError(f"noise input {spec.name} has a symbolic shape {spec.shape}")
        draw = gen.standard_normal(spec.shape) if spec.noise == "normal" else gen.random(spec.shape)
        feed[spec.name] = draw.astype(spec.dtype)
    return feed


def compare_samples(got: np.ndarray, want: np.ndarray, tests: int) -> str | None:
    """None if the sample ``got`` (rows along axis 0) may come from the
    distribution of ``want``'s, else why: dtype and shape exactly, then a
    two-sample KS test per column (NaN ranked above +inf) rejecting at
    ``ALPHA / tests``."""
    from scipy import stats

    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    g, w = (np.asarray(a, np.float64).reshape(len(a), -1) for a in (got, want))
    eps = np.finfo(want.dtype).eps if want.dtype.kind == "f" else 0.0
    for j in range(g.shape[1]):
        a, b = (np.where(np.isnan(v), np.inf, v) for v in (g[:, j], w[:, j]))
        a, b = _merge_close(a, b, eps)
        p = stats.ks_2samp(a, b, method="asymp").pvalue
        if p < ALPHA / tests:
            return (f"column {j}: two-sample KS p = {p:.3g} < {ALPHA / tests:.3g} "
                    f"(model median {np.median(a):.4g}, PyTensor's {np.median(b):.4g})")
    return None


def _merge_close(a: np.ndarray, b: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` with values closer than the fuzzer's float bound
    (``16 eps (|x| + max|x|)``, ``reference.compare``'s) merged into one: the
    sorted distinct values of both are grouped where neighbours are that
    close, and each value becomes its group's smallest. An atom of a
    discrete or saturated sample (``tanh(bernoulli)``, ``tanh`` of a large
    value) computed a few ulp apart by onnxruntime and NumPy must not count
    as other values: the KS statistic would jump by the atom's whole mass."""
    both = np.concatenate([a, b])
    finite = np.isfinite(both)
    if not eps or not finite.any():
        return a, b
    values, index = np.unique(both[finite], return_inverse=True)
    scale = np.max(np.abs(values))
    starts = np.concatenate([[True], np.diff(values) > 16 * eps * (np.abs(values[1:]) + scale)])
    first = values[starts][np.cumsum(starts) - 1]  # each value's group's smallest
    both[finite] = first[index]
    return both[:len(a)], both[len(a):]


def run_random_case(program: Program, backend: str = "python"):
    """Build and judge one ``random`` program (the module doc): returns a
    ``reference.CaseResult`` (``match``, ``mismatch``, ``crash``,
    ``unsupported`` or ``invalid``)."""
    from pytensor.compile.mode import Mode

    try:
        inputs, out = build(program)
    except Exception as e:
        return CaseResult("invalid", "", f"build: {type(e).__name__}: {e}"[:200], program)
    data = [d for *_, d in program.inputs]
    with warnings.catch_warnings(), _inner_graphs_in_python(backend):
        warnings.simplefilter("ignore")
        raw_fn, raw_want, raw_error = _reference(inputs, out, data, Mode(linker="py", optimizer=None))
        fn, want, error = _reference(inputs, out, data, reference_mode(backend))
    if fn is None or raw_error is not None or error is not None:
        return CaseResult("invalid", "", f"PyTensor: {raw_error or error}"[:200], program)
    paths = {"raw": (lambda policy: compile_to_onnx(inputs, outputs=[out], random=policy), raw_want),
             "compiled": (lambda policy: compile_to_onnx(fn, random=policy), want)}
    tests = len(paths) * len(POLICIES) * int(np.prod(np.shape(want)[1:], dtype=np.int64))
    raw_onnx_model = None  # the wrong-shape variants run on it (no noise inputs to size)
    for path, (make, reference) in paths.items():
        for policy in POLICIES:
            where = f"{path}, random={policy!r}"
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = make(policy)
            except UnsupportedOpsError as e:
                return CaseResult("unsupported", path, f"{where}: {str(e)[:200]}", program)
            except Exception as e:
                return CaseResult("crash", path, f"{where}: compile: {type(e).__name__}: {e}"[:300], program)
            try:
                feed = noise_feed(model, program.seed) if policy != "onnx" else {}
                got = model.run(*data, **feed)[0]
            except Exception as e:
                return CaseResult("crash", path, f"{where}: run: {type(e).__name__}: {e}"[:300], program)
            why = compare_samples(got, np.asarray(reference), tests)
            if why is not None:
                return CaseResult("mismatch", path, f"{where}: {why}", program)
            if (path, policy) == ("raw", "onnx"):
                raw_onnx_model = model
    with warnings.catch_warnings():  # inputs with one wrong dim: refused exactly when PyTensor refuses them
        warnings.simplefilter("ignore")
        wrong = check_wrong_shapes(program, raw_fn, raw_onnx_model, explain=lambda wrong_data, changed, verdict:
                                   _parameter_difference(program, wrong_data, changed, raw_fn, verdict))
    if wrong is not None:
        return CaseResult(wrong[0], "wrong-shape", wrong[1], program, wrong[2])
    return CaseResult("match", "", "", program)


# NumPy's checks of parameter values (``Generator`` methods, PyTensor's ``perform``):
# the model does not check parameter values (compiler/lowering/rules/random.py).
PARAMETER_VALUE_ERRORS = ("< 0", "> 1", "high - low", "low >= high", "contains NaN")
PARAMETER_VALUES, UNCHECKED_SIZE = "random-parameter-values", "numpy-integers-size-unchecked"


def _parameter_difference(program: Program, data: list, changed: tuple[str, int], reference_fn,
                          verdict: tuple) -> tuple:
    """``verdict`` (a wrong-shape mismatch) reclassified ``known`` when one of
    the random family's documented differences explains it, checked on the
    wrong-shape data itself:

    - PyTensor raised for the parameters' *values* (a wrong-shape variant
      repeats or cuts values, so a column can get ``high < low``): NumPy's
      message is a value check (``PARAMETER_VALUE_ERRORS``), and the model
      checks no parameter values;
    - NumPy's ``Generator.integers`` drew a sample of ``size`` from bounds
      that do not broadcast to ``size`` (it does not check them; every other
      distribution raises), which the model refuses: the changed input is an
      ``integers`` bound and its shape does not broadcast to the draw's
      ``size``.
    """
    try:
        reference_fn(*[d.copy() for d in data])
        error = None
    except Exception as e:  # noqa: BLE001 - whatever NumPy raises
        error = e
    if error is not None and any(m in str(error) for m in PARAMETER_VALUE_ERRORS):
        return "known", f"{PARAMETER_VALUES}: {verdict[1]}"[:300], PARAMETER_VALUES
    name = changed[0]
    shape = dict(zip([n for n, *_ in program.inputs], [d.shape for d in data]))[name]
    for line in program.lines:
        found = re.search(r"pt\.random\.integers\(low=(\w+), high=(\w+), size=(\([^)]*\))", line)
        if error is None and found and name in found.group(1, 2):
            size = ast.literal_eval(found.group(3))
            try:
                fits = np.broadcast_shapes(size, shape) == tuple(size)
            except ValueError:
                fits = False
            if not fits:
                return "known", f"{UNCHECKED_SIZE}: {verdict[1]}"[:300], UNCHECKED_SIZE
    return verdict
