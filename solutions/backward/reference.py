"""Reference solutions of notebook 2, "backward": the single source of truth.

Each block below starting with `# %% <grade_id>` is, verbatim, the solution cell of that
exercise in course/source/backward/backward.ipynb (the generator course/generate/backward.py
copies it there; a test checks the two never drift). The imports above the first block are the
ones the notebook's setup cell makes.
"""

import math  # noqa: F401 (the notebook's imports, in scope for every solution)
from collections import deque

import torch

import minitorch

ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"

# The snippets of exercise 8: (first part, second part). The first part builds a graph and runs
# a backward; the second part runs one more backward. `torch` is PyTorch or minitorch.
SNIPPETS = {
    "a": (
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\ns = x.exp().sum()\ns.backward()",
        "s.backward()",
    ),
    "b": (
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\ns = (x + 1).sum()\ns.backward()",
        "s.backward()",
    ),
    "c": (
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\ns = (x * 2).sum()\ns.backward()",
        "s.backward()",
    ),
    "d": (
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\ns = (x * x).sum()\n"
        "s.backward(retain_graph=True)",
        "s.backward()",
    ),
    "e": (
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\ns = (x * x).sum()\ns.backward()",
        "s = (x * x).sum()\ns.backward()",
    ),
    "f": (
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\ny = x.sin()\ny.sum().backward()",
        "(y * 3).sum().backward()",
    ),
    "g": (
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\ny = x.sin()\ny.sum().backward()",
        "x.cos().sum().backward()",
    ),
    "h": (
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\ns = (x * x).sum()\n"
        "(g,) = torch.autograd.grad(s, x)",
        "s.backward()",
    ),
    "i": (
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\ns = x.mean()\ns.backward()",
        "s.backward()",
    ),
    "j": (
        "x = torch.tensor([1.0, 2.0], requires_grad=True)\ns = (x * x).sum()\n"
        "s.backward(retain_graph=True)\ns.backward()",
        "s.backward()",
    ),
}
# Why a second backward raises or works (exercise 8).
REASONS = ("freed", "retain_graph", "nothing_saved", "fresh_graph")


# %% ex1_topological_order
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


# %% ex2_run_backward
def run_backward(tensor, grad):
    """Your own `tensor.backward(grad)`: add d(sum(tensor * grad))/d(leaf) to each leaf's `.grad`.

    `grad` has the shape of `tensor`, which has a `grad_fn`. Visit the nodes in topological
    order; call each op node on the sum of the gradients that reached it (under no_grad) and
    pass each result along the matching `next_functions` entry; an AccumulateGrad node adds its
    gradient into `node.variable.grad` (created on first use). Every node in these graphs has
    a single output. Works on PyTorch and minitorch graphs.
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
        for (child, _), child_grad in zip(node.next_functions, input_grads):
            if child is None or child_grad is None:
                continue
            grads[child] = grads[child] + child_grad if child in grads else child_grad
    ### END SOLUTION


# %% ex3_sum_to_shape
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


# %% ex4_jacobian
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


# %% ex5_hessian_vector_product
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


# %% ex6_accumulated_gradients
def accumulated_gradients(model, loss_fn, inputs, targets, k):
    """The full-batch gradient of `loss_fn(model(inputs), targets)`, computed in k micro-batches.

    `loss_fn` averages over the batch; the batch splits into k equal micro-batches
    (`inputs.chunk(k)`). Start from zeroed gradients, run one backward per micro-batch, and
    return `[p.grad for p in model.parameters()]`: equal to the gradient of the full batch.
    """
    ### BEGIN SOLUTION
    model.zero_grad()
    for x, y in zip(inputs.chunk(k), targets.chunk(k)):
        loss = loss_fn(model(x), y) / k
        loss.backward()
    return [p.grad for p in model.parameters()]
    ### END SOLUTION


# %% ex7_fit_line
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


# %% ex8_predict_second_backward
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
