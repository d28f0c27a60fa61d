# ---
# jupyter:
#   jupytext:
#     formats: py:percent,../source/graph_construction//ipynb
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
# # Notebook 1: how a computation graph is built
#
# When you run a forward pass with tensors that require gradients, PyTorch does two things
# at once: it computes the values, and it **records** how each value was computed. That
# record is the computation graph, and `backward()` walks it to compute gradients. Because
# it is recorded while your Python code runs, it can be different every time.
#
# After this notebook you will be able to:
#
# - read the graph that PyTorch records: `grad_fn`, `next_functions`, `is_leaf`,
#   `requires_grad` and the `AccumulateGrad` nodes behind the leaves;
# - walk a graph of any depth without recursion, list, count and find what is in it;
# - predict which tensors require grad, which are leaves and which node made them;
# - add a new differentiable op with a `Function` (forward and backward) and check it;
# - train a small model with a loop you write, and say which nodes a new term adds to its graph;
# - explain why a model with data-dependent control flow builds graphs of different sizes, and
#   why the parameters of a branch not taken have a `.grad` that is `None`, not zeros;
# - record a graph yourself: a value class whose ops store their inputs' nodes and a local
#   backward, giving PyTorch's graph and gradients on an ordinary Python function.
#
# Everything runs on **PyTorch** and on **minitorch**, this course's from-scratch autograd
# library, which records the same graph with the same names for the ops used here (the
# README's "Graphs that differ from PyTorch's" lists the ones that do not, such as
# `Linear`, one node in minitorch). Your code must work on both.
#
# There are **8 graded exercises (25 points)**. Each has visible tests you can run (plain
# asserts that say what went wrong); more tests run when your notebook is graded. Write
# your answers where it says `# YOUR CODE HERE` and delete the `raise NotImplementedError()`.
# "Run All" runs every cell: a test or demo whose exercise is not written yet says so in one
# line and lets the cells after it run.

# %%
import math
from collections import Counter, deque

import matplotlib.pyplot as plt
import torch

import minitorch
from minitorch.autograd import Function
from minitorch.notebook import exercise

# One seed for both libraries: minitorch draws its random numbers from torch's generator,
# which manual_seed returns (kept in `_` so that Jupyter does not print it).
_ = minitorch.manual_seed(0)

# %% [markdown]
# ## 1. The graph is recorded during the forward pass
#
# Each op applied to a tensor that requires grad adds a **node** to the graph: the op's
# backward function, named like `MulBackward0`. The op's result points to it through
# `grad_fn`. Each node knows where the gradients of its inputs must go next:
# `next_functions` is a tuple with one `(node, output_nr)` pair per input, in argument
# order. Following `next_functions` from the output walks the graph back to the inputs,
# which is exactly the path `backward()` takes.


# %%
# NBVAL_CHECK_OUTPUT
def first_nodes(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = lib.tensor([0.5, -1.0, 2.0])
    out = (x * w + x.sin()).sum()
    print(f"out.grad_fn is {out.grad_fn.name()}")
    add = out.grad_fn.next_functions[0][0]
    print(f"{add.name()}.next_functions:")
    for node, output_nr in add.next_functions:
        print(f"   ({node.name()}, {output_nr})")


minitorch.viz.compare(first_nodes, (torch, minitorch))


# %% [markdown]
# `minitorch.viz.compare(demo, (torch, minitorch))` runs `demo` once with each library and
# prints the two outputs as columns; a `≠` between the columns would mark a line where they
# differ. Here there is none: both libraries record the same graph. Nothing was declared in
# advance: the graph *is* the trace of the Python code that ran. This is what "dynamic" or
# "define-by-run" means.
#
# ## 2. Leaves, `requires_grad` and `AccumulateGrad`
#
# The rules PyTorch follows while recording:
#
# - A tensor you create yourself is a **leaf** (`is_leaf` is True). It requires grad only
#   if you ask (`requires_grad=True`): parameters do, data does not.
# - An op's result **requires grad if any input does** (and grad mode is on). Such a result
#   is not a leaf and has a `grad_fn`.
# - A result that does not require grad is a leaf too: nothing was recorded for it.
# - A leaf that requires grad appears in the graph as an **`AccumulateGrad`** node. Its
#   `.variable` is the leaf tensor itself: this node is where backward adds into `.grad`.
# - An input that needs no gradient appears as `None` in `next_functions`.


# %%
# NBVAL_CHECK_OUTPUT
def leaves_and_flags(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)  # a parameter
    w = lib.tensor([0.5, -1.0, 2.0])  # data
    y = x * w
    print("   requires_grad  is_leaf  grad_fn")
    for name, t in (("x", x), ("w", w), ("y", y)):
        grad_fn = t.grad_fn.name() if t.grad_fn is not None else None
        print(f"{name}  {t.requires_grad!s:13}  {t.is_leaf!s:7}  {grad_fn}")
    print("y.grad_fn.next_functions:")
    for node, output_nr in y.grad_fn.next_functions:
        print(f"   ({node.name() if node is not None else None}, {output_nr})")
    print("AccumulateGrad.variable is x:", y.grad_fn.next_functions[0][0].variable is x)


minitorch.viz.compare(leaves_and_flags, (torch, minitorch))


# %% [markdown]
# A value used twice is recorded once: its node is simply reached along two paths. The
# tree printer below follows every path recursively, so it prints a shared node once per
# path (look for `MulBackward0` under `a = x * 2`). That is fine for a picture of a small
# graph; exercise 1 walks graphs of any size and lists every node exactly once.


# %%
# NBVAL_CHECK_OUTPUT
def print_tree(node, depth=0):
    """Print the graph below `node` as a tree, one line per path (recursive: small graphs)."""
    print("   " * depth + (node.name() if node is not None else "None"))
    if node is not None:
        for next_node, _ in node.next_functions:
            print_tree(next_node, depth + 1)


def tree_of_shared_value(lib):
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    out = (a * a + a).sum()
    print_tree(out.grad_fn)


minitorch.viz.compare(tree_of_shared_value, (torch, minitorch))


# %% [markdown]
# ## 3. Pictures of the graph
#
# `torchviz.make_dot` draws a PyTorch graph; `minitorch.viz.make_dot` draws a minitorch
# graph (or a PyTorch graph) the same way, line for line, and
# `minitorch.viz.show_side_by_side` shows the two next to each other. Grey boxes are
# nodes, blue boxes the leaves that require grad (named when you pass `params`), green the
# output. Arrows follow the forward pass, from the leaves to the output; backward walks
# them in reverse.


# %%
def f_example(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
    a = x * w
    return (a * a + a.sin()).sum(), x, w


torch_out, tx, tw = f_example(torch)
minitorch_out, mx, mw = f_example(minitorch)
minitorch.viz.show_side_by_side(torch_out, minitorch_out, {"x": (tx, mx), "w": (tw, mw)})


# %% [markdown] nbgrader={"grade_id": "ex1_collect_nodes_statement", "locked": true}
# ### Exercise 1 (4 points): collect every node of a graph
#
# Write `collect_nodes(tensor)` returning a **list of every node** reachable from
# `tensor.grad_fn` through `next_functions`, **each exactly once**, in this order:
# breadth-first, children in the order of `next_functions`, each node listed when it is
# first discovered. Skip the `None` entries; include the `AccumulateGrad` nodes. A tensor
# without `grad_fn` gives `[]`.
#
# Example: for `a = x * 2; out = (a * a + a).sum()` the names are
#
# ```python
# ['SumBackward0', 'AddBackward0', 'MulBackward0', 'MulBackward0',
#  'torch::autograd::AccumulateGrad']
# ```
#
# (`a * a` first, then `x * 2`).
#
# The function must work on graphs **5,000 ops deep**, where a recursive walk exceeds
# Python's recursion limit, and on graphs where a node is reached along **very many
# paths**: 40 diamonds in a row, `h = h.sin() + h.tanh()`, make 2**40 paths from the
# output to `x`, so each node must be visited once, not once per path.
#
# *Hint:* keep the nodes still to visit in a `collections.deque`, and the nodes already
# seen in a `set` (nodes of both libraries compare and hash by identity).


# %% nbgrader={"grade_id": "ex1_collect_nodes", "solution": true}
def collect_nodes(tensor):
    """Every node of the graph that produced `tensor`, each exactly once.

    Start at `tensor.grad_fn` and follow `next_functions` (skip the `None` entries). Order:
    breadth-first, children in the order of `next_functions`, each node listed when it is first
    discovered. Return a list; `[]` when `tensor.grad_fn` is None. Must not recurse: a chain of
    5,000 ops has to work. Works on PyTorch and minitorch tensors alike.
    """
    ### BEGIN SOLUTION
    if tensor.grad_fn is None:
        return []
    nodes = [tensor.grad_fn]
    seen = {tensor.grad_fn}
    to_visit = deque(nodes)
    while to_visit:
        node = to_visit.popleft()
        for next_node, _ in node.next_functions:
            if next_node is not None and next_node not in seen:
                seen.add(next_node)
                nodes.append(next_node)
                to_visit.append(next_node)
    return nodes
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex1_collect_nodes_tests", "grade": true, "points": 4}
with exercise(1):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    out = (a * a + a).sum()
    names = [node.name() for node in collect_nodes(out)]
    expected = [
        "SumBackward0",
        "AddBackward0",
        "MulBackward0",
        "MulBackward0",
        "torch::autograd::AccumulateGrad",
    ]
    assert names == expected, f"collect_nodes((a * a + a).sum()): expected {expected}, got {names}"
    assert collect_nodes(x) == [], "x is a leaf (no grad_fn): collect_nodes(x) should be []"

    out = (x.exp().exp() + x.sin()).sum()
    names = [node.name() for node in collect_nodes(out)]
    expected = ["SumBackward0", "AddBackward0", "ExpBackward0", "SinBackward0", "ExpBackward0"]
    expected.append("torch::autograd::AccumulateGrad")
    assert names == expected, f"breadth-first order: expected {expected}, got {names}"

    h = minitorch.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(5000):
        h = h * 1.0
    try:
        count = len(collect_nodes(h))
    except RecursionError:
        raise AssertionError("collect_nodes recursed too deep on 5,000 ops: use a deque") from None
    assert count == 5001, f"a chain of 5,000 ops has 5,001 nodes (AccumulateGrad too), got {count}"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.graph_construction import grade

grade.collect_nodes(collect_nodes)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade_id": "ex2_count_ops_statement", "locked": true}
# ### Exercise 2 (2 points): count the ops in a graph
#
# Write `count_ops(tensor)` returning a dict `{node name: number of nodes with that name}`
# for the graph of `tensor`. Every node counts **once**, however many paths lead to it
# (shared subexpressions). `AccumulateGrad` nodes are not ops: leave them out. A tensor
# without `grad_fn` gives `{}`.
#
# Example: for `a = x.exp(); out = (a * a + a.sin() * a).sum()` the answer is
# `{'SumBackward0': 1, 'AddBackward0': 1, 'MulBackward0': 2, 'ExpBackward0': 1, 'SinBackward0': 1}`:
# `a` is used three times but computed, and recorded, once.
#
# *Hint:* `collections.Counter` and your `collect_nodes`. (If you walk the graph yourself
# instead, exercise 1's rules hold: graphs 5,000 ops deep, nodes reached along 2**40 paths.)


# %% nbgrader={"grade_id": "ex2_count_ops", "solution": true}
def count_ops(tensor):
    """How many op nodes of each name the graph of `tensor` holds: {name: count}.

    Each node counts once, however many paths lead to it. Names are `node.name()`, e.g.
    "MulBackward0". AccumulateGrad nodes (name "torch::autograd::AccumulateGrad") are not ops:
    leave them out. `{}` when `tensor.grad_fn` is None. You may use `collect_nodes`.
    """
    ### BEGIN SOLUTION
    counts = Counter(node.name() for node in collect_nodes(tensor))
    counts.pop("torch::autograd::AccumulateGrad", None)
    return dict(counts)
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex2_count_ops_tests", "grade": true, "points": 2}
with exercise(2):
    for lib in (torch, minitorch):
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        a = x.exp()
        out = (a * a + a.sin() * a).sum()
        counts = count_ops(out)
        expected = {
            "SumBackward0": 1,
            "AddBackward0": 1,
            "MulBackward0": 2,
            "ExpBackward0": 1,
            "SinBackward0": 1,
        }
        assert counts == expected, f"{lib.__name__}: expected {expected}, got {counts}"
        assert count_ops(x) == {}, f"{lib.__name__}: a leaf has no ops, got {count_ops(x)}"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.graph_construction import grade

grade.count_ops(count_ops)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade_id": "ex3_find_leaves_statement", "locked": true}
# ### Exercise 3 (3 points): find the leaves a result depends on
#
# Write `find_leaves(tensor)` returning the **leaf tensors that require grad** and that
# `tensor` depends on: the tensors whose `.grad` backward will fill. Read them from the
# graph's `AccumulateGrad` nodes (`node.variable`), in the order `collect_nodes` lists
# those nodes, each once. If `tensor` is itself a leaf that requires grad, the answer is
# `[tensor]`; if it does not require grad, `[]`.
#
# Example: for `out = (w @ x + b).tanh().sum()` with parameters `w`, `b` and data `x`,
# the answer is `[b, w]` (breadth-first, `b`'s node is found before `w`'s).
#
# *Hint:* `node.name() == "torch::autograd::AccumulateGrad"` in both libraries. Compare
# tensors with `is`, never with `==` or `in` (that compares values elementwise). If you
# walk the graph yourself, exercise 1's rules hold (5,000 ops deep, 2**40 paths).


# %% nbgrader={"grade_id": "ex3_find_leaves", "solution": true}
def find_leaves(tensor):
    """The leaf tensors that `tensor` depends on and that will receive a `.grad` in backward.

    Read them from the AccumulateGrad nodes of the graph (`node.variable`), in the order
    `collect_nodes` lists those nodes, each leaf once. If `tensor` is itself a leaf that
    requires grad, return `[tensor]`; if it does not require grad, return `[]`.
    """
    ### BEGIN SOLUTION
    if tensor.grad_fn is None:
        return [tensor] if tensor.requires_grad else []
    return [
        node.variable
        for node in collect_nodes(tensor)
        if node.name() == "torch::autograd::AccumulateGrad"
    ]
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex3_find_leaves_tests", "grade": true, "points": 3}
with exercise(3):
    for lib in (torch, minitorch):
        w = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        b = lib.tensor([0.5, -0.5], requires_grad=True)
        x = lib.tensor([1.0, 1.0])
        out = (w @ x + b).tanh().sum()
        name = lib.__name__
        try:
            leaves = find_leaves(out)
        except RuntimeError as error:
            if "ambiguous" not in str(error):
                raise
            hint = "compare tensors with `is`, not `in` or `==`"
            raise AssertionError(f"{name}: {error}: {hint}") from None
        assert isinstance(leaves, list), f"{name}: return a list, not {type(leaves).__name__}"
        assert len(leaves) == 2, f"{name}: out depends on 2 leaves with grad, got {len(leaves)}"
        got = [{id(b): "b", id(w): "w"}.get(id(t), type(t).__name__) for t in leaves]
        order = "in collect_nodes's order (exercise 1)"
        assert got == ["b", "w"], f"{name}: expected the tensors [b, w] {order}, got {got}"
        alone = find_leaves(w)
        assert len(alone) == 1 and alone[0] is w, f"{name}: find_leaves(w) should be [w]"
        assert find_leaves(x * 2) == [], f"{name}: x * 2 does not require grad: expected []"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.graph_construction import grade

grade.find_leaves(find_leaves)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade_id": "ex4_predict_flags_statement", "locked": true}
# ### Exercise 4 (4 points): predict what gets recorded
#
# For each snippet below, predict **before running it** three facts about `out`:
# `out.requires_grad`, `out.is_leaf`, and the name of `out.grad_fn` (`None` if it has
# none). `torch` stands for PyTorch or minitorch: the answers are the same.
#
# **a**
# ```python
# x = torch.ones(3, requires_grad=True)
# out = x
# ```
#
# **b**
# ```python
# x = torch.ones(3)
# out = x * 2
# ```
#
# **c**
# ```python
# x = torch.ones(3, requires_grad=True)
# out = x * 2
# ```
#
# **d**
# ```python
# x = torch.ones(3, requires_grad=True)
# out = (x * 2).sum()
# ```
#
# **e**
# ```python
# w = torch.ones(3, requires_grad=True)
# b = torch.zeros(3)
# out = w + b
# ```
#
# **f**
# ```python
# x = torch.ones(3, requires_grad=True)
# out = x.detach() * 2
# ```
#
# **g**
# ```python
# x = torch.ones(3, requires_grad=True)
# with torch.no_grad():
#     out = x.sin()
# ```
#
# **h**
# ```python
# x = torch.ones(3, requires_grad=True)
# out = x.sin().detach().requires_grad_()
# ```
#
# **i**
# ```python
# x = torch.ones(2, 3, requires_grad=True)
# out = x[0]
# ```
#
# **j**
# ```python
# x = torch.ones(3, requires_grad=True)
# y = torch.ones(3)
# out = x.exp() / y
# ```
#
# Write `predict_flags()` returning a dict from each snippet's key to a tuple
# `(requires_grad, is_leaf, grad_fn name or None)`, for example
# `"z": (True, False, "AddBackward0")` for a made-up snippet z. The grader runs every
# snippet on both libraries.
#
# *Hint:* the rules of section 2. `x[0]` records a `SelectBackward0`; `detach()` returns a
# tensor that shares the data but not the graph; under `torch.no_grad()` nothing is
# recorded.

# %% nbgrader={"grade_id": "ex4_snippets", "locked": true}
# Each snippet builds a tensor `out`; `torch` is PyTorch or minitorch.
SNIPPETS = {
    "a": """\
x = torch.ones(3, requires_grad=True)
out = x""",
    "b": """\
x = torch.ones(3)
out = x * 2""",
    "c": """\
x = torch.ones(3, requires_grad=True)
out = x * 2""",
    "d": """\
x = torch.ones(3, requires_grad=True)
out = (x * 2).sum()""",
    "e": """\
w = torch.ones(3, requires_grad=True)
b = torch.zeros(3)
out = w + b""",
    "f": """\
x = torch.ones(3, requires_grad=True)
out = x.detach() * 2""",
    "g": """\
x = torch.ones(3, requires_grad=True)
with torch.no_grad():
    out = x.sin()""",
    "h": """\
x = torch.ones(3, requires_grad=True)
out = x.sin().detach().requires_grad_()""",
    "i": """\
x = torch.ones(2, 3, requires_grad=True)
out = x[0]""",
    "j": """\
x = torch.ones(3, requires_grad=True)
y = torch.ones(3)
out = x.exp() / y""",
}


# %% nbgrader={"grade_id": "ex4_predict_flags", "solution": true}
def predict_flags():
    """Your predictions for the snippets in `SNIPPETS`, before running them.

    Return a dict mapping each snippet's key to a tuple
    `(out.requires_grad, out.is_leaf, out.grad_fn.name() or None)`, for example
    `"z": (True, False, "AddBackward0")` for a made-up snippet z. The same answer must hold
    for PyTorch and minitorch.
    """
    ### BEGIN SOLUTION
    return {
        "a": (True, True, None),
        "b": (False, True, None),
        "c": (True, False, "MulBackward0"),
        "d": (True, False, "SumBackward0"),
        "e": (True, False, "AddBackward0"),
        "f": (False, True, None),
        "g": (False, True, None),
        "h": (True, True, None),
        "i": (True, False, "SelectBackward0"),
        "j": (True, False, "DivBackward0"),
    }
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex4_predict_flags_tests", "grade": true, "points": 4}
with exercise(4):
    predictions = predict_flags()
    assert isinstance(predictions, dict), f"return a dict, not {type(predictions).__name__}"
    missing = sorted(set(SNIPPETS) - set(predictions))
    assert not missing, f"no prediction for snippets {missing}"
    for key, guess in predictions.items():
        assert isinstance(guess, tuple) and len(guess) == 3, (
            f"{key!r}: a tuple of three, not {guess!r}"
        )
        requires_grad, is_leaf, name = guess
        assert isinstance(requires_grad, bool), f"{key!r}: requires_grad must be True or False"
        assert isinstance(is_leaf, bool), f"{key!r}: is_leaf must be True or False"
        assert name is None or name.endswith("Backward0"), f"{key!r}: 'MulBackward0' or None?"
    print("Your predictions are well formed; the hidden tests run the snippets.")

### BEGIN HIDDEN TESTS
from solutions.graph_construction import grade

grade.predict_flags(predict_flags)
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Writing a new op
#
# Every op in minitorch is a `Function` with two static methods, the same mechanism as
# PyTorch's `torch.autograd.Function`:
#
# - `forward(ctx, *args)` computes the result. It runs with recording switched off. Keep
#   what backward needs with `ctx.save_for_backward(tensor, ...)`; plain Python values can
#   be stored as attributes (`ctx.beta = beta`).
# - `backward(ctx, grad)` receives the gradient of the loss with respect to the output and
#   returns **one gradient per argument of forward**, in order: a tensor for each input
#   tensor (the incoming `grad` times the local derivative: the chain rule), `None` for
#   arguments that are not tensors. `ctx.saved_tensors` gives back what was saved;
#   `ctx.needs_input_grad[i]` says whether input `i` needs a gradient at all.
#
# `MyOp.apply(*args)` runs forward and records a node named `MyOpBackward`.
# `gradcheck` compares backward with finite differences of forward (use float64).


# %%
# NBVAL_CHECK_OUTPUT
class Cube(Function):
    """cube(x) = x ** 3, elementwise."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


x = minitorch.tensor([1.0, -2.0, 0.5], dtype=minitorch.float64, requires_grad=True)
y = Cube.apply(x)
print("node:", y.grad_fn.name())
y.sum().backward()
print("x.grad:", x.grad)
print("gradcheck:", minitorch.autograd.gradcheck(Cube.apply, (x,)))


# %% [markdown] nbgrader={"grade_id": "ex5_softplus_statement", "locked": true}
# ### Exercise 5 (4 points): softplus as a minitorch `Function`
#
# Softplus is a smooth version of ReLU:
# $$\mathrm{softplus}_\beta(x) = \frac{1}{\beta}\log\left(1 + e^{\beta x}\right).$$
# Write the class `Softplus(Function)` so that `Softplus.apply(x, beta)` computes it
# elementwise for a float64 minitorch tensor `x` of any shape and a Python float `beta`,
# and backward gives the gradient with respect to `x`. It must agree with
# `torch.nn.functional.softplus(x, beta=beta)` (inputs stay where `beta * x` is below 20)
# and pass `gradcheck`.
#
# Example: `Softplus.apply(minitorch.tensor([0.0], dtype=minitorch.float64), 2.0)` is
# `log(2) / 2 = 0.3466`.
#
# *Hints:* inside forward, `x` is a minitorch tensor: use its methods (`exp`, `log`,
# `sigmoid`). $\frac{d}{du}\log(1 + e^{u}) = \mathrm{sigmoid}(u)$; mind the chain rule
# through $u = \beta x$. `beta` is an argument of forward too, so backward returns two
# values.


# %% nbgrader={"grade_id": "ex5_softplus", "solution": true}
class Softplus(Function):
    """softplus(x, beta) = log(1 + exp(beta * x)) / beta, elementwise; `beta` is a Python float.

    Use: `Softplus.apply(x, beta)`. Its derivative with respect to x is sigmoid(beta * x).
    """

    @staticmethod
    def forward(ctx, x, beta):
        ### BEGIN SOLUTION
        ctx.save_for_backward(x)
        ctx.beta = beta
        return (1 + (beta * x).exp()).log() / beta
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad):
        ### BEGIN SOLUTION
        (x,) = ctx.saved_tensors
        grad_x = grad * (ctx.beta * x).sigmoid() if ctx.needs_input_grad[0] else None
        return grad_x, None
        ### END SOLUTION


# %% nbgrader={"grade_id": "ex5_softplus_tests", "grade": true, "points": 4}
with exercise(5):
    values = [-2.0, 0.0, 0.5, 3.0]
    x = minitorch.tensor(values, dtype=minitorch.float64, requires_grad=True)
    y = Softplus.apply(x, 2.0)
    expected = torch.nn.functional.softplus(torch.tensor(values, dtype=torch.float64), beta=2.0)
    got = torch.tensor(y.tolist(), dtype=torch.float64)
    assert torch.allclose(got, expected), (
        f"forward: expected {expected.tolist()}, got {got.tolist()}"
    )
    assert y.grad_fn is not None, "Softplus.apply(x, 2.0) was not recorded: use Softplus.apply"
    for beta in (1.0, 2.0):
        passed = minitorch.autograd.gradcheck(lambda t, beta=beta: Softplus.apply(t, beta), (x,))
        assert passed, f"gradcheck failed for beta={beta}"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.graph_construction import grade

grade.softplus(Softplus)
### END HIDDEN TESTS

# %% [markdown] nbgrader={"grade_id": "ex6_f_and_gradients_statement", "locked": true}
# ### Exercise 6 (2 points): build a function, get its gradients
#
# Write `f_and_gradients(lib, x0, y0)` that builds
# $$f(x, y) = x^2 + y^3 - \sin(xy)$$
# with the library `lib` (`torch` or `minitorch`) at the point `(x0, y0)`, where `x` and `y`
# are float64 0-d leaf tensors that require grad, runs backward, and returns
# `(out, df_dx, df_dy)`: `out` is the 0-d tensor `f(x0, y0)` with its graph, the
# gradients are Python floats.
#
# *Hints:* `lib.tensor(x0, dtype=lib.float64, requires_grad=True)`; `lib.sin`, not
# `math.sin`; in Python `x ** 2` is a power and `x ^ 2` is not.


# %% nbgrader={"grade_id": "ex6_f_and_gradients", "solution": true}
def f_and_gradients(lib, x0, y0):
    """Build f(x, y) = x**2 + y**3 - sin(x * y) at (x0, y0) with `lib` (torch or minitorch).

    x and y are float64 scalar (0-d) leaf tensors that require grad. Run backward and return
    `(out, df_dx, df_dy)`: `out` is the 0-d tensor f(x0, y0) (with its graph), the two
    gradients are Python floats.
    """
    ### BEGIN SOLUTION
    x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
    y = lib.tensor(y0, dtype=lib.float64, requires_grad=True)
    out = x**2 + y**3 - lib.sin(x * y)
    out.backward()
    return out, x.grad.item(), y.grad.item()
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex6_f_and_gradients_tests", "grade": true, "points": 2}
with exercise(6):
    for lib in (torch, minitorch):
        name = lib.__name__
        try:
            out, df_dx, df_dy = f_and_gradients(lib, 2.0, 3.0)
        except NotImplementedError as error:
            if "xor" not in str(error):
                raise
            raise AssertionError(f"{name}: {error}: `^` is xor in Python, `**` a power") from None
        assert isinstance(out, lib.Tensor) and out.dim() == 0, f"{name}: out must be a 0-d tensor"
        assert out.grad_fn is not None, f"{name}: out has no grad_fn: did x and y require grad?"
        f_ok = 4 + 27 - math.sin(6)
        assert abs(out.item() - f_ok) < 1e-9, f"{name}: f(2, 3): expected {f_ok}, got {out.item()}"
        assert isinstance(df_dx, float) and isinstance(df_dy, float), f"{name}: return floats"
        # By hand: df/dx = 2x - y cos(xy), df/dy = 3y^2 - x cos(xy).
        dx_ok, dy_ok = 4 - 3 * math.cos(6), 27 - 2 * math.cos(6)
        assert abs(df_dx - dx_ok) < 1e-9, f"{name}: df/dx at (2, 3): expected {dx_ok}, got {df_dx}"
        assert abs(df_dy - dy_ok) < 1e-9, f"{name}: df/dy at (2, 3): expected {dy_ok}, got {df_dy}"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.graph_construction import grade

grade.f_and_gradients(f_and_gradients)
### END HIDDEN TESTS


# %%
# NBVAL_CHECK_OUTPUT
def f_at_2_3(lib):
    out, df_dx, df_dy = f_and_gradients(lib, 2.0, 3.0)
    print(f"f(2, 3) = {out.item():.6f}")
    print(f"df/dx   = {df_dx:.6f}")
    print(f"df/dy   = {df_dy:.6f}")


with exercise(6):
    minitorch.viz.compare(f_at_2_3, (torch, minitorch))
print(f"by hand: df/dx = 2x - y cos(xy)   = {4 - 3 * math.cos(6):.6f}")
print(f"         df/dy = 3y^2 - x cos(xy) = {27 - 2 * math.cos(6):.6f}")

# %% [markdown]
# The graph of f, as both libraries recorded it:

# %%
with exercise(6):
    torch_f = f_and_gradients(torch, 2.0, 3.0)[0]
    minitorch_f = f_and_gradients(minitorch, 2.0, 3.0)[0]
    (tx, ty), (mx, my) = find_leaves(torch_f), find_leaves(minitorch_f)
    minitorch.viz.show_side_by_side(torch_f, minitorch_f, {"x": (tx, mx), "y": (ty, my)})


# %% [markdown]
# ## 5. A model is a graph too: fitting a line, then a parabola
#
# Training repeats one step: the forward pass computes the loss and records its graph,
# `backward()` walks the graph and fills each parameter's `.grad`, and the optimizer moves
# each parameter a little against its gradient. Here `lib.optim.SGD(params, lr)` does the
# moving (`step()` subtracts `lr * p.grad` from each parameter `p`) and the resetting of
# `.grad` (`zero_grad()`); notebook 2 opens both up.
#
# The data is a noisy parabola. A line $y = wx + b$ cannot follow it; a parabola
# $y = ax^2 + bx + c$ can. Both models start at zero and are trained by the same loop,
# on PyTorch and on minitorch.


# %%
gen = torch.Generator().manual_seed(3)
x_points = torch.rand(40, generator=gen, dtype=torch.float64) * 2 - 1
noise = torch.randn(40, generator=gen, dtype=torch.float64)
y_points = 1.5 * x_points**2 - x_points + 0.3 + 0.1 * noise


def parameter(lib):
    """A float64 0-d leaf that requires grad, starting at 0."""
    return lib.tensor(0.0, dtype=lib.float64, requires_grad=True)


def line_model(lib):
    """y = w * x + b: returns (model, its parameters by name)."""
    w, b = parameter(lib), parameter(lib)
    return (lambda x: w * x + b), {"w": w, "b": b}


def parabola_model(lib):
    """y = a * x**2 + b * x + c: returns (model, its parameters by name)."""
    a, b, c = parameter(lib), parameter(lib), parameter(lib)
    return (lambda x: a * x**2 + b * x + c), {"a": a, "b": b, "c": c}


def train(lib, make_model, steps=60, lr=0.5):
    """Fit the model to the points by SGD on the mean squared error.

    Returns (parameters by name, the loss before each step)."""
    model, params = make_model(lib)
    x = lib.tensor(x_points.tolist(), dtype=lib.float64)
    y = lib.tensor(y_points.tolist(), dtype=lib.float64)
    optimizer = lib.optim.SGD(params.values(), lr=lr)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()  # forward: records a new graph
        loss.backward()  # walks it: fills w.grad, b.grad, ...
        optimizer.step()  # moves every parameter against its .grad
        losses.append(loss.item())
    return params, losses


MODELS = {"line": line_model, "parabola": parabola_model}
fits = {}
for lib in (torch, minitorch):
    fits[lib.__name__] = {name: train(lib, make_model) for name, make_model in MODELS.items()}


# %%
# NBVAL_CHECK_OUTPUT
def fit_report(lib):
    (line, line_losses), (parabola, parabola_losses) = fits[lib.__name__].values()
    print("step  loss: line  parabola")
    for step in (0, 1, 5, 20, 59):
        print(f"{step:>4}  {line_losses[step]:10.4f}  {parabola_losses[step]:8.4f}")
    for name, params in (("line", line), ("parabola", parabola)):
        print(f"{name}: " + ", ".join(f"{k} = {p.item():.3f}" for k, p in params.items()))


minitorch.viz.compare(fit_report, (torch, minitorch))

# %%
w, b = (p.item() for p in fits["minitorch"]["line"][0].values())
a, b2, c = (p.item() for p in fits["minitorch"]["parabola"][0].values())
grid = torch.linspace(-1, 1, 50, dtype=torch.float64)
fig, ax = plt.subplots(figsize=(5, 3.2))
ax.scatter(x_points, y_points, s=10, color="gray", label="data")
ax.plot(grid, w * grid + b, label=f"line: {w:.2f} x + {b:.2f}")
ax.plot(grid, a * grid**2 + b2 * grid + c, label=f"parabola: {a:.2f} x² {b2:+.2f} x {c:+.2f}")
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.set_title("Two models, one training loop (minitorch)")
ax.legend()
plt.show()

# %% [markdown]
# What did the extra term change in the graph? Below, the graphs of the two models' losses
# side by side (minitorch draws them; PyTorch records the same nodes), and what your
# `count_ops` finds in them:

# %%
x = minitorch.tensor(x_points.tolist(), dtype=minitorch.float64)
y = minitorch.tensor(y_points.tolist(), dtype=minitorch.float64)
model_losses, model_params = {}, {}
for name, make_model in MODELS.items():
    model, model_params[name] = make_model(minitorch)
    model_losses[name] = ((model(x) - y) ** 2).mean()
line_params, parabola_params = model_params["line"], model_params["parabola"]
# a name missing from one model (w, a, c) is given as None there: it names no leaf
names = {n: (line_params.get(n), parabola_params.get(n)) for n in line_params | parabola_params}
minitorch.viz.show_side_by_side(
    model_losses["line"],
    model_losses["parabola"],
    names,
    titles=("The loss of the line", "The loss of the parabola"),
)

# %%
# NBVAL_CHECK_OUTPUT
with exercise(2):
    line_ops, parabola_ops = count_ops(model_losses["line"]), count_ops(model_losses["parabola"])
    print("op             line  parabola")
    for op, count in parabola_ops.items():
        print(f"{op:13} {line_ops.get(op, 0):>5} {count:>9}")

# %% [markdown]
# The parabola's graph has one more leaf, `a`, and two more ops: a `MulBackward0` for
# `a * x**2` and an `AddBackward0` for the `+` that joins it to the rest. There is **no**
# `PowBackward0` for `x**2`: `x` is data, which requires no grad, so `x**2` is computed but
# not recorded (the rules of section 2); the product records a node only because `a`
# requires grad. The `PowBackward0` in both graphs is the loss's `** 2`, applied to the
# residual `model(x) - y`, which does require grad. Had `x` required grad (to ask how the
# loss changes with the inputs), `x**2` would record a `PowBackward0` as well.
#
# The training loop did not change at all: a bigger model is a bigger graph, recorded anew
# at every step, and `backward()` walks whatever graph the forward pass left.
#
# ## 6. Graphs that change from one forward to the next
#
# Since the graph is the trace of the code that ran, Python's `if`, `for` and `while`
# decide its shape, and they may depend on the data. Two calls of the same function can
# record different graphs:


# %%
# NBVAL_CHECK_OUTPUT
def branchy(x):
    if x.sum().item() > 0:
        return (x * 2).sum()
    return x.exp().sum()


def branchy_graphs(lib):
    for values in ([1.0, 2.0], [-1.0, -2.0]):
        print(f"x = {values}:")
        for node in collect_nodes(branchy(lib.tensor(values, requires_grad=True))):
            print(f"   {node.name()}")


with exercise(1):
    minitorch.viz.compare(branchy_graphs, (torch, minitorch))


# %% [markdown]
# A branch that is not taken records nothing, so the parameters only it uses get no
# gradient: after `backward()` their `.grad` is **`None`**, which means "no backward has
# reached this leaf", not a tensor of zeros. Below, a shared layer feeds two heads, and the
# forward of step $t$ uses head A when $t$ is even, head B when it is odd. Each row shows
# what the `.grad` of each head's weight holds after backward, and which heads
# `optimizer.step()` then moved.
#
# `optimizer.zero_grad()` (and `module.zero_grad()`, the same for a module's parameters)
# sets `.grad` to `None` by default. With `set_to_none=False` it fills an existing `.grad`
# with zeros instead, so a head used once keeps a zero `.grad` on every step that skips it.
# The optimizer sees the difference: `step()` skips a parameter whose `.grad` is `None`, but
# updates one whose gradient is zero, and with momentum (0.9 here) that update still moves
# it.


# %%
# NBVAL_CHECK_OUTPUT
def grad_state(param):
    """What `param.grad` holds: "None", "zeros" or "values"."""
    if param.grad is None:
        return "None"
    return "values" if param.grad.any().item() else "zeros"


def train_two_heads(lib, set_to_none):
    """Four SGD steps of a shared layer and two heads; step t uses head A if t is even, else B."""
    lib.manual_seed(0)
    shared = lib.nn.Linear(2, 2)
    heads = {"A": lib.nn.Linear(2, 1), "B": lib.nn.Linear(2, 1)}
    params = [*shared.parameters(), *heads["A"].parameters(), *heads["B"].parameters()]
    optimizer = lib.optim.SGD(params, lr=0.1, momentum=0.9)
    x = lib.tensor([[1.0, 2.0]])
    print("step head  A.grad  B.grad  moved")
    for step in range(4):
        taken, not_taken = ("A", "B") if step % 2 == 0 else ("B", "A")
        optimizer.zero_grad(set_to_none=set_to_none)
        heads[taken](shared(x).tanh()).pow(2).sum().backward()
        # The rule, checked: the head not taken has no .grad, unless zero_grad kept it as zeros.
        kept_as_zeros = not set_to_none and step > 0
        assert grad_state(heads[not_taken].weight) == ("zeros" if kept_as_zeros else "None")
        before = {name: head.weight.tolist() for name, head in heads.items()}
        optimizer.step()
        moved = [name for name, head in heads.items() if head.weight.tolist() != before[name]]
        state_a, state_b = grad_state(heads["A"].weight), grad_state(heads["B"].weight)
        print(f"{step:>4} {taken:>4}  {state_a:6}  {state_b:6}  {' '.join(moved)}")


print("optimizer.zero_grad(): .grad set to None")
minitorch.viz.compare(lambda lib: train_two_heads(lib, True), (torch, minitorch))
print()
print("optimizer.zero_grad(set_to_none=False): .grad filled with zeros")
minitorch.viz.compare(lambda lib: train_two_heads(lib, False), (torch, minitorch))


# %% [markdown]
# With the default, the head that a step does not take has no gradient and stays where it
# is. With `set_to_none=False` it holds zeros from the step after its first use on, and
# momentum keeps moving it on steps that never used it. (Plain SGD, without momentum or
# weight decay, would leave it in place: `lr * 0` changes nothing.) Both libraries agree
# row for row; the assert in the loop checks the rule on each of them.
#
# A model whose **depth depends on its input**: it applies the same layer (shared
# parameters `weight` and `bias`) until the hidden state is small enough. A large input
# needs more layers, so its graph is longer; the parameters still appear once each.


# %%
def make_parameters(lib):
    gen = torch.Generator().manual_seed(0)
    weight = (torch.rand(3, 3, generator=gen, dtype=torch.float64) - 0.5).tolist()
    bias = (torch.rand(3, generator=gen, dtype=torch.float64) * 0.1).tolist()
    return (
        lib.tensor(weight, dtype=lib.float64, requires_grad=True),
        lib.tensor(bias, dtype=lib.float64, requires_grad=True),
    )


def run_model(x, weight, bias, threshold=0.5, max_depth=30):
    """Apply the layer until the norm of h is below `threshold`; return (out, depth)."""
    h, depth = x, 0
    while h.norm().item() > threshold and depth < max_depth:
        h = h * 0.6 + (weight @ h + bias).tanh() * 0.1
        depth += 1
    return (h * h).sum() + bias.sum(), depth


def make_model(params):
    """The model as a function of the input alone: x -> out."""
    return lambda x: run_model(x, *params)[0]


# %% [markdown] nbgrader={"grade_id": "ex7_graph_sizes_statement", "locked": true}
# ### Exercise 7 (2 points): graph size per input
#
# Write `graph_sizes(model, inputs)`: for each tensor `x` in `inputs`, run `model(x)` and
# count the distinct nodes of the graph its output recorded (`AccumulateGrad` nodes
# included, each node once: what `collect_nodes` returns). Return the list of counts, one
# per input, in order. `model` is any function from a tensor to a tensor, in either library;
# its graphs may be thousands of ops deep, with nodes reached along very many paths.
#
# Example: with the model above, `[0.1, 0.1, 0.1]`, `[1.0, 1.0, 1.0]` and
# `[10.0, 10.0, 10.0]` need 0, 3 and 8 layers, and their graphs have 3, 23 and 53 nodes.
#
# *Hint:* the graph is rebuilt on every call, so every input needs its own forward.


# %% nbgrader={"grade_id": "ex7_graph_sizes", "solution": true}
def graph_sizes(model, inputs):
    """For each input `x` in `inputs`, run `model(x)` and count the nodes of the graph it built.

    Count every node once, AccumulateGrad nodes included (what `collect_nodes` returns).
    Returns a list of ints, one per input, in order.
    """
    ### BEGIN SOLUTION
    return [len(collect_nodes(model(x))) for x in inputs]
    ### END SOLUTION


# %% nbgrader={"grade_id": "ex7_graph_sizes_tests", "grade": true, "points": 2}
with exercise(7):
    for lib in (torch, minitorch):
        model = make_model(make_parameters(lib))
        inputs = [lib.tensor([s, s, s], dtype=lib.float64) for s in (0.1, 1.0, 10.0)]
        sizes = graph_sizes(model, inputs)
        name = lib.__name__
        assert isinstance(sizes, list) and len(sizes) == 3, (
            f"{name}: one count per input, got {sizes}"
        )
        assert sizes[0] < sizes[1] < sizes[2], (
            f"{name}: larger inputs need more layers, got {sizes}"
        )
        assert sizes == [3, 23, 53], f"{name}: expected [3, 23, 53] (see the example), got {sizes}"
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.graph_construction import grade

grade.graph_sizes(graph_sizes)
### END HIDDEN TESTS

# %%
# NBVAL_CHECK_OUTPUT
gen = torch.Generator().manual_seed(1)
scales = torch.logspace(-1.5, 2, 40, dtype=torch.float64)
directions = torch.randn(40, 3, generator=gen, dtype=torch.float64)
table = {}
with exercise(7):
    for lib in (torch, minitorch):
        params = make_parameters(lib)
        points = [(s * d / d.norm()).tolist() for s, d in zip(scales, directions)]
        inputs = [lib.tensor(p, dtype=lib.float64) for p in points]
        depths = [run_model(x, *params)[1] for x in inputs]
        sizes = graph_sizes(make_model(params), inputs)
        table[lib.__name__] = sorted(set(zip(depths, sizes)))
    assert table["torch"] == table["minitorch"]
    print("depth -> nodes:", ", ".join(f"{d} -> {n}" for d, n in table["torch"]))

# %%
if len(table) < 2:
    print("Exercise 7: graph_sizes() is not written yet; the plot needs the table above.")
else:
    depths, sizes = zip(*table["torch"])
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(depths, sizes, "o-", label="PyTorch")
    ax.plot(*zip(*table["minitorch"]), "x", markersize=10, label="minitorch")
    ax.set_xlabel("depth (layers the input needed)")
    ax.set_ylabel("nodes in the graph")
    ax.set_title("One model, many graphs")
    ax.legend()
    plt.show()

# %% [markdown]
# Each layer adds six nodes (`MulBackward0`, `MvBackward0`, `AddBackward0`,
# `TanhBackward0`, `MulBackward0`, `AddBackward0`), so the size grows linearly with the
# depth, while `weight` and `bias` keep one `AccumulateGrad` each however deep the model
# goes. The first layer adds only five: there `h` is still the input, which needs no grad,
# so `h * 0.6` is not recorded. At depth 0 the input never met `weight`: only `bias.sum()`
# was recorded.


# %% [markdown]
# ## 7. Record a graph yourself
#
# Nothing in PyTorch declares the graph: every op that runs on a tensor that requires grad
# makes one node, points the result's `grad_fn` at it, and stores in its `next_functions`
# where the gradient of each input goes next. Each node also keeps what its **local
# backward** needs (what `ctx.save_for_backward` keeps in a `Function`). That is all a
# dynamic graph is, and it fits in a few lines of Python. The next cell gives the node
# classes, shaped like PyTorch's: a `Node` has `name()` and `next_functions`, and calling
# it on the gradient of its result returns the gradients of its inputs; an
# `AccumulateGrad` node has the leaf in `.variable`. `backward_values(out)` runs the
# chain rule over a graph of such nodes with your `collect_nodes`, the most recently
# created node first, as PyTorch's engine does (notebook 2 says why an order is needed).


# %% nbgrader={"grade_id": "recording_nodes", "locked": true}
class Node:
    """A recorded op, read like PyTorch's: `name()`, `next_functions` (one `(node, 0)` pair per
    input, `None` for an input without grad), and `node(grad)`, the local backward: the
    gradients of the inputs (a tuple, one per input) from the gradient of the result."""

    created = 0  # how many nodes exist: a node made later runs earlier in backward

    def __init__(self, name, next_functions, backward):
        self._name = name
        self.next_functions = tuple(next_functions)
        self.backward = backward
        Node.created += 1
        self.sequence_nr = Node.created

    def name(self):
        return self._name

    def __call__(self, grad):
        return self.backward(grad)


class AccumulateGrad(Node):
    """The node behind a leaf that requires grad: backward adds into `variable.grad`."""

    def __init__(self, variable):
        super().__init__("torch::autograd::AccumulateGrad", (), None)
        self.variable = variable


def backward_values(out):
    """Add d(out)/d(leaf) into the `.grad` (a float) of every leaf of out's graph."""
    grads = {out.grad_fn: 1.0}
    for node in sorted(collect_nodes(out), key=lambda node: -node.sequence_nr):
        grad = grads.pop(node, 0.0)
        if isinstance(node, AccumulateGrad):
            leaf = node.variable
            leaf.grad = grad if leaf.grad is None else leaf.grad + grad
            continue
        for (child, _), child_grad in zip(node.next_functions, node(grad)):
            if child is not None:
                grads[child] = grads.get(child, 0.0) + child_grad


# %% [markdown] nbgrader={"grade_id": "ex8_value_statement", "locked": true}
# ### Exercise 8 (4 points): a value that records its graph
#
# `Value` below is a Python float that records the ops applied to it, as a 0-d tensor
# does. Write its recording and three ops:
#
# - `record(name, data, inputs, backward)` returns the result of an op: a new
#   `Value(data)`. If **any** of `inputs` requires grad, the result requires grad and its
#   `grad_fn` is `Node(name, next_functions, backward)`, with one `(node, 0)` pair per
#   input, in order: the input's `grad_fn` if it has one, else its `accumulate_grad` (a
#   leaf's `AccumulateGrad` node, made once per leaf; `None` for a value that does not
#   require grad). Otherwise nothing is recorded: `requires_grad` False, `grad_fn` None.
# - `__add__`, `__mul__` and `tanh` compute the result and record it with PyTorch's node
#   name (`"AddBackward0"`, `"MulBackward0"`, `"TanhBackward0"`) and the op's **local
#   backward**: a function from the gradient `g` of the result (a float) to the tuple of
#   its inputs' gradients. For `a * b` it is `(g * b, g * a)`.
#
# Python numbers become `Value(number)` first (written for you), so `x * 2` gets a
# `(None, 0)` edge for the 2, as in PyTorch; `2 * x` and `1 + x` go through `__rmul__` and
# `__radd__`, which are `__mul__` and `__add__`.
#
# Example: with `x = Value(0.5, requires_grad=True)` and `y = (x * x).tanh()`,
# `y.grad_fn.name()` is `"TanhBackward0"`; its `next_functions[0][0]` is the
# `MulBackward0` node, whose `next_functions` is
# `((x.accumulate_grad, 0), (x.accumulate_grad, 0))`; and `y.grad_fn(1.0)` is
# `(1 - tanh(0.25) ** 2,)`.
#
# The grader records programs with your class and with PyTorch (values used several
# times, numbers on either side, values that do not require grad), walks both graphs and
# compares every node's name and edges, what each node returns, and the gradients.
#
# *Hints:* a `lambda` (or a nested `def`) made inside an op keeps the values its backward
# needs. $\tanh'(a) = 1 - \tanh(a)^2$.


# %% nbgrader={"grade_id": "ex8_value", "solution": true}
class Value:
    """A Python float that records the ops applied to it, as a 0-d tensor does.

    `Value(0.5, requires_grad=True)` is a leaf; `+`, `*` and `tanh()` give new values whose
    `grad_fn` is the `Node` of the op that made them, linked to their inputs' nodes through
    `next_functions`.
    """

    def __init__(self, data, requires_grad=False):
        self.data = float(data)
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = None  # the node of the op that made this value
        self.accumulate_grad = AccumulateGrad(self) if requires_grad else None

    def item(self):
        return self.data

    def __repr__(self):
        return f"Value({self.data:.4f})"

    def record(self, name, data, inputs, backward):
        """A new Value holding `data`: the result of op `name` on `inputs` (a tuple of Values),
        recorded with the local `backward` if any input requires grad."""
        ### BEGIN SOLUTION
        out = Value(data)
        if any(value.requires_grad for value in inputs):
            edges = [
                (value.grad_fn, 0) if value.grad_fn is not None else (value.accumulate_grad, 0)
                for value in inputs
            ]
            out.requires_grad = True
            out.grad_fn = Node(name, edges, backward)
        return out
        ### END SOLUTION

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        ### BEGIN SOLUTION
        return self.record("AddBackward0", self.data + other.data, (self, other), lambda g: (g, g))
        ### END SOLUTION

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        ### BEGIN SOLUTION
        a, b = self.data, other.data
        return self.record("MulBackward0", a * b, (self, other), lambda g: (g * b, g * a))
        ### END SOLUTION

    def tanh(self):
        ### BEGIN SOLUTION
        t = math.tanh(self.data)
        return self.record("TanhBackward0", t, (self,), lambda g: (g * (1 - t * t),))
        ### END SOLUTION

    __radd__ = __add__
    __rmul__ = __mul__


# %% nbgrader={"grade_id": "ex8_value_tests", "grade": true, "points": 4}
with exercise(8):
    x = Value(0.5, requires_grad=True)
    square = x * x
    y = square.tanh()
    assert isinstance(y, Value) and abs(y.data - math.tanh(0.25)) < 1e-12, (
        f"(x * x).tanh() at x = 0.5: expected Value({math.tanh(0.25):.4f}), got {y!r}"
    )
    assert y.requires_grad and y.grad_fn is not None, "y depends on x, which requires grad"
    assert y.grad_fn.name() == "TanhBackward0", f"y.grad_fn.name() is {y.grad_fn.name()!r}"
    ((node, nr),) = y.grad_fn.next_functions
    assert node is square.grad_fn and nr == 0, (
        "y.grad_fn.next_functions must be ((square.grad_fn, 0),): the node of the input"
    )
    edges = square.grad_fn.next_functions
    assert edges == ((x.accumulate_grad, 0), (x.accumulate_grad, 0)), (
        f"x * x must point twice at x.accumulate_grad, got {edges}"
    )
    (local,) = y.grad_fn(1.0)
    assert abs(local - (1 - math.tanh(0.25) ** 2)) < 1e-12, (
        f"TanhBackward0 called on 1.0 returns ({local},), expected (1 - tanh(0.25) ** 2,)"
    )
    edges = (x * 2).grad_fn.next_functions
    assert len(edges) == 2 and edges[1] == (None, 0), (
        f"x * 2 has one edge per input, the 2's is (None, 0): expected 2 edges, got {edges}"
    )
    data = Value(3.0) * 2 + 1
    assert not data.requires_grad and data.grad_fn is None, (
        "ops on values that do not require grad record nothing"
    )
    w = Value(-1.5, requires_grad=True)
    out = x * w + w.tanh()
    (mul, _), (tanh, _) = out.grad_fn.next_functions  # the chain rule, node by node:
    from_mul, from_tanh = out.grad_fn(1.0)
    dx, dw = mul(from_mul)
    (dw_tanh,) = tanh(from_tanh)
    assert abs(dx - w.data) < 1e-12, f"d(out)/dx = w = -1.5, got {dx}"
    want = 1 - math.tanh(w.data) ** 2
    assert abs(dw - x.data) < 1e-12 and abs(dw_tanh - want) < 1e-12, (
        f"d(out)/dw = x + (1 - tanh(w)^2) = {x.data} + {want}, got {dw} + {dw_tanh}"
    )
    print("Visible tests passed.")

### BEGIN HIDDEN TESTS
from solutions.graph_construction import grade

grade.recording_value(Value)
### END HIDDEN TESTS


# %% [markdown]
# Now an ordinary Python function with a loop and a branch that depends on a value. Run
# on PyTorch tensors, it records PyTorch's graph; run on `Value`s, it records yours. Your
# `collect_nodes` walks both, and the gradients agree:


# %%
# NBVAL_CHECK_OUTPUT
import textwrap
from types import SimpleNamespace


def program(x, w, steps):
    """Ordinary Python: a loop, and an `if` on the value computed so far."""
    h = x
    for _ in range(steps):
        h = (h * w + 1).tanh()
    if h.item() > 0.5:
        h = h * x
    else:
        h = h * h + w
    return h


def record_program(lib):
    """Record program(x, w, 3) with `lib.leaf` making the leaves; print nodes and gradients."""
    x, w = lib.leaf(0.8), lib.leaf(-0.6)
    out = program(x, w, 3)
    names = [node.name().replace("torch::autograd::", "") for node in collect_nodes(out)]
    print(f"out = {out.item():.5f}, {len(names)} nodes:")
    print(textwrap.fill(", ".join(names), 44))
    lib.backward(out)
    print(f"x.grad = {float(x.grad):.5f}")
    print(f"w.grad = {float(w.grad):.5f}")


pytorch = SimpleNamespace(
    __name__="PyTorch",
    leaf=lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True),
    backward=lambda out: out.backward(),
)
values = SimpleNamespace(
    __name__="your Value",
    leaf=lambda v: Value(v, requires_grad=True),
    backward=backward_values,
)
with exercise(8):
    minitorch.viz.compare(record_program, (pytorch, values))


# %% [markdown]
# The two columns are the same graph: `grad_fn` is the node of the op that made a value,
# `next_functions` holds the edges to its inputs' nodes, and a lambda keeps what the local
# backward needs, as PyTorch's `MulBackward0` keeps `_saved_self` and `_saved_other`.
# Nothing described the program in advance: the loop ran three times and the `if` took
# one branch, and each op that ran added one node. Another `x` could take the other branch
# and record another graph. minitorch's `Function.apply` records the same way, with
# tensors instead of floats.
#
# ## Summary
#
# - The graph is recorded **while the forward pass runs**: one node per op on tensors that
#   require grad, reached through `grad_fn`, linked by `next_functions`.
# - Leaves are tensors you created (or results that require no grad); those that require
#   grad sit behind `AccumulateGrad` nodes, whose `.variable` receives `.grad`.
# - A graph is a DAG, not a tree: walk it iteratively and remember what you have seen.
# - A new op is a `Function`: forward saves what backward needs; backward applies the
#   chain rule and returns one gradient per forward argument; `gradcheck` verifies it.
# - Training records a new graph at every step. A term that multiplies data by a parameter
#   adds a `MulBackward0`, an `AddBackward0` and the parameter's `AccumulateGrad`; ops on
#   data alone are not recorded.
# - Control flow that depends on the data gives a different graph on every forward. The
#   parameters of a branch not taken keep `.grad` `None`; `zero_grad(set_to_none=False)`
#   leaves zeros instead, which an optimizer with momentum still steps on.
# - Recording is small enough to write: each op that runs makes a node holding its inputs'
#   nodes (`next_functions`) and a local backward, and points its result's `grad_fn` at it.
#
# Next notebook: how `backward()` walks this graph.
