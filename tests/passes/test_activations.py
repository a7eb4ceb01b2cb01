"""``relu-silu``: every rule as IR text before and after, interpreter
numbers before and after (Hypothesis), and the behaviour of every rewrite on
NaN, +-inf and -0.0. The cases where a rule must not fire are in
``test_activations_not_firing.py``; PyTensor against onnxruntime for every
spelling in ``test_activations_onnx.py``."""

from __future__ import annotations

import functools
import textwrap
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ir.interpreter import evaluate
from ir.parser import parse_graph
from ir.printer import print_graph
from ir.verifier import verify
from passes import get_pass
from passes.activations import BASIC, COMPOUND, SPECIAL_VALUE_CHANGES, ActivationMatching
from passes.rewrite import apply_rules
from tests.passes.helpers import assert_identical, random_inputs

PASSES = [ActivationMatching(), get_pass("dce")]  # dce drops the constants the rewrites leave unused
PIPELINE = ["canonicalize", "constant-folding", "canonicalize", "cse", "relu-silu", "dce"]


def run(text: str, passes=PASSES):
    """The graph of IR ``text`` and its rewritten copy, and whether the pass changed it."""
    before = parse_graph(textwrap.dedent(text).strip() + "\n")
    after = parse_graph(print_graph(before))
    changed = False
    for p in passes:
        changed = p.run(after) or changed
        verify(after, context=f"after {p.name}")
    return before, after, changed


def misses(text: str) -> list[str]:
    """``rule: reason`` for every miss when both rule sets are applied to ``text``."""
    g = parse_graph(textwrap.dedent(text).strip() + "\n")
    trace = []
    apply_rules(g, COMPOUND, trace=trace)
    apply_rules(g, BASIC, trace=trace)
    return [f"{t.rule}: {t.reason}" for t in trace]


# -- the catalog: one case per rule and form ------------------------------------------
@dataclass(frozen=True)
class Case:
    """A rule's input and output IR text and how their numbers relate:
    ``"exact"`` bit for bit (but the sign of a NaN); ``"zero-sign"`` bit for
    bit but the sign of a zero result (unspecified for relu); ``"finite"``
    bit for bit on finite inputs (the rule is in ``SPECIAL_VALUE_CHANGES``);
    a float: equal to that relative tolerance (float rounding) on finite
    inputs."""

    rule: str
    before: str
    after: str
    numbers: str | float = "exact"


F32_RTOL, F64_RTOL = 2e-6, 1e-13

CASES = {
    "relu-max": Case("relu-max", """
        graph @main(%x: f32[N,4]) {
          const %zero: f32[1,1] = [[0.0]]
          %y: f32[N,4] = maximum(%x, %zero)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = relu(%x)
          return %y
        }""", "zero-sign"),
    "relu-max-swapped": Case("relu-max", """
        graph @main(%x: f32[N,4]) {
          const %zero: f32[] = 0.0
          %y: f32[N,4] = maximum(%zero, %x)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = relu(%x)
          return %y
        }""", "zero-sign"),
    "relu-max-int": Case("relu-max", """
        graph @main(%x: i32[N,4]) {
          const %zero: i32[4] = [0, 0, 0, 0]
          %y: i32[N,4] = maximum(%x, %zero)
          return %y
        }""", """
        graph @main(%x: i32[N,4]) {
          %y: i32[N,4] = relu(%x)
          return %y
        }"""),
    "relu-max-f16": Case("relu-max", """
        graph @main(%x: f16[N,4]) {
          const %zero: f16[] = 0.0
          %y: f16[N,4] = maximum(%x, %zero)
          return %y
        }""", """
        graph @main(%x: f16[N,4]) {
          %y: f16[N,4] = relu(%x)
          return %y
        }""", "zero-sign"),
    "relu-where-int": Case("relu-where", """
        graph @main(%x: i64[N,4]) {
          const %zero: i64[] = 0
          %p: bool[N,4] = gt(%x, %zero)
          %y: i64[N,4] = where(%p, %x, %zero)
          return %y
        }""", """
        graph @main(%x: i64[N,4]) {
          %y: i64[N,4] = relu(%x)
          return %y
        }"""),
    "relu-clip": Case("relu-clip", """
        graph @main(%x: f32[N,4]) {
          const %inf: f32[1,1] = [[inf]]
          const %zero: f32[1,1] = [[0.0]]
          %y: f32[N,4] = clip(%x, %zero, %inf)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = relu(%x)
          return %y
        }""", "zero-sign"),
    "relu-where": Case("relu-where", """
        graph @main(%x: f32[N,4]) {
          const %zero: f32[] = 0.0
          %p: bool[N,4] = gt(%x, %zero)
          %y: f32[N,4] = where(%p, %x, %zero)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = relu(%x)
          return %y
        }""", "finite"),
    "relu-where-lt": Case("relu-where", """
        graph @main(%x: f32[N,4]) {
          const %zero: f32[1,1] = [[0.0]]
          %p: bool[N,4] = lt(%zero, %x)
          %y: f32[N,4] = where(%p, %x, %zero)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = relu(%x)
          return %y
        }""", "finite"),
    "relu-mul": Case("relu-mul", """
        graph @main(%x: f32[N,4]) {
          const %zero: f32[] = 0.0
          %p: bool[N,4] = gt(%x, %zero)
          %c: f32[N,4] = cast(%p) {to=f32}
          %y: f32[N,4] = mul(%x, %c)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = relu(%x)
          return %y
        }""", "finite"),
    "silu": Case("silu", """
        graph @main(%x: f32[N,4]) {
          %s: f32[N,4] = sigmoid(%x)
          %y: f32[N,4] = mul(%s, %x)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = silu(%x)
          return %y
        }"""),
    "silu-f16": Case("silu", """
        graph @main(%x: f16[N,4]) {
          %s: f16[N,4] = sigmoid(%x)
          %y: f16[N,4] = mul(%x, %s)
          return %y
        }""", """
        graph @main(%x: f16[N,4]) {
          %y: f16[N,4] = silu(%x)
          return %y
        }""", 2e-3),  # float16 rounding: silu rounds once, the matched graph twice
    "silu-div": Case("silu-div", """
        graph @main(%x: f32[N,4]) {
          const %one: f32[1,1] = [[1.0]]
          %n: f32[N,4] = neg(%x)
          %e: f32[N,4] = exp(%n)
          %d: f32[N,4] = add(%one, %e)
          %y: f32[N,4] = div(%x, %d)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = silu(%x)
          return %y
        }""", F32_RTOL),
    "leaky-relu": Case("leaky-relu", """
        graph @main(%x: f32[N,4]) {
          const %a: f32[] = 0.1
          const %zero: f32[1,1] = [[0.0]]
          %ax: f32[N,4] = mul(%a, %x)
          %p: bool[N,4] = gt(%x, %zero)
          %y: f32[N,4] = where(%p, %x, %ax)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = leaky_relu(%x) {alpha=0.10000000149011612}
          return %y
        }"""),
    "leaky-relu-f64-from-f32": Case("leaky-relu", """
        graph @main(%x: f32[N,4]) {
          const %a: f64[] = 0.1
          const %zero: f32[] = 0.0
          %w: f64[N,4] = cast(%x) {to=f64}
          %ax: f64[N,4] = mul(%w, %a)
          %p: bool[N,4] = lt(%zero, %x)
          %y: f64[N,4] = where(%p, %w, %ax)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f64[N,4] = cast(%x) {to=f64}
          %y_1: f64[N,4] = leaky_relu(%y) {alpha=0.1}
          return %y_1
        }"""),
    "leaky-relu-max": Case("leaky-relu-max", """
        graph @main(%x: f32[N,4]) {
          const %a: f32[] = 0.2
          %ax: f32[N,4] = mul(%x, %a)
          %y: f32[N,4] = maximum(%x, %ax)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = leaky_relu(%x) {alpha=0.20000000298023224}
          return %y
        }"""),
    "hard-sigmoid": Case("hard-sigmoid", """
        graph @main(%x: f32[N,4]) {
          const %a: f32[] = 0.2
          const %b: f32[1,1] = [[0.5]]
          const %zero: f32[] = 0.0
          const %one: f32[] = 1.0
          %ax: f32[N,4] = mul(%a, %x)
          %v: f32[N,4] = add(%b, %ax)
          %y: f32[N,4] = clip(%v, %zero, %one)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = hard_sigmoid(%x) {alpha=0.20000000298023224, beta=0.5}
          return %y
        }"""),
    "hard-sigmoid-max-min": Case("hard-sigmoid", """
        graph @main(%x: f64[N,4]) {
          const %a: f64[] = 0.2
          const %b: f64[] = 0.5
          const %zero: f64[] = 0.0
          const %one: f64[] = 1.0
          %ax: f64[N,4] = mul(%x, %a)
          %v: f64[N,4] = add(%ax, %b)
          %m: f64[N,4] = minimum(%one, %v)
          %y: f64[N,4] = maximum(%zero, %m)
          return %y
        }""", """
        graph @main(%x: f64[N,4]) {
          %y: f64[N,4] = hard_sigmoid(%x) {alpha=0.2, beta=0.5}
          return %y
        }"""),
    "hard-sigmoid-min-max": Case("hard-sigmoid", """
        graph @main(%x: f32[N,4]) {
          const %a: f32[] = 0.25
          const %b: f32[] = 0.5
          const %zero: f32[] = 0.0
          const %one: f32[] = 1.0
          %ax: f32[N,4] = mul(%x, %a)
          %v: f32[N,4] = add(%ax, %b)
          %m: f32[N,4] = maximum(%v, %zero)
          %y: f32[N,4] = minimum(%m, %one)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = hard_sigmoid(%x) {alpha=0.25, beta=0.5}
          return %y
        }"""),
    "hard-swish-compiled": Case("hard-swish", """
        graph @main(%x: f32[N,4]) {
          const %sixth: f32[] = 0.16666667
          const %half: f32[] = 0.5
          const %zero: f32[] = 0.0
          const %one: f32[] = 1.0
          %q: f32[N,4] = mul(%sixth, %x)
          %v: f32[N,4] = add(%half, %q)
          %c: f32[N,4] = clip(%v, %zero, %one)
          %y: f32[N,4] = mul(%x, %c)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = hard_swish(%x)
          return %y
        }"""),
    "hard-swish-div": Case("hard-swish", """
        graph @main(%x: f32[N,4]) {
          const %six: f32[1,1] = [[6.0]]
          const %half: f32[] = 0.5
          const %zero: f32[1,1] = [[0.0]]
          const %one: f32[1,1] = [[1.0]]
          %q: f32[N,4] = div(%x, %six)
          %v: f32[N,4] = add(%q, %half)
          %c: f32[N,4] = clip(%v, %zero, %one)
          %y: f32[N,4] = mul(%x, %c)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = hard_swish(%x)
          return %y
        }""", F32_RTOL),
    "hard-swish-relu6": Case("hard-swish-div", """
        graph @main(%x: f32[N,4]) {
          const %three: f32[1,1] = [[3.0]]
          const %zero: f32[1,1] = [[0.0]]
          const %six: f32[1,1] = [[6.0]]
          %v: f32[N,4] = add(%x, %three)
          %r: f32[N,4] = clip(%v, %zero, %six)
          %p: f32[N,4] = mul(%x, %r)
          %y: f32[N,4] = div(%p, %six)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = hard_swish(%x)
          return %y
        }""", F32_RTOL),
    "hard-swish-relu6-scaled": Case("hard-swish-scaled", """
        graph @main(%x: f64[N,4]) {
          const %three: f64[] = 3.0
          const %zero: f64[] = 0.0
          const %six: f64[] = 6.0
          const %sixth: f64[] = 0.16666666666666666
          %v: f64[N,4] = add(%three, %x)
          %m: f64[N,4] = maximum(%v, %zero)
          %r: f64[N,4] = minimum(%m, %six)
          %q: f64[N,4] = mul(%sixth, %x)
          %y: f64[N,4] = mul(%q, %r)
          return %y
        }""", """
        graph @main(%x: f64[N,4]) {
          %y: f64[N,4] = hard_swish(%x)
          return %y
        }""", F64_RTOL),
    "hard-swish-relu6-grouped": Case("hard-swish", """
        graph @main(%x: f32[N,4]) {
          const %three: f32[] = 3.0
          const %zero: f32[] = 0.0
          const %six: f32[] = 6.0
          %v: f32[N,4] = add(%x, %three)
          %m: f32[N,4] = minimum(%v, %six)
          %r: f32[N,4] = maximum(%m, %zero)
          %d: f32[N,4] = div(%r, %six)
          %y: f32[N,4] = mul(%d, %x)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = hard_swish(%x)
          return %y
        }""", F32_RTOL),
    "gelu-erf": Case("gelu-erf", """
        graph @main(%x: f32[N,4]) {
          const %k: f32[] = 0.70710677
          const %half: f32[] = 0.5
          const %one: f32[1,1] = [[1.0]]
          %xk: f32[N,4] = mul(%x, %k)
          %e: f32[N,4] = erf(%xk)
          %t: f32[N,4] = add(%one, %e)
          %h: f32[N,4] = mul(%x, %half)
          %y: f32[N,4] = mul(%h, %t)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = gelu(%x) {approximate="none"}
          return %y
        }""", F32_RTOL),
    "gelu-erf-from-f32": Case("gelu-erf", """
        graph @main(%x: f32[N,4]) {
          const %r2: f64[] = 1.4142135623730951
          const %half: f32[] = 0.5
          const %one: f64[1,1] = [[1.0]]
          %w: f64[N,4] = cast(%x) {to=f64}
          %s: f64[N,4] = div(%w, %r2)
          %e: f64[N,4] = erf(%s)
          %t: f64[N,4] = add(%one, %e)
          %h: f32[N,4] = mul(%half, %x)
          %hw: f64[N,4] = cast(%h) {to=f64}
          %y: f64[N,4] = mul(%hw, %t)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f64[N,4] = cast(%x) {to=f64}
          %y_1: f64[N,4] = gelu(%y) {approximate="none"}
          return %y_1
        }""", F64_RTOL),
    "gelu-erf-halved": Case("gelu-erf", """
        graph @main(%x: f64[N,4]) {
          const %r2: f64[] = 1.4142135623730951
          const %one: f64[] = 1.0
          const %two: f64[] = 2.0
          %s: f64[N,4] = div(%x, %r2)
          %e: f64[N,4] = erf(%s)
          %t: f64[N,4] = add(%e, %one)
          %p: f64[N,4] = mul(%x, %t)
          %y: f64[N,4] = div(%p, %two)
          return %y
        }""", """
        graph @main(%x: f64[N,4]) {
          %y: f64[N,4] = gelu(%x) {approximate="none"}
          return %y
        }""", F64_RTOL),
    "gelu-tanh": Case("gelu-tanh", """
        graph @main(%x: f32[N,4]) {
          const %c: f32[] = 0.044715
          const %k: f32[] = 0.7978846
          const %half: f32[] = 0.5
          const %one: f32[] = 1.0
          const %three: f32[1,1] = [[3.0]]
          %x3: f32[N,4] = pow(%x, %three)
          %cx3: f32[N,4] = mul(%c, %x3)
          %i: f32[N,4] = add(%x, %cx3)
          %ki: f32[N,4] = mul(%k, %i)
          %th: f32[N,4] = tanh(%ki)
          %t: f32[N,4] = add(%one, %th)
          %h: f32[N,4] = mul(%half, %x)
          %y: f32[N,4] = mul(%h, %t)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = gelu(%x) {approximate="tanh"}
          return %y
        }""", F32_RTOL),
    "gelu-tanh-compiled": Case("gelu-tanh", """
        graph @main(%x: f64[N,4]) {
          const %c: f64[] = 0.044715
          const %k: f64[] = 0.7978845608028654
          const %half: f64[] = 0.5
          const %one: f64[] = 1.0
          %xx: f64[N,4] = mul(%x, %x)
          %x3: f64[N,4] = mul(%xx, %x)
          %cx3: f64[N,4] = mul(%c, %x3)
          %i: f64[N,4] = add(%x, %cx3)
          %ki: f64[N,4] = mul(%k, %i)
          %th: f64[N,4] = tanh(%ki)
          %t: f64[N,4] = add(%one, %th)
          %h: f64[N,4] = mul(%half, %t)
          %y: f64[N,4] = mul(%x, %h)
          return %y
        }""", """
        graph @main(%x: f64[N,4]) {
          %y: f64[N,4] = gelu(%x) {approximate="tanh"}
          return %y
        }""", F64_RTOL),
    "softplus-log1p": Case("softplus-log1p", """
        graph @main(%x: f32[N,4]) {
          %e: f32[N,4] = exp(%x)
          %y: f32[N,4] = log1p(%e)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = softplus(%x)
          return %y
        }""", F32_RTOL),
    "softplus-log": Case("softplus-log", """
        graph @main(%x: f64[N,4]) {
          const %one: f64[1,1] = [[1.0]]
          %e: f64[N,4] = exp(%x)
          %s: f64[N,4] = add(%e, %one)
          %y: f64[N,4] = log(%s)
          return %y
        }""", """
        graph @main(%x: f64[N,4]) {
          %y: f64[N,4] = softplus(%x)
          return %y
        }""", F64_RTOL),
    "log-softmax-log": Case("log-softmax-log", """
        graph @main(%x: f32[N,4]) {
          %s: f32[N,4] = softmax(%x) {axis=1}
          %y: f32[N,4] = log(%s)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = log_softmax(%x) {axis=1}
          return %y
        }""", F32_RTOL),
    "log-softmax-parts": Case("log-softmax-parts", """
        graph @main(%x: f32[N,4]) {
          %m: f32[N] = reduce_max(%x) {axes=[1], keepdims=false}
          %mk: f32[N,1] = unsqueeze(%m) {axes=[1]}
          %z: f32[N,4] = sub(%x, %mk)
          %e: f32[N,4] = exp(%z)
          %ew: f64[N,4] = cast(%e) {to=f64}
          %s: f64[N] = reduce_sum(%ew) {axes=[1], keepdims=false}
          %sn: f32[N] = cast(%s) {to=f32}
          %sk: f32[N,1] = unsqueeze(%sn) {axes=[1]}
          %l: f32[N,1] = log(%sk)
          %y: f32[N,4] = sub(%z, %l)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = log_softmax(%x) {axis=1}
          return %y
        }""", F32_RTOL),
    "log-softmax-parts-keepdims": Case("log-softmax-parts", """
        graph @main(%x: f64[2,N,4]) {
          %m: f64[2,1,4] = reduce_max(%x) {axes=[-2], keepdims=true}
          %z: f64[2,N,4] = sub(%x, %m)
          %e: f64[2,N,4] = exp(%z)
          %s: f64[2,1,4] = reduce_sum(%e) {axes=[1], keepdims=true}
          %l: f64[2,1,4] = log(%s)
          %y: f64[2,N,4] = sub(%z, %l)
          return %y
        }""", """
        graph @main(%x: f64[2,N,4]) {
          %y: f64[2,N,4] = log_softmax(%x) {axis=1}
          return %y
        }""", F64_RTOL),
    "log-softmax-compiled": Case("log-softmax-lse-shifted", """
        graph @main(%x: f32[N,4]) {
          %0: f32[N] = reduce_max(%x) {axes=[1], keepdims=false}
          %1: f32[N,1] = unsqueeze(%0) {axes=[1]}
          %2: f32[N,4] = sub(%x, %1)
          %3: f32[N] = reduce_max(%2) {axes=[1], keepdims=false}
          %4: f32[N,1] = unsqueeze(%3) {axes=[1]}
          %5: bool[N,1] = isinf(%4)
          %6: f32[N,1] = exp(%4)
          %7: f32[N,4] = sub(%2, %4)
          %8: f32[N,4] = exp(%7)
          %9: f32[N,4] = where(%5, %6, %8)
          %10: f64[N,4] = cast(%9) {to=f64}
          %11: f64[N] = reduce_sum(%10) {axes=[1], keepdims=false}
          %12: f32[N] = cast(%11) {to=f32}
          %13: f32[N,1] = unsqueeze(%12) {axes=[1]}
          %14: f32[N,1] = log(%13)
          %15: f32[N,1] = add(%4, %14)
          %16: f32[N,4] = sub(%2, %15)
          return %16
        }""", """
        graph @main(%x: f32[N,4]) {
          %16: f32[N,4] = log_softmax(%x) {axis=1}
          return %16
        }""", F32_RTOL),
    "log-softmax-shift": Case("log-softmax-shift", """
        graph @main(%x: f32[N,4]) {
          %m: f32[N] = reduce_max(%x) {axes=[-1], keepdims=false}
          %mk: f32[N,1] = unsqueeze(%m) {axes=[1]}
          %z: f32[N,4] = sub(%x, %mk)
          %y: f32[N,4] = log_softmax(%z) {axis=-1}
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = log_softmax(%x) {axis=1}
          return %y
        }""", F32_RTOL),
    "log-softmax-lse": Case("log-softmax-lse", """
        graph @main(%x: f32[N,4]) {
          %m: f32[N,1] = reduce_max(%x) {axes=[1], keepdims=true}
          %inf: bool[N,1] = isinf(%m)
          %em: f32[N,1] = exp(%m)
          %d: f32[N,4] = sub(%x, %m)
          %ed: f32[N,4] = exp(%d)
          %w: f32[N,4] = where(%inf, %em, %ed)
          %s: f32[N,1] = reduce_sum(%w) {axes=[1], keepdims=true}
          %l: f32[N,1] = log(%s)
          %lse: f32[N,1] = add(%l, %m)
          %y: f32[N,4] = sub(%x, %lse)
          return %y
        }""", """
        graph @main(%x: f32[N,4]) {
          %y: f32[N,4] = log_softmax(%x) {axis=1}
          return %y
        }""", F32_RTOL),
}


@pytest.mark.parametrize("name", CASES)
def test_rule_rewrites_ir(name):
    case = CASES[name]
    before, after, changed = run(case.before)
    expected = textwrap.dedent(case.after).strip() + "\n"
    assert print_graph(after) == expected, f"relu-silu gave:\n{print_graph(after)}\nexpected:\n{expected}"
    assert changed
    check_numbers(before, after, case.numbers, seeds=range(3))


def check_numbers(before, after, numbers, *, seeds=(), arrays=None) -> None:
    """Interpreter results of ``before`` and ``after`` related as ``numbers`` says (see ``Case``)."""
    draws = [arrays] if arrays is not None else [
        random_inputs(before, np.random.default_rng(s), finite=numbers not in ("exact", "zero-sign")) for s in seeds]
    for values in draws:
        want, = evaluate(before, values)
        got, = evaluate(after, values)
        if numbers == "exact":  # bit for bit, but the sign of a NaN (operand order decides it)
            assert_identical(np.where(np.isnan(got), np.nan, got), np.where(np.isnan(want), np.nan, want))
        elif numbers in ("zero-sign", "finite"):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)  # -0.0 == 0.0; NaN matches NaN
        else:
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=numbers, atol=numbers, equal_nan=True)


def test_every_rule_has_a_case():
    assert {r.name for r in COMPOUND + BASIC} == {c.rule for c in CASES.values()}
    assert set(SPECIAL_VALUE_CHANGES) <= {r.name for r in COMPOUND + BASIC}
    assert {c.rule for c in CASES.values() if c.numbers == "finite"} <= set(SPECIAL_VALUE_CHANGES)


# -- numbers on random inputs (Hypothesis) ------------------------------------
@functools.cache
def rewritten(name: str):
    """The graphs before and after the pass for case ``name`` (not to be mutated)."""
    before, after, _ = run(CASES[name].before)
    return before, after


@pytest.mark.parametrize("name", CASES)
# float16 elements (st.floats(width=16)) are drawn as wider floats and filtered: allowed, not a defect
@settings(suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_rewrite_keeps_the_numbers(name, data):
    case = CASES[name]
    before, after = rewritten(name)
    exact = case.numbers in ("exact", "zero-sign")

    def array(v):
        dtype = v.dtype.numpy
        shape = tuple(d if isinstance(d, int) else data.draw(st.integers(1, 3)) for d in v.shape)
        if dtype.kind == "i":
            return data.draw(hnp.arrays(dtype, shape, elements=st.integers(-100, 100)))
        # Rounding-level rules are compared on finite inputs of moderate size;
        # those in SPECIAL_VALUE_CHANGES away from where they change results
        # (softplus overflows past 88 in float32, softmax underflows to 0).
        bound = 15 if case.rule in SPECIAL_VALUE_CHANGES else 60
        elements = (st.floats(width=8 * dtype.itemsize) if exact
                    else st.floats(-bound, bound, width=8 * dtype.itemsize))
        return data.draw(hnp.arrays(dtype, shape, elements=elements))

    values = [array(v) for v in before.inputs]
    if case.numbers == "finite":
        values = [np.where(np.isfinite(a), a, 0).astype(a.dtype) for a in values]
    check_numbers(before, after, case.numbers, arrays=values)


# -- NaN, infinities, signed zero ----------------------------------------------
# What each activation gives for NaN, +inf and -inf (the rewritten graphs).
OP_SPECIALS = {
    "relu": [np.nan, np.inf, 0.0],
    "silu": [np.nan, np.inf, np.nan],  # -inf * sigmoid(-inf) = -inf * 0
    "leaky_relu": [np.nan, np.inf, -np.inf],
    "hard_sigmoid": [np.nan, 1.0, 0.0],
    "hard_swish": [np.nan, np.inf, np.nan],  # -inf * 0
    "gelu": [np.nan, np.inf, np.nan],  # -inf * 0
    "softplus": [np.nan, np.inf, 0.0],
}
SPECIALS = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 100.0, -100.0, 1000.0], np.float32)

# rule -> {input: (matched graph's result, rewritten graph's result)} wherever
# the two differ on SPECIALS (float32 and float64); on every other special
# the matched graph gives what the rewritten one gives (NaN for NaN, the
# same infinity, the same finite value up to rounding).
SPECIAL_DIFFERENCES = {
    "relu-where": {np.nan: (0.0, np.nan)},
    "relu-mul": {-np.inf: (np.nan, 0.0)},
    "softplus-log1p": {100.0: (np.inf, 100.0), 1000.0: (np.inf, 1000.0)},
    "softplus-log": {1000.0: (np.inf, 1000.0),  # float64: exp(100) is finite
                     -100.0: (0.0, np.exp(-100.0))},  # 1 + exp(-100) rounds to 1
}


def _elementwise(name: str) -> bool:
    """Whether case ``name`` rewrites a float x into one activation of OP_SPECIALS."""
    after = parse_graph(textwrap.dedent(CASES[name].after).strip() + "\n")
    return after.inputs[0].dtype.is_float and list(after)[-1].op in OP_SPECIALS


@pytest.mark.parametrize("name", [n for n in CASES if _elementwise(n)])
def test_special_values(name):
    case = CASES[name]
    before, after, _ = run(case.before)
    xs = np.tile(SPECIALS.astype(before.inputs[0].dtype.numpy)[:, None], (1, 4))
    want, = evaluate(before, [xs])
    got, = evaluate(after, [xs])
    want, got = want[:, 0], got[:, 0]
    np.testing.assert_array_equal(got[:3], OP_SPECIALS[list(after)[-1].op], err_msg=f"{name} on NaN, inf, -inf")
    differences = SPECIAL_DIFFERENCES.get(case.rule, {})
    for x, w, g in zip(SPECIALS, want, got):
        key = next((k for k in differences if k == x or (np.isnan(k) and np.isnan(x))), None)
        if key is not None:
            np.testing.assert_array_equal([w, g], differences[key], err_msg=f"{name} at x={x}")
        elif not np.isfinite(x):
            np.testing.assert_array_equal(g, w, err_msg=f"{name} at x={x}")  # NaN and infinities agree exactly
        else:
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-38, err_msg=f"{name} at x={x}")


def test_log_softmax_special_rows():
    # log_softmax gives NaN for a row holding NaN or +inf, -inf for a -inf
    # entry, and finite values where softmax underflows to 0; the matched
    # forms agree but for log(softmax) (-inf where softmax underflows) and
    # x - logsumexp(x) (-inf at the finite entries of a row holding +inf).
    rows = np.array([[0.0, -200.0, 1.0, 2.0], [np.nan, 1.0, 2.0, 3.0], [np.inf, 1.0, 2.0, 3.0],
                     [-np.inf, 1.0, 2.0, 3.0], [-np.inf] * 4], np.float32)
    row = rows[0].astype(np.float64)
    first = (row - row.max() - np.log(np.sum(np.exp(row - row.max())))).astype(np.float32)
    log_softmax = np.array([first, [np.nan] * 4, [np.nan] * 4, [-np.inf, -2.407606, -1.407606, -0.407606],
                            [np.nan] * 4], np.float32)
    matched = {"log-softmax-log": {0: [first[0], -np.inf, first[2], first[3]]},
               "log-softmax-lse": {2: [np.nan, -np.inf, -np.inf, -np.inf]}}
    for name in ("log-softmax-log", "log-softmax-parts", "log-softmax-compiled", "log-softmax-lse"):
        before, after, _ = run(CASES[name].before)
        want, = evaluate(before, [rows])
        got, = evaluate(after, [rows])
        np.testing.assert_allclose(got, log_softmax, rtol=1e-6, equal_nan=True, err_msg=name)
        expected = log_softmax.copy()
        for i, r in matched.get(name, {}).items():
            expected[i] = r
        np.testing.assert_allclose(want, expected, rtol=1e-6, equal_nan=True, err_msg=name)


def test_exact_special_values_option_skips_the_rules_that_change_them():
    strict = ActivationMatching(exact_special_values=True)
    for name, case in CASES.items():
        _, after, changed = run(case.before, [strict, get_pass("dce")])
        assert changed is (case.rule not in SPECIAL_VALUE_CHANGES), name
