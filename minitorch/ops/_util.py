"""Helpers shared by the op families: scalars as tensors, dims, reducing broadcast gradients."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from minitorch.autograd import grad_mode
from minitorch.tensor import Tensor


def as_tensor(value: Any, like: Tensor) -> Tensor:
    """A Python number as a 0-d tensor on `like`'s device, typed so it does not change the
    result's dtype (PyTorch's "wrapped number" rule)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, torch.Tensor):
        return Tensor._make(value)
    if isinstance(value, bool):
        dtype = torch.bool
    elif isinstance(value, int):
        dtype = like.dtype if like.dtype != torch.bool else torch.int64
    elif isinstance(value, float):
        dtype = like.dtype if like.dtype.is_floating_point else torch.get_default_dtype()
    else:
        return Tensor._make(torch.as_tensor(value, device=like.device))
    return Tensor._make(torch.tensor(value, dtype=dtype, device=like.device))


def pair(a: Any, b: Any) -> tuple[Tensor, Tensor]:
    """Both operands of a binary op as tensors (one of them is a tensor already)."""
    if isinstance(a, Tensor):
        return a, as_tensor(b, a)
    return as_tensor(a, b), b


def sum_to_shape(grad: Tensor, shape: Sequence[int]) -> Tensor:
    """Reduce a gradient of a broadcast result back to an input's `shape`: sum over the leading
    dims broadcasting added and over the dims where the input had size 1."""
    if grad._data.shape == shape:
        return grad
    shape = tuple(shape)
    lead = grad.dim() - len(shape)
    dims = list(range(lead))
    dims += [lead + i for i, size in enumerate(shape) if size == 1 and grad.shape[lead + i] != 1]
    if dims:
        grad = grad.sum(dim=tuple(dims), keepdim=True)
    if lead:
        grad = grad.reshape(shape)
    return grad


def normalize_dim(dim: int, ndim: int) -> int:
    """A dim index in [0, ndim), with PyTorch's error for one out of range."""
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-size}, {size - 1}], "
            f"but got {dim})"
        )
    return dim % size


def normalize_dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """`None` or `()` mean every dim; an int or a sequence of ints otherwise."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, int):
        return (normalize_dim(dim, ndim),)
    return tuple(sorted(normalize_dim(d, ndim) for d in dim))


def unsqueeze_dims(grad: Tensor, dims: tuple[int, ...], ndim: int) -> Tensor:
    """Put back the reduced `dims` (as size-1 dims) into the gradient of a reduction without
    keepdim, so that it broadcasts against the input."""
    for d in sorted(dims):
        if d < ndim:
            grad = grad.unsqueeze(d)
    return grad


# Fused ops: one backward formula, two ways to run it ------------------------------------------
# A fused op (linear, cross-entropy, conv2d, an LSTM step) writes its backward formula once, with
# what minitorch tensors and torch tensors share (`@`, `.t()`, `.sum()`, `lib.cat`, ...). Under
# `create_graph=True` grad mode is on during backward and the formula runs on minitorch tensors, so
# it is recorded and can be differentiated again; in a plain backward it runs directly on the
# storage: the same numbers without per-op bookkeeping.
def plain_backward() -> bool:
    """True inside a backward that records nothing (the default, not create_graph)."""
    return not grad_mode._state.grad_enabled


def storages(*tensors: Tensor | None) -> tuple:
    """The storage of each tensor (None stays None)."""
    return tuple(None if t is None else t._data for t in tensors)


def wrap_storages(*values: torch.Tensor | None) -> tuple:
    """Each storage as a new minitorch tensor (None stays None)."""
    return tuple(None if v is None else Tensor._make(v) for v in values)


# Python numbers in binary ops ---------------------------------------------------------------------
# torch handles `storage * 0-d tensor` in about half the time of `storage * python_float`, with the
# same result: for a float32/float64 op it casts the number to the op's dtype either way. So a
# number meeting a float tensor becomes a cached 0-d tensor of that dtype and device. Zero, NaN and
# other dtypes pass through unchanged (-0.0 == 0.0 as dict keys; integer and half-precision
# tensors have their own promotion and rounding rules).
_CACHEABLE_DTYPES = (torch.float32, torch.float64)
_number_storages: dict = {}


def number_storage(value: Any, like: torch.Tensor) -> Any:
    """`value` (a Python number) as a storage to combine with `like`, or `value` itself."""
    kind = type(value)
    if (kind is not float and kind is not int) or not value or value != value:
        return value
    if kind is int and not -(2**31) < value < 2**31:
        return value
    dtype = like.dtype
    if dtype not in _CACHEABLE_DTYPES:
        return value
    device = like.device
    key = (kind, value, dtype, device)
    storage = _number_storages.get(key)
    if storage is None:
        if len(_number_storages) >= 4096:
            _number_storages.clear()
        storage = _number_storages[key] = torch.tensor(value, dtype=dtype, device=device)
    return storage
