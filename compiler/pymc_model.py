"""The PyMC front door: a ``pm.Model``'s log-density and gradient as samplers
call them, compiled to ONNX (``compile_logp_dlogp``).

Samplers work in the unconstrained space on one flat vector: PyMC's value
variables (``model.value_vars``: each free random variable, through its
default transform, e.g. ``sigma_log__``) ravelled and joined in
``model.value_vars`` order, the order ``model.logp_dlogp_function(
ravel_inputs=True)`` uses. ``compile_logp_dlogp`` builds that function from
PyMC's public graph API (``model.logp()``, ``pytensor.grad``,
``pymc.pytensorf.join_nonshared_inputs``) and compiles it with
``compile_to_onnx``, single-point (``x[d] -> logp[], dlogp[d]``) or batched
over a leading dim (``x[B, d] -> logp[B], dlogp[B, d]``, the option
``vectorize``), together with what a sampler needs beside it: the initial
point as one array, the ravel order, and ``unravel`` back to named values in
the constrained space (PyMC's transforms and the model's deterministics,
compiled too).

This module imports PyMC (an optional extra: ``pip install
pytensor-onnx[samplers]``); the compile path never imports it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.pytensorf import join_nonshared_inputs

from compiler.core.driver import CompiledModel, compile_to_onnx


@dataclass(frozen=True)
class RavelEntry:
    """Where one value variable lives in the flat vector: ``x[..., start:stop]``
    reshaped to ``shape`` (``dtype`` is the variable's)."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    start: int
    stop: int


@dataclass
class LogpDlogp:
    """A PyMC model's ravelled log-density and gradient in onnxruntime
    (``compile_logp_dlogp`` makes one).

    Attributes:
        compiled: the ``CompiledModel`` of ``x -> (logp, dlogp)``: input
            ``x`` (``[d]``, or ``[batch, d]`` when ``batch`` is set; the value
            variables' dtype, float64 unless ``floatX`` is float32),
            outputs ``logp`` (``[]`` or ``[batch]``) and ``dlogp`` (the
            gradient, the shape of ``x``).
        unravel_model: the ``CompiledModel`` of ``x -> constrained values``
            (one output per name of ``names``, batched like ``compiled``),
            compiled on first use with ``compile_kwargs``.
        initial_point: the model's initial point (``model.initial_point()``)
            ravelled, ``[d]``.
        ravel_order: one ``RavelEntry`` per value variable, in order.
        names: the names ``unravel`` returns: the free random variables, then
            the deterministics, in the model's order.
        batch: the batch dim's name, or None (single-point).
    """

    compiled: CompiledModel
    initial_point: np.ndarray
    ravel_order: list[RavelEntry]
    names: list[str]
    batch: str | None
    _unravel_graph: tuple = field(repr=False)  # (x, constrained outputs, compile_to_onnx kwargs)

    @functools.cached_property
    def unravel_model(self) -> CompiledModel:
        x, outputs, kwargs = self._unravel_graph
        return compile_to_onnx([x], outputs=outputs, **kwargs)

    @property
    def size(self) -> int:
        """``d``, the length of the flat vector."""
        return self.ravel_order[-1].stop if self.ravel_order else 0

    def __call__(self, x) -> tuple[np.ndarray, np.ndarray]:
        """``(logp, dlogp)`` at ``x`` (``[d]``, or ``[B, d]`` when
        batched): through ``CompiledModel.run`` (its input checks raise
        ``TypeError``/``ValueError`` on a wrong dtype or shape)."""
        logp, dlogp = self.compiled.run(x)
        return logp, dlogp

    logp_dlogp = __call__

    def ravel(self, point: dict) -> np.ndarray:
        """The flat vector of ``point`` (value-variable name ->
        array of the variable's shape, or with a leading batch dim of B when
        batched: then ``[B, d]``).

        Raises:
            KeyError: a value variable is missing from ``point``.
        """
        lead = () if self.batch is None else np.shape(point[self.ravel_order[0].name])[:1]
        return np.concatenate([np.reshape(np.asarray(point[e.name], dtype=self.initial_point.dtype), lead + (-1,))
                               for e in self.ravel_order], axis=-1)

    def split(self, x) -> dict[str, np.ndarray]:
        """``x`` (``[d]`` or ``[..., d]``) cut into value variables by
        ``ravel_order``: the unconstrained point (``ravel`` inverts it)."""
        x = np.asarray(x)
        lead = x.shape[:-1]
        return {e.name: x[..., e.start:e.stop].reshape(lead + e.shape).astype(e.dtype, copy=False)
                for e in self.ravel_order}

    def unravel(self, x) -> dict[str, np.ndarray]:
        """The constrained values at ``x`` (``[d]``; ``[B, d]`` when batched):
        each free random variable through its transform's ``backward``, and
        every deterministic, computed in onnxruntime. Name -> array of the
        variable's shape (with the leading ``B`` when batched)."""
        return dict(zip(self.names, self.unravel_model.run(np.asarray(x))))

    def to_nutpie(self, jitter: float = 1.0):
        """A nutpie model sampling through onnxruntime
        (``nutpie.compiled_pyfunc.from_pyfunc``: ``nutpie.sample`` takes it):
        logp and gradient from the single-point model, the draws stored as
        ``unravel`` gives them, chains started at ``initial_point`` plus
        Uniform(-jitter, jitter) noise (PyMC's ``jitter+adapt_diag`` start).

        Raises:
            ValueError: the model is batched (nutpie calls one point at a time).
            ImportError: nutpie is not installed (the ``samplers`` extra).
        """
        if self.batch is not None:
            raise ValueError("nutpie calls one point at a time: use compile_logp_dlogp(model) without batch")
        from nutpie.compiled_pyfunc import from_pyfunc

        run, names, start = self.compiled.run, self.names, self.initial_point
        expanded = self.unravel(start)
        dtypes = [np.dtype("float64")] * len(names)

        def make_logp_fn():
            def logp(x, **shared):
                logp, dlogp = run(x)
                return float(logp), dlogp

            return logp

        def make_expand_fn(*seeds_and_chain):
            unravel = self.unravel_model.run
            return lambda x, **shared: dict(zip(names, unravel(x)))

        def make_initial_point(seed):
            return start + np.random.default_rng(seed).uniform(-jitter, jitter, size=start.shape)

        return from_pyfunc(self.size, make_logp_fn, make_expand_fn, dtypes,
                           [np.shape(expanded[n]) for n in names], names, make_initial_point_fn=make_initial_point)


def compile_logp_dlogp(model: pm.Model, batch: str | None = None, *, jacobian: bool = True,
                       **compile_kwargs: Any) -> LogpDlogp:
    """Compile ``model``'s ravelled, transformed log-density and its gradient.

    Args:
        model: a ``pymc.Model`` whose free random variables are continuous.
        batch: None (single point: ``x[d]``) or the name of a leading batch
            dim (``"points"``: ``x[B, d] -> logp[B], dlogp[B, d]``, the graph
            vectorized by ``compile_to_onnx(..., vectorize=...)``).
        jacobian: include the log-Jacobians of the transforms (PyMC's
            ``model.logp(jacobian=True)``, what samplers need).
        compile_kwargs: options of ``compile_to_onnx`` for both models.

    Returns:
        A ``LogpDlogp``; its logp is ``model.logp(jacobian=jacobian)`` summed
        and its gradient ``pytensor.grad`` of it w.r.t. the flat vector.

    Raises:
        TypeError: ``model`` is not a ``pymc.Model``, or ``vectorize`` among
            ``compile_kwargs``; the option checks of ``compile_to_onnx``.
        ValueError: the model has no free random variable, a discrete one
            (no gradient), or ``batch`` is not a dim name (str).
    """
    if not isinstance(model, pm.Model):
        raise TypeError(f"model must be a pymc.Model, got {type(model).__name__}")
    if "vectorize" in compile_kwargs:
        raise TypeError("compile_logp_dlogp batches with batch=<dim name>, not vectorize=")
    if batch is not None and not isinstance(batch, str):
        raise ValueError(f"batch must be None or a batch dim name (str), got {batch!r}")
    values = list(model.value_vars)
    if not values:
        raise ValueError("the model has no free random variable: there is nothing to sample")
    discrete = [v.name for v in values if v.dtype not in ("float64", "float32")]
    if discrete:
        raise ValueError(f"value variable(s) {', '.join(discrete)} are discrete: a gradient-based sampler "
                         "cannot use this model's log-density")
    point = model.initial_point()
    order, start = [], 0
    for v in values:
        shape = tuple(int(n) for n in np.shape(point[v.name]))
        size = int(np.prod(shape, dtype=np.int64))
        order.append(RavelEntry(v.name, shape, np.dtype(v.dtype), start, start + size))
        start += size
    logp = model.logp(jacobian=jacobian)
    grad = pt.concatenate([g.ravel() for g in pytensor.grad(logp, values)])
    constrained = model.replace_rvs_by_values([*model.free_RVs, *model.deterministics])
    names = [rv.name for rv in [*model.free_RVs, *model.deterministics]]
    outputs, x = join_nonshared_inputs(point, [logp, grad, *constrained], values)
    x.name = "x"
    outputs[0].name, outputs[1].name = "logp", "dlogp"
    for name, out in zip(names, outputs[2:]):
        out.name = name
    kwargs = {**compile_kwargs, "vectorize": {"x": batch} if batch is not None else None}
    compiled = compile_to_onnx([x], outputs=outputs[:2], **kwargs)
    initial = np.concatenate([np.ravel(point[v.name]) for v in values]).astype(x.dtype)
    return LogpDlogp(compiled, initial, order, names, batch, (x, outputs[2:], kwargs))
