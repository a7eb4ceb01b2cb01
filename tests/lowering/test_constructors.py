"""``block_diag``, ``fill_diagonal`` and ``fill_diagonal_offset``
(``compiler/lowering/rules/constructors.py``) against PyTensor, bit for bit:
static and symbolic sizes, mixed dtypes, empty blocks, batched blocks, and
``fill_diagonal_offset``'s strided write for offsets beyond the matrix."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from compiler import compile_to_onnx
from tests.helpers import REFERENCE_MODE


def _check(inputs, outputs, *args):
    want = pytensor.function(inputs, outputs, mode=REFERENCE_MODE)(*args)
    for fn in (compile_to_onnx(inputs, outputs=outputs), compile_to_onnx(pytensor.function(inputs, outputs))):
        for got, w in zip(fn.run(*args), want):
            assert got.dtype == w.dtype and got.shape == w.shape
            np.testing.assert_array_equal(got, w)


@pytest.mark.parametrize("shapes", [((3, 2), (1, 4)), ((2, 5), (0, 3)), ((0, 0), (2, 2))], ids=str)
def test_block_diag_of_symbolic_and_static_blocks(shapes):
    a, b = pt.dmatrix("a"), pt.fmatrix("b")
    c = pt.matrix("c", dtype="int32", shape=(2, 3))
    rng = np.random.default_rng(1)
    args = (rng.normal(size=shapes[0]), rng.normal(size=shapes[1]).astype("float32"),
            rng.integers(-5, 5, (2, 3)).astype("int32"))
    _check([a, b, c], [pt.linalg.block_diag(a, b, c), pt.linalg.block_diag(b)], *args)


def test_block_diag_with_batch_dims():
    """A batch of blocks (the Blockwise runs as a Loop over the batch)."""
    t, a = pt.dtensor3("t"), pt.dmatrix("a")
    rng = np.random.default_rng(2)
    _check([t, a], [pt.linalg.block_diag(t, a)], rng.normal(size=(2, 2, 3)), rng.normal(size=(1, 2)))


@pytest.mark.parametrize("shape", [(4, 4), (5, 2), (2, 5), (0, 3)], ids=str)
def test_fill_diagonal_of_square_tall_and_wide_matrices(shape):
    a, v = pt.dmatrix("a"), pt.dscalar("v")
    _check([a, v], [pt.fill_diagonal(a, v)], np.arange(np.prod(shape), dtype=float).reshape(shape), np.array(-1.5))


def test_fill_diagonal_of_a_cube_and_an_int_value():
    t, v = pt.tensor3("t", dtype="int16"), pt.scalar("v", dtype="int8")
    _check([t, v], [pt.fill_diagonal(t, v)], np.zeros((3, 3, 3), "int16"), np.array(7, "int8"))


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)], ids=str)
def test_fill_diagonal_offset_for_every_offset(shape):
    """Offsets from -7 to 7: inside the matrix ``(i, i + offset)``; beyond
    the width ``perform``'s slice with a negative end writes elsewhere
    (4x4, offset 7: ``(1, 3)``), which the model reproduces."""
    a, v, k = pt.dmatrix("a"), pt.dscalar("v"), pt.lscalar("k")
    model = compile_to_onnx([a, v, k], outputs=[pt.fill_diagonal_offset(a, v, k)])
    reference = pytensor.function([a, v, k], pt.fill_diagonal_offset(a, v, k), mode=REFERENCE_MODE)
    x = np.zeros(shape)
    for offset in range(-7, 8):
        np.testing.assert_array_equal(model.run(x, np.array(2.0), np.array(offset))[0],
                                      reference(x, 2.0, offset), err_msg=f"offset {offset}")
