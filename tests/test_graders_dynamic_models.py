"""Notebook 3 ("dynamic_models"): its graders, reference solutions and wrong answers.

No kernels here: the notebook's cells are exec'd in one namespace, as a kernel would run them.
- every grader passes the reference (the notebook's own solution cells, fixed and fresh seeds);
- every grader rejects the blank release (nbgrader's own ClearSolutions stub) and every
  wrong answer in wrong_answers.py with a clean AssertionError: no chained exception, no frame
  of the grader or the reference in the traceback, no line of the reference in the message;
- the committed notebook is exactly what course/generate/dynamic_models.py generates, its solution
  cells are the blocks of reference.py, and its nbgrader metadata is well formed.
"""

from __future__ import annotations

import importlib.util
import random
import re
import sys
import traceback
from pathlib import Path
from typing import Any

import nbformat
import pytest
import torch

import minitorch

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from course.generate.builder import CHECK_OUTPUT, solution_sources, without_outputs  # noqa: E402
from solutions.dynamic_models import grade, reference  # noqa: E402
from solutions.dynamic_models.wrong_answers import WRONG_ANSWERS  # noqa: E402


def _load_generator() -> Any:
    path = REPO_ROOT / "course" / "generate" / "dynamic_models.py"
    spec = importlib.util.spec_from_file_location("build_dynamic_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generator = _load_generator()
NOTEBOOK = nbformat.read(generator.NOTEBOOK, as_version=4)
SOLUTIONS = solution_sources(generator.ASSIGNMENT)
EXERCISES = list(generator.GRADED_OBJECT)  # grade ids, in notebook order
NO_SEED = {"ex7_predict_loading"}  # graders without random cases


def _cell(grade_id: str) -> nbformat.NotebookNode:
    (cell,) = [
        c for c in NOTEBOOK.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id
    ]
    return cell


def _grader_and_name(grade_id: str) -> tuple[Any, str]:
    grader_name, object_name = generator.GRADED_OBJECT[grade_id]
    return getattr(grade, grader_name), object_name


def _seed(grade_id: str, seed: int = 99) -> dict:
    return {} if grade_id in NO_SEED else {"seed": seed}


def _release_source(source: str) -> str:
    """The solution cell as students get it, made by nbgrader's own ClearSolutions."""
    from nbgrader.preprocessors import ClearSolutions

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nb.cells[0].metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "x"}
    nb.metadata["kernelspec"] = {"language": "python", "name": "python3"}
    ClearSolutions().preprocess(nb, {})
    return nb.cells[0].source


@pytest.fixture(scope="module")
def notebook_namespace() -> dict:
    """The notebook's setup cell, the models cell and every solution cell, run in order."""
    namespace: dict[str, Any] = {}
    setup = next(c for c in NOTEBOOK.cells if c.cell_type == "code")
    exec(setup.source, namespace)
    exec(_cell("ex7_models").source, namespace)
    for grade_id in EXERCISES:
        exec(_cell(grade_id).source, namespace)
    return namespace


def _answer(namespace: dict, grade_id: str, source: str) -> Any:
    """Run `source` in place of the exercise's solution cell; return the graded object."""
    scope = dict(namespace)
    exec(source, scope)
    return scope[_grader_and_name(grade_id)[1]]


def _reference_lines(grade_id: str) -> list[str]:
    """The non-trivial lines between BEGIN and END SOLUTION, which feedback must never show."""
    body = SOLUTIONS[grade_id].split("### BEGIN SOLUTION")[1:]
    lines = [
        line.strip() for part in body for line in part.split("### END SOLUTION")[0].split("\n")
    ]
    return [line for line in lines if len(line) >= 12 and not line.startswith("#")]


def _assert_clean_failure(error: AssertionError, grade_id: str) -> None:
    message = str(error)
    for line in _reference_lines(grade_id):
        assert line not in message, f"the message leaks the reference line {line!r}"
    assert error.__cause__ is None and error.__suppress_context__
    frames = traceback.extract_tb(error.__traceback__)
    grader_frames = [f for f in frames if "solutions" in Path(f.filename).parts]
    assert [Path(f.filename).name for f in grader_frames] == ["grading.py"]
    assert grader_frames[0].line.startswith("raise AssertionError(")
    formatted = "".join(traceback.format_exception(error))
    assert "reference.py" not in formatted and "grade.py" not in formatted
    assert "During handling" not in formatted


# -------------------------------------------------------------------------------------------------
# Graders on the reference, the blank release and the wrong answers
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("grade_id", EXERCISES)
def test_reference_passes(grade_id: str, notebook_namespace: dict) -> None:
    grader, name = _grader_and_name(grade_id)
    grader(notebook_namespace[name], **_seed(grade_id, 1234))


def test_reference_passes_fresh_random_cases(notebook_namespace: dict) -> None:
    for seed in (None, 7):
        for grade_id in EXERCISES:
            if grade_id not in NO_SEED:
                grader, name = _grader_and_name(grade_id)
                grader(notebook_namespace[name], seed=seed)


@pytest.mark.parametrize("grade_id", EXERCISES)
def test_blank_release_fails_cleanly(grade_id: str, notebook_namespace: dict) -> None:
    blank = _release_source(SOLUTIONS[grade_id])
    assert "raise NotImplementedError()" in blank and "BEGIN SOLUTION" not in blank
    grader, _ = _grader_and_name(grade_id)
    with pytest.raises(AssertionError) as caught:
        grader(_answer(notebook_namespace, grade_id, blank))
    assert "NotImplementedError" in str(caught.value)
    _assert_clean_failure(caught.value, grade_id)


WRONG = [(gid, wrong) for gid, wrongs in WRONG_ANSWERS.items() for wrong in wrongs]


def test_every_exercise_has_two_wrong_answers() -> None:
    assert set(WRONG_ANSWERS) == set(EXERCISES)
    assert all(len(WRONG_ANSWERS[gid]) >= 2 for gid in EXERCISES)


@pytest.mark.parametrize(("grade_id", "wrong"), WRONG, ids=[f"{g}-{w.name}" for g, w in WRONG])
def test_wrong_answer_fails_cleanly(grade_id: str, wrong: Any, notebook_namespace: dict) -> None:
    grader, _ = _grader_and_name(grade_id)
    with pytest.raises(AssertionError) as caught:
        grader(_answer(notebook_namespace, grade_id, wrong.source), **_seed(grade_id))
    _assert_clean_failure(caught.value, grade_id)


def test_specific_mistakes_get_specific_feedback(notebook_namespace: dict) -> None:
    def message(grade_id: str, name: str) -> str:
        (wrong,) = [w for w in WRONG_ANSWERS[grade_id] if w.name == name]
        grader, _ = _grader_and_name(grade_id)
        with pytest.raises(AssertionError) as caught:
            grader(_answer(notebook_namespace, grade_id, wrong.source), **_seed(grade_id))
        return str(caught.value)

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


def test_non_callables_fail_cleanly() -> None:
    for grade_id in EXERCISES:
        grader, _ = _grader_and_name(grade_id)
        expected = "expected a (function|class derived from nn.Module), got int"
        with pytest.raises(AssertionError, match=expected):
            grader(3)


# -------------------------------------------------------------------------------------------------
# The graders' own ground truth
# -------------------------------------------------------------------------------------------------
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
    trees, _ = minitorch.data.make_expression_trees(5, max_depth=3, seed=4)
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


# -------------------------------------------------------------------------------------------------
# The notebook: no drift from the generator and reference.py, well-formed nbgrader metadata
# -------------------------------------------------------------------------------------------------
def test_committed_notebook_is_what_the_generator_builds() -> None:
    built = without_outputs(generator.build_notebook())
    assert built == without_outputs(NOTEBOOK), (
        "the committed notebook drifted: run python3 course/generate/dynamic_models.py"
    )


@pytest.mark.parametrize("grade_id", EXERCISES)
def test_solution_cells_are_the_reference_blocks(grade_id: str) -> None:
    cell = _cell(grade_id)
    assert cell.source == SOLUTIONS[grade_id]
    assert cell.metadata["nbgrader"] == {
        "schema_version": 3,
        "grade": False,
        "solution": True,
        "locked": False,
        "grade_id": grade_id,
    }
    assert re.fullmatch(r"ex\d_[a-z_]+", grade_id)


@pytest.mark.parametrize("grade_id", EXERCISES)
def test_test_cells_end_with_the_one_line_hidden_call(grade_id: str) -> None:
    cell = _cell(f"{grade_id}_tests")
    meta = cell.metadata["nbgrader"]
    assert meta["grade"] and meta["locked"] and not meta["solution"]
    grader_name, object_name = generator.GRADED_OBJECT[grade_id]
    visible, hidden = cell.source.split("### BEGIN HIDDEN TESTS\n")
    assert "solutions" not in visible and "assert" in visible
    assert hidden == (
        "from solutions.dynamic_models import grade\n\n"
        f"grade.{grader_name}({object_name})\n### END HIDDEN TESTS"
    )
    assert callable(getattr(grade, grader_name))


def test_points_sum_to_25_and_every_exercise_has_a_locked_statement() -> None:
    graded = [c.metadata["nbgrader"] for c in NOTEBOOK.cells if "nbgrader" in c.metadata]
    assert sum(m.get("points", 0) for m in graded if m["grade"]) == 25
    assert len(EXERCISES) == 7
    for grade_id in EXERCISES:
        statement = _cell(f"{grade_id}_statement")
        assert statement.cell_type == "markdown" and statement.metadata["nbgrader"]["locked"]
    assert "solutions" not in "".join(
        c.source for c in NOTEBOOK.cells if not c.metadata.get("nbgrader", {}).get("grade")
    )


def test_no_graded_cell_uses_another_exercise_answer() -> None:
    """Every exercise is graded on its own: no other graded cell uses its answer."""
    graded = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in NOTEBOOK.cells
        if c.metadata.get("nbgrader", {}).get("grade")
        or c.metadata.get("nbgrader", {}).get("solution")
    }
    for grade_id in EXERCISES:
        name = _grader_and_name(grade_id)[1]
        users = [
            gid
            for gid, source in graded.items()
            if not gid.startswith(grade_id) and re.search(rf"\b{name}\b", source)
        ]
        assert not users, f"{name} is used by {users}"


def test_models_cell_matches_the_graders_targets() -> None:
    namespace: dict[str, Any] = {}
    exec(_cell("ex7_models").source, namespace)
    assert namespace["SOURCE_MODEL"] == reference.SOURCE_MODEL
    assert namespace["TARGETS"] == reference.TARGETS
    source, target = namespace["make_models"](minitorch, "a")
    assert isinstance(source, minitorch.nn.Module) and isinstance(target, type(source))


def test_checked_outputs_are_stored_and_deterministic() -> None:
    checked = [
        c for c in NOTEBOOK.cells if c.cell_type == "code" and c.source.startswith(CHECK_OUTPUT)
    ]
    assert len(checked) >= 7
    for cell in checked:
        text = "".join(o.get("text", "") for o in cell.outputs)
        assert text, "a checked cell has no stored output: rebuild the notebook"
        assert not re.search(r"0x[0-9a-f]{6,}|\d{12,}", text), "addresses or ids in checked output"
