"""Notebook 2 ("backward"): its graders, reference solutions and wrong answers.

No kernels here: the notebook's cells are exec'd in one namespace, as a kernel would run them.
- every grader passes the reference (the notebook's own solution cells, fixed and fresh seeds);
- every grader rejects the blank release (nbgrader's own ClearSolutions stub) and every
  wrong answer in wrong_answers.py with a clean AssertionError: no chained exception, no frame
  of the grader or the reference in the traceback, no line of the reference in the message;
- the committed notebook is exactly what course/generate/backward.py generates, its solution
  cells are the blocks of reference.py, and its nbgrader metadata is well formed.
"""

from __future__ import annotations

import importlib.util
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
from solutions.backward import grade, reference  # noqa: E402
from solutions.backward.wrong_answers import WRONG_ANSWERS  # noqa: E402


def _load_generator() -> Any:
    path = REPO_ROOT / "course" / "generate" / "backward.py"
    spec = importlib.util.spec_from_file_location("build_backward", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generator = _load_generator()
NOTEBOOK = nbformat.read(generator.NOTEBOOK, as_version=4)
SOLUTIONS = solution_sources(generator.ASSIGNMENT)
EXERCISES = list(generator.GRADED_OBJECT)  # grade ids, in notebook order
NO_SEED = {"ex8_predict_second_backward"}  # graders without random cases


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
    """The notebook's setup cell, the snippets cell and every solution cell, run in order."""
    namespace: dict[str, Any] = {}
    setup = next(c for c in NOTEBOOK.cells if c.cell_type == "code")
    exec(setup.source, namespace)
    exec(_cell("ex8_snippets").source, namespace)
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


@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
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


def test_recursion_is_caught_even_with_a_raised_limit(notebook_namespace: dict) -> None:
    (wrong,) = [
        w for w in WRONG_ANSWERS["ex1_topological_order"] if w.name == "recursive_post_order"
    ]
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        with pytest.raises(AssertionError, match="RecursionError"):
            grade.topological_order(
                _answer(notebook_namespace, "ex1_topological_order", wrong.source)
            )
        assert sys.getrecursionlimit() == 100_000  # restored
    finally:
        sys.setrecursionlimit(previous)


def test_non_callables_fail_cleanly() -> None:
    for grade_id in EXERCISES:
        grader, _ = _grader_and_name(grade_id)
        with pytest.raises(AssertionError, match="expected a function, got int"):
            grader(3)


# -------------------------------------------------------------------------------------------------
# The graders' own ground truth
# -------------------------------------------------------------------------------------------------
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


# -------------------------------------------------------------------------------------------------
# The notebook: no drift from the generator and reference.py, well-formed nbgrader metadata
# -------------------------------------------------------------------------------------------------
def test_committed_notebook_is_what_the_generator_builds() -> None:
    built = without_outputs(generator.build_notebook())
    assert built == without_outputs(NOTEBOOK), (
        "the committed notebook drifted: run python3 course/generate/backward.py"
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
        "from solutions.backward import grade\n\n"
        f"grade.{grader_name}({object_name})\n### END HIDDEN TESTS"
    )
    assert callable(getattr(grade, grader_name))


def test_points_sum_to_25_and_every_exercise_has_a_locked_statement() -> None:
    graded = [c.metadata["nbgrader"] for c in NOTEBOOK.cells if "nbgrader" in c.metadata]
    assert sum(m.get("points", 0) for m in graded if m["grade"]) == 25
    assert len(EXERCISES) == 8
    for grade_id in EXERCISES:
        statement = _cell(f"{grade_id}_statement")
        assert statement.cell_type == "markdown" and statement.metadata["nbgrader"]["locked"]
    assert "solutions" not in "".join(
        c.source for c in NOTEBOOK.cells if not c.metadata.get("nbgrader", {}).get("grade")
    )


def test_only_topological_order_is_shared_between_graded_cells() -> None:
    """Exercises 2 to 8 are graded independently: no other graded cell uses their answers
    (exercise 1's `topological_order` is reused by exercise 2, as wrong_answers.py says)."""
    graded = {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in NOTEBOOK.cells
        if c.metadata.get("nbgrader", {}).get("grade")
        or c.metadata.get("nbgrader", {}).get("solution")
    }
    for grade_id in EXERCISES[1:]:
        name = _grader_and_name(grade_id)[1]
        users = [
            gid
            for gid, source in graded.items()
            if not gid.startswith(grade_id) and re.search(rf"\b{name}\b", source)
        ]
        assert not users, f"{name} is used by {users}"


def test_snippets_cell_matches_the_graders_snippets() -> None:
    namespace: dict[str, Any] = {}
    exec(_cell("ex8_snippets").source, namespace)
    assert namespace["SNIPPETS"] == reference.SNIPPETS


def test_checked_outputs_are_stored_and_deterministic() -> None:
    checked = [
        c for c in NOTEBOOK.cells if c.cell_type == "code" and c.source.startswith(CHECK_OUTPUT)
    ]
    assert len(checked) >= 8
    for cell in checked:
        text = "".join(o.get("text", "") for o in cell.outputs)
        assert text, "a checked cell has no stored output: rebuild the notebook"
        assert not re.search(r"0x[0-9a-f]{6,}|\d{12,}", text), "addresses or ids in checked output"
