"""The base of the ``nn`` helpers' ops, and the argument and window utilities
they share.

Every helper builds an ordinary PyTensor graph (PyTensor evaluates and
differentiates it) and wraps it in an ``NNOp``: an ``OpFromGraph`` subclass
whose class names the operation and whose attributes (``attr_names``) hold
its parameters, as PyTensor's own ``Pad`` and ``Softmax`` do. Lowering reads
the class and the attributes and emits one IR op
(``compiler/nn/lowering.py``); anything else that sees the node
(PyTensor's linkers, the gradient) uses the inner graph.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar, Sequence

import numpy as np
import pytensor.tensor as pt
from pytensor import config
from pytensor.compile.builders import OpFromGraph

SHARED_OPS = 4096  # distinct (op, input types, parameters) signatures kept by ``NNOp.apply``


class NNOp(OpFromGraph):
    """An ``OpFromGraph`` holding the graph of one ``nn`` operation plus the
    parameters that define it.

    Subclasses list their parameter names in ``attr_names`` and build their
    graph in ``inner_graph(*inputs, **attrs)``; ``apply(inputs, **attrs)``
    builds the inner graph on fresh variables of the inputs' types (so the
    op's output type is exact, static shapes included) and applies the op.

    The ops are ``inline``: ``pytensor.function`` replaces them by their
    inner graph before optimizing (rewrite ``inline_ofg_expansion``), so
    training graphs are optimized and compiled as a whole, and PyTensor's
    Numba backend compiles no separate inner function per op (measured:
    minutes of first-call compilation without inlining). Raw graphs keep the
    ops, which is what ``compile_to_onnx(inputs, outputs=...)`` lowers
    directly; a compiled ``pytensor.function`` holds the inlined graph.

    The gradient is ``OpFromGraph``'s: an ``OpFromGraph`` built from
    ``pytensor.grad`` of the inner graph. No ``__props__`` are declared, so
    equality stays ``OpFromGraph``'s (identity in PyTensor 2, the inner graph
    in PyTensor 3), which the inner graph makes consistent with the
    attributes.
    """

    attr_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, inputs: Sequence, outputs: Sequence, **kwargs: Any):
        for name in self.attr_names:
            setattr(self, name, kwargs.pop(name))
        kwargs.setdefault("inline", True)
        super().__init__(list(inputs), list(outputs), **kwargs)

    @classmethod
    def inner_graph(cls, *inputs, **attrs) -> pt.TensorVariable:  # pragma: no cover - abstract
        raise NotImplementedError(cls.__name__)

    @classmethod
    def apply(cls, inputs: Sequence, **attrs: Any) -> pt.TensorVariable:
        """The output variable of this op applied to ``inputs`` (tensor
        variables) with the parameters ``attrs``. Ops are shared between
        calls with equal input types and parameters (``_shared_op``): a
        network's repeated layers build their inner graph once."""
        types = tuple(v.type for v in inputs)
        try:
            key = tuple(sorted(attrs.items()))
            hash(key)
        except TypeError:  # an unhashable parameter: a fresh op
            return cls._new_op(types, attrs)(*inputs)
        return _shared_op(cls, types, key)(*inputs)

    @classmethod
    def _new_op(cls, types: tuple, attrs: dict) -> "NNOp":
        """A new op of this class for inputs of ``types``; the inner graph is
        built without PyTensor's per-node stack traces (nothing reports
        inner nodes: lowering reads the op, PyTensor inlines the graph)."""
        with config.change_flags(traceback__limit=0):
            inner = [t() for t in types]
            output = cls.inner_graph(*inner, **attrs)
            return cls(inner, [output], **attrs)

    @property
    def attrs(self) -> dict[str, Any]:
        """The parameters, by name."""
        return {name: getattr(self, name) for name in self.attr_names}

    def __str__(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.attrs.items())
        return f"{type(self).__name__}{{{params}}}" if params else type(self).__name__


@functools.lru_cache(maxsize=SHARED_OPS)
def _shared_op(cls: type, types: tuple, key: tuple) -> NNOp:
    """The op of ``cls`` for inputs of ``types`` and parameters ``key``
    (sorted items), built once per distinct signature."""
    return cls._new_op(types, dict(key))


# -- arguments -------------------------------------------------------------
def pair(value, what: str, minimum: int) -> tuple[int, int]:
    """``value`` (an int or a pair of ints) as a pair of ints >= ``minimum``.

    Raises:
        ValueError: not an int or a pair of ints, or below ``minimum``.
    """
    items = (value, value) if isinstance(value, int) else tuple(value)
    if len(items) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise ValueError(f"{what} must be an int or a pair of ints, got {value!r}")
    if min(items) < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {value!r}")
    return items


def check_rank(x, rank: int, what: str) -> None:
    """Raise ValueError unless PyTensor variable ``x`` has ``rank`` dims."""
    if x.type.ndim != rank:
        raise ValueError(f"{what} must have {rank} dims, got {x.type}")


def check_float(x, what: str) -> None:
    """Raise TypeError unless ``x`` has a float dtype."""
    if not x.type.dtype.startswith("float"):
        raise TypeError(f"{what} must be a float tensor, got {x.type.dtype}")


# -- sliding windows --------------------------------------------------------
def output_size(size: int | None, kernel: int, stride: int, pad: int, dilation: int, what: str) -> int | None:
    """The output length of a window op along one axis, ``floor((size + 2 pad
    - dilation (kernel - 1) - 1) / stride) + 1`` (ONNX Conv / PyTorch), or
    None when ``size`` is not static.

    Raises:
        ValueError: the window does not fit in the padded input.
    """
    if size is None:
        return None
    extent = dilation * (kernel - 1) + 1
    if size + 2 * pad < extent:
        raise ValueError(f"{what}: window of extent {extent} does not fit in size {size} padded by {pad}")
    return (size + 2 * pad - extent) // stride + 1


def pad_spatial(x, padding: tuple[int, int], fill) -> pt.TensorVariable:
    """``x`` (N, C, H, W) with ``padding[0]`` rows above and below and
    ``padding[1]`` columns left and right set to the scalar ``fill``
    (``np.pad(mode="constant")``)."""
    ph, pw = padding
    if ph == 0 and pw == 0:
        return x
    # static dims as ints: a symbolic shape makes ``pt.full`` infer its static shape by rewriting a
    # FunctionGraph (most of a cold ``compiler.nn`` build's time)
    n, c, h, w = (d if d is not None else x.shape[i] for i, d in enumerate(x.type.shape))
    full = pt.full((n, c, h + 2 * ph, w + 2 * pw), pt.as_tensor_variable(fill).astype(x.dtype))
    return pt.set_subtensor(full[:, :, ph:-ph if ph else None, pw:-pw if pw else None], x)


def window_index(size_padded, kernel: int, stride: int, dilation: int):
    """Input index of every (kernel offset, output position) along one axis:
    ``index[i, o] = i * dilation + o * stride``, shape (kernel, out). A NumPy
    int64 constant when ``size_padded`` is a static int, else a symbolic
    PyTensor expression."""
    extent = dilation * (kernel - 1) + 1
    if isinstance(size_padded, int):
        out = (size_padded - extent) // stride + 1
        return np.arange(kernel)[:, None] * dilation + np.arange(out)[None, :] * stride
    out = (size_padded - extent) // stride + 1
    return pt.arange(kernel)[:, None] * dilation + pt.arange(out)[None, :] * stride


def windows(xp, kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int]):
    """Every window of the padded input ``xp`` (N, C, Hp, Wp), gathered with
    one advanced index: the result is (N, C, kh, OH, kw, OW) with
    ``result[n, c, i, oh, j, ow] = xp[n, c, oh*sh + i*dh, ow*sw + j*dw]``.

    One gather (and one scatter-add in the gradient) keeps the graph small
    whatever the kernel size, which matters to PyTensor's compilers."""
    hp = xp.type.shape[2] if xp.type.shape[2] is not None else xp.shape[2]
    wp = xp.type.shape[3] if xp.type.shape[3] is not None else xp.shape[3]
    rows = window_index(hp, kernel[0], stride[0], dilation[0])
    cols = window_index(wp, kernel[1], stride[1], dilation[1])
    return xp[:, :, rows[:, :, None, None], cols[None, None, :, :]]
