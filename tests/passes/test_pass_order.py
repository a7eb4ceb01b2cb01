"""Pass contracts: ``Pass.after`` and ``check_order`` (passes/base.py)."""

from dataclasses import dataclass

import pytensor.tensor as pt
import pytest

from compiler import CompileError, compile_to_onnx
from ir.errors import PassOrderError
from passes import DEFAULT_PIPELINE, Pass, get_pass, registered_passes, resolve_passes
from passes.base import check_order


def test_the_default_pipeline_keeps_every_contract():
    check_order(resolve_passes(DEFAULT_PIPELINE))


def test_every_contract_names_registered_passes():
    known = registered_passes()
    assert all(name in known for cls in known.values() for name in cls.after)
    assert any(cls.after for cls in known.values())


@pytest.mark.parametrize("order, early, late", [
    (["filter-flip", "conv-recovery"], "filter-flip", "conv-recovery"),
    (["gemm-fusion", "dce", "flatten-recovery"], "gemm-fusion", "flatten-recovery"),
    (["scan-unroll", "cumulative-scan"], "scan-unroll", "cumulative-scan"),
])
def test_a_pass_before_one_it_must_follow_is_rejected(order, early, late):
    with pytest.raises(PassOrderError, match=f"{early!r} .* must run after {late!r}") as info:
        check_order(resolve_passes(order))
    assert (info.value.pass_name, info.value.must_follow) == (early, late)


@pytest.mark.parametrize("order", [["filter-flip"], ["conv-recovery", "filter-flip"],
                                   ["shape-inference", "shape-folding", "shape-inference", "shape-folding"],
                                   ["flatten-recovery", "gemm-fusion", "flatten-recovery"]])
def test_lists_that_keep_the_contracts_are_accepted(order):
    check_order(resolve_passes(order))  # a pass alone, or after its prerequisite (again later is fine)


def test_compile_reports_a_bad_order_before_running_any_pass():
    x = pt.matrix("x")
    with pytest.raises(CompileError, match="must run after 'if-sinking'"):
        compile_to_onnx([x], outputs=[x + 1], passes=["if-to-where", "if-sinking"])


def test_a_contract_naming_no_pass_is_an_error():
    @dataclass(frozen=True)
    class Typo(Pass):
        name = "typo-pass"
        after = ("cononicalize",)

        def run(self, graph):
            return False

    with pytest.raises(ValueError, match="no pass is named 'cononicalize'"):
        check_order([get_pass("dce"), Typo()])
