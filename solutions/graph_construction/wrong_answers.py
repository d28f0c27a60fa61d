"""Plausible wrong answers to notebook 1's exercises: classic student mistakes the graders must
reject.

`WRONG_ANSWERS[grade_id]` lists `WrongAnswer(name, source, why)`; `source` is a complete
replacement for that exercise's solution cell (it defines the same names and may use what the
notebook defined before it: the setup imports and earlier answers such as `collect_nodes`).

Dependencies between exercises: the answers of exercises 2, 3 and 7 may call `collect_nodes`,
but their graders give them a stand-in for it (grade.py), so a wrong exercise-1 answer costs only
exercise 1 (tests/test_graders_graph_construction.py checks this for every wrong answer below).
No other graded cell uses `count_ops`, `find_leaves`, `predict_flags`, `Softplus`,
`f_and_gradients`, `graph_sizes` or `Value` (exercise 8 uses the locked `Node` and
`AccumulateGrad`).

`RIGHT_ANSWERS[grade_id]` are answers written differently that are right all the same (another
walk where the statement allows any order, a Counter for a dict, ...): they must keep full marks.
"""

from __future__ import annotations

from typing import NamedTuple


class WrongAnswer(NamedTuple):
    name: str
    source: str
    why: str


# Exercise 8's answer with one change each: `_value_with(old, new)` is the class below with the
# lines `old` replaced by `new`.
_VALUE = """\
class Value:
    def __init__(self, data, requires_grad=False):
        self.data = float(data)
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = None
        self.accumulate_grad = AccumulateGrad(self) if requires_grad else None

    def item(self):
        return self.data

    def record(self, name, data, inputs, backward):
        out = Value(data)
        if any(value.requires_grad for value in inputs):
            edges = [
                (value.grad_fn, 0) if value.grad_fn is not None else (value.accumulate_grad, 0)
                for value in inputs
            ]
            out.requires_grad = True
            out.grad_fn = Node(name, edges, backward)
        return out

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return self.record("AddBackward0", self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        a, b = self.data, other.data
        return self.record("MulBackward0", a * b, (self, other), lambda g: (g * b, g * a))

    def tanh(self):
        t = math.tanh(self.data)
        return self.record("TanhBackward0", t, (self,), lambda g: (g * (1 - t * t),))

    __radd__ = __add__
    __rmul__ = __mul__
"""


def _value_with(old: str, new: str) -> str:
    """The answer to exercise 8 with the lines `old` (found once) replaced by `new`."""
    assert _VALUE.count(old) == 1, old
    return _VALUE.replace(old, new)


WRONG_ANSWERS: dict[str, list[WrongAnswer]] = {
    "ex1_collect_nodes": [
        WrongAnswer(
            "recursive_dfs",
            """\
def collect_nodes(tensor):
    nodes, seen = [], set()

    def visit(node):
        if node is None or node in seen:
            return
        seen.add(node)
        nodes.append(node)
        for next_node, _ in node.next_functions:
            visit(next_node)

    visit(tensor.grad_fn)
    return nodes
""",
            "recursion: a chain of 5,000 ops exceeds Python's recursion limit",
        ),
        WrongAnswer(
            "no_seen_set",
            """\
def collect_nodes(tensor):
    if tensor.grad_fn is None:
        return []
    nodes = [tensor.grad_fn]
    to_visit = deque(nodes)
    while to_visit:
        node = to_visit.popleft()
        for next_node, _ in node.next_functions:
            if next_node is not None:
                nodes.append(next_node)
                to_visit.append(next_node)
    return nodes
""",
            "a shared node is listed once per path that reaches it",
        ),
        WrongAnswer(
            "seen_by_name",
            """\
def collect_nodes(tensor):
    if tensor.grad_fn is None:
        return []
    nodes = [tensor.grad_fn]
    seen = {tensor.grad_fn.name()}
    to_visit = deque(nodes)
    while to_visit:
        node = to_visit.popleft()
        for next_node, _ in node.next_functions:
            if next_node is not None and next_node.name() not in seen:
                seen.add(next_node.name())
                nodes.append(next_node)
                to_visit.append(next_node)
    return nodes
""",
            "deduplicates by name, so a second MulBackward0 node is lost",
        ),
        WrongAnswer(
            "stack_order",
            """\
def collect_nodes(tensor):
    if tensor.grad_fn is None:
        return []
    nodes = [tensor.grad_fn]
    seen = {tensor.grad_fn}
    to_visit = [tensor.grad_fn]
    while to_visit:
        node = to_visit.pop()
        for next_node, _ in node.next_functions:
            if next_node is not None and next_node not in seen:
                seen.add(next_node)
                nodes.append(next_node)
                to_visit.append(next_node)
    return nodes
""",
            "a stack instead of a queue: every node once, but not in breadth-first order",
        ),
        WrongAnswer(
            "ops_only",
            """\
def collect_nodes(tensor):
    if tensor.grad_fn is None:
        return []
    nodes = [tensor.grad_fn]
    seen = {tensor.grad_fn}
    to_visit = deque(nodes)
    while to_visit:
        node = to_visit.popleft()
        for next_node, _ in node.next_functions:
            if next_node is not None and next_node.next_functions and next_node not in seen:
                seen.add(next_node)
                nodes.append(next_node)
                to_visit.append(next_node)
    return nodes
""",
            "leaves out the AccumulateGrad nodes (they have no next_functions)",
        ),
        WrongAnswer(
            "dedupe_at_end",
            """\
def collect_nodes(tensor):
    if tensor.grad_fn is None:
        return []
    nodes = [tensor.grad_fn]
    to_visit = deque(nodes)
    while to_visit:
        node = to_visit.popleft()
        for next_node, _ in node.next_functions:
            if next_node is not None:
                nodes.append(next_node)
                to_visit.append(next_node)
    return list(dict.fromkeys(nodes))
""",
            "right list, but walks every path: exponential time on a chain of diamonds",
        ),
        WrongAnswer(
            "recursion_limit_raised",
            """\
import sys


def collect_nodes(tensor):
    sys.setrecursionlimit(100_000)
    if tensor.grad_fn is None:
        return []
    nodes, seen = [tensor.grad_fn], {tensor.grad_fn}

    def visit(level):
        below = []
        for node in level:
            for next_node, _ in node.next_functions:
                if next_node is not None and next_node not in seen:
                    seen.add(next_node)
                    below.append(next_node)
        nodes.extend(below)
        if below:
            visit(below)

    visit(nodes[:])
    return nodes
""",
            "recursion (one call per level) hidden behind a raised recursion limit",
        ),
    ],
    "ex2_count_ops": [
        WrongAnswer(
            "every_path",
            """\
def count_ops(tensor):
    counts = Counter()
    to_visit = [tensor.grad_fn] if tensor.grad_fn is not None else []
    while to_visit:
        node = to_visit.pop()
        if node.name() != "torch::autograd::AccumulateGrad":
            counts[node.name()] += 1
        to_visit.extend(n for n, _ in node.next_functions if n is not None)
    return dict(counts)
""",
            "counts a shared subexpression once per path that reaches it",
        ),
        WrongAnswer(
            "count_edges",
            """\
def count_ops(tensor):
    if tensor.grad_fn is None:
        return {}
    counts = Counter([tensor.grad_fn.name()])
    for node in collect_nodes(tensor):
        for child, _ in node.next_functions:
            if child is not None and child.name() != "torch::autograd::AccumulateGrad":
                counts[child.name()] += 1
    return dict(counts)
""",
            "counts edges into a node, so a node used twice is counted twice",
        ),
        WrongAnswer(
            "with_accumulate_grad",
            """\
def count_ops(tensor):
    return dict(Counter(node.name() for node in collect_nodes(tensor)))
""",
            "counts the AccumulateGrad nodes as ops",
        ),
        WrongAnswer(
            "recursive_walk",
            """\
def count_ops(tensor):
    counts, seen = Counter(), set()

    def visit(node):
        if node is None or node in seen:
            return
        seen.add(node)
        if node.name() != "torch::autograd::AccumulateGrad":
            counts[node.name()] += 1
        for next_node, _ in node.next_functions:
            visit(next_node)

    visit(tensor.grad_fn)
    return dict(counts)
""",
            "its own recursive walk: a chain of 5,000 ops exceeds the recursion limit",
        ),
        WrongAnswer(
            "every_path_deduplicated",
            """\
def count_ops(tensor):
    found = {}
    to_visit = [tensor.grad_fn] if tensor.grad_fn is not None else []
    while to_visit:
        node = to_visit.pop()
        found[id(node)] = node
        to_visit.extend(n for n, _ in node.next_functions if n is not None)
    counts = Counter(node.name() for node in found.values())
    counts.pop("torch::autograd::AccumulateGrad", None)
    return dict(counts)
""",
            "right counts, but walks every path: exponential time on a chain of diamonds",
        ),
    ],
    "ex3_find_leaves": [
        WrongAnswer(
            "list_membership",
            """\
def find_leaves(tensor):
    if tensor.grad_fn is None:
        return [tensor] if tensor.requires_grad else []
    leaves = []
    for node in collect_nodes(tensor):
        if hasattr(node, "variable") and node.variable not in leaves:
            leaves.append(node.variable)
    return leaves
""",
            "`t in list` compares tensors with ==, which is elementwise (ambiguous truth value)",
        ),
        WrongAnswer(
            "forgets_leaf_output",
            """\
def find_leaves(tensor):
    return [
        node.variable
        for node in collect_nodes(tensor)
        if node.name() == "torch::autograd::AccumulateGrad"
    ]
""",
            "returns [] when the tensor is itself a leaf that requires grad",
        ),
        WrongAnswer(
            "returns_nodes",
            """\
def find_leaves(tensor):
    if tensor.grad_fn is None:
        return [tensor] if tensor.requires_grad else []
    return [
        node for node in collect_nodes(tensor) if node.name() == "torch::autograd::AccumulateGrad"
    ]
""",
            "returns the AccumulateGrad nodes instead of their .variable tensors",
        ),
        WrongAnswer(
            "depth_first_order",
            """\
def find_leaves(tensor):
    if tensor.grad_fn is None:
        return [tensor] if tensor.requires_grad else []
    leaves, seen, to_visit = [], {tensor.grad_fn}, [tensor.grad_fn]
    while to_visit:
        node = to_visit.pop()
        if hasattr(node, "variable"):
            leaves.append(node.variable)
        for next_node, _ in reversed(node.next_functions):
            if next_node is not None and next_node not in seen:
                seen.add(next_node)
                to_visit.append(next_node)
    return leaves
""",
            "its own depth-first walk: the right leaves, not in collect_nodes's order",
        ),
        WrongAnswer(
            "recursive_walk",
            """\
def find_leaves(tensor):
    if tensor.grad_fn is None:
        return [tensor] if tensor.requires_grad else []
    leaves, seen = [], set()

    def visit(node):
        if node is None or node in seen:
            return
        seen.add(node)
        if hasattr(node, "variable"):
            leaves.append(node.variable)
        for next_node, _ in node.next_functions:
            visit(next_node)

    visit(tensor.grad_fn)
    return leaves
""",
            "its own recursive walk: a chain of 5,000 ops exceeds the recursion limit",
        ),
        WrongAnswer(
            "every_path_deduplicated",
            """\
def find_leaves(tensor):
    if tensor.grad_fn is None:
        return [tensor] if tensor.requires_grad else []
    leaves = {}
    to_visit = deque([tensor.grad_fn])
    while to_visit:
        node = to_visit.popleft()
        if hasattr(node, "variable"):
            leaves.setdefault(id(node), node.variable)
        to_visit.extend(n for n, _ in node.next_functions if n is not None)
    return list(leaves.values())
""",
            "right leaves in the right order, but walks every path: exponential on diamonds",
        ),
    ],
    "ex4_predict_flags": [
        WrongAnswer(
            "no_grad_means_not_leaf",
            """\
def predict_flags():
    return {
        "a": (True, True, None),
        "b": (False, False, None),
        "c": (True, False, "MulBackward0"),
        "d": (True, False, "SumBackward0"),
        "e": (True, False, "AddBackward0"),
        "f": (False, False, None),
        "g": (False, False, None),
        "h": (True, True, None),
        "i": (True, False, "SelectBackward0"),
        "j": (True, False, "DivBackward0"),
    }
""",
            "believes an op's result is never a leaf (results without grad are leaves)",
        ),
        WrongAnswer(
            "detach_and_no_grad_ignored",
            """\
def predict_flags():
    return {
        "a": (True, True, None),
        "b": (False, True, None),
        "c": (True, False, "MulBackward0"),
        "d": (True, False, "SumBackward0"),
        "e": (True, False, "AddBackward0"),
        "f": (True, False, "MulBackward0"),
        "g": (True, False, "SinBackward0"),
        "h": (True, False, "SinBackward0"),
        "i": (True, False, "SelectBackward0"),
        "j": (True, False, "DivBackward0"),
    }
""",
            "believes detach() and no_grad() still record the op",
        ),
    ],
    "ex5_softplus": [
        WrongAnswer(
            "one_gradient_for_two_inputs",
            """\
class Softplus(Function):
    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return (1 + (beta * x).exp()).log() / beta

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (ctx.beta * x).sigmoid()
""",
            "backward must return one gradient per forward argument (None for beta)",
        ),
        WrongAnswer(
            "beta_missing_in_derivative",
            """\
class Softplus(Function):
    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return (1 + (beta * x).exp()).log() / beta

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.sigmoid(), None
""",
            "derivative sigmoid(x) instead of sigmoid(beta * x): right only for beta = 1",
        ),
        WrongAnswer(
            "wrong_sign",
            """\
class Softplus(Function):
    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return (1 + (beta * x).exp()).log() / beta

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (-ctx.beta * x).sigmoid(), None
""",
            "sigmoid(-beta x): a sign error in the derivative",
        ),
        WrongAnswer(
            "ignores_incoming_gradient",
            """\
class Softplus(Function):
    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return (1 + (beta * x).exp()).log() / beta

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return (ctx.beta * x).sigmoid(), None
""",
            "returns the local derivative without multiplying by the incoming gradient",
        ),
    ],
    "ex6_f_and_gradients": [
        WrongAnswer(
            "math_sin",
            """\
def f_and_gradients(lib, x0, y0):
    x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
    y = lib.tensor(y0, dtype=lib.float64, requires_grad=True)
    out = x**2 + y**3 - math.sin(x * y)
    out.backward()
    return out, x.grad.item(), y.grad.item()
""",
            "math.sin turns x * y into a float: the sin term is missing from the graph",
        ),
        WrongAnswer(
            "caret_is_xor",
            """\
def f_and_gradients(lib, x0, y0):
    x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
    y = lib.tensor(y0, dtype=lib.float64, requires_grad=True)
    out = x ^ 2 + y ^ 3 - lib.sin(x * y)
    out.backward()
    return out, x.grad.item(), y.grad.item()
""",
            "^ is bitwise xor in Python, not a power",
        ),
        WrongAnswer(
            "hand_derived_without_chain_factor",
            """\
def f_and_gradients(lib, x0, y0):
    x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
    y = lib.tensor(y0, dtype=lib.float64, requires_grad=True)
    out = x**2 + y**3 - lib.sin(x * y)
    return out, 2 * x0 - math.cos(x0 * y0), 3 * y0**2 - math.cos(x0 * y0)
""",
            "d/dx sin(xy) = y cos(xy): the hand-derived gradient misses the chain factor",
        ),
        WrongAnswer(
            "float32_leaves",
            """\
def f_and_gradients(lib, x0, y0):
    x = lib.tensor(x0, requires_grad=True)
    y = lib.tensor(y0, requires_grad=True)
    out = x**2 + y**3 - lib.sin(x * y)
    out.backward()
    return out, x.grad.item(), y.grad.item()
""",
            "float32 leaves: the contract asks for float64 (and float32 is off by 1e-7)",
        ),
        WrongAnswer(
            "gradients_as_tensors",
            """\
def f_and_gradients(lib, x0, y0):
    x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
    y = lib.tensor(y0, dtype=lib.float64, requires_grad=True)
    out = x**2 + y**3 - lib.sin(x * y)
    out.backward()
    return out, x.grad, y.grad
""",
            "returns the gradients as 0-d tensors where Python floats are asked",
        ),
    ],
    "ex7_graph_sizes": [
        WrongAnswer(
            "graph_built_once",
            """\
def graph_sizes(model, inputs):
    size = len(collect_nodes(model(inputs[0])))
    return [size] * len(inputs)
""",
            "assumes one static graph: measures the first input only",
        ),
        WrongAnswer(
            "ops_only",
            """\
def graph_sizes(model, inputs):
    sizes = []
    for x in inputs:
        nodes = collect_nodes(model(x))
        sizes.append(sum(1 for n in nodes if n.name() != "torch::autograd::AccumulateGrad"))
    return sizes
""",
            "leaves out the AccumulateGrad nodes of the parameters",
        ),
        WrongAnswer(
            "counts_parameter_per_use",
            """\
def graph_sizes(model, inputs):
    sizes = []
    for x in inputs:
        out = model(x)
        nodes = collect_nodes(out)
        edges = sum(1 for node in nodes for n, _ in node.next_functions if n is not None)
        sizes.append(1 + edges if out.grad_fn is not None else 0)
    return sizes
""",
            "counts edges, so the shared weight's AccumulateGrad counts once per layer",
        ),
        WrongAnswer(
            "recursive_count",
            """\
def graph_sizes(model, inputs):
    def count(node, seen):
        if node is None or node in seen:
            return 0
        seen.add(node)
        return 1 + sum(count(n, seen) for n, _ in node.next_functions)

    return [count(model(x).grad_fn, set()) for x in inputs]
""",
            "its own recursive walk: a model thousands of ops deep exceeds the recursion limit",
        ),
        WrongAnswer(
            "every_path_deduplicated",
            """\
def graph_sizes(model, inputs):
    sizes = []
    for x in inputs:
        out = model(x)
        found = set()
        to_visit = [out.grad_fn] if out.grad_fn is not None else []
        while to_visit:
            node = to_visit.pop()
            found.add(node)
            to_visit.extend(n for n, _ in node.next_functions if n is not None)
        sizes.append(len(found))
    return sizes
""",
            "right sizes, but walks every path: exponential time on a chain of diamonds",
        ),
        WrongAnswer(
            "turns_on_grad_for_inputs",
            """\
def graph_sizes(model, inputs):
    sizes = []
    for x in inputs:
        x.requires_grad_()
        sizes.append(len(collect_nodes(model(x))))
    return sizes
""",
            "changes its inputs: an input that requires grad adds its own nodes to the graph",
        ),
    ],
    "ex8_value": [
        WrongAnswer(
            "always_records",
            _value_with(
                """\
        if any(value.requires_grad for value in inputs):
""",
                """\
        if True:
""",
            ),
            "records every op, also when no input requires grad",
        ),
        WrongAnswer(
            "values_as_edges",
            _value_with(
                """\
            edges = [
                (value.grad_fn, 0) if value.grad_fn is not None else (value.accumulate_grad, 0)
                for value in inputs
            ]
""",
                """\
            edges = [(value, 0) for value in inputs]
""",
            ),
            "stores the input values (micrograd's _prev) instead of their nodes",
        ),
        WrongAnswer(
            "no_accumulate_grad_edges",
            _value_with(
                """\
            edges = [
                (value.grad_fn, 0) if value.grad_fn is not None else (value.accumulate_grad, 0)
                for value in inputs
            ]
""",
                """\
            edges = [(value.grad_fn, 0) for value in inputs]
""",
            ),
            "links only to grad_fn: a leaf's edge is None, so leaves get no gradient",
        ),
        WrongAnswer(
            "edges_only_for_values_with_grad",
            _value_with(
                """\
            edges = [
                (value.grad_fn, 0) if value.grad_fn is not None else (value.accumulate_grad, 0)
                for value in inputs
            ]
""",
                """\
            edges = [
                (value.grad_fn, 0) if value.grad_fn is not None else (value.accumulate_grad, 0)
                for value in inputs
                if value.requires_grad
            ]
""",
            ),
            "leaves out the edge of a number or a value without grad: x * 2 gets one edge",
        ),
        WrongAnswer(
            "mul_backward_own_factor",
            _value_with(
                "lambda g: (g * b, g * a)",
                "lambda g: (g * a, g * b)",
            ),
            "gives each factor its own value as derivative instead of the other factor's",
        ),
        WrongAnswer(
            "tanh_backward_of_the_input",
            _value_with(
                "lambda g: (g * (1 - t * t),)",
                "lambda g: (g * (1 - self.data**2),)",
            ),
            "1 - x**2 of the input instead of 1 - tanh(x)**2 of the result",
        ),
    ],
}


RIGHT_ANSWERS: dict[str, list[WrongAnswer]] = {
    "ex1_collect_nodes": [
        WrongAnswer(
            "listed_when_taken_from_the_queue",
            """\
def collect_nodes(tensor):
    nodes, seen = [], set()
    to_visit = deque([tensor.grad_fn] if tensor.grad_fn is not None else [])
    while to_visit:
        node = to_visit.popleft()
        if node in seen:
            continue
        seen.add(node)
        nodes.append(node)
        to_visit.extend(n for n, _ in node.next_functions if n is not None and n not in seen)
    return nodes
""",
            "a node listed when it leaves the queue (first in, first out: the same order)",
        ),
        WrongAnswer(
            "list_with_a_head_index",
            """\
def collect_nodes(tensor):
    if tensor.grad_fn is None:
        return []
    nodes, seen = [tensor.grad_fn], {id(tensor.grad_fn)}
    head = 0
    while head < len(nodes):
        for next_node, _ in nodes[head].next_functions:
            if next_node is not None and id(next_node) not in seen:
                seen.add(id(next_node))
                nodes.append(next_node)
        head += 1
    return nodes
""",
            "the result list is the queue (an index instead of a deque), ids in the seen set",
        ),
    ],
    "ex2_count_ops": [
        WrongAnswer(
            "own_walk_returns_a_counter",
            """\
def count_ops(tensor):
    counts, seen = Counter(), set()
    to_visit = [tensor.grad_fn] if tensor.grad_fn is not None else []
    while to_visit:
        node = to_visit.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.name() != "torch::autograd::AccumulateGrad":
            counts[node.name()] += 1
        to_visit.extend(n for n, _ in node.next_functions if n is not None)
    return counts
""",
            "its own depth-first walk (any order will do) and a Counter, which is a dict",
        ),
        WrongAnswer(
            "plain_dict_loop",
            """\
def count_ops(tensor):
    counts = {}
    for node in collect_nodes(tensor):
        if node.name() != "torch::autograd::AccumulateGrad":
            counts[node.name()] = counts.get(node.name(), 0) + 1
    return counts
""",
            "a loop and dict.get instead of a Counter",
        ),
    ],
    "ex3_find_leaves": [
        WrongAnswer(
            "own_breadth_first_walk",
            """\
def find_leaves(tensor):
    if tensor.grad_fn is None:
        return [tensor] if tensor.requires_grad else []
    leaves, seen, to_visit = [], {tensor.grad_fn}, deque([tensor.grad_fn])
    while to_visit:
        node = to_visit.popleft()
        if hasattr(node, "variable"):
            leaves.append(node.variable)
        for next_node, _ in node.next_functions:
            if next_node is not None and next_node not in seen:
                seen.add(next_node)
                to_visit.append(next_node)
    return leaves
""",
            "its own breadth-first walk instead of collect_nodes: the same order",
        ),
        WrongAnswer(
            "leaves_kept_once_by_id",
            """\
def find_leaves(tensor):
    if tensor.grad_fn is None:
        return [tensor] if tensor.requires_grad else []
    leaves, ids = [], set()
    for node in collect_nodes(tensor):
        leaf = getattr(node, "variable", None)
        if leaf is not None and id(leaf) not in ids:
            ids.add(id(leaf))
            leaves.append(leaf)
    return leaves
""",
            "finds AccumulateGrad nodes by their .variable and keeps each leaf once by id",
        ),
    ],
    "ex4_predict_flags": [
        WrongAnswer(
            "the_rules_applied_to_lists",
            """\
def predict_flags():
    ops = {"c": "MulBackward0", "d": "SumBackward0", "e": "AddBackward0",
           "i": "SelectBackward0", "j": "DivBackward0"}
    leaves_with_grad = ["a", "h"]
    predictions = {}
    for key in SNIPPETS:
        if key in ops:
            predictions[key] = (True, False, ops[key])
        else:
            predictions[key] = (key in leaves_with_grad, True, None)
    return predictions
""",
            "a rule per kind of snippet: recorded ops, leaves that require grad, other leaves",
        ),
        WrongAnswer(
            "found_by_running_the_snippets",
            """\
def predict_flags():
    predictions = {}
    for key, code in SNIPPETS.items():
        scope = {"torch": torch}
        exec(code, scope)
        out = scope["out"]
        name = out.grad_fn.name() if out.grad_fn is not None else None
        predictions[key] = (out.requires_grad, out.is_leaf, name)
    return predictions
""",
            "not a prediction but a measurement, which the statement does not forbid",
        ),
    ],
    "ex5_softplus": [
        WrongAnswer(
            "derivative_from_the_output",
            """\
class Softplus(Function):
    @staticmethod
    def forward(ctx, x, beta):
        out = (1 + (beta * x).exp()).log() / beta
        ctx.save_for_backward(out)
        ctx.beta = beta
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (1 - (-ctx.beta * out).exp()), None
""",
            "saves the output: sigmoid(beta x) = 1 - exp(-beta softplus(x))",
        ),
    ],
    "ex6_f_and_gradients": [
        WrongAnswer(
            "autograd_grad_and_float",
            """\
def f_and_gradients(lib, x0, y0):
    x = lib.tensor(float(x0), dtype=lib.float64, requires_grad=True)
    y = lib.tensor(float(y0), dtype=lib.float64, requires_grad=True)
    out = x * x + y**3 - lib.sin(x * y)
    df_dx, df_dy = lib.autograd.grad(out, (x, y))
    return out, float(df_dx), float(df_dy)
""",
            "autograd.grad instead of backward, float() instead of .item()",
        ),
    ],
    "ex7_graph_sizes": [
        WrongAnswer(
            "own_walk_in_a_loop",
            """\
def graph_sizes(model, inputs):
    sizes = []
    for x in inputs:
        out = model(x)
        seen = set()
        to_visit = [out.grad_fn] if out.grad_fn is not None else []
        while to_visit:
            node = to_visit.pop()
            if node not in seen:
                seen.add(node)
                to_visit.extend(n for n, _ in node.next_functions if n is not None)
        sizes.append(len(seen))
    return sizes
""",
            "its own depth-first walk with a set, no collect_nodes",
        ),
    ],
    "ex8_value": [
        WrongAnswer(
            "nested_functions_and_a_loop",
            """\
class Value:
    def __init__(self, data, requires_grad=False):
        self.data = float(data)
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = None
        self.accumulate_grad = AccumulateGrad(self) if requires_grad else None

    def item(self):
        return self.data

    def record(self, name, data, inputs, backward):
        result = Value(data)
        edges = []
        for value in inputs:
            node = value.grad_fn or value.accumulate_grad
            edges.append((node, 0))
            result.requires_grad = result.requires_grad or value.requires_grad
        if result.requires_grad:
            result.grad_fn = Node(name, tuple(edges), backward)
        return result

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)

        def add_backward(grad):
            return grad, grad

        return self.record("AddBackward0", self.data + other.data, (self, other), add_backward)

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)

        def mul_backward(grad):
            return grad * other.data, grad * self.data

        return self.record("MulBackward0", self.data * other.data, (self, other), mul_backward)

    def tanh(self):
        e = math.exp(2 * self.data)
        result = (e - 1) / (e + 1)

        def tanh_backward(grad):
            return (grad * (1 - result**2),)

        return self.record("TanhBackward0", result, (self,), tanh_backward)

    __radd__ = __add__
    __rmul__ = __mul__
""",
            "a loop and `or` for the edges, nested defs, tanh from exp",
        ),
    ],
}
