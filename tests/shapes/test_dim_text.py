"""Expression dims in IR types: printed inside types, read back by the
parser (print -> parse -> print identical), never static."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from ir import DType, TensorType
from ir import symbolic as sym
from ir.parser import IRParseError, parse_graph, parse_type
from ir.printer import print_graph

ZEROS = base64.b64encode(np.zeros((2, 3, 3, 3), np.float32).tobytes()).decode()
TEXT = f"""\
graph @main(%x: f32[N,3,H,W]) {{
  const %k: f32[2,3,3,3] = base64"{ZEROS}"
  %c: f32[N,2,(H+1)//2-1,(W+1)//2-1] = conv(%x, %k) {{dilations=[], flip=false, group=1, pads=[], strides=[2, 2]}}
  %f: f32[N,2*((H+1)//2)*((W+1)//2)-2*((H+1)//2)-2*((W+1)//2)+2] = flatten(%c) {{axis=1}}
  return %f
}}
"""


def test_expression_dims_round_trip_through_the_text_form():
    graph = parse_graph(TEXT)
    assert print_graph(graph) == TEXT
    (conv, flatten) = graph.nodes
    assert conv.output.shape[2] == sym.parse_dim("(H-3)//2+1")
    assert flatten.output.shape[1] == sym.mul(2, sym.mul(conv.output.shape[2], conv.output.shape[3]))


def test_parse_type_reads_every_kind_of_dim():
    t = parse_type("f32[N,(H+1)//2-1,max(N-1,0),?,3,abs(H-3)+1]")
    assert t.shape[0] == "N" and t.shape[3] is None and t.shape[4] == 3
    assert str(t) == "f32[N,(H+1)//2-1,max(N-1,0),?,3,abs(H-3)+1]"
    assert not t.is_static and t.size is None


def test_expression_dims_are_not_static_and_types_compare_by_value():
    h = sym.sub("H", 2)
    assert TensorType(DType.INT64, (h,)) == TensorType(DType.INT64, (sym.add("H", -2),))
    assert not TensorType(DType.INT64, (h, 3)).is_static
    assert TensorType(DType.INT64, (sym.sub(sym.add("H", 2), "H"),)).is_static  # H+2-H is the int 2


@pytest.mark.parametrize("text, message", [
    ("f32[3-5]", "expected a dim"),
    ("f32[-1]", "expected a dim"),
    ("f32[H-]", "expected a dim"),
    ("f32[H//W]", "expected a dim"),
    ("f32[2.5]", "expected a dim"),
])
def test_bad_dims_are_parse_errors(text, message):
    with pytest.raises(IRParseError, match=message):
        parse_type(text)
