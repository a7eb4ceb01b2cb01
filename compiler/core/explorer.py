"""The pass explorer's data: what each stage of one compilation did, as the
JSON ``dump_ir=DIR`` embeds in ``DIR/index.html`` (``explorer_page``).

``StageRecorder`` exists only when ``dump_ir`` is given (the driver pays
nothing otherwise). After each stage it prints the IR once
(``ir.printer.format_graph``: the text and the line of every node) and
records:

- ``name``, ``file`` (the ``NN-<stage>.ir`` file), ``seconds``, ``nodes``
  (node count) and ``changed``, as in ``CompiledModel.history``;
- ``text``: the IR text;
- ``diff``: the text diffed against the previous stage's, one row
  ``[mark, line]`` per line, mark ``" "`` (kept), ``"-"`` (gone), ``"+"``
  (new). Lines are matched by *identity*, not by text: a node line's key is
  the node object and what it reads and computes (op, attributes, the
  identities of its inputs, output types), a constant's is the constant value
  object, a ``return``'s the values it returns, other lines are their text. The printer renumbers values in every
  stage, so a text diff would mark nodes that only changed names; this one
  marks exactly the nodes a pass created, erased or rewired
  (``difflib.SequenceMatcher`` over the keys);
- ``ir``: one entry per node, ``{"id", "op", "line", "inputs", "origins"}``:
  ``id`` stable across stages (the same node object keeps its id), ``line``
  its first line in ``text`` (0-based), ``inputs`` the ids of the nodes
  producing its inputs, ``origins`` the PyTensor op and the user's source
  line of each ``ir.core.Origin`` (file named by ``provenance``, as the
  ONNX model names it: ``backends.onnx.provenance.SourcePaths``);
- ``fired`` / ``declined``: the pattern rules that fired in this pass
  (``[rule, count]``) and those whose pattern matched but whose rewrite
  declined (``[rule, reason, count]``): the change of the compilation's
  ``passes.rewrite_log.RewriteLog`` over the pass.

``onnx_nodes`` adds the final model's nodes: ``{"name", "op", "ir",
"origins"}``, where ``ir`` lists the ids of the final stage's IR nodes that
were emitted as that node (``backends.onnx.build_model(..., emitted_for=)``).
"""

from __future__ import annotations

import difflib
from typing import Any

from backends.onnx.provenance import SourcePaths
from ir import Graph
from ir.core import Node, Value
from ir.printer import format_graph
from passes.rewrite_log import RewriteLog


class StageRecorder:
    """Collects the explorer's stage records of one compilation (see the
    module docstring).

    Args:
        log: the compilation's ``RewriteLog`` (read before and after each
            pass).
        provenance: ``"relative"``, ``"absolute"`` or ``"none"`` (no
            source lines), as ``CompileOptions.provenance``.
        provenance_root: the directory relative paths start from.
        full_weights: print constants in full (``CompileOptions.full_weights``).
    """

    def __init__(self, log: RewriteLog, provenance: str = "relative", provenance_root=None,
                 full_weights: bool = False) -> None:
        self.log = log
        self.paths = SourcePaths(provenance, provenance_root) if provenance != "none" else None
        self.full_weights = full_weights
        self.stages: list[dict] = []
        self._ids: dict[Any, int] = {}  # node or value object -> stable id (holds them: ids are never reused)
        self._keys: list = []
        self._lines: list[str] = []
        self._fired = self._declined = None

    def id_of(self, obj) -> int:
        """The stable id of a node or value object (new objects get the next one)."""
        found = self._ids.get(obj)
        if found is None:
            found = self._ids[obj] = len(self._ids)
        return found

    def before_pass(self) -> None:
        """Remember the rewrite counts before a pass."""
        self._fired, self._declined = self.log.fired.copy(), self.log.declined.copy()

    def record(self, graph: Graph, name: str, file: str, changed: bool, seconds: float) -> str:
        """Record the stage that just ran on ``graph``; returns its IR text
        (what the driver writes to ``file``)."""
        printed = format_graph(graph, full_weights=self.full_weights)
        keys: list = list(printed.lines)
        nodes = []
        for obj, line in printed.lines_of.items():
            if isinstance(obj, Node):
                keys[line] = self._node_key(obj)
                nodes.append(self._node_entry(obj, line))
            elif isinstance(obj, Value) and obj.producer is None and obj.const is not None:
                keys[line] = ("const", self.id_of(obj))
            elif isinstance(obj, Graph):
                keys[line] = ("return", tuple(self.id_of(v) for v in obj.outputs))
        nodes.sort(key=lambda n: n["line"])
        fired, declined = [], []
        if self._fired is not None:
            fired = [[rule, n - self._fired[rule]] for rule, n in self.log.fired.items() if n > self._fired[rule]]
            declined = [[rule, reason, n - self._declined[(rule, reason)]]
                        for (rule, reason), n in self.log.declined.items() if n > self._declined[(rule, reason)]]
            self._fired = None
        self.stages.append({"name": name, "file": file, "seconds": seconds, "nodes": len(graph),
                            "changed": changed, "text": printed.text, "diff": self._diff(keys, printed.lines),
                            "ir": nodes, "fired": fired, "declined": declined})
        self._keys, self._lines = keys, printed.lines
        return printed.text

    def _node_key(self, node: Node) -> tuple:
        return ("node", self.id_of(node), node.op, repr(node.attrs), tuple(self.id_of(v) for v in node.inputs),
                tuple(str(v.type) for v in node.outputs))

    def _node_entry(self, node: Node, line: int) -> dict:
        return {"id": self.id_of(node), "op": node.op, "line": line,
                "inputs": sorted({self.id_of(v.producer) for v in node.inputs if v.producer is not None}),
                "origins": self.origins(node.origins)}

    def origins(self, origins) -> list[dict]:
        """``ir.core.Origin`` tuples as ``{"op", "source"}`` dicts (source
        files named as ``provenance`` asks; no source with ``"none"``)."""
        return [{"op": o.op, "source": self.paths(o.source) if self.paths is not None else None} for o in origins]

    def _diff(self, keys: list, lines: list[str]) -> list[list[str]]:
        if not self.stages:
            return [[" ", line] for line in lines]
        rows: list[list[str]] = []
        matcher = difflib.SequenceMatcher(None, self._keys, keys, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                rows += [[" ", line] for line in lines[j1:j2]]
                continue
            rows += [["-", line] for line in self._lines[i1:i2]]
            rows += [["+", line] for line in lines[j1:j2]]
        return rows

    def onnx_nodes(self, emitted_for: dict) -> list[dict]:
        """The final model's top-level nodes (``emitted_for``: ``onnx_ir``
        node -> the IR node it was emitted for, in model order) as
        ``{"name", "op", "ir": [IR node id], "origins"}``."""
        return [{"name": node.name, "op": node.op_type if not node.domain else f"{node.domain}:{node.op_type}",
                 "ir": [self.id_of(ir_node)] if ir_node is not None else [],
                 "origins": self.origins(ir_node.origins) if ir_node is not None else []}
                for node, ir_node in emitted_for.items()]
