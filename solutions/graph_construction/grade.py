"""Graders of notebook 1, "graph construction". A hidden test cell calls one of them:

    from solutions.graph_construction import grade
    grade.collect_nodes(collect_nodes)

Each grader builds fresh random graphs on PyTorch and on minitorch (plus fixed hard cases: deep
chains, shared subexpressions, multi-output nodes), runs the student's answer and the reference
on them, and fails with a clean AssertionError that names what went wrong (see
solutions/grading.py). Pass `seed=` to make the random cases reproducible (the tests do).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F

import minitorch
from solutions.grading import (
    DEFAULT_RECURSION_LIMIT,
    LIBRARIES,
    Failure,
    call_student,
    check_callable,
    expect,
    grader,
    hidden_test,
    lib_name,
    node_label,
    predictions_for,
    recursion_limit,
)
from solutions.graph_construction import reference
from solutions.reference_cells import given

ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"
DEEP_CHAIN_LENGTH = 5000


# -------------------------------------------------------------------------------------------------
# Graphs to grade on. Each builder takes the library (torch or minitorch) and returns the output
# tensor; the same seed gives the same graph structure in both libraries.
# -------------------------------------------------------------------------------------------------
def _leaf(lib: Any, values: torch.Tensor, requires_grad: bool) -> Any:
    return lib.tensor(values.tolist(), dtype=lib.float64, requires_grad=requires_grad)


_UNARY: list[Callable[[Any, Any], Any]] = [
    lambda lib, a: a.sin(),
    lambda lib, a: lib.tanh(a),
    lambda lib, a: a * 2.0,
    lambda lib, a: a + 1.0,
    lambda lib, a: -a,
    lambda lib, a: a.sigmoid(),
    lambda lib, a: a**2,
    lambda lib, a: a.exp() / 3.0,
]
_SHRINKING: list[Callable[[Any, Any], Any]] = [
    lambda lib, a: a.sin(),
    lambda lib, a: lib.tanh(a),
    lambda lib, a: -a,
    lambda lib, a: a * 0.9,
]
_BINARY: list[Callable[[Any, Any, Any], Any]] = [
    lambda lib, a, b: a + b,
    lambda lib, a, b: a * b,
    lambda lib, a, b: a - b,
]


def random_graph(lib: Any, seed: int, n_ops: int) -> tuple[Any, list]:
    """A random expression over a few leaves (some without grad) with fan-out, reuse of
    intermediate results (shared subexpressions), occasional detach and a multi-output unbind.
    Returns (output, all leaves created)."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    n_leaves = rng.randint(1, 5)
    leaves = [
        _leaf(lib, torch.rand(3, generator=gen, dtype=torch.float64) - 0.5, rng.random() < 0.75)
        for _ in range(n_leaves)
    ]
    pool = list(leaves)

    def pick() -> Any:
        # Prefer recent values (depth), reach back often enough to share old ones, and bring
        # in the leaves now and then.
        if rng.random() < 0.15:
            return rng.choice(leaves)
        return pool[max(0, len(pool) - 1 - int(rng.expovariate(0.4)))]

    for _ in range(n_ops):
        kind = rng.random()
        if kind < 0.45:
            pool.append(rng.choice(_UNARY)(lib, pick()))
        elif kind < 0.9:
            pool.append(rng.choice(_BINARY)(lib, pick(), pick()))
        elif kind < 0.95:
            pool.append(pick().detach())
        else:
            first, second, third = pick().unbind()
            pool.append(first * second + third + pick())
    out = (pool[-1] + pool[max(0, len(pool) - 4)]).sum()
    return out, leaves


def diamond(lib: Any) -> Any:
    """a = x * 2 is used by three later ops: a shared node reached along several paths."""
    x = _leaf(lib, torch.tensor([0.5, -1.0, 2.0]), True)
    a = x * 2
    return (a * a + a.sin() * a).sum()


def multi_output(lib: Any) -> Any:
    """One UnbindBackward0 node reached through three different output numbers."""
    x = _leaf(lib, torch.tensor([0.5, -1.0, 2.0]), True)
    p, q, r = x.unbind()
    return p * q + r


def two_parameters(lib: Any) -> Any:
    """A linear layer: leaves w and b require grad, the data x does not."""
    w = _leaf(lib, torch.tensor([0.5, -1.0, 2.0]), True)
    b = _leaf(lib, torch.tensor([0.1, 0.2, 0.3]), True)
    x = _leaf(lib, torch.tensor([1.0, 2.0, 3.0]), False)
    return (w * x + b).tanh().sum()


def chain(lib: Any, length: int) -> Any:
    """x followed by `length` ops in a row: a graph deeper than the recursion limit."""
    h = _leaf(lib, torch.tensor([1.0, 2.0]), True)
    for i in range(length):
        h = h * 1.0 if i % 2 else h + 0.0
    return h


def _cases(seed: int | None, n_random: int = 6) -> list[tuple[str, Callable[[Any], Any]]]:
    """(description, builder(lib) -> output) for every case graded on both libraries."""
    master = random.Random(seed)
    cases: list[tuple[str, Callable[[Any], Any]]] = [
        ("a leaf that requires grad", lambda lib: _leaf(lib, torch.ones(2), True)),
        ("a tensor that does not require grad", lambda lib: _leaf(lib, torch.ones(2), False) * 2),
        ("a graph where one node is used three times", diamond),
        ("x.unbind() feeding one expression", multi_output),
        ("a layer with two parameters", two_parameters),
    ]
    for _ in range(n_random):
        graph_seed, n_ops = master.randrange(2**31), master.randint(4, 40)
        cases.append(
            (
                f"a random graph of {n_ops} ops with shared subexpressions",
                lambda lib, s=graph_seed, n=n_ops: random_graph(lib, s, n)[0],
            )
        )
    return cases


def _deep_call(function: Callable, output: Any, call: str) -> Any:
    with recursion_limit(DEFAULT_RECURSION_LIMIT):
        return call_student(function, output, call=call)


def _names(nodes: list) -> str:
    names = [node_label(n) for n in nodes]
    if len(names) > 8:
        names = names[:8] + [f"... ({len(nodes)} in all)"]
    return "[" + ", ".join(names) + "]"


# -------------------------------------------------------------------------------------------------
# Exercise 1: collect_nodes
# -------------------------------------------------------------------------------------------------
def _check_node_list(answer: Any, expected: list, where: str, what: str) -> None:
    expect(
        isinstance(answer, list),
        f"{where}: {what} must return a list, it returned {type(answer).__name__}.",
    )
    expect(
        all(node is not None for node in answer),
        f"{where}: the list contains None. The `None` entries of next_functions mark inputs "
        "that need no gradient: skip them.",
    )
    seen_ids: set[int] = set()
    for node in answer:
        expect(
            id(node) not in seen_ids,
            f"{where}: {node_label(node)} is listed more than once. A node reached along "
            "several paths (a shared subexpression) must appear once: remember the nodes "
            "you have already seen in a set.",
        )
        seen_ids.add(id(node))
    expected_ids = {id(node) for node in expected}
    missing = [node for node in expected if id(node) not in seen_ids]
    extra = [node for node in answer if id(node) not in expected_ids]
    expect(
        not extra,
        f"{where}: the list has {len(extra)} object(s) that are not nodes of this graph, "
        f"e.g. a {type(extra[0]).__name__ if extra else ''}. List the node objects themselves "
        "(grad_fn and the nodes in next_functions).",
    )
    expect(
        not missing,
        f"{where}: {len(missing)} of the graph's {len(expected)} nodes are missing, e.g. "
        f"{node_label(missing[0]) if missing else ''}. Did you follow every entry of "
        "next_functions, and include the AccumulateGrad nodes?",
    )
    for position, (got, want) in enumerate(zip(answer, expected)):
        expect(
            got is want,
            f"{where}: the nodes are all there but the order differs at position {position} "
            f"(you have {node_label(got)}, breadth-first order has {node_label(want)}). List "
            "nodes breadth-first, children in next_functions order, each when first discovered.",
        )


@grader("collect_nodes")
def collect_nodes(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 1 on fixed and random graphs in both libraries, and on a deep chain."""
    check_callable(answer, "collect_nodes")
    for lib in LIBRARIES:
        out = chain(lib, DEEP_CHAIN_LENGTH)
        where = f"on a {lib_name(lib)} chain of {DEEP_CHAIN_LENGTH:,} ops"
        got = _deep_call(answer, out, f"collect_nodes(out) {where}")
        _check_node_list(got, reference.collect_nodes(out), where, "collect_nodes")
    for description, build in _cases(seed):
        for lib in LIBRARIES:
            out = build(lib)
            where = f"on {description} ({lib_name(lib)})"
            got = call_student(answer, out, call=f"collect_nodes(out) {where}")
            _check_node_list(got, reference.collect_nodes(out), where, "collect_nodes")


# -------------------------------------------------------------------------------------------------
# Exercise 2: count_ops
# -------------------------------------------------------------------------------------------------
@grader("count_ops")
def count_ops(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 2: counts per node name, each node once, AccumulateGrad left out."""
    check_callable(answer, "count_ops")
    cases = _cases(seed) + [(f"a chain of {DEEP_CHAIN_LENGTH:,} ops", _deep_chain)]
    for description, build in cases:
        for lib in LIBRARIES:
            out = build(lib)
            where = f"on {description} ({lib_name(lib)})"
            got = (
                _deep_call(answer, out, f"count_ops(out) {where}")
                if description.startswith("a chain")
                else call_student(answer, out, call=f"count_ops(out) {where}")
            )
            _check_counts(got, reference.count_ops(out), where)


def _deep_chain(lib: Any) -> Any:
    return chain(lib, DEEP_CHAIN_LENGTH)


def _check_counts(answer: Any, expected: dict, where: str) -> None:
    expect(
        isinstance(answer, Mapping),
        f"{where}: count_ops must return a dict, it returned {type(answer).__name__}.",
    )
    got = {name: count for name, count in answer.items() if count != 0}
    expect(
        ACCUMULATE_GRAD not in got,
        f"{where}: AccumulateGrad nodes are not ops; leave {ACCUMULATE_GRAD!r} out of the counts.",
    )
    for name in sorted(set(got) | set(expected)):
        want, have = expected.get(name, 0), got.get(name, 0)
        hint = (
            " Each node must be counted once, however many paths lead to it."
            if have > want
            else " Did you visit every node of the graph?"
        )
        expect(
            have == want,
            f"{where}: {name!r} counted {have} time(s), the graph has {want} such node(s).{hint}",
        )


# -------------------------------------------------------------------------------------------------
# Exercise 3: find_leaves
# -------------------------------------------------------------------------------------------------
@grader("find_leaves")
def find_leaves(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 3: the leaf tensors behind AccumulateGrad nodes, each once, in order."""
    check_callable(answer, "find_leaves")
    for description, build in _cases(seed):
        for lib in LIBRARIES:
            out = build(lib)
            where = f"on {description} ({lib_name(lib)})"
            got = call_student(answer, out, call=f"find_leaves(out) {where}")
            _check_leaves(got, reference.find_leaves(out), lib, where)


def _check_leaves(answer: Any, expected: list, lib: Any, where: str) -> None:
    expect(
        isinstance(answer, list),
        f"{where}: find_leaves must return a list, it returned {type(answer).__name__}.",
    )
    for item in answer:
        expect(
            isinstance(item, lib.Tensor),
            f"{where}: the list holds an object of type {type(item).__name__}, not a tensor. "
            "An AccumulateGrad "
            "node's `.variable` is the leaf tensor itself.",
        )
        expect(
            item.is_leaf and item.requires_grad,
            f"{where}: the list holds a tensor with is_leaf={item.is_leaf}, "
            f"requires_grad={item.requires_grad}; only leaves that require grad receive a .grad.",
        )
    ids = [id(item) for item in answer]
    expect(len(ids) == len(set(ids)), f"{where}: a leaf is listed more than once.")
    expected_ids = [id(item) for item in expected]
    expect(
        set(ids) == set(expected_ids),
        f"{where}: you found {len(answer)} leaves, the output depends on {len(expected)} "
        "leaves that require grad."
        + (
            " Is `out` itself such a leaf?"
            if len(expected) == 1 and expected[0].grad_fn is None
            else ""
        ),
    )
    expect(
        ids == expected_ids,
        f"{where}: the right leaves, in the wrong order: list them in the order collect_nodes "
        "lists their AccumulateGrad nodes.",
    )


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
@grader("Softplus")
def softplus(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 5: forward and backward against PyTorch, gradcheck, use inside a graph."""
    expect(
        isinstance(answer, type) and issubclass(answer, minitorch.autograd.Function),
        "Softplus must be a class derived from minitorch.autograd.Function.",
    )
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(rng.randrange(2**31))
    for beta in (1.0, 2.0, 0.5, round(rng.uniform(0.3, 3.0), 3)):
        shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(0, 3)))
        values = (torch.rand(shape, generator=gen, dtype=torch.float64) - 0.5) * (8 / beta)
        upstream = torch.rand(shape, generator=gen, dtype=torch.float64) - 0.5
        x = minitorch.tensor(values.tolist(), dtype=minitorch.float64, requires_grad=True)
        call = f"Softplus.apply(x, {beta}) with x of shape {list(shape)}"
        out = call_student(answer.apply, x, beta, call=call)
        expect(isinstance(out, minitorch.Tensor), f"{call} must return a minitorch tensor.")
        expected = F.softplus(values, beta=beta)
        expect(
            tuple(out.shape) == tuple(expected.shape),
            f"{call} has shape {list(out.shape)}, expected {list(expected.shape)}.",
        )
        expect(
            torch.allclose(out._data.to(torch.float64), expected, rtol=1e-6, atol=1e-9),
            f"{call}: forward values differ from torch.nn.functional.softplus(x, beta={beta}).",
        )
        expect(out.grad_fn is not None, f"{call} is not recorded in the graph (no grad_fn).")
        grad = minitorch.tensor(upstream.tolist(), dtype=minitorch.float64)
        call_student(out.backward, grad, call=f"backward of {call}")
        reference_x = values.clone().requires_grad_()
        F.softplus(reference_x, beta=beta).backward(upstream)
        expect(x.grad is not None, f"backward of {call} gave x no gradient.")
        expect(
            torch.allclose(x.grad._data, reference_x.grad, rtol=1e-6, atol=1e-9),
            f"backward of {call}: x.grad differs from PyTorch's for the same upstream gradient. "
            "Check the derivative (chain rule through beta * x) and that you multiply by the "
            "incoming gradient.",
        )
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
        expect(
            passed,
            f"gradcheck failed for beta={beta}: backward does not match finite "
            "differences of your forward.",
        )
    # Inside a bigger graph, with an input that needs no gradient next to it.
    x = minitorch.tensor([-1.0, 0.25, 2.0], dtype=minitorch.float64, requires_grad=True)
    w = minitorch.tensor([0.5, -2.0, 1.5], dtype=minitorch.float64)
    out = call_student(lambda: (answer.apply(x * 2, 1.5) * w).sum(), call="Softplus in a graph")
    call_student(out.backward, call="backward through (Softplus.apply(x * 2, 1.5) * w).sum()")
    tx = torch.tensor([-1.0, 0.25, 2.0], dtype=torch.float64, requires_grad=True)
    (
        F.softplus(tx * 2, beta=1.5) * torch.tensor([0.5, -2.0, 1.5], dtype=torch.float64)
    ).sum().backward()
    expect(
        x.grad is not None and torch.allclose(x.grad._data, tx.grad),
        "x.grad of (Softplus.apply(x * 2, 1.5) * w).sum() differs from PyTorch's.",
    )
    plain = minitorch.tensor([1.0, 2.0], dtype=minitorch.float64)
    result = call_student(answer.apply, plain, 1.0, call="Softplus.apply on a tensor without grad")
    expect(not result.requires_grad, "Softplus of a tensor without grad must not require grad.")


# -------------------------------------------------------------------------------------------------
# Exercise 6: f(x, y) = x**2 + y**3 - sin(x * y)
# -------------------------------------------------------------------------------------------------
def _f_and_exact_gradients(x: float, y: float) -> tuple[float, float, float]:
    return (x**2 + y**3 - math.sin(x * y), 2 * x - y * math.cos(x * y),
            3 * y**2 - x * math.cos(x * y))  # fmt: skip


@grader("f_and_gradients")
def f_and_gradients(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 6 at (2, 3) and random points, on both libraries."""
    check_callable(answer, "f_and_gradients")
    rng = random.Random(seed)
    points = [(2.0, 3.0)] + [
        (round(rng.uniform(-3, 3), 4), round(rng.uniform(-3, 3), 4)) for _ in range(4)
    ]
    for x0, y0 in points:
        value, dx, dy = _f_and_exact_gradients(x0, y0)
        for lib in LIBRARIES:
            call = f"f_and_gradients({lib.__name__}, {x0}, {y0})"
            result = call_student(answer, lib, x0, y0, call=call)
            expect(
                isinstance(result, tuple) and len(result) == 3,
                f"{call} must return a tuple (out, df_dx, df_dy).",
            )
            out, got_dx, got_dy = result
            expect(
                isinstance(out, lib.Tensor) and out.dim() == 0,
                f"{call}: `out` must be a 0-d {lib_name(lib)} tensor.",
            )
            expect(
                out.dtype == lib.float64,
                f"{call}: `out` is {out.dtype}; create x and y with dtype=lib.float64.",
            )
            expect(
                math.isclose(out.item(), value, rel_tol=1e-9, abs_tol=1e-9),
                f"{call}: f = {out.item()!r}, expected {value!r}.",
            )
            expect(
                out.grad_fn is not None,
                f"{call}: `out` has no grad_fn: create x and y with requires_grad=True.",
            )
            names = {node.name() for node in reference.collect_nodes(out)}
            expect(
                "SinBackward0" in names,
                f"{call}: the graph of `out` has no SinBackward0 node, so sin(x * y) was not "
                "recorded. Use lib.sin (math.sin turns the tensor into a Python float).",
            )
            leaves = reference.find_leaves(out)
            expect(
                len(leaves) == 2 and all(leaf.dtype == lib.float64 for leaf in leaves),
                f"{call}: `out` should depend on exactly two float64 leaves x and y, "
                f"found {len(leaves)}.",
            )
            for label, got, want in (("df_dx", got_dx, dx), ("df_dy", got_dy, dy)):
                expect(
                    isinstance(got, float),
                    f"{call}: {label} must be a Python float (use .item()), got "
                    f"{type(got).__name__}.",
                )
                expect(
                    math.isclose(got, want, rel_tol=1e-7, abs_tol=1e-9),
                    f"{call}: {label} = {got!r}, expected {want!r}.",
                )


# -------------------------------------------------------------------------------------------------
# Exercise 7: graph_sizes
# -------------------------------------------------------------------------------------------------
def make_random_depth_model(lib: Any, seed: int) -> Callable[[Any], Any]:
    """A model whose number of layers depends on its input: it applies a shared layer until the
    hidden state's norm falls below a threshold (at most 12 times)."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    weight = _leaf(lib, torch.rand(3, 3, generator=gen, dtype=torch.float64) - 0.5, True)
    bias = _leaf(lib, torch.rand(3, generator=gen, dtype=torch.float64) * 0.1, True)
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


@grader("graph_sizes")
def graph_sizes(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 7 on random data-dependent-depth models, in both libraries."""
    check_callable(answer, "graph_sizes")
    rng = random.Random(seed)
    for _ in range(3):
        model_seed = rng.randrange(2**31)
        scales = [0.1, 3.0, 8.0, 1.0, 20.0, 0.5]
        rng.shuffle(scales)
        for lib in LIBRARIES:
            model = make_random_depth_model(lib, model_seed)
            gen = torch.Generator().manual_seed(model_seed)
            inputs = [
                _leaf(lib, (torch.rand(3, generator=gen, dtype=torch.float64) + 0.5) * s, False)
                for s in scales
            ]
            expected = reference.graph_sizes(model, inputs)
            if len(set(expected)) < 2:  # the case would not test dynamic graphs
                raise RuntimeError("grader's model built graphs of a single size")
            where = f"a {lib_name(lib)} model whose depth depends on its input"
            got = call_student(answer, model, inputs, call=f"graph_sizes(model, inputs) on {where}")
            expect(
                isinstance(got, list) and all(isinstance(n, int) for n in got),
                f"on {where}: graph_sizes must return a list of ints, got {got!r}.",
            )
            expect(
                len(got) == len(inputs),
                f"on {where}: {len(inputs)} inputs but {len(got)} sizes returned.",
            )
            if len(set(got)) == 1:
                raise Failure(
                    f"on {where}: every input got the same size {got[0]}, but these inputs make "
                    "the model run different numbers of layers. The graph is rebuilt on every "
                    "forward: run the model on each input."
                )
            for x_index, (have, want) in enumerate(zip(got, expected)):
                expect(
                    have == want,
                    f"on {where}: input {x_index} built a graph of {want} distinct nodes "
                    f"(AccumulateGrad included), you counted {have}.",
                )
