"""Lowering driver: walks a PyTensor graph in topological order and builds
the IR graph with the rules of ``compiler.lowering.registry``.

The caller's graph is only read (``pytensor.graph.basic.io_toposort`` and
friends), never modified. Every unsupported node is collected, and a single
``UnsupportedOpsError`` lists them all at the end.
"""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import pytensor
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import graph_inputs, io_toposort
from pytensor.ifelse import IfElse
from pytensor.scalar import ScalarType
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.random.type import RandomType
from pytensor.tensor.type import TensorType as PtTensorType

from compiler.lowering.errors import (CompileError, DroppedAssertionWarning, LoweringError, Unsupported, UnsupportedOccurrence,
                             UnsupportedOpsError, user_stacklevel)
from compiler.lowering.const_eval import ConstantEvaluator
from compiler.lowering.context import KEY_TYPE, LoweringContext, LoweringOptions, ir_dtype, ir_type, sanitize_name
from compiler.lowering.registry import find_rule
from ir import Graph, TensorType, Value
from ir.types import dims_compatible, join_dims


@dataclass
class GraphSpec:
    """What to lower: explicit inputs, outputs, and which inputs are shared
    variables (``shared`` holds the shared variables reachable from outputs
    that are not explicit inputs, in discovery order)."""

    inputs: list
    outputs: list
    shared_inputs: set = field(default_factory=set)


def graph_spec(graph: Any, outputs: Sequence | None = None) -> GraphSpec:
    """Normalize what ``compile_to_onnx`` accepts into a ``GraphSpec``.

    Args:
        graph: a ``FunctionGraph``, a compiled ``pytensor.function`` (its
            ``maker.fgraph`` is used; shared-variable updates are dropped), an
            object holding one in ``.f`` (PyMC's ``PointFunc``, what
            ``model.compile_logp()`` returns), or a sequence of input
            variables (then ``outputs`` is required).
        outputs: the output variables when ``graph`` is a list of inputs.

    Raises:
        TypeError: anything else.
    """
    inner = getattr(graph, "f", None)
    if getattr(graph, "maker", None) is None and hasattr(inner, "maker"):
        graph = inner
    maker = getattr(graph, "maker", None)
    if maker is not None and hasattr(maker, "fgraph"):
        fg = maker.fgraph
        n_out = len(maker.outputs)
        shared = {v for v, i in zip(fg.inputs, maker.inputs) if getattr(i, "shared", False)}
        spec = GraphSpec(list(fg.inputs), list(fg.outputs[:n_out]), shared)
    elif hasattr(graph, "inputs") and hasattr(graph, "outputs") and hasattr(graph, "toposort"):
        shared = {v for v in graph.inputs if isinstance(v, SharedVariable)}
        spec = GraphSpec(list(graph.inputs), list(graph.outputs), shared)
    elif isinstance(graph, (list, tuple)) and outputs is not None:
        outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        spec = GraphSpec(list(graph), outs, {v for v in graph if isinstance(v, SharedVariable)})
    elif isinstance(graph, (list, tuple)):
        raise TypeError(f"compile_to_onnx got a {type(graph).__name__} of inputs but no outputs: pass them as "
                        "outputs=, as in compile_to_onnx([x], outputs=[y])")
    else:
        raise TypeError("compile_to_onnx takes a FunctionGraph, a compiled pytensor.function, "
                        f"or a list of inputs with outputs=; got {type(graph).__name__}")
    _check_spec(spec)
    return spec


def _check_spec(spec: GraphSpec) -> None:
    """ValueError/TypeError for inputs and outputs no model can have."""
    if not spec.outputs:
        raise ValueError("outputs is empty: an ONNX model needs at least one output")
    for what, seq in (("inputs", spec.inputs), ("outputs", spec.outputs)):
        for i, v in enumerate(seq):
            if not isinstance(v, pytensor.graph.basic.Variable):
                raise TypeError(f"{what}[{i}] must be a PyTensor variable, got {type(v).__name__} {v!r}")
    first: dict = {}
    for i, v in enumerate(spec.inputs):
        if v in first:
            raise ValueError(f"inputs[{i}] is the same variable as inputs[{first[v]}] ({v}); "
                             "each input must appear once")
        first[v] = i


@dataclass
class LoweredGraph:
    """Result of lowering: the IR graph plus the PyTensor variables behind its
    inputs (ONNX input order) and outputs."""

    graph: Graph
    input_vars: list
    output_vars: list
    baked_shared: list
    values: dict = field(default_factory=dict)  # PyTensor variable -> IR value, as lowered
    order: list = field(default_factory=list)  # the Apply nodes lowered, in topological order
    random_inputs: list = field(default_factory=list)  # rules/random.py RandomInput, after input_vars
    specified: list = field(default_factory=list)  # (symbolic dim, size) a SpecifyShape requires
    expansions: dict = field(default_factory=dict)  # LoweringContext.expansions: DimShuffles maybe never lowered
    assertions: list = field(default_factory=list)  # rules/assertions.py AssertionOutput, outputs after output_vars


def lower(spec: GraphSpec, options: LoweringOptions = LoweringOptions()) -> LoweredGraph:
    """Lower ``spec`` to IR, as ``options`` (a ``LoweringOptions``) asks.

    Shared variables become constants named after the variable (a copy of
    their current value) when ``options.bake_shared``, else graph inputs at
    their position. Unnamed inputs are called ``input<i>``. Unknown dims of
    input ``x`` get the symbolic names ``x_dim0``, ``x_dim1``, ...
    Constant subgraphs are evaluated by PyTensor (``const_eval.py``).
    ``options.assertions`` ("drop", "nan" or "raise") is what assertions
    become (``rules/assertions.py``); dropped ones are listed in one
    ``DroppedAssertionWarning``; under "raise" each run-time assertion's
    bool scalar is a graph output after the PyTensor outputs
    (``LoweredGraph.assertions``). ``options.random`` (None, "inputs", "onnx"
    or "key") is what random variables become (``rules/random.py``);
    generator inputs (``RandomType``) are model inputs of type ``uint64[2]``
    under "key" (shared ones too: a baked key would repeat its draws), else
    none; noise inputs follow the others. The IR graph is called
    ``options.name``.

    Raises:
        UnsupportedOpsError: listing every node without a working rule.
        LoweringError: a rule's result disagrees with PyTensor's type.
        CompileError: an output depends on a variable that is not an input.
    """
    graph = Graph(options.name)
    ctx = LoweringContext(graph, options)
    explicit = set(spec.inputs)
    roots = [v for v in graph_inputs(spec.outputs) if v not in explicit]
    extra_shared = [v for v in roots if isinstance(v, SharedVariable)]
    missing = [v for v in roots if not isinstance(v, (SharedVariable, Constant)) and v.owner is None]
    if missing:
        raise CompileError("outputs depend on variables that are not inputs: "
                           + ", ".join(str(v) for v in missing))

    used_names: set[str] = set()
    next_suffix: dict[str, int] = {}
    input_vars, baked = [], []
    bad_types = [UnsupportedOccurrence(f"{'shared variable' if isinstance(v, SharedVariable) else 'input'} "
                                       f"{v} of type {v.type}", why, None)
                 for v in list(spec.inputs) + extra_shared
                 for why in [_unsupported_type(v)] if why]
    bad_types += [UnsupportedOccurrence(f"output {v} of type {v.type}", why, None)
                  for v in spec.outputs for why in [_unsupported_type(v, output=True, random=options.random)] if why]
    if bad_types:
        raise UnsupportedOpsError(bad_types)
    for i, var in enumerate(list(spec.inputs) + extra_shared):
        is_shared = var in spec.shared_inputs or isinstance(var, SharedVariable)
        key = isinstance(var.type, RandomType) and options.random == "key"
        if not key and (isinstance(var.type, RandomType) or is_shared and not hasattr(var.type, "dtype")):
            continue  # an RNG or other non-tensor state: the nodes reading it draw noise or are unsupported
        if is_shared and options.bake_shared and not key:
            value = var.get_value(borrow=True)
            ctx.values[var] = graph.add_constant(value.astype(ir_dtype(var).numpy, copy=False),
                                                 _unique(sanitize_name(var.name) or "shared", used_names, next_suffix))
            baked.append(var)
            continue
        name = _unique(sanitize_name(var.name) or f"input{i}", used_names, next_suffix)
        t = KEY_TYPE if key else ir_type(var, [f"{name}_dim{a}" for a in range(var.type.ndim)])
        ctx.values[var] = graph.add_input(t, name)
        input_vars.append(var)

    roots = spec.inputs + extra_shared
    order = io_toposort(roots, spec.outputs)
    constants = ctx.constants = ConstantEvaluator(order, set(baked))
    if options.assertions == "raise":
        ctx.branch_only = branch_only(order, spec.outputs)
    lower_apply_nodes(ctx, roots, spec.outputs, constants=constants, order=order)
    record = ctx.record
    outputs = [ctx.get(v) for v in spec.outputs]
    named = set(outputs)
    for flag, assertion in record.assertions:
        if flag.producer is not None and flag not in named:  # the emitter names an output after its value's hint
            flag.name = assertion.name
            named.add(flag)
    graph.set_outputs(outputs + [flag for flag, _ in record.assertions])
    if record.dropped:
        warnings.warn(DroppedAssertionWarning(record.dropped), stacklevel=user_stacklevel())
    return LoweredGraph(graph, input_vars, list(spec.outputs), baked, dict(ctx.values), order,
                        list(record.random_inputs), list(record.specified), dict(ctx.expansions),
                        [assertion for _, assertion in record.assertions])


def branch_only(order: Sequence, outputs: Sequence) -> frozenset:
    """The Apply nodes of ``order`` that PyTensor's lazy evaluation may skip:
    those the ``outputs`` need only through an ``IfElse``'s branch values
    (``IfElse`` computes the chosen branch's inputs only, under a lazy
    linker), not through any other input or an ``IfElse`` condition."""
    if not any(isinstance(node.op, IfElse) for node in order):
        return frozenset()
    needed = set()
    stack = [v.owner for v in outputs if v.owner is not None]
    while stack:
        node = stack.pop()
        if node in needed:
            continue
        needed.add(node)
        inputs = node.inputs[:1] if isinstance(node.op, IfElse) else node.inputs
        stack.extend(v.owner for v in inputs if v.owner is not None and v.owner not in needed)
    return frozenset(node for node in order if node not in needed)


def lower_apply_nodes(ctx: LoweringContext, inputs: Sequence, outputs: Sequence, *,
                      source: str | None = None, constants: ConstantEvaluator | None = None,
                      order: Sequence | None = None) -> None:
    """Lower every Apply node between ``inputs`` and ``outputs`` (PyTensor
    variables) in topological order, recording each output's IR value in
    ``ctx.values``. The IR values of ``inputs`` must already be in
    ``ctx.values``; constants are created on first use.

    Used by ``lower`` for the whole graph and by rules that inline an inner
    graph (``OpFromGraph``). Each IR node is stamped with its PyTensor node's
    source line, or with ``source`` when given (an inlined body reports the
    line that called it).

    ``order``: ``io_toposort(inputs, outputs)`` when the caller has it
    already. A constant node (``constants``, ``const_eval.py``) that cannot be
    lowered is evaluated by PyTensor and its outputs become IR constants.

    The outputs of a failed node are stood in for by placeholder graph
    inputs of their type, so the nodes downstream are still lowered and
    their own failures listed too (marked as downstream of a failure); the
    graph is discarded when anything failed.

    Raises:
        UnsupportedOpsError: listing every node without a working rule.
        LoweringError: a rule's result disagrees with PyTensor's type.
    """
    failures: list[UnsupportedOccurrence] = []
    placeholders: set = set()  # variables computed from a failed node's outputs
    per_op: dict[int, tuple] = {}  # id(op) -> (op, label, rule): many nodes share an op
    for node in order if order is not None else io_toposort(list(inputs), list(outputs)):
        op = node.op
        downstream = bool(placeholders) and any(v in placeholders for v in node.inputs)
        if isinstance(op, DimShuffle) and not downstream:
            k = _leading_axes(op)
            if k:  # lowered on first read other than by a broadcasting Elemwise (op label and rule then too)
                ctx.defer(node.outputs[0], node.inputs[0], k, functools.partial(_lower_deferred, ctx, node, source))
                continue
        ctx.source = source if source is not None else source_line(node)
        known = per_op.get(id(op))
        if known is None or known[0] is not op:
            known = per_op[id(op)] = (op, op_label(op, ctx.memo), find_rule(op))
        _, ctx.op_label, rule = known
        try:
            if rule is None:
                raise Unsupported("no lowering rule")
            results = rule(ctx, node)
        except Exception as e:  # noqa: BLE001 - below a failure any error is a consequence of it
            if not isinstance(e, Unsupported) and not downstream:
                raise
            reason = str(e)
            if constants is not None and constants.is_constant(node):
                try:
                    results = constants.evaluate(node)
                    folded = [ctx.const(value, name=var.name or "folded") for var, value in zip(node.outputs, results)]
                except (ValueError, Unsupported) as why:
                    reason += f" ({why})"
                else:
                    ctx.values.update(zip(node.outputs, folded))
                    continue
            if downstream:
                reason += " (reads the result of an unsupported op)"
            failures.append(UnsupportedOccurrence(op_label(node.op), reason, ctx.source))
            _stand_in(ctx, node, placeholders)
            continue
        if downstream:
            placeholders.update(node.outputs)
        for var, value in zip(node.outputs, results, strict=True):
            if value is None:  # no IR value (a PyTensor 2.x slice): its readers use the node's inputs
                continue
            ctx.values[var] = _refine(var, value, node, ctx.source, ctx.perform_shaped)
    if failures:
        raise UnsupportedOpsError(failures)


def _leading_axes(op: DimShuffle) -> int:
    """``k`` when the ``DimShuffle`` ``op`` only prepends ``k`` broadcastable
    axes (``order=('x',)*k + (0, 1, ...)``), else 0."""
    order = tuple(op.new_order)
    k = len(order) - op.input_ndim
    return k if k > 0 and order == ("x",) * k + tuple(range(op.input_ndim)) else 0


def _lower_deferred(ctx: LoweringContext, node, source: str | None) -> None:
    """Lower the deferred ``DimShuffle`` ``node`` (``LoweringContext.defer``)
    now, stamped with its own op and source line (``source`` when given, as
    in ``lower_apply_nodes``)."""
    outer = ctx.op_label, ctx.source
    ctx.op_label, ctx.source = op_label(node.op, ctx.memo), source if source is not None else source_line(node)
    try:
        (value,) = find_rule(node.op)(ctx, node)
        ctx.values[node.outputs[0]] = _refine(node.outputs[0], value, node, ctx.source, ctx.perform_shaped)
    finally:
        ctx.op_label, ctx.source = outer


def _stand_in(ctx: LoweringContext, node, placeholders: set) -> None:
    """Bind each output of the failed ``node`` to a fresh graph input of its
    type, so lowering can go on and report what lies downstream."""
    for var in node.outputs:
        placeholders.add(var)
        try:
            t = ir_type(var)
        except Unsupported:
            continue
        ctx.values[var] = ctx.graph.add_input(t, f"unsupported.{id(var)}")


def _refine(var, value: Value, node, source, perform_shaped=frozenset()) -> Value:
    """Check ``value`` against PyTensor's type of ``var`` and adopt the static
    dims PyTensor knows. A negative static dim (PyTensor types some outputs
    of impossible sizes so, e.g. PyTensor 3's ``LUFactorTridiagonal``'s
    ``du2`` of length n - 2 at n = 1, where its ``perform`` returns an empty
    array) is read as unknown: the rule's shape, what ``perform`` returns, stands;
    so does every shape of a variable in ``perform_shaped``
    (``LoweringContext.follow_perform``)."""
    t = value.type
    if isinstance(var.type, RandomType):  # a generator's key (random="key"), made by the random rules
        return value
    if var in perform_shaped and t.dtype == ir_dtype(var):
        return value
    static = getattr(var.type, "shape", ())
    if t.dtype == ir_dtype(var) and len(t.shape) == len(static):
        for a, b in zip(t.shape, static):
            if b is not None and a != b:
                break
        else:
            return value  # the common case: nothing to check further, nothing to adopt
    want = TensorType(ir_dtype(var), tuple(None if d is not None and d < 0 else d for d in static))
    if t.dtype != want.dtype or t.rank != want.rank or not all(
            dims_compatible(a, b) for a, b in zip(t.shape, want.shape)):
        raise LoweringError(f"lowering {op_label(node.op)} gave {t}, PyTensor says {want}"
                            + (f" (at {source})" if source else ""))
    refined = TensorType(t.dtype, tuple(join_dims(a, b) for a, b in zip(t.shape, want.shape)))
    if refined != t:
        value.type = refined
    return value


def _unsupported_type(var, output: bool = False, random: str | None = None) -> str | None:
    """Why PyTensor variable ``var`` cannot be a model input or output (None
    when it can): only dense tensors of the IR's dtypes exist in ONNX here.
    RNG inputs are left to the nodes that read them (``rules/random.py``);
    an RNG ``output`` needs the ``random`` policy "key"."""
    t = var.type
    if isinstance(t, RandomType):
        return None if not output or random == "key" else (
            "a random generator is a model output only under random='key' (its uint64 key; ONNX's random "
            "ops keep their generators inside the session, and random='inputs' noise is the caller's)")
    if type(t) is not PtTensorType and not isinstance(t, ScalarType):  # sparse types subclass TensorType
        return f"{type(t).__name__} has no ONNX equivalent (only dense tensors)"
    try:
        ir_dtype(var)
    except (TypeError, Unsupported) as e:
        return str(e)
    return None


def source_line(node) -> str | None:
    """``file:line`` of the user code that created ``node``'s first output, from
    PyTensor's ``tag.trace`` (None when PyTensor kept no trace): the innermost
    frame outside PyTensor itself (a node ``pytensor.grad`` built reports the
    user's ``grad`` call; frames inside ``compiler.nn``, the helpers that build
    the graph for the user, are skipped too). Remembered per stack (many
    nodes come from one line)."""
    for out in node.outputs:
        trace = getattr(out.tag, "trace", None)
        if trace:
            frames = trace[0] if isinstance(trace[0], list) else trace
            if frames:
                key = tuple(frames)
                try:
                    return _SOURCES[key]
                except KeyError:
                    pass
                except TypeError:  # unhashable frames
                    return _source_of(frames)
                if len(_SOURCES) >= 65536:
                    _SOURCES.clear()
                text = _SOURCES[key] = _source_of(frames)
                return text
    return None


_SOURCES: dict[tuple, str] = {}  # stack (tuple of frames) -> source text


def _source_of(frames) -> str:
    # the last frame outside the libraries; else (all library frames) the last
    # frame outside PyTensor; else the last frame
    f = next((f for f in reversed(frames) if not str(f[0]).startswith(_LIBRARY_DIRS)), None)
    if f is None:
        f = next((f for f in reversed(frames) if not str(f[0]).startswith(_PYTENSOR_DIR)), frames[-1])
    return _frame_text(tuple(f))


@functools.lru_cache(maxsize=4096)
def _frame_text(f: tuple) -> str:
    """``file:line (code)`` of a trace frame (many nodes share a line: cached)."""
    return f"{f[0]}:{f[1]}" + (f" ({f[3].strip()})" if len(f) > 3 and f[3] else "")


_PYTENSOR_DIR = os.path.dirname(pytensor.__file__) + os.sep
_LIBRARY_DIRS = (_PYTENSOR_DIR, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nn") + os.sep)


def op_label(op, memo: dict | None = None) -> str:
    """A short printable name for a PyTensor op. ``memo`` (a dict kept for
    one lowering, e.g. ``LoweringContext.memo``) remembers it per op object:
    ops are immutable and many nodes share one."""
    if memo is not None:
        hit = memo.get(("op-label", id(op)))
        if hit is not None:
            return hit[1]
    text = str(op)
    text = text if len(text) <= 80 else text[:77] + "..."
    if memo is not None:
        memo[("op-label", id(op))] = (op, text)  # the op is kept alive, so its id is not reused meanwhile
    return text


def _unique(name: str, used: set[str], next_suffix: dict[str, int]) -> str:
    """``name``, or ``name_<i>`` with the first free ``i``; ``next_suffix``
    remembers where to resume per name, so n equal names cost O(n), not O(n^2)."""
    out, i = name, next_suffix.get(name, 1)
    while out in used:
        out = f"{name}_{i}"
        i += 1
    next_suffix[name] = i
    used.add(out)
    return out
