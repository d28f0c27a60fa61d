"""Inspecting and hooking the recorded graph: node types, saved-tensor hooks, saved tensors.

`saved_tensors_hooks(pack, unpack)`: while active, every tensor an op saves for backward is passed
through `pack` (at save time, with grad mode off) and the result is kept instead; backward calls
`unpack` on it to get the tensor back (each time the saved value is read). Use it to compress or
offload what the graph keeps alive. Only the innermost pair of nested hooks applies. `pack` should
store `tensor.detach()` or a copy: storing the tensor itself keeps its graph alive (a cycle, so a
leak until the garbage collector runs). `save_on_cpu()` is such a pair that moves every saved
tensor to CPU memory and back.

`saved_tensors(node)` lists what one node keeps for backward, for tools and for teaching.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

from minitorch.autograd.function import AccumulateGrad, BackwardNode, Node, SavedTensor
from minitorch.autograd.grad_mode import _state

__all__ = [
    "Node",
    "BackwardNode",
    "AccumulateGrad",
    "saved_tensors_hooks",
    "save_on_cpu",
    "disable_saved_tensors_hooks",
    "saved_tensors",
]


class _DisabledHooks(threading.local):
    message: str | None = None  # set inside `disable_saved_tensors_hooks(message)`


_disabled = _DisabledHooks()


class saved_tensors_hooks:
    """Context manager installing a (pack, unpack) pair for the tensors saved inside it.

    `pack_hook(tensor) -> anything` runs when an op saves `tensor`; `unpack_hook(packed) ->
    Tensor` runs in backward and must return a tensor with the original's shape and dtype.
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        if _disabled.message is not None:
            raise RuntimeError(_disabled.message)
        _state.saved_tensors_hooks = _state.saved_tensors_hooks + (
            (self.pack_hook, self.unpack_hook),
        )
        return self

    def __exit__(self, *exc_info: Any) -> None:
        _state.saved_tensors_hooks = _state.saved_tensors_hooks[:-1]


class save_on_cpu(saved_tensors_hooks):
    """Keep every tensor saved inside this context in CPU memory; backward moves it back to the
    device it came from. Trades GPU memory for copies. On CPU the tensor is kept as it is.

    `pin_memory=True` packs into page-locked memory (when CUDA is available) so that the copy
    back can overlap with computation, as in PyTorch.
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        from minitorch.tensor import Tensor

        pinnable = pin_memory and getattr(torch, device_type, torch.cuda).is_available()

        def pack_to_cpu(tensor: Tensor) -> tuple[torch.device, Tensor]:
            if not pinnable:
                return tensor.device, Tensor._make(tensor._data.cpu())
            packed = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
            packed.copy_(tensor._data, non_blocking=True)
            return tensor.device, Tensor._make(packed)

        def unpack_from_cpu(packed: tuple[torch.device, Tensor]) -> Tensor:
            device, tensor = packed
            return Tensor._make(tensor._data.to(device, non_blocking=pinnable))

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:
    """Inside this context, installing saved-tensor hooks raises `RuntimeError(error_message)`.
    Libraries use it to protect code that must not have its saved tensors swapped out."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        self._previous = _disabled.message
        _disabled.message = self.error_message

    def __exit__(self, *exc_info: Any) -> None:
        _disabled.message = self._previous


def saved_tensors(node: Node) -> list[tuple[str, Any]]:
    """What `node` keeps alive for backward, as `(name, value)` pairs.

    Names are PyTorch's (`self`, `other`, `result`) for built-in ops and `saved_tensors[i]` for a
    custom Function. The value is the saved tensor, or whatever a pack hook returned for it. Empty
    for `AccumulateGrad`, for nodes that save nothing and after the graph was freed by backward.
    Reading saved values this way runs no unpack hook and performs no version check.
    """
    saved = getattr(node, "_saved", None)
    if not saved:
        return []
    names = type(node)._saved_names
    result = []
    for index, entry in enumerate(saved):
        if entry is None:
            continue
        name = names[index] if index < len(names) else f"saved_tensors[{index}]"
        result.append((name, _saved_value(entry)))
    return result


def _saved_value(entry: SavedTensor) -> Any:
    return entry.packed if entry.unpack_hook is not None else entry.tensor
