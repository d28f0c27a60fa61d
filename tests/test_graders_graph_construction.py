"""Notebook 1 ("graph construction"): what its graders check beyond what every assignment's graders
check (tests/test_graders_common.py): specific feedback for specific mistakes, and the
graders' own ground truth.
"""

from __future__ import annotations

import math
import re
import sys
import time
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from course_notebooks import course_notebook

import minitorch
from solutions import grading, judging
from solutions.graph_construction import grade, reference
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
    assert "changed Python's recursion limit" in message(
        "ex1_collect_nodes", "recursion_limit_raised"
    )
    assert "in the wrong order" in message("ex3_find_leaves", "depth_first_order")
    assert "must be a Python float" in message("ex6_f_and_gradients", "gradients_as_tensors")
    for grade_id, name in [
        ("ex1_collect_nodes", "dedupe_at_end"),
        ("ex2_count_ops", "every_path_deduplicated"),
        ("ex3_find_leaves", "every_path_deduplicated"),
        ("ex7_graph_sizes", "every_path_deduplicated"),
    ]:
        feedback = message(grade_id, name)
        assert "diamonds" in feedback and "did not finish within" in feedback, feedback
    for name, found in [
        ("always_records", "expected False: no input requires grad, so nothing is recorded"),
        ("values_as_edges", "holds a Value (not a node). Store the input's node"),
        ("no_accumulate_grad_edges", "reached through its accumulate_grad node"),
        ("edges_only_for_values_with_grad", "has 1 next_functions, PyTorch's has 2"),
        ("mul_backward_own_factor", "MulBackward0 of v2 = v0 * v1 called on 1.5 returns"),
        ("tanh_backward_of_the_input", "TanhBackward0 of v2 = v1.tanh() called on 1.5 returns"),
    ]:
        feedback = message("ex8_value", name)
        assert found in feedback, (name, feedback)
    for grade_id, name in [
        ("ex2_count_ops", "recursive_walk"),
        ("ex3_find_leaves", "recursive_walk"),
        ("ex7_graph_sizes", "recursive_count"),
    ]:
        assert "RecursionError" in message(grade_id, name)


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
    def broken(answer: Any) -> None:
        raise KeyError("internal")

    broken.__module__ = "solutions.demo.grade"
    with pytest.raises(AssertionError, match="grading demo stopped with KeyError") as caught:
        grading.hidden_test("demo")(broken)(None)
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


def _same_objects(got: list, want: list) -> bool:
    return len(got) == len(want) and all(a is b for a, b in zip(got, want))


@pytest.mark.parametrize(
    ("source", "feedback"),
    [
        ("r = _bfs(t)\n    return r + [(torch.ones(1, requires_grad=True) * 2).grad_fn]",
         "1 object(s) that are not nodes of this graph, e.g. a MulBackward0"),
        ("return _bfs(t)[1:]", "1 of the graph's 5001 nodes are missing, e.g. AddBackward0"),
        ("return [t] + _bfs(t)[1:]", "1 object(s) that are not nodes of this graph, e.g. a Tensor"),
        ("return _bfs(t)[::-1]", "order differs at position 0"),
        ("return [n.name() for n in _bfs(t)]", "not nodes of this graph, e.g. a str"),
    ],
)  # fmt: skip
def test_collect_nodes_judge_reads_any_list(source: str, feedback: str) -> None:
    """Exercise 1 is judged from each listed item's own description (grade.py never knows the
    answer): other objects, foreign nodes, a missing output node and the order are all told."""
    scope = dict(NB.namespace)
    exec(f"def collect_nodes(t):\n    {source}\n", scope)
    scope["_bfs"] = NB.namespace["collect_nodes"]
    with pytest.raises(AssertionError, match=re.escape(feedback)):
        grade.collect_nodes(scope["collect_nodes"], seed=5)


def test_the_cases_know_their_nodes_in_breadth_first_order() -> None:
    """What the stand-in collect_nodes returns, and the order leaves are numbered in, is what
    the reference finds: a case's builder lists every node of its graph in breadth-first order
    without walking it."""
    checked = 0
    for seed in range(40):
        builders = grade.case_builders(seed)
        if seed:  # the fixed cases are the same for every seed
            builders = [b for b in builders if b[0].startswith("random graph")]
        for description, build in builders:
            for lib in grading.LIBRARIES:
                out, nodes, leaves = build(lib)
                assert _same_objects(nodes, reference.collect_nodes(out)), (seed, description)
                assert _same_objects(leaves, reference.find_leaves(out)), (seed, description)
                checked += 1
    assert checked > 400


def test_random_graphs_share_nodes_and_differ_from_a_depth_first_walk() -> None:
    steps = [grade.random_steps(seed, 30) for seed in range(20)]
    shared = [
        len(s) - len({o[1:] for step in s for o in step.operands if o[0] == "step"}) for s in steps
    ]
    assert sum(n > 0 for n in shared) >= 15
    assert sum(any(step.kind == "unbind" for step in s) for s in steps) >= 5
    differs = 0
    for seed, s in enumerate(steps):
        out, nodes, _ = grade.build_steps(s, torch, seed)
        differs += not _same_objects(nodes, minitorch.memory.graph_nodes(out.grad_fn))
    assert differs >= 10


@pytest.mark.parametrize(
    "wrong",
    WRONG_ANSWERS["ex1_collect_nodes"],
    ids=[w.name for w in WRONG_ANSWERS["ex1_collect_nodes"]],
)
def test_a_wrong_collect_nodes_costs_only_exercise_1(wrong: Any) -> None:
    """Issue 14: exercises 2, 3 and 7 build on collect_nodes; their graders give the student's
    answers a stand-in for it, so the right answers keep full marks next to a wrong exercise 1
    (a depth-first one included: exercise 3's order does not depend on it)."""
    scope = dict(NB.namespace)
    exec(wrong.source, scope)
    for grade_id in ("ex2_count_ops", "ex3_find_leaves", "ex7_graph_sizes", "ex8_value"):
        exec(NB.cell(grade_id).source, scope)
        grader, name = NB.grader_and_name(grade_id)
        assert grader(scope[name], seed=99) is None, grade_id


def test_time_limit_stops_a_runaway_call_and_nothing_arrives_later() -> None:
    def forever() -> None:
        while True:
            try:
                sum(range(100))
            except Exception:  # a student's broad except does not swallow the interrupt
                pass

    start = time.perf_counter()
    assert grading.bounded_call(forever, call="forever()", seconds=0.2) == (None, False)
    assert time.perf_counter() - start < 5
    for _ in range(20):  # no interrupt is left pending for the code that runs next
        assert grading.bounded_call(lambda: sum(range(10_000)), call="f()", seconds=5) == (
            49995000,
            True,
        )
        time.sleep(0.01)


def test_softplus_reference_is_pytorchs() -> None:
    """The Softplus judge compares with the reference's observation: that is PyTorch's."""
    gen = torch.Generator().manual_seed(0)
    for beta in (0.5, 1.0, 2.0, 2.7):
        values = (torch.rand(3, 4, generator=gen, dtype=torch.float64) - 0.5) * (8 / beta)
        x = minitorch.tensor(values.tolist(), dtype=minitorch.float64, requires_grad=True)
        out = reference.Softplus.apply(x, beta)
        out.sum().backward()
        expected_x = values.clone().requires_grad_()
        F.softplus(expected_x, beta=beta).sum().backward()
        assert torch.allclose(out._data, F.softplus(values, beta=beta), rtol=1e-9, atol=1e-12)
        assert torch.allclose(x.grad._data, expected_x.grad, rtol=1e-9, atol=1e-12)


def test_f_and_gradients_reference_matches_the_formulas() -> None:
    for seed in (None, 7, 99):
        data = judging.expected(grade.f_and_gradients, seed)
        assert len(data) == 10
        for call, case in data.items():
            x, y = map(float, re.findall(r"(-?[0-9.]+)", call.split(",", 1)[1]))
            value = x**2 + y**3 - math.sin(x * y)
            assert math.isclose(case["out"]["value"], value, rel_tol=1e-12, abs_tol=1e-12)
            df_dx, df_dy = 2 * x - y * math.cos(x * y), 3 * y**2 - x * math.cos(x * y)
            assert math.isclose(case["df_dx"], df_dx, rel_tol=1e-12, abs_tol=1e-12)
            assert math.isclose(case["df_dy"], df_dy, rel_tol=1e-12, abs_tol=1e-12)


def test_the_reference_value_records_pytorchs_graphs() -> None:
    """Exercise 8 is judged against the reference Value: on every program it records what
    PyTorch records (names, edges, leaves, what each node returns) and the grader's chain
    rule over PyTorch's graph gives PyTorch's own gradients."""
    from solutions.graph_construction import judge

    for seed in (1, 7, 99):
        programs = grade.recording_programs(seed)
        assert any(len(code) > 12 for _, code in programs)
        expected = judging.expected(grade.recording_value, seed)
        on_torch = {}
        for description, code in programs:
            where = f"recording {description}"
            observed = grade.observe_program(code, grade.torch_leaf, where)
            on_torch[where] = grading.through_json(
                grading.plain({"code": grade._describe(code), **observed})
            )
            values = grade.run_program(code, grade.torch_leaf)
            if values[-1].requires_grad:
                leaves = [v for v, line in zip(values, code) if line[0] == "leaf"]
                values[-1].backward()
                index = {id(v): i for i, v in enumerate(values)}
                for leaf in leaves:
                    if leaf.grad is not None:
                        found = observed["gradients"][str(index[id(leaf)])]
                        assert math.isclose(found, leaf.grad.item(), rel_tol=1e-9), where
        judge.recording_value(on_torch, expected)
        judge.recording_value(expected, on_torch)


def test_the_value_programs_take_both_branches_and_record_nothing_without_grad() -> None:
    programs = dict(grade.recording_programs(None))
    loop = programs["program(x, w, 3), a loop and an if"]
    other = programs["program(x, w, 1), the other branch"]
    assert loop[-1][0] == "mul" and other[-1][0] == "add"  # h * x, and h * h + w
    nothing = grade.run_program(
        programs["only values without grad: nothing is recorded"], reference.Value
    )
    assert all(v.grad_fn is None for v in nothing)
