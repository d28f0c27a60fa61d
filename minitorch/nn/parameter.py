"""`Parameter`: a tensor that a `Module` registers as one of its learnable weights."""

from __future__ import annotations

from typing import Any

import torch

from minitorch.autograd.record import report_opaque
from minitorch.tensor import Tensor, _Version


class Parameter(Tensor):
    """A leaf tensor that requires grad (by default) and that `Module.__setattr__` registers.

    `Parameter(t)` shares `t`'s storage, as in PyTorch; `Parameter()` is an empty parameter.
    Ops on a parameter give plain `Tensor`s.
    """

    __slots__ = ()

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            storage = torch.empty(0)
        elif isinstance(data, Tensor):
            storage = data._data
        elif isinstance(data, torch.Tensor):
            storage = data.detach()
        else:
            raise TypeError(
                f"Parameter(): expected a Tensor as data, but got {type(data).__name__}"
            )
        version = data._version_counter if isinstance(data, Tensor) else None
        Tensor._init(self, storage, None, False, 0, version or _Version())
        if requires_grad:
            self.requires_grad_(True)
        # A layer built inside a recorded call gets new weights on every eager call: a replay
        # that kept the first call's would differ (NOTE [Forward record]).
        report_opaque("an nn.Parameter was created")

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        result = Parameter(Tensor._make(self._data.clone()), self._requires_grad)
        if self._grad is not None:
            result._grad = Tensor._make(self._grad._data.clone())
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (_rebuild_parameter, (self._data, self._requires_grad))


def _rebuild_parameter(data: torch.Tensor, requires_grad: bool) -> Parameter:
    return Parameter(Tensor._make(data), requires_grad)
