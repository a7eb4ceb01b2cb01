"""The three forms in which samplers take a PyMC model's log-density and
gradient, each as (ONNX-compiled callables, PyTensor reference, input maker):

- ``raw``: ``model.logp()`` and ``pytensor.grad`` of it w.r.t. every value
  variable, compiled from the raw graph;
- ``compiled``: ``model.compile_logp()`` and ``model.compile_dlogp()``
  (PyMC's ``PointFunc`` around a compiled ``pytensor.function``);
- ``ravel``: ``model.logp_dlogp_function(ravel_inputs=True)`` (one raveled
  input vector, outputs logp and the raveled gradient).

Used by ``tests/pymc`` and ``bench/bench_pymc.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pymc as pm
import pytensor

from compiler import compile_to_onnx

FORMS = ("raw", "compiled", "ravel")


@dataclass
class Form:
    """One form of one model.

    Attributes:
        compiled: the ``CompiledModel`` objects (one or two).
        reference: PyTensor functions computing the same outputs, one per
            compiled model, taking the same positional inputs.
        inputs: point (dict value-variable name -> array) -> positional
            inputs of each compiled model.
    """

    compiled: list
    reference: list
    inputs: Callable[[dict], list]

    def onnx(self, point: dict) -> list[np.ndarray]:
        """Every output of every compiled model at ``point``, in onnxruntime."""
        return [r for m in self.compiled for r in m.run(*self.inputs(point))]

    def pytensor(self, point: dict) -> list[np.ndarray]:
        """The same outputs computed by PyTensor."""
        out = []
        for f in self.reference:
            res = f(*self.inputs(point))
            out.extend(res if isinstance(res, (list, tuple)) else [res])
        return [np.asarray(r) for r in out]


def build_form(model: pm.Model, form: str, **compile_kwargs) -> Form:
    """Compile ``model`` in ``form`` (one of ``FORMS``) with ``compile_to_onnx``."""
    names = [v.name for v in model.value_vars]
    if form == "raw":
        logp = model.logp()
        outs = [logp, *pytensor.grad(logp, model.value_vars)]
        ref = pytensor.function(model.value_vars, outs)
        return Form([compile_to_onnx(model.value_vars, outputs=outs, **compile_kwargs)], [ref],
                    lambda p: [p[n] for n in names])
    if form == "compiled":
        fns = [model.compile_logp(), model.compile_dlogp()]
        order = [v.name for v in fns[0].f.maker.fgraph.inputs]
        assert order == [v.name for v in fns[1].f.maker.fgraph.inputs]
        return Form([compile_to_onnx(f, **compile_kwargs) for f in fns], [f.f for f in fns],
                    lambda p: [p[n] for n in order])
    if form == "ravel":
        fn = model.logp_dlogp_function(ravel_inputs=True)
        fn.set_extra_values({})
        f = fn._pytensor_function
        return Form([compile_to_onnx(f, **compile_kwargs)], [f],
                    lambda p: [np.concatenate([np.ravel(p[n]) for n in names])])
    raise ValueError(f"form must be one of {FORMS}, got {form!r}")


def random_points(model: pm.Model, count: int, seed: int = 0, scale: float = 0.5) -> list[dict]:
    """``count`` random points of the unconstrained space (every value
    variable's entries drawn from Normal(initial point, scale))."""
    rng = np.random.default_rng(seed)
    start = model.initial_point()
    return [{k: (v + scale * rng.normal(size=np.shape(v))).astype(v.dtype) for k, v in start.items()}
            for _ in range(count)]
