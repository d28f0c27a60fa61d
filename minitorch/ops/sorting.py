"""Sorting: `sort` gives the sorted values and where each came from.

Sorting moves elements without changing them, so its gradient moves them back: the gradient of
`values[..., k]` goes to position `indices[..., k]` of the input (a scatter along `dim`, the
backward of a gather). `indices` is a permutation, so no position gets two contributions.
"""

from __future__ import annotations

from collections import namedtuple

import torch

from minitorch.autograd.function import Function
from minitorch.ops.dims import normalize_dim
from minitorch.ops.indexing import scatter_add
from minitorch.ops.out import call_with_out
from minitorch.tensor import Tensor

SortResult = namedtuple("sort", ["values", "indices"])


class Sort(Function):
    """`torch.sort` without `stable`: PyTorch names its node SortBackward0."""

    node_name = "SortBackward0"
    saved_names = ("indices",)

    @staticmethod
    def forward(ctx, a, dim, descending, stable):
        if stable is None:
            values, indices = torch.sort(a._data, dim=dim, descending=descending)
        else:
            values, indices = torch.sort(a._data, dim=dim, descending=descending, stable=stable)
        ctx.shape, ctx.dim = a.shape, dim
        indices = Tensor._make(indices)
        ctx.save_for_backward(indices)
        return Tensor._make(values), indices

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        (indices,) = ctx.saved_tensors
        if len(ctx.shape) == 0:  # a 0-d tensor sorts to itself
            return grad, None, None, None
        return scatter_add(grad, ctx.dim, indices, ctx.shape), None, None, None


class StableSort(Sort):
    """`torch.sort(..., stable=...)`: the same op, which PyTorch names SortBackward1."""

    node_name = "SortBackward1"


def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool | None = None,
         out: tuple[Tensor, Tensor] | None = None) -> SortResult:  # noqa: A002 # fmt: skip
    """The elements of `input` sorted along `dim` (ascending unless `descending`), as a named
    tuple `(values, indices)` with `values == input.gather(dim, indices)`.

    `stable=True` keeps equal elements in their original order. As in PyTorch, passing `stable`
    at all records the node SortBackward1 (else SortBackward0); the numbers are torch's. With
    `out=(values, indices)`, the results are written into those two tensors.
    """
    if out is not None:
        extra = {} if stable is None else {"stable": stable}
        values, indices = call_with_out(
            "sort", torch.sort, out, input, dim=dim, descending=descending, **extra
        )
        return SortResult(values, indices)
    dim = normalize_dim(dim, input.dim())
    kind = Sort if stable is None else StableSort
    return SortResult(*kind.apply(input, dim, descending, stable))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, *,
            stable: bool = False) -> Tensor:  # noqa: A002 # fmt: skip
    """The indices that sort `input` along `dim`: `sort(...).indices` (never differentiable)."""
    return sort(input, dim, descending, stable=stable).indices
