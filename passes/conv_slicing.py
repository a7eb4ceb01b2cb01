"""``conv-slicing``: channel slices of a conv's result become convs of the
kernel's slices.

A conv with constant weights (and a constant bias or none), one group, whose
result, after a chain of single-reader one-input elementwise ops (the
activation: ``silu``, ``relu``, ...), is read only by ``slice`` nodes that
take static, non-overlapping ranges of its channels (axis 1, step 1),
becomes one conv per slice, each computing only its channels, followed by
its own copy of the chain::

    %c: f32[1,32,80,80] = conv(%x, %W, %b) {group=1, ...}
    %a: f32[1,32,80,80] = silu(%c)
    %lo: f32[1,16,80,80] = slice(%a, %zero, %sixteen, %one) {axes=[1]}
    %hi: f32[1,16,80,80] = slice(%a, %sixteen, %thirty_two, %one) {axes=[1]}
  ->
    const %W_0: f32[16,32,1,1] = W[0:16]      const %b_0: f32[16] = b[0:16]
    const %W_1: f32[16,32,1,1] = W[16:32]     const %b_1: f32[16] = b[16:32]
    %lo: f32[1,16,80,80] = silu(conv(%x, %W_0, %b_0) {...})
    %hi: f32[1,16,80,80] = silu(conv(%x, %W_1, %b_1) {...})

Each output channel of a conv is its own dot product over the same input
window, and an elementwise op maps channel by channel, so every result
element is the same dot product followed by the same ops; only the order in
which a backend sums a dot product may change with the kernel's shape
(onnxruntime's blocked kernels, NumPy's BLAS: the last bits, the sign of a
zero sum), within the numerics contract's convolution bound. The slices are
disjoint, so the convs do at most the original work (less when some
channels are never read). What it saves is the data movement of
the slices: CSP blocks (YOLO's C3k2 and C2PSA: ``cv1(x).chunk(2, 1)``)
otherwise copy the halves out, and in onnxruntime the ``Split`` also takes
the tensor out of the blocked NCHWc layout and back (``ReorderOutput``,
``ReorderInput``) and keeps the block's ``Concat`` out of it.

One visit per conv node; the work per conv is linear in its readers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ir import Graph, Node, Value
from ir.opdef import ELEMENTWISE, get_op
from ir.ops.common import normalize_axis
from ir.transforms import add_fresh_constant, walk_scopes
from passes.base import Pass, register_pass


def _activation_chain(graph: Graph, value: Value) -> tuple[list[Node], Value]:
    """The single-reader one-input elementwise nodes applied to ``value`` in
    turn (a graph output ends the chain), and the chain's last result."""
    chain: list[Node] = []
    while value.num_uses == 1 and not graph.is_output(value):
        node, _ = value.uses()[0]
        if len(node.inputs) != 1 or len(node.outputs) != 1 or not get_op(node.op).has(ELEMENTWISE):
            break
        chain.append(node)
        value = node.outputs[0]
    return chain, value


def _channel_range(node: Node, channels: int) -> tuple[int, int] | None:
    """``(start, stop)`` when ``node`` is a static step-1 ``slice`` of axis 1
    only, taking at least one of ``channels`` channels, else None."""
    if node.op != "slice" or len(node.inputs) != 4:
        return None
    axes = [normalize_axis(a, node.inputs[0].rank, "slice") for a in node.attrs["axes"]]
    consts = [v.const for v in node.inputs[1:]]
    if axes != [1] or any(c is None or np.size(c) != 1 for c in consts):
        return None
    start, stop, step = (int(np.asarray(c).reshape(-1)[0]) for c in consts)
    if step != 1:
        return None
    start, stop, _ = slice(start, stop, 1).indices(channels)
    return (start, stop) if start < stop else None


def _slices(graph: Graph, conv: Node) -> tuple[list[Node], list[tuple[Node, int, int]]] | None:
    """The activation chain after ``conv`` and its ``(slice node, start,
    stop)`` readers, when ``conv`` can be cut into them, else None."""
    if conv.attrs.get("group", 1) != 1 or len(conv.inputs) not in (2, 3):
        return None
    if any(v.const is None for v in conv.inputs[1:]):
        return None
    out = conv.outputs[0]
    channels = out.shape[1]
    if not isinstance(channels, int) or graph.is_output(out):
        return None
    chain, last = _activation_chain(graph, out)
    if graph.is_output(last) or last.num_uses == 0:
        return None
    readers = []
    for node, _ in last.uses():
        bounds = None if node.inputs[0] is not last else _channel_range(node, channels)
        if bounds is None:
            return None
        readers.append((node, *bounds))
    taken = sorted((a, b) for _, a, b in readers)
    if any(b > c for (_, b), (c, _) in zip(taken, taken[1:])):
        return None  # overlapping slices would compute channels twice
    return chain, readers


def _cut(graph: Graph, conv: Node, chain: list[Node], readers, reserved: set[str]) -> None:
    """Replace each slice reader by a conv of its channels plus the chain."""
    weights, bias = conv.inputs[1], (conv.inputs[2] if len(conv.inputs) == 3 else None)
    for node, start, stop in readers:
        inputs = [conv.inputs[0],
                  add_fresh_constant(graph, weights.const[start:stop], f"{weights.name}_{start}_{stop}", reserved)]
        if bias is not None:
            inputs.append(add_fresh_constant(graph, bias.const[start:stop], f"{bias.name}_{start}_{stop}", reserved))
        value = inputs[0]
        for k, step in enumerate([conv, *chain]):
            name = node.outputs[0].name if k == len(chain) else None  # the piece keeps the slice's name
            mapped = graph.create_node(step.op, inputs if k == 0 else [value], dict(step.attrs), output_names=[name])
            mapped.origins = step.origins
            graph.insert_before(node, mapped)
            value = mapped.outputs[0]
        graph.replace_all_uses(node.outputs[0], value)
        graph.erase(node)
    for dead in reversed(chain):
        graph.erase(dead)
    graph.erase(conv)


@register_pass
@dataclass(frozen=True)
class ConvSlicing(Pass):
    """Disjoint static channel slices of a constant-weight conv (through its
    activation) -> one conv per slice over the sliced kernel (module doc)."""

    name = "conv-slicing"
    visits_nested_graphs = True
    after = ("batchnorm-folding", "filter-flip", "relu-silu")

    def run(self, graph: Graph) -> bool:
        changed = False
        for g, reserved in walk_scopes(graph):
            for node in list(g.nodes):
                if node.op != "conv":
                    continue
                found = _slices(g, node)
                if found is not None:
                    _cut(g, node, *found, reserved)
                    changed = True
        return changed
