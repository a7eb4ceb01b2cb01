"""The differential fuzzer: its pieces, a quick run of 200 graphs in the
main suite and the 5,000-graph run in the slow job (``pytest -m slow``), both
against the default mode's rewritten graph run by PyTensor's Python linker
(docs/compile-options.md, "pytensor-onnx fuzz")."""

import re

import numpy as np
import pytest

from compiler.tools.fuzz import FAMILIES, build, compare, fuzz, generate, generate_scan_grad, reference_mode, run_case, shrink
from compiler import compile_to_onnx
from compiler.lowering.compat import IS_PYTENSOR_3
from compiler.tools.fuzz.generate import Program
from compiler.tools.fuzz.runner import KNOWN, Mismatch, known_difference
from compiler.tools.fuzz.idioms import IDIOMS, generate_idioms
from compiler.tools.fuzz.wrong_shapes import REFUSED_BY_ORT, check_wrong_shapes, wrong_shape_variants


def test_generation_is_deterministic_per_seed():
    assert generate(7).source() == generate(7).source()
    assert generate(7).source() != generate(8).source()
    a, b = generate(7), generate(7)
    for (_, _, _, da), (_, _, _, db) in zip(a.inputs, b.inputs):
        np.testing.assert_array_equal(da, db)


def test_compare_is_exact_on_special_values_and_ints():
    f = np.array([np.nan, np.inf, 1.0])
    assert compare(f, f) is None
    assert "NaN pattern" in compare(np.array([0.0, np.inf, 1.0]), f)
    assert "+inf pattern" in compare(np.array([np.nan, 1.0, 1.0]), f)
    assert "dtype" in compare(f.astype(np.float32), f)
    assert compare(np.array([1, 2]), np.array([1, 3])).startswith("values differ")
    assert compare(np.array([1.0 + 1e-15]), np.array([1.0])) is None
    assert "float values differ" in compare(np.array([1.0 + 1e-9]), np.array([1.0]))


def test_a_failure_is_shrunk_to_the_lines_that_matter():
    prog = Program([("x0", "float64", (3,), np.array([1.0, 2.0, 3.0]))],
                   ["v0 = pt.exp(x0)", "v1 = x0 * 2", "v2 = pt.log(v1)", "v3 = v2 + v0"], seed=0)
    def still_fails(p):
        try:
            build(p)
        except Exception:
            return False
        return any("pt.log" in line for line in p.lines)

    small = shrink(prog, still_fails)
    assert small.lines == ["v1 = x0 * 2", "v2 = pt.log(v1)"]
    assert not small.inputs[0][3].any()  # the data was zeroed as far as the predicate allows


def test_run_case_matches_on_a_plain_program():
    prog = Program([("x0", "float32", (None,), np.array([1.5, -0.0, np.nan], np.float32))],
                   ["v0 = pt.round(x0, mode='half_to_even') * 2"], seed=0)
    assert run_case(prog).kind == "match"


def test_the_python_reference_runs_the_default_modes_rewritten_graph():
    """``reference_mode("python")`` applies exactly the default mode's
    rewrites (the graph ``compile_to_onnx(f)`` sees) and runs them with the
    Python linker."""
    import pytensor
    from pytensor.link.basic import PerformLinker

    inputs, out = build(generate(1003))
    graphs = []
    for backend in ("default", "python"):  # building the function JIT-compiles nothing
        fn = pytensor.function(inputs, out, mode=reference_mode(backend))
        text = pytensor.dprint(fn, file="str", print_type=True, print_destroy_map=True)
        graphs.append(re.sub(r"'t\d+'", "'t'", text))  # Composite inner names are numbered per process
    assert graphs[0] == graphs[1]
    assert isinstance(reference_mode("python").linker, PerformLinker)
    with pytest.raises(ValueError, match="backend must be one of"):
        reference_mode("numba")


def _mismatch(lines, x, got, want, detail="float values differ: ...", path="raw", backend="python"):
    prog = Program([("x0", str(x.dtype), x.shape, x)], lines, seed=0)
    inputs, out = build(prog)
    return Mismatch(prog, detail, path, backend, inputs, out, [x], np.asarray(got), np.asarray(want),
                    recompile=lambda **options: compile_to_onnx(inputs, outputs=[out], **options))


def test_each_known_difference_needs_its_documented_condition_at_run_time():
    """The ``KNOWN`` entries check the values reaching the op, not the op's
    presence: the same graph on values inside the specified range is not
    explained, so a real bug there cannot hide behind the entry."""
    f = np.array([np.nan, 1.5, 3e10])
    cast = ["v0 = pt.cast(x0, 'int32')"]
    assert known_difference(_mismatch(cast, f, [0, 1, 0], [1, 1, 1], "values differ")) == "float-to-int-cast"
    assert known_difference(_mismatch(cast, np.array([1.5, -2.5]), [0, 0], [1, -2], "values differ")) is None
    power = ["v0 = x0 ** x0"]
    assert known_difference(_mismatch(power, np.array([-1, 2]), [0, 4], [-1, 4], "values differ")) \
        == "negative-int-power"
    assert known_difference(_mismatch(power, np.array([0, 2]), [0, 4], [1, 4], "values differ")) is None
    big = ["v0 = x0 * 0.5"]
    assert known_difference(_mismatch(big, np.array([2**60 + 1]), [1.0], [2.0])) == "integer-overflow-in-float"
    assert known_difference(_mismatch(big, np.array([2**52]), [1.0], [2.0])) is None
    sig = ["v0 = pt.sigmoid(x0)"]
    x = np.array([-13.0], np.float32)
    want = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    fast = _mismatch(sig, x, want, want).recompile().run(x)[0]  # numerics="fast": ONNX Sigmoid
    assert compare(fast, want) is not None  # 2 eps absolute, not relative, at sigmoid(-13)
    assert known_difference(_mismatch(sig, x, fast, want)) == "fast-float32-sigmoid"
    assert known_difference(_mismatch(sig, x, fast, want * 1.01)) is None  # strict does not give it either
    assert known_difference(_mismatch(["v0 = pt.exp(x0)"], x, fast, want)) is None
    mx = ["v0 = pt.max(x0, axis=0)"]
    m = np.array([[np.nan, 1.0], [2.0, 3.0]])
    nan_args = (mx, m, [np.nan, 3.0], [2.0, 3.0], "NaN pattern differs")
    assert known_difference(_mismatch(*nan_args, path="compiled", backend="default")) == "nan-in-max-min"
    assert known_difference(_mismatch(*nan_args, path="compiled", backend="python")) is None
    narrow = ["v0 = pt.cast(pt.tanh(x0), 'float64')"]  # tanh of int16 is float32 (fuzz seed 106674)
    i16 = np.array([5], np.int16)
    want = np.tanh(np.float32(5)).astype(np.float64)
    one_ulp = np.nextafter(np.float32(want), np.float32(0)).astype(np.float64)
    assert known_difference(_mismatch(narrow, i16, [one_ulp], [want])) == "narrow-float-intermediate"
    assert known_difference(_mismatch(narrow, i16, [want * (1 - 1e-5)], [want])) is None  # beyond float32's bound
    wide = ["v0 = pt.tanh(pt.cast(x0, 'float64'))"]
    assert known_difference(_mismatch(wide, i16, [one_ulp], [want])) is None  # nothing float32 on the way
    relu = ["v0 = pt.switch(x0 > 0, x0, 0)"]  # relu-where: NaN -> 0 in the graph, NaN in onnxruntime's Relu (seed 106294)
    nan = np.array([np.nan, 2.0])
    fast = _mismatch(relu, nan, [0.0, 2.0], [0.0, 2.0]).recompile().run(nan)[0]
    assert np.isnan(fast[0])
    assert known_difference(_mismatch(relu, nan, fast, [0.0, 2.0], "NaN pattern differs")) == "special-value-rewrite"
    assert known_difference(_mismatch(relu, nan, fast, [1.0, 2.0], "NaN pattern differs")) is None
    assert {name for name, *_ in KNOWN} == {"nan-in-max-min", "float-to-int-cast", "negative-int-power",
                                            "fast-float32-sigmoid", "integer-overflow-in-float",
                                            "special-value-rewrite", "narrow-float-intermediate"}


# Real bugs found and not fixed yet (listed in docs/status.md "Not done yet"); any
# other failure fails the test.
OPEN_FINDINGS: dict[int, str] = {}  # none today (102710, 102908, 103566 fixed: specify_shape sizes)


# The quick run: the default mode's rewritten graph run by the Python linker
# (``reference_mode("python")``; the default backend, Numba or C, compiles
# each graph for seconds). Every mismatch is rerun by PyTensor's other
# implementations, the default-mode function included
# (``implementation_difference``). Chunks so that ``-n 2`` shares them.
@pytest.mark.parametrize("start", range(1000, 1200, 50))
def test_quick_fuzz_run_has_no_unexplained_failures(start):
    report = fuzz(start, 50, shrink_failures=False, backend="python")
    assert {f.program.seed for f in report.failures} <= set(OPEN_FINDINGS), report.summary()
    assert report.counts["match"] >= 40, report.summary()


# The long run in the slow job, in chunks of 100 so that ``-n 2`` keeps both
# workers busy to the end (about 0.1 s a graph on a loaded core): 5,000 graphs
# on each PyTensor line, different ones (seeds 100000..104999 on 2.38,
# 105000..109999 on 3), so that CI covers 10,000 within its 45-minute budget.
# Each case runs in a child process (a hard onnxruntime crash is a ``crash``,
# so is a case over 300 s: a ``known`` case compiles the default backend's
# function, Numba's seconds; 120 s was overrun on the loaded 2-core machine;
# a reference that hangs ends after 60 s, ``_Isolated``), under onnxruntime's
# default session options (``CompiledModel.session``).
LONG_RUN_GRAPHS = 5_000
LONG_RUN_FIRST_SEED = 105_000 if IS_PYTENSOR_3 else 100_000


@pytest.mark.slow
@pytest.mark.parametrize("start", range(LONG_RUN_FIRST_SEED, LONG_RUN_FIRST_SEED + LONG_RUN_GRAPHS, 100))
def test_long_fuzz_run_has_no_failures(start):
    report = fuzz(start, 100, isolate=True, shrink_failures=True, backend="python", timeout_s=300)
    print(report.summary())
    assert {f.program.seed for f in report.failures} <= set(OPEN_FINDINGS), report.summary()


# The scan-grad family (``compiler/tools/fuzz/scan_grads.py``): a random scan and
# 1-3 nested gradients. PyTensor's own rewrites and inner-function builds of
# such graphs take seconds, so the quick run is a few seeds of at most 3
# steps and second order; the extended job runs 10 full programs per line (0.6-63 s each
# in 2.38 on an idle core, ~4 min in all).
def test_scan_grad_programs_are_deterministic_and_differentiate_through_scans():
    from pytensor.graph.traversal import io_toposort
    from pytensor.scan.op import Scan

    assert generate_scan_grad(5).source() == generate_scan_grad(5).source()
    for seed in range(4):
        program = generate_scan_grad(seed, max_order=1)
        inputs, out = build(program)
        scans = [n.op.info for n in io_toposort(inputs, [out]) if isinstance(n.op, Scan)]
        assert any(info.n_mit_mot for info in scans), program.source()
    orders = {sum("pytensor.grad" in line for line in generate_scan_grad(seed).lines) for seed in range(30)}
    assert orders == {1, 2, 3}
    assert FAMILIES["scan-grad"] is generate_scan_grad
    with pytest.raises(ValueError, match="family must be one of"):
        fuzz(0, 1, family="loops")


@pytest.mark.parametrize("seed", [2, 3, 5, 7])
def test_quick_scan_grad_run_matches(seed):
    result = run_case(generate_scan_grad(seed, max_steps=3, max_order=2), backend="python")
    # a wrong-shape input onnxruntime refuses inside the loop: the input check does not look into scan bodies
    assert result.kind == "match" or result.explanation == REFUSED_BY_ORT, result.report()


@pytest.mark.extended  # by hand: 0.6-63 s a program in 2.38
@pytest.mark.parametrize("start", range(200_000, 200_010, 5))
def test_scan_grad_run_has_no_failures(start):
    report = fuzz(start, 5, isolate=True, shrink_failures=True, backend="python", timeout_s=600,
                  family="scan-grad")
    print(report.summary())
    assert not report.failures, report.summary()


def test_a_hang_is_a_crash_only_outside_pytensors_reference(monkeypatch):
    """An isolated case that overruns its timeout is a ``crash`` when it hung
    compiling or running the model, ``pytensor-error`` when it hung in
    PyTensor's reference (2.38's Python ``Composite`` computing an int32
    ``2147483647 ** 2147483647`` with Python integers, seed 102265)."""
    import time

    from compiler.tools.fuzz import runner

    iso = runner._Isolated(2.0, "python")
    patient = runner._Isolated(600.0, "python", reference_timeout_s=2.0)
    try:
        monkeypatch.setattr(runner, "_reference", lambda *args: time.sleep(60))  # the child is forked
        assert iso.run(1000, 6).kind == "pytensor-error"
        # The reference has its own, shorter budget: a hang in it ends after 2 s of the case's 600.
        hung = patient.run(1000, 6)
        assert hung.kind == "pytensor-error" and "no result within 2 s" in hung.detail, hung.detail
        # A reference that returns at once, so that only the model's compile
        # can overrun the timeout (a real one may take seconds on a loaded machine).
        monkeypatch.setattr(runner, "_reference", lambda *args: (object(), [0.0], None))
        monkeypatch.setattr(runner, "compile_to_onnx", lambda *args, **kw: time.sleep(60))
        assert iso.run(1000, 6).kind == "crash"
    finally:
        iso.stop()
        patient.stop()


# Wrong-shape inputs (``compiler/tools/fuzz/wrong_shapes.py``): after a match, every case also runs its
# inputs with one dim changed, and the model must refuse them exactly when PyTensor does.
def test_wrong_shape_variants_grow_and_cut_one_axis_of_one_input():
    prog = Program([("x0", "float64", (None, None), np.arange(6.0).reshape(2, 3)),
                    ("x1", "float64", (None,), np.arange(3.0))], ["v0 = x0 + x1"], seed=4)
    variants = wrong_shape_variants(prog)
    assert len(variants) == 2
    (grown_what, grown, grown_at), (cut_what, cut, cut_at) = variants
    assert grown_at == cut_at and grown_at[0] in grown_what
    changed = [i for i, (a, b) in enumerate(zip(grown, [d for *_, d in prog.inputs])) if a.shape != b.shape]
    assert len(changed) == 1 and "of size 1" in cut_what
    i = changed[0]
    assert [grown[i].shape[a] - prog.inputs[i][3].shape[a] for a in range(grown[i].ndim)].count(1) == 1
    assert set(np.unique(grown[i])) <= set(np.unique(prog.inputs[i][3]))  # no new values


def test_a_model_that_accepts_a_shape_pytensor_refuses_is_a_mismatch():
    prog = Program([("x0", "float64", (None, None), np.arange(6.0).reshape(2, 3)),
                    ("x1", "float64", (None,), np.arange(3.0))], ["v0 = x0 + x1"], seed=4)
    inputs, out = build(prog)
    import pytensor
    from pytensor.compile.mode import Mode

    reference = pytensor.function(inputs, out, mode=Mode(linker="py", optimizer=None))
    model = compile_to_onnx(inputs, outputs=[out])
    assert check_wrong_shapes(prog, reference, model) is None  # the input check refuses what PyTensor refuses
    model.equal_dims = []  # a model without the check: onnxruntime broadcasts the length-1 dim
    kind, detail, _ = check_wrong_shapes(prog, reference, model)
    assert kind == "mismatch" and "where PyTensor raised ValueError" in detail, detail
    assert run_case(prog, backend="python").kind == "match"


# The idioms family (``compiler/tools/fuzz/idioms.py``): convolution, pooling, linear algebra (well- and
# ill-conditioned), sorting and special functions as users write them. The quick run covers each idiom twice; the slow job runs 300 graphs
# (~60 s of CPU per 100 on the loaded machine).
def test_idiom_programs_are_deterministic_and_cover_every_idiom():
    from compiler.tools.fuzz.idioms import SPECIAL

    assert generate_idioms(3).source() == generate_idioms(3).source()
    assert FAMILIES["idioms"] is generate_idioms
    markers = {"conv": ["convolve2d"], "pool": ["axis=(3, 5)"], "linalg": ["pt.linalg."],
               "sort": ["pt.sort(", "pt.argsort(", "pt.unique(", "pt.nonzero(", "pt.flatnonzero("],
               "special": [f"{fn}(x0)" for fn in SPECIAL], "ill_conditioned": ["condition number"]}
    assert set(markers) == set(IDIOMS)
    for i, idiom in enumerate(IDIOMS):
        for seed in range(i, 10 * len(IDIOMS), len(IDIOMS)):
            source = generate_idioms(seed).source()
            assert any(m in source for m in markers[idiom]), (idiom, source)


@pytest.mark.parametrize("start", [0, 5])
def test_quick_idioms_run_has_no_unexplained_failures(start):
    report = fuzz(start, 5, shrink_failures=False, backend="python", family="idioms")
    assert not report.failures, report.summary()
    assert report.counts["match"] + report.counts["known"] + report.counts["unsupported"] == 5, report.summary()


@pytest.mark.slow
# 150 idiom graphs a line, different ones (CI covers the 300 seeds 300000..300299 across the lines)
@pytest.mark.parametrize("start", range(300_000 if IS_PYTENSOR_3 else 300_150, 300_150 if IS_PYTENSOR_3 else 300_300, 50))
def test_long_idioms_run_has_no_failures(start):
    report = fuzz(start, 50, isolate=True, shrink_failures=True, backend="python", timeout_s=120, family="idioms")
    print(report.summary())
    assert not report.failures, report.summary()


# The pymc family (``compiler/tools/fuzz/pymc_logps.py``): one PyMC distribution's logp/logcdf/logccdf at a
# vector of values, kept, summed or differentiated; PyTensor 2.38 with PyMC only (the 3.0 line has no PyMC).
# About 0.9 s a graph (PyMC's graphs and their default-mode rewrites).
def test_pymc_programs_are_deterministic_and_cover_every_distribution():
    from compiler.tools.fuzz.pymc_logps import DISTRIBUTIONS, generate_pymc

    assert FAMILIES["pymc"] is generate_pymc
    from compiler.tools.cli import build_parser  # the CLI lists the families without importing the fuzzer
    fuzz_parser = build_parser()._subparsers._group_actions[0].choices["fuzz"]
    assert set(next(a.choices for a in fuzz_parser._actions if a.dest == "family")) == set(FAMILIES)
    assert generate_pymc(7).source() == generate_pymc(7).source()
    sources = [generate_pymc(seed).source() for seed in range(3 * len(DISTRIBUTIONS))]
    for name in DISTRIBUTIONS:
        assert any(f"pm.{name}.dist(" in src for src in sources), name
    for fn in ("pm.logp(", "pm.logcdf(", "pm.logccdf(", "pytensor.grad("):
        assert any(fn in src for src in sources), fn


@pytest.mark.parametrize("start", [0, 8])
def test_quick_pymc_run_has_no_unexplained_failures(start):
    pytest.importorskip("pymc")
    report = fuzz(start, 8, shrink_failures=False, backend="python", family="pymc")
    assert not report.failures, report.summary()
    assert report.counts["match"] + report.counts["known"] == 8, report.summary()


# Open findings of the pymc family (docs/status.md "Not done yet"): none. Seeds 239 and 351 (PyMC's Weibull
# log-density fed a value longer than its Alloc's target of 1) are refused since Alloc guards such a dim.
PYMC_OPEN_FINDINGS: dict[int, str] = {}


def test_an_alloc_of_a_longer_value_fails_as_pytensors_does():
    """``Alloc`` of a length-2 value to shape (1,) raises in PyTensor; ONNX
    Expand alone would broadcast the target to the value's length."""
    import pytensor.tensor as pt

    x = pt.dvector("x")
    model = compile_to_onnx([x], outputs=[pt.alloc(x, 1) * 2.0])
    np.testing.assert_array_equal(model.run(np.array([3.0]))[0], [6.0])
    with pytest.raises(Exception):
        model.run(np.array([3.0, 4.0]))


@pytest.mark.parametrize("seed", [239, 351])
def test_the_pymc_seeds_of_the_longer_alloc_value(seed):
    pytest.importorskip("pymc")
    report = fuzz(seed, 1, shrink_failures=False, backend="python", family="pymc")
    assert not report.failures, report.summary()


@pytest.mark.slow  # ~0.9 s a graph
@pytest.mark.parametrize("start", [200])
def test_long_pymc_run_has_no_failures(start):
    pytest.importorskip("pymc")
    report = fuzz(start, 50, isolate=True, shrink_failures=True, backend="python", timeout_s=120, family="pymc")
    print(report.summary())
    assert {f.program.seed for f in report.failures} <= set(PYMC_OPEN_FINDINGS), report.summary()


# The pymc-model family (``compiler/tools/fuzz/pymc_models.py``): a small whole PyMC model's joint
# log-density or its gradient at an unconstrained point; PyTensor 2.38 with PyMC. ~1.5 s a graph.
def test_pymc_model_programs_are_deterministic_and_cover_every_piece():
    from compiler.tools.fuzz.pymc_models import LIKELIHOODS, generate_pymc_model

    assert FAMILIES["pymc-model"] is generate_pymc_model
    assert generate_pymc_model(4).source() == generate_pymc_model(4).source()
    sources = [generate_pymc_model(seed).source() for seed in range(40)]
    for piece in [f"pm.{name}('y'" for name in LIKELIHOODS] + ["theta = pm.Normal", "theta = mu + sigma * z",
                                                                 "pm.Dirichlet", "pt.dot(", "pytensor.grad("]:
        assert any(piece in src for src in sources), piece
    assert all("model.logp()" in src for src in sources)


@pytest.mark.parametrize("seed", [3, 8, 13])
def test_quick_pymc_model_run_has_no_unexplained_failures(seed):
    pytest.importorskip("pymc")
    report = fuzz(seed, 1, shrink_failures=False, backend="python", family="pymc-model")
    assert not report.failures, report.summary()
    assert report.counts["match"] + report.counts["known"] == 1, report.summary()


@pytest.mark.slow  # ~1.5 s a graph
@pytest.mark.parametrize("start", [400])
def test_long_pymc_model_run_has_no_failures(start):
    pytest.importorskip("pymc")
    report = fuzz(start, 30, isolate=True, shrink_failures=True, backend="python", timeout_s=300,
                  family="pymc-model")
    print(report.summary())
    assert not report.failures, report.summary()


# The random family (``compiler/tools/fuzz/random_draws.py``): draws compared in distribution (two-sample
# KS per column, Bonferroni over the program's tests at ALPHA) under the three ``random`` policies and both paths.
def test_random_programs_are_deterministic_and_cover_every_distribution():
    from compiler.tools.fuzz.random_draws import DISTRIBUTIONS, generate_random

    assert FAMILIES["random"] is generate_random
    assert generate_random(5).source() == generate_random(5).source()
    sources = [generate_random(seed).source() for seed in range(3 * len(DISTRIBUTIONS))]
    for name in DISTRIBUTIONS:
        assert any(f"pt.random.{name}(" in src for src in sources), name
    assert any(".owner.outputs[0]" in src for src in sources)  # chained generators
    assert all(generate_random(seed).draws for seed in range(5))


def test_sample_comparison_rejects_another_distribution_and_accepts_ulp_apart_atoms():
    from compiler.tools.fuzz.random_draws import compare_samples

    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1, (40_000, 2)), rng.normal(0, 1, (40_000, 2))
    assert compare_samples(a, b, tests=4) is None
    shifted = b + np.array([0.0, 0.06])
    assert "column 1: two-sample KS" in compare_samples(a, shifted, tests=4)
    assert "column 0" in compare_samples(a * 1.12, b, tests=4)
    assert compare_samples(a.astype(np.float32), b, tests=4).startswith("dtype")
    atoms = np.tanh((rng.random(40_000) < 0.4).astype(np.float64))  # onnxruntime's tanh(1) one ulp off NumPy's
    assert compare_samples(np.where(atoms > 0, np.nextafter(atoms, 2), atoms), np.tanh((rng.random(40_000) < 0.4) * 1.0),
                           tests=1) is None
    assert compare_samples(atoms, np.tanh((rng.random(40_000) < 0.42) * 1.0), tests=1) is not None


def test_the_random_family_finds_a_wrong_transform(monkeypatch):
    """A normal draw lowered with its scale 12% too large is a mismatch."""
    from pytensor.tensor.random import basic as rb

    import dataclasses

    from compiler.lowering.rules import random_transforms
    from compiler.tools.fuzz.random_draws import generate_random, run_random_case

    seed = next(s for s in range(100) if "pt.random.normal(" in generate_random(s, 1).source()
                and ".owner" not in generate_random(s, 1).source())
    program = generate_random(seed, 1)
    assert run_random_case(program).kind == "match"
    spec = random_transforms.TRANSFORMS[rb.NormalRV]

    def wider(ctx, z, p):
        return spec.fn(ctx, ctx.add("mul", [z, ctx.scalar(1.12, z.dtype)]), p)

    monkeypatch.setitem(random_transforms.TRANSFORMS, rb.NormalRV, dataclasses.replace(spec, fn=wider))
    result = run_random_case(program)
    assert result.kind == "mismatch" and "two-sample KS" in result.detail, result.report()


def test_quick_random_run_has_no_failures():
    report = fuzz(0, 8, shrink_failures=False, backend="python", family="random")
    assert report.counts["match"] + report.counts["known"] == 8 and report.counts["match"] >= 3, report.summary()


@pytest.mark.slow  # ~0.6 s a program on an idle core (40,000-row samples, 4 models, wrong-shape variants)
# 100 random-variable programs a line, different ones (CI covers 500000..500199 across the lines)
@pytest.mark.parametrize("start", [500_000, 500_050] if IS_PYTENSOR_3 else [500_100, 500_150])
def test_long_random_run_has_no_failures(start):
    report = fuzz(start, 50, isolate=True, shrink_failures=True, backend="python", timeout_s=120, family="random")
    print(report.summary())
    assert not report.failures, report.summary()


def test_the_random_familys_wrong_shape_classes_need_their_condition():
    """``_parameter_difference`` turns a wrong-shape mismatch into a known class only when
    PyTensor raised for parameter values or NumPy's ``integers`` drew from bounds that do not
    broadcast to ``size``, checked on the wrong-shape data."""
    import pytensor
    from pytensor.compile.mode import Mode

    from compiler.tools.fuzz.random_draws import UNCHECKED_SIZE, PARAMETER_VALUES, _parameter_difference

    def case(line, data):
        prog = Program([(f"x{i}", str(d.dtype), (None,), d) for i, d in enumerate(data)],
                       ["g = pytensor.shared(np.random.default_rng(0), name='g')", line], seed=0, draws=True)
        inputs, out = build(prog)
        return prog, pytensor.function(inputs, out, mode=Mode(linker="py", optimizer=None))

    verdict = ("mismatch", "input 'x0' axis 0 ...", "")
    ints, fn = case("v1 = pt.random.integers(low=x0, high=x1, size=(50, 1), rng=g)", [np.array([1]), np.array([3])])
    wide = [np.array([1, 1]), np.array([3])]
    assert _parameter_difference(ints, wide, ("x0", 0), fn, verdict)[2] == UNCHECKED_SIZE
    assert _parameter_difference(ints, wide, ("x1", 0), fn, verdict) == verdict  # x1 fits size
    uni, fn = case("v1 = pt.random.uniform(low=x0, high=x1, size=(50, 2), rng=g)",
                   [np.array([0.0, 1.0]), np.array([0.5, 2.0])])
    crossed = [np.array([0.0, 1.0]), np.array([0.5])]  # high < low in column 1: NumPy raises for the values
    assert _parameter_difference(uni, crossed, ("x1", 0), fn, verdict)[2] == PARAMETER_VALUES
    assert _parameter_difference(uni, [np.array([0.0, 1.0]), np.array([0.5, 2.0])], ("x1", 0), fn, verdict) == verdict
