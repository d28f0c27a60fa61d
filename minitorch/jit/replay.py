"""Replaying a trace: the whole recorded program runs as ONE op, `Replay`, on storage.

NOTE [Replay on storage]
Eagerly, every op of a call goes through `Function.apply`: grad-mode checks, a node, edges,
saved tensors, a minitorch tensor per result. A replay pays for that once per call. `Runner`
compiles a trace's program once into two flat lists of small functions (steps.py):
- the forward steps, in program order. Each op step calls the op's storage kernel (NOTE
  [Storage kernels] in autograd/function.py) on the storages in `values`, a list indexed by
  slot (with the program's constants stored after the slots, so that every argument is one
  list lookup), stores the storages it returns, and keeps the `backward` the kernel returns;
- the backward steps, in reverse: each op's `backward` gets the summed gradient of its outputs,
  and what it returns is added to its arguments' slots (summed back to the argument's shape and
  dtype where the op broadcast). That is the engine's work for one node, without the node.
No minitorch tensor, node or edge is made per op; the storages a kernel's `backward` needs are
all that is kept between forward and backward. One optimization comes first, because a static
program makes it easy to see: an op that repeats an earlier one on the same arguments runs once
(`share_repeated_ops`: an unrolled LSTM cell's bias sum and weight transpose).

The inputs of the `Replay` node are the call's tensor arguments and the captured tensors that
require grad (the parameters), so the ordinary engine delivers their gradients: `.grad`, tensor
hooks and AccumulateGrad work as they do eagerly. What differs from eager: the outputs' `grad_fn`
is one `ReplayBackward` node; `create_graph=True` through it raises; saved-tensor hooks and
`minitorch.memory` would not see the values a replay keeps, so trace.py runs the function
eagerly while either is on.
"""

from __future__ import annotations

from typing import Any

from minitorch.autograd import grad_mode
from minitorch.autograd.function import BackwardNode, Function
from minitorch.autograd.record import Op, Program
from minitorch.jit.steps import accumulate, backward_steps, forward_steps, share_repeated_ops
from minitorch.tensor import Tensor


class Runner:
    """A trace's program compiled for replay on storage (NOTE [Replay on storage]).

    `argument_slots` are the slots a replay fills from its tensor arguments: the program's
    inputs, then the captured tensors that require grad (`grad_captured`). `check_reads` says
    whether value reads are checked (on_branch="guard") or trusted (on_branch="bake")."""

    def __init__(self, program: Program, check_reads: bool) -> None:
        self.program = program
        self.check_reads = check_reads
        captured = program.captured
        self.grad_captured = [s.tensor for s in captured if s.requires_grad]  # the parameters
        self.argument_slots = [*program.inputs, *(s.index for s in captured if s.requires_grad)]
        self.other_captured = [(s.index, s.tensor) for s in captured if not s.requires_grad]
        self.output_slots = list(program.outputs)
        self.steps = share_repeated_ops(program)  # the program's steps, repeated ops shared
        self.shared_ops = len(program.ops) - sum(isinstance(s, Op) for s in self.steps)
        self._forward: dict[bool, tuple[list, list]] = {}  # recording -> (steps, values template)
        self._backward = backward_steps(program, self.steps)

    def forward(self, storages: list, recording: bool) -> tuple[list, list]:
        """Run the program on the storages of the arguments. Returns the outputs' storages and
        the `backward` of every op's kernel. Raises `steps.ValueReadChanged` if a checked value
        read reads another value."""
        if recording not in self._forward:
            self._forward[recording] = forward_steps(
                self.program, self.steps, recording, self.check_reads
            )
        steps, template = self._forward[recording]
        values = template.copy()
        for slot, storage in zip(self.argument_slots, storages):
            values[slot] = storage
        for slot, tensor in self.other_captured:
            values[slot] = tensor._data  # by reference: its value as it is now
        backwards: list = []
        for step in steps:
            step(values, backwards)
        return [values[slot] for slot in self.output_slots], backwards

    def backward(self, backwards: list, grad_outputs: list) -> list:
        """The backward program: the gradient (storage or None) of every argument slot, given
        those of the outputs."""
        grads: list = [None] * len(self.program.slots)
        owned: set[int] = set()
        for slot, grad in zip(self.output_slots, grad_outputs):
            if grad is not None:
                accumulate(grads, owned, slot, grad)
        for step in self._backward:
            step(backwards, grads, owned)
        return [grads[slot] for slot in self.argument_slots]


class Replay(Function):
    """One replay of a trace: `Replay.apply(runner, *tensors)` -> the program's outputs, where
    `tensors` fill `runner.argument_slots`."""

    @staticmethod
    def forward(ctx: Any, runner: Runner, *tensors: Tensor) -> Any:
        recording = any(ctx.needs_input_grad)
        storages, backwards = runner.forward([t._data for t in tensors], recording)
        outputs = tuple(Tensor._make(s) for s in storages)
        if recording:
            ctx.runner, ctx.backwards = runner, backwards
            # Saved so that a second backward without retain_graph raises, as it does eagerly.
            ctx.save_for_backward(*tensors)
            # Outputs that did not require grad when traced do not now either.
            slots = runner.program.slots
            ctx.mark_non_differentiable(
                *(o for o, s in zip(outputs, runner.output_slots) if not slots[s].requires_grad)
            )
        return outputs if len(outputs) > 1 else outputs[0]

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Tensor | None) -> tuple:
        ctx.saved_tensors  # noqa: B018 (raises the "backward a second time" error once freed)
        if grad_mode.is_grad_enabled():
            raise RuntimeError(
                "minitorch.jit: create_graph=True through a traced function is not supported; "
                "call the function eagerly when you need higher-order gradients"
            )
        storages = [None if g is None else g._data for g in grad_outputs]
        grads = ctx.runner.backward(ctx.backwards, storages)
        return (None, *(None if g is None else Tensor._make(g) for g in grads))


def _release(node: BackwardNode) -> None:
    """Free what the ops keep for backward with the node's own saved tensors (unless
    retain_graph)."""
    BackwardNode.release_saved(node)
    node.backwards = None


Replay._backward_cls.release_saved = _release
