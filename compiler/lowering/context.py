"""``LoweringContext``: the builder lowering rules use to emit IR for one
PyTensor graph. It maps PyTensor variables to IR values, turns PyTensor
constants into IR constants, and stamps each IR node with the user's source
line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from compiler.errors import Unsupported
from ir import DType, Graph, Origin, TensorType, Value


ASSERTION_MODES = ("drop", "nan")
RANDOM_POLICIES = (None, "inputs", "onnx")


@dataclass
class LoweringOptions:
    """Options of one lowering, shared by the contexts of its nested bodies.

    Attributes:
        assertions: what ``CheckAndRaise``/``Assert`` nodes become (see
            ``rules/assertions.py``): ``"drop"`` (the guarded value, listed in
            ``dropped``) or ``"nan"`` (the value poisoned with NaN where a
            condition fails).
        dropped: (op label, source line) of every assertion dropped so far.
        random: what random variables become (``rules/random.py``): None
            (unsupported), ``"inputs"`` (noise as model inputs) or
            ``"onnx"`` (ONNX random ops).
        random_inputs: the ``RandomInput`` of every noise input made so far.
        random_count: random nodes made so far (each gets its own seed).
        main_graph: the top-level graph (noise inputs can only go there).
        specified: ``(dim, size)`` for every constant size a ``SpecifyShape``
            requires of a symbolic dim (the value's dim before PyTensor's
            static dim is adopted), for the run-time input check
            (``compiler.validation.equal_dim_groups``).
    """

    assertions: str = "drop"
    dropped: list = field(default_factory=list)
    random: str | None = None
    random_inputs: list = field(default_factory=list)
    random_count: int = 0
    main_graph: Graph | None = None
    specified: list = field(default_factory=list)

    def __post_init__(self):
        if self.assertions not in ASSERTION_MODES:
            raise ValueError(f"assertions must be one of {ASSERTION_MODES}, got {self.assertions!r}")
        if self.random not in RANDOM_POLICIES:
            raise ValueError(f"random must be one of {RANDOM_POLICIES}, got {self.random!r}")


class LoweringContext:
    """State of one lowering: the IR graph being built and the variable map.

    Attributes:
        graph: the IR ``Graph`` under construction.
        values: PyTensor Variable -> IR Value, for every variable lowered so far.
        source: the source line (``file:line``) of the node being lowered.
        op_label: the printed PyTensor op of the node being lowered.
        memo: per-lowering caches of the rules, keyed by their own tuples
            (e.g. the scalar ``Apply`` of an ``Elemwise`` per scalar op and
            input dtypes, so it is built once, not per node).
        options: the ``LoweringOptions`` (shared with nested bodies).
    """

    def __init__(self, graph: Graph, options: LoweringOptions | None = None):
        self.graph = graph
        self.values: dict[Any, Value] = {}
        self.source: str | None = None
        self.op_label: str | None = None
        self.memo: dict[tuple, Any] = {}
        self.options = options if options is not None else LoweringOptions()
        self.constants = None  # a const_eval.ConstantEvaluator for the top-level graph
        self._const_cache: dict[tuple, Value] = {}

    # -- reading inputs ----------------------------------------------------
    def get(self, var) -> Value:
        """The IR value of PyTensor variable ``var`` (constants are created on
        first use).

        Raises:
            Unsupported: a constant of a type with no IR equivalent.
        """
        v = self.values.get(var)
        if v is not None:
            return v
        data = getattr(var, "data", None)
        if data is None or not hasattr(var.type, "dtype"):
            raise Unsupported(f"input {var} has no IR value (type {var.type})")
        v = self.const(np.asarray(data, dtype=var.type.dtype), name=var.name or "const")
        self.values[var] = v
        return v

    def constant_value(self, var) -> np.ndarray | None:
        """The NumPy value of ``var`` if it is a PyTensor constant, lowers to an
        IR constant, or is computed from constants only (evaluated by
        PyTensor, ``const_eval.py``), else None."""
        data = getattr(var, "data", None)
        if data is not None and hasattr(var.type, "dtype"):
            return np.asarray(data, dtype=var.type.dtype)
        v = self.values.get(var)
        if v is not None and v.const is not None:
            return v.const
        return self.constants.value(var) if self.constants is not None else None

    @property
    def origins(self) -> tuple[Origin, ...]:
        """The provenance stamped on the IR nodes built now: the PyTensor op
        being lowered and its user source line."""
        return (Origin(self.op_label, self.source),) if self.op_label or self.source else ()

    # -- building IR -------------------------------------------------------
    def const(self, array, dtype: DType | str | None = None, name: str = "const") -> Value:
        """An IR constant holding ``array`` (cast to ``dtype`` when given). Small
        constants with equal dtype, shape and bytes are shared."""
        arr = np.asarray(array, dtype=(dtype.numpy if isinstance(dtype, DType) else dtype))
        try:
            DType.from_numpy(arr.dtype)
        except TypeError:
            raise Unsupported(unsupported_dtype_reason(arr.dtype)) from None
        key = None
        if arr.size <= 16:
            key = (arr.dtype.str, arr.shape, arr.tobytes())
            hit = self._const_cache.get(key)
            if hit is not None:
                return hit
        v = self.graph.add_constant(arr, _sanitize(name) or "const")
        if key is not None:
            self._const_cache[key] = v
        return v

    def add(self, op: str, inputs: Sequence[Value], attrs: dict | None = None, name: str | None = None) -> Value:
        """Append a single-output node ``op(inputs){attrs}`` and return its output."""
        node = self.graph.create_node(op, list(inputs), attrs, output_names=[name])
        node.origins = self.origins
        self.graph.append(node)
        return node.output

    def add_multi(self, op: str, inputs: Sequence[Value], attrs: dict | None = None) -> tuple[Value, ...]:
        """Append a node with several outputs and return them."""
        node = self.graph.create_node(op, list(inputs), attrs)
        node.origins = self.origins
        self.graph.append(node)
        return node.outputs

    def cast(self, value: Value, dtype: DType) -> Value:
        """``value`` converted to ``dtype`` (no node when it already has it)."""
        if value.dtype == dtype:
            return value
        if value.const is not None and value.const.size <= 16:
            return self.const(value.const.astype(dtype.numpy))
        return self.add("cast", [value], {"to": dtype})

    def i64(self, values) -> Value:
        """An int64 constant (a shape, axes or index list)."""
        return self.const(np.asarray(values, dtype=np.int64))

    def scalar(self, value, dtype: DType) -> Value:
        """A 0-d constant of ``dtype``."""
        return self.const(np.asarray(value, dtype=dtype.numpy))


def ir_dtype(var) -> DType:
    """The IR dtype of a PyTensor variable (tensor or scalar type).

    Raises:
        Unsupported: complex, string and other dtypes with no IR equivalent.
    """
    try:
        return DType.from_numpy(var.type.dtype)
    except (TypeError, AttributeError):
        raise Unsupported(unsupported_dtype_reason(getattr(var.type, "dtype", var.type))) from None


def unsupported_dtype_reason(dtype) -> str:
    """Why values of ``dtype`` (one with no IR equivalent) cannot be lowered."""
    if str(dtype).startswith("complex"):
        return (f"{dtype} values: complex numbers are not supported (ONNX operators do not compute on complex "
                f"tensors; pass real and imaginary parts as separate float tensors)")
    return f"dtype {dtype} is not supported"


def static_shape(var) -> tuple:
    """PyTensor's static shape of ``var`` (None for unknown dims, () for scalars)."""
    return tuple(getattr(var.type, "shape", ()))


def ir_type(var, symbolic: Sequence[str | None] | None = None) -> TensorType:
    """The IR type of PyTensor variable ``var``; unknown dims take the names in
    ``symbolic`` (or stay unknown)."""
    shape = static_shape(var)
    names = list(symbolic) if symbolic is not None else [None] * len(shape)
    return TensorType(ir_dtype(var), tuple(d if d is not None else n for d, n in zip(shape, names)))


def _sanitize(name: str | None) -> str | None:
    if not name:
        return None
    out = "".join(c if c.isalnum() or c in "_." else "_" for c in name)
    return out if not out[0].isdigit() else "_" + out


sanitize_name = _sanitize
