"""Plausible wrong answers to notebook 4's exercises: classic memory mistakes the graders must
reject.

`WRONG_ANSWERS[grade_id]` lists `WrongAnswer(name, source, why)`; `source` is a complete
replacement for that exercise's solution cell (it defines the same names and may use what the
notebook's setup cell defined: `torch`, `minitorch`, `nn`, `weakref`, `saved_tensors`,
`saved_tensors_hooks`, `track`, `checkpoint_sequential`, `ACCUMULATE_GRAD`).

No graded cell uses another exercise's answer, so each wrong answer costs only its own
exercise (a test checks this). `RIGHT_ANSWERS` are different but correct answers, which must
keep full marks.
"""

from __future__ import annotations

from typing import NamedTuple


class WrongAnswer(NamedTuple):
    name: str
    source: str
    why: str


_CHECKPOINT_TAIL = """

def checkpoint(fn, *inputs):
    if not any(x.requires_grad for x in inputs):
        inputs = [x.detach().requires_grad_() for x in inputs]
    return Checkpoint.apply(fn, *inputs)
"""

_BPTT_HEAD = """\
def truncated_bptt(cell, xs, targets, h0, k):
    cell.zero_grad()
    h = h0
    total = 0.0
    chunk_loss = 0.0
    for t in range(len(xs)):
"""

_BUDGET_HEAD = """\
def step_within_budget(model, loss_fn, inputs, targets, budget):
    def peak(size):
        with track() as mem:
            loss_fn(model(inputs[:size]), targets[:size]).backward()
        return mem.peak_bytes

    with track() as call:
        model.zero_grad()
        peak(1)
        one, two = peak(1), peak(2)
        per_sample = two - one
        size = max(1, min(len(inputs), (call.start_bytes + budget - one) // per_sample + 1))
"""

WRONG_ANSWERS: dict[str, list[WrongAnswer]] = {
    "ex1_saved_bytes": [
        WrongAnswer(
            "bytes_per_saved_tensor",
            """\
def saved_bytes(t, include_parameters=False):
    if t.grad_fn is None:
        return 0
    total = 0
    seen, to_visit = {t.grad_fn}, [t.grad_fn]
    while to_visit:
        node = to_visit.pop()
        for _, saved in saved_tensors(node):
            if include_parameters or not (saved.is_leaf and saved.requires_grad):
                total += saved.nbytes
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                to_visit.append(child)
    return total
""",
            "adds each saved tensor's own bytes: a tensor saved twice, or views of one "
            "storage, are counted several times",
        ),
        WrongAnswer(
            "parameters_always_counted",
            """\
def saved_bytes(t, include_parameters=False):
    if t.grad_fn is None:
        return 0
    sizes = {}
    seen, to_visit = {t.grad_fn}, [t.grad_fn]
    while to_visit:
        node = to_visit.pop()
        for _, saved in saved_tensors(node):
            storage = saved.untyped_storage()
            sizes[storage.data_ptr()] = storage.nbytes()
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                to_visit.append(child)
    return sum(sizes.values())
""",
            "ignores include_parameters: the parameters' storages are always counted",
        ),
        WrongAnswer(
            "output_node_only",
            """\
def saved_bytes(t, include_parameters=False):
    if t.grad_fn is None:
        return 0
    sizes, parameters = {}, set()
    for _, saved in saved_tensors(t.grad_fn):
        storage = saved.untyped_storage()
        sizes[storage.data_ptr()] = storage.nbytes()
        if saved.is_leaf and saved.requires_grad:
            parameters.add(storage.data_ptr())
    return sum(n for p, n in sizes.items() if include_parameters or p not in parameters)
""",
            "looks only at what the output's own node saved, not at the whole graph",
        ),
        WrongAnswer(
            "data_ptr_of_each_view",
            """\
def saved_bytes(t, include_parameters=False):
    if t.grad_fn is None:
        return 0
    sizes, parameters = {}, set()
    seen, to_visit = {t.grad_fn}, [t.grad_fn]
    while to_visit:
        node = to_visit.pop()
        if node.name() == ACCUMULATE_GRAD:
            parameters.add(node.variable.data_ptr())
        for _, saved in saved_tensors(node):
            sizes[saved.data_ptr()] = saved.nbytes
            if saved.is_leaf and saved.requires_grad:
                parameters.add(saved.data_ptr())
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                to_visit.append(child)
    return sum(n for p, n in sizes.items() if include_parameters or p not in parameters)
""",
            "identifies a storage by the tensor's data_ptr(): views that start elsewhere in the "
            "same storage are counted again, with their own size",
        ),
        WrongAnswer(
            "recursive_walk",
            """\
def saved_bytes(t, include_parameters=False):
    if t.grad_fn is None:
        return 0
    sizes, parameters, seen = {}, set(), set()

    def visit(node):
        seen.add(node)
        if node.name() == ACCUMULATE_GRAD:
            parameters.add(node.variable.untyped_storage().data_ptr())
        for _, saved in saved_tensors(node):
            storage = saved.untyped_storage()
            sizes[storage.data_ptr()] = storage.nbytes()
            if saved.is_leaf and saved.requires_grad:
                parameters.add(storage.data_ptr())
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                visit(child)

    visit(t.grad_fn)
    return sum(n for ptr, n in sizes.items() if include_parameters or ptr not in parameters)
""",
            "walks the graph by recursion: a graph deeper than Python's recursion limit (a "
            "chain of thousands of ops) raises RecursionError",
        ),
        WrongAnswer(
            "no_seen_set",
            """\
def saved_bytes(t, include_parameters=False):
    if t.grad_fn is None:
        return 0
    sizes, parameters = {}, set()
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
            if child is not None:
                to_visit.append(child)
    return sum(n for ptr, n in sizes.items() if include_parameters or ptr not in parameters)
""",
            "walks without a set of seen nodes: the figure is right (storages are counted once), "
            "but a node is visited once per path, exponentially often on a graph with reuse",
        ),
    ],
    "ex2_train_epoch": [
        WrongAnswer(
            "validation_loss_tensors_kept",
            """\
def train_epoch(model, optimizer, batches, x_val, y_val):
    total = 0.0
    validation = []
    for x, y in batches:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        total += loss.item()
        validation.append(((model(x_val) - y_val) ** 2).mean())
    return total / len(batches), [v.item() for v in validation]
""",
            "keeps every validation loss tensor, and with it the whole validation graph and its "
            "saved activations, until the end of the epoch",
        ),
        WrongAnswer(
            "detach_in_the_wrong_place",
            """\
def train_epoch(model, optimizer, batches, x_val, y_val):
    total = 0.0
    validation = []
    for x, y in batches:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        total += loss.item()
        validation.append(((model(x_val).detach() - y_val) ** 2).mean())
    return total / len(batches), validation
""",
            "detaches the validation output but keeps the loss tensors: memory grows with every "
            "batch, and the losses are tensors instead of floats",
        ),
        WrongAnswer(
            "no_grad_around_training",
            """\
def train_epoch(model, optimizer, batches, x_val, y_val):
    total = 0.0
    validation = []
    with minitorch.no_grad():
        for x, y in batches:
            optimizer.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            optimizer.step()
            total += loss.item()
            validation.append(((model(x_val) - y_val) ** 2).mean().item())
    return total / len(batches), validation
""",
            "no_grad around the training step too: nothing to backward through",
        ),
        WrongAnswer(
            "running_total_tensor",
            """\
def train_epoch(model, optimizer, batches, x_val, y_val):
    total = 0.0
    validation = []
    for x, y in batches:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        total += loss
        with minitorch.no_grad():
            validation.append(((model(x_val) - y_val) ** 2).mean().item())
    return total.item() / len(batches), validation
""",
            "the running total is a tensor (.item() only at the end): its graph reaches every "
            "iteration's loss, the first leak of section 5",
        ),
        WrongAnswer(
            "mean_over_all_samples",
            """\
def train_epoch(model, optimizer, batches, x_val, y_val):
    total, samples = 0.0, 0
    validation = []
    for x, y in batches:
        optimizer.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        optimizer.step()
        total += loss.item() * len(x)
        samples += len(x)
        with minitorch.no_grad():
            validation.append(((model(x_val) - y_val) ** 2).mean().item())
    return total / samples, validation
""",
            "weights each batch by its size: the mean over all samples, not the mean of the "
            "batch losses asked (they differ when the last batch is smaller)",
        ),
    ],
    "ex3_evaluate": [
        WrongAnswer(
            "eval_mode_only",
            """\
def evaluate(model, batches):
    model.eval()
    losses = [((model(x) - y) ** 2).mean().item() for x, y in batches]
    return sum(losses) / len(losses)
""",
            "model.eval() changes layers such as dropout; the forward still records a graph",
        ),
        WrongAnswer(
            "pytorch_no_grad",
            """\
def evaluate(model, batches):
    losses = []
    with torch.no_grad():
        for x, y in batches:
            losses.append(((model(x) - y) ** 2).mean().item())
    return sum(losses) / len(losses)
""",
            "torch.no_grad() is PyTorch's switch: minitorch still records",
        ),
        WrongAnswer(
            "detach_output",
            """\
def evaluate(model, batches):
    losses = []
    for x, y in batches:
        out = model(x).detach()
        losses.append(((out - y) ** 2).mean().item())
    return sum(losses) / len(losses)
""",
            "detach after the forward: the graph (and its saved tensors) was already built",
        ),
        WrongAnswer(
            "grad_mode_left_off",
            """\
def evaluate(model, batches):
    minitorch.set_grad_enabled(False)
    losses = [((model(x) - y) ** 2).mean().item() for x, y in batches]
    return sum(losses) / len(losses)
""",
            "switches grad mode off for good: the training that follows records nothing",
        ),
        WrongAnswer(
            "mean_over_all_samples",
            """\
def evaluate(model, batches):
    total, samples = 0.0, 0
    with minitorch.no_grad():
        for x, y in batches:
            total += ((model(x) - y) ** 2).mean().item() * len(x)
            samples += len(x)
    return total / samples
""",
            "weights each batch by its size: the mean over all samples, not the mean of the "
            "batches' errors asked (they differ when the last batch is smaller)",
        ),
    ],
    "ex4_checkpoint": [
        WrongAnswer(
            "saves_activations_anyway",
            """\
class Checkpoint(minitorch.autograd.Function):
    @staticmethod
    def forward(ctx, fn, *inputs):
        ctx.inputs = [x.detach().requires_grad_(x.requires_grad) for x in inputs]
        with minitorch.enable_grad():
            ctx.output = fn(*ctx.inputs)
        return ctx.output.detach()

    @staticmethod
    def backward(ctx, grad):
        ctx.output.backward(grad)
        return (None, *[x.grad for x in ctx.inputs])
"""
            + _CHECKPOINT_TAIL,
            "records fn's graph in forward and keeps it: right gradients, no memory saved",
        ),
        WrongAnswer(
            "gradients_of_inputs_only",
            """\
class Checkpoint(minitorch.autograd.Function):
    @staticmethod
    def forward(ctx, fn, *inputs):
        ctx.fn = fn
        ctx.save_for_backward(*inputs)
        return fn(*inputs)

    @staticmethod
    def backward(ctx, grad):
        inputs = [x.detach().requires_grad_(x.requires_grad) for x in ctx.saved_tensors]
        with minitorch.enable_grad():
            output = ctx.fn(*inputs)
        wanted = [x for x in inputs if x.requires_grad]
        grads = iter(minitorch.autograd.grad(output, wanted, grad))
        return (None, *[next(grads) if x.requires_grad else None for x in inputs])
"""
            + _CHECKPOINT_TAIL,
            "autograd.grad with respect to the inputs only: the parameters used inside fn get "
            "no gradient",
        ),
        WrongAnswer(
            "recompute_without_enable_grad",
            """\
class Checkpoint(minitorch.autograd.Function):
    @staticmethod
    def forward(ctx, fn, *inputs):
        ctx.fn = fn
        ctx.save_for_backward(*inputs)
        return fn(*inputs)

    @staticmethod
    def backward(ctx, grad):
        inputs = [x.detach().requires_grad_(x.requires_grad) for x in ctx.saved_tensors]
        output = ctx.fn(*inputs)
        output.backward(grad)
        return (None, *[x.grad for x in inputs])
"""
            + _CHECKPOINT_TAIL,
            "recomputes with grad mode as backward leaves it (off): nothing to backward through",
        ),
        WrongAnswer(
            "reentrant_trap",
            """\
class Checkpoint(minitorch.autograd.Function):
    @staticmethod
    def forward(ctx, fn, *inputs):
        ctx.fn = fn
        ctx.save_for_backward(*inputs)
        return fn(*inputs)

    @staticmethod
    def backward(ctx, grad):
        inputs = [x.detach().requires_grad_(x.requires_grad) for x in ctx.saved_tensors]
        with minitorch.enable_grad():
            output = ctx.fn(*inputs)
        output.backward(grad)
        return (None, *[x.grad for x in inputs])


def checkpoint(fn, *inputs):
    return Checkpoint.apply(fn, *inputs)
""",
            "applies the Function to the inputs as they are: when none requires grad (a batch "
            "of data), nothing is recorded and the segment's parameters get no gradient, the "
            "trap of PyTorch's reentrant checkpoint",
        ),
    ],
    "ex5_best_segments": [
        WrongAnswer(
            "most_segments",
            """\
def best_segments(model, x):
    return len(model)
""",
            "one segment per layer: every layer's input is kept, and a one-layer segment saves "
            "nothing",
        ),
        WrongAnswer(
            "forward_peak_only",
            """\
def best_segments(model, x):
    peaks = []
    for segments in range(1, len(model) + 1):
        model.zero_grad()
        with track() as mem:
            out = checkpoint_sequential(model, segments, x, use_reentrant=False)
        peaks.append(mem.peak_bytes - mem.start_bytes)
        del out
    return 1 + peaks.index(min(peaks))
""",
            "measures the forward pass only: the recomputation in backward is left out",
        ),
        WrongAnswer(
            "end_memory_not_peak",
            """\
def best_segments(model, x):
    left = []
    for segments in range(1, len(model) + 1):
        model.zero_grad()
        with track() as mem:
            checkpoint_sequential(model, segments, x, use_reentrant=False).sum().backward()
        left.append(mem.end_bytes - mem.start_bytes)
    return 1 + left.index(min(left))
""",
            "compares the memory left after backward (the same for every choice), not the peak",
        ),
        WrongAnswer(
            "without_the_last",
            """\
def best_segments(model, x):
    peaks = []
    for segments in range(1, len(model)):
        model.zero_grad()
        with track() as mem:
            checkpoint_sequential(model, segments, x, use_reentrant=False).sum().backward()
        peaks.append(mem.peak_bytes - mem.start_bytes)
    model.zero_grad()
    return 1 + peaks.index(min(peaks))
""",
            "tries 1 to len(model) - 1: one segment per block is never tried, though it is the "
            "best for blocks whose inside is wider than their input",
        ),
        WrongAnswer(
            "from_two_segments",
            """\
def best_segments(model, x):
    peaks = {}
    for segments in range(2, len(model) + 1):
        model.zero_grad()
        with track() as mem:
            checkpoint_sequential(model, segments, x, use_reentrant=False).sum().backward()
        peaks[segments] = mem.peak_bytes - mem.start_bytes
    model.zero_grad()
    return min(peaks, key=peaks.get)
""",
            "never tries one segment (no checkpointing), which ties with the others on a "
            "shallow model and then wins: fewest segments",
        ),
        WrongAnswer(
            "ties_toward_more_segments",
            """\
def best_segments(model, x):
    best, best_peak = None, None
    for segments in range(1, len(model) + 1):
        model.zero_grad()
        with track() as mem:
            checkpoint_sequential(model, segments, x, use_reentrant=False).sum().backward()
        peak = mem.peak_bytes - mem.start_bytes
        if best_peak is None or peak <= best_peak:
            best, best_peak = segments, peak
    model.zero_grad()
    return best
""",
            "`<=` keeps the last of equal peaks: on ties it returns the most segments, where "
            "the fewest are asked (less recomputation)",
        ),
    ],
    "ex6_step_within_budget": [
        WrongAnswer(
            "full_batch",
            """\
def step_within_budget(model, loss_fn, inputs, targets, budget):
    model.zero_grad()
    loss_fn(model(inputs), targets).backward()
""",
            "one backward on the whole batch: over the budget",
        ),
        WrongAnswer(
            "mean_of_micro_batch_means",
            _BUDGET_HEAD
            + """\
        model.zero_grad()
        chunks = list(zip(inputs.split(size), targets.split(size)))
        for x, y in chunks:
            (loss_fn(model(x), y) / len(chunks)).backward()
""",
            "divides by the number of micro-batches: wrong when the last one is smaller",
        ),
        WrongAnswer(
            "one_backward_at_the_end",
            _BUDGET_HEAD
            + """\
        model.zero_grad()
        total = 0.0
        for x, y in zip(inputs.split(size), targets.split(size)):
            total = total + loss_fn(model(x), y) * (len(x) / len(inputs))
        total.backward()
""",
            "adds up the micro-batch losses and backwards once: every micro-batch's graph is "
            "alive at the end, as with the full batch",
        ),
        WrongAnswer(
            "probe_gradients_kept",
            _BUDGET_HEAD
            + """\
        for x, y in zip(inputs.split(size), targets.split(size)):
            (loss_fn(model(x), y) * (len(x) / len(inputs))).backward()
""",
            "does not reset the gradients after the probes: they are added to the result",
        ),
    ],
    "ex7_truncated_bptt": [
        WrongAnswer(
            "one_backward_at_the_end",
            _BPTT_HEAD
            + """\
        h = cell(xs[t], h)
        chunk_loss = chunk_loss + ((h - targets[t]) ** 2).mean()
        if (t + 1) % k == 0:
            h = h.detach()
    chunk_loss.backward()
    return chunk_loss.item()
""",
            "detaches every k steps but backwards once at the end: the right gradients, but "
            "the graph of the whole sequence is alive at once",
        ),
        WrongAnswer(
            "detach_every_step",
            _BPTT_HEAD
            + """\
        h = cell(xs[t], h.detach())
        chunk_loss = chunk_loss + ((h - targets[t]) ** 2).mean()
        if (t + 1) % k == 0 or t + 1 == len(xs):
            chunk_loss.backward()
            total += chunk_loss.item()
            chunk_loss = 0.0
    return total
""",
            "detaches before every step: gradients flow back one step only",
        ),
        WrongAnswer(
            "retain_graph_instead_of_detach",
            _BPTT_HEAD
            + """\
        h = cell(xs[t], h)
        chunk_loss = chunk_loss + ((h - targets[t]) ** 2).mean()
        if (t + 1) % k == 0 or t + 1 == len(xs):
            chunk_loss.backward(retain_graph=True)
            total += chunk_loss.item()
            chunk_loss = 0.0
    return total
""",
            "keeps the graph instead of cutting it: gradients flow into earlier chunks and "
            "memory grows with the sequence",
        ),
        WrongAnswer(
            "last_chunk_dropped",
            _BPTT_HEAD
            + """\
        h = cell(xs[t], h)
        chunk_loss = chunk_loss + ((h - targets[t]) ** 2).mean()
        if (t + 1) % k == 0:
            chunk_loss.backward()
            total += chunk_loss.item()
            chunk_loss = 0.0
            h = h.detach()
    return total
""",
            "forgets the last, shorter chunk when the length is not a multiple of k",
        ),
        WrongAnswer(
            "running_total_of_loss_tensors",
            _BPTT_HEAD
            + """\
        h = cell(xs[t], h)
        chunk_loss = chunk_loss + ((h - targets[t]) ** 2).mean()
        if (t + 1) % k == 0 or t + 1 == len(xs):
            chunk_loss.backward()
            total = total + chunk_loss
            chunk_loss = 0.0
            h = h.detach()
    return total.item()
""",
            "adds each chunk's loss tensor into a running total and calls .item() only at the "
            "end: backward frees each chunk's saved tensors, so the peak stays flat, but the "
            "total's graph keeps every chunk's nodes reachable until the function returns",
        ),
    ],
    "ex8_half_precision_hooks": [
        WrongAnswer(
            "one_copy_per_save",
            """\
def half_precision_hooks():
    def pack(tensor):
        return tensor.dtype, tensor.half()

    def unpack(packed):
        dtype, half = packed
        return half.to(dtype)

    return saved_tensors_hooks(pack, unpack)
""",
            "a new copy for every save: a tensor saved by two ops gets two half copies (as "
            "big as the original), and parameters get copies too",
        ),
        WrongAnswer(
            "keeps_the_original",
            """\
def half_precision_hooks():
    def pack(tensor):
        if tensor.is_leaf:
            return tensor
        return tensor, tensor.half()

    def unpack(packed):
        if isinstance(packed, tuple):
            return packed[1].to(packed[0].dtype)
        return packed

    return saved_tensors_hooks(pack, unpack)
""",
            "returns the original tensor next to its copy: the graph keeps both",
        ),
        WrongAnswer(
            "original_kept_in_the_cache",
            """\
def half_precision_hooks():
    copies = {}

    def pack(tensor):
        if tensor.is_leaf:
            return tensor
        if id(tensor) not in copies:
            copies[id(tensor)] = (tensor, tensor.dtype, tensor.half())
        return copies[id(tensor)][1:]

    def unpack(packed):
        if isinstance(packed, tuple):
            dtype, half = packed
            return half.to(dtype)
        return packed

    return saved_tensors_hooks(pack, unpack)
""",
            "the cache holds a strong reference to every original tensor: saved bytes look "
            "halved, but the originals stay alive",
        ),
        WrongAnswer(
            "unpack_stays_half",
            """\
def half_precision_hooks():
    copies = {}

    def pack(tensor):
        if tensor.is_leaf:
            return tensor
        known = copies.get(id(tensor))
        if known is None or known[0]() is not tensor:
            known = (weakref.ref(tensor), tensor.half())
            copies[id(tensor)] = known
        return known[1]

    def unpack(packed):
        return packed

    return saved_tensors_hooks(pack, unpack)
""",
            "backward gets the float16 copies back: ops mix float16 with the model's dtype",
        ),
        WrongAnswer(
            "copies_of_dead_tensors_kept",
            """\
def half_precision_hooks():
    copies = {}

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
""",
            "the old reference (issue 21): an entry is replaced only when its id is reused, so "
            "the dict keeps the float16 copies of dead tensors, more at every step while the "
            "hooks are reused",
        ),
        WrongAnswer(
            "half_copies_of_leaves",
            """\
def half_precision_hooks():
    copies = {}

    def pack(tensor):
        key = id(tensor)
        if key not in copies:
            copies[key] = (tensor.dtype, tensor.half())
            weakref.finalize(tensor, copies.pop, key, None)
        return copies[key]

    def unpack(packed):
        dtype, half = packed
        return half.to(dtype)

    return saved_tensors_hooks(pack, unpack)
""",
            "copies leaves too: a parameter is alive anyway, so its float16 copy is new memory "
            "(and its gradient's inputs lose precision for nothing)",
        ),
    ],
}

RIGHT_ANSWERS: dict[str, list[WrongAnswer]] = {
    "ex1_saved_bytes": [
        WrongAnswer(
            "deque_and_storage_sets",
            """\
from collections import deque


def saved_bytes(t, include_parameters=False):
    nodes = deque([t.grad_fn] if t.grad_fn is not None else [])
    visited = set(nodes)
    storages, parameter_storages = {}, set()
    while nodes:
        node = nodes.popleft()
        if hasattr(node, "variable"):
            parameter_storages.add(node.variable.untyped_storage().data_ptr())
        for name, saved in saved_tensors(node):
            storage = saved.untyped_storage()
            storages.setdefault(storage.data_ptr(), storage.nbytes())
            if saved.is_leaf and saved.requires_grad:
                parameter_storages.add(storage.data_ptr())
        for child, _ in node.next_functions:
            if child is not None and child not in visited:
                visited.add(child)
                nodes.append(child)
    if not include_parameters:
        for ptr in parameter_storages:
            storages.pop(ptr, None)
    return sum(storages.values())
""",
            "a deque, breadth first, storages removed at the end",
        ),
        WrongAnswer(
            "seen_when_popped_edges_by_index",
            """\
def saved_bytes(t, include_parameters=False):
    stack = [] if t.grad_fn is None else [t.grad_fn]
    done, sizes, parameters = set(), {}, set()
    while stack:
        node = stack.pop()
        if node in done:  # pushed once per edge, visited once
            continue
        done.add(node)
        if node.name() == ACCUMULATE_GRAD:
            parameters.add(node.variable.untyped_storage().data_ptr())
        for _, saved in saved_tensors(node):
            storage = saved.untyped_storage()
            sizes[storage.data_ptr()] = storage.nbytes()
            if saved.is_leaf and saved.requires_grad:
                parameters.add(storage.data_ptr())
        edges = node.next_functions
        for i in range(len(edges)):
            if edges[i][0] is not None:
                stack.append(edges[i][0])
    return sum(n for p, n in sizes.items() if include_parameters or p not in parameters)
""",
            "a node is pushed once per edge and skipped when popped a second time; edges read "
            "by index",
        ),
    ],
    "ex2_train_epoch": [
        WrongAnswer(
            "mse_loss_and_inference_mode",
            """\
def train_epoch(model, optimizer, batches, x_val, y_val):
    losses, validation = [], []
    for x, y in batches:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        del loss
        with minitorch.inference_mode():
            validation.append(float(nn.functional.mse_loss(model(x_val), y_val)))
    return sum(losses) / len(losses), validation
""",
            "F.mse_loss, a list of floats, float(), inference_mode",
        ),
    ],
    "ex3_evaluate": [
        WrongAnswer(
            "no_grad_running_total",
            """\
def evaluate(model, batches):
    total = 0.0
    with minitorch.set_grad_enabled(False):
        for x, y in batches:
            total += nn.functional.mse_loss(model(x), y).item()
    return total / len(batches)
""",
            "set_grad_enabled(False) as a with block, a running total of floats",
        ),
    ],
    "ex4_checkpoint": [
        WrongAnswer(
            "weighted_sum_instead_of_backward_with_grad",
            """\
class Checkpoint(minitorch.autograd.Function):
    @staticmethod
    def forward(ctx, fn, *inputs):
        ctx.fn = fn
        ctx.save_for_backward(*inputs)
        with minitorch.no_grad():
            return fn(*inputs)

    @staticmethod
    def backward(ctx, grad):
        leaves = []
        for x in ctx.saved_tensors:
            leaf = x.detach()
            if x.requires_grad:
                leaf.requires_grad_()
            leaves.append(leaf)
        with minitorch.enable_grad():
            (ctx.fn(*leaves) * grad).sum().backward()
        return tuple([None] + [leaf.grad for leaf in leaves])


def checkpoint(fn, *inputs):
    # An extra leaf that requires grad makes apply() record a node whatever the inputs;
    # backward gives it no gradient.
    anchor = minitorch.zeros(1, requires_grad=True)
    return Checkpoint.apply(lambda _, *xs: fn(*xs), anchor, *inputs)
""",
            "no_grad made explicit in forward, sum(output * grad).backward() for "
            "output.backward(grad) (the same vector-Jacobian product), and a leaf that requires "
            "grad passed along with the inputs so that a node is always recorded",
        ),
    ],
    "ex5_best_segments": [
        WrongAnswer(
            "strictly_lower_wins",
            """\
def best_segments(model, x):
    best, best_peak = 1, None
    for segments in range(1, len(model) + 1):
        model.zero_grad()
        with track() as mem:
            checkpoint_sequential(model, segments, x, use_reentrant=False).sum().backward()
        peak = mem.peak_bytes - mem.start_bytes
        if best_peak is None or peak < best_peak:
            best, best_peak = segments, peak
    model.zero_grad()
    return best
""",
            "a running best that only a strictly lower peak replaces (ties keep the fewest)",
        ),
    ],
    "ex6_step_within_budget": [
        WrongAnswer(
            "size_found_by_counting_down",
            """\
def step_within_budget(model, loss_fn, inputs, targets, budget):
    n = len(inputs)

    def one_step(x, y, weight):
        with track() as step:
            (loss_fn(model(x), y) * weight).backward()
        return step.peak_bytes

    with track() as whole:
        for p in model.parameters():
            p.grad = None
        one_step(inputs[:1], targets[:1], 1.0)
        small = one_step(inputs[:1], targets[:1], 1.0)
        growth = one_step(inputs[:2], targets[:2], 1.0) - small
        limit = whole.start_bytes + budget
        size = n
        while size > 1 and small + (size - 1) * growth > limit:
            size -= 1
        for p in model.parameters():
            p.grad = None
        for start in range(0, n, size):
            x, y = inputs[start : start + size], targets[start : start + size]
            one_step(x, y, len(x) / n)
""",
            "the largest size found by counting down from the whole batch, slices by index, "
            "gradients reset by hand",
        ),
    ],
    "ex7_truncated_bptt": [
        WrongAnswer(
            "losses_in_a_list",
            """\
def truncated_bptt(cell, xs, targets, h0, k):
    for p in cell.parameters():
        p.grad = None
    h, losses, total = h0, [], 0.0
    for t, (x, target) in enumerate(zip(xs, targets), start=1):
        h = cell(x, h)
        losses.append(((h - target) ** 2).mean())
        if len(losses) == k or t == len(xs):
            chunk = sum(losses)
            chunk.backward()
            total = total + float(chunk)
            losses = []
            h = h.detach()
    return total
""",
            "the chunk's losses kept in a list and summed with sum(); float() for item()",
        ),
        WrongAnswer(
            "chunk_by_chunk_loss_kept_until_the_next",
            """\
def truncated_bptt(cell, xs, targets, h0, k):
    cell.zero_grad()
    h, total = h0, 0.0
    for start in range(0, len(xs), k):
        for t in range(start, min(start + k, len(xs))):
            h = cell(xs[t], h)
            step_loss = ((h - targets[t]) ** 2).mean()
            loss = step_loss if t == start else loss + step_loss
        loss.backward()  # `loss` stays bound (to a freed graph) until the next chunk's first step
        total += loss.item()
        h = h.detach()
    return total
""",
            "a loop over chunks; the chunk's loss stays referenced until the next chunk's first "
            "step rebinds it: one chunk's nodes alive at a time, which does not grow",
        ),
    ],
    "ex8_half_precision_hooks": [
        WrongAnswer(
            "weakref_callback",
            """\
def half_precision_hooks():
    copies = {}

    def forget(key):
        return lambda ref: copies.pop(key, None)

    def pack(tensor):
        if tensor.is_leaf:
            return tensor
        key = id(tensor)
        if key not in copies:
            copies[key] = (weakref.ref(tensor, forget(key)), tensor.half(), tensor.dtype)
        _, half, dtype = copies[key]
        return half, dtype

    def unpack(packed):
        if isinstance(packed, tuple):
            half, dtype = packed
            return half.to(dtype)
        return packed

    return saved_tensors_hooks(pack, unpack)
""",
            "a weak reference whose callback removes the entry, packed the other way round",
        ),
        WrongAnswer(
            "state_in_an_object",
            """\
class HalfCopies:
    def __init__(self):
        self.copies = {}

    def pack(self, tensor):
        if tensor.is_leaf:
            return ("leaf", tensor)
        key = id(tensor)
        if key not in self.copies:
            self.copies[key] = ("half", tensor.half(), tensor.dtype)
            weakref.finalize(tensor, self.copies.pop, key, None)
        return self.copies[key]

    def unpack(self, packed):
        if packed[0] == "leaf":
            return packed[1]
        return packed[1].to(packed[2])


def half_precision_hooks():
    state = HalfCopies()
    return saved_tensors_hooks(state.pack, state.unpack)
""",
            "the copies live in an object whose bound methods are the hooks",
        ),
    ],
}
