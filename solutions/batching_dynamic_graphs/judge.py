"""Judges of notebook 6's hidden tests: they decide from the plain data that grade.py observed
(NOTE [Hidden tests in two halves] in solutions/grading.py). `expected` is what the same test
observed of the reference answer; exercise 7's truth is counted here with the reference
schedulers. Each judge raises Failure with the feedback for the student, or returns points.

Graph cases arrive as {"ops", "args", "signatures"} (signatures: the label the grader's
`signature_of` gave each node), taken from `expected`: the student's kernel built the same
graphs, but only the reference's copy is trusted.
"""

from __future__ import annotations

import math
from typing import Any

from solutions.batching_dynamic_graphs import grade, reference
from solutions.grading import Failure
from solutions.judging import partial

PREDICTION_POINTS = 3  # exercise 7's points: a test checks the notebook agrees
OPS_FACTOR, OPS_SLACK = 2, 10  # batched_forward may record at most 2 * the reference's ops + 10


# -------------------------------------------------------------------------------------------------
# Tensors as plain data: {"shape", "dtype", "values"}
# -------------------------------------------------------------------------------------------------
def nested(data: dict) -> Any:
    """A plain tensor as nested lists of its values (for messages)."""
    values, shape = list(data["values"]), data["shape"]
    if not shape:
        return values[0]
    for size in reversed(shape[1:]):
        values = [values[i : i + size] for i in range(0, len(values), size)]
    return values


def close(got: Any, want: dict, rtol: float = 1e-7, atol: float = 1e-9) -> bool:
    """Whether the plain tensor `got` has `want`'s shape and values (within the tolerance)."""
    if not isinstance(got, dict) or got.get("shape") != want["shape"]:
        return False
    return all(
        isinstance(g, float) and math.isclose(g, w, rel_tol=rtol, abs_tol=atol)
        if isinstance(w, float)
        else g == w
        for g, w in zip(got["values"], want["values"], strict=True)
    )


def _rounded(data: dict) -> list:
    return [round(v, 4) if isinstance(v, float) else v for v in data["values"]]


# -------------------------------------------------------------------------------------------------
# Exercise 1: signature
# -------------------------------------------------------------------------------------------------
def signature(observed: dict, expected: dict) -> None:
    """Equal signatures exactly for the nodes the reference batches: chosen pairs first, then
    every pair of nodes of each graph."""
    for what, together in expected["pairs"].items():
        same = observed["pairs"][what]
        if same != together:
            raise Failure(
                f"{what}: {'equal signatures expected' if together else 'these must not batch'}"
                f", but your signatures are {'equal' if same else 'different'}"
            )
    for name, case in expected["graphs"].items():
        mine, want, ops = observed["graphs"][name]["groups"], case["groups"], case["ops"]
        if len(mine) != len(want):
            raise Failure(f"on {name}: {len(mine)} signatures for {len(want)} nodes")
        for i in range(len(want)):
            for j in range(i):
                if (mine[i] == mine[j]) != (want[i] == want[j]):
                    verdict = "can" if want[i] == want[j] else "cannot"
                    raise Failure(
                        f"on {name}: nodes {j} ({ops[j]}) and {i} ({ops[i]}) {verdict} batch "
                        "together, but your signatures say otherwise"
                    )


# -------------------------------------------------------------------------------------------------
# Exercises 2 and 3: the schedulers
# -------------------------------------------------------------------------------------------------
def depths(args: list[list[int]]) -> list[int]:
    """Each node's depth: 0 without args, else 1 + the largest depth of its args."""
    depth: list[int] = []
    for node_args in args:
        depth.append(1 + max(depth[a] for a in node_args) if node_args else 0)
    return depth


def describe(graph: dict, batch: list[int]) -> str:
    """A batch for messages: its first ids with their ops."""
    shown = ", ".join(f"{i} ({graph['ops'][i]})" for i in list(batch)[:6])
    return f"[{shown}{', ...' if len(batch) > 6 else ''}]"


def check_schedule(batches: list[list[int]], graph: dict, where: str) -> None:
    """A valid schedule of `graph`: every node once, one signature per batch, every node after
    its args; else a Failure naming the first problem."""
    count = len(graph["ops"])
    ran = sorted(i for batch in batches for i in batch)
    if ran != list(range(count)):
        raise Failure(
            f"{where}: every node must run exactly once ({len(ran)} ids in your batches for "
            f"{count} nodes)"
        )
    done: set[int] = set()
    for number, batch in enumerate(batches):
        if not batch:
            raise Failure(f"{where}: batch {number} is empty")
        if len({graph["signatures"][i] for i in batch}) != 1:
            raise Failure(
                f"{where}: batch {number} {describe(graph, batch)} mixes nodes of different "
                "signatures: they cannot run as one call"
            )
        for i in batch:
            for a in graph["args"][i]:
                if a not in done:
                    raise Failure(
                        f"{where}: node {i} ({graph['ops'][i]}) runs in batch {number}, before "
                        f"node {a} it reads has run"
                    )
        done.update(batch)


def schedule_by_depth(observed: dict, expected: dict) -> None:
    """A valid schedule whose batches are exactly the (depth, signature) groups, in any order
    of the groups of one depth."""
    for name, graph in expected.items():
        where, batches, want = f"on {name}", observed[name]["batches"], graph["batches"]
        check_schedule(batches, graph, where)
        if len(batches) != len(want):
            raise Failure(
                f"{where}: {len(batches)} batches, but there are {len(want)} pairs (depth, "
                "signature)"
            )
        depth = depths(graph["args"])
        wanted = {frozenset(batch) for batch in want}
        for batch in batches:
            if frozenset(batch) not in wanted:
                raise Failure(
                    f"{where}: batch {describe(graph, batch)} is not one (depth, signature) "
                    f"group (its depths: {sorted({depth[i] for i in batch})})"
                )


def schedule_agenda(observed: dict, expected: dict) -> None:
    """A valid schedule, batch for batch the agenda's (ids within a batch in any order)."""
    for name, graph in expected.items():
        where, batches, want = f"on {name}", observed[name]["batches"], graph["batches"]
        check_schedule(batches, graph, where)
        for number, (got, wanted) in enumerate(zip(batches, want)):
            if sorted(got) != sorted(wanted):
                raise Failure(
                    f"{where}: batch {number} runs {describe(graph, got)}, but the agenda runs "
                    f"{describe(graph, sorted(wanted))} there (the ready nodes of the signature "
                    "with the lowest (average depth, matmul-like, first position))"
                )
        if len(batches) != len(want):
            raise Failure(f"{where}: {len(batches)} batches, the agenda makes {len(want)}")


# -------------------------------------------------------------------------------------------------
# Exercise 4: Gather
# -------------------------------------------------------------------------------------------------
def gather(observed: dict, expected: dict) -> None:
    """Forward (values and dtype), a recorded node, the scatter-add gradient, no change to the
    inputs or the incoming gradient, no memory shared with the source, no state kept between
    two backward calls, and gradcheck."""
    for where, want in expected.items():
        got = observed[where]
        forward = got["forward"]
        if not close(forward, want["forward"]):
            if "values" not in forward:
                raise Failure(f"{where}: return a minitorch tensor, not a {forward}")
            shown = nested(forward) if len(forward["values"]) < 40 else f"shape {forward['shape']}"
            raise Failure(f"{where}: forward gave {shown}, expected those rows of the source")
        if forward["dtype"] != want["forward"]["dtype"]:
            raise Failure(
                f"{where}: forward gave {forward['dtype']} rows of a {want['forward']['dtype']} "
                "source: keep the source's dtype"
            )
        if "records a node" not in want:  # the source without grad: forward only
            continue
        if not got["records a node"]:
            raise Failure(f"{where}: the output records no node for backward")
        gradient = got["gradient"]
        if gradient is None:
            raise Failure(f"{where}: no gradient reached the source")
        if not close(gradient, want["gradient"]):
            raise Failure(
                f"{where}: the source's gradient is {nested(gradient)}, expected "
                f"{nested(want['gradient'])} (each gathered row's gradient added into the row "
                "it came from: a row gathered twice receives the sum)"
            )
        if not got["inputs unchanged"]:
            raise Failure(
                f"{where}: Gather changed its inputs (the source or the index): forward and "
                "backward must only read them"
            )
        if not got["upstream gradient unchanged"]:
            raise Failure(f"{where}: backward changed the incoming gradient `grad` in place")
        if got["shares memory with the source"]:
            raise Failure(
                f"{where}: the output shares memory with the source; return a new tensor "
                "(index_select copies), or a change to one would silently change the other"
            )
        again = got["gradient after a second backward"]
        twice = want["gradient after a second backward"]
        if not close(again, twice):
            raise Failure(
                f"{where}: after a second backward (retain_graph=True) the source's gradient is "
                f"{nested(again)}, expected twice the first, {nested(twice)}: compute a new "
                "gradient on every call, keep no buffer from an earlier one"
            )
        if not got["gradcheck"]:
            raise Failure(f"{where}: gradcheck fails: backward disagrees with finite differences")


# -------------------------------------------------------------------------------------------------
# Exercise 5: batched_forward
# -------------------------------------------------------------------------------------------------
def batched_forward(observed: dict, expected: dict) -> None:
    """Per case: the per-sample model's predictions, one leaf call and at most one cell call
    per height, a number of ops that does not grow with the number of nodes, and the
    per-sample model's gradient for every parameter."""
    for where, want in expected.items():
        got = observed[where]
        dtype = want["predictions"]["dtype"]
        rtol, atol = (1e-9, 1e-10) if dtype == "float64" else (1e-4, 1e-5)
        if got["predictions"]["dtype"] != dtype:
            raise Failure(
                f"on {where}: predictions of dtype {got['predictions']['dtype']}, expected "
                f"{dtype}: make the leaves' values with the model's dtype"
            )
        if not close(got["predictions"], want["predictions"], rtol=rtol, atol=atol):
            raise Failure(
                f"on {where}: predictions {_rounded(got['predictions'])}, the per-sample model "
                f"gives {_rounded(want['predictions'])}"
            )
        calls, height = got["calls"], want["height"]
        if calls["leaf"] > 1 or calls["cell"] > height:
            raise Failure(
                f"on {where}: model.leaf was called {calls['leaf']} times and model.cell "
                f"{calls['cell']} times; batched, that is once and at most once per height "
                f"({height})"
            )
        limit = OPS_FACTOR * want["ops recorded"] + OPS_SLACK
        if got["ops recorded"] > limit:
            raise Failure(
                f"on {where}: {got['ops recorded']} ops were recorded, but a few per height are "
                f"enough (at most {limit} here): gather, cat and add the rows of a whole level "
                "with one op each, not one op per tree node"
            )
        for name, wanted in want["gradients"].items():
            grad = got["gradients"][name]
            if wanted is None:  # unused by these trees (only leaves): no gradient, or zeros
                if grad is not None and any(v != 0 for v in grad["values"]):
                    raise Failure(
                        f"on {where}: {name} is not used by these trees, yet has a gradient"
                    )
                continue
            if grad is None:
                raise Failure(f"on {where}: no gradient reached {name}")
            if not close(grad, wanted, rtol=rtol, atol=atol):
                raise Failure(f"on {where}: the gradient of {name} differs from the per-sample one")


# -------------------------------------------------------------------------------------------------
# Exercise 6: tree_speedup
# -------------------------------------------------------------------------------------------------
SPEEDUP_TOLERANCE = 0.05  # relative: the grader's clock is exact, this only absorbs rounding


def speedup_ratios(trees: int) -> dict[str, float]:
    """The ratios the stand-ins give on the grader's clock (NOTE [Timing on a loaded machine] in
    grade.py): the exercise's, and those of the mistakes it must tell apart."""
    forward, backward = grade.FORWARD_PER_TREE * trees, grade.BACKWARD_PER_TREE * trees
    at_once, at_once_backward = grade.BATCHED_FORWARD, grade.BATCHED_BACKWARD
    return {
        "forward and backward": (forward + backward) / (at_once + at_once_backward),
        "forward only": forward / at_once,
        "backward only": backward / at_once_backward,
        "batched forward only": (forward + backward) / at_once,
    }


def tree_speedup(observed: dict, expected: dict) -> None:
    """The student's ratio is the stand-ins' forward-and-backward ratio on the grader's clock
    (within rounding); a ratio that is the forward-only or backward-only one is named."""
    got, trees = observed["ratio"], observed["trees"]
    if not isinstance(got, float) or not math.isfinite(got) or got <= 0:
        raise Failure(f"your ratio is {got}: return per-sample time / batched time, a number")
    ratios = speedup_ratios(trees)

    def near(value: float) -> bool:
        return abs(got / value - 1) < SPEEDUP_TOLERANCE

    if near(ratios["forward and backward"]):
        return
    if near(ratios["forward only"]):
        raise Failure(
            f"your ratio {got:.2f} is what the forward passes alone give: time a training step, "
            "the forward pass and `.sum().backward()`, on both sides"
        )
    if near(ratios["backward only"]):
        raise Failure(
            f"your ratio {got:.2f} is what the backward passes alone give: start the clock before "
            "the forward pass, on both sides"
        )
    if near(ratios["batched forward only"]):
        raise Failure(
            f"your ratio {got:.2f} is what a per-sample training step against the batched forward "
            "pass alone gives: time the batched model's `.sum().backward()` too"
        )
    if got <= 2:
        raise Failure(
            f"your ratio is {got:.2f}, but the batched model is far faster than the per-sample "
            f"loop here: return per-sample time / batched time, and time forward and backward "
            f"of all {trees} trees in both"
        )
    raise Failure(
        f"your ratio {got:.2f} is not what the grader's models cost: time the per-sample loop "
        "over all the trees and the batched model, forward and backward, with nothing else "
        "inside the timing, and use the best time of each"
    )


# -------------------------------------------------------------------------------------------------
# Exercise 7: predict_calls (partial credit)
# -------------------------------------------------------------------------------------------------
LENGTHS = (1, 2, 3, 4)
# Scenario -> (the samples of each flush, the scheduler): what each snippet of SCENARIOS does.
FLUSHES = {
    "a": ([[0, 1, 2, 3]], "agenda"),
    "b": ([[0], [1], [2], [3]], "agenda"),
    "c": ([[0, 1], [2, 3]], "agenda"),
    "d": ([[0, 1, 2], [3]], "agenda"),
    "e": ([[0, 1, 2, 3]], "depth"),
}


def calls_of(scenario: str) -> int:
    """The batched calls scenario `scenario` makes, counted with the reference schedulers:
    each flush scheduled on its own (the samples of one flush never read another flush's
    nodes)."""
    flushes, scheduler = FLUSHES[scenario]
    schedule = reference.schedule_agenda if scheduler == "agenda" else reference.schedule_by_depth
    total = 0
    for samples in flushes:
        nodes = reference.sequence_graph([LENGTHS[s] for s in samples])
        total += len(schedule(nodes, reference.signature))
    return total


def predict_calls(observed: dict, expected: dict) -> tuple[float, str]:
    """An equal share of the points per scenario whose number of calls is right."""
    wrong = [repr(key) for key in reference.SCENARIOS if observed[key] != calls_of(key)]
    hint = "Build those graphs with sequence_graph and schedule each flush yourself."
    return partial(wrong, len(reference.SCENARIOS), PREDICTION_POINTS, hint)
