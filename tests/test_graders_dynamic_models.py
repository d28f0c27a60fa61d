"""Notebook 3 ("dynamic_models"): what its graders check beyond what every assignment's graders
check (tests/test_graders_common.py): specific feedback for specific mistakes, and the
graders' own ground truth.
"""

from __future__ import annotations

import random

import torch
from course_notebooks import course_notebook

import minitorch
from solutions.dynamic_models import grade, reference

NB = course_notebook("dynamic_models")


def test_specific_mistakes_get_specific_feedback() -> None:
    message = NB.wrong_message

    assert "plain Python list" in message("ex1_depth_net", "plain_list_of_blocks")
    assert "also the first" in message("ex1_depth_net", "norm_checked_after_the_block")
    assert "any pass used it" in message("ex1_depth_net", "prediction_from_the_last_pass_only")
    assert "branch of the first sample" in message("ex2_router", "route_of_the_first_sample")
    assert "must stay None" in message("ex2_router", "every_branch_then_mask")
    assert "samples' order" in message("ex2_router", "concatenated_in_branch_order")
    assert "n - 1" in message("ex3_summarize", "off_by_one_last_step")
    assert "last padded step" in message("ex3_summarize", "last_padded_step")
    assert "before you average" in message("ex3_summarize", "mask_after_the_mean")
    assert "padded length" in message("ex3_summarize", "divides_by_the_padded_length")
    assert "padding" in message("ex4_sequence_classifier", "no_packing")
    assert "run alone" in message("ex4_sequence_classifier", "last_column_of_the_unpacked_output")
    assert "enforce_sorted" in message("ex4_sequence_classifier", "packed_as_if_sorted")
    assert "parameters" in message("ex5_fixed_mlp", "plain_list_of_layers")
    assert "state_dict keys" in message("ex5_fixed_mlp", "sequential_with_relu_modules")
    assert "left child" in message("ex6_tree_net", "children_swapped")
    assert "gradient cut" in message("ex6_tree_net", "children_detached")
    assert "'b'" in message("ex7_predict_loading", "forward_is_saved")


def test_depth_net_cases_cover_every_depth() -> None:
    """Exercise 1 is graded on inputs of every depth from 0 to max_depth (the weights and
    thresholds the grader draws make every depth reachable)."""
    for seed in range(6):
        rng = random.Random(seed)
        features, max_depth = rng.randint(3, 5), rng.randint(2, 4)
        net = reference.DepthNet(features, max_depth, round(rng.uniform(0.6, 0.9), 2)).double()
        gen = torch.Generator().manual_seed(seed)
        for _ in range(5):
            grade._randomize(net, gen, 0.5)
            inputs = grade._inputs_for_every_depth(net, gen, features)
            if len(inputs) == max_depth + 1:
                break
        assert len(inputs) == max_depth + 1, seed


def test_twins_agree_with_minitorch_layers() -> None:
    """The PyTorch twins the graders trust compute what the minitorch reference computes."""
    gen = torch.Generator().manual_seed(0)
    tree_net = reference.TreeNet(3).double()
    grade._randomize(tree_net, gen, 0.8)
    trees, _ = minitorch.datasets.make_expression_trees(5, max_depth=3, seed=4)
    for tree in trees:
        assert torch.allclose(
            grade._data(tree_net(tree)), grade.tree_twin(grade._state(tree_net), tree)
        )
    router = reference.Router(3, 2, 3).double()
    grade._randomize(router, gen)
    x = torch.randn(6, 3, generator=gen, dtype=torch.float64)
    route = [0, 2, 2, 1, 0, 2]
    got = router(grade._mini(x), minitorch.tensor(route))
    assert torch.allclose(grade._data(got), grade.router_twin(grade._state(router), x, route))


def test_loading_outcomes_match_both_libraries() -> None:
    """Exercise 7's truth comes from running the targets: every outcome occurs, the two
    libraries agree, and the reference answer is that truth."""
    found = {}
    for key, target in reference.TARGETS.items():
        outcomes = {grade.classify_loading(target, lib) for lib in (torch, minitorch)}
        assert len(outcomes) == 1, key
        found[key] = outcomes.pop()
    assert found == reference.predict_loading()
    assert set(found.values()) == set(reference.OUTCOMES)
