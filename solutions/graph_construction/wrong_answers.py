"""Plausible wrong answers to notebook 1's exercises: classic student mistakes the graders must
reject.

`WRONG_ANSWERS[grade_id]` lists `WrongAnswer(name, source, why)`; `source` is a complete
replacement for that exercise's solution cell (it defines the same names and may use what the
notebook defined before it: the setup imports and earlier answers such as `collect_nodes`).

Dependencies between exercises: the reference answers of exercises 2, 3 and 7 call
`collect_nodes`, so in an otherwise reference notebook a wrong exercise-1 answer can also cost
exercises 2, 3 and 7. A wrong answer to exercises 2 to 7 costs only its own exercise (no other
cell of the notebook that is graded uses `count_ops`, `find_leaves`, `predict_flags`,
`Softplus`, `f_and_gradients` or `graph_sizes`; a test checks this).
"""

from __future__ import annotations

from typing import NamedTuple


class WrongAnswer(NamedTuple):
    name: str
    source: str
    why: str


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
    ],
}
