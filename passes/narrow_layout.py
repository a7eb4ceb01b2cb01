"""``narrow-layout``: computations on ``[N, k]`` tensors with a small last
axis k run on their transpose ``[k, N]``.

onnxruntime's CPU kernels broadcast one innermost span at a time: ``[N, 2] -
[2]`` or ``where([N, 1], [N, 2], [N, 2])`` are N calls on spans of 2 or 1
elements (measured at N = 10,000 float64: Sub 119 us against 10 us for
``[2, N] - [2, 1]``, Where 348 us against 50). Such shapes are what a
mixture model's log-density and gradient are made of (observations by
components). This pass rewrites, in graph order, every node whose result is
narrow (rank 2, last dim static and at most ``MAX_K``, first dim symbolic or
at least ``MIN_N``), that it knows how to transpose, and where that pays:
an elementwise op that broadcasts an input of rank >= 1 (the slow case), or
any of the ops below whose rank-2 inputs are already available transposed
(constants, values the pass rewrote), so no new transpose is needed:

* elementwise ops (the ``elementwise`` trait): rank-2 inputs transposed,
  rank-1 inputs (which broadcast along the last axis) unsqueezed to
  ``[k, 1]``, scalars as they are;
* ``reduce_*`` of a narrow input (whatever its result): axes swapped;
* ``unsqueeze`` of ``[N]`` to ``[N, 1]``: unsqueeze to ``[1, N]``;
* ``slice`` of a narrow input: axes swapped; ``expand`` to a constant shape:
  the shape reversed.
* ``gather`` along the last axis of a narrow input by a vector or scalar of
  indices, whatever its result (``a[:, county]`` of a batch of parameter
  vectors): a gather of rows, each N contiguous elements, where
  onnxruntime's gather along the last axis copies one element at a time
  (measured at N = 1,024, k = 10, 100 indices, float64: 767 us against
  122 us with both transposes).

Each rewritten node is followed by a ``transpose`` back, which the next
rewritten reader cancels (``transpose(transpose(x))`` is x); a constant is
read through a ``transpose``/``unsqueeze`` node (onnxruntime folds it when
the session loads), so initializers keep their names (baked shared variables). Values leave the rewritten region through one
transpose. Elementwise results are unchanged; a reduction combines the
same values, but its summation order may differ where the engine's order
depends on the layout (a sum over both axes; NumPy's sum of ``[N, k]`` over
axis 0 also gives the sign of a zero sum differently), a difference within
the rounding of the sum.

Before::

    %d: f64[N,2] = sub(%y, %mu)          # %y: f64[N,2] constant, %mu: f64[2]
    %s: f64[N] = reduce_sum(%d) {axes=[1], keepdims=false}

After::

    %m: f64[2,1] = unsqueeze(%mu) {axes=[1]}
    %yt: f64[2,N] = transpose(%y) {perm=[1, 0]}
    %d2: f64[2,N] = sub(%yt, %m)
    %s: f64[N] = reduce_sum(%d2) {axes=[0], keepdims=false}

Every nested graph is rewritten on its own (``ir.transforms.walk_scopes``).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np

from ir import Graph
from ir.core import Node, Value
from ir.opdef import ELEMENTWISE, get_op
from ir.transforms import add_fresh_constant, walk_scopes
from ir.types import TensorType
from passes.base import Pass, register_pass

MAX_K = 16
MIN_N = 64
REDUCTIONS = frozenset({"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_all", "reduce_any"})


def narrow(t: TensorType) -> bool:
    """Rank 2, last dim static and at most ``MAX_K``, first dim symbolic or at least ``MIN_N``."""
    shape = t.shape
    if len(shape) != 2 or type(shape[1]) is not int or shape[1] > MAX_K:
        return False
    return type(shape[0]) is not int or shape[0] >= MIN_N


_ELEMENTWISE: dict[str, bool] = {}  # op name -> whether it has the elementwise trait


def elementwise(op: str) -> bool:
    """Whether ``op`` has the ``elementwise`` trait (read once per op name)."""
    got = _ELEMENTWISE.get(op)
    if got is None:
        got = _ELEMENTWISE[op] = get_op(op).has(ELEMENTWISE)
    return got


def broadcasts(node: Node) -> bool:
    """An elementwise node with a narrow result that broadcasts an input of
    rank >= 1 (the slow span-by-span case; a rank-0 input is fast)."""
    out = node.outputs[0]
    shape = out.type.shape
    return narrow(out.type) and elementwise(node.op) and \
        any(v.type.shape and v.type.shape != shape for v in node._inputs)


@register_pass
@dataclass(frozen=True)
class NarrowLayout(Pass):
    """Run ``[N, k]`` computations with small k as ``[k, N]`` (see the module doc)."""

    name = "narrow-layout"
    visits_nested_graphs = True

    def run(self, graph: Graph) -> bool:
        changed = False
        for g, reserved in walk_scopes(graph):  # each body on its own
            rewriter = _Rewriter(g, reserved)
            for node in g.nodes:
                if not node.subgraphs and len(node.outputs) == 1:
                    rewriter.visit(node)
            changed |= rewriter.changed
        return changed


class _Rewriter:
    def __init__(self, graph: Graph, reserved: AbstractSet[str]):
        self.graph = graph
        self.changed = False
        self.reserved = reserved  # the names new constants avoid (nested and enclosing graphs')
        self.memo: dict[Value, Value] = {}

    def visit(self, node: Node) -> None:
        out, op = node.outputs[0], node.op
        if op in REDUCTIONS and node.inputs[0].rank == 2 and narrow(node.inputs[0].type) \
                and self.free(node.inputs[0]):
            axes = node.attrs["axes"] or (0, 1)
            attrs = dict(node.attrs, axes=sorted(1 - (a % 2) for a in axes))
            self.replace(node, [self.flip(node.inputs[0], node)], attrs, transposed=bool(node.attrs["keepdims"]))
        elif op == "gather" and node.attrs["axis"] % 2 == 1 and node.inputs[0].rank == 2 \
                and narrow(node.inputs[0].type) and node.inputs[1].rank <= 1:
            self.replace(node, [self.flip(node.inputs[0], node), node.inputs[1]], dict(node.attrs, axis=0),
                         transposed=node.inputs[1].rank == 1)
        elif not narrow(out.type):
            return
        elif elementwise(op) and self.pays(node):
            self.replace(node, [self.flip(v, node) for v in node.inputs], dict(node.attrs))
        elif op == "unsqueeze" and node.inputs[0].rank == 1 and list(node.attrs["axes"]) in ([1], [-1]) \
                and any(broadcasts(use.node) for use in out.uses()):
            self.replace(node, list(node.inputs), dict(node.attrs, axes=[0]))
        elif op == "slice" and narrow(node.inputs[0].type) and self.free(node.inputs[0]):
            axes = [1 - (a % 2) for a in node.attrs["axes"]]
            self.replace(node, [self.flip(node.inputs[0], node), *node.inputs[1:]], dict(node.attrs, axes=axes))
        elif op == "expand" and node.inputs[1].const is not None and node.inputs[0].rank <= 2 \
                and self.free(node.inputs[0]):
            shape = self.constant(node.inputs[1].const[::-1].copy(), "expand_shape")
            self.replace(node, [self.flip(node.inputs[0], node), shape], dict(node.attrs))

    def pays(self, node: Node) -> bool:
        """For an elementwise node with a narrow result: whether every input
        has rank <= 2 and the node ``broadcasts`` or all its inputs are
        ``free`` (one loop over the inputs)."""
        shape = node.outputs[0].type.shape
        broadcast, free = False, True
        for v in node._inputs:
            s = v.type.shape
            if len(s) > 2:
                return False
            if s and s != shape:
                broadcast = True
            elif free and not self.free(v):
                free = False
        return broadcast or free

    def replace(self, node: Node, inputs: list[Value], attrs: dict, transposed: bool = True) -> None:
        clone = self.graph.create_node(node.op, inputs, attrs)
        clone.origins = node.origins
        self.graph.insert_before(node, clone)
        result = clone.outputs[0]
        if transposed:
            result = self.graph.add("transpose", [result], {"perm": [1, 0]}, before=node)
        self.graph.replace_all_uses(node.outputs[0], result)
        self.graph.erase(node)
        self.changed = True

    def free(self, v: Value) -> bool:
        """Whether v is available in the transposed layout without a new
        transpose of a computed rank-2 value (scalars, rank 1, constants,
        values this pass or the graph already transposed)."""
        return len(v.type.shape) < 2 or v.const is not None or v in self.memo or \
            (v.producer is not None and v.producer.op == "transpose")

    def flip(self, v: Value, before: Node) -> Value:
        """v in the transposed layout: rank 2 transposed, rank 1 as ``[k, 1]``, rank 0 as is."""
        if v.rank == 0:
            return v
        if v in self.memo:
            return self.memo[v]
        if v.rank == 2 and v.producer is not None and v.producer.op == "transpose":
            flipped = v.producer.inputs[0]
        elif v.rank == 2:
            flipped = self.graph.add("transpose", [v], {"perm": [1, 0]}, before=before)
        else:
            flipped = self.graph.add("unsqueeze", [v], {"axes": [1]}, before=before)
        self.memo[v] = flipped
        return flipped

    def constant(self, array: np.ndarray, name: str) -> Value:
        return add_fresh_constant(self.graph, array, name, self.reserved)
