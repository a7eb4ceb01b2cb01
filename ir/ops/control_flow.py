"""Control-flow ops: ``loop`` (ONNX Loop) and ``if`` (ONNX If), whose
bodies are nested graphs. (Copying and inlining bodies: ``ir.transforms``.)

**Capture is explicit.** A body reads only its own inputs and constants:
every value of the enclosing graph it needs is an input of the node and
arrives as a body input. (ONNX lets bodies read outer values implicitly;
the emitter turns explicit captures back into such reads.) So the use lists
of the enclosing graph see every read — DCE keeps what a body needs, CSE
and constant folding may replace a captured value like any other operand —
and a body is copied or inlined by binding its inputs (``ir.transforms.inline``). The
type rules check that bodies are closed.

``loop``, by example (a running sum of the rows of ``%xs``)::

    %s: f32[3], %ys: f32[T,3] = loop(%n, %s0, %xs) {has_condition=false, num_carried=1} (
      body: graph @scan0(%scan0.i: i64[], %scan0.s: f32[3], %scan0.xs: f32[T,3]) {
        %x: f32[3] = gather(%scan0.xs, %scan0.i) {axis=0}
        %s1: f32[3] = add(%scan0.s, %x)
        return %s1, %s1
      })

Inputs ``(n, *init, *invariant)``: the trip count ``n`` (``i64[]``), the
``num_carried`` initial loop-carried values and the invariant values. Body
inputs ``(i, *carried, *invariant)`` with ``i`` the iteration number
(``i64[]``). Body outputs ``([continue], *carried_next, *step)``: with
``has_condition`` first a ``bool[]`` that is false to stop after this
iteration, then the next carried values, then any number of per-step values.
Outputs ``(*carried_final, *stacked)``: the carried values after the last
iteration and the per-step values stacked along a new axis 0. Semantics
(ONNX Loop with an initial condition of true; PyTensor Scan's loop)::

    carried = init; steps = []
    for i in range(n):
        cond, carried, step = body(i, *carried, *invariant)
        steps.append(step)
        if has_condition and not cond: break

A stacked output of zero iterations has shape ``(0, *step_shape)``: an
unknown step dim named like a dim of a body input (``x_dim0``) has that
input's size in this run, other unknown dims are 0.

``if``: inputs ``(cond, *captured)`` with ``cond`` a ``bool[]``; the
``then`` and ``else`` graphs both take ``captured`` and return the same
number of values; the node returns those of the branch ``cond`` selects
(ONNX If; PyTensor IfElse). Output dims the branches disagree on are unknown.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ir.core import Graph
from ir.ops.common import BOOL, INT64, known_dims
from ir.opdef import Attr, OpDef, OpError, register
from ir.types import TensorType, dims_compatible


def _compatible(a: TensorType, b: TensorType) -> bool:
    return (a.dtype == b.dtype and a.rank == b.rank
            and all(dims_compatible(x, y) for x, y in zip(a.shape, b.shape)))


def _check_closed(graph: Graph, op: str, role: str) -> None:
    """OpError unless every node input of ``graph`` (nested graphs included)
    is defined inside it: explicit capture (see the module docstring)."""
    stack = [graph]
    while stack:
        g = stack.pop()
        local = set(g.inputs) | set(g.constants.values())
        for node in g:
            for v in node.inputs:
                if v not in local:
                    raise OpError(f"{op}: {role} graph @{graph.name} reads %{v.name or '?'}, which is not "
                                  f"its own value (bodies capture explicitly, through node inputs)")
            local.update(node.outputs)
            stack.extend(node.subgraphs.values())
        for v in g.outputs:
            if v not in local:
                raise OpError(f"{op}: {role} graph @{graph.name} returns %{v.name or '?'}, which is not its own value")


def _check_inputs(graph: Graph, types: Sequence[TensorType], op: str, role: str) -> None:
    if len(graph.inputs) != len(types):
        raise OpError(f"{op}: {role} graph @{graph.name} takes {len(graph.inputs)} inputs, the node passes {len(types)}")
    for k, (v, t) in enumerate(zip(graph.inputs, types)):
        if not _compatible(v.type, t):
            raise OpError(f"{op}: {role} input {k} %{v.name} is {v.type}, the node passes {t}")


# -- loop -------------------------------------------------------------------
def _loop_infer(types, attrs, consts, subgraphs):
    body: Graph = subgraphs["body"]
    k, cond = attrs["num_carried"], int(attrs["has_condition"])
    if not types or types[0] != TensorType(INT64, ()):
        raise OpError(f"loop: the trip count must be i64[], got {types[0] if types else 'nothing'}")
    if len(types) < 1 + k:
        raise OpError(f"loop: {k} carried values need {1 + k} inputs at least, got {len(types)}")
    if not body.inputs or body.inputs[0].type != TensorType(INT64, ()):
        raise OpError("loop: body input 0 (the iteration number) must be i64[]")
    _check_inputs(body, [body.inputs[0].type] + list(types[1:]), "loop", "body")
    outs = [v.type for v in body.outputs]
    if len(outs) < cond + k:
        raise OpError(f"loop: the body returns {len(outs)} values, needs {cond + k} at least")
    if cond and outs[0] != TensorType(BOOL, ()):
        raise OpError(f"loop: the body's condition must be bool[], got {outs[0]}")
    carried = [v.type for v in body.inputs[1:1 + k]]
    for j, (t, nxt) in enumerate(zip(carried, outs[cond:cond + k])):
        if not _compatible(t, nxt):
            raise OpError(f"loop: carried value {j} enters the body as {t} and leaves it as {nxt}")
    _check_closed(body, "loop", "body")
    trip = known_dims(consts[0])
    steps = None if cond or trip is None else trip[0]
    return carried + [TensorType(t.dtype, (steps,) + t.shape) for t in outs[cond + k:]]


def _loop_eval(args, attrs, subgraphs, run):
    body: Graph = subgraphs["body"]
    k, cond = attrs["num_carried"], int(attrs["has_condition"])
    n, carried, invariant = int(args[0]), list(args[1:1 + k]), list(args[1 + k:])
    steps: list[list[np.ndarray]] = []
    for i in range(n):
        outs = run(body, [np.array(i, dtype=np.int64)] + carried + invariant)
        carried = outs[cond:cond + k]
        steps.append(outs[cond + k:])
        if cond and not bool(outs[0]):
            break
    stacked = []
    sizes = {d: size for v, a in zip(body.inputs[1:], args[1:]) for d, size in zip(v.shape, np.shape(a))
             if isinstance(d, str)}  # the run's sizes of named dims, for zero iterations
    for j, v in enumerate(body.outputs[cond + k:]):
        if steps:
            stacked.append(np.stack([s[j] for s in steps]))
        else:
            shape = tuple(d if isinstance(d, int) else sizes.get(d, 0) for d in v.shape)
            stacked.append(np.empty((0,) + shape, v.dtype.numpy))
    return carried + stacked


register(OpDef("loop", _loop_infer, _loop_eval, None,
               attrs={"num_carried": Attr("int"), "has_condition": Attr("bool", False)},
               doc="ONNX Loop with explicit capture: carried values, per-step values stacked on axis 0",
               symbolic_inputs=True, subgraph_roles=("body",)))


# -- if ---------------------------------------------------------------------
def _if_infer(types, attrs, consts, subgraphs):
    if not types or types[0] != TensorType(BOOL, ()):
        raise OpError(f"if: the condition must be bool[], got {types[0] if types else 'nothing'}")
    then, other = subgraphs["then"], subgraphs["else"]
    for role, g in (("then", then), ("else", other)):
        _check_inputs(g, types[1:], "if", role)
        _check_closed(g, "if", role)
    if len(then.outputs) != len(other.outputs):
        raise OpError(f"if: the then graph returns {len(then.outputs)} values, the else graph {len(other.outputs)}")
    out = []
    for j, (a, b) in enumerate(zip(then.outputs, other.outputs)):
        if a.dtype != b.dtype or a.rank != b.rank:
            raise OpError(f"if: output {j} is {a.type} in the then graph and {b.type} in the else graph")
        out.append(TensorType(a.dtype, tuple(x if x == y else None for x, y in zip(a.shape, b.shape))))
    return out


def _if_eval(args, attrs, subgraphs, run):
    return run(subgraphs["then" if bool(args[0]) else "else"], list(args[1:]))


register(OpDef("if", _if_infer, _if_eval, None,
               doc="ONNX If with explicit capture: the outputs of the branch the condition selects",
               subgraph_roles=("then", "else")))
