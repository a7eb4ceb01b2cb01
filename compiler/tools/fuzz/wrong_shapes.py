"""Wrong-shape inputs for every fuzzed graph: the model must refuse an input
shape exactly when PyTensor does.

After a program's model matched PyTensor on its own data, ``check_wrong_shapes``
changes one dim of one input (one more element along that axis, the data
repeated from the existing values so no new value is introduced; and the
dim set to 1 when it was larger, the runtime-broadcasting case) and runs the
graph as written (PyTensor's Python implementations, no rewrites) and the
raw-graph model (``CompiledModel.run``: the input check, then onnxruntime).

- PyTensor refuses with a shape error (``ValueError``, ``AssertionError``:
  "Runtime broadcasting not allowed", "shapes not aligned", a
  ``specify_shape``, a reshape of the wrong size) and the model returns a
  result: ``mismatch`` (the model computed something PyTensor refuses).
- PyTensor refuses and onnxruntime raises (the input check let the shape
  through): ``known``, ``wrong-shape-refused-by-onnxruntime``: refused, but
  with onnxruntime's kernel message instead of one naming the input. The
  dims the check cannot know are those fixed by a value computed at run
  time (a reshape to a size, an index), not an input's own dim.
- PyTensor refuses to broadcast at run time ("Runtime broadcasting not
  allowed") a dim that is 1 where the other operand's is not, the model
  broadcast it, and the changed input dim is in no equal-dims group of a
  fresh compile of the graph (``_in_no_checked_group``): ``known``,
  ``computed-dim-runtime-broadcast``. The dim PyTensor compared is computed
  inside the graph (a slice, a reshape of the changed input), so no input
  dim is fixed and ONNX has no assertion to refuse it at run time
  (``x0[-1:1] / x1`` with ``x0`` of length 1 and ``x1`` of length 0).
- PyTensor raises "zero-size array to reduction operation ... which has
  no identity" (``max`` inside ``softmax``, ``argmax`` of an empty axis: a
  dim the wrong input made 0) and the model returned an empty result:
  ``known``, ``empty-reduction``. ONNX's reductions over an empty axis give
  the reduction's identity (-inf for ReduceMax) and raise nothing.
- PyTensor runs it and the input check refuses, or onnxruntime fails, or the
  result's shape or dtype differs: ``mismatch``.
- PyTensor raises anything else (an ``IndexError`` of an index the smaller
  dim no longer holds: a value error, not a shape error): not judged.
"""

from __future__ import annotations

import numpy as np

from compiler import compile_to_onnx

SHAPE_ERRORS = (ValueError, AssertionError)
REFUSED_BY_ORT = "wrong-shape-refused-by-onnxruntime"
COMPUTED_DIM = "computed-dim-runtime-broadcast"
EMPTY_REDUCTION = "empty-reduction"


def wrong_shape_variants(program) -> list[tuple[str, list, tuple[str, int]]]:
    """``(description, data, (input name, axis))`` per wrong-shape variant of ``program``'s
    inputs: for one input of rank >= 1 chosen from the seed, one axis grown
    by one element (values repeated from that axis) and, when its size is
    above 1, the same axis cut to size 1. Empty when no input has an axis."""
    rng = np.random.default_rng([program.seed, 29])
    candidates = [i for i, (_, _, _, d) in enumerate(program.inputs) if d.ndim >= 1]
    if not candidates:
        return []
    i = candidates[int(rng.integers(len(candidates)))]
    name, _, _, data = program.inputs[i]
    axis = int(rng.integers(data.ndim))
    size = data.shape[axis]
    variants = []
    for new in ([size + 1, 1] if size > 1 else [size + 1]):
        picks = np.arange(new) % max(size, 1)
        wrong = np.take(data, picks, axis=axis) if size else np.zeros(
            data.shape[:axis] + (new,) + data.shape[axis + 1:], data.dtype)
        inputs = [d for *_, d in program.inputs]
        inputs[i] = wrong
        variants.append((f"input {name!r} axis {axis} of size {new} (not {size})", inputs, (name, axis)))
    return variants


def check_wrong_shapes(program, reference_fn, model, explain=None) -> tuple[str, str, str] | None:
    """``(kind, detail, explanation)`` of the worst wrong-shape variant on
    which ``model`` (a ``CompiledModel`` of the graph as written) and
    ``reference_fn`` (PyTensor's function of it) disagree about refusing (a
    ``mismatch`` before a ``known``), else None (see the module docstring
    for the classes). ``explain(data, changed, verdict)``, if given, may
    turn a variant's mismatch into a family's own ``known`` class."""
    known = None
    for what, data, changed in wrong_shape_variants(program):
        verdict = _judge(program, what, data, changed, reference_fn, model)
        if explain is not None and verdict is not None and verdict[0] == "mismatch":
            verdict = explain(data, changed, verdict)
        if verdict is not None and verdict[0] == "mismatch":
            return verdict
        known = known or verdict
    return known


def _judge(program, what: str, data: list, changed: tuple[str, int], reference_fn,
                      model) -> tuple[str, str, str] | None:
    """``(kind, detail, explanation)`` of one wrong-shape variant (``data``,
    described by ``what``, input and axis ``changed``), None when the model
    and PyTensor agree about it (``check_wrong_shapes``)."""
    try:
        want = reference_fn(*[d.copy() for d in data])
        pytensor_error = None
    except SHAPE_ERRORS as e:
        want, pytensor_error = None, e
    except Exception:  # noqa: BLE001 - a value error of the new data (an index out of range): not judged
        return None
    try:
        feed = model.check_inputs(data)
    except (TypeError, ValueError) as e:
        if pytensor_error is None:
            return "mismatch", f"{what}: the input check refused what PyTensor ran: {e}"[:300], ""
        return None  # both refused, ours naming the input
    try:
        got = model.session.run(model.output_names, feed)[0]
    except Exception as e:  # noqa: BLE001 - onnxruntime's own exception types
        if pytensor_error is None:
            return "mismatch", f"{what}: onnxruntime failed where PyTensor ran: {str(e)[:150]}", ""
        return ("known", f"{REFUSED_BY_ORT}: {what}: PyTensor: {type(pytensor_error).__name__}: "
                f"{str(pytensor_error)[:100]}", REFUSED_BY_ORT)
    if pytensor_error is not None:
        if "Runtime broadcasting not allowed" in str(pytensor_error) and _in_no_checked_group(program, changed):
            return ("known", f"{COMPUTED_DIM}: {what}: PyTensor: {str(pytensor_error)[:100]}", COMPUTED_DIM)
        if "zero-size array to reduction operation" in str(pytensor_error) and np.size(got) == 0:
            return ("known", f"{EMPTY_REDUCTION}: {what}: PyTensor: {str(pytensor_error)[:100]}", EMPTY_REDUCTION)
        return ("mismatch", f"{what}: the model returned shape {np.shape(got)} where PyTensor raised "
                f"{type(pytensor_error).__name__}: {str(pytensor_error)[:150]}", "")
    want = np.asarray(want)
    if np.shape(got) != want.shape or np.asarray(got).dtype != want.dtype:
        return ("mismatch", f"{what}: the model gives {np.asarray(got).dtype}{list(np.shape(got))}, PyTensor "
                f"{want.dtype}{list(want.shape)}", "")
    return None



def _in_no_checked_group(program, changed: tuple[str, int]) -> bool:
    """Whether the changed ``(input, axis)`` is in no equal-dims group of the
    graph (``compiler.core.validation.equal_dim_groups``, from a fresh
    compile of the program, not the model under test): then the dim PyTensor
    refused to broadcast is computed inside the graph and no input check
    can see it."""
    ns: dict = {}
    exec(program.source(), ns)  # noqa: S102 - our own generated source
    groups = compile_to_onnx([ns[n] for n, *_ in program.inputs], outputs=[ns["out"]]).equal_dims
    return not any(changed in group for group in groups)
