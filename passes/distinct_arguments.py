"""``distinct-arguments``: a special function of constant data is evaluated
once per distinct data value.

A log-density applies special functions to the observed data shifted by a
parameter: ``gammaln(y + alpha)``, ``psi(n - y + beta)`` for counts ``y``.
Observations repeat (counts, categories, rounded measurements), so of
10,000 elements often a few dozen differ; the special function's body (a
few hundred ONNX nodes) then runs over every element for nothing.

For a call of a special function (``ir.ops.special.UNARY_SPECIAL``) whose
argument is computed by elementwise ops (the op's ``elementwise`` trait)
from constants and from values of one element (parameters), the argument
at position i depends only on the constants' elements at i. The pass finds
the distinct tuples of those elements (bit patterns, so -0.0, NaN payloads
and 0.0 stay apart), recomputes the argument from one representative per
tuple (the same ops on the same numbers: every element's value is
unchanged), calls the function on those m values and ``gather``s the
results back to the argument's shape with a constant index. It fires when
m is at most a quarter of the argument's size and the elementwise cone has
at most ``MAX_CONE`` nodes; the cone's original nodes stay for their other
readers (``dce`` removes the rest).

Before (``%y`` holds 10,000 counts with 21 distinct values)::

    %a: f64[10000] = add(%y, %alpha)      # %alpha: f64[]
    %g: f64[10000] = gammaln(%a)

After::

    %a1: f64[21] = add(%y_distinct, %alpha)
    %g1: f64[21] = gammaln(%a1)
    %g: f64[10000] = gather(%g1, %y_index) {axis=0}

Every nested graph is rewritten on its own (``ir.transforms.walk_scopes``).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np

from ir import Graph
from ir.core import Node, Value
from ir.opdef import ELEMENTWISE, get_op
from ir.ops.special import UNARY_SPECIAL
from ir.transforms import add_fresh_constant, walk_scopes
from passes.base import Pass, register_pass

MAX_CONE = 64  # elementwise nodes recomputed per call at most
MAX_FRACTION = 0.25  # distinct tuples / elements at most


def elementwise_cone(value: Value) -> tuple[list[Node], list[Value], list[Value]] | None:
    """``(nodes, data, scalars)``: the elementwise nodes computing ``value``
    (producers first), the constants of more than one element they read and
    the one-element values they read; None when another kind of value
    (an input or a non-elementwise result of several elements) is reached or
    the cone exceeds ``MAX_CONE`` nodes."""
    nodes: list[Node] = []
    data: dict[Value, None] = {}
    scalars: dict[Value, None] = {}
    seen: set[Node] = set()

    def visit(v: Value) -> bool:
        if v.type.size == 1:
            scalars[v] = None
            return True
        if v.const is not None:
            data[v] = None
            return True
        node = v.producer
        if node is None or len(node.outputs) != 1 or not get_op(node.op).has(ELEMENTWISE) or node.subgraphs:
            return False
        if node in seen:
            return True
        seen.add(node)
        if len(seen) > MAX_CONE or not all(visit(i) for i in node.inputs):
            return False
        nodes.append(node)
        return True

    if value.producer is None or not visit(value) or not data:
        return None
    return nodes, list(data), list(scalars)


def distinct_rows(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(first, inverse)`` of the rows formed by equal-length 1-D
    ``columns`` compared bit for bit: ``first`` the index of each distinct
    row's first occurrence (ascending), ``inverse`` each row's distinct row."""
    n = columns[0].size
    raw = np.concatenate([np.ascontiguousarray(c).view(np.uint8).reshape(n, -1) for c in columns], axis=1)
    keys = np.ascontiguousarray(raw).view(np.dtype((np.void, raw.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse.ravel()]


@register_pass
@dataclass(frozen=True)
class DistinctArguments(Pass):
    """Evaluate special functions of constant data once per distinct value (see the module doc)."""

    name = "distinct-arguments"
    visits_nested_graphs = True

    def run(self, graph: Graph) -> bool:
        if not graph.contains_op(*UNARY_SPECIAL):  # no node visited when absent, nested graphs included
            return False
        changed = False
        for g, reserved in walk_scopes(graph):  # each body on its own
            if not any(g.op_count(op) for op in UNARY_SPECIAL):
                continue
            for call in [n for n in g if n.op in UNARY_SPECIAL and (n.inputs[0].type.size or 0) > 1]:
                changed |= _rewrite(g, call, reserved)
        return changed


def _rewrite(graph: Graph, call: Node, reserved: AbstractSet[str]) -> bool:
    arg = call.inputs[0]
    cone = elementwise_cone(arg)
    if cone is None:
        return False
    nodes, data, scalars = cone
    shape = arg.type.shape
    columns = [np.broadcast_to(d.const, shape).reshape(-1) for d in data]
    first, inverse = distinct_rows(columns)
    if first.size > MAX_FRACTION * arg.type.size:
        return False
    env: dict[Value, Value] = {}
    for d, column in zip(data, columns):
        env[d] = add_fresh_constant(graph, column[first], f"{d.name}_distinct", reserved)
    for s in scalars:  # one element, any rank: a rank-0 value broadcasts against the flat [m]
        if s.type.rank == 0:
            env[s] = s
        elif s.const is not None:
            env[s] = add_fresh_constant(graph, s.const.reshape(()), f"{s.name}_scalar", reserved)
        else:
            shape0 = add_fresh_constant(graph, np.zeros(0, np.int64), "scalar_shape", reserved)
            env[s] = graph.add("reshape", [s, shape0], before=call)
    for node in nodes:
        clone = graph.create_node(node.op, [env[v] for v in node.inputs], dict(node.attrs))
        clone.origins = node.origins
        graph.insert_before(call, clone)
        env[node.outputs[0]] = clone.outputs[0]
    result = graph.add(call.op, [env[arg]], before=call)
    index = add_fresh_constant(graph, inverse.reshape(shape).astype(np.int64), f"{arg.name or 'arg'}_index", reserved)
    gathered = graph.add("gather", [result, index], {"axis": 0}, before=call)
    graph.replace_all_uses(call.outputs[0], gathered)
    graph.erase(call)
    return True
