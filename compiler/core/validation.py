"""Checks of what callers hand the compiler and the compiled model.

``check_pass_list`` validates the pass list of ``compile_to_onnx`` before any
work is done (its options are validated by ``compiler.core.options.
CompileOptions``), so a bad argument gets a ``ValueError``/``TypeError`` that
names the argument and the accepted values (not an error from deep inside a
pass or from onnxruntime). ``equal_dim_groups`` records, from the lowered IR,
which input dims PyTensor requires to be equal (two operands of a
broadcasting elementwise op whose dims are not statically 1: PyTensor refuses
to broadcast them at run time, ONNX would). ``check_run_inputs`` checks the
arrays given to ``CompiledModel.run`` against the model's declared input
types and those groups before onnxruntime is called; a raw onnxruntime
session checks dtypes and ranks but neither symbolic dims shared between
inputs nor PyTensor's runtime-broadcasting rule.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ir import symbolic as sym
from passes import Pass, registered_passes

def check_pass_list(passes) -> None:
    """Validate ``compile_to_onnx``'s ``passes`` argument (its options are
    ``compiler.core.options.CompileOptions``, validated there).

    Raises:
        TypeError: ``passes`` is not None or a list/tuple of ``Pass`` objects
            and pass names (a bare string is refused: ``"cse"`` would read as
            the passes ``c``, ``s``, ``e``).
        ValueError: an unknown pass name (the registered names are listed).
    """
    if passes is None:
        return
    if isinstance(passes, (str, bytes)) or not isinstance(passes, (list, tuple)):
        hint = f"; did you mean [{passes!r}]?" if isinstance(passes, str) else ""
        raise TypeError("passes must be None or a list of Pass objects and registered pass names, "
                        f"got {type(passes).__name__} {passes!r}{hint}")
    known = registered_passes()
    for i, p in enumerate(passes):
        if isinstance(p, str):
            if p not in known:
                raise ValueError(f"passes[{i}] = {p!r} is not a registered pass; "
                                 f"known passes: {', '.join(sorted(known))}")
        elif not isinstance(p, Pass):
            hint = ("; the second positional argument is passes: give the outputs as outputs=[...]"
                    if hasattr(p, "owner") and hasattr(p, "type") else "")  # a PyTensor variable
            raise TypeError(f"passes[{i}] must be a Pass object or a registered pass name (str), "
                            f"got {type(p).__name__} {p!r}{hint}")


def equal_dim_groups(lowered) -> list[list[tuple[str, int]]]:
    """Groups of input dims ``(input name, axis)`` that must be equal at run
    time, read from a freshly lowered graph (``compiler.lowering.LoweredGraph``:
    the PyTensor nodes and the IR values they lowered to, before passes).

    PyTensor's ``Elemwise`` refuses to broadcast a dim that is not statically
    1 ("Runtime broadcasting not allowed"); ``Dot``, ``BatchedDot`` and
    ``Blockwise(Dot)`` need equal contracted (and batch) dims. ONNX would
    broadcast a length-1 dim silently, or fail inside onnxruntime. A core
    dim name a ``Blockwise`` (or a core op's ``gufunc_signature``) repeats
    joins those dims: ``det``, ``inv``, ``cholesky`` need square matrices,
    ``solve`` a right-hand side of matching rows. Only dims
    that are an input's own symbolic name are tracked; computed dims are not.
    A dim name shared by several inputs (``input_shapes``) is a group too.

    A size the graph fixes for such a dim adds ``(None, size)`` to its
    group: a ``SpecifyShape`` with a constant size on a value (an
    intermediate one too) whose dim it is (PyTensor checks it at run time,
    ``AssertionError``), and the static size an operand of the same
    ``Elemwise`` or ``Dot`` has in the IR (a constant, or a shared variable
    baked as an initializer: ``x + b`` with ``b`` of length 3 fixes ``x``'s
    last dim to 3, ``x @ W`` fixes ``x``'s inner dim to ``W.shape[0]``;
    PyTensor refuses another size, "Runtime broadcasting not allowed" or
    "shapes not aligned"); and a reshape to a constant shape of a value
    whose size is ``k * dim`` for one input dim (``_reshape_fixes``). ``Alloc``'s value and
    ``AdvancedIncSubtensor1``'s increment (``x[idx] += y``, ``set`` too) broadcast only
    along their static 1s, so their other dims join the target's (``alloc(x, 5, 3)`` fixes
    ``x``'s dim to 3; ``y`` of ``x[idx]`` joins ``len(idx)`` and ``x``'s trailing dims).
    ONNX has no assertion and would broadcast a
    length-1 dim, so ``run`` checks these on the inputs. Sizes computed at
    run time and dims that are not an input's own are not checked.
    """
    from pytensor.graph.traversal import io_toposort
    from pytensor.tensor.basic import Alloc
    from pytensor.tensor.blas import BatchedDot
    from pytensor.tensor.blockwise import Blockwise
    from pytensor.tensor.elemwise import Elemwise
    from pytensor.tensor.math import Dot
    from pytensor.tensor.shape import Reshape
    from pytensor.tensor.subtensor import AdvancedIncSubtensor1
    from pytensor.tensor.utils import _parse_gufunc_signature

    graph = lowered.graph
    owner: dict[str, tuple[str, int]] = {}
    for v in graph.inputs:
        for axis, d in enumerate(v.type.shape):
            if isinstance(d, str):
                owner.setdefault(d, (v.name, axis))
    parent = {d: d for d in owner}

    def find(d):
        while parent[d] != d:
            parent[d] = parent[parent[d]]
            d = parent[d]
        return d

    fixed: list[tuple[str, int]] = []  # (input dim, size) a constant or baked weight of the same operation has

    def union(*dims):
        sizes = {d for d in dims if type(d) is int}
        dims = sorted({d for d in dims if isinstance(d, str) and d in owner})
        for d in dims[1:]:
            parent[find(d)] = find(dims[0])
        if dims and sizes:
            fixed.extend((dims[0], size) for size in sizes)

    def union_broadcast(shapes):
        shapes = [s for s in shapes if s is not None]
        rank = max((len(s) for s in shapes), default=0)
        for axis in range(rank):
            union(*(s[axis - (rank - len(s))] for s in shapes if axis - (rank - len(s)) >= 0))

    values, expansions = lowered.values, lowered.expansions

    def ir_dims(var) -> tuple | None:
        """The IR shape of ``var``; a DimShuffle that was never lowered
        (``LoweringContext.expansions``) has its source's with leading 1s."""
        value = values.get(var)
        if value is not None:
            return value.type.shape
        if var in expansions:
            source, k = expansions[var]
            dims = ir_dims(source)
            return None if dims is None else (1,) * k + tuple(dims)
        return None

    def ir_shape(var, drop_static_one=True):
        dims = ir_dims(var)
        if dims is None or not hasattr(var.type, "shape"):
            return None
        static = var.type.shape
        return tuple(None if drop_static_one and s == 1 else d for d, s in zip(dims, static))

    occurrences = sum(isinstance(d, str) for v in graph.inputs for d in v.type.shape)
    if occurrences == 0:
        return []  # every input dim is static: the ONNX input types hold them all
    order = lowered.order if lowered.order else io_toposort(lowered.input_vars, lowered.output_vars)
    kinds: dict[type, str | None] = {}  # op class -> "elemwise", "dot", "blockwise", "gufunc" or None
    for node in order:
        op = node.op
        kind = kinds.get(type(op), "?")
        if kind == "?":
            kind = kinds[type(op)] = ("elemwise" if isinstance(op, Elemwise) else "dot"
                                      if isinstance(op, (Dot, BatchedDot)) else "blockwise"
                                      if isinstance(op, Blockwise) else "gufunc"
                                      if getattr(op, "gufunc_signature", None) else None)
        if kind is None:
            if isinstance(op, Reshape):
                fixed.extend(_reshape_fixes(ir_dims(node.inputs[0]), node.outputs[0].type.shape, owner))
            elif isinstance(op, Alloc):  # the value broadcasts to the target only along its static 1s
                union_broadcast([ir_shape(node.inputs[0]), ir_shape(node.outputs[0], drop_static_one=False)])
            elif isinstance(op, AdvancedIncSubtensor1):  # y broadcasts to x[idx]: (len(idx), *x.shape[1:])
                x, y, idx = (ir_shape(v, drop_static_one=False) for v in node.inputs[:3])
                if x and idx and len(idx) == 1:
                    union_broadcast([ir_shape(node.inputs[1]), (idx[0], *x[1:])])
            continue
        if kind == "blockwise" and not isinstance(op.core_op, Dot) or kind == "gufunc":
            # a core dim name repeated in the signature ("(m,m)->()": det, inv, cholesky; "(m,m),(m,n)->(m,n)":
            # solve) makes those dims equal; PyTensor's core op raises otherwise (LinAlgError, a ValueError)
            signature = op.inputs_sig if kind == "blockwise" else _parse_gufunc_signature(op.gufunc_signature)[0]
            shapes = [ir_shape(v) for v in node.inputs[:len(signature)]]
            if any(s is None or len(s) < len(names) or kind == "gufunc" and len(s) != len(names)
                   for s, names in zip(shapes, signature)):
                continue
            by_name: dict[str, list] = {}
            for s, names in zip(shapes, signature):
                for name, d in zip(names, s[len(s) - len(names):]):
                    by_name.setdefault(name, []).append(d)
            for dims in by_name.values():
                if len(dims) > 1:
                    union(*dims)
            if kind == "blockwise":
                union_broadcast([s[:len(s) - len(names)] for s, names in zip(shapes, signature)])
            continue
        if kind == "elemwise":
            if len(node.inputs) < 2:
                continue  # one input: nothing to broadcast against
            shapes = [ir_dims(v) for v in node.inputs]
            if None not in shapes:
                if all(s == shapes[0] for s in shapes):
                    continue  # equal IR shapes: every union would join a dim with itself
                if _nothing_to_join(shapes, owner):
                    continue
            union_broadcast([ir_shape(v) for v in node.inputs])
        else:  # Dot, BatchedDot, Blockwise(Dot)
            shapes = [ir_dims(v) for v in node.inputs[:2]]
            if None not in shapes and _nothing_to_join(shapes, owner):
                continue
            a, b = ir_shape(node.inputs[0]), ir_shape(node.inputs[1])
            if a and b:
                union(a[-1], b[-2] if len(b) >= 2 else b[0])  # the contracted dims
                if isinstance(op, BatchedDot):
                    union(a[0], b[0])
                elif isinstance(op, Blockwise):
                    union_broadcast([a[:-2], b[:-2]])
    groups: dict[str, list[tuple[str, int]]] = {}
    for d, where in owner.items():
        groups.setdefault(find(d), []).append(where)
    for v in graph.inputs:
        for axis, d in enumerate(v.type.shape):
            if isinstance(d, str) and owner[d] != (v.name, axis):
                groups[find(d)].append((v.name, axis))
    for d, size in [*lowered.specified, *fixed]:
        if d not in owner:
            continue  # a dim computed inside the graph: not checked
        group = groups[find(d)]
        if (None, size) not in group:
            group.append((None, size))
    return [g for g in groups.values() if len(g) > 1]


def _reshape_fixes(dims, target, owner) -> list[tuple[str, int]]:
    """``[(dim, size)]`` when a reshape of a value of IR shape ``dims`` to the
    static ``target`` (PyTensor's output type) fixes one input dim: the
    value's size is ``k * dim`` for one input dim and a constant k, so
    ``np.reshape`` succeeds only at ``dim = prod(target) / k``. Otherwise
    (several dims, a non-linear size, an unknown target) nothing."""
    if dims is None or any(not isinstance(t, int) for t in target):
        return []
    size = sym.product(dims)
    names = sym.symbols(size)
    if len(names) != 1 or next(iter(names)) not in owner:
        return []
    (name,) = names
    k = sym.evaluate(size, {name: 1})
    if k <= 0 or sym.evaluate(size, {name: 0}) != 0 or sym.evaluate(size, {name: 2}) != 2 * k:
        return []
    total = int(np.prod(target, dtype=np.int64))
    return [(name, total // k)] if total % k == 0 else []


def _nothing_to_join(shapes, owner) -> bool:
    """Whether the IR ``shapes`` of an operation's operands hold no input dim
    that another operand could constrain: no input dim at all, or one and no
    static size beside it (a constant or baked weight's)."""
    dims = {d for s in shapes for d in s if type(d) is str and d in owner}
    return not dims or len(dims) == 1 and not any(type(d) is int for s in shapes for d in s)


def declared_inputs(model) -> tuple:
    """``(name, NumPy dtype, dims)`` of each input of ``model`` (an
    ``onnx_ir.Model``), dims an int or a dim name each: what
    ``check_run_inputs`` checks against, computed once per model by
    ``CompiledModel``."""
    return tuple((v.name, v.dtype.numpy(), tuple(d if isinstance(d, int) else d.value for d in v.shape))
                 for v in model.graph.inputs)


def run_signature(arrays: Sequence) -> tuple | None:
    """What ``check_run_inputs`` reads of ``arrays``: ``((dtype, shape), ...)``
    when every array is exactly a NumPy ``ndarray`` (no subclass, list or
    scalar, which it converts), else None. Arrays with the signature of a
    feed ``check_run_inputs`` accepted pass its checks again."""
    for a in arrays:
        if type(a) is not np.ndarray:
            return None
    return tuple([(a.dtype, a.shape) for a in arrays])


def check_run_inputs(model, arrays: Sequence, equal_dims: Sequence = (), declared: Sequence | None = None) -> dict:
    """The onnxruntime feed for ``arrays`` (one per input of ``model``, an
    ``onnx_ir.Model``, in order), after checking each against the model's
    declared input type (``declared``: ``declared_inputs(model)`` when the
    caller has it already, so a call reads nothing from the model).

    Arrays must have the declared dtype exactly; lists and Python scalars are
    converted to it when that loses nothing. Ranks and static dims must
    match; a symbolic dim (``dim_param``) used by several inputs, and every
    group of ``equal_dims`` (from ``equal_dim_groups``), must have one size,
    the one a ``(None, size)`` entry of the group requires if any.

    Raises:
        TypeError: wrong number of inputs, wrong dtype (naming the input).
        ValueError: wrong rank, a static dim or a shared symbolic dim that
            differs (naming the input and the axis).
    """
    if declared is None:
        declared = declared_inputs(model)
    if len(arrays) != len(declared):
        raise TypeError(f"model takes {len(declared)} inputs ({', '.join(n for n, _, _ in declared)}), "
                        f"got {len(arrays)}")
    feed, seen = {}, {}
    for (name, dtype, dims), a in zip(declared, arrays):
        if isinstance(a, (np.ndarray, np.generic)):
            arr = np.asarray(a)
            if arr.dtype != dtype:
                raise TypeError(f"input {name!r} must be {dtype}, got an array of {arr.dtype}")
        else:
            raw = np.asarray(a)
            try:
                arr = raw.astype(dtype) if raw.dtype.kind in "biuf" else None
            except (ValueError, OverflowError):
                arr = None
            if arr is None or not np.array_equal(arr, raw, equal_nan=raw.dtype.kind == "f"):
                raise TypeError(f"input {name!r} must be {dtype}; {a!r} does not convert exactly")
        if arr.ndim != len(dims):
            raise ValueError(f"input {name!r} must have rank {len(dims)}, got shape {arr.shape}")
        for axis, (d, size) in enumerate(zip(dims, arr.shape)):
            if isinstance(d, int) and d != size:
                raise ValueError(f"input {name!r} axis {axis} must have size {d}, got shape {arr.shape}")
            if isinstance(d, str):
                if d in seen and seen[d][0] != size:
                    other, axis0 = seen[d][1]
                    raise ValueError(f"input {name!r} axis {axis} (dim {d!r}) has size {size}, but input "
                                     f"{other!r} axis {axis0} has size {seen[d][0]}; they must be equal")
                seen.setdefault(d, (size, (name, axis)))
        feed[name] = arr
    check_equal_dims(feed, equal_dims)
    return feed


def check_equal_dims(feed: Mapping, equal_dims: Sequence, trusted: frozenset = frozenset()) -> None:
    """Check the arrays of ``feed`` (input name -> array) against every group
    of ``equal_dims`` (``equal_dim_groups``): one size per group, the one a
    ``(None, size)`` entry requires if any. Costs O(group members); used by
    ``check_run_inputs`` and by the ``ONNX`` PyTensor mode. A member named in
    ``trusted`` (a shared variable's input) is the one others are compared
    to, so the message blames the caller's array.

    Raises:
        ValueError: naming the input, the axis, its size and the size
            required (or the other input and axis it must equal).
    """
    for group in equal_dims:
        sizes = [(feed[n].shape[a], n, a) for n, a in group if n is not None and n in feed]
        if trusted:
            sizes.sort(key=lambda member: member[1] not in trusted)
        required = next((s for n, s in group if n is None), None)
        for size, n, a in sizes:
            if required is not None and size != required:
                lead = "Runtime broadcasting not allowed: " if size == 1 else ""  # PyTensor's own words
                raise ValueError(f"{lead}input {n!r} axis {a} has size {size}, but the graph fixes that dim to size "
                                 f"{required} (by a specify_shape, a constant, a baked shared variable or an alloc; "
                                 f"PyTensor refuses any other size at run time)")
        for size, n, a in sizes[1:]:
            if size != sizes[0][0]:
                s0, n0, a0 = sizes[0]
                lead = "Runtime broadcasting not allowed: " if 1 in (size, s0) else ""  # PyTensor's own words
                raise ValueError(f"{lead}input {n!r} axis {a} has size {size}, but input {n0!r} axis {a0} has "
                                 f"size {s0}: PyTensor requires them equal (no runtime broadcasting; square "
                                 f"matrices in linear algebra)")
