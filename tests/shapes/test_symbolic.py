"""``ir.symbolic``: the simplifier's canonical forms, its soundness against
Python integer arithmetic on random expressions, and the text form
(print -> parse -> print is the identity)."""

from __future__ import annotations

import itertools
import operator

import pytest
from hypothesis import given, strategies as st

from ir import symbolic as sym
from ir.symbolic import Expr, format_dim, parse_dim

SYMBOLS = ["H", "W", "N"]


@pytest.mark.parametrize("text, canonical", [
    ("H-3+3", "H"),
    ("(H-3)//2+1", "(H+1)//2-1"),
    ("(H-2)//2", "H//2-1"),
    ("2*H//2", "H"),
    ("(2*H+2)//4", "(H+1)//2"),
    ("3*H//2", "H+H//2"),
    ("(H//2)//2", "H//4"),
    ("(H//2+1)//3", "(H+2)//6"),
    ("H//1", "H"),
    ("H*1+0", "H"),
    ("4*(H//2-1)*(W//2-1)", "4*(H//2)*(W//2)-4*(H//2)-4*(W//2)+4"),
    ("H*W-W*H", "0"),
    ("H%2", "H-2*(H//2)"),
    ("2*H%2", "0"),
    ("max(H+1,H)", "H+1"),
    ("max(H,0)", "H"),
    ("min(H,0)", "0"),
    ("max(N-1,0)", "max(N-1,0)"),
    ("max(0,N-1)", "max(N-1,0)"),
    ("abs(H)", "H"),
    ("abs(3-H)", "abs(H-3)"),
    ("abs(-H-1)", "H+1"),
    ("-(H//2)", "-(H//2)"),
    ("max(H-2,0)//2*2", "2*(max(H-2,0)//2)"),
    ("12*N//4", "3*N"),
])
def test_canonical_forms(text, canonical):
    d = parse_dim(text)
    assert format_dim(d) == canonical
    assert parse_dim(canonical) == d


def test_results_that_are_constants_or_symbols_are_not_expressions():
    assert sym.sub(sym.add("H", 3), 3) == "H" and isinstance(sym.sub(sym.add("H", 3), 3), str)
    assert sym.mul(sym.floordiv("H", 2), 0) == 0
    assert isinstance(sym.add("H", 1), Expr)
    assert sym.add("H", None) is None and sym.floordiv("H", "W") is None and sym.floordiv("H", 0) is None


def test_equal_values_built_differently_compare_and_hash_equal():
    a = sym.add(sym.mul(2, "H"), sym.mul("W", "H"))
    b = sym.mul(sym.add("W", 2), "H")
    assert a == b and hash(a) == hash(b) and str(a) == str(b)


def test_expressions_over_the_size_bound_are_unknown():
    d = "H"
    for _ in range(40):
        d = sym.minimum(sym.add(d, 1), "W")  # each step nests one more call
    assert d is None
    wide = sym.total(f"s{i}" for i in range(sym.MAX_TERMS + 1))
    assert wide is None


def test_nonnegativity_is_only_claimed_when_proved():
    assert sym.is_nonnegative(parse_dim("H*W+H//2+3"))
    assert sym.is_nonnegative(parse_dim("max(N-1,0)")) and sym.is_nonnegative(parse_dim("abs(H-3)"))
    assert not sym.is_nonnegative(parse_dim("H-1")) and not sym.is_nonnegative(None)


def test_evaluate_symbols_and_substitute():
    d = parse_dim("(abs(H-3)+1)//2*N")
    assert sym.evaluate(d, {"H": 2, "N": 5}) == 5 and sym.evaluate(d, {"H": 28, "N": 3}) == 39
    assert sym.symbols(d) == {"H", "N"}
    assert format_dim(sym.substitute(d, {"H": 28, "N": "batch"})) == "13*batch"
    assert sym.substitute(d, {"H": 28, "N": 2}) == 26
    with pytest.raises(KeyError):
        sym.evaluate(d, {"H": 2})


@pytest.mark.parametrize("text, message", [
    ("H//W", "division by a non-constant"),
    ("H+", "expected a number"),
    ("max(H)", "max takes 2 argument"),
    ("H $ 2", "bad character"),
    ("(H", r"expected '\)'"),
])
def test_parse_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse_dim(text)


# -- soundness: random expressions against Python's integer arithmetic ------------
OPS = {
    "add": (sym.add, operator.add), "sub": (sym.sub, operator.sub), "mul": (sym.mul, operator.mul),
    "max": (sym.maximum, max), "min": (sym.minimum, min),
}


@st.composite
def expressions(draw, depth=3):
    """``(dim, python_fn)``: a dim built with ``ir.symbolic`` and the plain
    Python function of the sizes computing the same value."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            name = draw(st.sampled_from(SYMBOLS))
            return name, lambda s, n=name: s[n]
        k = draw(st.integers(-5, 5))
        return k, lambda s, k=k: k
    kind = draw(st.sampled_from(sorted(OPS) + ["floordiv", "mod", "abs", "neg"]))
    a, fa = draw(expressions(depth=depth - 1))
    if kind in ("floordiv", "mod"):
        k = draw(st.integers(1, 4))
        fn = sym.floordiv if kind == "floordiv" else sym.mod
        return fn(a, k), (lambda s: fa(s) // k) if kind == "floordiv" else (lambda s: fa(s) % k)
    if kind == "abs":
        return sym.absolute(a), lambda s: abs(fa(s))
    if kind == "neg":
        return sym.neg(a), lambda s: -fa(s)
    b, fb = draw(expressions(depth=depth - 1))
    ours, py = OPS[kind]
    return ours(a, b), lambda s: py(fa(s), fb(s))


SIZES = [dict(zip(SYMBOLS, v)) for v in itertools.product([0, 1, 2, 5, 8], [0, 3, 7], [1, 4])]


@given(expressions())
def test_simplification_is_exact_and_text_round_trips(case):
    d, python = case
    if d is None:  # too big: unknown is always sound
        return
    for sizes in SIZES:
        assert sym.evaluate(d, sizes) == python(sizes), (format_dim(d), sizes)
        if sym.is_nonnegative(d):
            assert python(sizes) >= 0, (format_dim(d), sizes)
    text = format_dim(d)
    assert parse_dim(text) == d and format_dim(parse_dim(text)) == text


# -- size facts: bounds, refine, nonnegative_given --------------------------------
@pytest.mark.parametrize("facts, text, refined", [
    (["H-3"], "abs(H-3)+1", "H-2"),                      # a valid 3x3 conv's rows
    (["H-3"], "min(2*((abs(H-3)+1)//2),abs(H-3)+1)", "2*(H//2)-2"),  # its floor-mode pooling crop
    (["H//2-4"], "abs(H//2-3)+1", "H//2-2"),             # H >= 8 from a monotone fact
    (["H-K"], "abs(H-K)+1", "H-K+1"),                    # a kernel of symbolic size: the fact itself
    (["H-3"], "abs(W-3)+1", "abs(W-3)+1"),               # other symbols are untouched
])
def test_refine_under_size_facts(facts, text, refined):
    bounds = sym.lower_bounds([parse_dim(f) for f in facts])
    assert format_dim(sym.refine(parse_dim(text), bounds)) == refined


def test_lower_bounds_and_floor_bounds():
    assert sym.lower_bounds([parse_dim("H-3"), parse_dim("(H-2)//2-3")]) == (("H", 8),)
    assert sym.lower_bounds([parse_dim("H+1")]) == ()      # always true: no bound
    assert sym.is_nonnegative(parse_dim("H-2*(H//2)"))     # H % 2
    assert sym.is_nonnegative(parse_dim("H//2-2*((H+2)//4)+1"))
    assert not sym.is_nonnegative(parse_dim("2*(H//2)-H"))


@given(expressions(), expressions())
def test_refine_is_exact_wherever_the_fact_holds(case, fact_case):
    d, python = case
    f, f_python = fact_case
    if d is None or f is None:
        return
    bounds = sym.lower_bounds([f])
    refined = sym.refine(d, bounds)
    for sizes in SIZES:
        if f_python(sizes) >= 0:
            assert sym.evaluate(refined, sizes) == python(sizes), (format_dim(d), format_dim(f), sizes)
            if sym.nonnegative_given(d, bounds):
                assert python(sizes) >= 0, (format_dim(d), format_dim(f), sizes)
