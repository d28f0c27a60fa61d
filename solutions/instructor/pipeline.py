"""The steps of the instructor workflow: release, collect, autograde, feedback, export."""

from __future__ import annotations

import logging
import shutil
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
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


@dataclass
class Collected:
    """What a collect step did: the students it copied into submitted/, and warnings (files
    skipped, expected notebooks missing) for the instructor."""

    students: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def collect_folder(course: Course, assignment: str, folder: Path) -> Collected:
    """Copy submissions from `folder` into submitted/.

    `folder` holds one folder per student, either with the notebooks directly in it
    (`<student>/<notebook>.ipynb`) or in nbgrader's layout (`<student>/<assignment>/...`).
    A student's previous submission is replaced. A folder without any notebook is skipped, and
    a student without the assignment's notebook is collected (the table flags "notebook
    missing"); both are reported in `warnings`. CommandError when no folder holds a notebook.
    """
    folder = Path(folder)
    if not folder.is_dir():
        expected = LAYOUT.format(assignment)
        raise CommandError(f"--from {folder}: no such folder (expected {expected})")
    notebooks = {f"{name}.ipynb" for name in course.notebooks(assignment)}
    found, warnings = [], []
    for student_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        files = student_dir / assignment if (student_dir / assignment).is_dir() else student_dir
        names = {p.name for p in files.iterdir() if p.suffix == ".ipynb"}
        if not names:
            warnings.append(f"skipped {student_dir}: no notebook in it")
            continue
        found.append((student_dir.name, files))
        for missing in sorted(notebooks - names):
            warnings.append(f"{student_dir.name} has no {missing} (found {', '.join(names)})")
    if not found:
        raise CommandError(
            f"--from {folder}: no submissions found (expected {LAYOUT.format(assignment)})"
        )
    for student, files in found:
        destination = course.folder("submitted", assignment, student)
        if destination.exists():
            shutil.rmtree(destination)
        shutil.copytree(files, destination)
        timestamp = destination / "timestamp.txt"
        if not timestamp.exists():
            timestamp.write_text(datetime.now(UTC).isoformat(" "))
    return Collected([student for student, _ in found], warnings)


LAYOUT = "<folder>/<student>/{0}.ipynb or <folder>/<student>/{0}/{0}.ipynb"


def _zip_collector(course: Course, assignment: str) -> ZipCollectApp:
    app = ZipCollectApp(coursedir=course.coursedir, parent=course.api)
    app.force = True
    app.strict = True  # skip files that are not named after a notebook of the assignment
    app.log.setLevel(logging.ERROR)  # its per-file log says nothing that our summary does not
    app.init_plugins()
    return app


def collect_zip(course: Course, assignment: str, archive: Path) -> Collected:
    """Collect an LMS download (a zip of `<student>_<notebook>.ipynb` files) with zip_collect.

    Only this archive is collected (earlier downloads were collected when they were given).
    Files whose names do not match are skipped (listed in `warnings`); CommandError when no
    file matches, or when the archive holds two files for the same student and notebook.
    """
    archive = Path(archive)
    if not zipfile.is_zipfile(archive):
        problem = "not a zip file" if archive.is_file() else "no such file"
        raise CommandError(f"--zip {archive}: {problem} (expected the LMS download, a .zip)")
    download = course.root / "downloaded" / assignment
    shutil.rmtree(download, ignore_errors=True)
    (download / "archive").mkdir(parents=True)
    shutil.copy(archive, download / "archive" / archive.name)
    notebooks = {f"{name}.ipynb" for name in course.notebooks(assignment)}
    with temp_attrs(course.coursedir, assignment_id=assignment):
        app = _zip_collector(course, assignment)
        app.extract_archive_files()
        matched: dict[tuple[str, str], str] = {}
        skipped = []
        for path in sorted(p for p in (download / "extracted").rglob("*") if p.is_file()):
            info = app.collector_plugin_inst.collect(str(path)) or {}
            student, notebook = info.get("student_id"), info.get("file_id")
            if notebook not in notebooks:
                skipped.append(path.name)
            elif (student, notebook) in matched:
                raise CommandError(
                    f"--zip {archive}: two files for {student}'s {notebook}: "
                    f"{matched[student, notebook]} and {path.name}; keep one and collect again"
                )
            else:
                matched[student, notebook] = path.name
        if not matched:
            raise CommandError(
                f"--zip {archive}: no file is named <student>_<notebook>.ipynb with a notebook "
                f"of {assignment} ({', '.join(sorted(notebooks))}); found: "
                f"{', '.join(skipped) or 'nothing'}; rename the files, or change "
                "FileNameCollectorPlugin.named_regexp in course/nbgrader_config.py"
            )
        try:
            app.process_extracted_files()
        except SystemExit as error:  # nbgrader's `fail` exits; its message is in the log
            raise CommandError(f"--zip {archive}: nbgrader zip_collect failed") from error
    warnings = [f"skipped {name}: not <student>_<notebook>.ipynb" for name in skipped]
    return Collected(sorted({student for student, _ in matched}), warnings)


def collect_exchange(course: Course, assignment: str) -> Collected:
    """Collect what students submitted through the nbgrader exchange (`nbgrader submit`)."""
    check(course.api.collect(assignment), "collect")
    return Collected(course.students(assignment))


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
    Path(destination).parent.mkdir(parents=True, exist_ok=True)
    plugin = CsvExportPlugin(parent=course.api)
    plugin.to = str(destination)
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gradebook:
        plugin.export(gradebook)
    if not Path(destination).is_file():
        raise CommandError(f"export did not write {destination}")
    return Path(destination)
