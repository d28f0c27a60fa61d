"""Creating tensors: the factory functions of PyTorch's subset that the course uses.

Each takes `dtype`, `device` and `requires_grad` like its PyTorch namesake; random numbers come
from torch's generator, so `minitorch.manual_seed(0)` and `torch.manual_seed(0)` give the same
values. None of them is a `Function`, so each is marked `@recorded_creation`: a forward record
sees its calls as creation steps (NOTE [Forward record] in autograd/record.py).
"""

from __future__ import annotations

from typing import Any

import torch

from minitorch.autograd.record import recorded_creation
from minitorch.tensor import Tensor, _shape_args


def _wrap(data: torch.Tensor, requires_grad: bool) -> Tensor:
    t = Tensor._make(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _plain(data: Any) -> Any:
    """Replace minitorch tensors inside (nested) lists by torch storage so torch can read them."""
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        items = [_plain(d) for d in data]
        if items and all(isinstance(i, torch.Tensor) for i in items):
            return torch.stack(items)
        return items
    return data


@recorded_creation
def tensor(data: Any, dtype: torch.dtype | None = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:  # fmt: skip
    """A new tensor holding a copy of `data` (numbers, nested lists, numpy arrays, tensors)."""
    plain = _plain(data)
    if isinstance(data, (list, tuple)) and isinstance(plain, torch.Tensor):
        # A list of tensors, stacked into a new tensor already (torch.tensor() would warn).
        return _wrap(plain.to(dtype=dtype, device=device), requires_grad)
    return _wrap(torch.tensor(plain, dtype=dtype, device=device), requires_grad)


@recorded_creation
def as_tensor(data: Any, dtype: torch.dtype | None = None, device: Any = None) -> Tensor:
    if isinstance(data, Tensor) and dtype in (None, data.dtype) and device is None:
        return data
    return Tensor._make(torch.as_tensor(_plain(data), dtype=dtype, device=device))


@recorded_creation
def from_numpy(array: Any) -> Tensor:
    """A tensor sharing memory with the numpy array."""
    return Tensor._make(torch.from_numpy(array))


def _factory(name: str) -> Any:
    torch_fn = getattr(torch, name)

    def create(*size: Any, dtype: torch.dtype | None = None, device: Any = None,
               requires_grad: bool = False, generator: Any = None) -> Tensor:  # fmt: skip
        extra = {"generator": generator} if generator is not None else {}
        data = torch_fn(_shape_args(size), dtype=dtype, device=device, **extra)
        return _wrap(data, requires_grad)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = f"Like torch.{name}: a new tensor of the given size."
    return recorded_creation(create)


zeros = _factory("zeros")
ones = _factory("ones")
empty = _factory("empty")
rand = _factory("rand")
randn = _factory("randn")


@recorded_creation
def full(size: Any, fill_value: Any, *, dtype: torch.dtype | None = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:  # fmt: skip
    return _wrap(torch.full(tuple(size), fill_value, dtype=dtype, device=device), requires_grad)


@recorded_creation
def arange(*args: Any, dtype: torch.dtype | None = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:  # fmt: skip
    return _wrap(torch.arange(*args, dtype=dtype, device=device), requires_grad)


@recorded_creation
def linspace(start: float, end: float, steps: int, *, dtype: torch.dtype | None = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:  # fmt: skip
    return _wrap(torch.linspace(start, end, steps, dtype=dtype, device=device), requires_grad)


@recorded_creation
def eye(n: int, m: int | None = None, *, dtype: torch.dtype | None = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:  # fmt: skip
    data = torch.eye(n, n if m is None else m, dtype=dtype, device=device)
    return _wrap(data, requires_grad)


@recorded_creation
def randint(*args: Any, dtype: torch.dtype | None = None, device: Any = None,
            generator: Any = None) -> Tensor:  # fmt: skip
    """`randint(high, size)` or `randint(low, high, size)`."""
    extra = {"generator": generator} if generator is not None else {}
    return Tensor._make(torch.randint(*args, dtype=dtype or torch.int64, device=device, **extra))


@recorded_creation
def randperm(n: int, *, generator: Any = None, dtype: torch.dtype | None = None,
             device: Any = None) -> Tensor:  # fmt: skip
    """A random ordering of `0 .. n-1` (int64), e.g. to shuffle a dataset by hand: `x[perm]`."""
    extra = {"generator": generator} if generator is not None else {}
    return Tensor._make(torch.randperm(n, dtype=dtype or torch.int64, device=device, **extra))


def _like(name: str) -> Any:
    torch_fn = getattr(torch, name)

    def create(t: Tensor, *args: Any, dtype: torch.dtype | None = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:  # fmt: skip
        data = torch_fn(t._data, *args, dtype=dtype, device=device)
        return _wrap(data, requires_grad)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = f"Like torch.{name}: a new tensor with the shape (dtype, device) of `t`."
    return recorded_creation(create)


zeros_like = _like("zeros_like")
ones_like = _like("ones_like")
empty_like = _like("empty_like")
full_like = _like("full_like")
rand_like = _like("rand_like")
randn_like = _like("randn_like")


def manual_seed(seed: int) -> Any:
    """Seed the random number generator (torch's, which minitorch's storage uses)."""
    return torch.manual_seed(seed)
