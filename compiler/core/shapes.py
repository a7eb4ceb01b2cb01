"""Input shapes of a compilation, and the checks of the emitted shapes.

* ``apply_input_shapes``: ``compile_to_onnx``'s ``input_shapes`` (ints pin
  dims, strings name them) and ``example_inputs`` (concrete shapes) applied
  to the lowered IR: every input dim is renamed or pinned, and so is every
  dim of every value that depends on it (``ir.symbolic.substitute``).
  Unknown input dims keep the names lowering gives them, ``<input>_dim<axis>``:
  stable (they depend only on the input's name and position) and readable in
  an error message; a guess such as ``batch`` for axis 0 would be wrong for
  a sequence-first or channel-first input, so naming is left to the user.
* ``check_dynamic``: run the emitted model in onnxruntime at two sizes for
  every symbolic input dim and compare with PyTensor, so a dim that silently
  became static is caught at compile time.
* ``required_sizes``: the size the graph fixes for a symbolic input dim (a
  ``specify_shape``, a constant or baked operand), which the driver writes
  into the input's ONNX type (ONNX has no assertion; onnxruntime then refuses
  another size, and ``CompiledModel.run`` names the input and axis).
* ``onnx_shape_disagreements``: compare the shapes we declare (graph outputs
  and ``value_info``) with ``onnx.shape_inference.infer_shapes``.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Mapping, Sequence

import numpy as np
import onnx

import passes.shape_folding  # noqa: F401  (registers shape-folding)
import passes.shape_inference  # noqa: F401  (registers shape-inference)
from backends.onnx import make_session
from compiler.lowering.errors import CompileError
from ir import Graph, TensorType
from ir import symbolic as sym
from ir.types import Dim

_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class InputShapeError(CompileError):
    """``input_shapes`` or ``example_inputs`` contradict the graph: an unknown
    input, a wrong rank, a bad dim name, or a size different from a dim
    PyTensor's type fixes (the message names the input, the axis and both
    values)."""


class DynamicShapeError(CompileError):
    """``check_dynamic`` found the emitted model wrong at some input size: it
    fails, or its outputs differ from PyTensor's in shape or value (a dim that
    became static, or shape arithmetic that breaks at that size). The message
    names the symbolic dim and the sizes tried."""


# -- input shapes ------------------------------------------------------------------
def apply_input_shapes(graph: Graph, input_vars: Sequence, input_shapes: Mapping | None = None,
                       example_shapes: Sequence[tuple[int, ...]] | None = None) -> dict[str, int]:
    """Rename and pin the input dims of a lowered ``graph`` in place.

    Args:
        graph: the IR right after lowering (inputs in ONNX order).
        input_vars: the PyTensor variables behind ``graph.inputs``.
        input_shapes: input name (or PyTensor variable) -> one entry per axis:
            an int pins the dim, a str names it (``[A-Za-z_][A-Za-z0-9_]*``),
            None leaves it as it is (or to ``example_inputs``).
        example_shapes: the shape of one example array per graph input
            (``CompileOptions.example_inputs``): every dim not named in
            ``input_shapes`` is pinned to the example's size.

    Returns:
        The example's size of each dim that stays symbolic (names given in
        ``input_shapes`` for which an example exists), for ``check_dynamic``.

    Raises:
        InputShapeError: see the class.
    """
    specs = _specs_by_input(graph, input_vars, input_shapes or {})
    if example_shapes is not None and len(example_shapes) != len(graph.inputs):
        raise InputShapeError(f"example_inputs has {len(example_shapes)} arrays, the graph takes "
                              f"{len(graph.inputs)} inputs ({', '.join(v.name for v in graph.inputs)})")
    mapping: dict[str, Dim] = {}
    sizes: dict[str, int] = {}
    for i, value in enumerate(graph.inputs):
        spec = specs.get(i, (None,) * value.rank)
        example = None
        if example_shapes is not None:
            example = tuple(example_shapes[i])
            if len(example) != value.rank:
                raise InputShapeError(f"example input {value.name!r} has shape {example}, but the input "
                                      f"has rank {value.rank} ({value.type})")
        for axis, (dim, want) in enumerate(zip(value.shape, spec)):
            size = example[axis] if example is not None else None
            where = f"input {value.name!r} axis {axis}"
            if isinstance(dim, int):
                for what, got in (("input_shapes", want), ("example_inputs", size)):
                    if got is not None and got != dim:
                        raise InputShapeError(f"{where}: {what} gives {got!r}, but PyTensor's type fixes it "
                                              f"to {dim} ({value.type})")
                continue
            if isinstance(want, str):
                if size is not None and sizes.setdefault(want, size) != size:
                    raise InputShapeError(f"{where}: dim {want!r} is {size} in the example, but "
                                          f"{sizes[want]} elsewhere")
                _bind(mapping, dim, want, where)
            elif isinstance(want, int):
                if size is not None and size != want:
                    raise InputShapeError(f"{where}: input_shapes pins it to {want}, the example has {size}")
                _bind(mapping, dim, want, where)
            elif size is not None:
                _bind(mapping, dim, size, where)
    if mapping:
        substitute_dims(graph, mapping)
    return sizes


def _specs_by_input(graph: Graph, input_vars: Sequence, input_shapes: Mapping) -> dict[int, tuple]:
    """``input_shapes`` keyed by input position, each entry checked."""
    out: dict[int, tuple] = {}
    names = {v.name: i for i, v in enumerate(graph.inputs)}
    for i, var in enumerate(input_vars):
        if getattr(var, "name", None):
            names.setdefault(var.name, i)
    for key, spec in input_shapes.items():
        i = names.get(key) if isinstance(key, str) else next(
            (j for j, var in enumerate(input_vars) if var is key), None)
        if i is None:
            raise InputShapeError(f"input_shapes names {key!r}, which is not a graph input; the inputs are "
                                  f"{', '.join(repr(v.name) for v in graph.inputs) or 'none'}")
        value = graph.inputs[i]
        spec = tuple(spec)
        if len(spec) != value.rank:
            raise InputShapeError(f"input_shapes gives {len(spec)} dims for input {value.name!r}, which has "
                                  f"rank {value.rank} ({value.type})")
        for axis, d in enumerate(spec):
            ok = d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0) or (
                isinstance(d, str) and _SYMBOL.fullmatch(d) and d not in sym.FUNCTIONS)
            if not ok:
                raise InputShapeError(f"input_shapes[{key!r}] axis {axis}: {d!r} is not a size >= 0, a dim name "
                                      f"([A-Za-z_][A-Za-z0-9_]*, not max/min/abs) or None")
        out[i] = tuple(int(d) if isinstance(d, (int, np.integer)) else d for d in spec)
    return out


def _bind(mapping: dict, symbol: Dim, target: Dim, where: str) -> None:
    if not isinstance(symbol, str):
        raise InputShapeError(f"{where}: the input dim is {sym.format_dim(symbol)}, not a named dim")
    if mapping.setdefault(symbol, target) != target:
        raise InputShapeError(f"{where}: dim {symbol!r} is given as both {mapping[symbol]!r} and {target!r}")


def substitute_dims(graph: Graph, mapping: Mapping[str, Dim]) -> None:
    """Replace the symbols of ``mapping`` in the type of every input and node
    output of ``graph`` and its nested graphs (one linear walk).

    Raises:
        InputShapeError: a dim becomes negative (the sizes are too small for
            the graph, e.g. a 3x3 valid convolution of a 2x2 image).
    """
    def retyped(t: TensorType) -> TensorType:
        shape = tuple(sym.substitute(d, mapping) for d in t.shape)
        if any(isinstance(d, int) and d < 0 for d in shape):
            raise InputShapeError(f"with {', '.join(f'{k}={v}' for k, v in mapping.items())}, a value of type {t} "
                                  f"would have the negative shape ({', '.join(sym.format_dim(d) for d in shape)})")
        return TensorType(t.dtype, shape)

    stack = [graph]
    while stack:
        g = stack.pop()
        for v in g.inputs:
            v.type = retyped(v.type)
        for node in g:
            stack.extend(node.subgraphs.values())
            for v in node.outputs:
                v.type = retyped(v.type)


# -- check_dynamic -----------------------------------------------------------------
# Sizes tried for a symbolic dim, in order; the first one PyTensor accepts is the
# base size (unless an example gives it), a second accepted one is the other size.
CANDIDATES = (5, 3, 7, 4, 6, 8, 2, 9, 12, 16, 1, 28, 32)
TOLERANCES = {"float16": (1e-2, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-9, 1e-12)}


def check_dynamic(model: onnx.ModelProto, graph: Graph, input_vars: Sequence, output_vars: Sequence, *,
                  example_sizes: Mapping[str, int] | None = None, session: Any = None,
                  seed: int = 0, random_inputs: Sequence = ()) -> dict[str, tuple[int, int]]:
    """Run ``model`` in onnxruntime at two sizes of every symbolic input dim
    and compare with PyTensor's own function of the same graph.

    For each symbolic dim of ``graph``'s inputs, a base size (from
    ``example_sizes``, else the first of ``CANDIDATES`` at which PyTensor runs
    on random inputs) and a second size (the first other candidate PyTensor
    accepts, changing that dim alone, else with the dims that share its base
    size) are tried. At each, the outputs must have PyTensor's dtype, shape
    and values (float32 to rtol 1e-4, atol 1e-5; float64 1e-9), and the
    output dims ``graph`` declares must evaluate to that shape.

    Random draws (``compile_to_onnx(..., random=...)``): PyTensor draws from
    its own generator, so an output that depends on a draw (a generator among
    its ancestors) is compared in dtype and shape only (declared dims
    included); the others in value too. Noise inputs (``random="inputs"``,
    ``random_inputs``) are fed the standard noise they are declared with
    (U[0, 1) or standard normal, their dtype), not passed to PyTensor; their
    dims shared with other inputs follow those, and the sizes of their own
    dims (a draw's broadcast dims lowering could not name, a scan's step
    axis) are the largest of the candidate and input sizes at which the
    model runs and gives PyTensor's output shapes (a larger size fails to
    broadcast or changes a shape; a step axis longer than the steps is
    unread). Generator inputs of a ``random="key"`` model are fed a key and
    PyTensor a ``Generator`` (a shared one is swapped for an explicit input);
    a next-generator output is compared in dtype and shape (``uint64[2]``).

    Args:
        model: the emitted model.
        graph: its final IR (inputs and outputs in the model's order).
        input_vars, output_vars: the PyTensor variables of the inputs and
            outputs (PyTensor runs them in a Python-linker, fast-compile mode).
        example_sizes: preferred base sizes by dim name.
        session: an onnxruntime session of ``model`` (made when None).
        seed: seeds the random inputs (floats: standard normal; ints: 0 or 1;
            bools: fair coin).
        random_inputs: the model's noise inputs (``RandomInput``s).

    Returns:
        dim name -> the two sizes checked.

    Raises:
        DynamicShapeError: onnxruntime fails or disagrees with PyTensor at
            some size (naming the dim), or PyTensor accepts no candidate size.
    """
    import pytensor
    from pytensor.compile.mode import Mode


    from pytensor.graph.traversal import ancestors
    from pytensor.tensor.random.type import RandomType

    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.replace import clone_replace

    # random="key": a shared generator is a model input; PyTensor takes it as an explicit one in its place
    explicit = {v: v.type() for v in input_vars if isinstance(v.type, RandomType) and isinstance(v, SharedVariable)}
    fn = pytensor.function([explicit.get(v, v) for v in input_vars],
                           clone_replace(list(output_vars), explicit) if explicit else list(output_vars),
                           mode=Mode(linker="py", optimizer="fast_compile"), on_unused_input="ignore",
                           accept_inplace=True)
    drawn = [any(isinstance(a.type, RandomType) for a in ancestors([v])) for v in output_vars]
    noise = {r.name: r for r in random_inputs}
    keys = {v.name for v, var in zip([v for v in graph.inputs if v.name not in noise], input_vars)
            if isinstance(var.type, RandomType)}
    runner = _Runner(model, graph, fn, session or make_session(model), np.random.default_rng(seed), noise, drawn,
                     keys)
    names = list(dict.fromkeys(s for v in graph.inputs if v.name not in noise
                               for d in v.shape for s in sorted(sym.symbols(d))))
    example_sizes = dict(example_sizes or {})
    base = None
    for c in CANDIDATES:
        sizes = {s: example_sizes.get(s, c) for s in names}
        if runner.accepts(sizes):
            base = sizes
            break
        if not names:
            break
    if base is None:
        raise DynamicShapeError(f"check_dynamic: PyTensor rejects random inputs at every candidate size "
                                f"{CANDIDATES} of {', '.join(names) or 'the static shapes'}: {runner.last_error}")
    runner.compare(base, None)
    checked: dict[str, tuple[int, int]] = {}
    for s in names:
        for c in CANDIDATES:
            if c == base[s]:
                continue
            coupled = [t for t in names if base[t] == base[s]]
            for group in [[s]] + ([coupled] if len(coupled) > 1 else []):
                sizes = {**base, **{t: c for t in group}}
                if runner.accepts(sizes):
                    runner.compare(sizes, s)
                    checked[s] = (base[s], c)
                    break
            if s in checked:
                break
        else:
            raise DynamicShapeError(f"check_dynamic: PyTensor accepts no second size of dim {s!r} (base "
                                    f"{_sizes_text(base)}; tried {CANDIDATES}): {runner.last_error}; "
                                    f"pin it with input_shapes if it can only be {base[s]}")
    return checked


class _Runner:
    """Runs PyTensor and onnxruntime on the same random inputs."""

    def __init__(self, model, graph: Graph, fn, session, rng: np.random.Generator, noise: Mapping | None = None,
                 drawn: Sequence[bool] = (), keys: frozenset | set = frozenset()):
        self.graph = graph
        self.keys = keys  # generator inputs (random="key"): a key for onnxruntime, a Generator for PyTensor
        self.noise = dict(noise or {})  # noise input name -> RandomInput
        self.drawn = list(drawn) or [False] * len(graph.outputs)  # outputs compared in dtype and shape only
        self.free = list(dict.fromkeys(s for v in graph.inputs if v.name in self.noise for d in v.shape
                                       for s in sorted(sym.symbols(d))))  # noise dims: resolved per run
        self.fn = fn
        self.session = session
        self.rng = rng
        self.output_names = [o.name for o in model.graph.output]
        self.last_error: str = ""
        self.current: tuple | None = None

    def accepts(self, sizes: Mapping[str, int]) -> bool:
        """Draw inputs at ``sizes`` and run PyTensor; False if it raises."""
        inputs = [v for v in self.graph.inputs if v.name not in self.noise]
        arrays = [self._random(v.type, sizes) for v in inputs]
        args = [np.random.default_rng(list(a)) if v.name in self.keys else a.copy()  # in-place ops may overwrite
                for v, a in zip(inputs, arrays)]
        try:
            want = [np.zeros(2, np.uint64) if isinstance(r, np.random.Generator) else np.array(r)  # a next key
                    for r in self.fn(*args)]
        except Exception as e:  # noqa: BLE001 - any PyTensor failure means "not a valid size"
            self.last_error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            return False
        self.current = (arrays, want)
        return True

    def _random(self, t: TensorType, sizes: Mapping[str, int]) -> np.ndarray:
        shape = tuple(sym.evaluate(d, sizes) for d in t.shape)
        dtype = t.dtype.numpy
        if dtype.kind == "f":
            return self.rng.standard_normal(shape).astype(dtype)
        if dtype.kind == "b":
            return self.rng.random(shape) < 0.5
        return self.rng.integers(0, 2, size=shape).astype(dtype)

    def _noise(self, t: TensorType, spec, sizes: Mapping[str, int]) -> np.ndarray:
        shape = tuple(sym.evaluate(d, sizes) for d in t.shape)
        draw = self.rng.random(shape) if spec.noise == "uniform" else self.rng.standard_normal(shape)
        return draw.astype(t.dtype.numpy)

    def _run_with_noise(self, feed: dict, sizes: Mapping[str, int], want: list, at: str, blame: str):
        """onnxruntime's outputs on ``feed`` plus the noise inputs, and the sizes with the noise's own
        dims, each tried from the largest of the candidate and input sizes down (see ``check_dynamic``);
        without noise dims of their own, one run."""
        pool = sorted(set(CANDIDATES) | set(sizes.values()), reverse=True)
        options = [dict(sizes)]
        for s in self.free:
            if s not in sizes:
                options = [{**o, s: c} for o in options for c in pool][:512]
        error = None
        for trial in options:
            noise = {v.name: self._noise(v.type, self.noise[v.name], trial) for v in self.graph.inputs
                     if v.name in self.noise}
            try:
                got = self.session.run(self.output_names, {**feed, **noise})
            except Exception as e:  # noqa: BLE001 - onnxruntime's own exception types
                error = e
                continue
            if len(options) == 1 or all(g.shape == w.shape for g, w in zip(got, want)):
                return got, trial
        raise DynamicShapeError(f"check_dynamic: onnxruntime fails at {at}{blame}"
                                + (f" at every size of the noise dims {self.free}" if len(options) > 1 else "")
                                + f": {error}") from None

    def compare(self, sizes: Mapping[str, int], symbol: str | None) -> None:
        """onnxruntime on the inputs of the last ``accepts`` must give
        PyTensor's results; DynamicShapeError naming ``symbol`` otherwise."""
        arrays, want = self.current
        at = _sizes_text(sizes) or "the static shapes"
        blame = f" (so dim {symbol!r} does not work at {sizes[symbol]}: it may have become static)" if symbol else ""
        feed = dict(zip([v.name for v in self.graph.inputs if v.name not in self.noise], arrays))
        got, sizes = self._run_with_noise(feed, sizes, want, at, blame)
        for i, (g, w, value) in enumerate(zip(got, want, self.graph.outputs)):
            name = self.output_names[i]
            declared = tuple(None if d is None else sym.evaluate(d, sizes) for d in value.shape)
            if any(d is not None and d != n for d, n in zip(declared, w.shape)) or len(declared) != w.ndim:
                raise DynamicShapeError(f"check_dynamic: output {name!r} is declared {value.type}, which at {at} "
                                        f"is {declared}, but PyTensor gives shape {w.shape}{blame}")
            if g.shape != w.shape or g.dtype != w.dtype:
                raise DynamicShapeError(f"check_dynamic: at {at}, output {name!r} is {g.dtype}{list(g.shape)} in "
                                        f"onnxruntime but {w.dtype}{list(w.shape)} in PyTensor{blame}")
            if self.drawn[i]:
                continue  # PyTensor's draws are its generator's
            rtol, atol = TOLERANCES.get(w.dtype.name, (0, 0))
            if w.dtype.kind in "biu" and not np.array_equal(g, w) or w.dtype.kind == "f" and not np.allclose(
                    g, w, rtol=rtol, atol=atol, equal_nan=True):
                raise DynamicShapeError(f"check_dynamic: at {at}, output {name!r} differs from PyTensor's{blame}")


def _sizes_text(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


# -- agreement with ONNX shape inference --------------------------------------------
def required_sizes(graph: Graph, equal_dims: Sequence) -> dict[str, int]:
    """The size each symbolic input dim of ``graph`` must have: for every
    group of ``equal_dims`` (``compiler.core.validation.equal_dim_groups``)
    holding a ``(None, size)`` entry (a ``specify_shape`` with a constant
    size, or the static size of a constant or baked operand of the same
    ``Elemwise`` or ``Dot``), the names its inputs' dims have in ``graph`` (after
    ``apply_input_shapes``) -> that size. Dims pinned to an int are left out.
    PyTensor raises at run time when such a dim has another size; ONNX has no
    assertion, so ``CompiledModel.run`` checks it and the driver writes it
    into the input types (``substitute_dims``). A group given two sizes (no
    feed can satisfy PyTensor) is left out: ``run`` refuses every feed."""
    inputs = {v.name: v for v in graph.inputs}
    sizes: dict[str, int] = {}
    for group in equal_dims:
        required = {size for name, size in group if name is None}
        if len(required) != 1:
            continue
        for name, axis in group:
            dim = inputs[name].shape[axis] if name is not None else None
            if isinstance(dim, str):
                sizes[dim] = int(next(iter(required)))
    return sizes


def onnx_shape_disagreements(model: onnx.ModelProto) -> list[str]:
    """Where the shapes ``model`` declares (graph outputs and ``value_info``)
    disagree with ``onnx.shape_inference.infer_shapes(strict_mode=True,
    data_prop=True)`` run on the model without them. Empty when they agree.

    Agreement means: the same element type and rank; where both give a
    static dim, the same size; no symbolic dim of ours where ONNX proves a
    static size; no static dim of ours where ONNX says it is a free input
    dim; and where ONNX says a dim is an input's dim parameter, ours is that
    parameter too. Dims only one side knows, and dims ONNX names itself
    (``unk__0``), are not compared. A strict-mode failure of ONNX's
    inference is reported as a disagreement.
    """
    bare = copy.deepcopy(model)
    del bare.graph.value_info[:]
    for out in bare.graph.output:
        out.type.tensor_type.ClearField("shape")
    try:
        inferred = onnx.shape_inference.infer_shapes(bare, check_type=True, strict_mode=True, data_prop=True)
    except Exception as e:  # noqa: BLE001 - onnx raises several InferenceError types
        return [f"onnx.shape_inference.infer_shapes(strict_mode=True) fails: {e}"]
    ours = _typed_values(model)
    theirs = _typed_values(inferred)
    free = {d.dim_param for v in model.graph.input for d in v.type.tensor_type.shape.dim if d.dim_param}
    problems = []
    for name, (elem, dims) in ours.items():
        if name not in theirs:
            continue
        other_elem, other_dims = theirs[name]
        if elem != other_elem:
            problems.append(f"{name}: element type {elem} here, {other_elem} by ONNX")
            continue
        if dims is None or other_dims is None:
            continue
        if len(dims) != len(other_dims):
            problems.append(f"{name}: rank {len(dims)} here, {len(other_dims)} by ONNX")
            continue
        for axis, (a, b) in enumerate(zip(dims, other_dims)):
            clash = (isinstance(b, int) and a is not None and a != b) or (
                isinstance(b, str) and b in free and a is not None and a != b)
            if clash:
                problems.append(f"{name} axis {axis}: {a!r} here, {b!r} by ONNX")
    return problems


def _typed_values(model: onnx.ModelProto) -> dict[str, tuple[int, list | None]]:
    """name -> (element type, dims) of the graph outputs and value_info; a dim
    is an int, a dim_param string or None."""
    out = {}
    for v in list(model.graph.value_info) + list(model.graph.output):
        t = v.type.tensor_type
        dims = None
        if t.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim]
        out[v.name] = (t.elem_type, dims)
    return out
