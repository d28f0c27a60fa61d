"""Grade one assignment on a running Dask cluster: wait for its workers, then run
`python -m solutions grade ASSIGNMENT --dask ADDRESS` (or `autograde`) from the repository root.

    python deploy/dask/run_grading.py [--course DIR] ASSIGNMENT [--address tcp://HOST:8786]
        [--min-workers N] [--wait-timeout SECONDS] [--autograde] [-- MORE GRADE OPTIONS]

Contract:
- Runs where the course folder is (the gradebook, `source/`, `submitted/`): the grading command
  is the only process that reads the reference, judges and writes. Workers get each submission's
  sandboxed run as bytes and send its result back; they see no course folder.
- ADDRESS is the scheduler's (`--address`, else $DASK_SCHEDULER_ADDRESS, which the Dask
  Kubernetes operator sets in a DaskJob's runner pod). TLS settings come from Dask's
  configuration ($DASK_DISTRIBUTED__COMM__TLS__*), as deploy/dask/slurm.py passes them.
- Waits until `--min-workers` workers are connected (default 1), at most `--wait-timeout`
  seconds; with fewer after that it grades on those there are, and with none it exits 2 and
  grades nothing. The grading command checks every worker (the sandbox pre-flight) before it
  gives it work.
- Exits with the grading command's status: 0 graded, 1 some submission could not be graded
  (named in its table), 2 nothing graded. Running it again grades only what is missing.

Needs `distributed` (the repository's `dask` extra) besides what grading needs.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def grading_command(
    assignment: str,
    address: str,
    course: str | None = None,
    autograde: bool = False,
    extra: Sequence[str] = (),
) -> list[str]:
    """The command that grades `assignment` on the cluster at `address`."""
    command = [sys.executable, "-m", "solutions"]
    if course is not None:
        command += ["--course", course]
    command += ["autograde" if autograde else "grade", assignment, "--dask", address]
    return [*command, *extra]


def wait_for_workers(address: str, minimum: int, timeout: float, security: Any = None) -> int:
    """Connect to the scheduler at `address` (with `security`, a distributed Security, for
    TLS; default: Dask's configuration) and wait, at most `timeout` seconds, until `minimum`
    workers are there; return how many are."""
    from distributed import Client  # the `dask` extra; imported here so --help needs none

    deadline = time.monotonic() + timeout
    # The scheduler may still be starting (a pod pulling its image): Client keeps trying to
    # connect until its timeout.
    with Client(address, timeout=max(1.0, timeout), security=security) as client:
        while True:
            count = len(client.nthreads())
            left = deadline - time.monotonic()
            if count >= minimum or left <= 0:
                return count
            print(f"{count} of {minimum} workers connected; waiting ({left:.0f} s left)")
            time.sleep(min(10.0, left))


def run_grading(
    assignment: str,
    address: str,
    course: str | None = None,
    autograde: bool = False,
    extra: Sequence[str] = (),
    min_workers: int = 1,
    wait_timeout: float = 1800.0,
    env: dict[str, str] | None = None,
    security: Any = None,
) -> int:
    """Wait for the workers, then run the grading command (in `env`, default: this process's
    environment); return its exit status."""
    try:
        count = wait_for_workers(address, min_workers, wait_timeout, security)
    except (OSError, TimeoutError) as error:  # no scheduler there, or TLS refused
        print(f"cannot reach the scheduler at {address}: {error}")
        return 2
    if count == 0:
        print(f"no worker connected to {address} within {wait_timeout:.0f} s: nothing graded")
        return 2
    if count < min_workers:
        print(f"only {count} of {min_workers} workers after {wait_timeout:.0f} s: grading on those")
    command = grading_command(assignment, address, course, autograde, extra)
    print("running:", shlex.join(command), flush=True)
    return subprocess.run(command, cwd=REPO_ROOT, env=env).returncode


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python deploy/dask/run_grading.py",
        description="Wait for a Dask cluster's workers, then grade ASSIGNMENT on it with "
        "`python -m solutions grade ASSIGNMENT --dask ADDRESS`.",
        epilog="Options after `--` go to the grading command as they are, e.g. "
        "`-- --force` or `-- --zip class.zip`.",
    )
    parser.add_argument("assignment")
    parser.add_argument(
        "--address",
        default=os.environ.get("DASK_SCHEDULER_ADDRESS"),
        help="the scheduler, e.g. tcp://host:8786 (default: $DASK_SCHEDULER_ADDRESS)",
    )
    parser.add_argument("--course", help="course folder (default: the repository's course/)")
    parser.add_argument(
        "--autograde", action="store_true", help="run `autograde` rather than `grade`"
    )
    parser.add_argument(
        "--min-workers", type=int, default=1, help="workers to wait for (default: 1)"
    )
    parser.add_argument(
        "--wait-timeout",
        type=float,
        default=1800.0,
        help="seconds to wait for them (default: 1800)",
    )
    return parser


def split_extra(argv: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """`argv` (default: the command line) cut at its first `--`: (ours, the grading command's)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        return argv, []
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


def main(argv: Sequence[str] | None = None) -> int:
    ours, extra = split_extra(argv)
    args = build_parser().parse_args(ours)
    if not args.address:
        print("no scheduler address: give --address or set DASK_SCHEDULER_ADDRESS")
        return 2
    return run_grading(
        args.assignment,
        args.address,
        course=args.course,
        autograde=args.autograde,
        extra=extra,
        min_workers=args.min_workers,
        wait_timeout=args.wait_timeout,
    )


if __name__ == "__main__":
    sys.exit(main())
