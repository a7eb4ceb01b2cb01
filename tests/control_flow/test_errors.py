"""What cannot be exported from a scan is reported by feature and source
line; a state read from a shared variable is computed exactly and its
dropped write-back is reported with a warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.scan import scan

from compiler import compile_to_onnx
from compiler.lowering.errors import UnsupportedOpsError
from compiler.lowering.rules.scan import SharedStateWarning
from tests.helpers import assert_same


def _line(marker: str) -> str:
    """``file:line`` of the source line of this module containing ``marker``."""
    with open(__file__) as f:
        number = next(i for i, text in enumerate(f, 1) if marker in text and "_line(" not in text)
    return f"{__file__}:{number}"


def test_an_unsupported_op_in_a_scan_body_names_it_and_its_line():
    x = pt.dmatrix("x")
    ys = scan(lambda x_t: pt.extra_ops.searchsorted(x_t, x_t), sequences=[x], return_updates=False)  # no rule
    with pytest.raises(UnsupportedOpsError) as info:
        compile_to_onnx([x], outputs=[ys])
    message = str(info.value)
    assert "scan body of Scan" in message and "SearchsortedOp" in message and "no lowering rule" in message
    assert _line("searchsorted(x_t, x_t)") in message


def test_random_draws_in_a_scan_without_a_random_policy_name_the_option_and_the_line():
    x = pt.dvector("x")
    with warnings.catch_warnings():  # PyTensor 3 deprecates RandomStream and returning updates
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        srng = pt.random.RandomStream(1)
        ys, _ = scan(lambda x_t: x_t + srng.normal(), sequences=[x], return_updates=True)  # draws
    with pytest.raises(UnsupportedOpsError) as info:
        compile_to_onnx([x], outputs=[ys])
    message = str(info.value)
    assert "scan body of Scan" in message and "random='inputs'" in message  # needs a random policy
    assert _line("srng.normal(), sequences") in message


@pytest.mark.parametrize("form", ["raw", "compiled with updates"])
def test_a_shared_state_is_computed_and_its_update_reported(form):
    """``c`` grows by one per step inside the scan (an update returned by
    ``scan``): the outputs use its values exactly; the write-back of the
    final ``c`` is not exported, and a warning says so."""
    c = pytensor.shared(np.float64(0.5), name="c")
    x = pt.dmatrix("x")
    with warnings.catch_warnings():  # PyTensor 3 deprecates returning updates
        warnings.simplefilter("ignore", DeprecationWarning)
        ys, updates = scan(lambda x_t: (x_t * c, {c: c + 1.0}), sequences=[x], return_updates=True)  # the scan
    fn = pytensor.function([x], ys, updates=updates)
    values = np.arange(6.0).reshape(3, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = compile_to_onnx(fn) if form != "raw" else compile_to_onnx([x], outputs=[ys])
    reports = [str(w.message) for w in caught if issubclass(w.category, SharedStateWarning)]
    assert len(reports) == 1 and "shared variable 'c'" in reports[0] and "not exported" in reports[0]
    if form == "raw":
        assert _line("# the scan") in reports[0]
    want = fn(values)  # first call: c starts at 0.5
    assert_same(compiled.run(values)[0], want, rtol=1e-12, atol=1e-12, what="onnxruntime")
    assert c.get_value() == 3.5  # PyTensor's own update ran; the model keeps no state
    assert_same(compiled.run(values)[0], want, rtol=1e-12, atol=1e-12, what="onnxruntime, second run")
