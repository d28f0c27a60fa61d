"""`python -m solutions hub` started from each Python an instructor may install the course into
(NOTE [Python view] in solutions/instructor/python_view.py): a venv in root's home, a venv in
the clone, and the system Python (tests/test_hub.py's route, which CI takes).

Each route starts a real hub with that interpreter, a student's server, and a kernel in it
that reports which Python it runs and tries to read what is not the student's. The venvs are
made with --system-site-packages (seconds, not minutes: the packages are the system Python's),
so what differs between routes is exactly where the interpreter and its venv live.

The slow routes run with --hub; the refusals (one `error:` line naming the fix) run by default.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import course_support
import pytest
from hub_support import free_port, scratch_folder, start_hub

from solutions.instructor import hub as hub_module

REPO_ROOT = Path(__file__).resolve().parents[1]
HAVE_HUB = bool(shutil.which("configurable-http-proxy") and importlib.util.find_spec("jupyterhub"))
needs_root_and_hub = pytest.mark.skipif(
    os.geteuid() != 0 or not HAVE_HUB,
    reason="runs as root with JupyterHub and configurable-http-proxy (pip install -e '.[hub]')",
)

PROBE = """
import os, sys
import minitorch
print("python", sys.executable)
print("sum", minitorch.tensor([1.0, 2.0]).sum().item())
print("home", sorted(os.listdir({home!r})))
for what, path in {{"the secret": {secret!r}, "the graders": {grader!r}}}.items():
    try:
        open(path).read()
        print("READ", what)
    except OSError as error:
        print("refused", what, type(error).__name__)
"""


def make_venv(folder: Path) -> Path:
    """A venv at `folder` that uses the system Python's packages; its interpreter."""
    command = [sys.executable, "-m", "venv", "--system-site-packages", str(folder)]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    return folder / "bin" / "python"


@pytest.fixture
def root_home_venv() -> Iterator[tuple[Path, Path]]:
    """A venv in root's home and a file beside it that no student may read."""
    home = Path(os.path.expanduser("~root"))
    name = f"dyngraph-route-{secrets.token_hex(4)}"
    venv, secret = home / name, home / f"{name}-secret.txt"
    secret.write_text("root's own file\n")
    try:
        yield make_venv(venv), secret
    finally:
        shutil.rmtree(venv, ignore_errors=True)
        secret.unlink(missing_ok=True)


@pytest.fixture
def repository_venv() -> Iterator[tuple[Path, Path]]:
    """A venv inside the clone (as `python3 -m venv .venv` makes it) and a file in the clone
    that no student may read."""
    parent = REPO_ROOT / "build" / f"hub-route-{secrets.token_hex(4)}"  # build/: git ignores it
    parent.mkdir(parents=True)
    try:
        venv = make_venv(parent / ".venv")
        yield venv, REPO_ROOT / "solutions" / course_support.NOTEBOOK_1 / "grade.py"
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def student_kernel_report(python: Path, secret: Path, listed: Path) -> dict[str, list[str]]:
    """Start a hub with `python`, a student's server, and PROBE in its kernel (reading
    `secret`, listing `listed`): its lines by their first word."""
    with scratch_folder() as scratch:
        hub = start_hub(scratch / "state", students=1, port=free_port(), python=str(python))
        try:
            student = hub.start_server("student1")
            code = PROBE.format(
                home=str(listed), secret=str(secret),
                grader=str(REPO_ROOT / "solutions" / course_support.NOTEBOOK_1 / "grade.py"),
            )  # fmt: skip
            run = student.run(code)
            assert run.error is None, (run, hub.log_tail())
        finally:
            assert hub.stop() == 0, hub.log_tail()
    report: dict[str, list[str]] = {}
    for line in run.output.strip().splitlines():
        word, _, rest = line.partition(" ")
        report.setdefault(word, []).append(rest)
    return report


@needs_root_and_hub
@pytest.mark.hub
def test_hub_from_a_venv_in_roots_home(root_home_venv: tuple[Path, Path]) -> None:
    python, secret = root_home_venv
    home = secret.parent
    report = student_kernel_report(python, secret, listed=home)
    assert report["python"] == [str(python)], report  # the venv, not the Python behind it
    assert report["sum"] == ["3.0"], report
    # Root's home shows the student the venv (and the Python behind it, if it lives there
    # too, as pyenv's does), and nothing else of it.
    behind = [f for f in hub_module.shown_to_users() if f.is_relative_to(home)]
    expected = {python.parents[1].name, *(f.relative_to(home).parts[0] for f in behind)}
    assert set(eval(report["home"][0])) == expected, report  # noqa: S307 (the probe's list)
    assert report["refused"] == ["the secret FileNotFoundError", "the graders FileNotFoundError"]
    assert "READ" not in report


@needs_root_and_hub
@pytest.mark.hub
def test_hub_from_a_venv_in_the_clone(repository_venv: tuple[Path, Path]) -> None:
    python, grader = repository_venv
    report = student_kernel_report(python, grader, listed=REPO_ROOT)
    assert report["python"] == [str(python)], report
    assert report["sum"] == ["3.0"], report
    # The clone shows the student minitorch/ and the venv (in build/), nothing else of it.
    assert set(eval(report["home"][0])) == {"minitorch", "build"}  # noqa: S307
    assert "READ" not in report, report


PREFLIGHT = """
from pathlib import Path
from solutions.instructor import hub
hub.enter_hub_view(Path({state!r}))
hub.SERVER_IMPORTS = (*hub.SERVER_IMPORTS, "no_such_mod")
try:
    hub.check_student_server()
except hub.CommandError as refusal:
    print("refused", refusal)
hub.SERVER_IMPORTS = hub.SERVER_IMPORTS[:-1]
hub.check_student_server()
print("passed")
"""


@needs_root_and_hub
def test_hub_preflight_names_what_a_students_server_cannot_import() -> None:
    """The pre-flight runs this interpreter as nobody, in a student's view and limits (in the
    hub's private namespace, as --private makes it): a module it cannot import stops the hub
    before any account is made, in one line; the real list of imports passes."""
    with scratch_folder() as scratch:
        script = PREFLIGHT.format(state=str(scratch / "state"))
        command = ["unshare", "--mount", "--propagation", "private", "--"]
        command += [sys.executable, "-c", script]
        done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and len(lines) == 2, (done.stdout, done.stderr)
    assert lines[0].startswith(f"refused a student's server cannot start with {sys.executable}")
    assert "No module named 'no_such_mod'" in lines[0] and "pip install" in lines[0], lines[0]
    assert lines[1] == "passed"


@needs_root_and_hub
def test_hub_names_a_python_folder_closed_to_its_users() -> None:
    """A venv whose own folder is closed to other users (0700) cannot be shown without
    changing it: one `error:` line that says what to open, before any account is made."""
    with scratch_folder() as scratch:
        venv = scratch / "venv"
        python = make_venv(venv)
        venv.chmod(0o700)
        command = [str(python), "-m", "solutions", "hub"]  # --private: the same check
        command += ["--state", str(scratch / "state"), "--port", str(free_port())]
        done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert f"{venv} is not open to other users (chmod o+rx {venv})" in lines[0], lines[0]


FOLDERS = """
import json, sys
from pathlib import Path
from solutions.instructor.python_view import python_folders
from solutions.instructor.student_server import shown_in_repository
repository = Path(sys.argv[1])
print(json.dumps({
    "sandbox": [str(f) for f in python_folders(hidden=[repository])],
    "hub": [str(f) for f in python_folders()],
    "student": [str(f) for f in shown_in_repository(repository)],
}))
"""


def test_one_list_of_python_folders_for_every_view(repository_venv: tuple[Path, Path]) -> None:
    """A venv in the clone, with the clone's tests/ and the clone itself on PYTHONPATH: every
    view shows the venv; the sandbox shows no other folder of the clone, and a student's
    server nothing of it but minitorch/ and the venv."""
    python, _ = repository_venv
    venv = python.parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "tests"), str(REPO_ROOT)])}
    done = subprocess.run(
        [str(python), "-c", FOLDERS, str(REPO_ROOT)], cwd="/", env=env, capture_output=True,
        text=True, timeout=120, check=True,
    )  # fmt: skip
    views = json.loads(done.stdout)
    assert str(venv) in views["sandbox"] and str(sys.base_prefix) in views["sandbox"], views
    assert not any(Path(f).is_relative_to(REPO_ROOT / "tests") for f in views["sandbox"]), views
    assert str(REPO_ROOT) not in views["sandbox"], views
    assert str(REPO_ROOT) in views["hub"], views  # PYTHONPATH names it: the hub shows it
    assert views["student"] == ["minitorch", str(venv.relative_to(REPO_ROOT))], views
