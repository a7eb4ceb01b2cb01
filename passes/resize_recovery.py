"""``resize-recovery``: ``x.repeat(r, axis=a)`` with a constant count
becomes ``resize_nearest`` (ONNX Resize, mode nearest), and repeats along
several axes merge into one.

PyTensor writes the repeat as ExpandDims, Alloc and Reshape: a size-1 axis
is added after ``a``, broadcast to ``r`` and merged into ``a``. Rules:

1. repeat: ``reshape(expand(y, t), s)`` where ``y`` has a 1 at axis
   ``a + 1`` that ``t`` broadcasts to ``r`` (and broadcasts nothing else),
   and the reshape merges axes ``a`` and ``a + 1``, is ``y`` without that
   axis repeated ``r`` times along ``a``. ``y`` is ``unsqueeze(x)`` (then
   ``x`` is used) or anything else (then ``squeeze(y)``, which a following
   rule may see through). With a symbolic batch the targets ``t`` and ``s``
   are computed at run time from ``shape(x)``; what they hold is read with
   ``passes.shape_facts``. The repeated axis may be static or symbolic
   (``2*H`` for a named ``H``)::

       %u: f32[N,16,28,1,28] = unsqueeze(%x) {axes=[3]}
       %e: f32[N,16,28,2,28] = expand(%u, %t)
       %y: f32[N,16,56,28] = reshape(%e, %s)
     ->
       %y: f32[N,16,56,28] = resize_nearest(%x) {scales=[1, 1, 2, 1]}

2. repeat-squeezed: ``squeeze(reshape(expand(y, t)))`` is rule 1 with the
   squeeze's result as the reshape's (PyTensor's compiled graphs fuse the
   reshape of one repeat with the ExpandDims of the next).

3. merge: ``resize_nearest(resize_nearest(x, s1), s2)`` is one
   ``resize_nearest`` with scales ``s1 * s2`` (``np.repeat`` along different
   axes commutes; along one axis the counts multiply)::

       %a: f32[N,C,8,4] = resize_nearest(%x) {scales=[1, 1, 2, 1]}
       %y: f32[N,C,8,8] = resize_nearest(%a) {scales=[1, 1, 1, 2]}
     ->
       %y: f32[N,C,8,8] = resize_nearest(%x) {scales=[1, 1, 2, 2]}

Exact: every rewrite moves the same elements to the same places. Nodes left
dead (the broadcast and its shape computation) are erased. Each node is
visited once per change of its inputs, with bounded work: linear.
"""

from __future__ import annotations

from dataclasses import dataclass

from ir import Value, symbolic
from passes.base import TYPES, register_pass
from passes.rewrite import Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var
from passes.shape_facts import DimOf, dim_source, elements


def repeat(rw: Rewriter, m: Match) -> Value | str:
    """[squeeze](reshape(expand(y, t))) -> resize_nearest (rules 1 and 2)."""
    y, out = m.y, m.root.output
    expanded = m.expand.output
    target = elements(m.expand.inputs[1])
    if target is None or y.rank != expanded.rank:
        return "the expand target is unknown or adds axes"
    ones = [i for i in range(1, y.rank) if y.shape[i] == 1 and isinstance(target[i], int) and target[i] > 1]
    if len(ones) != 1:
        return "the expand does not broadcast exactly one size-1 axis after the first"
    axis, count = ones[0] - 1, target[ones[0]]
    dims = [dim_source(y, i) for i in range(y.rank)]
    if any(t != 1 and t != d for i, (t, d) in enumerate(zip(target, dims)) if i != axis + 1):
        return "the expand broadcasts another axis"
    if isinstance(dims[axis], DimOf):
        return f"axis {axis} of {y.type} has no known size, static or named"
    want = dims[:axis] + [symbolic.mul(dims[axis], count)] + dims[axis + 2:]
    if out.rank != len(want) or any(dim_source(out, i) != d for i, d in enumerate(want)):
        return f"the reshape to {out.type} does not merge axes {axis} and {axis + 1} of {expanded.type}"
    unsqueeze = y.producer
    if unsqueeze is not None and unsqueeze.op == "unsqueeze" and list(unsqueeze.attrs["axes"]) in ([axis + 1],
                                                                                                   [axis + 1 - y.rank]):
        x = unsqueeze.inputs[0]
    else:
        x = rw.add("squeeze", [y], {"axes": [axis + 1]})
    scales = [1] * x.rank
    scales[axis] = count
    return rw.add("resize_nearest", [x], {"scales": scales})


def merge(rw: Rewriter, m: Match) -> Value | str:
    """resize_nearest(resize_nearest(x, s1), s2) -> resize_nearest(x, s1 * s2) (rule 3)."""
    inner = m.inner.attrs["scales"]
    scales = [a * b for a, b in zip(inner, m.root.attrs["scales"])]
    return rw.add("resize_nearest", [m.x], {"scales": scales})


EXPAND = Op("expand", Var("y"), Var(), name="expand")

RULES = RuleSet([
    # reshape(expand(unsqueeze(x))) merging the new axis -> resize_nearest(x)
    Rule("repeat", Op("reshape", EXPAND, Var()), repeat),
    # squeeze(reshape(expand(y))) -> resize_nearest(...)
    Rule("repeat-squeezed", Op("squeeze", Op("reshape", EXPAND, Var())), repeat),
    # resize_nearest(resize_nearest(x)) -> resize_nearest(x) with the scales multiplied
    Rule("merge", Op("resize_nearest", Op("resize_nearest", Var("x"), name="inner")), merge),
])


@register_pass
@dataclass(frozen=True)
class ResizeRecovery(RuleSetPass):
    """Recover nearest upsampling from PyTensor's repeat (see the module docstring)."""

    name = "resize-recovery"
    requires = (TYPES,)  # compares sizes read from dims (dim_source)
    rules = RULES
