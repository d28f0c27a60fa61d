"""A class per assignment, graded the way an instructor grades (`python -m solutions grade`),
with every student's exact score per exercise asserted (issue 14: fairness for the whole course).

Each class holds the reference answers, the blank release, one student per kept wrong answer
(the k-th wrong answer of every exercise at once, the rest the reference), a correct answer that
prints a warning on stderr in every cell, and a notebook whose first exercise is broken. A wrong
answer must score in the class exactly what the graders give it in process
(CourseNotebook.score, the path the grader tests use), and cost nothing elsewhere.

Minutes of kernels: run with `python3 -m pytest tests/test_course_classes.py --classes`.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import nbformat
import pytest
from course_notebooks import ASSIGNMENTS, course_notebook
from course_support import (
    answer_ids,
    build_release,
    reference_answers,
    with_answers,
    write_submission,
)
from nbgrader.api import Gradebook

from solutions.instructor.cli import main

pytestmark = [
    pytest.mark.classes,
    pytest.mark.filterwarnings("ignore:Cell is missing an id field"),
]

WARNS_EVERYWHERE = """
import sys
get_ipython().events.register(
    "post_run_cell", lambda result: print("UserWarning: careful", file=sys.stderr)
)
"""


def _test_cell_of(nb: nbformat.NotebookNode) -> dict[str, str]:
    """answer grade_id -> the grade_id of the test cell that follows it."""
    pairs, answer = {}, None
    for cell in nb.cells:
        role = cell.metadata.get("nbgrader", {})
        if role.get("solution"):
            answer = role["grade_id"]
        elif role.get("grade") and answer is not None:
            pairs[answer] = role["grade_id"]
            answer = None
    return pairs


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_class_gets_exactly_the_scores_of_its_answers(assignment: str, tmp_path: Path) -> None:
    course = build_release(tmp_path / "course", [assignment])
    notebook = f"{assignment}.ipynb"
    source = nbformat.read(course / "source" / assignment / notebook, as_version=4)
    release = nbformat.read(course / "release" / assignment / notebook, as_version=4)
    reference = reference_answers(source)
    tests = _test_cell_of(source)
    nb = course_notebook(assignment)
    full = {tests[gid]: float(nb.points(gid)) for gid in reference}
    inbox = tmp_path / "inbox"
    expected: dict[str, dict[str, float]] = {"reference": dict(full)}
    write_submission(inbox, "reference", assignment, with_answers(release, reference))
    write_submission(inbox, "blank", assignment, release)
    expected["blank"] = dict.fromkeys(full, 0.0)
    warns = with_answers(release, reference)
    first_code = next(i for i, c in enumerate(warns.cells) if c.cell_type == "code")
    warns.cells.insert(first_code + 1, nbformat.v4.new_code_cell(WARNS_EVERYWHERE))
    write_submission(inbox, "warns", assignment, warns)
    expected["warns"] = dict(full)
    first = answer_ids(source)[0]
    broken = "raise RuntimeError('I gave up on this one')"
    write_submission(inbox, "first-broken", assignment, with_answers(
        release, {**reference, first: broken}
    ))  # fmt: skip
    expected["first-broken"] = {**full, tests[first]: 0.0}
    for k in range(max(len(w) for w in nb.wrong_answers.values())):
        chosen = {gid: w[k] for gid, w in nb.wrong_answers.items() if k < len(w)}
        student = f"wrong-{k}"
        answers = {**reference, **{gid: w.source for gid, w in chosen.items()}}
        write_submission(inbox, student, assignment, with_answers(release, answers))
        expected[student] = {
            **full,
            **{
                tests[gid]: round(nb.score(gid, w.source, seed=None)[0], 2)
                for gid, w in chosen.items()
            },
        }
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["--course", str(course), "grade", assignment, "--from", str(inbox)])
    assert code == 0, out.getvalue()[-3000:]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student, scores in expected.items():
            graded = gradebook.find_submission_notebook(assignment, assignment, student)
            got = {g.name: round(g.score, 2) for g in graded.grades if g.name in scores}
            assert got == scores, f"{student}: {got} != {scores}"
