"""The steps of the instructor workflow: release, collect, autograde, feedback, export."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import traceback
import uuid
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import nbformat
from nbformat import NotebookNode
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.apps.zipcollectapp import ZipCollectApp
from nbgrader.plugins.export import CsvExportPlugin
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import temp_attrs
from traitlets.utils.importstring import import_item

from solutions.instructor import admission, report, uploads
from solutions.instructor.admission import ADMITTED, admitted_folder
from solutions.instructor.course import REPO_ROOT, CommandError, Course, check
from solutions.instructor.sandbox import (
    Execution,
    Limits,
    bwrap_available,
    kernel_bytes,
    run_submission,
)
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
    missing"); both are reported in `warnings`. Names come from students (NOTE [LMS downloads]
    in uploads.py): a folder whose name is not a student id, a link, a notebook that is not a
    regular file or is larger than uploads.MAX_COPIED_BYTES are skipped with a warning, names
    escaped; copies have mode 0644. CommandError when no folder holds a notebook.
    """
    folder = Path(folder)
    if not folder.is_dir():
        expected = LAYOUT.format(assignment)
        raise CommandError(f"--from {folder}: no such folder (expected {expected})")
    notebooks = {f"{name}.ipynb" for name in course.notebooks(assignment)}
    found, warnings = [], []
    for student_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        where = uploads.shown(student_dir)
        files = student_dir / assignment if (student_dir / assignment).is_dir() else student_dir
        if student_dir.is_symlink() or files.is_symlink():
            warnings.append(f"skipped {where}: a link (links are never followed)")
            continue
        names = {p.name for p in files.iterdir() if p.suffix == ".ipynb"}
        if not names:
            warnings.append(f"skipped {where}: no notebook in it")
            continue
        if not uploads.safe_id(student_dir.name):
            warnings.append(uploads.unsafe_id_warning(where, student_dir.name))
            continue
        found.append((student_dir.name, files))
        shown_names = ", ".join(uploads.shown(name) for name in sorted(names))
        for missing in sorted(notebooks - names):
            warnings.append(f"{student_dir.name} has no {missing} (found {shown_names})")
    if not found:
        raise CommandError(
            f"--from {folder}: no submissions found (expected {LAYOUT.format(assignment)})"
        )
    collected = []
    for student, files in found:
        try:  # this student's failure boundary
            destination = course.folder("submitted", assignment, student)
            uploads.replace_folder(destination)
            for path in sorted(files.iterdir()):
                if path.name == "timestamp.txt":
                    continue
                if path.name not in notebooks:
                    warnings.append(
                        f"{student}: ignored {uploads.shown(path.name)} "
                        f"(only {LAYOUT_FILES} are graded)"
                    )
                    continue
                try:
                    uploads.copy_file(path, destination / path.name, uploads.MAX_COPIED_BYTES)
                except (uploads.Rejected, OSError) as error:
                    warnings.append(f"{student}: skipped {path.name}: {uploads.shown(error)}")
            try:
                uploads.copy_file(files / "timestamp.txt", destination / "timestamp.txt", 4096)
            except (uploads.Rejected, OSError):
                (destination / "timestamp.txt").write_text(datetime.now(UTC).isoformat(" "))
        except OSError as error:
            warnings.append(f"{student}: not collected ({uploads.shown(error)})")
            continue
        collected.append(student)
    record_checksums(course, assignment, collected)
    return Collected(collected, warnings)


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
    exchange copies whatever a student put next to them: links, folders, any mode); return
    warnings naming them (escaped). What is kept gets mode 0644, its folder 0755."""
    keep = {f"{name}.ipynb" for name in course.notebooks(assignment)} | NBGRADER_FILES
    warnings = []
    for student in students:
        try:  # this student's failure boundary
            folder = course.folder("submitted", assignment, student)
            for path in sorted(folder.iterdir()):
                if path.name in keep and path.is_file() and not path.is_symlink():
                    os.chmod(path, 0o644)
                    continue
                warnings.append(
                    f"{student}: ignored {uploads.shown(path.name)} "
                    f"(only {LAYOUT_FILES} are graded)"
                )
                shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
            os.chmod(folder, 0o755)
        except OSError as error:
            warnings.append(f"{student}: could not clean the submission ({uploads.shown(error)})")
    return warnings


LAYOUT = "<folder>/<student>/{0}.ipynb or <folder>/<student>/{0}/{0}.ipynb"
# nbgrader's own files of an exchange submission, kept from submitted/ to feedback/: the
# submission time, and the secret from which `release_feedback` and the student's
# `fetch_feedback` name the feedback (so only that student finds it). No student code.
NBGRADER_FILES = {"timestamp.txt", "submission_secret.txt"}


def _zip_collector(course: Course, assignment: str) -> ZipCollectApp:
    """nbgrader's zip_collect app, for the course's collector plugin (the student and notebook
    a file's name gives: `FileNameCollectorPlugin.named_regexp`); its extraction is not used."""
    app = ZipCollectApp(coursedir=course.coursedir, parent=course.api)
    app.force = True
    app.strict = True  # skip files that are not named after a notebook of the assignment
    app.log.setLevel(logging.ERROR)  # its per-file log says nothing that our summary does not
    app.init_plugins()
    return app


def collect_zip(
    course: Course, assignment: str, archive: Path, roster: Path | None = None
) -> Collected:
    """Collect an LMS download: a zip of `<student>_<notebook>.ipynb` files, or Canvas's or
    Moodle's download, whose names also say who uploaded each file.

    The download is read as hostile data, bounded, each upload inside its own failure
    boundary, and each file bound to its uploader where the LMS names one (NOTE [LMS
    downloads] in uploads.py; `roster` is an optional CSV: id, first_name, last_name,
    lms_user_id). Only this archive is collected (earlier downloads were collected when they
    were given); a collected student's previous submission is replaced. Whatever is skipped is
    in `warnings`, with the reason. CommandError when the archive cannot be read or no file in
    it is named after a notebook of the assignment.
    """
    archive = Path(archive)
    if not zipfile.is_zipfile(archive):
        problem = "not a zip file" if archive.is_file() else "no such file"
        raise CommandError(f"--zip {archive}: {problem} (expected the LMS download, a .zip)")
    notebooks = {f"{name}.ipynb" for name in course.notebooks(assignment)}
    try:
        people, warnings = uploads.load_roster(
            course.coursedir.db_url, course.coursedir.course_id, roster
        )
    except ValueError as error:
        raise CommandError(f"--roster {roster}: cannot read it ({error})") from error
    collector = _zip_collector(course, assignment).collector_plugin_inst

    def name_of(path: str) -> tuple[str | None, str | None]:
        info = collector.collect(path) or {}
        return info.get("student_id"), info.get("file_id")

    download = course.root / "downloaded" / assignment  # staging only: emptied when done
    shutil.rmtree(download, ignore_errors=True)  # also what an older, unbounded collect left
    (download / "extracted").mkdir(parents=True)
    students: list[str] = []
    try:
        try:
            found = uploads.read_download(archive, notebooks, name_of, download / "extracted")
        except (ValueError, OSError, EOFError, RuntimeError, zipfile.BadZipFile) as error:
            problem = uploads.shown(error)
            raise CommandError(f"--zip {archive}: cannot read it ({problem})") from error
        if not found.matched:
            raise CommandError(
                f"--zip {archive}: no file is named <student>_<notebook>.ipynb with a notebook "
                f"of {assignment} ({', '.join(sorted(notebooks))}); found: "
                f"{uploads.listing(found.unmatched) or 'nothing'}; rename the files, or change "
                "FileNameCollectorPlugin.named_regexp in course/nbgrader_config.py"
            )
        unmatched = found.unmatched
        warnings += [f"skipped {name}: not <student>_<notebook>.ipynb" for name in unmatched[:100]]
        if len(unmatched) > 100:
            warnings.append(f"skipped {len(unmatched) - 100} more files not named so")
        warnings += found.warnings
        chosen, bind_warnings = uploads.bind(found.uploads, people)
        warnings += bind_warnings
        for student, files in sorted(chosen.items()):
            destination = course.folder("submitted", assignment, student)
            try:  # this student's failure boundary
                uploads.install({nb: u.staged for nb, u in files.items()}, destination)
            except OSError as error:
                warnings.append(f"{student}: not collected ({uploads.shown(error)})")
                continue
            students.append(student)
    finally:
        shutil.rmtree(download, ignore_errors=True)
        with contextlib.suppress(OSError):
            download.parent.rmdir()  # downloaded/, when no other assignment is being collected
    record_checksums(course, assignment, students)
    return Collected(students, warnings)


def collect_exchange(course: Course, assignment: str) -> Collected:
    """Collect what students submitted through the nbgrader exchange (`nbgrader submit`). A
    submission whose student id is not one (uploads.SAFE_ID) is removed, with a warning."""
    check(course.api.collect(assignment), "collect")
    students, warnings = [], []
    for student in course.students(assignment):
        if uploads.safe_id(student):
            students.append(student)
            continue
        warnings.append(f"{uploads.unsafe_id_warning('a submission', student)}; removed")
        shutil.rmtree(course.folder("submitted", assignment, student), ignore_errors=True)
    warnings += prune_submissions(course, assignment, students)
    record_checksums(course, assignment, students)
    return Collected(students, warnings)


# (done, total, student, seconds in its sandboxes, note: "reused" or "")
ProgressCallback = Callable[[int, int, str, float, str], None]


def sandbox_problem(sandbox: bool, assignment: str | None = None) -> None:
    """Refuse to grade when the sandbox is asked for and cannot run, or cannot run what a
    submission runs: the pre-flight (`sandbox.preflight`, about 4 s once per process) starts
    this interpreter, the runner and a kernel importing the kernel half (`assignment`'s too,
    when given) in a sandbox with the real mounts."""
    if not sandbox:
        return
    if problem := bwrap_available():
        raise CommandError(
            f"cannot sandbox the submissions: {problem}. Install it, or grade without a sandbox "
            "with --no-sandbox (the table then says so for every student)"
        )
    from solutions.instructor.sandbox import preflight

    if problem := preflight(assignment):
        raise CommandError(f"nothing graded: the pre-flight check failed: {problem}")


def _to_execute(course: Course, assignment: str, student: str, notebook: str) -> NotebookNode:
    """The notebook nbgrader's autograde will hand to SandboxedAutograde: the admitted
    notebook after the configured sanitize steps (outputs cleared, test cells restored),
    written and read back."""
    path = admitted_folder(course, assignment, student) / f"{notebook}.ipynb"
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
    """Point SandboxedAutograde at the folder of executions (`results`, or the course's own,
    kept between runs under reports/; see NOTE [Incremental grading]) and at the report folder;
    return the executions folder."""
    reports = course.root / "reports" / assignment
    cache = results if results is not None else executions_folder(course, assignment)
    cache.mkdir(parents=True, exist_ok=True)
    for config in (course.config, course.api.config):
        config.SandboxedAutograde.sandbox = sandbox
        config.SandboxedAutograde.cache_dir = str(cache)
        config.SandboxedAutograde.report_dir = str(reports / "autograde")
        sanitize = config.Autograde.get("sanitize_preprocessors")
        if isinstance(sanitize, list) and STABLE_CELL_IDS not in sanitize:
            config.Autograde.sanitize_preprocessors = [*sanitize, STABLE_CELL_IDS]
    return cache


STABLE_CELL_IDS = "solutions.instructor.pipeline.StableCellIds"


class StableCellIds(NbGraderPreprocessor):
    """The last sanitize step of grading (`_configure` adds it): a cell without an id (nbgrader's
    OverwriteCells restores a deleted test cell without one) gets `restored-<index>`. nbformat
    would write a random id instead, so the same submission would make another notebook, hence
    another result key, at every run (and in `_to_execute` and nbgrader's autograde alike)."""

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        for index, cell in enumerate(nb.cells):
            if not cell.get("id"):
                cell["id"] = f"restored-{index}"
        return nb, resources


def executions_folder(course: Course, assignment: str) -> Path:
    """The course's own sandbox results of `assignment`, by `verdicts.digest`."""
    return course.root / "reports" / assignment / "executions"


# NOTE [Incremental grading]
# A class is graded again after every late upload, so `autograde` (and `grade`) only redoes
# what changed. Two things are kept between runs, under reports/<assignment>/:
# - executions/<key>.json: each sandbox's result under its `verdicts.digest` key (the prepared
#   notebook, every file its sandbox holds, the limits, sandboxed or not). A notebook whose key
#   has a result is not run again. At the end of a run the folder is pruned to the keys of the
#   submissions now in submitted/. Two students with the same notebook (two blank ones) share
#   one result, run once: the second waits for the first's sandbox.
# - graded/<student>.json: the key of the student's last recording (`recording_key`): the
#   student's admitted files, the keys of its sandbox results, and `grading_version`: every
#   file of solutions/ (graders, judges, this code), the assignment's source and release
#   notebooks and course/notebooks/<assignment>.py, the nbgrader configuration, the due date,
#   and the versions of Python, torch, nbgrader and nbconvert. When it is unchanged, and the
#   gradebook still holds the submission and autograded/ (and, for `grade`, feedback/) its
#   files, nbgrader's autograde and feedback are not run again: the table says "reused".
# Admission runs every time (it is what tells a new file from an old one, a few ms). `--force`
# runs every sandbox and records every student again: after a change the keys cannot see (the
# machine was overloaded and a submission timed out, nbgrader's templates were edited).
GRADED = "graded"


def graded_file(course: Course, assignment: str, student: str) -> Path:
    """What the last run that graded `student` kept (see NOTE [Incremental grading])."""
    return course.root / "reports" / assignment / GRADED / f"{student}.json"


def read_graded(course: Course, assignment: str, student: str) -> dict:
    """The student's entry of NOTE [Incremental grading] ({} when there is none or it is odd):
    "results" (result file names), "key" (of the last recording; None when that run did not
    record) and "reused" (the last run kept the result)."""
    path = graded_file(course, assignment, student)
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _write_graded(course: Course, assignment: str, student: str, state: dict) -> None:
    path = graded_file(course, assignment, student)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{uuid.uuid4().hex}.partial")
    partial.write_text(json.dumps(state))
    partial.replace(path)


# Sections of the configuration that say where things are or how files are collected: they
# decide nothing of a grade (collecting from a zip adds its own, some empty, while it runs).
_PLACES = ("CourseDirectory", "Exchange", "ZipCollectApp", "FileNameCollectorPlugin")


def _config_for_key(config: object) -> dict:
    """The course configuration without its empty sections, the sections in _PLACES and the
    executions and report folders of this run."""
    plain = json.loads(json.dumps(config, sort_keys=True, default=repr))
    for name in ("cache_dir", "report_dir"):
        plain.get("SandboxedAutograde", {}).pop(name, None)
    return {
        section: values for section, values in plain.items() if values and section not in _PLACES
    }


def grading_version(course: Course, assignment: str) -> str:
    """What, outside a submission, decides how it is recorded (see NOTE [Incremental
    grading]): a change to any of it records every student again."""
    import nbconvert
    import nbgrader
    import torch

    key = hashlib.sha256()

    def add(name: str, data: bytes) -> None:
        key.update(f"\0{name}\0{len(data)}\0".encode() + data)

    for path in sorted((REPO_ROOT / "solutions").rglob("*.py")):
        add(str(path.relative_to(REPO_ROOT)), path.read_bytes())
    own = REPO_ROOT / "course" / "notebooks" / f"{assignment}.py"
    if own.is_file():
        add(str(own.relative_to(REPO_ROOT)), own.read_bytes())
    for step in ("source", "release"):
        for path in sorted(course.folder(step, assignment).glob("*.ipynb")):
            add(f"{step}/{path.name}", path.read_bytes())
    add("config", json.dumps(_config_for_key(course.config), sort_keys=True).encode())
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gradebook:
        try:
            duedate = gradebook.find_assignment(assignment).duedate
        except MissingEntry:
            duedate = None
    versions = (sys.version, torch.__version__, nbgrader.__version__, nbconvert.__version__)
    add("environment", repr((str(duedate), versions)).encode())
    return key.hexdigest()


def recording_key(version: str, course: Course, assignment: str, student: str,
                  results: list[Path]) -> str:  # fmt: skip
    """The key of one student's recording: `version`, the student's admitted files and the
    keys of the sandbox results its grading reads (a result is rerun only with --force, which
    records again anyway)."""
    key = hashlib.sha256(version.encode())
    for path in sorted(admitted_folder(course, assignment, student).iterdir()):
        data = path.read_bytes() if path.is_file() else b"(not a file)"
        key.update(f"\0{path.name}\0{len(data)}\0".encode() + data)
    key.update(repr([path.name for path in results]).encode())
    return key.hexdigest()


def _still_recorded(
    course: Course, assignment: str, student: str, gradebook: Gradebook, with_feedback: bool
) -> tuple[bool, bool]:
    """(the gradebook holds `student`'s submission and autograded/ its notebooks, feedback/
    holds its pages): what a reused recording needs."""
    names = [p.stem for p in admitted_folder(course, assignment, student).glob("*.ipynb")]
    try:
        gradebook.find_submission(assignment, student)
    except MissingEntry:
        return False, False
    graded = course.folder("autograded", assignment, student)
    pages = course.folder("feedback", assignment, student)
    recorded = all((graded / f"{name}.ipynb").is_file() for name in names)
    return recorded, not with_feedback or all((pages / f"{n}.html").is_file() for n in names)


def _unrecord(course: Course, assignment: str, student: str) -> None:
    """Take `student`'s submission of `assignment` out of the gradebook and autograded/: it
    holds no grade (feedback/ keeps the page that tells the student why)."""
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gradebook:
        with contextlib.suppress(MissingEntry):
            gradebook.remove_submission(assignment, student)
    shutil.rmtree(course.folder("autograded", assignment, student), ignore_errors=True)
    with contextlib.suppress(OSError):  # the student's folder, when it holds nothing else
        course.folder("autograded", assignment, student).parent.rmdir()


def _prune(course: Course, assignment: str, cache: Path, used: set[str]) -> None:
    """Keep in `cache` only the results in `used` and those of the students in submitted/
    (see NOTE [Incremental grading]); forget the entries of students no longer there."""
    students = set(course.students(assignment))
    folder = graded_file(course, assignment, "x").parent
    if folder.is_dir():
        for path in folder.iterdir():
            if path.suffix != ".json" or path.stem not in students:
                path.unlink(missing_ok=True)
                continue
            used.update(str(name) for name in read_graded(course, assignment, path.stem).get(
                "results", []))  # fmt: skip
    for path in cache.iterdir():
        if path.name not in used and path.is_file():
            path.unlink(missing_ok=True)


# NOTE [Grading threads]
# A class is graded by one process: worker threads each wait on a sandbox (a subprocess), and
# the main thread does everything else: admission, preparing each notebook, nbgrader's
# autograde and feedback, one student at a time. Nothing that parses Python runs in a worker:
# CPython 3.11's parser is not safe in two threads at once (a run died with "SystemError: AST
# constructor recursion depth mismatch"). Every step taken for one student runs inside that
# student's failure boundary (`_for_student`): an exception there flags the student, with the
# reason, in reports/<assignment>/autograde/<student>.problems.json, and the class goes on.
GRADING_ERROR = "not graded: grading error"


def problems_file(course: Course, assignment: str, student: str) -> Path:
    """Where the grading errors of `student` are kept, for `report` (a JSON list of text)."""
    return course.root / "reports" / assignment / "autograde" / f"{student}.problems.json"


def log_file(course: Course, assignment: str, student: str) -> Path:
    """The log of `student`'s last grading: nbgrader's autograde log, or what went wrong."""
    return course.root / "reports" / assignment / "autograde" / f"{student}.log"


def record_problem(
    course: Course, assignment: str, student: str, problem: str, detail: str = ""
) -> None:
    """Record a grading error of `student` (see NOTE [Grading threads]); `detail` (a
    traceback) goes into the student's log, which the first problem of a run starts anew."""
    path = problems_file(course, assignment, student)
    known = json.loads(path.read_text()) if path.is_file() else []
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([*known, problem]))
    with open(log_file(course, assignment, student), "a" if known else "w") as log:
        log.write(f"not graded: grading error ({problem})\n{detail}")


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:500]


@contextlib.contextmanager
def _for_student(course: Course, assignment: str, student: str, step: str) -> Iterator[None]:
    """One student's failure boundary: an exception of `step` is recorded as that student's
    grading error (see NOTE [Grading threads]), its traceback in the student's log, and goes
    no further."""
    try:
        yield
    except Exception as error:
        detail = "".join(traceback.format_exception(error))[-20_000:]
        record_problem(course, assignment, student, f"{step}: {_describe(error)}", detail)


@dataclass
class _Plan:
    """One student's grading in this run: the (prepared notebook, result file) pairs still to
    run, every result file its recording reads, and why a notebook could not be read."""

    work: list[tuple[NotebookNode, Path]] = field(default_factory=list)
    results: list[Path] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)


def _sandbox_work(
    course: Course,
    assignment: str,
    student: str,
    limits: Limits,
    sandbox: bool,
    cache: Path,
    files: dict[str, bytes],
    force: bool = False,
) -> _Plan:
    """Admit `student`'s submission and prepare each notebook; return its `_Plan` (a notebook
    whose result, with the sandbox holding `files`, is in `cache` is not run again, unless
    `force`). Main thread only (it parses)."""
    problems_file(course, assignment, student).unlink(missing_ok=True)
    flags = admission.admit(course, assignment, student)
    plan = _Plan(unreadable=[flag for flag in flags if flag.startswith(admission.UNREADABLE)])
    for notebook in course.notebooks(assignment):
        if not (admitted_folder(course, assignment, student) / f"{notebook}.ipynb").is_file():
            continue  # missing: nbgrader's autograde scores it 0, `report` flags it
        prepared = prepare(_to_execute(course, assignment, student, notebook))
        if admission.unreadable_reason(prepared):
            continue  # nothing of the student's to run
        result = cache / f"{digest(prepared, assignment, limits, sandbox, files)}.json"
        plan.results.append(result)
        if force or not result.is_file():
            plan.work.append((prepared, result))
    return plan


Then = Callable[[str, "_Plan"], str]


class Sandboxes(Protocol):
    """Where a grading run's sandboxes run: this machine (`LocalSandboxes`) or the workers of
    a Dask cluster (`dask_grading.DaskSandboxes`)."""

    threads: int  # submissions handled at once
    files: dict[str, bytes]  # what every sandbox of the run holds (`kernel_bytes`)
    limits: Limits
    sandboxed: bool

    def run(self, prepared: NotebookNode, key: str) -> Execution:
        """The sandbox's result for `prepared`, whose `verdicts.digest` is `key`."""

    def describe(self) -> str:
        """What the progress bar adds ("" or "on 2 workers")."""


class LocalSandboxes:
    """Each submission's sandbox on this machine, `jobs` at a time."""

    def __init__(
        self, assignment: str, files: dict[str, bytes], limits: Limits, sandboxed: bool, jobs: int
    ) -> None:
        self.assignment, self.files, self.limits = assignment, files, limits
        self.sandboxed = sandboxed
        self.threads = max(1, jobs)

    def run(self, prepared: NotebookNode, key: str) -> Execution:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "notebook.ipynb"
            nbformat.write(prepared, path)
            return run_submission(path, self.assignment, self.limits, self.sandboxed, self.files)

    def describe(self) -> str:
        return ""


def execute_all(
    course: Course,
    assignment: str,
    students: list[str],
    cache: Path,
    jobs: int,
    progress: ProgressCallback | None = None,
    then: Then | None = None,
    force: bool = False,
    dask: str | None = None,
) -> dict[str, _Plan]:
    """Run every submission in its own sandbox, `jobs` at a time (or on the workers of the
    Dask scheduler at `dask`: NOTE [Grading on Dask] in dask_grading.py), leaving each result
    in `cache` under its `digest`, where SandboxedAutograde finds it. A notebook whose result
    is there already is not run again (unless `force`). `then(student, plan)` runs in the
    calling thread as soon as that student's sandboxes are done, while the others still run;
    what it returns ("reused") is shown by `progress`. A failure while handling one student is
    recorded as that student's grading error, never stops the others. Returns each student's
    `_Plan`. Raises CommandError when the Dask scheduler goes away (what was recorded stays)."""
    limits = SandboxedAutograde(config=course.config).limits()
    sandbox = course.config.SandboxedAutograde.sandbox
    files = kernel_bytes(assignment)  # read once: every key and sandbox of this run has them
    if dask is None:
        local = LocalSandboxes(assignment, files, limits, sandbox, jobs)
        return _execute_all(course, assignment, students, cache, local, progress, then, force)
    from solutions.instructor.dask_grading import DaskSandboxes, SchedulerGone

    with DaskSandboxes(dask, assignment, files, limits, sandbox) as where:
        try:
            return _execute_all(course, assignment, students, cache, where, progress, then, force)
        except SchedulerGone as error:
            recorded = sum(1 for s in students if read_graded(course, assignment, s).get("key"))
            raise CommandError(
                f"{error}: the run stopped. {recorded} of {len(students)} students are "
                "recorded and stay so, and the results already back are kept: the same command "
                "runs only what is missing"
            ) from None


def _execute_all(
    course: Course,
    assignment: str,
    students: list[str],
    cache: Path,
    sandboxes: Sandboxes,
    progress: ProgressCallback | None,
    then: Then | None,
    force: bool,
) -> dict[str, _Plan]:
    def run(
        student: str, work: list[tuple[NotebookNode, Path]], first: list[Future]
    ) -> tuple[str, float, str]:
        start = time.perf_counter()
        try:
            for future in first:  # an earlier student of this run makes the same result
                future.result()
            for prepared, result in work:
                if result in made:  # by that earlier student
                    continue
                execution = sandboxes.run(prepared, result.stem)
                if execution.grader_error:  # not the student's: no result, no grade
                    problem = f"grader error in the sandbox: {execution.grader_error}"
                    log = f"the sandbox's stderr:\n{execution.stderr}"
                    return student, time.perf_counter() - start, f"{problem}\n{log}"
                partial = result.with_suffix(f".{uuid.uuid4().hex}.partial")  # never half a file
                partial.write_text(json.dumps(asdict(execution)))
                partial.replace(result)
                made.add(result)
        except CommandError:  # the run stops (the Dask scheduler went away)
            raise
        except Exception as error:  # ours (the sandbox could not start, a full disk, ...)
            detail = "".join(traceback.format_exception(error))[-20_000:]
            return student, time.perf_counter() - start, f"sandbox: {_describe(error)}\n{detail}"
        return student, time.perf_counter() - start, ""

    plans: dict[str, _Plan] = {}
    made: set[Path] = set()  # results written by this run
    making: dict[Path, Future] = {}  # result -> the future of the first student who needs it
    with ThreadPoolExecutor(max_workers=min(sandboxes.threads, max(1, len(students)))) as pool:
        futures = []
        for student in students:
            plans[student] = _Plan()
            with _for_student(course, assignment, student, "admission"):
                plans[student] = _sandbox_work(
                    course, assignment, student, sandboxes.limits, sandboxes.sandboxed, cache,
                    sandboxes.files, force,
                )  # fmt: skip
            work = plans[student].work
            first = {making[result] for _, result in work if result in making}
            future = pool.submit(run, student, work, list(first))
            for _, result in work:
                making.setdefault(result, future)
            futures.append(future)
        for number, future in enumerate(as_completed(futures), start=1):
            student, seconds, problem = future.result()
            if problem:
                problem, _, detail = problem.partition("\n")
                record_problem(course, assignment, student, problem, detail)
            note = ""
            if then is not None:
                with _for_student(course, assignment, student, "recording"):
                    note = then(student, plans[student])
            if progress is not None:
                where = sandboxes.describe()
                if where and not note:
                    note = f"{seconds:.1f} s {where}"
                progress(number, len(students), student, seconds, note)
    return plans


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
    them without running anything again. Writes nothing else of the course but admitted/."""
    sandbox_problem(sandbox, assignment)
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
    force: bool = False,
    dask: str | None = None,
) -> dict[str, dict]:
    """Autograde every submission; one student's failure never stops the batch.

    Each submission is admitted (NOTE [Admission] in admission.py) and runs in its own
    sandbox, `jobs` at a time (default: one per core) or on the workers of the Dask scheduler
    at `dask` (NOTE [Grading on Dask] in dask_grading.py), unless its result is kept from an
    earlier run or `results` holds it (left by `execute`); as each one finishes, nbgrader's
    autograde, one student at a time in this process, reads the admitted notebook, judges the
    hidden tests and writes the gradebook (see NOTE [Grading sandbox] in sandbox.py). A
    student whose files, results and grading code are those of their last recording is not
    recorded again (NOTE [Incremental grading]); `force` runs and records everyone again.

    Returns, per student, nbgrader's result ({"success", "log", "error"}, and "reused": True
    for a recording kept). The log is also kept in reports/<assignment>/autograde/<student>.log,
    where `report` reads what happened. With `with_feedback`, each graded student's feedback is
    written right after (`feedback`), while the others' sandboxes still run; a failure there is
    added to the student's log.

    A submission with a notebook admission cannot read is not graded: its feedback (which says
    why) is written, then its submission is taken out of the gradebook and autograded/, so no
    grade of 0 that nobody gave is kept or exported; its result says "not graded".
    """
    if dask is None:  # with Dask, each worker runs this check before it gets work
        sandbox_problem(sandbox, assignment)
    students = course.students(assignment) if students is None else students
    log_dir = course.root / "reports" / assignment / "autograde"
    log_dir.mkdir(parents=True, exist_ok=True)
    cache = _configure(course, assignment, sandbox, results)
    version = grading_version(course, assignment)
    outcome = {student: {"success": False, "error": "not graded"} for student in students}

    def record(student: str, plan: _Plan) -> str:  # one at a time, while other sandboxes run
        previous = read_graded(course, assignment, student).get("key")
        state = {"results": [path.name for path in plan.results], "key": None, "reused": False}
        _write_graded(course, assignment, student, state)
        if problems_file(course, assignment, student).is_file():
            return ""  # its admission or sandbox failed: no grade rather than a wrong one
        key = recording_key(version, course, assignment, student, plan.results)
        if not force and not plan.unreadable and previous == key and reusable(student):
            _write_graded(course, assignment, student, {**state, "key": key, "reused": True})
            log = log_file(course, assignment, student)
            text = log.read_text(errors="replace") if log.is_file() else ""
            outcome[student] = {"success": True, "reused": True, "log": text}
            return "reused"
        with temp_attrs(course.coursedir, submitted_directory=ADMITTED):
            result = course.api.autograde(assignment, student, force=True, create=True)
        log = result.get("log", "") + result.get("error", "")
        if not result.get("success"):  # nbgrader refused: say why in the table, too
            last = (result.get("error") or "").strip().splitlines()[-1:] or ["no error given"]
            record_problem(course, assignment, student, f"nbgrader autograde: {last[0]}", log)
            outcome[student] = result
            return ""
        if with_feedback or plan.unreadable:  # an unreadable file's feedback says why
            try:
                feedback(course, assignment, [student])
            except CommandError as error:
                log += f"\n{error}"
        if plan.unreadable:
            _unrecord(course, assignment, student)
            why = "; ".join(plan.unreadable)
            log += f"\nnot graded: {why} (the gradebook holds no grade; feedback says why)\n"
            result = {**result, "success": False, "error": f"not graded: {why}"}
        else:
            _write_graded(course, assignment, student, {**state, "key": key})
        log_file(course, assignment, student).write_text(log)
        outcome[student] = result
        return ""

    def reusable(student: str) -> bool:
        """True when the gradebook and autograded/ still hold `student`'s last recording
        (its feedback is written again when missing)."""
        with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gradebook:
            recorded, pages = _still_recorded(course, assignment, student, gradebook,
                                              with_feedback)  # fmt: skip
        if recorded and not pages:
            feedback(course, assignment, [student])
        return recorded

    jobs = jobs or os.cpu_count() or 1
    plans = execute_all(course, assignment, students, cache, jobs, progress, record, force, dask)
    if results is None:
        _prune(course, assignment, cache, {p.name for plan in plans.values() for p in plan.results})
    return outcome


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


NOT_SUBMITTED = "not submitted"


def export_csv(
    course: Course, destination: Path, rows: dict[str, list[report.StudentRow]] | None = None
) -> Path:
    """Export the gradebook as nbgrader's grades CSV (a row per assignment and student), with
    one more column, `not_graded`, so that the CSV holds no 0 that nobody gave (nbgrader writes
    0.0 for every missing submission): where it is not empty, the scores are left empty and it
    says why: "not submitted" (nothing of the student's in submitted/ nor in the gradebook), or
    the reason `report` gives for a submission that could not be graded (an unreadable notebook,
    a grading error; see `report.not_graded_reason`). A submission attempted but never recorded
    by nbgrader gets a row too. `rows`: the tables of some assignments, already made."""
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    plugin = CsvExportPlugin(parent=course.api)
    plugin.to = str(destination)
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gradebook:
        plugin.export(gradebook)
        assignments = [a.name for a in gradebook.assignments]
        graded = {
            (assignment.name, submission.student.id)
            for assignment in gradebook.assignments
            for submission in assignment.submissions
        }
    if not destination.is_file():
        raise CommandError(f"export did not write {destination}")
    with open(destination, newline="") as handle:
        reader = csv.DictReader(handle)
        columns, lines = [*(reader.fieldnames or []), "not_graded"], list(reader)
    reasons = _not_graded(course, assignments, rows or {})
    listed = {(line["assignment"], line["student_id"]) for line in lines}
    for assignment, student in sorted(reasons.keys() - listed):
        lines.append({"assignment": assignment, "student_id": student})
    for line in lines:
        where = (line["assignment"], line["student_id"])
        line["not_graded"] = reasons.get(where, "" if where in graded else NOT_SUBMITTED)
        if line["not_graded"]:
            line["raw_score"] = line["late_submission_penalty"] = line["score"] = ""
    with open(destination, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(lines)
    return destination


def _not_graded(
    course: Course, assignments: list[str], rows: dict[str, list[report.StudentRow]]
) -> dict[tuple[str, str], str]:
    """(assignment, student) -> why it holds no grade, for every submission that could not be
    graded (`report`'s table: the same reasons, in the same words)."""
    reasons = {}
    for assignment in assignments:
        table = rows.get(assignment)
        if table is None and course.students(assignment):
            try:
                table = report.student_rows(course, assignment)
            except Exception:  # noqa: BLE001 - e.g. its release is gone: the recorded errors
                table = []
                for path in sorted(
                    course.root.glob(f"reports/{assignment}/autograde/*.problems.json")
                ):
                    row = report.StudentRow(path.name.removesuffix(".problems.json"))
                    row.flags = [f"{report.NOT_GRADED}: grading error ({problem})"
                                 for problem in json.loads(path.read_text())]  # fmt: skip
                    table.append(row)
        for row in table or []:
            if report.is_not_graded(row):
                reasons[assignment, row.student] = report.not_graded_reason(row)
    return reasons
