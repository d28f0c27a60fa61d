"""The instructor pipeline end to end on notebook 1, with real kernels and real notebook files.

One class is graded once (`python -m solutions grade`, in process): the reference solution, the
blank release, adversarial submissions and one submission per set of wrong answers. The tests
then read the gradebook, the table, the CSV, the feedback and the leak scan. Answers that
misbehave go into the last exercise, which no other exercise uses, so "the rest is graded" shows
as exactly that exercise's points lost.
"""

from __future__ import annotations

import contextlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from course_support import (
    NOTEBOOK_1,
    REPO_ROOT,
    answer_ids,
    cell_by_id,
    copy_course,
    exercise_of,
    grade_cell_ids,
    reference_answers,
    with_answers,
    write_submission,
)
from nbgrader.api import Gradebook

from solutions.instructor import report
from solutions.instructor.cli import main
from solutions.instructor.course import open_course

# nbgrader re-adds a deleted test cell without a cell id; nbformat warns about it. A class of
# kernels: opt-in with --classes (the default run grades the red-team class of test_red_team.py).
pytestmark = [
    pytest.mark.filterwarnings("ignore:Cell is missing an id field"),
    pytest.mark.classes,
]

TEST_TIMEOUT_S = 10  # per cell, for the infinite loop (the course config says 30)


@dataclass
class GradedClass:
    course: Path
    table: str
    exit_code: int
    source: nbformat.NotebookNode
    expected_students: list[str]
    wrong_answer_students: dict[str, dict[str, str]]  # student -> {answer grade_id: fixture name}

    def rows(self) -> dict[str, report.StudentRow]:
        rows = report.student_rows(open_course(self.course), NOTEBOOK_1)
        return {row.student: row for row in rows}

    def cell_scores(self) -> dict[str, dict[str, float | None]]:
        """student -> {grade cell id: score} from the gradebook (which holds none for a
        submission that is not graded: truncated-json)."""
        with Gradebook(f"sqlite:///{self.course / 'gradebook.db'}") as gradebook:
            return {
                student: {
                    grade.name: grade.score
                    for grade in gradebook.find_submission_notebook(
                        NOTEBOOK_1, NOTEBOOK_1, student
                    ).grades
                }
                for student in self.expected_students
                if student != "truncated-json"
            }

    def points(self, exercise: str) -> float:
        """Maximum points of an exercise ("ex7"), from the source notebook."""
        return sum(
            cell.metadata["nbgrader"]["points"]
            for cell in self.source.cells
            if cell.metadata.get("nbgrader", {}).get("grade")
            and not cell.metadata["nbgrader"].get("solution")
            and exercise_of(cell.metadata["nbgrader"]["grade_id"]) == exercise
        )

    @property
    def max_score(self) -> float:
        return sum(self.points(exercise_of(i)) for i in answer_ids(self.source))


def _build_class(course: Path, folder: Path) -> tuple[list[str], dict, nbformat.NotebookNode]:
    notebook = f"{NOTEBOOK_1}.ipynb"
    source = nbformat.read(course / "source" / NOTEBOOK_1 / notebook, as_version=4)
    release = nbformat.read(course / "release" / NOTEBOOK_1 / notebook, as_version=4)
    reference = reference_answers(source)
    last = answer_ids(source)[-1]
    grading_file = REPO_ROOT / "solutions" / NOTEBOOK_1 / "reference.py"

    edited = with_answers(release, {})
    for grade_id in grade_cell_ids(edited):
        cell_by_id(edited, grade_id).source = "pass  # the tests are gone, so everything passes?"
    deleted = with_answers(release, reference)
    deleted.cells.remove(cell_by_id(deleted, grade_cell_ids(deleted)[0]))
    other_kernel = with_answers(release, reference)
    other_kernel.metadata.kernelspec = {"name": "python2", "display_name": "Python 2"}

    submissions = {
        "reference": with_answers(release, reference),
        "blank": release,
        "infinite-loop": with_answers(release, {**reference, last: "while True:\n    pass"}),
        "kernel-crash": with_answers(release, {**reference, last: "import os\nos._exit(1)"}),
        "huge-allocation": with_answers(
            release, {**reference, last: "hoard = bytearray(8 * 2**30)\n" + reference[last]}
        ),
        "edited-tests": edited,
        "deleted-test": deleted,
        "truncated-json": nbformat.writes(with_answers(release, reference))[:5000],
        "changed-kernelspec": other_kernel,
        "imports-graders": with_answers(
            release, {**reference, last: f"from solutions.{NOTEBOOK_1}.reference import *"}
        ),
        "reads-graders": with_answers(
            release, {**reference, last: f"exec(open({str(grading_file)!r}).read())"}
        ),
    }
    wrong_students = {}
    from solutions.graph_construction.wrong_answers import WRONG_ANSWERS

    for k in range(max(len(answers) for answers in WRONG_ANSWERS.values())):
        chosen = {gid: answers[k] for gid, answers in WRONG_ANSWERS.items() if k < len(answers)}
        student = f"wrong-{k}"
        submissions[student] = with_answers(
            release, {**reference, **{gid: w.source for gid, w in chosen.items()}}
        )
        wrong_students[student] = {gid: w.name for gid, w in chosen.items()}
    for student, nb in submissions.items():
        write_submission(folder, student, NOTEBOOK_1, nb)
    return sorted(submissions), wrong_students, source


@pytest.fixture(scope="module")
def graded(released_course: Path, tmp_path_factory: pytest.TempPathFactory) -> GradedClass:
    work = tmp_path_factory.mktemp("graded")
    course = copy_course(released_course, work / "course")
    students, wrong, source = _build_class(course, work / "inbox")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            ["--course", str(course), "--timeout", str(TEST_TIMEOUT_S), "grade", NOTEBOOK_1,
             "--from", str(work / "inbox"), "--to", str(work / "grades.csv")]
        )  # fmt: skip
    return GradedClass(course, out.getvalue(), code, source, students, wrong)


def test_every_student_gets_a_row(graded: GradedClass) -> None:
    assert graded.exit_code == 1  # truncated-json is not graded: the run ends asking for a file
    assert sorted(graded.rows()) == graded.expected_students
    table_students = [line.split()[0] for line in graded.table.splitlines()[1:]]
    assert table_students == graded.expected_students, graded.table


def test_reference_gets_full_marks_and_blank_release_zero(graded: GradedClass) -> None:
    rows = graded.rows()
    assert graded.max_score == 25
    assert (rows["reference"].score, rows["reference"].max_score) == (25, 25), rows["reference"]
    assert rows["reference"].flags == []
    assert rows["blank"].score == 0 and rows["blank"].flags == []


def _loses_only_last_exercise(graded: GradedClass, student: str, flag: str) -> None:
    row = graded.rows()[student]
    last = exercise_of(answer_ids(graded.source)[-1])
    assert row.score == graded.max_score - graded.points(last), row
    assert flag in row.flags, row


def test_infinite_loop_times_out_and_the_rest_is_graded(graded: GradedClass) -> None:
    _loses_only_last_exercise(graded, "infinite-loop", report.TIMED_OUT)


def test_kernel_crash_skips_the_cell_and_the_rest_is_graded(graded: GradedClass) -> None:
    _loses_only_last_exercise(graded, "kernel-crash", report.KERNEL_DIED)


def test_huge_allocation_hits_the_memory_cap(graded: GradedClass) -> None:
    # 8 GiB of untouched zero pages would succeed without the cap in nbgrader_config.py.
    _loses_only_last_exercise(graded, "huge-allocation", report.OUT_OF_MEMORY)


def test_edited_test_cells_are_restored(graded: GradedClass) -> None:
    row = graded.rows()["edited-tests"]
    assert row.score == 0 and report.GRADE_CELL_EDITED in row.flags, row


def test_deleted_test_cell_is_restored_and_graded(graded: GradedClass) -> None:
    row = graded.rows()["deleted-test"]
    assert row.score == 25 and report.GRADE_CELL_DELETED in row.flags, row
    scores = graded.cell_scores()["deleted-test"]
    assert None not in scores.values(), f"a test cell needs manual grading: {scores}"


def test_truncated_json_gets_a_flagged_row_and_no_grade(graded: GradedClass) -> None:
    row = graded.rows()["truncated-json"]
    assert report.is_not_graded(row) and any(f.startswith(report.UNREADABLE) for f in row.flags)
    table = {line.split()[0]: line.split()[1] for line in graded.table.splitlines()[1:]}
    assert table["truncated-json"] == "-" and table["blank"] == "0", graded.table


def test_changed_kernelspec_is_restored(graded: GradedClass) -> None:
    row = graded.rows()["changed-kernelspec"]
    assert row.score == 25 and report.KERNELSPEC_CHANGED in row.flags, row


@pytest.mark.parametrize("student", ["imports-graders", "reads-graders"])
def test_using_the_graders_is_flagged_and_earns_nothing(graded: GradedClass, student: str) -> None:
    _loses_only_last_exercise(graded, student, report.USES_GRADERS)


def test_each_wrong_answer_loses_its_exercise_points(graded: GradedClass) -> None:
    scores = graded.cell_scores()
    failures = []
    for student, chosen in graded.wrong_answer_students.items():
        for answer_id, name in chosen.items():
            exercise = exercise_of(answer_id)
            earned = sum(
                score or 0
                for cell, score in scores[student].items()
                if exercise_of(cell) == exercise
            )
            if earned >= graded.points(exercise):
                failures.append(f"{answer_id}: wrong answer {name!r} kept {earned} points")
    assert not failures, "\n".join(failures)
    assert len(graded.wrong_answer_students) >= 1


def test_export_and_feedback(graded: GradedClass) -> None:
    csv_text = (graded.course.parent / "grades.csv").read_text()
    for student in graded.expected_students:
        assert f",{student}," in csv_text, f"{student} is missing from grades.csv"
    feedback = graded.course / "feedback"
    for student in graded.expected_students:
        html = feedback / student / NOTEBOOK_1 / f"{NOTEBOOK_1}.html"
        assert html.is_file(), f"no feedback for {student}"  # truncated-json's says why
    assert ",truncated-json,,,,,,,25.0,unreadable notebook: not JSON" in csv_text, csv_text


def test_release_feedback_and_wheel_leak_nothing(graded: GradedClass) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--course", str(graded.course), "leak-scan"])
    assert code == 0, out.getvalue()


def test_zip_collect_from_an_lms_download(graded: GradedClass, tmp_path: Path) -> None:
    course = copy_course(graded.course, tmp_path / "course")
    release = course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb"
    archive = tmp_path / "lms.zip"
    with zipfile.ZipFile(archive, "w") as lms:
        for student in ("zed", "yan"):
            lms.write(release, f"downloads/{student}_{NOTEBOOK_1}.ipynb")
    assert main(["--course", str(course), "collect", NOTEBOOK_1, "--zip", str(archive)]) == 0
    for student in ("zed", "yan"):
        assert (course / "submitted" / student / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb").is_file()


# Re-graded in the re-run test: everyone but the two slow cases (a 10 s timeout, a crash that
# runs the notebook twice). Graders draw their random cases from a fixed seed, so the wrong
# answers must score exactly as before too.
NOT_RERUN = ("infinite-loop", "kernel-crash")


def test_rerunning_the_batch_loses_nothing(graded: GradedClass) -> None:
    """Last in this module: autograde the class again, first as it is (every result reused,
    NOTE [Incremental grading]), then with --force (every submission run and recorded again);
    every student's grades and row are unchanged."""
    before_scores, before_rows = graded.cell_scores(), graded.rows()
    rerun = [s for s in graded.expected_students if not s.startswith(NOT_RERUN)]
    assert len(rerun) >= 8
    students = [arg for student in rerun for arg in ("--student", student)]
    for force in ([], ["--force"]):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(
                ["--course", str(graded.course), "--timeout", str(TEST_TIMEOUT_S), "autograde",
                 NOTEBOOK_1, *students, *force]
            )  # fmt: skip
        assert code == 1 and "not graded (see above" in err.getvalue()  # truncated-json
        reused = [s for s in rerun if f" {s} (reused)" in err.getvalue()]
        assert reused == ([] if force else [s for s in rerun if s != "truncated-json"])
        assert graded.cell_scores() == before_scores
        after_rows = graded.rows()
        assert {s: (r.score, r.flags) for s, r in after_rows.items()} == {
            s: (r.score, r.flags) for s, r in before_rows.items()
        }
