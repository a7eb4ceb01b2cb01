"""Building blocks for special functions evaluated by series or continued
fractions whose number of terms depends on the arguments (the incomplete
gamma and beta functions): each method runs on the elements that chose it
only, in an ONNX ``Loop`` that stops once every one of them has converged.

A function body first broadcasts its arguments and flattens them to 1-D
(``flat_args``); ``on_subset`` gathers the elements of one method with
``Compress``, runs the method on them and scatters its values back with
``ScatterND``, so each Loop costs what its own elements need, and an
element that never enters a method's region costs it nothing.
``converge`` is the loop: a frozen element keeps its state, so every
element's value is that of the scalar algorithm stopping at its own step.
"""

from __future__ import annotations

from collections.abc import Callable

from backends.onnx.rules.common import B, F64, I64


def flat_args(c, *xs):
    """``(shape, flat_xs)``: the broadcast shape of ``xs`` (float64 values of
    any shapes) and each x expanded to it and reshaped to 1-D."""
    total = xs[0]
    for x in xs[1:]:
        total = c.op("Add", total, x)
    shape = c.op("Shape", total)
    flat = [c.op("Reshape", c.op("Expand", x, shape), c.const([-1], I64)) for x in xs]
    return shape, flat


def on_subset(c, mask, args, method: Callable, into):
    """``into`` (1-D float64) with the elements where ``mask`` holds replaced
    by ``method(c, *subset_args)``, a function of 1-D float64 values of the
    selected elements returning one value per element."""
    sub = [c.op("Compress", a, mask, axis=0) for a in args]
    values = method(c, *sub)
    index = c.op("Transpose", c.op("NonZero", mask), perm=[1, 0])
    return c.op("ScatterND", into, index, values)


def converge(c, init: list, step: Callable, max_steps: int, name: str, skip=None) -> list:
    """The 1-D float64 ``init`` state after each element's own number of
    steps of ``step`` (at most ``max_steps``).

    ``step(c, *state)`` returns ``(new_state, done)``: ``done`` (bool) marks
    the elements whose new state is final. An element's state stops changing
    at the step that sets its ``done`` (the scalar loop's ``break`` after
    the update); the ONNX ``Loop`` stops when no element is left running.
    An element still running after ``max_steps`` gets NaN in every state
    value (no silently truncated sum). Elements where ``skip`` (bool, if
    given) holds run no step and keep ``init``.
    """
    done0 = c.op("Equal", c.op("Shape", init[0]), c.const([-1], I64))  # one False, broadcast below
    done0 = c.op("Expand", done0, c.op("Shape", init[0]))
    if skip is not None:
        done0 = c.op("Or", done0, skip)
    with c.body() as nodes:
        i = c.body_input("i", I64, [])
        cond = c.body_input("cond", B, [])
        state = [c.body_input(f"s{j}", F64, [None]) for j in range(len(init))]
        done = c.body_input("done", B, [None])
        new, finished = step(c, *state)
        out = [c.op("Where", done, s, n) for s, n in zip(state, new)]
        done_out = c.op("Or", done, finished)
        left = c.op("ReduceSum", c.cast(c.op("Not", done_out), I64), keepdims=0)
        cond_out = c.op("Greater", left, c.const(0, I64))
    graph = c.subgraph(nodes, [i, cond, *state, done], [cond_out, *out, done_out], name)
    results = c.op("Loop", c.const(max_steps, I64), c.const(True, B), *init, done0,
                   num_outputs=len(init) + 1, body=graph)
    done = results[-1]  # NaN where an element has not converged within max_steps
    return [c.op("Where", done, v, c.const(float("nan"), F64)) for v in results[:-1]]
