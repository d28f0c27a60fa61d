"""Run one submission in a sandbox: bubblewrap for what it sees, cgroups for what it may use.

NOTE [Grading sandbox]
Every submitted notebook is hostile code. `run_submission` executes it, hidden tests included, in
a bubblewrap sandbox (Debian's `bwrap`) that
- sees a read-only system (/usr, /etc, the Python installation) and a read-only copy of just the
  kernel half of the project (`project_copy`: minitorch, solutions/grading.py, the assignment's
  grade.py, the notebook source reduced to its locked cells): no reference, judge, wrong answers,
  gradebook, other submissions, instructor home or environment;
- has no network, a fresh pid namespace (when it ends, every process it started dies), and a
  private writable home on a tmpfs of bounded size that vanishes with it;
- runs as an unprivileged user (nobody) even when grading runs as root;
- lives in its own memory and pids cgroups when grading runs as root (limits for the whole
  process tree, and the peak memory for the instructor's table), under one wall-clock budget for
  the whole submission, crash re-runs included.
Only this process (the parent) reads the result, and only as data: each cell's outputs and the
hidden tests' observations, streamed by run_notebook.py as JSON lines and capped in size. The
verdicts are decided from it in solutions/instructor/verdicts.py, and the gradebook is written by
nbgrader in the parent.

NOTE [Grader errors]
A sandbox can fail for reasons that are not the student's: bubblewrap cannot start, the sandbox
does not see the interpreter (a venv under /tmp was hidden by the private /tmp once, and every
student got 0), the runner cannot import nbclient, a kernel cannot start, the runner has a bug.
None of that may become a grade. The runner says `{"ready": true}` once its imports are done,
before any student code runs, and `{"runner_error": ...}` when it dies of an exception of its
own (the first kernel failing to start included). A run without `ready`, or with
`runner_error`, is a grader error (`Execution.grader_error`): the student is not graded and the
sandbox's stderr (its last 64 KiB, `Execution.stderr`) goes into the student's log. Everything
else stays the student's, as before: a kernel killed by the notebook, the memory limit, the time
budget. A student can only turn their own run into "not graded" (never into a grade) by making
the runner raise. `preflight` runs the very interpreter, runner and kernel a submission gets, in
a sandbox with the same mounts, once per grading command, and refuses to grade with one line
when they do not work.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from solutions.instructor.python_view import command_path, python_folders
from solutions.reference_cells import without_answers

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("run_notebook.py")
CGROUPS = Path("/sys/fs/cgroup")
NOBODY = 65534
HOME = "/home/student"
GRADING = "/grading"
ADDRESS_SPACE = 4 * 2**30  # per kernel process; torch alone reserves more than it uses
SYSTEM = ("/usr", "/etc", "/bin", "/lib", "/lib64", "/sbin")  # bound read-only as they are
SCRATCH = ("/tmp", HOME)  # private tmpfs, bounded, gone with the sandbox
STDERR_KEPT = 64 * 2**10  # the last bytes of a sandbox's stderr, for the student's log


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or does not work here."""


@dataclass(frozen=True)
class Limits:
    """What one submission may use. The wall-clock budget covers every re-run."""

    wall_seconds: float = 300.0
    cell_seconds: int = 60
    memory_bytes: int = 3 * 2**30
    processes: int = 128
    disk_bytes: int = 256 * 2**20
    result_bytes: int = 64 * 2**20


@dataclass
class Execution:
    """What came back from one sandboxed run: outputs per cell index, the hidden tests'
    observation lines, and flags for the instructor's table."""

    outputs: dict[int, list] = field(default_factory=dict)
    observations: str = ""
    crashed: list[int] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    seconds: float = 0.0
    memory_peak_bytes: int | None = None
    finished: bool = False
    started: bool = False  # the runner's imports worked (its "ready" line came)
    stderr: str = ""  # the sandbox's stderr: bwrap, setpriv, the runner (never the kernel's)
    runner_error: str = ""  # the runner's own exception, as it reported it
    grader_error: str = ""  # why the run failed, when not for the student (NOTE [Grader errors])


def kernel_files(assignment: str) -> dict[str, Path | str]:
    """The files of the project a sandbox of `assignment` holds: {relative path: source file or
    text}. An allowlist: anything not named here is not there."""
    files: dict[str, Path | str] = {}
    for path in sorted((REPO_ROOT / "minitorch").rglob("*.py")):
        files[str(path.relative_to(REPO_ROOT))] = path
    for name in ("solutions/__init__.py", "solutions/grading.py", "solutions/reference_cells.py"):
        files[name] = REPO_ROOT / name
    files["run_notebook.py"] = RUNNER
    package = REPO_ROOT / "solutions" / assignment
    if not assignment or not (package / "grade.py").is_file():  # plain hidden asserts
        return files
    files[f"solutions/{assignment}/__init__.py"] = package / "__init__.py"
    files[f"solutions/{assignment}/grade.py"] = package / "grade.py"
    files[f"course/notebooks/{assignment}.py"] = without_answers(assignment)
    return files


def kernel_bytes(assignment: str) -> dict[str, bytes]:
    """`kernel_files` read: {relative path: content}, what a sandbox of `assignment` holds (a
    Dask task carries it to a worker; see NOTE [Grading on Dask] in dask_grading.py)."""
    return {
        relative: source.read_bytes() if isinstance(source, Path) else source.encode()
        for relative, source in kernel_files(assignment).items()
    }


def project_copy(destination: Path, files: dict[str, bytes]) -> Path:
    """Write the sandbox's read-only project (`files`, from `kernel_bytes`) into
    `destination`."""
    for relative, content in files.items():
        target = destination / relative
        if not target.resolve().is_relative_to(destination.resolve()):
            raise ValueError(f"a project file outside the project: {relative!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    for path in [destination, *destination.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return destination


def bwrap_available() -> str | None:
    """None when bubblewrap runs here, else why not (for the refusal message)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed: apt-get install -y bubblewrap"
    probe = subprocess.run(
        [*_bwrap_prefix(Path("/"), Path("/")), "true"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        return f"bubblewrap does not work here: {probe.stderr.strip()}"
    return None


PREFLIGHT_OK = "course-preflight: the kernel imports what grading needs"
_PREFLIGHT_PASSED: set[tuple[str, str, str, str]] = set()


def preflight(
    assignment: str | None = None, python: str | None = None, files: dict[str, bytes] | None = None
) -> str | None:
    """None when submissions can be graded here, else one line: what failed, what the sandbox
    hides, how to fix it (the refusal to grade).

    It runs what every submission runs, in a sandbox with the same mounts, user and limits: the
    grading runner (run_notebook.py) under `python` (default: this process's interpreter, which
    `run_submission` uses), importing nbformat and nbclient, then a kernel that imports torch,
    minitorch, solutions.grading and `assignment`'s kernel half (`files`, default
    `kernel_bytes(assignment)`), on a notebook of one cell. About 4 s, once per process,
    interpreter and set of files (a pass is remembered)."""
    if problem := bwrap_available():
        return problem
    bound = [Path(folder) for folder in (*SYSTEM, *_python_roots()) if os.path.exists(folder)]
    for root in bound:  # what _bwrap_prefix shows besides the project copy
        if REPO_ROOT.resolve().is_relative_to(root.resolve()):
            return (
                f"the grading sandbox shows {root} to every student, and it holds this "
                "repository (the reference solutions): clone the repository outside it, or "
                "use a venv made elsewhere (python3 -m venv)"
            )
    python = python or sys.executable
    files = kernel_bytes(assignment or "") if files is None else files
    contents = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()
    key = (python, assignment or "", shutil.which("bwrap") or "", contents)
    if key in _PREFLIGHT_PASSED:
        return None
    imports = ["torch", "minitorch", "solutions.grading"]
    if assignment and f"solutions/{assignment}/grade.py" in files:
        imports.append(f"solutions.{assignment}.grade")
    source = f"import sys\nprint(sys.executable)\nimport {', '.join(imports)}\n"
    source += f"print({PREFLIGHT_OK!r})\n"
    import nbformat  # the grading process has it; this module's importers need not

    limits = Limits(wall_seconds=120, cell_seconds=60)
    with tempfile.TemporaryDirectory(prefix="course-preflight-") as folder:
        notebook = Path(folder) / "notebook.ipynb"
        nbformat.write(
            nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)]), notebook
        )
        execution = _execute(notebook, files, limits, True, python)
    if execution.grader_error:
        return _cannot_start(python, execution)
    printed = ""
    for output in execution.outputs.get(0, []):
        if output.get("output_type") == "error":
            printed += f"{output.get('ename')}: {output.get('evalue')}\n"
        else:
            printed += str(output.get("text", ""))
    if PREFLIGHT_OK in printed:
        _PREFLIGHT_PASSED.add(key)
        return None
    kernel = printed.splitlines()[0] if printed.strip() else "?"
    why = _last_line(printed) or "; ".join(execution.flags) or "it printed nothing"
    return (
        f"a kernel in the grading sandbox (Python {kernel}) cannot run what grading needs "
        f"({why}): install the course's packages into the Python that grades ({sys.prefix}: "
        "pip install -e '.[course]'), and check that `jupyter kernelspec list` shows no "
        "python3 kernel of another Python"
    )


def _cannot_start(python: str, execution: Execution) -> str:
    """The refusal when the runner never started or crashed in the preflight's sandbox."""
    real = os.path.realpath(python)
    seen = [folder for folder in (*SYSTEM, *_python_roots()) if os.path.exists(folder)]
    error = execution.grader_error
    if not os.path.exists(real):
        return (
            f"the grading Python {python} does not exist ({real} is missing; {error}): make the "
            "venv again (python3 -m venv --clear) or grade with a Python that exists"
        )
    visible = [*seen, *map(os.path.realpath, seen)]
    hidden = [hop for hop in _links(python) if not _under(hop, visible)]
    if hidden:
        return (
            f"the grading sandbox cannot start Python {python}: it leads through {hidden[0]}, "
            f"which the sandbox does not see (it sees only {', '.join(seen)}; {error}): grade "
            "with a Python whose files are under its sys.prefix, such as a venv made by "
            "`python3 -m venv` from an installed Python"
        )
    if _last_line(execution.stderr).startswith("bwrap:"):
        return f"bubblewrap does not work here ({error})"
    return (
        f"the grading sandbox cannot run the grader with Python {python} ({error}): install "
        f"the course's packages into it ({sys.prefix}: pip install -e '.[course]'); the "
        f"sandbox sees only {', '.join(seen)}"
    )


def _links(path: str) -> list[str]:
    """`path` and every path its chain of links goes through, to the file itself."""
    chain = [os.path.abspath(path)]
    while os.path.islink(chain[-1]) and len(chain) < 40:
        target = os.readlink(chain[-1])
        chain.append(os.path.normpath(os.path.join(os.path.dirname(chain[-1]), target)))
    return chain


def _python_roots() -> list[str]:
    """The folders of the running Python the sandbox binds (NOTE [Python view]), except those
    under a system folder, which the sandbox shows already."""
    folders = python_folders(hidden=[REPO_ROOT])
    return [str(folder) for folder in folders if not _under(str(folder), SYSTEM)]


def _under(path: str, folders: tuple[str, ...] | list[str]) -> bool:
    return any(Path(path).is_relative_to(folder) for folder in folders)


def _python_binds() -> list[str]:
    """bwrap's arguments binding `_python_roots` read-only. They come after the tmpfs mounts of
    SCRATCH: bwrap mounts in argument order, and a Python under /tmp bound before the private
    /tmp is hidden by it."""
    args = []
    for root in _python_roots():
        # A Python installed in a private home (pyenv under /root): the sandbox user may walk
        # down to it, and sees nothing else of that home. (--dir leaves a folder that exists,
        # such as the private /tmp, as it is.)
        for parent in reversed(Path(root).parents[:-1]):
            args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", root, root]
    return args


def _bwrap_prefix(project: Path, submission: Path, limits: Limits = Limits()) -> list[str]:
    """bwrap's arguments: what the sandbox sees, before the command it runs."""
    args = ["bwrap", "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid"]
    args += ["--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    if os.geteuid() != 0:
        args += ["--unshare-user", "--disable-userns"]
    for system in SYSTEM:
        if os.path.exists(system):
            args += ["--ro-bind", system, system]
    args += ["--ro-bind", str(project), "/project", "--ro-bind", str(submission), "/submission"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    for scratch in SCRATCH:  # private, bounded, gone with the sandbox
        args += ["--perms", "01777", "--size", str(limits.disk_bytes), "--tmpfs", scratch]
    # The observations get a disk of their own: a notebook that fills its home by accident
    # (a saved checkpoint too many) still gets its hidden tests judged.
    args += ["--perms", "01777", "--size", str(16 * 2**20), "--tmpfs", GRADING]
    args += _python_binds()  # after the tmpfs mounts: see there
    args += ["--chdir", HOME]
    env = {
        "HOME": HOME,
        "PATH": command_path("/usr/bin:/bin"),
        "PYTHONPATH": "/project",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{HOME}/.matplotlib",
        "JUPYTER_RUNTIME_DIR": f"{HOME}/.jupyter-runtime",
        "IPYTHONDIR": f"{HOME}/.ipython",
        "COURSE_OBSERVATIONS": f"{GRADING}/observations.jsonl",
        "OMP_NUM_THREADS": "1",
    }
    args += ["--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    if os.geteuid() == 0:  # bwrap keeps root's identity without a user namespace: drop it
        args += ["--"]
        args += [
            "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs",
        ]  # fmt: skip
    return args


class _Cgroup:
    """A memory + pids cgroup (v1) for one sandbox; only when running as root."""

    def __init__(self, limits: Limits) -> None:
        name = f"course-grading-{uuid.uuid4().hex[:12]}"
        self.memory = CGROUPS / "memory" / name
        self.pids = CGROUPS / "pids" / name
        self.memory.mkdir()
        self.pids.mkdir()
        (self.memory / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
        (self.pids / "pids.max").write_text(str(limits.processes))

    @staticmethod
    def usable() -> bool:
        return (
            os.geteuid() == 0
            and os.access(CGROUPS / "memory", os.W_OK)
            and (CGROUPS / "pids").is_dir()
        )

    def wrap(self, command: list[str]) -> list[str]:
        """`command`, started by a shell that first moves itself into the groups (a
        `preexec_fn` would not be safe with grading threads running)."""
        join = f'echo $$ > "{self.memory}/cgroup.procs" && echo $$ > "{self.pids}/cgroup.procs"'
        return ["/bin/sh", "-c", f'{join} && exec "$@"', "sh", *command]

    def kill_all(self) -> None:
        for _ in range(100):
            pids = (self.pids / "cgroup.procs").read_text().split()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)

    def report(self) -> tuple[int, list[str]]:
        peak = int((self.memory / "memory.max_usage_in_bytes").read_text())
        flags = []
        if int((self.memory / "memory.failcnt").read_text()):
            flags.append("hit the memory limit")
        events = (self.pids / "pids.events").read_text().split()
        if len(events) == 2 and int(events[1]):
            flags.append("hit the process limit")
        return peak, flags

    def remove(self) -> None:
        for group in (self.memory, self.pids):
            for _ in range(50):
                try:
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)


def run_submission(
    notebook: Path,
    assignment: str,
    limits: Limits = Limits(),
    sandboxed: bool = True,
    files: dict[str, bytes] | None = None,
) -> Execution:
    """Execute `notebook` (hidden tests included) in a sandbox holding `files` (default:
    `kernel_bytes(assignment)`), within `limits`, with this process's own interpreter. A run
    that failed for a reason not the student's has `grader_error` set (NOTE [Grader errors]):
    it must not be graded.

    `sandboxed=False` runs the same runner without bubblewrap (the instructor's --no-sandbox):
    same limits where the cgroups allow, but the notebook sees the whole machine."""
    files = kernel_bytes(assignment) if files is None else files
    return _execute(notebook, files, limits, sandboxed, sys.executable)


def _execute(
    notebook: Path, files: dict[str, bytes], limits: Limits, sandboxed: bool, python: str
) -> Execution:
    execution = Execution()
    with tempfile.TemporaryDirectory(prefix="course-grading-") as scratch:
        scratch = Path(scratch)
        project = project_copy(scratch / "project", files)
        submission = scratch / "submission"
        submission.mkdir()
        shutil.copyfile(notebook, submission / "notebook.ipynb")
        for path in (scratch, submission, submission / "notebook.ipynb"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        runner = [python, "/project/run_notebook.py", "/submission/notebook.ipynb"]
        runner += [str(limits.cell_seconds), str(max(limits.memory_bytes, ADDRESS_SPACE))]
        if sandboxed:
            command = [*_bwrap_prefix(project, submission, limits), *runner]
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        else:
            home = scratch / "home"
            home.mkdir()
            command = [python, str(project / "run_notebook.py"), *runner[2:]]
            command[2] = str(submission / "notebook.ipynb")
            env = {
                **os.environ,
                "PYTHONPATH": str(project),
                "COURSE_OBSERVATIONS": str(home / ".observations.jsonl"),
                "MPLBACKEND": "Agg",
            }
        _run(command, env, limits, execution, cwd=scratch)
    return execution


def _run(command: list[str], env: dict, limits: Limits, execution: Execution, cwd: Path) -> None:
    cgroup = _Cgroup(limits) if _Cgroup.usable() else None
    if cgroup is None:
        execution.flags.append("no cgroup limits (not root)")
    start = time.perf_counter()
    try:
        process = subprocess.Popen(
            cgroup.wrap(command) if cgroup else command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    except BaseException:
        if cgroup is not None:
            cgroup.remove()
        raise
    stderr = bytearray()
    reader = threading.Thread(target=_read_events, args=(process, limits, execution), daemon=True)
    errors = threading.Thread(target=_read_tail, args=(process.stderr, stderr), daemon=True)
    reader.start()
    errors.start()
    reader.join(limits.wall_seconds)
    budget_spent = reader.is_alive()
    if budget_spent:
        execution.flags.append(f"stopped at the {limits.wall_seconds:.0f} s budget")
    elif execution.finished or not execution.started:  # it is ending: let it say how
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=2)
    status = process.poll()
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if cgroup is not None:
        cgroup.kill_all()
    process.wait()
    reader.join(5)
    errors.join(5)
    execution.seconds = time.perf_counter() - start
    execution.stderr = stderr.decode(errors="replace")
    if cgroup is not None:
        execution.memory_peak_bytes, flags = cgroup.report()
        execution.flags.extend(flags)
        cgroup.remove()
    execution.grader_error = _grader_error(execution, status, budget_spent, limits)
    if execution.grader_error:
        return
    if not execution.finished and not budget_spent:
        execution.flags.append("the sandbox stopped early")


def _grader_error(
    execution: Execution, status: int | None, budget_spent: bool, limits: Limits
) -> str:
    """Why this run failed for a reason not the student's, or "" (NOTE [Grader errors]): one
    line."""
    return " ".join(_grader_error_text(execution, status, budget_spent, limits).split())


def _grader_error_text(
    execution: Execution, status: int | None, budget_spent: bool, limits: Limits
) -> str:
    last = _last_line(execution.stderr)
    if execution.runner_error:
        return f"the grading runner crashed ({execution.runner_error})"
    if execution.started:
        return ""
    if budget_spent:
        why = f"it was not ready within the {limits.wall_seconds:.0f} s budget"
        return f"the grading runner never started ({why}{'; ' + last if last else ''})"
    why = last or (f"exit status {status}" if status is not None else "no output at all")
    return f"the grading runner never started ({why})"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:500] if lines else ""


def _read_tail(stream, into: bytearray) -> None:
    """Read `stream` to its end, keeping its last STDERR_KEPT bytes in `into`."""
    while chunk := stream.read1(65536):
        into += chunk
        del into[:-STDERR_KEPT]


def _read_events(process: subprocess.Popen, limits: Limits, execution: Execution) -> None:
    """Read the runner's JSON lines into `execution`, at most `limits.result_bytes` in all:
    a line is never read past what is left of that limit, so a cell's huge output costs this
    process at most the limit, not the output's size."""
    received = 0
    while True:
        line = process.stdout.readline(limits.result_bytes - received + 1)
        if not line:
            return
        received += len(line)
        if received > limits.result_bytes:
            execution.flags.append("sent more than the result limit")
            return
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event.get("ready") is True:
            execution.started = True
        elif isinstance(event.get("runner_error"), str):
            execution.runner_error = event["runner_error"][:2000]
        elif isinstance(event.get("restart"), int):
            execution.crashed.append(event["restart"])
            execution.outputs.clear()
            execution.observations = ""
        elif isinstance(event.get("cell"), int) and isinstance(event.get("outputs"), list):
            execution.outputs[event["cell"]] = event["outputs"]
            if isinstance(event.get("observations"), str):
                execution.observations += event["observations"]
        elif event.get("done"):
            execution.finished = True
            if event.get("problem"):
                execution.flags.append(str(event["problem"]))
