"""Grading a generated class: wall time per submission, and the speed-up of parallel sandboxes.

    python3 benchmarks/bench_grading.py                              # 40 students, every notebook
    python3 benchmarks/bench_grading.py --students 10 graph_construction --jobs 1 2
    python3 benchmarks/bench_grading.py graph_construction --dask    # also on Dask, 1 and 2 workers

For each assignment, a class of `--students` submissions is generated from the notebook itself:
the reference answers, the blank release, and the reference with each kept wrong answer in turn
(cycled). The class is graded with `python -m solutions grade` (in a fresh process, sandboxed as in
production), once per `--jobs` value, each time in a fresh copy of the released course. Printed:
seconds per submission at each worker count, the speed-up from the first to the last, and the
seconds per student of the chosen notebooks at the last worker count (benchmarks/printing.py's
format). The targets, marked `!!` when missed: at least 1.8x from 1 to 2 workers on 2 cores, and
at most 20 s per student for notebooks 1-4 at 2 workers.

Beside each speed-up it prints the machine's own ceiling, measured just before: how much more
work two processes of a plain Python loop get done at once than one alone (2.00x on two idle,
independent cores; less where the cores share a physical core or a neighbour is busy). Grading
cannot scale better than that.

With `--dask`, the class is also graded with `grade --dask` on a local Dask cluster (a
scheduler and one-thread workers, separate processes over TCP, started before the clock runs)
of 1 and 2 workers (or the counts given), printed beside local grading at as many jobs: the
ratio, and Dask's own cost per submission (the difference, per submission: connecting, each
worker's check, sending each task and its result).
"""

from __future__ import annotations

import argparse
import contextlib
import io
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
from printing import at_least, at_most, figure, machine_line, table, targets_line  # noqa: E402

from course.build import assignments  # noqa: E402

# The course's first four notebooks: the target is 20 s per student for them at 2 jobs.
FIRST_FOUR = ("graph_construction", "backward", "dynamic_models", "memory")


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


def grade_seconds(
    released: Path, assignment: str, students: int, jobs: int, dask: bool = False
) -> float:
    """Wall seconds of `python -m solutions grade` (a fresh process, as an instructor runs it,
    so nothing cached by an earlier run helps) on a fresh copy of the released course, with
    `--jobs jobs`, or with `dask`: `--dask` on a local cluster of `jobs` workers of one thread
    each, started (not timed) before the command (tests/dask_support.py)."""
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        course = shutil.copytree(released, Path(folder) / "course")
        generate_class(course, assignment, students, Path(folder) / "inbox")
        command = [sys.executable, "-m", "solutions", "--course", str(course), "grade"]
        command += [assignment, "--from", str(Path(folder) / "inbox")]
        if dask:
            from dask_support import LocalDaskCluster

            cluster = stack.enter_context(LocalDaskCluster(Path(folder)))
            for number in range(jobs):
                cluster.add_worker(f"worker-{number + 1}", {"PYTHONPATH": str(REPO_ROOT)})
            command += ["--dask", cluster.address]
        else:
            command += ["--jobs", str(jobs)]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command[3:])} failed:\n{done.stderr[-2000:]}")
        return seconds


CEILING_LOOP = """
import time
end, n = time.perf_counter() + 3, 0
while time.perf_counter() < end:
    n += 1
print(n)
"""


def parallel_ceiling(workers: int = 2) -> float:
    """How many times more loop iterations `workers` processes run in 3 s than one process."""

    def run(count: int) -> int:
        loops = [
            subprocess.Popen([sys.executable, "-c", CEILING_LOOP], stdout=subprocess.PIPE)
            for _ in range(count)
        ]
        return sum(int(loop.communicate()[0]) for loop in loops)

    return run(workers) / run(1)


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", default=None)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--dask", type=int, nargs="*", default=None, metavar="WORKERS",
        help="also grade with --dask on a local cluster of this many one-thread workers "
        "(default with --dask: the --jobs counts), compared with local grading at as many jobs",
    )  # fmt: skip
    args = parser.parse_args()
    dask = (args.dask or args.jobs) if args.dask is not None else []
    chosen = args.assignments or assignments()
    print(machine_line("cpu", f"Python {platform.python_version()}, {args.students} students "
                       "per assignment") + "\n")  # fmt: skip
    header = ["assignment", *(f"{j} job(s) s/submission" for j in args.jobs), "speed-up"]
    header.append(f"machine ceiling ({args.jobs[-1]} processes)")
    speed_up = at_least(1.8) if args.jobs[0] == 1 and args.jobs[-1] == 2 else None
    rows, per_student, dask_rows = [], {}, []
    with tempfile.TemporaryDirectory() as folder:
        for assignment in chosen:
            with contextlib.redirect_stderr(io.StringIO()):  # its "release written to" line
                released = build_release(Path(folder) / assignment / "course", [assignment])
            ceiling = parallel_ceiling(args.jobs[-1])
            seconds = [grade_seconds(released, assignment, args.students, j) for j in args.jobs]
            per_sub = [s / args.students for s in seconds]
            per_student[assignment] = per_sub[-1]
            speed = figure(seconds[0] / seconds[-1], "{:.2f}x", speed_up)
            rows.append([assignment, *(f"{s:.2f}" for s in per_sub), speed, f"{ceiling:.2f}x"])
            print(f"graded {assignment}: {' | '.join(rows[-1][1:])}", file=sys.stderr, flush=True)
            if dask:
                local = dict(zip(args.jobs, seconds, strict=True))
                row = [assignment]
                for workers in dask:
                    if workers not in local:
                        local[workers] = grade_seconds(released, assignment, args.students, workers)
                    on_dask = grade_seconds(released, assignment, args.students, workers, True)
                    extra = (on_dask - local[workers]) / args.students
                    row += [f"{on_dask / args.students:.2f}", f"{on_dask / local[workers]:.2f}x",
                            f"{extra:+.2f}"]  # fmt: skip
                dask_rows.append(row)
                print(f"graded {assignment} on Dask: {' | '.join(row[1:])}", file=sys.stderr)
    results = table(header, rows)
    print(results)
    if dask:
        dask_header = ["assignment"]
        for workers in dask:
            dask_header += [f"Dask {workers} worker(s) s/submission",
                            f"vs {workers} job(s)", "Dask's cost s/submission"]  # fmt: skip
        print("\n" + table(dask_header, dask_rows))
    last = f"at {args.jobs[-1]} job(s)"
    lines = [
        f"the {len(chosen)} chosen notebooks, per student {last}: {sum(per_student.values()):.1f} s"
    ]
    if set(FIRST_FOUR) <= set(per_student):  # the course target predates notebooks 5-6
        four = sum(per_student[a] for a in FIRST_FOUR)
        target = at_most(20) if args.jobs[-1] == 2 else None
        lines.append(f"notebooks 1-4, per student {last}: {figure(four, '{:.1f} s', target)}")
    print("\n" + "\n".join(lines))
    print(targets_line(results, *lines))


if __name__ == "__main__":
    main_bench()
