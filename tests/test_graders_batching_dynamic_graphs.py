"""Notebook 6 ("batching_dynamic_graphs"): what its graders check beyond what every
assignment's graders check (tests/test_graders_common.py): specific feedback for specific
mistakes, and the graders' own ground truth.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from course_notebooks import course_notebook

from solutions.batching_dynamic_graphs import grade, judge, reference

NB = course_notebook("batching_dynamic_graphs")

# The feedback each wrong answer must get: the mistake named, not just "wrong".
EXPECTED_FEEDBACK = {
    ("ex1_signature", "sample_included"): "equal signatures expected",
    ("ex1_signature", "param_ignored"): "parameter W and linear with parameter V",
    ("ex1_signature", "arg_shapes_ignored"): "sum over an argument of shape (4,)",
    ("ex1_signature", "attrs_ignored"): "pow with attrs (2,)",
    ("ex1_signature", "list_not_hashable"): "unhashable list",
    ("ex2_schedule_by_depth", "depth_only"): "mixes nodes of different signatures",
    ("ex2_schedule_by_depth", "signature_only"): "before node",
    ("ex2_schedule_by_depth", "position_in_sample"): "",
    ("ex2_schedule_by_depth", "height_not_depth"): "",
    ("ex2_schedule_by_depth", "ignores_signature_of"): "signature_of is the same for every node",
    ("ex3_schedule_agenda", "average_over_ready_nodes"): "but the agenda runs",
    ("ex3_schedule_agenda", "matmul_not_deferred"): "but the agenda runs",
    ("ex3_schedule_agenda", "largest_group_first"): "but the agenda runs",
    ("ex3_schedule_agenda", "every_ready_signature_each_round"): "",
    ("ex3_schedule_agenda", "ties_not_broken"): "but the agenda runs",
    ("ex3_schedule_agenda", "ties_by_signature_value"): "but the agenda runs",
    ("ex3_schedule_agenda", "ignores_signature_of"): "signature_of is the same for every node",
    ("ex4_gather", "overwrite_not_add"): "a row gathered twice receives the sum",
    ("ex4_gather", "gather_in_backward"): "",
    ("ex4_gather", "one_hot_not_transposed"): "",
    ("ex4_gather", "first_row_repeated"): "forward gave",
    ("ex4_gather", "view_for_identity_index"): "shares memory with the source",
    ("ex4_gather", "buffer_kept_in_ctx"): "after a second backward",
    ("ex4_gather", "scatter_into_the_source"): "changed its inputs",
    ("ex4_gather", "float32_one_hot"): "keep the source's dtype",
    ("ex5_batched_forward", "per_sample_loop"): "at most once per height",
    ("ex5_batched_forward", "children_swapped"): "the per-sample model gives",
    ("ex5_batched_forward", "levels_detached"): "the gradient of",
    ("ex5_batched_forward", "first_operator_for_the_level"): "the per-sample model gives",
    ("ex5_batched_forward", "op_vector_row_per_node"): "not one op per tree node",
    ("ex5_batched_forward", "float64_values"): "a float32 model raised",
    ("ex6_tree_speedup", "inverted"): "return per-sample time / batched time",
    ("ex6_tree_speedup", "one_tree_per_sample"): "time forward and backward of all 12 trees",
    ("ex6_tree_speedup", "check_inside_the_timing"): "nothing else inside the timing",
    ("ex6_tree_speedup", "forward_only"): "what the forward passes alone give",
    ("ex6_tree_speedup", "backward_outside_the_timing"): "what the forward passes alone give",
    ("ex6_tree_speedup", "batched_forward_only"): "the batched forward pass alone",
    ("ex7_predict_calls", "reads_cost_nothing"): "wrong: 'b', 'c', 'd'",
    ("ex7_predict_calls", "depth_as_good_as_agenda"): "wrong: 'e'",
    ("ex7_predict_calls", "flushes_counted_not_calls"): "0 of 5 right",
}

WRONG = [(gid, wrong) for gid, wrongs in NB.wrong_answers.items() for wrong in wrongs]


def test_every_wrong_answer_has_expected_feedback() -> None:
    assert set(EXPECTED_FEEDBACK) == {(gid, w.name) for gid, w in WRONG}


def test_at_least_three_wrong_answers_per_exercise() -> None:
    assert all(len(NB.wrong_answers[gid]) >= 3 for gid in NB.exercises)


@pytest.mark.parametrize(("grade_id", "wrong"), WRONG, ids=[f"{g}-{w.name}" for g, w in WRONG])
def test_wrong_answer_gets_its_expected_feedback(grade_id: str, wrong: Any) -> None:
    points, message = NB.score(grade_id, wrong.source, seed=5)
    assert points < NB.points(grade_id)
    expected = EXPECTED_FEEDBACK[(grade_id, wrong.name)]
    assert expected in message, f"expected {expected!r} in the feedback: {message}"


def test_agenda_makes_fewer_calls_than_depth_on_sequences() -> None:
    """Exercise 3's point, on the notebook's graph and on random lengths."""
    for lengths in ([1, 2, 3], [1, 2, 3, 4], [5, 1, 3]):
        nodes = reference.sequence_graph(lengths)
        agenda = reference.schedule_agenda(nodes, reference.signature)
        depth = reference.schedule_by_depth(nodes, reference.signature)
        assert len(agenda) < len(depth)
    assert len(reference.schedule_agenda(reference.sequence_graph([1, 2, 3]))) == 9


@pytest.mark.parametrize("seed", range(5))
def test_reference_schedules_are_valid(seed: int) -> None:
    """The graders' ground truth: both reference schedules run every node once, after its
    args, one signature per batch; by depth is exactly the (depth, signature) groups."""
    for case in grade.graph_cases(seed) + grade.boundary_cases(seed):
        nodes, graph = case.nodes, case.describe()
        for scheduler in (reference.schedule_by_depth, reference.schedule_agenda):
            judge.check_schedule(scheduler(nodes, case.signature_of), graph, "reference")
        depth = reference.node_depths(nodes)
        groups = {(depth[n.id], case.signature_of(n, nodes)) for n in nodes}
        assert len(reference.schedule_by_depth(nodes, case.signature_of)) == len(groups)


@pytest.mark.parametrize("seed", range(5))
def test_stand_in_signatures_are_the_true_ones(seed: int) -> None:
    """The schedulers' stand-in `signature_of` (labels filled while the grader built each
    graph) groups the nodes exactly as the reference `signature` does."""

    def partition(values: list) -> list[int]:
        numbers: dict = {}
        return [numbers.setdefault(v, len(numbers)) for v in values]

    for case in grade.graph_cases(seed):
        nodes = case.nodes
        truth = partition([reference.signature(n, nodes) for n in nodes])
        assert partition([case.signature_of(n, nodes) for n in nodes]) == truth, case.name


def test_random_graphs_tell_the_schedulers_apart() -> None:
    """The graders' random graphs batch nodes across samples, and the agenda differs from
    by depth on some of them, so a by-depth answer cannot pass exercise 3."""
    differs = 0
    for seed in range(5):
        for case in grade.graph_cases(seed):
            agenda = reference.schedule_agenda(case.nodes)
            assert any(len(b) > 1 for b in agenda)
            differs += len(agenda) != len(reference.schedule_by_depth(case.nodes))
    assert differs >= 5


def test_prediction_truth_matches_the_notebook() -> None:
    """Exercise 7's truth, the notebook's answer, and the points of its test cell agree."""
    assert {k: judge.calls_of(k) for k in judge.FLUSHES} == reference.predict_calls()
    assert set(judge.FLUSHES) == set(reference.SCENARIOS)
    assert NB.points("ex7_predict_calls") == judge.PREDICTION_POINTS
    assert judge.calls_of("b") == sum(1 + 2 * n + 2 for n in judge.LENGTHS)


def test_prediction_partial_credit() -> None:
    points, feedback = NB.score("ex7_predict_calls", "def predict_calls():\n    return "
                                + repr({**reference.predict_calls(), "e": 11}))  # fmt: skip
    assert points == pytest.approx(2.4) and "'e'" in feedback


def test_batched_forward_counts_calls_per_height() -> None:
    """The reference makes one leaf call and one cell call per height."""
    trees, _ = reference.make_expression_trees(10, max_depth=4, seed=random.Random(1).randrange(99))
    model = reference.TreeModel(hidden=3).double()
    calls = {"leaf": 0, "cell": 0}
    grade._count_calls(model.leaf, calls, "leaf")
    grade._count_calls(model.cell, calls, "cell")
    reference.batched_forward(model, trees)
    assert calls == {"leaf": 1, "cell": max(t.depth() for t in trees)}


def _wrong(grade_id: str, name: str) -> Any:
    (wrong,) = [w for w in NB.wrong_answers[grade_id] if w.name == name]
    return NB.answer(grade_id, wrong.source)


@pytest.mark.parametrize(
    ("grade_id", "name", "case"),
    [
        ("ex3_schedule_agenda", "ties_not_broken", "a tie: tanh and sigmoid"),
        ("ex3_schedule_agenda", "ties_by_signature_value", "a tie: tanh and sigmoid"),
        ("ex3_schedule_agenda", "largest_group_first", "a tie: tanh and sigmoid"),
        ("ex3_schedule_agenda", "matmul_not_deferred", "a tie: linear W and tanh"),
        ("ex3_schedule_agenda", "ignores_signature_of", "the same for every node"),
        ("ex2_schedule_by_depth", "ignores_signature_of", "the same for every node"),
    ],
)
def test_boundary_cases_catch_on_their_own(grade_id: str, name: str, case: str) -> None:
    """Each boundary graph (ties in the agenda's priority, one signature for every node) tells
    the mistake it is for from the reference, whatever the random graphs do."""
    (chosen,) = [c for c in grade.boundary_cases(5) if case in c.name]
    scheduler = getattr(reference, grade_id.split("_", 1)[1])
    want = scheduler(chosen.nodes, chosen.signature_of)
    got = _wrong(grade_id, name)(chosen.nodes, chosen.signature_of)
    if grade_id == "ex2_schedule_by_depth":
        assert {frozenset(b) for b in got} != {frozenset(b) for b in want}
    else:
        assert [sorted(b) for b in got] != [sorted(b) for b in want]


def test_single_node_and_ties_have_the_documented_schedules() -> None:
    cases = {c.name: c for c in grade.boundary_cases(0)}
    single = cases["a graph of a single node"]
    assert reference.schedule_agenda(single.nodes, single.signature_of) == [[0]]
    ties = next(c for name, c in cases.items() if "tanh and sigmoid" in name)
    assert reference.schedule_agenda(ties.nodes, ties.signature_of) == [[0, 1, 2], [3], [4, 5]]
    matmul = next(c for name, c in cases.items() if "linear W and tanh" in name)
    assert reference.schedule_agenda(matmul.nodes, matmul.signature_of) == [[0, 2], [3], [1]]


def test_batched_forward_op_count_does_not_grow_with_the_nodes() -> None:
    """The cost contract: the reference records a few ops per height whatever the number of
    trees, and one indexing op per node goes over the judge's limit on the many-trees case."""
    observed = grade.batched_forward.observe(NB.namespace["batched_forward"], seed=3)
    for where, seen in observed.items():
        assert seen["ops recorded"] <= 10 * (seen["height"] + 1), where
    per_node = grade.batched_forward.observe(
        _wrong("ex5_batched_forward", "op_vector_row_per_node"), seed=3
    )
    many = next(where for where in observed if where.startswith("40 trees"))
    limit = judge.OPS_FACTOR * observed[many]["ops recorded"] + judge.OPS_SLACK
    assert per_node[many]["ops recorded"] > limit


def test_speedup_is_counted_on_the_graders_clock_whatever_the_load() -> None:
    """NOTE [Timing on a loaded machine]: the reference's ratio is exactly the stand-ins' one,
    even while another thread keeps a core busy, and every clock is the real one afterwards."""
    import threading
    import time
    import timeit

    clocks = (time.perf_counter, time.perf_counter_ns, time.monotonic, timeit.default_timer)
    defaults = timeit.repeat.__defaults__
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            sum(range(10_000))

    worker = threading.Thread(target=busy)
    worker.start()
    try:
        ratios = [grade.tree_speedup.observe(reference.tree_speedup)["ratio"] for _ in range(3)]
    finally:
        stop.set()
        worker.join()
    want = judge.speedup_ratios(grade.TIMING_TREES)["forward and backward"]
    assert ratios == [pytest.approx(want, rel=1e-9)] * 3
    assert (time.perf_counter, time.perf_counter_ns, time.monotonic, timeit.default_timer) == clocks
    assert timeit.repeat.__defaults__ == defaults
    mistakes = judge.speedup_ratios(grade.TIMING_TREES)
    named = ("forward only", "backward only", "batched forward only")
    assert min(abs(mistakes[k] / want - 1) for k in named) > 0.3


def test_batched_forward_has_a_float32_case() -> None:
    dtypes = {dtype for *_, dtype in grade.tree_cases(0)}
    assert dtypes == {reference.torch.float32, reference.torch.float64}
