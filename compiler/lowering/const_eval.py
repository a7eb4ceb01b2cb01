"""Compile-time evaluation of constant subgraphs during lowering.

A PyTensor variable is *constant* when it is a ``Constant``, a shared
variable baked into an initializer, or an output of an Apply node whose
inputs are all constant. When a constant node cannot be lowered (its op has
no rule, or the rule raises ``Unsupported``, e.g. ``gammaln(y + 1)`` of
observed data, or a Dirichlet normalizer of constant concentrations), PyTensor
itself evaluates it with its whole constant ancestry (one
``pytensor.function`` in Python mode, no rewrites: each op's own
``perform``, e.g. ``scipy.special.gammaln`` for ``GammaLn``), and each
output becomes one IR constant. Constant nodes that do lower are left to
the ``constant-folding`` pass (so a baked shared variable keeps its
initializer name).

Results over ``max_elements`` (the limit of ``constant-folding``) are not
baked, and the error says that the limit blocked the evaluation.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pytensor
from pytensor.compile.mode import Mode
from pytensor.graph.basic import Constant

from ir.transforms import FOLD_MAX_ELEMENTS

_PYTHON_MODE = Mode(linker="py", optimizer=None)


class ConstantEvaluator:
    """Knows which variables of one graph are constant and evaluates them.

    Args:
        nodes: the graph's Apply nodes in topological order.
        constant_vars: non-``Constant`` variables to treat as constants (the
            baked shared variables).
        max_elements: the largest result baked.
    """

    def __init__(self, nodes: Sequence, constant_vars: set, max_elements: int = FOLD_MAX_ELEMENTS):
        self.max_elements = max_elements
        self._cache: dict = {}
        self._nodes, self._constant_vars = nodes, constant_vars
        self._constant: set | None = None  # found on first use: most lowerings never ask

    @property
    def constant(self) -> set:
        """Every constant variable that is not a ``Constant``: the
        ``constant_vars`` and the outputs of nodes of constants."""
        if self._constant is None:
            constant = set(self._constant_vars)
            for node in self._nodes:
                if node.inputs and all(isinstance(v, Constant) or v in constant for v in node.inputs):
                    constant.update(node.outputs)
            self._constant = constant
        return self._constant

    def is_constant(self, node) -> bool:
        """Whether every input of Apply ``node`` is constant."""
        return bool(node.outputs) and all(o in self.constant for o in node.outputs)

    def value(self, var) -> np.ndarray | None:
        """The value of constant tensor variable ``var`` (None when it is not
        constant, too big, or PyTensor cannot evaluate it): how a rule that
        needs a compile-time value (an axis, a shape) reads one computed from
        constants, e.g. PyMC's ``switch(axis >= 0, axis, ndim + axis)``."""
        if var not in self.constant or var.owner is None or not hasattr(var.type, "dtype"):
            return None
        if var not in self._cache:
            try:
                self._cache[var] = self.evaluate(var.owner)[var.owner.outputs.index(var)]
            except ValueError:
                self._cache[var] = None
        return self._cache[var]

    def evaluate(self, node) -> list[np.ndarray]:
        """The values of ``node``'s outputs (a constant node), computed by PyTensor.

        Raises:
            ValueError: an output has more than ``max_elements`` elements
                (the message says so), is not a tensor, or PyTensor fails to
                evaluate it (the message holds PyTensor's error).
        """
        if not all(hasattr(o.type, "dtype") for o in node.outputs):
            raise ValueError("its inputs are constant, but it has non-tensor outputs")
        try:
            fn = pytensor.function([], list(node.outputs), mode=_PYTHON_MODE, on_unused_input="ignore")
            results = [np.asarray(r, dtype=o.type.dtype) for r, o in zip(fn(), node.outputs)]
        except Exception as e:  # noqa: BLE001 - reported to the user as the reason
            raise ValueError(f"its inputs are constant, but PyTensor could not evaluate it: "
                             f"{type(e).__name__}: {e}") from None
        for r in results:
            if r.size > self.max_elements:
                raise ValueError(f"its inputs are constant, but the result has {r.size} elements, over the "
                                 f"compile-time evaluation limit of {self.max_elements}")
        return results
