"""Helpers of the pass tests: IR text in, IR text out, and the interpreter
run on random inputs before and after the pass.

``check_pass(pass_, before, after)`` parses ``before``, runs the pass,
compares the printed result with ``after`` (showing the actual IR on a
mismatch), verifies the result and checks that the interpreter gives
identical results (bit for bit, NaNs by position) before and after on
random inputs. With ``rtol=`` (passes that reassociate float arithmetic,
such as conv recovery and batch-norm folding) the results need only agree
to that tolerance, on finite random inputs.
"""

from __future__ import annotations

import textwrap
from typing import Sequence

import numpy as np

from ir import Graph
from ir.interpreter import evaluate
from ir.parser import parse_graph
from ir.printer import print_graph
from ir.verifier import verify
from passes import Pass


def random_inputs(graph: Graph, rng: np.random.Generator, sizes: dict | None = None, *,
                  finite: bool = False) -> list[np.ndarray]:
    """One random array per graph input. A symbolic dim takes its size from
    ``sizes`` (else a random size 1-4, the same for every use of the name);
    floats include NaN, +-Inf and -0.0 unless ``finite``."""
    sizes = dict(sizes or {})
    arrays = []
    for v in graph.inputs:
        shape = []
        for d in v.shape:
            if isinstance(d, int):
                shape.append(d)
            else:
                key = d if d is not None else object()
                shape.append(sizes.setdefault(key, int(rng.integers(1, 5))))
        dtype = v.dtype.numpy
        if dtype.kind == "f":
            a = rng.normal(size=shape) * 4
            specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0])
            mask = rng.random(size=shape) < (0.0 if finite else 0.2)
            a = np.where(mask, rng.choice(specials, size=shape), a)
        elif dtype.kind == "b":
            a = rng.random(size=shape) < 0.5
        else:
            info = np.iinfo(dtype)
            a = rng.integers(max(info.min, -100), min(info.max, 100), size=shape, endpoint=True)
        arrays.append(np.asarray(a).astype(dtype))
    return arrays


def assert_identical(got: np.ndarray, want: np.ndarray, what: str = "output") -> None:
    """Same dtype, shape and values bit for bit (the sign of zero included),
    NaNs matching by position (a NaN's sign bit is no part of its value:
    IEEE 754 leaves it to the operation, and ``neg`` flips it)."""
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    np.testing.assert_array_equal(got, want, err_msg=what)
    if got.dtype.kind == "f":
        numbers = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers],
                                      err_msg=f"{what}: sign of zero")


def assert_same_numbers(before: Graph, after: Graph, *, seeds=range(3), sizes: dict | None = None) -> None:
    """The interpreter gives identical outputs for ``before`` and ``after`` on
    random inputs (one draw per seed)."""
    for seed in seeds:
        values = random_inputs(before, np.random.default_rng(seed), sizes)
        want = evaluate(before, values)
        got = evaluate(after, values)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_identical(g, w, f"output {i} (seed {seed})")


def assert_close_numbers(before: Graph, after: Graph, *, rtol: float, seeds=range(3),
                         sizes: dict | None = None) -> None:
    """The interpreter gives outputs of equal dtype and shape, equal to
    ``rtol`` (relative, and absolute against the output's largest finite
    magnitude; NaN matches NaN), for ``before`` and ``after`` on finite random
    inputs (one draw per seed)."""
    for seed in seeds:
        values = random_inputs(before, np.random.default_rng(seed), sizes, finite=True)
        want = evaluate(before, values)
        got = evaluate(after, values)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert g.dtype == w.dtype and g.shape == w.shape, f"output {i}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
            scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0)) if w.dtype.kind == "f" else 1.0
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=f"output {i} (seed {seed})")


def check_pass(pass_: Pass | Sequence[Pass], before: str, after: str | None, *, changed: bool | None = None,
               sizes: dict | None = None, rtol: float | None = None) -> Graph:
    """Run ``pass_`` on the graph ``before`` (IR text) and check the result.

    Args:
        pass_: the pass object, or a list of them run in order (then
            "changed" means that any of them changed the graph).
        before: IR text of the input graph.
        after: IR text expected after the pass (indentation-insensitive), or
            None for "unchanged" (then ``pass_.run`` must return False).
        changed: what ``run`` must return (default: whether the text changed).
        sizes: sizes of the symbolic dims for the numeric check.
        rtol: compare the numbers to this tolerance on finite inputs
            (``assert_close_numbers``) instead of bit for bit.

    Returns:
        The rewritten graph.
    """
    before = textwrap.dedent(before).strip() + "\n"
    expected = before if after is None else textwrap.dedent(after).strip() + "\n"
    graph = parse_graph(before)
    verify(graph, context="before the pass")
    pipeline = list(pass_) if isinstance(pass_, (list, tuple)) else [pass_]
    name = ", ".join(p.name for p in pipeline)
    did = False
    for p in pipeline:
        did = p.run(graph) or did
        verify(graph, context=f"after {p.name}")
    actual = print_graph(graph)
    assert actual == expected, f"{name} gave:\n{actual}\nexpected:\n{expected}"
    want_changed = (expected != before) if changed is None else changed
    assert did is want_changed, f"{name} returned {did}, expected {want_changed}"
    if rtol is None:
        assert_same_numbers(parse_graph(before), graph, sizes=sizes)
    else:
        assert_close_numbers(parse_graph(before), graph, rtol=rtol, sizes=sizes)
    return graph
