"""The op registry: one ``OpDef`` per IR op, holding its attributes, its
type/shape rule and its NumPy reference semantics in one place.

An op family module (``ir/ops/elementwise.py`` and friends) calls
``register(OpDef(...))`` for each op; ``get_op(name)`` looks one up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ir.errors import OpError
from ir.types import DType, TensorType

REQUIRED = object()  # sentinel default of an attribute that must be given

# Attribute kinds and the Python values they hold.
ATTR_KINDS = ("int", "float", "bool", "str", "dtype", "ints", "floats")

# Op traits: facts about an op's semantics that passes and emitter rules ask
# the op for (``OpDef.has``, ``ops_with``) instead of keeping lists of names.
ELEMENTWISE = "elementwise"
"""Output element i depends only on the input elements at i (after
broadcasting); the output has the broadcast shape of the inputs."""
BROADCASTING = "broadcasting"
"""An elementwise op of several tensor inputs that broadcast like NumPy."""
TOTAL = "total"
"""Computes a value (NaN or ±inf at worst) for every input of its type:
never traps, raises or depends on a condition, so evaluating it where its
result is then discarded (``if-to-where``) is safe."""
TOTAL_ON_FLOATS = "total_on_floats"
"""``TOTAL`` when the inputs are floats only (integer division by zero traps)."""
NO_NEG_INF = "no_neg_inf"
"""Its result never holds -inf, whatever its inputs (>= a finite bound, or NaN)."""
ROW_MAJOR_VIEW = "row_major_view"
"""Its result holds its first input's elements in the same row-major order,
only the shape changes (``reshape``, ``squeeze``, ``unsqueeze``, ``flatten``)."""
RANDOM = "random"
"""Draws from a random-number stream: each evaluation by the runtime gives new
values (the NumPy ``evaluate`` draws from its ``seed`` attribute, so the
interpreter is reproducible). Never folded at compile time."""
TRAITS = frozenset({ELEMENTWISE, BROADCASTING, TOTAL, TOTAL_ON_FLOATS, NO_NEG_INF, ROW_MAJOR_VIEW, RANDOM})


@dataclass(frozen=True)
class Attr:
    """An attribute of an op: its kind (one of ``ATTR_KINDS``), default value
    (``REQUIRED`` if it has none) and allowed values (None: any)."""

    kind: str
    default: Any = REQUIRED
    choices: tuple | None = None

    def coerce(self, op: str, name: str, value: Any) -> Any:
        """Check ``value`` against this attribute and return it normalized
        (lists become tuples, numpy scalars Python scalars).

        Raises:
            OpError: wrong kind or a value outside ``choices``.
        """
        def fail(why: str):
            raise OpError(f"{op}: attribute {name}={value!r} {why}")

        k = self.kind
        if k == "int":
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                fail("must be an int")
            value = int(value)
        elif k == "float":
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                fail("must be a float")
            value = float(value)
        elif k == "bool":
            if not isinstance(value, (bool, np.bool_)):
                fail("must be a bool")
            value = bool(value)
        elif k == "str":
            if not isinstance(value, str):
                fail("must be a string")
        elif k == "dtype":
            if not isinstance(value, DType):
                fail("must be a DType")
        elif k in ("ints", "floats"):
            if not isinstance(value, (list, tuple)):
                fail(f"must be a list of {k[:-1]}s")
            elem = Attr(k[:-1])
            value = tuple(elem.coerce(op, name, v) for v in value)
        else:  # pragma: no cover - guarded by OpDef.__post_init__
            fail(f"has unknown kind {k}")
        if self.choices is not None and value not in self.choices:
            fail(f"must be one of {self.choices}")
        return value


InferFn = Callable[[Sequence[TensorType], dict, Sequence["np.ndarray | None"]], Sequence[TensorType]]
EvalFn = Callable[[Sequence[np.ndarray], dict], Sequence[np.ndarray]]


@dataclass(frozen=True)
class OpDef:
    """Definition of one IR op.

    Attributes:
        name: the op name as printed (``"add"``).
        infer: type rule ``(input_types, attrs, const_inputs) -> output_types``;
            ``const_inputs[i]`` is the NumPy array of input ``i`` when it is a
            graph constant, else None. Raises ``OpError`` on bad input.
        evaluate: reference semantics ``(input_arrays, attrs) -> output_arrays``
            in NumPy; the outputs have exactly the types ``infer`` gives.
        num_inputs: the number of inputs, or None for variadic ops.
        attrs: name -> ``Attr``.
        commutative: the two inputs may be swapped.
        traits: names from ``TRAITS`` (``ELEMENTWISE``, ``TOTAL``, ...): what
            passes may assume of the op without naming it.
        doc: one line on the semantics and where they come from.
        symbolic_inputs: ``infer`` also accepts, in ``const_inputs``, NumPy
            object arrays whose elements are dims (int, str, ``Expr`` or
            None): what the ``shape-inference`` pass knows of the value of
            an integer input (``shape(x)`` of an ``f32[N,3]`` is ``[N, 3]``).
            Read such inputs with ``ir.ops.common.known_dims``.
        subgraph_roles: the roles of the nested graphs a node of this op
            holds (``("body",)``; see ``ir/ops/control_flow.py``). For such
            ops ``infer`` takes a fourth argument, the node's subgraphs
            (role -> ``Graph``), and ``evaluate`` is ``(input_arrays, attrs,
            subgraphs, run) -> output_arrays`` where ``run(graph, arrays)``
            evaluates a nested graph. Other ops ignore nested graphs.
    """

    name: str
    infer: InferFn
    evaluate: EvalFn
    num_inputs: int | None
    attrs: dict[str, Attr] = field(default_factory=dict)
    commutative: bool = False
    traits: frozenset[str] = frozenset()
    doc: str = ""
    symbolic_inputs: bool = False
    subgraph_roles: tuple[str, ...] = ()

    def __post_init__(self):
        unknown = set(self.traits) - TRAITS
        if unknown:
            raise ValueError(f"{self.name}: unknown trait(s) {sorted(unknown)}; traits are {sorted(TRAITS)}")
        object.__setattr__(self, "traits", frozenset(self.traits))
        for a in self.attrs.values():
            if a.kind not in ATTR_KINDS:
                raise ValueError(f"{self.name}: unknown attribute kind {a.kind}")
        object.__setattr__(self, "_sorted_attrs", tuple(sorted(self.attrs.items())))
        # the normalized attributes of a node given none (None: one is required)
        defaults = None if any(a.default is REQUIRED for a in self.attrs.values()) else \
            {name: a.default for name, a in self._sorted_attrs}
        object.__setattr__(self, "_defaults", defaults)

    def normalize_attrs(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Attributes checked against the schema, defaults filled in, sorted by name.

        Raises:
            OpError: unknown attribute, missing required one, or bad value.
        """
        if not attrs:
            if self._defaults is None:
                raise OpError(f"{self.name}: missing required attribute "
                              f"{next(n for n, a in self._sorted_attrs if a.default is REQUIRED)}")
            return dict(self._defaults)
        unknown = [name for name in attrs if name not in self.attrs]
        if unknown:
            raise OpError(f"{self.name}: unknown attribute(s) {sorted(unknown)}")
        out = {}
        for name, spec in self._sorted_attrs:
            if name in attrs:
                out[name] = spec.coerce(self.name, name, attrs[name])
            elif spec.default is REQUIRED:
                raise OpError(f"{self.name}: missing required attribute {name}")
            else:
                out[name] = spec.default
        return out

    def has(self, trait: str) -> bool:
        """Whether the op has ``trait`` (one of ``TRAITS``)."""
        return trait in self.traits

    def check_arity(self, n: int) -> None:
        """Raise OpError unless ``n`` inputs are allowed."""
        if self.num_inputs is not None and n != self.num_inputs:
            raise OpError(f"{self.name} takes {self.num_inputs} inputs, got {n}")

    def infer_types(self, types: Sequence[TensorType], attrs: dict,
                    consts: Sequence["np.ndarray | None"] | None = None,
                    subgraphs: dict | None = None) -> list[TensorType]:
        """Output types for inputs of ``types`` (see ``infer``); ``subgraphs``
        are the node's nested graphs (used by ops with ``subgraph_roles``).
        ``consts`` is read, never copied or changed (a caller may pass a
        sequence that notes which constants the rule reads).

        Memoized: a rule that decides without reading any constant input is
        not run again for the same rule, attributes and input types
        (``_INFERRED``, at most ``MAX_MEMO`` entries).

        Raises:
            OpError: the type rule rejects the inputs, or an op with
                ``subgraph_roles`` lacks one of its nested graphs.
        """
        if self.num_inputs is not None and len(types) != self.num_inputs:
            self.check_arity(len(types))
        if consts is None:
            consts = [None] * len(types)
        types = types if type(types) is list else list(types)
        if not self.subgraph_roles:
            key = _memo_key(self.infer, types, attrs)
            if key is not None:
                known = _INFERRED.get(key)
                if known is not None:
                    return list(known)
                watched = WatchedSequence(consts)
                result = self.infer(types, attrs, watched)
                result = result if type(result) is list else list(result)
                if not watched.read:  # the types alone decided: any constants give the same
                    if len(_INFERRED) >= MAX_MEMO:
                        _INFERRED.clear()
                    _INFERRED[key] = tuple(result)
                return result
            result = self.infer(types, attrs, consts)
            return result if type(result) is list else list(result)
        subgraphs = dict(subgraphs or {})
        if sorted(subgraphs) != sorted(self.subgraph_roles):
            raise OpError(f"{self.name} needs nested graphs {list(self.subgraph_roles)}, got {sorted(subgraphs)}")
        return list(self.infer(types, attrs, consts, subgraphs))


MAX_MEMO = 16384
"""Entries of the type-rule memo (``OpDef.infer_types``) before it starts over."""

# (type rule, input types, attribute key) -> output types, for rules that
# read no constant input: a rule is a pure function of its arguments, so one
# that decided without looking at the constants gives the same types for any.
# Keyed by the rule itself, not the op name: an op registered again (a test's
# stand-in) never sees another rule's types.
_INFERRED: dict[tuple, tuple[TensorType, ...]] = {}

_ATOMS = (int, bool, str, DType)  # attribute values that key the memo as they are


def _memo_key(op: Any, types: list[TensorType], attrs: dict) -> tuple | None:
    """The memo key of a call of type rule ``op`` (the rule function), or
    None when an attribute value cannot key it. Floats key by ``float.hex``
    (``-0.0`` is not ``0.0``); bools and ints by their class too (``True``
    is not ``1``)."""
    if not attrs:
        return (op, *types)
    parts: list = [op, *types]
    for name, v in attrs.items():
        kind = type(v)
        if kind is float:
            parts += (name, kind, v.hex())
        elif kind in _ATOMS:
            parts += (name, kind, v)
        elif kind is tuple and all(type(e) is int for e in v):
            parts += (name, kind, v)  # ints only: no bool among them to mistake for 1
        elif kind is tuple and all(type(e) in _ATOMS for e in v):
            parts += (name, kind, tuple((type(e), e) for e in v))
        else:
            return None  # float tuples and the rest: not worth a key
    return tuple(parts)


class WatchedSequence:
    """A read-only sequence (a type rule's constant inputs) that notes
    whether anything read its items (its length is not a read)."""

    __slots__ = ("_items", "read")

    def __init__(self, items: Sequence):
        self._items = items
        self.read = False

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i):
        self.read = True
        return self._items[i]

    def __iter__(self):
        self.read = True
        return iter(self._items)

    def __reversed__(self):
        self.read = True
        return reversed(self._items)

    def __contains__(self, item) -> bool:
        self.read = True
        return item in self._items


_REGISTRY: dict[str, OpDef] = {}


def register(opdef: OpDef) -> OpDef:
    """Add ``opdef`` to the registry. ValueError on a duplicate name."""
    if opdef.name in _REGISTRY:
        raise ValueError(f"op {opdef.name} is already registered")
    _REGISTRY[opdef.name] = opdef
    return opdef


def get_op(name: str) -> OpDef:
    """The definition of op ``name``. KeyError with the known names if unknown."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown IR op {name!r}") from None


def all_ops() -> dict[str, OpDef]:
    """Every registered op by name (a copy)."""
    return dict(_REGISTRY)


def ops_with(trait: str) -> frozenset[str]:
    """The names of the registered ops with ``trait`` (for pattern tables
    built at import time, after ``ir.ops`` has registered the built-in ops).

    Raises:
        ValueError: ``trait`` is not one of ``TRAITS``.
    """
    if trait not in TRAITS:
        raise ValueError(f"unknown trait {trait!r}; traits are {sorted(TRAITS)}")
    return frozenset(name for name, op in _REGISTRY.items() if trait in op.traits)
