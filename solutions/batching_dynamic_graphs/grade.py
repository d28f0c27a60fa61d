"""Graders of notebook 6, "batching dynamic graphs": signatures, schedulers, gather, a batched
tree model, its measured speed-up and the cost of reading values mid-graph.

Each grader runs the student's answer on fresh cases (random per-sample graphs, sequence graphs
of random lengths, random expression trees and models) and compares it with the reference (the
notebook's own answer cells) or with PyTorch's `index_add`. Exercises that build on earlier ones
get the reference versions of those: the schedulers are called with the reference `signature`,
the batched model with the reference `Gather`, and the speed-up with the reference batched
model. A mistake costs only its own exercise. Pass `seed=` to make the random cases
reproducible.
"""

from __future__ import annotations

import random
from typing import Any

import torch

import minitorch
from solutions.batching_dynamic_graphs import reference
from solutions.grading import (
    Failure,
    call_student,
    check_callable,
    expect,
    grader,
    partial_credit,
    predictions_for,
)

F64 = torch.float64
PREDICTION_POINTS = 3  # exercise 7's points: a test checks the notebook agrees


# -------------------------------------------------------------------------------------------------
# Graphs
# -------------------------------------------------------------------------------------------------
def random_graph(rng: random.Random, samples: int = 4) -> list:
    """Per-sample DAGs of a few ops each: inputs of two widths, shared parameters, ops with
    attributes, two-argument ops, reductions. Similar samples, so that many nodes batch."""
    nodes: list = []
    add = reference.add_node
    for sample in range(samples):
        mine = [add(nodes, sample, "input", shape=(rng.choice((4, 4, 6)),))]
        if rng.random() < 0.5:
            mine.append(add(nodes, sample, "input", shape=(4,)))
        for _ in range(rng.randint(4, 9)):
            a = mine[-1] if rng.random() < 0.6 else rng.choice(mine)
            shape = nodes[a].shape
            kind = rng.choice(("tanh", "linear", "linear", "add", "cat", "pow", "sum"))
            if kind == "sum" and shape == ():
                kind = "tanh"
            if kind in ("cat", "add") and shape == ():
                kind = "linear"
            if kind == "tanh":
                mine.append(add(nodes, sample, "tanh", [a], shape))
            elif kind == "linear":
                param = rng.choice(("W", "V"))
                mine.append(add(nodes, sample, "linear", [a], (4,), param=param))
            elif kind == "pow":
                mine.append(add(nodes, sample, "pow", [a], shape, attrs=(rng.choice((2, 3)),)))
            elif kind == "sum":
                mine.append(add(nodes, sample, "sum", [a], ()))
            else:
                b = rng.choice(mine)
                if nodes[b].shape == ():
                    b = a
                if kind == "add":
                    mine.append(add(nodes, sample, "add", [a, b], shape))
                else:
                    width = nodes[a].shape[0] + nodes[b].shape[0]
                    mine.append(add(nodes, sample, "cat", [a, b], (width,), attrs=(0,)))
    return nodes


def _graphs(seed: int) -> list[tuple[str, list]]:
    rng = random.Random(seed)
    graphs = [("sequence_graph([1, 2, 3])", reference.sequence_graph([1, 2, 3]))]
    lengths = [rng.randint(1, 6) for _ in range(rng.randint(3, 6))]
    graphs.append((f"sequence_graph({lengths})", reference.sequence_graph(lengths)))
    same = [rng.randint(2, 4)] * 3
    graphs.append((f"sequence_graph({same})", reference.sequence_graph(same)))
    for number in range(4):
        graphs.append((f"random graph {number}", random_graph(rng, rng.randint(2, 5))))
    return graphs


def _describe(nodes: list, batch: list) -> str:
    shown = ", ".join(f"{i} ({nodes[i].op})" for i in list(batch)[:6])
    return f"[{shown}{', ...' if len(batch) > 6 else ''}]"


def _check_schedule(got: Any, nodes: list, where: str) -> list[list[int]]:
    """The student's batches are a valid schedule: every node once, one signature per batch,
    every node after its args."""
    expect(isinstance(got, list), f"{where}: return a list of batches, not {type(got).__name__}")
    batches = []
    for batch in got:
        expect(
            isinstance(batch, (list, tuple)) and all(isinstance(i, int) for i in batch),
            f"{where}: each batch must be a list of node ids (ints), not {batch!r:.60}",
        )
        batches.append(list(batch))
    ran = sorted(i for batch in batches for i in batch)
    expect(
        ran == list(range(len(nodes))),
        f"{where}: every node must run exactly once ({len(ran)} ids in your batches for "
        f"{len(nodes)} nodes)",
    )
    done: set[int] = set()
    for number, batch in enumerate(batches):
        expect(batch, f"{where}: batch {number} is empty")
        signatures = {reference.signature(nodes[i], nodes) for i in batch}
        expect(
            len(signatures) == 1,
            f"{where}: batch {number} {_describe(nodes, batch)} mixes nodes of different "
            "signatures: they cannot run as one call",
        )
        for i in batch:
            for a in nodes[i].args:
                expect(
                    a in done,
                    f"{where}: node {i} ({nodes[i].op}) runs in batch {number}, before node {a} "
                    "it reads has run",
                )
        done.update(batch)
    return batches


# -------------------------------------------------------------------------------------------------
# Exercise 1: signature
# -------------------------------------------------------------------------------------------------
def _pairs() -> tuple[list, list[tuple[int, int, bool, str]]]:
    """A graph and pairs (i, j, batch together?, what the pair tests)."""
    nodes: list = []
    add = reference.add_node
    a0, a1 = add(nodes, 0, "input", shape=(4,)), add(nodes, 1, "input", shape=(4,))
    c0 = add(nodes, 0, "input", shape=(6,))
    t0, t1 = add(nodes, 0, "tanh", [a0], (4,)), add(nodes, 1, "tanh", [a1], (4,))
    g1 = add(nodes, 1, "sigmoid", [a1], (4,))
    w0, v1 = add(nodes, 0, "linear", [a0], (4,), "W"), add(nodes, 1, "linear", [a1], (4,), "V")
    w1 = add(nodes, 1, "linear", [a1], (4,), "W")
    p0, p1 = (
        add(nodes, 0, "pow", [a0], (4,), attrs=(2,)),
        add(nodes, 1, "pow", [a1], (4,), attrs=(3,)),
    )
    s0, s1 = add(nodes, 0, "sum", [a0], ()), add(nodes, 0, "sum", [c0], ())
    x0, x1 = (
        add(nodes, 0, "cat", [a0, c0], (10,), attrs=(0,)),
        add(nodes, 0, "cat", [c0, a0], (10,), attrs=(0,)),
    )
    pairs = [
        (t0, t1, True, "tanh of the same shape in two samples"),
        (w0, w1, True, "linear W of the same shape in two samples"),
        (a0, a1, True, "two inputs of the same shape"),
        (t1, g1, False, "tanh and sigmoid (different ops)"),
        (w0, v1, False, "linear with parameter W and linear with parameter V"),
        (p0, p1, False, "pow with attrs (2,) and pow with attrs (3,)"),
        (s0, s1, False, "sum over an argument of shape (4,) and one of shape (6,)"),
        (a0, c0, False, "inputs of shapes (4,) and (6,)"),
        (x0, x1, False, "cat of shapes (4,), (6,) and cat of shapes (6,), (4,)"),
    ]  # fmt: skip
    return nodes, pairs


@grader("signature")
def signature(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 1: equal signatures exactly for the nodes the reference batches."""
    check_callable(answer, "signature")

    def sig(node: Any, nodes: list) -> Any:
        value = call_student(answer, node, nodes, call=f"signature(node {node.id}, nodes)")
        try:
            hash(value)
        except TypeError:
            raise Failure(
                f"signature returned an unhashable {type(value).__name__}: use a tuple, so "
                "that a scheduler can group nodes in a dict"
            ) from None
        return value

    nodes, pairs = _pairs()
    for i, j, together, what in pairs:
        same = sig(nodes[i], nodes) == sig(nodes[j], nodes)
        expect(
            same == together,
            f"{what}: {'equal signatures expected' if together else 'these must not batch'}, "
            f"but your signatures are {'equal' if same else 'different'}",
        )
    for name, nodes in _graphs(seed):
        mine = [sig(n, nodes) for n in nodes]
        want = [reference.signature(n, nodes) for n in nodes]
        for i in range(len(nodes)):
            for j in range(i):
                if (mine[i] == mine[j]) != (want[i] == want[j]):
                    verdict = "can" if want[i] == want[j] else "cannot"
                    raise Failure(
                        f"on {name}: nodes {j} ({nodes[j].op}) and {i} ({nodes[i].op}) "
                        f"{verdict} batch together, but your signatures say otherwise"
                    )


# -------------------------------------------------------------------------------------------------
# Exercise 2: schedule_by_depth
# -------------------------------------------------------------------------------------------------
@grader("schedule_by_depth")
def schedule_by_depth(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 2: a valid schedule with exactly the (depth, signature) groups."""
    check_callable(answer, "schedule_by_depth")
    for name, nodes in _graphs(seed):
        call = f"schedule_by_depth(nodes, signature_of) on {name}"
        got = call_student(answer, nodes, reference.signature, call=call)
        batches = _check_schedule(got, nodes, f"on {name}")
        want = reference.schedule_by_depth(nodes, reference.signature)
        depth = reference.node_depths(nodes)
        expect(
            len(batches) == len(want),
            f"on {name}: {len(batches)} batches, but there are {len(want)} pairs (depth, "
            "signature)",
        )
        wanted = {frozenset(b) for b in want}
        for batch in batches:
            expect(
                frozenset(batch) in wanted,
                f"on {name}: batch {_describe(nodes, batch)} is not one (depth, signature) "
                f"group (its depths: {sorted({depth[i] for i in batch})})",
            )


# -------------------------------------------------------------------------------------------------
# Exercise 3: schedule_agenda
# -------------------------------------------------------------------------------------------------
@grader("schedule_agenda")
def schedule_agenda(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 3: a valid schedule, batch for batch the agenda's."""
    check_callable(answer, "schedule_agenda")
    for name, nodes in _graphs(seed):
        call = f"schedule_agenda(nodes, signature_of) on {name}"
        got = call_student(answer, nodes, reference.signature, call=call)
        batches = _check_schedule(got, nodes, f"on {name}")
        want = reference.schedule_agenda(nodes, reference.signature)
        for number, (g, w) in enumerate(zip(batches, want)):
            expect(
                sorted(g) == sorted(w),
                f"on {name}: batch {number} runs {_describe(nodes, g)}, but the agenda runs "
                f"{_describe(nodes, sorted(w))} there (the ready nodes of the signature with "
                "the lowest (average depth, matmul-like, first position))",
            )
        expect(
            len(batches) == len(want),
            f"on {name}: {len(batches)} batches, the agenda makes {len(want)}",
        )


# -------------------------------------------------------------------------------------------------
# Exercise 4: Gather
# -------------------------------------------------------------------------------------------------
def _tensor(values: torch.Tensor, requires_grad: bool = False) -> Any:
    return minitorch.tensor(values.tolist(), dtype=values.dtype, requires_grad=requires_grad)


@grader("Gather")
def gather(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 4: forward against index_select, backward against index_add, gradcheck."""
    expect(
        isinstance(answer, type),
        f"expected a class (a minitorch.autograd.Function), got {type(answer).__name__}",
    )
    expect(
        issubclass(answer, minitorch.autograd.Function),
        "Gather must be a class derived from minitorch.autograd.Function.",
    )
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    cases = [(3, 2, [2, 0, 2]), (4, 3, [1, 1, 1, 1, 1]), (5, 1, [4])]
    for _ in range(3):
        n, d = rng.randint(1, 6), rng.randint(1, 5)
        cases.append((n, d, [rng.randrange(n) for _ in range(rng.randint(1, 2 * n + 1))]))
    perm = list(range(5))
    rng.shuffle(perm)
    cases.append((5, 3, perm))  # as many rows as the source: shapes alone do not catch mistakes
    for n, d, rows in cases:
        where = f"source of shape [{n}, {d}], index {rows}"
        values = torch.randn(n, d, generator=gen, dtype=F64)
        index = torch.tensor(rows)
        source = _tensor(values, requires_grad=True)
        out = call_student(
            answer.apply, source, minitorch.tensor(rows), call=f"Gather.apply on a {where}"
        )
        expect(isinstance(out, minitorch.Tensor), f"{where}: return a tensor, not {out!r:.60}")
        want = values.index_select(0, index)
        expect(
            tuple(out.shape) == tuple(want.shape) and torch.allclose(out._data, want),
            f"{where}: forward gave {out.tolist()}, expected rows {rows} of the source",
        )
        expect(out.grad_fn is not None, f"{where}: the output records no node for backward")
        upstream = torch.randn(len(rows), d, generator=gen, dtype=F64)
        call_student(out.backward, _tensor(upstream), call=f"backward through Gather, {where}")
        expected = torch.zeros(n, d, dtype=F64).index_add_(0, index, upstream)
        expect(source.grad is not None, f"{where}: no gradient reached the source")
        expect(
            tuple(source.grad.shape) == (n, d) and torch.allclose(source.grad._data, expected),
            f"{where}: the source's gradient is {source.grad.tolist()}, expected "
            f"{expected.tolist()} (each gathered row's gradient added into the row it came "
            "from: a row gathered twice receives the sum)",
        )
        probe = _tensor(torch.randn(n, d, generator=gen, dtype=F64), requires_grad=True)
        index_t = minitorch.tensor(rows)
        passed = call_student(
            minitorch.autograd.gradcheck,
            lambda s, index_t=index_t: answer.apply(s, index_t),
            (probe,),
            call=f"gradcheck of Gather on a {where}",
        )
        expect(passed, f"{where}: gradcheck fails: backward disagrees with finite differences")
    plain = _tensor(torch.randn(3, 2, generator=gen, dtype=F64))
    out = call_student(
        answer.apply, plain, minitorch.tensor([1, 0]), call="Gather.apply on a source without grad"
    )
    expect(
        torch.allclose(out._data, plain._data[[1, 0]]),
        "a source that does not require grad: wrong rows",
    )


# -------------------------------------------------------------------------------------------------
# Exercise 5: batched_forward
# -------------------------------------------------------------------------------------------------
def _height(tree: Any) -> int:
    return 0 if tree.is_leaf else 1 + max(_height(tree.left), _height(tree.right))


def _count_calls(module: Any, counter: dict, key: str) -> None:
    forward = module.forward

    def counted(*args: Any) -> Any:
        counter[key] += 1
        return forward(*args)

    module.forward = counted


@grader("batched_forward")
def batched_forward(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 5: outputs and every parameter's gradient equal the per-sample model's,
    with one leaf call and one cell call per height."""
    check_callable(answer, "batched_forward")
    rng = random.Random(seed)
    gather_rows = reference.Gather.apply
    for number in range(4):
        trees, _ = reference.make_expression_trees(
            rng.randint(3, 12), max_depth=rng.randint(2, 5), seed=rng.randrange(10_000)
        )
        if number == 1:
            trees.append(reference.ExprTree(value=round(rng.uniform(-1, 1), 2)))
        if number == 3:
            trees = [reference.ExprTree(value=0.5), reference.ExprTree(value=-0.25)]
        where = f"{len(trees)} trees of heights {sorted({_height(t) for t in trees})}"
        minitorch.manual_seed(rng.randrange(2**31))
        model = reference.TreeModel(hidden=rng.randint(2, 6)).double()
        weights = _tensor(torch.randn(len(trees), generator=torch.Generator().manual_seed(number),
                                      dtype=F64))  # fmt: skip
        per_sample = minitorch.cat([model(t) for t in trees])
        (per_sample * weights).sum().backward()
        expected = {
            name: None if p.grad is None else p.grad._data.clone()
            for name, p in model.named_parameters()
        }
        model.zero_grad()
        calls = {"leaf": 0, "cell": 0}
        _count_calls(model.leaf, calls, "leaf")
        _count_calls(model.cell, calls, "cell")
        call = f"batched_forward(model, trees, gather) on {where}"
        got = call_student(answer, model, trees, gather_rows, call=call)
        expect(isinstance(got, minitorch.Tensor), f"on {where}: return a tensor, not {got!r:.60}")
        expect(
            tuple(got.shape) == (len(trees),),
            f"on {where}: shape {list(got.shape)}, expected [{len(trees)}]",
        )
        expect(
            torch.allclose(got._data, per_sample._data, rtol=1e-10, atol=1e-10),
            f"on {where}: predictions {[round(v, 4) for v in got.tolist()]}, the per-sample "
            f"model gives {[round(v, 4) for v in per_sample.tolist()]}",
        )
        heights = max(_height(t) for t in trees)
        expect(
            calls["leaf"] <= 1 and calls["cell"] <= heights,
            f"on {where}: model.leaf was called {calls['leaf']} times and model.cell "
            f"{calls['cell']} times; batched, that is once and at most once per height "
            f"({heights})",
        )
        loss = (got * weights).sum()
        call_student(loss.backward, call=f"backward through batched_forward on {where}")
        for name, p in model.named_parameters():
            want = expected[name]
            if want is None:  # unused by these trees (only leaves): no gradient, or zeros
                expect(
                    p.grad is None or not bool(p.grad._data.any()),
                    f"on {where}: {name} is not used by these trees, yet got a gradient",
                )
                continue
            expect(p.grad is not None, f"on {where}: no gradient reached {name}")
            expect(
                torch.allclose(p.grad._data, want, rtol=1e-9, atol=1e-10),
                f"on {where}: the gradient of {name} differs from the per-sample model's",
            )


# -------------------------------------------------------------------------------------------------
# Exercise 6: tree_speedup
# -------------------------------------------------------------------------------------------------
@grader("tree_speedup")
def tree_speedup(answer: Any) -> None:
    """Grade exercise 6: the student's ratio is a speed-up and agrees within a factor of 2
    with the grader's own measurements, taken right before and right after it with the same
    reference pieces."""
    check_callable(answer, "tree_speedup")
    trees, _ = reference.make_expression_trees(48, seed=11)
    minitorch.manual_seed(11)
    model = reference.TreeModel(hidden=16).double()
    tools = {"batched": reference.batched_forward, "gather": reference.Gather.apply}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a batched matmul's threads stall when another process runs
    try:
        before = reference.tree_speedup(model, trees, 5, **tools)
        got = call_student(
            lambda: answer(model, trees, 5, **tools),
            call="tree_speedup(model, trees, 5, batched, gather)",
        )
        after = reference.tree_speedup(model, trees, 5, **tools)
    finally:
        torch.set_num_threads(threads)
    expect(isinstance(got, float), f"return the ratio as a float, not {type(got).__name__}")
    low, high = min(before, after), max(before, after)  # the machine's load may change
    expect(
        got > 2,
        f"your ratio is {got:.2f}, but the batched model is about {high:.1f}x as fast as "
        "the per-sample loop here: return per-sample time / batched time, and time forward "
        "and backward of all the trees in both",
    )
    expect(
        low / 2 < got < high * 2,
        f"your ratio {got:.2f} is far from the grader's own measurements, {low:.2f} to "
        f"{high:.2f}: time the per-sample loop over all trees and the batched model, forward "
        "and backward, and use the best time of each",
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
    """The batched calls scenario `scenario` makes: each flush scheduled on its own (the
    samples of one flush never read another flush's nodes)."""
    flushes, scheduler = FLUSHES[scenario]
    schedule = reference.schedule_agenda if scheduler == "agenda" else reference.schedule_by_depth
    total = 0
    for samples in flushes:
        nodes = reference.sequence_graph([LENGTHS[s] for s in samples])
        total += len(schedule(nodes, reference.signature))
    return total


@grader("predict_calls")
def predict_calls(answer: Any) -> float:
    """Grade exercise 7 by counting the calls; returns the points: a fifth per right one."""
    predictions = predictions_for(answer, "predict_calls", reference.SCENARIOS, "scenario")
    wrong = []
    for key in reference.SCENARIOS:
        guess = predictions[key]
        expect(
            isinstance(guess, int) and not isinstance(guess, bool),
            f"scenario {key!r}: predict a number of calls (an int), not {guess!r}",
        )
        if guess != calls_of(key):
            wrong.append(repr(key))
    hint = "Build those graphs with sequence_graph and schedule each flush yourself."
    return partial_credit(wrong, len(reference.SCENARIOS), PREDICTION_POINTS, hint)
