"""Judges of notebook 1's hidden tests: they decide from the plain data that grade.py observed
(see NOTE [Hidden tests in two halves] in solutions/grading.py). Tests without a judge here must
observe exactly what the reference does.

Each judge takes `observed` (what the test saw of the student's answer) and `expected` (what it
saw of the reference answer, on the same cases) and raises Failure with a message for the student
at the first case that differs, in the order the cases were graded. Case information that the
messages need (the names of a graph's nodes, whether the output is itself a leaf) is read from
`expected`, never from `observed`.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from solutions.grading import Failure, observed
from solutions.graph_construction.grade import TIMED_OUT
from solutions.judging import partial
from solutions.reference_cells import given

PREDICT_FLAGS_POINTS = 4
FIELDS = ("requires_grad", "is_leaf", "grad_fn")
ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"
SEEN_SET_HINT = (
    "A node reached along many paths must be visited once, not once per path: remember the "
    "nodes you have already seen in a set, and skip them."
)


def _result(observed: dict, where: str, name: str) -> Any:
    """What the student's `name` gave on case `where`; Failure if it ran out of time."""
    if not isinstance(observed, dict) or where not in observed:
        raise Failure(f"{where}: {name} gave no result.")
    got = observed[where]
    if isinstance(got, dict) and TIMED_OUT in got:
        raise Failure(f"{where}: {name} did not finish within {got[TIMED_OUT]} s. {SEEN_SET_HINT}")
    return got


# -------------------------------------------------------------------------------------------------
# Exercise 1: collect_nodes
# -------------------------------------------------------------------------------------------------
def collect_nodes(observed: dict, expected: dict) -> None:
    """Exercise 1: every node once, no None, nothing else, in breadth-first order. grade.py
    describes each listed item on its own (its name, and where its children are in the list);
    the list is right when it starts at out.grad_fn and the descriptions are the reference's."""
    for where, want in expected.items():
        got = _result(observed, where, "collect_nodes")
        listed, root_at = got["listed"], got["out.grad_fn at"]
        reference = [_node(item, want["names"]) for item in want["listed"]]
        if not isinstance(listed, list):
            raise Failure(f"{where}: collect_nodes must return a list.")
        if None in listed:
            raise Failure(
                f"{where}: the list contains None. The `None` entries of next_functions mark "
                "inputs that need no gradient: skip them."
            )
        for item in listed:
            if isinstance(item, dict) and "again" in item:
                name = _node(listed[item["again"]], got["names"])[0]
                raise Failure(
                    f"{where}: {name} is listed more than once. A node reached along several "
                    "paths (a shared subexpression) must appear once: remember the nodes you "
                    "have already seen in a set."
                )
        objects = [item["not a node"] for item in listed if isinstance(item, dict)]
        nodes = [_node(item, got["names"]) if isinstance(item, list) else None for item in listed]
        reached = _reached(nodes, root_at)
        strangers = [n[0] for i, n in enumerate(nodes) if n is not None and i not in reached]
        missing = [reference[0][0]] if reference and root_at is None else []
        missing += [c["not listed"] for i in reached for c in nodes[i][1:] if isinstance(c, dict)]
        if objects or (strangers and not missing):
            others = objects or strangers
            raise Failure(
                f"{where}: the list has {len(others)} object(s) that are not nodes of this "
                f"graph, e.g. a {others[0]}. List the node objects themselves (grad_fn and the "
                "nodes in next_functions)."
            )
        if missing:
            count = max(1, len(reference) - len(listed))
            raise Failure(
                f"{where}: {count} of the graph's {len(reference)} nodes are missing, e.g. "
                f"{missing[0]}. Did you follow every entry of next_functions, and include the "
                "AccumulateGrad nodes?"
            )
        if nodes != reference:
            pairs = list(zip(nodes, reference))
            differ = [i for i, (item, should) in enumerate(pairs) if item[0] != should[0]]
            differ = differ or [i for i, (item, should) in enumerate(pairs) if item != should]
            position = differ[0]  # where the names differ, else where the children do
            have, name = pairs[position][0][0], pairs[position][1][0]
            raise Failure(
                f"{where}: the nodes are all there but the order differs at position {position} "
                f"(you have {'another ' if have == name else ''}{have}, breadth-first order has "
                f"{name}). List nodes breadth-first, children in next_functions order, each when "
                "first discovered."
            )


def _node(item: list, names: list[str]) -> list:
    """A node's description from grade.py, its name spelled out: [name, child positions...]
    (a child not in the list is {"not listed": name}, a None entry None)."""
    return [names[item[0]], *item[1:]]


def _reached(nodes: list[list | None], root_at: int | None) -> set[int]:
    """Positions of the listed nodes reached from out.grad_fn through listed nodes (a walk over
    plain data, in the judge; `nodes` holds None where the list holds no node)."""
    reached = set() if root_at is None else {root_at}
    to_visit = list(reached)
    while to_visit:
        for child in nodes[to_visit.pop()][1:]:
            if type(child) is int and child not in reached and nodes[child] is not None:
                reached.add(child)
                to_visit.append(child)
    return reached


# -------------------------------------------------------------------------------------------------
# Exercise 2: count_ops
# -------------------------------------------------------------------------------------------------
def count_ops(observed: dict, expected: dict) -> None:
    """Exercise 2: the count of every op name (names counted 0 times may be left out)."""
    for where, want in expected.items():
        got = _result(observed, where, "count_ops")
        if not isinstance(got, dict):
            raise Failure(f"{where}: count_ops must return a dict.")
        got = {name: count for name, count in got.items() if count != 0}
        if ACCUMULATE_GRAD in got:
            raise Failure(
                f"{where}: AccumulateGrad nodes are not ops; leave {ACCUMULATE_GRAD!r} out of "
                "the counts."
            )
        for name in sorted(set(got) | set(want)):
            should, have = want.get(name, 0), got.get(name, 0)
            if have == should:
                continue
            hint = (
                " Each node must be counted once, however many paths lead to it."
                if isinstance(have, (int, float)) and have > should
                else " Did you visit every node of the graph?"
            )
            raise Failure(
                f"{where}: {name!r} counted {have} time(s), the graph has {should} such "
                f"node(s).{hint}"
            )


# -------------------------------------------------------------------------------------------------
# Exercise 3: find_leaves
# -------------------------------------------------------------------------------------------------
def find_leaves(observed: dict, expected: dict) -> None:
    """Exercise 3: the leaves that require grad, each once, in collect_nodes's order."""
    for where, want in expected.items():
        got = _result(observed, where, "find_leaves")
        found = got.get("found") if isinstance(got, dict) else None
        if not isinstance(found, list):
            raise Failure(f"{where}: find_leaves must return a list.")
        order = want["found"]
        for item in found:
            if isinstance(item, dict) and "type" in item:
                raise Failure(
                    f"{where}: the list holds an object of type {item['type']}, not a tensor. "
                    "An AccumulateGrad node's `.variable` is the leaf tensor itself."
                )
            flags = item.get("tensor") if isinstance(item, dict) else None
            if isinstance(flags, dict) and not (flags["is_leaf"] and flags["requires_grad"]):
                raise Failure(
                    f"{where}: the list holds a tensor with is_leaf={flags['is_leaf']}, "
                    f"requires_grad={flags['requires_grad']}; only leaves that require grad "
                    "receive a .grad."
                )
        numbers = [item for item in found if type(item) is int]
        if len(numbers) != len(set(numbers)):
            raise Failure(f"{where}: a leaf is listed more than once.")
        if len(numbers) != len(found) or set(numbers) != set(order):
            hint = (
                " Is `out` itself such a leaf?" if want["out is a leaf that requires grad"] else ""
            )
            raise Failure(
                f"{where}: you found {len(found)} leaves, the output depends on {len(order)} "
                f"leaves that require grad.{hint}"
            )
        if numbers != order:
            raise Failure(
                f"{where}: the right leaves, in the wrong order: list them in the order "
                "collect_nodes lists their AccumulateGrad nodes."
            )


# -------------------------------------------------------------------------------------------------
# Exercise 4: predict_flags
# -------------------------------------------------------------------------------------------------
def run_snippet(code: str, lib: Any) -> tuple[bool, bool, str | None]:
    """Run one snippet with `torch` bound to `lib`; return what the student must predict."""
    namespace: dict[str, Any] = {"torch": lib}
    exec(code, namespace)
    out = namespace["out"]
    name = out.grad_fn.name() if out.grad_fn is not None else None
    return (out.requires_grad, out.is_leaf, name)


def predict_flags(predictions: dict, expected: dict) -> tuple[float, str]:
    """Exercise 4: an equal share of the points per snippet whose three flags are all right, the
    truth being what the snippet does on PyTorch and on minitorch."""
    wrong = []
    for key, code in given("graph_construction")["SNIPPETS"].items():
        truth = list(observed(key, functools.partial(run_snippet, code)))
        guess = predictions[key]
        if not (isinstance(guess, list) and len(guess) == 3):
            wrong.append(f"{key!r} (not a tuple of 3: {guess!r})")
            continue
        fields = [f for f, want, have in zip(FIELDS, truth, guess) if want != have]
        if fields:
            wrong.append(f"{key!r} ({', '.join(fields)})")
    snippets = len(given("graph_construction")["SNIPPETS"])
    return partial(wrong, snippets, PREDICT_FLAGS_POINTS, "Run those snippets and work out why.")


# -------------------------------------------------------------------------------------------------
# Exercise 5: Softplus
# -------------------------------------------------------------------------------------------------
def _allclose(got: Any, want: Any, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    """Whether two plain tensors hold the same shape and values (within the tolerances)."""
    if not (isinstance(got, dict) and isinstance(want, dict)):
        return got == want
    if got.get("shape") != want["shape"] or not isinstance(got.get("values"), list):
        return False
    return all(
        type(a) in (int, float) and abs(a - b) <= atol + rtol * abs(b)
        for a, b in zip(got["values"], want["values"])
    )


def softplus(observed: dict, expected: dict) -> None:
    """Exercise 5: forward and backward as the reference computes them (that is PyTorch's
    softplus; tests/test_graders_graph_construction.py checks it), gradcheck, no grad without
    an input that needs one."""
    for call, want in expected.items():
        got = _result(observed, call, "Softplus")
        if "out" in want:
            beta = want["beta"]
            shape = got["out"].get("shape") if isinstance(got.get("out"), dict) else None
            if shape != want["out"]["shape"]:
                raise Failure(f"{call} has shape {shape}, expected {want['out']['shape']}.")
            if not _allclose(got["out"], want["out"]):
                raise Failure(
                    f"{call}: forward values differ from "
                    f"torch.nn.functional.softplus(x, beta={beta})."
                )
            if got["recorded"] is not True:
                raise Failure(f"{call} is not recorded in the graph (no grad_fn).")
        if "x.grad" in want:
            if got.get("x.grad") is None:
                raise Failure(f"backward of {call} gave x no gradient.")
            if not _allclose(got["x.grad"], want["x.grad"]):
                raise Failure(
                    f"backward of {call}: x.grad differs from PyTorch's for the same upstream "
                    "gradient. Check the derivative (chain rule through beta * x) and that you "
                    "multiply by the incoming gradient."
                )
        if "gradcheck" in want and got.get("gradcheck") is not True:
            raise Failure(
                f"gradcheck failed for beta={want['beta']}: backward does not match finite "
                "differences of your forward."
            )
        if "requires_grad" in want and got.get("requires_grad") is not False:
            raise Failure("Softplus of a tensor without grad must not require grad.")


# -------------------------------------------------------------------------------------------------
# Exercise 6: f_and_gradients
# -------------------------------------------------------------------------------------------------
def _close(got: Any, want: float, rel: float) -> bool:
    return type(got) in (int, float) and math.isclose(got, want, rel_tol=rel, abs_tol=1e-9)


def f_and_gradients(observed: dict, expected: dict) -> None:
    """Exercise 6: a float64 graph that records sin, over two float64 leaves; f and its two
    gradients as Python floats, as the reference computes them (tests check those against the
    formulas)."""
    for call, want in expected.items():
        got = _result(observed, call, "f_and_gradients")
        out, should = got["out"], want["out"]
        if out["dtype"] != "float64":
            raise Failure(
                f"{call}: `out` is {out['dtype']}; create x and y with dtype=lib.float64."
            )
        if not _close(out["value"], should["value"], 1e-9):
            raise Failure(f"{call}: f = {out['value']!r}, expected {should['value']!r}.")
        if out["has a grad_fn"] is not True:
            raise Failure(f"{call}: `out` has no grad_fn: create x and y with requires_grad=True.")
        if out["records sin"] is not True:
            raise Failure(
                f"{call}: the graph of `out` has no SinBackward0 node, so sin(x * y) was not "
                "recorded. Use lib.sin (math.sin turns the tensor into a Python float)."
            )
        if out["leaf dtypes"] != should["leaf dtypes"]:
            raise Failure(
                f"{call}: `out` should depend on exactly two float64 leaves x and y, found "
                f"{len(out['leaf dtypes'])}."
            )
        for label in ("df_dx", "df_dy"):
            have = got[label]
            if type(have) is not float:
                kind = have.get("type", "?") if isinstance(have, dict) else type(have).__name__
                raise Failure(f"{call}: {label} must be a Python float (use .item()), got {kind}.")
            if not _close(have, want[label], 1e-7):
                raise Failure(f"{call}: {label} = {have!r}, expected {want[label]!r}.")


# -------------------------------------------------------------------------------------------------
# Exercise 7: graph_sizes
# -------------------------------------------------------------------------------------------------
def graph_sizes(observed: dict, expected: dict) -> None:
    """Exercise 7: one size per input, each the number of distinct nodes of its graph."""
    for where, want in expected.items():
        want = want["sizes"]
        if len(set(want)) < 2:  # the case would not test dynamic graphs
            raise RuntimeError(f"the grader's model built graphs of a single size {where}")
        got = _result(observed, where, "graph_sizes")
        if got["inputs unchanged"] is not True:
            raise Failure(
                f"{where}: graph_sizes changed its inputs (their values or requires_grad). "
                "Leave them as they are: an input that requires grad adds nodes of its own."
            )
        got = got["sizes"]
        if not (isinstance(got, list) and all(type(n) is int for n in got)):
            raise Failure(f"{where}: graph_sizes must return a list of ints.")
        if len(got) != len(want):
            raise Failure(f"{where}: {len(want)} inputs but {len(got)} sizes returned.")
        if len(set(got)) == 1:
            raise Failure(
                f"{where}: every input got the same size {got[0]}, but these inputs make the "
                "model run different numbers of layers. The graph is rebuilt on every forward: "
                "run the model on each input."
            )
        for index, (have, should) in enumerate(zip(got, want)):
            if have != should:
                raise Failure(
                    f"{where}: input {index} built a graph of {should} distinct nodes "
                    f"(AccumulateGrad included), you counted {have}."
                )


# -------------------------------------------------------------------------------------------------
# Exercise 8: Value
# -------------------------------------------------------------------------------------------------
def _number_close(got: Any, want: Any) -> bool:
    if want is None or got is None:
        return got is want
    return type(got) is float and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)


def _edges_text(edges: list, graph: list) -> str:
    """next_functions as the student reads them: ((MulBackward0, 0), (None, 0))."""
    parts = []
    for edge in edges:
        if not isinstance(edge, list):
            parts.append(str(edge))
            continue
        target, nr = edge
        name = "None" if target is None else graph[target]["name"].replace("torch::autograd::", "")
        parts.append(f"({name}, {nr})")
    return "(" + ", ".join(parts) + ")"


def _check_edges(got: list, want: list, node: str, graph: list, where: str) -> None:
    strays = [edge for edge in got if not isinstance(edge, list)]
    if strays:
        raise Failure(
            f"{where}: next_functions of {node} holds {strays[0]}. Store the input's node: its "
            "grad_fn for an op's result, its accumulate_grad for a leaf (None for a value "
            "without grad), as a (node, 0) pair."
        )
    if len(got) != len(want):
        raise Failure(
            f"{where}: {node} has {len(got)} next_functions, PyTorch's has {len(want)}: "
            f"{_edges_text(want, graph)}. One (node, 0) pair per input, in order, (None, 0) "
            "for a number or a value that does not require grad."
        )
    for have, should in zip(got, want):
        if should[0] is not None and have[0] is None:
            leaf = graph[should[0]]["leaf"] is not None
            hint = (
                "a leaf that requires grad is reached through its accumulate_grad node"
                if leaf
                else "an input made by an op is reached through its grad_fn"
            )
            raise Failure(
                f"{where}: {node} has next_functions {_edges_text(got, graph)}, PyTorch's "
                f"{_edges_text(want, graph)}: {hint}."
            )
    if got != want:
        raise Failure(
            f"{where}: {node} has next_functions {_edges_text(got, graph)}, PyTorch's "
            f"{_edges_text(want, graph)}."
        )


def recording_value(observed: dict, expected: dict) -> None:
    """Exercise 8: the values, what is recorded for each, the graph from the output (names,
    edges, leaves), what each node returns on 1.5, and the gradients: PyTorch's, which the
    reference records (a test checks it)."""
    for where, want in expected.items():
        got = _result(observed, where, "Value")
        code = want["code"]
        for index, (have, should) in enumerate(zip(got["values"], want["values"], strict=True)):
            if not _number_close(have, should):
                raise Failure(f"{where}: {code[index]} is {have!r}, expected {should!r}.")
        for index, should in enumerate(want["grad_fn"]):
            have, needs = got["grad_fn"][index], want["requires grad"][index]
            if got["requires grad"][index] is not needs:
                rule = (
                    "a result requires grad when any input does"
                    if needs
                    else "no input requires grad, so nothing is recorded"
                )
                raise Failure(
                    f"{where}: {code[index]} has requires_grad {got['requires grad'][index]}, "
                    f"expected {needs}: {rule}."
                )
            if should is None and have is not None:
                raise Failure(
                    f"{where}: {code[index]} got a grad_fn ({have}), but no input requires "
                    "grad: then nothing is recorded and grad_fn stays None."
                )
            if have != should:
                raise Failure(f"{where}: {code[index]} has grad_fn {have}, PyTorch's is {should}.")
        graph, reference = got["graph"], want["graph"]
        for have, should in zip(graph, reference):
            made = should["made by"]
            node = should["name"] + (f" of {code[made]}" if made is not None else "")
            if have["name"] != should["name"] or have["leaf"] != should["leaf"]:
                raise Failure(
                    f"{where}: walking the graph from the output found {have['name']} where "
                    f"PyTorch's has {node}."
                )
            _check_edges(have["edges"], should["edges"], node, reference, where)
            returned, wanted = have["returns"], should["returns"]
            if wanted is not None and not (
                isinstance(returned, list)
                and len(returned) == len(wanted)
                and all(_number_close(a, b) for a, b in zip(returned, wanted))
            ):
                shown = [round(v, 6) if isinstance(v, float) else v for v in wanted]
                raise Failure(
                    f"{where}: {node} called on 1.5 returns {returned}, PyTorch's node returns "
                    f"{shown} (None where an input has no edge): the local backward gives each "
                    "input the gradient of the result times the derivative with respect to it."
                )
        if len(graph) != len(reference):
            raise Failure(
                f"{where}: walking the graph from the output finds {len(graph)} node(s), "
                f"PyTorch's has {len(reference)}: {', '.join(n['name'] for n in reference)}."
            )
        for leaf, should in want["gradients"].items():
            have = got["gradients"].get(leaf)
            if not _number_close(have, should):
                raise Failure(
                    f"{where}: d(out)/d(v{leaf}) through your graph is {have!r}, PyTorch's "
                    f"backward gives {should!r}."
                )
