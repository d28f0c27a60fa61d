"""Notebook 2 ("backward"): what its graders check beyond what every assignment's graders
check (tests/test_graders_common.py): specific feedback for specific mistakes, and the
graders' own ground truth.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
import torch
from course_notebooks import course_notebook

import minitorch
from solutions.backward import grade, reference
from solutions.backward.wrong_answers import WRONG_ANSWERS

NB = course_notebook("backward")


def test_specific_mistakes_get_specific_feedback() -> None:
    message = NB.wrong_message

    assert "RecursionError" in message("ex1_topological_order", "recursive_post_order")
    assert "before its consumer" in message("ex1_topological_order", "breadth_first")
    assert "you replaced it" in message("ex2_run_backward", "overwrite_leaf_grad")
    assert "no_grad" in message("ex2_run_backward", "grad_mode_on")
    assert "keepdim" in message("ex3_sum_to_shape", "no_keepdim")
    assert "transpose" in message("ex4_jacobian", "transposed") or "shape" in message(
        "ex4_jacobian", "transposed"
    )
    assert "second time" in message("ex4_jacobian", "no_retain_graph")
    assert "times too large" in message("ex6_accumulated_gradients", "missing_divide_by_k")
    assert "zeroed" in message("ex6_accumulated_gradients", "no_zero_grad")
    assert "in-place" in message("ex7_fit_line", "update_without_no_grad")
    assert "reset the gradients" in message("ex7_fit_line", "no_zero_grad")
    assert "'c'" in message("ex8_predict_second_backward", "numbers_are_not_saved")
    assert "wrong about why" in message("ex8_predict_second_backward", "works_for_the_wrong_reason")


def test_recursion_is_caught_even_with_a_raised_limit() -> None:
    (wrong,) = [
        w for w in WRONG_ANSWERS["ex1_topological_order"] if w.name == "recursive_post_order"
    ]
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        with pytest.raises(AssertionError, match="RecursionError"):
            grade.topological_order(NB.answer("ex1_topological_order", wrong.source))
        assert sys.getrecursionlimit() == 100_000  # restored
    finally:
        sys.setrecursionlimit(previous)


def test_random_graphs_have_reuse_and_agree_between_libraries() -> None:
    """The graphs exercise 2 is graded on: some node has two consumers, and minitorch's
    backward gives PyTorch's leaf gradients on them."""
    shared = 0
    for seed in range(8):
        torch_out, torch_leaves = grade.random_graph(torch, seed, 30)
        mini_out, mini_leaves = grade.random_graph(minitorch, seed, 30)
        consumers: dict[Any, int] = {}
        for node in reference.topological_order(torch_out):
            for child, _ in node.next_functions:
                if child is not None:
                    consumers[child] = consumers.get(child, 0) + 1
        shared += any(count > 1 for count in consumers.values())
        torch_out.backward()
        mini_out.backward()
        for t, m in zip(torch_leaves, mini_leaves):
            assert (t.grad is None) == (m.grad is None)
            if t.grad is not None:
                assert torch.allclose(t.grad, torch.tensor(m.grad.tolist(), dtype=torch.float64))
    assert shared >= 6


def test_snippet_classification_matches_both_libraries() -> None:
    """Exercise 8's truth comes from running the snippets: every reason occurs, the two
    libraries agree, and the reference answer is that truth."""
    found = {}
    for key, (first, second) in reference.SNIPPETS.items():
        outcomes = {grade.classify(first, second, lib) for lib in (torch, minitorch)}
        assert len(outcomes) == 1, key
        found[key] = outcomes.pop()
    assert found == reference.predict_second_backward()
    assert {why for _, why in found.values()} == set(reference.REASONS)
