"""Activation checkpointing: keep less for backward, recompute it when backward needs it.

`checkpoint(fn, *args)` runs `fn` normally, so the graph it records is the usual one, but with
saved-tensor hooks that keep nothing: each tensor an op inside `fn` saves is replaced by an empty
placeholder. When backward first needs one of them, `fn` runs again on the same inputs (with the
random number generator put back where it was, so dropout draws the same mask) and the
recomputed saved tensors fill the placeholders. Gradients are identical; the memory held between
forward and backward drops to the block's inputs and outputs. The price is one more forward.

This is PyTorch's non-reentrant variant (`use_reentrant=False`), built on
`minitorch.autograd.graph.saved_tensors_hooks`. minitorch has no reentrant variant: any
`use_reentrant` is accepted and runs this one (same gradients; it also works with
`autograd.grad`, with inputs that do not require grad, and with `create_graph=True`).
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from minitorch.autograd.grad_mode import enable_grad, is_grad_enabled
from minitorch.autograd.graph import saved_tensors_hooks
from minitorch.tensor import Tensor

__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential"]


class CheckpointError(RuntimeError):
    """Recomputation did not save the same tensors as the original forward (PyTorch's name)."""


class _Placeholder:
    """What the graph keeps instead of a saved tensor; filled in by the recomputation."""

    __slots__ = ("tensor", "frame", "__weakref__")

    def __init__(self, frame: _CheckpointFrame) -> None:
        self.tensor: Tensor | None = None
        self.frame = frame

    def kept_tensors(self) -> list:
        """What this saved value keeps alive: the block's inputs (needed to recompute) and the
        recomputed tensor once backward filled it in. `minitorch.memory.saved_bytes` asks."""
        return [a for a in self.frame.args if isinstance(a, Tensor)] + [self.tensor]


class _CheckpointFrame:
    """Everything one `checkpoint` call needs to recompute its saved tensors later."""

    def __init__(self, fn: Callable, args: tuple, kwargs: dict, preserve_rng_state: bool) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.rng_state = _rng_state(args) if preserve_rng_state else None
        self.placeholders: list[weakref.ref] = []  # in the order the forward saved them
        self.metadata: list[tuple] = []  # (shape, dtype, device) of each saved tensor
        self.check_metadata = True
        self.recompute_context: Any = None

    def pack(self, tensor: Tensor) -> _Placeholder:
        placeholder = _Placeholder(self)
        self.placeholders.append(weakref.ref(placeholder))
        self.metadata.append((tensor.shape, tensor.dtype, tensor.device))
        return placeholder

    def unpack(self, placeholder: _Placeholder) -> Tensor:
        if placeholder.tensor is None:  # the first saved tensor backward asks for
            self.recompute()
        return placeholder.tensor

    def recompute(self) -> None:
        """Run the block again and hand each saved tensor to the placeholder it belongs to.

        Under `create_graph=True` (grad mode on in backward) the block runs on the original
        inputs and the recomputed tensors keep their graph, so that gradients of gradients
        flow through the recomputation back to the inputs."""
        keep_graph = is_grad_enabled()
        count = 0

        def fill(tensor: Tensor) -> Tensor | None:
            nonlocal count
            if count >= len(self.placeholders):
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during recomputation "
                    "than during the original forward pass."
                )
            expected = self.metadata[count]
            actual = (tensor.shape, tensor.dtype, tensor.device)
            if self.check_metadata and actual != expected:
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values for the following tensors have "
                    f"different metadata than during the forward pass.\ntensor at position "
                    f"{count}:\nsaved metadata: {_describe(expected)}\nrecomputed metadata: "
                    f"{_describe(actual)}"
                )
            placeholder = self.placeholders[count]()
            if placeholder is not None:  # None: its node was already freed by backward
                placeholder.tensor = tensor if keep_graph else tensor.detach()
            count += 1
            # The recomputed graph itself is only differentiated under create_graph.
            return tensor.detach() if keep_graph else None

        inputs = self.args if keep_graph else tuple(_detached(a) for a in self.args)
        with self.recompute_context or contextlib.nullcontext(), _restored_rng(self.rng_state):
            with enable_grad(), saved_tensors_hooks(fill, _recomputed):
                self.fn(*inputs, **self.kwargs)
        if count != len(self.placeholders):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                f"original forward and recomputation.\nNumber of tensors saved during forward: "
                f"{len(self.placeholders)}\nNumber of tensors saved during recomputation: {count}"
            )


def _recomputed(packed: Tensor | None) -> Tensor:
    if packed is None:
        raise CheckpointError(
            "torch.utils.checkpoint: the graph recorded while recomputing a checkpointed block "
            "can only be differentiated when backward runs with create_graph=True"
        )
    return packed


def _describe(meta: tuple) -> str:
    shape, dtype, device = meta
    return f"{{'shape': {tuple(shape)}, 'dtype': {dtype}, 'device': {device}}}"


def _detached(value: Any) -> Any:
    """An input for the recomputation: the same storage, cut from the outer graph, requiring
    grad as the original did (so the ops inside record and save the same tensors)."""
    if isinstance(value, Tensor):
        return value.detach().requires_grad_(value.requires_grad)
    return value


def _rng_state(args: tuple) -> tuple:
    """The CPU generator's state, and the CUDA generators' of the devices the inputs are on."""
    devices = sorted({a.device.index or 0 for a in args if isinstance(a, Tensor) and a.is_cuda})
    cuda = [(d, torch.cuda.get_rng_state(d)) for d in devices]
    return torch.get_rng_state(), cuda


class _restored_rng:
    """Run a block with the generator state `state`, then put the current state back."""

    def __init__(self, state: tuple | None) -> None:
        self.state = state

    def __enter__(self) -> None:
        if self.state is None:
            return
        cpu, cuda = self.state
        self.saved = _rng_state(())[0], [(d, torch.cuda.get_rng_state(d)) for d, _ in cuda]
        torch.set_rng_state(cpu)
        for device, state in cuda:
            torch.cuda.set_rng_state(state, device)

    def __exit__(self, *exc_info: Any) -> None:
        if self.state is None:
            return
        cpu, cuda = self.saved
        torch.set_rng_state(cpu)
        for device, state in cuda:
            torch.cuda.set_rng_state(state, device)


def checkpoint(
    function: Callable,
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable[[], tuple[Any, Any]] | None = None,
    determinism_check: str = "default",
    debug: bool = False,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """Run `function(*args, **kwargs)` keeping none of the tensors its ops save for backward;
    backward recomputes them by running `function` again on the same inputs.

    `function` must compute the same thing both times (the same ops on tensors of the same
    shapes); otherwise backward raises `CheckpointError`. With `preserve_rng_state=True` (the
    default) random ops such as dropout draw the same numbers again. The inputs stay alive until
    backward, as in PyTorch. `use_reentrant` is accepted for compatibility and ignored (see the
    module docstring); leaving it out warns, as PyTorch does.

    `context_fn()` returns two context managers, entered around the forward run and around the
    recomputation. `determinism_check="none"` skips the comparison of the recomputed tensors'
    shapes, dtypes and devices with the original ones. `debug` is accepted and ignored.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "use_reentrant=False is recommended (minitorch always runs the non-reentrant "
            "variant).",
            stacklevel=2,
        )
    if determinism_check not in ("default", "none"):
        raise ValueError(
            f"determinism_check should be one of ['default', 'none'], but got {determinism_check}"
        )
    forward_context, recompute_context = context_fn() if context_fn else (None, None)
    frame = _CheckpointFrame(function, args, kwargs, preserve_rng_state)
    frame.check_metadata = determinism_check == "default"
    frame.recompute_context = recompute_context
    with forward_context or contextlib.nullcontext():
        with saved_tensors_hooks(frame.pack, frame.unpack):
            return function(*args, **kwargs)


def checkpoint_sequential(
    functions: Sequence[Callable] | Any,
    segments: int,
    input: Any,  # noqa: A002  (PyTorch's parameter name)
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Run `functions` (a list of callables, or an `nn.Sequential`) one after another on
    `input`, split into `segments` chunks; every chunk but the last is checkpointed.

    Between forward and backward this keeps each checkpointed chunk's input plus everything the
    last chunk saves: for N equal layers about `segments - 1 + N / segments` activations instead
    of N, smallest near `segments = sqrt(N)`.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
            "passed explicitly. use_reentrant=False is recommended.",
            stacklevel=2,
        )
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be at least 1, got {segments}")
    size = len(functions) // segments
    if size == 0:
        raise ValueError(
            f"checkpoint_sequential: {segments} segments for {len(functions)} functions; "
            "use at most one segment per function"
        )
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        chunk = functions[start : end + 1]
        input = checkpoint(_run_chunk(chunk), input, use_reentrant=bool(use_reentrant), **kwargs)
    return _run_chunk(functions[end + 1 :])(input)


def _run_chunk(functions: list[Callable]) -> Callable:
    def forward(value: Any) -> Any:
        for fn in functions:
            value = fn(value)
        return value

    return forward
