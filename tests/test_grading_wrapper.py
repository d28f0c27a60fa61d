"""The grader wrapper (solutions/grading.py): clean failures and reproducible grading."""

import pytest

from solutions.grading import grader


def test_a_grader_without_a_seed_uses_the_same_fixed_seed_every_time():
    seen = []

    @grader("demo")
    def check(answer, seed=None):
        seen.append(seed)

    check(object())
    check(object())
    check(object(), seed=5)
    assert seen[0] is not None and seen[0] == seen[1], "re-grading must draw the same cases"
    assert seen[2] == 5


def test_graders_for_different_exercises_get_different_default_seeds():
    seeds = {}
    for what in ("collect_nodes", "count_ops"):

        @grader(what)
        def check(answer, seed=None, what=what):
            seeds[what] = seed

        check(None)
    assert seeds["collect_nodes"] != seeds["count_ops"]


def test_failures_reach_the_student_as_one_clean_assertion_error():
    @grader("demo")
    def check(answer):
        answer()

    def student():
        raise NotImplementedError()

    with pytest.raises(AssertionError, match="demo is not implemented yet") as caught:
        check(student)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
