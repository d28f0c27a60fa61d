"""`python -m solutions similarity`: copied answers are flagged, honest ones are not.

The class (tests/similarity_class.py) is built from the real source notebook of
graph_construction by replacing its answer cells: two honest students, a verbatim and a
disguised copy of one of them, the reference and two blanks. No kernels run here;
tests/test_red_team.py grades a copy pair with `grade` and reads the flag in its report.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat
import pytest
from course_notebooks import course_notebook
from course_support import NOTEBOOK_1, answer_ids, copy_course_source, with_answers
from similarity_class import ALICE, COPIES, REFERENCE, SOURCE, STUDENTS, answer_cells

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
