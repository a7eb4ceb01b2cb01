"""Lowering of PyTensor's run-time checks (``CheckAndRaise``, ``Assert``).

Compiled functions keep checks that PyTensor could not prove when it
compiled, typically "the dims of a weight and its bias agree" on shared
variables whose shapes are not static. When the shared variables are baked
into the model (``bake_shared=True``) such a check depends on constants
only: it is evaluated here, at compile time, with the IR ops' NumPy
semantics. A check that holds lowers to its first input unchanged; one that
fails, or one that depends on graph inputs (ONNX has no assertion
operator), is reported as unsupported with the check's message.
"""

from __future__ import annotations

import numpy as np
from pytensor.raise_op import CheckAndRaise

from compiler.errors import Unsupported
from compiler.lowering.registry import lowers
from ir import Value, get_op

MAX_STEPS = 64  # producers one condition may evaluate


def static_value(value: Value, budget: list[int] | None = None) -> np.ndarray | None:
    """``value``'s array when it is computed from constants (and ``shape``
    of static types) alone, by at most ``MAX_STEPS`` IR ops evaluated with
    their NumPy semantics; else None."""
    if value.const is not None:
        return value.const
    node = value.producer
    budget = budget if budget is not None else [MAX_STEPS]
    if node is None or node.subgraphs or budget[0] <= 0:
        return None
    budget[0] -= 1
    if node.op == "shape" and node.inputs[0].type.is_static:
        return np.array(node.inputs[0].shape, dtype=np.int64)
    args = [static_value(v, budget) for v in node.inputs]
    if any(a is None for a in args):
        return None
    try:
        with np.errstate(all="ignore"):
            return np.asarray(get_op(node.op).evaluate(args, node.attrs)[value.index])
    except Exception:  # noqa: BLE001 - not evaluable here: the check stays unsupported
        return None


@lowers(CheckAndRaise)
def lower_check(ctx, node):
    """The checked value, when every condition is statically true (module
    docstring).

    Raises:
        Unsupported: a condition that depends on graph inputs, or is false.
    """
    message = getattr(node.op, "msg", str(node.op))
    for cond in node.inputs[1:]:
        value = static_value(ctx.get(cond))
        if value is None:
            raise Unsupported(f"a run-time check that depends on the inputs ({message!r}); ONNX has no "
                              f"assertion operator (bake shared variables, or give the inputs static shapes)")
        if not np.all(value):
            raise Unsupported(f"the check {message!r} fails for the baked shared values")
    return [ctx.get(node.inputs[0])]
