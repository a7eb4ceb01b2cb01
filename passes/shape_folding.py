"""``shape-folding``: shape arithmetic whose result the types determine
becomes a constant; a shape vector built piece by piece becomes the
fewest pieces.

Run after ``shape-inference`` (which makes the types precise). Rules, in
one forward walk with the contents of ``passes.shape_facts``:

1. an integer scalar or vector whose every element is known is a constant
   (``shape``, ``gather``, ``concat``, arithmetic... of static dims)::

       %s: i64[2] = shape(%x)                 (%x: f32[N,3])
       %c: i64[] = gather(%s, %one) {axis=0}   ->  const %c: i64[] = 3

2. a ``concat`` building an ``i64`` vector whose elements are static or dims
   of values defined before it is rebuilt from runs: a run of ints is one
   constant, a run of consecutive dims of one value is ``shape`` of it (or a
   ``slice`` of that), when that needs fewer pieces than the concat has::

       %s: i64[3] = shape(%x)                 (%x: f32[N,C,4])
       %n: i64[] = gather(%s, %zero) {axis=0}
       %c: i64[] = gather(%s, %one) {axis=0}
       %u: i64[1] = unsqueeze(%n) {axes=[0]}
       %v: i64[1] = unsqueeze(%c) {axes=[0]}
       %t: i64[3] = concat(%u, %v, %minus_one) {axis=0}
                     ->   %shape: i64[3] = shape(%x)
                          %dims: i64[2] = slice(%shape, %0, %2, %1) {axes=[0]}
                          %t: i64[3] = concat(%dims, %minus_one) {axis=0}

   Dims with no source before the concat, and expressions, keep the concat
   as it is. With dynamic dims the computation stays at run time, as small
   as this makes it (``shape(x)[0]`` feeding a reshape stays a Shape and a
   Gather).

Nodes left unused are removed by ``dce``. Every nested graph is folded on
its own (``ir.transforms.walk_scopes``: a body's inputs have no known
contents). Linear in graph size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ir import Graph, Node, Value
from ir.transforms import add_fresh_constant, walk_scopes
from ir.types import DType
from passes.base import TYPES, Pass, register_pass
from passes.shape_facts import ShapeValues, is_static, tracked


@register_pass
@dataclass(frozen=True)
class ShapeFolding(Pass):
    """Fold and shrink shape arithmetic (see the module docstring); ``run``
    returns True if the graph changed."""

    name = "shape-folding"
    after = ("shape-inference",)  # folds what the inferred types determine
    requires = (TYPES,)
    visits_nested_graphs = True

    def run(self, graph: Graph) -> bool:
        changed = False
        for g, reserved in walk_scopes(graph):  # each body on its own: its inputs' contents are unknown
            changed |= _fold_graph(g, reserved)
        return changed


def _fold_graph(graph: Graph, reserved) -> bool:
    """Rules 1 and 2 in one graph (not its nested graphs); new constants
    avoid ``reserved``."""
    values = ShapeValues()
    sources: dict = {}  # symbolic dim -> (value, axis): the first value defined with it
    # Only rule 2 reads the sources, and only on a concat: none, none to collect (folding makes no concat).
    concats = graph.op_count("concat") > 0
    changed = False
    if concats:
        for v in graph.inputs:
            _add_sources(sources, v)
    for node in graph:
        values.update(node)
        if node.subgraphs:
            continue
        if _fold(graph, node, values, reserved):
            changed = True
            continue
        if not concats:
            continue
        if node.op == "concat" and _rebuild(graph, node, values, sources, reserved):
            changed = True
        for out in node.outputs:
            _add_sources(sources, out)
    return changed


def _add_sources(sources: dict, value: Value) -> None:
    for axis, d in enumerate(value.shape):
        if d is not None and not isinstance(d, int):
            sources.setdefault(d, (value, axis))


def _fold(graph: Graph, node: Node, values: ShapeValues, reserved: set[str]) -> bool:
    """Rule 1: replace outputs with fully known contents by constants."""
    folded = False
    for out in node.outputs:
        content = values.known.get(out)
        if not is_static(content) or not (out.num_uses or graph.is_output(out)):
            continue
        array = np.array(content, dtype=out.dtype.numpy).reshape(out.shape)
        const = add_fresh_constant(graph, array, out.name or node.op, reserved)
        graph.replace_all_uses(out, const)
        folded = True
    if folded and not any(out.num_uses or graph.is_output(out) for out in node.outputs):
        graph.erase(node)
    return folded


def _rebuild(graph: Graph, node: Node, values: ShapeValues, sources: dict, reserved: set[str]) -> bool:
    """Rule 2: rebuild a partially static i64 shape vector from runs."""
    out = node.output
    content = values.known.get(out)
    if out.dtype != DType.INT64 or not tracked(out.type) or out.rank != 1 or content is None:
        return False
    pieces: list[tuple] = []  # ("const", [ints]) or ("dims", value, first axis, last axis)
    for d in content:
        if isinstance(d, int):
            if pieces and pieces[-1][0] == "const":
                pieces[-1][1].append(d)
            else:
                pieces.append(("const", [d]))
            continue
        source = sources.get(d)
        if source is None:
            return False
        value, axis = source
        last = pieces[-1] if pieces else None
        if last is not None and last[0] == "dims" and last[1] is value and last[3] == axis - 1:
            pieces[-1] = ("dims", value, last[2], axis)
        else:
            pieces.append(("dims", value, axis, axis))
    if len(pieces) >= len(node.inputs):
        return False
    consts = {tuple(v.const.tolist()): v for v in node.inputs if v.const is not None and v.rank == 1}
    inputs = [_piece(graph, node, p, consts, reserved) for p in pieces]
    new = inputs[0] if len(inputs) == 1 else _insert(graph, node, "concat", inputs, {"axis": 0}, out.name)
    graph.replace_all_uses(out, new)
    graph.erase(node)
    values.known[new] = content
    return True


def _piece(graph: Graph, node: Node, piece: tuple, consts: dict, reserved: set[str]) -> Value:
    """The value of one piece: a constant (the concat's own when it has one
    equal), or ``shape`` of the source value, sliced unless whole."""
    if piece[0] == "const":
        known = consts.get(tuple(piece[1]))
        return known if known is not None else add_fresh_constant(graph, np.array(piece[1], dtype=np.int64), "dims",
                                                                  reserved)
    _, value, first, last = piece
    shape = _insert(graph, node, "shape", [value], None, "shape")
    if first == 0 and last == value.rank - 1:
        return shape
    bounds = [add_fresh_constant(graph, np.array([b], dtype=np.int64), "bound", reserved) for b in (first, last + 1, 1)]
    return _insert(graph, node, "slice", [shape, *bounds], {"axes": [0]}, "dims")


def _insert(graph: Graph, anchor: Node, op: str, inputs, attrs, name: str | None) -> Value:
    new = graph.create_node(op, inputs, attrs, output_names=[name])
    new.origins = anchor.origins
    graph.insert_before(anchor, new)
    return new.output

