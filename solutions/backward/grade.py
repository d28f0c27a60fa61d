"""Graders of notebook 2, "backward". A hidden test cell calls one of them:

    from solutions.backward import grade
    grade.topological_order(topological_order)

Each grader builds fresh random cases (graphs with fan-out and reuse, broadcast shape pairs,
functions, models, data), runs the student's answer on PyTorch and on minitorch, and compares
with PyTorch's own autograd and with the reference. Failures reach the student as one clean
AssertionError (see solutions/grading.py). Pass `seed=` to make the random cases reproducible.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any

import torch

from solutions.backward import reference
from solutions.grading import (
    DEFAULT_RECURSION_LIMIT,
    LIBRARIES,
    Failure,
    call_student,
    check_callable,
    expect,
    grader,
    lib_name,
    node_label,
    observed,
    predictions_for,
    recursion_limit,
)

DEEP_CHAIN_LENGTH = 10_000


def _leaf(lib: Any, values: torch.Tensor, requires_grad: bool) -> Any:
    return lib.tensor(values.tolist(), dtype=lib.float64, requires_grad=requires_grad)


def _data(t: Any) -> torch.Tensor:
    """The values of a PyTorch or minitorch tensor as a PyTorch float64 tensor."""
    return torch.as_tensor(t.detach().tolist(), dtype=torch.float64)


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(a, b, rtol=1e-7, atol=1e-9)


# -------------------------------------------------------------------------------------------------
# Graphs with fan-out and reuse (single-output nodes only), built alike in both libraries
# -------------------------------------------------------------------------------------------------
_UNARY: list[Callable[[Any, Any], Any]] = [
    lambda lib, a: a.sin(),
    lambda lib, a: lib.tanh(a),
    lambda lib, a: a * 1.5,
    lambda lib, a: a + 1.0,
    lambda lib, a: -a,
    lambda lib, a: a.sigmoid(),
    lambda lib, a: a**2,
    lambda lib, a: a.exp() / 3.0,
]
_BINARY: list[Callable[[Any, Any, Any], Any]] = [
    lambda lib, a, b: a + b,
    lambda lib, a, b: a * b,
    lambda lib, a, b: a - b,
]


def random_graph(lib: Any, seed: int, n_ops: int, scalar: bool = True) -> tuple[Any, list]:
    """A random expression over a few leaves of shape (3,) (some without grad, some with a
    pre-existing .grad) with fan-out, shared subexpressions used at different depths and the
    odd detach. No broadcasting: PyTorch's nodes, called by hand, return unreduced gradients
    for broadcast inputs (its engine reduces them). Returns (output, leaves)."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    leaves = [
        _leaf(lib, torch.rand(3, generator=gen, dtype=torch.float64) - 0.5, rng.random() < 0.8)
        for _ in range(rng.randint(1, 4))
    ]
    leaves.append(_leaf(lib, torch.rand(3, generator=gen, dtype=torch.float64) + 0.5, True))
    for leaf in leaves:
        if leaf.requires_grad and rng.random() < 0.3:
            leaf.grad = _leaf(
                lib, torch.rand(leaf.shape, generator=gen, dtype=torch.float64), False
            )
    pool = list(leaves[:-1])

    def pick() -> Any:
        if rng.random() < 0.15:
            return rng.choice(leaves[:-1])
        return pool[max(0, len(pool) - 1 - int(rng.expovariate(0.4)))]

    for _ in range(n_ops):
        kind = rng.random()
        if kind < 0.45:
            pool.append(rng.choice(_UNARY)(lib, pick()))
        elif kind < 0.95:
            pool.append(rng.choice(_BINARY)(lib, pick(), pick()))
        else:
            pool.append(pick().detach())
    out = (pool[-1] + pool[max(0, len(pool) - 4)]) * leaves[-1]
    return (out.sum() if scalar else out), leaves


def diamond(lib: Any) -> tuple[Any, list]:
    """a = x * 2 feeds a * a directly and a.exp().sin() two ops later."""
    x = _leaf(lib, torch.tensor([0.5, -1.0, 2.0]), True)
    a = x * 2
    return (a * a + a.exp().sin()).sum(), [x]


def square(lib: Any) -> tuple[Any, list]:
    """x * x: one node with the same input twice."""
    x = _leaf(lib, torch.tensor([0.5, -1.0, 2.0]), True)
    return (x * x).sum(), [x]


def chain(lib: Any, length: int) -> Any:
    h = _leaf(lib, torch.tensor([1.0, 2.0]), True)
    for i in range(length):
        h = h * 1.0 if i % 2 else h + 0.0
    return h


def _graph_cases(seed: int | None, n_random: int = 6) -> list[tuple[str, Callable]]:
    master = random.Random(seed)
    cases: list[tuple[str, Callable]] = [
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


# -------------------------------------------------------------------------------------------------
# Exercise 1: topological_order
# -------------------------------------------------------------------------------------------------
def _check_order(answer: Any, expected: list, where: str) -> None:
    expect(isinstance(answer, list), f"{where}: return a list, not {type(answer).__name__}.")
    expect(all(n is not None for n in answer), f"{where}: the list contains None: skip it.")
    position = {}
    for index, node in enumerate(answer):
        expect(
            id(node) not in position,
            f"{where}: {node_label(node)} is listed more than once; every node appears once.",
        )
        position[id(node)] = index
    missing = [n for n in expected if id(n) not in position]
    expect(
        len(answer) == len(expected) and not missing,
        f"{where}: the graph has {len(expected)} nodes, your list has {len(answer)}"
        + (f" and misses e.g. {node_label(missing[0])}" if missing else "")
        + ". Include every node reachable through next_functions, AccumulateGrad nodes too.",
    )
    expect(
        answer[0] is expected[0],
        f"{where}: the first node must be tensor.grad_fn, you start with {node_label(answer[0])}.",
    )
    for node in answer:
        for child, _ in node.next_functions:
            if child is not None and position[id(child)] < position[id(node)]:
                raise Failure(
                    f"{where}: {node_label(child)} (position {position[id(child)]}) comes "
                    f"before its consumer {node_label(node)} (position {position[id(node)]}). "
                    "A node may only come once every node that feeds it a gradient has been "
                    "listed: count each node's consumers first, then release it when the count "
                    "reaches zero."
                )


@grader("topological_order")
def topological_order(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 1: a valid, deterministic order on fixed and random graphs, both
    libraries, and on a chain of 10,000 ops under Python's default recursion limit."""
    check_callable(answer, "topological_order")
    for lib in LIBRARIES:
        leaf = _leaf(lib, torch.ones(2), True)
        where = f"on a leaf ({lib_name(lib)})"
        got = call_student(answer, leaf, call=f"topological_order(x) {where}")
        expect(got == [] if isinstance(got, list) else False, f"{where}: expected [], got {got!r}.")
    for description, build in _graph_cases(seed):
        for lib in LIBRARIES:
            where = f"on {description} ({lib_name(lib)})"
            out, _ = build(lib)
            call = f"topological_order(out) {where}"
            got = call_student(answer, out, call=call)
            _check_order(got, reference.topological_order(out), where)
            again = call_student(answer, out, call=call)
            twin, _ = build(lib)
            twin_order = call_student(answer, twin, call=call)
            expect(
                isinstance(again, list)
                and [id(n) for n in again] == [id(n) for n in got]
                and isinstance(twin_order, list)
                and [n.name() for n in twin_order] == [n.name() for n in got],
                f"{where}: the order changed between two calls on the same graph (or on two "
                "identical graphs). Make it deterministic: do not iterate over a set.",
            )
    for lib in LIBRARIES:
        out = chain(lib, DEEP_CHAIN_LENGTH)
        where = f"on a {lib_name(lib)} chain of {DEEP_CHAIN_LENGTH:,} ops"
        with recursion_limit(DEFAULT_RECURSION_LIMIT):
            got = call_student(answer, out, call=f"topological_order(out) {where}")
        _check_order(got, reference.topological_order(out), where)


# -------------------------------------------------------------------------------------------------
# Exercise 2: run_backward
# -------------------------------------------------------------------------------------------------
def _root_gradient(lib: Any, out: Any, seed: int) -> Any:
    if out.dim() == 0:
        return lib.ones_like(out)
    gen = torch.Generator().manual_seed(seed)
    return _leaf(lib, torch.rand(tuple(out.shape), generator=gen, dtype=torch.float64) - 0.5, False)


@grader("run_backward")
def run_backward(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 2: leaf gradients equal those of the library's own backward, on PyTorch
    and minitorch graphs with fan-out and reuse, scalar and non-scalar outputs, with and
    without gradients already in .grad."""
    check_callable(answer, "run_backward")
    master = random.Random(seed)
    cases = _graph_cases(seed)
    for _ in range(2):
        graph_seed, n_ops = master.randrange(2**31), master.randint(5, 30)
        cases.append(
            (
                f"a random graph of {n_ops} ops with a non-scalar output and gradient=",
                lambda lib, s=graph_seed, n=n_ops: random_graph(lib, s, n, scalar=False),
            )
        )
    for index, (description, build) in enumerate(cases):
        for lib in LIBRARIES:
            where = f"on {description} ({lib_name(lib)})"
            out, leaves = build(lib)
            before = [None if leaf.grad is None else _data(leaf.grad) for leaf in leaves]
            grad = _root_gradient(lib, out, index)
            result = call_student(answer, out, grad, call=f"run_backward(out, grad) {where}")
            expect(result is None, f"{where}: run_backward returns None; it fills leaf .grad.")
            twin, twin_leaves = build(lib)
            twin.backward(_root_gradient(lib, twin, index))
            for number, (leaf, want, old) in enumerate(zip(leaves, twin_leaves, before)):
                _check_leaf_grad(lib, leaf, want.grad, old, f"{where}, leaf {number}")


def _check_leaf_grad(lib: Any, leaf: Any, want: Any, old: Any, where: str) -> None:
    if want is None:
        expect(
            leaf.grad is None,
            f"{where}: this leaf must not get a gradient (it "
            + ("does not require grad" if not leaf.requires_grad else "is not on any path")
            + "), but its .grad was set.",
        )
        return
    expect(
        leaf.grad is not None,
        f"{where}: .grad is None, PyTorch's backward gives it a gradient. Does your engine "
        "reach every AccumulateGrad node and write into node.variable.grad?",
    )
    expect(
        isinstance(leaf.grad, lib.Tensor) and not leaf.grad.requires_grad,
        f"{where}: .grad requires grad (a graph was recorded while computing it). Call the "
        f"nodes under {lib.__name__}.no_grad().",
    )
    got, expected = _data(leaf.grad), _data(want)
    if _close(got, expected):
        return
    if old is not None and _close(got, expected - old):
        raise Failure(
            f"{where}: this leaf already had a .grad before the call, and you replaced it. "
            "Backward adds to an existing .grad (gradients accumulate)."
        )
    raise Failure(
        f"{where}: .grad differs from what the library's own backward gives. Check that a "
        "node runs only after all its gradients arrived, and that gradients arriving at the "
        "same node along several paths are summed."
    )


# -------------------------------------------------------------------------------------------------
# Exercise 3: sum_to_shape
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


@grader("sum_to_shape")
def sum_to_shape(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 3 against the gradient PyTorch's autograd gives a broadcast input."""
    check_callable(answer, "sum_to_shape")
    gen = torch.Generator().manual_seed(random.Random(seed).randrange(2**31))
    for shape, out_shape in _broadcast_pairs(seed):
        grad = torch.rand(out_shape, generator=gen, dtype=torch.float64) - 0.5
        x = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
        (x.expand(out_shape) * grad).sum().backward()
        for lib in LIBRARIES:
            call = (
                f"sum_to_shape(grad, {shape}) with grad of shape {list(out_shape)} "
                f"({lib_name(lib)})"
            )
            got = call_student(answer, _leaf(lib, grad, False), shape, call=call)
            expect(isinstance(got, lib.Tensor), f"{call} must return a {lib_name(lib)} tensor.")
            expect(
                list(got.shape) == list(shape),
                f"{call} has shape {list(got.shape)}, expected {list(shape)}. Sum the added "
                "leading dimensions away; keep the stretched size-1 dimensions (keepdim=True).",
            )
            expect(
                _close(_data(got), x.grad),
                f"{call}: the shape is right but the values are not the sums PyTorch's backward "
                "gives. Every element of the input received the sum of the gradients of all "
                "the elements it was copied to.",
            )


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


@grader("jacobian")
def jacobian(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 4 against torch.autograd.functional.jacobian, on both libraries."""
    check_callable(answer, "jacobian")
    function_seed = random.Random(seed).randrange(2**31)
    gen = torch.Generator().manual_seed(function_seed)
    torch_functions = _vector_functions(torch, function_seed)
    for index, (description, n, torch_f) in enumerate(torch_functions):
        x0 = _point(n, gen)
        expected = torch.autograd.functional.jacobian(torch_f, x0)
        for lib in LIBRARIES:
            f = _vector_functions(lib, function_seed)[index][2]
            x = _leaf(lib, x0, False)
            call = f"jacobian({lib.__name__}, f, x) for {description}"
            got = call_student(answer, lib, f, x, call=call)
            expect(isinstance(got, lib.Tensor), f"{call} must return a {lib_name(lib)} tensor.")
            expect(
                tuple(got.shape) == tuple(expected.shape),
                f"{call} has shape {list(got.shape)}, expected {list(expected.shape)} "
                "(one row per output element, one column per input element).",
            )
            if not _close(_data(got), expected):
                hint = (
                    " Your matrix is the transpose of the Jacobian."
                    if _close(_data(got).T, expected)
                    else " Row i is the vector-Jacobian product with the i-th unit vector; "
                    "if you use .backward(), x.grad keeps adding up between rows."
                )
                raise Failure(
                    f"{call}: values differ from torch.autograd.functional.jacobian.{hint}"
                )
            expect(not x.requires_grad, f"{call} changed x in place to require grad.")


@grader("hessian_vector_product")
def hessian_vector_product(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 5 against torch.autograd.functional.hvp, on both libraries."""
    check_callable(answer, "hessian_vector_product")
    function_seed = random.Random(seed).randrange(2**31)
    gen = torch.Generator().manual_seed(function_seed)
    for index, (description, n, torch_f) in enumerate(_scalar_functions(torch, function_seed)):
        x0, v0 = _point(n, gen), _point(n, gen)
        expected = torch.autograd.functional.hvp(torch_f, x0, v0)[1]
        for lib in LIBRARIES:
            f = _scalar_functions(lib, function_seed)[index][2]
            call = f"hessian_vector_product({lib.__name__}, f, x, v) for {description}"
            got = call_student(
                answer, lib, f, _leaf(lib, x0, False), _leaf(lib, v0, False), call=call
            )
            expect(isinstance(got, lib.Tensor), f"{call} must return a {lib_name(lib)} tensor.")
            expect(
                tuple(got.shape) == (n,),
                f"{call} has shape {list(got.shape)}, expected [{n}].",
            )
            expect(
                _close(_data(got), expected),
                f"{call}: values differ from torch.autograd.functional.hvp. H v is the gradient "
                "of (grad f(x) . v), where grad f(x) was computed with create_graph=True.",
            )


# -------------------------------------------------------------------------------------------------
# Exercise 6: accumulated_gradients
# -------------------------------------------------------------------------------------------------
def _model_and_data(lib: Any, seed: int, kind: str) -> tuple[Any, Callable, Any, Any]:
    gen = torch.Generator().manual_seed(seed)
    batch = 12
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


@grader("accumulated_gradients")
def accumulated_gradients(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 6: k micro-batch backwards give the full-batch gradient, starting from a
    model whose .grad already holds stale values."""
    check_callable(answer, "accumulated_gradients")
    rng = random.Random(seed)
    for kind, k in (
        ("regression", rng.choice((2, 3, 4))),
        ("classification", rng.choice((3, 6))),
        ("regression", 1),
    ):
        model_seed = rng.randrange(2**31)
        for lib in LIBRARIES:
            where = f"a {lib_name(lib)} {kind} model, batch of 12, k = {k}"
            model, loss_fn, inputs, targets = _model_and_data(lib, model_seed, kind)
            loss_fn(model(inputs[:5]), targets[:5]).backward()  # stale gradients
            got = call_student(
                answer,
                model,
                loss_fn,
                inputs,
                targets,
                k,
                call=f"accumulated_gradients(model, loss_fn, inputs, targets, {k}) on {where}",
            )
            fresh, *_ = _model_and_data(lib, model_seed, kind)
            loss_fn(fresh(inputs), targets).backward()
            expected = [_data(p.grad) for p in fresh.parameters()]
            expect(
                isinstance(got, list) and len(got) == len(expected),
                f"on {where}: return a list with one gradient per parameter "
                f"({len(expected)}), got {type(got).__name__}.",
            )
            for index, (g, want) in enumerate(zip(got, expected)):
                expect(
                    isinstance(g, lib.Tensor),
                    f"on {where}: gradient {index} is {type(g).__name__}, not a tensor.",
                )
                have = _data(g)
                if _close(have, want):
                    continue
                if k > 1 and _close(have, want * k):
                    raise Failure(
                        f"on {where}: the gradients are {k} times too large. Each micro-batch "
                        "loss is a mean over its own examples: divide it by k."
                    )
                raise Failure(
                    f"on {where}: gradient {index} differs from the full-batch gradient. "
                    "Did you start from zeroed gradients (the model's .grad held old values)?"
                )


# -------------------------------------------------------------------------------------------------
# Exercise 7: fit_line
# -------------------------------------------------------------------------------------------------
def line_data(lib: Any, seed: int, n: int = 64) -> tuple[Any, Any]:
    """x uniform in [-1, 1], y = 2 x + 1 plus Gaussian noise of standard deviation 0.05."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(n, generator=gen, dtype=torch.float64) * 2 - 1
    y = 2 * x + 1 + 0.05 * torch.randn(n, generator=gen, dtype=torch.float64)
    return _leaf(lib, x, False), _leaf(lib, y, False)


@grader("fit_line")
def fit_line(answer: Any, seed: int | None = None) -> None:
    """Grade exercise 7: the loss curve of plain SGD from w = b = 0, and the slope within 0.1."""
    check_callable(answer, "fit_line")
    rng = random.Random(seed)
    for steps, lr in ((150, 0.2), (rng.randint(120, 200), round(rng.uniform(0.1, 0.3), 3))):
        data_seed = rng.randrange(2**31)
        for lib in LIBRARIES:
            x, y = line_data(lib, data_seed)
            call = f"fit_line({lib.__name__}, x, y, steps={steps}, lr={lr})"
            result = call_student(answer, lib, x, y, steps, lr, call=call)
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
            expect(
                all(isinstance(v, float) for v in losses),
                f"{call}: losses must hold Python floats (loss.item()).",
            )
            want_w, want_b, want_losses = reference.fit_line(lib, x, y, steps, lr)
            expect(
                abs(losses[0] - want_losses[0]) <= 1e-9 * max(1.0, want_losses[0]),
                f"{call}: the first loss is {losses[0]:.6g}, expected {want_losses[0]:.6g}: "
                "start from w = b = 0 and use the mean squared error.",
            )
            first_wrong = next(
                (
                    i
                    for i, (a, e) in enumerate(zip(losses, want_losses))
                    if abs(a - e) > 1e-7 * max(1.0, e)
                ),
                None,
            )
            expect(
                first_wrong is None,
                f"{call}: the loss after step {first_wrong} differs from plain gradient "
                "descent's. Subtract lr times the gradient, and reset the gradients after each "
                "update (backward adds to .grad).",
            )
            expect(
                abs(w - 2) < 0.1 and abs(w - want_w) < 1e-6 and abs(b - want_b) < 1e-6,
                f"{call}: w = {w:.4f}, b = {b:.4f}; the data follow y = 2x + 1 plus noise.",
            )


# -------------------------------------------------------------------------------------------------
# Exercise 8: predict_second_backward
# -------------------------------------------------------------------------------------------------
def _raises(code: str, lib: Any) -> bool:
    """Run `code` with `torch` bound to `lib`: True if it raised the freed-graph error."""
    try:
        exec(code, {"torch": lib})
    except RuntimeError as error:
        if "backward through the graph a second time" not in str(error):
            raise
        return True
    return False


def classify(first: str, second: str, lib: Any) -> tuple[bool, str]:
    """What a snippet does, found by running it and variants of it."""
    if _raises(f"{first}\n{second}", lib):
        return True, "freed"
    if "retain_graph=True" in first and _raises(
        f"{first.replace('retain_graph=True', '')}\n{second}", lib
    ):
        return False, "retain_graph"
    repeat = first.splitlines()[-1]  # the first backward again, on the same graph
    if _raises(f"{first.replace('retain_graph=True', '')}\n{repeat}", lib):
        return False, "fresh_graph"
    return False, "nothing_saved"


@grader("predict_second_backward")
def predict_second_backward(answer: Any) -> None:
    """Grade exercise 8 by running every snippet (and variants) on PyTorch and minitorch."""
    predictions = predictions_for(answer, "predict_second_backward", reference.SNIPPETS, "snippet")
    wrong_raises, wrong_why = [], []
    for key, (first, second) in reference.SNIPPETS.items():
        raises, why = observed(key, functools.partial(classify, first, second))
        guess = predictions[key]
        expect(
            isinstance(guess, tuple) and len(guess) == 2 and guess[1] in reference.REASONS,
            f"snippet {key!r}: predict a tuple (raises, why) with why one of "
            f"{', '.join(map(repr, reference.REASONS))}, not {guess!r}.",
        )
        if guess[0] != raises:
            wrong_raises.append(repr(key))
        elif guess[1] != why:
            wrong_why.append(repr(key))
    expect(
        not wrong_raises,
        f"wrong prediction of whether the second backward raises for snippet(s) "
        f"{', '.join(wrong_raises)}. Run them and look for the values each node saves.",
    )
    expect(
        not wrong_why,
        f"right about raising, wrong about why for snippet(s) {', '.join(wrong_why)}.",
    )
