"""Smaller models to ship: float16 conversion, int8 quantization (dynamic,
and static QDQ with calibration), onnxruntime's ``.ort`` format, and what
each costs in accuracy and saves in bytes.

The conversions are the ecosystem's tools, run on our models:

- float16: onnxconverter-common's ``float16.convert_float_to_float16`` with
  ``keep_io_types=True`` (inputs and outputs stay float32, Casts at the
  edges). It walks Loop/If/Scan bodies itself; it does not look inside
  model-local functions, so every call of one (``backends.onnx`` emits
  ``GammaLn``, ``Erfcx``, ... in domain ``pytensor_onnx``) and the ops of
  ``FLOAT32_OPS`` stay float32 between Casts (its ``op_block_list``).
- int8: ``onnxruntime.quantization.quantize_dynamic`` (int8 weights, the
  activations quantized at run time) and ``quantize_static`` in the QDQ
  format (int8 weights, per channel by default; uint8 activations whose
  ranges come from calibration runs, onnxruntime's MinMax calibrator).
- ``.ort``: onnxruntime's ``convert_onnx_models_to_ort`` (the mobile and
  minimal-build format).

``compare`` runs the original and the converted model in onnxruntime on the
same inputs and returns an ``AccuracyReport``. All functions take and return
``onnx.ModelProto`` so they serve ``CompiledModel`` and the command line
(``pytensor-onnx quantize``/``convert`` on a saved file) alike.
"""

from __future__ import annotations

import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import onnx

# Ops that accumulate over many elements or grow fast: in float16 a sum of a
# few thousand values of 30 overflows (float16's largest finite is 65504), so
# they run in float32 between Casts (their neighbours still run in float16).
FLOAT32_OPS = ("ReduceSum", "ReduceSumSquare", "ReduceProd", "ReduceL2", "ReduceLogSumExp", "CumSum",
               "RandomNormalLike", "RandomUniformLike")
CONVERSIONS = ("float16", "int8-dynamic", "int8-static")


@dataclass(frozen=True)
class AccuracyReport:
    """What a conversion cost, measured on given inputs (``compare``).

    Errors are over every element of every output, in float64, of the
    converted model's result ``y`` against the original's ``r``:
    absolute ``|y - r|``, relative ``|y - r| / max(|r|, rel_floor)``; where
    both are the same non-finite value (NaN and NaN, inf and inf) the error
    is 0, elsewhere a non-finite difference is inf.

    Attributes:
        conversion: ``"float16"``, ``"int8-dynamic"`` or ``"int8-static"``.
        n_feeds: how many input sets (onnxruntime runs) were compared.
        n_values: output elements compared.
        max_abs_error, mean_abs_error, max_rel_error, mean_rel_error: as above.
        argmax_agreement: for a classifier (the first output float with
            rank >= 2 and a last dim >= 2), the fraction of rows whose
            arg-max over the last axis is the original's; None otherwise.
        size_bytes, original_size_bytes: the serialized models' sizes (their
            size on disk, saved without external data).
        rel_floor: the relative error's denominator floor.
    """

    conversion: str
    n_feeds: int
    n_values: int
    max_abs_error: float
    mean_abs_error: float
    max_rel_error: float
    mean_rel_error: float
    argmax_agreement: float | None
    size_bytes: int
    original_size_bytes: int
    rel_floor: float

    @property
    def size_ratio(self) -> float:
        """``original_size_bytes / size_bytes``: how many times smaller."""
        return self.original_size_bytes / self.size_bytes

    def __str__(self) -> str:
        agreement = "" if self.argmax_agreement is None else f", arg-max agreement {self.argmax_agreement:.2%}"
        return (f"{self.conversion}: {self.size_bytes:,} bytes ({self.size_ratio:.2f}x smaller than "
                f"{self.original_size_bytes:,}); abs error max {self.max_abs_error:.3g} mean "
                f"{self.mean_abs_error:.3g}, rel error max {self.max_rel_error:.3g} mean {self.mean_rel_error:.3g} "
                f"over {self.n_values:,} values of {self.n_feeds} run(s){agreement}")


def model_size(model: onnx.ModelProto) -> int:
    """Bytes of ``model`` serialized (its file size when saved without
    external data)."""
    return model.ByteSize()


def input_names(model: onnx.ModelProto) -> list[str]:
    """The graph inputs of ``model`` that are not initializers, in order."""
    inits = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in inits]


def input_feeds(data: Any, names: Sequence[str]) -> list[dict[str, np.ndarray]]:
    """Input sets for ``names`` (a model's inputs) from ``data``, which is
    one of: a dict name -> array (one set); an array (one set, for a model
    with one input); a list or tuple of arrays, one per input in order (one
    set); or an iterable of such dicts (one set each; a generator is read
    once).

    Returns:
        A list of feeds ``{name: np.ndarray}``, each naming every input.

    Raises:
        ValueError: no data, an unknown or missing input name, or a count of
            positional arrays that is not the number of inputs.
    """
    if isinstance(data, Mapping):
        sets = [data]
    elif isinstance(data, np.ndarray):
        sets = [[data]]
    elif isinstance(data, (list, tuple)) and data and not isinstance(data[0], Mapping):
        sets = [data]
    elif data is None:
        raise ValueError("no inputs given: pass arrays, a dict of arrays or an iterable of dicts")
    else:
        sets = list(data)
    if not sets:
        raise ValueError("no input sets given (an empty iterable)")
    feeds = []
    for i, s in enumerate(sets):
        if not isinstance(s, Mapping):
            if len(s) != len(names):
                raise ValueError(f"input set {i}: {len(s)} arrays for the {len(names)} inputs ({', '.join(names)})")
            s = dict(zip(names, s))
        unknown = sorted(set(s) - set(names))
        missing = [n for n in names if n not in s]
        if unknown or missing:
            raise ValueError(f"input set {i}: " + "; ".join(
                ([f"unknown input(s) {', '.join(unknown)}"] if unknown else [])
                + ([f"missing input(s) {', '.join(missing)}"] if missing else []))
                + f" (the model's inputs: {', '.join(names)})")
        feeds.append({n: np.asarray(s[n]) for n in names})
    return feeds


def slim(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` without what running it does not read: each
    node's ``doc_string`` and ``metadata_props`` (where
    ``backends.onnx.provenance`` records the PyTensor op and source line;
    nested bodies and model-local functions included) and the graph's
    ``value_info`` (types shape inference added). Zero points stay, even
    all-zero ones the ONNX spec would default: onnxruntime fuses a
    ``DequantizeLinear``-``Gemm``-``QuantizeLinear`` group into ``QGemm``
    only when they are there (measured: without them the digits MLP's int8
    model ran its Gemms in float32, 1.4x slower than torch's export).
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)

    def clear(nodes):
        for node in nodes:
            node.doc_string = ""
            del node.metadata_props[:]
            for attr in node.attribute:
                for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                    clear(g.node)

    clear(out.graph.node)
    for f in out.functions:
        clear(f.node)
    del out.graph.value_info[:]
    return out


def to_float16(model: onnx.ModelProto, *, op_block_list: Sequence[str] = (),
               keep_io_types: bool = True) -> onnx.ModelProto:
    """``model`` with its float32 weights and computations in float16
    (onnxconverter-common's ``convert_float_to_float16``, Loop/If bodies
    included). Constants outside float16's range are clamped to its smallest
    subnormal (~6e-8) or largest finite value (65504), not to the
    converter's defaults (1e-7, 1e4); one ``UserWarning`` counts them.

    Args:
        model: a model whose float tensors are float32 (float64 ones are left
            as they are).
        op_block_list: more op types to keep in float32, besides
            onnxconverter-common's default list, ``FLOAT32_OPS``, the ops
            whose ONNX schema at the model's opset has no float16 form, and
            the model-local functions (whose bodies the converter does not see).
        keep_io_types: inputs and outputs stay float32 (Casts at the edges).

    Returns:
        The converted model (a new ``ModelProto``).

    Raises:
        ModuleNotFoundError: onnxconverter-common is not installed (the
            ``deploy`` extra).
    """
    try:
        from onnxconverter_common import float16
    except ModuleNotFoundError as err:
        raise ModuleNotFoundError("the float16 conversion needs onnxconverter-common: "
                                  "pip install 'pytensor-onnx[deploy]'") from err

    functions = [f.name for f in model.functions]
    blocked = [*float16.DEFAULT_OP_BLOCK_LIST, *FLOAT32_OPS, *functions, *_ops_without_float16(model),
               *op_block_list]
    with warnings.catch_warnings(record=True) as clamped:
        warnings.simplefilter("always")
        out = float16.convert_float_to_float16(
            model, keep_io_types=keep_io_types, op_block_list=blocked,
            min_positive_val=float(np.finfo(np.float16).smallest_subnormal), max_finite_val=float(np.finfo(np.float16).max))
    _retarget_float_casts(out.graph)
    _drop_value_info(out.graph)
    clamped = [str(w.message) for w in clamped if _really_clamped(str(w.message))]
    if clamped:
        warnings.warn(f"float16: {len(clamped)} float32 constant value(s) outside float16's range were clamped to "
                      f"its smallest subnormal or largest finite value (first: {clamped[0]})", stacklevel=2)
    return out


def _ops_without_float16(model: onnx.ModelProto) -> list[str]:
    """Default-domain op types of ``model`` (nested bodies included) whose
    ONNX schema at the model's opset takes float32 but not float16 inputs
    (``IsInf``/``IsNaN`` before opset 20, for example): they stay float32."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    op_types = set()

    def collect(graph):
        for node in graph.node:
            if node.domain in ("", "ai.onnx"):
                op_types.add(node.op_type)
            for attr in node.attribute:
                for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                    collect(g)

    collect(model.graph)
    out = []
    for op_type in sorted(op_types):
        try:
            schema = onnx.defs.get_schema(op_type, opset, "")
        except onnx.defs.SchemaError:
            continue
        allowed = set()
        for formal in schema.inputs:
            allowed |= {t for c in schema.type_constraints if c.type_param_str == formal.type_str
                        for t in c.allowed_type_strs}
        if "tensor(float)" in allowed and "tensor(float16)" not in allowed:
            out.append(op_type)
    return out


def _really_clamped(message: str) -> bool:
    """Whether onnxconverter-common's "the float32 number X will be truncated
    to Y" names a value it changes: it also warns for +-inf and for its
    bounds themselves, which it keeps."""
    words = message.split()
    if not message.startswith("the float32 number") or len(words) < 4:
        return False
    v = abs(float(words[3]))
    f16 = np.finfo(np.float16)
    return bool(np.isfinite(v) and (v > float(f16.max) or 0 < v < float(f16.smallest_subnormal)))


def _drop_value_info(graph: onnx.GraphProto) -> None:
    """Remove the ``value_info`` of ``graph`` and its nested bodies, in
    place: inside Loop/If bodies the float16 converter types the outputs of
    the float32 nodes it wraps in Casts as float16 (onnxruntime: "does not
    match expected type"); onnxruntime infers the types itself."""
    del graph.value_info[:]
    for node in graph.node:
        for attr in node.attribute:
            for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                _drop_value_info(g)


def _retarget_float_casts(graph: onnx.GraphProto) -> None:
    """Make each ``Cast(to=FLOAT)`` agree with the type the float16 converter
    gave its output: the converter retypes values (``value_info``) but not
    Cast targets, so our float64 accumulations (``Cast`` to double,
    ``ReduceSum``, ``Cast`` back to float) fed a float16 ``Div`` a float32
    value (onnxruntime: "bound to different types"). In place, nested bodies
    included."""
    f16 = {v.name for v in [*graph.value_info, *graph.output]
           if v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16}
    for node in graph.node:
        if node.op_type == "Cast" and node.output[0] in f16:
            for attr in node.attribute:
                if attr.name == "to" and attr.i == onnx.TensorProto.FLOAT:
                    attr.i = onnx.TensorProto.FLOAT16
        for attr in node.attribute:
            for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                _retarget_float_casts(g)


class _Reader:
    """onnxruntime's ``CalibrationDataReader`` protocol over a list of feeds."""

    def __init__(self, feeds: list[dict]):
        self._feeds = iter(feeds)

    def get_next(self):
        return next(self._feeds, None)


def quantize_int8(model: onnx.ModelProto, calibration: list[dict] | None = None, *,
                  per_channel: bool | None = None, op_types: Sequence[str] | None = None,
                  reduce_range: bool = True) -> onnx.ModelProto:
    """``model`` quantized to int8 by ``onnxruntime.quantization``.

    Args:
        model: a float32 model.
        calibration: None for dynamic quantization (``quantize_dynamic``: int8
            weights, activations quantized at run time from their own range);
            else the feeds (``input_feeds``) whose activation ranges set the
            static QDQ model's scales (``quantize_static``, MinMax calibration,
            uint8 activations, int8 symmetric weights).
        per_channel: one scale per output channel of each weight (default:
            True for static, False for dynamic, onnxruntime's default there).
        op_types: the op types to quantize (None: every op onnxruntime can).
        reduce_range: 7-bit weights (onnxruntime's ``reduce_range``). On
            x86 CPUs without VNNI (AVX2, AVX-512F) onnxruntime's uint8 x int8
            kernels add pairs of products in int16 and saturate with 8-bit
            weights (measured here, AVX2: a 16x8 MatMul's QDQ model off by 5.0
            of 13 with full range, 0.16 with 7 bits, 0.12 unfused), so the
            default is 7 bits; False gives full 8-bit weights for VNNI and
            ARM targets.

    Returns:
        The quantized model (a new ``ModelProto``).
    """
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    op_types = list(op_types) if op_types is not None else None
    with tempfile.TemporaryDirectory(prefix="pytensor-onnx-quant-") as tmp:
        src, dst = Path(tmp) / "model.onnx", Path(tmp) / "quantized.onnx"
        onnx.save(_gemm_bias_per_column(model), src)
        if calibration is None:
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8, per_channel=bool(per_channel),
                             reduce_range=reduce_range, op_types_to_quantize=op_types)
        else:
            quantize_static(src, dst, _Reader(calibration), quant_format=QuantFormat.QDQ,
                            per_channel=True if per_channel is None else per_channel,
                            weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8,
                            reduce_range=reduce_range, op_types_to_quantize=op_types,
                            extra_options={"OpTypesToExcludeOutputQuantization": _output_op_types(model)})
        return onnx.load(dst)


def _gemm_bias_per_column(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with each Gemm's scalar or length-1 bias initializer (``x @ W
    + 0.5``) repeated to one value per output column: onnxruntime's
    quantizer indexes the bias per column and fails on a 0-d one
    (IndexError, onnxruntime 1.32). Broadcasting makes both forms the same
    numbers. Returns ``model`` itself when no Gemm has such a bias."""
    from onnx import numpy_helper

    inits = {i.name: i for i in model.graph.initializer}
    todo = []
    for node in model.graph.node:
        if node.op_type != "Gemm" or len(node.input) < 3 or node.input[2] not in inits or node.input[1] not in inits:
            continue
        c = numpy_helper.to_array(inits[node.input[2]])
        if c.size == 1 and c.ndim <= 1:
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            todo.append((node, c, inits[node.input[1]].dims[0 if trans_b else 1]))
    if not todo:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    nodes = {n.name: n for n in out.graph.node}
    for node, c, columns in todo:
        name = f"{node.input[2]}_per_column_{node.name}"
        out.graph.initializer.append(numpy_helper.from_array(np.full(columns, c.reshape(()), c.dtype), name))
        nodes[node.name].input[2] = name
    return out


def _output_op_types(model: onnx.ModelProto) -> list[str]:
    """Op types of the nodes that produce the graph's outputs: their outputs
    stay float (no Quantize/DequantizeLinear pair rounds what the user reads)."""
    outputs = {o.name for o in model.graph.output}
    return sorted({n.op_type for n in model.graph.node if outputs & set(n.output)})


def convert(model: onnx.ModelProto, conversion: str, calibration: list[dict] | None = None, *,
            slimmed: bool = True, **options) -> onnx.ModelProto:
    """``model`` after ``conversion`` (one of ``CONVERSIONS``): ``to_float16``
    or ``quantize_int8`` with ``options`` (``op_block_list``; ``per_channel``,
    ``op_types``, ``reduce_range``); ``calibration`` feeds are required by ``"int8-static"``.
    The result is ``slim``-med unless ``slimmed=False``.

    Raises:
        ValueError: an unknown conversion, or ``int8-static`` without
            calibration data.
    """
    if conversion not in CONVERSIONS:
        raise ValueError(f"unknown conversion {conversion!r}; known: {', '.join(CONVERSIONS)}")
    if conversion == "float16":
        out = to_float16(model, **options)
    elif conversion == "int8-dynamic":
        out = quantize_int8(model, None, **options)
    else:
        if not calibration:
            raise ValueError("int8-static quantization needs calibration data (arrays or an iterable of input dicts)")
        out = quantize_int8(model, calibration, **options)
    return slim(out) if slimmed else out


def _session(model: onnx.ModelProto):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _errors(y: np.ndarray, r: np.ndarray, rel_floor: float) -> tuple[np.ndarray, np.ndarray]:
    y, r = np.asarray(y, np.float64).ravel(), np.asarray(r, np.float64).ravel()
    with np.errstate(invalid="ignore", over="ignore"):
        same = (y == r) | (np.isnan(y) & np.isnan(r))
        abs_err = np.where(same, 0.0, np.abs(y - r))
        abs_err = np.where(np.isnan(abs_err), np.inf, abs_err)
        rel_err = abs_err / np.maximum(np.abs(np.nan_to_num(r, nan=0.0)), rel_floor)
    return abs_err, np.where(same, 0.0, rel_err)


def compare(original: onnx.ModelProto, converted: onnx.ModelProto, feeds: list[dict], conversion: str, *,
            classifier: bool | None = None, rel_floor: float = 1e-6) -> AccuracyReport:
    """Run ``original`` and ``converted`` in onnxruntime (CPU) on every feed
    and measure the difference (see ``AccuracyReport``).

    Args:
        original, converted: the two models (same input and output names).
        feeds: input sets (``input_feeds``).
        conversion: the name recorded in the report.
        classifier: report the arg-max agreement of the first output (None:
            when it is float with rank >= 2 and a last dim >= 2).
        rel_floor: the relative error's denominator floor.

    Returns:
        An ``AccuracyReport``.

    Raises:
        ValueError: the two models' outputs differ in number or shape.
    """
    ref_session, new_session = _session(original), _session(converted)
    names = [o.name for o in ref_session.get_outputs()]
    abs_parts, rel_parts, agree = [], [], []
    for feed in feeds:
        refs = ref_session.run(names, feed)
        news = new_session.run(names, feed)
        for name, y, r in zip(names, news, refs):
            if np.shape(y) != np.shape(r):
                raise ValueError(f"output {name}: shape {np.shape(y)} after the conversion, {np.shape(r)} before")
            a, rel = _errors(y, r, rel_floor)
            abs_parts.append(a)
            rel_parts.append(rel)
        first = refs[0]
        is_classifier = (np.issubdtype(first.dtype, np.floating) and first.ndim >= 2 and first.shape[-1] >= 2
                         if classifier is None else classifier)
        if is_classifier:
            agree.append(np.argmax(news[0], axis=-1).ravel() == np.argmax(first, axis=-1).ravel())
    abs_err, rel_err = np.concatenate(abs_parts), np.concatenate(rel_parts)
    return AccuracyReport(
        conversion=conversion, n_feeds=len(feeds), n_values=int(abs_err.size),
        max_abs_error=float(abs_err.max(initial=0.0)), mean_abs_error=float(abs_err.mean()) if abs_err.size else 0.0,
        max_rel_error=float(rel_err.max(initial=0.0)), mean_rel_error=float(rel_err.mean()) if rel_err.size else 0.0,
        argmax_agreement=float(np.concatenate(agree).mean()) if agree else None,
        size_bytes=model_size(converted), original_size_bytes=model_size(original), rel_floor=rel_floor)


def save_ort(model: onnx.ModelProto | str | Path, path: str | Path) -> Path:
    """Write ``model`` in onnxruntime's ``.ort`` format to ``path``, with
    onnxruntime's ``convert_onnx_models_to_ort`` (fixed optimizations,
    level "all", as its command line does by default).

    Args:
        model: a ``ModelProto`` or the path of an ``.onnx`` file.
        path: the ``.ort`` file to write (its directory is created).

    Returns:
        ``path`` as a ``Path``.

    Raises:
        RuntimeError: onnxruntime did not write the file (its message says why).
    """
    import contextlib
    import io

    from onnxruntime.tools.convert_onnx_models_to_ort import OptimizationStyle, convert_onnx_models_to_ort

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pytensor-onnx-ort-") as tmp:
        src = Path(tmp) / f"{path.stem}.onnx"
        if isinstance(model, onnx.ModelProto):
            onnx.save(model, src)
        else:
            src.write_bytes(Path(model).read_bytes())
        log = io.StringIO()
        with contextlib.redirect_stdout(log):
            convert_onnx_models_to_ort(src, output_dir=Path(tmp) / "out",
                                       optimization_styles=[OptimizationStyle.Fixed])
        written = sorted((Path(tmp) / "out").glob("*.ort"))
        if not written:
            raise RuntimeError(f"onnxruntime wrote no .ort file: {log.getvalue().strip()[-500:]}")
        path.write_bytes(written[0].read_bytes())
    return path


def load_inputs(path: str | Path, names: Sequence[str]) -> dict[str, np.ndarray]:
    """One input set from a NumPy ``.npz`` file: arrays named after the
    model's inputs (``np.savez(path, x=...)``), or ``arr_0``, ``arr_1``, ...
    in input order (``np.savez(path, a, b)``).

    Raises:
        ValueError: the file's names are neither (both lists named).
    """
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    positional = [f"arr_{i}" for i in range(len(names))]
    if sorted(arrays) == sorted(positional):
        return {n: arrays[p] for n, p in zip(names, positional)}
    if sorted(arrays) != sorted(names):
        raise ValueError(f"{path} holds {', '.join(sorted(arrays)) or 'no arrays'}; the model's inputs are "
                         f"{', '.join(names)} (name them so, or save them as arr_0, arr_1, ... in order)")
    return arrays


def convert_file(source: str | Path, target: str | Path, conversion: str, *, calibration: str | Path | None = None,
                 inputs: str | Path | None = None, **options) -> AccuracyReport | None:
    """``pytensor-onnx quantize``/``convert``: read the model at ``source``,
    write it converted to ``target``.

    Args:
        source: an ``.onnx`` file.
        target: the file to write.
        conversion: one of ``CONVERSIONS`` (``convert``'s ``options``), or
            ``"ort"`` (``save_ort``).
        calibration: an ``.npz`` file of calibration inputs (``load_inputs``;
            required by ``"int8-static"``).
        inputs: an ``.npz`` file of inputs to measure the accuracy on
            (default: ``calibration``).

    Returns:
        The ``AccuracyReport`` on ``inputs`` (or the calibration inputs), or
        None when there are none, or for ``"ort"`` (a format change, the same
        model).

    Raises:
        FileNotFoundError: ``source`` is missing.
        ValueError: as ``convert`` and ``load_inputs``.
    """
    model = onnx.load(source)
    if conversion == "ort":
        save_ort(model, target)
        return None
    names = input_names(model)
    calib = None if calibration is None else [load_inputs(calibration, names)]
    converted = convert(model, conversion, calib, **options)
    onnx.save(converted, target)
    feeds = [load_inputs(inputs, names)] if inputs is not None else calib
    return None if feeds is None else compare(model, converted, feeds, conversion)
