"""Tensor types of the IR: element dtypes, dims and ``TensorType``.

A dim is an ``int`` (static size), a ``str`` (a named symbolic size, emitted as
an ONNX ``dim_param``), an ``ir.symbolic.Expr`` (an expression over named
sizes such as ``H//2-1``, emitted as a ``dim_param`` of its text) or ``None``
(unknown; printed ``?``). Only an ``int`` is static. The rank of every tensor
is always known, as it is in PyTensor.
"""

from __future__ import annotations

import math

import enum
from dataclasses import FrozenInstanceError
from typing import Union

import numpy as np

from ir.symbolic import Expr, format_dim

Dim = Union[int, str, Expr, None]


class DType(enum.Enum):
    """Element types of the IR, with their short printed names.

    The value of each member is its short name (``"f32"``); ``.numpy`` gives the
    NumPy dtype and ``DType.from_numpy`` goes back.
    """

    BOOL = "bool"
    INT8 = "i8"
    INT16 = "i16"
    INT32 = "i32"
    INT64 = "i64"
    UINT8 = "u8"
    UINT16 = "u16"
    UINT32 = "u32"
    UINT64 = "u64"
    FLOAT16 = "f16"
    FLOAT32 = "f32"
    FLOAT64 = "f64"

    # Members are singletons compared by identity: hash them the same way, in C
    # (Enum's own __hash__ runs Python code, and types are hashed everywhere).
    __hash__ = object.__hash__

    @property
    def numpy(self) -> np.dtype:
        """The NumPy dtype of this element type."""
        return self._numpy

    @classmethod
    def from_numpy(cls, dtype) -> "DType":
        """The IR dtype of a NumPy dtype (or anything ``np.dtype`` accepts, such
        as PyTensor's dtype strings ``"float32"``).

        Raises:
            TypeError: if the dtype has no IR equivalent (complex, strings, ...).
        """
        try:
            return _FROM_NUMPY[np.dtype(dtype)]
        except (KeyError, TypeError):
            raise TypeError(f"dtype {dtype!r} has no IR equivalent") from None

    @classmethod
    def parse(cls, text: str) -> "DType":
        """The dtype whose short name is ``text`` (``"f32"``); ValueError if none."""
        return cls(text)

    @property
    def is_float(self) -> bool:
        return self in (DType.FLOAT16, DType.FLOAT32, DType.FLOAT64)

    @property
    def is_int(self) -> bool:
        return self.numpy.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.numpy.kind in "if"

    def __repr__(self) -> str:
        return f"DType.{self.name}"

    def __str__(self) -> str:
        return self.value


_TO_NUMPY = {d: np.dtype(n) for d, n in zip(DType, [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64"])}
_FROM_NUMPY = {v: k for k, v in _TO_NUMPY.items()}
for _d, _n in _TO_NUMPY.items():
    _d._numpy = _n


_set = object.__setattr__


class TensorType:
    """The type of an IR value: element dtype and shape (one dim per axis).

    ``TensorType(DType.FLOAT32, ("N", 3))`` prints as ``f32[N,3]``; a scalar has
    shape ``()`` and prints as ``f32[]``. Immutable (assigning an attribute
    raises ``dataclasses.FrozenInstanceError``), hashable, equal when dtype
    and shape are. A slotted class rather than a frozen dataclass: every
    node's type rule builds one, and this costs a third of the time.

    Raises:
        TypeError: ``dtype`` is not a ``DType``, or a dim is not an int, a
            str, an ``Expr`` or None. ValueError: a negative dim.
    """

    __slots__ = ("dtype", "shape", "_hash")  # _hash: computed on first use (types key memos and tables)
    __match_args__ = ("dtype", "shape")

    def __init__(self, dtype: DType, shape: tuple[Dim, ...]):
        if dtype.__class__ is not DType:
            raise TypeError(f"TensorType dtype must be a DType, got {dtype!r}")
        shape = tuple(shape)
        normalize = False
        for d in shape:
            kind = type(d)
            if kind is int:
                if d < 0:
                    raise ValueError(f"negative dim {d} in shape {shape!r}")
            elif kind is str or kind is Expr or d is None:
                pass
            elif isinstance(d, np.integer) or (isinstance(d, int) and not isinstance(d, bool)):
                normalize = True
                if d < 0:
                    raise ValueError(f"negative dim {d} in shape {shape!r}")
            else:
                raise TypeError(f"bad dim {d!r} in shape {shape!r}")
        if normalize:
            shape = tuple(int(d) if isinstance(d, (int, np.integer)) else d for d in shape)
        _set(self, "dtype", dtype)
        _set(self, "shape", shape)

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is not TensorType:
            return NotImplemented
        return self.dtype is other.dtype and self.shape == other.shape

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            h = hash((self.dtype, self.shape))
            _set(self, "_hash", h)
            return h

    def __reduce__(self):
        return TensorType, (self.dtype, self.shape)

    def __repr__(self) -> str:
        return f"TensorType(dtype={self.dtype!r}, shape={self.shape!r})"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        """True when every dim is a known integer."""
        return all(isinstance(d, int) for d in self.shape)

    @property
    def size(self) -> int | None:
        """Number of elements when the shape is static, else None."""
        if not self.is_static:
            return None
        return math.prod(self.shape)

    def with_shape(self, shape) -> "TensorType":
        return TensorType(self.dtype, tuple(shape))

    def with_dtype(self, dtype: DType) -> "TensorType":
        return TensorType(dtype, self.shape)

    @classmethod
    def of_array(cls, array: np.ndarray) -> "TensorType":
        """The type of a NumPy array (static shape). Types are immutable, so
        arrays of one dtype and shape (a model's weights) share one."""
        key = (array.dtype, array.shape)
        t = _ARRAY_TYPES.get(key)
        if t is None:
            if len(_ARRAY_TYPES) >= 4096:
                _ARRAY_TYPES.clear()
            t = _ARRAY_TYPES[key] = cls(DType.from_numpy(array.dtype), tuple(int(d) for d in array.shape))
        return t

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(_dim_str(d) for d in self.shape)}]"


_ARRAY_TYPES: dict[tuple, TensorType] = {}  # (NumPy dtype, shape) -> TensorType, see ``TensorType.of_array``


def _dim_str(d: Dim) -> str:
    return format_dim(d)


def dims_compatible(a: Dim, b: Dim) -> bool:
    """Whether two dims may describe the same runtime size (unknown, symbolic
    and expression dims are compatible with anything; two ints must be equal)."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return True


def refine_type(declared: TensorType, inferred: TensorType) -> TensorType | None:
    """``declared`` with each dim made as precise as ``inferred``'s: an int
    for a symbol, an expression or ``?``, and a symbol or an expression for
    ``?``; a declared symbol or expression is kept (it may be the user's name
    for the dim). None when they contradict: another dtype or rank, or two
    different ints."""
    if declared == inferred:
        return declared
    if declared.dtype != inferred.dtype or declared.rank != inferred.rank:
        return None
    dims: list[Dim] = []
    for d, i in zip(declared.shape, inferred.shape):
        if isinstance(d, int):
            if isinstance(i, int) and i != d:
                return None
            dims.append(d)
        elif isinstance(i, int) or d is None:
            dims.append(i)
        else:
            dims.append(d)
    return TensorType(declared.dtype, tuple(dims))


def join_dims(a: Dim, b: Dim) -> Dim:
    """The most precise dim known to equal both ``a`` and ``b`` (which are
    assumed to describe the same runtime size): an int beats a name or an
    expression, which beats None."""
    for d in (a, b):
        if isinstance(d, int):
            return d
    return a if a is not None else b
