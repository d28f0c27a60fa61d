"""Reference solutions of notebook 4, "memory": the single source of truth.

Each block below starting with `# %% <grade_id>` is, verbatim, the solution cell of that
exercise in course/source/memory/memory.ipynb (the generator course/generate/memory.py copies it
there; a test checks the two never drift). The imports above the first block are the ones the
notebook's setup cell makes.
"""

import contextlib  # noqa: F401 (the notebook's imports, in scope for every solution)
import gc  # noqa: F401
import math  # noqa: F401
import weakref

import torch  # noqa: F401

import minitorch
from minitorch import nn  # noqa: F401
from minitorch.autograd.graph import saved_tensors, saved_tensors_hooks
from minitorch.memory import track
from minitorch.utils.checkpoint import checkpoint_sequential

ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"


# %% ex1_saved_bytes
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


# %% ex2_train_epoch
def train_epoch(model, optimizer, batches, x_val, y_val):
    """One epoch of training that does not leak: the memory it leaves behind is the same after
    1 batch as after 100.

    For each `(x, y)` in `batches`: zero the gradients, compute the mean squared error of
    `model(x)` against `y`, backward, `optimizer.step()`, then the validation loss (mean squared
    error of `model(x_val)` against `y_val`). Returns `(mean training loss, list of validation
    losses)`, all Python floats.
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


# %% ex3_evaluate
def evaluate(model, batches):
    """The mean over `batches` of each batch's mean squared error `((model(x) - y) ** 2).mean()`,
    a Python float, computed without recording any graph (and leaving grad mode as it was)."""
    ### BEGIN SOLUTION
    losses = []
    with minitorch.inference_mode():
        for x, y in batches:
            losses.append(((model(x) - y) ** 2).mean().item())
    return sum(losses) / len(losses)
    ### END SOLUTION


# %% ex4_checkpoint
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
    """`fn(*inputs)` (one tensor out), keeping only `inputs` for backward, which runs `fn` again."""
    return Checkpoint.apply(fn, *inputs)


# %% ex5_best_segments
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


# %% ex6_step_within_budget
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


# %% ex7_truncated_bptt
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


# %% ex8_half_precision_hooks
def half_precision_hooks():
    """Saved-tensor hooks that keep saved activations in half precision; backward gets them
    back in their original dtype.

    Returns `saved_tensors_hooks(pack, unpack)`. Leaves (parameters, inputs) are kept as they
    are: they are alive anyway. Any other tensor is stored as one float16 copy, made the first
    time it is packed and reused when the same tensor is saved again (one op's output is often
    saved by the next op too). Remember a tensor by its `id` together with a `weakref.ref` to it
    (ids are reused once a tensor dies); never keep a strong reference to it.
    """
    ### BEGIN SOLUTION
    copies = {}  # id(tensor) -> (weak reference to the tensor, its dtype, its float16 copy)

    def pack(tensor):
        if tensor.is_leaf:
            return tensor
        known = copies.get(id(tensor))
        if known is None or known[0]() is not tensor:
            known = (weakref.ref(tensor), tensor.dtype, tensor.half())
            copies[id(tensor)] = known
        return known[1], known[2]

    def unpack(packed):
        if isinstance(packed, tuple):
            dtype, half = packed
            return half.to(dtype)
        return packed

    return saved_tensors_hooks(pack, unpack)
    ### END SOLUTION
