"""Replaying a trace through CUDA graphs: `minitorch.jit.trace(fn, cuda_graph=True)`.

On a GPU every kernel launch costs the CPU a few microseconds, so a replay of many small ops is
bound by launches, not by the GPU. A `torch.cuda.CUDAGraph` records the launches of one run and
launches them all again with one call. `GraphedRunner` records a trace's forward steps into one
graph and its backward steps into another (NOTE [Replay on storage] in replay.py), on fixed
buffers:
- the call's input tensors are copied into the graph's input buffers before each forward, and
  the outputs and gradients are copied out of its buffers after it;
- captured tensors (parameters) are read in place, by address: an optimizer step that updates
  them in place is seen by the next call, and one that replaces a storage (`p.data = ...`) makes
  the next call record the graphs again;
- a call's backward must run before the next call, whose forward overwrites what the graphs
  keep for backward; otherwise backward raises.
Value reads need the CPU in the middle of a replay, so a trace that checks them (on_branch=
"guard" with a branch on a tensor's value) cannot be graphed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from minitorch.autograd.record import Read
from minitorch.jit.replay import Runner


@dataclass
class _Graphs:
    """The graphs of one trace for one grad mode, and the buffers they read and write."""

    addresses: tuple[int, ...]  # where the captured tensors' storages were when recorded
    inputs: list[torch.Tensor]
    outputs: list[torch.Tensor]
    forward: torch.cuda.CUDAGraph
    grad_outputs: list[torch.Tensor] = field(default_factory=list)
    grads: list[torch.Tensor | None] = field(default_factory=list)
    backward: torch.cuda.CUDAGraph | None = None


class GraphedRunner:
    """A `Runner` whose forward and backward are replayed as CUDA graphs (same interface)."""

    def __init__(self, runner: Runner) -> None:
        program = runner.program
        for index in [*program.inputs, *(s.index for s in program.captured)]:
            slot = program.slots[index]
            if slot.device.type != "cuda":
                raise ValueError(
                    f"minitorch.jit.trace(cuda_graph=True) needs every tensor on a CUDA device, "
                    f"but %{index} ({slot.origin}, shape {list(slot.shape)}) is on {slot.device}"
                )
        if runner.check_reads and any(isinstance(s, Read) for s in program.steps):
            raise ValueError(
                "minitorch.jit.trace(cuda_graph=True) cannot check value reads inside a CUDA "
                "graph: use on_branch='bake' (the branch taken is frozen) or cuda_graph=False"
            )
        self.runner = runner
        self.program = program
        self.argument_slots = runner.argument_slots
        self.grad_captured = runner.grad_captured
        self.output_slots = runner.output_slots
        self.shared_ops = runner.shared_ops
        self._graphs: dict[bool, _Graphs] = {}  # by `recording`
        self._calls = 0

    def forward(self, storages: list, recording: bool) -> tuple[list, tuple | None]:
        """Copy the inputs in, replay the forward graph (recorded on first use), copy out."""
        inputs, captured = self._split(storages)
        addresses = tuple(s.data_ptr() for s in captured)
        graphs = self._graphs.get(recording)
        if graphs is None or graphs.addresses != addresses:
            graphs = self._graphs[recording] = _record(self.runner, inputs, recording, addresses)
        for buffer, value in zip(graphs.inputs, inputs):
            buffer.copy_(value)
        graphs.forward.replay()
        self._calls += 1
        outputs = [o.clone() for o in graphs.outputs]
        return outputs, ((graphs, self._calls) if recording else None)

    def backward(self, token: tuple, grad_outputs: list) -> list:
        """Copy the output gradients in, replay the backward graph, copy the gradients out."""
        graphs, call = token
        if call != self._calls:
            raise RuntimeError(
                "minitorch.jit.trace(cuda_graph=True): the traced function was called again "
                "before this call's backward, and that call overwrote the values the CUDA graph "
                "keeps for it. Call backward before calling the traced function again."
            )
        for buffer, grad in zip(graphs.grad_outputs, grad_outputs):
            if grad is None:
                buffer.zero_()
            else:
                buffer.copy_(grad)
        graphs.backward.replay()
        return [None if g is None else g.clone() for g in graphs.grads]

    def _split(self, storages: list) -> tuple[list, list]:
        """(the inputs' storages, the captured tensors' storages, as the runner reads them)."""
        n = len(self.program.inputs)
        other = [tensor._data for _, tensor in self.runner.other_captured]
        return storages[:n], storages[n:] + other


def _record(runner: Runner, inputs: list, recording: bool, addresses: tuple) -> _Graphs:
    """Record the forward (and, when `recording`, backward) graphs of `runner`."""
    static_inputs = [x.clone() for x in inputs]
    n = len(static_inputs)

    def arguments() -> list:  # the captured tensors as they are now, by address
        storages = list(static_inputs)
        for slot in runner.argument_slots[n:]:
            storages.append(runner.program.slots[slot].tensor._data)
        return storages

    def run_once() -> tuple[list, list]:
        outputs, backwards = runner.forward(arguments(), recording)
        if recording:
            runner.backward(backwards, [torch.ones_like(o) for o in outputs])
        return outputs, backwards

    # Warm up on a side stream first (lazy initialisations must not happen while recording).
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            run_once()
    torch.cuda.current_stream().wait_stream(stream)

    forward = torch.cuda.CUDAGraph()
    with torch.cuda.graph(forward):
        outputs, backwards = runner.forward(arguments(), recording)
    graphs = _Graphs(addresses, static_inputs, outputs, forward)
    if recording:
        graphs.grad_outputs = [torch.zeros_like(o) for o in outputs]
        graphs.backward = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graphs.backward, pool=forward.pool()):
            graphs.grads = runner.backward(backwards, graphs.grad_outputs)
    return graphs
