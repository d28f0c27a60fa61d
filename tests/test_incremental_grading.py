"""Issue 32, section 3: grading again grades only what changed (NOTE [Incremental grading]).

A class of notebook 1 is graded with `python -m solutions grade`, then graded again as an
instructor does after late uploads: one new student, then one changed file, then a new due date,
then `--force`. Each time only what changed runs: the other rows say `reused`, their sandbox
results and gradebook entries are the ones kept (nothing rewrote them), and every grade is the one
a full regrade gives. Sandboxes and kernels are real, so the class is behind --classes.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import nbformat
import pytest
from course_support import NOTEBOOK_1, copy_course, reference_answers, with_answers
from nbgrader.api import Gradebook

from solutions.graph_construction.wrong_answers import WRONG_ANSWERS
from solutions.instructor import pipeline, report
from solutions.instructor.cli import main
from solutions.instructor.course import open_course

pytestmark = [
    pytest.mark.filterwarnings("ignore:Cell is missing an id field"),
    pytest.mark.classes,
]


@dataclass
class Class:
    course: Path
    inbox: Path
    release: nbformat.NotebookNode
    reference: dict[str, str]

    def submit(self, student: str, answers: dict[str, str]) -> Path:
        """A folder holding only `student`'s notebook (what the instructor collects next)."""
        folder = self.inbox / student
        shutil.rmtree(folder, ignore_errors=True)
        path = folder / student / f"{NOTEBOOK_1}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(with_answers(self.release, answers), path)
        return folder

    def grade(self, *args: object) -> tuple[int, str, dict[str, str]]:
        """`grade` with `args`: exit status, stderr, and each student's progress note."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--course", str(self.course), "grade", NOTEBOOK_1, "--jobs", "2",
                         *map(str, args)])  # fmt: skip
        notes = dict(re.findall(r"^\[[#.]+\] \d+/\d+ (\S+) \((.*)\)$", err.getvalue(), re.M))
        return code, err.getvalue(), notes

    def rows(self) -> dict[str, report.StudentRow]:
        return {r.student: r for r in report.student_rows(open_course(self.course), NOTEBOOK_1)}

    def scores(self) -> dict[str, tuple[float, list[str]]]:
        return {student: (row.score, row.flags) for student, row in self.rows().items()}

    def recorded(self) -> dict[str, object]:
        """Each student's gradebook submission id, and the time nbgrader wrote its autograded
        notebook: both change only when the student is recorded again."""
        found = {}
        with Gradebook(f"sqlite:///{self.course / 'gradebook.db'}") as gradebook:
            for student in self.rows():
                submission = gradebook.find_submission(NOTEBOOK_1, student)
                graded = self.course / "autograded" / student / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb"
                found[student] = (submission.id, graded.stat().st_mtime_ns)
        return found

    def executions(self) -> set[str]:
        folder = pipeline.executions_folder(open_course(self.course), NOTEBOOK_1)
        return {path.name for path in folder.iterdir()}


@pytest.fixture(scope="module")
def graded(released_course: Path, tmp_path_factory: pytest.TempPathFactory) -> Class:
    work = tmp_path_factory.mktemp("incremental")
    course = copy_course(released_course, work / "course")
    source = nbformat.read(course / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    the_class = Class(course, work / "inboxes", release, reference_answers(source))
    first = work / "first"
    for student, answers in (("ada", the_class.reference), ("bo", {}),
                             ("cy", {**the_class.reference, **_wrong(0)})):  # fmt: skip
        shutil.copytree(the_class.submit(student, answers), first, dirs_exist_ok=True)
    code, err, notes = the_class.grade("--from", first)
    assert code == 0, err[-3000:]
    assert set(notes) == {"ada", "bo", "cy"} and "reused" not in notes.values(), err[-3000:]
    return the_class


def _wrong(k: int) -> dict[str, str]:
    return {gid: answers[k].source for gid, answers in WRONG_ANSWERS.items() if k < len(answers)}


def test_a_late_student_is_the_only_one_graded(graded: Class) -> None:
    scores, recorded, executions = graded.scores(), graded.recorded(), graded.executions()
    assert len(executions) == 3, executions
    late = graded.submit("dee", {**graded.reference, **_wrong(1)})
    code, err, notes = graded.grade("--from", late)
    assert code == 0, err[-3000:]
    assert notes.pop("dee").endswith(" s") and set(notes.values()) == {"reused"}, err[-3000:]
    assert "reused the grading of 3 submissions unchanged since the last run" in err
    rows = graded.rows()
    assert [s for s, row in rows.items() if row.reused] == ["ada", "bo", "cy"]
    assert graded.scores() == {**scores, "dee": (rows["dee"].score, rows["dee"].flags)}
    assert rows["dee"].score < 25 and rows["dee"].flags == []
    assert {s: r for s, r in graded.recorded().items() if s != "dee"} == recorded
    assert graded.executions() > executions and len(graded.executions()) == 4


def test_a_changed_file_is_graded_again(graded: Class) -> None:
    before = graded.recorded()
    code, err, notes = graded.grade("--from", graded.submit("bo", graded.reference))
    assert code == 0, err[-3000:]
    assert notes.pop("bo").endswith(" s") and set(notes.values()) == {"reused"}, err[-3000:]
    assert graded.rows()["bo"].score == 25 and not graded.rows()["bo"].reused
    after = graded.recorded()
    assert after["bo"] != before["bo"]
    assert {s: r for s, r in after.items() if s != "bo"} == {
        s: r for s, r in before.items() if s != "bo"
    }
    # bo's blank notebook is no one's now: its result is pruned; bo now shares ada's
    assert len(graded.executions()) == 3, graded.executions()


def test_a_new_due_date_records_everyone_again_without_running_anything(graded: Class) -> None:
    executions = {
        path.name: path.stat().st_mtime_ns
        for path in pipeline.executions_folder(open_course(graded.course), NOTEBOOK_1).iterdir()
    }
    with Gradebook(f"sqlite:///{graded.course / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_assignment(NOTEBOOK_1, duedate=datetime(2100, 1, 1))
    before, scores = graded.recorded(), graded.scores()
    code, err, notes = graded.grade()
    assert code == 0, err[-3000:]
    assert set(notes.values()) == {"0.0 s"}, err[-3000:]  # recorded again, no sandbox ran
    after = graded.recorded()
    assert all(after[student] != before[student] for student in before)
    assert graded.scores() == scores
    assert {
        path.name: path.stat().st_mtime_ns
        for path in pipeline.executions_folder(open_course(graded.course), NOTEBOOK_1).iterdir()
    } == executions


def test_force_grades_everything_again_to_the_same_grades(graded: Class) -> None:
    scores = graded.scores()
    code, err, notes = graded.grade("--force")
    assert code == 0, err[-3000:]
    assert sorted(notes) == ["ada", "bo", "cy", "dee"] and "reused" not in notes.values()
    assert graded.scores() == scores
    assert not any(row.reused for row in graded.rows().values())


def test_a_student_removed_from_submitted_is_forgotten(graded: Class) -> None:
    """Last: without cy's submission, cy's result and entry are pruned."""
    course = open_course(graded.course)
    cy_results = pipeline.read_graded(course, NOTEBOOK_1, "cy")["results"]
    for step in ("submitted", "feedback"):  # (the leak scan reads every feedback there is)
        shutil.rmtree(graded.course / step / "cy")
    code, err, notes = graded.grade()
    assert code == 0 and set(notes.values()) == {"reused"}, err[-3000:]
    assert not pipeline.graded_file(course, NOTEBOOK_1, "cy").exists()
    assert not set(cy_results) & graded.executions()
    assert len(graded.executions()) == 2  # ada and bo share one result; dee's
