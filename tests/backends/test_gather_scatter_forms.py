"""The fast ONNX forms of 1-D gathers and scatters: ``gather`` of a 1-D table
with a 1-D index is GatherElements, ``scatter_nd`` into 1-D data with one
index per update is ScatterElements; same values as NumPy (negative
indices, repeated indices accumulating in order, every dtype tried)."""

from __future__ import annotations

import numpy as np
import pytest

from backends.onnx import emit_model, make_session
from ir.parser import parse_graph


def _run(text, *arrays):
    model = emit_model(parse_graph(text))
    ops = [n.op_type for n in model.graph.node]
    names = [i.name for i in model.graph.input]
    return make_session(model).run(None, dict(zip(names, arrays)))[0], ops


@pytest.mark.parametrize("dtype", ["f64", "f32", "i64", "i32", "u8", "bool"])
def test_gather_of_a_1d_table_is_gather_elements(dtype):
    table = np.array([3, 0, 7, 1, 9]).astype({"f64": np.float64, "f32": np.float32, "i64": np.int64,
                                               "i32": np.int32, "u8": np.uint8, "bool": np.bool_}[dtype])
    idx = np.array([0, -1, 2, 2, -5, 4, 1], dtype=np.int64)
    got, ops = _run(f"""
        graph @main(%t: {dtype}[5], %i: i64[7]) {{
          %g: {dtype}[7] = gather(%t, %i) {{axis=0}}
          return %g
        }}""", table, idx)
    assert "GatherElements" in ops and "Gather" not in ops
    np.testing.assert_array_equal(got, np.take(table, idx))


def test_gather_with_a_2d_index_or_table_stays_gather():
    table = np.arange(6.0).reshape(3, 2)
    idx = np.array([[2, 0], [1, 1]], dtype=np.int64)
    got, ops = _run("""
        graph @main(%t: f64[3,2], %i: i64[2,2]) {
          %g: f64[2,2,2] = gather(%t, %i) {axis=0}
          return %g
        }""", table, idx)
    assert "Gather" in ops
    np.testing.assert_array_equal(got, np.take(table, idx, axis=0))


@pytest.mark.parametrize("reduction", ["add", "none"])
def test_scatter_into_1d_data_is_scatter_elements(reduction):
    data = np.array([1.0, 2.0, 3.0, 4.0])
    idx = np.array([[3], [0], [3], [-1], [1]], dtype=np.int64) if reduction == "add" else \
        np.array([[3], [0], [1]], dtype=np.int64)
    updates = np.array([0.5, 1e16, -1e16, 0.25, 7.0])[:len(idx)]
    got, ops = _run(f"""
        graph @main(%d: f64[4], %i: i64[{len(idx)},1], %u: f64[{len(idx)}]) {{
          %s: f64[4] = scatter_nd(%d, %i, %u) {{reduction="{reduction}"}}
          return %s
        }}""", data, idx, updates)
    assert "ScatterElements" in ops and "ScatterND" not in ops
    want = data.copy()
    if reduction == "add":
        np.add.at(want, idx[:, 0], updates)
    else:
        want[idx[:, 0]] = updates
    np.testing.assert_array_equal(got, want)
