"""Compiling a recorded program into the flat lists of steps a replay runs (NOTE [Replay on
storage] in replay.py).

Everything that can be decided once is decided here, when a trace is compiled: where each
argument comes from (a slot or a constant, as a list index), which kernel runs each op (the op's
own `on_storage` or the generic one built on `forward_with_ctx`), which arguments receive
gradients and whether a gradient must be summed back to an argument's shape. What is left for
each replayed step is a few list lookups and the torch calls themselves.

A forward step is `step(values, backwards)`; a backward step is `step(backwards, grads,
owned)`. `values` and `grads` are lists indexed by slot; `backwards` holds, for the k-th op, the
`backward` its kernel returned; `owned` is the set of slots whose gradient is a sum this replay
made (see `accumulate`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from minitorch.autograd.function import Function, forward_with_ctx, storage_kernel
from minitorch.autograd.record import (
    Alias,
    Const,
    Creation,
    Op,
    Pack,
    Program,
    Read,
    ReadMismatch,
    Ref,
)
from minitorch.tensor import Tensor

Step = Callable[..., None]


# -------------------------------------------------------------------------------------------------
# One optimization: an op repeated on the same arguments runs once
# -------------------------------------------------------------------------------------------------
def share_repeated_ops(program: Program) -> list:
    """The steps of `program`, with every op that repeats an earlier one (same op, same argument
    slots, same constants, same gradients wanted) replaced by aliases of the earlier op's outputs.

    A static program shows what a dynamic one cannot: an LSTM cell adds its two biases and
    transposes its weight again at every time step. Replayed, those run once; in backward the
    gradients of the copies flow through the aliases into the first op's outputs, summed in
    the order the engine would sum them, so the numbers do not change. Only ops with a storage
    kernel qualify: a kernel is a pure function of its arguments (no random numbers)."""
    first_outputs: dict[tuple, tuple] = {}
    steps = []
    for step in program.steps:
        key = _op_key(step) if isinstance(step, Op) else None
        if key is None:
            steps.append(step)
        elif key in first_outputs:
            for first, output in zip(first_outputs[key], step.outputs):
                if output is not None:
                    steps.append(Alias(first, output, detached=False))
        else:
            first_outputs[key] = step.outputs
            steps.append(step)
    return steps


_PLAIN_CONSTANTS = (int, float, bool, str, type(None), tuple, torch.Size, torch.dtype)


def _op_key(op: Op) -> tuple | None:
    """What makes two ops the same computation; None for an op that may not be shared."""
    if storage_kernel(op.function) is None:
        return None
    key: list = [op.function, op.needs_input_grad]  # (one of them may run under no_grad)
    for arg in op.args:
        if isinstance(arg, Ref):
            key.append(arg)
        elif isinstance(arg, Const) and type(arg.value) in _PLAIN_CONSTANTS:
            key.append((type(arg.value), repr(arg.value)))  # repr tells 0.0 from -0.0
        else:
            return None
    return tuple(key)


# -------------------------------------------------------------------------------------------------
# Forward
# -------------------------------------------------------------------------------------------------
def forward_steps(
    program: Program, record: list, recording: bool, check_reads: bool
) -> tuple[list[Step], list]:
    """The forward steps for `record` (the steps of `program`, after `share_repeated_ops`),
    with gradients wanted or not (`recording`), and the `values` template they run on: one entry
    per slot (None, filled per call), then the constants the ops take."""
    template: list = [None] * len(program.slots)
    steps: list[Step] = []
    for step in record:
        if isinstance(step, Op):
            needs = step.needs_input_grad if recording else (False,) * len(step.args)
            steps.append(_op_step(step, needs, template))
        elif isinstance(step, Alias):
            steps.append(_alias_step(step))
        elif isinstance(step, Creation):
            steps.append(_creation_step(step))
        elif isinstance(step, Read):
            if check_reads:
                steps.append(_read_step(step))
        else:  # Write and Opaque: trace.py refuses programs that hold them
            raise RuntimeError(f"minitorch.jit cannot replay the step `{step}`")
    return steps, template


def _op_step(op: Op, needs: tuple[bool, ...], template: list) -> Step:
    """`values[outputs] = kernel(needs, *arguments)`, keeping the kernel's backward."""
    own, outputs = storage_kernel(op.function), op.outputs
    if own is not None and len(outputs) == 1 and _plain(op.args) and len(op.args) in (1, 2):
        places = [_place(a, template) for a in op.args]
        return _small_op_step(own, needs, places, outputs[0])
    kernel, arguments = _kernel_and_arguments(op, template)

    def run_op(values: list, backwards: list) -> None:
        results, backward = kernel(needs, *arguments(values))
        if len(outputs) == 1:
            values[outputs[0]] = results
        else:
            for slot, result in zip(outputs, results):
                if slot is not None:
                    values[slot] = result
        backwards.append(backward)

    return run_op


def _small_op_step(kernel: Callable, needs: tuple, places: list[int], slot: int) -> Step:
    """`_op_step` for the most common ops (elementwise, views): a storage kernel, one result,
    one or two arguments. The same as the general step, with fewer Python calls."""
    if len(places) == 1:
        (a,) = places

        def run_unary_op(values: list, backwards: list) -> None:
            values[slot], backward = kernel(needs, values[a])
            backwards.append(backward)

        return run_unary_op
    a, b = places

    def run_binary_op(values: list, backwards: list) -> None:
        values[slot], backward = kernel(needs, values[a], values[b])
        backwards.append(backward)

    return run_binary_op


def _kernel_and_arguments(op: Op, template: list) -> tuple[Callable, Callable[[list], Any]]:
    """The op's kernel, and a function `values -> its arguments`."""
    own = storage_kernel(op.function)
    if own is not None and _plain(op.args):
        places = [_place(a, template) for a in op.args]
        return own, lambda values: [values[i] for i in places]
    # Slower but general: the arguments are resolved one by one (a pack item by item), and
    # wrapped as tensors for an op's own forward.
    kernel = own or _generic_kernel(op.function, len(op.outputs) == 1)
    wrap, args = own is None, op.args
    return kernel, lambda values: [_resolve(a, values, wrap) for a in args]


def _plain(args: tuple) -> bool:
    """True if every argument is a slot or a constant (no pack to resolve item by item)."""
    return all(isinstance(a, (Ref, Const)) for a in args)


def _place(arg: Ref | Const, template: list) -> int:
    """Where an argument is found in `values`: its slot, or a new entry for a constant."""
    if isinstance(arg, Ref):
        return arg.slot
    template.append(arg.value)
    return len(template) - 1


def _resolve(arg: Any, values: list, wrap: bool) -> Any:
    """An argument's value: storage, or a minitorch tensor over it when `wrap` (what a
    Function's own forward receives); a raw-storage argument (`Ref.storage`) stays storage."""
    if isinstance(arg, Ref):
        value = values[arg.slot]
        return Tensor._make(value) if wrap and not arg.storage else value
    if isinstance(arg, Pack):
        return arg.kind(_resolve(i, values, wrap) for i in arg.items)
    return arg.value


def _generic_kernel(function: type[Function], single_output: bool) -> Callable[..., tuple]:
    """A storage kernel for any op, built from its own forward and backward: tensors in and
    out are wrapped and unwrapped, and its ctx is kept for backward (`forward_with_ctx`)."""

    def kernel(needs: tuple[bool, ...], *args: Any) -> tuple:
        outputs, ctx = forward_with_ctx(function, args, needs)
        storages = tuple(o._data if isinstance(o, Tensor) else None for o in outputs)

        def backward(*grads: torch.Tensor | None) -> tuple:
            wrapped = (None if g is None else Tensor._make(g) for g in grads)
            results = function.backward(ctx, *wrapped)
            results = results if isinstance(results, tuple) else (results,)
            return tuple(r._data if isinstance(r, Tensor) else None for r in results)

        return (storages[0] if single_output else storages), backward

    return kernel


def _alias_step(alias: Alias) -> Step:
    source, output = alias.source, alias.output

    def run_alias(values: list, backwards: list) -> None:
        values[output] = values[source]  # the same storage

    return run_alias


def _creation_step(creation: Creation) -> Step:
    """Call the factory again (a random one draws new numbers, as eager mode does)."""
    args, kwargs = creation.args, creation.kwargs

    def run_creation(values: list, backwards: list) -> None:
        resolved = [_resolve(a, values, True) for a in args]
        named = {k: _resolve(v, values, True) for k, v in kwargs.items()}
        values[creation.output] = creation.factory(*resolved, **named)._data

    return run_creation


class ValueReadChanged(Exception):
    """A value read gave another value than when the trace was recorded: the trace does not
    hold for this call (trace.py retraces). Not a RuntimeError, so that `Function.apply`
    passes it on unchanged."""


def _read_step(read: Read) -> Step:
    """Read the value again; another value raises `ValueReadChanged`."""

    def run_read(values: list, backwards: list) -> None:
        try:
            read.replay({read.slot: Tensor._make(values[read.slot])})
        except ReadMismatch as mismatch:
            raise ValueReadChanged(str(mismatch)) from None

    return run_read


# -------------------------------------------------------------------------------------------------
# Backward
# -------------------------------------------------------------------------------------------------
def backward_steps(program: Program, record: list) -> list[Step]:
    """The backward steps for `record` (as for `forward_steps`), in reverse order of the forward
    ones, for the program run with recording on (the k-th op's backward is `backwards[k]`)."""
    steps: list[Step] = []
    k = 0
    for step in record:
        if isinstance(step, Op):
            backward = _op_backward_step(step, k, program)
            k += 1
            if backward is not None:
                steps.append(backward)
        elif isinstance(step, Alias) and not step.detached:
            steps.append(_alias_backward_step(step))
    steps.reverse()
    return steps


def accumulate(grads: list, owned: set, slot: int, grad: torch.Tensor) -> None:
    """Add `grad` into the gradient of `slot` (fan-out in forward is a sum in backward), in the
    order the engine adds into a node's buffer. The first sum is a new tensor, which nothing else
    holds, so later ones add into it in place (`owned`): the same numbers, without allocating."""
    current = grads[slot]
    if current is None:
        grads[slot] = grad
    elif slot in owned:
        current.add_(grad)
    else:
        grads[slot] = current + grad
        owned.add(slot)


def _op_backward_step(op: Op, k: int, program: Program) -> Step | None:
    """Call the k-th op's backward with its outputs' gradients; add what it returns into the
    slots of the arguments that need a gradient. None if no argument does."""
    routes = [
        (position, arg.slot, _fit(program, op, arg.slot))
        for position, (arg, need) in enumerate(zip(op.args, op.needs_input_grad))
        if need and isinstance(arg, Ref) and not arg.storage
    ]
    if not routes:
        return None
    outputs = op.outputs
    if len(outputs) == 1:
        (slot,) = outputs

        def run_op_backward(backwards: list, grads: list, owned: set) -> None:
            grad = grads[slot]
            if grad is not None:
                grads[slot] = None
                results = backwards[k](grad)
                for position, target, fit in routes:  # `_route`, inlined: most ops come here
                    grad = results[position]
                    if grad is not None:
                        accumulate(grads, owned, target, grad if fit is None else fit(grad))

        return run_op_backward

    zeros = [None if s is None else _zeros_like_slot(program, s) for s in outputs]

    def run_multiple_output_op_backward(backwards: list, grads: list, owned: set) -> None:
        received = [None if s is None else grads[s] for s in outputs]
        if all(g is None for g in received):
            return
        for nr, slot in enumerate(outputs):
            if slot is not None:
                grads[slot] = None
                if received[nr] is None:  # as the engine does: zeros for an unused output
                    received[nr] = zeros[nr]()
        _route(backwards[k](*received), routes, grads, owned)

    return run_multiple_output_op_backward


def _route(results: tuple, routes: list, grads: list, owned: set) -> None:
    for position, slot, fit in routes:
        grad = results[position]
        if grad is not None:
            accumulate(grads, owned, slot, grad if fit is None else fit(grad))


def _fit(program: Program, op: Op, slot: int) -> Callable | None:
    """How an op's gradient for argument `slot` is brought to the argument's shape and dtype:
    None when every output of the op has them already (nothing to do), else a function that
    sums away broadcast dims (`Tensor.sum_to_size`, the same sum `sum_to_shape` computes) and
    casts the dtype, as `BackwardNode.apply_backward` does."""
    target = program.slots[slot]
    outputs = [program.slots[s] for s in op.outputs if s is not None]
    if all(o.shape == target.shape and o.dtype == target.dtype for o in outputs):
        return None
    shape, dtype = target.shape, target.dtype

    def fit(grad: torch.Tensor) -> torch.Tensor:
        if grad.shape != shape:
            grad = grad.sum_to_size(shape)
        if grad.dtype != dtype:
            grad = grad.to(dtype)
        return grad

    return fit


def _zeros_like_slot(program: Program, slot: int) -> Callable[[], torch.Tensor]:
    meta = program.slots[slot]
    return lambda: torch.zeros(meta.shape, dtype=meta.dtype, device=meta.device)


def _alias_backward_step(alias: Alias) -> Step:
    """A (not detached) alias passes its gradient on to the slot it shares storage with."""
    source, output = alias.source, alias.output

    def run_alias_backward(backwards: list, grads: list, owned: set) -> None:
        grad = grads[output]
        if grad is not None:
            grads[output] = None
            accumulate(grads, owned, source, grad)

    return run_alias_backward
