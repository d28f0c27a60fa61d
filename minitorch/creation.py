"""Creating tensors: the factory functions of PyTorch's subset that the course uses.

Each takes `dtype`, `device`, `requires_grad` and (where PyTorch has it) `out=` like its PyTorch
namesake, with PyTorch's parameter names. The storage is made by the torch function of the same
name, so
- random numbers come from torch's generator: `minitorch.manual_seed(0)` and
  `torch.manual_seed(0)` give the same values;
- the default dtype and device are torch's: `set_default_dtype` / `set_default_device` below set
  them for torch and minitorch alike, and every factory here honours them.
None of them is a `Function`, so each is marked `@recorded_creation`: a forward record sees its
calls as creation steps (NOTE [Forward record] in autograd/record.py).

The legacy typed constructors (`FloatTensor([1, 2])`, `LongTensor(2, 3)`) are at the end.
"""

from __future__ import annotations

from typing import Any

import torch

from minitorch.autograd.record import recorded_creation
from minitorch.ops.out import call_with_out
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
    if isinstance(data, (list, tuple)) and not isinstance(data, torch.Size):
        items = [_plain(d) for d in data]
        if items and all(isinstance(i, torch.Tensor) for i in items):
            return torch.stack(items)
        return items
    return data


@recorded_creation
def tensor(data: Any, *, dtype: torch.dtype | None = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:  # fmt: skip
    """A new tensor holding a copy of `data` (numbers, nested lists, numpy arrays, tensors)."""
    plain = _plain(data)
    if isinstance(data, (list, tuple)) and isinstance(plain, torch.Tensor):
        # A list of tensors, stacked into a new tensor already (torch.tensor() would warn).
        return _wrap(plain.to(dtype=dtype, device=device), requires_grad)
    return _wrap(torch.tensor(plain, dtype=dtype, device=device), requires_grad)


@recorded_creation
def as_tensor(data: Any, *, dtype: torch.dtype | None = None, device: Any = None) -> Tensor:
    """`data` as a tensor, without a copy where it can be: a tensor of the requested dtype and
    device is returned as it is."""
    if isinstance(data, Tensor) and dtype in (None, data.dtype) and device is None:
        return data
    return Tensor._make(torch.as_tensor(_plain(data), dtype=dtype, device=device))


@recorded_creation
def from_numpy(ndarray: Any) -> Tensor:
    """A tensor sharing memory with the numpy array."""
    return Tensor._make(torch.from_numpy(ndarray))


# Factories of a given size ----------------------------------------------------------------------
def _check_resizable(out: Any) -> None:
    """torch.empty and torch.randn resize `out` even when it has the right size, and resizing a
    tensor that requires grad is an error, even under no_grad(): PyTorch's rule, and message."""
    if isinstance(out, Tensor) and out.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")


@recorded_creation
def zeros(*size: Any, out: Tensor | None = None, dtype: torch.dtype | None = None,
          device: Any = None, requires_grad: bool = False) -> Tensor:  # fmt: skip
    """A tensor of zeros of the given size: `zeros(2, 3)` or `zeros((2, 3))`."""
    if out is not None:
        return call_with_out("aten::zeros", torch.zeros, out, _shape_args(size), dtype=dtype)
    return _wrap(torch.zeros(_shape_args(size), dtype=dtype, device=device), requires_grad)


@recorded_creation
def ones(*size: Any, out: Tensor | None = None, dtype: torch.dtype | None = None,
         device: Any = None, requires_grad: bool = False) -> Tensor:  # fmt: skip
    """A tensor of ones of the given size: `ones(2, 3)` or `ones((2, 3))`."""
    if out is not None:
        return call_with_out("aten::ones", torch.ones, out, _shape_args(size), dtype=dtype)
    return _wrap(torch.ones(_shape_args(size), dtype=dtype, device=device), requires_grad)


@recorded_creation
def empty(*size: Any, out: Tensor | None = None, dtype: torch.dtype | None = None,
          device: Any = None, requires_grad: bool = False) -> Tensor:  # fmt: skip
    """An uninitialized tensor of the given size (its values are whatever memory held)."""
    if out is not None:
        _check_resizable(out)
        return call_with_out("aten::empty", torch.empty, out, _shape_args(size), dtype=dtype)
    return _wrap(torch.empty(_shape_args(size), dtype=dtype, device=device), requires_grad)


@recorded_creation
def rand(*size: Any, generator: torch.Generator | None = None, out: Tensor | None = None,
         dtype: torch.dtype | None = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Uniform random numbers in [0, 1), drawn from torch's generator (or `generator`)."""
    if out is not None:
        return call_with_out("aten::rand", torch.rand, out, _shape_args(size),
                             generator=generator, dtype=dtype)  # fmt: skip
    data = torch.rand(_shape_args(size), generator=generator, dtype=dtype, device=device)
    return _wrap(data, requires_grad)


@recorded_creation
def randn(*size: Any, generator: torch.Generator | None = None, out: Tensor | None = None,
          dtype: torch.dtype | None = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Standard normal random numbers, drawn from torch's generator (or `generator`)."""
    if out is not None:
        _check_resizable(out)
        return call_with_out("aten::randn", torch.randn, out, _shape_args(size),
                             generator=generator, dtype=dtype)  # fmt: skip
    data = torch.randn(_shape_args(size), generator=generator, dtype=dtype, device=device)
    return _wrap(data, requires_grad)


@recorded_creation
def full(size: Any, fill_value: Any, *, out: Tensor | None = None,
         dtype: torch.dtype | None = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:  # fmt: skip
    """A tensor of the given size filled with `fill_value` (its dtype follows the value)."""
    if out is not None:
        return call_with_out("aten::full", torch.full, out, tuple(size), fill_value, dtype=dtype)
    data = torch.full(tuple(size), fill_value, dtype=dtype, device=device)
    return _wrap(data, requires_grad)


@recorded_creation
def arange(start: Any, end: Any = None, step: Any = 1, *, out: Tensor | None = None,
           dtype: torch.dtype | None = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:  # fmt: skip
    """`arange(end)` is `0, 1, ..., end - 1`; `arange(start, end, step)` counts from `start` up
    to (not including) `end`. Integers give int64, a float anywhere gives the default dtype."""
    bounds = (start,) if end is None else (start, end, step)
    if out is not None:
        return call_with_out("aten::arange", torch.arange, out, *bounds, dtype=dtype)
    return _wrap(torch.arange(*bounds, dtype=dtype, device=device), requires_grad)


@recorded_creation
def linspace(start: Any, end: Any, steps: int, *, out: Tensor | None = None,
             dtype: torch.dtype | None = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:  # fmt: skip
    """`steps` evenly spaced values from `start` to `end`, both included."""
    if out is not None:
        return call_with_out("aten::linspace", torch.linspace, out, start, end, steps, dtype=dtype)
    data = torch.linspace(start, end, steps, dtype=dtype, device=device)
    return _wrap(data, requires_grad)


@recorded_creation
def eye(n: int, m: int | None = None, *, out: Tensor | None = None,
        dtype: torch.dtype | None = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:  # fmt: skip
    """The n x m (default n x n) matrix with ones on the diagonal."""
    if out is not None:
        return call_with_out("aten::eye", torch.eye, out, n, n if m is None else m, dtype=dtype)
    data = torch.eye(n, n if m is None else m, dtype=dtype, device=device)
    return _wrap(data, requires_grad)


@recorded_creation
def randint(low: int = 0, high: Any = None, size: Any = None, *,
            generator: torch.Generator | None = None, out: Tensor | None = None,
            dtype: torch.dtype | None = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Random integers in [low, high) (int64): `randint(high, size)` or `randint(low, high,
    size)`, as in PyTorch (where `low` defaults to 0)."""
    if size is None:  # randint(high, size): the first two arguments shift
        low, high, size = 0, low, high
    elif high is None:  # randint(high, size=size)
        low, high = 0, low
    if out is not None:
        return call_with_out("aten::randint", torch.randint, out, low, high, tuple(size),
                             generator=generator, dtype=dtype)  # fmt: skip
    data = torch.randint(low, high, tuple(size), generator=generator,
                         dtype=dtype or torch.int64, device=device)  # fmt: skip
    return _wrap(data, requires_grad)


@recorded_creation
def randperm(n: int, *, generator: torch.Generator | None = None, out: Tensor | None = None,
             dtype: torch.dtype | None = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:  # fmt: skip
    """A random ordering of `0 .. n-1` (int64), e.g. to shuffle a dataset by hand: `x[perm]`."""
    if out is not None:
        return call_with_out("aten::randperm", torch.randperm, out, n, generator=generator)
    data = torch.randperm(n, generator=generator, dtype=dtype or torch.int64, device=device)
    return _wrap(data, requires_grad)


# Factories shaped like a tensor ------------------------------------------------------------------
def _like(name: str) -> Any:
    torch_fn = getattr(torch, name)

    def create(input: Tensor, *, dtype: torch.dtype | None = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:  # noqa: A002 # fmt: skip
        return _wrap(torch_fn(input._data, dtype=dtype, device=device), requires_grad)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = f"Like torch.{name}: a new tensor with the shape (dtype, device) of `input`."
    return recorded_creation(create)


zeros_like = _like("zeros_like")
ones_like = _like("ones_like")
empty_like = _like("empty_like")


@recorded_creation
def rand_like(input: Tensor, *, generator: torch.Generator | None = None,
              dtype: torch.dtype | None = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:  # noqa: A002 # fmt: skip
    """Uniform random numbers in [0, 1) with the shape (dtype, device) of `input`."""
    data = torch.rand_like(input._data, generator=generator, dtype=dtype, device=device)
    return _wrap(data, requires_grad)


@recorded_creation
def randn_like(input: Tensor, *, generator: torch.Generator | None = None,
               dtype: torch.dtype | None = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:  # noqa: A002 # fmt: skip
    """Standard normal random numbers with the shape (dtype, device) of `input`."""
    data = torch.randn_like(input._data, generator=generator, dtype=dtype, device=device)
    return _wrap(data, requires_grad)


@recorded_creation
def full_like(input: Tensor, fill_value: Any, *, dtype: torch.dtype | None = None,
              device: Any = None, requires_grad: bool = False) -> Tensor:  # noqa: A002 # fmt: skip
    """A new tensor with the shape (dtype, device) of `input`, filled with `fill_value`."""
    data = torch.full_like(input._data, fill_value, dtype=dtype, device=device)
    return _wrap(data, requires_grad)


# Global settings, shared with torch ---------------------------------------------------------------
def manual_seed(seed: int) -> Any:
    """Seed the random number generator (torch's, which minitorch's storage uses)."""
    return torch.manual_seed(seed)


def set_default_dtype(d: torch.dtype, /) -> None:
    """Make `d` (a floating point dtype, e.g. `minitorch.float64`) the dtype of new float
    tensors: `tensor([1.5])`, `zeros(2)`, `randn(2)`, `arange(0.0, 1.0, 0.5)`, `Tensor([1])`.

    It is torch's own setting (minitorch's storage is torch's), so it changes torch's default
    too. `set_default_dtype(get_default_dtype())` after a change restores it:

        previous = minitorch.get_default_dtype()
        minitorch.set_default_dtype(minitorch.float64)
        try:
            ...
        finally:
            minitorch.set_default_dtype(previous)
    """
    torch.set_default_dtype(d)


def get_default_dtype() -> torch.dtype:
    """The dtype of new float tensors (`float32` unless `set_default_dtype` changed it)."""
    return torch.get_default_dtype()


def set_default_device(device: Any) -> None:
    """Make `device` (e.g. "cuda", or None for "cpu") where the factories in this module put new
    tensors when they are given no `device=`. Like PyTorch, `from_numpy`, `Tensor(...)` and the
    legacy constructors (`FloatTensor`) stay on the CPU.

    It is torch's own setting (so it changes torch's default too), and like it, it costs a
    little on every torch call while it is not the CPU. Restore it with
    `set_default_device(previous)` where `previous = get_default_device()`.
    """
    torch.set_default_device(device)


def get_default_device() -> torch.device:
    """Where factories put new tensors by default (`cpu` unless `set_default_device`)."""
    return torch.get_default_device()


# Legacy typed constructors -----------------------------------------------------------------------
class LegacyTensorType(type):
    """The type of `FloatTensor`, `LongTensor`, ...: old PyTorch code (and many tutorials)
    creates tensors of a given dtype with them, and asks `isinstance(x, FloatTensor)`.

    - `FloatTensor([1, 2])` (data, copied as float32), `FloatTensor(2, 3)` or
      `FloatTensor(torch.Size([2, 3]))` (uninitialized, of that size), `FloatTensor()` (empty),
      `FloatTensor(t)` (the tensor `t` itself, seen through an alias; `t` must be float32);
    - `isinstance(x, FloatTensor)`: `x` is a float32 tensor on the CPU;
    - `x.type(FloatTensor)` casts `x` (see `Tensor.type`).
    As in PyTorch, they make CPU tensors whatever the default device, and they take no
    `dtype=` or `requires_grad=`. Their errors are torch's own: the arguments are checked by
    calling `torch.FloatTensor` & co.
    """

    dtype: torch.dtype
    is_cuda = False

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and not obj.is_cuda

    def __call__(cls, *args: Any, **kwargs: Any) -> Tensor:  # type: ignore[override]
        """`FloatTensor(...)`: the arguments go to `torch.FloatTensor`, which takes `device=`
        and rejects other keywords with its own error."""
        torch_type = getattr(torch, cls.__name__)
        if len(args) == 1 and isinstance(args[0], Tensor):
            source = args[0]
            torch_type(source._data, **kwargs)  # a TypeError, in torch's words, if dtypes differ
            return source[...]  # a view of all of `source` (AliasBackward0, as in PyTorch)
        return _make_legacy(torch_type, args, kwargs)


@recorded_creation
def _make_legacy(torch_type: Any, args: tuple, kwargs: dict) -> Tensor:
    return Tensor._make(torch_type(*(_plain(a) for a in args), **kwargs))


def _legacy_type(name: str) -> LegacyTensorType:
    """The legacy constructor `name` (e.g. "FloatTensor"), for the dtype of `torch.<name>`."""
    dtype = getattr(torch, name).dtype
    doc = f"{str(dtype).removeprefix('torch.')} tensors on the CPU (see LegacyTensorType)."
    return LegacyTensorType(name, (), {"dtype": dtype, "__doc__": doc, "__module__": __name__})


FloatTensor = _legacy_type("FloatTensor")
DoubleTensor = _legacy_type("DoubleTensor")
HalfTensor = _legacy_type("HalfTensor")
BFloat16Tensor = _legacy_type("BFloat16Tensor")
LongTensor = _legacy_type("LongTensor")
IntTensor = _legacy_type("IntTensor")
ShortTensor = _legacy_type("ShortTensor")
CharTensor = _legacy_type("CharTensor")
ByteTensor = _legacy_type("ByteTensor")
BoolTensor = _legacy_type("BoolTensor")
