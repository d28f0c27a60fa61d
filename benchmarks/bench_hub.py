"""A class on the hub, at scale: spawn time, memory per student server, fetch and submit latency,
grading throughput.

    python3 benchmarks/bench_hub.py                  # 30 students (as root)
    python3 benchmarks/bench_hub.py --students 10

It starts `python -m solutions hub --private` in a scratch folder (nothing outside it changes,
as in tests/test_hub.py, whose helpers it uses), and then, as a class would:
1. the instructor releases notebook 1 to the exchange;
2. every student's server is started through the Hub REST API, all at once (spawn time: from the
   request to the server answering as ready);
3. memory per student server: the resident memory of each student's processes (server and
   anything it started), read from /proc while all of them are up and idle;
4. every student fetches, saves answers with the contents API (the reference, or for every
   other student the reference with one kept wrong answer; no two notebooks alike), then
   submits, all within about a minute (each request's latency);
5. the instructor collects and grades the class with `grade --jobs 2` in the sandbox
   (submissions per minute, the whole command).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO_ROOT), str(REPO_ROOT / "tests")]

import course_support  # noqa: E402
from hub_support import start_hub  # noqa: E402
from printing import machine_line, table  # noqa: E402
from test_hub import ASSIGNMENT, free_port, run_as_instructor, write_answers  # noqa: E402

from solutions.graph_construction.wrong_answers import WRONG_ANSWERS  # noqa: E402


def resident_mib_of(user: str) -> float:
    """Resident memory (MiB) of every process whose environment names `user` as its hub user."""
    marker = f"JUPYTERHUB_USER={user}".encode()
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            if marker not in environ:
                continue
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:  # the process ended meanwhile
            continue
    return total / 1024


def answers_of(number: int) -> dict[str, str]:
    """Student `number`'s answers: the reference, with one kept wrong answer for every other
    student (cycling through them), and a comment of their own, so that no two submissions are
    the same notebook (`grade` runs identical notebooks once)."""
    source = course_support.COURSE_SOURCE / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    answers = course_support.reference_answers(nbformat.read(source, as_version=4))
    wrong = [(gid, a.source) for gid, kept in WRONG_ANSWERS.items() for a in kept]
    if number % 2:
        grade_id, source_text = wrong[(number // 2) % len(wrong)]
        answers[grade_id] = source_text
    first = next(iter(answers))
    answers[first] += f"\n# written by student {number + 1}\n"
    return answers


def summary(values: list[float], unit: str) -> str:
    """median (max) with a unit."""
    return f"{statistics.median(values):.2f} {unit} (max {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("error: run as root: the hub makes a Unix user per student")
    names = [f"student{i}" for i in range(1, args.students + 1)]
    folder = Path(tempfile.mkdtemp(prefix="dyngraph-hub-bench-", dir="/tmp"))
    folder.chmod(0o755)
    state = folder / "state"
    started = time.perf_counter()
    hub = start_hub(state, students=args.students, port=free_port(), seconds=300)
    hub_seconds = time.perf_counter() - started
    try:
        instructor = hub.start_server("instructor")
        course = state / "home" / "instructor" / "course"
        python = f"python -m solutions --course {course}"
        run_as_instructor(instructor, f"{python} release {ASSIGNMENT} --exchange")

        def spawn(name: str) -> tuple:
            begin = time.perf_counter()
            user = hub.start_server(name, seconds=600)
            return user, time.perf_counter() - begin

        begin = time.perf_counter()
        with ThreadPoolExecutor(len(names)) as pool:
            spawned = list(pool.map(spawn, names))
        all_up = time.perf_counter() - begin
        users = [user for user, _ in spawned]
        time.sleep(5)  # idle servers
        memory = [resident_mib_of(name) for name in names]

        def timed(user, action: str) -> float:
            begin = time.perf_counter()
            user.assignment_action(action, ASSIGNMENT)
            return time.perf_counter() - begin

        answers = {user.name: answers_of(number) for number, user in enumerate(users)}
        begin = time.perf_counter()
        with ThreadPoolExecutor(len(users)) as pool:
            fetches = list(pool.map(lambda u: timed(u, "fetch"), users))
            list(pool.map(lambda u: write_answers(u, answers[u.name]), users))
            submits = list(pool.map(lambda u: timed(u, "submit"), users))
        class_seconds = time.perf_counter() - begin

        run_as_instructor(instructor, f"{python} collect {ASSIGNMENT} --exchange")
        begin = time.perf_counter()
        graded = run_as_instructor(instructor, f"{python} grade {ASSIGNMENT} --jobs 2")
        grading = time.perf_counter() - begin
        rows = [line.split() for line in graded.splitlines() if line.startswith("student")]
        scores = [row[1] for row in rows if row[1].replace(".", "", 1).isdigit()]
    finally:
        hub.stop()
        shutil.rmtree(folder, ignore_errors=True)
    print(machine_line("cpu", f"{args.students} students, hub started in {hub_seconds:.0f} s"))
    print()
    rows = [
        ["server spawn (all requested at once)",
         summary([s for _, s in spawned], "s") + f"; all up in {all_up:.0f} s"],
        ["resident memory per student server (idle)", summary(memory, "MiB")
         + f"; {sum(memory) / 1024:.1f} GiB for the class"],
        ["fetch latency (all at once)", summary(fetches, "s")],
        ["submit latency (all at once)",
         summary(submits, "s") + f"; fetched, saved and submitted in {class_seconds:.1f} s"],
        ["grading (collect, then grade --jobs 2, sandboxed)",
         f"{grading:.0f} s for {len(scores)} submissions: "
         f"{len(scores) / grading * 60:.1f} per minute; scores "
         f"{sorted(set(scores))}"],
    ]  # fmt: skip
    print(table(["measure", f"{args.students} students"], rows))


if __name__ == "__main__":
    main()
