"""The grading sandbox and the verdicts decided in the grading process, piece by piece.

The whole path (a class graded with `python -m solutions grade`) is in test_red_team.py and
test_course_pipeline.py; here each piece is checked on its own, with real bubblewrap and real
kernels where a piece runs them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest
from course_support import (
    NOTEBOOK_1,
    copy_course,
    reference_answers,
    with_answers,
    write_submission,
)
from nbformat.v4 import new_code_cell, new_notebook
from nbgrader.api import Gradebook

from solutions.grading import FAILURE_KEY
from solutions.graph_construction import grade
from solutions.instructor import pipeline, report, verdicts
from solutions.instructor.cli import main
from solutions.instructor.course import CommandError, open_course
from solutions.instructor.pipeline import sandbox_problem
from solutions.instructor.sandbox import Limits, kernel_files, run_submission
from solutions.instructor.verdicts import (
    digest,
    judge_cell,
    merged_streams,
    plan,
    prepare,
    read_observations,
    verdict_outputs,
)
from solutions.judging import Verdict, difference

HIDDEN = "assert True\n### BEGIN HIDDEN TESTS\ngrade.f(f)\n### END HIDDEN TESTS\n"


def _test_cell(source: str) -> nbformat.NotebookNode:
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "t", "points": 2, "locked": True}
    return cell


def test_printed_text_is_one_output_however_the_kernel_cut_it() -> None:
    """A busy kernel sends one print in several chunks; feedback must not depend on where."""
    from nbformat.v4 import new_output

    chunks = [
        new_output("stream", name="stdout", text="torch: f = 31.2"),
        new_output("stream", name="stdout", text="79415\n"),
        new_output("stream", name="stderr", text="a warning\n"),
        new_output("stream", name="stdout", text="after\n"),
        new_output("display_data", {"text/plain": "<Figure>"}),
        new_output("stream", name="stdout", text="last\n"),
    ]
    merged = merged_streams(chunks)
    assert [(o.output_type, o.get("name"), o.get("text")) for o in merged] == [
        ("stream", "stdout", "torch: f = 31.279415\n"),
        ("stream", "stderr", "a warning\n"),
        ("stream", "stdout", "after\n"),
        ("display_data", None, None),
        ("stream", "stdout", "last\n"),
    ]


def test_prepare_moves_each_hidden_block_into_a_cell_of_its_own() -> None:
    nb = new_notebook(cells=[new_code_cell("def f(): pass"), _test_cell(HIDDEN)])
    prepared = prepare(nb)
    assert [c.source for c in prepared.cells] == ["def f(): pass", "assert True\n", "grade.f(f)\n"]
    assert plan(nb).positions == (0, 1) and plan(nb).probes == {1: 2}
    assert nb.cells[1].source == HIDDEN  # the grading copy is left as it was
    key = digest(prepared, "graph_construction", Limits(), True)
    assert digest(prepare(nb), "graph_construction", Limits(), True) == key  # the same each time
    assert digest(prepared, "graph_construction", Limits(cell_seconds=5), True) != key
    assert digest(prepared, "graph_construction", Limits(), False) != key
    assert digest(prepared, "backward", Limits(), True) != key  # other graders: run it again


def test_observations_are_read_as_data_and_garbage_is_skipped() -> None:
    text = '{"test": "a", "data": 1}\nnot json\n[1, 2]\n{"test": 3}\n{"test": "a", "data": 2}\n'
    assert read_observations(text) == {"a": [1, 2]}


def test_a_test_observed_twice_or_never_earns_nothing() -> None:
    test = grade.predict_flags
    twice = judge_cell(test, {"predict_flags": [{}, {}]}, [])
    assert twice.failed and "written 2 times" in twice.message
    error = {"output_type": "error", "ename": "NameError", "evalue": "name 'x' is not defined"}
    never = judge_cell(test, {}, [error])
    assert never.failed and "NameError: name 'x' is not defined" in never.message
    failure = judge_cell(test, {"predict_flags": [{FAILURE_KEY: "it raised"}]}, [])
    assert failure.failed and failure.message == "predict_flags: it raised"


def test_forged_data_of_the_wrong_shape_fails_instead_of_crashing_the_judge() -> None:
    result = judge_cell(grade.predict_flags, {"predict_flags": [["not", "a", "dict"]]}, [])
    assert result.failed


def test_verdict_outputs_are_what_nbgrader_scores() -> None:
    assert verdict_outputs([Verdict(False)], 2) == []
    (partial,) = verdict_outputs([Verdict(False, 1.5)], 2)
    assert partial.output_type == "execute_result" and partial.data["text/plain"] == "1.5"
    note, error = verdict_outputs([Verdict(False, None, "a note"), Verdict(True, None, "wrong")], 2)
    assert note.output_type == "stream" and error.output_type == "error"
    assert error.evalue == "wrong"


def test_difference_names_the_first_place_where_data_differ() -> None:
    assert difference({"a": [1, 2.0]}, {"a": [1, 2.0 + 1e-12]}) is None
    assert difference({"a": [1, 3]}, {"a": [1, 2]}) == "a[1]: got 3, expected 2"
    assert difference({"a": 1}, {"a": 1, "b": 2}) == ": 'b' is missing"
    assert difference("1", 1) is not None  # a string is not a number


def test_a_sandbox_holds_only_the_kernel_half() -> None:
    files = kernel_files("graph_construction")
    names = {Path(name).name for name in files}
    assert {"grade.py", "grading.py", "run_notebook.py"} <= names
    assert not names & {"reference.py", "judge.py", "wrong_answers.py", "judging.py"}
    assert not any(
        name.startswith(("course/source", "tests", "solutions/instructor")) for name in files
    )
    source = files["course/notebooks/graph_construction.py"]
    assert isinstance(source, str) and "BEGIN SOLUTION" not in source


def test_grading_refuses_without_bubblewrap_unless_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(CommandError, match="bubblewrap.*--no-sandbox"):
        sandbox_problem(True)
    sandbox_problem(False)  # --no-sandbox: allowed (and flagged in the table)


def _run(tmp_path: Path, *sources: str, limits: Limits | None = None):
    nb = new_notebook(cells=[new_code_cell(s) for s in sources])
    path = tmp_path / "notebook.ipynb"
    nbformat.write(nb, path)
    return run_submission(path, "tiny", limits or Limits())


def _printed(execution) -> str:
    return "".join(
        o.get("text", "") + o.get("evalue", "") for i in sorted(execution.outputs)
        for o in execution.outputs[i]
    )  # fmt: skip


def test_the_sandbox_sees_nothing_of_the_machine(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-CONTENT")
    probe = f"""
import os, socket
print("uid", os.getuid(), "env", sorted(os.environ))
for path in [{str(secret)!r}, {str(Path.cwd() / "solutions" / "judging.py")!r}]:
    print(path, os.path.exists(path))
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
except OSError as error:
    print("network:", type(error).__name__)
"""
    printed = _printed(_run(tmp_path, probe))
    if os.geteuid() == 0:
        assert "uid 65534" in printed
    assert f"{secret} False" in printed and "judging.py False" in printed
    assert "network:" in printed and "SECRET-CONTENT" not in printed
    assert "PYTHONPATH" in printed and "COURSE_OBSERVATIONS" in printed


def test_one_budget_covers_the_whole_notebook(tmp_path: Path) -> None:
    limits = Limits(wall_seconds=15, cell_seconds=60)
    execution = _run(tmp_path, "print('first')", "import time\ntime.sleep(60)", limits=limits)
    assert "stopped at the 15 s budget" in execution.flags
    assert execution.outputs[0][0]["text"] == "first\n"  # graded with what finished
    assert not execution.grader_error  # the notebook's doing (test_sandbox_preflight.py)


def test_a_crashing_cell_is_skipped_and_the_rest_runs(tmp_path: Path) -> None:
    execution = _run(tmp_path, "import os\nos._exit(1)", "print('after')")
    assert execution.crashed == [0] and execution.finished and not execution.grader_error
    assert execution.outputs[0][0]["ename"] == "RuntimeError"
    assert execution.outputs[1][0]["text"] == "after\n"
    assert json.dumps(execution.outputs)  # plain data all the way


def test_results_executed_elsewhere_are_judged_without_running_again(
    released_course: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`execute` is what a batch system runs per submission; `autograde --results` then only
    judges and records (run_submission is made to fail, to prove that nothing runs again). A
    submission rewritten on disk after collection is flagged."""
    course = copy_course(released_course, tmp_path / "course")
    source = nbformat.read(course / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    write_submission(
        tmp_path / "inbox", "ada", NOTEBOOK_1, with_answers(release, reference_answers(source))
    )
    results = tmp_path / "results"
    common = ["--course", str(course)]
    assert main([*common, "collect", NOTEBOOK_1, "--from", str(tmp_path / "inbox")]) == 0
    assert (
        main([*common, "execute", NOTEBOOK_1, "--student", "ada", "--results", str(results)]) == 0
    )
    assert len(list(results.glob("*.json"))) == 1
    assert not (course / "autograded").exists()  # execute grades nothing

    def no_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("ran a submission whose result was given")

    monkeypatch.setattr(pipeline, "run_submission", no_run)
    monkeypatch.setattr(verdicts, "run_submission", no_run)
    assert main([*common, "autograde", NOTEBOOK_1, "--results", str(results)]) == 0
    rows = report.student_rows(open_course(course), NOTEBOOK_1)
    assert [(row.student, row.score, row.flags) for row in rows] == [("ada", 25.0, [])]
    assert len(list(results.glob("*.json"))) == 1  # kept for the next round
    submitted = course / "submitted" / "ada" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb"
    submitted.write_text(submitted.read_text() + " ")  # rewritten after collection
    (row,) = report.student_rows(open_course(course), NOTEBOOK_1)
    assert report.CHANGED_SINCE_COLLECTED in row.flags, row


def test_parallel_grading_gives_what_sequential_grading_gives(
    released_course: Path, tmp_path: Path
) -> None:
    """The same class graded with --jobs 1 and --jobs 2: the same score in every cell, and the
    same feedback (a wrong answer in ex1 and ex2, the rest right; and the blank release)."""
    from solutions.graph_construction.wrong_answers import WRONG_ANSWERS

    source = released_course / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb"
    release = released_course / "release" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb"
    reference = reference_answers(nbformat.read(source, as_version=4))
    release_nb = nbformat.read(release, as_version=4)
    wrong = {gid: WRONG_ANSWERS[gid][0].source for gid in ("ex1_collect_nodes", "ex2_count_ops")}
    inbox = tmp_path / "inbox"
    write_submission(inbox, "wrong", NOTEBOOK_1, with_answers(release_nb, {**reference, **wrong}))
    write_submission(inbox, "blank", NOTEBOOK_1, release_nb)

    def graded_with(jobs: int) -> tuple[dict, dict]:
        course = copy_course(released_course, tmp_path / f"course-{jobs}")
        grade = ["grade", NOTEBOOK_1, "--from", str(inbox), "--jobs", str(jobs)]
        assert main(["--course", str(course), *grade]) == 0
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
            scores = {
                (student, g.name): g.score
                for student in ("wrong", "blank")
                for g in gradebook.find_submission_notebook(NOTEBOOK_1, NOTEBOOK_1, student).grades
            }
        feedback = {
            path.relative_to(course).as_posix(): path.read_text()
            for path in sorted((course / "feedback").rglob("*.html"))
        }
        return scores, feedback

    sequential, parallel = graded_with(1), graded_with(2)
    assert sequential[0] == parallel[0]
    assert 0 < sum(sequential[0].values()) < 25 and len(sequential[1]) == 2
    for path, html in sequential[1].items():  # identical up to time stamps and object addresses
        strip = re.compile(r"\d{4}-\d\d-\d\d[ T][\d:.]+|0x[0-9a-f]+")
        assert strip.sub("", html) == strip.sub("", parallel[1][path]), path
