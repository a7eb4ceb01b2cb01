"""``LoweringContext``: the builder lowering rules use to emit IR for one
PyTensor graph. It maps PyTensor variables to IR values, turns PyTensor
constants into IR constants, and stamps each IR node with the user's source
line."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import scipy.sparse

from compiler.lowering.errors import Unsupported
from ir import DType, Graph, Node, Origin, TensorType, Value, get_op
from ir.core import merge_origins
from ir.opdef import RANDOM, WatchedSequence


ASSERTION_MODES = ("drop", "nan", "raise")
SHARED_CONST_SIZE = 16  # constants of at most this many elements are shared by value (``const``)
RANDOM_POLICIES = (None, "inputs", "onnx", "key")
KEY_TYPE = TensorType(DType.UINT64, (2,))  # a generator under random="key": (seed, counter), rules/random_key.py


@dataclass(frozen=True)
class LoweringOptions:
    """What one lowering is asked to do (in a compilation,
    ``compiler.core.options.CompileOptions.lowering`` derives it).

    Attributes:
        bake_shared: shared variables become constants holding a copy of
            their current value (True) or graph inputs (False).
        name: the name of the IR graph.
        assertions: what ``CheckAndRaise``/``Assert`` nodes become (see
            ``rules/assertions.py``): ``"drop"`` (the guarded value, listed in
            ``LoweringRecord.dropped``), ``"nan"`` (the value poisoned with
            NaN where a condition fails) or ``"raise"`` (the value, and the
            conditions as one extra bool graph output, listed in
            ``LoweringRecord.assertions``, for the caller to raise on).
        random: what random variables become (``rules/random.py``): None
            (unsupported), ``"inputs"`` (noise as model inputs), ``"onnx"``
            (ONNX random ops) or ``"key"`` (generators as ``uint64[2]`` keys,
            ``rules/random_key.py``).

    Raises:
        ValueError: an unknown ``assertions`` mode or ``random`` policy.
    """

    bake_shared: bool = True
    name: str = "main"
    assertions: str = "drop"
    random: str | None = None

    def __post_init__(self):
        if self.assertions not in ASSERTION_MODES:
            raise ValueError(f"assertions must be one of {ASSERTION_MODES}, got {self.assertions!r}")
        if self.random not in RANDOM_POLICIES:
            raise ValueError(f"random must be one of {RANDOM_POLICIES}, got {self.random!r}")


@dataclass
class LoweringRecord:
    """What one lowering collects as it goes, shared by the contexts of its
    nested bodies.

    Attributes:
        main_graph: the top-level graph (noise inputs can only go there).
        dropped: (op label, source line) of every assertion dropped so far.
        assertions: ``(IR bool scalar, rules/assertions.py AssertionOutput)``
            of every run-time assertion kept under ``assertions="raise"``, in
            lowering (topological) order; ``lower`` makes the values extra
            graph outputs after the PyTensor outputs.
        random_inputs: the ``RandomInput`` of every noise input made so far.
        random_count: random nodes made so far (each gets its own seed).
        rng_sources: inner generator variable of a control-flow body (a
            scan's generator non-sequence or state) -> the outer generator
            variable it stands for, so an ONNX draw in the body is seeded
            from the outer generator's state (``rules/random.py``).
        specified: ``(dim, size)`` for every constant size a ``SpecifyShape``
            requires of a symbolic dim (the value's dim before PyTensor's
            static dim is adopted), for the run-time input check
            (``compiler.core.validation.equal_dim_groups``).
    """

    main_graph: Graph | None = None
    dropped: list = field(default_factory=list)
    assertions: list = field(default_factory=list)
    random_inputs: list = field(default_factory=list)
    random_count: int = 0
    rng_sources: dict = field(default_factory=dict)
    specified: list = field(default_factory=list)


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
        prefix: the unique name prefix of the body this context builds
            (``compiler.lowering.bodies.Body``; "" for the top-level graph).
        bodies: how many bodies of each kind (``"scan"``, ``"if_then"``)
            this context has made, for their prefixes.
        record: the ``LoweringRecord`` (shared with nested bodies).
        noise_source: None in the top-level graph and in bodies that cannot
            take noise inputs; in a scan body, ``provide(known, create)``
            (``rules/scan.py``) returning the body value of one step's noise
            of dims ``known``, made by ``create(outer_ctx, dims)`` in the
            enclosing graph with a leading step axis (``random="inputs"``).
        assertion_sink: None but in a scan body under ``assertions=
            "raise"``: the list of ``(bool scalar, AssertionOutput)`` of the
            body's assertions, which the scan makes per-step outputs
            (``rules/assertions.keep_assertion``, ``rules/scan.py``).
        branch_only: under ``assertions="raise"``, the PyTensor Apply nodes
            of the graph this context lowers that its outputs need only
            through ``IfElse`` branches (``lower.branch_only``): PyTensor
            checks an assertion there only when its branch is taken.
        expansions: PyTensor variable -> (its source variable, k) for every
            ``DimShuffle`` output that only prepends ``k`` broadcastable axes
            (``DimShuffle{order=('x',)*k + (0, 1, ...)}``). Such a node is
            lowered only when something reads it through ``get``: an
            ``Elemwise`` reads its source through ``broadcast_args`` instead
            (NumPy broadcasting is right-aligned, so the leading 1s are
            implied), and then the node costs nothing.
    """

    def __init__(self, graph: Graph, options: LoweringOptions | None = None,
                 record: LoweringRecord | None = None):
        self.graph = graph
        self.values: dict[Any, Value] = {}
        self.source: str | None = None
        self.op_label: str | None = None
        self.memo: dict[tuple, Any] = {}
        self.options = options if options is not None else LoweringOptions()
        self.prefix = ""
        self.noise_source = None
        self.assertion_sink = None
        self.branch_only: frozenset = frozenset()
        self.bodies: dict[str, int] = {}
        self.record = record if record is not None else LoweringRecord(main_graph=graph)
        self.constants = None  # a const_eval.ConstantEvaluator for the top-level graph
        self._const_cache: dict[tuple, Value] = {}
        # (op, attributes, input types, constant inputs) -> (normalized attributes, output types)
        self._typed: dict[tuple, tuple[dict, list[TensorType]]] = {}
        # (op, attributes, input values) -> node, for nodes of constants only (hash-consing)
        self._interned: dict[tuple, Node] = {}
        self._interned_values: set[Value] = set()  # the outputs of those nodes
        self._recipes: dict[tuple, Recipe] = {}  # (key, argument signature) -> Recipe, see ``memoized``
        self._recording: list[Node] | None = None  # nodes built or reused while recording a recipe
        self.replayable = True  # False once the rule being recorded read an argument's value
        self._read_constants = False  # True once it folded one of its small constant arguments
        self._recorded_args: set[Value] = set()  # the arguments of the rule being recorded
        self._origins: tuple = (None, None, ())  # (op label, source, origins) last built
        self.expansions: dict[Any, tuple[Any, int]] = {}
        self._deferred: dict[Any, Callable[[], None]] = {}  # variable -> lowers its node (see ``defer``)
        # PyTensor variables whose declared static shape is not what their op's ``perform`` returns
        # (QR mode "raw" of a static non-square matrix): the rule's shape stands (``follow_perform``)
        self.perform_shaped: set = set()

    def follow_perform(self, variables) -> None:
        """Let the lowered values of the PyTensor ``variables`` keep the
        shapes the rule gives them (its op's ``perform``'s) where PyTensor
        declares other static shapes; lowering otherwise refuses such a
        disagreement (``lower._refine``)."""
        self.perform_shaped.update(variables)

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
        lower_now = self._deferred.pop(var, None)
        if lower_now is not None:
            lower_now()
            return self.values[var]
        data = getattr(var, "data", None)
        if data is None or not hasattr(var.type, "dtype"):
            raise Unsupported(f"input {var} has no IR value (type {var.type})")
        if scipy.sparse.issparse(data):
            data = _densified(data, var)
        v = self.const(np.asarray(data, dtype=var.type.dtype), name=var.name or "const")
        self.values[var] = v
        return v

    def defer(self, var, source, k: int, lower_now: Callable[[], None]) -> None:
        """Record that ``var`` is ``source`` with ``k`` leading broadcastable
        axes prepended, and that ``lower_now()`` lowers its node (putting
        ``var``'s value in ``values``) when ``get`` first asks for it."""
        self.expansions[var] = (source, k)
        self._deferred[var] = lower_now

    def broadcast_args(self, variables: Sequence, ndim: int) -> list[Value]:
        """The IR values of ``variables``, the inputs of a broadcasting
        elementwise node of rank ``ndim``, each read without the leading
        broadcastable axes a ``DimShuffle`` prepended (``expansions``) as
        long as one of them still has rank ``ndim`` (so the node's result
        keeps its rank); else their plain values (``get``)."""
        expansions = self.expansions
        if not expansions or not any(v in expansions for v in variables):
            return [self.get(v) for v in variables]
        sources = []
        for v in variables:
            while v in expansions:
                v = expansions[v][0]
            sources.append(self.get(v))
        if max(a.rank for a in sources) == ndim:
            return sources
        return [self.get(v) for v in variables]

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
        label, source = self.op_label, self.source
        cached = self._origins
        if cached[0] is label and cached[1] is source:
            return cached[2]  # the same op and line as the last node built: one tuple for all
        origins = (Origin(label, source),) if label or source else ()
        self._origins = (label, source, origins)
        return origins

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
        if arr.size <= SHARED_CONST_SIZE:
            key = (arr.dtype.str, arr.shape, arr.tobytes())
            hit = self._const_cache.get(key)
            if hit is not None:
                return hit
        v = self.graph.add_constant(arr, _sanitize(name) or "const")
        if key is not None:
            self._const_cache[key] = v
        return v

    def add(self, op: str, inputs: Sequence[Value], attrs: dict | None = None, name: str | None = None) -> Value:
        """Append a single-output node ``op(inputs){attrs}`` and return its
        output (an existing one for a node of constants only, see ``add_multi``).

        Raises:
            KeyError: unknown op. ``ir.OpError``: the op's type rule rejects
                the inputs or attributes.
        """
        outputs = self._build(op, inputs, attrs, (name,))
        if len(outputs) != 1:
            raise ValueError(f"{op} has {len(outputs)} outputs, not one")
        return outputs[0]

    def add_multi(self, op: str, inputs: Sequence[Value], attrs: dict | None = None) -> tuple[Value, ...]:
        """Append a node with several outputs and return them.

        A node whose inputs are all constants or outputs of such nodes (and
        whose op is not ``random``) is built once per op, attributes and
        input values (hash-consing): a second request returns the first
        node's outputs and adds the current origins to that node's (what
        ``cse`` would do later), so a constant-only subgraph lowered for
        many PyTensor nodes (the ``0`` of every ``maximum(x, 0)``, its
        unsqueeze and cast) exists once. Output types are inferred once per
        op, attributes and input types, and per constant input when the type
        rule read one (type rules are pure), then reused.

        Raises:
            KeyError: unknown op. ``ir.OpError``: the op's type rule rejects
                the inputs or attributes.
        """
        return self._build(op, inputs, attrs, None)

    def _build(self, op: str, inputs: Sequence[Value], attrs: dict | None,
               names: Sequence[str | None] | None) -> tuple[Value, ...]:
        inputs = tuple(inputs)
        attr_key = _attr_key(attrs)
        interned = self._interned_values
        intern_key = None
        if attr_key is not None and all(v.const is not None or v in interned for v in inputs):
            intern_key = (op, attr_key, inputs)
            node = self._interned.get(intern_key)
            if node is not None:
                origins = self.origins
                if origins and origins != node.origins:
                    node.origins = merge_origins(node.origins, origins)
                if self._recording is not None:
                    self._recording.append(node)
                return node.outputs
        typed = None
        if attr_key is not None:
            types = tuple(v.type for v in inputs)
            typed = self._typed.get((op, attr_key, types))  # a type rule that read no constant input
            if typed is None:
                const_key = (op, attr_key, types, tuple(v if v.const is not None else None for v in inputs))
                typed = self._typed.get(const_key)
            if typed is None:
                typed, read_consts = _infer(op, inputs, attrs)
                self._typed[const_key if read_consts else (op, attr_key, types)] = typed
        else:
            typed = _infer(op, inputs, attrs)[0]
        node = Node(op, inputs, typed[0], typed[1], names)
        node.origins = self.origins
        self.graph.append(node)
        if intern_key is not None and not get_op(op).has(RANDOM):
            self._interned[intern_key] = node
            interned.update(node.outputs)
        if self._recording is not None:
            self._recording.append(node)
        return node.outputs

    # -- recorded rules ------------------------------------------------------
    def memoized(self, key: tuple, args: Sequence[Value], build: Callable[[], list[Value]]) -> list[Value]:
        """``build()``, a rule's lowering of one node on the IR values
        ``args``, recorded the first time for ``key`` (hashable, naming the
        rule and the node's op and dtypes; the caller keeps its objects
        alive) and ``args``' signature, and replayed afterwards: the same IR
        nodes (op, attributes, output types, name hints) on the new ``args``,
        stamped with the current origins, without running the rule again.

        The signature of ``args`` is each one's type, whether it is a
        constant, and which arguments are the same value. A rule is replayed
        only when it is a function of that signature: its nodes read nothing
        but the arguments, each other's outputs, constants and interned
        values; none is ``random`` or holds nested graphs (those are built
        outside ``add``); and it read no argument's value (a rule calling
        ``reads_values``). A rule whose ``cast`` folded a small constant
        argument is replayed for that very constant only: its signature then
        holds the constant itself (``_pinned``; equal small constants are one
        value). Otherwise it runs every time. Nodes of constants only are
        rebuilt through ``add`` on replay, so they are shared as when the
        rule runs. Recordings
        nest: a rule may call ``memoized`` rules, and the outer recording
        sees their nodes.

        Raises:
            Whatever ``build`` raises (nothing is recorded then).
        """
        sig = (key, *self._signature(args))
        recipe = self._recipes.get(sig)
        if recipe is None:
            pinned = self._pinned(sig, args)
            recipe = self._recipes.get(pinned) if pinned is not None else None
        if recipe is not None:
            return self._replay(recipe, args)
        outer = self._recording, self.replayable, self._read_constants, self._recorded_args
        entries: list[Node] = []
        self._recording, self.replayable, self._read_constants, self._recorded_args = entries, True, False, set(args)
        try:
            results = build()
            ok, read_constants = self.replayable, self._read_constants
        finally:
            self._recording, self._recorded_args = outer[0], outer[3]
            self.replayable = outer[1] and self.replayable
            self._read_constants = outer[2] or self._read_constants
            if outer[0] is not None:
                outer[0].extend(entries)
        if ok:
            if read_constants:  # valid for these very constants only
                sig = self._pinned(sig, args)
            recipe = Recipe.of(entries, args, results, self._interned_values) if sig is not None else None
            if recipe is not None:
                self._recipes[sig] = recipe
        return results

    def reads_values(self) -> None:
        """Tell ``memoized`` that the rule being lowered reads the values of
        its arguments (a constant order), not only their types: it is then
        never replayed."""
        self.replayable = False

    def _signature(self, args: Sequence[Value]) -> list:
        first: dict[int, int] = {}
        return [(a.type, a.const is not None, first.setdefault(id(a), i)) for i, a in enumerate(args)]

    @staticmethod
    def _pinned(sig: tuple, args: Sequence[Value]) -> tuple | None:
        """``sig`` with each constant argument itself in place of its
        constness, for a rule that folded small constant arguments (``cast``):
        its recipe holds for those values only (equal small constants are
        one value, ``const``). None when some constant is not small."""
        if not any(a.const is not None for a in args):
            return None
        pinned = [sig[0]]
        for (t, _, alias), a in zip(sig[1:], args):
            if a.const is not None and a.const.size > SHARED_CONST_SIZE:
                return None
            pinned.append((t, a if a.const is not None else False, alias))
        return tuple(pinned)

    def _replay(self, recipe: "Recipe", args: Sequence[Value]) -> list[Value]:
        made: list[tuple[Value, ...]] = []
        origins = self.origins
        recording = self._recording
        graph = self.graph
        for op, attrs, refs, types, names, interned in recipe.steps:
            inputs = [_resolve(r, args, made) for r in refs]
            if interned:  # through ``add``: shared with equal nodes of constants, as when the rule runs
                made.append(self._build(op, inputs, attrs, names))
                continue
            node = Node(op, inputs, attrs, types, names)
            node.origins = origins
            graph.append(node)
            made.append(node.outputs)
            if recording is not None:
                recording.append(node)
        return [_resolve(r, args, made) for r in recipe.results]

    def cast(self, value: Value, dtype: DType) -> Value:
        """``value`` converted to ``dtype`` (no node when it already has it)."""
        if value.dtype == dtype:
            return value
        if value.const is not None and value.const.size <= SHARED_CONST_SIZE:
            if value in self._recorded_args:
                self._read_constants = True  # folded: the recipe holds for this argument's value only
            return self.const(value.const.astype(dtype.numpy))
        return self.add("cast", [value], {"to": dtype})

    def i64(self, values) -> Value:
        """An int64 constant (a shape, axes or index list)."""
        return self.const(np.asarray(values, dtype=np.int64))

    def scalar(self, value, dtype: DType) -> Value:
        """A 0-d constant of ``dtype``."""
        return self.const(np.asarray(value, dtype=dtype.numpy))


def _infer(op: str, inputs: Sequence[Value], attrs: dict | None) -> tuple[tuple[dict, list[TensorType]], bool]:
    """``((normalized attributes, output types), whether the type rule read
    its constant inputs)`` for a node ``op(inputs){attrs}`` without nested
    graphs. The rule gets its constant inputs through a sequence that
    notes any access; a rule that touches none gives the same types for
    every value of its constants (True when that cannot be told).

    Raises:
        KeyError: unknown op. ``ir.OpError``: the type rule rejects the node.
    """
    opdef = get_op(op)
    norm = opdef.normalize_attrs(attrs or {})
    types = [v.type for v in inputs]
    consts = [v.const for v in inputs]
    if not opdef.subgraph_roles:
        watched = WatchedSequence(consts)
        try:
            return (norm, opdef.infer_types(types, norm, watched)), watched.read
        except Exception:  # noqa: BLE001 - the plain call below raises what the rule raises
            pass
    return (norm, opdef.infer_types(types, norm, consts)), True


def _resolve(ref: tuple, args: Sequence[Value], made: list) -> Value:
    kind = ref[0]
    if kind == "arg":
        return args[ref[1]]
    if kind == "node":
        return made[ref[1]][ref[2]]
    return ref[1]


@dataclass(frozen=True)
class Recipe:
    """The IR a rule built for one node, as steps to rebuild it on other
    arguments (``LoweringContext.memoized``).

    Attributes:
        steps: per node, ``(op, attributes, input refs, output types, output
            names, interned)``; ``interned`` steps (nodes of constants
            only) are rebuilt through ``LoweringContext.add_multi``.
        results: a ref per result.

    A ref is ``("arg", i)`` (argument ``i``), ``("node", j, k)`` (output
    ``k`` of step ``j``) or ``("value", v)`` (a constant or interned value
    that no argument computes).
    """

    steps: tuple
    results: tuple

    @staticmethod
    def of(nodes: Sequence[Node], args: Sequence[Value], results: Sequence[Value],
           interned: set) -> "Recipe | None":
        """The recipe of ``nodes`` (built or reused, in order) computing
        ``results`` from ``args``, or None when one reads a value that is
        none of those, is ``random`` or holds nested graphs."""
        where: dict[Value, tuple] = {}
        for i, a in enumerate(args):
            where.setdefault(a, ("arg", i))

        def ref(v: Value) -> tuple | None:
            r = where.get(v)
            if r is None and (v.const is not None and v.producer is None or v in interned):
                r = ("value", v)
            return r

        steps = []
        for j, node in enumerate(nodes):
            if node.subgraphs or get_op(node.op).has(RANDOM):
                return None
            refs = tuple(ref(v) for v in node.inputs)
            if None in refs:
                return None
            steps.append((node.op, node.attrs, refs, tuple(v.type for v in node.outputs),
                          tuple(v.name for v in node.outputs), bool(node.outputs) and node.outputs[0] in interned))
            for k, v in enumerate(node.outputs):
                where.setdefault(v, ("node", j, k))
        refs = tuple(ref(v) for v in results)
        if None in refs:
            return None
        return Recipe(tuple(steps), refs)


def _attr_key(attrs: dict | None) -> tuple | None:
    """A hashable form of node attributes that equals another only for equal
    attributes of equal types (floats by their text, so ``-0.0`` and ``0.0``
    differ, lists as tuples), or None when a value is unhashable."""
    if not attrs:
        return ()
    key = tuple((k, _freeze(v)) for k, v in attrs.items())
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _freeze(v):
    t = type(v)
    if t is list or t is tuple:
        return t, tuple(_freeze(x) for x in v)
    if isinstance(v, (float, np.floating)):
        return t, repr(v)
    return t, v


def ir_dtype(var) -> DType:
    """The IR dtype of a PyTensor variable (tensor or scalar type).

    Raises:
        Unsupported: complex, string and other dtypes with no IR equivalent.
    """
    name = getattr(var.type, "dtype", None)
    found = _IR_DTYPES.get(name) if type(name) is str else None
    if found is not None:
        return found
    try:
        found = DType.from_numpy(var.type.dtype)
    except (TypeError, AttributeError):
        raise Unsupported(unsupported_dtype_reason(getattr(var.type, "dtype", var.type))) from None
    _IR_DTYPES[name] = found
    return found


_IR_DTYPES: dict[str, DType] = {}  # PyTensor dtype name -> IR dtype, filled on first use


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
    ``symbolic`` (or stay unknown).

    Raises:
        Unsupported: a negative static dim (PyTensor types some outputs of
            impossible sizes so, e.g. ``LUFactorTridiagonal``'s ``du2`` of
            length n - 2 at n = 1).
    """
    shape = static_shape(var)
    if any(d is not None and d < 0 for d in shape):
        raise Unsupported(f"PyTensor types {var} with a negative static dim ({var.type})")
    names = list(symbolic) if symbolic is not None else [None] * len(shape)
    return TensorType(ir_dtype(var), tuple(d if d is not None else n for d, n in zip(shape, names)))


def _sanitize(name: str | None) -> str | None:
    if not name:
        return None
    if _PLAIN_NAME.fullmatch(name):  # ASCII letters, digits, "_" and ".": kept as they are
        return name
    out = "".join(c if c.isalnum() or c in "_." else "_" for c in name)
    return out if not out[0].isdigit() else "_" + out


_PLAIN_NAME = re.compile(r"[A-Za-z_.][A-Za-z0-9_.]*")
sanitize_name = _sanitize


# the largest sparse constant densified (elements): 2**24 float64 values are 128 MiB
MAX_DENSE_ELEMENTS = 2 ** 24


def _densified(data, var) -> np.ndarray:
    """A SciPy sparse constant as a dense array (``rules/sparse.py``).

    Raises:
        Unsupported: more than ``MAX_DENSE_ELEMENTS`` elements.
    """
    size = int(np.prod(data.shape, dtype=np.int64))
    if size > MAX_DENSE_ELEMENTS:
        raise Unsupported(f"sparse constant {var.name or ''} of shape {data.shape} ({data.nnz} stored values): "
                          f"it would be densified to {size} elements, over the {MAX_DENSE_ELEMENTS} limit "
                          "(ONNX has no sparse tensors onnxruntime computes with)")
    return data.toarray()
