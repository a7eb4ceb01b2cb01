"""``batchnorm-folding``: inference batch normalization, and any other chain
of per-channel affine steps, folded into the preceding conv's weights and
bias, or else made one ``batch_norm`` (ONNX BatchNormalization).

A chain is a run of ``add``, ``sub``, ``mul`` and ``div`` nodes, each
combining the chain value (rank >= 2, channels on axis 1, type unchanged)
with a per-channel operand (see ``passes.conv_bias.is_per_channel``: shape
``(1, C, 1, 1)``, ``(C, 1, 1)``, a scalar ...), every inner value read only
by the next step. It computes ``y = x * s + t`` per channel. Rules, tried on
the last node of a maximal chain:

1. fold-into-conv: all operands constant and ``x`` a conv read only by the
   chain: ``s`` and ``t`` are computed now in float64 from the constants,
   then ``W' = W * s[:, None, None, None]`` and ``b' = b * s + t`` (b = 0
   without a bias), cast to the weights' dtype; a kernel or bias that is not
   a constant gets ``mul``/``add`` nodes instead. Scaling output channels
   commutes with flipping the kernel, so ``flip`` and ``group`` are kept::

       %c: f32[N,4,6,6] = conv(%x, %W) {flip=true, ...}
       %0: f32[N,4,6,6] = sub(%c, %mean)        # constants (1,4,1,1)
       %1: f32[N,4,6,6] = div(%0, %sd)          # sqrt(var + eps), folded
       %2: f32[N,4,6,6] = mul(%1, %gamma)
       %y: f32[N,4,6,6] = add(%2, %beta)
     ->
       %y: f32[N,4,6,6] = conv(%x, %W_1, %bias) {flip=true, ...}

   The variants (a reciprocal or ``pow(v, -0.5)`` multiplied in, gamma
   applied first, ``gamma / sd`` folded into one constant, a bias add before
   the normalization) are all affine chains and fold alike.

2. batch-norm: the chain is ``(x - mean) / sqrt(var + eps) * gamma + beta``
   with non-constant statistics (or follows no conv): ``x - mean`` first,
   then the normalization factors in any order and spelling (``div`` by the root;
   ``mul`` by ``reciprocal(root)``, ``1 / root``, ``gamma / root`` or
   ``pow(var + eps, -0.5)``); gamma and beta optional; eps a scalar
   constant (0 when absent). A constant root (``sqrt`` folded away) moves
   into the scale: ``scale = gamma / sd``, ``var = 1``, ``eps = 0``::

       %0: f32[N,3,5,5] = sub(%x, %m4)         # %m4 = unsqueeze(%m) {axes=[0, 2, 3]}
       %1: f32[1,3,1,1] = add(%v4, %eps)
       %2: f32[1,3,1,1] = sqrt(%1)
       %3: f32[N,3,5,5] = div(%0, %2)
       %4: f32[N,3,5,5] = mul(%3, %g4)
       %y: f32[N,3,5,5] = add(%4, %b4)
     ->
       %y: f32[N,3,5,5] = batch_norm(%x, %g, %b, %m, %v) {epsilon=9.999999747378752e-06}

   (the float32 ``1e-5`` as the attribute's exact float)

3. affine-batch-norm: an all-constant chain after anything but a foldable
   conv, on a tensor with spatial axes (rank >= 3), with a multiplication or
   division and an operand that differs between channels, is
   ``batch_norm(x, s, t, 0, 1){epsilon=0}`` (``x * s + t``). Rank-2 chains
   are left alone (a dense layer's ``x @ W + b`` is Gemm's).

Numerics: folding reassociates (``(W . x) * s`` becomes ``(W * s) . x``,
``a / d`` becomes ``a * (1/d)``), so results agree to float rounding (the
issue allows 1e-5 in float32), as with onnxruntime's own BatchNormalization.
A chain whose folded ``s`` or ``t`` is not finite (a zero divisor) is not
folded. NaN in ``x`` propagates as before. Near the limits of the float
range one form may overflow to Inf where the other does not (``W . x``
overflowing before a small ``s`` scales it down).

``numerics="strict"`` (``ir.numerics``): the pass does nothing. Rules 1
and 3 round otherwise than the chain (``s`` distributed into the weights,
``s`` and ``t`` computed at compile time); ``batch_norm``'s one formula,
``(x - mean) / sqrt(var + eps) * scale + bias`` (float16 in float32), is
bit for bit only the first of the spellings rule 2 accepts, and telling
that spelling apart is not done.

Each add/sub/mul/div node is looked at once, plus once per change of its
inputs, with at most ``MAX_CHAIN`` steps walked per look: linear time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ir import Node, Value
from passes.base import register_pass
from passes.conv_bias import channel_array, channel_vector, is_per_channel
from passes.rewrite import Match, Op, Rewriter, Rule, RuleSet, RuleSetPass, Var, single_use

STEP_OPS = ("add", "sub", "mul", "div")
MAX_CHAIN = 32  # longer chains fold in pieces


@dataclass(frozen=True)
class Step:
    """One chain step: ``kind`` is add, sub (x - p), rsub (p - x), mul or div
    (x / p); ``operand`` the per-channel p."""

    kind: str
    operand: Value


_SWAPPED = {"add": "add", "mul": "mul", "sub": "rsub"}  # the kind when the chain is the second input


def as_step(node: Node) -> tuple[Value, Step] | None:
    """``(chain input, step)`` when ``node`` is an add/sub/mul/div of a value
    of its own type and a per-channel operand, else None. When both inputs
    qualify as the chain, a constant operand wins, then the first input."""
    if node.op not in STEP_OPS or len(node.outputs) != 1:
        return None
    out = node.output
    if out.rank < 2:
        return None
    a, b = node.inputs
    options = [(a, b, node.op), (b, a, _SWAPPED.get(node.op))]
    found = [(chain, Step(kind, p)) for chain, p, kind in options
             if kind is not None and chain.type == out.type and is_per_channel(p, out.rank, out.shape[1])]
    found.sort(key=lambda f: f[1].operand.const is None)
    return found[0] if found else None


def may_fire(node: Node) -> bool:
    """A cheap necessary condition of the rule firing on ``node``, read from
    shapes and the op index only: one output of rank >= 2; an input that
    can be per-channel (rank at most the output's, at most one dim other
    than 1: ``is_per_channel`` allows a non-1 dim on the channel axis only,
    so ``as_step`` needs one); and, for a rank-2 result, a ``sub`` node in
    the graph (a conv's result, which fold-into-conv needs, and the chains
    affine-batch-norm takes have rank >= 3; batch-norm's chain starts with
    ``x - mean``). So elementwise work on whole tensors, or a Linear layer's
    bias add, costs a few tuple reads per node."""
    if len(node.outputs) != 1:
        return False
    rank = len(node.outputs[0].type.shape)
    if rank < 2 or (rank == 2 and node.graph is not None and not node.graph.op_count("sub")):
        return False
    for v in node._inputs:
        shape = v.type.shape
        if len(shape) <= rank and len(shape) - shape.count(1) <= 1:
            return True
    return False


def walk(root: Node) -> tuple[Value, list[Step]]:
    """The chain ending at ``root``: its input value and its steps, first step first."""
    x, steps, node = root.output, [], root
    while node is not None and len(steps) < MAX_CHAIN:
        if node is not root and not single_use(x):
            break
        found = as_step(node)
        if found is None:
            break
        x, step = found
        steps.append(step)
        node = x.producer
    return x, steps[::-1]


def affine(steps: list[Step], channels: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(s, t)`` in float64, shape ``(channels,)``, with chain(x) = x * s + t,
    for constant operands; None if an operand does not fit ``channels``."""
    s, t = np.ones(channels), np.zeros(channels)
    for step in steps:
        p = channel_array(step.operand, channels)
        if p is None:
            return None
        p = p.astype(np.float64)
        with np.errstate(all="ignore"):
            if step.kind == "add":
                t = t + p
            elif step.kind == "sub":
                t = t - p
            elif step.kind == "rsub":
                s, t = -s, p - t
            elif step.kind == "mul":
                s, t = s * p, t * p
            else:
                s, t = s / p, t / p
    return s, t


# -- the three plans -------------------------------------------------------------
def plan(root: Node):
    """What to do with the chain ending at ``root``: ``(fn, x, steps)`` with
    ``fn(rw, x, steps)`` building the replacement, or the reason for none."""
    x, steps = walk(root)
    if not steps:
        return f"{root.op} is not a per-channel step"
    constant = all(s.operand.const is not None for s in steps)
    conv = x.producer
    if constant and conv is not None and conv.op == "conv" and single_use(x):
        return fold_into_conv, x, steps
    bn = match_batch_norm(steps)
    if not isinstance(bn, str):
        return emit_batch_norm(bn), x, steps
    if constant and x.rank >= 3 and any(s.kind in ("mul", "div") for s in steps) and \
            any(np.ptp(s.operand.const) != 0 for s in steps if s.operand.const.size > 1):
        return affine_batch_norm, x, steps
    return f"not a constant chain after a conv, nor batch normalization ({bn})"


def fold_into_conv(rw: Rewriter, x: Value, steps: list[Step]) -> Value | str:
    """conv(x, W, b) * s + t -> conv(x, W * s, b * s + t), s and t from constants."""
    conv = x.producer
    channels = x.shape[1]
    if not isinstance(channels, int):
        return "the conv's output channels are not static"
    st = affine(steps, channels)
    if st is None or not np.all(np.isfinite(st[0])) or not np.all(np.isfinite(st[1])):
        return "the folded scale or shift is not finite"
    s, t = st
    w = conv.inputs[1]
    dtype = x.dtype.numpy
    if np.any(s != 1):
        shape = (-1,) + (1,) * (w.rank - 1)
        if w.const is not None:
            w = rw.const((w.const.astype(np.float64) * s.reshape(shape)).astype(dtype), w.name or "kernel")
        else:
            w = rw.add("mul", [w, rw.const(s.astype(dtype).reshape(shape), "scale")])
    if len(conv.inputs) == 3 and conv.inputs[2].const is None:
        b = conv.inputs[2]
        if np.any(s != 1):
            b = rw.add("mul", [b, rw.const(s.astype(dtype), "scale")])
        b = rw.add("add", [b, rw.const(t.astype(dtype), "shift")])
    else:
        b0 = conv.inputs[2].const.astype(np.float64) if len(conv.inputs) == 3 else 0.0
        b = rw.const((b0 * s + t).astype(dtype), conv.inputs[2].name if len(conv.inputs) == 3 else "bias")
    return rw.add("conv", [conv.inputs[0], w, b], conv.attrs)


def affine_batch_norm(rw: Rewriter, x: Value, steps: list[Step]) -> Value | str:
    """x * s + t (constants, per channel) -> batch_norm(x, s, t, 0, 1){epsilon=0}"""
    channels = x.shape[1]
    st = None if not isinstance(channels, int) else affine(steps, channels)
    if st is None or not np.all(np.isfinite(st[0])) or not np.all(np.isfinite(st[1])):
        return "the channels are not static or the folded scale or shift is not finite"
    dtype = x.dtype.numpy
    s, t = (rw.const(a.astype(dtype), n) for a, n in zip(st, ("scale", "shift")))
    zeros, ones = (rw.const(np.full(channels, v, dtype), n) for v, n in ((0, "mean"), (1, "var")))
    return rw.add("batch_norm", [x, s, t, zeros, ones], {"epsilon": 0.0})


# -- batch normalization with non-constant statistics ------------------------------
@dataclass(frozen=True)
class BatchNormParts:
    """The parts of ``(x - mean) / sd * gamma + beta`` (None: absent) with
    ``sd = sqrt(var + eps)``, or ``sd`` a constant and ``var`` None."""

    mean: Value
    gamma: Value | None
    beta: Value | None
    var: Value | None
    eps: float
    sd: Value | None


def match_batch_norm(steps: list[Step]) -> BatchNormParts | str:
    """The batch-norm parts of a chain (first step first), or why it is not one."""
    if steps[0].kind != "sub":
        return "does not start with x - mean"
    i, mean, beta = 1, steps[0].operand, None
    factors = []
    while i < len(steps) and steps[i].kind in ("mul", "div"):
        factors.append(steps[i])
        i += 1
    if i < len(steps) and steps[i].kind == "add":
        beta, i = steps[i].operand, i + 1
    if i != len(steps) or not factors:
        return "not the steps x - mean, scale factors, [+ beta]"
    nums, dens = [], []
    for f in factors:
        if f.kind == "div":
            dens.append(f.operand)
        else:
            n, d = fraction(f.operand)
            nums += n
            dens += d
    nums = [n for n in nums if not (n.const is not None and np.all(n.const == 1))]
    if len(dens) != 1 or len(nums) > 1:
        return f"{len(nums)} scale and {len(dens)} divisor factors, not at most one gamma and one sqrt(var + eps)"
    gamma, den = (nums[0] if nums else None), dens[0]
    if isinstance(den, Root):
        return BatchNormParts(mean, gamma, beta, *var_eps(den.radicand), None)
    if den.const is not None:
        return BatchNormParts(mean, gamma, beta, None, 0.0, den)
    if den.producer is None or den.producer.op != "sqrt":
        return "the divisor is neither sqrt(var + eps) nor a constant"
    return BatchNormParts(mean, gamma, beta, *var_eps(den.producer.inputs[0]), None)


class Root(NamedTuple):
    """A divisor ``sqrt(radicand)`` found as ``pow(radicand, -0.5)``."""

    radicand: Value


def fraction(value: Value, depth: int = 3) -> tuple[list[Value], list[Value | Root]]:
    """``value`` as numerator and divisor factor lists: ``reciprocal(d)``,
    ``n / d``, ``a * b`` and ``pow(v, -0.5)`` (the divisor ``Root(v)``) are
    taken apart."""
    node = value.producer
    if node is None or depth == 0:
        return [value], []
    if node.op == "reciprocal":
        return [], [node.inputs[0]]
    if node.op == "div":
        n, d = fraction(node.inputs[0], depth - 1)
        return n, d + [node.inputs[1]]
    if node.op == "mul":
        (n1, d1), (n2, d2) = fraction(node.inputs[0], depth - 1), fraction(node.inputs[1], depth - 1)
        return n1 + n2, d1 + d2
    if node.op == "pow" and node.inputs[1].const is not None and np.all(node.inputs[1].const == -0.5):
        return [], [Root(node.inputs[0])]
    return [value], []


def var_eps(value: Value) -> tuple[Value, float]:
    """``(var, eps)`` of ``var + eps`` with eps a constant holding one value
    (either operand order), else ``(value, 0.0)``."""
    node = value.producer
    if node is not None and node.op == "add":
        for var, eps in (node.inputs, node.inputs[::-1]):
            c = eps.const
            if c is not None and c.size >= 1 and np.all(c == c.flat[0]) and var.type == value.type:
                return var, float(c.flat[0])
    return value, 0.0


def emit_batch_norm(parts: BatchNormParts):
    """The builder of ``batch_norm`` from ``parts`` (see rule 2)."""
    def build(rw: Rewriter, x: Value, steps: list[Step]) -> Value | str:
        rank, channels = x.rank, x.shape[1]
        dtype = x.dtype.numpy
        vectors = {}
        for name in ("mean", "gamma", "beta", "var", "sd"):
            v = getattr(parts, name)
            if v is not None:
                vec = channel_vector(rw, v, rank, channels)
                if vec is None:
                    return f"{name} {v.type} is not a per-channel value"
                vectors[name] = vec
        if not isinstance(channels, int):
            channels = next((v.shape[0] for v in vectors.values() if isinstance(v.shape[0], int)), None)

        def default(name, fill):
            if name in vectors:
                return vectors[name]
            if channels is None:
                return None
            return rw.const(np.full(channels, fill, dtype), name)

        scale, var = default("gamma", 1), default("var", 1)
        if "sd" in vectors:  # constant sd: scale = gamma / sd, var = 1
            sd = vectors["sd"]
            if not np.all(np.isfinite(sd.const)) or np.any(sd.const == 0):
                return "the constant divisor holds zeros or non-finite values"
            scale = rw.const((scale.const.astype(np.float64) / sd.const).astype(dtype), "scale") \
                if scale is not None and scale.const is not None else rw.add("div", [scale, sd])
        inputs = [x, scale, default("beta", 0), default("mean", 0), var]
        if any(v is None for v in inputs):
            return "the channel count is not static"
        return rw.add("batch_norm", inputs, {"epsilon": parts.eps})

    return build


# -- the rule ---------------------------------------------------------------------
def is_affine_step(node: Node) -> bool:
    """The rule's node predicate: ``may_fire`` (shapes and the op index
    only), then ``as_step``."""
    return may_fire(node) and as_step(node) is not None


def fold_chain(rw: Rewriter, m: Match) -> Value | str:
    """The end of a per-channel affine chain -> folded conv or batch_norm (see the rules)."""
    root = m.root
    uses = root.output.uses()
    if len(uses) == 1 and not root.graph.is_output(root.output):
        user = uses[0].node
        found = as_step(user)
        if found is not None and found[0] is root.output and not isinstance(plan(user), str):
            return f"the chain goes on into {user.op} -> %{user.output.name or '?'}"
    p = plan(root)
    if isinstance(p, str):
        return p
    fn, x, steps = p
    return fn(rw, x, steps)


RULES = RuleSet([
    # (conv(x) - mean) / sd * gamma + beta -> conv(x) with folded weights, or batch_norm(x)
    *(Rule("channel-affine-chain", Op(op, Var(), Var(), where=is_affine_step), fold_chain) for op in STEP_OPS),
])


@register_pass
@dataclass(frozen=True)
class BatchNormFolding(RuleSetPass):
    """Fold per-channel affine chains into convs or make them ``batch_norm``
    (see the module docstring).

    Attributes:
        numerics: ``"strict"`` changes nothing (see the module docstring);
            ``"fast"`` or None (alone; a compilation fills in its mode)
            folds.
    """

    name = "batchnorm-folding"
    after = ("conv-recovery", "conv-bias-fusion")  # folds into the conv and its bias
    numerics: str | None = None
    rules = RULES

    def rule_set(self) -> RuleSet:
        return RuleSet() if self.strict else RULES
