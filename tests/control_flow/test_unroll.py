"""``scan-unroll``: IR text before and after, with the interpreter giving
identical numbers (``check_pass``), and the cases it must leave alone."""

from __future__ import annotations

from passes.scan_unroll import ScanUnroll
from tests.passes.helpers import check_pass

LOOP = """
    graph @main(%s0: f32[3], %xs: f32[2,3]) {
      const %n: i64[] = @TRIPS@
      %s: f32[3], %ys: f32[@STEPS@,3] = loop(%n, %s0, %xs) {has_condition=@COND@, num_carried=1} (body: graph @scan0(%scan0.i: i64[], %scan0.s: f32[3], %scan0.xs: f32[2,3]) {
        const %scan0.half: f32[] = 0.5
        %x: f32[3] = gather(%scan0.xs, %scan0.i) {axis=0}
        %h: f32[3] = mul(%x, %scan0.half)
        %s1: f32[3] = add(%scan0.s, %h)
        @RETURN@
      })
      return %s, %ys
    }"""


def _loop(n: int = 2, cond: bool = False) -> str:
    """The loop above with trip count ``n``, a while condition when ``cond``."""
    ret = "%go: bool[] = gt(%scan0.half, %scan0.half)\n        return %go, %s1, %s1" if cond else "return %s1, %s1"
    return (LOOP.replace("@STEPS@", "?" if cond else str(n)).replace("@TRIPS@", str(n))
            .replace("@COND@", str(cond).lower()).replace("@RETURN@", ret))


def test_a_constant_trip_count_unrolls_into_straight_line_code():
    """Body constants are made once; iteration numbers become constants;
    the stacked output is a concat of the per-step values."""
    check_pass(ScanUnroll(), _loop(2), """
        graph @main(%s0: f32[3], %xs: f32[2,3]) {
          const %n: i64[] = 2
          const %i: i64[] = 0
          const %half: f32[] = 0.5
          const %i_1: i64[] = 1
          %x: f32[3] = gather(%xs, %i) {axis=0}
          %h: f32[3] = mul(%x, %half)
          %s1: f32[3] = add(%s0, %h)
          %x_1: f32[3] = gather(%xs, %i_1) {axis=0}
          %h_1: f32[3] = mul(%x_1, %half)
          %s1_1: f32[3] = add(%s1, %h_1)
          %0: f32[1,3] = unsqueeze(%s1) {axes=[0]}
          %1: f32[1,3] = unsqueeze(%s1_1) {axes=[0]}
          %2: f32[2,3] = concat(%0, %1) {axis=0}
          return %s1_1, %2
        }""")


def test_one_iteration_needs_no_concat():
    check_pass(ScanUnroll(), _loop(1), """
        graph @main(%s0: f32[3], %xs: f32[2,3]) {
          const %n: i64[] = 1
          const %i: i64[] = 0
          const %half: f32[] = 0.5
          %x: f32[3] = gather(%xs, %i) {axis=0}
          %h: f32[3] = mul(%x, %half)
          %s1: f32[3] = add(%s0, %h)
          %0: f32[1,3] = unsqueeze(%s1) {axes=[0]}
          return %s1, %0
        }""")


def test_over_the_threshold_zero_trips_and_while_loops_stay_loops():
    check_pass(ScanUnroll(max_trip_count=1), _loop(2), None)
    check_pass(ScanUnroll(), _loop(0), None)
    check_pass(ScanUnroll(), _loop(2, cond=True), None)


def test_a_symbolic_trip_count_stays_a_loop():
    check_pass(ScanUnroll(), """
        graph @main(%n: i64[], %s0: f32[3]) {
          %s: f32[3] = loop(%n, %s0) {has_condition=false, num_carried=1} (body: graph @scan0(%scan0.i: i64[], %scan0.s: f32[3]) {
            %d: f32[3] = add(%scan0.s, %scan0.s)
            return %d
          })
          return %s
        }""", None)


def test_nested_loops_unroll_inside_out_and_inside_kept_loops():
    """A constant-count loop in the body of an unrolled loop is unrolled
    once its copies land in the graph; one in the body of a loop that stays
    is unrolled in place, its constants named with that body's prefix."""
    inner = """loop(%{p}.two, %{p}.a) {{has_condition=false, num_carried=1}} (body: graph @{p}.scan0(%{p}.scan0.j: i64[], %{p}.scan0.b: f32[3]) {{
            %c: f32[3] = add(%{p}.scan0.b, %{p}.scan0.b)
            return %c
          }})"""
    before = f"""
        graph @main(%n: i64[], %s0: f32[3]) {{
          const %one: i64[] = 1
          %s: f32[3] = loop(%one, %s0) {{has_condition=false, num_carried=1}} (body: graph @scan0(%scan0.i: i64[], %scan0.a: f32[3]) {{
            const %scan0.two: i64[] = 2
            %r: f32[3] = {inner.format(p="scan0")}
            return %r
          }})
          %t: f32[3] = loop(%n, %s) {{has_condition=false, num_carried=1}} (body: graph @scan1(%scan1.i: i64[], %scan1.a: f32[3]) {{
            const %scan1.two: i64[] = 2
            %q: f32[3] = {inner.format(p="scan1")}
            return %q
          }})
          return %t
        }}"""
    check_pass(ScanUnroll(), before, """
        graph @main(%n: i64[], %s0: f32[3]) {
          const %one: i64[] = 1
          const %i: i64[] = 0
          const %two: i64[] = 2
          const %i_1: i64[] = 0
          const %i_2: i64[] = 1
          %c: f32[3] = add(%s0, %s0)
          %c_1: f32[3] = add(%c, %c)
          %t: f32[3] = loop(%n, %c_1) {has_condition=false, num_carried=1} (body: graph @scan1(%scan1.i: i64[], %scan1.a: f32[3]) {
            const %scan1.two: i64[] = 2
            const %scan1.i_1: i64[] = 0
            const %scan1.i_2: i64[] = 1
            %c_2: f32[3] = add(%scan1.a, %scan1.a)
            %c_3: f32[3] = add(%c_2, %c_2)
            return %c_3
          })
          return %t
        }""")


def test_new_constants_avoid_the_names_of_nested_graphs():
    """A name in a nested graph may not repeat an enclosing one: the
    iteration constant avoids the kept loop's body input ``%i``, and the
    body constant its constant ``%half``."""
    check_pass(ScanUnroll(), """
        graph @main(%n: i64[], %s0: f32[3]) {
          const %one: i64[] = 1
          %s: f32[3] = loop(%one, %s0) {has_condition=false, num_carried=1} (body: graph @a(%a.i: i64[], %a.s: f32[3]) {
            const %a.half: f32[] = 0.5
            %d: f32[3] = mul(%a.s, %a.half)
            return %d
          })
          %t: f32[3] = loop(%n, %s) {has_condition=false, num_carried=1} (body: graph @b(%i: i64[], %b.s: f32[3]) {
            const %half: f32[] = 0.5
            %e: f32[3] = add(%b.s, %half)
            return %e
          })
          return %t
        }""", """
        graph @main(%n: i64[], %s0: f32[3]) {
          const %one: i64[] = 1
          const %i_1: i64[] = 0
          const %half_1: f32[] = 0.5
          %d: f32[3] = mul(%s0, %half_1)
          %t: f32[3] = loop(%n, %d) {has_condition=false, num_carried=1} (body: graph @b(%i: i64[], %b.s: f32[3]) {
            const %half: f32[] = 0.5
            %e: f32[3] = add(%b.s, %half)
            return %e
          })
          return %t
        }""")
