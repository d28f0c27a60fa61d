"""`Variable`: the wrapper that old PyTorch code (before 0.4) put around every tensor.

Since PyTorch 0.4 a tensor does all a Variable did, and `Variable(t)` only remains so that old
programs run. What it does in PyTorch (2.x), and so here:
- `Variable(t)` is a NEW leaf tensor sharing `t`'s storage and version counter, cut from `t`'s
  graph: `t.detach()`.
- `Variable(t, requires_grad=True)` is that leaf with `requires_grad=True`; `t` itself is left
  as it was (its `requires_grad` does not change), and gradients collect in the new leaf's
  `.grad`.
- `.data` and `.grad` are those of a tensor (the result IS a tensor).
- `isinstance(x, Variable)` is True for every tensor.
- `volatile=True` is ignored with PyTorch's warning (use `with no_grad():`).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch

from minitorch.tensor import Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """`Variable(data, requires_grad=False)`: `data.detach()`, made to require grad if asked.
    Returns a minitorch Tensor (never a Variable instance)."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = False,  # type: ignore[misc]
                volatile: bool = False) -> Tensor:  # fmt: skip
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            return Tensor._make(torch.empty(0))
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        leaf = data.detach()
        if requires_grad:
            leaf.requires_grad_(True)
        return leaf
