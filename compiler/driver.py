"""``compile_to_onnx``: lower a PyTensor graph to IR, run passes, emit ONNX.

The driver owns the one hook that runs between passes: it verifies the IR,
records timing and IR text, and writes ``dump_ir`` files. Passes do none of
that themselves.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx

from backends.onnx import emit_model
from backends.onnx.context import NUMERICS
from compiler import shapes
from compiler.lowering import graph_spec, lower
from ir import Graph
from ir.printer import print_graph
from ir.verifier import verify
from passes import DEFAULT_PIPELINE, Pass, PassRecord, resolve_passes, run_pipeline


@dataclass
class CompiledModel:
    """The result of ``compile_to_onnx``.

    Attributes:
        model: the ONNX ``ModelProto`` (opset 18 by default, IR version 10).
        ir: the final IR graph (after all passes).
        history: one ``PassRecord`` per stage: ``lowered`` first, then each pass.
        input_names: ONNX graph input names, in order (fgraph input order,
            baked shared variables excluded).
        output_names: ONNX graph output names, in fgraph output order.
        compile_seconds: wall time of the whole compilation.
    """

    model: onnx.ModelProto
    ir: Graph
    history: list[PassRecord]
    input_names: list[str]
    output_names: list[str]
    compile_seconds: float
    _session: Any = field(default=None, repr=False)

    def save(self, path: str | os.PathLike) -> None:
        """Write the model to ``path``; models over 2 GB keep their
        initializers in an external data file beside it."""
        from backends.onnx import save_model

        save_model(self.model, path)

    @property
    def session(self):
        """A cached ``onnxruntime.InferenceSession`` on the CPU."""
        if self._session is None:
            from backends.onnx import make_session

            self._session = make_session(self.model)
        return self._session

    def run(self, *arrays) -> list[np.ndarray]:
        """Run the model in onnxruntime.

        Args:
            arrays: one array per ONNX input, positional in ``input_names``
                order (converted with ``np.asarray``).

        Returns:
            A list of NumPy arrays, in fgraph output order.

        Raises:
            TypeError: wrong number of inputs.
        """
        if len(arrays) != len(self.input_names):
            raise TypeError(f"model takes {len(self.input_names)} inputs ({', '.join(self.input_names)}), "
                            f"got {len(arrays)}")
        feed = {name: np.asarray(a) for name, a in zip(self.input_names, arrays)}
        return list(self.session.run(self.output_names, feed))

    __call__ = run


def compile_to_onnx(graph, passes: Sequence[Pass | str] | None = None, *, outputs=None, opset: int = 18,
                    dump_ir: str | os.PathLike | None = None, bake_shared: bool = True,
                    verify_each_pass: bool = True, name: str = "main",
                    emit_options: dict | None = None,
                    input_shapes: dict | None = None, example_inputs: Sequence | None = None,
                    check_dynamic: bool = False, value_info: bool = False,
                    numerics: str = "fast", assertions: str = "drop") -> CompiledModel:
    """Compile a PyTensor graph into an ONNX model.

    Args:
        graph: a ``FunctionGraph``, a compiled ``pytensor.function`` (default,
            Numba or C mode), or a list of input variables (then ``outputs``).
        passes: pass objects or registered pass names; None runs
            ``passes.DEFAULT_PIPELINE``; ``[]`` runs none.
        outputs: the output variables when ``graph`` is a list of inputs.
        opset: the ONNX default-domain opset to emit (18).
        dump_ir: a directory; receives ``00-lowered.ir`` and ``NN-<pass>.ir``
            after each pass.
        bake_shared: shared variables become initializers holding their
            current value (True) or stay graph inputs (False).
        verify_each_pass: run the IR verifier after lowering and each pass.
        name: the ONNX graph name.
        emit_options: keyword options for ``emit_model`` (``float64_conv``,
            ``silu``, ``gelu``, ``max_pool_nan``; see
            ``backends.onnx.EmitOptions``).
        input_shapes: input name (or PyTensor variable) -> one entry per
            axis: an int pins the dim, a str names it (``("batch", 1, 28,
            28)``), None keeps it (unknown dims are named ``<input>_dim<axis>``).
        example_inputs: one array per ONNX input: the model is specialized
            to their shapes (every dim static, shape arithmetic folded by the
            passes), except dims ``input_shapes`` names.
        check_dynamic: after emitting, run the model in onnxruntime at two
            sizes of every symbolic input dim and compare with PyTensor
            (``compiler.shapes.check_dynamic``).
        value_info: declare the type of every intermediate value in the model.
        assertions: what ``CheckAndRaise``/``Assert`` nodes become (ONNX
            cannot raise): ``"drop"`` (the guarded value; one
            ``DroppedAssertionWarning`` lists them with their source lines)
            or ``"nan"`` (the guarded value is NaN where a condition fails).
            PyMC's ``CheckParameterValue`` is always ``where(cond, x, -inf)``.
        numerics: ``"fast"`` (default): the fastest ONNX form within the
            numerics contract (README "Numerics contract": exact dtypes,
            integer results, rounding, comparisons, NaN/inf positions and
            shapes; float values within a bound per op family; the sign of
            a zero may differ). ``"strict"``: the bit-exact forms wherever
            the emitter has them (NumPy's sign of zero included).

    Returns:
        A ``CompiledModel``.

    Raises:
        ValueError: an unknown ``assertions`` mode; ``numerics`` is not ``"fast"`` or ``"strict"``, or
            ``emit_options`` also sets it.
        compiler.errors.UnsupportedOpsError: the graph holds ops with no
            lowering (all listed, with source lines).
        ir.verifier.VerificationError: a pass broke the IR.
        compiler.shapes.InputShapeError: ``input_shapes`` or
            ``example_inputs`` contradict the graph.
        compiler.shapes.DynamicShapeError: ``check_dynamic`` found the model
            wrong at some size.
    """
    if numerics not in NUMERICS:
        raise ValueError(f"numerics={numerics!r}: must be one of {', '.join(map(repr, NUMERICS))}")
    if emit_options and "numerics" in emit_options:
        raise ValueError("pass numerics to compile_to_onnx, not in emit_options")
    start = time.perf_counter()
    lowered = lower(graph_spec(graph, outputs), bake_shared=bake_shared, name=name, assertions=assertions)
    ir_graph = lowered.graph
    example_sizes = shapes.apply_input_shapes(ir_graph, lowered.input_vars, input_shapes, example_inputs)
    history: list[PassRecord] = []
    dump_dir = Path(dump_ir) if dump_ir is not None else None
    if dump_dir is not None:
        dump_dir.mkdir(parents=True, exist_ok=True)

    def record(stage: str, changed: bool, seconds: float) -> None:
        if verify_each_pass:
            verify(ir_graph, context=f"after {stage}")
        text = print_graph(ir_graph)
        history.append(PassRecord(stage, changed, seconds, text))
        if dump_dir is not None:
            (dump_dir / f"{len(history) - 1:02d}-{stage}.ir").write_text(text)

    record("lowered", True, time.perf_counter() - start)
    pipeline = resolve_passes(DEFAULT_PIPELINE if passes is None else passes)
    run_pipeline(ir_graph, pipeline, lambda p, g, changed, s: record(p.name, changed, s))
    model = emit_model(ir_graph, opset=opset, value_info=value_info, numerics=numerics, **(emit_options or {}))
    compiled = CompiledModel(model, ir_graph, history, [v.name for v in ir_graph.inputs],
                             [o.name for o in model.graph.output], time.perf_counter() - start)
    if check_dynamic:
        shapes.check_dynamic(model, ir_graph, lowered.input_vars, lowered.output_vars,
                             example_sizes=example_sizes, session=compiled.session)
    return compiled
