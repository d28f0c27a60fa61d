"""The steps of the instructor workflow: release, collect, autograde, feedback, export."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.apps.zipcollectapp import ZipCollectApp
from nbgrader.plugins.export import CsvExportPlugin
from nbgrader.utils import temp_attrs
from traitlets.utils.importstring import import_item

from solutions.instructor.course import CommandError, Course, check
from solutions.instructor.sandbox import bwrap_available, run_submission
from solutions.instructor.verdicts import SandboxedAutograde, digest, prepare


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
        destination.mkdir(parents=True)
        for path in sorted(files.iterdir()):
            if path.name in notebooks and path.is_file() and not path.is_symlink():
                shutil.copyfile(path, destination / path.name)
            elif path.name != "timestamp.txt":
                warnings.append(f"{student}: ignored {path.name} (only {LAYOUT_FILES} are graded)")
        timestamp = files / "timestamp.txt"
        if timestamp.is_file() and not timestamp.is_symlink():
            shutil.copyfile(timestamp, destination / "timestamp.txt")
        else:
            (destination / "timestamp.txt").write_text(datetime.now(UTC).isoformat(" "))
    record_checksums(course, assignment, [student for student, _ in found])
    return Collected([student for student, _ in found], warnings)


LAYOUT_FILES = "the assignment's notebooks"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def checksums_file(course: Course, assignment: str) -> Path:
    return course.root / "reports" / assignment / "checksums.json"


def record_checksums(course: Course, assignment: str, students: list[str]) -> None:
    """Remember each collected notebook's SHA-256: `report` flags one that changed later."""
    path = checksums_file(course, assignment)
    known = json.loads(path.read_text()) if path.is_file() else {}
    for student in students:
        folder = course.folder("submitted", assignment, student)
        known[student] = {p.name: _sha256(p) for p in sorted(folder.glob("*.ipynb"))}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(known, indent=1, sort_keys=True))


def prune_submissions(course: Course, assignment: str, students: list[str]) -> list[str]:
    """Remove from submitted/ every file that is not one of the assignment's notebooks (the
    exchange copies whatever a student put next to them); return warnings naming them."""
    notebooks = {f"{name}.ipynb" for name in course.notebooks(assignment)}
    warnings = []
    for student in students:
        for path in sorted(course.folder("submitted", assignment, student).iterdir()):
            if path.name in notebooks | NBGRADER_FILES and path.is_file():
                continue
            warnings.append(f"{student}: ignored {path.name} (only {LAYOUT_FILES} are graded)")
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    return warnings


LAYOUT = "<folder>/<student>/{0}.ipynb or <folder>/<student>/{0}/{0}.ipynb"
# nbgrader's own files of an exchange submission, kept from submitted/ to feedback/: the
# submission time, and the secret from which `release_feedback` and the student's
# `fetch_feedback` name the feedback (so only that student finds it). No student code.
NBGRADER_FILES = {"timestamp.txt", "submission_secret.txt"}


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
    students = sorted({student for student, _ in matched})
    record_checksums(course, assignment, students)
    return Collected(students, warnings)


def collect_exchange(course: Course, assignment: str) -> Collected:
    """Collect what students submitted through the nbgrader exchange (`nbgrader submit`)."""
    check(course.api.collect(assignment), "collect")
    students = course.students(assignment)
    warnings = prune_submissions(course, assignment, students)
    record_checksums(course, assignment, students)
    return Collected(students, warnings)


ProgressCallback = Callable[[int, int, str, float], None]


def sandbox_problem(sandbox: bool) -> None:
    """Refuse to grade when the sandbox is asked for and cannot run."""
    if sandbox and (problem := bwrap_available()):
        raise CommandError(
            f"cannot sandbox the submissions: {problem}. Install it, or grade without a sandbox "
            "with --no-sandbox (the table then says so for every student)"
        )


def _to_execute(course: Course, assignment: str, student: str, notebook: str) -> NotebookNode:
    """The notebook nbgrader's autograde will hand to SandboxedAutograde: the submission after
    the configured sanitize steps (outputs cleared, test cells restored), written and read back."""
    path = course.folder("submitted", assignment, student) / f"{notebook}.ipynb"
    nb = nbformat.read(path, as_version=4)
    resources = {
        "nbgrader": {
            "student": student,
            "assignment": assignment,
            "notebook": notebook,
            "db_url": course.coursedir.db_url,
        }
    }
    for name in course.config.Autograde.sanitize_preprocessors:
        step = import_item(name) if isinstance(name, str) else name
        nb, resources = step(config=course.config).preprocess(nb, resources)
    return nbformat.reads(nbformat.writes(nb), as_version=4)


def _configure(course: Course, assignment: str, sandbox: bool, results: Path | None) -> Path:
    """Point SandboxedAutograde at the folder of executions (`results`, kept, or this run's own
    under reports/, emptied first) and at the report folder; return the executions folder."""
    reports = course.root / "reports" / assignment
    cache = results if results is not None else reports / "executions"
    if results is None:
        shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True, exist_ok=True)
    for config in (course.config, course.api.config):
        config.SandboxedAutograde.sandbox = sandbox
        config.SandboxedAutograde.cache_dir = str(cache)
        config.SandboxedAutograde.report_dir = str(reports / "autograde")
    return cache


def execute_all(
    course: Course,
    assignment: str,
    students: list[str],
    cache: Path,
    jobs: int,
    progress: ProgressCallback | None = None,
    then: Callable[[str], None] | None = None,
) -> None:
    """Run every submission in its own sandbox, `jobs` at a time, leaving each result in
    `cache` under its `digest`, where SandboxedAutograde finds it. A notebook whose result is
    there already is not run again. A submission that cannot be prepared here is left to
    autograde, which reports it. `then(student)` runs in the calling thread as soon as that
    student's sandboxes are done, while the others still run."""
    limits = SandboxedAutograde(config=course.config).limits()
    sandbox = course.config.SandboxedAutograde.sandbox

    def run(student: str) -> tuple[str, float]:
        start = time.perf_counter()
        for notebook in course.notebooks(assignment):
            try:
                prepared = prepare(_to_execute(course, assignment, student, notebook))
            except Exception:  # unreadable, missing: nbgrader's autograde reports it
                continue
            result = cache / f"{digest(prepared, assignment, limits, sandbox)}.json"
            if result.is_file():
                continue
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "notebook.ipynb"
                nbformat.write(prepared, path)
                execution = run_submission(path, assignment, limits, sandboxed=sandbox)
            partial = result.with_suffix(f".{uuid.uuid4().hex}.partial")  # never half a file
            partial.write_text(json.dumps(asdict(execution)))
            partial.replace(result)
        return student, time.perf_counter() - start

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(run, student) for student in students]
        for number, future in enumerate(as_completed(futures), start=1):
            student, seconds = future.result()
            if then is not None:
                then(student)
            if progress is not None:
                progress(number, len(students), student, seconds)


def execute(
    course: Course,
    assignment: str,
    students: list[str],
    results: Path,
    jobs: int = 1,
    sandbox: bool = True,
    progress: ProgressCallback | None = None,
) -> None:
    """Only the sandboxed runs of `students`, their results left in `results`: the unit of work
    a batch system dispatches for a large class. `autograde --results` then judges and records
    them without running anything again. Writes nothing else of the course."""
    sandbox_problem(sandbox)
    _configure(course, assignment, sandbox, results)
    execute_all(course, assignment, students, results, jobs, progress)


def autograde(
    course: Course,
    assignment: str,
    students: list[str] | None = None,
    progress: ProgressCallback | None = None,
    jobs: int | None = None,
    sandbox: bool = True,
    results: Path | None = None,
    with_feedback: bool = False,
) -> dict[str, dict]:
    """Autograde every submission; one student's failure never stops the batch.

    Each submission runs in its own sandbox, `jobs` at a time (default: one per core), unless
    `results` already holds its result (left by `execute`); as each one finishes, nbgrader's
    autograde, one student at a time in this process, judges the hidden tests and writes the
    gradebook (see NOTE [Grading sandbox] in sandbox.py). Returns, per student, nbgrader's
    result ({"success", "log", "error"}). The log is also kept in
    reports/<assignment>/autograde/<student>.log, where `report` reads what happened. With
    `with_feedback`, each graded student's feedback is written right after (`feedback`), while
    the others' sandboxes still run; a failure there is added to the student's log.
    """
    sandbox_problem(sandbox)
    students = course.students(assignment) if students is None else students
    log_dir = course.root / "reports" / assignment / "autograde"
    log_dir.mkdir(parents=True, exist_ok=True)
    cache = _configure(course, assignment, sandbox, results)
    outcome = {}

    def record(student: str) -> None:  # one student at a time, while other sandboxes run
        result = course.api.autograde(assignment, student, force=True, create=True)
        log = result.get("log", "") + result.get("error", "")
        if with_feedback and result.get("success"):
            try:
                feedback(course, assignment, [student])
            except CommandError as error:
                log += f"\n{error}"
        (log_dir / f"{student}.log").write_text(log)
        outcome[student] = result

    jobs = jobs or os.cpu_count() or 1
    execute_all(course, assignment, students, cache, jobs, progress, then=record)
    if results is None:
        shutil.rmtree(cache, ignore_errors=True)
    return {student: outcome[student] for student in students}


def feedback(course: Course, assignment: str, students: list[str] | None = None) -> Path:
    """Write the HTML feedback of every autograded submission (or only of `students`) into
    feedback/: the generated HTML and nothing else (nbgrader would also copy any other file of
    the graded folder) but NBGRADER_FILES, which `nbgrader release_feedback` needs to put the
    feedback in the exchange (a hub's students fetch it from there)."""
    if students is None:
        check(course.api.generate_feedback(assignment), "generate_feedback")
        students = course.students(assignment)
    else:
        for student in students:
            check(course.api.generate_feedback(assignment, student), f"feedback of {student}")
    root = course.root / course.coursedir.feedback_directory
    for student in students:
        folder = course.folder("feedback", assignment, student)
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.name in NBGRADER_FILES and path.is_file() and not path.is_symlink():
                continue
            if path.suffix != ".html" or not path.is_file() or path.is_symlink():
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    return root


def withhold_leaking_feedback(course: Course, assignment: str) -> dict[str, list]:
    """Run the leak scan over the feedback of `assignment`; move the feedback of every student
    whose files leak into reports/<assignment>/withheld-feedback/ (never sent). Returns
    {student: leaks}."""
    from solutions.instructor import leaks  # leaks imports the course machinery

    found: dict[str, list] = {}
    for leak in leaks.scan_feedback(course, leaks.secret_lines(course)):
        relative = Path(leak.where).relative_to(course.root / course.coursedir.feedback_directory)
        found.setdefault(relative.parts[0], []).append(leak)
    for student in found:
        folder = course.folder("feedback", assignment, student)
        target = course.root / "reports" / assignment / "withheld-feedback" / student
        shutil.rmtree(target, ignore_errors=True)
        if folder.is_dir():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(folder, target)
    return found


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
