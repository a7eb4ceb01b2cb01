"""``relu-silu``: the cases where a rule must not fire (wrong constants,
extra uses of an intermediate, mismatched values, wrong axes), each with the
reason the rule gives, and GELU's constant tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from ir.printer import print_graph
from passes.activations import ActivationMatching
from tests.passes.test_activations import misses, run


# -- does not fire -------------------------------------------------------------
NOT_FIRING = {
    "maximum with 0.1": ("""
        graph @main(%x: f32[N,4]) {
          const %c: f32[] = 0.1
          %y: f32[N,4] = maximum(%x, %c)
          return %y
        }""", "relu-max: constant %c fails its constraint"),
    "maximum with a non-uniform constant": ("""
        graph @main(%x: f32[N,2]) {
          const %c: f32[2] = [0.0, -1.0]
          %y: f32[N,2] = maximum(%x, %c)
          return %y
        }""", "relu-max: constant %c fails its constraint"),
    "maximum with zeros that broadcast x": ("""
        graph @main(%x: f32[4]) {
          const %c: f32[2,4] = [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
          %y: f32[2,4] = maximum(%x, %c)
          return %y
        }""", "relu-max: replacement type f32[4] != f32[2,4]"),
    "maximum of unsigned integers": ("""
        graph @main(%x: u8[N,4]) {
          const %zero: u8[] = 0
          %y: u8[N,4] = maximum(%x, %zero)
          return %y
        }""", "relu-max: x %x fails its constraint"),
    "clip to 6": ("""
        graph @main(%x: f32[N,4]) {
          const %zero: f32[] = 0.0
          const %six: f32[] = 6.0
          %y: f32[N,4] = clip(%x, %zero, %six)
          return %y
        }""", "relu-clip: constant %six fails its constraint"),
    "where with another x in the condition": ("""
        graph @main(%x: f32[N,4], %u: f32[N,4]) {
          const %zero: f32[] = 0.0
          %p: bool[N,4] = gt(%u, %zero)
          %y: f32[N,4] = where(%p, %x, %zero)
          return %y
        }""", "relu-where: x is bound to another value"),
    "where with x >= 0": ("""
        graph @main(%x: f32[N,4]) {
          const %zero: f32[] = 0.0
          %p: bool[N,4] = ge(%x, %zero)
          %y: f32[N,4] = where(%p, %x, %zero)
          return %y
        }""", "relu-where: %p is not produced by gt; %p is not produced by lt"),
    "where whose condition has another use": ("""
        graph @main(%x: f32[N,4]) {
          const %zero: f32[] = 0.0
          %p: bool[N,4] = gt(%x, %zero)
          %y: f32[N,4] = where(%p, %x, %zero)
          return %y, %p
        }""", "relu-where: gt result %p has other uses"),
    "sigmoid with another use": ("""
        graph @main(%x: f32[N,4]) {
          %s: f32[N,4] = sigmoid(%x)
          %y: f32[N,4] = mul(%x, %s)
          %z: f32[N,4] = add(%s, %y)
          return %z
        }""", "silu: sigmoid result %s has other uses"),
    "sigmoid of another value": ("""
        graph @main(%x: f32[N,4], %u: f32[N,4]) {
          %s: f32[N,4] = sigmoid(%u)
          %y: f32[N,4] = mul(%x, %s)
          return %y
        }""", "silu: x is bound to another value"),
    "silu-div with exp(x)": ("""
        graph @main(%x: f32[N,4]) {
          const %one: f32[] = 1.0
          %e: f32[N,4] = exp(%x)
          %d: f32[N,4] = add(%one, %e)
          %y: f32[N,4] = div(%x, %d)
          return %y
        }""", "silu-div: %x is not produced by neg"),
    "leaky with a per-channel slope": ("""
        graph @main(%x: f32[N,2]) {
          const %a: f32[2] = [0.1, 0.2]
          const %zero: f32[] = 0.0
          %ax: f32[N,2] = mul(%a, %x)
          %p: bool[N,2] = gt(%x, %zero)
          %y: f32[N,2] = where(%p, %x, %ax)
          return %y
        }""", "leaky-relu: constant %a fails its constraint"),
    "maximum(x, 2x)": ("""
        graph @main(%x: f32[N,4]) {
          const %a: f32[] = 2.0
          %ax: f32[N,4] = mul(%a, %x)
          %y: f32[N,4] = maximum(%x, %ax)
          return %y
        }""", "leaky-relu-max: maximum(x, 2.0 * x) is leaky relu only for 0 <= alpha <= 1"),
    "hard-sigmoid clamped to 2": ("""
        graph @main(%x: f32[N,4]) {
          const %a: f32[] = 0.2
          const %b: f32[] = 0.5
          const %zero: f32[] = 0.0
          const %two: f32[] = 2.0
          %ax: f32[N,4] = mul(%a, %x)
          %v: f32[N,4] = add(%ax, %b)
          %y: f32[N,4] = clip(%v, %zero, %two)
          return %y
        }""", "hard-sigmoid: constant %two fails its constraint"),
    "hard-swish with x / 5": ("""
        graph @main(%x: f32[N,4]) {
          const %five: f32[] = 5.0
          const %half: f32[] = 0.5
          const %zero: f32[] = 0.0
          const %one: f32[] = 1.0
          %q: f32[N,4] = div(%x, %five)
          %v: f32[N,4] = add(%half, %q)
          %c: f32[N,4] = clip(%v, %zero, %one)
          %y: f32[N,4] = mul(%x, %c)
          return %y
        }""", "hard-swish: constant %five fails its constraint"),
    "gelu with 0.7071": ("""
        graph @main(%x: f32[N,4]) {
          const %k: f32[] = 0.7071
          const %half: f32[] = 0.5
          const %one: f32[] = 1.0
          %xk: f32[N,4] = mul(%x, %k)
          %e: f32[N,4] = erf(%xk)
          %t: f32[N,4] = add(%one, %e)
          %h: f32[N,4] = mul(%x, %half)
          %y: f32[N,4] = mul(%h, %t)
          return %y
        }""", "gelu-erf: constant %k fails its constraint"),
    "gelu with x^3 rounded to float32": ("""
        graph @main(%x: f32[N,4]) {
          const %c: f64[] = 0.044715
          const %k: f64[] = 0.7978845608028654
          const %half: f64[] = 0.5
          const %one: f64[] = 1.0
          %w: f64[N,4] = cast(%x) {to=f64}
          %xx: f32[N,4] = mul(%x, %x)
          %x3: f32[N,4] = mul(%xx, %x)
          %x3w: f64[N,4] = cast(%x3) {to=f64}
          %cx3: f64[N,4] = mul(%c, %x3w)
          %i: f64[N,4] = add(%w, %cx3)
          %ki: f64[N,4] = mul(%k, %i)
          %th: f64[N,4] = tanh(%ki)
          %t: f64[N,4] = add(%one, %th)
          %h: f64[N,4] = mul(%half, %w)
          %y: f64[N,4] = mul(%h, %t)
          return %y
        }""", "gelu-tanh: %x3w is not produced by pow; %x3w is not produced by mul"),
    "softplus of log(2 + exp(x))": ("""
        graph @main(%x: f32[N,4]) {
          const %two: f32[] = 2.0
          %e: f32[N,4] = exp(%x)
          %s: f32[N,4] = add(%two, %e)
          %y: f32[N,4] = log(%s)
          return %y
        }""", "softplus-log: constant %two fails its constraint"),
    "log softmax with sums over another axis": ("""
        graph @main(%x: f32[3,4]) {
          %m: f32[3,1] = reduce_max(%x) {axes=[1], keepdims=true}
          %z: f32[3,4] = sub(%x, %m)
          %e: f32[3,4] = exp(%z)
          %s: f32[1,4] = reduce_sum(%e) {axes=[0], keepdims=true}
          %l: f32[1,4] = log(%s)
          %y: f32[3,4] = sub(%z, %l)
          return %y
        }""", "log-softmax-parts: not one axis: max over 1, sum over 0"),
    "log softmax unsqueezed on another axis": ("""
        graph @main(%x: f32[3,3]) {
          %m: f32[3] = reduce_max(%x) {axes=[1], keepdims=false}
          %mk: f32[1,3] = unsqueeze(%m) {axes=[0]}
          %z: f32[3,3] = sub(%x, %mk)
          %e: f32[3,3] = exp(%z)
          %s: f32[3,1] = reduce_sum(%e) {axes=[1], keepdims=true}
          %l: f32[3,1] = log(%s)
          %y: f32[3,3] = sub(%z, %l)
          return %y
        }""", "log-softmax-parts: not one axis: max over another axis than it keeps, sum over 1"),
    "log softmax whose exp has another use": ("""
        graph @main(%x: f32[N,4]) {
          %m: f32[N,1] = reduce_max(%x) {axes=[1], keepdims=true}
          %z: f32[N,4] = sub(%x, %m)
          %e: f32[N,4] = exp(%z)
          %s: f32[N,1] = reduce_sum(%e) {axes=[1], keepdims=true}
          %l: f32[N,1] = log(%s)
          %y: f32[N,4] = sub(%z, %l)
          return %y, %e
        }""", "log-softmax-parts: exp result %e has other uses"),
    "log of softmax with another use": ("""
        graph @main(%x: f32[N,4]) {
          %s: f32[N,4] = softmax(%x) {axis=1}
          %y: f32[N,4] = log(%s)
          return %y, %s
        }""", "log-softmax-log: softmax result %s has other uses"),
}


@pytest.mark.parametrize("name", NOT_FIRING)
def test_does_not_fire(name):
    # The reason must be part of the rule's miss (which also says why each
    # other operand order and alternative failed).
    text, reason = NOT_FIRING[name]
    before, after, changed = run(text, [ActivationMatching()])
    assert not changed and print_graph(after) == print_graph(before), f"{name} was rewritten:\n{after}"
    rule, why = reason.split(": ", 1)
    found = misses(text)
    assert any(m.startswith(rule + ": ") and why in m for m in found), \
        f"{name}: no miss of {rule} saying {why!r} in\n" + "\n".join(found)


def test_hard_sigmoid_with_another_slope_stays_a_hard_sigmoid_times_x():
    _, after, _ = run("""
        graph @main(%x: f32[N,4]) {
          const %fifth: f32[] = 0.2
          const %half: f32[] = 0.5
          const %zero: f32[] = 0.0
          const %one: f32[] = 1.0
          %q: f32[N,4] = mul(%fifth, %x)
          %v: f32[N,4] = add(%half, %q)
          %c: f32[N,4] = clip(%v, %zero, %one)
          %y: f32[N,4] = mul(%x, %c)
          return %y
        }""")
    assert [(n.op, n.attrs) for n in after] == [("hard_sigmoid", {"alpha": float(np.float32(0.2)), "beta": 0.5}),
                                               ("mul", {})]


def test_a_shared_x_may_have_other_uses():
    _, after, _ = run("""
        graph @main(%x: f32[N,4]) {
          %s: f32[N,4] = sigmoid(%x)
          %y: f32[N,4] = mul(%x, %s)
          %z: f32[N,4] = exp(%x)
          return %y, %z, %x
        }""")
    assert [n.op for n in after] == ["silu", "exp"]


def test_relu6_not_inside_a_hard_swish_becomes_relu_and_minimum():
    # Compound patterns go first, so a relu6 is still a maximum when
    # hard-swish looks at it; left alone, its maximum becomes relu.
    _, after, _ = run("""
        graph @main(%x: f32[N,4]) {
          const %zero: f32[] = 0.0
          const %six: f32[] = 6.0
          %m: f32[N,4] = maximum(%x, %zero)
          %y: f32[N,4] = minimum(%m, %six)
          return %y
        }""")
    assert [n.op for n in after] == ["relu", "minimum"]


# -- GELU's constant tolerance ----------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_gelu_constants_match_within_four_ulps(dtype):
    ulp = np.spacing(dtype(2 ** -0.5))
    k0 = dtype(2 ** -0.5)
    for k, fires in [(k0, True), (k0 + 4 * ulp, True), (k0 - 3 * ulp, True), (k0 + 6 * ulp, False),
                     (dtype(0.7071), dtype == np.float16)]:
        t = {np.float16: "f16", np.float32: "f32", np.float64: "f64"}[dtype]
        _, after, _ = run(f"""
            graph @main(%x: {t}[N,4]) {{
              const %k: {t}[] = {float(k)!r}
              const %half: {t}[] = 0.5
              const %one: {t}[] = 1.0
              %xk: {t}[N,4] = mul(%x, %k)
              %e: {t}[N,4] = erf(%xk)
              %p: {t}[N,4] = add(%one, %e)
              %h: {t}[N,4] = mul(%x, %half)
              %y: {t}[N,4] = mul(%h, %p)
              return %y
            }}""")
        assert ([n.op for n in after] == ["gelu"]) is fires, (dtype, float(k))
