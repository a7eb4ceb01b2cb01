"""``EmitContext``: what an emission rule uses to build ONNX nodes.

The context creates ONNX nodes and constants with names that are unique
across the whole model (one namespace for graph inputs, initializers, node
outputs and node names), and collects the nodes of the graph (or of a
control-flow body) being built. It also holds the emitter's options and the
model-local ONNX functions the rules define (``call_function``).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import onnx_ir as oir

from backends.onnx.provenance import ORIGINS_KEY, PROVENANCE_MODES, SourcePaths, origin_texts
from ir.errors import EmitError
from ir.core import Node
from ir.numerics import NUMERICS
from ir.types import DType, TensorType


# the ops onnxruntime's NoopElimination drops, with the constant it compares to in float32
NOOP_LOOKING = {"Add": 0.0, "Sub": 0.0, "Mul": 1.0, "Div": 1.0}


def _scalar_double(value: oir.Value | None) -> float | None:
    """The float of ``value`` where it is a float64 constant of one element
    (an initializer, or a ``Constant`` node's output in a function body),
    else None."""
    if value is None:
        return None
    tensor = value.const_value
    if tensor is None:
        producer = value.producer()
        if producer is None or producer.op_type != "Constant" or "value" not in producer.attributes:
            return None
        tensor = producer.attributes["value"].value
    if tensor.dtype != oir.DataType.DOUBLE or tensor.size != 1:
        return None
    return float(tensor.numpy().reshape(-1)[0])


def onnx_dtype(dtype: DType) -> oir.DataType:
    """The ONNX element type of an IR dtype."""
    return oir.DataType.from_numpy(dtype.numpy)


def onnx_value(name: str, t: TensorType) -> oir.Value:
    """A fully typed ONNX value called ``name`` for IR type ``t``: int dims stay
    static, named dims become ``dim_param``, ``None`` dims have neither."""
    return oir.val(name, onnx_dtype(t.dtype), list(t.shape))


FUNCTION_DOMAIN = "pytensor_onnx"  # the domain of the model-local functions
FUNCTION_DOMAIN_VERSION = 1


@dataclass(frozen=True)
class EmitOptions:
    """Choices of ONNX form that ``emit_model`` leaves to the caller. In a
    compilation, ``compiler.core.options.CompileOptions.emit`` derives it.

    Attributes:
        opset: the default-domain opset the model imports (>= 18; the rules
            use opset-18 operator forms, which later opsets keep).
        value_info: also declare the type of every node output and
            initializer (ONNX ``value_info``), symbolic dims included.
        numerics: ``"fast"`` (the default) emits the fastest form within the
            numerics contract (docs/numerics.md): a float ``where``
            is one Where, SiLU is Sigmoid + Mul, and no other node exists
            only to fix the sign of a zero result. ``"strict"`` keeps the
            bit-exact forms (NumPy's sign of zero everywhere, SiLU with
            ``1 / (1 + exp(-x))``). See ARCHITECTURE.md "Numerics modes" for
            the decision per rule.
        float64_conv: how to emit float64 ops whose onnxruntime CPU kernel
            has no float64 version (Conv for ``conv`` and ``convolve2d``,
            AveragePool for ``avg_pool``): ``"exact"`` (default) emits exact
            float64 decompositions (``rules/window_f64.py``: strided Slices
            and MatMul, or Add and Div); ``"float32"`` casts in, computes
            in float32, casts out and issues a ``UserWarning`` naming the
            op; ``"native"`` emits the float64 operator itself, for
            runtimes that have it (onnxruntime's CPU provider does not).
        silu: ``"function"`` emits ``silu`` as a call of the model-local
            function ``SiLU`` (domain ``pytensor_onnx``); ``"primitive"``
            inlines its body; ``"auto"`` (default) is ``"primitive"`` under
            ``numerics="fast"`` (onnxruntime then also turns a following
            nearest Resize into its NCHWc Upsample: YOLO11n 62 ms against
            66 ms with the function) and ``"function"`` under ``"strict"``.
        gelu: the same for ``gelu`` (``Gelu``; ONNX's Gelu is opset 20).
        max_pool_nan: ``"native"`` emits ``max_pool``/``global_max_pool`` as
            MaxPool/GlobalMaxPool, whose result for a window holding NaN is
            unspecified (see ``ir/ops/nn.py``); ``"propagate"`` adds a NaN
            mask so that such windows give NaN, as ``np.max`` does.
        provenance: how node provenance names source files
            (``provenance.SourcePaths``): ``"relative"`` (default: to
            ``provenance_root``, else a module path or base name; never
            absolute), ``"absolute"`` (as PyTensor recorded them) or
            ``"none"`` (nodes carry no provenance).
        provenance_root: the directory ``"relative"`` paths start from
            (None: the current directory when the model is emitted).
    """

    opset: int = 18
    value_info: bool = False
    numerics: str = "fast"
    float64_conv: str = "exact"
    silu: str = "auto"
    gelu: str = "function"
    max_pool_nan: str = "native"
    provenance: str = "relative"
    provenance_root: str | None = None

    CHOICES = {"numerics": NUMERICS, "float64_conv": ("exact", "float32", "native"),
               "silu": ("auto", "function", "primitive"),
               "gelu": ("function", "primitive"), "max_pool_nan": ("native", "propagate")}

    def __post_init__(self):
        for name, allowed in self.CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"emit option {name}={getattr(self, name)!r}: accepted values are "
                                 f"{', '.join(map(repr, allowed))}")
        if self.provenance not in PROVENANCE_MODES:  # CompileOptions' own option, not an emit_options key
            raise ValueError(f"provenance must be one of {', '.join(map(repr, PROVENANCE_MODES))}; "
                             f"got {self.provenance!r}")

    @property
    def strict(self) -> bool:
        """Whether the bit-exact forms are wanted (``numerics="strict"``)."""
        return self.numerics == "strict"


def attribute(name: str, value) -> oir.Attr:
    """The ``oir.Attr`` called ``name`` holding the Python value ``value``:
    what ``onnx_ir.convenience.convert_attribute`` returns, with the common
    cases (an ``int``, ``float`` or ``str``; a non-empty list or tuple of
    ``int`` or of ``float``; an ``oir.Tensor``; an ``oir.Graph``) built
    directly, without its chain of protocol checks. Anything else (bools,
    NumPy scalars, mixed or empty lists, ...) goes through
    ``convert_attribute``. TypeError for a value it cannot convert."""
    kind = type(value)
    maker = _SCALAR_ATTRS.get(kind)
    if maker is not None:
        return maker(name, value)
    if kind is list or kind is tuple:
        if value:
            first = type(value[0])
            if first is int or first is float:
                if all(type(v) is first for v in value):
                    return oir.AttrInt64s(name, value) if first is int else oir.AttrFloat32s(name, value)
    return oir.convenience.convert_attribute(name, value)


_SCALAR_ATTRS = {int: oir.AttrInt64, float: oir.AttrFloat32, str: oir.AttrString, oir.Tensor: oir.AttrTensor,
                 oir.Graph: oir.AttrGraph}


class Namer:
    """Hands out names unique within one model; ``fresh`` is amortized O(1)."""

    def __init__(self) -> None:
        self._taken: set[str] = set()
        self._next: dict[str, int] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._taken

    def take(self, name: str) -> None:
        """Claim ``name`` exactly. EmitError if it is already taken."""
        if name in self._taken:
            raise EmitError(f"ONNX name {name!r} is used twice")
        self._taken.add(name)

    def fresh(self, base: str) -> str:
        """``base`` if free, else ``base_<n>`` with the smallest free n seen so far."""
        taken = self._taken
        if base not in taken:
            taken.add(base)
            return base
        n = self._next.get(base, 1)
        name = f"{base}_{n}"
        while name in taken:
            n += 1
            name = f"{base}_{n}"
        self._next[base] = n + 1
        taken.add(name)
        return name


class EmitContext:
    """Builds the ONNX nodes of one model for the emission rules.

    Attributes:
        namer: the model-wide ``Namer``.
        nodes: the ONNX nodes built so far for the current graph or body.
        initializers: ONNX initializer values (IR constants and rule constants).
        node: the IR node being emitted (used for names and error messages).
        options: the ``EmitOptions``.
        opset: the model's default-domain opset (function bodies import it too).
        functions: the model-local functions defined so far, by
            ``(name, overload)``.
    """

    def __init__(self, namer: Namer, options: EmitOptions | None = None) -> None:
        self.namer = namer
        self.nodes: list[oir.Node] = []
        self.initializers: list[oir.Value] = []
        self.node: Node | None = None
        self.options = options or EmitOptions()
        self.opset = self.options.opset
        self.functions: dict[tuple[str, str], oir.Function] = {}
        self._consts: dict[tuple, oir.Value] = {}
        self._stamps: dict[tuple, tuple[str, str]] = {}  # provenance texts per origins tuple
        self._paths = (SourcePaths(self.options.provenance, self.options.provenance_root)
                       if self.options.provenance != "none" else None)
        self._shapes: dict[tuple, oir.Shape] = {}  # frozen (so shareable) tensor shapes
        # the output name hint and provenance texts of the IR node ``_for`` (the last ``self.node`` seen)
        self._for: Node | None = None
        self._for_hint = "tmp"
        self._for_texts: tuple[str, str] | None = None
        # (node list, its length, IR node) whenever emission moves to another IR node; None: not recorded
        self.marks: list | None = None

    # -- building blocks ----------------------------------------------------
    def op(self, op_type: str, *inputs: oir.Value | None, num_outputs: int = 1, **attrs):
        """Append ONNX node ``op_type(*inputs)`` with attributes ``attrs``
        (Python ints, floats, strings, lists, ``oir.Tensor``, ``oir.Graph``;
        see ``attribute``) to the current graph; returns its output value,
        or a tuple when ``num_outputs > 1``. A ``None`` input is an omitted
        optional input. The node is named ``<op_type>_node`` and its outputs
        after the IR node's first output (both made unique); it carries the
        IR node's provenance (``provenance.py``)."""
        if op_type in NOOP_LOOKING and not attrs:
            rewritten = self._avoid_noop_elimination(op_type, inputs)
            if rewritten is not None:
                return rewritten
        return self._op(op_type, *inputs, num_outputs=num_outputs, **attrs)

    def _op(self, op_type: str, *inputs: oir.Value | None, num_outputs: int = 1, **attrs):
        """``op`` without its ``NoopElimination`` guard."""
        if self.node is not self._for:
            self._describe(self.node)
        fresh = self.namer.fresh
        texts = self._for_texts
        if num_outputs == 1:
            output = oir.Value(name=fresh(self._for_hint))
            self.nodes.append(oir.Node("", op_type, inputs,
                                       [attribute(k, v) for k, v in attrs.items()] if attrs else (),
                                       outputs=(output,), name=fresh(op_type + "_node"),
                                       doc_string=texts[1] if texts else None,
                                       metadata_props={ORIGINS_KEY: texts[0]} if texts else None))
            return output
        return self._append("", op_type, inputs, num_outputs, attrs, "")

    def _avoid_noop_elimination(self, op_type: str, inputs) -> oir.Value | None:
        """The value of ``op_type(*inputs)`` built so that onnxruntime's
        ``NoopElimination`` cannot drop it, or None where it would not.

        That rewrite rule (onnxruntime/core/optimizer/noop_elimination.cc, on
        in every default session, onnxruntime-web's too) removes ``x + c``,
        ``c + x``, ``x - c`` where ``c``, a constant of at most one element,
        is 0 *after a cast to float32*, and ``x * c``, ``c * x``, ``x / c``
        where it is 1 so: a float64 ``1e-300`` added (``log(x + 1e-300)``)
        or a factor ``1 + 1e-10`` vanish. Here an Add/Sub of such a c
        becomes ``Sum(x, c)`` / ``Sum(x, Neg(c))`` (the same IEEE sum; Sum is
        not one of the rule's ops), a Mul/Div ``Sum(x, x d)`` with ``d = c -
        1`` (exact) or ``1/c - 1``: within an ulp of ``x c`` (one more
        rounding; a zero x may lose its sign); with ``numerics="strict"``
        Mul/Div stay (exact in the sessions ``runtime.make_session`` builds,
        which disable the rule). onnxruntime folds the constants built from
        c, and c itself stays in use.
        """
        for i, value in enumerate(inputs):
            c = _scalar_double(value)
            if c is None or (i == 0 and op_type in ("Sub", "Div")):
                continue
            neutral = NOOP_LOOKING[op_type]
            with np.errstate(over="ignore"):
                if c == neutral or np.float32(c) != neutral:
                    continue
            other = inputs[1 - i]
            if op_type == "Add":
                return self._op("Sum", *inputs)
            if op_type == "Sub":
                return self._op("Sum", other, self._op("Neg", value))
            if self.options.strict:
                return None
            one = self.const(1.0, DType.FLOAT64)
            d = self._op("Sub", value if op_type == "Mul" else self._op("Div", one, value), one)  # c - 1: exact
            return self._op("Sum", other, self._op("Mul", other, d))
        return None

    def _append(self, domain: str, op_type: str, inputs, num_outputs: int, attrs: dict, overload: str):
        """Build, stamp and append one node (``call_function``, and ``op``
        with several outputs; ``op`` inlines the one-output case)."""
        if self.node is not self._for:
            self._describe(self.node)
        fresh = self.namer.fresh
        hint = self._for_hint
        if num_outputs == 1:
            outputs = [oir.Value(name=fresh(hint))]
        else:
            outputs = [oir.Value(name=fresh(hint)) for _ in range(num_outputs)]
        texts = self._for_texts
        node = oir.Node(domain, op_type, inputs, [attribute(k, v) for k, v in attrs.items()] if attrs else (),
                        overload=overload, outputs=outputs, name=fresh(op_type + "_node"),
                        doc_string=texts[1] if texts else None,
                        metadata_props={ORIGINS_KEY: texts[0]} if texts else None)
        self.nodes.append(node)
        return outputs[0] if num_outputs == 1 else tuple(outputs)

    def _describe(self, node: Node | None) -> None:
        """Remember the output name hint and the provenance texts of ``node``
        (the IR node being emitted) for the ONNX nodes built for it."""
        self._for = node
        self._for_hint = self._hint()
        if self.marks is not None:
            self.marks.append((self.nodes, len(self.nodes), node))
        self._for_texts = (origin_texts(node.origins, self._stamps, self._paths)
                           if node is not None and self._paths is not None else None)

    def const(self, value, dtype: DType) -> oir.Value:
        """An initializer holding ``np.asarray(value, dtype)`` (scalars stay
        rank 0); equal constants are shared."""
        array = np.asarray(value, dtype=dtype.numpy)
        key = (dtype, array.shape, array.tobytes())
        if key not in self._consts:
            self._consts[key] = self.initializer(array, f"k_{dtype}")
        return self._consts[key]

    def initializer(self, array: np.ndarray, base: str) -> oir.Value:
        """A new initializer holding ``array`` named after ``base`` (made unique)."""
        name = self.namer.fresh(base)
        array = np.asarray(array, order="C")
        shape = self._shapes.get(array.shape)
        if shape is None:
            shape = self._shapes[array.shape] = oir.Shape(array.shape, frozen=True)
        # oir.Tensor directly: oir.tensor would first test the array against runtime protocols (slow)
        value = oir.Value(name=name, const_value=oir.Tensor(array, shape=shape, name=name))
        self.initializers.append(value)
        return value

    def cast(self, x: oir.Value, to: DType) -> oir.Value:
        """``Cast(x, to)``."""
        return self.op("Cast", x, to=int(onnx_dtype(to)))

    def error(self, why: str) -> EmitError:
        """An ``EmitError`` naming the IR op being emitted and its input dtypes."""
        if self.node is None:
            return EmitError(why)
        dtypes = ", ".join(str(v.dtype) for v in self.node.inputs)
        return EmitError(f"cannot emit IR op {self.node.op!r} ({dtypes}) as ONNX: {why}")

    # -- model-local functions ------------------------------------------------
    def call_function(self, name: str, overload: str, inputs: list[oir.Value],
                      body: Callable[..., oir.Value]) -> oir.Value:
        """A node calling the model-local function ``name`` (domain
        ``FUNCTION_DOMAIN``, ``overload`` distinguishing bodies built for
        different dtypes) on ``inputs``; returns its output.

        On the first call for ``(name, overload)`` the function is defined:
        ``body(fctx, *params)`` builds its nodes through ``fctx``, a
        ``FunctionContext`` (same building blocks, with constants as Constant
        nodes), and returns the function's output value.
        """
        key = (name, overload)
        if key not in self.functions:
            fctx = FunctionContext(self)
            params = [oir.Value(name=fctx.namer.fresh(f"X{i}")) for i in range(len(inputs))]
            result = body(fctx, *params)
            graph = oir.Graph(params, [result], nodes=fctx.nodes, opset_imports={"": self.opset}, name=name)
            self.functions[key] = oir.Function(FUNCTION_DOMAIN, name, overload, graph=graph, attributes=[])
        return self._append(FUNCTION_DOMAIN, name, inputs, 1, {}, overload)

    # -- control-flow bodies --------------------------------------------------
    @contextlib.contextmanager
    def body(self) -> Iterator[list[oir.Node]]:
        """Collect the nodes built inside the ``with`` block into the yielded
        list (a control-flow body) instead of the current graph. Bodies may
        read any value of the enclosing graphs (ONNX outer-scope references)."""
        outer, self.nodes = self.nodes, []
        collected = self.nodes
        try:
            yield collected
        finally:
            self.nodes = outer

    def subgraph(self, nodes: list[oir.Node], inputs: list[oir.Value], outputs: list[oir.Value],
                 base: str) -> oir.Graph:
        """A control-flow body graph (for a Loop/Scan ``body`` attribute) made
        of ``nodes`` collected by ``body()``."""
        return oir.Graph(inputs, outputs, nodes=nodes, name=self.namer.fresh(base))

    def body_input(self, base: str, dtype: DType, shape=None) -> oir.Value:
        """A typed input value for a control-flow body (``shape=None``: unknown rank)."""
        return oir.val(self.namer.fresh(base), onnx_dtype(dtype), shape)

    def _hint(self) -> str:
        if self.node is None:
            return "tmp"
        return self.node.outputs[0].name if self.node.outputs and self.node.outputs[0].name else self.node.op


class FunctionContext(EmitContext):
    """Builds the body of a model-local function: like ``EmitContext``, but
    with its own namespace and with constants (which a function cannot hold
    as initializers) emitted as Constant nodes. Emission helpers written
    against ``EmitContext`` work unchanged, so a function body is exactly
    the primitive form of the same computation."""

    def __init__(self, outer: EmitContext) -> None:
        super().__init__(Namer(), outer.options)
        self.functions = outer.functions

    def initializer(self, array: np.ndarray, base: str) -> oir.Value:
        """A Constant node holding ``array`` (functions have no initializers)."""
        return self.op("Constant", value=oir.Tensor(np.asarray(array, order="C")))

    @contextlib.contextmanager
    def body(self) -> Iterator[list[oir.Node]]:
        """``EmitContext.body``; the Constant nodes built inside the block are
        nodes of the body, so they are not shared with code built after it
        (constants built before it stay shared: a body reads outer values)."""
        shared = self._consts
        self._consts = dict(shared)
        try:
            with super().body() as nodes:
                yield nodes
        finally:
            self._consts = shared
