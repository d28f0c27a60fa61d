"""Grading on Dask (`grade --dask ADDRESS`, NOTE [Grading on Dask] in dask_grading.py).

The class tests (`--classes`) start a real `dask scheduler` and `dask worker` processes (one
thread each, over TCP) and grade notebook 1's class of test_course_classes.py: every cell's
score and every feedback page must be those of local `--jobs 2` grading of the same class,
also when a worker is killed under its tasks; a worker without bubblewrap is refused by name;
a scheduler that goes away stops the run, and grading again runs only what is missing.
The quick tests check what the grading process refuses.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import nbformat
import pytest
from course_notebooks import course_notebook
from course_support import (
    NOTEBOOK_1,
    REPO_ROOT,
    copy_course,
    reference_answers,
    with_answers,
    write_submission,
)
from nbgrader.api import Gradebook

from solutions.instructor import dask_grading
from solutions.instructor.cli import main
from solutions.instructor.dask_grading import DaskSandboxes, check_worker, versions
from solutions.instructor.sandbox import Execution, Limits

pytest.importorskip("distributed")
from dask_support import LocalDaskCluster  # noqa: E402 (needs distributed)
from distributed import Client  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Cell is missing an id field")
WORKER_ENV = {"PYTHONPATH": str(REPO_ROOT)}  # a clone of the project, as on a worker machine


def _grade(course: Path, inbox: Path, *options: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["--course", str(course), "grade", NOTEBOOK_1, "--from", str(inbox), *options])
    return code, out.getvalue()


# What the grading process refuses (default run) -----------------------------------------------


def test_a_worker_with_other_versions_is_refused_naming_them() -> None:
    wanted = {**versions(), "torch": "0.0.1"}
    why = check_worker(NOTEBOOK_1, {}, True, wanted)
    assert why.startswith("other versions: torch ") and "(grading: 0.0.1)" in why, why


def test_a_result_is_used_only_under_the_key_the_grading_process_computed() -> None:
    sandboxes = DaskSandboxes("tcp://nowhere:1", NOTEBOOK_1, {}, Limits(), True)
    ran = asdict(Execution(finished=True, seconds=1.5))
    ours, theirs = "a" * 64, "b" * 64
    used = sandboxes._result(json.dumps({"key": ours, "execution": ran}), ours, "tcp://w:1")
    assert (used.finished, used.seconds, used.grader_error) == (True, 1.5, "")
    other = sandboxes._result(json.dumps({"key": theirs, "execution": ran}), ours, "tcp://w:1")
    assert "ran something else (key bbbbbbbbbbbb, expected aaaaaaaaaaaa)" in other.grader_error
    broken = sandboxes._result('{"key": 1}', ours, "tcp://w:1")
    assert "unreadable result (KeyError" in broken.grader_error


def test_jobs_with_dask_and_an_unreachable_scheduler_are_one_error_line(
    released_course: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    course = copy_course(released_course, tmp_path / "course")
    release = nbformat.read(course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", 4)
    write_submission(tmp_path / "inbox", "blank", NOTEBOOK_1, release)
    code, out = _grade(course, tmp_path / "inbox", "--jobs", "2", "--dask", "tcp://127.0.0.1:1")
    assert code == 2 and "error: --jobs is for grading on this machine" in out, out
    monkeypatch.setattr(dask_grading, "CONNECT_SECONDS", 1.0)
    code, out = _grade(course, tmp_path / "inbox", "--dask", "tcp://127.0.0.1:1")
    assert code == 2 and "error: cannot reach the Dask scheduler at tcp://127.0.0.1:1" in out, out
    assert not (course / "gradebook.db").exists() or not _scores(course), "nothing recorded"


def test_a_cluster_where_no_worker_can_grade_is_one_error_line(
    released_course: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    course = copy_course(released_course, tmp_path / "course")
    release = nbformat.read(course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", 4)
    write_submission(tmp_path / "inbox", "blank", NOTEBOOK_1, release)
    monkeypatch.setattr(dask_grading, "WAIT_FOR_WORKERS", 5.0)
    with LocalDaskCluster(tmp_path / "cluster") as cluster:
        cluster.add_worker("no-bubblewrap", {**WORKER_ENV, "PATH": str(tmp_path / "empty")})
        code, out = _grade(course, tmp_path / "inbox", "--dask", cluster.address)
    assert code == 2, out
    assert f"error: no Dask worker at {cluster.address} can grade after 5 s (no-bubblewrap" in out
    assert "bubblewrap (bwrap) is not installed" in out and "PYTHONPATH=$PWD dask worker" in out
    assert not (course / "gradebook.db").exists() or not _scores(course), "nothing recorded"


# A class on a real cluster (--classes) -----------------------------------------------------------


def _scores(course: Path) -> dict[str, dict[str, float | None]]:
    """student -> {grade cell: score} from the gradebook."""
    scores = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for submission in gradebook.notebook_submissions(NOTEBOOK_1, NOTEBOOK_1):
            grades = {grade.name: grade.score for grade in submission.grades}
            scores[submission.student.id] = grades
    return scores


def _feedback(course: Path) -> dict[str, str]:
    """student -> their feedback page, without the lines that say when it was made and with
    the objects' addresses a student's message may print (0x7f1a94818e90) made alike."""
    pages = {}
    for page in sorted((course / "feedback").glob(f"*/{NOTEBOOK_1}/{NOTEBOOK_1}.html")):
        lines = page.read_text().splitlines()
        kept = [line for line in lines if "Timestamp" not in line and "timestamp" not in line]
        pages[page.parts[-3]] = re.sub(r"0x[0-9a-f]{6,}", "0x...", "\n".join(kept))
    return pages


class GradedClass:
    """Notebook 1's class, and what local `--jobs 2` grading gave it."""

    def __init__(self, released: Path, folder: Path) -> None:
        self.released, self.folder, self.inbox = released, folder, folder / "inbox"
        source = nbformat.read(released / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", 4)
        release = nbformat.read(released / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", 4)
        reference = reference_answers(source)
        write_submission(self.inbox, "reference", NOTEBOOK_1, with_answers(release, reference))
        write_submission(self.inbox, "blank", NOTEBOOK_1, release)
        first = next(iter(reference))
        broken = with_answers(release, {**reference, first: "raise RuntimeError('gave up')"})
        write_submission(self.inbox, "first-broken", NOTEBOOK_1, broken)
        wrong = course_notebook(NOTEBOOK_1).wrong_answers
        for k in range(max(len(answers) for answers in wrong.values())):
            chosen = {gid: answers[k].source for gid, answers in wrong.items() if k < len(answers)}
            answers = with_answers(release, {**reference, **chosen})
            write_submission(self.inbox, f"wrong-{k}", NOTEBOOK_1, answers)
        local = self.course("local")
        code, out = _grade(local, self.inbox, "--jobs", "2")
        assert code == 0, out[-3000:]
        self.scores, self.feedback = _scores(local), _feedback(local)
        assert self.scores["reference"] and len(self.scores) == len(os.listdir(self.inbox))

    def course(self, name: str) -> Path:
        return copy_course(self.released, self.folder / name)

    def assert_graded_as_locally(self, course: Path) -> None:
        assert _scores(course) == self.scores
        assert _feedback(course) == self.feedback


@pytest.fixture(scope="module")
def graded_class(released_course: Path, tmp_path_factory: pytest.TempPathFactory) -> GradedClass:
    return GradedClass(released_course, tmp_path_factory.mktemp("dask-class"))


def _grading_process(course: Path, inbox: Path, address: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "solutions", "--course", str(course), "grade", NOTEBOOK_1,
               "--from", str(inbox), "--dask", address]  # fmt: skip
    log = open(course.parent / f"{course.name}.log", "w")  # noqa: SIM115 (the process keeps it)
    return subprocess.Popen(command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)


def _wait_for(condition, seconds: float = 300) -> None:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.2)


@pytest.mark.classes
def test_dask_grades_a_class_as_local_grading_does(graded_class: GradedClass, tmp_path: Path):
    course = graded_class.course("dask")
    with LocalDaskCluster(tmp_path) as cluster:
        cluster.add_worker("worker-1", WORKER_ENV)
        cluster.add_worker("worker-2", WORKER_ENV)
        cluster.add_worker("no-bubblewrap", {**WORKER_ENV, "PATH": str(tmp_path / "empty")})
        code, out = _grade(course, graded_class.inbox, "--dask", cluster.address)
    assert code == 0, out[-3000:]
    assert "warning: Dask worker no-bubblewrap (tcp://" in out, out
    assert "cannot grade and gets no tasks: bubblewrap (bwrap) is not installed" in out, out
    assert "on 2 workers)" in out, out  # the progress bar counts the workers that grade
    graded_class.assert_graded_as_locally(course)


@pytest.mark.classes
def test_a_worker_killed_under_its_tasks_loses_nothing(graded_class: GradedClass, tmp_path: Path):
    course = graded_class.course("killed")
    with LocalDaskCluster(tmp_path) as cluster, Client(cluster.address) as client:
        cluster.add_worker("worker-1", WORKER_ENV)
        cluster.add_worker("worker-2", WORKER_ENV)
        victim = next(a for a, w in client.scheduler_info(n_workers=-1)["workers"].items()
                      if w["name"] == "worker-2")  # fmt: skip

        def running_a_sandbox() -> bool:
            return any(str(key).startswith("sandbox-") for key in client.processing()[victim])

        grading = _grading_process(course, graded_class.inbox, cluster.address)
        _wait_for(running_a_sandbox)
        cluster.kill("worker-2")
        assert grading.wait(timeout=600) == 0, (course.parent / "killed.log").read_text()[-3000:]
    log = (course.parent / "killed.log").read_text()
    assert "worker worker-2 (tcp://" in log and "left; its tasks run elsewhere" in log, log
    graded_class.assert_graded_as_locally(course)


@pytest.mark.classes
def test_a_scheduler_gone_stops_the_run_and_the_next_runs_only_the_rest(
    graded_class: GradedClass, tmp_path: Path
) -> None:
    course = graded_class.course("stopped")
    results = course / "reports" / NOTEBOOK_1 / "executions"
    with LocalDaskCluster(tmp_path / "first") as cluster:
        cluster.add_worker("worker-1", WORKER_ENV)
        grading = _grading_process(course, graded_class.inbox, cluster.address)
        _wait_for(lambda: len(list(results.glob("*.json"))) >= 2)
        cluster.kill("scheduler")
        assert grading.wait(timeout=300) == 2
    log = (course.parent / "stopped.log").read_text()
    assert "error: the Dask scheduler at tcp://" in log and "went away" in log, log
    assert "the same command runs only what is missing" in log, log
    kept = {path: path.stat().st_mtime_ns for path in results.glob("*.json")}
    assert 2 <= len(kept) < len(graded_class.scores)
    with LocalDaskCluster(tmp_path / "second") as cluster:
        cluster.add_worker("worker-1", WORKER_ENV)
        code, out = _grade(course, graded_class.inbox, "--dask", cluster.address)
    assert code == 0, out[-3000:]
    assert {path: path.stat().st_mtime_ns for path in kept} == kept  # not run again
    graded_class.assert_graded_as_locally(course)
