"""The per-student table after grading: score, maximum and what went wrong (flags)."""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from solutions.instructor import admission
from solutions.instructor.course import CommandError, Course
from solutions.instructor.run_notebook import CRASHED_CELL_NOTE

# The flags admission raises (admission.py), shown in the same table.
UNREADABLE = admission.UNREADABLE
MISSING_NOTEBOOK = admission.MISSING_NOTEBOOK
KERNELSPEC_CHANGED = admission.KERNELSPEC_CHANGED
GRADE_CELL_EDITED = admission.GRADE_CELL_EDITED
GRADE_CELL_DELETED = admission.GRADE_CELL_DELETED
USES_GRADERS = admission.USES_GRADERS
TIMED_OUT = "timed out"
KERNEL_DIED = "kernel died"
NOT_GRADED = "not graded"
OUT_OF_MEMORY = "out of memory"
NOT_SANDBOXED = "not sandboxed (--no-sandbox)"
CHANGED_SINCE_COLLECTED = "changed since collection"
REUSED = "reused"  # the last run kept this student's result (NOTE [Incremental grading])
LOG = "log: "  # where a row that is not graded says what happened


@dataclass
class StudentRow:
    """One line of the table."""

    student: str
    score: float = 0.0
    max_score: float = 0.0
    flags: list[str] = field(default_factory=list)
    reused: bool = False  # shown as the flag REUSED: not graded again in the last run

    def shown_flags(self) -> list[str]:
        """The flags as the table and summary.csv show them (with REUSED)."""
        return [*self.flags, REUSED] if self.reused else list(self.flags)


def _flag(row: StudentRow, flag: str) -> None:
    if flag not in row.flags:
        row.flags.append(flag)


def is_not_graded(row: StudentRow) -> bool:
    """True when `row` holds no grade: its grading failed (the reason is in its flags)."""
    return any(flag.startswith(NOT_GRADED) for flag in row.flags)


def not_graded_reason(row: StudentRow) -> str:
    """Why `row` holds no grade, in the table's words: its "not graded: ..." flags (without
    the prefix) and unreadable notebooks; "not graded" when nothing more is known (e.g. the
    submission was collected and not graded yet)."""
    reasons = [
        flag.removeprefix(f"{NOT_GRADED}: ")
        for flag in row.flags
        if flag.startswith((f"{NOT_GRADED}: ", UNREADABLE, MISSING_NOTEBOOK))
    ]
    return "; ".join(reasons) or NOT_GRADED


def _flag_not_graded(row: StudentRow) -> None:
    if not is_not_graded(row):
        row.flags.append(NOT_GRADED)


def _check_submitted(row: StudentRow, path: Path, release: nbformat.NotebookNode) -> None:
    """Flags of the submitted file, as admission sees it (NOTE [Admission] in admission.py):
    missing, unreadable (with why), kernelspec changed, test cells edited or deleted, grading
    code used."""
    for flag in admission.admit_file(path, release).flags:
        _flag(row, flag)


def _check_autograded(row: StudentRow, path: Path, log: str) -> None:
    """Flags visible after autograde: timeouts in the graded notebook, a dead kernel in the log."""
    if "DeadKernelError" in log or "Kernel died" in log:
        _flag(row, KERNEL_DIED)
    if "CellTimeoutError" in log:
        _flag(row, TIMED_OUT)
    if not path.is_file():
        return
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if CRASHED_CELL_NOTE in cell.source:
            _flag(row, KERNEL_DIED)
        for output in cell.get("outputs", []):
            if output.get("output_type") != "error":
                continue
            if output.get("ename") == "CellTimeoutError":
                _flag(row, TIMED_OUT)
            elif output.get("ename") == "MemoryError":
                _flag(row, OUT_OF_MEMORY)


def _check_sandbox(row: StudentRow, report: Path) -> None:
    """Flags from the sandbox's report of one notebook (solutions/instructor/verdicts.py)."""
    if not report.is_file():
        return
    info = json.loads(report.read_text())
    if info.get("crashed"):
        _flag(row, KERNEL_DIED)
    for flag in info.get("flags", []):
        if flag == "hit the memory limit":
            _flag(row, OUT_OF_MEMORY)
        elif flag != "no cgroup limits (not root)":
            _flag(row, flag)
    if not info.get("sandboxed", True):
        _flag(row, NOT_SANDBOXED)


def _check_unchanged(row: StudentRow, path: Path, checksum: str | None) -> None:
    if checksum and path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() != checksum:
        _flag(row, CHANGED_SINCE_COLLECTED)


def student_rows(course: Course, assignment: str) -> list[StudentRow]:
    """A row for every student with a submission folder, graded or not."""
    rows = []
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gradebook:
        try:
            known = gradebook.find_assignment(assignment)
        except MissingEntry:
            raise CommandError(
                f"{assignment} is not in the gradebook yet: release it first "
                f"(python -m solutions release {assignment})"
            ) from None
        max_score = known.max_score
        notebooks = [nb.name for nb in known.notebooks]
        release = course.folder("release", assignment)
        checksums_path = course.root / "reports" / assignment / "checksums.json"
        checksums = json.loads(checksums_path.read_text()) if checksums_path.is_file() else {}
        releases = {
            notebook: nbformat.read(release / f"{notebook}.ipynb", as_version=4)
            for notebook in notebooks
        }
        for student in course.students(assignment):
            row = StudentRow(student=student, max_score=max_score)
            try:
                _fill(row, course, assignment, releases, checksums.get(student), gradebook)
            except Exception as error:  # one student's odd files never stop the table
                _flag(row, f"{NOT_GRADED}: the report failed ({type(error).__name__}: {error})")
            if is_not_graded(row):
                row.score = 0.0
                _name_the_log(row, course, assignment)
            rows.append(row)
    return rows


def _name_the_log(row: StudentRow, course: Course, assignment: str) -> None:
    """A row that is not graded names the log of what happened (relative to the course)."""
    log = course.root / "reports" / assignment / "autograde" / f"{row.student}.log"
    if log.is_file():
        _flag(row, f"{LOG}{log.relative_to(course.root)}")


def _fill(
    row: StudentRow,
    course: Course,
    assignment: str,
    releases: dict[str, nbformat.NotebookNode],
    checksums: dict | None,
    gradebook: Gradebook,
) -> None:
    """Fill `row`'s flags and score from the student's files, reports and gradebook entry."""
    student = row.student
    graded = course.root / "reports" / assignment / "graded" / f"{student}.json"
    if graded.is_file():  # NOTE [Incremental grading] in pipeline.py
        row.reused = json.loads(graded.read_text()).get("reused") is True
    reports = course.root / "reports" / assignment / "autograde"
    log_file = reports / f"{student}.log"
    log = log_file.read_text(errors="replace") if log_file.is_file() else ""
    problems = reports / f"{student}.problems.json"
    for problem in json.loads(problems.read_text()) if problems.is_file() else []:
        _flag(row, f"{NOT_GRADED}: grading error ({problem})")
    for flag in admission.nbgrader_file_flags(course.folder("submitted", assignment, student)):
        _flag(row, flag)
    for notebook, release in releases.items():
        submitted = course.folder("submitted", assignment, student) / f"{notebook}.ipynb"
        autograded = course.folder("autograded", assignment, student) / f"{notebook}.ipynb"
        _check_submitted(row, submitted, release)
        _check_unchanged(row, submitted, (checksums or {}).get(submitted.name))
        _check_autograded(row, autograded, log)
        _check_sandbox(row, reports / f"{student}.{notebook}.json")
        if not autograded.is_file():
            _flag_not_graded(row)
    try:
        submission = gradebook.find_submission(assignment, student)
    except MissingEntry:
        _flag_not_graded(row)
    else:  # nbgrader's late penalty (0 unless a due date and a penalty policy are set)
        penalty = submission.late_submission_penalty or 0.0
        row.score = max(0.0, submission.score - penalty)
        if submission.total_seconds_late > 0:
            _flag(row, f"late (penalty {penalty:g})")


def shown_score(row: StudentRow) -> str:
    """The score as the table shows it: "-" for a row that holds no grade (not a 0)."""
    return "-" if is_not_graded(row) else f"{row.score:g}"


def format_table(rows: list[StudentRow]) -> str:
    """The rows as an aligned text table; a row that is not graded shows "-" as its score."""
    header = ("student", "score", "max", "flags")
    lines = [
        (row.student, shown_score(row), f"{row.max_score:g}", ", ".join(row.shown_flags()) or "-")
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(3)]
    out = []
    for line in [header, *lines]:
        cells = [line[0].ljust(widths[0]), line[1].rjust(widths[1]), line[2].rjust(widths[2])]
        out.append("  ".join([*cells, line[3]]))
    return "\n".join(out)


def write_csv(rows: list[StudentRow], destination: Path) -> Path:
    """The rows as CSV: student, score (empty when not graded), max_score, flags (separated
    by '; ', with REUSED)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    with open(destination, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "score", "max_score", "flags"])
        for row in rows:
            score = "" if is_not_graded(row) else row.score
            writer.writerow([row.student, score, row.max_score, "; ".join(row.shown_flags())])
    return destination
