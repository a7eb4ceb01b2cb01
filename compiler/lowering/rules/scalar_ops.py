"""Lowering of PyTensor scalar ops (``pytensor.scalar``) to IR elementwise ops.

This is the table behind ``Elemwise`` (and fused ``Composite``) lowering: a
scalar rule turns one scalar ``Apply`` into IR values. The IR values stand
for whole tensors, so a scalar op applied elementwise is the same IR op on
tensors (every IR elementwise op broadcasts like NumPy).

A scalar rule is ``rule(ctx, node, args) -> list[Value]``:

- ``node`` is the scalar ``Apply``; its inputs and outputs are
  ``ScalarType`` variables whose dtypes are PyTensor's;
- ``args`` are the IR values of the inputs (any rank), with those dtypes;
- the results have the outputs' dtypes and the broadcast shape of *all* of
  ``args`` (``lower_scalar_graph`` relies on that to find which outputs need
  an explicit broadcast).

Dtypes follow what PyTensor computes. ``Elemwise.perform`` runs the NumPy
ufunc with a signature in the output dtype when integers meet a float op (and
the C backend casts to the output type), so arithmetic and math ops cast their
inputs to the output dtype and compute there; comparisons compare in
``pytensor.scalar.upcast`` of their inputs. The semantics of each op are its
``impl`` / ``nfunc_spec`` in ``pytensor/scalar/basic.py`` and ``math.py``.
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np
import pytensor.scalar as ps
import pytensor.scalar.math as psm
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import io_toposort
from pytensor.tensor.math import MulWithoutZeros

from compiler.lowering.errors import LoweringError, Unsupported
from compiler.lowering.compat import Iv, XlogX, XlogY0
from compiler.lowering.context import LoweringContext, ir_dtype
from compiler.lowering.registry import class_table_decorator, find_in_mro
from ir import DType, Value
from ir.ops import get_op

ScalarRule = Callable[[LoweringContext, object, list], list]

_SCALAR_RULES: dict[type, ScalarRule] = {}

BOOL = DType.BOOL


# Decorator registering a scalar rule for each PyTensor ``ScalarOp`` class
# given (ValueError if a class already has one).
scalar_rule = class_table_decorator(_SCALAR_RULES, "scalar")


def supported_scalar_ops() -> list[type]:
    """Every PyTensor ``ScalarOp`` class with a scalar rule."""
    return list(_SCALAR_RULES)


@functools.cache
def _rule_of(op_type: type) -> ScalarRule | None:
    return find_in_mro(_SCALAR_RULES, op_type)


def lower_scalar_node(ctx: LoweringContext, node, args: Sequence[Value]) -> list[Value]:
    """IR values for the scalar ``Apply`` ``node`` applied elementwise to ``args``.

    The rule runs once per ``node`` and signature of ``args`` (types,
    constants, aliasing) and is replayed after that
    (``LoweringContext.memoized``): ``lower_elemwise`` hands every
    ``Elemwise`` of one scalar op and input dtypes the same ``node``.

    Raises:
        Unsupported: the scalar op has no exact IR lowering (the message names it).
        LoweringError: a rule returned values of the wrong dtype (a bug here).
    """
    rule = _rule_of(type(node.op))
    if rule is None:
        for var in node.outputs:
            ir_dtype(var)  # a complex result says so, whatever its op
        raise Unsupported(f"scalar op {node.op} ({type(node.op).__name__}) has no exact ONNX lowering")
    return ctx.memoized(("scalar", node), args, lambda: _checked(ctx, rule, node, args))


def _checked(ctx: LoweringContext, rule: ScalarRule, node, args: Sequence[Value]) -> list[Value]:
    """``rule``'s values for ``node``, checked against PyTensor's output dtypes."""
    results = rule(ctx, node, list(args))
    for var, value in zip(node.outputs, results, strict=True):
        if value.dtype != ir_dtype(var):
            raise LoweringError(f"scalar op {node.op} lowered to {value.dtype}, PyTensor says {var.type.dtype}")
    return results


def lower_scalar_graph(ctx: LoweringContext, inputs: Sequence, outputs: Sequence,
                       args: Sequence[Value]) -> list[Value]:
    """Inline a graph of scalar ops (a ``Composite``'s ``fgraph``, or a single
    scalar ``Apply``) on the IR values ``args`` (one per scalar input).

    Constants become 0-d IR constants of their dtype. Every output is
    broadcast against every argument, as ``Elemwise`` broadcasts all its
    inputs even when an output reads only some of them (``second``, or a
    ``Composite`` output that ignores an input).

    Returns:
        One IR value per scalar output, with the output's dtype.

    Raises:
        Unsupported: some inner scalar ops have no exact lowering (all of
            them are named).
    """
    env: dict = {}
    deps: dict = {}  # scalar variable -> bitmask of the inputs it broadcasts over
    for i, (var, arg) in enumerate(zip(inputs, args, strict=True)):
        env[var] = arg
        deps[var] = 1 << i

    def value(var) -> Value:
        if var not in env:
            if not isinstance(var, Constant):
                raise Unsupported(f"scalar graph reads {var}, which is neither an input nor a constant")
            env[var] = ctx.const(np.asarray(var.data, dtype=var.type.dtype))
            deps[var] = 0
        return env[var]

    key = ("scalar-graph", *inputs, None, *outputs)
    order = ctx.memo.get(key)
    if order is None:  # a Composite's inner graph is sorted once per lowering, not per Elemwise
        order = ctx.memo[key] = io_toposort(list(inputs), list(outputs))
    missing_ops: dict[str, None] = {}  # every unsupported scalar op, reported together
    for node in order:
        node_args = [value(v) for v in node.inputs]
        mask = 0
        for v in node.inputs:
            mask |= deps[v]
        try:
            results = lower_scalar_node(ctx, node, node_args)
        except Unsupported as e:
            missing_ops[str(e)] = None
            results = [ctx.scalar(0, ir_dtype(v)) for v in node.outputs]  # stand-ins, to go on
        for var, result in zip(node.outputs, results, strict=True):
            env[var] = result
            deps[var] = mask
    if missing_ops:
        raise Unsupported("; ".join(missing_ops))
    everything = (1 << len(args)) - 1
    results = []
    for var in outputs:
        out = value(var)
        missing = [a for i, a in enumerate(args) if not deps[var] >> i & 1]
        if deps[var] != everything:
            out = broadcast_against(ctx, out, missing)
        results.append(out)
    return results


def broadcast_against(ctx: LoweringContext, value: Value, others: Sequence[Value]) -> Value:
    """``value`` broadcast (NumPy rules) against each of ``others``; no node
    when the static shapes show it already has the broadcast shape."""
    for other in others:
        if not _covers(value.shape, other.shape):
            value = ctx.add("expand", [value, shape_of(ctx, other)])
    return value


def _covers(shape: tuple, other: tuple) -> bool:
    """Whether broadcasting a tensor of ``shape`` against ``other`` surely
    leaves its shape unchanged."""
    if len(shape) < len(other):
        return False
    for a, b in zip(shape[len(shape) - len(other):], other):
        if not (b == 1 or a == b or (isinstance(a, int) and a != 1)):
            return False
    return True


def shape_of(ctx: LoweringContext, value: Value) -> Value:
    """The shape of ``value`` as an i64[rank] value: a constant when static."""
    if value.type.is_static:
        return ctx.i64(value.shape)
    return ctx.add("shape", [value])


def out_dtype(node, i: int = 0) -> DType:
    """The IR dtype of output ``i`` of scalar Apply ``node``."""
    return ir_dtype(node.outputs[i])


def _fold(ctx: LoweringContext, op: str, args: Sequence[Value]) -> Value:
    if get_op(op).num_inputs == len(args):  # fixed arity (betainc): one node
        return ctx.add(op, list(args))
    out = args[0]
    for a in args[1:]:
        out = ctx.add(op, [out, a])
    return out


# -- ops computed in the output dtype ------------------------------------
# PyTensor scalar op -> IR op. Inputs are cast to the output dtype first;
# n-ary Add/Mul fold left, as PyTensor's impl (Python ``sum``) does.
ARITHMETIC = {
    ps.Add: "add",
    ps.Mul: "mul",
    ps.Sub: "sub",
    ps.TrueDiv: "div",  # int / int gives floatX: PyTensor's output type
    ps.IntDiv: "floor_div",  # np.floor_divide, also on floats
    ps.Mod: "mod",  # np.mod: sign of the divisor
    ps.Pow: "pow",
    ps.Maximum: "maximum",
    ps.Minimum: "minimum",
    ps.AND: "and", ps.OR: "or", ps.XOR: "xor", ps.Invert: "invert",  # logical on bool, bitwise on ints
    ps.Neg: "neg",
    ps.Abs: "abs",
    ps.Sign: "sign",
    ps.Exp: "exp", ps.Exp2: "exp2", ps.Expm1: "expm1",
    ps.Log: "log", ps.Log2: "log2", ps.Log10: "log10", ps.Log1p: "log1p",
    ps.Sqrt: "sqrt", ps.Reciprocal: "reciprocal",
    ps.Sin: "sin", ps.Cos: "cos", ps.Tan: "tan",
    ps.ArcSin: "asin", ps.ArcCos: "acos", ps.ArcTan: "atan",
    ps.Sinh: "sinh", ps.Cosh: "cosh", ps.Tanh: "tanh",
    ps.ArcSinh: "asinh", ps.ArcCosh: "acosh", ps.ArcTanh: "atanh",
    psm.Erf: "erf",
    # special functions (ir/ops/special.py; model-local ONNX functions when emitted)
    psm.GammaLn: "gammaln", psm.Gamma: "gamma", psm.Psi: "psi", psm.TriGamma: "trigamma",
    psm.Erfc: "erfc", psm.Erfcx: "erfcx", psm.Erfinv: "erfinv", psm.Erfcinv: "erfcinv",
    psm.I0: "i0", psm.I1: "i1", ps.ArcTan2: "atan2", psm.J0: "j0", psm.J1: "j1",
    psm.GammaInc: "gammainc", psm.GammaIncC: "gammaincc", psm.BetaInc: "betainc", psm.Kve: "kve",
    psm.Owens_t: "owens_t",
    psm.GammaIncInv: "gammaincinv", psm.GammaIncCInv: "gammainccinv", psm.BetaIncInv: "betaincinv",
    psm.Hyp2F1: "hyp2f1",
    psm.Sigmoid: "sigmoid",
    psm.Softplus: "softplus",
    ps.Floor: "floor", ps.Ceil: "ceil", ps.Trunc: "trunc",  # int inputs give floats (upgrade_to_float)
    ps.RoundHalfToEven: "round_half_even",  # np.round
    ps.RoundHalfAwayFromZero: "round_half_away",  # C round
}

# On bool the NumPy ufuncs behave as these IR ops (np.add on bools is "or").
BOOL_EQUIVALENT = {"add": "or", "mul": "and"}
# Ops with no IR bool form: NumPy computes them on bools in int8, then
# PyTensor casts the result back to bool.
BOOL_VIA_INT8 = {"floor_div", "mod"}


@scalar_rule(*ARITHMETIC)
def _arithmetic(ctx, node, args):
    op = find_in_mro(ARITHMETIC, node.op)
    dtype = out_dtype(node)
    args = [ctx.cast(a, dtype) for a in args]
    if dtype == BOOL:
        if op == "abs":
            return [args[0]]
        if op in BOOL_VIA_INT8:
            return [ctx.cast(_fold(ctx, op, [ctx.cast(a, DType.INT8) for a in args]), BOOL)]
        op = BOOL_EQUIVALENT.get(op, op)
    if op == "neg" and not dtype.is_signed:  # np.negative on unsigned ints wraps around
        return [ctx.add("sub", [ctx.scalar(0, dtype), args[0]])]
    if len(args) == 1:
        return [ctx.add(op, args)]
    return [_fold(ctx, op, args)]


# -- comparisons: in the upcast of the inputs, bool result -----------------
COMPARISONS = {ps.LT: "lt", ps.GT: "gt", ps.LE: "le", ps.GE: "ge", ps.EQ: "eq", ps.NEQ: "ne"}


@scalar_rule(*COMPARISONS)
def _comparison(ctx, node, args):
    dtype = DType.from_numpy(ps.upcast(*(v.type.dtype for v in node.inputs)))
    return [ctx.add(COMPARISONS[type(node.op)], [ctx.cast(a, dtype) for a in args])]


@scalar_rule(ps.IsNan, ps.IsInf)
def _isnan_isinf(ctx, node, args):
    (x,) = args
    if not x.dtype.is_float:  # integers are never NaN or Inf: x != x is all false
        return [ctx.add("ne", [x, x])]
    return [ctx.add("isnan" if isinstance(node.op, ps.IsNan) else "isinf", [x])]


# -- selection and structure ---------------------------------------------
@scalar_rule(ps.Switch)
def _switch(ctx, node, args):
    cond, a, b = args
    dtype = out_dtype(node)
    return [ctx.add("where", [ctx.cast(cond, BOOL), ctx.cast(a, dtype), ctx.cast(b, dtype)])]


@scalar_rule(ps.Clip)
def _clip(ctx, node, args):
    dtype = out_dtype(node)
    x, lo, hi = (ctx.cast(a, dtype) for a in args)
    if dtype == BOOL:  # Clip.impl: lo if x < lo else hi if x > hi else x
        return [ctx.add("where", [ctx.add("lt", [x, lo]), lo,
                                  ctx.add("where", [ctx.add("gt", [x, hi]), hi, x])])]
    return [ctx.add("clip", [x, lo, hi])]


@scalar_rule(ps.Second)
def _second(ctx, node, args):
    first, second = args  # the value of the second, broadcast to the shape of both
    return [broadcast_against(ctx, second, [first])]


@scalar_rule(ps.Identity)
def _identity(ctx, node, args):
    return [args[0]]


@scalar_rule(ps.Cast)
def _cast(ctx, node, args):
    return [ctx.cast(args[0], out_dtype(node))]


# -- exact decompositions ------------------------------------------------
@scalar_rule(ps.Sqr)
def _sqr(ctx, node, args):
    (x,) = args
    if x.dtype == BOOL:  # x * x on bools is x
        return [x]
    return [ctx.add("mul", [x, x])]


@scalar_rule(ps.Deg2Rad, ps.Rad2Deg)
def _deg_rad(ctx, node, args):
    # NumPy's loops: deg2rad(x) = x * (pi / 180) with pi and the quotient in the
    # output precision (float32: NPY_PIf / 180.0f); rad2deg(x) = x * (180 / pi).
    dtype = out_dtype(node)
    pi, half_turn = dtype.numpy.type(np.pi), dtype.numpy.type(180)
    factor = pi / half_turn if isinstance(node.op, ps.Deg2Rad) else half_turn / pi
    return [ctx.add("mul", [ctx.cast(args[0], dtype), ctx.scalar(factor, dtype)])]


@scalar_rule(psm.Log1mexp)
def _log1mexp(ctx, node, args):
    # Log1mexp.impl: log1p(-exp(x)) if x < log(0.5) else log(-expm1(x))
    dtype = out_dtype(node)
    x = ctx.cast(args[0], dtype)
    small = ctx.add("lt", [x, ctx.scalar(np.log(0.5), dtype)])
    via_exp = ctx.add("log1p", [ctx.add("neg", [ctx.add("exp", [x])])])
    via_expm1 = ctx.add("log", [ctx.add("neg", [ctx.add("expm1", [x])])])
    return [ctx.add("where", [small, via_exp, via_expm1])]


def _known_value(value: Value, depth: int = 8) -> np.ndarray | None:
    """The value of ``value`` when it is a constant or computed from constants
    only (a DimShuffle of a constant, or ``v - 1`` in a gradient), evaluated
    with the IR ops' reference semantics; else None."""
    if value.const is not None:
        return value.const
    node = value.producer
    if node is None or depth == 0 or node.subgraphs:
        return None
    inputs = [_known_value(v, depth - 1) for v in node.inputs]
    if any(v is None for v in inputs):
        return None
    return get_op(node.op).evaluate(inputs, node.attrs)[value.index]


@scalar_rule(psm.GammaU, psm.GammaL)
def _unregularized_incomplete_gamma(ctx, node, args):
    # GammaU.impl / GammaL.impl: scipy.special.gammaincc(k, x) * gamma(k) (gammainc for GammaL)
    dtype = out_dtype(node)
    k, x = (ctx.cast(a, dtype) for a in args)
    regularized = ctx.add("gammaincc" if isinstance(node.op, psm.GammaU) else "gammainc", [k, x])
    return [ctx.add("mul", [regularized, ctx.add("gamma", [k])])]


@scalar_rule(psm.PolyGamma)
def _polygamma(ctx, node, args):
    # PolyGamma.impl: scipy.special.polygamma(n, x); n = 0 is psi, n = 1 trigamma
    # an order known only at run time (or differing per element) is the general op (rules/polygamma_order_f64.py)
    ctx.reads_values()
    order = _known_value(args[0])
    if order is None or np.unique(order).size != 1 or not float(np.ravel(order)[0]).is_integer():
        return [ctx.add("polygamma_order", [ctx.cast(a, out_dtype(node)) for a in args])]
    n = int(np.ravel(order)[0])
    x = ctx.cast(args[1], out_dtype(node))
    if n < 0:  # SciPy's value (PolyGamma.impl) is NaN everywhere
        return [ctx.add("mul", [x, ctx.const(np.array(np.nan, dtype=out_dtype(node).numpy))])]
    if n <= 1:
        return [ctx.add("psi" if n == 0 else "trigamma", [x])]
    return [ctx.add("polygamma", [x], {"n": n})]


def _bessel_i(scaled: bool):
    # Ive.impl / Iv.impl: scipy.special.ive(v, x) / iv(v, x); I_{-n} = I_n for integer n.
    # Constant orders 0, +-1, +-2 keep their closed forms; any other order (non-integer, large,
    # or a run-time tensor) is the general ive/iv op (Temme's method: rules/bessel_ik_f64.py).
    def rule(ctx, node, args):
        dtype = out_dtype(node)
        x = ctx.cast(args[1], dtype)
        ctx.reads_values()
        order = _known_value(args[0])
        if order is None or np.unique(order).size != 1 or float(np.ravel(order)[0]) not in (0, 1, 2, -1, -2):
            return [ctx.add("ive" if scaled else "iv", [ctx.cast(args[0], dtype), x])]
        v = abs(int(np.ravel(order)[0]))
        if v == 2:  # the gradients of i1 and i1e read order 2
            y = ctx.add("i2e", [x])
            if scaled:
                return [y]
            half = ctx.add("exp", [ctx.add("mul", [ctx.add("abs", [x]), ctx.scalar(0.5, dtype)])])
            return [ctx.add("mul", [ctx.add("mul", [y, half]), half])]
        return [ctx.add(("i0" if v == 0 else "i1") + ("e" if scaled else ""), [x])]
    return rule


scalar_rule(psm.Ive)(_bessel_i(scaled=True))
if Iv is not None:  # PyTensor 2.x (3.0 has no Iv)
    scalar_rule(Iv)(_bessel_i(scaled=False))


@scalar_rule(psm.Jv)
def _jv(ctx, node, args):
    # Jv.impl: scipy.special.jv(v, x). Constant orders 0 and +-1 keep j0/j1 (J_-1 = -J_1); any other
    # order is the general jv op (Steed's method: rules/bessel_jv_f64.py), e.g. the order 2 of j1's gradient.
    dtype = out_dtype(node)
    x = ctx.cast(args[1], dtype)
    ctx.reads_values()
    order = _known_value(args[0])
    if order is None or np.unique(order).size != 1 or float(np.ravel(order)[0]) not in (0, 1, -1):
        return [ctx.add("jv", [ctx.cast(args[0], dtype), x])]
    v = float(np.ravel(order)[0])
    y = ctx.add("j0" if v == 0 else "j1", [x])
    return [ctx.add("neg", [y])] if v == -1 else [y]


@scalar_rule(MulWithoutZeros)
def _mul_without_zeros(ctx, node, args):
    # MulWithoutZeros.impl: y if x == 0 else x if y == 0 else x * y
    dtype = out_dtype(node)
    x, y = (ctx.cast(a, dtype) for a in args)
    zero = ctx.scalar(0, dtype)
    return [ctx.add("where", [ctx.add("eq", [x, zero]), y,
                              ctx.add("where", [ctx.add("eq", [y, zero]), x, ctx.add("mul", [x, y])])])]


def _x_log_y_or_zero(ctx, node, x: Value, y: Value) -> Value:
    # XlogX / XlogY0 impl: 0 if x == 0 else x * log(y)
    dtype = out_dtype(node)
    x, y = ctx.cast(x, dtype), ctx.cast(y, dtype)
    zero = ctx.scalar(0, dtype)
    return ctx.add("where", [ctx.add("eq", [x, zero]), zero, ctx.add("mul", [x, ctx.add("log", [y])])])


if XlogX is not None:  # PyTensor 2.x only; 3.0 builds xlogx from a switch
    scalar_rule(XlogX)(lambda ctx, node, args: [_x_log_y_or_zero(ctx, node, args[0], args[0])])
    scalar_rule(XlogY0)(lambda ctx, node, args: [_x_log_y_or_zero(ctx, node, args[0], args[1])])


@scalar_rule(ps.Composite)
def _composite(ctx, node, args):
    fg = node.op.fgraph
    return lower_scalar_graph(ctx, fg.inputs, fg.outputs, args)
