"""Seeded random scans and their nested gradients: the fuzzer's
``scan-grad`` family (``generate_scan_grad``; ``fuzz(..., family="scan-grad")``,
``pytensor-onnx fuzz --family scan-grad``).

A program is the same straight-line source as ``generate.py``'s (a
``Program``): one ``pytensor.scan`` of a random step function, a scalar
loss of its outputs, then 1-3 nested ``pytensor.grad``\\ s of it in one
float input, and the output concatenating the loss and every derivative.
Each order of gradient adds a backward scan whose mit-mot outputs read and
write rows on both sides of the current step (``Scan.L_op``), so the family
exercises every mit-mot tap pattern ``grad`` builds
(``compiler/lowering/rules/scan.py: _MitMot``).

Random parts, all float64 (the derivatives of a chain of steps are held to
the fuzzer's float64 bound):

- the row shape shared by states, sequence rows and parameters: a scalar
  or a vector of 2-3 elements, its length static or symbolic;
- 1-2 states, each a sit-sot (tap -1) or a mit-sot of 2-3 taps out of
  -1..-4, gaps allowed;
- 0-1 sequences reading 1-3 taps out of -2..1, and 0-1 non-sequences;
- the steps: 1-6, a constant (``scan-unroll`` unrolls the model's loop),
  the length of a sequence with a static or a symbolic length, or a
  symbolic int64 input (a ``Loop``);
- each state's update: ``tanh``/``sin`` of a random expression of what the
  step reads (sums, products, ``sin``, ``cos``, ``tanh``, constants; the
  first state's also adds every value the step reads, so that every input
  reaches the loss), or the newest value plus a scaled one (bounded,
  smooth: derivatives of every order exist);
- the loss: the last row, the sum of squares of the trace, or its last two
  rows, per state; the gradient: of order 1-3, in an initial state, the
  sequence or the non-sequence.
"""

from __future__ import annotations

import numpy as np

from compiler.tools.fuzz.generate import Program

UNARY = ["pt.sin({})", "pt.cos({})", "pt.tanh({})", "0.5 * {}", "({}) * ({})"]


def _expression(rng: np.random.Generator, names: list[str], depth: int) -> str:
    """A random smooth expression of ``names`` (elementwise, broadcasting)."""
    if depth == 0 or rng.random() < 0.25:
        leaf = str(rng.choice(names))
        return leaf if rng.random() < 0.7 else f"{float(np.round(rng.uniform(-1, 1), 2))} * {leaf}"
    form = str(rng.choice(UNARY + ["({} + {})", "({} - {})"]))
    if form.count("{}") == 1:
        return form.format(_expression(rng, names, depth - 1))
    return form.format(_expression(rng, names, depth - 1), _expression(rng, names, depth - 1))


def _taps(rng: np.random.Generator, pool: list[int], low: int, high: int) -> list[int]:
    return sorted(int(t) for t in rng.choice(pool, size=int(rng.integers(low, high + 1)), replace=False))


def generate_scan_grad(seed: int, max_steps: int = 6, max_order: int = 3) -> Program:
    """A random scan and its nested gradients from ``seed`` (deterministic;
    see the module docstring). ``max_steps`` bounds the number of steps,
    ``max_order`` the order of the gradient."""
    rng = np.random.default_rng(seed)
    prog = Program(seed=seed)
    row = () if rng.random() < 0.5 else (int(rng.integers(2, 4)),)
    row_static = tuple(d if rng.random() < 0.5 else None for d in row)
    steps = int(rng.integers(1, max(max_steps, 1) + 1))

    def new_input(shape: tuple, static: tuple, data: np.ndarray | None = None, dtype: str = "float64") -> str:
        name = f"x{len(prog.inputs)}"
        if data is None:
            data = rng.normal(0, 0.5, shape).astype(dtype)
        prog.inputs.append((name, dtype, static, data))
        return name

    states, args, outputs_info = [], [], []
    for s in range(int(rng.integers(1, 3))):
        taps = [-1] if rng.random() < 0.5 else _taps(rng, [-1, -2, -3, -4], 2, 3)
        if taps == [-1]:
            init = new_input(row, row_static)
            outputs_info.append(init)
        else:
            m = -taps[0]
            init = new_input((m, *row), (m, *row_static))
            outputs_info.append(f"dict(initial={init}, taps={taps})")
        states.append((init, taps))
        args += [f"s{s}_{-t}" for t in taps]
    sequence = None
    if rng.random() < 0.5:
        taps = _taps(rng, [-2, -1, 0, 1], 1, 3)
        length = steps + taps[-1] - taps[0]
        static_length = length if rng.random() < 0.5 else None
        sequence = (new_input((length, *row), (static_length, *row_static)), taps)
        args = [f"q_{t + 2}" for t in taps] + args
    non_sequence = None
    if rng.random() < 0.5:
        non_sequence = new_input(row, row_static)
        args.append("w")

    updates = []
    for s, (_, taps) in enumerate(states):
        newest = f"s{s}_{-taps[-1]}"
        body = _expression(rng, args, int(rng.integers(1, 4)))
        if s == 0:  # every input reaches the loss
            body = f"{body} + 0.1 * ({' + '.join(args)})"
        if rng.random() < 0.5:
            updates.append(f"pt.tanh({body})" if rng.random() < 0.5 else f"pt.sin({body})")
        else:
            updates.append(f"{newest} + 0.3 * pt.tanh({body})")
    kwargs = [f"outputs_info=[{', '.join(outputs_info)}]"]
    if sequence is not None:
        kwargs.insert(0, f"sequences=[dict(input={sequence[0]}, taps={sequence[1]})]")
    if non_sequence is not None:
        kwargs.append(f"non_sequences=[{non_sequence}]")
    if sequence is None:
        if rng.random() < 0.5:
            kwargs.append(f"n_steps={steps}")
        else:
            kwargs.append(f"n_steps={new_input((), (), np.array(steps, np.int64), 'int64')}")
    result = "[" + ", ".join(updates) + "]" if len(updates) > 1 else updates[0]
    lines = [f"v0 = pytensor.scan(lambda {', '.join(args)}: {result}, {', '.join(kwargs)}, return_updates=False)"]
    traces = ["v0"] if len(states) == 1 else [f"v0[{s}]" for s in range(len(states))]
    losses = []
    for trace in traces:
        losses.append(str(rng.choice([f"{trace}[-1].sum()", f"0.5 * ({trace} ** 2).sum()", f"{trace}[-2:].sum()"])))
    lines.append(f"v1 = {' + '.join(losses)}")
    candidates = [init for init, _ in states] + ([sequence[0]] if sequence else []) + (
        [non_sequence] if non_sequence else [])
    wrt = str(rng.choice(candidates))
    order = int(rng.integers(1, max(max_order, 1) + 1))
    parts = ["pt.atleast_1d(v1)"]
    for k in range(order):
        of = "v1" if k == 0 else (f"v{k + 1}.sum()" if rng.random() < 0.5 else f"(v{k + 1} ** 2).sum()")
        lines.append(f"v{k + 2} = pytensor.grad({of}, {wrt}, disconnected_inputs='ignore')")
        parts.append(f"v{k + 2}.flatten()")
    lines.append(f"v{order + 2} = pt.concatenate([{', '.join(parts)}])")
    prog.lines = lines
    return prog
