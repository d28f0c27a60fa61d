"""The steps of the instructor workflow: release, collect, autograde, feedback, export."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator
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

from solutions.instructor import admission, uploads
from solutions.instructor.admission import ADMITTED, admitted_folder
from solutions.instructor.course import CommandError, Course, check
from solutions.instructor.sandbox import Limits, bwrap_available, run_submission
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


ProgressCallback = Callable[[int, int, str, float], None]


def sandbox_problem(sandbox: bool) -> None:
    """Refuse to grade when the sandbox is asked for and cannot run."""
    if sandbox and (problem := bwrap_available()):
        raise CommandError(
            f"cannot sandbox the submissions: {problem}. Install it, or grade without a sandbox "
            "with --no-sandbox (the table then says so for every student)"
        )


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


def record_problem(course: Course, assignment: str, student: str, problem: str) -> None:
    path = problems_file(course, assignment, student)
    known = json.loads(path.read_text()) if path.is_file() else []
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([*known, problem]))


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:500]


@contextlib.contextmanager
def _for_student(course: Course, assignment: str, student: str, step: str) -> Iterator[None]:
    """One student's failure boundary: an exception of `step` is recorded as that student's
    grading error (see NOTE [Grading threads]) and goes no further."""
    try:
        yield
    except Exception as error:
        record_problem(course, assignment, student, f"{step}: {_describe(error)}")


def _sandbox_work(
    course: Course, assignment: str, student: str, limits: Limits, sandbox: bool, cache: Path
) -> list[tuple[NotebookNode, Path]]:
    """Admit `student`'s submission and prepare each notebook; return the (prepared notebook,
    result file) pairs still to run. Main thread only (it parses)."""
    problems_file(course, assignment, student).unlink(missing_ok=True)
    admission.admit(course, assignment, student)
    work = []
    for notebook in course.notebooks(assignment):
        if not (admitted_folder(course, assignment, student) / f"{notebook}.ipynb").is_file():
            continue  # missing: nbgrader's autograde scores it 0, `report` flags it
        prepared = prepare(_to_execute(course, assignment, student, notebook))
        result = cache / f"{digest(prepared, assignment, limits, sandbox)}.json"
        if not result.is_file() and not admission.unreadable_reason(prepared):
            work.append((prepared, result))
    return work


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
    there already is not run again. `then(student)` runs in the calling thread as soon as that
    student's sandboxes are done, while the others still run. A failure while handling one
    student is recorded as that student's grading error, never stops the others."""
    limits = SandboxedAutograde(config=course.config).limits()
    sandbox = course.config.SandboxedAutograde.sandbox

    def run(student: str, work: list[tuple[NotebookNode, Path]]) -> tuple[str, float, str]:
        start = time.perf_counter()
        try:
            for prepared, result in work:
                with tempfile.TemporaryDirectory() as folder:
                    path = Path(folder) / "notebook.ipynb"
                    nbformat.write(prepared, path)
                    execution = run_submission(path, assignment, limits, sandboxed=sandbox)
                partial = result.with_suffix(f".{uuid.uuid4().hex}.partial")  # never half a file
                partial.write_text(json.dumps(asdict(execution)))
                partial.replace(result)
        except Exception as error:  # ours (the sandbox could not start, a full disk, ...)
            return student, time.perf_counter() - start, f"sandbox: {_describe(error)}"
        return student, time.perf_counter() - start, ""

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = []
        for student in students:
            work: list[tuple[NotebookNode, Path]] = []
            with _for_student(course, assignment, student, "admission"):
                work = _sandbox_work(course, assignment, student, limits, sandbox, cache)
            futures.append(pool.submit(run, student, work))
        for number, future in enumerate(as_completed(futures), start=1):
            student, seconds, problem = future.result()
            if problem:
                record_problem(course, assignment, student, problem)
            if then is not None:
                with _for_student(course, assignment, student, "recording"):
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
    them without running anything again. Writes nothing else of the course but admitted/."""
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

    Each submission is admitted (NOTE [Admission] in admission.py) and runs in its own
    sandbox, `jobs` at a time (default: one per core), unless `results` already holds its
    result (left by `execute`); as each one finishes, nbgrader's autograde, one student at a
    time in this process, reads the admitted notebook, judges the hidden tests and writes the
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
    outcome = {student: {"success": False, "error": "not graded"} for student in students}

    def record(student: str) -> None:  # one student at a time, while other sandboxes run
        if problems_file(course, assignment, student).is_file():
            return  # its admission or sandbox failed: no grade rather than a wrong one
        with temp_attrs(course.coursedir, submitted_directory=ADMITTED):
            result = course.api.autograde(assignment, student, force=True, create=True)
        log = result.get("log", "") + result.get("error", "")
        if not result.get("success"):  # nbgrader refused: say why in the table, too
            last = (result.get("error") or "").strip().splitlines()[-1:] or ["no error given"]
            record_problem(course, assignment, student, f"nbgrader autograde: {last[0]}")
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


def export_csv(course: Course, destination: Path) -> Path:
    """Export the gradebook (every assignment and student) as nbgrader's grades CSV, with one
    more column, `not_graded`: for a submission whose grading failed (a grading error, see
    NOTE [Grading threads]) it holds the reason and the scores are left empty, since nbgrader
    would write 0, a grade nobody gave."""
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    plugin = CsvExportPlugin(parent=course.api)
    plugin.to = str(destination)
    with Gradebook(course.coursedir.db_url, course.coursedir.course_id) as gradebook:
        plugin.export(gradebook)
    if not destination.is_file():
        raise CommandError(f"export did not write {destination}")
    with open(destination, newline="") as handle:
        reader = csv.DictReader(handle)
        columns, rows = [*(reader.fieldnames or []), "not_graded"], list(reader)
    listed = {(row["assignment"], row["student_id"]) for row in rows}
    for problems in sorted(course.root.glob("reports/*/autograde/*.problems.json")):
        assignment, student = problems.parts[-3], problems.name.removesuffix(".problems.json")
        if (assignment, student) not in listed:  # never recorded by nbgrader: add its row
            rows.append({"assignment": assignment, "student_id": student})
    for row in rows:
        problems = problems_file(course, row["assignment"], row["student_id"])
        reasons = json.loads(problems.read_text()) if problems.is_file() else []
        row["not_graded"] = "; ".join(reasons)
        if row["not_graded"]:
            row["raw_score"] = row["score"] = ""
    with open(destination, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return destination
