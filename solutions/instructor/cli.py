"""`python -m solutions <command>`: the instructor workflow in one command.

Commands (all take --course DIR, default: the repository's course/, before or after the
command, like --timeout and --budget):
  release ASSIGNMENT      build the student version into release/ (--exchange: also publish it)
  collect ASSIGNMENT      copy submissions into submitted/ (--from DIR, --zip LMS.zip, --exchange)
  autograde ASSIGNMENT    autograde every submission (a failing student never stops the batch),
                          each in a sandbox, --jobs at a time (default: one per core);
                          --no-sandbox only where bubblewrap cannot run (the table says so);
                          --results DIR: use the results `execute` left there;
                          --dask ADDRESS: run the sandboxes on a Dask cluster's workers
                          (each checked first; this process judges and records). Only what
                          changed since the last run is graded again (the table says
                          "reused"); --force grades everything again. Exit 1 when a
                          submission could not be graded
  execute ASSIGNMENT      only the sandboxed runs (--student S ..., --results DIR): what a batch
                          system runs per submission for a large class; grades nothing
  feedback ASSIGNMENT     write HTML feedback into feedback/
  export                  write nbgrader's grades CSV (--to FILE, default: <course>/grades.csv)
  report ASSIGNMENT       print the per-student table (score, max, flags)
  grade ASSIGNMENT        all of the above in order (every submission in submitted/ is
                          autograded, --force as for autograde), with a progress bar, ending
                          with the table and what needs action; exit 1 when a submission
                          could not be collected or graded
  similarity ASSIGNMENT   flag pairs of students with alike answers (--threshold, default 0.8);
                          writes reports/ASSIGNMENT/similarity.html, never changes a grade
  validate [ASSIGNMENT]   sources must pass every test, releases none; exits 1 otherwise.
                          Runs in a scratch copy: the course folder is left as it was
  leak-scan               releases, feedback and the wheel reveal nothing of solutions/; exit 1
  package-student [ASSIGNMENT]  release, then write what students get into --to DIR (dist/):
                          dyngraph-student.zip (wheel, notebooks, open_course.py) and
                          exchange/; exit 1, writing nothing, when the leak scan finds anything

--timeout SECONDS (per cell) and --budget SECONDS (per submission) bound what a submission
may take. A mistake (unknown assignment or student, missing folder or file) prints one `error:`
line and exits 2.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

from nbgrader.api import MissingEntry
from nbgrader.converters.base import NbGraderException

from solutions.instructor import (
    leaks,
    pipeline,
    report,
    similarity,
    student_package,
    uploads,
    validate,
)
from solutions.instructor.course import DEFAULT_COURSE_ROOT, CommandError, Course, open_course


def printable(text: str) -> str:
    """`text` as it may reach a terminal: each line through `uploads.shown`, so control and
    format characters that a file name or a notebook can carry (terminal escape codes,
    carriage returns, bidirectional overrides) are written as escapes such as \\x1b."""
    return "\n".join(uploads.shown(line, limit=sys.maxsize) for line in text.split("\n"))


def _say(message: str) -> None:
    print(printable(message), file=sys.stderr, flush=True)


def progress_bar(
    done: int, total: int, student: str, seconds: float, note: str = "", width: int = 30
) -> None:
    """Print one progress line per graded student: a bar, the count, the student, and its
    sandbox time or `note` ("reused": its result was kept from the last run)."""
    filled = width * done // max(total, 1)
    bar = "#" * filled + "." * (width - filled)
    _say(f"[{bar}] {done}/{total} {student} ({note or f'{seconds:.1f} s'})")


def _collect(course: Course, args: argparse.Namespace) -> pipeline.Collected:
    """Collect from --zip, --from or --exchange (whichever was given) and say what happened;
    return what was collected (nothing when no source was given)."""
    if getattr(args, "roster", None) and not args.zip:
        raise CommandError("--roster goes with --zip (it says who uploaded what on the LMS)")
    if args.zip:
        roster = Path(args.roster) if args.roster else None
        collected = pipeline.collect_zip(course, args.assignment, Path(args.zip), roster)
    elif args.from_dir:
        collected = pipeline.collect_folder(course, args.assignment, Path(args.from_dir))
    elif getattr(args, "exchange", False):
        collected = pipeline.collect_exchange(course, args.assignment)
    else:
        return pipeline.Collected()
    for warning in collected.warnings:
        _say(f"warning: {warning}")
    _say(f"collected {_count(collected.students, 'submission')}: {', '.join(collected.students)}")
    return collected


def _count(items: list, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _print_table(
    course: Course, assignment: str, rows: list[report.StudentRow] | None = None
) -> list[report.StudentRow]:
    rows = report.student_rows(course, assignment) if rows is None else rows
    print(printable(report.format_table(rows)))
    summary = report.write_csv(rows, course.root / "reports" / assignment / "summary.csv")
    _say(f"table written to {summary}")
    return rows


def cmd_release(course: Course, args: argparse.Namespace) -> int:
    path = pipeline.release(course, args.assignment, to_exchange=args.exchange)
    _say(f"release written to {path}")
    return 0


def cmd_collect(course: Course, args: argparse.Namespace) -> int:
    if not (args.zip or args.from_dir or args.exchange):
        raise CommandError("collect needs --from FOLDER, --zip LMS.zip or --exchange")
    _collect(course, args)
    students = course.students(args.assignment)
    _say(f"submitted/ now holds {_count(students, 'submission')} for {args.assignment}")
    return 0


def cmd_autograde(course: Course, args: argparse.Namespace) -> int:
    students = _known_students(course, args)
    results = pipeline.autograde(
        course, args.assignment, args.student or None, progress_bar, args.jobs, args.sandbox,
        _results_folder(args), force=args.force, dask=_dask_address(args),
    )  # fmt: skip
    _reused(results)
    rows = [r for r in report.student_rows(course, args.assignment) if r.student in students]
    failed = [student for student, result in results.items() if not result.get("success")]
    return 1 if _needs_action(course, args.assignment, [], rows) or failed else 0


def _reused(results: dict[str, dict]) -> None:
    """Say how many results were kept from the last run (NOTE [Incremental grading])."""
    reused = [student for student, result in results.items() if result.get("reused")]
    if reused:
        _say(f"reused the grading of {_count(reused, 'submission')} unchanged since the last "
             "run (the table says `reused`; --force grades everything again)")  # fmt: skip


def _dask_address(args: argparse.Namespace) -> str | None:
    """The Dask scheduler of --dask (None: grade on this machine)."""
    if args.dask and args.jobs:
        raise CommandError("--jobs is for grading on this machine; with --dask, each worker "
                           "runs as many submissions as it has threads: choose one")  # fmt: skip
    return args.dask


def _results_folder(args: argparse.Namespace) -> Path | None:
    if getattr(args, "force", False) and getattr(args, "results", None):
        raise CommandError("--force runs every sandbox again; --results uses results given: "
                           "choose one")  # fmt: skip
    return Path(args.results).resolve() if getattr(args, "results", None) else None


# What a skipped upload is: a file or a folder of a student's that was not collected.
_SKIPPED = re.compile(r"(^|: )skipped |not collected|none collected")


def _todo_for_skipped(warning: str) -> str:
    if "is not a student id" in warning:
        return "rename it with the student's id (letters, digits, . _ -) and collect it again"
    if "not <student>_<notebook>.ipynb" in warning:
        return "if it is a submission, rename it <student>_<notebook>.ipynb and collect it again"
    if "uploaded by" in warning or "uploaded files named for" in warning:
        return "check with the uploader whose file it is (--roster binds uploads to students)"
    if "roster" in warning:
        return "give --roster (who is who on the LMS) and collect again"
    return "fix what the reason says, or ask the student for a new file, and collect again"


def _needs_action(
    course: Course,
    assignment: str,
    warnings: list[str],
    rows: list[report.StudentRow],
    withheld: dict[str, list] | None = None,
) -> bool:
    """Print, on stderr, one block saying what needs the instructor: each upload skipped by
    this run's collect (from `warnings`), each submission not graded (the reason, its log and
    what to do) and each feedback withheld; True when there is any (`grade` exits 1)."""
    skipped = [warning for warning in warnings if _SKIPPED.search(warning)]
    ungraded = [row for row in rows if report.is_not_graded(row)]
    withheld = withheld or {}
    if not (skipped or ungraded or withheld):
        return False
    lines = ["", f"needs action ({assignment}; exit status 1):"]
    if skipped:
        lines.append(f"{_count(skipped, 'upload')} skipped (not collected, so not graded):")
        for warning in skipped:
            lines += [f"  {warning}", f"    -> {_todo_for_skipped(warning)}"]
    if ungraded:
        lines.append(f"{_count(ungraded, 'submission')} not graded (no grade given or exported):")
        for row in ungraded:
            reason = report.not_graded_reason(row)
            log = course.root / "reports" / assignment / "autograde" / f"{row.student}.log"
            lines.append(f"  {row.student}: {reason}")
            if any(flag.startswith(report.UNREADABLE) for flag in row.flags):
                todo = (f"ask {row.student} for a new file (theirs cannot be read; their "
                        "feedback says why), collect it and grade again")  # fmt: skip
            elif any(flag.startswith(report.MISSING_NOTEBOOK) for flag in row.flags):
                todo = f"ask {row.student} for the missing notebook, collect it and grade again"
            elif "grading error" in reason:
                todo = ("an error of the grading, not the student's: read the log, fix the "
                        "cause and grade again (what was graded is reused)")  # fmt: skip
            else:
                todo = "grade again"
            lines.append(f"    -> {todo}" + (f"; log: {log}" if log.is_file() else ""))
    for student, found in withheld.items():
        lines.append(f"  feedback of {student} withheld (it reveals solutions/: {found[0]})")
    if ungraded:
        names = ", ".join(row.student for row in ungraded)
        lines.append(f"not graded (see above and reports/{assignment}/autograde/): {names}")
    _say("\n".join(lines))
    return True


def _known_students(course: Course, args: argparse.Namespace) -> list[str]:
    """The students named by --student (all submitted ones without it); an unknown one is an
    error that names the submitted ones."""
    submitted = course.students(args.assignment)
    unknown = sorted(set(args.student or []) - set(submitted))
    if unknown:
        raise CommandError(
            f"no submission of {args.assignment} from {', '.join(unknown)} in submitted/: "
            f"collect it first (submitted: {', '.join(submitted)})"
        )
    return args.student or submitted


def cmd_execute(course: Course, args: argparse.Namespace) -> int:
    students = _known_students(course, args)
    folder = _results_folder(args)
    pipeline.execute(
        course, args.assignment, students, folder, args.jobs or 1, args.sandbox, progress_bar
    )
    _say(f"results of {_count(students, 'submission')} in {folder}")
    return 0


def cmd_feedback(course: Course, args: argparse.Namespace) -> int:
    if not any(
        course.folder("autograded", args.assignment, s).is_dir()
        for s in course.students(args.assignment)
    ):
        raise CommandError(f"nothing of {args.assignment} is autograded yet: run autograde first")
    _say(f"feedback written to {pipeline.feedback(course, args.assignment)}")
    return 0


def cmd_export(course: Course, args: argparse.Namespace) -> int:
    destination = Path(args.to) if args.to else course.root / "grades.csv"
    _say(f"grades written to {pipeline.export_csv(course, destination)}")
    return 0


def cmd_report(course: Course, args: argparse.Namespace) -> int:
    _print_table(course, args.assignment)
    return 0


def cmd_grade(course: Course, args: argparse.Namespace) -> int:
    start = time.perf_counter()
    if not pipeline.is_released(course, args.assignment):
        _say(f"building the release of {args.assignment}")
        pipeline.release(course, args.assignment)
    results = _results_folder(args)
    collected = _collect(course, args)
    students = course.students(args.assignment)  # also those collected earlier (e.g. --zip)
    if not students:
        raise CommandError(f"no submissions of {args.assignment}: give --from or --zip")
    dask = _dask_address(args)
    if dask is None:  # with Dask, each worker runs this check before it gets work
        pipeline.sandbox_problem(args.sandbox, args.assignment)
    where = f" on the Dask cluster at {dask}" if dask else ""
    _say(f"autograding {_count(students, 'submission')}{where}")
    graded = pipeline.autograde(
        course, args.assignment, students, progress_bar, args.jobs, args.sandbox, results,
        with_feedback=True, force=args.force, dask=dask,
    )  # fmt: skip
    _reused(graded)
    withheld = pipeline.withhold_leaking_feedback(course, args.assignment)
    for student, found in withheld.items():
        _say(f"withheld the feedback of {student}: {found[0]} ({len(found)} leaks)")
    if not withheld:
        _say("feedback checked: it reveals nothing of solutions/")
    rows = report.student_rows(course, args.assignment)
    destination = Path(args.to) if args.to else course.root / "grades.csv"
    pipeline.export_csv(course, destination, {args.assignment: rows})
    _say(f"feedback in {course.root / 'feedback'}, grades in {destination}")
    _print_table(course, args.assignment, rows)
    _say(_similarity(course, args.assignment, similarity.DEFAULT_THRESHOLD))  # stdout: grades only
    _say(f"done in {time.perf_counter() - start:.0f} s")
    needs_action = _needs_action(course, args.assignment, collected.warnings, rows, withheld)
    return 1 if needs_action else 0


def _similarity(course: Course, assignment: str, threshold: float) -> str:
    """Write the similarity report; return its table of flagged pairs."""
    found = similarity.similarity_report(course, assignment, threshold)
    _say(f"similarity report (flags only, no grade changed) written to {found.html}")
    return found.table(threshold)


def cmd_similarity(course: Course, args: argparse.Namespace) -> int:
    print(_similarity(course, args.assignment, args.threshold))
    return 0


def cmd_validate(course: Course, args: argparse.Namespace) -> int:
    """Validate in `course`, which `main` made as a scratch copy of the course's source/."""
    problems = []
    for assignment in args.assignment or course.assignments():
        release = pipeline.release(course, assignment)
        for notebook in course.notebooks(assignment):
            _say(f"validating {assignment}/{notebook}")
            source = course.folder("source", assignment) / f"{notebook}.ipynb"
            problems += validate.check_source(course, source)
            problems += validate.check_release(course, release / f"{notebook}.ipynb")
    for problem in problems:
        print(problem)
    _say("validation failed" if problems else "validation passed")
    return 1 if problems else 0


def cmd_package_student(course: Course, args: argparse.Namespace) -> int:
    destination = Path(args.to) if args.to else student_package.DEFAULT_DESTINATION
    package = student_package.build(course, args.assignment or course.assignments(), destination)
    for leak in package.leaks:
        print(leak)
    if package.leaks:
        _say(f"{len(package.leaks)} leaks found: no student package written")
        return 1
    _say(f"student package written to {package.zip_file}")
    _say(f"exchange folder (copy into nbgrader's exchange root) written to {package.exchange}")
    return 0


def cmd_leak_scan(course: Course, args: argparse.Namespace) -> int:
    wheel = Path(args.wheel) if args.wheel else None
    found = leaks.leak_scan(course, wheel=wheel)
    for leak in found:
        print(leak)
    _say(f"{len(found)} leaks found" if found else "no leaks found")
    return 1 if found else 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `python -m solutions`."""
    parser = argparse.ArgumentParser(
        prog="python -m solutions",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    _add_course_options(parser, default=None)
    # The same options after the command; SUPPRESS keeps a value given before the command.
    course_options = argparse.ArgumentParser(add_help=False)
    _add_course_options(course_options, default=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, handler, assignment: str = "required"):
        sub = commands.add_parser(name, parents=[course_options])
        if assignment == "required":
            sub.add_argument("assignment")
        elif assignment == "optional":
            sub.add_argument("assignment", nargs="*")
        sub.set_defaults(handler=handler)
        return sub

    command("release", cmd_release).add_argument("--exchange", action="store_true")
    for name, handler in (("collect", cmd_collect), ("grade", cmd_grade)):
        sub = command(name, handler)
        source = sub.add_mutually_exclusive_group()
        source.add_argument("--from", dest="from_dir", help="folder of <student>/ folders")
        source.add_argument("--zip", help="LMS download: <student>_<notebook>.ipynb files")
        sub.add_argument(
            "--roster",
            help="CSV id,first_name,last_name,lms_user_id: who is who on the LMS (with --zip); "
            "the gradebook's students are used too",
        )
        if name == "collect":
            source.add_argument("--exchange", action="store_true", help="nbgrader exchange")
        else:
            sub.add_argument("--to", help="grades CSV (default: <course>/grades.csv)")
    autograde = command("autograde", cmd_autograde)
    execute = command("execute", cmd_execute)
    execute.add_argument("--results", required=True, help="folder the results are written to")
    for sub in (autograde, commands.choices["grade"]):
        sub.add_argument("--results", help="results left by `execute` (not run again)")
        sub.add_argument(
            "--dask", metavar="ADDRESS",
            help="run the sandboxes on the workers of this Dask scheduler (tcp://host:8786); "
            "this process judges and records (pip install -e '.[dask]')",
        )  # fmt: skip
        sub.add_argument(
            "--force", action="store_true",
            help="grade every submission again (default: only what changed since the last run)",
        )  # fmt: skip
    for sub in (autograde, execute):
        sub.add_argument("--student", action="append", help="this student only (repeatable)")
    for sub in (autograde, execute, commands.choices["grade"]):
        sub.add_argument(
            "--jobs", type=int, default=None, help="submissions run at once (default: cores)"
        )
        sub.add_argument(
            "--no-sandbox", dest="sandbox", action="store_false",
            help="run submissions without bubblewrap (the table flags every student)",
        )  # fmt: skip
    command("feedback", cmd_feedback)
    command("export", cmd_export, assignment="none").add_argument("--to")
    command("report", cmd_report)
    command("validate", cmd_validate, assignment="optional").set_defaults(scratch_copy=True)
    command("package-student", cmd_package_student, assignment="optional").add_argument(
        "--to", help="folder for the zip and the exchange folder (default: dist/)"
    )
    command("similarity", cmd_similarity).add_argument(
        "--threshold", type=float, default=similarity.DEFAULT_THRESHOLD, help="0 to 1 (0.8)"
    )
    command("leak-scan", cmd_leak_scan, assignment="none").add_argument(
        "--wheel", help="scan this wheel instead of building one"
    )
    from solutions.instructor import hub  # a class on JupyterHub: deploy/jupyterhub/

    hub.add_parser(commands)
    return parser


def _add_course_options(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument("--course", type=Path, default=default, help="course folder (course/)")
    parser.add_argument(
        "--timeout", type=int, default=default, help="seconds per cell (config: 30)"
    )
    parser.add_argument(
        "--budget", type=float, default=default,
        help="seconds per submission, crash re-runs included (config: 300)",
    )  # fmt: skip


def copy_source(course_root: Path, scratch: Path) -> Path:
    """A new course folder in `scratch` holding a copy of `course_root`'s source/ only."""
    source = Path(course_root).resolve() / "source"
    if not source.is_dir():
        raise CommandError(f"{source.parent} is not a course folder: it has no source/ folder")
    shutil.copytree(source, scratch / "course" / "source")
    return scratch / "course"


def _run(course: Course, args: argparse.Namespace) -> int:
    """Check the named assignments, then run the command's handler on `course`."""
    named = getattr(args, "assignment", None)
    for assignment in [named] if isinstance(named, str) else named or []:
        course.check_assignment(assignment)
    return args.handler(course, args)


def _run_in_scratch_copy(args: argparse.Namespace, limits: dict) -> int:
    """Run the command on a scratch copy of the course's source/: the course folder is only
    read (no release/, gradebook rows or exchange/ left behind). Errors name the course
    folder, not the copy."""
    course_root = Path(args.course or DEFAULT_COURSE_ROOT).resolve()
    with tempfile.TemporaryDirectory(prefix="validate-") as scratch:
        root = copy_source(course_root, Path(scratch).resolve())
        try:
            return _run(open_course(root, **limits), args)
        except CommandError as error:
            raise CommandError(str(error).replace(str(root), str(course_root))) from None


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit status (1 when validation or the leak scan fails)."""
    args = build_parser().parse_args(argv)
    # nbgrader's gradebook triggers SQLAlchemy autoflush warnings that say nothing to a user.
    warnings.filterwarnings("ignore", module="nbgrader")
    warnings.filterwarnings("ignore", message=".*not in session.*")
    try:
        if args.command == "hub":  # needs no course folder: it makes its own
            return args.handler(None, args)
        limits = dict(timeout=args.timeout, budget=args.budget)
        if getattr(args, "scratch_copy", False):  # validate: never touch the course folder
            return _run_in_scratch_copy(args, limits)
        return _run(open_course(args.course, **limits), args)
    except CommandError as error:
        _say(f"error: {error}")
        return 2
    except (NbGraderException, MissingEntry) as error:  # an nbgrader step refused: say why
        _say(f"error: nbgrader: {error}")
        return 2
