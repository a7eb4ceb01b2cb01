"""The numerics contract (docs/numerics.md, ARCHITECTURE.md
"Numerics modes"), checked family by family in onnxruntime on models from
``compile_to_onnx`` in the default ``numerics="fast"`` mode.

Exact in every mode: dtypes and casts, integer arithmetic/division/modulo,
both rounding modes, comparisons and logic, which elements are NaN/+inf/-inf,
shapes. Floating-point values: within the bound stated per op family
(``BOUNDS``), measured against NumPy's float64 (for float32 results) and
mpmath (float64 results) or an exactly rounded sum. The sign of a zero
result may differ in fast mode. Special functions (gammaln, psi, erfc, ...)
are measured by ``tests/numerics/test_special_functions.py``.
"""

from __future__ import annotations

import functools
import math

import mpmath
import numpy as np
import pytensor.tensor as pt
import pytest
import scipy.special as sp

from backends.onnx.rules.mathfn import SIGMOID_FAST_ABS_EPS
from backends.onnx.rules.nn import SILU_FAST_ABS_EPS
from compiler import compile_to_onnx
from tests.helpers import pytensor_reference

# op family -> bound (the contract's table). "ulp": units in the last place of
# the reference value; "eps": multiples of the dtype's machine epsilon.
BOUNDS = {
    "elementary": "4 ulp (tan, tanh: 6 ulp; float32 tanh: or 2^-140 absolute) of NumPy; float64 also within "
                  "1 ulp more of mpmath",
    "sum": "|error| <= n eps sum(|x|) (n summands)",
    "matmul": "|error| <= k eps (|A| |B|) elementwise (k: inner dimension)",
    "softmax": "8 ulp + 4 eps absolute per element",
    "silu (fast, float32)": "|error| <= 2 eps max(1, |x|)",
    "sigmoid (fast, float32)": "|error| <= 2 eps",
}
ULPS = {"exp": 4, "log": 4, "log1p": 4, "expm1": 4, "sqrt": 0, "sin": 4, "cos": 4, "tan": 6, "tanh": 6,
        "arctan": 4, "arcsinh": 4, "sigmoid": 4, "softplus": 4, "erf": 4, "exp2": 4, "log2": 4, "log10": 4}
# (function, dtype) -> absolute error allowed besides the ulp bound: onnxruntime's float32 Tanh
# (MLAS) loses relative accuracy below |x| = 2^-118 (104 ulp = 1.5e-43 at x = 2^-126).
ABSOLUTE_FLOOR = {("tanh", "float32"): 2.0**-140}
FUNCS = {"exp": pt.exp, "log": pt.log, "log1p": pt.log1p, "expm1": pt.expm1, "sqrt": pt.sqrt, "sin": pt.sin,
         "cos": pt.cos, "tan": pt.tan, "tanh": pt.tanh, "arctan": pt.arctan, "arcsinh": pt.arcsinh,
         "sigmoid": pt.sigmoid, "softplus": pt.softplus, "erf": pt.erf, "exp2": pt.exp2, "log2": pt.log2,
         "log10": pt.log10}
NUMPY = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt, "sin": np.sin,
         "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "arctan": np.arctan, "arcsinh": np.arcsinh,
         "sigmoid": sp.expit, "softplus": lambda v: np.logaddexp(0, v), "erf": sp.erf, "exp2": np.exp2,
         "log2": np.log2, "log10": np.log10}
MPMATH = {"exp": mpmath.exp, "log": mpmath.log, "sin": mpmath.sin, "cos": mpmath.cos, "tanh": mpmath.tanh,
          "arctan": mpmath.atan, "erf": mpmath.erf, "sigmoid": lambda v: 1 / (1 + mpmath.exp(-v))}
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-300, -1e-300, 1e300, -1e300, 710.0, -750.0]
RNG = np.random.default_rng(0)


def compiled_run(inputs, outputs, values, **kw):
    """Compile (default numerics) and run in onnxruntime."""
    return compile_to_onnx(list(inputs), outputs=list(outputs), **kw).run(*values)


def domain_values(dtype) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = np.concatenate([SPECIAL, RNG.uniform(-10, 10, 400), 10 ** RNG.uniform(-30, 30, 300),
                            -(10 ** RNG.uniform(-30, 30, 300)), RNG.uniform(-1e-3, 1e-3, 100)])
        tiny = np.finfo(dtype).tiny  # the smallest normal numbers: the kernels' polynomials near underflow
        near_underflow = np.geomspace(tiny, tiny * 2.0**12, 200)
        return np.concatenate([x.astype(dtype), near_underflow.astype(dtype), -near_underflow.astype(dtype)])


def ulp_error(got, want) -> np.ndarray:
    """|got - want| in ulps of ``want`` (0 where both are equal, NaN or inf alike)."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(g - w) / np.spacing(np.abs(want)).astype(np.float64)
    return np.where(same, 0.0, err)


def assert_special_values_exact(got, want, what):
    for name, test in (("NaN", np.isnan), ("+inf", np.isposinf), ("-inf", np.isneginf)):
        np.testing.assert_array_equal(test(got), test(want), err_msg=f"{what}: positions of {name}")


# -- floating-point values: elementary functions ---------------------------------------
# Functions whose float32 form under numerics="fast" has an absolute bound instead (their own tests).
FAST_ABSOLUTE = {"sigmoid"}


@functools.lru_cache(maxsize=None)
def elementary_results(dtype: str, numerics: str = "fast"):
    """``(dtype, x, {name: onnxruntime result})`` for every function of
    ``FUNCS`` on ``domain_values(dtype)``, from one compiled model."""
    x = pt.vector("x", dtype=dtype)
    names = list(FUNCS)
    values = domain_values(dtype)
    with np.errstate(all="ignore"):
        got = compiled_run([x], [FUNCS[n](x) for n in names], [values], numerics=numerics)
    return dtype, values, dict(zip(names, got))


@pytest.fixture(params=[("float32", "fast"), ("float64", "fast"), ("float32", "strict")], ids="-".join)
def elementary(request):
    return elementary_results(*request.param)


@pytest.mark.parametrize("name", list(FUNCS))
def test_elementary_within_few_ulp_of_numpy(elementary, name):
    dtype, x, got = elementary
    if dtype == "float32" and name in FAST_ABSOLUTE and got is elementary_results("float32", "fast")[2]:
        pytest.skip("absolute bound under numerics='fast': test_fast_sigmoid_within_its_absolute_bound")
    with np.errstate(all="ignore"):
        want = NUMPY[name](x.astype(np.float64)).astype(dtype) if dtype == "float32" else NUMPY[name](x)
    assert got[name].dtype == want.dtype and got[name].shape == want.shape
    assert_special_values_exact(got[name], want, name)
    finite = np.isfinite(want) & (np.abs(want) >= np.finfo(dtype).tiny)  # ulps of subnormals are not relative
    err = ulp_error(got[name][finite], want[finite])
    floor = ABSOLUTE_FLOOR.get((name, dtype), 0.0)
    err[np.abs(got[name][finite].astype(np.float64) - want[finite]) <= floor] = 0.0
    assert err.max() <= ULPS[name], f"{name} {dtype}: {err.max()} ulp at x={x[finite][err.argmax()]}"


@pytest.mark.parametrize("name", list(MPMATH))
def test_float64_elementary_against_mpmath(name):
    """float64 results against mpmath (float32 ones are measured against NumPy's float64)."""
    _, x, got = elementary_results("float64")
    sel = np.flatnonzero(np.isfinite(x) & (np.abs(x) < 700) & (np.abs(x) > 1e-300))[::4]
    if name == "log":
        sel = sel[x[sel] > 0]
    if name in ("sin", "cos"):
        sel = sel[np.abs(x[sel]) < 2**20]  # the contract's range for the reduction (docs/numerics.md)
    with mpmath.workdps(40):
        want = np.array([float(MPMATH[name](mpmath.mpf(float(v)))) for v in x[sel]])
    err = ulp_error(got[name][sel], want)
    assert err.max() <= ULPS[name] + 1, f"{name}: {err.max()} ulp from mpmath at x={x[sel][err.argmax()]}"


def test_float64_tanh_within_one_ulp_of_mpmath_and_log1p_of_it_near_minus_one():
    """float64 ``tanh`` is Cephes/glibc's form, not onnxruntime's Tanh (up to
    7 ulp off): within 1 ulp of mpmath everywhere, and so ``log1p(tanh(x))``
    near x = -6 (1 + tanh(x) ~ 1e-5 amplifies tanh's error ~1e5 times; fuzz
    seed 104414) stays within 1e5 ulp of tanh's 1 ulp, measured against mpmath."""
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-25, 25, 600), rng.uniform(-1, 1, 300), np.arange(-40, 41) / 4,
                        10 ** rng.uniform(-300, 0, 200) * rng.choice([-1.0, 1.0], 200), [0.625, -0.625]])
    v = pt.dvector("x")
    tanh, log1p_tanh = compile_to_onnx([v], outputs=[pt.tanh(v), pt.log1p(pt.tanh(v))]).run(x)
    with mpmath.workdps(50):
        want = np.array([float(mpmath.tanh(mpmath.mpf(float(a)))) for a in x])
        near = (x > -8) & (x < -2)
        want_log = np.array([float(mpmath.log1p(mpmath.tanh(mpmath.mpf(float(a))))) for a in x[near]])
    assert ulp_error(tanh, want).max() <= 1
    rel = np.abs(log1p_tanh[near] - want_log) / np.abs(want_log)
    assert rel.max() < 1e-10, rel.max()
    assert (tanh[np.abs(x) >= 22] == np.sign(x[np.abs(x) >= 22])).all()


# -- floating-point values: reductions, matmul, softmax, SiLU ---------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sum_and_mean_within_the_summation_bound(dtype):
    x = pt.matrix("x", dtype=dtype)
    v = (RNG.standard_normal((7, 3000)) * 10 ** RNG.uniform(-3, 3, (7, 3000))).astype(dtype)
    s, m = compiled_run([x], [x.sum(axis=1), x.mean(axis=1)], [v])
    exact = np.array([math.fsum(r) for r in v.astype(np.float64)])
    n, eps = v.shape[1], np.finfo(dtype).eps
    bound = n * eps * np.abs(v).astype(np.float64).sum(axis=1)
    assert s.dtype == m.dtype == np.dtype(dtype)
    assert (np.abs(s - exact) <= bound).all()
    assert (np.abs(m - exact / n) <= bound / n + eps * np.abs(exact / n)).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_min_and_argmax_are_exact(dtype):
    x = pt.matrix("x", dtype=dtype)
    v = RNG.standard_normal((5, 40)).astype(dtype)
    v[1, 3], v[2, 7] = np.nan, np.inf
    got = compiled_run([x], [x.max(axis=1), x.min(axis=1), pt.argmax(x[3:], axis=1)], [v])
    want = pytensor_reference([x], [x.max(axis=1), x.min(axis=1), pt.argmax(x[3:], axis=1)], [v])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
        assert g.dtype == w.dtype


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_within_the_dot_product_bound(dtype):
    a, b = pt.matrix("a", dtype=dtype), pt.matrix("b", dtype=dtype)
    k = 257
    va, vb = (RNG.standard_normal(s).astype(dtype) for s in ((9, k), (k, 11)))
    got, = compiled_run([a, b], [a @ b], [va, vb])
    wa, wb = va.astype(np.longdouble), vb.astype(np.longdouble)
    exact = (wa @ wb).astype(np.float64)
    bound = k * np.finfo(dtype).eps * (np.abs(va).astype(np.float64) @ np.abs(vb).astype(np.float64))
    assert got.dtype == np.dtype(dtype) and (np.abs(got - exact) <= bound).all()


@pytest.mark.parametrize("axis", [-1, 0], ids=["innermost", "outer"])  # ONNX Softmax / the formula
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_and_log_softmax_within_bound(dtype, axis):
    x = pt.matrix("x", dtype=dtype)
    v = (RNG.standard_normal((6, 50)) * np.array([0.1, 1, 10, 30, 80, 300])[:, None]).astype(dtype)
    v = v if axis == -1 else np.ascontiguousarray(v.T)
    sm, lsm = compiled_run([x], [pt.special.softmax(x, axis=axis), pt.special.log_softmax(x, axis=axis)], [v])
    w = v.astype(np.longdouble)
    w = w - w.max(axis=axis, keepdims=True)
    ref_lsm = (w - np.log(np.exp(w).sum(axis=axis, keepdims=True))).astype(dtype)
    ref_sm = np.exp(ref_lsm.astype(np.longdouble)).astype(dtype)
    eps = np.finfo(dtype).eps
    for got, ref in ((sm, ref_sm), (lsm, ref_lsm)):
        err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        assert (err <= 8 * np.spacing(np.abs(ref)).astype(np.float64) + 4 * eps * np.maximum(1, np.abs(ref))).all()


def test_fast_silu_within_its_absolute_bound():
    from compiler import nn

    x = pt.vector("x", dtype="float32")
    v = np.concatenate([np.linspace(-120, 120, 48001), -np.logspace(-30, 2, 500), np.logspace(-30, 2, 500),
                        [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
    got, = compiled_run([x], [nn.silu(x)], [v])
    with np.errstate(all="ignore"):
        want = v.astype(np.float64) * sp.expit(v.astype(np.float64))
    assert_special_values_exact(got, want, "silu")
    finite = np.isfinite(want)
    err = np.abs(got[finite] - want[finite])
    assert (err <= SILU_FAST_ABS_EPS * np.finfo(np.float32).eps * np.maximum(1, np.abs(v[finite]))).all()


def test_fast_sigmoid_within_its_absolute_bound():
    """float32 sigmoid under numerics="fast" is onnxruntime's Sigmoid:
    within 2 eps absolute of expit (its tail below x = -17 is 0), NaN/inf exact."""
    x = pt.vector("x", dtype="float32")
    v = np.concatenate([np.linspace(-120, 120, 48001), -np.logspace(-30, 2, 500), np.logspace(-30, 2, 500),
                        [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
    got, = compiled_run([x], [pt.sigmoid(x)], [v])
    want = sp.expit(v.astype(np.float64))
    assert got.dtype == np.float32
    assert_special_values_exact(got, want, "sigmoid")
    finite = np.isfinite(want)
    assert np.abs(got[finite] - want[finite]).max() <= SIGMOID_FAST_ABS_EPS * np.finfo(np.float32).eps


# -- exact: dtypes, casts, integers, rounding, comparisons, NaN/inf, shapes ------------------
def test_casts_are_exact():
    x = pt.vector("x", dtype="float64")
    v = np.array([0.0, -0.0, 1.5, -2.5, 65519.99, 65520.0, 1e-8, 3.4e38, 1e39, -1e-46, np.nan, np.inf,
                  1 + 2.0**-11, 1 + 3 * 2.0**-12, 2.0**-25, 123456.789], np.float64)
    outs = [x.astype("float32"), x.astype("float16")]
    with np.errstate(all="ignore"):
        got = compiled_run([x], outs, [v])
        want = [v.astype(np.float32), v.astype(np.float16)]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))
    i = pt.vector("i", dtype="int64")
    iv = np.array([-2**63, -1, 0, 1, 2**53 + 1, 2**62, 255, -129], np.int64)
    types = ("int8", "uint8", "int32", "float64", "float32", "bool")
    # NumPy's astype (wrapping int casts, as PyTensor's compiled casts; its
    # Python-mode scalar cast refuses out-of-range values)
    for g, w in zip(compiled_run([i], [i.astype(t) for t in types], [iv]), [iv.astype(t) for t in types]):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
def test_integer_arithmetic_division_and_modulo_are_exact(dtype):
    a, b = pt.vector("a", dtype=dtype), pt.vector("b", dtype=dtype)
    info = np.iinfo(dtype)
    base = [info.min, info.min + 1, -7, -1, 0, 1, 7, 13, info.max] if info.min < 0 else [0, 1, 7, 13, 200, info.max]
    va, vb = (np.array(p, dtype) for p in zip(*[(x, y) for x in base for y in base]))
    outs = [a + b, a - b, a * b, a // b, a % b, pt.true_div(a, b)]
    with np.errstate(all="ignore"):
        want = pytensor_reference([a, b], outs, [va, vb])
    got = compiled_run([a, b], outs, [va, vb])
    for g, w in zip(got[:5], want[:5]):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    assert got[5].dtype == want[5].dtype
    assert_special_values_exact(got[5], want[5], "int true_div")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rounding_and_float_floor_div_mod_are_exact_up_to_zero_sign(dtype):
    x, y = pt.vector("x", dtype=dtype), pt.vector("y", dtype=dtype)
    v = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.0, 0.0, 1e30, np.nan, np.inf, -np.inf, 7.3,
                  -7.3, 1.0, 0.1], dtype)
    w = np.array([0.1, -0.1, 2.0, 2.0, -3.0, 0.0, 0.3, 3.0, -3.0, 7.0, 1.0, 2.0, 2.0, -0.5, 0.5, np.inf, 0.1],
                 dtype)
    outs = [pt.round(x, mode="half_to_even"), pt.round(x, mode="half_away_from_zero"), pt.floor(x), pt.ceil(x),
            pt.trunc(x), x // y, x % y]
    with np.errstate(all="ignore"):
        want = pytensor_reference([x, y], outs, [v, w])
        got = compiled_run([x, y], outs, [v, w])
    for g, r in zip(got, want):
        assert g.dtype == r.dtype
        np.testing.assert_array_equal(g, r)  # NaN == NaN, -0.0 == 0.0: the fast-mode contract
    with np.errstate(all="ignore"):
        strict = compiled_run([x, y], outs, [v, w], numerics="strict")
    # strict: signed zeros too (except half_away_from_zero(0.0): C's round gives
    # +0.0, which the emitter follows; PyTensor's Python implementation gives -0.0)
    for k, (g, r) in enumerate(zip(strict, want)):
        zero = (r == 0) & ((k != 1) | (v != 0))
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(r[zero]))  # strict: signed zeros too


def test_comparisons_and_logic_are_exact():
    x, y = pt.vector("x"), pt.vector("y")
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, np.nan, 2.0], "float64")
    w = np.array([np.nan, np.inf, 1.0, -0.0, 0.0, 1.0, 1.0, np.nan], "float64")
    i, j = pt.vector("i", dtype="int16"), pt.vector("j", dtype="int16")
    vi, vj = np.array([-5, 3, 0, 7], "int16"), np.array([3, 3, -1, -8], "int16")
    b = pt.vector("b", dtype="bool")
    vb = np.array([True, False, True, False])
    outs = [pt.eq(x, y), pt.neq(x, y), pt.lt(x, y), pt.le(x, y), pt.gt(x, y), pt.ge(x, y), pt.isnan(x),
            pt.isinf(x), pt.and_(i, j), pt.or_(i, j), pt.xor(i, j), pt.invert(i), pt.and_(b, pt.invert(b)),
            pt.or_(b, pt.lt(x[:4], 1)), pt.maximum(i, j), pt.minimum(x, y)]
    vals = [v, w, vi, vj, vb]
    for g, r in zip(compiled_run([x, y, i, j, b], outs, vals), pytensor_reference([x, y, i, j, b], outs, vals)):
        assert g.dtype == r.dtype and g.shape == r.shape
        np.testing.assert_array_equal(g, r)


def test_fast_where_selects_exactly():
    """A float where is one Where in fast mode: the selected values are
    exact; only the sign of a selected zero may differ."""
    c, a, b = pt.vector("c", dtype="bool"), pt.vector("a"), pt.vector("b")
    vc = np.array([True, False, True, False, True])
    va = np.array([-0.0, 1.0, np.nan, 2.0, -np.inf])
    vb = np.array([5.0, -0.0, 3.0, np.inf, 0.0])
    got, = compiled_run([c, a, b], [pt.switch(c, a, b)], [vc, va, vb])
    np.testing.assert_array_equal(got, np.where(vc, va, vb))


def test_shapes_and_dtypes_are_exact():
    x = pt.tensor("x", dtype="float32", shape=(None, 3, None))
    v = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    outs = [x.sum(axis=(0, 2)), x.dimshuffle(2, "x", 0, 1), x.reshape((-1, 4)), x[:, ::-2, 1:],
            pt.concatenate([x, x], axis=1), pt.argmax(x, axis=1), x.astype("int16").prod(axis=0)]
    for g, r in zip(compiled_run([x], outs, [v]), pytensor_reference([x], outs, [v])):
        assert g.dtype == r.dtype and g.shape == r.shape
