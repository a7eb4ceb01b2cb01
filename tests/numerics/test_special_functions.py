"""Accuracy of the special functions (``ir/ops/special.py``, emitted by
``backends/onnx/rules/special_f64.py``) in onnxruntime against mpmath at
40+ digits.

Each function is swept over its domain (log-spaced magnitudes of both
signs, a fine grid, points next to poles and zeros, subnormals, +-inf and
NaN) in one model per function and dtype. Asserted:

* the NaN, +inf and -inf positions equal the reference's exactly (mpmath;
  where mpmath has no finite value, the IR op's own reference, which is
  SciPy with the limits listed in ``ir/ops/special.py``);
* float64: ``|got - ref| <= REL * |ref| + ABS(x)`` with the bound of the
  function's docstring (``BOUNDS`` below; 1e-14 relative unless the
  function's conditioning forbids it);
* float32 (computed in float64, rounded once): within 1 float32 ulp of the
  reference plus the float64 bound.

The ``slow`` variant runs 4,000 random points per function.
"""

from __future__ import annotations

import functools

import mpmath as mp
import numpy as np
import pytest

from backends.onnx import emit_model, make_session
from ir import Graph, TensorType
from ir.interpreter import evaluate

mp.mp.dps = 40
RNG = np.random.default_rng(8)
TINY = np.finfo(np.float64).tiny
SUBNORMAL = 5e-324


def _mp_psi_abs_scale(x):
    """|psi(1-x)| + pi |cot(pi x)|: the size of the terms the reflection subtracts."""
    with np.errstate(all="ignore"):
        import scipy.special as sp
        return np.abs(sp.psi(1 - x)) + np.pi / np.abs(np.tan(np.pi * x))


# op -> (mpmath reference, relative bound, absolute bound as a function of x)
def _neg(x):
    return x < 0


BOUNDS = {
    "gammaln": (lambda v: mp.log(abs(mp.gamma(v))), 1e-14, lambda x: np.where(_neg(x), 2e-16 * (np.abs(x) + 1), 0)),
    "gamma": (mp.gamma, 1e-14, None),
    "psi": (mp.digamma, 1e-14, lambda x: np.where(_neg(x), 4e-16 * _mp_psi_abs_scale(x), 0)),
    "trigamma": (lambda v: mp.polygamma(1, v) if v > 0 else mp.pi ** 2 / mp.sin(mp.pi * v) ** 2 - mp.polygamma(1, 1 - v),
                 1e-14, None),  # mpmath's polygamma is slow far out on the negative axis
    "erfc": (mp.erfc, 1e-14, None),
    "erfcx": (lambda v: mp.exp(v * v) * mp.erfc(v), 1e-14, None),
    "erfinv": (lambda v: mp.sign(v) * _erfcinv(1 - abs(v)) if abs(v) > 0.5 else mp.erfinv(v), 1e-14, None),
    "erfcinv": (lambda v: _erfcinv(v), 1e-14, None),
    "i0": (lambda v: mp.besseli(0, v), 1e-14, None),
    "i1": (lambda v: mp.besseli(1, v), 1e-14, None),
    "i0e": (lambda v: mp.besseli(0, v) * mp.exp(-abs(v)), 1e-14, None),
    "i1e": (lambda v: mp.besseli(1, v) * mp.exp(-abs(v)), 1e-14, None),
    "i2e": (lambda v: mp.besseli(2, v) * mp.exp(-abs(v)), 1e-14, None),
}
# relative bound scaled by (|x| + 1) on the negative axis (reflection through 1 - x)
REL_GROWS_ON_NEGATIVES = {"gamma", "trigamma"}


def _erfcinv(z):
    """erfcinv(z) in mpmath: for z < 1/2 the root of log erfc(t) = log z (mpmath's
    erfinv(1 - z) would need 1 - z to ~330 digits); else erfinv(1 - z)."""
    if z >= 0.5 or z <= 0:
        return mp.erfinv(1 - z)
    guess = mp.sqrt(-mp.log(z)) if z < 0.1 else mp.mpf(1)
    return mp.findroot(lambda t: mp.log(mp.erfc(t)) - mp.log(z), guess)


def _logspace(lo, hi, n):
    return np.logspace(lo, hi, n)


def _near(points, offsets=(1e-15, 1e-10, 1e-6, 1e-3, 0.1)):
    points = np.asarray(points, dtype=np.float64)
    offs = np.array(offsets)
    return np.concatenate([points + o for o in offs] + [points - o for o in offs])


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, SUBNORMAL, -SUBNORMAL, TINY, -TINY])


def sweep(op: str) -> np.ndarray:
    """The float64 points each function is checked on (a few hundred)."""
    mags = _logspace(-300, 300, 61)
    grid = np.linspace(-12, 12, 97)
    if op in ("gammaln", "gamma", "psi", "trigamma"):
        pts = [mags, -mags[mags < 1e15], np.linspace(-40, 40, 161) + 0.013, _near([1.0, 2.0]),
               _near([-1.0, -2.0, -7.0, -30.0], (1e-12, 1e-6, 0.3)), [1.4616321449683622, -0.5040830082644554],
               np.arange(-5.0, 1.0), [171.6, 171.7, 1e16, -1e16, 4.5e15 + 0.5]]
        if op == "gammaln":
            pts.append([2.6e305, 1e306, -2.7, -2.4570247, -3.1])
    elif op in ("erfc", "erfcx"):
        pts = [mags, -mags, grid, np.linspace(0.5, 30, 120), -np.linspace(0.5, 27, 60), [26.0, 26.55, 27.3]]
    elif op == "erfinv":
        tail = _logspace(-300, -0.5, 40)
        pts = [np.linspace(-1, 1, 121), 1 - tail[tail > 1e-16], -(1 - tail[tail > 1e-16]), _logspace(-300, -1, 30),
               [1.0, -1.0, 1.5, -1.0000001]]
    elif op == "erfcinv":
        tail = _logspace(-300, -0.5, 60)
        pts = [np.linspace(0, 2, 121), tail, 2 - tail[tail > 1e-16], [SUBNORMAL, 1e-310, 2.5, -0.5]]
    else:  # Bessel
        pts = [mags[mags < 1e200], -mags[mags < 1e200], grid, np.linspace(7.5, 8.5, 11), [700.0, 709.0, 712.0, 713.9, 715.0]]
    x = np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in pts] + [SPECIAL])
    return np.unique(x[~np.isnan(x)]).tolist() and np.concatenate([np.unique(x[~np.isnan(x)]), [np.nan]])


def reference(op: str, x: np.ndarray) -> np.ndarray:
    """mpmath's value rounded to float64 (an overflow gives +-inf) where it has a
    real one; at poles, infinite arguments and NaN the IR op's own reference."""
    fn = BOUNDS[op][0]
    out = np.empty_like(x)
    gamma_family = op in ("gammaln", "gamma", "psi", "trigamma")
    for i, v in enumerate(x):
        if gamma_family and v <= 0 and v == np.floor(v):  # a pole: the IR reference says which infinity
            out[i] = np.nan
            continue
        try:
            r = fn(mp.mpf(float(v))) if np.isfinite(v) else None
            out[i] = float(r) if r is not None and mp.im(r) == 0 and mp.isfinite(r) else np.nan  # may overflow to inf
        except (ZeroDivisionError, ValueError, OverflowError):
            out[i] = np.nan
    return np.where(np.isnan(out), _ir_reference(op, x), out)


def _ir_reference(op, x):
    g = _graph(op, x.dtype)
    return evaluate(g, [x])[0]


def _graph(op, dtype):
    g = Graph(op)
    v = g.add_input(TensorType(__import__("ir").DType.from_numpy(np.dtype(dtype)), ("n",)), "x")
    node = g.create_node(op, [v], {})
    g.append(node)
    g.set_outputs(list(node.outputs))
    return g


@functools.lru_cache(maxsize=None)
def _session(op, dtype):
    return make_session(emit_model(_graph(op, dtype)))


def run(op: str, x: np.ndarray) -> np.ndarray:
    return _session(op, x.dtype.str)(x) if False else _session(op, x.dtype.str).run(None, {"x": x})[0]


def check(op: str, x: np.ndarray, want: np.ndarray, got: np.ndarray, dtype) -> None:
    """NaN/inf positions equal; finite values within the bound."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{op} {dtype}: NaN positions")
    inf = np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf], err_msg=f"{op} {dtype}: infinities")
    np.testing.assert_array_equal(np.isinf(got), inf, err_msg=f"{op} {dtype}: infinities")
    fin = np.isfinite(want)
    xs, g, w = x[fin].astype(np.float64), got[fin].astype(np.float64), want[fin].astype(np.float64)
    _, rel, absfn = BOUNDS[op]
    rel = rel * np.where(xs < 0, np.abs(xs) + 1, 1) if op in REL_GROWS_ON_NEGATIVES else rel
    bound = rel * np.abs(w) + (absfn(xs) if absfn else 0) + 4 * SUBNORMAL
    if op == "gamma":  # results below the normal range flush to zero on the negative axis
        bound = bound + np.where(xs < -171, TINY, 0)
    if dtype == np.float32:
        bound = bound + np.spacing(np.abs(w).astype(np.float32)).astype(np.float64)
    err = np.abs(g - w)
    bad = err > bound
    if bad.any():
        i = np.flatnonzero(bad)[:6]
        raise AssertionError(f"{op} {np.dtype(dtype).name}: {bad.sum()} of {bad.size} beyond the bound, e.g. "
                             f"x={xs[i]} got={g[i]} want={w[i]} err/bound={err[i] / bound[i]}")


OPS = sorted(BOUNDS)


@pytest.mark.parametrize("op", OPS)
def test_float64_within_bound(op):
    x = sweep(op)
    check(op, x, reference(op, x), run(op, x), np.float64)


@pytest.mark.parametrize("op", ["gammaln", "gamma", "psi", "trigamma"])
def test_positive_branch_equals_general_branch(op):
    """Inputs that are all > 0 run the positive-only branch of the body's ``If``
    (``special_f64.if_all_positive``): within the bound of the reference, and
    bit-identical to the same points computed by the general branch (the
    sweep holds negatives and NaN, so it takes the general one)."""
    x = sweep(op)
    positive = x[x > 0]
    fast, general = run(op, positive), run(op, x)[x > 0]
    np.testing.assert_array_equal(fast, general)
    check(op, positive, reference(op, positive), fast, np.float64)
    assert run(op, np.zeros(0)).shape == (0,)
    # away from the zeros' series regions (|x - 1| < 0.2, 1.8 <= x < 2.2, |x - 1.4616| < 0.25),
    # whose nodes an If then skips (special_f64.where_some)
    far = positive[(np.abs(positive - 1) >= 0.25) & (np.abs(positive - 2) >= 0.25)
                   & (np.abs(positive - 1.4616) >= 0.3)]
    np.testing.assert_array_equal(run(op, far), general[np.isin(positive, far)])
    check(op, far, reference(op, far), run(op, far), np.float64)


@pytest.mark.parametrize("op", OPS)
def test_float32_within_one_ulp(op):
    x64 = sweep(op)
    with np.errstate(over="ignore"):
        x = np.unique(x64.astype(np.float32))
    want64 = reference(op, x.astype(np.float64))
    with np.errstate(over="ignore", under="ignore"):
        want = want64.astype(np.float32)
    check(op, x, want, run(op, x), np.float32)


@pytest.mark.parametrize("numerics", ["strict", "fast"])
def test_atan2_quadrants_signed_zeros_and_accuracy(numerics):
    v = np.array([0.0, -0.0, 1.0, -1.0, 3e-320, -2.5, 1e300, -1e-300, np.inf, -np.inf, np.nan, 0.75])
    y, x = (a.ravel() for a in np.meshgrid(v, v, indexing="ij"))
    y = np.concatenate([y, RNG.normal(0, 10, 400)])
    x = np.concatenate([x, RNG.normal(0, 10, 400)])
    g = Graph("atan2")
    iy, ix = (g.add_input(TensorType(__import__("ir").DType.FLOAT64, ("n",)), n) for n in ("y", "x"))
    node = g.create_node("atan2", [iy, ix], {})
    g.append(node)
    g.set_outputs(list(node.outputs))
    got = make_session(emit_model(g, numerics=numerics)).run(None, {"y": y, "x": x})[0]
    general = np.isfinite(y) & np.isfinite(x) & (y != 0) & (x != 0)  # mpmath has no signed zeros
    want = np.array([float(mp.atan2(mp.mpf(a), mp.mpf(b))) if ok else np.nan for a, b, ok in zip(y, x, general)])
    want = np.where(general, want, np.arctan2(y, x))
    zero = want == 0
    if numerics == "strict":  # the sign of a zero result may differ under "fast" (docs/numerics.md)
        np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(np.arctan2(y, x)[zero]))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    fin = ~np.isnan(want)
    assert np.all(np.abs(got[fin] - want[fin]) <= 2 * np.spacing(np.abs(want[fin])))


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
def test_float64_random_sweep(op):
    """4,000 random points: log-uniform magnitudes of both signs (the domain's)."""
    mags = 10.0 ** RNG.uniform(-300, 300, 2000)
    if op == "erfinv":
        x = np.concatenate([RNG.uniform(-1, 1, 3000), 1 - 10.0 ** RNG.uniform(-16, 0, 1000)])
    elif op == "erfcinv":
        x = np.concatenate([RNG.uniform(0, 2, 3000), 10.0 ** RNG.uniform(-300, 0, 1000)])
    elif op == "trigamma":  # mpmath's polygamma crawls for huge arguments: the deterministic sweep covers them
        x = np.concatenate([10.0 ** RNG.uniform(-300, 6, 1000), -(10.0 ** RNG.uniform(-300, 6, 1000)),
                            RNG.uniform(-50, 50, 2000)])
    else:
        x = np.concatenate([mags[:1000], -mags[1000:][mags[1000:] < 1e15], RNG.uniform(-50, 50, 2000)])
    check(op, x, reference(op, x), run(op, x), np.float64)


# -- gradients: PyTensor's grad graphs (which use psi, trigamma, i1, ive(2, x), ...) compiled through us
def _grad_cases():
    import pytensor.tensor as pt

    return {
        "gammaln": pt.gammaln, "psi": pt.psi, "erfc": pt.erfc, "erfcx": pt.erfcx, "erfinv": pt.erfinv,
        "i0": pt.i0, "i1": pt.i1, "i0e": lambda a: pt.math.ive(0, a), "i1e": lambda a: pt.math.ive(1, a),
        "gamma": pt.gamma,
    }


@pytest.mark.parametrize("name", sorted(_grad_cases()))
def test_gradient_parity(name):
    import pytensor
    import pytensor.tensor as pt

    from tests.helpers import check_pytensor

    x = pt.dvector("x")
    f = _grad_cases()[name]
    values = np.array([0.05, 0.3, 1.46, 2.7, 9.5, 31.0]) if name != "erfinv" else np.array([-0.9, -0.2, 0.1, 0.6, 0.99])
    if name in ("erfc", "erfcx", "i0", "i1", "i0e", "i1e"):
        values = np.concatenate([values, -values])
    y = f(x)
    check_pytensor([x], [pytensor.grad(y.sum(), x), pytensor.grad(pytensor.grad(y.sum(), x).sum(), x)]
                   if name in ("gammaln", "i0") else [pytensor.grad(y.sum(), x)], [values], rtol=1e-12)


def test_gradient_parity_arctan2_and_betaln():
    import pytensor
    import pytensor.tensor as pt

    from tests.helpers import check_pytensor

    a, b = pt.dvector("a"), pt.dvector("b")
    va = np.array([0.5, 1.0, -2.0, 3.5, 0.01])
    vb = np.array([2.0, -1.0, -0.5, 40.0, 0.02])
    atan = pt.arctan2(a, b).sum()
    check_pytensor([a, b], pytensor.grad(atan, [a, b]), [va, vb], rtol=1e-12)
    beta = pt.special.betaln(a, b).sum()
    check_pytensor([a, b], pytensor.grad(beta, [a, b]), [np.abs(va), np.abs(vb)], rtol=1e-12)


def test_float32_graph_and_shared_functions():
    """float32 PyTensor graphs: results in float32, one model-local function per op and dtype."""
    import pytensor.tensor as pt

    from tests.helpers import check_pytensor

    x = pt.fvector("x")
    m = check_pytensor([x], [pt.gammaln(x) + pt.gammaln(2 * x), pt.psi(x), pt.erfc(x)],
                       [np.array([0.3, 1.5, 2.7, 10.2], np.float32)])
    model = m.model
    names = [(f.name, f.overload) for f in model.functions]
    assert sorted(names) == [("Digamma", "f32"), ("Erfc", "f32"), ("GammaLn", "f32")]
    assert sum(n.op_type == "GammaLn" for n in model.graph.node) == 2


def test_every_real_scalar_op_of_pytensor_has_a_rule():
    """Every concrete ``ScalarOp`` of ``pytensor.scalar.basic``/``math`` has
    a scalar rule but the complex ones (their results are refused by dtype);
    a new PyTensor op without one fails here, and its error names it."""
    import inspect

    import pytensor.scalar.basic as psb
    import pytensor.scalar.math as psm
    import pytensor.tensor as pt

    from compiler import compile_to_onnx
    from compiler.lowering.errors import UnsupportedOpsError
    from compiler.lowering.rules.scalar_ops import _rule_of

    abstract = {psb.ScalarOp, psb.UnaryScalarOp, psb.BinaryScalarOp, psb.LogicalComparison,
                psb.FixedLogicalComparison, psb.UnaryBitOp, psb.BinaryBitOp, psb.ScalarInnerGraphOp}
    missing = {cls.__name__ for mod in (psb, psm) for _, cls in inspect.getmembers(mod, inspect.isclass)
               if issubclass(cls, psb.ScalarOp) and cls.__module__ == mod.__name__ and cls not in abstract
               and _rule_of(cls) is None}
    assert missing == {"Angle", "Complex", "ComplexFromPolar", "Conj", "Imag", "Real"}
    x = pt.dvector("x")
    with pytest.raises(UnsupportedOpsError, match="complex"):
        compile_to_onnx([x], outputs=[pt.angle(pt.complex(x, x))])


# -- tails of sigmoid, softplus (log1pexp; log_sigmoid is -softplus(-x)) and log1mexp
TAIL_REFS = {
    "sigmoid": lambda v: 1 / (1 + mp.exp(-v)),
    "softplus": lambda v: mp.log1p(mp.exp(v)),
    "log1mexp": lambda v: (mp.log1p(-mp.exp(v)) if v < -1 else mp.log(-mp.expm1(v))) if v < 0 else mp.mpf("-inf"),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("name", sorted(TAIL_REFS))
def test_logistic_tails_within_4_ulp(name, dtype):
    """Down to the subnormal results of sigmoid(-740) and up to softplus(1e300): 4 ulp.
    (float32 sigmoid keeps its tail under numerics="strict"; "fast" is
    onnxruntime's Sigmoid, test_contract.py::test_fast_sigmoid_within_its_absolute_bound.)"""
    import pytensor.tensor as pt

    from compiler import compile_to_onnx

    mags = np.logspace(-300, 300, 61)
    x = np.concatenate([-mags, mags, np.linspace(-800, 800, 321), [0.0, -0.0, np.inf, -np.inf, np.nan]])
    with np.errstate(over="ignore"):
        x = np.unique(x.astype(dtype))
    if name == "log1mexp":
        x = x[~(x > 0)]  # NaN there, checked below through the pattern
    v = pt.vector("x", dtype=np.dtype(dtype).name)
    fn = {"sigmoid": pt.sigmoid, "softplus": pt.softplus, "log1mexp": pt.log1mexp}[name]
    numerics = "strict" if (name, dtype) == ("sigmoid", np.float32) else "fast"
    got = compile_to_onnx([v], outputs=[fn(v)], numerics=numerics).run(x)[0]
    want = []
    for a in x.astype(np.float64):
        if np.isnan(a):
            want.append(np.nan)
        elif np.isinf(a):
            want.append({"sigmoid": float(a > 0), "softplus": max(a, 0.0), "log1mexp": np.nan if a > 0 else -0.0}[name])
        else:
            want.append(float(TAIL_REFS[name](mp.mpf(float(a)))))
    with np.errstate(over="ignore"):
        want = np.array(want).astype(dtype)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    fin = np.isfinite(want)
    ulps = np.abs(got[fin].astype(np.float64) - want[fin]) / np.spacing(np.abs(want[fin])).astype(np.float64)
    assert ulps.max() <= 4, (x[fin][np.argmax(ulps)], ulps.max())
