"""Hidden tests of notebook 2, "backward": the kernel half. A hidden test cell calls one of them:

    from solutions.backward import grade
    grade.topological_order(topological_order)

Each test builds the grader's cases (graphs with fan-out and reuse, a deep chain, a chain of
diamonds, broadcast shape pairs, functions, models, data) on PyTorch and on minitorch, runs the
student's answer on them and returns what it saw as plain data; solutions/backward/judge.py
compares that with what the same test sees of the reference answer (NOTE [Hidden tests in two
halves] in solutions/grading.py). Nothing here imports the reference: graph nodes are numbered
from how the grader built each graph, the earlier exercises that run_backward builds on are
replaced by a lookup table (topological_order) and the library's own reduction (sum_to_shape),
and the snippets of exercise 9 and `gradient_shape` come from the notebook's locked cells.
"""

from __future__ import annotations

import random
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

import minitorch
from solutions.grading import (
    LIBRARIES,
    Failure,
    bounded_call,
    check_callable,
    expect,
    hidden_test,
    lib_name,
    quiet_call,
    with_globals,
)
from solutions.reference_cells import given

DEEP_CHAIN_LENGTH = 10_000  # topological_order: the statement promises a chain of 10,000 ops
ENGINE_CHAIN_LENGTH = 5_000  # run_backward: thousands of nodes, each called once
DIAMONDS = 40  # a walk without a set of visited nodes follows 2**40 paths
SMALL_CASE_SECONDS = 2.0  # a linear walk of a small graph takes milliseconds
DEEP_CASE_SECONDS = 10.0  # PyTorch's reference walk of 10,000 nodes takes about 0.2 s


# -------------------------------------------------------------------------------------------------
# Running student code: under Python's default recursion limit and a wall-clock bound
# -------------------------------------------------------------------------------------------------
def bounded_walk(function: Callable, *args: Any, call: str, seconds: float) -> Any:
    """`bounded_call(function, *args)` under Python's default recursion limit (a recursive walk
    of a deep graph fails) and within `seconds` (a walk that visits a shared node once per path
    never ends on a chain of diamonds), failing with what a walk must do otherwise."""
    result, in_time = bounded_call(function, *args, call=call, seconds=seconds)
    expect(
        in_time,
        f"{call} took more than {seconds:g} s. A walk must take time proportional to the "
        "graph's size: visit a node reached along several paths once (remember the nodes "
        f"you have seen in a set or a dict; a chain of {DIAMONDS} diamonds has "
        f"2**{DIAMONDS} paths), and look nodes up in sets or dicts, not in lists.",
    )
    return result


# -------------------------------------------------------------------------------------------------
# Graphs, built alike in both libraries, with every node numbered from how the graph was built
# -------------------------------------------------------------------------------------------------
def _leaf(lib: Any, values: torch.Tensor, requires_grad: bool) -> Any:
    return lib.tensor(values.tolist(), dtype=lib.float64, requires_grad=requires_grad)


def _accumulator(leaf: Any) -> Any:
    """The AccumulateGrad node of a leaf that requires grad (the one its graph holds)."""
    if isinstance(leaf, torch.Tensor):
        return torch.autograd.graph.get_gradient_edge(leaf).node
    return leaf._gradient_edge()[0]


@dataclass
class Graph:
    """A graph the grader built: its output, its leaves, and `nodes`, every node reachable
    from `out.grad_fn`: the op nodes in reverse creation order (so `nodes[0]` is
    `out.grad_fn`), then the AccumulateGrad nodes in the order of their leaves. That is a
    topological order, known without walking the graph: an op only uses tensors made before
    it. A node's number is its position in `nodes`."""

    out: Any
    leaves: list
    nodes: list = field(default_factory=list)
    number: dict = field(default_factory=dict)  # id(node) -> position in `nodes`

    def describe(self) -> dict:
        """The nodes' names and, for each node, where its next_functions point, as offsets
        from its own number (None where an input needs no gradient); both run-length encoded
        (`runs`), so that a chain of 10,000 ops takes a few bytes."""
        edges = [
            [None if child is None else self.number[id(child)] - i for child, _ in n.next_functions]
            for i, n in enumerate(self.nodes)
        ]
        return {"names": runs([node.name() for node in self.nodes]), "edges": runs(edges)}

    def numbers(self, items: Any, where: str, what: str) -> list:
        """The student's list of nodes as plain data: a node of this graph becomes its number,
        `None` stays None, anything else becomes a string naming its type."""
        expect(
            isinstance(items, list),
            f"{where}: {what} must return a list, it returned {type(items).__name__}.",
        )
        described = []
        for item in items:
            position = self.number.get(id(item))
            if item is None:
                described.append(None)
            elif position is not None and self.nodes[position] is item:
                described.append(position)
            else:
                described.append(f"a {type(item).__name__}")
        return described


def runs(items: list) -> list:
    """`items` as [item, count] pairs, one per run of equal neighbours."""
    encoded: list = []
    for item in items:
        if encoded and encoded[-1][0] == item:
            encoded[-1][1] += 1
        else:
            encoded.append([item, 1])
    return encoded


def ranges(items: list) -> list:
    """`items` with each run of consecutive ascending ints written as [first, count]; other
    items (None, strings) stay as they are."""
    encoded: list = []
    for item in items:
        last = encoded[-1] if encoded else None
        if type(item) is int and isinstance(last, list) and last[0] + last[1] == item:
            last[1] += 1
        else:
            encoded.append([item, 1] if type(item) is int else item)
    return encoded


class Builder:
    """Makes a graph's tensors and keeps every one of them, in creation order."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self.made: list = []
        self.leaves: list = []

    def leaf(self, values: torch.Tensor, requires_grad: bool) -> Any:
        tensor = _leaf(self.lib, values, requires_grad)
        self.leaves.append(tensor)
        return tensor

    def __call__(self, tensor: Any) -> Any:
        """Keep `tensor`, the result of ONE op (so that its node gets a number)."""
        self.made.append(tensor)
        return tensor

    def graph(self, out: Any) -> Graph:
        """Number the nodes reachable from `out.grad_fn` (see Graph). Going through the
        tensors in reverse creation order, a node is reached once one of its consumers was."""
        graph = Graph(out, list(self.leaves))
        reached: dict[int, Any] = {} if out.grad_fn is None else {id(out.grad_fn): out.grad_fn}
        for tensor in reversed(self.made):
            node = tensor.grad_fn
            if node is None or id(node) not in reached or id(node) in graph.number:
                continue
            graph.number[id(node)] = len(graph.nodes)
            graph.nodes.append(node)
            for child, _ in node.next_functions:
                if child is not None:
                    reached[id(child)] = child  # keeps PyTorch's Python object of the node alive
        for leaf in self.leaves:
            if leaf.requires_grad and id(node := _accumulator(leaf)) in reached:
                graph.number[id(node)] = len(graph.nodes)
                graph.nodes.append(node)
        if len(graph.nodes) != len(reached):  # an op made a tensor the builder did not keep
            raise RuntimeError("the grader numbered only part of its own graph")
        return graph


_UNARY: list[Callable[[Any, Any], Any]] = [
    lambda lib, a: a.sin(),
    lambda lib, a: lib.tanh(a),
    lambda lib, a: a * 1.5,
    lambda lib, a: a + 1.0,
    lambda lib, a: -a,
    lambda lib, a: a.sigmoid(),
    lambda lib, a: a**2,
    lambda lib, a: a.exp(),
    lambda lib, a: a / 3.0,
]
_BINARY: list[Callable[[Any, Any, Any], Any]] = [
    lambda lib, a, b: a + b,
    lambda lib, a, b: a * b,
    lambda lib, a, b: a - b,
]


def random_graph(lib: Any, seed: int, n_ops: int, scalar: bool = True) -> Graph:
    """A random expression over a few leaves of shape (3,) (some without grad, some with a
    pre-existing .grad) with fan-out, shared subexpressions used at different depths and the
    odd detach. Every op has one output and no broadcasting (PyTorch's nodes, called by hand,
    return unreduced gradients for broadcast inputs; its engine reduces them)."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    keep = Builder(lib)
    values = [torch.rand(3, generator=gen, dtype=torch.float64) - 0.5 for _ in range(4)]
    leaves = [keep.leaf(v, rng.random() < 0.8) for v in values[: rng.randint(1, 4)]]
    last = keep.leaf(torch.rand(3, generator=gen, dtype=torch.float64) + 0.5, True)
    for leaf in [*leaves, last]:
        if leaf.requires_grad and rng.random() < 0.3:
            leaf.grad = _leaf(lib, torch.rand(3, generator=gen, dtype=torch.float64), False)
    pool = list(leaves)

    def pick() -> Any:
        if rng.random() < 0.15:
            return rng.choice(leaves)
        return pool[max(0, len(pool) - 1 - int(rng.expovariate(0.4)))]

    for _ in range(n_ops):
        kind = rng.random()
        if kind < 0.45:
            pool.append(keep(rng.choice(_UNARY)(lib, pick())))
        elif kind < 0.95:
            pool.append(keep(rng.choice(_BINARY)(lib, pick(), pick())))
        else:
            pool.append(pick().detach())
    out = keep(keep(pool[-1] + pool[max(0, len(pool) - 4)]) * last)
    return keep.graph(keep(out.sum()) if scalar else out)


def diamond(lib: Any) -> Graph:
    """a = x * 2 feeds a * a directly and a.exp().sin() two ops later."""
    keep = Builder(lib)
    x = keep.leaf(torch.tensor([0.5, -1.0, 2.0]), True)
    a = keep(x * 2)
    return keep.graph(keep(keep(keep(a * a) + keep(keep(a.exp()).sin())).sum()))


def square(lib: Any) -> Graph:
    """x * x: one node with the same input twice."""
    keep = Builder(lib)
    x = keep.leaf(torch.tensor([0.5, -1.0, 2.0]), True)
    return keep.graph(keep(keep(x * x).sum()))


def two_leaves(lib: Any) -> Graph:
    """x + y: the AddBackward0 node passes the same gradient on to both leaves."""
    keep = Builder(lib)
    x = keep.leaf(torch.tensor([0.5, -1.0, 2.0]), True)
    y = keep.leaf(torch.tensor([1.5, 0.25, -2.0]), True)
    return keep.graph(keep(x + y))


def chain(lib: Any, length: int) -> Graph:
    """x followed by `length` ops in a row: deeper than Python's recursion limit."""
    keep = Builder(lib)
    h = keep.leaf(torch.tensor([1.0, 2.0]), True)
    for _ in range(length):
        h = keep(h * 1.0)
    return keep.graph(h)


def diamond_chain(lib: Any, diamonds: int = DIAMONDS) -> Graph:
    """`diamonds` diamonds in a row: a = h * 0.9 feeds both a.tanh() and the sum a + tanh(a),
    which is the next h. Linear in size, 2**diamonds paths from the output to x."""
    keep = Builder(lib)
    h = keep.leaf(torch.tensor([0.5, -1.0]), True)
    for _ in range(diamonds):
        a = keep(h * 0.9)
        h = keep(keep(a + keep(a.tanh())) * 0.5)
    return keep.graph(h)


# Shapes that all broadcast to BROADCAST_SHAPE.
BROADCAST_SHAPE = (2, 4, 3)
_BROADCAST_SHAPES = [(), (3,), (1, 3), (4, 1), (4, 3), (2, 1, 3), (2, 4, 1), (2, 4, 3)]


def broadcast_graph(lib: Any, seed: int, n_ops: int, scalar: bool = True) -> Graph:
    """A random expression over leaves whose shapes broadcast to (2, 4, 3), with fan-out and
    reuse. PyTorch's nodes return the gradient of a broadcast input in the broadcast shape;
    `sum(dim=0)` (on a leaf of shape (2, 3) and now and then on an intermediate value) makes a
    node upstream of a broadcast that needs its gradient in its own shape."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    keep = Builder(lib)
    shapes = rng.sample(_BROADCAST_SHAPES, 4)
    leaves = [
        keep.leaf(torch.rand(shape, generator=gen, dtype=torch.float64) - 0.5, rng.random() < 0.8)
        for shape in shapes
    ]
    matrix = keep.leaf(torch.rand(2, 3, generator=gen, dtype=torch.float64) - 0.5, True)
    for leaf in [*leaves, matrix]:
        if leaf.requires_grad and rng.random() < 0.3:
            leaf.grad = _leaf(
                lib, torch.rand(leaf.shape, generator=gen, dtype=torch.float64), False
            )
    pool = [*leaves, keep(matrix.sum(dim=0))]

    def pick() -> Any:
        if rng.random() < 0.2:
            return rng.choice(leaves)
        return pool[max(0, len(pool) - 1 - int(rng.expovariate(0.4)))]

    for _ in range(n_ops):
        kind = rng.random()
        if kind < 0.35:
            pool.append(keep(rng.choice(_UNARY)(lib, pick())))
        elif kind < 0.9:
            pool.append(keep(rng.choice(_BINARY)(lib, pick(), pick())))
        else:
            value = pick()
            pool.append(keep(value.sum(dim=0)) if value.dim() > 0 else value)
    out = keep(keep(pool[-1] + pool[len(pool) // 2]) * pool[-2])
    if tuple(out.shape) != BROADCAST_SHAPE:  # every leaf's gradient is a reduction of the output's
        out = keep(out + _leaf(lib, torch.zeros(BROADCAST_SHAPE), False))
    return keep.graph(keep(out.sum()) if scalar else out)


def broadcast_reuse(lib: Any) -> Graph:
    """w of shape (3,) broadcast over x (4, 3) and used again on its own: its node receives a
    (4, 3) and a (3,) gradient from PyTorch's nodes."""
    keep = Builder(lib)
    x = keep.leaf(torch.tensor([[0.5, -1.0, 2.0]] * 4) * torch.arange(1.0, 5.0)[:, None], False)
    w = keep.leaf(torch.tensor([0.5, -1.0, 2.0]), True)
    return keep.graph(keep(keep(keep(x * w) + keep(w.sin())).sum()))


def broadcast_through_a_reduction(lib: Any) -> Graph:
    """W (2, 3) summed over its rows, then broadcast over x (4, 3) with a scalar s and a column
    b (4, 1): SumBackward1 must receive a (3,) gradient, s a () one, b a (4, 1) one."""
    keep = Builder(lib)
    x = keep.leaf(torch.linspace(-1, 1, 12).reshape(4, 3), False)
    big = keep.leaf(torch.tensor([[0.5, -1.0, 2.0], [1.0, 0.25, -0.5]]), True)
    s = keep.leaf(torch.tensor(1.5), True)
    b = keep.leaf(torch.tensor([[0.1], [0.2], [0.3], [0.4]]), True)
    h = keep(keep(keep(x * keep(big.sum(dim=0))).tanh()) * s)
    return keep.graph(keep(keep(h + b).sum()))


def _graph_cases(seed: int | None, n_random: int = 6) -> list[tuple[str, Callable[[Any], Graph]]]:
    """(description, builder(lib) -> Graph): the fixed small graphs, then random ones."""
    master = random.Random(seed)
    cases: list[tuple[str, Callable[[Any], Graph]]] = [
        ("a graph where a = x * 2 is used at two depths", diamond),
        ("(x * x).sum()", square),
    ]
    for _ in range(n_random):
        graph_seed, n_ops = master.randrange(2**31), master.randint(5, 40)
        cases.append(
            (
                f"a random graph of {n_ops} ops with shared subexpressions",
                lambda lib, s=graph_seed, n=n_ops: random_graph(lib, s, n),
            )
        )
    return cases


_DEEP_CASES: list[tuple[str, Callable[[Any], Graph], float]] = [
    (f"a chain of {DIAMONDS} diamonds", diamond_chain, SMALL_CASE_SECONDS),
    (
        f"a chain of {DEEP_CHAIN_LENGTH:,} ops",
        lambda lib: chain(lib, DEEP_CHAIN_LENGTH),
        DEEP_CASE_SECONDS,
    ),
]


# -------------------------------------------------------------------------------------------------
# Exercise 1: topological_order
# -------------------------------------------------------------------------------------------------
@hidden_test("topological_order")
def topological_order(answer: Any, seed: int) -> dict:
    """Exercise 1: on every graph, the student's list as node numbers, the graph's nodes and
    edges, and (on the small graphs) the lists of a second call and of an identical graph.
    Deep cases run under Python's default recursion limit and a time bound."""
    check_callable(answer, "topological_order")
    seen: dict[str, Any] = {}
    for lib in LIBRARIES:
        graph = Builder(lib).graph(_leaf(lib, torch.ones(2), True))
        where = f"on a leaf ({lib_name(lib)})"
        got = bounded_walk(
            answer, graph.out, call=f"topological_order(x) {where}", seconds=SMALL_CASE_SECONDS
        )
        seen[where] = {"order": ranges(graph.numbers(got, where, "topological_order"))}
    small = _graph_cases(seed)
    cases = [(d, b, SMALL_CASE_SECONDS, True) for d, b in small[:2]]
    cases += [(d, b, seconds, False) for d, b, seconds in _DEEP_CASES]
    cases += [(d, b, SMALL_CASE_SECONDS, True) for d, b in small[2:]]
    for description, build, seconds, twice in cases:
        for lib in LIBRARIES:
            where = f"on {description} ({lib_name(lib)})"
            call, what = f"topological_order(out) {where}", "topological_order"
            graph = build(lib)
            got = bounded_walk(answer, graph.out, call=call, seconds=seconds)
            case = {"order": ranges(graph.numbers(got, where, what)), **graph.describe()}
            if twice:  # the same graph again, and an identical graph: the same order
                again = bounded_walk(answer, graph.out, call=call, seconds=seconds)
                twin = build(lib)
                twin_order = bounded_walk(answer, twin.out, call=call, seconds=seconds)
                case["again"] = ranges(graph.numbers(again, where, what))
                case["identical graph"] = ranges(twin.numbers(twin_order, where, what))
            seen[where] = case
    return seen


# -------------------------------------------------------------------------------------------------
# Exercise 2: sum_to_shape
# -------------------------------------------------------------------------------------------------
def _broadcast_pairs(seed: int | None, count: int = 14) -> list[tuple[tuple, tuple]]:
    """(input shape, broadcast result shape) pairs, including the corner cases."""
    rng = random.Random(seed)
    pairs = [((), (2, 3)), ((3,), (4, 3)), ((4, 1), (4, 3)), ((2, 3), (2, 3)), ((1, 1), (5, 2))]
    while len(pairs) < count:
        out = tuple(rng.randint(1, 4) for _ in range(rng.randint(1, 4)))
        keep = rng.randint(0, len(out))
        shape = tuple(1 if rng.random() < 0.5 else n for n in out[len(out) - keep :])
        pairs.append((shape, out))
    return pairs


@hidden_test("sum_to_shape")
def sum_to_shape(answer: Any, seed: int) -> dict:
    """Exercise 2: the reduced gradient for random broadcast shape pairs, on both libraries."""
    check_callable(answer, "sum_to_shape")
    gen = torch.Generator().manual_seed(random.Random(seed).randrange(2**31))
    seen = {}
    for shape, out_shape in _broadcast_pairs(seed):
        grad = torch.rand(out_shape, generator=gen, dtype=torch.float64) - 0.5
        for lib in LIBRARIES:
            call = (
                f"sum_to_shape(grad, {shape}) with grad of shape {list(out_shape)} "
                f"({lib_name(lib)})"
            )
            got = quiet_call(answer, _leaf(lib, grad, False), shape, call=call)
            expect(isinstance(got, lib.Tensor), f"{call} must return a {lib_name(lib)} tensor.")
            seen[call] = got
    return seen


# -------------------------------------------------------------------------------------------------
# Exercise 3: run_backward
# -------------------------------------------------------------------------------------------------
def _root_gradient(lib: Any, out: Any, seed: int) -> Any:
    if out.dim() == 0:
        return lib.ones_like(out)
    gen = torch.Generator().manual_seed(seed)
    return _leaf(lib, torch.rand(tuple(out.shape), generator=gen, dtype=torch.float64) - 0.5, False)


def _storage(tensor: Any) -> int:
    return tensor.untyped_storage().data_ptr()


def _values(tensor: Any) -> list[float]:
    return [float(v) for v in tensor.detach().reshape(-1).tolist()]


class OrderTable:
    """The stand-in for the student's topological_order while run_backward is graded: for
    each output the grader built, the order known from how it was built (Graph.nodes). A
    wrong exercise 1 then costs only exercise 1, and the table reveals nothing."""

    def __init__(self) -> None:
        self.orders: dict[int, tuple[Any, list]] = {}

    def add(self, graph: Graph) -> None:
        self.orders[id(graph.out)] = (graph.out, graph.nodes)

    def __call__(self, tensor: Any) -> list:
        """topological_order(tensor) for a tensor the grader built."""
        out, nodes = self.orders.get(id(tensor), (None, []))
        if out is not tensor:
            if getattr(tensor, "grad_fn", None) is None:
                return []
            raise RuntimeError(
                "while run_backward is graded, topological_order knows the order of the graph "
                "behind the tensor passed to run_backward only"
            )
        return list(nodes)


def library_sum_to_shape(grad: Any, shape: Any) -> Any:
    """The stand-in for the student's sum_to_shape while run_backward is graded: the
    libraries' own reduction (PyTorch's `sum_to_size`, minitorch's `sum_to_shape`), so a wrong
    exercise 2 costs only exercise 2."""
    if isinstance(grad, torch.Tensor):
        return grad.sum_to_size(tuple(shape))
    return minitorch.ops.broadcasting.sum_to_shape(grad, tuple(shape))


BROADCASTING = "broadcast"  # in the description of every case that broadcasts, and only there


def _engine_cases(seed: int) -> list[tuple[str, Callable[[Any], Graph], float]]:
    """run_backward's cases: the small graphs, a deep chain, a chain of diamonds, random
    graphs with scalar and with non-scalar outputs (and gradient=), and graphs with
    broadcasting."""
    small = _graph_cases(seed)
    master = random.Random(seed)
    cases = [(d, b, SMALL_CASE_SECONDS) for d, b in small[:2]]
    cases.append(("x + y, two leaves that get the same gradient", two_leaves, SMALL_CASE_SECONDS))
    cases.append((_DEEP_CASES[0][0], diamond_chain, SMALL_CASE_SECONDS))
    cases.append(
        (
            f"a chain of {ENGINE_CHAIN_LENGTH:,} ops",
            lambda lib: chain(lib, ENGINE_CHAIN_LENGTH),
            DEEP_CASE_SECONDS,
        )
    )
    cases += [(d, b, SMALL_CASE_SECONDS) for d, b in small[2:]]
    for _ in range(2):
        graph_seed, n_ops = master.randrange(2**31), master.randint(5, 30)
        cases.append(
            (
                f"a random graph of {n_ops} ops with a non-scalar output and gradient=",
                lambda lib, s=graph_seed, n=n_ops: random_graph(lib, s, n, scalar=False),
                SMALL_CASE_SECONDS,
            )
        )
    cases.append(
        (
            "x (4, 3) * w (3,) + w.sin(): w broadcast and used on its own",
            broadcast_reuse,
            SMALL_CASE_SECONDS,
        )
    )
    cases.append(
        (
            "(x (4, 3) * W.sum(dim=0)).tanh() * s () + b (4, 1): broadcast after a reduction",
            broadcast_through_a_reduction,
            SMALL_CASE_SECONDS,
        )
    )
    for scalar in (True, True, False):
        graph_seed, n_ops = master.randrange(2**31), master.randint(8, 30)
        output = "a scalar output" if scalar else "an output of shape (2, 4, 3) and gradient="
        cases.append(
            (
                f"a random graph of {n_ops} ops on shapes that broadcast to (2, 4, 3), with "
                f"{output}",
                lambda lib, s=graph_seed, n=n_ops, c=scalar: broadcast_graph(lib, s, n, c),
                SMALL_CASE_SECONDS,
            )
        )
    return cases


# What a run_backward that fails on a graph with broadcasting most likely missed.
BROADCAST_HINT = (
    "PyTorch's nodes return the gradient of a broadcast input in the broadcast shape: reduce "
    "every gradient a node returns for (child, nr) with sum_to_shape(child_grad, "
    "gradient_shape(child, nr)) as soon as the node returns it, before adding it to what "
    "child has received."
)


@hidden_test("run_backward")
def run_backward(answer: Any, seed: int) -> dict:
    """Exercise 3: every leaf's .grad after run_backward(out, grad) (with what it held before),
    whether run_backward returned None, left `grad` unchanged and made each .grad a tensor of
    its own. The student's topological_order is replaced by an OrderTable, sum_to_shape by the
    library's reduction, and gradient_shape is the notebook's locked one."""
    check_callable(answer, "run_backward")
    table = OrderTable()
    if isinstance(answer, types.FunctionType):
        answer = with_globals(
            answer,
            topological_order=table,
            sum_to_shape=library_sum_to_shape,
            gradient_shape=given("backward")["gradient_shape"],
        )
    seen: dict[str, Any] = {}
    for index, (description, build, seconds) in enumerate(_engine_cases(seed)):
        for lib in LIBRARIES:
            where = f"on {description} ({lib_name(lib)})"
            graph = build(lib)
            table.add(graph)
            before = [None if leaf.grad is None else _values(leaf.grad) for leaf in graph.leaves]
            grad = _root_gradient(lib, graph.out, index)
            grad_values = _values(grad)
            try:
                result = bounded_walk(
                    answer,
                    graph.out,
                    grad,
                    call=f"run_backward(out, grad) {where}",
                    seconds=seconds,
                )
            except Failure as failure:
                if BROADCASTING not in description or "took more than" in str(failure):
                    raise
                raise Failure(f"{str(failure).rstrip('.')}. {BROADCAST_HINT}") from None
            grads = [leaf.grad for leaf in graph.leaves]
            tensors = [g for g in grads if isinstance(g, lib.Tensor)]
            storages = [_storage(g) for g in tensors]
            seen[where] = {
                "returned None": result is None,
                "grad unchanged": _values(grad) == grad_values,
                "each .grad has memory of its own": len(set(storages)) == len(storages)
                and _storage(grad) not in storages,
                "leaves": [
                    {
                        "requires grad": leaf.requires_grad,
                        "before": old,
                        "grad": g
                        if g is None or isinstance(g, lib.Tensor)
                        else f"a {type(g).__name__}",
                        "grad requires grad": isinstance(g, lib.Tensor) and g.requires_grad,
                    }
                    for leaf, old, g in zip(graph.leaves, before, grads)
                ],
            }
    return seen


# -------------------------------------------------------------------------------------------------
# Exercises 4 and 5: Jacobians and Hessian-vector products
# -------------------------------------------------------------------------------------------------
def _vector_functions(lib: Any, seed: int) -> list[tuple[str, int, Callable]]:
    """(description, input size, f) with f from a 1-D tensor to a 1-D tensor."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    n, m = rng.randint(2, 5), rng.randint(2, 5)
    a = _leaf(lib, torch.rand(m, n, generator=gen, dtype=torch.float64) - 0.5, False)
    b = _leaf(lib, torch.rand(n, n, generator=gen, dtype=torch.float64) - 0.5, False)
    return [
        (f"f(x) = tanh(A @ x) with A of shape ({m}, {n})", n, lambda x: lib.tanh(a @ x)),
        (f"f(x) = x.exp() * x.sum(), n = {n}", n, lambda x: x.exp() * x.sum()),
        (
            f"f(x) = sin(A @ (x * x)) + A @ x, A of shape ({m}, {n})",
            n,
            lambda x: (a @ (x * x)).sin() + a @ x,
        ),
        (f"f(x) = B @ x (linear), n = {n}", n, lambda x: b @ x),
    ]


def _scalar_functions(lib: Any, seed: int) -> list[tuple[str, int, Callable]]:
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    n = rng.randint(2, 5)
    a = _leaf(lib, torch.rand(n, n, generator=gen, dtype=torch.float64) - 0.5, False)
    return [
        (f"f(x) = (x ** 3).sum(), n = {n}", n, lambda x: (x**3).sum()),
        (
            f"f(x) = tanh(A @ x).sum() * x.sum(), n = {n}",
            n,
            lambda x: lib.tanh(a @ x).sum() * x.sum(),
        ),
        (f"f(x) = x @ A @ x + exp(x).sum(), n = {n}", n, lambda x: x @ (a @ x) + x.exp().sum()),
    ]


def _point(n: int, gen: torch.Generator) -> torch.Tensor:
    return torch.rand(n, generator=gen, dtype=torch.float64) * 2 - 1


def _unchanged(x: Any, x0: torch.Tensor) -> bool:
    """Whether the caller's `x` still holds x0 and still does not require grad."""
    return not x.requires_grad and x.grad_fn is None and _values(x) == x0.tolist()


@hidden_test("jacobian")
def jacobian(answer: Any, seed: int) -> dict:
    """Exercise 4: the Jacobian of each function, how many times jacobian called f, and
    whether the caller's x was left alone."""
    check_callable(answer, "jacobian")
    function_seed = random.Random(seed).randrange(2**31)
    seen = {}
    for lib in LIBRARIES:
        gen = torch.Generator().manual_seed(function_seed)
        for description, n, f in _vector_functions(lib, function_seed):
            x0 = _point(n, gen)
            x = _leaf(lib, x0, False)
            calls = []

            def counted(t: Any, f: Callable = f, calls: list = calls) -> Any:
                calls.append(1)
                return f(t)

            call = f"jacobian({lib.__name__}, f, x) for {description}"
            got = quiet_call(answer, lib, counted, x, call=call)
            expect(isinstance(got, lib.Tensor), f"{call} must return a {lib_name(lib)} tensor.")
            seen[call] = {
                "jacobian": got,
                "calls of f": len(calls),
                "x unchanged": _unchanged(x, x0),
            }
    return seen


@hidden_test("hessian_vector_product")
def hessian_vector_product(answer: Any, seed: int) -> dict:
    """Exercise 5: H v for each function, and whether the caller's x was left alone."""
    check_callable(answer, "hessian_vector_product")
    function_seed = random.Random(seed).randrange(2**31)
    seen = {}
    for lib in LIBRARIES:
        gen = torch.Generator().manual_seed(function_seed)
        for description, n, f in _scalar_functions(lib, function_seed):
            x0, v0 = _point(n, gen), _point(n, gen)
            x, v = _leaf(lib, x0, False), _leaf(lib, v0, False)
            call = f"hessian_vector_product({lib.__name__}, f, x, v) for {description}"
            got = quiet_call(answer, lib, f, x, v, call=call)
            expect(isinstance(got, lib.Tensor), f"{call} must return a {lib_name(lib)} tensor.")
            seen[call] = {"H v": got, "x unchanged": _unchanged(x, x0)}
    return seen


# -------------------------------------------------------------------------------------------------
# Exercise 6: scale_gradient
# -------------------------------------------------------------------------------------------------
# The graphs scale_gradient is graded on, with y = scale_gradient(x, factor). Each one uses x along
# another path too, whose gradient must reach x unscaled; in "shared" the add node passes the same
# gradient tensor to y and to x, so a hook that scales it in place changes x's other gradient.
SCALE_GRAPHS = {
    "leaf": "out = (y * w).sum() + (x * x).sum(), x a leaf",
    "intermediate": "out = (y * w).sum() + (x * x).sum(), x = tanh(leaf)",
    "shared": "out = ((y + x) * w).sum()",
    "twice": "out = (y * y * w).sum() + x.sum()",
    "vector": "out = y.sin() * w + x, backward with a random gradient",
}


def _scale_graph(lib: Any, kind: str, seed: int, scale: Callable[[Any], Any]) -> tuple:
    """The graph of `kind` (SCALE_GRAPHS) with y = scale(x): (out, the gradient to start
    backward from, the leaf, x, y)."""
    gen = torch.Generator().manual_seed(seed)
    leaf = _leaf(lib, torch.rand(3, generator=gen, dtype=torch.float64) * 2 - 1, True)
    w = _leaf(lib, torch.rand(3, generator=gen, dtype=torch.float64) + 0.5, False)
    start = _leaf(lib, torch.rand(3, generator=gen, dtype=torch.float64) - 0.5, False)
    x = lib.tanh(leaf) if kind == "intermediate" else leaf
    y = scale(x)
    if kind in ("leaf", "intermediate"):
        out = (y * w).sum() + (x * x).sum()
    elif kind == "shared":
        out = ((y + x) * w).sum()
    elif kind == "twice":
        out = (y * y * w).sum() + x.sum()
    else:
        return y.sin() * w + x, start, leaf, x, y
    return out, None, leaf, x, y


def _scale_cases(seed: int) -> list[tuple[str, float, int]]:
    """(graph kind, factor, seed of the graph's values): gradient reversal on a leaf first."""
    rng = random.Random(seed)
    cases = [
        ("leaf", -1.0),
        ("leaf", rng.choice((2.5, -0.3))),
        ("intermediate", rng.choice((0.5, -0.3, 2.5))),
        ("shared", rng.choice((0.5, 2.5, -0.3))),
        ("twice", rng.choice((-1.0, 0.5, 2.5))),
        ("vector", 0.0),
    ]
    return [(kind, factor, rng.randrange(2**31)) for kind, factor in cases]


@hidden_test("scale_gradient")
def scale_gradient(answer: Any, seed: int) -> dict:
    """Exercise 6: on each graph, y, the leaf's .grad after backward, the .grad the same graph
    gives without scaling, and the .grad of a later backward through x alone (a hook left on x
    itself scales it)."""
    check_callable(answer, "scale_gradient")
    seen = {}
    for kind, factor, graph_seed in _scale_cases(seed):
        for lib in LIBRARIES:
            where = f"on {SCALE_GRAPHS[kind]}, factor {factor} ({lib_name(lib)})"
            call = f"scale_gradient(x, {factor}) {where}"

            def scaled(x: Any, lib: Any = lib, factor: float = factor, call: str = call) -> Any:
                y = quiet_call(answer, x, factor, call=call)
                expect(
                    isinstance(y, lib.Tensor),
                    f"{call} must return a {lib_name(lib)} tensor, it returned {type(y).__name__}.",
                )
                expect(
                    tuple(y.shape) == tuple(x.shape),
                    f"{call} returned a tensor of shape {list(y.shape)}: y has the shape and "
                    "the values of x.",
                )
                return y

            out, start, leaf, x, y = _scale_graph(lib, kind, graph_seed, scaled)
            quiet_call(
                lambda out=out, start=start: out.backward(start, retain_graph=True),
                call=f"backward through the result of {call}",
            )
            grad, leaf.grad = leaf.grad, None
            quiet_call(
                lambda x=x: (x * 2.0).sum().backward(),
                call=f"a backward through x alone after {call}",
            )
            plain_out, plain_start, plain_leaf, _, _ = _scale_graph(
                lib, kind, graph_seed, lambda x: x
            )
            plain_out.backward(plain_start)
            seen[where] = {
                "kind": kind,
                "factor": factor,
                "y": y,
                "x.grad": grad,
                "x.grad without scaling": plain_leaf.grad,
                "x.grad of a later backward through x alone": leaf.grad,
            }
    return seen


# -------------------------------------------------------------------------------------------------
# Exercise 7: accumulated_gradients
# -------------------------------------------------------------------------------------------------
def _model_and_data(lib: Any, seed: int, kind: str, batch: int) -> tuple[Any, Callable, Any, Any]:
    gen = torch.Generator().manual_seed(seed)
    if kind == "regression":
        model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
        loss_fn = lib.nn.MSELoss()
        targets = _leaf(lib, torch.rand(batch, 2, generator=gen, dtype=torch.float64), False)
    else:
        model = lib.nn.Sequential(lib.nn.Linear(3, 5), lib.nn.ReLU(), lib.nn.Linear(5, 3))
        loss_fn = lib.nn.CrossEntropyLoss()
        targets = lib.tensor(torch.randint(0, 3, (batch,), generator=gen).tolist())
    model = model.double()
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(
                _leaf(lib, torch.rand(p.shape, generator=gen, dtype=torch.float64) - 0.5, False)
            )
    inputs = _leaf(lib, torch.rand(batch, 3, generator=gen, dtype=torch.float64) * 2 - 1, False)
    return model, loss_fn, inputs, targets


ACCUMULATION_CASES = (  # (kind, batch, k): equal micro-batches first, then unequal ones
    ("regression", 12, (2, 3, 4)),
    ("classification", 12, (3, 6)),
    ("regression", 12, (1,)),
    ("regression", 10, (4,)),  # micro-batches of 3, 3, 3 and 1
    ("classification", 9, (2,)),  # micro-batches of 5 and 4
)


@hidden_test("accumulated_gradients")
def accumulated_gradients(answer: Any, seed: int) -> dict:
    """Exercise 7: the gradients returned for models whose .grad already holds stale values,
    the batch sizes the model's first layer saw, and how many backward passes reached the
    last parameter."""
    check_callable(answer, "accumulated_gradients")
    rng = random.Random(seed)
    seen = {}
    for kind, batch, ks in ACCUMULATION_CASES:
        k = rng.choice(ks)
        model_seed = rng.randrange(2**31)
        for lib in LIBRARIES:
            where = f"a {lib_name(lib)} {kind} model, batch of {batch}, k = {k}"
            model, loss_fn, inputs, targets = _model_and_data(lib, model_seed, kind, batch)
            loss_fn(model(inputs[:5]), targets[:5]).backward()  # stale gradients
            sizes: list[int] = []
            backwards: list[int] = []
            model[0].register_forward_pre_hook(
                lambda module, args, sizes=sizes: sizes.append(len(args[0]))
            )
            last = list(model.parameters())[-1]
            last.register_hook(lambda grad, backwards=backwards: backwards.append(1))
            got = quiet_call(
                answer,
                model,
                loss_fn,
                inputs,
                targets,
                k,
                call=f"accumulated_gradients(model, loss_fn, inputs, targets, {k}) on {where}",
            )
            expect(
                isinstance(got, list),
                f"on {where}: return a list with one gradient per parameter, got "
                f"{type(got).__name__}.",
            )
            for index, g in enumerate(got):
                expect(
                    isinstance(g, lib.Tensor),
                    f"on {where}: gradient {index} is {type(g).__name__}, not a tensor.",
                )
            seen[where] = {
                "gradients": got,
                "batch sizes the model saw": sizes,
                "backward passes": len(backwards),
            }
    return seen


# -------------------------------------------------------------------------------------------------
# Exercise 8: fit_line
# -------------------------------------------------------------------------------------------------
def line_data(lib: Any, seed: int, n: int = 64) -> tuple[Any, Any]:
    """x uniform in [-1, 1], y = 2 x + 1 plus Gaussian noise of standard deviation 0.05."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(n, generator=gen, dtype=torch.float64) * 2 - 1
    y = 2 * x + 1 + 0.05 * torch.randn(n, generator=gen, dtype=torch.float64)
    return _leaf(lib, x, False), _leaf(lib, y, False)


# Errors of classic update mistakes, and what to do instead.
_UPDATE_HINTS = (
    (
        "does not require grad",
        "The loss no longer requires grad: `w = w - lr * w.grad` under no_grad binds `w` to a "
        "new tensor that does not require grad. Update w and b in place instead (`w -= ...`).",
    ),
    (
        "NoneType",
        "A .grad is None: `w = w - lr * w.grad` outside no_grad binds `w` to a new tensor that "
        "is no leaf, and backward fills the .grad of leaves only. Update w and b in place "
        "(`w -= ...`) under lib.no_grad().",
    ),
    (
        "in-place operation",
        "Run the update in a `lib.no_grad()` block, so that autograd does not record it.",
    ),
)


def _fit_line_call(answer: Any, args: tuple, call: str) -> Any:
    """Call fit_line; an error of a classic update mistake gets its hint. Warnings (e.g. from
    float() of a tensor that requires grad) never cost points: they are silenced."""
    try:
        return quiet_call(answer, *args, call=call)
    except Failure as failure:
        message = str(failure)
        for phrase, hint in _UPDATE_HINTS:
            if phrase in message:
                raise Failure(f"{message.rstrip('.')}. {hint}") from None
        raise


@hidden_test("fit_line")
def fit_line(answer: Any, seed: int) -> dict:
    """Exercise 8: w, b and the recorded losses (Python floats) on two data sets."""
    check_callable(answer, "fit_line")
    rng = random.Random(seed)
    seen = {}
    for steps, lr in ((150, 0.2), (rng.randint(120, 200), round(rng.uniform(0.1, 0.3), 3))):
        data_seed = rng.randrange(2**31)
        for lib in LIBRARIES:
            x, y = line_data(lib, data_seed)
            call = f"fit_line({lib.__name__}, x, y, steps={steps}, lr={lr})"
            result = _fit_line_call(answer, (lib, x, y, steps, lr), call)
            expect(
                isinstance(result, tuple) and len(result) == 3,
                f"{call} must return a tuple (w, b, losses).",
            )
            w, b, losses = result
            expect(
                all(isinstance(value, float) for value in (w, b)),
                f"{call}: w and b must be Python floats (use .item()), got "
                f"{type(w).__name__} and {type(b).__name__}.",
            )
            expect(
                isinstance(losses, list) and len(losses) == steps,
                f"{call}: losses must be a list of {steps} numbers, one per step.",
            )
            kinds = sorted({type(v).__name__ for v in losses if not isinstance(v, float)})
            expect(
                not kinds,
                f"{call}: losses must hold Python floats (loss.item()), you stored "
                f"{', '.join(kinds)}. A tensor in the list keeps its whole graph alive.",
            )
            seen[call] = {"w": float(w), "b": float(b), "losses": [float(v) for v in losses]}
    return seen


# -------------------------------------------------------------------------------------------------
# Exercise 9: predict_second_backward
# -------------------------------------------------------------------------------------------------
NO_PREDICTION = "no prediction"


@hidden_test("predict_second_backward")
def predict_second_backward(answer: Any) -> dict:
    """Exercise 9: the student's prediction for every snippet (judged in judge.py, per
    snippet: a missing one costs its own share only)."""
    check_callable(answer, "predict_second_backward")
    predictions = quiet_call(answer, call="predict_second_backward()")
    expect(
        isinstance(predictions, Mapping),
        f"predict_second_backward() must return a dict, it returned {type(predictions).__name__}.",
    )
    snippets = given("backward")["SNIPPETS"]
    return {key: predictions[key] if key in predictions else NO_PREDICTION for key in snippets}
