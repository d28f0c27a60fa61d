"""Python numbers as operands of tensor ops (`x * 2`, `clamp(x, min=0)`, `x > 0.5`).

PyTorch treats such a number as a "wrapped number": a 0-d tensor that needs no gradient and does
not change the result's dtype (`float32 tensor * 2.5` stays float32). Two helpers follow that rule:

- `as_tensor` / `pair` turn the number into a 0-d minitorch tensor, for ops whose Function takes
  tensors only (comparisons, `where`, `clamp`, in-place copies).
- `number_storage` is the arithmetic fast path: a binary arithmetic Function keeps the number as
  a number and only turns it into a storage at the moment it computes (see below).
"""

from __future__ import annotations

from typing import Any

import torch

from minitorch.tensor import Tensor


def as_tensor(value: Any, like: Tensor) -> Tensor:
    """A Python number as a 0-d tensor on `like`'s device, typed so it does not change the
    result's dtype (PyTorch's "wrapped number" rule). Tensors pass through; a torch tensor is
    wrapped as it is."""
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


# torch handles `storage * 0-d tensor` in about half the time of `storage * python_float`, with the
# same result: for a float32/float64 op it casts the number to the op's dtype either way. So a
# number meeting a float tensor becomes a cached 0-d tensor of that dtype and device. Zero, NaN and
# other dtypes pass through unchanged (-0.0 == 0.0 as dict keys; integer and half-precision
# tensors have their own promotion and rounding rules).
_CACHEABLE_DTYPES = (torch.float32, torch.float64)
_number_storages: dict = {}


def number_storage(value: Any, like: torch.Tensor) -> Any:
    """`value` (a Python number) as a storage to combine with `like`, or `value` itself.

    Either way `like <op> result` gives bit-for-bit the result of `like <op> value`."""
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
