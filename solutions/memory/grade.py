"""Hidden tests of notebook 4, "memory": the kernel half (NOTE [Hidden tests in two halves] in
solutions/grading.py). A hidden test cell calls one of them:

    from solutions.memory import grade
    grade.saved_bytes(saved_bytes)

Each test runs the student's answer on the grader's cases and returns what it saw as plain data:
the values returned, the gradients left in the parameters, and every memory figure measured
while the student's code ran, with minitorch's exact accounting (`minitorch.memory`: live
storages, saved bytes, peaks inside a `track()` block). solutions/memory/judge.py compares these
figures with what the same test measures on the reference answer. Problems visible without the
reference (an exception, a wrong type, grad mode left changed) fail here, with the message the
student sees. Pass `seed=` to make the random cases reproducible.

Nothing here imports the reference: in a grading sandbox it does not exist. No exercise of this
notebook uses another exercise's answer, so no stand-in is needed.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import random
import sys
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch

import minitorch
from minitorch import memory, nn
from minitorch.autograd.function import BackwardNode
from minitorch.autograd.grad_mode import _state as _minitorch_state
from solutions.grading import (
    DEFAULT_RECURSION_LIMIT,
    Failure,
    call_student,
    check_callable,
    expect,
    hidden_test,
    recursion_limit,
)

F64 = torch.float64


def _seed_of(seed: int | None) -> int:
    return random.Random(seed).randrange(2**31)


def _mlp(seed: int, widths: list[int], dtype: torch.dtype = F64) -> nn.Sequential:
    """Linear + Tanh blocks (no Tanh after the last Linear when `widths` ends with the output)."""
    minitorch.manual_seed(seed)
    layers: list[nn.Module] = []
    for n_in, n_out in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(n_in, n_out), nn.Tanh()]
    return nn.Sequential(*layers[:-1]).to(dtype)


def _deep_mlp(seed: int, depth: int, width: int, dtype: torch.dtype = F64) -> nn.Sequential:
    """`depth` blocks, each an nn.Sequential(Linear, Tanh): what checkpoint_sequential splits."""
    minitorch.manual_seed(seed)
    blocks = [nn.Sequential(nn.Linear(width, width), nn.Tanh()) for _ in range(depth)]
    return nn.Sequential(*blocks).to(dtype)


def _bottleneck_mlp(seed: int, depth: int, width: int) -> nn.Sequential:
    """`depth` blocks Linear(width, 4 width), Tanh, Linear(4 width, width): inside each block the
    activations are 4 times its input, so checkpointing single blocks pays off."""
    minitorch.manual_seed(seed)
    blocks = [
        nn.Sequential(nn.Linear(width, 4 * width), nn.Tanh(), nn.Linear(4 * width, width))
        for _ in range(depth)
    ]
    return nn.Sequential(*blocks).double()


def _randn(gen: torch.Generator, *shape: int, dtype: torch.dtype = F64, **kw: Any) -> Any:
    return minitorch.tensor(torch.randn(*shape, generator=gen, dtype=dtype).tolist(),
                            dtype=dtype, **kw)  # fmt: skip


def _grads(named: list[tuple[str, Any]]) -> dict[str, Any]:
    """Each tensor's `.grad` (None where it has none), by name, for the judge to compare."""
    return {name: None if t.grad is None else t.grad.detach() for name, t in named}


def measure_peak(run: Callable[[], Any]) -> tuple[int, Any]:
    """(bytes allocated at the peak of `run()` on top of what was live before, its result),
    measured as `_measure` does."""
    peak, _, result = _measure(run)
    return peak, result


def _measure(run: Callable[[], Any]) -> tuple[int, int, Any]:
    """(peak, bytes still allocated after `run()` returned, its result held; both on top of
    what was live before, exact), and the result.

    The garbage collector is off meanwhile: garbage left by earlier code cannot vanish in the
    middle, so the same program always measures the same (a full collection would also cost
    more than most measured programs)."""
    with _no_collection(), memory.track() as mem:
        result = run()
    return mem.peak_bytes - mem.start_bytes, mem.end_bytes - mem.start_bytes, result


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """Run the block with the garbage collector off, so that garbage left by earlier code cannot
    vanish in the middle of a measurement the student's code makes itself."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _one_ledger(observe: Callable[..., Any]) -> Callable[..., Any]:
    """Run a test inside one `track()` block: the measurements inside it nest, and only the
    outermost block pays for the scan of every live object that starts minitorch's ledger."""

    @functools.wraps(observe)
    def run(*args: Any, **kwargs: Any) -> Any:
        with memory.track():
            return observe(*args, **kwargs)

    return run


# -------------------------------------------------------------------------------------------------
# Exercise 1: saved_bytes
# -------------------------------------------------------------------------------------------------
def _graph_cases(seed: int | None) -> list[tuple[str, Callable[[], Any]]]:
    """Graphs with views, shared storage, saved parameters, detach, reuse, freed graphs."""
    base = _seed_of(seed)
    gen = torch.Generator().manual_seed(base)

    def mlp() -> Any:
        model = _mlp(base, [6, 9, 7, 3])
        return (model(_randn(gen, 5, 6)) ** 2).sum()

    def leaf_input() -> Any:
        model = _mlp(base + 1, [4, 8, 2])
        return model(_randn(gen, 3, 4, requires_grad=True)).sigmoid().sum()

    def parameter_view() -> Any:
        w = _randn(gen, 6, 4, requires_grad=True)
        x2 = _randn(gen, 8, 4, requires_grad=True) * 2
        return (x2 @ w.t()).exp().sum()  # the matmul saves w.t(), a view of the parameter

    def shared_storage() -> Any:
        w = _randn(gen, 5, 4, requires_grad=True)
        h = _randn(gen, 7, 5) @ w
        return (h * h).sum() + (h[0].exp() * h[1].sin()).sum() + (h.t() * 3).tanh().sum()

    def detached() -> Any:
        w = _randn(gen, 4, 4, requires_grad=True)
        h = (_randn(gen, 6, 4) @ w).tanh()
        return (h.detach().exp() * h).sum() + (h.detach() @ w).sigmoid().sum()

    def rnn() -> Any:
        minitorch.manual_seed(base + 2)
        cell = nn.RNNCell(3, 5).double()
        h = _randn(gen, 2, 5)
        xs = _randn(gen, 6, 2, 3)
        for t in range(6):
            h = cell(xs[t], h)
        return h.pow(2).mean()

    def after_backward() -> Any:
        loss = mlp()
        loss.backward()
        return loss

    def leaf() -> Any:
        return _randn(gen, 3, requires_grad=True)

    rng = random.Random(seed)

    def random_chain() -> Any:
        params = [_randn(gen, 4, 4, requires_grad=True) for _ in range(3)]
        values = [_randn(gen, 4, 4) @ params[0]]
        for _ in range(rng.randint(6, 14)):
            a = rng.choice(values[-3:])
            op = rng.randrange(6)
            if op == 0:
                values.append(a @ rng.choice(params))
            elif op == 1:
                values.append(a.t().sin())
            elif op == 2:
                values.append(a * rng.choice(values))
            elif op == 3:
                values.append(a[1:].exp().sum(0, keepdim=True).expand(4, 4) + a)
            elif op == 4:
                values.append(a.reshape(2, 8).tanh().reshape(4, 4))
            else:
                values.append(a.relu() * rng.choice(params))
        return values[-1].sum() + values[-2].mean()

    def deep_chain() -> Any:
        w = _randn(gen, 4, requires_grad=True)
        h = _randn(gen, 3, 4) * w
        for _ in range(DEEP_CHAIN_LENGTH):
            h = h.sin()
        return h.sum()

    def reuse() -> Any:
        h = _randn(gen, 4, 4, requires_grad=True) * 0.5
        for _ in range(REUSE_DEPTH):
            h = h * h  # both inputs are h: two paths from here to every node below
        return h.sum()

    return [
        ("a 3-layer MLP", mlp),
        ("an MLP whose input requires grad", leaf_input),
        ("a matmul that saves a view of a parameter", parameter_view),
        ("ops that save the same tensor twice and views of one tensor", shared_storage),
        ("a graph with detach() in it", detached),
        ("an RNN cell unrolled over 6 steps", rnn),
        ("a graph after backward()", after_backward),
        ("a leaf (no grad_fn)", leaf),
        ("a random graph of views, reuse and parameters", random_chain),
        ("another random graph", random_chain),
        # Last: a recursive walk or one without a set of seen nodes fails here, and what went
        # wrong on the graphs above says more.
        (f"a chain of {DEEP_CHAIN_LENGTH:,} ops", deep_chain),
        (f"h = h * h repeated {REUSE_DEPTH} times (2**{REUSE_DEPTH} paths)", reuse),
    ]


DEEP_CHAIN_LENGTH = 5_000  # deeper than Python's default recursion limit (1,000 frames)
REUSE_DEPTH = 40  # a walk that visits a node once per path would visit 2**40 nodes
EDGE_READS_PER_NODE = 4  # a walk reads each node's next_functions once; some walks twice


class WalkTooLong(BaseException):
    """Raised inside the student's walk once it has read more edges than a walk that visits
    each node once could (a BaseException: an `except Exception` in the walk does not hide it)."""


@contextlib.contextmanager
def counted_walk(out: Any, call: str) -> Iterator[None]:
    """Count how often the block reads the `next_functions` of the nodes behind `out` (iterating
    them, or indexing one entry), and stop it with a Failure once the reads exceed
    EDGE_READS_PER_NODE times the graph's nodes and edges: a walk that visits a node once per
    path (no set of seen nodes) is stopped after a few hundred reads, never timed. The nodes get
    their own `next_functions` back afterwards."""
    nodes = memory.graph_nodes(out)
    edges = sum(len(node.next_functions) for node in nodes)
    budget = EDGE_READS_PER_NODE * (len(nodes) + edges) + 64
    reads = [0]

    class Edges(tuple):
        __slots__ = ()

        def __iter__(self) -> Iterator:
            _read()
            return tuple.__iter__(self)

        def __getitem__(self, index: Any) -> Any:
            _read()
            return tuple.__getitem__(self, index)

    def _read() -> None:
        reads[0] += 1
        if reads[0] > budget:
            raise WalkTooLong

    originals = [(node, node.__dict__.get("next_functions")) for node in nodes]
    for node in nodes:
        node.next_functions = Edges(node.next_functions)
    try:
        yield
    except WalkTooLong:
        raise Failure(
            f"{call} read the next_functions of this graph's {len(nodes):,} nodes more than "
            f"{budget:,} times before it was stopped: your walk visits a node once for every "
            "path that reaches it, and a graph with reuse has exponentially many paths. "
            "Remember the nodes you have seen in a set, and visit each node once."
        ) from None
    finally:
        for node, original in originals:
            if original is None:
                del node.next_functions  # back to the class's ()
            else:
                node.next_functions = original


def _saved_per_tensor(t: Any, include_parameters: bool) -> int:
    """The common mistake: each saved tensor's own bytes, shared storage counted every time."""
    total = 0
    for node in memory.graph_nodes(t):
        for _, saved in minitorch.autograd.graph.saved_tensors(node):
            if include_parameters or not (saved.is_leaf and saved.requires_grad):
                total += saved.nbytes
    return total


def saved_bytes_call(description: str, include: bool) -> str:
    """How exercise 1's messages name one call (also the key of its figure)."""
    return f"saved_bytes(out, include_parameters={include}) on {description}"


@hidden_test("saved_bytes")
@_one_ledger
def saved_bytes(answer: Any, seed: int | None = None) -> dict:
    """Exercise 1: the student's figure for every graph, with and without parameters, and each
    graph's figure if every saved tensor counted its own bytes (the classic mistake, named in
    the feedback)."""
    check_callable(answer, "saved_bytes")
    figures, per_tensor = {}, {}
    for description, build in _graph_cases(seed):
        out = build()
        for include in (False, True):
            call = saved_bytes_call(description, include)
            with counted_walk(out, call), recursion_limit(DEFAULT_RECURSION_LIMIT):
                limit = sys.getrecursionlimit()
                got = call_student(answer, out, include, call=call)
                expect(
                    sys.getrecursionlimit() == limit,
                    f"{call} changed Python's recursion limit. Graphs can be deeper than any "
                    "limit: walk them with a list of nodes still to visit, not recursion.",
                )
            expect(
                isinstance(got, int) and not isinstance(got, bool),
                f"{call}: return an int, not {type(got).__name__}.",
            )
            figures[call] = int(got)
            per_tensor[call] = _saved_per_tensor(out, include)
    return {"figures": figures, "each saved tensor's own bytes": per_tensor}


# -------------------------------------------------------------------------------------------------
# Exercise 2: train_epoch
# -------------------------------------------------------------------------------------------------
TRAIN_BATCHES = 6
# The run whose losses are compared: the last batch is smaller, so that the mean of the batch
# losses differs from the mean over all samples.
UNEQUAL_BATCHES = [16] * (TRAIN_BATCHES - 1) + [7]


def _training_setup(seed: int, sizes: list[int]) -> tuple:
    model = _mlp(seed, [8, 32, 32, 1])
    optimizer = minitorch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(seed)
    batches = [(_randn(gen, n, 8), _randn(gen, n, 1)) for n in sizes]
    return model, optimizer, batches, _randn(gen, 128, 8), _randn(gen, 128, 1)


def _live_graph_nodes() -> int:
    """How many backward nodes exist now (ops' nodes; AccumulateGrad nodes are not counted)."""
    return sum(1 for obj in gc.get_objects() if issubclass(type(obj), BackwardNode))


@hidden_test("train_epoch")
@_one_ledger
def train_epoch(answer: Any, seed: int | None = None) -> dict:
    """Exercise 2: peak and memory left (results held) on 1 and on TRAIN_BATCHES batches; the
    graph nodes alive at the first and the last optimizer step; the losses returned, on
    batches of unequal sizes."""
    check_callable(answer, "train_epoch")
    base = _seed_of(seed)
    call = "train_epoch(model, optimizer, batches, x_val, y_val) on {} batch(es)"
    data: dict[str, Any] = {}
    for count in (1, TRAIN_BATCHES):
        arguments, where = _training_setup(base, [16] * count), call.format(count)
        peak, held, _ = _measure(lambda a=arguments, c=where: call_student(answer, *a, call=c))
        data[f"peak on {count} batch(es)"] = peak
        data[f"held on {count} batch(es)"] = held

    model, optimizer, batches, x_val, y_val = _training_setup(base, UNEQUAL_BATCHES)
    call = call.format(TRAIN_BATCHES) + f" of {', '.join(map(str, UNEQUAL_BATCHES))} samples"
    nodes, steps = [], []
    step = optimizer.step

    def counting_step(*args: Any, **kwargs: Any) -> Any:
        steps.append(len(steps) + 1)
        if len(steps) in (1, TRAIN_BATCHES):  # a count scans every object: only these two
            nodes.append(_live_graph_nodes())
        return step(*args, **kwargs)

    optimizer.step = counting_step
    got = call_student(answer, model, optimizer, batches, x_val, y_val, call=call)
    expect(
        isinstance(got, tuple) and len(got) == 2,
        f"{call}: return a tuple (mean training loss, list of validation losses).",
    )
    mean, validation = got
    floats = isinstance(validation, list) and all(type(v) is float for v in validation)
    expect(
        len(steps) == TRAIN_BATCHES,
        f"{call} called the optimizer's step() {len(steps)} times: once per batch is expected.",
    )
    data["call"] = call
    data["graph nodes alive at the last optimizer.step(), more than at the first"] = (
        nodes[-1] - nodes[0]
    )
    # Types are judged after memory: a leak is the more useful thing to hear about.
    data["types returned"] = {
        "mean training loss": type(mean).__name__,
        "validation losses": type(validation).__name__,
        "each validation loss": sorted({type(v).__name__ for v in validation})
        if isinstance(validation, (list, tuple))
        else [],
    }
    data["mean training loss"] = mean if type(mean) is float else None
    data["validation losses"] = validation if floats else None
    return data


# -------------------------------------------------------------------------------------------------
# Exercise 3: evaluate
# -------------------------------------------------------------------------------------------------
EVALUATE_BATCHES = (128, 128, 37)  # the last batch is smaller: each batch counts once


@hidden_test("evaluate")
@_one_ledger
def evaluate(answer: Any, seed: int | None = None) -> dict:
    """Exercise 3, with grad mode on and off: the value, the peak, what is left allocated, and
    whether a parameter got a .grad; grad mode must be as it was (checked here)."""
    check_callable(answer, "evaluate")
    base = _seed_of(seed)
    model = _mlp(base, [16, 64, 64, 64, 64, 64, 64, 4])
    gen = torch.Generator().manual_seed(base)
    batches = [(_randn(gen, n, 16), _randn(gen, n, 4)) for n in EVALUATE_BATCHES]
    sizes = ", ".join(map(str, EVALUATE_BATCHES))
    call = f"evaluate(model, batches) on a 7-layer MLP, batches of {sizes} samples"
    data: dict[str, Any] = {"call": call}
    for mode in (True, False):
        with minitorch.set_grad_enabled(mode):
            peak, left, got = _measure(lambda: call_student(answer, model, batches, call=call))
            expect(
                minitorch.is_grad_enabled() is mode,
                f"{call} left grad mode {'off' if mode else 'on'}: use a `with` block, which "
                "puts it back as it was.",
            )
        expect(
            type(got) is float,
            f"{call}: return a Python float (use .item()), not {type(got).__name__}.",
        )
        data[f"grad mode {'on' if mode else 'off'}"] = {
            "value": got,
            "peak": peak,
            "left": left,
            "parameters with a .grad": sum(p.grad is not None for p in model.parameters()),
        }
    return data


# -------------------------------------------------------------------------------------------------
# Exercise 4: checkpoint
# -------------------------------------------------------------------------------------------------
CHECKPOINT_DEPTH, CHECKPOINT_SEGMENT = 16, 4


def _run_segments(model: nn.Sequential, x: Any, wrap: Callable | None) -> Any:
    blocks = list(model)
    h = x
    for start in range(0, len(blocks), CHECKPOINT_SEGMENT):
        segment = nn.Sequential(*blocks[start : start + CHECKPOINT_SEGMENT])
        h = segment(h) if wrap is None else wrap(segment, h)
    return h


def _checkpointed_step(model: nn.Sequential, x: Any, wrap: Callable | None) -> dict:
    """Forward in segments (each through `wrap`), backward: the peak and the gradients."""
    model.zero_grad()
    x.grad = None

    def step() -> None:
        _run_segments(model, x, wrap).sum().backward()

    peak, _ = measure_peak(step)
    named = [(f"parameter {name}", p) for name, p in model.named_parameters()]
    return {"peak": peak, "gradients": _grads([*named, ("the input x", x)])}


CHECKPOINT_WHERE = (
    f"a {CHECKPOINT_DEPTH}-block MLP run as {CHECKPOINT_DEPTH // CHECKPOINT_SEGMENT} "
    "checkpointed segments, then .sum().backward()"
)
TWO_INPUTS = "checkpoint(fn, a, b) for fn(p, q) = (p @ w).tanh() * q.sin()"


@hidden_test("checkpoint")
@_one_ledger
def checkpoint(answer: Any, seed: int | None = None) -> dict:
    """Exercise 4: the peak and the gradients of a deep MLP run as checkpointed segments, and of
    the same step without checkpointing; the gradients when the input is data that does not
    require grad (the reentrant trap); the gradients of a two-input function."""
    check_callable(answer, "checkpoint")
    base = _seed_of(seed)
    gen = torch.Generator().manual_seed(base)
    model = _deep_mlp(base, CHECKPOINT_DEPTH, 32)
    x = _randn(gen, 256, 32, requires_grad=True)
    plain = _checkpointed_step(model, x, None)
    call = f"checkpoint(segment, h) in {CHECKPOINT_WHERE}"

    def student(fn: Callable, h: Any) -> Any:
        out = call_student(answer, fn, h, call=call)
        expect(
            isinstance(out, minitorch.Tensor) and out.grad_fn is not None,
            f"{call} must return a minitorch tensor with a grad_fn (got "
            f"{type(out).__name__}): apply your Function.",
        )
        return out

    try:
        checkpointed = _checkpointed_step(model, x, student)
    except Failure:
        raise
    except Exception as error:  # raised by the student's backward, inside the engine
        raise Failure(
            f"backward through {CHECKPOINT_WHERE} raised {type(error).__name__}: {error}"
        ) from None

    data_call = f"{call}, on data that does not require grad"

    def on_data(fn: Callable, h: Any) -> Any:
        out = call_student(answer, fn, h, call=data_call)
        expect(
            isinstance(out, minitorch.Tensor) and out.grad_fn is not None,
            f"{data_call}: the result has no grad_fn, so the segment's parameters get no "
            "gradient. A Function records a node only if one of its inputs requires grad (the "
            "trap of PyTorch's reentrant checkpoint): when none does, apply it to copies that "
            "do, x.detach().requires_grad_().",
        )
        return out

    try:
        on_data_step = _checkpointed_step(model, x.detach(), on_data)
    except Failure:
        raise
    except Exception as error:
        raise Failure(
            f"backward after {data_call} raised {type(error).__name__}: {error}"
        ) from None

    a = _randn(gen, 5, 3, requires_grad=True)
    b = _randn(gen, 5, 3, requires_grad=True)
    w = _randn(gen, 3, 3, requires_grad=True)

    def two_inputs(p: Any, q: Any) -> Any:
        return (p @ w).tanh() * q.sin()

    out = call_student(answer, two_inputs, a, b, call=TWO_INPUTS)
    try:
        (out * out).sum().backward()
    except Exception as error:
        raise Failure(
            f"backward after {TWO_INPUTS} raised {type(error).__name__}: {error}"
        ) from None
    got = _grads([("a", a), ("b", b), ("w", w)])
    for t in (a, b, w):
        t.grad = None
    (two_inputs(a, b) ** 2).sum().backward()
    return {
        "plain step": plain,
        "checkpointed step": checkpointed,
        "checkpointed step on data": on_data_step,
        "two inputs": {"gradients": got, "plain gradients": _grads([("a", a), ("b", b), ("w", w)])},
    }


# -------------------------------------------------------------------------------------------------
# Exercise 5: best_segments
# -------------------------------------------------------------------------------------------------
# (kind, depth, width, batch): the best number of segments is 4, 3, len(model) (4), a tie
# between 4 and 5, and 1 (every choice ties); the judge measures every choice itself.
SEGMENT_CASES = (
    ("Linear+Tanh", 8, 32, 64),
    ("Linear+Tanh", 6, 48, 128),
    ("bottleneck", 4, 16, 64),
    ("bottleneck", 5, 16, 64),
    ("Linear+Tanh", 3, 16, 16),
)


def segment_case(seed: int, kind: str, depth: int, width: int, batch: int) -> tuple[Any, Any]:
    """The model and the input of one case of exercise 5."""
    if kind == "bottleneck":
        model = _bottleneck_mlp(seed, depth, width)
    else:
        model = _deep_mlp(seed, depth, width)
    return model, _randn(torch.Generator().manual_seed(seed + depth), batch, width)


def segment_call(kind: str, depth: int, width: int, batch: int) -> str:
    """How exercise 5's messages name one case (also its key)."""
    blocks = "Linear+Tanh blocks" if kind == "Linear+Tanh" else "Linear-Tanh-Linear blocks"
    return f"best_segments(model, x) for {depth} {blocks} of width {width}, batch {batch}"


@hidden_test("best_segments")
@_one_ledger
def best_segments(answer: Any, seed: int | None = None) -> dict:
    """Exercise 5: the number of segments chosen for every case (the judge measures the peak of
    every choice)."""
    check_callable(answer, "best_segments")
    base = _seed_of(seed)
    choices = {}
    for case in SEGMENT_CASES:
        model, x = segment_case(base, *case)
        call = segment_call(*case)
        with _no_collection():
            got = call_student(answer, model, x, call=call)
        depth = case[1]
        expect(
            isinstance(got, int) and not isinstance(got, bool) and 1 <= got <= depth,
            f"{call} returned {got!r}: a number of segments from 1 to {depth}.",
        )
        choices[call] = int(got)
    return choices


# -------------------------------------------------------------------------------------------------
# Exercise 6: step_within_budget
# -------------------------------------------------------------------------------------------------
@hidden_test("step_within_budget")
@_one_ledger
def step_within_budget(answer: Any, seed: int | None = None) -> dict:
    """Exercise 6: for two batches, the budget (a fraction of what the full batch adds to one
    sample's peak), the peak of the student's call, its gradients and the full batch's."""
    check_callable(answer, "step_within_budget")
    base = _seed_of(seed)
    gen = torch.Generator().manual_seed(base)
    loss_fn = nn.MSELoss()
    data = {}
    for batch, fraction in ((97, 0.25), (61, 0.5)):
        inputs, targets = _randn(gen, batch, 16), _randn(gen, batch, 4)
        model = _mlp(base, [16, 64, 64, 4])
        named = list(model.named_parameters())
        one_peak, _ = measure_peak(
            lambda m=model, x=inputs, y=targets: loss_fn(m(x[:1]), y[:1]).backward()
        )
        model.zero_grad()
        full_peak, _ = measure_peak(
            lambda m=model, x=inputs, y=targets: loss_fn(m(x), y).backward()
        )
        want = _grads(named)
        model.zero_grad()
        # What one sample needs, plus a fraction of what the rest of the batch adds.
        budget = one_peak + int(fraction * (full_peak - one_peak))
        call = (
            f"step_within_budget(model, loss_fn, inputs, targets, budget={budget:,}) on a "
            f"batch of {batch} (the full batch needs {full_peak:,} bytes)"
        )
        arguments = (model, loss_fn, inputs, targets, budget)
        peak, _ = measure_peak(lambda a=arguments, c=call: call_student(answer, *a, call=c))
        data[f"a batch of {batch}, budget {fraction} of the way"] = {
            "call": call,
            "budget": budget,
            "peak": peak,
            "gradients": _grads(named),
            "full batch's gradients": want,
        }
    return data


# -------------------------------------------------------------------------------------------------
# Exercise 7: truncated_bptt
# -------------------------------------------------------------------------------------------------
BPTT_CASES = ((20, 5), (23, 5), (9, 1), (10, 10), (7, 20))  # (steps, k)
BPTT_PEAK_STEPS = (16, 64)


def _rnn_setup(seed: int, steps: int) -> tuple:
    minitorch.manual_seed(seed)
    cell = nn.RNNCell(4, 16).double()
    gen = torch.Generator().manual_seed(seed)
    return (
        cell,
        _randn(gen, steps, 8, 4),
        _randn(gen, steps, 8, 16),
        minitorch.zeros(8, 16, dtype=F64),
    )


BPTT_NODES_STEPS, BPTT_NODES_K = 24, 4
BPTT_NODES_CALL = (
    f"truncated_bptt(cell, xs, targets, h0, k={BPTT_NODES_K}) on {BPTT_NODES_STEPS} steps, "
    "graph nodes counted"
)
BPTT_NODES = "graph nodes alive when the last chunk starts, more than when the second starts"


def _bptt_nodes(answer: Callable) -> int:
    """How many more graph nodes are alive when the cell is called for the last chunk's first
    step than for the second chunk's: 0 when each chunk's graph dies with its backward, a chunk's
    nodes more per chunk when something (a running total of loss tensors) keeps them reachable.
    The peak does not show it: backward frees the saved tensors, not the nodes."""
    cell, xs, targets, h0 = _rnn_setup(_seed_of(0), BPTT_NODES_STEPS)
    chunk_starts = {BPTT_NODES_K, BPTT_NODES_STEPS - BPTT_NODES_K}  # steps counted from 0
    calls, counts = [0], []

    def count(module: Any, args: Any) -> None:
        if calls[0] in chunk_starts:  # a count scans every object: only these two
            gc.collect()
            counts.append(_live_graph_nodes())
        calls[0] += 1

    handle = cell.register_forward_pre_hook(count)
    try:
        call_student(answer, cell, xs, targets, h0, BPTT_NODES_K, call=BPTT_NODES_CALL)
    finally:
        handle.remove()
    expect(
        len(counts) == 2,
        f"{BPTT_NODES_CALL} called the cell {calls[0]} times: once per step is expected.",
    )
    return counts[1] - counts[0]


@hidden_test("truncated_bptt")
@_one_ledger
def truncated_bptt(answer: Any, seed: int | None = None) -> dict:
    """Exercise 7: the loss returned and the gradients left for several (length, k), and the
    peak on a short and a long sequence with k=4."""
    check_callable(answer, "truncated_bptt")
    base = _seed_of(seed)
    runs = {}
    for steps, k in BPTT_CASES:
        cell, xs, targets, h0 = _rnn_setup(base, steps)
        call = f"truncated_bptt(cell, xs, targets, h0, k={k}) on {steps} steps"
        got = call_student(answer, cell, xs, targets, h0, k, call=call)
        expect(type(got) is float, f"{call}: return a Python float, not {type(got).__name__}.")
        runs[call] = {"loss": got, "gradients": _grads(list(cell.named_parameters()))}
    peaks = {}
    for steps in BPTT_PEAK_STEPS:
        cell, xs, targets, h0 = _rnn_setup(base, steps)
        peaks[str(steps)], _ = measure_peak(
            lambda c=cell, x=xs, t=targets, h=h0, s=steps: call_student(
                answer, c, x, t, h, 4, call=f"truncated_bptt(..., k=4) on {s} steps"
            )
        )
    nodes = _bptt_nodes(answer)  # last: the peak says more about a graph kept whole
    return {"runs": runs, "peak with k=4 on this many steps": peaks, BPTT_NODES: nodes}


# -------------------------------------------------------------------------------------------------
# Exercise 8: half-precision saved-tensor hooks
# -------------------------------------------------------------------------------------------------
HOOK_STEPS = 4  # training steps with the same hooks


def _installed_hooks(context: Any, call: str) -> tuple[Callable, Callable]:
    """The (pack, unpack) pair that the student's context manager installs."""
    expect(
        hasattr(context, "__enter__") and hasattr(context, "__exit__"),
        f"{call}() must return saved-tensor hooks (a context manager), not "
        f"{type(context).__name__}.",
    )
    before = len(_minitorch_state.saved_tensors_hooks)
    with context:
        installed = _minitorch_state.saved_tensors_hooks
        expect(
            len(installed) > before,
            f"inside {call}() no saved-tensor hooks are installed: return "
            "saved_tensors_hooks(pack, unpack).",
        )
        return installed[-1]


def _hooked_step(model: nn.Module, x: Any, hooks: Callable | None, call: str) -> dict:
    """Saved bytes, bytes the graph holds, and gradients (with their dtypes) of
    model(x).pow(2).mean(), recorded under the hooks that `hooks()` returns (none if None)."""
    model.zero_grad()
    context = None
    if hooks is not None:
        context = call_student(hooks, call=f"{call}()")
        _installed_hooks(context, call)

    def forward() -> Any:
        if context is None:
            return model(x).pow(2).mean()
        with context:
            return call_student(lambda: model(x).pow(2).mean(), call=f"the forward under {call}()")

    _, held, loss = _measure(forward)
    saved = memory.saved_bytes(loss)
    try:
        loss.backward()
    except Exception as error:
        raise Failure(
            f"backward through a graph recorded under {call}() raised "
            f"{type(error).__name__}: {error}. The unpack hook must give back a tensor of the "
            "original dtype."
        ) from None
    named = list(model.named_parameters())
    return {
        "saved": saved,
        "held": held,
        "gradients": _grads(named),
        "gradient dtypes": {
            name: None if p.grad is None else str(p.grad.dtype).replace("torch.", "")
            for name, p in named
        },
    }


def _pack_behaviour(pack: Callable, unpack: Callable, call: str) -> dict:
    """What the student's pack does with a leaf and with another tensor (called as backward's
    engine calls it: with grad mode off): the bytes it allocates, whether packing the same
    tensor again copies again, whether the original stays alive, what unpack gives back."""
    gen = torch.Generator().manual_seed(0)
    leaf = _randn(gen, 64, 16, requires_grad=True)
    with memory.track() as mem, minitorch.no_grad():
        packed_leaf = call_student(pack, leaf, call=f"pack(a leaf) of {call}()")
    leaf_bytes = mem.end_bytes - mem.start_bytes
    with minitorch.no_grad():
        back = call_student(unpack, packed_leaf, call=f"unpack(pack(a leaf)) of {call}()")
    leaf_back = (
        isinstance(back, minitorch.Tensor)
        and back.untyped_storage().data_ptr() == leaf.untyped_storage().data_ptr()
    )
    del packed_leaf, back

    base = _randn(gen, 64, 16, requires_grad=True)
    with memory.track() as mem:
        tensor = (base * 2).tanh()  # not a leaf: it has a grad_fn, as a saved activation has
        values = tensor.detach().clone()
        with memory.track() as first, minitorch.no_grad():
            packed = call_student(pack, tensor, call=f"pack(a float64 tensor) of {call}()")
        with memory.track() as again, minitorch.no_grad():
            packed_again = call_student(pack, tensor, call=f"pack(the same tensor) of {call}()")
        del tensor
        gc.collect()
    kept = mem.end_bytes - mem.start_bytes - values.nbytes
    with minitorch.no_grad():
        back = call_student(unpack, packed, call=f"unpack(pack(a float64 tensor)) of {call}()")
    same_shape = isinstance(back, minitorch.Tensor) and tuple(back.shape) == tuple(values.shape)
    error = float((back.double() - values).abs().max()) if same_shape else None
    del packed, packed_again
    return {
        "bytes a leaf's pack allocates": leaf_bytes,
        "unpack(pack(leaf)) is the leaf's storage": leaf_back,
        "bytes of the float64 tensor": values.nbytes,
        "bytes its first pack allocates": first.end_bytes - first.start_bytes,
        "bytes packing it again allocates": again.end_bytes - again.start_bytes,
        "bytes the packed values keep once the tensor is gone": kept,
        "dtype unpack gives back": str(back.dtype).replace("torch.", "") if same_shape else None,
        "largest error of the unpacked values": error,
    }


_NOT_FOLLOWED = (type, types.ModuleType, types.CodeType, weakref.ReferenceType, weakref.ProxyType)


def _hook_state(roots: tuple) -> tuple[int, int]:
    """What the hook functions `roots` keep alive: (bytes of the tensor storages, number of other
    objects) reachable through closures, bound methods, partials, containers and instance
    attributes; weak references, classes, modules and the functions' globals are not followed.
    """
    tensors, seen, objects = [], set(), 0
    stack = list(roots)
    while stack and objects < 200_000:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (minitorch.Tensor, torch.Tensor)):
            tensors.append(obj)
            continue
        objects += 1
        if isinstance(obj, _NOT_FOLLOWED):
            continue
        if isinstance(obj, types.FunctionType):
            stack += [obj.__closure__, obj.__defaults__, obj.__kwdefaults__]
        elif isinstance(obj, types.CellType):
            try:
                stack.append(obj.cell_contents)
            except ValueError:  # an empty cell
                pass
        elif isinstance(obj, types.MethodType):
            stack += [obj.__self__, obj.__func__]
        elif isinstance(obj, types.BuiltinMethodType):  # e.g. a dict's bound `pop`
            stack.append(obj.__self__)
        elif isinstance(obj, functools.partial):
            stack += [obj.func, obj.args, obj.keywords]
        elif isinstance(obj, dict):
            stack += [*obj.keys(), *obj.values()]
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack += list(obj)
        elif hasattr(obj, "__dict__") and not callable(getattr(obj, "__get__", None)):
            stack.append(vars(obj))
    return memory.storage_bytes(tensors), objects


def _repeated_steps(answer: Callable, model: nn.Module, inputs: list, call: str) -> dict:
    """Training steps with one `answer()` reused: after the first and after the last (its graph
    gone, garbage collected), the bytes allocated since the first step began and what the hooks
    hold."""
    context = call_student(answer, call=f"{call}()")
    pack, unpack = _installed_hooks(context, call)
    left, state_bytes, state_objects = [], [], []
    with memory.track() as mem:
        for step, x in enumerate(inputs, start=1):
            model.zero_grad()
            with context:
                loss = call_student(
                    lambda x=x: model(x).pow(2).mean(),
                    call=f"the forward of step {step} under {call}()",
                )
            call_student(loss.backward, call=f"the backward of step {step} under {call}()")
            del loss
            if step not in (1, len(inputs)):
                continue
            gc.collect()  # a full collection costs much: only where the figures are compared
            left.append(mem.current_bytes - mem.start_bytes)
            nbytes, objects = _hook_state((pack, unpack))
            state_bytes.append(nbytes)
            state_objects.append(objects)
    return {
        "bytes allocated after the first and the last step": left,
        "tensor bytes the hooks hold after the first and the last step": state_bytes,
        "objects the hooks hold after the first and the last step": state_objects,
    }


@hidden_test("half_precision_hooks")
@_one_ledger
def half_precision_hooks(answer: Any, seed: int | None = None) -> dict:
    """Exercise 8: on float32 and float64 MLPs, saved bytes, bytes held and gradients with and
    without the student's hooks; what pack does with a leaf and with another tensor; what the
    hooks keep over several training steps."""
    check_callable(answer, "half_precision_hooks")
    base = _seed_of(seed)
    gen = torch.Generator().manual_seed(base)
    call = "half_precision_hooks"
    data: dict[str, Any] = {}
    for dtype, batch in ((torch.float32, 512), (torch.float64, 128)):
        model = _mlp(base, [16, 64, 64, 64, 64, 8], dtype)
        x = _randn(gen, batch, 16, dtype=dtype)
        data[f"a {str(dtype)[6:]} MLP"] = {
            "without hooks": _hooked_step(model, x, None, ""),
            "with your hooks": _hooked_step(model, x, answer, call),
        }
    context = call_student(answer, call=f"{call}()")
    data["pack and unpack called directly"] = _pack_behaviour(
        *_installed_hooks(context, call), call
    )
    model = _mlp(base, [16, 64, 64, 8])
    # New inputs at every step, all kept alive: the tensors of a step do not reuse the
    # addresses (ids) of the previous step's, as in a real training loop.
    inputs = [_randn(gen, 128, 16) for _ in range(HOOK_STEPS)]
    data[f"{HOOK_STEPS} training steps with one {call}()"] = _repeated_steps(
        answer, model, inputs, call
    )
    return data
