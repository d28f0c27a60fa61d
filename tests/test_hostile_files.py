"""Issue 30's second red team, sections 1, 3 and 4: files that forged marks or stopped a class.

One class of notebook 1 (about a minute: behind --classes) is graded the way an instructor
grades (`python -m solutions grade`): an honest student beside a blank notebook with forged
grading metadata, files whose JSON is valid but odd (a lone UTF-16 surrogate, metadata of the
wrong type, no cell ids), an answer the parser cannot parse, a cell with 300 outputs of 1 MB,
and files that are not notebooks at all. Every one is recorded; none stops the class or earns
what it did not compute.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import subprocess
import sys
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from course_support import (
    NOTEBOOK_1,
    copy_course,
    reference_answers,
    with_answers,
    with_forged_grading_metadata,
    write_submission,
)

from solutions.instructor import admission, pipeline, report
from solutions.instructor.cli import main
from solutions.instructor.course import open_course
from solutions.instructor.sandbox import Execution, Limits, _read_events
from solutions.instructor.verdicts import SandboxedAutograde, digest, prepare

pytestmark = pytest.mark.filterwarnings("ignore:Cell is missing an id field")


def as_json(nb: nbformat.NotebookNode) -> dict:
    return json.loads(nbformat.writes(nb))


@dataclass
class HostileClass:
    course: Path
    output: str
    exit_code: int

    def rows(self) -> dict[str, report.StudentRow]:
        return {r.student: r for r in report.student_rows(open_course(self.course), NOTEBOOK_1)}


def _submissions(release: nbformat.NotebookNode, reference: dict) -> dict[str, object]:
    honest = with_answers(release, reference)
    surrogate = as_json(honest)
    surrogate["cells"].insert(1, {"cell_type": "markdown", "metadata": {}, "source": "\ud800"})
    wrong_types = as_json(honest)
    wrong_types["metadata"] = {"kernelspec": "python3", "language_info": 7}
    no_ids = as_json(honest)
    no_ids["nbformat_minor"] = 4
    for cell in no_ids["cells"]:
        del cell["id"]
    unparsable = with_answers(release, reference)
    unparsable.cells.insert(1, nbformat.v4.new_code_cell("x = " + "-" * 200_000 + "1"))
    loud = with_answers(release, reference)
    loud.cells.insert(1, nbformat.v4.new_code_cell(LOUD_CELL))
    return {
        "honest": honest,
        "forges-metadata": with_forged_grading_metadata(release),
        "lone-surrogate": json.dumps(surrogate),  # valid JSON: "\ud800"
        "wrong-types": json.dumps(wrong_types),
        "no-cell-ids": json.dumps(no_ids),
        "unparsable": unparsable,
        "loud": loud,
        "not-json": "{" * 10,
        "cells-not-a-list": json.dumps({**as_json(honest), "cells": "x"}),
        "too-large": " " * (17 * 2**20),
    }


# 300 outputs of about 1 MB each, in one cell (883 MB in the grading process before issue 30).
LOUD_CELL = """
from IPython.display import display
for _ in range(300):
    display({"text/plain": "x" * 999_000}, raw=True)
"""


@pytest.fixture(scope="module")
def hostile(released_course: Path, tmp_path_factory: pytest.TempPathFactory) -> HostileClass:
    work = tmp_path_factory.mktemp("hostile-files")
    course = copy_course(released_course, work / "course")
    source = nbformat.read(course / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    for student, nb in _submissions(release, reference_answers(source)).items():
        write_submission(work / "inbox", student, NOTEBOOK_1, nb)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["--course", str(course), "grade", NOTEBOOK_1, "--from",
                     str(work / "inbox"), "--jobs", "2"])  # fmt: skip
    return HostileClass(course, out.getvalue(), code)


NOT_NOTEBOOKS = ["cells-not-a-list", "not-json", "too-large"]


@pytest.mark.classes
def test_every_student_is_recorded_and_the_run_ends_normally(hostile: HostileClass) -> None:
    """Exit status 1 only because three files are not notebooks: the summary names them."""
    assert hostile.exit_code == 1, hostile.output[-3000:]
    assert "Traceback" not in hostile.output, hostile.output[-3000:]
    last = hostile.output.strip().splitlines()[-1]
    assert last == f"not graded (see above and reports/{NOTEBOOK_1}/autograde/): " + ", ".join(
        NOT_NOTEBOOKS
    ), hostile.output[-3000:]
    rows = hostile.rows()
    assert (rows["honest"].score, rows["honest"].flags) == (25, []), rows["honest"]
    assert len(rows) == 10, sorted(rows)


@pytest.mark.classes
def test_forged_grading_metadata_earns_nothing(hostile: HostileClass) -> None:
    row = hostile.rows()["forges-metadata"]
    assert row.score == 0, row


@pytest.mark.classes
@pytest.mark.parametrize("student", ["lone-surrogate", "no-cell-ids", "unparsable", "loud"])
def test_odd_but_honest_files_keep_full_marks(hostile: HostileClass, student: str) -> None:
    row = hostile.rows()[student]
    assert row.score == 25 and not report.is_not_graded(row), row


@pytest.mark.classes
def test_metadata_of_the_wrong_type_is_the_release_s_and_flagged(hostile: HostileClass) -> None:
    row = hostile.rows()["wrong-types"]
    assert row.score == 25 and report.KERNELSPEC_CHANGED in row.flags, row


@pytest.mark.classes
@pytest.mark.parametrize(
    ("student", "why"),
    [("not-json", "not JSON"), ("cells-not-a-list", "its cells are not a list"),
     ("too-large", "larger than 16 MiB")],
)  # fmt: skip
def test_files_that_are_not_notebooks_are_not_graded_with_the_reason(
    hostile: HostileClass, student: str, why: str
) -> None:
    """No grade, in the table nor in grades.csv (issue 32: a 0 nobody gave); the summary says
    to ask for a new file; the student's feedback says why."""
    row = hostile.rows()[student]
    assert report.is_not_graded(row), row
    assert any(f.startswith(f"{report.UNREADABLE}: {why}") for f in row.flags), row
    assert f"  {student}: {report.UNREADABLE}: {why}" in hostile.output
    assert f"-> ask {student} for a new file" in hostile.output
    with open(hostile.course / "grades.csv", newline="") as handle:
        grades = {line["student_id"]: line for line in csv.DictReader(handle)}
    assert grades[student]["score"] == "" and why in grades[student]["not_graded"]
    assert grades["honest"]["score"] == "25.0"
    feedback = hostile.course / "feedback" / student / NOTEBOOK_1 / f"{NOTEBOOK_1}.html"
    assert why in feedback.read_text(), "the student learns why too"


@pytest.mark.classes
def test_a_loud_cell_is_cut_and_the_rest_graded(hostile: HostileClass) -> None:
    path = hostile.course / "autograded" / "loud" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert len(json.dumps(nb.cells[1].outputs)) < 5 * 2**20
    assert "more outputs of this cell cut by the grader" in json.dumps(nb.cells[1].outputs)


# --- the grading process reads a sandbox's stream with a bound ------------------------------
def test_a_huge_line_from_a_sandbox_is_never_read_whole() -> None:
    """The runner's stream is read at most `result_bytes` at a time, however long its lines:
    a real process prints one 200 MB line; this process holds a few MB at most."""
    writer = "import sys\nsys.stdout.write('x' * 200 * 2**20 + '\\n')\nsys.stdout.flush()"
    process = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE)
    execution = Execution()
    tracemalloc.start()
    _read_events(process, Limits(result_bytes=2**20), execution)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    process.kill()
    process.wait()
    assert execution.flags == ["sent more than the result limit"]
    assert peak < 8 * 2**20, f"{peak / 2**20:.0f} MiB held while reading"


# --- a grading error is never a student's zero -------------------------------------------------
@pytest.mark.classes
def test_a_grading_error_flags_the_student_gives_no_grade_and_fails_the_run(
    released_course: Path, tmp_path: Path
) -> None:
    """A results folder in a bad state for one student (a folder where that student's result
    file goes): the sandbox runs but its result cannot be kept, an error of ours. That student
    gets no grade (the table says why, the CSV's score is empty), the other is graded, and
    `grade` exits 1 naming the student."""
    course = copy_course(released_course, tmp_path / "course")
    source = nbformat.read(course / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    honest = with_answers(release, reference_answers(source))
    write_submission(tmp_path / "inbox", "honest", NOTEBOOK_1, honest)
    victim = with_answers(release, reference_answers(source))
    victim.cells.insert(1, nbformat.v4.new_code_cell("print('mine')"))
    write_submission(tmp_path / "inbox", "victim", NOTEBOOK_1, victim)
    assert main(["--course", str(course), "collect", NOTEBOOK_1, "--from",
                 str(tmp_path / "inbox")]) == 0  # fmt: skip
    opened = open_course(course)
    admission.admit(opened, NOTEBOOK_1, "victim")
    prepared = prepare(pipeline._to_execute(opened, NOTEBOOK_1, "victim", NOTEBOOK_1))
    limits = SandboxedAutograde(config=opened.config).limits()
    results = tmp_path / "results"
    (results / f"{digest(prepared, NOTEBOOK_1, limits, True)}.json").mkdir(parents=True)

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["--course", str(course), "grade", NOTEBOOK_1, "--results", str(results),
                     "--to", str(tmp_path / "grades.csv")])  # fmt: skip
    assert code == 1 and "not graded (" in out.getvalue(), out.getvalue()[-3000:]
    rows = {r.student: r for r in report.student_rows(open_course(course), NOTEBOOK_1)}
    assert (rows["honest"].score, rows["honest"].flags) == (25, []), rows["honest"]
    assert report.is_not_graded(rows["victim"]), rows["victim"]
    assert "IsADirectoryError" in " ".join(rows["victim"].flags), rows["victim"]
    with open(tmp_path / "grades.csv", newline="") as handle:
        grades = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert grades["honest"]["score"] == "25.0" and grades["honest"]["not_graded"] == ""
    assert grades["victim"]["score"] == "" and "IsADirectoryError" in grades["victim"]["not_graded"]
