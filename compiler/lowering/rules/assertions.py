"""Lowering of assertions: ``CheckAndRaise`` (``pytensor.raise_op``), its
subclass ``Assert``, and PyMC's ``CheckParameterValue``.

ONNX has no way to raise, so an assertion becomes a value:

- ``CheckParameterValue`` with ``can_be_replaced_by_ninf`` (what PyMC's
  ``check_parameters`` builds around every distribution's parameter
  constraints) is ``where(all(conds), x, -inf)``: PyMC's own rewrite
  ``pymc.logprob.utils.local_check_parameter_to_ninf_switch``, which
  ``pymc.pytensorf.compile`` applies to every function a model compiles
  (``switch(cond, logp, -inf)``), so a log-density outside the support is
  -inf rather than an error.
- an assertion whose conditions are computed from constants alone (compiled
  functions keep checks such as "the dims of a weight and its bias agree" on
  shared variables, which ``bake_shared=True`` makes constants) is evaluated
  here with the IR ops' NumPy semantics: when it holds it lowers to its value
  with no warning; when it fails it is reported (PyTensor would raise on
  every call).
- every other assertion follows ``LoweringOptions.assertions``: ``"drop"``
  returns the guarded value unchanged (the driver warns once, listing each
  dropped assertion with its source line); ``"nan"`` returns
  ``where(all(conds), x, nan)`` so a violated assertion is visible in the
  result (float values only: an integer value cannot hold NaN, so that is
  ``Unsupported``); ``"raise"`` returns the guarded value unchanged and
  makes ``all(conds)`` (one bool scalar) an extra graph output, described by
  an ``AssertionOutput``; ``CompiledModel.run`` and the PyTensor mode raise
  ``exc_type(msg)`` (``raise_failed``) when it is False, as
  ``CheckAndRaise.perform`` does. In a scan body the check is a per-step
  bool output of the loop, reduced after it (``keep_assertion``,
  ``first_failing_step``, ``rules/scan.py``): False when it failed at the
  first step where some check of the body failed, so the error raised is
  PyTensor's, the first failing one of the first failing step. What
  only an ``IfElse`` branch computes is ``Unsupported`` (PyTensor checks it
  only when the branch runs; use ``"drop"`` or ``"nan"``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
from pytensor.raise_op import CheckAndRaise

from compiler.lowering.errors import Unsupported
from compiler.lowering.context import LoweringContext
from compiler.lowering.registry import lowers
from ir import DType, Value, get_op

MAX_STEPS = 64  # producers one condition may evaluate


@dataclass(frozen=True)
class AssertionOutput:
    """One assertion kept under ``assertions="raise"``: a bool scalar output
    of the model, True when every condition holds.

    Attributes:
        name: the ONNX output name (``assert_<k>`` unless taken; the driver
            writes the emitted name into ``CompiledModel.assertions``).
        exc_type: the exception class the PyTensor op raises
            (``CheckAndRaise.exc_type``: ``AssertionError`` for ``Assert``).
        message: its message (``CheckAndRaise.msg``, possibly "").
        source: the user's source line (``file:line``) of the assertion, or
            None.
    """

    name: str
    exc_type: type
    message: str
    source: str | None = None

    def error(self) -> BaseException:
        """The exception PyTensor raises for this assertion:
        ``exc_type(message)`` (``CheckAndRaise.perform``)."""
        return self.exc_type(self.message)


def raise_failed(assertions: Sequence[AssertionOutput], flags: Sequence) -> None:
    """Raise the error of the first assertion whose flag (the model's bool
    scalar output, in ``assertions``' topological order) is False, as
    PyTensor raises the first failing ``CheckAndRaise`` it runs.

    Raises:
        ``assertions[k].exc_type(message)`` for the first False ``flags[k]``.
    """
    for assertion, flag in zip(assertions, flags, strict=True):
        if not flag:
            raise assertion.error()


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
    except Exception:  # noqa: BLE001 - not evaluable here: treated as a run-time condition
        return None


def _all_true(ctx: LoweringContext, conds: list[Value]) -> Value:
    """One bool scalar: every element of every condition is true."""
    out = None
    for c in conds:
        c = ctx.cast(c, DType.BOOL)
        if c.rank:
            c = ctx.add("reduce_all", [c], {"axes": (), "keepdims": False})
        out = c if out is None else ctx.add("and", [out, c])
    return out


def _guard(ctx: LoweringContext, x: Value, conds: list[Value], fill: float) -> Value:
    if not conds:
        return x
    return ctx.add("where", [_all_true(ctx, conds), x, ctx.scalar(fill, x.dtype)])


@lowers(CheckAndRaise)
def lower_check_and_raise(ctx: LoweringContext, node) -> list[Value]:
    """``CheckAndRaise(x, *conds)`` / ``Assert`` / ``CheckParameterValue``:
    ``x`` (any dtype and shape) guarded by bool conditions (scalars in
    PyTensor; any shapes here, all elements must hold); returns a value of
    ``x``'s type (see the module docstring).

    Raises:
        Unsupported: ``assertions="nan"`` on a non-float value;
            ``assertions="raise"`` where ``keep_assertion`` refuses; a
            condition computed from constants alone that is false.
    """
    x, *conds = (ctx.get(v) for v in node.inputs)
    known = [static_value(c) for c in conds]
    if conds and all(k is not None for k in known):
        if all(np.all(k) for k in known):
            return [x]
        if not getattr(node.op, "can_be_replaced_by_ninf", False):
            message = getattr(node.op, "msg", str(node.op))
            raise Unsupported(f"the check {message!r} fails for the constant (baked shared) values")
    fill = guard_fill(node.op, x.dtype.is_float, ctx.options.assertions)
    if fill is not None:
        return [_guard(ctx, x, conds, fill)]
    if ctx.options.assertions == "drop":
        ctx.record.dropped.append((str(node.op), ctx.source))
        return [x]
    if ctx.options.assertions == "raise":
        return [_raised(ctx, node, x, conds)]
    raise Unsupported(f"assertions='nan' cannot poison a {x.dtype} value with NaN (use assertions='drop')")


def guard_fill(op, is_float: bool, assertions: str) -> float | None:
    """The value a ``CheckAndRaise`` op's guarded value becomes where its
    conditions fail, or None where the lowering keeps no per-element value:
    -inf for PyMC's ``CheckParameterValue`` with ``can_be_replaced_by_ninf``
    on a float value, NaN under ``assertions="nan"`` on a float value; None
    otherwise (``"drop"`` keeps no condition; under ``"raise"`` the
    condition is an output; ``"nan"`` on a non-float value is refused).
    ``vectorize.pointwise_guards`` batches the same checks per point."""
    if not is_float:
        return None
    if getattr(op, "can_be_replaced_by_ninf", False):
        return -np.inf
    return np.nan if assertions == "nan" else None


def _raised(ctx: LoweringContext, node, x: Value, conds: list[Value]) -> Value:
    """``x``, keeping ``all(conds)`` as an assertion output (``"raise"``)."""
    if conds:
        keep_assertion(ctx, node, conds, AssertionOutput("", node.op.exc_type, node.op.msg, ctx.source))
    return x


def first_failing_step(ctx: LoweringContext, traces: list[Value]) -> list[Value]:
    """Per-step flags (``bool[steps]``, one per assertion of a loop body, in
    body order) reduced to one bool scalar each so that the first False
    one, in body order, is the assertion PyTensor raises: the first failing
    one at the first step where any fails. Flag ``j`` is False exactly when
    assertion ``j`` fails at that step (``s*``): ``all(T_j | ~first)``, where
    ``first`` marks ``s*`` (a failing step with ``cumsum(failing) == 1``);
    all True when no step fails (or none ran)."""
    if len(traces) == 1:
        return [_all_true(ctx, traces)]
    holds = traces[0]
    for t in traces[1:]:
        holds = ctx.add("and", [holds, t])
    failing = ctx.add("invert", [holds])
    count = ctx.add("cumsum", [ctx.cast(failing, DType.INT64)], {"axis": 0})
    first = ctx.add("and", [failing, ctx.add("eq", [count, ctx.scalar(1, DType.INT64)])])
    not_first = ctx.add("invert", [first])
    return [_all_true(ctx, [ctx.add("or", [t, not_first])]) for t in traces]


def keep_assertion(ctx: LoweringContext, node, conds: list[Value], assertion: AssertionOutput) -> None:
    """Make ``all(conds)`` (bool values of any shapes) the model output of
    ``assertion`` under ``assertions="raise"``: in the top-level graph it is
    the next graph output, named ``assert_<k>`` (``LoweringRecord.
    assertions``); in a scan body it goes to ``ctx.assertion_sink``, and
    the scan's rule makes it a per-step output that it reduces and keeps in
    turn (``rules/scan.py``). ``node`` is the PyTensor Apply node the check
    belongs to (the assertion, or the scan holding it).

    Raises:
        Unsupported: ``node`` is something only an ``IfElse`` branch needs
            (PyTensor checks it only when that branch runs), or ``ctx``
            builds a body other than a scan's.
    """
    if ctx.assertion_sink is not None and node not in ctx.branch_only:
        ctx.assertion_sink.append((_all_true(ctx, conds), assertion))
        return
    if ctx.graph is not ctx.record.main_graph or node in ctx.branch_only:
        raise Unsupported(f"assertions='raise' cannot raise the check {assertion.message!r} here: it is "
                          "computed only when an IfElse branch runs (PyTensor checks it only then) or inside "
                          "a body other than a scan's, so it cannot be a model output; use assertions='drop' "
                          "or 'nan' for this graph")
    name = f"assert_{len(ctx.record.assertions)}"  # the hint ``lower`` gives its output
    ctx.record.assertions.append((_all_true(ctx, conds), replace(assertion, name=name)))
