"""Issue 32, section 2: bad input is reported where the instructor looks, and loses nothing.

A one-exercise course (a real notebook, real nbgrader) is graded from an LMS download holding a
truncated notebook, a file whose id has a space and a file that is not a notebook; a student
of the gradebook hands in nothing. The run ends with one block naming every skipped upload and
every submission not graded, with the reason, the log and what to do, and exits 1; the
unreadable notebook holds no grade in the gradebook nor in grades.csv (its feedback says why),
and the student who handed in nothing is exported as "not submitted", not 0.0. Nothing of
theirs runs a kernel, so the default run grades that class with --no-sandbox (a few seconds).
Behind --classes, the same download with a good upload too, sandboxed: that student is graded,
and grading again without new files reuses their result.
"""

from __future__ import annotations

import contextlib
import csv
import io
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from nbgrader.api import Gradebook, MissingEntry

from solutions.instructor import report
from solutions.instructor.cli import main
from solutions.instructor.course import open_course

HIDDEN = "### BEGIN HIDDEN TESTS\nassert double(21) == 42\n### END HIDDEN TESTS"


def run(*args: object) -> tuple[int, str, str]:
    """Run the command; its exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def _cell(source: str, **nbgrader) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"schema_version": 3, "solution": False, "grade": False,
                                 "locked": False, **nbgrader}  # fmt: skip
    return cell


def released_tiny_course(root: Path) -> Path:
    """A course of one assignment, `tiny`: answer `double(x)`, one test cell of 1 point."""
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    nb.cells = [
        _cell("def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
              solution=True, grade_id="ex1_double"),
        _cell(f"assert double(2) == 4\n{HIDDEN}", grade=True, locked=True,
              grade_id="ex1_double_tests", points=1),
    ]  # fmt: skip
    path = root / "source" / "tiny" / "tiny.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, path)
    assert run("--course", root, "release", "tiny")[0] == 0
    return root


def answered(course: Path, answer: str) -> str:
    """The release of `tiny` with `answer` as the body of `double`."""
    nb = nbformat.read(course / "release" / "tiny" / "tiny.ipynb", as_version=4)
    nb.cells[0].source = f"def double(x):\n    {answer}\n"
    return nbformat.writes(nb)


def _grade_download(work: Path, good_upload: bool, *options: str) -> tuple[Path, int, str, str]:
    course = released_tiny_course(work / "course")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        gradebook.add_student("zoe")  # on the roster, hands in nothing
    good = answered(course, "return 2 * x")
    archive = work / "lms.zip"
    with zipfile.ZipFile(archive, "w") as lms:
        if good_upload:
            lms.writestr("download/ann_tiny.ipynb", good)
        lms.writestr("download/cy_tiny.ipynb", good[: len(good) // 2])  # cut short
        lms.writestr("download/Di Ed_tiny.ipynb", good)  # a space in the id
        lms.writestr("download/ann_notes.txt", "my notes")
    code, out, err = run("--course", course, "grade", "tiny", "--zip", archive, *options)
    return course, code, out, err


@pytest.fixture(scope="module")
def bad_only(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str, str]:
    """The download without its good upload: no kernel runs (hence --no-sandbox)."""
    return _grade_download(tmp_path_factory.mktemp("bad-only"), False, "--no-sandbox")


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str, str]:
    return _grade_download(tmp_path_factory.mktemp("summary"), True)


def needs_action(stderr: str) -> str:
    return stderr[stderr.index("needs action") :]


def test_the_run_ends_with_what_needs_action_and_exits_1(bad_only) -> None:
    course, code, _, err = bad_only
    assert code == 1, err
    block = needs_action(err)
    assert "2 uploads skipped (not collected, so not graded):" in block, block
    assert "skipped Di Ed_tiny.ipynb: not <student>_<notebook>.ipynb" in block
    assert "skipped ann_notes.txt" in block
    assert "-> if it is a submission, rename it <student>_<notebook>.ipynb" in block
    assert "1 submission not graded" in block
    assert "  cy: unreadable notebook: not JSON" in block
    log = course / "reports" / "tiny" / "autograde" / "cy.log"
    assert "-> ask cy for a new file" in block and f"log: {log}" in block and log.is_file()
    assert block.splitlines()[-1] == "not graded (see above and reports/tiny/autograde/): cy"


def test_the_table_shows_no_zero_for_an_unreadable_notebook_and_names_its_log(bad_only) -> None:
    course, _, out, _ = bad_only
    table = {line.split()[0]: line.split(None, 3) for line in out.splitlines()[1:]}
    assert table["cy"][1:3] == ["-", "1"], out
    assert "unreadable notebook: not JSON" in table["cy"][3]
    assert "log: reports/tiny/autograde/cy.log" in table["cy"][3]
    (row,) = report.student_rows(open_course(course), "tiny")
    assert report.is_not_graded(row) and report.not_graded_reason(row).startswith(
        "unreadable notebook: not JSON"
    )
    summary = (course / "reports" / "tiny" / "summary.csv").read_text()
    assert "\ncy,,1.0,unreadable notebook" in summary


def test_the_gradebook_and_the_export_hold_no_grade_nobody_gave(bad_only) -> None:
    course = bad_only[0]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        with pytest.raises(MissingEntry):
            gradebook.find_submission("tiny", "cy")
    assert not (course / "autograded" / "cy").exists()
    feedback = course / "feedback" / "cy" / "tiny" / "tiny.html"
    assert "could not be read" in feedback.read_text(), "the student learns why"
    for path in (course / "grades.csv", course / "exported.csv"):
        if path.name == "exported.csv":  # the export command writes the same
            assert run("--course", course, "export", "--to", path)[0] == 0
        with open(path, newline="") as handle:
            grades = {row["student_id"]: row for row in csv.DictReader(handle)}
        assert sorted(grades) == ["cy", "zoe"]
        assert grades["cy"]["score"] == grades["cy"]["raw_score"] == ""
        assert grades["cy"]["not_graded"].startswith("unreadable notebook: not JSON")
        assert (grades["zoe"]["score"], grades["zoe"]["not_graded"]) == ("", "not submitted")


@pytest.mark.classes
def test_a_good_upload_beside_them_is_graded_and_exported(graded) -> None:
    course, code, out, err = graded
    assert code == 1 and "1 submission not graded" in needs_action(err), err
    table = {line.split()[0]: line.split(None, 3) for line in out.splitlines()[1:]}
    assert table["ann"][1:] == ["1", "1", "-"], out
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission("tiny", "ann").score == 1
    with open(course / "grades.csv", newline="") as handle:
        grades = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert (grades["ann"]["score"], grades["ann"]["not_graded"]) == ("1.0", "")
    assert grades["cy"]["score"] == "" and grades["zoe"]["not_graded"] == "not submitted"
    assert "\nann,1.0,1.0,\n" in (course / "reports" / "tiny" / "summary.csv").read_text()


@pytest.mark.classes
def test_grading_again_reuses_what_did_not_change(graded) -> None:
    """Last in the module: `grade` with no new file reruns nothing of ann's; cy is still not
    graded (exit 1), and this run skipped no upload."""
    course = graded[0]
    code, out, err = run("--course", course, "grade", "tiny")
    assert code == 1 and "ann (reused)" in err, err
    assert "uploads skipped" not in needs_action(err)
    table = {line.split()[0]: line.split(None, 3) for line in out.splitlines()[1:]}
    assert table["ann"][1:] == ["1", "1", report.REUSED], out
