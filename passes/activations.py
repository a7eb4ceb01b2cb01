"""``relu-silu``: recover activation functions from their elementwise spellings.

PyTensor has no activation ops beyond sigmoid and softplus: users write
``pt.maximum(x, 0)``, ``x * pt.sigmoid(x)`` and so on, and default-mode
compilation rewrites some spellings further (``x / (1 + exp(-x))`` becomes
``sigmoid(x) * x``, ``x / 6`` becomes ``x * 0.16666667``, ``log1p(exp(x))``
becomes ``softplus(x)``). The rules below match both the raw and the
compiled forms as lowering, ``canonicalize`` and ``constant-folding`` leave
them. ``x`` is any value; ``0``, ``1``, ... are constants whose every element
equals that number (broadcast scalars of any shape that keeps the result's
type); ``a``, ``b`` are such constants of any value.

Relu (``relu``)::

    relu-max     maximum(x, 0), either order
    relu-clip    clip(x, 0, inf)
    relu-where   where(x > 0, x, 0), also with lt(0, x)
    relu-mul     x * cast(x > 0), either order, also with lt(0, x)

    (x a float or a signed integer: relu's dtypes)

        const %zero: f32[1,1] = [[0.0]]
        %y: f32[N,4] = maximum(%x, %zero)        ->   %y: f32[N,4] = relu(%x)

SiLU (``silu``)::

    silu         x * sigmoid(x), either order
    silu-div     x / (1 + exp(-x))

        %s: f32[N,4] = sigmoid(%x)
        %y: f32[N,4] = mul(%s, %x)               ->   %y: f32[N,4] = silu(%x)

LeakyReLU (``leaky_relu{alpha=a}``)::

    leaky-relu       where(x > 0, x, a * x), also lt(0, x), either mul order
    leaky-relu-max   maximum(x, a * x) with 0 <= a <= 1

        const %a: f32[] = 0.1
        const %zero: f32[] = 0.0
        %ax: f32[N,4] = mul(%a, %x)
        %p: bool[N,4] = gt(%x, %zero)
        %y: f32[N,4] = where(%p, %x, %ax)        ->   %y: f32[N,4] = leaky_relu(%x) {alpha=0.10000000149011612}

HardSigmoid (``hard_sigmoid{alpha=a, beta=b}``) and HardSwish (``hard_swish``)::

    hard-sigmoid      clip(a * x + b, 0, 1), maximum(minimum(., 1), 0), minimum(maximum(., 0), 1)
    hard-swish        x * hard_sigmoid(x){alpha=1/6, beta=1/2}, x * clip(x / 6 + 1/2, 0, 1),
                      x * (relu6(x + 3) / 6), x * (relu6(x + 3) * (1/6))
    hard-swish-div    x * relu6(x + 3) / 6
    hard-swish-scaled (x * (1/6)) * relu6(x + 3)        (PyTensor's compiled form)

    where relu6(v) is clip(v, 0, 6), minimum(maximum(v, 0), 6) or maximum(minimum(v, 6), 0).

        %q: f32[N,4] = mul(%sixth, %x)
        %v: f32[N,4] = add(%half, %q)
        %c: f32[N,4] = clip(%v, %zero, %one)
        %y: f32[N,4] = mul(%x, %c)               ->   %y: f32[N,4] = hard_swish(%x)

GELU (``gelu{approximate}``), with ``0.5 * x * t`` in any of the groupings
``(0.5 x) t``, ``x (0.5 t)``, ``0.5 (x t)`` and ``(x t) / 2``::

    gelu-erf     t = 1 + erf(x / sqrt(2)) or 1 + erf(x * 0.7071...)
    gelu-tanh    t = 1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)), x^3 as pow(x, 3) or x * x * x

        %h: f32[N,4] = mul(%x, %half)
        %e: f32[N,4] = erf(%xs)                  # %xs = mul(%x, 0.70710677)
        %t: f32[N,4] = add(%one, %e)
        %y: f32[N,4] = mul(%h, %t)               ->   %y: f32[N,4] = gelu(%x) {approximate="none"}

Softplus (the IR's ``softplus``) and LogSoftmax (``log_softmax{axis}``)::

    softplus-log1p        log1p(exp(x))
    softplus-log          log(1 + exp(x))
    log-softmax-log       log(softmax(x){axis})
    log-softmax-parts     z - log(sum(exp(z), axis, keepdims)) with z = x - max(x, axis, keepdims)
    log-softmax-lse       v - (m + log(sum(where(isinf(m), exp(m), exp(v - m)), axis, keepdims)))
                          with m = max(v, axis, keepdims)      (PyTensor's stabilized logsumexp)
    log-softmax-lse-shifted   the same with v = x - max(x, axis, keepdims), as default mode
                          compiles log-softmax-parts: log_softmax(x)
    log-softmax-shift     log_softmax(x - max(x, axis, keepdims)){axis} -> log_softmax(x){axis}

"keepdims" is ``keepdims=true`` or an ``unsqueeze`` of the reduced axis; a
float32 sum accumulated in float64 between casts (PyTensor's ``acc_dtype``)
matches too; every reduction must be over the one softmax axis.

Where a spelling computes in float64 from a float32 ``x`` (Python float
constants that float32 cannot hold, such as ``np.sqrt(2)``), ``x`` may appear
under an exact widening ``cast`` (float16 -> float32 -> float64), and so may
``0.5 * x``, which is exact in the narrower dtype too; the activation is then
computed on ``cast(x)``. No other part may be computed in a narrower dtype:
``x ** 3`` rounded to float32 and then widened is not GELU in float64, and
such a graph is left alone.

Results. Rules are exact (the IR reference computes the same operations)
except as listed here:

- ``a`` and ``b`` become attributes holding the constants' exact values
  (every float dtype fits a Python float). ONNX stores float attributes as
  float32: the emitter uses LeakyRelu/HardSigmoid only when that is exact,
  and an exact float64 form otherwise (``backends/onnx/rules/nn.py``).
- Constants of GELU (1/sqrt 2, sqrt 2, sqrt(2/pi), 0.044715) match within
  ``CONSTANT_ULPS`` = 4 units in the last place of their dtype (relative
  3.9e-3 in float16, 4.8e-7 in float32, 8.9e-16 in float64): a literal
  rounded to the dtype matches, a truncated one such as 0.7071 does not.
  GELU results, and those of silu-div, hard-swish from ``x / 6`` or relu6,
  softplus and the log-softmax parts (PyTensor sums float32 in float64),
  differ from the matched graph by floating-point rounding (the tests
  bound it by 2e-6 relative in float32 and 1e-13 in float64).
- float16: the fused ops compute in float32 and round once, where the
  matched graph rounds each step to float16 (results may differ by float16
  rounding; relu and leaky-relu are exact).
- NaN and infinities (``SPECIAL_VALUE_CHANGES`` lists the rules, each with
  what changes; ``tests/passes/test_activations.py`` states every rule's
  behaviour on NaN, +-inf and -0.0 as a table):

  * relu-where: ``where(x > 0, x, 0)`` maps NaN to 0; relu keeps NaN (so
    does onnxruntime's Relu, measured).
  * relu-mul: ``x * (x > 0)`` maps -inf to NaN (-inf * 0); Relu gives 0.
  * softplus-*: ``exp(x)`` overflows to +inf for x > 88.7 (float32) or 709.8
    (float64), where softplus gives x; PyTensor's own default-mode
    rewrite makes the same change. ``log(1 + exp(x))`` is also 0 where
    ``1 + exp(x)`` rounds to 1 (x < -17 in float32, -37 in float64), where
    softplus gives ``exp(x)``.
  * log-softmax-log: ``log(softmax(x))`` is -inf where softmax underflows to
    0, where log_softmax is finite (PyTensor's own rewrite again).
  * log-softmax-lse: in a row holding +inf, ``x - logsumexp(x)`` is -inf at
    the finite entries (its ``isinf`` branch), where log_softmax is NaN
    (log-softmax-lse-shifted is exact: ``max(x - max(x))`` is never
    infinite).

  Every other rule maps NaN to NaN and +-inf as the matched graph does.
  The sign of a zero result is unspecified for relu (as for NumPy's
  maximum): ``maximum(0, -0.0)`` is -0.0 and ``maximum(-0.0, 0)`` +0.0 in
  NumPy; onnxruntime's ``Relu(-0.0)`` is -0.0.

  ``ActivationMatching(exact_special_values=True)`` skips the rules in
  ``SPECIAL_VALUE_CHANGES``.

- ``numerics="strict"`` (``ir.numerics``; what ``compile_to_onnx(...,
  numerics="strict")`` gives the pass) fires only the rules in
  ``BIT_EXACT``, whose result is the matched graph's bit for bit under the
  IR's reference semantics (the sign of relu's zero aside, unspecified as in
  ``np.maximum``): relu-max, relu-clip, leaky-relu, leaky-relu-max,
  hard-sigmoid and silu, and in float16 only the relu and leaky-relu ones.
  The others change rounding (GELU, hard-swish, silu-div, softplus, the
  log-softmax forms: another formula, or PyTensor's float64 accumulator
  dropped) or special values (``SPECIAL_VALUE_CHANGES``).

The rules run in two rule sets: first the compound activations, then relu
and silu, so that a relu6 or a clamp inside a hard-swish or hard-sigmoid
is still a plain ``maximum``/``clip`` when those patterns look at it.
Within a set the worklist visits producers first, so ``clip(a*x+b, 0, 1)``
becomes ``hard_sigmoid`` before ``x * hard_sigmoid(x)`` is looked at. Each
node is visited a bounded number of times and patterns have a bounded size:
O(nodes). Constants the rewrites leave unread are for ``dce`` to remove.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ir import DType, Graph, Node, Value
from ir.ops.common import normalize_axis
from passes.base import Pass, register_pass
from passes.rewrite import AnyOf, Const, ConstEq, Match, Op, Rewriter, Rule, RuleSet, Var, apply_rules

CONSTANT_ULPS = 4


# -- pattern parts ----------------------------------------------------------------
def near(value: float) -> Const:
    """A float constant whose every element is within ``CONSTANT_ULPS`` units
    in the last place of its dtype of ``value``."""
    def close(a: np.ndarray) -> bool:
        if a.size == 0 or a.dtype.kind != "f":
            return False
        tol = CONSTANT_ULPS * float(np.finfo(a.dtype).eps) * abs(value)
        return bool(np.all(np.abs(a.astype(np.float64) - value) <= tol))

    return Const(None, close)


def _uniform_float(a: np.ndarray) -> bool:
    return a.size > 0 and a.dtype.kind == "f" and bool(np.all(a == a.flat[0]))


def scalar(name: str) -> Const:
    """A float constant whose elements are all equal (a broadcast scalar), bound to ``name``."""
    return Const(name, _uniform_float)


def value_of(const: Value) -> float:
    """The number a ``scalar`` constant holds (exact: every float dtype fits a Python float)."""
    return float(const.const.flat[0])


def _widens(node: Node) -> bool:
    a, b = node.inputs[0].dtype, node.output.dtype
    return a.is_float and b.is_float and b.numpy.itemsize > a.numpy.itemsize


def widened(p, single_use: bool = True):
    """``p``, or ``p`` under an exact widening float cast."""
    return AnyOf(p, Op("cast", p, where=_widens, single_use=single_use))


x = Var("x")
SIGNED_X = Var("x", where=lambda v: v.dtype.is_signed)  # relu takes signed ints and floats
WX = widened(x, single_use=False)
ZERO, ONE, HALF, TWO, THREE, SIX = (ConstEq(v) for v in (0, 1, 0.5, 2, 3, 6))
SIXTH = near(1 / 6)
POSITIVE = AnyOf(Op("gt", x, ZERO), Op("lt", ZERO, x))  # x > 0 written either way


def clamps(v, hi) -> list[Op]:
    """``v`` clamped to [0, hi]: ``clip(v, 0, hi)``, ``maximum(minimum(v, hi), 0)``, ``minimum(maximum(v, 0), hi)``."""
    return [Op("clip", v, ZERO, hi), Op("maximum", Op("minimum", v, hi), ZERO),
            Op("minimum", Op("maximum", v, ZERO), hi)]


def _is_hard_sigmoid_6(node: Node) -> bool:
    tol = CONSTANT_ULPS * float(np.finfo(node.output.dtype.numpy).eps) / 6
    return abs(node.attrs["alpha"] - 1 / 6) <= tol and node.attrs["beta"] == 0.5


AFFINE = Op("add", Op("mul", x, scalar("a")), scalar("b"))                  # a * x + b
RELU6 = AnyOf(*clamps(Op("add", x, THREE), SIX))                            # relu6(x + 3)
HARD_SIGMOID_6 = AnyOf(Op("hard_sigmoid", x, where=_is_hard_sigmoid_6),     # hard_sigmoid(x; 1/6, 1/2)
                       *clamps(Op("add", Op("div", x, SIX), HALF), ONE))


def half_x_times(t) -> list[Op]:
    """``0.5 * x * t`` as ``(0.5 x) t``, ``x (0.5 t)``, ``0.5 (x t)`` and ``(x t) / 2``."""
    return [Op("mul", widened(Op("mul", x, HALF)), t), Op("mul", WX, Op("mul", HALF, t)),
            Op("mul", HALF, Op("mul", WX, t)), Op("div", Op("mul", WX, t), TWO)]


ERF_TERM = Op("add", ONE, Op("erf", AnyOf(Op("mul", WX, near(2 ** -0.5)), Op("div", WX, near(2 ** 0.5)))))
CUBE = AnyOf(Op("pow", WX, ConstEq(3)), Op("mul", Op("mul", WX, WX), WX))                  # x^3
INNER = Op("mul", near((2 / np.pi) ** 0.5), Op("add", WX, Op("mul", near(0.044715), CUBE)))  # sqrt(2/pi) (x + c x^3)
TANH_TERM = Op("add", ONE, Op("tanh", INNER))


def _one_axis(axes) -> bool:
    return len(axes) == 1


def kept(op: str, v, name: str, single_use: bool = True):
    """``op`` (a reduction) of ``v`` over one axis with that axis kept:
    ``keepdims=true``, or ``keepdims=false`` then an ``unsqueeze`` (named
    ``name + "_keep"``). A ``reduce_sum`` may accumulate in a wider float
    between casts. The axes are checked by ``reduced_axis``."""
    def reduce(keepdims: bool, single: bool):
        r = Op(op, v, name=name, attrs={"keepdims": keepdims, "axes": _one_axis}, single_use=single)
        if op != "reduce_sum":
            return r
        wide = Op(op, Op("cast", v, where=_widens), name=name, attrs={"keepdims": keepdims, "axes": _one_axis})
        return AnyOf(r, Op("cast", wide, single_use=single))

    return AnyOf(reduce(True, single_use), Op("unsqueeze", reduce(False, True), name=name + "_keep",
                                              attrs={"axes": _one_axis}, single_use=single_use))


def reduced_axis(m: Match, name: str) -> int | None:
    """The axis the reduction bound to ``name`` (see ``kept``) runs over,
    normalized; None when its unsqueeze puts the axis elsewhere."""
    node = m[name]
    axis = normalize_axis(node.attrs["axes"][0], node.inputs[0].rank, node.op)
    keep = m[name + "_keep"] if name + "_keep" in m else None
    if keep is not None and normalize_axis(keep.attrs["axes"][0], keep.output.rank, "unsqueeze") != axis:
        return None
    return axis


def minus_logsumexp(v) -> Op:
    """``v - logsumexp(v)`` as PyTensor's default mode stabilizes it:
    ``v - (m + log(sum(where(isinf(m), exp(m), exp(v - m)))))``, m = max(v)."""
    m = kept("reduce_max", v, "vmax", single_use=False)
    total = kept("reduce_sum", Op("where", Op("isinf", m), Op("exp", m), Op("exp", Op("sub", v, m))), "sum")
    return Op("sub", v, Op("add", m, Op("log", total)))


Z = Op("sub", x, kept("reduce_max", x, "max"), name="z", single_use=False)  # x - max(x, axis, keepdims)


# -- rewrites ----------------------------------------------------------------------
def as_dtype(rw: Rewriter, value: Value, like: Node) -> Value:
    """``value`` cast (exactly, widening) to the dtype of ``like``'s output."""
    dtype = like.output.dtype
    return value if value.dtype == dtype else rw.add("cast", [value], {"to": dtype})


def activation(op: str, **attrs):
    """A rewrite to ``op(x){attrs}`` on ``x`` in the root's dtype."""
    def rewrite(rw: Rewriter, m: Match) -> Value:
        return rw.add(op, [as_dtype(rw, m.x, m.root)], attrs)

    return rewrite


def leaky_relu(rw: Rewriter, m: Match) -> Value | str:
    """leaky_relu{alpha=a}(x); ``maximum(x, a * x)`` only for 0 <= a <= 1."""
    alpha = value_of(m.a)
    if m.root.op == "maximum" and not 0 <= alpha <= 1:
        return f"maximum(x, {alpha} * x) is leaky relu only for 0 <= alpha <= 1"
    return rw.add("leaky_relu", [as_dtype(rw, m.x, m.root)], {"alpha": alpha})


def hard_sigmoid(rw: Rewriter, m: Match) -> Value:
    """hard_sigmoid{alpha=a, beta=b}(x)"""
    return rw.add("hard_sigmoid", [m.x], {"alpha": value_of(m.a), "beta": value_of(m.b)})


def log_softmax(rw: Rewriter, m: Match) -> Value | str:
    """log_softmax{axis}(x) (or of ``v``) when every reduction, and the root
    log_softmax if any, run over the same one axis."""
    axes = {name: reduced_axis(m, name) for name in ("max", "vmax", "sum") if name in m}
    if m.root.op == "log_softmax":
        axes["log_softmax"] = normalize_axis(m.root.attrs["axis"], m.root.output.rank, "log_softmax")
    if None in axes.values() or len(set(axes.values())) != 1:
        return "not one axis: " + ", ".join(f"{n} over {'another axis than it keeps' if a is None else a}"
                                            for n, a in axes.items())
    return rw.add("log_softmax", [m.x if "x" in m else m.v], {"axis": axes.popitem()[1]})


def log_of_softmax(rw: Rewriter, m: Match) -> Value:
    """log_softmax{axis}(x) for log(softmax{axis}(x))"""
    return rw.add("log_softmax", [m.x], {"axis": m.softmax.attrs["axis"]})


relu, silu, hard_swish, softplus = (activation(op) for op in ("relu", "silu", "hard_swish", "softplus"))

# -- rules --------------------------------------------------------------------------
COMPOUND = RuleSet([
    # clip(a*x + b, 0, 1) and its maximum/minimum forms -> hard_sigmoid{alpha=a, beta=b}(x)
    *(Rule("hard-sigmoid", p, hard_sigmoid) for p in clamps(AFFINE, ONE)),
    # x * hard_sigmoid(x; 1/6, 1/2), or x * relu6(x + 3) / 6 grouped either way -> hard_swish(x)
    Rule("hard-swish", Op("mul", x, AnyOf(HARD_SIGMOID_6, Op("div", RELU6, SIX), Op("mul", RELU6, SIXTH))),
         hard_swish),
    Rule("hard-swish-div", Op("div", Op("mul", x, RELU6), SIX), hard_swish),
    Rule("hard-swish-scaled", Op("mul", Op("mul", x, SIXTH), RELU6), hard_swish),
    # where(x > 0, x, a * x) and maximum(x, a * x) -> leaky_relu{alpha=a}(x)
    Rule("leaky-relu", Op("where", POSITIVE, WX, Op("mul", WX, scalar("a"))), leaky_relu),
    Rule("leaky-relu-max", Op("maximum", x, Op("mul", x, scalar("a"))), leaky_relu),
    # 0.5 * x * (1 + erf(x / sqrt 2)) -> gelu(x); the tanh approximation -> gelu{approximate="tanh"}(x)
    *(Rule("gelu-erf", p, activation("gelu", approximate="none")) for p in half_x_times(ERF_TERM)),
    *(Rule("gelu-tanh", p, activation("gelu", approximate="tanh")) for p in half_x_times(TANH_TERM)),
    # log1p(exp(x)) and log(1 + exp(x)) -> softplus(x)
    Rule("softplus-log1p", Op("log1p", Op("exp", x)), softplus),
    Rule("softplus-log", Op("log", Op("add", ONE, Op("exp", x))), softplus),
    # log(softmax(x)) -> log_softmax(x), and the same from its parts
    Rule("log-softmax-log", Op("log", Op("softmax", x, name="softmax")), log_of_softmax),
    Rule("log-softmax-parts", Op("sub", Z, Op("log", kept("reduce_sum", Op("exp", Z), "sum"))), log_softmax),
    Rule("log-softmax-lse-shifted", minus_logsumexp(Z), log_softmax),
    Rule("log-softmax-lse", minus_logsumexp(Var("v")), log_softmax),
    Rule("log-softmax-shift", Op("log_softmax", Z), log_softmax),
])

BASIC = RuleSet([
    # maximum(x, 0) and clip(x, 0, inf) -> relu(x)
    Rule("relu-max", Op("maximum", SIGNED_X, ZERO), relu),
    Rule("relu-clip", Op("clip", SIGNED_X, ZERO, ConstEq(np.inf)), relu),
    # where(x > 0, x, 0) and x * (x > 0) -> relu(x)
    Rule("relu-where", Op("where", POSITIVE, SIGNED_X, ZERO), relu),
    Rule("relu-mul", Op("mul", SIGNED_X, Op("cast", POSITIVE)), relu),
    # x * sigmoid(x) and x / (1 + exp(-x)) -> silu(x)
    Rule("silu", Op("mul", x, Op("sigmoid", x)), silu),
    Rule("silu-div", Op("div", x, Op("add", ONE, Op("exp", Op("neg", x)))), silu),
])

# Rules whose result differs from the matched graph's on NaN, +-inf or overflow.
SPECIAL_VALUE_CHANGES = {
    "relu-where": "NaN: where(x > 0, x, 0) gives 0, relu gives NaN",
    "relu-mul": "-inf: x * (x > 0) gives NaN (-inf * 0), relu gives 0",
    "softplus-log1p": "x > log(max float): log1p(exp(x)) overflows to +inf, softplus gives x",
    "softplus-log": "x > log(max float): log(1 + exp(x)) overflows to +inf, softplus gives x; "
                    "1 + exp(x) rounds to 1 for x < -17 (float32): 0 where softplus gives exp(x)",
    "log-softmax-log": "where softmax underflows to 0, log(softmax) is -inf and log_softmax finite",
    "log-softmax-lse": "a row holding +inf: x - logsumexp(x) is -inf at its finite entries, log_softmax NaN",
}


# Rules whose result is the matched graph's bit for bit under the IR's reference
# semantics in float32 and float64 (the sign of relu's zero aside, unspecified as in
# np.maximum): the only ones numerics="strict" fires. In float16 only the relu and
# leaky-relu ones are (the other fused ops compute in float32 and round once, where the
# matched graph rounds each step to float16).
BIT_EXACT = ("relu-max", "relu-clip", "leaky-relu", "leaky-relu-max", "hard-sigmoid", "silu")
BIT_EXACT_IN_FLOAT16 = ("relu-max", "relu-clip", "leaky-relu", "leaky-relu-max")


def _not_in_float16(rule: Rule) -> Rule:
    """``rule``, declining where its root computes in float16."""
    rewrite = rule.rewrite

    def unless_float16(rw: Rewriter, m: Match) -> Value | str:
        if m.root.output.dtype == DType.FLOAT16:
            return "numerics='strict': in float16 the fused op rounds once where the matched graph rounds each step"
        return rewrite(rw, m)

    return dataclasses.replace(rule, rewrite=unless_float16)


def _keeping(rules: RuleSet, names) -> RuleSet:
    return RuleSet(r for r in rules if r.name in names)


EXACT_SPECIAL_VALUES = tuple(RuleSet(r for r in rules if r.name not in SPECIAL_VALUE_CHANGES)
                             for rules in (COMPOUND, BASIC))
STRICT = tuple(RuleSet(r if r.name in BIT_EXACT_IN_FLOAT16 else _not_in_float16(r) for r in _keeping(rules, BIT_EXACT))
               for rules in (COMPOUND, BASIC))


@register_pass
@dataclass(frozen=True)
class ActivationMatching(Pass):
    """Replace spelled-out activations by ``relu``, ``silu``, ``leaky_relu``,
    ``hard_sigmoid``, ``hard_swish``, ``gelu``, ``softplus`` and
    ``log_softmax`` (see the module docstring for the rules and where their
    results differ).

    Attributes:
        exact_special_values: skip the rules in ``SPECIAL_VALUE_CHANGES``,
            whose results differ on NaN, infinities or overflow.
        numerics: ``"strict"`` fires only the ``BIT_EXACT`` rules (float16:
            ``BIT_EXACT_IN_FLOAT16``); ``"fast"`` or None (alone; a
            compilation fills in its mode) every rule.
    """

    name = "relu-silu"
    visits_nested_graphs = True
    exact_special_values: bool = False
    numerics: str | None = None

    def run(self, graph: Graph) -> bool:
        rule_sets = STRICT if self.strict else EXACT_SPECIAL_VALUES if self.exact_special_values else (COMPOUND, BASIC)
        changed = False
        for rules in rule_sets:
            changed = apply_rules(graph, rules) or changed
        return changed
