"""JavaScript glue for running a compiled model in onnxruntime-web.

``write_web_glue("model.onnx")`` writes two files beside the model:

- ``model.json``: the model's interface, read from the ONNX graph: every
  input and output with its name, dtype (onnxruntime-web's tensor type names,
  which are NumPy's: ``float32``, ``float64``, ``int64``, ``bool``, ...), the
  JavaScript typed array that holds it, and its shape, where a symbolic dim is
  its ``dim_param`` string (``"batch"``), a fixed dim an integer and an
  unnamed dynamic dim ``null``. ``symbolic_dims`` lists the dim names.
- ``model.js``: an ES module with that manifest inlined (``MODEL``) and three
  functions, ``createSession(ort, source?, options?)``, ``makeFeeds(ort, inputs)``
  and ``run(session, ort, inputs)``, that build ``ort.Tensor`` feeds from
  typed arrays (checking dtypes and fixed dims, and working out one symbolic
  dim from the array's length) and return plain ``{data, dims, dtype}``
  outputs. ``ort`` is passed in, so the module works with the script build
  (the global ``ort``) and with the ES module build alike.

The dtype names and typed-array mapping follow onnxruntime-web's
``Tensor.Type`` and ``Tensor.DataTypeMap`` (``js/common/lib/tensor.ts``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import onnx

MANIFEST_FORMAT = "pytensor-onnx.model"
MANIFEST_VERSION = 1

# ONNX TensorProto element type -> (onnxruntime-web tensor type, JavaScript typed array).
_ORT_WEB_TYPES: dict[int, tuple[str, str]] = {
    onnx.TensorProto.FLOAT: ("float32", "Float32Array"),
    onnx.TensorProto.DOUBLE: ("float64", "Float64Array"),
    onnx.TensorProto.FLOAT16: ("float16", "Uint16Array"),
    onnx.TensorProto.INT8: ("int8", "Int8Array"),
    onnx.TensorProto.INT16: ("int16", "Int16Array"),
    onnx.TensorProto.INT32: ("int32", "Int32Array"),
    onnx.TensorProto.INT64: ("int64", "BigInt64Array"),
    onnx.TensorProto.UINT8: ("uint8", "Uint8Array"),
    onnx.TensorProto.UINT16: ("uint16", "Uint16Array"),
    onnx.TensorProto.UINT32: ("uint32", "Uint32Array"),
    onnx.TensorProto.UINT64: ("uint64", "BigUint64Array"),
    onnx.TensorProto.BOOL: ("bool", "Uint8Array"),
}


def _value_entry(value: onnx.ValueInfoProto) -> dict:
    tensor_type = value.type.tensor_type
    if not value.type.HasField("tensor_type"):
        raise ValueError(f"graph value {value.name!r} is not a tensor; onnxruntime-web feeds only tensors")
    if tensor_type.elem_type not in _ORT_WEB_TYPES:
        name = onnx.TensorProto.DataType.Name(tensor_type.elem_type)
        raise ValueError(f"graph value {value.name!r} has element type {name}, which onnxruntime-web "
                         "cannot feed or fetch")
    dtype, array = _ORT_WEB_TYPES[tensor_type.elem_type]
    shape: list[int | str | None] | None = None
    if tensor_type.HasField("shape"):
        shape = []
        for dim in tensor_type.shape.dim:
            if dim.HasField("dim_value"):
                shape.append(int(dim.dim_value))
            elif dim.HasField("dim_param"):
                shape.append(dim.dim_param)
            else:
                shape.append(None)
    return {"name": value.name, "dtype": dtype, "array": array, "shape": shape}


def model_manifest(model: onnx.ModelProto | str | os.PathLike, model_file: str = "model.onnx") -> dict:
    """The interface of an ONNX model as a JSON-ready dict.

    Args:
        model: a ``ModelProto`` or the path of an ``.onnx`` file (its
            initializers are not loaded).
        model_file: the model's file name as the page fetches it
            (relative to ``model.json``).

    Returns:
        ``{"format", "version", "model", "opset", "inputs", "outputs",
        "symbolic_dims"}``; ``inputs``/``outputs`` are lists (graph order) of
        ``{"name", "dtype", "array", "shape"}``. Initializers are not inputs:
        only the graph inputs that no initializer backs are listed (those
        with a default value are what onnxruntime lets a caller override,
        which this glue does not offer).

    Raises:
        ValueError: an input or output is not a tensor, or has an element
            type onnxruntime-web does not support (string, complex, ...).
    """
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(os.fspath(model), load_external_data=False)
    initializers = {init.name for init in model.graph.initializer}
    inputs = [_value_entry(v) for v in model.graph.input if v.name not in initializers]
    outputs = [_value_entry(v) for v in model.graph.output]
    symbolic: list[str] = []
    for entry in inputs + outputs:
        for dim in entry["shape"] or []:
            if isinstance(dim, str) and dim not in symbolic:
                symbolic.append(dim)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    return {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "model": model_file, "opset": opset,
            "inputs": inputs, "outputs": outputs, "symbolic_dims": symbolic}


_GLUE_JS = """\
// Generated by pytensor-onnx (compiler/tools/web.py): feed/fetch glue for %(model_file)s.
// Usage (ort: the onnxruntime-web namespace, e.g. the global of ort.wasm.min.js):
//   import { createSession, run, MODEL } from "./%(module_file)s";
//   const session = await createSession(ort);
//   const out = await run(session, ort, { %(example_feed)s });
//   out.%(example_output)s.data, out.%(example_output)s.dims
// An input is a typed array (its dims are the manifest's, one symbolic dim worked
// out from the length) or {data, dims}. Outputs are {data, dims, dtype}.

/** The model's interface (the same as model.json). */
export const MODEL = %(manifest)s;

/** An onnxruntime-web InferenceSession on the model: source is a URL (default: the model
 * beside this module) or the model's bytes (Uint8Array). */
export async function createSession(ort, source = new URL(MODEL.model, import.meta.url).href, options = {}) {
  return ort.InferenceSession.create(source, { executionProviders: ["wasm"], ...options });
}

function resolveDims(spec, data, dims) {
  if (dims) {
    if (spec.shape && dims.length !== spec.shape.length)
      throw new Error(`input ${spec.name}: rank ${dims.length}, expected ${spec.shape.length}`);
    (spec.shape || []).forEach((d, i) => {
      if (typeof d === "number" && d !== dims[i])
        throw new Error(`input ${spec.name}: dim ${i} is ${dims[i]}, expected ${d}`);
    });
    return dims;
  }
  if (!spec.shape) throw new Error(`input ${spec.name}: unknown rank, pass {data, dims}`);
  const fixed = spec.shape.filter((d) => typeof d === "number").reduce((a, b) => a * b, 1);
  const free = spec.shape.filter((d) => typeof d !== "number").length;
  if (free > 1) throw new Error(`input ${spec.name}: ${free} free dims, pass {data, dims}`);
  if (free === 0) return spec.shape.slice();
  if (data.length %% fixed !== 0)
    throw new Error(`input ${spec.name}: length ${data.length} is not a multiple of ${fixed}`);
  return spec.shape.map((d) => (typeof d === "number" ? d : data.length / fixed));
}

/** Build the feeds object for session.run from {inputName: typedArray | {data, dims}}. */
export function makeFeeds(ort, inputs) {
  const feeds = {};
  for (const spec of MODEL.inputs) {
    const value = inputs[spec.name];
    if (value === undefined) throw new Error(`missing input ${spec.name} (${spec.dtype})`);
    const data = ArrayBuffer.isView(value) ? value : value.data;
    const expected = globalThis[spec.array];
    if (!(data instanceof expected))
      throw new Error(`input ${spec.name}: expected a ${spec.array} (${spec.dtype}), got ${data.constructor.name}`);
    feeds[spec.name] = new ort.Tensor(spec.dtype, data, resolveDims(spec, data, ArrayBuffer.isView(value) ? null : value.dims));
  }
  return feeds;
}

/** Run the model; returns {outputName: {data, dims, dtype}} in MODEL.outputs order. */
export async function run(session, ort, inputs) {
  const results = await session.run(makeFeeds(ort, inputs));
  const out = {};
  for (const spec of MODEL.outputs) {
    const t = results[spec.name];
    out[spec.name] = { data: t.data, dims: t.dims, dtype: t.type };
  }
  return out;
}
"""


def glue_module(manifest: dict, module_file: str = "model.js") -> str:
    """The text of the ES module ``model.js`` for a manifest from
    ``model_manifest`` (the manifest is inlined as ``MODEL``)."""
    example_feed = ", ".join(f"{json.dumps(i['name'])}: new {i['array']}(...)" for i in manifest["inputs"])
    first_output = manifest["outputs"][0]["name"] if manifest["outputs"] else "y"
    return _GLUE_JS % {
        "model_file": manifest["model"], "module_file": module_file, "example_feed": example_feed,
        "example_output": first_output if first_output.isidentifier() else "y",
        "manifest": json.dumps(manifest, indent=2),
    }


def write_web_glue(model_path: str | os.PathLike, out_dir: str | os.PathLike | None = None,
                   stem: str | None = None) -> tuple[Path, Path]:
    """Write ``<stem>.json`` (``model_manifest``) and ``<stem>.js``
    (``glue_module``) for the ONNX model at ``model_path``.

    Args:
        model_path: the ``.onnx`` file.
        out_dir: where to write (default: the model's directory). The
            manifest's ``model`` field is the model's path relative to it.
        stem: file name stem (default: the model's, ``model`` for ``model.onnx``).

    Returns:
        ``(json_path, js_path)``.

    Raises:
        FileNotFoundError: no such model file.
        ValueError: as ``model_manifest``.
    """
    model_path = Path(model_path)
    if not model_path.is_file():
        raise FileNotFoundError(f"no ONNX model at {model_path}")
    out = Path(out_dir) if out_dir is not None else model_path.parent
    out.mkdir(parents=True, exist_ok=True)
    stem = stem or model_path.stem
    relative = Path(os.path.relpath(model_path.resolve(), out.resolve())).as_posix()
    manifest = model_manifest(model_path, model_file=relative)
    json_path, js_path = out / f"{stem}.json", out / f"{stem}.js"
    json_path.write_text(json.dumps(manifest, indent=2) + "\n")
    js_path.write_text(glue_module(manifest, module_file=js_path.name))
    return json_path, js_path
