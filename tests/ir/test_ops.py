"""Every op of ``ir.ops``: its type rule and its NumPy semantics on known
numbers, and the OpErrors its rule raises. Table-driven: one line per case.

An input is a NumPy array (a graph constant, so shape-reading rules see its
value) or a type string such as ``"f32[N,3]"`` (a graph input)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ir import DType, Graph, OpError
from ir.interpreter import evaluate
from ir.ops import all_ops
from ir.parser import parse_type
from ir.types import TensorType
from ir.verifier import verify

nan, inf, e, pi = math.nan, math.inf, math.e, math.pi


def f32(*v): return np.array(v, np.float32)
def f64(*v): return np.array(v, np.float64)
def i32(*v): return np.array(v, np.int32)
def i64(*v): return np.array(v, np.int64)
def u8(*v): return np.array(v, np.uint8)
def b(*v): return np.array(v, bool)


def a32(v): return np.array(v, np.float32)
def a64(v): return np.array(v, np.float64)


M = f32([1, 2], [3, 4])  # a 2x2 matrix
BM = b([True, False], [True, True])

# op, attributes, inputs, expected outputs. Float results compare with rtol 1e-6.
EVAL = [
    ("neg", {}, [f32(1, -2, 0)], [f32(-1, 2, -0.0)]),
    ("abs", {}, [i32(-3, 0, 4)], [i32(3, 0, 4)]),
    ("sign", {}, [f32(-2, 0, 3, nan)], [f32(-1, 0, 1, nan)]),
    ("exp", {}, [f32(0, 1, -inf)], [f32(1, e, 0)]),
    ("exp2", {}, [f64(3, -1)], [f64(8, 0.5)]),
    ("expm1", {}, [f64(0, 1e-10)], [f64(0, 1.00000000005e-10)]),
    ("log", {}, [f32(1, e, 0, -1)], [f32(0, 1, -inf, nan)]),
    ("log2", {}, [f32(8, 0.25)], [f32(3, -2)]),
    ("log10", {}, [f64(1000, 0.01)], [f64(3, -2)]),
    ("log1p", {}, [f64(0, 1e-10)], [f64(0, 9.9999999995e-11)]),
    ("sqrt", {}, [f32(4, 2.25, -1)], [f32(2, 1.5, nan)]),
    ("reciprocal", {}, [f32(4, -0.5, 0)], [f32(0.25, -2, inf)]),
    ("sin", {}, [f64(0, pi / 2)], [f64(0, 1)]),
    ("cos", {}, [f64(0, pi)], [f64(1, -1)]),
    ("tan", {}, [f64(0, pi / 4)], [f64(0, 1)]),
    ("asin", {}, [f64(0, 1)], [f64(0, pi / 2)]),
    ("acos", {}, [f64(1, -1)], [f64(0, pi)]),
    ("atan", {}, [f64(1, inf)], [f64(pi / 4, pi / 2)]),
    ("sinh", {}, [f64(0, 1)], [f64(0, (e - 1 / e) / 2)]),
    ("cosh", {}, [f64(0, 1)], [f64(1, (e + 1 / e) / 2)]),
    ("tanh", {}, [f32(0, inf, -inf)], [f32(0, 1, -1)]),
    ("asinh", {}, [f64(0, (e - 1 / e) / 2)], [f64(0, 1)]),
    ("acosh", {}, [f64(1, (e + 1 / e) / 2)], [f64(0, 1)]),
    ("atanh", {}, [f64(0, 1)], [f64(0, inf)]),
    ("erf", {}, [f64(0, inf, 1)], [f64(0, 1, 0.8427007929497149)]),
    ("gammaln", {}, [f64(1, 2, 0, -inf, -2)], [f64(0, 0, inf, inf, inf)]),
    ("gamma", {}, [f64(5, 0.5, -1)], [f64(24, np.sqrt(np.pi), nan)]),
    ("psi", {}, [f64(1, 0, -1)], [f64(-np.euler_gamma, -inf, nan)]),
    ("trigamma", {}, [f64(1, inf)], [f64(np.pi ** 2 / 6, 0)]),
    # polygamma(2, 1) = -2 zeta(3); polygamma(3, 1) = 6 zeta(4) = pi^4 / 15; a pole at -1; mpmath's value at -2.5
    ("polygamma", {"n": 2}, [f64(1, -1, inf)], [f64(-2 * 1.2020569031595942, -inf, -0.0)]),
    ("polygamma", {"n": 3}, [f64(1, -2.5)], [f64(np.pi ** 4 / 15, 194.74787622)]),
    # a run-time order: psi(1) = -euler_gamma, 2 and 3 as above, NaN for a negative or non-integer order
    ("polygamma_order", {}, [f64(0, 2, 3, -1, 2.5), f64(1, 1, -2.5, 1, 1)],
     [f64(-0.5772156649015329, -2 * 1.2020569031595942, 194.74787622, nan, nan)]),
    ("erfc", {}, [f64(0, inf, -inf)], [f64(1, 0, 2)]),
    ("erfcx", {}, [f64(0, inf)], [f64(1, 0)]),
    ("erfinv", {}, [f64(0.5, 1, 2)], [f64(0.4769362762044699, inf, nan)]),
    ("erfcinv", {}, [f64(0.5, 0, 2)], [f64(0.4769362762044699, inf, -inf)]),
    ("i0", {}, [f64(0, inf, -inf)], [f64(1, inf, inf)]),
    ("i1", {}, [f64(0, inf, -inf)], [f64(0, inf, -inf)]),
    ("i0e", {}, [f64(0, inf)], [f64(1, 0)]),
    ("i1e", {}, [f64(0, inf)], [f64(0, 0)]),
    ("i2e", {}, [f64(0, inf, -inf)], [f64(0, 0, 0)]),
    ("atan2", {}, [f64(1, 0, 0), f64(1, -1, 1)], [f64(np.pi / 4, np.pi, 0)]),
    ("gammainc", {}, [f64(1, 2, 1, -1), f64(1, 0, inf, 1)], [f64(1 - 1 / e, 0, 1, nan)]),
    ("gammaincc", {}, [f64(1, 2, 1, -1), f64(1, 0, inf, 1)], [f64(1 / e, 1, 0, nan)]),
    ("betainc", {}, [f64(1, 2, 0, 1, -1), f64(1, 1, 1, 0, 1), f64(0.25, 0.5, 0.5, 0.5, 0.5)],
     [f64(0.25, 0.25, 1, 0, nan)]),
    # I_x(1, 1) = x, I_x(2, 1) = x^2, I_x(1, 2) = 1 - (1 - x)^2
    ("betaincinv", {}, [f64(1, 2, 1, 2, -1), f64(1, 1, 2, 3, 1), f64(0.25, 0.25, 0.75, 0, 0.5)],
     [f64(0.25, 0.5, 0.5, 0, nan)]),
    ("gammaincinv", {}, [f64(1, 1, 1, 1, 0, 1e-300), f64(1 - 1 / e, 0, 1, 1.5, 0.5, -0.1)],
     [f64(1, 0, inf, nan, nan, nan)]),
    ("gammainccinv", {}, [f64(1, 1, 1, -1, 5e-324), f64(1 / e, 0, 1, 0.5, 0.5)], [f64(1, inf, 0, nan, nan)]),
    # T(0, a) = atan(a) / (2 pi), T(h, 0) = 0, T(h, -a) = -T(h, a)
    ("owens_t", {}, [f64(0, 0, 0, 2, nan), f64(1, -1, inf, 0, 1)], [f64(0.125, -0.125, 0.25, 0, nan)]),
    # 2F1(1, 1; 2; -1) = log 2, 2F1(1/2, 1/2; 3/2; 1/4) = 2 asin(1/2), 2F1(-2, 1; 1; z) = (1 - z)^2, z = 0
    ("hyp2f1", {}, [f64(1, 0.5, -2, 1, 1), f64(1, 0.5, 1, 2, 1), f64(2, 1.5, 1, 3, 1), f64(-1, 0.25, 0.5, 0, nan)],
     [f64(math.log(2), math.pi / 3, 0.25, 1, nan)]),
    ("j0", {}, [f64(0, inf, -inf, nan)], [f64(1, 0, 0, nan)]),
    ("j1", {}, [f64(0, -0.0, inf, nan)], [f64(0, -0.0, 0, nan)]),
    # I_1/2(x) = sqrt(2 / (pi x)) sinh(x), K_1/2(x) = sqrt(pi / (2 x)) exp(-x) (DLMF 10.39.1, 10.39.2)
    ("ive", {}, [f64(0, 1, 0.5, 0.5), f64(0, 0, 2, inf)], [f64(1, 0, math.sqrt(1 / (4 * math.pi)) * (1 - e ** -4), 0)]),
    ("iv", {}, [f64(0, 0.5, 2, 0.5), f64(0, 2, -inf, inf)], [f64(1, math.sqrt(1 / math.pi) * math.sinh(2), inf, inf)]),
    ("kve", {}, [f64(0.5, -0.5, 0.5), f64(2, 2, inf)], [f64(math.sqrt(math.pi / 4), math.sqrt(math.pi / 4), 0)]),
    # J_1/2(x) = sqrt(2 / (pi x)) sin(x), J_-1/2(x) = sqrt(2 / (pi x)) cos(x) (DLMF 10.16.1)
    ("jv", {}, [f64(0.5, -0.5, 0, -3, 2.5, 0.5), f64(math.pi / 2, math.pi, 0, 0, -1, inf)],
     [f64(2 / math.pi, -math.sqrt(2) / math.pi, 1, -0.0, nan, 0)]),
    ("layer_norm", {"epsilon": 0.0}, [np.array([[1.0, 3.0], [5.0, 5.0 + 2 ** -20]]), f64(1, 2), f64(0, 1)],
     [np.array([[-1.0, 3.0], [-1.0, 3.0]])]),
    ("rms_norm", {"epsilon": 0.0}, [np.array([[3.0, 4.0], [0.0, -2.0]]), f64(1, 2)],
     [np.array([[3 / math.sqrt(12.5), 8 / math.sqrt(12.5)], [0.0, -2.0 * math.sqrt(2)]])]),
    ("sigmoid", {}, [f32(0, inf, -inf)], [f32(0.5, 1, 0)]),
    ("softplus", {}, [f64(0, -inf, 1000)], [f64(math.log(2), 0, 1000)]),
    ("floor", {}, [f32(-1.5, 1.5, -0.0)], [f32(-2, 1, -0.0)]),
    ("ceil", {}, [f32(-1.5, 1.5)], [f32(-1, 2)]),
    ("trunc", {}, [f32(-1.7, 1.7)], [f32(-1, 1)]),
    ("round_half_even", {}, [f32(0.5, 1.5, 2.5, -0.5, -2.5, 0.4)], [f32(0, 2, 2, -0.0, -2, 0)]),
    ("round_half_away", {}, [f32(0.5, 1.5, 2.5, -0.5, -2.5, 0.4)], [f32(1, 2, 3, -1, -3, 0)]),
    ("invert", {}, [b(True, False)], [b(False, True)]),
    ("invert", {}, [u8(0, 5)], [u8(255, 250)]),
    ("isnan", {}, [f32(nan, 1, inf)], [b(True, False, False)]),
    ("isinf", {}, [f64(nan, -inf, inf, 1)], [b(False, True, True, False)]),
    ("add", {}, [f32([1], [2]), f32(10, 20, 30)], [f32([11, 21, 31], [12, 22, 32])]),
    ("sub", {}, [u8(1), u8(2)], [u8(255)]),  # wraps like NumPy
    ("mul", {}, [i64(3, -4), i64(5)], [i64(15, -20)]),
    ("div", {}, [f32(1, -1, 0), f32(4, 0, 0)], [f32(0.25, -inf, nan)]),
    ("floor_div", {}, [i64(7, -7, 7, -7), i64(2, 2, -2, -2)], [i64(3, -4, -4, 3)]),
    ("floor_div", {}, [f64(7, -7), f64(2, 2)], [f64(3, -4)]),
    ("mod", {}, [i64(7, -7, 7), i64(3, 3, -3)], [i64(1, 2, -2)]),
    ("mod", {}, [f64(-1, 5.5), f64(3, 2)], [f64(2, 1.5)]),
    ("pow", {}, [i64(2, 3), i64(3, 2)], [i64(8, 9)]),
    ("pow", {}, [f32(4, -8), f32(0.5, 2)], [f32(2, 64)]),
    ("maximum", {}, [f32(1, nan, 3), f32(2, 0, nan)], [f32(2, nan, nan)]),
    ("minimum", {}, [i32(1, 5), i32(2, 0)], [i32(1, 0)]),
    ("and", {}, [b(True, True, False), b(True, False, False)], [b(True, False, False)]),
    ("or", {}, [u8(0b1100), u8(0b1010)], [u8(0b1110)]),
    ("xor", {}, [i32(0b1100), i32(0b1010)], [i32(0b0110)]),
    ("shift_right", {}, [u8(0b1100, 255, 255), u8(2, 7, 9)], [u8(0b11, 1, 0)]),
    ("eq", {}, [f32(1, nan, 2), f32(1, nan, 3)], [b(True, False, False)]),
    ("ne", {}, [f32(1, nan), f32(1, nan)], [b(False, True)]),
    ("lt", {}, [i64(1, 2, 3), i64(2)], [b(True, False, False)]),
    ("le", {}, [i64(1, 2, 3), i64(2)], [b(True, True, False)]),
    ("gt", {}, [f32(1, 2, nan), f32(1.5)], [b(False, True, False)]),
    ("ge", {}, [b(True, False), b(True, True)], [b(True, False)]),
    ("clip", {}, [f32(-1, 5, 2, nan), f32(0), f32(3)], [f32(0, 3, 2, nan)]),
    ("where", {}, [b([True], [False]), f32(1, 2), f32(-1)], [f32([1, 2], [-1, -1])]),
    ("cast", {"to": DType.INT32}, [f32(1.7, -1.7, 0.2)], [i32(1, -1, 0)]),
    ("cast", {"to": DType.BOOL}, [f64(0, 2, nan)], [b(False, True, True)]),
    ("cast", {"to": DType.FLOAT16}, [i64(3, 70000)], [np.array([3, np.inf], np.float16)]),
    ("reduce_sum", {"axes": [1]}, [M], [f32(3, 7)]),
    ("reduce_sum", {"axes": [], "keepdims": True}, [i64([1, 2], [3, 4])], [i64([10])]),
    ("reduce_prod", {}, [M], [np.float32(24)]),
    ("reduce_max", {"axes": [0], "keepdims": True}, [f32([1, nan], [3, 0])], [f32([3, nan])]),
    ("reduce_min", {"axes": [-1]}, [M], [f32(1, 3)]),
    ("reduce_all", {"axes": [1]}, [BM], [b(False, True)]),
    ("reduce_any", {"axes": [0]}, [BM], [b(True, True)]),
    ("argmax", {"axis": 1}, [f32([1, 3, 3], [5, 0, 5])], [i64(1, 0)]),
    ("argmin", {"axis": 0, "keepdims": True}, [i32([4, 1], [2, 1])], [i64([1, 0])]),
    ("cumsum", {"axis": 0}, [M], [f32([1, 2], [4, 6])]),
    ("cumprod", {"axis": -1}, [i64([1, 2, 3])], [i64([1, 2, 6])]),
    # stable: the tied 1s keep index order, NaN last, -0.0 and 0.0 tie
    ("sort", {"axis": -1}, [f32([1, nan, -0.0, 1, 0, -inf])],
     [f32([-inf, -0.0, 0, 1, 1, nan]), i64([5, 2, 4, 0, 3, 1])]),
    ("softmax", {"axis": 0}, [f64(0, math.log(3))], [f64(0.25, 0.75)]),
    ("log_softmax", {"axis": 0}, [f64(1000, 1000 + math.log(3))], [f64(math.log(0.25), math.log(0.75))]),
    ("matmul", {}, [M, f32(1, 1)], [f32(3, 7)]),
    ("matmul", {}, [np.ones((2, 1, 2, 3), np.float32), np.ones((3, 3, 1), np.float32)],
     [np.full((2, 3, 2, 1), 3, np.float32)]),
    ("reshape", {}, [i32(0, 1, 2, 3, 4, 5), i64(-1, 3)], [i32([0, 1, 2], [3, 4, 5])]),
    ("transpose", {"perm": [1, 0]}, [M], [f32([1, 3], [2, 4])]),
    ("squeeze", {"axes": [0, -1]}, [f32([[1], [2]])], [f32(1, 2)]),
    ("unsqueeze", {"axes": [0, -1]}, [f32(1, 2)], [f32([[1], [2]])]),
    ("expand", {}, [f32([1], [2]), i64(2, 1, 3)], [np.broadcast_to(f32([1], [2]), (2, 2, 3))]),
    ("concat", {"axis": 1}, [M, f32([5], [6])], [f32([1, 2, 5], [3, 4, 6])]),
    ("split", {"axis": 0, "num_outputs": 2}, [f32(1, 2, 3), i64(1, 2)], [f32(1), f32(2, 3)]),
    ("slice", {"axes": [0]}, [i64(0, 1, 2, 3, 4), i64(-1), i64(np.iinfo(np.int64).min), i64(-2)],
     [i64(4, 2, 0)]),
    ("slice", {"axes": [1, 0]}, [M, i64(1, 0), i64(5, 1), i64(1, 1)], [f32([2])]),
    ("gather", {"axis": 1}, [M, i64(-1, 0, 0)], [f32([2, 1, 1], [4, 3, 3])]),
    ("gather_nd", {}, [M, i64([1, 0], [0, 1])], [f32(3, 2)]),
    ("scatter_nd", {}, [f32(0, 0, 0), i64([2], [0]), f32(5, 6)], [f32(6, 0, 5)]),
    ("scatter_nd", {"reduction": "add"}, [f32(1, 1, 1), i64([2], [2]), f32(5, 6)], [f32(1, 1, 12)]),
    ("shape", {}, [np.zeros((2, 0, 3), bool)], [i64(2, 0, 3)]),
    ("range", {}, [np.int64(5), np.int64(0), np.int64(-2)], [i64(5, 3, 1)]),
    ("range", {}, [np.float32(0), np.float32(1), np.float32(0.25)], [f32(0, 0.25, 0.5, 0.75)]),
    ("nonzero", {}, [i32([0, 7], [3, 0])], [i64([0, 1], [1, 0])]),
    ("trilu", {"upper": True, "k": 1}, [f32([1, nan], [3, 4])], [f32([0, nan], [0, 0])]),
    ("trilu", {"upper": False, "k": 0}, [f32([1, nan], [nan, 4])], [f32([1, 0], [nan, 4])]),
    # neural-network ops (ir/ops/nn.py)
    ("relu", {}, [f32(-1, 0, 2, nan)], [f32(0, 0, 2, nan)]),
    ("relu", {}, [i32(-3, 4)], [i32(0, 4)]),
    ("silu", {}, [f64(0, 1)], [f64(0, 0.7310585786300049)]),
    ("hard_swish", {}, [f32(-4, 0, 1.5, 4, nan)], [f32(-0.0, 0, 1.125, 4, nan)]),
    ("leaky_relu", {"alpha": 0.5}, [f32(-2, 3, -0.0)], [f32(-1, 3, -0.0)]),
    ("hard_sigmoid", {}, [f32(-5, 0, 1, 5)], [f32(0, 0.5, 0.7, 1)]),
    ("gelu", {}, [f64(0, 1)], [f64(0, 0.8413447460685429)]),
    ("gelu", {"approximate": "tanh"}, [f64(1)], [f64(0.8411919906082768)]),
    ("conv", {}, [np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3), a32([[[[1, 0], [0, 0]]]]), f32(10)],
     [a32([[[[10, 11], [13, 14]]]])]),  # cross-correlation: the kernel picks the window's first element
    ("conv", {"flip": True}, [np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3), a32([[[[1, 0], [0, 0]]]])],
     [a32([[[[4, 5], [7, 8]]]])]),  # flipped: it picks the last one
    ("conv", {"group": 2, "strides": [2], "pads": [0, 1]}, [f32([1, 2, 3], [4, 5, 6]).reshape(1, 2, 3),
                                                           a32([[[1]], [[-1]]])], [a32([[[1, 3], [-4, -6]]])]),
    ("convolve2d", {"full": True}, [a64([[1]]), a64([[1, 2], [3, 4]])], [a64([[1, 2], [3, 4]])]),
    ("convolve2d", {}, [a64([[1, 2, 3]]), a64([[1, 1]])], [a64([[3, 5]])]),
    ("convolve2d", {}, [a64([[1, 1]]), a64([[[1, 2, 3]], [[0, 1, 0]]])], [a64([[[3, 5]], [[1, 1]]])]),  # swapped
    ("pad", {"pads": [1, 2]}, [f32(1, 2), np.float32(9)], [f32(9, 1, 2, 9, 9)]),
    ("max_pool", {"kernel": [2]}, [a32([[[1, 3, 2, 5]]])], [a32([[[3, 3, 5]]])]),
    ("max_pool", {"kernel": [2], "pads": [1, 0]}, [a32([[[-1, -3, 2, 5]]])], [a32([[[-1, -1, 2, 5]]])]),
    ("avg_pool", {"kernel": [2], "strides": [2], "pads": [1, 1]}, [a32([[[1, 3, 2, 5]]])], [a32([[[1, 2.5, 5]]])]),
    ("avg_pool", {"kernel": [2], "strides": [2], "pads": [1, 1], "count_include_pad": True}, [a32([[[1, 3, 2, 5]]])],
     [a32([[[0.5, 2.5, 2.5]]])]),
    ("global_avg_pool", {}, [f32([[1, 2], [3, 5]]).reshape(1, 2, 2)], [a32([[[1.5], [4]]])]),
    ("global_max_pool", {}, [np.array([[[[1, 7], [3, 5]]]], np.int32)], [np.array([[[[7]]]], np.int32)]),
    ("batch_norm", {"epsilon": 0.0}, [a32([[[1], [4]]]), f32(2, 3), f32(0, 1), f32(1, 2), f32(4, 1)],
     [a32([[[0], [7]]])]),
    ("resize_nearest", {"scales": [2, 2]}, [np.array([[1, 2]], np.int32)], [i32([1, 1, 2, 2], [1, 1, 2, 2])]),
    ("gemm", {"alpha": 2.0, "beta": 3.0}, [M, f32([1, 0], [0, 1]), f32(1)], [f32([5, 7], [9, 11])]),
    ("gemm", {"trans_a": True}, [M, f32([1, 0], [0, 1]), f32(0)], [f32([1, 3], [2, 4])]),
    ("flatten", {"axis": 1}, [np.arange(8, dtype=np.float32).reshape(2, 2, 2)],
     [np.arange(8, dtype=np.float32).reshape(2, 4)]),
    # random ops: the reference draws from numpy.random.default_rng(seed) (ir/ops/random.py)
    ("random_uniform", {"dtype": DType.FLOAT32, "seed": 5}, [np.array([2, 3], np.int64)],
     [np.random.default_rng(5).random((2, 3), dtype=np.float32)]),
    ("random_normal", {"dtype": DType.FLOAT64, "seed": 9}, [np.array([4], np.int64)],
     [np.random.default_rng(9).standard_normal((4,))]),
]

# op, attributes, inputs, expected output types: rules on symbolic and unknown dims.
TYPES = [
    ("add", {}, ["f32[N,1]", "f32[3]"], ["f32[N,3]"]),
    ("add", {}, ["f32[N]", "f32[M]"], ["f32[?]"]),
    ("mul", {}, ["i64[1,N]", "i64[4,1]"], ["i64[4,N]"]),
    ("lt", {}, ["f32[N]", "f32[]"], ["bool[N]"]),
    ("where", {}, ["bool[N,1]", "f32[K]", "f32[]"], ["f32[N,K]"]),
    ("cast", {"to": DType.UINT8}, ["f32[?,2]"], ["u8[?,2]"]),
    ("isnan", {}, ["f16[N]"], ["bool[N]"]),
    ("reduce_max", {"axes": [0, 2]}, ["f32[A,B,C]"], ["f32[B]"]),
    ("reduce_sum", {}, ["f32[A,B]"], ["f32[]"]),
    ("argmin", {"axis": -1, "keepdims": True}, ["f32[A,B]"], ["i64[A,1]"]),
    ("softmax", {"axis": 1}, ["f32[A,B]"], ["f32[A,B]"]),
    ("matmul", {}, ["f32[B,N,K]", "f32[K,M]"], ["f32[B,N,M]"]),
    ("matmul", {}, ["f32[K]", "f32[B,K,M]"], ["f32[B,M]"]),
    ("reshape", {}, ["f32[N,4]", "i64[3]"], ["f32[?,?,?]"]),
    ("reshape", {}, ["f32[N,4]", i64(-1, 2)], ["f32[2*N,2]"]),
    ("transpose", {"perm": [2, 0, 1]}, ["f32[A,B,C]"], ["f32[C,A,B]"]),
    ("squeeze", {"axes": [1]}, ["f32[A,?,C]"], ["f32[A,C]"]),
    ("unsqueeze", {"axes": [1, 3]}, ["f32[A,B]"], ["f32[A,1,B,1]"]),
    ("expand", {}, ["f32[N,1]", "i64[2]"], ["f32[?,?]"]),
    ("expand", {}, ["f32[N,1]", i64(1, 4)], ["f32[N,4]"]),
    ("concat", {"axis": 0}, ["f32[A,3]", "f32[2,3]"], ["f32[A+2,3]"]),
    ("concat", {"axis": 1}, ["f32[A,3]", "f32[A,2]"], ["f32[A,5]"]),
    ("split", {"axis": 1, "num_outputs": 2}, ["f32[N,5]", "i64[2]"], ["f32[N,?]", "f32[N,?]"]),
    ("split", {"axis": 1, "num_outputs": 2}, ["f32[N,5]", i64(2, 3)], ["f32[N,2]", "f32[N,3]"]),
    ("slice", {"axes": [1]}, ["f32[N,8]", "i64[1]", "i64[1]", "i64[1]"], ["f32[N,?]"]),
    ("slice", {"axes": [1]}, ["f32[N,8]", i64(1), i64(-1), i64(2)], ["f32[N,3]"]),
    ("gather", {"axis": 0}, ["f32[V,D]", "i64[B,T]"], ["f32[B,T,D]"]),
    ("gather_nd", {}, ["f32[A,B,C]", "i64[K,2]"], ["f32[K,C]"]),
    ("scatter_nd", {}, ["f32[A,B]", "i64[K,1]", "f32[K,B]"], ["f32[A,B]"]),
    ("shape", {}, ["u8[A,?,3]"], ["i64[3]"]),
    ("range", {}, ["i32[]", "i32[]", "i32[]"], ["i32[?]"]),
    ("nonzero", {}, ["bool[A,B]"], ["i64[2,?]"]),
    ("conv", {"group": 2, "strides": [2, 2], "pads": [1, 1, 1, 1]}, ["f32[N,4,9,9]", "f32[8,2,3,3]", "f32[8]"],
     ["f32[N,8,5,5]"]),
    ("convolve2d", {}, ["f32[B,1,5,6]", "f32[4,3,3]"], ["f32[B,4,3,4]"]),
    ("convolve2d", {"full": True}, ["f32[B,1,5,6]", "f32[4,3,3]"], ["f32[B,4,7,8]"]),
    ("max_pool", {"kernel": [2, 2], "strides": [2, 2]}, ["f32[N,C,8,8]"], ["f32[N,C,4,4]"]),
    ("global_avg_pool", {}, ["f32[N,C,H,W]"], ["f32[N,C,1,1]"]),
    ("flatten", {"axis": 1}, ["f32[N,3,4]"], ["f32[N,12]"]),
    ("gemm", {"trans_b": True}, ["f32[M,K]", "f32[N,K]", "f32[N]"], ["f32[M,N]"]),
]

# op, attributes, inputs, the OpError message it raises.
ERRORS = [
    ("add", {}, ["f32[2]", "f32[3]"], "add: cannot broadcast dims 2 and 3"),
    ("add", {}, ["f32[2]", "i32[2]"], "add: inputs must share one dtype, got f32, i32"),
    ("exp", {}, ["i32[2]"], "exp: input dtype i32 is not float"),
    ("neg", {}, ["u8[2]"], "neg: input dtype u8 is not signed int or float"),
    ("and", {}, ["f32[2]", "f32[2]"], "and: input dtype f32 is not signed int or unsigned int or bool"),
    ("where", {}, ["i64[2]", "f32[2]", "f32[2]"], "where: condition must be bool, got i64"),
    ("add", {}, ["f32[2]"], "add takes 2 inputs, got 1"),
    ("reduce_sum", {"axes": [2]}, ["f32[A,B]"], "reduce_sum: axis 2 out of range for rank 2"),
    ("reduce_sum", {"axes": [1, -1]}, ["f32[A,B]"], r"reduce_sum: repeated axis in \(1, -1\)"),
    ("reduce_all", {}, ["f32[2]"], "reduce_all: input dtype f32 is not bool"),
    ("argmax", {"axis": -3}, ["f32[2,2]"], "argmax: axis -3 out of range for rank 2"),
    ("softmax", {"axis": 0}, ["i64[3]"], "softmax: input dtype i64 is not float"),
    ("matmul", {}, ["f32[2,3]", "f32[4,5]"], "matmul: contracted dims differ"),
    ("matmul", {}, ["f32[]", "f32[3]"], "matmul: inputs must have rank >= 1"),
    ("transpose", {"perm": [0, 0]}, ["f32[A,B]"], r"transpose: perm \(0, 0\) is not a permutation of rank 2"),
    ("transpose", {"perm": [1, 0]}, ["f32[A,B,C]"], r"transpose: perm \(1, 0\) is not a permutation of rank 3"),
    ("reshape", {}, ["f32[6]", i64(4, -1)], r"reshape: cannot reshape f32\[6\] to \[4, 1\]"),
    ("reshape", {}, ["f32[6]", i64(-1, -1)], r"reshape: bad target shape \[-1, -1\]"),
    ("reshape", {}, ["f32[6]", i64(2, -3)], r"reshape: bad target shape \[2, -3\]"),
    ("reshape", {}, ["f32[6]", "i32[2]"], r"reshape: shape must be i64\[k\] with a static k, got i32\[2\]"),
    ("reshape", {}, ["f32[6]", "i64[K]"], "reshape: shape must be i64"),
    ("squeeze", {"axes": [0]}, ["f32[3,1]"], r"squeeze: axis 0 of f32\[3,1\] is not 1"),
    ("unsqueeze", {"axes": [0, 0]}, ["f32[3]"], "unsqueeze: repeated axis"),
    ("unsqueeze", {"axes": [2]}, ["f32[3]"], "unsqueeze: axis 2 out of range for rank 2"),
    ("expand", {}, ["f32[3]", i64(2, 4)], "expand: cannot broadcast dims 3 and 4"),
    ("concat", {"axis": 0}, ["f32[2,3]", "f32[2,4]"], r"concat: inputs differ in dim 1: \[3, 4\]"),
    ("concat", {"axis": 0}, ["f32[2,3]", "f32[2]"], "concat: inputs differ in rank"),
    ("concat", {"axis": 0}, [], "concat: needs at least one input"),
    ("split", {"axis": 0, "num_outputs": 3}, ["f32[3]", "i64[2]"], "split: 2 sizes for 3 outputs"),
    ("slice", {"axes": [0, 1]}, ["f32[3,3]", "i64[1]", "i64[2]", "i64[2]"], "slice: starts has length 1, axes has 2"),
    ("gather", {"axis": 0}, ["f32[3]", "f32[2]"], "gather: indices dtype f32 is not signed int"),
    ("gather", {"axis": 1}, ["f32[3]", "i64[2]"], "gather: axis 1 out of range for rank 1"),
    ("gather_nd", {}, ["f32[3]", "i64[2,2]"], "gather_nd: last dim of indices"),
    ("scatter_nd", {}, ["f32[A,B]", "i64[K,1]", "f32[K,4,2]"], "scatter_nd: updates"),
    ("scatter_nd", {"reduction": "max"}, ["f32[A]", "i64[K,1]", "f32[K]"], "must be one of"),
    ("range", {}, ["f32[]", "f32[]", "f32[2]"], "range: start, limit and delta must be scalars"),
    ("trilu", {"upper": True}, ["f32[3]"], "trilu: input must be a \\(batch of\\) matrix"),
    ("trilu", {"upper": True}, ["i32[2,2]"], "trilu: dtype i32 is not one of"),
    ("range", {}, ["bool[]", "bool[]", "bool[]"], "range: input dtype bool is not signed int or float"),
    ("cast", {}, ["f32[2]"], "cast: missing required attribute to"),
    ("cast", {"to": "f32"}, ["f32[2]"], "must be a DType"),
    ("conv", {}, ["f32[1,4,5,5]", "f32[8,3,3,3]"], "conv: 4 input channels != 3 x group 1"),
    ("conv", {}, ["i32[1,1,5,5]", "i32[1,1,3,3]"], "conv: input dtype i32 is not float"),
    ("max_pool", {"kernel": [2, 2], "pads": [2, 0, 0, 0]}, ["f32[1,1,5,5]"], "must be smaller than the kernel"),
    ("avg_pool", {"kernel": [2, 2]}, ["i32[1,1,4,4]"], "avg_pool: input dtype i32 is not float"),
    ("convolve2d", {}, ["f32[5]", "f32[3,3]"], "convolve2d: inputs need rank >= 2"),
    ("pad", {"pads": [1, 1]}, ["f32[3]", "f32[1]"], "pad: value must be a scalar"),
    ("gemm", {}, ["f32[2,3]", "f32[3,4]", "f32[3,4]"], r"gemm: c f32\[3,4\] does not broadcast to \(2, 4\)"),
    ("gemm", {}, ["f32[2,3]", "f32[4,5]", "f32[]"], "gemm: contracted dims differ"),
    ("resize_nearest", {"scales": [0]}, ["f32[2]"], "resize_nearest: needs 1 integer scales >= 1"),
    ("flatten", {"axis": 3}, ["f32[2,3]"], "flatten: axis 3 out of range"),
    ("batch_norm", {}, ["f32[1,2,3]", "f32[2,1]", "f32[2]", "f32[2]", "f32[2]"], "batch_norm: scale, bias"),
    ("gelu", {"approximate": "exact"}, ["f32[2]"], "must be one of"),
]


def build(op: str, attrs: dict, inputs: list):
    """A graph holding one ``op`` node over ``inputs`` (arrays become
    constants, type strings inputs); returns (graph, node)."""
    g = Graph(op)
    values = []
    for k, spec in enumerate(inputs):
        if isinstance(spec, str):
            values.append(g.add_input(parse_type(spec), f"in{k}"))
        else:
            values.append(g.add_constant(np.asarray(spec), f"in{k}"))
    node = g.create_node(op, values, attrs)
    g.append(node)
    g.set_outputs(list(node.outputs))
    return g, node


@pytest.mark.parametrize("op, attrs, inputs, want", EVAL, ids=[c[0] for c in EVAL])
def test_evaluate_and_type_rule_on_known_numbers(op, attrs, inputs, want):
    g, node = build(op, attrs, inputs)
    verify(g)
    got = evaluate(g, [])
    assert len(got) == len(want) == len(node.outputs)
    for out, w, t in zip(got, want, node.outputs):
        w = np.asarray(w)
        inferred = t.type
        assert inferred.dtype.numpy == w.dtype and inferred.rank == w.ndim, f"rule gives {inferred} for {w!r}"
        assert all(d is None or d == n for d, n in zip(inferred.shape, w.shape)), f"rule gives {inferred}"
        assert out.dtype == w.dtype and out.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_allclose(out, w, rtol=1e-6, atol=1e-12, equal_nan=True)
            np.testing.assert_array_equal(np.signbit(out[out == 0]), np.signbit(w[w == 0]))
        else:
            np.testing.assert_array_equal(out, w)


@pytest.mark.parametrize("op, attrs, inputs, want", TYPES, ids=[c[0] for c in TYPES])
def test_type_rule_on_symbolic_dims(op, attrs, inputs, want):
    g, node = build(op, attrs, inputs)
    assert [str(v.type) for v in node.outputs] == want
    verify(g)


@pytest.mark.parametrize("op, attrs, inputs, message", ERRORS, ids=[c[0] for c in ERRORS])
def test_type_rule_errors(op, attrs, inputs, message):
    with pytest.raises(OpError, match=message):
        build(op, attrs, inputs)


def test_every_op_is_covered():
    # ops with nested graphs (loop, if) are covered in tests/control_flow/test_ops.py
    ops = {name for name, d in all_ops().items() if not name.startswith("test_") and not d.subgraph_roles}
    assert ops - {c[0] for c in EVAL} == set()
    shape_ops = {"reshape", "transpose", "squeeze", "unsqueeze", "expand", "concat", "split", "slice",
                 "gather", "gather_nd", "scatter_nd", "range", "matmul", "softmax"}
    assert shape_ops - {c[0] for c in TYPES} == set()


def test_evaluate_outputs_match_declared_types_for_float16():
    g, node = build("sigmoid", {}, [np.array([0, 1], np.float16)])
    (out,) = evaluate(g, [])
    assert out.dtype == np.float16 and node.output.type == TensorType.of_array(out)
