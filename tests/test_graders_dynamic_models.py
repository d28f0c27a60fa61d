"""Notebook 3 ("dynamic_models"): what its hidden tests check beyond what every assignment's
check (tests/test_graders_common.py): specific feedback for specific mistakes, partial credit,
the cost measures, and the ground truth (the reference the judges compare with agrees with the
same computation written in PyTorch, and exercise 7's truth with running the targets).
"""

from __future__ import annotations

import random

import pytest
import torch
from course_notebooks import course_notebook

import minitorch
from minitorch.autograd.record import Recorder
from minitorch.datasets import ExprTree, make_expression_trees
from solutions.dynamic_models import grade, judge, reference
from solutions.judging import verdict

NB = course_notebook("dynamic_models")


def feedback(grade_id: str, name: str) -> str:
    """The feedback that the wrong answer `name` gets (a failure's message, or the note of a
    partial result)."""
    (wrong,) = [w for w in NB.wrong_answers[grade_id] if w.name == name]
    return NB.score(grade_id, wrong.source)[1]


def test_specific_mistakes_get_specific_feedback() -> None:
    message = NB.wrong_message

    assert "plain Python list" in message("ex1_depth_net", "plain_list_of_blocks")
    assert "also the first" in message("ex1_depth_net", "norm_checked_after_the_block")
    assert "any pass used it" in message("ex1_depth_net", "prediction_from_the_last_pass_only")
    assert "exactly the threshold" in message("ex1_depth_net", "runs_a_block_at_the_threshold")
    assert "branch of the first sample" in message("ex2_router", "route_of_the_first_sample")
    assert "must stay None" in message("ex2_router", "every_branch_then_mask")
    assert "samples' order" in message("ex2_router", "concatenated_in_branch_order")
    assert "not on the whole batch" in message("ex2_router", "every_branch_on_the_whole_batch")
    assert "no Python loop over the samples" in message("ex2_router", "loop_over_samples")
    assert "dtype=x.dtype" in message("ex2_router", "float32_output_buffer")
    assert "n - 1" in message("ex3_summarize", "off_by_one_last_step")
    assert "last padded step" in message("ex3_summarize", "last_padded_step")
    assert "before you average" in message("ex3_summarize", "mask_after_the_mean")
    assert "padded length" in message("ex3_summarize", "divides_by_the_padded_length")
    assert "loop over the samples" in message("ex3_summarize", "loop_over_the_batch")
    assert "in place" in message("ex3_summarize", "zeroes_the_padding_in_place")
    assert "padding" in message("ex4_sequence_classifier", "no_packing")
    assert "run alone" in message("ex4_sequence_classifier", "last_column_of_the_unpacked_output")
    assert "enforce_sorted" in message("ex4_sequence_classifier", "packed_as_if_sorted")
    assert "parameters" in message("ex5_fixed_mlp", "plain_list_of_layers")
    assert "state_dict keys" in message("ex5_fixed_mlp", "sequential_with_relu_modules")
    assert "left child" in message("ex6_tree_net", "children_swapped")
    assert "gradient cut" in message("ex6_tree_net", "children_detached")
    assert "self.leaf.weight.dtype" in message("ex6_tree_net", "leaf_value_in_float32")
    assert "'b'" in feedback("ex7_predict_loading", "forward_is_saved")


def test_predict_loading_gives_credit_per_target() -> None:
    """6 of 7 right earns 6/7 of the points, and the note names the wrong target."""
    (wrong,) = [w for w in NB.wrong_answers["ex7_predict_loading"] if w.name.startswith("the_if")]
    points, note = NB.score("ex7_predict_loading", wrong.source)
    assert points == round(judge.PREDICT_LOADING_POINTS * 6 / 7, 2)
    assert "6 of 7" in note and "'g'" in note
    assert NB.points("ex7_predict_loading") == judge.PREDICT_LOADING_POINTS


def test_depth_net_cases_cover_every_depth() -> None:
    """Exercise 1 is graded on inputs of every depth from 0 to max_depth in every model the
    test builds (the sweeps of inputs and weight scales reach them; the kernel cannot search
    for them, it has no reference), and on an input of norm exactly the threshold (depth 0)."""
    for seed in [None, *range(8)]:
        observed = grade.depth_net.observe(reference.DepthNet, seed)
        for call, case in observed.items():
            max_depth = sum(name.startswith("blocks.") for name, _ in case["parameters"]) // 2
            depths = {seen["depth"] for seen in case["passes"].values()}
            assert depths == set(range(max_depth + 1)), (seed, call, depths)
            at_threshold = [w for w in case["passes"] if "exactly the threshold" in w]
            assert [case["passes"][w]["depth"] for w in at_threshold] == [0]


def test_router_work_counts_rows_and_runs_per_branch() -> None:
    """The cost measure of exercise 2: a branch applied to its rows is one run on as many rows
    as are routed to it (two runs when written as a matmul and an add); an unused branch does
    nothing."""
    model = reference.Router(3, 2, 3).double()
    x = minitorch.randn(7, 3, dtype=minitorch.float64, requires_grad=True)
    route = minitorch.tensor([0, 2, 2, 0, 2, 2, 2])
    with Recorder(x, route) as recorder:
        model(x, route)
    assert grade.branch_work(recorder.program, model) == {
        "branches.0": {"rows": 2, "runs": 1},
        "branches.1": {"rows": 0, "runs": 0},
        "branches.2": {"rows": 5, "runs": 1},
    }
    with Recorder(x, route) as recorder:
        branch = model.branches[2]
        x[route == 2] @ branch.weight.t() + branch.bias
        model.branches[0](x)
    assert grade.branch_work(recorder.program, model) == {
        "branches.0": {"rows": 7, "runs": 1},
        "branches.1": {"rows": 0, "runs": 0},
        "branches.2": {"rows": 5, "runs": 2},
    }


def test_judges_fail_cleanly_on_data_they_cannot_read() -> None:
    """An observation is data a student's kernel could forge: a judge reports what it cannot
    read as a failure, never crashes the grading process."""
    for test in ("depth_net", "router", "summarize", "sequence_classifier", "fixed_mlp"):
        for forged in ({"x": 1}, {"cases": 3}, []):
            result = verdict(getattr(grade, test), forged)  # as the grading process judges
            assert result.failed, (test, forged)
    assert judge.predict_loading(["not a dict"], {})[0] == 0


# -------------------------------------------------------------------------------------------------
# The ground truth: the reference (which the judges compare with) against PyTorch
# -------------------------------------------------------------------------------------------------
def _state(model: minitorch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's parameters as PyTorch float64 leaves that require grad."""
    return {name: grade._data(p).requires_grad_() for name, p in model.named_parameters()}


def depth_net_twin(w: dict[str, torch.Tensor], x: torch.Tensor, threshold: float) -> tuple:
    """DepthNet in PyTorch: (output, number of blocks run)."""
    h, depth = x, 0
    max_depth = sum(1 for name in w if name.endswith(".weight")) - 1
    while depth < max_depth and h.norm() > threshold:
        h = torch.tanh(h @ w[f"blocks.{depth}.weight"].T + w[f"blocks.{depth}.bias"])
        depth += 1
    return h @ w["head.weight"].T + w["head.bias"], depth


def router_twin(w: dict[str, torch.Tensor], x: torch.Tensor, route: list[int]) -> torch.Tensor:
    """The per-sample loop in PyTorch."""
    rows = [
        x[i] @ w[f"branches.{k}.weight"].T + w[f"branches.{k}.bias"] for i, k in enumerate(route)
    ]
    return torch.stack(rows)


def tree_twin(w: dict[str, torch.Tensor], tree: ExprTree) -> torch.Tensor:
    """TreeNet in PyTorch: the output for one tree, shape [1]."""

    def encode(node: ExprTree) -> torch.Tensor:
        if node.is_leaf:
            value = torch.tensor([node.value], dtype=torch.float64)
            return torch.tanh(value @ w["leaf.weight"].T + w["leaf.bias"])
        both = torch.cat([encode(node.left), encode(node.right)])
        return torch.tanh(both @ w[f"combine.{node.op}.weight"].T + w[f"combine.{node.op}.bias"])

    return encode(tree) @ w["out.weight"].T + w["out.bias"]


def _same_gradients(model: minitorch.nn.Module, twin: dict[str, torch.Tensor]) -> bool:
    return all(
        (p.grad is None) == (twin[name].grad is None)
        and (p.grad is None or torch.allclose(grade._data(p.grad), twin[name].grad))
        for name, p in model.named_parameters()
    )


@pytest.mark.parametrize("seed", range(3))
def test_reference_agrees_with_pytorch(seed: int) -> None:
    """With weights set the way the hidden tests set them, the reference models compute what
    the same model written in PyTorch computes, values and gradients."""
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    net = reference.DepthNet(4, 3, 0.75)
    grade.fill_parameters(net, seed, 0.5, "DepthNet")
    for x in grade._sweep(gen, 4, 0.75):
        net.zero_grad()
        w = _state(net)
        want, depth = depth_net_twin(w, x, 0.75)
        want.sum().backward()
        got = net(grade._mini(x))
        got.sum().backward()
        assert net.depth == depth and torch.allclose(grade._data(got), want)
        assert _same_gradients(net, w)
    router = reference.Router(3, 2, 3)
    grade.fill_parameters(router, seed, 1.0, "Router")
    x = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    route = [rng.randrange(2) for _ in range(6)]  # branch 2 unused
    w = _state(router)
    router_twin(w, x, route).sum().backward()
    router(grade._mini(x), minitorch.tensor(route)).sum().backward()
    assert _same_gradients(router, w)
    tree_net = reference.TreeNet(3)
    grade.fill_parameters(tree_net, seed, 0.8, "TreeNet")
    trees, _ = make_expression_trees(5, max_depth=3, seed=seed)
    for tree in trees:
        tree_net.zero_grad()
        w = _state(tree_net)
        want = tree_twin(w, tree)
        want.sum().backward()
        got = tree_net(tree)
        got.sum().backward()
        assert torch.allclose(grade._data(got), want) and _same_gradients(tree_net, w)


def test_loading_outcomes_match_both_libraries() -> None:
    """Exercise 7's truth comes from running the targets: every outcome occurs, the two
    libraries agree, and the reference answer is that truth."""
    found = {}
    for key, target in reference.TARGETS.items():
        outcomes = {judge.classify_loading(target, lib) for lib in (torch, minitorch)}
        assert len(outcomes) == 1, key
        found[key] = outcomes.pop()
    assert found == reference.predict_loading() == judge.loading_truth()
    assert set(found.values()) == set(reference.OUTCOMES) == set(judge.OUTCOMES)
