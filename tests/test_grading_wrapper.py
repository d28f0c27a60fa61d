"""The hidden-test wrapper (solutions/grading.py): clean failures and reproducible grading."""

import pytest

from solutions.grading import hidden_test


def _demo(observe, name="demo"):
    observe.__module__ = "solutions.demo.grade"  # a hidden test belongs to an assignment
    return hidden_test(name)(observe)


def test_a_hidden_test_without_a_seed_uses_the_same_fixed_seed_every_time():
    seen = []

    def check(answer, seed):
        seen.append(seed)

    test = _demo(check)
    test.observe(object())
    test.observe(object())
    test.observe(object(), seed=5)
    assert seen[0] is not None and seen[0] == seen[1], "re-grading must draw the same cases"
    assert seen[2] == 5


def test_hidden_tests_for_different_exercises_get_different_default_seeds():
    seeds = {}
    for what in ("collect_nodes", "count_ops"):

        def check(answer, seed, what=what):
            seeds[what] = seed

        _demo(check, what).observe(None)
    assert seeds["collect_nodes"] != seeds["count_ops"]


def test_failures_reach_the_student_as_one_clean_assertion_error():
    def check(answer):
        answer()

    def student():
        raise NotImplementedError()

    with pytest.raises(AssertionError, match="demo is not implemented yet") as caught:
        _demo(check)(student)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
