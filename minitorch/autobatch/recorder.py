"""`batch()`: the lazy mode. A forward recorder (autograd/record.py) that defers ops instead of
running them, and runs them in batches when a value is needed. NOTE [Autobatch] in lazy.py
describes the whole mechanism; this file is the hook's side of it:

- `apply` (every op): a shared op runs once and is remembered; any other op becomes a `LazyOp`
  and returns placeholders (or, when its output shape depends on values, runs now);
- `read` (`item()`, `bool(t)`, `print(t)` ...) of a pending tensor: flush, then read;
- `create` (factories): flush first if the factory reads a pending tensor's values;
- `slot_of`, which `inplace()` calls before changing a tensor in place: flush, and run the
  ops of that in-place op eagerly (their result is copied into storage at once);
- `opaque` (backward, optimizer step, hooks ...): flush;
- leaving the block: flush.
"""

from __future__ import annotations

import gc
import sys
from time import perf_counter
from typing import Any

import torch

from minitorch.autobatch.execute import Executor
from minitorch.autobatch.explain import Explainer
from minitorch.autobatch.lazy import CONST, RAW, SAMPLE, SHARED, VALUES, LazyOp, Pending
from minitorch.autobatch.rules import Filled, FromData, rule_for
from minitorch.autobatch.schedulers import SCHEDULERS, fold_add_chains, schedule
from minitorch.autobatch.signature import (
    ArgInfo,
    OpKind,
    ShapeUnknown,
    const_key,
    creation_kind,
    describe,
)
from minitorch.autobatch.stats import Stats
from minitorch.autograd import function as _function
from minitorch.autograd import grad_mode
from minitorch.autograd import record as _record
from minitorch.autograd.record import Recorder
from minitorch.nn.parameter import Parameter
from minitorch.ops import elementwise as ew
from minitorch.tensor import Tensor, _shape_args

# Factories that read only the shape, dtype and device of a tensor argument, never its values.
_METADATA_FACTORIES = {
    "new_zeros", "new_ones", "zeros_like", "ones_like", "empty_like", "full_like",
    "rand_like", "randn_like", "randint_like",
}  # fmt: skip

# Arithmetic ops whose number operand may differ per sample (`pred - target_value`), and its
# position: it is cast to the float tensor's dtype either way (ops/scalars.number_storage), so a
# batch can pass the samples' numbers as one tensor of that dtype, bit for bit.
_NUMBER_OPERAND = {ew.Add: 1, ew.Sub: 1, ew.Mul: 1, ew.Div: 1, ew.RSub: 0}
_FLOATS = (torch.float32, torch.float64)

# Factories whose calls on Python numbers are lazy creations (recorder.create).
_LAZY_FACTORIES = {"tensor", "zeros", "ones", "full"}
_MOST_NUMBERS = 4096  # larger data is made at once: one call for it costs as much as a batch


def _shape_of_numbers(data: Any) -> tuple | None:
    """The shape of `data` if it is a float, or a rectangular nest of lists (or tuples) of
    ints and floats with at least one float and at most `_MOST_NUMBERS` of them; else None."""
    shape: list[int] = []
    level = [data]
    has_float = False
    while True:
        first = level[0]
        kind = type(first)
        if kind is list or kind is tuple:
            n = len(first)
            if n == 0 or len(level) * n > _MOST_NUMBERS:
                return None
            following = []
            for item in level:
                if (type(item) is not list and type(item) is not tuple) or len(item) != n:
                    return None
                following += item
            shape.append(n)
            level = following
            continue
        for item in level:
            kind = type(item)
            if kind is float:
                has_float = True
            elif kind is not int:
                return None
        return tuple(shape) if has_float else None


_last_stats: Stats | None = None


class BatchRecorder(Recorder):
    """`with autobatch.batch():` (see `batch`). The recorder is installed through the forward
    record's hook, so it sees every op, read, creation and in-place write of the block."""

    def __init__(self, scheduler: str = "agenda", keep_schedules: bool = False) -> None:
        if scheduler not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {scheduler!r}: choose one of {SCHEDULERS}")
        super().__init__()
        self.scheduler = scheduler
        self.stats = Stats(scheduler)
        self.explainer = Explainer(self.stats)  # what lost batching: stats.lost (explain.py)
        # With keep_schedules, each flush appends the batches it ran (lists of LazyOp: their
        # `producers`, `depth`, `signature`, `batch`, `row`, `kind.name`), e.g. to draw them.
        self.schedules: list[list[list[LazyOp]]] | None = [] if keep_schedules else None
        self._ops: list[LazyOp] = []  # recorded since the last flush, in order
        self._pending: dict[int, Pending] = {}  # id(placeholder storage) -> its Pending
        self._kinds: dict[tuple, OpKind] = {}  # signature -> what is known about it
        self._shared: dict[int, Tensor] = {}  # id -> result of a shared op (kept alive)
        self._memo: dict[tuple, Any] = {}  # shared op call -> its result
        self._inplace_frame: Any = None  # the frame of the in-place op being run, if any
        self._flush_seconds = 0.0  # time spent in flushes, taken out of the hooks' time
        self._unhooked = _Unhooked(self)  # `Recorder.paused()`, without a generator's cost

    # Entering and leaving ---------------------------------------------------------------------
    def __enter__(self) -> BatchRecorder:
        global _last_stats
        try:
            super().__enter__()  # refuses to open inside another record
        except RuntimeError as nested:
            other = getattr(_record, "_open", None) or _function._recorder
            what = (
                "another autobatch.batch() block"
                if isinstance(other, BatchRecorder)
                else f"a forward record ({type(other).__name__}: a jit trace or a watch)"
            )
            raise RuntimeError(
                f"autobatch.batch() cannot start inside {what}: records cannot be nested. "
                "Batch outside the traced function, or trace outside the batch block."
            ) from nested
        _last_stats = self.stats
        # The lazy graph is many small objects that reference counting frees; a pass of the
        # cyclic garbage collector over them would cost more than recording them. Paused until
        # the block ends (cycles made meanwhile are collected then).
        self._collector_was_on = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, exc_type: Any, *exc_info: Any) -> None:
        try:
            if exc_type is None:
                self.flush()
        finally:
            for op in self._ops:  # not run (an exception): cut the op -> Pending -> op cycles
                op.outputs = None
            self._ops, self._pending, self._memo, self._shared = [], {}, {}, {}
            super().__exit__(exc_type, *exc_info)
            if self._collector_was_on:
                gc.enable()

    # Flushing -----------------------------------------------------------------------------------
    def flush(self, reason: str | None = None) -> None:
        """Run every pending op now, in batches (a flush, counted in `stats.flushes`). `reason`
        (why a value is needed before the end of the block) also counts it as forced, a lost
        batching opportunity."""
        if not self._ops:
            return
        start = perf_counter()
        self.explainer.flush_started(reason)
        self.stats.flushes += 1
        if reason is not None:
            self.stats.forced_flushes += 1
            self.stats.flush_reasons.append(reason)
        ops, self._ops, self._pending = self._ops, [], {}
        try:
            ops = fold_add_chains(ops)  # NOTE [Add chains] in schedulers.py
            batches = schedule(ops, self.scheduler)
            scheduled = perf_counter()
            if self.schedules is not None:
                self.schedules.append(batches)
            with self._unhooked:
                Executor(self.stats).run(batches)
            self.explainer.flush_ran(batches)
        finally:
            for op in ops:  # op -> Pending -> op is a reference cycle: cut it
                op.outputs = None
        done = perf_counter()
        self.stats.schedule_seconds += scheduled - start
        self.stats.run_seconds += done - scheduled
        self._flush_seconds += done - start

    def _is_pending(self, t: Tensor) -> bool:
        """Does `t` (or the tensor it aliases) still wait for its value?"""
        entry = self._pending.get(id(t._data))
        return entry is not None and entry.data_ref() is t._data

    def _holds_pending(self, values: Any) -> bool:
        for v in values:
            if isinstance(v, Tensor) and self._is_pending(v):
                return True
            if isinstance(v, torch.Tensor):
                entry = self._pending.get(id(v))
                if entry is not None and entry.data_ref() is v:
                    return True
            if isinstance(v, (list, tuple)) and self._holds_pending(v):
                return True
        return False

    # The hooks ------------------------------------------------------------------------------------
    def apply(self, function: type, args: tuple) -> Any:
        start, flushed = perf_counter(), self._flush_seconds
        result = self._record(function, args)  # (an op that raises is not timed)
        self.stats.record_seconds += perf_counter() - start - (self._flush_seconds - flushed)
        return result

    def _record(self, function: type, args: tuple) -> Any:
        """Run a shared op once, make a lazy op, or run the op now (NOTE [Autobatch])."""
        if self._inplace_frame is not None and self._inside_inplace():
            return self._run_now(function, args, None)
        pending = self._pending
        state = grad_mode._state
        mode = (state.grad_enabled, state.inference)
        # The signature (signature.py): per tensor argument (shape, dtype) if per-sample,
        # (id, version) if shared; RAW storages (shape, dtype, RAW); constants by const_key.
        signature: list = [function, mode]
        add = signature.append
        lazy_args = inputs = producers = None
        depth = 0
        per_sample = requires_grad = False
        for position, a in enumerate(args):
            if type(a) is Parameter:  # the commonest shared argument: no placeholder is one
                add((id(a), a._version_counter.value))
                if a._requires_grad:
                    requires_grad = True
            elif isinstance(a, Tensor):
                data = a._data
                entry = pending.get(id(data))
                if entry is not None:
                    if entry.tensor_ref() is a:  # a placeholder
                        if inputs is None:
                            lazy_args, inputs, producers = list(args), [], []
                        lazy_args[position] = entry
                        entry.readers += 1
                        inputs.append(position)
                        producer = entry.op
                        producers.append(producer)
                        add(entry.key)
                        per_sample = True
                        if producer.depth >= depth:
                            depth = producer.depth + 1
                        if a._requires_grad:
                            if a.grad_fn is None:  # requires_grad_() on a lazy creation
                                reason = "requires_grad_() on a tensor made in the block"
                                return self._run_now(function, args, reason)
                            requires_grad = True
                        continue
                    if entry.data_ref() is data:  # detach() or .data of a placeholder
                        return self._run_now(function, args, "an alias of a pending tensor")
                if (
                    type(a) is not Tensor
                    or (a.grad_fn is None and a._requires_grad)
                    or (id(a) in self._shared)
                ):
                    add((id(a), a._version_counter.value))
                else:
                    add((data.shape, data.dtype))
                    per_sample = True
                if a._requires_grad:
                    requires_grad = True
            elif isinstance(a, torch.Tensor):  # a storage argument (an index, a target)
                entry = pending.get(id(a))
                if entry is not None and entry.data_ref() is a:
                    return self._run_now(function, args, "the storage of a pending tensor")
                add((a.shape, a.dtype, RAW))
                per_sample = True
            else:
                kind_of_a = type(a)
                if (kind_of_a is float or kind_of_a is int) and _NUMBER_OPERAND.get(
                    function
                ) == position:
                    other = args[1 - position]
                    if isinstance(other, Tensor) and other._data.dtype in _FLOATS:
                        add((kind_of_a, VALUES))  # a number per sample (NOTE [Autobatch])
                        continue
                if (kind_of_a is tuple or kind_of_a is list) and self._holds_pending(a):
                    return self._run_now(function, args, "a pending tensor inside a list")
                add(const_key(a))
        key = tuple(signature)
        if not per_sample:
            return self._shared_op(function, args, key)
        kind = self._kinds.get(key)
        if kind is None:
            try:
                kind = self._kinds[key] = self._new_kind(function, args, key)
            except ShapeUnknown as unknown:
                reason = f"its output shape could not be found without running it ({unknown})"
                return self._run_now(function, args, reason)
            self.explainer.new_kind(kind)  # its user line, once per signature
        ctx = function._backward_cls() if requires_grad and mode[0] and not mode[1] else None
        if inputs is None:
            op = LazyOp(function, args, (), (), kind, 0, mode, ctx)
        else:
            op = LazyOp(function, lazy_args, inputs, producers, kind, depth, mode, ctx)
        self._ops.append(op)
        self.stats.ops_recorded += 1
        make = Tensor._make
        entries = op.outputs
        if not kind.returns_tuple:  # the common case: one output
            meta = kind.outputs[0]
            data = meta.template.detach()
            if ctx is not None and meta.differentiable:
                placeholder = make(data, ctx, True, 0)
            else:
                placeholder = make(data)
            entry = Pending(op, 0, meta.key, placeholder)
            entries.append(entry)
            pending[id(data)] = entry
            return placeholder
        outputs = []
        for nr, meta in enumerate(kind.outputs):
            data = meta.template.detach()
            if ctx is not None and meta.differentiable:
                placeholder = make(data, ctx, True, nr)
            else:
                placeholder = make(data)
            entry = Pending(op, nr, meta.key, placeholder)
            entries.append(entry)
            pending[id(data)] = entry
            outputs.append(placeholder)
        return tuple(outputs)

    def _new_kind(self, function: type, args: tuple, key: tuple) -> OpKind:
        """The OpKind of a new signature `key`, with each argument's role read back from it."""
        infos = []
        for a, entry in zip(args, key[2:]):
            if isinstance(a, Tensor):
                role = SHARED if type(entry[0]) is int else SAMPLE
                infos.append(ArgInfo(role, tuple(a._data.shape), a._data.dtype))
            elif isinstance(a, torch.Tensor):
                infos.append(ArgInfo(RAW, tuple(a.shape), a.dtype))
            elif type(entry) is tuple and len(entry) == 2 and entry[1] is VALUES:
                infos.append(ArgInfo(VALUES, value=a))
            else:
                infos.append(ArgInfo(CONST, value=a))
        with self._unhooked:  # a probe of a custom op runs its forward: record none of it
            return describe(len(self._kinds), function, args, tuple(infos))

    def _shared_op(self, function: type, args: tuple, key: tuple) -> Any:
        """An op on shared tensors only: the same for every sample, so it runs once (NOTE
        [Autobatch]). Only ops with a batching rule are known to be pure and are remembered;
        `key` (the signature) names the very tensors and their versions."""
        result = self._memo.get(key)
        if result is not None:
            self.stats.shared_reused += 1
            return result
        memo = rule_for(function) is not None and any(isinstance(a, Tensor) for a in args)
        with self._unhooked:
            result = function.apply(*args)
        self.stats.shared_ops += 1
        if memo:
            self._memo[key] = result
            for out in result if isinstance(result, tuple) else (result,):
                if isinstance(out, Tensor):
                    self._shared[id(out)] = out
        return result

    def _run_now(self, function: type, args: tuple, reason: str | None) -> Any:
        """Run an op eagerly, after the pending ops (a flush, counted when `reason` is given)."""
        if reason is not None:
            self.flush(f"{function.__name__}: {reason}")
        with self._unhooked:
            return function.apply(*args)

    def read(self, tensor: Tensor, kind: str, reader: Any) -> Any:
        start, flushed = perf_counter(), self._flush_seconds
        if kind != "len" and self._is_pending(tensor):  # len() needs only the shape
            self.flush(f"{kind}() at {_record._caller_line()}")
        with self._unhooked:
            value = reader(tensor)
        self.stats.record_seconds += perf_counter() - start - (self._flush_seconds - flushed)
        return value

    def create(self, factory: Any, args: tuple, kwargs: dict) -> Tensor:
        name = getattr(factory, "__name__", "a factory")
        if name in _LAZY_FACTORIES:
            start, flushed = perf_counter(), self._flush_seconds
            made = self._lazy_creation(name, args, kwargs)
            self.stats.record_seconds += perf_counter() - start - (self._flush_seconds - flushed)
            if made is not None:
                return made
        if name not in _METADATA_FACTORIES and self._holds_pending((*args, *kwargs.values())):
            self.flush(f"{name}() of a pending tensor")
        with self._unhooked:
            return factory(*args, **kwargs)

    def _lazy_creation(self, name: str, args: tuple, kwargs: dict) -> Tensor | None:
        """`tensor`, `zeros`, `ones` or `full` of Python numbers, as a lazy op whose batch makes
        one tensor for all samples (`FromData`, `Filled` in rules.py); None when the call is
        not one of those (other arguments, a tensor that requires grad, not floating point:
        integer tensors are mostly indices and targets, which ops read as storage)."""
        dtype, device = kwargs.get("dtype"), kwargs.get("device")
        if kwargs.get("requires_grad") or kwargs.get("out") is not None:
            return None
        if len(kwargs) > 2 + ("requires_grad" in kwargs) + ("out" in kwargs):
            return None  # a keyword of another kind: made as it is
        if dtype is not None and dtype not in _FLOATS:
            return None
        if name == "tensor":
            if len(args) != 1:
                return None
            shape = _shape_of_numbers(args[0])
            if shape is None:
                return None
            function, lazy_args, value_position = FromData, (args[0], dtype, device), 0
        else:
            if name == "full":
                if len(args) != 2 or type(args[1]) not in (float, int):
                    return None
                size, value = args[0], args[1]
                if dtype is None and type(value) is int:
                    return None  # full(size, 3) is int64
            else:
                size, value = _shape_args(args), 0.0 if name == "zeros" else 1.0
            if not all(type(n) is int and n >= 0 for n in size):
                return None
            shape = tuple(size)
            function, lazy_args, value_position = Filled, (shape, value, dtype, device), 1
        dtype = dtype or torch.get_default_dtype()
        state = grad_mode._state
        mode = (state.grad_enabled, state.inference)  # inference mode makes inference tensors
        key = (function, mode, shape, dtype, device)
        kind = self._kinds.get(key)
        if kind is None:
            infos = [ArgInfo(CONST, value=a) for a in lazy_args]
            infos[value_position] = ArgInfo(VALUES, value=lazy_args[value_position])
            named = "tensor" if function is FromData else "full"  # zeros and ones are full()
            kind = creation_kind(len(self._kinds), named, function, tuple(infos), shape, dtype,
                                 device)  # fmt: skip
            self._kinds[key] = kind
            self.explainer.new_kind(kind)
        op = LazyOp(function, lazy_args, (), (), kind, 0, mode, None)
        self._ops.append(op)
        self.stats.ops_recorded += 1
        meta = kind.outputs[0]
        placeholder = Tensor._make(meta.template.detach())
        entry = Pending(op, 0, meta.key, placeholder)
        op.outputs.append(entry)
        self._pending[id(placeholder._data)] = entry
        return placeholder

    def created(self, factory: Any, args: tuple, kwargs: dict, result: Tensor) -> None:
        # `Tensor(t)` wrapped t's storage object; once flushed it holds t's value.
        if args and isinstance(args[0], Tensor) and self._is_pending(args[0]):
            self.flush("Tensor() of a pending tensor")
            result._data = args[0]._data.detach()

    def slot_of(self, t: Tensor) -> int:
        """Called by `inplace()` before it changes `t`: its ops must run now (NOTE [Autobatch])."""
        self.flush(f"in-place op at {_record._caller_line()}")
        if self._inplace_frame is None or not self._inside_inplace():
            self._inplace_frame = sys._getframe(1)
        return 0

    def _inside_inplace(self) -> bool:
        """Is the in-place op that `slot_of` saw still running (its frame on the stack)?"""
        frame = sys._getframe(1)
        while frame is not None:
            if frame is self._inplace_frame:
                return True
            frame = frame.f_back
        self._inplace_frame = None
        return False

    def wrote(self, target: Tensor, source: Tensor) -> None:
        """Nothing to do: an in-place op runs eagerly (see slot_of)."""

    def opaque(self, what: str) -> None:
        """Backward, an optimizer step, a hook ...: they need the values, so flush."""
        self.flush(what)


class _Unhooked:
    """`with recorder._unhooked:` runs a block with the hook off (like `Recorder.paused()`)."""

    __slots__ = ("recorder",)

    def __init__(self, recorder: BatchRecorder) -> None:
        self.recorder = recorder

    def __enter__(self) -> None:
        _function._recorder = None

    def __exit__(self, *exc_info: Any) -> None:
        _function._recorder = self.recorder


def batch(scheduler: str = "agenda", keep_schedules: bool = False) -> BatchRecorder:
    """Lazy mode: `with minitorch.autobatch.batch():` records the ops of per-sample code instead
    of running them, and runs ops of equal signature from all samples as one batched op.

    Tensors made inside the block are placeholders until a flush: leaving the block, or
    reading a pending value (`.item()`, `bool`, `print`, ...), which counts as a lost batching
    opportunity. Afterwards they are rows of batched results, with gradients flowing back
    through the batched ops. `scheduler` is "agenda" (DyNet's rule on
    whole depth levels, the default: never more calls than "depth"), "depth", or "dynet"
    (DyNet's agenda node by node, the default before issue 35; schedulers.py compares them).
    `autobatch.stats()` (or the recorder's `.stats`) says what happened; with
    `keep_schedules=True`, `recorder.schedules` keeps the batches each flush ran.
    """
    return BatchRecorder(scheduler, keep_schedules)


def stats() -> Stats | None:
    """The `Stats` of the current or latest `autobatch.batch()` block (None before the first)."""
    return _last_stats
