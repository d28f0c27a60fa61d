# ---
# jupyter:
#   jupytext:
#     formats: py:percent,../source/memory//ipynb
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
# # Notebook 4: memory, what the graph keeps alive and how to spend less
#
# Training a network usually runs out of **memory** before it runs out of time. Most of
# that memory is not the parameters: it is the values that the forward pass **saves for
# backward**, and they stay alive as long as the graph that holds them. This notebook
# measures where the bytes go and practises the standard ways to spend fewer of them.
#
# After this notebook you will be able to:
#
# - say what each op saves for backward and why, and count the bytes a graph keeps alive;
# - read a memory timeline: rising through the forward pass, falling through backward;
# - control the graph's lifetime (`backward`, `retain_graph`, references to outputs) and
#   avoid recording one (`no_grad`, `inference_mode`, `detach`, `.item()`);
# - find and fix the classic leaks of training loops, and reference cycles with `gc`;
# - see what the graph's nodes themselves cost, which no count of storages shows;
# - read PyTorch's own figures with `torch.profiler`, side by side with minitorch's;
# - trade computation for memory: gradient checkpointing, micro-batches, truncated
#   backpropagation through time, and saved-tensor hooks that store activations in half
#   precision;
# - measure what mixed precision (activations in bfloat16 or float16) saves, and what it costs.
#
# **Every figure here is measured**, never taken on trust: `minitorch.memory` counts the
# bytes of every storage that minitorch tensors use, exactly (a storage shared by views
# counts once). `memory_allocated()` is what is alive now, `saved_bytes(t)` what the
# graph behind `t` saved, and `with track() as mem:` records the **peak** inside a block
# (and, with `timeline=True`, every allocation and release). On a CUDA machine
# `memory_stats()` also reports PyTorch's own `torch.cuda.memory_allocated()`. The graph's
# nodes are Python objects outside every storage: `graph_bytes(t)` counts them (section 5).
#
# There are **8 graded exercises (25 points)**. Each has visible tests you can run (plain
# asserts that say what went wrong); more tests run when your notebook is graded. Write
# your answers where it says `# YOUR CODE HERE` and delete the `raise NotImplementedError()`.
# "Run All" runs every cell: a test or demo whose exercise is not written yet says so in one
# line and lets the rest of the notebook run.

# %%
import collections
import contextlib
import copy
import gc
import math
import os
import tracemalloc
import warnings
import weakref

import matplotlib.pyplot as plt
import torch
from IPython.display import display

import minitorch
from minitorch import memory, nn
from minitorch.autograd.graph import Node, saved_tensors, saved_tensors_hooks
from minitorch.memory import track
from minitorch.notebook import exercise
from minitorch.utils.checkpoint import checkpoint_sequential

torch.manual_seed(0)
minitorch.manual_seed(0)
# What the imports created lives as long as the kernel: take it out of the garbage collector's
# sight, so that gc.collect() and memory's scan of live objects see only what this notebook makes.
gc.freeze()

# The name of the node behind a leaf that requires grad, in both libraries.
ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"


def kib(n):
    return f"{n / 1024:8.1f} KiB"


def same(a, b):
    # Two tensors (minitorch or PyTorch) hold the same values, up to rounding.
    return torch.allclose(torch.tensor(a.tolist()), torch.tensor(b.tolist()))


def live_bytes():
    # Collect garbage first, so that only what is really reachable counts.
    gc.collect()
    return memory.memory_allocated()


def deep_mlp(depth, width, seed=0):
    # `depth` blocks, each nn.Sequential(Linear, Tanh), in float64.
    minitorch.manual_seed(seed)
    blocks = [nn.Sequential(nn.Linear(width, width), nn.Tanh()) for _ in range(depth)]
    return nn.Sequential(*blocks).double()


if torch.cuda.is_available():
    print("CUDA:", memory.memory_stats())

# %% [markdown]
# ## 1. What each op saves for backward, and why
#
# An op saves exactly what its **local derivative** needs. `x + y` passes the gradient
# through unchanged: it saves nothing. `x * y` needs `y` for the gradient of `x` and `x`
# for the gradient of `y`: it saves both. `exp`, `tanh`, `sigmoid` and `relu` can write
# their derivative with their **result** (`d exp(x) = exp(x)`, `d tanh(x) = 1 - tanh(x)^2`),
# so they save the result; `sin` needs its input (`cos(x)`). `x @ w.t()` needs each input
# for the other's gradient. Sums and means need only the input's shape.
#
# `saved_tensors(node)` lists what a minitorch node saved, under PyTorch's names; PyTorch
# shows the same through its nodes' `_saved_<name>` attributes:

# %%
# NBVAL_CHECK_OUTPUT
ops = {
    "x + y": lambda x, y: x + y,
    "x * y": lambda x, y: x * y,
    "x.exp()": lambda x, y: x.exp(),
    "x.tanh()": lambda x, y: x.tanh(),
    "x.relu()": lambda x, y: x.relu(),
    "x.sin()": lambda x, y: x.sin(),
    "x ** 2": lambda x, y: x**2,
    "x @ y.t()": lambda x, y: x @ y.t(),
    "x.sum()": lambda x, y: x.sum(),
}
for text, op in ops.items():
    mx, my = (minitorch.randn(3, 4, requires_grad=True) for _ in range(2))
    tx, ty = (torch.randn(3, 4, requires_grad=True) for _ in range(2))
    node, torch_node = op(mx, my).grad_fn, op(tx, ty).grad_fn
    ours = sorted(name for name, _ in saved_tensors(node))
    theirs = sorted(  # the saved tensors; PyTorch's nodes also keep sizes and numbers
        a[7:]
        for a in dir(torch_node)
        if a.startswith("_saved_") and isinstance(getattr(torch_node, a), torch.Tensor)
    )
    print(f"{text:10} {node.name():15} minitorch saves {ours}, PyTorch saves {theirs}")

# %% [markdown]
# In a network the saved tensors are the **activations**: each `Linear` saves its input
# (for the weight's gradient), each `Tanh` its output. The next `Linear`'s input *is*
# that output, so the two nodes share one storage. Parameters are saved too, but they are
# alive anyway; what training adds is the activations, one batch-sized tensor per layer.
# `make_dot(..., show_saved=True)` draws the saved tensors in orange:

# %%
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
x = minitorch.randn(16, 4)
loss = model(x).pow(2).mean()
if minitorch.viz.has_graphviz():
    display(minitorch.viz.make_dot(loss, params=dict(model.named_parameters()), show_saved=True))
else:
    display(minitorch.viz.show(loss, dict(model.named_parameters())))


# %% [markdown] nbgrader={"grade_id": "ex1_saved_bytes_statement", "locked": true}
# ### Exercise 1 (3 points): the bytes a graph keeps alive
#
# Write `saved_bytes(t, include_parameters=False)`: the number of bytes that the graph
# behind `t` keeps alive through the tensors its nodes saved. Walk every node reachable
# from `t.grad_fn` through `next_functions` and read `saved_tensors(node)`, a list of
# `(name, tensor)` pairs. Keep a list of nodes still to visit, not recursion (graphs can be
# thousands of ops deep), and a set of the nodes already seen: in `h = h * h` repeated 40
# times, 2**40 paths lead to the first node, and a walk without that set follows each.
#
# Memory belongs to **storages**, not tensors: views (`h[0]`, `h.t()`) and the same
# tensor saved by two nodes share one. Identify a storage with
# `s = tensor.untyped_storage()`: `s.data_ptr()` is its address, `s.nbytes()` its size;
# count each storage once, with its full size.
#
# Unless `include_parameters` is True, leave out the storages of **parameters**: the
# `node.variable` of every AccumulateGrad node and saved tensors that are leaves
# requiring grad. Return 0 when `t.grad_fn` is None. The graphs have no saved-tensor
# hooks. The grader compares with `minitorch.memory.saved_bytes` on several models, a chain
# of 5,000 ops and that `h = h * h` graph, where it stops a walk that reads the nodes'
# `next_functions` many more times than a walk that visits each node once.


# %% nbgrader={"grade_id": "ex1_saved_bytes", "solution": true}
def saved_bytes(t, include_parameters=False):
    """Bytes that the graph behind `t` keeps alive through the tensors its nodes saved.

    Walk every node reachable from `t.grad_fn` (without recursion) and read what each saved
    with `saved_tensors(node)` (a list of `(name, tensor)` pairs). Count each storage once
    (`x.untyped_storage()`: its `data_ptr()` identifies it, `nbytes()` is its size), however
    many saved tensors (views, the same tensor twice) share it. Unless `include_parameters`,
    leave out the storages of parameters: the `variable` of every AccumulateGrad node, and saved
    tensors that are leaves requiring grad. 0 when `t.grad_fn` is None.
    """
    ### BEGIN SOLUTION
    if t.grad_fn is None:
        return 0
    sizes = {}  # storage address -> bytes
    parameters = set()
    seen = {t.grad_fn}
    to_visit = [t.grad_fn]
    while to_visit:
        node = to_visit.pop()
        if node.name() == ACCUMULATE_GRAD:
            parameters.add(node.variable.untyped_storage().data_ptr())
        for _, saved in saved_tensors(node):
            storage = saved.untyped_storage()
            sizes[storage.data_ptr()] = storage.nbytes()
            if saved.is_leaf and saved.requires_grad:
                parameters.add(storage.data_ptr())
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                to_visit.append(child)
    return sum(n for ptr, n in sizes.items() if include_parameters or ptr not in parameters)
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex1_saved_bytes_tests", "grade": true, "points": 3}
with exercise(1):
    x = minitorch.randn(8, 4, dtype=torch.float64)
    w = minitorch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    hidden = (x @ w.t()).relu()  # the matmul saves x (w does not need the gradient of x)
    loss = (hidden * hidden).sum()  # relu saves hidden; mul saves hidden twice: one storage
    assert saved_bytes(loss) == (8 * 4 + 8 * 6) * 8, f"expected 640 bytes, got {saved_bytes(loss)}"
    x2 = x.requires_grad_() * 2  # now the matmul also saves w.t(), a view of the parameter w
    loss = (x2 @ w.t()).sum()
    assert saved_bytes(loss) == 8 * 4 * 8, "the parameter w must be left out"
    assert saved_bytes(loss, include_parameters=True) == (8 * 4 + 6 * 4) * 8, "count w once"
    loss.backward()
    assert saved_bytes(loss, include_parameters=True) == 0, "backward freed the saved tensors"
    assert saved_bytes(w) == 0, "a leaf has no graph"
    h = x.exp()  # exp saves its result h
    loss = (h[0] * h[1]).sum()  # mul saves two views of h, which start at different addresses
    got = saved_bytes(loss)
    assert got == 8 * 4 * 8, f"h, h[0] and h[1] share one storage of 256 bytes, got {got}"
    model = deep_mlp(3, 5)
    loss = model(minitorch.randn(7, 5, dtype=torch.float64)).sum()
    for include in (False, True):
        got, want = saved_bytes(loss, include), memory.saved_bytes(loss, include_parameters=include)
        assert got == want, f"deep_mlp(3, 5), include_parameters={include}: {want} bytes, got {got}"
    h = x.sin()
    for _ in range(3000):  # deeper than Python's recursion limit
        h = h.sin()
    got, want = saved_bytes(h.sum()), memory.saved_bytes(h.sum())
    assert got == want, f"a chain of 3,000 sin: {want} bytes, got {got}"
    print("saved_bytes agrees with minitorch.memory.saved_bytes on these graphs")

### BEGIN HIDDEN TESTS
from solutions.memory import grade

grade.saved_bytes(saved_bytes)
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Forward rises, backward falls
#
# `track(timeline=True)` records every allocation and release inside a block. Here is one
# training step of a 12-block MLP: during the forward pass each block allocates an
# activation that the graph keeps (blue, rising); backward (orange) allocates gradients
# and frees each node's saved tensors once the node has run, so memory falls back. What
# stays after the step is the parameters' `.grad`.

# %%
model = deep_mlp(12, 64)
x = minitorch.randn(256, 64, dtype=torch.float64)
loss = None  # free section 1's graph now, not in the middle of the measurement
with track(timeline=True) as mem:
    loss = model(x).pow(2).mean()
    after_forward = mem.current_bytes
    loss.backward()
print(mem.summary())
print("held by the graph after forward:", kib(after_forward - mem.start_bytes))
print("left after the step (the gradients):", kib(mem.end_bytes - mem.start_bytes))
memory.plot_timeline(mem, title="one training step of a 12-block MLP")
plt.show()

# %% [markdown]
# On a GPU the same accounting runs on the GPU's storages, and `summary()` adds PyTorch's
# own peak, `torch.cuda.max_memory_allocated()`, which also counts PyTorch's temporaries
# and rounds every block up to 512 bytes:

# %%
if torch.cuda.is_available():
    gpu_model = deep_mlp(12, 64).to("cuda")
    with track() as gpu:
        gpu_model(x.to("cuda")).pow(2).mean().backward()
    print(gpu.summary())
    del gpu_model
else:
    print("no CUDA device here: minitorch's own figures only")

# %% [markdown]
# ### PyTorch's own view: `torch.profiler`
#
# On a CPU, PyTorch has no `memory_allocated()`. Its profiler, with `profile_memory=True`,
# records every allocation and release of PyTorch's allocator: each event's
# `self_cpu_memory_usage` is what its op allocated minus what it released, so adding them up
# in time order gives the timeline and its peak. The same step, on a PyTorch copy of the model
# (same shapes, float64), side by side with `track()`:


# %%
os.environ["KINETO_LOG_LEVEL"] = "10"  # else the profiler logs its start and stop on stderr


def profiled_bytes(run):
    # (peak, end, profile) of the bytes PyTorch's allocator handed out while run() ran, on top
    # of what it held before, added up in time order from the profiler's memory events.
    with torch.profiler.profile(profile_memory=True) as prof:
        run()
    events = prof.events()
    changes = sorted((e.time_range.start, e.self_cpu_memory_usage) for e in events)
    current = peak = 0
    for _, change in changes:
        current += change
        peak = max(peak, current)
    return peak, current, prof


torch.manual_seed(0)
torch_model = torch.nn.Sequential(
    *[torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh()) for _ in range(12)]
).double()
torch_x = torch.randn(256, 64, dtype=torch.float64)
torch_model(torch_x).pow(2).mean().backward()  # a first step outside the profile: warm-up
torch_model.zero_grad()
torch_peak, torch_end, prof = profiled_bytes(lambda: torch_model(torch_x).pow(2).mean().backward())
forward_peak, _, _ = profiled_bytes(lambda: torch_model(torch_x).pow(2).mean().item())
ours_peak, ours_end = mem.peak_bytes - mem.start_bytes, mem.end_bytes - mem.start_bytes
print(f"{'one training step':22} {'minitorch, track()':>20} {'PyTorch, profiler':>20}")
print(f"{'peak':22} {kib(ours_peak):>20} {kib(torch_peak):>20}")
print(f"{'left (the gradients)':22} {kib(ours_end):>20} {kib(torch_end):>20}")
print(f"PyTorch's forward pass alone peaks at {kib(forward_peak)}")
print("what PyTorch's ops allocated in the step, by op:")
for op in sorted(prof.key_averages(), key=lambda op: -op.self_cpu_memory_usage)[:4]:
    print(f"  {op.key:22} {op.count:3} calls {kib(op.self_cpu_memory_usage)}")

# %% [markdown]
# The same gradients are left in both. PyTorch peaks in its forward pass (the forward alone
# peaks as high): the twelve tanh outputs its graph saves and one temporary, 13 x 128 KiB.
# minitorch's backward holds more temporaries at once, so its peak comes during backward. The
# profiler counts what PyTorch's tensor allocator hands out: the graph's nodes, C++ objects,
# are not in it (section 5 comes back to them), and it slows every op down while it runs.

# %% [markdown]
# ## 3. How long the graph lives
#
# The saved tensors live exactly as long as the graph needs them:
#
# - **`backward()` frees them**, node by node (that is why a second backward raises);
# - **`retain_graph=True`** keeps them for another backward;
# - the graph itself lives as long as **something refers to its output** (`loss`, or any
#   tensor computed from it): a forgotten reference keeps every saved activation alive.
#
# Measured on the same model:

# %%
# NBVAL_CHECK_OUTPUT
model = deep_mlp(6, 64)
x = minitorch.randn(128, 64, dtype=torch.float64)
loss = mem = None  # drop the graph of the previous section, which holds its model
states = {}
start = live_bytes()
loss = model(x).pow(2).mean()
states["after forward (loss alive)"] = live_bytes() - start, memory.saved_bytes(loss)
loss.backward(retain_graph=True)
states["after backward(retain_graph=True)"] = live_bytes() - start, memory.saved_bytes(loss)
loss.backward()
states["after a second backward()"] = live_bytes() - start, memory.saved_bytes(loss)
model.zero_grad()
loss = model(x).pow(2).mean()
del loss
states["forward, then del loss"] = live_bytes() - start, 0
for state, (alive, saved) in states.items():
    print(f"{state:36} allocated {kib(alive)}, saved by the graph {kib(saved)}")

# %% [markdown]
# After backward what remains is the gradients (one per parameter); after `del loss`
# nothing remains: no reference, no graph, no saved tensors. `saved_bytes` also counts
# the input `x`, which the first `Linear` saves but which existed before the forward
# pass: that is why it can exceed what the forward pass allocated.

# %% [markdown]
# ## 4. Not recording at all: `no_grad`, `inference_mode`, `detach`, `.item()`
#
# When no gradient is needed (evaluation, metrics, logging), do not build the graph:
#
# - `with minitorch.no_grad():` records nothing, so ops save nothing and each
#   intermediate dies as soon as the next op has used it;
# - `with minitorch.inference_mode():` does the same and also marks the results as
#   **inference tensors**, which stay restricted once the block is over (demonstrated
#   below);
# - `t.detach()` is a new tensor sharing `t`'s storage, cut from the graph; it does not
#   undo the recording that already happened;
# - `t.item()` turns a one-element tensor into a Python number, which holds no graph.
#
# Beware of look-alikes: `model.eval()` changes layers such as dropout but still records,
# and `torch.no_grad()` is PyTorch's switch: minitorch's ops do not read it (inside it,
# `minitorch.is_grad_enabled()` is still True). The peak of one forward pass of a minitorch
# model, and of the same model in PyTorch measured with the profiler of section 2:

# %%
# NBVAL_CHECK_OUTPUT
model = deep_mlp(8, 64)
x = minitorch.randn(256, 64, dtype=torch.float64)


def peak_of(run):
    # Bytes allocated at the peak of run(), on top of what was alive before.
    gc.collect()
    with track() as mem:
        run()
    return mem.peak_bytes - mem.start_bytes


def forward_in(context):
    def run():
        with context:
            return model(x).pow(2).mean().item()

    return run


peaks = {
    "grad mode on": peak_of(forward_in(contextlib.nullcontext())),
    "minitorch.no_grad()": peak_of(forward_in(minitorch.no_grad())),
    "minitorch.inference_mode()": peak_of(forward_in(minitorch.inference_mode())),
}
model.eval()
peaks["model.eval()"] = peak_of(forward_in(contextlib.nullcontext()))
model.train()
torch_model = torch.nn.Sequential(
    *[torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh()) for _ in range(8)]
).double()
torch_x = torch.randn(256, 64, dtype=torch.float64)
torch_peaks = {}
for name, context in (
    ("grad mode on", contextlib.nullcontext),
    ("torch.no_grad()", torch.no_grad),
    ("torch.inference_mode()", torch.inference_mode),
):
    with context():
        torch_peaks[name], _, _ = profiled_bytes(lambda: torch_model(torch_x).pow(2).mean().item())
for name, peak in peaks.items():
    print(f"minitorch, {name:28} peak {kib(peak)}")
for name, peak in torch_peaks.items():
    print(f"PyTorch,   {name:28} peak {kib(peak)}")
with torch.no_grad():
    print("inside torch.no_grad(): minitorch.is_grad_enabled() is", minitorch.is_grad_enabled())

# %%
fig, ax = plt.subplots(figsize=(7, 3))
labels = [f"minitorch: {n}" for n in peaks] + [f"PyTorch: {n}" for n in torch_peaks]
values = [p / 1024 for p in [*peaks.values(), *torch_peaks.values()]]
ax.barh(labels, values, color=["tab:blue"] * len(peaks) + ["tab:orange"] * len(torch_peaks))
ax.invert_yaxis()
ax.set_xlabel("peak of one forward pass (KiB, measured)")
plt.show()

# %% [markdown]
# An inference tensor is not barred from graphs. Outside inference mode it can be an
# **input** of a recorded op, as long as the op does not need to **save** it: `w + t`
# records (addition saves nothing), `w * t` raises, because the gradient of `w` needs `t`.
# It can also never require grad. PyTorch 2.13 and minitorch alike:

# %%
# NBVAL_CHECK_OUTPUT
for lib in (torch, minitorch):
    with lib.inference_mode():
        t = lib.ones(3)
    w = lib.ones(3, requires_grad=True)
    for text, op in (
        ("w + t", lambda w, t: w + t),
        ("w * t", lambda w, t: w * t),
        ("t.requires_grad_()", lambda w, t: t.requires_grad_()),
    ):
        try:
            result = op(w, t)
            outcome = f"records {result.grad_fn.name()}" if result.grad_fn else "works"
        except RuntimeError as error:
            outcome = f"RuntimeError: {str(error).split('.')[0]}"
        print(f"{lib.__name__:9} {text:19} {outcome}")

# %% [markdown]
# Nor can it be changed in place outside inference mode. PyTorch checks this after the
# write (2.13: the values have changed when the error arrives); minitorch raises the same
# error before it writes anything.
# `t.clone()` is an ordinary tensor that can do all three.

# %%
# NBVAL_CHECK_OUTPUT
with torch.inference_mode():
    t = torch.ones(3)
try:
    t.add_(1)
except RuntimeError as error:
    print("RuntimeError:", str(error).split(".")[0])
print("t is now", t.tolist(), "| t.clone().is_inference():", t.clone().is_inference())


# %% [markdown]
# ## 5. The classic leaks
#
# A memory leak in a training loop is a reference that outlives its iteration and keeps a
# graph (or just tensors) alive. The usual culprits:
#
# - `total_loss += loss`: `total_loss` becomes a tensor whose graph reaches every
#   iteration's loss;
# - `history.append(output)` or `losses.append(loss)`: each stored tensor keeps its own
#   graph, and its saved activations while backward has not freed them;
# - validation without `no_grad`: its graph is never backwarded, so its saved activations
#   stay as long as the loss tensor does.
#
# The loop below has all three. Memory after each iteration, measured:


# %%
def leaky_epoch(model, optimizer, batches, x_val, y_val):
    total = 0.0
    validation = []
    for x, y in batches:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        total += loss  # a tensor: its graph reaches every iteration
        validation.append(((model(x_val) - y_val) ** 2).mean())  # graph and all
    return total / len(batches), validation


def make_training(n_batches, seed=0):
    minitorch.manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1)
    ).double()
    optimizer = minitorch.optim.SGD(model.parameters(), lr=0.05)
    batches = [
        (minitorch.randn(16, 8, dtype=torch.float64), minitorch.randn(16, 1, dtype=torch.float64))
        for _ in range(n_batches)
    ]
    x_val = minitorch.randn(128, 8, dtype=torch.float64)
    y_val = minitorch.randn(128, 1, dtype=torch.float64)
    return model, optimizer, batches, x_val, y_val


def memory_after_each_count(epoch, counts):
    held = []
    for n in counts:
        model, optimizer, batches, x_val, y_val = make_training(n)
        start = live_bytes()
        result = epoch(model, optimizer, batches, x_val, y_val)
        held.append(live_bytes() - start)
        del result
    return held


counts = [1, 2, 4, 8]
leaky = memory_after_each_count(leaky_epoch, counts)
print("leaky loop, bytes left after n batches:", dict(zip(counts, leaky)))


# %% [markdown]
# ### What the storages do not show: the nodes
#
# Every figure so far counts **storages**. The graph is memory too: each node is a Python
# object that holds its edges, the shapes and dtypes of its inputs and outputs, and its
# saved-tensor records, close to a kilobyte that no count of storages sees. A node usually
# dies with its graph. `total += loss` keeps it alive: backward frees each step's saved
# tensors, so the storages stay flat, but `total` is a tensor whose graph reaches the nodes
# of every step so far.
#
# `memory.graph_bytes(t)` counts the bytes of the nodes behind `t`, and
# `memory.node_bytes(memory.live_nodes())` those of every node alive. The `total += loss`
# loop alone, against `total += loss.item()`, measured every 20 steps:


# %%
def train_with_running_total(steps, keep_graph, every=20):
    # Train on one batch for `steps` steps after a first one, adding each loss to a running
    # total: the loss tensor itself (keep_graph) or its value. Returns the total and, every
    # `every` steps, (step, storage bytes, node bytes) alive on top of those after step 0.
    model, optimizer, batches, _, _ = make_training(1)
    x, y = batches[0]
    total = 0.0
    points = []
    for step in range(steps + 1):
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        total += loss if keep_graph else loss.item()
        del loss
        if step % every == 0:
            gc.collect()
            nodes = memory.node_bytes(memory.live_nodes())
            points.append((step, memory.memory_allocated(), nodes))
    _, storage_start, nodes_start = points[0]
    return total, [(s, b - storage_start, n - nodes_start) for s, b, n in points]


leaky_total, leaky_points = train_with_running_total(200, keep_graph=True)
fixed_total, fixed_points = train_with_running_total(200, keep_graph=False)
for name, points in (("total += loss", leaky_points), ("total += loss.item()", fixed_points)):
    steps, storage, nodes = points[-1]
    print(f"{name:21} {steps} steps later: storages {storage:+d} B, nodes {nodes / 1024:+.1f} KiB")
leaky_nodes = len(memory.graph_nodes(leaky_total))
print(
    f"graph of the leaky total: {leaky_nodes} nodes, {memory.graph_bytes(leaky_total) / 1024:.1f}"
    f" KiB, {memory.graph_bytes(leaky_total) / 201:.0f} bytes per step"
)
del leaky_total  # and its graph

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 3.2), sharey=True)
panels = [(1, "storages: memory_allocated()"), (2, "nodes: node_bytes(live_nodes())")]
for ax, (column, title) in zip(axes, panels):
    for name, points, style, color in (
        ("total += loss", leaky_points, "o-", "tab:red"),
        ("total += loss.item()", fixed_points, "x--", "tab:green"),  # over the red where equal
    ):
        kib_more = [p[column] / 1024 for p in points]
        ax.plot([p[0] for p in points], kib_more, style, color=color, label=name)
    ax.set_title(title)
    ax.set_xlabel("training step")
axes[0].set_ylabel("KiB more than after step 0")
axes[1].legend()
plt.show()

# %% [markdown]
# `node_bytes` adds up `sys.getsizeof` of each node and of the objects it owns (NOTE [Node
# memory] in `minitorch/memory.py`; section 12 checks it against Python's `tracemalloc`).
# PyTorch's nodes are C++ objects, out of sight of Python's tools and of the profiler, which
# counts tensors. Its only outside figure is the process's resident memory, which grows once
# the allocator has used up the memory freed earlier. With this model, in a fresh process on
# this project's machine (PyTorch 2.13, CPU), 20,000 steps of `total += loss` grew it by
# 186 MB, about 9.3 KB per step, and 20,000 steps of `total += loss.item()` by 0.16 MB: the
# same order as minitorch's nodes. A count of storages sees none of it: count the nodes, or
# watch the process.

# %% [markdown]
# ### Reference cycles: what `del` does not free
#
# Python frees an object as soon as nothing refers to it, except the objects of a
# **reference cycle**, which refer to each other: they wait for the garbage collector (`gc`),
# which runs from time to time. A graph can be part of a cycle. A module that keeps its last
# output (`self.last_output = out`, for logging) refers to the graph; a hook on that output
# written as a lambda that uses `self` makes the graph refer to the module. After `del`,
# the module, its parameters and gradients, the output and its graph all stay allocated until
# the next collection. `gc.DEBUG_SAVEALL` makes the collector keep what it finds in
# `gc.garbage`, so that we can look at the cycle. Measured with `memory_allocated()`, the
# collector held off meanwhile so that it cannot run at a random moment:


# %%
# NBVAL_CHECK_OUTPUT
class Probe(nn.Module):
    # A Linear layer that keeps its last output and the norm of every gradient that reaches it.
    def __init__(self, width, keep_graph=True):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.norms = []
        self.keep_graph = keep_graph

    def forward(self, x):
        out = self.linear(x)
        self.last_output = out if self.keep_graph else out.detach()  # the graph, or values only
        out.register_hook(lambda grad: self.norms.append(grad.norm().item()))  # refers to self
        return out


def what_the_collector_finds(keep_graph):
    # Bytes still allocated after `del probe` and after a collection; what the collector found.
    gc.collect()
    gc.disable()
    start = memory.memory_allocated()
    probe = Probe(64, keep_graph).double()
    probe(x).tanh().sum().backward()
    del probe
    after_del = memory.memory_allocated() - start
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    found = collections.Counter(
        o.name().split("::")[-1] if isinstance(o, Node) else type(o).__name__
        for o in gc.garbage
        if isinstance(o, (nn.Module, minitorch.Tensor, Node))
    )
    gc.set_debug(0)
    gc.garbage.clear()
    gc.collect()  # now frees them
    gc.enable()
    return after_del, memory.memory_allocated() - start, sorted(found.items())


x = minitorch.randn(256, 64, dtype=torch.float64)
for keep_graph in (True, False):
    after_del, after_collect, found = what_the_collector_finds(keep_graph)
    kept = "out" if keep_graph else "out.detach()"
    print(f"self.last_output = {kept:13} after del {kib(after_del)}, after gc {kib(after_collect)}")
    print(f"    the collector found: {', '.join(f'{n} {k}' for k, n in found) or 'nothing'}")

# %% [markdown]
# Keeping `out.detach()` breaks the cycle: the module refers to values, not to the graph, so
# `del` frees everything at once. So does a hook that refers to what it needs
# (`norms = self.norms`, then `lambda grad: norms.append(...)`) rather than to `self`.
#
# In PyTorch the same cycle is worse: the hook is held by a C++ node, where Python's
# collector cannot follow references, so no collection ever frees it. PyTorch 2.13:


# %%
# NBVAL_CHECK_OUTPUT
class TorchProbe(torch.nn.Module):
    def __init__(self, width, keep_graph=True):
        super().__init__()
        self.linear = torch.nn.Linear(width, width)
        self.norms = []
        self.keep_graph = keep_graph

    def forward(self, x):
        out = self.linear(x)
        self.last_output = out if self.keep_graph else out.detach()
        out.register_hook(lambda grad: self.norms.append(grad.norm().item()))
        return out


for keep_graph in (True, False):
    probe = TorchProbe(8, keep_graph)
    probe(torch.randn(4, 8)).tanh().sum().backward()
    alive = weakref.ref(probe)  # does not keep it alive
    del probe
    gc.collect()
    kept = "out" if keep_graph else "out.detach()"
    print(f"self.last_output = {kept:13} after del and gc.collect(): alive = {alive() is not None}")

# %% [markdown] nbgrader={"grade_id": "ex2_train_epoch_statement", "locked": true}
# ### Exercise 2 (3 points): a training loop that does not leak
#
# Write `train_epoch(model, optimizer, batches, x_val, y_val)`, which does what
# `leaky_epoch` does without its leaks. For each `(x, y)` in `batches`: zero the
# gradients, compute the mean squared error of `model(x)` against `y`, backward,
# `optimizer.step()`, then the validation loss (mean squared error of `model(x_val)`
# against `y_val`). Return `(mean training loss, list of validation losses)`, all
# **Python floats**. The mean training loss is the mean of the batches' losses: each batch
# counts once, whatever its size (the last batch may be smaller).
#
# The grader measures memory while your loop runs and after it returns (holding what it
# returned): on 6 batches, neither may exceed what it is on 1 batch. It also counts the
# graph nodes alive at each `optimizer.step()`: they must not grow from batch to batch,
# as they do when a running total is a tensor, even one turned into a float at the end.


# %% nbgrader={"grade_id": "ex2_train_epoch", "solution": true}
def train_epoch(model, optimizer, batches, x_val, y_val):
    """One epoch of training that does not leak: the memory it leaves behind is the same after
    1 batch as after 100.

    For each `(x, y)` in `batches`: zero the gradients, compute the mean squared error of
    `model(x)` against `y`, backward, `optimizer.step()`, then the validation loss (mean squared
    error of `model(x_val)` against `y_val`). Returns `(mean training loss, list of validation
    losses)`, all Python floats; the mean training loss is the mean of the batch losses (each
    batch counts once, whatever its size).
    """
    ### BEGIN SOLUTION
    total = 0.0
    validation = []
    for x, y in batches:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        total += loss.item()
        with minitorch.no_grad():
            validation.append(((model(x_val) - y_val) ** 2).mean().item())
    return total / len(batches), validation
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex2_train_epoch_tests", "grade": true, "points": 3}
with exercise(2):
    model, optimizer, batches, x_val, y_val = make_training(4)
    mean, validation = train_epoch(model, optimizer, batches, x_val, y_val)
    assert type(mean) is float, f"the mean training loss must be a float, not {type(mean).__name__}"
    assert len(validation) == 4 and all(type(v) is float for v in validation), (
        f"validation: one Python float per batch, got {[type(v).__name__ for v in validation]}"
    )
    fixed = memory_after_each_count(train_epoch, counts)
    print("your loop, bytes left after n batches:", dict(zip(counts, fixed)))
    assert max(fixed) <= fixed[0], "memory grows with the number of batches"
    peaks = []
    for n in (1, 6):
        arguments = make_training(n)
        peaks.append(peak_of(lambda a=arguments: train_epoch(*a)))
    assert peaks[1] <= peaks[0] + 1024, (
        f"peak while training: {kib(peaks[0])} on 1 batch, {kib(peaks[1])} on 6:"
        " something from each iteration stays alive while the loop runs"
    )
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.memory import grade

grade.train_epoch(train_epoch)
### END HIDDEN TESTS

# %%
with exercise(2):
    fixed = memory_after_each_count(train_epoch, counts)  # your train_epoch, measured again
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(counts, [v / 1024 for v in leaky], "o-", color="tab:red", label="leaky_epoch")
    ax.plot(counts, [v / 1024 for v in fixed], "o-", color="tab:green", label="train_epoch")
    ax.set_xlabel("batches in the epoch")
    ax.set_ylabel("KiB left allocated (measured)")
    ax.legend()
    plt.show()


# %% [markdown] nbgrader={"grade_id": "ex3_evaluate_statement", "locked": true}
# ### Exercise 3 (2 points): evaluation without a graph
#
# Write `evaluate(model, batches)`: the mean over `batches` of each batch's mean squared
# error `((model(x) - y) ** 2).mean()`, as a Python float, **recording no graph**. Each
# batch counts once, whatever its size (the last batch may be smaller). Grad mode must be
# as it was when `evaluate` returns (use a `with` block). The grader measures
# your function's peak against evaluation without a graph, checks that nothing is left
# allocated afterwards and that no parameter got a `.grad`.


# %% nbgrader={"grade_id": "ex3_evaluate", "solution": true}
def evaluate(model, batches):
    """The mean over `batches` of each batch's mean squared error `((model(x) - y) ** 2).mean()`
    (each batch counts once, whatever its size), a Python float, computed without recording any
    graph (and leaving grad mode as it was)."""
    ### BEGIN SOLUTION
    losses = []
    with minitorch.inference_mode():
        for x, y in batches:
            losses.append(((model(x) - y) ** 2).mean().item())
    return sum(losses) / len(losses)
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex3_evaluate_tests", "grade": true, "points": 2}
with exercise(3):
    model = deep_mlp(8, 64)
    batches = [
        (
            minitorch.randn(256, 64, dtype=torch.float64),
            minitorch.randn(256, 64, dtype=torch.float64),
        )
        for _ in range(2)
    ]
    value = evaluate(model, batches)
    grad_mode_after = minitorch.is_grad_enabled()
    minitorch.set_grad_enabled(True)  # whatever evaluate did, the rest of the notebook records
    assert grad_mode_after, "grad mode must be on again after evaluate: use a `with` block"
    assert type(value) is float, f"return a Python float, not {type(value).__name__}"
    with_graph = peak_of(lambda: [((model(x) - y) ** 2).mean().item() for x, y in batches])
    yours = peak_of(lambda: evaluate(model, batches))
    print(f"peak with a graph {kib(with_graph)}, yours {kib(yours)}")
    assert yours < with_graph / 2, "your evaluation still records a graph"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.memory import grade

grade.evaluate(evaluate)
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Gradient checkpointing: memory for recomputation
#
# Between forward and backward a network of n layers holds n activations. **Gradient
# checkpointing** keeps only a few of them, the inputs of some *segments*, and runs a
# segment's forward again during backward, when its activations are needed. Gradients are
# identical; the price is one more forward pass.
#
# With n layers cut into s segments, forward keeps the s inputs, and backward recomputes
# one segment at a time (n / s activations): about s + n / s activations at once, which
# is smallest for s near the square root of n. Memory grows as the **square root** of the
# depth instead of linearly.
#
# `minitorch.utils.checkpoint.checkpoint(fn, *inputs, use_reentrant=False)` follows
# PyTorch's `torch.utils.checkpoint.checkpoint`. Timeline of
# the step from section 2, checkpointed in 4 segments of 3 blocks: the forward rises less,
# and backward shows four bumps, one per recomputed segment.
#
# `use_reentrant` chooses between PyTorch's two implementations. The **reentrant** one
# (`True`) runs `fn` inside a custom `Function` whose backward runs `fn` again and calls
# backward on it from inside the engine's own backward (it re-enters the engine): exercise 4
# below builds it. The **non-reentrant** one (`False`, the one PyTorch recommends) records
# `fn`'s graph as usual with saved-tensor hooks (section 10) that keep nothing and recompute
# on demand. minitorch has only the non-reentrant one and accepts either value. PyTorch 2.13
# still runs the reentrant one when the argument is left out, with a warning.

# %%
model = deep_mlp(12, 64)
x = minitorch.randn(256, 64, dtype=torch.float64)
segments = [nn.Sequential(*list(model)[i : i + 3]) for i in range(0, 12, 3)]
with track(timeline=True) as checkpointed:
    h = x
    for segment in segments:
        h = minitorch.utils.checkpoint.checkpoint(segment, h, use_reentrant=False)
    h.pow(2).mean().backward()
    del h
model.zero_grad()
with track(timeline=True) as plain:
    model(x).pow(2).mean().backward()
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.5), sharey=True)
memory.plot_timeline(plain, ax=left, title="plain")
memory.plot_timeline(checkpointed, ax=right, title="checkpointed, 4 segments")
plt.show()
plain_peak = plain.peak_bytes - plain.start_bytes
checkpointed_peak = checkpointed.peak_bytes - checkpointed.start_bytes
print(f"peak: plain {kib(plain_peak)}, checkpointed {kib(checkpointed_peak)}")


# %% [markdown]
# The reentrant variant has a trap. A `Function` records a node only if one of its
# **inputs** requires grad, and the first segment's input is usually data. Then nothing is
# recorded for that segment: its output does not require grad, and its parameters get no
# gradient, with only a warning. PyTorch 2.13, a two-segment model whose first segment is
# checkpointed:

# %%
# NBVAL_CHECK_OUTPUT
for reentrant in (True, False):
    torch.manual_seed(0)
    first = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh())
    second = torch.nn.Linear(8, 1)
    data = torch.randn(16, 4)  # does not require grad
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h = torch.utils.checkpoint.checkpoint(first, data, use_reentrant=reentrant)
    second(h).sum().backward()
    told = "; warns: " + str(caught[0].message) if caught else ""
    print(f"use_reentrant={reentrant}: first[0].weight.grad is", end=" ")
    print(f"{'None' if first[0].weight.grad is None else 'set'}{told}")

# %% [markdown]
# Had every segment been checkpointed, nothing at all would require grad and
# `loss.backward()` would raise. The usual fix is to give the `Function` an input that
# requires grad: a copy of the data, `data.detach().requires_grad_()`. Exercise 4 asks for it.

# %% [markdown]
# How can backward run a forward pass again? A custom `Function` decides what it saves.
# Its `forward` runs with recording **off** (as you saw in notebook 1), so whatever `fn`
# computes inside it builds no graph and saves nothing: only what `forward` passes to
# `ctx.save_for_backward` stays. Its `backward` may record and differentiate a graph of
# its own.

# %% [markdown] nbgrader={"grade_id": "ex4_checkpoint_statement", "locked": true}
# ### Exercise 4 (5 points): checkpoint, written as a Function
#
# Complete the `Function` `Checkpoint` and the function `checkpoint`, so that
# `checkpoint(fn, *inputs)` returns `fn(*inputs)` (one tensor) while keeping only `inputs`
# for backward:
#
# - `forward(ctx, fn, *inputs)`: remember `fn` on `ctx`, save the inputs, return
#   `fn(*inputs)`;
# - `backward(ctx, grad)`: make fresh leaves from the saved inputs (`x.detach()`, then
#   `requires_grad_(x.requires_grad)`: the recomputed graph must end there, not continue
#   into the outer graph), run `fn` on them again **under `minitorch.enable_grad()`**
#   (backward runs with grad mode off), backward through the result with `grad` (this
#   also accumulates into the parameters `fn` uses), and return one gradient per
#   argument of `forward`: `None` for `fn`, then each fresh leaf's `.grad`;
# - `checkpoint(fn, *inputs)`: `Checkpoint.apply(fn, *inputs)`, avoiding the reentrant trap
#   above: when no input requires grad, pass copies that do (`x.detach().requires_grad_()`)
#   instead, so that a node is recorded and `fn`'s parameters get their gradients. The
#   inputs are floating-point tensors.
#
# The grader runs a 16-block MLP as 4 checkpointed segments, once with an input that
# requires grad and once with data that does not, and checks identical gradients
# (parameters and input) and a lower measured peak than without checkpointing.


# %% nbgrader={"grade_id": "ex4_checkpoint", "solution": true}
class Checkpoint(minitorch.autograd.Function):
    """Run `fn` without saving anything inside it; recompute it in backward."""

    @staticmethod
    def forward(ctx, fn, *inputs):
        ### BEGIN SOLUTION
        # Recording is off inside forward: fn's ops build no graph and save nothing.
        ctx.fn = fn
        ctx.save_for_backward(*inputs)
        return fn(*inputs)
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad):
        ### BEGIN SOLUTION
        # Fresh leaves: the recomputed graph must stop here, not run on into the outer graph.
        inputs = [x.detach().requires_grad_(x.requires_grad) for x in ctx.saved_tensors]
        with minitorch.enable_grad():
            output = ctx.fn(*inputs)
        # Accumulates into the parameters used inside fn, and into the fresh leaves' .grad.
        output.backward(grad)
        return (None, *[x.grad for x in inputs])
        ### END SOLUTION


def checkpoint(fn, *inputs):
    """`fn(*inputs)` (one tensor out), keeping only `inputs` for backward, which runs `fn` again.
    Recorded even when no input requires grad, so that `fn`'s parameters get gradients."""
    ### BEGIN SOLUTION
    if not any(x.requires_grad for x in inputs):
        # Function.apply records only if an input requires grad: without one, fn's parameters
        # would get no gradient. Copies that require grad make it record.
        inputs = [x.detach().requires_grad_() for x in inputs]
    return Checkpoint.apply(fn, *inputs)
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex4_checkpoint_tests", "grade": true, "points": 5}
with exercise(4):
    model = deep_mlp(8, 32)
    x = minitorch.randn(64, 32, dtype=torch.float64, requires_grad=True)
    first, second = nn.Sequential(*list(model)[:4]), nn.Sequential(*list(model)[4:])
    second(first(x)).sum().backward()
    expected = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    out = None  # a graph left by an earlier run of this cell would be freed in the middle
    start = live_bytes()
    plain_out = second(first(x))
    plain_held = live_bytes() - start
    del plain_out
    start = live_bytes()
    out = checkpoint(second, checkpoint(first, x))
    held = live_bytes() - start
    assert out.grad_fn is not None, "checkpoint must return a tensor with a grad_fn"
    assert held < plain_held / 2, (
        f"after forward the checkpointed model holds {kib(held)}, the plain one"
        f" {kib(plain_held)}: keep only the inputs, not fn's graph"
    )
    out.sum().backward()
    got = [p.grad for p in model.parameters()] + [x.grad]
    assert all(g is not None for g in got), "some parameter or the input got no gradient"
    for (name, _), g, e in zip([*model.named_parameters(), ("x", x)], got, expected):
        assert same(g, e), f"the gradient of {name} differs from the plain model's"
    model.zero_grad()
    data = x.detach()  # does not require grad, as a batch of data
    out = checkpoint(first, data)
    assert out.grad_fn is not None, "on data that does not require grad, nothing was recorded"
    checkpoint(second, out).sum().backward()
    for (name, p), e in zip(model.named_parameters(), expected):
        assert p.grad is not None and same(p.grad, e), f"{name}.grad is wrong when x is data"
    print("gradients identical to the plain model, with an input that requires grad or data")

### BEGIN HIDDEN TESTS
from solutions.memory import grade

grade.checkpoint(checkpoint)
### END HIDDEN TESTS

# %% [markdown]
# ## 7. How many segments?
#
# `checkpoint_sequential(model, segments, x, use_reentrant=False)` cuts an `nn.Sequential`
# into `segments` chunks of `len(model) // segments` layers and checkpoints every chunk
# but the last, which runs normally. The s + n / s estimate is a guide; what counts is
# the measured peak, which also includes the gradients and the temporaries of backward.

# %% [markdown] nbgrader={"grade_id": "ex5_best_segments_statement", "locked": true}
# ### Exercise 5 (3 points): choose the segments by measuring
#
# Write `best_segments(model, x)`: the number of segments, from 1 to `len(model)` (both
# included), for which
# `checkpoint_sequential(model, segments, x, use_reentrant=False).sum().backward()`
# has the **lowest peak**, measured with `track()` (`peak_bytes - start_bytes`). Reset the
# gradients with `model.zero_grad()` before each measurement, so that every run starts
# alike; on ties, return the fewest segments (less recomputation). The grader measures
# every choice itself and checks that yours is the best, on models whose best choice is
# sometimes 1, sometimes `len(model)`, and sometimes tied.


# %% nbgrader={"grade_id": "ex5_best_segments", "solution": true}
def best_segments(model, x):
    """The number of segments, from 1 to `len(model)`, for which
    `checkpoint_sequential(model, segments, x, use_reentrant=False).sum().backward()` has the
    lowest peak memory, measured with `minitorch.memory.track()` (ties: the fewest segments).
    Reset the model's gradients to None before each measurement."""
    ### BEGIN SOLUTION
    peaks = []
    for segments in range(1, len(model) + 1):
        model.zero_grad()
        with track() as mem:
            checkpoint_sequential(model, segments, x, use_reentrant=False).sum().backward()
        peaks.append(mem.peak_bytes - mem.start_bytes)
    model.zero_grad()
    return 1 + peaks.index(min(peaks))
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex5_best_segments_tests", "grade": true, "points": 3}
with exercise(5):
    model = deep_mlp(6, 32)
    x = minitorch.randn(128, 32, dtype=torch.float64)
    choice = best_segments(model, x)
    assert isinstance(choice, int) and 1 <= choice <= 6, f"from 1 to 6 segments, not {choice!r}"
    print("best number of segments for 6 blocks:", choice)
    peaks = []
    for s in range(1, 7):
        model.zero_grad()
        step = lambda s=s: checkpoint_sequential(model, s, x, use_reentrant=False).sum().backward()
        peaks.append(peak_of(step))
    best = peaks.index(min(peaks)) + 1
    assert choice == best, (
        f"measured peaks {[kib(p) for p in peaks]}: the lowest is at {best}, you chose {choice}"
    )
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.memory import grade

grade.best_segments(best_segments)
### END HIDDEN TESTS

# %%
model = deep_mlp(12, 32)
x = minitorch.randn(128, 32, dtype=torch.float64)


def checkpointed_step(segments):
    checkpoint_sequential(model, segments, x, use_reentrant=False).sum().backward()


measured = []
for s in range(1, 13):
    model.zero_grad()
    measured.append(peak_of(lambda s=s: checkpointed_step(s)))
fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(range(1, 13), [p / 1024 for p in measured], "o-")
ax.axvline(math.sqrt(12), color="0.6", linestyle="--", label="sqrt(12)")
ax.set_xlabel("segments (12 blocks)")
ax.set_ylabel("peak KiB (measured)")
ax.legend()
plt.show()

# %% [markdown]
# From 7 segments on, every checkpointed chunk is a single block: a block's input is
# exactly what the block would have saved, so checkpointing it saves nothing, while the
# last chunk grows. The best choice depends on the model: measure it.

# %% [markdown]
# ## 8. Micro-batches: a big batch in small pieces
#
# The activations grow with the batch size. Gradients add up (notebook 2), so a big batch
# can run as k micro-batches, each with its own forward and backward, its graph freed
# before the next: the gradient is the same (weight each micro-batch's mean loss by its
# share of the batch) and the peak is that of one micro-batch. Measured peak of one step
# per micro-batch size:

# %%
model = nn.Sequential(
    nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 4)
).double()
inputs = minitorch.randn(96, 16, dtype=torch.float64)
targets = minitorch.randn(96, 4, dtype=torch.float64)
loss_fn = nn.MSELoss()
sizes = [1, 2, 4, 8, 16, 32, 64, 96]
step_peaks = []
for size in sizes:
    model.zero_grad()
    step_peaks.append(peak_of(lambda n=size: loss_fn(model(inputs[:n]), targets[:n]).backward()))
fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(sizes, [p / 1024 for p in step_peaks], "o-")
ax.set_xlabel("micro-batch size")
ax.set_ylabel("peak KiB of one step (measured)")
plt.show()

# %% [markdown]
# The line does not start at 0: the gradients and some temporaries cost the same for any
# size. One more detail matters for a budget: the first backward *creates* the `.grad`
# tensors, near its end, while later ones add into `.grad` tensors that exist from the
# start of the step. The same micro-batch, measured both ways:

# %%
# NBVAL_CHECK_OUTPUT
model.zero_grad()
no_gradients_yet = peak_of(lambda: loss_fn(model(inputs[:8]), targets[:8]).backward())
gradient_bytes = memory.storage_bytes([p.grad for p in model.parameters()])
gradients_there = peak_of(lambda: loss_fn(model(inputs[:8]), targets[:8]).backward())
print(f"no .grad yet:      peak {kib(no_gradients_yet)} above the start")
print(
    f".grad already there: peak {kib(gradients_there)} above a start that holds"
    f" {kib(gradient_bytes)} of .grad: {kib(gradients_there + gradient_bytes)} in all"
)


# %% [markdown] nbgrader={"grade_id": "ex6_step_within_budget_statement", "locked": true}
# ### Exercise 6 (3 points): a training step under a memory budget
#
# Write `step_within_budget(model, loss_fn, inputs, targets, budget)`: leave in every
# parameter's `.grad` the gradient of `loss_fn(model(inputs), targets)` (a mean over the
# batch), while memory never exceeds what it was when the call started by more than
# `budget` bytes. The grader measures your call with `track()` and picks budgets that the
# full batch exceeds.
#
# Open one `track()` block around the whole call: its `start_bytes` is where the budget
# starts, and `peak_bytes` of a nested `track()` block is a peak counted the same way.
# Reset the gradients, run one probe step (it creates the gradients), then measure the
# peak of a step on `inputs[:1]` and on `inputs[:2]`: the difference is the cost of one
# sample, and the largest micro-batch size that fits follows. Reset the gradients again,
# then run the micro-batches (`inputs.split(size)`), weighting each mean loss by
# `len(x) / len(inputs)`.


# %% nbgrader={"grade_id": "ex6_step_within_budget", "solution": true}
def step_within_budget(model, loss_fn, inputs, targets, budget):
    """Leave in each parameter's `.grad` the gradient of `loss_fn(model(inputs), targets)` (a
    mean over the batch), while the memory allocated during the call never exceeds what it was
    at the start by more than `budget` bytes.

    Split the batch into micro-batches small enough to fit. Measure first, inside one
    `track()` block around the whole call (its `start_bytes` is where the budget starts): once
    the gradients exist, the peak of one micro-batch step (`peak_bytes` of a nested `track()`)
    grows linearly with the micro-batch size, so two probes, of sizes 1 and 2, tell the largest
    size that fits. Reset the gradients to None before the real micro-batches.
    """

    ### BEGIN SOLUTION
    def peak(size):
        with track() as mem:
            loss_fn(model(inputs[:size]), targets[:size]).backward()
        return mem.peak_bytes

    with track() as call:
        model.zero_grad()
        peak(1)  # creates the gradients: from now on every micro-batch step looks alike
        one, two = peak(1), peak(2)
        per_sample = two - one
        size = max(1, min(len(inputs), (call.start_bytes + budget - one) // per_sample + 1))
        model.zero_grad()
        for x, y in zip(inputs.split(size), targets.split(size)):
            # Weight each micro-batch by its share of the batch: the last may be smaller.
            (loss_fn(model(x), y) * (len(x) / len(inputs))).backward()
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex6_step_within_budget_tests", "grade": true, "points": 3}
with exercise(6):
    model.zero_grad()
    loss_fn(model(inputs), targets).backward()
    expected = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    budget = step_peaks[3]  # what a micro-batch of 8 needed
    with track() as mem:
        step_within_budget(model, loss_fn, inputs, targets, budget)
    print(f"budget {kib(budget)}, peak {kib(mem.peak_bytes - mem.start_bytes)}")
    assert mem.peak_bytes - mem.start_bytes <= budget, "over the budget"
    for (name, p), e in zip(model.named_parameters(), expected):
        assert same(p.grad, e), f"{name}.grad differs from the full batch's gradient"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.memory import grade

grade.step_within_budget(step_within_budget)
### END HIDDEN TESTS

# %% [markdown]
# ## 9. Truncated backpropagation through time
#
# A recurrent network unrolled over T steps records T copies of its cell: the graph, and
# its memory, grows with the length of the sequence. **Truncated BPTT** backwards every k
# steps and then cuts the graph with `h = h.detach()`: the hidden state carries its
# *value* on, but gradients stop at the cut. Memory is bounded by k steps; the gradient
# ignores dependencies longer than k steps. Measured peak of full BPTT against truncated
# (k = 8):

# %%
# NBVAL_CHECK_OUTPUT
minitorch.manual_seed(0)
cell = nn.RNNCell(4, 32).double()


def full_bptt(xs, targets, h):
    loss = 0.0
    for t in range(len(xs)):
        h = cell(xs[t], h)
        loss = loss + ((h - targets[t]) ** 2).mean()
    loss.backward()


def truncated(xs, targets, h, k=8):
    loss = 0.0
    for t in range(len(xs)):
        h = cell(xs[t], h)
        loss = loss + ((h - targets[t]) ** 2).mean()
        if (t + 1) % k == 0:
            loss.backward()
            loss, h = 0.0, h.detach()


lengths = [8, 16, 32, 64]
bptt_peaks = {"full": [], "truncated, k=8": []}
for T in lengths:
    xs = minitorch.randn(T, 16, 4, dtype=torch.float64)
    targets = minitorch.randn(T, 16, 32, dtype=torch.float64)
    h0 = minitorch.zeros(16, 32, dtype=torch.float64)
    for name, run in (("full", full_bptt), ("truncated, k=8", truncated)):
        cell.zero_grad()
        bptt_peaks[name].append(peak_of(lambda f=run, xs=xs, ts=targets, h=h0: f(xs, ts, h)))
for name, peaks in bptt_peaks.items():
    print(f"{name:15}", ", ".join(f"T={T}: {p / 1024:.1f} KiB" for T, p in zip(lengths, peaks)))

# %%
fig, ax = plt.subplots(figsize=(7, 3))
for name, peaks in bptt_peaks.items():
    ax.plot(lengths, [p / 1024 for p in peaks], "o-", label=name)
ax.set_xlabel("sequence length T")
ax.set_ylabel("peak KiB (measured)")
ax.legend()
plt.show()


# %% [markdown] nbgrader={"grade_id": "ex7_truncated_bptt_statement", "locked": true}
# ### Exercise 7 (3 points): truncated BPTT
#
# Write `truncated_bptt(cell, xs, targets, h0, k)`. Starting from `h = h0`, step
# `h = cell(xs[t], h)` along the sequence; the loss of step t is
# `((h - targets[t]) ** 2).mean()`. Reset the cell's gradients to None first. After every
# k steps, **and after the last step** (the last chunk may be shorter), backward the sum
# of the chunk's losses and cut the graph with `detach`. Return the sum of all the step
# losses as a Python float; the gradients stay in the cell's parameters.
#
# The grader compares losses and gradients with the reference for several lengths and k,
# and checks that neither the peak nor the number of graph nodes alive grows with the length
# of the sequence. Backward frees a chunk's saved tensors but not its nodes: a tensor that
# still refers to a chunk's loss (a running total `total = total + chunk_loss`) keeps them.


# %% nbgrader={"grade_id": "ex7_truncated_bptt", "solution": true}
def truncated_bptt(cell, xs, targets, h0, k):
    """Truncated backpropagation through time over the sequence `xs` (steps along dim 0).

    `h = cell(xs[t], h)` from `h0`; the loss of step t is `((h - targets[t]) ** 2).mean()`.
    Reset the cell's gradients to None, then after every k steps (and after the last step)
    backward the sum of the chunk's losses and cut the graph with `detach`, so that memory
    stays bounded however long the sequence. Returns the sum of all losses, a Python float.
    """
    ### BEGIN SOLUTION
    cell.zero_grad()
    h = h0
    total = 0.0
    chunk_loss = 0.0
    for t in range(len(xs)):
        h = cell(xs[t], h)
        chunk_loss = chunk_loss + ((h - targets[t]) ** 2).mean()
        if (t + 1) % k == 0 or t + 1 == len(xs):
            chunk_loss.backward()
            total += chunk_loss.item()
            chunk_loss = 0.0
            h = h.detach()
    return total
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex7_truncated_bptt_tests", "grade": true, "points": 3}
with exercise(7):
    xs = minitorch.randn(12, 16, 4, dtype=torch.float64)
    targets = minitorch.randn(12, 16, 32, dtype=torch.float64)
    h0 = minitorch.zeros(16, 32, dtype=torch.float64)
    total = truncated_bptt(cell, xs, targets, h0, k=12)  # one chunk: plain BPTT
    yours = [p.grad.clone() for p in cell.parameters()]
    cell.zero_grad()
    full_bptt(xs, targets, h0)
    for g, e in zip(yours, cell.parameters()):
        assert same(g, e.grad), "with k = T, the gradients must be those of full BPTT"
    assert type(total) is float, "return a Python float"
    short = peak_of(lambda: truncated_bptt(cell, xs[:8], targets[:8], h0, k=4))
    long = peak_of(lambda: truncated_bptt(cell, xs, targets, h0, k=4))
    print(f"peak on 8 steps {kib(short)}, on 12 steps {kib(long)}")
    assert long <= 1.15 * short + 2048, "memory grows with the sequence"
    uneven = truncated_bptt(cell, xs, targets, h0, k=5)  # chunks of 5, 5 and 2 steps
    assert math.isclose(uneven, total), (
        f"k = 5 on 12 steps: the total loss is {uneven}, with k = 12 it is {total}:"
        " the losses do not depend on k (did you backward the last, shorter chunk?)"
    )
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.memory import grade

grade.truncated_bptt(truncated_bptt)
### END HIDDEN TESTS

# %% [markdown]
# ## 10. Saved-tensor hooks: choose how saved tensors are stored
#
# `with saved_tensors_hooks(pack, unpack):` changes what the graph keeps: whenever an op
# saves a tensor, the graph stores `pack(tensor)` instead, and backward calls `unpack` on
# it to get a tensor back. `minitorch.autograd.graph.save_on_cpu()` uses this to keep
# saved tensors in host memory while the GPU computes; `checkpoint` uses it to keep
# nothing at all. Packing every saved tensor to **half precision** (float16, 2 bytes per
# number) looks like an easy way to halve the saved bytes. Measured:


# %%
# NBVAL_CHECK_OUTPUT
def naive_pack(tensor):
    return tensor.dtype, tensor.half()


def naive_unpack(packed):
    dtype, half = packed
    return half.to(dtype)


model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 8))
x = minitorch.randn(512, 16)
plain = memory.saved_bytes(model(x).pow(2).mean())
packed_ids = []


def counting_pack(tensor):
    packed_ids.append(id(tensor))
    return naive_pack(tensor)


with saved_tensors_hooks(counting_pack, naive_unpack):
    loss = model(x).pow(2).mean()
print(f"saved without hooks {kib(plain)}, with naive half hooks {kib(memory.saved_bytes(loss))}")
print(f"{len(packed_ids)} saves of {len(set(packed_ids))} distinct tensors")


# %% [markdown]
# Compare the two figures. Why so close? `pack` runs **once per save** (count the saves
# and the distinct tensors above): a `Tanh` output, saved by the `Tanh` node and by the
# next `Linear`, becomes two half copies, together as big as the original they replace.
# And the weights, saved by every `Linear`, were not counted before (parameters are
# alive anyway), but their copies are new memory. Half precision also changes the
# numbers: float16 keeps about 3 significant digits, enough for saved activations, as
# the gradient check of the exercise below measures.

# %% [markdown] nbgrader={"grade_id": "ex8_half_precision_hooks_statement", "locked": true}
# ### Exercise 8 (3 points): half-precision storage that really halves
#
# Write `half_precision_hooks()`, returning `saved_tensors_hooks(pack, unpack)` for two
# functions you define inside it:
#
# - `pack` keeps a **leaf** (a parameter or an input) as it is; any other tensor becomes
#   one float16 copy, made the first time that tensor is packed and **reused** when it is
#   packed again. Remember the copies in a dict by `id(tensor)`, and **forget a copy when
#   its tensor dies**: `weakref.finalize(tensor, copies.pop, id(tensor), None)` calls
#   `copies.pop(id(tensor), None)` then. The graph keeps its own reference to a copy for as
#   long as it needs it; your dict must not, or the copies of every step pile up while the
#   hooks are reused (and the id of a dead tensor is soon another tensor's). Never keep a
#   strong reference to the original either: that would keep it alive;
# - `unpack` gives backward the tensor back in its **original dtype**.
#
# The grader measures, on float32 and float64 MLPs, the saved bytes and the memory the
# graph holds: at most 0.6x of those without hooks, with gradients within a relative
# error of 1e-2. It also calls your `pack` on a leaf and twice on another tensor, and runs
# several training steps with the same hooks: what they hold once a step's graph is gone
# must not grow from step to step.


# %% nbgrader={"grade_id": "ex8_half_precision_hooks", "solution": true}
def half_precision_hooks():
    """Saved-tensor hooks that keep saved activations in half precision; backward gets them
    back in their original dtype.

    Returns `saved_tensors_hooks(pack, unpack)`. Leaves (parameters, inputs) are kept as they
    are: they are alive anyway. Any other tensor is stored as one float16 copy, made the first
    time it is packed and reused when the same tensor is saved again (one op's output is often
    saved by the next op too). Remember the copy by the tensor's `id` and forget it when the
    tensor dies (`weakref.finalize`): the graph holds the copy as long as it needs it, and ids
    are reused once a tensor dies. Never keep a strong reference to the original.
    """
    ### BEGIN SOLUTION
    copies = {}  # id(tensor) -> (its dtype, its float16 copy), while the tensor lives

    def pack(tensor):
        if tensor.is_leaf:
            return tensor
        key = id(tensor)
        if key not in copies:
            copies[key] = (tensor.dtype, tensor.half())
            # When the tensor dies, forget its copy: the graph holds its own reference to
            # the copy, and the id is free for the next tensor that gets it.
            weakref.finalize(tensor, copies.pop, key, None)
        return copies[key]

    def unpack(packed):
        if isinstance(packed, tuple):
            dtype, half = packed
            return half.to(dtype)
        return packed

    return saved_tensors_hooks(pack, unpack)
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex8_half_precision_hooks_tests", "grade": true, "points": 3}
with exercise(8):
    model.zero_grad()
    loss = None  # the demo's graph (naive half copies) would be freed in the middle of a measure
    start = live_bytes()
    plain_loss = model(x).pow(2).mean()
    plain_held = live_bytes() - start
    del plain_loss
    hooks = half_precision_hooks()  # kept, as a training loop that reuses them would
    start = live_bytes()
    with hooks:
        loss = model(x).pow(2).mean()
    held = live_bytes() - start
    halved = memory.saved_bytes(loss)
    print(f"saved without hooks {kib(plain)}, with yours {kib(halved)}")
    assert halved <= 0.6 * plain, f"{halved / plain:.2f}x of the saved bytes, at most 0.6x expected"
    assert held <= 0.6 * plain_held, (
        f"the graph holds {kib(held)} with your hooks, {kib(plain_held)} without:"
        " is an original tensor still referenced?"
    )
    try:
        loss.backward()
    except RuntimeError as error:
        if "dtype" not in str(error):
            raise
        hint = "does unpack give the tensor back in its original dtype?"
        raise AssertionError(f"backward: {error}: {hint}") from None
    with_hooks = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).pow(2).mean().backward()
    for g, p in zip(with_hooks, model.parameters()):
        error = ((g - p.grad).norm() / p.grad.norm()).item()
        assert g.dtype == p.dtype, f"gradient of dtype {g.dtype}, expected {p.dtype}"
        assert error < 1e-2, f"relative gradient error {error:.3g}, at most 1e-2 expected"
    inputs = [minitorch.randn(512, 16) for _ in range(3)]
    left = []  # allocated after each step with the same hooks, once the step's graph is gone
    for batch in inputs:
        model.zero_grad()
        with hooks:
            loss = model(batch).pow(2).mean()
        loss.backward()
        loss = None
        left.append(live_bytes())
    assert left[-1] <= left[0], (
        f"{kib(left[-1] - left[0])} more allocated after 3 steps with the same hooks than after 1:"
        " do your hooks keep the copies of tensors that are gone?"
    )
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.memory import grade

grade.half_precision_hooks(half_precision_hooks)
### END HIDDEN TESTS

# %% [markdown]
# Half precision can also hold the **parameters** themselves: `model.half()` halves
# their storage (measured below). Training entirely in float16 loses small updates and
# can overflow, which is why mixed-precision training keeps a float32 copy of the weights
# and scales the loss; storing only the saved activations in half precision, as in
# exercise 8, is the gentler trade.

# %%
# NBVAL_CHECK_OUTPUT
for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
    model.to(dtype)
    print(f"parameters in {str(dtype):15} {kib(memory.storage_bytes(model.parameters()))}")
model.float()

# %% [markdown]
# ## 11. Mixed precision: activations born in half precision
#
# Exercise 8 converts saved tensors to float16 after the fact. Mixed-precision training
# makes them half precision from the start: PyTorch's `torch.autocast` runs each matrix
# product in float16 (on GPUs) or bfloat16 (on CPUs), casting its input and the float32
# weights on the way in, so the activations, and what the graph saves of them, take 2
# bytes per number. The parameters stay float32, the **master weights**: each cast is a
# recorded op, so backward carries the gradient back through it into a float32 `.grad`.
# minitorch has no autocast; a forward function that casts around each `Linear` does the
# same. Saved bytes of one forward pass of the same MLP, in both libraries:


# %%
# NBVAL_CHECK_OUTPUT
def forward_autocast(model, x, dtype):
    # Autocast by hand: each Linear runs on `dtype` copies of its input, weight and bias, the
    # other layers on what they get; the output goes back to float32 for the loss.
    h = x
    for layer in model:
        if isinstance(layer, nn.Linear):
            h = nn.functional.linear(h.to(dtype), layer.weight.to(dtype), layer.bias.to(dtype))
        else:
            h = layer(h)
    return h.float()


def torch_saved_bytes(model, run):
    # What PyTorch's graph saves while run() records it, read with PyTorch's own hooks:
    # distinct storages, each once, parameters left out (as memory.saved_bytes does).
    sizes = {}

    def pack(t):
        sizes[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        run()
    parameters = {p.untyped_storage().data_ptr() for p in model.parameters()}
    return sum(n for ptr, n in sizes.items() if ptr not in parameters)


minitorch.manual_seed(0)
mlp = nn.Sequential(
    nn.Linear(64, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 10)
)
x = minitorch.randn(512, 64)
torch_mlp = torch.nn.Sequential(
    torch.nn.Linear(64, 256),
    torch.nn.Tanh(),
    torch.nn.Linear(256, 256),
    torch.nn.Tanh(),
    torch.nn.Linear(256, 10),
)
with torch.no_grad():  # the same weights and input in PyTorch
    for theirs, ours in zip(torch_mlp.parameters(), mlp.parameters()):
        theirs.copy_(torch.tensor(ours.tolist()))
torch_x = torch.tensor(x.tolist())


def torch_autocast_loss():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return torch_mlp(torch_x).float().pow(2).mean()


mixed = {
    "minitorch, float32": memory.saved_bytes(mlp(x).pow(2).mean()),
    "minitorch, bfloat16 by hand": memory.saved_bytes(
        forward_autocast(mlp, x, torch.bfloat16).pow(2).mean()
    ),
    "minitorch, float16 by hand": memory.saved_bytes(
        forward_autocast(mlp, x, torch.float16).pow(2).mean()
    ),
    "PyTorch, float32": torch_saved_bytes(torch_mlp, lambda: torch_mlp(torch_x).pow(2).mean()),
    "PyTorch, autocast bfloat16": torch_saved_bytes(torch_mlp, torch_autocast_loss),
}
for name, saved in mixed.items():
    ratio = saved / mixed[name.split(",")[0] + ", float32"]
    print(f"{name:28} saves {kib(saved)}, {ratio:.2f}x of float32")

# %% [markdown]
# Not quite half. The tanh outputs and the input batch are halved, but each `Linear` whose
# input needs a gradient also saves its half copy of the weight (2 x 256 x 256 + 2 x 10 x
# 256 bytes, 133 KiB), which is new memory: in float32 the graph saved the weight itself,
# which is alive anyway. The larger the batch, the more the activations dominate and the
# closer the ratio comes to 0.5. minitorch by hand and PyTorch's autocast save the same
# bytes.
#
# What it costs is **precision**. bfloat16 keeps float32's range but only 8 significant
# bits (2 to 3 decimal digits); float16 keeps 11 bits but overflows above 65504 and rounds
# gradients below about 6e-8 to zero, which is why float16 training on GPUs scales the loss
# (`torch.amp.GradScaler`). The gradients of this step, against float64:

# %%
minitorch.manual_seed(1)
targets = minitorch.randn(512, 10)
mlp64 = copy.deepcopy(mlp).double()
mlp64(x.double()).sub(targets.double()).pow(2).mean().backward()
exact = [p.grad for p in mlp64.parameters()]
for name, dtype in (("float32", None), ("bfloat16", torch.bfloat16), ("float16", torch.float16)):
    mlp.zero_grad()
    out = mlp(x) if dtype is None else forward_autocast(mlp, x, dtype)
    out.sub(targets).pow(2).mean().backward()
    error = max(
        ((p.grad.double() - e).norm() / e.norm()).item() for p, e in zip(mlp.parameters(), exact)
    )
    print(
        f"{name:9} activations: gradients in {mlp[0].weight.grad.dtype},"
        f" largest relative error {error:.0e}"
    )

# %% [markdown]
# A few 1e-3 instead of a few 1e-7: plenty for a gradient step, whose direction matters
# more than its last digits. The **weights** are another matter, and the reason they stay
# float32. An update is usually tiny next to the weight it changes, and just below 1.0 the
# bfloat16 numbers are 2^-8 apart (float16: 2^-11), so a half-precision weight of 1.0 does
# not move by 1e-4:

# %%
# NBVAL_CHECK_OUTPUT
for dtype in (torch.float32, torch.bfloat16, torch.float16):
    weight = minitorch.ones(1, dtype=dtype)
    print(f"{str(dtype):15} 1.0 - 0.0001 = {(weight - 1e-4).item():.7f}")

# %% [markdown]
# So mixed precision keeps float32 master weights and optimizer state, runs the products on
# half-precision copies, and saves half-precision activations: a little under half the
# saved bytes here. On a GPU the half-precision products are also much faster (tensor
# cores); this notebook measures only the memory.

# %% [markdown]
# ## 12. Appendix: is `node_bytes` right?
#
# `node_bytes` adds up `sys.getsizeof` of each node and of the objects it owns (section 5).
# Python's `tracemalloc` sees every allocation Python makes; it slows the program down, so it
# runs only for 100 steps of `total += loss` here:

# %%
gc.collect()
nodes_before = memory.node_bytes(memory.live_nodes())
tracemalloc.start()
traced_before = tracemalloc.get_traced_memory()[0]
checked_total, _ = train_with_running_total(100, keep_graph=True, every=100)
gc.collect()
traced = tracemalloc.get_traced_memory()[0] - traced_before
tracemalloc.stop()
counted = memory.node_bytes(memory.live_nodes()) - nodes_before
print(f"101 steps of total += loss: node_bytes {counted / 1024:.0f} KiB more,", end=" ")
print(f"tracemalloc {traced / 1024:.0f} KiB more (ratio {counted / traced:.2f})")
del checked_total

# %% [markdown]
# The count is about a tenth lower: `tracemalloc` also sees the model and the batch that
# `train_with_running_total` made, and the allocator's rounding.

# %% [markdown]
# ## Summary
#
# - An op saves what its local derivative needs: inputs (`mul`, `matmul`, `sin`), its
#   result (`exp`, `tanh`, `relu`) or nothing (`add`, `sum`). In a network that means one
#   activation per layer; count **storages**, each once.
# - Memory rises through the forward pass and falls through backward, which frees saved
#   tensors node by node. `retain_graph=True` and any reference to an output keep them.
# - Record nothing you will not differentiate: `no_grad` / `inference_mode` for
#   evaluation, `.item()` for logging; `model.eval()` and `detach()` afterwards do not
#   stop the recording.
# - Leaks are references that outlive their iteration: running totals of loss tensors,
#   stored outputs, validation graphs. A module that keeps its output, with a hook that
#   refers to the module, makes a cycle that `del` does not free (in PyTorch, nothing does):
#   keep `out.detach()`.
# - `torch.profiler.profile(profile_memory=True)` shows PyTorch's allocations op by op, and
#   its peak; it does not see the graph's nodes.
# - Checkpointing keeps segment inputs and recomputes the rest: about the square root of
#   the depth in memory for one more forward pass. Measure to choose the segments. Pass
#   `use_reentrant=False`: the reentrant variant records nothing for a segment whose inputs
#   do not require grad, and its parameters get no gradient.
# - Micro-batches bound the peak by the micro-batch size with the same gradient;
#   truncated BPTT bounds it by k steps, changing the gradient on purpose.
# - Saved-tensor hooks decide how saved tensors are stored: offloaded, recomputed or in
#   half precision; pack each tensor once and keep no reference to the original.
# - The nodes are memory too, outside every storage: a graph kept by `total += loss` grows by
#   kilobytes per step while `memory_allocated()` stays flat. `graph_bytes` counts them.
# - Mixed precision computes and saves activations in bfloat16 or float16 (a little under
#   half the saved bytes, with 2 to 3 digits of precision) and keeps float32 master weights,
#   which half precision could not update by small steps.
