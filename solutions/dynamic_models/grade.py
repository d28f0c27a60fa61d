"""Graders of notebook 3, "dynamic_models". A hidden test cell calls one of them:

    from solutions.dynamic_models import grade
    grade.depth_net(DepthNet)

The students' models are minitorch modules. Each grader builds the student's model on fresh
random sizes, copies the reference model's random weights into it with `load_state_dict` (which
also checks the parameter names), and compares values and gradients with the reference and with
the same computation written in plain PyTorch with PyTorch's autograd. Functions of a library
(`summarize`) run on PyTorch and minitorch. Failures reach the student as one clean
AssertionError (see solutions/grading.py). Pass `seed=` to make the random cases reproducible.
"""

from __future__ import annotations

import functools
import random
from typing import Any

import torch

import minitorch
from minitorch.datasets import (
    DataLoader,
    ExprTree,
    make_expression_trees,
    make_sequences,
    make_spirals,
    pad_collate,
)
from solutions.dynamic_models import reference
from solutions.grading import (
    LIBRARIES,
    Failure,
    call_student,
    check_callable,
    expect,
    grader,
    lib_name,
    observed,
    predictions_for,
)


def _data(t: Any) -> torch.Tensor:
    """The values of a PyTorch or minitorch tensor as a PyTorch float64 tensor."""
    return torch.as_tensor(t.detach().tolist(), dtype=torch.float64)


def _close(a: torch.Tensor, b: torch.Tensor, tol: float = 1e-9) -> bool:
    return a.shape == b.shape and torch.allclose(a, b, rtol=1e-7, atol=tol)


def _mini(values: torch.Tensor, requires_grad: bool = False) -> minitorch.Tensor:
    return minitorch.tensor(values.tolist(), dtype=minitorch.float64, requires_grad=requires_grad)


def _randomize(model: Any, gen: torch.Generator, scale: float = 1.0) -> None:
    """Fill every parameter with uniform values in [-scale, scale] (float64 model)."""
    with minitorch.no_grad():
        for p in model.parameters():
            values = (
                torch.rand(tuple(p.shape), generator=gen, dtype=torch.float64) * 2 - 1
            ) * scale
            p.copy_(_mini(values))


def _state(model: Any) -> dict[str, torch.Tensor]:
    """The model's parameters as PyTorch float64 leaves that require grad (the twin's weights)."""
    return {name: _data(p).requires_grad_() for name, p in model.named_parameters()}


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


def _build(answer: type, args: tuple, call: str) -> Any:
    model = call_student(answer, *args, call=call)
    expect(
        isinstance(model, minitorch.nn.Module),
        f"{call} did not make an nn.Module: call super().__init__() first in __init__.",
    )
    return model


def _load_reference_weights(model: Any, ref: Any, call: str) -> None:
    """Check the parameter names, then copy the reference's float64 weights into `model`."""
    want = [name for name, _ in ref.named_parameters()]
    have = [name for name, _ in model.named_parameters()]
    missing = [n for n in want if n not in have]
    extra = [n for n in have if n not in want]
    if missing or extra:
        example = f"missing e.g. {missing[0]!r}" if missing else f"unexpected {extra[0]!r}"
        raise Failure(
            f"{call} has the parameters {sorted(have) or 'none'}, expected {sorted(want)} "
            f"({example}). Layers kept in a plain Python list, or created in forward, are not "
            "registered: use nn.ModuleList / nn.ModuleDict and create every layer in "
            "__init__, with the names the exercise gives."
        )
    shapes = {name: list(p.shape) for name, p in ref.named_parameters()}
    for name, p in model.named_parameters():
        expect(
            list(p.shape) == shapes[name],
            f"{call}: parameter {name} has shape {list(p.shape)}, expected {shapes[name]}.",
        )
    call_student(model.double, call=f"{call}.double()")
    call_student(model.load_state_dict, ref.state_dict(), call=f"{call}.load_state_dict(weights)")


def _check_grads(model: Any, twin: dict[str, torch.Tensor], where: str) -> None:
    """Every parameter's .grad against the PyTorch twin's (None where the twin has None)."""
    for name, p in model.named_parameters():
        want = twin[name].grad
        if want is None:
            expect(
                p.grad is None,
                f"{where}: {name} was not used by this pass, so its .grad must stay None; it is "
                "a tensor. A layer this pass does not need must not run.",
            )
            continue
        expect(
            p.grad is not None,
            f"{where}: {name}.grad is None, but this pass uses {name}: is the gradient cut "
            "somewhere (detach, .item(), a new tensor built from values)?",
        )
        expect(
            _close(_data(p.grad), want, 1e-8),
            f"{where}: {name}.grad differs from the gradient of the expected computation.",
        )


# -------------------------------------------------------------------------------------------------
# Exercise 1: DepthNet
# -------------------------------------------------------------------------------------------------
def depth_net_twin(w: dict[str, torch.Tensor], x: torch.Tensor, threshold: float) -> tuple:
    """DepthNet in PyTorch: (output, number of blocks run)."""
    h, depth = x, 0
    max_depth = sum(1 for name in w if name.endswith(".weight")) - 1
    while depth < max_depth and h.norm() > threshold:
        h = torch.tanh(h @ w[f"blocks.{depth}.weight"].T + w[f"blocks.{depth}.bias"])
        depth += 1
    return h @ w["head.weight"].T + w["head.bias"], depth


def _inputs_for_every_depth(ref: Any, gen: torch.Generator, features: int) -> list[torch.Tensor]:
    """Inputs that make the reference run 0, 1, ..., max_depth blocks (when such exist)."""
    by_depth: dict[int, torch.Tensor] = {}
    with minitorch.no_grad():
        for attempt in range(400):
            scale = 0.05 * 1.03**attempt
            x = torch.randn(features, generator=gen, dtype=torch.float64) * scale
            ref(_mini(x))
            by_depth.setdefault(ref.depth, x)
            if len(by_depth) == len(ref.blocks) + 1:
                break
    return [by_depth[d] for d in sorted(by_depth)]


@grader("DepthNet")
def depth_net(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 1: outputs, depth and gradients against the reference and PyTorch on
    inputs of every depth, then predict_grads against running the passes."""
    check_module_class(answer, "DepthNet")
    rng = random.Random(seed)
    for _ in range(3):
        features, max_depth = rng.randint(3, 5), rng.randint(2, 4)
        threshold = round(rng.uniform(0.6, 0.9), 2)
        gen = torch.Generator().manual_seed(rng.randrange(2**31))
        ref = reference.DepthNet(features, max_depth, threshold).double()
        for _ in range(5):  # weights under which every depth from 0 to max_depth occurs
            _randomize(ref, gen, 0.5)
            inputs = _inputs_for_every_depth(ref, gen, features)
            if len(inputs) == max_depth + 1:
                break
        call = f"DepthNet({features}, {max_depth}, threshold={threshold})"
        model = _build(answer, (features, max_depth, threshold), call)
        _load_reference_weights(model, ref, call)
        for x in inputs:
            w = _state(ref)
            want, want_depth = depth_net_twin(w, x, threshold)
            want.sum().backward()
            where = f"{call} on an input of norm {x.norm():.3f}"
            model.zero_grad()
            out = call_student(model, _mini(x), call=f"model(x) for {where}")
            expect(
                isinstance(out, minitorch.Tensor) and list(out.shape) == [1],
                f"{where}: return head(h), a tensor of shape [1].",
            )
            got_depth = getattr(model, "depth", None)
            expect(
                got_depth == want_depth,
                f"{where}: model.depth is {got_depth!r}, but {want_depth} blocks should run: "
                "stop as soon as h.norm() <= threshold (check before each block, also the "
                "first) or once max_depth blocks ran.",
            )
            expect(_close(_data(out), want.detach()), f"{where}: the output is wrong.")
            call_student(out.sum().backward, call=f"model(x).sum().backward() for {where}")
            _check_grads(model, w, where)
        _check_predictions(model, inputs, rng, call)


def _check_predictions(model: Any, inputs: list, rng: random.Random, call: str) -> None:
    deep_first = sorted(inputs, key=lambda x: -x.norm().item())
    lists = [inputs[:1], [deep_first[0], deep_first[-1]], inputs[:-1] or inputs]
    lists += [rng.sample(inputs, rng.randint(1, len(inputs))) for _ in range(3)]
    for xs in lists:
        minis = [_mini(x) for x in xs]
        norms = ", ".join(f"{x.norm():.3f}" for x in xs)
        where = f"{call}.predict_grads(inputs) for inputs of norms [{norms}]"
        model.zero_grad()
        guess = call_student(model.predict_grads, minis, call=where)
        expect(
            isinstance(guess, set | frozenset) and all(isinstance(n, str) for n in guess),
            f"{where}: return a set of parameter names (strings).",
        )
        expect(
            all(p.grad is None for p in model.parameters()),
            f"{where}: predict_grads set some .grad: predict without running backward.",
        )
        for x in minis:
            model(x).sum().backward()
        truth = {name for name, p in model.named_parameters() if p.grad is not None}
        model.zero_grad()
        if guess == truth:
            continue
        missing, extra = sorted(truth - guess), sorted(guess - truth)
        raise Failure(
            f"{where}: wrong prediction: "
            + (f"{missing[0]} has a gradient after these passes. " if missing else "")
            + (f"{extra[0]} has no gradient after these passes. " if extra else "")
            + "A parameter keeps its gradient tensor once any pass used it, and a block that "
            "no pass ran has none."
        )


# -------------------------------------------------------------------------------------------------
# Exercise 2: Router
# -------------------------------------------------------------------------------------------------
def router_twin(w: dict[str, torch.Tensor], x: torch.Tensor, route: list[int]) -> torch.Tensor:
    """The per-sample loop in PyTorch."""
    rows = [
        x[i] @ w[f"branches.{k}.weight"].T + w[f"branches.{k}.bias"] for i, k in enumerate(route)
    ]
    return torch.stack(rows)


@grader("Router")
def router(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 2: values and gradients (parameters and input) equal the per-sample loop,
    with unused branches, all samples on one branch, and a batch of one."""
    check_module_class(answer, "Router")
    rng = random.Random(seed)
    for case in range(4):
        features, out_features, n_branches = rng.randint(2, 5), rng.randint(1, 3), rng.randint(2, 4)
        batch = rng.randint(5, 10) if case < 3 else 1
        if case == 0:
            route = [rng.randrange(n_branches - 1) for _ in range(batch)]  # the last one unused
        elif case == 1:
            route = [rng.randrange(n_branches)] * batch
        else:
            route = [rng.randrange(n_branches) for _ in range(batch)]
        gen = torch.Generator().manual_seed(rng.randrange(2**31))
        ref = reference.Router(features, out_features, n_branches).double()
        _randomize(ref, gen)
        call = f"Router({features}, {out_features}, {n_branches})"
        model = _build(answer, (features, out_features, n_branches), call)
        _load_reference_weights(model, ref, call)
        x = torch.randn(batch, features, generator=gen, dtype=torch.float64)
        weights = torch.randn(batch, out_features, generator=gen, dtype=torch.float64)
        w = _state(ref)
        tx = x.clone().requires_grad_()
        want = router_twin(w, tx, route)
        (want * weights).sum().backward()
        where = f"{call}(x, route) with route = {route}"
        mx = _mini(x, requires_grad=True)
        out = call_student(model, mx, minitorch.tensor(route), call=where)
        expect(
            isinstance(out, minitorch.Tensor) and list(out.shape) == [batch, out_features],
            f"{where}: return a tensor of shape [{batch}, {out_features}], got "
            f"{list(getattr(out, 'shape', []))}.",
        )
        got = _data(out)
        if not _close(got, want.detach()):
            first = route[0]
            one_branch = router_twin(w, x, [first] * batch).detach()
            hint = (
                " Every row went through the branch of the first sample: route each sample."
                if _close(got, one_branch)
                else " Check that row i of the result is branch route[i] applied to x[i], in "
                "the samples' order."
            )
            raise Failure(f"{where}: values differ from the per-sample loop.{hint}")
        loss = (out * _mini(weights)).sum()
        call_student(loss.backward, call=f"backward through {where}")
        _check_grads(model, w, where)
        expect(
            mx.grad is not None and _close(_data(mx.grad), tx.grad, 1e-8),
            f"{where}: the gradient with respect to x differs from the per-sample loop's.",
        )


# -------------------------------------------------------------------------------------------------
# Exercise 3: summarize
# -------------------------------------------------------------------------------------------------
@grader("summarize")
def summarize(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 3 on both libraries: values and gradients equal slicing each sequence
    alone, on padding full of garbage, with extra padding and with a full-length sequence."""
    check_callable(answer, "summarize")
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    for case in range(4):
        batch, hidden = rng.randint(2, 6), rng.randint(1, 4)
        lengths = [rng.randint(1, 6) for _ in range(batch)]
        steps = max(lengths) + (2 if case == 0 else 0)  # case 0: more padding than needed
        if case == 3:
            lengths = [steps] * batch
        output = torch.randn(batch, steps, hidden, generator=gen, dtype=torch.float64)
        for i, n in enumerate(lengths):
            output[i, n:] = 50.0 + torch.rand(steps - n, hidden, generator=gen) * 10  # garbage
        w_last, w_mean = torch.randn(2, batch, hidden, generator=gen, dtype=torch.float64)
        t_out = output.clone().requires_grad_()
        want_last = torch.stack([t_out[i, n - 1] for i, n in enumerate(lengths)])
        want_mean = torch.stack([t_out[i, :n].mean(0) for i, n in enumerate(lengths)])
        ((want_last * w_last).sum() + (want_mean * w_mean).sum()).backward()
        for lib in LIBRARIES:
            out = lib.tensor(output.tolist(), dtype=lib.float64, requires_grad=True)
            where = (
                f"summarize({lib.__name__}, output, lengths) with output of shape "
                f"{[batch, steps, hidden]} and lengths = {lengths} ({lib_name(lib)})"
            )
            result = call_student(answer, lib, out, lib.tensor(lengths), call=where)
            expect(
                isinstance(result, tuple) and len(result) == 2,
                f"{where}: return a tuple (last, mean).",
            )
            last, mean = result
            for name, got in (("last", last), ("mean", mean)):
                expect(
                    isinstance(got, lib.Tensor) and list(got.shape) == [batch, hidden],
                    f"{where}: {name} must be a {lib_name(lib)} tensor of shape "
                    f"{[batch, hidden]}, got {list(getattr(got, 'shape', []))}.",
                )
            _check_last(_data(last), output, lengths, want_last.detach(), where)
            _check_mean(_data(mean), output, lengths, want_mean.detach(), where)
            loss = (last * lib.tensor(w_last.tolist(), dtype=lib.float64)).sum() + (
                mean * lib.tensor(w_mean.tolist(), dtype=lib.float64)
            ).sum()
            call_student(loss.backward, call=f"backward through {where}")
            expect(
                out.grad is not None and _close(_data(out.grad), t_out.grad),
                f"{where}: the gradient with respect to output differs from running each "
                "sequence alone (it must be 0 on the padding).",
            )


def _check_last(
    got: torch.Tensor, output: torch.Tensor, lengths: list, want: Any, where: str
) -> None:
    if _close(got, want):
        return
    batch, steps = output.shape[:2]
    if all(n < steps for n in lengths) and _close(
        got, torch.stack([output[i, n] for i, n in enumerate(lengths)])
    ):
        raise Failure(
            f"{where}: last is the step after the last valid one: a sequence of length n ends at "
            "index n - 1."
        )
    if _close(got, output[:, -1]):
        raise Failure(f"{where}: last is the last padded step, not the last valid one.")
    raise Failure(f"{where}: last[i] must be output[i, lengths[i] - 1].")


def _check_mean(
    got: torch.Tensor, output: torch.Tensor, lengths: list, want: Any, where: str
) -> None:
    if _close(got, want):
        return
    steps = output.shape[1]
    counts = torch.tensor(lengths, dtype=torch.float64).unsqueeze(1)
    if _close(got, want * counts / steps):
        raise Failure(
            f"{where}: mean divides the sum of the valid steps by the padded length {steps}; "
            "divide by each sequence's own length."
        )
    raise Failure(
        f"{where}: mean differs from the mean of each sequence's valid steps: mask the padding "
        "before you average (padding values must not count)."
    )


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


def _scores(model: Any, padded: Any, lengths: Any, call: str, batch: int) -> torch.Tensor:
    with minitorch.no_grad():
        out = call_student(model, padded, lengths, call=call)
    expect(
        isinstance(out, minitorch.Tensor) and list(out.shape) == [batch, 2],
        f"{call} must return scores of shape [{batch}, 2], got {list(getattr(out, 'shape', []))}.",
    )
    return _data(out)


@grader("SequenceClassifier")
def sequence_classifier(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 4: scores that ignore padding and batch order, then at least 90 % test
    accuracy after training on fresh data with a fixed budget."""
    check_module_class(answer, "SequenceClassifier")
    rng = random.Random(seed)
    data_seed = rng.randrange(2**20)
    minitorch.manual_seed(data_seed)
    call = "SequenceClassifier(3, 16, 2)"
    model = _build(answer, (3, 16, 2), call)
    expect(any(True for _ in model.parameters()), f"{call} has no parameters.")
    sequences, _ = make_sequences(6, seed=data_seed, **TASK)
    lengths = [len(s) for s in sequences]
    if lengths == sorted(lengths, reverse=True):  # the batch must not come sorted
        sequences, lengths = sequences[::-1], lengths[::-1]
    padded, mini_lengths, _ = pad_collate([(s, 0) for s in sequences])
    where = f"model(padded, lengths) with lengths = {lengths}"
    scores = _scores(model, padded, mini_lengths, where, len(sequences))
    gen = torch.Generator().manual_seed(data_seed)
    noisy = padded._data.clone()
    for i, n in enumerate(lengths):
        noisy[i, n:] = torch.randn(noisy.shape[1] - n, 3, generator=gen) * 5
    noisy = torch.cat([noisy, torch.randn(len(lengths), 3, 3, generator=gen) * 5], dim=1)
    noisy_scores = _scores(model, minitorch.tensor(noisy.tolist()), mini_lengths, where, 6)
    expect(
        _close(noisy_scores, scores, 1e-5),
        f"{where}: the scores change when the padding holds other values or the batch has more "
        "padding. Pack the batch (pack_padded_sequence with the lengths) and classify from the "
        "final hidden state h_n, which stops at each sequence's last valid step.",
    )
    for i, sequence in enumerate(sequences):
        alone = _scores(
            model,
            sequence.unsqueeze(0),
            minitorch.tensor([lengths[i]]),
            f"model on sequence {i} alone (length {lengths[i]})",
            1,
        )
        expect(
            _close(alone[0], scores[i], 1e-5),
            f"{where}: the scores of sequence {i} differ from its scores when it is run alone. "
            "Classify from h_n, the state at each sequence's own last step (the unpacked output "
            "is zero past a sequence's end).",
        )
    test_accuracy, _ = train_sequence_classifier(model, data_seed)
    expect(
        test_accuracy >= 0.9,
        f"after training {call} with Adam (lr {LEARNING_RATE}) for {MAX_EPOCHS} epochs of "
        f"{TRAIN_SIZE} fresh sequences, the test accuracy is {test_accuracy:.1%}, below 90 %. "
        "Use a GRU, classify from the final hidden state, and check the packing.",
    )


# -------------------------------------------------------------------------------------------------
# Exercise 5: FixedMLP
# -------------------------------------------------------------------------------------------------
def mlp_twin(w: dict[str, torch.Tensor], x: torch.Tensor, depth: int) -> torch.Tensor:
    for i in range(depth):
        x = torch.relu(x @ w[f"hidden.{i}.weight"].T + w[f"hidden.{i}.bias"])
    return x @ w["out.weight"].T + w["out.bias"]


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


@grader("FixedMLP")
def fixed_mlp(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 5: parameter count, state_dict keys, outputs against PyTorch, a forward
    that is the same on every call, and a training curve that goes down."""
    check_module_class(answer, "FixedMLP")
    rng = random.Random(seed)
    for features, width, classes, depth in (
        (2, rng.randint(4, 8), 3, 2),
        (rng.randint(2, 5), rng.randint(2, 6), rng.randint(2, 4), rng.choice((1, 3))),
        (3, 5, 2, 0),
    ):
        call = f"FixedMLP({features}, {width}, {classes}, depth={depth})"
        ref = reference.FixedMLP(features, width, classes, depth).double()
        model = _build(answer, (features, width, classes, depth), call)
        count = sum(p.numel() for p in model.parameters())
        want_count = sum(p.numel() for p in ref.parameters())
        expect(
            count == want_count,
            f"{call} has {count} parameters, expected {want_count}. Layers created in forward "
            "or kept in a plain Python list are not parameters of the model.",
        )
        keys, want_keys = list(model.state_dict()), list(ref.state_dict())
        expect(
            keys == want_keys,
            f"{call}: state_dict keys are {keys}, expected {want_keys}.",
        )
        gen = torch.Generator().manual_seed(rng.randrange(2**31))
        _randomize(ref, gen)
        _load_reference_weights(model, ref, call)
        x = torch.randn(7, features, generator=gen, dtype=torch.float64)
        first = call_student(model, _mini(x), call=f"model(x) for {call}")
        second = call_student(model, _mini(x), call=f"model(x) for {call}")
        expect(
            isinstance(first, minitorch.Tensor) and list(first.shape) == [7, classes],
            f"{call}: model(x) for x of shape [7, {features}] must have shape [7, {classes}].",
        )
        expect(
            _close(_data(first), _data(second)),
            f"{call}: two calls on the same input give different results: forward must not "
            "create layers.",
        )
        expect(
            _close(_data(first), mlp_twin(_state(ref), x, depth).detach()),
            f"{call}: the output differs from the expected stack of Linear + ReLU layers.",
        )
    minitorch.manual_seed(rng.randrange(2**20))
    model = _build(answer, (2, 16, 3, 2), "FixedMLP(2, 16, 3, depth=2)")
    before = [_data(p) for p in model.parameters()]
    losses = call_student(
        training_losses, model, rng.randrange(2**20), call="training FixedMLP(2, 16, 3, 2)"
    )
    expect(
        losses[-1] < 0.8 * losses[0],
        f"training FixedMLP(2, 16, 3, depth=2) for {len(losses)} Adam steps took the loss from "
        f"{losses[0]:.3f} to only {losses[-1]:.3f}: are the layers the optimizer updates the "
        "ones forward uses?",
    )
    expect(
        all(not _close(_data(p), b) for p, b in zip(model.parameters(), before)),
        "training FixedMLP left some parameters unchanged: forward must use every layer.",
    )


# -------------------------------------------------------------------------------------------------
# Exercise 6: TreeNet
# -------------------------------------------------------------------------------------------------
def tree_twin(w: dict[str, torch.Tensor], tree: ExprTree) -> torch.Tensor:
    """TreeNet in PyTorch: the output for one tree, shape [1]."""

    def encode(node: ExprTree) -> torch.Tensor:
        if node.is_leaf:
            value = torch.tensor([node.value], dtype=torch.float64)
            return torch.tanh(value @ w["leaf.weight"].T + w["leaf.bias"])
        both = torch.cat([encode(node.left), encode(node.right)])
        return torch.tanh(both @ w[f"combine.{node.op}.weight"].T + w[f"combine.{node.op}.bias"])

    return encode(tree) @ w["out.weight"].T + w["out.bias"]


def _trees(rng: random.Random) -> list[ExprTree]:
    trees, _ = make_expression_trees(6, max_depth=rng.randint(2, 4), seed=rng.randrange(2**20))
    chain = ExprTree(value=0.5)
    for i in range(12):
        chain = ExprTree(op="+-*"[i % 3], left=chain, right=ExprTree(value=-0.25))
    only_sum = ExprTree(op="+", left=ExprTree(value=0.3), right=ExprTree(value=-0.7))
    return [ExprTree(value=0.75), only_sum, *trees, chain]


@grader("TreeNet")
def tree_net(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 6: values and gradients on random trees (a leaf alone, a single operator,
    random shapes, a 12-deep chain) equal the reference written in PyTorch, same weights."""
    check_module_class(answer, "TreeNet")
    rng = random.Random(seed)
    for hidden in (rng.randint(2, 4), rng.randint(5, 6)):
        gen = torch.Generator().manual_seed(rng.randrange(2**31))
        ref = reference.TreeNet(hidden).double()
        _randomize(ref, gen, 0.8)
        call = f"TreeNet({hidden})"
        model = _build(answer, (hidden,), call)
        _load_reference_weights(model, ref, call)
        for tree in _trees(rng):
            w = _state(ref)
            want = tree_twin(w, tree)
            want.sum().backward()
            where = f"{call} on {tree}"
            model.zero_grad()
            out = call_student(model, tree, call=f"model(tree) for {where}")
            expect(
                isinstance(out, minitorch.Tensor) and list(out.shape) == [1],
                f"{where}: return out(encoding of the root), a tensor of shape [1].",
            )
            if not _close(_data(out), want.detach()):
                hint = (
                    " For an operator node, put the left child's encoding first."
                    if not tree.is_leaf
                    else " A leaf's encoding is tanh(leaf([value]))."
                )
                raise Failure(f"{where}: the output differs from the expected one.{hint}")
            call_student(out.sum().backward, call=f"model(tree).sum().backward() for {where}")
            _check_grads(model, w, where)


# -------------------------------------------------------------------------------------------------
# Exercise 7: predict_loading
# -------------------------------------------------------------------------------------------------
def classify_loading(target: str, lib: Any) -> str:
    """What loading Source(4, 8)'s state_dict into the target does, found by running it."""
    namespace: dict[str, Any] = {"nn": lib.nn}
    exec(reference.SOURCE_MODEL, namespace)
    exec(target, namespace)
    lib.manual_seed(0)
    source = namespace["Source"](4, 8)
    model = namespace["Target"](4, 8)
    try:
        model.load_state_dict(source.state_dict())
    except RuntimeError as error:
        message = str(error)
        found = [
            kind
            for kind, words in (
                ("size_mismatch", "size mismatch"),
                ("missing_keys", "Missing key"),
                ("unexpected_keys", "Unexpected key"),
            )
            if words in message
        ]
        if len(found) != 1:
            raise
        return found[0]
    x = lib.randn(5, 4)
    with lib.no_grad():
        same = torch.allclose(_data(source(x)), _data(model(x)))
    return "same_output" if same else "different_output"


@grader("predict_loading")
def predict_loading(answer: Any) -> None:
    """Grade exercise 7 against running every target on PyTorch and minitorch."""
    predictions = predictions_for(answer, "predict_loading", reference.TARGETS, "target")
    for key, target in reference.TARGETS.items():
        guess = predictions[key]
        expect(
            guess in reference.OUTCOMES,
            f"target {key!r}: {guess!r} is not one of {', '.join(reference.OUTCOMES)}.",
        )
        expect(
            guess == observed(key, functools.partial(classify_loading, target)),
            f"target {key!r}: your prediction {guess!r} is wrong. Run it and read what "
            "load_state_dict says, or compare the outputs.",
        )
