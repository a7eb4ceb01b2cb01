"""Symbolic dims: integer expressions over named sizes, in a canonical form.

A dim of the IR (``ir.types.Dim``) is an ``int`` (static), a ``str`` (a
named size such as ``"N"``), ``None`` (unknown) or an ``Expr`` built from
named sizes by the helpers here, e.g. the output height of a stride-2 3x3
convolution, ``(H-3)//2+1``, which the canonical form writes ``(H+1)//2-1``.
The helpers take and return dims: a result that is a constant is an ``int``
and a lone symbol is a ``str``, so "not an int" still means "not static"; a
``None`` operand gives ``None``.

Semantics are Python integer arithmetic: ``floordiv`` and ``mod`` round
toward negative infinity (as NumPy's ``floor_divide`` on ints, PyTensor's
IntDiv), ``max``/``min``/``abs`` as Python's. Every symbol stands for a size,
so it is >= 0; that is the only fact the simplifier assumes.

The canonical form (an ``Expr``) is a polynomial with integer coefficients:
a constant plus terms ``coef * a1 * a2 * ...`` whose atoms are symbols or
calls: ``p // k`` (``k`` a constant > 1, ``p`` with every coefficient reduced
into ``[1, k)`` and its constant into ``[0, k)``, then divided by the common
gcd, nested floor divisions merged), ``max(a, b)``, ``min(a, b)`` and
``abs(e)`` (when the simplifier cannot decide them). Terms and atoms are
sorted (higher degree first, then by text), so equal forms are equal
objects (``==``, ``hash``) and print the same. Simplification rules:

* constants fold; like terms combine; ``x*1``, ``x+0``, ``x//1`` vanish;
  products distribute (so ``4*(H//2-1)`` is ``4*(H//2)-4``);
* ``(k*a + b + c)//k`` is ``a + (b+c)//k`` for integer ``a`` (exact for
  floor division), ``(g*a)//(g*k)`` is ``a//k``, and
  ``(p//b + r)//k`` is ``(p + b*r)//(b*k)``;
* ``max(a, b)`` is ``a`` when ``a - b`` is provably >= 0 (a constant, or a
  polynomial with non-negative coefficients over non-negative atoms), and
  likewise ``min`` and ``abs``.

An expression with more than ``MAX_TERMS`` terms, or more than ``MAX_SIZE``
terms and atoms counting those nested in calls, becomes ``None`` (unknown):
every operation costs a bounded time and passes stay linear. Results are
memoized (graphs repeat the same dims).

``format_dim`` prints a dim (``?`` for None) and ``parse_dim`` reads it back:
``parse_dim(format_dim(d)) == d``. ``evaluate`` gives a dim's value for
given sizes, ``symbols`` its names, ``substitute`` renames or pins them.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Callable, Iterable, Mapping, Union

MAX_TERMS = 32
MAX_SIZE = 64
CACHE_SIZE = 1 << 14

FUNCTIONS = ("max", "min", "abs")


class Call:
    """An atom that is not a symbol: ``fn`` applied to ``args``.

    ``fn`` is ``"floordiv"`` (args: the numerator dim and an int > 1),
    ``"max"``/``"min"`` (two dims, sorted by text) or ``"abs"`` (one dim).
    Built only by the helpers of this module, always simplified.
    """

    __slots__ = ("fn", "args", "text", "size", "_hash")

    def __init__(self, fn: str, args: tuple):
        self.fn = fn
        self.args = args
        self.text = _call_text(fn, args)
        self.size = 1 + sum(x.size if isinstance(x, Expr) else 1 for x in args)
        self._hash = hash(self.text)

    def __eq__(self, other) -> bool:
        return isinstance(other, Call) and self.text == other.text

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Call({self.text!r})"


Atom = Union[str, Call]
Monomial = tuple  # atoms sorted by text, repeated for powers


class Expr:
    """A symbolic dim in canonical form: ``const + sum(coef * prod(monomial))``.

    Attributes:
        terms: ``((monomial, coef), ...)``, higher degree first, then by
            the monomials' text; no zero coefficient.
        const: the constant term.

    Equal values built different ways usually compare equal (the form is
    canonical up to the rules in the module docstring). Immutable and
    hashable; ``str`` gives the text ``parse_dim`` reads.
    """

    __slots__ = ("terms", "const", "size", "_text", "_hash")

    def __init__(self, terms: tuple, const: int, size: int):
        self.terms = terms
        self.const = const
        self.size = size  # terms and atoms, nested ones included
        self._text: str | None = None
        self._hash = hash((terms, const))

    def __eq__(self, other) -> bool:
        return isinstance(other, Expr) and self.const == other.const and self.terms == other.terms

    def __hash__(self) -> int:
        return self._hash

    def __str__(self) -> str:
        if self._text is None:
            self._text = _expr_text(self)
        return self._text

    def __repr__(self) -> str:
        return f"Expr({str(self)!r})"


Dim = Union[int, str, Expr, None]


# -- polynomials ------------------------------------------------------------
def _atom_text(a: Atom) -> str:
    return a if isinstance(a, str) else a.text


def _mono_key(m: Monomial) -> tuple:
    return tuple(_atom_text(a) for a in m)


def _poly(d) -> tuple[dict, int]:
    """``(terms, const)`` of a non-None dim, terms a fresh dict monomial -> coef."""
    if isinstance(d, int):
        return {}, d
    if isinstance(d, str):
        return {(d,): 1}, 0
    if isinstance(d, Expr):
        return dict(d.terms), d.const
    raise TypeError(f"not a dim: {d!r}")


def _make(terms: dict, const: int) -> Dim:
    """The canonical dim of a polynomial: an int, a str, an Expr, or None when
    it has more than ``MAX_TERMS`` terms."""
    items = [(m, c) for m, c in terms.items() if c]
    if not items:
        return const
    if len(items) > MAX_TERMS:
        return None
    if len(items) == 1 and const == 0:
        (m, c), = items
        if c == 1 and len(m) == 1 and isinstance(m[0], str):
            return m[0]
    size = 1 + sum(1 + sum(1 if isinstance(a, str) else a.size for a in m) for m, _ in items)
    if size > MAX_SIZE:
        return None
    items.sort(key=lambda item: (-len(item[0]), _mono_key(item[0])))
    return Expr(tuple(items), const, size)


def _atom_dim(a: Atom) -> Dim:
    if isinstance(a, str):
        return a
    return None if a.size + 2 > MAX_SIZE else Expr((((a,), 1),), 0, a.size + 2)


# -- arithmetic ---------------------------------------------------------------
@functools.lru_cache(maxsize=CACHE_SIZE, typed=True)
def add(a: Dim, b: Dim) -> Dim:
    """``a + b``."""
    if a is None or b is None:
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    ta, ca = _poly(a)
    tb, cb = _poly(b)
    if len(ta) < len(tb):
        ta, tb = tb, ta
    for m, c in tb.items():
        ta[m] = ta.get(m, 0) + c
    return _make(ta, ca + cb)


def neg(a: Dim) -> Dim:
    """``-a``."""
    return mul(a, -1)


def sub(a: Dim, b: Dim) -> Dim:
    """``a - b``."""
    return add(a, neg(b))


@functools.lru_cache(maxsize=CACHE_SIZE, typed=True)
def mul(a: Dim, b: Dim) -> Dim:
    """``a * b`` (products of sums distribute)."""
    if a is None or b is None:
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    ta, ca = _poly(a)
    tb, cb = _poly(b)
    if (len(ta) + 1) * (len(tb) + 1) > 4 * MAX_TERMS:
        return None
    out: dict = {}
    for m, c in ta.items():
        if cb:
            out[m] = out.get(m, 0) + c * cb
    for m, c in tb.items():
        if ca:
            out[m] = out.get(m, 0) + c * ca
    for m1, c1 in ta.items():
        for m2, c2 in tb.items():
            m = tuple(sorted(m1 + m2, key=_atom_text))
            out[m] = out.get(m, 0) + c1 * c2
    return _make(out, ca * cb)


def total(dims: Iterable[Dim]) -> Dim:
    """The sum of ``dims`` (0 for none)."""
    out: Dim = 0
    for d in dims:
        out = add(out, d)
    return out


def product(dims: Iterable[Dim]) -> Dim:
    """The product of ``dims`` (1 for none)."""
    out: Dim = 1
    for d in dims:
        out = mul(out, d)
    return out


@functools.lru_cache(maxsize=CACHE_SIZE, typed=True)
def floordiv(a: Dim, k: Dim) -> Dim:
    """``a // k``, rounding toward negative infinity. None unless ``k`` is a
    positive int (or ``a`` and ``k`` are both ints, ``k != 0``)."""
    if a is None or not isinstance(k, int):
        return None
    if isinstance(a, int):
        return a // k if k else None
    if k <= 0:
        return None
    if k == 1:
        return a
    terms, const = _poly(a)
    pulled = {}
    rest = {}
    for m, c in terms.items():
        q, r = divmod(c, k)
        if q:
            pulled[m] = q
        if r:
            rest[m] = r
    q, r = divmod(const, k)
    if not rest:
        return _make(pulled, q)
    g = math.gcd(k, r, *rest.values())
    if g > 1:
        rest = {m: c // g for m, c in rest.items()}
        r //= g
        k //= g
    inner = [m for m, c in rest.items() if c == 1 and len(m) == 1 and isinstance(m[0], Call)
             and m[0].fn == "floordiv"]
    if len(inner) == 1 and k > 1:
        (m,) = inner
        p, b = m[0].args
        rem = dict(rest)
        del rem[m]
        merged = floordiv(add(p, mul(b, _make(rem, r))), b * k)
        return add(_make(pulled, q), merged)
    if k == 1:
        return _make({**pulled, **{m: pulled.get(m, 0) + c for m, c in rest.items()}}, q + r)
    numerator = _make(rest, r)
    if numerator is None:
        return None
    terms = dict(pulled)
    atom = (Call("floordiv", (numerator, k)),)
    terms[atom] = terms.get(atom, 0) + 1
    return _make(terms, q)


def divide_exactly(a: Dim, b: Dim) -> Dim:
    """``a / b`` when ``b`` divides every term of ``a`` as a monomial
    (``6*N*H // (2*N)`` is ``3*H``), else None. Only for a quotient known to
    be exact, such as reshape's -1: it does not floor."""
    if a is None or b is None or b == 0:
        return None
    if isinstance(b, int):
        terms, const = _poly(a)
        if const % b or any(c % b for c in terms.values()):
            return None
        return _make({m: c // b for m, c in terms.items()}, const // b)
    tb, cb = _poly(b)
    if cb or len(tb) != 1:
        return None
    (mb, kb), = tb.items()
    terms, const = _poly(a)
    if const:
        return None
    out = {}
    for m, c in terms.items():
        rest = list(m)
        for atom in mb:
            if atom not in rest:
                return None
            rest.remove(atom)
        if c % kb:
            return None
        out[tuple(rest)] = out.get(tuple(rest), 0) + c // kb
    const = out.pop((), 0)
    return _make(out, const)


def cache_clear() -> None:
    """Forget the memoized results (for benchmarks measuring the uncached cost)."""
    for fn in (add, mul, floordiv, _extremum, absolute, refine):
        fn.cache_clear()


def ceildiv(a: Dim, k: Dim) -> Dim:
    """``ceil(a / k)`` for a positive int ``k``: ``(a + k - 1) // k``."""
    if not isinstance(k, int) or k <= 0:
        return None
    return floordiv(add(a, k - 1), k)


def mod(a: Dim, k: Dim) -> Dim:
    """``a % k`` with the sign of ``k`` (Python, NumPy ``mod``); None unless
    ``k`` is a positive int (or both are ints, ``k != 0``)."""
    if isinstance(a, int) and isinstance(k, int):
        return a % k if k else None
    return sub(a, mul(k, floordiv(a, k)))


def is_nonnegative(d: Dim) -> bool:
    """Whether ``d >= 0`` is provable: an int >= 0, a symbol (a size), or a
    polynomial with non-negative coefficients and constant over
    non-negative atoms. False means "not proved", not "negative"."""
    if d is None:
        return False
    if isinstance(d, int):
        return d >= 0
    if isinstance(d, str):
        return True
    if d.const >= 0 and all(c > 0 and all(_atom_nonnegative(a) for a in m) for m, c in d.terms):
        return True
    return _floor_bound_nonnegative(d)


def _floor_bound_nonnegative(d: Expr) -> bool:
    """``d >= 0`` proved by bounding one term ``-m*g * (p//k)``, ``g`` the
    gcd of its coefficient and ``k``, below by ``-m * (p//(k/g))`` (``p//k``
    is ``(p//(k/g))//g`` and ``g * (q//g) <= q``), e.g. ``H - 2*(H//2)``
    (``H % 2``) or ``H//2 - 2*((H+2)//4) + 1``."""
    for m, c in d.terms:
        if len(m) == 1 and isinstance(m[0], Call) and m[0].fn == "floordiv" and c < 0:
            p, k = m[0].args
            g = math.gcd(c, k)
            if g == 1:
                continue
            terms, const = _poly(d)
            del terms[m]
            if is_nonnegative(add(_make(terms, const), mul(floordiv(p, k // g), c // g))):
                return True
    return False


def _atom_nonnegative(a: Atom) -> bool:
    if isinstance(a, str) or a.fn == "abs":
        return True
    if a.fn == "floordiv":
        return is_nonnegative(a.args[0])
    if a.fn == "max":
        return any(is_nonnegative(x) for x in a.args)
    return all(is_nonnegative(x) for x in a.args)  # min


def maximum(a: Dim, b: Dim) -> Dim:
    """``max(a, b)``."""
    return _extremum("max", a, b)


def minimum(a: Dim, b: Dim) -> Dim:
    """``min(a, b)``."""
    return _extremum("min", a, b)


@functools.lru_cache(maxsize=CACHE_SIZE, typed=True)
def _extremum(fn: str, a: Dim, b: Dim) -> Dim:
    if a is None or b is None:
        return None
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b) if fn == "max" else min(a, b)
    diff = sub(a, b)
    if diff is None:
        return None
    if is_nonnegative(diff):
        return a if fn == "max" else b
    if is_nonnegative(neg(diff)):
        return b if fn == "max" else a
    return _atom_dim(Call(fn, tuple(sorted((a, b), key=lambda d: (isinstance(d, int), format_dim(d))))))


@functools.lru_cache(maxsize=CACHE_SIZE, typed=True)
def absolute(a: Dim) -> Dim:
    """``abs(a)``."""
    if a is None:
        return None
    if isinstance(a, int):
        return abs(a)
    if is_nonnegative(a):
        return a
    negated = neg(a)
    if negated is None or is_nonnegative(negated):
        return negated
    terms, _ = _poly(a)
    first = min(terms, key=lambda m: (-len(m), _mono_key(m)))
    return _atom_dim(Call("abs", (negated if terms[first] < 0 else a,)))


# -- facts: sizes known to be at least some value ----------------------------
# ((key, value), ...) sorted: a symbol key ``s`` with an int means ``s >= value``; an
# expression key ``f`` (value 0) means ``f >= 0``. Hashable, for the memo.
Bounds = tuple


def lower_bounds(facts: Iterable[Dim], bounds: Bounds = ()) -> Bounds:
    """``bounds`` tightened by ``facts``, dims known to be >= 0 (the size of
    an axis, or what an op needs to be defined, such as ``H-3`` for a valid
    3x3 convolution). A fact with one symbol ``s`` that is nondecreasing in
    ``s`` (positive coefficients over symbols and floor divisions of such)
    gives the least ``s`` making it >= 0, e.g. ``H//2-4`` gives ``H >= 8``;
    another fact is kept as it is (``H-K >= 0`` for a kernel of symbolic
    size ``K``), so a dim that differs from it by a provably non-negative
    amount is non-negative."""
    least = dict(bounds)
    for f in facts:
        names = symbols(f)
        if f is None or is_nonnegative(f):
            continue
        if len(names) != 1 or not _nondecreasing(f):
            if isinstance(f, Expr):
                least[f] = 0
            continue
        (s,) = names
        lo, hi = least.get(s, 0), 1 << 62
        if evaluate(f, {s: lo}) >= 0:
            continue
        if evaluate(f, {s: hi}) < 0:
            continue  # never true for a size: no usable bound
        while hi - lo > 1:  # invariant: f(lo) < 0 <= f(hi)
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if evaluate(f, {s: mid}) < 0 else (lo, mid)
        least[s] = hi
    return tuple(sorted(((k, v) for k, v in least.items() if v > 0 or isinstance(k, Expr)),
                        key=lambda kv: (isinstance(kv[0], Expr), format_dim(kv[0]))))


def _nondecreasing(d: Dim) -> bool:
    if d is None:
        return False
    if isinstance(d, (int, str)):
        return True
    for m, c in d.terms:
        if c < 0 or not all(_atom_nondecreasing(a) for a in m):
            return False
        if len(m) > 1 and not all(_atom_nonnegative(a) for a in m):
            return False  # a product of nondecreasing factors is monotone only when they are >= 0
    return True


def _atom_nondecreasing(a: Atom) -> bool:
    if isinstance(a, str):
        return True
    if a.fn == "abs":
        return False
    return all(_nondecreasing(x) for x in a.args)


def nonnegative_given(d: Dim, bounds: Bounds) -> bool:
    """Whether ``d >= 0`` is provable when each symbol of ``bounds`` is at
    least its bound: ``is_nonnegative`` of ``d`` with ``s`` written
    ``s + bound`` (the new ``s`` being >= 0)."""
    if not bounds:
        return is_nonnegative(d)
    up = {s: add(s, v) for s, v in bounds if isinstance(s, str)}
    shifted = substitute(d, up) if up else d
    if is_nonnegative(shifted):
        return True
    return any(is_nonnegative(sub(shifted, substitute(f, up) if up else f)) for f, _ in bounds if isinstance(f, Expr))


@functools.lru_cache(maxsize=CACHE_SIZE, typed=True)
def refine(d: Dim, bounds: Bounds) -> Dim:
    """``d`` simplified where each symbol of ``bounds`` is at least its
    bound: ``abs``, ``max`` and ``min`` decided by ``nonnegative_given``
    (``abs(H-3)+1`` is ``H-2`` given ``H >= 3``). Equal to ``d`` wherever
    the bounds hold."""
    if not bounds or d is None or isinstance(d, (int, str)):
        return d
    return _map_atoms(d, lambda a: _refine_atom(a, bounds))


def _refine_atom(a: Atom, bounds: Bounds) -> Dim:
    if isinstance(a, str):
        return a
    args = [refine(x, bounds) for x in a.args]
    if a.fn == "abs":
        if nonnegative_given(args[0], bounds):
            return args[0]
        if nonnegative_given(neg(args[0]), bounds):
            return neg(args[0])
    elif a.fn in ("max", "min"):
        diff = sub(args[0], args[1])
        if nonnegative_given(diff, bounds):
            return args[0] if a.fn == "max" else args[1]
        if nonnegative_given(neg(diff), bounds):
            return args[1] if a.fn == "max" else args[0]
    return _CALLS[a.fn](*args)


# -- queries ------------------------------------------------------------------
def evaluate(d: Dim, sizes: Mapping[str, int]) -> int:
    """The value of ``d`` when each symbol has the size in ``sizes``.

    Raises:
        KeyError: a symbol of ``d`` has no size. ValueError: ``d`` is None.
    """
    if d is None:
        raise ValueError("an unknown dim has no value")
    if isinstance(d, int):
        return d
    if isinstance(d, str):
        return int(sizes[d])
    value = d.const
    for m, c in d.terms:
        term = c
        for a in m:
            term *= _evaluate_atom(a, sizes)
        value += term
    return value


def _evaluate_atom(a: Atom, sizes: Mapping[str, int]) -> int:
    if isinstance(a, str):
        return int(sizes[a])
    args = [evaluate(x, sizes) for x in a.args]
    return {"floordiv": lambda p, k: p // k, "max": max, "min": min, "abs": abs}[a.fn](*args)


def symbols(d: Dim) -> frozenset[str]:
    """The symbol names ``d`` depends on."""
    if d is None or isinstance(d, int):
        return frozenset()
    if isinstance(d, str):
        return frozenset((d,))
    out: set[str] = set()
    for m, _ in d.terms:
        for a in m:
            out |= {a} if isinstance(a, str) else frozenset().union(*(symbols(x) for x in a.args))
    return frozenset(out)


def substitute(d: Dim, mapping: Mapping[str, Dim]) -> Dim:
    """``d`` with each symbol in ``mapping`` replaced by its dim (a new name,
    an int that pins it, or an expression), simplified again."""
    if d is None or isinstance(d, int):
        return d
    if isinstance(d, str):
        return mapping.get(d, d)
    return _map_atoms(d, lambda a: _substitute_atom(a, mapping))


def _map_atoms(d, atom: Callable) -> Dim:
    """The polynomial ``d`` rebuilt with each atom ``a`` replaced by
    ``atom(a)``, simplified again."""
    out: Dim = d.const
    for m, c in d.terms:
        term: Dim = c
        for a in m:
            term = mul(term, atom(a))
        out = add(out, term)
    return out


_CALLS: dict[str, Callable] = {"floordiv": floordiv, "max": maximum, "min": minimum, "abs": absolute}


def _substitute_atom(a: Atom, mapping: Mapping[str, Dim]) -> Dim:
    if isinstance(a, str):
        return mapping.get(a, a)
    return _CALLS[a.fn](*(substitute(x, mapping) for x in a.args))


# -- text -----------------------------------------------------------------------
def format_dim(d: Dim) -> str:
    """The text of a dim: ``3``, ``N``, ``?`` (None) or an expression such as
    ``H//2-1``, ``N*C``, ``max(N-1,0)`` (no spaces, Python syntax)."""
    if d is None:
        return "?"
    return str(d)


def _call_text(fn: str, args: tuple) -> str:
    if fn == "floordiv":
        p, k = args
        bare = isinstance(p, str) or (not p.const and len(p.terms) == 1 and p.terms[0][1] == 1
                                      and len(p.terms[0][0]) == 1 and p.terms[0][0][0].fn != "floordiv")
        return f"{p}//{k}" if bare else f"({p})//{k}"
    return f"{fn}({','.join(format_dim(x) for x in args)})"


def _term_text(m: Monomial, c: int) -> str:
    wrap = len(m) > 1 or c != 1
    factors = [f"({a.text})" if wrap and isinstance(a, Call) and a.fn == "floordiv" else _atom_text(a) for a in m]
    body = "*".join(factors)
    if c == 1:
        return body
    if c == -1:
        return "-" + body
    return f"{c}*{body}"


def _expr_text(e: Expr) -> str:
    parts = [_term_text(m, c) for m, c in e.terms]
    if e.const:
        parts.append(str(e.const))
    text = parts[0]
    for p in parts[1:]:
        text += p if p.startswith("-") else "+" + p
    return text


_TOKEN = re.compile(r"\s*(?:(?P<int>\d+)|(?P<name>[A-Za-z_][A-Za-z0-9_.]*)|(?P<op>//|[-+*%(),?]))")


def parse_dim(text: str) -> Dim:
    """The dim ``text`` describes (what ``format_dim`` prints): an int, a
    symbol, ``?`` or an expression over ints and symbols with ``+ - * // %``,
    parentheses and ``max(a,b)``, ``min(a,b)``, ``abs(a)``.

    Raises:
        ValueError: bad syntax, a division by something other than a
            positive constant, or an expression too big (``MAX_TERMS``);
            the message gives the offset.
    """
    return _DimParser(text).parse()


class _DimParser:
    def __init__(self, text: str):
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                if text[pos:].strip() == "":
                    break
                raise ValueError(f"bad character {text[pos]!r} at offset {pos} in dim {text!r}")
            kind = m.lastgroup
            self.tokens.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.tokens.append(("eof", "", len(text)))
        self.i = 0

    def fail(self, why: str):
        raise ValueError(f"{why} at offset {self.tokens[self.i][2]} in dim {self.text!r}")

    def peek(self) -> str:
        return self.tokens[self.i][1]

    def take(self, text: str | None = None) -> tuple[str, str, int]:
        tok = self.tokens[self.i]
        if text is not None and tok[1] != text:
            self.fail(f"expected {text!r}, got {tok[1] or 'end of text'!r}")
        self.i += 1
        return tok

    def parse(self) -> Dim:
        if self.peek() == "?":
            self.take()
            out = None
        else:
            out = self.expr()
        if self.tokens[self.i][0] != "eof":
            self.fail(f"unexpected {self.peek()!r}")
        return out

    def checked(self, d: Dim) -> Dim:
        if d is None:
            self.fail("expression too big or division by a non-constant")
        return d

    def expr(self) -> Dim:
        out = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            rhs = self.term()
            out = self.checked(add(out, rhs) if op == "+" else sub(out, rhs))
        return out

    def term(self) -> Dim:
        out = self.unary()
        while self.peek() in ("*", "//", "%"):
            op = self.take()[1]
            rhs = self.unary()
            out = self.checked({"*": mul, "//": floordiv, "%": mod}[op](out, rhs))
        return out

    def unary(self) -> Dim:
        if self.peek() == "-":
            self.take()
            return self.checked(neg(self.unary()))
        return self.atom()

    def atom(self) -> Dim:
        kind, text, _ = self.take()
        if kind == "int":
            return int(text)
        if text == "(":
            out = self.expr()
            self.take(")")
            return out
        if kind == "name":
            if text in FUNCTIONS and self.peek() == "(":
                self.take("(")
                args = [self.expr()]
                while self.peek() == ",":
                    self.take()
                    args.append(self.expr())
                self.take(")")
                want = 1 if text == "abs" else 2
                if len(args) != want:
                    self.i -= 1
                    self.fail(f"{text} takes {want} argument(s), got {len(args)}")
                return self.checked({"max": maximum, "min": minimum, "abs": absolute}[text](*args))
            return text
        self.i -= 1
        self.fail(f"expected a number, a name or '(', got {text or 'end of text'!r}")
