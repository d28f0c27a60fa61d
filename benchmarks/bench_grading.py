"""Grading a generated class: wall time per submission, and the speed-up of parallel sandboxes.

    python3 benchmarks/bench_grading.py                              # 40 students, every notebook
    python3 benchmarks/bench_grading.py --students 10 graph_construction --jobs 1 2

For each assignment, a class of `--students` submissions is generated from the notebook itself:
the reference answers, the blank release, and the reference with each kept wrong answer in turn
(cycled). The class is graded with `python -m solutions grade` (in a fresh process, sandboxed as in
production), once per `--jobs` value, each time in a fresh copy of the released course. Printed:
seconds per submission at each worker count, the speed-up from the first to the last, and the
whole course's seconds per student at the last worker count. The issue's targets: at least 1.8x
from 1 to 2 workers on 2 cores, and at most 20 s per student for the whole course at 2 workers.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO_ROOT), str(REPO_ROOT / "tests")]

from course_support import build_release, reference_answers, with_answers  # noqa: E402

from course.build import assignments  # noqa: E402


def generate_class(course: Path, assignment: str, students: int, inbox: Path) -> None:
    """`students` submissions of `assignment` in `inbox/<student>/<assignment>.ipynb`."""
    from importlib import import_module

    notebook = f"{assignment}.ipynb"
    source = nbformat.read(course / "source" / assignment / notebook, as_version=4)
    release = nbformat.read(course / "release" / assignment / notebook, as_version=4)
    reference = reference_answers(source)
    wrong = import_module(f"solutions.{assignment}.wrong_answers").WRONG_ANSWERS
    variants = [with_answers(release, reference), release]
    for grade_id, answers in wrong.items():
        for answer in answers:
            variants.append(with_answers(release, {**reference, grade_id: answer.source}))
    for number in range(students):
        path = inbox / f"student{number:03d}" / notebook
        path.parent.mkdir(parents=True)
        nbformat.write(variants[number % len(variants)], path)


def grade_seconds(released: Path, assignment: str, students: int, jobs: int) -> float:
    """Wall seconds of `python -m solutions grade` (a fresh process, as an instructor runs it,
    so nothing cached by an earlier run helps) on a fresh copy of the released course."""
    with tempfile.TemporaryDirectory() as folder:
        course = shutil.copytree(released, Path(folder) / "course")
        generate_class(course, assignment, students, Path(folder) / "inbox")
        command = [sys.executable, "-m", "solutions", "--course", str(course), "grade"]
        command += [assignment, "--from", str(Path(folder) / "inbox"), "--jobs", str(jobs)]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"grade {assignment} --jobs {jobs} failed:\n{done.stderr[-2000:]}")
        return seconds


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", default=None)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    chosen = args.assignments or assignments()
    machine = platform.processor() or platform.machine()
    print(f"{machine}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{args.students} students per assignment")  # fmt: skip
    header = "assignment".ljust(26) + "".join(f"{f'{j} job(s) s/sub':>16}" for j in args.jobs)
    print(header + f"{'speed-up':>10}")
    per_student = 0.0
    with tempfile.TemporaryDirectory() as folder:
        for assignment in chosen:
            with contextlib.redirect_stderr(io.StringIO()):  # its "release written to" line
                released = build_release(Path(folder) / assignment / "course", [assignment])
            seconds = [grade_seconds(released, assignment, args.students, j) for j in args.jobs]
            per_sub = [s / args.students for s in seconds]
            per_student += per_sub[-1]
            row = assignment.ljust(26) + "".join(f"{s:>16.2f}" for s in per_sub)
            print(row + f"{seconds[0] / seconds[-1]:>9.2f}x", flush=True)
    print(f"whole course ({len(chosen)} notebooks) per student at {args.jobs[-1]} job(s): "
          f"{per_student:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main_bench()
