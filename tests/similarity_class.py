"""A class of notebook-1 answers for the similarity checks, written by hand: an honest student
(alice), a verbatim copy of her (bob), a disguised copy of her (carol: names renamed, comments
reworded, independent statements swapped), a second honest student who writes every answer
differently (dave), a student who hands in the reference (erin), and two blank students (frank,
gina). Used by tests/test_similarity.py and by the red-team class graded with `grade`.

PADDED holds copies of alice with unrelated text added to every cell (a line of 400 numbers, 200
lines of random arithmetic, at the end or at the start), and HANA an honest student whose
answers are the reference with a few touches of her own: tests/test_similarity.py scores them
with the class (they are not in STUDENTS, which the red-team class grades).
"""

from __future__ import annotations

import random
import textwrap

import nbformat
from course_notebooks import release_source
from course_support import COURSE_SOURCE, NOTEBOOK_1, reference_answers

SOURCE = nbformat.read(COURSE_SOURCE / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
REFERENCE = reference_answers(SOURCE)


def answer_cells(bodies: dict[str, str]) -> dict[str, str]:
    """Whole answer cells: the release's signature and docstring, then the body (a body that
    starts with `class` is the whole cell)."""
    cells = {}
    for grade_id, body in bodies.items():
        body = textwrap.dedent(body).strip("\n") + "\n"
        header = REFERENCE[grade_id].split("### BEGIN SOLUTION")[0].rstrip(" ")
        cells[grade_id] = (
            body if body.startswith("class") else header + textwrap.indent(body, "    ")
        )
    return cells


PREDICTIONS = {
    "a": (True, True, None),
    "b": (False, True, None),
    "c": (True, False, "MulBackward0"),
    "d": (True, False, "SumBackward0"),
    "e": (True, False, "AddBackward0"),
    "f": (False, True, None),
    "g": (False, True, None),
    "h": (True, True, None),
    "i": (True, False, "SelectBackward0"),
    "j": (True, False, "DivBackward0"),
}

ALICE = {
    "ex1_collect_nodes": """
        # breadth-first walk with a queue; a node is listed when it leaves the queue
        result = []
        if tensor.grad_fn is None:
            return result
        queue = deque([tensor.grad_fn])
        visited = set()
        visited.add(tensor.grad_fn)
        while len(queue) > 0:
            current = queue.popleft()
            result.append(current)
            for child, _index in current.next_functions:
                if child is None or child in visited:
                    continue
                visited.add(child)
                queue.append(child)
        return result
    """,
    "ex2_count_ops": """
        counts = {}
        for node in collect_nodes(tensor):
            name = node.name()
            if name == "torch::autograd::AccumulateGrad":
                continue  # a leaf, not an op
            counts[name] = counts.get(name, 0) + 1
        return counts
    """,
    "ex3_find_leaves": """
        if tensor.grad_fn is None:
            if tensor.requires_grad:
                return [tensor]
            return []
        leaves = []
        for node in collect_nodes(tensor):
            if node.name().endswith("AccumulateGrad"):
                leaves.append(node.variable)
        return leaves
    """,
    "ex4_predict_flags": "predictions = {}\n"
    + "".join(f"predictions[{key!r}] = {value!r}\n" for key, value in PREDICTIONS.items())
    + "return predictions\n",
    "ex5_softplus": '''
        class Softplus(Function):
            """softplus(x, beta) = log(1 + exp(beta * x)) / beta."""

            @staticmethod
            def forward(ctx, x, beta):
                ctx.beta = beta
                ctx.save_for_backward(x)
                scaled = x * beta
                return (scaled.exp() + 1).log() / beta

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                if not ctx.needs_input_grad[0]:
                    return None, None
                slope = (x * ctx.beta).sigmoid()
                return grad * slope, None
    ''',
    "ex6_f_and_gradients": """
        px = lib.tensor(float(x0), requires_grad=True, dtype=lib.float64)
        py = lib.tensor(float(y0), requires_grad=True, dtype=lib.float64)
        value = px * px + py * py * py - (px * py).sin()
        value.backward()
        dx = float(px.grad)
        dy = float(py.grad)
        return value, dx, dy
    """,
    "ex7_graph_sizes": """
        sizes = []
        for x in inputs:
            out = model(x)
            sizes.append(len(collect_nodes(out)))
        return sizes
    """,
}


ALICE["ex8_value"] = """
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
        if not any(v.requires_grad for v in inputs):
            return out  # nothing to record
        links = []
        for v in inputs:
            links.append((v.grad_fn if v.grad_fn is not None else v.accumulate_grad, 0))
        out.requires_grad = True
        out.grad_fn = Node(name, links, backward)
        return out

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return self.record("AddBackward0", self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        x, y = self.data, other.data
        return self.record("MulBackward0", x * y, (self, other), lambda g: (g * y, g * x))

    def tanh(self):
        th = math.tanh(self.data)
        return self.record("TanhBackward0", th, (self,), lambda g: (g * (1 - th**2),))

    __radd__ = __add__
    __rmul__ = __mul__
"""

# Alice's answers disguised: names renamed, comments reworded, independent statements swapped.
CAROL = {
    **ALICE,
    "ex1_collect_nodes": """
        # BFS over grad_fn nodes
        order = []
        if tensor.grad_fn is None:
            return order
        seen = set()
        todo = deque([tensor.grad_fn])  # swapped with the line above
        seen.add(tensor.grad_fn)
        while len(todo) > 0:
            fn = todo.popleft()
            order.append(fn)
            for nxt, _i in fn.next_functions:
                if nxt is None or nxt in seen:
                    continue
                seen.add(nxt)
                todo.append(nxt)
        return order
    """,
    "ex2_count_ops": """
        tally = {}
        for n in collect_nodes(tensor):
            op = n.name()
            if op == "torch::autograd::AccumulateGrad":
                continue  # skip leaves
            tally[op] = tally.get(op, 0) + 1
        return tally
    """,
    "ex6_f_and_gradients": """
        b = lib.tensor(float(y0), requires_grad=True, dtype=lib.float64)
        a = lib.tensor(float(x0), requires_grad=True, dtype=lib.float64)
        f = a * a + b * b * b - (a * b).sin()
        f.backward()
        gy = float(b.grad)
        gx = float(a.grad)
        return f, gx, gy
    """,
}

CAROL["ex5_softplus"] = '''
    class Softplus(Function):
        """Softplus with a temperature."""

        @staticmethod
        def forward(ctx, t, b):
            ctx.save_for_backward(t)
            ctx.beta = b
            z = t * b
            return (z.exp() + 1).log() / b

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            if not ctx.needs_input_grad[0]:
                return None, None  # no gradient wanted
            s = (t * ctx.beta).sigmoid()
            return g * s, None
'''
CAROL["ex7_graph_sizes"] = """
    result = []
    for inp in inputs:
        y = model(inp)
        result.append(len(collect_nodes(y)))
    return result
"""

CAROL["ex8_value"] = """
class Value:
    def __init__(self, data, requires_grad=False):
        self.data = float(data)
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = None
        self.accumulate_grad = AccumulateGrad(self) if requires_grad else None

    def item(self):
        return self.data

    def record(self, label, value, args, local_backward):
        res = Value(value)
        if not any(a.requires_grad for a in args):
            return res  # no grad needed anywhere
        edges = []
        for a in args:
            edges.append((a.grad_fn if a.grad_fn is not None else a.accumulate_grad, 0))
        res.grad_fn = Node(label, edges, local_backward)
        res.requires_grad = True
        return res

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return self.record("AddBackward0", self.data + other.data, (self, other), lambda d: (d, d))

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        p, q = self.data, other.data
        return self.record("MulBackward0", p * q, (self, other), lambda d: (d * q, d * p))

    def tanh(self):
        r = math.tanh(self.data)
        return self.record("TanhBackward0", r, (self,), lambda d: (d * (1 - r**2),))

    __radd__ = __add__
    __rmul__ = __mul__
"""

DAVE = {
    "ex1_collect_nodes": """
        start = tensor.grad_fn
        if start is None:
            return []
        order, known, i = [start], {id(start)}, 0
        while i < len(order):
            for fn, _ in order[i].next_functions:
                if fn is not None and id(fn) not in known:
                    known.add(id(fn))
                    order.append(fn)
            i += 1
        return order
    """,
    "ex2_count_ops": """
        names = [n.name() for n in collect_nodes(tensor)]
        return {name: names.count(name) for name in set(names) if "AccumulateGrad" not in name}
    """,
    "ex3_find_leaves": """
        if not tensor.grad_fn:
            return [tensor] * tensor.requires_grad
        accumulators = filter(lambda n: not n.next_functions, collect_nodes(tensor))
        return [getattr(acc, "variable") for acc in accumulators]
    """,
    "ex4_predict_flags": f"return {PREDICTIONS!r}\n",
    "ex5_softplus": """
        class Softplus(Function):
            @staticmethod
            def forward(ctx, x, beta):
                ctx.save_for_backward(x)
                ctx.beta = beta
                return ((x * beta).exp() + 1.0).log() * (1.0 / beta)

            @staticmethod
            def backward(ctx, grad):
                x = ctx.saved_tensors[0]
                sigmoid = 1.0 / (1.0 + (-ctx.beta * x).exp())
                return (grad * sigmoid if ctx.needs_input_grad[0] else None), None
    """,
    "ex6_f_and_gradients": """
        x, y = (lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in (x0, y0))
        out = x**2 + y**3 - lib.sin(x * y)
        out.backward()
        return out, x.grad.item(), y.grad.item()
    """,
    "ex7_graph_sizes": "return list(map(lambda x: len(collect_nodes(model(x))), inputs))\n",
    "ex8_value": """
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
        result.requires_grad = any(i.requires_grad for i in inputs)
        if result.requires_grad:
            pairs = tuple((i.grad_fn or i.accumulate_grad, 0) for i in inputs)
            result.grad_fn = Node(name, pairs, backward)
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
        e = math.exp(-2 * self.data)
        result = (1 - e) / (1 + e)

        def tanh_backward(grad):
            return (grad * (1 - result * result),)

        return self.record("TanhBackward0", result, (self,), tanh_backward)

    __radd__ = __add__
    __rmul__ = __mul__
""",
}


STUDENTS = {
    "alice": answer_cells(ALICE),
    "bob": answer_cells(ALICE),
    "carol": answer_cells(CAROL),
    "dave": answer_cells(DAVE),
    "erin": REFERENCE,
    "frank": {grade_id: release_source(source) for grade_id, source in REFERENCE.items()},
    "gina": {grade_id: release_source(source) for grade_id, source in REFERENCE.items()},
}
COPIES = {("alice", "bob"), ("alice", "carol"), ("bob", "carol")}


def _numbers(seed: int) -> str:
    rng = random.Random(seed)
    return "_pad = [" + ", ".join(str(rng.randrange(10**6)) for _ in range(400)) + "]\n"


def _arithmetic(seed: int) -> str:
    rng = random.Random(seed)
    return "".join(
        f"t{i} = t{rng.randrange(i)} * {rng.randint(2, 99)} + {rng.randint(1, 99)}\n"
        if i and rng.random() < 0.5
        else f"t{i} = {rng.randint(1, 99)} * {rng.randint(2, 99)} + {rng.randint(1, 99)}\n"
        for i in range(200)
    )


def _at_end(cells: dict[str, str], padding: str) -> dict[str, str]:
    """Each cell with `padding` after its last line, in the function (the class) it holds."""
    return {g: s.rstrip("\n") + "\n" + textwrap.indent(padding, "    ") for g, s in cells.items()}


def _at_start(bodies: dict[str, str], padding: str) -> dict[str, str]:
    """Each answer with `padding` first in the function's body (before a class cell)."""
    cells = answer_cells(bodies)
    return {
        grade_id: padding + cells[grade_id]
        if cells[grade_id].startswith("class")
        else answer_cells({grade_id: padding + textwrap.dedent(body).lstrip("\n")})[grade_id]
        for grade_id, body in bodies.items()
    }


PADDED = {
    "ivan": _at_end(answer_cells(ALICE), _numbers(1)),
    "judy": _at_end(answer_cells(ALICE), _arithmetic(2)),
    "kim": _at_start(ALICE, _arithmetic(3)),
    "leo": _at_start(ALICE, _numbers(4)),
}

# The reference, with a touch of her own in most answers (a short honest student).
HANA = {
    **REFERENCE,
    **answer_cells(
        {
            "ex1_collect_nodes": """
                if tensor.grad_fn is None:
                    return []
                nodes = [tensor.grad_fn]
                seen = {tensor.grad_fn}
                to_visit = deque(nodes)
                while len(to_visit) > 0:
                    node = to_visit.popleft()
                    for next_node, _ in node.next_functions:
                        if next_node is not None and next_node not in seen:
                            seen.add(next_node)
                            nodes.append(next_node)
                            to_visit.append(next_node)
                return nodes
            """,
            "ex2_count_ops": """
                counts = Counter(node.name() for node in collect_nodes(tensor))
                counts.pop("torch::autograd::AccumulateGrad", None)
                return {name: count for name, count in counts.items()}
            """,
            "ex6_f_and_gradients": """
                x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
                y = lib.tensor(y0, dtype=lib.float64, requires_grad=True)
                out = x**2 + y**3 - lib.sin(x * y)
                out.backward()
                return out, float(x.grad), float(y.grad)
            """,
            "ex7_graph_sizes": """
                sizes = [len(collect_nodes(model(x))) for x in inputs]
                return sizes
            """,
        }
    ),
}
