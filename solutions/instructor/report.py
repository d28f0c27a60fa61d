"""The per-student table after grading: score, maximum and what went wrong (flags)."""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from solutions.instructor.course import CommandError, Course
from solutions.instructor.integrity import cells_using_grading_code, is_test_cell
from solutions.instructor.run_notebook import CRASHED_CELL_NOTE

TIMED_OUT = "timed out"
KERNEL_DIED = "kernel died"
GRADE_CELL_EDITED = "grade cell edited"
GRADE_CELL_DELETED = "grade cell deleted"
USES_GRADERS = "uses grading code"
UNREADABLE = "unreadable notebook"
KERNELSPEC_CHANGED = "kernelspec changed"
MISSING_NOTEBOOK = "notebook missing"
NOT_GRADED = "not graded"
OUT_OF_MEMORY = "out of memory"
NOT_SANDBOXED = "not sandboxed (--no-sandbox)"
CHANGED_SINCE_COLLECTED = "changed since collection"


@dataclass
class StudentRow:
    """One line of the table."""

    student: str
    score: float = 0.0
    max_score: float = 0.0
    flags: list[str] = field(default_factory=list)


def _flag(row: StudentRow, flag: str) -> None:
    if flag not in row.flags:
        row.flags.append(flag)


def _check_submitted(row: StudentRow, path: Path, test_sources: dict[str, str]) -> None:
    """Flags visible in the submitted file: unreadable, kernelspec, edited cells, grader use."""
    if not path.is_file():
        _flag(row, MISSING_NOTEBOOK)
        return
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception:
        _flag(row, UNREADABLE)
        return
    if nb.metadata.get("kernelspec", {}).get("name") != "python3":
        _flag(row, KERNELSPEC_CHANGED)
    submitted = {
        cell.metadata["nbgrader"]["grade_id"]: cell.source
        for cell in nb.cells
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    }
    for grade_id, source in test_sources.items():
        if grade_id not in submitted:
            _flag(row, GRADE_CELL_DELETED)
        elif submitted[grade_id].strip() != source.strip():
            _flag(row, GRADE_CELL_EDITED)
    if cells_using_grading_code(nb):
        _flag(row, USES_GRADERS)


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


def _test_cell_sources(release: Path) -> dict[str, str]:
    """The test cells of a release notebook, by grade_id, as students received them."""
    nb = nbformat.read(release, as_version=4)
    return {
        cell.metadata["nbgrader"]["grade_id"]: cell.source
        for cell in nb.cells
        if is_test_cell(cell)
    }


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
        for student in course.students(assignment):
            row = StudentRow(student=student, max_score=max_score)
            log_file = course.root / "reports" / assignment / "autograde" / f"{student}.log"
            log = log_file.read_text() if log_file.is_file() else ""
            for notebook in notebooks:
                tests = _test_cell_sources(release / f"{notebook}.ipynb")
                submitted = course.folder("submitted", assignment, student) / f"{notebook}.ipynb"
                autograded = course.folder("autograded", assignment, student) / f"{notebook}.ipynb"
                _check_submitted(row, submitted, tests)
                _check_unchanged(row, submitted, checksums.get(student, {}).get(submitted.name))
                _check_autograded(row, autograded, log)
                reports = course.root / "reports" / assignment / "autograde"
                _check_sandbox(row, reports / f"{student}.{notebook}.json")
                if not autograded.is_file():
                    _flag(row, NOT_GRADED)
            try:
                submission = gradebook.find_submission(assignment, student)
            except MissingEntry:
                _flag(row, NOT_GRADED)
            else:  # nbgrader's late penalty (0 unless a due date and a penalty policy are set)
                penalty = submission.late_submission_penalty or 0.0
                row.score = max(0.0, submission.score - penalty)
                if submission.total_seconds_late > 0:
                    _flag(row, f"late (penalty {penalty:g})")
            if NOT_GRADED in row.flags:
                row.score = 0.0
            rows.append(row)
    return rows


def format_table(rows: list[StudentRow]) -> str:
    """The rows as an aligned text table."""
    header = ("student", "score", "max", "flags")
    lines = [
        (row.student, f"{row.score:g}", f"{row.max_score:g}", ", ".join(row.flags) or "-")
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(3)]
    out = []
    for line in [header, *lines]:
        cells = [line[0].ljust(widths[0]), line[1].rjust(widths[1]), line[2].rjust(widths[2])]
        out.append("  ".join([*cells, line[3]]))
    return "\n".join(out)


def write_csv(rows: list[StudentRow], destination: Path) -> Path:
    """The rows as CSV: student, score, max_score, flags (separated by '; ')."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    with open(destination, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "score", "max_score", "flags"])
        for row in rows:
            writer.writerow([row.student, row.score, row.max_score, "; ".join(row.flags)])
    return destination
