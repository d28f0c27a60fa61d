"""`python -m solutions similarity`: copied answers are flagged, honest ones are not.

A small class is built from the real source notebook of graph_construction by replacing its
answer cells: an honest student (alice), a verbatim copy of her (bob), a disguised copy of her
(carol: names renamed, comments reworded, independent statements swapped), a second honest
student who writes every answer differently (dave), a student who hands in the reference
(erin), and two students who leave everything blank (frank, gina). No kernels run.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat
import pytest
from course_notebooks import course_notebook, release_source
from course_support import (
    COURSE_SOURCE,
    NOTEBOOK_1,
    answer_ids,
    copy_course_source,
    reference_answers,
    with_answers,
)

from solutions.instructor import similarity
from solutions.instructor.cli import main
from solutions.instructor.course import open_course
from solutions.instructor.similarity import normalize

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


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A course with the source of notebook 1 and the class's submissions (no release needed)."""
    root = copy_course_source(tmp_path_factory.mktemp("similarity") / "course", [NOTEBOOK_1])
    for student, cells in STUDENTS.items():
        folder = root / "submitted" / student / NOTEBOOK_1
        folder.mkdir(parents=True)
        nbformat.write(with_answers(SOURCE, cells), folder / f"{NOTEBOOK_1}.ipynb")
    return root


@pytest.fixture(scope="module")
def found(course: Path) -> similarity.Report:
    return similarity.similarity_report(open_course(course), NOTEBOOK_1)


def _pairs(pairs: list[similarity.Pair]) -> set[tuple[str, str]]:
    return {(pair.first, pair.second) for pair in pairs}


# --- the class ------------------------------------------------------------------------------
@pytest.mark.parametrize("student", ["alice", "carol", "dave"])
def test_the_answers_are_correct(student: str) -> None:
    """The hand-written answers earn full marks, so the class is a plausible one."""
    notebook = course_notebook(NOTEBOOK_1)
    for grade_id, source in STUDENTS[student].items():
        points, feedback = notebook.score(grade_id, source)
        assert points == notebook.points(grade_id), f"{student} {grade_id}: {feedback}"


def test_every_answer_cell_is_read(found: similarity.Report) -> None:
    assert sorted(found.answers) == sorted(STUDENTS)
    for student, cells in found.answers.items():
        assert list(cells) == answer_ids(SOURCE), student


def test_the_copies_and_only_they_are_flagged(found: similarity.Report) -> None:
    scores = {(pair.first, pair.second): pair for pair in found.pairs}
    assert _pairs(found.flagged) == COPIES, similarity.format_table(found.pairs, 0, 7)
    for pair in COPIES:  # the disguised copy normalizes to the original, cell by cell
        assert scores[pair].score == 1.0 and set(scores[pair].cells.values()) == {1.0}
    assert scores["alice", "dave"].score < 0.1  # two honest answers


def test_reference_and_blank_students_match_no_one(found: similarity.Report) -> None:
    for pair in found.pairs:
        if {"erin", "frank", "gina"} & {pair.first, pair.second}:
            assert pair.score == 0.0 and pair.shared == 0, pair


def test_shared_reference_code_does_not_count(found: similarity.Report) -> None:
    """Dave's predictions are the reference's, and so are three of the four lines of his
    f_and_gradients: what is left is his own, and nothing like alice's."""
    pairs = {(pair.first, pair.second): pair for pair in found.pairs}
    assert "ex4_predict_flags" not in pairs["dave", "erin"].cells  # nothing of his own there
    assert pairs["alice", "dave"].cells["ex6_f_and_gradients"] < 0.1


def test_one_common_short_answer_is_not_enough(course: Path) -> None:
    """Two students who hand in the reference but for the same simple loop are not flagged."""
    loop = answer_cells({"ex7_graph_sizes": ALICE["ex7_graph_sizes"]})
    answers = {student: {**REFERENCE, **loop} for student in ("x", "y")}
    (pair,) = similarity.compare(answers, similarity.given_sources(open_course(course), NOTEBOOK_1))
    assert pair.score == 1.0 and pair.shared < similarity.MIN_SHARED
    assert similarity.flagged([pair]) == []


# --- the command ----------------------------------------------------------------------------
def test_command_prints_the_pairs_and_writes_html(
    course: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["--course", str(course), "similarity", NOTEBOOK_1]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["first", "second", "score"]
    assert {tuple(line.split()[:2]) for line in lines[1:]} == COPIES
    page = (course / "reports" / NOTEBOOK_1 / "similarity.html").read_text()
    assert "<h2>alice and carol: 1.00</h2>" in page
    assert "while len(todo) &gt; 0:" in page  # carol's own source, escaped
    assert "<th>dave</th>" not in page and "<th>erin</th>" not in page


def test_a_high_threshold_flags_nothing(course: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["--course", str(course), "similarity", NOTEBOOK_1, "--threshold", "1.01"]) == 0
    assert capsys.readouterr().out.startswith("no pair of the 7 students")


def test_unknown_assignment_is_one_error_line(course: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["--course", str(course), "similarity", "graph_constructoin"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: no assignment 'graph_constructoin'")


# --- the normalizer -------------------------------------------------------------------------
def _same(a: str, b: str) -> bool:
    return normalize(textwrap.dedent(a)) == normalize(textwrap.dedent(b))


def test_names_comments_docstrings_and_layout_do_not_matter() -> None:
    assert _same(
        '''
        def total(values):
            """Add them up."""
            result = 0  # start at zero
            for v in values:
                result += v
            return result
        ''',
        """
        def add_all(xs):
            acc = 0

            for item in xs:   acc += item
            return acc
        """,
    )


def test_outside_names_attributes_and_constants_are_kept() -> None:
    tokens = normalize("y = torch.ones(3, dtype=torch.float64)\nz = len(collect_nodes(y)) + 'a'")
    assert tokens[:3] == ["v0", "=", "torch"]
    for kept in ["ones", "dtype", "float64", "3", "len", "collect_nodes", "'a'"]:
        assert kept in tokens
    assert not _same("x = 1", "x = 2") and not _same("x = 'a'", "x = 'b'")
    assert not _same("x = a.b", "x = a.c") and not _same("x = f(1)", "x = g(1)")


def test_independent_statements_may_be_swapped() -> None:
    assert _same("a = f(1)\nb = f(2)\nreturn a, b", "b = f(2)\na = f(1)\nreturn a, b")
    assert _same("a = x.s()\nb = y.s()", "q = y.s()\np = x.s()")
    assert _same("s.add(n)\nq.append(n)", "q.append(n)\ns.add(n)")


def test_dependent_statements_keep_their_order() -> None:
    assert not _same("a = 1\nb = a", "b = a\na = 1")  # b reads a
    assert not _same("a = 1\na = 2", "a = 2\na = 1")  # both bind a
    assert not _same("f()\nreturn x\ng()", "g()\nreturn x\nf()")  # a return stays in place


def test_an_invalid_cell_is_normalized_token_by_token() -> None:
    assert _same("def f(:\n  total = 1  # one\n  return total", "def f(:\n  t = 1\n  return t")
    assert normalize("x = 'unterminated") != []
    assert normalize("%matplotlib inline\nimport math") == ["import", "math", "<newline>"]
