"""``CompileOptions``: every option of one compilation, as one frozen value.

``compile_to_onnx(graph, passes, *, outputs=None, options=None, **kwargs)``
builds one (its keyword arguments are the fields; ``options=`` plus keywords
replaces those fields of the given object) and hands it whole to the driver.
The object is validated once, when it is constructed; the options of the
stages are derived from it here and nowhere else: ``lowering``
(``compiler.lowering.context.LoweringOptions``), ``emit``
(``backends.onnx.EmitOptions``) and ``configure_passes``, which fills the
fields a pass declares and the caller left unset (``PASS_FIELDS``: a pass
with a field ``numerics: str | None = None`` gets the compilation's mode).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import numpy as np
import onnx

from backends.onnx import PROTOBUF_LIMIT, EmitOptions
from backends.onnx.emitter import MIN_OPSET
from backends.onnx.provenance import PROVENANCE_MODES
from compiler.lowering.context import ASSERTION_MODES, RANDOM_POLICIES, LoweringOptions
from ir.numerics import NUMERICS
from passes import Pass

DIM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a symbolic dim name (ONNX dim_param)
PASS_FIELDS = ("numerics",)  # the options a pass may declare as a field (left None: filled from here)


@functools.lru_cache(maxsize=1)
def max_opset() -> int:
    """The highest default-domain opset both onnx and onnxruntime accept
    (onnxruntime is asked with an empty model per candidate, newest first)."""
    import onnxruntime as ort

    for opset in range(onnx.defs.onnx_opset_version(), MIN_OPSET - 1, -1):
        x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
        y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])
        graph = onnx.helper.make_graph([onnx.helper.make_node("Identity", ["x"], ["y"])], "probe", [x], [y])
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                       ir_version=10)
        try:
            ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        except Exception:
            continue
        return opset
    return MIN_OPSET


@dataclass(frozen=True)
class CompileOptions:
    """The options of one ``compile_to_onnx`` call (all keyword arguments but
    ``outputs``), validated when constructed.

    What the model computes:
        numerics: ``"fast"`` (default): the fastest form within the numerics
            contract (docs/numerics.md: exact dtypes, integer
            results, rounding, comparisons, NaN/inf positions and shapes;
            float values within a bound per op family; the sign of a zero
            may differ). ``"strict"``: the bit-exact forms wherever the
            emitter has them (NumPy's sign of zero included), and the passes
            that choose a form (``PASS_FIELDS``) rewrite only where the
            result stays the matched graph's bit for bit (``ir.numerics``).
        bake_shared: shared variables become initializers holding their
            current value (True, default) or stay graph inputs (False).
        assertions: what ``CheckAndRaise``/``Assert`` nodes become (ONNX
            cannot raise): ``"drop"`` (default: the guarded value; one
            ``DroppedAssertionWarning`` lists them with their source lines),
            ``"nan"`` (the guarded value is NaN where a condition fails) or
            ``"raise"`` (each run-time assertion becomes an extra bool
            output, ``CompiledModel.assertions``, and ``run`` and the
            PyTensor mode, whose default it is, raise PyTensor's exception
            when one is False; unsupported for what only an ``IfElse``
            branch computes).
            PyMC's ``CheckParameterValue`` is always ``where(cond, x, -inf)``.
        random: what random variables become
            (``compiler/lowering/rules/random.py``): None (default:
            unsupported), ``"inputs"`` (each draw is an exact transform of
            standard noise that is a new model input, after the others;
            described by ``CompiledModel.random_inputs``), ``"onnx"`` (the
            noise comes from ONNX ``RandomUniformLike``/``RandomNormalLike``
            nodes seeded from the PyTensor generator's state: new draws at
            every run) or ``"key"`` (each generator is a ``uint64[2]`` key
            input, ``compiler.random_key``; the noise is SplitMix64 of the
            key's counter and the next generator the advanced key, which can
            be an output: ``rules/random_key.py``). Under ``"inputs"`` and
            ``"onnx"`` generator updates are dropped.

    Shapes:
        vectorize: input name (or PyTensor variable) -> a batch dim name
            (``{"theta": "points"}``): each such input gains a leading dim
            of that name and the whole graph is vectorized over it by
            PyTensor's ``vectorize_graph`` (``compiler.lowering.vectorize``),
            so output ``[b]`` is the single-point output at point ``b``
            (outputs that depend on no batched input keep their shape).
            ``input_shapes`` and ``example_inputs`` of a batched input
            describe its batched shape. Stored read-only (None: empty).
        input_shapes: input name (or PyTensor variable) -> one entry per
            axis: an int pins the dim, a str names it (``("batch", 1, 28,
            28)``), None keeps it (unknown dims are named
            ``<input>_dim<axis>``). Stored read-only (None: empty).
        example_inputs: one array (or anything ``np.shape`` reads) per ONNX
            input: the model is specialized to their shapes (every dim
            static, shape arithmetic folded by the passes), except dims
            ``input_shapes`` names. Only the shapes are kept (a tuple of
            int tuples). Default: None.
        check_dynamic: after emitting, run the model in onnxruntime at two
            sizes of every symbolic input dim and compare with PyTensor
            (``compiler.core.shapes.check_dynamic``; outputs that depend on
            a random draw in dtype and shape only).

    The ONNX model:
        opset: the ONNX default-domain opset to emit, an int in
            ``[18, max_opset()]`` (default 18).
        name: the ONNX graph name, a non-empty str (default ``"main"``).
        value_info: declare the type of every intermediate value and
            initializer in the model (default False).
        emit_options: emitter choices by name (``float64_conv``: ``"exact"``,
            ``"float32"``, ``"native"``; ``silu``: ``"auto"``,
            ``"function"``, ``"primitive"``; ``gelu``: ``"function"``,
            ``"primitive"``; ``max_pool_nan``: ``"native"``,
            ``"propagate"``; see ``backends.onnx.EmitOptions``). Stored
            read-only (None: empty). ``numerics`` is its own option, not
            one of these.
        external_data_threshold: initializer bytes past which the model's
            weights live in an external data file (``save``, ``session``);
            a non-negative int, protobuf's 2 GB limit by default.
        provenance: how each node's provenance (``metadata_props`` and
            ``doc_string``: PyTensor op and user source line) names source
            files: ``"relative"`` (default: relative to ``provenance_root``;
            a file outside it relative to its ``sys.path`` entry, else its
            base name; so the same model built in two checkouts is
            byte-identical and a shipped file holds no home directory),
            ``"absolute"`` (as PyTensor recorded them) or ``"none"`` (no
            provenance). ``backends.onnx.provenance.SourcePaths``.
        provenance_root: the directory ``"relative"`` paths start from (str
            or path; None, default: the current directory).

    Debugging (each costs only when asked):
        verify_each_pass: run the full IR verifier (type rules included)
            after lowering and after each pass, so the first pass that breaks
            the IR is named. Off (default), one structural check
            (``verify(..., check_types=False)``) runs after the last pass.
        keep_ir: keep the IR text after every stage in
            ``CompiledModel.history[i].ir_text`` (else those are None).
        dump_ir: a directory (str or path) that receives ``00-lowered.ir``
            and ``NN-<pass>.ir`` after each pass, and ``index.html``, the
            pass explorer (``compiler.core.explorer_page``); None (default):
            none.
        full_weights: print constants of more than 16 elements in full
            (base64, parseable) in ``history`` texts and ``dump_ir`` files,
            instead of a ``<shape dtype sha256:prefix>`` digest.
        check_passes: evaluate the IR with the interpreter on this many
            random input sets (a non-negative int; 0, default: never) before
            and after each pass; the first pass that changes a result raises
            ``PassCheckError`` after writing a reproducer
            (``compiler.core.pass_check``).
        reproducer_dir: where ``check_passes`` writes its reproducer
            (default None: a new temporary directory).
        opt_bisect_limit: stop rewriting after this many rewrites (a
            non-negative int: one pattern-rule application, or one changing
            run of a pass that does not use the pattern engine;
            ``passes.rewrite_log``), to bisect a miscompile. None (default):
            no limit.

    ``repr`` shows the fields that differ from their defaults
    (``CompileOptions(numerics='strict', opset=19)``); ``dataclasses.replace``
    makes a changed copy, validated again.

    Raises:
        TypeError: a field of the wrong type (naming it and what it takes):
            ``opset`` not an int, ``name`` not a non-empty str, a flag that
            is not True or False, ``emit_options``/``input_shapes`` not a
            mapping, a count or limit that is not an int, a directory that
            is not a str or path.
        ValueError: a value outside its accepted set (naming it and the
            accepted values): ``numerics``, ``assertions``, ``random``,
            ``provenance``, an
            ``opset`` outside ``[18, max_opset()]``, an unknown
            ``emit_options`` key or value (or ``numerics`` among them), a
            negative count, a ``vectorize`` dim name that is no identifier.
    """

    numerics: str = "fast"
    bake_shared: bool = True
    assertions: str = "drop"
    random: str | None = None
    vectorize: Mapping | None = None
    input_shapes: Mapping | None = None
    example_inputs: tuple | None = None
    check_dynamic: bool = False
    opset: int = 18
    name: str = "main"
    value_info: bool = False
    emit_options: Mapping[str, str] | None = None
    external_data_threshold: int = PROTOBUF_LIMIT
    provenance: str = "relative"
    provenance_root: str | os.PathLike | None = None
    verify_each_pass: bool = False
    keep_ir: bool = False
    dump_ir: str | os.PathLike | None = None
    full_weights: bool = False
    check_passes: int = 0
    reproducer_dir: str | os.PathLike | None = None
    opt_bisect_limit: int | None = None
    # derived once, here: the stages' own options
    lowering: LoweringOptions = field(init=False, repr=False, compare=False)
    emit: EmitOptions = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        _choice("numerics", self.numerics, NUMERICS)
        _choice("assertions", self.assertions, ASSERTION_MODES)
        _choice("random", self.random, RANDOM_POLICIES)
        _choice("provenance", self.provenance, PROVENANCE_MODES)
        for flag in ("bake_shared", "check_dynamic", "value_info", "verify_each_pass", "keep_ir", "full_weights"):
            if not isinstance(getattr(self, flag), (bool, np.bool_)):
                raise TypeError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
        if not _is_int(self.opset):
            raise TypeError(f"opset must be an int, got {type(self.opset).__name__} {self.opset!r}")
        top = max_opset()
        if not MIN_OPSET <= self.opset <= top:
            raise ValueError(f"opset={self.opset} is not supported: accepted opsets are {MIN_OPSET}..{top} "
                             "(the rules need opset 18; onnx and onnxruntime know no later one)")
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty str, got {self.name!r}")
        for count in ("check_passes", "external_data_threshold", "opt_bisect_limit"):
            value = getattr(self, count)
            if value is None and count == "opt_bisect_limit":
                continue
            if not _is_int(value):
                raise TypeError(f"{count} must be an int, got {type(value).__name__} {value!r}")
            if value < 0:
                raise ValueError(f"{count}={value} must not be negative")
        for path in ("dump_ir", "reproducer_dir", "provenance_root"):
            value = getattr(self, path)
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise TypeError(f"{path} must be a directory (str or path) or None, got {value!r}")
        emit_options = self._mapping("emit_options")
        for key, value in emit_options.items():
            if key == "numerics":
                raise ValueError("pass numerics to compile_to_onnx, not in emit_options")
            if key not in EmitOptions.CHOICES:
                raise ValueError(f"emit_options has an unknown key {key!r}; accepted keys: "
                                 f"{', '.join(sorted(k for k in EmitOptions.CHOICES if k != 'numerics'))}")
            if value not in EmitOptions.CHOICES[key]:
                raise ValueError(f"emit_options[{key!r}] = {value!r}: accepted values are "
                                 f"{', '.join(map(repr, EmitOptions.CHOICES[key]))}")
        for key, dim in self._mapping("vectorize").items():
            if not isinstance(dim, str):
                raise TypeError(f"vectorize[{key!r}] must be a batch dim name (a str), got {dim!r}")
            if not DIM_NAME.fullmatch(dim):
                raise ValueError(f"vectorize[{key!r}] = {dim!r} is not a dim name ({DIM_NAME.pattern})")
        shapes = self._mapping("input_shapes")
        for key, dims in shapes.items():
            if isinstance(dims, (str, bytes)) or not isinstance(dims, Sequence):
                raise TypeError(f"input_shapes[{key!r}] must be a sequence of dims (int, str or None), "
                                f"got {dims!r}")
        object.__setattr__(self, "input_shapes", MappingProxyType({k: tuple(d) for k, d in shapes.items()}))
        if self.example_inputs is not None:
            if isinstance(self.example_inputs, (str, bytes)) or not isinstance(self.example_inputs, Sequence):
                raise TypeError(f"example_inputs must be a sequence of arrays (one per input), "
                                f"got {type(self.example_inputs).__name__}")
            object.__setattr__(self, "example_inputs",
                               tuple(tuple(int(n) for n in np.shape(a)) for a in self.example_inputs))
        # the stages' options, derived here once (their constructors accept what was checked above)
        object.__setattr__(self, "lowering", LoweringOptions(bake_shared=bool(self.bake_shared), name=self.name,
                                                             assertions=self.assertions, random=self.random))
        object.__setattr__(self, "emit", EmitOptions(opset=int(self.opset), value_info=bool(self.value_info),
                                                     numerics=self.numerics, provenance=self.provenance,
                                                     provenance_root=(None if self.provenance_root is None
                                                                      else os.fspath(self.provenance_root)),
                                                     **emit_options))

    def _mapping(self, name: str) -> Mapping:
        """Field ``name`` as a read-only copy (None: empty); TypeError unless a mapping."""
        value = getattr(self, name)
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise TypeError(f"{name} must be a dict, got {type(value).__name__}")
        frozen = MappingProxyType(dict(value))
        object.__setattr__(self, name, frozen)
        return frozen

    def __hash__(self) -> int:
        return hash(tuple(frozenset(v.items()) if isinstance(v, Mapping) else v for v in self._values()))

    def _values(self) -> list:
        return [getattr(self, f.name) for f in dataclasses.fields(self) if f.init]

    def __repr__(self) -> str:
        changed = []
        for f in dataclasses.fields(self):
            if not f.init:
                continue
            value = getattr(self, f.name)
            default = f.default
            if isinstance(value, Mapping):
                if value:
                    changed.append(f"{f.name}={dict(value)!r}")
            elif value is not default and value != default:
                changed.append(f"{f.name}={value!r}")
        return f"CompileOptions({', '.join(changed)})"

    __str__ = __repr__

    @classmethod
    def of(cls, options: CompileOptions | None = None, **kwargs: Any) -> CompileOptions:
        """``options`` (default: all defaults) with the fields in ``kwargs``
        replaced: how ``compile_to_onnx`` and the PyTensor mode build theirs.

        Raises:
            TypeError: ``options`` is not a ``CompileOptions``, or a keyword
                names no option (the options are listed); the field checks.
            ValueError: the field checks.
        """
        if options is not None and not isinstance(options, CompileOptions):
            raise TypeError(f"options must be a CompileOptions, got {type(options).__name__}")
        unknown = sorted(set(kwargs) - set(OPTION_NAMES))
        if unknown:
            raise TypeError(f"unknown option(s) {', '.join(unknown)}; the options are {', '.join(OPTION_NAMES)}")
        if options is None:
            return cls(**kwargs)
        return dataclasses.replace(options, **kwargs) if kwargs else options

    def configure_passes(self, passes: Sequence[Pass]) -> list[Pass]:
        """``passes`` with every field of ``PASS_FIELDS`` that a pass declares
        and holds None set to this compilation's value (``dataclasses.replace``:
        a new pass object; a value the caller chose is kept)."""
        configured = []
        for p in passes:
            declared = {f.name for f in dataclasses.fields(p)} if dataclasses.is_dataclass(p) else set()
            unset = {name: getattr(self, name) for name in PASS_FIELDS
                     if name in declared and getattr(p, name) is None}
            configured.append(dataclasses.replace(p, **unset) if unset else p)
        return configured


OPTION_NAMES = tuple(f.name for f in dataclasses.fields(CompileOptions) if f.init)


def _choice(name: str, value, allowed: tuple) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
