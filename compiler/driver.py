"""``compile_to_onnx``: lower a PyTensor graph to IR, run passes, emit ONNX.

The driver owns the one hook that runs between passes: it verifies the IR,
records timing and IR text, and writes ``dump_ir`` files. Passes do none of
that themselves.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx
import onnx_ir as oir

from backends.onnx import PROTOBUF_LIMIT, emit_ir_model, initializer_bytes, save_ir_model
from compiler import shapes
from compiler.validation import check_compile_args, check_run_inputs, equal_dim_groups
from compiler.lowering import graph_spec, lower
from ir import Graph
from ir.printer import print_graph
from ir.verifier import verify
from passes import DEFAULT_PIPELINE, Pass, PassRecord, resolve_passes, run_pipeline


@dataclass
class CompiledModel:
    """The result of ``compile_to_onnx``.

    Attributes:
        onnx_model: the emitted model in onnx_ir form (its initializers wrap
            the IR constants' arrays; no copy of the weights).
        ir: the final IR graph (after all passes).
        history: one ``PassRecord`` per stage: ``lowered`` first, then each pass.
        input_names: ONNX graph input names, in order (fgraph input order,
            baked shared variables excluded).
        output_names: ONNX graph output names, in fgraph output order.
        compile_seconds: wall time of the whole compilation.
        equal_dims: groups of ``(input name, axis)`` PyTensor requires equal
            (``compiler.validation.equal_dim_groups``), checked by ``run``.
        external_data_threshold: initializer bytes past which ``save`` and
            ``session`` keep the weights in an external data file
            (protobuf's 2 GB limit by default).
    """

    onnx_model: Any
    ir: Graph
    history: list[PassRecord]
    input_names: list[str]
    output_names: list[str]
    compile_seconds: float
    equal_dims: list = field(default_factory=list)
    external_data_threshold: int = PROTOBUF_LIMIT
    _model: Any = field(default=None, repr=False)
    _session: Any = field(default=None, repr=False)
    _tmpdir: Any = field(default=None, repr=False)

    @property
    def model(self) -> onnx.ModelProto:
        """The ONNX ``ModelProto`` (opset 18 by default, IR version 10),
        serialized on first use and cached. It holds a copy of the weights:
        a model past 2 GB exists in memory but cannot be serialized as one
        protobuf; ``save`` and ``session`` do not need it."""
        if self._model is None:
            self._model = oir.serde.serialize_model(self.onnx_model)
        return self._model

    @property
    def uses_external_data(self) -> bool:
        """Whether the weights exceed ``external_data_threshold`` (then
        ``save`` writes ``<file>.data`` beside the model)."""
        return initializer_bytes(self.onnx_model) > self.external_data_threshold

    def save(self, path: str | os.PathLike) -> None:
        """Write the model to ``path``; when ``uses_external_data``, every
        initializer of at least 1 KiB goes to ``<file name>.data`` beside it
        (streamed from the arrays, no protobuf copy)."""
        save_ir_model(self.onnx_model, path, external_data_threshold=self.external_data_threshold)

    @property
    def session(self):
        """A cached ``onnxruntime.InferenceSession`` on the CPU. A model with
        external data is saved to a temporary directory (removed with this
        object) and loaded from there."""
        if self._session is None:
            from backends.onnx import make_session

            if self.uses_external_data:
                self._tmpdir = tempfile.TemporaryDirectory(prefix="pytensor-onnx-")
                path = Path(self._tmpdir.name) / "model.onnx"
                self.save(path)
                self._session = make_session(path)
            else:
                self._session = make_session(self.model)
        return self._session

    def run(self, *arrays) -> list[np.ndarray]:
        """Run the model in onnxruntime.

        Args:
            arrays: one array per ONNX input, positional in ``input_names``
                order; checked by ``compiler.validation.check_run_inputs``
                (exact dtype, rank, static dims, symbolic dims shared between
                inputs and the dims PyTensor requires equal) before
                onnxruntime sees them.

        Returns:
            A list of NumPy arrays, in fgraph output order.

        Raises:
            TypeError: wrong number of inputs or a wrong dtype.
            ValueError: a wrong rank or dim, naming the input and the axis.
        """
        feed = self.check_inputs(arrays)
        return list(self.session.run(self.output_names, feed))

    def check_inputs(self, arrays) -> dict:
        """The onnxruntime feed for ``arrays`` after
        ``compiler.validation.check_run_inputs`` (see ``run``)."""
        return check_run_inputs(self.onnx_model, arrays, self.equal_dims)

    __call__ = run


def compile_to_onnx(graph, passes: Sequence[Pass | str] | None = None, *, outputs=None, opset: int = 18,
                    dump_ir: str | os.PathLike | None = None, bake_shared: bool = True,
                    verify_each_pass: bool = True, name: str = "main",
                    emit_options: dict | None = None,
                    input_shapes: dict | None = None, example_inputs: Sequence | None = None,
                    check_dynamic: bool = False, value_info: bool = False,
                    external_data_threshold: int = PROTOBUF_LIMIT) -> CompiledModel:
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
        external_data_threshold: initializer bytes past which the model's
            weights live in an external data file (``save``, ``session``);
            protobuf's 2 GB limit by default.

    Returns:
        A ``CompiledModel``.

    Raises:
        TypeError, ValueError: a bad argument (``passes``, ``opset``,
            ``emit_options``, empty ``outputs``, an input given twice; see
            ``compiler.validation.check_compile_args``), naming it and the
            accepted values.
        compiler.errors.UnsupportedOpsError: the graph holds ops with no
            lowering (all listed, with source lines), or inputs/outputs of a
            type with no ONNX equivalent (complex, sparse, typed lists, None).
        ir.verifier.VerificationError: a pass broke the IR.
        compiler.shapes.InputShapeError: ``input_shapes`` or
            ``example_inputs`` contradict the graph.
        compiler.shapes.DynamicShapeError: ``check_dynamic`` found the model
            wrong at some size.
    """
    start = time.perf_counter()
    check_compile_args(passes=passes, opset=opset, emit_options=emit_options, bake_shared=bake_shared,
                       verify_each_pass=verify_each_pass, name=name)
    lowered = lower(graph_spec(graph, outputs), bake_shared=bake_shared, name=name)
    ir_graph = lowered.graph
    equal_dims = equal_dim_groups(lowered)
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
    onnx_model = emit_ir_model(ir_graph, opset=int(opset), value_info=value_info, **(emit_options or {}))
    compiled = CompiledModel(onnx_model, ir_graph, history, [v.name for v in ir_graph.inputs],
                             [o.name for o in onnx_model.graph.outputs], time.perf_counter() - start,
                             equal_dims=equal_dims, external_data_threshold=external_data_threshold)
    if check_dynamic:
        shapes.check_dynamic(compiled.model, ir_graph, lowered.input_vars, lowered.output_vars,
                             example_sizes=example_sizes, session=compiled.session)
    return compiled
