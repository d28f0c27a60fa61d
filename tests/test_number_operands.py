"""A Python number in a binary op gives bit-for-bit PyTorch's result.

minitorch hands torch a cached 0-d tensor instead of the number where that is faster
(`ops.scalars.number_storage`); these tests prove the results are identical, in both operand orders
and for every dtype, including the cases that bypass the cache (zero, -0.0, NaN, big ints)."""

import math
import operator

import pytest
import torch

import minitorch

NUMBERS = [0.1, 3, -2.5, 1e-30, 7.0, 2**31 - 1, 2**40, 0, -0.0, math.nan, math.inf, True]
OPS = [operator.add, operator.sub, operator.mul, operator.truediv]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", OPS, ids=lambda op: op.__name__)
def test_number_operand_matches_torch_bitwise(op, dtype):
    gen = torch.Generator().manual_seed(0)
    data = (torch.randn(37, generator=gen) * 10).to(dtype)
    for number in NUMBERS:
        for left in (True, False):
            x = minitorch.Tensor(data.clone())  # wraps the storage as it is
            try:
                expected = op(data, number) if left else op(number, data)
            except RuntimeError as error:  # e.g. subtracting a bool
                with pytest.raises(RuntimeError, match=str(error)[:30]):
                    op(x, number) if left else op(number, x)
                continue
            got = op(x, number) if left else op(number, x)
            assert got.dtype == expected.dtype, (op, dtype, number, left)
            assert torch.equal(got._data, expected) or (
                torch.isnan(got._data).equal(torch.isnan(expected))
                and torch.equal(got._data.nan_to_num(), expected.nan_to_num())
            ), (op.__name__, dtype, number, left)


def test_number_gradients_in_float64():
    x = minitorch.tensor([0.5, -1.5, 2.0], dtype=minitorch.float64, requires_grad=True)
    y = ((x * 0.1 + 3) / 1.7 - 2.5 * x).sum()
    y.backward()
    xt = torch.tensor([0.5, -1.5, 2.0], dtype=torch.float64, requires_grad=True)
    ((xt * 0.1 + 3) / 1.7 - 2.5 * xt).sum().backward()
    assert torch.equal(x.grad._data, xt.grad)


def test_floor_divide_and_remainder_with_numbers_match_torch():
    data = torch.tensor([5.0, -3.0, 7.5, -0.5])
    x = minitorch.tensor(data.tolist())
    for got, expected in [
        (x // 2, data // 2),
        (7 // x, 7 // data),
        (x % 2, data % 2),
        (x % -2.5, data % -2.5),
        (7 % x, 7 % data),
    ]:
        assert torch.equal(got._data, expected)


def test_floor_divide_records_a_node_whose_backward_raises():
    x = minitorch.tensor([5.0, -3.0], requires_grad=True)
    y = x // 2
    assert y.grad_fn.name() == (torch.ones(2, requires_grad=True) // 2).grad_fn.name()
    with pytest.raises(RuntimeError, match="derivative for floor_divide is not implemented"):
        y.sum().backward()
