"""Dimension arguments, as PyTorch reads them.

Ops that take a `dim` accept negative indices (counted from the end) and, for reductions, `None`
or a sequence of dims. These helpers turn such an argument into non-negative indices, with
PyTorch's error for one out of range, and put the dims a reduction removed back into its gradient.
"""

from __future__ import annotations

from typing import Any

from minitorch.tensor import Tensor


def normalize_dim(dim: int, ndim: int) -> int:
    """A dim index in [0, ndim), with PyTorch's error for one out of range. A 0-d tensor
    accepts 0 and -1, as in PyTorch."""
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-size}, {size - 1}], "
            f"but got {dim})"
        )
    return dim % size


def normalize_dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """`None` or `()` mean every dim; an int or a sequence of ints otherwise. The result is
    sorted, each dim normalized by `normalize_dim`."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, int):
        return (normalize_dim(dim, ndim),)
    return tuple(sorted(normalize_dim(d, ndim) for d in dim))


def unsqueeze_dims(grad: Tensor, dims: tuple[int, ...], ndim: int) -> Tensor:
    """Put back the reduced `dims` (as size-1 dims) into the gradient of a reduction without
    keepdim, so that it broadcasts against the input of `ndim` dims."""
    for d in sorted(dims):
        if d < ndim:
            grad = grad.unsqueeze(d)
    return grad
