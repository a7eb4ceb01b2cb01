"""Lowering of PyTensor's random variables (``pytensor.tensor.random``:
``RandomVariable`` nodes, and PyTensor 3's ``RandomVariableWithCoreShape``
wrapper in compiled functions) under the ``random`` option of
``compile_to_onnx``.

A draw is an exact transform of **standard noise** of the draw's shape
(the shape ``size`` gives, else the broadcast of the parameters' batch
shapes, then a multivariate draw's core dim; a transform that takes several
uniforms per element adds a trailing axis of that length): standard normal
noise ``z`` or U[0, 1) noise ``u``. Where the noise
comes from is the policy:

- ``random="inputs"``: each draw's noise is a new model input, named
  ``<draw>_noise`` (the draw variable's name, else the distribution's;
  made unique), of the noise dtype and that shape (static dims as
  PyTensor knows them, others named ``<input>_dim<axis>``); the caller
  supplies it, so the randomness is theirs, reproducibly.
  ``CompiledModel.random_inputs`` describes each (``RandomInput``). A
  draw in a scan body gets its input in the enclosing graph with a leading
  step axis (``(n_steps, *dims)``, one axis per enclosing scan, outermost
  first; ``LoweringContext.noise_source``, ``rules/scan.py``) and reads its
  step's row. A draw in an ``IfElse`` branch is computed in the enclosing
  graph (PyTensor's form), so its input is fed whether or not the branch runs.
- ``random="onnx"``: the noise is drawn in the model (``random_uniform`` /
  ``random_normal``, ONNX ``RandomUniformLike``/``RandomNormalLike``); each
  node gets its own seed, derived from the state of the PyTensor generator
  behind the draw (a shared ``Generator``; 0 otherwise) and the draw's
  position in the graph, so recompiling repeats the model and reseeding the
  PyTensor generator changes it. onnxruntime advances each node's generator
  at every run (its ``std::default_random_engine``: 31 bits per draw), and
  at every step of the ``Loop`` a draw in a scan body sits in
  (``scan-unroll`` reseeds each unrolled copy).
- ``random="key"``: every generator is a value, its key: a ``uint64[2]``
  ``(seed, counter)`` (``random_key.py``). A generator input of the graph
  (an explicit input or a shared ``Generator``, never baked) is a model
  input of that type, named after the variable; a draw computes its uniform
  noise from the key by SplitMix64 and its next generator is the key with
  the counter advanced by the noise's size, so a generator can be a model
  output (what PyTensor's JAX backend does with its PRNG key). The same key
  gives the same draws on every runtime; a scan carries an updated
  generator through its ``Loop`` and keeps a generator non-sequence fixed
  (each step draws the same noise, as PyTensor's scan does without the
  update).
- ``None`` (the default): random variables are unsupported (an exported
  model would otherwise silently fix or drop its randomness).

The transforms (``random_transforms.py``, ``TRANSFORMS``) are exact in
distribution: closed-form quantiles, quantiles through the special
functions (gamma, beta, Student's t, ...), a search for the discrete
quantile (poisson, binomial, negative binomial, hypergeometric), several
uniforms per draw element (wald, beta_binomial, dirichlet: the noise gets a
trailing axis of that length), ``mean + L z`` for the multivariate normal
(the noise has the draw's core dim), sequential binomials for the
multinomial (``k - 1`` uniforms), a bisected inverse CDF for vonmises and
sort keys for permutation and choice without replacement (the noise has an
axis of the population's size, float64 for any draw dtype).

Continuous draws compute in their own dtype (float32 or float64, the noise
has it too; vonmises bisects in float64 and rounds last); discrete ones, and
the sort keys of permutation and choice, use float64 noise. Parameter values are not
checked (PyTensor raises on a negative scale; the model returns what the
formula gives); parameter shapes are: with ``size`` given, a draw whose
parameters may have a dim that is neither 1 nor ``size``'s is reshaped to
``size``, which fails at run time where they do not broadcast to it. Under
``"inputs"`` and ``"onnx"`` the next-generator output of a node has no IR
value: the draws that read it draw new noise of their own, and a generator
as a model output needs ``"key"`` (ONNX's node-internal generators keep
their state in the session; ``"inputs"`` noise is the caller's). Other
distributions are unsupported, with the reason.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from dataclasses import dataclass

import numpy as np
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.tensor.random.op import RandomVariable, RandomVariableWithCoreShape
from pytensor.tensor.random.type import RandomType
from pytensor.tensor.type_other import NoneTypeT

from compiler.lowering.errors import Unsupported
from compiler.lowering.context import LoweringContext, ir_dtype, sanitize_name
from compiler.lowering.registry import lowers
from compiler.lowering.rules.random_key import keyed_uniform
from compiler.lowering.rules.random_transforms import TRANSFORMS, Transform, std_normal_of
from ir import DType, OpError, TensorType, Value
from ir.ops.common import broadcast_shapes

F32, F64, I64 = DType.FLOAT32, DType.FLOAT64, DType.INT64


@dataclass(frozen=True)
class RandomInput:
    """The noise input of one random draw under ``random="inputs"``.

    Attributes:
        name: the ONNX input name (``<draw>_noise``).
        distribution: PyTensor's name of the distribution (``"normal"``).
        noise: ``"normal"`` (standard normal) or ``"uniform"`` (U[0, 1)).
        dtype: the NumPy dtype name of the input (``"float32"``).
        shape: the input's dims: ints, or names of dims known at run time.
        source: the user's source line of the draw, when PyTensor kept one.
    """

    name: str
    distribution: str
    noise: str
    dtype: str
    shape: tuple
    source: str | None = None


@lowers(RandomVariable)
def lower_random_variable(ctx: LoweringContext, node) -> list[Value | None]:
    """A ``RandomVariable`` node ``(rng, size, *params) -> (next_rng, draw)``
    as an exact transform of standard noise (module docstring).

    Returns:
        ``[next_key, draw]`` under ``random="key"``, else ``[None, draw]``
        (the next generator has no IR value).

    Raises:
        Unsupported: no ``random`` policy, a distribution without a transform
            here, a float16 draw, or noise inputs inside a control-flow body
            other than a scan's (a matrix loop's).
    """
    rng, size, *params = node.inputs
    return list(_draw(ctx, node.op, rng, size, params, node.outputs[1]))


@lowers(RandomVariableWithCoreShape)
def lower_random_with_core_shape(ctx: LoweringContext, node) -> list[Value | None]:
    """PyTensor 3's wrapper of a ``RandomVariable`` in compiled functions
    (inputs ``(core_shape, rng, size, *params)``; the core shape is implied
    by the parameters): the inner variable's draw, as
    ``lower_random_variable``."""
    inner = node.op.fgraph.outputs[-1].owner.op
    _, rng, size, *params = node.inputs
    return list(_draw(ctx, inner, rng, size, params, node.outputs[1]))


def _draw(ctx: LoweringContext, op, rng, size, params, out) -> tuple[Value | None, Value]:
    """The IR values ``(next generator, draw)`` of the draw ``out`` of random
    variable ``op`` with generator ``rng``, ``size`` (or ``NoneConst``) and
    parameters ``params`` (PyTensor variables), under
    ``ctx.options.random``; the next generator is None but under ``"key"``.

    The table is keyed by the exact class, not the MRO: a subclass may
    reparametrize its distribution, so it stays unsupported until listed.
    """
    policy = ctx.options.random
    if policy is None:
        raise Unsupported("random variables need compile_to_onnx(..., random='inputs') (noise as model inputs), "
                          "random='onnx' (ONNX's random ops) or random='key' (generators as uint64 key inputs)")
    spec = TRANSFORMS.get(type(op))
    if spec is None:
        raise Unsupported(f"random variable {op.name}: no exact transform of uniform or normal noise here "
                          f"(supported: {', '.join(sorted(SUPPORTED))})")
    if spec.core is None:  # core ranks that follow the node's signature (permutation, choice)
        core = tuple(op.ndims_params)
        spec = dataclasses.replace(spec, core=core, fn=functools.partial(spec.fn, core=core),
                                   noise_core=functools.partial(spec.noise_core, core=core,
                                                                consts=[ctx.constant_value(p) for p in params]))
    dtype = ir_dtype(out)
    noise_dtype = dtype if dtype.is_float and not spec.float64_noise else F64
    if noise_dtype not in (F32, F64):
        raise Unsupported(f"random variable {op.name} of dtype {dtype} (float32 and float64 draws only)")
    args = [ctx.get(p) for p in params]
    next_key = None
    if policy == "inputs":
        noise = _noise_input(ctx, op, spec.noise, noise_dtype, out, _known_dims(ctx, size, args, spec, out))
    elif policy == "key":
        noise, next_key = keyed_uniform(ctx, ctx.get(rng), _draw_shape(ctx, size, args, spec), noise_dtype)
        if spec.noise == "normal":
            noise = std_normal_of(ctx, noise)
    else:
        shape = _draw_shape(ctx, size, args, spec)
        noise = ctx.add(f"random_{spec.noise}", [shape], {"dtype": noise_dtype, "seed": _seed(ctx, rng)},
                        name=f"{op.name}_noise")
    fn = functools.partial(spec.fn, op=op) if spec.takes_op else spec.fn
    result = fn(ctx, noise, [ctx.cast(a, noise_dtype) if dtype.is_float else a for a in args])
    if not _is_none(size) and _may_outgrow(ctx, size, args, spec.core):
        # a parameter that does not broadcast to ``size`` (PyTensor raises): the transform's broadcast result
        # is larger than ``size``, which the reshape to ``size`` refuses at run time
        target = ctx.cast(ctx.get(size), I64)
        n_core = out.type.ndim - target.shape[0]  # the draw's core dims (mvnormal's k, a permutation's n, ...)
        if n_core:
            core = ctx.add("slice", [ctx.add("shape", [result]), ctx.i64([result.rank - n_core]),
                                     ctx.i64([result.rank]), ctx.i64([1])], {"axes": [0]})
            target = ctx.add("concat", [target, core], {"axis": 0})
        result = ctx.add("reshape", [result, target])
    return next_key, ctx.cast(result, dtype)


def _may_outgrow(ctx: LoweringContext, size, args: list[Value], core: tuple) -> bool:
    """Whether some parameter's batch dim may differ from ``size``'s and
    from 1 at run time (not statically 1 or the constant size's dim)."""
    known = ctx.constant_value(size)
    dims = tuple(int(d) for d in np.ravel(known)) if known is not None else None
    for a, n_core in zip(args, core):
        batch = a.type.shape[:a.rank - n_core]
        for i, d in enumerate(batch):
            target = dims[len(dims) - len(batch) + i] if dims is not None and len(dims) >= len(batch) else None
            if d != 1 and (target is None or d != target):
                return True
    return False


def _known_dims(ctx: LoweringContext, size, args: list[Value], spec: Transform, out) -> tuple:
    """What lowering knows of the noise's dims: the draw's batch dims
    (``size``'s value when constant, else the broadcast of the parameters'
    batch dims, so the noise of ``normal(mu)`` shares ``mu``'s symbolic
    dims), then a multivariate draw's core dim (its parameter's last dim),
    then the noise axis of a transform taking several uniforms; each refined
    by PyTensor's static shape of the draw; None where unknown."""
    static = tuple(out.type.shape)
    n_core = 0 if spec.core_dim_of is None else 1
    batch_static = static[:len(static) - n_core]
    if not _is_none(size):
        value = ctx.constant_value(size)
        dims = tuple(int(d) for d in value) if value is not None else batch_static
    else:
        try:
            dims = broadcast_shapes([a.shape[:a.rank - n] for a, n in zip(args, spec.core)], "random")
        except OpError:
            dims = batch_static
    known = tuple(s if s is not None else d for s, d in zip(batch_static, dims))
    if n_core:
        core = static[-1] if static[-1] is not None else args[spec.core_dim_of].shape[-1]
        if spec.noise_core_less:
            core = max(core - spec.noise_core_less, 0) if isinstance(core, int) else None
        known += (core,)
    if spec.noise_core is not None:
        known += (spec.noise_core(ctx, args)[0],)
    return known + ((spec.uniforms,) if spec.uniforms > 1 else ())


def _noise_input(ctx: LoweringContext, op, kind: str, dtype: DType, out, known: tuple) -> Value:
    """A new graph input of the draw's dims ``known`` (unknown ones named
    after the input), recorded in ``random_inputs``. In a scan body the
    input is made in the enclosing graph with a leading step axis
    (``ctx.noise_source``, ``rules/scan.py``: ``(n_steps, *known)``, nested
    scans stacking one axis each, outermost first) and the body reads its
    step's row.

    Raises:
        Unsupported: a body without a noise source (e.g. a matrix loop's).
    """
    if ctx.graph is not ctx.record.main_graph:
        if ctx.noise_source is None:
            raise Unsupported(f"random variable {op.name} inside a control-flow body other than a scan's under "
                              "random='inputs'; use random='onnx'")
        return ctx.noise_source(known, lambda outer, dims: _noise_input(outer, op, kind, dtype, out, dims))
    taken = {v.name for v in ctx.graph.inputs} | set(ctx.graph.constants)
    base = sanitize_name(out.name) or op.name
    name, i = f"{base}_noise", 1
    while name in taken:
        name, i = f"{base}_noise_{i}", i + 1
    dims = tuple(d if d is not None else f"{name}_dim{a}" for a, d in enumerate(known))
    ctx.record.random_inputs.append(RandomInput(name, op.name, kind, dtype.numpy.name, dims, ctx.source))
    return ctx.graph.add_input(TensorType(dtype, dims), name)


def _draw_shape(ctx: LoweringContext, size, args: list[Value], spec: Transform) -> Value:
    """The noise's shape as an int64 vector: the draw's batch shape (``size``
    when given, else the NumPy broadcast of the parameters' batch shapes),
    then a multivariate draw's core dim and the noise axis of a transform
    taking several uniforms."""
    if not _is_none(size):
        result = ctx.cast(ctx.get(size), I64)
    else:
        shapes = []
        for a, n_core in zip(args, spec.core):
            s = ctx.add("shape", [a])
            if n_core:
                s = ctx.add("slice", [s, ctx.i64([0]), ctx.i64([a.rank - n_core]), ctx.i64([1])], {"axes": [0]})
            shapes.append((s, a.rank - n_core))
        result, rank = shapes[0]
        for s, r in shapes[1:]:
            result, rank = _broadcast_shapes(ctx, result, rank, s, r), max(rank, r)
    if spec.core_dim_of is not None:
        core = _core_dims(ctx, args, spec)
        if spec.noise_core_less:
            core = ctx.add("maximum", [ctx.add("sub", [core, ctx.i64([spec.noise_core_less])]), ctx.i64([0])])
        result = ctx.add("concat", [result, core], {"axis": 0})
    if spec.noise_core is not None:
        result = ctx.add("concat", [result, spec.noise_core(ctx, args)[1]], {"axis": 0})
    if spec.uniforms > 1:
        result = ctx.add("concat", [result, ctx.i64([spec.uniforms])], {"axis": 0})
    return result


def _core_dims(ctx: LoweringContext, args: list[Value], spec: Transform) -> Value:
    """A multivariate draw's core dim as an int64 vector of length 1."""
    a = args[spec.core_dim_of]
    return ctx.add("slice", [ctx.add("shape", [a]), ctx.i64([a.rank - 1]), ctx.i64([a.rank]), ctx.i64([1])],
                   {"axes": [0]})


def _broadcast_shapes(ctx: LoweringContext, a: Value, ra: int, b: Value, rb_: int) -> Value:
    """NumPy's broadcast of two shape vectors of static lengths: padded with
    leading ones, then ``where(a == 1, b, a)`` per axis (exact for shapes
    that broadcast, zero-size dims included)."""
    r = max(ra, rb_)

    def pad(s, n):
        return s if n == r else ctx.add("concat", [ctx.i64([1] * (r - n)), s], {"axis": 0})

    a, b = pad(a, ra), pad(b, rb_)
    if r == 0:
        return a
    return ctx.add("where", [ctx.add("eq", [a, ctx.scalar(1, I64)]), b, a])


def _is_none(var) -> bool:
    """Whether ``size`` is PyTensor's ``NoneConst`` (no size given)."""
    return isinstance(var.type, NoneTypeT)


def _seed(ctx: LoweringContext, rng) -> int:
    """The seed of the next random node: from the state of the shared NumPy
    generator behind ``rng`` (followed back through earlier draws' next
    generators and from a scan body's generator to the scan's,
    ``LoweringRecord.rng_sources``; a copy is drawn from, the variable is
    unchanged) and the
    number of random nodes built so far, below 2**24 (exact as ONNX's float
    ``seed`` attribute)."""
    seen = set()
    while rng is not None and not isinstance(rng, SharedVariable) and rng not in seen:
        seen.add(rng)
        if rng in ctx.record.rng_sources:  # a scan body's generator: the outer one it stands for
            rng = ctx.record.rng_sources[rng]
        elif rng.owner is not None:
            rng = next((v for v in rng.owner.inputs if isinstance(v.type, RandomType)), None)
        else:
            break
    root = 0
    value = rng.get_value(borrow=True) if isinstance(rng, SharedVariable) else None
    if isinstance(value, np.random.Generator):
        root = int(copy.deepcopy(value).integers(2 ** 31))
    k = ctx.record.random_count
    ctx.record.random_count += 1
    return int(np.random.SeedSequence([root, k]).generate_state(1)[0]) & 0xFFFFFF


SUPPORTED = frozenset(cls.name if isinstance(getattr(cls, "name", None), str) else cls.__name__
                      for cls in TRANSFORMS)
