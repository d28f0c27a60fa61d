# ---
# jupyter:
#   jupytext:
#     formats: py:percent,../source/static_vs_dynamic//ipynb
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Notebook 5: static and dynamic graphs, and what tracing wins back
#
# PyTorch builds the graph **while** your forward pass runs (define-by-run). The first
# deep-learning frameworks did the opposite: you declared the whole graph first, then ran
# it many times (define-then-run, TensorFlow 1.x). Define-by-run lets you use Python's
# `if`, `for` and `print` freely, and every graph in notebooks 1-4 relied on that. Its
# price is that Python does the bookkeeping of every op, on every call.
#
# After this notebook you will be able to:
#
# - say what a static graph is and what define-by-run costs per op, measured;
# - debug a dynamic graph with `print` and anomaly mode;
# - explain why `torch.jit.trace` can silently give wrong answers, and how `torch.compile`
#   avoids that with **guards** and **graph breaks**;
# - build a tracer yourself: record one call as a flat program, replay it, guard it, derive
#   its backward, cache it, and measure what it saves;
# - tell when a dynamic graph is the wrong tool.
#
# There are **8 graded exercises (25 points)**. Each has visible tests you can run (plain
# asserts that say what went wrong); more tests run when your notebook is graded. Write
# your answers where it says `# YOUR CODE HERE` and delete the `raise NotImplementedError()`.
# "Run All" runs every cell: a test or demo whose exercise is not written yet says so in one
# line and lets the cells after it run.

# %%
import time
import warnings
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import torch

import minitorch
from minitorch import nn
from minitorch.autograd.record import record_call, run
from minitorch.autograd.watch import forward_with_ctx, watch_ops
from minitorch.notebook import exercise
from minitorch.viz import compare

# One seed for both libraries: minitorch draws its random numbers from torch's generator,
# which manual_seed returns (kept in `_` so that Jupyter does not print it).
_ = minitorch.manual_seed(0)

# %% [markdown]
# ## 1. Define-then-run and define-by-run
#
# A **static graph** is a program written down before any number flows through it: a list
# of ops over named values, which a runtime can inspect, optimise and run as often as it
# likes. A **dynamic graph** is what notebooks 1-4 studied: the record of one run of Python
# code, rebuilt on every call.
#
# The two meet in a **trace**: run the Python code once and write down the ops it ran, as a
# static program. minitorch can do that for any function (`record_call`); here is the
# program of one small layer:

# %%
# NBVAL_CHECK_OUTPUT
layer = nn.Linear(3, 2).double()


def small_model(x):
    return layer(x).tanh().sum(dim=1)


x = minitorch.randn(4, 3, dtype=torch.float64)
program, _ = record_call(small_model, x)
print(program)

# %% [markdown]
# Slot `%0` is the input, `%1` and `%2` are the layer's parameters, **captured by reference**
# (the program reads them when it runs, so it sees every optimizer step), and each later line
# is one op. Running the program on another input needs no Python code of `small_model`:

# %%
# NBVAL_CHECK_OUTPUT
other = minitorch.randn(4, 3, dtype=torch.float64)
(replayed,) = run(program, other)
print("replay equals eager:", minitorch.allclose(replayed, small_model(other)))

# %% [markdown]
# ## 2. What define-by-run costs
#
# Every op of a dynamic graph goes through Python: check the arguments, pick a kernel, make
# a result tensor, and, because some input requires grad, make a node, link it to its
# inputs' nodes and save what backward needs. Backward walks the nodes again, one Python call
# each. On a large tensor the arithmetic dwarfs this; on a small one the bookkeeping **is**
# the cost. Measured on a chain of 200 multiply-adds, forward and backward:


# %%
def chain(lib, x, n):
    y = x
    for _ in range(n):
        y = y * 1.01 + 0.1
    return y.sum()


def microseconds_per_op(lib, size, n=200, repeat=3):
    """Best time of forward + backward of the chain, per recorded op (2 per step)."""
    best = float("inf")
    for _ in range(repeat):
        x = lib.ones(size, requires_grad=True)
        start = time.perf_counter()
        chain(lib, x, n).backward()
        best = min(best, time.perf_counter() - start)
    return best / (2 * n) * 1e6


sizes = [10, 100, 1_000, 10_000, 100_000]
cost = {lib.__name__: [microseconds_per_op(lib, s) for s in sizes] for lib in (torch, minitorch)}
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, values in cost.items():
    ax.loglog(sizes, values, "o-", label=name)
ax.set_xlabel("elements per tensor")
ax.set_ylabel("microseconds per op (fwd + bwd)")
ax.set_title("Per-op cost of a dynamic graph (measured)")
ax.legend()
plt.show()
for name, values in cost.items():
    print(f"{name:>9}: {values[0]:5.1f} us per op on 10 elements, {values[-1]:5.1f} on 100,000")

# %% [markdown]
# The flat part of each curve is the **per-op overhead**: microseconds that do not depend on
# the data. PyTorch pays it in C++, minitorch in Python, so minitorch's is about twice as
# high. A model of many small ops (an RNN cell, a tree model, a small MLP at batch size 1)
# lives on that flat part. A static program pays the bookkeeping once, when it is built; each
# run is only the kernels.
#
# ## 3. What define-by-run gives: ordinary Python debugging
#
# Because the forward pass *is* Python, you can `print` any intermediate value, set a
# breakpoint, or branch on data. When a NaN appears in backward, anomaly mode records where
# each node was created and names the forward line that produced it:


# %%
# NBVAL_CHECK_OUTPUT
def root_loss(lib, x):
    y = x.sqrt() * 0  # at x = 0 the local derivative of sqrt is infinite, and inf * 0 = nan
    return y.sum()


def anomaly_demo(lib):
    point = lib.tensor([0.0, 1.0], requires_grad=True)
    root_loss(lib, point).backward()
    print("without anomaly mode:")
    print("  point.grad =", point.grad.tolist())
    point.grad = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with lib.autograd.detect_anomaly():
                root_loss(lib, point).backward()
        except RuntimeError as error:
            print("with anomaly mode:")
            print(" ", str(error).split(" values")[0])  # "Function '...' returned nan"
    (stack,) = [str(w.message) for w in caught if "Traceback of forward call" in str(w.message)]
    lines = stack.splitlines()
    here = next(i for i, line in enumerate(lines) if line.strip().endswith("in root_loss"))
    print("the forward line it names:")
    print(" ", lines[here + 1].split("#")[0].strip())


compare(anomaly_demo, (torch, minitorch))

# %% [markdown]
# A static graph built ahead of time has no Python line to point at: the op that made the
# NaN was declared somewhere else, long before it ran.
#
# ## 4. Tracing bakes in what it saw: `torch.jit.trace`
#
# `torch.jit.trace` records one call, as `record_call` did, and replays it from then on. A
# Python `if` on a tensor ran once, with the example input; the trace keeps the branch it
# took **for every later input**. PyTorch only warns:


# %%
# NBVAL_CHECK_OUTPUT
def clipped(x):
    if x.sum() > 0:  # a data-dependent branch
        return x * 2
    return x - 1


with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    traced = torch.jit.trace(clipped, torch.ones(3))
print("warning:", next(str(w.message) for w in caught if "boolean" in str(w.message))[:110])
negative = torch.full((3,), -3.0)
print("eager :", clipped(negative))
print("traced:", traced(negative), "<- the positive branch, silently")

# %% [markdown]
# ## 5. Guards and graph breaks: how `torch.compile` stays correct
#
# `torch.compile` also traces, but it keeps a list of **guards**: the conditions under which
# the trace is valid (input shapes, dtypes, the values of Python branches ...). Before it
# replays, it checks them; if one fails, it traces again. Where it cannot trace (here, an
# `if` on a tensor's value), it makes a **graph break**: it traces the parts before and after
# and lets Python run the branch. `torch._dynamo.explain` reports what it did:

# %%
# NBVAL_CHECK_OUTPUT
explanation = torch._dynamo.explain(clipped)(torch.ones(3))
print("graphs:", explanation.graph_count, " graph breaks:", explanation.graph_break_count)
for reason in explanation.break_reasons:
    print("break:", reason.reason, "at line", reason.user_stack[-1].lineno)
compiled = torch.compile(clipped, backend="eager")  # trace and guard, without code generation
print("compiled:", compiled(negative), "(correct: the branch runs in Python)")

# %% [markdown]
# ## 6. Build a tracer
#
# In the exercises you build the core of `minitorch.jit` yourself, step by step: record one
# call as a flat program, replay it, guard it, derive its backward program, cache it and
# measure it. Two doors into minitorch make this possible:
#
# - `watch_ops(on_op, on_read)`: while the block runs, each op calls
#   `on_op(function, args, outputs)` right after it ran (`function` is the op's `Function`
#   class, such as `Mul`; `args` the arguments `Function.apply` got; `outputs` a tuple), and
#   each Python read of a tensor's value (`bool(t)`, `t.item()`, `float(t)`, `int(t)`) calls
#   `on_read(tensor, kind, value)`. PyTorch's tracers use the same kind of hook
#   (`TorchFunctionMode`, `TorchDispatchMode`).
# - `forward_with_ctx(function, args, needs_input_grad)`: run one op's `forward` on a fresh
#   `ctx`, return `(outputs, ctx)`; `function.backward(ctx, *grads)` then gives the gradients
#   of its arguments. It is `Function.apply` without the graph node.
#
# Here is what `watch_ops` reports for the small model:


# %%
# NBVAL_CHECK_OUTPUT
def show_op(function, args, outputs):
    kinds = [f"tensor{list(a.shape)}" if isinstance(a, minitorch.Tensor) else repr(a) for a in args]
    print(f"{function.__name__}({', '.join(kinds)}) -> {len(outputs)} output(s)")


def show_read(tensor, kind, value):
    print(f"{kind}(tensor{list(tensor.shape)}) read {value!r}")


def branchy(x):
    y = small_model(x)
    if y.sum() > 0:
        return y * 2
    return y


with watch_ops(show_op, show_read):
    branchy(x)

# %% [markdown] nbgrader={"grade_id": "ex1_trace_statement", "locked": true}
# ### Exercise 1 (4 points): record one call as a trace
#
# Write `trace(fn, *inputs)`: call `fn(*inputs)` once under `watch_ops` and return a
# `Trace` (defined in the cell below) of what it did. Every tensor gets a **slot number**
# the first time the trace meets it, counting from 0:
#
# 1. the inputs get slots `0, 1, ...` in order, before anything runs;
# 2. a tensor argument of an op that is not in a slot yet was made outside the call (a
#    parameter, a global): it gets the next slot, and `trace.captured[slot]` holds the tensor
#    itself (by reference, so a later optimizer step is seen);
# 3. each tensor an op returns gets the next slot.
#
# Each op becomes a `Step(function, args, outputs)`: in `args`, a tensor argument is
# `Slot(i)` and anything else is kept as it is; `outputs` has the slot of each returned
# tensor (`None` for an output that is not a tensor). Each read becomes a
# `Guard(slot, kind, value)`, in `trace.steps` at the point where it happened.
# `trace.outputs` are the slots of the tensors `fn` returned (a tensor or a tuple of
# tensors), and `trace.input_meta` the `(shape, dtype)` of each input.
#
# Example: for `lambda x: (x * 2).sin()` on one input, `trace.steps` is
# `[Step(Mul, [Slot(0), 2], [1]), Step(Sin, [Slot(1)], [2])]` and `trace.outputs == [2]`.
#
# *Hint:* a dict from `id(tensor)` to slot number; keep the tensors themselves alive in a
# list meanwhile, so that no `id` is reused. The functions traced in this notebook pass
# tensors to ops only as direct arguments, never inside lists.


# %% nbgrader={"grade_id": "ex1_trace_types", "locked": true}
@dataclass(frozen=True)
class Slot:
    """An op argument that is the tensor in slot `index` of the trace."""

    index: int


@dataclass
class Step:
    """One op of a trace: `outputs = function.apply(*args)`, with Slot(i) for tensors."""

    function: type
    args: list
    outputs: list


@dataclass
class Guard:
    """A Python read during the trace: `READERS[kind](tensor in slot) == value`."""

    slot: int
    kind: str
    value: object


@dataclass
class Trace:
    """One recorded call of a function (exercise 1)."""

    inputs: list = field(default_factory=list)  # slots of the inputs, in order
    outputs: list = field(default_factory=list)  # slots of the returned tensors
    captured: dict = field(default_factory=dict)  # slot -> tensor made outside the call
    steps: list = field(default_factory=list)  # Steps and Guards, in the order they happened
    input_meta: list = field(default_factory=list)  # (shape, dtype) of each input


# How to read a value again out of a tensor, for each kind of read that `watch_ops` reports.
READERS = {"bool": bool, "item": lambda t: t.item(), "float": float, "int": int}


class GuardFailed(Exception):
    """A replay met a read whose value differs from the traced one (exercise 4)."""


# %% nbgrader={"grade_id": "ex1_trace", "solution": true}
def trace(fn, *inputs):
    """Call fn(*inputs) once and return its Trace (slots numbered as the statement says)."""
    ### BEGIN SOLUTION
    result = Trace()
    slots = {}  # id(tensor) -> slot
    alive = []  # every tensor given a slot, so that no id is reused while tracing

    def slot_of(t):
        if id(t) not in slots:
            slots[id(t)] = len(alive)
            alive.append(t)
        return slots[id(t)]

    for t in inputs:
        result.inputs.append(slot_of(t))
        result.input_meta.append((t.shape, t.dtype))

    def on_op(function, args, outputs):
        described = []
        for a in args:
            if isinstance(a, minitorch.Tensor):
                if id(a) not in slots:
                    result.captured[slot_of(a)] = a
                described.append(Slot(slot_of(a)))
            else:
                described.append(a)
        outs = [slot_of(o) if isinstance(o, minitorch.Tensor) else None for o in outputs]
        result.steps.append(Step(function, described, outs))

    def on_read(tensor, kind, value):
        result.steps.append(Guard(slot_of(tensor), kind, value))

    with watch_ops(on_op, on_read):
        out = fn(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    result.outputs = [slots[id(o)] for o in outs]
    return result
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex1_trace_tests", "grade": true, "points": 4}
with exercise(1):
    t = trace(lambda x: (x * 2).sin(), minitorch.ones(3))
    assert t.inputs == [0] and t.outputs == [2], f"inputs {t.inputs}, outputs {t.outputs}"
    assert [s.function.__name__ for s in t.steps] == ["Mul", "Sin"], f"steps: {t.steps}"
    assert t.steps[0].args == [Slot(0), 2], f"Mul's args should be [Slot(0), 2]: {t.steps[0].args}"
    assert t.steps[1].args == [Slot(1)] and t.steps[1].outputs == [2], f"Sin step: {t.steps[1]}"
    t = trace(small_model, x)
    assert sorted(t.captured) == [1, 2], f"the layer's weight and bias are slots 1, 2: {t.captured}"
    assert t.captured[1] is layer.weight, "captured tensors are kept by reference, not copied"
    t = trace(branchy, x)
    guards = [s for s in t.steps if isinstance(s, Guard)]
    assert len(guards) == 1 and guards[0].kind == "bool", f"one bool read expected: {guards}"
    assert t.input_meta == [(x.shape, x.dtype)], f"input_meta: {t.input_meta}"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.static_vs_dynamic import grade

grade.trace(trace)
### END HIDDEN TESTS

# %% [markdown]
# The visible tests of exercises 2 to 5 use traces written by hand, so that they test each
# exercise on its own (a mistake in your `trace` does not fail them). They use minitorch's
# op classes directly: `Mul.apply(a, b)` is what `a * b` runs.

# %% nbgrader={"grade_id": "ex2_example_traces", "locked": true}
from minitorch.ops.elementwise import Add, Mul, Sin, Tanh  # noqa: E402

F64 = torch.float64
x3 = minitorch.tensor([0.5, -1.0, 2.0], dtype=F64)
w3 = minitorch.tensor([1.5, 0.5, -2.0], dtype=F64, requires_grad=True)

# f(x) = (x * 2).sin()
mul_sin = Trace(
    inputs=[0],
    outputs=[2],
    steps=[Step(Mul, [Slot(0), 2], [1]), Step(Sin, [Slot(1)], [2])],
    input_meta=[(x3.shape, F64)],
)
# g(x) = (x * w3).tanh(), with w3 a parameter: captured by reference
with_parameter = Trace(
    inputs=[0],
    outputs=[3],
    captured={1: w3},
    steps=[Step(Mul, [Slot(0), Slot(1)], [2]), Step(Tanh, [Slot(2)], [3])],
    input_meta=[(x3.shape, F64)],
)
# h(x) = x * x + x.sin(): x is used three times (fan-out)
fan_out_trace = Trace(
    inputs=[0],
    outputs=[3],
    steps=[
        Step(Mul, [Slot(0), Slot(0)], [1]),
        Step(Sin, [Slot(0)], [2]),
        Step(Add, [Slot(1), Slot(2)], [3]),
    ],
    input_meta=[(x3.shape, F64)],
)
# k(x) = x * x.item() for a one-element x: Python read the value, so the trace holds only
# for inputs with the same value
scaled_by_item = Trace(
    inputs=[0],
    outputs=[1],
    steps=[Guard(0, "item", 2.0), Step(Mul, [Slot(0), 2.0], [1])],
    input_meta=[(torch.Size([1]), F64)],
)

# %% [markdown] nbgrader={"grade_id": "ex2_replay_statement", "locked": true}
# ### Exercise 2 (3 points): replay a trace
#
# Write `replay(trace, *inputs)`: run the trace's steps on new inputs of the same shapes
# and return the tensors in `trace.outputs`, as a tuple. Start from the inputs (in the
# slots `trace.inputs`) and the captured tensors; for each `Step`, call
# `step.function.apply(*args)` with every `Slot(i)` replaced by the tensor in slot `i`,
# and store what it returns in `step.outputs` (skip `None`). Skip the `Guard`s here
# (exercise 4 checks them). Run under `minitorch.no_grad()`: a replay records no graph,
# which is where its speed comes from. Leave the trace as it is (keep the values of one
# replay in a dict of its own): a trace is replayed many times.
#
# Example: `replay(trace(f, x), other)` equals `f(other)` for every `f` without branches.


# %% nbgrader={"grade_id": "ex2_replay", "solution": true}
def replay(trace, *inputs):
    """The trace's outputs for new inputs, computed op by op without a graph (a tuple)."""
    ### BEGIN SOLUTION
    values = dict(trace.captured)
    values.update(zip(trace.inputs, inputs))
    with minitorch.no_grad():
        for step in trace.steps:
            if isinstance(step, Guard):
                continue
            args = [values[a.index] if isinstance(a, Slot) else a for a in step.args]
            outs = step.function.apply(*args)
            outs = outs if isinstance(outs, tuple) else (outs,)
            for slot, out in zip(step.outputs, outs):
                if slot is not None:
                    values[slot] = out
    return tuple(values[slot] for slot in trace.outputs)
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex2_replay_tests", "grade": true, "points": 3}
with exercise(2):
    (out,) = replay(mul_sin, x3)
    assert isinstance(out, minitorch.Tensor), f"expected a tuple of tensors, got {type(out)}"
    want = (x3 * 2).sin()
    assert minitorch.allclose(out, want), f"mul_sin replayed {out}, eager {want}"
    (out,) = replay(with_parameter, x3)
    assert minitorch.allclose(out, (x3 * w3).tanh()), "with_parameter: replay differs from eager"
    assert out.grad_fn is None, "a replay records no graph: run it under minitorch.no_grad()"
    with minitorch.no_grad():
        w3.mul_(2)  # an optimizer step, say
    (changed,) = replay(with_parameter, x3)
    with minitorch.no_grad():
        w3.div_(2)
    want = (x3 * w3 * 2).tanh()
    assert minitorch.allclose(changed, want), "the replay must read w3 as it is now"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.static_vs_dynamic import grade

grade.replay(replay)
### END HIDDEN TESTS


# %% [markdown] nbgrader={"grade_id": "ex3_input_mismatch_statement", "locked": true}
# ### Exercise 3 (3 points): guards on the inputs
#
# A trace holds only for inputs like the ones it was recorded with: the ops of a
# `[4, 3]` input may not even apply to a `[5, 2]` one, and a float32 replay of a float64
# trace gives other numbers. Write `input_mismatch(trace, *inputs)`: `None` when the
# inputs match the trace (same number, and each has the shape and dtype in
# `trace.input_meta`), else a short message that names the first input that differs and
# what differs, with the word `shape`, `dtype` or `number`.
#
# Example: `input_mismatch(trace(f, x), minitorch.ones(5, 3))` could return
# `"input 0: shape [5, 3], but the trace was recorded with shape [4, 3]"`.


# %% nbgrader={"grade_id": "ex3_input_mismatch", "solution": true}
def input_mismatch(trace, *inputs):
    """None if the inputs match the trace's input_meta, else a message naming the mismatch."""
    ### BEGIN SOLUTION
    if len(inputs) != len(trace.input_meta):
        return f"the trace takes {len(trace.input_meta)} inputs, not this number: {len(inputs)}"
    for i, (t, (shape, dtype)) in enumerate(zip(inputs, trace.input_meta)):
        if t.shape != shape:
            return f"input {i}: shape {list(t.shape)}, but the trace has shape {list(shape)}"
        if t.dtype != dtype:
            return f"input {i}: dtype {t.dtype}, but the trace has dtype {dtype}"
    return None
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex3_input_mismatch_tests", "grade": true, "points": 3}
with exercise(3):
    assert input_mismatch(mul_sin, x3 * 5) is None, "same shape and dtype: no mismatch"
    message = input_mismatch(mul_sin, minitorch.ones(4, dtype=F64))
    assert message is not None and "shape" in message, f"a [4] input must fail: {message!r}"
    message = input_mismatch(mul_sin, minitorch.ones(3))
    assert message is not None and "dtype" in message, f"a float32 input must fail: {message!r}"
    message = input_mismatch(mul_sin, x3, x3)
    assert message is not None and "number" in message, f"two inputs must fail: {message!r}"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.static_vs_dynamic import grade

grade.input_mismatch(input_mismatch)
### END HIDDEN TESTS


# %% [markdown] nbgrader={"grade_id": "ex4_replay_guarded_statement", "locked": true}
# ### Exercise 4 (3 points): guard the branches
#
# A `Guard` in a trace is a Python decision that depended on a tensor's value: the code
# after it may do something else for another input, so the trace only holds for inputs
# that read the same value. This is exactly what `torch.jit.trace` forgets and what
# `torch.compile` checks. Write `replay_guarded(trace, *inputs)`: replay as in exercise
# 2, and at each `Guard` read the value again, `READERS[guard.kind](tensor in guard.slot)`;
# if it differs from `guard.value` (compare exactly: a value that is only close may take
# another path), raise `GuardFailed` (defined with `Trace`) at once, with a message that
# says which read changed (e.g. `"bool read True when traced, False now"`): the ops after a
# failed guard belong to a branch this input does not take. Otherwise return the outputs
# as `replay` does.
#
# *Hint:* the replay loop of exercise 2 with one more case; a guard's slot always holds a
# value computed before the guard.


# %% nbgrader={"grade_id": "ex4_replay_guarded", "solution": true}
def replay_guarded(trace, *inputs):
    """Like replay, but raise GuardFailed when a Guard reads another value than traced."""
    ### BEGIN SOLUTION
    values = dict(trace.captured)
    values.update(zip(trace.inputs, inputs))
    with minitorch.no_grad():
        for step in trace.steps:
            if isinstance(step, Guard):
                now = READERS[step.kind](values[step.slot])
                if now != step.value:
                    raise GuardFailed(f"{step.kind} read {step.value!r} when traced, {now!r} now")
                continue
            args = [values[a.index] if isinstance(a, Slot) else a for a in step.args]
            outs = step.function.apply(*args)
            outs = outs if isinstance(outs, tuple) else (outs,)
            for slot, out in zip(step.outputs, outs):
                if slot is not None:
                    values[slot] = out
    return tuple(values[slot] for slot in trace.outputs)
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex4_replay_guarded_tests", "grade": true, "points": 3}
with exercise(4):
    two = minitorch.tensor([2.0], dtype=F64)
    (same,) = replay_guarded(scaled_by_item, two)
    assert minitorch.allclose(same, two * 2.0), "the same value read: the replay must match"
    try:
        replay_guarded(scaled_by_item, minitorch.tensor([3.0], dtype=F64))
        raise AssertionError("item() read 3.0 instead of 2.0, yet the replay went on silently")
    except GuardFailed as failure:
        print("guard failed as it should:", failure)
    (out,) = replay_guarded(mul_sin, x3)
    assert minitorch.allclose(out, (x3 * 2).sin()), "a trace without guards replays as before"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.static_vs_dynamic import grade

grade.replay_guarded(replay_guarded)
### END HIDDEN TESTS


# %% [markdown] nbgrader={"grade_id": "ex5_replay_with_gradients_statement", "locked": true}
# ### Exercise 5 (4 points): the backward program of a trace
#
# A static program can be differentiated once, ahead of time: the backward program is
# the forward steps in reverse, each calling its op's `backward`. Write
# `replay_with_gradients(trace, inputs, grad_output)` for a trace with one output: replay
# the forward steps with `forward_with_ctx`, keeping each step's ctx, then walk the steps
# in reverse and call `step.function.backward(ctx, grad)` to pass gradients back. Return
# `(output, grads)`, where `grads` maps slot -> gradient for every input and captured
# tensor that requires grad and receives a gradient. They must equal eager autograd's
# (`output.backward(grad_output)` on the same inputs).
#
# - An argument needs a gradient if it is a tensor that requires grad, or was computed from
#   one (an output of a step with such an argument, if it is a floating-point tensor).
#   Pass those flags to `forward_with_ctx` as `needs_input_grad`.
# - `backward` returns one gradient per argument (a single tensor when there is one
#   argument), `None` where none is needed. A slot used twice receives the **sum** of its
#   gradients (fan-out).
# - Run steps whose outputs received no gradient? No: skip them. Skip `Guard`s too.
# - Each step's `backward` runs once: a trace can be long (the hidden tests replay one of
#   1,600 ops) and full of diamonds, where following every path separately takes
#   exponential time. Do not call `backward()` or `autograd.grad`: this is the backward
#   program itself. Leave `grad_output` and the inputs as they are (a `backward` may
#   return the very tensor it received, so sum gradients with `a + b`, not `+=`).


# %% nbgrader={"grade_id": "ex5_replay_with_gradients", "solution": true}
def replay_with_gradients(trace, inputs, grad_output):
    """(output, {slot: gradient}) for the inputs and captured tensors that require grad."""
    ### BEGIN SOLUTION
    values = dict(trace.captured)
    values.update(zip(trace.inputs, inputs))
    needs_grad = {slot: t.requires_grad for slot, t in values.items()}
    done = []  # (step, ctx, flags) of every op, in forward order
    for step in trace.steps:
        if isinstance(step, Guard):
            continue
        args = [values[a.index] if isinstance(a, Slot) else a for a in step.args]
        flags = [isinstance(a, Slot) and needs_grad[a.index] for a in step.args]
        outs, ctx = forward_with_ctx(step.function, args, flags)
        for slot, out in zip(step.outputs, outs):
            if slot is not None:
                values[slot] = out
                needs_grad[slot] = any(flags) and out.dtype.is_floating_point
        done.append((step, ctx, flags))
    (out_slot,) = trace.outputs
    grads = {out_slot: grad_output}
    for step, ctx, flags in reversed(done):
        out_grads = [None if s is None else grads.pop(s, None) for s in step.outputs]
        if not any(flags) or all(g is None for g in out_grads):
            continue
        results = step.function.backward(ctx, *out_grads)
        results = results if isinstance(results, tuple) else (results,)
        for arg, flag, grad in zip(step.args, flags, results):
            if flag and grad is not None:
                slot = arg.index
                grads[slot] = grad if slot not in grads else grads[slot] + grad
    wanted = set(trace.inputs) | set(trace.captured)
    result = {s: g for s, g in grads.items() if s in wanted and values[s].requires_grad}
    return values[out_slot], result
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex5_replay_with_gradients_tests", "grade": true, "points": 4}
with exercise(5):
    x_grad = x3.detach().requires_grad_()
    ones = minitorch.ones(3, dtype=F64)
    output, grads = replay_with_gradients(fan_out_trace, [x_grad], ones)
    (x_grad * x_grad + x_grad.sin()).backward(ones)
    assert minitorch.allclose(output, x3 * x3 + x3.sin()), "the output differs from eager"
    assert set(grads) == {0}, f"one input requires grad, so one gradient: slots {set(grads)}"
    assert minitorch.allclose(grads[0], x_grad.grad), f"got {grads[0]}, eager gives {x_grad.grad}"
    output, grads = replay_with_gradients(with_parameter, [x3], ones)
    w3.grad = None
    (x3 * w3).tanh().backward(ones)
    assert set(grads) == {1}, f"only the captured w3 (slot 1) requires grad: slots {set(grads)}"
    assert minitorch.allclose(grads[1], w3.grad), "the gradient of w3 differs from eager"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.static_vs_dynamic import grade

grade.replay_with_gradients(replay_with_gradients)
### END HIDDEN TESTS


# %% [markdown] nbgrader={"grade_id": "ex6_cached_statement", "locked": true}
# ### Exercise 6 (3 points): a cache of traces with a limit
#
# Write `cached(fn, limit=3, tracer=None, replayer=None)`, returning a function
# `call(*inputs)` that keeps one trace of `fn` per **input signature**, the tuple
# `(tuple(shape), dtype)` of each input, in a dict `call.cache` (signature -> trace). A call
# with a new signature traces `fn` with `tracer(fn, *inputs)` and stores the trace; every
# call replays the trace of its signature with `replayer(trace, *inputs)` and returns its
# output (the tensor itself for one output, else the tuple). `tracer` and `replayer`
# default to your `trace` and `replay` (the tests pass their own, so a mistake in exercise 1
# or 2 does not cost this one). Once the cache holds `limit` traces, a call with yet another
# signature runs `fn` **eagerly**, without tracing, and the first time this happens it warns
# with `warnings.warn("...", RuntimeWarning)`, saying that the limit was reached.
# `torch.compile` does the same (its `recompile_limit` is 8).


# %% nbgrader={"grade_id": "ex6_cached", "solution": true}
def cached(fn, limit=3, tracer=None, replayer=None):
    """call(*inputs): replays fn's trace for the inputs' signature (at most `limit` traces)."""
    ### BEGIN SOLUTION
    tracer = tracer or trace
    replayer = replayer or replay
    cache = {}
    warned = False

    def call(*inputs):
        nonlocal warned
        signature = tuple((tuple(t.shape), t.dtype) for t in inputs)
        if signature not in cache:
            if len(cache) >= limit:
                if not warned:
                    message = f"cached: {limit} traces reached, running eagerly"
                    warnings.warn(message, RuntimeWarning, stacklevel=2)
                    warned = True
                return fn(*inputs)
            cache[signature] = tracer(fn, *inputs)
        outputs = replayer(cache[signature], *inputs)
        return outputs[0] if len(outputs) == 1 else outputs

    call.cache = cache
    return call
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex6_cached_tests", "grade": true, "points": 3}
traced, replayed = [], []


def fake_trace(fn, *inputs):  # stands in for a tracer: remembers what it was asked
    traced.append(inputs[0].shape)
    return fn


def fake_replay(recorded, *inputs):  # "replays" by calling the function it got
    replayed.append(inputs[0].shape)
    return (recorded(*inputs),)


def double_tanh(x):
    return (x * 2).tanh()


with exercise(6):
    fast = cached(double_tanh, limit=2, tracer=fake_trace, replayer=fake_replay)
    for n in (2, 2, 3, 3, 2):
        out = fast(minitorch.ones(n))
        assert minitorch.allclose(out, double_tanh(minitorch.ones(n))), f"wrong output for n={n}"
    assert len(traced) == 2, f"two signatures: trace twice, not {len(traced)} times"
    assert len(replayed) == 5, f"every call replays: 5 replays expected, got {len(replayed)}"
    assert len(fast.cache) == 2, f"two signatures, two traces in call.cache: {len(fast.cache)}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fast(minitorch.ones(4))
        fast(minitorch.ones(5))
    assert len(fast.cache) == 2 and len(traced) == 2, "the limit is 2 traces"
    assert len(caught) == 1, f"warn once when the limit is first reached: {len(caught)} warnings"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.static_vs_dynamic import grade

grade.cached(cached)
### END HIDDEN TESTS


# %% [markdown] nbgrader={"grade_id": "ex7_replay_speedup_statement", "locked": true}
# ### Exercise 7 (3 points): measure what the replay saves
#
# Write `replay_speedup(fn, *inputs, repeat=20, tracer=None, replayer=None)`: trace `fn`
# once with `tracer` (not timed), then time `fn(*inputs)` (eager, recording its graph as
# usual) and `replayer(trace, *inputs)`, each `repeat` times, and return **eager time /
# replay time**, using the best (smallest) time of each. Measure both in the same process,
# one after the other, with `time.perf_counter()`. `tracer` and `replayer` default to your
# `trace` and `replay`. A ratio above 1 means the replay is faster.
#
# The grader passes its own tracer and replayer on a chain of small ops, times the calls
# your function makes to them and to `fn`, and expects your ratio to be above 1.2 and
# within a factor of 2 of what it measured.


# %% nbgrader={"grade_id": "ex7_replay_speedup", "solution": true}
def replay_speedup(fn, *inputs, repeat=20, tracer=None, replayer=None):
    """Best eager time / best replay time of fn on inputs, measured now."""
    ### BEGIN SOLUTION
    tracer = tracer or trace
    replayer = replayer or replay
    recorded = tracer(fn, *inputs)

    def best_time(run):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        return min(times)

    eager = best_time(lambda: fn(*inputs))
    replayed = best_time(lambda: replayer(recorded, *inputs))
    return eager / replayed
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex7_replay_speedup_tests", "grade": true, "points": 3}
def small_ops(x):
    for _ in range(50):
        x = (x * 1.01 + 0.1).tanh()
    return x


def no_trace(fn, *inputs):  # a tracer and a replayer that do no work
    return None


def no_replay(recorded, *inputs):
    return ()


x10 = minitorch.randn(10, requires_grad=True)
with exercise(7):
    free = replay_speedup(small_ops, x10, tracer=no_trace, replayer=no_replay)
    assert isinstance(free, float), f"return a float ratio, not {type(free).__name__}"
    assert free > 10, f"a replay that does nothing must look much faster than eager: {free:.2f}"
    print("Visible tests passed.")
    speedup = replay_speedup(small_ops, x10)
    print(f"your replay is {speedup:.2f}x as fast as eager on 150 small ops")

### BEGIN HIDDEN TESTS
from solutions.static_vs_dynamic import grade

grade.replay_speedup(replay_speedup)
### END HIDDEN TESTS


# %% [markdown] nbgrader={"grade_id": "ex8_predict_tracing_statement", "locked": true}
# ### Exercise 8 (2 points): which functions trace correctly?
#
# Each snippet in the cell below defines a PyTorch function `f(x)`. It is traced with
# `torch.jit.trace(f, torch.ones(3))`, then the trace and `f` itself are both called on
# `x = -2 * torch.arange(1.0, 6.0)`, which has other values **and** another shape.
# Predict, for each snippet, whether the trace gives exactly `f`'s answer (`True`) or not
# (`False`: another value, or an error). Return a dict `{"a": True, ...}` with one bool per
# snippet. Each right prediction earns a tenth of the points.
#
# *Hint:* a trace records tensor ops. Whatever Python computed from a tensor's **value**
# became a constant. Shapes are a special case: try `x.shape[0]` and `len(x)` yourself, and
# run the snippets after you have predicted.

# %% nbgrader={"grade_id": "ex8_snippets", "locked": true}
# Each snippet defines f(x) for PyTorch tensors (exercise 8).
SNIPPETS = {
    "a": "def f(x):\n    return (x * 2).sin()",
    "b": "def f(x):\n    if x.sum() > 0:\n        return x * 2\n    return x - 1",
    "c": "def f(x):\n    for _ in range(3):\n        x = x * 2\n    return x",
    "d": "def f(x):\n    return x * x.shape[0]",
    "e": "def f(x):\n    return x * len(x)",
    "f": "def f(x):\n    n = int(x.abs().sum())\n    return x * n",
    "g": "def f(x):\n    return torch.where(x > 0, x, -x)",
    "h": "def f(x):\n    return torch.tensor(x.tolist()) * 2",
    "i": "def f(x):\n    return x / x.max()",
    "k": "def f(x):\n    return x * x.sum().item()",
}

# %%
for key, code in SNIPPETS.items():
    print(f"--- {key}\n{code}")


# %% nbgrader={"grade_id": "ex8_predict_tracing", "solution": true}
def predict_tracing():
    """{snippet key: True if the trace gives f's answer on the second input, else False}."""
    ### BEGIN SOLUTION
    return {
        "a": True,  # pure tensor ops
        "b": False,  # the branch taken on ones(3) is baked in
        "c": True,  # a loop of fixed length is unrolled, the same for every input
        "d": True,  # x.shape[0] is recorded as a size op, read again on each call
        "e": False,  # len(x) became the constant 3
        "f": False,  # int(...) became the constant 3
        "g": True,  # the choice is a tensor op, not a Python branch
        "h": False,  # tolist() and torch.tensor make a constant
        "i": True,  # max is a tensor op
        "k": False,  # item() became the constant 3.0
    }
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex8_predict_tracing_tests", "grade": true, "points": 2}
with exercise(8):
    predictions = predict_tracing()
    assert isinstance(predictions, dict), f"return a dict, not {type(predictions).__name__}"
    missing = sorted(set(SNIPPETS) - set(predictions))
    assert not missing, f"no prediction for snippets {missing}"
    for key, value in predictions.items():
        assert isinstance(value, bool), f"{key!r}: predict True or False, not {value!r}"
    print("Your predictions are well formed; the hidden tests trace the snippets.")

### BEGIN HIDDEN TESTS
from solutions.static_vs_dynamic import grade

grade.predict_tracing(predict_tracing)
### END HIDDEN TESTS

# %% [markdown]
# ## 7. The same ideas in `minitorch.jit`
#
# `minitorch.jit.trace(fn)` is your tracer grown up: it records with the same hook, guards
# the inputs (shape, dtype, device, `requires_grad`), grad mode, the captured tensors and
# every value read, keeps a cache of traces, and replays a trace as **one op** whose
# backward runs the recorded ops' backward formulas in reverse, so `loss.backward()` works
# as usual. `state` says what the last call did and `explain()` shows the guards. A function
# whose branch flips gets a second trace; another shape too:

# %%
# NBVAL_CHECK_OUTPUT
import minitorch.jit  # noqa: E402


def clipped_layer(x):
    y = layer(x).tanh()
    if y.sum() > 0:
        return y * 2
    return y - 1


step = minitorch.jit.trace(clipped_layer)
big = 10 * minitorch.ones(4, 3, dtype=torch.float64)
for name, value in [("x", big), ("2 x", 2 * big), ("-x", -big), ("5 rows", minitorch.ones(5, 3))]:
    out = step(value.double())
    same = minitorch.allclose(out, clipped_layer(value.double()))
    print(f"{name:>6}: {step.state:8} equals eager: {same}")
print()
print(step.explain())

# %% [markdown]
# The first trace, drawn in the order it runs, with its guards: the yellow note at the
# bottom is the value Python read, checked on every replay.

# %%
first = step.traces[0]
minitorch.viz.program_dot(first.program, guards=str(first.guards), title="trace 0")

# %% [markdown]
# `on_branch` chooses what a value read means: `"guard"` (the default, as above), `"bake"`
# (what `torch.jit.trace` does: freeze the branch, with a warning) or `"error"` (what JAX
# does: refuse to trace a function whose Python code depends on tensor values):

# %%
# NBVAL_CHECK_OUTPUT
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    baked = minitorch.jit.trace(clipped_layer, on_branch="bake")
    baked(big)
print("bake: warning:", str(caught[0].message).split(" at ")[0], "...")
print("      -x gives eager's answer:", minitorch.allclose(baked(-big), clipped_layer(-big)))
try:
    minitorch.jit.trace(clipped_layer, on_branch="error")(big)
except RuntimeError as error:
    print("error:", str(error).split(";")[0].split(": ", 1)[1])

# %% [markdown]
# And the point of it all, measured: forward and backward of a chain of small ops, eager
# and replayed, next to PyTorch's eager mode (each the best of 10 runs, in this process):


# %%
def chain_loss(x):
    for _ in range(100):
        x = (x * 1.01 + 0.1).tanh()
    return x.sum()


def best_time(run, repeat=10):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


x_small = minitorch.randn(100, dtype=torch.float64, requires_grad=True)
t_small = torch.randn(100, dtype=torch.float64, requires_grad=True)
replayed_loss = minitorch.jit.trace(chain_loss)
replayed_loss(x_small).backward()  # the first call records the trace
n_ops = 300  # multiply, add, tanh per step
timings = {
    "minitorch eager": best_time(lambda: chain_loss(x_small).backward()),
    "minitorch.jit replay": best_time(lambda: replayed_loss(x_small).backward()),
    "PyTorch eager": best_time(lambda: chain_loss(t_small).backward()),
}
fig, ax = plt.subplots(figsize=(6, 2.5))
names = list(timings)
ax.barh(names, [timings[n] / n_ops * 1e6 for n in names], color=["C1", "C2", "C0"])
ax.set_xlabel("microseconds per op, forward + backward (measured)")
ax.invert_yaxis()
plt.show()
for name in names:
    ratio = timings["minitorch eager"] / timings[name]
    print(f"{name:>21}: {timings[name] * 1e3:6.2f} ms, {ratio:4.1f}x minitorch eager's speed")

# %% [markdown]
# ## 8. When a dynamic graph is the wrong tool
#
# Define-by-run pays for flexibility on every call. That is the right trade while the
# model's structure changes from one input to the next (notebook 3), or while you are still
# writing and debugging it. It is the wrong trade when nothing changes:
#
# - **fixed-shape production inference**: the same network, the same input shape, millions
#   of calls. Nothing is learned from rebuilding the graph each time; a traced or compiled
#   program (`torch.compile`, `torch.export`, ONNX) runs only the kernels, and can fuse
#   them;
# - **small ops in a hot loop** (RNN cells, optimizers over many small tensors): the
#   per-op overhead of section 2 dominates;
# - **deployment without Python**: a static program can be saved and run from C++ or on a
#   phone; a define-by-run model *is* its Python code.
#
# The modern answer is not to choose one style but to **trace the static parts and guard
# them**: run eagerly while things change, replay a program while its guards hold. That is
# what your tracer does in miniature, and what `torch.compile` does at scale.
#
# ## Summary
#
# - A static graph is a program written down before it runs; a dynamic graph is the record
#   of one run of Python code, rebuilt on every call.
# - Define-by-run costs Python bookkeeping per op (about 13 µs in minitorch, 6 µs in
#   PyTorch, measured above), which dominates on small tensors; it buys ordinary debugging
#   (`print`, breakpoints, anomaly mode naming the forward line) and data-dependent control
#   flow.
# - A trace records the ops of one call as a flat program over slots; parameters are
#   captured by reference. Replaying it skips the graph bookkeeping.
# - Whatever Python computed from a tensor's value became a constant of the trace:
#   `torch.jit.trace` bakes in branches silently; guards on the reads (and on shapes and
#   dtypes) make a trace safe, and a failed guard means tracing again.
# - The backward program of a trace is its ops' backward formulas in reverse order, with
#   gradients summed where a value fans out.
# - A cache of traces needs a limit: past it, running eagerly is cheaper than tracing again.
