"""Every assignment's graders, on the notebook's own answers, the blank release and wrong answers.

- every grader passes the reference (the notebook's own answer cells, fixed and fresh seeds);
- every grader rejects the blank release (nbgrader's own ClearSolutions stub) and every wrong
  answer in solutions/<assignment>/wrong_answers.py with a clean AssertionError: no chained
  exception, no frame of the grader or the reference in the traceback, no line of the reference
  in the message;
- every exercise has at least two wrong answers, and a non-callable answer fails cleanly.
What each assignment's graders check beyond this is in tests/test_graders_<assignment>.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from course_notebooks import ASSIGNMENTS, course_notebook, release_source

EXERCISES = [(a, gid) for a in ASSIGNMENTS for gid in course_notebook(a).exercises]
WRONG = [
    (a, gid, wrong)
    for a in ASSIGNMENTS
    for gid, wrongs in course_notebook(a).wrong_answers.items()
    for wrong in wrongs
]


@pytest.mark.parametrize(("assignment", "grade_id"), EXERCISES)
def test_reference_passes(assignment: str, grade_id: str) -> None:
    nb = course_notebook(assignment)
    grader, name = nb.grader_and_name(grade_id)
    grader(nb.namespace[name], **nb.seed(grade_id, 1234))


@pytest.mark.parametrize(("assignment", "grade_id"), EXERCISES)
def test_reference_passes_fresh_random_cases(assignment: str, grade_id: str) -> None:
    nb = course_notebook(assignment)
    if not nb.takes_seed(grade_id):
        pytest.skip("this grader has no random cases")
    grader, name = nb.grader_and_name(grade_id)
    for seed in (None, 7):
        grader(nb.namespace[name], seed=seed)


@pytest.mark.parametrize(("assignment", "grade_id"), EXERCISES)
def test_blank_release_fails_cleanly(assignment: str, grade_id: str) -> None:
    nb = course_notebook(assignment)
    blank = release_source(nb.cell(grade_id).source)
    assert "raise NotImplementedError()" in blank and "BEGIN SOLUTION" not in blank
    grader, _ = nb.grader_and_name(grade_id)
    with pytest.raises(AssertionError) as caught:
        grader(nb.answer(grade_id, blank))
    assert "NotImplementedError" in str(caught.value)
    nb.assert_clean_failure(caught.value, grade_id)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_exercise_has_two_wrong_answers(assignment: str) -> None:
    nb = course_notebook(assignment)
    assert set(nb.wrong_answers) == set(nb.exercises)
    assert all(len(nb.wrong_answers[gid]) >= 2 for gid in nb.exercises)


@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
@pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar")
@pytest.mark.parametrize(
    ("assignment", "grade_id", "wrong"), WRONG, ids=[f"{a}-{g}-{w.name}" for a, g, w in WRONG]
)
def test_wrong_answer_loses_points(assignment: str, grade_id: str, wrong: Any) -> None:
    """A wrong answer fails cleanly (0 points), or, in a partial-credit exercise, earns less
    than full marks and is told which items are wrong."""
    nb = course_notebook(assignment)
    points, feedback = nb.score(grade_id, wrong.source)
    assert points < nb.points(grade_id), f"{wrong.name} kept full marks"
    assert feedback, "a wrong answer must be told what is wrong"


RIGHT = [
    (a, gid, right)
    for a in ASSIGNMENTS
    for gid, rights in course_notebook(a).right_answers.items()
    for right in rights
]


@pytest.mark.parametrize(
    ("assignment", "grade_id", "right"), RIGHT, ids=[f"{a}-{g}-{r.name}" for a, g, r in RIGHT]
)
def test_different_but_correct_answer_earns_full_marks(
    assignment: str, grade_id: str, right: Any
) -> None:
    nb = course_notebook(assignment)
    points, feedback = nb.score(grade_id, right.source)
    assert points == nb.points(grade_id), feedback


@pytest.mark.parametrize(("assignment", "grade_id"), EXERCISES)
def test_reference_earns_full_marks(assignment: str, grade_id: str) -> None:
    nb = course_notebook(assignment)
    points, _ = nb.score(grade_id, nb.cell(grade_id).source)
    assert points == nb.points(grade_id)


@pytest.mark.parametrize(("assignment", "grade_id"), EXERCISES)
def test_non_callables_fail_cleanly(assignment: str, grade_id: str) -> None:
    grader, _ = course_notebook(assignment).grader_and_name(grade_id)
    with pytest.raises(AssertionError, match=r"expected a .*, got int|must be a class") as caught:
        grader(3)
    assert caught.value.__suppress_context__


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_exercise_has_a_correct_variant(assignment: str) -> None:
    nb = course_notebook(assignment)
    assert set(nb.right_answers) == set(nb.exercises)
