"""Elementwise ops against PyTorch: forward values, gradients, gradcheck and node names.

Unary ops run on hypothesis-made shapes (0-d and size-1 dims included); binary ops on pairs of
shapes that broadcast (rank changes included). Values come from a seeded generator and keep away
from the points where an op is not differentiable; the behaviour exactly at those points (ties,
zeros, bounds) has tests of its own at the end, also compared with PyTorch.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given
from oracle import (
    Case,
    away_from,
    away_from_zero,
    broadcast_shapes,
    check_gradcheck,
    check_op,
    make_values,
    on_grid,
    positive,
    seeds,
    shapes,
    uniform,
)

# Unary ops, and ops with one tensor and Python numbers ------------------------------------------
UNARY = {
    "neg": Case(lambda lib, x: -x, (uniform(),)),
    "neg_function": Case(lambda lib, x: lib.neg(x), (uniform(),)),
    "exp": Case(lambda lib, x: lib.exp(x), (uniform(),)),
    "log": Case(lambda lib, x: x.log(), (positive(),)),
    "sqrt": Case(lambda lib, x: lib.sqrt(x), (positive(),)),
    "sin": Case(lambda lib, x: x.sin(), (uniform(),)),
    "cos": Case(lambda lib, x: lib.cos(x), (uniform(),)),
    "tanh": Case(lambda lib, x: lib.tanh(x), (uniform(),)),
    "sigmoid": Case(lambda lib, x: x.sigmoid(), (uniform(),)),
    "relu": Case(lambda lib, x: lib.relu(x), (away_from_zero(),)),
    "abs": Case(lambda lib, x: x.abs(), (away_from_zero(),)),
    "abs_builtin": Case(lambda lib, x: abs(x), (away_from_zero(),)),
    "clamp": Case(lambda lib, x: x.clamp(-0.5, 0.5), (away_from([-0.5, 0.5]),)),
    "clamp_min": Case(lambda lib, x: lib.clamp(x, min=-0.5), (away_from([-0.5]),)),
    "clamp_max": Case(lambda lib, x: x.clamp(max=0.5), (away_from([0.5]),)),
    "clamp_int_bounds": Case(lambda lib, x: x.clamp(-1, 1), (away_from([-1, 1]),)),
    # Powers with a number exponent (PowBackward0).
    "square": Case(lambda lib, x: x**2, (uniform(),)),
    "cube": Case(lambda lib, x: x**3, (uniform(),)),
    "power_zero": Case(lambda lib, x: x**0, (uniform(),)),
    "reciprocal_power": Case(lambda lib, x: x**-1, (away_from_zero(),)),
    "sqrt_power": Case(lambda lib, x: x**0.5, (positive(),)),
    "fractional_power": Case(lambda lib, x: lib.pow(x, 2.5), (positive(),)),
    # A number base (PowBackward2).
    "number_base": Case(lambda lib, x: 2**x, (uniform(),)),
    "fractional_base": Case(lambda lib, x: 0.5**x, (uniform(),)),
    # Numbers on either side of arithmetic; ints and floats keep the result float64.
    "add_number": Case(lambda lib, x: x + 2, (uniform(),)),
    "number_add": Case(lambda lib, x: 2.5 + x, (uniform(),)),
    "sub_number": Case(lambda lib, x: x - 2, (uniform(),)),
    "number_sub": Case(lambda lib, x: 2 - x, (uniform(),)),
    "mul_number": Case(lambda lib, x: x * 3, (uniform(),)),
    "number_mul": Case(lambda lib, x: 0.5 * x, (uniform(),)),
    "div_number": Case(lambda lib, x: x / 4, (uniform(),)),
    # torch computes `2 / x` as `x.reciprocal() * 2` (MulBackward0); minitorch records a single
    # division node. A deliberate difference: the course teaches `/` as one op.
    "number_div": Case(lambda lib, x: 2 / x, (away_from_zero(),), node_name="DivBackward0"),
    "add_alpha": Case(lambda lib, x: x.add(x * x, alpha=2), (uniform(),)),
    # Selection with a mask computed from the input.
    "where_number": Case(lambda lib, x: lib.where(x > 0, x, 0.0), (away_from_zero(),)),
    "masked_fill": Case(lambda lib, x: x.masked_fill(x > 0, 0.5), (away_from_zero(),)),
    "clone": Case(lambda lib, x: x.clone(), (uniform(),)),
}

# Two tensor operands that broadcast --------------------------------------------------------------
BINARY = {
    "add": Case(lambda lib, a, b: a + b, (uniform(), uniform())),
    "sub": Case(lambda lib, a, b: a - b, (uniform(), uniform())),
    "mul": Case(lambda lib, a, b: a * b, (uniform(), uniform())),
    "div": Case(lambda lib, a, b: a / b, (uniform(), away_from_zero())),
    "pow": Case(lambda lib, a, b: a**b, (positive(), uniform())),
    "pow_function": Case(lambda lib, a, b: lib.pow(a, b), (positive(), uniform())),
    "maximum": Case(lambda lib, a, b: lib.maximum(a, b), (on_grid(0.0), on_grid(0.5))),
    "minimum": Case(lambda lib, a, b: a.minimum(b), (on_grid(0.0), on_grid(0.5))),
    "max_of_two": Case(lambda lib, a, b: lib.max(a, b), (on_grid(0.0), on_grid(0.5))),
    "min_of_two": Case(lambda lib, a, b: lib.min(a, b), (on_grid(0.5), on_grid(0.0))),
    "where": Case(lambda lib, a, b: lib.where(a > b, a, b), (on_grid(0.0), on_grid(0.5))),
    # a stays 0.3 away from 0 and b is about 4, so a / b never crosses an integer (no jumps).
    "remainder": Case(lambda lib, a, b: a % b, (on_grid(0.3), positive(3.9, 4.1))),
    "add_alpha": Case(lambda lib, a, b: a.add(b, alpha=3), (uniform(), uniform())),
    "sub_alpha": Case(lambda lib, a, b: a.sub(b, alpha=0.5), (uniform(), uniform())),
    # A composite with fan-out: both inputs reach the output along several paths.
    "composite": Case(lambda lib, a, b: (a * b + a.exp()) / (1 + b * b), (uniform(), uniform())),
}

# Shapes the issue names explicitly, tried before the generated ones.
RANK_CHANGES = [((3, 1, 4), (2, 1)), ((), (2, 3)), ((2, 3), ()), ((1,), (3, 1)), ((2, 1), (1, 2))]


def _run(case: Case, shape_list: list, seed: int) -> None:
    check_op(case.fn, make_values(case.makers, shape_list, seed), seed, case.node_name)


@pytest.mark.parametrize("name", UNARY)
@given(shape=shapes(), seed=seeds)
@example(shape=(), seed=0)
def test_unary_matches_torch(name, shape, seed):
    _run(UNARY[name], [shape], seed)


@pytest.mark.parametrize("name", BINARY)
@given(pair=broadcast_shapes(), seed=seeds)
def test_binary_broadcast_matches_torch(name, pair, seed):
    _run(BINARY[name], list(pair), seed)


@pytest.mark.parametrize("pair", RANK_CHANGES, ids=str)
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "maximum", "where"])
def test_binary_rank_changes(name, pair):
    _run(BINARY[name], list(pair), seed=1)


@pytest.mark.parametrize("name", UNARY)
def test_unary_gradcheck(name):
    case = UNARY[name]
    check_gradcheck(case.fn, make_values(case.makers, [(2, 3)], seed=3))


@pytest.mark.parametrize("name", BINARY)
def test_binary_gradcheck(name):
    case = BINARY[name]
    check_gradcheck(case.fn, make_values(case.makers, [(2, 1), (3,)], seed=4))


@given(shapes3=broadcast_shapes(), extra=shapes(0, 2, 1, 3), seed=seeds)
def test_where_broadcasts_condition_and_both_branches(shapes3, extra, seed):
    condition = torch.rand(extra, generator=torch.Generator().manual_seed(seed)) > 0.5

    def fn(lib, a, b):
        from oracle import constant

        return lib.where(constant(lib, condition), a, b)

    try:
        torch.broadcast_shapes(extra, *shapes3)
    except RuntimeError:
        return  # the condition's shape does not broadcast with this pair
    check_op(fn, make_values((uniform(), uniform()), list(shapes3), seed), seed)


@given(shape=shapes(1, 3), seed=seeds)
def test_masked_fill_with_a_tensor_value_gets_its_gradient(shape, seed):
    mask = torch.rand(shape[-1:], generator=torch.Generator().manual_seed(seed)) > 0.5

    def fn(lib, x, value):
        from oracle import constant

        return x.masked_fill(constant(lib, mask), value)

    check_op(fn, make_values((uniform(), uniform()), [shape, ()], seed), seed)


@given(pair=broadcast_shapes(), seed=seeds)
def test_clamp_with_tensor_bounds_gives_gradients_to_the_bounds(pair, seed):
    # torch records one ClampBackward0 node; minitorch composes maximum and minimum, so the last
    # node is MinimumBackward0 (the gradients are the same while min < max).
    x_shape, bound_shape = pair
    makers = (on_grid(0.0), uniform(-1.45, -1.05), uniform(0.45, 0.55))
    values = make_values(makers, [x_shape, bound_shape, bound_shape], seed)
    fn = lambda lib, x, low, high: x.clamp(min=low, max=high)
    check_op(fn, values, seed, node_name="MinimumBackward0")
    check_op(lambda lib, x, low, high: lib.clamp(x, min=low), values, seed, "MaximumBackward0")


# Behaviour at non-differentiable points: compared with torch, element by element -----------------
def test_maximum_and_minimum_split_the_gradient_on_ties():
    a = torch.tensor([1.0, 2.0, 3.0, -1.0], dtype=torch.float64)
    b = torch.tensor([1.0, 0.0, 3.0, -1.0], dtype=torch.float64)
    check_op(lambda lib, x, y: lib.maximum(x, y), [a, b])
    check_op(lambda lib, x, y: lib.minimum(x, y), [a, b])
    # A tie under broadcasting: the shared half is summed back to the smaller input.
    check_op(lambda lib, x, y: lib.maximum(x, y), [a, torch.tensor(1.0, dtype=torch.float64)])


def test_relu_abs_and_clamp_at_their_kinks():
    x = torch.tensor([-1.0, 0.0, 0.5, 1.0, -0.5], dtype=torch.float64)
    check_op(lambda lib, t: t.relu(), [x])
    check_op(lambda lib, t: t.abs(), [x])
    # clamp passes the gradient when the value sits exactly on a bound (bounds are inclusive).
    check_op(lambda lib, t: t.clamp(-0.5, 0.5), [x])
    check_op(lambda lib, t: t.clamp(min=0.0), [x])


def test_pow_gradient_for_a_zero_base():
    base = torch.tensor([0.0, 0.0, 1.5, 2.0], dtype=torch.float64)
    exponent = torch.tensor([2.0, 3.0, 0.5, -1.0], dtype=torch.float64)
    check_op(lambda lib, a, b: a**b, [base, exponent])
    check_op(lambda lib, a: a**2, [base])
    check_op(lambda lib, a: a**0, [base])


def test_pow_of_a_negative_base_with_integer_exponents():
    # The base gets a finite gradient; the exponent's, result * log(base), is nan in both.
    base = torch.tensor([-2.0, -1.5, 3.0], dtype=torch.float64)
    exponent = torch.tensor([2.0, 3.0, -1.0], dtype=torch.float64)
    check_op(lambda lib, a, b: a**b, [base, exponent])


def test_number_base_zero_and_one():
    # 0 ** x: torch takes the gradient as 0 where x >= 0, instead of 0 * log(0) = nan.
    x = torch.tensor([0.0, 0.5, 1.0, 2.0], dtype=torch.float64)
    check_op(lambda lib, t: 0**t, [x])
    check_op(lambda lib, t: 0.0**t, [x])
    check_op(lambda lib, t: 1**t, [x])
    check_op(lambda lib, t: 1.0**t, [x])


# In-place ops on non-leaf tensors ----------------------------------------------------------------
def _inplace(method: str, *args):
    """`y = x * 1; y.<method>(*args)`: an in-place op on a non-leaf; tensor args are inputs."""

    def fn(lib, x, *others):
        y = x * 1
        getattr(y, method)(*others, *args)
        return y

    return fn


def _augmented(operator: str):
    """`y = x * 1; y <op>= other` with the augmented assignment operators."""

    def fn(lib, x, other):
        y = x * 1
        if operator == "+=":
            y += other
        elif operator == "-=":
            y -= other
        elif operator == "*=":
            y *= other
        else:
            y /= other
        return y

    return fn


INPLACE_WITH_TENSOR = {
    "add_": Case(_inplace("add_"), (uniform(), uniform())),
    "sub_": Case(_inplace("sub_"), (uniform(), uniform())),
    "mul_": Case(_inplace("mul_"), (uniform(), uniform())),
    "div_": Case(_inplace("div_"), (uniform(), away_from_zero())),
    "+=": Case(_augmented("+="), (uniform(), uniform())),
    "-=": Case(_augmented("-="), (uniform(), uniform())),
    "*=": Case(_augmented("*="), (uniform(), uniform())),
    "/=": Case(_augmented("/="), (uniform(), away_from_zero())),
    # torch names copy_'s node "torch::autograd::CopyBackwards" (a C++ namespace); minitorch
    # keeps the class name only.
    "copy_": Case(_inplace("copy_"), (uniform(), uniform()), node_name="CopyBackwards"),
}

INPLACE_UNARY = {
    "add_number": Case(_inplace("add_", 2), (uniform(),)),
    "sub_number_alpha": Case(lambda lib, x: (x * 1).sub_(x.exp(), alpha=2), (uniform(),)),
    "mul_number": Case(_inplace("mul_", 3), (uniform(),)),
    "div_number": Case(_inplace("div_", 4), (uniform(),)),
    "clamp_": Case(_inplace("clamp_", -0.5, 0.5), (away_from([-0.5, 0.5]),)),
    "relu_": Case(_inplace("relu_"), (away_from_zero(),)),
    # torch: ZeroBackward0 and FillBackward2; minitorch runs both through one Fill node.
    "zero_": Case(_inplace("zero_"), (uniform(),), node_name="FillBackward0"),
    "fill_": Case(_inplace("fill_", 2.0), (uniform(),), node_name="FillBackward0"),
    "chained": Case(lambda lib, x: (x * 1).mul_(2).add_(x).relu_(), (away_from_zero(),)),
}


# `self` keeps its shape in an in-place op, so `other` must broadcast to it.
self_and_other_shapes = broadcast_shapes().map(
    lambda pair: (tuple(torch.broadcast_shapes(*pair)), pair[1])
)


@pytest.mark.parametrize("name", INPLACE_WITH_TENSOR)
@given(pair=self_and_other_shapes, seed=seeds)
def test_inplace_with_tensor_matches_torch(name, pair, seed):
    _run(INPLACE_WITH_TENSOR[name], list(pair), seed)


@pytest.mark.parametrize("name", INPLACE_UNARY)
@given(shape=shapes(), seed=seeds)
def test_inplace_unary_matches_torch(name, shape, seed):
    _run(INPLACE_UNARY[name], [shape], seed)


@pytest.mark.parametrize("name", ["mul_", "div_", "*=", "copy_"])
def test_inplace_gradcheck(name):
    case = INPLACE_WITH_TENSOR[name]
    check_gradcheck(case.fn, make_values(case.makers, [(2, 3), (3,)], seed=5))


def test_inplace_result_feeds_later_ops():
    """The graph continues from the modified tensor: later ops see the new value and node."""

    def fn(lib, x, w):
        y = x.sin()
        y = y * 1  # sin saved x, not y; y may change
        y.mul_(w)
        y += 1
        return (y * y).sum()

    check_op(fn, make_values((uniform(), uniform()), [(2, 3), (3,)], seed=6))


# The same checks with the storage on a GPU (skipped where CUDA is not available) ----------------
@pytest.mark.cuda
@pytest.mark.parametrize("name", UNARY)
def test_unary_on_cuda(name):
    case = UNARY[name]
    values = make_values(case.makers, [(2, 3)], seed=0)
    check_op(case.fn, values, node_name=case.node_name, device="cuda")


@pytest.mark.cuda
@pytest.mark.parametrize("name", BINARY)
def test_binary_on_cuda(name):
    case = BINARY[name]
    values = make_values(case.makers, [(3, 1, 4), (2, 1)], seed=0)
    check_op(case.fn, values, node_name=case.node_name, device="cuda")


@pytest.mark.cuda
@pytest.mark.parametrize("name", INPLACE_WITH_TENSOR)
def test_inplace_on_cuda(name):
    case = INPLACE_WITH_TENSOR[name]
    values = make_values(case.makers, [(2, 3), (3,)], seed=0)
    check_op(case.fn, values, node_name=case.node_name, device="cuda")
