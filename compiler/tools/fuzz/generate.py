"""Seeded random PyTensor programs for the differential fuzzer.

A ``Program`` is straight-line Python source over ``pt`` (``pytensor.tensor``)
and ``np``: input declarations, then one assignment per step, the last
assigned variable being the output. Source is the unit the shrinker
deletes lines from and the repro a failure prints. The generator tracks the
dtype and concrete shape of every variable so each step it writes is valid.

Families (the issue's list): elementwise math incl. ``//``, ``%``, ``**``,
rounding, clip, switch, casts; reductions; cumsum; reshape and transpose;
concatenate; basic and advanced indexing; set/inc_subtensor; dot/matmul;
softmax. Inputs: 1-4, every IR dtype, ranks 0-3, static or unknown dims;
data holds NaN, +-inf, -0.0, integer extremes and .5 ties.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FLOATS = ["float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8"]
DTYPES = FLOATS * 3 + INTS + ["bool"]


@dataclass
class Var:
    """A program variable: its name, dtype and concrete (run-time) shape."""

    name: str
    dtype: str
    shape: tuple


@dataclass
class Program:
    """A generated program.

    Attributes:
        inputs: one ``(name, dtype, static shape, data)`` per graph input
            (static shape entries are ints or None).
        lines: the step assignments, in order; the last one's target is the
            output.
        seed: the seed it was generated from.
        condition: the condition number of the program's linear algebra
            (1 elsewhere): float results are compared within ``condition``
            times the fuzzer's bound (``reference.compare``), the forward error
            of a backward-stable method (Higham, *Accuracy and Stability of
            Numerical Algorithms*, 2nd ed., section 7.1).
        precision: the float dtype whose epsilon the bound uses (None: the
            result's): a float32 computation whose result a float64
            constant upcasts (PyMC's log-densities) is compared at float32's
            precision, since onnxruntime's float32 kernels round otherwise
            than NumPy's (within a few ulp).
        draws: the output is a random sample (the ``random`` family,
            ``random_draws.py``), compared in distribution, not value for
            value.
    """

    inputs: list = field(default_factory=list)
    lines: list = field(default_factory=list)
    seed: int = 0
    condition: float = 1.0
    precision: str | None = None
    draws: bool = False

    @property
    def bound(self) -> tuple:
        """``(condition, precision)``: what ``reference.compare`` scales its bound by."""
        return self.condition, self.precision

    def source(self) -> str:
        """The program as Python source (a repro: builds ``inputs`` and
        ``out``)."""
        head = ["import numpy as np, pytensor, pytensor.tensor as pt"]
        for name, dtype, static, _ in self.inputs:
            head.append(f"{name} = pt.tensor({name!r}, dtype={dtype!r}, shape={tuple(static)!r})")
        out = self.lines[-1].split("=", 1)[0].strip() if self.lines else self.inputs[0][0]
        tail = [f"# compared within {self.condition:.3g} x the fuzzer's bound (condition number)"] \
            if self.condition != 1.0 else []
        tail += [f"# compared at {self.precision}'s precision"] if self.precision else []
        return "\n".join(head + list(self.lines) + [f"out = {out}"] + tail)

    def data_source(self) -> str:
        """The input data as Python source."""
        return "\n".join(f"{name}_data = np.array({data.tolist()!r}, dtype={dtype!r})"
                         for name, dtype, _, data in self.inputs)


# Parameter domains of the distribution families (pymc_logps.py, random_draws.py).
POSITIVE, REAL, UNIT = "positive", "real", "unit"


def domain_values(rng: np.random.Generator, domain: str, shape: tuple, dtype: str,
                  positive_high: float) -> np.ndarray:
    """Values of ``dtype`` and ``shape`` inside ``domain``: reals uniform in
    [-3, 3], positives log-uniform in [0.2, ``positive_high``], unit-interval
    values uniform in [0.05, 0.95]."""
    if domain == REAL:
        x = rng.uniform(-3, 3, shape)
    elif domain == POSITIVE:
        x = np.exp(rng.uniform(np.log(0.2), np.log(positive_high), shape))
    elif domain == UNIT:
        x = rng.uniform(0.05, 0.95, shape)
    else:
        raise ValueError(f"unknown domain {domain!r}")
    return np.asarray(x, dtype)


def edge_data(rng: np.random.Generator, dtype: str, shape: tuple) -> np.ndarray:
    """Random data of ``dtype`` and ``shape`` seeded with edge values: NaN,
    +-inf, -0.0 and .5 ties for floats; the extremes, 0, +-1 for ints."""
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == "bool":
        return rng.random(n).reshape(shape) < 0.5
    if dtype in FLOATS:
        base = np.round(rng.normal(0, 3, n) * 2) / 2  # many .5 ties
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -1.5, 2.5, 1e-3], dtype)
        pick = rng.random(n) < 0.2
        base[pick] = rng.choice(specials, pick.sum())
        return base.astype(dtype).reshape(shape)
    info = np.iinfo(dtype)
    base = rng.integers(max(info.min, -7), min(info.max, 7), n, endpoint=True)
    specials = np.array([info.min, info.max, 0, 1] + ([-1] if info.min < 0 else []))
    pick = rng.random(n) < 0.15
    base[pick] = rng.choice(specials, pick.sum())
    return base.astype(dtype).reshape(shape)


class _Gen:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.prog = Program(seed=seed)
        self.vars: list[Var] = []
        self.count = 0
        import pytensor.tensor as pt

        self.ns = {"pt": pt, "np": np}
        self.dims = [int(d) for d in self.rng.integers(0, 5, 3)]
        self.dims[self.rng.integers(0, 3)] = max(self.dims[0], 2)

    def new_input(self, dtype=None, shape=None) -> Var:
        rng = self.rng
        dtype = dtype or str(rng.choice(DTYPES))
        if shape is None:
            rank = int(rng.integers(0, 4))
            shape = tuple(self.dims[3 - rank:])
            shape = tuple(1 if rng.random() < 0.15 else d for d in shape)
        static = tuple(d if (d == 1 or rng.random() < 0.4) else None for d in shape)
        name = f"x{len(self.prog.inputs)}"
        self.prog.inputs.append((name, dtype, static, edge_data(rng, dtype, shape)))
        self.ns[name] = self.ns["pt"].tensor(name, dtype=dtype, shape=static)
        v = Var(name, dtype, tuple(shape))
        self.vars.append(v)
        return v

    def pick(self, pred=lambda v: True) -> Var | None:
        cands = [v for v in self.vars if pred(v)]
        if not cands:
            return None
        # prefer recent values so programs chain
        weights = np.arange(1, len(cands) + 1, dtype=float) ** 2
        return cands[int(self.rng.choice(len(cands), p=weights / weights.sum()))]

    def emit(self, expr: str, dtype: str, shape: tuple) -> Var | None:
        """Add ``name = expr`` if PyTensor builds it (its dtype is PyTensor's,
        ``dtype`` is only a guess); None if it does not."""
        name = f"v{self.count}"
        try:
            var = eval(expr, self.ns)
        except Exception:
            return None
        if getattr(var.type, "ndim", None) != len(shape):
            return None
        self.ns[name] = var
        self.count += 1
        self.prog.lines.append(f"{name} = {expr}")
        v = Var(name, var.type.dtype, tuple(shape))
        self.vars.append(v)
        return v


def _result_dtype(*dtypes) -> str:
    import pytensor.scalar as ps

    return ps.upcast(*dtypes)


def _broadcast(a: tuple, b: tuple) -> tuple | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


BINARY = ["+", "-", "*", "/", "//", "%", "**", "maximum", "minimum", "eq", "lt", "ge", "and", "or"]
UNARY = ["neg", "abs", "exp", "log", "sqrt", "floor", "ceil", "round", "round_half_away", "tanh",
         "sigmoid", "sqr", "isnan", "sign", "log1p", "reciprocal", "invert"]


def _step(g: _Gen) -> None:
    rng = g.rng
    family = rng.choice(["binary", "binary", "unary", "unary", "clip", "switch", "cast", "reduce", "cumsum",
                         "reshape", "transpose", "concat", "subtensor", "advanced", "setinc", "dot", "softmax"])
    x = g.pick()
    if family == "binary":
        y = g.pick(lambda v: _broadcast(v.shape, x.shape) is not None)
        if y is None or (rng.random() < 0.3 and len(g.prog.inputs) < 4):
            y = g.new_input(shape=x.shape[int(rng.integers(0, len(x.shape) + 1)):])
        op = str(rng.choice(BINARY))
        shape = _broadcast(x.shape, y.shape)
        dt = _result_dtype(x.dtype, y.dtype)
        if op in ("and", "or"):
            if x.dtype == "bool" and y.dtype == "bool" or (x.dtype in INTS and y.dtype in INTS):
                g.emit(f"{x.name} {'&' if op == 'and' else '|'} {y.name}", dt, shape)
            return
        if op in ("eq", "lt", "ge"):
            g.emit(f"pt.{op}({x.name}, {y.name})", "bool", shape)
            return
        if "bool" in (x.dtype, y.dtype) and op in ("-", "/", "//", "%", "**"):
            return
        if op == "/":
            dt = _result_dtype(dt, "float64" if dt in INTS and dt not in ("int8", "int16", "uint8") else
                               ("float32" if dt in ("int8", "int16", "uint8") else dt))
        if op in ("maximum", "minimum"):
            g.emit(f"pt.{op}({x.name}, {y.name})", dt, shape)
        else:
            g.emit(f"{x.name} {op} {y.name}", dt, shape)
    elif family == "unary":
        op = str(rng.choice(UNARY))
        if x.dtype == "bool" and op not in ("invert", "isnan"):
            return
        if op == "invert" and x.dtype in FLOATS:
            return
        if op in ("exp", "log", "sqrt", "tanh", "sigmoid", "log1p", "reciprocal") and x.dtype not in FLOATS:
            dt = "float32" if x.dtype in ("int8", "int16", "uint8") else "float64"
            if op == "reciprocal":
                return
        else:
            dt = "bool" if op == "isnan" else x.dtype
        if op in ("round", "round_half_away") and x.dtype not in FLOATS:
            return
        expr = {"round": f"pt.round({x.name}, mode='half_to_even')",
                "round_half_away": f"pt.round({x.name}, mode='half_away_from_zero')",
                "neg": f"-{x.name}", "invert": f"~{x.name}"}.get(op, f"pt.{op}({x.name})")
        g.emit(expr, dt, x.shape)
    elif family == "clip":
        if x.dtype == "bool":
            return
        lo, hi = sorted(int(v) for v in rng.integers(-3, 4, 2))
        g.emit(f"pt.clip({x.name}, {lo}, {hi})", _result_dtype(x.dtype, "int8"), x.shape)
    elif family == "switch":
        c = g.pick(lambda v: v.dtype == "bool" and _broadcast(v.shape, x.shape) is not None)
        y = g.pick(lambda v: _broadcast(v.shape, x.shape) is not None)
        if c is None:
            c = g.emit(f"{x.name} > 0", "bool", x.shape) if x.dtype != "bool" else x
        if c is None:
            return
        shape = _broadcast(_broadcast(c.shape, x.shape), y.shape)
        if shape is not None:
            g.emit(f"pt.switch({c.name}, {x.name}, {y.name})", _result_dtype(x.dtype, y.dtype), shape)
    elif family == "cast":
        dt = str(rng.choice(DTYPES))
        g.emit(f"pt.cast({x.name}, {dt!r})", dt, x.shape)
    elif family == "reduce":
        op = str(rng.choice(["sum", "prod", "max", "min", "mean", "all", "any", "argmax"]))
        axis = None if not x.shape or rng.random() < 0.3 else int(rng.integers(0, len(x.shape)))
        shape = () if axis is None else x.shape[:axis] + x.shape[axis + 1:]
        if op in ("max", "min", "argmax") and (0 in (x.shape if axis is None else (x.shape[axis],))):
            return  # PyTensor raises on an empty max; covered by regression tests
        if op in ("all", "any"):
            dt = "bool"
        elif op == "argmax":
            dt = "int64"
        elif op == "mean":
            dt = x.dtype if x.dtype in FLOATS else "float64"
        elif op in ("sum", "prod"):
            dt = {"bool": "int64", "int8": "int64", "int16": "int64", "int32": "int64", "uint8": "uint64"}.get(
                x.dtype, x.dtype)
        else:
            dt = x.dtype
        g.emit(f"pt.{op}({x.name}, axis={axis})", dt, shape)
    elif family == "cumsum":
        if x.dtype == "bool" or x.dtype in ("int8", "int16", "int32", "uint8"):
            return  # PyTensor's Python cumsum returns NumPy's int64/uint64 here (docs/status.md; pinned in a test)
        axis = None if not x.shape or rng.random() < 0.3 else int(rng.integers(0, len(x.shape)))
        shape = (int(np.prod(x.shape)),) if axis is None else x.shape
        g.emit(f"pt.cumsum({x.name}, axis={axis})", x.dtype, shape)
    elif family == "reshape":
        n = int(np.prod(x.shape))
        if rng.random() < 0.5 or n == 0:
            g.emit(f"{x.name}.reshape((-1,))" if n else f"{x.name}.flatten()", x.dtype, (n,))
        else:
            g.emit(f"{x.name}.reshape(({n}, 1))", x.dtype, (n, 1))
    elif family == "transpose":
        if len(x.shape) < 2:
            return
        perm = [int(i) for i in rng.permutation(len(x.shape))]
        g.emit(f"{x.name}.transpose({perm})", x.dtype, tuple(x.shape[i] for i in perm))
    elif family == "concat":
        if not x.shape:
            return
        axis = int(rng.integers(0, len(x.shape)))
        y = g.pick(lambda v: v.dtype == x.dtype and len(v.shape) == len(x.shape) and all(
            a == b for i, (a, b) in enumerate(zip(v.shape, x.shape)) if i != axis)) or x
        shape = tuple(a + b if i == axis else a for i, (a, b) in enumerate(zip(x.shape, y.shape)))
        g.emit(f"pt.concatenate([{x.name}, {y.name}], axis={axis})", x.dtype, shape)
    elif family == "subtensor":
        if not x.shape:
            return
        n = x.shape[0]
        start, stop = (int(v) for v in rng.integers(-n - 1, n + 2, 2))
        step = int(rng.choice([1, 1, 2, -1, -2]))
        if rng.random() < 0.3 and n > 0:
            i = int(rng.integers(-n, n))
            g.emit(f"{x.name}[{i}]", x.dtype, x.shape[1:])
        else:
            length = len(range(n)[start:stop:step])
            g.emit(f"{x.name}[{start}:{stop}:{step}]", x.dtype, (length,) + x.shape[1:])
    elif family == "advanced":
        if not x.shape or x.shape[0] == 0:
            return
        n = x.shape[0]
        idx = [int(i) for i in rng.integers(-n, n, int(rng.integers(1, 4)))]
        g.emit(f"{x.name}[np.array({idx}, dtype='int64')]", x.dtype, (len(idx),) + x.shape[1:])
    elif family == "setinc":
        if not x.shape:
            return
        n = x.shape[0]
        fn = str(rng.choice(["set_subtensor", "inc_subtensor"]))
        if rng.random() < 0.5 and n > 0:
            idx = [int(i) for i in rng.integers(-n, n, int(rng.integers(1, 4)))]
            if fn == "set_subtensor":
                idx = list(dict.fromkeys(i % n for i in idx))  # repeated set indices: documented as undefined
            target, sub = f"{x.name}[np.array({idx}, dtype='int64')]", (len(idx),) + x.shape[1:]
        else:
            start, stop = (int(v) for v in rng.integers(-n - 1, n + 2, 2))
            target, sub = f"{x.name}[{start}:{stop}]", (len(range(n)[start:stop]),) + x.shape[1:]
        y = g.pick(lambda v: _broadcast(v.shape, sub) == sub and len(v.shape) <= len(sub)
                   and np.can_cast(v.dtype, x.dtype, "same_kind"))
        if y is None:
            y = g.new_input(dtype=x.dtype, shape=sub[int(rng.integers(0, len(sub) + 1)):])
        g.emit(f"pt.{fn}({target}, {y.name})", x.dtype, x.shape)
    elif family == "dot":
        if x.dtype not in FLOATS or not x.shape or len(x.shape) > 2 or len(g.prog.inputs) >= 4:
            return
        k = int(rng.integers(0, 4))
        w = g.new_input(dtype=x.dtype, shape=(x.shape[-1], k) if rng.random() < 0.7 else (x.shape[-1],))
        shape = x.shape[:-1] + w.shape[1:]
        g.emit(f"pt.dot({x.name}, {w.name})", x.dtype, shape)
    elif family == "softmax":
        if x.dtype not in FLOATS or not x.shape:
            return
        axis = int(rng.integers(0, len(x.shape)))
        fn = str(rng.choice(["softmax", "log_softmax"]))
        g.emit(f"pt.special.{fn}({x.name}, axis={axis})", x.dtype, x.shape)


def generate(seed: int, max_steps: int = 6) -> Program:
    """A random program from ``seed`` (deterministic): 1-4 inputs and
    1..``max_steps`` steps."""
    g = _Gen(seed)
    g.new_input()
    target = int(g.rng.integers(1, max_steps + 1))
    for _ in range(target * 4):
        if g.count >= target:
            break
        try:
            _step(g)
        except (ValueError, IndexError):
            continue
    return g.prog
