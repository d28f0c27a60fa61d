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
# - say which way of deploying a model (tracing, scripting, `torch.export`) keeps a
#   function with a branch correct;
# - tell when a dynamic graph is the wrong tool.
#
# There are **9 graded exercises (25 points)**. Each has visible tests you can run (plain
# asserts that say what went wrong); more tests run when your notebook is graded. Write
# your answers where it says `# YOUR CODE HERE` and delete the `raise NotImplementedError()`.
# "Run All" runs every cell: a test or demo whose exercise is not written yet says so in one
# line and lets the cells after it run.

# %%
import contextlib
import io
import logging
import operator
import time
import warnings
from dataclasses import dataclass, field

try:
    import resource  # page faults (section 2): Linux and macOS
except ImportError:
    resource = None

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
# the cost. Measured on a chain of 200 multiply-adds, forward and backward, with one torch
# thread (so that the kernels are timed the same way in both libraries), the two libraries
# taking turns, best of 5 each:


# %%
def chain(lib, x, n):
    y = x
    for _ in range(n):
        y = y * 1.01 + 0.1
    return y.sum()


def page_faults():
    """Page faults of this process so far: memory the OS had to hand over (0 on Windows)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt if resource else 0


def cost_per_op(lib, size, n=200):
    """(microseconds, page faults) of one forward + backward of the chain, per op (2 a step)."""
    x = lib.ones(size, requires_grad=True)
    faults, start = page_faults(), time.perf_counter()
    chain(lib, x, n).backward()
    seconds = time.perf_counter() - start
    return seconds / (2 * n) * 1e6, (page_faults() - faults) / (2 * n)


sizes = [10, 100, 1_000, 10_000, 100_000]
threads = torch.get_num_threads()
torch.set_num_threads(1)  # restored below; minitorch's kernels are torch's, on the same thread
try:
    runs = {(lib.__name__, size): [] for lib in (torch, minitorch) for size in sizes}
    for _ in range(5):
        for size in sizes:
            for lib in (torch, minitorch):
                runs[lib.__name__, size].append(cost_per_op(lib, size))
finally:
    torch.set_num_threads(threads)
libs = ("torch", "minitorch")
cost = {name: [min(runs[name, size])[0] for size in sizes] for name in libs}
faults = {name: [sum(f for _, f in runs[name, size]) / 5 for size in sizes] for name in libs}
fig, ax = plt.subplots(figsize=(6, 3.5))
for name, values in cost.items():
    ax.loglog(sizes, values, "o-", label=name)
ax.set_xlabel("elements per tensor")
ax.set_ylabel("microseconds per op (fwd + bwd)")
ax.set_title("Per-op cost of a dynamic graph (measured)")
ax.legend()
plt.show()
print("          us per op (fwd + bwd)              page faults per op")
print("elements   PyTorch  minitorch  ratio            PyTorch  minitorch")
for k, size in enumerate(sizes):
    theirs, ours = cost["torch"][k], cost["minitorch"][k]
    print(
        f"{size:>8,}  {theirs:8.1f}  {ours:9.1f}  {ours / theirs:5.1f}           "
        f"{faults['torch'][k]:7.1f}  {faults['minitorch'][k]:9.1f}"
    )

# %% [markdown]
# The flat part of each curve is the **per-op overhead**: microseconds that do not depend on
# the data. PyTorch pays it in C++, minitorch in Python; the first rows of the table give both,
# as measured just now. A model of many small ops (an RNN cell, a tree model, a small MLP at
# batch size 1) lives on that flat part. A static program pays the bookkeeping once, when it
# is built; each run is only the kernels.
#
# At the other end the curves rise. At 100,000 elements each op reads and writes 100,000
# numbers (400 kB in float32) with the same torch kernel in both libraries (a minitorch
# tensor's storage is a torch tensor), so memory, not bookkeeping, takes most of the time,
# and the overhead no longer decides the order. What does is how each result gets its
# memory: reusing blocks the process already holds is cheap, while fresh memory from the
# operating system costs a **page fault** per 4 kB page on first touch. The last columns
# count them: compare them with the times in the last row. Run the cell again, on a busy
# machine especially, and the order at that end can change.
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
# A static graph loses something else than line numbers. TensorFlow 1 kept the Python stack
# of each op's definition and printed it in its errors ("defined at: ..."). What it could not
# give you is a **value while your code runs**: the Python that built the graph ran once,
# before any number existed, so `print(h)` there showed a symbolic `Tensor("add:0", ...)` and
# a breakpoint stopped before any data flowed. The numbers existed only inside
# `session.run(...)`, where the error was raised, and seeing one meant adding a print op to
# the graph or fetching the tensor by name. Here `print`, a breakpoint and anomaly mode all
# see the real values, on the line that computes them.
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
# `torch.compile` also traces (its front end, TorchDynamo, reads the function's bytecode), but
# it keeps a list of **guards**: conditions on what the trace took from Python: the shape,
# dtype and device of each tensor input, the value of each Python number or other non-tensor
# argument, the globals it read. Before each call it checks them; if one fails, it traces
# again (a **recompile**). It never guards on the values *inside* a tensor. Where Python needs
# one (here the `if` on `x.sum() > 0`), it makes a **graph break**: the code before and after
# become graphs, and Python runs the branch between them, on every call.
# `torch._dynamo.explain` reports what it did:

# %%
# NBVAL_CHECK_OUTPUT
explanation = torch._dynamo.explain(clipped)(torch.ones(3))
print("graphs:", explanation.graph_count, " graph breaks:", explanation.graph_break_count)
for reason in explanation.break_reasons:
    print("break:", reason.reason, "at line", reason.user_stack[-1].lineno)
compiled = torch.compile(clipped, backend="eager")  # trace and guard, without code generation
print("compiled:", compiled(negative), "(correct: the branch runs in Python)")

# %% [markdown]
# Guards on shapes and Python numbers, measured: a backend that only notes the graphs it is
# given shows when `torch.compile` traced again, and what each graph takes as input.


# %%
# NBVAL_CHECK_OUTPUT
def scaled(x, n):
    return (x * n).sin()


graph_inputs = []


def counting_backend(graph_module, example_inputs):
    """A torch.compile backend that notes each graph's inputs and runs the graph unchanged."""
    shown = []
    for node in graph_module.graph.nodes:
        if node.op == "placeholder":
            value = node.meta["example_value"]
            if isinstance(value, torch.Tensor):
                sizes = ", ".join(str(d) if isinstance(d, int) else "?" for d in value.shape)
                shown.append(f"tensor[{sizes}]")
            else:
                shown.append("int")
    graph_inputs.append(shown)
    return graph_module.forward


torch._dynamo.reset()
fast_scaled = torch.compile(scaled, backend=counting_backend)
for length, n in [(3, 2), (4, 2), (7, 2), (7, 3)]:
    traced_before = len(graph_inputs)
    fast_scaled(torch.ones(length), n)
    traced_now = len(graph_inputs) > traced_before
    what = f"traced, graph inputs ({', '.join(graph_inputs[-1])})" if traced_now else "replayed"
    print(f"x of length {length}, n = {n}: {what}")

# %% [markdown]
# The first graph is specialised: a `[3]` tensor, with `n = 2` a constant inside it. Length 4
# fails the guard on the size; instead of a second graph for `[4]`, the new graph takes a
# tensor of any length (`?`, a **dynamic** size) and that length as an `int` input, so
# length 7 replays it. `n = 3` fails the guard `n == 2`, and the next graph takes `n` as an
# input too. It keeps one graph per *kind* of call, not one per shape.
#
# Three ways to treat a value that Python reads out of a tensor, then:
#
# - `torch.jit.trace` **bakes** it in: the branch of the example input, for every input, with
#   only a warning at trace time;
# - `torch.compile` **breaks** the graph there: Python decides on every call, and only the
#   code around the branch is compiled;
# - `minitorch.jit` (section 7), and the tracer you build below, **speculate**: they record
#   the branch the example took and a guard on the value read (`bool(...) == True`), checked
#   while the replay runs; a different value stops the replay, and the function is traced
#   again. One whole program per branch taken: good while the value rarely changes, costly
#   when it flips often.

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
#   each Python read of a tensor's value calls `on_read(tensor, kind, value)`. `kind` is one
#   of `"bool"` (`if t:`), `"item"`, `"float"`, `"int"`, `"index"` (`range(t)`, `x[t]`),
#   `"len"` (also `for row in t`) and `"tolist"` (printing a tensor reports the values it
#   showed as a `"tolist"` read). PyTorch's tracers use the same kind of hook
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
# 2. a tensor argument of an op that is not in a slot yet was not made by an earlier step: a
#    parameter, a global, or a constant that minitorch made from a Python number during the
#    call (in `y.sum() > 0` the `0` reaches the comparison op as a 0-d tensor). It gets the
#    next slot, and `trace.captured[slot]` holds the tensor itself (by reference, so a later
#    optimizer step is seen). So does a tensor whose value is read before any op used it
#    (`int(n)` of a global `n`);
# 3. each tensor an op returns gets the next slot, in the order of `outputs` (ops such as
#    `chunk`, `unbind`, `sort` or `max(dim=...)` return several).
#
# Each op becomes a `Step(function, args, outputs)`: in `args`, a tensor argument is
# `Slot(i)` and anything else is kept as it is; `outputs` has the slot of each returned
# tensor (`None` for an output that is not a tensor). Each read becomes a
# `Guard(slot, kind, value)`, in `trace.steps` at the point where it happened.
# `trace.outputs` are the slots of the tensors `fn` returned (a tensor or a tuple of
# tensors), in the order returned, whichever slots they have: `fn` may return an input, or
# the same tensor twice. `trace.input_meta` is the `(shape, dtype)` of each input.
#
# Example: for `lambda x: (x * 2).sin()` on one input, `trace.steps` is
# `[Step(Mul, [Slot(0), 2], [1]), Step(Sin, [Slot(1)], [2])]` and `trace.outputs == [2]`.
# For `branchy` above, the `0` of `y.sum() > 0` is in `trace.captured`, and the `bool` read
# is a `Guard` right after the comparison.
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
READERS = {
    "bool": bool,
    "item": lambda t: t.item(),
    "float": float,
    "int": int,
    "index": operator.index,
    "len": len,
    "tolist": lambda t: t.tolist(),
}


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
        if id(tensor) not in slots:  # read before any op used it: made outside the call
            result.captured[slot_of(tensor)] = tensor
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
    zeros = [v for v in t.captured.values() if v.dim() == 0]
    assert len(zeros) == 1, f"the 0 of `y.sum() > 0` is a captured 0-d tensor: {t.captured}"
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
# (exercise 4 checks them). Run under `minitorch.no_grad()`: a replay records no graph
# (recording one is a large part of eager mode's cost, section 7). Leave the trace as it
# is (keep the values of one replay in a dict of its own): a trace is replayed many times.
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
# ### Exercise 3 (2 points): guards on the inputs
#
# A trace holds only for inputs like the ones it was recorded with: the ops of a
# `[4, 3]` input may not even apply to a `[5, 2]` one, and a float32 replay of a float64
# trace gives other numbers. Write `input_mismatch(trace, *inputs)`: `None` when the
# inputs match the trace (same number, and each has the shape and dtype in
# `trace.input_meta`), else a short message that names the **first** input that differs as
# `input i` (counting from 0), and what differs, with the word `shape` or `dtype`; or, when
# the number of inputs differs, a message with the word `number`.
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


# %% nbgrader={"grade_id": "ex3_input_mismatch_tests", "grade": true, "points": 2}
with exercise(3):
    assert input_mismatch(mul_sin, x3 * 5) is None, "same shape and dtype: no mismatch"
    message = input_mismatch(mul_sin, minitorch.ones(4, dtype=F64))
    assert message is not None and "shape" in message, f"a [4] input must fail: {message!r}"
    assert "input 0" in message, f"name the input that differs, 'input 0': {message!r}"
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
# that read the same value. `torch.jit.trace` checks nothing there, and `torch.compile`
# does not trace past such a read (a graph break); a guard lets a trace **speculate**: keep
# the branch the example took, and stop as soon as an input reads another value. Write
# `replay_guarded(trace, *inputs)`: replay as in exercise
# 2, and at each `Guard` read the value again, `READERS[guard.kind](tensor in guard.slot)`;
# if it differs from `guard.value` (compare exactly: a value that is only close may take
# another path), raise `GuardFailed` (defined with `Trace`) at once, with a message that
# says which read changed (e.g. `"bool read True when traced, False now"`): the ops after a
# failed guard belong to a branch this input does not take. Otherwise return the outputs
# as `replay` does.
#
# Example: a trace of `lambda x: x * len(x)` on a `[3]` input holds `Guard(0, "len", 3)`;
# replayed on a `[4]` input it raises `GuardFailed("len read 3 when traced, 4 now")`.
#
# *Hint:* the replay loop of exercise 2 with one more case; a guard's slot always holds a
# value computed before the guard. `READERS` has a reader for every kind `watch_ops`
# reports.


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
# - Skip a step none of whose outputs received a gradient (its result was never used), and
#   skip `Guard`s. A step with several outputs (`chunk`, `sort`, `max(dim=...)`) whose
#   outputs received only some gradients gets zeros for the others
#   (`minitorch.zeros_like(output)`), as the engine gives them.
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
        out_grads = [  # an output nothing used gets zeros, as the engine gives it
            minitorch.zeros_like(values[s]) if g is None and s is not None else g
            for s, g in zip(step.outputs, out_grads)
        ]
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
# `(tuple(shape), dtype)` of **each** input, in a dict `call.cache` (signature -> trace). A call
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
# ### Exercise 7 (3 points): measure what the replay saves, like with like
#
# Write `replay_speedup(fn, *inputs, repeat=20, tracer=None, replayer=None)` for a function
# `fn` that returns one tensor, called on inputs that require grad. It times one training
# step's worth of work both ways, **forward and backward on each side**:
#
# - eager: `fn(*inputs).backward(grad_output)` (a graph recorded, then walked by the engine);
# - replay: `replayer(trace, list(inputs), grad_output)`, which returns `(output, grads)` as
#   your exercise 5 does, with `trace = tracer(fn, *inputs)` made once, before any timing.
#
# `grad_output` is `minitorch.ones_like(fn(*inputs))`, made once before timing. Time each
# call with `time.perf_counter()`, the two sides taking turns (one eager step, one replay,
# `repeat` times, so that a busy moment of the machine hits both), and return **best eager
# time / best replay time** (the smallest time of each). `tracer` and `replayer` default to
# your `trace` and `replay_with_gradients`. A ratio above 1 means the replay is faster.
#
# Example: with your own exercise 5 on a chain of small ops the ratio is close to 1, or
# below: your replay still makes a minitorch tensor and a `ctx` per op, and calls every
# backward from Python, which is most of what eager mode pays (section 7 shows where the
# time goes). The grader passes its own tracer and replayer, which replay on raw storage as
# `minitorch.jit` does, and times the calls your function makes; your ratio must agree with
# its own measurement of those calls within a factor of 1.5.
#
# Timing a forward pass alone on one side and forward plus backward on the other would
# compare a forward pass with a training step: the ratio would say nothing about either.
#
# *Hint:* make the trace and `grad_output` before the loop, and keep one running minimum
# per side: `eager = min(eager, time.perf_counter() - start)`.


# %% nbgrader={"grade_id": "ex7_replay_speedup", "solution": true}
def replay_speedup(fn, *inputs, repeat=20, tracer=None, replayer=None):
    """Best eager (forward + backward) time / best replay (forward + backward) time."""
    ### BEGIN SOLUTION
    tracer = tracer or trace
    replayer = replayer or replay_with_gradients
    recorded = tracer(fn, *inputs)
    grad_output = minitorch.ones_like(fn(*inputs))
    eager = replayed = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*inputs).backward(grad_output)
        eager = min(eager, time.perf_counter() - start)
        start = time.perf_counter()
        replayer(recorded, list(inputs), grad_output)
        replayed = min(replayed, time.perf_counter() - start)
    return eager / replayed
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex7_replay_speedup_tests", "grade": true, "points": 3}
def small_ops(x):
    for _ in range(50):
        x = (x * 1.01 + 0.1).tanh()
    return x.sum()


def no_trace(fn, *inputs):  # a tracer and a replayer that do no work
    return None


def no_replay(recorded, inputs, grad_output):
    return None, {}


x10 = minitorch.randn(10, dtype=F64, requires_grad=True)
with exercise(7):
    free = replay_speedup(small_ops, x10, tracer=no_trace, replayer=no_replay)
    assert isinstance(free, float), f"return a float ratio, not {type(free).__name__}"
    assert free > 10, f"a replay that does nothing must look much faster than eager: {free:.2f}"
    x10.grad = None
    replay_speedup(small_ops, x10, repeat=3, tracer=no_trace, replayer=no_replay)
    assert x10.grad is not None, "time eager forward AND backward: x10.grad was never set"
    print("Visible tests passed.")
    speedup = replay_speedup(small_ops, x10)
    print(f"your replay (exercise 5) is {speedup:.2f}x as fast as eager, forward + backward")

### BEGIN HIDDEN TESTS
from solutions.static_vs_dynamic import grade

grade.replay_speedup(replay_speedup)
### END HIDDEN TESTS


# %% [markdown] nbgrader={"grade_id": "ex8_predict_tracing_statement", "locked": true}
# ### Exercise 8 (1 point): which functions trace correctly?
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


# %% nbgrader={"grade_id": "ex8_predict_tracing_tests", "grade": true, "points": 1}
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
# And the point of it all, measured like with like: a forward pass without a graph on both
# sides, then a training step (forward and backward) on both sides, for a chain of 300 small
# ops. One torch thread, every variant taking turns, best of 15 each:


# %%
def chain_loss(x):
    for _ in range(100):
        x = (x * 1.01 + 0.1).tanh()
    return x.sum()


x_small = minitorch.randn(100, dtype=torch.float64, requires_grad=True)
t_small = torch.randn(100, dtype=torch.float64, requires_grad=True)
replayed_loss = minitorch.jit.trace(chain_loss)
replayed_loss(x_small).backward()  # the first call records the trace with grad mode on
with minitorch.no_grad():
    replayed_loss(x_small)  # grad mode is guarded: a second trace, for calls under no_grad
variants = {  # name: (library of the no_grad block, the call)
    "minitorch eager, forward, no graph": (minitorch, lambda: chain_loss(x_small)),
    "minitorch eager, forward, graph recorded": (None, lambda: chain_loss(x_small)),
    "minitorch eager, forward + backward": (None, lambda: chain_loss(x_small).backward()),
    "minitorch.jit replay, forward, no graph": (minitorch, lambda: replayed_loss(x_small)),
    "minitorch.jit replay, forward + backward": (None, lambda: replayed_loss(x_small).backward()),
    "PyTorch eager, forward, no graph": (torch, lambda: chain_loss(t_small)),
    "PyTorch eager, forward + backward": (None, lambda: chain_loss(t_small).backward()),
}
threads = torch.get_num_threads()
torch.set_num_threads(1)
try:
    timings = dict.fromkeys(variants, float("inf"))
    for _ in range(15):
        for name, (lib, call) in variants.items():
            start = time.perf_counter()
            if lib is None:
                call()
            else:
                with lib.no_grad():
                    call()
            timings[name] = min(timings[name], time.perf_counter() - start)
finally:
    torch.set_num_threads(threads)
n_ops = 300  # multiply, add, tanh per step
for name, seconds in timings.items():
    print(f"{name:>42}: {seconds * 1e3:5.2f} ms, {seconds / n_ops * 1e6:5.1f} us per op")
ms = {name: seconds * 1e3 for name, seconds in timings.items()}
eager_fwd, eager_graph, eager_step, jit_fwd, jit_step = list(ms.values())[:5]
print()
print(f"forward, no graph on either side: replay {eager_fwd / jit_fwd:.1f}x as fast as eager")
print(f"forward + backward on both sides: replay {eager_step / jit_step:.1f}x as fast as eager")
print(
    f"eager's step: {eager_fwd:.2f} ms of ops, {eager_graph - eager_fwd:.2f} ms recording the "
    f"graph, {eager_step - eager_graph:.2f} ms of backward"
)
fig, ax = plt.subplots(figsize=(6, 3))
ax.barh(list(ms), list(ms.values()), color=["C1", "C1", "C1", "C2", "C2", "C0", "C0"])
ax.set_xlabel("milliseconds for 300 small ops (measured)")
ax.invert_yaxis()
plt.show()

# %% [markdown]
# Read the table from the top. Eager minitorch spends its time in three places: running each
# op (checking arguments, making a result tensor), recording the graph (a node per op,
# saved tensors), and the backward pass (one Python call per node through the engine). The
# replay in `minitorch.jit` skips the first two almost entirely: it runs each op's kernel on
# raw storage (torch tensors), with no minitorch tensor or node per op, and its backward is
# the kernels' backward formulas in a plain loop. What is left is close to PyTorch's own
# per-op cost plus a Python loop. A tracer like yours, which still calls `Function.apply` or
# `forward_with_ctx` per op, keeps most of the cost: that is what exercise 7 measured.

# %% [markdown]
# ## 8. Deploying a dynamic model: scripting and export
#
# To run a model without its Python (a server in C++, a phone), it must become a program.
# Tracing gives one, with the branches baked in. PyTorch has had two other routes:
#
# - `torch.jit.script` **compiles the Python source** of a function into TorchScript, a
#   small statically typed language with its own `if` and loops, so a branch on a value is
#   kept as a branch. It accepts only the subset of Python it can type (no lambdas, no
#   arbitrary objects). TorchScript is in maintenance mode: PyTorch 2.x deprecates both
#   `torch.jit.script` and `torch.jit.trace` in favour of `torch.export` (measured below).
# - `torch.export.export` traces the function once, like `torch.compile` but with no graph
#   break allowed: the result must be one whole graph, or export fails. A branch on a value
#   must be written as a tensor op that takes both branches, `torch.cond(pred, true_fn,
#   false_fn, operands)`. Shapes are fixed to the example's unless declared dynamic.
#
# Here is `clipped` (section 4) scripted, then exported with `torch.cond`, and exported as
# it is:


# %%
# NBVAL_CHECK_OUTPUT
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    scripted = torch.jit.script(clipped)
    torch.jit.trace(clipped, torch.ones(3))
print("warnings:")
for message in dict.fromkeys(str(w.message) for w in caught if w.category is DeprecationWarning):
    print(" ", message)
print("scripted:", scripted(negative), "<- the branch is kept")
print(scripted.code)


# %%
class ClippedCond(torch.nn.Module):
    """clipped, with the branch as torch.cond: both branches become subgraphs."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x * 2, lambda x: x - 1, (x,))


class ClippedIf(torch.nn.Module):
    """clipped as it is: a Python `if` on a value."""

    def forward(self, x):
        return clipped(x)


exported = torch.export.export(ClippedCond(), (torch.ones(3),))
program_text = exported.graph_module.code.strip().splitlines()
print("\n".join(line.split(";")[0] for line in program_text))
print("exported with torch.cond:", exported.module()(negative), exported.module()(torch.ones(3)))
logging.disable(logging.CRITICAL)  # export logs the graph it gave up on; the error is enough
try:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        torch.export.export(ClippedIf(), (torch.ones(3),))
except Exception as error:  # whatever export raises is the point
    print("exported with if: refused,", type(error).__name__)
finally:
    logging.disable(logging.NOTSET)

# %% [markdown] nbgrader={"grade_id": "ex9_predict_deployment_statement", "locked": true}
# ### Exercise 9 (2 points): which route keeps each function correct?
#
# Each snippet below defines a PyTorch function `f(x)`. It goes through each of three
# routes: `"trace"` is `torch.jit.trace(f, torch.ones(3))`; `"script"` is
# `torch.jit.script(f)`; `"export"` is `torch.export.export` of a module whose `forward`
# returns `f(x)`, with example input `torch.ones(3)`. The result is then called on
# `x = torch.tensor([-1.0, -2.0, 1.5])` (the same shape, other values). A route **keeps `f`
# correct** if it builds without an error and gives exactly `f(x)`.
#
# Write `predict_deployment()` returning a dict from each snippet's key to the **set** of
# routes that keep it correct, e.g. `{"a": {"trace", "script", "export"}, "b": set(), ...}`
# (not the answer). Each of the 18 (snippet, route) pairs predicted right earns an equal
# share of the points.
#
# *Hint:* tracing keeps tensor ops and bakes in every Python value read from a tensor;
# scripting keeps Python control flow but refuses what it cannot type; export traces like
# `torch.compile` without graph breaks, and can keep a value read from a tensor as a
# symbolic number as long as no Python `if` or loop depends on it. Predict first, then run
# the routes yourself.

# %% nbgrader={"grade_id": "ex9_deploy_snippets", "locked": true}
# Each snippet defines f(x) for PyTorch tensors (exercise 9).
DEPLOY_SNIPPETS = {
    "a": "def f(x):\n    return (x * 2).sin()",
    "b": "def f(x):\n    if x.sum() > 0:\n        return x * 2\n    return x - 1",
    "c": "def f(x):\n    return torch.cond(x.sum() > 0, lambda x: x * 2, lambda x: x - 1, (x,))",
    "d": "def f(x):\n    return torch.where(x.sum() > 0, x * 2, x - 1)",
    "e": "def f(x):\n    for _ in range(int(x.abs().sum())):\n        x = x * 0.5\n    return x",
    "f": "def f(x):\n    return x * x.sum().item()",
}
ROUTES = ("trace", "script", "export")

# %%
for key, code in DEPLOY_SNIPPETS.items():
    print(f"--- {key}\n{code}")


# %% nbgrader={"grade_id": "ex9_predict_deployment", "solution": true}
def predict_deployment():
    """{snippet key: the set of routes ("trace", "script", "export") that keep f correct}."""
    ### BEGIN SOLUTION
    return {
        "a": {"trace", "script", "export"},  # tensor ops only
        "b": {"script"},  # trace bakes the branch; export cannot decide `if` on a value
        "c": {"export"},  # jit.trace and jit.script refuse torch.cond (and lambdas)
        "d": {"trace", "script", "export"},  # the choice is a tensor op
        "e": {"script"},  # the loop's length is a value: baked by trace, refused by export
        "f": {"script", "export"},  # item() is a constant for trace, a symbol for export
    }
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex9_predict_deployment_tests", "grade": true, "points": 2}
with exercise(9):
    deployable = predict_deployment()
    assert isinstance(deployable, dict), f"return a dict, not {type(deployable).__name__}"
    missing = sorted(set(DEPLOY_SNIPPETS) - set(deployable))
    assert not missing, f"no prediction for snippets {missing}"
    for key, routes in deployable.items():
        assert isinstance(routes, (set, frozenset)), f"{key!r}: a set of routes, not {routes!r}"
        unknown = set(routes) - set(ROUTES)
        assert not unknown, f"{key!r}: routes are {ROUTES}, not {sorted(unknown)}"
    print("Your predictions are well formed; the hidden tests run the three routes.")

### BEGIN HIDDEN TESTS
from solutions.static_vs_dynamic import grade

grade.predict_deployment(predict_deployment)
### END HIDDEN TESTS

# %% [markdown]
# What the routes cannot keep is the point of this course's first half: a model whose
# *structure* follows each input (notebook 3's trees and sequences) is one program per
# input. Scripting keeps it only if it is written in TorchScript's subset; export needs it
# rewritten with `torch.cond` and loops over tensors, or split into pieces that are each
# static. Before paying that price, check whether the model needs its dynamic structure at
# all: a padded batch or a fixed-depth unroll is often as accurate, and static.
#
# %% [markdown]
# ## 9. When a dynamic graph is the wrong tool
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
# - Define-by-run costs bookkeeping per op (section 2 measured it in both libraries on this
#   machine), which dominates on small tensors; it buys ordinary debugging (`print` and
#   breakpoints on real values, anomaly mode naming the forward line) and data-dependent
#   control flow.
# - A trace records the ops of one call as a flat program over slots; parameters are
#   captured by reference. Replaying it skips the graph bookkeeping.
# - Whatever Python computed from a tensor's value became a constant of the trace:
#   `torch.jit.trace` bakes in branches silently; `torch.compile` guards on shapes, dtypes
#   and Python values and breaks the graph at a tensor's value; a guard on the value read
#   lets a trace speculate, and a failed guard means tracing again.
# - A replay is fast when it skips the per-op machinery (tensors, nodes, the engine), not
#   merely because it replays: compare like with like, forward with forward, a training step
#   with a training step.
# - The backward program of a trace is its ops' backward formulas in reverse order, with
#   gradients summed where a value fans out.
# - A cache of traces needs a limit: past it, running eagerly is cheaper than tracing again.
