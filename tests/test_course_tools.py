"""The instructor command's checks: strict validation, leak scan, grader-access detection.

Validation runs real kernels (notebook 1 must validate; small hand-made notebooks show that a
failing source or a passing release makes the command exit 1). The leak scan and grader-access
checks are shown to catch planted leaks and cheating cells, and to pass clean ones.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from course_support import COURSE_SOURCE, NOTEBOOK_1, REPO_ROOT, copy_course, copy_course_source
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from solutions.instructor import leaks
from solutions.instructor.cli import main
from solutions.instructor.course import open_course
from solutions.instructor.integrity import (
    BLOCKED_CELL_SOURCE,
    BlockGraderAccess,
    uses_grading_code,
)
from solutions.instructor.report import StudentRow, format_table


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([str(a) for a in args])
    return code, out.getvalue()


# --- grader access --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "source",
    [
        "from solutions.graph_construction.reference import collect_nodes",
        "import solutions.graph_construction.grade as g",
        "import solutions",
        "ref = __import__('solutions.graph_construction.reference')",
        "import importlib\nm = importlib.import_module('solutions.graph_construction')",
        "exec(open('../../solutions/graph_construction/reference.py').read())",
        "%matplotlib inline\nfrom solutions import grading",
        "x = solutions.grading",
        "def f(:\n    import solutions",  # not valid Python: falls back to a text search
    ],
)
def test_grader_access_is_detected(source: str) -> None:
    assert uses_grading_code(source)


@pytest.mark.parametrize(
    "source",
    [
        "def collect_nodes(t):\n    '''Collect the nodes; solutions are checked later.'''\n",
        "# compare with the solutions of exercise 1\nx = 1",
        "print('my solutions.')",
        "from .solutions import helper",  # relative import: not the course package
        "my_solutions = [1, 2]",
    ],
)
def test_ordinary_code_is_not_flagged(source: str) -> None:
    assert not uses_grading_code(source)


def _cell(source: str, **nbgrader) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = {"schema_version": 3, "solution": False, "grade": False,
                                     "locked": False, **nbgrader}  # fmt: skip
    return cell


def test_block_grader_access_replaces_student_cells_only() -> None:
    hidden = "from solutions.graph_construction import grade\ngrade.collect_nodes(collect_nodes)"
    nb = new_notebook(
        cells=[
            _cell("from solutions.graph_construction.reference import *", solution=True,
                  grade_id="ex1_collect_nodes"),
            _cell(hidden, grade=True, locked=True, grade_id="ex1_tests", points=1),
            _cell("import solutions"),  # a cell the student added
            _cell("x = 1"),
        ]
    )  # fmt: skip
    BlockGraderAccess().preprocess(nb, {})
    assert [c.source for c in nb.cells] == [
        BLOCKED_CELL_SOURCE,
        hidden,
        BLOCKED_CELL_SOURCE,
        "x = 1",
    ]


# --- leak scan --------------------------------------------------------------------------------
@pytest.fixture
def course_copy(released_course: Path, tmp_path: Path) -> Path:
    return copy_course(released_course, tmp_path / "course")


def _release_path(course: Path) -> Path:
    return course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb"


@pytest.fixture
def secrets(course_copy: Path) -> set[str]:
    return leaks.secret_lines(open_course(course_copy))


def test_clean_release_has_no_leaks(course_copy: Path, secrets: set[str]) -> None:
    assert leaks.scan_release(open_course(course_copy), secrets) == []


def test_solution_line_in_release_is_a_leak(course_copy: Path, secrets: set[str]) -> None:
    reference = (REPO_ROOT / "solutions" / NOTEBOOK_1 / "reference.py").read_text()
    line = next(line for line in reference.splitlines() if leaks._normalize(line) in secrets)
    nb = nbformat.read(_release_path(course_copy), as_version=4)
    nb.cells.append(new_code_cell(f"def helper():\n{line}\n"))
    nbformat.write(nb, _release_path(course_copy))
    found = leaks.scan_release(open_course(course_copy), secrets)
    assert any(leaks._normalize(line) in leak.what for leak in found), found


@pytest.mark.parametrize(
    "planted", ["### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS", "from solutions import grading"]
)
def test_markers_and_grader_imports_in_release_are_leaks(
    course_copy: Path, secrets: set[str], planted: str
) -> None:
    nb = nbformat.read(_release_path(course_copy), as_version=4)
    nb.cells.append(new_markdown_cell(planted))
    nbformat.write(nb, _release_path(course_copy))
    assert leaks.scan_release(open_course(course_copy), secrets)


def test_grader_code_in_feedback_is_a_leak(course_copy: Path, secrets: set[str]) -> None:
    grader = (REPO_ROOT / "solutions" / NOTEBOOK_1 / "grade.py").read_text()
    line = next(line for line in grader.splitlines() if leaks._normalize(line) in secrets)
    feedback = course_copy / "feedback" / "alice" / NOTEBOOK_1 / f"{NOTEBOOK_1}.html"
    feedback.parent.mkdir(parents=True)
    feedback.write_text(f"<pre><span>----&gt; 3 </span>{line.strip()}</pre>")
    found = leaks.scan_feedback(open_course(course_copy), secrets)
    assert len(found) == 1 and "secret line" in found[0].what, found


def test_call_line_in_feedback_is_allowed(course_copy: Path, secrets: set[str]) -> None:
    feedback = course_copy / "feedback" / "alice" / NOTEBOOK_1 / f"{NOTEBOOK_1}.html"
    feedback.parent.mkdir(parents=True)
    feedback.write_text("<pre>----&gt; 1 grade.collect_nodes(collect_nodes)</pre>")
    assert leaks.scan_feedback(open_course(course_copy), secrets) == []


def test_wheel_with_files_outside_minitorch_is_a_leak(tmp_path: Path, secrets: set[str]) -> None:
    wheel = tmp_path / "dyngraph_minitorch-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("minitorch/__init__.py", "x = 1\n")
        archive.writestr("solutions/grading.py", "x = 2\n")
    found = leaks.scan_wheel(wheel, secrets)
    assert [leak.what for leak in found] == ["file outside minitorch/"], found


def test_leak_scan_command_builds_the_wheel_and_passes(course_copy: Path) -> None:
    code, output = run_cli("--course", course_copy, "leak-scan")
    assert code == 0, output


# --- validation -----------------------------------------------------------------------------
def test_notebook_1_validates(course_copy: Path) -> None:
    code, output = run_cli("--course", course_copy, "validate", NOTEBOOK_1)
    assert code == 0, output


OTHER_ASSIGNMENTS = sorted(
    path.name for path in COURSE_SOURCE.iterdir() if path.is_dir() and path.name != NOTEBOOK_1
)


@pytest.mark.parametrize("assignment", OTHER_ASSIGNMENTS)
def test_every_other_assignment_validates(assignment: str, tmp_path: Path) -> None:
    """Source full marks, release none: the same check as notebook 1's, for every notebook."""
    course = copy_course_source(tmp_path / "course", [assignment])
    code, output = run_cli("--course", course, "validate", assignment)
    assert code == 0, output


def _tiny_course(root: Path, answer: str, test: str) -> Path:
    """A one-exercise course: answer `def double(x)` and a test cell with hidden tests."""
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    nb.cells = [
        _cell(f"def double(x):\n    ### BEGIN SOLUTION\n    {answer}\n    ### END SOLUTION",
              solution=True, grade_id="ex1_double"),
        _cell(test, grade=True, locked=True, grade_id="ex1_double_tests", points=1),
    ]  # fmt: skip
    path = root / "source" / "tiny" / "tiny.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    return root


HIDDEN = "### BEGIN HIDDEN TESTS\nassert double(21) == 42\n### END HIDDEN TESTS"


def test_validate_fails_when_the_source_fails_its_tests(tmp_path: Path) -> None:
    course = _tiny_course(tmp_path, "return x + 1", f"assert double(2) == 4\n{HIDDEN}")
    code, output = run_cli("--course", course, "validate")
    assert code == 1 and "test fails" in output, output


def test_validate_fails_when_the_release_passes_a_test(tmp_path: Path) -> None:
    course = _tiny_course(tmp_path, "return 2 * x", f"assert True\n{HIDDEN.splitlines()[0]}\n"
                          "### END HIDDEN TESTS")  # fmt: skip
    code, output = run_cli("--course", course, "validate")
    assert code == 1 and "passes on the blank release" in output, output


def test_release_to_the_exchange(course_copy: Path) -> None:
    code, output = run_cli("--course", course_copy, "release", NOTEBOOK_1, "--exchange")
    assert code == 0, output
    outbound = course_copy / "exchange" / "dyngraph" / "outbound" / NOTEBOOK_1
    assert (outbound / f"{NOTEBOOK_1}.ipynb").is_file()


# --- command line -----------------------------------------------------------------------------
def test_module_entry_point_lists_the_commands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "solutions", "--help"], cwd=REPO_ROOT, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    for command in ("release", "collect", "autograde", "feedback", "export", "grade", "validate",
                    "leak-scan"):  # fmt: skip
        assert command in result.stdout


def test_missing_course_folder_is_a_clean_error(tmp_path: Path) -> None:
    assert run_cli("--course", tmp_path / "nowhere", "report", NOTEBOOK_1)[0] == 2


def test_table_lists_score_max_and_flags() -> None:
    rows = [StudentRow("ann", 25, 25), StudentRow("bo", 3.5, 25, ["timed out", "kernel died"])]
    assert format_table(rows).splitlines() == [
        "student  score  max  flags",
        "ann         25   25  -",
        "bo         3.5   25  timed out, kernel died",
    ]
