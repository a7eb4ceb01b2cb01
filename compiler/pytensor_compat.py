"""The differences between the PyTensor lines this project supports (2.38.x,
PyMC's pin, and 3.0.x) that the PyTensor mode (``compiler.mode``) depends on,
kept in one place.

- The rewrite tag of the scan rewrite that pre-allocates the trace buffer:
  ``scan_save_mem_prealloc`` in 2.38, ``scan_reduce_trace_prealloc`` in 3.0
  (the Numba linker excludes it under either name).
- ``configdefaults._filter_mode`` accepts only a fixed list of mode names
  in both lines, so ``PYTENSOR_FLAGS=mode=ONNX`` is rejected when PyTensor
  is imported, before any plugin could register a mode; a ``Mode``
  instance is accepted (``pytensor.config.mode = ONNX_MODE``).
"""

from __future__ import annotations

import pytensor

PYTENSOR_VERSION = tuple(int(p) for p in pytensor.__version__.split("+")[0].split(".")[:2])
IS_PYTENSOR_3 = PYTENSOR_VERSION >= (3, 0)

SCAN_PREALLOC_TAG = "scan_reduce_trace_prealloc" if IS_PYTENSOR_3 else "scan_save_mem_prealloc"
