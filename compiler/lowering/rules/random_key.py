"""Noise from a functional generator state, for ``random="key"``: the
counter-based generator that lets a standalone model take a random
generator as an input and return it advanced, as PyTensor's JAX backend
does with a PRNG key.

Under ``random="key"`` every PyTensor random generator (``RandomType``) has
an IR value, its **key**: a ``uint64[2]`` vector ``(seed, counter)``. A
draw of ``n`` standard noise elements reads the elements ``counter``,
``counter + 1``, ..., ``counter + n - 1`` of the SplitMix64 stream of
``seed`` and returns the key ``(seed, counter + n)`` as the next generator;
the next draw reads on from there. Everything is integer arithmetic on
``uint64`` (ONNX ``Add``/``Mul``/``BitShift``/``BitwiseXor``), exact by
the ONNX spec, so runtimes agree bit for bit up to the float transforms
(tested: onnxruntime's CPU provider, onnxruntime-web in Chromium and the IR
interpreter), and the same key gives the same draws at every run (a draw from
a generator that is not advanced, as a scan's generator non-sequence
without an update, repeats, as in PyTensor).

SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number
generators", OOPSLA 2014; Vigna's reference ``splitmix64.c``): the
generator seeded with ``s`` outputs ``mix(s + k * GAMMA)`` for
``k = 1, 2, ...``, ``mix`` being Stafford's "variant 13" 64-bit finalizer.
Element ``j`` of the stream of ``seed`` here is that output for
``k = j + 1``. Streams of different seeds are shifts of one sequence of
period 2**64; seeds made by ``random_key`` (a ``SeedSequence`` hash) are
2**64-uniform, so two streams of fewer than 2**40 draws each overlap with
probability below 2**-23.

Uniforms: the top 52 bits ``b`` of an output give ``(2 b + 1) / 2**53`` in
float64 and the top 23 bits ``(2 b + 1) / 2**24`` in float32: the midpoints
of a uniform grid, exact in the dtype, strictly inside (0, 1) (so no
transform meets ``log(0)``). Standard normal noise is ``sqrt(2) erfinv(2u -
1)`` of such a uniform (``random_transforms._std_normal_of``).
"""

from __future__ import annotations

import numpy as np
from pytensor.tensor.random.type import RandomType

from compiler.lowering.context import KEY_TYPE, LoweringContext
from ir import DType, Value

U64, I64, F64 = DType.UINT64, DType.INT64, DType.FLOAT64

GAMMA = 0x9E3779B97F4A7C15  # 2**64 / golden ratio, odd
MIX1, MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # Stafford's variant 13 multipliers
SHIFTS = (30, 27, 31)

__all__ = ["KEY_TYPE", "keyed_uniform", "random_key", "splitmix64", "uniform_of_bits", "valueless_generator"]

# float dtype -> (kept top bits, scale of the midpoint 2b + 1)
_UNIFORM_BITS = {"float64": (52, 2.0 ** -53), "float32": (23, 2.0 ** -24)}


def random_key(seed=None) -> np.ndarray:
    """A fresh key ``(seed, 0)``: ``uint64[2]``.

    Args:
        seed: an int, a sequence of ints or a ``numpy.random.SeedSequence``
            (hashed by NumPy's ``SeedSequence``, so nearby seeds give
            unrelated streams), a ``numpy.random.Generator`` (one 64-bit
            draw from it: the generator advances, as PyTensor's draws
            advance it), or None (fresh OS entropy).

    Returns:
        ``np.ndarray`` of dtype uint64 and shape (2,).
    """
    if isinstance(seed, np.random.Generator):
        word = seed.integers(0, 2 ** 64, dtype=np.uint64, endpoint=False)
    else:
        sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        word = sequence.generate_state(1, np.uint64)[0]
    return np.array([word, 0], dtype=np.uint64)


def valueless_generator(ctx: LoweringContext, var) -> bool:
    """Whether PyTensor variable ``var`` is a random generator without an IR
    value: under every ``random`` policy but ``"key"``."""
    return isinstance(var.type, RandomType) and ctx.options.random != "key"


def splitmix64(seed, positions) -> np.ndarray:
    """Reference SplitMix64 in NumPy: element ``positions`` (uint64 array)
    of the stream of ``seed``, i.e. ``mix(seed + (positions + 1) * GAMMA)``
    with 64-bit wraparound (module docstring)."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + (np.asarray(positions, dtype=np.uint64) + np.uint64(1)) * np.uint64(GAMMA)
        z = (z ^ (z >> np.uint64(SHIFTS[0]))) * np.uint64(MIX1)
        z = (z ^ (z >> np.uint64(SHIFTS[1]))) * np.uint64(MIX2)
        return z ^ (z >> np.uint64(SHIFTS[2]))


def uniform_of_bits(bits: np.ndarray, dtype: str) -> np.ndarray:
    """Reference of the uniform mapping: ``(2 b + 1) 2**-53`` of the top 52
    bits (float64) or ``(2 b + 1) 2**-24`` of the top 23 (float32)."""
    keep, scale = _UNIFORM_BITS[np.dtype(dtype).name]
    top = (np.asarray(bits, np.uint64) >> np.uint64(64 - keep)).astype(np.float64)
    return ((2.0 * top + 1.0) * scale).astype(dtype)


def keyed_uniform(ctx: LoweringContext, key: Value, shape: Value, dtype: DType) -> tuple[Value, Value]:
    """U(0, 1) noise of ``shape`` (an int64 vector) and ``dtype`` (float32 or
    float64) from ``key``, and the key advanced past it: SplitMix64's
    outputs mapped to grid midpoints (module docstring).

    Returns:
        ``(noise, next_key)``: noise of the given shape (row-major element
        ``i`` is stream element ``counter + i``) and ``(seed, counter + n)``,
        ``n`` the noise's size.
    """
    seed, counter = _parts(ctx, key)
    count = ctx.add("reduce_prod", [shape], {"axes": (), "keepdims": False})  # 1 for shape ()
    index = ctx.cast(ctx.add("range", [ctx.scalar(0, I64), count, ctx.scalar(1, I64)]), U64)
    step = ctx.add("add", [ctx.add("add", [counter, index]), _u64(ctx, 1)])  # k = counter + i + 1
    bits = _mix(ctx, ctx.add("add", [seed, ctx.add("mul", [step, _u64(ctx, GAMMA)])]))  # mix(seed + k GAMMA)
    keep, scale = _UNIFORM_BITS[dtype.numpy.name]
    top = ctx.cast(ctx.add("shift_right", [bits, _u64(ctx, 64 - keep)]), F64)
    odd = ctx.add("add", [ctx.add("add", [top, top]), ctx.scalar(1.0, F64)])
    uniform = ctx.cast(ctx.add("mul", [odd, ctx.scalar(scale, F64)]), dtype)
    advanced = ctx.add("add", [counter, ctx.cast(ctx.add("unsqueeze", [count], {"axes": [0]}), U64)])
    next_key = ctx.add("concat", [seed, advanced], {"axis": 0})
    return ctx.add("reshape", [uniform, shape]), next_key


def _parts(ctx: LoweringContext, key: Value) -> tuple[Value, Value]:
    """``key[0:1]`` and ``key[1:2]``: the seed and the counter, uint64[1]."""
    return tuple(ctx.add("slice", [key, ctx.i64([i]), ctx.i64([i + 1]), ctx.i64([1])], {"axes": [0]})
                 for i in (0, 1))


def _mix(ctx: LoweringContext, z: Value) -> Value:
    """Stafford's variant 13 finalizer of uint64 ``z`` (SplitMix64's output
    function)."""
    for shift, multiplier in zip(SHIFTS[:2], (MIX1, MIX2)):
        z = ctx.add("mul", [_xorshift(ctx, z, shift), _u64(ctx, multiplier)])
    return _xorshift(ctx, z, SHIFTS[2])


def _xorshift(ctx: LoweringContext, z: Value, shift: int) -> Value:
    return ctx.add("xor", [z, ctx.add("shift_right", [z, _u64(ctx, shift)])])


def _u64(ctx: LoweringContext, value: int) -> Value:
    return ctx.scalar(value, U64)
