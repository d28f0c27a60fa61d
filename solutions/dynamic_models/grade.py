"""Hidden tests of notebook 3, "dynamic_models": the kernel half. A hidden test cell calls one:

    from solutions.dynamic_models import grade
    grade.depth_net(DepthNet)

Each test runs the student's answer on the grader's cases and returns what it saw as plain data;
solutions/dynamic_models/judge.py compares that with what the same test sees of the reference
answer (NOTE [Hidden tests in two halves] in solutions/grading.py). Nothing here imports the
reference: in a grading sandbox it does not exist.

The students' models are minitorch modules, so both halves see them the same way: the test builds
the model, records its parameters' names and shapes, makes it float64 and fills every parameter
with values drawn from the test's seed and the parameter's NAME (`fill_parameters`). The
reference, built with the same arguments, gets the same values under the same names, so outputs
and gradients can be compared as numbers; a wrong name or shape is reported first. Gradients
cross as one number per parameter (`gradients`). Costs (how many rows each branch processed, how
many operations a function records) are counted with minitorch's forward record. Pass `seed=` to
draw other random cases (the tests do).
"""

from __future__ import annotations

import functools
import random
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import torch

import minitorch
from minitorch.autograd.record import Alias, Const, Creation, Op, Pack, Program, Recorder, Write
from minitorch.datasets import (
    DataLoader,
    ExprTree,
    make_expression_trees,
    make_sequences,
    make_spirals,
    pad_collate,
)
from solutions.grading import (
    FAILURE_KEY,
    LIBRARIES,
    Failure,
    call_student,
    check_callable,
    expect,
    hidden_test,
    lib_name,
    predictions_for,
)
from solutions.reference_cells import given


# -------------------------------------------------------------------------------------------------
# Models: build, fill by parameter name, observe
# -------------------------------------------------------------------------------------------------
def _data(t: Any) -> torch.Tensor:
    """The values of a PyTorch or minitorch tensor as a PyTorch float64 tensor."""
    return torch.as_tensor(t.detach().tolist(), dtype=torch.float64)


def _mini(values: torch.Tensor, requires_grad: bool = False) -> minitorch.Tensor:
    return minitorch.tensor(values.tolist(), dtype=minitorch.float64, requires_grad=requires_grad)


def seeded_values(seed: int | str, name: str, shape: Sequence[int], scale: float) -> torch.Tensor:
    """Values uniform in [-scale, scale] of `shape`, a function of `seed` and `name` only."""
    gen = torch.Generator().manual_seed(zlib.crc32(f"{seed}/{name}".encode()))
    return (torch.rand(tuple(shape), generator=gen, dtype=torch.float64) * 2 - 1) * scale


def check_module_class(answer: Any, what: str) -> None:
    """Fail unless the answer is a subclass of minitorch.nn.Module."""
    expect(
        isinstance(answer, type),
        f"expected a class derived from nn.Module, got {type(answer).__name__}: did you pass "
        f"{what}?",
    )
    expect(
        issubclass(answer, minitorch.nn.Module),
        f"{what} must derive from minitorch's nn.Module (`nn` in this notebook), not from "
        f"{', '.join(base.__module__ + '.' + base.__name__ for base in answer.__bases__)}.",
    )


def build(answer: type, args: tuple, call: str) -> Any:
    """The student's model `answer(*args)` (`call` names it in messages)."""
    model = call_student(answer, *args, call=call)
    expect(
        isinstance(model, minitorch.nn.Module),
        f"{call} did not make an nn.Module: call super().__init__() first in __init__.",
    )
    return model


def parameter_shapes(model: Any, call: str) -> list[list]:
    """[[name, shape], ...] of the model's parameters, sorted by name."""
    named = call_student(lambda: list(model.named_parameters()), call=f"{call}.named_parameters()")
    return sorted([str(name), list(p.shape)] for name, p in named)


def fill_parameters(model: Any, seed: int | str, scale: float, call: str) -> None:
    """Make the model float64 and set every parameter to `seeded_values(seed, its name, ...)`:
    a model with the same parameter names and shapes gets the same weights."""
    call_student(model.double, call=f"{call}.double()")

    def fill() -> None:
        with minitorch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(_mini(seeded_values(seed, name, p.shape, scale)))

    call_student(fill, call=f"setting the weights of {call}")


def gradients(model: Any) -> dict[str, float | None]:
    """Each parameter's .grad as one number: its dot product with fixed pseudo-random weights of
    its shape (None where .grad is None). Equal gradients give equal numbers, different ones
    (almost surely) different numbers."""
    found = {}
    for name, p in model.named_parameters():
        grad = p.grad
        if grad is None:
            found[name] = None
        else:
            weights = seeded_values("gradient", name, grad.shape, 1.0)
            found[name] = float((_data(grad) * weights).sum())
    return found


def clear_gradients(model: Any) -> None:
    """Set every parameter's .grad to None (without the student's zero_grad)."""
    for p in model.parameters():
        p.grad = None


def observe_model_cases(
    cases: dict[str, Any], key: str, call: str, model: Any, run: Callable[[dict], None]
) -> bool:
    """Record `cases[key] = {"model": call, "parameters": [[name, shape], ...], ...}`, the rest
    being what `run(case)` adds. A Failure inside `run` is recorded too (under FAILURE_KEY),
    after the data already seen, so that the judge reports a wrong parameter name before, say,
    the error it causes in forward. Returns False after a failure: the test then stops."""
    case: dict[str, Any] = {"model": call, "parameters": parameter_shapes(model, call)}
    cases[key] = case
    try:
        run(case)
    except Failure as failure:
        case[FAILURE_KEY] = str(failure)
        return False
    return True


def _dtype_hint(failure: Failure, hint: str) -> Failure:
    """The failure, with `hint` added when it is about dtypes."""
    message = str(failure)
    return Failure(f"{message} {hint}") if "dtype" in message else failure


# -------------------------------------------------------------------------------------------------
# Exercise 1: DepthNet
# -------------------------------------------------------------------------------------------------
WEIGHT_SCALES = (0.25, 0.5, 0.75, 1.0)  # one sweep of inputs per weight scale
SWEEP = 12  # inputs per sweep, norms from threshold / 2 to 40 (geometric)


def _sweep(gen: torch.Generator, features: int, threshold: float) -> list[torch.Tensor]:
    """Inputs in random directions whose norms grow geometrically: together with the weight
    scales, they reach every depth from 0 to max_depth (tests/test_graders_dynamic_models.py)."""
    low, high = threshold / 2, 40.0
    inputs = []
    for i in range(SWEEP):
        direction = torch.randn(features, generator=gen, dtype=torch.float64)
        inputs.append(direction / direction.norm() * low * (high / low) ** (i / (SWEEP - 1)))
    return inputs


def _depth_pass(model: Any, x: torch.Tensor, where: str) -> dict:
    """One forward and backward pass of DepthNet: depth, output and gradients."""
    clear_gradients(model)
    out = call_student(model, _mini(x), call=f"model(x) for {where}")
    expect(
        isinstance(out, minitorch.Tensor) and list(out.shape) == [1],
        f"{where}: return head(h), a tensor of shape [1].",
    )
    depth = getattr(model, "depth", None)
    if isinstance(depth, (minitorch.Tensor, torch.Tensor)) and depth.numel() == 1:
        depth = depth.item()
    if type(depth) is not int:
        depth = f"{type(depth).__name__} {depth!r}"[:80]
    call_student(out.sum().backward, call=f"model(x).sum().backward() for {where}")
    return {"depth": depth, "output": out, "gradients": gradients(model)}


def _prediction(model: Any, xs: list[torch.Tensor], call: str) -> tuple[str, dict]:
    norms = ", ".join(f"{x.norm():.3f}" for x in xs)
    where = f"{call}.predict_grads(inputs) for inputs of norms [{norms}]"
    clear_gradients(model)
    guess = call_student(model.predict_grads, [_mini(x) for x in xs], call=where)
    expect(
        isinstance(guess, set | frozenset) and all(isinstance(n, str) for n in guess),
        f"{where}: return a set of parameter names (strings).",
    )
    untouched = all(p.grad is None for p in model.parameters())
    return where, {"prediction": sorted(guess), "every .grad still None": untouched}


def _depth_case(
    model: Any,
    call: str,
    weights: str,
    sweeps: list[list[torch.Tensor]],
    at_threshold: torch.Tensor,
    lists: list[list[int]],
    case: dict,
) -> None:
    """Fill `case` with DepthNet's passes under each weight scale, then its predictions."""
    passes: dict[str, Any] = {}
    predictions: dict[str, Any] = {}
    case["passes"], case["predict_grads"] = passes, predictions
    for w, (scale, inputs) in enumerate(zip(WEIGHT_SCALES, sweeps)):
        fill_parameters(model, f"{weights}/{w}", scale, call)
        if w == 0:
            where = f"{call} on an input whose norm is exactly the threshold"
            passes[where] = _depth_pass(model, at_threshold, where)
        for x in inputs:
            where = f"{call} on an input of norm {x.norm():.3f} (weights {w + 1})"
            passes[where] = _depth_pass(model, x, where)
    fill_parameters(model, f"{weights}/1", WEIGHT_SCALES[1], call)
    for indices in lists:
        where, seen = _prediction(model, [sweeps[1][i] for i in indices], call)
        predictions[where] = seen


@hidden_test("DepthNet")
def depth_net(answer: Any, seed: int) -> dict:
    """Exercise 1: depth, output and gradients on sweeps of inputs under several weights (every
    depth from 0 to max_depth, and an input whose norm is exactly the threshold), then
    predict_grads on lists of those inputs."""
    check_module_class(answer, "DepthNet")
    rng = random.Random(seed)
    cases: dict[str, Any] = {}
    for config in range(3):
        features, max_depth = rng.randint(3, 5), rng.randint(2, 4)
        threshold = round(rng.uniform(0.6, 0.9), 2)
        gen = torch.Generator().manual_seed(rng.randrange(2**31))
        sweeps = [_sweep(gen, features, threshold) for _ in WEIGHT_SCALES]
        at_threshold = torch.zeros(features, dtype=torch.float64)
        at_threshold[rng.randrange(features)] = threshold  # its norm is exactly the threshold
        lists = [[0], [SWEEP - 1, 0], [SWEEP // 2]]
        lists += [rng.sample(range(SWEEP), rng.randint(1, 4)) for _ in range(3)]
        call = f"DepthNet({features}, {max_depth}, threshold={threshold})"
        model = build(answer, (features, max_depth, threshold), call)
        run = functools.partial(
            _depth_case, model, call, f"{seed}/{config}", sweeps, at_threshold, lists
        )
        if not observe_model_cases(cases, call, call, model, run):
            break
    return cases


# -------------------------------------------------------------------------------------------------
# Exercise 2: Router
# -------------------------------------------------------------------------------------------------
def branch_work(program: Program, model: Any) -> dict[str, dict[str, int]]:
    """What each module of `model` did in the recorded call `program` (inputs: x, route).

    Every op that combines a value derived from x with one derived only from that module's
    parameters is work of the module: `runs` counts such ops, `rows` is the largest number of
    rows (first dimension of the result) one of them produced. A branch applied once to the rows
    routed to it has rows == the number of those rows and 1 or 2 runs (a Linear; or a matmul
    and an add)."""
    owner = {id(p): name.rsplit(".", 1)[0] for name, p in model.named_parameters()}
    work = {label: {"rows": 0, "runs": 0} for label in owner.values()}
    data = "x"
    taint: dict[int, frozenset] = {}
    for slot in program.slots:
        if slot.index == program.inputs[0]:
            taint[slot.index] = frozenset({data})
        elif slot.origin == "captured" and id(slot.tensor) in owner:
            taint[slot.index] = frozenset({owner[id(slot.tensor)]})

    def sources(arg: Any) -> list[frozenset]:
        if isinstance(arg, Pack):
            return [t for item in arg.items for t in sources(item)]
        if isinstance(arg, Const):
            return []
        return [taint.get(arg.slot, frozenset())]

    for step in program.steps:
        if isinstance(step, Op | Creation):
            args = [*step.args, *(step.kwargs.values() if isinstance(step, Creation) else ())]
            found = [t for arg in args for t in sources(arg)]
            union = frozenset().union(*found)
            outputs = step.outputs if isinstance(step, Op) else (step.output,)
            made = [o for o in outputs if o is not None]
            if isinstance(step, Op) and made and any(data in t for t in found):
                shape = program.slots[made[0]].shape
                rows = shape[0] if len(shape) >= 2 else 1
                for label in frozenset().union(*(t for t in found if t and data not in t)):
                    work[label]["runs"] += 1
                    work[label]["rows"] = max(work[label]["rows"], rows)
            for out in made:
                taint[out] = union
        elif isinstance(step, Alias):
            taint[step.output] = taint.get(step.source, frozenset())
        elif isinstance(step, Write):
            taint[step.target] = taint.get(step.target, frozenset()) | taint.get(
                step.source, frozenset()
            )
    return work


def _route(model: Any, x: torch.Tensor, route: list[int], upstream: torch.Tensor, where: str):
    """Run the Router on one batch, recording its ops: output, gradients and work per branch."""
    batch, out_features = upstream.shape
    mx = _mini(x, requires_grad=True)
    routes = minitorch.tensor(route)
    try:
        with Recorder(mx, routes) as recorder:
            out = call_student(model, mx, routes, call=where)
    except Failure as failure:
        raise _dtype_hint(failure, "(The grader's model is float64: use dtype=x.dtype.)") from None
    expect(
        isinstance(out, minitorch.Tensor) and list(out.shape) == [batch, out_features],
        f"{where}: return a tensor of shape [{batch}, {out_features}], got "
        f"{list(getattr(out, 'shape', []))}.",
    )
    work = branch_work(recorder.program, model)
    loss = (out * _mini(upstream)).sum()
    call_student(loss.backward, call=f"backward through {where}")
    seen = {"output": out, "gradients": gradients(model), "x.grad": mx.grad}
    one_branch = None
    if len(set(route)) > 1:  # for a hint: every sample on the branch of the first one
        try:
            with minitorch.no_grad():
                one_branch = model(mx.detach(), minitorch.tensor([route[0]] * batch))
        except Exception:
            one_branch = None
    seen["output if every sample took the branch of the first one"] = one_branch
    seen["work per branch"] = work
    return seen


def _router_case(
    model: Any,
    call: str,
    weights: str,
    x: torch.Tensor,
    route: list[int],
    upstream: torch.Tensor,
    where: str,
    case: dict,
) -> None:
    fill_parameters(model, weights, 1.0, call)
    case.update(_route(model, x, route, upstream, where))


@hidden_test("Router")
def router(answer: Any, seed: int) -> dict:
    """Exercise 2: values and gradients (parameters and input), with unused branches, all
    samples on one branch, a batch of one and a batch of 48; and what each branch processed:
    its own rows, once."""
    check_module_class(answer, "Router")
    rng = random.Random(seed)
    cases: dict[str, Any] = {}
    for case in range(5):
        features, out_features, n_branches = rng.randint(2, 5), rng.randint(1, 3), rng.randint(2, 4)
        batch = rng.randint(5, 10) if case < 3 else 1
        if case == 0:
            route = [rng.randrange(n_branches - 1) for _ in range(batch)]  # the last one unused
        elif case == 1:
            route = [rng.randrange(n_branches)] * batch
        elif case == 4:  # a large batch: a loop over the samples shows in the op count
            n_branches, batch = 3, 48
            route = [k for k in range(n_branches) for _ in range(batch // n_branches)]
            rng.shuffle(route)
        else:
            route = [rng.randrange(n_branches) for _ in range(batch)]
        gen = torch.Generator().manual_seed(rng.randrange(2**31))
        x = torch.randn(batch, features, generator=gen, dtype=torch.float64)
        upstream = torch.randn(batch, out_features, generator=gen, dtype=torch.float64)
        call = f"Router({features}, {out_features}, {n_branches})"
        shown = route if batch <= 10 else f"{route[:8]} ... ({batch} samples)"
        where = f"{call}(x, route) with route = {shown}"
        model = build(answer, (features, out_features, n_branches), call)
        weights = f"{seed}/{case}"
        run = functools.partial(_router_case, model, call, weights, x, route, upstream, where)
        if not observe_model_cases(cases, where, call, model, run):
            break
    return cases


# -------------------------------------------------------------------------------------------------
# Exercise 3: summarize
# -------------------------------------------------------------------------------------------------
def _summarize_once(answer: Any, lib: Any, output: torch.Tensor, lengths: list, where: str) -> dict:
    """summarize on one padded batch: results, gradient, and whether `output` was left as is."""
    batch, _, hidden = output.shape
    leaf = lib.tensor(output.tolist(), dtype=lib.float64, requires_grad=True)
    padded = leaf.clone()  # not a leaf: an answer that writes into it in place can do so
    result = call_student(answer, lib, padded, lib.tensor(lengths), call=where)
    expect(isinstance(result, tuple) and len(result) == 2, f"{where}: return a tuple (last, mean).")
    for name, got in zip(("last", "mean"), result):
        expect(
            isinstance(got, lib.Tensor) and list(got.shape) == [batch, hidden],
            f"{where}: {name} must be a {lib_name(lib)} tensor of shape {[batch, hidden]}, got "
            f"{list(getattr(got, 'shape', []))}.",
        )
    last, mean = result
    unchanged = torch.equal(_data(padded), output)
    gen = torch.Generator().manual_seed(batch)
    w_last, w_mean = (
        lib.tensor(torch.randn(batch, hidden, generator=gen).tolist(), dtype=lib.float64)
        for _ in range(2)
    )
    loss = (last * w_last).sum() + (mean * w_mean).sum()
    call_student(loss.backward, call=f"backward through {where}")
    return {"last": last, "mean": mean, "gradient": leaf.grad, "output unchanged": unchanged}


def _count_ops(answer: Any, output: torch.Tensor, lengths: list, where: str) -> int:
    """How many minitorch ops summarize records on this batch."""
    padded, lengths_tensor = _mini(output), minitorch.tensor(lengths)
    with Recorder(padded, lengths_tensor) as recorder:
        call_student(answer, minitorch, padded, lengths_tensor, call=where)
    return len(recorder.program.ops)


@hidden_test("summarize")
def summarize(answer: Any, seed: int) -> dict:
    """Exercise 3, on both libraries: values, dtypes and gradients on padding full of garbage,
    with extra padding and with a full-length batch; the input left as it was; and the number
    of ops recorded for 6 and for 36 sequences (a loop over the batch grows with it)."""
    check_callable(answer, "summarize")
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    cases = []
    for case in range(4):
        batch, hidden = rng.randint(2, 6), rng.randint(1, 4)
        lengths = [rng.randint(1, 6) for _ in range(batch)]
        steps = max(lengths) + (2 if case == 0 else 0)  # case 0: more padding than needed
        if case == 3:
            lengths = [steps] * batch
        output = torch.randn(batch, steps, hidden, generator=gen, dtype=torch.float64)
        for i, n in enumerate(lengths):
            output[i, n:] = 50.0 + torch.rand(steps - n, hidden, generator=gen) * 10  # garbage
        results = {}
        cases.append({"output": output, "lengths": lengths, "results": results})
        for lib in LIBRARIES:
            where = (
                f"summarize({lib.__name__}, output, lengths) with output of shape "
                f"{[batch, steps, hidden]} and lengths = {lengths} ({lib_name(lib)})"
            )
            results[where] = _summarize_once(answer, lib, output, lengths, where)
    costs = []
    for copies in (1, 6):
        lengths = [n for _ in range(copies) for n in range(1, 7)]
        rng.shuffle(lengths)
        output = torch.randn(len(lengths), 6, 2, generator=gen, dtype=torch.float64)
        where = f"summarize(minitorch, output, lengths) for {len(lengths)} sequences"
        costs.append([len(lengths), _count_ops(answer, output, lengths, where)])
    return {"cases": cases, "operations recorded": costs}


# -------------------------------------------------------------------------------------------------
# Exercise 4: SequenceClassifier
# -------------------------------------------------------------------------------------------------
TASK = {"min_length": 4, "max_length": 12, "marker_window": 3}
TRAIN_SIZE, TEST_SIZE, BATCH_SIZE, MAX_EPOCHS, LEARNING_RATE = 600, 300, 32, 6, 0.02


def accuracy(model: Any, sequences: list, labels: Any) -> float:
    """The fraction of sequences whose highest score is their label."""
    with minitorch.no_grad():
        padded, lengths, y = pad_collate(list(zip(sequences, labels)))
        return (model(padded, lengths).argmax(1) == y).float().mean().item()


def train_sequence_classifier(model: Any, seed: int) -> tuple[float, int]:
    """Adam on fresh make_sequences data until the test accuracy reaches 90 % (at most
    MAX_EPOCHS epochs); returns (test accuracy, epochs)."""
    sequences, labels = make_sequences(TRAIN_SIZE, seed=seed, **TASK)
    test_sequences, test_labels = make_sequences(TEST_SIZE, seed=seed + 1, **TASK)
    minitorch.manual_seed(seed)
    loader = DataLoader(
        list(zip(sequences, labels)), batch_size=BATCH_SIZE, shuffle=True, collate_fn=pad_collate
    )
    optimizer = minitorch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    test_accuracy = 0.0
    for epoch in range(1, MAX_EPOCHS + 1):
        for padded, lengths, y in loader:
            loss = minitorch.nn.functional.cross_entropy(model(padded, lengths), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        test_accuracy = accuracy(model, test_sequences, test_labels)
        if test_accuracy >= 0.9:
            return test_accuracy, epoch
    return test_accuracy, MAX_EPOCHS


def _scores(model: Any, padded: Any, lengths: Any, call: str, batch: int) -> minitorch.Tensor:
    with minitorch.no_grad():
        out = call_student(model, padded, lengths, call=call)
    expect(
        isinstance(out, minitorch.Tensor) and list(out.shape) == [batch, 2],
        f"{call} must return scores of shape [{batch}, 2], got {list(getattr(out, 'shape', []))}.",
    )
    return out


@hidden_test("SequenceClassifier")
def sequence_classifier(answer: Any, seed: int) -> dict:
    """Exercise 4: the scores of a batch, of the same batch with other padding, and of each
    sequence alone (the judge checks that they agree); then the test accuracy after training
    on fresh data with a fixed budget."""
    check_module_class(answer, "SequenceClassifier")
    rng = random.Random(seed)
    data_seed = rng.randrange(2**20)
    minitorch.manual_seed(data_seed)
    call = "SequenceClassifier(3, 16, 2)"
    model = build(answer, (3, 16, 2), call)
    seen: dict[str, Any] = {"parameters": len(list(model.parameters()))}
    if not seen["parameters"]:
        return seen
    sequences, _ = make_sequences(6, seed=data_seed, **TASK)
    lengths = [len(s) for s in sequences]
    if lengths == sorted(lengths, reverse=True):  # the batch must not come sorted
        sequences, lengths = sequences[::-1], lengths[::-1]
    padded, mini_lengths, _ = pad_collate([(s, 0) for s in sequences])
    where = f"model(padded, lengths) with lengths = {lengths}"
    seen["lengths"] = lengths
    seen["scores"] = _scores(model, padded, mini_lengths, where, len(sequences))
    gen = torch.Generator().manual_seed(data_seed)
    noisy = padded._data.clone()
    for i, n in enumerate(lengths):
        noisy[i, n:] = torch.randn(noisy.shape[1] - n, 3, generator=gen) * 5
    noisy = torch.cat([noisy, torch.randn(len(lengths), 3, 3, generator=gen) * 5], dim=1)
    seen["scores with other padding"] = _scores(
        model, minitorch.tensor(noisy.tolist()), mini_lengths, where, len(sequences)
    )
    seen["scores of each sequence alone"] = [
        _scores(
            model,
            sequence.unsqueeze(0),
            minitorch.tensor([lengths[i]]),
            f"model on sequence {i} alone (length {lengths[i]})",
            1,
        )[0]
        for i, sequence in enumerate(sequences)
    ]
    test_accuracy, _ = call_student(
        train_sequence_classifier, model, data_seed, call=f"training {call}"
    )
    seen["test accuracy after training"] = test_accuracy
    return seen


# -------------------------------------------------------------------------------------------------
# Exercise 5: FixedMLP
# -------------------------------------------------------------------------------------------------
def training_losses(model: Any, seed: int, steps: int = 60) -> list[float]:
    """Full-batch Adam on 3 spirals; the loss before each step."""
    x, y = make_spirals(150, classes=3, seed=seed)
    optimizer = minitorch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(steps):
        loss = minitorch.nn.functional.cross_entropy(model(x), y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses


def _mlp_case(
    model: Any, call: str, weights: int, x: torch.Tensor, classes: int, case: dict
) -> None:
    case["parameter count"] = sum(p.numel() for p in model.parameters())
    keys = call_student(lambda: list(model.state_dict()), call=f"{call}.state_dict()")
    case["state_dict keys"] = [str(key) for key in keys]
    fill_parameters(model, weights, 1.0, call)
    outputs = [call_student(model, _mini(x), call=f"model(x) for {call}") for _ in range(2)]
    expect(
        all(isinstance(out, minitorch.Tensor) for out in outputs)
        and list(outputs[0].shape) == [7, classes],
        f"{call}: model(x) for x of shape [7, {x.shape[1]}] must have shape [7, {classes}].",
    )
    case["output"], case["output of a second call"] = outputs


@hidden_test("FixedMLP")
def fixed_mlp(answer: Any, seed: int) -> dict:
    """Exercise 5: parameter count, state_dict keys, outputs with given weights, two calls on
    the same input; then a training run (the loss and how far each parameter moved)."""
    check_module_class(answer, "FixedMLP")
    rng = random.Random(seed)
    cases: dict[str, Any] = {}
    for features, width, classes, depth in (
        (2, rng.randint(4, 8), 3, 2),
        (rng.randint(2, 5), rng.randint(2, 6), rng.randint(2, 4), rng.choice((1, 3))),
        (3, 5, 2, 0),
    ):
        call = f"FixedMLP({features}, {width}, {classes}, depth={depth})"
        model = build(answer, (features, width, classes, depth), call)
        gen = torch.Generator().manual_seed(rng.randrange(2**31))
        x = torch.randn(7, features, generator=gen, dtype=torch.float64)
        run = functools.partial(_mlp_case, model, call, rng.randrange(2**31), x, classes)
        if not observe_model_cases(cases, call, call, model, run):
            return cases
    minitorch.manual_seed(rng.randrange(2**20))
    call = "FixedMLP(2, 16, 3, depth=2)"
    model = build(answer, (2, 16, 3, 2), call)
    before = [_data(p) for p in model.parameters()]
    losses = call_student(training_losses, model, rng.randrange(2**20), call=f"training {call}")
    moved = [float((_data(p) - b).abs().max()) for p, b in zip(model.parameters(), before)]
    cases["training"] = {"losses": [losses[0], losses[-1]], "steps": len(losses), "moved": moved}
    return cases


# -------------------------------------------------------------------------------------------------
# Exercise 6: TreeNet
# -------------------------------------------------------------------------------------------------
def _trees(rng: random.Random) -> list[ExprTree]:
    trees, _ = make_expression_trees(6, max_depth=rng.randint(2, 4), seed=rng.randrange(2**20))
    chain = ExprTree(value=0.5)
    for i in range(12):
        chain = ExprTree(op="+-*"[i % 3], left=chain, right=ExprTree(value=-0.25))
    only_sum = ExprTree(op="+", left=ExprTree(value=0.3), right=ExprTree(value=-0.7))
    return [ExprTree(value=0.75), only_sum, *trees, chain]


def _tree_pass(model: Any, tree: ExprTree, where: str) -> dict:
    clear_gradients(model)
    try:
        out = call_student(model, tree, call=f"model(tree) for {where}")
    except Failure as failure:
        hint = (
            "(The grader's model is float64: make the leaf's tensor with self.leaf.weight.dtype.)"
        )
        raise _dtype_hint(failure, hint) from None
    expect(
        isinstance(out, minitorch.Tensor) and list(out.shape) == [1],
        f"{where}: return out(encoding of the root), a tensor of shape [1].",
    )
    call_student(out.sum().backward, call=f"model(tree).sum().backward() for {where}")
    return {"a leaf": tree.is_leaf, "output": out, "gradients": gradients(model)}


def _tree_case(model: Any, call: str, weights: int, trees: list[ExprTree], case: dict) -> None:
    fill_parameters(model, weights, 0.8, call)
    case["trees"] = passes = {}
    for tree in trees:
        where = f"{call} on {tree}"
        passes[where] = _tree_pass(model, tree, where)


@hidden_test("TreeNet")
def tree_net(answer: Any, seed: int) -> dict:
    """Exercise 6: values and gradients on a leaf alone, a single operator, random trees and a
    12-deep chain, for two hidden sizes."""
    check_module_class(answer, "TreeNet")
    rng = random.Random(seed)
    cases: dict[str, Any] = {}
    for hidden in (rng.randint(2, 4), rng.randint(5, 6)):
        weights = rng.randrange(2**31)
        trees = _trees(rng)
        call = f"TreeNet({hidden})"
        model = build(answer, (hidden,), call)
        run = functools.partial(_tree_case, model, call, weights, trees)
        if not observe_model_cases(cases, call, call, model, run):
            break
    return cases


# -------------------------------------------------------------------------------------------------
# Exercise 7: predict_loading
# -------------------------------------------------------------------------------------------------
@hidden_test("predict_loading")
def predict_loading(answer: Any) -> dict:
    """Exercise 7: the student's prediction for every target (judged in judge.py by running
    the targets)."""
    targets = given("dynamic_models")["TARGETS"]
    return dict(predictions_for(answer, "predict_loading", targets, "target"))
