"""The type-rule memo of ``OpDef.infer_types`` (``ir/opdef.py``): a rule
that decided without reading a constant input is answered from the memo for
the same op, attributes and input types; a rule that read one (``reshape``'s
target shape) is run every time; attribute keys keep ``-0.0`` apart from
``0.0`` and ``True`` apart from ``1``; a caller's watched constants still
see every read. Also ``normalize_attrs``'s defaults and ``TensorType``'s
cached hash."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from ir import DType, Graph, TensorType, get_op
from ir import opdef as registry
from ir.opdef import _INFERRED, MAX_MEMO, OpDef, OpError, _memo_key

F32 = DType.FLOAT32


def t(*shape) -> TensorType:
    return TensorType(F32, shape)


def test_a_rule_that_reads_no_constant_is_memoized_and_gives_the_same_types():
    add = get_op("add")
    _INFERRED.clear()
    first = add.infer_types([t("N", 3), t(3)], {}, [None, np.ones(3, np.float32)])
    assert len(_INFERRED) == 1
    again = add.infer_types([t("N", 3), t(3)], {}, [None, None])
    assert first == again == [t("N", 3)]
    assert len(_INFERRED) == 1
    assert add.infer_types([t(2, 1), t(4)], {}, None) == [t(2, 4)]  # other types: another entry
    assert len(_INFERRED) == 2


def test_a_rule_that_reads_a_constant_is_not_memoized():
    reshape = get_op("reshape")
    _INFERRED.clear()
    x = t(4, 6)
    s = TensorType(DType.INT64, (2,))
    assert reshape.infer_types([x, s], {}, [None, np.array([2, 12])]) == [t(2, 12)]
    assert reshape.infer_types([x, s], {}, [None, np.array([3, 8])]) == [t(3, 8)]
    assert reshape.infer_types([x, s], {}, [None, None]) == [t(None, None)]
    assert not _INFERRED


def test_graph_nodes_built_from_the_memo_have_the_rule_s_types():
    g = Graph()
    x = g.add_input(t("N", 3), "x")
    w = g.add_constant(np.ones((3, 3), np.float32), "w")
    shapes = [g.add_constant(np.array(s), "shape") for s in ([3, -1], [-1, 1])]
    for _ in range(2):
        y = g.add("matmul", [x, w])
        assert y.type == t("N", 3)
        assert [str(g.add("reshape", [y, s]).type) for s in shapes] == ["f32[3,N]", "f32[3*N,1]"]


def test_memo_keys_tell_float_signs_and_bools_from_ints_apart():
    assert _memo_key("leaky_relu", [t(3)], {"alpha": 0.0}) != _memo_key("leaky_relu", [t(3)], {"alpha": -0.0})
    assert _memo_key("x", [t(3)], {"keepdims": True}) != _memo_key("x", [t(3)], {"keepdims": 1})
    assert _memo_key("x", [t(3)], {"axes": (1, 2)}) != _memo_key("x", [t(3)], {"axes": (True, 2)})
    assert _memo_key("x", [t(3)], {"values": (0.5, 1.0)}) is None  # float tuples are not keyed


def test_a_watched_caller_sees_the_reads_of_a_rule_not_memoized():
    class Watched(list):
        read = False

        def __getitem__(self, i):
            Watched.read = True
            return list.__getitem__(self, i)

    consts = Watched([None, np.array([2, 12])])
    get_op("reshape").infer_types([t(4, 6), TensorType(DType.INT64, (2,))], {}, consts)
    assert Watched.read


def test_the_memo_starts_over_when_full(monkeypatch):
    monkeypatch.setattr("ir.opdef.MAX_MEMO", 2)
    _INFERRED.clear()
    neg = get_op("neg")
    for n in range(1, 6):
        assert neg.infer_types([t(n)], {}) == [t(n)]
        assert len(_INFERRED) <= 2
    assert MAX_MEMO > 2


def test_normalize_attrs_fills_defaults_and_requires_required_ones():
    gemm = get_op("gemm")
    assert gemm.normalize_attrs({}) == {"alpha": 1.0, "beta": 1.0, "trans_a": False, "trans_b": False}
    filled = gemm.normalize_attrs({})
    filled["alpha"] = 2.0  # a copy: the next node's defaults are intact
    assert gemm.normalize_attrs({})["alpha"] == 1.0
    with pytest.raises(OpError, match="missing required attribute"):
        get_op("transpose").normalize_attrs({})
    assert get_op("neg").normalize_attrs({}) == {}


def test_tensor_type_hash_is_cached_and_consistent():
    a, b = t("N", 3), t("N", 3)
    assert hash(a) == hash(b) and a == b and {a: 1}[b] == 1
    assert hash(a) == hash(a)
    c = pickle.loads(pickle.dumps(a))
    assert c == a and hash(c) == hash(a)
    assert TensorType(DType.FLOAT64, ("N", 3)) != a


def test_an_op_registered_again_never_sees_another_rule_s_types(monkeypatch):
    def rule(shape):
        return lambda types, attrs, consts: [TensorType(F32, shape)]

    monkeypatch.setitem(registry._REGISTRY, "test_memo", OpDef("test_memo", rule((1,)), lambda a, at: a, 1))
    assert get_op("test_memo").infer_types([t(3)], {}) == [t(1)]
    monkeypatch.setitem(registry._REGISTRY, "test_memo", OpDef("test_memo", rule((2,)), lambda a, at: a, 1))
    assert get_op("test_memo").infer_types([t(3)], {}) == [t(2)]
