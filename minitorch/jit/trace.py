"""`minitorch.jit.trace`: record a function once, then replay it while its guards hold.

    step = minitorch.jit.trace(lambda x, y: F.mse_loss(model(x), y))
    loss = step(x, y)      # first call: runs eagerly and records a trace ("capture")
    loss = step(x2, y2)    # guards pass: replays the trace as one op ("replay")
    loss.backward()        # gradients reach the parameters' .grad, as they do eagerly

`traced.state` says what the last call did: "warm-up" (no call yet), "capture", "replay",
"retrace" (no trace's guards held: recorded again; `traced.reasons` says why) or "eager" (the
cache is full: the function runs eagerly from then on, after one warning; or, for this call,
saved-tensor hooks or `minitorch.memory` are on: they must see every tensor an op saves or
makes, and a replay makes none per op, NOTE [Replay on storage]).
`traced.explain()` (or `minitorch.jit.explain(fn, *args)`) reports the traces, their guards and
the retrace reasons.

What a branch on a tensor value (`if x.sum() > 0:`) does depends on `on_branch`:
- "guard" (default): the value read is a guard, checked while replaying; another value retraces;
- "bake": like `torch.jit.trace`, the branch taken is frozen, with a `TracerWarning`;
- "error": like JAX, tracing such a function raises, naming the line.

With `cuda_graph=True` (tensors on a GPU), each trace's replay is captured into CUDA graphs
(cuda_graph.py).
"""

from __future__ import annotations

import functools
import inspect
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from minitorch.autograd import grad_mode
from minitorch.autograd.record import Opaque, Program, Read, Write, record_call
from minitorch.jit.cuda_graph import GraphedRunner
from minitorch.jit.explain import Explanation, describe_slot, explanation_of, producer
from minitorch.jit.guards import Guards, guards_for
from minitorch.jit.replay import Replay, Runner
from minitorch.jit.steps import ValueReadChanged
from minitorch.nn.module import Module
from minitorch.tensor import Tensor

ON_BRANCH = ("guard", "bake", "error")
# The module, not the `minitorch.tensor` function: its `_memory_watch` is set by minitorch.memory.
_tensor_module = sys.modules["minitorch.tensor"]


class TracerWarning(UserWarning):
    """A trace may be wrong for other inputs (on_branch="bake" froze a branch)."""


@dataclass
class Trace:
    """One recorded program, the guards under which it holds, and how to replay it."""

    program: Program
    guards: Guards
    runner: Runner | GraphedRunner
    returns: type | None  # tuple or list if the function returned one, None for a tensor


class TracedFunction:
    """A function with its cache of traces. Call it like the function (positional arguments)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        on_branch: str = "guard",
        cache_limit: int = 8,
        cuda_graph: bool = False,
    ) -> None:
        if on_branch not in ON_BRANCH:
            raise ValueError(f"on_branch must be one of {ON_BRANCH}, got {on_branch!r}")
        self.fn = fn
        self.on_branch = on_branch
        self.cache_limit = cache_limit
        self.cuda_graph = cuda_graph
        self.traces: list[Trace] = []
        self.reasons: list[str] = []  # why each retrace happened
        self.state = "warm-up"
        self.gave_up = False  # the cache limit was reached: eager from now on
        self._names = _argument_names(fn)
        functools.update_wrapper(self, fn, updated=())  # fn may be a Module: keep its __dict__
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)

    def __call__(self, *args: Any) -> Any:
        if self.traces and len(args) != len(self.traces[0].guards.arguments):
            raise TypeError(
                f"{self.__name__} was traced with {len(self.traces[0].guards.arguments)} "
                f"positional arguments, but {len(args)} were given"
            )
        if self.gave_up or grad_mode._state.saved_tensors_hooks or _tensor_module._memory_watch:
            self.state = "eager"
            return self.fn(*args)
        grad_enabled = grad_mode.is_grad_enabled()
        failures = []  # why each cached trace does not hold
        for trace in self.traces:
            failure = trace.guards.failure(args, grad_enabled)
            if failure is None:
                try:
                    result = _replay(trace, args)
                except ValueReadChanged as changed:
                    failures.append(str(changed))
                    continue
                self.state = "replay"
                return result
            failures.append(failure)
        reason = (
            failures[0]
            if len(failures) == 1
            else "; ".join(f"trace {k}: {failure}" for k, failure in enumerate(failures))
        )
        if len(self.traces) >= self.cache_limit:
            warnings.warn(
                f"minitorch.jit: {self.__name__} was traced {len(self.traces)} times "
                f"(cache_limit={self.cache_limit}); it runs eagerly from now on. Last reason: "
                f"{reason}",
                UserWarning,
                stacklevel=2,
            )
            self.state, self.gave_up = "eager", True
            return self.fn(*args)
        if self.traces:
            self.reasons.append(reason)
        self.state = "retrace" if self.traces else "capture"
        return self._capture(args, grad_enabled)

    def _capture(self, args: tuple, grad_enabled: bool) -> Any:
        """Run the function eagerly while recording it; keep the trace; return its result."""
        program, result = record_call(self.fn, *args)
        self._check(program)
        guards = guards_for(args, self._names, grad_enabled, program, self.fn)
        runner = Runner(program, check_reads=self.on_branch == "guard")
        if self.cuda_graph:
            runner = GraphedRunner(runner)
        returns = type(result) if isinstance(result, (tuple, list)) else None
        self.traces.append(Trace(program, guards, runner, returns))
        return result

    def _check(self, program: Program) -> None:
        """Refuse what a replay cannot reproduce, with a message that says where and why."""
        name = self.__name__
        for step in program.steps:
            if isinstance(step, Opaque):
                raise RuntimeError(
                    f"minitorch.jit.trace({name}): {step.what} happened during the traced call; "
                    "a trace cannot replay it. Call it outside the traced function."
                )
            if isinstance(step, Write):
                raise RuntimeError(
                    f"minitorch.jit.trace({name}): an in-place {producer(program, step.source)} "
                    f"writes into {describe_slot(program, step.target)}; traced functions must "
                    "not change tensors in place (write `x = x + y` instead of `x.add_(y)`)"
                )
            if isinstance(step, Read):
                self._check_read(program, step)

    def _check_read(self, program: Program, read: Read) -> None:
        name, what = self.__name__, f"{read.kind}() of {describe_slot(program, read.slot)}"
        if read.kind == "numpy":
            raise RuntimeError(
                f"minitorch.jit.trace({name}): {read.line} calls .numpy() on "
                f"{describe_slot(program, read.slot)}: the array leaves minitorch, so a trace "
                "cannot follow it. Compute with tensors inside the traced function."
            )
        if read.kind == "len":  # depends on the shape only, which the guards check anyway
            return
        if self.on_branch == "error":
            raise RuntimeError(
                f"minitorch.jit.trace({name}): {read.line} reads a tensor's value ({what}) and "
                "Python code may branch on it; with on_branch='error' a traced function must "
                "not depend on tensor values."
            )
        if self.on_branch == "bake":
            warnings.warn(
                f"Converting a tensor to a Python {read.kind} at {read.line} might cause the "
                "trace to be incorrect: the value is treated as a constant from now on "
                f"({what} read {read.value!r}).",
                TracerWarning,
                stacklevel=4,
            )

    def explain(self) -> Explanation:
        """The traces (ops, guards, value reads) and why each retrace happened; print it."""
        return explanation_of(self)


def trace(
    fn: Callable[..., Any],
    example_inputs: tuple | None = None,
    *,
    on_branch: str = "guard",
    cache_limit: int = 8,
    cuda_graph: bool = False,
) -> TracedFunction:
    """Trace `fn` (a function or a Module, called with positional arguments): its first call
    (or a call on `example_inputs`, made now) records the ops it runs; later calls whose guards
    hold replay them as one op. `on_branch` ("guard", "bake" or "error") says what a branch on a
    tensor's value does; after `cache_limit` traces the function runs eagerly; `cuda_graph`
    replays through CUDA graphs (all tensors on a GPU). See the module docstring."""
    traced = TracedFunction(fn, on_branch, cache_limit, cuda_graph)
    if example_inputs is not None:
        traced(*example_inputs)
    return traced


def explain(fn: Callable[..., Any], *args: Any) -> Explanation:
    """Call `fn(*args)` through `minitorch.jit.trace` and report what happened, like
    `torch._dynamo.explain(fn)(*args)`: the number of traces and breaks (value reads), each
    guard, the number of ops and why each retrace happened. `fn` may be a traced function
    already: the report then covers all its calls so far."""
    traced = fn if isinstance(fn, TracedFunction) else trace(fn)
    traced(*args)
    return traced.explain()


def _replay(trace: Trace, args: tuple) -> Any:
    tensors = [a for a in args if isinstance(a, Tensor)]
    result = Replay.apply(trace.runner, *tensors, *trace.runner.grad_captured)
    if trace.returns is None:
        return result
    return trace.returns(result if isinstance(result, tuple) else (result,))


def _argument_names(fn: Callable) -> list[str]:
    """The names of fn's positional parameters (args[i] where there are none, e.g. *args); a
    Module's are those of its forward."""
    try:
        parameters = inspect.signature(fn.forward if isinstance(fn, Module) else fn).parameters
        parameters = parameters.values()
    except (TypeError, ValueError):
        parameters = []
    names = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names + [f"args[{i}]" for i in range(len(names), 64)]
