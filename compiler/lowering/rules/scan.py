"""Lowering of PyTensor's ``Scan`` (``pytensor.scan.op.Scan``, 2.38 and
3.0) to the IR ``loop`` (``ir/ops/control_flow.py``).

Semantics are ``Scan.perform``. Outer inputs, per ``Scan.info``: the step
count ``n``, the sequences (one per tap: ``scan()`` slices a sequence in the
outer graph for each tap, and reverses it there for ``go_backwards``), the
buffers of the mit-sot and sit-sot outputs (the initial states in their
first ``m = -min(taps)`` rows), the initial values of the untraced sit-sots
(PyTensor 3 turns a sit-sot whose trace is unused into one; shared-variable
updates are others), the sizes of the nit-sot outputs, and the
non-sequences. Step ``i`` reads row ``i`` of each sequence and tap ``t`` of a
state output as the value ``-t`` steps back, and stops early, for a while
scan (``until``), after the step whose condition is true.

The loop carries, for a state with ``m`` taps, its ``m`` latest values (a
shift register: tap ``t`` reads register ``m + t``) and each untraced state;
sequences and non-sequences are invariant inputs, and the body reads row
``i`` of a sequence with ``gather``. A Scan output of ``S`` rows is what
``Scan.perform`` leaves in its buffer (``_final_rows``), given the full
trace ``F`` (the ``m`` initial rows, then one row per step run): the last
``S`` rows of ``F`` when ``S`` is at most its length (PyTensor writes a
buffer shorter than ``F`` circularly and rotates it at the end;
``scan_save_mem`` shrinks buffers so), else ``F`` and rows of zeros (the
sequence gradients of a backward scan that ``truncate_gradient``
shortened), less the steps a while scan did not run. A buffer of ``n + m``
rows (what ``scan()`` builds) gives all of ``F``, also when a while scan
stopped early. The loop stacks a state's values per step only when ``S``
is not statically at most ``m``; otherwise the output comes from the final
registers. A nit-sot output is likewise ``_final_rows`` of its stacked
values (``m = 0``).

Bookkeeping around a scan stays ordinary IR: the ``AllocEmpty`` +
``IncSubtensor`` that build a buffer are looked through when they only place
the initial state (the initial rows are then read from the placed value, and
the buffer's IR goes dead), and the ``Subtensor`` that strips the initial
rows or keeps the last step is lowered as any other. Mit-mot outputs (what
``grad`` of a scan builds: the backward scan reads and accumulates rows of
one buffer) carry their whole buffer through the loop: the body gathers the
rows it reads and ``scatter_nd`` writes the rows it produces (``_MitMot``).
Random draws in the body (``rules/random.py``): under ``random="key"`` a
generator is its key, so an untraced generator state (the RNG a body draws
from with its update) is carried through the ``Loop`` and a generator
non-sequence is an invariant (its draws repeat at every step, as in
PyTensor). Under the other policies a generator non-sequence
or untraced state has no IR value; the body's draws map their inner generator to the outer
one (``LoweringRecord.rng_sources``, for the ``random="onnx"`` seeds) and
the scan's next-generator output is None (models are stateless). Under
``random="onnx"`` the draws are ONNX random nodes inside the loop (a new
draw at every step: the node's generator advances per execution); under
``random="inputs"`` each draw's noise is an input of the enclosing graph
with a leading step axis, ``(n_steps, *draw dims)`` (``_NoiseRows``), and
step ``i`` reads row ``i``. Unsupported (named in the error): a generator
as a sequence or traced state, and other non-tensor state.

A carried state starting from a shared variable is computed inside the loop
exactly as PyTensor computes it, but an exported model cannot write the
final value back to the variable (models are stateless; a compiled
function's updates are not exported): lowering warns, naming the scan, the
variable and the source line (``SharedStateWarning``).
"""

from __future__ import annotations

import warnings

import numpy as np
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.traversal import io_toposort
from pytensor.scan.op import Scan
from pytensor.scalar import basic as ps
from pytensor.tensor.basic import NotScalarConstantError, get_underlying_scalar_constant_value
from pytensor.tensor.basic import ScalarFromTensor, TensorFromScalar
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.random.type import RandomType
from pytensor.tensor.shape import Shape, Shape_i
from pytensor.tensor.subtensor import IncSubtensor, Subtensor

from compiler.lowering.errors import Unsupported
from compiler.lowering.bodies import Body
from compiler.lowering.context import KEY_TYPE, LoweringContext, ir_type
from compiler.lowering.lower import branch_only
from compiler.lowering.registry import lowers
from compiler.lowering.rules.assertions import first_failing_step, keep_assertion
from compiler.lowering.rules.indexing import int64_scalar, int64_vector, node_index
from compiler.lowering.rules.random_key import valueless_generator
from ir import DType, TensorType, Value
from ir.types import join_dims

INT64, BOOL = DType.INT64, DType.BOOL
INT64_MAX = np.iinfo(np.int64).max


class SharedStateWarning(UserWarning):
    """A scan carries a state that starts from a shared variable: the model
    computes it, but does not update the variable (see the module docstring)."""


@lowers(Scan)
def lower_scan(ctx: LoweringContext, node) -> list[Value]:
    """Lower a ``Scan`` Apply node to a ``loop`` plus the outer IR that
    turns its results into the Scan's outputs (see the module docstring).

    Returns:
        One IR value per Scan output: mit-mots, mit-sots, sit-sots,
        nit-sots, then untraced sit-sots (``Scan.perform``'s order).

    Raises:
        Unsupported: non-tensor inputs other than a generator non-sequence
            or untraced state, or inner ops without a lowering (listed with
            their source lines).
    """
    op, info = node.op, node.op.info
    n_states = info.n_mit_sot + info.n_sit_sot
    layout = [info.n_seqs, info.n_mit_mot, n_states, info.n_untraced_sit_sot, info.n_nit_sot]
    seqs, mit_mot_bufs, buffers, untraced, nit_sizes = _split(node.inputs[1:], layout)
    non_seqs = node.inputs[1 + sum(layout):]
    generators = set(untraced) | set(non_seqs)
    for v in node.inputs:
        if not hasattr(v.type, "dtype") and not (isinstance(v.type, RandomType) and v in generators):
            raise Unsupported(f"scan reading {v} of type {v.type} (non-tensor state other than a random "
                              f"generator non-sequence or untraced state)")
    all_taps = [tuple(t) for t in info.mit_sot_in_slices + info.sit_sot_in_slices]
    n_var = node.inputs[0]
    n = ctx.cast(ctx.get(n_var), INT64)
    body = Body(ctx, "scan")
    i = body.input(TensorType(INT64, ()), "i")

    inner_in = list(op.inner_inputs)
    inner_seqs, inner_taps = inner_in[:info.n_seqs], inner_in[info.n_seqs:]
    mit_mots = []
    for buf, in_taps, out_taps in zip(mit_mot_bufs, info.mit_mot_in_slices, info.mit_mot_out_slices):
        mit_mots.append(_MitMot(ctx, body, buf, i, tuple(in_taps), tuple(out_taps), inner_taps[:len(in_taps)]))
        inner_taps = inner_taps[len(in_taps):]
    states = []
    for buf, taps in zip(buffers, all_taps):
        states.append(_State(ctx, body, buf, taps, inner_taps[:len(taps)], n_var, node))
        inner_taps = inner_taps[len(taps):]
    inner_untraced, inner_non_seqs = inner_taps[:info.n_untraced_sit_sot], inner_taps[info.n_untraced_sit_sot:]

    carried_init = [ctx.get(mm.buffer) for mm in mit_mots] + [r for st in states for r in st.init_registers]
    for outer, inner in zip(untraced + non_seqs, inner_untraced + inner_non_seqs):
        if isinstance(outer.type, RandomType):
            ctx.record.rng_sources[inner] = outer
    for outer, inner in zip(untraced, inner_untraced):
        if valueless_generator(ctx, outer):
            continue
        key = isinstance(outer.type, RandomType)  # random="key": the generator's key is carried
        if not key:
            _warn_if_shared(outer, node, ctx)
        carried_init.append(ctx.get(outer))
        body.ctx.values[inner] = body.input(KEY_TYPE if key else ir_type(inner), inner.name or "state")

    tensor_non_seqs = [(v, inner) for v, inner in zip(non_seqs, inner_non_seqs) if not valueless_generator(ctx, v)]
    invariant = [ctx.get(v) for v in seqs] + [ctx.get(v) for v, _ in tensor_non_seqs]
    invariant_in = [body.input(v.type, v.name or "seq") for v in invariant[:len(seqs)]]
    invariant_in += [body.input(ctx.get(v).type, v.name or "arg") for v, _ in tensor_non_seqs]
    for inner, seq_in in zip(inner_seqs, invariant_in):
        body.ctx.values[inner] = body.ctx.add("gather", [seq_in, i], {"axis": 0}, name=inner.name)
    body.ctx.values.update(zip([inner for _, inner in tensor_non_seqs], invariant_in[len(seqs):]))
    noise = _NoiseRows(ctx, body, i, n_var)
    body.ctx.noise_source = noise.provide

    inner_out = list(op.inner_outputs)
    tensor_out = [v for v in inner_out if not valueless_generator(ctx, v)]
    checks: list = []  # (bool scalar, AssertionOutput) per assertion of the body, assertions="raise"
    if ctx.options.assertions == "raise":
        body.ctx.assertion_sink = checks
        body.ctx.branch_only = branch_only(io_toposort(inner_in, tensor_out), tensor_out)
    lowered = iter(body.lower(inner_in, tensor_out, f"scan body of {op}"))
    results = [None if valueless_generator(ctx, v) else next(lowered) for v in inner_out]
    new_buffers = []
    for mm in mit_mots:
        new_buffers.append(mm.write(body, i, results[:len(mm.out_taps)]))
        results = results[len(mm.out_taps):]
    new_states, rest = results[:n_states], results[n_states:]
    nit_out, untraced_out = rest[:info.n_nit_sot], rest[info.n_nit_sot:info.n_nit_sot + info.n_untraced_sit_sot]
    condition = []
    if info.as_while:
        until = results[-1]
        if until.rank != 0:
            raise Unsupported(f"scan until-condition of rank {until.rank} (must be a scalar)")
        go_on = (body.ctx.add("invert", [until]) if until.dtype == BOOL
                 else body.ctx.add("eq", [until, body.ctx.scalar(0, until.dtype)]))
        condition = [go_on]

    carried_out: list[Value] = list(new_buffers)
    for st, new in zip(states, new_states):
        carried_out += st.registers[1:] + [new]
    carried_out += [v for v, outer in zip(untraced_out, untraced) if not valueless_generator(ctx, outer)]
    stacked = [new for st, new in zip(states, new_states) if st.stacked] + nit_out + [c for c, _ in checks]
    graph = body.finish(condition + carried_out + stacked)

    loop = ctx.graph.create_node("loop", [n, *carried_init, *invariant, *noise.outer],
                                 {"num_carried": len(carried_init), "has_condition": bool(info.as_while)},
                                 subgraphs={"body": graph})
    loop.origins = ctx.origins
    ctx.graph.append(loop)
    finals, traces = loop.outputs[:len(carried_init)], list(loop.outputs[len(carried_init):])
    if checks:  # each assertion's per-step flags, reduced so that PyTensor's error is the first one raised
        traces, flags = traces[:-len(checks)], traces[-len(checks):]
        for (_, assertion), flag in zip(checks, first_failing_step(ctx, flags)):
            keep_assertion(ctx, node, [flag], assertion)

    steps = (ctx.add("gather", [ctx.add("shape", [traces[0]]), ctx.scalar(0, INT64)], {"axis": 0})
             if info.as_while and traces else n)
    stop_n = n if info.as_while else None  # a while scan trims what it did not run
    outputs = list(finals[:len(mit_mots)])  # a mit-mot output is its whole buffer
    finals = finals[len(mit_mots):]
    for st in states:
        regs, finals = finals[:len(st.registers)], finals[len(st.registers):]
        outputs.append(st.output(ctx, regs, traces.pop(0) if st.stacked else None, steps, stop_n))
    for size, y in zip(nit_sizes, traces):
        whole = _same(size, n_var)  # what scan() builds; a while loop's shorter trace too
        outputs.append(y if whole else _final_rows(ctx, y, 0, ctx.cast(ctx.get(size), INT64), steps, stop_n))
    finals = iter(finals)  # untraced states; a valueless generator's is None
    outputs += [None if valueless_generator(ctx, v) else next(finals) for v in untraced]
    return outputs


class _NoiseRows:
    """The noise inputs of the draws in one scan body under
    ``random="inputs"`` (``rules/random.py``): each is made in the
    enclosing graph (by the caller's ``create``, so nested scans stack
    their step axes, outermost first) with a leading axis of the step count
    (its constant value, else a named dim), passed to the loop as an
    invariant input, and read at step ``i`` as row ``i`` (``gather``: the
    draw's dims). A while scan that stops early leaves the later rows
    unread.

    Attributes:
        outer: the enclosing graph's noise values, in the order of their
            body inputs (after the other invariant inputs).
    """

    def __init__(self, ctx: LoweringContext, body: Body, i: Value, n_var):
        self._ctx, self._body, self._i = ctx, body, i
        self._steps = _constant_int(ctx, n_var)
        self.outer: list[Value] = []

    def provide(self, known: tuple, create) -> Value:
        """One step's noise of dims ``known`` in the body (see the class)."""
        outer = create(self._ctx, (self._steps, *known))
        self.outer.append(outer)
        inner = self._body.input(outer.type, outer.name)
        return self._body.ctx.add("gather", [inner, self._i], {"axis": 0})


class _MitMot:
    """One mit-mot output (``grad`` of a scan builds them: the backward
    scan accumulates gradients into rows it reads on later steps): its
    whole buffer is a carried value.

    ``Scan.perform`` (``pytensor/scan/op.py``) keeps a position per output,
    ``pos = (-mintaps + i) % S`` at step ``i`` for an ``S``-row buffer
    (``Scan.mintaps`` is ``min(in_taps)``; "The current position of each
    output", advanced by ``pos = (pos + 1) % store``). Step ``i`` reads tap
    ``t`` at row ``(pos + t) % S`` and, after the step, writes out-tap
    ``o``'s value at ``output[pos + o]``: no modulo, so NumPy's negative
    indices wrap and a row past the end raises. Both are row
    ``(i - min(in_taps) + o) % S`` wherever PyTensor runs (``_row``), for
    any taps, negative or positive, and any ``S``; reads come before
    writes, and out-taps are written in their order. Unlike the other
    outputs, a mit-mot buffer is neither rotated nor zero-filled at the
    end: the Scan's output is the buffer after the last step (the input
    buffer itself when no step runs). The gather/scatter rows are written
    once, in the loop body; ``scan-unroll`` copies them per step, where
    the constant step number folds them.

    Taps PyTensor builds: the first gradient of a sit-sot reads
    ``(0, 1)`` and writes ``(1,)``; a second derivative's scan reads
    ``(-1, 0)`` and writes ``(0, -1)`` (``pos`` starts at row 1); of a
    mit-sot ``(-3, -1)``, ``(0, 3, 1)`` / ``(3, 1)`` then ``(-3, -1, 0)`` /
    ``(0, -3, -1)``.

    Attributes:
        buffer: the outer buffer (PyTensor variable).
        in_taps, out_taps: ``Scan.info.mit_mot_in_slices`` and ``..._out_slices`` entries.
        carried: the body input holding the buffer.
        start: ``-min(in_taps)``, the unreduced position of step 0.
    """

    def __init__(self, ctx: LoweringContext, body: Body, buf, i: Value, in_taps: tuple, out_taps: tuple,
                 inner_taps: list):
        self.buffer, self.in_taps, self.out_taps = buf, in_taps, out_taps
        self.carried = body.input(ctx.get(buf).type, buf.name or "mit_mot")
        self.start = -min(in_taps)
        b = body.ctx
        self._rows = b.add("gather", [b.add("shape", [self.carried]), b.scalar(0, INT64)], {"axis": 0})
        for t, inner in zip(in_taps, inner_taps):
            b.values[inner] = b.add("gather", [self.carried, self._row(b, i, t)], {"axis": 0}, name=inner.name)

    def _row(self, b: LoweringContext, i: Value, tap: int) -> Value:
        """The buffer row tap ``tap`` reads or writes at step ``i``: ``(i + start + tap) % S``."""
        shift = self.start + tap
        return b.add("mod", [b.add("add", [i, b.scalar(shift, INT64)]) if shift else i, self._rows])

    def write(self, body: Body, i: Value, values: list[Value]) -> Value:
        """The buffer after the step: each out-tap's row set to its value, in tap order."""
        b, buf = body.ctx, self.carried
        for o, value in zip(self.out_taps, values):
            index = b.add("unsqueeze", [self._row(b, i, o)], {"axes": [0, 1]})
            buf = b.add("scatter_nd", [buf, index, b.add("unsqueeze", [b.cast(value, buf.dtype)], {"axes": [0]})])
        return buf


def _split(values, counts: list[int]) -> list[list]:
    """``values`` cut into consecutive lists of the given lengths."""
    out, pos = [], 0
    for c in counts:
        out.append(list(values[pos:pos + c]))
        pos += c
    return out


class _State:
    """One mit-sot or sit-sot output: its initial rows, registers and size.

    Attributes:
        m: ``-min(taps)``, the number of registers (the initial rows).
        rows: the ``m`` initial rows (an IR value of the outer graph).
        init_registers: the registers' initial values (outer graph).
        registers: the body inputs holding them, oldest first.
        buffer, size_var: the buffer (PyTensor) and the variable of its row
            count ``S`` when the buffer is built by ``scan()``'s pattern.
        full: ``S`` is provably ``n + m`` (the output is the whole trace).
        static_size: ``S`` when constant.
        stacked: whether the loop stacks this state's per-step values (not
            when ``S <= m``: the final registers hold the output).
    """

    def __init__(self, ctx: LoweringContext, body: Body, buf, taps: tuple, inner_taps: list, n_var, node):
        if any(t >= 0 for t in taps):
            raise Unsupported(f"scan output taps {list(taps)} (state taps must be negative)")
        self.m = m = -min(taps)
        self.buffer = buf
        placed = _placed_initial_rows(ctx, buf, m)
        first = None
        if placed is not None:
            self.rows, value, self.size_var = placed
            _warn_if_shared(value, node, ctx)
            if m == 1 and self.rows is ctx.get(value):
                first = _unpadded(value)  # the state itself, not its one-row stack
        else:
            value, self.size_var = None, None
            self.rows = ctx.add("slice", [ctx.get(buf), ctx.i64([0]), ctx.i64([m]), ctx.i64([1])], {"axes": [0]})
        self.full = self.size_var is not None and _is_steps_plus(ctx, self.size_var, n_var, m, value)
        self.static_size = _constant_int(ctx, self.size_var)
        if self.static_size is None and isinstance(ctx.get(buf).shape[0], int):
            self.static_size = ctx.get(buf).shape[0]
        self.stacked = not (self.static_size is not None and self.static_size <= m)

        inner_type = ir_type(inner_taps[0])
        row = TensorType(self.rows.dtype, tuple(join_dims(a, b) for a, b in zip(self.rows.shape[1:], inner_type.shape)))
        if first is not None:
            self.init_registers = [ctx.get(first)]
        else:
            self.init_registers = [ctx.add("gather", [self.rows, ctx.scalar(r, INT64)], {"axis": 0})
                                   for r in range(m)]
        self.registers = [body.input(row, inner_taps[-1].name or "state") for _ in range(m)]
        for t, inner in zip(taps, inner_taps):
            body.ctx.values[inner] = self.registers[m + t]

    def output(self, ctx: LoweringContext, finals: list[Value], trace: Value | None, steps: Value,
               n: Value | None) -> Value:
        """The Scan output (outer graph): ``_final_rows`` of the initial rows
        followed by ``trace`` (the stacked per-step values; None when not
        stacked), given the final registers, the number of steps run and,
        for a while scan, its step count ``n``."""
        if trace is None:  # S <= m: the last S registers
            rows = [ctx.add("unsqueeze", [r], {"axes": [0]}) for r in finals[self.m - self.static_size:]]
            return rows[0] if len(rows) == 1 else ctx.add("concat", rows, {"axis": 0})
        if not all(isinstance(d, (int, str)) for d in trace.shape[1:]):
            # a loop that ran no step stacks (0, 0, ...) where a step's dims are unknown
            row_shape = ctx.add("slice", [ctx.add("shape", [self.rows]), ctx.i64([1]), ctx.i64([INT64_MAX]),
                                          ctx.i64([1])], {"axes": [0]})
            trace = ctx.add("reshape", [trace, ctx.add("concat", [ctx.i64([-1]), row_shape], {"axis": 0})])
        full = ctx.add("concat", [self.rows, trace], {"axis": 0})
        if self.full:
            return full
        size = (ctx.cast(ctx.get(self.size_var), INT64) if self.size_var is not None else
                ctx.add("gather", [ctx.add("shape", [ctx.get(self.buffer)]), ctx.scalar(0, INT64)], {"axis": 0}))
        return _final_rows(ctx, full, self.m, size, steps, n)


def _final_rows(ctx, full: Value, m: int, size: Value, steps: Value, n: Value | None = None) -> Value:
    """What ``Scan.perform`` returns for a mit-sot, sit-sot or nit-sot
    buffer of ``S`` rows (``size``), given the output's trace ``full``: its
    ``m`` initial rows, then one row per step run (``L = m + steps`` rows);
    ``n`` is a while scan's step count (None for other scans).

    * ``S <= L``: the last ``S`` rows (the buffer is written circularly and
      rotated at the end: "Check if you need to re-order output buffers");
    * ``S > L``: the ``L`` rows, then ``S - L`` rows of zeros
      (``output[i - mintaps:] = 0``: the sequence gradients of a backward
      scan that ``truncate_gradient`` shortened keep the forward length);
      a while scan that stopped after ``steps < n`` then drops its last
      ``n - steps`` rows (``output[:-(n_steps - i)]``).

    A buffer of ``n + m`` rows, what ``scan()`` builds, gives the ``L``
    rows in both cases. When no step runs, ``Scan.perform`` returns the
    buffer unchanged: its rows past ``m`` are ``AllocEmpty``'s (unset)
    memory in the buffers ``scan()`` builds, zeros here."""
    if size.const is not None and steps.const is not None and n is None:
        length, rows = m + int(steps.const), int(size.const)
        if rows <= length:
            start = length - rows
            return full if start == 0 else ctx.add("slice", [full, ctx.i64([start]), ctx.i64([INT64_MAX]),
                                                             ctx.i64([1])], {"axes": [0]})
    zero = ctx.scalar(0, INT64)
    length = ctx.add("add", [steps, ctx.scalar(m, INT64)]) if m else steps
    pad = ctx.add("maximum", [ctx.add("sub", [size, length]), zero])
    row_shape = ctx.add("slice", [ctx.add("shape", [full]), ctx.i64([1]), ctx.i64([INT64_MAX]), ctx.i64([1])],
                        {"axes": [0]})
    zeros = ctx.add("expand", [ctx.scalar(0, full.dtype),
                               ctx.add("concat", [ctx.add("unsqueeze", [pad], {"axes": [0]}), row_shape],
                                       {"axis": 0})])
    padded = ctx.add("concat", [full, zeros], {"axis": 0})
    start = ctx.add("maximum", [ctx.add("sub", [length, size]), zero])
    stop = ctx.i64([INT64_MAX])
    if n is not None:
        trimmed = ctx.add("sub", [size, ctx.add("sub", [n, steps])])
        stop = ctx.add("unsqueeze", [ctx.add("where", [ctx.add("gt", [size, length]), trimmed,
                                                       ctx.scalar(INT64_MAX, INT64)])], {"axes": [0]})
    return ctx.add("slice", [padded, ctx.add("unsqueeze", [start], {"axes": [0]}), stop, ctx.i64([1])],
                   {"axes": [0]})


def _placed_initial_rows(ctx, buf, m: int):
    """``(rows, value, size)`` when ``buf`` is ``IncSubtensor{set}(AllocEmpty(size,
    *row_shape), value, [:stop])``, how ``scan()`` builds a state's buffer.
    The ``m`` initial rows are then ``value[:m]`` broadcast to ``(m,
    *row_shape)`` (NumPy assignment; ``value`` itself when its type shows no
    broadcasting), assuming ``value`` fills rows ``[0, m)`` (rows it left
    unset would be uninitialized memory in PyTensor). Else None."""
    owner = buf.owner
    if owner is None or not isinstance(owner.op, IncSubtensor) or not owner.op.set_instead_of_inc:
        return None
    alloc = owner.inputs[0].owner
    if alloc is None or type(alloc.op).__name__ != "AllocEmpty":
        return None
    index = node_index(owner, 2)
    value = owner.inputs[1]
    if len(index) != 1 or not isinstance(index[0], slice) or index[0].start is not None or index[0].step is not None:
        return None
    rows = ctx.get(value)
    if value.type.ndim == buf.type.ndim and value.type.shape[0] != m and not _is_head(rows, m):
        rows = ctx.add("slice", [rows, ctx.i64([0]), ctx.i64([m]), ctx.i64([1])], {"axes": [0]})
    exact = value.type.ndim == buf.type.ndim and value.type.shape[0] in (m, None) and not any(
        v == 1 and b != 1 for v, b in zip(value.type.shape[1:], buf.type.shape[1:]))
    if not exact:
        shape = int64_vector(ctx, [m] + [int64_scalar(ctx, d) for d in alloc.inputs[1:]])
        rows = ctx.add("expand", [rows, shape])
    return rows, value, alloc.inputs[0]


def _is_head(value: Value, m: int) -> bool:
    """Whether IR ``value`` is already ``x[:m]`` (a ``slice`` of axis 0)."""
    node = value.producer
    if node is None or node.op != "slice" or node.attrs["axes"] != (0,):
        return False
    bounds = [v.const for v in node.inputs[1:]]
    return all(b is not None for b in bounds) and [int(b[0]) for b in bounds] == [0, m, 1]


def _is_row_count(var, of) -> bool:
    """Whether ``var`` is ``of.shape[0]`` (``Shape_i{0}`` or ``Shape(of)[0]``)."""
    owner = _strip(var).owner
    if owner is None:
        return False
    if isinstance(owner.op, Shape_i):
        return owner.op.i == 0 and owner.inputs[0] is of
    if isinstance(owner.op, Subtensor) and owner.inputs[0].owner is not None:
        shape = owner.inputs[0].owner
        index = node_index(owner, 1)
        return (isinstance(shape.op, Shape) and shape.inputs[0] is of and len(index) == 1
                and not isinstance(index[0], slice) and _constant_int(None, index[0]) == 0)
    return False


def _unpadded(var):
    """The state ``x`` when ``var`` is ``x`` with a new leading axis (a
    DimShuffle ``('x', 0, 1, ...)``), else None."""
    owner = var.owner
    if owner is not None and isinstance(owner.op, DimShuffle):
        order = tuple(owner.op.new_order)
        if order == ("x",) + tuple(range(owner.inputs[0].type.ndim)):
            return owner.inputs[0]
    return None


def _constant_int(ctx, var) -> int | None:
    """The value of an integer scalar variable when it is constant (a
    PyTensor constant, an IR constant, or what PyTensor can fold), else None."""
    if var is None:
        return None
    if isinstance(var, (int, np.integer)):
        return int(var)
    value = ctx.constant_value(var) if ctx is not None else None
    if value is not None and np.ndim(value) == 0:
        return int(value)
    try:
        return int(get_underlying_scalar_constant_value(var))
    except (NotScalarConstantError, TypeError, ValueError):
        return None


def _strip(var):
    """``var`` without scalar/tensor conversions around it."""
    while var.owner is not None and isinstance(var.owner.op, (ScalarFromTensor, TensorFromScalar)):
        var = var.owner.inputs[0]
    return var


def _same(a, b) -> bool:
    return _strip(a) is _strip(b)


def _is_steps_plus(ctx, size_var, n_var, m: int, value) -> bool:
    """Whether ``size_var`` is provably ``n_var + m``: both constant, or an
    ``Add`` of ``n_var`` and ``m`` (a constant, or the row count of the
    placed initial ``value``, which holds the ``m`` initial rows)."""
    s, n = _constant_int(ctx, size_var), _constant_int(ctx, n_var)
    if s is not None and n is not None:
        return s == n + m
    owner = _strip(size_var).owner
    if owner is None or not isinstance(owner.op, Elemwise) or not isinstance(owner.op.scalar_op, ps.Add):
        return False
    if len(owner.inputs) != 2:
        return False

    def is_m(v) -> bool:
        return _constant_int(ctx, v) == m or _is_row_count(v, value)

    a, b = owner.inputs
    return (_same(a, n_var) and is_m(b)) or (_same(b, n_var) and is_m(a))


def _warn_if_shared(var, node, ctx: LoweringContext) -> None:
    """Warn (``SharedStateWarning``) when ``var`` is, up to reshaping and
    slicing, a shared variable."""
    while not isinstance(var, SharedVariable) and var.owner is not None and isinstance(
            var.owner.op, (DimShuffle, Subtensor, ScalarFromTensor, TensorFromScalar)):
        var = var.owner.inputs[0]
    if isinstance(var, SharedVariable):
        where = f" at {ctx.source}" if ctx.source else ""
        warnings.warn(f"{node.op}{where} carries a state starting from shared variable {var.name or var!r}: "
                      f"the model computes it as PyTensor does, but does not write its final value back "
                      f"to the variable (shared-variable updates are not exported)",
                      SharedStateWarning, stacklevel=2)
