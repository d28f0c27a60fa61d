"""Judges of notebook 4's hidden tests: they decide from the plain data that grade.py observed in
the student's kernel (NOTE [Hidden tests in two halves] in solutions/grading.py).

`observed` is what a hidden test saw of the student's answer, `expected` what the same test saw
of the reference answer. Ground truth comes from `expected` only (the plain program's peak and
gradients, the budget, the reference's peak): the student's kernel measured the same things, but
a forged copy of them would change nothing. The student's own figures are held to it with the
tolerances below; exercise 5's peaks are measured here, in the grading process.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from minitorch import memory, nn
from minitorch.utils.checkpoint import checkpoint_sequential
from solutions.grading import Failure
from solutions.judging import as_tensor
from solutions.memory import grade

LOSS_TOLERANCE = 1e-9  # relative, for losses computed by the same float64 program
GRADIENT_RTOL, GRADIENT_ATOL = 1e-7, 1e-10


def _close(got: Any, want: float, tolerance: float = LOSS_TOLERANCE) -> bool:
    return type(got) in (int, float) and abs(got - want) <= tolerance * max(1.0, abs(want))


def _number(value: Any) -> str:
    """A loss for messages: 6 significant digits, or what it is when it is not a number (a
    non-finite float arrives as its repr, e.g. 'nan')."""
    return f"{value:.6g}" if type(value) in (int, float) else str(value)


def check_gradients(got: dict, want: dict, where: str, hint: str) -> None:
    """Fail unless every gradient in `want` (name -> plain tensor) is in `got`, with the same
    shape and values within GRADIENT_RTOL / GRADIENT_ATOL."""
    got = got if isinstance(got, dict) else {}
    for name, expected in want.items():
        g, w = as_tensor(got.get(name)), as_tensor(expected)
        if g is None:
            raise Failure(f"{where}: {name}.grad is None, it should hold a gradient. {hint}")
        if g.shape != w.shape:
            raise Failure(
                f"{where}: {name}.grad has shape {list(g.shape)}, expected {list(w.shape)}. {hint}"
            )
        if not torch.allclose(g, w, rtol=GRADIENT_RTOL, atol=GRADIENT_ATOL):
            raise Failure(
                f"{where}: {name}.grad differs from the expected gradient "
                f"(largest difference {float((g - w).abs().max()):.3g}). {hint}"
            )


# -------------------------------------------------------------------------------------------------
# Exercise 1
# -------------------------------------------------------------------------------------------------
def saved_bytes(observed: dict, expected: dict) -> None:
    """Every figure must be the reference's; the feedback names the classic mistakes: the figure
    of the other `include_parameters`, and each saved tensor's bytes counted separately."""
    figures = observed.get("figures", {})
    for call, want in expected["figures"].items():
        got = figures.get(call)
        if got == want:
            continue
        if type(got) is not int:
            raise Failure(f"{call}: no figure was observed.")
        include = "include_parameters=True" in call
        other = call.replace(f"include_parameters={include}", f"include_parameters={not include}")
        if got == expected["figures"][other]:
            raise Failure(
                f"{call} returned {got:,}: that is the figure "
                + ("without" if include else "with")
                + " the parameters' storages. Parameters are the AccumulateGrad nodes' "
                "variables and saved leaves that require grad; count them only when "
                "include_parameters is True."
            )
        if got == expected["each saved tensor's own bytes"][call]:
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
# Exercise 2
# -------------------------------------------------------------------------------------------------
NODES = "graph nodes alive at the last optimizer.step(), more than at the first"


def train_epoch(observed: dict, expected: dict) -> None:
    """Memory on TRAIN_BATCHES batches no more than on 1 (peak, and what is left with the results
    held), no more graph nodes alive from step to step than the reference, Python floats, and
    the reference's losses."""
    n = grade.TRAIN_BATCHES
    peak_1, peak_n = observed["peak on 1 batch(es)"], observed[f"peak on {n} batch(es)"]
    if peak_n > peak_1 + 1024:
        raise Failure(
            f"while train_epoch ran, memory peaked at {peak_1:,} bytes on 1 batch but at "
            f"{peak_n:,} on {n} batches: each iteration leaves something alive that the next "
            "ones add to. Suspects: keeping loss tensors (and the graphs behind them) in a list "
            "or a running total, validation with grad mode on."
        )
    held_1, held_n = observed["held on 1 batch(es)"], observed[f"held on {n} batch(es)"]
    if held_n > held_1:
        raise Failure(
            f"after {n} batches, train_epoch (with its returned values still held) leaves "
            f"{held_n - held_1:,} more bytes allocated than after 1 batch: something keeps "
            "tensors or graphs alive from one iteration to the next. Suspects: adding up loss "
            "tensors, keeping the validation loss tensor, validation with grad mode on."
        )
    call = expected["call"]
    nodes = observed[NODES]
    if nodes > expected[NODES]:
        raise Failure(
            f"{call}: at the optimizer's last step(), {nodes:,} more graph nodes were alive "
            "than at the first: each iteration's graph stays alive. A running total of loss "
            "tensors (`total += loss`, even with .item() at the end) keeps a graph that reaches "
            "every iteration's loss; add `loss.item()`, and keep no tensor from one iteration "
            "to the next."
        )
    types = observed["types returned"]
    if types != expected["types returned"]:
        each = ", ".join(types["each validation loss"])
        raise Failure(
            f"{call}: the losses must be Python floats (use .item()), got "
            f"{types['mean training loss']} and a {types['validation losses']}"
            + (f" of {each}." if each else ".")
        )
    if len(observed["validation losses"]) != grade.TRAIN_BATCHES:
        raise Failure(
            f"{call}: one validation loss per batch, got {len(observed['validation losses'])}."
        )
    mean, want_mean = observed["mean training loss"], expected["mean training loss"]
    if not _close(mean, want_mean):
        raise Failure(
            f"{call}: mean training loss {_number(mean)}, expected {_number(want_mean)}. "
            "Train as before: zero_grad, forward, backward, step, and average the batch "
            "losses: each batch counts once, whatever its size (the last one is smaller)."
        )
    validation, want = observed["validation losses"], expected["validation losses"]
    if len(validation) != len(want) or not all(map(_close, validation, want)):
        raise Failure(
            f"{call}: validation losses [{', '.join(map(_number, validation))}], expected "
            f"[{', '.join(map(_number, want))}]. Measure the validation loss after each step."
        )


# -------------------------------------------------------------------------------------------------
# Exercise 3
# -------------------------------------------------------------------------------------------------
def evaluate(observed: dict, expected: dict) -> None:
    """With grad mode on and off: the reference's value, nothing left allocated, a peak at most
    10% (+ 4 KiB) above the reference's, and no .grad on any parameter."""
    call = expected["call"]
    for mode in ("on", "off"):
        got, want = observed[f"grad mode {mode}"], expected[f"grad mode {mode}"]
        where = f"{call} with grad mode {mode}"
        if not _close(got["value"], want["value"]):
            raise Failure(
                f"{where} returned {_number(got['value'])}, expected {_number(want['value'])}: "
                "the mean of the batches' mean squared errors, each batch counting once "
                "whatever its size."
            )
        if got["left"] > 0:
            raise Failure(
                f"{where} left {got['left']:,} bytes allocated after it returned: keep nothing."
            )
        if got["peak"] > 1.1 * want["peak"] + 4096:
            raise Failure(
                f"{where} needed {got['peak']:,} bytes at its peak; evaluating without "
                f"recording a graph needs {want['peak']:,}. Its ops still save tensors for "
                "backward: model.eval() and detach() do not stop that, and torch.no_grad() is "
                "PyTorch's switch, not minitorch's."
            )
        if got["parameters with a .grad"]:
            raise Failure(f"{where}: some parameter got a .grad; evaluation computes no gradients.")


# -------------------------------------------------------------------------------------------------
# Exercise 4
# -------------------------------------------------------------------------------------------------
def checkpoint(observed: dict, expected: dict) -> None:
    """The plain step's gradients, a peak at most 0.8x the plain step's and at most 10% (+ 4 KiB)
    above the reference's, the parameters' gradients again when the input is data, and the right
    gradients for a two-input function."""
    where = grade.CHECKPOINT_WHERE
    got, plain = observed["checkpointed step"], expected["plain step"]
    hint = "Recompute fn on detached inputs under enable_grad and backward through it."
    check_gradients(got["gradients"], plain["gradients"], where, hint)
    peak, plain_peak = got["peak"], plain["peak"]
    reference_peak = expected["checkpointed step"]["peak"]
    if not (peak <= 0.8 * plain_peak and peak <= 1.1 * reference_peak + 4096):
        raise Failure(
            f"in {where}, the peak was {peak:,} bytes; without checkpointing it is "
            f"{plain_peak:,} and a checkpoint that keeps only each segment's input needs about "
            f"{reference_peak:,}. Your checkpoint still keeps the activations inside fn alive "
            "until backward."
        )
    parameters = {k: v for k, v in plain["gradients"].items() if k.startswith("parameter")}
    check_gradients(
        observed["checkpointed step on data"]["gradients"],
        parameters,
        f"{where}, on data that does not require grad",
        "When no input requires grad, apply the Function to copies that do.",
    )
    check_gradients(
        observed["two inputs"]["gradients"],
        expected["two inputs"]["plain gradients"],
        grade.TWO_INPUTS,
        "Return one gradient per input.",
    )


# -------------------------------------------------------------------------------------------------
# Exercise 5
# -------------------------------------------------------------------------------------------------
def measured_peaks(model: nn.Sequential, x: Any) -> list[int]:
    """The measured peak of a checkpointed step for every number of segments, 1 to len(model)
    (this is exercise 5's answer: it lives here, never in the kernel half a sandbox holds)."""
    peaks = []
    for segments in range(1, len(model) + 1):
        model.zero_grad()
        peak, _ = grade.measure_peak(
            lambda s=segments: (
                checkpoint_sequential(model, s, x, use_reentrant=False).sum().backward()
            ),
        )
        peaks.append(peak)
    model.zero_grad()
    return peaks


@functools.cache
def segment_peaks(case: tuple) -> tuple[int, ...]:
    """The measured peak for every number of segments of one case. Peaks depend on shapes only
    (exact byte counts), so they are measured once per grading process, on a model of the
    case's shapes."""
    model, x = grade.segment_case(0, *case)
    with memory.track():
        return tuple(measured_peaks(model, x))


def best_segments(observed: dict, expected: dict) -> None:
    """The choice's measured peak is within 0.5% of the lowest, and no fewer segments need as
    little (the statement's tie rule)."""
    for case in grade.SEGMENT_CASES:
        call, depth = grade.segment_call(*case), case[1]
        got = observed.get(call)
        if type(got) is not int or not 1 <= got <= depth:
            raise Failure(f"{call} returned {got!r}: a number of segments from 1 to {depth}.")
        peaks = segment_peaks(case)
        best, mine = min(peaks), peaks[got - 1]
        table = ", ".join(f"{s}: {p / 2**20:.3f}" for s, p in enumerate(peaks, start=1))
        if mine > 1.005 * best:
            raise Failure(
                f"{call} returned {got}, whose measured peak is {mine:,} bytes; the best "
                f"choice needs {best:,}. Measured peaks in MiB per number of segments: {table}. "
                "Measure the peak of forward and backward together, for every number of "
                "segments from 1 to len(model)."
            )
        fewer = [s for s in range(1, got) if peaks[s - 1] <= mine]
        if fewer:
            raise Failure(
                f"{call} returned {got}, but {fewer[0]} segments need no more memory "
                f"({peaks[fewer[0] - 1]:,} bytes, against {mine:,}): on ties, return the "
                f"fewest segments. Measured peaks in MiB per number of segments: {table}."
            )


# -------------------------------------------------------------------------------------------------
# Exercise 6
# -------------------------------------------------------------------------------------------------
def step_within_budget(observed: dict, expected: dict) -> None:
    """For each batch: a peak within the budget, and the full batch's gradients."""
    for case, want in expected.items():
        got, call = observed[case], want["call"]
        if got["peak"] > want["budget"]:
            raise Failure(
                f"{call}: the peak was {got['peak']:,} bytes, over the budget. Use micro-batches "
                "small enough, and keep no graph of one micro-batch alive while the next one "
                "runs."
            )
        check_gradients(
            got["gradients"],
            want["full batch's gradients"],
            call,
            "Start from gradients reset to None and weight each micro-batch's mean loss by "
            "its share of the batch (len(x) / len(inputs)): the last one may be smaller.",
        )


# -------------------------------------------------------------------------------------------------
# Exercise 7
# -------------------------------------------------------------------------------------------------
def truncated_bptt(observed: dict, expected: dict) -> None:
    """The reference's losses and gradients for every (length, k), and a peak that does not grow
    with the length of the sequence."""
    for call, want in expected["runs"].items():
        got = observed["runs"][call]
        if not _close(got["loss"], want["loss"]):
            raise Failure(
                f"{call} returned {_number(got['loss'])}, expected the sum of the step losses "
                f"{_number(want['loss'])}."
            )
        check_gradients(
            got["gradients"],
            want["gradients"],
            call,
            "Gradients must flow back through the k steps of each chunk and stop at the "
            "chunk's start: backward after every k steps and after the last, detach right "
            "after each backward, and start from gradients reset to None.",
        )
    peaks = observed["peak with k=4 on this many steps"]
    short, long = (str(steps) for steps in grade.BPTT_PEAK_STEPS)
    if peaks[long] > 1.15 * peaks[short] + 2048:
        raise Failure(
            f"with k=4, the peak was {peaks[short]:,} bytes on {short} steps but "
            f"{peaks[long]:,} on {long}: memory grows with the sequence. The graph of each "
            "chunk must be freed (by its backward) before the next chunk runs."
        )
    nodes, want_nodes = observed[grade.BPTT_NODES], expected[grade.BPTT_NODES]
    if type(nodes) is not int or nodes > want_nodes:
        raise Failure(
            f"{grade.BPTT_NODES_CALL}: {nodes} more graph nodes were alive when the last chunk "
            "started than when the second did: every chunk's graph stays reachable, and it "
            "grows with the sequence (backward freed the saved tensors, not the nodes). A "
            "running total of loss tensors (`total = total + chunk_loss`, even with .item() at "
            "the end) keeps them all: add `chunk_loss.item()` to a float after each backward."
        )


# -------------------------------------------------------------------------------------------------
# Exercise 8
# -------------------------------------------------------------------------------------------------
PACK = "pack and unpack called directly"
HALF_ERROR = 1e-3  # float16 keeps about 3 decimal digits; the packed values lie in [-1, 1]


def _hooked_mlp(where: str, got: dict, plain: dict) -> None:
    """One MLP: saved bytes and bytes held at most 0.6x of the plain graph's, gradients of the
    model's dtype within a relative error of 1e-2."""
    if got["saved"] > 0.6 * plain["saved"]:
        raise Failure(
            f"on {where}, the graph saves {got['saved']:,} bytes with your hooks, "
            f"{plain['saved']:,} without: at most 0.6x is expected. The pack hook must return "
            "only a half-precision copy (and small things such as the dtype), and one copy per "
            "tensor: the same tensor is often packed twice (one op's output, the next op's "
            "input)."
        )
    if got["held"] > 0.6 * plain["held"]:
        raise Failure(
            f"on {where}, the graph keeps {got['held']:,} bytes alive with your hooks, "
            f"{plain['held']:,} without: the pack hook still keeps the original tensors alive "
            "somewhere."
        )
    for name, want in plain["gradients"].items():
        g, w = as_tensor(got["gradients"].get(name)), as_tensor(want)
        if g is None:
            raise Failure(f"on {where}: {name}.grad is None after backward.")
        dtype, want_dtype = got["gradient dtypes"].get(name), plain["gradient dtypes"][name]
        if dtype != want_dtype:
            raise Failure(f"on {where}: {name}.grad is {dtype}, expected {want_dtype}.")
        error = float((g - w).norm() / w.norm().clamp_min(1e-30)) if g.shape == w.shape else 1.0
        if not error < 1e-2:
            raise Failure(
                f"on {where}: {name}.grad has relative error {error:.3g} (at most 1e-2 is "
                "expected). Unpack back to the original dtype; store float16, not less."
            )


def _pack_behaviour(got: dict, want: dict) -> None:
    """pack keeps a leaf as it is, makes one float16 copy of another tensor, reuses it, keeps
    the original alive no longer than it lives; unpack gives the original dtype back."""
    leaf_bytes = got["bytes a leaf's pack allocates"]
    if leaf_bytes > want["bytes a leaf's pack allocates"]:
        raise Failure(
            f"pack(a leaf) allocated {leaf_bytes:,} bytes: keep a "
            "leaf (a parameter or an input) as it is, it is alive anyway; a copy of it is new "
            "memory."
        )
    if not got["unpack(pack(leaf)) is the leaf's storage"]:
        raise Failure("unpack(pack(leaf)) must give the leaf itself back (pack keeps leaves).")
    if got["dtype unpack gives back"] != want["dtype unpack gives back"]:
        raise Failure(
            f"unpack(pack(t)) for a {want['dtype unpack gives back']} tensor t gave "
            f"{got['dtype unpack gives back']}: unpack must give the tensor back in its "
            "original dtype."
        )
    error = got["largest error of the unpacked values"]
    if error is None or not error <= HALF_ERROR:
        raise Failure(
            f"unpack(pack(t)) differs from t by up to {error}: pack must keep a float16 copy "
            "of the values, and unpack give them back."
        )
    size, copy = want["bytes of the float64 tensor"], want["bytes its first pack allocates"]
    first = got["bytes its first pack allocates"]
    if first > copy:
        raise Failure(
            f"pack(t) for a float64 tensor t of {size:,} bytes allocated {first:,} bytes; one "
            f"float16 copy is {copy:,}."
        )
    again = got["bytes packing it again allocates"]
    if again > want["bytes packing it again allocates"]:
        raise Failure(
            f"packing the same tensor a second time allocated {again:,} more bytes: reuse the "
            "copy made the first time (remember it by the tensor's id)."
        )
    kept = got["bytes the packed values keep once the tensor is gone"]
    if kept > want["bytes the packed values keep once the tensor is gone"]:
        raise Failure(
            f"once a packed tensor of {size:,} bytes is gone, what pack returned still keeps "
            f"{kept:,} bytes alive, where its float16 copy is {copy:,}: never keep a strong "
            "reference to the original tensor."
        )


HELD = "tensor bytes the hooks hold after the first and the last step"


def _repeated_steps(what: str, got: dict, want: dict) -> None:
    """Once a step's graph is gone, the hooks hold no more tensor bytes than the reference's
    (none), and neither what they hold nor what stays allocated grows from step to step."""
    first_step = "after the first step"
    held = got[HELD]
    if held[-1] > held[0] or max(held) > max(want[HELD]):
        raise Failure(
            f"{what}: once each step's graph is gone, your hooks hold {held[0]:,} bytes of "
            f"tensors {first_step} and {held[-1]:,} after the last: they keep the copies of "
            "tensors that are gone. Forget a copy when its tensor dies "
            "(weakref.finalize(tensor, copies.pop, id(tensor), None)): the graph keeps its own "
            "reference to the copy while it needs it."
        )
    objects = got["objects the hooks hold after the first and the last step"]
    if objects[-1] > objects[0]:
        raise Failure(
            f"{what}: once each step's graph is gone, your hooks' state holds {objects[0]:,} "
            f"objects {first_step} and {objects[-1]:,} after the last: its entries pile up. "
            "Remove the entry of a tensor when the tensor dies (weakref.finalize)."
        )
    left = got["bytes allocated after the first and the last step"]
    if left[-1] > left[0]:
        raise Failure(
            f"{what}: {left[-1] - left[0]:,} more bytes are allocated after the last step than "
            f"{first_step}, each step's graph gone: something your hooks made outlives its "
            "step. Forget a copy when its tensor dies."
        )


def half_precision_hooks(observed: dict, expected: dict) -> None:
    """Exercise 8: the MLPs against their plain graphs, then what pack does, then what repeated
    steps leave behind."""
    for where, want in expected.items():
        if where.endswith("MLP"):
            _hooked_mlp(where, observed[where]["with your hooks"], want["without hooks"])
    _pack_behaviour(observed[PACK], expected[PACK])
    steps = f"{grade.HOOK_STEPS} training steps with one half_precision_hooks()"
    _repeated_steps(steps, observed[steps], expected[steps])
