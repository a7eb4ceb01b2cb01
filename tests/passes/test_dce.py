"""``dce``: dead nodes and constants go, everything that reaches an output
stays (graph inputs always stay: they are the model's signature)."""

from __future__ import annotations

from passes import get_pass
from passes.dce import DeadCodeElimination
from tests.passes.helpers import check_pass

DCE = DeadCodeElimination()


def test_dead_nodes_and_constants_are_removed():
    check_pass(DCE, """
        graph @main(%x: f32[3], %unused: f32[2]) {
          const %c: f32[] = 2.0
          const %dead: f32[] = 3.0
          %a: f32[3] = mul(%x, %c)
          %b: f32[3] = mul(%x, %dead)
          %d: f32[3] = neg(%b)
          return %a
        }""", """
        graph @main(%x: f32[3], %unused: f32[2]) {
          const %c: f32[] = 2.0
          %a: f32[3] = mul(%x, %c)
          return %a
        }""")


def test_multi_output_nodes_stay_while_one_output_is_used():
    check_pass(DCE, """
        graph @main(%x: f32[5]) {
          const %sizes: i64[2] = [2, 3]
          %a: f32[2], %b: f32[3] = split(%x, %sizes) {axis=0, num_outputs=2}
          %e: f32[3] = neg(%b)
          return %e
        }""", None)


def test_constants_returned_as_outputs_stay():
    check_pass(DCE, """
        graph @main(%x: f32[3]) {
          const %c: f32[3] = [1.0, 2.0, 3.0]
          return %c, %x
        }""", None, changed=False)


def test_registered_by_name():
    assert get_pass("dce") == DCE
