"""``compile_to_onnx``: lower a PyTensor graph to IR, run passes, emit ONNX.

The driver owns the one hook that runs between passes: it records each
stage's name, whether it changed the IR, its time and node count, and, only
when asked, verifies the IR in full (``verify_each_pass=True``), prints it
(``keep_ir=True``) and writes ``dump_ir`` files. By default a compilation pays
for none of that: one cheap structural check runs after the last pass. Passes
do none of this themselves.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx
import onnx_ir as oir

from backends.onnx import build_model, initializer_bytes, make_session, save_ir_model
from compiler.core import deploy, shapes
from compiler.core.options import CompileOptions
from compiler.lowering import graph_spec, lower
from compiler.lowering.rules.assertions import raise_failed
from compiler.lowering.rules.random_key import random_key
from compiler.lowering.vectorize import vectorize_spec
from compiler.core.pass_check import PassChecker
from compiler.core.advisor import advise, warn_slow_forms
from compiler.core.explorer import StageRecorder
from compiler.core.explorer_page import write_explorer
from compiler.core.report import format_report
from compiler.core.validation import (check_pass_list, check_run_inputs, declared_inputs, equal_dim_groups,
                                      run_signature)
from ir import Graph
from ir.printer import print_graph
from ir.verifier import verify
from passes import DEFAULT_PIPELINE, Pass, PassRecord, resolve_passes, run_pipeline
from passes.rewrite_log import RewriteLog, observing


@dataclass
class CompiledModel:
    """The result of ``compile_to_onnx``.

    Attributes:
        onnx_model: the emitted model in onnx_ir form (its initializers wrap
            the IR constants' arrays; no copy of the weights).
        ir: the final IR graph (after all passes).
        history: one ``PassRecord`` per stage: ``lowered`` first, then each
            pass (name, changed, seconds, node count; IR text with
            ``keep_ir=True``).
        input_names: ONNX graph input names, in order (fgraph input order,
            baked shared variables excluded).
        output_names: ONNX graph output names, in fgraph output order (the
            assertion outputs excluded).
        compile_seconds: wall time of the whole compilation.
        input_variables: the PyTensor variable behind each ONNX input.
        rewrites: the ``RewriteLog`` of the pipeline (rules fired and
            declined, the opt-bisect count).
        timings: wall seconds of the compilation's parts: ``lowering``,
            ``passes`` (their sum), ``hooks`` (verification, printing and
            dumps between and after the passes), ``emission`` (building the
            onnx_ir model) and ``serialization`` (to the ``ModelProto``).
        equal_dims: groups of ``(input name, axis)`` PyTensor requires equal
            (``compiler.core.validation.equal_dim_groups``), checked by ``run``.
        random_inputs: under ``random="inputs"``, one
            ``compiler.lowering.rules.random.RandomInput`` per noise input
            (name, distribution, ``"normal"``/``"uniform"`` noise, dtype,
            shape, source line), in input order after ``input_variables``.
            Under ``random="key"`` there are none: each random generator is
            an input (and, where the graph returns it, an output) of type
            ``uint64[2]``, its key (``compiler.random_key``).
        assertions: under ``assertions="raise"``, one
            ``compiler.lowering.rules.assertions.AssertionOutput`` per
            run-time assertion (ONNX output name, exception class, message,
            source line), in topological order: bool scalar outputs of the
            model after ``output_names``, True when the assertion holds.
            ``run`` strips them and raises the first failing one's error.
        options: the ``CompileOptions`` of the compilation.
        advice: the slow forms the model holds, each with the user's source
            line and what to change (``compiler.core.advisor``; empty when
            none), listed by ``report()``.
    """

    onnx_model: Any
    ir: Graph
    history: list[PassRecord]
    input_names: list[str]
    output_names: list[str]
    compile_seconds: float
    input_variables: list = field(default_factory=list, repr=False)
    rewrites: RewriteLog = field(default_factory=RewriteLog, repr=False)
    timings: dict[str, float] = field(default_factory=dict)
    equal_dims: list = field(default_factory=list)
    random_inputs: list = field(default_factory=list)
    assertions: list = field(default_factory=list)
    options: CompileOptions = field(default_factory=CompileOptions)
    advice: list = field(default_factory=list)
    _model: Any = field(default=None, repr=False)
    _session: Any = field(default=None, repr=False)
    _tmpdir: Any = field(default=None, repr=False)
    _accepted: tuple | None = field(default=None, repr=False)  # run_signature of the last checked inputs

    @property
    def model(self) -> onnx.ModelProto:
        """The ONNX ``ModelProto`` (opset 18 by default, IR version 10),
        serialized on first use and cached. It holds a copy of the weights:
        a model past 2 GB exists in memory but cannot be serialized as one
        protobuf; ``save`` and ``session`` do not need it."""
        if self._model is None:
            start = time.perf_counter()
            with _gc_paused():  # onnx_ir creates a few tracked objects per value (their metadata stores)
                self._model = oir.serde.serialize_model(self.onnx_model)
            self.timings["serialization"] = time.perf_counter() - start
        return self._model

    @property
    def external_data_threshold(self) -> int:
        """Initializer bytes past which ``save`` and ``session`` keep the
        weights in an external data file (``options.external_data_threshold``:
        protobuf's 2 GB limit by default)."""
        return self.options.external_data_threshold

    @property
    def uses_external_data(self) -> bool:
        """Whether the weights exceed ``external_data_threshold`` (then
        ``save`` writes ``<file>.data`` beside the model)."""
        return initializer_bytes(self.onnx_model) > self.external_data_threshold

    def save(self, path: str | os.PathLike) -> None:
        """Write the model to ``path``; when ``uses_external_data``, every
        initializer of at least 1 KiB goes to ``<file name>.data`` beside it
        (streamed from the arrays, no protobuf copy)."""
        save_ir_model(self.onnx_model, path, external_data_threshold=self.external_data_threshold)

    @property
    def session(self):
        """A cached ``onnxruntime.InferenceSession`` on the CPU. A model with
        external data is saved to a temporary directory (removed with this
        object) and loaded from there."""
        if self._session is None:
            if self.uses_external_data:
                self._tmpdir = tempfile.TemporaryDirectory(prefix="pytensor-onnx-")
                path = Path(self._tmpdir.name) / "model.onnx"
                self.save(path)
                self._session = make_session(path)
            else:
                self._session = make_session(self.model)
        return self._session

    def run(self, *arrays, **named) -> list[np.ndarray]:
        """Run the model in onnxruntime.

        Args:
            arrays: arrays for the first ONNX inputs, positional in
                ``input_names`` order (converted with ``np.asarray``).
            named: arrays for the other inputs by ONNX input name
                (``m.run(x=...)``, as ``InferenceSession.run`` takes them).
                All inputs are checked by
                ``compiler.core.validation.check_run_inputs`` (exact dtype, rank,
                static dims, symbolic dims shared between inputs and the dims
                PyTensor requires equal) before onnxruntime sees them. The
                checks read only each array's type, dtype and shape, so a
                call whose NumPy arrays have the dtypes and shapes of the
                last accepted call skips them (``run_signature``), and the
                feed goes to onnxruntime's C++ session directly (its Python
                ``InferenceSession.run`` re-validates the feed names and
                ownership, ~2-5 µs a call): a sampler's calls cost no more
                than ``InferenceSession.run``'s. Under ``random="key"`` a
                generator's input takes its ``uint64[2]`` key or a
                ``numpy.random.Generator`` to draw a fresh key from.

        Returns:
            A list of NumPy arrays, in fgraph output order (the assertion
            outputs of ``assertions="raise"`` are not returned).

        Raises:
            TypeError: too many positional inputs, an unknown name, an input
                given twice, missing inputs (all named in the message), or a
                wrong dtype.
            ValueError: a wrong rank or dim, naming the input and the axis.
            Under ``assertions="raise"``, the first failing assertion's
                ``exc_type(message)`` (``assertions``; ``AssertionError``
                for ``Assert``), as PyTensor raises it.
        """
        if named or len(arrays) != len(self.input_names):
            arrays = self._positional(arrays, named)
        signature = run_signature(arrays)
        if signature is not None and signature == self._accepted:
            feed = dict(zip(self.input_names, arrays))  # the checks passed on these dtypes and shapes already
        else:
            feed = self.check_inputs(arrays)
            self._accepted = signature
        session = self._session or self.session
        engine = getattr(session, "_sess", None)
        fetch = self.fetched_names
        if engine is not None:  # onnxruntime's C++ session, skipping InferenceSession.run's re-checks of a checked feed
            results = engine.run(fetch, feed, None)
        else:
            results = session.run(fetch, feed)
        return self.checked(results)

    @functools.cached_property
    def fetched_names(self) -> list[str]:
        """The ONNX outputs ``run`` fetches: ``output_names``, then the
        assertion outputs (``assertions``)."""
        return list(self.output_names) + [a.name for a in self.assertions]

    def checked(self, results: list) -> list:
        """``results`` (the arrays of ``fetched_names``) without the
        assertion outputs.

        Raises:
            the first failing assertion's ``exc_type(message)``
            (``compiler.lowering.rules.assertions.raise_failed``).
        """
        if not self.assertions:
            return results
        n = len(self.output_names)
        raise_failed(self.assertions, results[n:])
        return results[:n]

    def _positional(self, arrays: tuple, named: dict) -> list:
        """``arrays`` and ``named`` as one array per input, in order (the
        ``TypeError``s of ``run``)."""
        if len(arrays) > len(self.input_names):
            raise TypeError(f"model takes {len(self.input_names)} inputs ({', '.join(self.input_names)}), "
                            f"got {len(arrays)} positional")
        given = dict(zip(self.input_names, arrays))
        unknown = [k for k in named if k not in self.input_names]
        if unknown:
            raise TypeError(f"unknown model input(s) {', '.join(unknown)}; inputs are {', '.join(self.input_names)}")
        twice = [k for k in named if k in given]
        if twice:
            raise TypeError(f"input(s) {', '.join(twice)} given both by position and by name")
        given.update(named)
        missing = [k for k in self.input_names if k not in given]
        if missing:
            raise TypeError(f"missing model input(s) {', '.join(missing)}")
        return [given[k] for k in self.input_names]

    @functools.cached_property
    def declared_inputs(self) -> tuple:
        """``(name, NumPy dtype, dims)`` of each ONNX input, read once from
        ``onnx_model`` (``compiler.core.validation.declared_inputs``)."""
        return declared_inputs(self.onnx_model)

    def check_inputs(self, arrays) -> dict:
        """The onnxruntime feed for ``arrays`` (one per ONNX input, in order)
        after ``compiler.core.validation.check_run_inputs`` (see ``run``). A
        ``numpy.random.Generator`` given for a generator's key (``random=
        "key"``) becomes a fresh key drawn from it (``random_key``; the
        generator advances)."""
        arrays = [random_key(a) if isinstance(a, np.random.Generator) else a for a in arrays]
        return check_run_inputs(self.onnx_model, arrays, self.equal_dims, self.declared_inputs)

    def report(self) -> str:
        """A text report of the compilation: the ONNX op histogram (nested
        bodies included), each pass's time and whether it changed the IR,
        how often each pattern rule fired, which rules matched but
        declined, with their reasons, and the performance advisor: each slow
        form with its source line and fix, or "(none)"
        (``compiler.core.report``, ``compiler.core.advisor``)."""
        return format_report(self)

    __call__ = run

    # -- smaller models to ship (compiler.core.deploy) --------------------------
    def to_float16(self, inputs, *, op_block_list: Sequence[str] = (),
                   slim: bool = True) -> tuple[CompiledModel, deploy.AccuracyReport]:
        """This model with float16 weights and arithmetic, float32 inputs and
        outputs (``compiler.core.deploy.to_float16``: onnxconverter-common's
        converter; ``deploy.FLOAT32_OPS``, model-local functions and
        ``op_block_list`` stay float32).

        Args:
            inputs: what to measure the accuracy on: arrays (one per input), a
                dict of arrays, or an iterable of such dicts
                (``deploy.input_feeds``).
            slim: drop what running the model does not read (per-node
                source lines, value_info, zero zero-points: ``deploy.slim``).

        Returns:
            ``(model, report)``: a new ``CompiledModel`` whose ``onnx_model``,
            ``model``, ``session`` and ``run`` are the converted model's
            (``ir``, ``history`` and ``report()`` still describe the
            compilation), and its ``deploy.AccuracyReport`` against this one.

        Raises:
            ValueError: no inputs to measure on, or inputs that do not name
                the model's.
        """
        return self._deployed("float16", inputs, None, slim, op_block_list=op_block_list)

    def quantize_dynamic(self, inputs, *, per_channel: bool = False, op_types: Sequence[str] | None = None,
                         reduce_range: bool = True, slim: bool = True) -> tuple[CompiledModel, deploy.AccuracyReport]:
        """This model with int8 weights, activations quantized at run time
        (``onnxruntime.quantization.quantize_dynamic``; ``per_channel``
        scales, ``op_types`` to quantize, None: all it can; 7-bit weights
        unless ``reduce_range=False``, see ``deploy.quantize_int8``). ``inputs``,
        ``slim``, the result and the errors are ``to_float16``'s."""
        return self._deployed("int8-dynamic", inputs, None, slim, per_channel=per_channel,
                              op_types=op_types, reduce_range=reduce_range)

    def quantize_static(self, calibration, inputs=None, *, per_channel: bool = True,
                        op_types: Sequence[str] | None = None, reduce_range: bool = True,
                        slim: bool = True) -> tuple[CompiledModel, deploy.AccuracyReport]:
        """This model quantized to int8 in the QDQ format: int8 weights (one
        scale per output channel unless ``per_channel=False``; 7 bits used
        unless ``reduce_range=False``), uint8
        activations whose ranges come from running ``calibration``
        (``onnxruntime.quantization.quantize_static``, MinMax).

        Args:
            calibration: representative inputs, in any form ``inputs`` takes
                (``deploy.input_feeds``): arrays, a dict, or an iterable of
                input dicts (e.g. minibatches).
            inputs: what to measure the accuracy on (None: ``calibration``).
            op_types: the op types to quantize (None: all onnxruntime can).
            reduce_range: 7-bit weights (the default: onnxruntime's kernels
                saturate with 8-bit ones on x86 CPUs without VNNI;
                ``deploy.quantize_int8``); False for VNNI and ARM targets.
            slim: as ``to_float16``.

        Returns and Raises: as ``to_float16``.
        """
        return self._deployed("int8-static", inputs, calibration, slim, per_channel=per_channel,
                              op_types=op_types, reduce_range=reduce_range)

    def save_ort(self, path: str | os.PathLike) -> Path:
        """Write this model in onnxruntime's ``.ort`` format (mobile and
        minimal builds; ``compiler.core.deploy.save_ort``) and return the path."""
        return deploy.save_ort(self.model, path)

    def _deployed(self, conversion: str, inputs, calibration, slim: bool, **options):
        calibration = None if calibration is None else deploy.input_feeds(calibration, self.input_names)
        if inputs is None:
            inputs = calibration
        feeds = deploy.input_feeds(inputs, self.input_names)
        proto = deploy.convert(self.model, conversion, calibration, slimmed=slim, **options)
        report = deploy.compare(self.model, proto, feeds, conversion)
        converted = replace(self, onnx_model=oir.serde.deserialize_model(proto), _model=proto, _session=None,
                            _tmpdir=None, _accepted=None)
        return converted, report


def compile_to_onnx(graph, passes: Sequence[Pass | str] | None = None, *, outputs=None,
                    options: CompileOptions | None = None, **kwargs) -> CompiledModel:
    """Compile a PyTensor graph into an ONNX model.

    Args:
        graph: a ``FunctionGraph``, a compiled ``pytensor.function`` (default,
            Numba or C mode), or a list of input variables (then ``outputs``).
        passes: pass objects or registered pass names; None runs
            ``passes.DEFAULT_PIPELINE``; ``[]`` runs none. A pass field the
            compilation fills (``numerics``; see
            ``CompileOptions.configure_passes``) keeps a value given here.
        outputs: the output variables when ``graph`` is a list of inputs.
        options: a ``compiler.core.options.CompileOptions`` (None: the
            defaults); keyword arguments replace its fields.
        kwargs: the options by name (each is a field of ``CompileOptions``,
            whose docstring says more):

            - ``numerics``: ``"fast"`` (default): the fastest ONNX form
              within the numerics contract (docs/numerics.md: exact
              dtypes, integer results, rounding, comparisons, NaN/inf
              positions and shapes; float values within a bound per op
              family; the sign of a zero may differ). ``"strict"``: the
              bit-exact forms wherever the emitter has them (NumPy's sign of
              zero included), and the passes that choose a form rewrite only
              where the result stays bit for bit the graph's (``relu-silu``,
              ``conv-recovery``, ``conv-bias-fusion``, ``batchnorm-folding``,
              ``pool-recovery``, ``gemm-fusion``; ``ir.numerics``).
            - ``bake_shared``: shared variables become initializers holding
              their current value (True) or stay graph inputs (False).
            - ``assertions``: what ``CheckAndRaise``/``Assert`` nodes become
              (ONNX cannot raise): ``"drop"`` (default: the guarded value; one
              ``DroppedAssertionWarning`` lists them with their source
              lines), ``"nan"`` (the guarded value is NaN where a condition
              fails) or ``"raise"`` (each run-time assertion's conditions
              are one extra bool output, ``CompiledModel.assertions``;
              ``run`` raises the first failing one's ``exc_type(msg)`` as
              PyTensor does; in a scan body a per-step output reduced
              after the loop; unsupported for what only an ``IfElse``
              branch computes). PyMC's ``CheckParameterValue`` is always
              ``where(cond, x, -inf)``.
            - ``random``: what random variables become
              (``compiler/lowering/rules/random.py``): None (default:
              unsupported), ``"inputs"`` (each draw is an exact transform of
              standard noise that is a new model input, after the others;
              described by ``CompiledModel.random_inputs``), ``"onnx"``
              (the noise comes from ONNX ``RandomUniformLike``/
              ``RandomNormalLike`` nodes seeded from the PyTensor generator's
              state: new draws at every run) or ``"key"`` (each generator is
              a ``uint64[2]`` key input, ``compiler.random_key``; the noise is
              SplitMix64 of the key's counter, the next generator the advanced
              key, which can be an output: ``rules/random_key.py``). Under
              ``"inputs"`` and ``"onnx"`` generator updates are dropped.
            - ``vectorize``: input name (or PyTensor variable) -> batch dim
              name (``{"theta": "points"}``): those inputs gain a leading
              dim of that name and the whole graph is vectorized over it
              (PyTensor's ``vectorize_graph``), so output ``[b]`` is the
              single-point output at point ``b``; ``input_shapes`` and
              ``example_inputs`` of a batched input give its batched shape.
            - ``input_shapes``: input name (or PyTensor variable) -> one entry
              per axis: an int pins the dim, a str names it (``("batch", 1,
              28, 28)``), None keeps it (unknown dims are named
              ``<input>_dim<axis>``).
            - ``example_inputs``: one array per ONNX input: the model is
              specialized to their shapes (every dim static, shape arithmetic
              folded by the passes), except dims ``input_shapes`` names.
            - ``check_dynamic``: after emitting, run the model in onnxruntime
              at two sizes of every symbolic input dim and compare with
              PyTensor (``compiler.core.shapes.check_dynamic``).
            - ``opset``: the ONNX default-domain opset to emit (18).
            - ``name``: the ONNX graph name (``"main"``).
            - ``value_info``: declare the type of every intermediate value
              and initializer in the model.
            - ``emit_options``: emitter choices (``float64_conv``, ``silu``,
              ``gelu``, ``max_pool_nan``; see ``backends.onnx.EmitOptions``).
            - ``external_data_threshold``: initializer bytes past which the
              model's weights live in an external data file (``save``,
              ``session``); protobuf's 2 GB limit by default.
            - ``provenance``: how node provenance names source files:
              ``"relative"`` (default: to ``provenance_root``, else a module
              path or base name, never absolute: builds in two checkouts are
              byte-identical), ``"absolute"``, or ``"none"`` (no provenance).
            - ``provenance_root``: the directory relative paths start from
              (None: the current directory).
            - ``verify_each_pass``: run the full IR verifier (type rules
              included) after lowering and after each pass, so the first
              pass that breaks the IR is named (a debugging option: it costs
              about as much as the passes). Off, one structural check
              (``verify(..., check_types=False)``) runs after the last pass.
            - ``keep_ir``: keep the IR text after every stage in
              ``history[i].ir_text`` (else those are None).
            - ``dump_ir``: a directory; receives ``00-lowered.ir`` and
              ``NN-<pass>.ir`` after each pass, and ``index.html``, the
              pass explorer (``compiler.core.explorer_page``).
            - ``full_weights``: print constants of more than 16 elements in
              full (base64, parseable) in ``history`` texts and ``dump_ir``
              files, instead of a ``<shape dtype sha256:prefix>`` digest.
            - ``check_passes``: evaluate the IR with the interpreter on this
              many random input sets before and after each pass; the first
              pass that changes a result raises ``PassCheckError`` after
              writing a reproducer (``compiler.core.pass_check``).
            - ``reproducer_dir``: where ``check_passes`` writes its
              reproducer (default: a new temporary directory).
            - ``opt_bisect_limit``: stop rewriting after this many rewrites
              (one pattern-rule application, or one changing run of a pass
              that does not use the pattern engine; ``passes.rewrite_log``),
              to bisect a miscompile.

    Returns:
        A ``CompiledModel`` (its ``options`` is the ``CompileOptions`` used).

    Raises:
        A bad argument is a plain ``TypeError``/``ValueError``; every failure
        caused by the graph itself is an ``ir.errors.CompileError`` (also
        exported as ``compiler.CompileError``; the hierarchy is drawn in
        ``ir/errors.py``):

        TypeError, ValueError: a bad option (see ``CompileOptions``: an
            unknown ``numerics``, ``assertions`` or ``random``,
            ``opset`` outside
            ``[18, max_opset()]``, an unknown ``emit_options`` key or value
            or ``numerics`` among them, a flag that is not a bool, ...), an
            unknown option name, a bad ``passes`` list
            (``compiler.core.validation.check_pass_list``), empty
            ``outputs``, an input given twice; each naming the argument and
            the accepted values.
        compiler.lowering.errors.UnsupportedOpsError: the graph holds ops with no
            lowering (all listed, with source lines), or inputs/outputs of a
            type with no ONNX equivalent (complex, sparse, typed lists, None).
        ir.errors.VerificationError: a pass broke the IR.
        ir.errors.EmitError: the IR has an op or dtype with no exact ONNX form.
        ir.errors.ShapeInferenceError: a type rule contradicts a declared dim.
        compiler.core.shapes.InputShapeError: ``input_shapes`` or
            ``example_inputs`` contradict the graph.
        compiler.core.shapes.DynamicShapeError: ``check_dynamic`` found the model
            wrong at some size.
        compiler.core.pass_check.PassCheckError: ``check_passes`` found a pass
            that changed the results.
    """
    options = CompileOptions.of(options, **kwargs)
    check_pass_list(passes)
    with _gc_paused():
        return _compile(graph, outputs, passes, options)


@contextlib.contextmanager
def _gc_paused():
    """Pause Python's cyclic garbage collector while compiling (and while
    ``CompiledModel.model`` serializes). Lowering and the passes allocate
    hundreds of thousands of long-lived objects (the IR, then onnx_ir's);
    each young-generation collection would traverse them again, which costs
    about as much as lowering itself. Reference counting still frees acyclic
    garbage; the cycles of erased IR nodes wait for the next collection after
    the compilation (their memory is part of the measured peak)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _batched_input_shapes(options: CompileOptions, batched: dict):
    """``options.input_shapes`` for the batched graph: keys that were a
    replaced variable name its batched one, and a batched input the caller
    gave no shape for has its leading dim named after ``options.vectorize``."""
    if not batched:
        return options.input_shapes
    shapes_ = {batched.get(k, k) if not isinstance(k, str) else k: dims for k, dims in options.input_shapes.items()}
    for key, dim in options.vectorize.items():
        old = key if not isinstance(key, str) else next(v for v in batched if v.name == key)
        new = batched[old]
        if new not in shapes_ and new.name not in shapes_:
            shapes_[new] = (dim,) + (None,) * old.type.ndim
    return shapes_


def _compile(graph, outputs, passes, options: CompileOptions) -> CompiledModel:
    start = time.perf_counter()
    spec, batched = vectorize_spec(graph_spec(graph, outputs), options.vectorize, options.assertions)
    lowered = lower(spec, options.lowering)
    ir_graph = lowered.graph
    equal_dims = equal_dim_groups(lowered)
    example_sizes = shapes.apply_input_shapes(ir_graph, lowered.input_vars,
                                              _batched_input_shapes(options, batched), options.example_inputs)
    fixed = shapes.required_sizes(ir_graph, equal_dims)
    if fixed:  # sizes the graph fixes reach the input types: onnxruntime refuses other sizes too
        shapes.substitute_dims(ir_graph, fixed)
    history: list[PassRecord] = []
    dump_dir = Path(options.dump_ir) if options.dump_ir is not None else None
    if dump_dir is not None:
        dump_dir.mkdir(parents=True, exist_ok=True)
    hook_seconds = 0.0
    keep_text = options.keep_ir or dump_dir is not None
    rewrites = RewriteLog(limit=options.opt_bisect_limit)
    stages = (StageRecorder(rewrites, options.provenance, options.provenance_root, options.full_weights)
              if dump_dir is not None else None)

    def record(stage: str, changed: bool, seconds: float) -> None:
        nonlocal hook_seconds
        hook_start = time.perf_counter()
        if options.verify_each_pass:
            verify(ir_graph, context=f"after {stage}")
        file = f"{len(history):02d}-{stage}.ir"
        if stages is not None:
            text = stages.record(ir_graph, stage, file, changed, seconds)
        else:
            text = print_graph(ir_graph, full_weights=options.full_weights) if keep_text else None
        history.append(PassRecord(stage, changed, seconds, len(ir_graph), text if options.keep_ir else None))
        if dump_dir is not None:
            (dump_dir / file).write_text(text)
        hook_seconds += time.perf_counter() - hook_start

    record("lowered", True, time.perf_counter() - start)
    pipeline = options.configure_passes(resolve_passes(DEFAULT_PIPELINE if passes is None else passes))
    checker = PassChecker(ir_graph, options.check_passes, options.reproducer_dir) if options.check_passes else None
    counted = [0]

    def before(p: Pass, g: Graph) -> bool:
        counted[0] = rewrites.count
        if stages is not None:
            stages.before_pass()
        return rewrites.allows()

    def after(p: Pass, g: Graph, changed: bool, seconds: float) -> None:
        if changed and rewrites.count == counted[0]:  # a pass outside the pattern engine: one rewrite
            rewrites.count += 1
        record(p.name, changed, seconds)
        if checker is not None and changed:
            checker.check(p, g)

    with observing(rewrites):
        run_pipeline(ir_graph, pipeline, after, before)
    if not options.verify_each_pass:
        hook_start = time.perf_counter()
        verify(ir_graph, context="after the passes", check_types=False)
        hook_seconds += time.perf_counter() - hook_start
    emit_start = time.perf_counter()
    emitted_for = {} if stages is not None else None
    onnx_model = build_model(ir_graph, options.emit, emitted_for=emitted_for)
    end = time.perf_counter()
    if stages is not None:
        write_explorer(dump_dir, stages, stages.onnx_nodes(emitted_for))
    timings = {"lowering": history[0].seconds, "passes": sum(r.seconds for r in history[1:]),
               "hooks": hook_seconds, "emission": end - emit_start}
    names = [o.name for o in onnx_model.graph.outputs]
    n_out = len(lowered.output_vars)
    assertions = [replace(a, name=name) for a, name in zip(lowered.assertions, names[n_out:], strict=True)]
    compiled = CompiledModel(onnx_model, ir_graph, history, [v.name for v in ir_graph.inputs],
                             names[:n_out], end - start, timings=timings,
                             input_variables=list(lowered.input_vars), rewrites=rewrites,
                             equal_dims=equal_dims, random_inputs=list(lowered.random_inputs),
                             assertions=assertions,
                             options=options, advice=advise(ir_graph, options.emit))
    warn_slow_forms(compiled.advice)
    if options.check_dynamic:
        shapes.check_dynamic(compiled.model, ir_graph, lowered.input_vars, lowered.output_vars,
                             example_sizes=example_sizes, session=compiled.session,
                             random_inputs=compiled.random_inputs)
    return compiled
