"""`python -m solutions similarity`: copied answers are flagged, honest ones are not.

The class (tests/similarity_class.py) is built from the real source notebook of
graph_construction by replacing its answer cells: two honest students, a verbatim and a
disguised copy of one of them, the reference and two blanks; padded copies and a short honest
student join it in the scoring tests. No kernels run here; tests/test_red_team.py grades a copy
pair with `grade` and reads the flag in its report. Nothing here is timed: that normalizing is
linear in a cell is shown by counting its work (benchmarks/bench_similarity.py prints seconds).
"""

from __future__ import annotations

import ast
import json
import os
import random
import sys
import textwrap
from collections import Counter
from pathlib import Path

import nbformat
import pytest
from course_notebooks import course_notebook
from course_support import NOTEBOOK_1, answer_ids, copy_course_source, with_answers
from hypothesis import given
from hypothesis import strategies as st
from similarity_class import (
    ALICE,
    COPIES,
    HANA,
    PADDED,
    REFERENCE,
    SOURCE,
    STUDENTS,
    answer_cells,
)

from solutions.instructor import similarity
from solutions.instructor.cli import main
from solutions.instructor.course import open_course
from solutions.instructor.similarity import normalize


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


def test_swapped_independent_statements_in_a_long_block() -> None:
    """Thousands of independent statements, in any order, normalize alike."""
    lines = [f"t{i} = f({i % 97}, x)" for i in range(500)]
    shuffled = random.Random(0).sample(lines, len(lines))
    assert _same("\n".join(lines), "\n".join(shuffled))


_NAMES = "abcde"
_STATEMENTS = st.sampled_from(
    [
        ("{0} = {1} + {2}", (0,), (1, 2)),
        ("{0} = f({1})", (0,), (1,)),
        ("{0}.append({1})", (), (0, 1)),
        ("{0} += 1", (0,), (0,)),
        ("g({0}, {1})", (), (0, 1)),
    ]
)


@st.composite
def _programs(draw: st.DrawFn) -> tuple[list[str], list[tuple[set, set, bool]]]:
    """A block of simple statements over five names, with what each binds and reads."""
    lines, effects = [], []
    for _ in range(draw(st.integers(2, 12))):
        if draw(st.integers(0, 9)) == 0:
            name = draw(st.sampled_from(_NAMES))
            lines.append(f"if {name}: return {name}")
            effects.append((set(), {name}, True))
            continue
        form, binds, reads = draw(_STATEMENTS)
        names = [draw(st.sampled_from(_NAMES)) for _ in range(3)]
        lines.append(form.format(*names))
        effects.append(({names[i] for i in binds}, {names[i] for i in reads}, False))
    return lines, effects


@given(_programs(), st.randoms(use_true_random=False))
def test_any_swap_of_independent_neighbours_normalizes_alike(program, rng) -> None:
    """The linear dependency graph gives the order the pairwise conflict rule gives."""
    lines, effects = program
    swapped = list(lines)
    for _ in range(5):
        i = rng.randrange(len(lines) - 1)
        (b1, r1, j1), (b2, r2, j2) = effects[i], effects[i + 1]
        if not (j1 or j2 or b1 & (b2 | r2) or b2 & r1):
            swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
            effects[i], effects[i + 1] = effects[i + 1], effects[i]
    header = "def h(a, b, c, d, e):\n"
    assert _same(header + textwrap.indent("\n".join(lines), "    "),
                 header + textwrap.indent("\n".join(swapped), "    "))  # fmt: skip


# --- scale: the work of normalizing grows with the cell, counted, not timed -------------------
def _long_cell(statements: int) -> str:
    """A function of `statements` statements: independent and dependent assignments, small
    nested blocks and early returns, like a long answer (the 3,000-statement one of issue 30)."""
    rng = random.Random(statements)
    lines = ["def answer(x):", "    t0 = x"]
    for i in range(1, statements):
        j, c = rng.randrange(i), rng.randint(2, 99)
        lines += rng.choice(
            [
                [f"    t{i} = {c} * {c + 1}"],
                [f"    t{i} = t{j} * {c} + t{rng.randrange(i)}"],
                [
                    f"    t{i} = t{j}",
                    f"    if t{j} > {c}:",
                    f"        t{i} = {c}",
                    "        x += 1",
                ],
                [f"    if t{j} < {c}:", f"        return t{j}", f"    t{i} = t{j}"],
            ]
        )
    return "\n".join(lines) + "\n    return x\n"


def test_normalizing_a_long_cell_does_linear_work() -> None:
    """Every count of the normalizer's work (nodes visited, statements ordered, sort keys and
    the nodes they read, dependency edges, names linked) grows in proportion to the cell: each
    statement gets one key of at most KEY_NODES nodes and a few edges, where the old ordering
    compared every pair of statements of a block (cubic: 280 s for 3,000 statements)."""
    works = {}
    for n in (500, 1500):  # about 1,000 and 3,000 statements
        works[n] = work = Counter()
        tokens = normalize(_long_cell(n), work)
        assert tokens[:2] == ["def", "v0"] and len(tokens) > 10 * n
        assert n < work["statements"] == work["keys"] < 3 * n
        assert work["key_nodes"] <= similarity.KEY_NODES * work["keys"]
        assert work["edges"] <= 4 * work["statements"] and work["names"] <= 4 * work["statements"]
    for count in ("nodes", "statements", "keys", "key_nodes", "edges", "names"):
        assert works[1500][count] <= 3.3 * works[500][count], count


# --- padding and short answers ------------------------------------------------------------------
def test_padded_copies_are_flagged_and_honest_pairs_are_not(course: Path) -> None:
    """Unrelated text added to every cell of a copy (a line of 400 numbers, 200 lines of random
    arithmetic; at the end or at the start) grows the copy, not the smaller side: the pair
    still scores about 1. Honest students stay far below the threshold."""
    given_sources = similarity.given_sources(open_course(course), NOTEBOOK_1)
    pairs = similarity.compare({**STUDENTS, **PADDED, "hana": HANA}, given_sources)
    found, copies = _pairs(similarity.flagged(pairs)), {"alice", "bob", "carol"}
    for pair in pairs:
        students = {pair.first, pair.second}
        if len(students & copies) == 1 and students & set(PADDED):
            assert pair.score > 0.9 and (pair.first, pair.second) in found, pair
        if students & {"dave", "hana"}:
            assert pair.score < 0.3 and (pair.first, pair.second) not in found, pair
        if students & {"erin", "frank", "gina"}:
            assert pair.score == 0.0 and pair.shared == 0, pair
    assert {student for pair in found for student in pair} == copies | set(PADDED)


def test_a_short_honest_answer_is_flagged_with_no_one(course: Path) -> None:
    """Hana hands in the reference with a few touches of her own: even a classmate with the
    very same touches scores 1 with her but shares too little to be flagged (MIN_SHARED)."""
    given_sources = similarity.given_sources(open_course(course), NOTEBOOK_1)
    pairs = similarity.compare({**STUDENTS, "hana": HANA, "hal": HANA}, given_sources)
    (twins,) = [pair for pair in pairs if {pair.first, pair.second} == {"hal", "hana"}]
    assert twins.score == 1.0 and 0 < twins.shared < similarity.MIN_SHARED
    assert not {"hal", "hana"} & {
        s for pair in similarity.flagged(pairs) for s in (pair.first, pair.second)
    }


# --- hostile submissions --------------------------------------------------------------------------
def _notebook_json(cells: dict[str, object], **changes: object) -> dict:
    """Notebook 1 as JSON data with these answer cells' sources (any JSON value)."""
    nb = json.loads(nbformat.writes(SOURCE))
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in cells:
            cell["source"] = cells[grade_id]
    nb.update(changes)
    return nb


def _odd_metadata() -> dict:
    nb = _notebook_json({}, metadata=["not", "a", "dict"])
    answers = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]
    answers[0]["metadata"] = "a string"
    answers[1]["metadata"]["nbgrader"] = ["a", "list"]
    answers[2]["metadata"]["nbgrader"]["grade_id"] = ["unhashable"]
    answers[3]["metadata"]["nbgrader"]["grade_id"] = "<b>ex99</b>"
    nb["cells"].insert(0, "not a cell")
    return nb


DEEP_SUM = "_ = " + " + ".join(["1"] * 5000) + "\n"  # ast.parse: RecursionError
MINUSES = "x = " + "-" * 20_000 + "1\n"  # ast.parse: MemoryError
HUGE_INT = "_ = 0x" + "f" * 5000 + "\n"  # parses, but repr() and ast.unparse raise ValueError


@pytest.fixture(scope="module")
def hostile_course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Alice, a verbatim copy of her (bob), an honest student (dave), a copy of alice with lines
    the parser or ast.unparse cannot handle and a script in every cell (mallory), and
    submissions no parser or reader expects."""
    root = copy_course_source(tmp_path_factory.mktemp("hostile") / "course", [NOTEBOOK_1])
    mallory = {
        grade_id: source.rstrip("\n")
        + "\n    # </pre><script>alert(1)</script>\n"
        + textwrap.indent(DEEP_SUM + HUGE_INT, "    ")
        for grade_id, source in STUDENTS["alice"].items()
    }
    notebooks: dict[str, object] = {
        "alice": _notebook_json(STUDENTS["alice"]),
        "bob": _notebook_json(STUDENTS["bob"]),
        "dave": _notebook_json(STUDENTS["dave"]),
        "mallory": _notebook_json(mallory),
        "minus": _notebook_json(
            {"ex1_collect_nodes": MINUSES, "ex2_count_ops": STUDENTS["dave"]["ex2_count_ops"]}
        ),
        "surrogates": _notebook_json({"ex1_collect_nodes": "x = '\ud800'\n\udcff = 1\n"}),
        "not-text": _notebook_json(
            {"ex1_collect_nodes": 42, "ex2_count_ops": {"a": 1}, "ex3_find_leaves": ["x", 1]}
        ),
        "odd-metadata": _odd_metadata(),
        "huge": _notebook_json({"ex1_collect_nodes": "x = 1\n" * 900_000}),  # 5.4 MB
        "not-json": b"\x00\xff{not json",
        "not-a-notebook": [1, 2, 3],
        os.fsdecode(b"und\xffcodable"): _notebook_json(REFERENCE),
    }
    for student, nb in notebooks.items():
        folder = root / "submitted" / student / NOTEBOOK_1
        folder.mkdir(parents=True)
        data = nb if isinstance(nb, bytes) else json.dumps(nb).encode()  # \ud800 stays escaped
        (folder / f"{NOTEBOOK_1}.ipynb").write_bytes(data)
    linked = root / "submitted" / "linked" / NOTEBOOK_1
    linked.mkdir(parents=True)  # a link to alice's notebook is not read as linked's own
    (linked / f"{NOTEBOOK_1}.ipynb").symlink_to(
        root / "submitted" / "alice" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb"
    )
    return root


def test_the_hostile_inputs_are_what_they_claim() -> None:
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)  # Python's default (a wrong-answer fixture raises it for a while)
    try:
        with pytest.raises(RecursionError):
            ast.parse(DEEP_SUM)
    finally:
        sys.setrecursionlimit(previous)
    with pytest.raises(MemoryError):
        ast.parse(MINUSES)
    with pytest.raises(ValueError):
        ast.unparse(ast.parse(HUGE_INT))


def test_hostile_submissions_cost_only_their_own_cells(hostile_course: Path) -> None:
    found = similarity.similarity_report(open_course(hostile_course), NOTEBOOK_1)
    assert len(found.answers) == 13
    assert _pairs(found.flagged) == {("alice", "bob"), ("alice", "mallory"), ("bob", "mallory")}
    scores = {(pair.first, pair.second): pair for pair in found.pairs}
    assert scores["alice", "dave"].score < 0.1 and scores["alice", "dave"].cells
    assert scores["dave", "minus"].cells["ex2_count_ops"] == 1.0  # minus's other cells count
    surrogates = found.answers["surrogates"]["ex1_collect_nodes"]
    assert "\ufffd" in surrogates and surrogates.encode("utf-8")  # made valid, as admission does
    reasons = {student: [r.split(": ", 2)[-1] for r in found] for student, found in
               found.not_compared.items()}  # fmt: skip
    # Read as admission reads a submission: one unreadable cell makes the notebook unreadable.
    assert reasons == {
        "huge": ["cell 11: 5,400,000 characters (the limit is 1,048,576)"],
        "linked": ["a link, not a file"],
        "not-a-notebook": ["not a version 4 notebook"],
        "not-json": [reasons["not-json"][0]],
        "not-text": ["cell 11: its source is int, not text"],
        "odd-metadata": ["cell 0 is not a code, markdown or raw cell"],
    }
    assert reasons["not-json"][0].startswith("not JSON")
    page = found.html.read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;/pre&gt;&lt;script&gt;alert(1)" in page
    assert "<h2>Not compared</h2>" in page and "ex99" not in page
    table = similarity.format_table(found.flagged, 0.8, len(found.answers), found.not_compared)
    assert "not compared: huge: graph_construction.ipynb: unreadable notebook: cell 11" in table


def test_the_command_survives_a_hostile_class(
    hostile_course: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["--course", str(hostile_course), "similarity", NOTEBOOK_1]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert {tuple(line.split()[:2]) for line in lines[1:]} >= {("alice", "mallory")}
