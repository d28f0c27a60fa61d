"""Notebook 4 ("memory"): what its graders check beyond what every assignment's graders
check (tests/test_graders_common.py): specific feedback for specific mistakes, and the
graders' own ground truth.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from course_notebooks import course_notebook, role

import minitorch
from minitorch import memory
from solutions.memory import grade, judge

NB = course_notebook("memory")

# The feedback each wrong answer must get: the mistake named, not just "wrong".
EXPECTED_FEEDBACK = {
    ("ex1_saved_bytes", "bytes_per_saved_tensor"): "you count each saved tensor's own bytes",
    ("ex1_saved_bytes", "parameters_always_counted"): "with the parameters' storages",
    ("ex1_saved_bytes", "output_node_only"): "Visit every node",
    ("ex1_saved_bytes", "data_ptr_of_each_view"): "expected",
    ("ex1_saved_bytes", "recursive_walk"): "raised RecursionError",
    ("ex1_saved_bytes", "no_seen_set"): "Remember the nodes you have seen in a set",
    ("ex2_train_epoch", "validation_loss_tensors_kept"): "memory peaked at",
    ("ex2_train_epoch", "detach_in_the_wrong_place"): "more bytes allocated than after 1",
    ("ex2_train_epoch", "no_grad_around_training"): "does not require grad",
    ("ex2_train_epoch", "running_total_tensor"): "more graph nodes were alive",
    ("ex2_train_epoch", "mean_over_all_samples"): "each batch counts once",
    ("ex3_evaluate", "eval_mode_only"): "model.eval()",
    ("ex3_evaluate", "pytorch_no_grad"): "torch.no_grad() is PyTorch's switch",
    ("ex3_evaluate", "detach_output"): "at its peak",
    ("ex3_evaluate", "grad_mode_left_off"): "left grad mode off",
    ("ex3_evaluate", "mean_over_all_samples"): "each batch counting once",
    ("ex4_checkpoint", "saves_activations_anyway"): "still keeps the activations",
    ("ex4_checkpoint", "gradients_of_inputs_only"): "grad is None",
    ("ex4_checkpoint", "recompute_without_enable_grad"): "does not require grad",
    ("ex4_checkpoint", "reentrant_trap"): "the trap of PyTorch's reentrant checkpoint",
    ("ex5_best_segments", "most_segments"): "the best choice needs",
    ("ex5_best_segments", "forward_peak_only"): "the best choice needs",
    ("ex5_best_segments", "end_memory_not_peak"): "the best choice needs",
    ("ex5_best_segments", "without_the_last"): "the best choice needs",
    ("ex5_best_segments", "from_two_segments"): "on ties, return the fewest segments",
    ("ex5_best_segments", "ties_toward_more_segments"): "on ties, return the fewest segments",
    ("ex6_step_within_budget", "full_batch"): "over the budget",
    ("ex6_step_within_budget", "mean_of_micro_batch_means"): "its share of the batch",
    ("ex6_step_within_budget", "one_backward_at_the_end"): "over the budget",
    ("ex6_step_within_budget", "probe_gradients_kept"): "differs from the expected gradient",
    ("ex7_truncated_bptt", "one_backward_at_the_end"): "memory grows with the sequence",
    ("ex7_truncated_bptt", "detach_every_step"): "differs from the expected gradient",
    ("ex7_truncated_bptt", "retain_graph_instead_of_detach"): "differs from the expected",
    ("ex7_truncated_bptt", "last_chunk_dropped"): "expected the sum of the step losses",
    ("ex7_truncated_bptt", "running_total_of_loss_tensors"): "more graph nodes were alive",
    ("ex8_half_precision_hooks", "one_copy_per_save"): "one copy per tensor",
    ("ex8_half_precision_hooks", "keeps_the_original"): "at most 0.6x",
    ("ex8_half_precision_hooks", "original_kept_in_the_cache"): "keeps the original tensors",
    ("ex8_half_precision_hooks", "unpack_stays_half"): "original dtype",
    ("ex8_half_precision_hooks", "copies_of_dead_tensors_kept"): "keep the copies of tensors",
    ("ex8_half_precision_hooks", "half_copies_of_leaves"): "pack(a leaf) allocated",
}


WRONG = [(gid, wrong) for gid, wrongs in NB.wrong_answers.items() for wrong in wrongs]


def test_every_wrong_answer_has_expected_feedback() -> None:
    assert set(EXPECTED_FEEDBACK) == {(gid, w.name) for gid, w in WRONG}


@pytest.mark.parametrize(("grade_id", "wrong"), WRONG, ids=[f"{g}-{w.name}" for g, w in WRONG])
def test_wrong_answer_gets_its_expected_feedback(grade_id: str, wrong: Any) -> None:
    message = NB.wrong_message(grade_id, wrong.name, seed=5)
    expected = EXPECTED_FEEDBACK[(grade_id, wrong.name)]
    assert expected in message, f"expected {expected!r} in the feedback: {message}"


def test_saved_bytes_cases_exercise_shared_storage_and_parameters() -> None:
    """Exercise 1's graphs tell the mistakes apart: some graph saves a storage several times,
    some saves parameters, and only the freed graph and the leaf save nothing."""
    shared = with_parameters = empty = 0
    for _, build in grade._graph_cases(3):
        out = build()
        without, including = (memory.saved_bytes(out, include_parameters=p) for p in (0, 1))
        shared += grade._saved_per_tensor(out, True) > including
        with_parameters += including > without
        empty += including == 0
    assert shared >= 3 and with_parameters >= 5 and empty == 2


def test_untyped_storage_is_pytorchs() -> None:
    """Exercise 1 identifies storages with `untyped_storage()`: views share one, whose size is
    the whole storage's, as in PyTorch."""

    for lib in (torch, minitorch):
        a = lib.zeros(4, 5, dtype=torch.float64)
        views = [a[2], a.t(), a.reshape(20)[3:], a.detach()]
        ptrs = {v.untyped_storage().data_ptr() for v in views}
        assert ptrs == {a.untyped_storage().data_ptr()}
        assert all(v.untyped_storage().nbytes() == 160 for v in views)
        assert a.clone().untyped_storage().data_ptr() != a.untyped_storage().data_ptr()


def test_segment_cases_cover_both_ends_and_ties() -> None:
    """Exercise 5's cases tell apart answers that skip an end of the search range or break ties
    toward more segments: some case is best at 1 segment, some only at len(model), and in some
    the lowest peak is shared by several choices."""
    bests = []
    for case in grade.SEGMENT_CASES:
        peaks = judge.segment_peaks(case)
        bests.append([s for s, p in enumerate(peaks, start=1) if p == min(peaks)])
    depths = [case[1] for case in grade.SEGMENT_CASES]
    assert any(best == [depth] for best, depth in zip(bests, depths))
    assert any(best[0] == 1 for best in bests)
    assert sum(len(best) > 1 for best in bests) >= 2


def test_segment_peaks_depend_on_shapes_only() -> None:
    """The judge measures exercise 5's peaks once, on models of the cases' shapes made with
    seed 0: the graded models, made with other seeds, have the same peaks."""
    case = grade.SEGMENT_CASES[2]
    model, x = grade.segment_case(12345, *case)
    with memory.track():
        assert tuple(judge.measured_peaks(model, x)) == judge.segment_peaks(case)


def test_reference_hooks_forget_the_copies_of_dead_tensors() -> None:
    """Issue 21: the reference's half-precision hooks, reused over steps, hold nothing once a
    step's graph is gone, and the memory left after each step does not grow."""
    seen = grade.half_precision_hooks.observe(NB.namespace["half_precision_hooks"], seed=3)
    steps = seen[f"{grade.HOOK_STEPS} training steps with one half_precision_hooks()"]
    assert steps["tensor bytes the hooks hold after the first and the last step"] == [0, 0]
    left = steps["bytes allocated after the first and the last step"]
    assert left[0] == left[1]
    pack = seen["pack and unpack called directly"]
    assert pack["bytes a leaf's pack allocates"] == 0
    assert pack["bytes its first pack allocates"] * 4 == pack["bytes of the float64 tensor"]
    assert pack["bytes packing it again allocates"] == 0


def _run_notebook(answers: dict[str, str]) -> tuple[list[str], list[str]]:
    """Run the committed notebook's code cells in order in one namespace, as a kernel does
    (hidden tests included), with some answer cells replaced; errors do not stop the run, as
    in nbgrader's autograde. Returns the grade_ids of the failed test cells and the sources of
    the other cells that raised."""
    import matplotlib

    matplotlib.use("Agg")
    namespace: dict[str, Any] = {}
    failed_tests, failed_cells = [], []
    for cell in NB.nb.cells:
        if cell.cell_type != "code":
            continue
        meta = role(cell)
        source = answers.get(meta.get("grade_id"), cell.source)
        try:
            exec(compile(source, f"<cell {meta.get('grade_id', '')}>", "exec"), namespace)
        except Exception:
            if meta.get("grade"):
                failed_tests.append(meta["grade_id"])
            else:
                failed_cells.append(source[:80])
    return failed_tests, failed_cells


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
def test_grad_mode_left_off_costs_only_its_own_exercise() -> None:
    """Issue 14: an `evaluate` that switches grad mode off for good fails exercise 3 only. Its
    visible test puts grad mode back, and every hidden test starts with grad mode on, so the
    cells after it (demos, visible and hidden tests) run as usual."""
    (wrong,) = [w for w in NB.wrong_answers["ex3_evaluate"] if w.name == "grad_mode_left_off"]
    failed_tests, failed_cells = _run_notebook({"ex3_evaluate": wrong.source})
    assert failed_tests == ["ex3_evaluate_tests"]
    assert failed_cells == []


def test_counted_walk_stops_a_walk_without_a_seen_set_and_restores_the_graph() -> None:
    """Issue 33: exercise 1's walk bound counts reads of next_functions, not seconds. A walk
    that visits each node once stays within it; one that follows every path is stopped after a
    few hundred reads of a graph with 2**40 paths; the nodes get their own tuples back."""
    x = minitorch.randn(3, 3, requires_grad=True)
    h = x * 1.0
    for _ in range(40):
        h = h * h
    out = h.sum()
    nodes = memory.graph_nodes(out)

    def follow_every_path(t: Any) -> int:
        reads, stack = 0, [t.grad_fn]
        while stack:
            node = stack.pop()
            reads += 1
            stack.extend(child for child, _ in node.next_functions if child is not None)
        return reads

    with grade.counted_walk(out, "the reference"):
        assert memory.saved_bytes(out) == NB.namespace["saved_bytes"](out)
    with pytest.raises(grade.Failure, match="visits a node once for every path"):
        with grade.counted_walk(out, "a walk without a seen set"):
            follow_every_path(out)
    assert all(type(node.next_functions) is tuple for node in nodes)
    assert memory.graph_nodes(out) == nodes


def test_reference_bptt_keeps_no_chunk_alive() -> None:
    """Issue 33: the reference's truncated BPTT has as many graph nodes alive when the last
    chunk starts as when the second does (the judge holds students to that figure)."""
    seen = grade.truncated_bptt.observe(NB.namespace["truncated_bptt"], seed=3)
    assert seen[grade.BPTT_NODES] == 0
