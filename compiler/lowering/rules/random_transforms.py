"""Exact transforms of standard noise into draws of PyTensor's random
variables (``pytensor.tensor.random.basic``), the table ``TRANSFORMS`` that
``random.py`` reads.

A transform takes ``(ctx, noise, params)``: ``noise`` of the draw's shape
(batch dims, then the draw's core dim for a multivariate draw), with a
trailing axis of ``Transform.uniforms`` values where one draw needs several;
``params`` already cast to the noise dtype for a continuous draw. It returns
the draw. Every transform is exact in distribution: the draw's law equals
the distribution's when the noise is exactly uniform on [0, 1) (or standard
normal), up to the rounding of the floating-point formulas. The draws differ
from NumPy's (other algorithms consume other numbers), so a model's draws
and PyTensor's agree in distribution, never value by value.

- **closed forms**: a quantile function of ``u`` or a function of ``z``
  (normal, lognormal, halfnormal, uniform, triangular, exponential,
  truncexpon, logistic, gumbel, laplace, cauchy, halfcauchy, pareto,
  weibull, bernoulli, integers, geometric, categorical);
- **quantiles through special functions**: gamma ``scale * P^-1(shape,
  u)`` (``gammaincinv``), invgamma ``scale / P^-1(shape, u)``, gengamma
  ``lambd * P^-1(alpha / p, u)^(1 / p)``, beta ``I^-1(a, b, u)``
  (``betaincinv``), Student's t from ``I^-1(df/2, 1/2, 2 min(u, 1 - u))``
  (``|T| > t`` has probability ``I_{df/(df+t^2)}(df/2, 1/2)``; ``_student_t``);
- **discrete quantiles by search**: poisson, binomial, negative_binomial:
  the smallest k with ``F(k) > u`` (``F`` by ``gammaincc``/``betainc``),
  found by a loop that steps each element from a Cornish-Fisher guess until
  ``F(k - 1) <= u < F(k)`` holds for every element (``_quantile_search``);
- **several uniforms**: wald (Michael, Schucany & Haas 1976, NumPy's
  algorithm: a normal from ``u1, u2`` by Box-Muller, the root choice by
  ``u3``), beta_binomial (a beta ``p`` from ``u1``, then a
  binomial from ``u2``), dirichlet (``G_i = P^-1(alpha_i + 1, u1) *
  u2^(1 / alpha_i)`` is Gamma(alpha_i) (Marsaglia & Tsang 2000, section 3),
  normalized as ``softmax(log G)`` so tiny alphas do not underflow to 0/0);
- **multivariate normal**: ``mean + A z`` with the factor ``A`` of ``cov``
  of the op's ``method``, as ``MvNormalRV.rng_fn``: the lower Cholesky factor,
  ``U sqrt(s)`` (SVD) or ``V sqrt(w)`` (eigh), so a singular positive
  semidefinite covariance draws with "svd" and "eigh" as in NumPy;
- **hypergeometric**: the smallest k with ``F(k) > u``, walking up from the
  lower support bound and adding pmfs by ``gammaln`` (``_hypergeometric``);
- **multinomial**: sequential conditional binomials from ``k - 1``
  uniforms (``_multinomial``: ``noise_core_less``), the last count the
  remainder;
- **vonmises**: the inverse CDF by bisection on Hill's (1977) series, one
  uniform a draw (NumPy's Best-Fisher rejection sampler would take an
  unbounded number, which ``random="inputs"`` cannot feed), wrapped around
  ``mu`` into [-pi, pi] as NumPy;
- **permutation, choice without replacement**: one uniform per item of the
  population (``noise_core``) as a sort key: the decreasing order of the
  keys ``u`` (uniform) or ``log(u) / p`` (Efraimidis & Spirakis 2006,
  successive sampling proportional to ``p``); core ranks from the node's
  signature (``core=None``).

Parameter values are not checked (as documented in ``random.py``).
Distributions without an entry are unsupported. A permutation or choice of a
batch of arrays (``size=``, or an ``a`` with batch dims) takes each batch
member's own order of its own items (``_take_population``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from pytensor.tensor.random import basic as rb

from compiler.lowering.bodies import Body
from compiler.lowering.context import LoweringContext
from compiler.lowering.rules.decompositions import cholesky
from compiler.lowering.rules.eigh import jacobi_eigh
from compiler.lowering.rules.indexing import dim_of, int64_value
from compiler.lowering.rules.matrix_loops import positions, run_steps, zeros_like
from compiler.lowering.rules.svd import jacobi_svd
from ir import DType, TensorType, Value

F64, I64 = DType.FLOAT64, DType.INT64
NORMAL, UNIFORM = "normal", "uniform"
# the search loop's trip-count cap: each step moves an element by one, from a guess a few steps off
SEARCH_STEPS = 2 ** 31 - 1


@dataclass(frozen=True)
class Transform:
    """How one distribution's draw is made from noise.

    Attributes:
        noise: ``NORMAL`` (standard normal) or ``UNIFORM`` (U[0, 1)).
        fn: ``(ctx, noise, params) -> draw``.
        core: the core rank of each parameter (PyTensor's signature);
            None where it follows the node's signature (``op.ndims_params``).
        uniforms: noise values per draw element; above 1, the noise has a
            trailing axis of that length.
        core_dim_of: for a multivariate draw (one core dim), the parameter
            whose last dim is the draw's core dim; None for scalar draws.
        noise_core_less: the noise's core dim is the draw's less this
            (multinomial: ``k - 1`` uniforms for ``k`` counts).
        noise_core: ``(ctx, params) -> (static length or None, i64[1]
            value)``: a noise core axis of that length, for a draw whose
            noise is one uniform per item of a population (permutation,
            choice without replacement).
        float64_noise: float64 noise even for a float32 draw (sort keys:
            float32 uniforms would tie too often).
    """

    noise: str
    fn: Callable[[LoweringContext, Value, list], Value]
    core: tuple | None
    uniforms: int = 1
    core_dim_of: int | None = None
    noise_core_less: int = 0
    noise_core: Callable[[LoweringContext, list], tuple] | None = None
    float64_noise: bool = False
    takes_op: bool = False  # ``fn`` also takes the node's op (``op=``: multivariate normal's ``method``)


def _k(ctx, x: Value, c) -> Value:
    return ctx.scalar(c, x.dtype)


def _positive(ctx, u: Value) -> Value:
    """``u`` with an exact 0 replaced by the dtype's smallest normal number."""
    return ctx.add("maximum", [u, _k(ctx, u, np.finfo(u.dtype.numpy).tiny)])


def _split(ctx, noise: Value, count: int) -> list[Value]:
    """The ``count`` slices of ``noise``'s trailing noise axis."""
    axis = noise.rank - 1
    return [ctx.add("squeeze", [ctx.add("slice", [noise, ctx.i64([i]), ctx.i64([i + 1]), ctx.i64([1])],
                                        {"axes": [axis]})], {"axes": [axis]}) for i in range(count)]


def _mul(ctx, *xs):
    out = xs[0]
    for x in xs[1:]:
        out = ctx.add("mul", [out, x])
    return out


def _affine(ctx, x, loc, scale):
    return ctx.add("add", [loc, ctx.add("mul", [scale, x])])


def std_normal_of(ctx, u: Value) -> Value:
    """A standard normal value from uniform ``u``: ``sqrt(2) erfinv(2u - 1)``."""
    t = ctx.add("sub", [ctx.add("add", [u, u]), _k(ctx, u, 1.0)])
    return ctx.add("mul", [_k(ctx, u, np.sqrt(2.0)), ctx.add("erfinv", [t])])


# -- closed forms --------------------------------------------------------------------------------------------
def _normal(ctx, z, p):
    loc, scale = p
    return _affine(ctx, z, loc, scale)


def _lognormal(ctx, z, p):
    return ctx.add("exp", [_normal(ctx, z, p)])


def _halfnormal(ctx, z, p):
    loc, scale = p
    return _affine(ctx, ctx.add("abs", [z]), loc, scale)


def _uniform(ctx, u, p):
    low, high = p
    return ctx.add("add", [low, ctx.add("mul", [ctx.add("sub", [high, low]), u])])


def _triangular(ctx, u, p):
    """NumPy's inverse CDF of the triangular distribution."""
    left, mode, right = p
    width = ctx.add("sub", [right, left])
    below = ctx.add("sub", [mode, left])
    ratio = ctx.add("div", [below, width])
    lower = ctx.add("add", [left, ctx.add("sqrt", [_mul(ctx, u, width, below)])])
    one_minus = ctx.add("sub", [_k(ctx, u, 1.0), u])
    upper = ctx.add("sub", [right, ctx.add("sqrt", [_mul(ctx, one_minus, width, ctx.add("sub", [right, mode]))])])
    return ctx.add("where", [ctx.add("le", [u, ratio]), lower, upper])


def _exponential(ctx, u, p):
    (scale,) = p
    return ctx.add("mul", [ctx.add("neg", [ctx.add("log1p", [ctx.add("neg", [u])])]), scale])


def _truncexpon(ctx, u, p):
    """SciPy's ``truncexpon(b, loc, scale)``: ``-log1p(u * expm1(-b))``."""
    b, loc, scale = p
    x = ctx.add("neg", [ctx.add("log1p", [ctx.add("mul", [u, ctx.add("expm1", [ctx.add("neg", [b])])])])])
    return _affine(ctx, x, loc, scale)


def _logistic(ctx, u, p):
    loc, scale = p
    u = _positive(ctx, u)
    logit = ctx.add("sub", [ctx.add("log", [u]), ctx.add("log1p", [ctx.add("neg", [u])])])
    return _affine(ctx, logit, loc, scale)


def _gumbel(ctx, u, p):
    loc, scale = p
    t = ctx.add("log", [ctx.add("neg", [ctx.add("log", [_positive(ctx, u)])])])
    return ctx.add("sub", [loc, ctx.add("mul", [scale, t])])


def _laplace(ctx, u, p):
    loc, scale = p
    u = _positive(ctx, u)
    two_u = ctx.add("add", [u, u])
    upper = ctx.add("sub", [loc, ctx.add("mul", [scale, ctx.add("log", [ctx.add("sub", [_k(ctx, u, 2.0), two_u])])])])
    lower = ctx.add("add", [loc, ctx.add("mul", [scale, ctx.add("log", [two_u])])])
    return ctx.add("where", [ctx.add("ge", [u, _k(ctx, u, 0.5)]), upper, lower])


def _tan_pi(ctx, t):
    """``tan(pi t)`` for ``t`` in [0, 1/2]; past 1/4 as ``1 / tan(pi (1/2 - t))`` so that the pole at
    1/2 is approached through an exact ``1/2 - t`` (Sterbenz), not a rounded ``pi t``."""
    quarter = ctx.add("le", [t, _k(ctx, t, 0.25)])
    near = ctx.add("tan", [ctx.add("mul", [_k(ctx, t, np.pi), t])])
    far = ctx.add("reciprocal", [ctx.add("tan", [ctx.add("mul", [_k(ctx, t, np.pi),
                                                                  ctx.add("sub", [_k(ctx, t, 0.5), t])])])])
    return ctx.add("where", [quarter, near, far])


def _cauchy(ctx, u, p):
    """``tan(pi (u - 1/2))``, odd in ``u - 1/2`` (``_tan_pi`` of its magnitude)."""
    loc, scale = p
    t = ctx.add("sub", [u, _k(ctx, u, 0.5)])
    magnitude = _tan_pi(ctx, ctx.add("abs", [t]))
    return _affine(ctx, ctx.add("where", [ctx.add("lt", [t, _k(ctx, t, 0.0)]), ctx.add("neg", [magnitude]),
                                          magnitude]), loc, scale)


def _halfcauchy(ctx, u, p):
    """``tan(pi u / 2)``."""
    loc, scale = p
    return _affine(ctx, _tan_pi(ctx, ctx.add("mul", [u, _k(ctx, u, 0.5)])), loc, scale)


def _pareto(ctx, u, p):
    """SciPy's ``pareto(b, scale)``: ``scale * (1 - u)^(-1/b)``."""
    b, scale = p
    return ctx.add("mul", [scale, ctx.add("exp", [ctx.add("div", [ctx.add("neg", [ctx.add("log1p", [ctx.add("neg", [u])])]), b])])])


def _weibull(ctx, u, p):
    """NumPy's ``weibull(a)`` (no scale): ``(-log1p(-u))^(1/a)``."""
    (a,) = p
    e = ctx.add("neg", [ctx.add("log1p", [ctx.add("neg", [u])])])
    return ctx.add("pow", [e, ctx.add("reciprocal", [a])])


def _bernoulli(ctx, u, p):
    (prob,) = p
    return ctx.add("lt", [u, ctx.cast(prob, F64)])


def _integers(ctx, u, p):
    low, high = (ctx.cast(a, I64) for a in p)
    span = ctx.add("sub", [high, low])
    k = ctx.cast(ctx.add("floor", [ctx.add("mul", [u, ctx.cast(span, F64)])]), I64)
    return ctx.add("add", [low, ctx.add("minimum", [k, ctx.add("sub", [span, ctx.scalar(1, I64)])])])


def _geometric(ctx, u, p):
    """NumPy's support {1, 2, ...}: ``floor(log1p(-u) / log1p(-p)) + 1``."""
    (prob,) = p
    prob = ctx.cast(prob, F64)
    ratio = ctx.add("div", [ctx.add("log1p", [ctx.add("neg", [u])]), ctx.add("log1p", [ctx.add("neg", [prob])])])
    return ctx.cast(ctx.add("add", [ctx.add("floor", [ratio]), ctx.scalar(1.0, F64)]), I64)


def _categorical(ctx, u, p):
    (prob,) = p
    cdf = ctx.cast(ctx.add("cumsum", [prob], {"axis": prob.rank - 1}), F64)
    below = ctx.add("lt", [cdf, ctx.add("unsqueeze", [u], {"axes": [u.rank]})])
    return ctx.add("reduce_sum", [ctx.cast(below, I64)], {"axes": [u.rank], "keepdims": False})


# -- quantiles through special functions ---------------------------------------------------------------------
def _gamma(ctx, u, p):
    shape, scale = p
    return ctx.add("mul", [scale, ctx.add("gammaincinv", [shape, u])])


def _invgamma(ctx, u, p):
    """``1 / gamma(shape, 1 / scale)`` (PyTensor's ``InvGammaRV``): ``scale / P^-1(shape, u)``."""
    shape, scale = p
    return ctx.add("div", [scale, ctx.add("gammaincinv", [shape, u])])


def _gengamma(ctx, u, p):
    """PyTensor's ``gengamma(alpha, p, lambd)`` (SciPy's ``gengamma(alpha / p, p, scale=lambd)``):
    ``(X / lambd)^p`` is Gamma(alpha / p), for either sign of p."""
    alpha, power, lambd = p
    g = ctx.add("gammaincinv", [ctx.add("div", [alpha, power]), u])
    return ctx.add("mul", [lambd, ctx.add("pow", [g, ctx.add("reciprocal", [power])])])


def _beta(ctx, u, p):
    a, b = p
    return ctx.add("betaincinv", [a, b, u])


def _student_t(ctx, u, p):
    """``|T| > t`` has probability ``q = I_x(df/2, 1/2)`` with ``x = df / (df + t^2)``; with ``q = 2 min(u,
    1 - u)``, ``t^2 = df (1 - x) / x``. Where ``q > 1/2`` (the center, x near 1) the same root is taken as
    ``y = 1 - x = I^-1(1/2, df/2, 1 - q)`` (``I_x(a, b) = 1 - I_{1-x}(b, a)``), so that ``t^2 = df y / (1 -
    y)`` does not cancel; one ``betaincinv`` with per-element arguments."""
    df, loc, scale = p
    one, half = _k(ctx, u, 1.0), _k(ctx, u, 0.5)
    half_df = ctx.add("mul", [df, half])
    tail = ctx.add("minimum", [u, ctx.add("sub", [one, u])])
    q = ctx.add("add", [tail, tail])
    center = ctx.add("gt", [q, half])
    r = ctx.add("betaincinv", [ctx.add("where", [center, half, half_df]),
                               ctx.add("where", [center, half_df, half]),
                               ctx.add("where", [center, ctx.add("abs", [ctx.add("sub", [one, ctx.add("add", [u, u])])]),
                                                 q])])
    one_minus_r = ctx.add("sub", [one, r])
    ratio = ctx.add("where", [center, ctx.add("div", [r, one_minus_r]), ctx.add("div", [one_minus_r, r])])
    t = ctx.add("sqrt", [ctx.add("mul", [df, ratio])])
    signed = ctx.add("where", [ctx.add("lt", [u, half]), ctx.add("neg", [t]), t])
    return _affine(ctx, signed, loc, scale)


# -- several uniforms ----------------------------------------------------------------------------------------
def _wald(ctx, noise, p):
    """Michael, Schucany & Haas (1976), NumPy's ``wald`` (a normal by Box-Muller from ``u1, u2``, the root
    choice by ``u3``), with the smaller root
    written ``4 mu^2 lam y / (s + mu y)^2`` (``s = sqrt(4 mu lam y + mu^2 y^2)``),
    free of the cancellation in ``mu + mu^2 y / (2 lam) - mu s / (2 lam)``."""
    mean, lam = p
    u1, u2, u3 = _split(ctx, noise, 3)
    # Box-Muller: a standard normal from two uniforms (cheaper to build and run than erfinv's quantile)
    radius = ctx.add("sqrt", [ctx.add("mul", [_k(ctx, u1, -2.0), ctx.add("log", [_positive(ctx, u1)])])])
    z = ctx.add("mul", [radius, ctx.add("cos", [ctx.add("mul", [_k(ctx, u2, 2 * np.pi), u2])])])
    y = ctx.add("mul", [z, z])
    mu_y = ctx.add("mul", [mean, y])
    four_mu_lam_y = _mul(ctx, _k(ctx, y, 4.0), mean, lam, y)
    s = ctx.add("sqrt", [ctx.add("add", [four_mu_lam_y, ctx.add("mul", [mu_y, mu_y])])])
    denom = ctx.add("add", [s, mu_y])
    x = ctx.add("div", [ctx.add("mul", [mean, four_mu_lam_y]), ctx.add("mul", [denom, denom])])
    x = ctx.add("where", [ctx.add("eq", [y, _k(ctx, y, 0.0)]), ctx.add("add", [mean, _k(ctx, y, 0.0)]), x])
    keep = ctx.add("le", [u3, ctx.add("div", [mean, ctx.add("add", [mean, x])])])
    return ctx.add("where", [keep, x, ctx.add("div", [ctx.add("mul", [mean, mean]), x])])


def _dirichlet(ctx, noise, p):
    (alpha,) = p
    u1, u2 = (_positive(ctx, u) for u in _split(ctx, noise, 2))
    g = ctx.add("gammaincinv", [ctx.add("add", [alpha, _k(ctx, alpha, 1.0)]), u1])
    log_g = ctx.add("add", [ctx.add("log", [g]), ctx.add("div", [ctx.add("log", [u2]), alpha])])
    return ctx.add("softmax", [log_g], {"axis": log_g.rank - 1})


def _mvnormal(ctx, z, p, op=None):
    """``mean + A z`` with PyTensor's factor ``A`` of ``cov`` for the op's
    ``method`` (``MvNormalRV.rng_fn``): the lower Cholesky factor
    ("cholesky", NaN draws for a covariance that is not positive definite,
    where NumPy raises), ``U sqrt(s)`` of ``np.linalg.svd`` ("svd") or
    ``V sqrt(w)`` of ``np.linalg.eigh`` ("eigh": NaN where an eigenvalue is
    negative, as NumPy's ``sqrt``), so a positive semidefinite covariance
    draws through the last two as in NumPy (Jacobi forms, ``rules/svd.py``,
    ``rules/eigh.py``; their column signs are not LAPACK's, the law is the
    same)."""
    mean, cov = p
    method = getattr(op, "method", "cholesky")
    if method == "svd":
        u, s, _ = jacobi_svd(ctx, cov, compute_uv=True, full_matrices=True)
        factor = ctx.add("mul", [u, ctx.add("unsqueeze", [ctx.add("sqrt", [s])], {"axes": [s.rank - 1]})])
    elif method == "eigh":
        w, v = jacobi_eigh(ctx, cov)
        factor = ctx.add("mul", [v, ctx.add("unsqueeze", [ctx.add("sqrt", [w])], {"axes": [w.rank - 1]})])
    else:
        factor = cholesky(ctx, cov, lower=True)
    lz = ctx.add("squeeze", [ctx.add("matmul", [factor, ctx.add("unsqueeze", [z], {"axes": [z.rank]})])],
                 {"axes": [z.rank]})
    return ctx.add("add", [mean, lz])


# -- discrete quantiles by search ----------------------------------------------------------------------------
def _quantile_search(ctx, u: Value, guess: Value, params: list[Value], cdf, upper=None) -> Value:
    """The smallest integer ``k >= 0`` (``<= upper(params)`` when given) with
    ``cdf(params, k) > u``, per element, as int64: a ``loop`` that moves each
    element one step per iteration (up while ``cdf(k) <= u``, down while
    ``cdf(k - 1) > u``) from ``guess`` (float64 integers) until no element
    moves. ``cdf`` builds float64 nodes in the context it is given (the
    loop body's). An element whose ``cdf`` is NaN (a NaN parameter) keeps
    its guess."""
    body = Body(ctx, "quantile")
    b = body.ctx
    body.input(TensorType(I64, ()), "i")
    k = body.input(guess.type, "k")
    inner_u = body.input(u.type, "u")
    inner = [body.input(v.type, f"p{i}") for i, v in enumerate(params)]
    one, zero = b.scalar(1.0, F64), b.scalar(0.0, F64)
    # F(k) and F(k - 1) from one evaluation of ``cdf`` (one copy of its special-function body), stacked on axis 0
    both = b.add("concat", [b.add("unsqueeze", [k], {"axes": [0]}),
                            b.add("unsqueeze", [b.add("sub", [k, one])], {"axes": [0]})], {"axis": 0})
    f = cdf(b, [b.add("unsqueeze", [v], {"axes": [0]}) for v in inner], both)
    f_k, f_below = (b.add("squeeze", [b.add("slice", [f, b.i64([i]), b.i64([i + 1]), b.i64([1])], {"axes": [0]})],
                          {"axes": [0]}) for i in (0, 1))
    up = b.add("le", [f_k, inner_u])
    if upper is not None:
        up = b.add("and", [up, b.add("lt", [k, upper(b, inner)])])
    down = b.add("and", [b.add("gt", [k, zero]), b.add("gt", [f_below, inner_u])])
    step = b.add("sub", [b.cast(up, F64), b.cast(down, F64)])
    moved = b.add("reduce_any", [b.add("or", [up, down])], {"axes": (), "keepdims": False})
    graph = body.finish([moved, b.add("add", [k, step])])
    loop = ctx.graph.create_node("loop", [ctx.scalar(SEARCH_STEPS, I64), guess, u, *params],
                                 {"num_carried": 1, "has_condition": True}, subgraphs={"body": graph})
    loop.origins = ctx.origins
    ctx.graph.append(loop)
    return ctx.cast(loop.outputs[0], I64)


def _cornish_fisher(ctx, u, mean, sd, skew):
    """``max(0, floor(mean + sd (z + skew (z^2 - 1) / 6)))``, ``z`` the normal quantile of ``u`` (float64;
    the Cornish-Fisher expansion to the skewness term): a guess of the discrete quantile a few steps from
    it (0 where it is NaN)."""
    z = std_normal_of(ctx, u)
    z = ctx.add("clip", [z, ctx.scalar(-40.0, F64), ctx.scalar(40.0, F64)])
    zz = ctx.add("sub", [ctx.add("mul", [z, z]), ctx.scalar(1.0, F64)])
    w = ctx.add("add", [z, _mul(ctx, skew, zz, ctx.scalar(1 / 6, F64))])
    guess = ctx.add("floor", [ctx.add("add", [mean, ctx.add("mul", [sd, w])])])
    guess = ctx.add("where", [ctx.add("isnan", [guess]), ctx.scalar(0.0, F64), guess])
    return ctx.add("maximum", [guess, ctx.scalar(0.0, F64)])


def _poisson(ctx, u, p):
    """P(X <= k) = Q(k + 1, lam) (``gammaincc``)."""
    lam = ctx.cast(p[0], F64)
    sd = ctx.add("sqrt", [lam])
    guess = ctx.add("minimum", [_cornish_fisher(ctx, u, lam, sd, ctx.add("reciprocal", [sd])), ctx.scalar(2.0 ** 53, F64)])
    return _quantile_search(ctx, u, guess, [lam],
                            lambda c, q, k: c.add("gammaincc", [c.add("add", [k, c.scalar(1.0, F64)]), q[0]]))


def _binomial_cdf(c, q, k):
    """P(X <= k) = I_{1-p}(n - k, k + 1) for k < n, 1 from n on (``betainc``)."""
    n, prob = q
    one = c.scalar(1.0, F64)
    inside = c.add("lt", [k, n])
    a = c.add("where", [inside, c.add("sub", [n, k]), one])
    value = c.add("betainc", [a, c.add("add", [k, one]), c.add("sub", [one, prob])])
    return c.add("where", [inside, value, one])


def _binomial_from(ctx, u, n, prob):
    """The binomial(n, prob) quantile of ``u`` by ``_quantile_search`` (at most n)."""
    n, prob = ctx.cast(n, F64), ctx.cast(prob, F64)
    mean = ctx.add("mul", [n, prob])
    var = ctx.add("mul", [mean, ctx.add("sub", [ctx.scalar(1.0, F64), prob])])
    sd = ctx.add("sqrt", [var])
    skew = ctx.add("div", [ctx.add("sub", [ctx.scalar(1.0, F64), ctx.add("add", [prob, prob])]), sd])
    guess = ctx.add("minimum", [_cornish_fisher(ctx, u, mean, sd, skew), n])
    return _quantile_search(ctx, u, guess, [n, prob], _binomial_cdf, upper=lambda c, q: q[0])


def _binomial(ctx, u, p):
    n, prob = p
    return _binomial_from(ctx, u, n, prob)


def _negative_binomial(ctx, u, p):
    """NumPy's failures before the n-th success: P(X <= k) = I_p(n, k + 1)."""
    n, prob = (ctx.cast(v, F64) for v in p)
    q = ctx.add("sub", [ctx.scalar(1.0, F64), prob])
    mean = ctx.add("div", [ctx.add("mul", [n, q]), prob])
    sd = ctx.add("div", [ctx.add("sqrt", [ctx.add("mul", [n, q])]), prob])
    skew = ctx.add("div", [ctx.add("add", [ctx.scalar(1.0, F64), q]), ctx.add("sqrt", [ctx.add("mul", [n, q])])])
    guess = ctx.add("minimum", [_cornish_fisher(ctx, u, mean, sd, skew), ctx.scalar(2.0 ** 53, F64)])
    return _quantile_search(
        ctx, u, guess, [n, prob],
        lambda c, q_, k: c.add("betainc", [q_[0], c.add("add", [k, c.scalar(1.0, F64)]), q_[1]]))


def _beta_binomial(ctx, noise, p):
    n, a, b = p
    u1, u2 = _split(ctx, noise, 2)
    prob = ctx.add("betaincinv", [ctx.cast(a, F64), ctx.cast(b, F64), u1])
    return _binomial_from(ctx, u2, n, prob)


def _hypergeometric(ctx, u, p):
    """NumPy's ``hypergeometric(ngood, nbad, nsample)`` (SciPy's ``hypergeom(ngood + nbad, ngood,
    nsample)``): the smallest k with ``F(k) > u``, by a walk up the support from its lower bound
    ``max(0, nsample - nbad)`` (or from ``mean - sqrt(20 nsample)`` where that is above: the mass below is
    under 4.2e-18, Hoeffding 1963) to at most ``min(ngood, nsample)``, adding ``pmf(k)`` to ``F`` at each
    step; ``log pmf(k) = log C(ngood, k) + log C(nbad, nsample - k) - log C(ngood + nbad, nsample)``
    by ``gammaln`` (each pmf on its own, so a left tail below the smallest float does not zero the
    rest, as a ratio recursion started there would). The loop runs until no element moves: as many
    steps as the largest draw's distance from its start. A pmf's rounding is ``eps`` times the
    size of the ``gammaln`` terms (``~ngood log ngood``), so ``F`` differs from SciPy's (Boost) by about
    that and a draw from SciPy's ``ppf(u)`` only for ``u`` that close to a step of ``F``."""
    good, bad, sample = (ctx.cast(v, F64) for v in p)

    def lgam1(c, x):
        return c.add("gammaln", [c.add("add", [x, c.scalar(1.0, F64)])])

    total = ctx.add("add", [good, bad])
    # log(ngood!) + log(nbad!) - log C(ngood + nbad, nsample): the terms of log pmf(k) free of k
    offset = ctx.add("sub", [ctx.add("add", [lgam1(ctx, good), lgam1(ctx, bad)]),
                             ctx.add("sub", [lgam1(ctx, total), ctx.add("add", [lgam1(ctx, sample),
                                                                              lgam1(ctx, ctx.add("sub", [total, sample]))])])])
    # the walk starts at max(support bound, floor(mean - sqrt(20 nsample))): Hoeffding's bound (1963,
    # section 6, sampling without replacement) P(X <= mean - t) <= exp(-2 t^2 / nsample) puts at most
    # exp(-40) = 4.2e-18 of mass below it, under the rounding of F (and of u's 2^-53 grid)
    mean = ctx.add("div", [ctx.add("mul", [sample, good]), total])
    skip = ctx.add("floor", [ctx.add("sub", [mean, ctx.add("sqrt", [ctx.add("mul", [sample, ctx.scalar(20.0, F64)])])])])
    bound = ctx.add("maximum", [ctx.add("sub", [sample, bad]), ctx.scalar(0.0, F64)])
    start = ctx.add("maximum", [bound, ctx.add("where", [ctx.add("isnan", [skip]), bound, skip])])
    low = ctx.add("add", [start, zeros_like(ctx, u)])  # u's shape
    high = ctx.add("minimum", [good, sample])

    def pmf(c, k, q):
        g, b_, s_, off = q
        terms = c.add("add", [c.add("add", [lgam1(c, k), lgam1(c, c.add("sub", [g, k]))]),
                              c.add("add", [lgam1(c, c.add("sub", [s_, k])),
                                            lgam1(c, c.add("add", [c.add("sub", [b_, s_]), k]))])])
        return c.add("exp", [c.add("sub", [off, terms])])

    params = [good, bad, sample, offset]
    body = Body(ctx, "quantile")
    b = body.ctx
    body.input(TensorType(I64, ()), "i")
    k, f = body.input(low.type, "k"), body.input(low.type, "f")
    inner_u, inner_high = body.input(u.type, "u"), body.input(high.type, "high")
    inner = [body.input(v.type, f"p{i}") for i, v in enumerate(params)]
    up = b.add("and", [b.add("le", [f, inner_u]), b.add("lt", [k, inner_high])])
    k_next = b.add("add", [k, b.cast(up, F64)])
    f_next = b.add("add", [f, b.add("where", [up, pmf(b, k_next, inner), b.scalar(0.0, F64)])])
    moved = b.add("reduce_any", [up], {"axes": (), "keepdims": False})
    graph = body.finish([moved, k_next, f_next])
    loop = ctx.graph.create_node("loop", [ctx.scalar(SEARCH_STEPS, I64), low, pmf(ctx, low, params), u, high,
                                          *params], {"num_carried": 2, "has_condition": True},
                                 subgraphs={"body": graph})
    loop.origins = ctx.origins
    ctx.graph.append(loop)
    return ctx.cast(loop.outputs[0], I64)


def _multinomial(ctx, noise, p):
    """NumPy's ``multinomial(n, p)``: sequential conditional binomials over the categories,
    ``n_i ~ Binomial(n - sum_{j<i} n_j, p_i / (1 - sum_{j<i} p_j))`` from uniform ``u_i`` (the quantile
    search ``_binomial_from``; the ratio clipped to [0, 1] as the mass left rounds), ``i < k - 1``; the
    last count is the remainder (NumPy's ``random_multinomial``: ``p[-1]`` is not read). Counts are
    exact integers in float64 (below 2**53). ``noise`` is ``(..., k - 1)``; a loop over the categories."""
    n, prob = p
    n, prob = ctx.cast(n, F64), ctx.cast(prob, F64)
    last = prob.rank - 1
    k = int64_value(ctx, dim_of(ctx, prob, last))
    batch = ctx.add("slice", [ctx.add("shape", [noise]), ctx.i64([0]), ctx.i64([noise.rank - 1]), ctx.i64([1])],
                    {"axes": [0]})
    rem = ctx.add("expand", [n, batch])
    counts = ctx.add("expand", [ctx.scalar(0.0, F64), ctx.add("concat", [batch, ctx.add("unsqueeze", [k], {"axes": [0]})],
                                                               {"axis": 0})])
    cats = positions(ctx, prob, last)
    steps = ctx.add("maximum", [ctx.add("sub", [k, ctx.scalar(1, I64)]), ctx.scalar(0, I64)])

    def step(c, j, carried, invariant):
        rem_, mass, counts_ = carried
        noise_, prob_, cats_ = invariant
        zero = c.scalar(0.0, F64)
        jj = c.add("unsqueeze", [j], {"axes": [0]})
        u_j = c.add("squeeze", [c.add("gather", [noise_, jj], {"axis": noise_.rank - 1})], {"axes": [noise_.rank - 1]})
        p_j = c.add("squeeze", [c.add("gather", [prob_, jj], {"axis": prob_.rank - 1})], {"axes": [prob_.rank - 1]})
        left = c.add("sub", [c.scalar(1.0, F64), mass])
        ratio = c.add("where", [c.add("le", [p_j, zero]), zero,
                                c.add("where", [c.add("ge", [p_j, left]), c.scalar(1.0, F64), c.add("div", [p_j, left])])])
        drawn = c.cast(_binomial_from(c, u_j, rem_, ratio), F64)
        at_j = c.add("eq", [cats_, j])
        return [c.add("sub", [rem_, drawn]), c.add("add", [mass, p_j]),
                c.add("where", [at_j, c.add("unsqueeze", [drawn], {"axes": [drawn.rank]}), counts_])]

    rem, _, counts = run_steps(ctx, steps, [rem, zeros_like(ctx, rem), counts], [noise, prob, cats], step)
    at_last = ctx.add("eq", [cats, ctx.add("sub", [k, ctx.scalar(1, I64)])])
    counts = ctx.add("where", [at_last, ctx.add("unsqueeze", [rem], {"axes": [rem.rank]}), counts])
    return ctx.cast(counts, I64)


# bisection steps of the von Mises quantile: [-pi, pi] halved 64 times is 3.4e-19 wide, below float64's
# resolution of every quantile but those within 1e-19 of 0
VONMISES_BISECTIONS = 64


def _vonmises_terms(ctx, kappa):
    """The number of terms of the von Mises CDF series, ``ceil(28 + 10 sqrt(kappa))`` for the largest
    ``kappa`` (an int64 scalar): past it ``I_n(kappa) / I_0(kappa) < 1e-17`` (checked against SciPy's
    ``ive`` for kappa from 1 to 1e5; the ratio falls like ``exp(-n^2 / (2 kappa))``); it exceeds Hill's
    ``ceil(28 + kappa / 2 - 100 / (kappa + 5))`` (SciPy's, for kappa < 50) at every kappa below 50."""
    k = ctx.add("reduce_max", [ctx.add("reshape", [kappa, ctx.i64([-1])])], {"axes": (), "keepdims": False})
    # a NaN kappa counts as 0, an infinite one as 1e8 (100,028 terms, so the trip count stays finite; the
    # draws of an infinite kappa are unspecified: the recurrence is 1 / (0 + R) there)
    k = ctx.add("clip", [ctx.add("where", [ctx.add("isnan", [k]), ctx.scalar(0.0, F64), k]), ctx.scalar(0.0, F64),
                         ctx.scalar(1e8, F64)])
    t = ctx.add("ceil", [ctx.add("add", [ctx.scalar(28.0, F64), ctx.add("mul", [ctx.scalar(10.0, F64),
                                                                              ctx.add("sqrt", [k])])])])
    return ctx.cast(t, I64)


def _vonmises_cdf(c, x, kappa, terms):
    """The von Mises(0, kappa) CDF on ``[-pi, pi]`` (float64, ``x`` and ``kappa`` of one shape):
    ``1/2 + x / (2 pi) + sum_n I_n(kappa) sin(n x) / (n pi I_0(kappa))`` by Hill's backward recurrence
    (G. W. Hill, "Algorithm 518: Incomplete Bessel function I0. The von Mises distribution", ACM TOMS 3
    (1977) 279-284; SciPy's ``von_mises_cdf_series``): ``R_n = 1 / (2n / kappa + R_{n+1})`` is
    ``I_n / I_{n-1}`` (a continued fraction) and ``sin(n x), cos(n x)`` run down by the angle-difference
    formulas, from ``n = terms - 1``. SciPy switches to a normal approximation at kappa >= 50 (error
    ~1e-6 there); the series is kept at every kappa here (``_vonmises_terms`` terms), exact to an
    absolute ``~terms * eps``. Clipped to [0, 1]."""
    sin_x, cos_x = c.add("sin", [x]), c.add("cos", [x])
    p = c.cast(terms, F64)
    px = c.add("mul", [p, x])
    zeros = zeros_like(c, x)

    def step(b, j, carried, invariant):
        sn, cn, r, v = carried
        s_, co, kap, p_ = invariant
        n = b.add("sub", [b.add("sub", [p_, b.scalar(1.0, F64)]), b.cast(j, F64)])
        sn2 = b.add("sub", [b.add("mul", [sn, co]), b.add("mul", [cn, s_])])
        cn2 = b.add("add", [b.add("mul", [cn, co]), b.add("mul", [sn, s_])])
        r2 = b.add("reciprocal", [b.add("add", [b.add("div", [b.add("add", [n, n]), kap]), r])])
        return [sn2, cn2, r2, b.add("mul", [r2, b.add("add", [b.add("div", [sn2, n]), v])])]

    count = c.add("maximum", [c.add("sub", [terms, c.scalar(1, I64)]), c.scalar(0, I64)])
    *_, v = run_steps(c, count, [c.add("sin", [px]), c.add("cos", [px]), zeros, zeros],
                      [sin_x, cos_x, kappa, p], step)
    f = c.add("add", [c.add("add", [c.scalar(0.5, F64), c.add("mul", [x, c.scalar(1 / (2 * np.pi), F64)])]),
                      c.add("mul", [v, c.scalar(1 / np.pi, F64)])])
    return c.add("clip", [f, c.scalar(0.0, F64), c.scalar(1.0, F64)])


def _vonmises(ctx, u, p):
    """NumPy's ``vonmises(mu, kappa)``: the quantile ``x`` of ``u`` of von Mises(0, kappa) on
    ``[-pi, pi]`` by bisection on ``_vonmises_cdf`` (``VONMISES_BISECTIONS`` steps; each evaluates
    the series), then ``x + mu`` wrapped into ``[-pi, pi]`` as NumPy's ``random_vonmises`` does
    (``sign(r) (fmod(|r| + pi, 2 pi) - pi)``). Computed in float64 (the draw is rounded to its dtype
    last). One uniform a draw: an inverse CDF, not NumPy's rejection sampler (Best & Fisher 1979),
    whose number of uniforms is unbounded; kappa = 0 gives the uniform law on [-pi, pi]."""
    mu, kappa = (ctx.cast(v, F64) for v in p)
    u = ctx.cast(u, F64)
    zeros = zeros_like(ctx, u)
    kappa = ctx.add("add", [kappa, zeros])  # u's shape
    terms = _vonmises_terms(ctx, kappa)
    lo = ctx.add("add", [zeros, ctx.scalar(-np.pi, F64)])
    hi = ctx.add("add", [zeros, ctx.scalar(np.pi, F64)])

    def bisect(b, j, carried, invariant):
        lo_, hi_ = carried
        u_, kap, terms_ = invariant
        mid = b.add("mul", [b.add("add", [lo_, hi_]), b.scalar(0.5, F64)])
        below = b.add("le", [_vonmises_cdf(b, mid, kap, terms_), u_])
        return [b.add("where", [below, mid, lo_]), b.add("where", [below, hi_, mid])]

    lo, hi = run_steps(ctx, ctx.scalar(VONMISES_BISECTIONS, I64), [lo, hi], [u, kappa, terms], bisect)
    x = ctx.add("add", [ctx.add("mul", [ctx.add("add", [lo, hi]), ctx.scalar(0.5, F64)]), mu])
    m = ctx.add("sub", [ctx.add("mod", [ctx.add("add", [ctx.add("abs", [x]), ctx.scalar(np.pi, F64)]),
                                        ctx.scalar(2 * np.pi, F64)]), ctx.scalar(np.pi, F64)])
    return ctx.add("where", [ctx.add("lt", [x, ctx.scalar(0.0, F64)]), ctx.add("neg", [m]), m])


# -- permutations and choice without replacement: sort keys --------------------------------------------------
def _population(ctx, params, core, consts) -> tuple:
    """The population size of a permutation or choice: the value of a first parameter of core rank 0
    (``arange(a)``; its first element where ``size`` batches it: the draws share one core shape), else
    the first core axis of the array; static where the parameter's value (``consts``: PyTensor's constant
    values of the parameters, None where not constant) or its shape is known, the array's dim name
    where it is symbolic (so the noise's last dim is the population's)."""
    a = params[0]
    batch = a.rank - core[0]
    if core[0] == 0:
        known = consts[0]
        if known is not None and np.size(known):
            return int(np.ravel(known)[0]), ctx.i64([int(np.ravel(known)[0])])
        first = ctx.add("slice", [ctx.add("reshape", [ctx.cast(a, I64), ctx.i64([-1])]), ctx.i64([0]), ctx.i64([1]),
                                  ctx.i64([1])], {"axes": [0]})
        return None, first
    n = dim_of(ctx, a, batch)
    known = a.shape[batch] if isinstance(a.shape[batch], (int, str)) else None  # a symbolic dim keeps its name
    return known, ctx.add("reshape", [int64_value(ctx, n), ctx.i64([1])])


def _top_indices(ctx, keys: Value, count: Value | None) -> Value:
    """The indices of ``keys`` (its last axis) in decreasing key order, the first ``count`` of them
    (all when None): ``sort`` of the negated keys (stable: ties in index order)."""
    last = keys.rank - 1
    _, order = ctx.add_multi("sort", [ctx.add("neg", [keys])], {"axis": last})
    if count is None:
        return order
    return ctx.add("slice", [order, ctx.i64([0]), ctx.add("reshape", [count, ctx.i64([1])]), ctx.i64([1])],
                   {"axes": [last]})


def _take_population(ctx, a: Value, n_core: int, order: Value, what: str) -> Value:
    """The population's items at ``order`` (int64 ``(*B, m)``, indices into the population's ``n``
    items): ``order`` itself for a core-rank-0 ``a`` (``arange(a)``), else ``a``'s items along its first
    core axis, ``(*B, m, *rest)`` for ``a`` of shape ``(*batch, n, *rest)``. Without batch dims a
    ``gather`` of ``a``; with them ``a`` is broadcast to ``(*B, n, *rest)`` (ONNX ``Expand``: a batch
    that does not broadcast to ``B`` fails at run time, where PyTensor raises), flattened to
    ``(prod(B) n, *rest)`` and gathered at ``order + n * (flat batch index)`` (NumPy's
    ``take_along_axis`` of each batch member's own order, as NumPy's per-draw loop)."""
    if n_core == 0:
        return order
    if a.rank == n_core and order.rank == 1:
        return ctx.add("gather", [a, order], {"axis": 0})
    nb = order.rank - 1
    shape_a = ctx.add("shape", [a])
    core_shape = ctx.add("slice", [shape_a, ctx.i64([a.rank - n_core]), ctx.i64([a.rank]), ctx.i64([1])],
                         {"axes": [0]})  # (n, *rest)
    batch_shape = ctx.add("slice", [ctx.add("shape", [order]), ctx.i64([0]), ctx.i64([nb]), ctx.i64([1])],
                          {"axes": [0]})
    n = ctx.add("slice", [core_shape, ctx.i64([0]), ctx.i64([1]), ctx.i64([1])], {"axes": [0]})
    rest = ctx.add("slice", [core_shape, ctx.i64([1]), ctx.i64([n_core]), ctx.i64([1])], {"axes": [0]})
    whole = ctx.add("expand", [a, ctx.add("concat", [batch_shape, core_shape], {"axis": 0})])
    members = ctx.add("reduce_prod", [batch_shape], {"axes": (), "keepdims": True})  # prod(B), shape (1,)
    items = ctx.add("mul", [members, n])
    flat = ctx.add("reshape", [whole, ctx.add("concat", [items, rest], {"axis": 0})])
    scalar = lambda v: ctx.add("reshape", [v, ctx.i64([])])  # noqa: E731
    starts = ctx.add("range", [ctx.scalar(0, I64), scalar(items), scalar(n)])  # n * (flat batch index)
    starts = ctx.add("reshape", [starts, ctx.add("concat", [batch_shape, ctx.i64([1])], {"axis": 0})])
    return ctx.add("gather", [flat, ctx.add("add", [order, starts])], {"axis": 0})


def _permutation(ctx, u, p, core):
    """NumPy's ``permutation(x)``: ``arange(x)`` (a scalar ``x``) or ``x`` along its first axis in the
    order of decreasing iid uniforms ``u`` (one per item): the ranks of iid continuous keys are a uniform
    random permutation. Float64 keys; ties (probability ~n^2 2^-54) fall in index order."""
    (x,) = p
    return _take_population(ctx, x, core[0], _top_indices(ctx, u, None), "permutation")


def _choice_without_replacement(ctx, u, p, core):
    """NumPy's ``choice(a, size, replace=False, p)``: the items of the ``k = prod(size)`` largest keys,
    in decreasing key order, reshaped to ``size`` (then ``a``'s other dims). Without ``p`` the key is
    the uniform (the first k of a uniform random permutation: a uniform ordered sample); with ``p`` it
    is ``log(u) / p_i`` (the log of ``u^(1/p_i)``; Efraimidis & Spirakis, "Weighted random sampling with
    a reservoir", Inf. Process. Lett. 97 (2006) 181-185: the decreasing order of the keys is successive
    sampling proportional to ``p`` among the items left, NumPy's law). An item of ``p_i = 0`` has key
    ``-inf``: it comes after every item of positive ``p`` (NumPy raises where ``size`` exceeds their
    number; here they fill the rest in index order)."""
    a, *probs, core_shape = p
    shape = ctx.cast(core_shape, I64)
    if shape.rank > 1:  # broadcast with the batch dims: every member has the same core shape, take the first
        k = shape.type.shape[-1]
        shape = ctx.add("gather", [ctx.add("reshape", [shape, ctx.i64([-1, k])]), ctx.i64(0)], {"axis": 0})
    count = ctx.add("reduce_prod", [shape], {"axes": (), "keepdims": False})  # 1 for size=() or None
    keys = u
    if probs:
        keys = ctx.add("div", [ctx.add("log", [_positive(ctx, u)]), ctx.cast(probs[0], F64)])
    picked = _take_population(ctx, a, core[0], _top_indices(ctx, keys, count), "choice without replacement")
    batch = ctx.add("slice", [ctx.add("shape", [u]), ctx.i64([0]), ctx.i64([u.rank - 1]), ctx.i64([1])],
                    {"axes": [0]})
    rest = ctx.add("slice", [ctx.add("shape", [picked]), ctx.i64([u.rank]), ctx.i64([picked.rank]), ctx.i64([1])],
                   {"axes": [0]})
    return ctx.add("reshape", [picked, ctx.add("concat", [batch, shape, rest], {"axis": 0})])


# PyTensor RV class -> Transform; discrete draws take float64 noise. Keyed by the exact class
# (a subclass may reparametrize its distribution).
TRANSFORMS = {
    rb.NormalRV: Transform(NORMAL, _normal, (0, 0)),
    rb.LogNormalRV: Transform(NORMAL, _lognormal, (0, 0)),
    rb.HalfNormalRV: Transform(NORMAL, _halfnormal, (0, 0)),
    rb.UniformRV: Transform(UNIFORM, _uniform, (0, 0)),
    rb.TriangularRV: Transform(UNIFORM, _triangular, (0, 0, 0)),
    rb.ExponentialRV: Transform(UNIFORM, _exponential, (0,)),
    rb.TruncExponentialRV: Transform(UNIFORM, _truncexpon, (0, 0, 0)),
    rb.LogisticRV: Transform(UNIFORM, _logistic, (0, 0)),
    rb.GumbelRV: Transform(UNIFORM, _gumbel, (0, 0)),
    rb.LaplaceRV: Transform(UNIFORM, _laplace, (0, 0)),
    rb.CauchyRV: Transform(UNIFORM, _cauchy, (0, 0)),
    rb.HalfCauchyRV: Transform(UNIFORM, _halfcauchy, (0, 0)),
    rb.ParetoRV: Transform(UNIFORM, _pareto, (0, 0)),
    rb.WeibullRV: Transform(UNIFORM, _weibull, (0,)),
    rb.GammaRV: Transform(UNIFORM, _gamma, (0, 0)),
    rb.InvGammaRV: Transform(UNIFORM, _invgamma, (0, 0)),
    rb.GenGammaRV: Transform(UNIFORM, _gengamma, (0, 0, 0)),
    rb.BetaRV: Transform(UNIFORM, _beta, (0, 0)),
    rb.StudentTRV: Transform(UNIFORM, _student_t, (0, 0, 0)),
    rb.WaldRV: Transform(UNIFORM, _wald, (0, 0), uniforms=3),
    rb.BernoulliRV: Transform(UNIFORM, _bernoulli, (0,)),
    rb.IntegersRV: Transform(UNIFORM, _integers, (0, 0)),
    rb.GeometricRV: Transform(UNIFORM, _geometric, (0,)),
    rb.PoissonRV: Transform(UNIFORM, _poisson, (0,)),
    rb.BinomialRV: Transform(UNIFORM, _binomial, (0, 0)),
    rb.NegBinomialRV: Transform(UNIFORM, _negative_binomial, (0, 0)),
    rb.BetaBinomialRV: Transform(UNIFORM, _beta_binomial, (0, 0, 0), uniforms=2),
    rb.CategoricalRV: Transform(UNIFORM, _categorical, (1,)),
    rb.VonMisesRV: Transform(UNIFORM, _vonmises, (0, 0)),
    rb.PermutationRV: Transform(UNIFORM, _permutation, None, noise_core=_population, float64_noise=True),
    rb.ChoiceWithoutReplacement: Transform(UNIFORM, _choice_without_replacement, None, noise_core=_population,
                                           float64_noise=True),
    rb.HyperGeometricRV: Transform(UNIFORM, _hypergeometric, (0, 0, 0)),
    rb.MultinomialRV: Transform(UNIFORM, _multinomial, (0, 1), core_dim_of=1, noise_core_less=1),
    rb.MvNormalRV: Transform(NORMAL, _mvnormal, (1, 2), core_dim_of=0, takes_op=True),
    rb.DirichletRV: Transform(UNIFORM, _dirichlet, (1,), uniforms=2, core_dim_of=0),
}
