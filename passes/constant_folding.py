"""``constant-folding``: evaluate nodes whose inputs are all constants.

Rules:

1. A node whose inputs are all constants and whose outputs have static
   shapes of at most ``max_elements`` elements in total is replaced by
   constants computed with the op's NumPy reference (``OpDef.evaluate``,
   the semantics the interpreter runs and the emitter implements); ops
   with the ``random`` trait never fold (a draw is new at every run)::

       const %two: f32[] = 2.0              const %two: f32[] = 2.0
       const %c: f32[3] = [1.0, 2.0, 3.0]   const %c: f32[3] = [1.0, 2.0, 3.0]
       %s: f32[3] = mul(%c, %two)   ->      const %s: f32[3] = [2.0, 4.0, 6.0]
       %y: f32[N,3] = add(%x, %s)           %y: f32[N,3] = add(%x, %s)
       return %y                            return %y

2. ``shape(%x)`` of an ``%x`` whose type is fully static is the constant
   shape, whatever ``%x`` is::

       %s: i64[2] = shape(%x)       ->      const %s: i64[2] = [4, 3]

Folded constants take the name hint of the output they replace (else the
op's name), made unique, also against the names of the graphs enclosing
and nested in theirs: loop and if bodies are folded too
(``ir.transforms.walk_scopes``). They are read-only copies (``Graph.add_constant``),
so a user's arrays are never aliased or modified. The inputs left unused are
removed by ``dce``. The forward walk folds chains in one pass: O(nodes +
folded elements).

Not folded: outputs without a static shape (``nonzero``) or over the limit
(an ``expand`` of a scalar to a large shape stays an Expand node: the model
keeps the small input instead of a big initializer), nodes with subgraphs
themselves (their bodies are folded inside), and nodes whose evaluation raises (an out-of-range ``gather`` index is left
for the runtime to report).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import numpy as np

from ir import Graph, Node, TensorType, get_op
from ir.opdef import RANDOM
from ir.transforms import FOLD_MAX_ELEMENTS, add_fresh_constant, walk_scopes
from passes.base import Pass, register_pass

log = logging.getLogger(__name__)

# 65536 elements (256 KiB of float32) covers every shape, index and mask
# computation and small lookup tables, while a folded op of a large weight
# (``transpose(W)`` of a 1024x1024 layer, 4 MiB) is not copied into a second
# initializer; ONNX runtimes fold such ops once at session load anyway.


@register_pass
@dataclass(frozen=True)
class ConstantFolding(Pass):
    """Replace nodes with constant inputs (and ``shape`` of static types) by
    constants (see the module docstring).

    Attributes:
        max_elements: the largest total number of output elements of a node
            that is folded.
    """

    name = "constant-folding"
    visits_nested_graphs = True
    max_elements: int = FOLD_MAX_ELEMENTS

    def run(self, graph: Graph) -> bool:
        changed = False
        for g, reserved in walk_scopes(graph):  # nested bodies too; names avoid the other scopes'
            for node in g:
                results = self._fold(node)
                if results is None:
                    continue
                for out, array in zip(node.outputs, results):
                    const = add_fresh_constant(g, array, _const_name(out.name or node.op), reserved, type=out.type)
                    g.replace_all_uses(out, const)
                g.erase(node)
                changed = True
        return changed

    def _fold(self, node: Node) -> list[np.ndarray] | None:
        """The output arrays of ``node`` if it can be folded, else None (with
        the reason logged at debug level)."""
        if node.op == "shape" and node._inputs[0].type.is_static:
            return [np.array(node._inputs[0].shape, dtype=np.int64)]
        for v in node._inputs:  # the common case first: a computed input
            if v.const is None:
                return None
        if node.subgraphs or get_op(node.op).has(RANDOM):  # a draw is new at every run
            return None
        sizes = [v.type.size for v in node.outputs]
        if None in sizes:
            log.debug("not folding %s: an output shape is not static", node.op)
            return None
        if sum(sizes) > self.max_elements:
            log.debug("not folding %s: %d output elements > max_elements=%d", node.op, sum(sizes),
                      self.max_elements)
            return None
        try:
            with np.errstate(all="ignore"):
                results = [np.asarray(r) for r in get_op(node.op).evaluate([v.const for v in node.inputs],
                                                                             node.attrs)]
        except Exception as e:  # noqa: BLE001 - the runtime raises it again, at run time
            log.debug("not folding %s: evaluation raised %s: %s", node.op, type(e).__name__, e)
            return None
        for out, array in zip(node.outputs, results, strict=True):
            if TensorType.of_array(array) != out.type:
                raise RuntimeError(f"the NumPy semantics of {node.op} gave a {array.dtype} array of shape "
                                   f"{array.shape}, but its type rule says {out.type}")
        return results


def _const_name(hint: str) -> str:
    """A constant name from a value's name hint: characters outside
    ``[A-Za-z0-9_.]`` become ``_``."""
    if hint.isascii() and hint.replace("_", "a").replace(".", "a").isalnum():
        return hint  # already a valid name: no regular expression
    return re.sub(r"[^A-Za-z0-9_.]", "_", hint) or "const"
