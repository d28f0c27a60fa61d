"""Notebook 1 ("graph construction"): what its graders check beyond what every assignment's graders
check (tests/test_graders_common.py): specific feedback for specific mistakes, and the
graders' own ground truth.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from course_notebooks import course_notebook

from solutions import grading
from solutions.graph_construction import grade
from solutions.graph_construction.wrong_answers import WRONG_ANSWERS

NB = course_notebook("graph_construction")


def test_specific_mistakes_get_specific_feedback() -> None:
    message = NB.wrong_message

    assert "RecursionError" in message("ex1_collect_nodes", "recursive_dfs")
    assert "more than once" in message("ex1_collect_nodes", "no_seen_set")
    assert "order differs" in message("ex1_collect_nodes", "stack_order")
    assert "counted once" in message("ex2_count_ops", "every_path")
    assert "ambiguous" in message("ex3_find_leaves", "list_membership")
    assert "incorrect number of gradients" in message("ex5_softplus", "one_gradient_for_two_inputs")
    assert "SinBackward0" in message("ex6_f_and_gradients", "math_sin")
    assert "rebuilt on every forward" in message("ex7_graph_sizes", "graph_built_once")


def test_recursion_is_caught_even_with_a_raised_limit() -> None:
    (wrong,) = [w for w in WRONG_ANSWERS["ex1_collect_nodes"] if w.name == "recursive_dfs"]
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        with pytest.raises(AssertionError, match="RecursionError"):
            grade.collect_nodes(NB.answer("ex1_collect_nodes", wrong.source))
        assert sys.getrecursionlimit() == 100_000  # restored
    finally:
        sys.setrecursionlimit(previous)


def test_wrapper_reports_grader_bugs_and_non_callables_cleanly() -> None:
    @grading.grader("demo")
    def broken(answer: Any) -> None:
        raise KeyError("internal")

    with pytest.raises(AssertionError, match="grading demo stopped with KeyError") as caught:
        broken(None)
    assert caught.value.__suppress_context__
    with pytest.raises(AssertionError, match="expected a function, got int"):
        grade.collect_nodes(3)
    with pytest.raises(AssertionError, match="derived from minitorch.autograd.Function"):
        grade.softplus(object)


def test_a_student_notimplementederror_with_a_message_is_reported_as_such() -> None:
    def student(_: Any) -> None:
        raise NotImplementedError("complex tensors")

    with pytest.raises(AssertionError, match="NotImplementedError: complex tensors"):
        grade.collect_nodes(student)
