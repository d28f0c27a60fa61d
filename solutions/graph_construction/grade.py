"""Kernel half of notebook 1's hidden tests, "graph construction". A hidden test cell calls one:

    from solutions.graph_construction import grade
    grade.collect_nodes(collect_nodes)

Each test builds its cases on PyTorch and on minitorch (fixed hard cases: deep chains, shared
subexpressions, chains of diamonds, multi-output nodes; and graphs drawn from a seed), runs the
student's answer on them and returns what it saw as plain data; solutions/graph_construction/
judge.py decides the points (NOTE [Hidden tests in two halves] in solutions/grading.py). Nothing
here imports the reference solutions.

Nothing here walks a graph. A case's builder knows every node of its graph from how it built
it, in the order a breadth-first walk from the output meets them (`Case.nodes`), and its leaves.
Exercise 1 does not even need that: each node the student lists is described on its own (its
name, and where its children are in the list), which pins the list down exactly. Exercises 2
and 3 build on `collect_nodes`; they are graded with a stand-in for it that returns the builder's
list for the graded output, and exercise 7 with minitorch's own `minitorch.memory.graph_nodes`,
so a mistake in exercise 1 costs only exercise 1.
"""

from __future__ import annotations

import math
import random
import time
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

import minitorch
from minitorch.autograd.function import Node
from minitorch.memory import graph_nodes
from solutions.grading import (
    LIBRARIES,
    bounded_call,
    call_student,
    check_callable,
    expect,
    hidden_test,
    lib_name,
    node_label,
    plain,
    predictions_for,
    with_globals,
)
from solutions.reference_cells import given

DEEP_CHAIN_LENGTH = 5000
DIAMONDS = 40  # 2**40 paths from the output to the input: a walk without a visited set never ends
TIME_LIMIT_S = 2.0  # a walk may take this long, plus TIME_PER_BUILD times what building took
TIME_PER_BUILD = 10
TIMED_OUT = "timed out after seconds"  # the observation of a call stopped by its time bound


# -------------------------------------------------------------------------------------------------
# Graphs to grade on. A case is an output tensor and every node of its graph, found from how the
# case was built, in the order a breadth-first walk from the output meets them (children in
# next_functions order), which is the order exercise 1 asks for.
# -------------------------------------------------------------------------------------------------
@dataclass
class Case:
    """One graph of one library, and what its builder knows about it."""

    description: str  # e.g. "a chain of 5,000 ops (PyTorch)"
    out: Any
    nodes: list  # every node of out's graph, in breadth-first order ([] when not kept)
    leaves: list  # the leaves that require grad that out depends on, in the order of their nodes
    seconds: float  # how long building it took

    @property
    def out_is_a_leaf(self) -> bool:
        """Whether out is itself a leaf that requires grad."""
        return self.out.grad_fn is None and self.out.requires_grad


def _leaf(lib: Any, values: Any, requires_grad: bool) -> Any:
    return lib.tensor(values, dtype=lib.float64, requires_grad=requires_grad)


def _accumulate_grad(consumer: Any, slot: int = 0) -> Any:
    """The AccumulateGrad node of the leaf that is input `slot` of the op `consumer`."""
    return consumer.grad_fn.next_functions[slot][0]


# Ops of one node each whose tensor input is their first argument (so `next_functions[0]`).
UNARY: dict[str, Callable[[Any, Any], Any]] = {
    "sin": lambda lib, a: a.sin(),
    "tanh": lambda lib, a: lib.tanh(a),
    "double": lambda lib, a: a * 2.0,
    "shift": lambda lib, a: a + 1.0,
    "neg": lambda lib, a: -a,
    "sigmoid": lambda lib, a: a.sigmoid(),
    "square": lambda lib, a: a**2,
    "exp": lambda lib, a: a.exp(),
    "third": lambda lib, a: a / 3.0,
    "times_one": lambda lib, a: a * 1.0,
    "plus_zero": lambda lib, a: a + 0.0,
}
BINARY: dict[str, Callable[[Any, Any, Any], Any]] = {
    "add": lambda lib, a, b: a + b,
    "mul": lambda lib, a, b: a * b,
    "sub": lambda lib, a, b: a - b,
}
VECTOR, SCALAR = "vector", "scalar"  # the shapes of values in built graphs: (3,) and ()


@dataclass
class Step:
    """One node of a graph to build, listed in the order a breadth-first walk from the output
    meets it. `kind` is "leaf" (a leaf that requires grad: its node is its AccumulateGrad), "op"
    (one op of UNARY or BINARY, or "sum") or "unbind" (unbinding a vector: one node, three
    scalar outputs). Each operand is ("step", index, output_nr), or ("constant", shape) for a
    leaf without grad, or ("detached", shape) for a detached result (both give a None edge)."""

    kind: str
    shape: str  # of its value; an unbind step gives scalars
    op: str = ""
    operands: list[tuple] = field(default_factory=list)
    found_by: tuple[int, int] = (0, 0)  # a leaf's (step, operand slot) that meets it first


def random_steps(seed: int, n_ops: int) -> list[Step]:
    """A random graph of about `n_ops` ops over a few leaves, with shared subexpressions, leaves
    used at several depths, inputs without grad and unbind's multiple outputs.

    The graph is drawn from the output down, in breadth-first order: taking the steps in order,
    each op draws its operands, each either a new step (appended: the walk meets it now), a step
    met before (a shared subexpression: a later step, so that the graph has no cycle, or any
    leaf), or an input without grad. So the steps' order is the breadth-first order by
    construction."""
    rng = random.Random(seed)
    steps = [Step("op", SCALAR, "sum")]
    k = 0
    while k < len(steps):
        step = steps[k]
        if step.kind != "leaf":
            shapes = _operand_shapes(step, rng)
            recorded = rng.randrange(len(shapes))  # one operand has grad: the op is recorded
            step.operands = [
                _draw_operand(rng, steps, k, slot, shape, n_ops, slot != recorded)
                for slot, shape in enumerate(shapes)
            ]
        k += 1
    return steps


def _operand_shapes(step: Step, rng: random.Random) -> list[str]:
    if step.kind == "unbind" or step.op == "sum":
        return [VECTOR]
    if step.op in UNARY:
        return [step.shape]
    if step.shape == SCALAR:
        return [SCALAR, SCALAR]
    return rng.choice([[VECTOR, VECTOR], [VECTOR, VECTOR], [VECTOR, SCALAR], [SCALAR, VECTOR]])


def _draw_operand(
    rng: random.Random, steps: list[Step], k: int, slot: int, shape: str, n_ops: int, free: bool
) -> tuple:
    if free and rng.random() < 0.2:
        return (rng.choice(("constant", "detached")), shape)
    full = len(steps) >= n_ops
    reusable = [j for j, s in enumerate(steps) if s.shape == shape and (s.kind == "leaf" or j > k)]
    # Until the graph is full, the walk must not run out of ops to draw operands for.
    starving = not full and all(s.kind == "leaf" for s in steps[k + 1 :])
    if reusable and not starving and (full or rng.random() < 0.3):
        j = rng.choice(reusable)
    else:
        if full or (not starving and rng.random() < 0.15):
            steps.append(Step("leaf", shape, found_by=(k, slot)))
        elif shape == VECTOR:
            names = list(UNARY) if rng.random() < 0.5 else list(BINARY)
            steps.append(Step("op", VECTOR, rng.choice(names)))
        else:
            kind = rng.choice(["unary", "unary", "binary", "binary", "sum", "unbind"])
            if kind == "unbind":
                steps.append(Step("unbind", SCALAR))
            else:
                names = {"unary": list(UNARY), "binary": list(BINARY), "sum": ["sum"]}[kind]
                steps.append(Step("op", SCALAR, rng.choice(names)))
        j = len(steps) - 1
    return ("step", j, rng.randrange(3) if steps[j].kind == "unbind" else 0)


def build_steps(steps: list[Step], lib: Any, seed: int) -> tuple[Any, list, list]:
    """Build `steps` in `lib`: (out, its nodes in the steps' order, its leaves that require grad
    in that order). Every operand of a step is a later step or a leaf, so the steps are built
    leaves first, then from the last to the first."""
    rng = random.Random(seed)
    values: list[Any] = [None] * len(steps)

    def data(shape: str) -> Any:
        return [rng.uniform(-1, 1) for _ in range(3)] if shape == VECTOR else rng.uniform(-1, 1)

    def value(operand: tuple) -> Any:
        kind, *where = operand
        if kind == "step":
            j, output_nr = where
            return values[j][output_nr] if steps[j].kind == "unbind" else values[j]
        if kind == "constant":
            return _leaf(lib, data(where[0]), False)
        return (_leaf(lib, data(where[0]), True) * 2).detach()

    for j, step in enumerate(steps):
        if step.kind == "leaf":
            values[j] = _leaf(lib, data(step.shape), True)
    for j in reversed(range(len(steps))):
        step = steps[j]
        if step.kind == "unbind":
            values[j] = value(step.operands[0]).unbind()
        elif step.op == "sum":
            values[j] = value(step.operands[0]).sum()
        elif step.kind == "op":
            function = UNARY.get(step.op) or BINARY[step.op]
            values[j] = function(lib, *[value(operand) for operand in step.operands])
    nodes: list = []
    for step, built in zip(steps, values):
        if step.kind == "leaf":
            consumer, slot = step.found_by
            nodes.append(nodes[consumer].next_functions[slot][0])
        else:
            nodes.append((built[0] if step.kind == "unbind" else built).grad_fn)
    leaves = [built for step, built in zip(steps, values) if step.kind == "leaf"]
    return values[0], nodes, leaves


def chain_steps(length: int) -> list[Step]:
    """x followed by `length` ops in a row: a graph deeper than the recursion limit."""
    ops = [Step("op", VECTOR, "times_one" if i % 2 else "plus_zero") for i in range(length)]
    for i, step in enumerate(ops):
        step.operands = [("step", i + 1, 0)]
    return [*ops, Step("leaf", VECTOR, found_by=(length - 1, 0))]


def diamond_steps(diamonds: int) -> list[Step]:
    """h = x, then `diamonds` times h = h.sin() + tanh(h): every node is reached along many
    paths (2**diamonds from the output to x). Breadth-first: Add, Sin, Tanh, Add, ..., x."""
    steps = []
    for i in range(diamonds):
        below = 3 * i + 3  # the previous h (x after the last diamond)
        steps += [
            Step("op", VECTOR, "add", [("step", 3 * i + 1, 0), ("step", 3 * i + 2, 0)]),
            Step("op", VECTOR, "sin", [("step", below, 0)]),
            Step("op", VECTOR, "tanh", [("step", below, 0)]),
        ]
    return [*steps, Step("leaf", VECTOR, found_by=(3 * diamonds - 2, 0))]


# Fixed cases whose breadth-first order is written out by hand: there an op reuses a result met
# before it, which random_steps never draws.
def diamond(lib: Any) -> tuple[Any, list, list]:
    """a = x * 2 is used by three later ops: a shared node reached along several paths."""
    x = _leaf(lib, [0.5, -1.0, 2.0], True)
    a = x * 2
    left, right = a * a, a.sin() * a
    total = left + right
    out = total.sum()
    sin = right.grad_fn.next_functions[0][0]
    nodes = [out.grad_fn, total.grad_fn, left.grad_fn, right.grad_fn, a.grad_fn, sin]
    return out, [*nodes, _accumulate_grad(a)], [x]


def multi_output(lib: Any) -> tuple[Any, list, list]:
    """One UnbindBackward0 node reached through three different output numbers."""
    x = _leaf(lib, [0.5, -1.0, 2.0], True)
    p, q, r = x.unbind()
    product = p * q
    out = product + r
    return out, [out.grad_fn, product.grad_fn, p.grad_fn, _accumulate_grad(p)], [x]


def two_parameters(lib: Any) -> tuple[Any, list, list]:
    """A linear layer: leaves w and b require grad, the data x does not. b's node comes first."""
    w = _leaf(lib, [0.5, -1.0, 2.0], True)
    b = _leaf(lib, [0.1, 0.2, 0.3], True)
    x = _leaf(lib, [1.0, 2.0, 3.0], False)
    product = w * x
    total = product + b
    activation = total.tanh()
    out = activation.sum()
    nodes = [out.grad_fn, activation.grad_fn, total.grad_fn, product.grad_fn]
    return out, [*nodes, _accumulate_grad(total, 1), _accumulate_grad(product)], [b, w]


def three_parameters(lib: Any) -> tuple[Any, list, list]:
    """Leaves met at three depths: breadth-first order c, b, a differs from the order they were
    made in (b, a, c), its reverse and the order of a depth-first walk (a, b, c)."""
    b = _leaf(lib, [0.5, 1.5, -1.0], True)
    a = _leaf(lib, [0.2, -0.3, 0.4], True)
    c = _leaf(lib, [1.0, 2.0, 3.0], True)
    sin = a.sin()
    product = sin * b
    total = product + c
    out = total.sum()
    nodes = [out.grad_fn, total.grad_fn, product.grad_fn, _accumulate_grad(total, 1)]
    nodes += [sin.grad_fn, _accumulate_grad(product, 1), _accumulate_grad(sin)]
    return out, nodes, [c, b, a]


def a_leaf(lib: Any) -> tuple[Any, list, list]:
    """The output is itself a leaf that requires grad: no nodes, one leaf."""
    x = _leaf(lib, [1.0, 1.0], True)
    return x, [], [x]


def no_grad(lib: Any) -> tuple[Any, list, list]:
    """An op on data without grad: nothing recorded, no leaves."""
    return _leaf(lib, [1.0, 1.0], False) * 2, [], []


Builder = Callable[[Any], tuple[Any, list, list]]


def _from_steps(steps: list[Step], seed: int) -> Builder:
    return lambda lib: build_steps(steps, lib, seed)


def case_builders(seed: int, n_random: int = 6) -> list[tuple[str, Builder]]:
    """(description, build(lib) -> (out, nodes, leaves)) for every case of exercises 1 to 3, in
    the order they are graded: the chain of diamonds last, since a walk without a visited set
    runs into its time bound there, and what went wrong earlier says more."""
    master = random.Random(seed)
    builders: list[tuple[str, Builder]] = [
        (f"a chain of {DEEP_CHAIN_LENGTH:,} ops", _from_steps(chain_steps(DEEP_CHAIN_LENGTH), 0)),
        ("a leaf that requires grad", a_leaf),
        ("a tensor that does not require grad", no_grad),
        ("a graph where one node is used three times", diamond),
        ("x.unbind() feeding one expression", multi_output),
        ("a layer with two parameters", two_parameters),
        ("three parameters met at different depths", three_parameters),
    ]
    for number in range(1, n_random + 1):
        graph_seed, n_ops = master.randrange(2**31), master.randint(4, 40)
        steps = random_steps(graph_seed, n_ops)
        n_ops = sum(step.kind != "leaf" for step in steps)
        description = f"random graph #{number} of {n_ops} ops with shared subexpressions"
        builders.append((description, _from_steps(steps, graph_seed)))
    builders.append(
        (
            f"a chain of {DIAMONDS} diamonds, 2**{DIAMONDS} paths from the output to x",
            _from_steps(diamond_steps(DIAMONDS), 0),
        )
    )
    return builders


def cases(seed: int, with_nodes: bool = True) -> Iterator[Case]:
    """Every case of exercises 1 to 3, in both libraries, built one at a time. Without
    `with_nodes` a case does not keep its nodes (exercise 1: what the student's code could dig
    out of the grader's frames must not hold the answer)."""
    for description, build in case_builders(seed):
        for lib in LIBRARIES:
            yield _build(f"{description} ({lib_name(lib)})", build, lib, with_nodes)


def _build(description: str, build: Builder, lib: Any, with_nodes: bool) -> Case:
    start = time.perf_counter()
    out, nodes, leaves = build(lib)
    seconds = time.perf_counter() - start
    return Case(description, out, nodes if with_nodes else [], leaves, seconds)


def stand_in_collect_nodes(current: list[Case]) -> Callable[[Any], list]:
    """A `collect_nodes` for grading the exercises that build on it, revealing nothing a student
    does not have: for the output of the case being graded (`current`), its nodes as its builder
    listed them (breadth-first); for any other tensor, minitorch's own `graph_nodes`."""

    def collect_nodes(tensor: Any) -> list:
        for case in current:
            if case.out is tensor:
                return list(case.nodes)
        return [] if tensor.grad_fn is None else graph_nodes(tensor.grad_fn)

    return collect_nodes


def with_stand_in(answer: Any, collect_nodes: Callable) -> Any:
    """The student's function, seeing `collect_nodes` in place of their own."""
    if isinstance(answer, types.FunctionType):
        return with_globals(answer, collect_nodes=collect_nodes)
    return answer


def run_on_cases(
    answer: Any,
    seed: int,
    name: str,
    describe: Callable[[Any, Case, str], Any],
    stand_in: bool = True,
) -> dict:
    """{"on <case>": describe(answer(out), case, where)} for every case, in order, with the
    stand-in collect_nodes unless `stand_in` is false. A call that runs past its time bound is
    observed as {TIMED_OUT: its bound}, and no case after it runs (the verdict is decided by
    then)."""
    current: list[Case] = []
    if stand_in:
        answer = with_stand_in(answer, stand_in_collect_nodes(current))
    observed: dict[str, Any] = {}
    for case in cases(seed, with_nodes=stand_in):
        current[:] = [case]
        where = f"on {case.description}"
        seconds = TIME_LIMIT_S + TIME_PER_BUILD * case.seconds
        result, in_time = bounded_call(
            answer, case.out, call=f"{name}(out) {where}", seconds=seconds
        )
        if not in_time:
            observed[where] = {TIMED_OUT: round(seconds, 1)}
            break
        observed[where] = describe(result, case, where)
    return observed


# -------------------------------------------------------------------------------------------------
# Exercise 1: collect_nodes
# -------------------------------------------------------------------------------------------------
def _listed_nodes(result: Any, case: Case, where: str) -> dict:
    """The student's list, each item described on its own: a node as a list [number of its name
    in "names", then for each entry of its next_functions the position of that node in the list
    (None for a None entry, {"not listed": name} for a node missing from it)]; a node listed
    again as {"again": its first position}; None as None; anything else as {"not a node": type}.

    The grader does not need to know the graph: the list is the breadth-first list exactly when
    it starts at out.grad_fn and these descriptions equal the reference's, position by position
    (each node's children are then the same nodes at the same positions)."""
    expect(
        isinstance(result, list),
        f"{where}: collect_nodes must return a list, it returned {type(result).__name__}.",
    )
    node = torch.autograd.graph.Node if isinstance(case.out, torch.Tensor) else Node
    position: dict[int, int] = {}
    for index, item in enumerate(result):
        if isinstance(item, node):
            position.setdefault(id(item), index)
    names: dict[str, int] = {}
    listed: list[Any] = []
    for index, item in enumerate(result):
        if item is None:
            listed.append(None)
        elif not isinstance(item, node):
            listed.append({"not a node": type(item).__name__})
        elif position[id(item)] != index:
            listed.append({"again": position[id(item)]})
        else:
            name = names.setdefault(node_label(item), len(names))
            children = [
                None
                if child is None
                else position.get(id(child), {"not listed": node_label(child)})
                for child, _ in item.next_functions
            ]
            listed.append([name, *children])
    root = case.out.grad_fn
    return {
        "listed": listed,
        "names": list(names),
        "out.grad_fn at": None if root is None else position.get(id(root)),
    }


@hidden_test("collect_nodes")
def collect_nodes(answer: Any, seed: int | None = None) -> dict:
    """Exercise 1: the student's list on every case, each item described on its own."""
    check_callable(answer, "collect_nodes")
    return run_on_cases(answer, seed, "collect_nodes", _listed_nodes, stand_in=False)


# -------------------------------------------------------------------------------------------------
# Exercise 2: count_ops
# -------------------------------------------------------------------------------------------------
def _counts(result: Any, case: Case, where: str) -> dict:
    expect(
        isinstance(result, Mapping),
        f"{where}: count_ops must return a dict, it returned {type(result).__name__}.",
    )
    return {
        name if isinstance(name, str) else f"<a key of type {type(name).__name__}>": plain(count)
        for name, count in dict(result).items()
    }


@hidden_test("count_ops")
def count_ops(answer: Any, seed: int | None = None) -> dict:
    """Exercise 2: the student's counts on every case, with a stand-in collect_nodes."""
    check_callable(answer, "count_ops")
    return run_on_cases(answer, seed, "count_ops", _counts)


# -------------------------------------------------------------------------------------------------
# Exercise 3: find_leaves
# -------------------------------------------------------------------------------------------------
def _found_leaves(result: Any, case: Case, where: str) -> dict:
    """The student's list as numbers of the case's leaves; another tensor as its flags, any
    other object as its type."""
    expect(
        isinstance(result, list),
        f"{where}: find_leaves must return a list, it returned {type(result).__name__}.",
    )
    lib = torch if isinstance(case.out, torch.Tensor) else minitorch
    number = {id(leaf): i for i, leaf in enumerate(case.leaves)}
    found: list[Any] = []
    for item in result:
        if id(item) in number:
            found.append(number[id(item)])
        elif isinstance(item, lib.Tensor):
            flags = {"is_leaf": bool(item.is_leaf), "requires_grad": bool(item.requires_grad)}
            found.append({"tensor": flags})
        else:
            found.append({"type": type(item).__name__})
    return {"found": found, "out is a leaf that requires grad": case.out_is_a_leaf}


@hidden_test("find_leaves")
def find_leaves(answer: Any, seed: int | None = None) -> dict:
    """Exercise 3: which of each case's leaves the student finds, in which order, with a
    stand-in collect_nodes."""
    check_callable(answer, "find_leaves")
    return run_on_cases(answer, seed, "find_leaves", _found_leaves)


# -------------------------------------------------------------------------------------------------
# Exercise 4: predict_flags
# -------------------------------------------------------------------------------------------------
@hidden_test("predict_flags")
def predict_flags(answer: Any) -> dict:
    """Exercise 4: the student's prediction for every snippet (judged in judge.py)."""
    snippets = given("graph_construction")["SNIPPETS"]
    return dict(predictions_for(answer, "predict_flags", snippets, "snippet"))


# -------------------------------------------------------------------------------------------------
# Exercise 5: Softplus
# -------------------------------------------------------------------------------------------------
def _apply(answer: Any, x: Any, beta: float, call: str) -> Any:
    out = call_student(answer.apply, x, beta, call=call)
    expect(isinstance(out, minitorch.Tensor), f"{call} must return a minitorch tensor.")
    return out


@hidden_test("Softplus")
def softplus(answer: Any, seed: int | None = None) -> dict:
    """Exercise 5: forward values and gradients on random inputs, gradcheck, and use inside a
    bigger graph."""
    expect(
        isinstance(answer, type) and issubclass(answer, minitorch.autograd.Function),
        "Softplus must be a class derived from minitorch.autograd.Function.",
    )
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    observed: dict[str, Any] = {}
    for beta in (1.0, 2.0, 0.5, round(rng.uniform(0.3, 3.0), 3)):
        shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(0, 3)))
        values = (torch.rand(shape, generator=gen, dtype=torch.float64) - 0.5) * (8 / beta)
        upstream = torch.rand(shape, generator=gen, dtype=torch.float64) - 0.5
        x = minitorch.tensor(values.tolist(), dtype=minitorch.float64, requires_grad=True)
        call = f"Softplus.apply(x, {beta}) with x of shape {list(shape)}"
        out = _apply(answer, x, beta, call)
        recorded = out.grad_fn is not None
        if recorded:
            grad = minitorch.tensor(upstream.tolist(), dtype=minitorch.float64)
            call_student(out.backward, grad, call=f"backward of {call}")
        small = minitorch.tensor(
            values.flatten()[:4].tolist(), dtype=minitorch.float64, requires_grad=True
        )
        passed = call_student(
            lambda t, b=beta: minitorch.autograd.gradcheck(
                lambda u: answer.apply(u, b), (t,), raise_exception=False
            ),
            small,
            call=f"gradcheck of Softplus (beta={beta})",
        )
        observed[call] = {
            "beta": beta,
            "out": plain(out),
            "recorded": recorded,
            "x.grad": plain(x.grad),
            "gradcheck": passed is True,
        }
    # Inside a bigger graph, with an input that needs no gradient next to it.
    x = minitorch.tensor([-1.0, 0.25, 2.0], dtype=minitorch.float64, requires_grad=True)
    w = minitorch.tensor([0.5, -2.0, 1.5], dtype=minitorch.float64)
    call = "(Softplus.apply(x * 2, 1.5) * w).sum()"
    out = call_student(lambda: (_apply(answer, x * 2, 1.5, call) * w).sum(), call=call)
    call_student(out.backward, call=f"backward through {call}")
    observed[call] = {"x.grad": plain(x.grad)}
    no_grad_input = minitorch.tensor([1.0, 2.0], dtype=minitorch.float64)
    call = "Softplus.apply on a tensor without grad"
    observed[call] = {"requires_grad": _apply(answer, no_grad_input, 1.0, call).requires_grad}
    return observed


# -------------------------------------------------------------------------------------------------
# Exercise 6: f(x, y) = x**2 + y**3 - sin(x * y)
# -------------------------------------------------------------------------------------------------
def _describe_f(out: Any) -> dict:
    """What exercise 6 checks of `out`, found with minitorch's own graph walk."""
    nodes = [] if out.grad_fn is None else graph_nodes(out.grad_fn)
    leaves = [node.variable for node in nodes if hasattr(node, "variable")]
    return {
        "dtype": str(out.dtype).rsplit(".", 1)[-1],
        "value": out.item(),
        "has a grad_fn": out.grad_fn is not None,
        "records sin": any(node_label(node) == "SinBackward0" for node in nodes),
        "leaf dtypes": [str(leaf.dtype).rsplit(".", 1)[-1] for leaf in leaves],
    }


def _gradient(value: Any) -> Any:
    return value if type(value) is float else {"type": type(value).__name__}


@hidden_test("f_and_gradients")
def f_and_gradients(answer: Any, seed: int | None = None) -> dict:
    """Exercise 6 at (2, 3) and random points, on both libraries."""
    check_callable(answer, "f_and_gradients")
    rng = random.Random(seed)
    points = [(2.0, 3.0)] + [
        (round(rng.uniform(-3, 3), 4), round(rng.uniform(-3, 3), 4)) for _ in range(4)
    ]
    observed: dict[str, Any] = {}
    for x0, y0 in points:
        for lib in LIBRARIES:
            call = f"f_and_gradients({lib.__name__}, {x0}, {y0})"
            result = call_student(answer, lib, x0, y0, call=call)
            expect(
                isinstance(result, tuple) and len(result) == 3,
                f"{call} must return a tuple (out, df_dx, df_dy).",
            )
            out, df_dx, df_dy = result
            expect(
                isinstance(out, lib.Tensor) and out.dim() == 0,
                f"{call}: `out` must be a 0-d {lib_name(lib)} tensor.",
            )
            observed[call] = {
                "out": _describe_f(out),
                "df_dx": _gradient(df_dx),
                "df_dy": _gradient(df_dy),
            }
    return observed


# -------------------------------------------------------------------------------------------------
# Exercise 7: graph_sizes
# -------------------------------------------------------------------------------------------------
_SHRINKING: list[Callable[[Any, Any], Any]] = [
    lambda lib, a: a.sin(),
    lambda lib, a: lib.tanh(a),
    lambda lib, a: -a,
    lambda lib, a: a * 0.9,
]


def make_random_depth_model(lib: Any, seed: int) -> Callable[[Any], Any]:
    """A model whose number of layers depends on its input: it applies a shared layer until the
    hidden state's norm falls below a threshold (at most 12 times)."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    weight = _leaf(lib, (torch.rand(3, 3, generator=gen, dtype=torch.float64) - 0.5).tolist(), True)
    bias = _leaf(lib, (torch.rand(3, generator=gen, dtype=torch.float64) * 0.1).tolist(), True)
    extra = rng.choice(_SHRINKING)
    decay = rng.uniform(0.5, 0.7)
    threshold = rng.uniform(0.3, 0.6)

    def model(x: Any) -> Any:
        h = x
        steps = 0
        while h.norm().item() > threshold and steps < 12:
            h = h * decay + lib.tanh(weight @ h + bias) * 0.1
            if steps % 2:
                h = extra(lib, h)
            steps += 1
        return (h * h).sum() + bias.sum()

    return model


def make_chain_model(lib: Any) -> Callable[[Any], Any]:
    """A model as deep as the sum of its input: thousands of ops for the largest inputs."""
    weight = _leaf(lib, [0.5, -1.0, 2.0], True)

    def model(x: Any) -> Any:
        h = x * weight
        for i in range(round(x.sum().item())):
            h = h * 1.0 if i % 2 else h + 0.0
        return h.sum()

    return model


def make_diamond_model(lib: Any) -> Callable[[Any], Any]:
    """A model of as many diamonds h = h.sin() + tanh(h) as the sum of its input."""
    weight = _leaf(lib, [0.5, -1.0, 2.0], True)

    def model(x: Any) -> Any:
        h = x * weight
        for _ in range(round(x.sum().item())):
            h = h.sin() + lib.tanh(h)
        return h.sum()

    return model


def models(seed: int) -> Iterator[tuple[str, Callable[[Any], Any], list]]:
    """(description, model, inputs) for every model of exercise 7, in both libraries."""
    rng = random.Random(seed)
    for number in (1, 2, 3):
        model_seed = rng.randrange(2**31)
        scales = [0.1, 3.0, 8.0, 1.0, 20.0, 0.5]
        rng.shuffle(scales)
        for lib in LIBRARIES:
            gen = torch.Generator().manual_seed(model_seed)
            inputs = [
                _leaf(lib, ((torch.rand(3, generator=gen, dtype=torch.float64) + 0.5) * s).tolist(),
                      False)
                for s in scales
            ]  # fmt: skip
            where = f"a {lib_name(lib)} model whose depth depends on its input (#{number})"
            yield where, make_random_depth_model(lib, model_seed), inputs
    for lib in LIBRARIES:
        inputs = [_leaf(lib, [n / 3] * 3, False) for n in (1200, 7, DEEP_CHAIN_LENGTH // 2)]
        yield f"a {lib_name(lib)} model as deep as its input (thousands of ops)", \
            make_chain_model(lib), inputs  # fmt: skip
    for lib in LIBRARIES:
        inputs = [_leaf(lib, [n / 3] * 3, False) for n in (3, DIAMONDS, 25)]
        yield f"a {lib_name(lib)} model of as many diamonds as its input (up to 2**{DIAMONDS} " \
            "paths)", make_diamond_model(lib), inputs  # fmt: skip


def library_collect_nodes(tensor: Any) -> list:
    """The stand-in for collect_nodes in exercise 7: minitorch's own walk (any order)."""
    return [] if tensor.grad_fn is None else graph_nodes(tensor.grad_fn)


@hidden_test("graph_sizes")
def graph_sizes(answer: Any, seed: int | None = None) -> dict:
    """Exercise 7: the sizes the student counts for every input of data-dependent-depth models,
    with minitorch's graph walk standing in for collect_nodes."""
    check_callable(answer, "graph_sizes")
    answer = with_stand_in(answer, library_collect_nodes)
    observed: dict[str, Any] = {}
    for where, model, inputs in models(seed):
        start = time.perf_counter()
        for x in inputs:
            model(x)
        seconds = TIME_LIMIT_S + TIME_PER_BUILD * (time.perf_counter() - start)
        call = f"graph_sizes(model, inputs) on {where}"
        before = [(x.requires_grad, x.tolist()) for x in inputs]
        got, in_time = bounded_call(answer, model, list(inputs), call=call, seconds=seconds)
        if not in_time:
            observed[f"on {where}"] = {TIMED_OUT: round(seconds, 1)}
            break
        expect(
            isinstance(got, list) and all(type(n) is int for n in got),
            f"on {where}: graph_sizes must return a list of ints, got {got!r:.200}.",
        )
        expect(
            len(got) == len(inputs),
            f"on {where}: {len(inputs)} inputs but {len(got)} sizes returned.",
        )
        unchanged = before == [(x.requires_grad, x.tolist()) for x in inputs]
        observed[f"on {where}"] = {"sizes": got, "inputs unchanged": unchanged}
    return observed


# -------------------------------------------------------------------------------------------------
# Exercise 8: Value, a recording value class. A program is a list of instructions run with a
# leaf factory: the student's Value, or (in the tests) PyTorch's 0-d float64 tensors, which
# record the graph the reference must match.
# -------------------------------------------------------------------------------------------------
LOCAL_GRADIENT = 1.5  # the gradient every op node is called on, alone
Operand = int | float  # an earlier value's index, or a Python number


def program_with_control_flow(steps: int, x0: float, w0: float) -> list[tuple]:
    """The notebook's `program(x, w, steps)`: h = tanh(h * w + 1) `steps` times, then h * x if
    h > 0.5, else h * h + w. The branch is decided here, on floats, the way the program decides
    it on the values it computed."""
    code: list[tuple] = [("leaf", x0, True), ("leaf", w0, True)]
    h, index = x0, 0
    for _ in range(steps):
        code += [("mul", index, 1), ("add", len(code), 1.0), ("tanh", len(code) + 1)]
        h, index = math.tanh(h * w0 + 1.0), len(code) - 1
    if h > 0.5:
        code.append(("mul", index, 0))
    else:
        code += [("mul", index, index), ("add", len(code), 1)]
    return code


def random_program(seed: int, n_ops: int) -> list[tuple]:
    """Leaves with and without grad, then `n_ops` of add, mul and tanh on recent values (so
    values are reused) and numbers on either side."""
    rng = random.Random(seed)
    code: list[tuple] = [
        ("leaf", round(rng.uniform(-1.5, 1.5), 3), requires_grad)
        for requires_grad in (True, True, rng.random() < 0.5, False)
    ]

    def operand() -> Operand:
        if rng.random() < 0.2:
            return round(rng.uniform(-2.0, 2.0), 2)
        return max(0, len(code) - 1 - int(rng.expovariate(0.5)))

    for _ in range(n_ops):
        kind = rng.choice(("add", "mul", "mul", "tanh"))
        if kind == "tanh":
            code.append(("tanh", max(0, len(code) - 1 - int(rng.expovariate(0.5)))))
            continue
        a, b = operand(), operand()
        if not isinstance(a, int) and not isinstance(b, int):
            b = len(code) - 1
        code.append((kind, a, b))
    return code


def recording_programs(seed: int | None) -> list[tuple[str, list[tuple]]]:
    """(description, program): fixed programs first, then random ones."""
    rng = random.Random(seed)
    programs = [
        ("y = (x * x).tanh()", [("leaf", 0.5, True), ("mul", 0, 0), ("tanh", 1)]),
        (
            "x * y + y.tanh(), y without grad",
            [("leaf", 0.7, True), ("leaf", -1.2, False), ("mul", 0, 1), ("tanh", 1), ("add", 2, 3)],
        ),  # fmt: skip
        (
            "numbers on both sides: 2 * x + 1, then 0.5 + x * 3",
            [
                ("leaf", -0.4, True),
                ("mul", 2.0, 0),
                ("add", 1, 1.0),
                ("mul", 0, 3.0),
                ("add", 0.5, 3),
                ("mul", 2, 4),
            ],
        ),  # fmt: skip
        (
            "only values without grad: nothing is recorded",
            [("leaf", 3.0, False), ("mul", 0, 2.0), ("add", 1, 1.0), ("tanh", 2)],
        ),
        ("program(x, w, 3), a loop and an if", program_with_control_flow(3, 0.8, -0.6)),
        ("program(x, w, 1), the other branch", program_with_control_flow(1, 1.0, -1.5)),
    ]
    for number in range(1, 5):
        program_seed, n_ops = rng.randrange(2**31), rng.randint(6, 14)
        programs.append(
            (f"random program {number}, {n_ops} ops", random_program(program_seed, n_ops))
        )
    return programs


def _describe(code: list[tuple]) -> list[str]:
    """Each instruction as the expression it computes: "v0 = leaf 0.5 (requires grad)",
    "v2 = v0 * v1", "v3 = 2.0 + v1", "v4 = v3.tanh()"."""
    names = []
    for index, (kind, *args) in enumerate(code):
        if kind == "leaf":
            value, requires_grad = args
            text = f"leaf {value}" + (" (requires grad)" if requires_grad else "")
        elif kind == "tanh":
            text = f"v{args[0]}.tanh()"
        else:
            a, b = (f"v{arg}" if isinstance(arg, int) else repr(arg) for arg in args)
            text = f"{a} {'+' if kind == 'add' else '*'} {b}"
        names.append(f"v{index} = {text}")
    return names


def run_program(code: list[tuple], leaf: Callable[[float, bool], Any]) -> list:
    """Every value the program makes, in order; leaves from `leaf(value, requires_grad)`."""
    values: list = []
    for kind, *args in code:
        if kind == "leaf":
            values.append(leaf(*args))
        elif kind == "tanh":
            values.append(values[args[0]].tanh())
        else:
            a, b = (values[arg] if isinstance(arg, int) else arg for arg in args)
            values.append(a + b if kind == "add" else a * b)
    return values


def _as_float(value: Any) -> Any:
    """A float from a number or a 0-d tensor; the type's name otherwise."""
    if isinstance(value, (torch.Tensor, minitorch.Tensor)) and value.numel() == 1:
        return float(value.item())
    if type(value) in (int, float, bool):
        return float(value)
    return f"a {type(value).__name__}"


def _walk(out: Any, where: str) -> list:
    """The nodes reachable from out.grad_fn, breadth-first, children in next_functions order.
    An edge that does not point at a node (a value, a bare node without a pair) stops there."""
    root = getattr(out, "grad_fn", None)
    if root is None:
        return []
    nodes, seen = [root], {id(root)}
    for node in nodes:  # the list grows while it is walked
        edges = getattr(node, "next_functions", None)
        expect(
            isinstance(edges, (tuple, list)),
            f"{where}: the {node_label(node)} node's next_functions is "
            f"{type(edges).__name__}, not a tuple of (node, 0) pairs.",
        )
        for edge in edges:
            child = edge[0] if isinstance(edge, (tuple, list)) and len(edge) == 2 else None
            if child is not None and hasattr(child, "next_functions") and id(child) not in seen:
                seen.add(id(child))
                nodes.append(child)
    return nodes


def _edge(edge: Any, position: dict[int, int]) -> Any:
    """[node number, output_nr], [None, output_nr], or a string naming what the edge holds."""
    if not (isinstance(edge, (tuple, list)) and len(edge) == 2):
        return f"a {type(edge).__name__} (not a (node, 0) pair)"
    child, nr = edge
    nr = nr if type(nr) is int else f"a {type(nr).__name__}"
    if child is None:
        return [None, nr]
    if id(child) in position:
        return [position[id(child)], nr]
    return f"a {type(child).__name__} (not a node)"


def _local_gradients(node: Any, edges: list, is_torch: bool, where: str) -> Any:
    """What the op node returns when called on LOCAL_GRADIENT alone: one float per input that
    has an edge (None for the others), or a string saying what it returned instead."""
    grad = torch.tensor(LOCAL_GRADIENT, dtype=torch.float64) if is_torch else LOCAL_GRADIENT
    result = call_student(node, grad, call=f"the {node_label(node)} node called on 1.5 {where}")
    if is_torch and not isinstance(result, tuple):
        result = (result,)
    if not isinstance(result, (tuple, list)):
        return f"a {type(result).__name__}, not a tuple"
    if len(result) != len(edges):
        return f"a tuple of {len(result)} gradients for {len(edges)} inputs"
    return [
        None if isinstance(edge, list) and edge[0] is None else _as_float(g)
        for edge, g in zip(edges, result)
    ]


def _gradients(nodes: list, out: Any, is_torch: bool, where: str) -> dict[int, float]:
    """The chain rule over the walked graph, in a topological order (Kahn's): d(out)/d(leaf)
    per AccumulateGrad node (by number), from what each op node returns."""
    position = {id(node): i for i, node in enumerate(nodes)}
    children = [
        [position.get(id(e[0])) if isinstance(e, (tuple, list)) and e else None for e in
         node.next_functions]
        for node in nodes
    ]  # fmt: skip
    consumers = [0] * len(nodes)
    for edges in children:
        for child in edges:
            if child is not None:
                consumers[child] += 1
    one = torch.tensor(1.0, dtype=torch.float64) if is_torch else 1.0
    grads: dict[int, Any] = {0: one}
    ready, found = [0], {}
    while ready:
        i = ready.pop()
        node, grad = nodes[i], grads.pop(i, 0.0)
        if hasattr(node, "variable"):
            found[i] = _as_float(grad)
            continue
        result = call_student(node, grad, call=f"the {node_label(node)} node {where}")
        result = result if isinstance(result, (tuple, list)) else (result,)
        for child, child_grad in zip(children[i], result):
            if child is None:
                continue
            if child_grad is not None:
                earlier = grads.get(child)
                grads[child] = child_grad if earlier is None else earlier + child_grad
            consumers[child] -= 1
            if consumers[child] == 0:
                ready.append(child)
    return found


def observe_program(code: list[tuple], leaf: Callable[[float, bool], Any], where: str) -> dict:
    """What recording `code` gives: each value's number, requires_grad and node name; the graph
    from the last value (names, edges, the leaf behind each AccumulateGrad); what each op node
    returns on 1.5; and d(out)/d(leaf) for every leaf that requires grad."""
    is_torch = leaf is torch_leaf
    values = call_student(run_program, code, leaf, call=where)
    for value in values:
        for attribute in ("data", "requires_grad", "grad_fn"):
            expect(
                hasattr(value, attribute),
                f"{where}: a result of an op is a {type(value).__name__} without "
                f".{attribute}; return a Value (made by record).",
            )
    out = values[-1]
    nodes = _walk(out, where)
    position = {id(node): i for i, node in enumerate(nodes)}
    made_by = {id(v.grad_fn): i for i, v in enumerate(values) if v.grad_fn is not None}
    leaves = {id(v): i for i, v in enumerate(values) if code[i][0] == "leaf"}
    graph = []
    for node in nodes:
        edges = [_edge(edge, position) for edge in node.next_functions]
        variable = getattr(node, "variable", None)
        graph.append(
            {
                "name": node_label(node),
                "edges": edges,
                "made by": made_by.get(id(node)),
                "leaf": None if variable is None else leaves.get(id(variable), "another value"),
                "returns": None
                if variable is not None
                else _local_gradients(node, edges, is_torch, where),
            }
        )
    well_formed = all(isinstance(edge, list) for item in graph for edge in item["edges"]) and all(
        isinstance(item["returns"], (list, type(None))) for item in graph
    )
    gradients = _gradients(nodes, out, is_torch, where) if nodes and well_formed else {}
    return {
        "values": [_as_float(v.data) for v in values],
        "requires grad": [v.requires_grad is True for v in values],
        "grad_fn": [None if v.grad_fn is None else node_label(v.grad_fn) for v in values],
        "graph": graph,
        "gradients": {str(graph[i]["leaf"]): g for i, g in gradients.items()},
    }


def torch_leaf(value: float, requires_grad: bool) -> torch.Tensor:
    """A 0-d float64 PyTorch leaf: what the reference Value must record like."""
    return torch.tensor(value, dtype=torch.float64, requires_grad=requires_grad)


@hidden_test("Value")
def recording_value(answer: Any, seed: int | None = None) -> dict:
    """Exercise 8: for every program, what recording it with the student's Value gives
    (`observe_program`): judged against the reference, which records PyTorch's graphs."""
    expect(
        isinstance(answer, type),
        f"expected a class, got {type(answer).__name__}: did you pass Value?",
    )
    observed = {}
    for description, code in recording_programs(seed):
        where = f"recording {description}"
        observed[where] = {
            "code": _describe(code),
            **observe_program(code, lambda value, rg: answer(value, requires_grad=rg), where),
        }
    return observed
