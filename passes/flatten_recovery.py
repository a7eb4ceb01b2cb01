"""``flatten-recovery``: a reshape to rank 2 that keeps the leading dims'
product becomes ``flatten`` (ONNX Flatten).

Rule:

1. reshape-flatten: ``reshape(x, t)`` with a rank-2 result ``(P, Q)``,
   where for some ``k`` in ``0..rank(x)``, ``P = prod(x.shape[:k])`` and
   ``Q = prod(x.shape[k:])``, is ``flatten{axis=k}(x)``. ``t`` may hold a -1
   (inferred) for one of them, and may be computed at run time (a symbolic
   batch: ``x.reshape((x.shape[0], -1))`` lowers to a ``concat`` of
   ``shape(x)[0]`` and -1); ``passes.shape_facts`` reads what it holds, and
   the dims of the result's type count too::

       %s: i64[4] = shape(%x)                  (%x: f32[N,16,5,5])
       %n: i64[] = gather(%s, %zero) {axis=0}
       %u: i64[1] = unsqueeze(%n) {axes=[0]}
       %t: i64[2] = concat(%u, %minus_one) {axis=0}
       %y: f32[?,?] = reshape(%x, %t)
     ->
       %y: f32[N,400] = flatten(%x) {axis=1}

   The shape computation left dead is erased. The smallest such ``k`` is
   chosen (size-1 dims make several ``k`` equivalent); a rank-2 ``x``
   reshaped to its own dims is ``x``.

Exact, with one difference on an error case: PyTensor (NumPy) refuses to
infer a -1 when the other dim is 0 (an empty batch), which Flatten accepts.
One visit per reshape node, O(rank) work each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ir import Value, symbolic
from passes.base import TYPES, register_pass
from passes.rewrite import Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var
from passes.shape_facts import DimOf, dim_source, elements

INFERRED = -1  # the reshape target entry NumPy infers


def _product(x: Value, axes: range) -> Any:
    """A dim token for the product of ``x``'s dims over ``axes``: an int, a
    named dim or an ``ir.symbolic`` expression; None when a dim is only
    known as ``DimOf`` and the others are not all 1."""
    tokens = [dim_source(x, a) for a in axes]
    opaque = [t for t in tokens if isinstance(t, DimOf)]
    if not opaque:
        return symbolic.product(tokens)
    others = [t for t in tokens if not isinstance(t, DimOf)]
    return opaque[0] if len(opaque) == 1 and all(t == 1 for t in others) else None


def _target(m: Match) -> list | str:
    """What the reshape makes of each of its two dims: a token, or
    ``INFERRED``."""
    out = m.root.output
    held = elements(m.shape)
    target = []
    for i in range(2):
        held_i = held[i] if held is not None else None
        if held_i == INFERRED:
            target.append(INFERRED)
        elif held_i is not None:
            target.append(held_i)
        elif out.shape[i] is not None:
            target.append(out.shape[i])
        else:
            return f"dim {i} of the reshape target is unknown"
    if target.count(INFERRED) == 2:
        return "both target dims are -1"
    return target


def reshape_flatten(rw: Rewriter, m: Match) -> Value | str:
    """reshape(x, (prod(dims[:k]), prod(dims[k:]))) -> flatten{axis=k}(x)."""
    x = m.x
    if m.root.output.rank != 2:
        return f"reshapes to rank {m.root.output.rank}, not 2"
    target = _target(m)
    if isinstance(target, str):
        return target
    for k in range(x.rank + 1):
        lead, tail = _product(x, range(k)), _product(x, range(k, x.rank))
        if all(t == INFERRED or (t == want and want is not None) for t, want in zip(target, (lead, tail))):
            return x if x.rank == 2 and k == 1 else rw.add("flatten", [x], {"axis": k})
    return f"the target {target} is not (prod(dims[:k]), prod(dims[k:])) of {x.type} for any k"


RULES = RuleSet([
    # reshape(x, (prod(x.shape[:k]), prod(x.shape[k:]))) -> flatten{axis=k}(x)
    Rule("reshape-flatten", Op("reshape", Var("x"), Var("shape")), reshape_flatten),
])


@register_pass
@dataclass(frozen=True)
class FlattenRecovery(RuleSetPass):
    """Turn rank-2 flattening reshapes into flatten (see the module docstring)."""

    name = "flatten-recovery"
    requires = (TYPES,)  # compares sizes read from dims (dim_source)
    rules = RULES
