"""Elementwise ops: unary math, binary arithmetic, comparisons, logic,
``where``, ``clip`` and ``cast``. All broadcast like NumPy.

Semantics are NumPy's (which PyTensor's scalar ops follow): ``floor_div`` and
``mod`` round toward negative infinity (Python rules), ``div`` is true
division on floats, ``round_half_even`` is ``np.round`` and
``round_half_away`` is C ``round``. The emitter decomposes the ops ONNX lacks.
"""

from __future__ import annotations

import numpy as np
import scipy.special

from ir.ops.common import BOOL, broadcast_shapes, check_dtype, same_dtype
from ir.opdef import (BROADCASTING, ELEMENTWISE, NO_NEG_INF, TOTAL, TOTAL_ON_FLOATS, Attr, OpDef, OpError,
                      register)
from ir.types import TensorType


# Unary ops whose result is never -inf: >= 0 or NaN (cosh >= 1).
NEVER_NEG_INF = {"abs", "exp", "exp2", "sqrt", "cosh", "sigmoid", "softplus", "relu"}


def _unary(name: str, fn, allowed: str, doc: str, out_bool: bool = False) -> OpDef:
    def infer(types, attrs, consts):
        check_dtype(types[0], allowed, name)
        return [TensorType(BOOL, types[0].shape) if out_bool else types[0]]

    def evaluate(args, attrs):
        out = fn(args[0])
        return [np.asarray(out, dtype=bool if out_bool else args[0].dtype)]

    traits = {ELEMENTWISE, TOTAL} | ({NO_NEG_INF} if name in NEVER_NEG_INF else set())
    return register(OpDef(name, infer, evaluate, 1, traits=traits, doc=doc))


def _nary(name: str, fn, allowed: str, doc: str, arity: int = 2, out_bool: bool = False,
          commutative: bool = False, total: str = TOTAL) -> OpDef:
    def infer(types, attrs, consts):
        dtype = same_dtype(types, name)
        check_dtype(types[0], allowed, name)
        shape = broadcast_shapes([t.shape for t in types], name)
        if not out_bool and shape == types[0].shape:
            return [types[0]]  # the first input's type (the common case: no new TensorType)
        return [TensorType(BOOL if out_bool else dtype, shape)]

    def evaluate(args, attrs):
        out = fn(*args)
        return [np.asarray(out, dtype=bool if out_bool else args[0].dtype)]

    return register(OpDef(name, infer, evaluate, arity, commutative=commutative,
                          traits={ELEMENTWISE, BROADCASTING, total}, doc=doc))


def _round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) == 0.5, t + np.sign(x), np.round(x))


NUM = "iuf"  # any number
SIGNED = "if"
FLOAT = "f"
INT_OR_BOOL = "iub"

# name, NumPy semantics, allowed dtypes
for _name, _fn, _allowed in [
    ("neg", np.negative, SIGNED),
    ("abs", np.abs, NUM),
    ("sign", np.sign, NUM),
    ("exp", np.exp, FLOAT), ("exp2", np.exp2, FLOAT), ("expm1", np.expm1, FLOAT),
    ("log", np.log, FLOAT), ("log2", np.log2, FLOAT), ("log10", np.log10, FLOAT),
    ("log1p", np.log1p, FLOAT),
    ("sqrt", np.sqrt, FLOAT), ("reciprocal", np.reciprocal, FLOAT),
    ("sin", np.sin, FLOAT), ("cos", np.cos, FLOAT), ("tan", np.tan, FLOAT),
    ("asin", np.arcsin, FLOAT), ("acos", np.arccos, FLOAT), ("atan", np.arctan, FLOAT),
    ("sinh", np.sinh, FLOAT), ("cosh", np.cosh, FLOAT), ("tanh", np.tanh, FLOAT),
    ("asinh", np.arcsinh, FLOAT), ("acosh", np.arccosh, FLOAT), ("atanh", np.arctanh, FLOAT),
    ("erf", scipy.special.erf, FLOAT),
    ("sigmoid", scipy.special.expit, FLOAT),
    ("softplus", lambda x: np.logaddexp(np.zeros_like(x), x), FLOAT),
    ("floor", np.floor, FLOAT), ("ceil", np.ceil, FLOAT), ("trunc", np.trunc, FLOAT),
    ("round_half_even", np.round, FLOAT),
    ("round_half_away", _round_half_away, FLOAT),
    ("invert", np.invert, INT_OR_BOOL),  # logical not on bool, bitwise not on ints
]:
    _unary(_name, _fn, _allowed, doc=f"NumPy {getattr(_fn, '__name__', _name)} elementwise")

for _name, _fn in [("isnan", np.isnan), ("isinf", np.isinf)]:
    _unary(_name, _fn, FLOAT, doc=f"NumPy {_name}", out_bool=True)

# name, NumPy semantics, allowed dtypes, commutative
for _name, _fn, _allowed, _comm in [
    ("add", np.add, NUM, True),
    ("sub", np.subtract, NUM, False),
    ("mul", np.multiply, NUM, True),
    ("div", np.true_divide, FLOAT, False),
    ("floor_div", np.floor_divide, NUM, False),  # PyTensor IntDiv: rounds toward -inf; x // 0 traps on ints
    ("mod", np.mod, NUM, False),  # sign of the divisor, like Python's %
    ("pow", np.power, NUM, False),  # integer x ** -1 raises
    ("maximum", np.maximum, NUM + "b", True),  # NaN propagates
    ("minimum", np.minimum, NUM + "b", True),
    ("and", np.bitwise_and, INT_OR_BOOL, True),  # logical on bool, bitwise on ints
    ("or", np.bitwise_or, INT_OR_BOOL, True),
    ("xor", np.bitwise_xor, INT_OR_BOOL, True),
    ("shift_right", np.right_shift, "u", False),  # logical shift of unsigned ints; 0 from a shift >= the width
]:
    _nary(_name, _fn, _allowed, doc=f"NumPy {_fn.__name__} with broadcasting", commutative=_comm,
          total=TOTAL_ON_FLOATS if _name in ("div", "floor_div", "mod", "pow") else TOTAL)

for _name, _fn, _comm in [
    ("eq", np.equal, True), ("ne", np.not_equal, True),
    ("lt", np.less, False), ("le", np.less_equal, False),
    ("gt", np.greater, False), ("ge", np.greater_equal, False),
]:
    _nary(_name, _fn, NUM + "b", doc=f"NumPy {_fn.__name__}, bool result", out_bool=True, commutative=_comm)


def _clip_eval(x, lo, hi):
    # PyTensor's scalar Clip: x < lo ? lo : (x > hi ? hi : x); NaN x stays NaN.
    return np.where(x < lo, lo, np.where(x > hi, hi, x))


_nary("clip", _clip_eval, NUM, arity=3,
      doc="clip(x, lo, hi) = lo if x < lo else hi if x > hi else x (PyTensor Clip; NaN x passes through)")


def _where_infer(types, attrs, consts):
    cond, a, b = types
    if cond.dtype != BOOL:
        raise OpError(f"where: condition must be bool, got {cond.dtype}")
    dtype = same_dtype([a, b], "where")
    return [TensorType(dtype, broadcast_shapes([t.shape for t in types], "where"))]


register(OpDef("where", _where_infer, lambda args, attrs: [np.where(*args)], 3,
               traits={ELEMENTWISE, BROADCASTING, TOTAL}, doc="where(cond, a, b): NumPy where (PyTensor Switch)"))


def _cast_infer(types, attrs, consts):
    return [types[0].with_dtype(attrs["to"])]


def _cast_eval(args, attrs):
    return [np.asarray(args[0]).astype(attrs["to"].numpy)]


register(OpDef("cast", _cast_infer, _cast_eval, 1, attrs={"to": Attr("dtype")}, traits={ELEMENTWISE, TOTAL},
               doc="NumPy astype: floats to ints truncate toward zero; nonzero to bool is true"))
