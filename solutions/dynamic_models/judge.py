"""Judges of notebook 3's hidden tests: they decide from the plain data that grade.py observed
(NOTE [Hidden tests in two halves] in solutions/grading.py). `observed` is what a test saw of the
student's answer, `expected` what it saw of the reference on the same cases; neither holds a
student object. Each judge checks in the order a student should fix things (parameter names
before outputs, outputs before gradients, values before costs) and fails with a message that
says what went wrong without showing the reference.

A model case that stopped with a failure in the kernel holds the data seen before it and the
failure under FAILURE_KEY: the judge checks that data first, then reports the failure.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from typing import Any

import torch

from solutions.dynamic_models.grade import LEARNING_RATE, MAX_EPOCHS, TRAIN_SIZE
from solutions.dynamic_models.reference import OUTCOMES
from solutions.grading import FAILURE_KEY, Failure, observed
from solutions.judging import as_tensor, is_tensor, partial
from solutions.reference_cells import given

# The points of the partial-credit exercises (their test cells' points in the notebook).
PREDICT_LOADING_POINTS = 2

# A branch applied once to its rows runs 1 op (a Linear) or 2 (a matmul and an add); a loop over
# the 16 samples of a branch runs at least 16.
MAX_RUNS_PER_BRANCH = 4


# -------------------------------------------------------------------------------------------------
# Reading the data (a student could forge it: anything unreadable fails, never crashes)
# -------------------------------------------------------------------------------------------------
def close(got: Any, want: Any, tol: float = 1e-9) -> bool:
    """The observed tensor `got` equals the expected `want`: same shape and dtype, and values
    within rtol 1e-7 and atol `tol`."""
    if not (is_tensor(got) and is_tensor(want)) or got["dtype"] != want["dtype"]:
        return False
    a, b = as_tensor(got), as_tensor(want)
    return a.shape == b.shape and torch.allclose(a, b, rtol=1e-7, atol=tol, equal_nan=True)


def same_number(got: Any, want: float, tol: float = 1e-8) -> bool:
    return type(got) in (int, float) and math.isclose(got, want, rel_tol=1e-6, abs_tol=tol)


def stop_if_failed(case: dict) -> None:
    """Report the failure the kernel recorded in `case`, if any."""
    if FAILURE_KEY in case:
        raise Failure(str(case[FAILURE_KEY]))


def field(case: dict, name: str) -> Any:
    """case[name]; when the kernel stopped before it, the failure it recorded."""
    if name not in case:
        stop_if_failed(case)
        raise Failure(f"{name}: no result was observed.")
    return case[name]


def items(observed: dict, expected: dict) -> Iterator[tuple[str, Any, Any]]:
    """(key, observed value, expected value) for every expected key, in order, one at a time;
    at the first key the observation lacks, the failure it recorded instead is reported."""
    for key, want in expected.items():
        if key not in observed:
            stop_if_failed(observed)
            raise Failure(f"{key}: no result was observed.")
        yield key, observed[key], want


def check_parameters(got: list, want: list, call: str) -> None:
    """The model's parameters have the names and shapes of the exercise's."""
    have = {name: shape for name, shape in got}
    shapes = {name: shape for name, shape in want}
    missing = [n for n in shapes if n not in have]
    extra = [n for n in have if n not in shapes]
    if missing or extra:
        example = f"missing e.g. {missing[0]!r}" if missing else f"unexpected {extra[0]!r}"
        raise Failure(
            f"{call} has the parameters {sorted(have) or 'none'}, expected {sorted(shapes)} "
            f"({example}). Layers kept in a plain Python list, or created in forward, are not "
            "registered: use nn.ModuleList / nn.ModuleDict and create every layer in "
            "__init__, with the names the exercise gives."
        )
    for name, shape in shapes.items():
        if have[name] != shape:
            raise Failure(f"{call}: parameter {name} has shape {have[name]}, expected {shape}.")


def check_gradients(got: dict, want: dict, where: str) -> None:
    """Every parameter's .grad (one number each, None where .grad is None) as expected."""
    for name, expected_grad in want.items():
        grad = got.get(name)
        if expected_grad is None:
            if grad is not None:
                raise Failure(
                    f"{where}: {name} was not used by this pass, so its .grad must stay None; it "
                    "is a tensor. A layer this pass does not need must not run."
                )
            continue
        if grad is None:
            raise Failure(
                f"{where}: {name}.grad is None, but this pass uses {name}: is the gradient cut "
                "somewhere (detach, .item(), a new tensor built from values)?"
            )
        if not same_number(grad, expected_grad):
            raise Failure(
                f"{where}: {name}.grad differs from the gradient of the expected computation."
            )


def model_cases(observed: dict, expected: dict) -> Iterator[tuple[str, dict, dict]]:
    """The model cases one at a time, each with its parameters checked."""
    for key, case, want in items(observed, expected):
        check_parameters(case["parameters"], want["parameters"], want["model"])
        yield key, case, want


# -------------------------------------------------------------------------------------------------
# Exercise 1: DepthNet
# -------------------------------------------------------------------------------------------------
def depth_net(observed: dict, expected: dict) -> None:
    """Depth, output and gradients of every pass, then every prediction of predict_grads."""
    for _, case, want in model_cases(observed, expected):
        for where, seen, truth in items(case.get("passes", {}) | _failure(case), want["passes"]):
            if seen["depth"] != truth["depth"]:
                raise Failure(
                    f"{where}: model.depth is {seen['depth']!r}, but {truth['depth']} blocks "
                    "should run: stop as soon as h.norm() <= threshold (check before each block, "
                    "also the first) or once max_depth blocks ran."
                )
            if not close(seen["output"], truth["output"]):
                raise Failure(f"{where}: the output is wrong.")
            check_gradients(seen["gradients"], truth["gradients"], where)
        predictions = case.get("predict_grads", {}) | _failure(case)
        for where, seen, truth in items(predictions, want["predict_grads"]):
            if not seen["every .grad still None"]:
                raise Failure(
                    f"{where}: predict_grads set some .grad: predict without running backward."
                )
            guess, right = set(seen["prediction"]), set(truth["prediction"])
            if guess != right:
                missing, extra = sorted(right - guess), sorted(guess - right)
                raise Failure(
                    f"{where}: wrong prediction: "
                    + (f"{missing[0]} has a gradient after these passes. " if missing else "")
                    + (f"{extra[0]} has no gradient after these passes. " if extra else "")
                    + "A parameter keeps its gradient tensor once any pass used it, and a block "
                    "that no pass ran has none."
                )
        stop_if_failed(case)


def _failure(case: dict) -> dict:
    """The failure recorded in a case, to carry into its parts (see `items`)."""
    return {FAILURE_KEY: case[FAILURE_KEY]} if FAILURE_KEY in case else {}


# -------------------------------------------------------------------------------------------------
# Exercise 2: Router
# -------------------------------------------------------------------------------------------------
def router(observed: dict, expected: dict) -> None:
    """Values, gradients (parameters and x), then what each branch processed."""
    for where, case, want in model_cases(observed, expected):
        stop_if_failed(case)
        if case["output"]["dtype"] != want["output"]["dtype"]:
            raise Failure(
                f"{where}: the result is {case['output']['dtype']}, but x is "
                f"{want['output']['dtype']}: make the output with dtype=x.dtype."
            )
        if not close(case["output"], want["output"]):
            one_branch = want["output if every sample took the branch of the first one"]
            hint = (
                " Every row went through the branch of the first sample: route each sample."
                if one_branch is not None and close(case["output"], one_branch)
                else " Check that row i of the result is branch route[i] applied to x[i], in "
                "the samples' order."
            )
            raise Failure(f"{where}: values differ from the per-sample loop.{hint}")
        check_gradients(case["gradients"], want["gradients"], where)
        if not close(case["x.grad"], want["x.grad"], 1e-8):
            raise Failure(
                f"{where}: the gradient with respect to x differs from the per-sample loop's."
            )
        for branch, done in want["work per branch"].items():
            work = case["work per branch"][branch]
            if work["rows"] > done["rows"]:
                raise Failure(
                    f"{where}: {branch} ran on {work['rows']} rows, but only {done['rows']} "
                    "samples are routed to it: run each branch once, on its own rows only "
                    "(x[mask]), not on the whole batch."
                )
            if work["runs"] > MAX_RUNS_PER_BRANCH:
                raise Failure(
                    f"{where}: {branch} ran {work['runs']} separate times: run each branch once, "
                    "on all the rows routed to it, with no Python loop over the samples."
                )


# -------------------------------------------------------------------------------------------------
# Exercise 3: summarize
# -------------------------------------------------------------------------------------------------
def summarize(observed: dict, expected: dict) -> None:
    """Values and dtypes of last and mean (with a hint for the classic mistakes), the gradient,
    the input left as it was, then the cost: ops recorded must not grow with the batch."""
    if len(observed["cases"]) != len(expected["cases"]):
        raise Failure("the test did not observe every case.")
    for case, want in zip(observed["cases"], expected["cases"]):
        output, lengths = as_tensor(want["output"]), want["lengths"]
        for where, seen, truth in items(case["results"], want["results"]):
            for name in ("last", "mean"):
                if seen[name]["dtype"] != truth[name]["dtype"]:
                    raise Failure(
                        f"{where}: {name} is {seen[name]['dtype']}, expected "
                        f"{truth[name]['dtype']} (the dtype of output)."
                    )
            if not close(seen["last"], truth["last"]):
                _explain_last(as_tensor(seen["last"]), output, lengths, where)
            if not close(seen["mean"], truth["mean"]):
                _explain_mean(
                    as_tensor(seen["mean"]), as_tensor(truth["mean"]), output, lengths, where
                )
            if not close(seen["gradient"], truth["gradient"]):
                raise Failure(
                    f"{where}: the gradient with respect to output differs from running each "
                    "sequence alone (it must be 0 on the padding)."
                )
            if seen["output unchanged"] is not True:
                raise Failure(
                    f"{where}: summarize changed `output` in place (it wrote into the padding): "
                    "the caller's tensor must stay as it was. Mask a copy instead (multiply by "
                    "the mask, or use where)."
                )
    (small, few), (large, many) = field(observed, "operations recorded")
    (small_batch, _), (large_batch, _) = expected["operations recorded"]
    if [small, large] != [small_batch, large_batch] or not {type(few), type(many)} <= {int}:
        raise Failure("the operation counts could not be read.")
    if many - few >= (large_batch - small_batch) // 2:
        raise Failure(
            f"summarize(minitorch, output, lengths) records {many} operations for {large_batch} "
            f"sequences, against {few} for {small_batch}: the work grows with the batch, so "
            "there is a loop over the samples. Index all rows at once and use a [batch, steps] "
            "mask (no loop over the batch)."
        )


def _explain_last(got: torch.Tensor, output: torch.Tensor, lengths: list, where: str) -> None:
    steps = output.shape[1]
    if all(n < steps for n in lengths) and torch.allclose(
        got, torch.stack([output[i, n] for i, n in enumerate(lengths)])
    ):
        raise Failure(
            f"{where}: last is the step after the last valid one: a sequence of length n ends at "
            "index n - 1."
        )
    if torch.allclose(got, output[:, -1]):
        raise Failure(f"{where}: last is the last padded step, not the last valid one.")
    raise Failure(f"{where}: last[i] must be output[i, lengths[i] - 1].")


def _explain_mean(
    got: torch.Tensor, want: torch.Tensor, output: torch.Tensor, lengths: list, where: str
) -> None:
    steps = output.shape[1]
    counts = torch.as_tensor(lengths, dtype=torch.float64).unsqueeze(1)
    if got.shape == want.shape and torch.allclose(got, want * counts / steps):
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
def sequence_classifier(observed: dict, expected: dict) -> None:
    """The scores ignore the padding and the rest of the batch; training reaches 90 %."""
    call = "SequenceClassifier(3, 16, 2)"
    if not observed["parameters"]:
        raise Failure(f"{call} has no parameters.")
    where = f"model(padded, lengths) with lengths = {observed['lengths']}"
    scores = as_tensor(observed["scores"])
    if not close(observed["scores with other padding"], observed["scores"], 1e-5):
        raise Failure(
            f"{where}: the scores change when the padding holds other values or the batch has "
            "more padding. Pack the batch (pack_padded_sequence with the lengths) and classify "
            "from the final hidden state h_n, which stops at each sequence's last valid step."
        )
    for i, alone in enumerate(observed["scores of each sequence alone"]):
        if not torch.allclose(as_tensor(alone), scores[i], rtol=1e-7, atol=1e-5):
            raise Failure(
                f"{where}: the scores of sequence {i} differ from its scores when it is run "
                "alone. Classify from h_n, the state at each sequence's own last step (the "
                "unpacked output is zero past a sequence's end)."
            )
    test_accuracy = observed["test accuracy after training"]
    if not (type(test_accuracy) is float and test_accuracy >= 0.9):
        raise Failure(
            f"after training {call} with Adam (lr {LEARNING_RATE}) for {MAX_EPOCHS} epochs of "
            f"{TRAIN_SIZE} fresh sequences, the test accuracy is {test_accuracy:.1%}, below "
            "90 %. Use a GRU, classify from the final hidden state, and check the packing."
        )


# -------------------------------------------------------------------------------------------------
# Exercise 5: FixedMLP
# -------------------------------------------------------------------------------------------------
def fixed_mlp(observed: dict, expected: dict) -> None:
    """Parameter count, state_dict keys (in order), outputs; then the training run."""
    for call, case, want in items(observed, expected):
        if call == "training":
            break
        count, truth = field(case, "parameter count"), want["parameter count"]
        if count != truth:
            raise Failure(
                f"{call} has {count} parameters, expected {truth}. Layers created in forward "
                "or kept in a plain Python list are not parameters of the model."
            )
        keys, truth = field(case, "state_dict keys"), want["state_dict keys"]
        if keys != truth:
            raise Failure(f"{call}: state_dict keys are {keys}, expected {truth}.")
        check_parameters(case["parameters"], want["parameters"], call)
        if not close(field(case, "output of a second call"), field(case, "output")):
            raise Failure(
                f"{call}: two calls on the same input give different results: forward must not "
                "create layers."
            )
        if not close(case["output"], want["output"]):
            raise Failure(
                f"{call}: the output differs from the expected stack of Linear + ReLU layers."
            )
        stop_if_failed(case)
    training = observed["training"]
    first, last = training["losses"]
    if not last < 0.8 * first:
        raise Failure(
            f"training FixedMLP(2, 16, 3, depth=2) for {training['steps']} Adam steps took the "
            f"loss from {first:.3f} to only {last:.3f}: are the layers the optimizer updates the "
            "ones forward uses?"
        )
    if not all(moved > 0 for moved in training["moved"]):
        raise Failure(
            "training FixedMLP left some parameters unchanged: forward must use every layer."
        )


# -------------------------------------------------------------------------------------------------
# Exercise 6: TreeNet
# -------------------------------------------------------------------------------------------------
def tree_net(observed: dict, expected: dict) -> None:
    """Output and gradients on every tree."""
    for _, case, want in model_cases(observed, expected):
        for where, seen, truth in items(case.get("trees", {}) | _failure(case), want["trees"]):
            if not close(seen["output"], truth["output"]):
                hint = (
                    " A leaf's encoding is tanh(leaf([value]))."
                    if truth["a leaf"]
                    else " For an operator node, put the left child's encoding first."
                )
                raise Failure(f"{where}: the output differs from the expected one.{hint}")
            check_gradients(seen["gradients"], truth["gradients"], where)
        stop_if_failed(case)


# -------------------------------------------------------------------------------------------------
# Exercise 7: predict_loading
# -------------------------------------------------------------------------------------------------
def _values(t: Any) -> torch.Tensor:
    return torch.as_tensor(t.detach().tolist(), dtype=torch.float64)


def classify_loading(target: str, lib: Any) -> str:
    """What loading Source(4, 8)'s state_dict into the target does, found by running it."""
    namespace: dict[str, Any] = {"nn": lib.nn}
    exec(given("dynamic_models")["SOURCE_MODEL"], namespace)
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
        same = torch.allclose(_values(source(x)), _values(model(x)))
    return "same_output" if same else "different_output"


@functools.cache
def loading_truth() -> dict[str, str]:
    """What each target does, on PyTorch and on minitorch alike."""
    return {
        key: observed(key, functools.partial(classify_loading, target))
        for key, target in given("dynamic_models")["TARGETS"].items()
    }


def predict_loading(predictions: dict, expected: dict) -> tuple[float, str]:
    """Exercise 7: an equal share of the points per target predicted right, the truth being
    what the target does on PyTorch and on minitorch (a difference between the two is a
    library regression: it stops the grader, it is never the student's failure)."""
    wrong = []
    for key, truth in loading_truth().items():
        guess = predictions.get(key) if isinstance(predictions, dict) else None
        if guess not in OUTCOMES:
            wrong.append(f"{key!r} ({guess!r} is not one of {', '.join(OUTCOMES)})")
        elif guess != truth:
            wrong.append(repr(key))
    return partial(
        wrong,
        len(loading_truth()),
        PREDICT_LOADING_POINTS,
        "Run them and read what load_state_dict says, or compare the outputs.",
    )
