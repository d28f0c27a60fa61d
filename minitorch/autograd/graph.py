"""Inspecting and hooking the recorded graph: node types and saved-tensor hooks.

`saved_tensors_hooks(pack, unpack)`: while active, every tensor an op saves for backward is passed
through `pack` and the result is kept instead; backward calls `unpack` on it to get the tensor
back. Use it to compress or offload what the graph keeps alive. `pack` should store
`tensor.detach()` or a copy: storing the tensor itself keeps its graph alive (a leak).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from minitorch.autograd.function import AccumulateGrad, BackwardNode, Node
from minitorch.autograd.grad_mode import _state

__all__ = ["Node", "BackwardNode", "AccumulateGrad", "saved_tensors_hooks"]


class saved_tensors_hooks:
    """Context manager installing a (pack, unpack) pair for the tensors saved inside it."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        _state.saved_tensors_hooks = _state.saved_tensors_hooks + (
            (self.pack_hook, self.unpack_hook),
        )
        return self

    def __exit__(self, *exc_info: Any) -> None:
        _state.saved_tensors_hooks = _state.saved_tensors_hooks[:-1]
