"""The grading sandbox runs the interpreter that grades, wherever it lives, and a sandbox that
fails for a reason that is not the student's is a grader error, never a grade (issue 32).

An instructor followed the README with the clone under /tmp: the venv's Python, bound before
the sandbox's private /tmp, was hidden by it, every runner died before starting, and every
student got "0, the sandbox stopped early" with exit status 0. Here, with real venvs, real
bubblewrap and real kernels: the pre-flight (`sandbox.preflight`) passes and a submission runs
for a venv under /tmp, under the instructor's home and inside the repository; an interpreter the
sandbox cannot reach is refused in one line before anything is graded; a runner that crashes is
a grader error; a student who kills the runner is still the student's doing; and (--classes) a
class with a grader error leaves the honest student graded and the other not graded, with
nothing in the gradebook for them and exit status 1. NOTE [Grader errors] in sandbox.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from course_support import (
    NOTEBOOK_1,
    REPO_ROOT,
    copy_course,
    reference_answers,
    with_answers,
    write_submission,
)
from nbformat.v4 import new_code_cell, new_notebook
from nbgrader.api import Gradebook, MissingEntry

from solutions.instructor.sandbox import preflight, run_submission

SITE = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
REFERENCE = REPO_ROOT / "solutions" / NOTEBOOK_1 / "reference.py"

# Run by the venv's own Python, from the repository: the pre-flight, then one tiny submission.
GRADE_ONE = r"""
import json, sys
from pathlib import Path
import nbformat
from nbformat.v4 import new_code_cell, new_notebook
from solutions.instructor.sandbox import preflight, run_submission
problem = preflight(sys.argv[1])
path = Path(sys.argv[2])
nbformat.write(new_notebook(cells=[new_code_cell(sys.argv[3])]), path)
execution = run_submission(path, "tiny")
print(json.dumps({"preflight": problem, "outputs": execution.outputs, "flags": execution.flags,
                  "grader_error": execution.grader_error, "finished": execution.finished}))
"""

CELL = f"""
import os, sys, torch, minitorch, course_venv_probe
print(sys.executable, sys.prefix, course_venv_probe.WHERE)
print("repository visible:", os.path.exists({str(REFERENCE)!r}))
"""


def _venv(folder: Path) -> Path:
    """A venv at `folder` that finds the course's packages through its base Python (as
    `--system-site-packages`), with a module of its own in its site-packages."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(folder)],
        check=True,
    )
    (folder / SITE / "course_venv_probe.py").write_text('WHERE = "in the venv\'s site-packages"\n')
    return folder


def _printed(outputs: dict) -> str:
    return "".join(
        str(o.get("text", "")) + str(o.get("evalue", "")) for key in sorted(outputs, key=int)
        for o in outputs[key]
    )  # fmt: skip


def _grade_with(venv: Path, scratch: Path) -> dict:
    python = venv / "bin" / "python"
    done = subprocess.run(
        [str(python), "-c", GRADE_ONE, NOTEBOOK_1, str(scratch / "notebook.ipynb"), CELL],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _check_graded(result: dict, venv: Path) -> None:
    assert result["preflight"] is None
    assert result["grader_error"] == "" and result["finished"], result
    printed = _printed(result["outputs"])
    # The kernel ran under the venv's Python, found torch and minitorch through its base
    # Python, the venv's own package, and nothing of the repository the venv sits in.
    assert f"{venv}/bin/python {venv} in the venv's site-packages" in printed, printed
    assert "repository visible: False" in printed, printed


def test_a_venv_under_tmp_grades(tmp_path: Path) -> None:
    """The issue's setup: the private /tmp of the sandbox no longer hides a venv in /tmp."""
    assert str(tmp_path).startswith("/tmp/")
    venv = _venv(tmp_path / "clone" / ".venv")
    _check_graded(_grade_with(venv, tmp_path), venv)


@pytest.mark.classes
@pytest.mark.parametrize("where", ["home", "repository"])
def test_a_venv_in_a_home_or_in_the_repository_grades(where: str, tmp_path: Path) -> None:
    """Under the instructor's home (private, mode 0700, like /root here), and inside the
    repository (README: `python3 -m venv .venv` in the clone; build/ is ignored by git)."""
    if where == "home":
        home = Path.home()
        if not os.access(home, os.W_OK):
            pytest.skip(f"cannot write into the home folder {home}")
        parent = Path(tempfile.mkdtemp(prefix=".course-test-", dir=home))
    else:
        (REPO_ROOT / "build").mkdir(exist_ok=True)
        parent = Path(tempfile.mkdtemp(prefix="venv-test-", dir=REPO_ROOT / "build"))
    try:
        venv = _venv(parent / ".venv")
        _check_graded(_grade_with(venv, tmp_path), venv)
    finally:
        shutil.rmtree(parent)


def test_a_python_that_does_not_exist_is_refused_in_one_line(tmp_path: Path) -> None:
    """A venv whose interpreter link points nowhere (its Python was uninstalled)."""
    venv = _venv(tmp_path / "venv")
    for name in ("python", "python3"):
        (venv / "bin" / name).unlink()
        (venv / "bin" / name).symlink_to(tmp_path / "uninstalled" / "python3")
    problem = preflight(NOTEBOOK_1, python=str(venv / "bin" / "python"))
    assert problem is not None and "\n" not in problem
    assert problem.startswith(f"the grading Python {venv}/bin/python does not exist"), problem
    assert "failed to execute" in problem or "No such file" in problem, problem
    assert "python3 -m venv --clear" in problem


def test_a_python_the_sandbox_cannot_see_is_refused_before_grading(
    released_course: Path, tmp_path: Path
) -> None:
    """A venv whose interpreter is reached through a link outside what the sandbox binds: it
    runs here, not in the sandbox. `autograde` refuses with one line, exit status 2, before
    grading anything."""
    venv = _venv(tmp_path / "venv")
    outside = tmp_path / "outside" / "python3"
    outside.parent.mkdir()
    outside.symlink_to(os.path.realpath(sys.executable))
    for name in ("python", "python3"):
        (venv / "bin" / name).unlink()
        (venv / "bin" / name).symlink_to(outside)
    course = copy_course(released_course, tmp_path / "course")
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "solutions", "--course", str(course)]
        + ["autograde", NOTEBOOK_1],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    refusal = "error: nothing graded: the pre-flight check failed: the grading sandbox"
    assert lines[0].startswith(f"{refusal} cannot start Python {venv}/bin/python"), lines[0]
    assert f"it leads through {outside}, which the sandbox does not see" in lines[0]
    assert not (course / "autograded").exists()


def test_a_python_without_the_runners_packages_is_refused_in_one_line(tmp_path: Path) -> None:
    """The sandbox's Python cannot import nbclient (here this venv's own copy is broken): the
    runner never starts, and the pre-flight says so instead of grading."""
    venv = _venv(tmp_path / "venv")
    (venv / SITE / "nbclient.py").write_text('raise ImportError("a broken nbclient")\n')
    script = "from solutions.instructor.sandbox import preflight; print(preflight())"
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", script], cwd=REPO_ROOT, capture_output=True, text=True
    )
    problem = done.stdout.strip()
    assert done.returncode == 0 and "\n" not in problem, done.stdout + done.stderr
    assert problem.startswith(f"the grading sandbox cannot run the grader with Python {venv}/")
    assert "the grading runner never started (ImportError: a broken nbclient)" in problem
    assert f"install the course's packages into it ({venv}: pip install" in problem


def test_a_runner_that_crashes_is_a_grader_error(tmp_path: Path) -> None:
    """The real runner, in the real sandbox, handed a file it cannot read (the grading
    process's doing: admission never lets such a file reach a sandbox)."""
    path = tmp_path / "notebook.ipynb"
    path.write_text("not a notebook")
    execution = run_submission(path, "tiny")
    assert execution.grader_error.startswith("the grading runner crashed (NotJSONError"), execution
    assert "\n" not in execution.grader_error
    assert "Traceback (most recent call last)" in execution.stderr  # for the student's log
    assert execution.started and not execution.finished and execution.outputs == {}
    assert "the sandbox stopped early" not in execution.flags  # nothing for the student


def test_a_student_who_kills_the_runner_is_not_a_grader_error(tmp_path: Path) -> None:
    """Once the runner is ready, a run that ends early is the notebook's doing, as before."""
    path = tmp_path / "notebook.ipynb"
    cell = "import os, signal\nprint('before')\nos.kill(os.getppid(), signal.SIGKILL)"
    nbformat.write(new_notebook(cells=[new_code_cell(cell)]), path)
    execution = run_submission(path, "tiny")
    assert execution.started and not execution.grader_error, execution
    assert "the sandbox stopped early" in execution.flags


@pytest.mark.classes
def test_a_grader_error_leaves_the_honest_student_graded_and_the_other_not(
    released_course: Path, tmp_path: Path
) -> None:
    """`python -m solutions grade`, from a copy of the repository whose runner has a bug that
    one submission sets off (its text holds a marker): that student is not graded (a grader
    error, not a 0), the runner's traceback is in their log, the gradebook holds nothing of
    theirs, the CSV no score; the honest student gets full marks; the command exits 1."""
    clone = tmp_path / "clone"
    shutil.copytree(
        REPO_ROOT, clone,
        ignore=shutil.ignore_patterns(".git", "build", "__pycache__", "*.egg-info", ".*cache"),
    )  # fmt: skip
    runner = clone / "solutions" / "instructor" / "run_notebook.py"
    line = "        nb = nbformat.read(path, as_version=4)\n"
    bug = (
        '        if "RUNNER-BUG" in nbformat.writes(nb):\n            raise RuntimeError("a bug")\n'
    )
    assert line in runner.read_text()
    runner.write_text(runner.read_text().replace(line, line + bug))

    course = copy_course(released_course, tmp_path / "course")
    source = nbformat.read(course / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    answers = reference_answers(source)
    inbox = tmp_path / "inbox"
    write_submission(inbox, "honest", NOTEBOOK_1, with_answers(release, answers))
    first = next(iter(answers))
    unlucky = {**answers, first: answers[first] + "\n# RUNNER-BUG\n"}
    write_submission(inbox, "unlucky", NOTEBOOK_1, with_answers(release, unlucky))
    done = subprocess.run(
        [sys.executable, "-m", "solutions", "--course", str(course), "grade", NOTEBOOK_1]
        + ["--from", str(inbox), "--jobs", "2"],
        cwd=clone,
        capture_output=True,
        text=True,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line.split()}
    assert "25" in rows["honest"].split() and "not graded" not in rows["honest"], output
    assert "not graded" in rows["unlucky"] and "grader error" in rows["unlucky"], output
    summary = done.stderr[done.stderr.index("needs action") :]  # at the end, on stderr
    assert "unlucky: grading error (grader error in the sandbox: the grading runner" in summary
    assert summary.strip().endswith("unlucky"), summary  # "not graded (...): unlucky"
    log = (course / "reports" / NOTEBOOK_1 / "autograde" / "unlucky.log").read_text()
    assert "grader error in the sandbox: the grading runner crashed (RuntimeError: a bug)" in log
    assert "Traceback (most recent call last)" in log and "RuntimeError: a bug" in log
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission(NOTEBOOK_1, "honest").score == 25
        with pytest.raises(MissingEntry):
            gradebook.find_submission(NOTEBOOK_1, "unlucky")
    grades = (course / "grades.csv").read_text().splitlines()
    (row,) = [line for line in grades if ",unlucky," in line]
    assert "grader error" in row, row
