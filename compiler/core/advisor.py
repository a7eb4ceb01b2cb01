"""The performance advisor: the slow forms a compilation had to emit, where
in the user's code they come from, and what to change.

``advise`` reads the final IR (``CompiledModel.ir``) and the emitter options;
each kind of slow form is one ``Finding`` rule in ``RULES`` (a predicate on a
node plus the text of the advice). Findings with the same kind and source
line are merged (``Advice.count``). ``CompiledModel.report()`` lists them and
``compile_to_onnx`` warns once (``SlowFormWarning``) when there are any.

Kinds (measured on this machine, see docs/compile-options.md, "Performance advisor"):

- ``float64-window``: a float64 ``conv``/``convolve2d``/``avg_pool`` under
  ``float64_conv="exact"`` (the default): onnxruntime's CPU provider has no
  float64 Conv or AveragePool, so the emitter writes the exact im2col form
  (``backends/onnx/rules/window_f64.py``), 1.2-35x slower than the float32
  Conv (``bench/bench_float64_conv.py``). The advice names the line of the
  float32 -> float64 upcast that made it float64 (e.g. ``pt.pad`` of a
  float32 tensor under ``floatX=float64``, whose pad value is a float64
  constant).
- ``float64-output``: an output is float64 although no input is float64;
  the source line of the upcast.
- ``loop``: an ONNX ``Loop`` (linear algebra on dynamic or large sizes, a
  scan that was not unrolled): run step by step, each step a few kernel
  launches.
- ``unrecovered-convolution``: a ``convolve2d`` the conv-recovery pass did
  not turn into a Conv (the emitter's shifted-slice form).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable, NamedTuple

from ir import DType, Graph, Node, Value
from ir.transforms import walk

EXACT_FLOAT64_OPS = frozenset({"conv", "convolve2d", "avg_pool"})  # backends.onnx.rules.nn.exact_f64


class SlowFormWarning(UserWarning):
    """One warning per compilation that emitted slow forms (see ``advise``)."""


@dataclass(frozen=True)
class Advice:
    """One slow form the model holds.

    Attributes:
        kind: the rule's name (``float64-window``, ``float64-output``,
            ``loop``, ``unrecovered-convolution``).
        what: the slow form, in words.
        source: the user's line (``file:line (code)``) that caused it, or
            None when PyTensor kept no trace.
        fix: what to change.
        count: how many IR nodes the advice covers.
    """

    kind: str
    what: str
    source: str | None
    fix: str
    count: int = 1

    def format(self) -> str:
        """Two or three lines: the form (x count), where, the fix."""
        head = f"{self.kind}: {self.what}" + (f" (x{self.count})" if self.count > 1 else "")
        where = f"\n    at {self.source}" if self.source else ""
        return f"{head}{where}\n    fix: {self.fix}"


class Finding(NamedTuple):
    """A rule: ``applies(node, emit_options)`` says the node is a slow
    form; ``describe(node, upcasts)`` returns (what, source, fix), with
    ``upcasts`` from ``upcast_map``."""

    kind: str
    applies: Callable[[Node, object], bool]
    describe: Callable[[Node, dict], tuple[str, str | None, str]]


# -- where a float64 value came from -------------------------------------------
def upcast_map(graph: Graph) -> dict[Value, Node]:
    """For each float64 value of ``graph`` (top level) that depends on float32
    or float16 data, the node that turned such data into float64: a
    ``cast``, or any op with a narrower float operand and a float64 result
    (``pt.pad`` of float32 data with a float64 pad value). One forward pass
    in graph order; of several upcasts a value depends on, the latest in
    graph order (the last place float32 became float64 on the way: an
    earlier one may be a sum PyTensor widens and narrows again, which CSE
    merged with another reader)."""
    upcasts: dict[Value, tuple[int, Node]] = {}
    narrow = (DType.FLOAT32, DType.FLOAT16)
    for position, node in enumerate(graph.nodes):
        for out in node.outputs:
            if out.dtype != DType.FLOAT64:
                continue
            if any(i.dtype in narrow for i in node.inputs):
                upcasts[out] = (position, node)
            else:
                found = max((upcasts[i] for i in node.inputs if i in upcasts), default=None, key=lambda pn: pn[0])
                if found is not None:
                    upcasts[out] = found
    return {v: node for v, (_, node) in upcasts.items()}


def _source(node: Node) -> str | None:
    return next((o.source for o in node.origins if o.source), None)


def _origin_op(node: Node) -> str | None:
    return next((o.op for o in node.origins if o.op), None)


# -- the rules ---------------------------------------------------------------------
def _float64_window(node: Node, emit) -> bool:
    return (node.op in EXACT_FLOAT64_OPS and node.inputs[0].dtype == DType.FLOAT64
            and emit.float64_conv == "exact")


def _describe_float64_window(node: Node, upcasts: dict):
    upcast = upcasts.get(node.inputs[0])
    what = f"float64 {node.op} emitted in its exact decomposition (no float64 Conv/AveragePool in onnxruntime)"
    if upcast is None:
        return what, _source(node), ("feed float32 data (and float32 weights), or compile with "
                                     "emit_options={'float64_conv': 'native'} or 'float32'")
    op = _origin_op(upcast) or upcast.op
    return (f"{what}; float32 data became float64 at {op}", _source(upcast),
            "set pytensor.config.floatX = 'float32' (PyTensor's default float64 makes constants such as "
            "pt.pad's pad value float64), or cast back with .astype('float32') there; or compile with "
            "emit_options={'float64_conv': 'float32'} to run float32 convolutions")


def _loop(node: Node, emit) -> bool:
    # a loop with a stop condition (a ScalarLoop, a search until every element converged) runs as
    # many iterations as its data needs: no static size unrolls it
    return node.op == "loop" and not node.attrs.get("has_condition", False)


def _describe_loop(node: Node, upcasts: dict):
    op = _origin_op(node) or "a loop"
    return (f"{op} runs as an ONNX Loop, one iteration at a time", _source(node),
            "give the loop's sizes statically (pt.tensor(shape=...) or example_inputs=): short static loops "
            "are unrolled (scan-unroll, up to 64 steps)")


def _unrecovered_convolution(node: Node, emit) -> bool:
    return node.op == "convolve2d"


def _describe_unrecovered_convolution(node: Node, upcasts: dict):
    return ("convolve2d not recovered as a Conv (emitted as shifted slices)", _source(node),
            "write it as convolve2d(x[:, None], W[None], mode='valid').sum(axis=2) with a constant or shared W "
            "(see report()'s declined conv-recovery rules for the reason)")


RULES = (
    Finding("float64-window", _float64_window, _describe_float64_window),
    Finding("loop", _loop, _describe_loop),
    Finding("unrecovered-convolution", _unrecovered_convolution, _describe_unrecovered_convolution),
)


def _float64_outputs(graph: Graph, upcasts: dict) -> list[Advice]:
    """``float64-output``: float64 outputs of a graph with float inputs, none float64."""
    floats = [v.dtype for v in graph.inputs if v.dtype.is_float]
    if not floats or DType.FLOAT64 in floats:
        return []
    found = []
    for index, out in enumerate(graph.outputs):
        if out.dtype != DType.FLOAT64:
            continue
        upcast = upcasts.get(out)
        if upcast is not None:
            found.append(Advice("float64-output", f"output {index} is float64 though the float inputs are "
                                f"{', '.join(sorted({d.name.lower() for d in floats}))}", _source(upcast),
                                "set pytensor.config.floatX = 'float32' or cast there with .astype('float32')"))
    return found


def advise(graph: Graph, emit) -> list[Advice]:
    """The slow forms of the final IR ``graph`` (nested bodies included),
    given the emitter options ``emit`` (``backends.onnx.EmitOptions``):
    one ``Advice`` per (kind, source line, what), in graph order."""
    merged: dict[tuple, Advice] = {}
    upcasts = upcast_map(graph)
    for node, _ in walk(graph):
        for rule in RULES:
            if rule.applies(node, emit):
                what, source, fix = rule.describe(node, upcasts)
                key = (rule.kind, what, source)
                old = merged.get(key)
                merged[key] = Advice(rule.kind, what, source, fix, old.count + 1 if old else 1)
    for a in _float64_outputs(graph, upcasts):
        old = merged.get((a.kind, a.what, a.source))
        merged[(a.kind, a.what, a.source)] = Advice(a.kind, a.what, a.source, a.fix, old.count + 1 if old else 1)
    return list(merged.values())


def format_advice(advice: list[Advice]) -> list[str]:
    """The report section's lines (empty list: nothing slow)."""
    return [line for a in advice for line in ("  " + a.format().replace("\n", "\n  ")).split("\n")]


def warn_slow_forms(advice: list[Advice]) -> None:
    """One ``SlowFormWarning`` summarizing ``advice`` (nothing when empty)."""
    if not advice:
        return
    kinds = sorted({a.kind for a in advice})
    first = advice[0]
    where = f" at {first.source}" if first.source else ""
    warnings.warn(f"the model holds {sum(a.count for a in advice)} slow form(s) ({', '.join(kinds)}); first: "
                  f"{first.what}{where}. Fix: {first.fix}. See CompiledModel.report(), 'performance advisor'.",
                  SlowFormWarning, stacklevel=4)
