"""The differential fuzzer: its pieces, a quick run in the main suite, a
long run on demand (``pytest -m fuzz_long``: its default-mode references
compile every random graph, hours on 2 cores, so it is not part of CI; README
"Not done yet" says where it stands)."""

import numpy as np
import pytest

from compiler.fuzz import build, compare, fuzz, generate, run_case, shrink
from compiler.fuzz.generate import Program


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


# Open findings of the quick run against PyTensor 3.0's default-mode
# functions, not fixed yet (README, "Not done yet"); PyTensor 2.38's rewrites
# do not produce them. Any other failure fails the test.
OPEN_FINDINGS = {
    1059: "uint8 / uint8 reshaped: the default-mode function rounds through float32 (not triaged)",
    1067: "switch(sigmoid(ceil(uint8)) > 0, ...): the default-mode function gives 0.0 (not triaged)",
    1099: "int64 inc_subtensor overflowing then > 0: wrap-around handled differently (not triaged)",
}


def test_quick_fuzz_run_has_no_unexplained_failures():
    report = fuzz(1000, 100, shrink_failures=False)
    assert report.counts["crash"] == 0, report.summary()
    assert {f.program.seed for f in report.failures} <= set(OPEN_FINDINGS), report.summary()
    assert report.counts["match"] > 80, report.summary()


@pytest.mark.fuzz_long
def test_long_fuzz_run_has_no_failures():
    report = fuzz(100_000, 5_000, isolate=True, shrink_failures=True)
    print(report.summary())
    assert not report.failures, report.summary()
