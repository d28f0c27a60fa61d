"""Helpers for fused ops: ops whose backward formula runs on storage in a plain backward and on
minitorch tensors under `create_graph=True`. See NOTE [Fused ops: one backward formula, two ways
to run it] below; `ops/nn.py` (linear, the losses, layer_norm, conv2d) and `ops/rnn.py` (LSTM and
GRU steps) rely on it.
"""

from __future__ import annotations

import torch

from minitorch.autograd import grad_mode
from minitorch.tensor import Tensor

# NOTE [Fused ops: one backward formula, two ways to run it]
# A fused op (linear, mse_loss, conv2d, an LSTM step) writes its backward formula once, with what
# minitorch tensors and torch tensors share (`@`, `.t()`, `.sum()`, `lib.cat`, ...). Under
# `create_graph=True` grad mode is on during backward and the formula runs on minitorch tensors, so
# it is recorded and can be differentiated again; in a plain backward it runs directly on the
# storage: the same numbers without per-op bookkeeping. The pattern in a backward is
#
#     if plain_backward():
#         return wrap_storages(*formula(ctx, *storages(grad, x, weight)))
#     return formula(ctx, grad, x, weight)


def plain_backward() -> bool:
    """True inside a backward that records nothing (the default, not create_graph)."""
    return not grad_mode._state.grad_enabled


def storages(*tensors: Tensor | None) -> tuple:
    """The storage of each tensor (None stays None)."""
    return tuple(None if t is None else t._data for t in tensors)


def wrap_storages(*values: torch.Tensor | None) -> tuple:
    """Each storage as a new minitorch tensor (None stays None)."""
    return tuple(None if v is None else Tensor._make(v) for v in values)
