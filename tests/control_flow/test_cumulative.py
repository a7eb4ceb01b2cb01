"""``cumulative-scan``: accumulating loops become ``cumsum``/``cumprod``
(IR text before and after, interpreter bit for bit), and the cumulative-sum
scan exports as an ONNX CumSum matching PyTensor at any length."""

from __future__ import annotations

import pytest

import passes.cumulative_scan  # noqa: F401  (registers cumulative-scan)
from tests.helpers import compile_debug
from passes.cumulative_scan import CumulativeScan
from tests.control_flow.helpers import check, onnx_ops
from tests.passes.helpers import check_pass

ACCUMULATE = """
    graph @main(%s0: f32[3], %xs: f32[T,3]) {
      const %n: i64[] = 3
      %s: f32[3], %ys: f32[3,3] = loop(%n, %s0, %xs) {has_condition=false, num_carried=1} (body: graph @scan0(%scan0.i: i64[], %scan0.s: f32[3], %scan0.xs: f32[T,3]) {
        %x: f32[3] = gather(%scan0.xs, %scan0.i) {axis=0}
        %s1: f32[3] = STEP
        return %s1, %s1
      })
      return %s, %ys
    }"""


@pytest.mark.parametrize("step, op", [("add(%scan0.s, %x)", "cumsum"), ("mul(%x, %scan0.s)", "cumprod")])
def test_an_accumulating_loop_becomes_a_cumulative_op(step, op):
    check_pass(CumulativeScan(), ACCUMULATE.replace("STEP", step), f"""
        graph @main(%s0: f32[3], %xs: f32[T,3]) {{
          const %n: i64[] = 3
          const %zero: i64[] = 0
          const %const: i64[1] = [0]
          const %const_1: i64[1] = [1]
          const %const_2: i64[1] = [1]
          const %const_3: i64[1] = [9223372036854775807]
          const %const_4: i64[1] = [1]
          %0: i64[] = maximum(%n, %zero)
          %1: i64[1] = unsqueeze(%0) {{axes=[0]}}
          %2: f32[?,3] = slice(%xs, %const, %1, %const_1) {{axes=[0]}}
          %3: f32[1,3] = unsqueeze(%s0) {{axes=[0]}}
          %4: f32[?,3] = concat(%3, %2) {{axis=0}}
          %5: f32[?,3] = {op}(%4) {{axis=0}}
          %6: f32[3] = gather(%5, %0) {{axis=0}}
          %7: f32[?,3] = slice(%5, %const_2, %const_3, %const_4) {{axes=[0]}}
          return %6, %7
        }}""", sizes={"T": 4})


@pytest.mark.parametrize("step", [
    "sub(%scan0.s, %x)",  # not an accumulation
    "add(%scan0.s, %scan0.s)",  # does not read the row
])
def test_other_loops_are_left_alone(step):
    check_pass(CumulativeScan(), ACCUMULATE.replace("STEP", step), None, sizes={"T": 4})


def test_a_broadcasting_accumulation_is_left_alone():
    text = ACCUMULATE.replace("STEP", "add(%scan0.s, %x)").replace("%xs: f32[T,3]", "%xs: f32[T,1]") \
        .replace("%scan0.xs: f32[T,3]", "%scan0.xs: f32[T,1]").replace("%x: f32[3]", "%x: f32[1]")
    check_pass(CumulativeScan(), text, None, sizes={"T": 4})


def test_the_cumsum_scan_exports_as_cumsum(default):
    m = default.model("cumsum")
    compiled = compile_debug(m.inputs, outputs=m.outputs, passes=["cumulative-scan", "canonicalize",
                                                                     "constant-folding", "cse", "dce"])
    ops = onnx_ops(compiled.model)
    assert "CumSum" in ops and "Loop" not in ops and "Scan" not in ops
    for T in (1, 5, 200):
        check(compiled, m.values(T), default.reference("cumsum", T), f"cumsum at T={T}")
