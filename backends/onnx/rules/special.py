"""Rules for the special functions (``ir/ops/special.py``): each is a call
of a model-local ONNX function in the ``pytensor_onnx`` domain, one function
per op and dtype (overload ``float64``/``float32``/``float16``), defined
once and shared by every call site (onnxruntime inlines it when it loads
the model; ``onnx.inliner.inline_local_functions`` does the same offline).

The function bodies are the float64 algorithms of ``special_f64.py``.
float32 and float16 inputs are cast to float64, computed there and rounded
once, so their results are the correctly rounded float64 value to within
the float64 bound (at most one ulp of the narrow type off the exact value).
"""

from __future__ import annotations

from backends.onnx.registry import emits
from backends.onnx.rules.common import F64
from backends.onnx.rules.bessel_f64 import FORMULAS as BESSEL
from backends.onnx.rules.bessel_ik_f64 import FORMULAS as BESSEL_IK
from backends.onnx.rules.bessel_jv_f64 import FORMULAS as BESSEL_JV
from backends.onnx.rules.hyp2f1_f64 import FORMULAS as HYP2F1
from backends.onnx.rules.incbeta_f64 import FORMULAS as INCBETA
from backends.onnx.rules.incbetainv_f64 import FORMULAS as INCBETAINV
from backends.onnx.rules.incgamma_f64 import FORMULAS as INCGAMMA
from backends.onnx.rules.incinv_f64 import FORMULAS as INCINV
from backends.onnx.rules.owens_t_f64 import FORMULAS as OWENS_T
from backends.onnx.rules.special_f64 import FORMULAS as CLOSED_FORMS

FORMULAS = (CLOSED_FORMS | INCGAMMA | INCBETA | INCINV | INCBETAINV | OWENS_T | BESSEL | BESSEL_IK | BESSEL_JV
            | HYP2F1)

# IR op -> model-local function name
FUNCTION_NAMES = {"gammaln": "GammaLn", "gamma": "Gamma", "psi": "Digamma", "trigamma": "Trigamma",
                  "erfc": "Erfc", "erfcx": "Erfcx", "erfinv": "ErfInv", "erfcinv": "ErfcInv", "i0": "BesselI0",
                  "i1": "BesselI1", "i0e": "BesselI0e", "i1e": "BesselI1e", "i2e": "BesselI2e", "atan2": "Atan2",
                  "gammainc": "GammaIncP", "gammaincc": "GammaIncQ", "betainc": "BetaInc",
                  "owens_t": "OwensT", "j0": "BesselJ0", "j1": "BesselJ1", "ive": "BesselIve", "iv": "BesselIv",
                  "kve": "BesselKve", "jv": "BesselJv", "gammaincinv": "GammaIncPInv",
                  "gammainccinv": "GammaIncQInv", "betaincinv": "BetaIncInv", "hyp2f1": "Hyp2F1"}


def float64_body(fn, dtype):
    """A function body computing the float64 formula ``fn(c, *params)`` for
    ``dtype`` inputs: float32/float16 are cast to float64 and the result
    rounded once (the module doc)."""
    def body(c, *params):
        if dtype == F64:
            return fn(c, *params)
        return c.cast(fn(c, *(c.cast(p, F64) for p in params)), dtype)
    return body


@emits(*FUNCTION_NAMES)
def special_function(ctx, node, *xs):
    """A call of the op's model-local function for the input dtype (see the module doc)."""
    dtype = node.inputs[0].dtype
    return ctx.call_function(FUNCTION_NAMES[node.op], str(dtype), list(xs), float64_body(FORMULAS[node.op], dtype))
