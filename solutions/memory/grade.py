"""Graders of notebook 4, "memory". A hidden test cell calls one of them:

    from solutions.memory import grade
    grade.saved_bytes(saved_bytes)

Every memory figure a grader checks is measured while the student's code runs, with
minitorch's exact accounting (`minitorch.memory`: live storages, saved bytes, peaks inside a
`track()` block), and compared with the same measurement of the reference solution or of the
plain program. Gradients are compared with the reference (float64, tight tolerances). Failures
reach the student as one clean AssertionError (see solutions/grading.py). Pass `seed=` to make
the random cases reproducible.
"""

from __future__ import annotations

import functools
import gc
import random
from collections.abc import Callable
from typing import Any

import torch

import minitorch
from minitorch import memory, nn
from minitorch.utils.checkpoint import checkpoint_sequential
from solutions.grading import Failure, call_student, check_callable, expect, grader
from solutions.memory import reference

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


def _randn(gen: torch.Generator, *shape: int, dtype: torch.dtype = F64, **kw: Any) -> Any:
    return minitorch.tensor(torch.randn(*shape, generator=gen, dtype=dtype).tolist(),
                            dtype=dtype, **kw)  # fmt: skip


def _grads(params: list) -> list[torch.Tensor | None]:
    return [None if p.grad is None else torch.tensor(p.grad.tolist(), dtype=F64) for p in params]


def _check_grads(got: list, want: list, names: list[str], where: str, hint: str) -> None:
    for name, g, w in zip(names, got, want):
        expect(g is not None, f"{where}: {name}.grad is None, it should hold a gradient. {hint}")
        expect(
            torch.allclose(g, w, rtol=1e-7, atol=1e-10),
            f"{where}: {name}.grad differs from the expected gradient "
            f"(largest difference {float((g - w).abs().max()):.3g}). {hint}",
        )


def _peak(run: Callable[[], Any]) -> tuple[int, Any]:
    """(bytes allocated at the peak of `run()` on top of what was live before, its result)."""
    peak, _, result = _measure(run)
    return peak, result


def _measure(run: Callable[[], Any]) -> tuple[int, int, Any]:
    """(peak, bytes still allocated after `run()` returned, its result held; both on top of
    what was live before, exact), and the result.

    The garbage collector is off meanwhile: garbage left by earlier code cannot vanish in the
    middle, so the same program always measures the same (a full collection would also cost
    more than most measured programs)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        with memory.track() as mem:
            result = run()
    finally:
        if collecting:
            gc.enable()
    return mem.peak_bytes - mem.start_bytes, mem.end_bytes - mem.start_bytes, result


def _one_ledger(check: Callable[..., None]) -> Callable[..., None]:
    """Run a grader inside one `track()` block: the measurements inside it nest, and only the
    outermost block pays for the scan of every live object that starts minitorch's ledger."""

    @functools.wraps(check)
    def run(*args: Any, **kwargs: Any) -> None:
        with memory.track():
            check(*args, **kwargs)

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
    ]


def _saved_per_tensor(t: Any, include_parameters: bool) -> int:
    """The common mistake: each saved tensor's own bytes, shared storage counted every time."""
    total = 0
    for node in memory.graph_nodes(t):
        for _, saved in minitorch.autograd.graph.saved_tensors(node):
            if include_parameters or not (saved.is_leaf and saved.requires_grad):
                total += saved.nbytes
    return total


@grader("saved_bytes")
@_one_ledger
def saved_bytes(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 1 against minitorch.memory.saved_bytes on several models, with and
    without parameters."""
    check_callable(answer, "saved_bytes")
    for description, build in _graph_cases(seed):
        out = build()
        for include in (False, True):
            call = f"saved_bytes(out, include_parameters={include}) on {description}"
            got = call_student(answer, out, include, call=call)
            want = memory.saved_bytes(out, include_parameters=include)
            expect(isinstance(got, int), f"{call}: return an int, not {type(got).__name__}.")
            if got == want:
                continue
            if got == memory.saved_bytes(out, include_parameters=not include):
                raise Failure(
                    f"{call} returned {got:,}: that is the figure "
                    + ("without" if include else "with")
                    + " the parameters' storages. Parameters are the AccumulateGrad nodes' "
                    "variables and saved leaves that require grad; count them only when "
                    "include_parameters is True."
                )
            if got == _saved_per_tensor(out, include):
                raise Failure(
                    f"{call} returned {got:,} bytes, expected {want:,}: you count each saved "
                    "tensor's own bytes. Count storages: tensors that share one (views, the "
                    "same tensor saved twice) count once, with the storage's full size."
                )
            raise Failure(
                f"{call} returned {got:,} bytes, expected {want:,}. Visit every node reachable "
                "through next_functions and count each saved storage once."
            )


# -------------------------------------------------------------------------------------------------
# Exercise 2: train_epoch
# -------------------------------------------------------------------------------------------------
def _training_setup(seed: int, n_batches: int) -> tuple:
    model = _mlp(seed, [8, 32, 32, 1])
    optimizer = minitorch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(seed)
    batches = [(_randn(gen, 16, 8), _randn(gen, 16, 1)) for _ in range(n_batches)]
    return model, optimizer, batches, _randn(gen, 128, 8), _randn(gen, 128, 1)


@grader("train_epoch")
@_one_ledger
def train_epoch(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 2: the memory left after N batches equals that after 1 (results held),
    and the losses are the reference's."""
    check_callable(answer, "train_epoch")
    base = _seed_of(seed)
    n = 6
    held, peak = {}, {}
    for count in (1, n):
        model, optimizer, batches, x_val, y_val = _training_setup(base, count)
        call = f"train_epoch(model, optimizer, batches, x_val, y_val) on {count} batch(es)"
        arguments = (model, optimizer, batches, x_val, y_val)
        peak[count], held[count], _ = _measure(
            lambda a=arguments, c=call: call_student(answer, *a, call=c)
        )
    expect(
        peak[n] <= peak[1] + 1024,
        f"while train_epoch ran, memory peaked at {peak[1]:,} bytes on 1 batch but at "
        f"{peak[n]:,} on {n} batches: each iteration leaves something alive that the next ones "
        "add to. Suspects: keeping loss tensors (and the graphs behind them) in a list or a "
        "running total, validation with grad mode on.",
    )
    expect(
        held[n] <= held[1],
        f"after {n} batches, train_epoch (with its returned values still held) leaves "
        f"{held[n] - held[1]:,} more bytes allocated than after 1 batch: something keeps "
        "tensors or graphs alive from one iteration to the next. Suspects: adding up loss "
        "tensors, keeping the validation loss tensor, validation with grad mode on.",
    )
    model, optimizer, batches, x_val, y_val = _training_setup(base, n)
    call = f"train_epoch(model, optimizer, batches, x_val, y_val) on {n} batches"
    got = call_student(answer, model, optimizer, batches, x_val, y_val, call=call)
    model, optimizer, batches, x_val, y_val = _training_setup(base, n)
    want_mean, want_val = reference.train_epoch(model, optimizer, batches, x_val, y_val)
    expect(
        isinstance(got, tuple) and len(got) == 2,
        f"{call}: return a tuple (mean training loss, list of validation losses).",
    )
    mean, validation = got
    expect(
        type(mean) is float and isinstance(validation, list)
        and all(type(v) is float for v in validation),
        f"{call}: the losses must be Python floats (use .item()), got "
        f"{type(mean).__name__} and a {type(validation).__name__}.",
    )  # fmt: skip
    expect(len(validation) == n, f"{call}: one validation loss per batch, got {len(validation)}.")
    expect(
        abs(mean - want_mean) <= 1e-9 * max(1.0, abs(want_mean)),
        f"{call}: mean training loss {mean:.6g}, expected {want_mean:.6g}. Train as before: "
        "zero_grad, forward, backward, step, and average the batch losses.",
    )
    expect(
        all(abs(a - b) <= 1e-9 * max(1.0, abs(b)) for a, b in zip(validation, want_val)),
        f"{call}: validation losses {[round(v, 6) for v in validation]}, expected "
        f"{[round(v, 6) for v in want_val]}. Measure the validation loss after each step.",
    )


# -------------------------------------------------------------------------------------------------
# Exercise 3: evaluate
# -------------------------------------------------------------------------------------------------
@grader("evaluate")
@_one_ledger
def evaluate(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 3: the reference's value, no more peak memory than evaluating without
    a graph, nothing left behind, grad mode and .grad untouched."""
    check_callable(answer, "evaluate")
    base = _seed_of(seed)
    model = _mlp(base, [16, 64, 64, 64, 64, 64, 64, 4])
    gen = torch.Generator().manual_seed(base)
    batches = [(_randn(gen, 128, 16), _randn(gen, 128, 4)) for _ in range(3)]
    call = "evaluate(model, batches) on a 7-layer MLP"
    for mode in (True, False):
        with minitorch.set_grad_enabled(mode):
            peak, left, got = _measure(lambda: call_student(answer, model, batches, call=call))
            expect(
                minitorch.is_grad_enabled() is mode,
                f"{call} left grad mode {'off' if mode else 'on'}: use a `with` block, which "
                "puts it back as it was.",
            )
        want_peak, want = _peak(lambda: reference.evaluate(model, batches))
        expect(
            type(got) is float,
            f"{call}: return a Python float (use .item()), not {type(got).__name__}.",
        )
        expect(
            abs(got - want) <= 1e-9 * max(1.0, abs(want)),
            f"{call} returned {got:.6g}, expected {want:.6g}: the mean of the batches' mean "
            "squared errors.",
        )
        expect(
            left <= 0,
            f"{call} left {left:,} bytes allocated after it returned: keep nothing.",
        )
        expect(
            peak <= 1.1 * want_peak + 4096,
            f"{call} needed {peak:,} bytes at its peak; evaluating without recording a graph "
            f"needs {want_peak:,}. Its ops still save tensors for backward: model.eval() and "
            "detach() do not stop that, and torch.no_grad() is PyTorch's switch, not "
            "minitorch's.",
        )
        expect(
            all(p.grad is None for p in model.parameters()),
            f"{call}: some parameter got a .grad; evaluation computes no gradients.",
        )


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


def _checkpointed_step(model: nn.Sequential, x: Any, wrap: Callable | None) -> list:
    """Forward in segments (each through `wrap`), backward; returns the gradients."""
    model.zero_grad()
    x.grad = None

    def step() -> None:
        _run_segments(model, x, wrap).sum().backward()

    peak, _ = _peak(step)
    return [peak, _grads([*model.parameters(), x])]


@grader("checkpoint")
@_one_ledger
def checkpoint(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 4: identical gradients and a lower measured peak than the plain step on
    a deep MLP checkpointed in segments; two-input functions work too."""
    check_callable(answer, "checkpoint")
    base = _seed_of(seed)
    gen = torch.Generator().manual_seed(base)
    model = _deep_mlp(base, CHECKPOINT_DEPTH, 32)
    x = _randn(gen, 256, 32, requires_grad=True)
    names = [f"parameter {name}" for name, _ in model.named_parameters()] + ["the input x"]
    where = (
        f"a {CHECKPOINT_DEPTH}-block MLP run as {CHECKPOINT_DEPTH // CHECKPOINT_SEGMENT} "
        "checkpointed segments, then .sum().backward()"
    )
    plain_peak, want = _checkpointed_step(model, x, None)
    call = f"checkpoint(segment, h) in {where}"

    def student(fn: Callable, h: Any) -> Any:
        out = call_student(answer, fn, h, call=call)
        expect(
            isinstance(out, minitorch.Tensor) and out.grad_fn is not None,
            f"{call} must return a minitorch tensor with a grad_fn (got "
            f"{type(out).__name__}): apply your Function.",
        )
        return out

    try:
        peak, got = _checkpointed_step(model, x, student)
    except Failure:
        raise
    except Exception as error:  # raised by the student's backward, inside the engine
        raise Failure(f"backward through {where} raised {type(error).__name__}: {error}") from None
    hint = "Recompute fn on detached inputs under enable_grad and backward through it."
    _check_grads(got, want, names, where, hint)
    reference_peak, _ = _checkpointed_step(model, x, reference.checkpoint)
    expect(
        peak <= 0.8 * plain_peak and peak <= 1.1 * reference_peak + 4096,
        f"in {where}, the peak was {peak:,} bytes; without checkpointing it is {plain_peak:,} "
        f"and a checkpoint that keeps only each segment's input needs about "
        f"{reference_peak:,}. Your checkpoint still keeps the activations inside fn alive "
        "until backward.",
    )

    a = _randn(gen, 5, 3, requires_grad=True)
    b = _randn(gen, 5, 3, requires_grad=True)
    w = _randn(gen, 3, 3, requires_grad=True)

    def two_inputs(p: Any, q: Any) -> Any:
        return (p @ w).tanh() * q.sin()

    call = "checkpoint(fn, a, b) for fn(p, q) = (p @ w).tanh() * q.sin()"
    out = call_student(answer, two_inputs, a, b, call=call)
    try:
        (out * out).sum().backward()
    except Exception as error:
        raise Failure(f"backward after {call} raised {type(error).__name__}: {error}") from None
    got = _grads([a, b, w])
    for t in (a, b, w):
        t.grad = None
    (two_inputs(a, b) ** 2).sum().backward()
    _check_grads(got, _grads([a, b, w]), ["a", "b", "w"], call, "Return one gradient per input.")


# -------------------------------------------------------------------------------------------------
# Exercise 5: best_segments
# -------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _segment_peaks_of(seed: int, depth: int, width: int, batch: int) -> tuple[int, ...]:
    """The measured peak for every number of segments, on a fresh copy of the graded model
    (exact byte counts: the same every time, so measured once per process)."""
    model = _deep_mlp(seed, depth, width)
    x = _randn(torch.Generator().manual_seed(seed + depth), batch, width)
    return tuple(_segment_peaks(model, x))


def _segment_peaks(model: nn.Sequential, x: Any) -> list[int]:
    peaks = []
    for segments in range(1, len(model) + 1):
        model.zero_grad()
        peak, _ = _peak(
            lambda s=segments: (
                checkpoint_sequential(model, s, x, use_reentrant=False).sum().backward()
            ),
        )
        peaks.append(peak)
    model.zero_grad()
    return peaks


@grader("best_segments")
@_one_ledger
def best_segments(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 5: the chosen number of segments has the lowest measured peak."""
    check_callable(answer, "best_segments")
    base = _seed_of(seed)
    for depth, width, batch in ((8, 32, 64), (6, 48, 128)):
        model = _deep_mlp(base, depth, width)
        x = _randn(torch.Generator().manual_seed(base + depth), batch, width)
        call = f"best_segments(model, x) for {depth} Linear+Tanh blocks of width {width}"
        got = call_student(answer, model, x, call=call)
        expect(
            isinstance(got, int) and 1 <= got <= depth,
            f"{call} returned {got!r}: a number of segments from 1 to {depth}.",
        )
        peaks = _segment_peaks_of(base, depth, width, batch)
        best = min(peaks)
        table = ", ".join(f"{s}: {p / 2**20:.3f}" for s, p in enumerate(peaks, start=1))
        expect(
            peaks[got - 1] <= 1.005 * best,
            f"{call} returned {got}, whose measured peak is {peaks[got - 1]:,} bytes; the best "
            f"choice needs {best:,}. Measured peaks in MiB per number of segments: {table}. "
            "Measure the peak of forward and backward together.",
        )


# -------------------------------------------------------------------------------------------------
# Exercise 6: step_within_budget
# -------------------------------------------------------------------------------------------------
@grader("step_within_budget")
@_one_ledger
def step_within_budget(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 6: the full batch's gradients, within a budget the full batch exceeds."""
    check_callable(answer, "step_within_budget")
    base = _seed_of(seed)
    gen = torch.Generator().manual_seed(base)
    loss_fn = nn.MSELoss()
    for batch, fraction in ((97, 0.25), (61, 0.5)):
        inputs, targets = _randn(gen, batch, 16), _randn(gen, batch, 4)
        model = _mlp(base, [16, 64, 64, 4])
        names = [name for name, _ in model.named_parameters()]
        one_peak, _ = _peak(
            lambda m=model, x=inputs, y=targets: loss_fn(m(x[:1]), y[:1]).backward()
        )
        model.zero_grad()
        full_peak, _ = _peak(lambda m=model, x=inputs, y=targets: loss_fn(m(x), y).backward())
        want = _grads(list(model.parameters()))
        model.zero_grad()
        # What one sample needs, plus a fraction of what the rest of the batch adds.
        budget = one_peak + int(fraction * (full_peak - one_peak))
        call = (
            f"step_within_budget(model, loss_fn, inputs, targets, budget={budget:,}) on a "
            f"batch of {batch} (the full batch needs {full_peak:,} bytes)"
        )
        arguments = (model, loss_fn, inputs, targets, budget)
        peak, _ = _peak(lambda a=arguments, c=call: call_student(answer, *a, call=c))
        expect(
            peak <= budget,
            f"{call}: the peak was {peak:,} bytes, over the budget. Use micro-batches small "
            "enough, and keep no graph of one micro-batch alive while the next one runs.",
        )
        _check_grads(
            _grads(list(model.parameters())),
            want,
            names,
            call,
            "Start from gradients reset to None and weight each micro-batch's mean loss by "
            "its share of the batch (len(x) / len(inputs)): the last one may be smaller.",
        )


# -------------------------------------------------------------------------------------------------
# Exercise 7: truncated_bptt
# -------------------------------------------------------------------------------------------------
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


@grader("truncated_bptt")
@_one_ledger
def truncated_bptt(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 7: the reference's losses and gradients for several (length, k), and a
    peak that does not grow with the length of the sequence."""
    check_callable(answer, "truncated_bptt")
    base = _seed_of(seed)
    for steps, k in ((20, 5), (23, 5), (9, 1), (10, 10), (7, 20)):
        cell, xs, targets, h0 = _rnn_setup(base, steps)
        call = f"truncated_bptt(cell, xs, targets, h0, k={k}) on {steps} steps"
        got = call_student(answer, cell, xs, targets, h0, k, call=call)
        got_grads = _grads(list(cell.parameters()))
        cell, xs, targets, h0 = _rnn_setup(base, steps)
        want = reference.truncated_bptt(cell, xs, targets, h0, k)
        expect(type(got) is float, f"{call}: return a Python float, not {type(got).__name__}.")
        expect(
            abs(got - want) <= 1e-9 * max(1.0, abs(want)),
            f"{call} returned {got:.6g}, expected the sum of the step losses {want:.6g}.",
        )
        _check_grads(
            got_grads,
            _grads(list(cell.parameters())),
            [name for name, _ in cell.named_parameters()],
            call,
            "Gradients must flow back through the k steps of each chunk and stop at the "
            "chunk's start: backward after every k steps and after the last, detach right "
            "after each backward, and start from gradients reset to None.",
        )
    peaks = {}
    for steps in (16, 64):
        cell, xs, targets, h0 = _rnn_setup(base, steps)
        peaks[steps], _ = _peak(
            lambda c=cell, x=xs, t=targets, h=h0, s=steps: call_student(
                answer, c, x, t, h, 4, call=f"truncated_bptt(..., k=4) on {s} steps"
            )
        )
    expect(
        peaks[64] <= 1.15 * peaks[16] + 2048,
        f"with k=4, the peak was {peaks[16]:,} bytes on 16 steps but {peaks[64]:,} on 64: "
        "memory grows with the sequence. The graph of each chunk must be freed (by its "
        "backward) before the next chunk runs.",
    )


# -------------------------------------------------------------------------------------------------
# Exercise 8: half-precision saved-tensor hooks
# -------------------------------------------------------------------------------------------------
def _hooked_step(model: nn.Module, x: Any, hooks: Callable | None, call: str) -> tuple:
    """(saved bytes, bytes the graph holds, gradients) of model(x).pow(2).mean()."""
    model.zero_grad()
    context = None
    if hooks is not None:
        context = call_student(hooks, call=f"{call}()")
        expect(
            hasattr(context, "__enter__") and hasattr(context, "__exit__"),
            f"{call}() must return saved-tensor hooks (a context manager), not "
            f"{type(context).__name__}.",
        )

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
    return saved, held, _grads(list(model.parameters()))


@grader("half_precision_hooks")
@_one_ledger
def half_precision_hooks(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 8: saved bytes and the memory the graph holds at most 0.6x, gradients
    within 1e-2 (relative), on float32 and float64 MLPs."""
    check_callable(answer, "half_precision_hooks")
    base = _seed_of(seed)
    gen = torch.Generator().manual_seed(base)
    for dtype, batch in ((torch.float32, 512), (torch.float64, 128)):
        model = _mlp(base, [16, 64, 64, 64, 64, 8], dtype)
        x = _randn(gen, batch, 16, dtype=dtype)
        where = f"a {str(dtype)[6:]} MLP"
        plain_saved, plain_held, want = _hooked_step(model, x, None, "")
        saved, held, got = _hooked_step(model, x, answer, "half_precision_hooks")
        expect(
            saved <= 0.6 * plain_saved,
            f"on {where}, the graph saves {saved:,} bytes with your hooks, {plain_saved:,} "
            "without: at most 0.6x is expected. The pack hook must return only a half-precision "
            "copy (and small things such as the dtype), and one copy per tensor: the same "
            "tensor is often packed twice (one op's output, the next op's input).",
        )
        expect(
            held <= 0.6 * plain_held,
            f"on {where}, the graph keeps {held:,} bytes alive with your hooks, {plain_held:,} "
            "without: the pack hook still keeps the original tensors alive somewhere.",
        )
        for (name, param), g, w in zip(model.named_parameters(), got, want):
            expect(g is not None, f"on {where}: {name}.grad is None after backward.")
            expect(
                param.grad.dtype == dtype,
                f"on {where}: {name}.grad is {param.grad.dtype}, expected {dtype}.",
            )
            error = float((g - w).norm() / w.norm().clamp_min(1e-30))
            expect(
                error < 1e-2,
                f"on {where}: {name}.grad has relative error {error:.3g} (at most 1e-2 is "
                "expected). Unpack back to the original dtype; store float16, not less.",
            )
