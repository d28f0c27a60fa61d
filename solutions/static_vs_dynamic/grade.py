"""Hidden tests of notebook 5, "static vs dynamic": the kernel half (NOTE [Hidden tests in two
halves] in solutions/grading.py).

Each test runs the student's answer on fresh cases (small models, fan-out, several inputs,
parameters, recurrent cells, data-dependent branches, long chains) and returns what it saw as
plain data: the trace described slot by slot, the values a replay returned, counts of the ops it
ran and of the graph nodes it made, whether it changed a tensor or the trace in place. judge.py
compares that data with what the same test observes of the notebook's own answer.

Exercises build on each other, but a mistake costs only its own points. The earlier answers are
replaced by stand-ins that reveal nothing the student does not have, never by the reference:
- the traces handed to exercises 2-5 are made by minitorch's own forward record (`record_call`,
  shown in the notebook's first section) and written in the notebook's `Trace` format, with the
  student's own `Slot`, `Step`, `Guard` and `Trace` classes (so that their `isinstance` checks see
  their own classes);
- exercise 6 gets `record_call` and `run` (minitorch's interpreter of a recorded program) as its
  `tracer` and `replayer`, wrapped to count the calls they receive;
- exercise 7 gets `minitorch.jit.trace` and a replay of it with backward, which time the calls
  they receive (and `fn`, timed until its backward reaches the input).
Pass `seed=` to make the random cases reproducible.
"""

from __future__ import annotations

import functools
import inspect
import random
import time
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch

import minitorch
import minitorch.jit
from minitorch import nn
from minitorch.autograd.record import Const, Op, Opaque, Read, Ref, record_call, run
from minitorch.autograd.watch import watch_ops
from solutions.grading import (
    DEFAULT_RECURSION_LIMIT,
    Failure,
    call_student,
    check_callable,
    expect,
    hidden_test,
    is_release_stub,
    plain,
    predictions_for,
    recursion_limit,
)
from solutions.reference_cells import given

F64 = torch.float64
TRACE_TYPES = ("Slot", "Step", "Guard", "Trace", "READERS", "GuardFailed")
# Exercise 5 on a chain of diamonds: a backward pass that follows every path instead of summing
# the gradients per slot takes 2**DIAMONDS times longer than one that visits each step once.
DIAMONDS = 16
DEEP_CHAIN = 800  # steps of two ops: a recursive walk of the trace overflows Python's stack
TIME_BOUND = 1.0  # seconds for exercise 5 on the chain of diamonds (a correct answer: ~0.01 s)


# -------------------------------------------------------------------------------------------------
# The cases: functions to trace, with inputs
# -------------------------------------------------------------------------------------------------
class Case:
    """A function to trace, a way to draw inputs for it (`make_inputs(gen)`), and the tensors it
    uses that it did not make (`params`: a trace captures them by reference)."""

    def __init__(self, name: str, fn: Callable, make_inputs: Callable, params: list) -> None:
        self.name, self.fn, self.make_inputs, self.params = name, fn, make_inputs, params


def _randn(
    gen: torch.Generator, *shape: int, requires_grad: bool = False, dtype: torch.dtype = F64
) -> Any:
    values = torch.randn(*shape, generator=gen, dtype=F64)
    return minitorch.tensor(values.tolist(), dtype=dtype, requires_grad=requires_grad)


def _cases(seed: int, grads: bool = False) -> list[Case]:
    """Models without branches. With `grads`, inputs require grad (as in training)."""
    rng = random.Random(seed)
    minitorch.manual_seed(rng.randrange(2**31))
    batch, features, hidden = rng.randint(2, 5), rng.randint(2, 5), rng.randint(2, 6)
    mlp = nn.Sequential(nn.Linear(features, hidden), nn.Tanh(), nn.Linear(hidden, 1)).double()
    cell = nn.GRUCell(features, hidden).double()
    scale = nn.Linear(features, features, bias=False).double()

    def inputs(*shapes: tuple) -> Callable:
        return lambda gen: [_randn(gen, *s, requires_grad=grads) for s in shapes]

    def mlp_fn(x):
        return mlp(x).sum()

    def fan_out(x):
        y = x.exp()
        return (y * y + y.sin() * y).sum()

    def two_inputs(a, b):
        return ((a * b + a).tanh() / (b * b + 1.0)).sum()

    def recurrent(x, h):
        for _ in range(3):
            h = cell(x, h)
        return h.sum()

    def shared_weight(x):
        return scale(scale(x).relu()).pow(2).mean()

    return [
        Case("an MLP", mlp_fn, inputs((batch, features)), list(mlp.parameters())),
        Case("a value used three times", fan_out, inputs((batch, features)), []),
        Case("two inputs", two_inputs, inputs((features,), (features,)), []),
        Case(
            "a GRU cell run 3 steps",
            recurrent,
            inputs((batch, features), (batch, hidden)),
            list(cell.parameters()),
        ),  # fmt: skip
        Case(
            "one layer used twice",
            shared_weight,
            inputs((batch, features)),
            list(scale.parameters()),
        ),  # fmt: skip
    ]


def _multi_output(x):
    y = x.sin()
    return y * 2, (y + x).sum()


def _multi_output_ops(x):
    """Ops with several outputs (one slot each, in order), some outputs never used."""
    top, bottom = x.chunk(2, dim=0)
    first, rest = x.split([1, x.shape[0] - 1], dim=0)
    largest, _ = x.max(dim=1)
    ordered, _ = x.sort(dim=1)
    rows = x.unbind(0)
    return (
        (top * bottom).sum() + (first * rest[0]).sum() + largest.sum() + (ordered * rows[1]).sum()
    )


def _reordered_outputs(x):
    """Outputs not in the order they were made: an input among them, one tensor twice."""
    y = x.sin()
    z = x.cos()
    return z, x, y, z


def _dead_step(x):
    """A step whose result is never used, on a value that requires grad."""
    unused = x.exp() * 2  # noqa: F841 (the point: backward never reaches it)
    a, b = x.chunk(2, dim=0)  # b is never used either: it gets no gradient
    return (a.tanh() * 3).sum()


_BUFFER: list = []  # filled by _with_buffer's case: a captured tensor that needs no gradient


def _with_buffer(x):
    """A parameter that requires grad and a captured buffer that does not."""
    weight, mask = _BUFFER
    return ((x * weight).tanh() * mask).sum()


def _float_reads(x):
    """int() and bool() of floating tensors: the read value is not the tensor's item()."""
    y = x * 1.5
    for _ in range(int(x.abs().sum())):  # int of a float: truncated
        y = y.sin()
    if x.mean():  # bool of a float: True for any non-zero mean
        y = y + 1.0
    return y


def _len_and_index(x):
    """A len() read and an index read (range of an integer tensor)."""
    y = x * len(x)
    for _ in range((x > 1.0).sum()):
        y = y.tanh()
    return y


def _branches(x):
    """Data-dependent branches, one of each kind of read."""
    y = x * 2
    if y.sum() > 0:  # bool
        y = y.tanh()
    positives = (x > 0).sum().item()  # item
    y = y + positives
    for _ in range(int((x.abs() > 3.0).sum())):  # int
        y = y * y
    return y


def _reads_a_tensor_it_did_not_make(count: Any) -> Callable:
    """A function that reads the value of `count`, a tensor made outside the call, before any
    op uses it: the trace captures it like a parameter."""

    def repeated(x):
        for _ in range(int(count)):
            x = x.tanh() * 2
        return x

    return repeated


def _branch_inputs(gen: torch.Generator, sign: float, size: int = 4) -> Any:
    """Values in (0.6, 1.6) times `sign`: all reads of `_branches` depend only on the sign."""
    values = (torch.rand(size, generator=gen, dtype=F64) + 0.6) * sign
    return minitorch.tensor(values.tolist(), dtype=F64)


def _scaled_by_sum(x):
    return (x * x.sum().item()).exp()


def _own_output_fan_out(x):
    """A non-scalar output whose gradient reaches x twice, straight from grad_output."""
    return x + x.sin()


def _deep_chain(x):
    for _ in range(DEEP_CHAIN):
        x = x * 1.001 + 0.001
    return x.sum()


def _diamonds(x):
    for _ in range(DIAMONDS):
        x = x * 0.5 + x.tanh()  # x feeds two ops that meet again: a diamond
    return x.sum()


# -------------------------------------------------------------------------------------------------
# Helpers
# -------------------------------------------------------------------------------------------------
def _namespace(answer: Any, what: str) -> dict:
    """The globals of the notebook the answer was written in (it must see the trace classes)."""
    check_callable(answer, what)
    function = inspect.unwrap(answer)  # e.g. under @minitorch.no_grad()
    expect(
        inspect.isfunction(function),
        f"{what} must be a function defined with def in the notebook, not a "
        f"{type(answer).__name__}",
    )
    missing = [name for name in TRACE_TYPES if name not in function.__globals__]
    expect(not missing, f"run the notebook's cells above {what} first: {missing} are undefined")
    return function.__globals__


def _library_trace(fn: Callable, inputs: list, ns: dict) -> Any:
    """The trace of `fn(*inputs)` in the notebook's format, with the classes of `ns`, made by
    minitorch's forward record: the stand-in for the student's exercise 1."""
    program, _ = record_call(fn, *inputs)
    Slot, Step, Guard = ns["Slot"], ns["Step"], ns["Guard"]

    def arg(a: Any) -> Any:
        if isinstance(a, Ref) and not a.storage:
            return Slot(a.slot)
        if isinstance(a, Const):
            return a.value
        raise RuntimeError(f"a case of this grader passes {a} to an op")  # a grader bug

    steps = []
    for step in program.steps:
        if isinstance(step, Op):
            steps.append(Step(step.function, [arg(a) for a in step.args], list(step.outputs)))
        elif isinstance(step, Read):
            steps.append(Guard(step.slot, step.kind, step.value))
        else:
            raise RuntimeError(f"a case of this grader has a step {step}")  # a grader bug
    return ns["Trace"](
        inputs=list(program.inputs),
        outputs=list(program.outputs),
        captured={slot.index: slot.tensor for slot in program.captured},
        steps=steps,
        input_meta=[(t.shape, t.dtype) for t in inputs],
    )


class TimeBoundExceeded(BaseException):
    """Raised into an answer that runs past its time bound (a BaseException, so that the
    answer's own `except Exception` does not swallow it)."""


class _Watch:
    """What an answer did while it ran: ops per Function (by name), the ops that made a graph
    node, and the runs of minitorch's backward engine (`backward()`, `autograd.grad`).

    With `seconds`, the first op the answer runs after that many seconds raises
    TimeBoundExceeded: an exponential answer is stopped instead of waited for."""

    def __init__(self, seconds: float | None = None) -> None:
        self.ops: Counter = Counter()
        self.graph_nodes = 0
        self.engine: list[str] = []
        self._watch: watch_ops | None = None
        self.deadline = None if seconds is None else time.perf_counter() + seconds

    def on_op(self, function: type, args: tuple, outputs: tuple) -> None:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise TimeBoundExceeded
        self.ops[function.__name__] += 1
        if any(isinstance(o, minitorch.Tensor) and o.grad_fn is not None for o in outputs):
            self.graph_nodes += 1

    def __enter__(self) -> _Watch:
        self._watch = watch_ops(self.on_op)
        self._watch.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._watch.__exit__(*exc_info)
        steps = self._watch.program.steps
        self.engine = [s.what for s in steps if isinstance(s, Opaque)]


def _outputs(values: Any, call: str) -> list:
    """The tensors a replay returned, as plain data (a tuple is the contract)."""
    expect(isinstance(values, tuple), f"{call} must return a tuple, not {type(values).__name__}")
    return [plain(v) for v in values]


def _versions(tensors: list) -> list[int]:
    return [t._version for t in tensors]


def _snapshot(recorded: Any, inputs: list) -> tuple:
    """What a replay must leave alone: the trace's captured slots and steps, and the version
    counters of the inputs and captured tensors (an in-place change bumps them)."""
    tensors = [*inputs, *recorded.captured.values()]
    return set(recorded.captured), len(recorded.steps), tensors, _versions(tensors)


def _replay_effects(recorded: Any, before: tuple) -> dict:
    """What a replay changed among what `_snapshot` saw."""
    slots, steps, tensors, versions = before
    return {
        "slots added to trace.captured": sorted(set(recorded.captured) - slots, key=str),
        "trace.steps changed": len(recorded.steps) != steps,
        "tensors changed in place": sum(1 for t, v in zip(tensors, versions) if t._version != v),
    }


# -------------------------------------------------------------------------------------------------
# Exercise 1: trace
# -------------------------------------------------------------------------------------------------
def _describe_arg(a: Any, ns: dict) -> Any:
    """An op argument of the student's Step as plain data (a Slot, or a constant and its type)."""
    if isinstance(a, ns["Slot"]):
        return {"slot": plain(a.index)}
    if a is None or type(a) in (bool, int, float, str):
        return {"const": type(a).__name__, "value": plain(a)}
    if type(a) in (tuple, list):
        return {"const": type(a).__name__, "items": [_describe_arg(i, ns) for i in a]}
    if isinstance(a, (minitorch.Tensor, torch.Tensor)):
        return {"const": "tensor", "value": plain(a)}
    if isinstance(a, (torch.dtype, torch.device, slice)) or a is Ellipsis:
        return {"const": type(a).__name__, "repr": repr(a)}
    return {"const": type(a).__name__}


def _describe_step(step: Any, ns: dict) -> dict:
    if isinstance(step, ns["Guard"]):
        return {
            "Guard": {
                "slot": plain(step.slot),
                "kind": plain(step.kind),
                "value": plain(step.value),
            }
        }
    if isinstance(step, ns["Step"]):
        f = step.function
        function = f"{f.__module__}.{f.__qualname__}" if isinstance(f, type) else plain(f)
        return {
            "Step": {
                "function": function,
                "args": [_describe_arg(a, ns) for a in step.args],
                "outputs": plain(list(step.outputs)),
            }
        }
    return {"other": type(step).__name__}


def _describe_captured(value: Any, params: list) -> dict:
    """A captured tensor: which of the case's own tensors it is, a copy of one, or a constant
    (a tensor the library made during the call, e.g. the 0 of `x > 0`)."""
    for k, p in enumerate(params):
        if value is p:
            return {"parameter": k}
    if isinstance(value, minitorch.Tensor):
        for k, p in enumerate(params):
            if value.shape == p.shape and torch.equal(value._data, p._data):
                return {"copy of parameter": k}
    return {"tensor": plain(value)}


def _describe_meta(meta: Any) -> Any:
    if not (isinstance(meta, (tuple, list)) and len(meta) == 2):
        return plain(meta)
    shape, dtype = meta
    return [
        [plain(n) for n in shape] if isinstance(shape, (tuple, list)) else plain(shape),
        str(dtype) if isinstance(dtype, torch.dtype) else plain(dtype),
    ]


def _describe_trace(t: Any, params: list, ns: dict) -> dict:
    return {
        "inputs": plain(list(t.inputs)),
        "input_meta": [_describe_meta(m) for m in t.input_meta],
        "captured": {str(s): _describe_captured(v, params) for s, v in dict(t.captured).items()},
        "steps": [_describe_step(s, ns) for s in t.steps],
        "outputs": plain(list(t.outputs)),
    }


@hidden_test("trace")
def trace(answer: Any, seed: int) -> dict:
    """Exercise 1: the student's Trace of each case, slot by slot (judged against the reference's
    trace of the same call)."""
    ns = _namespace(answer, "trace")
    gen = torch.Generator().manual_seed(seed)
    cases = [(c.name, c.fn, c.make_inputs(gen), c.params) for c in _cases(seed)]
    cases.append(("a function returning two tensors", _multi_output, [_randn(gen, 3)], []))
    cases.append(("a function with branches", _branches, [_branch_inputs(gen, 1.0)], []))
    rows = random.Random(seed).choice([4, 6])  # chunk(2) halves it
    cases.append(
        (
            "ops with several outputs (chunk, split, max(dim), sort, unbind)",
            _multi_output_ops,
            [_randn(gen, rows, 3)],
            [],
        )
    )
    cases.append(
        (
            "a function returning (z, x, y, z): outputs out of order, its input, one twice",
            _reordered_outputs,
            [_randn(gen, 3)],
            [],
        )
    )
    count = minitorch.tensor(random.Random(seed).choice([2, 3]))
    cases.append(
        (
            "a function that reads a tensor it did not make (int(n) of a global n)",
            _reads_a_tensor_it_did_not_make(count),
            [_randn(gen, 3)],
            [count],
        )
    )
    seen = {}
    for name, fn, inputs, params in cases:
        got = call_student(answer, fn, *inputs, call=f"trace(fn, ...) on {name}")
        expect(
            isinstance(got, ns["Trace"]), f"on {name}: trace must return a Trace, not {got!r:.60}"
        )
        seen[f"on {name}"] = _describe_trace(got, params, ns)
    return seen


# -------------------------------------------------------------------------------------------------
# Exercise 2: replay
# -------------------------------------------------------------------------------------------------
def _replayed(answer: Any, recorded: Any, inputs: list, call: str) -> dict:
    """Replay once: the outputs, the ops that made graph nodes, what it changed."""
    before = _snapshot(recorded, inputs)
    with _Watch() as watch:
        got = call_student(answer, recorded, *inputs, call=call)
    return {
        "outputs": _outputs(got, call),
        "graph nodes made": watch.graph_nodes,
        **_replay_effects(recorded, before),
    }


@hidden_test("replay")
def replay(answer: Any, seed: int) -> dict:
    """Exercise 2: what replays return on new inputs (and after a parameter changed), whether
    they record a graph, and whether they leave the trace and the tensors alone."""
    ns = _namespace(answer, "replay")
    gen = torch.Generator().manual_seed(seed)
    cases = _cases(seed, grads=True)
    cases.append(Case("two outputs", _multi_output, lambda g: [_randn(g, 3)], []))
    cases.append(
        Case(
            "ops with several outputs (chunk, split, max(dim), sort, unbind)",
            _multi_output_ops,
            lambda g: [_randn(g, 4, 3)],
            [],
        )
    )
    cases.append(
        Case("outputs (z, x, y, z)", _reordered_outputs, lambda g: [_randn(g, 3)], [])
    )  # fmt: skip
    seen = {}
    for case in cases:
        recorded = _library_trace(case.fn, case.make_inputs(gen), ns)
        fresh = case.make_inputs(gen)
        call = f"replay(trace, ...) on {case.name}"
        seen[f"on {case.name}"] = _replayed(answer, recorded, fresh, call)
        if case.params:
            with minitorch.no_grad():
                case.params[0].mul_(-1.5)  # an optimizer step between two calls
            again = _replayed(answer, recorded, fresh, call)
            seen[f"on {case.name}, after an optimizer step changed a parameter"] = again
    recorded = _library_trace(_branches, [_branch_inputs(gen, 1.0)], ns)
    call = "replay(trace, x) with Guard steps"
    seen["on a trace with guards"] = _replayed(answer, recorded, [_branch_inputs(gen, 1.0)], call)
    return seen


# -------------------------------------------------------------------------------------------------
# Exercise 3: input_mismatch
# -------------------------------------------------------------------------------------------------
# What each input must give: None, or a message with this word (and `input i`, naming the first
# input that differs, where one does).
MISMATCH_WORDS = {
    "inputs of the traced shapes and dtypes": None,
    "inputs of the traced shapes and dtypes that require grad": None,
    "a transposed first input": ("shape", 0),
    "a longer second input": ("shape", 1),
    "a first input with an extra dimension of size 1": ("shape", 0),
    "a float32 second input": ("dtype", 1),
    "an int64 first input": ("dtype", 0),
    "a transposed first input and a float32 second input": ("shape", 0),
    "a float32 first input and a longer second input": ("dtype", 0),
    "one input instead of two": ("number", None),
    "three inputs instead of two": ("number", None),
}


def _message(value: Any) -> Any:
    """What input_mismatch returned, as plain data (a message cut at 300 characters)."""
    if type(value) is str:
        return value[:300]
    if value is None or type(value) in (bool, int, float):
        return value
    return {"type": type(value).__name__}


@hidden_test("input_mismatch")
def input_mismatch(answer: Any, seed: int) -> dict:
    """Exercise 3: what input_mismatch returns on matching inputs and on each kind of mismatch."""
    ns = _namespace(answer, "input_mismatch")
    rng = random.Random(seed)
    rows, cols = rng.randint(2, 4), rng.randint(5, 7)

    def f(a, b):
        return (a * 2 + b).sum()

    a, b = minitorch.zeros(rows, cols, dtype=F64), minitorch.zeros(cols, dtype=F64)
    recorded = _library_trace(f, [a, b], ns)
    inputs = {
        "inputs of the traced shapes and dtypes": [
            minitorch.ones(rows, cols, dtype=F64),
            minitorch.ones(cols, dtype=F64),
        ],
        "inputs of the traced shapes and dtypes that require grad": [
            minitorch.ones(rows, cols, dtype=F64, requires_grad=True),
            minitorch.ones(cols, dtype=F64, requires_grad=True),
        ],
        "a transposed first input": [minitorch.zeros(cols, rows, dtype=F64), b],
        "a longer second input": [a, minitorch.zeros(cols + 1, dtype=F64)],
        "a first input with an extra dimension of size 1": [
            minitorch.zeros(rows, cols, 1, dtype=F64),
            b,
        ],
        "a float32 second input": [a, minitorch.zeros(cols)],
        "an int64 first input": [minitorch.zeros(rows, cols, dtype=torch.int64), b],
        "a transposed first input and a float32 second input": [
            minitorch.zeros(cols, rows, dtype=F64),
            minitorch.zeros(cols),
        ],
        "a float32 first input and a longer second input": [
            minitorch.zeros(rows, cols),
            minitorch.zeros(cols + 1, dtype=F64),
        ],
        "one input instead of two": [a],
        "three inputs instead of two": [a, b, b],
    }
    return {
        name: _message(call_student(answer, recorded, *xs, call=f"input_mismatch on {name}"))
        for name, xs in inputs.items()
    }


# -------------------------------------------------------------------------------------------------
# Exercise 4: replay_guarded
# -------------------------------------------------------------------------------------------------
def _guarded(answer: Any, recorded: Any, inputs: list, ns: dict, call: str) -> dict:
    """One call of replay_guarded: its outputs, or the exception it raised; the ops it ran,
    counted per Function of the trace (to see whether it stopped at a failed guard)."""
    functions = {s.function.__name__ for s in recorded.steps if isinstance(s, ns["Step"])}
    before = _snapshot(recorded, inputs)
    with _Watch() as watch:
        try:
            got = answer(recorded, *inputs)
        except ns["GuardFailed"]:
            got = None
            outcome = {"raised": "GuardFailed"}
        except Exception as error:
            if is_release_stub(error):
                raise Failure(
                    f"{call} raised NotImplementedError: replace `raise NotImplementedError()` "
                    "with your solution."
                ) from None
            outcome = {"raised": f"{type(error).__name__}: {error}"[:200]}
        else:
            outcome = {"outputs": _outputs(got, call)}
    return {
        **outcome,
        "trace ops run": {name: watch.ops[name] for name in sorted(functions)},
        "graph nodes made": watch.graph_nodes,
        **_replay_effects(recorded, before),
    }


@hidden_test("replay_guarded")
def replay_guarded(answer: Any, seed: int) -> dict:
    """Exercise 4: replays whose reads give the traced values, and replays where a bool, int or
    item() read changes (even by 1e-10): the outputs, or the exception raised."""
    ns = _namespace(answer, "replay_guarded")
    gen = torch.Generator().manual_seed(seed)
    seen = {}
    for sign, word in ((1.0, "positive"), (-1.0, "negative")):
        recorded = _library_trace(_branches, [_branch_inputs(gen, sign)], ns)
        same, other = _branch_inputs(gen, sign), _branch_inputs(gen, -sign)
        call = "replay_guarded(trace, x)"
        seen[f"traced on {word} x, replayed on {word} x: the same branches"] = _guarded(
            answer, recorded, [same], ns, call
        )
        seen[f"traced on {word} x, replayed on x of the other sign: another branch"] = _guarded(
            answer, recorded, [other], ns, call
        )
    recorded = _library_trace(_branches, [_branch_inputs(gen, 1.0)], ns)
    big = _branch_inputs(gen, 1.0)
    big._data[-1] = 3.5  # one more value above 3: the int() read of the loop's length changes
    seen["an int() read that changed (the length of a loop)"] = _guarded(
        answer, recorded, [big], ns, "replay_guarded(trace, x)"
    )
    example = _branch_inputs(gen, 1.0)
    recorded = _library_trace(_scaled_by_sum, [example], ns)
    seen["an item() read that changed"] = _guarded(
        answer, recorded, [_branch_inputs(gen, 1.0)], ns, "replay_guarded(trace, x)"
    )
    nudged = minitorch.tensor(example.tolist(), dtype=F64)
    nudged._data[0] += 1e-10
    seen["an item() read that changed by 1e-10"] = _guarded(
        answer, recorded, [nudged], ns, "replay_guarded(trace, x)"
    )
    example = _branch_inputs(gen, 1.0)
    recorded = _library_trace(_float_reads, [example], ns)
    again = minitorch.tensor(example.tolist(), dtype=F64)
    again._data[0] += 0.01  # the same int() and bool() reads: int truncates, any mean is True
    seen["int() and bool() of float tensors, read the same again"] = _guarded(
        answer, recorded, [again], ns, "replay_guarded(trace, x)"
    )
    more = minitorch.tensor(example.tolist(), dtype=F64)
    more._data[0] += 1.0  # int(x.abs().sum()) grows by one
    seen["int() of a float tensor that changed"] = _guarded(
        answer, recorded, [more], ns, "replay_guarded(trace, x)"
    )
    example = _branch_inputs(gen, 1.0, size=5)
    recorded = _library_trace(_len_and_index, [example], ns)
    seen["len() and index reads, read the same again"] = _guarded(
        answer, recorded, [_branch_inputs(gen, 1.0, size=5)], ns, "replay_guarded(trace, x)"
    )
    seen["len() read that changed"] = _guarded(
        answer, recorded, [_branch_inputs(gen, 1.0, size=6)], ns, "replay_guarded(trace, x)"
    )
    for case in _cases(seed, grads=True):
        recorded = _library_trace(case.fn, case.make_inputs(gen), ns)
        call = f"replay_guarded on {case.name}"
        seen[f"a trace without guards: {case.name}"] = _guarded(
            answer, recorded, case.make_inputs(gen), ns, call
        )
    return seen


# -------------------------------------------------------------------------------------------------
# Exercise 5: replay_with_gradients
# -------------------------------------------------------------------------------------------------
def _gradient_cases(seed: int, gen: torch.Generator) -> list[tuple[str, Callable, list, list, Any]]:
    """(name, fn, inputs to trace, fresh inputs, grad_output) for exercise 5."""
    cases = []
    for case in _cases(seed, grads=True):
        inputs = case.make_inputs(gen)
        fresh = case.make_inputs(gen)
        if case.name == "two inputs":  # one input that needs no gradient
            inputs[1], fresh[1] = inputs[1].detach(), fresh[1].detach()
        cases.append((case.name, case.fn, inputs, fresh, minitorch.tensor(1.5, dtype=F64)))
    size = random.Random(seed).randint(3, 6)
    cases.append(
        (
            "x + x.sin() (a non-scalar output, whose gradient reaches x twice)",
            _own_output_fan_out,
            [_randn(gen, size, requires_grad=True)],
            [_randn(gen, size, requires_grad=True)],
            _randn(gen, size),
        )
    )
    for name, fn in (
        (f"a chain of {2 * DEEP_CHAIN} ops", _deep_chain),
        (f"a chain of {DIAMONDS} diamonds (x * 0.5 + x.tanh(), repeated)", _diamonds),
    ):
        inputs, fresh = [_randn(gen, 3, requires_grad=True)], [_randn(gen, 3, requires_grad=True)]
        cases.append((name, fn, inputs, fresh, minitorch.tensor(1.0, dtype=F64)))
    rows = random.Random(seed).choice([4, 6])  # chunk(2) halves it
    for name, fn, shape in (
        ("steps whose results are never used", _dead_step, (rows, 3)),
        (
            "ops with several outputs (chunk, split, max(dim), sort, unbind)",
            _multi_output_ops,
            (rows, 3),
        ),
    ):
        inputs, fresh = (
            [_randn(gen, *shape, requires_grad=True)],
            [_randn(gen, *shape, requires_grad=True)],
        )
        cases.append((name, fn, inputs, fresh, minitorch.tensor(1.0, dtype=F64)))
    _BUFFER[:] = [_randn(gen, 3, requires_grad=True), _randn(gen, 3)]
    inputs, fresh = [_randn(gen, 3, requires_grad=True)], [_randn(gen, 3, requires_grad=True)]
    cases.append(
        (
            "a captured parameter and a captured buffer that does not require grad",
            _with_buffer,
            inputs,
            fresh,
            minitorch.tensor(1.0, dtype=F64),
        )
    )
    return cases


@hidden_test("replay_with_gradients")
def replay_with_gradients(answer: Any, seed: int) -> dict:
    """Exercise 5: the output and the gradients per slot, whether the answer ran minitorch's
    backward engine or changed grad_output, an input or a .grad in place; a time bound on a
    chain of diamonds."""
    ns = _namespace(answer, "replay_with_gradients")
    gen = torch.Generator().manual_seed(seed)
    seen = {}
    for name, fn, inputs, fresh, grad_output in _gradient_cases(seed, gen):
        recorded = _library_trace(fn, inputs, ns)
        tensors = [*fresh, *recorded.captured.values()]
        for t in tensors:
            t.grad = None
        versions = _versions([*tensors, grad_output])
        call = f"replay_with_gradients(trace, inputs, grad_output) on {name}"
        bound = TIME_BOUND if fn is _diamonds else None
        try:
            with _Watch(bound) as watch, recursion_limit(DEFAULT_RECURSION_LIMIT):
                got = call_student(answer, recorded, fresh, grad_output, call=call)
        except TimeBoundExceeded:
            raise Failure(
                f"{call} took more than {TIME_BOUND:.0f} s (a correct answer takes about 0.01 s): "
                "a backward program runs each step's backward once, in reverse order, summing "
                "the gradients that reach a slot; following every path from the output "
                "separately takes exponential time on a chain of diamonds."
            ) from None
        expect(
            isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], dict),
            f"on {name}: return (output, grads) with grads a dict, not {got!r:.80}",
        )
        output, grads = got
        changed = [v != t._version for t, v in zip([*tensors, grad_output], versions)]
        seen[f"on {name}"] = {
            "output": plain(output),
            "gradients": {str(slot): plain(g) for slot, g in grads.items()},
            "backward engine runs": watch.engine,
            "grad_output changed in place": changed[-1],
            "inputs or captured tensors changed in place": sum(changed[:-1]),
            ".grad set": sum(1 for t in tensors if t.grad is not None),
        }
    return seen


# -------------------------------------------------------------------------------------------------
# Exercise 6: cached
# -------------------------------------------------------------------------------------------------
class _Tools:
    """The tracer and replayer handed to exercise 6 (minitorch's `record_call` and `run`), and
    `fn` itself, wrapped to count their calls (and time them)."""

    def __init__(self, body: Callable) -> None:
        self.body = body
        self.traced = self.replayed = 0
        self.eager: list[float] = []  # seconds of each eager run
        self.replay_times: list[float] = []
        self._tracing = False

    def fn(self, *inputs: Any) -> Any:
        if self._tracing:
            return self.body(*inputs)
        start = time.perf_counter()
        out = self.body(*inputs)
        self.eager.append(time.perf_counter() - start)
        return out

    def tracer(self, fn: Callable, *inputs: Any) -> Any:
        self.traced += 1
        self._tracing = True
        try:
            return record_call(fn, *inputs)[0]
        finally:
            self._tracing = False

    def replayer(self, program: Any, *inputs: Any) -> tuple:
        self.replayed += 1
        start = time.perf_counter()
        outputs = run(program, *inputs)
        self.replay_times.append(time.perf_counter() - start)
        return outputs


def _cached_fn(x):
    return (x * 2).tanh() + x.sum()


def _cached_pair(a, b):
    """Two inputs, two outputs."""
    return (a * 2).tanh(), a.sum() + b.sum()


def _signatures(rng: random.Random, limit: int) -> list[tuple[tuple[int, ...], torch.dtype]]:
    """`limit` signatures: one shape in two dtypes, two shapes with as many elements."""
    a, b = rng.choice([(2, 3), (2, 5), (3, 4), (3, 5)])
    sizes = rng.sample([n for n in range(2, 12) if n != a * b], limit - 3)
    signatures = [((sizes[0],), F64), ((sizes[0],), torch.float32), ((a, b), F64), ((b, a), F64)]
    return signatures + [((n,), F64) for n in sizes[1:]]


@hidden_test("cached")
def cached(answer: Any, seed: int) -> dict:
    """Exercise 6: outputs, the traces in the cache, and the tracer, replayer and eager calls
    made, within the limit (every signature called twice) and beyond it (with the warnings)."""
    check_callable(answer, "cached")
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    limit = rng.randint(4, 5)
    tools = _Tools(_cached_fn)
    call = call_student(
        lambda: answer(tools.fn, limit, tracer=tools.tracer, replayer=tools.replayer),
        call=f"cached(fn, limit={limit}, tracer, replayer)",
    )
    expect(callable(call), f"cached(fn, limit) must return a function, not {call!r:.60}")
    cache = getattr(call, "cache", None)
    expect(isinstance(cache, dict), "the function cached returns needs a dict `call.cache`")
    outputs = {}
    signatures = _signatures(rng, limit)
    for turn in ("first", "second"):
        for shape, dtype in signatures:
            x = _randn(gen, *shape, dtype=dtype)
            what = f"call(x) with x of shape {list(shape)} and {dtype}, {turn} time"
            outputs[what] = plain(call_student(call, x, call=what))
    seen = {
        "within the limit": {
            "outputs": outputs,
            "traces in call.cache": len(cache),
            "tracer calls": tools.traced,
            "replayer calls": tools.replayed,
            "eager runs of fn": len(tools.eager),
        }
    }
    traced, replayed = tools.traced, tools.replayed
    tools.eager.clear()
    outputs = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for turn, n in (("first", 13), ("first", 14), ("second", 13)):
            x = _randn(gen, n)
            what = f"call(x) beyond the limit, shape [{n}], {turn} time"
            outputs[what] = plain(call_student(call, x, call=what))
    seen["beyond the limit"] = {
        "outputs": outputs,
        "traces in call.cache": len(cache),
        "tracer calls": tools.traced - traced,
        "replayer calls": tools.replayed - replayed,
        "eager runs of fn": len(tools.eager),
        "RuntimeWarnings": sum(1 for w in caught if issubclass(w.category, RuntimeWarning)),
    }
    seen["two inputs, two outputs"] = _cached_pairs(answer, rng, gen)
    return seen


def _cached_pairs(answer: Any, rng: random.Random, gen: torch.Generator) -> dict:
    """cached on a function of two inputs with two outputs: calls whose signatures differ only
    in the second input's shape or dtype, each twice (the limit is not reached)."""
    tools = _Tools(_cached_pair)
    call = call_student(
        lambda: answer(tools.fn, 6, tracer=tools.tracer, replayer=tools.replayer),
        call="cached(fn, limit=6, tracer, replayer) on fn(a, b) -> (y, z)",
    )
    expect(callable(call), f"cached(fn, limit) must return a function, not {call!r:.60}")
    n, m = rng.randint(2, 4), rng.randint(2, 4)
    signatures = [(n, m, F64), (n, m + 1, F64), (n, m, torch.float32)]
    outputs = {}
    for turn in ("first", "second"):
        for rows, cols, dtype in signatures:
            a, b = _randn(gen, rows), _randn(gen, cols, dtype=dtype)
            what = (
                f"call(a, b) with a of shape [{rows}], b of shape [{cols}] and {dtype}, {turn} time"
            )
            outputs[what] = plain(call_student(call, a, b, call=what))
    return {
        "outputs": outputs,
        "traces in call.cache": len(getattr(call, "cache", {})),
        "tracer calls": tools.traced,
        "replayer calls": tools.replayed,
        "eager runs of fn": len(tools.eager),
    }


# -------------------------------------------------------------------------------------------------
# Exercise 7: replay_speedup
# -------------------------------------------------------------------------------------------------
def _small_ops(x):
    for _ in range(60):
        x = (x * 1.01 + 0.1).tanh()
    return x.sum()


class _StepTools:
    """`fn`, a tracer and a replayer for exercise 7, which note when the answer calls them.

    An eager step runs from a call of `fn` to the answer's next call of `fn` or of the replayer
    (or to its return), provided its backward reached the input in between (a hook on the
    input): that is the step the answer timed, plus the answer's own bookkeeping between two
    calls, so a busy moment inflates the answer's time and the grader's alike. A call of `fn`
    whose backward never runs is not an eager step. The tracer is `minitorch.jit.trace` (run
    once, so that no replay is a recording), and the replayer runs its replay forward and
    backward (`autograd.grad`), timed inside."""

    def __init__(self, body: Callable, x: Any) -> None:
        self.body = body
        self.traced = self.replayed = 0
        self.events: list[tuple[str, float]] = []  # ("start" | "reached" | "next", time)
        self.graphs: list[bool] = []  # whether each eager call recorded a graph
        self.replay_times: list[float] = []
        self._quiet = False  # the tracer's and the replayer's own backward: not eager steps
        x.register_hook(self._reached)

    def _reached(self, grad: Any) -> None:
        if not self._quiet:
            self.events.append(("reached", time.perf_counter()))

    def fn(self, *inputs: Any) -> Any:
        self.events.append(("start", time.perf_counter()))
        out = self.body(*inputs)
        self.graphs.append(getattr(out, "grad_fn", None) is not None)
        return out

    def tracer(self, fn: Callable, *inputs: Any) -> Any:
        self.events.append(("next", time.perf_counter()))
        self.traced += 1
        jitted = minitorch.jit.trace(self.body)
        self._quiet = True
        try:
            jitted(*inputs)  # the first call records the trace
        finally:
            self._quiet = False
        return jitted

    def replayer(self, recorded: Any, inputs: Any, grad_output: Any) -> tuple:
        self.events.append(("next", time.perf_counter()))
        self.replayed += 1
        self._quiet = True
        try:
            start = time.perf_counter()
            out = recorded(*inputs)
            wanted = [t for t in inputs if t.requires_grad]
            grads = minitorch.autograd.grad(out, wanted, grad_output)
            self.replay_times.append(time.perf_counter() - start)
        finally:
            self._quiet = False
        return out, dict(enumerate(grads))

    def eager_steps(self) -> list[float]:
        """The time of each eager step (see the class): a call of fn whose backward ran, up to
        the next call the answer made (the answer's return is the last "next" event)."""
        steps, started, reached = [], None, False
        for what, when in self.events:
            if what == "reached":
                reached = started is not None
                continue
            if started is not None and reached:
                steps.append(when - started)
            started, reached = (when, False) if what == "start" else (None, False)
        return steps


@hidden_test("replay_speedup")
def replay_speedup(answer: Any) -> dict:
    """Exercise 7: the ratio returned, and the grader's own measurement of the same calls: the
    best eager step (forward and backward) over the best replay of the calls the answer made.
    Both are taken from the very calls the answer timed, so a busy machine slows both alike
    (benchmarks/load_timing_static_vs_dynamic.py grades the reference under load)."""
    check_callable(answer, "replay_speedup")
    x = minitorch.randn(10, dtype=F64, requires_grad=True)
    tools = _StepTools(_small_ops, x)
    run_answer = functools.partial(
        answer, tools.fn, x, tracer=tools.tracer, replayer=tools.replayer
    )
    got = call_student(run_answer, call="replay_speedup(fn, x, tracer, replayer)")
    tools.events.append(("next", time.perf_counter()))  # the answer returned
    expect(isinstance(got, float), f"return the ratio as a float, not {type(got).__name__}")
    steps = tools.eager_steps()
    measured = min(steps) / min(tools.replay_times) if steps and tools.replay_times else None
    return {
        "ratio returned": float(got),
        "eager step time / replay time, measured on its calls": measured,
        "tracer calls": tools.traced,
        "eager calls": len(tools.graphs),
        "eager calls that recorded no graph": tools.graphs.count(False),
        "eager calls whose backward ran": len(steps),
        "replayer calls": tools.replayed,
    }


# -------------------------------------------------------------------------------------------------
# Exercise 8: predict_tracing (partial credit, judged in judge.py)
# -------------------------------------------------------------------------------------------------
@hidden_test("predict_tracing")
def predict_tracing(answer: Any) -> dict:
    """Exercise 8: the student's prediction (a bool) for every snippet."""
    snippets = given("static_vs_dynamic")["SNIPPETS"]
    predictions = predictions_for(answer, "predict_tracing", snippets, "snippet")
    for key in snippets:
        guess = predictions[key]
        expect(isinstance(guess, bool), f"snippet {key!r}: predict True or False, not {guess!r}")
    return {key: predictions[key] for key in snippets}


# -------------------------------------------------------------------------------------------------
# Exercise 9: predict_deployment (partial credit, judged in judge.py)
# -------------------------------------------------------------------------------------------------
@hidden_test("predict_deployment")
def predict_deployment(answer: Any) -> dict:
    """Exercise 9: the set of routes the student predicts for every snippet (as a sorted list)."""
    shared = given("static_vs_dynamic")
    snippets, routes = shared["DEPLOY_SNIPPETS"], shared["ROUTES"]
    predictions = predictions_for(answer, "predict_deployment", snippets, "snippet")
    for key in snippets:
        guess = predictions[key]
        expect(
            isinstance(guess, (set, frozenset)),
            f"snippet {key!r}: predict a set of routes, not {type(guess).__name__}",
        )
        unknown = [r for r in guess if r not in routes]
        expect(not unknown, f"snippet {key!r}: the routes are {routes}, not {unknown!r:.60}")
    return {key: sorted(predictions[key]) for key in snippets}
