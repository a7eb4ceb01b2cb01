"""SSA core of the IR: ``Value``, ``Node`` and ``Graph``, and the mutation API.

Every change to a graph goes through the methods here (``Graph.append``,
``Graph.insert_before``, ``Node.set_input``, ``Graph.replace_all_uses``,
``Graph.erase``), which keep the use lists of values consistent. Nodes live in
an intrusive doubly linked list, so insertion and erasure are O(1) and
iteration (``for node in graph``) is safe while nodes are inserted or erased.

The mutation API also keeps types consistent with the type rules: a new
node's output types are inferred (``Graph.create_node``), and when
``replace_all_uses`` gives readers a value of another type (a rewrite that
knows more dims), their types are re-inferred, and their readers' while
types change (``infer_node``). So no pass reads a type made stale by an
earlier rewrite.
"""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np

from ir import symbolic as sym
from ir.errors import OpError, ShapeInferenceError
from ir.opdef import get_op
from ir.printer import format_graph, print_graph
from ir.types import DType, TensorType, refine_type


class Use(NamedTuple):
    """One use of a value: ``node.inputs[index] is value``."""

    node: "Node"
    index: int


_use = tuple.__new__  # ``_use(Use, (node, index))``: a Use without NamedTuple's Python-level __new__


class Origin(NamedTuple):
    """Where an IR node came from: the PyTensor op (as printed; None when
    unknown) and the user's source line (``file:line (code)``, from the
    PyTensor variable's ``tag.trace``; None when PyTensor kept none)."""

    op: str | None
    source: str | None


def merge_origins(*groups: Sequence[Origin]) -> tuple[Origin, ...]:
    """The union of several origin tuples, first occurrence first. Each
    tuple is duplicate-free (every ``Node.origins`` is built by this union
    or holds one origin), which the common two-tuple calls rely on."""
    if len(groups) == 2:  # the common call: few origins each, often the same ones
        a, b = groups
        if not b or a is b:
            return tuple(a)
        if not a:
            return tuple(b)
        if len(b) == 1:
            return tuple(a) if b[0] in a else tuple(a) + tuple(b)
    return tuple(dict.fromkeys(o for group in groups for o in group))


class Value:
    """A typed SSA value: a graph input, a graph constant, or a node output.

    Attributes:
        type: its ``TensorType``.
        name: a name hint (graph inputs and constants keep theirs in the
            emitted model; others are only made unique when printing).
        producer: the ``Node`` that defines it, or None for inputs/constants.
        index: which output of ``producer`` it is.
        const: the NumPy array of a graph constant, else None.
    """

    __slots__ = ("type", "name", "producer", "index", "const", "_uses", "__weakref__")

    def __init__(self, type: TensorType, name: str | None = None, producer: "Node | None" = None,
                 index: int = 0, const: np.ndarray | None = None):
        self.type = type
        self.name = name
        self.producer = producer
        self.index = index
        self.const = const
        self._uses: dict[Use, None] = {}

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def shape(self) -> tuple:
        return self.type.shape

    @property
    def rank(self) -> int:
        return self.type.rank

    def uses(self) -> list[Use]:
        """A snapshot of the node inputs that read this value (graph outputs not included)."""
        return list(self._uses)

    @property
    def num_uses(self) -> int:
        return len(self._uses)

    def __repr__(self) -> str:
        return f"<Value %{self.name or '?'}: {self.type}>"


class Node:
    """An operation: op name, attributes, input values, output values and
    nested graphs (control-flow bodies, keyed by role such as ``"body"``).

    Attributes are a dict of plain Python data (int, float, bool, str, DType,
    tuples of those); they are never mutated in place after creation.
    """

    __slots__ = ("op", "attrs", "_inputs", "outputs", "subgraphs", "graph", "_prev", "_next",
                 "origins", "__weakref__")

    def __init__(self, op: str, inputs: Sequence[Value], attrs: dict[str, Any] | None,
                 output_types: Sequence[TensorType], output_names: Sequence[str | None] | None = None,
                 subgraphs: dict[str, "Graph"] | None = None):
        self.op = op
        self.attrs = dict(sorted(attrs.items())) if attrs else {}
        self._inputs: tuple[Value, ...] = ()  # immutable: ``inputs`` hands it out without a copy
        if len(output_types) == 1:
            self.outputs = (Value(output_types[0], output_names[0] if output_names else None, self, 0),)
        else:
            names = list(output_names) if output_names is not None else [None] * len(output_types)
            self.outputs = tuple(Value(t, n, self, i) for i, (t, n) in enumerate(zip(output_types, names)))
        self.subgraphs = dict(subgraphs) if subgraphs else {}
        self.graph: Graph | None = None
        self._prev: Node | None = None
        self._next: Node | None = None
        # the PyTensor nodes this node computes (part of); a fused node lists several
        self.origins: tuple[Origin, ...] = ()
        for i, v in enumerate(inputs):
            if not isinstance(v, Value):
                raise TypeError(f"input of {self.op} must be a Value, got {type(v).__name__}")
            v._uses[_use(Use, (self, i))] = None
        self._inputs = tuple(inputs)

    @property
    def inputs(self) -> tuple[Value, ...]:
        return self._inputs

    @property
    def trace(self) -> str | None:
        """The first known user source line among ``origins`` (None if none)."""
        return next((o.source for o in self.origins if o.source), None)

    @trace.setter
    def trace(self, source: str | None) -> None:
        self.origins = (Origin(None, source),) if source else ()

    @property
    def output(self) -> Value:
        """The single output; ValueError if the node has several."""
        if len(self.outputs) != 1:
            raise ValueError(f"{self.op} has {len(self.outputs)} outputs, not one")
        return self.outputs[0]

    def _add_input(self, value: Value) -> None:
        if not isinstance(value, Value):
            raise TypeError(f"input of {self.op} must be a Value, got {type(value).__name__}")
        use = _use(Use, (self, len(self._inputs)))
        self._inputs += (value,)
        value._uses[use] = None

    def set_input(self, index: int, value: Value) -> None:
        """Make input ``index`` read ``value``, updating both use lists (the
        node's types are not re-inferred: ``Graph.replace_all_uses`` does)."""
        old = self._inputs[index]
        del old._uses[(self, index)]  # a plain tuple hashes and compares as the Use
        self._inputs = self._inputs[:index] + (value,) + self._inputs[index + 1:]
        value._uses[_use(Use, (self, index))] = None

    def drop_inputs(self) -> None:
        """Remove this node from the use lists of all its inputs."""
        for i, v in enumerate(self._inputs):
            v._uses.pop((self, i), None)  # a plain tuple hashes and compares as the Use
        self._inputs = ()

    def __repr__(self) -> str:
        return f"<Node {self.op}>"


def infer_node(node: Node, consts: Sequence | None = None, root: "Graph | None" = None) -> list[Value]:
    """Re-run ``node``'s type rule on its inputs' current types and make each
    output's type as precise as the rule's (``ir.types.refine_type``).

    Type rules know only that sizes are >= 0; with the graph's size facts
    (``Graph.size_bounds``: ``H >= 8``) the rule runs over the symbols
    shifted by their bounds (``H+8``, ``H >= 0``), and the result is shifted
    back, so a rule that must compare sizes (a slice's end with its dim)
    can decide what the facts decide.

    Args:
        node: a node in a graph.
        consts: what is known of each input's value, as the type rule reads
            it (default: the constant inputs' arrays); ``shape-inference``
            passes the symbolic contents of shape vectors.
        root: the outermost graph, printed around the node in an error
            (default: the node's graph).

    Returns:
        The outputs whose type changed.

    Raises:
        ShapeInferenceError: the rule rejects the inputs, or contradicts a
            declared static dim (the message names both types and shows the
            node's line of IR and source line).
    """
    inputs = node._inputs
    types = [v.type for v in inputs]
    if consts is None:
        consts = [v.const for v in inputs]
    bounds = node.graph.size_bounds if node.graph is not None else ()
    up = {s: sym.add(s, b) for s, b in bounds if isinstance(s, str)} if bounds else None
    if up:
        types = [t.with_shape(tuple(_substitute(d, up) for d in t.shape)) for t in types]
        consts = [c if c is None or c.dtype != object else _substitute_array(c, up) for c in consts]
    try:
        inferred = get_op(node.op).infer_types(types, node.attrs, consts, node.subgraphs)
    except OpError as e:
        raise _inference_error(node, root, f"the type rule rejects the inputs once their shapes are known: {e}") \
            from None
    if up:
        down = {s: sym.sub(s, b) for s, b in bounds if isinstance(s, str)}
        inferred = [t.with_shape(tuple(_substitute(d, down) for d in t.shape)) for t in inferred]
    outputs = node.outputs
    if len(outputs) == 1 and len(inferred) == 1 and outputs[0].type == inferred[0]:
        return []  # the common case: nothing to refine
    changed = []
    for i, (out, want) in enumerate(zip(outputs, inferred, strict=True)):
        refined = refine_type(out.type, want)
        if refined is None:
            raise _inference_error(node, root, f"output {i} is declared {out.type} but its inputs give {want}")
        if refined != out.type:
            out.type = refined
            changed.append(out)
    return changed


def _substitute(d, mapping):
    return sym.substitute(d, mapping) if isinstance(d, (str, sym.Expr)) else d


def _substitute_array(a: np.ndarray, mapping) -> np.ndarray:
    out = np.empty(a.shape, dtype=object)
    out.reshape(-1)[:] = [_substitute(d, mapping) for d in a.reshape(-1)]
    return out


def _inference_error(node: Node, root: "Graph | None", why: str) -> ShapeInferenceError:
    graph = root if root is not None else node.graph
    printed = format_graph(graph) if graph is not None else None
    line = printed.lines_of.get(node) if printed is not None else None
    text = printed.lines[line].strip() if line is not None else node.op
    where = f" (at {node.trace})" if node.trace else ""
    return ShapeInferenceError(f"shape-inference: {node.op} node{where}: {why}\n  {text}", node)


def inherit_origins(value: Value, origins: Sequence[Origin]) -> None:
    """Add ``origins`` to those of ``value``'s producer (it now stands for
    what they computed) and give them to its ancestors that have no origins
    yet (nodes just built; the walk stops at nodes that have some)."""
    node = value.producer
    if node is None:
        return
    node.origins = merge_origins(node.origins, origins)
    stack = [v.producer for v in node._inputs if v.producer is not None and not v.producer.origins]
    if not stack:
        return  # the common case: every producer of an input already has origins
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen or node.origins:
            continue
        seen.add(id(node))
        node.origins = tuple(origins)
        stack.extend(v.producer for v in node.inputs if v.producer is not None)


def frozen(array) -> bool:
    """Whether ``array`` is a NumPy array no one can write: read-only, and
    so is every array it views; the buffer at the bottom is immutable
    (``bytes``) or owned by the array itself."""
    if not isinstance(array, np.ndarray):
        return False
    while isinstance(array, np.ndarray):
        if array.flags.writeable:
            return False
        array = array.base
    return array is None or isinstance(array, bytes)


class Graph:
    """A function body: ordered inputs, constants, nodes and outputs.

    Args:
        name: the graph's name (the emitted ONNX graph name).

    Nodes are kept in program order (every value is defined before use).
    Constants are named values holding NumPy arrays (emitted as ONNX
    initializers); their names are unique within the graph.
    """

    def __init__(self, name: str = "main"):
        self.name = name
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []  # a property: keeps the set behind replace_all_uses's check
        self.constants: dict[str, Value] = {}
        self._input_names: set[str] = set()
        self._next_suffix: dict[str, int] = {}  # keeps constant-name uniquing O(1) amortized
        self._head: Node | None = None
        self._tail: Node | None = None
        self._num_nodes = 0
        self._op_counts: dict[str, int] = {}  # op name -> nodes of this graph with it
        self._nested: dict[Node, None] = {}  # the nodes of this graph with nested graphs
        # Size facts every run that completes satisfies (``ir.symbolic.Bounds``: each symbol's
        # least value), stated by rewrites whose replacement needs them (a valid conv's H >= k);
        # types and shape facts are refined by them. Not printed: losing them loses precision only.
        self.size_bounds: tuple = ()

    # -- inputs, outputs, constants ---------------------------------------
    def add_input(self, type: TensorType, name: str) -> Value:
        """Append a graph input of ``type`` called ``name``; returns its value."""
        v = Value(type, name)
        self.inputs.append(v)
        self._input_names.add(name)
        return v

    def add_constant(self, array, name: str = "const", type: TensorType | None = None) -> Value:
        """Add a named constant holding ``array`` (made unique by a numeric
        suffix if ``name`` is taken); returns its value.

        The array is stored read-only so no pass can change a user's data:
        an array nobody can write (``frozen``: read-only, and so is every
        array it views) is kept as it is, without copying its bytes (another
        graph's constants, a user's read-only weights); any other is copied.
        """
        if not frozen(array):
            array = np.array(array, copy=True)
            array.setflags(write=False)
        t = type or TensorType.of_array(array)
        if t.dtype.numpy != array.dtype:
            raise TypeError(f"constant {name}: array dtype {array.dtype} != {t.dtype}")
        unique = name
        i = self._next_suffix.get(name, 1)
        while unique in self.constants or unique in self._input_names:
            unique = f"{name}_{i}"
            i += 1
        self._next_suffix[name] = i
        v = Value(t, unique, const=array)
        self.constants[unique] = v
        return v

    def remove_constant(self, value: Value) -> None:
        """Remove an unused constant. ValueError if it still has uses."""
        if value.num_uses or value in self.outputs:
            raise ValueError(f"constant %{value.name} is still used")
        del self.constants[value.name]

    def set_outputs(self, values: Sequence[Value]) -> None:
        self.outputs = list(values)

    # -- nodes ------------------------------------------------------------
    def __iter__(self) -> Iterator[Node]:
        """Nodes in program order; safe against erasing the current node or
        inserting nodes anywhere."""
        node = self._head
        while node is not None:
            nxt = node._next
            yield node
            if node.graph is self:
                node = node._next
            else:  # the current node was erased: resume at its old successor
                node = nxt
                while node is not None and node.graph is not self:
                    node = node._next

    def __reversed__(self) -> Iterator[Node]:
        """Nodes last to first; safe against erasing the current node and
        inserting nodes anywhere. Nodes inserted just before the current
        node are visited next, also when it is erased (it is left through
        the predecessor it had when it was erased)."""
        node = self._tail
        while node is not None:
            yield node
            node = node._prev
            while node is not None and node.graph is not self:  # erased: its predecessor when it was
                node = node._prev

    @property
    def nodes(self) -> list[Node]:
        """A snapshot list of the nodes in program order."""
        return list(self)

    def __len__(self) -> int:
        return self._num_nodes

    def op_count(self, op: str) -> int:
        """How many nodes of this graph (nested graphs not included) have op
        ``op``. O(1): the graph keeps an index of op names."""
        return self._op_counts.get(op, 0)

    def nodes_with_subgraphs(self) -> list[Node]:
        """The nodes of this graph that hold nested graphs. O(their number):
        the graph keeps them in an index."""
        return list(self._nested)

    def contains_op(self, *ops: str, nested: bool = True) -> bool:
        """Whether a node of this graph (and, with ``nested``, of any nested
        graph) has one of ``ops``. Costs O(len(ops)) per graph visited, not
        a scan of the nodes: passes call it to return at once when their
        ops are absent."""
        if any(self._op_counts.get(op) for op in ops):
            return True
        return nested and any(sub.contains_op(*ops) for node in self._nested for sub in node.subgraphs.values())

    def op_names(self, nested: bool = True) -> set[str]:
        """The op names of the nodes of this graph (and, with ``nested``, of
        every nested graph). O(distinct op names) per graph visited: read
        from the op index, no node is visited."""
        names = {op for op, n in self._op_counts.items() if n}
        if nested:
            for node in self._nested:
                for sub in node.subgraphs.values():
                    names |= sub.op_names()
        return names

    def create_node(self, op: str, inputs: Sequence[Value], attrs: dict[str, Any] | None = None,
                    output_types: Sequence[TensorType] | None = None, *,
                    output_names: Sequence[str | None] | None = None,
                    subgraphs: dict[str, "Graph"] | None = None) -> Node:
        """Build a node (not yet in the graph). When ``output_types`` is None
        they are inferred with the op's type rule (see ``ir.ops``).

        Raises:
            KeyError: unknown op. ``ir.ops.OpError``: the type rule rejects
            the inputs or attributes.
        """
        opdef = get_op(op)
        attrs = opdef.normalize_attrs(attrs or {})
        if output_types is None:
            output_types = opdef.infer_types([v.type for v in inputs], attrs, [v.const for v in inputs], subgraphs)
        node = Node(op, inputs, None, output_types, output_names, subgraphs)
        node.attrs = attrs  # normalized: already sorted by name
        return node

    def append(self, node: Node) -> Node:
        """Add ``node`` at the end of the graph; returns it."""
        self._link(node, self._tail, None)
        return node

    def insert_before(self, anchor: Node, node: Node) -> Node:
        """Insert ``node`` just before ``anchor``; returns it."""
        self._check_owned(anchor)
        self._link(node, anchor._prev, anchor)
        return node

    def insert_after(self, anchor: Node, node: Node) -> Node:
        """Insert ``node`` just after ``anchor``; returns it."""
        self._check_owned(anchor)
        self._link(node, anchor, anchor._next)
        return node

    def add(self, op: str, inputs: Sequence[Value], attrs: dict[str, Any] | None = None, *,
            before: Node | None = None, name: str | None = None) -> Value:
        """Create a single-output node with inferred type, insert it (at the end,
        or before ``before``) and return its output value."""
        node = self.create_node(op, inputs, attrs, output_names=[name])
        if before is None:
            self.append(node)
        else:
            self.insert_before(before, node)
        return node.output

    def erase(self, node: Node) -> None:
        """Remove ``node`` from the graph and from its inputs' use lists.

        Raises:
            ValueError: if any output still has uses or is a graph output.
        """
        if node.graph is not self:
            self._check_owned(node)
        for out in node.outputs:
            if out._uses or out in self._output_set:
                raise ValueError(f"cannot erase {node.op}: output %{out.name or '?'} is still used")
        node.drop_inputs()
        self._unlink(node)

    def replace_all_uses(self, old: Value, new: Value) -> None:
        """Make every reader of ``old`` (node inputs and graph outputs) read
        ``new`` instead. O(uses of ``old``); the output list is only
        rewritten when ``old`` is among the outputs (O(1) check).

        Types: when ``new``'s type differs from ``old``'s (a replacement
        that knows more dims), the readers' types are re-inferred
        (``infer_node``), and so on downstream while a type changes; O(the
        nodes whose type changes). ``ShapeInferenceError`` if a reader's
        type rule rejects ``new`` or contradicts a declared static dim.

        Provenance: when ``old`` is a node output, ``new``'s producer adds
        ``old``'s producer's origins to its own, and the nodes computing
        ``new`` that have none yet (nodes a pass just built) get them
        (``inherit_origins``).
        """
        if old is new:
            return
        if old.producer is not None and old.producer.origins:
            inherit_origins(new, old.producer.origins)
        uses = old.uses()
        for use in uses:
            use.node.set_input(use.index, new)
        if old in self._output_set:
            self.outputs = [new if v is old else v for v in self.outputs]
        if uses and new.type is not old.type and new.type != old.type:
            self.reinfer([use.node for use in uses])

    def reinfer(self, nodes: Sequence[Node]) -> None:
        """Re-infer the types of ``nodes`` of this graph (``infer_node``:
        readers given values of other types) and of the readers of every
        value whose type changes. O(the nodes whose type changes).

        Raises:
            ShapeInferenceError: as ``infer_node``.
        """
        work = list(dict.fromkeys(nodes))
        while work:
            node = work.pop()
            if node.graph is self:
                for out in infer_node(node):
                    work.extend(use.node for use in out._uses)

    def is_output(self, value: Value) -> bool:
        """Whether ``value`` is one of the graph's outputs (O(1))."""
        return value in self._output_set

    @property
    def outputs(self) -> list[Value]:
        """The graph's outputs, in order (assign a new list to change them)."""
        return self._outputs

    @outputs.setter
    def outputs(self, values: Sequence[Value]) -> None:
        self._outputs = list(values)
        self._output_set = set(self._outputs)

    def reorder(self, nodes: Sequence[Node]) -> None:
        """Relink the node list in the order of ``nodes``, a permutation of
        this graph's nodes (the caller keeps the order topological). O(nodes).

        Raises:
            ValueError: ``nodes`` is not a permutation of the graph's nodes.
        """
        if len(nodes) != self._num_nodes or len(set(map(id, nodes))) != len(nodes) \
                or any(n.graph is not self for n in nodes):
            raise ValueError(f"reorder of graph {self.name}: not a permutation of its nodes")
        prev = None
        for node in nodes:
            node._prev = prev
            if prev is not None:
                prev._next = node
            prev = node
        self._head = nodes[0] if nodes else None
        self._tail = prev
        if prev is not None:
            prev._next = None

    def move_before(self, anchor: Node, node: Node) -> None:
        """Move ``node`` (already in the graph) to just before ``anchor``."""
        self._unlink(node)
        self._link(node, anchor._prev, anchor)

    # -- helpers ----------------------------------------------------------
    def _check_owned(self, node: Node) -> None:
        if node.graph is not self:
            raise ValueError(f"{node.op} node is not in graph {self.name}")

    def _link(self, node: Node, prev: Node | None, nxt: Node | None) -> None:
        if node.graph is not None:
            raise ValueError(f"{node.op} node is already in a graph")
        node.graph = self
        node._prev, node._next = prev, nxt
        if prev is None:
            self._head = node
        else:
            prev._next = node
        if nxt is None:
            self._tail = node
        else:
            nxt._prev = node
        self._num_nodes += 1
        self._op_counts[node.op] = self._op_counts.get(node.op, 0) + 1
        if node.subgraphs:
            self._nested[node] = None

    def _unlink(self, node: Node) -> None:
        if node.graph is not self:
            self._check_owned(node)
        if node._prev is None:
            self._head = node._next
        else:
            node._prev._next = node._next
        if node._next is None:
            self._tail = node._prev
        else:
            node._next._prev = node._prev
        node.graph = None
        self._num_nodes -= 1
        self._op_counts[node.op] -= 1
        self._nested.pop(node, None)

    def __str__(self) -> str:
        return print_graph(self)

    def __repr__(self) -> str:
        return f"<Graph {self.name}: {len(self.inputs)} inputs, {self._num_nodes} nodes>"
