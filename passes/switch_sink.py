"""``switch-sink``: a product or quotient of a ``where`` with a zero branch
becomes a ``where`` of the product, as PyTensor's default modes compute it.

PyTensor's canonicalization (``local_mul_switch_sink`` and
``local_div_switch_sink``, ``pytensor/tensor/rewriting/math.py``, in 2.38
and 3.0, run by FAST_RUN and FAST_COMPILE alike) rewrites::

    mul(switch(c, 0, y), z)  ->  switch(c, 0, mul(y, z))
    mul(switch(c, y, 0), z)  ->  switch(c, mul(y, z), 0)
    div(switch(c, 0, y), z)  ->  switch(c, 0, div(y, z))      (the numerator only)

so that the gradient of a ``switch`` is 0 where the branch it did not take
is NaN or infinite (``pt.grad`` multiplies each branch's gradient by
``switch(c, 1, 0)``-like masks). This is not an exact identity: where ``c``
selects the zero and ``z`` is NaN or +-inf, the product is NaN and the
rewritten graph gives 0 (and a zero product's sign is lost: ``0 * -2`` is
``-0.0``, the rewrite's zero ``+0.0``). The graph a user compiles with
``pytensor.function`` computes the rewritten form, so this pass makes the
model of a raw graph give what the same graph gives in PyTensor (a compiled
function's graph already holds the rewritten form). Example: the gradient of
``log(gammainc(a, x))`` w.r.t. ``a`` at ``x = 0`` is
``(1 / gammainc(a, 0)) * switch(x == 0, 0, ...)`` = ``inf * 0`` in the
graph as written, and 0 in PyTensor::

    const %zero: f64[] = 0.0
    %s: f64[N] = where(%c, %zero, %y)
    %p: f64[N] = mul(%s, %z)          ->   %m: f64[N] = mul(%y, %z)
                                           %p: f64[N] = where(%c, %zero, %m)

The zero may be a constant of any shape whose every element is 0 (PyTensor
also looks through a ``DimShuffle`` or ``Alloc`` of one; lowering and
constant folding have made those constants here). Under ``passes=[]`` the
graph is emitted as written, like PyTensor without rewrites
(``Mode(optimizer=None)``). ``floor_div`` (PyTensor's ``int_div``) sinks as
``div`` does.
"""

from __future__ import annotations

from dataclasses import dataclass

from ir import Value
from passes.base import register_pass
from passes.rewrite import AnyOf, ConstEq, Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var

_ZERO = ConstEq(0, name="zero")
# Either branch of the where may be the zero; the where may have other readers (PyTensor sinks it regardless).
_SWITCH = AnyOf(Op("where", Var("c"), _ZERO, Var("y"), name="switch", single_use=False),
                Op("where", Var("c"), Var("y"), _ZERO, name="switch", single_use=False))


def sink(rw: Rewriter, m: Match) -> Value | str:
    """op(where(c, 0, y), z) -> where(c, 0, op(y, z)) (and with the zero in the
    other branch, or the where as mul's second operand)"""
    root, switch = m.root, m.switch
    position = root.inputs.index(switch.output)
    operands = list(root.inputs)
    operands[position] = m.y
    result = rw.add(root.op, operands, root.attrs)  # the IR's mul/div take one dtype: the zero's is the result's
    branches = [m.zero, result] if switch.inputs[1] is m.zero else [result, m.zero]
    return rw.add("where", [m.c, *branches])


RULES = RuleSet([
    Rule("mul-switch-sink", Op("mul", _SWITCH, Var()), sink),
    Rule("div-switch-sink", Op("div", _SWITCH, Var()), sink),
    Rule("floor-div-switch-sink", Op("floor_div", _SWITCH, Var()), sink),
])


@register_pass
@dataclass(frozen=True)
class SwitchSink(RuleSetPass):
    """Apply ``RULES`` to a fixpoint (see the module docstring): PyTensor's
    ``local_mul_switch_sink``/``local_div_switch_sink``. ``run`` returns
    True if any rule fired."""

    name = "switch-sink"
    rules = RULES
