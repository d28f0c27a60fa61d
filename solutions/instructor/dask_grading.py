"""Grading on a Dask cluster: each submission's sandbox runs on a Dask worker.

NOTE [Grading on Dask]
`grade --dask ADDRESS` (and `autograde`) keeps everything that judges and writes in the one
grading process, as `--jobs` does (NOTE [Grading threads] in pipeline.py), and sends only the
sandboxed runs to the workers of the Dask scheduler at ADDRESS:
- A task carries what a sandbox needs as data: the prepared notebook's text, the sandbox's
  project files (`kernel_bytes`: the kernel half, never the reference, the judges or the
  gradebook; sent once per worker with `scatter`), the limits and whether to sandbox. It
  returns the result `execute` writes, as JSON text, with the `verdicts.digest` key the
  worker computed from what it received. The grading process uses a result only when that
  key is the one it computed itself, and writes it to the executions folder under that key,
  where nbgrader's autograde (in this process) finds it, as with `--results`. So a worker
  needs this project installed, bubblewrap and the same Python and libraries, but no shared
  filesystem and no course folder.
- Before a worker gets a task it runs the pre-flight of local grading (`sandbox.preflight`,
  with the files the tasks will carry) and compares its versions of Python and the grading
  libraries with this process's. A worker that fails is named once on stderr and gets
  nothing; workers that join later are checked when they appear.
- The grading process decides where each task runs (pinned to one worker, at most as many at
  once as the worker has threads) rather than leaving it to Dask, so that only checked workers
  grade and a task of a worker that disappears is run again on another (three times at most,
  then the student is flagged as a grading error, never graded).
- A task past its budget is the student's timeout, decided in the worker's sandbox as it is
  locally. A worker that does not answer within twice the budget (plus a minute) is a grading
  error for that student.
- When the scheduler goes away, or no checked worker is left for `NO_WORKER_SECONDS`, the run
  stops with one message: whatever was recorded stays recorded, and the results already back
  are kept, so grading again runs only what is missing.
"""

from __future__ import annotations

import json
import platform
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

from solutions.instructor.course import CommandError
from solutions.instructor.sandbox import (
    Execution,
    Limits,
    preflight,
    run_submission,
)
from solutions.instructor.verdicts import digest

# What a worker must share with the grading process for its results to be this run's.
VERSIONED = ("torch", "numpy", "nbformat", "nbclient", "ipykernel")
CONNECT_SECONDS = 30.0  # to reach the scheduler at the start
WAIT_FOR_WORKERS = 120.0  # seconds to wait at the start for one worker that passes its check
NO_WORKER_SECONDS = 300.0  # a run with no checked worker this long stops
ATTEMPTS = 3  # runs of one task on workers that died under it, before it is a grading error
POLL_SECONDS = 1.0


class SchedulerGone(CommandError):
    """The Dask scheduler went away, or no worker can grade: the run stops."""


def versions() -> dict[str, str]:
    """This process's Python and grading libraries (a worker's must be the same)."""
    found = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


# Run on a worker --------------------------------------------------------------------------------


def check_worker(
    assignment: str, files: dict[str, bytes], sandboxed: bool, wanted: dict[str, str]
) -> str:
    """On a worker: "" when it can run this run's sandboxes, else why not (one line)."""
    mine = versions()
    differ = [f"{name} {mine.get(name)} (grading: {want})" for name, want in wanted.items()
              if mine.get(name) != want]  # fmt: skip
    if differ:
        return "other versions: " + ", ".join(differ)
    if not sandboxed:
        return ""
    return preflight(assignment, files=files) or ""  # (bubblewrap is its first check)


@dataclass(frozen=True)
class KernelFiles:
    """The project files of a sandbox (`kernel_bytes`), as one piece of data for a worker."""

    files: dict[str, bytes]


def run_task(
    notebook: str, assignment: str, project: KernelFiles, limits: dict, sandboxed: bool
) -> str:
    """On a worker: run one prepared notebook (its text) in a sandbox holding `project`'s
    files; return JSON {"key": its digest, computed here, "execution": the result `execute`
    writes}."""
    files = project.files
    nb = nbformat.reads(notebook, as_version=4)
    bounds = Limits(**limits)
    key = digest(nb, assignment, bounds, sandboxed, files)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "notebook.ipynb"
        path.write_text(notebook, encoding="utf-8", errors="surrogatepass")
        execution = run_submission(path, assignment, bounds, sandboxed, files)
    return json.dumps({"key": key, "execution": asdict(execution)})


# Run in the grading process ----------------------------------------------------------------------


class DaskSandboxes:
    """The sandboxes of one grading run, on the checked workers of the Dask scheduler at
    `address` (NOTE [Grading on Dask]). `run` is called from many threads at once and blocks
    until that notebook's result is back; use it inside `with`."""

    def __init__(
        self,
        address: str,
        assignment: str,
        files: dict[str, bytes],
        limits: Limits,
        sandboxed: bool,
        say: Any = None,
    ) -> None:
        self.address = address
        self.assignment = assignment
        self.files = files
        self.limits = limits
        self.sandboxed = sandboxed
        self.say = say or (lambda message: print(message, file=sys.stderr, flush=True))
        self.threads = 256  # threads waiting on tasks; the workers' slots bound the real work
        self._changed = threading.Condition()
        self._slots: dict[str, int] = {}  # checked worker -> tasks it may take now
        self._files_on: dict[str, Any] = {}  # checked worker -> the files scattered to it
        self._checking: dict[str, Any] = {}  # worker -> its check's future
        self._names: dict[str, str] = {}  # every worker seen (checked or being checked)
        self._refused: dict[str, str] = {}  # worker -> why
        self._failed = ""  # why the run stops
        self._stop = threading.Event()
        self._client: Any = None
        self._monitor: threading.Thread | None = None
        self._without_workers_since: float | None = None

    # the run ----------------------------------------------------------------------------------

    def __enter__(self) -> DaskSandboxes:
        try:
            from distributed import Client
        except ImportError:
            raise CommandError("--dask needs dask.distributed: pip install -e '.[dask]'") from None
        try:
            self._client = Client(self.address, timeout=CONNECT_SECONDS, set_as_default=False)
        except (OSError, TimeoutError) as error:
            raise CommandError(
                f"cannot reach the Dask scheduler at {self.address}: {error}"
            ) from None
        start = time.monotonic()
        self._poll()
        while not self._slots and time.monotonic() - start < WAIT_FOR_WORKERS:
            time.sleep(POLL_SECONDS)
            self._poll()
        if not self._slots:
            self._client.close()
            refused = "; ".join(f"{self._name(w)}: {why}" for w, why in self._refused.items())
            raise CommandError(
                f"no Dask worker at {self.address} can grade after {WAIT_FOR_WORKERS:.0f} s "
                f"({refused or 'no worker joined'}): start workers in a clone of this project "
                "with bubblewrap and the same versions "
                "(`PYTHONPATH=$PWD dask worker ADDRESS --nthreads 1`)"
            )
        self._monitor = threading.Thread(target=self._watch, daemon=True)
        self._monitor.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join(timeout=10)
        try:
            self._client.close(timeout=10)
        except Exception:  # the scheduler may be gone already; nothing is left to tidy
            pass

    def describe(self) -> str:
        """The progress bar's addition: how many workers grade now."""
        with self._changed:
            count = len(self._slots)
        return f"on {count} worker{'' if count == 1 else 's'}"

    def run(self, prepared: NotebookNode, key: str) -> Execution:
        """The result of `prepared` (whose `verdicts.digest` is `key`), run on a checked
        worker; a grading error (`grader_error`) when no usable result came back. Raises
        SchedulerGone when the run must stop."""
        notebook = nbformat.writes(prepared)
        limits = asdict(self.limits)
        lost: list[str] = []
        while len(lost) < ATTEMPTS:
            worker = self._take_slot()
            try:
                answer = self._submit(notebook, limits, key, worker)
            finally:
                self._give_slot(worker)
            if answer is None:  # the worker went away under the task: run it elsewhere
                lost.append(self._name(worker))
                continue
            return self._result(answer, key, worker)
        return Execution(grader_error=f"the workers running it went away: {', '.join(lost)}")

    # one task ---------------------------------------------------------------------------------

    def _submit(self, notebook: str, limits: dict, key: str, worker: str) -> Execution | str | None:
        """Run one task on `worker`: see `_wait`."""
        with self._changed:
            files = self._files_on.get(worker)
        if files is None:  # it left since its slot was taken
            return None
        try:
            future = self._client.submit(
                run_task, notebook, self.assignment, files, limits, self.sandboxed,
                workers=[worker], allow_other_workers=False, pure=False,
                key=f"sandbox-{key[:16]}-{uuid.uuid4().hex[:8]}",
            )  # fmt: skip
        except Exception as error:
            self._check_failed()
            return Execution(grader_error=f"cannot send the task to Dask: {error}"[:500])
        return self._wait(future, worker)

    def _wait(self, future: Any, worker: str) -> Execution | str | None:
        """The task's answer (text), an Execution holding a grading error, or None when the
        worker went away before answering."""
        deadline = time.monotonic() + 2 * self.limits.wall_seconds + 60
        while True:
            try:
                return future.result(timeout=POLL_SECONDS)
            except TimeoutError:
                pass
            except Exception as error:  # the task raised on the worker, or the worker died
                there = self._still_there(worker)
                while there is None:  # no scheduler to ask: wait for the monitor's verdict
                    self._check_failed()
                    time.sleep(POLL_SECONDS)
                    there = self._still_there(worker)
                if self._gone(worker) or not there:
                    self._drop(worker)
                    return None  # (a task of a worker that died is cancelled at once)
                self._check_failed()
                return Execution(
                    grader_error=f"the task failed on worker "
                    f"{self._name(worker)}: {type(error).__name__}: {error}"[:500]
                )
            if self._gone(worker):
                future.cancel()
                return None
            self._check_failed()
            if time.monotonic() > deadline:
                future.cancel()
                return Execution(grader_error=f"worker {self._name(worker)} did not answer in "
                                 f"{2 * self.limits.wall_seconds + 60:.0f} s")  # fmt: skip

    def _result(self, answer: Execution | str, key: str, worker: str) -> Execution:
        if isinstance(answer, Execution):
            return answer
        try:
            data = json.loads(answer)
            execution = Execution(**data["execution"])
            theirs = data["key"]
        except (ValueError, TypeError, KeyError) as error:
            return Execution(grader_error=f"worker {self._name(worker)} sent an unreadable "
                             f"result ({type(error).__name__}: {error})"[:500])  # fmt: skip
        if theirs != key:  # it ran other files, limits or another notebook: never used
            return Execution(grader_error=f"worker {self._name(worker)} ran something else "
                             f"(key {str(theirs)[:12]}, expected {key[:12]})")  # fmt: skip
        return execution

    # workers ----------------------------------------------------------------------------------

    def _name(self, worker: str) -> str:
        name = self._names.get(worker, "")
        return f"{name} ({worker})" if name and name != worker else worker

    def _gone(self, worker: str) -> bool:
        with self._changed:
            return worker not in self._slots

    def _still_there(self, worker: str) -> bool | None:
        """Whether the scheduler still has `worker` (asked now, not at the last poll); None
        when the scheduler does not answer."""
        try:
            workers = self._client.scheduler_info(n_workers=-1).get("workers")
        except Exception:
            return None
        return None if workers is None else worker in workers

    def _check_failed(self) -> None:
        if self._failed:
            raise SchedulerGone(self._failed)

    def _drop(self, worker: str) -> None:
        """Give `worker` no more tasks (it left the scheduler)."""
        with self._changed:
            if self._slots.pop(worker, None) is not None:
                self._files_on.pop(worker, None)
                self.say(f"worker {self._name(worker)} left; its tasks run elsewhere")
            self._changed.notify_all()

    def _take_slot(self) -> str:
        with self._changed:
            while True:
                self._check_failed()
                free = [w for w, count in self._slots.items() if count > 0]
                if free:
                    worker = max(free, key=lambda w: self._slots[w])
                    self._slots[worker] -= 1
                    return worker
                self._changed.wait(timeout=POLL_SECONDS)

    def _give_slot(self, worker: str) -> None:
        with self._changed:
            if worker in self._slots:
                self._slots[worker] += 1
            self._changed.notify_all()

    def _watch(self) -> None:
        failures = 0
        while not self._stop.wait(POLL_SECONDS):
            try:
                self._poll()
                failures = 0
            except Exception as error:  # the scheduler is unreachable
                failures += 1
                if failures >= 3 or self._client.status in ("closed", "closing"):
                    self._fail(f"the Dask scheduler at {self.address} went away "
                               f"({type(error).__name__}: {error})")  # fmt: skip
                    return
            with self._changed:
                if self._slots:
                    self._without_workers_since = None
                elif self._without_workers_since is None:
                    self._without_workers_since = time.monotonic()
                elif time.monotonic() - self._without_workers_since > NO_WORKER_SECONDS:
                    self._fail(f"no worker of the Dask scheduler at {self.address} has been "
                               f"able to grade for {NO_WORKER_SECONDS:.0f} s")  # fmt: skip
                    return

    def _fail(self, why: str) -> None:
        with self._changed:
            self._failed = why
            self._changed.notify_all()

    def _poll(self) -> None:
        """Follow the scheduler's workers: check the new ones, take in those whose check
        passed, drop those that left."""
        if self._client.status in ("closed", "closing"):
            raise OSError("the client lost its scheduler")
        info = self._client.scheduler_info(n_workers=-1).get("workers")
        if info is None:
            raise OSError("the scheduler did not answer")
        for worker in [w for w in list(self._slots) if w not in info]:
            self._drop(worker)
        for worker, about in info.items():
            if worker in self._names:
                continue
            self._names[worker] = str(about.get("name", ""))
            self._checking[worker] = self._client.submit(
                check_worker, self.assignment, self.files, self.sandboxed, versions(),
                workers=[worker], allow_other_workers=False, pure=False,
                key=f"check-{uuid.uuid4().hex[:12]}",
            )  # fmt: skip
        for worker, future in list(self._checking.items()):
            if worker not in info:
                del self._checking[worker]
                continue
            if not future.done():
                continue
            del self._checking[worker]
            try:
                problem = future.result()
            except Exception as error:
                problem = f"its check failed: {type(error).__name__}: {error}"
            if problem:
                self._refused[worker] = problem
                self.say(f"warning: Dask worker {self._name(worker)} cannot grade and gets no "
                         f"tasks: {problem}")  # fmt: skip
                continue
            # Wrapped: a scattered dict would become one Dask key per file path.
            files = self._client.scatter(KernelFiles(self.files), workers=[worker], hash=False)
            with self._changed:
                self._files_on[worker] = files
                self._slots[worker] = int(info[worker].get("nthreads", 1)) or 1
                self._changed.notify_all()
