"""Op traits are facts about the ops' reference semantics: checked here on
each op's NumPy ``evaluate`` over special values, so a wrong trait fails."""

from __future__ import annotations

import numpy as np
import pytest

from ir import TensorType
from ir.errors import OpError
from ir.opdef import (BROADCASTING, ELEMENTWISE, NO_NEG_INF, RANDOM, ROW_MAJOR_VIEW, TOTAL, TOTAL_ON_FLOATS, TRAITS, OpDef,
                      all_ops,
                      ops_with)
from ir.types import DType

SPECIAL = np.array([-np.inf, -1e308, -3.5, -1.0, -0.5, -0.0, 0.0, 1e-310, 0.5, 1.0, 2.0, 3.5, 1e308, np.inf, np.nan])
INTS = np.array([-7, -2, -1, 0, 1, 2, 9])
UINTS = np.array([2 ** 64 - 1, 2 ** 63, 0, 1, 2, 63, 64], dtype=np.uint64)  # shift counts at and past the width
# values of the required attributes of the elementwise ops
REQUIRED_ATTRS = {"cast": {"to": DType.FLOAT64}, "polygamma": {"n": 3}}


def _args(op: OpDef, arity: int):
    """Inputs of ``op``'s first accepted dtype among float64, int64, bool and uint64 (``shift_right``),
    one per input (``where``: a bool condition first), as 1-D arrays of equal length; None if none fits."""
    for dtype, base in ((DType.FLOAT64, SPECIAL), (DType.INT64, INTS), (DType.BOOL, INTS % 2 == 0),
                        (DType.UINT64, UINTS)):
        values = [np.roll(base, k).astype(dtype.numpy) for k in range(arity)]
        if op.name == "where":
            values[0] = values[0] > 0 if dtype == DType.FLOAT64 else values[0].astype(bool)
        types = [TensorType.of_array(v) for v in values]
        try:
            attrs = op.normalize_attrs(REQUIRED_ATTRS.get(op.name, {}))
            op.infer_types(types, attrs, [None] * arity)
        except OpError:
            continue
        return values, attrs
    return None


def _evaluate(op: OpDef, values, attrs):
    with np.errstate(all="ignore"):
        return op.evaluate(values, attrs)[0]


def _cases(trait):
    return sorted(ops_with(trait))


def test_every_trait_is_used_and_known():
    assert all(ops_with(t) for t in TRAITS)
    with pytest.raises(ValueError, match="unknown trait"):
        ops_with("pure")
    with pytest.raises(ValueError, match="unknown trait"):
        OpDef("bad", None, None, 1, traits={"pure"})


@pytest.mark.parametrize("name", _cases(ELEMENTWISE))
def test_elementwise_ops_compute_each_element_alone(name):
    op = all_ops()[name]
    arity = op.num_inputs
    got = _args(op, arity)
    assert got is not None, f"{name}: no dtype among float64/int64/bool fits"
    values, attrs = got
    whole = _evaluate(op, values, attrs)
    assert whole.shape == values[0].shape
    for i in range(len(values[0])):
        one = _evaluate(op, [v[i:i + 1] for v in values], attrs)
        np.testing.assert_array_equal(one, whole[i:i + 1], err_msg=f"{name} at element {i}")


@pytest.mark.parametrize("name", _cases(BROADCASTING))
def test_broadcasting_ops_broadcast_like_numpy(name):
    op = all_ops()[name]
    values, attrs = _args(op, op.num_inputs)
    column = [v.reshape(-1, 1) if k == len(values) - 1 else v for k, v in enumerate(values)]
    out = op.infer_types([TensorType.of_array(v) for v in column], attrs)[0]
    assert out.shape == np.broadcast_shapes(*(v.shape for v in column))


@pytest.mark.parametrize("name", _cases(TOTAL) + _cases(TOTAL_ON_FLOATS))
def test_total_ops_give_a_value_for_special_inputs(name):
    op = all_ops()[name]
    if not op.has(ELEMENTWISE):  # reductions and axis shuffles: a float64 tensor of special values
        x = SPECIAL.reshape(3, 5)
        attrs = op.normalize_attrs({"perm": (1, 0)} if "perm" in op.attrs else
                                   {"axes": (0,)} if op.name == "unsqueeze" else {})
        if op.name in ("reduce_all", "reduce_any"):
            x = x > 0
        assert _evaluate(op, [x], attrs) is not None
        return
    values, attrs = _args(op, op.num_inputs)
    if op.has(TOTAL_ON_FLOATS):
        assert values[0].dtype.kind == "f" or op.has(TOTAL), f"{name}: first accepted dtype must be float"
    assert _evaluate(op, values, attrs).shape == values[0].shape


@pytest.mark.parametrize("name", ["floor_div", "mod"])
def test_integer_division_is_not_total(name):
    """NumPy flags an integer division by zero (ONNX's integer Div/Mod trap on it)."""
    op = all_ops()[name]
    assert not op.has(TOTAL) and op.has(TOTAL_ON_FLOATS)
    with pytest.raises(FloatingPointError), np.errstate(all="raise"):
        op.evaluate([np.array([1], np.int64), np.array([0], np.int64)], {})


@pytest.mark.parametrize("name", _cases(NO_NEG_INF))
def test_no_neg_inf_ops_never_give_minus_inf(name):
    op = all_ops()[name]
    values, attrs = _args(op, op.num_inputs)
    assert values[0].dtype.kind == "f"
    assert not np.isneginf(_evaluate(op, values, attrs)).any()


@pytest.mark.parametrize("name", _cases(ROW_MAJOR_VIEW))
def test_row_major_views_keep_the_element_order(name):
    op = all_ops()[name]
    x = np.arange(24.0).reshape(2, 3, 4)
    attrs = {"reshape": {}, "flatten": {"axis": 1}, "squeeze": {"axes": (0,)}, "unsqueeze": {"axes": (1,)}}[name]
    args = [x[:1] if name == "squeeze" else x] + ([np.array([4, 6])] if name == "reshape" else [])
    out = op.evaluate(args, op.normalize_attrs(attrs))[0]
    np.testing.assert_array_equal(out.reshape(-1), args[0].reshape(-1))


@pytest.mark.parametrize("name", _cases(RANDOM))
def test_random_ops_draw_from_their_seed(name):
    """A random op's reference repeats its draws for one seed and changes them with the seed."""
    op = all_ops()[name]
    shape = np.array([3, 4], np.int64)
    draw = [op.evaluate([shape], op.normalize_attrs({"dtype": DType.FLOAT64, "seed": s}))[0] for s in (1, 1, 2)]
    assert draw[0].shape == (3, 4) and np.array_equal(draw[0], draw[1]) and not np.array_equal(draw[0], draw[2])
