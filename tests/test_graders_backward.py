"""Notebook 2 ("backward"): what its graders check beyond what every assignment's graders
check (tests/test_graders_common.py): specific feedback for specific mistakes, and the
graders' own ground truth.
"""

from __future__ import annotations

import sys
import time
import traceback
import warnings
from typing import Any

import pytest
import torch
from course_notebooks import course_notebook

import minitorch
from solutions.backward import grade, judge, reference
from solutions.backward.wrong_answers import RIGHT_ANSWERS, WRONG_ANSWERS
from solutions.grading import FAILURE_KEY
from solutions.judging import difference, verdict

NB = course_notebook("backward")


def _wrong(grade_id: str, name: str) -> Any:
    (wrong,) = [w for w in WRONG_ANSWERS[grade_id] if w.name == name]
    return wrong


def test_specific_mistakes_get_specific_feedback() -> None:
    message = NB.wrong_message

    assert "RecursionError" in message("ex1_topological_order", "recursive_post_order")
    assert "before its consumer" in message("ex1_topological_order", "breadth_first")
    assert "2**40 paths" in message("ex1_topological_order", "counts_paths_not_edges")
    assert "you replaced it" in message("ex3_run_backward", "overwrite_leaf_grad")
    assert "no_grad" in message("ex3_run_backward", "grad_mode_on")
    assert "shares memory" in message("ex3_run_backward", "no_clone")
    assert "2**40 paths" in message("ex3_run_backward", "propagate_every_path")
    assert "keepdim" in message("ex2_sum_to_shape", "no_keepdim")
    for name, found in (
        ("no_reduction", "assign a gradient of size '[4, 3]' to a tensor of size '[3]'"),
        ("reduce_at_leaves_only", "broadcast after a reduction (PyTorch) raised RuntimeError"),
        ("reduce_when_node_runs", "a (3,) gradient broadcasts"),
    ):
        feedback = message("ex3_run_backward", name)
        assert found in feedback and "sum_to_shape(child_grad, gradient_shape(child, nr))" in (
            feedback
        ), (name, feedback)
    assert "transpose" in message("ex4_jacobian", "transposed") or "shape" in message(
        "ex4_jacobian", "transposed"
    )
    assert "second time" in message("ex4_jacobian", "no_retain_graph")
    assert "called f 3 times" in message("ex4_jacobian", "f_once_per_row")
    assert "float32" in message("ex4_jacobian", "float32_result")
    assert "changed the caller's x" in message("ex4_jacobian", "x_requires_grad_in_place")
    assert "changed the caller's x" in message(
        "ex5_hessian_vector_product", "x_requires_grad_in_place"
    )
    assert "on x itself" in message("ex6_scale_gradient", "hook_on_x")
    assert "returns None" in message("ex6_scale_gradient", "hook_returns_nothing")
    assert "in place" in message("ex6_scale_gradient", "scales_in_place")
    assert "forward pass must not change" in message("ex6_scale_gradient", "scales_the_value")
    assert "times too large" in message("ex7_accumulated_gradients", "missing_divide_by_k")
    assert "zeroed" in message("ex7_accumulated_gradients", "no_zero_grad")
    assert "share of the batch" in message("ex7_accumulated_gradients", "divide_by_k")
    assert "one forward per micro-batch" in message("ex7_accumulated_gradients", "full_batch_once")
    assert "run one per micro-batch" in message(
        "ex7_accumulated_gradients", "one_backward_of_summed_losses"
    )
    assert "in-place" in message("ex8_fit_line", "update_without_no_grad")
    assert "reset the gradients" in message("ex8_fit_line", "no_zero_grad")
    assert "no leaf" in message("ex8_fit_line", "rebinds_instead_of_updating")
    assert "float32" in message("ex8_fit_line", "float32_parameters")
    assert "Python floats" in message("ex8_fit_line", "losses_are_tensors")


def test_rebinding_under_no_grad_gets_the_targeted_hint_in_a_short_failure() -> None:
    """Issue 21: `w = w - lr * w.grad` under no_grad makes a new leaf that does not require
    grad. The hidden test names that mistake; the visible test fails in a few lines."""
    message = NB.wrong_message("ex8_fit_line", "rebinds_under_no_grad")
    assert "does not require grad" in message and "in place" in message
    scope = dict(NB.namespace)
    exec(_wrong("ex8_fit_line", "rebinds_under_no_grad").source, scope)
    visible = NB.cell("ex8_fit_line_tests").source.split("### BEGIN HIDDEN TESTS")[0]
    with pytest.raises(AssertionError, match="leaves that require grad") as caught:
        exec(visible, scope)
    assert caught.value.__suppress_context__
    assert len(traceback.format_exception(caught.value)) <= 4


def test_warnings_never_cost_points() -> None:
    """float() of a tensor that requires grad warns in PyTorch; even with warnings turned into
    errors, the answer keeps full marks."""
    (right,) = RIGHT_ANSWERS["ex8_fit_line"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        points, feedback = NB.score("ex8_fit_line", right.source)
    assert points == NB.points("ex8_fit_line"), feedback


def test_predictions_earn_partial_credit_per_snippet() -> None:
    points, feedback = NB.score(
        "ex9_predict_second_backward",
        _wrong("ex9_predict_second_backward", "numbers_are_not_saved").source,
    )
    assert points == pytest.approx(1.8) and "'c'" in feedback
    points, feedback = NB.score(
        "ex9_predict_second_backward",
        _wrong("ex9_predict_second_backward", "works_for_the_wrong_reason").source,
    )
    assert points == pytest.approx(1.2) and "wrong about why" in feedback
    malformed = NB.cell("ex9_predict_second_backward").source.replace(
        '"a": (True, "freed")', '"a": "raises"'
    )
    points, feedback = NB.score("ex9_predict_second_backward", malformed)
    assert points == pytest.approx(1.8) and "'a' (not a tuple" in feedback
    missing = NB.cell("ex9_predict_second_backward").source.replace('"j": (True, "freed"),', "")
    points, feedback = NB.score("ex9_predict_second_backward", missing)
    assert points == pytest.approx(1.8) and "'j' (no prediction)" in feedback


def test_wrong_earlier_answers_cost_the_engine_nothing() -> None:
    """Issue 14: run_backward is graded with stand-ins for topological_order and sum_to_shape,
    so the reference engine on top of any wrong exercise-1 or exercise-2 answer keeps its
    points."""
    engine = NB.cell("ex3_run_backward").source
    for grade_id in ("ex1_topological_order", "ex2_sum_to_shape"):
        for wrong in WRONG_ANSWERS[grade_id]:
            points, feedback = NB.score("ex3_run_backward", wrong.source + "\n" + engine)
            assert points == NB.points("ex3_run_backward"), (wrong.name, feedback)


def test_the_engine_is_graded_on_pytorch_graphs_that_need_the_reduction() -> None:
    """Issue 33: on every broadcasting case PyTorch's nodes return a gradient whose shape is
    not its input's (so an engine that skips the reduction is wrong there), the libraries'
    backward agree, and the stand-in reduction is the reference's."""
    cases = [(d, b) for d, b, _ in grade._engine_cases(5) if grade.BROADCASTING in d]
    assert len(cases) == 5
    shape_of = reference.gradient_shape
    for description, build in cases:
        graph = build(torch)
        unreduced = 0
        for node in reference.topological_order(graph.out):
            if node.name() == reference.ACCUMULATE_GRAD:
                continue
            grads = node(torch.ones(shape_of(node, 0), dtype=torch.float64))  # frees nothing
            grads = grads if isinstance(grads, tuple) else (grads,)
            for (child, nr), g in zip(node.next_functions, grads):
                if child is not None and g is not None:
                    unreduced += tuple(g.shape) != shape_of(child, nr)
                    want = reference.sum_to_shape(g, shape_of(child, nr))
                    assert torch.equal(grade.library_sum_to_shape(g, shape_of(child, nr)), want)
        assert unreduced, description
        mini = build(minitorch)
        graph.out.backward(grade._root_gradient(torch, graph.out, 0))
        mini.out.backward(grade._root_gradient(minitorch, mini.out, 0))
        for t, m in zip(graph.leaves, mini.leaves):
            assert (t.grad is None) == (m.grad is None), description
            if t.grad is not None:
                assert torch.allclose(t.grad, torch.tensor(m.grad.tolist(), dtype=torch.float64))


@pytest.mark.parametrize("lib", [torch, minitorch], ids=["torch", "minitorch"])
def test_the_order_table_is_a_valid_topological_order(lib: Any) -> None:
    """The stand-in's orders (reverse creation order, then the AccumulateGrad nodes) are what
    the reference's topological_order accepts: every node, each once, after its consumers."""
    cases = [(d, b) for d, b, _ in grade._engine_cases(5)]
    for description, build in cases:
        graph = build(lib)
        table = grade.OrderTable()
        table.add(graph)
        order = table(graph.out)
        assert {id(n) for n in order} == {id(n) for n in reference.topological_order(graph.out)}
        described = {
            "order": grade.ranges(list(range(len(order)))),
            **graph.describe(),
        }
        judge._check_order(list(range(len(order))), described, description)


def test_exponential_walks_fail_within_the_time_bound() -> None:
    for grade_id, name in (
        ("ex1_topological_order", "counts_paths_not_edges"),
        ("ex3_run_backward", "propagate_every_path"),
    ):
        grader, _ = NB.grader_and_name(grade_id)
        answer = NB.answer(grade_id, _wrong(grade_id, name).source)
        start = time.perf_counter()
        with pytest.raises(AssertionError, match="took more than"):
            grader(answer)
        assert time.perf_counter() - start < 4 * grade.SMALL_CASE_SECONDS + 10


def test_recursion_is_caught_even_with_a_raised_limit() -> None:
    wrong = _wrong("ex1_topological_order", "recursive_post_order")
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
        torch_graph = grade.random_graph(torch, seed, 30)
        mini_graph = grade.random_graph(minitorch, seed, 30)
        assert torch_graph.describe() == mini_graph.describe()
        consumers: dict[Any, int] = {}
        for node in reference.topological_order(torch_graph.out):
            for child, _ in node.next_functions:
                if child is not None:
                    consumers[child] = consumers.get(child, 0) + 1
        shared += any(count > 1 for count in consumers.values())
        torch_graph.out.backward()
        mini_graph.out.backward()
        for t, m in zip(torch_graph.leaves, mini_graph.leaves):
            assert (t.grad is None) == (m.grad is None)
            if t.grad is not None:
                assert torch.allclose(t.grad, torch.tensor(m.grad.tolist(), dtype=torch.float64))
    assert shared >= 6


def test_scale_gradient_cases_agree_between_libraries_and_scale_one_path() -> None:
    """Exercise 6's truth is the reference on PyTorch: minitorch observes the same on every
    case, and on every case scaling changes x.grad (so a hook without effect loses)."""
    observed = grade.scale_gradient.observe(reference.scale_gradient)
    assert FAILURE_KEY not in observed
    cases = [where for where in observed if where.endswith("(PyTorch)")]
    assert {observed[where]["kind"] for where in cases} == set(grade.SCALE_GRAPHS)
    for where in cases:
        case = observed[where]
        assert difference(observed[where.replace("PyTorch", "minitorch")], case) is None, where
        assert difference(case["x.grad"], case["x.grad without scaling"]) is not None, where
        if case["kind"] != "intermediate":  # x is the leaf: (x * 2.0).sum() gives it 2
            assert case["x.grad of a later backward through x alone"]["values"] == [2.0] * 3


def test_snippet_classification_matches_both_libraries() -> None:
    """Exercise 9's truth comes from running the snippets: every reason occurs, the two
    libraries agree, and the reference answer is that truth."""
    found = {}
    for key, (first, second) in reference.SNIPPETS.items():
        outcomes = {judge.classify(first, second, lib) for lib in (torch, minitorch)}
        assert len(outcomes) == 1, key
        found[key] = outcomes.pop()
    assert found == reference.predict_second_backward()
    assert {why for _, why in found.values()} == set(reference.REASONS) == set(judge.REASONS)


def test_forged_observations_fail_without_crashing_the_judge() -> None:
    observed = grade.topological_order.observe(reference.topological_order)
    expected = {where: graph for where, graph in observed.items() if graph["order"]}
    forged = {where: {"order": [[0, 10**12]]} for where in expected}
    with pytest.raises(judge.Failure):
        judge.topological_order(forged, expected)
    result = verdict(grade.run_backward, {"x": 1})  # judged as the grading process does
    assert result.failed and "could not be judged" in result.message
