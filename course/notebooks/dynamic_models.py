# ---
# jupyter:
#   jupytext:
#     formats: py:percent,../source/dynamic_models//ipynb
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
# # Notebook 3: dynamic models, graphs that change with every input
#
# In notebooks 1 and 2 the graph was recorded while the forward pass ran, and backward
# walked it. Nothing forced the graph to be the same from one call to the next: `forward`
# is plain Python, so an `if`, a `for` or a `while` that looks at the data decides which
# operations get recorded. This notebook is about models that use that freedom.
#
# After this notebook you will be able to:
#
# - write `forward` with Python control flow (branches, loops, data-dependent `while`
#   loops with a step limit) and say which parameters receive gradients;
# - share one layer between several places of a model, and route each sample of a batch
#   through its own branch, vectorized with masks;
# - batch sequences of different lengths in three ways (a loop over samples, padding with
#   masks, packing) and measure what each costs;
# - recurse over a tree that is different for every sample;
# - avoid the classic mistakes: a branch under `no_grad` inside `forward`, layers created
#   inside `forward`, layers kept in a plain Python list, and forgetting that a saved model
#   is its parameters, not its code.
#
# Everything runs on **PyTorch** and on **minitorch**, this course's from-scratch autograd
# library, side by side. The models you write are minitorch modules (`nn` is
# `minitorch.nn` below); the graders set their weights and compare values and gradients
# with the expected ones.
#
# There are **7 graded exercises (25 points)**. Each has visible tests you can run (plain
# asserts that say what went wrong); more tests run when your notebook is graded. Write
# your answers where it says `# YOUR CODE HERE` and delete the `raise NotImplementedError()`.
# "Run All" runs every cell: a test or demo whose exercise is not written yet says so in one
# line and lets the rest of the notebook run.

# %%
import contextlib
import io
import os
import random
import tempfile
import time

import matplotlib.pyplot as plt
import torch

import minitorch
from minitorch import nn
from minitorch.datasets import (
    DataLoader,
    ExprTree,
    make_expression_trees,
    make_sequences,
    make_spirals,
    pad_collate,
)
from minitorch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from minitorch.notebook import exercise
from minitorch.viz import compare

torch.manual_seed(0)
minitorch.manual_seed(0)


def count_nodes(tensor):
    """The number of nodes in the graph behind `tensor` (an iterative walk)."""
    seen, to_visit = set(), [tensor.grad_fn]
    while to_visit:
        node = to_visit.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        to_visit.extend(child for child, _ in node.next_functions)
    return len(seen)


def close(a, b, tol=1e-6):
    """True if two tensors (PyTorch or minitorch) hold the same values."""
    return torch.allclose(torch.tensor(a.tolist()), torch.tensor(b.tolist()), atol=tol)


# %% [markdown]
# ## 1. Control flow in `forward`: a new graph for every input
#
# The recorder sees operations, not code. An `if` that is not taken records nothing; a
# loop that runs 3 times records its body 3 times. Below, `shrink` applies a layer until
# the vector is short enough. How often depends on the input, so a `while` over data
# needs a **step limit**: nothing else guarantees that it ends.


# %%
# NBVAL_CHECK_OUTPUT
def shrink(lib, x, weight, max_steps=10):
    h, steps = x, 0
    while h.norm() > 1.0 and steps < max_steps:  # the data decides how often
        h = h * weight
        steps += 1
    return h.sum(), steps


def shrink_inputs(lib):
    weight = lib.tensor([0.5, 0.6], requires_grad=True)
    for values in ([0.1, 0.2], [3.0, 4.0], [30.0, 40.0], [300.0, 400.0]):
        x = lib.tensor(values, requires_grad=True)
        out, steps = shrink(lib, x, weight)
        out.backward()
        print(
            f"|x| = {x.norm().item():6.2f}: {steps:2d} steps, {count_nodes(out):2d} nodes, "
            f"weight.grad {'None' if weight.grad is None else 'a tensor'}"
        )
        weight.grad = None


compare(shrink_inputs, (torch, minitorch))


# %% [markdown]
# The first input is already short: the loop never runs, the graph does not contain
# `weight`, and backward leaves `weight.grad` at None. Longer inputs build longer
# graphs, one `MulBackward0` node per iteration, until the step limit stops the last
# one. There is nothing to declare in advance: the graph *is* the record of what
# happened this time.

# %% [markdown]
# ## 2. Which parameters get a gradient?
#
# A parameter receives a gradient only if the pass used it. Below, a model with two
# branches picks one by the sign of the input's sum. Watch `.grad` of the branch that
# was **not** taken, over three passes without `zero_grad()` in between:
#
# 1. only `pos` runs: `neg.weight.grad` is None (never used so far);
# 2. only `neg` runs: now it is a tensor;
# 3. only `pos` runs again: `neg.weight.grad` **stays** the tensor of pass 2. It is not
#    updated (pass 3 did not use `neg`), it is just old.


# %%
# NBVAL_CHECK_OUTPUT
def two_branches(lib):
    lib.manual_seed(0)
    return lib.nn.ModuleDict({"pos": lib.nn.Linear(2, 1), "neg": lib.nn.Linear(2, 1)})


def run_branch(model, x):
    branch = model["pos"] if x.sum() > 0 else model["neg"]
    return branch(x).sum()


def grad_state(p):
    return (
        "None" if p.grad is None else f"tensor {[round(v, 3) for v in p.grad.flatten().tolist()]}"
    )


def three_passes(lib):
    model = two_branches(lib)
    for x in ([1.0, 2.0], [-1.0, -3.0], [2.0, 1.0]):
        run_branch(model, lib.tensor(x)).backward()
        print(f"x = {x}: neg.weight.grad = {grad_state(model['neg'].weight)}")


compare(three_passes, (torch, minitorch))

# %% [markdown]
# An optimizer skips parameters whose `.grad` is None and steps the ones that hold a
# tensor, even an old one: call `zero_grad()` before every step. Notebook 1 showed what
# `zero_grad(set_to_none=False)` and momentum do to a branch that no sample used.

# %% [markdown]
# The branch can just as well be chosen by chance. `DynamicNet` below draws its number of
# hidden layers, 0 to 3, for every batch it is called on (with a seeded `random.Random`,
# so that PyTorch and minitorch draw the same depths). Each depth has its **own** layer in
# an `nn.ModuleList`. PyTorch's classic DynamicNet example reuses one hidden layer up to 3
# times instead (that is weight sharing, section 3); separate layers let each layer's
# `.grad` show which depths a step reached. With `zero_grad()` before every step, a layer
# the step did not reach has `.grad` None and the optimizer leaves it alone.


# %%
# NBVAL_CHECK_OUTPUT
def dynamic_net(lib):
    """The class DynamicNet on `lib.nn.Module`: the same code for PyTorch and minitorch."""

    class DynamicNet(lib.nn.Module):
        """input -> 0 to 3 hidden layers, drawn at every call -> output."""

        def __init__(self, seed):
            super().__init__()
            self.input = lib.nn.Linear(2, 4)
            self.hidden = lib.nn.ModuleList([lib.nn.Linear(4, 4) for _ in range(3)])
            self.output = lib.nn.Linear(4, 1)
            self.coin = random.Random(seed)
            self.depth = 0

        def forward(self, x):
            self.depth = self.coin.randint(0, 3)  # a new draw for every batch
            h = self.input(x).relu()
            for layer in self.hidden[: self.depth]:
                h = layer(h).relu()
            return self.output(h)

    return DynamicNet


def coin_flip_steps(lib):
    lib.manual_seed(0)
    model = dynamic_net(lib)(seed=20)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
    x, y = lib.tensor([[1.0, -1.0], [0.5, 2.0]]), lib.tensor([[1.0], [0.0]])
    print("step depth hidden.0 hidden.1 hidden.2")
    for step in range(5):
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
        grads = ["None" if layer.weight.grad is None else "tensor" for layer in model.hidden]
        print(f"{step:4d} {model.depth:5d} " + " ".join(f"{g:>8}" for g in grads))
    keys = list(model.state_dict())
    print(f"state_dict: {len(keys)} tensors")
    for weight, bias in zip(keys[::2], keys[1::2]):
        print(f"  {weight}, {bias}")


compare(coin_flip_steps, (torch, minitorch))

# %% [markdown]
# The `state_dict` holds **every** layer, taken or not: `hidden.2` was never reached in
# these five steps, and it is saved all the same, with its initial random weights. The
# model owns all its layers; a batch only decides which of them it uses. The coin is not a
# parameter, so it is not saved: a loaded model draws its depths anew.

# %% [markdown]
# ### A branch under `no_grad` cuts the layers before it off
#
# `with no_grad():` inside `forward` does not skip one layer's gradient: nothing computed
# in the block is recorded, so its result has no `grad_fn` and backward treats it as a
# constant. Every layer before the block is cut off from the loss. Below, the author
# meant "`refine` is not trained, so why record it?" and ran the residual branch
# `h + refine(h)` under `no_grad`. Backward then reaches `head` only: `encoder` gets no
# gradient either, although the skip connection `h` does not even pass through `refine`.
# Nothing fails, and the loss still goes down, because `head` alone learns on features
# that never change: that is what makes this bug easy to miss.
#
# The fix, when a layer must not be trained, is to **freeze its parameters**
# (`refine.requires_grad_(False)`) and leave the graph alone. The gradient then flows
# through `refine` and around it into `encoder`, and `refine` gets none. (`no_grad` inside
# `forward` is right only for values that backward must treat as constants.)


# %%
def refiner(lib):
    """The class Refiner on `lib.nn.Module`: encoder, a residual branch `refine`, head."""

    class Refiner(lib.nn.Module):
        def __init__(self, bug):
            super().__init__()
            self.encoder = lib.nn.Linear(2, 16)
            self.refine = lib.nn.Linear(16, 16)
            self.head = lib.nn.Linear(16, 1)
            self.bug = bug

        def forward(self, x):
            h = self.encoder(x).tanh()
            if self.bug:
                with lib.no_grad():  # "refine is not trained: why record it?"
                    h = h + self.refine(h).tanh()
            else:
                h = h + self.refine(h).tanh()
            return self.head(h)

    return Refiner


GRID = [[a / 4, b / 4] for a in range(-8, 9, 2) for b in range(-8, 9, 2)]  # 81 points
refine_losses = {}


def no_grad_branch(lib):
    x = lib.tensor(GRID)
    y = (2 * x[:, :1]).sin() * x[:, 1:]
    for bug in (True, False):
        lib.manual_seed(0)
        model = refiner(lib)(bug)
        if not bug:
            model.refine.requires_grad_(False)  # the fix: freeze refine, keep the graph
        optimizer = lib.optim.Adam(model.parameters(), lr=0.02)
        curve = []
        for _ in range(100):
            optimizer.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            optimizer.step()
            curve.append(loss.item())
        way = "no_grad branch (bug)" if bug else "frozen refine (fix)"
        refine_losses[lib.__name__, way] = curve
        print(f"{way}: .grad is")
        for name, layer in model.named_children():
            print(f"  {name:>7}: {'None' if layer.weight.grad is None else 'a tensor'}")
        print(f"  loss {curve[0]:.3f} -> {curve[-1]:.3f} in 100 steps")


compare(no_grad_branch, (torch, minitorch))

# %%
plt.figure(figsize=(6, 3))
for name, style in (("minitorch", dict(linewidth=4, alpha=0.4)), ("torch", dict(linestyle=":"))):
    for way, color in (("no_grad branch (bug)", "tab:red"), ("frozen refine (fix)", "tab:green")):
        plt.semilogy(refine_losses[name, way], color=color, label=f"{name}: {way}", **style)
plt.xlabel("step")
plt.ylabel("mean squared error")
plt.title("The bug learns a little (head only); the fix trains the encoder too")
plt.legend()
plt.show()

# %% [markdown]
# With the bug, only `head` learns: a linear map of features that never change, so the
# loss soon levels off. The fix trains `encoder` as well. A quick check after the first
# backward of a new model: the list
# `[name for name, p in model.named_parameters() if p.grad is None]`
# should hold the frozen parameters and nothing else.

# %% [markdown]
# ## 3. Weight sharing: one layer, used several times
#
# Calling the same module several times in one forward pass uses the same parameters
# each time: the graph has one `AccumulateGrad` node per parameter, with several edges
# into it, and the gradient is the **sum** of the contributions of every use (notebook
# 2). Below, one layer applied three times gives the same gradient as three separate
# copies of it whose gradients we add up:


# %%
# NBVAL_CHECK_OUTPUT
def shared_layer(lib):
    lib.manual_seed(0)
    shared = lib.nn.Linear(3, 3)
    copies = [lib.nn.Linear(3, 3) for _ in range(3)]
    for copy in copies:
        copy.load_state_dict(shared.state_dict())
    x = lib.tensor([1.0, -0.5, 2.0])
    h = x
    for _ in range(3):
        h = shared(h).tanh()  # the same layer each time
    h.sum().backward()
    h = x
    for copy in copies:
        h = copy(h).tanh()  # three layers with equal weights
    h.sum().backward()
    total = sum(copy.weight.grad for copy in copies)
    print(f"shared grad == sum of the copies' grads: {close(shared.weight.grad, total)}")
    print(
        f"parameters: {sum(p.numel() for p in shared.parameters())} shared, "
        f"{sum(p.numel() for c in copies for p in c.parameters())} in the copies"
    )


compare(shared_layer, (torch, minitorch))


# %% [markdown]
# Sharing is what recurrent networks do along time (the same cell at every step) and
# what the tree model of section 8 does at every node: the number of parameters is
# fixed while the graph grows with the input.

# %% [markdown] nbgrader={"grade_id": "ex1_depth_net_statement", "locked": true}
# ### Exercise 1 (4 points): a network whose depth depends on the input
#
# Write the class `DepthNet(features, max_depth, threshold=1.0)`:
#
# - `self.blocks`: an `nn.ModuleList` of `max_depth` layers `nn.Linear(features,
#   features)`; `self.head`: `nn.Linear(features, 1)`. Parameter names are therefore
#   `blocks.0.weight`, `blocks.0.bias`, ..., `head.weight`, `head.bias`.
# - `forward(x)`, for one sample `x` of shape `[features]`: start from `h = x`; **while**
#   `h.norm() > threshold` and fewer than `max_depth` blocks have run, apply the next
#   block: `h = tanh(block(h))`. Store how many blocks ran in `self.depth` and return
#   `self.head(h)` (shape `[1]`). An input with a small norm runs no block at all.
# - `predict_grads(inputs)`: `inputs` is a non-empty list of samples. Predict the set of
#   names (as `named_parameters()` gives them) of the parameters whose `.grad` is a
#   tensor after `zero_grad()` followed by `self(x).sum().backward()` for every `x` in
#   `inputs`, in order, **without zeroing in between**. Do not call backward: run the
#   forward passes under `minitorch.no_grad()` to see the depths, and reason.
#
# The grader sets your model's weights (float64, by parameter name) and runs it on inputs
# of every depth from 0 to `max_depth`, including one whose norm is exactly `threshold`;
# it compares outputs, depths and gradients with the expected ones, and checks your
# predictions against running the passes.
#
# *Hint:* a Python `list` of layers would not do for `blocks` (section 7 shows why).


# %% nbgrader={"grade_id": "ex1_depth_net", "solution": true}
class DepthNet(nn.Module):
    """A stack of up to `max_depth` blocks; how many run depends on the input.

    `blocks`: an nn.ModuleList of `max_depth` nn.Linear(features, features); `head`:
    nn.Linear(features, 1). forward(x), for one sample x of shape [features]: h = x; while
    h.norm() > threshold and fewer than max_depth blocks have run, h = tanh(next block(h)).
    Stores the number of blocks that ran in `self.depth` and returns head(h), shape [1].

    predict_grads(inputs): the names (as in named_parameters) of the parameters whose .grad is
    a tensor after zero_grad() and then self(x).sum().backward() for every x of the non-empty
    list `inputs`, in order, never zeroing in between. Predicted without running backward.
    """

    def __init__(self, features, max_depth, threshold=1.0):
        super().__init__()
        ### BEGIN SOLUTION
        self.blocks = nn.ModuleList([nn.Linear(features, features) for _ in range(max_depth)])
        self.head = nn.Linear(features, 1)
        self.threshold = threshold
        self.depth = 0
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        h = x
        self.depth = 0
        while self.depth < len(self.blocks) and h.norm() > self.threshold:
            h = self.blocks[self.depth](h).tanh()
            self.depth += 1
        return self.head(h)
        ### END SOLUTION

    def predict_grads(self, inputs):
        ### BEGIN SOLUTION
        deepest = 0
        with minitorch.no_grad():
            for x in inputs:
                self(x)
                deepest = max(deepest, self.depth)
        # A parameter keeps its gradient tensor once any pass has used it.
        names = {"head.weight", "head.bias"}
        for i in range(deepest):
            names |= {f"blocks.{i}.weight", f"blocks.{i}.bias"}
        return names
        ### END SOLUTION


# %% nbgrader={"grade_id": "ex1_depth_net_tests", "grade": true, "points": 4}
with exercise(1):
    minitorch.manual_seed(0)
    net = DepthNet(3, 4, threshold=1.0)
    names = [name for name, _ in net.named_parameters()]
    assert names[:2] == ["blocks.0.weight", "blocks.0.bias"] and names[-2:] == [
        "head.weight",
        "head.bias",
    ], f"unexpected parameter names {names}"
    assert len(names) == 10, f"4 blocks and a head have 10 parameters, you have {len(names)}"
    small, large = minitorch.tensor([0.1, 0.2, -0.1]), minitorch.tensor([5.0, -4.0, 3.0])
    out = net(small)
    assert out.shape == (1,), f"forward returns shape [1], got {list(out.shape)}"
    assert net.depth == 0, f"|x| < threshold: no block runs, but depth = {net.depth}"
    net(large)
    assert net.depth >= 1, "|x| > threshold: at least one block runs"
    assert net.predict_grads([small]) == {"head.weight", "head.bias"}, (
        "only the head is used when no block runs"
    )
    for inputs in ([large], [large, small], [small, large, small]):
        net.zero_grad()
        guess = net.predict_grads(inputs)
        assert all(p.grad is None for p in net.parameters()), "predict_grads must not run backward"
        for x in inputs:
            net(x).sum().backward()
        truth = {name for name, p in net.named_parameters() if p.grad is not None}
        assert guess == truth, f"predicted {sorted(guess)}, but {sorted(truth)} have gradients"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.dynamic_models import grade

grade.depth_net(DepthNet)
### END HIDDEN TESTS

# %% [markdown]
# Your `DepthNet` records a different graph for a short and for a long input, drawn side
# by side below. The short one (left) runs no block: only the head is in its graph, and
# `blocks.*` get no gradient. The long one (right) runs blocks until its norm falls under
# the threshold (or the blocks run out), one `AddmmBackward0` and one `TanhBackward0` per
# block:

# %%
with exercise(1):
    minitorch.manual_seed(0)
    depth_net = DepthNet(2, 3)
    depth_outs, depth_titles = [], []
    for values in ([0.3, 0.4], [3.0, -4.0]):
        depth_outs.append(depth_net(minitorch.tensor(values)))
        depth_titles.append(f"x = {values}: {depth_net.depth} blocks ran")
    # the same net on both sides: each name labels the same leaf in both graphs
    depth_names = {n: (p, p) for n, p in depth_net.named_parameters()}
    minitorch.viz.show_side_by_side(*depth_outs, depth_names, titles=tuple(depth_titles))

# %% [markdown]
# ## 4. Per-sample routing: a different path for every sample of a batch
#
# Section 2 chose a branch for the whole input. In a batch, each sample may need its own
# branch (a mixture of experts, a model that treats some inputs differently, ...). The
# obvious code loops over the samples, one tiny forward pass each:


# %%
def route_per_sample(branches, x, route):
    """Row i is branches[route[i]](x[i]): correct, but one pass per sample."""
    return minitorch.stack([branches[k](x[i]) for i, k in enumerate(route.tolist())])


# %% [markdown]
# It is correct, and slow: the number of recorded operations grows with the batch. The
# vectorized version runs each branch **once**, on the rows routed to it, selected by a
# boolean mask (`x[mask]`), and writes the results into those rows of the output
# (`out[mask] = ...`, which autograd records like any other operation). Both libraries
# support these masked reads and writes, with their gradients.

# %% [markdown] nbgrader={"grade_id": "ex2_router_statement", "locked": true}
# ### Exercise 2 (4 points): per-sample routing with masks
#
# Write the class `Router(features, out_features, n_branches)`:
#
# - `self.branches`: an `nn.ModuleList` of `n_branches` layers `nn.Linear(features,
#   out_features)`;
# - `forward(x, route)`: `x` has shape `[batch, features]`, `route` is an int64 tensor
#   `[batch]` of branch numbers. Return the `[batch, out_features]` tensor whose row `i`
#   is `self.branches[route[i]](x[i])`, **vectorized**: a loop over the branches, not
#   over the samples. Each branch runs once, on the rows routed to it only (not on the
#   whole batch, masked afterwards). A branch that no sample is routed to must not run,
#   so that its parameters keep `.grad` None, exactly as with `route_per_sample`.
#
# The grader compares values and gradients (parameters and `x`) with the per-sample
# loop, on batches where some branch gets no sample, where all samples take one branch,
# a batch of one and a batch of 48; it also counts how many rows each branch processes,
# and in how many operations. The model is float64 there, like `x`.
#
# *Hint:* `mask = route == k`; `mask.any()`; `minitorch.zeros(batch, out_features,
# dtype=x.dtype)` for the output.


# %% nbgrader={"grade_id": "ex2_router", "solution": true}
class Router(nn.Module):
    """Per-sample routing: every sample goes through the branch its route names.

    `branches`: an nn.ModuleList of `n_branches` nn.Linear(features, out_features).
    forward(x, route): x of shape [batch, features], route an int64 tensor [batch] of values in
    range(n_branches). Row i of the result ([batch, out_features]) is
    branches[route[i]](x[i]). Vectorized: each branch runs once, on the rows routed to it
    only (a boolean mask), never on the whole batch; no Python loop over samples. A branch
    that gets no sample does not run, so its parameters keep .grad None, as in a per-sample
    loop.
    """

    def __init__(self, features, out_features, n_branches):
        super().__init__()
        ### BEGIN SOLUTION
        self.branches = nn.ModuleList(
            [nn.Linear(features, out_features) for _ in range(n_branches)]
        )
        self.out_features = out_features
        ### END SOLUTION

    def forward(self, x, route):
        ### BEGIN SOLUTION
        out = minitorch.zeros(x.shape[0], self.out_features, dtype=x.dtype)
        for k, branch in enumerate(self.branches):
            mask = route == k
            if mask.any():
                out[mask] = branch(x[mask])
        return out
        ### END SOLUTION


# %% nbgrader={"grade_id": "ex2_router_tests", "grade": true, "points": 4}
with exercise(2):
    minitorch.manual_seed(0)
    router = Router(3, 2, 3)
    x = minitorch.randn(5, 3, requires_grad=True)
    route = minitorch.tensor([2, 0, 2, 2, 0])
    out = router(x, route)
    assert out.shape == (5, 2), f"expected shape [5, 2], got {list(out.shape)}"
    expected = route_per_sample(router.branches, x, route)
    assert close(out, expected), "row i must be branches[route[i]](x[i])"
    out.sum().backward()
    assert router.branches[1].weight.grad is None, "no sample goes to branch 1: it must not run"
    assert router.branches[0].weight.grad is not None and router.branches[2].weight.grad is not None
    assert close(router.branches[2].bias.grad, minitorch.tensor([3.0, 3.0])), (
        "three samples use branch 2"
    )
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.dynamic_models import grade

grade.router(Router)
### END HIDDEN TESTS

# %%
# How much the vectorized version saves: graph size and time for a batch of 256.
with exercise(2):
    minitorch.manual_seed(0)
    router = Router(8, 4, 3)
    x = minitorch.randn(256, 8)
    route = minitorch.randint(0, 3, (256,))
    for name, run in (
        ("per-sample loop", lambda: route_per_sample(router.branches, x, route)),
        ("masks", lambda: router(x, route)),
    ):
        start = time.perf_counter()
        out = run()
        out.sum().backward()
        milliseconds = 1000 * (time.perf_counter() - start)
        print(f"{name:>15}: {count_nodes(out):5d} nodes, {milliseconds:6.1f} ms")

# %% [markdown]
# ## 5. Batching samples of different shapes: loop, pad and mask, or pack
#
# Sequences rarely have the same length. `make_sequences` makes a synthetic task: each
# step has 3 features (a marker flag, a value of +1 or -1, and noise); the label is 1
# if the value at the marked step (one of the first three) is +1. A recurrent network
# has to remember that value until the end of the sequence, whatever its length.

# %%
# NBVAL_CHECK_OUTPUT
sequences, labels = make_sequences(64, min_length=4, max_length=30, seed=3)
print("lengths of the first 8:", [len(s) for s in sequences[:8]])
print("sequence 0 (marker, value, noise):")
print(sequences[0][:4])
print("label:", labels[0].item())


# %% [markdown]
# There are three ways to feed such a batch to a recurrent layer, with the same result:
#
# 1. **a loop over the samples**: each sequence alone, batch of one. Simple, and slow.
# 2. **padding and masks**: `pad_sequence` (or the `pad_collate` of a `DataLoader`)
#    fills the short sequences up to the longest one. Running a cell step by step, a
#    mask keeps a sequence's state unchanged once it has ended. The padded steps are
#    still computed, then thrown away.
# 3. **packing**: `pack_padded_sequence(padded, lengths, batch_first=True,
#    enforce_sorted=False)` keeps only the valid steps, sorted so that at step `t` the
#    layer processes just the sequences still running. The final hidden state `h_n`
#    of every sequence is its state at its own last step, in the batch's order.
#
# What packing keeps, on four sequences `a`, `b`, `c`, `d` of lengths 5, 2, 4 and 1 (step
# `t` of sequence number `i` holds the number `10 i + t`, so each row of `packed.data` says
# where it came from). `batch_sizes[t]` is the number of sequences **still running at step
# t**, not the length of each sequence: it never grows, and its sum is the number of valid
# steps (12). Inside each step the sequences sit longest first (`sorted_indices`):


# %%
# NBVAL_CHECK_OUTPUT
LENGTHS = [5, 2, 4, 1]  # sequences a, b, c, d
NAMES = "abcd"


def packed_example(lib):
    steps = max(LENGTHS)
    padded = lib.tensor(
        [[[10.0 * i + t if t < n else -1.0] for t in range(steps)] for i, n in enumerate(LENGTHS)]
    )
    packed = lib.nn.utils.rnn.pack_padded_sequence(
        padded, lib.tensor(LENGTHS), batch_first=True, enforce_sorted=False
    )
    rows = [NAMES[int(v) // 10] + str(int(v) % 10) for v in packed.data.flatten().tolist()]
    print("batch_sizes   ", packed.batch_sizes.tolist())
    print("sorted_indices", packed.sorted_indices.tolist())
    print("packed.data   ", " ".join(rows))
    return packed.batch_sizes.tolist(), rows


compare(packed_example, (torch, minitorch))

# %%
with contextlib.redirect_stdout(io.StringIO()):  # printed above
    batch_sizes, rows = packed_example(minitorch)
colors = dict(zip(NAMES, ("tab:blue", "tab:orange", "tab:green", "tab:red")))
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 2.4), gridspec_kw={"width_ratios": [5, 9]})
for i, n in enumerate(LENGTHS):
    for t in range(max(LENGTHS)):
        color, text = (colors[NAMES[i]], f"{NAMES[i]}{t}") if t < n else ("0.85", "pad")
        left.add_patch(plt.Rectangle((t, -i), 0.9, 0.9, color=color))
        left.text(t + 0.45, -i + 0.45, text, ha="center", va="center", fontsize=8)
left.set_xlim(0, max(LENGTHS))
left.set_ylim(-len(LENGTHS) + 1, 1)
left.set_xticks([t + 0.45 for t in range(max(LENGTHS))], [f"t={t}" for t in range(max(LENGTHS))])
left.set_yticks([0.45 - i for i in range(4)], [f"{c}, length {n}" for c, n in zip(NAMES, LENGTHS)])
left.set_title("padded: [batch, steps]")
x = 0
for t, size in enumerate(batch_sizes):  # the rows of step t, then a gap
    for row in rows[x : x + size]:
        right.add_patch(plt.Rectangle((x + 0.5 * t, 0), 0.9, 0.9, color=colors[row[0]]))
        right.text(x + 0.5 * t + 0.45, 0.45, row, ha="center", va="center", fontsize=8)
        x += 1
    right.text(x - size / 2 + 0.5 * t - 0.05, -0.4, f"t={t}: {size}", ha="center", fontsize=9)
right.set_xlim(-0.2, x + 0.5 * len(batch_sizes))
right.set_ylim(-0.8, 1.3)
right.axis("off")
right.set_title("packed.data, step by step; batch_sizes[t] under each step")
plt.show()

# %% [markdown]
# The same code runs in PyTorch (`torch.nn.utils.rnn`) and minitorch
# (`minitorch.nn.utils.rnn`). We check that the three agree, and time forward plus
# backward of each on the same data:


# %%
def final_states(lib, rnn_utils, way, gru, cell, data):
    """The final hidden state [batch, hidden] of every sequence, computed one of three ways."""
    if way == "loop over samples":
        return lib.cat([gru(s.unsqueeze(0))[1][-1] for s in data])
    padded = rnn_utils.pad_sequence(data, batch_first=True)
    lengths = lib.tensor([len(s) for s in data])
    if way == "padding + masks":
        h = lib.zeros(len(data), cell.hidden_size)
        for t in range(padded.shape[1]):
            running = (lengths > t).unsqueeze(1)  # which sequences are still going
            h = lib.where(running, cell(padded[:, t], h), h)
        return h
    packed = rnn_utils.pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
    return gru(packed)[1][-1]


WAYS = ("loop over samples", "padding + masks", "packing")
timings = {}


def three_ways(lib):
    rnn_utils = lib.nn.utils.rnn
    lib.manual_seed(0)
    gru = lib.nn.GRU(3, 16, batch_first=True)
    cell = lib.nn.GRUCell(3, 16)  # the same weights as the GRU's layer 0
    cell.load_state_dict({name.replace("_l0", ""): p for name, p in gru.state_dict().items()})
    data = [lib.tensor(s.tolist()) for s in sequences]
    results = []
    for way in WAYS:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            states = final_states(lib, rnn_utils, way, gru, cell, data)
            states.sum().backward()
            best = min(best, time.perf_counter() - start)
        timings[lib.__name__, way] = 1000 * best
        results.append(states)
    same = all(close(r, results[0], 1e-5) for r in results)
    print(f"the three ways give the same final states: {same}")


compare(three_ways, (torch, minitorch))

# %%
fig, ax = plt.subplots(figsize=(7, 3))
width = 0.38
for offset, name in ((-width / 2, "torch"), (width / 2, "minitorch")):
    ax.bar([i + offset for i in range(3)], [timings[name, way] for way in WAYS], width, label=name)
ax.set_xticks(range(3), WAYS)
ax.set_ylabel("forward + backward (ms)")
ax.set_title(f"{len(sequences)} sequences of length 4 to 30, GRU with 16 hidden units")
ax.legend()
plt.show()


# %% [markdown]
# The loop pays a fixed cost per operation for every sample: it is by far the slowest.
# Padding and packing both process a whole batch per step; packing computes only the
# valid steps, padding computes the padded ones too, but needs no reordering. Which one
# wins depends on how different the lengths are and on the hardware (on a GPU, where one
# operation on a big batch costs about as much as on a small one, the loop is hopeless).
#
# Padding has one more trap. An RNN run over a padded batch (without packing) returns
# outputs for the padded steps too: they are not zeros, and they are not valid. Whatever
# you compute from them must look only at each sequence's valid steps.

# %% [markdown] nbgrader={"grade_id": "ex3_summarize_statement", "locked": true}
# ### Exercise 3 (4 points): the last valid step and a masked mean
#
# Write `summarize(lib, output, lengths)`. `output` is a float tensor `[batch, steps,
# hidden]` (batch first) of the library `lib` (PyTorch or minitorch); sequence `i` is
# valid for its first `lengths[i]` steps and holds padding (any values) after them.
# `lengths` is an int64 tensor `[batch]`, every length between 1 and `steps`. Return
# `(last, mean)`, both `[batch, hidden]`:
#
# - `last[i] = output[i, lengths[i] - 1]`, the last valid step;
# - `mean[i]` = the mean of `output[i, :lengths[i]]` over the valid steps.
#
# Vectorized (no loop over the batch: the grader counts the operations recorded for a
# small and a large batch), differentiable, and without changing `output` (mask a copy,
# do not write into the padding): the grader compares values and gradients with slicing
# every sequence alone, on padding full of large values.
#
# *Hint:* index with two tensors, `output[lib.arange(batch), ...]`; build a `[batch,
# steps]` mask by comparing `lib.arange(steps)` with `lengths` (broadcasting); convert
# it with `.to(output.dtype)`.


# %% nbgrader={"grade_id": "ex3_summarize", "solution": true}
def summarize(lib, output, lengths):
    """The last valid step and the mean over the valid steps of padded sequences.

    `output`: a float `lib` tensor [batch, steps, hidden] (batch first), where sequence i is
    valid for its first lengths[i] steps and holds padding (any values) after them; `lengths`:
    an int64 `lib` tensor [batch], every length between 1 and steps. Returns `(last, mean)`,
    both [batch, hidden]: last[i] = output[i, lengths[i] - 1] and mean[i] = the mean of
    output[i, :lengths[i]]. Vectorized (no loop over the batch), differentiable; leaves
    `output` unchanged.
    """
    ### BEGIN SOLUTION
    batch, steps, _ = output.shape
    last = output[lib.arange(batch), lengths - 1]
    valid = lib.arange(steps).unsqueeze(0) < lengths.unsqueeze(1)  # [batch, steps]
    total = (output * valid.unsqueeze(2).to(output.dtype)).sum(dim=1)
    mean = total / lengths.unsqueeze(1).to(output.dtype)
    return last, mean
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex3_summarize_tests", "grade": true, "points": 4}
with exercise(3):
    for lib in (torch, minitorch):
        name = lib.__name__
        output = lib.arange(12, dtype=lib.float64).reshape(
            2, 3, 2
        )  # [[0,1],[2,3],[4,5]], [[6,7],...]
        output[1, 2] = 100.0  # padding of sequence 1
        last, mean = summarize(lib, output, lib.tensor([3, 2]))
        assert last.shape == (2, 2) and mean.shape == (2, 2), (
            f"{name}: both results are [batch, hidden]"
        )
        assert last.tolist() == [[4.0, 5.0], [8.0, 9.0]], (
            f"{name}: last: expected [[4.0, 5.0], [8.0, 9.0]], got {last.tolist()}"
        )
        assert mean.tolist() == [[2.0, 3.0], [7.0, 8.0]], (
            f"{name}: mean: expected [[2.0, 3.0], [7.0, 8.0]], got {mean.tolist()}"
        )
        # The padded RNN outputs of section 5 agree with each sequence run alone.
        lib.manual_seed(0)
        rnn = lib.nn.RNN(3, 4, batch_first=True)
        data = [lib.tensor(s.tolist()) for s in sequences[:6]]
        padded = (torch.nn.utils.rnn if lib is torch else minitorch.nn.utils.rnn).pad_sequence(
            data, batch_first=True
        )
        last, mean = summarize(lib, rnn(padded)[0], lib.tensor([len(s) for s in data]))
        for i, s in enumerate(data):
            alone = rnn(s.unsqueeze(0))[0][0]
            assert close(last[i], alone[-1]), f"{name}: last step of sequence {i}"
            assert close(mean[i], alone.mean(0)), f"{name}: mean of sequence {i}"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.dynamic_models import grade

grade.summarize(summarize)
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Training on packed sequences
#
# A `DataLoader` with `collate_fn=pad_collate` turns a list of `(sequence, label)`
# samples into batches `(padded, lengths, labels)`; the model packs them inside
# `forward`. The training loop below is the usual one, and it is all the notebook needs
# to train your classifier of exercise 4.

# %%
TASK = dict(min_length=4, max_length=12, marker_window=3)
train_sequences, train_labels = make_sequences(600, seed=10, **TASK)
test_sequences, test_labels = make_sequences(300, seed=11, **TASK)


def accuracy(model, sequences, labels):
    with minitorch.no_grad():
        padded, lengths, y = pad_collate(list(zip(sequences, labels)))
        return (model(padded, lengths).argmax(1) == y).float().mean().item()


def train_classifier(model, epochs=6, lr=0.02):
    """Adam on the training sequences; returns (losses, test accuracy after each epoch)."""
    minitorch.manual_seed(0)
    loader = DataLoader(
        list(zip(train_sequences, train_labels)),
        batch_size=32,
        shuffle=True,
        collate_fn=pad_collate,
    )
    optimizer = minitorch.optim.Adam(model.parameters(), lr=lr)
    losses, accuracies = [], []
    for _ in range(epochs):
        for padded, lengths, y in loader:
            loss = nn.functional.cross_entropy(model(padded, lengths), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        accuracies.append(accuracy(model, test_sequences, test_labels))
        if accuracies[-1] >= 0.95:
            break
    return losses, accuracies


# %% [markdown] nbgrader={"grade_id": "ex4_sequence_classifier_statement", "locked": true}
# ### Exercise 4 (4 points): a recurrent classifier over packed sequences
#
# Write the class `SequenceClassifier(features, hidden, classes)` whose
# `forward(padded, lengths)` takes a batch from `pad_collate` (`padded` is `[batch,
# steps, features]`, batch first, `lengths` an int64 tensor in any order) and returns
# class scores `[batch, classes]`:
#
# 1. pack the batch with `pack_padded_sequence(padded, lengths, batch_first=True,
#    enforce_sorted=False)`;
# 2. run `nn.GRU(features, hidden, batch_first=True)` on it (a GRU learns this task in
#    a few epochs; a plain `nn.RNN` forgets too fast to reach 90 % within the budget);
# 3. compute the scores from each sequence's **final hidden state** `h_n` with an
#    `nn.Linear(hidden, classes)`.
#
# The scores of a sequence must not depend on the padding nor on the other sequences
# of the batch. The grader checks that, then trains a fresh `SequenceClassifier(3, 16,
# 2)` on new data with the loop above (Adam, lr 0.02, at most 6 epochs of 600
# sequences) and expects at least **90 %** test accuracy.


# %% nbgrader={"grade_id": "ex4_sequence_classifier", "solution": true}
class SequenceClassifier(nn.Module):
    """A recurrent classifier over packed variable-length sequences.

    forward(padded, lengths): `padded` [batch, steps, features] (batch first, anything in the
    padding), `lengths` an int64 tensor [batch] in any order. Packs the batch with
    pack_padded_sequence(..., batch_first=True, enforce_sorted=False), runs a recurrent layer
    (nn.GRU recommended) on it and returns class scores [batch, classes] computed from each
    sequence's final hidden state. The scores of a sequence do not depend on the padding or
    on the other sequences of the batch.
    """

    def __init__(self, features, hidden, classes):
        super().__init__()
        ### BEGIN SOLUTION
        self.rnn = nn.GRU(features, hidden, batch_first=True)
        self.out = nn.Linear(hidden, classes)
        ### END SOLUTION

    def forward(self, padded, lengths):
        ### BEGIN SOLUTION
        packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
        _, h_n = self.rnn(packed)  # h_n: [layers, batch, hidden], in the batch's order
        return self.out(h_n[-1])
        ### END SOLUTION


# %% nbgrader={"grade_id": "ex4_sequence_classifier_tests", "grade": true, "points": 4}
with exercise(4):
    minitorch.manual_seed(0)
    model = SequenceClassifier(3, 16, 2)
    padded, lengths, _ = pad_collate(list(zip(test_sequences[:5], test_labels[:5])))
    with minitorch.no_grad():
        scores = model(padded, lengths)
        assert scores.shape == (5, 2), f"expected scores of shape [5, 2], got {list(scores.shape)}"
        longer = minitorch.cat([padded, minitorch.full((5, 4, 3), 9.0)], dim=1)  # more padding
        assert close(model(longer, lengths), scores, 1e-5), "the scores changed with the padding"
        for i in range(5):
            alone = model(test_sequences[i].unsqueeze(0), lengths[i : i + 1])
            assert close(alone[0], scores[i], 1e-5), f"sequence {i} alone gets other scores"
    losses, accuracies = train_classifier(model)
    print(f"test accuracy after each epoch: {[round(a, 3) for a in accuracies]}")
    assert accuracies[-1] >= 0.9, f"test accuracy {accuracies[-1]:.1%} is below 90 %"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.dynamic_models import grade

grade.sequence_classifier(SequenceClassifier)
### END HIDDEN TESTS

# %%
# The training run of exercise 4's test cell.
if "losses" in globals():
    plt.figure(figsize=(6, 3))
    plt.plot(losses)
    plt.xlabel("step")
    plt.ylabel("cross-entropy")
    plt.title("SequenceClassifier on packed sequences")
    plt.show()
else:
    print("Exercise 4: no training run yet; the test cell of exercise 4 trains the model.")


# %% [markdown]
# ## 7. Two classic mistakes: layers created in `forward`, layers in a Python list
#
# Since `forward` is plain Python, nothing stops you from creating a layer in it. The
# model below *runs*, but each call creates new layers with new random weights:
#
# - `parameters()` is empty, so the optimizer has nothing to train;
# - two calls on the same input give different answers;
# - `state_dict()` is empty, so saving it saves nothing.
#
# A `Module` registers a submodule when you **assign** it to an attribute in
# `__init__` (`self.layer = nn.Linear(...)`); `nn.ModuleList` and `nn.ModuleDict`
# register the modules they hold. A plain Python `list` of layers is invisible to it:
# the layers work, but they are neither trained, nor saved, nor moved by `.to()` (nor by
# `.double()` or `.cuda()`), so after `model.double()` the forward pass fails.


# %%
class BrokenMLP(nn.Module):
    def __init__(self, features, width, classes, depth):
        super().__init__()
        self.sizes = [features] + [width] * depth + [classes]

    def forward(self, x):
        for a, b in zip(self.sizes[:-2], self.sizes[1:-1]):
            x = nn.Linear(a, b)(x).relu()  # a new layer at every call!
        return nn.Linear(self.sizes[-2], self.sizes[-1])(x)


class ListMLP(nn.Module):
    def __init__(self, features, width, classes, depth):
        super().__init__()
        sizes = [features] + [width] * depth
        self.hidden = [nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]  # a plain list!
        self.out = nn.Linear(sizes[-1], classes)

    def forward(self, x):
        for layer in self.hidden:
            x = layer(x).relu()
        return self.out(x)


spiral_x, spiral_y = make_spirals(150, classes=3, seed=0)


def train_mlp(model, steps=60):
    """Full-batch Adam on 3 spirals; the loss at every step (nothing to train: no steps)."""
    params = list(model.parameters())
    optimizer = minitorch.optim.Adam(params, lr=0.05) if params else None
    losses = []
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(spiral_x), spiral_y)
        losses.append(loss.item())
        if optimizer:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return losses


# %%
# NBVAL_CHECK_OUTPUT
for cls in (BrokenMLP, ListMLP):
    minitorch.manual_seed(0)
    model = cls(2, 16, 3, depth=2)
    x = spiral_x[:3]
    print(
        f"{cls.__name__}: {sum(p.numel() for p in model.parameters())} parameters, "
        f"state_dict keys {list(model.state_dict())}, "
        f"same output twice: {close(model(x), model(x))}"
    )


# %% [markdown]
# What a module owns does not depend on what `forward` uses. Below, `listed` sits in a plain
# list, `unused` is registered but never called. After `model.double()`:


# %%
# NBVAL_CHECK_OUTPUT
def what_a_module_owns(lib):
    class Owner(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.listed = [lib.nn.Linear(2, 4)]  # a plain list: not registered
            self.unused = lib.nn.Linear(4, 4)  # registered, never called
            self.out = lib.nn.Linear(4, 1)

        def forward(self, x):
            return self.out(self.listed[0](x).relu())

    model = Owner().double()
    for name, layer in (("listed[0]", model.listed[0]), ("unused", model.unused)):
        print(f"{name:9}: {str(layer.weight.dtype)[6:]}, in parameters():", end=" ")
        print(any(p is layer.weight for p in model.parameters()))
    print("state_dict:", ", ".join(model.state_dict()))
    try:
        model(lib.ones(3, 2, dtype=lib.float64))
    except RuntimeError as error:
        print("forward: RuntimeError,", "same dtype" in str(error) and "mixed dtypes" or error)


compare(what_a_module_owns, (torch, minitorch))

# %% [markdown]
# The registered `unused` layer is converted and saved (so is `hidden.2` of the `DynamicNet`
# in section 2, which no step reached); the listed layer is left in float32 and its input
# now is float64.

# %% [markdown] nbgrader={"grade_id": "ex5_fixed_mlp_statement", "locked": true}
# ### Exercise 5 (3 points): fix the model
#
# Write `FixedMLP(features, width, classes, depth)`, computing what `BrokenMLP` meant to
# compute, with layers that are created once, in `__init__`, and registered:
#
# - `self.hidden`: an `nn.ModuleList` of `depth` layers `nn.Linear` (features → width,
#   then width → width), each followed by ReLU in `forward`;
# - `self.out`: `nn.Linear(width, classes)` (`nn.Linear(features, classes)` when
#   `depth` is 0).
#
# The `state_dict` keys are then `hidden.0.weight`, `hidden.0.bias`, ...,
# `out.weight`, `out.bias`, in this order. The grader checks the parameter count, the
# keys, the outputs with given weights, that two calls agree, and that
# training makes the loss go down.


# %% nbgrader={"grade_id": "ex5_fixed_mlp", "solution": true}
class FixedMLP(nn.Module):
    """BrokenMLP, fixed: the same computation with layers that are created once, registered
    as submodules, trained and saved.

    `hidden`: an nn.ModuleList of `depth` nn.Linear layers (features -> width, then
    width -> width), each followed by ReLU; `out`: nn.Linear(width, classes) (width =
    features when depth is 0). state_dict keys: hidden.0.weight, hidden.0.bias, ...,
    out.weight, out.bias. forward(x): [batch, features] -> class scores [batch, classes].
    """

    def __init__(self, features, width, classes, depth):
        super().__init__()
        ### BEGIN SOLUTION
        sizes = [features] + [width] * depth
        self.hidden = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])
        self.out = nn.Linear(sizes[-1], classes)
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        for layer in self.hidden:
            x = layer(x).relu()
        return self.out(x)
        ### END SOLUTION


# %% nbgrader={"grade_id": "ex5_fixed_mlp_tests", "grade": true, "points": 3}
with exercise(5):
    minitorch.manual_seed(0)
    model = FixedMLP(2, 16, 3, depth=2)
    count = sum(p.numel() for p in model.parameters())
    expected = (2 * 16 + 16) + (16 * 16 + 16) + (16 * 3 + 3)
    assert count == expected, f"FixedMLP(2, 16, 3, depth=2): {expected} parameters, got {count}"
    keys = list(model.state_dict())
    assert keys == [
        "hidden.0.weight",
        "hidden.0.bias",
        "hidden.1.weight",
        "hidden.1.bias",
        "out.weight",
        "out.bias",
    ], f"unexpected state_dict keys {keys}"
    assert close(model(spiral_x[:3]), model(spiral_x[:3])), "two calls must agree"
    assert list(FixedMLP(3, 5, 2, depth=0).state_dict()) == ["out.weight", "out.bias"]
    fixed_losses = train_mlp(model)
    assert fixed_losses[-1] < 0.8 * fixed_losses[0], "training must make the loss go down"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.dynamic_models import grade

grade.fixed_mlp(FixedMLP)
### END HIDDEN TESTS

# %%
minitorch.manual_seed(0)
plt.figure(figsize=(6, 3))
plt.plot(train_mlp(BrokenMLP(2, 16, 3, depth=2)), label="BrokenMLP (new layers every call)")
plt.plot(train_mlp(ListMLP(2, 16, 3, depth=2)), label="ListMLP (only out is trained)")
with exercise(5):
    plt.plot(train_mlp(FixedMLP(2, 16, 3, depth=2)), label="FixedMLP")
plt.xlabel("step")
plt.ylabel("cross-entropy")
plt.legend()
plt.show()

# %% [markdown]
# ## 8. Recursion: a model that follows each sample's tree
#
# Some data is a tree: a parse tree of a sentence, a molecule, an arithmetic expression.
# A recursive model encodes a node from the encodings of its children, so its graph has
# the shape of the sample's tree: **every sample builds its own graph**, and the same
# layers are shared by all the nodes of the same kind. `make_expression_trees` makes
# random expressions (`ExprTree` nodes: a leaf holds a `value`; an operator node has an
# `op` in `"+"`, `"-"`, `"*"` and `left` and `right` children), with their values:

# %%
# NBVAL_CHECK_OUTPUT
trees, values = make_expression_trees(4, max_depth=3, seed=1)
for tree, value in zip(trees, values.tolist()):
    print(f"{str(tree):40s} = {value:7.4f}   depth {tree.depth()}, {tree.size()} nodes")


# %% [markdown] nbgrader={"grade_id": "ex6_tree_net_statement", "locked": true}
# ### Exercise 6 (4 points): a recursive model over expression trees
#
# Write the class `TreeNet(hidden)`:
#
# - `self.leaf = nn.Linear(1, hidden)`; `self.combine`: an `nn.ModuleDict` with one
#   `nn.Linear(2 * hidden, hidden)` per operator, under the keys `"+"`, `"-"`, `"*"`;
#   `self.out = nn.Linear(hidden, 1)`;
# - the encoding of a leaf is `tanh(self.leaf(v))` with `v` the 1-element tensor
#   `[tree.value]` (use the dtype of `self.leaf.weight`);
# - the encoding of an operator node is `tanh(self.combine[op](cat([left, right])))`,
#   where `left` and `right` are the encodings of its children, **left first**;
# - `forward(tree)` returns `self.out(encoding of the root)`, shape `[1]`.
#
# The grader sets your model's weights (float64, by parameter name) and compares values
# and gradients with the expected ones, on a single leaf, random trees and a 12-deep chain.
# A helper method `encode(tree)` that recurses is the natural way to write it.


# %% nbgrader={"grade_id": "ex6_tree_net", "solution": true}
class TreeNet(nn.Module):
    """A recursive model over one arithmetic expression tree (minitorch.datasets.ExprTree).

    `leaf`: nn.Linear(1, hidden); `combine`: an nn.ModuleDict with one nn.Linear(2 * hidden,
    hidden) per operator "+", "-", "*"; `out`: nn.Linear(hidden, 1). The encoding of a leaf
    is tanh(leaf([value])); the encoding of an operator node is
    tanh(combine[op](cat([encoding of left, encoding of right]))) (left first). forward(tree)
    returns out(encoding of the root), shape [1]. Every tree builds its own graph.
    """

    def __init__(self, hidden):
        super().__init__()
        ### BEGIN SOLUTION
        self.leaf = nn.Linear(1, hidden)
        self.combine = nn.ModuleDict({op: nn.Linear(2 * hidden, hidden) for op in "+-*"})
        self.out = nn.Linear(hidden, 1)
        ### END SOLUTION

    def encode(self, tree):
        ### BEGIN SOLUTION
        if tree.is_leaf:
            value = minitorch.tensor([tree.value], dtype=self.leaf.weight.dtype)
            return self.leaf(value).tanh()
        both = minitorch.cat([self.encode(tree.left), self.encode(tree.right)])
        return self.combine[tree.op](both).tanh()
        ### END SOLUTION

    def forward(self, tree):
        ### BEGIN SOLUTION
        return self.out(self.encode(tree))
        ### END SOLUTION


# %% nbgrader={"grade_id": "ex6_tree_net_tests", "grade": true, "points": 4}
with exercise(6):
    minitorch.manual_seed(0)
    model = TreeNet(4)
    keys = list(model.state_dict())
    for key in (
        "leaf.weight",
        "combine.+.weight",
        "combine.-.bias",
        "combine.*.weight",
        "out.bias",
    ):
        assert key in keys, f"missing parameter {key}; you have {keys}"
    leaf = ExprTree(value=0.5)
    out = model(leaf)
    assert out.shape == (1,), f"forward returns shape [1], got {list(out.shape)}"
    expected = model.out(model.leaf(minitorch.tensor([0.5])).tanh())
    assert close(out, expected), "a leaf's encoding is tanh(leaf([value]))"
    a_minus_b = ExprTree(op="-", left=ExprTree(value=1.0), right=ExprTree(value=2.0))
    b_minus_a = ExprTree(op="-", left=ExprTree(value=2.0), right=ExprTree(value=1.0))
    assert not close(model(a_minus_b), model(b_minus_a)), "1 - 2 and 2 - 1 must differ"
    one, two = (model.leaf(minitorch.tensor([v])).tanh() for v in (1.0, 2.0))
    expected = model.out(model.combine["-"](minitorch.cat([one, two])).tanh())
    assert close(model(a_minus_b), expected), (
        "1 - 2 is out(tanh(combine['-'](cat([encoding of 1, encoding of 2])))): left first"
    )
    model.zero_grad()
    model(a_minus_b).sum().backward()
    assert model.combine["*"].weight.grad is None, "a tree without '*' must not use combine['*']"
    assert model.leaf.weight.grad is not None, "gradients must reach the leaves"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.dynamic_models import grade

grade.tree_net(TreeNet)
### END HIDDEN TESTS

# %% [markdown]
# Every tree builds its own graph, with the tree's shape. Below, side by side, your
# `TreeNet` on `1 + 2` (left) and on `(1 - 2) * 3` (right): one `CatBackward0` per operator
# node, `combine["+"]` in the left graph only, `combine["-"]` and `combine["*"]` in the
# right one, and one `AccumulateGrad` for `leaf.weight` that collects the gradients of all
# the leaves.

# %%
with exercise(6):
    minitorch.manual_seed(0)
    small_tree_net = TreeNet(2)
    one, two, three = (ExprTree(value=v) for v in (1.0, 2.0, 3.0))
    tree_outs, tree_titles = [], []
    for tree in (
        ExprTree(op="+", left=one, right=two),
        ExprTree(op="*", left=ExprTree(op="-", left=one, right=two), right=three),
    ):
        tree_outs.append(small_tree_net(tree))
        tree_titles.append(f"{tree}: {tree.size()} nodes")
    tree_names = {n: (p, p) for n, p in small_tree_net.named_parameters()}
    minitorch.viz.show_side_by_side(*tree_outs, tree_names, titles=tuple(tree_titles))

# %% [markdown]
# Training such a model is ordinary: sum (or average) the losses of the trees of a
# mini-batch, then one backward. The graph of the batch is the union of the trees'
# graphs, all sharing the same few layers. Here `TreeNet` learns to evaluate
# expressions of depth up to 2 (a short run; it keeps improving with more):

# %%
train_trees, train_values = make_expression_trees(160, max_depth=2, seed=2)
with exercise(6):
    minitorch.manual_seed(0)
    tree_model = TreeNet(16)
    optimizer = minitorch.optim.Adam(tree_model.parameters(), lr=0.01)
    tree_losses = []
    for _ in range(8):
        for start in range(0, len(train_trees), 16):
            batch = range(start, start + 16)
            errors = [(tree_model(train_trees[i]) - train_values[i]) ** 2 for i in batch]
            loss = sum(error.sum() for error in errors) / 16
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            tree_losses.append(loss.item())
    plt.figure(figsize=(6, 3))
    plt.semilogy(tree_losses)
    plt.xlabel("step (16 trees each)")
    plt.ylabel("mean squared error")
    plt.title("TreeNet: a different graph for every tree")
    plt.show()

# %% [markdown]
# ## 9. What is saved: the parameters, not the forward pass
#
# `torch.save(model.state_dict(), path)` (and `minitorch.save`) writes a dictionary from
# parameter names to tensors. The code of `forward` is **not** saved: loading gives the
# numbers back to whatever model you load them into, and that model's `forward` decides
# what is computed. For a dynamic model this matters: the loops, branches and step
# limits are in the code, not in the file.

# %%
# NBVAL_CHECK_OUTPUT
folder = tempfile.mkdtemp()


def save_and_load(lib):
    lib.manual_seed(0)
    model = lib.nn.ModuleDict(
        {"encoder": lib.nn.Linear(2, 3), "steps": lib.nn.ModuleList([lib.nn.Linear(3, 3)])}
    )
    path = os.path.join(folder, f"{lib.__name__}.pt")
    lib.save(model.state_dict(), path)
    state = lib.load(path)
    library = type(state["encoder.weight"]).__module__.split(".")[0]
    print(f"an {type(state).__name__} of {library}.Tensor:")
    for name, tensor in state.items():
        print(f"  {name}: {list(tensor.shape)}")


compare(save_and_load, (torch, minitorch))

# %% [markdown]
# `load_state_dict(state)` is strict by default: it raises a `RuntimeError` that lists
# the **missing keys** (parameters of the model that the state does not have), the
# **unexpected keys** (entries of the state the model has no parameter for) and any
# **size mismatch**. When it succeeds, nothing checks that the new `forward` uses the
# parameters the way the old one did.

# %% [markdown] nbgrader={"grade_id": "ex7_predict_loading_statement", "locked": true}
# ### Exercise 7 (2 points): what loads, and what it computes
#
# A `Source(4, 8)` model was trained and its `state_dict` saved. For each target class
# below (every one derives from `Source`), predict **before running it** what
# `Target(4, 8).load_state_dict(state)` does:
#
# - `"same_output"`: it loads, and the target computes the same outputs as the source;
# - `"different_output"`: it loads, but the outputs differ;
# - `"missing_keys"`, `"unexpected_keys"`, `"size_mismatch"`: it raises, and that is
#   what the error complains about (each target triggers only one kind).
#
# **Source**
# ```python
# class Source(nn.Module):
#     def __init__(self, features, hidden):
#         super().__init__()
#         self.encoder = nn.Linear(features, hidden)
#         self.steps = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(3)])
#         self.head = nn.Linear(hidden, 1)
#
#     def forward(self, x):
#         h = self.encoder(x).tanh()
#         for step in self.steps:
#             h = step(h).tanh()
#         return self.head(h)
# ```
#
# **a**
# ```python
# class Target(Source):
#     def forward(self, x):  # every step twice
#         h = self.encoder(x).tanh()
#         for step in [*self.steps, *self.steps]:
#             h = step(h).tanh()
#         return self.head(h)
# ```
#
# **b**
# ```python
# class Target(Source):
#     def forward(self, x):  # with indices
#         h = self.encoder(x).tanh()
#         for i in range(len(self.steps)):
#             h = self.steps[i](h).tanh()
#         return self.head(h)
# ```
#
# **c**
# ```python
# class Target(Source):
#     def __init__(self, features, hidden):
#         nn.Module.__init__(self)
#         self.encoder = nn.Linear(features, hidden)
#         self.steps = [nn.Linear(hidden, hidden) for _ in range(3)]  # a plain list
#         self.head = nn.Linear(hidden, 1)
# ```
#
# **d**
# ```python
# class Target(Source):
#     def __init__(self, features, hidden):
#         super().__init__(features, 2 * hidden)  # twice as wide
# ```
#
# **e**
# ```python
# class Target(Source):
#     def __init__(self, features, hidden):
#         super().__init__(features, hidden)
#         self.steps.append(nn.Linear(hidden, hidden))  # a fourth step
# ```
#
# **f**
# ```python
# class Target(Source):
#     def __init__(self, features, hidden):
#         super().__init__(features, hidden)
#         del self.head  # the head is now built in forward
#
#     def forward(self, x):
#         h = self.encoder(x).tanh()
#         for step in self.steps:
#             h = step(h).tanh()
#         return nn.Linear(h.shape[-1], 1)(h)
# ```
#
# **g**
# ```python
# class Target(Source):
#     def forward(self, x):  # a step runs only while h is small
#         h = self.encoder(x).tanh()
#         for step in self.steps:
#             if h.norm() < 100.0:
#                 h = step(h).tanh()
#         return self.head(h)
# ```
#
# Write `predict_loading()` returning a dict from each key to your prediction. Then
# check with `make_models(torch, key)` or `make_models(minitorch, key)` (defined
# below): the grader runs every target on both libraries. Each right prediction earns
# its share of the points.

# %% nbgrader={"grade_id": "ex7_models", "locked": true}
# The model that is saved, and the models its state_dict is loaded into (exercise 7).
SOURCE_MODEL = """\
class Source(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.encoder = nn.Linear(features, hidden)
        self.steps = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(3)])
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.encoder(x).tanh()
        for step in self.steps:
            h = step(h).tanh()
        return self.head(h)
"""
TARGETS = {
    "a": """\
class Target(Source):
    def forward(self, x):  # every step twice
        h = self.encoder(x).tanh()
        for step in [*self.steps, *self.steps]:
            h = step(h).tanh()
        return self.head(h)
""",
    "b": """\
class Target(Source):
    def forward(self, x):  # with indices
        h = self.encoder(x).tanh()
        for i in range(len(self.steps)):
            h = self.steps[i](h).tanh()
        return self.head(h)
""",
    "c": """\
class Target(Source):
    def __init__(self, features, hidden):
        nn.Module.__init__(self)
        self.encoder = nn.Linear(features, hidden)
        self.steps = [nn.Linear(hidden, hidden) for _ in range(3)]  # a plain list
        self.head = nn.Linear(hidden, 1)
""",
    "d": """\
class Target(Source):
    def __init__(self, features, hidden):
        super().__init__(features, 2 * hidden)  # twice as wide
""",
    "e": """\
class Target(Source):
    def __init__(self, features, hidden):
        super().__init__(features, hidden)
        self.steps.append(nn.Linear(hidden, hidden))  # a fourth step
""",
    "f": """\
class Target(Source):
    def __init__(self, features, hidden):
        super().__init__(features, hidden)
        del self.head  # the head is now built in forward

    def forward(self, x):
        h = self.encoder(x).tanh()
        for step in self.steps:
            h = step(h).tanh()
        return nn.Linear(h.shape[-1], 1)(h)
""",
    "g": """\
class Target(Source):
    def forward(self, x):  # a step runs only while h is small
        h = self.encoder(x).tanh()
        for step in self.steps:
            if h.norm() < 100.0:
                h = step(h).tanh()
        return self.head(h)
""",
}


def make_models(lib, key):
    """(Source(4, 8), Target(4, 8)) for target `key`, built with `lib.nn`."""
    namespace = {"nn": lib.nn}
    exec(SOURCE_MODEL, namespace)
    exec(TARGETS[key], namespace)
    return namespace["Source"](4, 8), namespace["Target"](4, 8)


# %% nbgrader={"grade_id": "ex7_predict_loading", "solution": true}
def predict_loading():
    """Your predictions for the targets in `TARGETS`, before running them.

    A dict from each target's key to what `Target(4, 8).load_state_dict(state)` does, where
    `state` is the state_dict of a trained `Source(4, 8)`: "same_output" (loads, and gives
    Source's outputs), "different_output" (loads, but computes something else),
    "missing_keys", "unexpected_keys" or "size_mismatch" (load_state_dict raises, and that is
    what its message complains about). PyTorch and minitorch behave the same.
    """
    ### BEGIN SOLUTION
    return {
        "a": "different_output",
        "b": "same_output",
        "c": "unexpected_keys",
        "d": "size_mismatch",
        "e": "missing_keys",
        "f": "unexpected_keys",
        "g": "same_output",
    }
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex7_predict_loading_tests", "grade": true, "points": 2}
with exercise(7):
    predictions = predict_loading()
    assert isinstance(predictions, dict), f"return a dict, not {type(predictions).__name__}"
    missing = sorted(set(TARGETS) - set(predictions))
    assert not missing, f"no prediction for targets {missing}"
    outcomes = (
        "same_output",
        "different_output",
        "missing_keys",
        "unexpected_keys",
        "size_mismatch",
    )
    for key, guess in predictions.items():
        assert guess in outcomes, f"{key!r}: {guess!r} is not one of {outcomes}"
    print("Your predictions are well formed; the hidden tests run the targets.")

### BEGIN HIDDEN TESTS
from solutions.dynamic_models import grade

grade.predict_loading(predict_loading)
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - The graph is recorded while `forward` runs, so Python control flow decides it: a
#   branch not taken records nothing, a loop records its body once per iteration. A
#   `while` over data needs a step limit.
# - A parameter gets a gradient only from passes that used it. Once used, its `.grad`
#   stays a tensor (not updated by later passes) until `zero_grad()` sets it back to
#   None; zero tensors still get stepped by momentum and weight decay.
# - A model that draws its depth per batch still owns, saves and moves (`.to()`) all its
#   layers; a step leaves `.grad` None on the layers it did not reach.
# - `no_grad` inside `forward` cuts every layer before the block off from the loss, and the
#   loss still goes down. To keep a layer from training, freeze its parameters
#   (`requires_grad_(False)`).
# - Using a module several times shares its parameters; their gradient is the sum over
#   the uses.
# - Per-sample paths in a batch: run each branch once on the rows routed to it (boolean
#   masks), not one pass per sample.
# - Sequences of different lengths: loop (slow), pad and mask (computes the padding,
#   then ignores it), or pack (computes only valid steps). Whatever reads padded outputs
#   must use the lengths: the last valid step is at `length - 1`; a mean divides by the
#   length. A packed sequence stores the valid steps step by step: `batch_sizes[t]` is how
#   many sequences are still running at step t.
# - Recursive models build one graph per sample, following its structure.
# - Create layers in `__init__`, hold them in `nn.ModuleList` / `nn.ModuleDict`: layers
#   made in `forward` or kept in a Python list are not trained, not saved and not moved
#   by `.to()`.
# - A saved model is its `state_dict`: names and tensors. The code of `forward` is not in
#   it; the model you load into decides what is computed.
#
# Next notebook: where the memory goes, and how to spend less of it.
