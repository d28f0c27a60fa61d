"""Grade an assignment on a Slurm cluster: Dask workers as Slurm jobs (dask-jobqueue), the
grading process here.

    python deploy/dask/slurm.py ASSIGNMENT [--course DIR] [--workers 20] [--queue Q]
        [--account A] [--walltime 02:00:00] [--activate 'module load python/3.11'] ...
        [-- MORE GRADE OPTIONS]
    python deploy/dask/slurm.py ASSIGNMENT --job-script   # print the batch script, submit nothing
    python deploy/dask/slurm.py --serve                   # keep a cluster up, grade by hand

Run it on a login node that holds the course folder (the gradebook, `source/`, `submitted/`).
It starts a Dask scheduler in this process, asks Slurm for the workers, prints the scheduler's
address, waits for the first worker (`--min-workers`, at most `--wait-timeout` seconds: jobs
wait in Slurm's queue) and runs `python -m solutions [--course DIR] grade ASSIGNMENT --dask
ADDRESS` (or `autograde` with `--autograde`) as a child process, which checks and uses every
worker as it joins; when that ends it cancels the Slurm jobs and exits with its status (0
graded, 1 some submission not graded, 2 nothing graded). With
`--serve` it prints the address and the command and keeps the cluster until Ctrl-C, for an
instructor who runs the grading (several assignments, say) by hand.

Contract with the workers (what `grade --dask` needs of them):
- one Dask worker per core, each with one thread (`--nthreads 1`): a thread runs one
  submission's sandbox, about one core and up to 3 GiB, so a worker gets a core and
  `--memory-per-worker` (3.5 GiB: the sandbox's 3 GiB and the worker itself). One worker per
  Slurm job (the default) makes the job's memory limit bound that one sandbox: without root
  the sandbox has no cgroups of its own, and with several workers in a job one student's
  notebook could take the memory of another's;
- the same Python, torch and repository as this process (the grading process refuses a
  worker whose versions differ): the job activates the environment this process runs in
  (`--activate`, default: this virtual environment), goes to this repository and puts it on
  PYTHONPATH, so a shared home or project filesystem must hold both. The course folder is
  never read by the workers: each task carries its notebook, the sandbox's files and the
  limits as bytes and returns the result as JSON text;
- bubblewrap (`bwrap`) on every compute node and unprivileged user namespaces (sysctl
  user.max_user_namespaces > 0; Ubuntu 23.10+ also restricts them through AppArmor:
  kernel.apparmor_restrict_unprivileged_userns=0, or a profile for bwrap). A worker that
  cannot sandbox is named by the grading process's pre-flight and gets no tasks.
- The scheduler is reachable by anyone on the cluster's network who knows its port, and a
  Dask client runs code as you: it speaks TLS with certificates made for this run (mutual TLS:
  no certificate, no connection). The workers' copies go in `--secrets-dir` (default
  ~/.dyngraph-dask, mode 0700, on the shared home), the grading process's through Dask's
  configuration ($DASK_DISTRIBUTED__COMM__TLS__*). `--no-tls` only on a trusted network.

Figures (README, bench_grading, 2 cores; each notebook's seconds per submission with 1 job
less the 0.9 s the grading process spends recording and writing feedback): the six sandboxes
of one student take 6.3 + 9.6 + 9.1 + 7.6 + 10.8 + 8.5 = 51.9 s of one core, so 1,000 students
x 6 notebooks are 51,900 core-seconds (14.4 core-hours): 15 workers in an hour at full use, 20
with slack for the last tasks (a submission may run 300 s) and Dask's overhead. The grading
process records and writes feedback for one notebook at a time, 6,000 x 0.9 s = 90 minutes:
that is the floor, whatever the number of workers; 10 workers (51,900 / 5,400 s) keep up with
it. One assignment of 1,000: 15 minutes of recording, 12 workers keep up with the heaviest
notebook (memory, 10.8 s: 10,800 core-seconds), 4 finish it within the hour.

PBS or HTCondor: swap the class in `make_cluster`, `PBSCluster` takes the same arguments
(`queue` is the PBS queue, `account` its -A); `HTCondorCluster` has no queue, account or
walltime and wants `disk=` (e.g. "2GiB"). LSF, SGE and OAR have their classes too.

Needs `dask-jobqueue` and `distributed` (both in the repository's `dask` extra:
`pip install -e ".[course,dask]"`), and `cryptography` for TLS.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_grading import grading_command, run_grading, split_extra  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
TLS_ENV = {  # Dask's configuration as environment variables: the grading process's TLS files
    "ca_file": "DASK_DISTRIBUTED__COMM__TLS__CA_FILE",
    "cert": "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT",
    "key": "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY",
}


def default_activate() -> list[str]:
    """The line that activates this process's virtual environment in a job (none outside
    one: the job then runs this process's interpreter by its path)."""
    if sys.prefix != sys.base_prefix:
        return [f"source {shlex.quote(str(Path(sys.prefix) / 'bin' / 'activate'))}"]
    return []


def job_prologue(activate: Sequence[str]) -> list[str]:
    """What a worker job runs before `dask worker`: the environment, then this repository as
    the working folder and on PYTHONPATH (the workers import `solutions` from it)."""
    repo = shlex.quote(str(REPO_ROOT))
    return [*activate, f"cd {repo}", f'export PYTHONPATH={repo}"${{PYTHONPATH:+:$PYTHONPATH}}"']


def cluster_options(args: argparse.Namespace, security: Any = None) -> dict[str, Any]:
    """SLURMCluster's keyword arguments for these options (nothing is started here)."""
    per_job = args.workers_per_job
    options: dict[str, Any] = {
        "job_name": "dyngraph-grading",
        "cores": per_job,  # one core and one thread per worker: cores == processes
        "processes": per_job,
        "memory": f"{args.memory_per_worker * per_job:.2f}GiB",
        "walltime": args.walltime,
        "queue": args.queue,
        "account": args.account,
        "job_script_prologue": job_prologue(args.activate),
        "python": "python" if args.activate else sys.executable,
        "interface": args.interface,
        "local_directory": args.local_directory,
        "log_directory": args.log_directory,
        "scheduler_options": {"port": args.scheduler_port, "dashboard_address": ":0"},
    }
    if security is not None:
        options["security"] = security
        options["shared_temp_directory"] = str(args.secrets_dir)
    return options


def make_cluster(args: argparse.Namespace) -> Any:
    """Start the scheduler (in this process) of a cluster whose workers are Slurm jobs."""
    try:
        from dask_jobqueue import SLURMCluster  # PBS: PBSCluster; HTCondor: HTCondorCluster
    except ImportError:
        sys.exit("dask-jobqueue is not installed: pip install dask-jobqueue")
    security = None
    if args.tls:
        from distributed.security import Security

        try:
            security = Security.temporary()
        except ImportError:
            sys.exit("TLS needs the cryptography package: pip install cryptography")
        args.secrets_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        args.secrets_dir.chmod(0o700)
    return SLURMCluster(**cluster_options(args, security))


def client_tls_env(cluster: Any, folder: Path) -> dict[str, str]:
    """The grading process's TLS settings: the cluster's client certificate and key, and the
    authority, written (0600) into `folder`, named in Dask's configuration variables."""
    security = cluster.security
    if security is None or not security.require_encryption:
        return {}
    env = {"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True"}
    for key, value in security.get_tls_config_for_role("client").items():
        if key in TLS_ENV and value:
            if "\n" in value:  # a certificate in memory (Security.temporary): write it out
                path = folder / f"client-{key}.pem"
                with os.fdopen(
                    os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w"
                ) as f:
                    f.write(value)
                value = str(path)
            env[TLS_ENV[key]] = value
    return env


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python deploy/dask/slurm.py",
        description="Grade ASSIGNMENT with Dask workers started as Slurm jobs "
        "(`python -m solutions grade ASSIGNMENT --dask ADDRESS`).",
        epilog="Options after `--` go to the grading command as they are, e.g. `-- --force`. "
        "See the docstring of deploy/dask/slurm.py for what the workers need.",
    )
    parser.add_argument("assignment", nargs="?", help="the assignment to grade")
    parser.add_argument("--course", help="course folder (default: the repository's course/)")
    parser.add_argument("--autograde", action="store_true", help="run `autograde`, not `grade`")
    jobs = parser.add_argument_group("workers (Slurm jobs)")
    jobs.add_argument("--workers", type=int, default=20, help="workers to start (default: 20)")
    jobs.add_argument(
        "--workers-per-job",
        type=int,
        default=1,
        help="workers (one core each) per Slurm job (default: 1, see the docstring)",
    )
    jobs.add_argument(
        "--memory-per-worker",
        type=float,
        default=3.5,
        metavar="GIB",
        help="GiB per worker (default: 3.5: a 3 GiB sandbox and the worker)",
    )
    jobs.add_argument("--walltime", default="02:00:00", help="per job (default: 02:00:00)")
    jobs.add_argument("--queue", help="Slurm partition (-p)")
    jobs.add_argument("--account", help="Slurm account (-A)")
    jobs.add_argument(
        "--activate",
        action="append",
        metavar="LINE",
        help="a shell line that sets up the environment in a job, e.g. 'module load "
        "python/3.11' or 'source ~/dyngraph/.venv/bin/activate' (repeatable; default: "
        "activate this virtual environment)",
    )
    jobs.add_argument("--interface", help="network interface for Dask, e.g. ib0")
    jobs.add_argument("--local-directory", help="workers' scratch folder, e.g. $TMPDIR")
    jobs.add_argument("--log-directory", help="where the jobs' output goes")
    net = parser.add_argument_group("scheduler")
    net.add_argument(
        "--scheduler-port", type=int, default=8786, help="port (default: 8786; 0: any)"
    )
    net.add_argument(
        "--no-tls", dest="tls", action="store_false", help="plain TCP (a trusted network only)"
    )
    net.add_argument(
        "--secrets-dir",
        type=Path,
        default=Path.home() / ".dyngraph-dask",
        help="a private folder the compute nodes can read, for this run's TLS "
        "certificates (default: ~/.dyngraph-dask)",
    )
    run = parser.add_argument_group("run")
    run.add_argument(
        "--min-workers",
        type=int,
        default=1,
        help="workers to wait for before grading (default: 1; the others join as they start)",
    )
    run.add_argument(
        "--wait-timeout",
        type=float,
        default=1800.0,
        help="seconds to wait for them (default: 1800); then grade on those there are",
    )
    run.add_argument(
        "--job-script",
        action="store_true",
        help="print the Slurm batch script a worker job would run, submit nothing",
    )
    run.add_argument(
        "--serve",
        action="store_true",
        help="start the workers, print the address and the grading command, keep the cluster "
        "until Ctrl-C",
    )
    return parser


def parse_args(argv: Sequence[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    ours, extra = split_extra(argv)
    parser = build_parser()
    args = parser.parse_args(ours)
    if args.assignment is None and not (args.job_script or args.serve):
        parser.error("give the ASSIGNMENT to grade (or --serve, or --job-script)")
    if args.workers < 1 or args.workers_per_job < 1:
        parser.error("--workers and --workers-per-job must be at least 1")
    if args.activate is None:
        args.activate = default_activate()
    return args, extra


def serve(cluster: Any, env: dict[str, str], args: argparse.Namespace, extra: list[str]) -> int:
    """Keep the cluster until Ctrl-C, saying how to grade on it."""
    command = grading_command(
        args.assignment or "ASSIGNMENT", cluster.scheduler_address, args.course, args.autograde
    )
    print("Grade on it from this machine, from the repository root:")
    for name, value in env.items():
        print(f"  export {name}={shlex.quote(value)}")
    print("  " + shlex.join([*command, *extra]))
    print("Ctrl-C cancels the Slurm jobs.")
    try:
        while True:
            time.sleep(60)
            print(f"{len(cluster.scheduler_info.get('workers', {}))} workers connected")
    except KeyboardInterrupt:
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    args, extra = parse_args(argv)
    if not args.job_script and shutil.which("sbatch") is None:
        print("sbatch is not on PATH: run this on a Slurm login node (--job-script works anywhere)")
        return 2
    cluster = make_cluster(args)
    try:
        if args.job_script:
            print(cluster.job_script())
            return 0
        print(f"scheduler: {cluster.scheduler_address} (dashboard: {cluster.dashboard_link})")
        cluster.scale(n=args.workers)  # whole jobs of --workers-per-job workers
        jobs = -(-args.workers // args.workers_per_job)
        print(f"asked Slurm for {jobs} job(s) of {args.workers_per_job} worker(s)", flush=True)
        private = args.secrets_dir if args.tls else None
        with tempfile.TemporaryDirectory(dir=private, prefix="client-") as folder:
            env = client_tls_env(cluster, Path(folder))
            if args.serve:
                return serve(cluster, env, args, extra)
            return run_grading(
                args.assignment,
                cluster.scheduler_address,
                course=args.course,
                autograde=args.autograde,
                extra=extra,
                min_workers=args.min_workers,
                wait_timeout=args.wait_timeout,
                env={**os.environ, **env},
                security=cluster.security,
            )
    finally:
        cluster.close()  # cancels the jobs still queued or running


if __name__ == "__main__":
    sys.exit(main())
