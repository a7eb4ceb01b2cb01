"""The IR text parser: ``parse_graph(text)`` reads the form ``ir.printer``
prints (see its docstring for the format) and builds the graph through the
public API (``add_input``, ``add_constant``, ``create_node`` + ``append``,
``set_outputs``).

Declared output types are used as given, not re-inferred, so malformed IR can
be written as text for verifier tests; names that are undefined or defined
twice are parse errors. Whitespace and newlines are insignificant; ``#``
starts a comment running to the end of the line.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import re
from typing import Any, NamedTuple

import numpy as np

from ir.core import Graph, Value
from ir.errors import IRParseError
from ir.opdef import OpError
from ir.symbolic import parse_dim
from ir.types import Dim, DType, TensorType


class Token(NamedTuple):
    """One token: its kind, its text and its offset in the source."""

    kind: str  # number, ident, string, value, gname, b64, digest, punct, op, eof
    text: str
    pos: int


_QUOTED = r'"(?:[^"\\\n]|\\.)*"'
_TOKEN = re.compile(rf"""
    (?P<ws>(?:[ \t\r\n]+|\#[^\n]*)+)
  | (?P<b64>base64"[A-Za-z0-9+/=]*")
  | (?P<digest><[^<>\n]*>)
  | (?P<value>%(?:[A-Za-z0-9_.]+|{_QUOTED}))
  | (?P<gname>@(?:[A-Za-z0-9_.]+|{_QUOTED}))
  | (?P<number>[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf\b|nan\b))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<string>{_QUOTED})
  | (?P<punct>[()\[\]{{}},:=?])
  | (?P<op>//|[*%+-])
  | (?P<bad>.)
""", re.VERBOSE | re.DOTALL)
_INT = re.compile(r"[+-]?\d+")
_KIND_NAMES = {"eof": "end of text", "gname": "a graph name @name", "value": "a value %name",
               "ident": "a name"}
_DTYPES = {d.value: d for d in DType}


def parse_graph(text: str) -> Graph:
    """Build the ``Graph`` that ``text`` describes.

    Raises:
        IRParseError: bad syntax, an unknown dtype or op, attributes the op's
            schema rejects, a name used before it is defined or defined twice,
            or a constant literal that does not fit its declared type.
    """
    return _Parser(text).parse()


def parse_type(text: str) -> TensorType:
    """The ``TensorType`` that ``text`` (``f32[N,?,3]``) describes; IRParseError if malformed."""
    p = _Parser(text)
    t = p.type()
    p.expect_kind("eof")
    return t


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.tokens = self._tokenize()
        self.i = 0
        self.scopes: list[dict[str, Value]] = []

    # -- tokens ------------------------------------------------------------
    def _tokenize(self) -> list[Token]:
        tokens = []
        for m in _TOKEN.finditer(self.text):
            kind = m.lastgroup
            if kind == "bad":
                self.fail(f"unexpected character {m.group()!r}", m.start())
            if kind != "ws":
                tokens.append(Token(kind, m.group(), m.start()))
        tokens.append(Token("eof", "", len(self.text)))
        return tokens

    def fail(self, message: str, pos: int | None = None):
        if pos is None:
            pos = self.tokens[self.i].pos
        line = bisect.bisect_right(self.line_starts, pos) - 1
        column = pos - self.line_starts[line] + 1
        start = self.line_starts[line]
        end = self.text.find("\n", start)
        source = self.text[start:end if end >= 0 else None]
        raise IRParseError(f"line {line + 1}:{column}: {message}\n  {source}\n  {' ' * (column - 1)}^",
                           line + 1, column)

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def next(self) -> Token:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def at(self, text: str) -> bool:
        t = self.tok
        return t.text == text and t.kind in ("punct", "ident")

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str) -> Token:
        if not self.at(text):
            self.fail(f"expected {text!r}, got {self._describe()}")
        return self.next()

    def expect_kind(self, kind: str) -> Token:
        if self.tok.kind != kind:
            self.fail(f"expected {_KIND_NAMES.get(kind, kind)}, got {self._describe()}")
        return self.next()

    def _describe(self) -> str:
        t = self.tok
        return "end of text" if t.kind == "eof" else repr(t.text)

    def name_of(self, token: Token) -> str:
        """The name in a ``%name``/``@name`` token (quoted names unescaped)."""
        body = token.text[1:]
        return self.unquote(body, token.pos + 1) if body.startswith('"') else body

    def unquote(self, quoted: str, pos: int) -> str:
        """The string a JSON-quoted literal stands for."""
        try:
            return json.loads(quoted)
        except ValueError as e:
            self.fail(f"bad string literal: {e}", pos)

    # -- grammar -----------------------------------------------------------
    def parse(self) -> Graph:
        graph = self.graph()
        self.expect_kind("eof")
        return graph

    def graph(self) -> Graph:
        """``graph @name(%in: type, ...) { statements return values }``"""
        self.expect("graph")
        graph = Graph(self.name_of(self.expect_kind("gname")))
        self.scopes.append({})
        self.expect("(")
        if not self.at(")"):
            while True:
                token = self.expect_kind("value")
                self.expect(":")
                self.define(token, graph.add_input(self.type(), self.name_of(token)))
                if not self.accept(","):
                    break
        self.expect(")")
        self.expect("{")
        while not self.at("return"):
            if self.at("const"):
                self.constant(graph)
            else:
                self.node(graph)
        self.next()
        outputs = []
        if self.tok.kind == "value":
            outputs.append(self.use())
            while self.accept(","):
                outputs.append(self.use())
        graph.set_outputs(outputs)
        self.expect("}")
        self.scopes.pop()
        return graph

    def define(self, token: Token, value: Value) -> None:
        name = self.name_of(token)
        if any(name in scope for scope in self.scopes):
            self.fail(f"%{name} is already defined", token.pos)
        self.scopes[-1][name] = value

    def use(self) -> Value:
        token = self.expect_kind("value")
        name = self.name_of(token)
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        self.fail(f"%{name} is not defined", token.pos)

    def type(self) -> TensorType:
        """``dtype[dim, ...]`` with dims an int, a symbol, an expression or ``?``."""
        token = self.expect_kind("ident")
        dtype = _DTYPES.get(token.text)
        if dtype is None:
            self.fail(f"unknown dtype {token.text!r} (known: {', '.join(_DTYPES)})", token.pos)
        self.expect("[")
        dims: list[Dim] = []
        if not self.at("]"):
            while True:
                dims.append(self.dim())
                if not self.accept(","):
                    break
        self.expect("]")
        return TensorType(dtype, tuple(dims))

    def dim(self) -> Dim:
        """A dim: a size, a symbol, ``?`` or an expression such as ``(H+1)//2-1``
        or ``max(N-1,0)`` (``ir.symbolic.parse_dim`` reads its text)."""
        start, depth = self.tok, 0
        while True:
            t = self.tok
            if t.kind == "punct" and t.text == "(":
                depth += 1
            elif t.kind == "punct" and t.text == ")" and depth:
                depth -= 1
            elif not (t.kind in ("ident", "op") or (t.kind == "number" and _INT.fullmatch(t.text))
                      or (t.kind == "punct" and (t.text == "?" or (t.text == "," and depth)))):
                break
            self.i += 1
        text = self.text[start.pos:self.tok.pos]
        try:
            d = parse_dim(text)
        except ValueError:
            d = -1
        if isinstance(d, int) and d < 0 or not text:
            self.fail(f"expected a dim (size, symbol, expression or ?), got {text.strip() or self._describe()!r}",
                      start.pos)
        return d

    def constant(self, graph: Graph) -> None:
        """``const %name: type = literal``"""
        self.expect("const")
        token = self.expect_kind("value")
        self.expect(":")
        t = self.type()
        self.expect("=")
        array = self.literal(t)
        name = self.name_of(token)
        self.define(token, graph.add_constant(array, name, t))

    def literal(self, t: TensorType) -> np.ndarray:
        dtype = t.dtype.numpy
        start = self.tok
        if start.kind == "b64":
            if not t.is_static:
                self.fail(f"a base64 constant needs a static type, got {t}", start.pos)
            self.next()
            try:
                raw = base64.b64decode(start.text[7:-1], validate=True)
            except (binascii.Error, ValueError) as e:
                self.fail(f"bad base64 data: {e}", start.pos)
            if len(raw) != t.size * dtype.itemsize:
                self.fail(f"base64 data has {len(raw)} bytes, {t} needs {t.size * dtype.itemsize}", start.pos)
            return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(t.shape)
        if start.kind == "digest":
            self.fail(f"constant {start.text} is abbreviated to a digest, which does not hold its data; "
                      "print the graph with full_weights=True (compile_to_onnx(..., full_weights=True)) "
                      "to get text that parses", start.pos)
        nested = self.element_list(t.dtype)
        try:
            return np.array(nested, dtype=dtype)
        except (ValueError, OverflowError) as e:
            self.fail(f"literal does not fit {t}: {e}", start.pos)

    def element_list(self, dtype: DType) -> Any:
        """A scalar or a nested list of scalars of ``dtype``."""
        if self.accept("["):
            items = []
            if not self.at("]"):
                while True:
                    items.append(self.element_list(dtype))
                    if not self.accept(","):
                        break
            self.expect("]")
            return items
        token = self.tok
        value = self.scalar()
        kind = dtype.numpy.kind
        if (kind == "b") != isinstance(value, bool) or (kind in "iu" and not isinstance(value, int)):
            self.fail(f"{token.text!r} is not a {dtype} value", token.pos)
        return value

    def scalar(self) -> Any:
        """An int, float (``1.0``, ``1e-05``, ``inf``, ``nan``) or bool (``true``/``false``)."""
        t = self.next()
        if t.kind == "number":
            return int(t.text) if _INT.fullmatch(t.text) else float(t.text)
        if t.kind == "ident" and t.text in ("true", "false"):
            return t.text == "true"
        self.fail(f"expected a number, true or false, got {t.text!r}", t.pos)

    def node(self, graph: Graph) -> None:
        """``%a: type, ... = op(%x, ...) {attr=value, ...} (role: graph ..., ...)``"""
        outs: list[tuple[Token, TensorType]] = []
        if self.tok.kind == "value":
            while True:
                token = self.expect_kind("value")
                self.expect(":")
                outs.append((token, self.type()))
                if not self.accept(","):
                    break
            self.expect("=")
        op = self.expect_kind("ident")
        self.expect("(")
        inputs = []
        if not self.at(")"):
            while True:
                inputs.append(self.use())
                if not self.accept(","):
                    break
        self.expect(")")
        attrs = self.attributes() if self.at("{") else {}
        subgraphs = self.subgraphs() if self.at("(") else {}
        try:
            node = graph.create_node(op.text, inputs, attrs, [t for _, t in outs],
                                     output_names=[self.name_of(tok) for tok, _ in outs], subgraphs=subgraphs)
        except (KeyError, OpError) as e:
            self.fail(str(e.args[0]), op.pos)
        graph.append(node)
        for (token, _), value in zip(outs, node.outputs):
            self.define(token, value)

    def attributes(self) -> dict[str, Any]:
        self.expect("{")
        attrs: dict[str, Any] = {}
        if not self.at("}"):
            while True:
                key = self.expect_kind("ident")
                if key.text in attrs:
                    self.fail(f"attribute {key.text} given twice", key.pos)
                self.expect("=")
                attrs[key.text] = self.attr_value()
                if not self.accept(","):
                    break
        self.expect("}")
        return attrs

    def attr_value(self) -> Any:
        t = self.tok
        if t.kind == "string":
            self.next()
            return self.unquote(t.text, t.pos)
        if t.kind == "ident" and t.text in _DTYPES:
            self.next()
            return _DTYPES[t.text]
        if self.accept("["):
            items = []
            if not self.at("]"):
                while True:
                    items.append(self.attr_value())
                    if not self.accept(","):
                        break
            self.expect("]")
            return items
        return self.scalar()

    def subgraphs(self) -> dict[str, Graph]:
        self.expect("(")
        subgraphs: dict[str, Graph] = {}
        while True:
            t = self.next()
            if t.kind not in ("ident", "string"):
                self.fail(f"expected a subgraph role, got {t.text!r}", t.pos)
            role = self.unquote(t.text, t.pos) if t.kind == "string" else t.text
            if role in subgraphs:
                self.fail(f"subgraph {role} given twice", t.pos)
            self.expect(":")
            subgraphs[role] = self.graph()
            if not self.accept(","):
                break
        self.expect(")")
        return subgraphs
