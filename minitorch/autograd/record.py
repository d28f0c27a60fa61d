"""The forward record: one call of a Python function, written down as a flat program of ops.

`minitorch.jit` (tracing) and `minitorch.autobatch` (lazy batching) both start from the same
thing: the list of ops that one call runs. This module makes that list, once, for both::

    with Recorder(x) as recorder:
        y = model(x)
    program = recorder.finish(y)
    print(program)                 # %0 = input float64[8, 4] ... %3 = Linear(%0, %1, %2) ...
    run(program, fresh_x)          # the same ops on other inputs: equals model(fresh_x)

While a `Recorder` is open, `Function.apply` hands every op to it (one `is not None` check on a
module global when none is open, like `minitorch.memory`'s watch of new tensors), and the few
places that compute outside `Function.apply` report what they do. NOTE [Forward record] below is
the contract.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from minitorch.autograd import function as _function
from minitorch.autograd import grad_mode

if TYPE_CHECKING:
    from minitorch.autograd.function import Function
    from minitorch.tensor import Tensor

F = TypeVar("F", bound=Callable[..., Any])

# NOTE [Forward record]
# A `Program` is a flat list of steps over numbered slots. A slot holds one minitorch tensor:
# - "input": a tensor given to `Recorder(...)` (in that order);
# - "captured": a tensor the call used but did not make (a parameter, a global, a constant the
#   library made from numbers or shapes). It is kept BY REFERENCE (`Slot.tensor`): a replay
#   reads its storage as it is then, so an optimizer step between calls is seen;
# - "op" / "creation" / "alias": the result of a step.
# Each slot also keeps what its tensor looked like when first seen: shape, dtype, device,
# requires_grad.
#
# The steps, in the order the call ran them:
# - `Op(function, args, outputs, needs_input_grad)`: `function.apply(*args)`. An argument is a
#   `Ref` to a slot (`storage=True` where the op received the raw storage `t._data`, as index,
#   gather and the losses' targets do), a `Pack` (a tuple or list holding refs: `x[i, j]` with
#   tensors i, j) or a `Const` (anything else: numbers, dims, dtypes, closures). Only the
#   outermost op is recorded: the ops a Function's forward runs inside are part of it.
#   `needs_input_grad` is what apply computed for backward (all False under no_grad).
# - `Creation(factory, args, kwargs, output)`: a factory call (`zeros`, `randn`, `tensor`,
#   `x.new_zeros`, `*_like`, `Tensor(...)`). Replaying calls it again: random ones draw anew.
# - `Alias(source, output, detached)`: a tensor object never seen before that shares a slot's
#   storage: `detach()`, `.data`, `Parameter(t)`, the old value of an in-place op. `detached`:
#   it does not carry the source's gradient.
# - `Read(slot, kind, value, reader, line)`: Python read a value out of a tensor (`item`,
#   `bool`, `float`, `int`, `index`, `len` (also iteration), `tolist`, `numpy`, `format`,
#   `repr`) at `line` (the caller's file:line). The code after it may depend on the value, so
#   the program only holds for calls that read the same value: each Read is a guard.
# - `Write(target, source)`: an in-place op stored `source`'s value into `target`'s storage
#   (views of it see the change, as in eager mode).
# - `Opaque(what)`: something the program cannot replay happened: backward, an optimizer step,
#   parameters created or initialised, `.data` assigned, a hook registered. Ops it ran are not
#   recorded. A tracer must refuse (or run eagerly) a call with an Opaque step.
#
# Guarantees that jit and autobatch rely on:
# 1. Replay: running the steps in order on new inputs of the same shapes, dtypes, devices and
#    requires_grad (each Op's `forward` on a fresh ctx, each factory again, each Alias as shared
#    storage, each Write as a copy) gives the eager values, provided every Read reads the
#    recorded value and there is no Opaque step. `run()` is that interpreter, and the tests hold
#    it to eager minitorch and PyTorch.
# 2. Nothing computed from the inputs or from the random generator is captured: it reaches the
#    program through a step. tests/test_record_footguns.py lists every place that computed
#    outside `Function.apply` and how it reports: dropout's mask, `any/all/isnan`, `one_hot`
#    and `equal/allclose` are Functions; creation ops are Creation steps; value reads are Read
#    steps; in-place writes are Write steps; where's condition and masked_fill's mask are
#    ordinary tensor arguments; backward, optimizer steps, parameter creation and nn.init are
#    Opaque. Library code that still makes tensors on storage only does so from numbers,
#    shapes or values already read (a 0-d tensor for `x * 2`, packed-sequence bookkeeping).
# 3. The hooks hand the work over: `Recorder.apply`, `create` and `read` run the op, factory or
#    read themselves (paused, so the ops inside are not recorded again), so a recorder
#    subclass may also defer or batch them (autobatch) or flush before a read. `slot_of`,
#    `created`, `wrote` and `opaque` only notify.
# 4. Cost: with no recorder open, an op pays one global read. One recorder at a time: opening
#    one while another is open raises. The hook is process-wide, so ops that other threads run
#    meanwhile are recorded too: record from one thread.
# 5. Captured tensors are held by object, not by name: rebinding a global name to another
#    tensor between calls is invisible to the program (a tracer must guard on the name).


# -------------------------------------------------------------------------------------------------
# The program
# -------------------------------------------------------------------------------------------------
@dataclass
class Slot:
    """One tensor value of the program, as it looked when the record first met it."""

    index: int
    origin: str  # "input", "captured", "op", "creation" or "alias"
    shape: torch.Size
    dtype: torch.dtype
    device: torch.device
    requires_grad: bool
    tensor: Tensor | None = None  # captured slots only: the tensor itself, read at replay time

    def __str__(self) -> str:
        dtype = str(self.dtype).removeprefix("torch.")
        grad = " requires_grad" if self.requires_grad else ""
        return f"%{self.index} = {self.origin} {dtype}{list(self.shape)}{grad}"


@dataclass(frozen=True)
class Ref:
    """An argument that is the tensor in slot `slot` (its raw storage when `storage`)."""

    slot: int
    storage: bool = False

    def __str__(self) -> str:
        return f"%{self.slot}" + (".storage" if self.storage else "")


@dataclass(frozen=True)
class Pack:
    """A tuple or list argument that holds refs, e.g. the index of `x[i, j]`."""

    items: tuple[Arg, ...]
    kind: type = tuple

    def __str__(self) -> str:
        inner = ", ".join(str(i) for i in self.items)
        return f"[{inner}]" if self.kind is list else f"({inner})"


@dataclass(frozen=True)
class Const:
    """Any other argument (a number, dim, dtype, shape, closure), used as it is."""

    value: Any

    def __str__(self) -> str:
        text = repr(self.value)
        return text if len(text) <= 40 else text[:37] + "..."


Arg = Ref | Pack | Const


@dataclass
class Op:
    """`function.apply(*args)`, whose tensor results went to `outputs` (None: not a tensor)."""

    function: type[Function]
    args: tuple[Arg, ...]
    outputs: tuple[int | None, ...]
    needs_input_grad: tuple[bool, ...]

    def replay(self, values: list) -> None:
        """Call `forward` on a fresh ctx: the op itself, with nothing recorded for backward."""
        args = _resolve_all(self.args, values)
        ctx = self.function._backward_cls()
        ctx.needs_input_grad = (False,) * len(args)
        outs = self.function.forward(ctx, *args)
        for slot, out in zip(self.outputs, outs if isinstance(outs, tuple) else (outs,)):
            if slot is not None:
                values[slot] = out

    def __str__(self) -> str:
        outs = ", ".join("_" if o is None else f"%{o}" for o in self.outputs)
        args = ", ".join(str(a) for a in self.args)
        return f"{outs} = {self.function.__name__}({args})"


@dataclass
class Creation:
    """A factory call (`zeros`, `randn`, `x.new_ones`, ...) that made the tensor in `output`."""

    factory: Callable[..., Tensor]
    args: tuple[Arg, ...]
    kwargs: dict[str, Arg]
    output: int

    def replay(self, values: list) -> None:
        """Call the factory again (a random factory draws new numbers, as eager mode does)."""
        kwargs = {k: _resolve(v, values) for k, v in self.kwargs.items()}
        values[self.output] = self.factory(*_resolve_all(self.args, values), **kwargs)

    def __str__(self) -> str:
        args = [str(a) for a in self.args] + [f"{k}={v}" for k, v in self.kwargs.items()]
        return f"%{self.output} = {self.factory.__qualname__}({', '.join(args)})"


@dataclass
class Alias:
    """A tensor object that shares the storage of `source` (`detach()`, `.data`, ...)."""

    source: int
    output: int
    detached: bool  # True: the alias does not pass gradients on to `source`

    def replay(self, values: list) -> None:
        """A new tensor over the same storage."""
        values[self.output] = _function._Tensor._make(values[self.source]._data)

    def __str__(self) -> str:
        detached = " (detached)" if self.detached else ""
        return f"%{self.output} = alias of %{self.source}{detached}"


@dataclass
class Read:
    """Python read `value` out of slot `slot` (`kind`: item, bool, len ...): a guard."""

    slot: int
    kind: str
    value: Any
    reader: Callable[[Tensor], Any]  # reads the same thing again, out of any tensor
    line: str = "?"  # where the read happened: the first caller outside minitorch, "file:line"

    def replay(self, values: list) -> None:
        """Read again; a different value means the Python code may take another path."""
        value = self.reader(values[self.slot])
        if not _same_value(value, self.value):
            raise ReadMismatch(
                f"the recorded call read {self.kind}(%{self.slot}) = {self.value!r}, this call "
                f"reads {value!r}: the code after that read may do something else, so the "
                "program does not hold for these inputs"
            )

    def __str__(self) -> str:
        return f"read {self.kind}(%{self.slot}) -> {Const(self.value)}"


@dataclass
class Write:
    """An in-place op stored the value of `source` into the storage of `target`."""

    target: int
    source: int

    def replay(self, values: list) -> None:
        """Copy into the target's storage (its views see the change, as in eager mode)."""
        values[self.target]._data.copy_(values[self.source]._data)

    def __str__(self) -> str:
        return f"write %{self.target} <- %{self.source}"


@dataclass
class Opaque:
    """Something the program cannot replay happened during the call (see `what`)."""

    what: str

    def replay(self, values: list) -> None:
        """Refuse: the recorded call did something that is not in the program."""
        raise RuntimeError(f"cannot replay the program: {self.what} happened during the call")

    def __str__(self) -> str:
        return f"opaque: {self.what}"


Step = Op | Creation | Alias | Read | Write | Opaque


class ReadMismatch(RuntimeError):
    """Raised by `run` when a Read gives another value than when the program was recorded."""


@dataclass
class Program:
    """One recorded call: its slots, its steps in order, and which slots are inputs/outputs."""

    slots: list[Slot] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)

    @property
    def ops(self) -> list[Op]:
        """The Op steps only."""
        return [s for s in self.steps if isinstance(s, Op)]

    @property
    def captured(self) -> list[Slot]:
        """The slots of tensors the call used but did not make (parameters, globals, ...)."""
        return [s for s in self.slots if s.origin == "captured"]

    def source_of(self, index: int) -> Slot:
        """The slot whose storage slot `index` shows: aliases followed back to their source."""
        sources = {s.output: s.source for s in self.steps if isinstance(s, Alias)}
        while index in sources:
            index = sources[index]
        return self.slots[index]

    def __str__(self) -> str:
        lines = [str(s) for s in self.slots if s.origin in ("input", "captured")]
        lines += [str(step) for step in self.steps]
        lines.append("return " + ", ".join(f"%{o}" for o in self.outputs))
        return "\n".join(lines)


# -------------------------------------------------------------------------------------------------
# Making a program
# -------------------------------------------------------------------------------------------------
_open: Recorder | None = None  # the recorder between __enter__ and __exit__, paused or not


class Recorder:
    """Records the ops run inside `with Recorder(*inputs) as recorder:` into `recorder.program`;
    `recorder.finish(*outputs)` then names the outputs and returns the program.

    Library code reaches the open recorder through `function._recorder` and calls `apply`,
    `create`, `created`, `read`, `slot_of`, `wrote` and `opaque` (see NOTE [Forward record]);
    user code only opens it, and `record_call` does even that.
    """

    def __init__(self, *inputs: Tensor) -> None:
        Tensor = _function._Tensor
        self.program = Program()
        self._slot_by_tensor: dict[int, int] = {}
        self._slot_by_storage: dict[int, int] = {}
        # The tensor and storage behind every slot, kept alive so that their ids stay unique.
        self._tensors: list[Tensor] = []
        self._storages: list[torch.Tensor] = []
        for t in inputs:
            if not isinstance(t, Tensor):
                raise TypeError(f"Recorder(): inputs must be tensors, got {type(t).__name__}")
            self.program.inputs.append(self._new_slot("input", t))

    def __enter__(self) -> Recorder:
        global _open
        if _open is not None or _function._recorder is not None:
            raise RuntimeError(
                "a forward record is already being made: records cannot be nested (is a traced "
                "or batched function running inside another one?)"
            )
        _open = self
        _function._recorder = self
        return self

    def __exit__(self, *exc_info: object) -> None:
        global _open
        _open = None
        _function._recorder = None

    def finish(self, *outputs: Tensor) -> Program:
        """Mark `outputs` as the program's results and return the program."""
        Tensor = _function._Tensor
        for nr, t in enumerate(outputs):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"the recorded call must return tensors; output {nr} is a {type(t).__name__}"
                )
            self.program.outputs.append(self.slot_of(t))
        self._slot_by_tensor, self._slot_by_storage = {}, {}
        self._tensors, self._storages = [], []
        return self.program

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Run a block unrecorded (inside an op, a read, backward ...)."""
        _function._recorder = None
        try:
            yield
        finally:
            _function._recorder = self

    # Called by the library (the hooks) ---------------------------------------------------------
    def apply(self, function: type[Function], args: tuple) -> Any:
        """Run `function.apply(*args)` and record it as one Op."""
        Tensor = _function._Tensor
        described = tuple(self._describe(a) for a in args)
        state = grad_mode._state
        grad_on = state.grad_enabled and not state.inference
        needs = tuple(grad_on and isinstance(a, Tensor) and a._requires_grad for a in args)
        with self.paused():
            outputs = function.apply(*args)
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        slots = tuple(self._new_slot("op", o) if isinstance(o, Tensor) else None for o in outs)
        self.program.steps.append(Op(function, described, slots, needs))
        return outputs

    def create(self, factory: Callable[..., Tensor], args: tuple, kwargs: dict) -> Tensor:
        """Run a factory and record it as a Creation."""
        with self.paused():
            result = factory(*args, **kwargs)
        self.created(factory, args, kwargs, result)
        return result

    def created(self, factory: Callable[..., Tensor], args: tuple, kwargs: dict,
                result: Tensor) -> None:  # fmt: skip
        """Record that `factory(*args, **kwargs)` made `result` (already run)."""
        if id(result) in self._slot_by_tensor:
            return  # e.g. as_tensor(t) returned t itself
        described = tuple(self._describe(a) for a in args)
        named = {k: self._describe(v) for k, v in kwargs.items()}
        output = self._new_slot("creation", result)
        self.program.steps.append(Creation(factory, described, named, output))

    def read(self, tensor: Tensor, kind: str, reader: Callable[[Tensor], Any]) -> Any:
        """Run `reader(tensor)` (which hands a value to Python) and record it as a Read."""
        slot = self.slot_of(tensor)
        with self.paused():
            value = reader(tensor)
        snapshot = value.copy() if hasattr(value, "__array__") else value  # numpy shares memory
        self.program.steps.append(Read(slot, kind, snapshot, reader, _caller_line()))
        return value

    def wrote(self, target: Tensor, source: Tensor) -> None:
        """Record that an in-place op copied `source` into `target`'s storage."""
        self.program.steps.append(Write(self.slot_of(target), self.slot_of(source)))

    def opaque(self, what: str) -> None:
        """Record that `what`, which the program cannot replay, happened."""
        self.program.steps.append(Opaque(what))

    # Slots --------------------------------------------------------------------------------------
    def _new_slot(self, origin: str, t: Tensor) -> int:
        data = t._data
        index = len(self.program.slots)
        captured = t if origin == "captured" else None
        slot = Slot(index, origin, data.shape, data.dtype, data.device, t._requires_grad, captured)
        self.program.slots.append(slot)
        self._slot_by_tensor[id(t)] = index
        self._slot_by_storage.setdefault(id(data), index)
        self._tensors.append(t)
        self._storages.append(data)
        return index

    def slot_of(self, t: Tensor) -> int:
        """The slot of a tensor: known already, an alias of a known storage, or captured now."""
        index = self._slot_by_tensor.get(id(t))
        if index is not None:
            return index
        source = self._slot_by_storage.get(id(t._data))
        if source is None:
            return self._new_slot("captured", t)
        known = self._tensors[source]
        detached = t.grad_fn is not known.grad_fn or t._requires_grad != known._requires_grad
        index = self._new_slot("alias", t)
        self.program.steps.append(Alias(source, index, detached))
        return index

    def _describe(self, value: Any) -> Arg:
        Tensor = _function._Tensor
        if isinstance(value, Tensor):
            return Ref(self.slot_of(value))
        if isinstance(value, torch.Tensor):  # an op that takes storage (an index, a target)
            index = self._slot_by_storage.get(id(value))
            if index is None:
                index = self._new_slot("captured", Tensor._make(value))
            return Ref(index, storage=True)
        if isinstance(value, (tuple, list)) and not isinstance(value, torch.Size):
            items = tuple(self._describe(v) for v in value)
            if any(not isinstance(i, Const) for i in items):
                return Pack(items, list if isinstance(value, list) else tuple)
        return Const(value)


def record_call(fn: Callable[..., Any], *args: Any) -> tuple[Program, Any]:
    """Call `fn(*args)` once, recording it. The tensors among `args` are the program's inputs
    (other arguments are used as they are); the result must be a tensor or a tuple/list of
    tensors, which become the outputs. Returns `(program, result)`."""
    Tensor = _function._Tensor
    with Recorder(*(a for a in args if isinstance(a, Tensor))) as recorder:
        result = fn(*args)
    outputs = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if not outputs:
        raise TypeError(f"{_name(fn)} returned an empty {type(result).__name__}, not tensors")
    for out in outputs:
        if not isinstance(out, Tensor):
            raise TypeError(
                f"{_name(fn)} must return a tensor or a tuple of tensors to be recorded, but it "
                f"returned a {type(out).__name__}"
            )
    return recorder.finish(*outputs), result


def run(program: Program, *inputs: Tensor) -> tuple[Tensor, ...]:
    """The reference interpreter: replay `program` on new inputs, step by step, with no graph
    (each op's `forward` directly). Raises `ReadMismatch` if a Read reads another value, and
    RuntimeError on an Opaque step. Returns the output tensors."""
    if len(inputs) != len(program.inputs):
        raise TypeError(
            f"the program takes {len(program.inputs)} input tensors, but {len(inputs)} were given"
        )
    values: list = [None] * len(program.slots)
    for index, t in zip(program.inputs, inputs):
        values[index] = t
    for slot in program.captured:
        values[slot.index] = slot.tensor
    with grad_mode.no_grad():
        for step in program.steps:
            step.replay(values)
    return tuple(values[o] for o in program.outputs)


def _resolve(arg: Arg, values: list) -> Any:
    if isinstance(arg, Ref):
        value = values[arg.slot]
        return value._data if arg.storage else value
    if isinstance(arg, Pack):
        return arg.kind(_resolve(i, values) for i in arg.items)
    return arg.value


def _resolve_all(args: tuple[Arg, ...], values: list) -> tuple:
    return tuple(_resolve(a, values) for a in args)


def _same_value(a: Any, b: Any) -> bool:
    if hasattr(a, "tolist"):  # numpy arrays compare elementwise
        a, b = a.tolist(), b.tolist()
    return a == b or (a != a and b != b)  # NaN reads NaN again


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _caller_line() -> str:
    """`file:line` of the innermost frame outside the minitorch package (the user's code)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return "?"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def _name(fn: Callable) -> str:
    return getattr(fn, "__qualname__", type(fn).__name__)


# -------------------------------------------------------------------------------------------------
# Reporting from the places that compute outside Function.apply
# -------------------------------------------------------------------------------------------------
def recorded_creation(factory: F) -> F:
    """Decorate a factory (`zeros`, `randn`, `Tensor.new_ones` ...) so that a record sees each
    call as a Creation step. Outside a record it adds one function call."""

    @functools.wraps(factory)
    def create(*args: Any, **kwargs: Any) -> Any:
        recorder = _function._recorder
        if recorder is None:
            return factory(*args, **kwargs)
        return recorder.create(factory, args, kwargs)

    return create  # type: ignore[return-value]


def recorded_read(kind: str) -> Callable[[F], F]:
    """Decorate a Tensor method that hands a value to Python (`item`, `__bool__` ...) so that a
    record sees each call as a Read step of this `kind`."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def read(self: Tensor, *args: Any, **kwargs: Any) -> Any:
            recorder = _function._recorder
            if recorder is None:
                return method(self, *args, **kwargs)
            return recorder.read(self, kind, lambda t: method(t, *args, **kwargs))

        return read  # type: ignore[return-value]

    return decorate


def report_opaque(what: str) -> None:
    """Tell the record being made (if any) that `what`, which it cannot replay, happened."""
    recorder = _function._recorder
    if recorder is not None:
        recorder.opaque(what)


@contextmanager
def unrecorded(what: str) -> Iterator[None]:
    """Run the block outside the record being made (if any), which notes it as one Opaque step
    (`what`). Backward and optimizer steps run this way: their ops are not forward ops."""
    recorder = _function._recorder
    if recorder is None:
        yield
        return
    recorder.opaque(what)
    with recorder.paused():
        yield


def unrecorded_function(what: str, fn: F) -> F:
    """`fn`, run as `with unrecorded(what): fn(...)` (for `autograd.backward` and `grad`)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with unrecorded(what):
            return fn(*args, **kwargs)

    return call  # type: ignore[return-value]
