"""A PyTensor mode that runs functions through this compiler and onnxruntime:
``pytensor.function(inputs, outputs, mode="ONNX")`` (or ``mode=ONNX_MODE``).

``ONNXLinker`` is a ``JITLinker`` (like PyTensor's JAX, Numba and PyTorch
linkers): once per function it compiles the function's rewritten
``FunctionGraph`` with ``compile_to_onnx`` (shared variables stay model
inputs, ``bake_shared=False``, so their current values are read at each
call) and each call runs the model in onnxruntime. PyTensor's ``Function``
keeps its own semantics around the thunk: the update expressions are extra
outputs of the graph, and ``Function`` writes them back into the shared
variables after each call; ``givens`` are substituted before the graph
reaches the linker; outputs are fresh arrays on every call, so borrowed
outputs never alias.

Which PyTensor rewrites run before lowering (``REWRITES``): only
``minimum_compile`` (what every PyTensor linker requires), so our lowering
sees the graph as the user wrote it. ``bench/bench_mode.py`` measured the
alternatives (docs/compile-options.md, "PyTensor mode"): the same ONNX graphs for the demo MLP
and CNN, a smaller scan with ``canonicalize+stabilize`` (5 nodes against 8)
but the hand-written MNIST CNN grows from 13 to 32 nodes (PyTensor's
canonical forms hide the convolutions from ``conv-recovery``), and
``fast_run`` (without the C, BLAS, fusion and inplace rewrites, as the JAX
and PyTorch linkers drop them) turns the demo CNN into 190 nodes, 40x
slower, and puts an unsupported ``Assert`` into the SGD step. Other
queries: ``onnx_mode(rewrites=...)``.

The mode's defaults differ from ``compile_to_onnx``'s where PyTensor users
expect PyTensor's behaviour (``MODE_DEFAULTS``): assertions
(``CheckAndRaise``/``Assert``) raise as in PyTensor (``assertions="raise"``:
each run-time assertion is a bool output of the model and a call raises the
first failing one's ``exc_type(msg)``; ``onnx_mode(assertions="drop")`` or
``"nan"`` choose otherwise, and a check only an ``IfElse`` branch computes
needs one of those), and random variables draw from the function's
generators (``random="key"``: each call feeds a key drawn from the shared
``Generator``, so draws change from call to call and reseeding repeats them;
``onnx_mode(random="onnx")`` draws in onnxruntime's session instead).

An op with no lowering raises ``compiler.lowering.errors.UnsupportedOpsError``
(listing every unsupported op with its source line) when the function is
compiled: there is no Python fallback.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from pytensor.compile.mode import Mode, predefined_linkers, predefined_modes, register_linker, register_mode
from pytensor.graph.rewriting.db import RewriteDatabaseQuery
from pytensor.link.basic import JITLinker

from compiler.core.driver import CompiledModel, compile_to_onnx
from compiler.core.options import CompileOptions
from compiler.core.validation import check_equal_dims
from compiler.lowering.rules.random_key import random_key
from compiler.lowering.compat import SCAN_PREALLOC_TAG

INCOMPATIBLE_REWRITES = ("cxx_only", "BlasOpt", "fusion", "inplace", "local_careduce_fusion", SCAN_PREALLOC_TAG)
REWRITES = RewriteDatabaseQuery(include=["minimum_compile"])
MODE_NAME = "ONNX"
# the mode's defaults (module docstring): a failing Assert raises and draws come from the function's generators
MODE_DEFAULTS = {"assertions": "raise", "random": "key"}
LINKER_NAME = "onnx"


class ONNXLinker(JITLinker):
    """Compile a ``FunctionGraph`` to ONNX once, run it with onnxruntime.

    Args:
        passes: the pass pipeline (None: ``passes.DEFAULT_PIPELINE``).
        compile_options: the ``CompileOptions`` of every compilation, or a
            dict of them by name (``emit_options``, ``input_shapes``,
            ``check_passes``, ...); ``bake_shared`` is always False. Given
            as None or a dict, the options not named default to
            ``MODE_DEFAULTS`` (``assertions="raise"``, ``random="key"``: as
            PyTensor's own modes behave); a ``CompileOptions`` is used as it
            is.
        pin_shared_shapes: compile for the shapes the shared variables
            have (recompiling when a call sees other shapes); False keeps
            their dims symbolic.

    Attributes:
        options: the ``CompileOptions`` (validated when the linker is made).

        compiled: the ``CompiledModel`` of the last function linked (for
            ``report()``, ``save()``), None before.
    """

    required_rewrites = ("minimum_compile",)
    incompatible_rewrites = INCOMPATIBLE_REWRITES

    def __init__(self, passes: Sequence | None = None, compile_options: CompileOptions | Mapping | None = None,
                 pin_shared_shapes: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.passes = passes
        if compile_options is None or isinstance(compile_options, Mapping):
            options = _mode_options(None, compile_options or {})
        else:
            options = _mode_options(compile_options, {})
        self.options = dataclasses.replace(options, bake_shared=False) if options.bake_shared else options
        self.pin_shared_shapes = pin_shared_shapes
        self.compiled = None

    def fgraph_convert(self, fgraph, **kwargs):
        """Compile ``fgraph`` (``compile_to_onnx(fgraph, bake_shared=False)``)
        and return a function mapping its input values to its output values.

        With ``pin_shared_shapes`` the shapes of the shared variables are
        pinned to their current values' (``input_shapes``), so the passes see
        static weight shapes (a bias add becomes part of a ``Gemm``); a call
        whose shared values have other shapes compiles once more for them.

        Raises:
            UnsupportedOpsError: ops with no lowering (all listed).
        """
        from pytensor.compile.sharedvalue import SharedVariable

        shared = [i for i, v in enumerate(fgraph.inputs)
                  if isinstance(v, SharedVariable) and hasattr(v.type, "ndim")] if self.pin_shared_shapes else []
        runners: dict[tuple, Any] = {}

        def runner_for(values) -> Any:
            key = tuple(np.shape(values[i]) for i in shared)
            run = runners.get(key)
            if run is None:
                run = runners[key] = self._compile(fgraph, {fgraph.inputs[i]: s for i, s in zip(shared, key)})
            return run

        def run(*values: Any) -> list[np.ndarray]:
            return runner_for(values)(values)

        # compile now for the current shared values, so errors surface when the function is built
        runner_for([v.get_value(borrow=True) if i in shared else None for i, v in enumerate(fgraph.inputs)])
        return run

    def _compile(self, fgraph, shared_shapes: dict):
        from pytensor.compile.sharedvalue import SharedVariable
        from pytensor.tensor.random.type import RandomType

        options = self.options
        if shared_shapes:
            options = dataclasses.replace(options, input_shapes={**shared_shapes, **options.input_shapes})
        generators = _generator_outputs(fgraph) if options.random is not None else {}
        if generators:  # compiled without them: their values are the generators they advance
            kept = [v for i, v in enumerate(fgraph.outputs) if i not in generators]
            compiled = self.compile_model(list(fgraph.inputs), options, outputs=kept)
        else:
            compiled = self.compile_model(fgraph, options)
        self.compiled = compiled
        positions = [fgraph.inputs.index(v) for v in compiled.input_variables]
        names, outputs, session = compiled.input_names, compiled.fetched_names, compiled.session
        equal_dims = compiled.equal_dims
        shared = frozenset(name for name, v in zip(names, compiled.input_variables) if isinstance(v, SharedVariable))
        keyed = {name for name, v in zip(names, compiled.input_variables)
                 if isinstance(v.type, RandomType)}  # random="key": generators fed as keys drawn from them
        extra = self.extra_feed(compiled)
        if compiled.random_inputs and extra is None:
            raise ValueError("random='inputs' makes the draws' noise model inputs, which a PyTensor function "
                             "has no argument for: compile the mode with random='onnx' (the model draws), or "
                             "use compile_to_onnx(..., random='inputs') and feed CompiledModel.random_inputs")

        def run(values) -> list[np.ndarray]:
            feed = {name: random_key(values[i]) if name in keyed else _c_array(values[i])
                    for name, i in zip(names, positions)}
            if equal_dims:
                check_equal_dims(feed, equal_dims, shared)  # PyTensor's runtime refusals ONNX would not make
            if extra is not None:
                extra(feed)
            results = compiled.checked(session.run(outputs, feed))  # raises a failing assertion's error
            for i in sorted(generators):
                results.insert(i, values[generators[i]])
            return results

        return run

    def compile_model(self, graph, options: CompileOptions, outputs=None) -> CompiledModel:
        """The model of ``graph`` (a ``FunctionGraph``, or a list of inputs and
        ``outputs``) under ``options`` (``compile_to_onnx`` with the linker's
        passes); a subclass may choose other options per graph."""
        return compile_to_onnx(graph, self.passes, outputs=outputs, options=options)

    def extra_feed(self, compiled: CompiledModel) -> Callable[[dict], None] | None:
        """A function adding the model inputs that are not graph inputs to a
        call's feed (a ``dict`` of name -> array), or None (here: none; a
        subclass feeding ``random="inputs"`` noise returns one)."""
        return None

    def accept(self, fgraph, no_recycling=None, profile=None):
        """Tie the linker to ``fgraph`` (a linker already tied to another
        graph hands over a clone keeping ``passes`` and the options)."""
        if self.fgraph is not None and self.fgraph is not fgraph:
            return self.clone().accept(fgraph, no_recycling, profile)
        return super().accept(fgraph, no_recycling, profile)

    def jit_compile(self, fn):
        return fn

    def create_thunk_inputs(self, storage_map):
        return [storage_map[n] for n in self.fgraph.inputs]

    def clone(self, allow_gc=None):
        return type(self)(self.passes, self.options, self.pin_shared_shapes,
                          allow_gc=self.allow_gc if allow_gc is None else allow_gc)

    def __repr__(self) -> str:
        return f"ONNXLinker(passes={self.passes!r})"


def _mode_options(options: CompileOptions | None, named: Mapping) -> CompileOptions:
    """``options`` with the ``named`` ones replaced; without ``options``,
    ``MODE_DEFAULTS`` under ``named`` (``CompileOptions.of``'s errors)."""
    if options is None:
        named = {**MODE_DEFAULTS, **named}
    return CompileOptions.of(options, **named)


def _generator_outputs(fgraph) -> dict[int, int]:
    """``{output position: input position}`` for every random generator
    output of ``fgraph`` (a draw's next generator, as a shared generator's
    update or an explicit output) whose chain of draws starts at a graph
    input. Under a ``random`` policy the model holds no generator state
    (ONNX's random ops keep theirs in the session; under ``"key"`` each call
    feeds a key drawn from the input generator, advancing it; ``"inputs"`` noise is the
    caller's), so such an output is the input generator as it came, where
    PyTensor's JAX backend returns its advanced PRNG key (docs/compile-options.md, ``random``).
    Generators reached otherwise stay outputs and are refused."""
    from pytensor.compile.ops import DeepCopyOp, ViewOp
    from pytensor.tensor.random.op import RandomVariable
    from pytensor.tensor.random.type import RandomType

    found = {}
    for i, out in enumerate(fgraph.outputs):
        if not isinstance(out.type, RandomType):
            continue
        root = out
        while root.owner is not None and isinstance(root.owner.op, (RandomVariable, DeepCopyOp, ViewOp)):
            root = root.owner.inputs[0]
        if root in fgraph.inputs:
            found[i] = fgraph.inputs.index(root)
    return found


def _c_array(value) -> np.ndarray:
    """``value`` as a C-contiguous array for onnxruntime, keeping its rank
    (``np.ascontiguousarray`` would make a 0-d array 1-d)."""
    array = np.asarray(value)
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


def onnx_mode(passes: Sequence | None = None, rewrites: RewriteDatabaseQuery | str = REWRITES, *,
              pin_shared_shapes: bool = True, options: CompileOptions | None = None, **compile_options) -> Mode:
    """A PyTensor ``Mode`` compiling with ``ONNXLinker``.

    Args:
        passes: the pass pipeline (None: the default pipeline).
        rewrites: the PyTensor rewrites that run before lowering
            (``REWRITES`` by default; ``RewriteDatabaseQuery(include=
            ["minimum_compile"])`` hands over an almost raw graph).
        pin_shared_shapes: see ``ONNXLinker``.
        options: a ``CompileOptions`` (None: the defaults, but
            ``MODE_DEFAULTS``: ``assertions="raise"``, ``random="key"``).
        compile_options: options by name, replacing those of ``options``
            (``compile_to_onnx``'s keyword arguments; ``bake_shared`` is
            always False in the mode).

    Raises:
        TypeError, ValueError: a bad option (``CompileOptions``), now rather
            than when a function is compiled.
    """
    options = _mode_options(options, compile_options)
    return Mode(linker=ONNXLinker(passes, options, pin_shared_shapes), optimizer=rewrites)


def compiled_model(function):
    """The ``CompiledModel`` behind a ``pytensor.function`` compiled in an
    ONNX mode (for ``report()``, ``save()``, ``model``).

    Raises:
        TypeError: the function was not compiled with ``ONNXLinker``.
    """
    linker = getattr(getattr(function, "maker", None), "linker", None)
    if not isinstance(linker, ONNXLinker) or linker.compiled is None:
        raise TypeError("the function was not compiled in an ONNX mode")
    return linker.compiled


ONNX_MODE = onnx_mode()

if MODE_NAME not in predefined_modes:
    register_mode(MODE_NAME, ONNX_MODE)
if LINKER_NAME not in predefined_linkers:
    register_linker(LINKER_NAME, ONNX_MODE.linker)
