"""``emit_model``: IR graph -> ONNX ``ModelProto`` (built with onnx_ir).

The model has IR version 10 (onnxruntime 1.31 rejects newer) and imports the
default domain at the requested opset. Graph inputs keep their IR names, IR
constants become initializers (named after the constant, made unique if an
input took the name), every graph output has its own name (the IR value's
name hint when free, else ``output<i>``) and full type. Each IR node is
emitted by its rule in ``EMITTERS`` (see ``backends/onnx/rules``). Model-local
functions the rules define (``SiLU``, ``Gelu``) go into the model with an
opset import of their domain, ``pytensor_onnx``. ``build_model`` is where
every emission path ends; ``observing_models`` lets a caller see every model
it builds (the test suite's shape-agreement check does).
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Callable, Iterator, Mapping

import onnx
import onnx_ir as oir

from backends.onnx import rules  # noqa: F401  (registers the rules)
from backends.onnx.context import (FUNCTION_DOMAIN, FUNCTION_DOMAIN_VERSION, EmitContext, EmitOptions, Namer,
                                   onnx_dtype, onnx_value)
from backends.onnx.registry import EmitError, emit_nodes
from ir.core import Graph, Value
from ir.symbolic import format_dim

IR_VERSION = 10
MIN_OPSET = 18
PRODUCER = "pytensor-onnx"


def emit_model(graph: Graph, options: EmitOptions | None = None, *, metadata: Mapping[str, str] | None = None,
               **choices) -> onnx.ModelProto:
    """Emit ``graph`` as an ONNX model: ``build_model`` serialized with
    ``onnx_ir.serde.serialize_model`` (same arguments, errors and result;
    initializer bytes are copied into the protobuf, so a model past
    protobuf's 2 GB limit cannot be serialized: use ``build_model`` and
    ``save_ir_model``)."""
    return oir.serde.serialize_model(build_model(graph, options, metadata=metadata, **choices))


def build_model(graph: Graph, options: EmitOptions | None = None, *, metadata: Mapping[str, str] | None = None,
                emitted_for: dict | None = None, **choices) -> oir.Model:
    """Build ``graph`` as an onnx_ir ``Model`` (not yet serialized).
    Initializers wrap the IR constants' NumPy arrays without copying them.

    Args:
        graph: a verified IR graph (control-flow ops included).
        options: the ``EmitOptions`` (opset, value_info, numerics,
            float64_conv, silu, gelu, max_pool_nan); None: the defaults.
        metadata: the model's ``metadata_props`` (key -> text), if any
            (``compile_to_onnx`` states the input sizes a ``specify_shape``
            requires there).
        emitted_for: a dict that receives, for every top-level ONNX node in
            model order, the IR ``Node`` it was emitted for (the pass
            explorer's provenance; None, the default, records nothing).
        choices: ``EmitOptions`` fields overriding ``options`` one by one
            (``build_model(g, numerics="strict", value_info=True)``);
            ValueError for a value it does not list, TypeError for a name
            that is no field.

    Returns:
        An ``onnx_ir.Model`` (IR version 10) that computes, for each graph
        output, what ``ir.interpreter.evaluate`` computes. Every model built
        is shown to the observers of ``observing_models`` first.

    Raises:
        EmitError: an op without a rule or without an exact ONNX form for its
            dtypes; an unnamed or duplicated graph input name; opset < 18.
    """
    options = options or EmitOptions()
    if choices:
        options = dataclasses.replace(options, **choices)
    model = _build(graph, options, emitted_for)
    if metadata:
        model.metadata_props.update(metadata)
    if _OBSERVERS:
        for observer in list(_OBSERVERS):
            observer(graph, model, options)
    return model


ModelObserver = Callable[[Graph, oir.Model, EmitOptions], None]
_OBSERVERS: list[ModelObserver] = []


@contextlib.contextmanager
def observing_models(observer: ModelObserver) -> Iterator[None]:
    """Within the block, call ``observer(graph, model, options)`` for every
    model ``build_model`` builds (``emit_model`` and ``compile_to_onnx``
    included: every emission path ends there), after building it and before
    returning it; an exception the observer raises propagates to the caller
    of ``build_model``. While an observer runs, models it builds itself are
    not observed. The test suite's shape-agreement check
    (``tests/shapes/plugin.py``) is such an observer."""
    def guarded(graph: Graph, model: oir.Model, options: EmitOptions) -> None:
        _OBSERVERS.remove(guarded)
        try:
            observer(graph, model, options)
        finally:
            _OBSERVERS.append(guarded)

    _OBSERVERS.append(guarded)
    try:
        yield
    finally:
        _OBSERVERS.remove(guarded)


def _build(graph: Graph, options: EmitOptions, emitted_for: dict | None = None) -> oir.Model:
    """``build_model``'s work, unobserved."""
    opset = options.opset
    if opset < MIN_OPSET:
        raise EmitError(f"opset {opset} is not supported: the ONNX rules need opset >= {MIN_OPSET}")
    namer = Namer()
    ctx = EmitContext(namer, options)
    if emitted_for is not None:
        ctx.marks = []
    env: dict[Value, oir.Value] = {}

    inputs = []
    for i, v in enumerate(graph.inputs):
        if not v.name:
            raise EmitError(f"graph input {i} ({v.type}) has no name")
        if v.name in namer:
            raise EmitError(f"two graph inputs are called {v.name!r}")
        namer.take(v.name)
        env[v] = onnx_value(v.name, v.type.with_shape(onnx_dims(v.type.shape)))
        inputs.append(env[v])
    for c in graph.constants.values():
        env[c] = ctx.initializer(c.const, c.name)

    output_names = _reserve_output_names(graph, namer)
    emit_nodes(ctx, graph, env)

    if options.value_info:
        _declare_types(graph, env, ctx.initializers)
    outputs = []
    claimed = set()  # the ONNX values already graph outputs
    for v, name in zip(graph.outputs, output_names):
        value = env[v]
        # a graph input or an initializer (the values no node produces) or an earlier output
        if value.producer() is None or value in claimed:
            ctx.node = v.producer  # the Identity has the provenance of what it copies
            value = ctx.op("Identity", value)
            ctx.node = None
        claimed.add(value)
        value.name = name
        value.type = oir.TensorType(onnx_dtype(v.type.dtype))
        value.shape = oir.Shape(onnx_dims(v.type.shape))
        outputs.append(value)

    if emitted_for is not None:
        emitted_for.update(_emitted_for(ctx.nodes, ctx.marks))
    opsets = {"": opset} | ({FUNCTION_DOMAIN: FUNCTION_DOMAIN_VERSION} if ctx.functions else {})
    onnx_graph = oir.Graph(inputs, outputs, nodes=ctx.nodes, initializers=ctx.initializers,
                           opset_imports=opsets, name=graph.name)
    return oir.Model(onnx_graph, ir_version=IR_VERSION, producer_name=PRODUCER,
                     functions=list(ctx.functions.values()))


def _emitted_for(nodes: list, marks: list) -> dict:
    """ONNX node -> IR node for the nodes of the list ``nodes``: each mark
    ``(list, length, IR node)`` of ``EmitContext.marks`` on that list starts
    the run of nodes built for its IR node."""
    starts = [(start, ir_node) for where, start, ir_node in marks if where is nodes]
    found = {}
    for k, (start, ir_node) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(nodes)
        for node in nodes[start:end]:
            found[node] = ir_node
    return found


def onnx_dims(shape) -> list:
    """IR dims as ONNX dims: an int is a ``dim_value``, a name or an
    expression (its text, ``H//2-1``) a ``dim_param``, None neither."""
    return [d if d is None or isinstance(d, (int, str)) else format_dim(d) for d in shape]


def _declare_types(graph: Graph, env: dict, initializers: list[oir.Value]) -> None:
    """Give the ONNX value of every node output and initializer its type
    (serialized as ``value_info``); values already typed (inputs) are left.
    Without ``value_info=True`` initializers have none: their tensors hold
    dtype and dims, so the declarations would only repeat them."""
    for value in initializers:
        value.type = oir.TensorType(value.const_value.dtype)
        value.shape = oir.Shape(value.const_value.shape)
    for node in graph:
        for v in node.outputs:
            value = env[v]
            if value.type is None and value.shape is None:
                value.type = oir.TensorType(onnx_dtype(v.type.dtype))
                value.shape = oir.Shape(onnx_dims(v.type.shape))


def _reserve_output_names(graph: Graph, namer: Namer) -> list[str]:
    """One fresh name per graph output: the value's hint when it is a node
    output seen for the first time and its hint is free, else ``output<i>``."""
    names, seen = [], set()
    for i, v in enumerate(graph.outputs):
        first = v.producer is not None and v not in seen
        seen.add(v)
        if first and v.name and v.name not in namer:
            names.append(namer.fresh(v.name))
        else:
            names.append(namer.fresh(f"output{i}"))
    return names
