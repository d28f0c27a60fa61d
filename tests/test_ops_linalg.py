"""Matrix products against PyTorch: `a @ b` for 1-D, 2-D and batched operands, with batch dims
that broadcast (rank changes included).

Node names: torch records DotBackward0 (1-D @ 1-D), MmBackward0 (2-D @ 2-D) and MvBackward0
(2-D @ 1-D), and minitorch does too. For the other cases torch builds matmul out of reshapes and
bmm, so the node it records is a view's (UnsafeViewBackward0, SqueezeBackward4, ...); minitorch
records one MatmulBackward0 node: a deliberate difference, the graph shows the op the user wrote.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from oracle import (
    broadcast_shapes,
    check_gradcheck,
    check_op,
    make_values,
    seeds,
    uniform,
)

TORCH_NAMED = {(1, 1), (2, 2), (2, 1)}  # the ranks where torch and minitorch name nodes alike


@st.composite
def matmul_shapes(draw):
    """Shapes of a and b for a @ b: either may be a vector; matrices get broadcasting batches."""
    n, k, m = (draw(st.integers(1, 3)) for _ in range(3))
    batch_a, batch_b = draw(broadcast_shapes(max_rank=2))
    a = (k,) if draw(st.booleans()) else batch_a + (n, k)
    b = (k,) if draw(st.booleans()) else batch_b + (k, m)
    return a, b


def _expected_name(a_shape, b_shape):
    return None if (len(a_shape), len(b_shape)) in TORCH_NAMED else "MatmulBackward0"


MATMUL_FORMS = {
    "operator": lambda lib, a, b: a @ b,
    "function": lambda lib, a, b: lib.matmul(a, b),
    "method": lambda lib, a, b: a.matmul(b),
}


@pytest.mark.parametrize("form", MATMUL_FORMS)
@given(shapes_=matmul_shapes(), seed=seeds)
@example(shapes_=((3, 1, 2, 4), (2, 4, 3)), seed=0)  # batch dims (3, 1) and (2,) broadcast
@example(shapes_=((2, 4), (3, 4, 1)), seed=0)  # a matrix against a batch
def test_matmul_matches_torch(form, shapes_, seed):
    a_shape, b_shape = shapes_
    values = make_values((uniform(), uniform()), [a_shape, b_shape], seed)
    check_op(MATMUL_FORMS[form], values, seed, _expected_name(a_shape, b_shape))


@pytest.mark.parametrize("form", ["mm_method", "mm_function"])
@given(sizes=st.tuples(*[st.integers(1, 4)] * 3), seed=seeds)
def test_mm(form, sizes, seed):
    n, k, m = sizes
    fn = (lambda lib, a, b: a.mm(b)) if form == "mm_method" else (lambda lib, a, b: lib.mm(a, b))
    check_op(fn, make_values((uniform(), uniform()), [(n, k), (k, m)], seed), seed)


def test_matmul_with_one_input_not_requiring_grad():
    values = make_values((uniform(), uniform()), [(2, 3, 4), (4, 2)], seed=1)

    def left_only(lib, a, b):
        return a @ b.detach()

    def right_only(lib, a, b):
        return a.detach() @ b

    check_op(left_only, values, node_name="MatmulBackward0")
    check_op(right_only, values, node_name="MatmulBackward0")


def test_matmul_in_an_expression_with_fan_out():
    """The same weight used twice, as in a tiny two-layer net with shared weights."""

    def fn(lib, x, w):
        hidden = (x @ w).tanh()
        return (hidden @ w).sum(-1)

    check_op(fn, make_values((uniform(), uniform()), [(2, 5, 3), (3, 3)], seed=2))


GRADCHECK_SHAPES = {
    "dot": [(3,), (3,)],
    "mv": [(2, 3), (3,)],
    "vm": [(3,), (3, 2)],
    "mm": [(2, 3), (3, 2)],
    "batched": [(2, 1, 2), (2, 2)],
    "broadcast_batches": [(2, 1, 1, 2), (3, 2, 1)],
    "batch_vector": [(2, 2, 3), (3,)],
}


@pytest.mark.parametrize("name", GRADCHECK_SHAPES)
def test_matmul_gradcheck(name):
    values = make_values((uniform(), uniform()), GRADCHECK_SHAPES[name], seed=3)
    check_gradcheck(lambda lib, a, b: a @ b, values)


@pytest.mark.cuda
@pytest.mark.parametrize("name", GRADCHECK_SHAPES)
def test_matmul_on_cuda(name):
    a_shape, b_shape = GRADCHECK_SHAPES[name]
    values = make_values((uniform(), uniform()), [a_shape, b_shape], seed=0)
    check_op(lambda lib, a, b: a @ b, values, 0, _expected_name(a_shape, b_shape), device="cuda")
