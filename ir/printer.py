"""The IR text printer: ``print_graph(graph)`` gives the one text form of a
graph, which ``ir.parser.parse_graph`` reads back (print, parse, print gives
the same text).

The format, by example::

    graph @main(%x: f32[N,64], %n: i64[]) {
      const %w: f32[64,10] = base64"AAAA..."
      const %two: f32[] = 2.0
      const %sizes: i64[2] = [4, 6]
      %0: f32[N,10] = matmul(%x, %w)
      %a: f32[N,4], %b: f32[N,6] = split(%0, %sizes) {axis=1, num_outputs=2}
      %s: f32[N] = reduce_sum(%0) {axes=[1], keepdims=false}
      %l: f32[] = loop(%x) {n=3} (body: graph @body(%i: f32[]) {
        %z: f32[] = add(%i, %two)
        return %z
      })
      return %s, %a
    }

(``loop`` stands for any op carrying a nested graph; ``Node.subgraphs`` print
after the attributes, and a nested graph may read its enclosing graphs' values.)

Graph inputs and constants print their own names; every other value prints
its name hint (sanitized to ``[A-Za-z0-9_.]``) made unique within the whole
text by a ``_1``, ``_2`` suffix, or a number when it has no hint. Names are
made only here, as in JAX's jaxpr printer. A name that is not a plain token
prints as a quoted string (``%"a b"``). Constants of up to 16 elements print
as (nested) lists of shortest round-trip literals, empty ones as ``base64""``,
bigger ones as base64 of their little-endian C-order bytes (``full_weights=True``,
the default of ``print_graph``) or as a digest ``<64x64 f32 sha256:1a2b3c4d5e6f>``
(shape, dtype and the first 12 hex digits of the SHA-256 of those bytes), which
identifies the data without holding it: the form of the driver's history and
``dump_ir`` files unless full weights are asked for. The parser refuses a digest
(the data is not there).

The printer never fails on malformed IR (the verifier uses it to show the IR
around an error): unknown values are named where first seen.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ir.types import DType

if TYPE_CHECKING:  # annotations only: ir.core prints graphs with this module
    from ir.core import Graph, Node, Value

MAX_LITERAL_SIZE = 16  # constants with more elements print as base64 or a digest
DIGEST_HEX_DIGITS = 12  # SHA-256 prefix length of an abbreviated constant
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.]+")
_UNSAFE_CHAR = re.compile(r"[^A-Za-z0-9_.]")
INDENT = "  "


@dataclass
class PrintedIR:
    """A printed graph, with where things landed (used by the verifier to show
    the IR around an error).

    Attributes:
        lines: the text lines, without newlines.
        lines_of: Node -> its first line; Value -> the line defining it; Graph
            -> the line of its ``return``.
        names: Value -> its printed name (without ``%``).
    """

    lines: list[str] = field(default_factory=list)
    lines_of: dict[Any, int] = field(default_factory=dict)
    names: dict[Value, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The whole text, one line per entry of ``lines``, ending in a newline."""
        return "\n".join(self.lines) + "\n"


def print_graph(graph: Graph, *, full_weights: bool = True) -> str:
    """The text form of ``graph`` (ending in a newline). Linear in graph size
    (and in the constants' bytes).

    Args:
        graph: the graph to print.
        full_weights: constants over ``MAX_LITERAL_SIZE`` elements print as
            base64 (True: the text parses back) or as a digest
            ``<shape dtype sha256:prefix>`` (False: short, not parseable).
    """
    return format_graph(graph, full_weights=full_weights).text


def format_graph(graph: Graph, *, full_weights: bool = True) -> PrintedIR:
    """Print ``graph`` and record the line of every node, value and return
    (see ``PrintedIR``). Linear in graph size. ``full_weights`` as in
    ``print_graph``."""
    reserved: set[str] = set()
    _reserve_names(graph, reserved)
    printer = _Printer(reserved, full_weights)
    printer.emit(printer.graph(graph, "", ""))
    return printer.out


def value_name_token(name: str | None) -> str:
    """A name as printed after ``%`` or ``@``: itself when it is a plain token
    of ``[A-Za-z0-9_.]``, else a JSON-quoted string."""
    name = name or ""
    return name if _PLAIN_NAME.fullmatch(name) else json.dumps(name)


def format_attr(value: Any) -> str:
    """An attribute value as text: ``3``, ``1.0``, ``true``, ``"s"``, ``f32``,
    ``[1, 2]``. Unprintable values print as ``<...>``, which the parser rejects."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return _float_text(float(value), np.float64)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, DType):
        return value.value
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    return f"<{type(value).__name__} {value!r}>"


def format_literal(array: np.ndarray, *, full_weights: bool = True) -> str:
    """A constant's literal: a bare scalar, a nested list (1 to 16 elements),
    ``base64"..."`` of its little-endian C-order bytes (empty, or bigger with
    ``full_weights``), or else the digest ``<64x64 f32 sha256:1a2b3c4d5e6f>``."""
    if not isinstance(array, np.ndarray):
        return f"<not an array: {type(array).__name__}>"
    if 0 < array.size <= MAX_LITERAL_SIZE:
        flat = [_element_text(x, array.dtype) for x in array.reshape(-1)]
        return _nest(flat, array.shape)
    if not full_weights and array.size:
        return format_digest(array)
    little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return 'base64"' + base64.b64encode(little.tobytes()).decode("ascii") + '"'


def format_digest(array: np.ndarray) -> str:
    """``<64x64 f32 sha256:1a2b3c4d5e6f>``: the shape (``x``-separated, ``scalar``
    for 0-d), the IR dtype and a SHA-256 prefix of the little-endian C-order
    bytes of ``array``, which names the data without holding it."""
    little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    shape = "x".join(map(str, array.shape)) or "scalar"
    try:
        dtype = DType.from_numpy(array.dtype).value
    except TypeError:
        dtype = str(array.dtype)
    digest = hashlib.sha256(little.reshape(-1).view(np.uint8)).hexdigest()[:DIGEST_HEX_DIGITS]
    return f"<{shape} {dtype} sha256:{digest}>"


def _element_text(x, dtype: np.dtype) -> str:
    if dtype.kind == "b":
        return "true" if x else "false"
    if dtype.kind in "iu":
        return str(int(x))
    if dtype.kind == "f":
        return _float_text(x, dtype)
    return repr(x)


def _float_text(x, dtype) -> str:
    """Shortest text that reads back as the same ``dtype`` value; always with a
    ``.`` or exponent (``1.0``, ``1e-05``), or ``inf``/``-inf``/``nan``."""
    text = str(np.dtype(dtype).type(x))
    if text not in ("inf", "-inf", "nan") and not any(c in text for c in ".e"):
        text += ".0"
    return text


def _nest(flat: list[str], shape: tuple) -> str:
    if not shape:
        return flat[0]
    step = len(flat) // shape[0]
    return "[" + ", ".join(_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"


def _sanitize(hint: str) -> str:
    return _UNSAFE_CHAR.sub("_", hint)


def _reserve_names(graph: Graph, reserved: set[str]) -> None:
    """Add the names of the inputs and constants of ``graph`` and of every
    nested graph to ``reserved`` (node outputs must avoid them all)."""
    stack = [graph]
    while stack:
        g = stack.pop()
        reserved.update(v.name for v in g.inputs if v.name)
        reserved.update(v.name for v in g.constants.values() if v.name)
        for node in g:
            stack.extend(node.subgraphs.values())


class _Printer:
    """One printing: the name table and the output lines."""

    def __init__(self, reserved: set[str], full_weights: bool = True):
        self.full_weights = full_weights
        self.taken = set(reserved)
        self.next_suffix: dict[str, int] = {}
        self.next_number = 0
        self.out = PrintedIR()

    # -- names -------------------------------------------------------------
    def fixed(self, value: Value) -> str:
        """Print the own name of a graph input or constant."""
        self.out.names[value] = value.name or ""
        return "%" + value_name_token(value.name)

    def ref(self, value: Value) -> str:
        """``%name`` of ``value``, naming it now if it has no name yet."""
        name = self.out.names.get(value)
        if name is None:
            name = self._fresh(_sanitize(value.name) if value.name else None)
            self.out.names[value] = name
        return "%" + value_name_token(name)

    def _fresh(self, hint: str | None) -> str:
        # Each probe that fails hits a distinct taken name, so naming is linear.
        if hint is None:
            while str(self.next_number) in self.taken:
                self.next_number += 1
            name = str(self.next_number)
            self.next_number += 1
        elif hint not in self.taken:
            name = hint
        else:
            i = self.next_suffix.get(hint, 1)
            while f"{hint}_{i}" in self.taken:
                i += 1
            name = f"{hint}_{i}"
            self.next_suffix[hint] = i + 1
        self.taken.add(name)
        return name

    # -- lines -------------------------------------------------------------
    def emit(self, line: str, *anchors) -> None:
        for a in anchors:
            self.out.lines_of[a] = len(self.out.lines)
        self.out.lines.append(line)

    def graph(self, graph: Graph, prefix: str, indent: str) -> str:
        """Emit ``graph`` with its header after ``prefix`` (the text already on
        the current line) and its body one level deeper than ``indent``.
        Returns its closing line (``indent}``), left for the caller to finish."""
        inputs = ", ".join(f"{self.fixed(v)}: {v.type}" for v in graph.inputs)
        self.emit(f"{prefix}graph @{value_name_token(graph.name)}({inputs}) {{", *graph.inputs)
        inner = indent + INDENT
        for value in graph.constants.values():
            self.emit(f"{inner}const {self.fixed(value)}: {value.type} = {format_literal(value.const, full_weights=self.full_weights)}", value)
        for node in graph:
            self.node(node, inner)
        returned = ", ".join(self.ref(v) for v in graph.outputs)
        self.emit(f"{inner}return{' ' if returned else ''}{returned}", graph)
        return f"{indent}}}"

    def node(self, node: Node, indent: str) -> None:
        outs = ", ".join(f"{self.ref(v)}: {v.type}" for v in node.outputs)
        args = ", ".join(self.ref(v) for v in node.inputs)
        line = f"{indent}{outs + ' = ' if outs else ''}{node.op}({args})"
        if node.attrs:
            line += " {" + ", ".join(f"{k}={format_attr(v)}" for k, v in node.attrs.items()) + "}"
        if not node.subgraphs:
            self.emit(line, node, *node.outputs)
            return
        first = len(self.out.lines)
        closing = line + " ("
        for k, (role, sub) in enumerate(node.subgraphs.items()):
            closing = self.graph(sub, f"{closing}{', ' if k else ''}{value_name_token(role)}: ", indent)
        self.emit(closing + ")")
        self.out.lines_of[node] = first
        for v in node.outputs:
            self.out.lines_of[v] = first
