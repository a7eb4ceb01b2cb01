"""A wider sweep of scan forms (slow job: ``pytest -m slow``): each case
from a raw graph and compiled in the default and C modes, exported with and
without ``scan-unroll``; onnxruntime and the IR interpreter match the
compiled function."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.scan import scan
from pytensor.scan.utils import until

import passes.scan_unroll  # noqa: F401  (registers scan-unroll)
from tests.helpers import compile_debug
from tests.control_flow.helpers import C_MODE, check

pytestmark = pytest.mark.slow


def _scan(*args, **kwargs):
    return scan(*args, **kwargs, return_updates=False)


def _cases():
    """name -> (inputs, outputs, values)."""
    x, v0, k = pt.dmatrix("x"), pt.dvector("v0"), pt.lscalar("k")
    cases = {}
    xs = _scan(lambda a, b: a + b, outputs_info=[{"initial": v0, "taps": [-3, -1]}], n_steps=k)
    taps = [np.array([1.0, 2.0, 3.0]), np.int64(6)]
    cases["taps -3,-1, last only"] = ([v0, k], [xs[-1]], taps)  # a circular buffer of the last rows
    cases["taps -3,-1"] = ([v0, k], [xs], taps)
    ys, hs = _scan(lambda x_t, h: (x_t * 2, h + x_t), sequences=[x], outputs_info=[None, pt.zeros(2)])
    cases["nit-sot, last two"] = ([x], [ys[-2:], hs[-1]], [np.arange(10.0).reshape(5, 2)])
    longer = _scan(lambda x_t, h: h * x_t, sequences=[x], outputs_info=[pt.ones(2)], n_steps=k)
    cases["n_steps below the sequence length"] = ([x, k], [longer], [np.arange(1, 11.0).reshape(5, 2), np.int64(3)])
    iv = pt.lvector("iv")
    ints = _scan(lambda a, s: s * 3 + a, sequences=[iv], outputs_info=[pt.as_tensor(np.int64(1))])
    cases["int64 state"] = ([iv], [ints], [np.array([1, 2, 3], np.int64)])

    def outer(x_t, acc):
        inner = _scan(lambda e, a: a + e, sequences=[x_t], outputs_info=[acc[0]])
        return acc + inner[-1]

    cases["scan in a scan"] = ([x], [_scan(outer, sequences=[x], outputs_info=[pt.zeros(2)])],
                               [np.arange(8.0).reshape(4, 2)])

    def grow(v):
        nv = v * 1.5
        return [nv, nv.sum()], until(nv.sum() > 20)

    cases["while with a nit-sot"] = ([v0], _scan(grow, outputs_info=[v0, None], n_steps=30), [np.array([1.0, 2.0])])
    negative = _scan(lambda a, b, c: a + 2 * b - c, sequences=[{"input": x, "taps": [-2, 0, 1]}])
    cases["sequence taps -2,0,1"] = ([x], [negative], [np.arange(12.0).reshape(6, 2)])
    xf, Wf = pt.ftensor3("xf"), pt.fmatrix("Wf")
    rnn = _scan(lambda x_t, h: pt.tanh(x_t @ Wf + h @ Wf.T[:, :3] @ Wf), sequences=[xf], outputs_info=[pt.zeros((2, 4), "float32")])
    rng = np.random.default_rng(0)
    cases["float32 RNN"] = ([xf, Wf], [rnn, rnn[-1]], [rng.normal(size=(5, 2, 3)).astype("float32"),
                                                       rng.normal(size=(3, 4)).astype("float32")])
    return cases


CASES = _cases()


@pytest.mark.parametrize("unroll", [False, True], ids=["loop", "unrolled"])
@pytest.mark.parametrize("mode", ["raw", "default", "c"])
@pytest.mark.parametrize("name", list(CASES))
def test_scan_form(name, mode, unroll):
    inputs, outputs, values = CASES[name]
    fn = pytensor.function(inputs, outputs, mode=C_MODE if mode == "c" else None)
    want = [np.asarray(r) for r in fn(*values)]
    passes = ["canonicalize", "constant-folding", "scan-unroll", "cse", "dce"] if unroll else None
    source = dict(graph=inputs, outputs=outputs) if mode == "raw" else dict(graph=fn)
    compiled = compile_debug(passes=passes, **source)
    check(compiled, values, want, f"{name} ({mode})", tolerance=1e-5 if name.startswith("float32") else 1e-12)
