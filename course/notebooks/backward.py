# ---
# jupyter:
#   jupytext:
#     formats: py:percent,../source/backward//ipynb
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
# # Notebook 2: how backward walks the graph
#
# Notebook 1 showed the graph that the forward pass records. This notebook is about the
# other half: `backward()`, which walks that graph from the output to the leaves and
# applies the chain rule at every node. You will write the engine that does it.
#
# After this notebook you will be able to:
#
# - apply the chain rule node by node, calling the graph's nodes by hand;
# - explain why the nodes must run in a **topological order** when a value is used twice,
#   and compute that order without recursion;
# - explain how **broadcasting** shows up in backward, and reduce a gradient to its
#   input's shape;
# - write a backward engine that gives PyTorch's gradients on PyTorch and minitorch graphs,
#   broadcasting included;
# - explain gradient **accumulation** in leaves;
# - use vector-Jacobian products (`gradient=`), `retain_graph` and `create_graph`, and
#   tell them from the Jacobian-vector products of forward mode;
# - change the gradient along one path of the graph with a hook;
# - accumulate gradients over micro-batches and write a training loop by hand.
#
# Everything runs on **PyTorch** and on **minitorch**, this course's from-scratch autograd
# library. Your code must work on both.
#
# There are **9 graded exercises (25 points)**. Each has visible tests you can run (plain
# asserts that say what went wrong); more tests run when your notebook is graded. Write
# your answers where it says `# YOUR CODE HERE` and delete the `raise NotImplementedError()`.
# "Run All" runs every cell: a test or demo whose exercise is not written yet says so in one
# line and lets the rest of the notebook run.

# %%
import math
import textwrap
from collections import deque

import matplotlib.pyplot as plt
import torch
from IPython.display import display

import minitorch
from minitorch.notebook import exercise

minitorch.manual_seed(0)  # seeds torch's generator too: minitorch draws from it

# The name of the node behind a leaf that requires grad, in both libraries.
ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"


# %% [markdown]
# ## 1. The chain rule, one node at a time
#
# For `out = sum(sin(exp(x)))`, the chain rule says
# $$\frac{\partial\,out}{\partial x} = \underbrace{1}_{\text{sum}} \cdot
# \underbrace{\cos(e^{x})}_{\text{sin}} \cdot \underbrace{e^{x}}_{\text{exp}}.$$
# Backward computes this product from the left: each node receives the gradient of the
# output with respect to **its result** (the "incoming gradient"), multiplies it by its
# own local derivative, and passes the product on to its inputs. A node is callable:
# `node(grad)` returns the gradients for its inputs, one per `next_functions` entry
# (a single tensor when there is one input). Here we call the three nodes by hand, under
# `no_grad` so that computing gradients records nothing, and compare with `backward()`:


# %%
# NBVAL_CHECK_OUTPUT
def chain_rule(lib):
    """The gradient of sum(sin(exp(x))) from the three nodes called by hand, and from backward()."""
    x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
    a = x.exp()
    s = a.sin()
    out = s.sum()
    with lib.no_grad():
        grad_s = out.grad_fn(lib.tensor(1.0, dtype=lib.float64))  # SumBackward0
        grad_a = s.grad_fn(grad_s)  # SinBackward0: times cos(a)
        grad_x = a.grad_fn(grad_a)  # ExpBackward0: times exp(x)
    out.backward()
    print("by hand:   ", [round(v, 5) for v in grad_x.tolist()])
    print("backward():", [round(v, 5) for v in x.grad.tolist()])


minitorch.viz.compare(chain_rule, (torch, minitorch))
by_hand = [math.cos(math.exp(v)) * math.exp(v) for v in (0.5, 1.0, 2.0)]
print("cos(e^x) e^x:", [round(v, 5) for v in by_hand])


# %% [markdown]
# The last node is `AccumulateGrad`, the node behind the leaf `x`: it does not compute
# anything, it **adds** the gradient it receives into `x.grad`. Backward from `out` is
# thus: call every op node on its incoming gradient, route the results along
# `next_functions`, and let the `AccumulateGrad` nodes store them. In the pictures below
# arrows follow the forward pass; backward walks them in reverse.


# %%
def chain_example(lib):
    x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
    return x.exp().sin().sum(), x


(torch_out, tx), (minitorch_out, mx) = chain_example(torch), chain_example(minitorch)
minitorch.viz.show_side_by_side(torch_out, minitorch_out, {"x": (tx, mx)})

# %% [markdown]
# Here is the whole flow for `out = (x * w + sin(x)).sum()` with scalars `x = 0.5` and
# `w = 2`, drawn by `minitorch.viz.gradient_flow`. The arrows now point the way gradients
# flow: from the output down to the leaves. Each box shows the value the forward pass
# computed and the gradient of `out` with respect to it; each red label is the gradient a
# node passes to that input. `x` is used twice, so two arrows reach it: `x.grad` is the
# **sum** of the two gradients, $w + \cos x$.


# %%
def flow_example(lib):
    """The gradient-flow picture of out = (x * w + sin(x)).sum() on scalars."""
    x = lib.tensor(0.5, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
    xw, sin_x = x * w, x.sin()
    h = xw + sin_x
    names = {"x": x, "w": w, "x * w": xw, "sin(x)": sin_x, "h": h}
    return minitorch.viz.gradient_flow(h.sum(), names)


pictures = {lib: flow_example(lib) for lib in (torch, minitorch)}
assert pictures[torch].source == pictures[minitorch].source  # the same numbers in both
pictures[minitorch]

# %% [markdown]
# ## 2. A value used twice: why the order matters
#
# In `a = x * 2; out = a * a + a.exp().sin()` the value `a` is used by two consumers,
# `a * a` and `a.exp()`. Its node, `MulBackward0` of `x * 2`, receives one gradient from
# each, and it may only run once **both** have arrived: the gradient of `out` with
# respect to `a` is their **sum** (one term per path from `a` to `out`).


# %%
# NBVAL_CHECK_OUTPUT
def two_paths(lib):
    """The gradient that reaches a along each path, and a.grad after backward()."""
    x = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
    a = x * 2
    a.retain_grad()  # keep the gradient of this non-leaf in a.grad
    square, other = a * a, a.exp().sin()
    out = (square + other).sum()
    (from_square,) = lib.autograd.grad(square.sum(), a, retain_graph=True)
    (from_other,) = lib.autograd.grad(other.sum(), a, retain_graph=True)
    out.backward()
    print("via a * a:       ", [round(v, 4) for v in from_square.tolist()])
    print("via sin(exp(a)): ", [round(v, 4) for v in from_other.tolist()])
    print("a.grad (the sum):", [round(v, 4) for v in a.grad.tolist()])


minitorch.viz.compare(two_paths, (torch, minitorch))


# %%
def diamond(lib):
    x = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
    a = x * 2
    return (a * a + a.exp().sin()).sum(), x


(torch_out, tx), (minitorch_out, mx) = diamond(torch), diamond(minitorch)
minitorch.viz.show_side_by_side(torch_out, minitorch_out, {"x": (tx, mx)})


# %% [markdown]
# Notebook 1 listed nodes breadth-first. That order is **not** safe for backward: `x * 2`
# is discovered at depth 2 (through `a * a`), before `ExpBackward0`, which is one of its
# consumers. An engine running nodes in that order would run `x * 2` with only the
# gradient from `a * a` and lose the other path. The engine needs an order where **every
# node comes after all its consumers**: a *topological order* of the graph.


# %%
# NBVAL_CHECK_OUTPUT
def breadth_first(tensor):
    """Notebook 1's order: breadth-first, each node when first discovered."""
    order, seen = [tensor.grad_fn], {tensor.grad_fn}
    for node in order:  # the list grows while we walk it
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                order.append(child)
    return order


out, x = diamond(torch)
print("breadth-first:", [node.name() for node in breadth_first(out)])


# %% [markdown]
# The same order as a picture (`minitorch.viz.order_dot`): each box shows its step in the
# breadth-first order. Arrows go from a node to its inputs, the way gradients flow, so an
# engine must run every arrow's tail before its head. The red arrow is the one that
# breadth-first order runs the wrong way: `x * 2` (step 5) would run before `ExpBackward0`
# (step 6) has passed it its gradient.

# %%
out, x = diamond(minitorch)
minitorch.viz.order_dot(out, {"breadth-first": breadth_first(out)}, {"x": x})


# %% [markdown] nbgrader={"grade_id": "ex1_topological_order_statement", "locked": true}
# ### Exercise 1 (3 points): a topological order of the graph
#
# Write `topological_order(tensor)` returning a **list of every node** reachable from
# `tensor.grad_fn` through `next_functions` (skip `None`, include the `AccumulateGrad`
# nodes), **each once**, such that **every node comes after all of its consumers** (the
# nodes that have it in their `next_functions`). The first element is `tensor.grad_fn`;
# a tensor without `grad_fn` gives `[]`.
#
# The order must be **deterministic**: the same graph always gives the same list (do
# not iterate over a `set`, whose order depends on memory addresses). It must work on a
# chain of **10,000 ops**, where recursion exceeds Python's limit, and take time in
# proportion to the graph's size: a chain of 40 diamonds has 2^40 paths from its output
# to its leaf, so a node reached along several paths must be visited once.
#
# Example: for the diamond above, one valid answer is
#
# ```python
# ['SumBackward0', 'AddBackward0', 'MulBackward0', 'SinBackward0', 'ExpBackward0',
#  'MulBackward0', 'torch::autograd::AccumulateGrad']
# ```
#
# *Hint (Kahn's algorithm):* first walk the graph once (a list as a stack) and count, for
# every node, the edges that point at it. Then start from the root with a `deque`: take a
# node, append it to the answer, and decrement the count of each child; a child whose
# count reaches zero has had all its consumers listed, so it is ready.


# %% nbgrader={"grade_id": "ex1_topological_order", "solution": true}
def topological_order(tensor):
    """Every node of the graph behind `tensor`, each once, every node after all its consumers.

    A consumer of a node is a node that has it in its `next_functions`. Start at
    `tensor.grad_fn` (the first element); include the AccumulateGrad nodes; `[]` when
    `tensor.grad_fn` is None. The same graph must always give the same order (no iteration over
    sets). Must not recurse: a chain of 10,000 ops has to work. PyTorch and minitorch alike.
    """
    ### BEGIN SOLUTION
    root = tensor.grad_fn
    if root is None:
        return []
    # 1. Find every node and count the edges pointing at it (one per consumer input).
    pending = {root: 0}
    to_visit = [root]
    while to_visit:
        node = to_visit.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            if child not in pending:
                pending[child] = 0
                to_visit.append(child)
            pending[child] += 1
    # 2. Kahn's algorithm: a node is ready once every edge into it has been used.
    order = []
    ready = deque([root])
    while ready:
        node = ready.popleft()
        order.append(node)
        for child, _ in node.next_functions:
            if child is not None:
                pending[child] -= 1
                if pending[child] == 0:
                    ready.append(child)
    return order
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex1_topological_order_tests", "grade": true, "points": 3}
with exercise(1):
    for lib in (torch, minitorch):
        out, x = diamond(lib)
        order = topological_order(out)
        name = lib.__name__
        assert isinstance(order, list), f"{name}: return a list, not {type(order).__name__}"
        assert len(order) == 7, f"{name}: the diamond has 7 nodes, you listed {len(order)}"
        assert order[0] is out.grad_fn, f"{name}: the list starts with out.grad_fn"
        position = {node: i for i, node in enumerate(order)}
        assert len(position) == 7, f"{name}: a node is listed twice"
        for node in order:
            for child, _ in node.next_functions:
                if child is not None:
                    assert position[child] > position[node], (
                        f"{name}: {child.name()} comes before its consumer {node.name()}"
                    )
        assert topological_order(x) == [], f"{name}: a leaf has no nodes"

    h = minitorch.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(10_000):
        h = h * 1.0
    try:
        count = len(topological_order(h))
    except RecursionError:
        raise AssertionError("topological_order recursed too deep on 10,000 ops") from None
    assert count == 10_001, f"a chain of 10,000 ops has 10,001 nodes, got {count}"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.backward import grade

grade.topological_order(topological_order)
### END HIDDEN TESTS


# %%
# NBVAL_CHECK_OUTPUT
def print_order(lib):
    """The diamond's nodes in the order of your topological_order, one a line."""
    out, x = diamond(lib)
    for node in topological_order(out):
        print(node.name())


with exercise(1):
    minitorch.viz.compare(print_order, (torch, minitorch))


# %% [markdown]
# Your order next to breadth-first on the diamond's picture. No arrow of yours should be red:
# a red arrow labelled `topological_order` is one your order runs the wrong way.

# %%
with exercise(1):
    out, x = diamond(minitorch)
    orders = {"breadth-first": breadth_first(out), "topological_order": topological_order(out)}
    display(minitorch.viz.order_dot(out, orders, {"x": x}))


# %% [markdown]
# ## 3. Broadcasting in backward
#
# In `y = x * w` with `x` of shape (4, 3) and `w` of shape (3,), broadcasting uses each
# element of `w` four times, once per row. A value used several times receives the
# **sum** of the gradients of its uses (section 2), so the gradient of `w` is the
# gradient of `y` times `x`, **summed over the rows**, with the shape of `w`.
#
# Who does the summing? Call the `MulBackward0` node by hand: PyTorch's node returns the
# gradient in the broadcast shape (4, 3), and PyTorch's **engine** reduces it to (3,)
# before passing it on. minitorch's backward formulas reduce inside the node. The engine
# you write in section 4 runs PyTorch's nodes too, so it needs the reduction you write
# now.


# %%
# NBVAL_CHECK_OUTPUT
def broadcast_backward(lib):
    """What MulBackward0 returns for the broadcast w, and w.grad after backward()."""
    x = lib.ones(4, 3, dtype=lib.float64)
    w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    y = x * w
    with lib.no_grad():
        _, grad_w = y.grad_fn(lib.ones(4, 3, dtype=lib.float64))
    y.sum().backward()
    print("the node returns shape", list(grad_w.shape))
    print("w.grad after backward():", w.grad.tolist())


minitorch.viz.compare(broadcast_backward, (torch, minitorch))


# %% [markdown] nbgrader={"grade_id": "ex2_sum_to_shape_statement", "locked": true}
# ### Exercise 2 (2 points): reduce a broadcast gradient to an input's shape
#
# Write `sum_to_shape(grad, shape)`: `grad` is the gradient of a broadcast result, and
# `shape` (a tuple or `Size`) is the shape of an input that was broadcast to
# `grad.shape`. Return the gradient of that input: `grad` summed over
#
# 1. the **leading** dimensions that broadcasting added (when `grad` has more dimensions
#    than `shape`), and
# 2. the dimensions where `shape` has a **1** and `grad` does not, keeping them as size 1.
#
# The result has exactly `shape`, which may be `()`. It must work on PyTorch and
# minitorch tensors.
#
# Example: `grad` of shape (5, 4, 3) and `shape` (4, 1) give `grad.sum(dim=0)` summed
# over its last dimension with `keepdim=True`: shape (4, 1).
#
# *Hint:* `t.sum(dim=(0, 2), keepdim=True)` sums several dimensions at once. Broadcasting
# aligns shapes on the **right**.


# %% nbgrader={"grade_id": "ex2_sum_to_shape", "solution": true}
def sum_to_shape(grad, shape):
    """Reduce `grad`, the gradient of a broadcast result, to the gradient of an input of `shape`.

    `shape` (a tuple or Size) broadcasts to `grad.shape`. Sum over the leading dimensions that
    broadcasting added, and over the dimensions where `shape` has a 1 but `grad` does not,
    keeping those as size 1. The result has exactly `shape`. PyTorch and minitorch tensors.
    """
    ### BEGIN SOLUTION
    shape = tuple(shape)
    added = grad.dim() - len(shape)
    if added > 0:
        grad = grad.sum(dim=tuple(range(added)))
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(dim=stretched, keepdim=True)
    return grad
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex2_sum_to_shape_tests", "grade": true, "points": 2}
with exercise(2):
    for lib in (torch, minitorch):
        name = lib.__name__
        grad = lib.ones(5, 4, 3, dtype=lib.float64)
        for shape, value in (((4, 1), 15.0), ((3,), 20.0), ((1, 4, 3), 5.0), ((), 60.0)):
            got = sum_to_shape(grad, shape)
            assert tuple(got.shape) == shape, (
                f"{name}: sum_to_shape(grad of shape (5, 4, 3), {shape}) has shape"
                f" {tuple(got.shape)}, expected {shape}"
            )
            assert got.flatten().tolist() == [value] * got.numel(), (
                f"{name}: sum_to_shape(ones(5, 4, 3), {shape}): each entry should be {value}"
                f" (the number of copies summed), got {got.flatten().tolist()}"
            )
        assert sum_to_shape(grad, (5, 4, 3)).shape == (5, 4, 3), f"{name}: nothing to reduce"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.backward import grade

grade.sum_to_shape(sum_to_shape)
### END HIDDEN TESTS

# %% [markdown]
# ## 4. The engine
#
# With a topological order, backward is a single loop. Keep a dict from node to the
# gradient that has reached it so far, starting with `{out.grad_fn: grad}`. For each node
# in order, all its gradients have arrived, so:
#
# - an `AccumulateGrad` node adds its gradient into `node.variable.grad`;
# - any other node is called on its gradient; result `i` is the gradient for the edge
#   `next_functions[i] = (child, nr)`. It is **reduced** to the shape `child` expects
#   (section 3), then **added** to what `child` has received so far (`None` entries, and
#   `None` results, are skipped).
#
# Gradients are plain values, not part of the model: compute them under `no_grad`,
# otherwise every multiplication inside a node records a graph of its own.
#
# Which shape does a node expect? The shape of its forward op's output `nr` (for
# `AccumulateGrad`, the leaf's shape). Both libraries store it in each node when the op
# is recorded, which is how PyTorch's engine reduces gradients; neither makes it public
# (PyTorch calls it the node's `_input_metadata`: in backward, a forward output is an
# input). The next cell reads it for you.


# %% nbgrader={"grade_id": "gradient_shape", "locked": true}
def gradient_shape(node, nr=0):
    """The shape of the gradient that `node` takes for its forward output `nr`: that output's
    shape (a leaf's shape for AccumulateGrad). PyTorch and minitorch nodes."""
    leaf = getattr(node, "variable", None)  # AccumulateGrad
    if leaf is not None:
        return tuple(leaf.shape)
    metadata = getattr(node, "_input_metadata", None)  # PyTorch
    if metadata is not None:
        return tuple(metadata[nr].shape)
    shape, dtype, device = node._output_meta[nr]  # minitorch
    return tuple(shape)


# %%
# NBVAL_CHECK_OUTPUT
def expected_shapes(lib):
    """For y = x * w.exp(), the shape each node returns for w's side and the shape it expects."""
    x = lib.ones(4, 3, dtype=lib.float64)
    w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    y = x * w.exp()
    with lib.no_grad():
        _, grad_for_exp = y.grad_fn(lib.ones(4, 3, dtype=lib.float64))
    child, nr = y.grad_fn.next_functions[1]
    print(child.name(), "expects", list(gradient_shape(child, nr)))
    print("MulBackward0 returns", list(grad_for_exp.shape))


minitorch.viz.compare(expected_shapes, (torch, minitorch))

# %% [markdown] nbgrader={"grade_id": "ex3_run_backward_statement", "locked": true}
# ### Exercise 3 (6 points): your own backward engine
#
# Write `run_backward(tensor, grad)`, which does what `tensor.backward(grad)` does: for
# every leaf that requires grad, **add** d(sum(tensor * grad))/d(leaf) to `leaf.grad`
# (creating `.grad` if it is None; a `.grad` that already holds values is added to, as
# PyTorch does). `grad` has the shape of `tensor`; `tensor` has a `grad_fn`. Return
# nothing. Leave `grad` unchanged, and give every `.grad` you create memory of its own: a
# node may pass the very same tensor on to several inputs (`x + y` does), and a `.grad`
# that shares memory with `grad` or with another leaf's `.grad` changes when they do.
#
# Visit the nodes in the order of your `topological_order`; call op nodes as
# `node(node_grad)` under `torch.no_grad()` and `minitorch.no_grad()` (the node may
# come from either library) and turn a single returned tensor into a 1-tuple. Reduce
# every gradient a node returns for `(child, nr)` with
# `sum_to_shape(child_grad, gradient_shape(child, nr))` **before** adding it to what
# `child` has received: only gradients of the same shape add up elementwise. (On
# minitorch's nodes the reduction changes nothing.) Every node in the graphs of this
# exercise has a single output (no `unbind`), so one gradient per node is enough.
#
# The grader compares with `backward()` on random PyTorch and minitorch graphs with
# fan-out and reuse, broadcasting (inputs of shapes such as `()`, `(3,)` and `(4, 1)` in
# ops of shape `(2, 4, 3)`, some of them reduced by `sum(dim=0)` first), a long chain and
# a chain of diamonds. It runs your engine with correct versions of `topological_order`
# and `sum_to_shape`, so exercises 1 and 2 cost no points here.
#
# *Hints:* `node.name() == ACCUMULATE_GRAD` for leaves. Store the first gradient of a
# leaf as a copy (`.clone()`), and add gradients with `a = a + b`: `a += b` writes into
# `a`, which may be a gradient that flows elsewhere too.


# %% nbgrader={"grade_id": "ex3_run_backward", "solution": true}
def run_backward(tensor, grad):
    """Your own `tensor.backward(grad)`: add d(sum(tensor * grad))/d(leaf) to each leaf's `.grad`.

    `grad` has the shape of `tensor`, which has a `grad_fn`. Visit the nodes in topological
    order; call each op node on the sum of the gradients that reached it (under no_grad),
    reduce each result to the shape its `next_functions` entry expects (`sum_to_shape` and
    `gradient_shape`) and pass it on; an AccumulateGrad node adds its gradient into
    `node.variable.grad` (created on first use). Every node in these graphs has a single
    output. Works on PyTorch and minitorch graphs.
    """
    ### BEGIN SOLUTION
    grads = {tensor.grad_fn: grad}
    for node in topological_order(tensor):
        node_grad = grads.pop(node, None)
        if node_grad is None:  # no path from the output carries a gradient here
            continue
        if node.name() == ACCUMULATE_GRAD:
            leaf = node.variable
            leaf.grad = node_grad.clone() if leaf.grad is None else leaf.grad + node_grad
            continue
        with torch.no_grad(), minitorch.no_grad():
            input_grads = node(node_grad)
            if not isinstance(input_grads, tuple):
                input_grads = (input_grads,)
            for (child, nr), child_grad in zip(node.next_functions, input_grads):
                if child is None or child_grad is None:
                    continue
                child_grad = sum_to_shape(child_grad, gradient_shape(child, nr))
                grads[child] = grads[child] + child_grad if child in grads else child_grad
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex3_run_backward_tests", "grade": true, "points": 6}
def broadcast_example(lib):
    """w of shape (3,) broadcast over the rows of x and used again on its own; W reduced first."""
    x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lib.float64)
    w = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    W = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
    return (x * w + w.sin() + x * W.sum(dim=0)).sum(), (w, W)


with exercise(3):
    for lib in (torch, minitorch):
        name = lib.__name__
        out, x = diamond(lib)
        run_backward(out, lib.tensor(1.0, dtype=lib.float64))
        mine = x.grad
        out, x = diamond(lib)
        out.backward()
        assert mine is not None, f"{name}: x.grad is None after run_backward"
        assert not mine.requires_grad, f"{name}: x.grad requires grad: call the nodes under no_grad"
        assert torch.allclose(torch.tensor(mine.tolist()), torch.tensor(x.grad.tolist())), (
            f"{name}: x.grad is {mine.tolist()}, backward() gives {x.grad.tolist()}"
        )
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        w.grad = lib.tensor([10.0, 10.0])
        run_backward(w * 3, lib.tensor([1.0, 1.0]))
        assert w.grad.tolist() == [13.0, 13.0], (
            f"{name}: add to an existing .grad, got {w.grad.tolist()}"
        )
        out, leaves = broadcast_example(lib)
        try:
            run_backward(out, lib.tensor(1.0, dtype=lib.float64))
        except RuntimeError as error:
            raise AssertionError(
                f"{name}, a graph with broadcasting: {error}. Reduce every gradient a node"
                " returns: sum_to_shape(child_grad, gradient_shape(child, nr))"
            ) from None
        mine = [leaf.grad for leaf in leaves]
        out, leaves = broadcast_example(lib)
        out.backward()
        for leaf_name, got, leaf in zip(("w", "W"), mine, leaves):
            assert got is not None and tuple(got.shape) == tuple(leaf.shape), (
                f"{name}: {leaf_name}.grad must have {leaf_name}'s shape {list(leaf.shape)}"
            )
            assert torch.allclose(torch.tensor(got.tolist()), torch.tensor(leaf.grad.tolist())), (
                f"{name}: {leaf_name}.grad is {got.tolist()}, backward() gives"
                f" {leaf.grad.tolist()}: reduce each gradient before adding it to the others"
            )
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.backward import grade

grade.run_backward(run_backward)
### END HIDDEN TESTS


# %%
# NBVAL_CHECK_OUTPUT
def wide_graph(lib):
    """Parameters w (4,) and b (3, 1) broadcast against data x (3, 4); h used at two depths."""
    gen = torch.Generator().manual_seed(3)
    w, b, x = (
        lib.tensor(torch.randn(shape, generator=gen).tolist(), dtype=lib.float64)
        for shape in ((4,), (3, 1), (3, 4))
    )
    w.requires_grad_(), b.requires_grad_()
    h = (w * x + b).tanh()
    h2 = h * h.sigmoid() + w
    return (h2 * h + b.exp()).sin() - h, (w, b, x)


def engine_versus_backward(lib):
    """run_backward and backward() on the wide graph, with a non-scalar gradient."""
    gradient = lib.linspace(-2, 2, 12, dtype=lib.float64).reshape(3, 4)
    out, (w, b, x) = wide_graph(lib)
    run_backward(out, gradient)
    mine = [w.grad, b.grad, x.grad]
    out, (w, b, x) = wide_graph(lib)
    out.backward(gradient)
    for label, got, leaf in (("w", mine[0], w), ("b", mine[1], b)):
        same = torch.allclose(torch.tensor(got.tolist()), torch.tensor(leaf.grad.tolist()))
        print(f"{label}.grad: shape {list(got.shape)}, equals backward()'s: {same}")
    print(f"x.grad (x is data, no grad): {mine[2]}")


with exercise(3):
    minitorch.viz.compare(engine_versus_backward, (torch, minitorch))

# %% [markdown]
# ## 5. Gradients accumulate in leaves
#
# `AccumulateGrad` **adds** into `.grad`; it never overwrites. Two backward passes (here
# through the same graph, which needs `retain_graph=True`, see section 7) give twice the
# gradient. That is why training loops reset gradients with `optimizer.zero_grad()` (or
# `p.grad = None`) before every backward, and why gradients of several losses can be
# summed simply by calling backward on each (section 9).


# %%
# NBVAL_CHECK_OUTPUT
def accumulation(lib):
    """x.grad after one backward of (x * x).sum(), after two, after a reset and one more."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    out = (x * x).sum()
    out.backward(retain_graph=True)
    print("after one backward:   ", x.grad.tolist())
    out.backward()
    print("after two:            ", x.grad.tolist())
    x.grad = None
    (x * x).sum().backward()
    print("after reset, one more:", x.grad.tolist())


minitorch.viz.compare(accumulation, (torch, minitorch))

# %% [markdown]
# ## 6. Vector-Jacobian products and `gradient=`
#
# For a function with a vector output $y = f(x)$, backward does not compute the Jacobian
# $J$ (with $J_{ij} = \partial y_i / \partial x_j$). Each node only multiplies by its local
# derivative, so backward from $y$ with incoming gradient $v$ computes the
# **vector-Jacobian product** $v^\top J$, at the cost of about one forward pass.
# `out.backward()` without arguments only works when `out` has one element ($v = 1$);
# for anything else you pass $v$ as `gradient=` (or `grad_outputs=` in
# `autograd.grad`):


# %%
# NBVAL_CHECK_OUTPUT
def vector_jacobian_product(lib):
    """backward() from a vector output, without and with gradient=."""
    A = lib.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=lib.float64)
    x = lib.tensor([0.5, -1.0], dtype=lib.float64, requires_grad=True)
    y = A @ x  # J = A
    try:
        y.backward()
    except RuntimeError as error:
        message = f"y.backward(): RuntimeError: {error}"
    v = lib.tensor([1.0, 0.0, -1.0], dtype=lib.float64)
    y.backward(gradient=v)
    print("y.backward(gradient=v) gives")
    print("x.grad =", x.grad.tolist())
    print("v @ A = ", (v @ A).tolist())
    print(textwrap.fill(message, 40))


minitorch.viz.compare(vector_jacobian_product, (torch, minitorch))


# %% [markdown] nbgrader={"grade_id": "ex4_jacobian_statement", "locked": true}
# ### Exercise 4 (3 points): a Jacobian from vector-Jacobian products
#
# Write `jacobian(lib, f, x)` returning the full Jacobian of `f` at `x` as an
# $m \times n$ `lib` tensor: `f` maps a 1-D tensor of $n$ elements to a 1-D tensor of
# $m$ elements, `x` is a 1-D float64 `lib` tensor that does **not** require grad.
# Row $i$ is $e_i^\top J$, the vector-Jacobian product with the $i$-th unit vector.
# Run `f` **once** (the grader counts the calls), then get each row with
# `lib.autograd.grad(y, x, grad_outputs=..., retain_graph=True)`. The result has `x`'s
# dtype, and the caller's `x` must stay as it is (no `requires_grad` set on it).
# The grader compares with `torch.autograd.functional.jacobian`.
#
# *Hints:* make a leaf of your own that requires grad: `x.detach().requires_grad_()`.
# `lib.eye(m, dtype=y.dtype)[i]` is the $i$-th unit vector; `lib.stack(rows)` stacks
# the rows. Why `retain_graph=True`? Section 7 explains.


# %% nbgrader={"grade_id": "ex4_jacobian", "solution": true}
def jacobian(lib, f, x):
    """The Jacobian of `f` at `x`, one row per vector-Jacobian product.

    `f` maps a 1-D tensor of n elements to a 1-D tensor of m elements; `x` is a 1-D float64
    `lib` tensor that does not require grad. Returns the m x n `lib` tensor J with
    J[i, j] = d f(x)[i] / d x[j]. Run f once; get row i with `lib.autograd.grad` and
    `grad_outputs` the i-th unit vector.
    """
    ### BEGIN SOLUTION
    x = x.detach().requires_grad_()
    y = f(x)
    units = lib.eye(y.shape[0], dtype=y.dtype)
    rows = []
    for i in range(y.shape[0]):
        (row,) = lib.autograd.grad(y, x, grad_outputs=units[i], retain_graph=True)
        rows.append(row)
    return lib.stack(rows)
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex4_jacobian_tests", "grade": true, "points": 3}
with exercise(4):
    for lib in (torch, minitorch):
        name = lib.__name__
        A = lib.tensor([[1.0, 2.0, 0.0], [0.0, 3.0, -1.0]], dtype=lib.float64)
        x = lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64)
        J = jacobian(lib, lambda t, A=A: A @ t, x)  # A=A: this iteration's A
        assert isinstance(J, lib.Tensor), f"{name}: return a {name} tensor"
        assert J.tolist() == A.tolist(), f"{name}: the Jacobian of A @ x is A, got {J.tolist()}"
        J = jacobian(lib, lambda t: t * t, x)
        expected = [[0.2, 0.0, 0.0], [0.0, 0.4, 0.0], [0.0, 0.0, 0.6]]
        assert torch.allclose(torch.tensor(J.tolist()), torch.tensor(expected)), (
            f"{name}: the Jacobian of x * x is diag(2x) = {expected}, got {J.tolist()}"
        )
        assert not x.requires_grad, f"{name}: do not change x itself"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.backward import grade

grade.jacobian(jacobian)
### END HIDDEN TESTS

# %% [markdown]
# The Jacobian of $f(x) = \tanh(Ax)$ for a random $A$ of shape (6, 8), from both libraries:

# %%
gen = torch.Generator().manual_seed(4)
A_values = (0.4 * torch.randn(6, 8, generator=gen, dtype=torch.float64)).tolist()
x_values = torch.randn(8, generator=gen, dtype=torch.float64).tolist()
with exercise(4):
    matrices = {}
    for lib in (torch, minitorch):
        A = lib.tensor(A_values, dtype=lib.float64)
        x = lib.tensor(x_values, dtype=lib.float64)
        J = jacobian(lib, lambda t, A=A: (A @ t).tanh(), x)
        matrices[f"jacobian({lib.__name__}, ...)"] = J.tolist()
    matrices["torch.autograd.functional.jacobian"] = torch.autograd.functional.jacobian(
        lambda t: (torch.tensor(A_values, dtype=torch.float64) @ t).tanh(),
        torch.tensor(x_values, dtype=torch.float64),
    ).tolist()
    fig, axes = plt.subplots(1, 3, figsize=(10, 2.6))
    for ax, (title, matrix) in zip(axes, matrices.items()):
        ax.imshow(matrix, cmap="RdBu", vmin=-0.8, vmax=0.8)
        ax.set_title(title)
    plt.show()

# %% [markdown]
# ## 7. `retain_graph` and `create_graph`
#
# **`retain_graph`.** Nodes keep the values their backward needs (`SinBackward0` keeps
# its input, `MulBackward0` both factors). Backward frees them as soon as a node has run,
# which is what keeps memory flat in training. A second backward through the same nodes
# then fails, unless the first one was told `retain_graph=True`:


# %%
# NBVAL_CHECK_OUTPUT
def second_backward(lib):
    """Two backward passes through the same graph, without and with retain_graph=True."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    out = x.sin().sum()
    out.backward()
    try:
        out.backward()
    except RuntimeError as error:
        print(textwrap.fill(textwrap.shorten(str(error), 110, placeholder=" ..."), 40))
    out = x.sin().sum()
    out.backward(retain_graph=True)
    out.backward()
    print("with retain_graph=True the second")
    print("backward works")


minitorch.viz.compare(second_backward, (torch, minitorch))


# %% [markdown]
# **`create_graph`.** A node's backward is itself made of ops (`grad * cos(x)`). With
# `create_graph=True` those ops are **recorded**, so the gradient is a tensor with a
# `grad_fn` of its own that you can differentiate again: second derivatives, third, and
# so on. Here $f(x) = x \sin x$ and its first three derivatives, each obtained by
# differentiating the previous one:


# %%
def derivatives(lib, points, order):
    """[f, f', f'', ...] at `points` for f(x) = x sin(x), each from the previous one."""
    x = lib.tensor(points, dtype=lib.float64, requires_grad=True)
    current = x * x.sin()
    curves = [current.tolist()]
    for _ in range(order):
        # Each element of `current` depends on its own point only, so the gradient of
        # the sum is the elementwise derivative.
        (current,) = lib.autograd.grad(current.sum(), x, create_graph=True)
        curves.append(current.tolist())
    return curves


points = torch.linspace(-6, 6, 200).tolist()
curves = {lib.__name__: derivatives(lib, points, 3) for lib in (torch, minitorch)}
assert all(
    math.isclose(p, q, abs_tol=1e-9)
    for a, b in zip(curves["torch"], curves["minitorch"])
    for p, q in zip(a, b)
)
fig, ax = plt.subplots(figsize=(6, 3.2))
for curve, label in zip(curves["minitorch"], ["f", "f'", "f''", "f'''"]):
    ax.plot(points, curve, label=label)
ax.set_title("x sin(x) and its derivatives (minitorch and PyTorch agree)")
ax.legend(loc="center left", bbox_to_anchor=(1, 0.5))
plt.show()


# %% [markdown] nbgrader={"grade_id": "ex5_hessian_vector_product_statement", "locked": true}
# ### Exercise 5 (3 points): Hessian-vector products
#
# For a scalar function $f$ with Hessian $H$, the product $Hv$ is the gradient of
# $g(x) \cdot v$, where $g = \nabla f$: differentiate once with `create_graph=True`,
# take the dot product with $v$, differentiate again. This costs two backward passes,
# whatever the size of $H$ (which is never built).
#
# Write `hessian_vector_product(lib, f, x, v)`: `f` maps a 1-D tensor to a 0-d tensor;
# `x` and `v` are 1-D float64 `lib` tensors of the same size, and `x` does not require
# grad (leave it that way: differentiate with respect to a leaf of your own). Return $Hv$
# as a `lib` tensor shaped like `x`. The grader compares with
# `torch.autograd.functional.hvp`.
#
# Example: for $f(x) = \sum x_i^3$, $H = \mathrm{diag}(6x)$, so $Hv = 6 x v$.


# %% nbgrader={"grade_id": "ex5_hessian_vector_product", "solution": true}
def hessian_vector_product(lib, f, x, v):
    """H v, where H is the Hessian of the scalar function `f` at `x`, without building H.

    `x` and `v` are 1-D float64 `lib` tensors of the same size; `x` does not require grad.
    Differentiate once with `create_graph=True`, then differentiate the dot product of that
    gradient with `v`. Returns a `lib` tensor shaped like `x`.
    """
    ### BEGIN SOLUTION
    x = x.detach().requires_grad_()
    (gradient,) = lib.autograd.grad(f(x), x, create_graph=True)
    (product,) = lib.autograd.grad((gradient * v).sum(), x)
    return product
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex5_hessian_vector_product_tests", "grade": true, "points": 3}
with exercise(5):
    for lib in (torch, minitorch):
        name = lib.__name__
        x = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64)
        v = lib.tensor([1.0, 1.0, 2.0], dtype=lib.float64)
        try:
            hv = hessian_vector_product(lib, lambda t: (t**3).sum(), x, v)
        except RuntimeError as error:
            if "does not require grad" not in str(error):
                raise
            hint = "did the first grad use create_graph=True?"
            raise AssertionError(f"{name}: {error}: {hint}") from None
        assert isinstance(hv, lib.Tensor), f"{name}: return a {name} tensor"
        assert hv.tolist() == [6.0, -12.0, 6.0], (
            f"{name}: H v = 6 x v = [6, -12, 6], got {hv.tolist()}"
        )
        A = lib.tensor([[2.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 4.0]], dtype=lib.float64)
        v = lib.tensor([1.0, -1.0, 2.0], dtype=lib.float64)
        hv = hessian_vector_product(lib, lambda t, A=A: t @ (A @ t) / 2, x, v)
        want = (A @ v).tolist()
        assert hv.tolist() == want, f"{name}: for x.Ax / 2, H v = A v = {want}, got {hv.tolist()}"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.backward import grade

grade.hessian_vector_product(hessian_vector_product)
### END HIDDEN TESTS

# %% [markdown]
# **Forward mode.** Backward computes $v^\top J$, one pass per *output* direction $v$:
# the gradient of a scalar loss with respect to every parameter at once. Forward mode
# computes the **Jacobian-vector product** $J t$, how the output moves when the input
# moves along $t$: one pass per *input* direction, the cheaper way for a function with few
# inputs and many outputs. PyTorch does it natively: `torch.func.jvp` (and
# `torch.autograd.forward_ad`, with dual numbers) carries a tangent next to every value
# through the forward pass, and records no graph. minitorch has no forward mode, but two
# backward passes give $J t$: $g(u) = J^\top u$ is linear in $u$, so the vector-Jacobian
# product of $g$ with $t$ is $(J^\top)^\top t = J t$. Record $g$ with `create_graph=True`
# from a dummy $u$ that requires grad (its value does not matter), then differentiate it.
# `torch.autograd.functional.jvp` and `minitorch.autograd.functional.jvp` both work this way.


# %%
# NBVAL_CHECK_OUTPUT
def jvp_by_two_vjps(lib, f, x, t):
    """J t for the Jacobian J of f at x: the vjp of u -> J^T u (one backward) with t."""
    x = x.detach().requires_grad_()
    y = f(x)
    u = lib.zeros_like(y, requires_grad=True)
    (g,) = lib.autograd.grad(y, x, grad_outputs=u, create_graph=True)  # J^T u, a graph in u
    (jt,) = lib.autograd.grad(g, u, grad_outputs=t)
    return jt


def forward_mode(lib):
    """J t for f(x) = tanh(A x), from two backward passes and from autograd.functional.jvp."""
    A = lib.tensor([[1.0, 2.0, 0.0], [0.0, 3.0, -1.0]], dtype=lib.float64)
    x = lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64)
    t = lib.tensor([1.0, 0.0, -1.0], dtype=lib.float64)

    def f(s):
        return (A @ s).tanh()

    _, functional = lib.autograd.functional.jvp(f, x, t)
    print("two vjps:  ", [round(v, 5) for v in jvp_by_two_vjps(lib, f, x, t).tolist()])
    print("functional:", [round(v, 5) for v in functional.tolist()])


minitorch.viz.compare(forward_mode, (torch, minitorch))
A = torch.tensor([[1.0, 2.0, 0.0], [0.0, 3.0, -1.0]], dtype=torch.float64)
_, tangent = torch.func.jvp(
    lambda s: (A @ s).tanh(),
    (torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64),),
    (torch.tensor([1.0, 0.0, -1.0], dtype=torch.float64),),
)
print("torch.func.jvp (forward mode, one pass):", [round(v, 5) for v in tangent.tolist()])

# %% [markdown]
# ## 8. Hooks: watching and changing gradients
#
# Hooks are functions the engine calls while it runs:
#
# - `tensor.register_hook(hook)`: `hook(grad)` receives the gradient of that tensor; it
#   may return a replacement (gradient clipping, debugging, ...).
# - `node.register_prehook(hook)`: `hook(grad_outputs)` runs just before the node;
#   `node.register_hook(hook)`: `hook(grad_inputs, grad_outputs)` runs just after.
#
# A prehook on every node shows the order in which the engine runs them: a topological
# order, like yours (among the nodes that are ready, the engine runs the most recently
# created first). Both libraries run the diamond in the same order:


# %%
# NBVAL_CHECK_OUTPUT
def engine_order(lib):
    """The names of the diamond's nodes, in the order the engine runs them."""
    out, x = diamond(lib)
    ran = []
    for node in breadth_first(out):
        # node=node: each hook keeps its own node, not the loop's last one
        node.register_prehook(lambda grads, node=node: ran.append(node.name()))
    out.backward()
    return ran


def print_engine_order(lib):
    for name in engine_order(lib):
        print(name)


minitorch.viz.compare(print_engine_order, (torch, minitorch))


# %% [markdown]
# A tensor hook that returns a tensor **replaces** the gradient: here the gradient of `h`
# is clamped to [-5, 5] before `MulBackward0` of `x * 10` multiplies it by 10 for `x`.


# %%
# NBVAL_CHECK_OUTPUT
def clamped_backward(lib):
    """Backward through h * h, printing and then clamping the gradient of h."""
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 10
    handle = h.register_hook(lambda grad: print("h receives", grad.tolist()))
    h.register_hook(lambda grad: grad.clamp(-5, 5))  # replaces the gradient of h
    (h * h).sum().backward()
    print("x.grad =", x.grad.tolist())
    handle.remove()


minitorch.viz.compare(clamped_backward, (torch, minitorch))


# %% [markdown] nbgrader={"grade_id": "ex6_scale_gradient_statement", "locked": true}
# ### Exercise 6 (1 point): change the gradient of one path with a hook
#
# A hook on a tensor sees the gradient of that tensor: the **sum** over all its uses. To
# change the gradient that flows back along **one** use only, give that use a tensor of
# its own and put the hook there.
#
# Write `scale_gradient(x, factor)`, which returns a tensor `y` with the **values of `x`**
# (the forward pass does not change) such that the gradient flowing back through `y` is
# multiplied by `factor` (a Python float) on its way to `x`. The gradients that reach `x`
# through its other uses stay as they are. `x` requires grad (a leaf or the result of an
# op) and must stay as it is: no hook on `x` itself. It must work on PyTorch and
# minitorch tensors.
#
# Example: with `y = scale_gradient(x, -1.0)` and `out = (3 * y).sum() + x.sum()`, every
# entry of `x.grad` is $-3 + 1 = -2$ (without the hook, $3 + 1 = 4$). A factor of $-1$ is
# the *gradient reversal* of domain-adversarial training; a factor between 0 and 1 makes
# the part of a model behind `y` learn more slowly; 0 blocks the gradient like `detach()`
# while `y` stays in the graph.
#
# *Hints:* `x * 1.0` is a new tensor with the values of `x`, whose gradient flows on to
# `x`. A hook that returns a tensor replaces the gradient; one that returns None leaves it
# as it was. Return a new tensor (`grad * factor`) rather than changing `grad` in place: a
# node may pass the very same gradient tensor to several inputs (`y + x` does).


# %% nbgrader={"grade_id": "ex6_scale_gradient", "solution": true}
def scale_gradient(x, factor):
    """A tensor with the values of `x` whose gradient is multiplied by `factor` on its way to `x`.

    Only the gradient that flows back through the returned tensor is scaled; what `x` receives
    through its other uses is not. `x` requires grad and gets no hook itself. PyTorch and
    minitorch alike.
    """
    ### BEGIN SOLUTION
    y = x * 1.0  # a tensor of its own: its hook sees only the gradient of this use of x
    y.register_hook(lambda grad: grad * factor)
    return y
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex6_scale_gradient_tests", "grade": true, "points": 1}
with exercise(6):
    for lib in (torch, minitorch):
        name = lib.__name__
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = scale_gradient(x, -1.0)
        assert isinstance(y, lib.Tensor), f"{name}: return a {name} tensor"
        assert y.tolist() == x.tolist(), (
            f"{name}: y must have the values of x, got {y.tolist()} (the factor scales the"
            " gradient only)"
        )
        ((3 * y).sum() + x.sum()).backward()
        assert x.grad.tolist() == [-2.0] * 3, (
            f"{name}: with factor -1, out = (3 * y).sum() + x.sum() gives x.grad = -3 + 1 ="
            f" -2, got {x.grad.tolist()} (4: the gradient through y was not scaled; -4: the"
            " gradient of x's other use was scaled too)"
        )
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = scale_gradient(x, 0.5)
        ((y + x) * 2).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0], (
            f"{name}: with factor 0.5, ((y + x) * 2).sum() gives x.grad = 1 + 2 = 3, got"
            f" {x.grad.tolist()}: did your hook change `grad` in place? y + x passes the same"
            " gradient tensor to y and to x"
        )
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.backward import grade

grade.scale_gradient(scale_gradient)
### END HIDDEN TESTS

# %% [markdown]
# Where the hook acts: in `out = 3 * y + x` with `y = scale_gradient(x, -1.0)`, the arrow
# into `y`'s node carries 3, and the hook turns it into -3 before the node runs. `x` sums
# that with the 1 from its direct use.

# %%
with exercise(6):
    x = minitorch.tensor(2.0, requires_grad=True)
    y = scale_gradient(x, -1.0)
    three_y = 3 * y
    display(minitorch.viz.gradient_flow(three_y + x, {"x": x, "y": y, "3 * y": three_y}))


# %% [markdown]
# ## 9. Accumulating gradients over micro-batches
#
# When a batch does not fit in memory, split it into $k$ micro-batches and call
# backward once per micro-batch: the gradients **add up** in `.grad` (section 5), and
# the saved values of each micro-batch are freed before the next one is computed. The
# only catch is the scale: a loss that is a **mean** over the batch is the average of
# $k$ equal micro-batches' means, so each micro-batch loss must be divided by $k$. When
# the micro-batches differ in size (the last one is often smaller), each mean counts
# with its share of the batch instead.

# %% [markdown] nbgrader={"grade_id": "ex7_accumulated_gradients_statement", "locked": true}
# ### Exercise 7 (3 points): gradient accumulation
#
# Write `accumulated_gradients(model, loss_fn, inputs, targets, k)`. `loss_fn` averages
# over the batch (like `nn.MSELoss()` or `nn.CrossEntropyLoss()`). Start from **zeroed
# gradients** (the model may hold old ones), split `inputs` and `targets` into
# micro-batches with `.chunk(k)`, run one forward and one backward per micro-batch, and
# return `[p.grad for p in model.parameters()]`. The result must equal the gradient of
# `loss_fn(model(inputs), targets)` over the full batch. The batch size need not be a
# multiple of `k`: the last micro-batch is then smaller (and `.chunk(k)` may make fewer
# than `k`). `model` and the tensors come from the same library, PyTorch or minitorch.
#
# Example: with `k = 2` and a batch of 8, each backward sees 4 samples, and after the
# second one `.grad` holds the same values as one backward on all 8. With `k = 4` and a
# batch of 10, the micro-batches have 3, 3, 3 and 1 samples.
#
# *Hint:* each micro-batch loss is a mean over its own samples, and the backward passes
# **add** their gradients: weight each loss by its share of the batch,
# `len(x) / len(inputs)`, so that the sum is the full-batch mean (for equal micro-batches
# that is dividing by `k`). Zero the gradients once, before the loop (`model.zero_grad()`).


# %% nbgrader={"grade_id": "ex7_accumulated_gradients", "solution": true}
def accumulated_gradients(model, loss_fn, inputs, targets, k):
    """The full-batch gradient of `loss_fn(model(inputs), targets)`, computed in k micro-batches.

    `loss_fn` averages over the batch; the batch splits into micro-batches with
    `inputs.chunk(k)` (the last one may be smaller). Start from zeroed gradients, run one
    forward and one backward per micro-batch, and return `[p.grad for p in
    model.parameters()]`: equal to the gradient of the full batch.
    """
    ### BEGIN SOLUTION
    model.zero_grad()
    for x, y in zip(inputs.chunk(k), targets.chunk(k)):
        loss = loss_fn(model(x), y) * (len(x) / len(inputs))  # its share of the batch
        loss.backward()
    return [p.grad for p in model.parameters()]
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex7_accumulated_gradients_tests", "grade": true, "points": 3}
with exercise(7):
    for lib in (torch, minitorch):
        name = lib.__name__
        lib.manual_seed(0)
        model = lib.nn.Linear(3, 2).double()
        inputs = lib.randn(8, 3, dtype=lib.float64)
        targets = lib.randn(8, 2, dtype=lib.float64)
        loss_fn = lib.nn.MSELoss()
        model.zero_grad()
        loss_fn(model(inputs), targets).backward()
        full = [p.grad.tolist() for p in model.parameters()]
        for k in (1, 2, 4, 3):  # k = 3: micro-batches of 3, 3 and 2 samples
            got = accumulated_gradients(model, loss_fn, inputs, targets, k)
            assert isinstance(got, list) and len(got) == 2, f"{name}: one gradient per parameter"
            for g, want in zip(got, full):
                assert torch.allclose(torch.tensor(g.tolist()), torch.tensor(want)), (
                    f"{name}, k = {k}: the gradient differs from the full-batch gradient:"
                    f" got {g.tolist()}, expected {want}"
                )
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.backward import grade

grade.accumulated_gradients(accumulated_gradients)
### END HIDDEN TESTS

# %% [markdown]
# ## 10. A training loop by hand
#
# A parameter update is not part of the model: it must not be recorded, and it changes
# a leaf in place, which autograd refuses for a leaf that requires grad (try it). So
# updates run under `no_grad()`. After the update, the gradients are reset, or the next
# backward would add to them (section 5). This is all an optimizer does:
# `optimizer.step()` is the update under `no_grad`, `optimizer.zero_grad()` the reset.


# %%
# NBVAL_CHECK_OUTPUT
def update(lib):
    """An in-place update of a leaf that requires grad, recorded, then under no_grad."""
    w = lib.tensor(1.0, requires_grad=True)
    (w * 3).backward()
    try:
        w -= 0.1 * w.grad
    except RuntimeError as error:
        message = f"RuntimeError: {error}"
    with lib.no_grad():
        w -= 0.1 * w.grad
    print(f"under no_grad: w = {w.item():.2f}")
    print("still a leaf:", w.is_leaf)
    print("without no_grad:")
    print(textwrap.fill(message, 40))


minitorch.viz.compare(update, (torch, minitorch))


# %% [markdown] nbgrader={"grade_id": "ex8_fit_line_statement", "locked": true}
# ### Exercise 8 (2 points): linear regression with hand-written SGD
#
# Write `fit_line(lib, x, y, steps, lr)` fitting $y \approx w x + b$ by gradient descent.
# `w` and `b` are 0-d leaf tensors with `x`'s dtype that require grad, both **starting at
# 0**. Each of the `steps` steps:
#
# 1. compute the loss `((w * x + b - y) ** 2).mean()` and record `loss.item()`;
# 2. backward;
# 3. under `lib.no_grad()`, update `w` and `b` **in place**: subtract `lr` times the
#    gradient;
# 4. reset the gradients (`w.grad = None`, or zero them).
#
# Return `(w, b, losses)`: `w` and `b` as Python floats, `losses` the list of the
# `steps` recorded losses. The grader checks your losses step by step against plain
# gradient descent, and the slope against the true one, on data from
# $y = 2x + 1$ plus noise.
#
# *Hint:* `w -= lr * w.grad` changes the leaf `w` in place. `w = w - lr * w.grad` binds
# the name to a **new** tensor instead: under `no_grad` a new leaf that does not require
# grad (the next `backward` fails: "does not require grad"), outside it a tensor that is
# no leaf, whose `.grad` stays None. Start from
# `lib.tensor(0.0, dtype=x.dtype, requires_grad=True)`: `x`'s dtype, float64 here.


# %% nbgrader={"grade_id": "ex8_fit_line", "solution": true}
def fit_line(lib, x, y, steps, lr):
    """Fit y = w * x + b by gradient descent on the mean squared error; hand-written SGD.

    w and b are 0-d leaf tensors of x's dtype, both starting at 0. Each step: compute the loss
    ((w * x + b - y) ** 2).mean(), record loss.item(), backward, then under `lib.no_grad()`
    subtract lr times each gradient in place, and reset the gradients. Returns
    (w as a float, b as a float, list of the `steps` recorded losses).
    """
    ### BEGIN SOLUTION
    w = lib.tensor(0.0, dtype=x.dtype, requires_grad=True)
    b = lib.tensor(0.0, dtype=x.dtype, requires_grad=True)
    losses = []
    for _ in range(steps):
        loss = ((w * x + b - y) ** 2).mean()
        losses.append(loss.item())
        loss.backward()
        with lib.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        w.grad = None
        b.grad = None
    return w.item(), b.item(), losses
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex8_fit_line_tests", "grade": true, "points": 2}
with exercise(8):
    for lib in (torch, minitorch):
        name = lib.__name__
        x = lib.linspace(-1, 1, 50, dtype=lib.float64)
        y = 2 * x + 1
        try:
            w, b, losses = fit_line(lib, x, y, 100, 0.2)
        except (TypeError, RuntimeError) as error:  # the classic update mistakes, in short
            hints = {
                "NoneType": "w and b must stay the same leaves: update them in place (w -= ...)",
                "does not require grad": "w and b must stay leaves that require grad: w -= ...",
                "in-place operation": "run the update under lib.no_grad()",
            }
            hint = next((h for phrase, h in hints.items() if phrase in str(error)), None)
            if hint is None:
                raise
            raise AssertionError(f"{name}: {error}: {hint}") from None
        assert isinstance(w, float) and isinstance(b, float), f"{name}: return w and b as floats"
        assert len(losses) == 100, f"{name}: one loss per step, got {len(losses)}"
        assert all(isinstance(loss, float) for loss in losses), f"{name}: record loss.item()"
        at_zero = (y**2).mean().item()
        assert abs(losses[0] - at_zero) < 1e-9, f"{name}: the first loss is the loss at w = b = 0"
        assert all(a >= b_ for a, b_ in zip(losses, losses[1:])), (
            f"{name}: the loss must go down at every step (did you reset the gradients?),"
            f" got {[round(loss, 4) for loss in losses[:6]]}, ..."
        )
        assert abs(w - 2) < 0.1 and abs(b - 1) < 0.1, (
            f"{name}: w = {w:.3f}, b = {b:.3f}; expected about 2 and 1"
        )
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.backward import grade

grade.fit_line(fit_line)
### END HIDDEN TESTS

# %%
gen = torch.Generator().manual_seed(5)
x_values = torch.rand(64, generator=gen, dtype=torch.float64) * 2 - 1
y_values = 2 * x_values + 1 + 0.1 * torch.randn(64, generator=gen, dtype=torch.float64)
with exercise(8):
    fits = {}
    for lib in (torch, minitorch):
        x = lib.tensor(x_values.tolist(), dtype=lib.float64)
        y = lib.tensor(y_values.tolist(), dtype=lib.float64)
        fits[lib.__name__] = fit_line(lib, x, y, 150, 0.2)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.2))
    for name, marker in (("torch", "-"), ("minitorch", "--")):
        left.semilogy(fits[name][2], marker, label=name)
    left.set_xlabel("step")
    left.set_ylabel("mean squared error")
    left.set_title("Loss during training")
    left.legend()
    w, b, _ = fits["minitorch"]
    right.scatter(x_values, y_values, s=8, label="data: y = 2x + 1 + noise")
    right.plot([-1, 1], [b - w, b + w], "r", label=f"fit: y = {w:.3f} x + {b:.3f}")
    right.legend()
    plt.show()

# %% [markdown] nbgrader={"grade_id": "ex9_predict_second_backward_statement", "locked": true}
# ### Exercise 9 (2 points): which second backward raises?
#
# Each snippet below has a first part, which builds a graph and runs backward (or
# `autograd.grad`), and a second part, which runs one more backward. For each, predict
# **before running it** whether the second part raises
# `RuntimeError: Trying to backward through the graph a second time`, and **why**:
#
# - `"freed"`: it raises: it needs saved values that an earlier backward freed;
# - `"retain_graph"`: it works because the first part asked to keep them;
# - `"nothing_saved"`: it works because no node on the way saved any value (adding, or
#   summing, needs nothing from the forward pass);
# - `"fresh_graph"`: it works because it walks only nodes recorded after the first
#   backward.
#
# **a**
# ```python
# x = torch.tensor([1.0, 2.0], requires_grad=True)
# s = x.exp().sum()
# s.backward()
# # ---- second part ----
# s.backward()
# ```
#
# **b**
# ```python
# x = torch.tensor([1.0, 2.0], requires_grad=True)
# s = (x + 1).sum()
# s.backward()
# # ---- second part ----
# s.backward()
# ```
#
# **c**
# ```python
# x = torch.tensor([1.0, 2.0], requires_grad=True)
# s = (x * 2).sum()
# s.backward()
# # ---- second part ----
# s.backward()
# ```
#
# **d**
# ```python
# x = torch.tensor([1.0, 2.0], requires_grad=True)
# s = (x * x).sum()
# s.backward(retain_graph=True)
# # ---- second part ----
# s.backward()
# ```
#
# **e**
# ```python
# x = torch.tensor([1.0, 2.0], requires_grad=True)
# s = (x * x).sum()
# s.backward()
# # ---- second part ----
# s = (x * x).sum()
# s.backward()
# ```
#
# **f**
# ```python
# x = torch.tensor([1.0, 2.0], requires_grad=True)
# y = x.sin()
# y.sum().backward()
# # ---- second part ----
# (y * 3).sum().backward()
# ```
#
# **g**
# ```python
# x = torch.tensor([1.0, 2.0], requires_grad=True)
# y = x.sin()
# y.sum().backward()
# # ---- second part ----
# x.cos().sum().backward()
# ```
#
# **h**
# ```python
# x = torch.tensor([1.0, 2.0], requires_grad=True)
# s = (x * x).sum()
# (g,) = torch.autograd.grad(s, x)
# # ---- second part ----
# s.backward()
# ```
#
# **i**
# ```python
# x = torch.tensor([1.0, 2.0], requires_grad=True)
# s = x.mean()
# s.backward()
# # ---- second part ----
# s.backward()
# ```
#
# **j**
# ```python
# x = torch.tensor([1.0, 2.0], requires_grad=True)
# s = (x * x).sum()
# s.backward(retain_graph=True)
# s.backward()
# # ---- second part ----
# s.backward()
# ```
#
# Write `predict_second_backward()` returning a dict from each snippet's key to a tuple
# `(raises, why)`, e.g. `"z": (True, "freed")` for a made-up snippet z. `torch` stands
# for PyTorch or minitorch: the answers are the same. The grader runs every snippet (and
# variants of it) on both libraries; each snippet whose `(raises, why)` is right earns
# its share of the points.
#
# *Hint:* a node needs its saved values whenever its local derivative depends on the
# forward values. What does `x * 2` need to compute its gradient?

# %% nbgrader={"grade_id": "ex9_snippets", "locked": true}
# Each snippet: (first part, second part); `torch` is PyTorch or minitorch.
SNIPPETS = {
    "a": (
        """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
s = x.exp().sum()
s.backward()""",
        """\
s.backward()""",
    ),
    "b": (
        """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
s = (x + 1).sum()
s.backward()""",
        """\
s.backward()""",
    ),
    "c": (
        """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
s = (x * 2).sum()
s.backward()""",
        """\
s.backward()""",
    ),
    "d": (
        """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
s = (x * x).sum()
s.backward(retain_graph=True)""",
        """\
s.backward()""",
    ),
    "e": (
        """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
s = (x * x).sum()
s.backward()""",
        """\
s = (x * x).sum()
s.backward()""",
    ),
    "f": (
        """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.sin()
y.sum().backward()""",
        """\
(y * 3).sum().backward()""",
    ),
    "g": (
        """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x.sin()
y.sum().backward()""",
        """\
x.cos().sum().backward()""",
    ),
    "h": (
        """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
s = (x * x).sum()
(g,) = torch.autograd.grad(s, x)""",
        """\
s.backward()""",
    ),
    "i": (
        """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
s = x.mean()
s.backward()""",
        """\
s.backward()""",
    ),
    "j": (
        """\
x = torch.tensor([1.0, 2.0], requires_grad=True)
s = (x * x).sum()
s.backward(retain_graph=True)
s.backward()""",
        """\
s.backward()""",
    ),
}


# %% nbgrader={"grade_id": "ex9_predict_second_backward", "solution": true}
def predict_second_backward():
    """Your predictions for the snippets in `SNIPPETS`, before running them.

    The answer is a dict from each snippet's key to a tuple `(raises, why)`: `raises` is True
    if the second part raises, `why` is one of "freed" (it raises: it needs values the first
    backward freed), "retain_graph" (works: the first backward kept them), "nothing_saved"
    (works: the graph saved no values) or "fresh_graph" (works: the second backward walks
    only nodes recorded after the first). PyTorch and minitorch behave the same here.
    """
    ### BEGIN SOLUTION
    return {
        "a": (True, "freed"),
        "b": (False, "nothing_saved"),
        "c": (True, "freed"),
        "d": (False, "retain_graph"),
        "e": (False, "fresh_graph"),
        "f": (True, "freed"),
        "g": (False, "fresh_graph"),
        "h": (True, "freed"),
        "i": (False, "nothing_saved"),
        "j": (True, "freed"),
    }
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex9_predict_second_backward_tests", "grade": true, "points": 2}
with exercise(9):
    predictions = predict_second_backward()
    assert isinstance(predictions, dict), f"return a dict, not {type(predictions).__name__}"
    missing = sorted(set(SNIPPETS) - set(predictions))
    assert not missing, f"no prediction for snippets {missing}"
    for key, guess in predictions.items():
        assert isinstance(guess, tuple) and len(guess) == 2, (
            f"{key!r}: a tuple (raises, why), not {guess!r}"
        )
        raises, why = guess
        assert isinstance(raises, bool), f"{key!r}: raises must be True or False"
        assert why in ("freed", "retain_graph", "nothing_saved", "fresh_graph"), (
            f"{key!r}: unknown reason {why!r}"
        )
        assert raises == (why == "freed"), f"{key!r}: only 'freed' snippets raise"
    print("Your predictions are well formed; the hidden tests run the snippets.")

### BEGIN HIDDEN TESTS
from solutions.backward import grade

grade.predict_second_backward(predict_second_backward)
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - Backward applies the chain rule **node by node**: each node multiplies the incoming
#   gradient by its local derivative; calling `node(grad)` does exactly that.
# - A value used several times receives the **sum** of its consumers' gradients, so a
#   node may only run after all of them: nodes run in a **topological order**, found
#   without recursion (Kahn's algorithm).
# - `AccumulateGrad` **adds** into `.grad`: reset gradients between steps, or use the
#   sum on purpose (micro-batches, each loss weighted by its share of the batch).
# - Broadcasting copies values, so backward **sums** gradients back to each input's shape.
#   PyTorch's nodes return broadcast shapes and its engine reduces every gradient a node
#   returns; so does yours.
# - Backward computes vector-Jacobian products; `gradient=` is the vector. A Jacobian
#   takes one backward per row. Forward mode (`torch.func.jvp`) computes Jacobian-vector
#   products; two backward passes give one too.
# - Saved values are freed by backward unless `retain_graph=True`; `create_graph=True`
#   records backward itself, for higher derivatives and Hessian-vector products.
# - Hooks see (and may change) gradients while the engine runs. A hook on a tensor changes
#   the gradient of all its uses; to change one path, hook a tensor of its own.
# - Parameter updates run under `no_grad`.
#
# Next notebook: models whose graph changes with every input.
