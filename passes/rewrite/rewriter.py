"""What a rewrite may do besides returning its replacement: the
``Rewriter`` (create nodes and constants before the matched root, state the
size facts the replacement needs), the test a replacement's type must pass
(``refines``) and the erasure of what a rewrite left dead (``erase_dead``).

A rewrite that is exact only where some sizes are large enough, and whose
replacement fails at run time elsewhere (a valid ONNX Conv needs the image
to cover the kernel), states it with ``rw.assume(H - 3)``: the
replacement's type is compared with the root's under that fact, and when
the rule fires every type of the graph is refined by it
(``ir.transforms.refine_types``: ``abs(H-3)+1`` becomes ``H-2``).
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np

from ir import Graph, Node, TensorType, Value
from ir import symbolic as sym
from ir.transforms import add_fresh_constant


class Rewriter:
    """What a rewrite may do besides returning a value: create nodes and
    constants. New nodes go just before the matched root, carry its origins
    and its output's name hint, and are revisited by the rules.

    Attributes:
        graph: the graph being rewritten.
        root: the matched root node.
    """

    def __init__(self, graph: Graph, reserved: set[str] | None = None):
        self.graph = graph
        self.reserved = reserved or set()  # names new constants avoid (enclosing and nested graphs')
        self.root: Node | None = None
        self.created: list[Node] = []
        self.created_constants: list[Value] = []
        self.matched: list[Node] = []
        self.bounds: sym.Bounds = graph.size_bounds  # the graph's size facts (``assume``)
        self.pending: sym.Bounds = ()  # ``bounds`` with the facts of the rewrite being tried

    def assume(self, *facts) -> None:
        """State that the replacement equals the root only where each dim of
        ``facts`` is >= 0, and fails at run time elsewhere (so no run gives
        a different value). The replacement's type is then compared with the
        root's refined by the facts (``ir.symbolic.refine``), and if the rule
        fires, every node type of the graph is refined by them."""
        self.pending = sym.lower_bounds(facts, self.pending)

    def add(self, op: str, inputs: Sequence[Value], attrs: dict | None = None) -> Value:
        """A new single-output ``op(inputs){attrs}`` before the root; returns its
        output (type inferred; ``ir.ops.OpError`` if the op rejects them)."""
        node = self.graph.create_node(op, list(inputs), attrs, output_names=[self.root.output.name])
        node.origins = self.root.origins
        self.graph.insert_before(self.root, node)
        self.created.append(node)
        return node.output

    def const(self, array, name: str = "const") -> Value:
        """A new graph constant holding a copy of ``array`` (removed again if
        the rewrite declines and nothing reads it)."""
        value = add_fresh_constant(self.graph, np.asarray(array), name, self.reserved)
        self.created_constants.append(value)
        return value

    def begin(self, root: Node) -> None:
        """Start a rewrite of ``root``: nothing created, no facts assumed yet."""
        self.bounds = self.graph.size_bounds
        self.root, self.created, self.created_constants, self.pending = root, [], [], self.bounds

    def undo(self, outputs: set[Value] | None = None) -> None:
        """Remove what the declined rewrite created (nodes and constants
        nothing reads)."""
        if self.created:
            erase_dead(self.graph, reversed(self.created), outputs)
        for c in self.created_constants:
            if not c.num_uses:
                self.graph.remove_constant(c)
        self.created, self.created_constants = [], []


def refines(new: TensorType, old: TensorType, bounds: sym.Bounds = ()) -> bool:
    """Whether a replacement of type ``new`` may stand for a value of type
    ``old``: the same dtype and rank, and every dim equal or unknown (``?``)
    in ``old`` (a rewrite may know more, e.g. the batch dim a reshape lost),
    ``old``'s dims refined by the size facts ``bounds`` (``Rewriter.assume``)."""
    if new is old:
        return True
    if new.dtype != old.dtype or len(new.shape) != len(old.shape):
        return False
    for n, o in zip(new.shape, old.shape):
        if not (o is None or n == o or n == sym.refine(o, bounds)):
            return False
    return True


def erase_dead(graph: Graph, nodes: Iterable[Node], outputs: set[Value] | None = None) -> list[Value]:
    """Erase each of ``nodes`` that nothing reads, then their producers that
    became dead (never a node whose results are used or are graph outputs;
    ``outputs``: the set of graph outputs, if the caller keeps one).

    Returns:
        The values that lost readers and are still there (graph inputs,
        constants, outputs of nodes left in the graph); a value may repeat.
    """
    is_output = graph.is_output if outputs is None else outputs.__contains__
    stack = list(nodes)
    freed: list[Value] = []
    while stack:
        n = stack.pop()
        if n.graph is not graph or _is_read(n, is_output):
            continue
        inputs = n._inputs
        freed += inputs
        for v in inputs:
            if v.producer is not None:
                stack.append(v.producer)
        graph.erase(n)
    return [v for v in freed if v.producer is None or v.producer.graph is graph]


def _is_read(node: Node, is_output: Callable[[Value], bool]) -> bool:
    """Whether an output of ``node`` has a reader or is a graph output."""
    for out in node.outputs:
        if out._uses or is_output(out):
            return True
    return False
