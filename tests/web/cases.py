"""Emitted models the browser test job runs in onnxruntime-web: one per
feature the browser must handle (float32, float64 and int64 kernels,
model-local functions, Loop, If, a symbolic batch at two sizes, a ~50 MB
initializer, uint64 integer arithmetic of ``random="key"``). Each case knows the ONNX features its model must contain, so a
compiler change that stops emitting them fails the job instead of silently
testing something else."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class Case:
    """A compiled model and its feeds.

    Attributes:
        name: folder name in the served tree.
        build: ``() -> (CompiledModel, runs)`` where ``runs`` is a list of
            feeds, each a list of arrays in ONNX input order.
        ops: op types the main graph must hold (``Loop``, ``If``, ...).
        functions: model-local function names the model must define.
    """

    name: str
    build: Callable
    ops: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def float32_batch():
    """A float32 MLP with a symbolic batch, run at batch 1 and 7."""
    import pytensor
    import pytensor.tensor as pt

    from compiler import compile_to_onnx

    rng = _rng(1)
    W1 = pytensor.shared(rng.normal(size=(16, 32)).astype(np.float32) / 4, name="W1")
    b1 = pytensor.shared(rng.normal(size=32).astype(np.float32), name="b1")
    W2 = pytensor.shared(rng.normal(size=(32, 10)).astype(np.float32) / 6, name="W2")
    x = pt.matrix("x", dtype="float32")
    h = pt.tanh(x @ W1 + b1)
    y = pt.special.softmax(h @ W2, axis=-1)
    z = pt.exp(-pt.sqr(x)).sum(axis=1) / (1 + pt.abs(x).max(axis=1))
    compiled = compile_to_onnx([x], outputs=[y, z], input_shapes={"x": ("batch", 16)})
    return compiled, [[rng.normal(size=(n, 16)).astype(np.float32)] for n in (1, 7)]


def float64_math():
    """float64 elementwise functions, a matrix product and reductions."""
    import pytensor.tensor as pt

    from compiler import compile_to_onnx

    rng = _rng(2)
    x = pt.matrix("x", dtype="float64")
    w = pt.matrix("w", dtype="float64")
    y = pt.exp(x) * pt.log1p(pt.sqr(x)) + pt.sqrt(pt.abs(x)) - pt.sin(x) / (2 + pt.cos(x))
    z = (x @ w).sum(axis=0) + pt.tanh(w).prod(axis=0)
    q = pt.special.log_softmax(x, axis=1)
    compiled = compile_to_onnx([x, w], outputs=[y, z, q])
    return compiled, [[rng.normal(size=(5, 6)), rng.normal(size=(6, 3))]]


def int64_math():
    """int64 floor division and modulo on negatives (PyTensor's rules),
    products, cumulative sums, argmax, comparisons (bool)."""
    import pytensor.tensor as pt

    from compiler import compile_to_onnx

    rng = _rng(3)
    a = pt.vector("a", dtype="int64")
    b = pt.vector("b", dtype="int64")
    outputs = [a // b, a % b, a * b + 3 * a, pt.cumsum(a), pt.argmax(a * b), pt.maximum(a, b), a > b]
    compiled = compile_to_onnx([a, b], outputs=outputs)
    av = rng.integers(-10**12, 10**12, size=50)
    bv = rng.integers(1, 1000, size=50) * rng.choice([-1, 1], size=50)
    return compiled, [[av, bv]]


def functions():
    """SiLU and GELU (exact and tanh forms) as model-local ONNX functions."""
    import pytensor.tensor as pt

    from compiler import compile_to_onnx, nn

    rng = _rng(4)
    x = pt.matrix("x", dtype="float32")
    y = nn.silu(x) + nn.gelu(x) * 2 - nn.gelu(x, approximate="tanh")
    compiled = compile_to_onnx([x], outputs=[y], emit_options={"silu": "function"})  # the default inlines SiLU
    return compiled, [[(rng.normal(size=(4, 33)) * 3).astype(np.float32)]]


def loop():
    """An Elman RNN scanned over a symbolic number of steps: ONNX Loop, run
    at 3 and 120 steps."""
    import pytensor
    import pytensor.tensor as pt

    from compiler import compile_to_onnx

    rng = _rng(5)
    W = pytensor.shared(rng.normal(size=(4, 8)).astype(np.float32) / 2, name="W")
    U = pytensor.shared(rng.normal(size=(8, 8)).astype(np.float32) / 3, name="U")
    xs = pt.matrix("xs", dtype="float32")
    h0 = pt.vector("h0", dtype="float32")
    hs = pytensor.scan(lambda x_t, h: pt.tanh(x_t @ W + h @ U), sequences=[xs], outputs_info=[h0],
                       return_updates=False) if _scan_takes_return_updates() else \
        pytensor.scan(lambda x_t, h: pt.tanh(x_t @ W + h @ U), sequences=[xs], outputs_info=[h0])[0]
    compiled = compile_to_onnx([xs, h0], outputs=[hs, hs.sum()])
    runs = [[rng.normal(size=(t, 4)).astype(np.float32), rng.normal(size=8).astype(np.float32)] for t in (3, 120)]
    return compiled, runs


def _scan_takes_return_updates() -> bool:
    import inspect

    import pytensor

    return "return_updates" in inspect.signature(pytensor.scan).parameters


def ifelse():
    """A lazy IfElse with costly branches: ONNX If, run on both branches."""
    import pytensor.tensor as pt
    from pytensor.ifelse import ifelse as pt_ifelse

    from compiler import compile_to_onnx

    rng = _rng(6)
    c = pt.scalar("c", dtype="bool")
    x = pt.vector("x", dtype="float32")
    y = pt_ifelse(c, pt.exp(x) / pt.exp(x).sum() + pt.log1p(pt.abs(x)).max(),
                  pt.sqrt(pt.abs(x)) * pt.tanh(x).min() - pt.cumsum(x))
    compiled = compile_to_onnx([c, x], outputs=[y])
    xv = rng.normal(size=20).astype(np.float32)
    return compiled, [[np.array(True), xv], [np.array(False), xv]]


def large_initializer():
    """A 3200 x 4096 float32 weight (52 MB) in the model file. Two passes
    only: the driver prints the IR (constants in full) after every pass,
    ~1.7 s each at this size, and MatMul + Tanh needs none of the others."""
    import pytensor
    import pytensor.tensor as pt

    from compiler import compile_to_onnx

    rng = _rng(7)
    W = pytensor.shared((rng.random((3200, 4096), dtype=np.float32) - 0.5) / 64, name="W_large")
    x = pt.matrix("x", dtype="float32")
    compiled = compile_to_onnx([x], outputs=[pt.tanh(x @ W)], passes=["cse", "dce"])
    return compiled, [[rng.random((2, 3200), dtype=np.float32)]]


def random_key():
    """Draws under ``random="key"``: the generator a ``uint64[2]`` key input,
    SplitMix64 noise in uint64 ``Add``/``Mul``/``BitShift``/``BitwiseXor``,
    uniform float64 and float32 and integer draws and the next key as
    outputs, run at a key and at the key it returned (the browser must give
    the same integers and key bits as onnxruntime in Python)."""
    import pytensor.tensor as pt
    from pytensor.tensor.random.type import random_generator_type

    from compiler import compile_to_onnx
    from compiler.lowering.rules.random_key import random_key as make_key

    rng = random_generator_type("rng")
    r1, u = pt.random.uniform(size=(3, 5), rng=rng).owner.outputs
    r2, z = pt.random.normal(size=(7,), rng=r1, dtype="float32").owner.outputs
    r3, k = pt.random.integers(-1000, 2 ** 40, size=(6,), rng=r2).owner.outputs
    compiled = compile_to_onnx([rng], outputs=[u, z, k, r3], random="key")
    first = make_key(2026)
    return compiled, [[first], [compiled.run(first)[-1]]]


CASES = [
    Case("float32_batch", float32_batch),
    Case("float64_math", float64_math),
    Case("int64_math", int64_math),
    Case("functions", functions, functions={"SiLU", "Gelu"}),
    Case("loop", loop, ops={"Loop"}),
    Case("ifelse", ifelse, ops={"If"}),
    Case("large_initializer", large_initializer),
    Case("random_key", random_key, ops={"BitShift", "BitwiseXor"}),
]
