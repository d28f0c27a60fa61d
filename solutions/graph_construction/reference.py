"""Reference solutions of notebook 1, "graph construction": the single source of truth.

Each block below starting with `# %% <grade_id>` is, verbatim, the solution cell of that
exercise in course/source/graph_construction/graph_construction.ipynb (the generator
course/generate/graph_construction.py copies it there; a test checks the two never drift). The
imports above the first block are the ones the notebook's setup cell makes.
"""

import math  # noqa: F401 (the notebook's imports, in scope for every solution)
from collections import Counter, deque

import torch  # noqa: F401

import minitorch  # noqa: F401
from minitorch.autograd import Function

# The snippets of exercise 4: each one builds a tensor `out`; `torch` is PyTorch or minitorch.
SNIPPETS = {
    "a": "x = torch.ones(3, requires_grad=True)\nout = x",
    "b": "x = torch.ones(3)\nout = x * 2",
    "c": "x = torch.ones(3, requires_grad=True)\nout = x * 2",
    "d": "x = torch.ones(3, requires_grad=True)\nout = (x * 2).sum()",
    "e": "w = torch.ones(3, requires_grad=True)\nb = torch.zeros(3)\nout = w + b",
    "f": "x = torch.ones(3, requires_grad=True)\nout = x.detach() * 2",
    "g": "x = torch.ones(3, requires_grad=True)\nwith torch.no_grad():\n    out = x.sin()",
    "h": "x = torch.ones(3, requires_grad=True)\nout = x.sin().detach().requires_grad_()",
    "i": "x = torch.ones(2, 3, requires_grad=True)\nout = x[0]",
    "j": "x = torch.ones(3, requires_grad=True)\ny = torch.ones(3)\nout = x.exp() / y",
}


# %% ex1_collect_nodes
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


# %% ex2_count_ops
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


# %% ex3_find_leaves
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


# %% ex4_predict_flags
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


# %% ex5_softplus
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


# %% ex6_f_and_gradients
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


# %% ex7_graph_sizes
def graph_sizes(model, inputs):
    """For each input `x` in `inputs`, run `model(x)` and count the nodes of the graph it built.

    Count every node once, AccumulateGrad nodes included (what `collect_nodes` returns).
    Returns a list of ints, one per input, in order.
    """
    ### BEGIN SOLUTION
    return [len(collect_nodes(model(x))) for x in inputs]
    ### END SOLUTION
