"""Random ops that take tensors: `multinomial` and `normal`.

Both call torch's own kernel on storage with torch's generator (the global one, seeded by
`manual_seed`, or the `generator=` given), so a seeded program draws exactly PyTorch's numbers.
They are Functions rather than direct computations on storage so that a forward record sees them:
a replay draws new numbers, as eager mode does (like dropout's mask; NOTE [Forward record] in
autograd/record.py).
"""

from __future__ import annotations

from typing import Any

import torch

from minitorch.autograd.function import Function
from minitorch.autograd.record import recorded_creation
from minitorch.ops.out import call_with_out
from minitorch.tensor import Tensor


class Multinomial(Function):
    """Category indices drawn with the weights in each row of `input` (int64, so the result
    never requires grad)."""

    @staticmethod
    def forward(ctx, input, num_samples, replacement, generator):
        data = torch.multinomial(input._data, num_samples, replacement, generator=generator)
        return Tensor._make(data)


def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: torch.Generator | None = None,
                out: Tensor | None = None) -> Tensor:  # noqa: A002 # fmt: skip
    """`num_samples` indices drawn from the categories `0 .. n-1`, where the weights in `input`
    (1-D: one distribution; 2-D: one per row; need not sum to 1) give their probabilities.
    Without replacement an index is drawn at most once per row. Returns int64 indices; with
    `out=`, writes them into `out`."""
    if out is not None:
        return call_with_out(
            "multinomial", torch.multinomial, out, input, num_samples, replacement,
            generator=generator, differentiable=False,
        )  # fmt: skip
    return Multinomial.apply(input, num_samples, replacement, generator)


class NormalTensorNumber(Function):
    """Samples from N(mean, std) for a tensor `mean` and a number `std`.

    As in PyTorch, the gradient with respect to `mean` and `std` is zero: the sample is not
    reparameterized (for a gradient through the sample, write `mean + std * randn_like(mean)`).
    """

    node_name = "NormalBackward1"

    @staticmethod
    def forward(ctx, mean, std, generator):
        ctx.metas = [(m.shape, m.dtype, m.device) if isinstance(m, Tensor) else None
                     for m in (mean, std)]  # fmt: skip
        mean_data = mean._data if isinstance(mean, Tensor) else mean
        std_data = std._data if isinstance(std, Tensor) else std
        return Tensor._make(torch.normal(mean_data, std_data, generator=generator))

    @staticmethod
    def backward(ctx, grad):
        zeros = [
            Tensor._make(torch.zeros(meta[0], dtype=meta[1], device=meta[2])) if need else None
            for meta, need in zip(ctx.metas, ctx.needs_input_grad)
        ]
        return zeros[0], zeros[1], None


class NormalNumberTensor(NormalTensorNumber):
    node_name = "NormalBackward2"  # a number `mean` and a tensor `std`


class NormalTensorTensor(NormalTensorNumber):
    node_name = "NormalBackward3"  # tensors `mean` and `std` (broadcast together)


@recorded_creation
def _normal_of_size(mean: float, std: float, size: Any, generator: torch.Generator | None,
                    dtype: torch.dtype | None, device: Any,
                    requires_grad: bool) -> Tensor:  # fmt: skip
    data = torch.normal(mean, std, tuple(size), generator=generator, dtype=dtype, device=device)
    result = Tensor._make(data)
    if requires_grad:
        result.requires_grad_(True)
    return result


def normal(mean: Any, std: Any = 1.0, size: Any = None, *,
           generator: torch.Generator | None = None, out: Tensor | None = None,
           dtype: torch.dtype | None = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Random numbers from normal distributions, in PyTorch's four overloads:

    - `normal(mean, std)` with tensors `mean` and `std` (broadcast together): one sample each;
    - `normal(mean, std=1.0)` with a tensor `mean`, or `normal(mean, std)` with a tensor `std`;
    - `normal(mean, std, size)` with numbers: a new tensor of `size` (`dtype`, `device`,
      `requires_grad` as for `randn`).

    The same seed gives the same numbers as PyTorch. The gradient with respect to a tensor
    `mean` or `std` is zero, as in PyTorch. With `out=`, the samples are written into `out`.
    """
    has_tensor = isinstance(mean, Tensor) or isinstance(std, Tensor)
    if has_tensor == (size is not None):  # tensors take no size; numbers need one
        given = ", ".join(type(v).__name__ for v in (mean, std, size) if v is not None)
        raise TypeError(
            f"normal() received an invalid combination of arguments - got ({given}), but "
            "expected one of:\n"
            " * (Tensor mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
            " * (Tensor mean, float std = 1, *, torch.Generator generator = None, Tensor out = "
            "None)\n"
            " * (float mean, Tensor std, *, torch.Generator generator = None, Tensor out = None)\n"
            " * (float mean, float std, tuple of ints size, *, torch.Generator generator = None, "
            "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
            "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n"
        )
    if out is not None:
        if size is None:
            return call_with_out("normal", torch.normal, out, mean, std, generator=generator)
        return call_with_out("normal", torch.normal, out, mean, std, tuple(size),
                             generator=generator)  # fmt: skip
    if size is not None:
        return _normal_of_size(mean, std, size, generator, dtype, device, requires_grad)
    if isinstance(mean, Tensor) and isinstance(std, Tensor):
        return NormalTensorTensor.apply(mean, std, generator)
    if isinstance(mean, Tensor):
        return NormalTensorNumber.apply(mean, std, generator)
    return NormalNumberTensor.apply(mean, std, generator)
