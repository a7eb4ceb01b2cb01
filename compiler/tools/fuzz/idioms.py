"""Seeded random programs of the idioms users write beyond op chains: the
fuzzer's ``idioms`` family (``generate_idioms``; ``fuzz(...,
family="idioms")``, ``pytensor-onnx fuzz --family idioms``).

A program is ``generate.py``'s straight-line source (a ``Program``): one
idiom chosen from the seed, then 0-2 elementwise steps on its result. Both
fuzzer paths run, so each idiom is also compiled from a default-mode
``pytensor.function`` (PyTensor's rewritten form of it). Idioms:

- ``conv``: a batch of images through ``convolve2d`` with a kernel input
  (``valid`` or ``full``; channels summed as ``images[:, None]`` against
  ``kernels[None]``), optionally a bias and a ReLU. The kernel's channel
  count is static, as in a network's weights: with it symbolic in both
  operands the emitter refuses the graph (``EmitError``: ONNX ``Conv``
  needs a static group count);
- ``pool``: 2x2 max or mean pooling written as a crop, a reshape to windows
  and a ``max``/``mean`` over the window axes (how the MNIST example writes
  it);
- ``linalg``: ``inv``, ``det``, ``solve``, ``cholesky`` of a
  well-conditioned matrix (a random orthogonal basis, eigenvalues in
  [1, 4]: condition number at most 4);
- ``ill_conditioned``: float64 ``solve`` (general and ``assume_a="pos"``),
  ``inv``, ``det``, ``slogdet`` and ``cholesky`` of a matrix with condition
  number 1e2..1e10 (singular values log-spaced between random orthogonal
  bases; symmetric positive definite for ``pos`` and ``cholesky``),
  compared within the condition number times the fuzzer's bound
  (``Program.condition``);
- ``sort``: ``sort``/``argsort`` (stable) along an axis, ``unique``,
  ``nonzero``/``flatnonzero`` of integer or float data with ties;
- ``special``: ``gammaln``, ``erf``, ``erfc``, ``erfcx``, ``erfinv``,
  ``psi``, ``i0``, ``i1``, ``softplus``, ``sigmoid``, ``log1mexp`` over
  points of their domains (including near its edges).

Float data is finite here (the op-chain family covers NaN and inf); the
values are float64 or float32, compared with the fuzzer's bound.
"""

from __future__ import annotations

import numpy as np

from compiler.tools.fuzz.generate import Program

IDIOMS = ("conv", "pool", "linalg", "sort", "special", "ill_conditioned")
SPECIAL = {  # function -> (low, high) of the inputs drawn
    "pt.gammaln": (0.05, 30.0), "pt.erf": (-4.0, 4.0), "pt.erfc": (-3.0, 8.0), "pt.erfcx": (-2.0, 20.0),
    "pt.erfinv": (-0.999, 0.999), "pt.psi": (0.1, 30.0), "pt.i0": (-20.0, 20.0), "pt.i1": (-20.0, 20.0),
    "pt.softplus": (-30.0, 30.0), "pt.sigmoid": (-30.0, 30.0), "pt.log1mexp": (-30.0, -0.01),
}
FOLLOW = ["{v} * 2", "pt.exp(-pt.abs({v}))", "pt.sqr({v})", "pt.tanh({v})"]  # no cancellation: the bound is relative


def generate_idioms(seed: int, max_steps: int = 3) -> Program:
    """A random idiom program from ``seed`` (deterministic); at most
    ``max_steps - 1`` elementwise steps follow the idiom."""
    rng = np.random.default_rng([seed, 7])
    idiom = IDIOMS[seed % len(IDIOMS)]
    dtype = str(rng.choice(["float32", "float64"]))
    prog = Program(seed=seed)
    getattr(_Idioms(rng, dtype, prog), idiom)()
    if prog.lines and not prog.lines[-1].split("=", 1)[1].strip().startswith(("pt.nonzero", "pt.flatnonzero",
                                                                                 "pt.argsort", "pt.unique")):
        for _ in range(int(rng.integers(0, max(max_steps, 1)))):
            last = prog.lines[-1].split("=", 1)[0].strip()
            prog.lines.append(f"f{len(prog.lines)} = " + str(rng.choice(FOLLOW)).format(v=last))
    return prog


class _Idioms:
    def __init__(self, rng: np.random.Generator, dtype: str, prog: Program):
        self.rng, self.dtype, self.prog = rng, dtype, prog

    def input(self, data: np.ndarray, static: bool | None = None) -> str:
        """Declare an input holding ``data`` (dims static or not, from the seed)."""
        name = f"x{len(self.prog.inputs)}"
        keep = self.rng.random() < 0.5 if static is None else static
        shape = tuple(d if keep else None for d in data.shape)
        self.prog.inputs.append((name, str(data.dtype), shape, data))
        return name

    def line(self, expr: str) -> str:
        name = f"v{len(self.prog.lines)}"
        self.prog.lines.append(f"{name} = {expr}")
        return name

    def normal(self, *shape) -> np.ndarray:
        return self.rng.normal(0, 1, shape).astype(self.dtype)

    def conv(self):
        rng = self.rng
        b, c, f = (int(n) for n in rng.integers(1, 4, 3))
        h, w = (int(n) for n in rng.integers(3, 8, 2))
        kh, kw = (int(n) for n in rng.integers(1, 4, 2))
        x, k = self.input(self.normal(b, c, h, w)), self.input(self.normal(f, c, kh, kw))
        name, dtype, shape, data = self.prog.inputs[-1]  # the kernel's channel count static (see docstring)
        self.prog.inputs[-1] = (name, dtype, (shape[0], c, *shape[2:]), data)
        mode = str(rng.choice(["valid", "full"]))
        v = self.line(f"pytensor.tensor.signal.convolve2d({x}[:, None], {k}[None], mode={mode!r}).sum(axis=2)")
        if rng.random() < 0.5:
            bias = self.input(self.normal(f))
            v = self.line(f"{v} + {bias}[None, :, None, None]")
        if rng.random() < 0.5:
            self.line(f"pt.maximum({v}, 0)")

    def pool(self):
        rng = self.rng
        b, c = (int(n) for n in rng.integers(1, 4, 2))
        h, w = (int(n) for n in rng.integers(2, 9, 2))
        x = self.input(self.normal(b, c, h, w))
        how = str(rng.choice(["max", "mean"]))
        v = self.line(f"{x}[:, :, :{2 * (h // 2)}, :{2 * (w // 2)}]")
        v = self.line(f"{v}.reshape(({v}.shape[0], {c}, {h // 2}, 2, {w // 2}, 2))")
        self.line(f"{v}.{how}(axis=(3, 5))")

    def linalg(self):
        rng = self.rng
        n = int(rng.integers(1, 6))
        q, _ = np.linalg.qr(rng.normal(0, 1, (n, n)))
        spd = (q * rng.uniform(1, 4, n)) @ q.T  # eigenvalues in [1, 4]
        which = str(rng.choice(["inv", "det", "solve", "cholesky"]))
        a = self.input(spd.astype(self.dtype))
        if which == "solve":
            rhs = self.input(self.normal(n, int(rng.integers(1, 3))))
            self.line(f"pt.linalg.solve({a}, {rhs})")
        elif which == "cholesky":
            self.line(f"pt.linalg.cholesky(({a} + {a}.T) / 2)")
        else:
            self.line(f"pt.linalg.{which}({a})")

    def ill_conditioned(self):
        rng = self.rng
        n = int(rng.integers(2, 6))
        condition = float(10 ** rng.uniform(2, 10))
        q, _ = np.linalg.qr(rng.normal(0, 1, (n, n)))
        u, _ = np.linalg.qr(rng.normal(0, 1, (n, n)))
        singular = np.logspace(0, -np.log10(condition), n)
        which = str(rng.choice(["solve", "solve_pos", "inv", "det", "slogdet", "cholesky"]))
        spd = which in ("solve_pos", "cholesky")
        a = self.input((q * singular) @ (q if spd else u).T, static=bool(rng.random() < 0.5))
        self.prog.condition = condition
        if which.startswith("solve"):
            rhs = self.input(rng.normal(0, 1, (n, int(rng.integers(1, 3)))))
            assume = ', assume_a="pos"' if spd else ""
            self.line(f"pt.linalg.solve({a}, {rhs}{assume})")
        elif which == "cholesky":
            self.line(f"pt.linalg.cholesky(({a} + {a}.T) / 2)")
        elif which == "slogdet":
            self.line(f"pt.linalg.slogdet({a})[1]")
        else:
            self.line(f"pt.linalg.{which}({a})")

    def sort(self):
        rng = self.rng
        shape = tuple(int(n) for n in rng.integers(1, 6, int(rng.integers(1, 3))))
        ints = rng.random() < 0.5
        data = (rng.integers(-3, 4, shape).astype(str(rng.choice(["int32", "int64"]))) if ints
                else (np.round(rng.normal(0, 2, shape) * 2) / 2).astype(self.dtype))  # ties
        x = self.input(data)
        axis = int(rng.integers(-1, len(shape)))
        which = str(rng.choice(["sort", "argsort", "unique", "nonzero", "flatnonzero"]))
        if which == "sort":
            self.line(f"pt.sort({x}, axis={axis})")
        elif which == "argsort":
            self.line(f"pt.argsort({x}, axis={axis}, stable=True)")
        elif which == "unique":
            self.line(f"pt.unique({x})")
        elif which == "nonzero":
            self.line(f"pt.nonzero({x})[{int(rng.integers(len(shape)))}]")
        else:
            self.line(f"pt.flatnonzero({x})")

    def special(self):
        rng = self.rng
        fn = str(rng.choice(sorted(SPECIAL)))
        low, high = SPECIAL[fn]
        n = int(rng.integers(1, 12))
        points = rng.uniform(low, high, n)
        points[: min(2, n)] = [low, high][: min(2, n)]  # the ends of the drawn range
        x = self.input(points.astype(self.dtype))
        self.line(f"{fn}({x})")
