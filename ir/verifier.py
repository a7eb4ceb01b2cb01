"""The IR verifier: ``verify(graph)`` checks the invariants every pass must
keep and raises ``VerificationError`` showing the printed IR around the
first violation (a ``>>`` marks the failing line), like torch.fx's ``lint``
and JAX's jaxpr checker.

Checked, in one linear walk (nested graphs included; a nested graph may read
values of its enclosing graphs that are defined before its node, as in ONNX):

1. structure: the node linked list agrees with ``len(graph)``, every node's
   ``graph`` is its graph, no node or nested graph appears twice;
2. names: graph inputs and constants have non-empty names, unique within
   their graph and not shadowing an enclosing graph's; constants hold arrays
   whose dtype and shape equal their declared (static) type;
3. SSA: every node input and graph output is defined before use; no value is
   defined twice; ``producer``/``index`` of outputs are right;
4. use lists: every ``Value`` use entry names a node in the graph whose input
   at that index is the value, and every node input is in its value's uses;
5. ops: the op is registered, the arity is right, the attributes are exactly
   the schema-normalized ones (``OpDef.normalize_attrs``);
6. types: the op's type rule, re-run on the input types, agrees with the
   declared output types (count, dtype, rank, compatible dims).

``verify(graph, check_types=False)`` is the cheap structural check the driver
runs by default once after the pipeline: 1-4, registered ops and arity, but
neither attribute schemas nor type rules (which cost as much as the passes).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ir.core import Graph, Node, Value
from ir.errors import VerificationError
from ir.opdef import OpError, get_op
from ir.printer import format_graph, value_name_token
from ir.types import TensorType, dims_compatible

EXCERPT_RADIUS = 6  # lines shown before and after the failing one
WHOLE_IR_LINES = 40  # IR up to this many lines is shown whole
MAX_LINE = 160  # longer lines (big base64 constants) are cut

Namer = Callable[[Value], str]


def verify(graph: Graph, context: str | None = None, *, check_types: bool = True) -> None:
    """Check ``graph`` (and its nested graphs); return None if it is valid.

    Args:
        graph: the graph to check.
        context: where we are (``"after cse"``), put into the message.
        check_types: also check attribute schemas and re-run every type rule
            (checks 5-6 in full); False checks structure, SSA, use lists,
            registered ops and arity only.

    Raises:
        VerificationError: the first violation found (see the module docstring).
    """
    _Verifier(graph, context, check_types).run()


class _Verifier:
    def __init__(self, root: Graph, context: str | None, check_types: bool = True):
        self.root = root
        self.context = context
        self.check_types = check_types
        self.nodes: set[Node] = set()  # every node of every graph, from the structure walk
        self.defined: set[Value] = set()  # every value defined so far, anywhere
        self.visible: set[Value] = set()  # values in scope at the current point
        self.scope_names: dict[str, int] = {}  # input/constant names in scope -> how many graphs hold it

    def run(self) -> None:
        self.structure(self.root, set())
        self.graph(self.root)

    # -- reporting ---------------------------------------------------------
    def fail(self, anchor: Any, message: str | Callable[[Namer], str], show_ir: bool = True):
        printed, excerpt = None, ""
        if show_ir:
            try:
                printed = format_graph(self.root)
                excerpt = "\n" + _excerpt(printed.lines, printed.lines_of.get(anchor))
            except Exception as e:  # the IR may be too broken to print
                excerpt = f"\n(the IR could not be printed: {type(e).__name__}: {e})"

        def name(v: Value) -> str:
            n = printed.names.get(v) if printed is not None else None
            return "%" + value_name_token(n if n is not None else (v.name or "?"))

        text = message(name) if callable(message) else message
        where = f" {self.context}" if self.context else ""
        raise VerificationError(f"IR verification failed{where}: {text}{excerpt}", anchor)

    # -- 1. structure --------------------------------------------------------
    def structure(self, graph: Graph, graphs: set[int]) -> None:
        """Walk the raw linked list of ``graph`` and its nested graphs."""
        if id(graph) in graphs:
            self.fail(graph, f"graph @{graph.name} is nested in more than one place", show_ir=False)
        graphs.add(id(graph))
        prev, node, count = None, graph._head, 0
        while node is not None:
            if node in self.nodes:
                self.fail(node, f"{node.op} node appears twice in the node lists (a cycle, or shared "
                                f"between graphs) in graph @{graph.name}", show_ir=False)
            self.nodes.add(node)
            if node.graph is not graph:
                self.fail(node, f"{node.op} node is in the node list of graph @{graph.name} "
                                f"but its .graph is {node.graph!r}")
            if node._prev is not prev:
                self.fail(node, f"{node.op} node has a wrong _prev link in graph @{graph.name}")
            prev, node, count = node, node._next, count + 1
        if graph._tail is not prev:
            self.fail(graph, f"graph @{graph.name}: _tail is not the last node of the list")
        if count != len(graph):
            self.fail(graph, f"graph @{graph.name}: len() is {len(graph)} but the node list has {count} nodes")
        node = graph._head
        while node is not None:
            for role, sub in node.subgraphs.items():
                if not isinstance(sub, Graph):
                    self.fail(node, f"{node.op} node: subgraph {role!r} is a {type(sub).__name__}, not a Graph")
                self.structure(sub, graphs)
            node = node._next

    # -- 2-6. one graph in program order -------------------------------------
    def graph(self, graph: Graph) -> None:
        local: list[Value] = []
        names: set[str] = set()
        for v in graph.inputs:
            self.named(graph, v, names, "graph input")
            self.define(v, local, None, 0)
        for key, v in graph.constants.items():
            self.named(graph, v, names, "constant")
            if key != v.name:
                self.fail(v, lambda n: f"constant {n(v)} is filed under the name {key!r}")
            self.constant(v)
            self.define(v, local, None, 0)
        node = graph._head
        while node is not None:
            self.node(node, local)
            node = node._next
        for i, v in enumerate(graph.outputs):
            if v not in self.visible:
                self.fail(graph, lambda n: f"graph @{graph.name}: output {i} {n(v)} is not defined"
                                           f"{self.where_defined(v)}")
        for v in local:
            self.visible.discard(v)
        for name in names:
            self.scope_names[name] -= 1

    def named(self, graph: Graph, v: Value, names: set[str], what: str) -> None:
        if not isinstance(v, Value):
            self.fail(graph, f"graph @{graph.name}: a {what} is a {type(v).__name__}, not a Value")
        if not isinstance(v.name, str) or not v.name:
            self.fail(v, lambda n: f"{what} {n(v)} of graph @{graph.name} has no name")
        if v.name in names:
            self.fail(v, f"{what} name %{v.name} is used twice in graph @{graph.name}")
        if self.scope_names.get(v.name):
            self.fail(v, f"{what} %{v.name} of graph @{graph.name} shadows a name of an enclosing graph")
        names.add(v.name)
        self.scope_names[v.name] = self.scope_names.get(v.name, 0) + 1

    def constant(self, v: Value) -> None:
        array = v.const
        if not isinstance(array, np.ndarray):
            self.fail(v, lambda n: f"constant {n(v)} holds a {type(array).__name__}, not a NumPy array")
        if array.dtype != v.type.dtype.numpy or array.shape != v.type.shape:
            self.fail(v, lambda n: f"constant {n(v)} is declared {v.type} but holds a {array.dtype} "
                                   f"array of shape {array.shape}")

    def define(self, v: Value, local: list[Value], producer: Node | None, index: int) -> None:
        """Bring ``v`` into scope after checking it is defined only here and
        that each of its use entries is real."""
        if not isinstance(v.type, TensorType):
            self.fail(v, lambda n: f"{n(v)} has type {v.type!r}, not a TensorType")
        if v in self.defined:
            self.fail(v, lambda n: f"{n(v)} is defined twice")
        if v.producer is not producer or v.index != index:
            self.fail(v, lambda n: f"{n(v)} has producer {v.producer!r} and index {v.index}, "
                                   f"expected {producer!r} and {index}")
        if producer is not None and v.const is not None:
            self.fail(v, lambda n: f"node output {n(v)} holds a constant array")
        for use in v._uses:
            user = use.node
            if user not in self.nodes:
                self.fail(v, lambda n: f"{n(v)} has a dangling use: a {user.op} node (input {use.index}) "
                                       f"that is not in the graph (erased without dropping its inputs?)")
            if use.index >= len(user._inputs) or user._inputs[use.index] is not v:
                self.fail(user, lambda n: f"{n(v)} lists a use by {self.describe(user, n)} input {use.index}, "
                                          f"but that input is not {n(v)}")
        self.defined.add(v)
        self.visible.add(v)
        local.append(v)

    def node(self, node: Node, local: list[Value]) -> None:
        for i, v in enumerate(node._inputs):
            if v not in self.visible:
                state = "used before it is defined" if v.producer in self.nodes else "not defined"
                self.fail(node, lambda n: f"{self.describe(node, n)}: input {i} {n(v)} is {state}"
                                          f"{self.where_defined(v)}")
            if (node, i) not in v._uses:  # a plain tuple hashes and compares as the Use
                self.fail(node, lambda n: f"{self.describe(node, n)}: input {i} {n(v)} does not list "
                                          f"this use in its use list")
        for sub in node.subgraphs.values():
            self.graph(sub)
        self.op(node)
        if len(node.outputs) == 1:
            self.define(node.outputs[0], local, node, 0)
        else:
            for i, v in enumerate(node.outputs):
                self.define(v, local, node, i)

    def where_defined(self, v: Value) -> str:
        p = v.producer
        if p is None:
            return " (not an input or constant of this graph or an enclosing one)"
        if p not in self.nodes:
            return f" (its producer, a {p.op} node, is not in the graph)"
        return f" (its producer, a {p.op} node, comes later or is in another nested graph)"

    def op(self, node: Node) -> None:
        try:
            opdef = get_op(node.op)
        except KeyError:
            self.fail(node, lambda n: f"{self.describe(node, n)}: unknown op {node.op!r}")
        if not self.check_types and (opdef.num_inputs is None or opdef.num_inputs == len(node._inputs)):
            return  # the structural check: the arity is right
        try:
            opdef.check_arity(len(node._inputs))
            if not self.check_types:
                return
            normalized = opdef.normalize_attrs(node.attrs)
        except OpError as e:
            self.fail(node, lambda n: f"{self.describe(node, n)}: {e}")
        if not _same_attrs(normalized, node.attrs):
            self.fail(node, lambda n: f"{self.describe(node, n)}: attributes {node.attrs} differ from "
                                      f"their schema-normalized form {normalized}")
        try:
            inferred = opdef.infer_types([v.type for v in node._inputs], node.attrs,
                                         [v.const for v in node._inputs], node.subgraphs)
        except OpError as e:
            self.fail(node, lambda n: f"{self.describe(node, n)}: type rule rejects the inputs: {e}")
        declared = [v.type for v in node.outputs]
        if len(inferred) != len(declared):
            self.fail(node, lambda n: f"{self.describe(node, n)}: declares {len(declared)} outputs, "
                                      f"the type rule gives {len(inferred)}")
        for i, (want, got) in enumerate(zip(inferred, declared)):
            if (want.dtype != got.dtype or want.rank != got.rank
                    or not all(dims_compatible(a, b) for a, b in zip(want.shape, got.shape))):
                self.fail(node, lambda n: f"{self.describe(node, n)}: output {i} {n(node.outputs[i])} is "
                                          f"declared {got} but the type rule gives {want}")

    @staticmethod
    def describe(node: Node, name: Namer) -> str:
        outs = ", ".join(name(v) for v in node.outputs)
        return f"{node.op} node ({outs or 'no outputs'})"


def _same_attrs(a: dict, b: dict) -> bool:
    return list(a) == list(b) and all(_same_attr(a[k], b[k]) for k in a)


def _same_attr(x: Any, y: Any) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, tuple):
        return len(x) == len(y) and all(_same_attr(p, q) for p, q in zip(x, y))
    if isinstance(x, float) and math.isnan(x):
        return math.isnan(y)
    return x == y


def _excerpt(lines: list[str], at: int | None) -> str:
    """Lines of printed IR with ``>>`` on line ``at``: all of them when few,
    else ``EXCERPT_RADIUS`` lines either side (the first lines if ``at`` is None)."""
    if len(lines) <= WHOLE_IR_LINES:
        lo, hi = 0, len(lines)
    elif at is None:
        lo, hi = 0, 2 * EXCERPT_RADIUS
    else:
        lo, hi = max(0, at - EXCERPT_RADIUS), min(len(lines), at + EXCERPT_RADIUS + 1)
    out = ["   ..."] if lo > 0 else []
    out += [(">> " if i == at else "   ") + _clip(lines[i]) for i in range(lo, hi)]
    if hi < len(lines):
        out.append("   ...")
    return "\n".join(out)


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE else line[:MAX_LINE - 3] + "..."
