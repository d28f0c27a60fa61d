"""Graders of notebook 5, "static vs dynamic": the student's tracer, exercise by exercise.

Each grader runs the student's answer on fresh cases (small models, fan-out, several inputs,
parameters, recurrent cells, data-dependent branches) and compares it with eager minitorch,
whose ops PyTorch checks in the library's tests. Exercises that build on earlier ones get the
reference versions of those: the traces handed to exercises 2-5 are the reference's, and
exercises 6 and 7 are called with the reference tracer and replayer. A mistake costs only its
own exercise.

The traces handed to an answer are made by the reference `trace`, with the student's own
`Slot`, `Step`, `Guard` and `Trace` classes (the notebook's locked cell), so that the student's
`isinstance` checks see their own classes. Pass `seed=` to make the random cases reproducible.
"""

from __future__ import annotations

import inspect
import math
import random
import warnings
from collections.abc import Callable
from typing import Any

import torch

import minitorch
from minitorch import nn
from solutions.grading import (
    Failure,
    call_student,
    expect,
    grader,
    partial_credit,
    predictions_for,
    with_globals,
)
from solutions.static_vs_dynamic import reference

F64 = torch.float64
TRACE_TYPES = ("Slot", "Step", "Guard", "Trace", "READERS", "GuardFailed")
PREDICTION_POINTS = 2  # exercise 8's points: a test checks the notebook agrees


# -------------------------------------------------------------------------------------------------
# The cases: functions to trace, with inputs
# -------------------------------------------------------------------------------------------------
class Case:
    """A function to trace and a way to draw inputs for it (`make_inputs(gen)`)."""

    def __init__(self, name: str, fn: Callable, make_inputs: Callable, params: list) -> None:
        self.name, self.fn, self.make_inputs, self.params = name, fn, make_inputs, params


def _randn(gen: torch.Generator, *shape: int, requires_grad: bool = False) -> Any:
    values = torch.randn(*shape, generator=gen, dtype=F64)
    return minitorch.tensor(values.tolist(), dtype=F64, requires_grad=requires_grad)


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


def _reads(x: Any) -> tuple:
    """What `_branches` reads out of `x`: equal reads, equal branches."""
    return (bool((x * 2).sum() > 0), (x > 0).sum().item(), int((x.abs() > 3.0).sum()))


def _branch_inputs(gen: torch.Generator, sign: float, size: int = 4) -> Any:
    values = (torch.rand(size, generator=gen, dtype=F64) + 0.6) * sign
    return minitorch.tensor(values.tolist(), dtype=F64)


# -------------------------------------------------------------------------------------------------
# Helpers
# -------------------------------------------------------------------------------------------------
def _student_namespace(answer: Any, what: str) -> dict:
    expect(callable(answer), f"expected a function, got {type(answer).__name__}: pass {what}")
    expect(
        inspect.isfunction(answer),
        f"{what} must be a function defined with def in the notebook, not a "
        f"{type(answer).__name__}",
    )
    missing = [name for name in TRACE_TYPES if name not in answer.__globals__]
    expect(not missing, f"run the notebook's cells above {what} first: {missing} are undefined")
    return answer.__globals__


def _reference(name: str, namespace: dict) -> Callable:
    """The reference `name`, seeing the student's trace classes (and the reference tracer)."""
    types = {key: namespace[key] for key in TRACE_TYPES}
    tracer = with_globals(reference.trace, **types)
    replayer = with_globals(reference.replay, **types)
    if name == "trace":
        return tracer
    if name == "replay":
        return replayer
    return with_globals(getattr(reference, name), **types)


def _same(a: Any, b: Any, tol: float = 1e-10) -> bool:
    if not isinstance(a, minitorch.Tensor) or not isinstance(b, minitorch.Tensor):
        return False
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.allclose(a._data, b._data, rtol=tol, atol=tol, equal_nan=True)


def _as_tuple(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _eager(fn: Callable, inputs: list) -> tuple:
    with minitorch.no_grad():
        return _as_tuple(fn(*inputs))


# -------------------------------------------------------------------------------------------------
# Exercise 1: trace
# -------------------------------------------------------------------------------------------------
def _same_arg(got: Any, want: Any, slot_type: type) -> bool:
    if isinstance(want, slot_type):
        return isinstance(got, slot_type) and got.index == want.index
    if isinstance(want, (torch.Tensor, minitorch.Tensor)):
        return got is want or (type(got) is type(want) and bool((got == want).all()))
    return type(got) is type(want) and got == want


def _compare_traces(got: Any, want: Any, stable: set, ns: dict, where: str) -> None:
    """`stable`: the captured slots that hold the same tensor whenever the function runs."""
    expect(isinstance(got, ns["Trace"]), f"{where}: trace must return a Trace, not {got!r:.60}")
    expect(got.inputs == want.inputs, f"{where}: inputs {got.inputs}, expected {want.inputs}")
    expect(
        got.input_meta == want.input_meta,
        f"{where}: input_meta {got.input_meta}, expected {want.input_meta}",
    )
    expect(
        sorted(got.captured) == sorted(want.captured),
        f"{where}: captured slots {sorted(got.captured)}, expected {sorted(want.captured)} "
        "(a tensor the call did not make gets a slot when an op first uses it)",
    )
    for slot, tensor in want.captured.items():
        if slot in stable:  # a parameter or a global: the same tensor on every call
            expect(
                got.captured[slot] is tensor,
                f"{where}: captured[{slot}] must be the tensor itself (by reference), not a copy",
            )
        else:  # a constant the library made during the call, e.g. the 0 of `x > 0`
            expect(_same_arg(got.captured[slot], tensor, ns["Slot"]), f"{where}: captured[{slot}]")
    kinds = [type(s).__name__ for s in got.steps]
    want_kinds = [type(s).__name__ for s in want.steps]
    expect(
        kinds == want_kinds,
        f"{where}: {len(kinds)} steps {kinds[:8]}..., expected {len(want_kinds)} "
        f"{want_kinds[:8]}... (every op is a Step, every read a Guard, in the order they ran)",
    )
    for nr, (g, w) in enumerate(zip(got.steps, want.steps)):
        if isinstance(w, ns["Guard"]):
            expect(
                (g.slot, g.kind, g.value) == (w.slot, w.kind, w.value),
                f"{where}: step {nr} is Guard({g.slot}, {g.kind!r}, {g.value!r}), expected "
                f"Guard({w.slot}, {w.kind!r}, {w.value!r})",
            )
            continue
        name = w.function.__name__
        expect(g.function is w.function, f"{where}: step {nr} runs {g.function}, not {name}")
        expect(
            len(g.args) == len(w.args)
            and all(_same_arg(a, b, ns["Slot"]) for a, b in zip(g.args, w.args)),
            f"{where}: step {nr} ({name}) has args {g.args!r:.120}, expected {w.args!r:.120}",
        )
        expect(
            list(g.outputs) == list(w.outputs),
            f"{where}: step {nr} ({name}) outputs {g.outputs}, expected {w.outputs} (each "
            "new tensor gets the next slot)",
        )
    expect(got.outputs == want.outputs, f"{where}: outputs {got.outputs}, expected {want.outputs}")


@grader("trace")
def trace(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 1: the student's Trace equals the reference's, slot for slot."""
    ns = _student_namespace(answer, "trace")
    reference_trace = _reference("trace", ns)
    gen = torch.Generator().manual_seed(seed)
    cases = [(c.name, c.fn, c.make_inputs(gen)) for c in _cases(seed)]
    cases.append(("a function returning two tensors", _multi_output, [_randn(gen, 3)]))
    cases.append(("a function with branches", _branches, [_branch_inputs(gen, 1.0)]))
    for name, fn, inputs in cases:
        got = call_student(answer, fn, *inputs, call=f"trace(fn, ...) on {name}")
        want, again = reference_trace(fn, *inputs), reference_trace(fn, *inputs)
        stable = {s for s, t in want.captured.items() if again.captured.get(s) is t}
        _compare_traces(got, want, stable, ns, f"on {name}")


# -------------------------------------------------------------------------------------------------
# Exercise 2: replay
# -------------------------------------------------------------------------------------------------
def _check_outputs(got: Any, want: tuple, where: str, call: str) -> None:
    expect(isinstance(got, tuple), f"{where}: {call} must return a tuple, not {type(got).__name__}")
    expect(len(got) == len(want), f"{where}: {len(got)} outputs, expected {len(want)}")
    for nr, (g, w) in enumerate(zip(got, want)):
        expect(
            _same(g, w),
            f"{where}: output {nr} differs from eager ({g!r:.80} instead of {w!r:.80})",
        )


@grader("replay")
def replay(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 2: replays equal eager on new inputs, record no graph, and read the
    captured tensors when they run."""
    ns = _student_namespace(answer, "replay")
    reference_trace = _reference("trace", ns)
    gen = torch.Generator().manual_seed(seed)
    cases = _cases(seed, grads=True)
    cases.append(Case("two outputs", _multi_output, lambda g: [_randn(g, 3)], []))
    for case in cases:
        recorded = reference_trace(case.fn, *case.make_inputs(gen))
        fresh = case.make_inputs(gen)
        call = f"replay(trace, ...) on {case.name}"
        got = call_student(answer, recorded, *fresh, call=call)
        _check_outputs(got, _eager(case.fn, fresh), f"on {case.name}", "replay")
        expect(
            all(t.grad_fn is None for t in got),
            f"on {case.name}: the replay recorded a graph; run it under minitorch.no_grad()",
        )
        if case.params:
            with minitorch.no_grad():
                case.params[0].mul_(-1.5)  # an optimizer step between two calls
            got = call_student(answer, recorded, *fresh, call=call)
            _check_outputs(got, _eager(case.fn, fresh), f"on {case.name} after a step", "replay")
    branchy = reference_trace(_branches, _branch_inputs(gen, 1.0))
    same_branch = _branch_inputs(gen, 1.0)
    got = call_student(answer, branchy, same_branch, call="replay(trace, x) with Guard steps")
    _check_outputs(got, _eager(_branches, [same_branch]), "on a trace with guards", "replay")


# -------------------------------------------------------------------------------------------------
# Exercise 3: input_mismatch
# -------------------------------------------------------------------------------------------------
@grader("input_mismatch")
def input_mismatch(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 3 on matching inputs and on each kind of mismatch."""
    ns = _student_namespace(answer, "input_mismatch")
    reference_trace = _reference("trace", ns)
    rng = random.Random(seed)
    rows, cols = rng.randint(2, 4), rng.randint(5, 7)

    def f(a, b):
        return (a * 2 + b).sum()

    a, b = minitorch.zeros(rows, cols, dtype=F64), minitorch.zeros(cols, dtype=F64)
    recorded = reference_trace(f, a, b)
    same = [minitorch.ones(rows, cols, dtype=F64), minitorch.ones(cols, dtype=F64)]
    got = call_student(answer, recorded, *same, call="input_mismatch(trace, a, b)")
    expect(got is None, f"inputs of the traced shapes and dtypes must give None, not {got!r}")
    mismatches = [
        ("shape", "a transposed first input", [minitorch.zeros(cols, rows, dtype=F64), b]),
        ("shape", "a longer second input", [a, minitorch.zeros(cols + 1, dtype=F64)]),
        ("dtype", "a float32 second input", [a, minitorch.zeros(cols)]),
        ("dtype", "an int64 first input", [minitorch.zeros(rows, cols, dtype=torch.int64), b]),
        ("number", "one input instead of two", [a]),
        ("number", "three inputs instead of two", [a, b, b]),
    ]
    for word, name, inputs in mismatches:
        got = call_student(answer, recorded, *inputs, call=f"input_mismatch on {name}")
        expect(isinstance(got, str), f"{name} must give a message (a str), not {got!r}")
        expect(word in got, f"the message for {name} should say {word!r}: {got!r}")


# -------------------------------------------------------------------------------------------------
# Exercise 4: replay_guarded
# -------------------------------------------------------------------------------------------------
@grader("replay_guarded")
def replay_guarded(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 4: same reads -> eager's answer; another read -> GuardFailed."""
    ns = _student_namespace(answer, "replay_guarded")
    reference_trace = _reference("trace", ns)
    gen = torch.Generator().manual_seed(seed)
    for sign in (1.0, -1.0):
        example = _branch_inputs(gen, sign)
        recorded = reference_trace(_branches, example)
        same = _branch_inputs(gen, sign)
        if _reads(same) == _reads(example):
            got = call_student(answer, recorded, same, call="replay_guarded on the same branch")
            _check_outputs(got, _eager(_branches, [same]), "on the same branches", "replay")
        other = _branch_inputs(gen, -sign)
        try:
            answer(recorded, other)
        except Exception as error:  # the student's GuardFailed, or their bug
            expect(
                type(error).__name__ == "GuardFailed",
                f"another branch must raise GuardFailed, not {type(error).__name__}: {error}",
            )
        else:
            raise Failure("an input that takes another branch replayed silently: a guard failed")
    recorded = reference_trace(_scaled_by_sum, _branch_inputs(gen, 1.0))
    try:
        answer(recorded, _branch_inputs(gen, 1.0))
    except Exception as error:
        expect(
            type(error).__name__ == "GuardFailed",
            f"an item() read that changed must raise GuardFailed, not {error!r:.80}",
        )
    else:
        raise Failure("an item() read changed its value but the replay did not fail")
    for case in _cases(seed):
        recorded = reference_trace(case.fn, *case.make_inputs(gen))
        fresh = case.make_inputs(gen)
        got = call_student(answer, recorded, *fresh, call=f"replay_guarded on {case.name}")
        _check_outputs(got, _eager(case.fn, fresh), f"on {case.name}", "replay_guarded")


def _scaled_by_sum(x):
    return x * x.sum().item()


# -------------------------------------------------------------------------------------------------
# Exercise 5: replay_with_gradients
# -------------------------------------------------------------------------------------------------
@grader("replay_with_gradients")
def replay_with_gradients(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 5: the output and every gradient equal eager autograd's."""
    ns = _student_namespace(answer, "replay_with_gradients")
    reference_trace = _reference("trace", ns)
    gen = torch.Generator().manual_seed(seed)
    for case in _cases(seed, grads=True):
        inputs = case.make_inputs(gen)
        if case.name == "two inputs":
            inputs[1] = inputs[1].detach()  # one input that needs no gradient
        recorded = reference_trace(case.fn, *inputs)
        fresh = [t.detach().requires_grad_(t.requires_grad) for t in case.make_inputs(gen)]
        for t, used in zip(fresh, inputs):
            t.requires_grad_(used.requires_grad)
        seed_grad = minitorch.tensor(1.5, dtype=F64)
        call = f"replay_with_gradients(trace, inputs, grad_output) on {case.name}"
        got = call_student(answer, recorded, fresh, seed_grad, call=call)
        expect(
            isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], dict),
            f"on {case.name}: return (output, grads) with grads a dict, not {got!r:.80}",
        )
        output, grads = got
        for p in case.params:
            p.grad = None
        eager_out = case.fn(*fresh)
        eager_out.backward(seed_grad)
        expect(_same(output, eager_out.detach()), f"on {case.name}: the output differs from eager")
        expected = {}
        for slot, t in zip(recorded.inputs, fresh):
            if t.requires_grad:
                expected[slot] = t.grad
        for slot, t in recorded.captured.items():
            if t.requires_grad and t.grad is not None:
                expected[slot] = t.grad
        expect(
            sorted(grads) == sorted(expected),
            f"on {case.name}: gradients for slots {sorted(grads)}, expected {sorted(expected)} "
            "(every input and captured tensor that requires grad and gets a gradient)",
        )
        for slot, want in expected.items():
            expect(
                _same(grads[slot], want, 1e-9),
                f"on {case.name}: the gradient of slot {slot} differs from eager autograd's",
            )


# -------------------------------------------------------------------------------------------------
# Exercise 6: cached
# -------------------------------------------------------------------------------------------------
@grader("cached")
def cached(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 6: one trace per signature, replays, the limit and its warning."""
    ns = _student_namespace(answer, "cached")
    tools = {"tracer": _reference("trace", ns), "replayer": _reference("replay", ns)}
    rng = random.Random(seed)
    limit = rng.randint(2, 4)
    runs = []

    def fn(x):
        runs.append(tuple(x.shape))
        return (x * 2).tanh() + x.sum()

    call = call_student(
        lambda: answer(fn, limit, **tools), call=f"cached(fn, limit={limit}, tracer, replayer)"
    )
    expect(callable(call), f"cached(fn, limit) must return a function, not {call!r:.60}")
    cache = getattr(call, "cache", None)
    expect(isinstance(cache, dict), "the function cached returns needs a dict `call.cache`")
    signatures = [(n, dtype) for n in rng.sample(range(2, 9), limit) for dtype in (F64,)]
    signatures[-1] = (signatures[0][0], torch.float32)  # the same shape, another dtype
    for n, dtype in signatures + signatures:
        x = minitorch.randn(n, dtype=dtype)
        got = call_student(call, x, call=f"call(x) with x of shape [{n}] and {dtype}")
        expect(_same(got, fn(x)), f"call(x) on shape [{n}], {dtype}: not fn's answer")
        runs.pop()
    expect(
        len(cache) == limit,
        f"{limit} signatures (shape and dtype) should make {limit} traces, not {len(cache)}",
    )
    expect(
        len(runs) == limit,
        f"fn ran {len(runs)} times outside tracing checks for {limit} signatures called twice: "
        "trace once per signature, then replay",
    )
    runs.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (11, 12, 11):
            x = minitorch.randn(n, dtype=F64)
            got = call_student(call, x, call=f"call(x) beyond the limit, shape [{n}]")
            expect(_same(got, fn(x)), f"beyond the limit, call(x) must return fn(x) (shape [{n}])")
            runs.pop()
    expect(len(cache) == limit, f"the cache grew beyond the limit of {limit}: {len(cache)}")
    expect(len(runs) == 3, "beyond the limit, run fn eagerly on every call (without tracing)")
    warned = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    expect(
        len(warned) == 1,
        f"warn once (a RuntimeWarning) when the limit is first reached, not {len(warned)} times",
    )


# -------------------------------------------------------------------------------------------------
# Exercise 7: replay_speedup
# -------------------------------------------------------------------------------------------------
def _small_ops(x):
    for _ in range(60):
        x = (x * 1.01 + 0.1).tanh()
    return x


@grader("replay_speedup")
def replay_speedup(answer: Any) -> None:
    """Grade exercise 7: the student's ratio is a speed-up and agrees with the grader's own
    measurement (taken right after, with the reference replay) within a factor of 2."""
    ns = _student_namespace(answer, "replay_speedup")
    tools = {"tracer": _reference("trace", ns), "replayer": _reference("replay", ns)}
    x = minitorch.randn(10, dtype=F64, requires_grad=True)
    got = call_student(
        lambda: answer(_small_ops, x, **tools), call="replay_speedup(fn, x, tracer, replayer)"
    )
    expect(isinstance(got, float), f"return the ratio as a float, not {type(got).__name__}")
    measured = _reference("replay_speedup", ns)(_small_ops, x, **tools)
    expect(
        got > 1.2,
        f"your ratio is {got:.2f}, but the replay of 180 small ops is about {measured:.1f}x "
        "as fast as eager here: return eager time / replay time, and time only the replay",
    )
    expect(
        abs(math.log(got / measured)) < math.log(2.0),
        f"your ratio {got:.2f} is far from the grader's own measurement, {measured:.2f}: "
        "time eager calls with the graph recorded as usual, and use the best of each",
    )


# -------------------------------------------------------------------------------------------------
# Exercise 8: predict_tracing (partial credit)
# -------------------------------------------------------------------------------------------------
def traces_correctly(code: str) -> bool:
    """Whether torch.jit.trace of the snippet, on ones(3), gives f's answer on another input."""
    namespace: dict[str, Any] = {"torch": torch, "__name__": "snippet"}
    exec(code, namespace)
    f = namespace["f"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings: the point of the exercise
        traced = torch.jit.trace(f, torch.ones(3))
        other = -2 * torch.arange(1.0, 6.0)
        try:
            return bool(torch.equal(traced(other), f(other)))
        except Exception:
            return False


@grader("predict_tracing")
def predict_tracing(answer: Any) -> float:
    """Grade exercise 8 by tracing every snippet; returns the points: a tenth per right one."""
    predictions = predictions_for(answer, "predict_tracing", reference.SNIPPETS, "snippet")
    wrong = []
    for key, code in reference.SNIPPETS.items():
        guess = predictions[key]
        expect(isinstance(guess, bool), f"snippet {key!r}: predict True or False, not {guess!r}")
        if guess != traces_correctly(code):
            wrong.append(repr(key))
    hint = "Trace those snippets yourself and compare."
    return partial_credit(wrong, len(reference.SNIPPETS), PREDICTION_POINTS, hint)
