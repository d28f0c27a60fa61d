"""The kernel half of notebook 6's hidden tests, "batching dynamic graphs": signatures,
schedulers, gather, a batched tree model, its measured speed-up and the cost of reading values
mid-graph (NOTE [Hidden tests in two halves] in solutions/grading.py).

Each hidden test builds its cases (per-sample graphs, sequence graphs of random lengths, random
expression trees and models), runs the student's answer on them and returns what it saw as plain
data; solutions/batching_dynamic_graphs/judge.py compares that with what the same test sees of
the reference answer. Nothing here imports the reference: what the tests share with the
notebook (the graph types, the tree model, the scenarios) comes from its locked cells through
`given`. Exercises that build on earlier ones get stand-ins that reveal nothing the student does
not already have, so that a mistake costs only its own exercise:
- the schedulers get a `signature_of` that looks each node up in a table of labels, filled while
  the grader built the graph (from the locked `op_and_param` on sequence graphs, from what the
  builder chose on random graphs);
- the batched model gets `index_rows`, minitorch's own gather (a locked cell);
- the speed-up gets stand-ins for both models whose forward and backward cost known times on
  a clock of the grader's (NOTE [Timing on a loaded machine]).
Pass `seed=` to make the random cases reproducible.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
import timeit
from collections.abc import Callable, Iterator
from typing import Any

import torch

import minitorch
from minitorch.autograd.watch import watch_ops
from solutions.grading import (
    Failure,
    call_student,
    check_callable,
    expect,
    hidden_test,
    predictions_for,
)
from solutions.reference_cells import given

ASSIGNMENT = "batching_dynamic_graphs"
F64 = torch.float64


def _given() -> dict[str, Any]:
    """The notebook's imports and locked cells: Node, add_node, sequence_graph, TreeModel, ..."""
    return given(ASSIGNMENT)


# -------------------------------------------------------------------------------------------------
# Graphs, each with a table of signature labels filled while it was built
# -------------------------------------------------------------------------------------------------
class Case:
    """A graph the schedulers run on, and the labels the grader's `signature_of` returns."""

    def __init__(self, name: str, nodes: list, labels: list) -> None:
        self.name = name
        self.nodes = nodes
        numbers: dict[Any, int] = {}
        firsts = [numbers.setdefault(label, len(numbers)) for label in labels]
        # Numbered from the last signature to appear down to 0, so that an order of the labels
        # is not the order of first positions that the agenda breaks its ties by.
        self.labels = [len(numbers) - 1 - number for number in firsts]

    def signature_of(self, node: Any, nodes: list) -> int:
        """The stand-in for the student's `signature`: a look-up of this graph's labels."""
        return self.labels[node.id]

    def describe(self) -> dict:
        """The graph as plain data: each node's op and args, and its signature label."""
        return {
            "ops": [node.op for node in self.nodes],
            "args": [list(node.args) for node in self.nodes],
            "signatures": self.labels,
        }


def random_graph(rng: random.Random, samples: int = 4) -> tuple[list, list]:
    """Per-sample DAGs of a few ops each: inputs of two widths, shared parameters, ops with
    attributes, two-argument ops, reductions. Similar samples, so that many nodes batch.

    Returns the nodes and, for each node, a label naming what the builder chose for it: the
    kind of op with its parameter or attribute and the widths it works on."""
    add = _given()["add_node"]
    nodes: list = []
    labels: list = []

    def made(label: tuple, node_id: int) -> int:
        labels.append(label)
        return node_id

    for sample in range(samples):
        width = rng.choice((4, 4, 6))
        mine = [made(("input", width), add(nodes, sample, "input", shape=(width,)))]
        if rng.random() < 0.5:
            mine.append(made(("input", 4), add(nodes, sample, "input", shape=(4,))))
        for _ in range(rng.randint(4, 9)):
            a = mine[-1] if rng.random() < 0.6 else rng.choice(mine)
            shape = nodes[a].shape
            kind = rng.choice(("tanh", "linear", "linear", "add", "cat", "pow", "sum"))
            if kind == "sum" and shape == ():
                kind = "tanh"
            if kind in ("cat", "add") and shape == ():
                kind = "linear"
            if kind == "tanh":
                mine.append(made(("tanh", shape), add(nodes, sample, "tanh", [a], shape)))
            elif kind == "linear":
                param = rng.choice(("W", "V"))
                node = add(nodes, sample, "linear", [a], (4,), param=param)
                mine.append(made(("linear", param, shape), node))
            elif kind == "pow":
                power = rng.choice((2, 3))
                node = add(nodes, sample, "pow", [a], shape, attrs=(power,))
                mine.append(made(("pow", power, shape), node))
            elif kind == "sum":
                mine.append(made(("sum", shape), add(nodes, sample, "sum", [a], ())))
            else:
                b = rng.choice(mine)
                if nodes[b].shape == ():
                    b = a
                other = nodes[b].shape
                if kind == "add":
                    node = add(nodes, sample, "add", [a, b], shape)
                else:
                    width = shape[0] + other[0]
                    node = add(nodes, sample, "cat", [a, b], (width,), attrs=(0,))
                mine.append(made((kind, shape, other), node))
    return nodes, labels


def sequence_case(lengths: list[int]) -> Case:
    """sequence_graph(lengths), labelled by the locked `op_and_param` (enough there: every
    node of one op and parameter has the same shapes)."""
    nodes = _given()["sequence_graph"](lengths)
    op_and_param = _given()["op_and_param"]
    return Case(f"sequence_graph({lengths})", nodes, [op_and_param(n, nodes) for n in nodes])


def graph_cases(seed: int) -> list[Case]:
    """The graphs every signature and scheduler test runs on."""
    rng = random.Random(seed)
    cases = [sequence_case([1, 2, 3])]
    cases.append(sequence_case([rng.randint(1, 6) for _ in range(rng.randint(3, 6))]))
    cases.append(sequence_case([rng.randint(2, 4)] * 3))
    for number in range(4):
        nodes, labels = random_graph(rng, rng.randint(2, 5))
        cases.append(Case(f"random graph {number}", nodes, labels))
    return cases


def boundary_cases(seed: int) -> list[Case]:
    """Schedules at their edges: a single node, one signature for every node, and ties in the
    agenda's priority (equal average depth: first position decides, and matrix products
    wait)."""
    given_ = _given()
    add = given_["add_node"]
    single: list = []
    add(single, 0, "input", shape=(4,))
    same, _ = random_graph(random.Random(seed), 3)
    # Equal average depths: tanh (first at position 3) runs before sigmoid (first at 4),
    # although sigmoid has more nodes and its nodes become ready first.
    ties: list = []
    inputs = [add(ties, sample, "input", shape=(4,)) for sample in range(3)]
    add(ties, 1, "tanh", [inputs[1]], (4,))
    add(ties, 0, "sigmoid", [inputs[0]], (4,))
    add(ties, 2, "sigmoid", [inputs[2]], (4,))
    matmul: list = []  # equal average depths: tanh runs first, the matrix product waits
    x = add(matmul, 0, "input", shape=(4,))
    add(matmul, 0, "linear", [x], (4,), param="W")
    y = add(matmul, 1, "input", shape=(4,))
    add(matmul, 1, "tanh", [y], (4,))
    op_and_param = given_["op_and_param"]
    return [
        Case("a graph of a single node", single, ["input"]),
        Case("a random graph where signature_of is the same for every node", same, [0] * len(same)),
        Case(
            "a tie: tanh and sigmoid at the same average depth",
            ties,
            [op_and_param(n, ties) for n in ties],
        ),
        Case(
            "a tie: linear W and tanh at the same average depth",
            matmul,
            [op_and_param(n, matmul) for n in matmul],
        ),
    ]


# -------------------------------------------------------------------------------------------------
# Exercise 1: signature
# -------------------------------------------------------------------------------------------------
def pair_cases() -> tuple[list, list[tuple[int, int, str]]]:
    """A graph and pairs of its nodes (i, j, what the pair tests)."""
    nodes: list = []
    add = _given()["add_node"]
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
        (t0, t1, "tanh of the same shape in two samples"),
        (w0, w1, "linear W of the same shape in two samples"),
        (a0, a1, "two inputs of the same shape"),
        (t1, g1, "tanh and sigmoid (different ops)"),
        (w0, v1, "linear with parameter W and linear with parameter V"),
        (p0, p1, "pow with attrs (2,) and pow with attrs (3,)"),
        (s0, s1, "sum over an argument of shape (4,) and one of shape (6,)"),
        (a0, c0, "inputs of shapes (4,) and (6,)"),
        (x0, x1, "cat of shapes (4,), (6,) and cat of shapes (6,), (4,)"),
    ]  # fmt: skip
    return nodes, pairs


def _signature_groups(answer: Callable, nodes: list, where: str) -> list[int]:
    """Node i's group: the number of the first node whose signature equals node i's."""
    groups: dict[Any, int] = {}
    numbers = []
    for node in nodes:
        value = call_student(answer, node, nodes, call=f"signature(node {node.id}, nodes)")
        try:
            numbers.append(groups.setdefault(value, len(groups)))
        except TypeError:
            raise Failure(
                f"signature returned an unhashable {type(value).__name__}: use a tuple, so "
                "that a scheduler can group nodes in a dict"
            ) from None
        except Exception as error:  # a student's value whose __eq__ or __hash__ fails
            raise Failure(f"{where}: comparing your signatures raised {error!r}") from None
    return numbers


@hidden_test("signature")
def signature(answer: Any, seed: int) -> dict:
    """Exercise 1: which nodes get equal signatures, for chosen pairs and on whole graphs."""
    check_callable(answer, "signature")
    nodes, pairs = pair_cases()
    groups = _signature_groups(answer, nodes, "on the pairs' graph")
    return {
        "pairs": {what: groups[i] == groups[j] for i, j, what in pairs},
        "graphs": {
            case.name: {
                "ops": [n.op for n in case.nodes],
                "groups": _signature_groups(answer, case.nodes, f"on {case.name}"),
            }
            for case in graph_cases(seed)
        },
    }


# -------------------------------------------------------------------------------------------------
# Exercises 2 and 3: the schedulers
# -------------------------------------------------------------------------------------------------
def _schedule(answer: Any, name: str, case: Case) -> list[list[int]]:
    """The student's batches for `case`, checked to be a list of lists of ints."""
    call = f"{name}(nodes, signature_of) on {case.name}"
    got = call_student(answer, case.nodes, case.signature_of, call=call)
    where = f"on {case.name}"
    expect(isinstance(got, list), f"{where}: return a list of batches, not {type(got).__name__}")
    batches = []
    for batch in got:
        expect(
            isinstance(batch, (list, tuple))
            and all(isinstance(i, int) and not isinstance(i, bool) for i in batch),
            f"{where}: each batch must be a list of node ids (ints), not {batch!r:.60}",
        )
        batches.append([int(i) for i in batch])
    return batches


def _observe_scheduler(answer: Any, name: str, seed: int) -> dict:
    check_callable(answer, name)
    return {
        case.name: {**case.describe(), "batches": _schedule(answer, name, case)}
        for case in [*graph_cases(seed), *boundary_cases(seed)]
    }


@hidden_test("schedule_by_depth")
def schedule_by_depth(answer: Any, seed: int) -> dict:
    """Exercise 2: the batches on each graph (judged: a valid schedule of (depth, signature)
    groups)."""
    return _observe_scheduler(answer, "schedule_by_depth", seed)


@hidden_test("schedule_agenda")
def schedule_agenda(answer: Any, seed: int) -> dict:
    """Exercise 3: the batches on each graph (judged: the agenda's, batch for batch)."""
    return _observe_scheduler(answer, "schedule_agenda", seed)


# -------------------------------------------------------------------------------------------------
# Exercise 4: Gather
# -------------------------------------------------------------------------------------------------
def _tensor(values: torch.Tensor, requires_grad: bool = False) -> Any:
    return minitorch.tensor(values.tolist(), dtype=values.dtype, requires_grad=requires_grad)


def _storage(t: Any) -> int:
    return t._data.untyped_storage().data_ptr()


def gather_cases(seed: int) -> list[tuple[int, int, list[int]]]:
    """(rows n, columns d, index): repeats, a single row, random ones, a permutation, and every
    row once in order (an index that could be answered by the source itself)."""
    rng = random.Random(seed)
    cases = [(3, 2, [2, 0, 2]), (4, 3, [1, 1, 1, 1, 1]), (5, 1, [4])]
    for _ in range(3):
        n, d = rng.randint(1, 6), rng.randint(1, 5)
        cases.append((n, d, [rng.randrange(n) for _ in range(rng.randint(1, 2 * n + 1))]))
    perm = list(range(5))
    rng.shuffle(perm)
    cases.append((5, 3, perm))  # as many rows as the source: shapes alone do not catch mistakes
    cases.append((4, 2, [0, 1, 2, 3]))
    return cases


def _observe_gather(answer: Any, n: int, d: int, rows: list[int], gen: torch.Generator) -> dict:
    """Forward, backward (twice, with retain_graph), what changed, and gradcheck, on one case."""
    where = f"source of shape [{n}, {d}], index {rows}"
    values = torch.randn(n, d, generator=gen, dtype=F64)
    upstream = torch.randn(len(rows), d, generator=gen, dtype=F64)
    source, index = _tensor(values, requires_grad=True), minitorch.tensor(rows)
    out = call_student(answer.apply, source, index, call=f"Gather.apply on a {where}")
    expect(isinstance(out, minitorch.Tensor), f"{where}: return a tensor, not {out!r:.60}")
    seen: dict[str, Any] = {
        "forward": out,
        "records a node": out.grad_fn is not None,
        "shares memory with the source": _storage(out) == _storage(source),
    }
    if out.grad_fn is not None:
        grad = _tensor(upstream)
        call = f"backward through Gather, {where}"
        call_student(lambda: out.backward(grad, retain_graph=True), call=call)
        seen["gradient"] = None if source.grad is None else source.grad.detach().clone()
        call_student(lambda: out.backward(grad), call=f"a second {call}")
        seen["gradient after a second backward"] = source.grad
        seen["upstream gradient unchanged"] = torch.equal(grad._data, upstream)
    seen["inputs unchanged"] = torch.equal(source._data, values) and index.tolist() == rows
    probe = _tensor(torch.randn(n, d, generator=gen, dtype=F64), requires_grad=True)
    seen["gradcheck"] = call_student(
        lambda: minitorch.autograd.gradcheck(
            lambda s: answer.apply(s, index), (probe,), raise_exception=False
        ),
        call=f"gradcheck of Gather on a {where}",
    )
    return seen


@hidden_test("Gather")
def gather(answer: Any, seed: int) -> dict:
    """Exercise 4: forward, the source's gradient, aliasing and mutation, gradcheck (judged
    against the reference's; the truth is index_select and index_add)."""
    expect(
        isinstance(answer, type),
        f"expected a class (a minitorch.autograd.Function), got {type(answer).__name__}",
    )
    expect(
        issubclass(answer, minitorch.autograd.Function),
        "Gather must be a class derived from minitorch.autograd.Function.",
    )
    gen = torch.Generator().manual_seed(random.Random(seed).randrange(2**31))
    seen = {
        f"source of shape [{n}, {d}], index {rows}": _observe_gather(answer, n, d, rows, gen)
        for n, d, rows in gather_cases(seed)
    }
    plain = _tensor(torch.randn(3, 2, generator=gen, dtype=F64))
    out = call_student(
        answer.apply, plain, minitorch.tensor([1, 0]), call="Gather.apply on a source without grad"
    )
    seen["a source that does not require grad"] = {"forward": out}
    return seen


# -------------------------------------------------------------------------------------------------
# Exercise 5: batched_forward
# -------------------------------------------------------------------------------------------------
def _count_calls(module: Any, counter: dict, key: str) -> None:
    """Count the calls of `module` (its forward) in counter[key]."""
    forward = module.forward

    def counted(*args: Any) -> Any:
        counter[key] += 1
        return forward(*args)

    module.forward = counted


def tree_cases(seed: int) -> list[tuple[list, int, int, torch.dtype]]:
    """(trees, hidden size, model seed, the model's dtype): random trees; one with a single-leaf
    tree added, one of single leaves only, many shallow trees (where one op per node costs far
    more than one op per height), and a float32 model (the others are float64)."""
    given_ = _given()
    make, leaf = given_["make_expression_trees"], given_["ExprTree"]
    rng = random.Random(seed)
    cases = []
    for number in range(6):
        count, depth = (40, 3) if number == 4 else (rng.randint(3, 12), rng.randint(2, 5))
        trees, _ = make(count, max_depth=depth, seed=rng.randrange(10_000))
        if number == 1:
            trees.append(leaf(value=round(rng.uniform(-1, 1), 2)))
        if number == 3:
            trees = [leaf(value=0.5), leaf(value=-0.25)]
        dtype = torch.float32 if number == 5 else F64
        cases.append((trees, rng.randint(2, 6), rng.randrange(2**31), dtype))
    return cases


def _observe_batched(
    answer: Any, trees: list, hidden: int, model_seed: int, dtype: torch.dtype, number: int
) -> tuple:
    """(where, what the answer did on one case)."""
    given_ = _given()
    heights = [t.depth() for t in trees]
    kind = str(dtype).replace("torch.", "")
    where = f"{len(trees)} trees of heights {sorted(set(heights))}, a {kind} model"
    minitorch.manual_seed(model_seed)
    model = given_["TreeModel"](hidden=hidden).to(dtype)
    weights = torch.randn(len(trees), generator=torch.Generator().manual_seed(number), dtype=dtype)
    calls = {"leaf": 0, "cell": 0}
    _count_calls(model.leaf, calls, "leaf")
    _count_calls(model.cell, calls, "cell")
    ops: list[str] = []
    call = f"batched_forward(model, trees, gather) on {where}"
    with watch_ops(lambda function, args, outputs: ops.append(function.__name__)):
        got = call_student(answer, model, trees, given_["index_rows"], call=call)
    expect(isinstance(got, minitorch.Tensor), f"on {where}: return a tensor, not {got!r:.60}")
    expect(
        tuple(got.shape) == (len(trees),),
        f"on {where}: shape {list(got.shape)}, expected [{len(trees)}]",
    )
    predictions = got.detach().clone()
    loss = (got * _tensor(weights)).sum()
    call_student(loss.backward, call=f"backward through batched_forward on {where}")
    return where, {
        "predictions": predictions,
        "height": max(heights),
        "calls": calls,
        "ops recorded": len(ops),
        "gradients": {name: p.grad for name, p in model.named_parameters()},
    }


@hidden_test("batched_forward")
def batched_forward(answer: Any, seed: int) -> dict:
    """Exercise 5: predictions, every parameter's gradient, the calls of `model.leaf` and
    `model.cell` and the ops recorded, per case (gather: the locked `index_rows`)."""
    check_callable(answer, "batched_forward")
    return dict(
        _observe_batched(answer, trees, hidden, model_seed, dtype, number)
        for number, (trees, hidden, model_seed, dtype) in enumerate(tree_cases(seed))
    )


# -------------------------------------------------------------------------------------------------
# Exercise 6: tree_speedup
# -------------------------------------------------------------------------------------------------
# NOTE [Timing on a loaded machine]
#     Grading runs two sandboxes on two cores, so every timing is taken on a busy machine. A ratio
#     of two CPU-bound times measured there can be off by a factor of 3 (a reference-identical
#     answer once got 33 where the grader measured 95 to 123), and stand-ins that sleep a known
#     time do not fix it: a busy machine wakes a sleeper late, once per sleep, and the best of a
#     few runs of the side with fewer sleeps escapes that delay more often. So the hidden test
#     counts instead of timing. It passes stand-ins whose forward and backward advance a clock
#     of the grader's (per tree, the per-sample model FORWARD_PER_TREE and BACKWARD_PER_TREE;
#     the batched model BATCHED_FORWARD and BATCHED_BACKWARD once), and while the student's
#     function runs that clock stands in for every clock of `time` (perf_counter, monotonic,
#     time, process_time, thread_time and their _ns forms), for `timeit`'s default timer and for
#     any of them the answer's module bound to a name of its own. Nothing else advances it, so
#     the ratio of a correct answer is exactly the stand-ins' (12 trees: 12), whatever the load;
#     forward only gives 4, backward only 36, the batched side forward only 16, one tree 1, a
#     check inside the batched timing 3.
#     benchmarks/load_timing_batching.py grades the reference 50 times on a loaded machine.
TIMING_TREES = 12
FORWARD_PER_TREE, BACKWARD_PER_TREE = 0.002, 0.006  # seconds of the grader's clock
BATCHED_FORWARD, BATCHED_BACKWARD = 0.006, 0.002
_CLOCKS = ("perf_counter", "monotonic", "time", "process_time", "thread_time")
_TIMEIT_FUNCTIONS = (timeit.timeit, timeit.repeat, timeit.Timer.__init__)


class GraderClock:
    """A clock that only the stand-ins advance, in seconds (and nanoseconds for the _ns forms)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def spend(self, seconds: float) -> None:
        self.now += seconds

    def seconds(self) -> float:
        return self.now

    def nanoseconds(self) -> int:
        return round(self.now * 1e9)


@contextlib.contextmanager
def clock_in_place(clock: GraderClock, answer: Any) -> Iterator[None]:
    """Make `clock` every clock the answer can read while the block runs: `time`'s, `timeit`'s
    default timer (and its functions' defaults), and names in the answer's globals bound to
    one of them."""
    replaced: list[tuple[Any, str, Any]] = []
    real = {}
    for name in _CLOCKS:
        real[getattr(time, name)] = clock.seconds
        real[getattr(time, f"{name}_ns")] = clock.nanoseconds
    targets = [(time, name) for name in _CLOCKS] + [(time, f"{name}_ns") for name in _CLOCKS]
    targets.append((timeit, "default_timer"))
    names = getattr(answer, "__globals__", {})
    targets += [(names, key) for key, value in list(names.items()) if _is_clock(value, real)]
    # timeit's functions bound its default timer as a default argument when it was imported
    targets += [(function, "__defaults__") for function in _TIMEIT_FUNCTIONS]
    try:
        for owner, name in targets:
            if name == "__defaults__":
                old = owner.__defaults__
                owner.__defaults__ = tuple(
                    real[value] if _is_clock(value, real) else value for value in old
                )
            elif isinstance(owner, dict):
                old = owner[name]
                owner[name] = real[old]
            else:
                old = getattr(owner, name)
                setattr(owner, name, real.get(old, clock.seconds))
            replaced.append((owner, name, old))
        yield
    finally:
        for owner, name, old in reversed(replaced):
            if name == "__defaults__":
                owner.__defaults__ = old
            elif isinstance(owner, dict):
                owner[name] = old
            else:
                setattr(owner, name, old)


def _is_clock(value: Any, clocks: dict) -> bool:
    try:
        return value in clocks
    except TypeError:  # an unhashable global
        return False


class Spend(minitorch.autograd.Function):
    """Spend.apply(x, clock, forward_seconds, backward_seconds): a copy of x whose forward and
    backward each advance the grader's clock by a known time (the stand-ins' only cost)."""

    @staticmethod
    def forward(ctx: Any, x: Any, clock: GraderClock, forward: float, backward: float) -> Any:
        ctx.clock, ctx.backward_seconds = clock, backward
        clock.spend(forward)
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> tuple:
        ctx.clock.spend(ctx.backward_seconds)
        return grad, None, None, None


class CountedTreeModel(minitorch.nn.Module):
    """The per-sample stand-in: `model(tree)` is a [1] tensor that cost FORWARD_PER_TREE to make
    and costs BACKWARD_PER_TREE to differentiate, on the grader's clock."""

    def __init__(self, clock: GraderClock) -> None:
        super().__init__()
        self.clock = clock
        self.weight = minitorch.nn.Parameter(minitorch.zeros(1, dtype=F64))

    def forward(self, tree: Any) -> Any:
        return Spend.apply(self.weight, self.clock, FORWARD_PER_TREE, BACKWARD_PER_TREE)


def counted_batched(model: Any, trees: list, gather: Any) -> Any:
    """The batched stand-in: a [len(trees)] tensor that cost BATCHED_FORWARD to make and costs
    BATCHED_BACKWARD to differentiate, whatever the number of trees."""
    out = Spend.apply(model.weight, model.clock, BATCHED_FORWARD, BATCHED_BACKWARD)
    return out.expand(len(trees))


@hidden_test("tree_speedup")
def tree_speedup(answer: Any) -> dict:
    """Exercise 6: the student's ratio on stand-ins whose cost is counted on the grader's clock
    (NOTE [Timing on a loaded machine]; judged against the ratios that clock gives)."""
    check_callable(answer, "tree_speedup")
    given_ = _given()
    trees, _ = given_["make_expression_trees"](TIMING_TREES, seed=11)
    clock = GraderClock()
    model, gather = CountedTreeModel(clock), given_["index_rows"]
    with clock_in_place(clock, answer):
        got = call_student(
            lambda: answer(model, trees, 5, counted_batched, gather),
            call="tree_speedup(model, trees, 5, batched, gather)",
        )
    expect(
        isinstance(got, float) and math.isfinite(got),
        f"return the ratio as a finite float, not {got!r:.60}",
    )
    return {"ratio": got, "trees": len(trees)}


# -------------------------------------------------------------------------------------------------
# Exercise 7: predict_calls (partial credit, judged in judge.py)
# -------------------------------------------------------------------------------------------------
@hidden_test("predict_calls")
def predict_calls(answer: Any) -> dict:
    """Exercise 7: the student's prediction for every scenario, each an int."""
    scenarios = _given()["SCENARIOS"]
    predictions = predictions_for(answer, "predict_calls", scenarios, "scenario")
    for key in scenarios:
        guess = predictions[key]
        expect(
            isinstance(guess, int) and not isinstance(guess, bool),
            f"scenario {key!r}: predict a number of calls (an int), not {guess!r}",
        )
    return {key: int(predictions[key]) for key in scenarios}
