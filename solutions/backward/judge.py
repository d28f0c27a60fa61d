"""Judges of notebook 2's hidden tests: they decide from the plain data that grade.py observed
(NOTE [Hidden tests in two halves] in solutions/grading.py). `expected` is what the same hidden
test observed of the reference answer; a judge raises Failure (no points) with a message for the
student, or returns the points of a partial result. Tests without a judge here must observe
exactly what the reference does.

A judge never trusts the shape of `observed` (it crossed from the student's kernel): data that
is not what grade.py produces fails instead of crashing the grading process (`_robust`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

from solutions.backward.grade import BROADCAST_HINT, BROADCASTING, NO_PREDICTION
from solutions.grading import Failure
from solutions.grading import observed as same_in_both_libraries
from solutions.judging import is_tensor, partial
from solutions.reference_cells import given

PREDICT_SECOND_BACKWARD_POINTS = 2  # the points of the exercise's test cell
REASONS = ("freed", "retain_graph", "nothing_saved", "fresh_graph")
FIT_LINE_TOLERANCE = 1e-9  # float64 variants of the same steps agree to 1e-14; float32 to 1e-6


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + " ..."


# -------------------------------------------------------------------------------------------------
# Tensors as plain data: {"shape": [...], "dtype": "float64", "values": [...]}
# -------------------------------------------------------------------------------------------------
def _close(
    got: Any, want: dict, rtol: float = 1e-7, atol: float = 1e-9, scale: float = 1.0
) -> bool:
    """Whether the tensor `got` has the shape of `want` and its values (times `scale`)."""
    if not is_tensor(got) or got["shape"] != want["shape"]:
        return False
    return all(
        math.isclose(float(a), float(b) * scale, rel_tol=rtol, abs_tol=atol)
        for a, b in zip(got["values"], want["values"], strict=True)
    )


def _minus(want: dict, old: list) -> dict:
    return {**want, "values": [float(a) - b for a, b in zip(want["values"], old, strict=True)]}


def _transposed(got: dict) -> dict:
    rows, columns = got["shape"]
    values = got["values"]
    return {
        **got,
        "shape": [columns, rows],
        "values": [values[r * columns + c] for c in range(columns) for r in range(rows)],
    }


def _tensor(got: Any, where: str) -> dict:
    """`got` if it is a plain tensor; else a Failure (a tensor subclass is not one)."""
    if not is_tensor(got):
        raise Failure(f"{where} must return a plain tensor, not a {got.get('type', got)}.")
    return got


def _check_dtype(got: dict, want: dict, where: str, what: str) -> None:
    if got["dtype"] != want["dtype"]:
        raise Failure(
            f"{where}: {what} is {got['dtype']}, expected {want['dtype']} like the inputs "
            "(create tensors with dtype=x.dtype)."
        )


# -------------------------------------------------------------------------------------------------
# Exercise 1: topological_order
# -------------------------------------------------------------------------------------------------
def _expand_runs(encoded: list) -> list:
    """The list that grade.runs encoded (the reference's observation: trusted)."""
    return [item for item, count in encoded for _ in range(count)]


def _expand_ranges(encoded: list, limit: int) -> list:
    """The list that grade.ranges encoded; a list longer than `limit` fails (forged data could
    ask for any length)."""
    items: list = []
    for item in encoded:
        if isinstance(item, list):
            first, count = item
            if len(items) + count > limit:
                raise Failure(f"the list holds more than {limit} items, the graph has fewer nodes.")
            items.extend(range(first, first + count))
        else:
            items.append(item)
    if len(items) > limit:
        raise Failure(f"the list holds more than {limit} items, the graph has fewer nodes.")
    return items


def _check_order(order: list, graph: dict, where: str) -> None:
    """`order`, a list of node numbers of `graph` (grade.Graph.describe, plus the reference's
    "order"), lists every node once, the root first, each node after all its consumers."""
    names = _expand_runs(graph["names"])
    nodes = _expand_ranges(graph["order"], len(names))
    offsets = _expand_runs(graph["edges"])
    edges = [[None if d is None else i + d for d in out] for i, out in enumerate(offsets)]
    if None in order:
        raise Failure(
            f"{where}: the list contains None. The None entries of next_functions mark inputs "
            "that need no gradient: skip them."
        )
    others = [item for item in order if type(item) is not int or not 0 <= item < len(names)]
    if others:
        raise Failure(
            f"{where}: the list holds {len(others)} object(s) that are not nodes of this graph, "
            f"e.g. {others[0]}. List the node objects themselves (grad_fn and the nodes in "
            "next_functions)."
        )
    position: dict[int, int] = {}
    for index, node in enumerate(order):
        if node in position:
            raise Failure(
                f"{where}: {names[node]} is listed more than once; every node appears once."
            )
        position[node] = index
    missing = [node for node in nodes if node not in position]
    if missing or len(order) != len(nodes):
        raise Failure(
            f"{where}: the graph has {len(nodes)} nodes, your list has {len(order)}"
            + (f" and misses e.g. {names[missing[0]]}" if missing else "")
            + ". Include every node reachable through next_functions, AccumulateGrad nodes too."
        )
    if order[0] != nodes[0]:
        raise Failure(
            f"{where}: the first node must be tensor.grad_fn, you start with {names[order[0]]}."
        )
    for node in order:
        for child in edges[node]:
            if child is not None and position[child] < position[node]:
                raise Failure(
                    f"{where}: {names[child]} (position {position[child]}) comes before its "
                    f"consumer {names[node]} (position {position[node]}). A node may only come "
                    "once every node that feeds it a gradient has been listed: count each "
                    "node's consumers first, then release it when the count reaches zero."
                )


def topological_order(observed: dict, expected: dict) -> None:
    """Exercise 1: on every graph a valid order (checked against the graph the reference's
    observation describes), the same one on a second call and on an identical graph."""
    for where, graph in expected.items():
        got = observed[where]
        if not graph["order"]:
            if got["order"]:
                raise Failure(
                    f"{where}: expected [] (a tensor without grad_fn has no graph), got a "
                    "non-empty list."
                )
            continue
        size = sum(count for _, count in graph["names"])
        _check_order(_expand_ranges(got["order"], 2 * size + 10), graph, where)
        if "again" in graph and not (got["again"] == got["identical graph"] == got["order"]):
            raise Failure(
                f"{where}: the order changed between two calls on the same graph (or on two "
                "identical graphs). Make it deterministic: do not iterate over a set."
            )


# -------------------------------------------------------------------------------------------------
# Exercise 2: sum_to_shape
# -------------------------------------------------------------------------------------------------
def sum_to_shape(observed: dict, expected: dict) -> None:
    """Exercise 2: the shape, values and dtype of the gradient PyTorch's autograd gives."""
    for call, want in expected.items():
        got = _tensor(observed[call], call)
        if got["shape"] != want["shape"]:
            raise Failure(
                f"{call} has shape {got['shape']}, expected {want['shape']}. Sum the added "
                "leading dimensions away; keep the stretched size-1 dimensions (keepdim=True)."
            )
        if not _close(got, want):
            raise Failure(
                f"{call}: the shape is right but the values are not the sums PyTorch's backward "
                "gives. Every element of the input received the sum of the gradients of all "
                "the elements it was copied to."
            )
        _check_dtype(got, want, call, "the result")


# -------------------------------------------------------------------------------------------------
# Exercise 3: run_backward
# -------------------------------------------------------------------------------------------------
def _check_leaf_grad(got: dict, want: dict, where: str) -> None:
    if want["grad"] is None:
        if got["grad"] is not None:
            reason = "does not require grad" if not want["requires grad"] else "is on no path"
            raise Failure(
                f"{where}: this leaf must not get a gradient (it {reason}), but its .grad was set."
            )
        return
    if got["grad"] is None:
        raise Failure(
            f"{where}: .grad is None, PyTorch's backward gives it a gradient. Does your engine "
            "reach every AccumulateGrad node and write into node.variable.grad?"
        )
    if not is_tensor(got["grad"]):
        raise Failure(f"{where}: .grad is {got['grad']}, not a tensor of the leaf's library.")
    if got["grad requires grad"]:
        raise Failure(
            f"{where}: .grad requires grad (a graph was recorded while computing it). Call the "
            "nodes under torch.no_grad() and minitorch.no_grad()."
        )
    if _close(got["grad"], want["grad"]):
        _check_dtype(got["grad"], want["grad"], where, ".grad")
        return
    if got["grad"]["shape"] != want["grad"]["shape"]:
        raise Failure(
            f"{where}: .grad has shape {got['grad']['shape']}, the leaf has shape "
            f"{want['grad']['shape']}. {BROADCAST_HINT}"
        )
    old = want["before"]
    if old is not None and _close(got["grad"], _minus(want["grad"], old)):
        raise Failure(
            f"{where}: this leaf already had a .grad before the call, and you replaced it. "
            "Backward adds to an existing .grad (gradients accumulate)."
        )
    if BROADCASTING in where:
        raise Failure(
            f"{where}: .grad differs from what the library's own backward gives. Gradients "
            "that reach a node along several paths add up elementwise only once each has the "
            f"node's shape: adding a (4, 3) and a (3,) gradient broadcasts. {BROADCAST_HINT}"
        )
    raise Failure(
        f"{where}: .grad differs from what the library's own backward gives. Check that a "
        "node runs only after all its gradients arrived, and that gradients arriving at the "
        "same node along several paths are summed."
    )


def run_backward(observed: dict, expected: dict) -> None:
    """Exercise 3: every leaf's .grad as the library's backward leaves it; `grad` unchanged
    and no .grad sharing memory with it or with another .grad."""
    for where, want in expected.items():
        got = observed[where]
        if not got["returned None"]:
            raise Failure(f"{where}: run_backward returns None; it fills the leaves' .grad.")
        if len(got["leaves"]) != len(want["leaves"]):
            raise Failure(f"{where}: the observation does not match the graph.")
        if not got["grad unchanged"]:
            raise Failure(
                f"{where}: run_backward changed the tensor `grad` it was given. `a += b` "
                "writes into a, which may be a gradient that also flows elsewhere: write "
                "`a = a + b`."
            )
        for number, (leaf, reference) in enumerate(zip(got["leaves"], want["leaves"])):
            _check_leaf_grad(leaf, reference, f"{where}, leaf {number}")
        if not got["each .grad has memory of its own"]:
            raise Failure(
                f"{where}: a leaf's .grad shares memory with `grad` or with another leaf's "
                ".grad (a node may pass the same tensor to several inputs). Store the first "
                "gradient of a leaf as a copy: node_grad.clone()."
            )


# -------------------------------------------------------------------------------------------------
# Exercises 4 and 5: Jacobians and Hessian-vector products
# -------------------------------------------------------------------------------------------------
def _check_unchanged(got: dict, call: str) -> None:
    if not got["x unchanged"]:
        raise Failure(
            f"{call} changed the caller's x (it now requires grad, or holds other values). "
            "Make a leaf of your own: x.detach().requires_grad_()."
        )


def jacobian(observed: dict, expected: dict) -> None:
    """Exercise 4: torch.autograd.functional.jacobian's matrix, f run once, x left alone."""
    for call, want in expected.items():
        got = observed[call]
        matrix, reference = _tensor(got["jacobian"], call), want["jacobian"]
        if matrix["shape"] != reference["shape"]:
            raise Failure(
                f"{call} has shape {matrix['shape']}, expected {reference['shape']} "
                "(one row per output element, one column per input element)."
            )
        if not _close(matrix, reference):
            hint = (
                " Your matrix is the transpose of the Jacobian."
                if len(matrix["shape"]) == 2 and _close(_transposed(matrix), reference)
                else " Row i is the vector-Jacobian product with the i-th unit vector; "
                "if you use .backward(), x.grad keeps adding up between rows."
            )
            raise Failure(f"{call}: values differ from torch.autograd.functional.jacobian.{hint}")
        _check_dtype(matrix, reference, call, "the Jacobian")
        if got["calls of f"] != want["calls of f"]:
            raise Failure(
                f"{call} called f {got['calls of f']} times. Run f once and get every row "
                "from the same graph (retain_graph=True): m backward passes, one forward."
            )
        _check_unchanged(got, call)


def hessian_vector_product(observed: dict, expected: dict) -> None:
    """Exercise 5: torch.autograd.functional.hvp's product, x left alone."""
    for call, want in expected.items():
        got = observed[call]
        product, reference = _tensor(got["H v"], call), want["H v"]
        if product["shape"] != reference["shape"]:
            raise Failure(f"{call} has shape {product['shape']}, expected {reference['shape']}.")
        if not _close(product, reference):
            raise Failure(
                f"{call}: values differ from torch.autograd.functional.hvp. H v is the gradient "
                "of (grad f(x) . v), where grad f(x) was computed with create_graph=True."
            )
        _check_dtype(product, reference, call, "H v")
        _check_unchanged(got, call)


# -------------------------------------------------------------------------------------------------
# Exercise 6: scale_gradient
# -------------------------------------------------------------------------------------------------
def scale_gradient(observed: dict, expected: dict) -> None:
    """Exercise 6: y holds x's values, only the gradient through y is scaled on its way to x,
    and x itself keeps no hook."""
    for where, want in expected.items():
        got = observed[where]
        factor = want["factor"]
        y = _tensor(got["y"], f"scale_gradient(x, {factor}) {where}")
        if not _close(y, want["y"]):
            hint = (
                " It holds the values of x times the factor: the forward pass must not change, "
                "only the gradient."
                if _close(y, want["y"], scale=factor)
                else ""
            )
            raise Failure(f"{where}: y does not hold the values of x.{hint}")
        later = "x.grad of a later backward through x alone"
        if not _close(got[later], want[later]):
            raise Failure(
                f"{where}: after scale_gradient, a backward through x alone, (x * 2.0).sum(), "
                "gets a scaled gradient too: the hook sits on x itself, so it changes the "
                "gradient of every use of x. Put it on a new tensor made from x (x * 1.0) and "
                "return that tensor."
            )
        grad = got["x.grad"]
        if grad is None:
            raise Failure(
                f"{where}: x.grad is None after backward: compute y from x (e.g. x * 1.0), so "
                "that the gradient flows on to x."
            )
        if _close(grad, want["x.grad"]):
            continue
        if _close(grad, want["x.grad without scaling"]):
            raise Failure(
                f"{where}: x.grad is what it would be without scale_gradient: the gradient "
                "flowing back through y was not scaled. A hook changes a gradient by returning "
                "the new one; a hook that returns None leaves it as it was."
            )
        if want["kind"] == "shared":
            hint = (
                "The add node in (y + x) passes the very same gradient tensor to y and to x, "
                "so a hook that changes `grad` in place (grad *= factor, grad.mul_(factor)) "
                "changes the gradient of x's other use too. Return a new tensor: grad * factor."
            )
        else:
            hint = (
                "Only the gradient that flows back through y is multiplied by the factor; the "
                "gradients of x's other uses reach x unchanged."
            )
        raise Failure(f"{where}: x.grad differs from the expected gradient. {hint}")


# -------------------------------------------------------------------------------------------------
# Exercise 7: accumulated_gradients
# -------------------------------------------------------------------------------------------------
def accumulated_gradients(observed: dict, expected: dict) -> None:
    """Exercise 7: one forward and one backward per micro-batch, and the full-batch gradient."""
    for where, want in expected.items():
        got = observed[where]
        sizes = want["batch sizes the model saw"]
        if got["batch sizes the model saw"] != sizes:
            raise Failure(
                f"on {where}: the model saw batches of {got['batch sizes the model saw']} "
                f"examples; run one forward per micro-batch of inputs.chunk(k): {sizes}."
            )
        if len(got["gradients"]) != len(want["gradients"]):
            raise Failure(
                f"on {where}: return a list with one gradient per parameter "
                f"({len(want['gradients'])}), got {len(got['gradients'])}."
            )
        for index, (g, reference) in enumerate(zip(got["gradients"], want["gradients"])):
            if _close(g, reference):
                continue
            if len(sizes) > 1 and len(set(sizes)) == 1 and _close(g, reference, scale=len(sizes)):
                raise Failure(
                    f"on {where}: the gradients are {len(sizes)} times too large. Each "
                    "micro-batch loss is a mean over its own examples: scale it by its share "
                    "of the batch."
                )
            if len(set(sizes)) > 1:
                raise Failure(
                    f"on {where}: gradient {index} differs from the full-batch gradient. The "
                    f"micro-batches have {sizes} examples: a mean over a small one counts as "
                    "much as a mean over a big one unless each loss is weighted by its share "
                    "of the batch, len(x) / len(inputs). Did you also start from zeroed "
                    "gradients?"
                )
            raise Failure(
                f"on {where}: gradient {index} differs from the full-batch gradient. "
                "Did you start from zeroed gradients (the model's .grad held old values)?"
            )
        if got["backward passes"] != want["backward passes"]:
            raise Failure(
                f"on {where}: {got['backward passes']} backward pass(es) reached the model; "
                f"run one per micro-batch ({want['backward passes']}), so that each "
                "micro-batch's graph is freed before the next one is built."
            )


# -------------------------------------------------------------------------------------------------
# Exercise 8: fit_line
# -------------------------------------------------------------------------------------------------
def _same(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance * max(abs(b), 1e-3)


def fit_line(observed: dict, expected: dict) -> None:
    """Exercise 8: the loss curve of plain float64 SGD from w = b = 0, step by step."""
    for call, want in expected.items():
        got = observed[call]
        losses, reference = got["losses"], want["losses"]
        if len(losses) != len(reference):
            raise Failure(f"{call}: losses must hold one number per step ({len(reference)}).")
        if not _same(losses[0], reference[0], FIT_LINE_TOLERANCE):
            raise Failure(
                f"{call}: the first loss is {losses[0]:.6g}, expected {reference[0]:.6g}: "
                "start from w = b = 0 and use the mean squared error."
            )
        wrong = [
            i
            for i, (a, e) in enumerate(zip(losses, reference))
            if not _same(a, e, FIT_LINE_TOLERANCE)
        ]
        if wrong and all(_same(a, e, 1e-4) for a, e in zip(losses, reference)):
            raise Failure(
                f"{call}: the losses agree with float64 gradient descent to about 7 digits only "
                f"(from step {wrong[0]} on): are w and b float32? Create them with dtype=x.dtype."
            )
        if wrong:
            raise Failure(
                f"{call}: the loss after step {wrong[0]} differs from plain gradient "
                "descent's. Subtract lr times the gradient, and reset the gradients after each "
                "update (backward adds to .grad)."
            )
        w, b = got["w"], got["b"]
        if not (
            _same(w, want["w"], FIT_LINE_TOLERANCE) and _same(b, want["b"], FIT_LINE_TOLERANCE)
        ):
            raise Failure(
                f"{call}: w = {w:.4f}, b = {b:.4f}, but the losses are right: return the final "
                "w and b (as Python floats). The data follow y = 2x + 1 plus noise."
            )


# -------------------------------------------------------------------------------------------------
# Exercise 9: predict_second_backward
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


def predict_second_backward(predictions: dict, expected: dict) -> tuple[float, str]:
    """Exercise 9: an equal share of the points per snippet whose prediction (raises, why) is
    right, the truth being what the snippet does on PyTorch and on minitorch."""
    snippets = given("backward")["SNIPPETS"]
    wrong = []
    for key, (first, second) in snippets.items():
        raises, why = same_in_both_libraries(key, functools.partial(classify, first, second))
        guess = predictions[key]
        if guess == NO_PREDICTION:
            wrong.append(f"{key!r} (no prediction)")
        elif not (
            isinstance(guess, list)
            and len(guess) == 2
            and type(guess[0]) is bool
            and guess[1] in REASONS
        ):
            wrong.append(
                f"{key!r} (not a tuple (raises, why) with why one of "
                f"{', '.join(map(repr, REASONS))}: {_short(guess)})"
            )
        elif guess[0] != raises:
            wrong.append(f"{key!r} (whether it raises)")
        elif guess[1] != why:
            wrong.append(f"{key!r} (right about raising, wrong about why)")
    return partial(
        wrong,
        len(snippets),
        PREDICT_SECOND_BACKWARD_POINTS,
        "Run those snippets and look for the values each node saves.",
    )
