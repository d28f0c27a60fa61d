"""The steps of the instructor workflow: release, collect, autograde, feedback, export."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.apps.zipcollectapp import ZipCollectApp
from nbgrader.plugins.export import CsvExportPlugin
from nbgrader.utils import temp_attrs

from solutions.instructor.course import CommandError, Course, check


def release(course: Course, assignment: str, to_exchange: bool = False) -> Path:
    """Build the student version of `assignment` into release/ (and the exchange if asked)."""
    check(
        course.api.generate_assignment(assignment, force=True, create=True), "generate_assignment"
    )
    if to_exchange:
        check(course.api.release_assignment(assignment), "release_assignment")
    return course.folder("release", assignment)


def is_released(course: Course, assignment: str) -> bool:
    """True when the gradebook knows `assignment` and its release folder exists."""
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gradebook:
        try:
            gradebook.find_assignment(assignment)
        except MissingEntry:
            return False
    return course.folder("release", assignment).is_dir()


def collect_folder(course: Course, assignment: str, folder: Path) -> list[str]:
    """Copy submissions from `folder` into submitted/; returns the student ids.

    `folder` holds one folder per student, either with the notebooks directly in it
    (`<student>/<notebook>.ipynb`) or in nbgrader's layout (`<student>/<assignment>/...`).
    A student's previous submission is replaced.
    """
    students = []
    for student_dir in sorted(p for p in Path(folder).iterdir() if p.is_dir()):
        files = student_dir / assignment if (student_dir / assignment).is_dir() else student_dir
        destination = course.folder("submitted", assignment, student_dir.name)
        if destination.exists():
            shutil.rmtree(destination)
        shutil.copytree(files, destination)
        timestamp = destination / "timestamp.txt"
        if not timestamp.exists():
            timestamp.write_text(datetime.now(UTC).isoformat(" "))
        students.append(student_dir.name)
    return students


def collect_zip(course: Course, assignment: str, archive: Path) -> list[str]:
    """Collect an LMS download (a zip of `<student>_<notebook>.ipynb` files) with zip_collect.

    Returns every student now under submitted/ for `assignment`.
    """
    archive_dir = course.root / "downloaded" / assignment / "archive"
    archive_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(archive, archive_dir / Path(archive).name)
    with temp_attrs(course.coursedir, assignment_id=assignment):
        app = ZipCollectApp(coursedir=course.coursedir, parent=course.api)
        app.force = True
        app.init_plugins()
        app.extract_archive_files()
        app.process_extracted_files()
    return course.students(assignment)


def collect_exchange(course: Course, assignment: str) -> list[str]:
    """Collect what students submitted through the nbgrader exchange (`nbgrader submit`)."""
    check(course.api.collect(assignment), "collect")
    return course.students(assignment)


ProgressCallback = Callable[[int, int, str, float], None]


def autograde(
    course: Course,
    assignment: str,
    students: list[str] | None = None,
    progress: ProgressCallback | None = None,
) -> dict[str, dict]:
    """Autograde every submission; one student's failure never stops the batch.

    Returns, per student, nbgrader's result ({"success", "log", "error"}). The log is also kept
    in reports/<assignment>/autograde/<student>.log, where `report` reads what happened.
    """
    students = course.students(assignment) if students is None else students
    log_dir = course.root / "reports" / assignment / "autograde"
    log_dir.mkdir(parents=True, exist_ok=True)
    results = {}
    for number, student in enumerate(students, start=1):
        start = time.perf_counter()
        result = course.api.autograde(assignment, student, force=True, create=True)
        (log_dir / f"{student}.log").write_text(result.get("log", "") + result.get("error", ""))
        results[student] = result
        if progress is not None:
            progress(number, len(students), student, time.perf_counter() - start)
    return results


def feedback(course: Course, assignment: str) -> Path:
    """Write the HTML feedback of every autograded submission into feedback/."""
    check(course.api.generate_feedback(assignment), "generate_feedback")
    return course.root / course.coursedir.feedback_directory


def export_csv(course: Course, destination: Path) -> Path:
    """Export the gradebook (every assignment and student) as nbgrader's grades CSV."""
    plugin = CsvExportPlugin(parent=course.api)
    plugin.to = str(destination)
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gradebook:
        plugin.export(gradebook)
    if not Path(destination).is_file():
        raise CommandError(f"export did not write {destination}")
    return Path(destination)
