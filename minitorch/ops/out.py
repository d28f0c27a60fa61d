"""The `out=` keyword: `torch.add(a, b, out=c)` writes the result into `c` and returns `c`.

PyTorch's rules, which `call_with_out` follows:
- `out` is resized to the result's shape: silently when it has no elements, with a deprecation
  warning otherwise; its dtype stays, and a result that cannot be cast to it is an error;
- an op with `out=` is never recorded, so it is an error while grad mode is on and `out` or an
  input requires grad ("functions with out=... arguments don't support automatic
  differentiation"); under `no_grad()` it is fine, e.g. for writing into a parameter;
- writing into `out` is an in-place change: its version counter goes up (by one, or by two
  where torch resizes it first).

The numbers come from torch's own `out=` kernel run on the storages, so the resizing, the casting
rules and the error messages (which differ from op to op) are exactly PyTorch's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

from minitorch.autograd import grad_mode
from minitorch.autograd.record import report_opaque
from minitorch.tensor import Tensor

# The module, not the `minitorch.tensor` function: its `_memory_watch` is set while
# `minitorch.memory` tracks storage.
_tensor_module = sys.modules["minitorch.tensor"]


def _storages(value: Any) -> Any:
    """`value` with every minitorch tensor (also inside lists and tuples) replaced by storage."""
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        return type(value)(_storages(v) for v in value)
    return value


def _tensors(values: Any) -> list[Tensor]:
    """The minitorch tensors among `values` (looking inside lists and tuples)."""
    if isinstance(values, Tensor):
        return [values]
    if isinstance(values, (list, tuple)):
        return [t for v in values for t in _tensors(v)]
    return []


def call_with_out(name: str, torch_fn: Callable[..., Any], out: Any, *args: Any,
                  differentiable: bool = True, **kwargs: Any) -> Any:  # fmt: skip
    """`torch_fn(*args, **kwargs, out=...)` computed into the minitorch tensor `out` (or a tuple
    of them, as `sort` takes); returns `out`. `name` is the op's name in PyTorch's error
    messages (`"add"`, or `"aten::zeros"` for a factory). `differentiable=False` is for ops
    that PyTorch never differentiates (`multinomial`): for those it has no such error."""
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if not isinstance(o, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(o).__name__}")
    tensors = _tensors((args, outs))
    if differentiable and grad_mode.is_grad_enabled() and any(t.requires_grad for t in tensors):
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad."
        )
    # A forward record cannot replay a write into `out`: NOTE [Forward record].
    report_opaque(f"{name}(out=...)")
    storages = tuple(o._data for o in outs)
    before = [(s._version, _memory_of(s)) for s in storages]
    kwargs = {key: _storages(value) for key, value in kwargs.items()}
    torch_fn(*_storages(args), **kwargs, out=storages if len(storages) > 1 else storages[0])
    for o, (version, memory) in zip(outs, before):
        # As many in-place changes as torch made to the storage (1, or 2 when it resized).
        o._version_counter.value += o._data._version - version
        if _tensor_module._memory_watch is not None and _memory_of(o._data) != memory:
            _tensor_module._memory_watch(o)  # resizing replaced or grew the storage
    return out


def _memory_of(storage: torch.Tensor) -> tuple[int, int]:
    untyped = storage.untyped_storage()
    return untyped.data_ptr(), untyped.nbytes()
