"""onnxruntime 1.32's ``NoopElimination`` (on in every default session)
removes a float64 ``Mul``/``Div`` by a scalar ``Constant`` of a function
body whose value rounds to 1 in float32, and an ``Add``/``Sub`` of one that
rounds to 0: Owen's T's coefficients 1 - 2e-11 were dropped that way (1.6e-12
off, found while writing ``owens_t_f64.py``, which stores them as a tensor).
Our sessions disable no such rule for a user's own session, so no
special-function body may hold such a constant: this scans every one."""

import numpy as np
import onnx
import pytensor.tensor as pt
from onnx import numpy_helper

from compiler import compile_to_onnx

NEUTRAL = {"Mul": 1.0, "Div": 1.0, "Add": 0.0, "Sub": 0.0}


def noop_looking_constants(model: onnx.ModelProto) -> tuple[list[str], int]:
    """``([function/node description], scalar constants seen)``: the scalar
    float64 Constants of the model-local functions (and their Loop/If
    bodies) that are not the neutral element of the Mul/Div/Add/Sub reading
    them but round to it in float32."""
    found, seen = [], 0

    def scan(nodes, where):
        nonlocal seen
        values = {}
        for node in nodes:
            if node.op_type == "Constant":
                tensor = next((a.t for a in node.attribute if a.name == "value"), None)
                if tensor is not None and tensor.data_type == onnx.TensorProto.DOUBLE and not tensor.dims:
                    values[node.output[0]] = float(numpy_helper.to_array(tensor))
                    seen += 1
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    scan(attr.g.node, f"{where}/{node.op_type}")
        for node in nodes:
            neutral = NEUTRAL.get(node.op_type)
            if neutral is None:
                continue
            for name in node.input[1:] if node.op_type in ("Div", "Sub") else node.input:
                v = values.get(name)
                if v is not None and v != neutral and float(np.float32(v)) == neutral:
                    found.append(f"{where}: {node.op_type} by {v!r}")

    for function in model.functions:
        scan(function.node, function.name)
    return found, seen


def every_special_function():
    x, y, z = pt.dvector("x"), pt.dvector("y"), pt.dvector("z")
    outs = [pt.gammaln(x), pt.gamma(x), pt.psi(x), pt.tri_gamma(x), pt.polygamma(3, x), pt.erfc(x), pt.erfcx(x),
            pt.erfinv(x), pt.erfcinv(x), pt.i0(x), pt.i1(x), pt.ive(0, x), pt.ive(1, x), pt.ive(2, x), pt.arctan2(x, y),
            pt.gammainc(x, y), pt.gammaincc(x, y), pt.betainc(x, y, z), pt.owens_t(x, y), pt.gammaincinv(x, y),
            pt.gammainccinv(x, y), pt.j0(x), pt.j1(x), pt.ive(x, y), pt.kve(x, y)]
    return compile_to_onnx([x, y, z], outputs=outs).model


def test_no_function_body_multiplies_by_a_constant_that_rounds_to_one_in_float32():
    found, seen = noop_looking_constants(every_special_function())
    assert seen > 100  # the scan reads the bodies' constants
    assert not found, found


def test_the_scan_finds_such_a_constant():
    x = pt.dvector("x")
    model = compile_to_onnx([x], outputs=[pt.gammaln(x)]).model
    function = model.functions[0]
    one_ish = onnx.helper.make_node("Constant", [], ["near_one"],
                                    value=numpy_helper.from_array(np.array(1 - 2e-11)))
    product = onnx.helper.make_node("Mul", [function.output[0], "near_one"], ["scaled"])
    function.node.extend([one_ish, product])
    found, _ = noop_looking_constants(model)
    assert found == [f"{function.name}: Mul by {1 - 2e-11!r}"]
