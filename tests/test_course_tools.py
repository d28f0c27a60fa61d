"""The instructor command's checks: strict validation, leak scan, grader-access detection.

Validation runs real kernels (notebook 1 must validate; small hand-made notebooks show that a
failing source or a passing release makes the command exit 1). The leak scan and grader-access
checks are shown to catch planted leaks and cheating cells, and to pass clean ones.
"""

from __future__ import annotations

import contextlib
import html
import io
import re
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
    reference = (REPO_ROOT / "course" / "notebooks" / f"{NOTEBOOK_1}.py").read_text()
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


def test_notebook_source_in_release_is_a_leak(course_copy: Path, secrets: set[str]) -> None:
    """nbgrader copies every file of a source folder: a notebook's percent source put there
    would ship its solutions, and the scan must say so."""
    source = REPO_ROOT / "course" / "notebooks" / f"{NOTEBOOK_1}.py"
    planted = course_copy / "release" / NOTEBOOK_1 / source.name
    planted.write_text(source.read_text())
    found = leaks.scan_release(open_course(course_copy), secrets)
    assert {leak.where for leak in found} == {str(planted)}
    assert any("BEGIN SOLUTION" in leak.what for leak in found)
    assert any("secret line" in leak.what for leak in found)


def test_release_holds_only_the_notebook(released_course: Path) -> None:
    release = released_course / "release" / NOTEBOOK_1
    assert [p.name for p in release.iterdir()] == [f"{NOTEBOOK_1}.ipynb"]


def test_judge_code_in_feedback_is_a_leak(course_copy: Path, secrets: set[str]) -> None:
    """The judges never reach a sandbox: a line of them in feedback is a leak. (The kernel half,
    grade.py, is in every sandbox, so a student may print it.)"""
    grader = (REPO_ROOT / "solutions" / NOTEBOOK_1 / "judge.py").read_text()
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


# About 22 s each (a source and a release run in kernels), so behind --classes with the other
# slow course checks; notebook 1's validation (above) stays in the default run.
@pytest.mark.classes
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


# --- instructor mistakes: one-line errors, nothing written ------------------------------------
def run_cli_all(*args: str) -> tuple[int, str]:
    """Run the command; its exit code and everything it printed (stdout and stderr)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main([str(a) for a in args])
    return code, out.getvalue()


def _released_tiny_course(root: Path) -> Path:
    course = _tiny_course(root, "return 2 * x", f"assert double(2) == 4\n{HIDDEN}")
    assert run_cli_all("--course", course, "release", "tiny")[0] == 0
    return course


def _tiny_submission(folder: Path, student: str) -> Path:
    """`<folder>/<student>/tiny.ipynb`: the blank release, as a student hands it in."""
    path = folder / student / "tiny.ipynb"
    path.parent.mkdir(parents=True)
    path.write_bytes((folder.parent / "course" / "release" / "tiny" / "tiny.ipynb").read_bytes())
    return path


@pytest.mark.parametrize(
    "command",
    [["release"], ["collect", "--from", "inbox"], ["autograde"], ["feedback"], ["report"],
     ["grade"], ["validate"]],
)  # fmt: skip
def test_misspelled_assignment_is_a_one_line_error(tmp_path: Path, command: list[str]) -> None:
    course = _tiny_course(tmp_path / "course", "return 2 * x", "assert double(2) == 4")
    (tmp_path / "inbox" / "ann").mkdir(parents=True)
    (tmp_path / "inbox" / "ann" / "tinny.ipynb").write_text("{}")
    name, *options = command
    code, output = run_cli_all("--course", course, name, "tinny", *options)
    assert code == 2
    assert output == f"error: no assignment 'tinny' in {course / 'source'}: did you mean tiny? " \
        "(assignments: tiny)\n"  # fmt: skip
    assert not (course / "submitted").exists() and not (course / "reports").exists()


def test_collect_from_a_missing_or_wrong_folder_is_a_one_line_error(tmp_path: Path) -> None:
    course = _tiny_course(tmp_path / "course", "return 2 * x", "assert double(2) == 4")
    code, output = run_cli_all("--course", course, "collect", "tiny", "--from", tmp_path / "no")
    assert code == 2 and output.startswith("error: --from") and "no such folder" in output
    assert output.count("\n") == 1
    # The parent of the per-assignment inboxes: inbox/tiny/<student>/tiny.ipynb
    (tmp_path / "inbox" / "tiny" / "ann").mkdir(parents=True)
    (tmp_path / "inbox" / "tiny" / "ann" / "tiny.ipynb").write_text("{}")
    code, output = run_cli_all("--course", course, "collect", "tiny", "--from", tmp_path / "inbox")
    assert code == 2 and "no submissions found (expected <folder>/<student>/tiny.ipynb" in output
    assert not (course / "submitted").exists()
    code, output = run_cli_all("--course", course, "collect", "tiny")
    assert (
        code == 2 and output == "error: collect needs --from FOLDER, --zip LMS.zip or --exchange\n"
    )


def test_collect_from_warns_about_a_student_without_the_notebook(tmp_path: Path) -> None:
    course = _tiny_course(tmp_path / "course", "return 2 * x", "assert double(2) == 4")
    for student, name in (("ann", "tiny.ipynb"), ("bo", "tiny (1).ipynb")):
        (tmp_path / "inbox" / student).mkdir(parents=True)
        (tmp_path / "inbox" / student / name).write_text("{}")
    (tmp_path / "inbox" / "notes").mkdir()
    code, output = run_cli_all("--course", course, "collect", "tiny", "--from", tmp_path / "inbox")
    assert code == 0, output
    assert "warning: bo has no tiny.ipynb (found tiny (1).ipynb)" in output
    assert "warning: skipped" in output and "notes: no notebook in it" in output
    assert sorted(p.name for p in (course / "submitted").iterdir()) == ["ann", "bo"]


@pytest.mark.parametrize("kind", ["missing", "not a zip"])
def test_bad_zip_argument_is_a_one_line_error(tmp_path: Path, kind: str) -> None:
    course = _tiny_course(tmp_path / "course", "return 2 * x", "assert double(2) == 4")
    archive = tmp_path / "lms.zip"
    if kind == "not a zip":
        archive.write_text("{}")
    code, output = run_cli_all("--course", course, "collect", "tiny", "--zip", archive)
    expected = "no such file" if kind == "missing" else "not a zip file"
    assert code == 2 and output == f"error: --zip {archive}: {expected} (expected the LMS " \
        "download, a .zip)\n"  # fmt: skip


def _lms_zip(path: Path, release: Path, names: list[str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            archive.write(release, f"download/{name}")
    return path


def test_second_lms_download_is_collected_and_bad_names_are_reported(tmp_path: Path) -> None:
    """Each --zip collects only that archive: a later download with a resubmission used to
    fail with nbgrader's "Duplicate submission file" because every earlier archive was kept."""
    course = _released_tiny_course(tmp_path / "course")
    release = course / "release" / "tiny" / "tiny.ipynb"
    first = _lms_zip(tmp_path / "lms.zip", release, ["ann_tiny.ipynb", "bo_tiny.ipynb"])
    code, output = run_cli_all("--course", course, "collect", "tiny", "--zip", first)
    assert code == 0 and "collected 2 submissions: ann, bo" in output, output
    assert "ZipCollectApp" not in output  # nbgrader's per-file log is not shown
    second = _lms_zip(tmp_path / "lms (1).zip", release, ["bo_tiny.ipynb", "Cy Dee_tiny.ipynb"])
    code, output = run_cli_all("--course", course, "collect", "tiny", "--zip", second)
    assert code == 0, output
    assert "warning: skipped Cy Dee_tiny.ipynb: not <student>_<notebook>.ipynb" in output
    assert "collected 1 submission: bo" in output
    assert "submitted/ now holds 2 submissions for tiny" in output
    wrong = _lms_zip(tmp_path / "other.zip", release, ["Cy Dee_tiny.ipynb", "dee_tiny(1).ipynb"])
    code, output = run_cli_all("--course", course, "collect", "tiny", "--zip", wrong)
    assert code == 2 and output.count("\n") == 1
    assert "no file is named <student>_<notebook>.ipynb" in output and "Cy Dee_tiny" in output


def test_unknown_student_and_unreleased_report_are_one_line_errors(tmp_path: Path) -> None:
    course = _tiny_course(tmp_path / "course", "return 2 * x", "assert double(2) == 4")
    code, output = run_cli_all("--course", course, "report", "tiny")
    assert code == 2 and output == "error: tiny is not in the gradebook yet: release it first " \
        "(python -m solutions release tiny)\n"  # fmt: skip
    code, output = run_cli_all("--course", course, "autograde", "tiny", "--student", "zed")
    assert code == 2 and output.startswith("error: no submission of tiny from zed in submitted/")
    code, output = run_cli_all("--course", course, "feedback", "tiny")
    assert code == 2 and output == "error: nothing of tiny is autograded yet: run autograde first\n"


def test_grade_also_grades_submissions_collected_earlier(tmp_path: Path) -> None:
    """A student collected with --zip before `grade --from` used to stay "not graded"."""
    course = _released_tiny_course(tmp_path / "course")
    release = course / "release" / "tiny" / "tiny.ipynb"
    archive = _lms_zip(tmp_path / "lms.zip", release, ["zip-student_tiny.ipynb"])
    assert run_cli_all("--course", course, "collect", "tiny", "--zip", archive)[0] == 0
    _tiny_submission(tmp_path / "inbox", "folder-student")
    code, output = run_cli_all("--course", course, "grade", "tiny", "--from", tmp_path / "inbox")
    assert code == 0, output
    assert "autograding 2 submissions" in output
    table = output[output.index("\nstudent ") + 1 :].splitlines()
    assert [line.split() for line in table[1:3]] == [
        ["folder-student", "0", "1", "-"],
        ["zip-student", "0", "1", "-"],
    ]


# --- fairness: a warning never costs points ---------------------------------------------------
def test_a_warning_in_a_test_cell_costs_no_points(tmp_path: Path) -> None:
    """nbgrader scores a cell that wrote to stderr 0: a correct answer that warns (as
    `float(t)` on a tensor that requires grad does) used to lose all its points."""
    course = _released_tiny_course(tmp_path / "course")
    for student, answer in (("warns", 'warnings.warn("careful")\n    return 2 * x'),
                            ("wrong", 'warnings.warn("careful")\n    return 3 * x')):  # fmt: skip
        path = _tiny_submission(tmp_path / "inbox", student)
        nb = nbformat.read(path, as_version=4)
        nb.cells[0].source = f"import warnings\n\n\ndef double(x):\n    {answer}\n"
        nbformat.write(nb, path)
    code, output = run_cli_all("--course", course, "grade", "tiny", "--from", tmp_path / "inbox")
    assert code == 0, output
    table = output[output.index("\nstudent ") + 1 :].splitlines()
    assert [line.split() for line in table[1:3]] == [
        ["warns", "1", "1", "-"],
        ["wrong", "0", "1", "-"],
    ]


# --- feedback tracebacks ----------------------------------------------------------------------
GRADER_FRAME = (
    "\x1b[0;36m  File \x1b[0;32m/srv/course/solutions/grading.py:128\x1b[0;36m in \x1b[0;35mrun"
    '\x1b[0;36m\n\x1b[0;31m    raise AssertionError(f"{what}: {message}") from None\x1b[0;36m\n'
)


def test_feedback_hides_grader_frames_and_the_leak_scan_catches_them(course_copy: Path) -> None:
    """A failing hidden test used to show the grader's path and raising line in feedback."""
    from nbformat.v4 import new_output

    from solutions.instructor.feedback import HideGraderFrames

    student_frame = "\x1b[0m  Cell \x1b[1;32mIn[35], line 2\x1b[0m\n    grade.f(f)\x1b[0m\n"
    error = new_output(
        "error", ename="AssertionError", evalue="f: wrong",
        traceback=["Traceback (most recent call last):\n", student_frame, GRADER_FRAME,
                   "AssertionError: f: wrong\n"],
    )  # fmt: skip
    cell = new_code_cell("from solutions.tiny import grade\ngrade.f(f)", outputs=[error])
    HideGraderFrames().preprocess(new_notebook(cells=[cell]), {})
    assert error.traceback == [
        "Traceback (most recent call last):\n",
        student_frame,
        "AssertionError: f: wrong\n",
    ]
    feedback = course_copy / "feedback" / "alice" / NOTEBOOK_1 / f"{NOTEBOOK_1}.html"
    feedback.parent.mkdir(parents=True)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", GRADER_FRAME)
    feedback.write_text(f"<pre>{html.escape(plain)}</pre>")
    found = leaks.scan_feedback(open_course(course_copy), set())
    assert [leak.what for leak in found] == ["traceback shows a frame of the grading code"]


def test_report_before_grading_and_export_into_a_new_folder(tmp_path: Path) -> None:
    """Both used to fail with FileNotFoundError: reports/<assignment>/ and the --to folder did
    not exist yet."""
    course = _released_tiny_course(tmp_path / "course")
    code, output = run_cli_all("--course", course, "report", "tiny")
    assert code == 0 and output.startswith("student  score  max  flags\n"), output
    assert (course / "reports" / "tiny" / "summary.csv").read_text().strip() == (
        "student,score,max_score,flags"
    )
    destination = tmp_path / "out" / "grades.csv"
    code, output = run_cli_all("--course", course, "export", "--to", destination)
    assert code == 0 and destination.read_text().startswith("assignment,duedate,"), output


def test_the_feedback_page_is_the_one_nbconvert_writes_without_its_slow_pass() -> None:
    """FeedbackHTMLExporter skips HTMLExporter's BeautifulSoup pass and adds the alt text itself:
    the page must parse to the same document as HTMLExporter's, on a notebook with figures (and
    a markdown image without alt text, and one with)."""
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter
    from nbformat.v4 import new_output

    from solutions.instructor.feedback import NO_ALT_TEXT, FeedbackHTMLExporter

    notebook = nbformat.read(COURSE_SOURCE / "memory" / "memory.ipynb", as_version=4)
    notebook.cells.insert(0, new_markdown_cell('<img src="a.png"> and <img src="b.png" alt="b">'))
    png = (  # one white pixel
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
        "AAAABJRU5ErkJggg=="
    )
    figures = [new_output("display_data", {"image/png": png, "text/plain": "<Figure>"})] * 2
    notebook.cells.insert(1, new_code_cell("plt.show()", outputs=figures))
    ours, _ = FeedbackHTMLExporter(template_name="classic").from_notebook_node(notebook)
    theirs, _ = HTMLExporter(template_name="classic").from_notebook_node(notebook)
    ours_doc, theirs_doc = BeautifulSoup(ours, "html.parser"), BeautifulSoup(theirs, "html.parser")
    images = ours_doc.find_all("img")
    assert len(images) > 3 and all(image.get("alt") for image in images)
    assert sum(image["alt"] == NO_ALT_TEXT for image in images) == len(images) - 1
    assert ours_doc == theirs_doc


def test_feedback_pages_stay_right_when_highlighting_and_templates_are_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """nbgrader makes a new exporter per student; FeedbackHTMLExporter remembers compiled
    templates and highlighted code across them. A page must still be exactly HTMLExporter's
    when a student changed a code cell (a cache keyed on anything but the source would show the
    first student's code), and the second exporter must compile no template."""
    import jinja2
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter

    from solutions.instructor.feedback import FeedbackHTMLExporter

    first = nbformat.read(COURSE_SOURCE / "backward" / "backward.ipynb", as_version=4)
    second = nbformat.reads(nbformat.writes(first), as_version=4)
    code = next(i for i, c in enumerate(second.cells) if c.cell_type == "code" and c.source)
    second.cells[code].source = "answer = [n ** 2 for n in range(3)]  # a student's own line"
    compiled = []
    compile_template = jinja2.Environment.compile
    monkeypatch.setattr(
        jinja2.Environment, "compile",
        lambda self, *a, **k: compiled.append(1) or compile_template(self, *a, **k),
    )  # fmt: skip
    pages = []
    for number, notebook in enumerate([first, second, first]):
        compiled.clear()
        ours, _ = FeedbackHTMLExporter(template_name="classic").from_notebook_node(notebook)
        if number:
            assert not compiled, "a later exporter compiled the templates again"
        theirs, _ = HTMLExporter(template_name="classic").from_notebook_node(notebook)
        assert BeautifulSoup(ours, "html.parser") == BeautifulSoup(theirs, "html.parser")
        pages.append(ours)
    assert "own line" in pages[1] and "own line" not in pages[0] and pages[2] == pages[0]


def test_metadata_checked_with_the_schema_checked_once_fails_as_jsonschema_does() -> None:
    """nbgrader's metadata validators, pointed at schema_once.validate, reject what
    jsonschema.validate rejects, with the same message, and accept what it accepts."""
    import jsonschema
    from nbgrader.nbgraderformat import MetadataValidator

    from solutions.instructor import schema_once

    schema_once.use_in_nbgrader()
    validator = MetadataValidator()
    good = {"grade": True, "solution": False, "locked": True, "points": 2,
            "grade_id": "ex1_tests", "schema_version": 3}  # fmt: skip
    for bad in ({**good, "points": "two"}, {**good, "grade_id": 7}, {**good, "task": "yes"}):
        cell = new_code_cell("x = 1", metadata={"nbgrader": bad})
        with pytest.raises(jsonschema.ValidationError) as ours:
            validator.validate_cell(cell)
        with pytest.raises(jsonschema.ValidationError) as theirs:
            jsonschema.validate(bad, validator.schema)
        assert str(ours.value) == str(theirs.value)
    validator.validate_cell(new_code_cell("x = 1", metadata={"nbgrader": good}))
    with pytest.raises(jsonschema.SchemaError):
        schema_once.validate({}, {"type": "no such type"})


@pytest.mark.parametrize(
    "load",
    [
        "import solutions.instructor.cli",
        # As the sandbox runs it: a file on its own, not under solutions/instructor/__init__.py.
        "import runpy; runpy.run_path('solutions/instructor/run_notebook.py', run_name='runner')",
    ],
)
def test_grading_processes_skip_the_slow_iri_parser(load: str) -> None:
    """The grading process and every sandbox's runner import nbformat without rfc3987_syntax,
    whose import builds a parser (2.1 s measured per process)."""
    probe = f"import sys; {load}; print(sys.modules.get('rfc3987_syntax', 'absent'))"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() in ("None", "absent"), done.stdout
