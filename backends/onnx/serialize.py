"""``save_model``: write an emitted model to disk, with external data when it
would not fit in one protobuf (ONNX's 2 GB limit)."""

from __future__ import annotations

import os
from pathlib import Path

import onnx

PROTOBUF_LIMIT = 2**31 - 2**20  # 2 GB minus headroom for the graph itself


def save_model(model: onnx.ModelProto, path: str | os.PathLike, *,
               external_data_threshold: int = PROTOBUF_LIMIT) -> None:
    """Write ``model`` to ``path``.

    When the serialized model is larger than ``external_data_threshold``
    bytes, every initializer of at least 1 KiB goes to one external data file
    ``<file name>.data`` beside ``path`` (``onnx.save_model`` with
    ``save_as_external_data``; an old data file there is replaced);
    ``onnx.load`` and onnxruntime find it there. ``model`` itself is not
    modified.
    """
    path = Path(path)
    if model.ByteSize() <= external_data_threshold:
        onnx.save_model(model, path)
        return
    data = path.with_name(f"{path.name}.data")
    data.unlink(missing_ok=True)  # onnx appends to an existing data file
    copy = onnx.ModelProto()
    copy.CopyFrom(model)  # save_as_external_data rewrites the tensors in place
    onnx.save_model(copy, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=data.name, size_threshold=1024)


def initializer_bytes(model) -> int:
    """Total bytes of the initializers of an ``onnx_ir.Model`` (its main
    graph), without serializing anything."""
    return sum(v.const_value.nbytes for v in model.graph.initializers.values() if v.const_value is not None)


def save_ir_model(model, path: str | os.PathLike, *, external_data_threshold: int = PROTOBUF_LIMIT) -> None:
    """Write an ``onnx_ir.Model`` to ``path``.

    When its initializers hold more than ``external_data_threshold`` bytes,
    every initializer of at least 1 KiB goes to ``<file name>.data`` beside
    ``path`` (``onnx_ir.save`` with ``external_data``: tensors are streamed
    from their NumPy arrays, no protobuf copy of the weights is made, so
    models past protobuf's 2 GB limit work); else one self-contained file.
    ``model`` is not modified. ``onnx.load`` and onnxruntime find the data
    file beside the model.
    """
    import onnx_ir as oir

    path = Path(path)
    if initializer_bytes(model) <= external_data_threshold:
        oir.save(model, path)
        return
    oir.save(model, path, external_data=f"{path.name}.data", size_threshold_bytes=1024)
